// compute_imatrix (vkllm imatrix's collection on the GPU) over zoo-moe and the two chunks of 64
// tokens of tests/golden/imatrix: its sums equal the CPU reference forward's matmul inputs (the
// attention norm's output for attn_q/k/v, each routed pair's hidden activations for
// ffn_down_exps, counted per expert), and llama.cpp's own collection of the same chunks (the
// golden file, llama-imatrix's callback): the same entries, the same counts, sums within what
// llama.cpp's F16 cache moves them. zoo-mla likewise (its golden made by the same command as
// zoo-moe's, scripts/make-golden-imatrix.sh): DeepSeek's per-head attn_k_b / attn_v_b products
// collected per head. The legacy .dat writer keeps the importance a quantizer reads.
#include <gtest/gtest.h>

#include <algorithm>
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

class ImatrixCollect : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        model_ = Model::load(test::source_dir() + "/assets/zoo/zoo-moe.gguf").release();
        std::ifstream f(golden("text.txt"), std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        text_ = ss.str();
        tokens_ = model_->tokenize(text_, /*add_special=*/true);
    }
    static void TearDownTestSuite() {
        delete model_;
        model_ = nullptr;
    }
    static Imatrix collect(bool rounding, KvCacheType cache) {
        ImatrixOptions o;
        o.kv_cache = cache;
        o.n_ctx = kChunk;
        o.max_chunks = kChunks;
        o.llama_cpp_rounding = rounding;
        o.dataset = "text.txt";
        int calls = 0;
        Imatrix m = compute_imatrix(*model_, tokens_, o, [&](const ImatrixProgress& p) {
            EXPECT_EQ(p.chunk, calls++);
            EXPECT_EQ(p.n_chunks, kChunks);
            EXPECT_GT(p.perplexity, 1.0);
        });
        EXPECT_EQ(calls, kChunks);
        EXPECT_EQ(m.chunk_count, kChunks);
        EXPECT_EQ(m.chunk_size, kChunk);
        EXPECT_EQ(m.datasets, std::vector<std::string>{"text.txt"});
        return m;
    }
    static Model* model_;
    static std::vector<int32_t> tokens_;
    static std::string text_;
};
Model* ImatrixCollect::model_ = nullptr;
std::vector<int32_t> ImatrixCollect::tokens_;
std::string ImatrixCollect::text_;

TEST_F(ImatrixCollect, SumsAreTheReferenceForwardsMatmulInputs) {
    const Imatrix m = collect(/*rounding=*/false, KvCacheType::F32);
    const auto& in = model_->internals();
    const model::ModelSpec& spec = in.spec();
    const Imatrix ref = test::reference_moe_imatrix(in, tokens_, kChunk, kChunks);
    ASSERT_EQ(ref.entries.size(), size_t(4 * spec.n_layer));
    for (const ImatrixEntry& r : ref.entries) {
        const ImatrixEntry* e = m.find(r.name);
        ASSERT_NE(e, nullptr) << r.name << " was not collected";
        EXPECT_EQ(e->n_cols, r.n_cols) << r.name;
        EXPECT_EQ(e->counts, r.counts) << r.name;  // tokens, or pairs routed to each expert
        ASSERT_EQ(e->sums.size(), r.sums.size()) << r.name;
        EXPECT_LT(rel_diff(e->sums, r.sums), 2e-5) << r.name;
    }
    // The experts' gate and up read each token once per slot it routes: as many as down's pairs.
    for (int l = 0; l < spec.n_layer; ++l) {
        const std::string blk = "blk." + std::to_string(l) + ".";
        const ImatrixEntry* down = m.find(blk + "ffn_down_exps.weight");
        for (const char* p : {"ffn_gate_exps", "ffn_up_exps"}) {
            const ImatrixEntry* e = m.find(blk + p + ".weight");
            ASSERT_NE(e, nullptr) << blk << p;
            EXPECT_EQ(e->counts, down->counts) << blk << p;
        }
    }
}

// Entry for entry: names, widths, counts; sums within what llama-imatrix's default F16 cache
// moves them (up to 4e-4).
void expect_same_matrix(const Imatrix& m, const Imatrix& llama) {
    ASSERT_EQ(m.entries.size(), llama.entries.size());
    for (size_t i = 0; i < llama.entries.size(); ++i) {
        const ImatrixEntry &e = m.entries[i], &l = llama.entries[i];
        ASSERT_EQ(e.name, l.name);
        EXPECT_EQ(e.n_cols, l.n_cols) << l.name;
        EXPECT_EQ(e.counts, l.counts) << l.name;
        ASSERT_EQ(e.sums.size(), l.sums.size()) << l.name;
        EXPECT_LT(rel_diff(e.sums, l.sums), 6e-4) << l.name;
    }
}

TEST_F(ImatrixCollect, AgreesWithLlamaImatrix) {
    const Imatrix m = collect(/*rounding=*/true, KvCacheType::Auto);
    expect_same_matrix(m, read_imatrix(golden("zoo-moe.imatrix.gguf")));

    // The GGUF file written and read back is the same matrix; the legacy .dat keeps each
    // column's importance (mean x^2; 1 for an expert no token reached).
    const std::string gguf_path = test::temp_path("collect.imatrix.gguf"), dat_path = test::temp_path("collect.imatrix.dat");
    write_imatrix(m, gguf_path);
    write_imatrix_dat(m, dat_path);
    const Imatrix back = read_imatrix(gguf_path), dat = read_imatrix(dat_path);
    EXPECT_TRUE(dat.legacy);
    EXPECT_EQ(dat.chunk_count, kChunks);
    EXPECT_EQ(dat.datasets, std::vector<std::string>{"text.txt"});
    ASSERT_EQ(back.entries.size(), m.entries.size());
    ASSERT_EQ(dat.entries.size(), m.entries.size());
    for (size_t i = 0; i < m.entries.size(); ++i) {
        EXPECT_EQ(back.entries[i].sums, m.entries[i].sums);
        EXPECT_EQ(back.entries[i].counts, m.entries[i].counts);
        EXPECT_LT(rel_diff(dat.entries[i].importance(), m.entries[i].importance()), 1e-6) << m.entries[i].name;
    }
}

TEST_F(ImatrixCollect, LatentAttentionPerHeadAgreesWithLlamaImatrix) {
    auto mla = Model::load(test::source_dir() + "/assets/zoo/zoo-mla.gguf");
    ImatrixOptions o;
    o.n_ctx = kChunk;
    o.max_chunks = kChunks;
    const Imatrix m = compute_imatrix(*mla, mla->tokenize(text_, /*add_special=*/true), o);
    const ImatrixEntry* kb = m.find("blk.0.attn_k_b.weight");
    ASSERT_NE(kb, nullptr);
    EXPECT_EQ(kb->counts, std::vector<int64_t>(size_t(kb->n_mat()), kChunk * kChunks));  // every head, every token
    expect_same_matrix(m, read_imatrix(golden("zoo-mla.imatrix.gguf")));
}

}  // namespace
}  // namespace vkllm
