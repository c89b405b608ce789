// llama.cpp's importance matrix (tests/golden/imatrix, scripts/make-golden-imatrix.sh: zoo-moe
// over text.txt in two chunks of 64 tokens, llama-imatrix's collection) read by vkllm and checked
// against the CPU reference forward's matmul inputs over the same chunks: what x is for the
// attention projections (the normalised residual stream) and for the experts' down projections
// (each routed pair's hidden activations, counted per expert).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "cpu/ref_ops.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "model/model_internal.h"
#include "reference/reference_forward.h"
#include "imatrix_reference.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "vkllm/imatrix.h"
#include "vkllm/model.h"

namespace vkllm {
namespace {

constexpr int kChunk = 64, kChunks = 2;

std::string golden(const std::string& name) { return test::source_dir() + "/tests/golden/imatrix/" + name; }

// Largest |a - b| over the largest |b|.
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
    double d = 0, m = 0;
    for (size_t i = 0; i < b.size(); ++i) {
        d = std::max(d, double(std::fabs(a[i] - b[i])));
        m = std::max(m, double(std::fabs(b[i])));
    }
    return d / std::max(m, 1e-30);
}

TEST(ImatrixLlama, SumsAreTheMatmulInputsSquares) {
    const Imatrix m = read_imatrix(golden("zoo-moe.imatrix.gguf"));
    EXPECT_EQ(m.chunk_count, kChunks);
    EXPECT_EQ(m.chunk_size, kChunk);
    auto model = Model::load(test::source_dir() + "/assets/zoo/zoo-moe.gguf");
    const auto& in = model->internals();
    const model::ModelSpec& spec = in.spec();
    ASSERT_GT(spec.layers[0].ffn.moe.n_expert, 0);

    std::ifstream f(golden("text.txt"), std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    const std::vector<int32_t> tokens = in.tokenizer().encode(ss.str(), true, false);
    ASSERT_GE(tokens.size(), size_t(kChunk * kChunks));

    // The same sums from the reference forward, one chunk at a time from an empty cache, each
    // chunk's first token BOS (llama-imatrix's chunks).
    const Imatrix ref = test::reference_moe_imatrix(in, tokens, kChunk, kChunks);
    ASSERT_FALSE(ref.entries.empty());
    for (const ImatrixEntry& r : ref.entries) {
        const ImatrixEntry* e = m.find(r.name);
        ASSERT_NE(e, nullptr) << r.name << " is missing from llama.cpp's matrix";
        EXPECT_EQ(e->n_cols, r.n_cols) << r.name;
        EXPECT_EQ(e->counts, r.counts) << r.name;  // tokens, or tokens routed to each expert
        ASSERT_EQ(e->sums.size(), r.sums.size()) << r.name;
        // llama-imatrix keeps keys and values in its default F16 cache (the reference in F32): the
        // last layer's attention inputs drift by 1.5e-4.
        EXPECT_LT(rel_diff(e->sums, r.sums), 5e-4) << r.name;
    }
}

}  // namespace
}  // namespace vkllm
