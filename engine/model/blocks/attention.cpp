#include "model/blocks/attention.h"

#include <cmath>

#include "model/op_params.h"
#include "ops/ops.h"

namespace vkllm::model {

void AttentionBlock::record(Recording& r) const {
    const int l = layer_, T = r.n_tokens;
    const LayerSpec& L = r.spec.layers[size_t(l)];
    const AttentionSpec& a = L.attn;
    const LayerWeights& w = r.w.layers[size_t(l)];
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const int64_t qd = int64_t(a.n_head) * a.head_dim;
    const uint64_t kv_row = uint64_t(a.n_head_kv) * uint64_t(a.head_dim);
    const uint64_t kv_row_v = uint64_t(a.n_head_kv) * uint64_t(a.head_dim_v);
    const KvCache::Layer& cache = r.kv.layer(l);
    bool kv_in_cache = false;

    // Decode's RMSNorm runs inside the projections' matvecs (normed_inputs).
    MatmulInputs mi = w.attn_norm ? r.normed_inputs(sc.x, 0, T, r.spec.n_embd, w.attn_norm, w.attn_norm_b,
                                                    {&w.wq, &w.wk, &w.wv},
                                                    "the normalised block input is complete before the projections read it",
                                                    sc.h)
                                  : r.prepare_inputs(sc.x, 0, T, r.spec.n_embd, {&w.wq, &w.wk, &w.wv});
    s.mark("matmul");
    mi.matmul(s, w.wq, sc.q, 0, T);
    mi.matmul(s, w.wk, sc.k_new, 0, T);
    mi.matmul(s, w.wv, sc.v_new, 0, T);
    s.barrier("q and the new k/v rows are complete before biases, norms, rope and attention");
    if (w.bq) {
        s.mark("add_bias");
        ops::add_bias(s, sc.q, 0, *w.bq, T, qd);
        ops::add_bias(s, sc.k_new, 0, *w.bk, T, int64_t(kv_row));
        ops::add_bias(s, sc.v_new, 0, *w.bv, T, int64_t(kv_row_v));
        s.barrier("biased q/k/v are complete before QK-norm, rope and attention");
    }
    if (a.temperature_floor > 0) {
        // Llama 4 NoPE layers: q *= log(floor((pos + 1) / floor) + 1) * scale + 1, constant over
        // runs of positions, so one scale per run (none while it is 1).
        s.mark("scale");
        for (int t0 = 0; t0 < T;) {
            auto factor = [&](int t) {
                return std::log(std::floor(float(r.pos0 + t + 1) / float(a.temperature_floor)) + 1.0f) *
                           a.temperature_scale + 1.0f;
            };
            int t1 = t0 + 1;
            while (t1 < T && factor(t1) == factor(t0)) ++t1;
            if (factor(t0) != 1.0f) ops::scale(s, sc.q, int64_t(t1 - t0) * qd, factor(t0), uint64_t(t0) * uint64_t(qd));
            t0 = t1;
        }
        s.barrier("temperature-scaled q is complete before attention reads it");
    }
    if (a.qk_norm != QkNorm::None && a.qk_norm != QkNorm::L2AfterRope) {
        // Per head: rows of head_dim; full width: one row of all heads per token.
        const bool per_head = a.qk_norm == QkNorm::PerHead;
        s.mark("norm");
        ops::rms_norm(s, sc.q, 0, w.q_norm, sc.q, 0, per_head ? int64_t(T) * a.n_head : T, per_head ? a.head_dim : qd,
                      r.spec.norm_eps);
        ops::rms_norm(s, sc.k_new, 0, w.k_norm, sc.k_new, 0, per_head ? int64_t(T) * a.n_head_kv : T,
                      per_head ? a.head_dim : int64_t(kv_row), r.spec.norm_eps);
        s.barrier("normalised q and k are complete before rope and attention");
    }
    if (a.rope.enabled) {
        s.mark("rope");
        ops::RopeParams rp = rope_params(a.rope);
        const gpu::Buffer* freqs = a.rope.longrope       ? (r.n_ctx > a.rope.n_ctx_orig ? r.w.rope_long : r.w.rope_short)
                                   : a.rope.freq_factors ? r.w.rope_freqs
                                                         : nullptr;
        if (a.qk_norm != QkNorm::L2AfterRope && r.kv.type() != KvCacheType::Q8_0) {
            // One dispatch: q rotated in place, rotated k and the v rows straight into their
            // cache slots.
            ops::rope_qkv_into_slots(s, sc.q, sc.k_new, sc.v_new, sc.positions, T, a.n_head, a.n_head_kv, a.head_dim,
                                     int64_t(kv_row_v), rp, freqs, cache.k, cache.v, cache.slots, r.kv.type());
            s.barrier("rotated q and the new k/v rows in their cache slots are complete before attention");
            kv_in_cache = true;
        } else {
            ops::rope(s, sc.q, 0, sc.positions, T, a.n_head, a.head_dim, rp, freqs);
            ops::rope(s, sc.k_new, 0, sc.positions, T, a.n_head_kv, a.head_dim, rp, freqs);
            s.barrier("rotated q and k are complete before k/v enter the cache and attention reads q");
        }
    }
    if (a.qk_norm == QkNorm::L2AfterRope) {
        // Llama 4: every rotated q and k head scaled to unit RMS (no weight).
        s.mark("norm");
        ops::rms_norm(s, sc.q, 0, nullptr, sc.q, 0, int64_t(T) * a.n_head, a.head_dim, r.spec.norm_eps);
        ops::rms_norm(s, sc.k_new, 0, nullptr, sc.k_new, 0, int64_t(T) * a.n_head_kv, a.head_dim, r.spec.norm_eps);
        s.barrier("normalised q and k are complete before k enters the cache and attention reads q");
    }
    record_attend(r, l, kv_in_cache);
    r.add_block_output(w.wo, sc.attn, a.n_head * a.head_dim_v, w.bo, w.post_attn_norm, nullptr, w.post_attn_norm_b,
                       L.norm_placement == NormPlacement::PostResidual);
}

// This step's keys and values are computed in k_new/v_new ([T, kv row]) and then written into
// their cache slots, slot = position % slots, by a shader that reads the positions buffer (a
// ring cache may wrap within a step; the recording does not depend on pos0, so a decode step can
// be replayed). RoPE writes them there itself when it is the last op on k.
void record_attend(Recording& r, int l, bool kv_in_cache) {
    const AttentionSpec& a = r.spec.layers[size_t(l)].attn;
    const LayerWeights& w = r.w.layers[size_t(l)];
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const int T = r.n_tokens;
    const KvCache::Layer& cache = r.kv.layer(l);
    if (!kv_in_cache) {
        const uint64_t kv_row = uint64_t(a.n_head_kv) * uint64_t(a.head_dim);
        const uint64_t kv_row_v = uint64_t(a.n_head_kv) * uint64_t(a.head_dim_v);
        s.mark("set_rows");
        ops::set_rows_into_slots(s, sc.k_new, 0, sc.positions, T, int64_t(kv_row), cache.k, cache.slots, r.kv.type());
        ops::set_rows_into_slots(s, sc.v_new, 0, sc.positions, T, int64_t(kv_row_v), cache.v, cache.slots, r.kv.type());
        s.barrier("the new k/v rows are in the cache before attention reads it");
    }
    const gpu::Buffer* probs = r.probe.attention_probs(l);
    const int n_kv = r.keys_in_view(cache.slots);  // slots in use (rounded up when replayed)
    s.mark("attention");
    ops::attention(s, sc.q, 0, sc.positions, cache.k, cache.v, r.kv.slot_positions(l), sc.attn, T, n_kv, a, r.kv.type(), w.sinks,
                   probs, sc.attn_split.valid() ? &sc.attn_split : nullptr);
    s.barrier("attention output is complete before the output projection reads it");
    r.probe.copy_attention(s, l, T, n_kv);
    r.probe.summarize_attention(s, l, T, n_kv, sc.q, sc.positions, cache.k, cache.v, a, r.kv.type(), w.sinks);
}

}  // namespace vkllm::model
