// `--json`, `--json-schema FILE` and `--grammar FILE`: the grammar a generating command
// constrains its output to.
#pragma once

#include <optional>

#include "options.h"
#include "vkllm/grammar.h"
#include "vkllm/json_output.h"

namespace vkllm::cli {

// `--json`: any JSON object; `--json-schema FILE`: the values the JSON Schema in FILE allows
// (the subset docs/serve.md lists); neither: nullopt. Both, a file that cannot be read (at most
// app::kSmallFileMax), text that is not JSON or a keyword that cannot be enforced is a
// UsageError whose message names the file and, where one is at fault, the keyword.
std::optional<JsonGrammar> json_grammar_option(const Options& options);

// `--grammar FILE`: the GBNF grammar in FILE; absent: nullopt. With --json or --json-schema, a
// file that cannot be read or a bad grammar is a UsageError ("--grammar FILE:LINE:COLUMN: why").
std::optional<Grammar> gbnf_grammar_option(const Options& options);

}  // namespace vkllm::cli
