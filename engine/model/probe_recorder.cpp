// The probes' buffers and the copies a pass records into them.
#include "model/probe_recorder.h"

#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "gpu/device.h"
#include "ops/probe_ops.h"

namespace vkllm::model {
namespace {

constexpr uint64_t F = sizeof(float);

void check_layers(const std::vector<int>& layers, int lo, int n_layer, const char* what) {
    for (int l : layers)
        if (l < lo || l >= n_layer)
            throw std::invalid_argument(std::string(what) + " layer " + std::to_string(l) + " is outside " +
                                        std::to_string(lo) + ".." + std::to_string(n_layer - 1));
}

bool contains(const std::vector<int>& v, int x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

ProbeRecorder::ProbeRecorder(gpu::Context& ctx, const ModelSpec& spec, const Weights& w, const KvCache& kv,
                             int n_batch)
    : ctx_(ctx), spec_(spec), w_(w), kv_(kv), n_batch_(n_batch), state_(ctx, spec, n_batch) {
    for (const LayerSpec& L : spec.layers) {
        expert_load_.emplace_back();
        if (L.ffn.moe.n_expert > 0)
            expert_load_.back() = gpu::Buffer(ctx, uint64_t(L.ffn.moe.n_expert) * 2 * F, gpu::Memory::Host);
    }
}

bool ProbeRecorder::residual_copied(int l, const ProbeConfig& probes) const {
    return probes.residual_stats || contains(probes.residual_full_layers, l);
}

void ProbeRecorder::configure(const ProbeConfig& probes) {
    check_layers(probes.attention_layers, 0, spec_.n_layer, "attention probe");
    check_layers(probes.residual_full_layers, -1, spec_.n_layer, "residual probe");
    check_layers(probes.logit_lens_layers, 0, spec_.n_layer, "logit lens");
    if (!probes.logit_lens_layers.empty()) {
        if (probes.logit_lens_top_n < 1 || probes.logit_lens_top_n > kMaxLensTopN)
            throw std::invalid_argument("logit lens: logit_lens_top_n must be 1.." + std::to_string(kMaxLensTopN) +
                                        ", got " + std::to_string(probes.logit_lens_top_n));
        if (probes.logit_lens_positions < 1)
            throw std::invalid_argument("logit lens: logit_lens_positions must be at least 1, got " +
                                        std::to_string(probes.logit_lens_positions));
    }
    if (!probes.attention_layers.empty() && probes.attention_max_rows < 1)
        throw std::invalid_argument("attention_max_rows must be at least 1");
    for (const AttentionHead& h : probes.attention_heads) {
        const std::string name = "attention head " + std::to_string(h.layer) + ":" + std::to_string(h.head);
        if (h.layer < 0 || h.layer >= spec_.n_layer)
            throw std::invalid_argument(name + ": layer is outside 0.." + std::to_string(spec_.n_layer - 1));
        const int n_head = spec_.layers[size_t(h.layer)].attn.n_head;
        if (n_head <= 0 || kv_.layer(h.layer).slots <= 0)
            throw std::invalid_argument(name + ": layer " + std::to_string(h.layer) + " has no attention");
        if (h.head < 0 || h.head >= n_head)
            throw std::invalid_argument(name + ": head is outside 0.." + std::to_string(n_head - 1));
        if (h.query_first < 0 || h.query_count < 0 || h.key_first < 0 || h.key_count < 0)
            throw std::invalid_argument(name + ": a tile's first positions and counts must be >= 0");
    }
    if ((!probes.attention_heads.empty()) && probes.attention_max_rows < 1)
        throw std::invalid_argument("attention_max_rows must be at least 1");
    state_.check(probes);
    if (const uint64_t need = host_bytes(probes); need > probes.max_bytes) {
        auto mib = [](uint64_t b) {
            char text[64];
            if (b < (uint64_t(1) << 20))
                std::snprintf(text, sizeof text, "%.1f KiB", double(b) / 1024);
            else
                std::snprintf(text, sizeof text, "%.1f MiB", double(b) / double(1 << 20));
            return std::string(text);
        };
        throw std::invalid_argument("the probes asked for could copy " + mib(need) + " to the host per eval, over " +
                                    "the budget of " + mib(probes.max_bytes) +
                                    " (ProbeConfig::max_bytes): probe fewer attention layers (single heads, "
                                    "attention_heads, or the attention summary), fewer rows (attention_max_rows) "
                                    "or a smaller tile, fewer state maps (state_map_positions), turn off "
                                    "ffn_down, or raise the budget");
    }
    state_.configure(probes);
    const int rows_cap = std::min(n_batch_, std::max(probes.attention_max_rows, 1));
    if (probes.attention_layers != probed_layers_ || rows_cap != attn_rows_cap_) {
        head_host_.clear();
        heads_.clear();
        probs_.clear();
        probs_host_.clear();
        probed_layers_ = probes.attention_layers;
        attn_rows_cap_ = rows_cap;
        for (int l : probed_layers_) {
            const uint64_t heads = uint64_t(spec_.layers[size_t(l)].attn.n_head);
            const uint64_t slots = uint64_t(kv_.layer(l).slots);
            // Rows, then (with sinks) the sink's probability of every row.
            const uint64_t sink = w_.layers[size_t(l)].sinks ? 1 : 0;
            probs_.emplace_back(ctx_, uint64_t(n_batch_) * heads * (slots + sink) * F, gpu::Memory::Device);
            probs_host_.emplace_back(ctx_, uint64_t(rows_cap) * heads * (slots + sink) * F, gpu::Memory::Host);
        }
    }
    const uint64_t B = uint64_t(n_batch_), E = uint64_t(spec_.n_embd);
    // Attention summaries and single-head maps share a block buffer of at most kBlockBytes.
    const bool summarize = probes.attention_summary || !probes.attention_heads.empty() ||
                           probes.attention_top_k > 0 || probes.attention_thumbnail > 0;
    if (!summarize) {
        sum_pos_ = gpu::Buffer();
        sum_out_ = gpu::Buffer();
        sum_probs_ = gpu::Buffer();
        sum_rows_ = 0;
    } else if (!sum_probs_.valid()) {
        uint64_t row_probs = 0, row_out = 0;
        max_head_ = 0;
        for (int l = 0; l < spec_.n_layer; ++l) {
            const AttentionSpec& a = spec_.layers[size_t(l)].attn;
            if (a.n_head <= 0 || kv_.layer(l).slots <= 0) continue;
            max_head_ = std::max(max_head_, a.n_head);
            row_probs = std::max(row_probs, uint64_t(a.n_head) * (uint64_t(kv_.layer(l).slots) + 1));
            row_out = std::max(row_out, uint64_t(a.n_head) * uint64_t(a.head_dim_v > 0 ? a.head_dim_v : a.head_dim));
        }
        constexpr uint64_t kBlockBytes = uint64_t(32) << 20;
        const uint64_t cap = std::min<uint64_t>(kBlockBytes, ctx_.caps().max_storage_buffer_range);
        sum_rows_ = int(std::clamp<uint64_t>(cap / std::max<uint64_t>(row_probs * F, 1), 1, B));
        sum_pos_ = gpu::Buffer(ctx_, uint64_t(sum_rows_) * 4, gpu::Memory::Device);
        sum_out_ = gpu::Buffer(ctx_, std::max<uint64_t>(uint64_t(sum_rows_) * row_out * F, F), gpu::Memory::Device);
        sum_probs_ = gpu::Buffer(ctx_, std::max<uint64_t>(uint64_t(sum_rows_) * row_probs * F, F), gpu::Memory::Device);
    }
    summary_ = probes.attention_summary;
    configure_detail(probes);
    if (!summary_) {
        stats_ = gpu::Buffer();
        stats_host_ = gpu::Buffer();
    } else if (!stats_.valid()) {
        const uint64_t n = uint64_t(spec_.n_layer) * B * uint64_t(std::max(max_head_, 1)) * ops::kAttentionStats * F;
        stats_ = gpu::Buffer(ctx_, n, gpu::Memory::Device);
        stats_host_ = gpu::Buffer(ctx_, n, gpu::Memory::Host);
    }
    if (probes.attention_heads.size() != heads_.size() || rows_cap != attn_rows_cap_ ||
        !std::equal(heads_.begin(), heads_.end(), probes.attention_heads.begin(), [](auto& a, auto& b) {
            return a.layer == b.layer && a.head == b.head;
        })) {
        head_host_.clear();
        for (const AttentionHead& h : probes.attention_heads) {
            const uint64_t slots = uint64_t(kv_.layer(h.layer).slots);
            head_host_.emplace_back(ctx_, uint64_t(rows_cap) * (slots + 1) * F, gpu::Memory::Host);
        }
    }
    heads_ = probes.attention_heads;
    summarized_.assign(size_t(spec_.n_layer), 0);
    // A probe turned off gives its buffers back.
    const bool any_residual = probes.residual_stats || !probes.residual_full_layers.empty();
    if (!any_residual) residual_host_ = gpu::Buffer();
    if (!probes.ffn_down) {
        ffn_in_host_.clear();
        ffn_out_host_.clear();
        moe_in_host_.clear();
        moe_out_host_.clear();
    }
    if (!probes.routing && !probes.ffn_down) routing_host_.clear();
    if (any_residual && !residual_host_.valid())
        residual_host_ = gpu::Buffer(ctx_, uint64_t(spec_.n_layer + 1) * B * E * F, gpu::Memory::Host);
    const size_t L = size_t(spec_.n_layer);
    if (probes.ffn_down && ffn_in_host_.empty()) {
        ffn_in_host_.resize(L);
        ffn_out_host_.resize(L);
        moe_in_host_.resize(L);
        moe_out_host_.resize(L);
        for (size_t l = 0; l < L; ++l) {
            const FfnSpec& f = spec_.layers[l].ffn;
            const int n_ff = f.moe.n_expert > 0 ? f.moe.n_ff_shared : f.n_ff;
            if (n_ff > 0) {
                ffn_in_host_[l] = gpu::Buffer(ctx_, B * uint64_t(n_ff) * F, gpu::Memory::Host);
                ffn_out_host_[l] = gpu::Buffer(ctx_, B * E * F, gpu::Memory::Host);
            }
            if (f.moe.n_expert > 0) {
                const uint64_t pairs = B * uint64_t(f.moe.top_k);
                moe_in_host_[l] = gpu::Buffer(ctx_, pairs * uint64_t(f.moe.n_ff_expert) * F, gpu::Memory::Host);
                moe_out_host_[l] = gpu::Buffer(ctx_, pairs * E * F, gpu::Memory::Host);
            }
        }
    }
    if ((probes.routing || probes.ffn_down) && routing_host_.empty()) {
        routing_host_.resize(L);
        for (size_t l = 0; l < L; ++l) {
            const MoeSpec& m = spec_.layers[l].ffn.moe;
            if (m.n_expert > 0) routing_host_[l] = gpu::Buffer(ctx_, B * uint64_t(m.top_k) * 8, gpu::Memory::Host);
        }
    }
    configure_lens(probes);
}

void ProbeRecorder::configure_lens(const ProbeConfig& probes) {
    const int cols = probes.logit_lens_layers.empty() ? 0 : std::min(probes.logit_lens_positions, n_batch_);
    const int k = probes.logit_lens_layers.empty() ? 0 : probes.logit_lens_top_n;
    if (probes.logit_lens_layers == lens_layers_ && cols == lens_.cols && k == lens_.k) return;
    lens_layers_ = probes.logit_lens_layers;
    lens_ = Lens();
    if (lens_layers_.empty()) return;
    const uint64_t rows = lens_layers_.size() * uint64_t(cols), E = uint64_t(spec_.n_embd), V = uint64_t(spec_.n_vocab);
    lens_.cols = cols;
    lens_.k = k;
    lens_.x = gpu::Buffer(ctx_, rows * E * F, gpu::Memory::Device);
    lens_.h = gpu::Buffer(ctx_, rows * E * F, gpu::Memory::Device);
    lens_.logits = gpu::Buffer(ctx_, uint64_t(cols) * V * F, gpu::Memory::Device);
    std::vector<int32_t> ids(std::max<size_t>(V, size_t(cols)));
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t(i);
    lens_.ids = gpu::Buffer(ctx_, ids.size() * 4, gpu::Memory::Device);
    lens_.ids.upload(ids.data(), ids.size() * 4);
    lens_.top = gpu::Buffer(ctx_, rows * uint64_t(k) * 8, gpu::Memory::Device);
    lens_.host = gpu::Buffer(ctx_, rows * uint64_t(k) * 8, gpu::Memory::Host);
}

uint64_t ProbeRecorder::bytes() const {
    uint64_t n = residual_host_.size() + lens_.x.size() + lens_.h.size() + lens_.logits.size() + lens_.ids.size() +
                 lens_.top.size() + lens_.host.size();
    for (const LensColumn& c : lens_acc_) n += c.cells.size() * sizeof(LensToken);
    n += sum_pos_.size() + sum_out_.size() + sum_probs_.size() + stats_.size() + stats_host_.size();
    n += top_.size() + top_host_.size() + thumb_.size() + thumb_host_.size();
    for (const ThumbAcc& t : thumb_acc_) n += t.v.size() * F;
    for (const auto* v : {&probs_, &probs_host_, &head_host_, &ffn_in_host_, &ffn_out_host_, &moe_in_host_, &moe_out_host_,
                          &routing_host_})
        for (const gpu::Buffer& b : *v) n += b.size();
    for (const auto& layer : residual_acc_) n += layer.size() * F;
    for (const auto& layer : down_acc_)
        for (const auto& [e, d] : layer) n += sizeof(DownSummary) + d.in.bytes() + d.out.bytes();
    return n + state_.bytes();
}

// Counted at the largest key count of the cache (a map's key axis and an eval's rows are
// bounded by it).
uint64_t ProbeRecorder::host_bytes(const ProbeConfig& probes) const {
    uint64_t keys = 1;
    for (int l = 0; l < spec_.n_layer; ++l) keys = std::max(keys, uint64_t(kv_.layer(l).slots));
    const uint64_t B = uint64_t(n_batch_), E = uint64_t(spec_.n_embd);
    const uint64_t rows_cap = uint64_t(std::min(n_batch_, std::max(probes.attention_max_rows, 1)));
    const uint64_t kept = std::min(uint64_t(std::max(probes.attention_max_rows, 1)), keys);
    uint64_t n = 0;
    for (int l : probes.attention_layers) {
        if (l < 0 || l >= spec_.n_layer) continue;
        const uint64_t heads = uint64_t(std::max(spec_.layers[size_t(l)].attn.n_head, 0));
        const uint64_t slots = uint64_t(kv_.layer(l).slots);
        n += rows_cap * heads * (slots + 1) * F + kept * heads * (keys + 1) * F;
    }
    for (const AttentionHead& h : probes.attention_heads) {
        const uint64_t slots = uint64_t(kv_.layer(h.layer).slots);
        const uint64_t rows = h.query_count > 0 ? std::min(kept, uint64_t(h.query_count)) : kept;
        const uint64_t cols = h.key_count > 0 ? std::min(keys, uint64_t(h.key_count)) : keys;
        n += rows_cap * (slots + 1) * F + rows * (cols + 1) * F;
    }
    if (probes.attention_summary) {
        uint64_t heads = 0;
        for (const LayerSpec& L : spec_.layers) heads = std::max(heads, uint64_t(std::max(L.attn.n_head, 0)));
        n += uint64_t(spec_.n_layer) * B * heads * ops::kAttentionStats * F;
    }
    n += detail_host_bytes(probes, keys);
    n += state_.host_bytes(probes, std::max<uint64_t>(keys, B));
    if (probes.residual_stats || !probes.residual_full_layers.empty())
        n += uint64_t(spec_.n_layer + 1) * B * E * F;
    if (probes.residual_stats) n += uint64_t(spec_.n_layer + 1) * keys * E * F;
    n += uint64_t(probes.residual_full_layers.size()) * keys * E * F;
    if (!probes.logit_lens_layers.empty()) {
        // Each pass's (probability, id) pairs, then the eval's cells (a token's text counted at
        // 16 bytes beside its LensToken).
        const uint64_t lens = probes.logit_lens_layers.size(), k = uint64_t(std::max(probes.logit_lens_top_n, 0));
        const uint64_t cols = uint64_t(std::max(probes.logit_lens_positions, 0));
        n += lens * std::min(cols, B) * k * 8 + lens * std::min(cols, std::max(keys, B)) * k * (sizeof(LensToken) + 16);
    }
    for (const LayerSpec& L : spec_.layers) {
        const FfnSpec& f = L.ffn;
        if (probes.ffn_down) {
            // Each pass's rows (dense or shared expert; routed pairs), then per group a summary:
            // two histograms at their largest.
            const int n_ff = f.moe.n_expert > 0 ? f.moe.n_ff_shared : f.n_ff;
            const uint64_t groups = (n_ff > 0 ? 1 : 0) + uint64_t(std::max(f.moe.n_expert, 0));
            if (n_ff > 0) n += B * (uint64_t(n_ff) + E) * F;
            if (f.moe.n_expert > 0) n += B * uint64_t(f.moe.top_k) * (uint64_t(f.moe.n_ff_expert) + E) * F;
            n += groups * (2 * AbsHistogram::max_bytes() + sizeof(DownSummary));
        }
        if ((probes.routing || probes.ffn_down) && f.moe.n_expert > 0) n += B * uint64_t(f.moe.top_k) * 8;
    }
    return n;
}

uint64_t ProbeRecorder::expert_load_bytes() const {
    uint64_t n = 0;
    for (const gpu::Buffer& b : expert_load_) n += b.size();
    return n;
}

const gpu::Buffer* ProbeRecorder::attention_probs(int l) const {
    auto probed = std::find(probed_layers_.begin(), probed_layers_.end(), l);
    return probed != probed_layers_.end() ? &probs_[size_t(probed - probed_layers_.begin())] : nullptr;
}

// The newest attn_rows_ query rows of [T, n_head, n_kv], and with sinks their probabilities
// [T, n_head] after the rows (see ops::attention).
void ProbeRecorder::copy_attention(gpu::Stream& s, int l, int T, int n_kv) const {
    const gpu::Buffer* probs = attention_probs(l);
    if (!probs) return;
    const uint64_t n_head = uint64_t(spec_.layers[size_t(l)].attn.n_head);
    const gpu::Buffer& host = probs_host_[size_t(probs - probs_.data())];
    const uint64_t row = n_head * uint64_t(n_kv) * F;
    const uint64_t first = uint64_t(T - attn_rows_);
    s.mark("copy");
    s.copy(*probs, first * row, host, 0, uint64_t(attn_rows_) * row);
    if (w_.layers[size_t(l)].sinks) {
        const uint64_t sink_row = n_head * F;
        s.copy(*probs, uint64_t(T) * row + first * sink_row, host,
               uint64_t(attn_rows_cap_) * n_head * uint64_t(kv_.layer(l).slots) * F, uint64_t(attn_rows_) * sink_row);
    }
}

// int32 experts [pairs], then from n_batch * top_k on the float weights [pairs] (read_routing).
void ProbeRecorder::copy_routing(gpu::Stream& s, int l, const gpu::Buffer& experts, const gpu::Buffer& weights,
                                 int T) const {
    const uint64_t top_k = uint64_t(spec_.layers[size_t(l)].ffn.moe.top_k);
    const uint64_t pairs = uint64_t(T) * top_k;
    const gpu::Buffer& host = routing_host_[size_t(l)];
    s.mark("copy");
    s.copy(experts, 0, host, 0, pairs * 4);
    s.copy(weights, 0, host, uint64_t(n_batch_) * top_k * 4, pairs * F);
}

void ProbeRecorder::copy_residual(gpu::Stream& s, const gpu::Buffer& x, int l, int T, const ProbeConfig& probes) const {
    const uint64_t row = uint64_t(spec_.n_embd) * F;
    if (residual_copied(l, probes)) {
        s.mark("copy");
        s.copy(x, 0, residual_host_, uint64_t(l + 1) * uint64_t(n_batch_) * row, uint64_t(T) * row);
    }
    auto lens = std::find(lens_layers_.begin(), lens_layers_.end(), l);
    if (lens != lens_layers_.end()) {
        const uint64_t R = uint64_t(lens_rows(T));
        s.mark("copy");
        s.copy(x, (uint64_t(T) - R) * row, lens_.x, uint64_t(lens - lens_layers_.begin()) * R * row, R * row);
    }
}

// Blocks of sum_rows_ query rows: their positions to sum_pos_, attention with probabilities
// into sum_probs_ (its output unused), then the statistics and the asked heads' newest rows.
void ProbeRecorder::summarize_attention(gpu::Stream& s, int l, int T, int n_kv, const gpu::Buffer& q,
                                        const gpu::Buffer& positions, const ops::KvView& k, const ops::KvView& v,
                                        const AttentionParams& p, const gpu::Buffer* sinks) const {
    if (sum_rows_ == 0 || n_kv <= 0) return;
    std::vector<size_t> heads;  // attention_heads of this layer
    for (size_t j = 0; j < heads_.size(); ++j)
        if (heads_[j].layer == l) heads.push_back(j);
    if (!summary_ && !detail() && heads.empty()) return;
    if (summary_) summarized_[size_t(l)] = 1;
    if (detail()) begin_detail(s, l, p.n_head, positions, T);
    const uint64_t H = uint64_t(p.n_head), K = uint64_t(n_kv), slots = uint64_t(kv_.layer(l).slots);
    const uint64_t qd = H * uint64_t(p.head_dim);
    const int first_kept = T - attn_rows_;  // the newest rows go to the head maps
    const uint64_t stats_base = uint64_t(l) * uint64_t(n_batch_) * uint64_t(max_head_) * ops::kAttentionStats;
    for (int c0 = 0; c0 < T; c0 += sum_rows_) {
        const int n = std::min(sum_rows_, T - c0);
        const int r0 = std::max(c0, first_kept);  // kept rows of this block: r0..c0+n-1
        if (!summary_ && !detail() && r0 >= c0 + n) continue;
        s.mark("copy");
        s.copy(positions, uint64_t(c0) * 4, sum_pos_, 0, uint64_t(n) * 4);
        s.barrier("the block's positions are in place before the probes' attention reads them");
        s.mark("attention");
        ops::attention(s, ops::f32_rows(q, n, int64_t(qd), uint64_t(c0) * qd), ops::i32_vector(sum_pos_, n), k, v,
                       ops::i32_vector(kv_.slot_positions(l), n_kv),
                       ops::f32_rows(sum_out_, n, int64_t(H) * p.value_dim()), p, sinks, &sum_probs_);
        s.barrier("the block's probabilities are complete before the probes read them");
        if (summary_) {
            s.mark("attention_summary");
            ops::attention_summary(
                s, ops::f32_rows(sum_probs_, n, int64_t(H * K)), sinks != nullptr, ops::i32_vector(sum_pos_, n),
                ops::i32_vector(kv_.slot_positions(l), n_kv),
                ops::f32_rows(stats_, n, int64_t(H) * ops::kAttentionStats, stats_base + uint64_t(c0) * H * ops::kAttentionStats),
                p.n_head);
        }
        if (detail()) record_detail(s, l, c0, n, n_kv, p.n_head);
        if (r0 < c0 + n && !heads.empty()) {
            s.mark("copy");
            const uint64_t rows = uint64_t(c0 + n - r0);
            for (size_t j : heads) {
                const uint64_t h = uint64_t(heads_[j].head);
                const gpu::Buffer& host = head_host_[j];
                s.copy_rows(sum_probs_, ((uint64_t(r0 - c0) * H + h) * K) * F, H * K * F, host,
                            uint64_t(r0 - first_kept) * K * F, K * F, K * F, rows);
                if (sinks)
                    s.copy_rows(sum_probs_, (uint64_t(n) * H * K + uint64_t(r0 - c0) * H + h) * F, H * F, host,
                                (uint64_t(attn_rows_cap_) * slots + uint64_t(r0 - first_kept)) * F, F, F, rows);
            }
        }
        s.barrier("the probes have read the block before the next one overwrites it");
    }
    if (summary_) {
        s.mark("copy");
        const uint64_t bytes = uint64_t(T) * H * ops::kAttentionStats * F;
        s.copy(stats_, stats_base * F, stats_host_, stats_base * F, bytes);
    }
    if (detail()) copy_detail(s, l, T, p.n_head);
}

}  // namespace vkllm::model
