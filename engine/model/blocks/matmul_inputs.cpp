#include "model/blocks/matmul_inputs.h"

#include <cstdlib>
#include <string>

#include "gpu/device.h"
#include "model/spec.h"

namespace vkllm::model {

ActivationPolicy ActivationPolicy::for_device(const gpu::Context& ctx, bool round_activations) {
    ActivationPolicy p;
    p.round = round_activations;
    if (const char* v = std::getenv("VKLLM_MATVEC_ROUNDS_X"); v && std::string(v) == "0") p.matvec_rounds_x = false;
    // Decode's pre-norm inside the matvecs: on a GPU it saves a dispatch and a barrier per norm,
    // which decide small-model decode there; on a CPU driver (lavapipe) every workgroup's own
    // sum of x^2 costs more than they do (134M Q8_0 decode 30% slower), so it stays a dispatch.
    p.norm_in_matvec = ctx.caps().type != "cpu";
    if (const char* v = std::getenv("VKLLM_NORM_IN_MATVEC"); v && *v) {
        if (std::string(v) != "0" && std::string(v) != "1")
            throw ModelError(std::string("VKLLM_NORM_IN_MATVEC must be 0 or 1, got '") + v + "'");
        p.norm_in_matvec = std::string(v) == "1";
    }
    return p;
}

ops::TensorView MatmulInputs::input(const ops::Weight& w) const {
    const gpu::Buffer* r = rounded[size_t(ops::activation_rounding(w.type))];
    return r ? ops::f32_rows(*r, x.rows, x.cols) : x;
}

ops::TensorView MatmulInputs::expert_input(const ops::ExpertWeights& e) const { return input(rounding_key(e)); }

void MatmulInputs::matmul(gpu::Stream& s, const ops::Weight& w, const ops::TensorView& y, bool accumulate) const {
    ops::matmul(s, w, input(w), y, accumulate, rounds_in_matvec(w.type), norm.weight ? &norm : nullptr);
}

void MatmulInputs::matvec_swiglu(gpu::Stream& s, const ops::Weight& gate, const ops::Weight& up,
                                 const ops::TensorView& y, ops::GluActivation act) const {
    ops::matvec_swiglu(s, gate, up, input(gate), y, rounds_in_matvec(gate.type), act, norm.weight ? &norm : nullptr);
}

bool MatmulInputs::rounds_in_matvec(ops::TensorType weight_type) const {
    return in_matvec[size_t(ops::activation_rounding(weight_type))];
}

ops::Weight rounding_key(const ops::ExpertWeights& e) {
    ops::Weight w;
    w.type = e.type;
    return w;
}

}  // namespace vkllm::model
