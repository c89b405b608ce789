// RWKV-7's ("Goose") time and channel mixing kernels over tensor views. The math is
// cpu/ref_rwkv.h's (llama.cpp's build_rwkv7_time_mix and build_rwkv7_channel_mix, and
// ggml_rwkv_wkv7); the kernels are tested against it (tests/ops/test_rwkv.cpp). Everything else
// the layers need is an existing op: layer_norm, matmul (the projections and the low-rank
// loras), relu_sqr (the channel mix's key). Each op records a dispatch and inserts no barrier.
//
// A layer's time mix on n tokens of one sequence, C = n_head * head_size channels:
//   rwkv_shift_mix (6 mixes) -> matmuls r, k, v and the loras' first halves -> rwkv_lora_act
//   (tanh on w1's, sigmoid on g1's) -> the loras' second halves -> rwkv7_value_mix (layers
//   after the first) and rwkv7_wkv_inputs -> rwkv_wkv7 -> rwkv7_wkv_output -> the output matmul.
#pragma once

#include <cstdint>

#include "ops/ops.h"
#include "ops/tensor_view.h"

namespace vkllm::ops {

// Largest head size the per-head kernels take (the workgroup is one head; wkv7 keeps a state row
// of this many floats in registers).
constexpr int64_t kRwkvMaxHeadSize = 128;

// Token shift and lerp mixes: out[m * n + t] = x[t] + (prev[t] - x[t]) * mix[m], prev[0] = shift,
// prev[t] = x[t - 1]; then shift = x[n - 1]. x: [n, C] at any row stride; shift: [1, C], read
// and written (the shift state); mix: [n_mix, C], packed; out: [n_mix * n, C], packed (the
// mixes one after another, as llama.cpp's time_mix_lerp_fused result). out must not overlap x,
// shift or mix.
void rwkv_shift_mix(Stream& s, const TensorView& x, const TensorView& shift, const TensorView& mix,
                    const TensorView& out);

// ggml_rwkv_wkv7 over n tokens of one sequence, the state carried in place (a prompt, or one
// decode step): per head with S its head_size x head_size state,
//   S = S diag(w) + v k^T + (S a) b^T,  out = S r.
// r, w, k, v, a, b, out: [n, C], any row stride; state: [n_head * head_size, head_size], packed
// (ggml's layout: row i of each head's S contiguous). out must not overlap the others.
//
// Two kernels compute it: Sequential (shaders/rwkv_wkv7.comp, token after token) and Chunked
// (rwkv_wkv7_chunked.comp, the tokens of each chunk of rwkv_wkv7_chunk() at once). Auto takes
// Chunked for prompts of at least kRwkvWkv7ChunkedMinTokens tokens on GPUs and Sequential
// elsewhere: on a CPU driver the sequential kernel is the faster one (lavapipe, a 2-layer model of
// four heads of 64: pp512 358-366 tokens/s against 326 chunked, pp2048 316-347 against 296-315).
// VKLLM_WKV7=chunked|sequential replaces Auto's choice for calls of more than one token (for
// measuring either on a device, and for tests); a decode step keeps Sequential.
enum class Wkv7Kernel { Auto, Sequential, Chunked };
constexpr int64_t kRwkvWkv7ChunkedMinTokens = 16;
struct RwkvWkv7Args {
    int64_t n_head = 0, head_size = 0;
    TensorView state, r, w, k, v, a, b, out;
    Wkv7Kernel kernel = Wkv7Kernel::Auto;
};
void rwkv_wkv7(Stream& s, const RwkvWkv7Args& a);

// Tokens per chunk of the chunked wkv7 kernel for a head size on this device: 16, or 8 or 4
// where the device's shared memory is too small for the chunk's operands.
uint32_t rwkv_wkv7_chunk(const gpu::Context& ctx, int64_t head_size);

// wkv7's operands from the time mix's projections, in place (cpu::rwkv7_wkv_inputs): w (the w2
// lora's output) becomes the decay exp(-0.606531 sigmoid(w0 + w)), k the modified key, a (the a2
// lora's output) becomes -kk, and b = kk * sigmoid(a0 + a), kk the L2-normalised k * k_k of each
// head. w, k, a, b: [n, C], any row stride, pairwise apart; w0, a0, k_k, k_a: [1, C].
struct Rwkv7InputsArgs {
    int64_t n_head = 0, head_size = 0;
    TensorView w, k, a, b, w0, a0, k_k, k_a;
};
void rwkv7_wkv_inputs(Stream& s, const Rwkv7InputsArgs& a);

// The time mix's output in place over o (wkv7's out), per token and head:
//   o = (group_norm(o) * ln_w + ln_b + (sum k r r_k) * v) * g
// o, r, k, v, g: [n, C], any row stride, o apart from the others; ln_w, ln_b, r_k: [1, C].
struct Rwkv7OutputArgs {
    int64_t n_head = 0, head_size = 0;
    TensorView o, r, k, v, g, ln_w, ln_b, r_k;
    float eps = 64e-5f;  // llama.cpp's group-norm epsilon for RWKV-7
};
void rwkv7_wkv_output(Stream& s, const Rwkv7OutputArgs& a);

// RWKV-7's value residual: v = v + (v_first - v) * sigmoid(v_mix + v0). v, v_first, v_mix:
// [n, C], any row stride, v apart from the others; v0: [1, C].
void rwkv7_value_mix(Stream& s, const TensorView& v, const TensorView& v_first, const TensorView& v_mix,
                     const TensorView& v0);

// A lora's inner activation, y = tanh(x) or sigmoid(x): views of one shape, rows at any stride;
// y is x itself or apart from it.
enum class RwkvLoraAct { Tanh, Sigmoid };
void rwkv_lora_act(Stream& s, const TensorView& x, const TensorView& y, RwkvLoraAct act);

}  // namespace vkllm::ops
