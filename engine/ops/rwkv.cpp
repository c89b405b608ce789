// RWKV-7's mixing kernels (rwkv_ops.h): shaders/rwkv_*.comp and rwkv7_*.comp.
#include <algorithm>
#include <cstdlib>
#include <string>

#include "gpu/device.h"
#include "gpu/shaders.h"
#include "ops/dispatch_util.h"
#include "ops/rwkv_ops.h"
#include "ops/rwkv_push_constants.h"
#include "ops/ssm_view_checks.h"

namespace vkllm::ops {

namespace {

using detail::CheckedRows;
using detail::checked_rows;
using detail::require;
using detail::view_window;

// Checks the head layout of a per-head op and returns C = n_head * head_size.
int64_t channels(const gpu::Context& ctx, int64_t n_head, int64_t head_size, const char* op) {
    require(n_head > 0 && head_size > 0, op,
            "needs a positive head count and size, got " + std::to_string(n_head) + " heads of " +
                std::to_string(head_size));
    const int64_t limit = std::min<int64_t>(kRwkvMaxHeadSize, ctx.caps().max_workgroup_invocations);
    require(head_size <= limit, op,
            "head size " + std::to_string(head_size) + " is over " + std::to_string(limit) +
                " (one head is one workgroup)");
    return n_head * head_size;
}

// A [rows, cols] operand: checked, and its window.
struct Operand {
    CheckedRows rows;
    detail::Window w;
};
Operand operand(const gpu::Context& ctx, const TensorView& v, int64_t rows, int64_t cols, const char* op,
                const char* what) {
    const CheckedRows c = checked_rows(v, rows, cols, op, what);
    return {c, view_window(ctx, v, op, what)};
}

// n values of one row: [1, n] (a vector view).
Operand vector(const gpu::Context& ctx, const TensorView& v, int64_t n, const char* op, const char* what) {
    return operand(ctx, v, 1, n, op, what);
}

uint32_t u32(int64_t v, const char* op, const char* what) {
    require(v >= 0 && uint64_t(v) <= 0xffffffffull, op, std::string(what) + " is over 2^32");
    return uint32_t(v);
}

// VKLLM_WKV7=chunked|sequential replaces Auto's choice; unset or "auto" leaves it.
Wkv7Kernel forced_wkv7_kernel(Wkv7Kernel k) {
    const char* v = std::getenv("VKLLM_WKV7");
    if (k != Wkv7Kernel::Auto || !v || !*v || std::string(v) == "auto") return k;
    const std::string name(v);
    if (name == "chunked") return Wkv7Kernel::Chunked;
    if (name == "sequential") return Wkv7Kernel::Sequential;
    throw ShapeError("rwkv_wkv7: VKLLM_WKV7=" + name + " is not auto, chunked or sequential");
}

}  // namespace

uint32_t rwkv_wkv7_chunk(const gpu::Context& ctx, int64_t head_size) {
    // rwkv_wkv7_chunked.comp's shared memory: four [L][N] operand blocks, four L x L token
    // products, and two [N] vectors.
    auto bytes = [&](uint64_t L) { return 4 * (4 * L * uint64_t(head_size) + 4 * L * L + 2 * uint64_t(head_size)); };
    for (uint32_t L : {16u, 8u})
        if (bytes(L) <= ctx.caps().max_shared_memory) return L;
    require(bytes(4) <= ctx.caps().max_shared_memory, "rwkv_wkv7",
            "head size " + std::to_string(head_size) + " needs " + std::to_string(bytes(4)) +
                " bytes of shared memory for the chunked kernel, over the device's " +
                std::to_string(ctx.caps().max_shared_memory));
    return 4;
}

void rwkv_shift_mix(Stream& s, const TensorView& x, const TensorView& shift, const TensorView& mix,
                    const TensorView& out) {
    const char* op = "rwkv_shift_mix";
    gpu::Context& ctx = s.context();
    detail::checked_f32(x, op, "x");
    const int64_t n = x.rows, C = x.cols;
    require(C > 0, op, "x has no channels");
    const Operand sh = vector(ctx, shift, C, op, "shift");
    detail::checked_f32(mix, op, "mix");
    require(mix.rows > 0 && mix.cols == C, op,
            "mix is " + detail::view_shape(mix) + ", expected [n_mix, " + std::to_string(C) + "]");
    detail::require_packed(mix, op, "mix");
    const int64_t n_mix = mix.rows;
    const Operand mx = operand(ctx, mix, n_mix, C, op, "mix");
    if (n == 0) return;
    const Operand xv = operand(ctx, x, n, C, op, "x");
    const Operand o = operand(ctx, out, n_mix * n, C, op, "out");
    detail::require_packed(out, op, "out");
    detail::require_disjoint(out, "out", {{&x, "x"}, {&shift, "shift"}, {&mix, "mix"}}, op);
    detail::require_disjoint(shift, "shift", {{&x, "x"}, {&mix, "mix"}}, op);
    u32(n_mix * n * C, op, "n_mix * n_tokens * C");
    const uint32_t wg = detail::workgroup_size(ctx, 64);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::rwkv_shift_mix, 4, sizeof(RwkvShiftMixPush), {wg});
    const RwkvShiftMixPush push{uint32_t(n), uint32_t(C), uint32_t(n_mix), xv.w.shift, xv.rows.stride,
                                sh.w.shift,  mx.w.shift, o.w.shift};
    const detail::Grid grid = detail::grid_2d(ctx, (uint64_t(C) + wg - 1) / wg, op);
    s.dispatch(pipeline, {xv.w.range, sh.w.range, mx.w.range, o.w.range}, push, grid.x, grid.y);
}

void rwkv_wkv7(Stream& s, const RwkvWkv7Args& a) {
    const char* op = "rwkv_wkv7";
    gpu::Context& ctx = s.context();
    const int64_t C = channels(ctx, a.n_head, a.head_size, op), N = a.head_size;
    const Operand st = operand(ctx, a.state, C, N, op, "state");
    detail::require_packed(a.state, op, "state");
    detail::checked_f32(a.r, op, "r");
    const int64_t n = a.r.rows;
    if (n == 0) return;
    const Operand r = operand(ctx, a.r, n, C, op, "r"), w = operand(ctx, a.w, n, C, op, "w"),
                  k = operand(ctx, a.k, n, C, op, "k"), v = operand(ctx, a.v, n, C, op, "v"),
                  av = operand(ctx, a.a, n, C, op, "a"), b = operand(ctx, a.b, n, C, op, "b"),
                  o = operand(ctx, a.out, n, C, op, "out");
    detail::require_disjoint(a.out, "out",
                             {{&a.state, "the state"}, {&a.r, "r"}, {&a.w, "w"}, {&a.k, "k"}, {&a.v, "v"},
                              {&a.a, "a"}, {&a.b, "b"}},
                             op);
    detail::require_disjoint(a.state, "the state",
                             {{&a.r, "r"}, {&a.w, "w"}, {&a.k, "k"}, {&a.v, "v"}, {&a.a, "a"}, {&a.b, "b"}}, op);
    u32(n * std::max(o.rows.stride, r.rows.stride), op, "the token rows' span");
    // A forced kernel applies to calls of more than one token; a decode step keeps Sequential.
    const Wkv7Kernel kernel = n > 1 ? forced_wkv7_kernel(a.kernel) : a.kernel;
    const bool chunked = kernel == Wkv7Kernel::Chunked ||
                         (kernel == Wkv7Kernel::Auto && ctx.caps().type != "cpu" && n >= kRwkvWkv7ChunkedMinTokens);
    const auto& pipeline =
        chunked ? ctx.pipeline(gpu::ShaderId::rwkv_wkv7_chunked, 8, sizeof(RwkvWkv7Push),
                               {uint32_t(N), rwkv_wkv7_chunk(ctx, N)})
                : ctx.pipeline(gpu::ShaderId::rwkv_wkv7, 8, sizeof(RwkvWkv7Push), {uint32_t(N)});
    const RwkvWkv7Push push{uint32_t(n), st.w.shift, r.w.shift, r.rows.stride, w.w.shift, w.rows.stride,
                            k.w.shift,   k.rows.stride, v.w.shift, v.rows.stride, av.w.shift, av.rows.stride,
                            b.w.shift,   b.rows.stride, o.w.shift, o.rows.stride};
    const detail::Grid grid = detail::grid_2d(ctx, uint64_t(a.n_head), op);
    s.dispatch(pipeline, {st.w.range, r.w.range, w.w.range, k.w.range, v.w.range, av.w.range, b.w.range, o.w.range},
               push, grid.x, grid.y);
}

void rwkv7_wkv_inputs(Stream& s, const Rwkv7InputsArgs& a) {
    const char* op = "rwkv7_wkv_inputs";
    gpu::Context& ctx = s.context();
    const int64_t C = channels(ctx, a.n_head, a.head_size, op);
    const Operand w0 = vector(ctx, a.w0, C, op, "w0"), a0 = vector(ctx, a.a0, C, op, "a0"),
                  kk = vector(ctx, a.k_k, C, op, "k_k"), ka = vector(ctx, a.k_a, C, op, "k_a");
    detail::checked_f32(a.w, op, "w");
    const int64_t n = a.w.rows;
    if (n == 0) return;
    const Operand w = operand(ctx, a.w, n, C, op, "w"), k = operand(ctx, a.k, n, C, op, "k"),
                  av = operand(ctx, a.a, n, C, op, "a"), b = operand(ctx, a.b, n, C, op, "b");
    const std::initializer_list<detail::NamedView> params = {
        {&a.w0, "w0"}, {&a.a0, "a0"}, {&a.k_k, "k_k"}, {&a.k_a, "k_a"}};
    for (const detail::NamedView& written : {detail::NamedView{&a.w, "w"}, detail::NamedView{&a.k, "k"},
                                             detail::NamedView{&a.a, "a"}, detail::NamedView{&a.b, "b"}})
        detail::require_disjoint(*written.view, written.name, params, op);
    detail::require_disjoint(a.w, "w", {{&a.k, "k"}, {&a.a, "a"}, {&a.b, "b"}}, op);
    detail::require_disjoint(a.k, "k", {{&a.a, "a"}, {&a.b, "b"}}, op);
    detail::require_disjoint(a.a, "a", {{&a.b, "b"}}, op);
    u32(n * a.n_head, op, "n_tokens * n_head");
    const auto& pipeline =
        ctx.pipeline(gpu::ShaderId::rwkv7_inputs, 8, sizeof(Rwkv7InputsPush), {uint32_t(a.head_size)});
    const Rwkv7InputsPush push{uint32_t(n),   uint32_t(a.n_head), w.w.shift,  w.rows.stride, k.w.shift,
                               k.rows.stride, av.w.shift,         av.rows.stride, b.w.shift, b.rows.stride,
                               w0.w.shift,    a0.w.shift,         kk.w.shift, ka.w.shift};
    const detail::Grid grid = detail::grid_2d(ctx, uint64_t(n) * uint64_t(a.n_head), op);
    s.dispatch(pipeline,
               {w.w.range, k.w.range, av.w.range, b.w.range, w0.w.range, a0.w.range, kk.w.range, ka.w.range}, push,
               grid.x, grid.y);
}

void rwkv7_wkv_output(Stream& s, const Rwkv7OutputArgs& a) {
    const char* op = "rwkv7_wkv_output";
    gpu::Context& ctx = s.context();
    const int64_t C = channels(ctx, a.n_head, a.head_size, op);
    require(a.eps >= 0.0f, op, "eps must be >= 0");
    const Operand lw = vector(ctx, a.ln_w, C, op, "ln_w"), lb = vector(ctx, a.ln_b, C, op, "ln_b"),
                  rk = vector(ctx, a.r_k, C, op, "r_k");
    detail::checked_f32(a.o, op, "o");
    const int64_t n = a.o.rows;
    if (n == 0) return;
    const Operand o = operand(ctx, a.o, n, C, op, "o"), r = operand(ctx, a.r, n, C, op, "r"),
                  k = operand(ctx, a.k, n, C, op, "k"), v = operand(ctx, a.v, n, C, op, "v"),
                  g = operand(ctx, a.g, n, C, op, "g");
    detail::require_disjoint(a.o, "o",
                             {{&a.r, "r"}, {&a.k, "k"}, {&a.v, "v"}, {&a.g, "g"}, {&a.ln_w, "ln_w"},
                              {&a.ln_b, "ln_b"}, {&a.r_k, "r_k"}},
                             op);
    u32(n * a.n_head, op, "n_tokens * n_head");
    const auto& pipeline =
        ctx.pipeline(gpu::ShaderId::rwkv7_output, 8, sizeof(Rwkv7OutputPush), {uint32_t(a.head_size)});
    const Rwkv7OutputPush push{uint32_t(n), uint32_t(a.n_head), o.w.shift, o.rows.stride, r.w.shift, r.rows.stride,
                               k.w.shift,   k.rows.stride,      v.w.shift, v.rows.stride, g.w.shift, g.rows.stride,
                               lw.w.shift,  lb.w.shift,         rk.w.shift, a.eps};
    const detail::Grid grid = detail::grid_2d(ctx, uint64_t(n) * uint64_t(a.n_head), op);
    s.dispatch(pipeline, {o.w.range, r.w.range, k.w.range, v.w.range, g.w.range, lw.w.range, lb.w.range, rk.w.range},
               push, grid.x, grid.y);
}

namespace {

// rwkv_elementwise.comp over [rows, cols]: mode 0 tanh, 1 sigmoid (x -> y), 2 the value residual.
void elementwise(Stream& s, uint32_t mode, const Operand& x, const Operand& y, const Operand& z, const Operand& p,
                 int64_t rows, int64_t cols) {
    gpu::Context& ctx = s.context();
    const uint32_t wg = detail::workgroup_size(ctx, 256);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::rwkv_elementwise, 4, sizeof(RwkvElementwisePush), {wg});
    const RwkvElementwisePush push{uint32_t(rows), uint32_t(cols), mode,          x.w.shift, x.rows.stride,
                                   y.w.shift,      y.rows.stride,  z.w.shift,     z.rows.stride, p.w.shift};
    // Columns over x workgroups, rows over y (both loop when capped), about 2^20 invocations.
    const auto& caps = ctx.caps();
    const uint64_t gx = std::clamp<uint64_t>((uint64_t(cols) + wg - 1) / wg, 1, caps.max_workgroup_count[0]);
    const uint64_t gy = std::clamp<uint64_t>(std::min<uint64_t>(uint64_t(rows), (1u << 20) / (gx * wg) + 1), 1,
                                             caps.max_workgroup_count[1]);
    s.dispatch(pipeline, {x.w.range, y.w.range, z.w.range, p.w.range}, push, uint32_t(gx), uint32_t(gy));
}

}  // namespace

void rwkv7_value_mix(Stream& s, const TensorView& v, const TensorView& v_first, const TensorView& v_mix,
                     const TensorView& v0) {
    const char* op = "rwkv7_value_mix";
    gpu::Context& ctx = s.context();
    detail::checked_f32(v, op, "v");
    const int64_t n = v.rows, C = v.cols;
    require(C > 0, op, "v has no channels");
    const Operand p = vector(ctx, v0, C, op, "v0");
    if (n == 0) return;
    const Operand y = operand(ctx, v, n, C, op, "v"), x = operand(ctx, v_first, n, C, op, "v_first"),
                  z = operand(ctx, v_mix, n, C, op, "v_mix");
    detail::require_disjoint(v, "v", {{&v_first, "v_first"}, {&v_mix, "v_mix"}, {&v0, "v0"}}, op);
    u32(n * C, op, "n_tokens * C");
    elementwise(s, 2, x, y, z, p, n, C);
}

void rwkv_lora_act(Stream& s, const TensorView& x, const TensorView& y, RwkvLoraAct act) {
    const char* op = "rwkv_lora_act";
    gpu::Context& ctx = s.context();
    detail::checked_f32(x, op, "x");
    const int64_t n = x.rows, C = x.cols;
    if (n == 0 || C == 0) {
        detail::checked_f32(y, op, "y");
        detail::require_shape(y, n, C, op, "y");
        return;
    }
    const Operand xv = operand(ctx, x, n, C, op, "x"), yv = operand(ctx, y, n, C, op, "y");
    detail::require_same_or_disjoint(y, "y", x, "x", op);
    u32(n * C, op, "n_tokens * C");
    elementwise(s, act == RwkvLoraAct::Tanh ? 0u : 1u, xv, yv, xv, xv, n, C);
}

}  // namespace vkllm::ops
