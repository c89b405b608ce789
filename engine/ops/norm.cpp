// RMSNorm and LayerNorm over rows (shaders/norm.comp): one workgroup per row.
#include <string>

#include "gpu/device.h"
#include "gpu/shaders.h"
#include "ops/dispatch_util.h"
#include "ops/ops.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

namespace {

// variants: rms_norm or layer_norm, without and with subgroup arithmetic.
void row_norm(Stream& s, const char* op, gpu::SubgroupPair variants, const Buffer& x, uint64_t x_offset,
              const Buffer* w, const Buffer* b, const Buffer& y, uint64_t y_offset, int64_t n_rows, int64_t n,
              float eps, int64_t stride) {
    detail::require(n > 0 && n_rows >= 0, op, "needs n > 0 and n_rows >= 0, got n " + std::to_string(n) +
                                                  ", n_rows " + std::to_string(n_rows));
    if (stride == 0) stride = n;
    detail::require(stride >= n, op, "row stride " + std::to_string(stride) + " is shorter than a row of " +
                                         std::to_string(n));
    detail::require(eps >= 0.0f, op, "eps must be >= 0");
    if (n_rows == 0) return;
    gpu::Context& ctx = s.context();
    const uint64_t span = uint64_t(n_rows - 1) * uint64_t(stride) + uint64_t(n);  // floats touched
    const detail::Window xw = detail::window(ctx, x, x_offset, span, op, "x");
    const detail::Window yw = detail::window(ctx, y, y_offset, span, op, "y");
    const detail::Window ww = w ? detail::window(ctx, *w, 0, n, op, "weight") : xw;
    const detail::Window bw = b ? detail::window(ctx, *b, 0, n, op, "bias") : xw;

    const uint32_t wg = detail::workgroup_size(ctx, n >= 1024 ? 256 : 64);
    const auto& pipeline = ctx.pipeline(variants.pick(ctx.caps().subgroup_arithmetic), 4, sizeof(NormPush), {wg});
    NormPush push{uint32_t(n),        uint32_t(n_rows), uint32_t(stride), xw.shift, yw.shift,
                  w ? ww.shift : 0u, b ? bw.shift : 0u, (w ? 1u : 0u) | (b ? 2u : 0u), eps};
    const detail::Grid g = detail::grid_2d(ctx, uint64_t(n_rows), op);
    s.dispatch(pipeline, {xw.range, ww.range, bw.range, yw.range}, push, g.x, g.y);
}

// The views' shared shape as row_norm's arguments: x and y one shape and one row stride.
void check_norm_views(const TensorView& x, const TensorView& y, const char* op, uint64_t* x_offset,
                      uint64_t* y_offset) {
    *x_offset = detail::checked_f32(x, op, "x");
    *y_offset = detail::checked_f32(y, op, "y");
    detail::require_same_shape(x, y, op, "x and y", /*stride=*/true);
}

}  // namespace

void rms_norm(Stream& s, const TensorView& x, const Buffer* w, const TensorView& y, float eps) {
    uint64_t x_offset = 0, y_offset = 0;
    check_norm_views(x, y, "rms_norm", &x_offset, &y_offset);
    row_norm(s, "rms_norm", {gpu::ShaderId::rms_norm, gpu::ShaderId::rms_norm_sg}, *x.buffer, x_offset, w, nullptr,
             *y.buffer, y_offset, x.rows, x.cols, eps, x.stride());
}

void layer_norm(Stream& s, const TensorView& x, const Buffer* w, const Buffer* b, const TensorView& y, float eps) {
    uint64_t x_offset = 0, y_offset = 0;
    check_norm_views(x, y, "layer_norm", &x_offset, &y_offset);
    row_norm(s, "layer_norm", {gpu::ShaderId::layer_norm, gpu::ShaderId::layer_norm_sg}, *x.buffer, x_offset, w, b,
             *y.buffer, y_offset, x.rows, x.cols, eps, x.stride());
}

}  // namespace vkllm::ops
