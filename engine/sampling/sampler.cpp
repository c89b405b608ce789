// Token sampler: logit bias -> penalties -> top-k -> top-p -> min-p -> temperature -> draw (see sampler.h).
#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <unordered_map>

#include "core/softmax.h"

namespace vkllm::sampling {

namespace {

// Higher logit first; equal logits by lower token id.
bool better(const TokenProb& a, const TokenProb& b) {
    return a.logit != b.logit ? a.logit > b.logit : a.token < b.token;
}

// prob = softmax(logit / temperature) over `c` (sorted, best first), in double.
void softmax_probs(std::vector<TokenProb>& c, double temperature) {
    const double max_logit = c.front().logit;
    std::vector<double> z(c.size());
    for (size_t i = 0; i < c.size(); ++i) z[i] = (c[i].logit - max_logit) / temperature;
    softmax_in_place(z.data(), z.size());
    for (size_t i = 0; i < c.size(); ++i) c[i].prob = static_cast<float>(z[i]);
}

// Fills a SamplerFunnel: after each stage, how many candidates are left and the mass they hold
// under the model's own distribution (softmax of the raw logits).
class FunnelRecorder {
public:
    FunnelRecorder(SamplerFunnel* funnel, const float* logits, int32_t n_vocab) : funnel_(funnel) {
        if (!funnel_) return;
        funnel_->stages.clear();
        const std::vector<double> lp = log_softmax(logits, n_vocab);
        p_.resize(lp.size());
        for (size_t i = 0; i < lp.size(); ++i) p_[i] = std::exp(lp[i]);
    }
    void stage(const char* name, const std::vector<TokenProb>& candidates) {
        if (!funnel_) return;
        double mass = 0.0;
        for (const TokenProb& c : candidates) mass += p_[size_t(c.token)];
        funnel_->stages.push_back({name, int(candidates.size()), float(mass)});
    }
    // The chosen token: its rank under the raw logits and its final sampling probability.
    void chosen(int32_t token, const float* logits, int32_t n_vocab, float p_final) {
        if (!funnel_) return;
        int rank = 0;
        const float l = logits[token];
        for (int32_t t = 0; t < n_vocab; ++t)
            if (logits[t] > l || (logits[t] == l && t < token)) ++rank;  // NaN compares false
        funnel_->chosen_rank = rank;
        funnel_->chosen_p = p_final;
    }

private:
    SamplerFunnel* funnel_;
    std::vector<double> p_;  // [n_vocab] the model's probabilities
};

}  // namespace

std::vector<double> log_softmax(const float* logits, int32_t n_vocab) {
    if (n_vocab <= 0) throw SamplingError("log_softmax: n_vocab must be positive, got " + std::to_string(n_vocab));
    constexpr double kNegInf = -std::numeric_limits<double>::infinity();
    std::vector<double> out(size_t(n_vocab), kNegInf);
    double max_logit = kNegInf;
    for (int32_t t = 0; t < n_vocab; ++t)
        if (!std::isnan(logits[t])) max_logit = std::max(max_logit, double(logits[t]));
    if (max_logit == kNegInf) throw SamplingError("every logit is NaN or -inf");
    if (std::isinf(max_logit)) {  // +inf: those tokens alone, equally likely
        int n_inf = 0;
        for (int32_t t = 0; t < n_vocab; ++t) n_inf += std::isinf(logits[t]) && logits[t] > 0;
        for (int32_t t = 0; t < n_vocab; ++t)
            if (std::isinf(logits[t]) && logits[t] > 0) out[size_t(t)] = -std::log(double(n_inf));
        return out;
    }
    double sum = 0.0;
    for (int32_t t = 0; t < n_vocab; ++t)
        if (!std::isnan(logits[t])) sum += std::exp(double(logits[t]) - max_logit);
    const double log_sum = std::log(sum);
    for (int32_t t = 0; t < n_vocab; ++t)
        if (!std::isnan(logits[t])) out[size_t(t)] = double(logits[t]) - max_logit - log_sum;
    return out;
}

Sampler::Sampler(SamplerParams params) : params_(params), rng_(params.seed) { validate(params_); }

void Sampler::accept(int32_t token) {
    if (params_.repeat_last_n == 0) return;
    history_.push_back(token);
    if (params_.repeat_last_n > 0 && history_.size() > static_cast<size_t>(params_.repeat_last_n))
        history_.pop_front();
}

void Sampler::reset() {
    history_.clear();
    candidates_.clear();
    rng_ = Rng(params_.seed);
}

void Sampler::apply_bias(std::vector<float>& logits) const {
    for (const auto& [token, bias] : params_.logit_bias) {
        if (token >= int32_t(logits.size()))
            throw SamplingError("logit_bias names token id " + std::to_string(token) + ", outside the vocabulary of " +
                                std::to_string(logits.size()) + " tokens");
        // -100 bans (OpenAI: "should result in a ban"); a plain sum would leave the token
        // possible wherever every other logit is lower still.
        logits[size_t(token)] = bias <= -100.0f ? -std::numeric_limits<float>::infinity() : logits[size_t(token)] + bias;
    }
}

void Sampler::apply_penalties(std::vector<float>& logits) const {
    if (history_.empty()) return;
    if (params_.repeat_penalty == 1.0f && params_.presence_penalty == 0.0f && params_.frequency_penalty == 0.0f)
        return;
    std::unordered_map<int32_t, int> counts;
    for (int32_t t : history_) ++counts[t];
    for (const auto& [token, count] : counts) {
        if (token < 0 || token >= static_cast<int32_t>(logits.size())) continue;
        float& l = logits[token];
        l = l > 0.0f ? l / params_.repeat_penalty : l * params_.repeat_penalty;
        l -= count * params_.frequency_penalty + params_.presence_penalty;
    }
}

int32_t Sampler::sample(const float* logits, int32_t n_vocab, SamplerFunnel* funnel) {
    return sample_among(logits, n_vocab, nullptr, funnel);
}

int32_t Sampler::sample(const float* logits, int32_t n_vocab, const std::function<bool(int32_t)>& allowed,
                        SamplerFunnel* funnel) {
    return sample_among(logits, n_vocab, &allowed, funnel);
}

int32_t Sampler::sample_among(const float* logits_in, int32_t n_vocab, const std::function<bool(int32_t)>* allowed,
                              SamplerFunnel* funnel) {
    if (n_vocab <= 0) throw SamplingError("sample: n_vocab must be positive, got " + std::to_string(n_vocab));
    std::vector<float> logits(logits_in, logits_in + n_vocab);  // [n_vocab] after penalties
    auto usable = [](float l) { return std::isfinite(l) || l > 0.0f; };  // keep +inf, drop NaN and -inf
    FunnelRecorder record(funnel, logits_in, n_vocab);
    if (funnel) {
        candidates_.clear();
        for (int32_t t = 0; t < n_vocab; ++t)
            if (usable(logits[t])) candidates_.push_back({t, logits[t], 0.0f});
        record.stage("vocabulary", candidates_);
    }
    apply_bias(logits);
    apply_penalties(logits);

    candidates_.clear();
    for (int32_t t = 0; t < n_vocab; ++t)
        if (usable(logits[t])) candidates_.push_back({t, logits[t], 0.0f});
    if (candidates_.empty()) throw SamplingError("sample: every logit is NaN or -inf");
    record.stage("penalties", candidates_);

    if (allowed) {
        // Best first; the allowed ones kept, up to one (greedy) or top_k of them. The order is
        // made a window at a time (64 candidates, then 4x as many), so a constraint that agrees
        // with the model costs a partial sort of the vocabulary, not a full one.
        const size_t want = params_.temperature <= 0.0f ? 1
                            : params_.top_k > 0        ? size_t(params_.top_k)
                                                       : candidates_.size();
        const size_t n = candidates_.size();
        size_t kept = 0, sorted = 0;
        while (kept < want && sorted < n) {
            const size_t end = std::min(n, std::max<size_t>(64, sorted * 4));
            std::partial_sort(candidates_.begin() + long(sorted), candidates_.begin() + long(end), candidates_.end(), better);
            for (size_t i = sorted; i < end && kept < want; ++i)
                if ((*allowed)(candidates_[i].token)) candidates_[kept++] = candidates_[i];
            sorted = end;
        }
        candidates_.resize(kept);
        if (candidates_.empty()) throw SamplingError("sample: the constraint allows no token");
    }

    if (params_.temperature <= 0.0f) {
        record.stage("top_k", candidates_);
        record.stage("top_p", candidates_);
        record.stage("min_p", candidates_);
        const TokenProb best = *std::min_element(candidates_.begin(), candidates_.end(), better);
        candidates_.assign(1, {best.token, best.logit, 1.0f});
        record.stage("temperature", candidates_);
        record.chosen(best.token, logits_in, n_vocab, 1.0f);
        return best.token;
    }

    // top-k (and the sort every later step relies on)
    const size_t k = params_.top_k > 0 ? std::min<size_t>(params_.top_k, candidates_.size()) : candidates_.size();
    std::partial_sort(candidates_.begin(), candidates_.begin() + k, candidates_.end(), better);
    candidates_.resize(k);

    // +inf logits: those tokens alone are possible, equally likely.
    if (std::isinf(candidates_.front().logit)) {
        size_t n_inf = 0;
        while (n_inf < candidates_.size() && std::isinf(candidates_[n_inf].logit)) ++n_inf;
        candidates_.resize(n_inf);
        for (auto& c : candidates_) c.logit = 0.0f;
    }
    record.stage("top_k", candidates_);

    // top-p and min-p on the untempered distribution
    softmax_probs(candidates_, 1.0);
    if (params_.top_p < 1.0f) {
        double cumulative = 0.0;
        size_t keep = 0;
        while (keep < candidates_.size()) {
            cumulative += candidates_[keep++].prob;
            if (cumulative >= params_.top_p) break;
        }
        candidates_.resize(std::max<size_t>(keep, 1));
    }
    record.stage("top_p", candidates_);
    if (params_.min_p > 0.0f) {
        const double threshold = static_cast<double>(params_.min_p) * candidates_.front().prob;
        size_t keep = 1;
        while (keep < candidates_.size() && candidates_[keep].prob >= threshold) ++keep;
        candidates_.resize(keep);
    }
    record.stage("min_p", candidates_);

    softmax_probs(candidates_, params_.temperature);
    record.stage("temperature", candidates_);
    double total = 0.0;
    for (const auto& c : candidates_) total += c.prob;
    const double target = rng_.uniform() * total;  // in [0, total)
    double cumulative = 0.0;
    const TokenProb* chosen = &candidates_.back();  // only through rounding when the loop ends
    for (const auto& c : candidates_) {
        cumulative += c.prob;
        if (target < cumulative) {
            chosen = &c;
            break;
        }
    }
    record.chosen(chosen->token, logits_in, n_vocab, chosen->prob);
    return chosen->token;
}

}  // namespace vkllm::sampling
