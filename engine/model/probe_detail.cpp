// The attention probes' detail (ProbeConfig::attention_top_k, attention_thumbnail): each query
// row's top keys and a max-pooled thumbnail of each head's map, computed on the GPU
// (ops::attention_detail) from the blocks of probabilities the summaries read, so that only
// k pairs per row and S x S cells per head leave the GPU.
//
// A thumbnail's cell is the smallest power of two that fits the keys 0..newest position into
// S columns. A pass pools at the cell of its own newest position; a later pass of the same eval
// may need a larger cell, and since both are powers of two each small cell lies inside one large
// cell, so the eval's thumbnail is re-pooled exactly (max of maxima) on the host.
#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

#include "model/probe_recorder.h"
#include "ops/probe_ops.h"

namespace vkllm::model {
namespace {

constexpr uint64_t F = sizeof(float);

// The smallest power of two c with ceil(n_key / c) <= cells.
int thumbnail_cell(int n_key, int cells) {
    int c = 1;
    while ((int64_t(n_key) + c - 1) / c > cells) c *= 2;
    return c;
}

float float_of(int32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

}  // namespace

void ProbeRecorder::configure_detail(const ProbeConfig& probes) {
    if (probes.attention_top_k < 0 || probes.attention_top_k > ops::kMaxAttentionTopK)
        throw std::invalid_argument("attention_top_k must be 0.." + std::to_string(ops::kMaxAttentionTopK) + ", got " +
                                    std::to_string(probes.attention_top_k));
    if (probes.attention_thumbnail < 0 || probes.attention_thumbnail > ops::kMaxAttentionCells)
        throw std::invalid_argument("attention_thumbnail must be 0.." + std::to_string(ops::kMaxAttentionCells) +
                                    ", got " + std::to_string(probes.attention_thumbnail));
    const uint64_t L = uint64_t(spec_.n_layer), B = uint64_t(n_batch_), H = uint64_t(std::max(max_head_, 1));
    if (probes.attention_top_k != top_k_) {
        top_k_ = probes.attention_top_k;
        top_ = gpu::Buffer();
        top_host_ = gpu::Buffer();
        if (top_k_ > 0) {
            const uint64_t n = L * B * H * uint64_t(top_k_) * 2 * 4;
            top_ = gpu::Buffer(ctx_, n, gpu::Memory::Device);
            top_host_ = gpu::Buffer(ctx_, n, gpu::Memory::Host);
        }
    }
    if (probes.attention_thumbnail != cells_) {
        cells_ = probes.attention_thumbnail;
        thumb_ = gpu::Buffer();
        thumb_host_ = gpu::Buffer();
        thumb_acc_.clear();
        if (cells_ > 0) {
            const uint64_t n = L * H * uint64_t(cells_) * uint64_t(cells_) * 4;
            thumb_ = gpu::Buffer(ctx_, n, gpu::Memory::Device);
            thumb_host_ = gpu::Buffer(ctx_, n, gpu::Memory::Host);
        }
    }
    detailed_.assign(size_t(spec_.n_layer), 0);
}

// Each pass's copies, and what the eval keeps: k pairs per row and head (rows bounded by the
// largest key count), and three copies of the thumbnails (accumulated, pass, results).
uint64_t ProbeRecorder::detail_host_bytes(const ProbeConfig& probes, uint64_t keys) const {
    uint64_t heads = 0, layers = 0;
    for (const LayerSpec& L : spec_.layers)
        if (L.attn.n_head > 0) {
            heads = std::max(heads, uint64_t(L.attn.n_head));
            ++layers;
        }
    const uint64_t B = uint64_t(n_batch_), K = uint64_t(std::max(probes.attention_top_k, 0));
    const uint64_t S = uint64_t(std::max(probes.attention_thumbnail, 0));
    uint64_t n = uint64_t(spec_.n_layer) * B * heads * K * 2 * 4 + layers * heads * keys * K * 2 * 4;
    n += uint64_t(spec_.n_layer) * heads * S * S * 4 + 2 * layers * heads * S * S * F;
    return n;
}

// Before layer l's first block: its cells zeroed, and the pass's cell from its newest position
// (the positions buffer is host-visible, written before the pass is recorded).
void ProbeRecorder::begin_detail(gpu::Stream& s, int l, int n_head, const gpu::Buffer& positions, int T) const {
    detailed_[size_t(l)] = 1;
    if (cells_ == 0) return;
    const auto* pos = static_cast<const int32_t*>(positions.mapped());
    if (!pos) throw std::logic_error("ProbeRecorder: the pass's positions are not host-visible");
    thumb_cell_ = thumbnail_cell(pos[T - 1] + 1, cells_);
    thumb_row0_ = pos[0] / thumb_cell_;
    const uint64_t per_layer = uint64_t(max_head_) * uint64_t(cells_) * uint64_t(cells_) * 4;
    s.mark("copy");
    s.fill_zero(thumb_, uint64_t(l) * per_layer, uint64_t(n_head) * uint64_t(cells_) * uint64_t(cells_) * 4);
    // The block loop's first barrier orders the fill before the first dispatch.
}

// Rows c0..c0+n-1 of the pass, in the summaries' block buffers.
void ProbeRecorder::record_detail(gpu::Stream& s, int l, int c0, int n, int n_kv, int n_head) const {
    const uint64_t H = uint64_t(n_head), K = uint64_t(n_kv);
    ops::AttentionDetailArgs a;
    a.probs = ops::f32_rows(sum_probs_, n, int64_t(H * K));
    a.q_pos = ops::i32_vector(sum_pos_, n);
    a.kv_pos = ops::i32_vector(kv_.slot_positions(l), n_kv);
    a.n_head = n_head;
    a.top_k = top_k_;
    if (top_k_ > 0) {
        const uint64_t row = H * uint64_t(top_k_) * 2;
        const uint64_t base = uint64_t(l) * uint64_t(n_batch_) * uint64_t(max_head_) * uint64_t(top_k_) * 2;
        a.top = ops::i32_rows(top_, n, int64_t(row), base + uint64_t(c0) * row);
    }
    a.cells = cells_;
    if (cells_ > 0) {
        const uint64_t S = uint64_t(cells_);
        a.cell = thumb_cell_;
        a.query_cell0 = thumb_row0_;
        a.thumb = ops::i32_rows(thumb_, int64_t(H * S), int64_t(S), uint64_t(l) * uint64_t(max_head_) * S * S);
    }
    s.mark("attention_detail");
    ops::attention_detail(s, a);
}

// After layer l's last block: its rows' top keys and its cells to the host.
void ProbeRecorder::copy_detail(gpu::Stream& s, int l, int T, int n_head) const {
    s.mark("copy");
    if (top_k_ > 0) {
        const uint64_t base = uint64_t(l) * uint64_t(n_batch_) * uint64_t(max_head_) * uint64_t(top_k_) * 2 * 4;
        s.copy(top_, base, top_host_, base, uint64_t(T) * uint64_t(n_head) * uint64_t(top_k_) * 2 * 4);
    }
    if (cells_ > 0) {
        const uint64_t S2 = uint64_t(cells_) * uint64_t(cells_) * 4;
        const uint64_t base = uint64_t(l) * uint64_t(max_head_) * S2;
        s.copy(thumb_, base, thumb_host_, base, uint64_t(n_head) * S2);
    }
}

namespace {

// Max-pools src (cells at src_cell positions, row 0 the cell of position src_first) into dst
// (dst_cell, a multiple of src_cell; row 0 the cell of dst_first); both [n_head][S][S].
void pool_into(const float* src, int src_cell, int src_first, float* dst, int dst_cell, int dst_first, int n_head,
               int S) {
    const int f = dst_cell / src_cell;
    const int src_row0 = src_first / src_cell, dst_row0 = dst_first / dst_cell;
    for (int h = 0; h < n_head; ++h)
        for (int r = 0; r < S; ++r) {
            const int dr = (src_row0 + r) / f - dst_row0;
            if (dr < 0 || dr >= S) continue;  // rows of the source past the eval's hold zeros
            const float* in = src + (size_t(h) * size_t(S) + size_t(r)) * size_t(S);
            float* out = dst + (size_t(h) * size_t(S) + size_t(dr)) * size_t(S);
            for (int c = 0; c < S; ++c) out[c / f] = std::max(out[c / f], in[c]);
        }
}

}  // namespace

// A pass's top keys appended to the eval's rows; its thumbnails pooled into the eval's.
void ProbeRecorder::read_detail(int T, int pos0, ProbeResults* results, bool first_pass) {
    if (first_pass) {
        results->attention_top_k.clear();
        results->attention_thumbnails.clear();
        thumb_acc_.assign(size_t(spec_.n_layer), ThumbAcc());
    }
    if (!detail()) return;
    thumb_acc_.resize(size_t(spec_.n_layer));
    const size_t K = size_t(top_k_), S = size_t(cells_);
    for (int l = 0; l < spec_.n_layer; ++l) {
        if (!detailed_[size_t(l)]) continue;
        const int H = spec_.layers[size_t(l)].attn.n_head;
        if (top_k_ > 0) {
            auto first = std::find_if(results->attention_top_k.begin(), results->attention_top_k.end(),
                                      [&](const AttentionTopK& t) { return t.layer == l; });
            if (first == results->attention_top_k.end()) {
                for (int h = 0; h < H; ++h) {
                    AttentionTopK t;
                    t.layer = l;
                    t.head = h;
                    t.k = top_k_;
                    results->attention_top_k.push_back(std::move(t));
                }
                first = results->attention_top_k.end() - H;
            }
            const auto* src = static_cast<const int32_t*>(top_host_.mapped()) +
                              size_t(l) * size_t(n_batch_) * size_t(max_head_) * K * 2;
            for (int h = 0; h < H; ++h) {
                AttentionTopK& t = *(first + h);
                for (int r = 0; r < T; ++r) {
                    t.query_pos.push_back(pos0 + r);
                    const int32_t* v = src + (size_t(r) * size_t(H) + size_t(h)) * K * 2;
                    for (size_t i = 0; i < K; ++i) {
                        t.probs.push_back(float_of(v[2 * i]));
                        t.key_pos.push_back(v[2 * i + 1]);
                    }
                }
            }
        }
        if (cells_ > 0) {
            ThumbAcc& acc = thumb_acc_[size_t(l)];
            const int newest = pos0 + T - 1;
            const int cell = thumbnail_cell(newest + 1, cells_);
            const size_t n = size_t(H) * S * S;
            std::vector<float> pass(n);
            const auto* bits = static_cast<const int32_t*>(thumb_host_.mapped()) + size_t(l) * size_t(max_head_) * S * S;
            for (size_t i = 0; i < n; ++i) pass[i] = float_of(bits[i]);
            if (acc.v.empty()) {
                acc.cell = cell;
                acc.first = pos0;
                acc.v.assign(n, 0.0f);
            } else if (cell > acc.cell) {
                std::vector<float> grown(n, 0.0f);
                pool_into(acc.v.data(), acc.cell, acc.first, grown.data(), cell, acc.first, H, cells_);
                acc.v = std::move(grown);
                acc.cell = cell;
            }
            pool_into(pass.data(), cell, pos0, acc.v.data(), acc.cell, acc.first, H, cells_);
            acc.newest = newest;
        }
    }
    if (cells_ == 0) return;
    results->attention_thumbnails.clear();
    for (int l = 0; l < spec_.n_layer; ++l) {
        const ThumbAcc& acc = thumb_acc_[size_t(l)];
        if (acc.v.empty()) continue;
        const int H = spec_.layers[size_t(l)].attn.n_head;
        const int rows = acc.newest / acc.cell - acc.first / acc.cell + 1;
        const int cols = acc.newest / acc.cell + 1;  // ceil((newest + 1) / cell)
        for (int h = 0; h < H; ++h) {
            AttentionThumbnail t;
            t.layer = l;
            t.head = h;
            t.cell = acc.cell;
            t.query_first = acc.first / acc.cell * acc.cell;
            t.rows = rows;
            t.cols = cols;
            t.max_prob.resize(size_t(rows) * size_t(cols));
            for (int r = 0; r < rows; ++r)
                std::copy_n(&acc.v[(size_t(h) * S + size_t(r)) * S], size_t(cols), &t.max_prob[size_t(r) * size_t(cols)]);
            results->attention_thumbnails.push_back(std::move(t));
        }
    }
}

}  // namespace vkllm::model
