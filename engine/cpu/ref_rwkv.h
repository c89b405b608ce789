// Reference of RWKV-7's ("Goose") time and channel mixing pieces, in plain C++: llama.cpp's
// graph (src/models/rwkv7-base.cpp) split into the steps ops/rwkv_ops.h runs on the GPU. What
// those kernels are tested against, and what the CPU reference forward composes.
//
// Token-major operands are rows of a stride in floats; C = n_head * head_size channels; head h
// owns channels [h * head_size, (h + 1) * head_size).
#pragma once

#include <cstdint>

namespace vkllm::cpu {

// Token shift and the lerp mixes: with prev[0] = shift (the last token of the previous call)
// and prev[t] = x[t - 1],
//   out[m][t][c] = x[t][c] + (prev[t][c] - x[t][c]) * mix[m][c]      m in [0, n_mix)
// (ggml: add(mul(sub(x_prev, cur), lerp), cur)); then shift = x[n_tokens - 1]. out is packed,
// [n_mix][n_tokens][C]; mix [n_mix][C]; shift [C], updated in place (unchanged when n_tokens 0).
void rwkv_shift_mix(const float* x, int64_t x_stride, int64_t n_tokens, int64_t C, float* shift, const float* mix,
                    int64_t n_mix, float* out);

// The generalized delta rule of ggml_rwkv_wkv7, per head with S the head_size x head_size state
// (row i: value channel i, column j: key channel j), for each token:
//   S[i][j] = S[i][j] * w[j] + v[i] * k[j] + (sum_l a[l] S[i][l]) * b[j]
//   out[i]  = sum_j S[i][j] * r[j]
// State layout ggml's: [n_head][head_size (i)][head_size (j)], updated in place.
struct Wkv7Ref {
    int64_t n_tokens = 0, n_head = 0, head_size = 0;
    float* state = nullptr;
    const float *r = nullptr, *w = nullptr, *k = nullptr, *v = nullptr, *a = nullptr, *b = nullptr;
    int64_t r_stride = 0, w_stride = 0, k_stride = 0, v_stride = 0, a_stride = 0, b_stride = 0;
    float* out = nullptr;
    int64_t out_stride = 0;
};
void rwkv_wkv7(const Wkv7Ref& p);

// The wkv7 operands from the time mix's projections, in place, per token and head (llama.cpp's
// build_rwkv7_time_mix between its matmuls and ggml_rwkv_wkv7):
//   w     = exp(-0.606531 * sigmoid(w0 + w))                 the decay (w: the w2 lora's output)
//   a     = sigmoid(a0 + a)                                  the in-context learning rate
//   kk    = l2_normalize_per_head(k * k_k)                   (x / max(|x|, 1e-12))
//   k     = k + (a * (k * k_a) - k * k_a)
// and wkv7's a and b: a_out = -kk, b_out = kk * a. Every operand [n_tokens][C] at its stride;
// w0, a0, k_k, k_a [C]. a_out may be a (the lora output it replaces).
struct Rwkv7InputsRef {
    int64_t n_tokens = 0, n_head = 0, head_size = 0;
    float* w = nullptr;                // in: w2 lora output; out: the decay
    int64_t w_stride = 0;
    float* k = nullptr;                // in: key projection; out: the modified key
    int64_t k_stride = 0;
    const float* a = nullptr;          // a2 lora output
    int64_t a_stride = 0;
    const float *w0 = nullptr, *a0 = nullptr, *k_k = nullptr, *k_a = nullptr;
    float* a_out = nullptr;            // -kk
    int64_t a_out_stride = 0;
    float* b_out = nullptr;            // kk * a
    int64_t b_out_stride = 0;
};
void rwkv7_wkv_inputs(const Rwkv7InputsRef& p);

// The time mix's output before its projection, per token and head:
//   y = (group_norm(o) * ln_w + ln_b + (sum_j k[j] r[j] r_k[j]) * v) * g
// group_norm: each head's values less their mean over the root of their (biased) variance plus
// eps (ggml_norm over head_size values; llama.cpp's eps 64e-5). y may be o.
struct Rwkv7OutputRef {
    int64_t n_tokens = 0, n_head = 0, head_size = 0;
    const float *o = nullptr, *r = nullptr, *k = nullptr, *v = nullptr, *g = nullptr;
    int64_t o_stride = 0, r_stride = 0, k_stride = 0, v_stride = 0, g_stride = 0;
    const float *ln_w = nullptr, *ln_b = nullptr, *r_k = nullptr;  // [C]
    float eps = 64e-5f;
    float* y = nullptr;
    int64_t y_stride = 0;
};
void rwkv7_wkv_output(const Rwkv7OutputRef& p);

// RWKV-7's value residual on every layer after the first, over [n_tokens][C] rows:
//   v = v + (v_first - v) * sigmoid(v_mix + v0)       (v_mix: the v2 lora's output; v0 [C])
void rwkv7_value_mix(float* v, int64_t v_stride, const float* v_first, int64_t v_first_stride, const float* v_mix,
                     int64_t v_mix_stride, const float* v0, int64_t n_tokens, int64_t C);

// The lora's inner activation, elementwise over n values: tanh (decay lora) or sigmoid (gate).
enum class RwkvLoraAct { Tanh, Sigmoid };
void rwkv_lora_act(const float* x, float* y, int64_t n, RwkvLoraAct act);

}  // namespace vkllm::cpu
