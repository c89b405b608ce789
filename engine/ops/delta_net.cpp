// The gated delta rule (delta_net_ops.h): shaders/delta_net.comp and delta_net_chunked.comp.
#include <cmath>
#include <cstdlib>
#include <string>
#include <tuple>

#include "gpu/device.h"
#include "gpu/shaders.h"
#include "ops/delta_net_ops.h"
#include "ops/dispatch_util.h"
#include "ops/push_constants.h"
#include "ops/view_overlap.h"

namespace vkllm::ops {

namespace {

std::string shape(int64_t rows, int64_t cols) { return "[" + std::to_string(rows) + ", " + std::to_string(cols) + "]"; }

struct Bound {
    detail::Window w;
    uint64_t first = 0;  // floats from the buffer's start
    uint32_t stride = 0;
};

Bound bind(const gpu::Context& ctx, const TensorView& v, int64_t rows, int64_t cols, const char* what,
           const char* op = "gated_delta_net") {
    const uint64_t first = detail::checked_f32(v, op, what);
    detail::require(v.rows == rows && v.cols == cols, op,
                    std::string(what) + " is " + shape(v.rows, v.cols) + ", expected " + shape(rows, cols));
    detail::require(uint64_t(v.stride()) <= 0xffffffffull, op, std::string(what) + "'s row stride is over 2^32");
    return {detail::window(ctx, *v.buffer, first, detail::view_span(v), op, what), first, uint32_t(v.stride())};
}

// VKLLM_DELTA_NET=chunked|sequential replaces Auto's choice; unset or "auto" leaves it.
DeltaNetKernel forced_kernel(DeltaNetKernel k) {
    const char* v = std::getenv("VKLLM_DELTA_NET");
    if (k != DeltaNetKernel::Auto || !v || !*v || std::string(v) == "auto") return k;
    const std::string name(v);
    if (name == "chunked") return DeltaNetKernel::Chunked;
    if (name == "sequential") return DeltaNetKernel::Sequential;
    throw ShapeError("gated_delta_net: VKLLM_DELTA_NET=" + name + " is not auto, chunked or sequential");
}

}  // namespace

uint32_t delta_net_chunk(const gpu::Context& ctx, int64_t d_k) {
    // delta_net_chunked.comp's shared memory: three [L][d_k] operand blocks, two L x L token
    // products, G_L [d_k], three [L] vectors and a flag per invocation.
    const uint64_t wg = detail::workgroup_size(ctx, 64);
    auto bytes = [&](uint64_t L) { return 4 * (3 * L * uint64_t(d_k) + 2 * L * L + uint64_t(d_k) + 3 * L + wg); };
    for (uint32_t L : {16u, 8u, 4u})
        if (bytes(L) <= ctx.caps().max_shared_memory) return L;
    detail::require(false, "gated_delta_net",
                    "d_k " + std::to_string(d_k) + " needs " + std::to_string(bytes(4)) +
                        " bytes of shared memory for the chunked kernel, over the device's " +
                        std::to_string(ctx.caps().max_shared_memory));
    return 4;
}

void gated_delta_net(Stream& s, const GatedDeltaNetArgs& a) {
    const char* op = "gated_delta_net";
    detail::require(a.n_head_k > 0 && a.n_head_v > 0 && a.d_k > 0 && a.d_v > 0, op,
                    "needs positive head counts and sizes, got n_head_k " + std::to_string(a.n_head_k) +
                        ", n_head_v " + std::to_string(a.n_head_v) + ", d_k " + std::to_string(a.d_k) + ", d_v " +
                        std::to_string(a.d_v));
    detail::require(a.n_head_v % a.n_head_k == 0, op,
                    "n_head_v " + std::to_string(a.n_head_v) + " is not a multiple of n_head_k " +
                        std::to_string(a.n_head_k));
    detail::require(a.d_k <= kDeltaNetMaxKeyDim, op,
                    "d_k " + std::to_string(a.d_k) + " is over " + std::to_string(kDeltaNetMaxKeyDim));
    detail::require(a.l2_eps >= 0.0f && std::isfinite(a.scale), op, "l2_eps must be >= 0 and scale finite");
    detail::checked_f32(a.q, op, "q");
    const int64_t n = a.q.rows, dk_all = a.n_head_k * a.d_k, dv_all = a.n_head_v * a.d_v;
    gpu::Context& ctx = s.context();
    const Bound st = bind(ctx, a.state, dv_all, a.d_k, "state");
    detail::require(a.state.packed(), op, "the state's rows must be packed");
    if (n == 0) return;
    const Bound q = bind(ctx, a.q, n, dk_all, "q");
    const Bound k = bind(ctx, a.k, n, dk_all, "k");
    const Bound v = bind(ctx, a.v, n, dv_all, "v");
    const bool per_key = a.g.cols == a.n_head_v * a.d_k && a.d_k != 1;
    const Bound g = bind(ctx, a.g, n, per_key ? a.n_head_v * a.d_k : a.n_head_v, "g");
    const Bound beta = bind(ctx, a.beta, n, a.n_head_v, "beta");
    const Bound o = bind(ctx, a.out, n, dv_all, "out");
    detail::require(!detail::views_overlap(a.out, o.first, a.state, st.first), op, "out overlaps the state");
    for (const auto& [view, first, name] : {std::tuple{&a.q, q.first, "q"}, std::tuple{&a.k, k.first, "k"},
                                            std::tuple{&a.g, g.first, "g"}, std::tuple{&a.beta, beta.first, "beta"}})
        detail::require(!detail::views_overlap(a.out, o.first, *view, first), op, std::string("out overlaps ") + name);
    detail::require(!detail::views_overlap(a.out, o.first, a.v, v.first) || (o.first == v.first && o.stride == v.stride), op,
                    "out overlaps v without being v itself");
    // A forced kernel applies to calls of more than one token; a decode step keeps Sequential.
    const DeltaNetKernel kernel = n > 1 ? forced_kernel(a.kernel) : a.kernel;
    const bool chunked = kernel == DeltaNetKernel::Chunked ||
                         (kernel == DeltaNetKernel::Auto && ctx.caps().type != "cpu" && n >= kDeltaNetChunkedMinTokens);
    const uint32_t wg = detail::workgroup_size(ctx, 64);
    const auto& pipeline =
        chunked ? ctx.pipeline(gpu::ShaderId::delta_net_chunked, 7, sizeof(DeltaNetPush),
                               {wg, uint32_t(a.d_k), delta_net_chunk(ctx, a.d_k)})
                : ctx.pipeline(gpu::ShaderId::delta_net, 7, sizeof(DeltaNetPush), {wg, uint32_t(a.d_k)});
    DeltaNetPush push{};
    push.n_tokens = uint32_t(n);
    push.n_head_k = uint32_t(a.n_head_k);
    push.n_head_v = uint32_t(a.n_head_v);
    push.d_v = uint32_t(a.d_v);
    push.st_shift = st.w.shift;
    push.q_shift = q.w.shift, push.q_stride = q.stride;
    push.k_shift = k.w.shift, push.k_stride = k.stride;
    push.v_shift = v.w.shift, push.v_stride = v.stride;
    push.g_shift = g.w.shift, push.g_stride = g.stride;
    push.beta_shift = beta.w.shift, push.beta_stride = beta.stride;
    push.o_shift = o.w.shift, push.o_stride = o.stride;
    push.flags = (per_key ? 1u : 0u) | (a.l2_norm_qk ? 2u : 0u) | (a.share == DeltaHeadShare::Tiled ? 4u : 0u);
    push.scale = a.scale != 0.0f ? a.scale : 1.0f / std::sqrt(float(a.d_k));
    push.l2_eps = a.l2_eps;
    // Sequential: an invocation per value column of every head; chunked: a workgroup per block of
    // wg value columns (x) of one value head (y).
    const uint64_t blocks = (uint64_t(a.d_v) + wg - 1) / wg;
    detail::require(!chunked || (blocks <= ctx.caps().max_workgroup_count[0] &&
                                 uint64_t(a.n_head_v) <= ctx.caps().max_workgroup_count[1]),
                    op, "more value heads or columns than the device's grid");
    const detail::Grid grid = chunked ? detail::Grid{uint32_t(blocks), uint32_t(a.n_head_v)}
                                      : detail::grid_2d(ctx, (uint64_t(dv_all) + wg - 1) / wg, op);
    s.dispatch(pipeline, {st.w.range, q.w.range, k.w.range, v.w.range, g.w.range, beta.w.range, o.w.range}, push,
               grid.x, grid.y);
}

}  // namespace vkllm::ops

namespace vkllm::ops {

void delta_net_gates(Stream& s, const DeltaNetGatesArgs& a) {
    const char* op = "delta_net_gates";
    detail::require(a.n_head > 0, op, "needs n_head > 0");
    const bool grouped = a.heads_per_group > 0;
    const int64_t hpg = grouped ? a.heads_per_group : a.n_head, gs = grouped ? a.group_stride : 0;
    detail::require(a.n_head % hpg == 0 && (!grouped || gs >= hpg), op,
                    "heads_per_group " + std::to_string(hpg) + " must divide n_head " + std::to_string(a.n_head) +
                        " and group_stride " + std::to_string(gs) + " be at least it");
    const int64_t in_cols = grouped ? (a.n_head / hpg - 1) * gs + hpg : a.n_head;
    detail::checked_f32(a.alpha, op, "alpha");
    const int64_t n = a.alpha.rows;
    gpu::Context& ctx = s.context();
    const Bound dtb = bind(ctx, a.dt_bias, 1, a.n_head, "dt_bias", op);
    const Bound av = bind(ctx, a.a, 1, a.n_head, "A", op);
    if (n == 0) return;
    const Bound al = bind(ctx, a.alpha, n, in_cols, "alpha", op);
    const Bound bv = bind(ctx, a.b, n, in_cols, "b", op);
    const Bound g = bind(ctx, a.g, n, a.n_head, "g", op);
    const Bound beta = bind(ctx, a.beta, n, a.n_head, "beta", op);
    for (const auto& [out, first, oname] : {std::tuple{&a.g, g.first, "g"}, std::tuple{&a.beta, beta.first, "beta"}})
        for (const auto& [in, ifirst, iname] :
             {std::tuple{&a.alpha, al.first, "alpha"}, std::tuple{&a.b, bv.first, "b"},
              std::tuple{&a.dt_bias, dtb.first, "dt_bias"}, std::tuple{&a.a, av.first, "A"}})
            detail::require(!detail::views_overlap(*out, first, *in, ifirst), op,
                            std::string(oname) + " overlaps " + iname);
    detail::require(!detail::views_overlap(a.g, g.first, a.beta, beta.first), op, "g overlaps beta");
    detail::require(uint64_t(n) * uint64_t(a.n_head) <= 0xffffffffull, op, "too many values");
    const uint32_t wg = detail::workgroup_size(ctx, 64);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::delta_net_gates, 6, sizeof(DeltaNetGatesPush), {wg});
    DeltaNetGatesPush push{};
    push.n_tokens = uint32_t(n);
    push.n_head = uint32_t(a.n_head);
    push.hpg = uint32_t(hpg);
    push.group_stride = uint32_t(gs);
    push.alpha_shift = al.w.shift, push.alpha_stride = al.stride;
    push.b_shift = bv.w.shift, push.b_stride = bv.stride;
    push.dtb_shift = dtb.w.shift, push.a_shift = av.w.shift;
    push.g_shift = g.w.shift, push.g_stride = g.stride;
    push.beta_shift = beta.w.shift, push.beta_stride = beta.stride;
    const detail::Grid grid = detail::grid_2d(ctx, (uint64_t(n) * uint64_t(a.n_head) + wg - 1) / wg, op);
    s.dispatch(pipeline, {al.w.range, bv.w.range, dtb.w.range, av.w.range, g.w.range, beta.w.range}, push, grid.x,
               grid.y);
}

}  // namespace vkllm::ops
