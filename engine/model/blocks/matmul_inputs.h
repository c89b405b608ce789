// The activations a group of matmuls reads, and the policy that decides how they get there:
// as they are, rounded as llama.cpp's CPU backend rounds them for quantised weights (parity),
// rounded inside the decode matvecs themselves, or normalised inside them.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>

#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "ops/ops.h"

namespace vkllm::gpu { class Context; }

namespace vkllm::model {

struct ActivationPolicy {
    // Quantised matmuls read activations rounded as llama.cpp's CPU backend rounds them
    // (ops::activation_rounding), for parity.
    bool round = true;
    // The decode matvecs round their own inputs (RoundAt::Matvec, ExpertMatvec) unless
    // VKLLM_MATVEC_ROUNDS_X=0 asks for a rounding dispatch first, as larger batches have: a
    // switch for measuring both on a new device (the in-matvec form saves a dispatch and a
    // barrier per input, and repeats the rounding in every workgroup that reads the input).
    bool matvec_rounds_x = true;
    // Decode's RMSNorm inside the matvecs that read it: GPUs; VKLLM_NORM_IN_MATVEC=0|1 forces it.
    // Where decode's inputs are quantized beforehand (quantized_inputs), the quantize dispatch
    // takes the norm instead, on every device.
    bool norm_in_matvec = false;
    // Decode's 8-bit activation blocks quantized once per input, for every matvec that reads it
    // (quantized_inputs), instead of in every workgroup of each; VKLLM_MATVEC_XQ=0 goes back to
    // the rounding above (for measuring both on a new device).
    bool matvec_quantizes_x = true;
    // A matvec that reads its input alone (the attention output, ffn_down) quantizes it first
    // even where the matvec would round x itself (the 32-blocks): on GPUs, where every workgroup
    // of that matvec otherwise re-reads and re-rounds all of x (ffn_down's 14336 floats in each of
    // thousands of workgroups); not on CPU drivers, where the extra dispatch and barrier cost more.
    // The 256-blocks, whose rounding is a dispatch anyway, are quantized on every device.
    // VKLLM_MATVEC_XQ_SINGLE=0|1 forces it.
    bool quantize_single_input = false;
    // A decode step's Q, K and V projections as one stacked matvec (ops::matvec_stacked) where
    // they share a type and a buffer: one launch instead of three, one grid instead of two that
    // leave a GPU mostly idle (K and V: a few hundred rows). VKLLM_STACK_QKV=0 keeps three.
    bool stack_qkv = true;

    // The policy for ctx's device and the environment; throws ModelError for a bad
    // VKLLM_NORM_IN_MATVEC.
    static ActivationPolicy for_device(const gpu::Context& ctx, bool round_activations);
};

// Where activations are rounded for a quantised weight (llama.cpp parity):
//   Matvec        in ops::matmul's one-token matvec when rows == 1, else a rounding dispatch
//   ExpertMatvec  in the expert matvec (ops::moe_matmul / moe_matvec_swiglu without a sort),
//                 whatever the rows
//   Dispatch      always a rounding dispatch (the tiled expert matmul takes x as it is)
enum class RoundAt { Matvec, ExpertMatvec, Dispatch };

// The activations a group of matmuls reads: x itself, or x rounded per weight type.
struct MatmulInputs {
    ops::TensorView x;                   // the activations as given: f32 [rows, n]
    const gpu::Buffer* rounded[5] = {};  // by ops::ActRounding: x rounded, packed from element 0
    bool in_matvec[5] = {};              // by ops::ActRounding: the one-token matvec rounds x itself
    ops::MatvecNorm norm;                // weight set: x is un-normalised, the matvecs normalise it
    // By ops::ActRounding: x quantized once for the one-token matvecs (quantized_inputs), which
    // read it instead of x.
    std::optional<ops::QuantizedActs> quantized[5];
    // The input of w: x, or its copy rounded as w's type needs (f32 [rows, n]). std::logic_error
    // where w's input is quantized (only the matvecs read it).
    ops::TensorView input(const ops::Weight& w) const;
    // The input of experts e (rows: tokens, or pairs): as input(), by e's type.
    ops::TensorView expert_input(const ops::ExpertWeights& e) const;
    // y = w x with these inputs (rounded as w's type needs); y: f32 [rows, w.n_out].
    void matmul(gpu::Stream& s, const ops::Weight& w, const ops::TensorView& y, bool accumulate = false) const;
    // One token: y = act(gate x) * (up x) in one dispatch (ops::matvec_swiglu); y: f32 [1, gate.n_out].
    void matvec_swiglu(gpu::Stream& s, const ops::Weight& gate, const ops::Weight& up, const ops::TensorView& y,
                       ops::GluActivation act) const;
    // One token: y = [W1; W2; W3] x in one dispatch (ops::matvec_stacked): the weights' outputs
    // one after another in y (f32 [1, total rows]), as matmul would write each. can_stack says
    // whether ws can (one type, so one input; ops::matvec_stack_fits).
    bool can_stack(const gpu::Context& ctx, std::span<const ops::Weight* const> ws) const;
    void matvec_stacked(gpu::Stream& s, std::span<const ops::Weight* const> ws, const ops::TensorView& y) const;
    // Experts: y = W_e x per routed pair (ops::moe_matmul, or ops::moe_matvec_quantized where
    // e's input is quantized), and decode's fused gate, up and SwiGLU (ops::moe_matvec_swiglu,
    // or its quantized twin); x a row per token, or with x_per_pair a row per pair.
    void moe_matmul(gpu::Stream& s, const ops::ExpertWeights& e, bool x_per_pair, const ops::MoeRouting& r,
                    const ops::TensorView& y) const;
    void moe_matvec_swiglu(gpu::Stream& s, const ops::ExpertWeights& gate, const ops::ExpertWeights& up,
                           bool x_per_pair, const ops::MoeRouting& r, const ops::TensorView& y) const;
    // True when the consumer of w's input rounds it itself (pass as round_x).
    bool rounds_in_matvec(ops::TensorType weight_type) const;

private:
    const ops::QuantizedActs* quantized_for(ops::TensorType weight_type) const;
};

// Activation rounding depends only on the weight type: a stand-in ops::Weight for experts'.
ops::Weight rounding_key(const ops::ExpertWeights& e);

struct Recording;
// Decode's inputs of a group of matvecs (Q, K and V; gate and up) with x quantized once per
// activation-block kind the weights need (ops::quantize_activations into the scratch's rounded
// buffer of that kind), one barrier after: every matvec of the group reads the same quants. With
// a norm (norm_w) that is an RMSNorm without bias, the quantize dispatch folds the norm in (the
// same values as the norm's dispatch; `out` is not written); another norm is recorded into `out`
// first, as Recording::normed_inputs does. Taken for one row when the policy quantizes, no importance
// matrix is collected and every weight's matvec reads quantized x of a whole number of blocks
// (ops::matvec_reads_quantized); otherwise these are Recording::normed_inputs (with norm_w) or
// prepare_inputs.
MatmulInputs quantized_inputs(Recording& r, const ops::TensorView& x, std::initializer_list<const ops::Weight*> weights);
MatmulInputs quantized_inputs(Recording& r, const ops::TensorView& x, const gpu::Buffer* norm_w,
                              const gpu::Buffer* norm_b, std::initializer_list<const ops::Weight*> weights,
                              const char* why, const ops::TensorView& out);
// Decode's expert inputs (x: the routed token's input, or a row per pair; the experts' stand-in
// weights, rounding_key): quantized once as quantized_inputs quantizes (every row, no norm) where
// one token is routed without a sort and every type's expert matvec reads quantized x; otherwise
// prepare_inputs(x, keys, RoundAt::ExpertMatvec). `alone`: each row is read by one matrix (the
// down projection's pairs), so the rule of single_matvec_inputs applies: quantized where the
// matvec cannot round x itself, or on a GPU (ActivationPolicy::quantize_single_input).
MatmulInputs expert_inputs(Recording& r, const ops::TensorView& x, std::initializer_list<const ops::Weight*> keys,
                           const ops::MoeRouting& routing, bool alone = false);

// The input of one decode matvec that reads it alone (ActivationPolicy::quantize_single_input):
// quantized_inputs where that costs no dispatch over rounding, or on a GPU; else prepare_inputs.
MatmulInputs single_matvec_inputs(Recording& r, const ops::TensorView& x, const ops::Weight& w);

}  // namespace vkllm::model
