// The reference walk of LFM2's short-convolution layers (llama.cpp's build_shortconv_block):
// [B | C | u] = in_proj h; y = C * conv1d(B * u) carrying the layer's conv state; out_proj y.
#include <string>
#include <vector>

#include "cpu/ref_ssm.h"
#include "reference/reference_forward.h"

namespace vkllm::model {

std::vector<float> ReferenceForward::short_conv_block(int l, const float* h, int n_tokens) {
    const ShortConvSpec& S = spec_.layers[size_t(l)].shortconv;
    const std::string p = "blk." + std::to_string(l) + ".";
    const int64_t n = S.channels, rows = S.in_proj_rows();
    std::vector<float> bcu(size_t(n_tokens) * size_t(rows)), y(size_t(n_tokens) * size_t(n));
    matmul(p + "shortconv.in_proj.weight", h, bcu.data(), n_tokens);
    const std::vector<float> w = values(p + "shortconv.conv.weight");  // [n][l_cache]
    if (int64_t(w.size()) != n * S.l_cache)
        throw ModelError("reference forward: '" + p + "shortconv.conv.weight' is not [" + std::to_string(n) + "][" +
                         std::to_string(S.l_cache) + "]");
    cpu::short_conv_gated(bcu.data(), bcu.data() + n, bcu.data() + 2 * n, rows, conv_[size_t(l)].data(), w.data(),
                          y.data(), n, n_tokens, n, S.l_cache);
    std::vector<float> out(size_t(n_tokens) * size_t(spec_.n_embd));
    matmul(p + "shortconv.out_proj.weight", y.data(), out.data(), n_tokens);
    return out;
}

}  // namespace vkllm::model
