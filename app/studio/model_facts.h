// What a person wants to know about a model before chatting with it: architecture, size,
// quantisation, context and whether its file has a chat template. From the public ModelInfo,
// so the Open dialog can show them from the file's header before loading (no GPU).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vkllm/model_info.h"

namespace vkllm::studio {

struct ModelFact {
    std::string label, value;
};
// One fact a row: architecture, name, parameters, quantisation (the tensor types by their share
// of the bytes, largest first), context (training), layers and width, chat template, tokenizer,
// and the file's size when `file_bytes` > 0.
std::vector<ModelFact> model_facts(const ModelInfo& info, uint64_t file_bytes = 0);
// "1.2 B", "912.4 K": a count in thousands, millions or billions.
std::string count_text(uint64_t n);
// "3.50 MiB": bytes in binary units.
std::string bytes_text(uint64_t n);
// The facts of a GGUF file from its header alone; throws std::runtime_error naming the file.
std::vector<ModelFact> read_model_facts(const std::string& path);

}  // namespace vkllm::studio
