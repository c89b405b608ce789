// Read-back copy that flags non-finite values (shaders/copy_checked.comp).
#include <algorithm>
#include <string>

#include "gpu/device.h"
#include "ops/dispatch_util.h"
#include "ops/ops.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

void copy_checked(Stream& s, const TensorView& src, const TensorView& dst, const Buffer& flags) {
    const char* op = "copy_checked";
    const uint64_t src_offset = detail::checked_f32(src, op, "src");
    const uint64_t dst_offset = detail::checked_f32(dst, op, "dst");
    detail::require_same_shape(src, dst, op, "src and dst");
    detail::require(src.packed() && dst.packed(), op, "src and dst must have packed rows");
    const int64_t n_rows = src.rows, n = src.cols;
    detail::require(n_rows >= 0 && n > 0, op,
                    "needs n > 0 and n_rows >= 0; got n " + std::to_string(n) + ", n_rows " + std::to_string(n_rows));
    detail::require(uint64_t(n_rows) * uint64_t(n) <= 0xffffffffull, op, "more than 2^32 values");
    if (n_rows == 0) return;
    gpu::Context& ctx = s.context();
    detail::require(uint64_t(n_rows) <= ctx.caps().max_workgroup_count[1], op,
                    std::to_string(n_rows) + " rows exceed the device's workgroup-count limit");
    const uint64_t count = uint64_t(n_rows) * uint64_t(n);
    const detail::Window sw = detail::window(ctx, *src.buffer, src_offset, count, op, "src");
    const detail::Window dw = detail::window(ctx, *dst.buffer, dst_offset, count, op, "dst");
    const detail::Window fw = detail::window(ctx, flags, 0, uint64_t(n_rows) * 2, op, "flags");
    detail::require(fw.shift == 0, op, "flags must start at the buffer's start");
    const uint32_t threads = detail::workgroup_size(ctx, 256);
    // A few workgroups per row: the copy is memory-bound and rows are as long as the vocabulary.
    const uint64_t gx = std::clamp<uint64_t>((uint64_t(n) + threads * 8 - 1) / (threads * 8), 1,
                                             ctx.caps().max_workgroup_count[0]);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::copy_checked, 3, sizeof(CopyCheckedPush), {threads});
    const CopyCheckedPush push{uint32_t(n), sw.shift, dw.shift};
    s.dispatch(pipeline, {sw.range, dw.range, fw.range}, push, uint32_t(gx), uint32_t(n_rows));
}

}  // namespace vkllm::ops
