// Attention statistics per query row and head (shaders/attention_summary.comp): one workgroup
// per row.
#include <string>

#include "gpu/device.h"
#include "gpu/shader_ids.h"
#include "ops/dispatch_util.h"
#include "ops/probe_ops.h"
#include "ops/probe_push_constants.h"

namespace vkllm::ops {

void attention_summary(Stream& s, const Buffer& probs, uint64_t probs_offset, bool has_sinks, const Buffer& q_pos,
                       uint64_t q_pos_offset, const Buffer& kv_pos, const Buffer& stats, uint64_t stats_offset,
                       int64_t n_q, int n_head, int64_t n_kv) {
    const char* op = "attention_summary";
    detail::require(n_q >= 0 && n_head > 0 && n_kv > 0, op,
                    "needs n_q >= 0, n_head > 0 and n_kv > 0, got " + std::to_string(n_q) + ", " +
                        std::to_string(n_head) + ", " + std::to_string(n_kv));
    const uint64_t rows = uint64_t(n_q) * uint64_t(n_head);
    detail::require(rows * uint64_t(n_kv) + rows < 0xffffffffull, op, "more than 2^32 probabilities");
    if (n_q == 0) return;
    gpu::Context& ctx = s.context();
    const detail::Window pw =
        detail::window(ctx, probs, probs_offset, rows * uint64_t(n_kv) + (has_sinks ? rows : 0), op, "probs");
    const detail::Window qw = detail::window(ctx, q_pos, q_pos_offset, uint64_t(n_q), op, "q_pos");
    const detail::Window kw = detail::window(ctx, kv_pos, 0, uint64_t(n_kv), op, "kv_pos");
    const detail::Window sw = detail::window(ctx, stats, stats_offset, rows * kAttentionStats, op, "stats");
    const AttentionSummaryPush push{uint32_t(n_q), uint32_t(n_head), uint32_t(n_kv), has_sinks ? 1u : 0u,
                                    pw.shift,      qw.shift,         kw.shift,        sw.shift};
    const uint32_t wg = detail::workgroup_size(ctx, n_kv >= 2048 ? 256 : 64);
    const gpu::ShaderId shader =
        ctx.caps().subgroup_arithmetic ? gpu::ShaderId::attention_summary_sg : gpu::ShaderId::attention_summary;
    const auto& pipeline = ctx.pipeline(shader, 4, sizeof(push), {wg});
    const detail::Grid g = detail::grid_2d(ctx, rows, op);
    s.dispatch(pipeline, {pw.range, qw.range, kw.range, sw.range}, push, g.x, g.y);
}

}  // namespace vkllm::ops
