// A model's architecture as plain values: everything a front-end draws or prints about it,
// read from the GGUF file without a GPU.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkllm/pooling.h"

namespace vkllm {

class GgufFile;

// The kinds below print as to_string gives them: the names of `vkllm inspect`, `vkllm probe`'s
// JSON and the studio.
enum class RopeScaling { None, Linear, Yarn, Llama3, LongRope };
enum class AttentionKind { Global, SlidingWindow, Chunked, Nope, Mla };  // Nope: global without RoPE
enum class QkNorm { None, PerHead, FullWidth, L2AfterRope };
enum class FfnKind { DenseGated, DensePlain, Moe, None };  // None: the layer has no FFN
enum class Activation { Silu, GeluTanh, GeluErf, ReluSqr };
// What mixes tokens in a layer: attention over a KV cache, a Mamba-2 or Mamba-1 state-space
// mixer, RWKV-7's time mix, LFM2's gated short convolution or Gated DeltaNet's delta rule
// (Qwen3-Next, Qwen3.5: its sizes in LayerInfo::ssm, d_state the key head size, n_group the key
// heads, n_head the value heads) over a fixed-size recurrent state, or nothing (a layer that is an
// FFN alone). Falcon-H1's layers are attention with a Mamba-2 mixer beside it
// (LayerInfo::ssm_beside_attention).
enum class MixerKind { Attention, Mamba2, Mamba1, Rwkv7, ShortConv, GatedDeltaNet, None };
enum class MoeGating { Softmax, Sigmoid, SoftmaxAfterTopk };
enum class NormPlacement { Pre, Post, Sandwich, PostSum };  // PostSum (BERT): norm(x + f(x))
enum class NormKind { RmsNorm, LayerNorm };

// "none", "linear", "yarn", "llama3", "longrope"
const char* to_string(RopeScaling s);
// "global", "sliding_window", "chunked", "nope", "mla"
const char* to_string(AttentionKind k);
// "none", "per_head", "full_width", "l2_after_rope"
const char* to_string(QkNorm q);
// "dense_gated", "dense_plain", "moe", "none"
const char* to_string(FfnKind k);
// "silu", "gelu_tanh", "gelu_erf", "relu_sqr"
const char* to_string(Activation a);
// "attention", "mamba-2", "mamba-1", "rwkv-7", "short-conv", "gated-deltanet", "none"
const char* to_string(MixerKind m);
// "softmax", "sigmoid", "softmax_after_topk"
const char* to_string(MoeGating g);
// "pre", "post", "sandwich", "post-sum"
const char* to_string(NormPlacement p);
// "rms_norm", "layer_norm"
const char* to_string(NormKind n);
// "model", "none", "mean", "cls", "last"
const char* to_string(Pooling p);

struct RopeInfo {
    bool enabled = true;       // false: NoPE layer
    int n_dims = 0;            // rotated dimensions per head
    bool neox = false;         // NeoX pairing (i, i + n_dims/2); else adjacent pairs
    float freq_base = 10000.0f;
    RopeScaling scaling = RopeScaling::None;
    float factor = 1.0f;
    int n_ctx_orig = 0;
    bool freq_factors = false;  // a rope_freqs tensor (Llama 3.x)
};

struct AttentionInfo {
    AttentionKind kind = AttentionKind::Global;
    int n_head = 0, n_head_kv = 0;
    int head_dim = 0, head_dim_v = 0;
    int window = 0;            // > 0: sliding window of this many positions
    int chunk = 0;             // > 0: keys of the query's own chunk only
    bool causal = true;
    bool sinks = false;        // learned per-head sink logits
    bool gated = false;        // output * sigmoid(gate) per query element (Qwen3-Next, Qwen3.5)
    float softcap = 0.0f;      // > 0: attention-logit soft-cap
    float scale = 0.0f;        // logit scale
    // ALiBi (Jais): each logit gets -alibi_slopes[h] * |q_pos - k_pos| (max_alibi_bias > 0);
    // the slopes per query head, empty without ALiBi.
    float max_alibi_bias = 0.0f;
    std::vector<float> alibi_slopes;
    QkNorm qk_norm = QkNorm::None;
    bool bias_qkv = false, bias_o = false;
    bool fused_qkv = false;
    // MLA (DeepSeek V2/V3): latent sizes; kv_lora_rank == 0 when not MLA.
    int q_lora_rank = 0, kv_lora_rank = 0, qk_nope = 0, qk_rope = 0, v_head = 0;
    RopeInfo rope;
    int gqa_group() const { return n_head_kv > 0 ? n_head / n_head_kv : 0; }  // query heads per KV head
};

struct FfnInfo {
    FfnKind kind = FfnKind::DenseGated;
    Activation activation = Activation::Silu;
    int n_ff = 0;                      // dense hidden width
    bool bias = false;
    // MoE
    int n_expert = 0, top_k = 0, n_ff_expert = 0;
    int n_shared_expert_ff = 0;        // > 0: an always-on shared expert of this width
    bool shared_expert_gated = false;  // its output scaled by a sigmoid gate per token (Qwen3-Next)
    MoeGating gating = MoeGating::Softmax;
    bool norm_topk = false;
    float weights_scale = 1.0f;
    int n_group = 1, topk_group = 1;   // group-limited routing (DeepSeek V3)
};

// A state-space mixer's sizes (the file's ssm.* keys; Mamba-1: n_head is d_inner, dt_rank > 0).
struct SsmInfo {
    int d_conv = 0, d_inner = 0, d_state = 0, n_head = 0, n_group = 0, dt_rank = 0;
};

// LFM2's short convolution: l_cache taps over `channels` (n_embd) channels.
struct ShortConvInfo {
    int l_cache = 0, channels = 0;
};

// RWKV-7's time-mix sizes (wkv.head_size, the four lora ranks) and its channel mix's width.
struct RwkvInfo {
    int n_head = 0, head_size = 0, n_ff = 0;
    int decay_rank = 0, iclr_rank = 0, value_rank = 0, gate_rank = 0;
};

struct TensorInfo {
    std::string name;              // llama.cpp's name, "blk.3.ffn_down.weight"
    std::string type;              // "F32", "Q4_K", ...
    std::vector<uint64_t> shape;   // GGUF order: shape[0] is the row length
    uint64_t bytes = 0;
};

struct LayerInfo {
    int index = 0;
    NormPlacement norm_placement = NormPlacement::Pre;
    // The parallel block (Falcon): attention and the FFN both read the layer's input and add into
    // the residual stream together; attn_norm names attention's norm ("attn_norm", Falcon-40B's
    // "attn_norm_2"), ffn_norm the FFN's ("attn_norm" in a parallel block).
    bool parallel = false;
    std::string attn_norm = "attn_norm", ffn_norm = "ffn_norm";
    MixerKind mixer = MixerKind::Attention;
    AttentionInfo attention;             // mixer Attention only
    SsmInfo ssm;                         // mixers Mamba2 and Mamba1, and ssm_beside_attention
    RwkvInfo rwkv;                       // mixer Rwkv7 only (its FFN is the channel mix)
    ShortConvInfo shortconv;             // mixer ShortConv only
    // Falcon-H1: attention and a Mamba-2 mixer (`ssm`) side by side, both reading the normalised
    // layer input, both added to it; the layer has KV bytes per token and state bytes.
    bool ssm_beside_attention = false;
    FfnInfo ffn;                         // kind None: no FFN
    uint64_t kv_bytes_per_token = 0;     // f32 cache; 0 without attention
    uint64_t state_bytes = 0;            // the recurrent state per sequence (f32), whatever the context
    std::vector<TensorInfo> tensors;     // this layer's ("blk.N.") tensors
};

struct SpecialToken {
    std::string role;  // "bos", "eos", "eot", "eom", "unk", "pad"
    int32_t id = -1;
    std::string text;
};

struct ModelInfo {
    std::string arch;              // general.architecture
    std::string name;              // general.name
    std::string source;            // file path, or "built-in model NAME"
    int n_layer = 0, n_embd = 0, n_vocab = 0, n_ctx_train = 0;
    NormKind norm = NormKind::RmsNorm;
    float norm_eps = 0.0f;
    float embd_scale = 1.0f;
    bool learned_positions = false;
    bool tied_embeddings = false;
    float final_softcap = 0.0f;
    Pooling pooling = Pooling::None;  // encoders (BERT): the file's pooling (never Model)
    std::vector<LayerInfo> layers;
    std::vector<TensorInfo> tensors;  // every tensor of the file, in file order
    uint64_t parameters = 0;          // elements of every tensor
    uint64_t tensor_bytes = 0;

    std::string tokenizer;                 // "llama (SentencePiece)", "gpt2 (byte-level BPE, pre=qwen2)"
    std::vector<SpecialToken> special_tokens;
    bool add_bos = false, add_eos = false;
    std::string chat_template;             // tokenizer.chat_template, empty when the file has none
    std::vector<std::string> chat_template_names;  // named variants ("tool_use"), without the prefix

    // KV-cache bytes per token of context (f32 cache) by layer kind: global layers grow with the
    // context; sliding-window layers keep a ring of window + batch - 1 positions whatever it is.
    uint64_t kv_bytes_per_token_global = 0;
    uint64_t kv_bytes_per_token_local = 0;
    int n_global_layers = 0, n_local_layers = 0;
    // State-space, short-convolution and RWKV-7 layers' recurrent state per sequence (f32 conv and
    // SSM states; LFM2's conv states; RWKV's token shifts and wkv states): constant in the context
    // length, the reason these layers exist. n_ssm_layers counts Falcon-H1's layers too (attention
    // with a Mamba-2 mixer beside it).
    uint64_t state_bytes_per_sequence = 0;
    int n_ssm_layers = 0;
    int n_rwkv_layers = 0;
    int n_shortconv_layers = 0;

    // One row per layer, as `vkllm inspect` prints it.
    std::string layer_table() const;
};

// Reads the architecture from a GGUF file (no GPU). Throws std::runtime_error naming an
// unsupported architecture or a missing key.
ModelInfo read_model_info(const GgufFile& file);

}  // namespace vkllm
