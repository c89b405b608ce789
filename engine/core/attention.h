// What an attention op computes, as the GPU op (ops::attention), the CPU reference
// (cpu::attention) and the model's per-layer spec (model::AttentionSpec extends it) all read it.
#pragma once

#include <cmath>

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
    // > 0: ALiBi (Press et al. 2022; BLOOM, MPT, Jais): each logit, after scaling and soft-capping,
    // gets -alibi_slope(h) * |q_pos - k_pos|, a linear penalty on distance with a slope per query
    // head; the GGUF key `attention.max_alibi_bias` (usually 8).
    float max_alibi_bias = 0.0f;

    int value_dim() const { return head_dim_v > 0 ? head_dim_v : head_dim; }

    // ALiBi's slope of query head h, as llama.cpp computes it (ggml_soft_max_ext). With n the
    // largest power of two <= n_head and b = max_alibi_bias, the first n heads take the geometric
    // sequence 2^(-b/n), 2^(-2b/n), ..., 2^(-b); when n_head is not a power of two, the remaining
    // heads take the odd terms of the sequence for 2n heads, 2^(-b/(2n)), 2^(-3b/(2n)), ...
    // 0 without ALiBi.
    double alibi_slope(int h) const {
        if (max_alibi_bias <= 0.0f) return 0.0;
        int n = 1;
        while (n * 2 <= n_head) n *= 2;
        const double b = max_alibi_bias;
        return h < n ? std::exp2(-b * (h + 1) / n) : std::exp2(-b * (2 * (h - n) + 1) / (2.0 * n));
    }
};

}  // namespace vkllm
