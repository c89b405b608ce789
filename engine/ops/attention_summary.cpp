// Attention statistics per query row and head (shaders/attention_summary.comp): one workgroup
// per row.
#include <string>

#include "gpu/device.h"
#include "gpu/shader_ids.h"
#include "ops/dispatch_util.h"
#include "ops/probe_ops.h"
#include "ops/probe_push_constants.h"

namespace vkllm::ops {

void attention_summary(Stream& s, const TensorView& probs, bool has_sinks, const TensorView& q_pos,
                       const TensorView& kv_pos, const TensorView& stats, int n_head) {
    const char* op = "attention_summary";
    detail::require(n_head > 0 && kv_pos.elements() > 0, op,
                    "needs n_head > 0 and n_kv > 0, got " + std::to_string(n_head) + " and " +
                        std::to_string(kv_pos.elements()));
    const int64_t n_q = probs.rows, n_kv = kv_pos.elements();
    const uint64_t probs_offset = detail::checked_f32(probs, op, "probs");
    detail::require_shape(probs, n_q, int64_t(n_head) * n_kv, op, "probs");
    detail::require_packed(probs, op, "probs");
    const uint64_t q_pos_offset = detail::checked_vector(q_pos, gguf::TensorType::I32, n_q, op, "q_pos");
    const uint64_t kv_pos_offset = detail::checked_vector(kv_pos, gguf::TensorType::I32, n_kv, op, "kv_pos");
    const uint64_t stats_offset = detail::checked_f32(stats, op, "stats");
    detail::require_shape(stats, n_q, int64_t(n_head) * kAttentionStats, op, "stats");
    detail::require_packed(stats, op, "stats");
    const uint64_t rows = uint64_t(n_q) * uint64_t(n_head);
    detail::require(rows * uint64_t(n_kv) + rows < 0xffffffffull, op, "more than 2^32 probabilities");
    if (n_q == 0) return;
    gpu::Context& ctx = s.context();
    const detail::Window pw =
        detail::window(ctx, *probs.buffer, probs_offset, rows * uint64_t(n_kv) + (has_sinks ? rows : 0), op, "probs");
    const detail::Window qw = detail::window(ctx, *q_pos.buffer, q_pos_offset, uint64_t(n_q), op, "q_pos");
    const detail::Window kw = detail::window(ctx, *kv_pos.buffer, kv_pos_offset, uint64_t(n_kv), op, "kv_pos");
    const detail::Window sw = detail::window(ctx, *stats.buffer, stats_offset, rows * kAttentionStats, op, "stats");
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
