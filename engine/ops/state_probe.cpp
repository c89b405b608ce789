// The state probes' kernels (state_probe_ops.h): shaders/state_scan_ssm.comp,
// state_scan_rwkv7.comp and state_mix_map.comp.
#include <algorithm>
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

}  // namespace vkllm::ops
