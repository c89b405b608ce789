#include "model/spec.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <sstream>

#include "cpu/ref_ops.h"
#include "gguf/gguf.h"

namespace vkllm::model {
namespace {

// Reads `<arch>.<key>` metadata with clear errors for missing or malformed values.
class Meta {
public:
    Meta(const gguf::File& f, std::string arch) : f_(f), arch_(std::move(arch)) {}
    const gguf::File& file() const { return f_; }

    bool has(const std::string& key) const { return f_.has(arch_ + "." + key); }
    int64_t integer(const std::string& key) const {
        auto v = f_.get_int(arch_ + "." + key);
        if (!v) throw ModelError(f_.path() + ": missing metadata key '" + arch_ + "." + key + "'");
        return *v;
    }
    int64_t integer(const std::string& key, int64_t fallback) const {
        return f_.get_int(arch_ + "." + key).value_or(fallback);
    }
    double real(const std::string& key, double fallback) const {
        return f_.get_float(arch_ + "." + key).value_or(fallback);
    }
    std::string text(const std::string& key, const std::string& fallback) const {
        return f_.get_string(arch_ + "." + key).value_or(fallback);
    }
    // A per-layer integer that files store either once or as an array of n_layer values.
    int64_t per_layer(const std::string& key, int layer, int64_t fallback) const {
        const gguf::Value* v = f_.find(arch_ + "." + key);
        if (!v) return fallback;
        if (v->type != gguf::ValueType::ARRAY) return v->as_int(arch_ + "." + key);
        if (size_t(layer) >= v->arr.size())
            throw ModelError(f_.path() + ": metadata '" + arch_ + "." + key + "' has " +
                             std::to_string(v->arr.size()) + " values for " + std::to_string(layer + 1) + "+ layers");
        return v->arr[size_t(layer)].as_int(arch_ + "." + key);
    }

private:
    const gguf::File& f_;
    std::string arch_;
};

void require_positive(const gguf::File& f, const char* what, int64_t v, int64_t max = 1 << 24) {
    if (v <= 0 || v > max)
        throw ModelError(f.path() + ": " + what + " = " + std::to_string(v) + " is out of range");
}

// Hyperparameters every transformer family shares, read with llama.cpp's key names.
ModelSpec common_spec(const Meta& m, const std::string& arch) {
    const gguf::File& f = m.file();
    ModelSpec s;
    s.arch = arch;
    s.name = f.get_string("general.name").value_or("");
    s.n_layer = int(m.integer("block_count"));
    s.n_embd = int(m.integer("embedding_length"));
    s.n_ctx_train = int(m.integer("context_length", 2048));
    require_positive(f, "block_count", s.n_layer, 4096);
    require_positive(f, "embedding_length", s.n_embd);
    require_positive(f, "context_length", s.n_ctx_train, int64_t(1) << 30);

    const gguf::TensorInfo* embd = f.find_tensor("token_embd.weight");
    if (!embd) throw ModelError(f.path() + ": missing tensor 'token_embd.weight'");
    if (embd->dims.size() != 2 || int64_t(embd->dims[0]) != s.n_embd)
        throw ModelError(f.path() + ": tensor 'token_embd.weight' is not [" + std::to_string(s.n_embd) + ", n_vocab]");
    s.n_vocab = int(embd->dims[1]);
    s.tied_embeddings = f.find_tensor("output.weight") == nullptr;

    for (int l = 0; l < s.n_layer; ++l) {
        LayerSpec L;
        AttentionSpec& a = L.attn;
        // Each key is checked on its own first, so a message names the key that is wrong; where
        // only the pair is inconsistent, it names both.
        a.n_head = int(m.per_layer("attention.head_count", l, 0));
        require_positive(f, "attention.head_count", a.n_head, 1 << 16);
        if (!m.has("attention.key_length") && s.n_embd % a.n_head)
            throw ModelError(f.path() + ": attention.head_count = " + std::to_string(a.n_head) +
                             " does not divide embedding_length = " + std::to_string(s.n_embd) +
                             " (without attention.key_length a head is embedding_length / head_count wide)");
        a.n_head_kv = int(m.per_layer("attention.head_count_kv", l, a.n_head));
        require_positive(f, "attention.head_count_kv", a.n_head_kv, 1 << 16);
        if (a.n_head % a.n_head_kv)
            throw ModelError(f.path() + ": attention.head_count = " + std::to_string(a.n_head) +
                             " is not a multiple of attention.head_count_kv = " + std::to_string(a.n_head_kv) +
                             " (each key/value head serves a whole number of query heads)");
        a.head_dim = int(m.integer("attention.key_length", s.n_embd / a.n_head));
        a.head_dim_v = int(m.integer("attention.value_length", a.head_dim));
        require_positive(f, "attention.key_length", a.head_dim, 4096);
        require_positive(f, "attention.value_length", a.head_dim_v, 4096);
        a.scale = 1.0f / std::sqrt(float(a.head_dim));

        RopeSpec& r = a.rope;
        r.n_dims = int(m.integer("rope.dimension_count", a.head_dim));
        if (r.n_dims > a.head_dim || r.n_dims % 2)
            throw ModelError(f.path() + ": rope.dimension_count " + std::to_string(r.n_dims) + " does not fit head dim " +
                             std::to_string(a.head_dim));
        r.freq_base = float(m.real("rope.freq_base", 10000.0));
        std::string scaling = m.text("rope.scaling.type", "none");
        double factor = m.real("rope.scaling.factor", 1.0);
        if (scaling == "none" || factor == 1.0 || factor == 0.0) r.scaling = RopeScaling::None;
        else if (scaling == "linear") r.scaling = RopeScaling::Linear;
        else if (scaling == "yarn") r.scaling = RopeScaling::Yarn;
        else throw ModelError(f.path() + ": rope scaling '" + scaling + "' is not supported");
        if (r.scaling != RopeScaling::None) r.factor = float(factor);
        r.n_ctx_orig = int(m.integer("rope.scaling.original_context_length", s.n_ctx_train));
        if (r.scaling == RopeScaling::Yarn) {
            r.ext_factor = 1.0f;
            r.beta_fast = float(m.real("rope.scaling.yarn_beta_fast", 32.0));
            r.beta_slow = float(m.real("rope.scaling.yarn_beta_slow", 1.0));
        }
        r.attn_factor = float(m.real("rope.scaling.attn_factor", 1.0));
        if (r.scaling == RopeScaling::Yarn)  // llama.cpp folds YaRN's magnitude correction into attn_factor
            r.attn_factor = cpu::yarn_attn_factor(1.0f / r.factor,
                                                  float(m.real("rope.scaling.yarn_log_multiplier", 0.0)) /
                                                      (arch == "deepseek2" ? 0.1f : 1.0f),  // stored as 0.1 * mscale_all_dim
                                                  arch == "deepseek2", r.attn_factor);
        r.freq_factors = f.find_tensor("rope_freqs.weight") != nullptr;
        if (r.freq_factors && r.scaling == RopeScaling::None) r.scaling = RopeScaling::Llama3;

        L.ffn.n_ff = int(m.per_layer("feed_forward_length", l, 0));
        if (m.integer("expert_count", 0) <= 0) require_positive(f, "feed_forward_length", L.ffn.n_ff, 1 << 20);
        s.layers.push_back(L);
    }
    return s;
}

// Sliding-window layers. `<arch>.attention.sliding_window_pattern` is an array (true: local) or a
// period n (layer il is local when il % n < n - 1; 0: every layer local); without the key the
// family's default period applies (Gemma 2: 2, every even layer; Gemma 3: 6, five local then one
// global), as llama.cpp does.
void set_window_pattern(const Meta& m, ModelSpec& s, int window, int default_period) {
    const gguf::Value* v = m.file().find(s.arch + ".attention.sliding_window_pattern");
    for (int l = 0; l < s.n_layer; ++l) {
        bool local;
        if (v && v->type == gguf::ValueType::ARRAY) {
            if (size_t(l) >= v->arr.size())
                throw ModelError(m.file().path() + ": sliding_window_pattern has fewer entries than layers");
            local = v->arr[size_t(l)].as_int() != 0;
        } else {
            const int period = v ? int(v->as_int(s.arch + ".attention.sliding_window_pattern")) : default_period;
            local = period == 0 || l % period < period - 1;
        }
        s.layers[size_t(l)].attn.window = local ? window : 0;
    }
}

void set_rope_neox(ModelSpec& s) {
    for (LayerSpec& L : s.layers) L.attn.rope.neox = true;
}

// Mixture-of-experts FFNs read llama.cpp's keys: expert_count, expert_used_count,
// expert_feed_forward_length (else feed_forward_length).
// Without expert_feed_forward_length an expert is feed_forward_length wide, or (Qwen3-MoE)
// feed_forward_length / expert_used_count.
void set_moe(const Meta& m, ModelSpec& s, bool norm_topk, bool width_divided_by_k = false) {
    const int n_expert = int(m.integer("expert_count", 0));
    if (n_expert <= 0) return;
    for (int l = 0; l < s.n_layer; ++l) {
        LayerSpec& L = s.layers[size_t(l)];
        const int top_k = int(m.per_layer("expert_used_count", l, 0));
        if (n_expert > 512 || top_k < 1 || top_k > n_expert)
            throw ModelError(m.file().path() + ": expert_used_count " + std::to_string(top_k) + " of " +
                             std::to_string(n_expert) + " experts is out of range");
        L.ffn.moe.n_expert = n_expert;
        L.ffn.moe.top_k = top_k;
        const int fallback = width_divided_by_k ? L.ffn.n_ff / top_k : L.ffn.n_ff;
        L.ffn.moe.n_ff_expert = int(m.per_layer("expert_feed_forward_length", l, fallback));
        require_positive(m.file(), "expert_feed_forward_length", L.ffn.moe.n_ff_expert, 1 << 20);
        L.ffn.moe.norm_topk = norm_topk;
        L.ffn.moe.weights_scale = float(m.real("expert_weights_scale", 1.0));
    }
}

// Llama 1/2/3, TinyLlama, SmolLM, Mistral-style dense models: RMSNorm before attention and FFN,
// RoPE with adjacent pairs (llama.cpp's converter permutes Q/K for it), SwiGLU.
ModelSpec llama_spec(const Meta& m) {
    ModelSpec s = common_spec(m, "llama");
    s.norm_eps = float(m.real("attention.layer_norm_rms_epsilon", 1e-5));
    // Mixtral: softmax over all experts, top-k, renormalised (= softmax over the chosen logits).
    set_moe(m, s, /*norm_topk=*/true);
    // Mistral: a sliding window on every layer where the metadata gives one. (llama.cpp reads no
    // window for `llama` and its converter writes none, so files in the wild rarely have it.)
    const int window = int(m.integer("attention.sliding_window", 0));
    for (LayerSpec& L : s.layers) L.attn.window = std::max(window, 0);
    return s;
}

// GPT-2: LayerNorm with bias, learned absolute positions, fused QKV with bias, GELU MLP, no RoPE.
ModelSpec gpt2_spec(const Meta& m) {
    ModelSpec s = common_spec(m, "gpt2");
    s.norm = NormKind::LayerNorm;
    s.norm_eps = float(m.real("attention.layer_norm_epsilon", 1e-5));
    s.learned_positions = true;
    for (LayerSpec& L : s.layers) {
        L.attn.rope.enabled = false;
        L.attn.fused_qkv = true;
        L.attn.bias_qkv = L.attn.bias_o = true;
        L.ffn.gated = false;
        L.ffn.activation = Activation::GeluTanh;
        L.ffn.bias = true;
    }
    return s;
}

// Qwen2: Llama with QKV biases and NeoX RoPE. Qwen3: per-head QK-norm instead of the biases.
ModelSpec qwen2_spec(const Meta& m) {
    ModelSpec s = common_spec(m, "qwen2");
    s.norm_eps = float(m.real("attention.layer_norm_rms_epsilon", 1e-6));
    set_rope_neox(s);
    for (LayerSpec& L : s.layers) L.attn.bias_qkv = true;
    return s;
}

ModelSpec qwen3_spec(const Meta& m) {
    ModelSpec s = common_spec(m, "qwen3");
    s.norm_eps = float(m.real("attention.layer_norm_rms_epsilon", 1e-6));
    set_rope_neox(s);
    for (LayerSpec& L : s.layers) L.attn.qk_norm = QkNorm::PerHead;
    return s;
}

// Gemma 2/3: embeddings scaled by sqrt(n_embd), sandwich norms, GeGLU, NeoX RoPE, local
// sliding-window layers between global ones. The converter stores RMSNorm weights as (1 + w).
ModelSpec gemma_spec(const Meta& m, const std::string& arch) {
    ModelSpec s = common_spec(m, arch);
    s.norm_eps = float(m.real("attention.layer_norm_rms_epsilon", 1e-6));
    s.embd_scale = std::sqrt(float(s.n_embd));
    set_rope_neox(s);
    for (LayerSpec& L : s.layers) {
        L.norm_placement = NormPlacement::Sandwich;
        L.ffn.activation = Activation::GeluTanh;
    }
    // The 27B shapes scale queries by 1/sqrt(n_embd / n_head) instead of 1/sqrt(head_dim).
    if ((arch == "gemma2" && s.n_layer == 46) || (arch == "gemma3" && s.n_layer == 62))
        for (LayerSpec& L : s.layers) L.attn.scale = 1.0f / std::sqrt(float(s.n_embd / L.attn.n_head));
    if (arch == "gemma2") {
        s.final_softcap = float(m.real("final_logit_softcapping", 30.0));
        const float attn_cap = float(m.real("attn_logit_softcapping", 50.0));
        for (LayerSpec& L : s.layers) L.attn.softcap = attn_cap;
        set_window_pattern(m, s, int(m.integer("attention.sliding_window", 4096)), 2);
    } else {
        s.final_softcap = float(m.real("final_logit_softcapping", 0.0));
        set_window_pattern(m, s, int(m.integer("attention.sliding_window", 0)), 6);
        for (LayerSpec& L : s.layers) L.attn.qk_norm = QkNorm::PerHead;
    }
    // Local layers use their own RoPE base (Gemma 3 defaults to 10000), and Gemma 3's local layers
    // no position scaling.
    const double base_swa = m.real("rope.freq_base_swa", arch == "gemma3" ? 10000.0 : -1.0);
    for (LayerSpec& L : s.layers) {
        if (L.attn.window <= 0) continue;
        if (base_swa > 0) L.attn.rope.freq_base = float(base_swa);
        if (arch == "gemma3") {
            L.attn.rope.scaling = RopeScaling::None;
            L.attn.rope.factor = 1.0f;
        }
    }
    return s;
}

// OLMo 2: RMSNorm after attention and after the FFN (not before), QK-norm over the whole q/k
// projections, NeoX RoPE.
ModelSpec olmo2_spec(const Meta& m) {
    ModelSpec s = common_spec(m, "olmo2");
    s.norm_eps = float(m.real("attention.layer_norm_rms_epsilon", 1e-6));
    set_rope_neox(s);
    // OLMo 3 files carry a sliding window with its layer pattern.
    if (int window = int(m.integer("attention.sliding_window", 0)); window > 0) set_window_pattern(m, s, window, 4);
    for (LayerSpec& L : s.layers) {
        L.norm_placement = NormPlacement::Post;
        L.attn.qk_norm = QkNorm::FullWidth;
    }
    return s;
}

// Phi-3: fused QKV and fused gate/up projections, NeoX RoPE (possibly partial). Files carry
// `sliding_window` (2047), which llama.cpp ignores; so does vkllm, to stay comparable.
ModelSpec phi3_spec(const Meta& m) {
    ModelSpec s = common_spec(m, "phi3");
    s.norm_eps = float(m.real("attention.layer_norm_rms_epsilon", 1e-5));
    set_rope_neox(s);
    for (LayerSpec& L : s.layers) {
        L.attn.fused_qkv = true;
        L.ffn.fused_gate_up = true;
    }
    if (m.file().find_tensor("rope_factors_long.weight")) {
        if (!m.file().find_tensor("rope_factors_short.weight"))
            throw ModelError(m.file().path() + ": rope_factors_long without rope_factors_short");
        for (LayerSpec& L : s.layers) L.attn.rope.longrope = true;
    }
    return s;
}

// Qwen3-MoE: Qwen3 attention (per-head QK-norm) with a MoE FFN, softmax gating renormalised.
ModelSpec qwen3moe_spec(const Meta& m) {
    ModelSpec s = common_spec(m, "qwen3moe");
    s.norm_eps = float(m.real("attention.layer_norm_rms_epsilon", 1e-6));
    set_rope_neox(s);
    for (LayerSpec& L : s.layers) L.attn.qk_norm = QkNorm::PerHead;
    set_moe(m, s, /*norm_topk=*/true, /*width_divided_by_k=*/true);
    return s;
}

// OLMoE: pre-norm Llama layout with QK-norm over the whole q/k projections and a MoE FFN whose
// softmax weights are not renormalised.
ModelSpec olmoe_spec(const Meta& m) {
    ModelSpec s = common_spec(m, "olmoe");
    s.norm_eps = float(m.real("attention.layer_norm_rms_epsilon", 1e-5));
    set_rope_neox(s);
    for (LayerSpec& L : s.layers) L.attn.qk_norm = QkNorm::FullWidth;
    set_moe(m, s, /*norm_topk=*/false);
    return s;
}

// gpt-oss: biased attention with learned sink logits, sliding-window attention on even layers,
// NeoX RoPE with YaRN, and a MoE FFN: biased router, softmax over the chosen logits, biased
// experts with the clamped SwiGLU (alpha 1.702, limit 7).
ModelSpec gpt_oss_spec(const Meta& m) {
    ModelSpec s = common_spec(m, "gpt-oss");
    s.norm_eps = float(m.real("attention.layer_norm_rms_epsilon", 1e-5));
    set_rope_neox(s);
    set_window_pattern(m, s, int(m.integer("attention.sliding_window")), 2);
    const double base_swa = m.real("rope.freq_base_swa", -1.0);
    for (LayerSpec& L : s.layers) {
        L.attn.bias_qkv = L.attn.bias_o = true;
        L.attn.sinks = true;
        if (L.attn.window > 0 && base_swa > 0) L.attn.rope.freq_base = float(base_swa);
        L.ffn_norm_tensor = "post_attention_norm";
    }
    set_moe(m, s, /*norm_topk=*/false);
    for (LayerSpec& L : s.layers) {
        if (L.ffn.moe.n_expert == 0) throw ModelError(m.file().path() + ": gpt-oss without experts");
        L.ffn.moe.softmax_after_topk = true;
        L.ffn.moe.router_bias = L.ffn.moe.expert_bias = true;
        L.ffn.moe.swiglu_alpha = 1.702f;
        L.ffn.moe.swiglu_limit = 7.0f;
    }
    return s;
}

// Llama 4: every 4th layer NoPE (with query temperature), the others RoPE with an unweighted
// QK-norm after it and chunked attention (chunks of 8192); MoE on every
// interleave_moe_layer_step-th layer: top-k by router logit, sigmoid weight scaling the expert's
// input, plus a shared expert; dense FFN elsewhere.
ModelSpec llama4_spec(const Meta& m) {
    ModelSpec s = common_spec(m, "llama4");
    s.norm_eps = float(m.real("attention.layer_norm_rms_epsilon", 1e-5));
    constexpr int kNoRopeStep = 4, kChunk = 8192;
    const bool chunked = m.integer("attention.sliding_window", 1) != 0;
    const int n_expert = int(m.integer("expert_count"));
    const int step = int(m.integer("interleave_moe_layer_step"));
    for (int l = 0; l < s.n_layer; ++l) {
        LayerSpec& L = s.layers[size_t(l)];
        const bool nope = (l + 1) % kNoRopeStep == 0;
        L.attn.rope.enabled = !nope;
        if (nope) {
            L.attn.temperature_floor = 8192;
            L.attn.temperature_scale = 0.1f;
        } else if (n_expert != 128) {  // Maverick (128 experts) has no QK-norm
            L.attn.qk_norm = QkNorm::L2AfterRope;
        }
        if (chunked && l % 4 < 3) L.attn.chunk = kChunk;
    }
    set_moe(m, s, /*norm_topk=*/false);
    for (int l = 0; l < s.n_layer; ++l) {
        MoeSpec& moe = s.layers[size_t(l)].ffn.moe;
        if (step <= 0 || (l + 1) % step != 0) {
            moe = MoeSpec{};  // a dense layer
            continue;
        }
        moe.sigmoid = true;
        moe.weight_input = true;
        moe.n_ff_shared = moe.n_ff_expert;
    }
    return s;
}

// DeepSeek V2/V3 (and Kimi K2): MLA attention (absorbed form), YaRN with DeepSeek's mscale,
// leading dense layers, then MoE layers with shared experts and V3's routing (sigmoid or
// softmax gating, exp_probs_b selection bias, group-limited top-k, renormalisation, scale).
ModelSpec deepseek2_spec(const Meta& m) {
    ModelSpec s = common_spec(m, "deepseek2");
    s.norm_eps = float(m.real("attention.layer_norm_rms_epsilon", 1e-6));
    const gguf::File& f = m.file();
    MlaSpec mla;
    mla.q_lora_rank = int(m.integer("attention.q_lora_rank", 0));
    mla.kv_lora_rank = int(m.integer("attention.kv_lora_rank"));
    mla.qk_rope = int(m.integer("rope.dimension_count"));
    const int head_k = int(m.integer("attention.key_length_mla", m.integer("attention.key_length")));
    mla.v_head = int(m.integer("attention.value_length_mla", m.integer("attention.value_length")));
    mla.qk_nope = head_k - mla.qk_rope;
    require_positive(f, "attention.kv_lora_rank", mla.kv_lora_rank, 1 << 16);
    require_positive(f, "qk_nope_head_dim", mla.qk_nope, 1 << 16);
    require_positive(f, "v_head_dim", mla.v_head, 1 << 16);
    if (!f.find_tensor("blk.0.attn_k_b.weight"))
        throw ModelError(f.path() + ": DeepSeek file without attn_k_b/attn_v_b (an old layout with attn_kv_b); "
                                    "re-convert it with a current llama.cpp converter");
    const int n_dense = int(m.integer("leading_dense_block_count", 0));
    for (LayerSpec& L : s.layers) {
        AttentionSpec& a = L.attn;
        a.mla = mla;
        // The absorbed form: MQA with keys [latent | rope key] and the latent as values.
        a.n_head_kv = 1;
        a.head_dim = mla.kv_lora_rank + mla.qk_rope;
        a.head_dim_v = mla.kv_lora_rank;
        a.rope.n_dims = mla.qk_rope;
        // llama.cpp: kq_scale = mscale^2 / sqrt(qk_nope + qk_rope), mscale from YaRN's factor.
        float mscale = 1.0f;
        if (a.rope.scaling == RopeScaling::Yarn) {
            const float ln = std::log(a.rope.factor);
            const float attn_factor_org = a.rope.attn_factor * (1.0f + 0.1f * ln);
            // The file stores 0.1 * mscale_all_dim; llama.cpp divides it back out.
            const float log_mul = float(m.real("rope.scaling.yarn_log_multiplier", 0.0)) / 0.1f;
            mscale = attn_factor_org * (1.0f + 0.1f * log_mul * ln);
        }
        a.scale = mscale * mscale / std::sqrt(float(head_k));
    }
    // Routing: expert_gating_func 1 softmax, 2 sigmoid; exp_probs_b biases the selection only.
    set_moe(m, s, m.file().get_bool("deepseek2.expert_weights_norm").value_or(false));
    const bool sigmoid = m.integer("expert_gating_func", 1) == 2;
    const int n_shared = int(m.integer("expert_shared_count", 0));
    for (int l = 0; l < s.n_layer; ++l) {
        MoeSpec& moe = s.layers[size_t(l)].ffn.moe;
        if (l < n_dense) {
            moe = MoeSpec{};
            continue;
        }
        moe.sigmoid = sigmoid;
        moe.selection_bias = f.find_tensor("blk." + std::to_string(l) + ".exp_probs_b.bias") != nullptr;
        moe.n_group = int(m.integer("expert_group_count", 1));
        moe.topk_group = int(m.integer("expert_group_used_count", 1));
        moe.n_ff_shared = n_shared * moe.n_ff_expert;
    }
    return s;
}

// SmolLM3: Llama layout where every 4th layer (3, 7, 11, ...) has no RoPE (NoPE). GGUF carries
// no key for it: the interval is fixed, as in llama.cpp.
ModelSpec smollm3_spec(const Meta& m) {
    ModelSpec s = common_spec(m, "smollm3");
    s.norm_eps = float(m.real("attention.layer_norm_rms_epsilon", 1e-6));
    constexpr int kNoRopeInterval = 4;
    for (int l = 0; l < s.n_layer; ++l)
        if ((l + 1) % kNoRopeInterval == 0) s.layers[size_t(l)].attn.rope.enabled = false;
    return s;
}

// BERT (llama.cpp's `bert`): learned absolute positions plus token type 0, LayerNorm of the
// embeddings, bidirectional attention (bert.attention.causal, default false), biased
// projections, post-norm of each residual sum (attn_output_norm, layer_output_norm), a GELU MLP;
// no output norm. The output projection is tied to token_embd (files carry no MLM head).
ModelSpec bert_spec(const Meta& m) {
    ModelSpec s = common_spec(m, "bert");
    const gguf::File& f = m.file();
    s.norm = NormKind::LayerNorm;
    s.norm_eps = float(m.real("attention.layer_norm_epsilon", 1e-12));
    s.learned_positions = true;
    s.embd_norm = true;
    s.token_types = f.find_tensor("token_types.weight") != nullptr;
    s.final_norm = false;
    const bool causal = f.get_bool("bert.attention.causal").value_or(false);
    const int64_t pooling = m.integer("pooling_type", 0);
    switch (pooling) {
        case 0: s.pooling = Pooling::None; break;
        case 1: s.pooling = Pooling::Mean; break;
        case 2: s.pooling = Pooling::Cls; break;
        case 3: s.pooling = Pooling::Last; break;
        default:
            throw ModelError(f.path() + ": bert.pooling_type " + std::to_string(pooling) +
                             " is not supported (0 none, 1 mean, 2 cls, 3 last)");
    }
    for (LayerSpec& L : s.layers) {
        L.norm_placement = NormPlacement::PostResidual;
        L.attn.rope.enabled = false;
        L.attn.causal = causal;
        L.attn.bias_qkv = f.find_tensor("blk.0.attn_q.bias") != nullptr;
        L.attn.bias_o = f.find_tensor("blk.0.attn_output.bias") != nullptr;
        L.ffn.gated = false;
        L.ffn.activation = Activation::GeluTanh;
        L.ffn.bias = f.find_tensor("blk.0.ffn_up.bias") != nullptr;
    }
    return s;
}

using FamilyFn = std::function<ModelSpec(const Meta&)>;

const std::map<std::string, FamilyFn>& families() {
    static const std::map<std::string, FamilyFn> table = {
        {"llama", llama_spec},
        {"bert", bert_spec},
        {"gpt2", gpt2_spec},
        {"qwen2", qwen2_spec},
        {"qwen3", qwen3_spec},
        {"gemma2", [](const Meta& m) { return gemma_spec(m, "gemma2"); }},
        {"gemma3", [](const Meta& m) { return gemma_spec(m, "gemma3"); }},
        {"olmo2", olmo2_spec},
        {"phi3", phi3_spec},
        {"smollm3", smollm3_spec},
        {"qwen3moe", qwen3moe_spec},
        {"olmoe", olmoe_spec},
        {"gpt-oss", gpt_oss_spec},
        {"llama4", llama4_spec},
        {"deepseek2", deepseek2_spec},
    };
    return table;
}

const char* name_of(NormPlacement p) {
    switch (p) {
        case NormPlacement::Pre: return "pre";
        case NormPlacement::Post: return "post";
        case NormPlacement::Sandwich: return "sandwich";
        case NormPlacement::PostResidual: return "post-sum";
    }
    return "?";
}

const char* name_of(Activation a) {
    switch (a) {
        case Activation::SiLU: return "silu";
        case Activation::GeluTanh: return "gelu";
        case Activation::GeluErf: return "gelu-erf";
    }
    return "?";
}

const char* name_of(RopeScaling r) {
    switch (r) {
        case RopeScaling::None: return "";
        case RopeScaling::Linear: return " linear";
        case RopeScaling::Yarn: return " yarn";
        case RopeScaling::Llama3: return " freq-factors";
    }
    return "?";
}

}  // namespace

std::vector<std::string> supported_architectures() {
    std::vector<std::string> names;
    for (const auto& [name, fn] : families()) names.push_back(name);
    return names;
}

ModelSpec ModelSpec::from_gguf(const gguf::File& f) {
    auto arch = f.get_string("general.architecture");
    if (!arch) throw ModelError(f.path() + ": missing metadata key 'general.architecture'");
    auto it = families().find(*arch);
    if (it == families().end()) {
        std::string list;
        for (const auto& n : supported_architectures()) list += (list.empty() ? "" : ", ") + n;
        throw ModelError(f.path() + ": architecture '" + *arch + "' is not supported (supported: " + list + ")");
    }
    return it->second(Meta(f, *arch));
}

uint64_t ModelSpec::kv_bytes_per_token() const {
    uint64_t total = 0;
    for (const auto& L : layers)
        total += uint64_t(L.attn.n_head_kv) * uint64_t(L.attn.head_dim + L.attn.head_dim_v) * sizeof(float);
    return total;
}

std::string ModelSpec::to_table() const {
    std::ostringstream s;
    s << "architecture " << arch << (name.empty() ? "" : " (" + name + ")") << ": " << n_layer << " layers, n_embd "
      << n_embd << ", n_vocab " << n_vocab << ", context " << n_ctx_train << "\n";
    s << "norm " << (norm == NormKind::RMSNorm ? "RMSNorm" : "LayerNorm") << " eps " << norm_eps
      << (tied_embeddings ? ", tied embeddings" : "") << (learned_positions ? ", learned positions" : "");
    if (embd_scale != 1.0f) s << ", embedding scale " << embd_scale;
    if (final_softcap > 0) s << ", final soft-cap " << final_softcap;
    s << "\n";
    s << "layer  heads(q/kv) head_dim  attention        rope                     norm      ffn\n";
    for (size_t i = 0; i < layers.size(); ++i) {
        const LayerSpec& L = layers[i];
        const AttentionSpec& a = L.attn;
        char attn[64], rope[64], ffn[64], heads[32];
        std::snprintf(heads, sizeof heads, "%d/%d", a.n_head, a.n_head_kv);
        if (a.window > 0) std::snprintf(attn, sizeof attn, "window %d", a.window);
        else if (a.chunk > 0) std::snprintf(attn, sizeof attn, "chunk %d", a.chunk);
        else std::snprintf(attn, sizeof attn, a.causal ? "global" : "bidirectional");
        if (!a.rope.enabled) std::snprintf(rope, sizeof rope, "none (NoPE)");
        else
            std::snprintf(rope, sizeof rope, "%s %d base %g%s%s", a.rope.neox ? "neox" : "norm", a.rope.n_dims,
                          double(a.rope.freq_base), name_of(a.rope.scaling), a.rope.longrope ? " longrope" : "");
        if (L.ffn.moe.n_expert > 0)
            std::snprintf(ffn, sizeof ffn, "moe %d/%d x %d%s", L.ffn.moe.top_k, L.ffn.moe.n_expert, L.ffn.moe.n_ff_expert,
                          L.ffn.moe.norm_topk ? " renorm" : "");
        else
            std::snprintf(ffn, sizeof ffn, "%s%s %d", L.ffn.gated ? "gated " : "", name_of(L.ffn.activation), L.ffn.n_ff);
        char line[320];
        std::snprintf(line, sizeof line, "%5zu  %-11s %-9d %-16s %-24s %-9s %s%s%s\n", i, heads, a.head_dim, attn, rope,
                      name_of(L.norm_placement), ffn, a.qk_norm == QkNorm::None ? "" : a.qk_norm == QkNorm::PerHead ? ", qk-norm" : ", qk-norm (full)", a.softcap > 0 ? ", softcap" : "");
        s << line;
    }
    return s.str();
}

}  // namespace vkllm::model
