// The C++ side of every shader's push-constant block, one struct per source file (its variants
// share it), member for member as the `layout(push_constant) uniform Push` block of
// shaders/<source>.comp. PushOf<ShaderSource::x>::type names a source's struct (<Source>Push);
// every source has one (tests/ops/test_shader_variants.cpp does not compile otherwise) and that
// test checks each variant's SPIR-V block against it: size, member offsets and scalar types.
// Pipeline creation checks the size again (gpu/pipeline.cpp).
#pragma once

#include <cstdint>

#include "gpu/shader_ids.h"

namespace vkllm::ops {

struct FillTestPush {  // fill_test.comp (the runtime's tests)
    uint32_t n;
    float scale;
};

struct NormPush {  // norm.comp
    uint32_t n, n_rows, stride, x_shift, y_shift, w_shift, b_shift, flags;
    float eps;
};

struct ElementwisePush {  // elementwise.comp
    uint32_t n, a_shift, b_shift, o_shift, row_len, stride;
    float factor;
};

struct SoftmaxPush {  // softmax.comp
    uint32_t n, n_rows, x_shift, y_shift;
    float scale;
};

struct ArgmaxPush {  // argmax.comp
    uint32_t n, n_rows, x_shift, out_shift;
};

// The angle parameters both rope shaders read (shaders/include/rope_angle.glsl).
struct RopeAngle {
    uint32_t flags;  // bit 0: NeoX pairing, bit 1: freq_factors, bit 2: YaRN
    float log2_base, freq_scale, ext_factor, mscale, corr_low, corr_high;
};

struct RopePush {  // rope.comp
    uint32_t n_pairs_total, n_heads, head_dim, n_pairs, token_stride, x_shift, pos_shift, ff_shift;
    RopeAngle angle;
    uint32_t y_shift, slots;
    uint32_t y_token_stride, y_head_stride;  // the rotated dims into y (flags bit 3)
};

struct RopeQkvPush {  // rope_qkv.comp
    uint32_t n_tokens, n_heads_q, n_heads_kv, head_dim, n_pairs, v_row, slots;
    uint32_t q_shift, pos_shift, ff_shift, k_shift, v_shift, kc_shift, vc_shift;
    RopeAngle angle;
};

struct AttentionPush {  // attention.comp
    uint32_t n_q, n_kv, n_head, n_head_kv, group, head_blocks, q_shift, keys_per_split, n_splits, flags;
    int32_t window, chunk;
    float scale, softcap;
};

struct AttentionCombinePush {  // attention_combine.comp
    uint32_t n_rows, n_head, n_splits, dv, has_sinks;
};

struct MatvecPush {  // matvec.comp
    uint32_t n_in, n_rows, w_base, row_bytes, x_base, y_base, accumulate, x_vec4, up_delta, norm_base;
    float norm_eps;
    uint32_t xq_sum_base;  // XQ: word index of the quant sums (x_base: the quants, norm_base: the scales)
    // Stacked matrices (ops::matvec_stacked): the first row and row-0 byte address of the second
    // and third (0, 0: none).
    uint32_t stack_row1 = 0, stack_base1 = 0, stack_row2 = 0, stack_base2 = 0;
};

struct MatmulPush {  // matmul.comp
    uint32_t n_in, n_rows, n_tokens, w_base, row_bytes, x_base, y_base, y_stride, accumulate, x_vec4;
};

struct MatvecRowsPush {  // matvec_rows.comp
    uint32_t n_in, n_rows, n_cols, w_base, row_bytes, x_base, y_base, y_stride, accumulate, x_vec4;
};

struct GetRowsPush {  // get_rows.comp
    uint32_t n_in, n_table_rows, row_first, row_count, w_base, row_bytes, id_base, out_base, zero_invalid;
};

struct RoundActPush {  // round_act.comp
    uint32_t n_blocks, x_shift, y_shift, grid_x;
};

struct QuantizeActPush {  // quantize_act.comp
    uint32_t n_blocks, x_shift, q_base, scale_base, sum_base, grid_x, n, norm_base;
    float norm_eps;
};

struct MoeRoutePush {  // moe_route.comp
    uint32_t n_tokens, top_k, logits_base, bias_base, experts_base, weights_base, gating, has_bias, norm_topk,
        n_group, topk_group;
    float weights_scale;
};

struct MoeSortPush {  // moe_sort.comp
    uint32_t n_pairs, experts_base, out_base;
};

struct MoeCombinePush {  // moe_combine.comp
    uint32_t n, n_tokens, top_k, y_base, w_base, out_base, accumulate;
};

struct MoeLoadPush {  // moe_load.comp
    uint32_t n_pairs, n_expert, ids_base, w_base, load_base, accumulate;
};

struct MoeMatvecPush {  // moe_matvec.comp
    uint32_t n_in, n_rows, w_base, row_bytes, expert_bytes, expert_first, expert_count, x_base, y_base, y_stride,
        ids_base, pair0, n_pairs, top_k, x_per_pair, x_vec4, has_bias, bias_base, bias_stride, up_delta;
    uint32_t x_stride = 0;  // floats between x rows (0: n_in)
    uint32_t xq_scales = 0, xq_sums = 0;  // XQ: word indices of x row 0's block scales and quant sums
};

struct MoeMatmulPush {  // moe_matmul.comp
    uint32_t n_in, n_rows, w_base, row_bytes, expert_bytes, expert_first, expert_count, x_base, y_base, y_stride,
        sort_base, n_expert, top_k, x_per_pair, x_vec4, tile0, has_bias, bias_base, bias_stride;
};

struct MoeWeightInputPush {  // moe_weight_input.comp
    uint32_t n_pairs, n, top_k, x_shift;
};

struct ResidualEditPush {  // residual_edit.comp
    uint32_t n_tokens, n, x_shift, first, n_edits;
};

struct SuperCorrectionPush {  // super_correction.comp
    uint32_t n_tokens, n_out, n_in, y_shift, a_shift, n_corrections;
};

struct CopyCheckedPush {  // copy_checked.comp
    uint32_t n, src_shift, dst_shift;
};

struct ImatrixAccumulatePush {  // imatrix_accumulate.comp
    uint32_t n_cols, n_rows, x_shift, x_stride, sums_shift, counts_shift, ids_shift, top_k, x_per_pair;
};

struct SetRowsPush {  // set_rows.comp
    uint32_t n, n_rows, slots, src_shift, pos_shift;
    uint32_t src_stride = 0;  // floats between src rows (0: n)
};

// The push-constant struct of each shader source. No primary definition: naming a source
// without a specialization below does not compile.
template <gpu::ShaderSource S> struct PushOf;

#define VKLLM_PUSH_OF(source, Struct) \
    template <> struct PushOf<gpu::ShaderSource::source> { using type = Struct; }
VKLLM_PUSH_OF(fill_test, FillTestPush);
VKLLM_PUSH_OF(norm, NormPush);
VKLLM_PUSH_OF(elementwise, ElementwisePush);
VKLLM_PUSH_OF(softmax, SoftmaxPush);
VKLLM_PUSH_OF(argmax, ArgmaxPush);
VKLLM_PUSH_OF(rope, RopePush);
VKLLM_PUSH_OF(rope_qkv, RopeQkvPush);
VKLLM_PUSH_OF(attention, AttentionPush);
VKLLM_PUSH_OF(attention_combine, AttentionCombinePush);
VKLLM_PUSH_OF(matvec, MatvecPush);
VKLLM_PUSH_OF(matmul, MatmulPush);
VKLLM_PUSH_OF(matvec_rows, MatvecRowsPush);
VKLLM_PUSH_OF(get_rows, GetRowsPush);
VKLLM_PUSH_OF(moe_matvec, MoeMatvecPush);
VKLLM_PUSH_OF(round_act, RoundActPush);
VKLLM_PUSH_OF(quantize_act, QuantizeActPush);
VKLLM_PUSH_OF(moe_route, MoeRoutePush);
VKLLM_PUSH_OF(moe_sort, MoeSortPush);
VKLLM_PUSH_OF(moe_combine, MoeCombinePush);
VKLLM_PUSH_OF(moe_load, MoeLoadPush);
VKLLM_PUSH_OF(moe_matmul, MoeMatmulPush);
VKLLM_PUSH_OF(moe_weight_input, MoeWeightInputPush);
VKLLM_PUSH_OF(residual_edit, ResidualEditPush);
VKLLM_PUSH_OF(super_correction, SuperCorrectionPush);
VKLLM_PUSH_OF(copy_checked, CopyCheckedPush);
VKLLM_PUSH_OF(set_rows, SetRowsPush);
VKLLM_PUSH_OF(imatrix_accumulate, ImatrixAccumulatePush);
#undef VKLLM_PUSH_OF

}  // namespace vkllm::ops

// The state-space shaders keep their structs in a file of their own.
#include "ops/ssm_push_constants.h"
// The probes' shader's, likewise.
#include "ops/probe_push_constants.h"
// RWKV-7's, likewise.
#include "ops/rwkv_push_constants.h"
