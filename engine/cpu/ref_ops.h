// Reference operations in plain C++: the oracle every GPU kernel is tested against.
// Written to be obviously correct, not fast: simple loops, double accumulation where sums
// are long, no threads.
//
// Conventions
//   Activations are row-major: `[n_tokens, n]` is n_tokens rows of n floats.
//   Weights use ggml's layout: a 2-D weight with dims {n_in, n_out} is n_out rows of n_in
//   elements, each row quantized in blocks; y = W x means y[o] = dot(row o, x).
//   Functions that take an input and an output pointer allow them to be the same buffer
//   (in-place) unless stated otherwise.
//   Bad shapes or arguments throw ShapeError (a std::runtime_error) with a message naming
//   the op and the value.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <vector>

#include "core/attention.h"
#include "core/router.h"
#include "gguf/gguf.h"

namespace vkllm::cpu {

struct ShapeError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------
// Weights: matmul and embedding lookup (ref_linear.cpp)

// A 2-D weight, dims {n_in, n_out}: n_out rows of n_in elements in `type`'s block layout.
struct WeightView {
    gguf::TensorType type = gguf::TensorType::F32;
    const uint8_t* data = nullptr;
    int64_t n_in = 0;
    int64_t n_out = 0;
};

// Bytes of one row of `w` (n_in elements). Throws ShapeError when n_in is not a multiple of
// the type's block size or the type cannot be dequantized.
size_t weight_row_bytes(const WeightView& w);
// Dequantizes row `row` of `w` into dst[n_in].
void dequantize_weight_row(const WeightView& w, int64_t row, float* dst);

// y = x W^T (+ bias): x [n_tokens, n_in], y [n_tokens, n_out], bias [n_out] or null.
// Any type gguf::dequantize_row supports. y must not alias x.
void matmul(const WeightView& w, const float* x, float* y, int64_t n_tokens, const float* bias = nullptr);

// y = x W: x [n_tokens, n_out], y [n_tokens, n_in] (the transpose of matmul's map:
// y[t][i] = sum over o of W[o][i] x[t][o]). y must not alias x.
void matmul_transposed(const WeightView& w, const float* x, float* y, int64_t n_tokens);

// Embedding lookup: out [n, table.n_in] = rows ids[0..n) of the table (dequantized).
// Throws ShapeError for an id outside [0, table.n_out).
void get_rows(const WeightView& table, const int32_t* ids, int64_t n, float* out);

// Index of the largest element of x[n]; the lowest index on ties; NaNs are never chosen
// (returns 0 when every element is NaN). Throws ShapeError when n <= 0.
int64_t argmax(const float* x, int64_t n);

// llama.cpp's CPU backend quantises activations before a dot product with a quantised weight
// (ggml's vec_dot_type). y = x rounded that way over n values (a multiple of block):
//   block 32 (Q8_0/Q8_1): d = fp16(max|x| / 127), y = d * round-half-even(x * 127 / max|x|)
//   block 256 (Q8_K): m = the x of largest |x| (first on ties), s = -127 / m,
//                     y = (1 / s) * min(127, round-half-even(s * x))
// (round-half-even as the x86 SIMD paths round; std::nearbyint in the default rounding mode).
void round_activations(const float* x, float* y, int64_t n, int block);
// The same rounding kept as integers, the form ggml's block_q8_0 / block_q8_K hold: per block
// q[i] (-127..127) and scale d with round_activations' y[i] = d * q[i] exactly, and the sum of
// the quants of each group of 32 (block 32) or 16 (block 256: block_q8_K's bsums), which the
// dots of weights with a bias or a minimum take. q: n values; scales: n / block; sums: n / 32
// or n / 16.
void quantize_activations(const float* x, int64_t n, int block, int8_t* q, float* scales, int32_t* sums);

// ---------------------------------------------------------------------------------------------
// Normalisation, softmax, element-wise (ref_elementwise.cpp)

// RMSNorm (Zhang & Sennrich 2019): y = x / sqrt(mean(x^2) + eps) * weight.
// x, y [n_tokens, n]; weight [n] or null (no scale).
void rms_norm(const float* x, const float* weight, float* y, int64_t n_tokens, int64_t n, float eps);
// LayerNorm (Ba et al. 2016): y = (x - mean) / sqrt(var + eps) * weight + bias, var the
// biased (1/n) variance. weight and bias [n], each may be null.
void layer_norm(const float* x, const float* weight, const float* bias, float* y, int64_t n_tokens,
                int64_t n, float eps);

// Row softmax: z = x * scale; if softcap > 0, z = softcap * tanh(z / softcap) (Gemma 2);
// y = exp(z - max z) / sum. x, y [n_rows, n]. Elements equal to -inf get probability 0; a
// row of only -inf gives zeros.
void softmax(const float* x, float* y, int64_t n_rows, int64_t n, float scale = 1.0f, float softcap = 0.0f);
// y = cap * tanh(x / cap) over n elements (Gemma 2 final-logit soft-capping). cap > 0.
void softcap(const float* x, float* y, int64_t n, float cap);

// Element-wise over n values.
void silu(const float* x, float* y, int64_t n);      // x * sigmoid(x)
void gelu(const float* x, float* y, int64_t n);      // tanh approximation (GPT-2)
void gelu_erf(const float* x, float* y, int64_t n);  // exact: 0.5 x (1 + erf(x / sqrt 2))
void sigmoid(const float* x, float* y, int64_t n);
void add(const float* a, const float* b, float* y, int64_t n);  // y = a + b
void mul(const float* a, const float* b, float* y, int64_t n);  // y = a * b
void scale(const float* x, float s, float* y, int64_t n);       // y = s * x

// Gated linear units over [n_tokens, n] (gate, up, y all that shape; y may alias either).
void swiglu(const float* gate, const float* up, float* y, int64_t n_tokens, int64_t n);  // silu(gate) * up
void geglu(const float* gate, const float* up, float* y, int64_t n_tokens, int64_t n);   // gelu(gate) * up (tanh)
// gpt-oss's clamped SwiGLU: g = min(gate, limit), u = clamp(up, -limit, limit),
// y = g * sigmoid(alpha * g) * (u + 1). gpt-oss uses alpha = 1.702, limit = 7.
void swiglu_oai(const float* gate, const float* up, float* y, int64_t n_tokens, int64_t n, float alpha,
                float limit);

// ---------------------------------------------------------------------------------------------
// Rotary position embedding (ref_rope.cpp), following ggml's rope (RoFormer, Su et al. 2021;
// YaRN, Peng et al. 2023).
//
// For pair j (0 <= j < n_dims/2) of a head at position p:
//   theta_extrap = p * freq_base^(-2j / n_dims) / freq_factors[j]
//   theta_interp = freq_scale * theta_extrap
//   None/Linear/Llama3: theta = theta_interp, magnitude m = attn_factor
//   Yarn: mix = ext_factor * ramp(j), ramp(j) = 1 - clamp((j - lo) / max(0.001, hi - lo), 0, 1),
//         [lo, hi] = YaRN correction dims from beta_fast / beta_slow / orig_ctx,
//         theta = theta_interp * (1 - mix) + theta_extrap * mix,
//         m = attn_factor * (1 + 0.1 ln(1 / freq_scale))   (when ext_factor != 0)
//   (x0, x1) -> m * (x0 cos theta - x1 sin theta, x0 sin theta + x1 cos theta)
// Pairs are (j, j + n_dims/2) in NeoX mode, (2j, 2j+1) otherwise. Dims n_dims..head_dim are
// left unchanged.
struct RopeParams {
    enum Scaling { None, Linear, Yarn, Llama3 };
    int n_dims = 0;          // rotated dims per head (even, <= head_dim)
    bool neox = false;
    float freq_base = 10000.0f;
    float freq_scale = 1.0f; // Linear and Yarn: 1 / scaling factor; forced to 1 for None and Llama3
    Scaling scaling = None;
    // YaRN. llama.cpp folds its own magnitude corrections into attn_factor: see yarn_attn_factor().
    float ext_factor = 0.0f;  // Yarn only (llama.cpp's default for YaRN models: 1)
    float attn_factor = 1.0f; // multiplies cos and sin for every scaling type (as ggml does)
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
    int orig_ctx = 0;         // Yarn and Llama3: the context length trained with
    // Llama 3.x: used to compute freq_factors when `freq_factors` is null.
    float llama3_factor = 8.0f;
    float low_freq_factor = 1.0f;
    float high_freq_factor = 4.0f;
    // Per-pair divisors of the frequency [n_dims/2] (the GGUF `rope_freqs` tensor) or null.
    const float* freq_factors = nullptr;
};

// In-place on x [n_tokens, n_heads, head_dim]; positions [n_tokens].
void rope(float* x, int64_t n_tokens, int n_heads, int head_dim, const int32_t* positions, const RopeParams& p);

// Llama 3 frequency factors [n_dims/2], computed as the HF->GGUF conversion does for the
// `rope_freqs` tensor (in float32): with wavelen = 2 pi base^(2j/n_dims),
//   wavelen < orig_ctx / high_freq_factor -> 1
//   wavelen > orig_ctx / low_freq_factor  -> factor
//   else smooth = (orig_ctx / wavelen - low) / (high - low), 1 / ((1 - smooth) / factor + smooth)
std::vector<float> llama3_freq_factors(int n_dims, float freq_base, float factor, float low_freq_factor,
                                       float high_freq_factor, int orig_ctx);

// YaRN correction dims [lo, hi] as ggml computes them (pair indices where the ramp starts
// and ends): dim(beta) = n_dims ln(orig_ctx / (2 pi beta)) / (2 ln base),
// lo = max(0, floor(dim(beta_fast))), hi = min(n_dims - 1, ceil(dim(beta_slow))).
void yarn_corr_dims(int n_dims, int orig_ctx, float freq_base, float beta_fast, float beta_slow, float dims[2]);

// The attn_factor llama.cpp passes to rope for a YaRN model (llama-context.cpp):
// factor = 1 / freq_scale; with get_mscale(s, m) = s <= 1 ? 1 : 1 + 0.1 m ln s,
//   log_mul != 0: get_mscale(factor, m) / get_mscale(factor, log_mul), m = log_mul for
//                 DeepSeek V2 style models (deepseek2 && log_mul != 1), else 1
//   log_mul == 0: get_mscale(factor, 1)
// then divided by (1 + 0.1 ln factor) (cancelling the factor rope itself applies) and
// multiplied by the model's `rope.scaling.attn_factor` (default 1).
float yarn_attn_factor(float freq_scale, float yarn_log_mul, bool deepseek2, float model_attn_factor = 1.0f);

// ---------------------------------------------------------------------------------------------
// Attention (ref_attention.cpp)

// q [n_q, n_head, head_dim], k [n_kv, n_head_kv, head_dim], v [n_kv, n_head_kv, head_dim_v],
// q_pos [n_q], k_pos [n_kv] (positions decide the masks; the kv order is free),
// out [n_q, n_head, head_dim_v], probs_out [n_q, n_head, n_kv] or null (the softmax
// probabilities, 0 where masked). A query that sees no key gets zeros. p: core/attention.h
// (head_dim_v 0: head_dim). sinks: [n_head] learned sink logits (gpt-oss), one extra logit in
// each softmax denominator with no value, or null.
void attention(const float* q, const float* k, const float* v, const int32_t* q_pos, const int32_t* k_pos,
               float* out, float* probs_out, int64_t n_q, int64_t n_kv, const AttentionParams& p,
               const float* sinks = nullptr);

// Whether a query at q_pos sees a key at k_pos under p's causal / window / chunk rules.
bool attention_visible(int32_t q_pos, int32_t k_pos, const AttentionParams& p);

// ---------------------------------------------------------------------------------------------
// Mixture-of-experts routing (ref_moe.cpp) by core/router.h's rule, with the selection bias on
// the host.
struct RouterParams : RouterRule {
    const float* selection_bias = nullptr;  // [n_expert] or null
};

// logits [n_tokens, n_expert] -> experts [n_tokens, top_k], weights [n_tokens, top_k].
void route(const float* logits, int64_t n_tokens, const RouterParams& p, int32_t* experts, float* weights);

// ---------------------------------------------------------------------------------------------
// Residual-stream edits (ref_residual_edit.cpp), the reference of ops::residual_edit.

struct ChannelEdit {
    enum Mode { Zero, Value, Scale, Mean };
    int channel = 0;
    Mode mode = Zero;
    float value = 0;
};
// Applies `edits` in order to every row of x [n_tokens, n]. Mean edits keep (sum, count) in
// state[2 e], state[2 e + 1] across calls and set the channel to sum / count after adding this
// call's unedited values.
void residual_edit(float* x, int64_t n_tokens, int64_t n, const ChannelEdit* edits, int n_edits, double* state);

// ---------------------------------------------------------------------------------------------
// Super-weight correction (ref_super_correction.cpp), the reference of ops::super_correction:
// y[t, row] += delta * a[t, col] for every token and correction, in order. y [n_tokens, n_out],
// a [n_tokens, n_in]. Throws std::invalid_argument for a row or column outside the shapes.
struct SuperCorrection {
    int64_t row = 0, col = 0;
    float delta = 0;
};
void super_correction(float* y, int64_t n_out, const float* a, int64_t n_in, int64_t n_tokens,
                      const SuperCorrection* corrections, int n_corrections);

}  // namespace vkllm::cpu

