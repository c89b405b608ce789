#include "model/blocks/ssm_mixer.h"

#include "ops/ssm_ops.h"

namespace vkllm::model {

void StateSpaceMixer::record_in_projection(Recording& r, const char* why) const {
    const LayerWeights& w = weights(r);
    MatmulInputs mi = r.normed_inputs(r.residual(r.n_tokens), w.attn_norm, w.attn_norm_b, {&w.ssm_in},
                                      "the normalised mixer input is complete before the in-projection reads it",
                                      ops::f32_rows(r.scratch.h, r.n_tokens, r.spec.n_embd));
    r.s.mark("matmul");
    mi.matmul(r.s, w.ssm_in, ops::f32_rows(state_.in_proj(), r.n_tokens, w.ssm_in.n_out));
    r.s.barrier(why);
}

void StateSpaceMixer::record_conv(Recording& r, const ops::TensorView& x, const char* why) const {
    const SsmSpec& S = spec(r);
    const LayerWeights& w = weights(r);
    const int64_t channels = x.cols;
    ops::SsmConvArgs c;
    c.x = x;
    c.state = ops::f32_rows(state_.layer(layer_).conv, channels, S.d_conv - 1);
    c.w = ops::f32_rows(*w.ssm_conv1d, channels, S.d_conv);
    if (w.ssm_conv1d_b) c.bias = ops::f32_vector(*w.ssm_conv1d_b, channels);
    c.y = ops::f32_rows(state_.xbc(), r.n_tokens, channels);
    c.silu = true;
    r.s.mark("ssm_conv");
    ops::ssm_conv(r.s, c);
    r.s.barrier(why);
}

void StateSpaceMixer::record_output(Recording& r) const {
    r.add_block_output(weights(r).ssm_out, ops::f32_rows(state_.y(), r.n_tokens, spec(r).d_inner), nullptr, nullptr);
}

void SsmMixerBlock::record(Recording& r) const {
    const int T = r.n_tokens;
    const SsmSpec& S = spec(r);
    const LayerWeights& w = weights(r);
    gpu::Stream& s = r.s;
    const int64_t in_rows = S.in_proj_rows(), channels = S.conv_channels();
    const int64_t gs = int64_t(S.n_group) * S.d_state;

    // [z | xBC | dt] = W_in norm(x); xBC's columns convolved into packed [T][channels] rows.
    record_in_projection(r, "the in-projection is complete before the convolution reads xBC");
    record_conv(r, ops::f32_rows(state_.in_proj(), T, channels, uint64_t(S.d_inner), in_rows),
                "the convolved x, B and C are complete before the scan reads them");

    // x | B | C are the convolved row's columns; z and dt the in-projection's.
    ops::SsmScanArgs a;
    a.state = ops::f32_rows(state_.layer(layer_).ssm, S.d_inner, S.d_state);
    a.x = ops::f32_rows(state_.xbc(), T, S.d_inner, 0, channels);
    a.b = ops::f32_rows(state_.xbc(), T, gs, uint64_t(S.d_inner), channels);
    a.c = ops::f32_rows(state_.xbc(), T, gs, uint64_t(S.d_inner + gs), channels);
    a.z = ops::f32_rows(state_.in_proj(), T, S.d_inner, 0, in_rows);
    a.dt = ops::f32_rows(state_.in_proj(), T, S.n_head, uint64_t(S.d_inner + channels), in_rows);
    if (w.ssm_dt_b) a.dt_bias = ops::f32_vector(*w.ssm_dt_b, S.n_head);
    a.a = ops::f32_vector(*w.ssm_a, S.n_head);
    if (w.ssm_d) a.d = ops::f32_vector(*w.ssm_d, S.n_head);
    a.y = ops::f32_rows(state_.y(), T, S.d_inner);
    r.probe.state().tap_mamba2(s, layer_, r.pos0, a);  // records nothing unless the layer is probed
    s.mark("ssm_scan");
    ops::ssm_scan(s, a);
    s.barrier("the gated scan output is complete before its grouped norm");

    if (w.ssm_norm) {
        s.mark("ssm_norm");
        const ops::TensorView y = ops::f32_rows(state_.y(), T, S.d_inner);
        ops::ssm_group_rms_norm(s, y, w.ssm_norm, y, S.n_group, r.spec.norm_eps);
        s.barrier("the normalised mixer output is complete before the out-projection reads it");
    }
    record_output(r);
}

void Mamba1MixerBlock::record(Recording& r) const {
    const int T = r.n_tokens;
    const SsmSpec& S = spec(r);
    const LayerWeights& w = weights(r);
    gpu::Stream& s = r.s;
    const int64_t D = S.d_inner, N = S.d_state, R = S.dt_rank;

    // [x | z] = W_in norm(x); x = silu(conv1d(x, carrying the conv state) + b_conv), packed [T][d_inner].
    record_in_projection(r, "the in-projection is complete before the convolution reads x");
    record_conv(r, ops::f32_rows(state_.in_proj(), T, D, 0, 2 * D), "the convolved x is complete before x_proj reads it");

    // x_proj's rows in two matmuls, so each output is packed: dt_low [T][dt_rank] and B | C
    // [T][2 d_state] (the same dot products as the one x_proj, row for row).
    const uint64_t bc_at = uint64_t(T) * uint64_t(R);  // element where B | C start in x_db
    MatmulInputs xi = r.prepare_inputs(ops::f32_rows(state_.xbc(), T, D), {&w.ssm_x_dt, &w.ssm_x_bc});
    s.mark("matmul");
    xi.matmul(s, w.ssm_x_dt, ops::f32_rows(state_.x_db(), T, w.ssm_x_dt.n_out));
    xi.matmul(s, w.ssm_x_bc, ops::f32_rows(state_.x_db(), T, w.ssm_x_bc.n_out, bc_at));
    s.barrier("dt_low, B and C are complete before dt_proj and the scan read them");
    if (S.dt_b_c_norm) {  // RMS norms of dt_low, B and C (weighted where the file has the weights)
        s.mark("norm");
        const ops::TensorView dt_low = ops::f32_rows(state_.x_db(), T, R);
        const ops::TensorView b = ops::f32_rows(state_.x_db(), T, N, bc_at, 2 * N);
        const ops::TensorView c = ops::f32_rows(state_.x_db(), T, N, bc_at + uint64_t(N), 2 * N);
        // One buffer: each norm's dispatch binds it whole, so they are ordered one after another.
        ops::rms_norm(s, dt_low, w.ssm_dt_norm, dt_low, r.spec.norm_eps);
        s.barrier("dt_low's norm is complete before B's norm binds the same buffer");
        ops::rms_norm(s, b, w.ssm_b_norm, b, r.spec.norm_eps);
        s.barrier("B's norm is complete before C's norm binds the same buffer");
        ops::rms_norm(s, c, w.ssm_c_norm, c, r.spec.norm_eps);
        s.barrier("the normalised dt_low, B and C are complete before dt_proj and the scan read them");
    }

    // dt = W_dt dt_low + dt_bias, per channel.
    MatmulInputs di = r.prepare_inputs(ops::f32_rows(state_.x_db(), T, R), {&w.ssm_dt});
    s.mark("matmul");
    di.matmul(s, w.ssm_dt, ops::f32_rows(state_.dt(), T, w.ssm_dt.n_out));
    s.barrier("dt_proj is complete before its bias");
    s.mark("add_bias");
    ops::add_bias(s, ops::f32_rows(state_.dt(), T, D), ops::f32_vector(*w.ssm_dt_b, D));
    s.barrier("dt is complete before the scan reads it");

    // y = (scan(x, dt, A, B, C; carrying the SSM state) + D x) * silu(z).
    ops::SsmScanMamba1Args a;
    a.state = ops::f32_rows(state_.layer(layer_).ssm, D, N);
    a.x = ops::f32_rows(state_.xbc(), T, D);
    a.dt = ops::f32_rows(state_.dt(), T, D);
    a.b = ops::f32_rows(state_.x_db(), T, N, bc_at, 2 * N);
    a.c = ops::f32_rows(state_.x_db(), T, N, bc_at + uint64_t(N), 2 * N);
    a.z = ops::f32_rows(state_.in_proj(), T, D, uint64_t(D), 2 * D);
    a.a = ops::f32_rows(*w.ssm_a, D, N);
    a.d = ops::f32_vector(*w.ssm_d, D);
    a.y = ops::f32_rows(state_.y(), T, D);
    r.probe.state().tap_mamba1(s, layer_, a);  // records nothing unless the layer is probed
    s.mark("ssm_scan");
    ops::ssm_scan_mamba1(s, a);
    s.barrier("the gated scan output is complete before the out-projection reads it");
    record_output(r);
}

}  // namespace vkllm::model
