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

template <> struct PushOf<gpu::ShaderSource::state_scan_ssm> { using type = StateScanSsmPush; };
template <> struct PushOf<gpu::ShaderSource::state_scan_rwkv7> { using type = StateScanRwkv7Push; };
template <> struct PushOf<gpu::ShaderSource::state_mix_map> { using type = StateMixMapPush; };

}  // namespace vkllm::ops
