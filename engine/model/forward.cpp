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
    n_logit_rows_ = Scratch::logit_rows(ctx, spec, n_batch_);
    n_batch_ = Scratch::fit_batch(ctx, spec, n_batch_);

    if (spec.learned_positions && n_ctx > weights.position_embd.n_out)
        throw ModelError("a context of " + std::to_string(n_ctx) + " tokens exceeds the " +
                         std::to_string(weights.position_embd.n_out) + " learned positions of this model; use -c " +
                         std::to_string(weights.position_embd.n_out) + " or less");
    kv_ = KvCache(ctx, spec, n_ctx, n_batch_, cache_type);
    scratch_ = Scratch(ctx, spec, n_ctx, n_batch_, n_logit_rows_, round_activations_);
    for (const LayerSpec& L : spec.layers) {
        expert_load_.emplace_back();
        if (L.ffn.moe.n_expert > 0)
            expert_load_.back() = gpu::Buffer(ctx, uint64_t(L.ffn.moe.n_expert) * 2 * F, gpu::Memory::Host);
    }
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
        const gpu::Buffer& dst = scratch_.rounded[size_t(mode)];
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
    const auto* f = static_cast<const uint32_t*>(scratch_.logits_flags.mapped());
    return {f[2 * row], f[2 * row + 1]};
}

Forward::NonFinite Forward::embeddings_nonfinite(int row) const {
    if (row < 0 || row >= n_batch_ || !scratch_.embd_flags.valid()) throw std::logic_error("Forward::embeddings_nonfinite: bad row");
    const auto* f = static_cast<const uint32_t*>(scratch_.embd_flags.mapped());
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
    std::memcpy(scratch_.ids.mapped(), ids, size_t(T) * 4);
    auto* pos = static_cast<int32_t*>(scratch_.positions.mapped());
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
                          ? normed_inputs(scratch_.x, first, rows, spec_.n_embd, w_.output_norm, w_.output_norm_b, {&w_.output},
                                          "the final norm is complete before the output projection reads it", scratch_.h)
                          : prepare_inputs(scratch_.x, first, rows, spec_.n_embd, {&w_.output});
    s.mark("matmul");
    in.matmul(s, w_.output, scratch_.logits, 0, rows);
    if (spec_.final_softcap > 0) {
        s.barrier("logits are complete before soft-capping");
        s.mark("softcap");
        ops::softcap(s, scratch_.logits, int64_t(rows) * spec_.n_vocab, spec_.final_softcap);
    }
    s.barrier("logits are complete before the checked copy to host memory");
    read_back_checked(scratch_.logits, 0, scratch_.logits_host, rows, spec_.n_vocab, scratch_.logits_flags);
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
            reset_flags(scratch_.logits_flags, rows);
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

    std::memcpy(logits, scratch_.logits_host.mapped(), size_t(rows) * size_t(spec_.n_vocab) * F);
    if (results) read_probes(T, pos0, probes, results, first_pass);
}

}  // namespace vkllm::model
