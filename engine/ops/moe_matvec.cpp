// The experts' matrix-vector products for few tokens (MoE decode; shaders/moe_matvec.comp): the
// matrix-vector path of moe_matmul, the fused gate, up and SwiGLU, and both reading x quantized
// beforehand (its XQ variants).
#include <algorithm>
#include <initializer_list>
#include <string>

#include "gpu/device.h"
#include "ops/matvec_bindings.h"
#include "ops/moe_bindings.h"
#include "ops/ops.h"
#include "ops/push_constants.h"
#include "ops/weight_ops.h"

namespace vkllm::ops {

namespace {

using moe_detail::ActivationWindows;

// The push constants every dispatch of one op shares: x, y and the routing as `act` and `ids_w`
// bind them. The weights' fields and the pair range are the caller's to set.
MoeMatvecPush pairs_push(const ActivationWindows& act, const MoeRouting& r, bool x_per_pair,
                         const weights::Window& ids_w, int64_t n_in) {
    MoeMatvecPush p{};
    p.n_in = uint32_t(n_in);
    p.x_base = act.x_base;
    p.y_base = act.y.shift / 4;
    p.y_stride = act.y_stride;
    p.ids_base = ids_w.shift / 4;
    p.top_k = uint32_t(r.top_k);
    p.x_per_pair = x_per_pair ? 1u : 0u;
    p.x_vec4 = act.x_vec4;
    p.x_stride = act.x_stride;
    p.xq_scales = act.xq_scales;
    p.xq_sums = act.xq_sums;
    return p;
}

// `push` over every pair, max_groups[1] pairs (grid rows) per dispatch, gx workgroups each.
void dispatch_pairs(Stream& s, const gpu::Pipeline& pipe, const weights::Format& format,
                    std::initializer_list<gpu::BufferRange> buffers, MoeMatvecPush push, uint64_t gx,
                    const MoeRouting& r) {
    const weights::Limits lim = weights::limits(s.context().caps());
    const uint64_t n_pairs = uint64_t(r.n_tokens) * uint64_t(r.top_k);
    for (uint64_t p0 = 0; p0 < n_pairs; p0 += lim.max_groups[1]) {
        const uint64_t gy = std::min<uint64_t>(lim.max_groups[1], n_pairs - p0);
        push.pair0 = uint32_t(p0);
        push.n_pairs = uint32_t(gy);
        weights::dispatch(s, pipe, format, buffers, push, uint32_t(gx), uint32_t(gy));
    }
}

}  // namespace

namespace moe_detail {

void expert_matvecs(Stream& s, const ExpertWeights& w, const weights::Layout& layout, const MoeRouting& r,
                    bool x_per_pair, const ActivationWindows& act, const gpu::Pipeline& pipe, uint32_t mv_rows,
                    const char* op) {
    const weights::Limits lim = weights::limits(s.context().caps());
    const uint64_t n_pairs = uint64_t(r.n_tokens) * uint64_t(r.top_k);
    const weights::Window ids_w = weights::window(*r.experts, 0, n_pairs * 4, lim, op, "expert ids");
    const weights::Window bias_w = expert_bias_window(w, act.y, lim, op);
    MoeMatvecPush push = pairs_push(act, r, x_per_pair, ids_w, w.n_in);
    push.row_bytes = uint32_t(layout.row_bytes);
    push.has_bias = w.bias ? 1u : 0u;
    push.bias_stride = uint32_t(w.n_out);
    for_each_expert_window(w, layout.row_bytes, lim, mv_rows, op, [&](const ExpertWindow& win) {
        push.n_rows = uint32_t(win.nr);
        push.w_base = win.w.shift;
        push.expert_bytes = win.expert_stride;
        push.expert_first = uint32_t(win.e0);
        push.expert_count = uint32_t(win.ec);
        push.y_base = act.y.shift / 4 + uint32_t(win.r0);
        push.bias_base = bias_w.shift / 4 + uint32_t(win.r0);
        // Without a bias, binding 4 takes the weight window as a read-only placeholder.
        const gpu::BufferRange bias_range = w.bias ? bias_w.range : win.w.range;
        dispatch_pairs(s, pipe, layout.format, {win.w.range, act.x.range, act.y.range, ids_w.range, bias_range}, push,
                       (win.nr + mv_rows - 1) / mv_rows, r);
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
    MoeMatvecPush push = pairs_push(act, r, x_per_pair, ids_w, gate.n_in);
    push.n_rows = uint32_t(n_out);
    push.w_base = ww.shift;
    push.row_bytes = uint32_t(row_bytes);
    push.expert_bytes = uint32_t(row_bytes * n_out);
    push.expert_count = uint32_t(gate.n_expert);
    push.up_delta = uint32_t(up.offset - gate.offset);
    // Binding 4 (the bias) is unused: the weight window stands in, read-only.
    dispatch_pairs(s, pipe, layout.format, {ww.range, act.x.range, act.y.range, ids_w.range, ww.range}, push,
                   (n_out + mv_rows - 1) / mv_rows, r);
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
