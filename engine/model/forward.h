// The one forward pass of a session: records a step as a list of blocks (the embeddings, each
// layer's blocks as the spec's layer kinds give them, the output head; model/blocks) into one
// command buffer, submits it (or replays the last decode recording) and reads the results.
// Owns the session's state: the KV cache, the scratch buffers, the probes and residual edits.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "model/blocks/block.h"
#include "model/blocks/matmul_inputs.h"
#include "model/blocks/recording.h"
#include "model/kv_cache.h"
#include "model/probe_recorder.h"
#include "model/recurrent_state.h"
#include "model/research/residual_edits.h"
#include "model/scratch.h"
#include "model/spec.h"
#include "model/state_snapshots.h"
#include "model/weights.h"
#include "vkllm/probe.h"
#include "vkllm/session.h"

namespace vkllm::gpu { class Context; }

namespace vkllm::model {

class Forward {
public:
    // n_batch: most tokens per step. round_activations: quantised matmuls read activations
    // rounded as llama.cpp's CPU backend rounds them (ops::activation_rounding), for parity.
    // Throws ModelError for spec features not implemented.
    // kv_cache: the caches' element type; Auto is F16 where the device has 16-bit storage.
    // n_seq: sequences with a cache each (step_batch); step() and everything else use sequence 0's.
    Forward(gpu::Context& ctx, const ModelSpec& spec, const Weights& weights, int n_ctx, int n_batch,
            bool round_activations = true, KvCacheType kv_cache = KvCacheType::Auto, int n_seq = 1);

    // Runs tokens ids[0..n_tokens) at positions pos0.. (n_tokens <= max_tokens(all_logits)),
    // writing their K/V into the cache. logits: [n_tokens, n_vocab] when all_logits, else the
    // last token's [n_vocab]. results (may be null) receives the probes of the eval this pass
    // belongs to: first_pass starts a new eval (its results replace the previous eval's); later
    // passes of the same eval add their rows, tokens, timings and counts to them. Dispatch and
    // barrier counts are filled whenever results is given, with or without probes.
    void step(const int32_t* ids, int n_tokens, int pos0, bool all_logits, float* logits, const ProbeConfig& probes,
              ProbeResults* results, bool first_pass = true);

    // Several sequences in one pass (vkllm::BatchSession): segment i runs its n_tokens tokens
    // (ids concatenated in segment order) at positions pos0.. of sequence `seq`'s cache. Every
    // matmul reads the rows of all segments at once (the weights are read once); rope, the cache
    // writes and attention run per segment over its own cache. logits: [segments, n_vocab], each
    // segment's last token. No probes, residual edits or replay. At most n_seq segments of
    // distinct sequences and n_batch tokens in all; throws ModelError when the spec cannot run
    // batched (batch_unsupported).
    struct SeqSegment {
        int seq = 0, pos0 = 0, n_tokens = 0;
    };
    void step_batch(const int32_t* ids, const std::vector<SeqSegment>& segments, float* logits);
    // Why this spec cannot run batched passes (empty when it can).
    static std::string batch_unsupported(const ModelSpec& spec);
    int n_seq() const { return 1 + int(more_kv_.size()); }
    const KvCache& seq_cache(int seq) const { return seq == 0 ? kv_ : more_kv_.at(size_t(seq - 1)); }
    // truncate() of one sequence's cache (attention-only specs: no recurrent state).
    bool truncate_seq(int seq, int n) { return seq_cache_mut(seq).truncate(n); }

    // Residual-stream edits applied by every following step (see vkllm::ResidualEdit); also
    // resets the Mean edits' running sums. Throws std::invalid_argument for a layer outside
    // -1..n_layer-1 or a channel outside 0..n_embd-1.
    void set_residual_edits(const std::vector<ResidualEdit>& edits) { edits_.set(edits); }
    // Restarts the Mean edits' running means (the session truncated or reset its tokens; a step
    // at position 0 does it too).
    void reset_edit_state() { edits_.reset_state(); }
    // Importance-matrix collection (vkllm imatrix): every following pass hands its matmul inputs
    // to `recorder` (null: off, the default; inference then records nothing of it). The recorder
    // must outlive its use; decode replay is off while it is set.
    void set_imatrix(ImatrixRecorder* recorder) { imatrix_ = recorder; }
    // The text of a token id, for the logit lens (none: the lens leaves text empty).
    void set_token_text(std::function<std::string(int32_t)> piece) { probe_.set_token_text(std::move(piece)); }
    // Bytes of probe buffers on the GPU and in host memory (0 while every probe is off).
    uint64_t probe_bytes() const { return probe_.bytes(); }
    // Bytes of the scratch activations and step inputs/outputs (not KV caches, weights or probes).
    uint64_t scratch_bytes() const;

    // Forgets positions >= n in every KV cache (KvCache::truncate) and the state snapshots after
    // n. Returns false when a sliding-window ring no longer holds a position < n that a later
    // query can attend to (its slot was reused by a dropped position), or when the recurrent
    // state, which cannot forget, held more than n positions (RecurrentState::truncate): the
    // caller must then go back to a snapshot (restore_state) or re-evaluate from position 0.
    bool truncate(int n) {
        snapshots_.drop_after(n);
        const bool kv = kv_.truncate(n), recurrent = recurrent_.truncate(n);
        return kv && recurrent;
    }
    // Copies the recurrent state as it is now into the snapshot ring (StateSnapshots::take):
    // the session calls it where a later truncate may want to come back to.
    void snapshot_state() { snapshots_.take(recurrent_); }
    // After a truncate(n) that returned false: copies back the newest snapshot at or below n and
    // cuts the KV caches to its position p, so positions p..n are all that must be evaluated
    // again. Returns p, or 0 when no snapshot is usable (none is held, or a sliding-window ring
    // lost positions before p): the caller re-evaluates from position 0.
    int restore_state(int n);
    // The snapshot ring's buffers (none for attention-only models).
    uint64_t snapshot_bytes() const { return snapshots_.bytes(); }

    // Encoders (BERT, forward_encode.cpp): runs the whole text ids[0..n_tokens) in one pass from
    // position 0 (n_tokens <= n_batch(), every token attends to every other) and writes the
    // final hidden states pooled on the GPU: [n_tokens, n_embd] for Pooling::None, else
    // [1, n_embd] (mean of the rows, the first row (CLS) or the last). With logits (may be
    // null): also every token's [n_tokens, n_vocab] through the output projection (fill-mask;
    // n_tokens <= max_tokens(true)). Probes as in step().
    void encode(const int32_t* ids, int n_tokens, Pooling pooling, float* embeddings, float* logits,
                const ProbeConfig& probes, ProbeResults* results);

    // Dispatches, barriers and transfer commands the last step() recorded, by layer (index
    // layer + 1; 0: the embeddings and the output head). Pinned by tests/model/test_dispatch_counts.
    const std::vector<gpu::Stream::Counts>& step_counts() const { return stream_->layer_counts(); }

    // Decode replay: a step of one token that returns only its logits (no probes, timings or
    // residual edits) is recorded once and the command buffer submitted again for the next
    // steps; what changes per token lives in host-visible buffers written before the submit
    // (token id, position, each cache's slot positions) and the KV-cache writes take their slot
    // from the positions buffer. Attention's keys in view round up to a multiple of
    // kReplayKeys (the extra slots are empty or masked, so the result is the same), so one
    // recording serves kReplayKeys positions. On by default; off records every step.
    static constexpr int kReplayKeys = 64;
    void set_replay(bool on) { replay_ = on; }
    uint64_t replayed_steps() const { return replayed_steps_; }  // steps submitted without recording

    // Non-finite values in the rows the last step() or encode() read back, counted on the GPU
    // by the read-back itself (ops::copy_checked), per row: how many, and the first one's index.
    // Logits rows as step() returned them (all_logits: row t is token t; else row 0 the last
    // token's); embeddings rows as encode() returned them.
    struct NonFinite {
        uint32_t count = 0, first = 0;
    };
    NonFinite logits_nonfinite(int row) const;
    NonFinite embeddings_nonfinite(int row) const;

    int max_tokens(bool all_logits) const { return all_logits ? n_logit_rows_ : n_batch_; }
    int n_ctx() const { return n_ctx_; }
    int n_batch() const { return n_batch_; }  // tokens per forward pass (the asked batch, clamped to the context and buffer limits)
    uint64_t kv_bytes() const { return kv_.bytes(); }
    using KvUsage = KvCache::Usage;
    KvUsage kv_usage() const { return kv_.usage(); }
    KvCacheType cache_type() const { return kv_.type(); }
    const KvCache& kv_cache() const { return kv_; }
    // The state-space layers' conv and SSM states (none for attention-only models).
    const RecurrentState& recurrent_state() const { return recurrent_; }
    uint64_t recurrent_bytes() const { return recurrent_.bytes(); }

private:
    // A block and the layer it belongs to (-1: outside the layers), for the per-layer counts.
    struct PlacedBlock {
        int layer;
        std::unique_ptr<Block> block;
    };
    // The recording of one pass of n_tokens from pos0 into *stream_.
    Recording recording(int n_tokens, int pos0, bool all_logits, const ProbeConfig& probes);
    // Records blocks in order, telling the stream each one's layer.
    void record_blocks(Recording& r, const std::vector<PlacedBlock>& blocks);
    // Records the whole step (body_, then head_) into *stream_.
    void record_step(int n_tokens, int pos0, bool all_logits, const ProbeConfig& probes);
    bool replayable(int n_tokens, bool all_logits, const ProbeConfig& probes) const;
    // Writes a pass's host-visible inputs (ids, positions, the caches' slot positions) and starts
    // the pass in the edits (position 0: a new sequence) and the probes.
    void write_step_inputs(const int32_t* ids, int n_tokens, int pos0);

    KvCache& seq_cache_mut(int seq) { return seq == 0 ? kv_ : more_kv_.at(size_t(seq - 1)); }
    // A batched pass's host-visible inputs: ids, each token's position, each segment's positions
    // at its aligned offset, the caches' slot positions; fills batch_segments_.
    void write_batch_inputs(const int32_t* ids, const std::vector<SeqSegment>& segments);
    // Records the output head over each segment's last row (gathered into rows 0..n-1 first).
    void record_batch_head(const std::vector<Segment>& segments);

    gpu::Context& ctx_;
    const ModelSpec& spec_;
    const Weights& w_;
    int n_ctx_, n_batch_, n_logit_rows_;
    ActivationPolicy policy_;
    gpu::Stream step_stream_;               // recordings used once (prefill, probes, encode)
    gpu::Stream replay_stream_;             // the decode step, recorded once per replay_key_
    gpu::Stream* stream_ = &step_stream_;   // the stream being recorded, or submitted last
    bool replay_ = true;
    int replay_key_ = -1;                   // keys in view the replay recording was made for (-1: none)
    int kv_bucket_ = 1;                     // keys in view round up to a multiple of this while recording
    uint64_t replayed_steps_ = 0;

    KvCache kv_;                     // sequence 0's (the session's)
    std::vector<KvCache> more_kv_;   // sequences 1..n_seq-1 (step_batch)
    std::vector<Segment> batch_segments_;  // the batched pass being recorded
    RecurrentState recurrent_;  // state-space layers' states, beside the KV cache
    StateSnapshots snapshots_;  // copies of recurrent_ at earlier positions
    Scratch scratch_;  // the step's inputs, activations, layer kinds' scratch and outputs
    ProbeRecorder probe_;
    ResidualEdits edits_;
    ImatrixRecorder* imatrix_ = nullptr;
    std::vector<PlacedBlock> body_;  // the embeddings, then each layer's blocks, each followed by its residual tap
    std::vector<PlacedBlock> head_;  // a decoder step's end: the logit lens, the output head
};

}  // namespace vkllm::model
