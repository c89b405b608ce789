#include "model/blocks/short_conv.h"

#include "ops/ssm_ops.h"

namespace vkllm::model {

void ShortConvBlock::record(Recording& r) const {
    const int T = r.n_tokens;
    const ShortConvSpec& S = r.spec.layers[size_t(layer_)].shortconv;
    const LayerWeights& w = r.w.layers[size_t(layer_)];
    const int64_t n = S.channels, rows = S.in_proj_rows();

    // [B | C | u] = W_in norm(x), rows of the state's in-projection buffer.
    MatmulInputs mi = r.normed_inputs(r.residual(T), w.attn_norm, w.attn_norm_b, {&w.shortconv_in},
                                      "the normalised mixer input is complete before the in-projection reads it",
                                      ops::f32_rows(r.scratch.h, T, r.spec.n_embd));
    r.s.mark("matmul");
    mi.matmul(r.s, w.shortconv_in, ops::f32_rows(state_.in_proj(), T, rows));
    r.s.barrier("the in-projection is complete before the convolution reads B, C and u");

    // y = C * conv1d(B * u): B, C and u are column ranges of the in-projection's rows.
    ops::SsmConvArgs c;
    c.in_gate = ops::f32_rows(state_.in_proj(), T, n, 0, rows);
    c.out_gate = ops::f32_rows(state_.in_proj(), T, n, uint64_t(n), rows);
    c.x = ops::f32_rows(state_.in_proj(), T, n, uint64_t(2 * n), rows);
    c.state = ops::f32_rows(state_.layer(layer_).conv, n, S.l_cache - 1);
    c.w = ops::f32_rows(*w.shortconv_conv, n, S.l_cache);
    c.y = ops::f32_rows(state_.y(), T, n);
    c.silu = false;
    r.s.mark("ssm_conv");
    ops::ssm_conv(r.s, c);
    r.s.barrier("the gated convolution is complete before the out-projection reads it");

    r.add_block_output(w.shortconv_out, ops::f32_rows(state_.y(), T, n), nullptr, nullptr);
}

}  // namespace vkllm::model
