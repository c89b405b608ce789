// The reference walk of a shared expert with a sigmoid gate (Qwen3-Next, Qwen3.5-MoE: llama.cpp's
// build_layer_ffn): sigmoid(ffn_gate_inp_shexp . h) * down_shexp(silu(gate_shexp h) * up_shexp h).
#include <cmath>
#include <string>
#include <vector>

#include "reference/reference_forward.h"

namespace vkllm::model {

std::vector<float> ReferenceForward::gated_shared_expert(int l, const float* h, int n_tokens) {
    const MoeSpec& moe = spec_.layers[size_t(l)].ffn.moe;
    const std::string p = "blk." + std::to_string(l) + ".";
    const int64_t E = spec_.n_embd;
    std::vector<float> out = gated_ffn(p + "ffn_gate_shexp.weight", p + "ffn_up_shexp.weight", p + "ffn_down_shexp.weight",
                                       Activation::SiLU, h, n_tokens, moe.n_ff_shared_gated, nullptr);
    const std::vector<float> gate = values(p + "ffn_gate_inp_shexp.weight");  // [n_embd]
    if (int64_t(gate.size()) != E)
        throw ModelError("reference forward: '" + p + "ffn_gate_inp_shexp.weight' does not have n_embd values");
    for (int64_t t = 0; t < n_tokens; ++t) {
        double logit = 0;
        for (int64_t i = 0; i < E; ++i) logit += double(gate[size_t(i)]) * double(h[t * E + i]);
        const float g = 1.0f / (1.0f + std::exp(-float(logit)));
        for (int64_t i = 0; i < E; ++i) out[size_t(t * E + i)] *= g;
    }
    return out;
}

}  // namespace vkllm::model
