// The reference forward's attention block: q/k/v projections (and biases), QK-norm, RoPE, the
// cache, and softmax attention with the layer's window, soft-cap and sinks; DeepSeek's latent
// attention in its plain (unabsorbed) form.
#include <algorithm>
#include <cmath>

#include "reference/reference_forward.h"

namespace vkllm::model {

// As the GPU forward maps a RopeSpec (ggml's rope): Linear and YaRN divide positions by the
// factor; Llama 3 scaling divides each pair's frequency by the file's rope_freqs.
cpu::RopeParams ReferenceForward::rope_params(const RopeSpec& r, std::vector<float>& factors) const {
    cpu::RopeParams p;
    p.n_dims = r.n_dims;
    p.neox = r.neox;
    p.freq_base = r.freq_base;
    p.attn_factor = r.attn_factor;
    switch (r.scaling) {
        case RopeScaling::None: p.scaling = cpu::RopeParams::None; break;
        case RopeScaling::Linear: p.scaling = cpu::RopeParams::Linear; break;
        case RopeScaling::Yarn: p.scaling = cpu::RopeParams::Yarn; break;
        case RopeScaling::Llama3: p.scaling = cpu::RopeParams::Llama3; break;
    }
    if (r.scaling == RopeScaling::Linear || r.scaling == RopeScaling::Yarn) p.freq_scale = 1.0f / r.factor;
    if (r.scaling == RopeScaling::Yarn) {
        p.ext_factor = r.ext_factor;
        p.beta_fast = r.beta_fast;
        p.beta_slow = r.beta_slow;
        p.orig_ctx = r.n_ctx_orig;
    }
    if (r.freq_factors) {
        factors = values("rope_freqs.weight");
        p.freq_factors = factors.data();
    }
    return p;
}

// Keeps what the probes and callers asked for of pr [n_tokens, n_head, n_kv]: the last token's
// rows of probs_layer, every row of the recorded layers, and with sinks the sink's share of each
// row (what the row's probabilities leave of 1).
void ReferenceForward::record_probs(int l, const AttentionSpec& a, int T, int n_kv, std::vector<float>& pr,
                                    int probs_layer, std::vector<float>* probs, const float* sinks) {
    if (pr.empty()) return;
    if (probs && l == probs_layer) probs->assign(pr.end() - long(a.n_head) * n_kv, pr.end());
    if (std::find(record_attention_layers.begin(), record_attention_layers.end(), l) == record_attention_layers.end())
        return;
    if (sinks) {
        std::vector<float> sink(size_t(T) * size_t(a.n_head));
        for (size_t row = 0; row < sink.size(); ++row) {
            double sum = 0;
            for (int k = 0; k < n_kv; ++k) sum += pr[row * size_t(n_kv) + size_t(k)];
            sink[row] = float(1.0 - sum);
        }
        attention_sink[l] = std::move(sink);
    }
    attention[l] = std::move(pr);
}

std::vector<float> ReferenceForward::attention_block(int l, const float* h, int T, int probs_layer,
                                                     std::vector<float>* probs) {
    const AttentionSpec& a = spec_.layers[size_t(l)].attn;
    const std::string p = "blk." + std::to_string(l) + ".";
    const int n_kv = n_past_ + T;
    const bool keep = l == probs_layer ||
                      std::find(record_attention_layers.begin(), record_attention_layers.end(), l) !=
                          record_attention_layers.end();
    std::vector<float> pr(keep ? size_t(T) * size_t(a.n_head) * size_t(n_kv) : 0);
    std::vector<float> att, sinks;
    int out_width = 0;
    if (a.mla.kv_lora_rank > 0) {
        att = mla_attention(l, h, T, keep ? &pr : nullptr);
        out_width = a.n_head * a.mla.v_head;
    } else {
        const size_t qd = size_t(a.n_head * a.head_dim), kd = size_t(a.n_head_kv * a.head_dim);
        const size_t vd = size_t(a.n_head_kv * a.head_dim_v);
        std::vector<float> q(size_t(T) * qd), bq, bk, bv;
        if (a.bias_qkv && a.fused_qkv) {  // one bias of rows [q; k; v]
            const std::vector<float> b = values(p + "attn_qkv.bias");
            if (b.size() != qd + kd + vd) throw ModelError("reference forward: " + p + "attn_qkv.bias has the wrong size");
            bq.assign(b.begin(), b.begin() + long(qd));
            bk.assign(b.begin() + long(qd), b.begin() + long(qd + kd));
            bv.assign(b.begin() + long(qd + kd), b.end());
        } else if (a.bias_qkv) {
            bq = values(p + "attn_q.bias");
            bk = values(p + "attn_k.bias");
            bv = values(p + "attn_v.bias");
        }
        float* k = k_[size_t(l)].data() + size_t(n_past_) * kd;
        float* v = v_[size_t(l)].data() + size_t(n_past_) * vd;
        const std::string qkv = p + "attn_qkv.weight";
        matmul(a.fused_qkv ? weight_rows(qkv, 0, int64_t(qd)) : weight(p + "attn_q.weight"), h, q.data(), T,
               bq.empty() ? nullptr : bq.data());
        matmul(a.fused_qkv ? weight_rows(qkv, int64_t(qd), int64_t(kd)) : weight(p + "attn_k.weight"), h, k, T,
               bk.empty() ? nullptr : bk.data());
        matmul(a.fused_qkv ? weight_rows(qkv, int64_t(qd + kd), int64_t(vd)) : weight(p + "attn_v.weight"), h, v, T,
               bv.empty() ? nullptr : bv.data());
        if (a.qk_norm == QkNorm::PerHead || a.qk_norm == QkNorm::FullWidth) {
            // RMSNorm of each head (rows of head_dim) or of the whole projection (one row per token).
            const bool per_head = a.qk_norm == QkNorm::PerHead;
            const auto qn = values(p + "attn_q_norm.weight"), kn = values(p + "attn_k_norm.weight");
            cpu::rms_norm(q.data(), qn.data(), q.data(), per_head ? T * a.n_head : T, per_head ? a.head_dim : int64_t(qd),
                          spec_.norm_eps);
            cpu::rms_norm(k, kn.data(), k, per_head ? T * a.n_head_kv : T, per_head ? a.head_dim : int64_t(kd),
                          spec_.norm_eps);
        }
        if (a.rope.enabled) {
            std::vector<float> factors;
            const cpu::RopeParams rp = rope_params(a.rope, factors);
            cpu::rope(q.data(), T, a.n_head, a.head_dim, pos_.data(), rp);
            cpu::rope(k, T, a.n_head_kv, a.head_dim, pos_.data(), rp);
        }
        store_in_cache(k, size_t(T), kd);
        store_in_cache(v, size_t(T), vd);
        if (a.sinks) sinks = values(p + "attn_sinks.weight");
        att.resize(size_t(T) * size_t(a.n_head * a.head_dim_v));
        cpu::attention(q.data(), k_[size_t(l)].data(), v_[size_t(l)].data(), pos_.data(), kv_pos_.data(), att.data(),
                       keep ? pr.data() : nullptr, T, n_kv, a, sinks.empty() ? nullptr : sinks.data());
        out_width = a.n_head * a.head_dim_v;
    }
    record_probs(l, a, T, n_kv, pr, probs_layer, probs, sinks.empty() ? nullptr : sinks.data());

    std::vector<float> o(size_t(T) * size_t(spec_.n_embd)), bo;
    if (a.bias_o) bo = values(p + "attn_output.bias");
    const cpu::WeightView wo = weight(p + "attn_output.weight");
    if (wo.n_in != out_width) throw ModelError("reference forward: " + p + "attn_output.weight has the wrong width");
    matmul(wo, att.data(), o.data(), T, bo.empty() ? nullptr : bo.data());
    return o;
}

// Multi-head latent attention (DeepSeek V2), the textbook form:
//   q        = W_qb rms_norm(W_qa h)  (or W_q h)       per head [q_nope | q_rope]
//   [c | kr] = W_kva h;  c = rms_norm(c)               the cached latent and shared RoPE key
//   q_rope, kr = RoPE(q_rope), RoPE(kr)
//   per head h and cached position j:  k_h,j = [W_kb,h^T c_j | kr_j],  v_h,j = W_vb,h c_j
//   out_h    = softmax(scale q_h . k_h) v_h            (plain multi-head attention)
// where W_kb,h (attn_k_b, {qk_nope, kv_lora} per head) maps a head's no-RoPE query into the
// latent in the GPU's absorbed form, so its transpose expands the latent into the key here.
std::vector<float> ReferenceForward::mla_attention(int l, const float* h, int T, std::vector<float>* pr) {
    const AttentionSpec& a = spec_.layers[size_t(l)].attn;
    const MlaSpec& m = a.mla;
    const std::string p = "blk." + std::to_string(l) + ".";
    const int H = a.n_head, qh = m.qk_nope + m.qk_rope, row = m.kv_lora_rank + m.qk_rope;
    const int n_kv = n_past_ + T;

    std::vector<float> q(size_t(T) * size_t(H) * size_t(qh));
    if (m.q_lora_rank > 0) {
        std::vector<float> qa(size_t(T) * size_t(m.q_lora_rank));
        matmul(p + "attn_q_a.weight", h, qa.data(), T);
        const auto qa_norm = values(p + "attn_q_a_norm.weight");
        cpu::rms_norm(qa.data(), qa_norm.data(), qa.data(), T, m.q_lora_rank, spec_.norm_eps);
        matmul(p + "attn_q_b.weight", qa.data(), q.data(), T);
    } else {
        matmul(p + "attn_q.weight", h, q.data(), T);
    }
    float* kv = k_[size_t(l)].data() + size_t(n_past_) * size_t(row);  // this step's [c | kr] rows
    matmul(p + "attn_kv_a_mqa.weight", h, kv, T);
    const auto kv_norm = values(p + "attn_kv_a_norm.weight");
    for (int t = 0; t < T; ++t)
        cpu::rms_norm(kv + size_t(t) * size_t(row), kv_norm.data(), kv + size_t(t) * size_t(row), 1, m.kv_lora_rank,
                      spec_.norm_eps);

    // RoPE of the last qk_rope dims of each query head and of kr (gathered, rotated, put back).
    std::vector<float> factors;
    const cpu::RopeParams rp = rope_params(a.rope, factors);
    std::vector<float> qr(size_t(T) * size_t(H) * size_t(m.qk_rope)), kr(size_t(T) * size_t(m.qk_rope));
    for (size_t th = 0; th < size_t(T) * size_t(H); ++th)
        std::copy_n(&q[th * size_t(qh) + size_t(m.qk_nope)], m.qk_rope, &qr[th * size_t(m.qk_rope)]);
    for (size_t t = 0; t < size_t(T); ++t) std::copy_n(kv + t * size_t(row) + m.kv_lora_rank, m.qk_rope, &kr[t * size_t(m.qk_rope)]);
    cpu::rope(qr.data(), T, H, m.qk_rope, pos_.data(), rp);
    cpu::rope(kr.data(), T, 1, m.qk_rope, pos_.data(), rp);
    for (size_t th = 0; th < size_t(T) * size_t(H); ++th)
        std::copy_n(&qr[th * size_t(m.qk_rope)], m.qk_rope, &q[th * size_t(qh) + size_t(m.qk_nope)]);
    for (size_t t = 0; t < size_t(T); ++t) std::copy_n(&kr[t * size_t(m.qk_rope)], m.qk_rope, kv + t * size_t(row) + m.kv_lora_rank);
    store_in_cache(kv, size_t(T), size_t(row));

    // Every cached position's per-head keys [n_kv, H, qh] and values [n_kv, H, v_head].
    const float* cache = k_[size_t(l)].data();
    std::vector<float> latent(size_t(n_kv) * size_t(m.kv_lora_rank));
    for (size_t j = 0; j < size_t(n_kv); ++j)
        std::copy_n(cache + j * size_t(row), m.kv_lora_rank, &latent[j * size_t(m.kv_lora_rank)]);
    std::vector<float> k(size_t(n_kv) * size_t(H) * size_t(qh)), v(size_t(n_kv) * size_t(H) * size_t(m.v_head));
    std::vector<float> k_nope(size_t(n_kv) * size_t(m.qk_nope)), v_h(size_t(n_kv) * size_t(m.v_head));
    for (int hd = 0; hd < H; ++hd) {
        cpu::matmul_transposed(expert(p + "attn_k_b.weight", hd), latent.data(), k_nope.data(), n_kv);
        cpu::matmul(expert(p + "attn_v_b.weight", hd), latent.data(), v_h.data(), n_kv);
        for (size_t j = 0; j < size_t(n_kv); ++j) {
            float* kj = &k[(j * size_t(H) + size_t(hd)) * size_t(qh)];
            std::copy_n(&k_nope[j * size_t(m.qk_nope)], m.qk_nope, kj);
            std::copy_n(cache + j * size_t(row) + m.kv_lora_rank, m.qk_rope, kj + m.qk_nope);
            std::copy_n(&v_h[j * size_t(m.v_head)], m.v_head, &v[(j * size_t(H) + size_t(hd)) * size_t(m.v_head)]);
        }
    }
    AttentionParams ap = a;
    ap.n_head_kv = H;
    ap.head_dim = qh;
    ap.head_dim_v = m.v_head;
    std::vector<float> out(size_t(T) * size_t(H) * size_t(m.v_head));
    cpu::attention(q.data(), k.data(), v.data(), pos_.data(), kv_pos_.data(), out.data(), pr ? pr->data() : nullptr, T,
                   n_kv, ap);
    return out;
}

}  // namespace vkllm::model
