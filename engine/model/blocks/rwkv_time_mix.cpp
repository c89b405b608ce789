#include "model/blocks/rwkv_time_mix.h"

#include "ops/rwkv_ops.h"

namespace vkllm::model {

namespace {
// The columns of RwkvState::proj()'s rows.
enum ProjCol { R = 0, W, K, V, A, B, G, kProjCols };
}  // namespace

void record_rwkv7_time_mix(gpu::Stream& s, const RwkvSpec& spec, const RwkvLayerWeights& w, const RwkvState& state,
                           int layer, const ops::TensorView& h, const RwkvMatmul& matmul,
                           const StateProbeRecorder* probe) {
    const int64_t T = h.rows, C = spec.n_embd;
    const uint64_t TC = uint64_t(T) * uint64_t(C);
    const gpu::Buffer& shift = state.layer(layer).shift;
    auto mix = [&](int m) { return ops::f32_rows(state.mixed(), T, C, uint64_t(m) * TC); };
    auto col = [&](ProjCol c) { return ops::f32_rows(state.proj(), T, C, uint64_t(c) * uint64_t(C), kProjCols * C); };
    // The loras' inner rows, each packed (a matmul's input): decay | iclr | value | gate.
    const uint64_t t = uint64_t(T);
    const ops::TensorView w_h = ops::f32_rows(state.lora(), T, spec.decay_rank);
    const ops::TensorView a_h = ops::f32_rows(state.lora(), T, spec.iclr_rank, t * uint64_t(spec.decay_rank));
    const ops::TensorView v_h =
        ops::f32_rows(state.lora(), T, spec.value_rank, t * uint64_t(spec.decay_rank + spec.iclr_rank));
    const ops::TensorView g_h = ops::f32_rows(state.lora(), T, spec.gate_rank,
                                              t * uint64_t(spec.decay_rank + spec.iclr_rank + spec.value_rank));
    // Layer 0's values are every later layer's v_first; the others mix theirs with it.
    const bool first = layer == 0;
    const ops::TensorView v_first = ops::f32_rows(state.v_first(), T, C);
    const ops::TensorView v = first ? v_first : col(V);

    s.mark("rwkv_shift_mix");
    ops::rwkv_shift_mix(s, h, ops::f32_vector(shift, C), ops::f32_rows(*w.lerp, 6, C),
                        ops::f32_rows(state.mixed(), 6 * T, C));
    s.barrier("the six lerps are complete before the projections read them");

    s.mark("matmul");
    matmul(w.receptance, mix(0), col(R), false);
    matmul(w.w1, mix(1), w_h, false);
    matmul(w.key, mix(2), col(K), false);
    matmul(w.value, mix(3), v, false);
    if (!first) matmul(w.v1, mix(3), v_h, false);
    matmul(w.a1, mix(4), a_h, false);
    matmul(w.g1, mix(5), g_h, false);
    s.barrier("the projections and the loras' first halves are complete before their activations");
    s.mark("rwkv_lora_act");
    ops::rwkv_lora_act(s, w_h, w_h, ops::RwkvLoraAct::Tanh);
    ops::rwkv_lora_act(s, g_h, g_h, ops::RwkvLoraAct::Sigmoid);
    s.barrier("the loras' inner activations are complete before their second halves");
    s.mark("matmul");
    matmul(w.w2, w_h, col(W), false);
    matmul(w.a2, a_h, col(A), false);
    matmul(w.g2, g_h, col(G), false);
    if (!first) matmul(w.v2, v_h, ops::f32_rows(state.v_mix(), T, C), false);
    s.barrier("the loras are complete before the decay, the key and the value residual");

    if (!first) {
        s.mark("rwkv7_value_mix");
        ops::rwkv7_value_mix(s, v, v_first, ops::f32_rows(state.v_mix(), T, C), ops::f32_vector(*w.v0, C));
    }
    s.mark("rwkv7_wkv_inputs");
    ops::Rwkv7InputsArgs in;
    in.n_head = spec.n_head(), in.head_size = spec.head_size;
    in.w = col(W), in.k = col(K), in.a = col(A), in.b = col(B);
    in.w0 = ops::f32_vector(*w.w0, C), in.a0 = ops::f32_vector(*w.a0, C);
    in.k_k = ops::f32_vector(*w.k_k, C), in.k_a = ops::f32_vector(*w.k_a, C);
    ops::rwkv7_wkv_inputs(s, in);
    s.barrier("wkv7's operands are complete before the delta rule reads them");

    ops::RwkvWkv7Args a;
    a.n_head = spec.n_head(), a.head_size = spec.head_size;
    a.state = ops::f32_rows(state.layer(layer).wkv, C, spec.head_size);
    a.r = col(R), a.w = col(W), a.k = col(K), a.v = v, a.a = col(A), a.b = col(B);
    a.out = ops::f32_rows(state.out(), T, C);
    if (probe) probe->tap_rwkv7(s, layer, a);
    s.mark("rwkv_wkv7");
    ops::rwkv_wkv7(s, a);
    s.barrier("the delta rule's output is complete before its group norm");

    s.mark("rwkv7_wkv_output");
    ops::Rwkv7OutputArgs o;
    o.n_head = spec.n_head(), o.head_size = spec.head_size;
    o.o = a.out, o.r = col(R), o.k = col(K), o.v = v, o.g = col(G);
    o.ln_w = ops::f32_vector(*w.ln, C), o.ln_b = ops::f32_vector(*w.ln_b, C), o.r_k = ops::f32_vector(*w.r_k, C);
    ops::rwkv7_wkv_output(s, o);
    s.barrier("the time mix's output is complete before the output projection reads it");
}

RwkvMatmul recording_matmul(Recording& r) {
    return [&r](const ops::Weight& w, const ops::TensorView& x, const ops::TensorView& y, bool accumulate) {
        const bool rounded = r.needs_rounding_dispatch(w, x.rows, x.cols, RoundAt::Matvec);
        MatmulInputs in = r.prepare_inputs(x, {&w});
        in.matmul(r.s, w, y, accumulate);
        if (rounded) r.s.barrier("the rounded input is read before the next matmul's rounding reuses its buffer");
    };
}

void RwkvTimeMixBlock::record(Recording& r) const {
    const RwkvLayerWeights& w = weights_.layers[size_t(layer_)];
    const ops::TensorView h = ops::f32_rows(r.scratch.h, r.n_tokens, spec_.n_embd);
    r.norm(r.residual(r.n_tokens), w.attn_norm, w.attn_norm_b, h);
    r.s.barrier("the normalised time-mix input is complete before the token shift reads it");
    record_rwkv7_time_mix(r.s, spec_, w, state_, layer_, h, recording_matmul(r), &r.probe.state());
    r.add_block_output(w.output, ops::f32_rows(state_.out(), r.n_tokens, spec_.n_embd), nullptr, nullptr);
}

}  // namespace vkllm::model
