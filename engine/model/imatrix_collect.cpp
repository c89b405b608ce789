// compute_imatrix (vkllm/imatrix.h): llama-imatrix's walk over a text (tools/imatrix's
// compute_imatrix) with the sums taken on the GPU by an ImatrixRecorder on a Forward of its own.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <string>

#include "model/forward.h"
#include "model/imatrix_recorder.h"
#include "model/model_internal.h"
#include "vkllm/imatrix.h"
#include "vkllm/model.h"

namespace vkllm {
namespace {

// -log softmax(logits)[target], in double as llama.cpp's perplexity sums it.
double neg_log_prob(const float* logits, int n_vocab, int32_t target) {
    double mx = logits[0];
    for (int v = 1; v < n_vocab; ++v) mx = std::max(mx, double(logits[v]));
    double sum = 0;
    for (int v = 0; v < n_vocab; ++v) sum += std::exp(double(logits[v]) - mx);
    return std::log(sum) + mx - double(logits[target]);
}

}  // namespace

Imatrix compute_imatrix(const Model& model, const std::vector<int32_t>& tokens, const ImatrixOptions& o,
                        const std::function<void(const ImatrixProgress&)>& progress) {
    const int n_ctx = o.n_ctx;
    if (n_ctx < 2) throw std::invalid_argument("a chunk of " + std::to_string(n_ctx) + " tokens: -c must be at least 2");
    if (o.from_chunk < 0) throw std::invalid_argument("--chunk must not be negative");
    if (o.n_batch < 1) throw std::invalid_argument("the batch must hold at least one token");
    const int64_t skipped = int64_t(o.from_chunk) * n_ctx;
    const int64_t left = int64_t(tokens.size()) - skipped;
    // llama-imatrix asks for two chunks' worth of tokens after the skipped ones.
    if (left < 2 * int64_t(n_ctx))
        throw std::invalid_argument("the text is " + std::to_string(tokens.size()) + " tokens; " +
                                    (o.from_chunk > 0 ? "after skipping " + std::to_string(skipped) + ", " : "") +
                                    "a context of " + std::to_string(n_ctx) + " needs at least " +
                                    std::to_string(2 * n_ctx) + " (two chunks' worth, as llama-imatrix asks)");
    int n_chunks = int(left / n_ctx);
    if (o.max_chunks >= 0) n_chunks = std::min(n_chunks, o.max_chunks);

    const detail::ModelInternals& in = model.internals();
    const int n_vocab = in.spec().n_vocab;
    model::Forward fwd(in.context(), in.spec(), in.weights(), n_ctx, o.n_batch, o.llama_cpp_rounding, o.kv_cache);
    model::ImatrixRecorder recorder(in.context(), in.weights(), o.process_output);
    fwd.set_imatrix(&recorder);

    Imatrix m;
    if (!o.dataset.empty()) m.datasets.push_back(o.dataset);
    m.chunk_size = n_ctx;
    const int pass = fwd.max_tokens(/*all_logits=*/true);
    std::vector<float> logits(size_t(n_ctx) * size_t(n_vocab));
    std::vector<int32_t> chunk(static_cast<size_t>(n_ctx));
    const auto t0 = std::chrono::steady_clock::now();
    double nll = 0;
    int64_t scored = 0;
    for (int c = 0; c < n_chunks; ++c) {
        const auto first = tokens.begin() + skipped + int64_t(c) * n_ctx;
        std::copy(first, first + n_ctx, chunk.begin());
        if (model.add_bos() && model.bos() >= 0) chunk[0] = model.bos();
        fwd.truncate(0);  // an empty cache; the first pass at position 0 restarts any recurrent state
        for (int done = 0; done < n_ctx;) {
            const int t = std::min(pass, n_ctx - done);
            fwd.step(chunk.data() + done, t, done, /*all_logits=*/true, logits.data() + size_t(done) * size_t(n_vocab),
                     ProbeConfig{}, nullptr);
            done += t;
        }
        recorder.drain_into(m);
        m.chunk_count = c + 1;
        ImatrixProgress p;
        p.chunk = c;
        p.n_chunks = n_chunks;
        if (o.compute_ppl) {
            // llama-imatrix's measure: each chunk's second half predicts its next tokens.
            for (int i = n_ctx / 2; i < n_ctx - 1; ++i, ++scored)
                nll += neg_log_prob(logits.data() + size_t(i) * size_t(n_vocab), n_vocab, chunk[size_t(i) + 1]);
            p.perplexity = scored > 0 ? std::exp(nll / double(scored)) : 0;
        }
        p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (progress) progress(p);
    }
    return m;
}

}  // namespace vkllm
