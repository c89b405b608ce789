// The operands the one-token matvecs of shaders/matvec.comp bind besides the weights and y:
// the fused norm's weight (binding 3) and x quantized beforehand (bindings 1 and 3), shared by
// ops::matmul's matvec, matvec_swiglu, the quantized matvecs and the stacked ones.
#pragma once

#include <cstdint>

#include "gpu/shaders.h"
#include "ops/ops.h"
#include "ops/weight_ops.h"

namespace vkllm::ops {

// Binding 3 of matvec.comp: the fused norm's weight (MatvecNorm), or x's window again, unread,
// without one (the pipeline layout always has four bindings).
struct NormBinding {
    gpu::BufferRange range;
    uint32_t base = 0;  // element index of weight[0] in the binding
    float eps = 0.0f;
    bool vec4_ok = true;  // base is a multiple of 4
};
NormBinding norm_binding(const MatvecNorm* norm, uint64_t n_in, const weights::Window& xw,
                         const weights::Limits& lim, const char* op);

// Binding 1 (and 3, unread) of an XQ matvec: the window over x's three streams, and the word
// index of each stream inside it.
struct XqBinding {
    weights::Window window;
    uint32_t quants = 0, scales = 0, sums = 0;
    bool vec4 = false;  // the quants start on 16 bytes of the binding (two uvec4 loads per block)
};
XqBinding xq_binding(const QuantizedActs& x, const weights::Limits& lim, const char* op);
// The checks of a quantized x against the weight that reads it.
void check_xq(const QuantizedActs& x, const Weight& w, const char* op);
// y (n floats from element y_offset of y_buf) must not overlap x's streams.
void require_apart(const QuantizedActs& x, uint64_t y_offset, uint64_t n, const Buffer& y_buf, const char* op);
// The XQ variant of matvec op `op` for the device: the integer dot where it has one, subgroups
// where it can.
gpu::ShaderId xq_shader(const gpu::Capabilities& caps, TensorType t, weights::MatvecOp op);
// The 2-D grid of `groups` workgroups.
void grid_of(uint64_t groups, const weights::Limits& lim, uint64_t n_out, const char* op, uint32_t* gx, uint32_t* gy);

}  // namespace vkllm::ops
