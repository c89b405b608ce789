// Top-n selection: the indices of the largest values, largest first, equal values by lower
// index (so the choice is deterministic). Expert routing, token alternatives, the probes' largest
// activations.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <queue>
#include <vector>

namespace vkllm {

// The indices of the min(n, count) largest of values[0, count).
template <class T>
std::vector<int32_t> top_n(const T* values, size_t count, size_t n) {
    n = std::min(n, count);
    std::vector<int32_t> ids(count);
    std::iota(ids.begin(), ids.end(), 0);
    std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(n), ids.end(), [values](int32_t a, int32_t b) {
        return values[a] != values[b] ? values[a] > values[b] : a < b;
    });
    ids.resize(n);
    return ids;
}

// The indices of the min(n, count) largest of key(0) .. key(count - 1), in the same order, in
// O(n) memory for long streams: a min-heap of the n best seen so far.
template <class Key>
std::vector<size_t> top_n_by(size_t count, size_t n, Key key) {
    n = std::min(n, count);
    // better(a, b): a ranks before b (larger key, or an equal key at a lower index).
    auto better = [&key](size_t a, size_t b) {
        const auto ka = key(a), kb = key(b);
        return ka != kb ? ka > kb : a < b;
    };
    std::priority_queue<size_t, std::vector<size_t>, decltype(better)> heap(better);  // top: the worst kept
    for (size_t i = 0; i < count && n > 0; ++i) {
        if (heap.size() < n) {
            heap.push(i);
        } else if (better(i, heap.top())) {
            heap.pop();
            heap.push(i);
        }
    }
    std::vector<size_t> out(heap.size());
    for (size_t j = out.size(); j-- > 0; heap.pop()) out[j] = heap.top();
    return out;
}

}  // namespace vkllm
