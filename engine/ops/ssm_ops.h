// GPU ops of state-space layers (Mamba-2): the short causal convolution with its carried state,
// the selective scan, the grouped RMSNorm. The math and state layouts are cpu/ref_ssm.h's (and
// ggml's); the kernels are tested against it (tests/ops/test_ssm.cpp). Like every op these
// record a dispatch and insert no barrier. Element offsets and strides are in floats.
#pragma once

#include <cstdint>

#include "ops/ops.h"
#include "ops/tensor_view.h"

namespace vkllm::ops {

// Longest convolution ssm_conv takes (shaders/ssm_conv.comp's MAX_K).
constexpr int64_t kSsmMaxConv = 16;

// Causal depthwise conv1d over n_tokens rows of x ([n_tokens][x_stride], the channels first),
// per channel with the state [channels][d_conv - 1] (the previous inputs, oldest first), which
// is updated to the last d_conv - 1 inputs. y[t][c] = act(sum_k w[c][k] in(t + k - d_conv + 1)
// + bias[c]), act SiLU when `silu`. w: [channels][d_conv] f32; bias may be null. One token is
// a decode step. y must not overlap the state.
// LFM2's gated short convolution: with in_gate the input is x * in_gate (the state holds the
// products), with out_gate the result is multiplied by out_gate, y = out_gate * conv(in_gate * x)
// (no bias, no SiLU); the gates are token-major [n_tokens][channels] rows like x. y may be the
// very rows of x or of a gate (same offset and stride), no other part of them.
struct SsmConvArgs {
    int64_t n_tokens = 0, channels = 0, d_conv = 0;
    const Buffer* x = nullptr;
    uint64_t x_offset = 0;
    int64_t x_stride = 0;  // 0: channels
    const Buffer* state = nullptr;
    uint64_t state_offset = 0;
    const Buffer* w = nullptr;
    uint64_t w_offset = 0;
    const Buffer* bias = nullptr;
    uint64_t bias_offset = 0;
    const Buffer* y = nullptr;
    uint64_t y_offset = 0;
    int64_t y_stride = 0;  // 0: channels
    bool silu = true;
    const Buffer* in_gate = nullptr;
    uint64_t in_gate_offset = 0;
    int64_t in_gate_stride = 0;  // 0: channels
    const Buffer* out_gate = nullptr;
    uint64_t out_gate_offset = 0;
    int64_t out_gate_stride = 0;  // 0: channels
};
void ssm_conv(Stream& s, const SsmConvArgs& a);

// Mamba-2's selective scan over n_tokens tokens of one sequence (cpu::ssm_scan's math). x, B
// and C are columns of one token-major buffer `xbc` (x at column 0, B at b_col, C at c_col, row
// stride xbc_stride), dt and the optional gate z columns of `zdt`. The state
// [n_head][head_dim][d_state] is read and written in place. dt_bias and D may be null.
// Two kernels compute it in the same order: Workgroup, one workgroup per state row (d_state up
// to 4 x the workgroup size, 1024 on most devices), and Rows, one invocation per row with the
// row in registers (d_state up to kSsmScanRowsMaxState; no barriers, so far faster on CPU
// drivers). Auto takes Rows on CPU devices when d_state allows, else Workgroup.
enum class SsmScanKernel { Auto, Workgroup, Rows };
constexpr int64_t kSsmScanRowsMaxState = 256;
struct SsmScanArgs {
    int64_t n_tokens = 0, n_head = 0, head_dim = 0, d_state = 0, n_group = 1;
    const Buffer* state = nullptr;
    uint64_t state_offset = 0;
    const Buffer* xbc = nullptr;
    uint64_t xbc_offset = 0;
    int64_t xbc_stride = 0, b_col = 0, c_col = 0;
    const Buffer* zdt = nullptr;
    uint64_t zdt_offset = 0;
    int64_t zdt_stride = 0, dt_col = 0;
    int64_t z_col = -1;  // < 0: no gate
    const Buffer* dt_bias = nullptr;
    const Buffer* a = nullptr;
    const Buffer* d = nullptr;
    const Buffer* y = nullptr;
    uint64_t y_offset = 0;
    int64_t y_stride = 0;  // 0: n_head * head_dim
    SsmScanKernel kernel = SsmScanKernel::Auto;
};
void ssm_scan(Stream& s, const SsmScanArgs& a);

// Mamba-1's selective scan over x.rows tokens of one sequence (cpu::ssm_scan_mamba1's math, in
// llama.cpp's build_mamba_layer: n_head = d_inner, head_dim 1, one B/C group, a decay per
// channel and state). Shapes come from the views: x [n_tokens, d_inner] (the conv's output),
// dt [n_tokens, d_inner] (dt_proj's output with its bias added), b and c [n_tokens, d_state]
// (views of one buffer at one row stride: x_proj's output), z [n_tokens, d_inner] or no buffer
// (no gate), y [n_tokens, d_inner]; state [d_inner, d_state] read and written in place,
// a [d_inner, d_state], d [1, d_inner] or no buffer. Rows may be strided. y may alias x (the
// same view); it must not overlap the state. d_state up to kSsmMamba1MaxState.
constexpr int64_t kSsmMamba1MaxState = 256;
struct SsmScanMamba1Args {
    TensorView state, x, dt, b, c, z, a, d, y;
};
void ssm_scan_mamba1(Stream& s, const SsmScanMamba1Args& a);

// Grouped RMSNorm: each of n_rows rows holds n_group groups of n values, each normalised and
// scaled by its slice of w [n_group][n] (w may be null). x and y contiguous; may be the same.
void ssm_group_rms_norm(Stream& s, const Buffer& x, uint64_t x_offset, const Buffer* w, const Buffer& y,
                        uint64_t y_offset, int64_t n_rows, int64_t n, int64_t n_group, float eps);

}  // namespace vkllm::ops
