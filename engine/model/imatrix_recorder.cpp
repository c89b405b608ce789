// Importance-matrix collection during a forward pass (model/imatrix_recorder.h).
#include "model/imatrix_recorder.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>

#include "gpu/device.h"
#include "ops/imatrix_accumulate.h"

namespace vkllm::model {
namespace {

// llama-imatrix skips matrix products of fewer rows (its callback declines them); stacked experts
// are collected whatever the rows.
constexpr int64_t kMinRows = 16;
constexpr size_t kNotCollected = SIZE_MAX;  // a part of a tensor that is not collected

bool collected(const std::string& name, bool process_output) {
    return name.rfind("blk.", 0) == 0 || (process_output && name == "output.weight");
}

}  // namespace

ImatrixRecorder::ImatrixRecorder(gpu::Context& ctx, const Weights& weights, bool process_output) {
    // Each entry's sums and counts start on a binding boundary, so no two dispatches' windows
    // overlap (the validation layer's hazard checks see whole windows).
    const uint64_t align = std::max<uint64_t>(ctx.caps().min_storage_buffer_offset_alignment, 4) / 4;
    auto round_up = [&](uint64_t n) { return (n + align - 1) / align * align; };
    uint64_t n_sums = 0, n_counts = 0;
    for (const std::string& name : weights.uploaded_names("")) {
        const UploadedMatrix& u = *weights.uploaded(name);
        if (!collected(name, process_output)) {
            // Known, so that no weight sharing a buffer with a collected one is taken for it.
            for (const UploadedPart& p : u.parts) parts_[p.buffer].push_back({p.offset, kNotCollected});
            continue;
        }
        Entry e;
        e.name = name;
        e.n_cols = u.n_in;
        e.n_mat = u.n_expert > 0 ? u.n_expert : 1;
        e.sums_first = n_sums;
        e.counts_first = n_counts;
        n_sums = round_up(n_sums + uint64_t(e.n_cols * e.n_mat));
        n_counts = round_up(n_counts + uint64_t(e.n_mat));
        for (const UploadedPart& p : u.parts) parts_[p.buffer].push_back({p.offset, entries_.size()});
        entries_.push_back(std::move(e));
    }
    for (auto& [buffer, list] : parts_) std::sort(list.begin(), list.end());
    sums_ = gpu::Buffer(ctx, std::max<uint64_t>(n_sums, 1) * 4, gpu::Memory::Device);
    counts_ = gpu::Buffer(ctx, std::max<uint64_t>(n_counts, 1) * 4, gpu::Memory::Device);
    sums_.fill_zero();
    counts_.fill_zero();
}

// A weight's bytes start at or after its part's offset and before the next part's.
const ImatrixRecorder::Entry* ImatrixRecorder::find(const ops::Buffer* buffer, uint64_t offset) const {
    const auto it = parts_.find(buffer);
    if (!buffer || it == parts_.end()) return nullptr;
    const auto& list = it->second;
    auto p = std::upper_bound(list.begin(), list.end(), std::pair<uint64_t, size_t>{offset, SIZE_MAX});
    if (p == list.begin() || std::prev(p)->second == kNotCollected) return nullptr;
    return &entries_[std::prev(p)->second];
}

void ImatrixRecorder::order_write(gpu::Stream& s, const Entry& e) {
    const size_t index = size_t(&e - entries_.data());
    if (!written_.insert(index).second) {
        s.barrier("an importance-matrix sum is complete before the same weight's next input adds to it");
        written_ = {index};
    }
}

void ImatrixRecorder::matmul_input(gpu::Stream& s, const ops::TensorView& x,
                                   std::initializer_list<const ops::Weight*> ws) {
    if (x.rows < kMinRows) return;
    std::vector<const Entry*> done;  // a tensor split on upload (attn_qkv) reads one input once
    for (const ops::Weight* w : ws) {
        const Entry* e = find(w->buffer, w->offset);
        if (!e || std::find(done.begin(), done.end(), e) != done.end()) continue;
        done.push_back(e);
        if (e->n_mat != 1 || e->n_cols != x.cols)
            throw std::logic_error("imatrix: the input of " + e->name + " has " + std::to_string(x.cols) +
                                   " columns, the weight " + std::to_string(e->n_cols));
        order_write(s, *e);
        s.mark("imatrix_accumulate");
        ops::imatrix_accumulate(s, x, ops::f32_rows(sums_, 1, e->n_cols, e->sums_first),
                                ops::i32_vector(counts_, 1, e->counts_first));
    }
}

void ImatrixRecorder::expert_input(gpu::Stream& s, const ops::TensorView& x, bool x_per_pair,
                                   const ops::MoeRouting& r, std::initializer_list<const ops::ExpertWeights*> ws) {
    for (const ops::ExpertWeights* w : ws) {
        const Entry* e = find(w->buffer, w->offset);
        if (!e) continue;
        if (e->n_mat != w->n_expert || e->n_cols != x.cols)
            throw std::logic_error("imatrix: the input of " + e->name + " has " + std::to_string(x.cols) +
                                   " columns, the experts " + std::to_string(e->n_cols));
        order_write(s, *e);
        s.mark("imatrix_accumulate");
        ops::imatrix_accumulate_routed(s, x, x_per_pair, r, ops::f32_rows(sums_, e->n_mat, e->n_cols, e->sums_first),
                                       ops::i32_vector(counts_, e->n_mat, e->counts_first));
    }
}

void ImatrixRecorder::head_input(gpu::Stream& s, const ops::TensorView& x, const ops::MoeRouting& by_head,
                                 const ops::ExpertWeights& w) {
    if (by_head.n_tokens >= kMinRows) expert_input(s, x, /*x_per_pair=*/true, by_head, {&w});
}

void ImatrixRecorder::drain_into(Imatrix& m) {
    std::vector<float> sums(sums_.size() / 4);
    std::vector<int32_t> counts(counts_.size() / 4);
    sums_.download(sums.data(), sums_.size());
    counts_.download(counts.data(), counts_.size());
    for (const Entry& e : entries_) {
        const int32_t* c = counts.data() + e.counts_first;
        if (std::all_of(c, c + e.n_mat, [](int32_t v) { return v == 0; })) continue;
        ImatrixEntry& out = m.entry(e.name, e.n_cols, e.n_mat);
        const float* s = sums.data() + e.sums_first;
        for (int64_t i = 0; i < e.n_cols * e.n_mat; ++i) out.sums[size_t(i)] += s[i];
        for (int64_t k = 0; k < e.n_mat; ++k) out.counts[size_t(k)] += c[k];
    }
    sums_.fill_zero();
    counts_.fill_zero();
}

}  // namespace vkllm::model
