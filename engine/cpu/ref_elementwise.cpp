// Reference normalisation, softmax, activations and gated linear units.
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/softmax.h"
#include "cpu/ref_ops.h"

namespace vkllm::cpu {

namespace {

void check_rows(int64_t n_rows, int64_t n, const char* op) {
    if (n_rows < 0 || n <= 0)
        throw ShapeError(std::string(op) + ": bad shape [" + std::to_string(n_rows) + ", " + std::to_string(n) + "]");
}

double sigmoid_d(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// GELU, tanh approximation (Hendrycks & Gimpel 2016): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
double gelu_tanh_d(double x) {
    const double sqrt_2_over_pi = 0.79788456080286535588;
    return 0.5 * x * (1.0 + std::tanh(sqrt_2_over_pi * (x + 0.044715 * x * x * x)));
}

}  // namespace

void rms_norm(const float* x, const float* weight, float* y, int64_t n_tokens, int64_t n, float eps) {
    check_rows(n_tokens, n, "rms_norm");
    for (int64_t t = 0; t < n_tokens; ++t) {
        const float* xr = x + t * n;
        float* yr = y + t * n;
        double sum_sq = 0.0;
        for (int64_t i = 0; i < n; ++i) sum_sq += static_cast<double>(xr[i]) * xr[i];
        const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(n) + eps);
        for (int64_t i = 0; i < n; ++i)
            yr[i] = static_cast<float>(xr[i] * inv_rms * (weight ? weight[i] : 1.0f));
    }
}

void layer_norm(const float* x, const float* weight, const float* bias, float* y, int64_t n_tokens, int64_t n,
                float eps) {
    check_rows(n_tokens, n, "layer_norm");
    for (int64_t t = 0; t < n_tokens; ++t) {
        const float* xr = x + t * n;
        float* yr = y + t * n;
        double mean = 0.0;
        for (int64_t i = 0; i < n; ++i) mean += xr[i];
        mean /= static_cast<double>(n);
        double var = 0.0;
        for (int64_t i = 0; i < n; ++i) var += (xr[i] - mean) * (xr[i] - mean);
        var /= static_cast<double>(n);
        const double inv_std = 1.0 / std::sqrt(var + eps);
        for (int64_t i = 0; i < n; ++i) {
            double v = (xr[i] - mean) * inv_std;
            if (weight) v *= weight[i];
            if (bias) v += bias[i];
            yr[i] = static_cast<float>(v);
        }
    }
}

void softmax(const float* x, float* y, int64_t n_rows, int64_t n, float scale, float softcap) {
    check_rows(n_rows, n, "softmax");
    std::vector<double> z(static_cast<size_t>(n));  // [n] scaled (and capped) logits of one row
    for (int64_t r = 0; r < n_rows; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        for (int64_t i = 0; i < n; ++i) {
            double v = static_cast<double>(xr[i]) * scale;
            if (softcap > 0.0f) v = softcap * std::tanh(v / softcap);
            z[i] = v;
        }
        softmax_in_place(z.data(), z.size());  // a row of -inf only: zeros
        for (int64_t i = 0; i < n; ++i) yr[i] = static_cast<float>(z[i]);
    }
}

void softcap(const float* x, float* y, int64_t n, float cap) {
    if (!(cap > 0.0f)) throw ShapeError("softcap: cap must be > 0, got " + std::to_string(cap));
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(cap * std::tanh(static_cast<double>(x[i]) / cap));
}

void silu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(x[i] * sigmoid_d(x[i]));
}

void gelu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(gelu_tanh_d(x[i]));
}

void gelu_erf(const float* x, float* y, int64_t n) {
    const double inv_sqrt2 = 0.70710678118654752440;
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(0.5 * x[i] * (1.0 + std::erf(x[i] * inv_sqrt2)));
}

void sigmoid(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = static_cast<float>(sigmoid_d(x[i]));
}

void add(const float* a, const float* b, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void mul(const float* a, const float* b, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void scale(const float* x, float s, float* y, int64_t n) {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s;
}

void swiglu(const float* gate, const float* up, float* y, int64_t n_tokens, int64_t n) {
    check_rows(n_tokens, n, "swiglu");
    for (int64_t i = 0; i < n_tokens * n; ++i)
        y[i] = static_cast<float>(gate[i] * sigmoid_d(gate[i]) * up[i]);
}

void geglu(const float* gate, const float* up, float* y, int64_t n_tokens, int64_t n) {
    check_rows(n_tokens, n, "geglu");
    for (int64_t i = 0; i < n_tokens * n; ++i) y[i] = static_cast<float>(gelu_tanh_d(gate[i]) * up[i]);
}

void swiglu_oai(const float* gate, const float* up, float* y, int64_t n_tokens, int64_t n, float alpha,
                float limit) {
    check_rows(n_tokens, n, "swiglu_oai");
    for (int64_t i = 0; i < n_tokens * n; ++i) {
        const double g = std::min(gate[i], limit);
        const double u = std::clamp(up[i], -limit, limit);
        y[i] = static_cast<float>(g * sigmoid_d(alpha * g) * (u + 1.0));
    }
}

}  // namespace vkllm::cpu
