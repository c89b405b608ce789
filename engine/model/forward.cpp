#include "model/forward.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>

#include "gpu/device.h"
#include "ops/ops.h"

namespace vkllm::model {

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
    p.causal = a.causal;
    p.window = a.window;
    p.softcap = a.softcap;
    p.chunk = a.chunk;
    return p;
}

namespace {

constexpr size_t F = sizeof(float);

// Features of the spec this forward does not implement: refuse them up front rather than
// compute something wrong.
void check_supported(const ModelSpec& s) {
    for (const LayerSpec& L : s.layers) {
        if (L.ffn.gated && L.ffn.activation == Activation::GeluErf)
            throw ModelError("architecture '" + s.arch + "': GEGLU with exact GELU is not implemented yet");
        if (!L.ffn.gated && L.ffn.activation == Activation::SiLU)
            throw ModelError("architecture '" + s.arch + "': an ungated SiLU FFN is not implemented yet");
    }
}

int max_q_dim(const ModelSpec& s) {
    int m = 0;
    for (const auto& L : s.layers) m = std::max({m, L.attn.n_head * L.attn.head_dim, L.attn.n_head * L.attn.head_dim_v});
    return m;
}

int max_ff(const ModelSpec& s) {
    int m = 0;
    // A MoE layer's rows of all chosen experts per token: top_k * n_ff_expert.
    for (const auto& L : s.layers)
        m = std::max({m, L.ffn.n_ff, L.ffn.moe.top_k * L.ffn.moe.n_ff_expert, L.ffn.moe.n_ff_shared});
    return m;
}

}  // namespace

Forward::Forward(gpu::Context& ctx, const ModelSpec& spec, const Weights& weights, int n_ctx, int n_batch,
                 bool round_activations, KvCacheType kv_cache)
    : ctx_(ctx), spec_(spec), w_(weights), n_ctx_(n_ctx), n_batch_(std::max(1, std::min(n_batch, n_ctx))),
      round_activations_(round_activations), step_stream_(ctx), replay_stream_(ctx) {
    check_supported(spec);
    if (const char* v = std::getenv("VKLLM_MATVEC_ROUNDS_X"); v && std::string(v) == "0") matvec_rounds_x_ = false;
    // Decode's pre-norm inside the matvecs: on a GPU it saves a dispatch and a barrier per norm,
    // which decide small-model decode there; on a CPU driver (lavapipe) every workgroup's own
    // sum of x^2 costs more than they do (134M Q8_0 decode 30% slower), so it stays a dispatch.
    norm_in_matvec_ = ctx.caps().type != "cpu";
    if (const char* v = std::getenv("VKLLM_NORM_IN_MATVEC"); v && *v) {
        if (std::string(v) != "0" && std::string(v) != "1")
            throw ModelError(std::string("VKLLM_NORM_IN_MATVEC must be 0 or 1, got '") + v + "'");
        norm_in_matvec_ = std::string(v) == "1";
    }
    const ops::CacheType cache_type = KvCache::choose_type(ctx, spec, kv_cache);
    const uint64_t range = ctx.caps().max_storage_buffer_range;
    // Logits of many tokens are only needed by `vkllm logits`; keep that buffer within one binding.
    n_logit_rows_ = int(std::clamp<uint64_t>(range / (uint64_t(spec.n_vocab) * F), 1, uint64_t(n_batch_)));
    // Scratch activations must also fit one binding each; shrink the batch until they do.
    uint64_t widest = std::max<uint64_t>({uint64_t(spec.n_embd), uint64_t(max_q_dim(spec)), uint64_t(max_ff(spec))});
    n_batch_ = int(std::min<uint64_t>(uint64_t(n_batch_), std::max<uint64_t>(1, range / (widest * F))));

    if (spec.learned_positions && n_ctx > weights.position_embd.n_out)
        throw ModelError("a context of " + std::to_string(n_ctx) + " tokens exceeds the " +
                         std::to_string(weights.position_embd.n_out) + " learned positions of this model; use -c " +
                         std::to_string(weights.position_embd.n_out) + " or less");
    const uint64_t B = uint64_t(n_batch_);
    ids_ = gpu::Buffer(ctx, B * 4, gpu::Memory::Host);
    positions_ = gpu::Buffer(ctx, B * 4, gpu::Memory::Host);

    x_ = gpu::Buffer(ctx, B * uint64_t(spec.n_embd) * F, gpu::Memory::Device);
    h_ = gpu::Buffer(ctx, B * uint64_t(spec.n_embd) * F, gpu::Memory::Device);
    q_ = gpu::Buffer(ctx, B * uint64_t(max_q_dim(spec)) * F, gpu::Memory::Device);
    attn_ = gpu::Buffer(ctx, B * uint64_t(max_q_dim(spec)) * F, gpu::Memory::Device);
    block_out_ = gpu::Buffer(ctx, B * uint64_t(spec.n_embd) * F, gpu::Memory::Device);
    gate_ = gpu::Buffer(ctx, B * uint64_t(max_ff(spec)) * F, gpu::Memory::Device);
    up_ = gpu::Buffer(ctx, B * uint64_t(max_ff(spec)) * F, gpu::Memory::Device);
    if (round_activations_) {
        for (size_t m = 1; m < 5; ++m) rounded_[m] = gpu::Buffer(ctx, B * widest * F, gpu::Memory::Device);
    }
    logits_ = gpu::Buffer(ctx, uint64_t(n_logit_rows_) * uint64_t(spec.n_vocab) * F, gpu::Memory::Device);
    logits_host_ = gpu::Buffer(ctx, uint64_t(n_logit_rows_) * uint64_t(spec.n_vocab) * F, gpu::Memory::Host);
    logits_flags_ = gpu::Buffer(ctx, uint64_t(n_logit_rows_) * 8, gpu::Memory::Host);

    // Decode attention splits the keys over workgroups when given scratch for partial results.
    uint64_t scratch = 0;
    for (const LayerSpec& L : spec.layers) scratch = std::max(scratch, ops::attention_scratch_bytes(ctx, 1, n_ctx, attention_params(L.attn)));
    if (scratch) attn_scratch_ = gpu::Buffer(ctx, std::min(scratch, range), gpu::Memory::Device);

    kv_ = KvCache(ctx, spec, n_ctx, n_batch_, cache_type);
    uint64_t widest_k = 0, widest_v = 0;
    for (const LayerSpec& L : spec.layers) {
        widest_k = std::max(widest_k, uint64_t(L.attn.n_head_kv) * uint64_t(L.attn.head_dim) * F);
        widest_v = std::max(widest_v, uint64_t(L.attn.n_head_kv) * uint64_t(L.attn.head_dim_v) * F);
    }
    int n_expert = 0, top_k = 0, n_ff_expert = 0;
    for (const LayerSpec& L : spec.layers) {
        n_expert = std::max(n_expert, L.ffn.moe.n_expert);
        top_k = std::max(top_k, L.ffn.moe.top_k);
        n_ff_expert = std::max(n_ff_expert, L.ffn.moe.n_ff_expert);
        expert_load_.emplace_back();
        if (L.ffn.moe.n_expert > 0)
            expert_load_.back() = gpu::Buffer(ctx, uint64_t(L.ffn.moe.n_expert) * 2 * F, gpu::Memory::Host);
    }
    if (n_expert > 0) {
        const uint64_t pairs = B * uint64_t(top_k);
        router_logits_ = gpu::Buffer(ctx, B * uint64_t(n_expert) * F, gpu::Memory::Device);
        moe_experts_ = gpu::Buffer(ctx, pairs * 4, gpu::Memory::Device);
        moe_weights_ = gpu::Buffer(ctx, pairs * F, gpu::Memory::Device);
        moe_sorted_ = gpu::Buffer(ctx, ops::moe_sort_ints(n_expert, int64_t(pairs)) * 4, gpu::Memory::Device);
        moe_gate_ = gpu::Buffer(ctx, pairs * uint64_t(n_ff_expert) * F, gpu::Memory::Device);
        moe_up_ = gpu::Buffer(ctx, pairs * uint64_t(n_ff_expert) * F, gpu::Memory::Device);
        moe_down_ = gpu::Buffer(ctx, pairs * uint64_t(spec.n_embd) * F, gpu::Memory::Device);
        moe_input_ = gpu::Buffer(ctx, pairs * uint64_t(spec.n_embd) * F, gpu::Memory::Device);
        std::vector<float> ones(pairs, 1.0f);
        moe_ones_ = gpu::Buffer(ctx, pairs * F, gpu::Memory::Device);
        moe_ones_.upload(ones.data(), pairs * F);
    }
    for (const LayerSpec& L : spec.layers) {
        const MlaSpec& mla = L.attn.mla;
        if (mla.kv_lora_rank == 0 || mla_q_.valid()) continue;
        const uint64_t heads = B * uint64_t(L.attn.n_head);
        mla_qa_ = gpu::Buffer(ctx, B * uint64_t(std::max(mla.q_lora_rank, 1)) * F, gpu::Memory::Device);
        // Slack after the last head: RoPE's window for the rotated part runs `nope` past it.
        mla_q_ = gpu::Buffer(ctx, (heads * uint64_t(mla.qk_nope + mla.qk_rope) + uint64_t(mla.qk_nope)) * F,
                             gpu::Memory::Device);
        mla_qn_ = gpu::Buffer(ctx, heads * uint64_t(mla.qk_nope) * F, gpu::Memory::Device);
        mla_qabs_ = gpu::Buffer(ctx, heads * uint64_t(mla.kv_lora_rank) * F, gpu::Memory::Device);
        mla_out_ = gpu::Buffer(ctx, heads * uint64_t(mla.v_head) * F, gpu::Memory::Device);
        std::vector<int32_t> ids(heads);
        for (uint64_t p = 0; p < heads; ++p) ids[p] = int32_t(p % uint64_t(L.attn.n_head));
        head_ids_ = gpu::Buffer(ctx, heads * 4, gpu::Memory::Device);
        head_ids_.upload(ids.data(), heads * 4);
    }
    k_new_ = gpu::Buffer(ctx, B * widest_k, gpu::Memory::Device);
    v_new_ = gpu::Buffer(ctx, B * widest_v, gpu::Memory::Device);
}

const gpu::Buffer& Forward::MatmulInputs::of(const ops::Weight& w) const {
    const gpu::Buffer* r = rounded[size_t(ops::activation_rounding(w.type))];
    return r ? *r : *plain;
}

uint64_t Forward::MatmulInputs::offset_of(const ops::Weight& w) const {
    return rounded[size_t(ops::activation_rounding(w.type))] ? 0 : offset;
}

void Forward::MatmulInputs::matmul(gpu::Stream& s, const ops::Weight& w, const gpu::Buffer& y, uint64_t y_offset,
                                   int n_tokens, bool accumulate) const {
    ops::matmul(s, w, of(w), offset_of(w), y, y_offset, n_tokens, accumulate, 0,
                in_matvec[size_t(ops::activation_rounding(w.type))], norm.weight ? &norm : nullptr);
}

void Forward::MatmulInputs::matvec_swiglu(gpu::Stream& s, const ops::Weight& gate, const ops::Weight& up,
                                          const gpu::Buffer& y, ops::GluActivation act) const {
    ops::matvec_swiglu(s, gate, up, of(gate), offset_of(gate), y, 0, rounds_in_matvec(gate.type), act,
                       norm.weight ? &norm : nullptr);
}

bool Forward::MatmulInputs::rounds_in_matvec(ops::TensorType weight_type) const {
    return in_matvec[size_t(ops::activation_rounding(weight_type))];
}

Forward::MatmulInputs Forward::prepare_inputs(const gpu::Buffer& x, uint64_t offset, int rows, int n,
                                              std::initializer_list<const ops::Weight*> weights, RoundAt at) {
    MatmulInputs in;
    in.plain = &x;
    in.offset = offset;
    if (!round_activations_) return in;
    bool any = false;
    for (const ops::Weight* w : weights) {
        ops::ActRounding mode = ops::activation_rounding(w->type);
        if (mode == ops::ActRounding::None || in.rounded[size_t(mode)] || in.in_matvec[size_t(mode)]) continue;
        // Rows that are not whole blocks cannot be quantised (llama.cpp then keeps F16 weights).
        if (n % ops::rounding_block(mode)) continue;
        if (!needs_rounding_dispatch(*w, rows, n, at)) {
            in.in_matvec[size_t(mode)] = true;
            continue;
        }
        const gpu::Buffer& dst = rounded_[size_t(mode)];
        stream_->mark("round_act");
        ops::round_activations(*stream_, x, offset, dst, 0, rows, n, mode);
        in.rounded[size_t(mode)] = &dst;
        any = true;
    }
    if (any) stream_->barrier("rounded activations are complete before the matmuls read them");
    return in;
}

bool Forward::needs_rounding_dispatch(const ops::Weight& w, int rows, int n, RoundAt at) const {
    const ops::ActRounding mode = ops::activation_rounding(w.type);
    if (!round_activations_ || mode == ops::ActRounding::None || n % ops::rounding_block(mode)) return false;
    const bool matvec_rounds =
        matvec_rounds_x_ && ((at == RoundAt::Matvec && rows == 1) || at == RoundAt::ExpertMatvec);
    return !(matvec_rounds && ops::matvec_rounds_activations(w.type));
}

Forward::MatmulInputs Forward::normed_inputs(const gpu::Buffer& x, uint64_t x_offset, int rows, int n,
                                             const gpu::Buffer* norm_w, const gpu::Buffer* norm_b,
                                             std::initializer_list<const ops::Weight*> weights, const char* why,
                                             const gpu::Buffer& out) {
    bool fuse = norm_in_matvec_ && rows == 1 && spec_.norm == NormKind::RMSNorm && norm_w && !norm_b;
    for (const ops::Weight* w : weights) fuse = fuse && !needs_rounding_dispatch(*w, rows, n, RoundAt::Matvec);
    if (!fuse) {
        norm(x, x_offset, norm_w, norm_b, out, 0, rows, n);
        stream_->barrier(why);
        return prepare_inputs(out, 0, rows, n, weights);
    }
    MatmulInputs in = prepare_inputs(x, x_offset, rows, n, weights);  // records nothing (checked above)
    in.norm = ops::MatvecNorm{norm_w, 0, spec_.norm_eps};
    return in;
}

void Forward::reset_flags(const gpu::Buffer& flags, int rows) {
    auto* f = static_cast<uint32_t*>(flags.mapped());
    for (int r = 0; r < rows; ++r) f[2 * r] = 0, f[2 * r + 1] = 0xffffffffu;
}

void Forward::read_back_checked(const gpu::Buffer& src, uint64_t src_offset, const gpu::Buffer& dst, int rows, int n,
                                const gpu::Buffer& flags) {
    reset_flags(flags, rows);
    stream_->mark("copy_checked");
    ops::copy_checked(*stream_, src, src_offset, dst, 0, rows, n, flags);
}

Forward::NonFinite Forward::logits_nonfinite(int row) const {
    if (row < 0 || row >= n_logit_rows_) throw std::logic_error("Forward::logits_nonfinite: bad row");
    const auto* f = static_cast<const uint32_t*>(logits_flags_.mapped());
    return {f[2 * row], f[2 * row + 1]};
}

Forward::NonFinite Forward::embeddings_nonfinite(int row) const {
    if (row < 0 || row >= n_batch_ || !embd_flags_.valid()) throw std::logic_error("Forward::embeddings_nonfinite: bad row");
    const auto* f = static_cast<const uint32_t*>(embd_flags_.mapped());
    return {f[2 * row], f[2 * row + 1]};
}

int Forward::keys_in_view(int cache_slots, int end) const {
    const int rounded = (end + kv_bucket_ - 1) / kv_bucket_ * kv_bucket_;
    return std::min(rounded, cache_slots);
}

bool Forward::replayable(int n_tokens, bool all_logits, const ProbeConfig& probes) const {
    if (!replay_ || n_tokens != 1 || all_logits || probes.any() || !edits_.empty()) return false;
    // Llama 4's NoPE layers scale q by a factor of the position, recorded as a constant.
    for (const LayerSpec& L : spec_.layers)
        if (L.attn.temperature_floor > 0) return false;
    return true;
}

void Forward::write_step_inputs(const int32_t* ids, int T, int pos0) {
    std::memcpy(ids_.mapped(), ids, size_t(T) * 4);
    auto* pos = static_cast<int32_t*>(positions_.mapped());
    for (int i = 0; i < T; ++i) pos[i] = pos0 + i;
    if (pos0 == 0) reset_edit_state();
    kv_.begin_pass(pos0, T);
}

void Forward::record_step(int T, int pos0, bool all_logits, const ProbeConfig& probes) {
    gpu::Stream& s = *stream_;
    record_embeddings(T);
    record_after_layer(-1, T, probes);

    for (int l = 0; l < spec_.n_layer; ++l) record_layer(l, T, pos0, probes);
    s.set_layer(-1);
    record_logit_lens();

    // Final norm and the vocabulary projection, for every token or only the last.
    const int rows = all_logits ? T : 1;
    const uint64_t first = all_logits ? 0 : uint64_t(T - 1) * uint64_t(spec_.n_embd);
    // Without a final norm (BERT) the projection reads the residual stream itself.
    MatmulInputs in = spec_.final_norm
                          ? normed_inputs(x_, first, rows, spec_.n_embd, w_.output_norm, w_.output_norm_b, {&w_.output},
                                          "the final norm is complete before the output projection reads it", h_)
                          : prepare_inputs(x_, first, rows, spec_.n_embd, {&w_.output});
    s.mark("matmul");
    in.matmul(s, w_.output, logits_, 0, rows);
    if (spec_.final_softcap > 0) {
        s.barrier("logits are complete before soft-capping");
        s.mark("softcap");
        ops::softcap(s, logits_, int64_t(rows) * spec_.n_vocab, spec_.final_softcap);
    }
    s.barrier("logits are complete before the checked copy to host memory");
    read_back_checked(logits_, 0, logits_host_, rows, spec_.n_vocab, logits_flags_);
}

void Forward::step(const int32_t* ids, int n_tokens, int pos0, bool all_logits, float* logits,
                   const ProbeConfig& probes, ProbeResults* results, bool first_pass) {
    if (n_tokens <= 0 || n_tokens > max_tokens(all_logits) || pos0 < 0 || pos0 + n_tokens > n_ctx_)
        throw std::logic_error("Forward::step: bad token range");
    alloc_probe_buffers(probes);
    const int T = n_tokens;
    write_step_inputs(ids, T, pos0);
    attn_rows_ = std::min(T, attn_rows_cap_);
    const int rows = all_logits ? T : 1;

    if (replayable(T, all_logits, probes)) {
        // Same recording for every position whose keys in view round to the same count.
        const int key = std::min((pos0 + 1 + kReplayKeys - 1) / kReplayKeys * kReplayKeys, n_ctx_);
        stream_ = &replay_stream_;
        if (key == replay_key_) {
            reset_flags(logits_flags_, rows);
            replay_stream_.resubmit_and_wait();
            ++replayed_steps_;
        } else {
            replay_key_ = -1;  // a failed recording leaves no stale key behind
            replay_stream_.set_profiling(false);
            replay_stream_.begin(/*reusable=*/true);
            kv_bucket_ = kReplayKeys;
            try {
                record_step(T, pos0, all_logits, probes);
            } catch (...) {
                kv_bucket_ = 1;
                throw;
            }
            kv_bucket_ = 1;
            replay_stream_.submit_and_wait();
            replay_key_ = key;
        }
    } else {
        stream_ = &step_stream_;
        step_stream_.set_profiling(probes.timings);
        step_stream_.begin();
        record_step(T, pos0, all_logits, probes);
        step_stream_.submit_and_wait();
    }

    std::memcpy(logits, logits_host_.mapped(), size_t(rows) * size_t(spec_.n_vocab) * F);
    if (results) read_probes(T, pos0, probes, results, first_pass);
}

}  // namespace vkllm::model
