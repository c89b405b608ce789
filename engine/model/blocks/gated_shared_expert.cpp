#include "model/blocks/gated_shared_expert.h"

#include <string>

#include "ops/ops.h"
#include "ops/rwkv_ops.h"

namespace vkllm::model {

void GatedSharedExpertBlock::record(Recording& r) const {
    const int l = layer_, T = r.n_tokens;
    const MoeSpec& moe = r.spec.layers[size_t(l)].ffn.moe;
    const LayerWeights& w = r.w.layers[size_t(l)];
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const int64_t E = r.spec.n_embd, ff = moe.n_ff_shared_gated;
    if (uint64_t(T) * uint64_t(ff) * 4 > sc.gate.size() || !w.ffn_norm)
        throw ModelError("layer " + std::to_string(l) + ": a gated shared expert of " + std::to_string(ff) +
                         " needs a normalised FFN input and the FFN scratch to hold its rows");
    // The per-token gate logit goes to the routing's weight buffer, free once the routed experts
    // are combined: moe_combine then reads it as the one weight of each token's one "expert".
    Scratch::Moe& m = sc.moe;
    const ops::TensorView h = ops::f32_rows(sc.h, T, E), logit = ops::f32_rows(m.weights, T, 1);
    MatmulInputs mi = quantized_inputs(r, h, {&w.gate_sh, &w.up_sh, &w.gate_inp_sh});  // decode: one quantized copy
    s.mark("matmul");
    mi.matmul(s, w.gate_sh, ops::f32_rows(sc.gate, T, ff));
    mi.matmul(s, w.up_sh, ops::f32_rows(sc.up, T, ff));
    mi.matmul(s, w.gate_inp_sh, logit);
    s.barrier("the shared expert's gate, up and gate logit are complete before SwiGLU and the sigmoid");
    s.mark("swiglu");
    const ops::TensorView act = ops::f32_rows(sc.gate, T, ff);
    ops::swiglu(s, act, ops::f32_rows(sc.up, T, ff), act);
    ops::rwkv_lora_act(s, logit, logit, ops::RwkvLoraAct::Sigmoid);
    s.barrier("the shared expert's activation and gate are complete before its down projection");
    MatmulInputs di = r.prepare_inputs(act, {&w.down_sh});
    s.mark("matmul");
    di.matmul(s, w.down_sh, ops::f32_rows(m.down, T, E));
    s.barrier("the shared expert's output is complete before its gated add");
    ops::MoeRouting one{&m.experts, &m.weights, nullptr, T, 1};
    s.mark("moe_combine");
    ops::moe_combine(s, ops::f32_rows(m.down, T, E), one, r.residual(T), /*accumulate=*/true);
    s.barrier("the residual stream is complete before the next layer reads it");
}

}  // namespace vkllm::model
