// The buffers one forward pass works in, planned in one place from the spec and the batch: the
// step's host-visible inputs, the activations every layer reuses, the scratch of the layer kinds
// that need their own (mixture of experts, latent attention, split-K attention) and the
// outputs read back. Every shape below is what the widest layer of the spec needs for n_batch
// tokens; a buffer a spec never uses is left empty (valid() false, 0 bytes).
#pragma once

#include <cstdint>

#include "gpu/buffer.h"
#include "model/spec.h"

namespace vkllm::gpu { class Context; }

namespace vkllm::model {

struct Scratch {
    // The batch clamped so that every activation row times the batch fits one binding.
    static int fit_batch(const gpu::Context& ctx, const ModelSpec& spec, int n_batch);
    // Rows of logits a pass can return at once: its batch, within one binding of n_vocab rows
    // (many rows are only needed by `vkllm logits`).
    static int logit_rows(const gpu::Context& ctx, const ModelSpec& spec, int n_batch);

    Scratch() = default;
    // round_activations: the rounded copies of the activations quantised matmuls read.
    Scratch(gpu::Context& ctx, const ModelSpec& spec, int n_ctx, int n_batch, int n_logit_rows, bool round_activations);

    // Bytes of every buffer here (Forward::scratch_bytes), the read-backs' flags excepted.
    uint64_t bytes() const;
    // The encoder's outputs (and with mean pooling its weights), made on first use.
    void make_encode_outputs(bool mean_pooling);
    // A pass over several sequences (Forward::step_batch): each sequence's query positions at
    // an offset the device's storage alignment divides (attention binds them from there), and
    // the staging rows its attention output goes through when a segment's rows of `attn` may not
    // start at such an offset (stage_row_bytes: the widest such attention row; 0: none needed).
    // Made once, for up to n_seq segments.
    void make_batch_buffers(int n_seq, uint64_t stage_row_bytes);
    // Elements between two segments' positions in seq_positions.
    uint64_t seq_positions_stride() const { return seq_stride_; }

    // Host-visible inputs, written before each submit.
    gpu::Buffer ids;        // int32 [n_batch]
    gpu::Buffer positions;  // int32 [n_batch]

    // Activations (device-local).
    gpu::Buffer x;          // [n_batch, n_embd] the residual stream
    gpu::Buffer h;          // [n_batch, n_embd] normalised input of a block
    gpu::Buffer q;          // [n_batch, n_head * head_dim]
    gpu::Buffer attn;       // [n_batch, n_head * head_dim_v]
    gpu::Buffer k_new, v_new;  // [n_batch, kv row]: this step's keys/values before they enter the cache
    gpu::Buffer block_out;  // [n_batch, n_embd] a block's output before its post-norm
    gpu::Buffer gate, up;   // [n_batch, n_ff]
    gpu::Buffer rounded[5];  // by ops::ActRounding, [n_batch, widest]: activations rounded for matmuls
    gpu::Buffer attn_split;  // split-K partial results of decode attention (none: no split)
    gpu::Buffer seq_positions;  // int32 [n_seq][stride], host-visible: a batched pass's segment positions
    gpu::Buffer attn_stage;     // [n_batch + aligned slack per segment, widest attention row] (see make_batch_buffers)

    // Mixture of experts (a spec with expert layers).
    struct Moe {
        gpu::Buffer router_logits;  // [n_batch, n_expert]
        gpu::Buffer experts;        // int32 [n_batch, top_k]
        gpu::Buffer weights;        // [n_batch, top_k]
        gpu::Buffer sorted;         // int32, ops::moe_sort's layout
        gpu::Buffer gate, up;       // [n_batch * top_k, n_ff_expert]
        gpu::Buffer down;           // [n_batch * top_k, n_embd]
        gpu::Buffer input;          // [n_batch * top_k, n_embd] weighted expert inputs (Llama 4)
        gpu::Buffer ones;           // [n_batch * top_k] of 1: combine weights when the input carried them
    } moe;

    // Multi-head latent attention (a spec with MLA layers; shapes of its first MLA layer, which
    // every MLA layer of a model shares).
    struct Mla {
        gpu::Buffer qa;        // [n_batch, q_lora]
        gpu::Buffer q;         // [n_batch, n_head, nope + rope] (+ nope of slack for RoPE's window)
        gpu::Buffer qn;        // [n_batch * n_head, nope]
        gpu::Buffer qabs;      // [n_batch * n_head, kv_lora]
        gpu::Buffer out;       // [n_batch * n_head, v_head]
        gpu::Buffer head_ids;  // int32 [n_batch * n_head]: pair p's "expert" is its head, p % n_head
    } mla;

    // Outputs.
    gpu::Buffer logits;       // [n_logit_rows, n_vocab]
    gpu::Buffer logits_host;
    // uint32 [rows][2] (count, first index) of the checked read-backs (ops::copy_checked).
    gpu::Buffer logits_flags;  // [n_logit_rows]
    gpu::Buffer pool_weights;  // [n_batch] of 1/T (mean pooling's weighted row sum), encode
    gpu::Buffer embd_host;     // [n_batch, n_embd], encode
    gpu::Buffer embd_flags;    // [n_batch], encode

private:
    gpu::Context* ctx_ = nullptr;
    uint64_t n_batch_ = 0, n_embd_ = 0, seq_stride_ = 0;
};

}  // namespace vkllm::model
