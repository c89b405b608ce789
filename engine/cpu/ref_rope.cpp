// Reference rotary position embedding with linear, YaRN and Llama 3 frequency scaling, with
// the same formulas as ggml's rope (see ref_ops.h for the math).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "cpu/ref_ops.h"

namespace vkllm::cpu {

namespace {

constexpr double kPi = 3.14159265358979323846;

// The pair index at which a wave of the given number of rotations over orig_ctx sits
// (YaRN paper eq. 17, solved for the dimension).
float yarn_corr_dim(int n_dims, int orig_ctx, float n_rot, float base) {
    return static_cast<float>(n_dims * std::log(orig_ctx / (n_rot * 2.0 * kPi)) / (2.0 * std::log(base)));
}

// 1 at and below pair `lo`, 0 at and above `hi`, linear between: how much of the
// extrapolated (unscaled) frequency a pair keeps.
double yarn_ramp(float lo, float hi, int pair) {
    const double y = (pair - lo) / std::max(0.001, static_cast<double>(hi - lo));
    return 1.0 - std::clamp(y, 0.0, 1.0);
}

void check_rope(int n_heads, int head_dim, const RopeParams& p) {
    if (n_heads <= 0 || head_dim <= 0)
        throw ShapeError("rope: n_heads and head_dim must be positive");
    if (p.n_dims <= 0 || p.n_dims % 2 != 0 || p.n_dims > head_dim)
        throw ShapeError("rope: n_dims " + std::to_string(p.n_dims) + " must be even, positive and <= head_dim " +
                         std::to_string(head_dim));
    if (!(p.freq_base > 0.0f)) throw ShapeError("rope: freq_base must be > 0");
    if ((p.scaling == RopeParams::Linear || p.scaling == RopeParams::Yarn) && !(p.freq_scale > 0.0f))
        throw ShapeError("rope: freq_scale must be > 0");
    if ((p.scaling == RopeParams::Yarn || (p.scaling == RopeParams::Llama3 && !p.freq_factors)) && p.orig_ctx <= 0)
        throw ShapeError("rope: orig_ctx must be set (> 0) for YaRN and Llama 3 scaling");
}

}  // namespace

void yarn_corr_dims(int n_dims, int orig_ctx, float freq_base, float beta_fast, float beta_slow, float dims[2]) {
    const float start = std::floor(yarn_corr_dim(n_dims, orig_ctx, beta_fast, freq_base));
    const float end = std::ceil(yarn_corr_dim(n_dims, orig_ctx, beta_slow, freq_base));
    dims[0] = std::max(0.0f, start);
    dims[1] = std::min(static_cast<float>(n_dims - 1), end);
}

float yarn_attn_factor(float freq_scale, float yarn_log_mul, bool deepseek2, float model_attn_factor) {
    auto get_mscale = [](double s, double m) { return s <= 1.0 ? 1.0 : 1.0 + 0.1 * m * std::log(s); };
    const double factor = 1.0 / freq_scale;
    double attn;
    if (yarn_log_mul != 0.0f) {
        const double m = (deepseek2 && yarn_log_mul != 1.0f) ? yarn_log_mul : 1.0;
        attn = get_mscale(factor, m) / get_mscale(factor, yarn_log_mul);
    } else {
        attn = get_mscale(factor, 1.0);
    }
    attn /= 1.0 + 0.1 * std::log(factor);
    return static_cast<float>(attn * model_attn_factor);
}

std::vector<float> llama3_freq_factors(int n_dims, float freq_base, float factor, float low_freq_factor,
                                       float high_freq_factor, int orig_ctx) {
    if (n_dims <= 0 || n_dims % 2 != 0) throw ShapeError("llama3_freq_factors: n_dims must be even and positive");
    // float32 throughout, like the conversion script's torch tensors.
    const float low_freq_wavelen = orig_ctx / low_freq_factor;
    const float high_freq_wavelen = orig_ctx / high_freq_factor;
    std::vector<float> factors;
    for (int i = 0; i < n_dims; i += 2) {
        const float freq = 1.0f / std::pow(freq_base, static_cast<float>(i) / static_cast<float>(n_dims));
        const float wavelen = static_cast<float>(2.0 * kPi) / freq;
        if (wavelen < high_freq_wavelen) {
            factors.push_back(1.0f);
        } else if (wavelen > low_freq_wavelen) {
            factors.push_back(factor);
        } else {
            const float smooth = (orig_ctx / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
            factors.push_back(1.0f / ((1.0f - smooth) / factor + smooth));
        }
    }
    return factors;
}

void rope(float* x, int64_t n_tokens, int n_heads, int head_dim, const int32_t* positions, const RopeParams& p) {
    check_rope(n_heads, head_dim, p);
    const int n_pairs = p.n_dims / 2;

    std::vector<float> computed_factors;
    const float* freq_factors = p.freq_factors;
    if (p.scaling == RopeParams::Llama3 && !freq_factors) {
        computed_factors = llama3_freq_factors(p.n_dims, p.freq_base, p.llama3_factor, p.low_freq_factor,
                                               p.high_freq_factor, p.orig_ctx);
        freq_factors = computed_factors.data();
    }
    const bool scaled = p.scaling == RopeParams::Linear || p.scaling == RopeParams::Yarn;
    const double freq_scale = scaled ? p.freq_scale : 1.0;
    const double ext_factor = p.scaling == RopeParams::Yarn ? p.ext_factor : 0.0;
    float corr[2] = {0.0f, 0.0f};
    double mscale = p.attn_factor;
    if (ext_factor != 0.0) {
        yarn_corr_dims(p.n_dims, p.orig_ctx, p.freq_base, p.beta_fast, p.beta_slow, corr);
        mscale *= 1.0 + 0.1 * std::log(1.0 / freq_scale);
    }

    std::vector<double> cos_t(n_pairs), sin_t(n_pairs);  // [n_pairs] for the current token
    for (int64_t t = 0; t < n_tokens; ++t) {
        const double pos = positions[t];
        for (int j = 0; j < n_pairs; ++j) {
            const double inv_freq = std::pow(static_cast<double>(p.freq_base), -2.0 * j / p.n_dims);
            const double theta_extrap = pos * inv_freq / (freq_factors ? freq_factors[j] : 1.0f);
            const double theta_interp = freq_scale * theta_extrap;
            double theta = theta_interp;
            if (ext_factor != 0.0) {
                const double mix = yarn_ramp(corr[0], corr[1], j) * ext_factor;
                theta = theta_interp * (1.0 - mix) + theta_extrap * mix;
            }
            cos_t[j] = std::cos(theta) * mscale;
            sin_t[j] = std::sin(theta) * mscale;
        }
        for (int h = 0; h < n_heads; ++h) {
            float* head = x + (t * n_heads + h) * head_dim;
            for (int j = 0; j < n_pairs; ++j) {
                const int i0 = p.neox ? j : 2 * j;
                const int i1 = p.neox ? j + n_pairs : 2 * j + 1;
                const double x0 = head[i0], x1 = head[i1];
                head[i0] = static_cast<float>(x0 * cos_t[j] - x1 * sin_t[j]);
                head[i1] = static_cast<float>(x0 * sin_t[j] + x1 * cos_t[j]);
            }
        }
    }
}

}  // namespace vkllm::cpu
