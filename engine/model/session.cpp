// vkllm::Session: the KV cache of one conversation and the loop that feeds tokens through the
// forward pass in batches.
#include "vkllm/session.h"

#include <algorithm>

#include "model/forward.h"
#include "model/model_internal.h"
#include "vkllm/model.h"

namespace vkllm {

struct Session::Impl {
    const Model& model;
    std::unique_ptr<model::Forward> forward;
    int n_past = 0;
    ProbeConfig probes;
    ProbeResults results;
};

namespace {

int choose_context(const Model& m, int wanted) {
    int n = wanted > 0 ? wanted : std::min(m.internals().spec().n_ctx_train, 4096);
    if (n <= 0) throw std::invalid_argument("context size must be positive");
    return n;
}

}  // namespace

Session::Session(const Model& m, const SessionOptions& options)
    : impl_(new Impl{m, nullptr, 0, options.probes, {}}) {
    if (options.n_batch <= 0) throw std::invalid_argument("batch size must be positive");
    impl_->forward = std::make_unique<model::Forward>(m.internals().context(), m.internals().spec(), m.internals().weights(), choose_context(m, options.n_ctx),
                                                      options.n_batch, options.llama_cpp_rounding);
}

Session::~Session() = default;

std::vector<float> Session::eval(const std::vector<int32_t>& tokens, bool all_logits) {
    Impl& s = *impl_;
    const int n_vocab = s.model.internals().spec().n_vocab;
    const int n_ctx = s.forward->n_ctx();
    if (tokens.empty()) throw std::invalid_argument("Session::eval needs at least one token");
    if (s.n_past + int64_t(tokens.size()) > n_ctx)
        throw ContextOverflow(std::to_string(tokens.size()) + " tokens after " + std::to_string(s.n_past) +
                              " do not fit the context of " + std::to_string(n_ctx) +
                              " tokens; use a larger context (-c) or a shorter prompt");
    for (int32_t id : tokens)
        if (id < 0 || id >= n_vocab)
            throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                                        std::to_string(n_vocab - 1) + ")");

    std::vector<float> out(size_t(all_logits ? tokens.size() : 1) * size_t(n_vocab));
    s.results.timings.clear();
    const int chunk = s.forward->max_tokens(all_logits);
    for (size_t done = 0; done < tokens.size();) {
        int n = int(std::min<size_t>(size_t(chunk), tokens.size() - done));
        float* dst = all_logits ? out.data() + done * size_t(n_vocab) : out.data();
        // Earlier chunks' logits are overwritten by the last one unless all are wanted.
        s.forward->step(tokens.data() + done, n, s.n_past, all_logits, dst, s.probes,
                        s.probes.any() ? &s.results : nullptr);
        s.n_past += n;
        if (s.probes.expert_load) {
            auto& total = tokens.size() > 1 ? s.results.expert_load_prefill : s.results.expert_load_decode;
            if (total.empty()) total = s.results.expert_load_step;
            else
                for (size_t i = 0; i < total.size(); ++i)
                    for (size_t x = 0; x < total[i].tokens.size(); ++x) {
                        total[i].tokens[x] += s.results.expert_load_step[i].tokens[x];
                        total[i].weight_sum[x] += s.results.expert_load_step[i].weight_sum[x];
                    }
        }
        done += size_t(n);
    }
    return out;
}

int Session::n_past() const { return impl_->n_past; }
int Session::n_ctx() const { return impl_->forward->n_ctx(); }
int Session::n_batch() const { return impl_->forward->n_batch(); }
void Session::reset() {
    impl_->n_past = 0;
    impl_->results.expert_load_prefill.clear();
    impl_->results.expert_load_decode.clear();
}
void Session::set_probes(const ProbeConfig& probes) { impl_->probes = probes; }
const ProbeResults& Session::probes() const { return impl_->results; }
uint64_t Session::kv_cache_bytes() const { return impl_->forward->kv_bytes(); }

Session::KvCacheUsage Session::kv_cache_usage() const {
    auto u = impl_->forward->kv_usage();
    return {u.global_layers, u.local_layers, u.global_bytes, u.local_bytes};
}

}  // namespace vkllm
