// Top-n selection: the indices of the largest values, largest first, equal values by lower
// index (so the choice is deterministic). Expert routing, token alternatives.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
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

}  // namespace vkllm
