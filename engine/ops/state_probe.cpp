// The state probes' kernels (state_probe_ops.h): shaders/state_scan_ssm.comp,
// state_scan_rwkv7.comp, state_scan_delta_net.comp, state_mix_map.comp and
// state_mix_map_delta_net.comp.
#include <algorithm>
#include <cmath>
#include <string>

#include "gpu/device.h"
#include "gpu/shaders.h"
#include "ops/dispatch_util.h"
#include "ops/ssm_view_checks.h"
#include "ops/state_probe_ops.h"
#include "ops/state_probe_push_constants.h"

namespace vkllm::ops {

namespace {

using detail::require;

struct Operand {
    detail::CheckedRows rows;
    detail::Window w;
};
Operand operand(const gpu::Context& ctx, const TensorView& v, int64_t rows, int64_t cols, const char* op,
                const char* what) {
    const detail::CheckedRows c = detail::checked_rows(v, rows, cols, op, what);
    return {c, detail::view_window(ctx, v, op, what)};
}

uint32_t u32(uint64_t v, const char* op, const char* what) {
    require(v <= 0xffffffffull, op, std::string(what) + " is over 2^32");
    return uint32_t(v);
}

// Element offsets of the key rows inside work's window.
struct KeyOffsets {
    uint64_t dt_l = 0, b = 0;
};
KeyOffsets key_offsets(uint32_t work_shift, int64_t state_floats, int64_t n_head, int64_t rows) {
    KeyOffsets k;
    k.dt_l = uint64_t(work_shift) + uint64_t(state_floats);
    k.b = k.dt_l + uint64_t(rows) * uint64_t(n_head) * 2;
    return k;
}

void check_keys(const StateKeys& k, const char* op) {
    require(k.rows >= 0 && k.first >= 0 && (k.rows == 0 || k.first < k.rows), op,
            "key rows: first " + std::to_string(k.first) + " is outside the " + std::to_string(k.rows) + " rows");
    require(!k.prev || k.first > 0, op, "key rows: no row before the first to continue L from");
}

}  // namespace

uint64_t state_work_floats(int64_t state_floats, int64_t n_head, int64_t gs, int64_t key_rows) {
    return uint64_t(state_floats) + uint64_t(key_rows) * (uint64_t(n_head) * 2 + uint64_t(gs));
}

void ssm_state_scan(Stream& s, const SsmStateScanArgs& a) {
    const char* op = "ssm_state_scan";
    gpu::Context& ctx = s.context();
    detail::checked_f32(a.x, op, "x");
    const int64_t n = a.x.rows, d_inner = a.x.cols;
    require(d_inner > 0, op, "x has no channels");
    detail::checked_f32(a.state, op, "state");
    const int64_t d_state = a.state.cols;
    const Operand st = operand(ctx, a.state, d_inner, d_state, op, "state");
    detail::require_packed(a.state, op, "state");
    require(d_state > 0, op, "the state has no columns");
    const int64_t n_head = a.mamba1 ? 1 : a.n_head;
    const int64_t n_group = a.mamba1 ? 1 : a.n_group;
    require(n_head > 0 && d_inner % n_head == 0, op,
            "d_inner " + std::to_string(d_inner) + " is not a multiple of n_head " + std::to_string(n_head));
    require(n_group > 0 && n_head % n_group == 0, op,
            "n_head " + std::to_string(n_head) + " is not a multiple of n_group " + std::to_string(n_group));
    require(!a.mamba1 || a.keys.rows == 0, op, "Mamba-1 has no mixing map (its decay is per channel)");
    check_keys(a.keys, op);
    const int64_t gs = n_group * d_state;
    const Operand a_op = a.mamba1 ? operand(ctx, a.a, d_inner, d_state, op, "a") : operand(ctx, a.a, 1, n_head, op, "a");
    const bool bias = !a.mamba1 && a.dt_bias.buffer;
    const Operand bias_op = bias ? operand(ctx, a.dt_bias, 1, n_head, op, "dt_bias") : a_op;
    const Operand wk = operand(ctx, a.work, 1, int64_t(state_work_floats(d_inner * d_state, n_head, gs, a.keys.rows)),
                               op, "work");
    detail::require_disjoint(a.work, "work",
                             {{&a.state, "the state"}, {&a.x, "x"}, {&a.b, "b"}, {&a.dt, "dt"}, {&a.dt_bias, "dt_bias"},
                              {&a.a, "a"}, {&a.out, "out"}},
                             op);
    if (n == 0) return;
    const Operand x = operand(ctx, a.x, n, d_inner, op, "x"), b = operand(ctx, a.b, n, gs, op, "b"),
                  dt = operand(ctx, a.dt, n, a.mamba1 ? d_inner : n_head, op, "dt"),
                  out = operand(ctx, a.out, n, n_head * 2, op, "out");
    detail::require_packed(a.out, op, "out");
    detail::require_disjoint(a.out, "out",
                             {{&a.state, "the state"}, {&a.x, "x"}, {&a.b, "b"}, {&a.dt, "dt"}, {&a.dt_bias, "dt_bias"},
                              {&a.a, "a"}},
                             op);
    u32(uint64_t(n) * std::max<uint64_t>(x.rows.stride, std::max(b.rows.stride, dt.rows.stride)), op,
        "the token rows' span");
    const KeyOffsets ko = key_offsets(wk.w.shift, d_inner * d_state, n_head, a.keys.rows);
    const int64_t key_count = a.keys.rows > 0 ? std::min<int64_t>(n, a.keys.rows - a.keys.first) : 0;
    StateScanSsmPush push{};
    push.n_tokens = uint32_t(n);
    push.rows = uint32_t(d_inner / n_head);
    push.d_state = uint32_t(d_state);
    push.heads_per_group = uint32_t(n_head / n_group);
    push.flags = (a.mamba1 ? 1u : 0u) | (bias ? 2u : 0u) | (key_count > 0 ? 4u : 0u);
    push.st_shift = st.w.shift, push.x_shift = x.w.shift, push.x_stride = x.rows.stride;
    push.dt_shift = dt.w.shift, push.dt_stride = dt.rows.stride, push.b_shift = b.w.shift;
    push.b_stride = b.rows.stride, push.bias_shift = bias_op.w.shift, push.a_shift = a_op.w.shift;
    push.out_shift = out.w.shift, push.work_shift = wk.w.shift;
    push.key_shift = u32(ko.dt_l, op, "the key rows' offset"), push.key_b_shift = u32(ko.b, op, "the key rows' offset");
    push.key_first = uint32_t(a.keys.first), push.key_count = uint32_t(key_count);
    push.key_prev = a.keys.prev ? 1u : 0u, push.gs = uint32_t(gs);
    const uint32_t wg = detail::workgroup_size(ctx, 64);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::state_scan_ssm, 8, sizeof(StateScanSsmPush), {wg});
    require(uint64_t(n_head) <= ctx.caps().max_workgroup_count[0], op, "more heads than workgroups in a row");
    s.dispatch(pipeline,
               {st.w.range, x.w.range, dt.w.range, b.w.range, bias_op.w.range, a_op.w.range, out.w.range, wk.w.range},
               push, uint32_t(n_head));
}

void rwkv7_state_scan(Stream& s, const Rwkv7StateScanArgs& a) {
    const char* op = "rwkv7_state_scan";
    gpu::Context& ctx = s.context();
    require(a.n_head > 0 && a.head_size > 0 && a.head_size <= 128, op,
            "needs positive heads of at most 128 channels, got " + std::to_string(a.n_head) + " of " +
                std::to_string(a.head_size));
    const int64_t N = a.head_size, C = a.n_head * N;
    const Operand st = operand(ctx, a.state, C, N, op, "state");
    detail::require_packed(a.state, op, "state");
    const Operand wk = operand(ctx, a.work, 1, C * N, op, "work");
    detail::require_disjoint(a.work, "work",
                             {{&a.state, "the state"}, {&a.w, "w"}, {&a.k, "k"}, {&a.v, "v"}, {&a.a, "a"}, {&a.b, "b"},
                              {&a.out, "out"}},
                             op);
    detail::checked_f32(a.w, op, "w");
    const int64_t n = a.w.rows;
    if (n == 0) return;
    const Operand w = operand(ctx, a.w, n, C, op, "w"), k = operand(ctx, a.k, n, C, op, "k"),
                  v = operand(ctx, a.v, n, C, op, "v"), av = operand(ctx, a.a, n, C, op, "a"),
                  b = operand(ctx, a.b, n, C, op, "b"), out = operand(ctx, a.out, n, a.n_head * 2, op, "out");
    detail::require_packed(a.out, op, "out");
    detail::require_disjoint(a.out, "out",
                             {{&a.state, "the state"}, {&a.w, "w"}, {&a.k, "k"}, {&a.v, "v"}, {&a.a, "a"}, {&a.b, "b"}},
                             op);
    u32(uint64_t(n) * std::max<uint64_t>(w.rows.stride, v.rows.stride), op, "the token rows' span");
    const StateScanRwkv7Push push{uint32_t(n),    uint32_t(N),      st.w.shift,    w.w.shift,      w.rows.stride,
                                  k.w.shift,      k.rows.stride,    v.w.shift,     v.rows.stride,  av.w.shift,
                                  av.rows.stride, b.w.shift,        b.rows.stride, out.w.shift,    wk.w.shift};
    const uint32_t wg = detail::workgroup_size(ctx, 64);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::state_scan_rwkv7, 8, sizeof(StateScanRwkv7Push), {wg});
    require(uint64_t(a.n_head) <= ctx.caps().max_workgroup_count[0], op, "more heads than workgroups in a row");
    s.dispatch(pipeline, {st.w.range, w.w.range, k.w.range, v.w.range, av.w.range, b.w.range, out.w.range, wk.w.range},
               push, uint32_t(a.n_head));
}

void ssm_mix_map(Stream& s, const SsmMixMapArgs& a) {
    const char* op = "ssm_mix_map";
    gpu::Context& ctx = s.context();
    require(a.n_head > 0 && a.n_group > 0 && a.n_head % a.n_group == 0 && a.d_state > 0, op,
            "needs positive sizes, n_head a multiple of n_group");
    require(a.head >= 0 && a.head < a.n_head, op,
            "head " + std::to_string(a.head) + " is outside 0.." + std::to_string(a.n_head - 1));
    check_keys(a.keys, op);
    require(a.keys.rows > 0, op, "no key rows");
    const int64_t gs = a.n_group * a.d_state;
    detail::checked_f32(a.c, op, "c");
    const int64_t n = a.c.rows;
    require(a.keys.first + n <= a.keys.rows, op,
            "the pass's " + std::to_string(n) + " rows from key row " + std::to_string(a.keys.first) +
                " are past the " + std::to_string(a.keys.rows) + " key rows");
    const Operand wk =
        operand(ctx, a.work, 1, int64_t(state_work_floats(a.state_floats, a.n_head, gs, a.keys.rows)), op, "work");
    if (n == 0) return;
    const Operand c = operand(ctx, a.c, n, gs, op, "c");
    const Operand map = operand(ctx, a.map, n, a.keys.rows, op, "map");
    detail::require_packed(a.map, op, "map");
    detail::require_disjoint(a.map, "map", {{&a.c, "c"}, {&a.work, "work"}}, op);
    u32(uint64_t(n) * uint64_t(a.keys.rows), op, "the map's size");
    const KeyOffsets ko = key_offsets(wk.w.shift, a.state_floats, a.n_head, a.keys.rows);
    StateMixMapPush push{};
    push.n_rows = uint32_t(n), push.n_keys = uint32_t(a.keys.rows), push.d_state = uint32_t(a.d_state);
    push.n_head = uint32_t(a.n_head), push.head = uint32_t(a.head);
    push.group = uint32_t(a.head / (a.n_head / a.n_group)), push.gs = uint32_t(gs);
    push.key_first = uint32_t(a.keys.first), push.c_shift = c.w.shift, push.c_stride = c.rows.stride;
    push.key_shift = u32(ko.dt_l, op, "the key rows' offset"), push.key_b_shift = u32(ko.b, op, "the key rows' offset");
    push.map_shift = map.w.shift;
    const uint32_t wg = detail::workgroup_size(ctx, 64);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::state_mix_map, 3, sizeof(StateMixMapPush), {wg});
    const uint64_t gx = (uint64_t(a.keys.rows) + wg - 1) / wg;
    require(gx <= ctx.caps().max_workgroup_count[0] && uint64_t(n) <= ctx.caps().max_workgroup_count[1], op,
            "the map needs more workgroups than the device's grid");
    s.dispatch(pipeline, {c.w.range, wk.w.range, map.w.range}, push, uint32_t(gx), uint32_t(n));
}

void delta_net_state_scan(Stream& s, const DeltaNetStateScanArgs& a) {
    const char* op = "delta_net_state_scan";
    gpu::Context& ctx = s.context();
    const GatedDeltaNetArgs& l = a.layer;
    require(l.n_head_k > 0 && l.n_head_v > 0 && l.d_k > 0 && l.d_v > 0 && l.n_head_v % l.n_head_k == 0, op,
            "needs positive head counts and sizes, n_head_v a multiple of n_head_k");
    require(l.d_k <= kDeltaNetMaxKeyDim, op,
            "d_k " + std::to_string(l.d_k) + " is over " + std::to_string(kDeltaNetMaxKeyDim));
    require(l.l2_eps >= 0.0f, op, "l2_eps must be >= 0");
    const int64_t dv_all = l.n_head_v * l.d_v, dk_all = l.n_head_k * l.d_k;
    const Operand st = operand(ctx, l.state, dv_all, l.d_k, op, "state");
    detail::require_packed(l.state, op, "state");
    const Operand wk = operand(ctx, a.work, 1, dv_all * l.d_k, op, "work");
    detail::require_disjoint(a.work, "work",
                             {{&l.state, "the state"}, {&l.k, "k"}, {&l.v, "v"}, {&l.g, "g"}, {&l.beta, "beta"},
                              {&a.out, "out"}},
                             op);
    detail::checked_f32(l.k, op, "k");
    const int64_t n = l.k.rows;
    if (n == 0) return;
    const Operand k = operand(ctx, l.k, n, dk_all, op, "k"), v = operand(ctx, l.v, n, dv_all, op, "v");
    const bool per_key = l.g.cols == l.n_head_v * l.d_k && l.d_k != 1;
    const Operand g = operand(ctx, l.g, n, per_key ? l.n_head_v * l.d_k : l.n_head_v, op, "g");
    const Operand beta = operand(ctx, l.beta, n, l.n_head_v, op, "beta");
    const Operand out = operand(ctx, a.out, n, l.n_head_v * 2, op, "out");
    detail::require_packed(a.out, op, "out");
    detail::require_disjoint(a.out, "out",
                             {{&l.state, "the state"}, {&l.k, "k"}, {&l.v, "v"}, {&l.g, "g"}, {&l.beta, "beta"}}, op);
    u32(uint64_t(n) * std::max<uint64_t>(std::max(k.rows.stride, v.rows.stride),
                                         std::max(g.rows.stride, beta.rows.stride)),
        op, "the token rows' span");
    StateScanDeltaNetPush push{};
    push.n_tokens = uint32_t(n), push.n_head_k = uint32_t(l.n_head_k), push.d_v = uint32_t(l.d_v);
    push.st_shift = st.w.shift, push.k_shift = k.w.shift, push.k_stride = k.rows.stride;
    push.v_shift = v.w.shift, push.v_stride = v.rows.stride, push.g_shift = g.w.shift, push.g_stride = g.rows.stride;
    push.beta_shift = beta.w.shift, push.beta_stride = beta.rows.stride;
    push.out_shift = out.w.shift, push.work_shift = wk.w.shift;
    push.flags = (per_key ? 1u : 0u) | (l.l2_norm_qk ? 2u : 0u) | (l.share == DeltaHeadShare::Tiled ? 4u : 0u);
    push.l2_eps = l.l2_eps;
    const uint32_t wg = detail::workgroup_size(ctx, 64);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::state_scan_delta_net, 7, sizeof(StateScanDeltaNetPush),
                                        {wg, uint32_t(l.d_k)});
    require(uint64_t(l.n_head_v) <= ctx.caps().max_workgroup_count[0], op, "more heads than workgroups in a row");
    s.dispatch(pipeline, {st.w.range, k.w.range, v.w.range, g.w.range, beta.w.range, out.w.range, wk.w.range}, push,
               uint32_t(l.n_head_v));
}

void delta_net_mix_map(Stream& s, const DeltaNetMixMapArgs& a) {
    const char* op = "delta_net_mix_map";
    gpu::Context& ctx = s.context();
    const GatedDeltaNetArgs& l = a.layer;
    require(l.n_head_k > 0 && l.n_head_v > 0 && l.d_k > 0 && l.n_head_v % l.n_head_k == 0, op,
            "needs positive head counts and d_k, n_head_v a multiple of n_head_k");
    require(l.d_k <= kDeltaNetMaxKeyDim, op,
            "d_k " + std::to_string(l.d_k) + " is over " + std::to_string(kDeltaNetMaxKeyDim));
    require(l.l2_eps >= 0.0f && std::isfinite(l.scale), op, "l2_eps must be >= 0 and scale finite");
    require(a.head >= 0 && a.head < l.n_head_v, op,
            "head " + std::to_string(a.head) + " is outside 0.." + std::to_string(l.n_head_v - 1));
    detail::checked_f32(l.q, op, "q");
    const int64_t n = l.q.rows, dk_all = l.n_head_k * l.d_k;
    detail::checked_f32(a.map, op, "map");
    const int64_t n_q = a.map.rows, n_k = a.map.cols;
    require(a.q_first >= 0 && a.k_first >= 0 && a.q_first + n_q <= n && a.k_first + n_k <= n, op,
            "the tile " + std::to_string(n_q) + " x " + std::to_string(n_k) + " from (" + std::to_string(a.q_first) +
                ", " + std::to_string(a.k_first) + ") is outside the call's " + std::to_string(n) + " tokens");
    if (n_q == 0 || n_k == 0) return;
    const Operand q = operand(ctx, l.q, n, dk_all, op, "q"), k = operand(ctx, l.k, n, dk_all, op, "k");
    const bool per_key = l.g.cols == l.n_head_v * l.d_k && l.d_k != 1;
    const Operand g = operand(ctx, l.g, n, per_key ? l.n_head_v * l.d_k : l.n_head_v, op, "g");
    const Operand beta = operand(ctx, l.beta, n, l.n_head_v, op, "beta");
    const Operand map = operand(ctx, a.map, n_q, n_k, op, "map");
    detail::require_disjoint(a.map, "map", {{&l.q, "q"}, {&l.k, "k"}, {&l.g, "g"}, {&l.beta, "beta"}}, op);
    u32(uint64_t(n) * std::max<uint64_t>(q.rows.stride, std::max(g.rows.stride, beta.rows.stride)), op,
        "the token rows' span");
    u32(uint64_t(n_q) * map.rows.stride, op, "the map's span");
    const int64_t rep = l.n_head_v / l.n_head_k;
    StateMixMapDeltaNetPush push{};
    push.q_first = uint32_t(a.q_first), push.n_q = uint32_t(n_q);
    push.k_first = uint32_t(a.k_first), push.n_k = uint32_t(n_k);
    push.head = uint32_t(a.head);
    push.key_head = uint32_t(l.share == DeltaHeadShare::Tiled ? a.head % l.n_head_k : a.head / rep);
    push.q_shift = q.w.shift, push.q_stride = q.rows.stride, push.k_shift = k.w.shift, push.k_stride = k.rows.stride;
    push.g_shift = g.w.shift, push.g_stride = g.rows.stride;
    push.beta_shift = beta.w.shift, push.beta_stride = beta.rows.stride;
    push.map_shift = map.w.shift, push.map_stride = map.rows.stride;
    push.flags = (per_key ? 1u : 0u) | (l.l2_norm_qk ? 2u : 0u);
    push.scale = l.scale != 0.0f ? l.scale : 1.0f / std::sqrt(float(l.d_k));
    push.l2_eps = l.l2_eps;
    const uint32_t wg = detail::workgroup_size(ctx, 64);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::state_mix_map_delta_net, 5, sizeof(StateMixMapDeltaNetPush),
                                        {wg, uint32_t(l.d_k)});
    const uint64_t gx = (uint64_t(n_k) + wg - 1) / wg;
    require(gx <= ctx.caps().max_workgroup_count[0], op, "the map needs more workgroups than the device's grid");
    s.dispatch(pipeline, {q.w.range, k.w.range, g.w.range, beta.w.range, map.w.range}, push, uint32_t(gx));
}

}  // namespace vkllm::ops
