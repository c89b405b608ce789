// Push-constant structs of the state probes' shaders (shaders/state_*.comp), member for member as
// their `Push` blocks, and their PushOf entries (probe_push_constants.h includes this file, so
// tests/ops/test_shader_variants checks them with every other source's).
#pragma once

#include <cstdint>

#include "gpu/shader_ids.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

struct StateScanSsmPush {  // state_scan_ssm.comp
    uint32_t n_tokens, rows, d_state, heads_per_group, flags;
    uint32_t st_shift, x_shift, x_stride, dt_shift, dt_stride, b_shift, b_stride, bias_shift, a_shift;
    uint32_t out_shift, work_shift, key_shift, key_b_shift, key_first, key_count, key_prev, gs;
};

struct StateScanRwkv7Push {  // state_scan_rwkv7.comp
    uint32_t n_tokens, N, st_shift, w_shift, w_stride, k_shift, k_stride, v_shift, v_stride, a_shift, a_stride,
        b_shift, b_stride, out_shift, work_shift;
};

struct StateMixMapPush {  // state_mix_map.comp
    uint32_t n_rows, n_keys, d_state, n_head, head, group, gs, key_first, c_shift, c_stride, key_shift, key_b_shift,
        map_shift;
};

struct StateScanDeltaNetPush {  // state_scan_delta_net.comp
    uint32_t n_tokens, n_head_k, d_v, st_shift, k_shift, k_stride, v_shift, v_stride, g_shift, g_stride, beta_shift,
        beta_stride, out_shift, work_shift, flags;
    float l2_eps;
};

struct StateMixMapDeltaNetPush {  // state_mix_map_delta_net.comp
    uint32_t q_first, n_q, k_first, n_k, head, key_head, q_shift, q_stride, k_shift, k_stride, g_shift, g_stride,
        beta_shift, beta_stride, map_shift, map_stride, flags;
    float scale, l2_eps;
};

template <> struct PushOf<gpu::ShaderSource::state_scan_ssm> { using type = StateScanSsmPush; };
template <> struct PushOf<gpu::ShaderSource::state_scan_rwkv7> { using type = StateScanRwkv7Push; };
template <> struct PushOf<gpu::ShaderSource::state_mix_map> { using type = StateMixMapPush; };
template <> struct PushOf<gpu::ShaderSource::state_scan_delta_net> { using type = StateScanDeltaNetPush; };
template <> struct PushOf<gpu::ShaderSource::state_mix_map_delta_net> { using type = StateMixMapDeltaNetPush; };

}  // namespace vkllm::ops
