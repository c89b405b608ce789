// The vkllm subcommands. Each takes the arguments after its name and returns the exit code:
// 0 success, 1 a runtime error (bad file, device failure), 2 a usage error.
#pragma once

#include <string>
#include <vector>

namespace vkllm::cli {

using Args = std::vector<std::string>;

int cmd_info(const Args& args);      // devices and their capability records
int cmd_inspect(const Args& args);   // a GGUF file's architecture, hyperparameters, tensors
int cmd_tokenize(const Args& args);  // text -> token ids
int cmd_run(const Args& args);       // generate text
int cmd_logits(const Args& args);    // logits of every prompt position to a file
int cmd_bench(const Args& args);     // prompt and decode speed
int cmd_quantize(const Args& args);  // rewrite a GGUF file's weights in another type
int cmd_template(const Args& args);  // render a chat template with a conversation
int cmd_chat(const Args& args);      // an interactive multi-turn conversation
int cmd_serve(const Args& args);     // an OpenAI-compatible HTTP server
int cmd_probe(const Args& args);     // probes of a prompt and greedy tokens to a JSON file
int cmd_embed(const Args& args);     // an encoder's embeddings of texts (BERT)
int cmd_fill_mask(const Args& args); // masked-token prediction (BERT)
int cmd_perplexity(const Args& args);  // llama.cpp's perplexity of a text file
int cmd_imatrix(const Args& args);     // an importance matrix of a text (llama-imatrix's)

}  // namespace vkllm::cli
