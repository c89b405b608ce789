// Row argmax (shaders/argmax.comp): one workgroup per row.
#include <string>

#include "gpu/device.h"
#include "ops/dispatch_util.h"
#include "ops/ops.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

void argmax(Stream& s, const TensorView& x, const TensorView& out) {
    const char* op = "argmax";
    const uint64_t x_offset = detail::checked_f32(x, op, "x");
    detail::require_packed(x, op, "x");
    const uint64_t out_offset = detail::checked_vector(out, TensorType::I32, x.rows, op, "out");
    const int64_t n_rows = x.rows, n = x.cols;
    detail::require(n > 0 && n_rows >= 0, op, "needs n > 0 and n_rows >= 0, got n " + std::to_string(n) +
                                                  ", n_rows " + std::to_string(n_rows));
    if (n_rows == 0) return;
    gpu::Context& ctx = s.context();
    const detail::Window xw = detail::window(ctx, *x.buffer, x_offset, uint64_t(n_rows) * uint64_t(n), op, "x");
    const detail::Window ow = detail::window(ctx, *out.buffer, out_offset, uint64_t(n_rows), op, "out");
    const ArgmaxPush push{uint32_t(n), uint32_t(n_rows), xw.shift, ow.shift};
    // Decode calls this on one long row (the vocabulary): give it many invocations.
    const uint32_t wg = detail::workgroup_size(ctx, n >= 8192 ? 512 : 64);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::argmax, 2, sizeof(push), {wg});
    const detail::Grid g = detail::grid_2d(ctx, uint64_t(n_rows), op);
    s.dispatch(pipeline, {xw.range, ow.range}, push, g.x, g.y);
}

}  // namespace vkllm::ops
