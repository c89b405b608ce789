// vkllm::Session: the KV cache of one conversation, the loop that feeds tokens through the
// forward pass in batches, truncation, and the thread-safe snapshot. generate() is in
// generate.cpp.
#include "vkllm/session.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/model_internal.h"
#include "model/session_impl.h"
#include "vkllm/model.h"

namespace vkllm {

namespace {

int choose_context(const Model& m, int wanted) {
    int n = wanted > 0 ? wanted : std::min(m.internals().spec().n_ctx_train, 4096);
    if (n <= 0) throw std::invalid_argument("context size must be positive");
    return n;
}

// Adds one pass's expert-load counts into a running sum.
void add_expert_load(std::vector<ExpertLoad>& total, const std::vector<ExpertLoad>& step) {
    if (total.empty()) {
        total = step;
        return;
    }
    for (size_t i = 0; i < total.size(); ++i)
        for (size_t x = 0; x < total[i].tokens.size(); ++x) {
            total[i].tokens[x] += step[i].tokens[x];
            total[i].weight_sum[x] += step[i].weight_sum[x];
        }
}

}  // namespace

Session::Impl::Impl(const Model& m, const SessionOptions& options) : model(m), options(options), probes(options.probes) {
    if (options.n_batch <= 0) throw std::invalid_argument("batch size must be positive");
    const auto& in = m.internals();
    forward = std::make_unique<model::Forward>(in.context(), in.spec(), in.weights(), choose_context(m, options.n_ctx),
                                               options.n_batch, options.llama_cpp_rounding, options.kv_cache);
    if (in.tok_) forward->set_token_text([&m](int32_t id) { return m.internals().tokenizer().token_to_piece(id); });
}

void Session::Impl::check_fits(size_t n) const {
    const int n_ctx = forward->n_ctx();
    if (tokens.size() + n > size_t(n_ctx))
        throw ContextOverflow(std::to_string(n) + " tokens after " + std::to_string(tokens.size()) +
                              " do not fit the context of " + std::to_string(n_ctx) +
                              " tokens; use a larger context (-c) or a shorter prompt");
}

void Session::Impl::check_vocabulary(const int32_t* ids, size_t n) const {
    const int n_vocab = model.internals().spec().n_vocab;
    for (size_t i = 0; i < n; ++i)
        if (ids[i] < 0 || ids[i] >= n_vocab)
            throw std::invalid_argument("token id " + std::to_string(ids[i]) + " is outside the vocabulary (0.." +
                                        std::to_string(n_vocab - 1) + ")");
}

// A NaN or an infinity in the logits is never a valid result. The read-back that brought the
// rows to the host counted them on the GPU (Forward::logits_nonfinite), so no host scan is
// needed; the first bad row is reported with its position, token and a hint at the cause.
void Session::Impl::check_finite(const float* rows, size_t n_rows, size_t n_vocab, const int32_t* ids,
                                 int first_position) const {
    for (size_t r = 0; r < n_rows; ++r) {
        const model::Forward::NonFinite bad = forward->logits_nonfinite(int(r));
        if (bad.count == 0) continue;
        const float v = bad.first < n_vocab ? rows[r * n_vocab + bad.first] : NAN;
        throw NonFiniteLogits(
            std::to_string(bad.count) + " of " + std::to_string(n_vocab) + " logits are " +
            (std::isnan(v) ? "NaN" : "infinite") + " (first: token " + std::to_string(bad.first) +
            ") at position " + std::to_string(first_position + int(r)) + " (input token " + std::to_string(ids[r]) +
            "): the model's weights may be corrupted (`vkllm inspect --check FILE` scans them) or an activation "
            "overflowed (try f32 activations, or a different quantisation)");
    }
}

bool Session::Impl::run(const int32_t* ids, size_t n, bool all_logits, float* logits, const std::atomic<bool>* cancel,
                        bool with_probes) {
    const size_t n_vocab = size_t(model.internals().spec().n_vocab);
    const ProbeConfig none;
    const ProbeConfig& cfg = with_probes ? probes : none;
    const int chunk = forward->max_tokens(all_logits);
    // Where the previous call left the recurrent state is where a later truncate (an undo, an
    // edit, a rejected draft) will want to come back to: copy it before moving on, except
    // between the one-token steps of a generation.
    if (n > 0 && !tokens.empty() && !(n == 1 && last_run_single)) forward->snapshot_state();
    last_run_single = n == 1;
    for (size_t done = 0; done < n;) {
        if (cancel && cancel->load()) return false;
        const int t = int(std::min<size_t>(size_t(chunk), n - done));
        float* dst = all_logits ? logits + done * n_vocab : logits;
        // Earlier chunks' logits are overwritten by the last one unless all are wanted.
        // Results always: dispatch and barrier counts are kept without probes too.
        forward->step(ids + done, t, int(tokens.size()), all_logits, dst, cfg, with_probes ? &results : nullptr,
                      /*first_pass=*/done == 0);
        check_finite(dst, all_logits ? size_t(t) : 1, n_vocab, ids + done + (all_logits ? 0 : t - 1),
                     int(tokens.size()) + (all_logits ? 0 : t - 1));
        tokens.insert(tokens.end(), ids + done, ids + done + t);
        if (with_probes && cfg.expert_load)
            add_expert_load(n > 1 ? results.expert_load_prefill : results.expert_load_decode, results.expert_load_step);
        done += size_t(t);
    }
    return true;
}

int Session::Impl::truncate(int n) {
    if (n < 0 || size_t(n) > tokens.size())
        throw std::invalid_argument("Session::truncate(" + std::to_string(n) + "): the session holds " +
                                    std::to_string(tokens.size()) + " tokens");
    if (size_t(n) == tokens.size()) return 0;
    tokens.resize(size_t(n));
    forward->reset_edit_state();
    if (forward->truncate(n)) return 0;
    // The recurrent state held positions >= n, or a ring lost positions a later query reads
    // (their K/V depend on earlier windows that are gone too). A snapshot at p <= n brings the
    // state back to p, and only tokens p..n are evaluated again; its cost is one copy of the
    // state, always less than a pass over the p tokens before it. Mean residual edits keep
    // running sums over every position, which a snapshot does not hold: they rebuild from 0.
    const bool means = std::any_of(edits.begin(), edits.end(),
                                   [](const ResidualEdit& e) { return e.mode == ResidualEdit::Mode::Mean; });
    const int from = means ? 0 : forward->restore_state(n);
    std::vector<int32_t> kept(tokens.begin() + from, tokens.end());
    tokens.resize(size_t(from));
    std::vector<float> logits(size_t(model.internals().spec().n_vocab));
    run(kept.data(), kept.size(), false, logits.data(), nullptr, /*with_probes=*/false);
    return n - from;
}

void Session::Impl::publish_step() {
    std::lock_guard<std::mutex> lock(mutex);
    published.tokens = tokens;
    published.probes = results;
}

Session::Session(const Model& m, const SessionOptions& options) : impl_(std::make_unique<Impl>(m, options)) {}

Session::~Session() = default;

std::vector<float> Session::eval(const std::vector<int32_t>& tokens, bool all_logits) {
    Impl& s = *impl_;
    if (tokens.empty()) throw std::invalid_argument("Session::eval needs at least one token");
    s.check_fits(tokens.size());
    s.check_vocabulary(tokens.data(), tokens.size());
    std::vector<float> out(size_t(all_logits ? tokens.size() : 1) * size_t(s.model.internals().spec().n_vocab));
    s.run(tokens.data(), tokens.size(), all_logits, out.data(), nullptr);
    s.publish_step();
    return out;
}

void Session::cancel() { impl_->cancel_requested.store(true); }

void Session::truncate(int n) {
    impl_->truncate(n);
    impl_->publish_step();
}

void Session::reset() {
    truncate(0);
    impl_->results.expert_load_prefill.clear();
    impl_->results.expert_load_decode.clear();
}

const Model& Session::model() const { return impl_->model; }
int Session::n_past() const { return int(impl_->tokens.size()); }
int Session::n_ctx() const { return impl_->forward->n_ctx(); }
int Session::n_batch() const { return impl_->forward->n_batch(); }
const std::vector<int32_t>& Session::tokens() const { return impl_->tokens; }

void Session::set_probes(const ProbeConfig& probes) { impl_->probes = probes; }
const ProbeConfig& Session::probe_config() const { return impl_->probes; }
const ProbeResults& Session::probes() const { return impl_->results; }

SessionSnapshot Session::snapshot() const {
    std::lock_guard<std::mutex> lock(impl_->mutex);
    return impl_->published;
}

void Session::set_residual_edits(const std::vector<ResidualEdit>& edits) {
    const auto& spec = impl_->model.internals().spec();
    for (const ResidualEdit& e : edits) {
        if (e.layer < -1 || e.layer >= spec.n_layer)
            throw std::invalid_argument("residual edit: layer " + std::to_string(e.layer) + " is outside -1.." +
                                        std::to_string(spec.n_layer - 1) + " (-1: after the embeddings)");
        if (e.channel < 0 || e.channel >= spec.n_embd)
            throw std::invalid_argument("residual edit: channel " + std::to_string(e.channel) + " is outside 0.." +
                                        std::to_string(spec.n_embd - 1));
    }
    impl_->forward->set_residual_edits(edits);
    impl_->forward->set_residual_edits(edits);
    impl_->edits = edits;
}
const std::vector<ResidualEdit>& Session::residual_edits() const { return impl_->edits; }

uint64_t Session::kv_cache_bytes() const { return impl_->forward->kv_bytes(); }
uint64_t Session::probe_bytes() const { return impl_->forward->probe_bytes(); }
uint64_t Session::scratch_bytes() const { return impl_->forward->scratch_bytes(); }
uint64_t Session::recurrent_state_bytes() const { return impl_->forward->recurrent_bytes(); }
uint64_t Session::state_snapshot_bytes() const { return impl_->forward->snapshot_bytes(); }

Session::KvCacheUsage Session::kv_cache_usage() const {
    auto u = impl_->forward->kv_usage();
    return {u.global_layers, u.local_layers, u.global_bytes, u.local_bytes, impl_->forward->cache_type()};
}

const char* kv_cache_type_name(KvCacheType t) {
    switch (t) {
        case KvCacheType::F32: return "f32";
        case KvCacheType::F16: return "f16";
        case KvCacheType::Q8_0: return "q8_0";
        default: return "auto";
    }
}

std::optional<KvCacheType> parse_kv_cache_type(const std::string& name) {
    for (KvCacheType t : {KvCacheType::Auto, KvCacheType::F32, KvCacheType::F16, KvCacheType::Q8_0})
        if (name == kv_cache_type_name(t)) return t;
    return std::nullopt;
}

}  // namespace vkllm
