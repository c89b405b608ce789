// Gated DeltaNet's mixer (Qwen3-Next, Qwen3.5: llama.cpp's build_layer_attn_linear), a layer's
// block in place of attention, over the session's RecurrentState:
//   h = norm(x);  qkv = W_qkv h;  z = W_gate h;  b, alpha = W_ba h (or W_beta h, W_alpha h)
//   qkv = silu(conv1d(qkv, carrying the conv state));  q | k | v = qkv
//   g = softplus(alpha + dt_bias) * A;  beta = sigmoid(b)            (ops::delta_net_gates)
//   y = gated delta rule(L2norm(q), L2norm(k), v, g, beta; carrying the state [n_head][d_v][d_k])
//   y = RMSNorm(y per head) * ssm_norm * silu(z);  x += W_out y
// The conv and delta-rule states are the layer's RecurrentState::Layer conv and ssm buffers,
// sized from its SsmSpec (spec.h says how Gated DeltaNet's sizes map onto it); each pass reads and
// overwrites them, so a decode step is the same dispatches with one token.
#pragma once

#include "model/blocks/ssm_mixer.h"

namespace vkllm::model {

class GatedDeltaNetBlock : public StateSpaceMixer {
public:
    GatedDeltaNetBlock(int layer, const RecurrentState& state) : StateSpaceMixer(layer, state) {}
    void record(Recording& r) const override;

private:
    // The projections into the state's in_proj rows (DeltaNetRows says where each lands).
    void record_projections(Recording& r) const;
    // g and beta from the b and alpha projections.
    void record_gates(Recording& r) const;
};

}  // namespace vkllm::model
