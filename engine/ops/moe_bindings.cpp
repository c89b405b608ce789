#include "ops/moe_bindings.h"

#include <string>

#include "ops/dispatch_util.h"

namespace vkllm::ops::moe_detail {

using weights::require;

void check_routing(const MoeRouting& r, const char* op) {
    require(r.experts && r.experts->valid(), op, "the routing has no expert-id buffer (moe_route's experts)");
    require(r.n_tokens >= 0 && r.n_tokens < (int64_t(1) << 31), op,
            "n_tokens " + std::to_string(r.n_tokens) + " is out of range");
    require(r.top_k >= 1 && r.top_k <= kMaxExperts, op, "top_k " + std::to_string(r.top_k) + " is out of range");
    require(uint64_t(r.n_tokens) * uint64_t(r.top_k) < (uint64_t(1) << 31), op, "too many (token, slot) pairs");
}

namespace {

// y: [n_pairs, n_out] (rows at any stride) in its buffer, after the checks x's own got; its span
// in floats from y_offset.
uint64_t checked_y(const TensorView& y_view, uint64_t n_pairs, uint64_t n_out, const char* op, uint64_t* y_offset) {
    *y_offset = detail::checked_f32(y_view, op, "y");
    detail::require_shape(y_view, int64_t(n_pairs), int64_t(n_out), op, "y");
    const uint64_t span = n_pairs ? (n_pairs - 1) * uint64_t(y_view.stride()) + n_out : 0;
    const uint64_t end = (*y_offset + span) * 4;
    require(y_view.buffer->valid() && end <= y_view.buffer->size(), op,
            "y needs " + std::to_string(end) + " bytes, its buffer holds " + std::to_string(y_view.buffer->size()));
    return span;
}

}  // namespace

ActivationWindows activation_windows(const TensorView& x_view, bool x_per_pair, const MoeRouting& r, uint64_t n_in,
                                     uint64_t n_out, const TensorView& y_view, const weights::Limits& lim,
                                     const char* op, bool strided) {
    const uint64_t usable = lim.max_binding - lim.align - 4;
    const uint64_t n_pairs = uint64_t(r.n_tokens) * uint64_t(r.top_k);
    const uint64_t x_rows = x_per_pair ? n_pairs : uint64_t(r.n_tokens);
    const uint64_t x_offset = detail::checked_f32(x_view, op, "x");
    detail::require_shape(x_view, int64_t(x_rows), int64_t(n_in), op, x_per_pair ? "x (a row per pair)" : "x (a row per token)");
    uint64_t y_offset = 0;
    const uint64_t y_span = checked_y(y_view, n_pairs, n_out, op, &y_offset);
    require(strided || (x_view.packed() && y_view.packed()), op, "x and y must have packed rows");
    const uint64_t xs = uint64_t(x_view.stride()), ys = uint64_t(y_view.stride());
    const Buffer &x = *x_view.buffer, &y = *y_view.buffer;
    // The span of each: every row's start, the last row's elements.
    const uint64_t x_span = x_rows ? (x_rows - 1) * xs + n_in : 0;
    const uint64_t x_end = (x_offset + x_span) * 4, y_end = (y_offset + y_span) * 4;
    require(x.valid() && x_end <= x.size(), op,
            "x needs " + std::to_string(x_end) + " bytes, its buffer holds " + std::to_string(x.size()));
    require(&x != &y || x_end <= y_offset * 4 || y_end <= x_offset * 4, op, "x and y overlap in the same buffer");
    require(x_span * 4 <= usable && y_span * 4 <= usable, op,
            "the activations of " + std::to_string(r.n_tokens) + " tokens exceed one binding (" +
                std::to_string(lim.max_binding) + " bytes): route fewer tokens per call");
    ActivationWindows a;
    a.x = weights::window(x, x_offset * 4, x_end, lim, op, "x");
    a.y = weights::window(y, y_offset * 4, y_end, lim, op, "y");
    a.x_base = a.x.shift / 4;
    a.x_vec4 = a.x_base % 4 == 0 && n_in % 4 == 0 && xs % 4 == 0 ? 1u : 0u;
    a.x_stride = uint32_t(xs);
    a.y_stride = uint32_t(ys);
    return a;
}

ActivationWindows quantized_windows(const QuantizedActs& x, bool x_per_pair, const MoeRouting& r, uint64_t n_in,
                                    uint64_t n_out, const TensorView& y_view, const weights::Limits& lim,
                                    const char* op) {
    const uint64_t usable = lim.max_binding - lim.align - 4;
    const uint64_t n_pairs = uint64_t(r.n_tokens) * uint64_t(r.top_k);
    const uint64_t x_rows = x_per_pair ? n_pairs : uint64_t(r.n_tokens);
    require(x.buffer != nullptr, op, "the quantized x has no buffer");
    quantized_acts(*x.buffer, x.mode, x.rows, x.n, x.offset);  // the layout fits its buffer
    require(uint64_t(x.rows) == x_rows && uint64_t(x.n) == n_in, op,
            "the quantized x must be " + std::to_string(x_rows) + (x_per_pair ? " pair" : " token") + " rows of " +
                std::to_string(n_in) + ", got " + std::to_string(x.rows) + " x " + std::to_string(x.n));
    uint64_t y_offset = 0;
    const uint64_t y_span = checked_y(y_view, n_pairs, n_out, op, &y_offset);
    const uint64_t y_begin = y_offset * 4, y_end = (y_offset + y_span) * 4;
    require(x.buffer != y_view.buffer || y_end <= x.offset || x.offset + x.bytes() <= y_begin, op,
            "y overlaps the quantized x in the same buffer");
    require(x.bytes() <= usable && y_span * 4 <= usable, op,
            "the activations of " + std::to_string(r.n_tokens) + " tokens exceed one binding (" +
                std::to_string(lim.max_binding) + " bytes): route fewer tokens per call");
    ActivationWindows a;
    a.x = weights::window(*x.buffer, x.offset, x.offset + x.bytes(), lim, op, "quantized x");
    a.y = weights::window(*y_view.buffer, y_begin, y_end, lim, op, "y");
    a.x_base = a.x.shift / 4;  // x.offset is a multiple of 16, the window's start of 4
    a.x_vec4 = a.x_base % 4 == 0 ? 1u : 0u;
    a.xq_scales = a.x_base + uint32_t((x.scales_offset() - x.offset) / 4);
    a.xq_sums = a.x_base + uint32_t((x.sums_offset() - x.offset) / 4);
    a.y_stride = uint32_t(y_view.stride());
    return a;
}

weights::Window expert_bias_window(const ExpertWeights& w, const weights::Window& y, const weights::Limits& lim,
                                   const char* op) {
    if (!w.bias) return {y.range, 0};
    require(w.bias->valid(), op, "the expert bias buffer is not allocated");
    return weights::window(*w.bias, 0, uint64_t(w.n_expert) * uint64_t(w.n_out) * 4, lim, op, "expert bias");
}

}  // namespace vkllm::ops::moe_detail
