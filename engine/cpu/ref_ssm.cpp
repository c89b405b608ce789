// CPU reference of Mamba-2's short convolution, selective scan and grouped RMSNorm (ref_ssm.h).
#include "cpu/ref_ssm.h"

#include <cmath>
#include <string>
#include <vector>

#include "cpu/ref_ops.h"

namespace vkllm::cpu {

namespace {

void require(bool ok, const char* op, const std::string& message) {
    if (!ok) throw ShapeError(std::string(op) + ": " + message);
}

float silu(float v) { return v / (1.0f + std::exp(-v)); }

}  // namespace

float ssm_softplus(float v) { return v > 20.0f ? v : std::log1p(std::exp(v)); }

void ssm_conv(const float* x, int64_t x_stride, float* state, const float* w, const float* bias, float* y,
              int64_t y_stride, int64_t n_tokens, int64_t channels, int64_t d_conv, bool silu_out) {
    require(n_tokens >= 0 && channels > 0 && d_conv >= 1, "ssm_conv",
            "needs n_tokens >= 0, channels > 0 and d_conv >= 1, got " + std::to_string(n_tokens) + ", " +
                std::to_string(channels) + ", " + std::to_string(d_conv));
    require(x_stride >= channels && y_stride >= channels, "ssm_conv", "row strides shorter than a row");
    const int64_t ns = d_conv - 1;
    std::vector<float> win(size_t(ns + n_tokens));
    for (int64_t ch = 0; ch < channels; ++ch) {
        for (int64_t i = 0; i < ns; ++i) win[size_t(i)] = state[ch * ns + i];
        for (int64_t t = 0; t < n_tokens; ++t) win[size_t(ns + t)] = x[t * x_stride + ch];
        for (int64_t t = 0; t < n_tokens; ++t) {
            // float sum in tap order, as ggml_compute_forward_ssm_conv_f32
            float sum = 0.0f;
            for (int64_t k = 0; k < d_conv; ++k) sum += win[size_t(t + k)] * w[ch * d_conv + k];
            if (bias) sum += bias[ch];
            y[t * y_stride + ch] = silu_out ? silu(sum) : sum;
        }
        for (int64_t i = 0; i < ns; ++i) state[ch * ns + i] = win[size_t(n_tokens + i)];
    }
}

void short_conv_gated(const float* b, const float* c, const float* x, int64_t stride, float* state, const float* w,
                      float* y, int64_t y_stride, int64_t n_tokens, int64_t channels, int64_t d_conv) {
    require(n_tokens >= 0 && channels > 0 && stride >= channels && y_stride >= channels, "short_conv_gated",
            "needs n_tokens >= 0, channels > 0 and row strides of at least a row");
    // bx = b * x (ggml_mul), then the plain convolution, then c * conv (ggml_mul)
    std::vector<float> bx(static_cast<size_t>(n_tokens * channels)), conv(bx.size());
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t ch = 0; ch < channels; ++ch) bx[size_t(t * channels + ch)] = b[t * stride + ch] * x[t * stride + ch];
    ssm_conv(bx.data(), channels, state, w, nullptr, conv.data(), channels, n_tokens, channels, d_conv, false);
    for (int64_t t = 0; t < n_tokens; ++t)
        for (int64_t ch = 0; ch < channels; ++ch) y[t * y_stride + ch] = c[t * stride + ch] * conv[size_t(t * channels + ch)];
}

void ssm_scan(const SsmScanRef& a) {
    require(a.n_tokens >= 0 && a.n_head > 0 && a.head_dim > 0 && a.d_state > 0 && a.n_group > 0, "ssm_scan",
            "needs positive sizes");
    require(a.n_head % a.n_group == 0, "ssm_scan",
            "n_head " + std::to_string(a.n_head) + " is not a multiple of n_group " + std::to_string(a.n_group));
    require(a.state && a.x && a.b && a.c && a.dt && a.a && a.y, "ssm_scan", "a required operand is null");
    const int64_t heads_per_group = a.n_head / a.n_group;
    for (int64_t t = 0; t < a.n_tokens; ++t) {
        const float* x = a.x + t * a.x_stride;
        const float* B = a.b + t * a.b_stride;
        const float* C = a.c + t * a.c_stride;
        const float* dt = a.dt + t * a.dt_stride;
        float* y = a.y + t * a.y_stride;
        for (int64_t h = 0; h < a.n_head; ++h) {
            const float sp = ssm_softplus(dt[h] + (a.dt_bias ? a.dt_bias[h] : 0.0f));
            const float dA = std::exp(sp * a.a[h]);
            const int64_t g = h / heads_per_group;
            for (int64_t i = 0; i < a.head_dim; ++i) {
                const int64_t row = h * a.head_dim + i;
                const float x_dt = x[row] * sp;
                float* s = a.state + row * a.d_state;
                float sum = 0.0f;
                for (int64_t j = 0; j < a.d_state; ++j) {
                    const float st = s[j] * dA + B[g * a.d_state + j] * x_dt;
                    sum += st * C[g * a.d_state + j];
                    s[j] = st;
                }
                if (a.d) sum += x[row] * a.d[h];
                if (a.z) sum = silu(a.z[t * a.z_stride + row]) * sum;
                y[row] = sum;
            }
        }
    }
}

void ssm_group_rms_norm(const float* x, const float* w, float* y, int64_t n_rows, int64_t n, int64_t n_group,
                        float eps) {
    require(n > 0 && n_group > 0 && n_rows >= 0, "ssm_group_rms_norm", "needs positive sizes");
    for (int64_t r = 0; r < n_rows * n_group; ++r) {
        const float* xr = x + r * n;
        float* yr = y + r * n;
        const float* wr = w ? w + (r % n_group) * n : nullptr;
        double s2 = 0.0;
        for (int64_t i = 0; i < n; ++i) s2 += double(xr[i]) * double(xr[i]);
        const float mean = float(s2 / double(n));
        const float inv = 1.0f / std::sqrt(mean + eps);
        for (int64_t i = 0; i < n; ++i) yr[i] = wr ? xr[i] * inv * wr[i] : xr[i] * inv;
    }
}

}  // namespace vkllm::cpu
