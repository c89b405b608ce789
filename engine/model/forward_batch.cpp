// Forward::step_batch: several sequences in one pass (continuous batching, vkllm::BatchSession).
// The pass's rows are the segments' tokens one after another; the blocks record every matmul
// over all of them and rope, the cache writes and attention per segment (Recording::batch).
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "model/forward.h"

namespace vkllm::model {

namespace {
constexpr size_t F = sizeof(float);
}

std::string Forward::batch_unsupported(const ModelSpec& s) {
    const std::string arch = "architecture '" + s.arch + "': ";
    for (size_t l = 0; l < s.layers.size(); ++l) {
        const LayerSpec& L = s.layers[l];
        if (L.mixer != LayerMixer::Attention)
            return arch + "layer " + std::to_string(l) +
                   " keeps a recurrent state (state-space or RWKV mixing), which batched decoding does not "
                   "hold per sequence";
        if (!L.attn.causal) return arch + "an encoder (bidirectional attention) has no decoding to batch";
        if (L.attn.mla.kv_lora_rank > 0)
            return arch + "multi-head latent attention is not implemented in batched passes";
        if (L.attn.temperature_floor > 0)
            return arch + "attention temperature scaling by position (Llama 4) is not implemented in batched passes";
    }
    return {};
}

void Forward::write_batch_inputs(const int32_t* ids, const std::vector<SeqSegment>& segments) {
    int T = 0;
    for (const SeqSegment& g : segments) T += g.n_tokens;
    std::memcpy(scratch_.ids.mapped(), ids, size_t(T) * 4);
    auto* pos = static_cast<int32_t*>(scratch_.positions.mapped());
    auto* seq_pos = static_cast<int32_t*>(scratch_.seq_positions.mapped());
    const uint64_t stride = scratch_.seq_positions_stride();
    batch_segments_.clear();
    int first = 0;
    for (size_t i = 0; i < segments.size(); ++i) {
        const SeqSegment& g = segments[i];
        for (int t = 0; t < g.n_tokens; ++t) {
            pos[first + t] = g.pos0 + t;
            seq_pos[i * stride + size_t(t)] = g.pos0 + t;
        }
        KvCache& kv = seq_cache_mut(g.seq);
        kv.begin_pass(g.pos0, g.n_tokens);
        batch_segments_.push_back(Segment{first, g.n_tokens, g.pos0, &kv, &scratch_.seq_positions, i * stride});
        first += g.n_tokens;
    }
    probe_.begin_pass(T);
}

void Forward::record_batch_head(const std::vector<Segment>& segments) {
    gpu::Stream& s = *stream_;
    const uint64_t row = uint64_t(spec_.n_embd) * F;
    const int n = int(segments.size());
    // The output head reads rows 0..n-1 of the residual stream: each segment's last row is
    // gathered there through h (a copy within x could overwrite a row a later copy reads).
    bool gathered = true;
    for (int i = 0; i < n; ++i) gathered = gathered && segments[size_t(i)].first + segments[size_t(i)].n_tokens - 1 == i;
    if (!gathered) {
        s.set_layer(-1);
        for (int i = 0; i < n; ++i) {
            const Segment& g = segments[size_t(i)];
            s.copy(scratch_.x, uint64_t(g.first + g.n_tokens - 1) * row, scratch_.h, uint64_t(i) * row, row);
        }
        s.barrier("each segment's last residual row is in h before it is copied back to x");
        s.copy(scratch_.h, 0, scratch_.x, 0, uint64_t(n) * row);
        s.barrier("the gathered last rows are in x before the output head reads them");
    }
    static const ProbeConfig none;
    Recording head = recording(n, 0, /*all_logits=*/true, none);
    record_blocks(head, head_);
}

void Forward::step_batch(const int32_t* ids, const std::vector<SeqSegment>& segments, float* logits) {
    if (n_seq() < 2) throw std::logic_error("Forward::step_batch: made for one sequence");
    const int S = int(segments.size());
    if (S == 0 || S > n_seq() || S > n_logit_rows_) throw std::logic_error("Forward::step_batch: bad segment count");
    int T = 0;
    std::vector<bool> seen(size_t(n_seq()), false);
    for (const SeqSegment& g : segments) {
        if (g.seq < 0 || g.seq >= n_seq() || seen[size_t(g.seq)] || g.n_tokens <= 0 || g.pos0 < 0 ||
            g.pos0 + g.n_tokens > n_ctx_)
            throw std::logic_error("Forward::step_batch: bad segment");
        seen[size_t(g.seq)] = true;
        T += g.n_tokens;
    }
    if (T > n_batch_) throw std::logic_error("Forward::step_batch: more tokens than n_batch");
    static const ProbeConfig none;
    probe_.configure(none);
    write_batch_inputs(ids, segments);

    stream_ = &step_stream_;
    step_stream_.set_profiling(false);
    step_stream_.begin();
    Recording r = recording(T, 0, false, none);
    r.batch = &batch_segments_;
    record_blocks(r, body_);
    record_batch_head(batch_segments_);
    step_stream_.submit_and_wait();
    std::memcpy(logits, scratch_.logits_host.mapped(), size_t(S) * size_t(spec_.n_vocab) * F);
}

}  // namespace vkllm::model
