#include "model/scratch.h"

#include <algorithm>
#include <vector>

#include "gpu/device.h"
#include "model/op_params.h"
#include "ops/ops.h"

namespace vkllm::model {
namespace {

constexpr uint64_t F = sizeof(float);

uint64_t max_q_dim(const ModelSpec& s) {
    int m = 0;
    for (const auto& L : s.layers) m = std::max({m, L.attn.n_head * L.attn.head_dim, L.attn.n_head * L.attn.head_dim_v});
    return uint64_t(m);
}

uint64_t max_ff(const ModelSpec& s) {
    int m = 0;
    // A MoE layer's rows of all chosen experts per token: top_k * n_ff_expert.
    for (const auto& L : s.layers)
        m = std::max({m, L.ffn.n_ff, L.ffn.moe.top_k * L.ffn.moe.n_ff_expert, L.ffn.moe.n_ff_shared});
    return uint64_t(m);
}

// The widest row of a state-space mixer: its in-projection's output (z | x B C | dt).
uint64_t max_ssm_row(const ModelSpec& s) {
    int m = 0;
    for (const auto& L : s.layers)
        if (L.ssm.enabled()) m = std::max(m, L.ssm.in_proj_rows());
    return uint64_t(m);
}

// The widest activation row (of n_embd, a layer's q or attention output, its FFN, its SSM mixer).
uint64_t widest_row(const ModelSpec& s) {
    return std::max({uint64_t(s.n_embd), max_q_dim(s), max_ff(s), max_ssm_row(s)});
}

}  // namespace

int Scratch::fit_batch(const gpu::Context& ctx, const ModelSpec& spec, int n_batch) {
    const uint64_t range = ctx.caps().max_storage_buffer_range;
    return int(std::min<uint64_t>(uint64_t(n_batch), std::max<uint64_t>(1, range / (widest_row(spec) * F))));
}

int Scratch::logit_rows(const gpu::Context& ctx, const ModelSpec& spec, int n_batch) {
    const uint64_t range = ctx.caps().max_storage_buffer_range;
    return int(std::clamp<uint64_t>(range / (uint64_t(spec.n_vocab) * F), 1, uint64_t(n_batch)));
}

Scratch::Scratch(gpu::Context& ctx, const ModelSpec& spec, int n_ctx, int n_batch, int n_logit_rows,
                 bool round_activations)
    : ctx_(&ctx), n_batch_(uint64_t(n_batch)), n_embd_(uint64_t(spec.n_embd)) {
    const uint64_t B = n_batch_, E = n_embd_;
    const auto device = gpu::Memory::Device;
    ids = gpu::Buffer(ctx, B * 4, gpu::Memory::Host);
    positions = gpu::Buffer(ctx, B * 4, gpu::Memory::Host);

    x = gpu::Buffer(ctx, B * E * F, device);
    h = gpu::Buffer(ctx, B * E * F, device);
    q = gpu::Buffer(ctx, B * max_q_dim(spec) * F, device);
    attn = gpu::Buffer(ctx, B * max_q_dim(spec) * F, device);
    block_out = gpu::Buffer(ctx, B * E * F, device);
    gate = gpu::Buffer(ctx, B * max_ff(spec) * F, device);
    up = gpu::Buffer(ctx, B * max_ff(spec) * F, device);
    if (round_activations)
        for (size_t m = 1; m < 5; ++m) rounded[m] = gpu::Buffer(ctx, B * widest_row(spec) * F, device);
    logits = gpu::Buffer(ctx, uint64_t(n_logit_rows) * uint64_t(spec.n_vocab) * F, device);
    logits_host = gpu::Buffer(ctx, uint64_t(n_logit_rows) * uint64_t(spec.n_vocab) * F, gpu::Memory::Host);
    logits_flags = gpu::Buffer(ctx, uint64_t(n_logit_rows) * 8, gpu::Memory::Host);

    // Decode attention splits the keys over workgroups when given scratch for partial results.
    const uint64_t range = ctx.caps().max_storage_buffer_range;
    uint64_t split = 0;
    for (const LayerSpec& L : spec.layers)
        if (L.mixer == LayerMixer::Attention)
            split = std::max(split, ops::attention_scratch_bytes(ctx, 1, n_ctx, L.attn));
    if (split) attn_split = gpu::Buffer(ctx, std::min(split, range), device);

    uint64_t widest_k = 0, widest_v = 0;
    int n_expert = 0, top_k = 0, n_ff_expert = 0;
    for (const LayerSpec& L : spec.layers) {
        widest_k = std::max(widest_k, uint64_t(L.attn.n_head_kv) * uint64_t(L.attn.head_dim) * F);
        widest_v = std::max(widest_v, uint64_t(L.attn.n_head_kv) * uint64_t(L.attn.head_dim_v) * F);
        n_expert = std::max(n_expert, L.ffn.moe.n_expert);
        top_k = std::max(top_k, L.ffn.moe.top_k);
        n_ff_expert = std::max(n_ff_expert, L.ffn.moe.n_ff_expert);
    }
    if (n_expert > 0) {
        const uint64_t pairs = B * uint64_t(top_k);
        moe.router_logits = gpu::Buffer(ctx, B * uint64_t(n_expert) * F, device);
        moe.experts = gpu::Buffer(ctx, pairs * 4, device);
        moe.weights = gpu::Buffer(ctx, pairs * F, device);
        moe.sorted = gpu::Buffer(ctx, ops::moe_sort_ints(n_expert, int64_t(pairs)) * 4, device);
        moe.gate = gpu::Buffer(ctx, pairs * uint64_t(n_ff_expert) * F, device);
        moe.up = gpu::Buffer(ctx, pairs * uint64_t(n_ff_expert) * F, device);
        moe.down = gpu::Buffer(ctx, pairs * E * F, device);
        moe.input = gpu::Buffer(ctx, pairs * E * F, device);
        std::vector<float> ones(pairs, 1.0f);
        moe.ones = gpu::Buffer(ctx, pairs * F, device);
        moe.ones.upload(ones.data(), pairs * F);
    }
    for (const LayerSpec& L : spec.layers) {
        const MlaSpec& m = L.attn.mla;
        if (m.kv_lora_rank == 0 || mla.q.valid()) continue;
        const uint64_t heads = B * uint64_t(L.attn.n_head);
        mla.qa = gpu::Buffer(ctx, B * uint64_t(std::max(m.q_lora_rank, 1)) * F, device);
        // Slack after the last head: RoPE's window for the rotated part runs `nope` past it.
        mla.q = gpu::Buffer(ctx, (heads * uint64_t(m.qk_nope + m.qk_rope) + uint64_t(m.qk_nope)) * F, device);
        mla.qn = gpu::Buffer(ctx, heads * uint64_t(m.qk_nope) * F, device);
        mla.qabs = gpu::Buffer(ctx, heads * uint64_t(m.kv_lora_rank) * F, device);
        mla.out = gpu::Buffer(ctx, heads * uint64_t(m.v_head) * F, device);
        std::vector<int32_t> head_of(heads);
        for (uint64_t p = 0; p < heads; ++p) head_of[p] = int32_t(p % uint64_t(L.attn.n_head));
        mla.head_ids = gpu::Buffer(ctx, heads * 4, device);
        mla.head_ids.upload(head_of.data(), heads * 4);
    }
    k_new = gpu::Buffer(ctx, B * widest_k, device);
    v_new = gpu::Buffer(ctx, B * widest_v, device);
}

void Scratch::make_encode_outputs(bool mean_pooling) {
    if (!embd_host.valid()) embd_host = gpu::Buffer(*ctx_, n_batch_ * n_embd_ * F, gpu::Memory::Host);
    if (!embd_flags.valid()) embd_flags = gpu::Buffer(*ctx_, n_batch_ * 8, gpu::Memory::Host);
    if (mean_pooling && !pool_weights.valid()) pool_weights = gpu::Buffer(*ctx_, n_batch_ * F, gpu::Memory::Host);
}

void Scratch::make_batch_buffers(int n_seq, uint64_t stage_row_bytes) {
    if (seq_positions.valid()) return;
    const uint64_t align = std::max<uint64_t>(ctx_->caps().min_storage_buffer_offset_alignment, 4);
    // Positions of one segment: at most n_batch int32s, rounded up to whole alignment units.
    seq_stride_ = (n_batch_ * 4 + align - 1) / align * align / 4;
    seq_positions = gpu::Buffer(*ctx_, uint64_t(n_seq) * seq_stride_ * 4, gpu::Memory::Host);
    // Staged attention rows: every segment starts at an aligned byte offset, so each may waste
    // up to one alignment unit after the rows before it.
    if (stage_row_bytes)
        attn_stage = gpu::Buffer(*ctx_, n_batch_ * stage_row_bytes + uint64_t(n_seq) * align, gpu::Memory::Device);
}

uint64_t Scratch::bytes() const {
    uint64_t n = 0;
    for (const gpu::Buffer* b :
         {&ids, &positions, &x, &h, &q, &attn, &k_new, &v_new, &block_out, &gate, &up, &attn_split, &seq_positions, &attn_stage, &moe.router_logits,
          &moe.experts, &moe.weights, &moe.sorted, &moe.gate, &moe.up, &moe.down, &moe.input, &moe.ones, &mla.qa,
          &mla.q, &mla.qn, &mla.qabs, &mla.out, &mla.head_ids, &logits, &logits_host, &pool_weights, &embd_host})
        n += b->size();
    for (const gpu::Buffer& b : rounded) n += b.size();
    return n;
}

}  // namespace vkllm::model
