#include "model/blocks/layer_blocks.h"

#include "model/blocks/attention.h"
#include "model/blocks/dense_ffn.h"
#include "model/blocks/latent_attention.h"
#include "model/blocks/moe_ffn.h"

namespace vkllm::model {

std::vector<BlockKind> layer_block_kinds(const LayerSpec& L) {
    return {L.attn.mla.kv_lora_rank > 0 ? BlockKind::LatentAttention : BlockKind::Attention,
            L.ffn.moe.n_expert > 0 ? BlockKind::MoeFfn : BlockKind::DenseFfn};
}

std::unique_ptr<Block> make_block(BlockKind kind, int layer) {
    switch (kind) {
        case BlockKind::Attention: return std::make_unique<AttentionBlock>(layer);
        case BlockKind::LatentAttention: return std::make_unique<LatentAttentionBlock>(layer);
        case BlockKind::DenseFfn: return std::make_unique<DenseFfnBlock>(layer);
        case BlockKind::MoeFfn: return std::make_unique<MoeFfnBlock>(layer);
    }
    return nullptr;
}

}  // namespace vkllm::model
