// TensorView: what an op reads or writes, as one value instead of positional (buffer, offset,
// rows, n) arguments: a buffer seen as `rows` rows of `cols` elements of one type, row 0 at a
// byte offset, rows `row_stride` elements apart. Ops that take views check them (type, shape
// against the other operands, alignment, the buffer's size) and name the op and the operand when
// one is wrong. A vector of n values is a view of n elements in packed rows ([1, n] or [n, 1]).
//
// KvView: one layer's K or V cache as the cache ops see it: `slots` rows of `row` values stored
// in a KvCacheType (ops.h, cache_bytes: f16 halves, or q8_0 blocks of 9 words), from the buffer's
// start. It is not a TensorView because a q8_0 cache is not GGUF's Q8_0 layout.
#pragma once

#include <cstdint>

#include "gguf/gguf.h"
#include "gpu/buffer.h"
#include "vkllm/kv_cache_type.h"

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
// n floats of `b` from element `first_element`: [1, n].
inline TensorView f32_vector(const gpu::Buffer& b, int64_t n, uint64_t first_element = 0) {
    return f32_rows(b, 1, n, first_element);
}
// int32 rows of `b` (token ids, positions, expert ids): [rows, cols] from element `first_element`.
inline TensorView i32_rows(const gpu::Buffer& b, int64_t rows, int64_t cols, uint64_t first_element = 0) {
    return {&b, first_element * 4, rows, cols, 0, gguf::TensorType::I32};
}
// n int32 values of `b` from element `first_element`: [1, n].
inline TensorView i32_vector(const gpu::Buffer& b, int64_t n, uint64_t first_element = 0) {
    return i32_rows(b, 1, n, first_element);
}

struct KvView {
    const gpu::Buffer* buffer = nullptr;
    int64_t slots = 0;  // rows
    int64_t row = 0;    // values per slot (n_head_kv * head dim)
    KvCacheType type = KvCacheType::F32;
};

namespace detail {
// Throws ShapeError naming `op` and `what` unless v is a view of `type` (f32 or i32) with a
// buffer, a non-negative shape, a row stride of 0 or at least cols, a 4-byte-aligned offset and
// every row inside its buffer. Returns the offset in elements.
uint64_t checked(const TensorView& v, gguf::TensorType type, const char* op, const char* what);
// checked(v, F32, ...).
uint64_t checked_f32(const TensorView& v, const char* op, const char* what);
// checked(v, type, ...) and packed rows of exactly `n` elements (a vector, or a packed matrix
// read as one).
uint64_t checked_vector(const TensorView& v, gguf::TensorType type, int64_t n, const char* op, const char* what);
// Throws unless v is [rows, cols], naming both shapes.
void require_shape(const TensorView& v, int64_t rows, int64_t cols, const char* op, const char* what);
// Throws unless v's rows are packed (row stride == cols).
void require_packed(const TensorView& v, const char* op, const char* what);
// Throws unless a and b have one shape (and, with `stride`, one row stride).
void require_same_shape(const TensorView& a, const TensorView& b, const char* op, const char* names,
                        bool stride = false);
// Throws unless c has a buffer, a positive row and slots, and its buffer holds its slots.
void require_kv(const KvView& c, const char* op, const char* what);
}  // namespace detail

}  // namespace vkllm::ops
