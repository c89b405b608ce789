#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "gpu/device.h"
#include "ops/ops.h"

namespace vkllm::model {
namespace {

constexpr size_t F = sizeof(float);

// Features of the spec this forward does not implement yet: refuse them up front rather than
// compute something wrong.
void check_supported(const ModelSpec& s) {
    auto refuse = [&](const std::string& what) {
        throw ModelError("architecture '" + s.arch + "': " + what + " is not implemented in the forward pass yet");
    };
    if (s.norm != NormKind::RMSNorm) refuse("LayerNorm");
    if (s.learned_positions) refuse("learned position embeddings");
    if (s.embd_scale != 1.0f) refuse("embedding scaling");
    if (s.final_softcap > 0) refuse("final-logit soft-capping");
    for (const LayerSpec& L : s.layers) {
        if (L.norm_placement != NormPlacement::Pre) refuse("post/sandwich norms");
        if (!L.ffn.gated || L.ffn.activation != Activation::SiLU || L.ffn.bias || L.ffn.fused_gate_up)
            refuse("this FFN kind");
        if (L.attn.qk_norm || L.attn.bias_qkv || L.attn.bias_o || L.attn.fused_qkv) refuse("this attention kind");
        if (L.attn.softcap > 0) refuse("attention soft-capping");
        if (L.attn.head_dim_v != L.attn.head_dim) refuse("different key and value head sizes");
    }
}

ops::RopeParams rope_params(const RopeSpec& r) {
    ops::RopeParams p;
    p.n_dims = r.n_dims;
    p.neox = r.neox;
    p.freq_base = r.freq_base;
    p.freq_scale = (r.scaling == RopeScaling::Linear || r.scaling == RopeScaling::Yarn) ? 1.0f / r.factor : 1.0f;
    p.ext_factor = r.ext_factor;
    p.attn_factor = r.attn_factor;
    p.beta_fast = r.beta_fast;
    p.beta_slow = r.beta_slow;
    p.n_ctx_orig = r.n_ctx_orig;
    return p;
}

ops::AttentionParams attention_params(const AttentionSpec& a) {
    ops::AttentionParams p;
    p.n_head = a.n_head;
    p.n_head_kv = a.n_head_kv;
    p.head_dim = a.head_dim;
    p.head_dim_v = a.head_dim_v;
    p.scale = a.scale;
    p.causal = true;
    p.window = a.window;
    p.softcap = a.softcap;
    return p;
}

int max_q_dim(const ModelSpec& s) {
    int m = 0;
    for (const auto& L : s.layers) m = std::max({m, L.attn.n_head * L.attn.head_dim, L.attn.n_head * L.attn.head_dim_v});
    return m;
}

int max_ff(const ModelSpec& s) {
    int m = 0;
    for (const auto& L : s.layers) m = std::max(m, L.ffn.n_ff);
    return m;
}

}  // namespace

Forward::Forward(gpu::Context& ctx, const ModelSpec& spec, const Weights& weights, int n_ctx, int n_batch,
                 bool round_activations)
    : ctx_(ctx), spec_(spec), w_(weights), n_ctx_(n_ctx), n_batch_(std::max(1, std::min(n_batch, n_ctx))),
      round_activations_(round_activations), stream_(ctx) {
    check_supported(spec);
    const uint64_t range = ctx.caps().max_storage_buffer_range;
    // Logits of many tokens are only needed by `vkllm logits`; keep that buffer within one binding.
    n_logit_rows_ = int(std::clamp<uint64_t>(range / (uint64_t(spec.n_vocab) * F), 1, uint64_t(n_batch_)));
    // Scratch activations must also fit one binding each; shrink the batch until they do.
    uint64_t widest = std::max<uint64_t>({uint64_t(spec.n_embd), uint64_t(max_q_dim(spec)), uint64_t(max_ff(spec))});
    n_batch_ = int(std::min<uint64_t>(uint64_t(n_batch_), std::max<uint64_t>(1, range / (widest * F))));

    const uint64_t B = uint64_t(n_batch_);
    ids_ = gpu::Buffer(ctx, B * 4, gpu::Memory::Host);
    positions_ = gpu::Buffer(ctx, B * 4, gpu::Memory::Host);
    kv_pos_ = gpu::Buffer(ctx, uint64_t(n_ctx) * 4, gpu::Memory::Host);
    // A global cache holds position i in slot i; slots not yet written are never attended to
    // because attention only reads the first n_kv = pos0 + n_tokens slots.
    auto* slot_pos = static_cast<int32_t*>(kv_pos_.mapped());
    for (int i = 0; i < n_ctx; ++i) slot_pos[i] = i;

    x_ = gpu::Buffer(ctx, B * uint64_t(spec.n_embd) * F, gpu::Memory::Device);
    h_ = gpu::Buffer(ctx, B * uint64_t(spec.n_embd) * F, gpu::Memory::Device);
    q_ = gpu::Buffer(ctx, B * uint64_t(max_q_dim(spec)) * F, gpu::Memory::Device);
    attn_ = gpu::Buffer(ctx, B * uint64_t(max_q_dim(spec)) * F, gpu::Memory::Device);
    gate_ = gpu::Buffer(ctx, B * uint64_t(max_ff(spec)) * F, gpu::Memory::Device);
    up_ = gpu::Buffer(ctx, B * uint64_t(max_ff(spec)) * F, gpu::Memory::Device);
    if (round_activations_) {
        for (size_t m = 1; m < 5; ++m) rounded_[m] = gpu::Buffer(ctx, B * widest * F, gpu::Memory::Device);
    }
    logits_ = gpu::Buffer(ctx, uint64_t(n_logit_rows_) * uint64_t(spec.n_vocab) * F, gpu::Memory::Device);
    logits_host_ = gpu::Buffer(ctx, uint64_t(n_logit_rows_) * uint64_t(spec.n_vocab) * F, gpu::Memory::Host);

    // Decode attention splits the keys over workgroups when given scratch for partial results.
    uint64_t scratch = 0;
    for (const LayerSpec& L : spec.layers) scratch = std::max(scratch, ops::attention_scratch_bytes(ctx, 1, n_ctx, attention_params(L.attn)));
    if (scratch) attn_scratch_ = gpu::Buffer(ctx, std::min(scratch, range), gpu::Memory::Device);

    for (const LayerSpec& L : spec.layers) {
        uint64_t k_row = uint64_t(L.attn.n_head_kv) * uint64_t(L.attn.head_dim) * F;
        uint64_t v_row = uint64_t(L.attn.n_head_kv) * uint64_t(L.attn.head_dim_v) * F;
        if (uint64_t(n_ctx) * std::max(k_row, v_row) > range)
            throw ModelError("a KV cache of " + std::to_string(n_ctx) + " tokens exceeds the device's largest binding (" +
                             std::to_string(range >> 20) + " MiB per layer); use a smaller context (-c)");
        k_cache_.emplace_back(ctx, uint64_t(n_ctx) * k_row, gpu::Memory::Device);
        v_cache_.emplace_back(ctx, uint64_t(n_ctx) * v_row, gpu::Memory::Device);
        kv_bytes_ += uint64_t(n_ctx) * (k_row + v_row);
    }
}

void Forward::alloc_probe_buffers(const ProbeConfig& probes) {
    if (probes.attention_layers != probed_layers_) {
        probs_.clear();
        probs_host_.clear();
        probed_layers_ = probes.attention_layers;
        for (int l : probed_layers_) {
            if (l < 0 || l >= spec_.n_layer)
                throw std::invalid_argument("attention probe layer " + std::to_string(l) + " is outside 0.." +
                                            std::to_string(spec_.n_layer - 1));
            uint64_t heads = uint64_t(spec_.layers[size_t(l)].attn.n_head);
            probs_.emplace_back(ctx_, uint64_t(n_batch_) * heads * uint64_t(n_ctx_) * F, gpu::Memory::Device);
            probs_host_.emplace_back(ctx_, heads * uint64_t(n_ctx_) * F, gpu::Memory::Host);
        }
    }
    if (probes.residual_stats && !residual_host_.valid())
        residual_host_ = gpu::Buffer(ctx_, uint64_t(spec_.n_layer + 1) * uint64_t(n_batch_) * uint64_t(spec_.n_embd) * F,
                                     gpu::Memory::Host);
}

const gpu::Buffer& Forward::MatmulInputs::of(const ops::Weight& w) const {
    const gpu::Buffer* r = rounded[size_t(ops::activation_rounding(w.type))];
    return r ? *r : *plain;
}

uint64_t Forward::MatmulInputs::offset_of(const ops::Weight& w) const {
    return rounded[size_t(ops::activation_rounding(w.type))] ? 0 : offset;
}

Forward::MatmulInputs Forward::prepare_inputs(const gpu::Buffer& x, uint64_t offset, int rows, int n,
                                              std::initializer_list<const ops::Weight*> weights) {
    MatmulInputs in;
    in.plain = &x;
    in.offset = offset;
    if (!round_activations_) return in;
    bool any = false;
    for (const ops::Weight* w : weights) {
        ops::ActRounding mode = ops::activation_rounding(w->type);
        if (mode == ops::ActRounding::None || in.rounded[size_t(mode)]) continue;
        // Rows that are not whole blocks cannot be quantised (llama.cpp then keeps F16 weights).
        if (n % ops::rounding_block(mode)) continue;
        const gpu::Buffer& dst = rounded_[size_t(mode)];
        stream_.mark("round_act");
        ops::round_activations(stream_, x, offset, dst, 0, rows, n, mode);
        in.rounded[size_t(mode)] = &dst;
        any = true;
    }
    if (any) stream_.barrier("rounded activations are complete before the matmuls read them");
    return in;
}

void Forward::record_layer(int l, int n_tokens, int pos0, const ProbeConfig& probes) {
    const LayerSpec& L = spec_.layers[size_t(l)];
    const AttentionSpec& a = L.attn;
    const LayerWeights& w = w_.layers[size_t(l)];
    gpu::Stream& s = stream_;
    const int T = n_tokens;
    const uint64_t kv_row = uint64_t(a.n_head_kv) * uint64_t(a.head_dim);
    const uint64_t kv_row_v = uint64_t(a.n_head_kv) * uint64_t(a.head_dim_v);

    // --- attention block: x += Wo * attention(rope(Wq h), rope(Wk h), Wv h), h = norm(x)
    s.mark("rms_norm");
    ops::rms_norm(s, x_, 0, w.attn_norm, h_, 0, T, spec_.n_embd, spec_.norm_eps);
    s.barrier("normalised h is read by the q/k/v projections");
    MatmulInputs in = prepare_inputs(h_, 0, T, spec_.n_embd, {&w.wq, &w.wk, &w.wv});
    s.mark("matmul");
    ops::matmul(s, w.wq, in.of(w.wq), in.offset_of(w.wq), q_, 0, T);
    // K and V go straight into their cache slots pos0..pos0+T-1.
    ops::matmul(s, w.wk, in.of(w.wk), in.offset_of(w.wk), k_cache_[size_t(l)], uint64_t(pos0) * kv_row, T);
    ops::matmul(s, w.wv, in.of(w.wv), in.offset_of(w.wv), v_cache_[size_t(l)], uint64_t(pos0) * kv_row_v, T);
    s.barrier("q and the new k/v rows are complete before rope and attention read them");
    if (a.rope.enabled) {
        s.mark("rope");
        ops::RopeParams rp = rope_params(a.rope);
        const gpu::Buffer* freqs = a.rope.freq_factors ? w_.rope_freqs : nullptr;
        ops::rope(s, q_, 0, positions_, T, a.n_head, a.head_dim, rp, freqs);
        ops::rope(s, k_cache_[size_t(l)], uint64_t(pos0) * kv_row, positions_, T, a.n_head_kv, a.head_dim, rp, freqs);
        s.barrier("rotated q and k are complete before attention reads them");
    }
    const ops::AttentionParams ap = attention_params(a);
    auto probed = std::find(probed_layers_.begin(), probed_layers_.end(), l);
    const gpu::Buffer* probs = probed != probed_layers_.end() ? &probs_[size_t(probed - probed_layers_.begin())] : nullptr;
    const int n_kv = pos0 + T;
    s.mark("attention");
    ops::attention(s, q_, 0, positions_, k_cache_[size_t(l)], v_cache_[size_t(l)], kv_pos_, attn_, T, n_kv, ap,
                   nullptr, probs, attn_scratch_.valid() ? &attn_scratch_ : nullptr);
    s.barrier("attention output is complete before the output projection reads it");
    if (probs) {
        // The newest token's probabilities: the last of T rows of [n_head, n_kv].
        uint64_t row = uint64_t(a.n_head) * uint64_t(n_kv) * F;
        s.copy(*probs, uint64_t(T - 1) * row, probs_host_[size_t(probed - probed_layers_.begin())], 0, row);
    }
    in = prepare_inputs(attn_, 0, T, a.n_head * a.head_dim_v, {&w.wo});
    s.mark("matmul");
    ops::matmul(s, w.wo, in.of(w.wo), in.offset_of(w.wo), x_, 0, T, /*accumulate=*/true);
    s.barrier("the residual stream is updated before the FFN norm reads it");

    // --- FFN block: x += W_down (silu(W_gate h) * W_up h), h = norm(x)
    s.mark("rms_norm");
    ops::rms_norm(s, x_, 0, w.ffn_norm, h_, 0, T, spec_.n_embd, spec_.norm_eps);
    s.barrier("normalised h is read by the gate and up projections");
    in = prepare_inputs(h_, 0, T, spec_.n_embd, {&w.gate, &w.up});
    s.mark("matmul");
    ops::matmul(s, w.gate, in.of(w.gate), in.offset_of(w.gate), gate_, 0, T);
    ops::matmul(s, w.up, in.of(w.up), in.offset_of(w.up), up_, 0, T);
    s.barrier("gate and up are complete before SwiGLU combines them");
    s.mark("swiglu");
    ops::swiglu(s, gate_, up_, gate_, int64_t(T) * L.ffn.n_ff);
    s.barrier("the SwiGLU product is complete before the down projection reads it");
    in = prepare_inputs(gate_, 0, T, L.ffn.n_ff, {&w.down});
    s.mark("matmul");
    ops::matmul(s, w.down, in.of(w.down), in.offset_of(w.down), x_, 0, T, /*accumulate=*/true);
    s.barrier("the residual stream is complete before the next layer (or a probe copy) reads it");
    if (probes.residual_stats) {
        uint64_t bytes = uint64_t(T) * uint64_t(spec_.n_embd) * F;
        s.copy(x_, 0, residual_host_, uint64_t(l + 1) * uint64_t(n_batch_) * uint64_t(spec_.n_embd) * F, bytes);
    }
}

void Forward::step(const int32_t* ids, int n_tokens, int pos0, bool all_logits, float* logits,
                   const ProbeConfig& probes, ProbeResults* results) {
    if (n_tokens <= 0 || n_tokens > max_tokens(all_logits) || pos0 < 0 || pos0 + n_tokens > n_ctx_)
        throw std::logic_error("Forward::step: bad token range");
    alloc_probe_buffers(probes);
    const int T = n_tokens;
    std::memcpy(ids_.mapped(), ids, size_t(T) * 4);
    auto* pos = static_cast<int32_t*>(positions_.mapped());
    for (int i = 0; i < T; ++i) pos[i] = pos0 + i;

    gpu::Stream& s = stream_;
    s.set_profiling(probes.timings);
    s.begin();
    s.mark("get_rows");
    ops::get_rows(s, w_.token_embd, ids_, x_, T);
    s.barrier("embeddings are in the residual stream before layer 0 reads them");
    if (probes.residual_stats) s.copy(x_, 0, residual_host_, 0, uint64_t(T) * uint64_t(spec_.n_embd) * F);

    for (int l = 0; l < spec_.n_layer; ++l) record_layer(l, T, pos0, probes);

    // Final norm and the vocabulary projection, for every token or only the last.
    const int rows = all_logits ? T : 1;
    const uint64_t first = all_logits ? 0 : uint64_t(T - 1) * uint64_t(spec_.n_embd);
    s.mark("rms_norm");
    ops::rms_norm(s, x_, first, w_.output_norm, h_, 0, rows, spec_.n_embd, spec_.norm_eps);
    s.barrier("the final norm is complete before the output projection reads it");
    MatmulInputs in = prepare_inputs(h_, 0, rows, spec_.n_embd, {&w_.output});
    s.mark("matmul");
    ops::matmul(s, w_.output, in.of(w_.output), in.offset_of(w_.output), logits_, 0, rows);
    s.barrier("logits are complete before the copy to host memory");
    s.mark("copy");
    s.copy(logits_, 0, logits_host_, 0, uint64_t(rows) * uint64_t(spec_.n_vocab) * F);
    s.submit_and_wait();

    std::memcpy(logits, logits_host_.mapped(), size_t(rows) * size_t(spec_.n_vocab) * F);
    if (results) read_probes(T, pos0, probes, results);
}

void Forward::read_probes(int n_tokens, int pos0, const ProbeConfig& probes, ProbeResults* results) {
    if (probes.timings) {
        std::map<std::string, OpTiming> by_op;
        for (const auto& [label, ms] : stream_.timings()) {
            OpTiming& t = by_op[label];
            t.op = label;
            t.ms += ms;
            t.count += 1;
        }
        for (auto& [name, t] : by_op) {
            auto it = std::find_if(results->timings.begin(), results->timings.end(),
                                   [&](const OpTiming& o) { return o.op == name; });
            if (it == results->timings.end()) results->timings.push_back(t);
            else {
                it->ms += t.ms;
                it->count += t.count;
            }
        }
    }
    results->attention.clear();
    const int n_kv = pos0 + n_tokens;
    for (size_t i = 0; i < probed_layers_.size(); ++i) {
        AttentionProbe p;
        p.layer = probed_layers_[i];
        p.n_head = spec_.layers[size_t(p.layer)].attn.n_head;
        p.n_kv = n_kv;
        for (int k = 0; k < n_kv; ++k) p.key_pos.push_back(k);
        const float* src = static_cast<const float*>(probs_host_[i].mapped());
        p.probs.assign(src, src + size_t(p.n_head) * size_t(n_kv));
        results->attention.push_back(std::move(p));
    }
    results->residual.clear();
    if (probes.residual_stats) {
        const size_t n = size_t(n_tokens) * size_t(spec_.n_embd);
        std::vector<float> mags(n);
        for (int l = -1; l < spec_.n_layer; ++l) {
            const float* x = static_cast<const float*>(residual_host_.mapped()) +
                             size_t(l + 1) * size_t(n_batch_) * size_t(spec_.n_embd);
            ResidualStat st;
            st.layer = l;
            size_t best = 0;
            for (size_t i = 0; i < n; ++i) {
                mags[i] = std::fabs(x[i]);
                if (mags[i] > mags[best]) best = i;
            }
            st.max_abs = mags[best];
            st.token = pos0 + int(best / size_t(spec_.n_embd));
            st.channel = int(best % size_t(spec_.n_embd));
            std::nth_element(mags.begin(), mags.begin() + long(n / 2), mags.end());
            st.median_abs = mags[n / 2];
            results->residual.push_back(st);
        }
    }
}

}  // namespace vkllm::model
