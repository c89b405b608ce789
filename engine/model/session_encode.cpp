// Session::embed and Session::encode_logits: an encoder's (BERT's) one-pass evaluation of a
// whole text (model::Forward::encode).
#include <algorithm>
#include <cmath>
#include <string>

#include "model/model_internal.h"
#include "model/session_impl.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {

void Session::Impl::prepare_encode(const std::vector<int32_t>& tokens, const char* what) {
    Impl& s = *this;
    const model::ModelSpec& spec = s.model.internals().spec();
    for (const model::LayerSpec& L : spec.layers)
        if (L.attn.causal)
            throw std::invalid_argument(std::string(what) + " needs an encoder (bidirectional attention, e.g. BERT); '" +
                                        spec.arch + "' is a causal decoder");
    if (tokens.empty()) throw std::invalid_argument(std::string(what) + " needs at least one token");
    s.check_vocabulary(tokens.data(), tokens.size());
    s.tokens.clear();
    s.check_fits(tokens.size());
    if (tokens.size() > size_t(s.forward->n_batch()))
        throw std::invalid_argument(std::string(what) + ": a text of " + std::to_string(tokens.size()) +
                                    " tokens does not fit one forward pass of " + std::to_string(s.forward->n_batch()) +
                                    " tokens (an encoder sees the whole text at once); use a larger batch");
}

Embeddings Session::embed(const std::vector<int32_t>& tokens, Pooling pooling) {
    Impl& s = *impl_;
    s.prepare_encode(tokens, "embed");
    const model::ModelSpec& spec = s.model.internals().spec();
    const Pooling p = pooling == Pooling::Model ? spec.pooling : pooling;
    Embeddings out;
    out.n_embd = spec.n_embd;
    out.rows = p == Pooling::None ? int(tokens.size()) : 1;
    out.data.resize(size_t(out.rows) * size_t(out.n_embd));
    s.forward->encode(tokens.data(), int(tokens.size()), p, out.data.data(), nullptr, s.probes, &s.results);
    s.tokens = tokens;
    s.publish_step();
    for (int r = 0; r < out.rows; ++r) {
        const model::Forward::NonFinite bad = s.forward->embeddings_nonfinite(r);
        if (bad.count == 0) continue;
        const float v = out.data[size_t(r) * size_t(out.n_embd) + std::min<size_t>(bad.first, size_t(out.n_embd) - 1)];
        throw NonFiniteEmbeddings(std::to_string(bad.count) + " of " + std::to_string(out.n_embd) + " values of row " +
                                  std::to_string(r) + " are " + (std::isnan(v) ? "NaN" : "infinite") +
                                  " (first: dimension " + std::to_string(bad.first) +
                                  "): the model's weights may be corrupted (`vkllm inspect --check FILE` scans "
                                  "them) or an activation overflowed");
    }
    return out;
}

std::vector<float> Session::encode_logits(const std::vector<int32_t>& tokens) {
    Impl& s = *impl_;
    s.prepare_encode(tokens, "encode_logits");
    if (tokens.size() > size_t(s.forward->max_tokens(true)))
        throw std::invalid_argument("encode_logits: " + std::to_string(tokens.size()) +
                                    " tokens of logits exceed one binding of this device");
    const model::ModelSpec& spec = s.model.internals().spec();
    std::vector<float> embd(size_t(spec.n_embd));
    std::vector<float> logits(tokens.size() * size_t(spec.n_vocab));
    s.forward->encode(tokens.data(), int(tokens.size()), Pooling::Cls, embd.data(), logits.data(), s.probes,
                      &s.results);
    s.tokens = tokens;
    s.publish_step();
    s.check_finite(logits.data(), tokens.size(), size_t(spec.n_vocab), tokens.data(), 0);
    return logits;
}

}  // namespace vkllm
