// DeepSeek's multi-head latent attention in the absorbed form (as llama.cpp runs it):
//   q       = W_qb norm(W_qa h)              [n_head, nope + rope]   (or W_q h)
//   [c, kr] = W_kva h                        c: the latent [kv_lora], kr: the RoPE key [rope]
//   c       = norm(c);  q_rope, kr = RoPE(q_rope), RoPE(kr)
//   q_abs_h = W_kb,h q_nope,h                each head's query in latent space [kv_lora]
//   attention is then MQA with queries [q_abs_h | q_rope_h], keys [c | kr], values c, and
//   out_h   = W_vb,h (latent output_h)       [v_head]
// so the cache holds only [c | kr] (and c again as values) per token instead of per-head K/V.
// Per-head matrices (W_kb, W_vb) are run as a mixture of experts whose "expert" is the head.
#pragma once

#include "model/blocks/block.h"

namespace vkllm::model {

class LatentAttentionBlock : public Block {
public:
    explicit LatentAttentionBlock(int layer) : layer_(layer) {}
    void record(Recording& r) const override;

private:
    // Scratch::q gets the absorbed queries [T, n_head, kv_lora + rope] and k_new the keys
    // [T, kv_lora + rope], whose latent part is also the values; in: the block input's.
    void record_qkv(Recording& r, const MatmulInputs& in) const;
    // The heads' latent outputs (Scratch::attn) through W_vb into Scratch::mla.out
    // [T, n_head * v_head].
    void record_output(Recording& r) const;
    int layer_;
};

}  // namespace vkllm::model
