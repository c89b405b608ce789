// Which blocks make a layer: the table from a LayerSpec to block kinds, and the blocks made from
// them. A new kind of layer (a state-space mixer, RWKV's time mix...) is a new kind here, its
// block beside the others, and its state beside the KV cache.
#pragma once

#include <memory>
#include <vector>

#include "model/blocks/block.h"
#include "model/recurrent_state.h"
#include "model/spec.h"
#include "model/weights.h"

namespace vkllm::model {

enum class BlockKind {
    Attention,        // softmax attention over a KV cache (model/blocks/attention.h)
    ParallelAttention,  // the same, its output projection left to AttentionOutput (parallel layers)
    AttentionOutput,  // a parallel layer's attention output projection and residual add, after its FFN
    LatentAttention,  // DeepSeek's multi-head latent attention (model/blocks/latent_attention.h)
    DenseFfn,         // gated or plain MLP (model/blocks/dense_ffn.h)
    MoeFfn,           // routed experts, optionally a shared one (model/blocks/moe_ffn.h)
    SsmMixer,         // Mamba-2's state-space mixer over the recurrent state (model/blocks/ssm_mixer.h)
    Mamba1Mixer,      // Mamba-1's selective-scan mixer over the recurrent state (model/blocks/ssm_mixer.h)
    RwkvTimeMix,      // RWKV-7's time mix over the recurrent state's RwkvState (model/blocks/rwkv_time_mix.h)
    RwkvChannelMix,   // RWKV-7's channel mix, the layer's FFN (model/blocks/rwkv_channel_mix.h)
    ShortConv,        // LFM2's gated short convolution over the recurrent state (model/blocks/short_conv.h)
    GatedDeltaNet,    // Gated DeltaNet's mixer over the recurrent state (model/blocks/delta_net_mixer.h)
    GatedSharedExpert,  // a MoE layer's shared expert with a sigmoid gate, after its routed experts
                        // (model/blocks/gated_shared_expert.h)
};

// The blocks of a layer, in the order they run (its mixer, then its FFN where it has one, as the
// LayerSpec says); each adds its output to the residual stream. A parallel layer runs attention,
// its FFN on the unchanged layer input, then attention's output projection; a layer with a Mamba-2
// mixer beside attention (Falcon-H1) runs attention, the mixer on the unchanged layer input,
// attention's output projection, then its FFN.
std::vector<BlockKind> layer_block_kinds(const LayerSpec& L);
// The block of `kind` for layer `layer` of `spec`; a state-space mixer or RWKV's mixes read and
// write `state`, and RWKV's mixes read their tensors from `weights.rwkv`. The block keeps
// references to all three.
std::unique_ptr<Block> make_block(BlockKind kind, int layer, const ModelSpec& spec, const Weights& weights,
                                  const RecurrentState& state);

}  // namespace vkllm::model
