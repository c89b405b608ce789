// Squared ReLU (activation_ops.h): shaders/relu_sqr.comp.
#include <algorithm>
#include <string>

#include "gpu/device.h"
#include "gpu/shaders.h"
#include "ops/activation_ops.h"
#include "ops/dispatch_util.h"
#include "ops/push_constants.h"
#include "ops/view_overlap.h"

namespace vkllm::ops {

void relu_sqr(Stream& s, const TensorView& x, const TensorView& y) {
    const char* op = "relu_sqr";
    const uint64_t xo = detail::checked_f32(x, op, "x");
    const uint64_t yo = detail::checked_f32(y, op, "y");
    detail::require(x.rows == y.rows && x.cols == y.cols, op,
                    "x [" + std::to_string(x.rows) + ", " + std::to_string(x.cols) + "] and y [" +
                        std::to_string(y.rows) + ", " + std::to_string(y.cols) + "] differ in shape");
    const uint64_t n = uint64_t(x.rows) * uint64_t(x.cols);
    detail::require(n <= 0xffffffffull, op, std::to_string(n) + " values are more than 2^32");
    if (n == 0) return;
    const bool same = x.buffer == y.buffer && xo == yo && x.stride() == y.stride();
    detail::require(same || !detail::views_overlap(x, xo, y, yo), op,
                    "y overlaps x without being x itself (same offset and stride)");
    gpu::Context& ctx = s.context();
    const detail::Window xw = detail::window(ctx, *x.buffer, xo, detail::view_span(x), op, "x");
    const detail::Window yw = detail::window(ctx, *y.buffer, yo, detail::view_span(y), op, "y");
    const uint32_t wg = detail::workgroup_size(ctx, 256);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::relu_sqr, 2, sizeof(ReluSqrPush), {wg});
    const ReluSqrPush push{uint32_t(x.rows), uint32_t(x.cols), xw.shift, uint32_t(x.stride()), yw.shift,
                           uint32_t(y.stride())};
    // Columns over x workgroups, rows over y (both loop when the grid is capped); about 2^20
    // invocations at most, so each loops over rows of a large tensor.
    const auto& caps = ctx.caps();
    const uint64_t gx = std::clamp<uint64_t>((uint64_t(x.cols) + wg - 1) / wg, 1, caps.max_workgroup_count[0]);
    const uint64_t gy = std::clamp<uint64_t>(std::min<uint64_t>(uint64_t(x.rows), (1u << 20) / (gx * wg) + 1), 1,
                                             caps.max_workgroup_count[1]);
    s.dispatch(pipeline, {xw.range, yw.range}, push, uint32_t(gx), uint32_t(gy));
}

}  // namespace vkllm::ops
