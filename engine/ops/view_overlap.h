// Whether two f32 tensor views share an element: what ops check before they write one view
// while reading another. Views at one row stride (columns of the same rows, as a projection's
// output is split into q | k | v) are told apart exactly; at different strides their spans are
// compared (a conservative answer: interleaved rows count as overlapping).
#pragma once

#include <cstdint>

#include "ops/tensor_view.h"

namespace vkllm::ops::detail {

// Floats from v's first element to just past its last.
inline uint64_t view_span(const TensorView& v) {
    return v.rows <= 0 || v.cols <= 0 ? 0 : uint64_t(v.rows - 1) * uint64_t(v.stride()) + uint64_t(v.cols);
}

// a and b start at floats a0 and b0 of their buffers (TensorView::offset / 4).
inline bool views_overlap(const TensorView& a, uint64_t a0, const TensorView& b, uint64_t b0) {
    if (a.buffer != b.buffer || view_span(a) == 0 || view_span(b) == 0) return false;
    if (a0 >= b0 + view_span(b) || b0 >= a0 + view_span(a)) return false;
    if (a.stride() != b.stride()) return true;
    // One stride s >= both widths: a's element (r1, c1) is b's (r2, c2) when
    // b0 - a0 = (r1 - r2) s + (c1 - c2) with |c1 - c2| < s, so r1 - r2 is floor or ceil of the
    // offset difference over s.
    const int64_t s = a.stride(), delta = int64_t(b0) - int64_t(a0);
    const int64_t lo = delta >= 0 ? delta / s : -((-delta + s - 1) / s);
    for (int64_t dr : {lo, lo + 1}) {
        const int64_t dc = delta - dr * s;  // c1 - c2
        if (dr > -b.rows && dr < a.rows && dc > -b.cols && dc < a.cols) return true;
    }
    return false;
}

}  // namespace vkllm::ops::detail
