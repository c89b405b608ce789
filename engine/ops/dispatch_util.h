// Small helpers shared by the op implementations: argument checks with readable errors,
// binding windows that respect the device's offset alignment and range limit, and workgroup
// grids that respect the device's workgroup-count limit.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "gpu/buffer.h"
#include "gpu/device.h"
#include "ops/ops.h"

namespace vkllm::ops::detail {

// Throws ShapeError("<op>: <message>") unless `ok`.
inline void require(bool ok, const char* op, const std::string& message) {
    if (!ok) throw ShapeError(std::string(op) + ": " + message);
}

struct Window;
// The window of the first n values of a KV cache of type t (its shift is 0).
Window cache_window(const gpu::Context& ctx, const Buffer& b, uint64_t n, KvCacheType t, const char* op, const char* what);

// What one shader binding sees of a buffer: a window that starts at the aligned byte offset at or
// below element `first`, and `shift`, the element index of `first` inside that window. Shaders
// index `shift + i`, so callers may pass any element offset.
struct Window {
    gpu::BufferRange range;
    uint32_t shift = 0;
};

// The window covering elements [first, first + count) of `b` (elements of `elem_bytes`).
// Throws ShapeError naming `op` and `what` when the elements lie outside the buffer or the window
// is larger than the device's maxStorageBufferRange.
inline Window window(const gpu::Context& ctx, const Buffer& b, uint64_t first, uint64_t count, const char* op,
                     const char* what, uint32_t elem_bytes = 4) {
    const uint64_t begin = first * elem_bytes;
    const uint64_t end = (first + std::max<uint64_t>(count, 1)) * elem_bytes;
    require(b.valid(), op, std::string(what) + " buffer is not allocated");
    require(end <= b.size(), op,
            std::string(what) + " needs bytes [" + std::to_string(begin) + ", " + std::to_string(end) +
                ") but its buffer holds " + std::to_string(b.size()));
    const uint64_t align = std::max<uint64_t>(ctx.caps().min_storage_buffer_offset_alignment, elem_bytes);
    const uint64_t start = begin / align * align;
    require(end - start <= ctx.caps().max_storage_buffer_range, op,
            std::string(what) + " spans " + std::to_string(end - start) +
                " bytes, more than the device can bind at once (maxStorageBufferRange " +
                std::to_string(ctx.caps().max_storage_buffer_range) + ")");
    Window w;
    w.range = gpu::BufferRange(b, start, end - start);
    w.shift = static_cast<uint32_t>((begin - start) / elem_bytes);
    return w;
}

inline Window cache_window(const gpu::Context& ctx, const Buffer& b, uint64_t n, KvCacheType t, const char* op,
                           const char* what) {
    switch (t) {
        case KvCacheType::F16: return window(ctx, b, 0, n, op, what, 2);
        case KvCacheType::Q8_0: return window(ctx, b, 0, n / 32 * 9, op, what, 4);
        default: return window(ctx, b, 0, n, op, what, 4);
    }
}

// A 2-D grid of at least n workgroups: x up to the device limit, the rest in y. Shaders
// recover the flat index as gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x and skip
// indices >= n.
struct Grid {
    uint32_t x = 1, y = 1;
};

inline Grid grid_2d(const gpu::Context& ctx, uint64_t n, const char* op) {
    const uint64_t max_x = ctx.caps().max_workgroup_count[0], max_y = ctx.caps().max_workgroup_count[1];
    Grid g;
    g.x = static_cast<uint32_t>(std::min<uint64_t>(std::max<uint64_t>(n, 1), max_x));
    const uint64_t y = (n + g.x - 1) / g.x;
    require(y <= max_y, op, std::to_string(n) + " workgroups exceed the device's workgroup-count limits");
    g.y = static_cast<uint32_t>(std::max<uint64_t>(y, 1));
    return g;
}

// Threads per workgroup: `wanted`, capped by the device.
inline uint32_t workgroup_size(const gpu::Context& ctx, uint32_t wanted) {
    uint32_t limit = std::min(ctx.caps().max_workgroup_invocations, ctx.caps().max_workgroup_size[0]);
    uint32_t t = wanted;
    while (t > limit && t > 1) t /= 2;
    return t;
}

}  // namespace vkllm::ops::detail
