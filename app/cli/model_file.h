// Which model a command works on: the GGUF file it is given, else the one built into vkllm.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "options.h"
#include "vkllm/gguf.h"

namespace vkllm::cli {

// The GGUF file at `path`; with an empty path, the built-in model (parsed from a copy of the
// bytes in the binary, named "built-in model NAME" in messages). Model::load(*file) runs it.
std::unique_ptr<GgufFile> open_model_file(const std::string& path);
// The file a command's -m names, else the built-in model.
std::unique_ptr<GgufFile> open_model_file(const Options& options);

// Prints a model's load-time warnings (Model::warnings, Tokenizer::warnings) on stderr, one
// "warning: ..." line each.
void print_warnings(const std::vector<std::string>& warnings);

// "the built-in model zoo-dense (3.3 MiB)", for telling a person which model runs.
std::string builtin_model_description();

}  // namespace vkllm::cli
