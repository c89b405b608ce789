// The op parameters a layer's spec implies.
#pragma once

#include "model/spec.h"
#include "ops/ops.h"

namespace vkllm::model {

ops::RopeParams rope_params(const RopeSpec& r);
ops::AttentionParams attention_params(const AttentionSpec& a);

}  // namespace vkllm::model
