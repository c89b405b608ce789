#include "model/blocks/moe_ffn.h"

#include "model/imatrix_recorder.h"
#include "ops/ops.h"

namespace vkllm::model {
namespace {
constexpr uint64_t F = sizeof(float);
}

void MoeFfnBlock::record(Recording& r) const {
    const int l = layer_, T = r.n_tokens;
    const MoeSpec& moe = r.spec.layers[size_t(l)].ffn.moe;
    const LayerWeights& w = r.w.layers[size_t(l)];
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    Scratch::Moe& m = sc.moe;
    const int E = r.spec.n_embd;
    const int64_t pairs = int64_t(T) * moe.top_k;
    const ops::TensorView router_logits = ops::f32_rows(m.router_logits, T, moe.n_expert);

    // The norm stays a dispatch: the router, the experts and the shared expert all read it.
    ops::TensorView in = r.residual(T);
    if (w.ffn_norm) {
        const ops::TensorView h = ops::f32_rows(sc.h, T, E);
        r.norm(in, w.ffn_norm, w.ffn_norm_b, h);
        s.barrier("the normalised FFN input is complete before the gate/up projections read it");
        in = h;
    }
    MatmulInputs mi = r.prepare_inputs(in, {&w.router});
    s.mark("matmul");
    mi.matmul(s, w.router, router_logits);
    s.barrier("router logits are complete before their bias or routing");
    if (w.router_bias) {
        s.mark("add_bias");
        ops::add_bias(s, router_logits, ops::f32_vector(*w.router_bias, moe.n_expert));
        s.barrier("biased router logits are complete before routing reads them");
    }
    ops::RouterParams rp;
    rp.n_expert = moe.n_expert;
    rp.top_k = moe.top_k;
    rp.gating = moe.sigmoid ? ops::RouterParams::Sigmoid : ops::RouterParams::Softmax;
    rp.norm_topk = moe.norm_topk;
    rp.weights_scale = moe.weights_scale;
    rp.softmax_after_topk = moe.softmax_after_topk;
    rp.selection_bias = w.selection_bias;
    rp.n_group = moe.n_group;
    rp.topk_group = moe.topk_group;
    s.mark("moe_route");
    ops::moe_route(s, router_logits, rp, ops::i32_rows(m.experts, T, moe.top_k), ops::f32_rows(m.weights, T, moe.top_k));
    s.barrier("the chosen experts and weights are complete before grouping and the expert matmuls");
    if (r.probes.routing || r.probes.ffn_down) r.probe.copy_routing(s, l, m.experts, m.weights, T);
    ops::MoeRouting routing{&m.experts, &m.weights, nullptr, T, moe.top_k};
    if (T > 1) {
        ops::moe_sort(s, ops::i32_vector(m.experts, pairs), moe.n_expert,
                      ops::i32_vector(m.sorted, int64_t(ops::moe_sort_ints(moe.n_expert, pairs))));
        s.barrier("pairs grouped by expert are complete before the tiled expert matmuls");
        routing.sorted = &m.sorted;
    }
    if (r.probes.expert_load) ops::moe_expert_load(s, routing, ops::f32_rows(r.probe.expert_load(l), moe.n_expert, 2));

    const ops::Weight gate_key = rounding_key(w.gate_exps), up_key = rounding_key(w.up_exps);
    const ops::TensorView gate = ops::f32_rows(m.gate, pairs, moe.n_ff_expert);
    // Llama 4 scales each expert's input by its weight, and sums the outputs unweighted.
    ops::TensorView expert_in = in;
    if (moe.weight_input) {
        expert_in = ops::f32_rows(m.input, pairs, E);
        s.mark("moe_input");
        ops::moe_weighted_input(s, in, routing, expert_in);
        s.barrier("weighted expert inputs are complete before the expert matmuls read them");
    }
    // Decode (no sort): the expert matvecs read x quantized once (expert_inputs) or round it
    // themselves, and gate, up and SwiGLU are one dispatch where gate and up share a buffer (no
    // expert bias, not gpt-oss's clamped form).
    mi = expert_inputs(r, expert_in, {&gate_key, &up_key}, routing);
    if (r.imatrix) r.imatrix->expert_input(s, expert_in, moe.weight_input, routing, {&w.gate_exps, &w.up_exps});
    if (T == 1 && moe.swiglu_alpha <= 0 && ops::moe_matvec_swiglu_fits(r.ctx, w.gate_exps, w.up_exps)) {
        s.mark("moe_matvec_swiglu");
        mi.moe_matvec_swiglu(s, w.gate_exps, w.up_exps, moe.weight_input, routing, gate);
    } else {
        s.mark("moe_matmul");
        const ops::TensorView up = ops::f32_rows(m.up, pairs, moe.n_ff_expert);
        mi.moe_matmul(s, w.gate_exps, moe.weight_input, routing, gate);
        mi.moe_matmul(s, w.up_exps, moe.weight_input, routing, up);
        s.barrier("expert gate and up outputs are complete before SwiGLU combines them");
        s.mark("swiglu");
        if (moe.swiglu_alpha > 0)
            ops::swiglu_oai(s, gate, up, gate, moe.swiglu_alpha, moe.swiglu_limit);
        else
            ops::swiglu(s, gate, up, gate);
    }
    s.barrier("the experts' SwiGLU is complete before their down projections read it");
    if (r.probes.ffn_down) {
        s.mark("copy");
        s.copy(m.gate, 0, r.probe.moe_in(l), 0, uint64_t(pairs) * uint64_t(moe.n_ff_expert) * F);
    }
    const ops::Weight down_key = rounding_key(w.down_exps);
    mi = expert_inputs(r, gate, {&down_key}, routing, /*alone=*/true);
    if (r.imatrix) r.imatrix->expert_input(s, gate, /*x_per_pair=*/true, routing, {&w.down_exps});
    s.mark("moe_matmul");
    const ops::TensorView down = ops::f32_rows(m.down, pairs, E);
    mi.moe_matmul(s, w.down_exps, /*x_per_pair=*/true, routing, down);
    s.barrier("the experts' outputs are complete before their weighted sum");
    if (r.probes.ffn_down) {
        s.mark("copy");
        s.copy(m.down, 0, r.probe.moe_out(l), 0, uint64_t(pairs) * uint64_t(E) * F);
    }
    ops::MoeRouting combine = routing;
    if (moe.weight_input) combine.weights = &m.ones;
    // Granite's residual multiplier scales the routed sum before it joins the residual stream:
    // s * sum_k w_k y_k = sum_k (s w_k) y_k, so it folds into the combine weights (read by no
    // later op), or into the expert outputs where the weights went into the input (the shared
    // ones). One small dispatch, none where the multiplier is 1.
    if (r.spec.residual_scale != 1.0f) {
        s.mark("scale");
        if (moe.weight_input)
            ops::scale(s, down, r.spec.residual_scale);
        else
            ops::scale(s, ops::f32_rows(m.weights, T, moe.top_k), r.spec.residual_scale);
        s.barrier("the scaled combine inputs are complete before the weighted sum");
    }
    s.mark("moe_combine");
    ops::moe_combine(s, down, combine, ops::f32_rows(sc.x, T, E), /*accumulate=*/true);
    s.barrier("the residual stream is complete before the shared expert or the next layer reads it");
    if (moe.n_ff_shared > 0) record_shared_expert(r, in);
}

void MoeFfnBlock::record_shared_expert(Recording& r, const ops::TensorView& in) const {
    const int l = layer_, T = r.n_tokens;
    const MoeSpec& moe = r.spec.layers[size_t(l)].ffn.moe;
    const LayerWeights& w = r.w.layers[size_t(l)];
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    // Every token, unweighted.
    MatmulInputs mi = quantized_inputs(r, in, {&w.gate_sh, &w.up_sh});  // decode: one quantized copy
    s.mark("matmul");
    mi.matmul(s, w.gate_sh, ops::f32_rows(sc.gate, T, w.gate_sh.n_out));
    mi.matmul(s, w.up_sh, ops::f32_rows(sc.up, T, w.up_sh.n_out));
    s.barrier("the shared expert's gate and up are complete before SwiGLU");
    s.mark("swiglu");
    const ops::TensorView gate = ops::f32_rows(sc.gate, T, moe.n_ff_shared);
    ops::swiglu(s, gate, ops::f32_rows(sc.up, T, moe.n_ff_shared), gate);
    s.barrier("the shared expert's activation is complete before its down projection");
    if (r.probes.ffn_down) {
        s.mark("copy");
        s.copy(sc.gate, 0, r.probe.ffn_in(l), 0, uint64_t(T) * uint64_t(moe.n_ff_shared) * F);
    }
    r.add_block_output(w.down_sh, gate, nullptr, nullptr,
                       r.probes.ffn_down ? &r.probe.ffn_out(l) : nullptr);
}

}  // namespace vkllm::model
