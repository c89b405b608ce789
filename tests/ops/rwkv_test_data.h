// wkv7's operands for the RWKV op tests (test_rwkv*.cpp): random projections shaped as the time
// mix feeds them, the CPU reference over them, and the GPU op run over them in calls of given
// lengths (a prompt, then decode steps) with the state carried.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cpu/ref_rwkv.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "op_test_data.h"
#include "ops/rwkv_ops.h"
#include "test_support.h"

namespace vkllm::test {

// max |got - ref| over the largest |ref| (at least 1).
inline double rel_err(const std::vector<float>& got, const std::vector<float>& ref) {
    double m = 1.0;
    for (float r : ref) m = std::max(m, double(std::fabs(r)));
    return max_abs_diff(got, ref) / m;
}

// Whether every value is finite (max_abs_diff passes NaNs by: they compare false).
inline bool all_finite(const std::vector<float>& v) {
    return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
}

struct Heads {
    int64_t n_head, head_size;
    int64_t C() const { return n_head * head_size; }
};
inline std::string describe(const Heads& h, int64_t n) {
    return std::to_string(n) + " tokens, " + std::to_string(h.n_head) + " heads of " + std::to_string(h.head_size);
}

// wkv7's operands as one projection row per token: [pad | r | w | k | v | a | b | pad], with w a
// decay in (0.55, 1), a = -kk and b = kk * ag for a unit kk per head (what the time mix feeds it).
struct WkvOperands {
    Heads h;
    int64_t n, stride;
    std::vector<float> rows, state;
    WkvOperands(Heads hs, int64_t n_tokens) : h(hs), n(n_tokens), stride(6 * hs.C() + 3) {
        const int64_t C = h.C(), N = h.head_size;
        rows = random_floats(size_t(n * stride), uint32_t(n * 13 + C), -1.0f, 1.0f);
        const auto ag = random_floats(size_t(n * C), uint32_t(C + 5), 0.0f, 1.0f);
        for (int64_t t = 0; t < n; ++t) {
            float* row = rows.data() + t * stride;
            for (int64_t c = 0; c < C; ++c) row[col(1) + c] = 0.55f + 0.45f * (0.5f + 0.5f * row[col(1) + c]);
            for (int64_t hd = 0; hd < h.n_head; ++hd) {
                float* kk = row + col(4) + hd * N;
                double sum = 0.0;
                for (int64_t j = 0; j < N; ++j) sum += double(kk[j]) * kk[j];
                const float inv = float(1.0 / std::sqrt(sum));
                for (int64_t j = 0; j < N; ++j) {
                    const float u = kk[j] * inv;
                    kk[j] = -u;
                    row[col(5) + hd * N + j] = u * ag[size_t(t * C + hd * N + j)];
                }
            }
        }
        state = random_floats(size_t(C * N), uint32_t(C * 3 + 1), -0.5f, 0.5f);
    }
    int64_t col(int which) const { return 1 + which * h.C(); }  // r, w, k, v, a, b
    const float* at(int which, int64_t t) const { return rows.data() + t * stride + col(which); }
    float& decay(int64_t t, int64_t c) { return rows[size_t(t * stride + col(1) + c)]; }

    // The reference over all n tokens from `st`, carried; out rows [n][C] packed.
    void reference(std::vector<float>& st, std::vector<float>& out) const {
        cpu::Wkv7Ref p;
        p.n_tokens = n, p.n_head = h.n_head, p.head_size = h.head_size, p.state = st.data();
        p.r = at(0, 0), p.w = at(1, 0), p.k = at(2, 0), p.v = at(3, 0), p.a = at(4, 0), p.b = at(5, 0);
        p.r_stride = p.w_stride = p.k_stride = p.v_stride = p.a_stride = p.b_stride = stride;
        out.assign(size_t(n * h.C()), 0.0f);
        p.out = out.data(), p.out_stride = h.C();
        cpu::rwkv_wkv7(p);
    }
};

// What ops::rwkv_wkv7 gave over the n tokens: out [n][C] packed, and the state after them.
struct WkvResult {
    std::vector<float> out, state;
    bool guards_kept = true;  // the values just outside the state's window were left alone
};

// ops::rwkv_wkv7 over the operands in calls of the given lengths (summing to n), each with the
// given kernel; the state sits at an offset in its buffer and out at a wider row stride.
inline WkvResult run_wkv7(gpu::Context& ctx, const WkvOperands& in, const std::vector<int64_t>& calls,
                          ops::Wkv7Kernel kernel) {
    const int64_t C = in.h.C(), N = in.h.head_size, n = in.n, out_stride = C + 2, st_first = 5;
    const float guard = 9.0f;
    gpu::Buffer rows = upload(ctx, in.rows);
    std::vector<float> st0(size_t(st_first + C * N + 3), guard);
    std::copy(in.state.begin(), in.state.end(), st0.begin() + st_first);
    gpu::Buffer st = upload(ctx, st0), out = upload(ctx, std::vector<float>(size_t(1 + n * out_stride), 0.0f));
    auto view = [&](int which, int64_t t0, int64_t len) {
        return ops::f32_rows(rows, len, C, uint64_t(t0 * in.stride + in.col(which)), in.stride);
    };
    int64_t t0 = 0;
    for (const int64_t len : calls) {
        ops::RwkvWkv7Args a;
        a.n_head = in.h.n_head, a.head_size = N, a.kernel = kernel;
        a.state = ops::f32_rows(st, C, N, st_first);
        a.r = view(0, t0, len), a.w = view(1, t0, len), a.k = view(2, t0, len), a.v = view(3, t0, len);
        a.a = view(4, t0, len), a.b = view(5, t0, len);
        a.out = ops::f32_rows(out, len, C, uint64_t(1 + t0 * out_stride), out_stride);
        gpu::Stream s(ctx);
        s.begin();
        ops::rwkv_wkv7(s, a);
        s.submit_and_wait();
        t0 += len;
    }
    const auto out_all = download(out), st_all = download(st);
    WkvResult r;
    r.out.resize(size_t(n * C));
    for (int64_t t = 0; t < n; ++t)
        std::copy_n(out_all.begin() + 1 + t * out_stride, C, r.out.begin() + t * C);
    r.state.assign(st_all.begin() + st_first, st_all.begin() + st_first + C * N);
    r.guards_kept = st_all[size_t(st_first - 1)] == guard && st_all[size_t(st_first + C * N)] == guard;
    return r;
}

}  // namespace vkllm::test
