#include "model/blocks/delta_net_mixer.h"

#include "ops/delta_net_ops.h"
#include "ops/ssm_ops.h"

namespace vkllm::model {

namespace {

// Where a pass of T tokens keeps its rows in the state's in_proj buffer, each region packed
// [T][cols] (floats from the buffer's start): the projections q k v | z | b, alpha (Qwen3-Next:
// one [T][2 n_head] region of b | alpha per key head; Qwen3.5: b [T][n_head] then alpha), then
// the gates g and beta. SsmSpec::in_proj_rows() is their sum per token.
struct DeltaNetRows {
    uint64_t qkv = 0, z, ba, g, beta;
    DeltaNetRows(const SsmSpec& S, int T) {
        const uint64_t t = uint64_t(T);
        z = qkv + t * uint64_t(S.conv_channels());
        ba = z + t * uint64_t(S.d_inner);
        g = ba + t * 2 * uint64_t(S.n_head);
        beta = g + t * uint64_t(S.n_head);
    }
};

}  // namespace

void GatedDeltaNetBlock::record_projections(Recording& r) const {
    const int T = r.n_tokens;
    const SsmSpec& S = spec(r);
    const LayerWeights& w = weights(r);
    const DeltaNetRows at(S, T);
    const gpu::Buffer& in = state_.in_proj();
    auto inputs = [&](std::initializer_list<const ops::Weight*> projections) {
        return r.normed_inputs(r.residual(T), w.attn_norm, nullptr, projections,
                               "the normalised mixer input is complete before the projections read it",
                               ops::f32_rows(r.scratch.h, T, r.spec.n_embd));
    };
    const MatmulInputs mi = S.delta_ba_grouped ? inputs({&w.delta_qkv, &w.delta_gate, &w.delta_ba})
                                               : inputs({&w.delta_qkv, &w.delta_gate, &w.delta_beta, &w.delta_alpha});
    r.s.mark("matmul");
    mi.matmul(r.s, w.delta_qkv, ops::f32_rows(in, T, S.conv_channels(), at.qkv));
    mi.matmul(r.s, w.delta_gate, ops::f32_rows(in, T, S.d_inner, at.z));
    if (S.delta_ba_grouped) {
        mi.matmul(r.s, w.delta_ba, ops::f32_rows(in, T, 2 * int64_t(S.n_head), at.ba));
    } else {
        mi.matmul(r.s, w.delta_beta, ops::f32_rows(in, T, S.n_head, at.ba));
        mi.matmul(r.s, w.delta_alpha, ops::f32_rows(in, T, S.n_head, at.ba + uint64_t(T) * uint64_t(S.n_head)));
    }
    r.s.barrier("the projections are complete before the convolution and the gates read them");
}

void GatedDeltaNetBlock::record_gates(Recording& r) const {
    const int T = r.n_tokens;
    const SsmSpec& S = spec(r);
    const LayerWeights& w = weights(r);
    const DeltaNetRows at(S, T);
    const gpu::Buffer& in = state_.in_proj();
    const int64_t H = S.n_head;
    ops::DeltaNetGatesArgs a;
    a.n_head = H;
    if (S.delta_ba_grouped) {  // per key head: b of its H / n_group value heads, then their alpha
        const int64_t hpg = H / S.n_group, cols = (S.n_group - 1) * 2 * hpg + hpg;
        a.heads_per_group = hpg;
        a.group_stride = 2 * hpg;
        a.b = ops::f32_rows(in, T, cols, at.ba, 2 * H);
        a.alpha = ops::f32_rows(in, T, cols, at.ba + uint64_t(hpg), 2 * H);
    } else {
        a.b = ops::f32_rows(in, T, H, at.ba);
        a.alpha = ops::f32_rows(in, T, H, at.ba + uint64_t(T) * uint64_t(H));
    }
    a.dt_bias = ops::f32_rows(*w.ssm_dt_b, 1, H);
    a.a = ops::f32_rows(*w.ssm_a, 1, H);
    a.g = ops::f32_rows(in, T, H, at.g);
    a.beta = ops::f32_rows(in, T, H, at.beta);
    r.s.mark("delta_net_gates");
    ops::delta_net_gates(r.s, a);
}

void GatedDeltaNetBlock::record(Recording& r) const {
    const int T = r.n_tokens;
    const SsmSpec& S = spec(r);
    const LayerWeights& w = weights(r);
    gpu::Stream& s = r.s;
    const DeltaNetRows at(S, T);
    const gpu::Buffer& in = state_.in_proj();
    const int64_t C = S.conv_channels(), kd = int64_t(S.n_group) * S.d_state;

    record_projections(r);
    record_gates(r);  // independent of the convolution: one barrier after both
    record_conv(r, ops::f32_rows(in, T, C, at.qkv),
                "the convolved q, k, v and the gates are complete before the delta rule reads them");

    ops::GatedDeltaNetArgs d;
    d.n_head_k = S.n_group;
    d.n_head_v = S.n_head;
    d.d_k = S.d_state;
    d.d_v = S.head_dim();
    d.share = S.delta_share;
    d.state = ops::f32_rows(state_.layer(layer_).ssm, S.d_inner, S.d_state);
    d.q = ops::f32_rows(state_.xbc(), T, kd, 0, C);
    d.k = ops::f32_rows(state_.xbc(), T, kd, uint64_t(kd), C);
    d.v = ops::f32_rows(state_.xbc(), T, S.d_inner, uint64_t(2 * kd), C);
    d.g = ops::f32_rows(in, T, S.n_head, at.g);
    d.beta = ops::f32_rows(in, T, S.n_head, at.beta);
    d.out = ops::f32_rows(state_.y(), T, S.d_inner);
    d.l2_norm_qk = true;  // llama.cpp's build_gdn_l2_norm with the model's RMS epsilon
    d.l2_eps = r.spec.norm_eps;
    r.probe.state().tap_delta_net(s, layer_, r.pos0, d);  // records nothing unless the layer is probed
    s.mark("delta_net");
    ops::gated_delta_net(s, d);
    s.barrier("the delta rule's output is complete before its norm");

    // RMSNorm of each value head's output (weight ssm_norm), then times silu(z).
    const ops::TensorView heads = ops::f32_rows(state_.y(), int64_t(T) * S.n_head, S.head_dim());
    s.mark("norm");
    ops::rms_norm(s, heads, w.ssm_norm, heads, r.spec.norm_eps);
    s.barrier("the normalised output is complete before its gate");
    const ops::TensorView y = ops::f32_rows(state_.y(), T, S.d_inner);
    s.mark("swiglu");
    ops::swiglu(s, ops::f32_rows(in, T, S.d_inner, at.z), y, y);
    s.barrier("the gated output is complete before the out-projection reads it");
    record_output(r);
}

}  // namespace vkllm::model
