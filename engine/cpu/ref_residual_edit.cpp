#include <stdexcept>
#include <string>

#include "cpu/ref_ops.h"

namespace vkllm::cpu {

void residual_edit(float* x, int64_t n_tokens, int64_t n, const ChannelEdit* edits, int n_edits, double* state) {
    for (int e = 0; e < n_edits; ++e) {
        const ChannelEdit& ed = edits[e];
        if (ed.channel < 0 || ed.channel >= n)
            throw std::invalid_argument("residual_edit: channel " + std::to_string(ed.channel) + " outside 0.." +
                                        std::to_string(n - 1));
        float mean = 0;
        if (ed.mode == ChannelEdit::Mean) {
            for (int64_t t = 0; t < n_tokens; ++t) state[2 * e] += x[t * n + ed.channel];
            state[2 * e + 1] += double(n_tokens);
            mean = float(state[2 * e] / state[2 * e + 1]);
        }
        for (int64_t t = 0; t < n_tokens; ++t) {
            float& v = x[t * n + ed.channel];
            switch (ed.mode) {
                case ChannelEdit::Zero: v = 0; break;
                case ChannelEdit::Value: v = ed.value; break;
                case ChannelEdit::Scale: v *= ed.value; break;
                case ChannelEdit::Mean: v = mean; break;
            }
        }
    }
}

}  // namespace vkllm::cpu
