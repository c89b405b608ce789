// Where vkllm's quantizers write: the checks on the output path before any work, and the write
// itself, beside the target and renamed over it only when complete, so a failed write (a full
// disk, a missing folder) never leaves a truncated file where a good one was.
#pragma once

#include <string>

#include "gguf/gguf.h"

namespace vkllm::model {

// Throws for an empty path, the input file itself, or something that is not a regular file.
void check_quantize_output(const std::string& in_path, const std::string& out_path);
// Writes `writer`'s file to `out_path` through a temporary name beside it.
void write_quantized(const gguf::Writer& writer, const std::string& out_path);

}  // namespace vkllm::model
