#include "model/blocks/latent_attention.h"

#include "model/blocks/attention.h"
#include "model/op_params.h"
#include "model/imatrix_recorder.h"
#include "ops/ops.h"

namespace vkllm::model {
namespace {
constexpr uint64_t F = sizeof(float);
}

void LatentAttentionBlock::record(Recording& r) const {
    const AttentionSpec& a = r.spec.layers[size_t(layer_)].attn;
    const LayerWeights& w = r.w.layers[size_t(layer_)];
    Scratch& sc = r.scratch;
    const int T = r.n_tokens;
    // Decode's RMSNorm runs inside the q (or q_a) and kv_a matvecs (normed_inputs), or in the
    // dispatch that quantizes their input once (quantized_inputs).
    auto inputs = [&](std::initializer_list<const ops::Weight*> ws) {
        return w.attn_norm ? quantized_inputs(r, r.residual(T), w.attn_norm, w.attn_norm_b, ws,
                                              "the normalised block input is complete before the projections read it",
                                              ops::f32_rows(sc.h, T, r.spec.n_embd))
                           : quantized_inputs(r, r.residual(T), ws);
    };
    record_qkv(r, w.wq_a.buffer ? inputs({&w.wq_a, &w.wkv_a}) : inputs({&w.wq, &w.wkv_a}));
    // The keys are the [c | kr] rows in Scratch::k_new; the values their latent part c, read there.
    const uint64_t kv_row = uint64_t(a.mla.kv_lora_rank + a.mla.qk_rope);
    record_attend(r, layer_, /*kv_in_cache=*/false, NewKvRows{&sc.k_new, 0, &sc.k_new, 0, int64_t(kv_row)});
    record_output(r);
    r.add_block_output(w.wo, ops::f32_rows(sc.mla.out, T, int64_t(a.n_head) * a.mla.v_head), w.bo, w.post_attn_norm);
}

void LatentAttentionBlock::record_qkv(Recording& r, const MatmulInputs& in) const {
    const AttentionSpec& a = r.spec.layers[size_t(layer_)].attn;
    const MlaSpec& mla = a.mla;
    const LayerWeights& w = r.w.layers[size_t(layer_)];
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const int T = r.n_tokens;
    const uint64_t qh = uint64_t(mla.qk_nope + mla.qk_rope);     // a head of q as projected
    const uint64_t kv = uint64_t(mla.kv_lora_rank + mla.qk_rope);  // a cache row / absorbed head
    const uint64_t heads = uint64_t(T) * uint64_t(a.n_head);
    const ops::RopeParams rp = rope_params(a.rope);
    const gpu::Buffer* freqs = a.rope.freq_factors ? r.w.rope_freqs : nullptr;

    // q (through the low-rank q_a when present) and [c | kr].
    if (w.wq_a.buffer) {
        s.mark("matmul");
        in.matmul(s, w.wq_a, ops::f32_rows(sc.mla.qa, T, w.wq_a.n_out));
        in.matmul(s, w.wkv_a, ops::f32_rows(sc.k_new, T, w.wkv_a.n_out));
        s.barrier("q_a and [c | kr] are complete before their norms");
        // q_a's norm, in place (or, decoding, inside W_qb's matvec).
        const ops::TensorView qa = ops::f32_rows(sc.mla.qa, T, mla.q_lora_rank);
        const MatmulInputs mi = quantized_inputs(r, qa, w.q_a_norm, nullptr, {&w.wq},
                                                 "the normalised q_a is complete before W_qb reads it", qa);
        s.mark("matmul");
        mi.matmul(s, w.wq, ops::f32_rows(sc.mla.q, T, w.wq.n_out));
    } else {
        s.mark("matmul");
        in.matmul(s, w.wq, ops::f32_rows(sc.mla.q, T, w.wq.n_out));
        in.matmul(s, w.wkv_a, ops::f32_rows(sc.k_new, T, w.wkv_a.n_out));
    }
    s.barrier("q and [c | kr] are complete before the latent norm and RoPE");
    s.mark("norm");
    // The latent part [c] of each [c | kr] row.
    const ops::TensorView latent = ops::f32_rows(sc.k_new, T, mla.kv_lora_rank, 0, int64_t(kv));
    ops::rms_norm(s, latent, w.kv_a_norm, latent, r.spec.norm_eps);
    // The norm's binding spans whole [c | kr] rows, so the rope below writes memory (kr) the norm
    // has bound: the rope must wait for the norm (a write-after-read hazard otherwise).
    s.barrier("the latent norm is done with the [c | kr] rows before RoPE writes their kr part");
    s.mark("rope");
    // The attention queries [q_abs | q_rope] per head (the values are read inside [c | kr] by the
    // cache write): q's rotated part goes straight into their rows, rotating `rope` dims of
    // windows starting `nope` into each projected head (Scratch::mla.q has `nope` floats of slack
    // after its last head for the window); kr is rotated in place.
    const ops::TensorView positions = ops::i32_vector(sc.positions, T);
    ops::rope_into(s, ops::f32_rows(sc.mla.q, T, int64_t(qh) * a.n_head, uint64_t(mla.qk_nope)), a.n_head, positions,
                   rp, freqs, ops::f32_rows(sc.q, T, int64_t(kv) * a.n_head), mla.kv_lora_rank);
    ops::rope(s, ops::f32_rows(sc.k_new, T, mla.qk_rope, uint64_t(mla.kv_lora_rank), int64_t(kv)), 1, positions, rp,
              freqs);
    s.barrier("normalised latent, rotated q and kr are complete before W_kb writes the rest of the queries' rows");

    // q_abs is written into the queries' rows by W_kb's matvec below, which reads each head's
    // q_nope where the projection left it (rows of a wider row). An importance matrix, and a
    // rounding dispatch (VKLLM_MATVEC_ROUNDS_X=0), take W_kb's input from packed rows: then
    // q_nope is gathered first and q_abs copied into place.
    const ops::Weight kb_key = rounding_key(w.k_b);
    const bool gather = r.imatrix != nullptr || r.needs_rounding_dispatch(kb_key, int64_t(heads), mla.qk_nope,
                                                                          RoundAt::ExpertMatvec);
    if (gather) {
        s.mark("copy");
        s.copy_rows(sc.mla.q, 0, qh * F, sc.mla.qn, 0, uint64_t(mla.qk_nope) * F, uint64_t(mla.qk_nope) * F, heads);
        s.barrier("gathered q_nope rows are complete before W_kb reads them");
    }
    ops::MoeRouting by_head{&sc.mla.head_ids, nullptr, nullptr, T, a.n_head};
    const ops::TensorView q_nope = gather ? ops::f32_rows(sc.mla.qn, int64_t(heads), mla.qk_nope)
                                          : ops::f32_rows(sc.mla.q, int64_t(heads), mla.qk_nope, 0, int64_t(qh));
    // by_head has no sort: the expert matvec, which rounds each head's row itself.
    MatmulInputs mi = r.prepare_inputs(q_nope, {&kb_key}, RoundAt::ExpertMatvec);
    if (r.imatrix) r.imatrix->head_input(s, q_nope, by_head, w.k_b);
    s.mark("moe_matmul");
    const ops::TensorView q_abs = gather ? ops::f32_rows(sc.mla.qabs, int64_t(heads), mla.kv_lora_rank)
                                         : ops::f32_rows(sc.q, int64_t(heads), mla.kv_lora_rank, 0, int64_t(kv));
    ops::moe_matmul(s, w.k_b, mi.expert_input(w.k_b), /*x_per_pair=*/true, by_head, q_abs,
                    mi.rounds_in_matvec(kb_key.type));
    if (gather) {
        s.barrier("absorbed queries are complete before they are copied into the attention queries");
        s.mark("copy");
        s.copy_rows(sc.mla.qabs, 0, uint64_t(mla.kv_lora_rank) * F, sc.q, 0, kv * F, uint64_t(mla.kv_lora_rank) * F,
                    heads);
    }
    // The queries are complete at record_attend's barrier, after the cache writes.
}

void LatentAttentionBlock::record_output(Recording& r) const {
    const AttentionSpec& a = r.spec.layers[size_t(layer_)].attn;
    const LayerWeights& w = r.w.layers[size_t(layer_)];
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const int T = r.n_tokens;
    const int heads = T * a.n_head;
    ops::MoeRouting by_head{&sc.mla.head_ids, nullptr, nullptr, T, a.n_head};
    const ops::Weight vb_key = rounding_key(w.v_b);
    MatmulInputs mi = r.prepare_inputs(ops::f32_rows(sc.attn, heads, a.mla.kv_lora_rank), {&vb_key}, RoundAt::ExpertMatvec);
    if (r.imatrix) r.imatrix->head_input(s, ops::f32_rows(sc.attn, heads, a.mla.kv_lora_rank), by_head, w.v_b);
    s.mark("moe_matmul");
    // Scratch::attn is [T, n_head, kv_lora]: one latent row per (token, head) pair.
    ops::moe_matmul(s, w.v_b, mi.expert_input(w.v_b), /*x_per_pair=*/true, by_head,
                    ops::f32_rows(sc.mla.out, heads, a.mla.v_head), mi.rounds_in_matvec(vb_key.type));
    s.barrier("each head's value output is complete before the output projection reads it");
}

}  // namespace vkllm::model
