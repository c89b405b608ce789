// The experts' matrix-vector products for few tokens (MoE decode; shaders/moe_matvec.comp): the
// matrix-vector path of moe_matmul, the fused gate, up and SwiGLU, and both reading x quantized
// beforehand (its XQ variants).
#include <algorithm>
#include <string>

#include "gpu/device.h"
#include "ops/matvec_bindings.h"
#include "ops/moe_bindings.h"
#include "ops/ops.h"
#include "ops/push_constants.h"
#include "ops/weight_ops.h"

namespace vkllm::ops {

namespace moe_detail {

void expert_matvecs(Stream& s, const ExpertWeights& w, const weights::Layout& layout, const MoeRouting& r,
                    bool x_per_pair, const ActivationWindows& act, const gpu::Pipeline& pipe, uint32_t mv_rows,
                    const char* op) {
    const weights::Limits lim = weights::limits(s.context().caps());
    const uint64_t n_pairs = uint64_t(r.n_tokens) * uint64_t(r.top_k), n_out = uint64_t(w.n_out);
    const weights::Window ids_w = weights::window(*r.experts, 0, n_pairs * 4, lim, op, "expert ids");
    const weights::Window bias_w = expert_bias_window(w, act.y, lim, op);
    for_each_expert_window(w, layout.row_bytes, lim, mv_rows, op, [&](const ExpertWindow& win) {
        // Without a bias, binding 4 takes the weight window as a read-only placeholder.
        const gpu::BufferRange bias_range = w.bias ? bias_w.range : win.w.range;
        const uint64_t gx = (win.nr + mv_rows - 1) / mv_rows;
        for (uint64_t p0 = 0; p0 < n_pairs; p0 += lim.max_groups[1]) {
            const uint64_t gy = std::min<uint64_t>(lim.max_groups[1], n_pairs - p0);
            MoeMatvecPush push{uint32_t(w.n_in),
                               uint32_t(win.nr),
                               win.w.shift,
                               uint32_t(layout.row_bytes),
                               win.expert_stride,
                               uint32_t(win.e0),
                               uint32_t(win.ec),
                               act.x_base,
                               act.y.shift / 4 + uint32_t(win.r0),
                               act.y_stride,
                               ids_w.shift / 4,
                               uint32_t(p0),
                               uint32_t(gy),
                               uint32_t(r.top_k),
                               x_per_pair ? 1u : 0u,
                               act.x_vec4,
                               w.bias ? 1u : 0u,
                               bias_w.shift / 4 + uint32_t(win.r0),
                               uint32_t(n_out),
                               0u};
            push.x_stride = act.x_stride;
            push.xq_scales = act.xq_scales;
            push.xq_sums = act.xq_sums;
            weights::dispatch(s, pipe, layout.format, {win.w.range, act.x.range, act.y.range, ids_w.range, bias_range},
                              push, uint32_t(gx), uint32_t(gy));
        }
    });
}

}  // namespace moe_detail

namespace {

using moe_detail::ActivationWindows;
using weights::require;

// The bytes one binding must span for the fused pair: gate's experts through up's.
bool swiglu_experts(const ExpertWeights& gate, const ExpertWeights& up, uint64_t* span, uint64_t* row_bytes) {
    if (gate.buffer != up.buffer || gate.type != up.type || gate.grouped != up.grouped || gate.n_in != up.n_in ||
        gate.n_out != up.n_out || gate.n_expert != up.n_expert || gate.bias || up.bias || up.offset < gate.offset ||
        gate.offset % 4 || up.offset % 4)
        return false;
    weights::Format f;
    if (!weights::gpu_format(gate.type, &f) || gate.n_in % f.block_elems) return false;
    *row_bytes = uint64_t(gate.n_in) / f.block_elems * f.block_bytes;
    *span = up.offset - gate.offset + *row_bytes * uint64_t(up.n_out) * uint64_t(up.n_expert);
    return true;
}

// The checked layout of one expert tensor.
weights::Layout expert_layout(const ExpertWeights& w, const char* op) {
    require(w.n_expert >= 1 && w.n_expert <= kMaxExperts, op,
            "n_expert " + std::to_string(w.n_expert) + " must be in [1, " + std::to_string(kMaxExperts) + "]");
    require(w.n_out >= 1 && w.n_out < (int64_t(1) << 31), op, "n_out " + std::to_string(w.n_out) + " is out of range");
    return weights::checked_layout(Weight{w.type, w.buffer, w.n_in, w.n_out * w.n_expert, w.offset, w.grouped}, op);
}

// The fused pair's checked layout (16-byte aligned only where both are).
weights::Layout swiglu_layout(const gpu::Context& ctx, const ExpertWeights& gate, const ExpertWeights& up,
                              const char* op) {
    weights::Layout layout = expert_layout(gate, op);
    layout.and_aligned(expert_layout(up, op));
    require(moe_matvec_swiglu_fits(ctx, gate, up), op,
            "gate and up must be one type and shape without bias in one buffer (gate first), within one binding");
    return layout;
}

// The fused pair's dispatches: every expert of both in one window, a workgroup per mv_rows rows
// of a pair's expert.
void swiglu_matvecs(Stream& s, const ExpertWeights& gate, const ExpertWeights& up, const weights::Layout& layout,
                    const MoeRouting& r, bool x_per_pair, const ActivationWindows& act, const gpu::Pipeline& pipe,
                    uint32_t mv_rows, const char* op) {
    const weights::Limits lim = weights::limits(s.context().caps());
    const uint64_t n_pairs = uint64_t(r.n_tokens) * uint64_t(r.top_k), n_out = uint64_t(gate.n_out);
    uint64_t span = 0, row_bytes = 0;
    swiglu_experts(gate, up, &span, &row_bytes);
    const weights::Window ww = weights::window(*gate.buffer, gate.offset, gate.offset + span, lim, op, "gate and up");
    const weights::Window ids_w = weights::window(*r.experts, 0, n_pairs * 4, lim, op, "expert ids");
    const uint64_t gx = (n_out + mv_rows - 1) / mv_rows;
    for (uint64_t p0 = 0; p0 < n_pairs; p0 += lim.max_groups[1]) {
        const uint64_t gy = std::min<uint64_t>(lim.max_groups[1], n_pairs - p0);
        MoeMatvecPush push{uint32_t(gate.n_in),
                           uint32_t(n_out),
                           ww.shift,
                           uint32_t(row_bytes),
                           uint32_t(row_bytes * n_out),
                           0u,
                           uint32_t(gate.n_expert),
                           act.x_base,
                           act.y.shift / 4,
                           act.y_stride,
                           ids_w.shift / 4,
                           uint32_t(p0),
                           uint32_t(gy),
                           uint32_t(r.top_k),
                           x_per_pair ? 1u : 0u,
                           act.x_vec4,
                           0u,
                           0u,
                           0u,
                           uint32_t(up.offset - gate.offset)};
        push.x_stride = act.x_stride;
        push.xq_scales = act.xq_scales;
        push.xq_sums = act.xq_sums;
        // Binding 4 (the bias) is unused: the weight window stands in, read-only.
        weights::dispatch(s, pipe, layout.format, {ww.range, act.x.range, act.y.range, ids_w.range, ww.range}, push,
                          uint32_t(gx), uint32_t(gy));
    }
}

// The checks of a quantized x against the experts that read it.
void check_expert_xq(const QuantizedActs& x, TensorType type, const char* op) {
    require(matvec_reads_quantized(type), op, "the experts' type has no matvec reading quantized x");
    require(x.mode == activation_rounding(type), op, "x is quantized in the blocks of another weight type");
}

}  // namespace

bool moe_matvec_swiglu_fits(const gpu::Context& ctx, const ExpertWeights& gate, const ExpertWeights& up) {
    uint64_t span = 0, row_bytes = 0;
    if (!swiglu_experts(gate, up, &span, &row_bytes)) return false;
    const weights::Limits lim = weights::limits(ctx.caps());
    const uint64_t usable = lim.max_binding - lim.align - 4;
    const weights::MatvecShape mv = weights::matvec_shape(ctx.caps(), uint64_t(gate.n_in) / 32, /*glu=*/true);
    return span <= usable && span < (uint64_t(1) << 32) &&
           (uint64_t(gate.n_out) + mv.rows - 1) / mv.rows <= lim.max_groups[0];
}

void moe_matvec_swiglu(Stream& s, const ExpertWeights& gate, const ExpertWeights& up, const TensorView& x,
                       bool x_per_pair, const MoeRouting& r, const TensorView& y, bool round_x) {
    const char* op = "moe_matvec_swiglu";
    moe_detail::check_routing(r, op);
    gpu::Context& ctx = s.context();
    const weights::Layout layout = swiglu_layout(ctx, gate, up, op);
    require(!round_x || matvec_rounds_activations(gate.type), op, "round_x needs a weight type whose matvec rounds");
    const gpu::Capabilities& caps = ctx.caps();
    const uint64_t n_in = uint64_t(gate.n_in);
    const ActivationWindows act =
        moe_detail::activation_windows(x, x_per_pair, r, n_in, uint64_t(gate.n_out), y, weights::limits(caps), op);
    if (r.n_tokens == 0) return;
    const weights::MatvecShape mv = weights::matvec_shape(caps, n_in / 32, /*glu=*/true);
    const gpu::Pipeline& pipe =
        ctx.pipeline(weights::matvec_shader(caps, weights::MatvecOp::MoeMatvecSwiglu, gate.type, round_x),
                     layout.format.bindings(5), sizeof(MoeMatvecPush),
                     {mv.threads, mv.rows, round_x ? 1u : 0u, weights::matvec_rolled(caps), layout.aligned_spec()});
    swiglu_matvecs(s, gate, up, layout, r, x_per_pair, act, pipe, mv.rows, op);
}

void moe_matvec_quantized(Stream& s, const ExpertWeights& w, const QuantizedActs& x, bool x_per_pair,
                          const MoeRouting& r, const TensorView& y) {
    const char* op = "moe_matvec_quantized";
    moe_detail::check_routing(r, op);
    const weights::Layout layout = expert_layout(w, op);
    check_expert_xq(x, w.type, op);
    gpu::Context& ctx = s.context();
    const gpu::Capabilities& caps = ctx.caps();
    const weights::Limits lim = weights::limits(caps);
    const uint64_t n_in = uint64_t(w.n_in);
    require(layout.row_bytes <= lim.max_binding - lim.align - 4, op,
            "one row of " + std::to_string(n_in) + " elements does not fit one binding");
    const ActivationWindows act = moe_detail::quantized_windows(x, x_per_pair, r, n_in, uint64_t(w.n_out), y, lim, op);
    if (r.n_tokens == 0) return;
    const weights::MatvecShape mv = weights::matvec_shape(caps, n_in / 32);
    const gpu::Pipeline& pipe =
        ctx.pipeline(xq_shader(caps, w.type, weights::MatvecOp::MoeMatvec), layout.format.bindings(5),
                     sizeof(MoeMatvecPush),
                     {mv.threads, mv.rows, /*ROUND_X*/ 0u, weights::matvec_rolled(caps), layout.aligned_spec()});
    moe_detail::expert_matvecs(s, w, layout, r, x_per_pair, act, pipe, mv.rows, op);
}

void moe_matvec_swiglu_quantized(Stream& s, const ExpertWeights& gate, const ExpertWeights& up,
                                 const QuantizedActs& x, bool x_per_pair, const MoeRouting& r, const TensorView& y) {
    const char* op = "moe_matvec_swiglu_quantized";
    moe_detail::check_routing(r, op);
    gpu::Context& ctx = s.context();
    const weights::Layout layout = swiglu_layout(ctx, gate, up, op);
    check_expert_xq(x, gate.type, op);
    const gpu::Capabilities& caps = ctx.caps();
    const uint64_t n_in = uint64_t(gate.n_in);
    const ActivationWindows act =
        moe_detail::quantized_windows(x, x_per_pair, r, n_in, uint64_t(gate.n_out), y, weights::limits(caps), op);
    if (r.n_tokens == 0) return;
    const weights::MatvecShape mv = weights::matvec_shape(caps, n_in / 32, /*glu=*/true);
    const gpu::Pipeline& pipe =
        ctx.pipeline(xq_shader(caps, gate.type, weights::MatvecOp::MoeMatvecSwiglu), layout.format.bindings(5),
                     sizeof(MoeMatvecPush),
                     {mv.threads, mv.rows, /*ROUND_X*/ 0u, weights::matvec_rolled(caps), layout.aligned_spec()});
    swiglu_matvecs(s, gate, up, layout, r, x_per_pair, act, pipe, mv.rows, op);
}

}  // namespace vkllm::ops
