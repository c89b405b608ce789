// GPU ops of state-space layers (Mamba-2): the short causal convolution with its carried state,
// the selective scan, the grouped RMSNorm. The math and state layouts are cpu/ref_ssm.h's (and
// ggml's); the kernels are tested against it (tests/ops/test_ssm.cpp). Like every op these
// record a dispatch and insert no barrier. Operands are f32 TensorViews (tensor_view.h).
#pragma once

#include <cstdint>

#include "ops/ops.h"
#include "ops/tensor_view.h"

namespace vkllm::ops {

// Longest convolution ssm_conv takes (shaders/ssm_conv.comp's MAX_K).
constexpr int64_t kSsmMaxConv = 16;

// Causal depthwise conv1d over the tokens of one sequence, per channel with a carried state.
// Shapes come from the views: x [n_tokens, channels] (rows may be strided: columns of a wider
// projection), w [channels, d_conv] packed (d_conv <= kSsmMaxConv), state [channels, d_conv - 1]
// packed (the previous inputs, oldest first; updated to the last d_conv - 1 inputs), bias
// [1, channels] or no buffer, y [n_tokens, channels]. y[t][c] = act(sum_k w[c][k]
// in(t + k - d_conv + 1) + bias[c]), act SiLU when `silu`. One token is a decode step.
// LFM2's gated short convolution: with in_gate the input is x * in_gate (the state holds the
// products), with out_gate the result is multiplied by out_gate, y = out_gate * conv(in_gate * x)
// (no bias, no SiLU); the gates are [n_tokens, channels] views like x, or no buffer.
// Overlaps: y may be the very rows of x or of a gate (same buffer, offset and row stride), no
// other part of them; neither y nor the state may overlap any other operand.
struct SsmConvArgs {
    TensorView x, state, w, bias, y;
    bool silu = true;
    TensorView in_gate, out_gate;
};
void ssm_conv(Stream& s, const SsmConvArgs& a);

// Mamba-2's selective scan over the tokens of one sequence (cpu::ssm_scan's math). Shapes come
// from the views: x [n_tokens, d_inner]; b and c [n_tokens, n_group * d_state], columns of x's
// buffer at x's row stride, starting at or after x's first column (Mamba-2's conv output row
// x | B | C); dt [n_tokens, n_head]; z [n_tokens, d_inner] (the gate) or no buffer, columns of
// dt's buffer at dt's row stride (the in-projection's row z | xBC | dt); state [d_inner, d_state]
// packed ([n_head][head_dim][d_state]), read and written in place; a [1, n_head]; dt_bias and
// d [1, n_head] or no buffer; y [n_tokens, d_inner]. n_head divides d_inner (head_dim =
// d_inner / n_head) and n_group divides n_head. y and the state may not overlap any operand.
// Two kernels compute it token after token in the same order: Workgroup, one workgroup per state
// row (d_state up to 4 x the workgroup size, 1024 on most devices), and Rows, one invocation per
// row with the row in registers (d_state up to kSsmScanRowsMaxState; no barriers, so far faster
// on CPU drivers). Chunked, for prompts, is the state-space dual form: one workgroup per head,
// chunks of ssm_scan_chunk(ctx) tokens in order, each a decay-masked (C B^T) matrix times the
// chunk's x plus the carried state's part, then the state updated in one go, parallel over the
// chunk's tokens (shaders/ssm_scan_chunked.comp; equal to the others up to rounding). Auto takes
// Chunked for prompts of at least kSsmScanChunkedMinTokens tokens on GPUs, else Rows on CPU
// devices when d_state allows, else Workgroup.
enum class SsmScanKernel { Auto, Workgroup, Rows, Chunked };
constexpr int64_t kSsmScanRowsMaxState = 256;
constexpr int64_t kSsmScanChunkedMinTokens = 16;
// The chunked kernel's tokens per chunk on this device: 64, or 32 where the device's shared
// memory cannot hold the chunk's 64 x 64 matrix.
uint32_t ssm_scan_chunk(gpu::Context& ctx);
struct SsmScanArgs {
    TensorView state, x, b, c, dt, z, dt_bias, a, d, y;
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

// Grouped RMSNorm: each row of x [n_rows, n_group * n] holds n_group groups of n values, each
// normalised and scaled by its slice of w [n_group][n] (n_group * n values from the buffer's
// start; w may be null). x and y f32 views of one shape with packed rows; y may be x itself (the
// same offset), no other part of it.
void ssm_group_rms_norm(Stream& s, const TensorView& x, const Buffer* w, const TensorView& y, int64_t n_group,
                        float eps);

}  // namespace vkllm::ops
