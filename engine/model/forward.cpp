#include "model/forward.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "gpu/device.h"
#include "model/blocks/embedding.h"
#include "model/blocks/layer_blocks.h"
#include "model/blocks/logit_lens.h"
#include "model/blocks/output_head.h"
#include "model/blocks/residual_tap.h"
#include "model/imatrix_recorder.h"

namespace vkllm::model {

namespace {

constexpr size_t F = sizeof(float);

// Features of the spec this forward does not implement: refuse them up front rather than
// compute something wrong.
void check_supported(const ModelSpec& s) {
    for (const LayerSpec& L : s.layers) {
        if (L.ffn.gated && L.ffn.activation == Activation::ReluSqr)
            throw ModelError("architecture '" + s.arch + "': a gated relu-squared FFN is not implemented yet");
        if (L.ffn.gated && L.ffn.activation == Activation::GeluErf)
            throw ModelError("architecture '" + s.arch + "': GEGLU with exact GELU is not implemented yet");
        if (!L.ffn.gated && L.ffn.activation == Activation::SiLU)
            throw ModelError("architecture '" + s.arch + "': an ungated SiLU FFN is not implemented yet");
        if (L.parallel && (L.mixer != LayerMixer::Attention || L.attn.mla.kv_lora_rank > 0 || !L.has_ffn ||
                           L.ffn.moe.n_expert > 0 || L.norm_placement != NormPlacement::Pre))
            throw ModelError("architecture '" + s.arch +
                             "': a parallel block is implemented for pre-norm attention and a dense FFN only");
    }
}

}  // namespace

Forward::Forward(gpu::Context& ctx, const ModelSpec& spec, const Weights& weights, int n_ctx, int n_batch,
                 bool round_activations, KvCacheType kv_cache, int n_seq)
    : ctx_(ctx), spec_(spec), w_(weights), n_ctx_(n_ctx),
      // The asked batch within the context, then within what one binding of activations holds;
      // logits of many tokens are only needed by `vkllm logits` and have their own limit.
      n_batch_(Scratch::fit_batch(ctx, spec, std::max(1, std::min(n_batch, n_ctx)))),
      n_logit_rows_(Scratch::logit_rows(ctx, spec, std::max(1, std::min(n_batch, n_ctx)))), step_stream_(ctx),
      replay_stream_(ctx), probe_(ctx, spec, weights, kv_, n_batch_), edits_(ctx, spec.n_layer, spec.n_embd) {
    check_supported(spec);
    policy_ = ActivationPolicy::for_device(ctx, round_activations);
    const KvCacheType cache_type = KvCache::choose_type(ctx, spec, kv_cache);

    if (spec.learned_positions && n_ctx > weights.position_embd.n_out)
        throw ModelError("a context of " + std::to_string(n_ctx) + " tokens exceeds the " +
                         std::to_string(weights.position_embd.n_out) + " learned positions of this model; use -c " +
                         std::to_string(weights.position_embd.n_out) + " or less");
    kv_ = KvCache(ctx, spec, n_ctx, n_batch_, cache_type);
    if (n_seq < 1) throw std::invalid_argument("a forward pass needs at least one sequence, got " + std::to_string(n_seq));
    if (n_seq > 1) {
        const std::string why = batch_unsupported(spec);
        if (!why.empty()) throw ModelError(why);
        for (int i = 1; i < n_seq; ++i) more_kv_.emplace_back(ctx, spec, n_ctx, n_batch_, cache_type);
    }
    recurrent_ = RecurrentState(ctx, spec, n_batch_);
    snapshots_ = StateSnapshots(ctx, recurrent_);
    scratch_ = Scratch(ctx, spec, n_ctx, n_batch_, n_logit_rows_, policy_.round);
    if (n_seq > 1) {
        // Attention output rows that an aligned offset may not divide go through staging.
        const uint64_t align = std::max<uint64_t>(ctx.caps().min_storage_buffer_offset_alignment, 4);
        uint64_t stage_row = 0;
        for (const LayerSpec& L : spec.layers) {
            const uint64_t row = uint64_t(L.attn.n_head) * uint64_t(L.attn.value_dim()) * F;
            if (L.mixer == LayerMixer::Attention && row % align) stage_row = std::max(stage_row, row);
        }
        scratch_.make_batch_buffers(n_seq, stage_row);
    }

    // The step as blocks: the embeddings, each layer's blocks as its spec gives them, a residual
    // tap (edits, probe copies) after the embeddings and after every layer; then the head.
    body_.push_back({-1, std::make_unique<EmbeddingBlock>()});
    body_.push_back({-1, std::make_unique<ResidualTap>(-1)});
    for (int l = 0; l < spec.n_layer; ++l) {
        for (BlockKind kind : layer_block_kinds(spec.layers[size_t(l)])) body_.push_back({l, make_block(kind, l, spec, weights, recurrent_)});
        body_.push_back({l, std::make_unique<ResidualTap>(l)});
    }
    head_.push_back({-1, std::make_unique<LogitLensBlock>()});
    head_.push_back({-1, std::make_unique<OutputHeadBlock>()});
}

uint64_t Forward::scratch_bytes() const {
    // The caches' slot positions, the expert-load counters and the edits are small buffers made
    // with the session: counted here with the scratch.
    return scratch_.bytes() + kv_.slot_positions_bytes() + probe_.expert_load_bytes() + edits_.bytes() +
           recurrent_.work_bytes();
}

int Forward::restore_state(int n) {
    const int p = snapshots_.newest_at_or_below(n);
    // Global layers keep every position; a sliding-window ring must still hold the window
    // before p that the re-evaluated positions attend to.
    if (p == 0 || !kv_.truncate(p)) return 0;
    snapshots_.restore(p, recurrent_);
    return p;
}

Forward::NonFinite Forward::logits_nonfinite(int row) const {
    if (row < 0 || row >= n_logit_rows_) throw std::logic_error("Forward::logits_nonfinite: bad row");
    const auto* f = static_cast<const uint32_t*>(scratch_.logits_flags.mapped());
    return {f[2 * row], f[2 * row + 1]};
}

Forward::NonFinite Forward::embeddings_nonfinite(int row) const {
    if (row < 0 || row >= n_batch_ || !scratch_.embd_flags.valid())
        throw std::logic_error("Forward::embeddings_nonfinite: bad row");
    const auto* f = static_cast<const uint32_t*>(scratch_.embd_flags.mapped());
    return {f[2 * row], f[2 * row + 1]};
}

bool Forward::replayable(int n_tokens, bool all_logits, const ProbeConfig& probes) const {
    if (!replay_ || imatrix_ || n_tokens != 1 || all_logits || probes.any() || !edits_.empty()) return false;
    // Llama 4's NoPE layers scale q by a factor of the position, recorded as a constant.
    for (const LayerSpec& L : spec_.layers)
        if (L.attn.temperature_floor > 0) return false;
    return true;
}

void Forward::write_step_inputs(const int32_t* ids, int T, int pos0) {
    std::memcpy(scratch_.ids.mapped(), ids, size_t(T) * 4);
    auto* pos = static_cast<int32_t*>(scratch_.positions.mapped());
    for (int i = 0; i < T; ++i) pos[i] = pos0 + i;
    if (pos0 == 0) {
        reset_edit_state();
        snapshots_.clear();  // a new sequence: no earlier copy is of its tokens
    }
    kv_.begin_pass(pos0, T);
    recurrent_.begin_pass(pos0, T);
    probe_.begin_pass(T);
}

Recording Forward::recording(int T, int pos0, bool all_logits, const ProbeConfig& probes) {
    Recording r{ctx_, spec_, w_, policy_, scratch_, kv_, probe_, edits_, *stream_, n_ctx_, T, pos0, all_logits,
                probes, kv_bucket_};
    r.imatrix = imatrix_;
    if (imatrix_) imatrix_->begin_pass();
    return r;
}

void Forward::record_blocks(Recording& r, const std::vector<PlacedBlock>& blocks) {
    for (const PlacedBlock& b : blocks) {
        r.s.set_layer(b.layer);
        b.block->record(r);
    }
}

void Forward::record_step(int T, int pos0, bool all_logits, const ProbeConfig& probes) {
    Recording r = recording(T, pos0, all_logits, probes);
    record_blocks(r, body_);
    record_blocks(r, head_);
}

void Forward::step(const int32_t* ids, int n_tokens, int pos0, bool all_logits, float* logits,
                   const ProbeConfig& probes, ProbeResults* results, bool first_pass) {
    if (n_tokens <= 0 || n_tokens > max_tokens(all_logits) || pos0 < 0 || pos0 + n_tokens > n_ctx_)
        throw std::logic_error("Forward::step: bad token range");
    probe_.configure(probes);
    const int T = n_tokens;
    write_step_inputs(ids, T, pos0);
    const int rows = all_logits ? T : 1;

    if (replayable(T, all_logits, probes)) {
        // Same recording for every position whose keys in view round to the same count.
        const int key = std::min((pos0 + 1 + kReplayKeys - 1) / kReplayKeys * kReplayKeys, n_ctx_);
        stream_ = &replay_stream_;
        if (key == replay_key_) {
            Recording::reset_flags(scratch_.logits_flags, rows);
            replay_stream_.resubmit_and_wait();
            ++replayed_steps_;
        } else {
            replay_key_ = -1;  // a failed recording leaves no stale key behind
            replay_stream_.set_profiling(false);
            replay_stream_.begin(/*reusable=*/true);
            kv_bucket_ = kReplayKeys;
            try {
                record_step(T, pos0, all_logits, probes);
            } catch (...) {
                kv_bucket_ = 1;
                throw;
            }
            kv_bucket_ = 1;
            replay_stream_.submit_and_wait();
            replay_key_ = key;
        }
    } else {
        stream_ = &step_stream_;
        step_stream_.set_profiling(probes.timings);
        step_stream_.begin();
        record_step(T, pos0, all_logits, probes);
        step_stream_.submit_and_wait();
    }

    std::memcpy(logits, scratch_.logits_host.mapped(), size_t(rows) * size_t(spec_.n_vocab) * F);
    if (results) probe_.read(T, pos0, probes, results, first_pass, *stream_);
}

}  // namespace vkllm::model
