// Sums of the per-op timings (vkllm/probe.h).
#include <algorithm>
#include <vector>

#include "vkllm/probe.h"

namespace vkllm {

std::vector<OpTiming> timings_by_op(const std::vector<OpTiming>& timings) {
    std::vector<OpTiming> out;
    for (const OpTiming& t : timings) {
        auto it = std::find_if(out.begin(), out.end(), [&](const OpTiming& o) { return o.op == t.op; });
        if (it == out.end()) {
            out.push_back({t.op, -1, t.ms, t.count});
            continue;
        }
        it->ms += t.ms;
        it->count += t.count;
    }
    return out;
}

std::vector<double> timings_by_layer(const std::vector<OpTiming>& timings, int n_layer) {
    std::vector<double> out(size_t(std::max(n_layer, 0)) + 1, 0.0);
    for (const OpTiming& t : timings) {
        const bool inside = t.layer >= 0 && t.layer < n_layer;
        out[inside ? size_t(t.layer) : size_t(n_layer)] += t.ms;
    }
    return out;
}

}  // namespace vkllm
