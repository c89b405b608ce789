// Weighted scale searches (see quant_weighted_fit.h). For fixed codes l, the weighted least
// squares scale of x ~ d l is d = sum w x l / sum w l^2, and its error drop (sum w x l)^2 / sum w l^2;
// with a minimum, x ~ d l + c solves the 2x2 normal equations
//   [sum w l^2  sum w l] [d]   [sum w x l]
//   [sum w l    sum w  ] [c] = [sum w x  ],
// c clamped to <= 0 (the formats store -c >= 0), then d = sum w x l / sum w l^2.
#include "gguf/quant_weighted_fit.h"

#include <algorithm>
#include <cmath>

namespace vkllm::gguf {

namespace {

int nearest(float v) { return int(std::lrintf(v)); }

}  // namespace

void importance_weights(const float* x, const float* importance, int n, float sigma2, float* w) {
    for (int i = 0; i < n; ++i) w[i] = importance[i] * std::sqrt(sigma2 + x[i] * x[i]);
}

float mean_square(const float* x, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; ++i) s += x[i] * x[i];
    return s / float(n);
}

float fit_symmetric(const float* x, const float* w, int n, int nmax) {
    float max = 0.0f, amax = 0.0f;
    for (int i = 0; i < n; ++i)
        if (std::fabs(x[i]) > amax) {
            amax = std::fabs(x[i]);
            max = x[i];
        }
    if (amax < 1e-15f) return 0.0f;
    float best = -1.0f, scale = -max / float(nmax);
    for (int k = -9; k <= 9; ++k) {
        const float inv = -(float(nmax) + 0.1f * float(k)) / max;
        float slx = 0.0f, sl2 = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest(inv * x[i]), -nmax, nmax - 1);
            slx += w[i] * x[i] * float(l);
            sl2 += w[i] * float(l) * float(l);
        }
        // The codes decode as d * l with d = -1 / inv in the unweighted convention: here
        // d = slx / sl2 directly (l carries the sign).
        if (sl2 > 0.0f && slx * slx > best * sl2) {
            best = slx * slx / sl2;
            scale = slx / sl2;
        }
    }
    return scale;
}

float fit_affine(const float* x, const float* w, int n, int nmax, float* min_out) {
    float lo = x[0], hi = x[0], sw = 0.0f, swx = 0.0f;
    for (int i = 0; i < n; ++i) {
        lo = std::min(lo, x[i]);
        hi = std::max(hi, x[i]);
        sw += w[i];
        swx += w[i] * x[i];
    }
    lo = std::min(lo, 0.0f);
    if (hi <= lo) {
        *min_out = -lo;
        return 0.0f;
    }
    // Start: the group's range on [0, nmax].
    auto error_of = [&](float d, float c) {
        const float inv = d != 0.0f ? 1.0f / d : 0.0f;
        float e = 0.0f;
        for (int i = 0; i < n; ++i) {
            const int l = std::clamp(nearest((x[i] - c) * inv), 0, nmax);
            const float diff = d * float(l) + c - x[i];
            e += w[i] * diff * diff;
        }
        return e;
    };
    float scale = (hi - lo) / float(nmax), c = lo;
    float best = error_of(scale, c);
    for (int k = 0; k <= 36; ++k) {
        const float inv = (-0.9f + 0.05f * float(k) + float(nmax)) / (hi - lo);
        float sl = 0.0f, sl2 = 0.0f, sxl = 0.0f;
        for (int i = 0; i < n; ++i) {
            const float l = float(std::clamp(nearest(inv * (x[i] - lo)), 0, nmax));
            sl += w[i] * l;
            sl2 += w[i] * l * l;
            sxl += w[i] * l * x[i];
        }
        const float det = sw * sl2 - sl * sl;
        if (det <= 0.0f) continue;
        float d = (sw * sxl - swx * sl) / det, m = (sl2 * swx - sl * sxl) / det;
        if (m > 0.0f) {
            m = 0.0f;
            d = sxl / sl2;
        }
        const float e = error_of(d, m);
        if (e < best) {
            best = e;
            scale = d;
            c = m;
        }
    }
    *min_out = -c;
    return scale;
}

}  // namespace vkllm::gguf
