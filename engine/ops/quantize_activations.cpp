// Activations quantized once for the decode matvecs that read them: see shaders/quantize_act.comp
// for the math and ops.h (QuantizedActs) for the layout.
#include <string>

#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "ops/dispatch_util.h"
#include "ops/ops.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

namespace {

uint64_t align16(uint64_t v) { return (v + 15) / 16 * 16; }

}  // namespace

uint64_t QuantizedActs::scales_offset() const { return offset + align16(uint64_t(rows) * uint64_t(n)); }

uint64_t QuantizedActs::sums_offset() const {
    return scales_offset() + align16(uint64_t(rows) * uint64_t(n / block()) * 4);
}

uint64_t QuantizedActs::bytes() const { return sums_offset() + uint64_t(rows) * uint64_t(n / sum_group()) * 4 - offset; }

QuantizedActs quantized_acts(const Buffer& b, ActRounding mode, int64_t rows, int64_t n, uint64_t offset) {
    const char* op = "quantized_acts";
    detail::require(mode == ActRounding::Q8_32 || mode == ActRounding::Q8_256, op,
                    "only the 8-bit blocks of 32 and 256 are quantized");
    const QuantizedActs q{&b, offset, mode, rows, n};
    detail::require(rows >= 1 && n > 0 && n % q.block() == 0, op,
                    std::to_string(rows) + " rows of " + std::to_string(n) + " are not whole blocks of " +
                        std::to_string(q.block()));
    detail::require(offset % 16 == 0, op, "the offset " + std::to_string(offset) + " is not a multiple of 16");
    detail::require(b.valid() && offset + q.bytes() <= b.size(), op,
                    "the quantized activations need " + std::to_string(q.bytes()) + " bytes from " +
                        std::to_string(offset) + ", the buffer holds " + std::to_string(b.size()));
    return q;
}

void quantize_activations(Stream& s, const TensorView& x, const QuantizedActs& out, const MatvecNorm* norm) {
    const char* op = "quantize_activations";
    const uint64_t x_offset = detail::checked_f32(x, op, "x");
    detail::require(out.buffer != nullptr, op, "the output has no buffer");
    // Re-checks the output's layout (a hand-made QuantizedActs included).
    const QuantizedActs q = quantized_acts(*out.buffer, out.mode, out.rows, out.n, out.offset);
    detail::require(x.packed() && x.rows == q.rows && x.cols == q.n, op,
                    "x must be packed rows of the output's shape (" + std::to_string(q.rows) + " x " +
                        std::to_string(q.n) + "), got " + std::to_string(x.rows) + " x " + std::to_string(x.cols));
    detail::require(!norm || q.rows == 1, op, "a folded norm needs one row");
    gpu::Context& ctx = s.context();
    const uint64_t count = uint64_t(q.rows) * uint64_t(q.n);
    const detail::Window xw = detail::window(ctx, *x.buffer, x_offset, count, op, "x");
    const detail::Window qw = detail::window(ctx, *q.buffer, q.offset / 4, q.bytes() / 4, op, "quantized x");
    detail::Window nw = xw;  // binding 2: the norm's weight, or x's window again, unread
    float eps = 0.0f;
    if (norm) {
        detail::require(norm->weight != nullptr, op, "the folded norm has no weight");
        detail::require(norm->eps >= 0.0f, op, "the folded norm's eps must be >= 0");
        nw = detail::window(ctx, *norm->weight, norm->offset, uint64_t(q.n), op, "norm weight");
        eps = norm->eps;
    }
    // With a norm, norm.comp's workgroup size and reduction, so the sums of x^2 are its own.
    const bool sg = norm && ctx.caps().subgroup_arithmetic;
    const uint32_t wg = detail::workgroup_size(ctx, norm && q.n >= 1024 ? 256 : 64);
    const int64_t block = q.block();
    const uint64_t n_blocks = count / uint64_t(block);
    // Blocks of 256 take a workgroup each, blocks of 32 an invocation each.
    const uint64_t groups = block == 256 ? n_blocks : (n_blocks + wg - 1) / wg;
    const detail::Grid g = detail::grid_2d(ctx, groups, op);
    const gpu::ShaderId shader = block == 256 ? (sg ? gpu::ShaderId::quantize_act_q8_256_sg : gpu::ShaderId::quantize_act_q8_256)
                                              : (sg ? gpu::ShaderId::quantize_act_q8_32_sg : gpu::ShaderId::quantize_act_q8_32);
    const gpu::Pipeline& p = ctx.pipeline(shader, 3, sizeof(QuantizeActPush), {wg, norm ? 1u : 0u});
    const uint32_t base = qw.shift;  // words
    const QuantizeActPush push{uint32_t(n_blocks),
                               xw.shift,
                               base,
                               base + uint32_t((q.scales_offset() - q.offset) / 4),
                               base + uint32_t((q.sums_offset() - q.offset) / 4),
                               g.x,
                               uint32_t(q.n),
                               norm ? nw.shift : 0u,
                               eps};
    s.dispatch(p, {xw.range, qw.range, nw.range}, push, g.x, g.y);
}

}  // namespace vkllm::ops
