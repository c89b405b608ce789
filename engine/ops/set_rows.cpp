// KV-cache rows written by position (shaders/set_rows.comp).
#include <algorithm>
#include <string>

#include "gpu/device.h"
#include "ops/dispatch_util.h"
#include "ops/ops.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

void set_rows_into_slots(Stream& s, const TensorView& src_view, const TensorView& positions_view, const KvView& dst_view) {
    const char* op = "set_rows_into_slots";
    detail::require_kv(dst_view, op, "dst");
    const uint64_t src_offset = detail::checked_f32(src_view, op, "src");
    detail::require_shape(src_view, src_view.rows, dst_view.row, op, "src (a cache row per token)");
    const int64_t n_tokens = src_view.rows, n = dst_view.row, slots = dst_view.slots;
    const uint64_t pos_offset = detail::checked_vector(positions_view, TensorType::I32, n_tokens, op, "positions");
    const Buffer &src = *src_view.buffer, &positions = *positions_view.buffer, &dst = *dst_view.buffer;
    const KvCacheType dst_type = dst_view.type;
    detail::require(n > 0 && n_tokens >= 0 && slots > 0, op,
                    "needs n > 0, n_tokens >= 0 and slots > 0; got n " + std::to_string(n) + ", n_tokens " +
                        std::to_string(n_tokens) + ", slots " + std::to_string(slots));
    detail::require(uint64_t(std::max<int64_t>(n_tokens, slots)) * uint64_t(n) <= 0xffffffffull, op,
                    "more than 2^32 values");
    if (n_tokens == 0) return;
    gpu::Context& ctx = s.context();
    require_cache_type(ctx, dst_type, n, op);
    detail::require(uint64_t(n_tokens) <= ctx.caps().max_workgroup_count[1], op,
                    std::to_string(n_tokens) + " tokens exceed the device's workgroup-count limit");
    // Src rows at any stride (a slice of wider rows): the window spans the last row's end.
    const uint64_t stride = uint64_t(src_view.stride());
    const detail::Window sw = detail::window(ctx, src, src_offset, uint64_t(n_tokens - 1) * stride + uint64_t(n), op, "src");
    const detail::Window pw = detail::window(ctx, positions, pos_offset, uint64_t(n_tokens), op, "positions");
    const detail::Window dw = detail::cache_window(ctx, dst, uint64_t(slots) * uint64_t(n), dst_type, op, "dst");
    const uint32_t threads = detail::workgroup_size(ctx, 128);
    const uint64_t items = dst_type == KvCacheType::Q8_0 ? uint64_t(n) / 32 : uint64_t(n);  // Q8_0: a block each
    const uint64_t gx = std::clamp<uint64_t>((items + threads - 1) / threads, 1, ctx.caps().max_workgroup_count[0]);
    const gpu::ShaderId shader = dst_type == KvCacheType::F16    ? gpu::ShaderId::set_rows_f16
                                 : dst_type == KvCacheType::Q8_0 ? gpu::ShaderId::set_rows_q8_0
                                                               : gpu::ShaderId::set_rows;
    const auto& pipeline = ctx.pipeline(shader, 3, sizeof(SetRowsPush), {threads});
    const SetRowsPush push{uint32_t(n), uint32_t(n_tokens), uint32_t(slots), sw.shift, pw.shift, uint32_t(stride)};
    s.dispatch(pipeline, {sw.range, pw.range, dw.range}, push, uint32_t(gx), uint32_t(n_tokens));
}

uint64_t cache_bytes(KvCacheType t, uint64_t n) {
    return t == KvCacheType::F16 ? 2 * n : t == KvCacheType::Q8_0 ? n / 32 * 36 : 4 * n;
}

void require_cache_type(const gpu::Context& ctx, KvCacheType t, int64_t row, const char* op) {
    detail::require(t != KvCacheType::Auto, op, "the cache type must be resolved (f32, f16 or q8_0), not auto");
    detail::require(t != KvCacheType::F16 || ctx.caps().storage_16bit, op,
                    "an f16 cache needs 16-bit storage (storageBuffer16BitAccess), which device '" + ctx.caps().name +
                        "' lacks; use an f32 cache");
    detail::require(t != KvCacheType::Q8_0 || row % 32 == 0, op,
                    "a q8_0 cache holds blocks of 32 values; rows of " + std::to_string(row) +
                        " values are not whole blocks");
}

}  // namespace vkllm::ops
