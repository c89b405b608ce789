// The reference walk of a Mamba-2 mixer (llama.cpp's build_mamba2_layer): a Mamba-2 layer's, or
// Falcon-H1's beside attention.
//   [z | xBC | dt] = ssm_in h;  xBC = silu(conv1d(xBC, carrying the conv state) + b_conv)
//   y = scan(x, dt + dt_bias, A, B, C; carrying the SSM state) + D x;  y *= silu(z)
//   y = grouped RMSNorm(y) * ssm_norm (where the file has it);  ssm_out y
#include <string>
#include <vector>

#include "cpu/ref_ssm.h"
#include "reference/reference_forward.h"

namespace vkllm::model {

std::vector<float> ReferenceForward::mamba2_block(int l, const float* h, int n_tokens) {
    const SsmSpec& S = spec_.layers[size_t(l)].ssm;
    const std::string p = "blk." + std::to_string(l) + ".";
    const int64_t in_rows = S.in_proj_rows(), channels = S.conv_channels(), gs = int64_t(S.n_group) * S.d_state;
    std::vector<float> zxbcdt(size_t(n_tokens) * size_t(in_rows)), xbc(size_t(n_tokens) * size_t(channels));
    matmul(p + "ssm_in.weight", h, zxbcdt.data(), n_tokens);

    const std::vector<float> conv_w = values(p + "ssm_conv1d.weight");  // [channels][d_conv]
    const std::vector<float> conv_b = values(p + "ssm_conv1d.bias");
    if (int64_t(conv_w.size()) != channels * S.d_conv || int64_t(conv_b.size()) != channels)
        throw ModelError("reference forward: '" + p + "ssm_conv1d' does not have " + std::to_string(channels) +
                         " channels of " + std::to_string(S.d_conv) + " taps");
    cpu::ssm_conv(zxbcdt.data() + S.d_inner, in_rows, conv_[size_t(l)].data(), conv_w.data(), conv_b.data(), xbc.data(),
                  channels, n_tokens, channels, S.d_conv, /*silu=*/true);

    const std::vector<float> dt_bias = values(p + "ssm_dt.bias"), a = values(p + "ssm_a"), d = values(p + "ssm_d");
    std::vector<float> y(size_t(n_tokens) * size_t(S.d_inner));
    cpu::SsmScanRef s;
    s.n_tokens = n_tokens, s.n_head = S.n_head, s.head_dim = S.head_dim(), s.d_state = S.d_state, s.n_group = S.n_group;
    s.state = ssm_[size_t(l)].data();
    s.x = xbc.data(), s.x_stride = channels;
    s.b = xbc.data() + S.d_inner, s.b_stride = channels;
    s.c = xbc.data() + S.d_inner + gs, s.c_stride = channels;
    s.dt = zxbcdt.data() + S.d_inner + channels, s.dt_stride = in_rows;
    s.dt_bias = dt_bias.data(), s.a = a.data(), s.d = d.data();
    s.z = zxbcdt.data(), s.z_stride = in_rows;
    s.y = y.data(), s.y_stride = S.d_inner;
    cpu::ssm_scan(s);
    if (has(p + "ssm_norm.weight")) {
        const std::vector<float> w = values(p + "ssm_norm.weight");
        cpu::ssm_group_rms_norm(y.data(), w.data(), y.data(), n_tokens, S.d_inner / S.n_group, S.n_group, spec_.norm_eps);
    }
    std::vector<float> out(size_t(n_tokens) * size_t(spec_.n_embd));
    matmul(p + "ssm_out.weight", y.data(), out.data(), n_tokens);
    return out;
}

}  // namespace vkllm::model
