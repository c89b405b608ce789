// Top-k keys of each query row and max-pooled thumbnails of attention maps
// (shaders/attention_detail.comp): one workgroup per (row, head).
#include <string>

#include "gpu/device.h"
#include "gpu/shader_ids.h"
#include "ops/dispatch_util.h"
#include "ops/probe_ops.h"
#include "ops/probe_push_constants.h"

namespace vkllm::ops {

void attention_detail(Stream& s, const AttentionDetailArgs& a) {
    const char* op = "attention_detail";
    detail::require(a.n_head > 0 && a.kv_pos.elements() > 0, op,
                    "needs n_head > 0 and n_kv > 0, got " + std::to_string(a.n_head) + " and " +
                        std::to_string(a.kv_pos.elements()));
    detail::require(a.top_k >= 0 && a.top_k <= kMaxAttentionTopK, op,
                    "top_k must be 0.." + std::to_string(kMaxAttentionTopK) + ", got " + std::to_string(a.top_k));
    detail::require(a.cells >= 0 && a.cells <= kMaxAttentionCells, op,
                    "cells must be 0.." + std::to_string(kMaxAttentionCells) + ", got " + std::to_string(a.cells));
    detail::require(a.cell >= 1 && a.query_cell0 >= 0, op,
                    "needs cell >= 1 and query_cell0 >= 0, got " + std::to_string(a.cell) + " and " +
                        std::to_string(a.query_cell0));
    detail::require(a.top_k > 0 || a.cells > 0, op, "asks for neither top keys nor a thumbnail");
    const int64_t n_q = a.probs.rows, n_kv = a.kv_pos.elements(), H = a.n_head;
    const uint64_t probs_offset = detail::checked_f32(a.probs, op, "probs");
    detail::require_shape(a.probs, n_q, H * n_kv, op, "probs");
    detail::require_packed(a.probs, op, "probs");
    const uint64_t q_pos_offset = detail::checked_vector(a.q_pos, gguf::TensorType::I32, n_q, op, "q_pos");
    const uint64_t kv_pos_offset = detail::checked_vector(a.kv_pos, gguf::TensorType::I32, n_kv, op, "kv_pos");
    uint64_t top_offset = 0, thumb_offset = 0;
    if (a.top_k > 0) {
        top_offset = detail::checked(a.top, gguf::TensorType::I32, op, "top");
        detail::require_shape(a.top, n_q, H * a.top_k * 2, op, "top");
        detail::require_packed(a.top, op, "top");
        detail::require(a.top.buffer != a.probs.buffer, op, "top must not share the probabilities' buffer");
    }
    if (a.cells > 0) {
        thumb_offset = detail::checked(a.thumb, gguf::TensorType::I32, op, "thumb");
        detail::require_shape(a.thumb, H * a.cells, a.cells, op, "thumb");
        detail::require_packed(a.thumb, op, "thumb");
        detail::require(a.thumb.buffer != a.probs.buffer && (a.top_k == 0 || a.thumb.buffer != a.top.buffer), op,
                        "thumb must not share the probabilities' or top's buffer");
    }
    const uint64_t rows = uint64_t(n_q) * uint64_t(H);
    detail::require(rows * uint64_t(n_kv) < 0xffffffffull, op, "more than 2^32 probabilities");
    if (n_q == 0) return;
    gpu::Context& ctx = s.context();
    const detail::Window pw = detail::window(ctx, *a.probs.buffer, probs_offset, rows * uint64_t(n_kv), op, "probs");
    const detail::Window qw = detail::window(ctx, *a.q_pos.buffer, q_pos_offset, uint64_t(n_q), op, "q_pos");
    const detail::Window kw = detail::window(ctx, *a.kv_pos.buffer, kv_pos_offset, uint64_t(n_kv), op, "kv_pos");
    // An output not asked for binds a window of the other (the shader does not touch it).
    const TensorView& tv = a.top_k > 0 ? a.top : a.thumb;
    const TensorView& mv = a.cells > 0 ? a.thumb : a.top;
    const uint64_t t_first = a.top_k > 0 ? top_offset : thumb_offset;
    const uint64_t m_first = a.cells > 0 ? thumb_offset : top_offset;
    const uint64_t t_count = a.top_k > 0 ? rows * uint64_t(a.top_k) * 2 : uint64_t(H) * a.cells * a.cells;
    const uint64_t m_count = a.cells > 0 ? uint64_t(H) * a.cells * a.cells : rows * uint64_t(a.top_k) * 2;
    const detail::Window tw = detail::window(ctx, *tv.buffer, t_first, t_count, op, "top");
    const detail::Window mw = detail::window(ctx, *mv.buffer, m_first, m_count, op, "thumb");
    const AttentionDetailPush push{uint32_t(n_q),     uint32_t(H),        uint32_t(n_kv),          uint32_t(a.top_k),
                                   uint32_t(a.cells), uint32_t(a.cell),   uint32_t(a.query_cell0), pw.shift,
                                   qw.shift,          kw.shift,           tw.shift,                mw.shift};
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::attention_detail, 5, sizeof(push), {});
    const detail::Grid g = detail::grid_2d(ctx, rows, op);
    s.dispatch(pipeline, {pw.range, qw.range, kw.range, tw.range, mw.range}, push, g.x, g.y);
}

}  // namespace vkllm::ops
