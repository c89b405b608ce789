// llama-quantize's named file types ("mixes": Q4_K_M, Q3_K_S, IQ4_XS, ...) and its per-tensor
// type rules, so that `vkllm quantize FILE OUT Q4_K_M` gives each tensor the type llama.cpp's
// llama-quantize gives it (llama.cpp src/llama-quant.cpp, llama_tensor_get_type: which tensors
// are quantized, the mix's choices by tensor role, layer and model shape, and the fallbacks for
// rows the block does not divide).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/requantize.h"

namespace vkllm::gguf {

struct QuantMix {
    const char* name;     // llama-quantize's name: "Q4_K_M"
    uint32_t file_type;   // llama_ftype: general.file_type of the written file
    uint32_t base_type;   // ggml type number of most weights
};
// Every mix llama-quantize names (also those with types vkllm cannot write yet).
const std::vector<QuantMix>& quant_mixes();
// nullptr when no mix has that name (exact, upper case).
const QuantMix* find_quant_mix(const std::string& name);
// A ggml type's name, also for types vkllm does not read ("IQ4_XS", "TQ1_0").
std::string ggml_type_name_of(uint32_t type);

// The architecture quirks in llama.cpp's rules, as data: the caller looks them up by the file's
// `general.architecture` (model::quant_mix_rules, from the family table); {} for an architecture
// with none.
struct MixArchRules {
    bool falcon_rules = false;  // Falcon's choices: the output in Q8_0, fewer bits in its FFN
    int layers_70b = 0;         // > 0: this many layers with grouped-query attention is a 70B (Llama 2/3)
};

// The type of each tensor of `in` (in the file's order) under `mix` with `rules`; `pure`: every quantized
// tensor in the base type (llama-quantize --pure), fallbacks still applied; `with_imatrix`: the
// choices llama.cpp makes when an importance matrix is given (vkllm quantize has none yet).
// Types may be ones vkllm cannot encode (see unwritable_types).
std::vector<TensorConversion> plan_mix(const File& in, const QuantMix& mix, const MixArchRules& rules, bool pure,
                                      bool with_imatrix = false);
// The planned target types vkllm cannot encode, by name, each once (empty: the plan can be written).
std::vector<std::string> unwritable_types(const std::vector<TensorConversion>& plan);

}  // namespace vkllm::gguf
