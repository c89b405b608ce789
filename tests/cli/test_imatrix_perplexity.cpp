// `vkllm imatrix` on zoo-wide (assets/zoo: a trained 2-layer Llama whose matrices all have rows
// a multiple of 256 wide, so every one of them takes the 2-bit type, not just a few as in
// zoo-deep). The matrix is collected over stories of its training distribution
// (tests/golden/imatrix/zoo-train.txt: the first 24 stories of tools/zoo/corpus.py's train split,
// seed 1) and the files are judged on others (zoo-heldout.txt: the first 24 of its held-out split,
// seed 1001, so no story is in both); the stories are joined by a space, as the model saw them one
// after another in training (never a blank line between them). The baseline is a flat matrix
// (every column alike: the nearest to no matrix for the types refused without one).
//
// With the collected matrix, IQ2_XXS's weight error weighted by the held-out text's own
// activations is lower, and IQ1_S's held-out perplexity is lower. IQ2_XXS's perplexity is not
// asserted on zoo-wide: there 2 bits cost almost nothing (flat or not, within 1% of F16; the
// numbers are in docs/imatrix.md), so no matrix can lower it by more than the noise of rounding.
// It is on zoo-facts (the second test), a model that 2 bits hurt.
#include <gtest/gtest.h>

#include <cstdio>

#include "imatrix_cli_util.h"
#include "test_support.h"
#include "vkllm/imatrix.h"

using namespace vkllm;

namespace {

std::string text(const std::string& name) { return test::source_dir() + "/tests/golden/imatrix/" + name; }

constexpr int kCtx = 256;  // the model's training window

std::string collect(const std::string& model, const std::string& text_file, const std::string& out) {
    const auto r = test::shell(test::vkllm_bin() + " imatrix -m " + model + " -f " + text_file + " -o " + out +
                               " -c " + std::to_string(kCtx) + " --no-ppl 2>&1");
    if (r.code != 0) throw std::runtime_error("vkllm imatrix failed: " + r.out);
    return out;
}

std::string quantize(const std::string& model, const std::string& type, const std::string& imatrix,
                     const std::string& name) {
    const std::string out = test::temp_path(name);
    const auto r = test::shell(test::vkllm_bin() + " quantize " + model + " " + out + " " + type + " --imatrix " +
                               imatrix + " 2>&1");
    if (r.code != 0) throw std::runtime_error("vkllm quantize failed: " + r.out);
    return out;
}

}  // namespace

TEST(ImatrixPerplexity, CollectedMatrixBeatsFlatOnHeldOutText) {
    const std::string model = test::source_dir() + "/assets/zoo/zoo-wide.gguf";
    const std::string train = collect(model, text("zoo-train.txt"), test::temp_path("wide-train.imatrix.gguf"));
    const std::string held = collect(model, text("zoo-heldout.txt"), test::temp_path("wide-held.imatrix.gguf"));
    const Imatrix m = read_imatrix(train), h = read_imatrix(held);
    ASSERT_EQ(m.entries.size(), 14u);  // 2 layers x q, k, v, output, gate, up, down
    ASSERT_NE(m.find("blk.1.ffn_down.weight"), nullptr);
    EXPECT_EQ(m.find("blk.1.ffn_down.weight")->n_cols, 512);
    const std::string flat = test::flat_imatrix_like(m, "wide-flat.imatrix.gguf");

    // Measured: 0.0662 against 0.1063. Most of it is the ffn_down matrices', whose inputs differ
    // most from column to column (and so weigh most in the sum): their own errors are 25-50% lower,
    // the other matrices' 2-3%.
    const double err = test::weighted_error(model, quantize(model, "IQ2_XXS", train, "wide-iq2_xxs.gguf"), h);
    const double err_flat = test::weighted_error(model, quantize(model, "IQ2_XXS", flat, "wide-iq2_xxs-flat.gguf"), h);
    std::printf("IQ2_XXS held-out weighted error: %.4f with the collected matrix, %.4f with a flat one\n", err, err_flat);
    EXPECT_LT(err, 0.8 * err_flat) << "IQ2_XXS held-out weighted error";

    // Measured: 1.7518 against 1.7808 (F16: 1.6617), 1.6% lower; the runs are deterministic. The
    // bound asks for a gain of at least 1%, well outside the rounding noise of one run to another
    // device's summation order (mobile: 1.7807).
    const double f16 = test::cli_perplexity(model, text("zoo-heldout.txt"), kCtx);
    const double ppl = test::cli_perplexity(quantize(model, "IQ1_S", train, "wide-iq1_s.gguf"), text("zoo-heldout.txt"), kCtx);
    const double ppl_flat =
        test::cli_perplexity(quantize(model, "IQ1_S", flat, "wide-iq1_s-flat.gguf"), text("zoo-heldout.txt"), kCtx);
    std::printf("IQ1_S held-out perplexity: %.4f with the collected matrix, %.4f with a flat one (F16 %.4f)\n", ppl,
                ppl_flat, f16);
    EXPECT_GT(ppl, f16);  // 1.56 bits lose something, or the comparison means nothing
    EXPECT_LT(ppl, 0.99 * ppl_flat) << "IQ1_S held-out perplexity " << ppl << " with the collected matrix, "
                                     << ppl_flat << " with a flat one";
}

// zoo-facts (assets/zoo): zoo-wide's layout (FFN 768) trained on tools/zoo/corpus_facts.py, a fixed
// table of made-up people and their town, pet, colour, job, food and friend stated in varied
// sentences, so that past the names the held-out text can only be predicted from what the weights
// memorised. After training, each input channel's scale was moved by a factor log-uniform in
// [1/2, 2] between the matrix columns it meets and the norm gain or matrix rows that feed it
// (train.py's move_channel_scales: the function is the trained model's), so the matrices' inputs
// differ in scale from channel to channel as large models' do. The matrix comes from
// tests/golden/imatrix/facts-train.txt (the start of the train split, seed 1: 8 chunks of 256),
// the scores from facts-heldout.txt (the start of the held-out split, seed 1001: other sentences
// over the same table; 8 chunks, 1,016 tokens scored).
TEST(ImatrixPerplexity, CollectedMatrixLowersIq2xxsPerplexityOfAModelTwoBitsHurt) {
    const std::string model = test::source_dir() + "/assets/zoo/zoo-facts.gguf";
    const std::string held = text("facts-heldout.txt");
    const std::string train = collect(model, text("facts-train.txt"), test::temp_path("facts-train.imatrix.gguf"));
    const Imatrix m = read_imatrix(train);
    ASSERT_EQ(m.entries.size(), 14u);  // 2 layers x q, k, v, output, gate, up, down
    const std::string flat = test::flat_imatrix_like(m, "facts-flat.imatrix.gguf");

    const double f16 = test::cli_perplexity(model, held, kCtx);
    const double ppl = test::cli_perplexity(quantize(model, "IQ2_XXS", train, "facts-iq2_xxs.gguf"), held, kCtx);
    const double ppl_flat =
        test::cli_perplexity(quantize(model, "IQ2_XXS", flat, "facts-iq2_xxs-flat.gguf"), held, kCtx);
    std::printf("zoo-facts IQ2_XXS held-out perplexity: %.4f with the collected matrix, %.4f with a flat one "
                "(F16 %.4f)\n", ppl, ppl_flat, f16);
    // Measured: F16 3.3408, flat 3.9317 (+18%), the collected matrix 3.7052: 5.8% below flat, 38%
    // of what 2 bits cost won back (on 30 KB of held-out text, docs/imatrix.md: +15% and 6.6%;
    // llama.cpp's quantizer with vkllm's matrix +7% and 3.8%). The runs are deterministic; another
    // device's summation order changes the collected sums in their last bits and so a few of the
    // quantizer's choices (VKLLM_LIMITS=mobile: 3.7031 and 3.9312, the ratio 0.06% apart). The
    // bounds leave room for changes of the quantizer's own: 2 bits must cost at least 8% (else the
    // comparison means nothing), and the matrix must bring the perplexity at least 3% below the
    // flat file's: half the measured gain, fifty times the devices' difference.
    EXPECT_LT(f16, ppl_flat / 1.08) << "2 bits no longer hurt zoo-facts";
    EXPECT_LT(ppl, 0.97 * ppl_flat) << "IQ2_XXS held-out perplexity " << ppl << " with the collected matrix, "
                                     << ppl_flat << " with a flat one";
}
