#include "random_model/rope_scaling.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <numbers>
#include <sstream>
#include <string>

#include "random_model/config_validation.h"

namespace vkllm::random_model {
namespace {

float parse_float(const std::string& text, const std::string& what) {
    try {
        size_t used = 0;
        float v = std::stof(text, &used);
        if (used == text.size() && std::isfinite(v)) return v;
    } catch (const std::exception&) {
    }
    throw ConfigError("--rope-scaling: " + what + " '" + text + "' is not a number");
}

int parse_int(const std::string& text, const std::string& what) {
    try {
        size_t used = 0;
        int v = std::stoi(text, &used);
        if (used == text.size()) return v;
    } catch (const std::exception&) {
    }
    throw ConfigError("--rope-scaling: " + what + " '" + text + "' is not an integer");
}

}  // namespace

std::vector<float> llama3_rope_freq_factors(const RopeScalingConfig& r, float freq_base, uint64_t rope_dims) {
    const double old_ctx = r.original_context;
    const double low_wavelen = old_ctx / r.low_freq_factor;
    const double high_wavelen = old_ctx / r.high_freq_factor;
    std::vector<float> factors;
    for (uint64_t i = 0; i < rope_dims; i += 2) {
        const double freq = 1.0 / std::pow(double(freq_base), double(i) / double(rope_dims));
        const double wavelen = 2.0 * std::numbers::pi / freq;
        if (wavelen < high_wavelen) {
            factors.push_back(1.0f);
        } else if (wavelen > low_wavelen) {
            factors.push_back(r.factor);
        } else {
            const double smooth = (old_ctx / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
            factors.push_back(float(1.0 / ((1.0 - smooth) / r.factor + smooth)));
        }
    }
    return factors;
}

std::vector<float> longrope_factors(bool long_factors, int n_ctx, int original_context, uint64_t n) {
    const double top = std::max(2.0, double(n_ctx) / double(original_context));
    std::vector<float> factors;
    for (uint64_t i = 0; i < n; ++i) {
        const double t = n > 1 ? double(i) / double(n - 1) : 0.0;
        factors.push_back(float(long_factors ? std::pow(top, t) : 1.0 + 0.1 * t));
    }
    return factors;
}

RopeScalingConfig parse_rope_scaling(const std::string& text) {
    std::vector<std::string> parts;
    std::stringstream in(text);
    for (std::string part; std::getline(in, part, ':');) parts.push_back(part);
    RopeScalingConfig r;
    const std::string kind = parts.empty() ? "" : parts[0];
    auto expect_parts = [&](size_t n, const char* form) {
        require(parts.size() == n, "--rope-scaling '" + text + "': expected " + form);
    };
    if (kind == "none") {
        expect_parts(1, "none");
    } else if (kind == "linear") {
        expect_parts(2, "linear:FACTOR");
        r.kind = RopeScalingConfig::Kind::Linear;
        r.factor = parse_float(parts[1], "factor");
    } else if (kind == "yarn") {
        expect_parts(3, "yarn:FACTOR:ORIGINAL_CONTEXT");
        r.kind = RopeScalingConfig::Kind::Yarn;
        r.factor = parse_float(parts[1], "factor");
        r.original_context = parse_int(parts[2], "original context");
    } else if (kind == "llama3") {
        expect_parts(5, "llama3:FACTOR:LOW_FREQ_FACTOR:HIGH_FREQ_FACTOR:ORIGINAL_CONTEXT");
        r.kind = RopeScalingConfig::Kind::Llama3;
        r.factor = parse_float(parts[1], "factor");
        r.low_freq_factor = parse_float(parts[2], "low frequency factor");
        r.high_freq_factor = parse_float(parts[3], "high frequency factor");
        r.original_context = parse_int(parts[4], "original context");
    } else if (kind == "longrope") {
        expect_parts(2, "longrope:ORIGINAL_CONTEXT");
        r.kind = RopeScalingConfig::Kind::LongRope;
        r.original_context = parse_int(parts[1], "original context");
    } else {
        throw ConfigError("--rope-scaling '" + text + "': unknown kind (linear, yarn, llama3, longrope or none)");
    }
    return r;
}

float longrope_attn_factor(int n_ctx, int original_context) {
    const double scale = double(n_ctx) / double(original_context);
    if (scale <= 1.0) return 1.0f;
    return float(std::sqrt(1.0 + std::log(scale) / std::log(double(original_context))));
}

}  // namespace vkllm::random_model
