// RWKV-7's mixing steps on the CPU (ref_rwkv.h), in llama.cpp's order of operations.
#include "cpu/ref_rwkv.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace vkllm::cpu {

namespace {
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
}  // namespace

void rwkv_shift_mix(const float* x, int64_t x_stride, int64_t n_tokens, int64_t C, float* shift, const float* mix,
                    int64_t n_mix, float* out) {
    for (int64_t t = 0; t < n_tokens; ++t) {
        const float* cur = x + t * x_stride;
        const float* prev = t == 0 ? shift : x + (t - 1) * x_stride;
        for (int64_t m = 0; m < n_mix; ++m) {
            float* o = out + (m * n_tokens + t) * C;
            for (int64_t c = 0; c < C; ++c) o[c] = (prev[c] - cur[c]) * mix[m * C + c] + cur[c];
        }
    }
    if (n_tokens > 0) std::copy(x + (n_tokens - 1) * x_stride, x + (n_tokens - 1) * x_stride + C, shift);
}

void rwkv_wkv7(const Wkv7Ref& p) {
    const int64_t N = p.head_size;
    for (int64_t t = 0; t < p.n_tokens; ++t) {
        for (int64_t h = 0; h < p.n_head; ++h) {
            const int64_t c0 = h * N;
            const float* r = p.r + t * p.r_stride + c0;
            const float* w = p.w + t * p.w_stride + c0;
            const float* k = p.k + t * p.k_stride + c0;
            const float* v = p.v + t * p.v_stride + c0;
            const float* a = p.a + t * p.a_stride + c0;
            const float* b = p.b + t * p.b_stride + c0;
            for (int64_t i = 0; i < N; ++i) {
                float* s = p.state + (h * N + i) * N;
                float sa = 0.0f;
                for (int64_t j = 0; j < N; ++j) sa += a[j] * s[j];
                float result = 0.0f;
                for (int64_t j = 0; j < N; ++j) {
                    s[j] = s[j] * w[j] + v[i] * k[j] + sa * b[j];
                    result += s[j] * r[j];
                }
                p.out[t * p.out_stride + c0 + i] = result;
            }
        }
    }
}

void rwkv7_wkv_inputs(const Rwkv7InputsRef& p) {
    const int64_t N = p.head_size;
    std::vector<float> kk(size_t(N), 0.0f);
    for (int64_t t = 0; t < p.n_tokens; ++t) {
        float* w = p.w + t * p.w_stride;
        float* k = p.k + t * p.k_stride;
        const float* a = p.a + t * p.a_stride;
        float* a_out = p.a_out + t * p.a_out_stride;
        float* b_out = p.b_out + t * p.b_out_stride;
        for (int64_t h = 0; h < p.n_head; ++h) {
            const int64_t c0 = h * N;
            double sum = 0.0;  // ggml_l2_norm sums the squares in double
            for (int64_t j = 0; j < N; ++j) {
                kk[size_t(j)] = k[c0 + j] * p.k_k[c0 + j];
                sum += double(kk[size_t(j)]) * double(kk[size_t(j)]);
            }
            const float scale = 1.0f / std::max(std::sqrt(float(sum)), 1e-12f);
            for (int64_t j = 0; j < N; ++j) {
                const int64_t c = c0 + j;
                const float ag = sigmoid(p.a0[c] + a[c]);
                const float kn = kk[size_t(j)] * scale;
                const float ka = k[c] * p.k_a[c];
                k[c] = k[c] + (ag * ka - ka);
                w[c] = std::exp(-0.606531f * sigmoid(w[c] + p.w0[c]));
                a_out[c] = -kn;
                b_out[c] = kn * ag;
            }
        }
    }
}

void rwkv7_wkv_output(const Rwkv7OutputRef& p) {
    const int64_t N = p.head_size;
    std::vector<float> norm(static_cast<size_t>(N));
    for (int64_t t = 0; t < p.n_tokens; ++t) {
        for (int64_t h = 0; h < p.n_head; ++h) {
            const int64_t c0 = h * N;
            const float* o = p.o + t * p.o_stride + c0;
            const float* r = p.r + t * p.r_stride + c0;
            const float* k = p.k + t * p.k_stride + c0;
            const float* v = p.v + t * p.v_stride + c0;
            const float* g = p.g + t * p.g_stride + c0;
            // ggml_norm: mean and variance summed in double
            double sum = 0.0;
            for (int64_t j = 0; j < N; ++j) sum += o[j];
            const float mean = float(sum / double(N));
            double sum2 = 0.0;
            for (int64_t j = 0; j < N; ++j) {
                norm[size_t(j)] = o[j] - mean;
                sum2 += double(norm[size_t(j)]) * double(norm[size_t(j)]);
            }
            const float scale = 1.0f / std::sqrt(float(sum2 / double(N)) + p.eps);
            float bonus = 0.0f;
            for (int64_t j = 0; j < N; ++j) bonus += k[j] * r[j] * p.r_k[c0 + j];
            float* y = p.y + t * p.y_stride + c0;
            for (int64_t j = 0; j < N; ++j)
                y[j] = ((norm[size_t(j)] * scale) * p.ln_w[c0 + j] + p.ln_b[c0 + j] + v[j] * bonus) * g[j];
        }
    }
}

void rwkv7_value_mix(float* v, int64_t v_stride, const float* v_first, int64_t v_first_stride, const float* v_mix,
                     int64_t v_mix_stride, const float* v0, int64_t n_tokens, int64_t C) {
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t c = 0; c < C; ++c) {
            float& vv = v[t * v_stride + c];
            vv = vv + (v_first[t * v_first_stride + c] - vv) * sigmoid(v_mix[t * v_mix_stride + c] + v0[c]);
        }
}

void rwkv_lora_act(const float* x, float* y, int64_t n, RwkvLoraAct act) {
    for (int64_t i = 0; i < n; ++i) y[i] = act == RwkvLoraAct::Tanh ? std::tanh(x[i]) : sigmoid(x[i]);
}

}  // namespace vkllm::cpu
