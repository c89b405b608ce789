// The forward pass's probes: the buffers a pass copies into inside its command buffer (the
// blocks record those copies through the calls below) and how the copies become ProbeResults
// after it. A long prompt runs in several passes: the results of an eval gather every pass.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "model/kv_cache.h"
#include "model/probe_state.h"
#include "model/spec.h"
#include "model/weights.h"
#include "ops/ops.h"
#include "vkllm/probe.h"

namespace vkllm::gpu { class Context; }

namespace vkllm::model {

class ProbeRecorder {
public:
    ProbeRecorder(gpu::Context& ctx, const ModelSpec& spec, const Weights& w, const KvCache& kv, int n_batch);

    // Before a pass: makes the buffers `probes` asks for and gives back those of probes turned
    // off. Throws std::invalid_argument for a layer out of range or attention_max_rows < 1.
    void configure(const ProbeConfig& probes);
    // The pass's tokens (attention keeps the newest of them).
    void begin_pass(int n_tokens) { attn_rows_ = std::min(n_tokens, attn_rows_cap_); }

    // Recording (probe_recorder.cpp). Attention probabilities of layer l: the buffer ops::attention
    // writes them to (null: layer l is not probed), and the copy of its newest rows to the host.
    const gpu::Buffer* attention_probs(int l) const;
    void copy_attention(gpu::Stream& s, int l, int n_tokens, int n_kv) const;
    // Attention summaries and single-head maps (ProbeConfig::attention_summary, attention_heads)
    // of layer l: its probabilities recomputed from q and the cache a block of query rows at a
    // time into one buffer of bounded size, reduced there (ops::attention_summary) and the asked
    // heads' rows copied to the host. Records nothing while neither probe is on.
    void summarize_attention(gpu::Stream& s, int l, int n_tokens, int n_kv, const gpu::Buffer& q,
                             const gpu::Buffer& positions, const ops::KvView& k, const ops::KvView& v,
                             const AttentionParams& p, const gpu::Buffer* sinks) const;
    // After the embeddings (l = -1) or layer l: the residual stream's copies (all rows, or the
    // newest row for the logit lens).
    void copy_residual(gpu::Stream& s, const gpu::Buffer& x, int l, int n_tokens, const ProbeConfig& probes) const;
    // Each token's experts (int32 [n_tokens, top_k]) and weights of MoE layer l (routing or
    // ffn_down probe on).
    void copy_routing(gpu::Stream& s, int l, const gpu::Buffer& experts, const gpu::Buffer& weights,
                      int n_tokens) const;
    // ffn_down's input and output rows of layer l (dense or shared expert; routed experts) and the
    // expert-load counts: host buffers the FFN blocks copy into while ProbeConfig::ffn_down /
    // expert_load are on.
    const gpu::Buffer& ffn_in(int l) const { return ffn_in_host_[size_t(l)]; }
    const gpu::Buffer& ffn_out(int l) const { return ffn_out_host_[size_t(l)]; }
    const gpu::Buffer& moe_in(int l) const { return moe_in_host_[size_t(l)]; }
    const gpu::Buffer& moe_out(int l) const { return moe_out_host_[size_t(l)]; }
    const gpu::Buffer& expert_load(int l) const { return expert_load_[size_t(l)]; }
    // The logit lens: its layers, and the buffers its rows go through. A pass of T tokens
    // projects its newest lens_rows(T) rows after each lens layer, lens layer i's at rows
    // i * lens_rows(T).. of x and h, one layer at a time through logits into top.
    struct Lens {
        gpu::Buffer x, h;     // [n_lens * cols, n_embd]: the rows after the lens layers, normalised
        gpu::Buffer logits;   // [cols, n_vocab]: one lens layer's logits, then probabilities
        gpu::Buffer ids;      // int32 [max(n_vocab, cols)]: 0, 1, 2, ... (ops::lens_top_k)
        gpu::Buffer top, host;  // int32 [n_lens * cols, 2 k]: (probability bits, id) pairs
        int cols = 0;         // rows per lens layer and pass: min(logit_lens_positions, n_batch)
        int k = 0;            // logit_lens_top_n
    };
    const std::vector<int>& lens_layers() const { return lens_layers_; }
    const Lens& lens() const { return lens_; }
    int lens_rows(int n_tokens) const { return std::min(lens_.cols, n_tokens); }
    // The state probes of recurrent layers: the taps their blocks call before the scan.
    const StateProbeRecorder& state() const { return state_; }

    // After the pass (probe_reads.cpp): its copies into results. first_pass starts a new eval;
    // s is the stream the pass ran on (its counts and timings).
    void read(int n_tokens, int pos0, const ProbeConfig& probes, ProbeResults* results, bool first_pass,
              const gpu::Stream& s);

    void set_token_text(std::function<std::string(int32_t)> piece) { token_text_ = std::move(piece); }
    // Bytes of the probe buffers on the GPU and in host memory (0 while every probe is off).
    uint64_t bytes() const;
    // The expert-load counters, made with the model for every MoE layer (counted as scratch).
    uint64_t expert_load_bytes() const;

private:
    bool residual_copied(int l, const ProbeConfig& probes) const;  // l = -1..n_layer-1
    void read_attention(int n_tokens, int pos0, const ProbeConfig& probes, ProbeResults* results, bool first_pass);
    void read_residual(int n_tokens, int pos0, const ProbeConfig& probes, ProbeResults* results, bool first_pass);
    void read_head_maps(int n_tokens, int pos0, const ProbeConfig& probes, ProbeResults* results);
    void read_summary(int n_tokens, ProbeResults* results, bool first_pass);
    // Top keys and thumbnails (probe_detail.cpp): the buffers, the dispatch of each block of
    // query rows, the copies after a layer and the read after a pass.
    void configure_detail(const ProbeConfig& probes);
    bool detail() const { return top_k_ > 0 || cells_ > 0; }
    void begin_detail(gpu::Stream& s, int l, int n_head, const gpu::Buffer& positions, int n_tokens) const;
    void record_detail(gpu::Stream& s, int l, int c0, int n, int n_kv, int n_head) const;
    void copy_detail(gpu::Stream& s, int l, int n_tokens, int n_head) const;
    void read_detail(int n_tokens, int pos0, ProbeResults* results, bool first_pass);
    uint64_t detail_host_bytes(const ProbeConfig& probes, uint64_t keys) const;
    // Host bytes the probes may copy and keep over one eval (ProbeConfig::max_bytes).
    uint64_t host_bytes(const ProbeConfig& probes) const;
    void read_ffn_down(int n_tokens, int pos0, ProbeResults* results);
    void read_routing(int n_tokens, int pos0, ProbeResults* results, bool first_pass);
    void read_logit_lens(int n_tokens, int pos0, const ProbeConfig& probes, ProbeResults* results, bool first_pass);
    void configure_lens(const ProbeConfig& probes);

    gpu::Context& ctx_;
    const ModelSpec& spec_;
    const Weights& w_;
    const KvCache& kv_;
    int n_batch_;

    std::vector<int> probed_layers_;
    int attn_rows_cap_ = 0;                // query rows kept per pass: min(n_batch, attention_max_rows)
    int attn_rows_ = 0;                    // of this pass
    std::vector<gpu::Buffer> probs_;       // per probed layer: [n_batch, n_head, slots] (+ [n_batch, n_head] sinks)
    std::vector<gpu::Buffer> probs_host_;  // per probed layer: the newest rows: [rows_cap, n_head, slots] (+ sinks)
    // Attention summaries and single-head maps: blocks of sum_rows_ query rows.
    bool summary_ = false;
    std::vector<AttentionHead> heads_;
    int sum_rows_ = 0, max_head_ = 0;
    gpu::Buffer sum_pos_;    // int32 [sum_rows_]: the block's positions
    gpu::Buffer sum_out_;    // [sum_rows_, n_head, head_dim_v]: attention's output (unused)
    gpu::Buffer sum_probs_;  // [sum_rows_, n_head, slots] (+ sinks [sum_rows_, n_head])
    gpu::Buffer stats_, stats_host_;      // [n_layer, n_batch, max_head_, 4] (ops::attention_summary)
    std::vector<gpu::Buffer> head_host_;  // per head map: [rows_cap, slots] then sinks [rows_cap]
    mutable std::vector<char> summarized_;  // per layer: the recording summarizes it
    struct HeadSums {
        double entropy = 0, sink_mass = 0, mean_distance = 0, max_prob = 0;
        int rows = 0;
    };
    std::vector<std::vector<HeadSums>> sums_;  // [layer][head] over the eval
    // Top keys and thumbnails (ProbeConfig::attention_top_k, attention_thumbnail).
    int top_k_ = 0, cells_ = 0;
    gpu::Buffer top_, top_host_;      // int32 [n_layer, n_batch, max_head_, top_k_, 2] (ops::attention_detail)
    gpu::Buffer thumb_, thumb_host_;  // int32 [n_layer, max_head_, cells_, cells_]: float bits
    mutable std::vector<char> detailed_;  // per layer: the recording computes its detail
    mutable int thumb_cell_ = 1;          // the pass's thumbnail cell (positions)
    mutable int thumb_row0_ = 0;          // and the cell of its first position
    // A layer's thumbnails over the eval so far: [n_head][cells_][cells_] at `cell` positions
    // per cell, row 0 the cell of query position `first` (the eval's first).
    struct ThumbAcc {
        int cell = 0, first = 0, newest = 0;
        std::vector<float> v;
    };
    std::vector<ThumbAcc> thumb_acc_;
    gpu::Buffer residual_host_;            // [n_layer + 1, n_batch, n_embd]
    std::vector<std::vector<float>> residual_acc_;  // [n_layer + 1][eval tokens * n_embd] (residual_stats)
    std::vector<gpu::Buffer> ffn_in_host_, ffn_out_host_;  // per layer: dense or shared expert [n_batch, n_ff], [n_batch, n_embd]
    std::vector<gpu::Buffer> moe_in_host_, moe_out_host_;  // per MoE layer: [pairs, n_ff_expert], [pairs, n_embd]
    std::vector<gpu::Buffer> routing_host_;               // per MoE layer: int32 experts [pairs], float weights [pairs]
    std::vector<gpu::Buffer> expert_load_;                // per layer, host [n_expert, 2] (MoE layers)
public:
    // |x| counted in bins of 1/1024 of an octave between 2^-24 and 2^24 (below: one bin read as
    // 0; above: one bin read as 2^24); an octave's 1024 counts are made when a value first falls
    // in it. The median it gives is within 2^-11 of the exact one, relatively.
    struct AbsHistogram {
        static constexpr int kMinExp = -24, kOctaves = 48, kBins = 1024;
        std::vector<std::vector<uint32_t>> octaves;  // [kOctaves] each empty or [kBins]
        uint64_t under = 0, over = 0, n = 0;
        void add(float v);
        float median() const;  // the |x| of rank n / 2 (0-based, in increasing order)
        uint64_t bytes() const;
        static uint64_t max_bytes() { return uint64_t(kOctaves) * kBins * 4 + kOctaves * 24 + 64; }
    };

private:
    // ffn_down's inputs and outputs over the eval, per layer and expert (-1: dense or shared),
    // summarised as they arrive: the largest |x| with its position and channel (the first in
    // position, then channel order on ties) and a histogram of |x| for the median. No token's
    // rows are kept past its pass.
    struct DownSummary {
        float in_max = -1, out_max = -1;
        int in_pos = 0, in_channel = 0, out_pos = 0, out_channel = 0;
        AbsHistogram in, out;
        void add(const float* in_row, int n_in, const float* out_row, int n_out, int pos);
    };
    std::vector<std::map<int, DownSummary>> down_acc_;
    std::vector<int> lens_layers_;
    Lens lens_;
    // The eval's lens columns so far (at most logit_lens_positions, the newest): a position and
    // its cells, [n_lens][k].
    struct LensColumn {
        int position = 0;
        std::vector<LensToken> cells;
    };
    std::vector<LensColumn> lens_acc_;
    StateProbeRecorder state_;
    std::function<std::string(int32_t)> token_text_;
    int eval_tokens_ = 0;  // tokens of the current eval so far
};

}  // namespace vkllm::model
