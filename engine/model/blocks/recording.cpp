#include "model/blocks/recording.h"

#include <algorithm>

#include "ops/ops.h"

namespace vkllm::model {
namespace {
constexpr uint64_t F = sizeof(float);
}

int Recording::keys_in_view(int slots) const {
    const int end = pos0 + n_tokens;
    const int rounded = (end + kv_bucket - 1) / kv_bucket * kv_bucket;
    return std::min(rounded, slots);
}

ops::KvView Recording::k_cache(int l) const {
    const AttentionSpec& a = spec.layers[size_t(l)].attn;
    const KvCache::Layer& c = kv.layer(l);
    return {&c.k, c.slots, int64_t(a.n_head_kv) * a.head_dim, kv.type()};
}

ops::KvView Recording::v_cache(int l) const {
    const AttentionSpec& a = spec.layers[size_t(l)].attn;
    const KvCache::Layer& c = kv.layer(l);
    return {&c.v, c.slots, int64_t(a.n_head_kv) * a.value_dim(), kv.type()};
}

MatmulInputs Recording::prepare_inputs(const gpu::Buffer& x, uint64_t offset, int rows, int n,
                                       std::initializer_list<const ops::Weight*> weights, RoundAt at) {
    MatmulInputs in;
    in.plain = &x;
    in.offset = offset;
    if (!policy.round) return in;
    bool any = false;
    for (const ops::Weight* wt : weights) {
        ops::ActRounding mode = ops::activation_rounding(wt->type);
        if (mode == ops::ActRounding::None || in.rounded[size_t(mode)] || in.in_matvec[size_t(mode)]) continue;
        // Rows that are not whole blocks cannot be quantised (llama.cpp then keeps F16 weights).
        if (n % ops::rounding_block(mode)) continue;
        if (!needs_rounding_dispatch(*wt, rows, n, at)) {
            in.in_matvec[size_t(mode)] = true;
            continue;
        }
        const gpu::Buffer& dst = scratch.rounded[size_t(mode)];
        s.mark("round_act");
        ops::round_activations(s, ops::f32_rows(x, rows, n, offset), ops::f32_rows(dst, rows, n), mode);
        in.rounded[size_t(mode)] = &dst;
        any = true;
    }
    if (any) s.barrier("rounded activations are complete before the matmuls read them");
    return in;
}

bool Recording::needs_rounding_dispatch(const ops::Weight& wt, int rows, int n, RoundAt at) const {
    const ops::ActRounding mode = ops::activation_rounding(wt.type);
    if (!policy.round || mode == ops::ActRounding::None || n % ops::rounding_block(mode)) return false;
    const bool matvec_rounds =
        policy.matvec_rounds_x && ((at == RoundAt::Matvec && rows == 1) || at == RoundAt::ExpertMatvec);
    return !(matvec_rounds && ops::matvec_rounds_activations(wt.type));
}

MatmulInputs Recording::normed_inputs(const gpu::Buffer& x, uint64_t x_offset, int rows, int n,
                                      const gpu::Buffer* norm_w, const gpu::Buffer* norm_b,
                                      std::initializer_list<const ops::Weight*> weights, const char* why,
                                      const gpu::Buffer& out) {
    bool fuse = policy.norm_in_matvec && rows == 1 && spec.norm == NormKind::RMSNorm && norm_w && !norm_b;
    for (const ops::Weight* wt : weights) fuse = fuse && !needs_rounding_dispatch(*wt, rows, n, RoundAt::Matvec);
    if (!fuse) {
        norm(x, x_offset, norm_w, norm_b, out, 0, rows, n);
        s.barrier(why);
        return prepare_inputs(out, 0, rows, n, weights);
    }
    MatmulInputs in = prepare_inputs(x, x_offset, rows, n, weights);  // records nothing (checked above)
    in.norm = ops::MatvecNorm{norm_w, 0, spec.norm_eps};
    return in;
}

void Recording::norm(const gpu::Buffer& x, uint64_t x_offset, const gpu::Buffer* nw, const gpu::Buffer* nb,
                     const gpu::Buffer& y, uint64_t y_offset, int rows, int n) {
    if (n == 0) n = spec.n_embd;
    s.mark("norm");
    const ops::TensorView in = ops::f32_rows(x, rows, n, x_offset), out = ops::f32_rows(y, rows, n, y_offset);
    if (spec.norm == NormKind::RMSNorm)
        ops::rms_norm(s, in, nw, out, spec.norm_eps);
    else
        ops::layer_norm(s, in, nw, nb, out, spec.norm_eps);
}

// Without a post-norm the add is fused into the matmul (accumulate).
void Recording::add_block_output(const ops::Weight& wt, const gpu::Buffer& in, int n_in, const gpu::Buffer* bias,
                                 const gpu::Buffer* post_norm, const gpu::Buffer* probe_out,
                                 const gpu::Buffer* post_norm_b, bool norm_after_add) {
    const int T = n_tokens;
    const gpu::Buffer& x = scratch.x;
    const gpu::Buffer& block_out = scratch.block_out;
    // A probed projection is computed apart and then added, so its output can be copied; so is
    // one that Granite's residual multiplier scales before the add.
    const bool scaled = spec.residual_scale != 1.0f;
    const bool apart = post_norm || probe_out || scaled;
    const gpu::Buffer& out = apart ? block_out : x;
    MatmulInputs mi = prepare_inputs(in, 0, T, n_in, {&wt});
    s.mark("matmul");
    mi.matmul(s, wt, out, 0, T, /*accumulate=*/!apart);
    s.barrier("the block's projection is complete before its bias, its post-norm or the next layer");
    if (bias) {
        s.mark("add_bias");
        ops::add_bias(s, ops::f32_rows(out, T, spec.n_embd), ops::f32_vector(*bias, spec.n_embd));
        s.barrier("the block's bias is added before its post-norm or the next layer");
    }
    if (!apart) return;
    if (post_norm && !norm_after_add) {
        norm(block_out, 0, post_norm, nullptr, block_out, 0, T);
        s.barrier("the post-normalised block output is complete before the probe copy and the residual add");
    }
    if (scaled) {
        s.mark("scale");
        ops::scale(s, ops::f32_rows(block_out, T, spec.n_embd), spec.residual_scale);
        s.barrier("the scaled block output is complete before the probe copy and the residual add");
    }
    if (probe_out) {
        // What the block adds to the residual stream (both only read block_out).
        s.mark("copy");
        s.copy(block_out, 0, *probe_out, 0, uint64_t(T) * uint64_t(spec.n_embd) * F);
    }
    s.mark("add");
    const ops::TensorView residual = ops::f32_rows(x, T, spec.n_embd);
    ops::add(s, residual, ops::f32_rows(block_out, T, spec.n_embd), residual);
    s.barrier("the residual stream is updated before the next block reads it");
    if (post_norm && norm_after_add) {
        norm(x, 0, post_norm, post_norm_b, x, 0, T);
        s.barrier("the normalised residual sum is complete before the next block reads it");
    }
}

void Recording::reset_flags(const gpu::Buffer& flags, int rows) {
    auto* f = static_cast<uint32_t*>(flags.mapped());
    for (int r = 0; r < rows; ++r) f[2 * r] = 0, f[2 * r + 1] = 0xffffffffu;
}

void Recording::read_back_checked(const ops::TensorView& src, const gpu::Buffer& dst, const gpu::Buffer& flags) {
    reset_flags(flags, int(src.rows));
    s.mark("copy_checked");
    ops::copy_checked(s, src, ops::f32_rows(dst, src.rows, src.cols), flags);
}

}  // namespace vkllm::model
