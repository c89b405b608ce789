// The gated delta rule of linear-attention layers (Gated DeltaNet: Qwen3-Next, Qwen3.5; with a
// decay per key row: Kimi Linear), over tensor views. The math and the state layout are
// cpu/ref_delta_net.h's (and ggml_gated_delta_net's); the kernel is tested against it
// (tests/ops/test_delta_net.cpp). Records a dispatch and inserts no barrier.
#pragma once

#include <cstdint>

#include "core/delta_net.h"
#include "ops/ops.h"
#include "ops/tensor_view.h"

namespace vkllm::ops {

// Longest key head gated_delta_net takes (the state column is kept in registers).
constexpr int64_t kDeltaNetMaxKeyDim = 256;

// The recurrence over q.rows tokens of one sequence, the state carried in place, for a prompt
// or a decode step alike. Shapes: q, k [n_tokens, n_head_k * d_k]; v [n_tokens, n_head_v * d_v];
// g [n_tokens, n_head_v] (a log-decay per head: softplus(alpha + dt_bias) * A, negative) or
// [n_tokens, n_head_v * d_k] (per key row); beta [n_tokens, n_head_v] (after its sigmoid);
// out [n_tokens, n_head_v * d_v] (may be v itself); state [n_head_v * d_v, d_k], packed.
// Rows may be strided views into wider projection outputs. d_k up to kDeltaNetMaxKeyDim.
//
// Two kernels compute it, for both decay layouts: Sequential (shaders/delta_net.comp, token
// after token) and Chunked (delta_net_chunked.comp, the tokens of each chunk of
// delta_net_chunk() at once in the WY form; a chunk whose running decay leaves e^+-60 runs token
// by token). Auto takes Chunked for prompts of at least kDeltaNetChunkedMinTokens tokens on GPUs
// and Sequential elsewhere: on a CPU driver the sequential kernel is the faster one (lavapipe, a
// 512-token prompt through two layers of four value heads with d_k = d_v = 128: the op's GPU time
// 0.98-1.09 s sequential against 2.16-2.18 s chunked). VKLLM_DELTA_NET=chunked|sequential replaces
// Auto's choice for calls of more than one token (for measuring either on a device, and for
// tests); a decode step keeps Sequential.
enum class DeltaNetKernel { Auto, Sequential, Chunked };
constexpr int64_t kDeltaNetChunkedMinTokens = 16;
struct GatedDeltaNetArgs {
    int64_t n_head_k = 0, n_head_v = 0, d_k = 0, d_v = 0;
    DeltaHeadShare share = DeltaHeadShare::Interleaved;
    TensorView state, q, k, v, g, beta, out;
    float scale = 0.0f;       // 0: 1 / sqrt(d_k)
    bool l2_norm_qk = false;  // L2-normalise q and k first (llama.cpp's build_gdn_l2_norm)
    float l2_eps = 1e-6f;
    DeltaNetKernel kernel = DeltaNetKernel::Auto;
};
void gated_delta_net(Stream& s, const GatedDeltaNetArgs& a);

// Tokens per chunk of the chunked kernel for a key head size on this device: 16, or 8 or 4
// where the device's shared memory is too small for the chunk's operands.
uint32_t delta_net_chunk(const gpu::Context& ctx, int64_t d_k);

// The gates gated_delta_net reads, from the layer's projections: g = softplus(alpha + dt_bias) * A
// and beta = sigmoid(b), [n_tokens, n_head] each (cpu::delta_net_gates). alpha and b are views of
// [n_tokens, n_head] columns; with heads_per_group > 0 head h's column is
// (h / heads_per_group) * group_stride + h % heads_per_group instead (Qwen3-Next's b | alpha
// per key head: heads_per_group = n_head_v / n_head_k, group_stride = 2 * heads_per_group, the
// views' cols spanning the whole groups). dt_bias and a: [1, n_head]. g and beta must not
// overlap the inputs.
struct DeltaNetGatesArgs {
    int64_t n_head = 0;
    int64_t heads_per_group = 0, group_stride = 0;  // 0: plain [n_tokens, n_head] rows
    TensorView alpha, b, dt_bias, a, g, beta;
};
void delta_net_gates(Stream& s, const DeltaNetGatesArgs& a);

}  // namespace vkllm::ops
