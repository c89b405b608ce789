#include "model/blocks/attention.h"

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <vector>

#include "gpu/device.h"
#include "model/op_params.h"
#include "ops/ops.h"
#include "ops/rwkv_ops.h"

namespace vkllm::model {

void AttentionBlock::record(Recording& r) const {
    const int l = layer_, T = r.n_tokens;
    const LayerSpec& L = r.spec.layers[size_t(l)];
    const AttentionSpec& a = L.attn;
    const LayerWeights& w = r.w.layers[size_t(l)];
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const int64_t qd = int64_t(a.n_head) * a.head_dim;
    const ops::KvView k_cache = r.k_cache(l), v_cache = r.v_cache(l);
    const ops::TensorView positions = ops::i32_vector(sc.positions, T);
    bool kv_in_cache = false;

    // Decode's RMSNorm runs inside the projections' matvecs (normed_inputs).
    if (a.gated && (!with_output_ || uint64_t(T) * uint64_t(qd) * 4 > sc.gate.size()))
        throw ModelError("layer " + std::to_string(l) + ": gated attention " +
                         (with_output_ ? "needs the FFN's gate scratch to hold its n_head * head_dim gates per token"
                                       : "in a parallel block is not implemented"));
    // Decode's quantised projections read one quantized copy of their input (quantized_inputs).
    auto inputs = [&](std::initializer_list<const ops::Weight*> projections) {
        return w.attn_norm ? quantized_inputs(r, r.residual(T), w.attn_norm, w.attn_norm_b, projections,
                                              "the normalised block input is complete before the projections read it",
                                              ops::f32_rows(sc.h, T, r.spec.n_embd))
                           : quantized_inputs(r, r.residual(T), projections);
    };
    MatmulInputs mi = a.gated ? inputs({&w.wq, &w.wk, &w.wv, &w.wq_gate}) : inputs({&w.wq, &w.wk, &w.wv});
    // A decode step's Q, K and V projections as one stacked matvec where they share a type and a
    // buffer, q, k and v one after another in Scratch::q; Q and K alone where V has another type
    // (ActivationPolicy::stack_qkv).
    const ops::Weight* qkv[] = {&w.wq, &w.wk, &w.wv};
    size_t stacked = 0;  // matrices in the stack: 3, 2 (q and k) or 0
    if (T == 1 && !r.batch && !a.gated && r.policy.stack_qkv && w.wq.n_out == qd && w.wk.n_out == k_cache.row &&
        w.wv.n_out == v_cache.row) {
        const uint64_t q_bytes = uint64_t(qd) * 4, k_bytes = uint64_t(k_cache.row) * 4;
        if (q_bytes + k_bytes + uint64_t(v_cache.row) * 4 <= sc.q.size() && mi.can_stack(r.ctx, qkv)) stacked = 3;
        else if (q_bytes + k_bytes <= sc.q.size() && mi.can_stack(r.ctx, std::span(qkv, 2))) stacked = 2;
    }
    NewKvRows kv{&sc.k_new, 0, &sc.v_new, 0};
    if (stacked >= 2) kv.k = &sc.q, kv.k_first = uint64_t(qd);
    if (stacked == 3) kv.v = &sc.q, kv.v_first = uint64_t(qd + k_cache.row);
    const ops::TensorView q = ops::f32_rows(sc.q, T, qd), k_new = kv.keys(0, T, k_cache.row),
                          v_new = kv.values(0, T, v_cache.row);
    s.mark("matmul");
    if (stacked) {
        int64_t rows = 0;
        for (size_t i = 0; i < stacked; ++i) rows += qkv[i]->n_out;
        mi.matvec_stacked(s, std::span(qkv, stacked), ops::f32_rows(sc.q, 1, rows));
        if (stacked == 2) mi.matmul(s, w.wv, v_new);
    } else {
        mi.matmul(s, w.wq, ops::f32_rows(sc.q, T, w.wq.n_out));
        mi.matmul(s, w.wk, ops::f32_rows(sc.k_new, T, w.wk.n_out));
        mi.matmul(s, w.wv, ops::f32_rows(sc.v_new, T, w.wv.n_out));
    }
    // Gated attention's gates wait in the FFN's gate scratch, which is free until the FFN.
    if (a.gated) mi.matmul(s, w.wq_gate, ops::f32_rows(sc.gate, T, qd));
    s.barrier("q and the new k/v rows are complete before biases, norms, rope and attention");
    if (w.bq) {
        s.mark("add_bias");
        ops::add_bias(s, q, ops::f32_vector(*w.bq, qd));
        ops::add_bias(s, k_new, ops::f32_vector(*w.bk, k_cache.row));
        ops::add_bias(s, v_new, ops::f32_vector(*w.bv, v_cache.row));
        s.barrier("biased q/k/v are complete before QK-norm, rope and attention");
    }
    if (a.temperature_floor > 0) {
        if (r.batch) throw std::logic_error("AttentionBlock: a batched pass has no single pos0 for temperature scaling");
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
            if (factor(t0) != 1.0f) ops::scale(s, ops::f32_rows(sc.q, t1 - t0, qd, uint64_t(t0) * uint64_t(qd)), factor(t0));
            t0 = t1;
        }
        s.barrier("temperature-scaled q is complete before attention reads it");
    }
    if (a.qk_norm != QkNorm::None && a.qk_norm != QkNorm::L2AfterRope) {
        // Per head: rows of head_dim; full width: one row of all heads per token.
        const bool per_head = a.qk_norm == QkNorm::PerHead;
        s.mark("norm");
        const ops::TensorView q_rows = per_head ? ops::f32_rows(sc.q, int64_t(T) * a.n_head, a.head_dim) : q;
        const ops::TensorView k_rows = per_head ? kv.keys(0, int64_t(T) * a.n_head_kv, a.head_dim) : k_new;
        ops::rms_norm(s, q_rows, w.q_norm, q_rows, r.spec.norm_eps);
        ops::rms_norm(s, k_rows, w.k_norm, k_rows, r.spec.norm_eps);
        s.barrier("normalised q and k are complete before rope and attention");
    }
    if (a.rope.enabled) {
        s.mark("rope");
        ops::RopeParams rp = rope_params(a.rope);
        const gpu::Buffer* freqs = a.rope.longrope       ? (r.n_ctx > a.rope.n_ctx_orig ? r.w.rope_long : r.w.rope_short)
                                   : a.rope.freq_factors ? r.w.rope_freqs
                                                         : nullptr;
        if (a.qk_norm != QkNorm::L2AfterRope && r.kv.type() != KvCacheType::Q8_0) {
            // One dispatch per sequence: q rotated in place, rotated k and the v rows straight
            // into their cache slots.
            for (const Segment& g : r.segments()) {
                const uint64_t t0 = uint64_t(g.first);
                ops::rope_qkv_into_slots(s, ops::f32_rows(sc.q, g.n_tokens, qd, t0 * uint64_t(qd)), a.n_head,
                                         kv.keys(int64_t(t0), g.n_tokens, k_cache.row), a.n_head_kv,
                                         kv.values(int64_t(t0), g.n_tokens, v_cache.row),
                                         ops::i32_vector(sc.positions, g.n_tokens, t0), rp, freqs, r.k_cache(l, *g.kv),
                                         r.v_cache(l, *g.kv));
            }
            s.barrier("rotated q and the new k/v rows in their cache slots are complete before attention");
            kv_in_cache = true;
        } else {
            ops::rope(s, q, a.n_head, positions, rp, freqs);
            ops::rope(s, k_new, a.n_head_kv, positions, rp, freqs);
            s.barrier("rotated q and k are complete before k/v enter the cache and attention reads q");
        }
    }
    if (a.qk_norm == QkNorm::L2AfterRope) {
        // Llama 4: every rotated q and k head scaled to unit RMS (no weight).
        s.mark("norm");
        const ops::TensorView q_heads = ops::f32_rows(sc.q, int64_t(T) * a.n_head, a.head_dim);
        const ops::TensorView k_heads = kv.keys(0, int64_t(T) * a.n_head_kv, a.head_dim);
        ops::rms_norm(s, q_heads, nullptr, q_heads, r.spec.norm_eps);
        ops::rms_norm(s, k_heads, nullptr, k_heads, r.spec.norm_eps);
        s.barrier("normalised q and k are complete before k enters the cache and attention reads q");
    }
    record_attend(r, l, kv_in_cache, kv);
    if (!with_output_) return;
    if (a.gated) {
        record_sigmoid_gate(r, l);
        return;
    }
    AttentionOutputBlock(l).record(r);
}

// Gated attention: x += Wo (attn * sigmoid(gate)), the gates in Scratch::gate. The product is
// RWKV-7's value-mix op, v + (v_first - v) * sigmoid(v_mix + v0), with v and v0 zero: v_first *
// sigmoid(v_mix) exactly (0 + (a - 0) * sigmoid(g + 0)), written into Scratch::q, which attention
// no longer reads.
void AttentionBlock::record_sigmoid_gate(Recording& r, int l) const {
    const int T = r.n_tokens;
    const AttentionSpec& a = r.spec.layers[size_t(l)].attn;
    const LayerWeights& w = r.w.layers[size_t(l)];
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const int64_t qd = int64_t(a.n_head) * a.head_dim;
    const ops::TensorView gated = ops::f32_rows(sc.q, T, qd);
    s.mark("sigmoid_gate");
    s.fill_zero(sc.q, 0, uint64_t(T) * uint64_t(qd) * 4);
    s.barrier("the zeroed product rows are complete before the gate accumulates into them");
    ops::rwkv7_value_mix(s, gated, ops::f32_rows(sc.attn, T, qd), ops::f32_rows(sc.gate, T, qd),
                         ops::f32_rows(*w.zeros, 1, qd));
    s.barrier("the gated attention output is complete before the output projection reads it");
    const LayerSpec& L = r.spec.layers[size_t(l)];
    r.add_block_output(w.wo, gated, w.bo, w.post_attn_norm, nullptr, w.post_attn_norm_b,
                       L.norm_placement == NormPlacement::PostResidual);
}

void AttentionOutputBlock::record(Recording& r) const {
    const int l = layer_, T = r.n_tokens;
    const LayerSpec& L = r.spec.layers[size_t(l)];
    const AttentionSpec& a = L.attn;
    const LayerWeights& w = r.w.layers[size_t(l)];
    Scratch& sc = r.scratch;
    r.add_block_output(w.wo, ops::f32_rows(sc.attn, T, int64_t(a.n_head) * a.head_dim_v), w.bo, w.post_attn_norm, nullptr, w.post_attn_norm_b,
                       L.norm_placement == NormPlacement::PostResidual);
}

// This step's keys and values are computed in k_new/v_new ([T, kv row]) and then written into
// their cache slots, slot = position % slots, by a shader that reads the positions buffer (a
// ring cache may wrap within a step; the recording does not depend on pos0, so a decode step can
// be replayed). RoPE writes them there itself when it is the last op on k. A batched pass writes
// and attends per sequence (segment), each over its own cache.
void record_attend(Recording& r, int l, bool kv_in_cache) {
    record_attend(r, l, kv_in_cache, NewKvRows{&r.scratch.k_new, 0, &r.scratch.v_new, 0});
}

void record_attend(Recording& r, int l, bool kv_in_cache, const NewKvRows& kv) {
    const AttentionSpec& a = r.spec.layers[size_t(l)].attn;
    const LayerWeights& w = r.w.layers[size_t(l)];
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const std::vector<Segment> segs = r.segments();
    const int64_t k_row = int64_t(a.n_head_kv) * a.head_dim, v_row = int64_t(a.n_head_kv) * a.value_dim();
    const int64_t q_row = int64_t(a.n_head) * a.head_dim, o_row = int64_t(a.n_head) * a.value_dim();
    if (!kv_in_cache) {
        s.mark("set_rows");
        for (const Segment& g : segs) {
            const uint64_t t0 = uint64_t(g.first);
            const ops::TensorView positions = ops::i32_vector(sc.positions, g.n_tokens, t0);
            ops::set_rows_into_slots(s, kv.keys(int64_t(t0), g.n_tokens, k_row), positions, r.k_cache(l, *g.kv));
            ops::set_rows_into_slots(s, kv.values(int64_t(t0), g.n_tokens, v_row), positions, r.v_cache(l, *g.kv));
        }
        s.barrier("the new k/v rows are in the cache before attention reads it");
    }
    s.mark("attention");
    if (!r.batch) {
        const ops::KvView k_cache = r.k_cache(l), v_cache = r.v_cache(l);
        const int T = r.n_tokens;
        const gpu::Buffer* probs = r.probe.attention_probs(l);
        const int n_kv = r.keys_in_view(int(k_cache.slots));  // slots in use (rounded up when replayed)
        ops::attention(s, ops::f32_rows(sc.q, T, q_row), ops::i32_vector(sc.positions, T), k_cache, v_cache,
                       ops::i32_vector(r.kv.slot_positions(l), n_kv), ops::f32_rows(sc.attn, T, o_row), a, w.sinks,
                       probs, sc.attn_split.valid() ? &sc.attn_split : nullptr);
        s.barrier("attention output is complete before the output projection reads it");
        r.probe.copy_attention(s, l, T, n_kv);
        r.probe.summarize_attention(s, l, T, n_kv, sc.q, sc.positions, k_cache, v_cache, a, w.sinks);
        return;
    }
    // Each segment's output rows bind from an aligned offset: straight into attn when every
    // segment's first row is at one, else through attn_stage and one copy per segment.
    const uint64_t align = std::max<uint64_t>(r.ctx.caps().min_storage_buffer_offset_alignment, 4);
    const uint64_t o_bytes = uint64_t(o_row) * 4;
    bool stage = false;
    for (const Segment& g : segs) stage = stage || (uint64_t(g.first) * o_bytes) % align != 0;
    std::vector<uint64_t> staged_at;  // bytes
    uint64_t next = 0;
    for (const Segment& g : segs) {
        const ops::KvView k_cache = r.k_cache(l, *g.kv), v_cache = r.v_cache(l, *g.kv);
        const int n_kv = r.keys_in_view(g, int(k_cache.slots));
        const uint64_t t0 = uint64_t(g.first);
        next = (next + align - 1) / align * align;
        staged_at.push_back(next);
        const ops::TensorView out = stage ? ops::f32_rows(sc.attn_stage, g.n_tokens, o_row, next / 4)
                                          : ops::f32_rows(sc.attn, g.n_tokens, o_row, t0 * uint64_t(o_row));
        next += uint64_t(g.n_tokens) * o_bytes;
        ops::attention(s, ops::f32_rows(sc.q, g.n_tokens, q_row, t0 * uint64_t(q_row)),
                       ops::i32_vector(*g.q_pos, g.n_tokens, g.q_pos_first), k_cache, v_cache,
                       ops::i32_vector(g.kv->slot_positions(l), n_kv), out, a, w.sinks);
    }
    if (stage) {
        s.barrier("staged attention rows are complete before they are copied into place");
        for (size_t i = 0; i < segs.size(); ++i)
            s.copy(sc.attn_stage, staged_at[i], sc.attn, uint64_t(segs[i].first) * o_bytes,
                   uint64_t(segs[i].n_tokens) * o_bytes);
    }
    s.barrier("attention output is complete before the output projection reads it");
}

}  // namespace vkllm::model
