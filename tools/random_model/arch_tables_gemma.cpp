// Gemma 2 and 3: sandwich norms, sliding-window layers, soft-capping.
#include "random_model/arch_table_families.h"
#include "random_model/arch_table_parts.h"

namespace vkllm::random_model {
// Gemma 2: sandwich norms, logit soft-capping, sliding window on every other layer, output
// always tied to token_embd.
ArchTable gemma2_table() {
    ArchTable gemma2;
    gemma2.name = "gemma2";
    gemma2.globals = without(without(embeddings_and_head(), Presence::Llama3Rope), Presence::Untied);
    gemma2.per_layer = concat(attention({.post_norm = true}), gated_ffn(true));
    gemma2.norm_eps = 1e-6f;
    gemma2.always_write_head_dims = true;
    gemma2.always_tied = true;
    gemma2.default_sliding_window = 4096;
    gemma2.default_attn_softcap = 50.0f;  // the converter always writes both (Gemma 2's values)
    gemma2.default_final_softcap = 30.0f;
    return gemma2;
}

// Gemma 3 (text): Gemma 2's sandwich norms plus q/k norms, no soft-capping; five local layers
// (RoPE base 10000) to one global (base 1e6).
ArchTable gemma3_table() {
    ArchTable gemma3;
    gemma3.name = "gemma3";
    gemma3.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    gemma3.per_layer = concat(attention({.qk_norm = true, .post_norm = true}), gated_ffn(true));
    gemma3.norm_eps = 1e-6f;
    gemma3.rope_freq_base = 1000000.0f;
    gemma3.always_write_head_dims = true;
    gemma3.default_sliding_window = 512;
    gemma3.default_final_softcap = -1.0f;  // read by llama.cpp when present; Gemma 3 has none
    gemma3.extra_metadata = {
        {"rope.freq_base_swa", gguf::Value::from_f32(10000.0f)},
    };
    return gemma3;
}

}  // namespace vkllm::random_model
