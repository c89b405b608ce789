// Embedding lookup with dequantization (shaders/get_rows.comp). A table larger than one binding
// (a big vocabulary in F16, or any table under VKLLM_LIMITS=mobile) is bound one row window at a
// time; the ids live on the GPU, so every window's dispatch checks every id.
#include <algorithm>
#include <string>

#include "gpu/device.h"
#include "ops/ops.h"
#include "ops/push_constants.h"
#include "ops/weight_ops.h"

namespace vkllm::ops {

namespace {

constexpr uint32_t kThreads = 64;  // each thread writes 4 elements

}  // namespace

void get_rows(Stream& s, const Weight& table, const TensorView& ids_view, const TensorView& out_view) {
    const char* op = "get_rows";
    using weights::require;
    const weights::Layout layout = weights::checked_layout(table, op);
    const int64_t n = out_view.rows;
    const uint64_t ids_offset = detail::checked_vector(ids_view, TensorType::I32, n, op, "ids") * 4;
    const uint64_t out_offset = detail::checked_f32(out_view, op, "out") * 4;
    detail::require_shape(out_view, n, table.n_in, op, "out");
    detail::require_packed(out_view, op, "out");
    if (n == 0) return;
    const Buffer& ids = *ids_view.buffer;
    const Buffer& out = *out_view.buffer;
    const uint64_t n_in = uint64_t(table.n_in), n_ids = uint64_t(n), row_bytes = layout.row_bytes;

    gpu::Context& ctx = s.context();
    const weights::Limits lim = weights::limits(ctx.caps());
    const uint64_t usable = lim.max_binding - lim.align - 4;
    require(row_bytes <= usable && n_in * 4 <= usable, op,
            "one row of " + std::to_string(n_in) + " elements does not fit one binding (" +
                std::to_string(lim.max_binding) + " bytes)");
    const uint64_t groups_x = (n_in + 4 * kThreads - 1) / (4 * kThreads);
    require(groups_x <= lim.max_groups[0], op, "rows of " + std::to_string(n_in) + " elements are too long");
    const uint64_t rows_per_window = usable / row_bytes;
    const uint64_t ids_per_dispatch = std::min<uint64_t>({usable / (n_in * 4), usable / 4, lim.max_groups[1]});

    const gpu::Pipeline& pipe = ctx.pipeline(layout.format.shaders.get_rows, layout.format.bindings(3), sizeof(GetRowsPush), {kThreads, layout.aligned_spec()});
    const uint64_t n_rows = uint64_t(table.n_out);
    for (uint64_t row0 = 0; row0 < n_rows; row0 += rows_per_window) {
        const uint64_t rows = std::min(rows_per_window, n_rows - row0);
        const weights::Window tw =
            weights::window(*table.buffer, table.offset + row0 * row_bytes, table.offset + (row0 + rows) * row_bytes, lim,
                            op, "table");
        for (uint64_t i0 = 0; i0 < n_ids; i0 += ids_per_dispatch) {
            const uint64_t ni = std::min(ids_per_dispatch, n_ids - i0);
            const weights::Window iw = weights::window(ids, ids_offset + i0 * 4, ids_offset + (i0 + ni) * 4, lim, op, "ids");
            const weights::Window ow = weights::window(out, out_offset + i0 * n_in * 4, out_offset + (i0 + ni) * n_in * 4, lim, op, "out");
            const GetRowsPush push{uint32_t(n_in),  uint32_t(n_rows), uint32_t(row0),   uint32_t(rows),
                                   tw.shift,        uint32_t(row_bytes), iw.shift / 4, ow.shift / 4,
                                   row0 == 0 ? 1u : 0u};
            weights::dispatch(s, pipe, layout.format, {tw.range, iw.range, ow.range}, push, uint32_t(groups_x), uint32_t(ni));
        }
    }
}

}  // namespace vkllm::ops
