// DeepSeek's multi-head latent attention in the absorbed form (as llama.cpp runs it):
//   q       = W_qb norm(W_qa h)              [n_head, nope + rope]   (or W_q h)
//   [c, kr] = W_kva h                        c: the latent [kv_lora], kr: the RoPE key [rope]
//   c       = norm(c);  q_rope, kr = RoPE(q_rope), RoPE(kr)
//   q_abs_h = W_kb,h q_nope,h                each head's query in latent space [kv_lora]
//   attention is then MQA with queries [q_abs_h | q_rope_h], keys [c | kr], values c, and
//   out_h   = W_vb,h (latent output_h)       [v_head]
// so the cache holds only [c | kr] (and c again as values) per token instead of per-head K/V.
// Per-head matrices (W_kb, W_vb) are run as a mixture of experts whose "expert" is the head.
#include "model/forward.h"
#include "ops/ops.h"

namespace vkllm::model {
namespace {
constexpr uint64_t F = sizeof(float);

ops::Weight rounding_key(const ops::ExpertWeights& e) {
    ops::Weight w;
    w.type = e.type;
    return w;
}
}  // namespace

void Forward::record_mla_qkv(int l, int T, const MatmulInputs& in) {
    const AttentionSpec& a = spec_.layers[size_t(l)].attn;
    const MlaSpec& mla = a.mla;
    const LayerWeights& w = w_.layers[size_t(l)];
    gpu::Stream& s = *stream_;
    const uint64_t qh = uint64_t(mla.qk_nope + mla.qk_rope);     // a head of q as projected
    const uint64_t kv = uint64_t(mla.kv_lora_rank + mla.qk_rope);  // a cache row / absorbed head
    const uint64_t heads = uint64_t(T) * uint64_t(a.n_head);
    const ops::RopeParams rp = rope_params(a.rope);
    const gpu::Buffer* freqs = a.rope.freq_factors ? w_.rope_freqs : nullptr;

    // q (through the low-rank q_a when present) and [c | kr]; in: the block input's.
    if (w.wq_a.buffer) {
        s.mark("matmul");
        in.matmul(s, w.wq_a, scratch_.mla.qa, 0, T);
        in.matmul(s, w.wkv_a, scratch_.k_new, 0, T);
        s.barrier("q_a and [c | kr] are complete before their norms");
        // q_a's norm, in place (or, decoding, inside W_qb's matvec).
        const MatmulInputs mi = normed_inputs(scratch_.mla.qa, 0, T, mla.q_lora_rank, w.q_a_norm, nullptr, {&w.wq},
                                              "the normalised q_a is complete before W_qb reads it", scratch_.mla.qa);
        s.mark("matmul");
        mi.matmul(s, w.wq, scratch_.mla.q, 0, T);
    } else {
        s.mark("matmul");
        in.matmul(s, w.wq, scratch_.mla.q, 0, T);
        in.matmul(s, w.wkv_a, scratch_.k_new, 0, T);
    }
    s.barrier("q and [c | kr] are complete before the latent norm and RoPE");
    s.mark("norm");
    ops::rms_norm(s, scratch_.k_new, 0, w.kv_a_norm, scratch_.k_new, 0, T, mla.kv_lora_rank, spec_.norm_eps, int64_t(kv));
    // The norm's binding spans whole [c | kr] rows, so the rope below writes memory (kr) the norm
    // has bound: the rope must wait for the norm (a write-after-read hazard otherwise).
    s.barrier("the latent norm is done with the [c | kr] rows before RoPE writes their kr part");
    s.mark("rope");
    // The rotated part ends each q head: rotate `rope` dims of windows starting `nope` into each
    // head (scratch_.mla.q has `nope` floats of slack after its last head for the window).
    ops::rope(s, scratch_.mla.q, uint64_t(mla.qk_nope), scratch_.positions, T, a.n_head, int(qh), rp, freqs,
              int64_t(qh) * a.n_head);
    ops::rope(s, scratch_.k_new, uint64_t(mla.kv_lora_rank), scratch_.positions, T, 1, mla.qk_rope, rp, freqs, int64_t(kv));
    s.barrier("normalised latent, rotated q and kr are complete before they are gathered");

    // Values: the latent part of each row. Absorption input: q_nope of each (token, head).
    s.mark("copy");
    s.copy_rows(scratch_.k_new, 0, kv * F, scratch_.v_new, 0, uint64_t(mla.kv_lora_rank) * F, uint64_t(mla.kv_lora_rank) * F, uint64_t(T));
    s.copy_rows(scratch_.mla.q, 0, qh * F, scratch_.mla.qn, 0, uint64_t(mla.qk_nope) * F, uint64_t(mla.qk_nope) * F, heads);
    s.barrier("gathered q_nope rows are complete before W_kb reads them");
    ops::MoeRouting by_head{&scratch_.mla.head_ids, nullptr, nullptr, T, a.n_head};
    const ops::Weight kb_key = rounding_key(w.k_b);
    // by_head has no sort: the expert matvec, which rounds each head's row itself.
    MatmulInputs mi = prepare_inputs(scratch_.mla.qn, 0, int(heads), mla.qk_nope, {&kb_key}, RoundAt::ExpertMatvec);
    s.mark("moe_matmul");
    ops::moe_matmul(s, w.k_b, mi.of(kb_key), mi.offset_of(kb_key), /*x_per_pair=*/true, by_head, scratch_.mla.qabs, 0,
                    mi.rounds_in_matvec(kb_key.type));
    s.barrier("absorbed queries are complete before they are assembled with the rotated part");
    // Attention queries [q_abs | q_rope] per head.
    s.mark("copy");
    s.copy_rows(scratch_.mla.qabs, 0, uint64_t(mla.kv_lora_rank) * F, scratch_.q, 0, kv * F, uint64_t(mla.kv_lora_rank) * F, heads);
    s.copy_rows(scratch_.mla.q, uint64_t(mla.qk_nope) * F, qh * F, scratch_.q, uint64_t(mla.kv_lora_rank) * F, kv * F,
                uint64_t(mla.qk_rope) * F, heads);
    s.barrier("the attention queries are complete before attention reads them");
}

void Forward::record_mla_output(int l, int T) {
    const AttentionSpec& a = spec_.layers[size_t(l)].attn;
    const LayerWeights& w = w_.layers[size_t(l)];
    gpu::Stream& s = *stream_;
    const int heads = T * a.n_head;
    ops::MoeRouting by_head{&scratch_.mla.head_ids, nullptr, nullptr, T, a.n_head};
    const ops::Weight vb_key = rounding_key(w.v_b);
    MatmulInputs mi = prepare_inputs(scratch_.attn, 0, heads, a.mla.kv_lora_rank, {&vb_key}, RoundAt::ExpertMatvec);
    s.mark("moe_matmul");
    // scratch_.attn is [T, n_head, kv_lora]: one latent row per (token, head) pair.
    ops::moe_matmul(s, w.v_b, mi.of(vb_key), mi.offset_of(vb_key), /*x_per_pair=*/true, by_head, scratch_.mla.out, 0,
                    mi.rounds_in_matvec(vb_key.type));
    s.barrier("each head's value output is complete before the output projection reads it");
}

}  // namespace vkllm::model
