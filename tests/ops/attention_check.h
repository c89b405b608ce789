// The attention op test's case and check: the GPU op (ops::attention) against the CPU
// reference (cpu::attention) on one case of heads, positions, masks, cache type and split.
// Shared by tests/ops/test_attention.cpp and test_alibi.cpp.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "cpu/ref_ops.h"
#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/ops.h"
#include "op_test_data.h"
#include "test_support.h"

namespace vkllm::attention_test {

struct Case {
    int n_head = 8, n_head_kv = 8, head_dim = 64, head_dim_v = 0;
    int64_t n_q = 1, n_kv = 1;  // n_kv: cache slots
    bool causal = true;
    int window = 0, chunk = 0;
    float softcap = 0.0f;
    float max_alibi_bias = 0.0f;  // > 0: ALiBi
    bool sinks = false, probs = false, scratch = false;
    bool ring = false;        // slots hold positions in ring-buffer order (pos % n_kv), not sorted
    int empty_slots = 0;      // slots marked -1, their K/V filled with NaN
    double scratch_share = 1.0;  // of attention_scratch_bytes(): a smaller scratch splits less
    float q_gain = 1.0f;      // scales q: large logits test the softmax's stability
    uint64_t q_offset = 0;
    bool f16 = false;         // an fp16 cache: K and V stored as fp16 (the reference sees the rounded values)
    bool q8 = false;          // a Q8_0 cache: K and V in 32-value blocks (likewise)

    std::string name() const {
        std::string s = "h" + std::to_string(n_head) + "/" + std::to_string(n_head_kv) + " d" +
                        std::to_string(head_dim) + (head_dim_v ? "/" + std::to_string(head_dim_v) : "") + " q" +
                        std::to_string(n_q) + " kv" + std::to_string(n_kv);
        if (!causal) s += " noncausal";
        if (window) s += " window" + std::to_string(window);
        if (chunk) s += " chunk" + std::to_string(chunk);
        if (softcap > 0) s += " softcap";
        if (max_alibi_bias > 0) s += " alibi" + std::to_string(max_alibi_bias);
        if (sinks) s += " sinks";
        if (probs) s += " probs";
        if (scratch) s += " split";
        if (ring) s += " ring";
        if (empty_slots) s += " empty" + std::to_string(empty_slots);
        if (f16) s += " f16";
        if (q8) s += " q8_0";
        return s;
    }
};

// x quantised as a Q8_0 cache holds it (9 words per 32 values: the scale, then 32 int8s), and x
// replaced by the values it decodes to. A block holding NaN gets a NaN scale (an empty slot).
inline std::vector<uint32_t> q8_blocks(std::vector<float>& x) {
    std::vector<uint32_t> out;
    std::vector<float> r(32);
    for (size_t b = 0; b < x.size() / 32; ++b) {
        float* blk = &x[b * 32];
        cpu::round_activations(blk, r.data(), 32, 32);
        float amax = 0.0f;
        for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(blk[i]));
        const float d = std::isnan(blk[0]) ? blk[0] : gguf::fp16_to_fp32(gguf::fp32_to_fp16(amax / 127.0f));
        uint32_t dw;
        std::memcpy(&dw, &d, 4);
        out.push_back(dw);
        for (int w = 0; w < 8; ++w) {
            uint32_t word = 0;
            for (int i = 0; i < 4; ++i) {
                const int q = d > 0 ? int(std::lrint(r[size_t(4 * w + i)] / d)) : 0;
                word |= uint32_t(uint8_t(int8_t(q))) << (8 * i);
            }
            out.push_back(word);
        }
        if (std::isnan(d)) continue;
        std::copy(r.begin(), r.end(), blk);
    }
    return out;
}

class Attention : public test::GpuTest {
protected:
    template <class T>
    gpu::Buffer upload(const std::vector<T>& v) {
        return test::upload(ctx(), v);
    }

    void check(const Case& c) {
        SCOPED_TRACE(c.name());
        if (c.f16 && !ctx().caps().storage_16bit) GTEST_SKIP() << "no 16-bit storage on this device: no f16 cache";
        const int dv = c.head_dim_v ? c.head_dim_v : c.head_dim;
        const size_t q_size = size_t(c.n_q * c.n_head * c.head_dim);
        const size_t k_row = size_t(c.n_head_kv * c.head_dim), v_row = size_t(c.n_head_kv * dv);
        std::mt19937 rng(uint32_t(c.n_q * 1000 + c.n_kv + c.head_dim));

        // Positions: the cache holds the last n_kv positions of a sequence; the queries are its
        // last n_q tokens (their keys already written, as the forward pass does).
        const int32_t first = c.ring ? 37 : 0;  // a ring has wrapped: slot = pos % n_kv
        std::vector<int32_t> kv_pos(size_t(c.n_kv));
        for (int64_t j = 0; j < c.n_kv; ++j) {
            const int32_t pos = first + int32_t(j);
            kv_pos[size_t(c.ring ? pos % c.n_kv : j)] = pos;
        }
        const int32_t last = first + int32_t(c.n_kv) - 1;
        std::vector<int32_t> q_pos(size_t(c.n_q));
        for (int64_t i = 0; i < c.n_q; ++i) q_pos[size_t(i)] = last - int32_t(c.n_q - 1 - i);
        std::vector<size_t> slots(size_t(c.n_kv));
        std::iota(slots.begin(), slots.end(), 0);
        std::shuffle(slots.begin(), slots.end(), rng);
        for (int e = 0; e < c.empty_slots; ++e) kv_pos[slots[size_t(e)]] = -1;

        auto q = test::random_floats(size_t(c.q_offset) + q_size, 1 + uint32_t(c.n_q), -c.q_gain, c.q_gain);
        auto k = test::random_floats(size_t(c.n_kv) * k_row, 2 + uint32_t(c.n_kv));
        auto v = test::random_floats(size_t(c.n_kv) * v_row, 3 + uint32_t(c.n_kv));
        auto sinks = test::random_floats(size_t(c.n_head), 4, -1.0f, 3.0f);
        const float nan = std::numeric_limits<float>::quiet_NaN();
        for (int64_t j = 0; j < c.n_kv; ++j)
            if (kv_pos[size_t(j)] < 0) {  // an empty slot may hold anything
                std::fill_n(k.begin() + long(size_t(j) * k_row), k_row, nan);
                std::fill_n(v.begin() + long(size_t(j) * v_row), v_row, nan);
            }

        std::vector<uint16_t> k16, v16;  // what an f16 cache holds; the reference reads the same values
        if (c.f16) {
            for (float& x : k) k16.push_back(gguf::fp32_to_fp16(x)), x = gguf::fp16_to_fp32(k16.back());
            for (float& x : v) v16.push_back(gguf::fp32_to_fp16(x)), x = gguf::fp16_to_fp32(v16.back());
        }
        std::vector<uint32_t> k8, v8;  // and a Q8_0 cache (empty slots: NaN scales)
        if (c.q8) {
            k8 = q8_blocks(k);
            v8 = q8_blocks(v);
        }

        // Reference over the occupied slots, probabilities scattered back to slot order.
        std::vector<float> kc, vc;
        std::vector<int32_t> pc;
        std::vector<size_t> occupied;
        for (int64_t j = 0; j < c.n_kv; ++j) {
            if (kv_pos[size_t(j)] < 0) continue;
            occupied.push_back(size_t(j));
            pc.push_back(kv_pos[size_t(j)]);
            kc.insert(kc.end(), k.begin() + long(size_t(j) * k_row), k.begin() + long(size_t(j + 1) * k_row));
            vc.insert(vc.end(), v.begin() + long(size_t(j) * v_row), v.begin() + long(size_t(j + 1) * v_row));
        }
        AttentionParams rp;
        rp.n_head = c.n_head;
        rp.n_head_kv = c.n_head_kv;
        rp.head_dim = c.head_dim;
        rp.head_dim_v = dv;
        rp.scale = 1.0f / std::sqrt(float(c.head_dim));
        rp.causal = c.causal;
        rp.window = c.window;
        rp.chunk = c.chunk;
        rp.softcap = c.softcap;
        rp.max_alibi_bias = c.max_alibi_bias;
        const int64_t n_occ = int64_t(occupied.size());
        std::vector<float> ref_out(size_t(c.n_q * c.n_head * dv)), ref_probs_c(size_t(c.n_q * c.n_head * n_occ));
        cpu::attention(q.data() + c.q_offset, kc.data(), vc.data(), q_pos.data(), pc.data(), ref_out.data(),
                       ref_probs_c.data(), c.n_q, n_occ, rp, c.sinks ? sinks.data() : nullptr);
        std::vector<float> ref_probs(size_t(c.n_q * c.n_head * c.n_kv), 0.0f);
        for (int64_t row = 0; row < c.n_q * c.n_head; ++row)
            for (int64_t jj = 0; jj < n_occ; ++jj)
                ref_probs[size_t(row * c.n_kv) + occupied[size_t(jj)]] = ref_probs_c[size_t(row * n_occ + jj)];

        AttentionParams p = rp;
        p.head_dim_v = c.head_dim_v;  // 0: head_dim, as the case may leave it
        const KvCacheType cache = c.f16 ? KvCacheType::F16 : c.q8 ? KvCacheType::Q8_0 : KvCacheType::F32;
        gpu::Buffer kb = c.f16 ? upload(k16) : c.q8 ? upload(k8) : upload(k);
        gpu::Buffer vb = c.f16 ? upload(v16) : c.q8 ? upload(v8) : upload(v);
        gpu::Buffer qb = upload(q), qpb = upload(q_pos), kpb = upload(kv_pos);
        gpu::Buffer sb = upload(sinks);
        gpu::Buffer ob(ctx(), ref_out.size() * 4, gpu::Memory::Device);
        // With sinks, each row's sink probability follows the rows.
        const size_t sink_rows = c.sinks ? size_t(c.n_q * c.n_head) : 0;
        gpu::Buffer pb(ctx(), std::max<size_t>(ref_probs.size() + sink_rows, 1) * 4, gpu::Memory::Device);
        const uint64_t scratch_bytes =
            c.scratch ? uint64_t(double(ops::attention_scratch_bytes(ctx(), c.n_q, c.n_kv, p)) * c.scratch_share) : 0;
        if (c.scratch && c.n_kv >= 256) {
            EXPECT_GT(scratch_bytes, 0u) << "this case is meant to split";
        }
        gpu::Buffer scratch(ctx(), std::max<uint64_t>(scratch_bytes, 4), gpu::Memory::Device);
        gpu::Stream s(ctx());
        s.begin();
        const int64_t kv_heads = int64_t(c.n_head_kv);
        ops::attention(s, ops::f32_rows(qb, c.n_q, int64_t(c.n_head) * c.head_dim, uint64_t(c.q_offset)),
                       ops::i32_vector(qpb, c.n_q), ops::KvView{&kb, c.n_kv, kv_heads * c.head_dim, cache},
                       ops::KvView{&vb, c.n_kv, kv_heads * dv, cache}, ops::i32_vector(kpb, c.n_kv),
                       ops::f32_rows(ob, c.n_q, int64_t(c.n_head) * dv), p, c.sinks ? &sb : nullptr,
                       c.probs ? &pb : nullptr, scratch_bytes ? &scratch : nullptr);
        s.submit_and_wait();

        const auto out = test::download<float>(ob, ref_out.size());
        EXPECT_LT(test::nmse(out, ref_out), 1e-9);
        EXPECT_LT(test::max_abs_diff(out, ref_out), 1e-4);
        if (!c.probs) return;
        const auto all_probs = test::download<float>(pb, ref_probs.size() + sink_rows);
        const std::vector<float> probs(all_probs.begin(), all_probs.begin() + long(ref_probs.size()));
        EXPECT_LT(test::nmse(probs, ref_probs), 1e-9);
        EXPECT_LT(test::max_abs_diff(probs, ref_probs), 1e-5);
        for (int64_t row = 0; row < c.n_q * c.n_head; ++row) {
            double sum = 0, ref_sum = 0;
            for (int64_t j = 0; j < c.n_kv; ++j) {
                sum += probs[size_t(row * c.n_kv + j)];
                ref_sum += ref_probs[size_t(row * c.n_kv + j)];
                if (kv_pos[size_t(j)] < 0) {
                    ASSERT_EQ(probs[size_t(row * c.n_kv + j)], 0.0f) << "empty slot " << j;
                }
            }
            // 1 when some key is visible and there is no sink; less with a sink; 0 when nothing is visible.
            EXPECT_NEAR(sum, ref_sum, 1e-5) << "row " << row;
            if (!c.sinks && ref_sum > 0) {
                EXPECT_NEAR(sum, 1.0, 1e-5) << "row " << row;
            }
            // The sink takes what the keys leave of the reference's softmax.
            if (c.sinks) {
                const float sink = all_probs[ref_probs.size() + size_t(row)];
                EXPECT_NEAR(sink, 1.0 - ref_sum, 1e-5) << "row " << row;
                EXPECT_NEAR(sum + sink, 1.0, 1e-5) << "row " << row;
            }
        }
    }
};

}  // namespace vkllm::attention_test
