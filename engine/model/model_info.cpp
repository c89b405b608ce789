// vkllm::ModelInfo: a model's architecture as plain values, made from the engine's ModelSpec,
// the GGUF file and the tokenizer; and the per-layer table `vkllm inspect` prints.
#include <algorithm>
#include <cstdio>
#include <sstream>

#include "gguf/gguf.h"
#include "model/metadata_keys.h"
#include "model/model_internal.h"
#include "model/spec.h"
#include "tokenizer/tokenizer.h"
#include "vkllm/gguf.h"
#include "vkllm/model_info.h"

namespace vkllm {
namespace {

const char* type_name(gguf::TensorType t) {
    auto tr = gguf::type_traits(t);
    return tr ? tr->name : "?";
}

TensorInfo tensor_info(const gguf::TensorInfo& t) {
    return {t.name, type_name(t.type), t.dims, t.n_bytes};
}

RopeScaling rope_scaling(const model::RopeSpec& r) {
    if (r.longrope) return RopeScaling::LongRope;
    switch (r.scaling) {
        case model::RopeScaling::None: return RopeScaling::None;
        case model::RopeScaling::Linear: return RopeScaling::Linear;
        case model::RopeScaling::Yarn: return RopeScaling::Yarn;
        case model::RopeScaling::Llama3: return RopeScaling::Llama3;
    }
    return RopeScaling::None;
}

QkNorm qk_norm(model::QkNorm q) {
    switch (q) {
        case model::QkNorm::None: return QkNorm::None;
        case model::QkNorm::PerHead: return QkNorm::PerHead;
        case model::QkNorm::FullWidth: return QkNorm::FullWidth;
        case model::QkNorm::L2AfterRope: return QkNorm::L2AfterRope;
    }
    return QkNorm::None;
}

Activation activation(model::Activation a) {
    switch (a) {
        case model::Activation::SiLU: return Activation::Silu;
        case model::Activation::GeluTanh: return Activation::GeluTanh;
        case model::Activation::GeluErf: return Activation::GeluErf;
        case model::Activation::ReluSqr: return Activation::ReluSqr;
    }
    return Activation::Silu;
}

NormPlacement placement(model::NormPlacement p) {
    switch (p) {
        case model::NormPlacement::Pre: return NormPlacement::Pre;
        case model::NormPlacement::Post: return NormPlacement::Post;
        case model::NormPlacement::Sandwich: return NormPlacement::Sandwich;
        case model::NormPlacement::PostResidual: return NormPlacement::PostSum;
    }
    return NormPlacement::Pre;
}

AttentionKind attention_kind(const model::AttentionSpec& a) {
    if (a.mla.kv_lora_rank > 0) return AttentionKind::Mla;
    if (a.window > 0) return AttentionKind::SlidingWindow;
    if (a.chunk > 0) return AttentionKind::Chunked;
    if (!a.rope.enabled) return AttentionKind::Nope;
    return AttentionKind::Global;
}

AttentionInfo attention_info(const model::AttentionSpec& a) {
    AttentionInfo i;
    i.kind = attention_kind(a);
    i.n_head = a.n_head;
    i.n_head_kv = a.n_head_kv;
    i.head_dim = a.head_dim;
    i.head_dim_v = a.head_dim_v;
    i.window = a.window;
    i.chunk = a.chunk;
    i.causal = a.causal;  // false: an encoder's bidirectional attention (BERT)
    i.sinks = a.sinks;
    i.gated = a.gated;
    i.softcap = a.softcap;
    i.scale = a.scale;
    i.max_alibi_bias = a.max_alibi_bias;
    if (a.max_alibi_bias > 0.0f)
        for (int h = 0; h < a.n_head; ++h) i.alibi_slopes.push_back(float(a.alibi_slope(h)));
    i.qk_norm = qk_norm(a.qk_norm);
    i.bias_qkv = a.bias_qkv;
    i.bias_o = a.bias_o;
    i.fused_qkv = a.fused_qkv;
    i.q_lora_rank = a.mla.q_lora_rank;
    i.kv_lora_rank = a.mla.kv_lora_rank;
    i.qk_nope = a.mla.qk_nope;
    i.qk_rope = a.mla.qk_rope;
    i.v_head = a.mla.v_head;
    i.rope.enabled = a.rope.enabled;
    i.rope.n_dims = a.rope.n_dims;
    i.rope.neox = a.rope.neox;
    i.rope.freq_base = a.rope.freq_base;
    i.rope.scaling = rope_scaling(a.rope);
    i.rope.factor = a.rope.factor;
    i.rope.n_ctx_orig = a.rope.n_ctx_orig;
    i.rope.freq_factors = a.rope.freq_factors;
    return i;
}

MixerKind mixer_kind(model::LayerMixer m) {
    switch (m) {
        case model::LayerMixer::Attention: return MixerKind::Attention;
        case model::LayerMixer::Mamba2: return MixerKind::Mamba2;
        case model::LayerMixer::Mamba1: return MixerKind::Mamba1;
        case model::LayerMixer::Rwkv7: return MixerKind::Rwkv7;
        case model::LayerMixer::ShortConv: return MixerKind::ShortConv;
        case model::LayerMixer::GatedDeltaNet: return MixerKind::GatedDeltaNet;
        case model::LayerMixer::None: return MixerKind::None;
    }
    return MixerKind::Attention;
}

SsmInfo ssm_info(const model::SsmSpec& m) {
    return {.d_conv = m.d_conv, .d_inner = m.d_inner, .d_state = m.d_state, .n_head = m.n_head, .n_group = m.n_group,
            .dt_rank = m.dt_rank};
}

FfnInfo ffn_info(const model::LayerSpec& L) {
    FfnInfo i;
    if (!L.has_ffn) {
        i.kind = FfnKind::None;
        return i;
    }
    const model::FfnSpec& f = L.ffn;
    const model::MoeSpec& m = f.moe;
    i.kind = m.n_expert > 0 ? FfnKind::Moe : f.gated ? FfnKind::DenseGated : FfnKind::DensePlain;
    i.activation = activation(f.activation);
    i.n_ff = f.n_ff;
    i.bias = f.bias;
    i.n_expert = m.n_expert;
    i.top_k = m.top_k;
    i.n_ff_expert = m.n_ff_expert;
    i.n_shared_expert_ff = std::max(m.n_ff_shared, m.n_ff_shared_gated);
    i.shared_expert_gated = m.n_ff_shared_gated > 0;
    i.gating = m.softmax_after_topk ? MoeGating::SoftmaxAfterTopk : m.sigmoid ? MoeGating::Sigmoid : MoeGating::Softmax;
    i.norm_topk = m.norm_topk;
    i.weights_scale = m.weights_scale;
    i.n_group = m.n_group;
    i.topk_group = m.topk_group;
    return i;
}

// The layer a tensor belongs to by its "blk.N." prefix; -1 for the others.
int tensor_layer(const std::string& name) {
    if (name.rfind("blk.", 0) != 0) return -1;
    size_t i = 4, end = name.find('.', i);
    if (end == std::string::npos || end == i) return -1;
    int layer = 0;
    for (; i < end; ++i) {
        if (name[i] < '0' || name[i] > '9') return -1;
        layer = layer * 10 + (name[i] - '0');
        if (layer > 1000000) return -1;
    }
    return layer;
}

void add_tokenizer(ModelInfo& info, const tokenizer::Tokenizer& tok) {
    info.tokenizer = tok.kind();
    info.add_bos = tok.add_bos();
    info.add_eos = tok.add_eos();
    const std::pair<const char*, int32_t> specials[] = {{"bos", tok.bos()}, {"eos", tok.eos()}, {"eot", tok.eot()},
                                                        {"eom", tok.eom()}, {"unk", tok.unk()}, {"pad", tok.pad()}};
    for (const auto& [role, id] : specials)
        if (id >= 0 && id < tok.n_vocab()) info.special_tokens.push_back({role, id, tok.token_text(id)});
}

void add_chat_templates(ModelInfo& info, const gguf::File& file) {
    const std::string key(model::keys::kChatTemplate);
    if (const gguf::Value* v = file.find(key); v && v->type == gguf::ValueType::STRING) info.chat_template = v->s;
    const std::string prefix = key + ".";
    for (const std::string& k : file.keys_in_order())
        if (k.size() > prefix.size() && k.rfind(prefix, 0) == 0) info.chat_template_names.push_back(k.substr(prefix.size()));
}

// The spec's names in the table (they predate ModelInfo's and the table keeps them).
const char* table_activation(Activation a) {
    switch (a) {
        case Activation::Silu: return "silu";
        case Activation::GeluTanh: return "gelu";
        case Activation::GeluErf: return "gelu-erf";
        case Activation::ReluSqr: return "relu^2";
    }
    return "silu";
}

const char* table_scaling(RopeScaling s) {
    switch (s) {
        case RopeScaling::None: return "";
        case RopeScaling::Linear: return " linear";
        case RopeScaling::Yarn: return " yarn";
        case RopeScaling::Llama3: return " freq-factors";
        case RopeScaling::LongRope: return " longrope";
    }
    return "";
}

}  // namespace

const char* to_string(RopeScaling s) {
    switch (s) {
        case RopeScaling::None: return "none";
        case RopeScaling::Linear: return "linear";
        case RopeScaling::Yarn: return "yarn";
        case RopeScaling::Llama3: return "llama3";
        case RopeScaling::LongRope: return "longrope";
    }
    return "none";
}

const char* to_string(AttentionKind k) {
    switch (k) {
        case AttentionKind::Global: return "global";
        case AttentionKind::SlidingWindow: return "sliding_window";
        case AttentionKind::Chunked: return "chunked";
        case AttentionKind::Nope: return "nope";
        case AttentionKind::Mla: return "mla";
    }
    return "global";
}

const char* to_string(QkNorm q) {
    switch (q) {
        case QkNorm::None: return "none";
        case QkNorm::PerHead: return "per_head";
        case QkNorm::FullWidth: return "full_width";
        case QkNorm::L2AfterRope: return "l2_after_rope";
    }
    return "none";
}

const char* to_string(FfnKind k) {
    switch (k) {
        case FfnKind::DenseGated: return "dense_gated";
        case FfnKind::DensePlain: return "dense_plain";
        case FfnKind::Moe: return "moe";
        case FfnKind::None: return "none";
    }
    return "dense_gated";
}

const char* to_string(MixerKind m) {
    switch (m) {
        case MixerKind::Attention: return "attention";
        case MixerKind::Mamba2: return "mamba-2";
        case MixerKind::Mamba1: return "mamba-1";
        case MixerKind::Rwkv7: return "rwkv-7";
        case MixerKind::ShortConv: return "short-conv";
        case MixerKind::GatedDeltaNet: return "gated-deltanet";
        case MixerKind::None: return "none";
    }
    return "attention";
}

const char* to_string(Activation a) {
    switch (a) {
        case Activation::Silu: return "silu";
        case Activation::GeluTanh: return "gelu_tanh";
        case Activation::GeluErf: return "gelu_erf";
        case Activation::ReluSqr: return "relu_sqr";
    }
    return "silu";
}

const char* to_string(MoeGating g) {
    switch (g) {
        case MoeGating::Softmax: return "softmax";
        case MoeGating::Sigmoid: return "sigmoid";
        case MoeGating::SoftmaxAfterTopk: return "softmax_after_topk";
    }
    return "softmax";
}

const char* to_string(NormPlacement p) {
    switch (p) {
        case NormPlacement::Pre: return "pre";
        case NormPlacement::Post: return "post";
        case NormPlacement::Sandwich: return "sandwich";
        case NormPlacement::PostSum: return "post-sum";
    }
    return "pre";
}

const char* to_string(NormKind n) { return n == NormKind::LayerNorm ? "layer_norm" : "rms_norm"; }

const char* to_string(Pooling p) {
    switch (p) {
        case Pooling::Model: return "model";
        case Pooling::None: return "none";
        case Pooling::Mean: return "mean";
        case Pooling::Cls: return "cls";
        case Pooling::Last: return "last";
    }
    return "none";
}

ModelInfo detail::model_info(const gguf::File& file, const model::ModelSpec& spec, const tokenizer::Tokenizer* tok) {
    ModelInfo info;
    info.arch = spec.arch;
    info.name = spec.name;
    info.source = file.path();
    info.n_layer = spec.n_layer;
    info.n_embd = spec.n_embd;
    info.n_vocab = spec.n_vocab;
    info.n_ctx_train = spec.n_ctx_train;
    info.norm = spec.norm == model::NormKind::RMSNorm ? NormKind::RmsNorm : NormKind::LayerNorm;
    info.norm_eps = spec.norm_eps;
    info.embd_scale = spec.embd_scale;
    info.learned_positions = spec.learned_positions;
    info.tied_embeddings = spec.tied_embeddings;
    info.final_softcap = spec.final_softcap;
    info.pooling = spec.pooling;

    for (size_t l = 0; l < spec.layers.size(); ++l) {
        const model::LayerSpec& L = spec.layers[l];
        LayerInfo li;
        li.index = int(l);
        li.norm_placement = placement(L.norm_placement);
        li.parallel = L.parallel;
        li.attn_norm = L.attn_norm_tensor;
        li.ffn_norm = L.ffn_norm_tensor;
        li.mixer = mixer_kind(L.mixer);
        li.ffn = ffn_info(L);
        li.ssm_beside_attention = L.ssm_beside_attention;
        if (L.shortconv.enabled()) {
            li.shortconv = {L.shortconv.l_cache, L.shortconv.channels};
            li.state_bytes = L.shortconv.state_bytes();
            info.state_bytes_per_sequence += li.state_bytes;
            info.n_shortconv_layers++;
        }
        if (L.ssm.enabled()) {
            li.ssm = ssm_info(L.ssm);
            li.state_bytes = L.ssm.state_bytes();
            info.state_bytes_per_sequence += li.state_bytes;
            info.n_ssm_layers++;
        }
        if (L.rwkv.enabled()) {
            const model::RwkvSpec& r = L.rwkv;
            li.rwkv = {int(r.n_head()), int(r.head_size), int(r.n_ff), int(r.decay_rank), int(r.iclr_rank),
                       int(r.value_rank), int(r.gate_rank)};
            li.state_bytes = uint64_t(r.state_floats()) * sizeof(float);
            info.state_bytes_per_sequence += li.state_bytes;
            info.n_rwkv_layers++;
        }
        if (L.mixer != model::LayerMixer::Attention) {
            info.layers.push_back(std::move(li));
            continue;
        }
        li.attention = attention_info(L.attn);
        // The f32 cache row of one token: its keys and its values (MLA: the latent and RoPE key
        // row as "keys", the latent again as "values"; the spec sizes them so).
        li.kv_bytes_per_token = uint64_t(L.attn.n_head_kv) * uint64_t(L.attn.head_dim + L.attn.head_dim_v) * sizeof(float);
        // A window no shorter than the context is cached like a global layer; here, without a
        // context, any window counts as local.
        if (L.attn.window > 0) {
            info.kv_bytes_per_token_local += li.kv_bytes_per_token;
            info.n_local_layers++;
        } else {
            info.kv_bytes_per_token_global += li.kv_bytes_per_token;
            info.n_global_layers++;
        }
        info.layers.push_back(std::move(li));
    }

    for (const gguf::TensorInfo& t : file.tensors()) {
        TensorInfo ti = tensor_info(t);
        info.parameters += t.n_elements();
        info.tensor_bytes += t.n_bytes;
        const int layer = tensor_layer(t.name);
        if (layer >= 0 && layer < int(info.layers.size())) info.layers[size_t(layer)].tensors.push_back(ti);
        info.tensors.push_back(std::move(ti));
    }

    if (tok) add_tokenizer(info, *tok);
    add_chat_templates(info, file);
    return info;
}

ModelInfo read_model_info(const GgufFile& file) {
    const gguf::File& f = file.internal();
    const model::ModelSpec spec = model::ModelSpec::from_gguf(f);
    // A file without a vocabulary still has an architecture to describe.
    std::unique_ptr<tokenizer::Tokenizer> tok;
    if (f.has(std::string(model::keys::kTokenizerModel)) || f.has(std::string(model::keys::kTokenizerTokens)))
        tok = tokenizer::Tokenizer::from_gguf(f);
    return detail::model_info(f, spec, tok.get());
}

std::string ModelInfo::layer_table() const {
    std::ostringstream s;
    s << "architecture " << arch << (name.empty() ? "" : " (" + name + ")") << ": " << n_layer << " layers, n_embd "
      << n_embd << ", n_vocab " << n_vocab << ", context " << n_ctx_train << "\n";
    s << "norm " << (norm == NormKind::RmsNorm ? "RMSNorm" : "LayerNorm") << " eps " << norm_eps
      << (tied_embeddings ? ", tied embeddings" : "") << (learned_positions ? ", learned positions" : "");
    if (embd_scale != 1.0f) s << ", embedding scale " << embd_scale;
    if (final_softcap > 0) s << ", final soft-cap " << final_softcap;
    if (n_ssm_layers > 0 || n_shortconv_layers > 0) {
        // What a sequence costs: the attention layers' cache grows with every token, the
        // state-space and short-convolution layers' state does not.
        s << "; KV cache " << kv_bytes_per_token_global + kv_bytes_per_token_local << " bytes per token ("
          << n_global_layers + n_local_layers << " attention layers), recurrent state " << state_bytes_per_sequence
          << " bytes per sequence (";
        if (n_ssm_layers > 0) s << n_ssm_layers << " state-space layers" << (n_shortconv_layers > 0 ? ", " : "");
        if (n_shortconv_layers > 0) s << n_shortconv_layers << " short-convolution layers";
        s << ")";
    } else if (n_rwkv_layers > 0) {  // no KV cache at all: the token shifts and wkv states only
        s << "; no KV cache, recurrent state " << state_bytes_per_sequence << " bytes per sequence ("
          << n_rwkv_layers << " RWKV-7 layers)";
    }
    s << "\n";
    s << "layer  heads(q/kv) head_dim  attention        rope                     norm      ffn\n";
    for (const LayerInfo& L : layers) {
        const AttentionInfo& a = L.attention;
        char attn[64], rope[64], ffn[64], heads[32];
        std::snprintf(heads, sizeof heads, "%d/%d", a.n_head, a.n_head_kv);
        if (a.window > 0) std::snprintf(attn, sizeof attn, "window %d", a.window);
        else if (a.chunk > 0) std::snprintf(attn, sizeof attn, "chunk %d", a.chunk);
        else std::snprintf(attn, sizeof attn, a.causal ? "global" : "bidirectional");
        if (!a.rope.enabled && a.max_alibi_bias > 0) std::snprintf(rope, sizeof rope, "ALiBi, max bias %g", double(a.max_alibi_bias));
        else if (!a.rope.enabled) std::snprintf(rope, sizeof rope, "none (NoPE)");
        else
            std::snprintf(rope, sizeof rope, "%s %d base %g%s", a.rope.neox ? "neox" : "norm", a.rope.n_dims,
                          double(a.rope.freq_base), table_scaling(a.rope.scaling));
        if (L.ffn.kind == FfnKind::None)
            std::snprintf(ffn, sizeof ffn, "none");
        else if (L.ffn.kind == FfnKind::Moe)
            std::snprintf(ffn, sizeof ffn, "moe %d/%d x %d%s", L.ffn.top_k, L.ffn.n_expert, L.ffn.n_ff_expert,
                          L.ffn.norm_topk ? " renorm" : "");
        else
            std::snprintf(ffn, sizeof ffn, "%s%s %d", L.ffn.kind == FfnKind::DenseGated ? "gated " : "",
                          table_activation(L.ffn.activation), L.ffn.n_ff);
        if (L.mixer != MixerKind::Attention) {  // the mixer's sizes in the attention columns
            char mixer[96] = "none (an FFN alone)";
            if (L.mixer == MixerKind::Mamba2)
                std::snprintf(mixer, sizeof mixer, "Mamba-2 inner %d state %d heads %d groups %d conv %d", L.ssm.d_inner,
                              L.ssm.d_state, L.ssm.n_head, L.ssm.n_group, L.ssm.d_conv);
            else if (L.mixer == MixerKind::Mamba1)
                std::snprintf(mixer, sizeof mixer, "Mamba-1 inner %d state %d dt rank %d conv %d", L.ssm.d_inner,
                              L.ssm.d_state, L.ssm.dt_rank, L.ssm.d_conv);
            else if (L.mixer == MixerKind::Rwkv7)
                std::snprintf(mixer, sizeof mixer, "RWKV-7 wkv %d x %d, loras %d/%d/%d/%d, state %llu B",
                              L.rwkv.n_head, L.rwkv.head_size, L.rwkv.decay_rank, L.rwkv.iclr_rank,
                              L.rwkv.value_rank, L.rwkv.gate_rank, (unsigned long long)L.state_bytes);
            else if (L.mixer == MixerKind::ShortConv)
                std::snprintf(mixer, sizeof mixer, "short conv %d taps x %d channels, state %llu B",
                              L.shortconv.l_cache, L.shortconv.channels, (unsigned long long)L.state_bytes);
            char line[320];
            std::snprintf(line, sizeof line, "%5d  %-62s %-9s %s\n", L.index, mixer, to_string(L.norm_placement), ffn);
            s << line;
            continue;
        }
        const char* qk = a.qk_norm == QkNorm::None ? "" : a.qk_norm == QkNorm::PerHead ? ", qk-norm" : ", qk-norm (full)";
        char line[320];
        // A parallel block's attention and FFN read the same input: "parallel" in the norm column,
        // "par-2norm" with Falcon-40B's second norm (attn_norm_2) for attention.
        const char* norm_col = !L.parallel ? to_string(L.norm_placement)
                               : L.attn_norm == L.ffn_norm ? "parallel" : "par-2norm";
        std::snprintf(line, sizeof line, "%5d  %-11s %-9d %-16s %-24s %-9s %s%s%s", L.index, heads, a.head_dim, attn,
                      rope, norm_col, ffn, qk, a.softcap > 0 ? ", softcap" : "");
        s << line;
        if (L.ssm_beside_attention)  // Falcon-H1: the Mamba-2 mixer beside attention
            s << "; beside it Mamba-2 inner " << L.ssm.d_inner << " state " << L.ssm.d_state << " heads "
              << L.ssm.n_head << " groups " << L.ssm.n_group << " conv " << L.ssm.d_conv << ", state "
              << L.state_bytes << " B";
        s << "\n";
    }
    return s.str();
}

}  // namespace vkllm
