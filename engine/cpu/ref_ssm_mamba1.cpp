// CPU reference of Mamba-1's selective scan (ref_ssm_mamba1.h): ggml_compute_forward_ssm_scan_f32's
// element-wise-decay branch, then llama.cpp's y + x * D and silu(z) * y.
#include "cpu/ref_ssm_mamba1.h"

#include <cmath>
#include <string>

#include "cpu/ref_ops.h"
#include "cpu/ref_ssm.h"

namespace vkllm::cpu {

void ssm_scan_mamba1(const SsmScanMamba1Ref& a) {
    const char* op = "ssm_scan_mamba1";
    if (a.n_tokens < 0 || a.d_inner <= 0 || a.d_state <= 0)
        throw ShapeError(std::string(op) + ": needs n_tokens >= 0 and positive d_inner and d_state, got " +
                         std::to_string(a.n_tokens) + ", " + std::to_string(a.d_inner) + ", " +
                         std::to_string(a.d_state));
    if (!a.state || !a.x || !a.dt || !a.b || !a.c || !a.a || !a.y)
        throw ShapeError(std::string(op) + ": a required operand is null");
    if (a.x_stride < a.d_inner || a.dt_stride < a.d_inner || a.bc_stride < a.d_state || a.y_stride < a.d_inner ||
        (a.z && a.z_stride < a.d_inner))
        throw ShapeError(std::string(op) + ": a row stride is shorter than its row");
    for (int64_t t = 0; t < a.n_tokens; ++t) {
        const float* B = a.b + t * a.bc_stride;
        const float* C = a.c + t * a.bc_stride;
        for (int64_t ch = 0; ch < a.d_inner; ++ch) {
            const float xv = a.x[t * a.x_stride + ch];
            const float sp = ssm_softplus(a.dt[t * a.dt_stride + ch]);
            const float x_dt = xv * sp;
            float* s = a.state + ch * a.d_state;
            const float* A = a.a + ch * a.d_state;
            float sum = 0.0f;
            for (int64_t j = 0; j < a.d_state; ++j) {
                const float st = s[j] * std::exp(sp * A[j]) + B[j] * x_dt;
                sum += st * C[j];
                s[j] = st;
            }
            if (a.d) sum += xv * a.d[ch];
            if (a.z) {
                const float zv = a.z[t * a.z_stride + ch];
                sum = zv / (1.0f + std::exp(-zv)) * sum;
            }
            a.y[t * a.y_stride + ch] = sum;
        }
    }
}

}  // namespace vkllm::cpu
