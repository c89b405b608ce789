// How a gated-delta-rule layer's value heads share its key heads, as the GPU op
// (ops::gated_delta_net), the CPU reference (cpu::gated_delta_net) and a model's layer spec read it.
#pragma once

namespace vkllm {

// With n_head_v = r * n_head_k: Interleaved, value head h reads key head h / r (Qwen3-Next's
// repeat-interleave); Tiled, key head h % n_head_k (Qwen3.5's ggml_repeat, and
// ggml_gated_delta_net's own broadcast).
enum class DeltaHeadShare { Interleaved, Tiled };

}  // namespace vkllm
