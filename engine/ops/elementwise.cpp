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
void run(Stream& s, gpu::ShaderId shader, const Buffer& a, uint64_t a_offset, const Buffer* b, uint64_t b_offset,
         const Buffer& out, uint64_t out_offset, int64_t n, float factor = 0.0f, uint32_t row_len = 1) {
    const char* variant = gpu::shader_name(shader);
    require_count(n, variant);
    if (n == 0) return;
    gpu::Context& ctx = s.context();
    const detail::Window aw = detail::window(ctx, a, a_offset, uint64_t(n), variant, "input");
    const detail::Window bw = b ? detail::window(ctx, *b, b_offset, uint64_t(n), variant, "second input") : aw;
    const detail::Window ow = detail::window(ctx, out, out_offset, uint64_t(n), variant, "output");
    const uint32_t threads = detail::workgroup_size(ctx, kThreads);
    const auto& pipeline = ctx.pipeline(shader, 3, sizeof(ElementwisePush), {threads});
    ElementwisePush push{uint32_t(n), aw.shift, b ? bw.shift : 0u, ow.shift, row_len, 1, factor};
    s.dispatch(pipeline, {aw.range, bw.range, ow.range}, push, groups_for(ctx, uint64_t(n), threads));
}

// An elementwise op over views: x (and b, when given) and out f32 of one shape with packed rows.
void run_views(Stream& s, gpu::ShaderId shader, const char* names, const TensorView& a, const TensorView* b,
               const TensorView& out, float factor = 0.0f, uint32_t row_len = 1) {
    const char* op = gpu::shader_name(shader);
    const uint64_t a_offset = detail::checked_f32(a, op, "input");
    const uint64_t b_offset = b ? detail::checked_f32(*b, op, "second input") : 0;
    const uint64_t out_offset = detail::checked_f32(out, op, "output");
    detail::require_same_shape(a, out, op, names);
    if (b) detail::require_same_shape(a, *b, op, names);
    detail::require(a.packed() && out.packed() && (!b || b->packed()), op, std::string(names) + " must have packed rows");
    run(s, shader, *a.buffer, a_offset, b ? b->buffer : nullptr, b_offset, *out.buffer, out_offset, a.elements(),
        factor, row_len);
}

}  // namespace

void swiglu(Stream& s, const TensorView& gate, const TensorView& up, const TensorView& out) {
    run_views(s, gpu::ShaderId::swiglu, "gate, up and out", gate, &up, out);
}

void swiglu_oai(Stream& s, const TensorView& gate, const TensorView& up, const TensorView& out, float alpha,
                float limit) {
    detail::require(limit > 0, "swiglu_oai", "the limit must be positive");
    run_views(s, gpu::ShaderId::swiglu_oai, "gate, up and out", gate, &up, out, alpha, std::bit_cast<uint32_t>(limit));
}

void geglu(Stream& s, const TensorView& gate, const TensorView& up, const TensorView& out, bool fp16_table) {
    run_views(s, fp16_table ? gpu::ShaderId::geglu_fp16_table : gpu::ShaderId::geglu, "gate, up and out", gate, &up,
              out);
}

void add(Stream& s, const TensorView& a, const TensorView& b, const TensorView& out) {
    run_views(s, gpu::ShaderId::add, "a, b and out", a, &b, out);
}

void gelu(Stream& s, const TensorView& x, const TensorView& y, bool fp16_table) {
    run_views(s, fp16_table ? gpu::ShaderId::gelu_fp16_table : gpu::ShaderId::gelu, "x and y", x, nullptr, y);
}

void gelu_erf(Stream& s, const TensorView& x, const TensorView& y) {
    run_views(s, gpu::ShaderId::gelu_erf, "x and y", x, nullptr, y);
}

void scale(Stream& s, const TensorView& x, float factor) { run_views(s, gpu::ShaderId::scale, "x", x, nullptr, x, factor); }

void softcap(Stream& s, const TensorView& x, float cap) {
    detail::require(cap > 0, "softcap", "the cap must be positive");
    run_views(s, gpu::ShaderId::softcap, "x", x, nullptr, x, cap);
}

void add_bias(Stream& s, const TensorView& x, const TensorView& bias) {
    const char* op = "add_bias";
    const uint64_t x_offset = detail::checked_f32(x, op, "x");
    const uint64_t bias_offset = detail::checked_vector(bias, TensorType::F32, x.cols, op, "bias");
    const int64_t n_rows = x.rows, n = x.cols, stride = x.stride();
    detail::require(n > 0, op, "x has no columns");
    require_count(n_rows * n, op);
    if (n_rows == 0) return;
    gpu::Context& ctx = s.context();
    const uint64_t span = uint64_t(n_rows - 1) * uint64_t(stride) + uint64_t(n);
    const detail::Window xw = detail::window(ctx, *x.buffer, x_offset, span, op, "x");
    const detail::Window bw = detail::window(ctx, *bias.buffer, bias_offset, uint64_t(n), op, "bias");
    const uint32_t threads = detail::workgroup_size(ctx, kThreads);
    const auto& pipeline = ctx.pipeline(gpu::ShaderId::add_bias, 3, sizeof(ElementwisePush), {threads});
    ElementwisePush push{uint32_t(n_rows * n), xw.shift, bw.shift, xw.shift, uint32_t(n), uint32_t(stride), 0.0f};
    s.dispatch(pipeline, {xw.range, bw.range, xw.range}, push, groups_for(ctx, uint64_t(n_rows * n), threads));
}

}  // namespace vkllm::ops
