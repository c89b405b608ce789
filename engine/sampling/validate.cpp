// vkllm::validate(SamplerParams): the ranges the sampler's rules make sense for.
#include <cmath>
#include <stdexcept>
#include <string>

#include "vkllm/generate.h"

namespace vkllm {

namespace {

[[noreturn]] void bad(const std::string& name, float value, const char* rule) {
    throw std::invalid_argument("sampler parameter " + name + " = " + std::to_string(value) + " is invalid: " + rule);
}

}  // namespace

void validate(const SamplerParams& p) {
    if (std::isnan(p.temperature) || std::isinf(p.temperature))
        bad("temperature", p.temperature, "it must be a finite number (<= 0: greedy)");
    if (!(p.top_p >= 0.0f && p.top_p <= 1.0f)) bad("top_p", p.top_p, "it must be in [0, 1] (1: off)");
    if (!(p.min_p >= 0.0f && p.min_p <= 1.0f)) bad("min_p", p.min_p, "it must be in [0, 1] (0: off)");
    if (!(p.repeat_penalty > 0.0f) || std::isinf(p.repeat_penalty))
        bad("repeat_penalty", p.repeat_penalty, "it must be a finite number > 0 (1: off)");
    if (!std::isfinite(p.presence_penalty)) bad("presence_penalty", p.presence_penalty, "it must be a finite number");
    if (!std::isfinite(p.frequency_penalty)) bad("frequency_penalty", p.frequency_penalty, "it must be a finite number");
    for (const auto& [id, bias] : p.logit_bias) {
        if (id < 0) throw std::invalid_argument("sampler parameter logit_bias names token id " + std::to_string(id) +
                                                ", which is negative");
        if (!(bias >= -100.0f && bias <= 100.0f))
            bad("logit_bias[" + std::to_string(id) + "]", bias, "it must be in [-100, 100] (-100: banned)");
    }
}

void validate(const SamplerParams& p, int32_t n_vocab) {
    validate(p);
    if (!p.logit_bias.empty() && p.logit_bias.rbegin()->first >= n_vocab)
        throw std::invalid_argument("sampler parameter logit_bias names token id " +
                                    std::to_string(p.logit_bias.rbegin()->first) + ", outside the vocabulary of " +
                                    std::to_string(n_vocab) + " tokens");
}

}  // namespace vkllm
