// Reference of Mamba-1's selective scan (ggml_ssm_scan with a per-state decay A of
// {d_state, d_inner}, as llama.cpp's build_mamba_layer uses it: one channel per "head" of
// dimension 1, one group of B/C). What ops::ssm_scan_mamba1 is tested against.
//
// Layouts (row-major float32, ggml's):
//   state [d_inner][d_state]   (ggml {d_state, 1, d_inner})
//   A     [d_inner][d_state]   (ssm_a: -exp(A_log), negative)
// Token-major operands are rows `*_stride` floats apart so the caller can point into wider
// projection outputs (x and z halves of in_proj's row, B and C columns of x_proj's row).
#pragma once

#include <cstdint>

namespace vkllm::cpu {

// For each token t, channel c < d_inner, state j < d_state:
//   sp      = softplus(dt[t][c])            (dt already carries dt_proj's bias, as in llama.cpp)
//   s[c][j] = s[c][j] * exp(sp * A[c][j]) + B[t][j] * (x[t][c] * sp)
//   y[t][c] = sum_j s[c][j] * C[t][j]   (+ x[t][c] * D[c] when D is given)
//             times silu(z[t][c])       (when z is given)
// `state` is updated in place to the state after the last token. ShapeError on bad sizes.
struct SsmScanMamba1Ref {
    int64_t n_tokens = 0, d_inner = 0, d_state = 0;
    float* state = nullptr;
    const float* x = nullptr;  // [n_tokens][d_inner] (the conv's output)
    int64_t x_stride = 0;
    const float* dt = nullptr;  // [n_tokens][d_inner], before softplus
    int64_t dt_stride = 0;
    const float* b = nullptr;  // [n_tokens][d_state]
    const float* c = nullptr;  // [n_tokens][d_state]
    int64_t bc_stride = 0;     // of both B and C
    const float* a = nullptr;  // [d_inner][d_state]
    const float* d = nullptr;  // [d_inner] or null
    const float* z = nullptr;  // [n_tokens][d_inner] or null
    int64_t z_stride = 0;
    float* y = nullptr;  // [n_tokens][d_inner]
    int64_t y_stride = 0;
};
void ssm_scan_mamba1(const SsmScanMamba1Ref& a);

}  // namespace vkllm::cpu
