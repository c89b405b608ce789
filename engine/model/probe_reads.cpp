// The probes' copies of a pass turned into ProbeResults: each read folds one pass into the
// eval's results (first_pass starts a new eval).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "core/softmax.h"
#include "core/top_n.h"
#include "model/probe_recorder.h"
#include "ops/probe_ops.h"

namespace vkllm::model {
namespace {

constexpr size_t F = sizeof(float);

// The largest |v| over rows of n values, with its row and column, and the median |v|.
struct AbsStats {
    float max_abs = 0, median_abs = 0;
    size_t row = 0;
    int col = 0;
};
AbsStats abs_stats(const std::vector<float>& v, int n) {
    AbsStats st;
    if (v.empty()) return st;
    std::vector<float> mags(v.size());
    size_t best = 0;
    for (size_t i = 0; i < v.size(); ++i) {
        mags[i] = std::fabs(v[i]);
        if (mags[i] > mags[best]) best = i;
    }
    st.max_abs = mags[best];
    st.row = best / size_t(n);
    st.col = int(best % size_t(n));
    std::nth_element(mags.begin(), mags.begin() + long(mags.size() / 2), mags.end());
    st.median_abs = mags[mags.size() / 2];
    return st;
}

}  // namespace

void ProbeRecorder::read(int T, int pos0, const ProbeConfig& probes, ProbeResults* results, bool first_pass,
                         const gpu::Stream& s) {
    if (first_pass) {
        // A new eval: the previous eval's results go (the session keeps its own totals).
        results->attention.clear();
        results->residual.clear();
        results->residual_full.clear();
        results->ffn_down.clear();
        results->routing.clear();
        results->logit_lens.clear();
        results->timings.clear();
        results->dispatches = results->barriers = results->passes = 0;
        eval_tokens_ = 0;
        residual_acc_.clear();
        down_acc_.clear();
    }
    eval_tokens_ += T;
    results->dispatches += int(s.dispatch_count());
    results->barriers += int(s.barrier_count());
    results->passes += 1;
    if (probes.timings)
        for (const gpu::Stream::Interval& i : s.intervals())
            results->timings.push_back({i.label, i.layer, i.ms, int(i.dispatches)});
    read_attention(T, pos0, probes, results, first_pass);
    read_head_maps(T, pos0, probes, results);
    read_summary(T, results, first_pass);
    read_detail(T, pos0, results, first_pass);
    read_residual(T, pos0, probes, results, first_pass);
    if (probes.ffn_down) read_ffn_down(T, pos0, results);
    if (probes.routing) read_routing(T, pos0, results, first_pass);
    read_logit_lens(T, pos0, probes, results, first_pass);
    state_.read(T, pos0, results, first_pass);
    results->expert_load_step.clear();
    if (probes.expert_load) {
        // Counted this step; the session sums steps into its prefill and decode totals.
        for (int l = 0; l < spec_.n_layer; ++l) {
            const int n = spec_.layers[size_t(l)].ffn.moe.n_expert;
            if (n == 0) continue;
            ExpertLoad e;
            e.layer = l;
            const float* v = static_cast<const float*>(expert_load_[size_t(l)].mapped());
            for (int x = 0; x < n; ++x) {
                e.tokens.push_back(v[2 * x]);
                e.weight_sum.push_back(v[2 * x + 1]);
            }
            results->expert_load_step.push_back(std::move(e));
        }
    }
}

// Each probed layer's map gains this pass's newest attn_rows_ query rows; the key axis grows to
// the newest position (earlier rows get zeros there: the future), and only the newest
// attention_max_rows rows are kept.
void ProbeRecorder::read_attention(int T, int pos0, const ProbeConfig& probes, ProbeResults* results, bool first_pass) {
    if (probed_layers_.empty() && heads_.empty()) return;
    if (first_pass || results->attention.size() != probed_layers_.size() + heads_.size()) {
        results->attention.clear();
        auto add = [&](int l, int head) {
            const AttentionSpec& a = spec_.layers[size_t(l)].attn;
            AttentionMap m;
            m.layer = l;
            m.n_head = head >= 0 ? 1 : a.n_head;
            m.head = head;
            m.window = a.window;
            m.chunk = a.chunk;
            m.causal = a.causal;  // false: a bidirectional (encoder) layer: full rows
            results->attention.push_back(std::move(m));
        };
        for (int l : probed_layers_) add(l, -1);
        for (const AttentionHead& h : heads_) add(h.layer, h.head);
    }
    const int newest = pos0 + T - 1;
    const int n_key = newest + 1;
    for (size_t i = 0; i < probed_layers_.size(); ++i) {
        AttentionMap& m = results->attention[i];
        const bool sinks = w_.layers[size_t(m.layer)].sinks != nullptr;
        const KvCache::Layer& cache = kv_.layer(m.layer);
        const int n_kv = std::min(pos0 + T, cache.slots);
        const auto* slot_pos = static_cast<const int32_t*>(kv_.slot_positions(m.layer).mapped());
        const float* src = static_cast<const float*>(probs_host_[i].mapped());
        const float* sink_src = src + size_t(attn_rows_cap_) * size_t(m.n_head) * size_t(cache.slots);
        const int H = m.n_head;
        const int old_rows = m.n_query(), old_keys = m.n_key();
        const int total = old_rows + attn_rows_;
        const int keep = std::min(total, std::max(probes.attention_max_rows, 1));
        const int drop = total - keep;  // the oldest rows
        std::vector<float> probs(size_t(H) * size_t(keep) * size_t(n_key), 0.0f);
        std::vector<float> sink(sinks ? size_t(H) * size_t(keep) : 0, 0.0f);
        std::vector<int> query_pos;
        for (int r = drop; r < total; ++r) {
            const int q = r - drop;  // row in the new map
            if (r < old_rows) {
                query_pos.push_back(m.query_pos[size_t(r)]);
                for (int h = 0; h < H; ++h) {
                    std::memcpy(&probs[(size_t(h) * size_t(keep) + size_t(q)) * size_t(n_key)],
                                &m.probs[(size_t(h) * size_t(old_rows) + size_t(r)) * size_t(old_keys)],
                                size_t(old_keys) * F);
                    if (sinks) sink[size_t(h) * size_t(keep) + size_t(q)] = m.sink[size_t(h) * size_t(old_rows) + size_t(r)];
                }
                continue;
            }
            const int j = r - old_rows;  // row among this pass's copied rows
            query_pos.push_back(pos0 + (T - attn_rows_) + j);
            for (int h = 0; h < H; ++h) {
                const float* row = src + (size_t(j) * size_t(H) + size_t(h)) * size_t(n_kv);
                float* dst = &probs[(size_t(h) * size_t(keep) + size_t(q)) * size_t(n_key)];
                // Ring caches: slot k holds position slot_pos[k] (keys outside the window stay 0).
                for (int k = 0; k < n_kv; ++k)
                    if (slot_pos[k] >= 0 && slot_pos[k] <= newest) dst[slot_pos[k]] = row[k];
                if (sinks) sink[size_t(h) * size_t(keep) + size_t(q)] = sink_src[size_t(j) * size_t(H) + size_t(h)];
            }
        }
        m.query_pos = std::move(query_pos);
        m.key_pos.resize(size_t(n_key));
        for (int k = 0; k < n_key; ++k) m.key_pos[size_t(k)] = k;
        m.probs = std::move(probs);
        m.sink = std::move(sink);
    }
}

// Each single-head map gains this pass's newest rows inside its tile (ProbeRecorder::
// summarize_attention copied them: [rows, n_kv] by slot, sinks after rows_cap x slots).
void ProbeRecorder::read_head_maps(int T, int pos0, const ProbeConfig& probes, ProbeResults* results) {
    const int newest = pos0 + T - 1;
    const int max_rows = std::max(probes.attention_max_rows, 1);
    for (size_t j = 0; j < heads_.size(); ++j) {
        const AttentionHead& hd = heads_[j];
        AttentionMap& m = results->attention[probed_layers_.size() + j];
        const bool sinks = w_.layers[size_t(hd.layer)].sinks != nullptr;
        const int slots = kv_.layer(hd.layer).slots;
        const int n_kv = std::min(pos0 + T, slots);
        const auto* slot_pos = static_cast<const int32_t*>(kv_.slot_positions(hd.layer).mapped());
        const float* src = static_cast<const float*>(head_host_[j].mapped());
        const float* sink_src = src + size_t(attn_rows_cap_) * size_t(slots);
        const int k0 = hd.key_first;
        const int k1 = std::max(k0, hd.key_count > 0 ? std::min(newest + 1, k0 + hd.key_count) : newest + 1);
        const int n_key = k1 - k0, old_keys = m.n_key();
        auto in_rows = [&](int qp) {
            return qp >= hd.query_first && (hd.query_count == 0 || qp < hd.query_first + hd.query_count);
        };
        std::vector<int> query_pos;
        std::vector<float> probs, sink;
        for (int r = 0; r < m.n_query(); ++r) {  // earlier passes' rows, the key axis widened
            query_pos.push_back(m.query_pos[size_t(r)]);
            probs.insert(probs.end(), m.probs.begin() + long(size_t(r) * size_t(old_keys)),
                         m.probs.begin() + long(size_t(r + 1) * size_t(old_keys)));
            probs.resize(query_pos.size() * size_t(n_key), 0.0f);
            if (sinks) sink.push_back(m.sink[size_t(r)]);
        }
        for (int i = 0; i < attn_rows_; ++i) {
            const int qp = pos0 + (T - attn_rows_) + i;
            if (!in_rows(qp)) continue;
            query_pos.push_back(qp);
            probs.resize(query_pos.size() * size_t(n_key), 0.0f);
            float* dst = probs.data() + (query_pos.size() - 1) * size_t(n_key);
            const float* row = src + size_t(i) * size_t(n_kv);
            for (int k = 0; k < n_kv; ++k)
                if (slot_pos[k] >= k0 && slot_pos[k] < k1) dst[slot_pos[k] - k0] = row[k];
            if (sinks) sink.push_back(sink_src[i]);
        }
        const size_t drop = query_pos.size() > size_t(max_rows) ? query_pos.size() - size_t(max_rows) : 0;
        m.query_pos.assign(query_pos.begin() + long(drop), query_pos.end());
        m.probs.assign(probs.begin() + long(drop * size_t(n_key)), probs.end());
        m.sink = sinks ? std::vector<float>(sink.begin() + long(drop), sink.end()) : std::vector<float>();
        m.key_pos.resize(size_t(n_key));
        for (int k = 0; k < n_key; ++k) m.key_pos[size_t(k)] = k0 + k;
    }
}

// The summaries: each row's statistics of this pass added to the eval's sums.
void ProbeRecorder::read_summary(int T, ProbeResults* results, bool first_pass) {
    results->attention_summary.clear();
    if (!summary_) return;
    if (first_pass || sums_.size() != size_t(spec_.n_layer)) {
        sums_.assign(size_t(spec_.n_layer), {});
        for (int l = 0; l < spec_.n_layer; ++l)
            sums_[size_t(l)].assign(size_t(std::max(spec_.layers[size_t(l)].attn.n_head, 0)), HeadSums());
    }
    const size_t S = size_t(ops::kAttentionStats);
    for (int l = 0; l < spec_.n_layer; ++l) {
        if (!summarized_[size_t(l)]) continue;
        const size_t H = sums_[size_t(l)].size();
        const float* st = static_cast<const float*>(stats_host_.mapped()) +
                          size_t(l) * size_t(n_batch_) * size_t(max_head_) * S;
        for (int r = 0; r < T; ++r)
            for (size_t h = 0; h < H; ++h) {
                const float* v = st + (size_t(r) * H + h) * S;
                HeadSums& sum = sums_[size_t(l)][h];
                sum.entropy += v[0];
                sum.sink_mass += v[1];
                sum.mean_distance += v[2];
                sum.max_prob += v[3];
                sum.rows += 1;
            }
    }
    for (int l = 0; l < spec_.n_layer; ++l)
        for (size_t h = 0; h < sums_[size_t(l)].size(); ++h) {
            const HeadSums& sum = sums_[size_t(l)][h];
            if (sum.rows == 0) continue;
            AttentionSummary a;
            a.layer = l;
            a.head = int(h);
            a.rows = sum.rows;
            a.entropy = float(sum.entropy / sum.rows);
            a.sink_mass = float(sum.sink_mass / sum.rows);
            a.mean_distance = float(sum.mean_distance / sum.rows);
            a.max_prob = float(sum.max_prob / sum.rows);
            results->attention_summary.push_back(a);
        }
}

void ProbeRecorder::read_residual(int T, int pos0, const ProbeConfig& probes, ProbeResults* results, bool first_pass) {
    const size_t E = size_t(spec_.n_embd);
    auto layer_rows = [&](int l) {
        return static_cast<const float*>(residual_host_.mapped()) + size_t(l + 1) * size_t(n_batch_) * E;
    };
    // The whole tensors of the chosen layers.
    if (first_pass || results->residual_full.size() != probes.residual_full_layers.size()) {
        results->residual_full.clear();
        for (int l : probes.residual_full_layers) {
            ResidualTensor t;
            t.layer = l;
            t.n_embd = spec_.n_embd;
            results->residual_full.push_back(std::move(t));
        }
    }
    for (ResidualTensor& t : results->residual_full) {
        const float* x = layer_rows(t.layer);
        t.values.insert(t.values.end(), x, x + size_t(T) * E);
        for (int i = 0; i < T; ++i) t.positions.push_back(pos0 + i);
    }
    if (!probes.residual_stats) return;
    // Statistics over every token of the eval so far.
    residual_acc_.resize(size_t(spec_.n_layer + 1));
    results->residual.clear();
    const int first_pos = pos0 + T - eval_tokens_;
    for (int l = -1; l < spec_.n_layer; ++l) {
        std::vector<float>& acc = residual_acc_[size_t(l + 1)];
        const float* x = layer_rows(l);
        acc.insert(acc.end(), x, x + size_t(T) * E);
        const AbsStats st = abs_stats(acc, spec_.n_embd);
        ResidualStat r;
        r.layer = l;
        r.max_abs = st.max_abs;
        r.token = first_pos + int(st.row);
        r.channel = st.col;
        r.median_abs = st.median_abs;
        const size_t n_tok = acc.size() / E;
        // Per token: its largest |x| and channel.
        for (size_t t = 0; t < n_tok; ++t) {
            const float* row = acc.data() + t * E;
            size_t best = 0;
            for (size_t c = 1; c < E; ++c)
                if (std::fabs(row[c]) > std::fabs(row[best])) best = c;
            r.token_max_abs.push_back(std::fabs(row[best]));
            r.token_channel.push_back(int(best));
        }
        // The top-k |x| (ties: the earlier entry first).
        const size_t k = size_t(std::max(probes.residual_top_k, 0));
        for (size_t i : top_n_by(acc.size(), k, [&](size_t j) { return std::fabs(acc[j]); }))
            r.top.push_back({acc[i], first_pos + int(i / E), int(i % E)});
        results->residual.push_back(std::move(r));
    }
}

void ProbeRecorder::AbsHistogram::add(float v) {
    uint32_t bits;
    const float a = std::fabs(v);
    std::memcpy(&bits, &a, 4);
    ++n;
    const int e = int(bits >> 23) - 127;
    if (e < kMinExp) {
        ++under;
        return;
    }
    if (e >= kMinExp + kOctaves) {
        ++over;
        return;
    }
    if (octaves.empty()) octaves.resize(size_t(kOctaves));
    std::vector<uint32_t>& o = octaves[size_t(e - kMinExp)];
    if (o.empty()) o.assign(size_t(kBins), 0);
    ++o[(bits >> 13) & uint32_t(kBins - 1)];
}

float ProbeRecorder::AbsHistogram::median() const {
    if (n == 0) return 0;
    const uint64_t rank = n / 2;
    uint64_t below = under;
    if (rank < below) return 0;
    for (size_t e = 0; e < octaves.size(); ++e) {
        const std::vector<uint32_t>& o = octaves[e];
        for (size_t b = 0; b < o.size(); ++b) {
            below += o[b];
            if (rank < below)  // the middle of the bin
                return std::ldexp(1.0f + (float(b) + 0.5f) / float(kBins), int(e) + kMinExp);
        }
    }
    return std::ldexp(1.0f, kMinExp + kOctaves);
}

uint64_t ProbeRecorder::AbsHistogram::bytes() const {
    uint64_t b = octaves.size() * sizeof(std::vector<uint32_t>);
    for (const auto& o : octaves) b += o.size() * 4;
    return b;
}

void ProbeRecorder::DownSummary::add(const float* in_row, int n_in, const float* out_row, int n_out, int pos) {
    for (int c = 0; c < n_in; ++c) {
        const float a = std::fabs(in_row[c]);
        if (a > in_max) {
            in_max = a;
            in_pos = pos;
            in_channel = c;
        }
        in.add(a);
    }
    for (int c = 0; c < n_out; ++c) {
        const float a = std::fabs(out_row[c]);
        if (a > out_max) {
            out_max = a;
            out_pos = pos;
            out_channel = c;
        }
        out.add(a);
    }
}

// Each pass's rows are folded into the per-layer summaries and dropped.
void ProbeRecorder::read_ffn_down(int T, int pos0, ProbeResults* results) {
    const int E = spec_.n_embd;
    down_acc_.resize(size_t(spec_.n_layer));
    results->ffn_down.clear();
    for (int l = 0; l < spec_.n_layer; ++l) {
        const FfnSpec& f = spec_.layers[size_t(l)].ffn;
        auto& groups = down_acc_[size_t(l)];
        // Dense FFN or the shared expert: one row per token.
        const int n_ff = f.moe.n_expert > 0 ? f.moe.n_ff_shared : f.n_ff;
        if (n_ff > 0) {
            DownSummary& d = groups[-1];
            const float* in = static_cast<const float*>(ffn_in_host_[size_t(l)].mapped());
            const float* out = static_cast<const float*>(ffn_out_host_[size_t(l)].mapped());
            for (int t = 0; t < T; ++t)
                d.add(in + size_t(t) * size_t(n_ff), n_ff, out + size_t(t) * size_t(E), E, pos0 + t);
        }
        // Routed experts: pair p = token * top_k + slot goes to expert experts[p].
        if (f.moe.n_expert > 0) {
            const int top_k = f.moe.top_k, n_ffe = f.moe.n_ff_expert;
            const auto* experts = static_cast<const int32_t*>(routing_host_[size_t(l)].mapped());
            const float* in = static_cast<const float*>(moe_in_host_[size_t(l)].mapped());
            const float* out = static_cast<const float*>(moe_out_host_[size_t(l)].mapped());
            for (int p = 0; p < T * top_k; ++p)
                groups[experts[p]].add(in + size_t(p) * size_t(n_ffe), n_ffe, out + size_t(p) * size_t(E), E,
                                       pos0 + p / top_k);
        }
        for (const auto& [expert, d] : groups) {
            FfnDownStat st;
            st.layer = l;
            st.expert = expert;
            st.in_max_abs = std::max(d.in_max, 0.0f);
            st.in_token = d.in_pos;
            st.in_channel = d.in_channel;
            st.in_median_abs = d.in.median();
            st.out_max_abs = std::max(d.out_max, 0.0f);
            st.out_token = d.out_pos;
            st.out_channel = d.out_channel;
            st.out_median_abs = d.out.median();
            results->ffn_down.push_back(st);
        }
    }
}

void ProbeRecorder::read_routing(int T, int pos0, ProbeResults* results, bool first_pass) {
    if (first_pass) results->routing.clear();
    size_t i = 0;
    for (int l = 0; l < spec_.n_layer; ++l) {
        const MoeSpec& m = spec_.layers[size_t(l)].ffn.moe;
        if (m.n_expert == 0) continue;
        if (results->routing.size() <= i) {
            RoutingProbe r;
            r.layer = l;
            r.top_k = m.top_k;
            results->routing.push_back(std::move(r));
        }
        RoutingProbe& r = results->routing[i++];
        const size_t pairs = size_t(T) * size_t(m.top_k);
        const auto* experts = static_cast<const int32_t*>(routing_host_[size_t(l)].mapped());
        const float* weights = reinterpret_cast<const float*>(experts + size_t(n_batch_) * size_t(m.top_k));
        r.experts.insert(r.experts.end(), experts, experts + pairs);
        r.weights.insert(r.weights.end(), weights, weights + pairs);
        for (int t = 0; t < T; ++t) r.positions.push_back(pos0 + t);
    }
}

// The pass's lens columns (its newest lens_rows(T) positions) join the eval's, of which the
// newest logit_lens_positions are kept; the grid and its newest column are remade from them.
void ProbeRecorder::read_logit_lens(int T, int pos0, const ProbeConfig& probes, ProbeResults* results,
                                    bool first_pass) {
    if (first_pass) lens_acc_.clear();
    results->logit_lens.clear();
    results->logit_lens_grid = LogitLensGrid();
    if (lens_layers_.empty()) return;
    const int n = int(lens_layers_.size()), R = lens_rows(T), k = lens_.k;
    const int32_t* pairs = static_cast<const int32_t*>(lens_.host.mapped());
    for (int j = 0; j < R; ++j) {
        LensColumn c;
        c.position = pos0 + T - R + j;
        c.cells.resize(size_t(n) * size_t(k));
        for (int i = 0; i < n; ++i)
            for (int t = 0; t < k; ++t) {
                const int32_t* pair = pairs + ((size_t(i) * size_t(R) + size_t(j)) * size_t(k) + size_t(t)) * 2;
                LensToken& cell = c.cells[size_t(i) * size_t(k) + size_t(t)];
                cell.id = pair[1];
                std::memcpy(&cell.p, &pair[0], sizeof cell.p);
                if (cell.id >= 0 && token_text_) cell.text = token_text_(cell.id);
            }
        lens_acc_.push_back(std::move(c));
    }
    const size_t keep = size_t(probes.logit_lens_positions);
    if (lens_acc_.size() > keep) lens_acc_.erase(lens_acc_.begin(), lens_acc_.end() - std::ptrdiff_t(keep));

    LogitLensGrid& g = results->logit_lens_grid;
    g.layers = lens_layers_;
    g.top_k = k;
    const size_t cols = lens_acc_.size();
    g.cells.resize(size_t(n) * cols * size_t(k));
    for (size_t c = 0; c < cols; ++c) {
        g.positions.push_back(lens_acc_[c].position);
        for (int i = 0; i < n; ++i)
            std::copy_n(&lens_acc_[c].cells[size_t(i) * size_t(k)], k, &g.cells[(size_t(i) * cols + c) * size_t(k)]);
    }
    // The newest column as the newest-position lens; its tokens of probability 0 (id -1) left out.
    for (int i = 0; i < n; ++i) {
        LogitLens lens;
        lens.layer = lens_layers_[size_t(i)];
        lens.position = g.positions.back();
        const LensToken* cell = g.cell(i, int(cols) - 1);
        for (int t = 0; t < k; ++t)
            if (cell[t].id >= 0) lens.top.push_back(cell[t]);
        results->logit_lens.push_back(std::move(lens));
    }
}

}  // namespace vkllm::model
