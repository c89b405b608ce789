// A forward pass being recorded: the stream, the pass's shape, the session's buffers and state,
// and the recording steps the blocks share: the inputs of a group of matmuls (rounded as llama.cpp
// rounds them, or normalised inside decode's matvecs), a norm of the model's kind, a block's
// last projection with its residual add, and the checked read-back of results.
#pragma once

#include <cstdint>
#include <initializer_list>

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

    // Keys of a cache of `slots` slots that this pass, ending at position pos0 + n_tokens,
    // attends over (rounded up to kv_bucket).
    int keys_in_view(int slots) const;
    // Layer l's K and V caches as the cache ops take them: every slot, rows of the layer's
    // n_head_kv heads of head_dim (K) or of the value width (V).
    ops::KvView k_cache(int l) const;
    ops::KvView v_cache(int l) const;

    // Rounds x ([rows, n] at offset) once per rounding mode the weights need, with a barrier
    // after when anything was rounded, except where `at` leaves the rounding to a matvec that can
    // do it (types whose blocks of 32 a thread rounds alone: ops::matvec_rounds_activations).
    MatmulInputs prepare_inputs(const gpu::Buffer& x, uint64_t offset, int rows, int n,
                                std::initializer_list<const ops::Weight*> weights, RoundAt at = RoundAt::Matvec);
    // True when w's input (rows of n) must be rounded by a dispatch before w's matmul reads it.
    bool needs_rounding_dispatch(const ops::Weight& w, int rows, int n, RoundAt at) const;
    // The inputs of the matmuls after a norm of x (rows of n from element x_offset, weight
    // norm_w, bias norm_b): decode's RMSNorm (one row, no bias, no rounding dispatch) goes into
    // the matvecs themselves (ops::MatvecNorm) when the policy says so; otherwise the norm is
    // recorded into `out` (from element 0; it may be x itself) with a barrier (`why`) and the
    // inputs are out's.
    MatmulInputs normed_inputs(const gpu::Buffer& x, uint64_t x_offset, int rows, int n, const gpu::Buffer* norm_w,
                               const gpu::Buffer* norm_b, std::initializer_list<const ops::Weight*> weights,
                               const char* why, const gpu::Buffer& out);
    // y = norm(x) over rows of n (0: n_embd) with the model's norm kind (w, b may be null).
    void norm(const gpu::Buffer& x, uint64_t x_offset, const gpu::Buffer* w, const gpu::Buffer* b, const gpu::Buffer& y,
              uint64_t y_offset, int rows, int n = 0);
    // x += residual_scale * post_norm(W in + bias): a block's last projection and its residual
    // add (residual_scale: Granite's multiplier, the spec's, 1 for most models). probe_out:
    // also copies what the block adds to the residual stream (after bias and post-norm).
    // norm_after_add (BERT's post-norm): x = post_norm(x + W in + bias) with bias post_norm_b.
    void add_block_output(const ops::Weight& w, const gpu::Buffer& in, int n_in, const gpu::Buffer* bias,
                          const gpu::Buffer* post_norm, const gpu::Buffer* probe_out = nullptr,
                          const gpu::Buffer* post_norm_b = nullptr, bool norm_after_add = false);
    // Records the checked copy of src (f32 [rows, n], packed) into host memory dst (from its
    // start), its flags reset to "none" here (the stream is not yet submitted, no GPU work reads them).
    void read_back_checked(const ops::TensorView& src, const gpu::Buffer& dst, const gpu::Buffer& flags);
    // Sets `rows` rows of read-back flags (uint32 count, first index) to "none".
    static void reset_flags(const gpu::Buffer& flags, int rows);
};

}  // namespace vkllm::model
