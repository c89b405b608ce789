#include "model/blocks/rwkv_channel_mix.h"

#include "ops/activation_ops.h"
#include "ops/rwkv_ops.h"

namespace vkllm::model {

void record_rwkv7_channel_mix(gpu::Stream& s, const RwkvSpec& spec, const RwkvLayerWeights& w, const RwkvState& state,
                              int layer, const ops::TensorView& h, const RwkvMatmul& matmul) {
    const int64_t T = h.rows, C = spec.n_embd;
    const ops::TensorView xk = ops::f32_rows(state.mixed(), T, C);
    s.mark("rwkv_shift_mix");
    // the channel mix's shift is the second half of the layer's shift state
    ops::rwkv_shift_mix(s, h, ops::f32_vector(state.layer(layer).shift, C, uint64_t(C)), ops::f32_rows(*w.cm_lerp, 1, C),
                        xk);
    s.barrier("the shifted channel-mix input is complete before the key projection reads it");
    const ops::TensorView k = ops::f32_rows(state.ffn(), T, spec.n_ff);
    s.mark("matmul");
    matmul(w.cm_key, xk, k, false);
    s.barrier("the key projection is complete before its squared ReLU");
    s.mark("relu_sqr");
    ops::relu_sqr(s, k, k);
    s.barrier("the squared keys are complete before the value projection reads them");
}

void RwkvChannelMixBlock::record(Recording& r) const {
    const RwkvLayerWeights& w = weights_.layers[size_t(layer_)];
    const ops::TensorView h = ops::f32_rows(r.scratch.h, r.n_tokens, spec_.n_embd);
    r.norm(r.residual(r.n_tokens), w.ffn_norm, w.ffn_norm_b, h);
    r.s.barrier("the normalised channel-mix input is complete before the token shift reads it");
    record_rwkv7_channel_mix(r.s, spec_, w, state_, layer_, h, recording_matmul(r));
    r.add_block_output(w.cm_value, ops::f32_rows(state_.ffn(), r.n_tokens, spec_.n_ff), nullptr, nullptr);
}

}  // namespace vkllm::model
