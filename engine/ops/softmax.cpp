// Row softmax (shaders/softmax.comp): one workgroup per row.
#include <string>

#include "gpu/device.h"
#include "ops/dispatch_util.h"
#include "ops/ops.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

void softmax(Stream& s, const TensorView& x, const TensorView& y, float scale) {
    const char* op = "softmax";
    const uint64_t x_offset = detail::checked_f32(x, op, "x");
    const uint64_t y_offset = detail::checked_f32(y, op, "y");
    detail::require_same_shape(x, y, op, "x and y");
    detail::require(x.packed() && y.packed(), op, "x and y must have packed rows");
    const int64_t n_rows = x.rows, n = x.cols;
    detail::require(n > 0 && n_rows >= 0, op, "needs n > 0 and n_rows >= 0, got n " + std::to_string(n) +
                                                  ", n_rows " + std::to_string(n_rows));
    if (n_rows == 0) return;
    gpu::Context& ctx = s.context();
    const uint64_t count = uint64_t(n_rows) * uint64_t(n);
    const detail::Window xw = detail::window(ctx, *x.buffer, x_offset, count, op, "x");
    const detail::Window yw = detail::window(ctx, *y.buffer, y_offset, count, op, "y");
    const SoftmaxPush push{uint32_t(n), uint32_t(n_rows), xw.shift, yw.shift, scale};
    const uint32_t wg = detail::workgroup_size(ctx, n >= 2048 ? 256 : 64);
    const gpu::ShaderId shader = ctx.caps().subgroup_arithmetic ? gpu::ShaderId::softmax_sg : gpu::ShaderId::softmax;
    const auto& pipeline = ctx.pipeline(shader, 2, sizeof(push), {wg});
    const detail::Grid g = detail::grid_2d(ctx, uint64_t(n_rows), op);
    s.dispatch(pipeline, {xw.range, yw.range}, push, g.x, g.y);
}

}  // namespace vkllm::ops
