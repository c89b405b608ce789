// Push-constant structs of the RWKV shaders (shaders/rwkv_*.comp, rwkv7_*.comp), member for member
// as their `Push` blocks, and their PushOf entries.
#pragma once

#include <cstdint>

#include "gpu/shader_ids.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

struct RwkvShiftMixPush {  // rwkv_shift_mix.comp
    uint32_t n_tokens, C, n_mix, x_shift, x_stride, shift_shift, mix_shift, out_shift;
};

struct RwkvWkv7Push {  // rwkv_wkv7.comp and rwkv_wkv7_chunked.comp
    uint32_t n_tokens, st_shift, r_shift, r_stride, w_shift, w_stride, k_shift, k_stride, v_shift, v_stride, a_shift,
        a_stride, b_shift, b_stride, o_shift, o_stride;
};

struct Rwkv7InputsPush {  // rwkv7_inputs.comp
    uint32_t n_tokens, n_head, w_shift, w_stride, k_shift, k_stride, a_shift, a_stride, b_shift, b_stride, w0_shift,
        a0_shift, kk_shift, ka_shift;
};

struct Rwkv7OutputPush {  // rwkv7_output.comp
    uint32_t n_tokens, n_head, o_shift, o_stride, r_shift, r_stride, k_shift, k_stride, v_shift, v_stride, g_shift,
        g_stride, lnw_shift, lnb_shift, rk_shift;
    float eps;
};

struct RwkvElementwisePush {  // rwkv_elementwise.comp
    uint32_t rows, cols, mode, x_shift, x_stride, y_shift, y_stride, z_shift, z_stride, p_shift;
};

template <> struct PushOf<gpu::ShaderSource::rwkv_shift_mix> { using type = RwkvShiftMixPush; };
template <> struct PushOf<gpu::ShaderSource::rwkv_wkv7> { using type = RwkvWkv7Push; };
template <> struct PushOf<gpu::ShaderSource::rwkv_wkv7_chunked> { using type = RwkvWkv7Push; };
template <> struct PushOf<gpu::ShaderSource::rwkv7_inputs> { using type = Rwkv7InputsPush; };
template <> struct PushOf<gpu::ShaderSource::rwkv7_output> { using type = Rwkv7OutputPush; };
template <> struct PushOf<gpu::ShaderSource::rwkv_elementwise> { using type = RwkvElementwisePush; };

}  // namespace vkllm::ops
