// The importance-matrix sums a MoE model's forward should collect, from the CPU reference
// forward: the q/k/v projections' input (the attention norm's output) and each routed
// (token, slot) pair's expert down-projection input, per expert. Chunks of `chunk` tokens, each
// from an empty cache with BOS first, as llama-imatrix chunks a text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cpu/ref_ops.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "model/model_internal.h"
#include "reference/reference_forward.h"
#include "tokenizer/tokenizer.h"
#include "vkllm/imatrix.h"

namespace vkllm::test {

inline Imatrix reference_moe_imatrix(const detail::ModelInternals& in, const std::vector<int32_t>& tokens, int chunk,
                                     int chunks) {
    const model::ModelSpec& spec = in.spec();
    const int E = spec.n_embd;
    Imatrix ref;
    for (int c = 0; c < chunks; ++c) {
        std::vector<int32_t> part(tokens.begin() + c * chunk, tokens.begin() + (c + 1) * chunk);
        part[0] = in.tokenizer().bos();
        model::ReferenceForward fwd(in.file(), spec, chunk, /*round_activations=*/false);
        fwd.eval(part);
        for (int l = 0; l < spec.n_layer; ++l) {
            const std::string blk = "blk." + std::to_string(l) + ".";
            // The projections of q, k and v read the attention norm's output.
            const std::vector<float> w = gguf::dequantize_tensor(*in.file().find_tensor(blk + "attn_norm.weight"));
            std::vector<float> h(size_t(chunk) * E);
            cpu::rms_norm(fwd.residual[size_t(l)].data(), w.data(), h.data(), chunk, E, spec.norm_eps);
            for (const char* p : {"attn_q", "attn_k", "attn_v"}) ref.accumulate(blk + p + ".weight", h.data(), chunk, E);
            // Each (token, slot) pair's down-projection input goes to its expert's sums.
            const auto& routing = fwd.routing.at(l);
            const int n_ff = spec.layers[size_t(l)].ffn.moe.n_ff_expert, n_exp = spec.layers[size_t(l)].ffn.moe.n_expert;
            for (size_t p = 0; p < routing.experts.size(); ++p)
                ref.accumulate(blk + "ffn_down_exps.weight", fwd.expert_in[size_t(l)].data() + p * size_t(n_ff), 1, n_ff,
                               routing.experts[p], n_exp);
        }
    }
    return ref;
}

}  // namespace vkllm::test
