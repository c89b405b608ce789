#include "model/reference_forward.h"

#include <algorithm>
#include <stdexcept>

#include "cpu/ref_ops.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"

namespace vkllm::model {
namespace {

cpu::WeightView view(const gguf::File& f, const std::string& name) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    if (!t || t->dims.size() != 2) throw ModelError("reference forward: missing 2-D tensor '" + name + "'");
    return {t->type, t->data, int64_t(t->dims[0]), int64_t(t->dims[1])};
}

std::vector<float> vec(const gguf::File& f, const std::string& name) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    if (!t) throw ModelError("reference forward: missing tensor '" + name + "'");
    return gguf::dequantize_tensor(*t);
}

}  // namespace

ReferenceForward::ReferenceForward(const gguf::File& file, const ModelSpec& spec, int n_ctx, bool round_activations)
    : file_(file), spec_(spec), n_ctx_(n_ctx), round_activations_(round_activations) {
    for (const LayerSpec& L : spec.layers) {
        k_.emplace_back(size_t(n_ctx) * size_t(L.attn.n_head_kv * L.attn.head_dim));
        v_.emplace_back(size_t(n_ctx) * size_t(L.attn.n_head_kv * L.attn.head_dim_v));
    }
}

void ReferenceForward::matmul(const std::string& name, const float* x, float* y, int n_tokens) const {
    cpu::WeightView w = view(file_, name);
    int block = 0;
    switch (w.type) {
        case gguf::TensorType::Q4_0: case gguf::TensorType::Q4_1: case gguf::TensorType::Q5_0:
        case gguf::TensorType::Q5_1: case gguf::TensorType::Q8_0: case gguf::TensorType::MXFP4:
            block = 32;
            break;
        case gguf::TensorType::Q2_K: case gguf::TensorType::Q3_K: case gguf::TensorType::Q4_K:
        case gguf::TensorType::Q5_K: case gguf::TensorType::Q6_K:
            block = 256;
            break;
        default:
            break;
    }
    if (round_activations_ && (w.type == gguf::TensorType::F16 || w.type == gguf::TensorType::BF16)) {
        std::vector<float> rounded(size_t(n_tokens) * size_t(w.n_in));
        for (size_t i = 0; i < rounded.size(); ++i)
            rounded[i] = w.type == gguf::TensorType::F16 ? gguf::fp16_to_fp32(gguf::fp32_to_fp16(x[i]))
                                                         : gguf::bf16_to_fp32(gguf::fp32_to_bf16(x[i]));
        cpu::matmul(w, rounded.data(), y, n_tokens);
        return;
    }
    if (!round_activations_ || block == 0 || w.n_in % block) {
        cpu::matmul(w, x, y, n_tokens);
        return;
    }
    std::vector<float> rounded(size_t(n_tokens) * size_t(w.n_in));
    cpu::round_activations(x, rounded.data(), int64_t(rounded.size()), block);
    cpu::matmul(w, rounded.data(), y, n_tokens);
}

void ReferenceForward::set_residual_edits(const std::vector<ResidualEdit>& edits) {
    edits_.clear();
    edit_state_.clear();
    for (const ResidualEdit& e : edits) {
        cpu::ChannelEdit c;
        c.channel = e.channel;
        c.mode = e.mode == ResidualEdit::Mode::Zero    ? cpu::ChannelEdit::Zero
                 : e.mode == ResidualEdit::Mode::Value ? cpu::ChannelEdit::Value
                 : e.mode == ResidualEdit::Mode::Scale ? cpu::ChannelEdit::Scale
                                                       : cpu::ChannelEdit::Mean;
        c.value = e.value;
        edits_[e.layer].push_back(c);
        edit_state_[e.layer].assign(2 * edits_[e.layer].size(), 0.0);
    }
}

void ReferenceForward::apply_edits(int layer, float* x, int n_tokens) {
    auto it = edits_.find(layer);
    if (it == edits_.end()) return;
    cpu::residual_edit(x, n_tokens, spec_.n_embd, it->second.data(), int(it->second.size()), edit_state_[layer].data());
}

std::vector<float> ReferenceForward::eval(const std::vector<int32_t>& tokens, int probs_layer, std::vector<float>* probs) {
    const int T = int(tokens.size());
    const int E = spec_.n_embd;
    if (n_past_ + T > n_ctx_) throw std::out_of_range("reference forward: context full");
    std::vector<int32_t> pos(static_cast<size_t>(T));
    for (int i = 0; i < T; ++i) pos[size_t(i)] = n_past_ + i;
    const int n_kv = n_past_ + T;
    std::vector<int32_t> kv_pos(static_cast<size_t>(n_kv));
    for (int i = 0; i < n_kv; ++i) kv_pos[size_t(i)] = i;

    std::vector<float> x(size_t(T) * size_t(E)), h(x.size());
    cpu::get_rows(view(file_, "token_embd.weight"), tokens.data(), T, x.data());
    attention.clear();
    residual.clear();
    ffn_in.assign(size_t(spec_.n_layer), {});
    ffn_out.assign(size_t(spec_.n_layer), {});
    apply_edits(-1, x.data(), T);
    residual.push_back(x);
    std::vector<float> freqs;
    if (file_.find_tensor("rope_freqs.weight")) freqs = vec(file_, "rope_freqs.weight");

    for (int l = 0; l < spec_.n_layer; ++l) {
        const LayerSpec& L = spec_.layers[size_t(l)];
        const AttentionSpec& a = L.attn;
        const std::string p = "blk." + std::to_string(l) + ".";
        const size_t qd = size_t(a.n_head * a.head_dim), kd = size_t(a.n_head_kv * a.head_dim);
        const size_t vd = size_t(a.n_head_kv * a.head_dim_v);

        auto norm_w = vec(file_, p + "attn_norm.weight");
        cpu::rms_norm(x.data(), norm_w.data(), h.data(), T, E, spec_.norm_eps);
        std::vector<float> q(size_t(T) * qd);
        matmul(p + "attn_q.weight", h.data(), q.data(), T);
        float* k = k_[size_t(l)].data() + size_t(n_past_) * kd;
        float* v = v_[size_t(l)].data() + size_t(n_past_) * vd;
        matmul(p + "attn_k.weight", h.data(), k, T);
        matmul(p + "attn_v.weight", h.data(), v, T);
        if (a.rope.enabled) {
            cpu::RopeParams rp;
            rp.n_dims = a.rope.n_dims;
            rp.neox = a.rope.neox;
            rp.freq_base = a.rope.freq_base;
            if (a.rope.scaling == RopeScaling::Linear) {
                rp.scaling = cpu::RopeParams::Linear;
                rp.freq_scale = 1.0f / a.rope.factor;
            }
            rp.freq_factors = a.rope.freq_factors && !freqs.empty() ? freqs.data() : nullptr;
            cpu::rope(q.data(), T, a.n_head, a.head_dim, pos.data(), rp);
            cpu::rope(k, T, a.n_head_kv, a.head_dim, pos.data(), rp);
        }
        cpu::AttentionParams ap;
        ap.n_head = a.n_head;
        ap.n_head_kv = a.n_head_kv;
        ap.head_dim = a.head_dim;
        ap.head_dim_v = a.head_dim_v;
        ap.scale = a.scale;
        ap.window = a.window;
        ap.softcap = a.softcap;
        std::vector<float> att(size_t(T) * size_t(a.n_head * a.head_dim_v));
        std::vector<float> pr;
        const bool recorded = std::find(record_attention_layers.begin(), record_attention_layers.end(), l) !=
                              record_attention_layers.end();
        if (l == probs_layer || recorded) pr.resize(size_t(T) * size_t(a.n_head) * size_t(n_kv));
        cpu::attention(q.data(), k_[size_t(l)].data(), v_[size_t(l)].data(), pos.data(), kv_pos.data(), att.data(),
                       pr.empty() ? nullptr : pr.data(), T, n_kv, ap);
        if (probs && l == probs_layer)
            probs->assign(pr.end() - long(a.n_head) * n_kv, pr.end());  // the last token's rows
        if (recorded) attention[l] = pr;
        std::vector<float> o(size_t(T) * size_t(E));
        matmul(p + "attn_output.weight", att.data(), o.data(), T);
        cpu::add(x.data(), o.data(), x.data(), int64_t(x.size()));

        auto ffn_w = vec(file_, p + "ffn_norm.weight");
        cpu::rms_norm(x.data(), ffn_w.data(), h.data(), T, E, spec_.norm_eps);
        std::vector<float> g(size_t(T) * size_t(L.ffn.n_ff)), u(g.size());
        matmul(p + "ffn_gate.weight", h.data(), g.data(), T);
        matmul(p + "ffn_up.weight", h.data(), u.data(), T);
        cpu::swiglu(g.data(), u.data(), g.data(), T, L.ffn.n_ff);
        matmul(p + "ffn_down.weight", g.data(), o.data(), T);
        cpu::add(x.data(), o.data(), x.data(), int64_t(x.size()));
        ffn_in[size_t(l)] = g;
        ffn_out[size_t(l)] = o;
        apply_edits(l, x.data(), T);
        residual.push_back(x);
    }
    auto out_norm = vec(file_, "output_norm.weight");
    cpu::rms_norm(x.data(), out_norm.data(), h.data(), T, E, spec_.norm_eps);
    std::vector<float> logits(size_t(T) * size_t(spec_.n_vocab));
    matmul(spec_.tied_embeddings ? "token_embd.weight" : "output.weight", h.data(), logits.data(), T);
    n_past_ += T;
    return logits;
}

}  // namespace vkllm::model
