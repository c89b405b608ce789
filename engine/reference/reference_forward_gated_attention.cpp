// The reference walk of gated attention (Qwen3-Next, Qwen3.5: llama.cpp's build_layer_attn in
// qwen3next.cpp / qwen35.cpp), as model/blocks/attention.cpp runs it:
//   [q | gate] = attn_q h per head;  k = attn_k h;  v = attn_v h
//   q, k = RMSNorm per head (attn_q_norm, attn_k_norm);  q, k = RoPE(q, k)
//   o = attention(q, k, v) * sigmoid(gate);  attn_output o
// It keeps what attention_block keeps (the cached keys and values, the probabilities asked for).
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "reference/reference_forward.h"

namespace vkllm::model {

std::vector<float> ReferenceForward::gated_attention_block(int l, const float* h, int T, int probs_layer,
                                                           std::vector<float>* probs) {
    const AttentionSpec& a = spec_.layers[size_t(l)].attn;
    const std::string p = "blk." + std::to_string(l) + ".";
    const int n_kv = n_past_ + T;
    const bool keep = l == probs_layer || std::find(record_attention_layers.begin(), record_attention_layers.end(), l) !=
                                              record_attention_layers.end();
    std::vector<float> pr(keep ? size_t(T) * size_t(a.n_head) * size_t(n_kv) : 0);
    const size_t hd = size_t(a.head_dim), qd = size_t(a.n_head) * hd, kd = size_t(a.n_head_kv) * hd;
    const size_t vd = size_t(a.n_head_kv) * size_t(a.head_dim_v);

    // attn_q's rows: head after head, head_dim of query then head_dim of gate.
    std::vector<float> qg(size_t(T) * 2 * qd), q(size_t(T) * qd), gate(size_t(T) * qd);
    matmul(p + "attn_q.weight", h, qg.data(), T);
    for (size_t t = 0; t < size_t(T); ++t)
        for (size_t hh = 0; hh < size_t(a.n_head); ++hh)
            for (size_t i = 0; i < hd; ++i) {
                q[t * qd + hh * hd + i] = qg[t * 2 * qd + hh * 2 * hd + i];
                gate[t * qd + hh * hd + i] = qg[t * 2 * qd + hh * 2 * hd + hd + i];
            }
    float* k = k_[size_t(l)].data() + size_t(n_past_) * kd;
    float* v = v_[size_t(l)].data() + size_t(n_past_) * vd;
    matmul(p + "attn_k.weight", h, k, T);
    matmul(p + "attn_v.weight", h, v, T);
    const auto qn = values(p + "attn_q_norm.weight"), kn = values(p + "attn_k_norm.weight");
    cpu::rms_norm(q.data(), qn.data(), q.data(), int64_t(T) * a.n_head, a.head_dim, spec_.norm_eps);
    cpu::rms_norm(k, kn.data(), k, int64_t(T) * a.n_head_kv, a.head_dim, spec_.norm_eps);
    if (a.rope.enabled) {
        std::vector<float> factors;
        const cpu::RopeParams rp = rope_params(a.rope, factors);
        cpu::rope(q.data(), T, a.n_head, a.head_dim, pos_.data(), rp);
        cpu::rope(k, T, a.n_head_kv, a.head_dim, pos_.data(), rp);
    }
    store_in_cache(k, size_t(T), kd);
    store_in_cache(v, size_t(T), vd);
    std::vector<float> att(size_t(T) * size_t(a.n_head) * size_t(a.head_dim_v));
    cpu::attention(q.data(), k_[size_t(l)].data(), v_[size_t(l)].data(), pos_.data(), kv_pos_.data(), att.data(),
                   keep ? pr.data() : nullptr, T, n_kv, a);
    record_probs(l, a, T, n_kv, pr, probs_layer, probs, nullptr);

    cpu::sigmoid(gate.data(), gate.data(), int64_t(gate.size()));
    for (size_t i = 0; i < att.size(); ++i) att[i] *= gate[i];
    std::vector<float> o(size_t(T) * size_t(spec_.n_embd));
    matmul(p + "attn_output.weight", att.data(), o.data(), T);
    return o;
}

}  // namespace vkllm::model
