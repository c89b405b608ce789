// Perplexity as llama.cpp's llama-perplexity defines it (tools/perplexity, its default mode):
//   - the whole text is tokenized once, with BOS when the vocabulary adds it;
//   - it is cut into floor(n_tokens / n_ctx) chunks of n_ctx tokens (the rest is dropped), and at
//     least 2 chunks' worth of tokens are needed;
//   - each chunk runs alone from an empty cache at positions 0..n_ctx-1, its first token replaced
//     by BOS when the vocabulary adds BOS;
//   - only the second half is scored: the logits at positions first = n_ctx/2 .. n_ctx-2 predict
//     the tokens at first+1 .. n_ctx-1 (n_ctx - 1 - first tokens per chunk);
//   - perplexity = exp(mean of -log softmax(logits)[next token]) over every scored token.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm::cli {

struct PerplexityResult {
    double perplexity = 0;
    double nll = 0;        // mean negative log-likelihood per scored token (nats)
    double nll_stderr = 0; // its standard error, as llama.cpp estimates it
    int chunks = 0;
    int n_ctx = 0;
    int n_tokens = 0;      // of the whole text
    int scored = 0;        // tokens scored
    std::vector<double> chunk_perplexity;  // the running perplexity after each chunk (llama.cpp's [i]x,)
};

// Throws std::invalid_argument when n_ctx < 3 (no token would be scored) or the text has fewer
// than 2 * n_ctx tokens. `on_chunk` is
// called after each chunk with its index and the running perplexity.
PerplexityResult compute_perplexity(const Model& model, const std::vector<int32_t>& tokens, int n_ctx, int n_batch,
                                    bool llama_cpp_rounding, KvCacheType kv_cache,
                                    const std::function<void(int chunk, double running)>& on_chunk = nullptr);

}  // namespace vkllm::cli
