#include "model/spec.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <tuple>
#include <utility>

#include "cpu/ref_ops.h"
#include "gguf/gguf.h"
#include "model/families.h"
#include "model/metadata_keys.h"

namespace vkllm::model {
namespace {

using keys::ArchKey;

// Reads `<arch>.<key>` metadata with clear errors for missing or malformed values.
class Meta {
public:
    Meta(const gguf::File& f, std::string arch) : f_(f), arch_(std::move(arch)) {}
    const gguf::File& file() const { return f_; }
    const std::string& arch() const { return arch_; }

    bool has(ArchKey key) const { return f_.has(key.in(arch_)); }
    int64_t integer(ArchKey key) const {
        auto v = f_.get_int(key.in(arch_));
        if (!v) throw ModelError(f_.path() + ": missing metadata key '" + key.in(arch_) + "'");
        return *v;
    }
    int64_t integer(ArchKey key, int64_t fallback) const { return f_.get_int(key.in(arch_)).value_or(fallback); }
    double real(ArchKey key, double fallback) const { return f_.get_float(key.in(arch_)).value_or(fallback); }
    bool boolean(ArchKey key, bool fallback) const { return f_.get_bool(key.in(arch_)).value_or(fallback); }
    std::string text(ArchKey key, const std::string& fallback) const {
        return f_.get_string(key.in(arch_)).value_or(fallback);
    }
    // A per-layer integer that files store either once or as an array of n_layer values.
    int64_t per_layer(ArchKey key, int layer, int64_t fallback) const {
        const std::string name = key.in(arch_);
        const gguf::Value* v = f_.find(name);
        if (!v) return fallback;
        if (v->type != gguf::ValueType::ARRAY) return v->as_int(name);
        if (size_t(layer) >= v->arr.size())
            throw ModelError(f_.path() + ": metadata '" + name + "' has " + std::to_string(v->arr.size()) + " values for " +
                             std::to_string(layer + 1) + "+ layers");
        return v->arr[size_t(layer)].as_int(name);
    }

private:
    const gguf::File& f_;
    std::string arch_;
};

void require_positive(const gguf::File& f, const std::string& what, int64_t v, int64_t max = 1 << 24) {
    if (v <= 0 || v > max)
        throw ModelError(f.path() + ": " + what + " = " + std::to_string(v) + " is out of range");
}

bool has_tensor(const gguf::File& f, const std::string& name) { return f.find_tensor(name) != nullptr; }

// Yes, No, or (IfTensor) whether the file has `tensor`.
bool has_part(Has h, const gguf::File& f, const std::string& tensor) {
    return h == Has::Yes || (h == Has::IfTensor && has_tensor(f, tensor));
}

// A state-space layer's mixer (`ssm.*`, all required as llama.cpp's load_arch_hparams reads
// them): Mamba-2's heads and groups, or Mamba-1's dt rank.
SsmSpec ssm_spec(const Meta& m, bool mamba1) {
    using namespace keys;
    const gguf::File& f = m.file();
    SsmSpec ssm;
    ssm.d_conv = int(m.integer(kSsmConvKernel));
    ssm.d_inner = int(m.integer(kSsmInnerSize));
    ssm.d_state = int(m.integer(kSsmStateSize));
    require_positive(f, kSsmConvKernel.text(), ssm.d_conv, 16);
    require_positive(f, kSsmInnerSize.text(), ssm.d_inner, 1 << 20);
    require_positive(f, kSsmStateSize.text(), ssm.d_state, 1024);
    if (mamba1) {
        ssm.dt_rank = int(m.integer(kSsmTimeStepRank));
        require_positive(f, kSsmTimeStepRank.text(), ssm.dt_rank, 1 << 16);
        ssm.n_head = ssm.d_inner;  // one channel per head
        ssm.dt_b_c_norm = m.boolean(kSsmDtBCRms, false);
        return ssm;
    }
    ssm.n_head = int(m.integer(kSsmTimeStepRank));
    ssm.n_group = int(m.integer(kSsmGroupCount));
    require_positive(f, kSsmTimeStepRank.text(), ssm.n_head, 1 << 16);
    require_positive(f, kSsmGroupCount.text(), ssm.n_group, 1 << 16);
    if (ssm.d_inner % ssm.n_head || ssm.n_head % ssm.n_group)
        throw ModelError(f.path() + ": " + kSsmTimeStepRank.text() + " = " + std::to_string(ssm.n_head) +
                         " must divide " + kSsmInnerSize.text() + " = " + std::to_string(ssm.d_inner) + " and be a " +
                         "multiple of " + kSsmGroupCount.text() + " = " + std::to_string(ssm.n_group));
    return ssm;
}

// LFM2's short convolution: `shortconv.l_cache` taps (required; llama.cpp asserts more than one)
// over n_embd channels, within what ops::ssm_conv takes.
ShortConvSpec shortconv_spec(const Meta& m, int n_embd) {
    using namespace keys;
    ShortConvSpec c;
    c.l_cache = int(m.integer(kShortconvLCache));
    c.channels = n_embd;
    if (c.l_cache < 2 || c.l_cache > 16)
        throw ModelError(m.file().path() + ": " + kShortconvLCache.text() + " = " + std::to_string(c.l_cache) +
                         " is out of range (2 to 16 taps)");
    return c;
}

// RWKV-7's sizes (llama.cpp's load_arch_hparams for LLM_ARCH_RWKV7 requires every key): the wkv
// heads of wkv.head_size channels, which must tile n_embd, the four lora ranks and the channel
// mix's width.
RwkvSpec rwkv_spec(const Meta& m, int n_embd) {
    using namespace keys;
    const gguf::File& f = m.file();
    RwkvSpec r;
    r.n_embd = n_embd;
    r.head_size = m.integer(kWkvHeadSize);
    r.n_ff = m.integer(kFeedForwardLength);
    r.decay_rank = m.integer(kDecayLoraRank);
    r.iclr_rank = m.integer(kIclrLoraRank);
    r.value_rank = m.integer(kValueResidualMixLoraRank);
    r.gate_rank = m.integer(kGateLoraRank);
    require_positive(f, kWkvHeadSize.text(), r.head_size, 1024);
    require_positive(f, kFeedForwardLength.text(), r.n_ff, 1 << 20);
    require_positive(f, kDecayLoraRank.text(), r.decay_rank, 1 << 16);
    require_positive(f, kIclrLoraRank.text(), r.iclr_rank, 1 << 16);
    require_positive(f, kValueResidualMixLoraRank.text(), r.value_rank, 1 << 16);
    require_positive(f, kGateLoraRank.text(), r.gate_rank, 1 << 16);
    if (n_embd % r.head_size)
        throw ModelError(f.path() + ": " + kWkvHeadSize.text() + " = " + std::to_string(r.head_size) +
                         " does not divide " + kEmbeddingLength.text() + " = " + std::to_string(n_embd));
    return r;
}

// Qwen3-Next / Qwen3.5: layer l is recurrent as `attention.recurrent_layers` says (one bool per
// layer), else unless it is a full-attention layer, every `full_attention_interval`-th (default 4),
// as llama.cpp's load_arch_hparams decides.
bool recurrent_layer(const Meta& m, int l) {
    using namespace keys;
    const std::string name = kRecurrentLayers.in(m.arch());
    if (const gguf::Value* v = m.file().find(name)) {
        if (v->type != gguf::ValueType::ARRAY || size_t(l) >= v->arr.size())
            throw ModelError(m.file().path() + ": metadata '" + name + "' is not an array of one value per layer");
        return v->arr[size_t(l)].as_int(name) != 0;
    }
    const int64_t interval = m.integer(kFullAttentionInterval, 4);
    require_positive(m.file(), kFullAttentionInterval.text(), interval, 1 << 16);
    return (l + 1) % interval != 0;
}

// Gated DeltaNet's sizes from the `ssm.*` keys (SsmSpec::delta_net says how they are read): the
// value heads' size d_inner / n_head must be the key heads' d_state, as llama.cpp's graph assumes.
SsmSpec delta_net_spec(const Meta& m, const Family& fam) {
    using namespace keys;
    SsmSpec ssm = ssm_spec(m, /*mamba1=*/false);
    ssm.delta_net = true;
    ssm.delta_share = fam.delta_share;
    ssm.delta_ba_grouped = fam.delta_ba_grouped;
    if (ssm.head_dim() != ssm.d_state)
        throw ModelError(m.file().path() + ": " + kSsmInnerSize.text() + " / " + kSsmTimeStepRank.text() + " = " +
                         std::to_string(ssm.head_dim()) + " must equal " + kSsmStateSize.text() + " = " +
                         std::to_string(ssm.d_state) + " (Gated DeltaNet's value and key heads are one size)");
    return ssm;
}

// A layer's mixer and whether an FFN follows it, as the family's layout reads the per-layer
// arrays (llama.cpp: a layer is recurrent when its head_count_kv is 0, which defaults to its
// head_count; Nemotron-H's MLP layers are those with a feed_forward_length).
std::pair<LayerMixer, bool> layer_parts(const Meta& m, const Family& fam, int l) {
    using namespace keys;
    const LayerMixer mixer = fam.mixer == Mixer::Mamba2          ? LayerMixer::Mamba2
                             : fam.mixer == Mixer::Mamba1        ? LayerMixer::Mamba1
                             : fam.mixer == Mixer::Rwkv7         ? LayerMixer::Rwkv7
                             : fam.mixer == Mixer::ShortConv     ? LayerMixer::ShortConv
                             : fam.mixer == Mixer::GatedDeltaNet ? LayerMixer::GatedDeltaNet
                                                                 : LayerMixer::Attention;
    auto no_kv_heads = [&] { return m.per_layer(kHeadCountKv, l, m.per_layer(kHeadCount, l, 0)) == 0; };
    switch (fam.layers) {
        case LayerLayout::Uniform: break;
        case LayerLayout::MixerWhereNoKvHeads: return {no_kv_heads() ? mixer : LayerMixer::Attention, true};
        case LayerLayout::OnePartPerLayer:
            if (m.per_layer(kFeedForwardLength, l, 0) > 0) return {LayerMixer::None, true};
            return {no_kv_heads() ? mixer : LayerMixer::Attention, false};
        case LayerLayout::MixerBesideAttention: return {LayerMixer::Attention, true};  // the mixer: common_spec
        case LayerLayout::MixerWhereRecurrent: return {recurrent_layer(m, l) ? mixer : LayerMixer::Attention, true};
    }
    // Every layer alike: attention or RWKV's time mix then an FFN (RWKV: the channel mix), or a
    // state-space mixer alone.
    return {mixer, mixer == LayerMixer::Attention || mixer == LayerMixer::Rwkv7};
}

// An attention layer's heads, head sizes and RoPE.
void read_attention(const Meta& m, const Family& fam, const ModelSpec& s, int l, AttentionSpec& a) {
    using namespace keys;
    const gguf::File& f = m.file();
    // Each key is checked on its own first, so a message names the key that is wrong; where
    // only the pair is inconsistent, it names both.
    a.n_head = int(m.per_layer(kHeadCount, l, 0));
    require_positive(f, kHeadCount.text(), a.n_head, 1 << 16);
    if (!m.has(kKeyLength) && s.n_embd % a.n_head)
        throw ModelError(f.path() + ": " + kHeadCount.text() + " = " + std::to_string(a.n_head) + " does not divide " +
                         kEmbeddingLength.text() + " = " + std::to_string(s.n_embd) + " (without " +
                         kKeyLength.text() + " a head is " + kEmbeddingLength.text() + " / head_count wide)");
    a.n_head_kv = int(m.per_layer(kHeadCountKv, l, a.n_head));
    require_positive(f, kHeadCountKv.text(), a.n_head_kv, 1 << 16);
    if (a.n_head % a.n_head_kv)
        throw ModelError(f.path() + ": " + kHeadCount.text() + " = " + std::to_string(a.n_head) +
                         " is not a multiple of " + kHeadCountKv.text() + " = " + std::to_string(a.n_head_kv) +
                         " (each key/value head serves a whole number of query heads)");
    a.head_dim = int(m.integer(kKeyLength, s.n_embd / a.n_head));
    a.head_dim_v = int(m.integer(kValueLength, a.head_dim));
    require_positive(f, kKeyLength.text(), a.head_dim, 4096);
    require_positive(f, kValueLength.text(), a.head_dim_v, 4096);
    a.scale = 1.0f / std::sqrt(float(a.head_dim));

    RopeSpec& r = a.rope;
    r.n_dims = int(m.integer(kRopeDimensionCount, a.head_dim));
    if (r.n_dims > a.head_dim || r.n_dims % 2)
        throw ModelError(f.path() + ": " + kRopeDimensionCount.text() + " " + std::to_string(r.n_dims) +
                         " does not fit head dim " + std::to_string(a.head_dim));
    r.freq_base = float(m.real(kRopeFreqBase, 10000.0));
    std::string scaling = m.text(kRopeScalingType, "none");
    double factor = m.real(kRopeScalingFactor, 1.0);
    if (scaling == "none" || factor == 1.0 || factor == 0.0) r.scaling = RopeScaling::None;
    else if (scaling == "linear") r.scaling = RopeScaling::Linear;
    else if (scaling == "yarn") r.scaling = RopeScaling::Yarn;
    else throw ModelError(f.path() + ": rope scaling '" + scaling + "' is not supported");
    if (r.scaling != RopeScaling::None) r.factor = float(factor);
    r.n_ctx_orig = int(m.integer(kRopeScalingOrigCtx, s.n_ctx_train));
    if (r.scaling == RopeScaling::Yarn) {
        r.ext_factor = 1.0f;
        r.beta_fast = float(m.real(kRopeYarnBetaFast, 32.0));
        r.beta_slow = float(m.real(kRopeYarnBetaSlow, 1.0));
    }
    r.attn_factor = float(m.real(kRopeScalingAttnFactor, 1.0));
    if (r.scaling == RopeScaling::Yarn)  // llama.cpp folds YaRN's magnitude correction into attn_factor
        r.attn_factor = cpu::yarn_attn_factor(
            1.0f / r.factor,
            float(m.real(kRopeYarnLogMultiplier, 0.0)) / (fam.yarn_log_multiplier_scaled_by_10 ? 0.1f : 1.0f),
            fam.yarn_log_multiplier_scaled_by_10, r.attn_factor);
    r.freq_factors = has_tensor(f, "rope_freqs.weight");
    if (r.freq_factors && r.scaling == RopeScaling::None) r.scaling = RopeScaling::Llama3;
}

// Hyperparameters every family shares, read with llama.cpp's key names, and each layer's parts:
// its mixer (attention heads, or the state-space mixer's sizes) and its FFN width.
ModelSpec common_spec(const Meta& m, const Family& fam) {
    using namespace keys;
    const gguf::File& f = m.file();
    ModelSpec s;
    s.arch = m.arch();
    s.name = f.get_string(std::string(kName)).value_or("");
    s.n_layer = int(m.integer(kBlockCount));
    s.n_embd = int(m.integer(kEmbeddingLength));
    s.n_ctx_train = int(m.integer(kContextLength, 2048));
    require_positive(f, kBlockCount.text(), s.n_layer, 4096);
    require_positive(f, kEmbeddingLength.text(), s.n_embd);
    require_positive(f, kContextLength.text(), s.n_ctx_train, int64_t(1) << 30);

    const gguf::TensorInfo* embd = f.find_tensor("token_embd.weight");
    if (!embd) throw ModelError(f.path() + ": missing tensor 'token_embd.weight'");
    if (embd->dims.size() != 2 || int64_t(embd->dims[0]) != s.n_embd)
        throw ModelError(f.path() + ": tensor 'token_embd.weight' is not [" + std::to_string(s.n_embd) + ", n_vocab]");
    s.n_vocab = int(embd->dims[1]);
    s.tied_embeddings = !has_tensor(f, "output.weight");

    std::optional<SsmSpec> ssm;  // every state-space layer has the same sizes (read once)
    std::optional<RwkvSpec> rwkv;  // likewise every RWKV layer
    for (int l = 0; l < s.n_layer; ++l) {
        LayerSpec L;
        std::tie(L.mixer, L.has_ffn) = layer_parts(m, fam, l);
        if (fam.layers == LayerLayout::MixerBesideAttention) {  // attention (below) and the mixer
            if (fam.mixer != Mixer::Mamba2)
                throw std::logic_error("family table: a mixer beside attention is Mamba-2's only");
            if (!ssm) ssm = ssm_spec(m, /*mamba1=*/false);
            L.ssm = *ssm;
            L.ssm_beside_attention = true;
        }
        if (L.mixer == LayerMixer::ShortConv) {
            L.shortconv = shortconv_spec(m, s.n_embd);
        } else if (L.mixer == LayerMixer::GatedDeltaNet) {
            if (!ssm) ssm = delta_net_spec(m, fam);
            L.ssm = *ssm;
        } else if (L.mixer == LayerMixer::Mamba2 || L.mixer == LayerMixer::Mamba1) {
            if (!ssm) ssm = ssm_spec(m, L.mixer == LayerMixer::Mamba1);
            L.ssm = *ssm;
            // Jamba's Mamba-1 layers carry weighted norms of dt, B and C.
            if (L.ssm.mamba1() && has_tensor(f, "blk." + std::to_string(l) + ".ssm_dt_norm.weight"))
                L.ssm.dt_b_c_norm = true;
        } else if (L.mixer == LayerMixer::Rwkv7) {
            if (!rwkv) rwkv = rwkv_spec(m, s.n_embd);
            L.rwkv = *rwkv;
        } else if (L.mixer == LayerMixer::Attention) {
            read_attention(m, fam, s, l, L.attn);
        }
        if (L.has_ffn) {
            L.ffn.n_ff = int(m.per_layer(kFeedForwardLength, l, 0));
            if (m.integer(kExpertCount, 0) <= 0) require_positive(f, kFeedForwardLength.text(), L.ffn.n_ff, 1 << 20);
        }
        s.layers.push_back(L);
    }
    return s;
}

// Sliding-window layers. `<arch>.attention.sliding_window_pattern` is an array (true: local) or a
// period n (layer il is local when il % n < n - 1; 0: every layer local); without the key the
// family's default period applies (Gemma 2: 2, every even layer; Gemma 3: 6, five local then one
// global), as llama.cpp does.
void set_window_pattern(const Meta& m, ModelSpec& s, int window, int default_period) {
    const std::string key = keys::kSlidingWindowPattern.in(s.arch);
    const gguf::Value* v = m.file().find(key);
    for (int l = 0; l < s.n_layer; ++l) {
        bool local;
        if (v && v->type == gguf::ValueType::ARRAY) {
            if (size_t(l) >= v->arr.size())
                throw ModelError(m.file().path() + ": sliding_window_pattern has fewer entries than layers");
            local = v->arr[size_t(l)].as_int() != 0;
        } else {
            const int period = v ? int(v->as_int(key)) : default_period;
            local = period == 0 || l % period < period - 1;
        }
        s.layers[size_t(l)].attn.window = local ? window : 0;
    }
}

// Mixture-of-experts FFNs read llama.cpp's keys: expert_count, expert_used_count,
// expert_feed_forward_length (else feed_forward_length).
// Without expert_feed_forward_length an expert is feed_forward_length wide, or (Qwen3-MoE)
// feed_forward_length / expert_used_count.
void set_moe(const Meta& m, ModelSpec& s, bool norm_topk, bool width_divided_by_k) {
    using namespace keys;
    const int n_expert = int(m.integer(kExpertCount, 0));
    if (n_expert <= 0) return;
    for (int l = 0; l < s.n_layer; ++l) {
        LayerSpec& L = s.layers[size_t(l)];
        if (!L.has_ffn) continue;
        const int top_k = int(m.per_layer(kExpertUsedCount, l, 0));
        if (n_expert > 512 || top_k < 1 || top_k > n_expert)
            throw ModelError(m.file().path() + ": " + kExpertUsedCount.text() + " " + std::to_string(top_k) + " of " +
                             std::to_string(n_expert) + " experts is out of range");
        L.ffn.moe.n_expert = n_expert;
        L.ffn.moe.top_k = top_k;
        const int fallback = width_divided_by_k ? L.ffn.n_ff / top_k : L.ffn.n_ff;
        L.ffn.moe.n_ff_expert = int(m.per_layer(kExpertFeedForwardLength, l, fallback));
        require_positive(m.file(), kExpertFeedForwardLength.text(), L.ffn.moe.n_ff_expert, 1 << 20);
        L.ffn.moe.norm_topk = norm_topk;
        L.ffn.moe.weights_scale = float(m.real(kExpertWeightsScale, 1.0));
    }
}

// The model-wide parts: norms, embeddings, output, pooling.
void apply_model(const Meta& m, const Family& fam, ModelSpec& s) {
    using namespace keys;
    const gguf::File& f = m.file();
    s.norm = fam.norm;
    s.norm_eps = float(m.real(fam.norm == NormKind::RMSNorm ? kLayerNormRmsEps : kLayerNormEps, fam.norm_eps));
    if (fam.embd_scale_sqrt_n_embd) s.embd_scale = std::sqrt(float(s.n_embd));
    if (fam.granite_multipliers) {  // 0 or absent: not applied (llama.cpp's test of each)
        if (const double v = m.real(kEmbeddingScale, 0.0); v != 0.0) s.embd_scale = float(v);
        if (const double v = m.real(kResidualScale, 0.0); v != 0.0) s.residual_scale = float(v);
        if (const double v = m.real(kLogitScale, 0.0); v != 0.0) s.logit_scale = float(v);
    }
    s.learned_positions = fam.learned_positions;
    s.embd_norm = fam.embd_norm;
    s.token_types = has_part(fam.token_types, f, "token_types.weight");
    s.final_norm = fam.final_norm;
    s.output_norm_tensor = std::string(fam.output_norm_tensor);
    if (fam.final_softcap) s.final_softcap = float(m.real(kFinalSoftcap, *fam.final_softcap));
    if (fam.pooling_key) {
        const int64_t pooling = m.integer(kPoolingType, 0);
        switch (pooling) {
            case 0: s.pooling = Pooling::None; break;
            case 1: s.pooling = Pooling::Mean; break;
            case 2: s.pooling = Pooling::Cls; break;
            case 3: s.pooling = Pooling::Last; break;
            default:
                throw ModelError(f.path() + ": " + kPoolingType.in(s.arch) + " " + std::to_string(pooling) +
                                 " is not supported (0 none, 1 mean, 2 cls, 3 last)");
        }
    }
}

// Each layer's defaults from the row: norm placement, projections, biases, QK-norm, RoPE
// pairing and NoPE layers, FFN shape; then the size quirks.
void apply_layers(const Meta& m, const Family& fam, ModelSpec& s) {
    using namespace keys;
    const gguf::File& f = m.file();
    const bool causal = fam.causal_key ? m.boolean(kCausal, *fam.causal_key) : true;
    const float attn_softcap = fam.attn_softcap ? float(m.real(kAttnSoftcap, *fam.attn_softcap)) : 0.0f;
    const bool bias_qkv = has_part(fam.bias_qkv, f, "blk.0.attn_q.bias");
    const bool bias_o = has_part(fam.bias_o, f, "blk.0.attn_output.bias");
    const bool ffn_bias = has_part(fam.ffn_bias, f, "blk.0.ffn_up.bias");
    // Maverick's rule needs the expert count before the experts are read.
    const bool qk_norm_off = fam.no_qk_norm_at_n_expert > 0 && m.integer(kExpertCount) == fam.no_qk_norm_at_n_expert;
    const bool chunked = fam.chunk > 0 && m.integer(kSlidingWindow, 1) != 0;
    const bool rope = fam.rope && (!fam.rope_switch_key || m.boolean(kRopeScalingFinetuned, true));
    const double attention_scale = fam.granite_multipliers ? m.real(kAttentionScale, 0.0) : 0.0;
    const float max_alibi_bias = fam.alibi_key ? float(m.real(kMaxAlibiBias, 0.0)) : 0.0f;
    if (!(max_alibi_bias >= 0.0f))
        throw ModelError(f.path() + ": " + kMaxAlibiBias.in(s.arch) + " must be >= 0");
    const bool attn_norm_2 = has_part(fam.attn_norm_2, f, "blk.0.attn_norm_2.weight");
    for (int l = 0; l < s.n_layer; ++l) {
        LayerSpec& L = s.layers[size_t(l)];
        AttentionSpec& a = L.attn;
        L.norm_placement = fam.placement;
        // A layer that is an FFN alone is normalised by its attn_norm (Nemotron-H).
        L.ffn_norm_tensor = L.mixer == LayerMixer::None ? "attn_norm" : std::string(fam.ffn_norm_tensor);
        L.ffn_norm_unsuffixed = fam.ffn_norm_unsuffixed && L.mixer != LayerMixer::None;
        L.ffn.activation = fam.activation;
        L.ffn.gated = fam.gated;
        L.ffn.fused_gate_up = fam.fused_gate_up;
        L.ffn.bias = ffn_bias;
        if (L.mixer != LayerMixer::Attention) continue;
        if (fam.parallel) {
            L.parallel = true;
            L.ffn_norm_tensor = "attn_norm";  // the FFN reads attn_norm of the layer input ...
            if (attn_norm_2) L.attn_norm_tensor = "attn_norm_2";  // ... and attention its own norm
        }
        a.max_alibi_bias = max_alibi_bias;
        if (fam.kq_scale_inverse_head_dim) a.scale = 1.0f / float(a.head_dim);
        a.causal = causal;
        a.fused_qkv = fam.fused_qkv;
        a.bias_qkv = bias_qkv;
        a.bias_o = bias_o;
        a.sinks = fam.sinks;
        a.gated = fam.gated_attention;
        a.softcap = attn_softcap;
        a.rope.neox = fam.rope_neox;
        const bool nope = !rope || (fam.nope_period > 0 && (l + 1) % fam.nope_period == 0);
        a.rope.enabled = !nope;
        if (nope && rope) {
            a.temperature_floor = fam.nope_temperature_floor;
            a.temperature_scale = fam.nope_temperature_scale;
        }
        if (!qk_norm_off && !(nope && fam.qk_norm == QkNorm::L2AfterRope)) a.qk_norm = fam.qk_norm;
        if (chunked && l % fam.chunk_period < fam.chunk_period - 1) a.chunk = fam.chunk;
        if (fam.query_scale_by_embd_at_n_layer > 0 && s.n_layer == fam.query_scale_by_embd_at_n_layer)
            a.scale = 1.0f / std::sqrt(float(s.n_embd / a.n_head));
        if (attention_scale != 0.0) a.scale = float(attention_scale);
    }
}

// Sliding windows, and the RoPE of the windowed (local) layers.
void apply_windows(const Meta& m, const Family& fam, ModelSpec& s) {
    using namespace keys;
    switch (fam.windows) {
        case WindowRule::None: return;
        case WindowRule::EveryLayer: {
            const int window = int(m.integer(kSlidingWindow, fam.window));
            for (LayerSpec& L : s.layers) L.attn.window = std::max(window, 0);
            break;
        }
        case WindowRule::Pattern: {
            const int window = int(fam.window_required ? m.integer(kSlidingWindow) : m.integer(kSlidingWindow, fam.window));
            set_window_pattern(m, s, window, fam.window_period);
            break;
        }
        case WindowRule::PatternIfSet:
            if (int window = int(m.integer(kSlidingWindow, fam.window)); window > 0)
                set_window_pattern(m, s, window, fam.window_period);
            break;
    }
    if (!fam.local_rope_base) return;
    const double base_swa = m.real(kRopeFreqBaseSwa, *fam.local_rope_base);
    for (LayerSpec& L : s.layers) {
        if (L.attn.window <= 0) continue;
        if (base_swa > 0) L.attn.rope.freq_base = float(base_swa);
        if (fam.local_rope_unscaled) {
            L.attn.rope.scaling = RopeScaling::None;
            L.attn.rope.factor = 1.0f;
        }
    }
}

void apply_longrope(const Meta& m, ModelSpec& s) {
    const gguf::File& f = m.file();
    if (!has_tensor(f, "rope_factors_long.weight")) return;
    if (!has_tensor(f, "rope_factors_short.weight"))
        throw ModelError(f.path() + ": rope_factors_long without rope_factors_short");
    for (LayerSpec& L : s.layers) L.attn.rope.longrope = true;
}

// Multi-head latent attention (DeepSeek V2/V3), run in the absorbed form: MQA with keys
// [latent | rope key] and the latent as values.
void apply_mla(const Meta& m, const Family& fam, ModelSpec& s) {
    using namespace keys;
    const gguf::File& f = m.file();
    MlaSpec mla;
    mla.q_lora_rank = int(m.integer(kQLoraRank, 0));
    mla.kv_lora_rank = int(m.integer(kKvLoraRank));
    mla.qk_rope = int(m.integer(kRopeDimensionCount));
    const int head_k = int(m.integer(kKeyLengthMla, m.integer(kKeyLength)));
    mla.v_head = int(m.integer(kValueLengthMla, m.integer(kValueLength)));
    mla.qk_nope = head_k - mla.qk_rope;
    require_positive(f, kKvLoraRank.text(), mla.kv_lora_rank, 1 << 16);
    require_positive(f, "qk_nope_head_dim", mla.qk_nope, 1 << 16);
    require_positive(f, "v_head_dim", mla.v_head, 1 << 16);
    if (!has_tensor(f, "blk.0.attn_k_b.weight"))
        throw ModelError(f.path() + ": DeepSeek file without attn_k_b/attn_v_b (an old layout with attn_kv_b); "
                                    "re-convert it with a current llama.cpp converter");
    for (LayerSpec& L : s.layers) {
        AttentionSpec& a = L.attn;
        a.mla = mla;
        a.n_head_kv = 1;
        a.head_dim = mla.kv_lora_rank + mla.qk_rope;
        a.head_dim_v = mla.kv_lora_rank;
        a.rope.n_dims = mla.qk_rope;
        // llama.cpp: kq_scale = mscale^2 / sqrt(qk_nope + qk_rope), mscale from YaRN's factor.
        float mscale = 1.0f;
        if (a.rope.scaling == RopeScaling::Yarn) {
            const float ln = std::log(a.rope.factor);
            const float attn_factor_org = a.rope.attn_factor * (1.0f + 0.1f * ln);
            const float log_mul = float(m.real(kRopeYarnLogMultiplier, 0.0)) /
                                  (fam.yarn_log_multiplier_scaled_by_10 ? 0.1f : 1.0f);
            mscale = attn_factor_org * (1.0f + 0.1f * log_mul * ln);
        }
        a.scale = mscale * mscale / std::sqrt(float(head_k));
    }
}

// Experts: which layers have them (all, all after the leading dense ones, or every S-th) and
// how the router weighs them.
void apply_moe(const Meta& m, const Family& fam, ModelSpec& s) {
    using namespace keys;
    const gguf::File& f = m.file();
    const int n_dense = fam.leading_dense_key ? int(m.integer(kLeadingDenseBlockCount, 0)) : 0;
    const int step = fam.moe_interleave_key ? int(m.integer(kInterleaveMoeLayerStep)) : 1;
    const bool norm_topk = fam.topk_norm == TopkNorm::FromKey ? m.boolean(kExpertWeightsNorm, false)
                                                              : fam.topk_norm == TopkNorm::Yes;
    set_moe(m, s, norm_topk, fam.expert_width_over_topk);
    const bool sigmoid = fam.gating == Gating::FromKey ? m.integer(kExpertGatingFunc, 1) == 2 : fam.gating == Gating::Sigmoid;
    const int n_shared = fam.shared_experts_key ? int(m.integer(kExpertSharedCount, fam.shared_experts)) : fam.shared_experts;
    for (int l = 0; l < s.n_layer; ++l) {
        if (!s.layers[size_t(l)].has_ffn) continue;
        MoeSpec& moe = s.layers[size_t(l)].ffn.moe;
        const bool routed = !fam.moe_where_router || has_tensor(f, "blk." + std::to_string(l) + ".ffn_gate_inp.weight");
        if (l < n_dense || step <= 0 || (l + 1) % step != 0 || !routed) {
            moe = MoeSpec{};  // a dense layer
            continue;
        }
        if (fam.experts_required && moe.n_expert == 0) throw ModelError(f.path() + ": " + s.arch + " without experts");
        moe.sigmoid = sigmoid;
        moe.softmax_after_topk = fam.softmax_after_topk;
        moe.router_bias = fam.router_bias;
        moe.expert_bias = fam.expert_bias;
        moe.swiglu_alpha = fam.swiglu_alpha;
        moe.swiglu_limit = fam.swiglu_limit;
        moe.weight_input = fam.weight_input;
        moe.selection_bias = fam.selection_bias && has_tensor(f, "blk." + std::to_string(l) + ".exp_probs_b.bias");
        if (fam.expert_groups_key) {
            moe.n_group = int(m.integer(kExpertGroupCount, 1));
            moe.topk_group = int(m.integer(kExpertGroupUsedCount, 1));
        }
        moe.n_ff_shared = fam.shared_expert_width_key ? int(m.integer(kExpertSharedFeedForwardLength, 0))
                                                      : n_shared * moe.n_ff_expert;
        if (fam.gated_shared_expert) {  // llama.cpp: n_ff_shexp, else the layer's n_ff
            moe.n_ff_shared_gated = int(m.integer(kExpertSharedFeedForwardLength, s.layers[size_t(l)].ffn.n_ff));
            require_positive(f, kExpertSharedFeedForwardLength.text(), moe.n_ff_shared_gated, 1 << 20);
            moe.n_ff_shared = 0;
        }
    }
}

// The spec of a file of family `fam`: the shared reading, then the row's parts in a fixed order.
ModelSpec family_spec(const Meta& m, const Family& fam) {
    ModelSpec s = common_spec(m, fam);
    apply_model(m, fam, s);
    apply_layers(m, fam, s);
    apply_windows(m, fam, s);
    if (fam.longrope) apply_longrope(m, s);
    if (fam.mla) apply_mla(m, fam, s);
    if (fam.moe) apply_moe(m, fam, s);
    return s;
}

}  // namespace

std::vector<std::string> supported_architectures() {
    std::vector<std::string> names;
    for (const Family& fam : families()) names.emplace_back(fam.arch);
    std::sort(names.begin(), names.end());
    return names;
}

ModelSpec ModelSpec::from_gguf(const gguf::File& f) {
    auto arch = f.get_string(std::string(keys::kArchitecture));
    if (!arch) throw ModelError(f.path() + ": missing metadata key '" + std::string(keys::kArchitecture) + "'");
    const Family* fam = find_family(*arch);
    if (!fam) {
        std::string list;
        for (const auto& n : supported_architectures()) list += (list.empty() ? "" : ", ") + n;
        throw ModelError(f.path() + ": architecture '" + *arch + "' is not supported (supported: " + list + ")");
    }
    return family_spec(Meta(f, *arch), *fam);
}

uint64_t ModelSpec::recurrent_state_bytes() const {
    uint64_t total = 0;
    for (const auto& L : layers)
        if (L.ssm.enabled()) total += L.ssm.state_bytes();
        else if (L.rwkv.enabled()) total += uint64_t(L.rwkv.state_floats()) * sizeof(float);
        else if (L.shortconv.enabled()) total += L.shortconv.state_bytes();
    return total;
}

uint64_t ModelSpec::kv_bytes_per_token() const {
    uint64_t total = 0;
    for (const auto& L : layers)
        if (L.mixer == LayerMixer::Attention) total += uint64_t(L.attn.n_head_kv) * uint64_t(L.attn.head_dim + L.attn.head_dim_v) * sizeof(float);
    return total;
}

}  // namespace vkllm::model
