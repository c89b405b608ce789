// Reference mixture-of-experts router: gating, optional group-limited selection (DeepSeek V3)
// and top-k, as llama.cpp's build_moe_ffn does it (see ref_ops.h).
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/softmax.h"
#include "core/top_n.h"
#include "cpu/ref_ops.h"

namespace vkllm::cpu {

namespace {

void check_router(const RouterParams& p) {
    if (p.n_expert <= 0) throw ShapeError("route: n_expert must be positive");
    if (p.top_k <= 0 || p.top_k > p.n_expert)
        throw ShapeError("route: top_k " + std::to_string(p.top_k) + " must be in [1, n_expert = " +
                         std::to_string(p.n_expert) + "]");
    if (p.n_group > 1) {
        if (p.n_expert % p.n_group != 0)
            throw ShapeError("route: n_expert " + std::to_string(p.n_expert) + " is not a multiple of n_group " +
                             std::to_string(p.n_group));
        if (p.topk_group <= 0 || p.topk_group > p.n_group)
            throw ShapeError("route: topk_group must be in [1, n_group]");
        if (p.top_k > p.topk_group * (p.n_expert / p.n_group))
            throw ShapeError("route: top_k exceeds the experts in the kept groups");
    }
}

}  // namespace

void route(const float* logits, int64_t n_tokens, const RouterParams& p, int32_t* experts, float* weights) {
    check_router(p);
    const int n = p.n_expert;
    const double neg_inf = -std::numeric_limits<double>::infinity();
    std::vector<double> probs(n), score(n);  // [n_expert] of one token

    for (int64_t t = 0; t < n_tokens; ++t) {
        const float* lt = logits + t * n;
        if (p.softmax_after_topk) {
            for (int e = 0; e < n; ++e) probs[e] = lt[e];
        } else if (p.gating == RouterParams::Sigmoid) {
            for (int e = 0; e < n; ++e) probs[e] = 1.0 / (1.0 + std::exp(-static_cast<double>(lt[e])));
        } else {
            for (int e = 0; e < n; ++e) probs[e] = lt[e];
            softmax_in_place(probs.data(), probs.size());
        }
        for (int e = 0; e < n; ++e) score[e] = probs[e] + (p.selection_bias ? p.selection_bias[e] : 0.0f);

        if (p.n_group > 1) {
            // Group score: the sum of the group's two best expert scores (its only expert's
            // score when a group has one expert).
            const int per_group = n / p.n_group;
            std::vector<double> group_score(p.n_group);
            for (int g = 0; g < p.n_group; ++g) {
                std::vector<double> members(score.begin() + g * per_group, score.begin() + (g + 1) * per_group);
                std::sort(members.begin(), members.end(), std::greater<>());
                group_score[g] = members[0] + (per_group > 1 ? members[1] : 0.0);
            }
            const std::vector<int32_t> group_order = top_n(group_score.data(), group_score.size(), size_t(p.topk_group));
            std::vector<bool> kept(p.n_group, false);
            for (int r = 0; r < p.topk_group; ++r) kept[group_order[r]] = true;
            for (int e = 0; e < n; ++e)
                if (!kept[e / per_group]) score[e] = neg_inf;
        }

        const std::vector<int32_t> order = top_n(score.data(), score.size(), size_t(p.top_k));
        int32_t* et = experts + t * p.top_k;
        float* wt = weights + t * p.top_k;
        std::vector<double> w(p.top_k);
        for (int r = 0; r < p.top_k; ++r) {
            et[r] = order[r];
            w[r] = probs[order[r]];
        }
        if (p.softmax_after_topk) softmax_in_place(w.data(), w.size());
        if (p.norm_topk) {
            const double sum = std::max(std::accumulate(w.begin(), w.end(), 0.0), 6.103515625e-5);
            for (double& x : w) x /= sum;
        }
        const double wscale = p.weights_scale == 0.0f ? 1.0 : p.weights_scale;
        for (int r = 0; r < p.top_k; ++r) wt[r] = static_cast<float>(w[r] * wscale);
    }
}

}  // namespace vkllm::cpu
