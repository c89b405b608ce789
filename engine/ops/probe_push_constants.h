// Push-constant structs of the probes' shaders (shaders/attention_summary.comp,
// attention_detail.comp), member for member as their `Push` blocks, and their PushOf entries
// (push_constants.h includes this file at its end, so tests/ops/test_shader_variants checks them
// with every other source's).
#pragma once

#include <cstdint>

#include "gpu/shader_ids.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

struct AttentionSummaryPush {  // attention_summary.comp
    uint32_t n_q, n_head, n_kv, flags;
    uint32_t p_shift, qp_shift, kp_shift, s_shift;
};

template <> struct PushOf<gpu::ShaderSource::attention_summary> { using type = AttentionSummaryPush; };

struct AttentionDetailPush {  // attention_detail.comp
    uint32_t n_q, n_head, n_kv, top_k;
    uint32_t cells, cell, query_cell0;
    uint32_t p_shift, qp_shift, kp_shift, t_shift, m_shift;
};

template <> struct PushOf<gpu::ShaderSource::attention_detail> { using type = AttentionDetailPush; };

}  // namespace vkllm::ops

// The state probes' shaders keep theirs in a file of their own.
#include "ops/state_probe_push_constants.h"
