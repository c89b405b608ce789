// Checks the state-space ops (ssm_ops.h) make of their f32 tensor views: shapes against each
// other, and which written operand may overlap which read one (view_overlap.h). Each throws
// ShapeError naming the op and the operands.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "gpu/device.h"
#include "ops/dispatch_util.h"
#include "ops/tensor_view.h"
#include "ops/view_overlap.h"

namespace vkllm::ops::detail {

inline std::string view_shape(const TensorView& v) {
    return "[" + std::to_string(v.rows) + ", " + std::to_string(v.cols) + "]";
}

// A checked f32 view: its first element and row stride as the shaders take them.
struct CheckedRows {
    uint64_t first = 0;
    uint32_t stride = 0;
};

// Checks that v is an f32 view of shape [rows, cols] inside its buffer, its row stride a uint32.
inline CheckedRows checked_rows(const TensorView& v, int64_t rows, int64_t cols, const char* op, const char* what) {
    const uint64_t first = checked_f32(v, op, what);
    require_shape(v, rows, cols, op, what);
    require(uint64_t(v.stride()) <= 0xffffffffull, op, std::string(what) + "'s row stride is over 2^32");
    return {first, uint32_t(v.stride())};
}

// The binding window of a checked view.
inline Window view_window(const gpu::Context& ctx, const TensorView& v, const char* op, const char* what) {
    return window(ctx, *v.buffer, v.offset / 4, view_span(v), op, what);
}

struct NamedView {
    const TensorView* view;
    const char* name;
};

// Throws unless the written view w (checked) shares no element with any of `read` that has a
// buffer (each checked).
inline void require_disjoint(const TensorView& w, const char* w_name, std::initializer_list<NamedView> read,
                             const char* op) {
    for (const NamedView& r : read)
        require(!r.view->buffer || !views_overlap(w, w.offset / 4, *r.view, r.view->offset / 4), op,
                std::string(w_name) + " overlaps " + r.name);
}

// Throws unless the written view w (checked) is r itself (same buffer, offset and row stride) or
// shares no element with it; r without a buffer passes.
inline void require_same_or_disjoint(const TensorView& w, const char* w_name, const TensorView& r,
                                     const char* r_name, const char* op) {
    const bool same = w.buffer == r.buffer && w.offset == r.offset && w.stride() == r.stride();
    require(!r.buffer || same || !views_overlap(w, w.offset / 4, r, r.offset / 4), op,
            std::string(w_name) + " overlaps " + r_name + " without being " + r_name +
                " itself (same offset and row stride)");
}

}  // namespace vkllm::ops::detail
