// Which blocks make a layer: the table from a LayerSpec to block kinds, and the blocks made from
// them. A new kind of layer (a state-space mixer, RWKV's time mix...) is a new kind here, its
// block beside the others, and its state beside the KV cache.
#pragma once

#include <memory>
#include <vector>

#include "model/blocks/block.h"
#include "model/recurrent_state.h"
#include "model/spec.h"

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
};

// The blocks of a layer, in the order they run (its mixer, then its FFN where it has one, as the
// LayerSpec says); each adds its output to the residual stream. A parallel layer runs attention,
// its FFN on the unchanged layer input, then attention's output projection.
std::vector<BlockKind> layer_block_kinds(const LayerSpec& L);
// The block of `kind` for layer `layer`; a state-space mixer reads and writes `state`.
std::unique_ptr<Block> make_block(BlockKind kind, int layer, const RecurrentState& state);

}  // namespace vkllm::model
