// The state probes' buffers, taps and reads (probe_state.h).
#include "model/probe_state.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "ops/state_probe_ops.h"

namespace vkllm::model {
namespace {

constexpr uint64_t F = sizeof(float);

// A layer with a recurrent state: a Mamba-2 or Mamba-1 mixer (alone, or beside attention as in
// Falcon-H1), RWKV-7's time mix, or Gated DeltaNet (its sizes in SsmSpec).
bool rwkv(const LayerSpec& L) { return L.mixer == LayerMixer::Rwkv7; }
bool delta(const LayerSpec& L) { return L.ssm.enabled() && L.ssm.delta_net; }
bool mamba2(const LayerSpec& L) { return !rwkv(L) && !delta(L) && L.ssm.enabled() && !L.ssm.mamba1(); }
bool recurrent(const LayerSpec& L) { return rwkv(L) || L.ssm.enabled(); }
// Layers with a mixing map: a scalar decay per head (Mamba-2), or the delta rule's.
bool mapped_kind(const LayerSpec& L) { return mamba2(L) || delta(L); }

int probed_heads(const LayerSpec& L) {
    if (rwkv(L)) return int(L.rwkv.n_head());
    if (!L.ssm.enabled()) return 0;
    return L.ssm.mamba1() ? 1 : L.ssm.n_head;  // Mamba-1's decay is per channel: one head over the state
                                               // (Gated DeltaNet: its value heads)
}

// The recurrence a trace comes from, named by its mechanism: RWKV-7's wkv7, Mamba-2's state-space
// dual (scalar decay per head), Mamba-1's selective scan (decay per channel), Gated DeltaNet's
// gated delta rule.
const char* kind_name(const LayerSpec& L) {
    return rwkv(L) ? "wkv7" : delta(L) ? "delta_net" : mamba2(L) ? "ssd" : "selective_scan";
}

// Floats of the state a layer's work buffer copies.
int64_t state_floats(const LayerSpec& L) {
    if (rwkv(L)) return L.rwkv.n_embd * L.rwkv.head_size;
    return int64_t(L.ssm.d_inner) * L.ssm.d_state;
}

// A Gated DeltaNet layer's key rows, after the state copy in its work buffer: per position the
// operands its mixing map reads, in four regions of key_rows rows each: q and k [n_head_k d_k],
// g [n_head_v d_k] (wide enough for a decay per key row), beta [n_head_v]. Offsets in floats.
struct DeltaKeyRows {
    int64_t qk = 0, g = 0, beta = 0;  // row widths
    uint64_t q = 0, k = 0, g_at = 0, beta_at = 0, end = 0;
    DeltaKeyRows(const SsmSpec& S, int64_t key_rows) {
        qk = int64_t(S.n_group) * S.d_state, g = int64_t(S.n_head) * S.d_state, beta = S.n_head;
        const uint64_t R = uint64_t(key_rows);
        q = uint64_t(S.d_inner) * uint64_t(S.d_state);
        k = q + R * uint64_t(qk);
        g_at = k + R * uint64_t(qk);
        beta_at = g_at + R * uint64_t(g);
        end = beta_at + R * uint64_t(beta);
    }
};

// Floats of a layer's work buffer: the state copy, then the key rows its maps need.
uint64_t work_floats(const LayerSpec& S, int n_head, int key_rows) {
    if (delta(S)) return DeltaKeyRows(S.ssm, key_rows).end;
    const int64_t gs = int64_t(S.ssm.n_group) * S.ssm.d_state;
    return ops::state_work_floats(state_floats(S), n_head, gs, key_rows);
}

// The layers a configuration probes, in layer order: (layer, reported in ProbeResults::state).
std::vector<std::pair<int, bool>> planned_layers(const ModelSpec& spec, const ProbeConfig& p) {
    std::vector<std::pair<int, bool>> out;
    for (int l = 0; l < spec.n_layer; ++l) {
        const bool report = recurrent(spec.layers[size_t(l)]) &&
                            (p.state || std::find(p.state_layers.begin(), p.state_layers.end(), l) != p.state_layers.end());
        const bool mapped = std::any_of(p.state_maps.begin(), p.state_maps.end(),
                                        [&](const AttentionHead& h) { return h.layer == l; });
        if (report || mapped) out.emplace_back(l, report);
    }
    return out;
}

}  // namespace

void StateProbeRecorder::check(const ProbeConfig& probes) const {
    for (int l : probes.state_layers) {
        if (l < 0 || l >= spec_.n_layer)
            throw std::invalid_argument("state probe layer " + std::to_string(l) + " is outside 0.." +
                                        std::to_string(spec_.n_layer - 1));
        if (!recurrent(spec_.layers[size_t(l)]))
            throw std::invalid_argument("state probe layer " + std::to_string(l) +
                                        " has no recurrent state (not a Mamba, RWKV-7 or Gated DeltaNet layer)");
    }
    for (const AttentionHead& h : probes.state_maps) {
        const std::string name = "state map " + std::to_string(h.layer) + ":" + std::to_string(h.head);
        if (h.layer < 0 || h.layer >= spec_.n_layer)
            throw std::invalid_argument(name + ": layer is outside 0.." + std::to_string(spec_.n_layer - 1));
        const LayerSpec& L = spec_.layers[size_t(h.layer)];
        if (!mapped_kind(L))
            throw std::invalid_argument(name +
                                        ": only Mamba-2 (a scalar decay per head) and Gated DeltaNet layers have a "
                                        "mixing map");
        if (h.head < 0 || h.head >= L.ssm.n_head)
            throw std::invalid_argument(name + ": head is outside 0.." + std::to_string(L.ssm.n_head - 1));
        if (h.query_first < 0 || h.query_count < 0 || h.key_first < 0 || h.key_count < 0)
            throw std::invalid_argument(name + ": a tile's first positions and counts must be >= 0");
    }
    if (!probes.state_maps.empty() && probes.state_map_positions < 1)
        throw std::invalid_argument("state_map_positions must be at least 1");
}

void StateProbeRecorder::configure(const ProbeConfig& probes) {
    const auto plan = planned_layers(spec_, probes);
    std::vector<int> ids;
    for (const auto& p : plan) ids.push_back(p.first);
    const bool same_maps =
        map_positions_ == probes.state_map_positions && map_heads_.size() == probes.state_maps.size() &&
        std::equal(map_heads_.begin(), map_heads_.end(), probes.state_maps.begin(),
                   [](const AttentionHead& a, const AttentionHead& b) { return a.layer == b.layer && a.head == b.head; });
    if (ids == layer_ids_ && same_maps) {
        for (size_t i = 0; i < plan.size(); ++i) layers_[i].report = plan[i].second;
        for (size_t i = 0; i < maps_.size(); ++i) maps_[i].head = probes.state_maps[i];  // tiles may change
        return;
    }
    layer_ids_ = ids;
    map_heads_ = probes.state_maps;
    map_positions_ = probes.state_map_positions;
    layers_.clear();
    maps_.clear();
    const uint64_t B = uint64_t(n_batch_);
    for (const auto& [l, report] : plan) {
        const LayerSpec& S = spec_.layers[size_t(l)];
        Layer L;
        L.layer = l, L.n_head = probed_heads(S), L.report = report;
        const bool mapped = std::any_of(map_heads_.begin(), map_heads_.end(),
                                        [&](const AttentionHead& h) { return h.layer == l; });
        L.key_rows = mapped ? map_positions_ : 0;
        const uint64_t out = B * uint64_t(L.n_head) * 2 * F;
        L.out = gpu::Buffer(ctx_, out, gpu::Memory::Device);
        L.out_host = gpu::Buffer(ctx_, out, gpu::Memory::Host);
        L.work = gpu::Buffer(ctx_, work_floats(S, L.n_head, L.key_rows) * F, gpu::Memory::Device);
        layers_.push_back(std::move(L));
    }
    for (const AttentionHead& h : map_heads_) {
        Map m;
        m.head = h;
        m.layer_index = size_t(std::find(layer_ids_.begin(), layer_ids_.end(), h.layer) - layer_ids_.begin());
        const uint64_t rows = B * uint64_t(map_positions_) * F;
        m.rows = gpu::Buffer(ctx_, rows, gpu::Memory::Device);
        m.rows_host = gpu::Buffer(ctx_, rows, gpu::Memory::Host);
        maps_.push_back(std::move(m));
    }
}

uint64_t StateProbeRecorder::host_bytes(const ProbeConfig& probes, uint64_t tokens) const {
    uint64_t n = 0;
    for (const auto& [l, report] : planned_layers(spec_, probes))
        n += (uint64_t(n_batch_) + (report ? tokens : 0)) * uint64_t(probed_heads(spec_.layers[size_t(l)])) * 2 * F;
    const uint64_t P = uint64_t(std::max(probes.state_map_positions, 1));
    // Per map: a pass's rows, and the eval's map of at most P x P positions.
    n += uint64_t(probes.state_maps.size()) * (uint64_t(n_batch_) * P + P * P) * F;
    return n;
}

uint64_t StateProbeRecorder::bytes() const {
    uint64_t n = 0;
    for (const Layer& L : layers_) n += L.out.size() + L.out_host.size() + L.work.size();
    for (const Map& m : maps_) n += m.rows.size() + m.rows_host.size() + m.values.size() * F;
    return n;
}

const StateProbeRecorder::Layer* StateProbeRecorder::find(int layer) const {
    for (const Layer& L : layers_)
        if (L.layer == layer) return &L;
    return nullptr;
}

void StateProbeRecorder::copy_out(gpu::Stream& s, const Layer& L, int n_tokens) const {
    s.copy(L.out, 0, L.out_host, 0, uint64_t(n_tokens) * uint64_t(L.n_head) * 2 * F);
    L.tokens = n_tokens;
}

void StateProbeRecorder::tap_mamba2(gpu::Stream& s, int layer, int pos0, const ops::SsmScanArgs& scan) const {
    const Layer* found = find(layer);
    if (!found) return;
    const Layer& L = *found;
    const SsmSpec& S = spec_.layers[size_t(layer)].ssm;
    const int T = int(scan.x.rows);
    ops::SsmStateScanArgs a;
    a.n_head = S.n_head, a.n_group = S.n_group;
    a.state = scan.state, a.x = scan.x, a.b = scan.b, a.dt = scan.dt, a.dt_bias = scan.dt_bias, a.a = scan.a;
    a.out = ops::f32_rows(L.out, T, int64_t(L.n_head) * 2);
    a.work = ops::f32_rows(L.work, 1, int64_t(work_floats(spec_.layers[size_t(layer)], L.n_head, L.key_rows)));
    if (place_keys(L, pos0, T)) a.keys = {L.key_rows, L.map_first, L.map_first > 0};
    s.mark("state_probe");
    ops::ssm_state_scan(s, a);
    s.barrier("the state probe has read the state and written its keys before the scan and the maps");
    if (L.map_rows > 0) {
        for (const Map& m : maps_) {
            if (m.head.layer != layer) continue;
            ops::SsmMixMapArgs mm;
            mm.n_head = S.n_head, mm.n_group = S.n_group, mm.d_state = S.d_state;
            mm.state_floats = state_floats(spec_.layers[size_t(layer)]);
            mm.head = m.head.head;
            mm.c = scan.c;
            mm.c.rows = L.map_rows;
            mm.work = a.work;
            mm.map = ops::f32_rows(m.rows, L.map_rows, L.key_rows);
            mm.keys = a.keys;
            ops::ssm_mix_map(s, mm);
        }
        s.barrier("the mixing maps are complete before their copies");
        for (const Map& m : maps_)
            if (m.head.layer == layer)
                s.copy(m.rows, 0, m.rows_host, 0, uint64_t(L.map_rows) * uint64_t(L.key_rows) * F);
    }
    copy_out(s, L, T);
}

bool StateProbeRecorder::place_keys(const Layer& L, int pos0, int T) const {
    L.map_rows = 0;
    if (L.key_rows == 0) return false;
    // Key rows continue while the passes do; a jump (or position 0) starts them over, and a
    // truncated session overwrites the rows past its new end.
    if (pos0 == 0 || pos0 < L.key_base || pos0 > L.key_next) {
        L.key_base = pos0;
        L.key_filled = 0;
    }
    L.key_filled = std::min(L.key_filled, pos0 - L.key_base);
    L.key_next = pos0 + T;
    const int first = pos0 - L.key_base;
    if (first >= L.key_rows) return false;
    L.map_first = first;
    L.map_rows = std::min(T, L.key_rows - first);
    L.key_filled = first + L.map_rows;
    return true;
}

void StateProbeRecorder::tap_delta_net(gpu::Stream& s, int layer, int pos0, const ops::GatedDeltaNetArgs& d) const {
    const Layer* found = find(layer);
    if (!found) return;
    const Layer& L = *found;
    const LayerSpec& spec = spec_.layers[size_t(layer)];
    const int T = int(d.q.rows);
    ops::DeltaNetStateScanArgs a;
    a.layer = d;
    a.out = ops::f32_rows(L.out, T, int64_t(L.n_head) * 2);
    a.work = ops::f32_rows(L.work, 1, state_floats(spec));
    s.mark("state_probe");
    ops::delta_net_state_scan(s, a);
    if (place_keys(L, pos0, T)) {
        // The pass's operands into their key rows; the maps then read every row so far.
        const DeltaKeyRows kr(spec.ssm, L.key_rows);
        const uint64_t first = uint64_t(L.map_first), rows = uint64_t(L.map_rows);
        auto keep = [&](const ops::TensorView& v, uint64_t at, int64_t width) {
            s.copy_rows(*v.buffer, v.offset, uint64_t(v.stride()) * F, L.work, (at + first * uint64_t(width)) * F,
                        uint64_t(width) * F, uint64_t(v.cols) * F, rows);
        };
        keep(d.q, kr.q, kr.qk);
        keep(d.k, kr.k, kr.qk);
        keep(d.g, kr.g_at, kr.g);
        keep(d.beta, kr.beta_at, kr.beta);
        for (const Map& m : maps_)
            if (m.head.layer == layer) s.fill_zero(m.rows, 0, rows * uint64_t(L.key_rows) * F);
        s.barrier("the key rows and the cleared map rows are complete before the maps");
        const int64_t filled = int64_t(first + rows);
        ops::DeltaNetMixMapArgs mm;
        mm.layer = d;
        mm.layer.q = ops::f32_rows(L.work, filled, kr.qk, kr.q);
        mm.layer.k = ops::f32_rows(L.work, filled, kr.qk, kr.k);
        mm.layer.g = ops::f32_rows(L.work, filled, d.g.cols, kr.g_at, kr.g);
        mm.layer.beta = ops::f32_rows(L.work, filled, kr.beta, kr.beta_at);
        mm.q_first = int64_t(first);
        for (const Map& m : maps_) {
            if (m.head.layer != layer) continue;
            mm.head = m.head.head;
            mm.map = ops::f32_rows(m.rows, int64_t(rows), filled, 0, L.key_rows);
            ops::delta_net_mix_map(s, mm);
        }
    }
    s.barrier("the state probe has read the state (and the maps are complete) before the delta rule and the copies");
    if (L.map_rows > 0)
        for (const Map& m : maps_)
            if (m.head.layer == layer)
                s.copy(m.rows, 0, m.rows_host, 0, uint64_t(L.map_rows) * uint64_t(L.key_rows) * F);
    copy_out(s, L, T);
}

void StateProbeRecorder::tap_mamba1(gpu::Stream& s, int layer, const ops::SsmScanMamba1Args& scan) const {
    const Layer* found = find(layer);
    if (!found) return;
    const Layer& L = *found;
    const int T = int(scan.x.rows);
    ops::SsmStateScanArgs a;
    a.mamba1 = true;
    a.state = scan.state, a.x = scan.x, a.b = scan.b, a.dt = scan.dt, a.a = scan.a;
    a.out = ops::f32_rows(L.out, T, 2);
    a.work = ops::f32_rows(L.work, 1, state_floats(spec_.layers[size_t(layer)]));
    s.mark("state_probe");
    ops::ssm_state_scan(s, a);
    s.barrier("the state probe has read the state before the scan overwrites it");
    copy_out(s, L, T);
}

void StateProbeRecorder::tap_rwkv7(gpu::Stream& s, int layer, const ops::RwkvWkv7Args& wkv) const {
    const Layer* found = find(layer);
    if (!found) return;
    const Layer& L = *found;
    const int T = int(wkv.w.rows);
    ops::Rwkv7StateScanArgs a;
    a.n_head = wkv.n_head, a.head_size = wkv.head_size;
    a.state = wkv.state, a.w = wkv.w, a.k = wkv.k, a.v = wkv.v, a.a = wkv.a, a.b = wkv.b;
    a.out = ops::f32_rows(L.out, T, int64_t(L.n_head) * 2);
    a.work = ops::f32_rows(L.work, 1, state_floats(spec_.layers[size_t(layer)]));
    s.mark("state_probe");
    ops::rwkv7_state_scan(s, a);
    s.barrier("the state probe has read the state before wkv7 overwrites it");
    copy_out(s, L, T);
}

void StateProbeRecorder::read(int T, int pos0, ProbeResults* results, bool first_pass) {
    if (first_pass) {
        results->state.clear();
        results->state_maps.clear();
        for (Map& m : maps_) {
            m.query_pos.clear();
            m.values.clear();
        }
    }
    for (const Layer& L : layers_) {
        if (!L.report || L.tokens != T) continue;
        const float* v = static_cast<const float*>(L.out_host.mapped());
        const char* kind = kind_name(spec_.layers[size_t(L.layer)]);
        for (int h = 0; h < L.n_head; ++h) {
            auto it = std::find_if(results->state.begin(), results->state.end(),
                                   [&](const StateProbe& p) { return p.layer == L.layer && p.head == h; });
            if (it == results->state.end()) {
                StateProbe p;
                p.layer = L.layer, p.head = h, p.kind = kind;
                it = results->state.insert(results->state.end(), std::move(p));
            }
            for (int t = 0; t < T; ++t) {
                it->positions.push_back(pos0 + t);
                it->norm.push_back(v[(size_t(t) * size_t(L.n_head) + size_t(h)) * 2]);
                it->decay.push_back(v[(size_t(t) * size_t(L.n_head) + size_t(h)) * 2 + 1]);
            }
        }
    }
    for (Map& m : maps_) {
        const Layer& L = layers_[m.layer_index];
        if (L.map_rows > 0 && L.tokens == T) {
            if (m.query_pos.empty() || m.base != L.key_base) {
                m.query_pos.clear();
                m.values.clear();
                m.base = L.key_base;
            }
            const float* v = static_cast<const float*>(m.rows_host.mapped());
            for (int t = 0; t < L.map_rows; ++t) m.query_pos.push_back(L.key_base + L.map_first + t);
            m.values.insert(m.values.end(), v, v + size_t(L.map_rows) * size_t(L.key_rows));
        }
    }
    results->state_maps.resize(maps_.size());
    for (size_t i = 0; i < maps_.size(); ++i) build_map(maps_[i], results->state_maps[i]);
    for (const Layer& L : layers_) L.tokens = 0, L.map_rows = 0;
}

// The map cut to its tile: rows of the query positions in the tile, keys from key_first to the
// newest row's position (at most key_count); keys outside the stored rows hold 0.
void StateProbeRecorder::build_map(const Map& m, AttentionMap& out) const {
    const Layer& L = layers_[m.layer_index];
    const AttentionHead& h = m.head;
    out = AttentionMap();
    out.kind = MapKind::StateMixing;
    out.layer = h.layer, out.n_head = 1, out.head = h.head, out.causal = true;
    if (m.query_pos.empty()) return;
    const int newest = m.query_pos.back();
    const int k0 = h.key_first;
    const int k1 = std::max(k0, h.key_count > 0 ? std::min(newest + 1, k0 + h.key_count) : newest + 1);
    for (int k = k0; k < k1; ++k) out.key_pos.push_back(k);
    for (size_t r = 0; r < m.query_pos.size(); ++r) {
        const int q = m.query_pos[r];
        if (q < h.query_first || (h.query_count > 0 && q >= h.query_first + h.query_count)) continue;
        out.query_pos.push_back(q);
        for (int k = k0; k < k1; ++k) {
            const int s = k - m.base;
            out.probs.push_back(s >= 0 && s < L.key_rows ? m.values[r * size_t(L.key_rows) + size_t(s)] : 0.0f);
        }
    }
}

}  // namespace vkllm::model
