// Push-constant struct of the probes' shader (shaders/attention_summary.comp), member for member
// as its `Push` block, and its PushOf entry (push_constants.h includes this file at its end, so
// tests/ops/test_shader_variants checks it with every other source's).
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

}  // namespace vkllm::ops
