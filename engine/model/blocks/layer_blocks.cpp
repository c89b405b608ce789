#include "model/blocks/layer_blocks.h"

#include <stdexcept>

#include "model/blocks/attention.h"
#include "model/blocks/delta_net_mixer.h"
#include "model/blocks/gated_shared_expert.h"
#include "model/blocks/dense_ffn.h"
#include "model/blocks/latent_attention.h"
#include "model/blocks/moe_ffn.h"
#include "model/blocks/rwkv_channel_mix.h"
#include "model/blocks/rwkv_time_mix.h"
#include "model/blocks/short_conv.h"
#include "model/blocks/ssm_mixer.h"

namespace vkllm::model {

std::vector<BlockKind> layer_block_kinds(const LayerSpec& L) {
    std::vector<BlockKind> kinds;
    if (L.parallel)  // Forward refuses parallel layers of any other mixer or with experts
        return {BlockKind::ParallelAttention, BlockKind::DenseFfn, BlockKind::AttentionOutput};
    if (L.ssm_beside_attention) {  // Falcon-H1: the Mamba-2 mixer reads the unchanged layer input
        kinds = {BlockKind::ParallelAttention, BlockKind::SsmMixer, BlockKind::AttentionOutput};
        if (L.has_ffn) kinds.push_back(L.ffn.moe.n_expert > 0 ? BlockKind::MoeFfn : BlockKind::DenseFfn);
        return kinds;
    }
    switch (L.mixer) {
        case LayerMixer::Attention:
            kinds.push_back(L.attn.mla.kv_lora_rank > 0 ? BlockKind::LatentAttention : BlockKind::Attention);
            break;
        case LayerMixer::Mamba2: kinds.push_back(BlockKind::SsmMixer); break;
        case LayerMixer::Mamba1: kinds.push_back(BlockKind::Mamba1Mixer); break;
        case LayerMixer::ShortConv: kinds.push_back(BlockKind::ShortConv); break;
        case LayerMixer::GatedDeltaNet: kinds.push_back(BlockKind::GatedDeltaNet); break;
        case LayerMixer::Rwkv7:  // the time mix, then the channel mix in the FFN's place
            kinds.push_back(BlockKind::RwkvTimeMix);
            if (L.has_ffn) kinds.push_back(BlockKind::RwkvChannelMix);
            return kinds;
        case LayerMixer::None: break;
    }
    if (L.has_ffn) kinds.push_back(L.ffn.moe.n_expert > 0 ? BlockKind::MoeFfn : BlockKind::DenseFfn);
    if (L.has_ffn && L.ffn.moe.n_expert > 0 && L.ffn.moe.n_ff_shared_gated > 0)
        kinds.push_back(BlockKind::GatedSharedExpert);
    return kinds;
}

std::unique_ptr<Block> make_block(BlockKind kind, int layer, const ModelSpec& spec, const Weights& weights,
                                  const RecurrentState& state) {
    auto rwkv_weights = [&]() -> const RwkvWeights& {
        if (!weights.rwkv) throw std::logic_error("make_block: an RWKV block without RWKV weights");
        return *weights.rwkv;
    };
    switch (kind) {
        case BlockKind::Attention: return std::make_unique<AttentionBlock>(layer);
        case BlockKind::ParallelAttention: return std::make_unique<AttentionBlock>(layer, /*with_output=*/false);
        case BlockKind::AttentionOutput: return std::make_unique<AttentionOutputBlock>(layer);
        case BlockKind::LatentAttention: return std::make_unique<LatentAttentionBlock>(layer);
        case BlockKind::DenseFfn: return std::make_unique<DenseFfnBlock>(layer);
        case BlockKind::MoeFfn: return std::make_unique<MoeFfnBlock>(layer);
        case BlockKind::SsmMixer: return std::make_unique<SsmMixerBlock>(layer, state);
        case BlockKind::Mamba1Mixer: return std::make_unique<Mamba1MixerBlock>(layer, state);
        case BlockKind::ShortConv: return std::make_unique<ShortConvBlock>(layer, state);
        case BlockKind::GatedDeltaNet: return std::make_unique<GatedDeltaNetBlock>(layer, state);
        case BlockKind::GatedSharedExpert: return std::make_unique<GatedSharedExpertBlock>(layer);
        case BlockKind::RwkvTimeMix:
            return std::make_unique<RwkvTimeMixBlock>(layer, spec.layers[size_t(layer)].rwkv, rwkv_weights(),
                                                      state.rwkv());
        case BlockKind::RwkvChannelMix:
            return std::make_unique<RwkvChannelMixBlock>(layer, spec.layers[size_t(layer)].rwkv, rwkv_weights(),
                                                         state.rwkv());
    }
    return nullptr;
}

}  // namespace vkllm::model
