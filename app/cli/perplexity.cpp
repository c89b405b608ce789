#include "perplexity.h"

#include <cmath>
#include <stdexcept>
#include <string>

#include "vkllm/session.h"
#include "vkllm/token_probs.h"

namespace vkllm::cli {
namespace {

// log softmax(logits)[token], in double, as the engine computes it.
double log_prob(const float* logits, int n_vocab, int32_t token) { return log_softmax(logits, n_vocab)[size_t(token)]; }

}  // namespace

PerplexityResult compute_perplexity(const Model& model, const std::vector<int32_t>& tokens, int n_ctx, int n_batch,
                                    bool llama_cpp_rounding, KvCacheType kv_cache, const std::function<void(int, double)>& on_chunk) {
    if (n_ctx < 3)  // a chunk scores n_ctx - 1 - n_ctx/2 tokens: none below 3
        throw std::invalid_argument("a context of " + std::to_string(n_ctx) + " tokens scores no token: it must be at least 3");
    if (int64_t(tokens.size()) < 2 * int64_t(n_ctx))
        throw std::invalid_argument("the text is " + std::to_string(tokens.size()) + " tokens; perplexity with a context of " +
                                    std::to_string(n_ctx) + " needs at least " + std::to_string(2 * n_ctx) +
                                    " (two chunks' worth, as llama-perplexity asks)");
    PerplexityResult r;
    r.n_ctx = n_ctx;
    r.n_tokens = int(tokens.size());
    r.chunks = int(tokens.size() / size_t(n_ctx));
    const int first = n_ctx / 2;
    const int n_vocab = model.n_vocab();

    SessionOptions so;
    so.n_ctx = n_ctx;
    so.n_batch = n_batch;
    so.llama_cpp_rounding = llama_cpp_rounding;
    so.kv_cache = kv_cache;
    Session session(model, so);
    double nll = 0, nll2 = 0;
    for (int c = 0; c < r.chunks; ++c) {
        std::vector<int32_t> chunk(tokens.begin() + long(c) * n_ctx, tokens.begin() + long(c + 1) * n_ctx);
        if (model.add_bos() && model.bos() >= 0) chunk[0] = model.bos();
        session.reset();
        const std::vector<float> logits = session.eval(chunk, /*all_logits=*/true);
        for (int i = first; i < n_ctx - 1; ++i) {
            const double lp = log_prob(logits.data() + size_t(i) * size_t(n_vocab), n_vocab, chunk[size_t(i) + 1]);
            nll -= lp;
            nll2 += lp * lp;
            ++r.scored;
        }
        r.chunk_perplexity.push_back(std::exp(nll / r.scored));
        if (on_chunk) on_chunk(c, r.chunk_perplexity.back());
    }
    r.nll = nll / r.scored;
    r.perplexity = std::exp(r.nll);
    // llama.cpp: the standard error of the mean log-probability.
    const double var = nll2 / r.scored - r.nll * r.nll;
    r.nll_stderr = var > 0 && r.scored > 1 ? std::sqrt(var / (r.scored - 1)) : 0;
    return r;
}

}  // namespace vkllm::cli
