// Gated DeltaNet beside gated attention: Qwen3.5, and with experts Qwen3.5-MoE and Qwen3-Next.
#include "random_model/arch_table_families.h"
#include "random_model/arch_table_parts.h"

namespace vkllm::random_model {
namespace {
using D = Dim;
}  // namespace

// Qwen3.5 (llama.cpp's src/models/qwen35.cpp): 'D' layers Gated DeltaNet, '*' layers gated
// attention (NeoX RoPE over rope.dimension_count dims, llama.cpp's IMRoPE sections written as
// the converter does), every layer attn_norm before its mixer and post_attention_norm before a
// SwiGLU FFN. llama.cpp finds the attention layers by full_attention_interval.
ArchTable qwen35_table() {
    ArchTable qwen35;
    qwen35.name = "qwen35";
    qwen35.globals = without(embeddings_and_head(), Presence::Llama3Rope);
    qwen35.per_layer = concat(concat({{"blk.{L}.attn_norm.weight", {D::Embd}, Init::Norm}}, delta_net_mixer()),
                              gated_attention());
    qwen35.per_layer = concat(qwen35.per_layer, {
        {"blk.{L}.post_attention_norm.weight", {D::Embd}, Init::Norm},
        {"blk.{L}.ffn_gate.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_up.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_down.weight", {D::Ff, D::Embd}, Init::Matrix},
    });
    qwen35.norm_eps = 1e-6f;
    qwen35.rope_freq_base = 10000000.0f;
    qwen35.partial_rope = true;
    qwen35.ssm = true;
    qwen35.delta_net = true;
    qwen35.hybrid = Hybrid::DeltaNetOrAttention;
    qwen35.default_layers = "D*";  // an attention layer within the default two (interval 2)
    return qwen35;
}

// Qwen3.5-MoE (src/models/qwen35moe.cpp): Qwen3.5's layers with experts after every layer
// (softmax routing, renormalised, expert_feed_forward_length wide) and a shared expert of
// expert_shared_feed_forward_length (n_ff) scaled by sigmoid(ffn_gate_inp_shexp x).
// Qwen3-Next (src/models/qwen3next.cpp): the same, but b and alpha from one ssm_ba per key
// head, each key head repeated for its value heads, no IMRoPE sections.
ArchTable qwen35_moe_table(const std::string& name) {
    const std::vector<TensorRule> gated_shared_expert = {
        {"blk.{L}.ffn_gate_inp_shexp.weight", {D::Embd}, Init::Matrix, Presence::Always, 1.0f, true},
        {"blk.{L}.ffn_gate_shexp.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_up_shexp.weight", {D::Embd, D::Ff}, Init::Matrix},
        {"blk.{L}.ffn_down_shexp.weight", {D::Ff, D::Embd}, Init::Matrix},
    };
    const ArchTable qwen35 = qwen35_table();
    ArchTable t = qwen35;
    t.name = name;
    t.per_layer = {};
    for (const TensorRule& r : qwen35.per_layer)
        if (r.name.rfind("blk.{L}.ffn_", 0) != 0) t.per_layer.push_back(r);
    t.per_layer = concat(concat(t.per_layer, moe_ffn(Presence::Always)), gated_shared_expert);
    if (t.name == "qwen3next") {
        std::vector<TensorRule> rules;
        for (const TensorRule& r : t.per_layer)
            if (r.name != "blk.{L}.ssm_beta.weight" && r.name != "blk.{L}.ssm_alpha.weight") rules.push_back(r);
        rules.push_back({"blk.{L}.ssm_ba.weight", {D::Embd, D::SsmHeadPair}, Init::Matrix, Presence::DeltaNetLayer});
        t.per_layer = rules;
        t.delta_ba_grouped = true;
    }
    t.moe = MoeSupport::Required;
    t.default_n_expert = 4;
    t.default_n_expert_used = 2;
    t.writes_expert_ff_length = true;
    t.shared_expert_ff_key = true;
    return t;
}

}  // namespace vkllm::random_model
