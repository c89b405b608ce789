// The gated delta rule's operands for its op tests (test_delta_net*.cpp): random projection rows
// laid out as Qwen3-Next's (q | k | v inside one wider row, g | beta in another), the CPU
// reference over them, and the GPU op run over them in calls of given lengths (a prompt, then
// decode steps) with the state carried.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/delta_net.h"
#include "cpu/ref_delta_net.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "op_test_data.h"
#include "ops/delta_net_ops.h"
#include "test_support.h"

namespace vkllm::test::delta {

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

struct Case {
    int64_t n_tokens, n_head_k, n_head_v, d_k, d_v;
    DeltaHeadShare share;
    bool per_key, l2;
};

inline std::string describe(const Case& c) {
    return std::to_string(c.n_tokens) + " tokens, heads " + std::to_string(c.n_head_k) + "/" +
           std::to_string(c.n_head_v) + ", d_k " + std::to_string(c.d_k) + ", d_v " + std::to_string(c.d_v) +
           (c.share == DeltaHeadShare::Tiled ? " tiled" : " interleaved") + (c.per_key ? " per-key decay" : "") +
           (c.l2 ? " l2" : "");
}

// One layer's operands on the host: qkv rows [pad | q | k | v | pad], gate rows [g | beta | pad].
struct Operands {
    Case c;
    int64_t qkv_stride, q_col, k_col, v_col, gate_stride, g_cols;
    std::vector<float> qkv, gates, state;

    explicit Operands(const Case& cs) : c(cs) {
        q_col = 2;
        k_col = q_col + c.n_head_k * c.d_k;
        v_col = k_col + c.n_head_k * c.d_k;
        qkv_stride = v_col + c.n_head_v * c.d_v + 1;
        g_cols = c.per_key ? c.n_head_v * c.d_k : c.n_head_v;
        gate_stride = g_cols + c.n_head_v + 3;
        const uint32_t seed = uint32_t(c.n_tokens * 31 + c.n_head_v * 7 + c.d_k);
        qkv = random_floats(size_t(c.n_tokens * qkv_stride), seed, -1.0f, 1.0f);
        if (!c.l2) {  // the kernel's inputs are normalised already: normalise them here
            for (int64_t t = 0; t < c.n_tokens; ++t)
                for (int64_t h = 0; h < 2 * c.n_head_k; ++h) {
                    float* x = qkv.data() + t * qkv_stride + q_col + h * c.d_k;
                    cpu::delta_net_l2_norm(x, x, c.d_k, 1e-6f);
                }
        }
        gates = random_floats(size_t(c.n_tokens * gate_stride), seed + 1, -2.0f, -0.01f);  // log-decays
        for (int64_t t = 0; t < c.n_tokens; ++t)
            for (int64_t h = 0; h < c.n_head_v; ++h)
                gates[size_t(t * gate_stride + g_cols + h)] = 0.05f + 0.9f * float((t * 7 + h * 3) % 11) / 10.0f;
        state = random_floats(size_t(c.n_head_v * c.d_v * c.d_k), seed + 2, -0.5f, 0.5f);
    }

    // The log-decay of token t, value head h (and key row i with a decay per key row).
    float& log_decay(int64_t t, int64_t h, int64_t i = 0) {
        return gates[size_t(t * gate_stride + (c.per_key ? h * c.d_k + i : h))];
    }

    cpu::DeltaNetRef ref(float* st, float* out) const {
        cpu::DeltaNetRef r;
        r.n_tokens = c.n_tokens, r.n_head_k = c.n_head_k, r.n_head_v = c.n_head_v, r.d_k = c.d_k, r.d_v = c.d_v;
        r.share = c.share, r.state = st;
        r.q = qkv.data() + q_col, r.k = qkv.data() + k_col, r.v = qkv.data() + v_col;
        r.q_stride = r.k_stride = r.v_stride = qkv_stride;
        r.g = gates.data(), r.g_stride = gate_stride, r.per_key_decay = c.per_key;
        r.beta = gates.data() + g_cols, r.beta_stride = gate_stride;
        r.out = out, r.out_stride = c.n_head_v * c.d_v;
        r.l2_norm_qk = c.l2;
        return r;
    }

    // One reference pass over every token from the initial state: (out, state after).
    std::pair<std::vector<float>, std::vector<float>> reference() const {
        std::vector<float> st = state, out(size_t(c.n_tokens * c.n_head_v * c.d_v));
        cpu::gated_delta_net(ref(st.data(), out.data()));
        return {out, st};
    }

    // The op's arguments for tokens [t0, t1); out rows [t1 - t0, n_head_v * d_v] from `out_first`.
    ops::GatedDeltaNetArgs args(int64_t t0, int64_t t1, const gpu::Buffer& qkvb, const gpu::Buffer& gb,
                                const gpu::Buffer& sb, const gpu::Buffer& ob, uint64_t out_first,
                                int64_t out_stride) const {
        const int64_t n = t1 - t0;
        const uint64_t row = uint64_t(t0 * qkv_stride), grow = uint64_t(t0 * gate_stride);
        ops::GatedDeltaNetArgs a;
        a.n_head_k = c.n_head_k, a.n_head_v = c.n_head_v, a.d_k = c.d_k, a.d_v = c.d_v, a.share = c.share;
        a.state = ops::f32_rows(sb, c.n_head_v * c.d_v, c.d_k);
        a.q = ops::f32_rows(qkvb, n, c.n_head_k * c.d_k, row + uint64_t(q_col), qkv_stride);
        a.k = ops::f32_rows(qkvb, n, c.n_head_k * c.d_k, row + uint64_t(k_col), qkv_stride);
        a.v = ops::f32_rows(qkvb, n, c.n_head_v * c.d_v, row + uint64_t(v_col), qkv_stride);
        a.g = ops::f32_rows(gb, n, g_cols, grow, gate_stride);
        a.beta = ops::f32_rows(gb, n, c.n_head_v, grow + uint64_t(g_cols), gate_stride);
        a.out = ops::f32_rows(ob, n, c.n_head_v * c.d_v, out_first, out_stride);
        a.l2_norm_qk = c.l2;
        return a;
    }
};

struct Result {
    std::vector<float> out, state;
};

// Runs the tokens in calls ending at each of `splits` with `kernel`, the output into its own
// buffer or (in_place) over v; returns every token's output and the final state.
inline Result run(gpu::Context& ctx, const Operands& o, const std::vector<int64_t>& splits,
                  ops::DeltaNetKernel kernel = ops::DeltaNetKernel::Auto, bool in_place = false) {
    const Case& c = o.c;
    const int64_t dv_all = c.n_head_v * c.d_v;
    gpu::Buffer qkvb = upload(ctx, o.qkv), gb = upload(ctx, o.gates), sb = upload(ctx, o.state);
    gpu::Buffer ob(ctx, size_t(c.n_tokens * dv_all) * 4, gpu::Memory::Device);
    gpu::Stream s(ctx);
    s.begin();
    int64_t t0 = 0;
    for (int64_t t1 : splits) {
        ops::GatedDeltaNetArgs a = o.args(t0, t1, qkvb, gb, sb, ob, uint64_t(t0 * dv_all), 0);
        a.kernel = kernel;
        if (in_place) a.out = a.v;
        ops::gated_delta_net(s, a);
        s.barrier("the next tokens read the state");
        t0 = t1;
    }
    s.submit_and_wait();
    Result r;
    r.state = download(sb);
    if (!in_place) {
        r.out = download(ob);
        return r;
    }
    const auto all = download(qkvb);
    r.out.resize(size_t(c.n_tokens * dv_all));
    for (int64_t t = 0; t < c.n_tokens; ++t)
        for (int64_t i = 0; i < dv_all; ++i)
            r.out[size_t(t * dv_all + i)] = all[size_t(t * o.qkv_stride + o.v_col + i)];
    return r;
}

}  // namespace vkllm::test::delta
