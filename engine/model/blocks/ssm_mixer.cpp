#include "model/blocks/ssm_mixer.h"

#include "ops/ssm_ops.h"

namespace vkllm::model {

void SsmMixerBlock::record(Recording& r) const {
    const int l = layer_, T = r.n_tokens;
    const SsmSpec& S = r.spec.layers[size_t(l)].ssm;
    const LayerWeights& w = r.w.layers[size_t(l)];
    const RecurrentState::Layer& st = state_.layer(l);
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const int64_t in_rows = S.in_proj_rows(), channels = S.conv_channels();
    const int64_t gs = int64_t(S.n_group) * S.d_state;

    // [z | xBC | dt] = W_in norm(x) (decode's RMSNorm may run inside the matvec).
    MatmulInputs mi = r.normed_inputs(sc.x, 0, T, r.spec.n_embd, w.attn_norm, w.attn_norm_b, {&w.ssm_in},
                                      "the normalised mixer input is complete before the in-projection reads it", sc.h);
    s.mark("matmul");
    mi.matmul(s, w.ssm_in, state_.in_proj(), 0, T);
    s.barrier("the in-projection is complete before the convolution reads xBC");

    // xBC's columns of the in-projection's rows, convolved into packed [T][channels] rows.
    ops::SsmConvArgs c;
    c.x = ops::f32_rows(state_.in_proj(), T, channels, uint64_t(S.d_inner), in_rows);
    c.state = ops::f32_rows(st.conv, channels, S.d_conv - 1);
    c.w = ops::f32_rows(*w.ssm_conv1d, channels, S.d_conv);
    if (w.ssm_conv1d_b) c.bias = ops::f32_vector(*w.ssm_conv1d_b, channels);
    c.y = ops::f32_rows(state_.xbc(), T, channels);
    c.silu = true;
    s.mark("ssm_conv");
    ops::ssm_conv(s, c);
    s.barrier("the convolved x, B and C are complete before the scan reads them");

    // x | B | C are the convolved row's columns; z and dt the in-projection's.
    ops::SsmScanArgs a;
    a.state = ops::f32_rows(st.ssm, S.d_inner, S.d_state);
    a.x = ops::f32_rows(state_.xbc(), T, S.d_inner, 0, channels);
    a.b = ops::f32_rows(state_.xbc(), T, gs, uint64_t(S.d_inner), channels);
    a.c = ops::f32_rows(state_.xbc(), T, gs, uint64_t(S.d_inner + gs), channels);
    a.z = ops::f32_rows(state_.in_proj(), T, S.d_inner, 0, in_rows);
    a.dt = ops::f32_rows(state_.in_proj(), T, S.n_head, uint64_t(S.d_inner + channels), in_rows);
    if (w.ssm_dt_b) a.dt_bias = ops::f32_vector(*w.ssm_dt_b, S.n_head);
    a.a = ops::f32_vector(*w.ssm_a, S.n_head);
    if (w.ssm_d) a.d = ops::f32_vector(*w.ssm_d, S.n_head);
    a.y = ops::f32_rows(state_.y(), T, S.d_inner);
    s.mark("ssm_scan");
    ops::ssm_scan(s, a);
    s.barrier("the gated scan output is complete before its grouped norm");

    if (w.ssm_norm) {
        s.mark("ssm_norm");
        const ops::TensorView y = ops::f32_rows(state_.y(), T, S.d_inner);
        ops::ssm_group_rms_norm(s, y, w.ssm_norm, y, S.n_group, r.spec.norm_eps);
        s.barrier("the normalised mixer output is complete before the out-projection reads it");
    }
    r.add_block_output(w.ssm_out, state_.y(), S.d_inner, nullptr, nullptr);
}

}  // namespace vkllm::model

namespace vkllm::model {

void Mamba1MixerBlock::record(Recording& r) const {
    const int l = layer_, T = r.n_tokens;
    const SsmSpec& S = r.spec.layers[size_t(l)].ssm;
    const LayerWeights& w = r.w.layers[size_t(l)];
    const RecurrentState::Layer& st = state_.layer(l);
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const int64_t D = S.d_inner, N = S.d_state, R = S.dt_rank;

    // [x | z] = W_in norm(x) (decode's RMSNorm may run inside the matvec).
    MatmulInputs mi = r.normed_inputs(sc.x, 0, T, r.spec.n_embd, w.attn_norm, w.attn_norm_b, {&w.ssm_in},
                                      "the normalised mixer input is complete before the in-projection reads it", sc.h);
    s.mark("matmul");
    mi.matmul(s, w.ssm_in, state_.in_proj(), 0, T);
    s.barrier("the in-projection is complete before the convolution reads x");

    // x = silu(conv1d(x, carrying the conv state) + b_conv), packed [T][d_inner].
    ops::SsmConvArgs c;
    c.x = ops::f32_rows(state_.in_proj(), T, D, 0, 2 * D);
    c.state = ops::f32_rows(st.conv, D, S.d_conv - 1);
    c.w = ops::f32_rows(*w.ssm_conv1d, D, S.d_conv);
    if (w.ssm_conv1d_b) c.bias = ops::f32_vector(*w.ssm_conv1d_b, D);
    c.y = ops::f32_rows(state_.xbc(), T, D);
    c.silu = true;
    s.mark("ssm_conv");
    ops::ssm_conv(s, c);
    s.barrier("the convolved x is complete before x_proj reads it");

    // x_proj's rows in two matmuls, so each output is packed: dt_low [T][dt_rank] and B | C
    // [T][2 d_state] (the same dot products as the one x_proj, row for row).
    const uint64_t bc_at = uint64_t(T) * uint64_t(R);  // element where B | C start in x_db
    MatmulInputs xi = r.prepare_inputs(state_.xbc(), 0, T, int(D), {&w.ssm_x_dt, &w.ssm_x_bc});
    s.mark("matmul");
    xi.matmul(s, w.ssm_x_dt, state_.x_db(), 0, T);
    xi.matmul(s, w.ssm_x_bc, state_.x_db(), bc_at, T);
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
    MatmulInputs di = r.prepare_inputs(state_.x_db(), 0, T, int(R), {&w.ssm_dt});
    s.mark("matmul");
    di.matmul(s, w.ssm_dt, state_.dt(), 0, T);
    s.barrier("dt_proj is complete before its bias");
    s.mark("add_bias");
    ops::add_bias(s, ops::f32_rows(state_.dt(), T, D), ops::f32_vector(*w.ssm_dt_b, D));
    s.barrier("dt is complete before the scan reads it");

    // y = (scan(x, dt, A, B, C; carrying the SSM state) + D x) * silu(z).
    ops::SsmScanMamba1Args a;
    a.state = ops::f32_rows(st.ssm, D, N);
    a.x = ops::f32_rows(state_.xbc(), T, D);
    a.dt = ops::f32_rows(state_.dt(), T, D);
    a.b = ops::f32_rows(state_.x_db(), T, N, bc_at, 2 * N);
    a.c = ops::f32_rows(state_.x_db(), T, N, bc_at + uint64_t(N), 2 * N);
    a.z = ops::f32_rows(state_.in_proj(), T, D, uint64_t(D), 2 * D);
    a.a = ops::f32_rows(*w.ssm_a, D, N);
    a.d = ops::f32_vector(*w.ssm_d, D);
    a.y = ops::f32_rows(state_.y(), T, D);
    s.mark("ssm_scan");
    ops::ssm_scan_mamba1(s, a);
    s.barrier("the gated scan output is complete before the out-projection reads it");
    r.add_block_output(w.ssm_out, state_.y(), int(D), nullptr, nullptr);
}

}  // namespace vkllm::model
