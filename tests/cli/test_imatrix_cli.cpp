// `vkllm imatrix` end to end on zoo-deep (whose ffn_down rows are 256 wide, so IQ2_XXS and Q2_K
// apply to them): a matrix collected over text of the model's own distribution
// (tests/golden/imatrix/broad-train.txt, tools/zoo/corpus_broad.py's train split) is what
// `vkllm quantize --imatrix` takes for IQ2_XXS and Q2_K_S, and on held-out text
// (broad-heldout.txt, the generator's held-out split) its files do better than those made with
// a flat matrix (every column alike, the nearest to none for types refused without one): the
// weight error weighted by the held-out text's own activations is lower for both, and the Q2_K_S
// file's perplexity is lower. The legacy .dat output is read by the quantizer too; bad options
// and a short text are usage errors.
#include <gtest/gtest.h>

#include <filesystem>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "imatrix_cli_util.h"
#include "test_support.h"
#include "vkllm/imatrix.h"

namespace fs = std::filesystem;
using namespace vkllm;

namespace {

std::string text(const std::string& name) { return test::source_dir() + "/tests/golden/imatrix/" + name; }
std::string zoo_deep() { return test::source_dir() + "/assets/zoo/zoo-deep.gguf"; }

double perplexity(const std::string& model) { return test::cli_perplexity(model, text("broad-heldout.txt"), 128); }

}  // namespace

TEST(ImatrixCli, CollectedMatrixQuantizesBetterThanFlat) {
    const std::string vkllm = test::vkllm_bin(), model = zoo_deep();
    const std::string train = test::temp_path("deep-train.imatrix.gguf"), held = test::temp_path("deep-held.imatrix.gguf");
    auto r = test::shell(vkllm + " imatrix -m " + model + " -f " + text("broad-train.txt") + " -o " + train +
                         " -c 128 --chunks 14 2>&1");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("computing over 14 chunks"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("[14]"), std::string::npos) << r.out;  // llama-imatrix's progress, chunk by chunk
    EXPECT_NE(r.out.find("56 entries from 14 chunks of 128 tokens"), std::string::npos) << r.out;
    r = test::shell(vkllm + " imatrix -m " + model + " -f " + text("broad-heldout.txt") + " -o " + held +
                    " -c 128 --chunks 14 --no-ppl 2>&1");
    ASSERT_EQ(r.code, 0) << r.out;
    const Imatrix m = read_imatrix(train), h = read_imatrix(held);
    EXPECT_EQ(m.chunk_count, 14);
    EXPECT_EQ(m.chunk_size, 128);
    ASSERT_NE(m.find("blk.7.ffn_down.weight"), nullptr);
    EXPECT_EQ(m.find("blk.7.ffn_down.weight")->counts, std::vector<int64_t>{14 * 128});
    EXPECT_EQ(m.find("output.weight"), nullptr);  // only with --process-output, as llama-imatrix
    const std::string flat = test::flat_imatrix_like(m, "deep-flat.imatrix.gguf");

    double err[2][2], ppl_q2ks[2];
    const char* types[2] = {"IQ2_XXS", "Q2_K_S"};
    for (int t = 0; t < 2; ++t)
        for (int k = 0; k < 2; ++k) {
            const std::string out = test::temp_path(std::string("deep-") + types[t] + (k ? "-flat" : "-vkllm") + ".gguf");
            r = test::shell(vkllm + " quantize " + model + " " + out + " " + types[t] + " --imatrix " + (k ? flat : train) +
                            " 2>&1");
            ASSERT_EQ(r.code, 0) << r.out;
            err[t][k] = test::weighted_error(model, out, h);
            if (t == 1) ppl_q2ks[k] = perplexity(out);
        }
    // Measured: IQ2_XXS 0.0175 against 0.0194, Q2_K_S 0.0137 against 0.0150; Q2_K_S perplexity
    // 2.010 against 2.049.
    EXPECT_LT(err[0][0], 0.95 * err[0][1]) << "IQ2_XXS held-out weighted error";
    EXPECT_LT(err[1][0], 0.95 * err[1][1]) << "Q2_K_S held-out weighted error";
    EXPECT_LT(ppl_q2ks[0], ppl_q2ks[1]) << "Q2_K_S held-out perplexity";
}

TEST(ImatrixCli, LegacyFormatAndUsageErrors) {
    const std::string vkllm = test::vkllm_bin(), model = zoo_deep();
    const std::string dat = test::temp_path("deep.imatrix.dat");
    auto r = test::shell(vkllm + " imatrix -m " + model + " -f " + text("broad-heldout.txt") + " -o " + dat +
                         " -c 64 --chunk 1 --chunks 3 --output-format dat --no-ppl 2>&1");
    ASSERT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("from 3 chunks of 64 tokens"), std::string::npos) << r.out;
    const Imatrix m = read_imatrix(dat);
    EXPECT_TRUE(m.legacy);
    EXPECT_EQ(m.chunk_count, 3);
    ASSERT_NE(m.find("blk.0.attn_q.weight"), nullptr);
    EXPECT_EQ(m.find("blk.0.attn_q.weight")->counts, std::vector<int64_t>{3});  // ncall: chunks of tokens
    r = test::shell(vkllm + " quantize " + model + " " + test::temp_path("deep-dat-iq2_xxs.gguf") +
                    " IQ2_XXS --imatrix " + dat + " 2>&1");
    EXPECT_EQ(r.code, 0) << r.out;

    r = test::shell(vkllm + " imatrix -m " + model + " -o " + dat + " 2>&1");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("-f TEXT is required"), std::string::npos) << r.out;
    r = test::shell(vkllm + " imatrix -m " + model + " -f " + text("text.txt") + " --output-format csv 2>&1");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("--output-format must be gguf or dat"), std::string::npos) << r.out;
    r = test::shell(vkllm + " imatrix -m " + model + " -f " + text("text.txt") + " -c 256 -o " + dat + " 2>&1");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("needs at least 512"), std::string::npos) << r.out;
}
