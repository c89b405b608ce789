#include "cpu/ref_lens.h"

#include <vector>

#include "core/softmax.h"
#include "core/top_n.h"

namespace vkllm::cpu {

std::vector<LensPick> lens_top_k(const float* logits, int n_rows, int n_vocab, int k) {
    std::vector<LensPick> out(size_t(n_rows) * size_t(k));
    std::vector<double> p(static_cast<size_t>(n_vocab));
    for (int r = 0; r < n_rows; ++r) {
        const float* row = logits + size_t(r) * size_t(n_vocab);
        p.assign(row, row + n_vocab);
        softmax_in_place(p.data(), p.size());
        LensPick* o = &out[size_t(r) * size_t(k)];
        int j = 0;
        for (int32_t id : top_n(row, size_t(n_vocab), size_t(k)))
            if (float(p[size_t(id)]) > 0) o[j++] = {id, float(p[size_t(id)])};
    }
    return out;
}

}  // namespace vkllm::cpu
