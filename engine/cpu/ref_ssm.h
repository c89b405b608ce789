// Reference operations of state-space layers (Mamba-2's SSD), in plain C++: what the GPU kernels
// of engine/ops/ssm_ops.h are tested against, and what a CPU forward of such a layer runs.
// The math and the state layouts are ggml's (ggml_ssm_conv, ggml_ssm_scan with a scalar A per
// head, as llama.cpp's build_mamba2_layer uses them), so a state written by one can be read by
// the other.
//
// Layouts (row-major, float32):
//   conv state  [channels][d_conv - 1]: per channel the last d_conv - 1 inputs, oldest first.
//   conv weight [channels][d_conv]:     ggml's ssm_conv1d.weight {d_conv, channels}.
//   SSM state   [n_head][head_dim][d_state]: ggml's {d_state, head_dim, n_head}.
// Token-major activations are rows with a stride (`*_stride`, in floats), so the caller can
// point into a wider projection output (Mamba-2's in_proj gives z | xBC | dt in one row).
#pragma once

#include <cstdint>

namespace vkllm::cpu {

// Causal depthwise convolution over the tokens of one sequence, carrying its state:
//   y[t][c] = act(sum_{k < d_conv} w[c][k] * in(t + k - (d_conv - 1), c) + bias[c])
// where in(i, c) is x[i][c] for i >= 0 and state[c][d_conv - 1 + i] before the first token.
// act is SiLU when `silu`, else the identity; bias may be null. Afterwards `state` holds the
// last d_conv - 1 inputs (state and x together, when n_tokens < d_conv - 1). y must not alias
// the state; it may alias x when y_stride == x_stride. ShapeError (ref_ops.h) on bad shapes.
void ssm_conv(const float* x, int64_t x_stride, float* state, const float* w, const float* bias, float* y,
              int64_t y_stride, int64_t n_tokens, int64_t channels, int64_t d_conv, bool silu);

// LFM2's gated short convolution, as llama.cpp's build_shortconv_block: the input is b * x, the
// state holds those products, and the convolution's output (no bias, no activation) is
// multiplied by c:  y[t][ch] = c[t][ch] * sum_k w[ch][k] * (b x)(t + k - (d_conv - 1), ch).
// b, c and x are token-major rows at one stride (in_proj's row is b | c | x). y must not alias
// the state.
void short_conv_gated(const float* b, const float* c, const float* x, int64_t stride, float* state, const float* w,
                      float* y, int64_t y_stride, int64_t n_tokens, int64_t channels, int64_t d_conv);

// Mamba-2's selective scan over the tokens of one sequence (scalar decay per head, grouped B/C):
// for each token t, head h (group g = h / (n_head / n_group)), row i < head_dim, state j:
//   dt   = softplus(dt_raw[t][h] + dt_bias[h])        (softplus(v) = v above 20, as ggml)
//   s[h][i][j] = s[h][i][j] * exp(dt * A[h]) + B[t][g][j] * x[t][h][i] * dt
//   y[t][h][i] = sum_j s[h][i][j] * C[t][g][j]   (+ x[t][h][i] * D[h] when D is given)
//                times silu(z[t][h][i])          (when z is given)
// Pointers are to row 0 of each operand; each has its row stride in floats. `state` is updated
// in place to the state after the last token.
struct SsmScanRef {
    int64_t n_tokens = 0, n_head = 0, head_dim = 0, d_state = 0, n_group = 1;
    float* state = nullptr;
    const float* x = nullptr;  // [n_tokens][n_head * head_dim]
    int64_t x_stride = 0;
    const float* b = nullptr;  // [n_tokens][n_group * d_state]
    int64_t b_stride = 0;
    const float* c = nullptr;  // [n_tokens][n_group * d_state]
    int64_t c_stride = 0;
    const float* dt = nullptr;  // [n_tokens][n_head], before the bias and softplus
    int64_t dt_stride = 0;
    const float* dt_bias = nullptr;  // [n_head] or null
    const float* a = nullptr;        // [n_head] (negative: a decay)
    const float* d = nullptr;        // [n_head] or null
    const float* z = nullptr;        // [n_tokens][n_head * head_dim] or null
    int64_t z_stride = 0;
    float* y = nullptr;  // [n_tokens][n_head * head_dim]
    int64_t y_stride = 0;
};
void ssm_scan(const SsmScanRef& a);

// RMSNorm of each group of n values of every row of n_group * n values, each group scaled by
// its own slice of w [n_group][n] (llama.cpp's grouped norm after Mamba-2's gate). In place when
// y == x. The sum of squares is in double, as ggml's rms_norm.
void ssm_group_rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, int64_t n_group,
                        float eps);

// softplus as ggml computes it: v above 20, else log1p(exp(v)).
float ssm_softplus(float v);

}  // namespace vkllm::cpu
