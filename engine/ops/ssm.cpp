// Mamba-2's selective scan and grouped RMSNorm (ssm_ops.h): shaders/ssm_scan*.comp, ssm_norm.comp.
#include <algorithm>
#include <cstdlib>
#include <initializer_list>
#include <string>

#include "gpu/device.h"
#include "gpu/shaders.h"
#include "ops/dispatch_util.h"
#include "ops/push_constants.h"
#include "ops/ssm_ops.h"
#include "ops/ssm_view_checks.h"

namespace vkllm::ops {

namespace {

uint32_t pow2_at_least(uint64_t n) {
    uint32_t p = 1;
    while (p < n) p <<= 1;
    return p;
}

// VKLLM_SSM_SCAN=chunked|rows|workgroup replaces Auto's choice (for measuring the kernels on a
// new device with `vkllm bench`); unset or "auto" leaves it.
SsmScanKernel forced_scan_kernel(SsmScanKernel k) {
    const char* v = std::getenv("VKLLM_SSM_SCAN");
    if (k != SsmScanKernel::Auto || !v || !*v || std::string(v) == "auto") return k;
    const std::string name(v);
    if (name == "chunked") return SsmScanKernel::Chunked;
    if (name == "rows") return SsmScanKernel::Rows;
    if (name == "workgroup") return SsmScanKernel::Workgroup;
    throw ShapeError("ssm_scan: VKLLM_SSM_SCAN=" + name + " is not auto, chunked, rows or workgroup");
}

}  // namespace

uint32_t ssm_scan_chunk(gpu::Context& ctx) {
    // shaders/ssm_scan_chunked.comp's shared memory: the chunk's matrix and three vectors.
    auto bytes = [](uint64_t chunk) { return 4 * (chunk * chunk + 3 * chunk); };
    return bytes(64) <= ctx.caps().max_shared_memory ? 64u : 32u;
}

void ssm_scan(Stream& s, const SsmScanArgs& p) {
    const char* op = "ssm_scan";
    detail::checked_f32(p.x, op, "x");
    detail::checked_f32(p.dt, op, "dt");
    detail::checked_f32(p.state, op, "the state");
    detail::checked_f32(p.b, op, "B");
    const int64_t n_tokens = p.x.rows, d_inner = p.x.cols, n_head = p.dt.cols, d_state = p.state.cols;
    const int64_t gs = p.b.cols;  // n_group * d_state
    detail::require(d_inner > 0 && n_head > 0 && d_state > 0 && gs > 0, op,
                    "needs positive sizes, got x " + detail::view_shape(p.x) + ", dt " + detail::view_shape(p.dt) +
                        ", the state " + detail::view_shape(p.state) + " and B " + detail::view_shape(p.b));
    detail::require(d_inner % n_head == 0, op,
                    "x's " + std::to_string(d_inner) + " columns are not a multiple of dt's " + std::to_string(n_head) +
                        " heads");
    detail::require(gs % d_state == 0, op,
                    "B's " + std::to_string(gs) + " columns are not groups of the state's " + std::to_string(d_state));
    const int64_t n_group = gs / d_state;
    detail::require(n_head % n_group == 0, op,
                    "n_head " + std::to_string(n_head) + " is not a multiple of n_group " + std::to_string(n_group));
    const detail::CheckedRows xv = detail::checked_rows(p.x, n_tokens, d_inner, op, "x");
    detail::checked_rows(p.state, d_inner, d_state, op, "the state");
    detail::require_packed(p.state, op, "the state");
    const detail::CheckedRows bv = detail::checked_rows(p.b, n_tokens, gs, op, "B");
    const detail::CheckedRows cv = detail::checked_rows(p.c, n_tokens, gs, op, "C");
    // x, B and C share one binding: B and C are columns of x's rows (the shader's b_col, c_col).
    detail::require(p.b.buffer == p.x.buffer && p.c.buffer == p.x.buffer && bv.stride == xv.stride &&
                        cv.stride == xv.stride,
                    op, "B and C must be views of x's buffer at x's row stride");
    detail::require(bv.first >= xv.first && cv.first >= xv.first, op, "B and C must start at or after x's first value");
    const detail::CheckedRows dv = detail::checked_rows(p.dt, n_tokens, n_head, op, "dt");
    const bool has_z = p.z.buffer != nullptr, has_dtb = p.dt_bias.buffer != nullptr, has_d = p.d.buffer != nullptr;
    const detail::CheckedRows zv = has_z ? detail::checked_rows(p.z, n_tokens, d_inner, op, "z") : dv;
    // dt and z share one binding likewise.
    detail::require(!has_z || (p.z.buffer == p.dt.buffer && zv.stride == dv.stride), op,
                    "z must be a view of dt's buffer at dt's row stride");
    detail::checked_vector(p.a, gguf::TensorType::F32, n_head, op, "A");
    if (has_dtb) detail::checked_vector(p.dt_bias, gguf::TensorType::F32, n_head, op, "dt_bias");
    if (has_d) detail::checked_vector(p.d, gguf::TensorType::F32, n_head, op, "D");
    const detail::CheckedRows yv = detail::checked_rows(p.y, n_tokens, d_inner, op, "y");
    // Workgroups read every token's x, B, C, dt and z while others write y and the state.
    const std::initializer_list<detail::NamedView> read = {
        {&p.x, "x"}, {&p.b, "B"}, {&p.c, "C"}, {&p.dt, "dt"}, {&p.z, "z"}, {&p.dt_bias, "dt_bias"}, {&p.a, "A"},
        {&p.d, "D"}};
    detail::require_disjoint(p.y, "y", read, op);
    detail::require_disjoint(p.y, "y", {{&p.state, "the state"}}, op);
    detail::require_disjoint(p.state, "the state", read, op);
    if (n_tokens == 0) return;
    gpu::Context& ctx = s.context();
    const bool cpu_device = ctx.caps().type == "cpu";
    // A forced kernel applies to prompts; decode steps keep the one-step kernels.
    const SsmScanKernel kernel = n_tokens >= kSsmScanChunkedMinTokens ? forced_scan_kernel(p.kernel) : p.kernel;
    const bool chunked = kernel == SsmScanKernel::Chunked ||
                         (kernel == SsmScanKernel::Auto && !cpu_device && n_tokens >= kSsmScanChunkedMinTokens);
    const bool rows = kernel == SsmScanKernel::Rows ||
                      (kernel == SsmScanKernel::Auto && !chunked && cpu_device && d_state <= kSsmScanRowsMaxState);
    const uint32_t wg =
        chunked ? detail::workgroup_size(ctx, 128)
        : rows  ? detail::workgroup_size(ctx, 64)
                : detail::workgroup_size(ctx, std::max<uint32_t>(32, std::min<uint32_t>(256, pow2_at_least(uint64_t(d_state)))));
    // The chunked kernel (one workgroup per head) takes any d_state: the state stays in its buffer.
    if (rows) {
        detail::require(d_state <= kSsmScanRowsMaxState, op,
                        "d_state " + std::to_string(d_state) + " is over the row kernel's " +
                            std::to_string(kSsmScanRowsMaxState));
    } else if (!chunked) {
        detail::require(uint64_t(d_state) <= 4ull * wg, op,
                        "d_state " + std::to_string(d_state) + " exceeds 4 x the workgroup size " + std::to_string(wg));
    }
    const detail::Window sw = detail::view_window(ctx, p.state, op, "state");
    // xbc: from x's first value to the end of the furthest of x, B and C (one row stride).
    const uint64_t xbc_end = std::max({xv.first + detail::view_span(p.x), bv.first + detail::view_span(p.b),
                                       cv.first + detail::view_span(p.c)});
    const detail::Window xw = detail::window(ctx, *p.x.buffer, xv.first, xbc_end - xv.first, op, "xbc");
    // zdt: from the first of z and dt to the end of the furthest.
    const uint64_t zdt_first = has_z ? std::min(zv.first, dv.first) : dv.first;
    const uint64_t zdt_end = std::max(dv.first + detail::view_span(p.dt), has_z ? zv.first + detail::view_span(p.z) : 0);
    const detail::Window zw = detail::window(ctx, *p.dt.buffer, zdt_first, zdt_end - zdt_first, op, "zdt");
    for (uint64_t col : {bv.first - xv.first, cv.first - xv.first, dv.first - zdt_first, zv.first - zdt_first})
        detail::require(col <= 0xffffffffull, op, "B, C, z or dt lie more than 2^32 values from their binding's start");
    const detail::Window aw = detail::view_window(ctx, p.a, op, "A");
    const detail::Window bw = has_dtb ? detail::view_window(ctx, p.dt_bias, op, "dt_bias") : aw;
    const detail::Window dw = has_d ? detail::view_window(ctx, p.d, op, "D") : aw;
    const detail::Window yw = detail::view_window(ctx, p.y, op, "y");
    const gpu::SubgroupPair variants{gpu::ShaderId::ssm_scan, gpu::ShaderId::ssm_scan_sg};
    const auto& pipeline =
        chunked ? ctx.pipeline(gpu::ShaderId::ssm_scan_chunked, 7, sizeof(SsmScanPush), {wg, ssm_scan_chunk(ctx)})
        : rows  ? ctx.pipeline(gpu::ShaderId::ssm_scan_rows, 7, sizeof(SsmScanPush), {wg, uint32_t(d_state)})
                : ctx.pipeline(variants.pick(ctx.caps().subgroup_arithmetic), 7, sizeof(SsmScanPush), {wg});
    SsmScanPush push{};
    push.n_tokens = uint32_t(n_tokens);
    push.n_head = uint32_t(n_head);
    push.head_dim = uint32_t(d_inner / n_head);
    push.d_state = uint32_t(d_state);
    push.heads_per_group = uint32_t(n_head / n_group);
    push.st_shift = sw.shift;
    push.xbc_shift = xw.shift;
    push.xbc_stride = xv.stride;
    push.b_col = uint32_t(bv.first - xv.first);
    push.c_col = uint32_t(cv.first - xv.first);
    push.zdt_shift = zw.shift;
    push.zdt_stride = dv.stride;
    push.z_col = has_z ? uint32_t(zv.first - zdt_first) : 0u;
    push.dt_col = uint32_t(dv.first - zdt_first);
    push.dtb_shift = has_dtb ? bw.shift : 0u;
    push.a_shift = aw.shift;
    push.d_shift = has_d ? dw.shift : 0u;
    push.y_shift = yw.shift;
    push.y_stride = yv.stride;
    push.flags = (has_dtb ? 1u : 0u) | (has_d ? 2u : 0u) | (has_z ? 4u : 0u);
    const uint64_t groups = chunked ? uint64_t(n_head) : rows ? (uint64_t(d_inner) + wg - 1) / wg : uint64_t(d_inner);
    const detail::Grid g = detail::grid_2d(ctx, groups, op);
    s.dispatch(pipeline, {sw.range, xw.range, zw.range, bw.range, aw.range, dw.range, yw.range}, push, g.x, g.y);
}

void ssm_group_rms_norm(Stream& s, const TensorView& x, const Buffer* w, const TensorView& y, int64_t n_group,
                        float eps) {
    const char* op = "ssm_group_rms_norm";
    detail::checked_f32(x, op, "x");
    detail::checked_f32(y, op, "y");
    detail::require_packed(x, op, "x");
    detail::require_packed(y, op, "y");
    detail::require_same_shape(x, y, op, "x and y");
    detail::require(n_group > 0 && x.cols > 0 && x.cols % n_group == 0, op,
                    "x's " + std::to_string(x.cols) + " columns are not " + std::to_string(n_group) + " groups");
    detail::require(eps >= 0.0f, op, "eps must be >= 0");
    detail::require_same_or_disjoint(y, "y", x, "x", op);
    const int64_t n_rows = x.rows, n = x.cols / n_group;
    if (n_rows == 0) return;
    gpu::Context& ctx = s.context();
    const detail::Window xw = detail::view_window(ctx, x, op, "x");
    const detail::Window yw = detail::view_window(ctx, y, op, "y");
    const detail::Window ww = w ? detail::window(ctx, *w, 0, uint64_t(n_group * n), op, "weight") : xw;
    const uint32_t wg = detail::workgroup_size(ctx, n >= 1024 ? 256 : 64);
    const gpu::SubgroupPair variants{gpu::ShaderId::ssm_norm, gpu::ShaderId::ssm_norm_sg};
    const auto& pipeline = ctx.pipeline(variants.pick(ctx.caps().subgroup_arithmetic), 3, sizeof(SsmNormPush), {wg});
    SsmNormPush push{uint32_t(n), uint32_t(n_group), uint32_t(n_rows * n_group), xw.shift, yw.shift,
                     w ? ww.shift : 0u, w ? 1u : 0u, eps};
    const detail::Grid g = detail::grid_2d(ctx, uint64_t(n_rows * n_group), op);
    s.dispatch(pipeline, {xw.range, ww.range, yw.range}, push, g.x, g.y);
}

}  // namespace vkllm::ops
