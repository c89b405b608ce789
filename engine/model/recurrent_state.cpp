#include "model/recurrent_state.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "gpu/device.h"

namespace vkllm::model {

namespace {
constexpr uint64_t F = sizeof(float);
}

RecurrentState::RecurrentState(gpu::Context& ctx, const ModelSpec& spec, int n_batch) {
    int64_t max_in = 0, max_ch = 0, max_inner = 0, max_x_db = 0, max_dt = 0;
    layers_.resize(spec.layers.size());
    for (size_t l = 0; l < spec.layers.size(); ++l) {
        if (const ShortConvSpec& c = spec.layers[l].shortconv; c.enabled()) {  // LFM2: a conv state only
            Layer& L = layers_[l];
            L.present = true;
            L.conv = gpu::Buffer(ctx, uint64_t(c.channels) * uint64_t(c.l_cache - 1) * F, gpu::Memory::Device);
            max_in = std::max<int64_t>(max_in, c.in_proj_rows());
            max_ch = std::max<int64_t>(max_ch, c.channels);
            max_inner = std::max<int64_t>(max_inner, c.channels);
            continue;
        }
        const SsmSpec& s = spec.layers[l].ssm;
        if (!s.enabled()) continue;
        Layer& L = layers_[l];
        L.present = true;
        L.conv = gpu::Buffer(ctx, std::max<uint64_t>(1, uint64_t(s.conv_channels()) * uint64_t(s.d_conv - 1)) * F,
                             gpu::Memory::Device);
        L.ssm = gpu::Buffer(ctx, uint64_t(s.d_inner) * uint64_t(s.d_state) * F, gpu::Memory::Device);
        max_in = std::max<int64_t>(max_in, s.in_proj_rows());
        max_ch = std::max<int64_t>(max_ch, s.conv_channels());
        max_inner = std::max<int64_t>(max_inner, s.d_inner);
        if (s.mamba1()) {
            max_x_db = std::max<int64_t>(max_x_db, int64_t(s.dt_rank) + 2 * int64_t(s.d_state));
            max_dt = std::max<int64_t>(max_dt, s.d_inner);
        }
    }
    if (max_in > 0) {
        const uint64_t T = uint64_t(std::max(n_batch, 1));
        in_proj_ = gpu::Buffer(ctx, T * uint64_t(max_in) * F, gpu::Memory::Device);
        xbc_ = gpu::Buffer(ctx, T * uint64_t(max_ch) * F, gpu::Memory::Device);
        y_ = gpu::Buffer(ctx, T * uint64_t(max_inner) * F, gpu::Memory::Device);
    }
    if (max_x_db > 0) {
        const uint64_t T = uint64_t(std::max(n_batch, 1));
        x_db_ = gpu::Buffer(ctx, T * uint64_t(max_x_db) * F, gpu::Memory::Device);
        dt_ = gpu::Buffer(ctx, T * uint64_t(max_dt) * F, gpu::Memory::Device);
    }
    // RWKV-7: every layer has the time mix (one spec for the model).
    for (const LayerSpec& L : spec.layers)
        if (L.mixer == LayerMixer::Rwkv7) {
            rwkv_ = RwkvState(ctx, L.rwkv, int(spec.layers.size()), n_batch);
            break;
        }
    zero_ = false;
    reset();
}

void RecurrentState::reset() {
    if (!zero_) {
        for (Layer& L : layers_) {
            if (!L.present) continue;
            L.conv.fill_zero();
            if (L.ssm.valid()) L.ssm.fill_zero();
        }
    }
    rwkv_.reset();
    zero_ = true;
    seen_ = 0;
}

void RecurrentState::begin_pass(int pos0, int n_tokens) {
    if (pos0 == 0) {
        reset();
    } else if (pos0 != seen_ && !empty()) {
        throw std::logic_error("RecurrentState: a pass from position " + std::to_string(pos0) + " after " +
                               std::to_string(seen_) + " positions (truncate and re-evaluate from 0 first)");
    }
    if (n_tokens > 0) zero_ = false;
    seen_ = pos0 + n_tokens;
    if (!rwkv_.empty()) rwkv_.begin_pass(pos0, n_tokens);
}

bool RecurrentState::truncate(int n) {
    if (!rwkv_.empty()) rwkv_.truncate(n);  // the same rule as below: its answer is this one's
    if (n == seen_ || empty()) {
        seen_ = n;
        return true;
    }
    if (n == 0) {
        seen_ = 0;  // begin_pass(0, ...) zeroes the states
        return true;
    }
    seen_ = -1;  // stale until a pass from position 0
    return false;
}

uint64_t RecurrentState::bytes() const {
    uint64_t n = 0;
    for (const Layer& L : layers_)
        if (L.present) n += L.conv.size() + L.ssm.size();
    return n + (rwkv_.empty() ? 0 : rwkv_.bytes());
}

std::vector<const gpu::Buffer*> RecurrentState::state_buffers() const {
    std::vector<const gpu::Buffer*> out;
    for (const Layer& L : layers_) {
        if (!L.present) continue;
        out.push_back(&L.conv);
        if (L.ssm.valid()) out.push_back(&L.ssm);
    }
    rwkv_.append_state_buffers(out);
    return out;
}

void RecurrentState::restored(int n) {
    if (n <= 0) throw std::logic_error("RecurrentState::restored(" + std::to_string(n) + "): a copy holds positions");
    seen_ = n;
    zero_ = false;
    if (!rwkv_.empty()) rwkv_.restored(n);
}

uint64_t RecurrentState::work_bytes() const {
    return (in_proj_.valid() ? in_proj_.size() + xbc_.size() + y_.size() : 0) +
           (x_db_.valid() ? x_db_.size() + dt_.size() : 0) + (rwkv_.empty() ? 0 : rwkv_.work_bytes());
}

}  // namespace vkllm::model
