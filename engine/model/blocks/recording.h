// A forward pass being recorded: the stream, the pass's shape, the session's buffers and state,
// and the recording steps the blocks share: the inputs of a group of matmuls (rounded as llama.cpp
// rounds them, or normalised inside decode's matvecs), a norm of the model's kind, a block's
// last projection with its residual add, and the checked read-back of results.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "model/blocks/matmul_inputs.h"
#include "model/kv_cache.h"
#include "model/probe_recorder.h"
#include "model/research/residual_edits.h"
#include "model/scratch.h"
#include "model/spec.h"
#include "model/weights.h"
#include "vkllm/probe.h"

namespace vkllm::gpu { class Context; }

namespace vkllm::model {

class ImatrixRecorder;

// One sequence's tokens in a pass: rows first..first + n_tokens - 1 of the pass's activations,
// at positions pos0.., attending over the keys and values of `kv`. A session's pass is one
// segment over its cache; a batched pass (Forward::step_batch) has one per sequence, and its
// rope, cache writes and attention run per segment while every matmul reads all the rows.
struct Segment {
    int first = 0, n_tokens = 0, pos0 = 0;
    const KvCache* kv = nullptr;
    // Its positions where attention binds them (an offset the storage alignment divides).
    const gpu::Buffer* q_pos = nullptr;
    uint64_t q_pos_first = 0;
};

struct Recording {
    gpu::Context& ctx;
    const ModelSpec& spec;
    const Weights& w;
    const ActivationPolicy& policy;
    Scratch& scratch;
    const KvCache& kv;
    const ProbeRecorder& probe;
    const ResidualEdits& edits;
    gpu::Stream& s;
    int n_ctx;
    int n_tokens;  // of this pass, at positions pos0..
    int pos0;
    bool all_logits;  // the output head projects every token (else the last)
    const ProbeConfig& probes;
    int kv_bucket = 1;  // keys in view round up to a multiple of this (a replayed recording)
    // A batched pass's sequences (null: one segment, the whole pass over `kv`).
    const std::vector<Segment>* batch = nullptr;
    // Importance-matrix collection (vkllm imatrix): prepare_inputs hands it every matmul input and
    // the expert blocks their routed inputs; null (inference) records nothing of it.
    ImatrixRecorder* imatrix = nullptr;

    // The pass's segments in row order.
    std::vector<Segment> segments() const;
    // Keys of a cache of `slots` slots that this pass, ending at position pos0 + n_tokens,
    // attends over (rounded up to kv_bucket); with a segment, that segment's end.
    int keys_in_view(int slots) const;
    int keys_in_view(const Segment& g, int slots) const;
    // Layer l's K and V caches as the cache ops take them: every slot, rows of the layer's
    // n_head_kv heads of head_dim (K) or of the value width (V); of `kv`, or of a segment's cache.
    ops::KvView k_cache(int l) const { return k_cache(l, kv); }
    ops::KvView v_cache(int l) const { return v_cache(l, kv); }
    ops::KvView k_cache(int l, const KvCache& cache) const;
    ops::KvView v_cache(int l, const KvCache& cache) const;

    // Rounds x (f32 [rows, n]) once per rounding mode the weights need, with a barrier after when
    // anything was rounded, except where `at` leaves the rounding to a matvec that can do it
    // (types whose blocks of 32 a thread rounds alone: ops::matvec_rounds_activations). With an
    // importance-matrix recorder, x (before rounding, as llama-imatrix sees it) is collected for
    // the weights too.
    MatmulInputs prepare_inputs(const ops::TensorView& x, std::initializer_list<const ops::Weight*> weights,
                                RoundAt at = RoundAt::Matvec);
    // True when w's input (rows of n) must be rounded by a dispatch before w's matmul reads it.
    bool needs_rounding_dispatch(const ops::Weight& w, int64_t rows, int64_t n, RoundAt at) const;
    // The inputs of the matmuls after a norm of x (f32 [rows, n], weight norm_w, bias norm_b):
    // decode's RMSNorm (one row, no bias, no rounding dispatch) goes into the matvecs themselves
    // (ops::MatvecNorm) when the policy says so and no importance matrix is collected; otherwise
    // the norm is recorded into `out` (x's shape; it may be x itself) with a barrier (`why`) and
    // the inputs are out's.
    MatmulInputs normed_inputs(const ops::TensorView& x, const gpu::Buffer* norm_w, const gpu::Buffer* norm_b,
                               std::initializer_list<const ops::Weight*> weights, const char* why,
                               const ops::TensorView& out);
    // y = norm(x) with the model's norm kind (w, b may be null); x and y f32 [rows, n].
    void norm(const ops::TensorView& x, const gpu::Buffer* w, const gpu::Buffer* b, const ops::TensorView& y);
    // The residual stream's first `rows` rows from row `first` (f32 [rows, n_embd] of scratch.x).
    ops::TensorView residual(int64_t rows, int64_t first = 0) const;
    // x += residual_scale * post_norm(W in + bias): a block's last projection and its residual
    // add (in: f32 [n_tokens, W's n_in]; residual_scale: Granite's multiplier, the spec's, 1 for
    // most models). probe_out: also copies what the block adds to the residual stream (after bias
    // and post-norm). norm_after_add (BERT's post-norm): x = post_norm(x + W in + bias) with bias
    // post_norm_b.
    void add_block_output(const ops::Weight& w, const ops::TensorView& in, const gpu::Buffer* bias,
                          const gpu::Buffer* post_norm, const gpu::Buffer* probe_out = nullptr,
                          const gpu::Buffer* post_norm_b = nullptr, bool norm_after_add = false);
    // Records the checked copy of src (f32 [rows, n], packed) into host memory dst (from its
    // start), its flags reset to "none" here (the stream is not yet submitted, no GPU work reads them).
    void read_back_checked(const ops::TensorView& src, const gpu::Buffer& dst, const gpu::Buffer& flags);
    // Sets `rows` rows of read-back flags (uint32 count, first index) to "none".
    static void reset_flags(const gpu::Buffer& flags, int rows);
};

}  // namespace vkllm::model
