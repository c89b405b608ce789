// What an attention op computes, as the GPU op (ops::attention), the CPU reference
// (cpu::attention) and the model's per-layer spec (model::AttentionSpec extends it) all read it.
#pragma once

namespace vkllm {

// Scaled dot-product attention of query heads over cached keys and values, with its masks.
struct AttentionParams {
    int n_head = 0, n_head_kv = 0;  // GQA: query head h reads kv head h / (n_head / n_head_kv)
    int head_dim = 0;               // of queries and keys
    int head_dim_v = 0;             // of values and the output; 0: head_dim
    float scale = 1.0f;             // logits = scale * dot(q, k) (usually 1/sqrt(head_dim))
    bool causal = true;             // false: every token attends to every other (BERT)
    int window = 0;    // > 0: sliding window: keys at positions <= q_pos - window are masked
    int chunk = 0;     // > 0: chunked: keys in the query's chunk only, k_pos / chunk == q_pos / chunk (Llama 4)
    float softcap = 0.0f;  // > 0: logits become softcap * tanh(logits / softcap), after scaling (Gemma 2)

    int value_dim() const { return head_dim_v > 0 ? head_dim_v : head_dim; }
};

}  // namespace vkllm
