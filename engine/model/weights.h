// A model's tensors on the GPU, found by llama.cpp's tensor names.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gpu/buffer.h"
#include "model/rwkv_weights.h"
#include "model/spec.h"
#include "ops/ops.h"

namespace vkllm::gpu { class Context; }

namespace vkllm::model {

// Vectors are f32 on the GPU; a null pointer means the model has no such tensor. Fused
// tensors in the file (attn_qkv, Phi-3's gate+up ffn_up) are split into their parts on upload.
struct LayerWeights {
    const gpu::Buffer* attn_norm = nullptr;       // [n_embd]
    const gpu::Buffer* attn_norm_b = nullptr;     // [n_embd] (LayerNorm)
    ops::Weight wq, wk, wv, wo;                   // wq: {n_embd, n_head*head_dim} ...
    const gpu::Buffer *bq = nullptr, *bk = nullptr, *bv = nullptr, *bo = nullptr;
    const gpu::Buffer* sinks = nullptr;          // [n_head] (gpt-oss)
    const gpu::Buffer* q_norm = nullptr;          // [head_dim] or [n_head*head_dim] (QK-norm)
    const gpu::Buffer* k_norm = nullptr;
    const gpu::Buffer* post_attn_norm = nullptr;  // [n_embd] (post/sandwich/post-sum placement)
    const gpu::Buffer* post_attn_norm_b = nullptr;  // [n_embd] LayerNorm bias (BERT's attn_output_norm)
    const gpu::Buffer* ffn_norm = nullptr;        // [n_embd]
    const gpu::Buffer* ffn_norm_b = nullptr;
    ops::Weight gate, up, down;                   // gate/up: {n_embd, n_ff}; down: {n_ff, n_embd}
    const gpu::Buffer *b_up = nullptr, *b_down = nullptr;
    const gpu::Buffer* b_gate = nullptr;          // [n_ff] a gated FFN's gate bias (Jais)
    // MoE: the router {n_embd, n_expert} and the experts' 3-D tensors.
    ops::Weight router;
    const gpu::Buffer* router_bias = nullptr;     // [n_expert]
    const gpu::Buffer* selection_bias = nullptr;  // [n_expert] exp_probs_b (DeepSeek V3)
    // MLA (DeepSeek): q_a {n_embd, q_lora} + q_a_norm, q_b {q_lora, n_head*(nope+rope)} (or wq);
    // kv_a {n_embd, kv_lora+rope} + kv_a_norm; k_b {nope, kv_lora, n_head}; v_b {kv_lora, v, n_head}.
    ops::Weight wq_a, wkv_a;
    const gpu::Buffer *q_a_norm = nullptr, *kv_a_norm = nullptr;
    ops::ExpertWeights k_b, v_b;
    ops::ExpertWeights gate_exps, up_exps, down_exps;
    ops::Weight gate_sh, up_sh, down_sh;          // shared expert (Llama 4)
    ops::Weight gate_inp_sh;                      // {n_embd, 1}: a gated shared expert's gate (MoeSpec::n_ff_shared_gated)
    const gpu::Buffer* post_ffn_norm = nullptr;   // [n_embd]
    const gpu::Buffer* post_ffn_norm_b = nullptr; // [n_embd] LayerNorm bias (BERT's layer_output_norm)
    // Mamba-2's mixer (SsmSpec): ssm_in {n_embd, in_proj_rows}, ssm_out {d_inner, n_embd}; f32
    // conv1d [channels][d_conv] and its bias [channels], dt bias, A and D [n_head], the grouped
    // norm [n_group][d_inner / n_group]. The pre-norm is attn_norm.
    // Mamba-1 (SsmSpec::mamba1()): ssm_in {n_embd, 2 d_inner} (x | z); ssm_x's rows split into
    // dt_low {d_inner, dt_rank} and B | C {d_inner, 2 d_state}; ssm_dt {dt_rank, d_inner} with
    // its bias [d_inner]; A [d_inner][d_state] and D [d_inner]; no norm.
    ops::Weight ssm_in, ssm_out;
    ops::Weight ssm_x_dt, ssm_x_bc, ssm_dt;
    const gpu::Buffer *ssm_dt_norm = nullptr, *ssm_b_norm = nullptr, *ssm_c_norm = nullptr;  // Jamba [dt_rank], [d_state]
    const gpu::Buffer *ssm_conv1d = nullptr, *ssm_conv1d_b = nullptr, *ssm_dt_b = nullptr, *ssm_a = nullptr,
                      *ssm_d = nullptr, *ssm_norm = nullptr;
    // LFM2's short convolution (ShortConvSpec): in_proj {n_embd, 3 n_embd} (B | C | u), the f32
    // depthwise kernel [n_embd][l_cache], out_proj {n_embd, n_embd}. The pre-norm is attn_norm.
    ops::Weight shortconv_in, shortconv_out;
    const gpu::Buffer* shortconv_conv = nullptr;
    // Gated attention (AttentionSpec::gated): wq holds the query rows of attn_q and wq_gate its
    // gate rows (the file interleaves them per head); `zeros` is a zero row of n_head * head_dim
    // (the sigmoid gate's offset, model/blocks/attention.cpp).
    ops::Weight wq_gate;
    const gpu::Buffer* zeros = nullptr;
    // Gated DeltaNet (SsmSpec::delta_net): attn_qkv {n_embd, q | k | v} and attn_gate {n_embd,
    // d_inner} (z); ssm_ba {n_embd, 2 n_head} (Qwen3-Next: b | alpha per key head) or ssm_beta and
    // ssm_alpha {n_embd, n_head}; the f32 conv1d [channels][d_conv], dt bias and A [n_head]
    // (ssm_dt_b, ssm_a), the output norm [head_dim] (ssm_norm) and ssm_out {d_inner, n_embd}.
    ops::Weight delta_qkv, delta_gate, delta_ba, delta_beta, delta_alpha;
    // Exact super weights of ffn_down (quantize --keep-super-weights): ops::SuperCorrection [n].
    const gpu::Buffer* down_super = nullptr;
    int n_down_super = 0;
};

// Where a matrix of the file went on upload, for the weight interventions: its rows may be
// split over several buffers (fused tensors), each holding consecutive rows from offset 0.
// Expert tensors count rows over all experts: expert e's row r is file row e * n_rows + r.
struct UploadedPart {
    const gpu::Buffer* buffer = nullptr;
    int64_t first_row = 0;  // the file row held at `offset` in the buffer
    int64_t n_rows = 0;
    uint64_t offset = 0;    // bytes
};
struct UploadedMatrix {
    gguf::TensorType type = gguf::TensorType::F32;
    int64_t n_in = 0;       // row length (GGUF ne0)
    int64_t n_rows = 0;     // rows (of one expert for expert tensors)
    int64_t n_expert = 0;   // 0: a 2-D matrix
    std::vector<UploadedPart> parts;
    bool grouped = false;   // rows in grouped-block order on the GPU (ops::group_blocks)
};

class Weights {
public:
    // Uploads every tensor the spec needs. ModelError names a missing tensor, a wrong shape or
    // a type the GPU kernels do not support.
    Weights(gpu::Context& ctx, const gguf::File& file, const ModelSpec& spec);

    ops::Weight token_embd;             // {n_embd, n_vocab}
    ops::Weight position_embd;          // {n_embd, n_ctx_train} (learned positions) or empty
    ops::Weight output;                 // {n_embd, n_vocab}; token_embd when tied
    const gpu::Buffer* output_norm = nullptr;   // null when the spec has no final norm (BERT)
    const gpu::Buffer* output_norm_b = nullptr;
    const gpu::Buffer* embd_norm = nullptr;     // [n_embd] token_embd_norm (BERT) or null
    const gpu::Buffer* embd_norm_b = nullptr;
    const gpu::Buffer* token_type0 = nullptr;   // [n_embd] row 0 of token_types (BERT) or null
    const gpu::Buffer* rope_freqs = nullptr;  // [n_rot/2] f32 or null
    const gpu::Buffer* rope_long = nullptr;   // [n_rot/2] LongRoPE factors or null
    const gpu::Buffer* rope_short = nullptr;
    std::vector<LayerWeights> layers;
    // RWKV-7's layers' tensors (its time and channel mixes) or null; their LayerWeights hold the
    // norms only.
    std::unique_ptr<RwkvWeights> rwkv;

    uint64_t bytes() const { return bytes_; }
    // The uploaded matrix with this file name ("blk.3.attn_qkv.weight"); null when none was
    // uploaded as a matrix (absent, a vector kept as f32, or output tied to token_embd).
    const UploadedMatrix* uploaded(const std::string& name) const;
    // Names of every uploaded matrix starting with `prefix`, sorted.
    std::vector<std::string> uploaded_names(const std::string& prefix) const;
    // One of this Weights' buffers, writable (weight interventions). Throws std::logic_error
    // for a buffer it does not own.
    gpu::Buffer& writable(const gpu::Buffer* buffer);

private:
    ops::Weight matrix(const std::string& name, int64_t n_in, int64_t n_out, bool required = true);
    // Rows [k * period + first, k * period + first + chunk) for every k, of a 2-D tensor with
    // `total_rows` rows (a multiple of period), gathered in order as one weight.
    ops::Weight matrix_row_chunks(const std::string& name, int64_t n_in, int64_t total_rows, int64_t period,
                                  int64_t first, int64_t chunk);
    // Rows [row0, row0 + n_out) of a 2-D tensor with `total_rows` rows, as its own weight.
    ops::Weight matrix_rows(const std::string& name, int64_t n_in, int64_t total_rows, int64_t row0, int64_t n_out);
    // A gated FFN's gate and up matrices ({n_in, n_out} each). Of one type, they share one buffer,
    // gate then up (ops::matvec_swiglu reads both in one dispatch); else each gets its own.
    void gate_up_pair(const std::string& gate_name, const std::string& up_name, int64_t n_in, int64_t n_out,
                      ops::Weight* gate, ops::Weight* up);
    // Matrices that one dispatch reads together ({n_in, n_out} each: gate and up, ops::matvec_swiglu;
    // Q, K and V, ops::matvec_stacked): one buffer holds, in order, each from a 256-byte boundary,
    // the first and every other of its type; a matrix of another type gets a buffer of its own
    // (Q4_K_M's Q6_K attn_v beside Q4_K q and k).
    struct Member {
        std::string name;
        int64_t n_out = 0;
        ops::Weight* out = nullptr;
    };
    void one_buffer(std::initializer_list<Member> members, int64_t n_in);
    // The experts' gate and up tensors of one type in one buffer, gate then up (as gate_up_pair),
    // for decode's fused expert SwiGLU (ops::moe_matvec_swiglu); two buffers when the types differ.
    void expert_gate_up_pair(const std::string& gate_stem, const std::string& up_stem, int64_t n_in, int64_t n_out,
                             int64_t n_expert, ops::ExpertWeights* gate, ops::ExpertWeights* up);
    void fused_gate_up(const std::string& name, int64_t n_in, int64_t n_out, ops::Weight* gate, ops::Weight* up);
    const gguf::TensorInfo& expert_tensor(const std::string& name, int64_t n_in, int64_t n_out, int64_t n_expert);
    const gpu::Buffer* vector(const std::string& name, int64_t n, bool required = true);
    // Elements [first, first + n) of a vector with `total` elements.
    const gpu::Buffer* vector_part(const std::string& name, int64_t total, int64_t first, int64_t n);
    const gguf::TensorInfo& tensor(const std::string& name, int64_t n_in, int64_t n_out);
    ops::ExpertWeights experts(const std::string& name, int64_t n_in, int64_t n_out, int64_t n_expert,
                               bool bias = false);
    const gpu::Buffer* upload(const void* data, uint64_t n_bytes, uint64_t buffer_bytes = 0);
    void super_corrections(const ModelSpec& spec);
    // Layer parts: an attention mixer's tensors, an FFN's (dense or experts); p is "blk.N.".
    void attention_weights(const ModelSpec& spec, const LayerSpec& L, const std::string& p, LayerWeights& w);
    void ffn_weights(const ModelSpec& spec, const LayerSpec& L, const std::string& p, LayerWeights& w);
    // A Mamba-2 mixer's tensors (a Mamba-2 layer's, or Falcon-H1's beside attention).
    void mamba2_weights(const ModelSpec& spec, const LayerSpec& L, const std::string& p, LayerWeights& w);
    // A Gated DeltaNet mixer's tensors and its norm (attn_norm).
    void delta_net_weights(const ModelSpec& spec, const LayerSpec& L, const std::string& p, LayerWeights& w);

    gpu::Context& ctx_;
    const gguf::File& file_;
    std::vector<std::unique_ptr<gpu::Buffer>> buffers_;
    std::map<std::string, UploadedMatrix> uploaded_;
    uint64_t bytes_ = 0;
};

}  // namespace vkllm::model
