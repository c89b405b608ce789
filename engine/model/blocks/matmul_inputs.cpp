#include "model/blocks/matmul_inputs.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "gpu/device.h"
#include "model/blocks/recording.h"
#include "model/spec.h"

namespace vkllm::model {

namespace {

// A 0|1 switch from the environment: `fallback` when unset or empty, ModelError for another value.
bool env_switch(const char* name, bool fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    if (std::string(v) != "0" && std::string(v) != "1")
        throw ModelError(std::string(name) + " must be 0 or 1, got '" + v + "'");
    return std::string(v) == "1";
}

}  // namespace

ActivationPolicy ActivationPolicy::for_device(const gpu::Context& ctx, bool round_activations) {
    ActivationPolicy p;
    p.round = round_activations;
    if (const char* v = std::getenv("VKLLM_MATVEC_ROUNDS_X"); v && std::string(v) == "0") p.matvec_rounds_x = false;
    const bool gpu = ctx.caps().type != "cpu";
    // Decode's pre-norm inside the matvecs: on a GPU it saves a dispatch and a barrier per norm,
    // which decide small-model decode there; on a CPU driver (lavapipe) every workgroup's own
    // sum of x^2 costs more than they do (134M Q8_0 decode 30% slower), so it stays a dispatch.
    p.norm_in_matvec = env_switch("VKLLM_NORM_IN_MATVEC", gpu);
    p.quantize_single_input = env_switch("VKLLM_MATVEC_XQ_SINGLE", gpu);
    p.matvec_quantizes_x = env_switch("VKLLM_MATVEC_XQ", p.matvec_quantizes_x);
    p.stack_qkv = env_switch("VKLLM_STACK_QKV", p.stack_qkv);
    return p;
}

ops::TensorView MatmulInputs::input(const ops::Weight& w) const {
    if (quantized[size_t(ops::activation_rounding(w.type))])
        throw std::logic_error("MatmulInputs::input: this weight's input is quantized for the matvecs alone");
    const gpu::Buffer* r = rounded[size_t(ops::activation_rounding(w.type))];
    return r ? ops::f32_rows(*r, x.rows, x.cols) : x;
}

ops::TensorView MatmulInputs::expert_input(const ops::ExpertWeights& e) const { return input(rounding_key(e)); }

void MatmulInputs::matmul(gpu::Stream& s, const ops::Weight& w, const ops::TensorView& y, bool accumulate) const {
    if (const auto& q = quantized[size_t(ops::activation_rounding(w.type))]) {
        ops::matvec_quantized(s, w, *q, y, accumulate);
        return;
    }
    ops::matmul(s, w, input(w), y, accumulate, rounds_in_matvec(w.type), norm.weight ? &norm : nullptr);
}

void MatmulInputs::matvec_swiglu(gpu::Stream& s, const ops::Weight& gate, const ops::Weight& up,
                                 const ops::TensorView& y, ops::GluActivation act) const {
    if (const auto& q = quantized[size_t(ops::activation_rounding(gate.type))]) {
        ops::matvec_swiglu_quantized(s, gate, up, *q, y, act);
        return;
    }
    ops::matvec_swiglu(s, gate, up, input(gate), y, rounds_in_matvec(gate.type), act, norm.weight ? &norm : nullptr);
}

bool MatmulInputs::can_stack(const gpu::Context& ctx, std::span<const ops::Weight* const> ws) const {
    if (x.rows != 1 || ws.empty()) return false;
    for (const ops::Weight* w : ws)
        if (w->type != ws[0]->type) return false;  // one type: one input, rounded or quantized alike
    return ops::matvec_stack_fits(ctx, ws);
}

void MatmulInputs::matvec_stacked(gpu::Stream& s, std::span<const ops::Weight* const> ws,
                                  const ops::TensorView& y) const {
    const ops::Weight& w = *ws[0];
    if (const auto& q = quantized[size_t(ops::activation_rounding(w.type))]) {
        ops::matvec_stacked_quantized(s, ws, *q, y);
        return;
    }
    ops::matvec_stacked(s, ws, input(w), y, rounds_in_matvec(w.type), norm.weight ? &norm : nullptr);
}

void MatmulInputs::moe_matmul(gpu::Stream& s, const ops::ExpertWeights& e, bool x_per_pair,
                              const ops::MoeRouting& r, const ops::TensorView& y) const {
    if (const ops::QuantizedActs* q = quantized_for(e.type)) {
        ops::moe_matvec_quantized(s, e, *q, x_per_pair, r, y);
        return;
    }
    ops::moe_matmul(s, e, expert_input(e), x_per_pair, r, y, rounds_in_matvec(e.type));
}

void MatmulInputs::moe_matvec_swiglu(gpu::Stream& s, const ops::ExpertWeights& gate, const ops::ExpertWeights& up,
                                     bool x_per_pair, const ops::MoeRouting& r, const ops::TensorView& y) const {
    if (const ops::QuantizedActs* q = quantized_for(gate.type)) {
        ops::moe_matvec_swiglu_quantized(s, gate, up, *q, x_per_pair, r, y);
        return;
    }
    ops::moe_matvec_swiglu(s, gate, up, expert_input(gate), x_per_pair, r, y, rounds_in_matvec(gate.type));
}

const ops::QuantizedActs* MatmulInputs::quantized_for(ops::TensorType weight_type) const {
    const auto& q = quantized[size_t(ops::activation_rounding(weight_type))];
    return q ? &*q : nullptr;
}

bool MatmulInputs::rounds_in_matvec(ops::TensorType weight_type) const {
    return in_matvec[size_t(ops::activation_rounding(weight_type))];
}

ops::Weight rounding_key(const ops::ExpertWeights& e) {
    ops::Weight w;
    w.type = e.type;
    return w;
}

namespace {

// True when decode's matvecs of `weights` can all read x (its rows: one token, or the pairs of
// one routed token) quantized beforehand into the scratch's buffer of each block kind.
bool quantizes(const Recording& r, const ops::TensorView& x, std::initializer_list<const ops::Weight*> weights) {
    if (!r.policy.round || !r.policy.matvec_quantizes_x || r.imatrix || x.rows < 1 || !x.packed()) return false;
    for (const ops::Weight* w : weights) {
        const ops::ActRounding mode = ops::activation_rounding(w->type);
        if ((mode != ops::ActRounding::Q8_32 && mode != ops::ActRounding::Q8_256) || !ops::matvec_reads_quantized(w->type) ||
            x.cols % ops::rounding_block(mode))
            return false;
        const ops::QuantizedActs q{&r.scratch.rounded[size_t(mode)], 0, mode, x.rows, x.cols};
        if (q.bytes() > r.scratch.rounded[size_t(mode)].size()) return false;
    }
    return true;
}

// Quantizes src once per block kind of the weights (norm: folded in), then one barrier.
MatmulInputs quantize_for(Recording& r, const ops::TensorView& src, std::initializer_list<const ops::Weight*> weights,
                          const ops::MatvecNorm* norm) {
    MatmulInputs in;
    in.x = src;
    for (const ops::Weight* w : weights) {
        const ops::ActRounding mode = ops::activation_rounding(w->type);
        if (in.quantized[size_t(mode)]) continue;
        // The quants, scales and sums fit the buffer of floats the rounded copy would take (quantizes).
        const ops::QuantizedActs q = ops::quantized_acts(r.scratch.rounded[size_t(mode)], mode, src.rows, src.cols);
        r.s.mark("quantize_act");
        ops::quantize_activations(r.s, src, q, norm);
        in.quantized[size_t(mode)] = q;
    }
    r.s.barrier("the quantized activations are complete before the matvecs read them");
    return in;
}

}  // namespace

MatmulInputs quantized_inputs(Recording& r, const ops::TensorView& x, std::initializer_list<const ops::Weight*> weights) {
    if (x.rows != 1 || !quantizes(r, x, weights)) return r.prepare_inputs(x, weights);
    return quantize_for(r, x, weights, nullptr);
}

MatmulInputs expert_inputs(Recording& r, const ops::TensorView& x, std::initializer_list<const ops::Weight*> keys,
                           const ops::MoeRouting& routing, bool alone) {
    bool rounds_itself = r.policy.matvec_rounds_x;
    for (const ops::Weight* k : keys) rounds_itself = rounds_itself && ops::matvec_rounds_activations(k->type);
    const bool wanted = !alone || r.policy.quantize_single_input || !rounds_itself;
    if (routing.n_tokens != 1 || routing.sorted || !wanted || !quantizes(r, x, keys))
        return r.prepare_inputs(x, keys, routing.sorted ? RoundAt::Dispatch : RoundAt::ExpertMatvec);
    return quantize_for(r, x, keys, nullptr);
}

MatmulInputs quantized_inputs(Recording& r, const ops::TensorView& x, const gpu::Buffer* norm_w,
                              const gpu::Buffer* norm_b, std::initializer_list<const ops::Weight*> weights,
                              const char* why, const ops::TensorView& out) {
    if (x.rows != 1 || !quantizes(r, x, weights)) return r.normed_inputs(x, norm_w, norm_b, weights, why, out);
    // An RMSNorm goes into the quantize dispatch on every device: it saves the norm's dispatch and
    // barrier, and unlike the matvecs' fused norm (ActivationPolicy::norm_in_matvec) it repeats the
    // sum of x^2 in a few workgroups only (one per 256 blocks of 32, or per block of 256), which
    // compute it as the norm's own dispatch does: the quants are the same either way.
    if (r.spec.norm == NormKind::RMSNorm && norm_w && !norm_b) {
        const ops::MatvecNorm norm{norm_w, 0, r.spec.norm_eps};
        return quantize_for(r, x, weights, &norm);
    }
    r.norm(x, norm_w, norm_b, out);
    r.s.barrier(why);
    return quantize_for(r, out, weights, nullptr);
}

MatmulInputs single_matvec_inputs(Recording& r, const ops::TensorView& x, const ops::Weight& w) {
    const bool rounds_itself = r.policy.matvec_rounds_x && ops::matvec_rounds_activations(w.type);
    if (r.policy.quantize_single_input || !rounds_itself) return quantized_inputs(r, x, {&w});
    return r.prepare_inputs(x, {&w});
}

}  // namespace vkllm::model
