#include "model/rwkv_state.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "gpu/device.h"

namespace vkllm::model {

namespace {
constexpr uint64_t F = sizeof(float);
}

RwkvState::RwkvState(gpu::Context& ctx, const RwkvSpec& s, int n_layer, int n_batch) : n_batch_(std::max(n_batch, 1)) {
    if (!s.enabled() || n_layer <= 0) return;
    const uint64_t C = uint64_t(s.n_embd), N = uint64_t(s.head_size), T = uint64_t(n_batch_);
    layers_.resize(size_t(n_layer));
    for (Layer& L : layers_) {
        L.shift = gpu::Buffer(ctx, 2 * C * F, gpu::Memory::Device);
        L.wkv = gpu::Buffer(ctx, C * N * F, gpu::Memory::Device);
    }
    auto work = [&](uint64_t floats) { return gpu::Buffer(ctx, std::max<uint64_t>(floats, 1) * F, gpu::Memory::Device); };
    mixed_ = work(6 * T * C);
    proj_ = work(7 * T * C);
    lora_ = work(T * uint64_t(s.lora_width()));
    v_mix_ = work(T * C);
    v_first_ = work(T * C);
    out_ = work(T * C);
    ffn_ = work(T * uint64_t(s.n_ff));
    zero_ = false;
    reset();
}

void RwkvState::reset() {
    if (!zero_)
        for (Layer& L : layers_) {
            L.shift.fill_zero();
            L.wkv.fill_zero();
        }
    zero_ = true;
    seen_ = 0;
}

void RwkvState::begin_pass(int pos0, int n_tokens) {
    if (pos0 == 0) {
        reset();
    } else if (pos0 != seen_ && !empty()) {
        throw std::logic_error("RwkvState: a pass from position " + std::to_string(pos0) + " after " +
                               std::to_string(seen_) + " positions (truncate and re-evaluate from 0 first)");
    }
    if (n_tokens > 0) zero_ = false;
    seen_ = pos0 + n_tokens;
}

bool RwkvState::truncate(int n) {
    if (n == seen_ || empty()) {
        seen_ = n;
        return true;
    }
    if (n == 0) {
        seen_ = 0;
        return true;
    }
    seen_ = -1;  // stale until a pass from position 0
    return false;
}

uint64_t RwkvState::bytes() const {
    uint64_t n = 0;
    for (const Layer& L : layers_) n += L.shift.size() + L.wkv.size();
    return n;
}

void RwkvState::append_state_buffers(std::vector<const gpu::Buffer*>& out) const {
    for (const Layer& L : layers_) {
        out.push_back(&L.shift);
        out.push_back(&L.wkv);
    }
}

void RwkvState::restored(int n) {
    seen_ = n;
    zero_ = false;
}

uint64_t RwkvState::work_bytes() const {
    if (empty()) return 0;
    return mixed_.size() + proj_.size() + lora_.size() + v_mix_.size() + v_first_.size() + out_.size() + ffn_.size();
}

}  // namespace vkllm::model
