#include "view_models.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <set>

namespace vkllm::studio {

// ---- Attention ----

HeadStats head_stats(const AttentionHistory& a, int head) {
    HeadStats s;
    s.layer = a.layer;
    s.head = head;
    const int nq = int(a.query_pos.size());
    if (nq == 0) return s;
    double entropy = 0, first = 0, distance = 0, sink = 0;
    for (int q = 0; q < nq; ++q) {
        const int qpos = a.query_pos[size_t(q)];
        double e = 0, d = 0;
        // Every key the row has: up to the query (causal), or all of them (bidirectional), whose
        // distance counts in both directions.
        const int n_key = a.causal ? std::min(qpos + 1, a.n_key) : a.n_key;
        for (int k = 0; k < n_key; ++k) {
            const double p = a.at(head, q, k);
            if (p > 0) e -= p * std::log(p);
            d += p * std::abs(double(qpos - k));
        }
        entropy += e;
        distance += d;
        first += a.at(head, q, 0);
        sink += a.sink_at(head, q);
    }
    s.entropy = float(entropy / nq);
    s.first_token_mass = float(first / nq);
    s.mean_distance = float(distance / nq);
    s.sink_mass = float(sink / nq);
    return s;
}

namespace {

// Every kept eval's GPU summaries as one view per layer, each head's numbers weighted by rows.
AttentionView summary_view(const ProbeHistory& h, const ModelInfo& info) {
    struct Sums {
        double entropy = 0, sink = 0, distance = 0;
        int rows = 0;
    };
    std::map<std::pair<int, int>, Sums> sums;
    for (const auto& e : h.evals)
        for (const AttentionSummary& a : e->results.attention_summary) {
            Sums& s = sums[{a.layer, a.head}];
            s.entropy += double(a.entropy) * a.rows;
            s.sink += double(a.sink_mass) * a.rows;
            s.distance += double(a.mean_distance) * a.rows;
            s.rows += a.rows;
        }
    AttentionView v;
    for (const auto& [key, s] : sums) {
        const auto [layer, head] = key;
        if (v.layers.empty() || v.layers.back().layer != layer) {
            AttentionLayerView l;
            l.layer = layer;
            l.from_summary = true;
            l.n_query = s.rows;
            l.n_key = s.rows;
            if (layer < int(info.layers.size())) {
                const AttentionInfo& a = info.layers[size_t(layer)].attention;
                l.kind = to_string(a.kind);
                l.window = a.window;
                l.global = a.window <= 0 && a.chunk <= 0;
                l.sinks = a.sinks;
            }
            v.layers.push_back(std::move(l));
        }
        AttentionLayerView& l = v.layers.back();
        HeadStats st;
        st.layer = layer;
        st.head = head;
        const double n = std::max(s.rows, 1);
        st.entropy = float(s.entropy / n);
        st.first_token_mass = float(s.sink / n);
        st.mean_distance = float(s.distance / n);
        l.heads.push_back(st);
        l.n_head = int(l.heads.size());
    }
    return v;
}

}  // namespace

AttentionView attention_view(const ProbeHistory& h, const ModelInfo& info) {
    if (h.attention.empty()) return summary_view(h, info);
    AttentionView v;
    for (const AttentionHistory& a : h.attention) {
        AttentionLayerView l;
        l.layer = a.layer;
        l.n_head = a.n_head;
        l.window = a.window;
        l.global = a.window <= 0 && a.chunk <= 0;
        l.sinks = a.has_sinks;
        l.kind = a.layer < int(info.layers.size()) ? to_string(info.layers[size_t(a.layer)].attention.kind) : "";
        l.n_query = int(a.query_pos.size());
        l.n_key = a.n_key;
        for (int head = 0; head < a.n_head; ++head) l.heads.push_back(head_stats(a, head));
        v.layers.push_back(std::move(l));
    }
    return v;
}

std::vector<float> attention_matrix(const AttentionHistory& a, int head, bool log_scale) {
    const size_t nq = a.query_pos.size(), nk = size_t(a.n_key);
    std::vector<float> m(nq * nk);
    for (size_t q = 0; q < nq; ++q)
        for (size_t k = 0; k < nk; ++k) {
            const float p = a.at(head, int(q), int(k));
            m[q * nk + k] = log_scale ? std::log10(std::max(p, 1e-6f)) : p;
        }
    return m;
}

std::vector<std::vector<float>> attention_to_key(const ProbeHistory& h, int key_pos) {
    std::vector<std::vector<float>> out;
    for (const AttentionHistory& a : h.attention) {
        std::vector<float> per_head(size_t(a.n_head), 0.0f);
        int n = 0;
        for (size_t q = 0; q < a.query_pos.size(); ++q) {
            // Later queries (causal); every other query (bidirectional).
            if (a.causal ? a.query_pos[q] <= key_pos : a.query_pos[q] == key_pos) continue;
            ++n;
            for (int head = 0; head < a.n_head; ++head) per_head[size_t(head)] += a.at(head, int(q), key_pos);
        }
        if (n > 0)
            for (float& x : per_head) x /= float(n);
        out.push_back(std::move(per_head));
    }
    return out;
}

// ---- Activations ----

bool is_massive(float max_abs, float median_abs) {
    return max_abs > 100.0f && median_abs > 0 && max_abs / median_abs > 1000.0f;
}

std::vector<ActivationRow> activation_rows(const ProbeHistory& h) {
    std::vector<ActivationRow> rows;
    for (const ResidualHistory& r : h.residual) {
        if (r.positions.empty()) continue;
        ActivationRow row;
        row.layer = r.layer;
        row.max_abs = r.max_abs;
        row.token = r.max_token;
        row.channel = r.max_channel;
        row.median_abs = r.median_abs;
        row.ratio = r.median_abs > 0 ? r.max_abs / r.median_abs : 0.0f;
        row.massive = is_massive(r.max_abs, r.median_abs);
        rows.push_back(row);
    }
    return rows;
}

std::vector<SuperWeightCandidate> super_weight_candidates(const std::vector<FfnDownStat>& stats) {
    std::vector<SuperWeightCandidate> out;
    for (const FfnDownStat& f : stats) {
        if (f.in_token != f.out_token) continue;  // the pair must spike on the same token
        SuperWeightCandidate c;
        c.layer = f.layer;
        c.expert = f.expert;
        c.token = f.in_token;
        c.row = f.out_channel;
        c.col = f.in_channel;
        c.in_max_abs = f.in_max_abs;
        c.out_max_abs = f.out_max_abs;
        c.in_ratio = f.in_median_abs > 0 ? f.in_max_abs / f.in_median_abs : 0.0f;
        c.out_ratio = f.out_median_abs > 0 ? f.out_max_abs / f.out_median_abs : 0.0f;
        c.score = c.in_ratio * c.out_ratio;
        out.push_back(c);
    }
    std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.score > b.score; });
    return out;
}

// ---- Experts ----

ExpertBalance balance(const std::vector<float>& load) {
    ExpertBalance b;
    const size_t n = load.size();
    if (n == 0) return b;
    double sum = 0, mx = 0;
    for (float x : load) sum += x, mx = std::max(mx, double(x));
    for (float x : load) b.idle += x <= 0 ? 1 : 0;
    if (sum <= 0) return b;
    const double mean = sum / double(n);
    double var = 0, ent = 0;
    for (float x : load) {
        var += (x - mean) * (x - mean);
        const double p = x / sum;
        if (p > 0) ent -= p * std::log(p);
    }
    b.cv = float(std::sqrt(var / double(n)) / mean);
    b.max_over_mean = float(mx / mean);
    b.entropy = n > 1 ? float(ent / std::log(double(n))) : 1.0f;
    return b;
}

std::vector<ExpertLayerView> expert_view(const ProbeHistory& h, const ModelInfo& info, int rolling_window) {
    std::vector<ExpertLayerView> out;
    for (const RoutingHistory& r : h.routing) {
        ExpertLayerView v;
        v.layer = r.layer;
        if (r.layer < int(info.layers.size())) {
            v.n_expert = info.layers[size_t(r.layer)].ffn.n_expert;
            v.shared_expert = info.layers[size_t(r.layer)].ffn.n_shared_expert_ff > 0;
        }
        for (int32_t e : r.experts) v.n_expert = std::max(v.n_expert, int(e) + 1);
        const size_t ne = size_t(v.n_expert), n = r.positions.size(), k = size_t(r.top_k);
        v.prompt_tokens.assign(ne, 0);
        v.generated_tokens.assign(ne, 0);
        v.prompt_weight.assign(ne, 0.0f);
        v.generated_weight.assign(ne, 0.0f);
        v.rolling_tokens.assign(ne, 0);
        for (size_t t = 0; t < n; ++t)
            for (size_t s = 0; s < k; ++s) {
                const int32_t e = r.experts[t * k + s];
                if (e < 0 || size_t(e) >= ne) continue;
                const float w = r.weights[t * k + s];
                if (r.prompt[t]) ++v.prompt_tokens[size_t(e)], v.prompt_weight[size_t(e)] += w;
                else ++v.generated_tokens[size_t(e)], v.generated_weight[size_t(e)] += w;
                if (t + size_t(rolling_window) >= n) ++v.rolling_tokens[size_t(e)];
            }
        std::vector<float> all(ne);
        for (size_t e = 0; e < ne; ++e) all[e] = float(v.prompt_tokens[e] + v.generated_tokens[e]);
        const ExpertBalance b = balance(all);
        v.cv = b.cv, v.max_over_mean = b.max_over_mean, v.entropy = b.entropy, v.idle = b.idle;
        out.push_back(std::move(v));
    }
    return out;
}

std::vector<std::vector<int32_t>> token_path(const ProbeHistory& h, int position) {
    std::vector<std::vector<int32_t>> path;
    for (const RoutingHistory& r : h.routing) {
        std::vector<int32_t> chosen;
        for (size_t t = 0; t < r.positions.size(); ++t)
            if (r.positions[t] == position)
                chosen.assign(r.experts.begin() + long(t * size_t(r.top_k)),
                              r.experts.begin() + long((t + 1) * size_t(r.top_k)));
        path.push_back(std::move(chosen));
    }
    return path;
}

// ---- Logit lens ----

std::vector<LensRow> lens_rows(const ProbeHistory& h, int position) {
    std::vector<LensRow> rows;
    if (position < 0)
        for (const LogitLens& l : h.logit_lens) rows.push_back({l.layer, l.top});
    else
        for (const LogitLens& l : h.lens_history)
            if (l.position == position) rows.push_back({l.layer, l.top});
    std::sort(rows.begin(), rows.end(), [](const LensRow& a, const LensRow& b) { return a.layer < b.layer; });
    return rows;
}

std::vector<int> lens_positions(const ProbeHistory& h) {
    std::set<int> p;
    for (const LogitLens& l : h.lens_history) p.insert(l.position);
    return {p.begin(), p.end()};
}

LensGrid lens_grid(const ProbeHistory& h) {
    LensGrid g;
    std::set<int> layers, positions;
    for (const LogitLens& l : h.lens_history) {
        layers.insert(l.layer);
        positions.insert(l.position);
    }
    g.layers.assign(layers.begin(), layers.end());
    g.positions.assign(positions.begin(), positions.end());
    g.cells.resize(g.layers.size() * g.positions.size());
    for (const LogitLens& l : h.lens_history) {
        const size_t row = size_t(std::lower_bound(g.layers.begin(), g.layers.end(), l.layer) - g.layers.begin());
        const size_t col = size_t(std::lower_bound(g.positions.begin(), g.positions.end(), l.position) - g.positions.begin());
        g.cells[row * g.positions.size() + col] = l.top;  // a later step's read of a position wins
    }
    return g;
}

std::vector<float> LensGrid::top_probs() const {
    std::vector<float> p(cells.size(), 0.0f);
    for (size_t i = 0; i < cells.size(); ++i)
        if (!cells[i].empty()) p[i] = cells[i][0].p;
    return p;
}

// ---- Architecture ----

namespace {
std::string activation_name(const FfnInfo& f) {
    const bool gated = f.kind != FfnKind::DensePlain;
    if (f.activation == Activation::Silu) return gated ? "SwiGLU" : "SiLU";
    return gated ? "GeGLU" : "GELU";
}
}  // namespace

std::vector<ArchitectureBlock> architecture_blocks(const ModelInfo& info) {
    std::vector<ArchitectureBlock> out;
    for (const LayerInfo& l : info.layers) {
        ArchitectureBlock b;
        b.layer = l.index;
        b.norm = to_string(l.norm_placement);
        const AttentionInfo& a = l.attention;
        b.attention_kind = to_string(a.kind);
        b.window = a.window;
        std::string att;
        if (a.kind == AttentionKind::Mla)
            att = "MLA " + std::to_string(a.n_head) + " heads, latent " + std::to_string(a.kv_lora_rank) + " + rope " +
                  std::to_string(a.qk_rope);
        else {
            // "nope" (no RoPE) says nothing new when the positions are learned embeddings.
            att = a.kind == AttentionKind::SlidingWindow                   ? "sliding window " + std::to_string(a.window)
                  : a.kind == AttentionKind::Chunked                        ? "chunked " + std::to_string(a.chunk)
                  : a.kind == AttentionKind::Nope && info.learned_positions ? std::string("global")
                                                                            : std::string(to_string(a.kind));
            att += ", " + std::to_string(a.n_head) + " heads";
            if (a.n_head_kv > 0 && a.n_head_kv != a.n_head)
                att += a.n_head_kv == 1 ? " (MQA)" : " (GQA " + std::to_string(a.gqa_group()) + ":1)";
            att += ", d " + std::to_string(a.head_dim);
        }
        if (a.sinks) att += ", sinks";
        if (a.softcap > 0) att += ", soft-cap";
        if (a.qk_norm != QkNorm::None) att += ", QK-norm";
        if (!a.rope.enabled && !info.learned_positions) att += ", NoPE";
        if (!a.causal) att = "bidirectional " + att;  // an encoder's: keys after the query too
        // A layer whose token mixer is not attention says what it is instead (its AttentionInfo is
        // empty): the state-space, RWKV-7 and Gated DeltaNet mixers keep a fixed state per sequence.
        const SsmInfo& m = l.ssm;
        switch (l.mixer) {
            case MixerKind::Attention: break;
            case MixerKind::Mamba2:
            case MixerKind::Mamba1:
                att = std::string(l.mixer == MixerKind::Mamba2 ? "Mamba-2" : "Mamba-1") + " state-space, d_inner " +
                      std::to_string(m.d_inner) + ", d_state " + std::to_string(m.d_state) + ", conv " +
                      std::to_string(m.d_conv);
                if (l.mixer == MixerKind::Mamba2)
                    att += ", " + std::to_string(m.n_head) + " heads, " + std::to_string(m.n_group) + " groups";
                break;
            case MixerKind::Rwkv7:
                att = "RWKV-7 time mix, " + std::to_string(l.rwkv.n_head) + " heads of " +
                      std::to_string(l.rwkv.head_size);
                break;
            case MixerKind::ShortConv:  // LFM2: a gated short convolution over the last l_cache tokens
                att = "short convolution, " + std::to_string(l.shortconv.l_cache) + " taps over " +
                      std::to_string(l.shortconv.channels) + " channels";
                break;
            case MixerKind::GatedDeltaNet:  // n_group key heads, n_head value heads, each d_state wide
                att = "Gated DeltaNet, " + std::to_string(m.n_head) + " value heads, " + std::to_string(m.n_group) +
                      " key heads of " + std::to_string(m.d_state) + ", conv " + std::to_string(m.d_conv);
                break;
            case MixerKind::None: att = "no token mixer"; break;
        }
        if (l.mixer != MixerKind::Attention) b.attention_kind = to_string(l.mixer);
        b.attention = att;
        const FfnInfo& f = l.ffn;
        b.ffn_kind = to_string(f.kind);
        if (f.kind == FfnKind::Moe) {
            b.ffn = "MoE " + std::to_string(f.n_expert) + " experts top-" + std::to_string(f.top_k) + " x " +
                    std::to_string(f.n_ff_expert);
            if (f.n_shared_expert_ff > 0) b.ffn += " + shared " + std::to_string(f.n_shared_expert_ff);
        } else if (l.mixer == MixerKind::Rwkv7) {
            b.ffn = "channel mix " + std::to_string(l.rwkv.n_ff);
        } else {
            b.ffn = "dense " + activation_name(f) + " " + std::to_string(f.n_ff);
        }
        b.kv_bytes_per_token = l.kv_bytes_per_token;
        std::set<std::string> types;
        for (const TensorInfo& t : l.tensors) b.weight_bytes += t.bytes, types.insert(t.type);
        for (const std::string& t : types) b.weight_types += (b.weight_types.empty() ? "" : ", ") + t;
        out.push_back(std::move(b));
    }
    return out;
}

// ---- Telemetry ----

TelemetryView telemetry_view(const ProbeHistory& h, const GenerateResult& last, int n_layer) {
    TelemetryView t;
    if (last.prompt_seconds > 0) t.prompt_tokens_per_s = last.n_prompt_evaluated / last.prompt_seconds;
    const int decoded = int(last.tokens.size()) > 0 ? int(last.tokens.size()) - 1 : 0;
    if (last.decode_seconds > 0 && decoded > 0) t.decode_tokens_per_s = decoded / last.decode_seconds;
    t.first_token_ms = last.first_token_seconds * 1000.0;
    for (const OpTiming& o : timings_by_op(h.timings)) t.by_op.push_back({o.op, o.ms, o.count});
    t.by_layer = timings_by_layer(h.timings, n_layer);
    for (const OpTiming& o : h.timings) t.step_ms += o.ms;
    return t;
}

float surprisal_bits(float logprob) { return float(-logprob / std::log(2.0)); }

std::vector<float> attention_from_query(const AttentionHistory& a, int head, int query_pos) {
    const auto it = std::find(a.query_pos.begin(), a.query_pos.end(), query_pos);
    if (it == a.query_pos.end() || head >= a.n_head || a.n_head <= 0) return {};
    const int q = int(it - a.query_pos.begin());
    std::vector<float> w(size_t(a.n_key), 0.0f);
    const int first = head < 0 ? 0 : head, last = head < 0 ? a.n_head : head + 1;
    for (int hh = first; hh < last; ++hh)
        for (int k = 0; k < a.n_key; ++k) w[size_t(k)] += a.at(hh, q, k);
    for (float& x : w) x /= float(last - first);
    return w;
}

float alibi_slope(const ModelInfo& info, int layer, int head) {
    if (layer < 0 || layer >= int(info.layers.size())) return 0.0f;
    const std::vector<float>& slopes = info.layers[size_t(layer)].attention.alibi_slopes;
    return head >= 0 && head < int(slopes.size()) ? slopes[size_t(head)] : 0.0f;
}

std::vector<float> alibi_bias_map(const std::vector<int>& query_pos, int n_key, float slope, bool causal) {
    std::vector<float> m(query_pos.size() * size_t(std::max(n_key, 0)));
    for (size_t q = 0; q < query_pos.size(); ++q)
        for (int k = 0; k < n_key; ++k)
            m[q * size_t(n_key) + size_t(k)] = causal && k > query_pos[q] ? -INFINITY
                                                                          : -slope * float(std::abs(query_pos[q] - k));
    return m;
}

}  // namespace vkllm::studio
