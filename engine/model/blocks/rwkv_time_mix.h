// RWKV-7's time mix (llama.cpp's build_rwkv7_time_mix), a layer's block in place of attention:
//   h = LayerNorm(x; attn_norm)
//   xr, xw, xk, xv, xa, xg = h + (shift(h) - h) * lerp        (the token shift: the previous
//                                                            token's h, carried in RwkvState)
//   r = W_r xr; k = W_k xk; v = W_v xv
//   w = exp(-0.606531 sigmoid(w0 + W2 tanh(W1 xw)));  a = sigmoid(a0 + A2 A1 xa);  g = G2 sigmoid(G1 xg)
//   v += (v_first - v) sigmoid(v0 + V2 V1 xv)                (layers after the first; v_first is
//                                                            layer 0's v)
//   kk = l2norm_per_head(k k_k);  k += (a - 1) k k_a
//   o = wkv7(r, w, k, v, -kk, kk a; carrying the wkv state)
//   o = (group_norm(o) ln + ln_b + (sum_head k r r_k) v) g;  x += W_o o
// The steps are ops/rwkv_ops.h's kernels and the projections; every pass reads and overwrites the
// state, so a decode step is the same dispatches with one token.
#pragma once

#include <functional>

#include "model/blocks/block.h"
#include "model/probe_state.h"
#include "model/rwkv_spec.h"
#include "model/rwkv_state.h"
#include "model/rwkv_weights.h"

namespace vkllm::model {

// y = W x (accumulate: y += W x), x's activations prepared as the forward pass prepares a
// matmul's inputs (rounded for quantised weights); x f32 [rows, W.n_in] packed, y [rows, W.n_out].
using RwkvMatmul =
    std::function<void(const ops::Weight& w, const ops::TensorView& x, const ops::TensorView& y, bool accumulate)>;

// The time mix from the normed input h (f32 [n_tokens, n_embd], packed) to o, written to
// state.out() [n_tokens, n_embd], ending with a barrier; the caller adds W_o o to the residual
// stream. Layer 0 writes its values to state.v_first(), which later layers of the pass read.
// With `probe`, its state tap records before wkv7 (nothing when the layer is not probed).
void record_rwkv7_time_mix(gpu::Stream& s, const RwkvSpec& spec, const RwkvLayerWeights& w, const RwkvState& state,
                           int layer, const ops::TensorView& h, const RwkvMatmul& matmul,
                           const StateProbeRecorder* probe = nullptr);

class RwkvTimeMixBlock : public Block {
public:
    RwkvTimeMixBlock(int layer, const RwkvSpec& spec, const RwkvWeights& weights, const RwkvState& state)
        : layer_(layer), spec_(spec), weights_(weights), state_(state) {}
    void record(Recording& r) const override;

private:
    int layer_;
    const RwkvSpec& spec_;
    const RwkvWeights& weights_;
    const RwkvState& state_;
};

// A matmul through the recording's input preparation (Recording::prepare_inputs), with a barrier
// after it when the inputs went through a rounding buffer the next matmul's rounding reuses.
RwkvMatmul recording_matmul(Recording& r);

}  // namespace vkllm::model
