#include "model/blocks/recording.h"

#include <algorithm>

#include "model/imatrix_recorder.h"
#include "ops/ops.h"

namespace vkllm::model {
namespace {
constexpr uint64_t F = sizeof(float);
}

std::vector<Segment> Recording::segments() const {
    if (batch) return *batch;
    return {Segment{0, n_tokens, pos0, &kv, &scratch.positions, 0}};
}

int Recording::keys_in_view(int slots) const { return keys_in_view(Segment{0, n_tokens, pos0}, slots); }

int Recording::keys_in_view(const Segment& g, int slots) const {
    const int end = g.pos0 + g.n_tokens;
    const int rounded = (end + kv_bucket - 1) / kv_bucket * kv_bucket;
    return std::min(rounded, slots);
}

ops::KvView Recording::k_cache(int l, const KvCache& cache) const {
    const AttentionSpec& a = spec.layers[size_t(l)].attn;
    const KvCache::Layer& c = cache.layer(l);
    return {&c.k, c.slots, int64_t(a.n_head_kv) * a.head_dim, cache.type()};
}

ops::KvView Recording::v_cache(int l, const KvCache& cache) const {
    const AttentionSpec& a = spec.layers[size_t(l)].attn;
    const KvCache::Layer& c = cache.layer(l);
    return {&c.v, c.slots, int64_t(a.n_head_kv) * a.value_dim(), cache.type()};
}

MatmulInputs Recording::prepare_inputs(const ops::TensorView& x, std::initializer_list<const ops::Weight*> weights,
                                       RoundAt at) {
    MatmulInputs in;
    in.x = x;
    if (imatrix) imatrix->matmul_input(s, x, weights);
    if (!policy.round) return in;
    bool any = false;
    for (const ops::Weight* wt : weights) {
        ops::ActRounding mode = ops::activation_rounding(wt->type);
        if (mode == ops::ActRounding::None || in.rounded[size_t(mode)] || in.in_matvec[size_t(mode)]) continue;
        // Rows that are not whole blocks cannot be quantised (llama.cpp then keeps F16 weights).
        if (x.cols % ops::rounding_block(mode)) continue;
        if (!needs_rounding_dispatch(*wt, x.rows, x.cols, at)) {
            in.in_matvec[size_t(mode)] = true;
            continue;
        }
        const gpu::Buffer& dst = scratch.rounded[size_t(mode)];
        s.mark("round_act");
        ops::round_activations(s, x, ops::f32_rows(dst, x.rows, x.cols), mode);
        in.rounded[size_t(mode)] = &dst;
        any = true;
    }
    if (any) s.barrier("rounded activations are complete before the matmuls read them");
    return in;
}

bool Recording::needs_rounding_dispatch(const ops::Weight& wt, int64_t rows, int64_t n, RoundAt at) const {
    const ops::ActRounding mode = ops::activation_rounding(wt.type);
    if (!policy.round || mode == ops::ActRounding::None || n % ops::rounding_block(mode)) return false;
    const bool matvec_rounds =
        policy.matvec_rounds_x && ((at == RoundAt::Matvec && rows == 1) || at == RoundAt::ExpertMatvec);
    return !(matvec_rounds && ops::matvec_rounds_activations(wt.type));
}

MatmulInputs Recording::normed_inputs(const ops::TensorView& x, const gpu::Buffer* norm_w, const gpu::Buffer* norm_b,
                                      std::initializer_list<const ops::Weight*> weights, const char* why,
                                      const ops::TensorView& out) {
    bool fuse = !imatrix && policy.norm_in_matvec && x.rows == 1 && spec.norm == NormKind::RMSNorm && norm_w && !norm_b;
    for (const ops::Weight* wt : weights) fuse = fuse && !needs_rounding_dispatch(*wt, x.rows, x.cols, RoundAt::Matvec);
    if (!fuse) {
        norm(x, norm_w, norm_b, out);
        s.barrier(why);
        return prepare_inputs(out, weights);
    }
    MatmulInputs in = prepare_inputs(x, weights);  // records nothing (checked above)
    in.norm = ops::MatvecNorm{norm_w, 0, spec.norm_eps};
    return in;
}

void Recording::norm(const ops::TensorView& x, const gpu::Buffer* nw, const gpu::Buffer* nb, const ops::TensorView& y) {
    s.mark("norm");
    if (spec.norm == NormKind::RMSNorm)
        ops::rms_norm(s, x, nw, y, spec.norm_eps);
    else
        ops::layer_norm(s, x, nw, nb, y, spec.norm_eps);
}

ops::TensorView Recording::residual(int64_t rows, int64_t first) const {
    return ops::f32_rows(scratch.x, rows, spec.n_embd, uint64_t(first) * uint64_t(spec.n_embd));
}

// Without a post-norm the add is fused into the matmul (accumulate).
void Recording::add_block_output(const ops::Weight& wt, const ops::TensorView& in, const gpu::Buffer* bias,
                                 const gpu::Buffer* post_norm, const gpu::Buffer* probe_out,
                                 const gpu::Buffer* post_norm_b, bool norm_after_add) {
    const int T = n_tokens;
    const ops::TensorView x = residual(T);
    const ops::TensorView block_out = ops::f32_rows(scratch.block_out, T, spec.n_embd);
    // A probed projection is computed apart and then added, so its output can be copied; so is
    // one that Granite's residual multiplier scales before the add.
    const bool scaled = spec.residual_scale != 1.0f;
    const bool apart = post_norm || probe_out || scaled;
    const ops::TensorView& out = apart ? block_out : x;
    MatmulInputs mi = single_matvec_inputs(*this, in, wt);
    s.mark("matmul");
    mi.matmul(s, wt, out, /*accumulate=*/!apart);
    s.barrier("the block's projection is complete before its bias, its post-norm or the next layer");
    if (bias) {
        s.mark("add_bias");
        ops::add_bias(s, out, ops::f32_vector(*bias, spec.n_embd));
        s.barrier("the block's bias is added before its post-norm or the next layer");
    }
    if (!apart) return;
    if (post_norm && !norm_after_add) {
        norm(block_out, post_norm, nullptr, block_out);
        s.barrier("the post-normalised block output is complete before the probe copy and the residual add");
    }
    if (scaled) {
        s.mark("scale");
        ops::scale(s, block_out, spec.residual_scale);
        s.barrier("the scaled block output is complete before the probe copy and the residual add");
    }
    if (probe_out) {
        // What the block adds to the residual stream (both only read block_out).
        s.mark("copy");
        s.copy(scratch.block_out, 0, *probe_out, 0, uint64_t(T) * uint64_t(spec.n_embd) * F);
    }
    s.mark("add");
    ops::add(s, x, block_out, x);
    s.barrier("the residual stream is updated before the next block reads it");
    if (post_norm && norm_after_add) {
        norm(x, post_norm, post_norm_b, x);
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
