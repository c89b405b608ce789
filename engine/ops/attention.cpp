// Attention over a KV cache (shaders/attention.comp, attention_combine.comp).
//
// One kernel serves prefill and decode. A workgroup owns a block of rows (queries x query heads
// of one kv head) and walks a range of keys in tiles with an online softmax. Prefill gets many
// row blocks; decode has a single query, so with a scratch buffer the keys are also split into
// ranges (split-K, "flash decoding") whose partial results a second pass combines.
#include <algorithm>
#include <bit>
#include <string>

#include "gpu/device.h"
#include "ops/dispatch_util.h"
#include "ops/ops.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

namespace {

constexpr uint32_t kThreads = 128;
constexpr uint32_t kMaxHeadsPerBlock = 8;
constexpr uint32_t kRowsPerBlock = 16;       // prefill: queries x heads per workgroup
constexpr uint64_t kTargetWorkgroups = 256;  // split-K aims for this many workgroups in flight
constexpr uint64_t kMinKeysPerSplit = 128;
constexpr uint64_t kMaxSplits = 128;

uint32_t pow2_ceil(uint64_t x) {
    uint32_t p = 1;
    while (p < x) p *= 2;
    return p;
}

uint32_t pow2_floor(uint64_t x) {
    uint32_t p = 1;
    while (uint64_t(p) * 2 <= x) p *= 2;
    return p;
}

uint64_t ceil_div(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// The launch shape of one attention call.
struct Plan {
    uint32_t wg = 0;           // invocations per workgroup
    uint32_t d = 0, dv = 0;    // head dims of k and v
    uint32_t gb = 1, bq = 1;   // heads and queries per workgroup
    uint32_t bk = 0;           // keys per tile
    uint32_t td = 0;           // invocations along dv in the output phase
    uint32_t group = 1, head_blocks = 1, q_blocks = 1;
    uint32_t n_splits = 1;
    uint32_t keys_per_split = 0;
};

void check_params(int64_t n_q, int64_t n_kv, const AttentionParams& p) {
    const char* op = "attention";
    detail::require(p.n_head > 0 && p.n_head_kv > 0 && p.head_dim > 0 && p.head_dim_v >= 0, op,
                    "n_head, n_head_kv and head_dim must be positive");
    detail::require(p.n_head % p.n_head_kv == 0, op,
                    "n_head " + std::to_string(p.n_head) + " is not a multiple of n_head_kv " +
                        std::to_string(p.n_head_kv));
    detail::require(p.window >= 0 && p.chunk >= 0 && p.softcap >= 0.0f && p.max_alibi_bias >= 0.0f, op,
                    "window, chunk, softcap and max_alibi_bias must be >= 0");
    detail::require(n_q >= 0 && n_kv >= 0 && n_q <= 0x7fffffff && n_kv <= 0x7fffffff, op,
                    "n_q and n_kv must be in [0, 2^31), got " + std::to_string(n_q) + " and " + std::to_string(n_kv));
}

// Picks the workgroup shape (fitting shared memory), then how far to split the keys: enough
// workgroups to fill a large GPU, no split shorter than kMinKeysPerSplit, and no more than
// `max_split_bytes` of partials.
Plan make_plan(const gpu::Context& ctx, int64_t n_q, int64_t n_kv, const AttentionParams& p, bool probs,
               uint64_t max_split_bytes) {
    const gpu::Capabilities& caps = ctx.caps();
    Plan plan;
    plan.wg = detail::workgroup_size(ctx, kThreads);
    detail::require(plan.wg >= 32, "attention", "needs workgroups of at least 32 invocations");
    plan.d = uint32_t(p.head_dim);
    plan.dv = uint32_t(p.value_dim());
    plan.group = uint32_t(p.n_head / p.n_head_kv);
    plan.gb = std::min({pow2_ceil(plan.group), kMaxHeadsPerBlock, plan.wg});
    // One query (decode) gets its own shape; any other count shares the prefill one, which keeps
    // the number of pipeline variants (and their compile time) small.
    plan.bq = n_q == 1 ? 1 : std::max<uint32_t>(1, kRowsPerBlock / plan.gb);
    // Shared memory: queries [R][D padded to vec4s], tile scores [R][BK], five words per row, two flags.
    for (;;) {
        const uint32_t rows = plan.gb * plan.bq;
        // Tiles of about 512 scores: few rows (decode) take long tiles, so each invocation scores
        // one key against all rows and every K row is loaded once.
        plan.bk = std::min(plan.wg, std::max<uint32_t>(32, 512 / rows));
        const uint64_t d_padded = (plan.d + 3) / 4 * 4;
        const uint64_t bytes = 4ull * (rows * d_padded + uint64_t(rows) * plan.bk + 5ull * rows + 2);
        if (bytes <= caps.max_shared_memory) break;
        if (plan.bq > 1) {
            plan.bq /= 2;
        } else if (plan.gb > 1) {
            plan.gb /= 2;
        } else {
            throw ShapeError("attention: head_dim " + std::to_string(p.head_dim) + " needs " + std::to_string(bytes) +
                             " bytes of shared memory, more than the device's " +
                             std::to_string(caps.max_shared_memory));
        }
    }
    plan.td = plan.dv >= plan.wg ? plan.wg : (plan.wg % plan.dv == 0 ? plan.dv : pow2_floor(plan.dv));
    plan.head_blocks = uint32_t(ceil_div(plan.group, plan.gb));
    plan.q_blocks = uint32_t(ceil_div(uint64_t(std::max<int64_t>(n_q, 1)), plan.bq));
    detail::require(uint64_t(p.n_head_kv) * plan.head_blocks <= caps.max_workgroup_count[1] &&
                        plan.q_blocks <= caps.max_workgroup_count[2],
                    "attention", std::to_string(n_q) + " queries of " + std::to_string(p.n_head) +
                                     " heads exceed the device's workgroup-count limits");

    const uint64_t keys = uint64_t(n_kv);
    plan.keys_per_split = uint32_t(std::max<uint64_t>(ceil_div(keys, plan.bk), 1) * plan.bk);
    if (probs || keys == 0) return plan;
    const uint64_t row_workgroups = uint64_t(p.n_head_kv) * plan.head_blocks * plan.q_blocks;
    const uint64_t bytes_per_split = uint64_t(n_q) * uint64_t(p.n_head) * (plan.dv + 2) * 4;
    uint64_t splits = std::min({ceil_div(kTargetWorkgroups, row_workgroups), ceil_div(keys, kMinKeysPerSplit),
                                kMaxSplits, uint64_t(caps.max_workgroup_count[0]), max_split_bytes / bytes_per_split});
    if (splits < 2) return plan;
    const uint64_t per_split = ceil_div(ceil_div(keys, splits), plan.bk) * plan.bk;
    plan.n_splits = uint32_t(ceil_div(keys, per_split));
    plan.keys_per_split = uint32_t(per_split);
    return plan;
}

}  // namespace

uint64_t attention_scratch_bytes(const gpu::Context& ctx, int64_t n_q, int64_t n_kv, const AttentionParams& p) {
    check_params(n_q, n_kv, p);
    const Plan plan = make_plan(ctx, n_q, n_kv, p, false, UINT64_MAX);
    if (plan.n_splits < 2) return 0;
    return uint64_t(n_q) * uint64_t(p.n_head) * plan.n_splits * (plan.dv + 2) * 4;
}

void attention(Stream& s, const TensorView& q_view, const TensorView& q_pos_view, const KvView& k_view,
               const KvView& v_view, const TensorView& kv_pos_view, const TensorView& out_view,
               const AttentionParams& p, const Buffer* sinks, const Buffer* probs, const Buffer* scratch) {
    const char* op = "attention";
    const int64_t n_q = q_view.rows, n_kv = kv_pos_view.elements();
    check_params(n_q, n_kv, p);
    const uint64_t q_offset = detail::checked_f32(q_view, op, "q");
    detail::require_shape(q_view, n_q, int64_t(p.n_head) * p.head_dim, op, "q");
    detail::require_packed(q_view, op, "q");
    // The query positions and the output are bound from where they start, which must be an
    // offset the device's storage alignment divides (the shader has no shift for them); the
    // key positions from their buffer's start.
    const uint64_t q_pos_offset = detail::checked_vector(q_pos_view, TensorType::I32, n_q, op, "q_pos");
    detail::require(detail::checked_vector(kv_pos_view, TensorType::I32, n_kv, op, "kv_pos") == 0, op,
                    "kv_pos must start at its buffer's start");
    const uint64_t out_offset = detail::checked_f32(out_view, op, "out");
    detail::require_shape(out_view, n_q, int64_t(p.n_head) * p.value_dim(), op, "out");
    detail::require_packed(out_view, op, "out");
    detail::require_kv(k_view, op, "k");
    detail::require_kv(v_view, op, "v");
    detail::require(k_view.type == v_view.type, op, "k and v caches must have one type");
    detail::require(k_view.row == int64_t(p.n_head_kv) * p.head_dim && v_view.row == int64_t(p.n_head_kv) * p.value_dim(),
                    op, "cache rows of " + std::to_string(k_view.row) + " (k) and " + std::to_string(v_view.row) +
                            " (v) values are not n_head_kv heads of head_dim and head_dim_v");
    detail::require(n_kv <= k_view.slots && n_kv <= v_view.slots, op,
                    std::to_string(n_kv) + " key positions exceed the caches' " + std::to_string(k_view.slots) +
                        " slots");
    const Buffer &q = *q_view.buffer, &q_pos = *q_pos_view.buffer, &k = *k_view.buffer, &v = *v_view.buffer;
    const Buffer &kv_pos = *kv_pos_view.buffer, &out = *out_view.buffer;
    const KvCacheType cache = k_view.type;
    if (n_q == 0) return;
    gpu::Context& ctx = s.context();
    const Plan plan = make_plan(ctx, n_q, n_kv, p, probs != nullptr, scratch ? scratch->size() : 0);
    const bool split = plan.n_splits > 1;

    const uint64_t q_rows = uint64_t(n_q) * uint64_t(p.n_head);  // (query, head) rows
    const uint64_t kv_rows = uint64_t(n_kv) * uint64_t(p.n_head_kv);
    const detail::Window qw = detail::window(ctx, q, q_offset, q_rows * plan.d, op, "q");
    const detail::Window qpw = detail::window(ctx, q_pos, q_pos_offset, uint64_t(n_q), op, "q_pos");
    detail::require(qpw.shift == 0, op, "q_pos must start at an offset the storage alignment divides");
    require_cache_type(ctx, cache, int64_t(p.n_head_kv) * plan.d, op);
    require_cache_type(ctx, cache, int64_t(p.n_head_kv) * plan.dv, op);
    const detail::Window kw = detail::cache_window(ctx, k, kv_rows * plan.d, cache, op, "k");
    const detail::Window vw = detail::cache_window(ctx, v, kv_rows * plan.dv, cache, op, "v");
    const detail::Window kpw = detail::window(ctx, kv_pos, 0, uint64_t(n_kv), op, "kv_pos");
    const detail::Window ow = detail::window(ctx, out, out_offset, q_rows * plan.dv, op, "out");
    detail::require(ow.shift == 0, op, "out must start at an offset the storage alignment divides");
    const detail::Window sw = sinks ? detail::window(ctx, *sinks, 0, uint64_t(p.n_head), op, "sinks") : qw;
    // With sinks the probabilities are followed by each row's sink probability.
    const uint64_t prob_count = q_rows * (uint64_t(n_kv) + (sinks ? 1 : 0));
    const detail::Window pw = probs ? detail::window(ctx, *probs, 0, prob_count, op, "probs") : ow;
    const detail::Window partw =
        split ? detail::window(ctx, *scratch, 0, q_rows * plan.n_splits * (plan.dv + 2), op, "scratch") : ow;

    AttentionPush push{};
    push.n_q = uint32_t(n_q);
    push.n_kv = uint32_t(n_kv);
    push.n_head = uint32_t(p.n_head);
    push.n_head_kv = uint32_t(p.n_head_kv);
    push.group = plan.group;
    push.head_blocks = plan.head_blocks;
    push.q_shift = qw.shift;
    push.keys_per_split = plan.keys_per_split;
    push.n_splits = plan.n_splits;
    push.flags = (p.causal ? 1u : 0u) | (sinks ? 2u : 0u) | (probs ? 4u : 0u) | (split ? 8u : 0u);
    push.window = p.window;
    push.chunk = p.chunk;
    push.scale = p.scale;
    push.softcap = p.softcap;
    const gpu::ShaderId shader = cache == KvCacheType::F16    ? gpu::ShaderId::attention_f16_kv
                                 : cache == KvCacheType::Q8_0 ? gpu::ShaderId::attention_q8_0_kv
                                                            : gpu::ShaderId::attention;
    // ALiBi's max bias is a specialization constant (a float, passed as its bits): one value per
    // model, and no ALiBi code in the pipelines of models without it.
    const uint32_t alibi = std::bit_cast<uint32_t>(p.max_alibi_bias);
    const auto& pipeline = ctx.pipeline(shader, 8, sizeof(AttentionPush),
                                        {plan.wg, plan.d, plan.dv, plan.gb, plan.bq, plan.bk, plan.td, alibi});
    s.dispatch(pipeline, {qw.range, qpw.range, kw.range, vw.range, kpw.range, split ? partw.range : ow.range, sw.range,
                          pw.range},
               push, plan.n_splits, uint32_t(p.n_head_kv) * plan.head_blocks, plan.q_blocks);
    if (!split) return;

    s.barrier("attention partials are complete before the combine pass reads them");
    AttentionCombinePush cpush{uint32_t(q_rows), uint32_t(p.n_head), plan.n_splits, plan.dv, sinks ? 1u : 0u};
    const uint32_t cwg = detail::workgroup_size(ctx, std::min<uint32_t>(128, pow2_ceil(plan.dv)));
    const auto& combine = ctx.pipeline(gpu::ShaderId::attention_combine, 3, sizeof(AttentionCombinePush), {cwg});
    const detail::Grid g = detail::grid_2d(ctx, q_rows, op);
    s.dispatch(combine, {partw.range, sw.range, ow.range}, cpush, g.x, g.y);
}

}  // namespace vkllm::ops
