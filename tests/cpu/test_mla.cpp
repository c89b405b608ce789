// Multi-head latent attention (DeepSeek V2/V3): the absorbed form the engine runs (MQA over the
// latent cache, W_kb folded into the queries, W_vb applied to each head's latent output) equals
// the naive form (every head's keys and values decompressed from the latent), on the CPU
// reference ops with random data.
#include <gtest/gtest.h>

#include "cpu/ref_ops.h"
#include "test_support.h"

namespace vkllm {
namespace {

// y = M x for M [rows, cols] row-major.
std::vector<float> mat_vec(const std::vector<float>& m, const float* x, int rows, int cols) {
    std::vector<float> y(size_t(rows), 0.0f);
    for (int r = 0; r < rows; ++r)
        for (int c = 0; c < cols; ++c) y[size_t(r)] += m[size_t(r * cols + c)] * x[c];
    return y;
}

TEST(Mla, AbsorbedFormEqualsNaiveForm) {
    const int n_head = 4, nope = 16, rope = 8, kv_lora = 12, v_head = 10, n_q = 5, n_kv = 9;
    const float scale = 0.3f;
    std::vector<std::vector<float>> w_kb, w_vb;  // per head: [kv_lora, nope] and [v_head, kv_lora]
    for (int h = 0; h < n_head; ++h) {
        w_kb.push_back(test::random_floats(size_t(kv_lora * nope), 10 + uint32_t(h)));
        w_vb.push_back(test::random_floats(size_t(v_head * kv_lora), 20 + uint32_t(h)));
    }
    auto latent = test::random_floats(size_t(n_kv * kv_lora), 1);   // normalised c per key
    auto k_rope = test::random_floats(size_t(n_kv * rope), 2);      // rotated shared RoPE key
    auto q = test::random_floats(size_t(n_q * n_head * (nope + rope)), 3);  // [q_nope | q_rope] per head
    std::vector<int32_t> q_pos, k_pos;
    for (int i = 0; i < n_q; ++i) q_pos.push_back(n_kv - n_q + i);
    for (int j = 0; j < n_kv; ++j) k_pos.push_back(j);

    // Naive: per-head keys [W_kb^T c | k_rope] and values W_vb c.
    std::vector<float> k_naive(size_t(n_kv * n_head * (nope + rope))), v_naive(size_t(n_kv * n_head * v_head));
    for (int j = 0; j < n_kv; ++j)
        for (int h = 0; h < n_head; ++h) {
            float* k = &k_naive[size_t((j * n_head + h) * (nope + rope))];
            for (int d = 0; d < nope; ++d) {
                float sum = 0;
                for (int r = 0; r < kv_lora; ++r) sum += w_kb[size_t(h)][size_t(r * nope + d)] * latent[size_t(j * kv_lora + r)];
                k[d] = sum;
            }
            for (int d = 0; d < rope; ++d) k[nope + d] = k_rope[size_t(j * rope + d)];
            auto v = mat_vec(w_vb[size_t(h)], &latent[size_t(j * kv_lora)], v_head, kv_lora);
            std::copy(v.begin(), v.end(), v_naive.begin() + long((j * n_head + h) * v_head));
        }
    AttentionParams naive;
    naive.n_head = naive.n_head_kv = n_head;
    naive.head_dim = nope + rope;
    naive.head_dim_v = v_head;
    naive.scale = scale;
    std::vector<float> out_naive(size_t(n_q * n_head * v_head));
    cpu::attention(q.data(), k_naive.data(), v_naive.data(), q_pos.data(), k_pos.data(), out_naive.data(), nullptr, n_q,
                   n_kv, naive);

    // Absorbed: queries [W_kb q_nope | q_rope], one shared key head [c | k_rope], values c.
    std::vector<float> q_abs(size_t(n_q * n_head * (kv_lora + rope))), k_lat(size_t(n_kv * (kv_lora + rope)));
    for (int i = 0; i < n_q; ++i)
        for (int h = 0; h < n_head; ++h) {
            const float* qh = &q[size_t((i * n_head + h) * (nope + rope))];
            auto a = mat_vec(w_kb[size_t(h)], qh, kv_lora, nope);
            float* dst = &q_abs[size_t((i * n_head + h) * (kv_lora + rope))];
            std::copy(a.begin(), a.end(), dst);
            std::copy(qh + nope, qh + nope + rope, dst + kv_lora);
        }
    for (int j = 0; j < n_kv; ++j) {
        std::copy(&latent[size_t(j * kv_lora)], &latent[size_t((j + 1) * kv_lora)], &k_lat[size_t(j * (kv_lora + rope))]);
        std::copy(&k_rope[size_t(j * rope)], &k_rope[size_t((j + 1) * rope)], &k_lat[size_t(j * (kv_lora + rope) + kv_lora)]);
    }
    AttentionParams absorbed;
    absorbed.n_head = n_head;
    absorbed.n_head_kv = 1;
    absorbed.head_dim = kv_lora + rope;
    absorbed.head_dim_v = kv_lora;
    absorbed.scale = scale;
    std::vector<float> out_latent(size_t(n_q * n_head * kv_lora));
    cpu::attention(q_abs.data(), k_lat.data(), latent.data(), q_pos.data(), k_pos.data(), out_latent.data(), nullptr,
                   n_q, n_kv, absorbed);
    std::vector<float> out_absorbed;
    for (int i = 0; i < n_q; ++i)
        for (int h = 0; h < n_head; ++h) {
            auto o = mat_vec(w_vb[size_t(h)], &out_latent[size_t((i * n_head + h) * kv_lora)], v_head, kv_lora);
            out_absorbed.insert(out_absorbed.end(), o.begin(), o.end());
        }
    EXPECT_LT(test::nmse(out_absorbed, out_naive), 1e-10);
    // The latent cache holds kv_lora + rope floats per token (plus the latent as values here);
    // the naive cache n_head * (nope + rope + v_head).
    EXPECT_LT(kv_lora + rope + kv_lora, n_head * (nope + rope + v_head));
}

}  // namespace
}  // namespace vkllm
