// How a mixture-of-experts layer picks its experts, as the GPU op (ops::moe_route) and the CPU
// reference (cpu::route) both read it; each adds the optional selection bias in its own memory.
// The rule is llama.cpp's build_moe_ffn:
//   probs = softmax(logits) or sigmoid(logits)            (raw logits if softmax_after_topk)
//   score = probs + selection_bias                        (bias only for choosing: DeepSeek V3)
//   n_group > 1: split experts into n_group contiguous groups; a group's score is the sum of
//                its two best scores; experts outside the best topk_group groups are dropped
//   chosen = the top_k experts by score, in descending order of score
//   weight = probs[chosen] (unbiased); softmax_after_topk: softmax over the chosen logits
//   norm_topk: weight /= max(sum of chosen weights, 6.103515625e-5)
//   weight *= weights_scale (0 is treated as 1, as llama.cpp does)
// Ties (equal scores, equal group scores) break toward the lower expert / group index.
#pragma once

namespace vkllm {

struct RouterRule {
    enum Gating { Softmax, Sigmoid };
    int n_expert = 0;
    int top_k = 0;
    Gating gating = Softmax;
    bool norm_topk = false;
    int n_group = 1;     // > 1: group-limited routing (n_expert a multiple)
    int topk_group = 1;
    float weights_scale = 1.0f;
    bool softmax_after_topk = false;  // Mixtral / gpt-oss style; overrides gating
};

}  // namespace vkllm
