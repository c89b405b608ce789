// The reference walk of a Gated DeltaNet mixer (llama.cpp's build_layer_attn_linear, Qwen3-Next
// and Qwen3.5), as model/blocks/delta_net_mixer.h writes it:
//   qkv = attn_qkv h;  z = attn_gate h;  b, alpha = ssm_ba h (per key head) or ssm_beta h, ssm_alpha h
//   qkv = silu(conv1d(qkv, carrying the conv state));  q | k | v = qkv
//   g = softplus(alpha + dt_bias) * A;  beta = sigmoid(b)
//   y = gated delta rule(L2norm(q), L2norm(k), v, g, beta; carrying the state)
//   y = RMSNorm(y per value head) * ssm_norm * silu(z);  ssm_out y
#include <string>
#include <vector>

#include "cpu/ref_delta_net.h"
#include "cpu/ref_ssm.h"
#include "reference/reference_forward.h"

namespace vkllm::model {

std::vector<float> ReferenceForward::delta_net_block(int l, const float* h, int n_tokens) {
    const SsmSpec& S = spec_.layers[size_t(l)].ssm;
    const std::string p = "blk." + std::to_string(l) + ".";
    const int64_t T = n_tokens, C = S.conv_channels(), H = S.n_head, kd = int64_t(S.n_group) * S.d_state;
    std::vector<float> qkv(size_t(T * C)), conv(size_t(T * C)), z(size_t(T * S.d_inner));
    matmul(p + "attn_qkv.weight", h, qkv.data(), n_tokens);
    matmul(p + "attn_gate.weight", h, z.data(), n_tokens);

    // b and alpha: Qwen3-Next's one projection holds, per key head, b of its value heads then
    // their alpha; Qwen3.5 has one projection each.
    std::vector<float> ba(size_t(T * 2 * H));
    const float *b = ba.data(), *alpha = ba.data() + T * H;
    int64_t ba_stride = H, hpg = H, group_stride = 0;
    if (S.delta_ba_grouped) {
        matmul(p + "ssm_ba.weight", h, ba.data(), n_tokens);
        hpg = H / S.n_group;
        group_stride = 2 * hpg;
        ba_stride = 2 * H;
        alpha = ba.data() + hpg;
    } else {
        matmul(p + "ssm_beta.weight", h, ba.data(), n_tokens);
        matmul(p + "ssm_alpha.weight", h, ba.data() + T * H, n_tokens);
    }
    const std::vector<float> dt_bias = values(p + "ssm_dt.bias"), a = values(p + "ssm_a");
    std::vector<float> g(size_t(T * H)), beta(size_t(T * H));
    cpu::delta_net_gates(alpha, ba_stride, b, ba_stride, dt_bias.data(), a.data(), g.data(), H, beta.data(), H, T, H,
                         hpg, group_stride);

    const std::vector<float> conv_w = values(p + "ssm_conv1d.weight");  // [channels][d_conv]
    if (int64_t(conv_w.size()) != C * S.d_conv)
        throw ModelError("reference forward: '" + p + "ssm_conv1d.weight' does not have " + std::to_string(C) +
                         " channels of " + std::to_string(S.d_conv) + " taps");
    cpu::ssm_conv(qkv.data(), C, conv_[size_t(l)].data(), conv_w.data(), nullptr, conv.data(), C, T, C, S.d_conv,
                  /*silu=*/true);

    std::vector<float> y(size_t(T * S.d_inner));
    cpu::DeltaNetRef d;
    d.n_tokens = T, d.n_head_k = S.n_group, d.n_head_v = H, d.d_k = S.d_state, d.d_v = S.head_dim();
    d.share = S.delta_share;
    d.state = ssm_[size_t(l)].data();
    d.q = conv.data(), d.q_stride = C;
    d.k = conv.data() + kd, d.k_stride = C;
    d.v = conv.data() + 2 * kd, d.v_stride = C;
    d.g = g.data(), d.g_stride = H;
    d.beta = beta.data(), d.beta_stride = H;
    d.out = y.data(), d.out_stride = S.d_inner;
    d.l2_norm_qk = true;
    d.l2_eps = spec_.norm_eps;
    cpu::gated_delta_net(d);

    const std::vector<float> norm_w = values(p + "ssm_norm.weight");
    cpu::rms_norm(y.data(), norm_w.data(), y.data(), T * H, S.head_dim(), spec_.norm_eps);
    cpu::swiglu(z.data(), y.data(), y.data(), T, S.d_inner);
    std::vector<float> out(size_t(T) * size_t(spec_.n_embd));
    matmul(p + "ssm_out.weight", y.data(), out.data(), n_tokens);
    return out;
}

}  // namespace vkllm::model
