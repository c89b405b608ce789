// The state-space kernels (ssm_conv, ssm_scan, ssm_group_rms_norm) against the CPU reference
// (cpu/ref_ssm.h) on odd shapes, operands inside wider rows at offsets as Mamba-2 lays them out,
// and a prompt followed by decode steps carrying the state equal to one pass over every token.
// The scan runs under each of its kernels (one workgroup per state row; one invocation per row;
// chunks of tokens in the state-space dual form, for prompts).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cpu/ref_ssm.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ssm_ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

class Ssm : public test::GpuTest {
protected:
    gpu::Buffer upload(const std::vector<float>& v) {
        gpu::Buffer b(ctx(), std::max<size_t>(v.size(), 1) * 4, gpu::Memory::Device);
        if (!v.empty()) b.upload(v.data(), v.size() * 4);
        return b;
    }
    std::vector<float> download(const gpu::Buffer& b) {
        std::vector<float> v(b.size() / 4);
        b.download(v.data(), b.size());
        return v;
    }
};

// Relative max error: max |got - ref| / max(1, max |ref|).
double rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
    double m = 1.0;
    for (float r : ref) m = std::max(m, double(std::fabs(r)));
    return test::max_abs_diff(got, ref) / m;
}

TEST_F(Ssm, ConvMatchesReferenceForOddShapes) {
    struct Case {
        int64_t n_tokens, channels, d_conv, x_stride, x_offset;
        bool bias, silu;
    };
    const Case cases[] = {{1, 5, 4, 5, 0, true, true},     {7, 33, 4, 50, 3, true, true},
                          {3, 70, 2, 70, 0, false, false}, {13, 129, 5, 140, 11, true, false},
                          {2, 9, 1, 9, 0, true, true},     {20, 65, 4, 100, 17, false, true}};
    for (const Case& c : cases) {
        const uint32_t seed = uint32_t(c.n_tokens * 131 + c.channels);
        auto x = test::random_floats(size_t(c.x_offset + c.n_tokens * c.x_stride), seed, -2.0f, 2.0f);
        auto st = test::random_floats(size_t(c.channels * (c.d_conv - 1)), seed + 1);
        auto w = test::random_floats(size_t(c.channels * c.d_conv), seed + 2);
        auto b = test::random_floats(size_t(c.channels), seed + 3);
        std::vector<float> ref_y(size_t(c.n_tokens * c.channels)), ref_st = st;
        cpu::ssm_conv(x.data() + c.x_offset, c.x_stride, ref_st.data(), w.data(), c.bias ? b.data() : nullptr,
                      ref_y.data(), c.channels, c.n_tokens, c.channels, c.d_conv, c.silu);

        gpu::Buffer xb = upload(x), sb = upload(st), wb = upload(w), bb = upload(b);
        gpu::Buffer yb(ctx(), ref_y.size() * 4, gpu::Memory::Device);
        ops::SsmConvArgs a;
        a.x = ops::f32_rows(xb, c.n_tokens, c.channels, uint64_t(c.x_offset), c.x_stride);
        a.state = ops::f32_rows(sb, c.channels, c.d_conv - 1);
        a.w = ops::f32_rows(wb, c.channels, c.d_conv);
        if (c.bias) a.bias = ops::f32_vector(bb, c.channels);
        a.y = ops::f32_rows(yb, c.n_tokens, c.channels), a.silu = c.silu;
        gpu::Stream s(ctx());
        s.begin();
        ops::ssm_conv(s, a);
        s.submit_and_wait();
        const auto got_y = download(yb), got_st = download(sb);
        EXPECT_LT(rel_err(got_y, ref_y), 1e-6) << c.n_tokens << "x" << c.channels << " k" << c.d_conv;
        if (!ref_st.empty()) {
            EXPECT_EQ(std::vector<float>(got_st.begin(), got_st.begin() + long(ref_st.size())), ref_st)
                << c.n_tokens << "x" << c.channels << " k" << c.d_conv;
        }
    }
}

// Mamba-2's layout: one in-projection row [z | x B C | dt] and one conv-output row [x | B | C].
struct ScanCase {
    int64_t n_tokens, n_head, head_dim, d_state, n_group;
    bool gate, d, dt_bias;
};

const char* kernel_name(ops::SsmScanKernel k) {
    switch (k) {
        case ops::SsmScanKernel::Rows: return "rows";
        case ops::SsmScanKernel::Workgroup: return "workgroup";
        case ops::SsmScanKernel::Chunked: return "chunked";
        case ops::SsmScanKernel::Auto: break;
    }
    return "auto";
}

// Runs the case (tokens [0, split) under `kernel`, then the rest under `rest`: in one dispatch, or
// one token per dispatch as decode steps with `steps`), checks y and the state against the
// reference and returns them (y, then the state, in one vector).
std::vector<float> run_scan_case(gpu::Context& ctx, const ScanCase& c, int64_t split, ops::SsmScanKernel kernel,
                                 ops::SsmScanKernel rest, bool steps = false) {
    const int64_t d_inner = c.n_head * c.head_dim, gs = c.n_group * c.d_state;
    const int64_t xbc_stride = d_inner + 2 * gs + 3, zdt_stride = 2 * d_inner + 2 * gs + c.n_head;
    const int64_t xbc_off = 5, zdt_off = 2;
    const uint32_t seed = uint32_t(c.n_tokens * 7 + c.n_head * 13 + c.d_state);
    auto xbc = test::random_floats(size_t(xbc_off + c.n_tokens * xbc_stride), seed, -1.5f, 1.5f);
    auto zdt = test::random_floats(size_t(zdt_off + c.n_tokens * zdt_stride), seed + 1, -3.0f, 3.0f);
    // dt over softplus' threshold (20) and far below it on some tokens
    for (int64_t t = 0; t < c.n_tokens; ++t) {
        float* dt = zdt.data() + zdt_off + t * zdt_stride + (zdt_stride - c.n_head);
        if (t % 5 == 1) dt[0] = 25.0f;
        if (t % 5 == 2) dt[c.n_head - 1] = -30.0f;
    }
    auto state = test::random_floats(size_t(d_inner * c.d_state), seed + 2);
    auto dtb = test::random_floats(size_t(c.n_head), seed + 3, -1.0f, 1.0f);
    auto a_h = test::random_floats(size_t(c.n_head), seed + 4, -2.0f, -0.05f);
    auto d_h = test::random_floats(size_t(c.n_head), seed + 5);

    std::vector<float> ref_y(size_t(c.n_tokens * d_inner)), ref_st = state;
    cpu::SsmScanRef r;
    r.n_tokens = c.n_tokens, r.n_head = c.n_head, r.head_dim = c.head_dim, r.d_state = c.d_state;
    r.n_group = c.n_group, r.state = ref_st.data();
    r.x = xbc.data() + xbc_off, r.x_stride = xbc_stride;
    r.b = r.x + d_inner, r.b_stride = xbc_stride, r.c = r.x + d_inner + gs, r.c_stride = xbc_stride;
    r.dt = zdt.data() + zdt_off + (zdt_stride - c.n_head), r.dt_stride = zdt_stride;
    r.dt_bias = c.dt_bias ? dtb.data() : nullptr, r.a = a_h.data(), r.d = c.d ? d_h.data() : nullptr;
    r.z = c.gate ? zdt.data() + zdt_off : nullptr, r.z_stride = zdt_stride;
    r.y = ref_y.data(), r.y_stride = d_inner;
    cpu::ssm_scan(r);

    auto up = [&](const std::vector<float>& v) {
        gpu::Buffer b(ctx, v.size() * 4, gpu::Memory::Device);
        b.upload(v.data(), v.size() * 4);
        return b;
    };
    gpu::Buffer xb = up(xbc), zb = up(zdt), sb = up(state), bb = up(dtb), ab = up(a_h), db = up(d_h);
    gpu::Buffer yb(ctx, ref_y.size() * 4, gpu::Memory::Device);
    gpu::Stream s(ctx);
    s.begin();
    // Tokens [0, split) then [split, n): each dispatch continues from the state the last wrote.
    std::vector<std::pair<int64_t, int64_t>> parts{{0, split}};
    if (steps) {
        for (int64_t t = split; t < c.n_tokens; ++t) parts.push_back({t, t + 1});
    } else {
        parts.push_back({split, c.n_tokens});
    }
    for (auto [t0, t1] : parts) {
        if (t1 <= t0) continue;
        const int64_t n = t1 - t0;
        const uint64_t xbc_row = uint64_t(xbc_off + t0 * xbc_stride), zdt_row = uint64_t(zdt_off + t0 * zdt_stride);
        ops::SsmScanArgs a;
        a.state = ops::f32_rows(sb, d_inner, c.d_state);
        a.x = ops::f32_rows(xb, n, d_inner, xbc_row, xbc_stride);
        a.b = ops::f32_rows(xb, n, gs, xbc_row + uint64_t(d_inner), xbc_stride);
        a.c = ops::f32_rows(xb, n, gs, xbc_row + uint64_t(d_inner + gs), xbc_stride);
        a.dt = ops::f32_rows(zb, n, c.n_head, zdt_row + uint64_t(zdt_stride - c.n_head), zdt_stride);
        if (c.gate) a.z = ops::f32_rows(zb, n, d_inner, zdt_row, zdt_stride);
        if (c.dt_bias) a.dt_bias = ops::f32_vector(bb, c.n_head);
        a.a = ops::f32_vector(ab, c.n_head);
        if (c.d) a.d = ops::f32_vector(db, c.n_head);
        a.y = ops::f32_rows(yb, n, d_inner, uint64_t(t0 * d_inner));
        a.kernel = t0 == 0 ? kernel : rest;
        ops::ssm_scan(s, a);
        s.barrier("the next tokens read the state");
    }
    s.submit_and_wait();
    std::vector<float> got_y(ref_y.size()), got_st(ref_st.size());
    yb.download(got_y.data(), got_y.size() * 4);
    sb.download(got_st.data(), got_st.size() * 4);
    const std::string what = std::to_string(c.n_tokens) + " tokens, " + std::to_string(c.n_head) + "x" +
                             std::to_string(c.head_dim) + " state " + std::to_string(c.d_state) + " groups " +
                             std::to_string(c.n_group) + " split " + std::to_string(split) + " (" +
                             kernel_name(kernel) + " then " + kernel_name(rest) + (steps ? " steps)" : ")");
    // The chunked form takes each decay as exp of a difference of running sums of logs (not a
    // product of exps): up to |sum| x 2^-24 relative error in a decay, with the large dt the cases
    // carry (sums of -100 and more) about 1e-5.
    const bool any_chunked = kernel == ops::SsmScanKernel::Chunked || rest == ops::SsmScanKernel::Chunked;
    const double tol = any_chunked ? 1e-4 : 2e-5;
    EXPECT_LT(rel_err(got_y, ref_y), tol) << what;
    EXPECT_LT(rel_err(got_st, ref_st), tol) << what;
    got_y.insert(got_y.end(), got_st.begin(), got_st.end());
    return got_y;
}

TEST_F(Ssm, ScanMatchesReferenceForOddShapes) {
    const ScanCase cases[] = {{5, 3, 7, 16, 1, true, true, true},
                              {9, 4, 5, 33, 2, true, false, true},
                              {1, 6, 3, 130, 3, false, true, false},
                              {23, 2, 16, 16, 2, true, true, true}};
    for (const ScanCase& c : cases)
        for (auto kernel : {ops::SsmScanKernel::Workgroup, ops::SsmScanKernel::Rows, ops::SsmScanKernel::Chunked})
            run_scan_case(ctx(), c, c.n_tokens, kernel, kernel);
}

// Prompts over several chunks and not a multiple of the chunk (64, or 32 under the mobile clamp),
// one of them a single partial chunk, a state wider than any workgroup, then decode steps.
TEST_F(Ssm, ChunkedScanMatchesReferenceOverSeveralChunks) {
    const int64_t chunk = ops::ssm_scan_chunk(ctx());
    const ScanCase cases[] = {{3 * chunk + 21, 3, 5, 16, 3, true, true, true},
                              {chunk - 7, 2, 9, 300, 1, true, false, false},
                              {2 * chunk + 1, 4, 16, 32, 2, false, true, true}};
    for (const ScanCase& c : cases) run_scan_case(ctx(), c, c.n_tokens, ops::SsmScanKernel::Chunked, ops::SsmScanKernel::Chunked);
    // A prompt in chunks, decode steps with the one-step kernel, then a prompt after the state.
    const ScanCase c{2 * chunk + 5, 3, 6, 16, 1, true, true, true};
    run_scan_case(ctx(), c, chunk + 3, ops::SsmScanKernel::Chunked, ops::SsmScanKernel::Rows, true);
    run_scan_case(ctx(), c, chunk + 3, ops::SsmScanKernel::Rows, ops::SsmScanKernel::Chunked);
}

// A prompt, then one-token decode steps carrying the state: the same as one pass.
TEST_F(Ssm, ScanPromptThenDecodeEqualsOnePass) {
    for (auto kernel : {ops::SsmScanKernel::Workgroup, ops::SsmScanKernel::Rows}) {
        run_scan_case(ctx(), {12, 4, 6, 16, 2, true, true, true}, 11, kernel, kernel);
        run_scan_case(ctx(), {12, 4, 6, 16, 2, true, true, true}, 4, kernel, kernel, true);
    }
}

// The two kernels do the same arithmetic in the same order: equal bits.
TEST_F(Ssm, ScanKernelsAgreeBitForBit) {
    const ScanCase c{17, 3, 5, 48, 3, true, true, true};
    EXPECT_EQ(run_scan_case(ctx(), c, 9, ops::SsmScanKernel::Rows, ops::SsmScanKernel::Rows),
              run_scan_case(ctx(), c, 9, ops::SsmScanKernel::Workgroup, ops::SsmScanKernel::Workgroup));
}

TEST_F(Ssm, ConvPromptThenDecodeStepsEqualOnePass) {
    const int64_t n_tokens = 10, channels = 37, d_conv = 4;
    auto x = test::random_floats(size_t(n_tokens * channels), 91, -2.0f, 2.0f);
    auto w = test::random_floats(size_t(channels * d_conv), 92);
    auto b = test::random_floats(size_t(channels), 93);
    std::vector<float> st(size_t(channels * (d_conv - 1)), 0.0f), ref_st = st, ref_y(x.size());
    cpu::ssm_conv(x.data(), channels, ref_st.data(), w.data(), b.data(), ref_y.data(), channels, n_tokens, channels,
                  d_conv, true);
    gpu::Buffer xb = upload(x), sb = upload(st), wb = upload(w), bb = upload(b);
    gpu::Buffer yb(ctx(), x.size() * 4, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    // 2 tokens (fewer than d_conv - 1), then 1-token steps
    for (int64_t t0 = 0; t0 < n_tokens;) {
        const int64_t n = t0 == 0 ? 2 : 1;
        ops::SsmConvArgs a;
        a.x = ops::f32_rows(xb, n, channels, uint64_t(t0 * channels));
        a.state = ops::f32_rows(sb, channels, d_conv - 1);
        a.w = ops::f32_rows(wb, channels, d_conv);
        a.bias = ops::f32_vector(bb, channels);
        a.y = ops::f32_rows(yb, n, channels, uint64_t(t0 * channels));
        ops::ssm_conv(s, a);
        s.barrier("the next token reads the state");
        t0 += n;
    }
    s.submit_and_wait();
    EXPECT_LT(rel_err(download(yb), ref_y), 1e-6);
    EXPECT_EQ(download(sb), ref_st);
}

TEST_F(Ssm, GroupRmsNormMatchesReference) {
    const int64_t shapes[][3] = {{1, 7, 1}, {5, 12, 3}, {3, 1100, 2}};  // rows, n, groups
    for (auto [rows, n, groups] : shapes) {
        auto x = test::random_floats(size_t(rows * n * groups), uint32_t(rows + n), -3.0f, 3.0f);
        auto w = test::random_floats(size_t(n * groups), 7, 0.5f, 1.5f);
        std::vector<float> ref(x.size());
        cpu::ssm_group_rms_norm(x.data(), w.data(), ref.data(), rows, n, groups, 1e-5f);
        gpu::Buffer xb = upload(x), wb = upload(w);
        gpu::Stream s(ctx());
        s.begin();
        const ops::TensorView xv = ops::f32_rows(xb, rows, n * groups);
        ops::ssm_group_rms_norm(s, xv, &wb, xv, groups, 1e-5f);  // in place
        s.submit_and_wait();
        EXPECT_LT(test::nmse(download(xb), ref), 1e-11) << rows << "x" << n << " groups " << groups;
    }
}

}  // namespace
}  // namespace vkllm
