#include "ops/matvec_bindings.h"

#include <algorithm>
#include <string>

#include "gpu/device.h"

namespace vkllm::ops {

using weights::require;

NormBinding norm_binding(const MatvecNorm* norm, uint64_t n_in, const weights::Window& xw,
                         const weights::Limits& lim, const char* op) {
    if (!norm) return {xw.range};
    require(norm->weight && norm->weight->valid() && (norm->offset + n_in) * 4 <= norm->weight->size(), op,
            "the fused norm's weight holds fewer than n_in values after its offset");
    require(norm->eps >= 0.0f, op, "the fused norm's eps must be >= 0");
    const weights::Window nw =
        weights::window(*norm->weight, norm->offset * 4, (norm->offset + n_in) * 4, lim, op, "norm weight");
    return {nw.range, nw.shift / 4, norm->eps, (nw.shift / 4) % 4 == 0};
}

XqBinding xq_binding(const QuantizedActs& x, const weights::Limits& lim, const char* op) {
    XqBinding b;
    b.window = weights::window(*x.buffer, x.offset, x.offset + x.bytes(), lim, op, "quantized x");
    const uint32_t first = b.window.shift / 4;  // x.offset is a multiple of 16, the window start of 4
    b.quants = first;
    b.scales = first + uint32_t((x.scales_offset() - x.offset) / 4);
    b.sums = first + uint32_t((x.sums_offset() - x.offset) / 4);
    b.vec4 = first % 4 == 0;
    return b;
}

void check_xq(const QuantizedActs& x, const Weight& w, const char* op) {
    require(x.buffer != nullptr, op, "the quantized x has no buffer");
    quantized_acts(*x.buffer, x.mode, x.rows, x.n, x.offset);  // the layout fits its buffer
    require(matvec_reads_quantized(w.type), op, "the weight's type has no matvec reading quantized x");
    require(x.mode == activation_rounding(w.type), op, "x is quantized in the blocks of another weight type");
    require(x.rows == 1, op, "one token: x must be one row, got " + std::to_string(x.rows));
    require(x.n == w.n_in, op,
            "x has " + std::to_string(x.n) + " values, the weight " + std::to_string(w.n_in) + " inputs");
}

void require_apart(const QuantizedActs& x, uint64_t y_offset, uint64_t n, const Buffer& y_buf, const char* op) {
    const uint64_t y_begin = y_offset * 4, y_end = (y_offset + n) * 4;
    require(x.buffer != &y_buf || y_end <= x.offset || x.offset + x.bytes() <= y_begin, op,
            "y overlaps the quantized x in the same buffer");
}

gpu::ShaderId xq_shader(const gpu::Capabilities& caps, TensorType t, weights::MatvecOp op) {
    weights::XqMatvecShaders sh;
    weights::xq_matvec_shaders(t, &sh);  // checked by check_xq
    const weights::MatvecShaders& ops = caps.integer_dot_matvec && sh.idot ? *sh.idot : sh.xq;
    return ops[size_t(op)].pick(caps.subgroup_arithmetic);
}

void grid_of(uint64_t groups, const weights::Limits& lim, uint64_t n_out, const char* op, uint32_t* gx, uint32_t* gy) {
    const uint64_t x = std::min<uint64_t>(groups, lim.max_groups[0]);
    const uint64_t y = (groups + x - 1) / x;
    require(y <= lim.max_groups[1], op, std::to_string(n_out) + " rows exceed the workgroup-count limits");
    *gx = uint32_t(x);
    *gy = uint32_t(y);
}

}  // namespace vkllm::ops
