// Mixture-of-experts ops, all on the GPU: the router (shaders/moe_route.comp), the counting sort
// by expert (moe_sort.comp), grouped expert matmuls (moe_matvec.comp for few tokens, tiled
// moe_matmul.comp over the sorted pairs for many, on the tensor cores where the device has NVIDIA's
// cooperative matrices), the weighted combine (moe_combine.comp) and
// the expert-load probe (moe_load.comp).
#include <algorithm>
#include <optional>
#include <string>

#include "gpu/device.h"
#include "ops/dispatch_util.h"
#include "ops/matmul_tiles.h"
#include "ops/ops.h"
#include "ops/push_constants.h"
#include "ops/weight_ops.h"

namespace vkllm::ops {

namespace {

using detail::require;

constexpr uint32_t kGatingSoftmax = 0, kGatingSigmoid = 1, kGatingNone = 2;  // as moe_route.comp

uint32_t next_pow2(uint32_t v) {
    uint32_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

// Tile shape of moe_matmul.comp (as matmul.comp's): BM rows x BN pairs, BK of K per step,
// TM x TN outputs per thread.
struct Tiles {
    uint32_t bm, bn, bk, tm, tn;
    uint32_t threads() const { return (bm / tm) * (bn / tn); }
    uint32_t shared_bytes() const { return 4 * bk * (bm + bn) + 8 * bn + 8; }
};

// The largest tile the device holds whose pair columns the experts fill at least half of, on
// average over the experts that receive pairs; on a GPU, smaller while the grid of n_out rows x
// n_pairs would leave compute units idle (matmul_tiles.h).
Tiles pick_tiles(const gpu::Capabilities& caps, double pairs_per_expert, uint64_t n_out, uint64_t n_pairs) {
    static constexpr Tiles kCandidates[] = {
        {128, 128, 16, 8, 8},  // 256 threads
        {64, 64, 16, 4, 4},    // 256 threads
        {64, 32, 16, 4, 4},    // 128 threads
    };
    static constexpr Tiles kSmallest = {32, 32, 16, 4, 4};  // 64 threads
    const uint32_t max_threads = std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0]);
    for (const Tiles& t : kCandidates) {
        if (t.shared_bytes() > caps.max_shared_memory || t.threads() > max_threads) continue;
        if (pairs_per_expert <= double(t.bn) / 2) continue;
        if (grid_leaves_units_idle(caps, n_out, n_pairs, t.bm, t.bn)) continue;
        return t;
    }
    return kSmallest;
}

void check_routing(const MoeRouting& r, const char* op) {
    require(r.experts && r.experts->valid(), op, "the routing has no expert-id buffer (moe_route's experts)");
    require(r.n_tokens >= 0 && r.n_tokens < (int64_t(1) << 31), op,
            "n_tokens " + std::to_string(r.n_tokens) + " is out of range");
    require(r.top_k >= 1 && r.top_k <= kMaxExperts, op, "top_k " + std::to_string(r.top_k) + " is out of range");
    require(uint64_t(r.n_tokens) * uint64_t(r.top_k) < (uint64_t(1) << 31), op, "too many (token, slot) pairs");
}

// A routing buffer written by one op and read through MoeRouting (its Buffer pointers), which
// reads from the buffer's start: the view must start there.
void require_at_start(const TensorView& v, gguf::TensorType type, int64_t n, const char* op, const char* what) {
    const uint64_t offset = detail::checked_vector(v, type, n, op, what);
    require(offset == 0, op, std::string(what) + " must start at its buffer's start (MoeRouting reads it there)");
}

}  // namespace

void moe_route(Stream& s, const TensorView& logits_view, const RouterParams& p, const TensorView& experts_view,
               const TensorView& weights_view) {
    const char* op = "moe_route";
    const uint64_t logits_offset = detail::checked_f32(logits_view, op, "logits");
    detail::require_shape(logits_view, logits_view.rows, p.n_expert, op, "logits");
    detail::require_packed(logits_view, op, "logits");
    const int64_t n_tokens = logits_view.rows;
    require(p.top_k >= 1, op, "top_k " + std::to_string(p.top_k) + " must be positive");
    require_at_start(experts_view, TensorType::I32, n_tokens * p.top_k, op, "experts");
    require_at_start(weights_view, TensorType::F32, n_tokens * p.top_k, op, "weights");
    const Buffer &logits = *logits_view.buffer, &experts = *experts_view.buffer, &weights = *weights_view.buffer;
    require(p.n_expert >= 1 && p.n_expert <= kMaxExperts, op,
            "n_expert " + std::to_string(p.n_expert) + " must be in [1, " + std::to_string(kMaxExperts) + "]");
    require(p.top_k >= 1 && p.top_k <= p.n_expert, op,
            "top_k " + std::to_string(p.top_k) + " must be in [1, n_expert = " + std::to_string(p.n_expert) + "]");
    require(p.n_group >= 1, op, "n_group must be at least 1");
    if (p.n_group > 1) {
        require(p.n_expert % p.n_group == 0, op,
                "n_expert " + std::to_string(p.n_expert) + " is not a multiple of n_group " +
                    std::to_string(p.n_group));
        require(p.topk_group >= 1 && p.topk_group <= p.n_group, op,
                "topk_group " + std::to_string(p.topk_group) + " must be in [1, n_group]");
        require(p.top_k <= p.topk_group * (p.n_expert / p.n_group), op,
                "top_k " + std::to_string(p.top_k) + " exceeds the experts in the kept groups");
    }
    require(n_tokens >= 0 && n_tokens < (int64_t(1) << 31), op, "n_tokens " + std::to_string(n_tokens) + " is out of range");
    if (n_tokens == 0) return;

    gpu::Context& ctx = s.context();
    const uint64_t n_out = uint64_t(n_tokens) * uint64_t(p.top_k);
    const detail::Window lw =
        detail::window(ctx, logits, logits_offset, uint64_t(n_tokens) * uint64_t(p.n_expert), op, "logits");
    const detail::Window ew = detail::window(ctx, experts, 0, n_out, op, "experts");
    const detail::Window ww = detail::window(ctx, weights, 0, n_out, op, "weights");
    const detail::Window bw =
        p.selection_bias ? detail::window(ctx, *p.selection_bias, 0, uint64_t(p.n_expert), op, "selection_bias") : lw;

    const uint32_t gating = p.softmax_after_topk ? kGatingNone
                            : p.gating == RouterParams::Sigmoid ? kGatingSigmoid
                                                                : kGatingSoftmax;
    const MoeRoutePush push{uint32_t(n_tokens), uint32_t(p.top_k), lw.shift, p.selection_bias ? bw.shift : 0u,
                            ew.shift, ww.shift, gating, p.selection_bias ? 1u : 0u, p.norm_topk ? 1u : 0u,
                            uint32_t(p.n_group), uint32_t(p.topk_group),
                            p.weights_scale == 0.0f ? 1.0f : p.weights_scale};
    const uint32_t wg = detail::workgroup_size(ctx, std::clamp<uint32_t>(next_pow2(uint32_t(p.n_expert)), 32, 256));
    const auto& pipe = ctx.pipeline(gpu::ShaderId::moe_route, 4, sizeof(MoeRoutePush), {wg, uint32_t(p.n_expert)});
    const detail::Grid g = detail::grid_2d(ctx, uint64_t(n_tokens), op);
    s.dispatch(pipe, {lw.range, bw.range, ew.range, ww.range}, push, g.x, g.y);
}

uint64_t moe_sort_ints(int n_expert, int64_t n_pairs) {
    require(n_expert >= 1 && n_pairs >= 0, "moe_sort_ints", "needs n_expert >= 1 and n_pairs >= 0");
    return 2 * uint64_t(n_expert) + 1 + uint64_t(n_pairs);
}

void moe_sort(Stream& s, const TensorView& experts_view, int n_expert, const TensorView& sorted_view) {
    const char* op = "moe_sort";
    const int64_t n_pairs = experts_view.elements();
    require(experts_view.rows >= 0 && experts_view.cols >= 0, op, "experts has a negative shape");
    require(n_expert >= 1 && n_expert <= kMaxExperts, op,
            "n_expert " + std::to_string(n_expert) + " must be in [1, " + std::to_string(kMaxExperts) + "]");
    require(n_pairs >= 0 && n_pairs < (int64_t(1) << 31), op, "n_pairs " + std::to_string(n_pairs) + " is out of range");
    require_at_start(experts_view, TensorType::I32, n_pairs, op, "experts");
    require_at_start(sorted_view, TensorType::I32, int64_t(moe_sort_ints(n_expert, n_pairs)), op, "sorted");
    const Buffer &experts = *experts_view.buffer, &sorted = *sorted_view.buffer;
    gpu::Context& ctx = s.context();
    const detail::Window ew = detail::window(ctx, experts, 0, uint64_t(n_pairs), op, "experts");
    const detail::Window sw = detail::window(ctx, sorted, 0, moe_sort_ints(n_expert, n_pairs), op, "sorted");
    const MoeSortPush push{uint32_t(n_pairs), ew.shift, sw.shift};
    const auto& pipe = ctx.pipeline(gpu::ShaderId::moe_sort, 2, sizeof(MoeSortPush),
                                    {detail::workgroup_size(ctx, 256), uint32_t(n_expert)});
    s.dispatch(pipe, {ew.range, sw.range}, push, 1);
}

namespace {

// The expert matmuls' activation bindings: x rows per token or per pair, y rows per pair; each in
// one binding.
struct ActivationWindows {
    weights::Window x, y;
    uint32_t x_base = 0, x_vec4 = 0;  // x_vec4: x quads 16-byte aligned
    uint32_t x_stride = 0, y_stride = 0;  // floats between rows
};
// x: [n_tokens or n_pairs, n_in], y: [n_pairs, n_out], f32 views; their rows packed unless
// `strided` (the matrix-vector kernel, which takes any row stride).
ActivationWindows activation_windows(const TensorView& x_view, bool x_per_pair, const MoeRouting& r, uint64_t n_in,
                                     uint64_t n_out, const TensorView& y_view, const weights::Limits& lim,
                                     const char* op, bool strided = false) {
    const uint64_t usable = lim.max_binding - lim.align - 4;
    const uint64_t n_pairs = uint64_t(r.n_tokens) * uint64_t(r.top_k);
    const uint64_t x_rows = x_per_pair ? n_pairs : uint64_t(r.n_tokens);
    const uint64_t x_offset = detail::checked_f32(x_view, op, "x");
    const uint64_t y_offset = detail::checked_f32(y_view, op, "y");
    detail::require_shape(x_view, int64_t(x_rows), int64_t(n_in), op, x_per_pair ? "x (a row per pair)" : "x (a row per token)");
    detail::require_shape(y_view, int64_t(n_pairs), int64_t(n_out), op, "y");
    require(strided || (x_view.packed() && y_view.packed()), op, "x and y must have packed rows");
    const uint64_t xs = uint64_t(x_view.stride()), ys = uint64_t(y_view.stride());
    const Buffer &x = *x_view.buffer, &y = *y_view.buffer;
    // The span of each: every row's start, the last row's elements.
    const uint64_t x_span = x_rows ? (x_rows - 1) * xs + n_in : 0, y_span = n_pairs ? (n_pairs - 1) * ys + n_out : 0;
    const uint64_t x_end = (x_offset + x_span) * 4, y_end = (y_offset + y_span) * 4;
    require(x.valid() && x_end <= x.size(), op,
            "x needs " + std::to_string(x_end) + " bytes, its buffer holds " + std::to_string(x.size()));
    require(y.valid() && y_end <= y.size(), op,
            "y needs " + std::to_string(y_end) + " bytes, its buffer holds " + std::to_string(y.size()));
    require(&x != &y || x_end <= y_offset * 4 || y_end <= x_offset * 4, op, "x and y overlap in the same buffer");
    require(x_span * 4 <= usable && y_span * 4 <= usable, op,
            "the activations of " + std::to_string(r.n_tokens) + " tokens exceed one binding (" +
                std::to_string(lim.max_binding) + " bytes): route fewer tokens per call");
    ActivationWindows a;
    a.x = weights::window(x, x_offset * 4, x_end, lim, op, "x");
    a.y = weights::window(y, y_offset * 4, y_end, lim, op, "y");
    a.x_base = a.x.shift / 4;
    a.x_vec4 = a.x_base % 4 == 0 && n_in % 4 == 0 && xs % 4 == 0 ? 1u : 0u;
    a.x_stride = uint32_t(xs);
    a.y_stride = uint32_t(ys);
    return a;
}

}  // namespace

void moe_matmul(Stream& s, const ExpertWeights& w, const TensorView& x, bool x_per_pair, const MoeRouting& r,
                const TensorView& y, bool round_x) {
    const char* op = "moe_matmul";
    check_routing(r, op);
    require(w.n_expert >= 1 && w.n_expert <= kMaxExperts, op,
            "n_expert " + std::to_string(w.n_expert) + " must be in [1, " + std::to_string(kMaxExperts) + "]");
    require(w.n_out >= 1 && w.n_out < (int64_t(1) << 31), op, "n_out " + std::to_string(w.n_out) + " is out of range");
    const weights::Layout layout =
        weights::checked_layout(Weight{w.type, w.buffer, w.n_in, w.n_out * w.n_expert, w.offset, w.grouped}, op);
    require(!round_x || (r.sorted == nullptr && matvec_rounds_activations(w.type)), op,
            "round_x needs the matrix-vector path (no sort) and a weight type whose matvec rounds activations");
    const uint64_t n_pairs = uint64_t(r.n_tokens) * uint64_t(r.top_k);
    gpu::Context& ctx = s.context();
    const gpu::Capabilities& caps = ctx.caps();
    const weights::Limits lim = weights::limits(caps);
    const uint64_t usable = lim.max_binding - lim.align - 4;  // a window after its alignment slack
    const uint64_t n_in = uint64_t(w.n_in), n_out = uint64_t(w.n_out), n_expert = uint64_t(w.n_expert);
    // The tiled path needs the sort and pays off when experts get a few pairs each on average;
    // the matrix-vector kernel takes x and y rows at any stride.
    const bool tiled = r.sorted != nullptr && r.n_tokens > 1 && n_pairs >= 2 * n_expert;
    const ActivationWindows act = activation_windows(x, x_per_pair, r, n_in, n_out, y, lim, op, /*strided=*/!tiled);
    if (n_pairs == 0) return;
    const uint64_t row_bytes = layout.row_bytes, expert_bytes = row_bytes * n_out;
    require(row_bytes <= usable, op, "one row of " + std::to_string(n_in) + " elements does not fit one binding");

    const weights::Window &xw = act.x, &yw = act.y;
    const uint32_t x_base = act.x_base, x_vec4 = act.x_vec4;

    // Without a bias, binding 4 takes the weight window as a placeholder: a read-only buffer, so
    // that the next window's dispatch reads nothing the previous one wrote (y was the placeholder
    // once, a read-after-write hazard for the synchronization validation).
    weights::Window bias_w{yw.range, 0};
    if (w.bias) {
        require(w.bias->valid(), op, "the expert bias buffer is not allocated");
        bias_w = weights::window(*w.bias, 0, n_expert * n_out * 4, lim, op, "expert bias");
    }

    const double pairs_per_expert = double(n_pairs) / double(std::min(n_expert, n_pairs));
    const Tiles tiles = pick_tiles(caps, pairs_per_expert, n_out, n_pairs);
    // The tiled kernel on the tensor cores where the device and build have it (matmul_tiles.h).
    const std::optional<CoopmatPlan> coop =
        tiled ? coopmat_moe_plan(caps, layout.format, n_out, pairs_per_expert, n_pairs) : std::nullopt;
    const uint32_t tile_rows = coop ? coop->tiles.bm : tiles.bm, tile_pairs = coop ? coop->tiles.bn : tiles.bn;
    const weights::MatvecShape mv = weights::matvec_shape(caps, n_in / 32);  // as matvec's
    const uint32_t mv_threads = mv.threads, mv_rows = mv.rows;
    const gpu::Pipeline& pipe =
        coop    ? ctx.pipeline(coop->shader, layout.format.bindings(5), sizeof(MoeMatmulPush),
                               with_grouped(coop->tiles.spec(), layout))
        : tiled ? ctx.pipeline(layout.format.shaders.moe_matmul, layout.format.bindings(5), sizeof(MoeMatmulPush),
                             {tiles.threads(), tiles.bm, tiles.bn, tiles.bk, tiles.tm, tiles.tn, matmul_prefetch(caps),
                              layout.aligned_spec()})
              : ctx.pipeline(weights::matvec_shader(caps, weights::MatvecOp::MoeMatvec, w.type, round_x),
                             layout.format.bindings(5),
                             sizeof(MoeMatvecPush),
                             {mv_threads, mv_rows, round_x ? 1u : 0u, weights::matvec_rolled(caps), layout.aligned_spec()});

    // Weight windows: whole experts when an expert's rows fit one binding and one grid, else row
    // ranges of one expert at a time.
    const uint64_t grid_rows = uint64_t(lim.max_groups[0]) * (tiled ? tile_rows : mv_rows);
    const uint64_t rows_per_window = std::min({n_out, usable / row_bytes, grid_rows});
    const uint64_t experts_per_window =
        rows_per_window == n_out ? std::clamp<uint64_t>(usable / expert_bytes, 1, n_expert) : 1;

    weights::Window sort_w{yw.range, 0}, ids_w{yw.range, 0};
    if (tiled) {
        const uint64_t ints = moe_sort_ints(int(n_expert), int64_t(n_pairs));
        require(r.sorted->valid() && r.sorted->size() >= ints * 4, op,
                "the sort buffer holds " + std::to_string(r.sorted->size()) + " bytes; moe_sort_ints needs " +
                    std::to_string(ints * 4));
        sort_w = weights::window(*r.sorted, 0, ints * 4, lim, op, "sorted pairs");
    } else {
        ids_w = weights::window(*r.experts, 0, n_pairs * 4, lim, op, "expert ids");
    }

    for (uint64_t e0 = 0; e0 < n_expert; e0 += experts_per_window) {
        const uint64_t ec = std::min(experts_per_window, n_expert - e0);
        for (uint64_t r0 = 0; r0 < n_out; r0 += rows_per_window) {
            const uint64_t nr = std::min(rows_per_window, n_out - r0);
            const uint64_t begin = w.offset + (e0 * n_out + r0) * row_bytes;
            const weights::Window ww =
                weights::window(*w.buffer, begin, begin + (ec - 1) * expert_bytes + nr * row_bytes, lim, op, "weight");
            const uint32_t expert_stride = ec > 1 ? uint32_t(expert_bytes) : 0u;  // < 4 GiB when ec > 1
            const uint32_t y_base = yw.shift / 4 + uint32_t(r0), bias_base = bias_w.shift / 4 + uint32_t(r0);
            const gpu::BufferRange bias_range = w.bias ? bias_w.range : ww.range;
            if (tiled) {
                // Tiles: each expert takes ceil(count / BN), so at most n_pairs / BN plus one per expert.
                const uint64_t n_tiles = (n_pairs + tile_pairs - 1) / tile_pairs + std::min(ec, n_pairs);
                const uint64_t gx = (nr + tile_rows - 1) / tile_rows;
                for (uint64_t t0 = 0; t0 < n_tiles; t0 += lim.max_groups[1]) {
                    const uint64_t gy = std::min<uint64_t>(lim.max_groups[1], n_tiles - t0);
                    const MoeMatmulPush push{uint32_t(n_in),  uint32_t(nr),       ww.shift,
                                             uint32_t(row_bytes), expert_stride,  uint32_t(e0),
                                             uint32_t(ec),    x_base,             y_base,
                                             uint32_t(n_out), sort_w.shift / 4,   uint32_t(n_expert),
                                             uint32_t(r.top_k), x_per_pair ? 1u : 0u, x_vec4,
                                             uint32_t(t0),    w.bias ? 1u : 0u,   bias_base,
                                             uint32_t(n_out)};
                    weights::dispatch(s, pipe, layout.format, {ww.range, xw.range, yw.range, sort_w.range, bias_range},
                                      push, uint32_t(gx), uint32_t(gy));
                }
            } else {
                const uint64_t gx = (nr + mv_rows - 1) / mv_rows;
                for (uint64_t p0 = 0; p0 < n_pairs; p0 += lim.max_groups[1]) {
                    const uint64_t gy = std::min<uint64_t>(lim.max_groups[1], n_pairs - p0);
                    const MoeMatvecPush push{uint32_t(n_in),  uint32_t(nr),       ww.shift,
                                             uint32_t(row_bytes), expert_stride,  uint32_t(e0),
                                             uint32_t(ec),    x_base,             y_base,
                                             act.y_stride,    ids_w.shift / 4,    uint32_t(p0),
                                             uint32_t(gy),    uint32_t(r.top_k),  x_per_pair ? 1u : 0u,
                                             x_vec4,          w.bias ? 1u : 0u,   bias_base,
                                             uint32_t(n_out), 0u,                 act.x_stride};
                    weights::dispatch(s, pipe, layout.format, {ww.range, xw.range, yw.range, ids_w.range, bias_range},
                                      push, uint32_t(gx), uint32_t(gy));
                }
            }
        }
    }
}

namespace {

// The bytes one binding must span for the fused pair: gate's experts through up's.
bool swiglu_experts(const ExpertWeights& gate, const ExpertWeights& up, uint64_t* span, uint64_t* row_bytes) {
    if (gate.buffer != up.buffer || gate.type != up.type || gate.grouped != up.grouped || gate.n_in != up.n_in ||
        gate.n_out != up.n_out ||
        gate.n_expert != up.n_expert || gate.bias || up.bias || up.offset < gate.offset || gate.offset % 4 ||
        up.offset % 4)
        return false;
    weights::Format f;
    if (!weights::gpu_format(gate.type, &f) || gate.n_in % f.block_elems) return false;
    *row_bytes = uint64_t(gate.n_in) / f.block_elems * f.block_bytes;
    *span = up.offset - gate.offset + *row_bytes * uint64_t(up.n_out) * uint64_t(up.n_expert);
    return true;
}

}  // namespace

bool moe_matvec_swiglu_fits(const gpu::Context& ctx, const ExpertWeights& gate, const ExpertWeights& up) {
    uint64_t span = 0, row_bytes = 0;
    if (!swiglu_experts(gate, up, &span, &row_bytes)) return false;
    const weights::Limits lim = weights::limits(ctx.caps());
    const uint64_t usable = lim.max_binding - lim.align - 4;
    const weights::MatvecShape mv = weights::matvec_shape(ctx.caps(), uint64_t(gate.n_in) / 32, /*glu=*/true);
    return span <= usable && span < (uint64_t(1) << 32) &&
           (uint64_t(gate.n_out) + mv.rows - 1) / mv.rows <= lim.max_groups[0];
}

void moe_matvec_swiglu(Stream& s, const ExpertWeights& gate, const ExpertWeights& up, const TensorView& x,
                       bool x_per_pair, const MoeRouting& r, const TensorView& y, bool round_x) {
    const char* op = "moe_matvec_swiglu";
    check_routing(r, op);
    gpu::Context& ctx = s.context();
    require(gate.n_expert >= 1 && gate.n_expert <= kMaxExperts, op,
            "n_expert " + std::to_string(gate.n_expert) + " must be in [1, " + std::to_string(kMaxExperts) + "]");
    weights::Layout layout =
        weights::checked_layout(Weight{gate.type, gate.buffer, gate.n_in, gate.n_out * gate.n_expert, gate.offset, gate.grouped}, op);
    layout.and_aligned(
        weights::checked_layout(Weight{up.type, up.buffer, up.n_in, up.n_out * up.n_expert, up.offset, up.grouped}, op));
    require(moe_matvec_swiglu_fits(ctx, gate, up), op,
            "gate and up must be one type and shape without bias in one buffer (gate first), within one binding");
    require(!round_x || matvec_rounds_activations(gate.type), op, "round_x needs a weight type whose matvec rounds");
    const uint64_t n_pairs = uint64_t(r.n_tokens) * uint64_t(r.top_k);
    const gpu::Capabilities& caps = ctx.caps();
    const weights::Limits lim = weights::limits(caps);
    const uint64_t n_in = uint64_t(gate.n_in), n_out = uint64_t(gate.n_out), n_expert = uint64_t(gate.n_expert);
    const ActivationWindows act = activation_windows(x, x_per_pair, r, n_in, n_out, y, lim, op);
    if (n_pairs == 0) return;
    uint64_t span = 0, row_bytes = 0;
    swiglu_experts(gate, up, &span, &row_bytes);
    const weights::Window ww = weights::window(*gate.buffer, gate.offset, gate.offset + span, lim, op, "gate and up");
    const weights::Window ids_w = weights::window(*r.experts, 0, n_pairs * 4, lim, op, "expert ids");
    const weights::MatvecShape mv = weights::matvec_shape(caps, n_in / 32, /*glu=*/true);
    const gpu::Pipeline& pipe =
        ctx.pipeline(weights::matvec_shader(caps, weights::MatvecOp::MoeMatvecSwiglu, gate.type, round_x),
                     layout.format.bindings(5),
                     sizeof(MoeMatvecPush),
                     {mv.threads, mv.rows, round_x ? 1u : 0u, weights::matvec_rolled(caps), layout.aligned_spec()});
    const uint64_t gx = (n_out + mv.rows - 1) / mv.rows;
    for (uint64_t p0 = 0; p0 < n_pairs; p0 += lim.max_groups[1]) {
        const uint64_t gy = std::min<uint64_t>(lim.max_groups[1], n_pairs - p0);
        const MoeMatvecPush push{uint32_t(n_in),      uint32_t(n_out),  ww.shift,          uint32_t(row_bytes),
                                 uint32_t(row_bytes * n_out), 0u,      uint32_t(n_expert), act.x_base,
                                 act.y.shift / 4,     uint32_t(n_out),  ids_w.shift / 4,   uint32_t(p0),
                                 uint32_t(gy),        uint32_t(r.top_k), x_per_pair ? 1u : 0u, act.x_vec4,
                                 0u,                  0u,               0u,
                                 uint32_t(up.offset - gate.offset)};
        // Binding 4 (the bias) is unused: the weight window stands in, read-only.
        weights::dispatch(s, pipe, layout.format, {ww.range, act.x.range, act.y.range, ids_w.range, ww.range}, push,
                          uint32_t(gx), uint32_t(gy));
    }
}

void moe_combine(Stream& s, const TensorView& y_view, const MoeRouting& r, const TensorView& out_view, bool accumulate) {
    const char* op = "moe_combine";
    check_routing(r, op);
    const uint64_t y_offset = detail::checked_f32(y_view, op, "y");
    const uint64_t out_offset = detail::checked_f32(out_view, op, "out");
    const int64_t n = out_view.cols;
    detail::require_shape(y_view, r.n_tokens * r.top_k, n, op, "y");
    detail::require_shape(out_view, r.n_tokens, n, op, "out");
    require(y_view.packed() && out_view.packed(), op, "y and out must have packed rows");
    const Buffer &y = *y_view.buffer, &out = *out_view.buffer;
    require(r.weights && r.weights->valid(), op, "the routing has no weight buffer (moe_route's weights)");
    require(n >= 1, op, "row length " + std::to_string(n) + " must be positive");
    const uint64_t n_pairs = uint64_t(r.n_tokens) * uint64_t(r.top_k), values = uint64_t(r.n_tokens) * uint64_t(n);
    require(values < (uint64_t(1) << 32) && n_pairs * uint64_t(n) < (uint64_t(1) << 32), op,
            "more than 2^32 values");
    if (values == 0) return;
    require(&y != &out || (y_offset + n_pairs * uint64_t(n) <= out_offset || out_offset + values <= y_offset), op,
            "y and out overlap in the same buffer");
    gpu::Context& ctx = s.context();
    const detail::Window yw = detail::window(ctx, y, y_offset, n_pairs * uint64_t(n), op, "y");
    const detail::Window ww = detail::window(ctx, *r.weights, 0, n_pairs, op, "weights");
    const detail::Window ow = detail::window(ctx, out, out_offset, values, op, "out");
    const MoeCombinePush push{uint32_t(n), uint32_t(r.n_tokens), uint32_t(r.top_k), yw.shift, ww.shift, ow.shift,
                              accumulate ? 1u : 0u};
    const uint32_t threads = detail::workgroup_size(ctx, 256);
    const uint32_t groups =
        uint32_t(std::clamp<uint64_t>((values + threads - 1) / threads, 1, ctx.caps().max_workgroup_count[0]));
    const auto& pipe = ctx.pipeline(gpu::ShaderId::moe_combine, 3, sizeof(MoeCombinePush), {threads});
    s.dispatch(pipe, {yw.range, ww.range, ow.range}, push, groups);
}

void moe_expert_load(Stream& s, const MoeRouting& r, const TensorView& load_view, bool accumulate) {
    const char* op = "moe_expert_load";
    check_routing(r, op);
    const uint64_t load_offset = detail::checked_f32(load_view, op, "load");
    detail::require_shape(load_view, load_view.rows, 2, op, "load");
    detail::require_packed(load_view, op, "load");
    const int64_t n_expert = load_view.rows;
    require(r.weights && r.weights->valid(), op, "the routing has no weight buffer (moe_route's weights)");
    require(n_expert >= 1 && n_expert <= kMaxExperts, op,
            "n_expert " + std::to_string(n_expert) + " must be in [1, " + std::to_string(kMaxExperts) + "]");
    const uint64_t n_pairs = uint64_t(r.n_tokens) * uint64_t(r.top_k);
    gpu::Context& ctx = s.context();
    const detail::Window ew = detail::window(ctx, *r.experts, 0, n_pairs, op, "experts");
    const detail::Window ww = detail::window(ctx, *r.weights, 0, n_pairs, op, "weights");
    const detail::Window lw = detail::window(ctx, *load_view.buffer, load_offset, 2 * uint64_t(n_expert), op, "load");
    const MoeLoadPush push{uint32_t(n_pairs), uint32_t(n_expert), ew.shift, ww.shift, lw.shift, accumulate ? 1u : 0u};
    const auto& pipe = ctx.pipeline(gpu::ShaderId::moe_load, 3, sizeof(MoeLoadPush), {detail::workgroup_size(ctx, 64)});
    const detail::Grid g = detail::grid_2d(ctx, uint64_t(n_expert), op);
    s.dispatch(pipe, {ew.range, ww.range, lw.range}, push, g.x, g.y);
}

}  // namespace vkllm::ops
