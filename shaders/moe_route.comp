#version 450
// Mixture-of-experts router, one workgroup per token (flat token index over a 2-D grid), as
// llama.cpp's build_moe_ffn (the CPU reference is cpu::route):
//   probs  = softmax(logits) | sigmoid(logits) | logits (softmax after top-k: Mixtral, gpt-oss)
//   score  = probs + selection_bias                      (bias only for choosing: DeepSeek V3)
//   groups: a group's score is the sum of its two best scores; experts outside the best
//           topk_group groups are dropped (DeepSeek V3's group-limited routing)
//   chosen = the top_k experts by score, best first; equal scores go to the lower index
//   weight = probs[chosen]; softmax over them (softmax after top-k); / max(sum, 2^-14) (norm);
//            * weights_scale
// Top-k is top_k rounds of a workgroup argmax over the experts not yet chosen.
#include "common.glsl"
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 64u;        // threads (a power of two)
layout(constant_id = 1) const uint N_EXPERT = 8u;

#include "reduce.glsl"

layout(std430, binding = 0) readonly buffer Logits { float logits[]; };    // [n_tokens, N_EXPERT]
layout(std430, binding = 1) readonly buffer Bias { float sel_bias[]; };    // [N_EXPERT] when has_bias
layout(std430, binding = 2) writeonly buffer Experts { int experts[]; };   // [n_tokens, top_k]
layout(std430, binding = 3) writeonly buffer Weights { float weights[]; }; // [n_tokens, top_k]

const uint GATING_SOFTMAX = 0u, GATING_SIGMOID = 1u, GATING_NONE = 2u;  // NONE: softmax after top-k

layout(push_constant) uniform Push {
    uint n_tokens;
    uint top_k;
    uint logits_base;   // element offsets inside the bound windows
    uint bias_base;
    uint experts_base;
    uint weights_base;
    uint gating;        // GATING_*
    uint has_bias;
    uint norm_topk;
    uint n_group;       // 1: no groups
    uint topk_group;
    float weights_scale;
} pc;

const uint NONE = 0xffffffffu;  // no candidate

shared float probs[N_EXPERT];
shared float score[N_EXPERT];
shared uint taken[N_EXPERT];       // 1 once chosen
shared uint chosen[N_EXPERT];      // [top_k] in order
shared float group_score[N_EXPERT];
shared uint group_kept[N_EXPERT];
shared float best_val[WG];
shared uint best_idx[WG];

// Whether candidate (v, i) beats (bv, bi): higher score, then lower index; NONE never wins.
bool beats(float v, uint i, float bv, uint bi) {
    if (i == NONE) return false;
    if (bi == NONE) return true;
    return v > bv || (v == bv && i < bi);
}

void main() {
    const uint token = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (token >= pc.n_tokens) return;  // uniform across the workgroup
    const uint tid = gl_LocalInvocationID.x;
    const uint lb = pc.logits_base + token * N_EXPERT;

    // Gating.
    float local_max = -1.0 / 0.0;
    for (uint e = tid; e < N_EXPERT; e += WG) {
        const float l = logits[lb + e];
        local_max = max(local_max, l);
        probs[e] = pc.gating == GATING_SIGMOID ? 1.0 / (1.0 + exp(-l)) : l;
    }
    if (pc.gating == GATING_SOFTMAX) {
        const float m = wg_max(local_max);
        float local_sum = 0.0;
        for (uint e = tid; e < N_EXPERT; e += WG) {
            const float p = exp(probs[e] - m);
            probs[e] = p;
            local_sum += p;
        }
        const float sum = wg_sum(local_sum);
        for (uint e = tid; e < N_EXPERT; e += WG) probs[e] /= sum;
    }
    for (uint e = tid; e < N_EXPERT; e += WG) {
        score[e] = probs[e] + (pc.has_bias != 0u ? sel_bias[pc.bias_base + e] : 0.0);
        taken[e] = 0u;
    }
    barrier();

    // Group-limited selection: drop the experts of all but the best topk_group groups.
    if (pc.n_group > 1u) {
        const uint per_group = N_EXPERT / pc.n_group;
        for (uint g = tid; g < pc.n_group; g += WG) {
            float m0 = -1.0 / 0.0, m1 = -1.0 / 0.0;  // the two best scores of the group
            for (uint e = g * per_group; e < (g + 1u) * per_group; ++e) {
                const float v = score[e];
                if (v > m0) {
                    m1 = m0;
                    m0 = v;
                } else if (v > m1) {
                    m1 = v;
                }
            }
            group_score[g] = per_group > 1u ? m0 + m1 : m0;
            group_kept[g] = 0u;
        }
        barrier();
        if (tid == 0u) {  // a few groups: one invocation picks them, the lower index on ties
            for (uint r = 0u; r < pc.topk_group; ++r) {
                uint best = NONE;
                for (uint g = 0u; g < pc.n_group; ++g)
                    if (group_kept[g] == 0u && (best == NONE || group_score[g] > group_score[best])) best = g;
                group_kept[best] = 1u;
            }
        }
        barrier();
        for (uint e = tid; e < N_EXPERT; e += WG)
            if (group_kept[e / per_group] == 0u) score[e] = -1.0 / 0.0;
        barrier();
    }

    // Top-k: each round, the best expert not yet taken.
    for (uint r = 0u; r < pc.top_k; ++r) {
        float bv = 0.0;
        uint bi = NONE;
        for (uint e = tid; e < N_EXPERT; e += WG) {  // rising indices: strict > keeps the lowest
            if (taken[e] == 0u && (bi == NONE || score[e] > bv)) {
                bv = score[e];
                bi = e;
            }
        }
        best_val[tid] = bv;
        best_idx[tid] = bi;
        barrier();
        for (uint s = WG / 2u; s > 0u; s >>= 1) {
            if (tid < s && beats(best_val[tid + s], best_idx[tid + s], best_val[tid], best_idx[tid])) {
                best_val[tid] = best_val[tid + s];
                best_idx[tid] = best_idx[tid + s];
            }
            barrier();
        }
        if (tid == 0u) {
            chosen[r] = best_idx[0];
            taken[best_idx[0]] = 1u;
        }
        barrier();
    }

    // Weights of the chosen experts (top_k values: one invocation).
    if (tid == 0u) {
        float m = -1.0 / 0.0;
        for (uint r = 0u; r < pc.top_k; ++r) m = max(m, probs[chosen[r]]);
        float sum = 0.0;
        for (uint r = 0u; r < pc.top_k; ++r) sum += pc.gating == GATING_NONE ? exp(probs[chosen[r]] - m) : probs[chosen[r]];
        // Softmax after top-k divides by the sum of the exponentials (norm_topk would then
        // divide by their normalised sum, 1); norm_topk divides by the sum of the weights.
        float divisor = 1.0;
        if (pc.gating == GATING_NONE) divisor = sum;
        else if (pc.norm_topk != 0u) divisor = max(sum, 6.103515625e-5);
        const uint ob = token * pc.top_k;
        for (uint r = 0u; r < pc.top_k; ++r) {
            const float p = probs[chosen[r]];
            const float w = pc.gating == GATING_NONE ? exp(p - m) : p;
            experts[pc.experts_base + ob + r] = int(chosen[r]);
            weights[pc.weights_base + ob + r] = w / divisor * pc.weights_scale;
        }
    }
}
