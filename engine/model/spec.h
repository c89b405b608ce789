// ModelSpec: a model's architecture as data. from_gguf (spec.cpp) reads a file's metadata (the
// keys are named in metadata_keys.h) as its family's row in the family table says (families.h,
// families.cpp: one row of defaults and named quirks per architecture); the one forward pass
// (forward.cpp) walks the layer specs.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/attention.h"
#include "core/delta_net.h"
#include "model/rwkv_spec.h"
#include "vkllm/pooling.h"

namespace vkllm::gguf {
class File;
}

namespace vkllm::model {

// The model cannot run here: unsupported architecture, missing tensor, inconsistent shapes.
struct ModelError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

enum class NormKind { RMSNorm, LayerNorm };
// Pre: x += f(norm(x)). Post: x = x + norm(f(x)) (OLMo 2). Sandwich: x += norm2(f(norm1(x))) (Gemma 2/3).
// PostResidual: x = norm(x + f(x)) (BERT's post-norm: the residual sum itself is normalised).
enum class NormPlacement { Pre, Post, Sandwich, PostResidual };
// ReluSqr: relu(x)^2 (Nemotron-H's MLP, ungated).
enum class Activation { SiLU, GeluTanh, GeluErf, ReluSqr };
enum class RopeScaling { None, Linear, Yarn, Llama3 };
// QK-norm: RMSNorm of each query/key head (Qwen3, Gemma 3) or of the whole projection (OLMo 2),
// before RoPE; or an unweighted per-head RMS (L2) norm after RoPE (Llama 4).
enum class QkNorm { None, PerHead, FullWidth, L2AfterRope };

struct RopeSpec {
    bool enabled = true;      // false: a NoPE layer
    int n_dims = 0;           // rotated dims per head
    bool neox = false;        // NeoX pairing (i, i + n_dims/2); else adjacent pairs
    float freq_base = 10000.0f;
    RopeScaling scaling = RopeScaling::None;
    float factor = 1.0f;      // Linear/Yarn: positions are divided by it
    int n_ctx_orig = 0;
    float attn_factor = 1.0f;
    float ext_factor = 0.0f, beta_fast = 32.0f, beta_slow = 1.0f;
    bool freq_factors = false;  // the model has a rope_freqs tensor (Llama 3.x)
    // Phi-3 LongRoPE: rope_factors_long / rope_factors_short divide each pair's frequency; the
    // long set applies when the context exceeds n_ctx_orig (as llama.cpp chooses).
    bool longrope = false;
};

// DeepSeek V2/V3 multi-head latent attention, run in the absorbed form: queries are taken into
// the latent space by W_kb per head, so attention is MQA over a cache of the normalised latent
// and the shared RoPE key ([kv_lora_rank | qk_rope] per token, plus the latent as values), and
// each head's latent output goes through W_vb.
struct MlaSpec {
    int q_lora_rank = 0;   // 0: a plain attn_q projection (V2-Lite)
    int kv_lora_rank = 0;  // 0: not MLA
    int qk_nope = 0, qk_rope = 0, v_head = 0;
};

// A layer's attention: what the attention op computes (AttentionParams: heads, head sizes,
// scale, causal / window / chunk masks, soft-cap) and the projections and positions around it.
struct AttentionSpec : AttentionParams {
    MlaSpec mla;
    // Llama 4's NoPE layers scale q by log(floor((pos + 1) / floor) + 1) * scale + 1.
    int temperature_floor = 0;  // 0: off
    float temperature_scale = 0.0f;
    QkNorm qk_norm = QkNorm::None;
    bool bias_qkv = false;  // q, k, v projections have biases (Qwen2, GPT-2)
    bool bias_o = false;
    bool fused_qkv = false; // one attn_qkv tensor (GPT-2, Phi-3)
    bool sinks = false;     // learned per-head sink logits join the softmax denominator (gpt-oss)
    // Gated attention (Qwen3-Next, Qwen3.5): the q projection yields a query and a gate per head
    // (attn_q rows [q | gate] of head_dim each, head after head), and the attention output is
    // multiplied by sigmoid(gate) before the output projection.
    bool gated = false;
    RopeSpec rope;
};

// A mixture-of-experts FFN: a router picks top_k of n_expert SwiGLU experts per token.
struct MoeSpec {
    int n_expert = 0;          // 0: a dense FFN
    int top_k = 0;
    int n_ff_expert = 0;       // each expert's hidden width
    bool sigmoid = false;      // gating: softmax (default) or sigmoid over the router logits
    bool norm_topk = false;    // renormalise the chosen weights to sum 1
    float weights_scale = 1.0f;
    bool softmax_after_topk = false;  // weights = softmax over the chosen logits (gpt-oss)
    bool router_bias = false;         // ffn_gate_inp.bias added to the router logits
    bool expert_bias = false;         // ffn_{gate,up,down}_exps.bias
    float swiglu_alpha = 0.0f;        // > 0: gpt-oss's clamped SwiGLU with this alpha ...
    float swiglu_limit = 0.0f;        // ... and limit
    bool weight_input = false;        // the gate weight scales the expert's input, not its output (Llama 4)
    int n_ff_shared = 0;              // > 0: a shared expert of this width, always on
    // > 0 (instead of n_ff_shared): a shared expert of this width whose output is scaled per token
    // by sigmoid(ffn_gate_inp_shexp . x) (Qwen3-Next, Qwen3.5-MoE), run after the routed experts
    // on their normalised input (model/blocks/gated_shared_expert.h).
    int n_ff_shared_gated = 0;
    bool selection_bias = false;      // exp_probs_b.bias added to the scores for choosing only (V3)
    int n_group = 1, topk_group = 1;  // group-limited routing (V3)
};

struct FfnSpec {
    MoeSpec moe;
    int n_ff = 0;
    Activation activation = Activation::SiLU;
    bool gated = true;       // act(gate) * up; false: act(up) (GPT-2)
    bool fused_gate_up = false;  // one ffn_up tensor holding [gate; up] (Phi-3)
    bool bias = false;
};

// A Mamba-2 mixer (llama.cpp's build_mamba2_layer) in place of attention: in-projection to
// z | x B C | dt, a causal conv1d of d_conv taps over x B C, the selective scan (n_head heads of
// head_dim, scalar decay per head, B and C in n_group groups of d_state), the gate silu(z), a
// grouped RMSNorm and the out-projection. Its state is fixed-size (RecurrentState).
//
// Mamba-1 (dt_rank > 0; llama.cpp's build_mamba_layer) has the same conv and state sizes with
// one channel per "head": in-projection to x | z, the conv over x only, x_proj to dt_low | B | C
// (one group of d_state), dt = dt_proj(dt_low) + bias per channel, a decay per channel and state
// (ssm_a [d_inner][d_state]), no grouped norm.
struct SsmSpec {
    int d_conv = 0;   // `ssm.conv_kernel`
    int d_inner = 0;  // `ssm.inner_size`; 0: the layer has no SSM
    int d_state = 0;  // `ssm.state_size`
    int n_head = 0;   // Mamba-2: `ssm.time_step_rank`; Mamba-1: d_inner (head_dim 1)
    int n_group = 1;  // `ssm.group_count` (Mamba-1: 1)
    int dt_rank = 0;  // Mamba-1: `ssm.time_step_rank`, the rank of dt's projection; 0: Mamba-2
    // Mamba-1: RMS norms of dt_low, B and C before their use (Jamba: weighted by ssm_dt_norm,
    // ssm_b_norm, ssm_c_norm; Falcon-Mamba: `ssm.dt_b_c_rms`, unweighted).
    bool dt_b_c_norm = false;
    // Gated DeltaNet (LayerMixer::GatedDeltaNet; llama.cpp's build_layer_attn_linear) keeps its
    // sizes here, as llama.cpp reads them from the same `ssm.*` keys: d_state is the key and value
    // head size, n_group the key heads, n_head the value heads, d_inner = n_head * d_state. Its
    // conv runs over q | k | v (conv_channels()) and its state is [n_head][d_v][d_k]
    // (d_inner * d_state), so the sizes below hold for it too.
    bool delta_net = false;
    DeltaHeadShare delta_share = DeltaHeadShare::Interleaved;  // how value heads read key heads
    // Qwen3-Next: one ssm_ba projection, [b | alpha] per key head (n_head / n_group of each);
    // Qwen3.5: ssm_beta and ssm_alpha, one column per value head.
    bool delta_ba_grouped = false;

    bool enabled() const { return d_inner > 0; }
    bool mamba1() const { return dt_rank > 0; }
    int head_dim() const { return n_head > 0 ? d_inner / n_head : 0; }
    // The convolved channels: x | B | C (Mamba-2), x (Mamba-1).
    int conv_channels() const { return mamba1() ? d_inner : d_inner + 2 * n_group * d_state; }
    // The in-projection's rows: z | x B C | dt (Mamba-2), x | z (Mamba-1). Gated DeltaNet's work
    // row: its projections q k v | z | b, alpha, then the gates g, beta it computes from them.
    int in_proj_rows() const {
        if (delta_net) return conv_channels() + d_inner + 4 * n_head;
        return mamba1() ? 2 * d_inner : 2 * d_inner + 2 * n_group * d_state + n_head;
    }
    // Bytes of the layer's state per sequence (f32 conv and SSM states), whatever the context.
    uint64_t state_bytes() const {
        return (uint64_t(conv_channels()) * uint64_t(d_conv - 1) + uint64_t(d_inner) * uint64_t(d_state)) * 4;
    }
};

// LFM2's short convolution (llama.cpp's build_shortconv_block), a layer's mixer in place of
// attention:
//   h = norm(x); [B | C | u] = W_in h  (n_embd each);  y = C * conv1d(B * u);  x += W_out y
// conv1d is causal and depthwise, l_cache taps per channel, no bias and no activation; it carries
// the last l_cache - 1 products B * u per channel from pass to pass (RecurrentState).
struct ShortConvSpec {
    int l_cache = 0;   // `shortconv.l_cache`; 0: the layer has no short convolution
    int channels = 0;  // n_embd

    bool enabled() const { return l_cache > 0; }
    int in_proj_rows() const { return 3 * channels; }  // B | C | u
    // Bytes of the layer's state per sequence (f32), whatever the context.
    uint64_t state_bytes() const { return uint64_t(channels) * uint64_t(l_cache - 1) * 4; }
};

// What mixes tokens in a layer (its first block): softmax attention over a KV cache (`attn`), a
// Mamba-2 or Mamba-1 state-space mixer over a recurrent state (`ssm`), RWKV-7's time mix over its
// recurrent state (`rwkv`; the layer's FFN is then RWKV's channel mix), LFM2's gated short
// convolution over its conv state (`shortconv`), Gated DeltaNet's delta rule over its recurrent
// state (`ssm` with delta_net: Qwen3-Next, Qwen3.5), or nothing (a layer that is an FFN alone, as
// Nemotron-H's MLP layers). A hybrid model has several kinds (families.h, LayerLayout).
enum class LayerMixer { Attention, Mamba2, Mamba1, Rwkv7, ShortConv, GatedDeltaNet, None };

// A layer's blocks: its mixer, then its FFN (dense or experts) where has_ffn. Only the part the
// mixer names is filled in: a state-space layer has no attention heads (so no KV cache rows), an
// attention layer a disabled `ssm` (no recurrent state), except where ssm_beside_attention.
struct LayerSpec {
    LayerMixer mixer = LayerMixer::Attention;
    bool has_ffn = true;
    AttentionSpec attn;
    FfnSpec ffn;
    SsmSpec ssm;
    RwkvSpec rwkv;            // mixer Rwkv7: the time and channel mixes' sizes
    ShortConvSpec shortconv;  // mixer ShortConv: the gated short convolution's sizes
    // Falcon-H1: an attention layer with a Mamba-2 mixer (`ssm`) beside its attention; both read
    // the layer input normalised by attn_norm and both outputs are added to it, then the FFN
    // follows: x += attn(norm(x)) + mamba2(norm(x)); x += ffn(ffn_norm(x)).
    bool ssm_beside_attention = false;
    NormPlacement norm_placement = NormPlacement::Pre;
    std::string ffn_norm_tensor = "ffn_norm";  // gpt-oss calls its pre-FFN norm post_attention_norm
    bool ffn_norm_unsuffixed = false;          // the tensor is `blk.N.<ffn_norm_tensor>`, no `.weight` (Falcon-H1)
    // The parallel block (GPT-J, Falcon): attention and the FFN both read the layer's input x and
    // both add into it, x += attn(norm(x)) + ffn(norm'(x)), instead of the FFN reading x + attn.
    // Falcon-7B's two use one norm (ffn_norm_tensor "attn_norm"); Falcon-40B's attention has its
    // own (attn_norm_tensor "attn_norm_2").
    bool parallel = false;
    std::string attn_norm_tensor = "attn_norm";
};

struct ModelSpec {
    std::string arch;          // general.architecture
    std::string name;          // general.name
    int n_layer = 0, n_embd = 0, n_vocab = 0;
    int n_ctx_train = 0;
    NormKind norm = NormKind::RMSNorm;
    float norm_eps = 1e-5f;
    float embd_scale = 1.0f;           // multiply embeddings (Gemma: sqrt(n_embd))
    bool learned_positions = false;    // GPT-2 position_embd
    bool tied_embeddings = false;      // output projection = token_embd
    float final_softcap = 0.0f;        // Gemma 2 final-logit soft-capping
    // Encoders (BERT): LayerNorm of the summed embeddings (token_embd_norm), token type 0's row
    // (token_types) added to every token, no final norm before the (tied) vocabulary projection,
    // and the file's pooling.
    bool embd_norm = false;
    bool token_types = false;
    bool final_norm = true;
    std::string output_norm_tensor = "output_norm";  // the final norm's tensor (LFM2: token_embd_norm)
    Pooling pooling = Pooling::None;  // the file's (`<arch>.pooling_type`); never Pooling::Model
    // Granite's multipliers besides embd_scale: each block's output is scaled by residual_scale
    // before its residual add, and the logits are divided by logit_scale.
    float residual_scale = 1.0f;
    float logit_scale = 1.0f;
    std::vector<LayerSpec> layers;

    // Maps the file's metadata to a spec; ModelError names an unsupported architecture or a
    // missing key.
    static ModelSpec from_gguf(const gguf::File& f);
    // KV-cache bytes per token summed over the attention layers (f32 cache).
    uint64_t kv_bytes_per_token() const;
    // Recurrent-state bytes per sequence summed over the state-space, short-convolution and RWKV
    // layers (constant in context).
    uint64_t recurrent_state_bytes() const;
};

// Architectures from_gguf understands: the family table's, sorted.
std::vector<std::string> supported_architectures();

}  // namespace vkllm::model
