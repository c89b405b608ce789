// Push-constant structs of the state-space shaders (shaders/ssm_*.comp), member for member as
// their `Push` blocks, and their PushOf entries (push_constants.h includes this file at its end,
// so tests/ops/test_shader_variants checks them with every other source's).
#pragma once

#include <cstdint>

#include "gpu/shader_ids.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

struct SsmConvPush {  // ssm_conv.comp
    uint32_t n_tokens, channels, d_conv, x_shift, x_stride, st_shift, w_shift, b_shift, y_shift, y_stride, bg_shift,
        bg_stride, cg_shift, cg_stride, flags;
};

struct SsmScanPush {  // ssm_scan.comp and ssm_scan_chunked.comp
    uint32_t n_tokens, n_head, head_dim, d_state, heads_per_group, st_shift, xbc_shift, xbc_stride, b_col, c_col,
        zdt_shift, zdt_stride, z_col, dt_col, dtb_shift, a_shift, d_shift, y_shift, y_stride, flags;
};

struct SsmScanMamba1Push {  // ssm_scan_mamba1.comp
    uint32_t n_tokens, d_inner, st_shift, x_shift, x_stride, dt_shift, dt_stride, b_shift, c_shift, bc_stride,
        z_shift, z_stride, a_shift, d_shift, y_shift, y_stride, flags;
};

struct SsmNormPush {  // ssm_norm.comp
    uint32_t n, n_group, n_rows, x_shift, y_shift, w_shift, has_w;
    float eps;
};

template <> struct PushOf<gpu::ShaderSource::ssm_conv> { using type = SsmConvPush; };
template <> struct PushOf<gpu::ShaderSource::ssm_scan> { using type = SsmScanPush; };
template <> struct PushOf<gpu::ShaderSource::ssm_scan_chunked> { using type = SsmScanPush; };
template <> struct PushOf<gpu::ShaderSource::ssm_scan_mamba1> { using type = SsmScanMamba1Push; };
template <> struct PushOf<gpu::ShaderSource::ssm_norm> { using type = SsmNormPush; };

}  // namespace vkllm::ops

// The other new ops' shaders keep theirs in files of their own.
#include "ops/activation_push_constants.h"
#include "ops/delta_net_push_constants.h"
