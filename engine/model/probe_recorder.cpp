// The probes' buffers and the copies a pass records into them.
#include "model/probe_recorder.h"

#include <algorithm>
#include <stdexcept>
#include <string>

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
    : ctx_(ctx), spec_(spec), w_(w), kv_(kv), n_batch_(n_batch) {
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
    if (!probes.attention_layers.empty() && probes.attention_max_rows < 1)
        throw std::invalid_argument("attention_max_rows must be at least 1");
    const int rows_cap = std::min(n_batch_, std::max(probes.attention_max_rows, 1));
    if (probes.attention_layers != probed_layers_ || rows_cap != attn_rows_cap_) {
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
    if (probes.logit_lens_layers != lens_layers_) {
        lens_layers_ = probes.logit_lens_layers;
        lens_ = Lens();
        if (!lens_layers_.empty()) {
            const uint64_t n = lens_layers_.size();
            lens_.x = gpu::Buffer(ctx_, n * E * F, gpu::Memory::Device);
            lens_.h = gpu::Buffer(ctx_, n * E * F, gpu::Memory::Device);
            lens_.logits = gpu::Buffer(ctx_, n * uint64_t(spec_.n_vocab) * F, gpu::Memory::Device);
            lens_.host = gpu::Buffer(ctx_, n * uint64_t(spec_.n_vocab) * F, gpu::Memory::Host);
        }
    }
}

uint64_t ProbeRecorder::bytes() const {
    uint64_t n = residual_host_.size() + lens_.x.size() + lens_.h.size() + lens_.logits.size() + lens_.host.size();
    for (const auto* v : {&probs_, &probs_host_, &ffn_in_host_, &ffn_out_host_, &moe_in_host_, &moe_out_host_,
                          &routing_host_})
        for (const gpu::Buffer& b : *v) n += b.size();
    for (const auto& layer : residual_acc_) n += layer.size() * F;
    for (const auto& layer : down_acc_)
        for (const auto& [e, d] : layer) n += (d.in.size() + d.out.size()) * F + d.pos.size() * sizeof(int);
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
        s.mark("copy");
        s.copy(x, uint64_t(T - 1) * row, lens_.x, uint64_t(lens - lens_layers_.begin()) * row, row);
    }
}

}  // namespace vkllm::model
