// vkllm::BatchSession: n slots over one Forward with a cache per slot (Forward::step_batch).
#include "vkllm/batch.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "model/forward.h"
#include "model/model_internal.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {

std::string batch_unsupported(const Model& model) {
    return model::Forward::batch_unsupported(model.internals().spec());
}

struct BatchSession::Impl {
    const Model& model;
    std::unique_ptr<model::Forward> forward;
    std::vector<std::vector<int32_t>> tokens;  // per slot, in cache order

    void check_slot(int slot, const char* what) const {
        if (slot < 0 || slot >= int(tokens.size()))
            throw std::invalid_argument(std::string(what) + ": slot " + std::to_string(slot) + " is outside 0.." +
                                        std::to_string(int(tokens.size()) - 1));
    }

    // Throws NonFiniteLogits for the first of the pass's rows that holds a NaN or an infinity.
    void check_finite(const std::vector<model::Forward::SeqSegment>& segs, const std::vector<int32_t>& ids) const {
        int last = -1;
        for (size_t r = 0; r < segs.size(); ++r) {
            last += segs[r].n_tokens;
            const model::Forward::NonFinite bad = forward->logits_nonfinite(int(r));
            if (bad.count == 0) continue;
            throw NonFiniteLogits(std::to_string(bad.count) + " logits are NaN or infinite (first: token " +
                                  std::to_string(bad.first) + ") in slot " + std::to_string(segs[r].seq) +
                                  " at position " + std::to_string(segs[r].pos0 + segs[r].n_tokens - 1) +
                                  " (input token " + std::to_string(ids[size_t(last)]) +
                                  "): the model's weights may be corrupted or an activation overflowed");
        }
    }
};

BatchSession::BatchSession(const Model& model, const BatchOptions& o) {
    if (o.n_slots < 1) throw std::invalid_argument("a batch needs at least one slot, got " + std::to_string(o.n_slots));
    if (o.n_batch < o.n_slots)
        throw std::invalid_argument("n_batch (" + std::to_string(o.n_batch) + ") must be at least n_slots (" +
                                    std::to_string(o.n_slots) + "): a step decodes a token of every slot at once");
    const std::string why = batch_unsupported(model);
    if (!why.empty()) throw std::invalid_argument("batched decoding: " + why);
    const auto& in = model.internals();
    const int n_ctx = o.n_ctx > 0 ? o.n_ctx : std::min(in.spec().n_ctx_train, 4096);
    if (n_ctx <= 0) throw std::invalid_argument("context size must be positive");
    impl_ = std::make_unique<Impl>(Impl{model, nullptr, {}});
    // Forward's n_seq must be at least 2 for batched passes; one slot keeps an unused second
    // cache rather than a second code path.
    impl_->forward = std::make_unique<model::Forward>(in.context(), in.spec(), in.weights(), n_ctx, o.n_batch,
                                                      o.llama_cpp_rounding, o.kv_cache, std::max(o.n_slots, 2));
    if (impl_->forward->n_batch() < o.n_slots)
        throw std::invalid_argument("the device holds passes of " + std::to_string(impl_->forward->n_batch()) +
                                    " tokens of this model, fewer than the " + std::to_string(o.n_slots) + " slots");
    impl_->tokens.resize(size_t(o.n_slots));
}

BatchSession::~BatchSession() = default;

std::vector<std::vector<float>> BatchSession::step(const std::vector<BatchInput>& inputs) {
    Impl& s = *impl_;
    const int n_vocab = s.model.n_vocab(), n_ctx = s.forward->n_ctx();
    std::vector<bool> seen(s.tokens.size(), false);
    for (const BatchInput& in : inputs) {
        s.check_slot(in.slot, "BatchSession::step");
        if (seen[size_t(in.slot)])
            throw std::invalid_argument("BatchSession::step: slot " + std::to_string(in.slot) + " is given twice");
        seen[size_t(in.slot)] = true;
        if (in.tokens.empty())
            throw std::invalid_argument("BatchSession::step: slot " + std::to_string(in.slot) + " is given no tokens");
        for (int32_t id : in.tokens)
            if (id < 0 || id >= n_vocab)
                throw std::invalid_argument("token id " + std::to_string(id) + " is outside the vocabulary (0.." +
                                            std::to_string(n_vocab - 1) + ")");
        const size_t held = s.tokens[size_t(in.slot)].size();
        if (held + in.tokens.size() > size_t(n_ctx))
            throw ContextOverflow(std::to_string(in.tokens.size()) + " tokens after " + std::to_string(held) +
                                  " do not fit the context of " + std::to_string(n_ctx) + " tokens of slot " +
                                  std::to_string(in.slot));
    }

    // Passes of at most n_batch tokens: each input's tokens in order, as many of each slot's
    // remaining tokens as fit, earlier inputs first.
    std::vector<std::vector<float>> out(inputs.size());
    std::vector<size_t> done(inputs.size(), 0);
    const size_t n_batch = size_t(s.forward->n_batch());
    std::vector<float> logits;
    for (;;) {
        std::vector<model::Forward::SeqSegment> segs;
        std::vector<size_t> which;
        std::vector<int32_t> ids;
        for (size_t i = 0; i < inputs.size() && ids.size() < n_batch; ++i) {
            const std::vector<int32_t>& t = inputs[i].tokens;
            if (done[i] == t.size()) continue;
            const size_t n = std::min(t.size() - done[i], n_batch - ids.size());
            const int slot = inputs[i].slot;
            segs.push_back({slot, int(s.tokens[size_t(slot)].size()), int(n)});
            which.push_back(i);
            ids.insert(ids.end(), t.begin() + std::ptrdiff_t(done[i]), t.begin() + std::ptrdiff_t(done[i] + n));
        }
        if (segs.empty()) break;
        logits.resize(segs.size() * size_t(n_vocab));
        s.forward->step_batch(ids.data(), segs, logits.data());
        s.check_finite(segs, ids);
        for (size_t k = 0; k < segs.size(); ++k) {
            const size_t i = which[k];
            const std::vector<int32_t>& t = inputs[i].tokens;
            auto& held = s.tokens[size_t(inputs[i].slot)];
            held.insert(held.end(), t.begin() + std::ptrdiff_t(done[i]),
                        t.begin() + std::ptrdiff_t(done[i] + size_t(segs[k].n_tokens)));
            done[i] += size_t(segs[k].n_tokens);
            if (done[i] == t.size())
                out[i].assign(logits.begin() + std::ptrdiff_t(k * size_t(n_vocab)),
                              logits.begin() + std::ptrdiff_t((k + 1) * size_t(n_vocab)));
        }
    }
    return out;
}

int BatchSession::truncate(int slot, int n) {
    Impl& s = *impl_;
    s.check_slot(slot, "BatchSession::truncate");
    std::vector<int32_t>& held = s.tokens[size_t(slot)];
    if (n < 0 || size_t(n) > held.size())
        throw std::invalid_argument("BatchSession::truncate(" + std::to_string(slot) + ", " + std::to_string(n) +
                                    "): the slot holds " + std::to_string(held.size()) + " tokens");
    if (size_t(n) == held.size()) return 0;
    held.resize(size_t(n));
    if (s.forward->truncate_seq(slot, n)) return 0;
    // A sliding-window ring lost positions a later query reads (Session::truncate says why):
    // the kept tokens are evaluated again from position 0.
    std::vector<int32_t> kept;
    kept.swap(held);
    s.forward->truncate_seq(slot, 0);
    step({BatchInput{slot, kept}});
    return n;
}

size_t BatchSession::common_prefix(int slot, const std::vector<int32_t>& tokens) const {
    impl_->check_slot(slot, "BatchSession::common_prefix");
    const std::vector<int32_t>& held = impl_->tokens[size_t(slot)];
    return size_t(std::mismatch(held.begin(), held.end(), tokens.begin(), tokens.end()).first - held.begin());
}

const std::vector<int32_t>& BatchSession::tokens(int slot) const {
    impl_->check_slot(slot, "BatchSession::tokens");
    return impl_->tokens[size_t(slot)];
}

int BatchSession::n_slots() const { return int(impl_->tokens.size()); }
int BatchSession::n_ctx() const { return impl_->forward->n_ctx(); }
int BatchSession::n_batch() const { return impl_->forward->n_batch(); }
const Model& BatchSession::model() const { return impl_->model; }

uint64_t BatchSession::kv_bytes() const {
    uint64_t n = 0;
    for (int i = 0; i < n_slots(); ++i) n += impl_->forward->seq_cache(i).bytes();
    return n;
}

}  // namespace vkllm
