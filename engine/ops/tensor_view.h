// TensorView: what an op reads or writes, as one value instead of positional (buffer, offset,
// rows, n) arguments: a buffer seen as `rows` rows of `cols` elements of one type, row 0 at a
// byte offset, rows `row_stride` elements apart. Ops that take views check them (type, shape
// against the other operands, alignment) and name the op and the operand when one is wrong.
#pragma once

#include <cstdint>

#include "gguf/gguf.h"
#include "gpu/buffer.h"

namespace vkllm::ops {

struct TensorView {
    const gpu::Buffer* buffer = nullptr;
    uint64_t offset = 0;       // bytes from the buffer's start to row 0
    int64_t rows = 1, cols = 0;
    int64_t row_stride = 0;    // elements from one row's start to the next; 0: cols (packed rows)
    gguf::TensorType type = gguf::TensorType::F32;

    int64_t stride() const { return row_stride > 0 ? row_stride : cols; }
    bool packed() const { return stride() == cols; }
    int64_t elements() const { return rows * cols; }
};

// f32 rows of `b`: [rows, cols] from element `first_element` (floats), rows `row_stride`
// floats apart (0: cols).
inline TensorView f32_rows(const gpu::Buffer& b, int64_t rows, int64_t cols, uint64_t first_element = 0,
                           int64_t row_stride = 0) {
    return {&b, first_element * 4, rows, cols, row_stride, gguf::TensorType::F32};
}

namespace detail {
// Throws ShapeError naming `op` and `what` unless v is an f32 view with a buffer, a
// non-negative shape, a row stride of 0 or at least cols and a 4-byte-aligned offset. Returns the
// offset in floats.
uint64_t checked_f32(const TensorView& v, const char* op, const char* what);
}  // namespace detail

}  // namespace vkllm::ops
