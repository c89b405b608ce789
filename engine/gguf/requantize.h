// Rewriting a GGUF file's weights in another tensor type (`vkllm quantize`).
//
// Policy (llama-quantize's, without its per-model type mixes): only tensors with 2 or more
// dimensions whose name ends in "weight" are converted; norms, MoE routers, position and
// token-type embeddings and convolution kernels keep their type. A tensor whose row length is
// not a multiple of the target's block falls back as llama.cpp does (Q2_K/Q3_K -> Q4_0,
// Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0) and, if that does not fit either, to F16.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf.h"

namespace vkllm::gguf {

struct TensorConversion {
    std::string name;
    TensorType from;
    TensorType to;
    std::string note;  // why it kept its type or fell back; empty for a plain conversion
};

struct Requantized {
    Writer writer;  // metadata and tensors of the new file
    std::vector<TensorConversion> tensors;
    uint64_t bytes_in = 0;
    uint64_t bytes_out = 0;
};

// The type `tensor` gets when a file is converted to `target` (see the policy above).
TensorConversion plan_conversion(const TensorInfo& tensor, TensorType target);

// Converts every tensor of `in` per the policy, copies all metadata and sets
// general.file_type (llama_ftype numbering) and general.quantization_version.
// Throws UnsupportedType when `target` cannot be encoded.
Requantized requantize(const File& in, TensorType target);

// llama.cpp's general.file_type for a file whose weights are mostly `t` (nullopt: none defined).
std::optional<uint32_t> llama_file_type(TensorType t);

}  // namespace vkllm::gguf
