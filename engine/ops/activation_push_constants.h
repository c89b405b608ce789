// Push-constant structs of the activation shaders of activation_ops.h, member for member as their
// `Push` blocks, and their PushOf entries (ssm_push_constants.h, which push_constants.h
// includes at its end, includes this file, so tests/ops/test_shader_variants checks them).
#pragma once

#include <cstdint>

#include "gpu/shader_ids.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

struct ReluSqrPush {  // relu_sqr.comp
    uint32_t rows, cols, x_shift, x_stride, y_shift, y_stride;
};

template <> struct PushOf<gpu::ShaderSource::relu_sqr> { using type = ReluSqrPush; };

}  // namespace vkllm::ops
