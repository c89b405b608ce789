// The reference forward's skeleton: weights from the file, the embeddings, the per-layer walk
// (attention block, FFN block, their norms and residual adds as the layer's spec places them),
// the residual edits and the output head. The blocks themselves are in
// reference_forward_attention.cpp and reference_forward_ffn.cpp.
#include "reference/reference_forward.h"

#include <algorithm>
#include <stdexcept>

#include "cpu/ref_ops.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "reference/reference_forward_rwkv.h"

namespace vkllm::model {
namespace {

// The features of a spec the reference does not walk: each a ModelError naming it.
void check_supported(const ModelSpec& s) {
    auto no = [&](bool unsupported, const std::string& what) {
        if (unsupported) throw ModelError("reference forward: " + s.arch + ": " + what + " is not supported");
    };
    no(s.learned_positions, "learned position embeddings");
    no(s.token_types || s.embd_norm, "BERT-style embeddings");
    no(!s.final_norm, "a model without a final norm");
    no(s.residual_scale != 1.0f || s.logit_scale != 1.0f, "residual or logit multipliers");
    for (const LayerSpec& L : s.layers) {
        no(L.mixer != LayerMixer::Attention && L.mixer != LayerMixer::ShortConv && L.mixer != LayerMixer::Mamba2 &&
               L.mixer != LayerMixer::GatedDeltaNet,
           "a layer without attention, a short convolution, a Mamba-2 or a Gated DeltaNet mixer");
        no(L.mixer != LayerMixer::Mamba2 && !L.has_ffn, "a layer without an FFN after attention");
        no(L.ffn_norm_unsuffixed && s.norm != NormKind::RMSNorm, "an unsuffixed FFN norm of a LayerNorm model");
        const AttentionSpec& a = L.attn;
        no(L.norm_placement == NormPlacement::Post || L.norm_placement == NormPlacement::PostResidual,
           "post-norm placement");
        no(a.temperature_floor > 0, "NoPE attention temperature");
        no(a.gated && (a.bias_qkv || a.bias_o || a.fused_qkv || a.sinks || a.qk_norm != QkNorm::PerHead ||
                       a.mla.kv_lora_rank > 0 || L.parallel),
           "gated attention other than Qwen3.5's (per-head QK-norm, no biases, sinks or fused projections)");
        no(a.qk_norm == QkNorm::L2AfterRope, "L2 QK-norm after RoPE");
        no(!a.causal, "bidirectional attention");
        no(a.rope.longrope, "LongRoPE");
        no(a.mla.kv_lora_rank > 0 && (a.bias_qkv || a.qk_norm != QkNorm::None), "MLA with biases or QK-norm");
        no(L.ffn.fused_gate_up, "a fused gate/up FFN");
        no(!L.ffn.gated && L.ffn.activation != Activation::GeluTanh, "a plain FFN other than GELU");
        no(L.ffn.moe.n_expert > 0 && (L.ffn.bias || L.parallel), "experts with biases or in a parallel block");
        no(L.ffn.moe.swiglu_alpha > 0 || L.ffn.moe.weight_input || L.ffn.moe.expert_bias,
           "clamped SwiGLU, weighted expert inputs or expert biases");
    }
}

}  // namespace

ReferenceForward::ReferenceForward(const gguf::File& file, const ModelSpec& spec, int n_ctx, bool round_activations,
                                   KvCacheType cache)
    : file_(file), spec_(spec), n_ctx_(n_ctx), round_activations_(round_activations), cache_(cache) {
    const bool rwkv = std::any_of(spec.layers.begin(), spec.layers.end(),
                                  [](const LayerSpec& L) { return L.mixer == LayerMixer::Rwkv7; });
    if (rwkv) {  // RWKV-7 has its own walk; it has no KV cache to size
        if (!std::all_of(spec.layers.begin(), spec.layers.end(),
                         [](const LayerSpec& L) { return L.mixer == LayerMixer::Rwkv7 && L.has_ffn; }))
            throw ModelError("reference forward: " + spec.arch + ": RWKV-7 layers mixed with others are not supported");
        rwkv_ = std::make_unique<Rwkv7ReferenceForward>(file);
        return;
    }
    check_supported(spec);
    for (const LayerSpec& L : spec.layers) {
        const AttentionSpec& a = L.attn;
        const bool mamba2 = L.ssm.enabled() && !L.ssm.mamba1();  // or Gated DeltaNet: the same state sizes
        conv_.emplace_back(L.shortconv.enabled() ? size_t(L.shortconv.channels) * size_t(L.shortconv.l_cache - 1)
                           : mamba2          ? size_t(L.ssm.conv_channels()) * size_t(L.ssm.d_conv - 1)
                                             : 0);
        ssm_.emplace_back(mamba2 ? size_t(L.ssm.d_inner) * size_t(L.ssm.d_state) : 0);
        if (a.mla.kv_lora_rank > 0) {
            k_.emplace_back(size_t(n_ctx) * size_t(a.mla.kv_lora_rank + a.mla.qk_rope));
            v_.emplace_back();
        } else {
            k_.emplace_back(size_t(n_ctx) * size_t(a.n_head_kv * a.head_dim));
            v_.emplace_back(size_t(n_ctx) * size_t(a.n_head_kv * a.head_dim_v));
        }
    }
}

ReferenceForward::ReferenceForward(ReferenceForward&&) noexcept = default;
ReferenceForward::~ReferenceForward() = default;

void ReferenceForward::store_in_cache(float* p, size_t rows, size_t n) const {
    if (cache_ == KvCacheType::F16) {
        for (size_t i = 0; i < rows * n; ++i) p[i] = gguf::fp16_to_fp32(gguf::fp32_to_fp16(p[i]));
    } else if (cache_ == KvCacheType::Q8_0) {
        if (n % 32) throw ModelError("reference forward: a q8_0 cache needs rows of whole 32-value blocks");
        std::vector<float> row(n);
        for (size_t r = 0; r < rows; ++r) {
            std::copy_n(p + r * n, n, row.begin());
            cpu::round_activations(row.data(), p + r * n, int64_t(n), 32);  // ggml's Q8_0, as the GPU stores it
        }
    }
}

bool ReferenceForward::has(const std::string& name) const { return file_.find_tensor(name) != nullptr; }

cpu::WeightView ReferenceForward::weight(const std::string& name) const {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t || t->dims.size() != 2) throw ModelError("reference forward: missing 2-D tensor '" + name + "'");
    return {t->type, t->data, int64_t(t->dims[0]), int64_t(t->dims[1])};
}

cpu::WeightView ReferenceForward::weight_rows(const std::string& name, int64_t first, int64_t n) const {
    cpu::WeightView w = weight(name);
    if (first < 0 || n < 0 || first + n > w.n_out)
        throw ModelError("reference forward: rows " + std::to_string(first) + ".." + std::to_string(first + n) + " of '" +
                         name + "' are out of range");
    w.data += size_t(first) * cpu::weight_row_bytes(w);
    w.n_out = n;
    return w;
}

// A 3-D tensor {n_in, n_out, n} holds n matrices one after another; matrix e of it.
cpu::WeightView ReferenceForward::expert(const std::string& name, int e) const {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t || t->dims.size() != 3) throw ModelError("reference forward: missing 3-D tensor '" + name + "'");
    if (e < 0 || uint64_t(e) >= t->dims[2])
        throw ModelError("reference forward: matrix " + std::to_string(e) + " of '" + name + "' is out of range");
    cpu::WeightView w{t->type, t->data, int64_t(t->dims[0]), int64_t(t->dims[1])};
    w.data += size_t(e) * size_t(w.n_out) * cpu::weight_row_bytes(w);
    return w;
}

std::vector<float> ReferenceForward::values(const std::string& name) const {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) throw ModelError("reference forward: missing tensor '" + name + "'");
    return gguf::dequantize_tensor(*t);
}

void ReferenceForward::matmul(const cpu::WeightView& w, const float* x, float* y, int n_tokens, const float* bias) const {
    // The block ggml's CPU backend rounds the activations to before its dot products with a
    // weight of this type (the type's vec_dot_type: Q8_0 for 32, Q8_K for 256).
    int block = 0;
    switch (w.type) {
        case gguf::TensorType::Q4_0: case gguf::TensorType::Q4_1: case gguf::TensorType::Q5_0:
        case gguf::TensorType::Q5_1: case gguf::TensorType::Q8_0: case gguf::TensorType::MXFP4:
        case gguf::TensorType::IQ4_NL:
            block = 32;
            break;
        case gguf::TensorType::Q2_K: case gguf::TensorType::Q3_K: case gguf::TensorType::Q4_K:
        case gguf::TensorType::Q5_K: case gguf::TensorType::Q6_K:
        case gguf::TensorType::IQ2_XXS: case gguf::TensorType::IQ2_XS: case gguf::TensorType::IQ2_S: case gguf::TensorType::IQ3_XXS: case gguf::TensorType::IQ3_S:
        case gguf::TensorType::IQ1_S: case gguf::TensorType::IQ1_M: case gguf::TensorType::IQ4_XS: case gguf::TensorType::TQ1_0: case gguf::TensorType::TQ2_0:
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
        cpu::matmul(w, rounded.data(), y, n_tokens, bias);
        return;
    }
    if (!round_activations_ || block == 0 || w.n_in % block) {
        cpu::matmul(w, x, y, n_tokens, bias);
        return;
    }
    std::vector<float> rounded(size_t(n_tokens) * size_t(w.n_in));
    cpu::round_activations(x, rounded.data(), int64_t(rounded.size()), block);
    cpu::matmul(w, rounded.data(), y, n_tokens, bias);
}

void ReferenceForward::matmul(const std::string& name, const float* x, float* y, int n_tokens) const {
    matmul(weight(name), x, y, n_tokens);
}

void ReferenceForward::norm(const std::string& name, const float* x, float* y, int n_tokens) const {
    const std::vector<float> w = values(name + ".weight");
    if (spec_.norm == NormKind::RMSNorm) {
        cpu::rms_norm(x, w.data(), y, n_tokens, spec_.n_embd, spec_.norm_eps);
    } else {
        const std::vector<float> b = has(name + ".bias") ? values(name + ".bias") : std::vector<float>{};
        cpu::layer_norm(x, w.data(), b.empty() ? nullptr : b.data(), y, n_tokens, spec_.n_embd, spec_.norm_eps);
    }
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

// x = token_embd[tokens] * embd_scale.
void ReferenceForward::embeddings(const std::vector<int32_t>& tokens, std::vector<float>& x) const {
    const int T = int(tokens.size());
    cpu::get_rows(weight("token_embd.weight"), tokens.data(), T, x.data());
    if (spec_.embd_scale != 1.0f) cpu::scale(x.data(), spec_.embd_scale, x.data(), int64_t(x.size()));
}

std::vector<float> ReferenceForward::eval(const std::vector<int32_t>& tokens, int probs_layer, std::vector<float>* probs) {
    const int T = int(tokens.size());
    const int E = spec_.n_embd;
    if (n_past_ + T > n_ctx_) throw std::out_of_range("reference forward: context full");
    if (rwkv_) {
        if (probs_layer >= 0 || !edits_.empty())
            throw ModelError("reference forward: " + spec_.arch +
                             ": attention probabilities and residual edits are not supported");
        std::vector<float> logits = rwkv_->eval(tokens);
        n_past_ += T;
        return logits;
    }
    pos_.resize(size_t(T));
    for (int i = 0; i < T; ++i) pos_[size_t(i)] = n_past_ + i;
    kv_pos_.resize(size_t(n_past_ + T));
    for (size_t i = 0; i < kv_pos_.size(); ++i) kv_pos_[i] = int32_t(i);

    attention.clear();
    attention_sink.clear();
    residual.clear();
    routing.clear();
    ffn_in.assign(size_t(spec_.n_layer), {});
    ffn_out.assign(size_t(spec_.n_layer), {});
    expert_in.assign(size_t(spec_.n_layer), {});
    expert_out.assign(size_t(spec_.n_layer), {});

    std::vector<float> x(size_t(T) * size_t(E)), h(x.size());
    embeddings(tokens, x);
    apply_edits(-1, x.data(), T);
    residual.push_back(x);

    for (int l = 0; l < spec_.n_layer; ++l) {
        const LayerSpec& L = spec_.layers[size_t(l)];
        const std::string p = "blk." + std::to_string(l) + ".";
        const bool sandwich = L.norm_placement == NormPlacement::Sandwich;
        // Pre: x += f(norm(x)). Sandwich: x += post_norm(f(norm(x))). Parallel: both blocks read
        // the layer input, x += attn(norm(x)) + ffn(norm'(x)).
        norm(p + L.attn_norm_tensor, x.data(), h.data(), T);
        std::vector<float> o = L.mixer == LayerMixer::ShortConv       ? short_conv_block(l, h.data(), T)
                               : L.mixer == LayerMixer::Mamba2        ? mamba2_block(l, h.data(), T)
                               : L.mixer == LayerMixer::GatedDeltaNet ? delta_net_block(l, h.data(), T)
                               : L.attn.gated ? gated_attention_block(l, h.data(), T, probs_layer, probs)
                                              : attention_block(l, h.data(), T, probs_layer, probs);
        if (L.ssm_beside_attention) {  // Falcon-H1: x += attn(h) + mamba2(h)
            const std::vector<float> m = mamba2_block(l, h.data(), T);
            cpu::add(o.data(), m.data(), o.data(), int64_t(o.size()));
        }
        if (L.parallel) {
            norm(p + L.ffn_norm_tensor, x.data(), h.data(), T);
            std::vector<float> f = ffn_block(l, h.data(), T);
            ffn_out[size_t(l)] = f;
            cpu::add(o.data(), f.data(), o.data(), int64_t(o.size()));
            cpu::add(x.data(), o.data(), x.data(), int64_t(x.size()));
            apply_edits(l, x.data(), T);
            residual.push_back(x);
            continue;
        }
        if (sandwich) norm(p + "post_attention_norm", o.data(), o.data(), T);
        cpu::add(x.data(), o.data(), x.data(), int64_t(x.size()));
        if (!L.has_ffn) {  // a Mamba-2 layer alone
            apply_edits(l, x.data(), T);
            residual.push_back(x);
            continue;
        }

        if (L.ffn_norm_unsuffixed)  // Falcon-H1's blk.N.ffn_norm
            cpu::rms_norm(x.data(), values(p + L.ffn_norm_tensor).data(), h.data(), T, E, spec_.norm_eps);
        else
            norm(p + L.ffn_norm_tensor, x.data(), h.data(), T);
        o = ffn_block(l, h.data(), T);
        if (L.ffn.moe.n_ff_shared_gated > 0) {  // Qwen3-Next: the gated shared expert beside the routed ones
            const std::vector<float> shared = gated_shared_expert(l, h.data(), T);
            cpu::add(o.data(), shared.data(), o.data(), int64_t(o.size()));
        }
        if (sandwich) norm(p + "post_ffw_norm", o.data(), o.data(), T);
        if (L.ffn.moe.n_expert == 0) ffn_out[size_t(l)] = o;
        cpu::add(x.data(), o.data(), x.data(), int64_t(x.size()));
        apply_edits(l, x.data(), T);
        residual.push_back(x);
    }
    norm(spec_.output_norm_tensor, x.data(), h.data(), T);
    std::vector<float> logits(size_t(T) * size_t(spec_.n_vocab));
    matmul(spec_.tied_embeddings ? "token_embd.weight" : "output.weight", h.data(), logits.data(), T);
    if (spec_.final_softcap > 0) cpu::softcap(logits.data(), logits.data(), int64_t(logits.size()), spec_.final_softcap);
    n_past_ += T;
    return logits;
}

}  // namespace vkllm::model
