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
#include "ops/moe_bindings.h"
#include "ops/ops.h"
#include "ops/push_constants.h"
#include "ops/weight_ops.h"

namespace vkllm::ops {

namespace {

using detail::require;
using moe_detail::ActivationWindows;
using moe_detail::ExpertWindow;
using moe_detail::activation_windows;
using moe_detail::check_routing;
using moe_detail::expert_bias_window;
using moe_detail::expert_matvecs;
using moe_detail::for_each_expert_window;

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
    const uint64_t row_bytes = layout.row_bytes;
    require(row_bytes <= usable, op, "one row of " + std::to_string(n_in) + " elements does not fit one binding");

    if (!tiled) {
        const weights::MatvecShape mv = weights::matvec_shape(caps, n_in / 32);  // as matvec's
        const gpu::Pipeline& pipe =
            ctx.pipeline(weights::matvec_shader(caps, weights::MatvecOp::MoeMatvec, w.type, round_x),
                         layout.format.bindings(5), sizeof(MoeMatvecPush),
                         {mv.threads, mv.rows, round_x ? 1u : 0u, weights::matvec_rolled(caps), layout.aligned_spec()});
        expert_matvecs(s, w, layout, r, x_per_pair, act, pipe, mv.rows, op);
        return;
    }

    const weights::Window &xw = act.x, &yw = act.y;
    const weights::Window bias_w = expert_bias_window(w, yw, lim, op);
    const double pairs_per_expert = double(n_pairs) / double(std::min(n_expert, n_pairs));
    const Tiles tiles = pick_tiles(caps, pairs_per_expert, n_out, n_pairs);
    // The tiled kernel on the tensor cores where the device and build have it (matmul_tiles.h).
    const std::optional<CoopmatPlan> coop = coopmat_moe_plan(caps, layout.format, n_out, pairs_per_expert, n_pairs);
    const uint32_t tile_rows = coop ? coop->tiles.bm : tiles.bm, tile_pairs = coop ? coop->tiles.bn : tiles.bn;
    const gpu::Pipeline& pipe =
        coop ? ctx.pipeline(coop->shader, layout.format.bindings(5), sizeof(MoeMatmulPush),
                            with_grouped(coop->tiles.spec(), layout))
             : ctx.pipeline(layout.format.shaders.moe_matmul, layout.format.bindings(5), sizeof(MoeMatmulPush),
                            {tiles.threads(), tiles.bm, tiles.bn, tiles.bk, tiles.tm, tiles.tn, matmul_prefetch(caps),
                             layout.aligned_spec()});

    const uint64_t ints = moe_sort_ints(int(n_expert), int64_t(n_pairs));
    require(r.sorted->valid() && r.sorted->size() >= ints * 4, op,
            "the sort buffer holds " + std::to_string(r.sorted->size()) + " bytes; moe_sort_ints needs " +
                std::to_string(ints * 4));
    const weights::Window sort_w = weights::window(*r.sorted, 0, ints * 4, lim, op, "sorted pairs");

    for_each_expert_window(w, row_bytes, lim, tile_rows, op, [&](const ExpertWindow& win) {
        const uint32_t y_base = yw.shift / 4 + uint32_t(win.r0), bias_base = bias_w.shift / 4 + uint32_t(win.r0);
        // Without a bias, binding 4 takes the weight window as a read-only placeholder.
        const gpu::BufferRange bias_range = w.bias ? bias_w.range : win.w.range;
        // Tiles: each expert takes ceil(count / BN), so at most n_pairs / BN plus one per expert.
        const uint64_t n_tiles = (n_pairs + tile_pairs - 1) / tile_pairs + std::min(win.ec, n_pairs);
        const uint64_t gx = (win.nr + tile_rows - 1) / tile_rows;
        for (uint64_t t0 = 0; t0 < n_tiles; t0 += lim.max_groups[1]) {
            const uint64_t gy = std::min<uint64_t>(lim.max_groups[1], n_tiles - t0);
            const MoeMatmulPush push{uint32_t(n_in),      uint32_t(win.nr),     win.w.shift,
                                     uint32_t(row_bytes), win.expert_stride,    uint32_t(win.e0),
                                     uint32_t(win.ec),    act.x_base,           y_base,
                                     uint32_t(n_out),     sort_w.shift / 4,     uint32_t(n_expert),
                                     uint32_t(r.top_k),   x_per_pair ? 1u : 0u, act.x_vec4,
                                     uint32_t(t0),        w.bias ? 1u : 0u,     bias_base,
                                     uint32_t(n_out)};
            weights::dispatch(s, pipe, layout.format, {win.w.range, xw.range, yw.range, sort_w.range, bias_range},
                              push, uint32_t(gx), uint32_t(gy));
        }
    });
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
