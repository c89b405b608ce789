#include "probe_history.h"

#include <algorithm>
#include <cmath>

namespace vkllm::studio {

float AttentionHistory::at(int head, int q, int key) const {
    const std::vector<float>& row = rows[size_t(q)];
    const int width = int(row.size()) / std::max(n_head, 1);
    if (key >= width) return 0.0f;
    return row[size_t(head) * size_t(width) + size_t(key)];
}

float AttentionHistory::sink_at(int head, int q) const {
    if (!has_sinks) return 0.0f;
    return sink[size_t(q)][size_t(head)];
}

namespace {

size_t count_before(const std::vector<int>& positions, int n) {
    return size_t(std::lower_bound(positions.begin(), positions.end(), n) - positions.begin());
}

// The key axis: up to the newest query, or the widest row (a bidirectional row sees later keys).
int key_count(const AttentionHistory& a) {
    int n = a.query_pos.empty() ? 0 : a.query_pos.back() + 1;
    for (const std::vector<float>& row : a.rows) n = std::max(n, int(row.size()) / std::max(a.n_head, 1));
    return n;
}

void truncate_attention(AttentionHistory& a, int n) {
    const size_t keep = count_before(a.query_pos, n);
    a.query_pos.resize(keep);
    a.rows.resize(keep);
    if (a.has_sinks) a.sink.resize(keep);
    a.n_key = key_count(a);
}

void recompute_max(ResidualHistory& r) {
    r.max_abs = 0;
    for (size_t i = 0; i < r.token_max_abs.size(); ++i) {
        if (r.token_max_abs[i] > r.max_abs || i == 0) {
            r.max_abs = r.token_max_abs[i];
            r.max_token = r.positions[i];
            r.max_channel = r.token_channel[i];
        }
    }
}

void truncate_residual(ResidualHistory& r, int n) {
    const size_t keep = count_before(r.positions, n);
    r.positions.resize(keep);
    r.token_max_abs.resize(keep);
    r.token_channel.resize(keep);
    recompute_max(r);
}

void truncate_routing(RoutingHistory& r, int n) {
    const size_t keep = count_before(r.positions, n);
    r.positions.resize(keep);
    r.experts.resize(keep * size_t(r.top_k));
    r.weights.resize(keep * size_t(r.top_k));
    r.prompt.resize(keep);
}

template <class H>
H& layer_entry(std::vector<H>& v, int layer) {
    for (H& h : v)
        if (h.layer == layer) return h;
    v.push_back(H{});
    v.back().layer = layer;
    std::sort(v.begin(), v.end(), [](const H& a, const H& b) { return a.layer < b.layer; });
    for (H& h : v)
        if (h.layer == layer) return h;
    return v.back();  // not reached
}

void add_attention(AttentionHistory& h, const AttentionMap& m) {
    if (m.query_pos.empty()) return;
    truncate_attention(h, m.query_pos.front());
    h.n_head = m.n_head;
    h.window = m.window;
    h.chunk = m.chunk;
    h.causal = m.causal;
    h.has_sinks = !m.sink.empty();
    const int nq = m.n_query(), nk = m.n_key();
    for (int q = 0; q < nq; ++q) {
        const int width = m.causal ? std::min(nk, m.query_pos[size_t(q)] + 1) : nk;
        std::vector<float> row(size_t(m.n_head) * size_t(width));
        for (int head = 0; head < m.n_head; ++head)
            for (int k = 0; k < width; ++k) row[size_t(head) * size_t(width) + size_t(k)] = m.at(head, q, k);
        h.query_pos.push_back(m.query_pos[size_t(q)]);
        h.rows.push_back(std::move(row));
        if (h.has_sinks) {
            std::vector<float> s(size_t(m.n_head));
            for (int head = 0; head < m.n_head; ++head) s[size_t(head)] = m.sink[size_t(head) * size_t(nq) + size_t(q)];
            h.sink.push_back(std::move(s));
        }
    }
    h.n_key = key_count(h);
}

void truncate_state(StateHistory& s, int n) {
    const size_t keep = count_before(s.positions, n);
    s.positions.resize(keep);
    s.norm.resize(keep);
    s.decay.resize(keep);
}

void add_state(std::vector<StateHistory>& all, const StateProbe& p) {
    auto it = std::find_if(all.begin(), all.end(), [&](const StateHistory& s) { return s.layer == p.layer && s.head == p.head; });
    if (it == all.end()) {
        StateHistory s;
        s.layer = p.layer, s.head = p.head, s.kind = p.kind;
        all.push_back(std::move(s));
        std::sort(all.begin(), all.end(),
                  [](const StateHistory& a, const StateHistory& b) { return std::pair(a.layer, a.head) < std::pair(b.layer, b.head); });
        it = std::find_if(all.begin(), all.end(), [&](const StateHistory& s) { return s.layer == p.layer && s.head == p.head; });
    }
    if (!p.positions.empty()) truncate_state(*it, p.positions.front());
    it->positions.insert(it->positions.end(), p.positions.begin(), p.positions.end());
    it->norm.insert(it->norm.end(), p.norm.begin(), p.norm.end());
    it->decay.insert(it->decay.end(), p.decay.begin(), p.decay.end());
}

void add_residual(ResidualHistory& h, const ResidualStat& s, int first_pos) {
    truncate_residual(h, first_pos);
    for (size_t i = 0; i < s.token_max_abs.size(); ++i) {
        h.positions.push_back(first_pos + int(i));
        h.token_max_abs.push_back(s.token_max_abs[i]);
        h.token_channel.push_back(i < s.token_channel.size() ? s.token_channel[i] : 0);
    }
    recompute_max(h);
    if (h.max_token == s.token || s.max_abs >= h.max_abs) h.median_abs = s.median_abs;
}

void truncate_residual_full(ResidualTensor& t, int n) {
    const size_t keep = count_before(t.positions, n);
    t.positions.resize(keep);
    t.values.resize(keep * size_t(t.n_embd));
}

void add_residual_full(ResidualTensor& h, const ResidualTensor& t) {
    if (t.positions.empty()) return;
    if (h.n_embd != t.n_embd) h.positions.clear(), h.values.clear();
    h.n_embd = t.n_embd;
    truncate_residual_full(h, t.positions.front());
    h.positions.insert(h.positions.end(), t.positions.begin(), t.positions.end());
    h.values.insert(h.values.end(), t.values.begin(), t.values.end());
}

void add_routing(RoutingHistory& h, const RoutingProbe& r, bool is_prompt) {
    if (r.positions.empty()) return;
    truncate_routing(h, r.positions.front());
    h.top_k = r.top_k;
    h.positions.insert(h.positions.end(), r.positions.begin(), r.positions.end());
    h.experts.insert(h.experts.end(), r.experts.begin(), r.experts.end());
    h.weights.insert(h.weights.end(), r.weights.begin(), r.weights.end());
    h.prompt.insert(h.prompt.end(), r.positions.size(), is_prompt);
}

void add_ffn_down(std::vector<FfnDownStat>& all, const FfnDownStat& s) {
    for (FfnDownStat& f : all) {
        if (f.layer != s.layer || f.expert != s.expert) continue;
        if (s.in_max_abs > f.in_max_abs) {
            f.in_max_abs = s.in_max_abs, f.in_token = s.in_token, f.in_channel = s.in_channel;
            f.in_median_abs = s.in_median_abs;
        }
        if (s.out_max_abs > f.out_max_abs) {
            f.out_max_abs = s.out_max_abs, f.out_token = s.out_token, f.out_channel = s.out_channel;
            f.out_median_abs = s.out_median_abs;
        }
        return;
    }
    all.push_back(s);
}

}  // namespace

ProbeEval truncated_eval(const ProbeEval& e, int n) {
    ProbeEval t = e;
    ProbeResults& r = t.results;
    for (AttentionMap& m : r.attention) {
        const size_t nq = count_before(m.query_pos, n), nk = count_before(m.key_pos, n);
        std::vector<float> probs(size_t(m.n_head) * nq * nk), sink;
        for (int h = 0; h < m.n_head; ++h)
            for (size_t q = 0; q < nq; ++q) {
                for (size_t k = 0; k < nk; ++k) probs[(size_t(h) * nq + q) * nk + k] = m.at(h, int(q), int(k));
                if (!m.sink.empty()) sink.push_back(m.sink[size_t(h) * size_t(m.n_query()) + q]);
            }
        m.query_pos.resize(nq);
        m.key_pos.resize(nk);
        m.probs = std::move(probs);
        m.sink = std::move(sink);
    }
    std::erase_if(r.attention, [](const AttentionMap& m) { return m.query_pos.empty(); });
    const size_t keep = size_t(std::clamp(n - e.first_pos, 0, e.n_tokens));
    for (ResidualStat& s : r.residual) {
        s.token_max_abs.resize(std::min(keep, s.token_max_abs.size()));
        s.token_channel.resize(std::min(keep, s.token_channel.size()));
        for (size_t i = 0; i < s.token_max_abs.size(); ++i)
            if (i == 0 || s.token_max_abs[i] > s.max_abs) {
                s.max_abs = s.token_max_abs[i];
                s.token = e.first_pos + int(i);
                s.channel = i < s.token_channel.size() ? s.token_channel[i] : 0;
            }
        std::erase_if(s.top, [n](const ResidualEntry& x) { return x.token >= n; });
    }
    for (ResidualTensor& x : r.residual_full) truncate_residual_full(x, n);
    std::erase_if(r.ffn_down, [n](const FfnDownStat& f) { return f.in_token >= n || f.out_token >= n; });
    for (RoutingProbe& p : r.routing) {
        const size_t k = count_before(p.positions, n);
        p.positions.resize(k);
        p.experts.resize(k * size_t(p.top_k));
        p.weights.resize(k * size_t(p.top_k));
    }
    std::erase_if(r.logit_lens, [n](const LogitLens& l) { return l.position >= n; });
    if (LogitLensGrid& g = r.logit_lens_grid; !g.empty()) {
        // Columns are positions in increasing order: keep the first `cols` of each row.
        const size_t cols = count_before(g.positions, n), k = size_t(g.top_k);
        std::vector<LensToken> kept;
        for (int i = 0; i < g.rows(); ++i)
            kept.insert(kept.end(), g.cells.begin() + std::ptrdiff_t(size_t(i) * g.positions.size() * k),
                        g.cells.begin() + std::ptrdiff_t((size_t(i) * g.positions.size() + cols) * k));
        g.positions.resize(cols);
        g.cells = std::move(kept);
        if (cols == 0) g = LogitLensGrid();
    }
    for (AttentionTopK& a : r.attention_top_k) {
        const size_t q = count_before(a.query_pos, n);
        a.query_pos.resize(q);
        a.key_pos.resize(q * size_t(a.k));
        a.probs.resize(q * size_t(a.k));
    }
    std::erase_if(r.attention_top_k, [](const AttentionTopK& a) { return a.query_pos.empty(); });
    // A thumbnail's cells pool several rows: one that held a dropped row cannot be cut exactly.
    if (n < e.first_pos + e.n_tokens) r.attention_thumbnails.clear();
    t.n_tokens = int(keep);
    return t;
}

void ProbeHistory::add_step(const ProbeResults& step, int first_pos, int n_tokens, bool is_prompt) {
    truncate(first_pos);
    for (const AttentionMap& m : step.attention) add_attention(layer_entry(attention, m.layer), m);
    for (const ResidualStat& s : step.residual) add_residual(layer_entry(residual, s.layer), s, first_pos);
    for (const RoutingProbe& r : step.routing) add_routing(layer_entry(routing, r.layer), r, is_prompt || n_tokens > 1);
    for (const FfnDownStat& f : step.ffn_down) add_ffn_down(ffn_down, f);
    for (const ResidualTensor& t : step.residual_full) add_residual_full(layer_entry(residual_full, t.layer), t);
    for (const StateProbe& p : step.state) add_state(state, p);
    for (const AttentionMap& m : step.state_maps) {
        size_t i = 0;
        while (i < state_maps.size() && !(state_maps[i].layer == m.layer && state_map_heads[i] == m.head)) ++i;
        if (i == state_maps.size()) {
            state_maps.push_back(AttentionHistory{});
            state_maps.back().layer = m.layer;
            state_map_heads.push_back(m.head);
        }
        add_attention(state_maps[i], m);
    }
    if (!step.logit_lens.empty()) {
        logit_lens = step.logit_lens;
        // The eval's positions replace what the history had there: every column of its grid
        // (the newest position alone without one).
        std::erase_if(lens_history, [first_pos](const LogitLens& l) { return l.position >= first_pos; });
        const LogitLensGrid& g = step.logit_lens_grid;
        if (g.empty()) {
            lens_history.insert(lens_history.end(), step.logit_lens.begin(), step.logit_lens.end());
        } else {
            for (int c = 0; c < g.cols(); ++c)
                for (int i = 0; i < g.rows(); ++i) {
                    LogitLens l;
                    l.layer = g.layers[size_t(i)];
                    l.position = g.positions[size_t(c)];
                    const LensToken* cell = g.cell(i, c);
                    for (int t = 0; t < g.top_k; ++t)
                        if (cell[t].id >= 0) l.top.push_back(cell[t]);
                    lens_history.push_back(std::move(l));
                }
        }
    }
    evals.push_back(std::make_shared<const ProbeEval>(ProbeEval{step, first_pos, n_tokens}));
    timings = step.timings;
    if (is_prompt || n_tokens > 1) prompt_timings = step.timings;
    expert_load_prefill = step.expert_load_prefill;
    expert_load_decode = step.expert_load_decode;
    expert_load_step = step.expert_load_step;
    ++steps;
}

void ProbeHistory::truncate(int n) {
    for (AttentionHistory& a : attention) truncate_attention(a, n);
    for (ResidualHistory& r : residual) truncate_residual(r, n);
    for (RoutingHistory& r : routing) truncate_routing(r, n);
    for (ResidualTensor& t : residual_full) truncate_residual_full(t, n);
    for (StateHistory& s : state) truncate_state(s, n);
    for (AttentionHistory& a : state_maps) truncate_attention(a, n);
    std::erase_if(lens_history, [n](const LogitLens& l) { return l.position >= n; });
    std::erase_if(ffn_down, [n](const FfnDownStat& f) { return f.in_token >= n || f.out_token >= n; });
    std::erase_if(evals, [n](const auto& e) { return e->first_pos >= n; });
    if (!evals.empty() && evals.back()->first_pos + evals.back()->n_tokens > n)
        evals.back() = std::make_shared<const ProbeEval>(truncated_eval(*evals.back(), n));
}

ProbeResults ProbeHistory::as_results() const {
    ProbeResults r;
    for (const AttentionHistory& a : attention) {
        AttentionMap m;
        m.layer = a.layer;
        m.n_head = a.n_head;
        m.window = a.window;
        m.chunk = a.chunk;
        m.causal = a.causal;
        m.query_pos = a.query_pos;
        for (int k = 0; k < a.n_key; ++k) m.key_pos.push_back(k);
        const size_t nq = a.query_pos.size(), nk = size_t(a.n_key);
        m.probs.assign(size_t(a.n_head) * nq * nk, 0.0f);
        for (int h = 0; h < a.n_head; ++h)
            for (size_t q = 0; q < nq; ++q)
                for (size_t k = 0; k < nk; ++k) m.probs[(size_t(h) * nq + q) * nk + k] = a.at(h, int(q), int(k));
        if (a.has_sinks) {
            m.sink.assign(size_t(a.n_head) * nq, 0.0f);
            for (int h = 0; h < a.n_head; ++h)
                for (size_t q = 0; q < nq; ++q) m.sink[size_t(h) * nq + q] = a.sink_at(h, int(q));
        }
        r.attention.push_back(std::move(m));
    }
    for (const ResidualHistory& h : residual) {
        ResidualStat s;
        s.layer = h.layer;
        s.max_abs = h.max_abs;
        s.token = h.max_token;
        s.channel = h.max_channel;
        s.median_abs = h.median_abs;
        s.token_max_abs = h.token_max_abs;
        s.token_channel = h.token_channel;
        r.residual.push_back(std::move(s));
    }
    r.residual_full = residual_full;
    r.ffn_down = ffn_down;
    for (const RoutingHistory& h : routing) r.routing.push_back({h.layer, h.top_k, h.positions, h.experts, h.weights});
    r.logit_lens = logit_lens;
    r.timings = timings;
    r.expert_load_prefill = expert_load_prefill;
    r.expert_load_decode = expert_load_decode;
    r.expert_load_step = expert_load_step;
    return r;
}

const AttentionHistory* ProbeHistory::attention_layer(int layer) const {
    for (const AttentionHistory& a : attention)
        if (a.layer == layer) return &a;
    return nullptr;
}

const AttentionHistory* ProbeHistory::state_map(int layer, int head) const {
    for (size_t i = 0; i < state_maps.size(); ++i)
        if (state_maps[i].layer == layer && state_map_heads[i] == head) return &state_maps[i];
    return nullptr;
}

const RoutingHistory* ProbeHistory::routing_layer(int layer) const {
    for (const RoutingHistory& r : routing)
        if (r.layer == layer) return &r;
    return nullptr;
}

}  // namespace vkllm::studio
