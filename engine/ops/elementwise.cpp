// Elementwise ops (shaders/elementwise.comp): activations, gated units, add, scale, row bias.
#include <algorithm>
#include <bit>
#include <string>

#include "gpu/device.h"
#include "gpu/shaders.h"
#include "ops/dispatch_util.h"
#include "ops/ops.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

namespace {

constexpr uint32_t kThreads = 256;

void require_count(int64_t n, const char* op) {
    detail::require(n >= 0 && uint64_t(n) <= 0xffffffffull, op,
                    "value count " + std::to_string(n) + " is negative or over 2^32");
}

// Grid-stride dispatch: enough workgroups to cover n, capped by the device's x limit.
uint32_t groups_for(const gpu::Context& ctx, uint64_t n, uint32_t threads) {
    return uint32_t(std::clamp<uint64_t>((n + threads - 1) / threads, 1, ctx.caps().max_workgroup_count[0]));
}

// out[i] = f(a[i], b[i]) over n values (b optional for unary ops); errors name the variant.
void run(Stream& s, gpu::ShaderId shader, const Buffer& a, uint64_t a_offset, const Buffer* b, const Buffer& out,
         uint64_t out_offset, int64_t n, float factor = 0.0f, uint32_t row_len = 1) {
    const char* variant = gpu::shader_name(shader);
    require_count(n, variant);
    if (n == 0) return;
    gpu::Context& ctx = s.context();
    const detail::Window aw = detail::window(ctx, a, a_offset, uint64_t(n), variant, "input");
    const detail::Window bw = b ? detail::window(ctx, *b, 0, uint64_t(n), variant, "second input") : aw;
    const detail::Window ow = detail::window(ctx, out, out_offset, uint64_t(n), variant, "output");
    const uint32_t threads = detail::workgroup_size(ctx, kThreads);
    const auto& pipeline = ctx.pipeline(shader, 3, sizeof(ElementwisePush), {threads});
    ElementwisePush push{uint32_t(n), aw.shift, b ? bw.shift : 0u, ow.shift, row_len, 1, factor};
    s.dispatch(pipeline, {aw.range, bw.range, ow.range}, push, groups_for(ctx, uint64_t(n), threads));
}

}  // namespace

void swiglu(Stream& s, const Buffer& gate, const Buffer& up, const Buffer& out, int64_t n) {
    run(s, gpu::ShaderId::swiglu, gate, 0, &up, out, 0, n);
}

void swiglu_oai(Stream& s, const Buffer& gate, const Buffer& up, const Buffer& out, int64_t n, float alpha,
                float limit) {
    detail::require(limit > 0, "swiglu_oai", "the limit must be positive");
    run(s, gpu::ShaderId::swiglu_oai, gate, 0, &up, out, 0, n, alpha, std::bit_cast<uint32_t>(limit));
}

void geglu(Stream& s, const Buffer& gate, const Buffer& up, const Buffer& out, int64_t n, bool fp16_table) {
    run(s, fp16_table ? gpu::ShaderId::geglu_fp16_table : gpu::ShaderId::geglu, gate, 0, &up, out, 0, n);
}

void add(Stream& s, const TensorView& a, const TensorView& b, const TensorView& out) {
    const char* op = "add";
    const uint64_t a_offset = detail::checked_f32(a, op, "a");
    const uint64_t b_offset = detail::checked_f32(b, op, "b");
    const uint64_t out_offset = detail::checked_f32(out, op, "out");
    detail::require(a.rows == b.rows && a.cols == b.cols && a.rows == out.rows && a.cols == out.cols, op,
                    "a, b and out must have one shape");
    detail::require(a.packed() && b.packed() && out.packed(), op, "a, b and out must have packed rows");
    detail::require(b_offset == 0, op, "b must start at its buffer's first element");
    run(s, gpu::ShaderId::add, *a.buffer, a_offset, b.buffer, *out.buffer, out_offset, a.elements());
}

void add(Stream& s, const Buffer& a, const Buffer& b, const Buffer& out, int64_t n) {
    add(s, f32_rows(a, 1, n), f32_rows(b, 1, n), f32_rows(out, 1, n));
}

void gelu(Stream& s, const Buffer& x, const Buffer& y, int64_t n, bool fp16_table) {
    run(s, fp16_table ? gpu::ShaderId::gelu_fp16_table : gpu::ShaderId::gelu, x, 0, nullptr, y, 0, n);
}

void gelu_erf(Stream& s, const Buffer& x, const Buffer& y, int64_t n) {
    run(s, gpu::ShaderId::gelu_erf, x, 0, nullptr, y, 0, n);
}

void scale(Stream& s, const Buffer& x, int64_t n, float factor, uint64_t x_offset) {
    run(s, gpu::ShaderId::scale, x, x_offset, nullptr, x, x_offset, n, factor);
}

void softcap(Stream& s, const Buffer& x, int64_t n, float cap, uint64_t x_offset) {
    detail::require(cap > 0, "softcap", "the cap must be positive");
    run(s, gpu::ShaderId::softcap, x, x_offset, nullptr, x, x_offset, n, cap);
}

void add_bias(Stream& s, const Buffer& x, uint64_t x_offset, const Buffer& bias, int64_t n_rows, int64_t n,
              int64_t stride) {
    const char* op = "add_bias";
    if (stride == 0) stride = n;
    detail::require(n > 0 && n_rows >= 0 && stride >= n, op,
                    "needs n > 0, n_rows >= 0 and stride >= n; got n " + std::to_string(n) + ", n_rows " +
                        std::to_string(n_rows) + ", stride " + std::to_string(stride));
    require_count(n_rows * n, op);
    if (n_rows == 0) return;
    gpu::Context& ctx = s.context();
    const uint64_t span = uint64_t(n_rows - 1) * uint64_t(stride) + uint64_t(n);
    const detail::Window xw = detail::window(ctx, x, x_offset, span, op, "x");
    const detail::Window bw = detail::window(ctx, bias, 0, uint64_t(n), op, "bias");
    const uint32_t threads = detail::workgroup_size(ctx, kThreads);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::add_bias, 3, sizeof(ElementwisePush), {threads});
    ElementwisePush push{uint32_t(n_rows * n), xw.shift, bw.shift, xw.shift, uint32_t(n), uint32_t(stride), 0.0f};
    s.dispatch(pipeline, {xw.range, bw.range, xw.range}, push, groups_for(ctx, uint64_t(n_rows * n), threads));
}

}  // namespace vkllm::ops
