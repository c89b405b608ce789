#include "random_model/tensor_sizes.h"

#include <algorithm>

namespace vkllm::random_model {

uint64_t Sizes::of(Dim d) const {
    switch (d) {
        case Dim::Embd: return embd;
        case Dim::Vocab: return vocab;
        case Dim::Ff: return ff;
        case Dim::QProj: return q_proj;
        case Dim::KvProj: return kv_proj;
        case Dim::HeadDim: return head_dim;
        case Dim::Head: return head;
        case Dim::RopeHalf: return rope_half;
        case Dim::Ctx: return ctx;
        case Dim::QkvProj: return q_proj + 2 * kv_proj;
        case Dim::FfPair: return 2 * ff;
        case Dim::Expert: return expert;
        case Dim::FfExp: return ff_exp;
        case Dim::QLora: return q_lora;
        case Dim::KvLora: return kv_lora;
        case Dim::KvLoraRope: return kv_lora + rope;
        case Dim::QkNope: return head_dim - rope;
        case Dim::VHead: return v_head;
        case Dim::VProj: return head * v_head;
        case Dim::FfShared: return ff_shared;
        case Dim::TokenTypes: return token_types;
        case Dim::One: return 1;
        case Dim::SsmInner: return ssm_inner;
        case Dim::SsmHead: return ssm_head;
        case Dim::SsmConv: return ssm_conv;
        case Dim::SsmConvDim: return ssm_inner + 2 * ssm_groups * ssm_state;
        case Dim::SsmInProj: return 2 * ssm_inner + 2 * ssm_groups * ssm_state + ssm_head;
        case Dim::SsmGroupWidth: return ssm_inner / ssm_groups;
        case Dim::SsmGroups: return ssm_groups;
        case Dim::SsmDtRank: return ssm_dt_rank;
        case Dim::SsmXProj: return ssm_dt_rank + 2 * ssm_state;
        case Dim::SsmInnerPair: return 2 * ssm_inner;
        case Dim::SsmState: return ssm_state;
        case Dim::ConvLCache: return conv_l_cache;
        case Dim::EmbdTriple: return 3 * embd;
        case Dim::QProjGated: return 2 * q_proj;
        case Dim::SsmHeadPair: return 2 * ssm_head;
    }
    return 0;
}

Sizes sizes_of(const RandomModelConfig& c, const gguf::File& vocab, uint64_t n_vocab) {
    Sizes sizes{};
    sizes.embd = uint64_t(c.n_embd);
    sizes.vocab = n_vocab;
    sizes.ff = uint64_t(c.n_ff);
    sizes.head_dim = uint64_t(c.head_dim);
    sizes.head = uint64_t(c.n_head);
    sizes.q_proj = uint64_t(c.n_head) * sizes.head_dim;
    sizes.kv_proj = uint64_t(c.n_head_kv) * sizes.head_dim;
    sizes.rope_half = uint64_t(c.rope_dims) / 2;
    sizes.ctx = uint64_t(c.n_ctx);
    sizes.expert = uint64_t(c.n_expert);
    sizes.ff_exp = uint64_t(c.n_ff_exp);
    sizes.q_lora = uint64_t(std::max(c.q_lora_rank, 0));
    sizes.kv_lora = uint64_t(c.kv_lora_rank);
    sizes.rope = uint64_t(c.rope_dims);
    sizes.v_head = uint64_t(c.v_head_dim);
    sizes.ff_shared = uint64_t(c.n_ff_exp) * uint64_t(std::max(c.n_expert_shared, 0));
    sizes.token_types = uint64_t(std::max<int64_t>(vocab.get_int("tokenizer.ggml.token_type_count").value_or(2), 1));
    sizes.ssm_inner = uint64_t(c.ssm_inner);
    sizes.ssm_head = c.ssm_head_dim > 0 ? uint64_t(c.ssm_inner / c.ssm_head_dim) : 0;
    sizes.ssm_conv = uint64_t(c.ssm_conv);
    sizes.ssm_state = uint64_t(c.ssm_state);
    sizes.ssm_groups = uint64_t(std::max(c.ssm_groups, 1));
    sizes.ssm_dt_rank = uint64_t(c.ssm_dt_rank);
    sizes.conv_l_cache = uint64_t(c.conv_l_cache);
    return sizes;
}

}  // namespace vkllm::random_model
