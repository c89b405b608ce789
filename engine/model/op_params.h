// The RoPE op parameters a layer's spec implies (attention takes the AttentionSpec itself: it
// extends AttentionParams).
#pragma once

#include "model/spec.h"
#include "ops/ops.h"

namespace vkllm::model {

ops::RopeParams rope_params(const RopeSpec& r);

}  // namespace vkllm::model
