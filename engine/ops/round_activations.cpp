// Activation rounding before quantised matmuls: see shaders/round_act.comp for the math.
#include "gguf/quant.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "ops/dispatch_util.h"
#include "ops/ops.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

ActRounding activation_rounding(TensorType t) {
    switch (t) {
        case TensorType::Q4_0: case TensorType::Q4_1: case TensorType::Q5_0: case TensorType::Q5_1:
        case TensorType::Q8_0: case TensorType::MXFP4: case TensorType::IQ4_NL:
            return ActRounding::Q8_32;
        // ggml's CPU backend dots these against Q8_K (blocks of 256): the K-quants, IQ4_XS, the
        // ternary types and the grid i-quants.
        case TensorType::Q2_K: case TensorType::Q3_K: case TensorType::Q4_K: case TensorType::Q5_K:
        case TensorType::Q6_K: case TensorType::IQ4_XS: case TensorType::TQ1_0: case TensorType::TQ2_0:
        case TensorType::IQ2_XXS: case TensorType::IQ2_XS: case TensorType::IQ2_S: case TensorType::IQ3_XXS:
        case TensorType::IQ3_S: case TensorType::IQ1_S: case TensorType::IQ1_M:
            return ActRounding::Q8_256;
        case TensorType::F16:
            return ActRounding::F16;
        case TensorType::BF16:
            return ActRounding::BF16;
        default:
            return ActRounding::None;
    }
}

bool matvec_rounds_activations(TensorType t) {
    const ActRounding mode = activation_rounding(t);
    return mode == ActRounding::Q8_32 || mode == ActRounding::F16 || mode == ActRounding::BF16;
}

int64_t rounding_block(ActRounding mode) {
    return mode == ActRounding::Q8_32 ? 32 : mode == ActRounding::Q8_256 ? 256 : 1;
}

void round_activations(Stream& s, const TensorView& x, const TensorView& y, ActRounding mode) {
    const char* op = "round_activations";
    const uint64_t x_offset = detail::checked_f32(x, op, "x");
    const uint64_t y_offset = detail::checked_f32(y, op, "y");
    detail::require_same_shape(x, y, op, "x and y");
    detail::require(x.packed() && y.packed(), op, "x and y must have packed rows");
    const int64_t n_rows = x.rows, n = x.cols;
    detail::require(mode != ActRounding::None, op, "mode None needs no rounding");
    const int64_t block = rounding_block(mode);
    detail::require(n_rows >= 0 && n > 0 && n % block == 0, op,
                    "row length " + std::to_string(n) + " is not a multiple of the block (" + std::to_string(block) + ")");
    if (n_rows == 0) return;
    gpu::Context& ctx = s.context();
    const uint64_t count = uint64_t(n_rows) * uint64_t(n);
    detail::Window xw = detail::window(ctx, *x.buffer, x_offset, count, op, "x");
    detail::Window yw = detail::window(ctx, *y.buffer, y_offset, count, op, "y");
    const uint32_t wg = detail::workgroup_size(ctx, 64);
    const uint64_t n_blocks = count / uint64_t(block);
    // Blocks of 256 take a workgroup each (round_act.comp), the others an invocation each.
    const uint64_t groups = block == 256 ? n_blocks : (n_blocks + wg - 1) / wg;
    detail::Grid g = detail::grid_2d(ctx, groups, op);
    const gpu::ShaderId shader = mode == ActRounding::Q8_32    ? gpu::ShaderId::round_act_q8_32
                                 : mode == ActRounding::Q8_256 ? gpu::ShaderId::round_act_q8_256
                                 : mode == ActRounding::F16    ? gpu::ShaderId::round_act_f16
                                                               : gpu::ShaderId::round_act_bf16;
    const gpu::Pipeline& p = ctx.pipeline(shader, 2, sizeof(RoundActPush), {wg});
    const RoundActPush push{uint32_t(n_blocks), xw.shift, yw.shift, g.x};
    s.dispatch(p, {xw.range, yw.range}, push, g.x, g.y);
}

}  // namespace vkllm::ops
