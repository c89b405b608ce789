#include "model/blocks/dense_ffn.h"

#include <stdexcept>

#include "ops/activation_ops.h"
#include "ops/ops.h"

namespace vkllm::model {
namespace {
constexpr uint64_t F = sizeof(float);
}

void DenseFfnBlock::record(Recording& r) const {
    const int l = layer_, T = r.n_tokens;
    const LayerSpec& L = r.spec.layers[size_t(l)];
    const LayerWeights& w = r.w.layers[size_t(l)];
    gpu::Stream& s = r.s;
    Scratch& sc = r.scratch;
    const bool probed = r.probes.ffn_down;
    const int64_t n = int64_t(T) * L.ffn.n_ff;
    const ops::TensorView gate = ops::f32_rows(sc.gate, T, L.ffn.n_ff);

    // Decode's RMSNorm runs inside the gate/up (or up) matvecs (normed_inputs).
    // Decode's quantised gate and up read one quantized copy of their input (quantized_inputs).
    auto inputs = [&](std::initializer_list<const ops::Weight*> ws) {
        return w.ffn_norm ? quantized_inputs(r, r.residual(T), w.ffn_norm, w.ffn_norm_b, ws,
                                             "the normalised FFN input is complete before the gate/up projections read it",
                                             ops::f32_rows(sc.h, T, r.spec.n_embd))
                          : quantized_inputs(r, r.residual(T), ws);
    };
    if (L.ffn.gated) {
        MatmulInputs mi = inputs({&w.gate, &w.up});
        const bool silu = L.ffn.activation == Activation::SiLU;
        // Biases (Jais) are added to gate and up before the activation, so the fused decode
        // matvec, which never writes them, is taken only without them.
        const bool biased = w.b_gate || w.b_up;
        if (T == 1 && !biased && ops::matvec_swiglu_fits(r.ctx, w.gate, w.up)) {
            // Decode: gate, up and the gated activation in one dispatch (as the ops below would
            // compute it, bit for bit); the gate and up rows never reach memory.
            s.mark(silu ? "matvec_swiglu" : "matvec_geglu");
            mi.matvec_swiglu(s, w.gate, w.up, ops::f32_rows(sc.gate, 1, w.gate.n_out),
                             silu ? ops::GluActivation::SiLU
                                  : r.policy.round ? ops::GluActivation::GeluFp16Table : ops::GluActivation::Gelu);
        } else {
            s.mark("matmul");
            mi.matmul(s, w.gate, ops::f32_rows(sc.gate, T, w.gate.n_out));
            mi.matmul(s, w.up, ops::f32_rows(sc.up, T, w.up.n_out));
            s.barrier("gate and up are complete before the gated activation combines them");
            const ops::TensorView up = ops::f32_rows(sc.up, T, L.ffn.n_ff);
            if (biased) {
                s.mark("add_bias");
                if (w.b_gate) ops::add_bias(s, gate, ops::f32_vector(*w.b_gate, L.ffn.n_ff));
                if (w.b_up) ops::add_bias(s, up, ops::f32_vector(*w.b_up, L.ffn.n_ff));
                s.barrier("the gate and up biases are added before the gated activation");
            }
            s.mark(silu ? "swiglu" : "geglu");
            if (silu) ops::swiglu(s, gate, up, gate);
            else ops::geglu(s, gate, up, gate, /*fp16_table=*/r.policy.round);
        }
    } else {
        MatmulInputs mi = inputs({&w.up});
        s.mark("matmul");
        mi.matmul(s, w.up, ops::f32_rows(sc.gate, T, w.up.n_out));
        s.barrier("the up projection is complete before its bias and activation");
        if (w.b_up) {
            s.mark("add_bias");
            ops::add_bias(s, gate, ops::f32_vector(*w.b_up, L.ffn.n_ff));
            s.barrier("the up bias is added before the activation");
        }
        switch (L.ffn.activation) {
            case Activation::ReluSqr: s.mark("relu_sqr"); ops::relu_sqr(s, gate, gate); break;
            case Activation::GeluErf: s.mark("gelu"); ops::gelu_erf(s, gate, gate); break;
            case Activation::GeluTanh: s.mark("gelu"); ops::gelu(s, gate, gate, /*fp16_table=*/r.policy.round); break;
            case Activation::SiLU: throw std::logic_error("DenseFfnBlock: an ungated SiLU FFN (refused by Forward)");
        }
    }
    s.barrier("the activation is complete before the down projection reads it");
    if (probed) {
        s.mark("copy");
        s.copy(sc.gate, 0, r.probe.ffn_in(l), 0, uint64_t(n) * F);
    }
    r.add_block_output(w.down, gate, w.b_down, w.post_ffn_norm, probed ? &r.probe.ffn_out(l) : nullptr,
                       w.post_ffn_norm_b, L.norm_placement == NormPlacement::PostResidual);
    if (w.down_super) {  // exact super weights (quantize --keep-super-weights): x += delta * a[col] at row
        s.mark("super_correction");
        ops::super_correction(s, ops::f32_rows(sc.x, T, r.spec.n_embd), gate, *w.down_super, w.n_down_super);
        if (probed)
            ops::super_correction(s, ops::f32_rows(r.probe.ffn_out(l), T, r.spec.n_embd), gate, *w.down_super,
                                  w.n_down_super);
        s.barrier("the corrected residual stream is complete before the next layer reads it");
    }
}

}  // namespace vkllm::model
