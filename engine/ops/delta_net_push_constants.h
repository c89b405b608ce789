// Push-constant structs of shaders/delta_net.comp (and delta_net_chunked.comp, the same block) and
// delta_net_gates.comp, member for member as their `Push` blocks, and their PushOf entries
// (ssm_push_constants.h, which push_constants.h includes at its end, includes this file, so
// tests/ops/test_shader_variants checks it).
#pragma once

#include <cstdint>

#include "gpu/shader_ids.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

struct DeltaNetPush {  // delta_net.comp and delta_net_chunked.comp
    uint32_t n_tokens, n_head_k, n_head_v, d_v, st_shift, q_shift, q_stride, k_shift, k_stride, v_shift, v_stride,
        g_shift, g_stride, beta_shift, beta_stride, o_shift, o_stride, flags;
    float scale, l2_eps;
};

struct DeltaNetGatesPush {  // delta_net_gates.comp
    uint32_t n_tokens, n_head, hpg, group_stride, alpha_shift, alpha_stride, b_shift, b_stride, dtb_shift, a_shift,
        g_shift, g_stride, beta_shift, beta_stride;
};

template <> struct PushOf<gpu::ShaderSource::delta_net> { using type = DeltaNetPush; };
template <> struct PushOf<gpu::ShaderSource::delta_net_chunked> { using type = DeltaNetPush; };
template <> struct PushOf<gpu::ShaderSource::delta_net_gates> { using type = DeltaNetGatesPush; };

}  // namespace vkllm::ops
