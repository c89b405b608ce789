#include "text_effect.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

namespace vkllm::studio {
namespace {

// log softmax of one row, in double.
std::vector<double> log_softmax(const float* row, int n) {
    double mx = row[0];
    for (int i = 1; i < n; ++i) mx = std::max(mx, double(row[i]));
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += std::exp(double(row[i]) - mx);
    const double log_z = mx + std::log(sum);
    std::vector<double> out(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) out[size_t(i)] = double(row[i]) - log_z;
    return out;
}

}  // namespace

TextEffect text_effect(const std::vector<float>& before, const std::vector<float>& after,
                       const std::vector<int32_t>& tokens, int n_vocab, int n_moved) {
    const size_t T = tokens.size();
    if (n_vocab <= 0 || before.size() != T * size_t(n_vocab) || after.size() != before.size())
        throw std::invalid_argument("text_effect: logits of " + std::to_string(before.size()) + " and " +
                                    std::to_string(after.size()) + " values for " + std::to_string(T) +
                                    " tokens of " + std::to_string(n_vocab));
    TextEffect e;
    e.positions = int(T);
    double nll_before = 0, nll_after = 0, kl_sum = 0;
    for (size_t i = 0; i < T; ++i) {
        const std::vector<double> lb = log_softmax(&before[i * size_t(n_vocab)], n_vocab);
        const std::vector<double> la = log_softmax(&after[i * size_t(n_vocab)], n_vocab);
        double kl = 0;
        for (int v = 0; v < n_vocab; ++v) kl += std::exp(lb[size_t(v)]) * (lb[size_t(v)] - la[size_t(v)]);
        kl = std::max(kl, 0.0);  // rounding can leave a tiny negative
        e.kl.push_back(float(kl));
        kl_sum += kl;
        e.max_kl = std::max(e.max_kl, float(kl));
        if (i + 1 < T) {
            const int32_t next = tokens[i + 1];
            if (next < 0 || next >= n_vocab) throw std::invalid_argument("text_effect: token id out of range");
            nll_before -= lb[size_t(next)];
            nll_after -= la[size_t(next)];
        }
    }
    e.mean_kl = T > 0 ? float(kl_sum / double(T)) : 0.0f;
    if (T > 1) {
        e.perplexity_before = std::exp(nll_before / double(T - 1));
        e.perplexity_after = std::exp(nll_after / double(T - 1));
    }
    for (size_t i = 0; i < T; ++i) e.moved.push_back({int(i), e.kl[i]});
    std::stable_sort(e.moved.begin(), e.moved.end(), [](const PositionShift& a, const PositionShift& b) { return a.kl > b.kl; });
    e.moved.resize(std::min(e.moved.size(), size_t(std::max(n_moved, 0))));
    std::erase_if(e.moved, [](const PositionShift& s) { return s.kl < TextEffect::kNoEffect; });
    return e;
}

}  // namespace vkllm::studio
