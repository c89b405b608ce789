#include "random_model/arch_table_parts.h"

#include <string>

namespace vkllm::random_model {
namespace {
using D = Dim;
}  // namespace

std::vector<TensorRule> embeddings_and_head() {
    return {
        {"token_embd.weight", {D::Embd, D::Vocab}, Init::Embedding},
        {"rope_freqs.weight", {D::RopeHalf}, Init::RopeFreqs, Presence::Llama3Rope},
        {"output_norm.weight", {D::Embd}, Init::Norm},
        {"output.weight", {D::Embd, D::Vocab}, Init::Matrix, Presence::Untied},
    };
}

std::vector<TensorRule> attention(AttentionOptions o) {
    std::vector<TensorRule> t = {
        {"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.attn_q.weight", {D::Embd, D::QProj}, Init::Matrix},
        {"blk.{L}.attn_k.weight", {D::Embd, D::KvProj}, Init::Matrix},
        {"blk.{L}.attn_v.weight", {D::Embd, D::KvProj}, Init::Matrix},
    };
    if (o.qkv_bias) {
        t.push_back({"blk.{L}.attn_q.bias", {D::QProj}, Init::Bias});
        t.push_back({"blk.{L}.attn_k.bias", {D::KvProj}, Init::Bias});
        t.push_back({"blk.{L}.attn_v.bias", {D::KvProj}, Init::Bias});
    }
    if (o.qk_norm) {
        t.push_back({"blk.{L}.attn_q_norm.weight", {D::HeadDim}, Init::Norm});
        t.push_back({"blk.{L}.attn_k_norm.weight", {D::HeadDim}, Init::Norm});
    }
    t.push_back({"blk.{L}.attn_output.weight", {D::QProj, D::Embd}, Init::Matrix});
    if (o.post_norm) t.push_back({"blk.{L}.post_attention_norm.weight", {D::Embd}, Init::Norm});
    return t;
}

std::vector<TensorRule> gated_ffn(bool post_norm) {
    std::vector<TensorRule> t = {
        {"blk.{L}.ffn_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.ffn_gate.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_up.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_down.weight", {D::Ff, D::Embd}, Init::Matrix},
    };
    if (post_norm) t.push_back({"blk.{L}.post_ffw_norm.weight", {D::Embd}, Init::Norm});
    return t;
}

std::vector<TensorRule> moe_ffn(Presence presence) {
    return {
        {"blk.{L}.ffn_gate_inp.weight", {D::Embd, D::Expert}, Init::Matrix, presence},
        {"blk.{L}.ffn_gate_exps.weight", {D::Embd, D::FfExp, D::Expert}, Init::Matrix, presence},
        {"blk.{L}.ffn_down_exps.weight", {D::FfExp, D::Embd, D::Expert}, Init::Matrix, presence},
        {"blk.{L}.ffn_up_exps.weight", {D::Embd, D::FfExp, D::Expert}, Init::Matrix, presence},
    };
}

std::vector<TensorRule> dense_or_moe_ffn() {
    std::vector<TensorRule> t = gated_ffn(false);
    for (TensorRule& r : t)
        if (r.name != "blk.{L}.ffn_norm.weight") r.presence = Presence::Dense;
    for (const TensorRule& r : moe_ffn(Presence::Moe)) t.push_back(r);
    return t;
}

std::vector<TensorRule> mamba2_mixer(Presence presence) {
    return {
        {"blk.{L}.ssm_in.weight", {D::Embd, D::SsmInProj}, Init::Matrix, presence},
        {"blk.{L}.ssm_conv1d.weight", {D::SsmConv, D::SsmConvDim}, Init::Matrix, presence, 1.0f, true},
        {"blk.{L}.ssm_conv1d.bias", {D::SsmConvDim}, Init::Bias, presence},
        {"blk.{L}.ssm_dt.bias", {D::SsmHead}, Init::SsmDtBias, presence},
        {"blk.{L}.ssm_a", {D::One, D::SsmHead}, Init::SsmA, presence, 1.0f, true},
        {"blk.{L}.ssm_d", {D::One, D::SsmHead}, Init::Norm, presence, 1.0f, true},
        {"blk.{L}.ssm_norm.weight", {D::SsmGroupWidth, D::SsmGroups}, Init::Norm, presence, 1.0f, true},
        {"blk.{L}.ssm_out.weight", {D::SsmInner, D::Embd}, Init::Matrix, presence},
    };
}

std::vector<TensorRule> delta_net_mixer() {
    const Presence p = Presence::DeltaNetLayer;
    return {
        {"blk.{L}.attn_qkv.weight", {D::Embd, D::SsmConvDim}, Init::Matrix, p},
        {"blk.{L}.attn_gate.weight", {D::Embd, D::SsmInner}, Init::Matrix, p},
        {"blk.{L}.ssm_beta.weight", {D::Embd, D::SsmHead}, Init::Matrix, p},
        {"blk.{L}.ssm_alpha.weight", {D::Embd, D::SsmHead}, Init::Matrix, p},
        {"blk.{L}.ssm_conv1d.weight", {D::SsmConv, D::SsmConvDim}, Init::Matrix, p, 1.0f, true},
        {"blk.{L}.ssm_dt.bias", {D::SsmHead}, Init::SsmDtBias, p},
        {"blk.{L}.ssm_a", {D::SsmHead}, Init::SsmA, p, 1.0f, true},
        {"blk.{L}.ssm_norm.weight", {D::SsmState}, Init::Norm, p, 1.0f, true},
        {"blk.{L}.ssm_out.weight", {D::SsmInner, D::Embd}, Init::Matrix, p},
    };
}

std::vector<TensorRule> gated_attention() {
    const Presence p = Presence::AttentionLayer;
    return {
        {"blk.{L}.attn_q.weight", {D::Embd, D::QProjGated}, Init::Matrix, p},
        {"blk.{L}.attn_k.weight", {D::Embd, D::KvProj}, Init::Matrix, p},
        {"blk.{L}.attn_v.weight", {D::Embd, D::KvProj}, Init::Matrix, p},
        {"blk.{L}.attn_output.weight", {D::QProj, D::Embd}, Init::Matrix, p},
        {"blk.{L}.attn_q_norm.weight", {D::HeadDim}, Init::Norm, p},
        {"blk.{L}.attn_k_norm.weight", {D::HeadDim}, Init::Norm, p},
    };
}

std::vector<TensorRule> layer_norm(const std::string& stem, Presence presence) {
    return {
        {stem + ".weight", {D::Embd}, Init::Norm, presence},
        {stem + ".bias", {D::Embd}, Init::Bias, presence},
    };
}

std::vector<TensorRule> linear_with_bias(const std::string& stem, Dim in, Dim out) {
    return {
        {stem + ".weight", {in, out}, Init::Matrix},
        {stem + ".bias", {out}, Init::Bias},
    };
}

std::vector<TensorRule> only_on(std::vector<TensorRule> t, Presence presence) {
    for (TensorRule& r : t) r.presence = presence;
    return t;
}

std::vector<TensorRule> concat(std::vector<TensorRule> a, const std::vector<TensorRule>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::vector<TensorRule> joined(std::initializer_list<std::vector<TensorRule>> parts) {
    std::vector<TensorRule> t;
    for (const std::vector<TensorRule>& p : parts) t.insert(t.end(), p.begin(), p.end());
    return t;
}

std::vector<TensorRule> without(std::vector<TensorRule> t, Presence p) {
    std::erase_if(t, [p](const TensorRule& r) { return r.presence == p; });
    return t;
}

std::vector<TensorRule> without_norms(std::vector<TensorRule> t) {
    std::erase_if(t, [](const TensorRule& r) { return r.init == Init::Norm; });
    return t;
}

}  // namespace vkllm::random_model
