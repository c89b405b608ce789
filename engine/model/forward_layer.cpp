// The per-layer part of the forward pass: one attention block and one FFN block, each shaped by
// the layer's spec (norm placement, fused or biased projections, QK-norm, RoPE, window, soft-cap,
// gated or plain FFN). Every barrier says what it orders.
#include <algorithm>
#include <cmath>

#include "model/forward.h"
#include "ops/ops.h"

namespace vkllm::model {
namespace {
constexpr size_t F = sizeof(float);
}

void Forward::norm(const gpu::Buffer& x, uint64_t x_offset, const gpu::Buffer* w, const gpu::Buffer* b,
                   const gpu::Buffer& y, uint64_t y_offset, int rows, int n) {
    if (n == 0) n = spec_.n_embd;
    stream_->mark("norm");
    if (spec_.norm == NormKind::RMSNorm)
        ops::rms_norm(*stream_, x, x_offset, w, y, y_offset, rows, n, spec_.norm_eps);
    else
        ops::layer_norm(*stream_, x, x_offset, w, b, y, y_offset, rows, n, spec_.norm_eps);
}

void Forward::record_embeddings(int T) {
    gpu::Stream& s = *stream_;
    s.mark("get_rows");
    ops::get_rows(s, w_.token_embd, scratch_.ids, scratch_.x, T);
    if (spec_.learned_positions) ops::get_rows(s, w_.position_embd, scratch_.positions, scratch_.h, T);
    s.barrier("embeddings are written before they are scaled or summed");
    if (spec_.embd_scale != 1.0f) {
        s.mark("scale");
        ops::scale(s, scratch_.x, int64_t(T) * spec_.n_embd, spec_.embd_scale);
        s.barrier("scaled embeddings are complete before layer 0 reads them");
    }
    if (w_.token_type0) {
        // BERT: token type 0's row added to every token (before the positions, as llama.cpp sums).
        s.mark("add_bias");
        ops::add_bias(s, scratch_.x, 0, *w_.token_type0, T, spec_.n_embd);
        s.barrier("token + type embeddings are complete before the positions are added");
    }
    if (spec_.learned_positions) {
        s.mark("add");
        ops::add(s, scratch_.x, scratch_.h, scratch_.x, int64_t(T) * spec_.n_embd);
        s.barrier("token + position embeddings are complete before layer 0 reads them");
    }
    if (w_.embd_norm) {
        norm(scratch_.x, 0, w_.embd_norm, w_.embd_norm_b, scratch_.x, 0, T);
        s.barrier("the normalised embeddings are complete before layer 0 reads them");
    }
}

void Forward::record_layer(int l, int n_tokens, int pos0, const ProbeConfig& probes) {
    stream_->set_layer(l);
    record_attention(l, n_tokens, pos0);
    record_ffn(l, n_tokens, probes);
    record_after_layer(l, n_tokens, probes);
}

// x += Wo · attention(q, k, v) with q, k, v from norm(x) (Pre/Sandwich) or x itself (Post);
// Post and Sandwich placements normalise the block's output before the residual add.
void Forward::record_attention(int l, int T, int pos0) {
    const LayerSpec& L = spec_.layers[size_t(l)];
    const AttentionSpec& a = L.attn;
    const LayerWeights& w = w_.layers[size_t(l)];
    gpu::Stream& s = *stream_;
    const int64_t qd = int64_t(a.n_head) * a.head_dim;
    const uint64_t kv_row = uint64_t(a.n_head_kv) * uint64_t(a.head_dim);
    const uint64_t kv_row_v = uint64_t(a.n_head_kv) * uint64_t(a.head_dim_v);
    const KvCache::Layer& cache = kv_.layer(l);
    const ops::CacheType cache_type = kv_.type();
    // This step's keys and values are computed in scratch_.k_new/scratch_.v_new ([T, kv row]) and then written
    // into their cache slots, slot = position % slots, by a shader that reads the positions
    // buffer (a ring cache may wrap within a step; the recording does not depend on pos0, so a
    // decode step can be replayed). RoPE writes k there itself when it is the last op on k.
    auto write_cache = [&](const gpu::Buffer& rows, const gpu::Buffer& dst, uint64_t row) {
        ops::set_rows_into_slots(s, rows, 0, scratch_.positions, T, int64_t(row), dst, cache.slots, cache_type);
    };
    bool kv_in_cache = false;

    // Decode's RMSNorm runs inside the projections' matvecs (normed_inputs).
    auto inputs = [&](std::initializer_list<const ops::Weight*> ws) {
        return w.attn_norm ? normed_inputs(scratch_.x, 0, T, spec_.n_embd, w.attn_norm, w.attn_norm_b, ws,
                                           "the normalised block input is complete before the projections read it", scratch_.h)
                           : prepare_inputs(scratch_.x, 0, T, spec_.n_embd, ws);
    };
    if (a.mla.kv_lora_rank > 0) {
        record_mla_qkv(l, T, w.wq_a.buffer ? inputs({&w.wq_a, &w.wkv_a}) : inputs({&w.wq, &w.wkv_a}));
    } else {
        MatmulInputs mi = inputs({&w.wq, &w.wk, &w.wv});
        s.mark("matmul");
        mi.matmul(s, w.wq, scratch_.q, 0, T);
        mi.matmul(s, w.wk, scratch_.k_new, 0, T);
        mi.matmul(s, w.wv, scratch_.v_new, 0, T);
        s.barrier("q and the new k/v rows are complete before biases, norms, rope and attention");
        if (w.bq) {
            s.mark("add_bias");
            ops::add_bias(s, scratch_.q, 0, *w.bq, T, qd);
            ops::add_bias(s, scratch_.k_new, 0, *w.bk, T, int64_t(kv_row));
            ops::add_bias(s, scratch_.v_new, 0, *w.bv, T, int64_t(kv_row_v));
            s.barrier("biased q/k/v are complete before QK-norm, rope and attention");
        }
        if (a.temperature_floor > 0) {
            // Llama 4 NoPE layers: q *= log(floor((pos + 1) / floor) + 1) * scale + 1, constant over
            // runs of positions, so one scale per run (none while it is 1).
            s.mark("scale");
            for (int t0 = 0; t0 < T;) {
                auto factor = [&](int t) {
                    return std::log(std::floor(float(pos0 + t + 1) / float(a.temperature_floor)) + 1.0f) *
                               a.temperature_scale + 1.0f;
                };
                int t1 = t0 + 1;
                while (t1 < T && factor(t1) == factor(t0)) ++t1;
                if (factor(t0) != 1.0f) ops::scale(s, scratch_.q, int64_t(t1 - t0) * qd, factor(t0), uint64_t(t0) * uint64_t(qd));
                t0 = t1;
            }
            s.barrier("temperature-scaled q is complete before attention reads it");
        }
        if (a.qk_norm != QkNorm::None && a.qk_norm != QkNorm::L2AfterRope) {
            // Per head: rows of head_dim; full width: one row of all heads per token.
            const bool per_head = a.qk_norm == QkNorm::PerHead;
            s.mark("norm");
            ops::rms_norm(s, scratch_.q, 0, w.q_norm, scratch_.q, 0, per_head ? int64_t(T) * a.n_head : T, per_head ? a.head_dim : qd,
                          spec_.norm_eps);
            ops::rms_norm(s, scratch_.k_new, 0, w.k_norm, scratch_.k_new, 0, per_head ? int64_t(T) * a.n_head_kv : T,
                          per_head ? a.head_dim : int64_t(kv_row), spec_.norm_eps);
            s.barrier("normalised q and k are complete before rope and attention");
        }
        if (a.rope.enabled) {
            s.mark("rope");
            ops::RopeParams rp = rope_params(a.rope);
            const gpu::Buffer* freqs = a.rope.longrope       ? (n_ctx_ > a.rope.n_ctx_orig ? w_.rope_long : w_.rope_short)
                                       : a.rope.freq_factors ? w_.rope_freqs
                                                             : nullptr;
            if (a.qk_norm != QkNorm::L2AfterRope && cache_type != ops::CacheType::Q8_0) {
                // One dispatch: q rotated in place, rotated k and the v rows straight into their
                // cache slots.
                ops::rope_qkv_into_slots(s, scratch_.q, scratch_.k_new, scratch_.v_new, scratch_.positions, T, a.n_head, a.n_head_kv, a.head_dim,
                                         int64_t(kv_row_v), rp, freqs, cache.k, cache.v, cache.slots, cache_type);
                s.barrier("rotated q and the new k/v rows in their cache slots are complete before attention");
                kv_in_cache = true;
            } else {
                ops::rope(s, scratch_.q, 0, scratch_.positions, T, a.n_head, a.head_dim, rp, freqs);
                ops::rope(s, scratch_.k_new, 0, scratch_.positions, T, a.n_head_kv, a.head_dim, rp, freqs);
                s.barrier("rotated q and k are complete before k/v enter the cache and attention reads q");
            }
        }
        if (a.qk_norm == QkNorm::L2AfterRope) {
            // Llama 4: every rotated q and k head scaled to unit RMS (no weight).
            s.mark("norm");
            ops::rms_norm(s, scratch_.q, 0, nullptr, scratch_.q, 0, int64_t(T) * a.n_head, a.head_dim, spec_.norm_eps);
            ops::rms_norm(s, scratch_.k_new, 0, nullptr, scratch_.k_new, 0, int64_t(T) * a.n_head_kv, a.head_dim, spec_.norm_eps);
            s.barrier("normalised q and k are complete before k enters the cache and attention reads q");
        }
    }
    if (!kv_in_cache) {
        s.mark("set_rows");
        write_cache(scratch_.k_new, cache.k, kv_row);
        write_cache(scratch_.v_new, cache.v, kv_row_v);
        s.barrier("the new k/v rows are in the cache before attention reads it");
    }

    auto probed = std::find(probed_layers_.begin(), probed_layers_.end(), l);
    const gpu::Buffer* probs = probed != probed_layers_.end() ? &probs_[size_t(probed - probed_layers_.begin())] : nullptr;
    const int n_kv = keys_in_view(cache.slots, pos0 + T);  // slots in use (rounded up when replayed)
    s.mark("attention");
    ops::AttentionParams ap = attention_params(a);
    ap.cache = cache_type;
    ops::attention(s, scratch_.q, 0, scratch_.positions, cache.k, cache.v, kv_.slot_positions(l), scratch_.attn, T, n_kv, ap, w.sinks,
                   probs,
                   scratch_.attn_split.valid() ? &scratch_.attn_split : nullptr);
    s.barrier("attention output is complete before the output projection reads it");
    if (probs) {
        // The newest attn_rows_ query rows of [T, n_head, n_kv], and with sinks their
        // probabilities [T, n_head] after the rows (see ops::attention).
        const gpu::Buffer& host = probs_host_[size_t(probed - probed_layers_.begin())];
        const uint64_t row = uint64_t(a.n_head) * uint64_t(n_kv) * F;
        const uint64_t first = uint64_t(T - attn_rows_);
        s.mark("copy");
        s.copy(*probs, first * row, host, 0, uint64_t(attn_rows_) * row);
        if (w.sinks) {
            const uint64_t sink_row = uint64_t(a.n_head) * F;
            s.copy(*probs, uint64_t(T) * row + first * sink_row, host,
                   uint64_t(attn_rows_cap_) * uint64_t(a.n_head) * uint64_t(cache.slots) * F,
                   uint64_t(attn_rows_) * sink_row);
        }
    }

    if (a.mla.kv_lora_rank > 0) {
        record_mla_output(l, T);
        add_block_output(w.wo, scratch_.mla.out, a.n_head * a.mla.v_head, w.bo, w.post_attn_norm, T);
        return;
    }
    add_block_output(w.wo, scratch_.attn, a.n_head * a.head_dim_v, w.bo, w.post_attn_norm, T, nullptr, w.post_attn_norm_b,
                     L.norm_placement == NormPlacement::PostResidual);
}

// x += post_norm(W in + bias): a block's last projection and its residual add. Without a
// post-norm the add is fused into the matmul (accumulate). norm_after_add (BERT):
// x = post_norm(x + W in + bias) with the norm's bias post_norm_b.
void Forward::add_block_output(const ops::Weight& w, const gpu::Buffer& in, int n_in, const gpu::Buffer* bias,
                               const gpu::Buffer* post_norm, int T, const gpu::Buffer* probe_out,
                               const gpu::Buffer* post_norm_b, bool norm_after_add) {
    gpu::Stream& s = *stream_;
    // A probed projection is computed apart and then added, so its output can be copied.
    const bool apart = post_norm || probe_out;
    const gpu::Buffer& out = apart ? scratch_.block_out : scratch_.x;
    MatmulInputs mi = prepare_inputs(in, 0, T, n_in, {&w});
    s.mark("matmul");
    mi.matmul(s, w, out, 0, T, /*accumulate=*/!apart);
    s.barrier("the block's projection is complete before its bias, its post-norm or the next layer");
    if (bias) {
        s.mark("add_bias");
        ops::add_bias(s, out, 0, *bias, T, spec_.n_embd);
        s.barrier("the block's bias is added before its post-norm or the next layer");
    }
    if (!apart) return;
    if (post_norm && !norm_after_add) {
        norm(scratch_.block_out, 0, post_norm, nullptr, scratch_.block_out, 0, T);
        s.barrier("the post-normalised block output is complete before the probe copy and the residual add");
    }
    if (probe_out) {
        // What the block adds to the residual stream (both only read scratch_.block_out).
        s.mark("copy");
        s.copy(scratch_.block_out, 0, *probe_out, 0, uint64_t(T) * uint64_t(spec_.n_embd) * F);
    }
    s.mark("add");
    ops::add(s, scratch_.x, scratch_.block_out, scratch_.x, int64_t(T) * spec_.n_embd);
    s.barrier("the residual stream is updated before the next block reads it");
    if (post_norm && norm_after_add) {
        norm(scratch_.x, 0, post_norm, post_norm_b, scratch_.x, 0, T);
        s.barrier("the normalised residual sum is complete before the next block reads it");
    }
}

// x += W_down · act(W_gate h) * (W_up h)   (gated: SwiGLU / GeGLU)
// x += W_down · act(W_up h + b_up) + b_down (plain: GPT-2)
void Forward::record_ffn(int l, int T, const ProbeConfig& probes) {
    const LayerSpec& L = spec_.layers[size_t(l)];
    const LayerWeights& w = w_.layers[size_t(l)];
    gpu::Stream& s = *stream_;
    const int64_t n = int64_t(T) * L.ffn.n_ff;

    const char* normed = "the normalised FFN input is complete before the gate/up projections read it";
    if (L.ffn.moe.n_expert > 0) {
        const gpu::Buffer* in = &scratch_.x;
        if (w.ffn_norm) {
            norm(scratch_.x, 0, w.ffn_norm, w.ffn_norm_b, scratch_.h, 0, T);
            s.barrier(normed);
            in = &scratch_.h;
        }
        record_moe(l, T, *in, probes);
        return;
    }
    // Decode's RMSNorm runs inside the gate/up (or up) matvecs (normed_inputs).
    auto inputs = [&](std::initializer_list<const ops::Weight*> ws) {
        return w.ffn_norm ? normed_inputs(scratch_.x, 0, T, spec_.n_embd, w.ffn_norm, w.ffn_norm_b, ws, normed, scratch_.h)
                          : prepare_inputs(scratch_.x, 0, T, spec_.n_embd, ws);
    };
    if (L.ffn.gated) {
        MatmulInputs mi = inputs({&w.gate, &w.up});
        const bool silu = L.ffn.activation == Activation::SiLU;
        if (T == 1 && ops::matvec_swiglu_fits(ctx_, w.gate, w.up)) {
            // Decode: gate, up and the gated activation in one dispatch (as the ops below would
            // compute it, bit for bit); the gate and up rows never reach memory.
            s.mark(silu ? "matvec_swiglu" : "matvec_geglu");
            mi.matvec_swiglu(s, w.gate, w.up, scratch_.gate,
                             silu ? ops::GluActivation::SiLU
                                  : round_activations_ ? ops::GluActivation::GeluFp16Table : ops::GluActivation::Gelu);
        } else {
            s.mark("matmul");
            mi.matmul(s, w.gate, scratch_.gate, 0, T);
            mi.matmul(s, w.up, scratch_.up, 0, T);
            s.barrier("gate and up are complete before the gated activation combines them");
            s.mark(L.ffn.activation == Activation::SiLU ? "swiglu" : "geglu");
            if (L.ffn.activation == Activation::SiLU) ops::swiglu(s, scratch_.gate, scratch_.up, scratch_.gate, n);
            else ops::geglu(s, scratch_.gate, scratch_.up, scratch_.gate, n, /*fp16_table=*/round_activations_);
        }
    } else {
        MatmulInputs mi = inputs({&w.up});
        s.mark("matmul");
        mi.matmul(s, w.up, scratch_.gate, 0, T);
        s.barrier("the up projection is complete before its bias and activation");
        if (w.b_up) {
            s.mark("add_bias");
            ops::add_bias(s, scratch_.gate, 0, *w.b_up, T, L.ffn.n_ff);
            s.barrier("the up bias is added before the activation");
        }
        s.mark("gelu");
        if (L.ffn.activation == Activation::GeluErf) ops::gelu_erf(s, scratch_.gate, scratch_.gate, n);
        else ops::gelu(s, scratch_.gate, scratch_.gate, n, /*fp16_table=*/round_activations_);
    }
    s.barrier("the activation is complete before the down projection reads it");
    if (probes.ffn_down) {
        s.mark("copy");
        s.copy(scratch_.gate, 0, ffn_in_host_[size_t(l)], 0, uint64_t(n) * F);
    }
    add_block_output(w.down, scratch_.gate, L.ffn.n_ff, w.b_down, w.post_ffn_norm, T,
                     probes.ffn_down ? &ffn_out_host_[size_t(l)] : nullptr, w.post_ffn_norm_b,
                     L.norm_placement == NormPlacement::PostResidual);
    if (w.down_super) {  // exact super weights (quantize --keep-super-weights): x += delta * a[col] at row
        s.mark("super_correction");
        ops::super_correction(s, scratch_.x, spec_.n_embd, scratch_.gate, L.ffn.n_ff, T, *w.down_super, w.n_down_super);
        if (probes.ffn_down)
            ops::super_correction(s, ffn_out_host_[size_t(l)], spec_.n_embd, scratch_.gate, L.ffn.n_ff, T, *w.down_super,
                                  w.n_down_super);
        s.barrier("the corrected residual stream is complete before the next layer reads it");
    }
}

namespace {
// Activation rounding depends only on the weight type.
ops::Weight rounding_key(const ops::ExpertWeights& e) {
    ops::Weight w;
    w.type = e.type;
    return w;
}
}  // namespace

// x += sum_k w_k · W_down,e_k (silu(W_gate,e_k h) * W_up,e_k h) over the top_k experts e_k the
// router picks for each token; routing, grouping and the weighted sum stay on the GPU.
void Forward::record_moe(int l, int T, const gpu::Buffer& in, const ProbeConfig& probes) {
    const LayerSpec& L = spec_.layers[size_t(l)];
    const MoeSpec& moe = L.ffn.moe;
    const LayerWeights& w = w_.layers[size_t(l)];
    gpu::Stream& s = *stream_;
    const int64_t pairs = int64_t(T) * moe.top_k;

    MatmulInputs mi = prepare_inputs(in, 0, T, spec_.n_embd, {&w.router});
    s.mark("matmul");
    mi.matmul(s, w.router, scratch_.moe.router_logits, 0, T);
    s.barrier("router logits are complete before their bias or routing");
    if (w.router_bias) {
        s.mark("add_bias");
        ops::add_bias(s, scratch_.moe.router_logits, 0, *w.router_bias, T, moe.n_expert);
        s.barrier("biased router logits are complete before routing reads them");
    }
    ops::RouterParams rp;
    rp.n_expert = moe.n_expert;
    rp.top_k = moe.top_k;
    rp.gating = moe.sigmoid ? ops::RouterParams::Sigmoid : ops::RouterParams::Softmax;
    rp.norm_topk = moe.norm_topk;
    rp.weights_scale = moe.weights_scale;
    rp.softmax_after_topk = moe.softmax_after_topk;
    rp.selection_bias = w.selection_bias;
    rp.n_group = moe.n_group;
    rp.topk_group = moe.topk_group;
    s.mark("moe_route");
    ops::moe_route(s, scratch_.moe.router_logits, 0, T, rp, scratch_.moe.experts, scratch_.moe.weights);
    s.barrier("the chosen experts and weights are complete before grouping and the expert matmuls");
    if (probes.routing || probes.ffn_down) {
        // Each token's experts and weights: int32 [pairs] then float [pairs].
        const gpu::Buffer& host = routing_host_[size_t(l)];
        s.mark("copy");
        s.copy(scratch_.moe.experts, 0, host, 0, uint64_t(pairs) * 4);
        s.copy(scratch_.moe.weights, 0, host, uint64_t(n_batch_) * uint64_t(moe.top_k) * 4, uint64_t(pairs) * F);
    }
    ops::MoeRouting r{&scratch_.moe.experts, &scratch_.moe.weights, nullptr, T, moe.top_k};
    if (T > 1) {
        ops::moe_sort(s, scratch_.moe.experts, pairs, moe.n_expert, scratch_.moe.sorted);
        s.barrier("pairs grouped by expert are complete before the tiled expert matmuls");
        r.sorted = &scratch_.moe.sorted;
    }
    if (probes.expert_load) ops::moe_expert_load(s, r, moe.n_expert, expert_load_[size_t(l)]);

    const ops::Weight gate_key = rounding_key(w.gate_exps), up_key = rounding_key(w.up_exps);
    // Llama 4 scales each expert's input by its weight, and sums the outputs unweighted.
    const gpu::Buffer* expert_in = &in;
    int in_rows = T;
    if (moe.weight_input) {
        s.mark("moe_input");
        ops::moe_weighted_input(s, in, 0, r, scratch_.moe.input, spec_.n_embd);
        s.barrier("weighted expert inputs are complete before the expert matmuls read them");
        expert_in = &scratch_.moe.input;
        in_rows = int(pairs);
    }
    // Decode (no sort): the expert matvecs round x themselves, and gate, up and SwiGLU are one
    // dispatch where gate and up share a buffer (no expert bias, not gpt-oss's clamped form).
    const RoundAt at = r.sorted ? RoundAt::Dispatch : RoundAt::ExpertMatvec;
    mi = prepare_inputs(*expert_in, 0, in_rows, spec_.n_embd, {&gate_key, &up_key}, at);
    if (T == 1 && moe.swiglu_alpha <= 0 && ops::moe_matvec_swiglu_fits(ctx_, w.gate_exps, w.up_exps)) {
        s.mark("moe_matvec_swiglu");
        ops::moe_matvec_swiglu(s, w.gate_exps, w.up_exps, mi.of(gate_key), mi.offset_of(gate_key), moe.weight_input, r,
                               scratch_.moe.gate, 0, mi.rounds_in_matvec(gate_key.type));
    } else {
        s.mark("moe_matmul");
        ops::moe_matmul(s, w.gate_exps, mi.of(gate_key), mi.offset_of(gate_key), moe.weight_input, r, scratch_.moe.gate, 0,
                        mi.rounds_in_matvec(gate_key.type));
        ops::moe_matmul(s, w.up_exps, mi.of(up_key), mi.offset_of(up_key), moe.weight_input, r, scratch_.moe.up, 0,
                        mi.rounds_in_matvec(up_key.type));
        s.barrier("expert gate and up outputs are complete before SwiGLU combines them");
        s.mark("swiglu");
        if (moe.swiglu_alpha > 0)
            ops::swiglu_oai(s, scratch_.moe.gate, scratch_.moe.up, scratch_.moe.gate, pairs * moe.n_ff_expert, moe.swiglu_alpha,
                            moe.swiglu_limit);
        else
            ops::swiglu(s, scratch_.moe.gate, scratch_.moe.up, scratch_.moe.gate, pairs * moe.n_ff_expert);
    }
    s.barrier("the experts' SwiGLU is complete before their down projections read it");
    if (probes.ffn_down) {
        s.mark("copy");
        s.copy(scratch_.moe.gate, 0, moe_in_host_[size_t(l)], 0, uint64_t(pairs) * uint64_t(moe.n_ff_expert) * F);
    }
    const ops::Weight down_key = rounding_key(w.down_exps);
    mi = prepare_inputs(scratch_.moe.gate, 0, int(pairs), moe.n_ff_expert, {&down_key}, at);
    s.mark("moe_matmul");
    ops::moe_matmul(s, w.down_exps, mi.of(down_key), mi.offset_of(down_key), true, r, scratch_.moe.down, 0,
                    mi.rounds_in_matvec(down_key.type));
    s.barrier("the experts' outputs are complete before their weighted sum");
    if (probes.ffn_down) {
        s.mark("copy");
        s.copy(scratch_.moe.down, 0, moe_out_host_[size_t(l)], 0, uint64_t(pairs) * uint64_t(spec_.n_embd) * F);
    }
    s.mark("moe_combine");
    ops::MoeRouting combine = r;
    if (moe.weight_input) combine.weights = &scratch_.moe.ones;
    ops::moe_combine(s, scratch_.moe.down, 0, combine, scratch_.x, 0, spec_.n_embd, /*accumulate=*/true);
    s.barrier("the residual stream is complete before the shared expert or the next layer reads it");
    if (moe.n_ff_shared == 0) return;
    // The shared expert sees every token, unweighted: x += down_sh(silu(gate_sh h) * up_sh h).
    mi = prepare_inputs(in, 0, T, spec_.n_embd, {&w.gate_sh, &w.up_sh});
    s.mark("matmul");
    mi.matmul(s, w.gate_sh, scratch_.gate, 0, T);
    mi.matmul(s, w.up_sh, scratch_.up, 0, T);
    s.barrier("the shared expert's gate and up are complete before SwiGLU");
    s.mark("swiglu");
    ops::swiglu(s, scratch_.gate, scratch_.up, scratch_.gate, int64_t(T) * moe.n_ff_shared);
    s.barrier("the shared expert's activation is complete before its down projection");
    if (probes.ffn_down) {
        s.mark("copy");
        s.copy(scratch_.gate, 0, ffn_in_host_[size_t(l)], 0, uint64_t(T) * uint64_t(moe.n_ff_shared) * F);
    }
    add_block_output(w.down_sh, scratch_.gate, moe.n_ff_shared, nullptr, nullptr, T,
                     probes.ffn_down ? &ffn_out_host_[size_t(l)] : nullptr);
}

}  // namespace vkllm::model
