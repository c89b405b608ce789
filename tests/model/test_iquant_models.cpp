// Files written by llama.cpp's own quantizer in every i-quant and ternary type, and in a few of
// llama-quantize's mixes (tests/golden/iquant, scripts/make-golden-iquant.sh), against llama.cpp's
// CPU backend: the logits of every prompt position (one batch) and of each greedy step (decoded a
// token at a time through the KV cache), and the greedy text. llama.cpp's CPU rounds a matmul's
// activations to 8 bits for these types (Q8_0 or Q8_K blocks), and so does vkllm (its Vulkan
// backend does not): a file in one type must be within 1e-3 of llama.cpp at all but
// kMaxRoundingFlips positions, and within llama.cpp's own Vulkan-to-CPU distance (below) at those:
// the GPU sums in float where llama.cpp sums integers, so now and then an activation lands on the
// other side of an 8-bit rounding boundary and moves one position's logits (iq2_xxs: 0.062 at one
// of 36 positions, iq3_s: 0.004), while a decoding error would move every position. A mix may be further,
// where one 8-bit rounding of a K-quant's activations falls the other way (mix-q3_k_m: 0.066), but
// no further than llama.cpp's own Vulkan backend is from its CPU backend on these files (the
// largest in vulkan.txt: 0.09 - 0.145 per file). Greedy choices must equal llama.cpp's wherever
// its top two logits are more than twice the bound apart; at a closer tie, llama.cpp's choice must
// be within twice the bound of vkllm's best.
// A file holding a type the GPU kernels do not support yet must be refused with the type named.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "gpu/device.h"
#include "model/model_internal.h"
#include "model/spec.h"
#include "ops/ops.h"
#include "reference/reference_forward.h"
#include "test_support.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

std::string golden_dir() { return test::source_dir() + "/tests/golden/iquant/"; }

// models.txt: "name TYPE [settings]" per line.
std::vector<std::string> golden_models() {
    std::vector<std::string> names;
    std::ifstream in(golden_dir() + "models.txt");
    for (std::string line; std::getline(in, line);) {
        std::istringstream words(line);
        std::string name;
        if (words >> name && name[0] != '#') names.push_back(name);
    }
    return names;
}

// vulkan.txt: "name distance" per line, one for each model; the bound is the largest.
double logit_bound() {
    std::ifstream in(golden_dir() + "vulkan.txt");
    std::set<std::string> names;
    double bound = 0;
    std::string name;
    for (double d; in >> name >> d;) {
        names.insert(name);
        bound = std::max(bound, d);
    }
    for (const std::string& m : golden_models())
        if (!names.count(m)) throw std::runtime_error("tests/golden/iquant/vulkan.txt has no line for " + m);
    return bound;
}

// The weight types of a file that the GPU kernels cannot read, by name.
std::set<std::string> unsupported_types(const gguf::File& file) {
    std::set<std::string> out;
    for (const auto& t : file.tensors())
        if (t.dims.size() >= 2 && !ops::gpu_supports(t.type)) out.insert(gguf::type_traits(t.type)->name);
    return out;
}

std::vector<float> row(const std::vector<float>& v, size_t r, size_t n) {
    return {v.begin() + long(r * n), v.begin() + long((r + 1) * n)};
}

// The two largest values' gap, and the index of the largest.
std::pair<float, int32_t> top_gap(const std::vector<float>& v) {
    std::vector<float> s = v;
    std::partial_sort(s.begin(), s.begin() + 2, s.end(), std::greater<float>());
    return {s[0] - s[1], int32_t(std::max_element(v.begin(), v.end()) - v.begin())};
}

class IquantModel : public ::testing::TestWithParam<std::string> {};

TEST_P(IquantModel, LogitsAndGreedyTextMatchLlamaCpp) {
    const std::string name = GetParam(), base = golden_dir() + name;
    auto file = gguf::File::open(base + ".gguf");
    const std::set<std::string> missing = unsupported_types(*file);
    if (!missing.empty()) {
        std::string list;
        for (const auto& t : missing) list += (list.empty() ? "" : " ") + t;
        try {
            Model::load(base + ".gguf");
            FAIL() << name << " loaded although the GPU kernels do not support " << list;
        } catch (const std::exception& e) {
            const std::string what = e.what();
            EXPECT_TRUE(std::any_of(missing.begin(), missing.end(),
                                    [&](const std::string& t) { return what.find("has type " + t + ",") != std::string::npos; }))
                << what;
        }
        GTEST_SKIP() << "the GPU kernels do not support " << list << " yet: " << name << " is refused";
    }

    // One type: `bound` at all but kMaxRoundingFlips positions, `loose` at every one.
    const bool mix = name.rfind("mix-", 0) == 0;
    const double loose = logit_bound(), bound = mix ? loose : 1e-3;
    constexpr int kMaxRoundingFlips = 2;
    int flips = 0;
    const auto check_position = [&](double d, const std::string& where) {
        if (d <= bound) return;
        ++flips;
        EXPECT_LE(d, loose) << where;
    };
    const uint64_t errors_before = gpu::validation_error_count();
    auto model = Model::load(base + ".gguf");
    const size_t n_vocab = size_t(model->internals().spec().n_vocab);
    const std::vector<int32_t> prompt = test::read_ids(base + ".tokens.txt");
    const std::vector<int32_t> greedy = test::read_ids(base + ".greedy.txt");
    const std::vector<float> ref = test::read_f32(base + ".logits.f32");
    ASSERT_FALSE(prompt.empty());
    ASSERT_FALSE(greedy.empty());
    ASSERT_EQ(ref.size(), (prompt.size() + greedy.size() - 1) * n_vocab);

    SessionOptions so;
    so.kv_cache = KvCacheType::F32;  // llama.cpp's exact mode, as the goldens were made
    Session session(*model, so);
    const std::vector<float> logits = session.eval(prompt, /*all_logits=*/true);
    ASSERT_EQ(logits.size(), prompt.size() * n_vocab);
    double worst = 0;
    for (size_t p = 0; p < prompt.size(); ++p) {
        const double d = test::max_abs_diff(row(logits, p, n_vocab), row(ref, p, n_vocab));
        worst = std::max(worst, d);
        check_position(d, "prompt position " + std::to_string(p));
    }

    std::vector<float> step = row(logits, prompt.size() - 1, n_vocab);
    // The greedy checks take the loose bound at a position whose logits moved past `bound`.
    double step_d = test::max_abs_diff(step, row(ref, prompt.size() - 1, n_vocab));
    int ties = 0;
    for (size_t i = 0; i < greedy.size(); ++i) {
        SCOPED_TRACE("greedy step " + std::to_string(i));
        const size_t r = prompt.size() - 1 + i;
        if (i > 0) {
            step = session.eval({greedy[i - 1]});
            step_d = test::max_abs_diff(step, row(ref, r, n_vocab));
            worst = std::max(worst, step_d);
            check_position(step_d, "greedy step " + std::to_string(i));
        }
        const auto [ref_gap, ref_best] = top_gap(row(ref, r, n_vocab));
        ASSERT_EQ(ref_best, greedy[i]) << "the golden logits and greedy text disagree";
        const auto [gap, best] = top_gap(step);
        const double step_bound = step_d <= bound ? bound : loose;
        if (ref_gap > 2 * step_bound) {
            EXPECT_EQ(best, greedy[i]) << "llama.cpp's margin " << ref_gap;
        } else {
            ++ties;
            EXPECT_LE(step[size_t(best)] - step[size_t(greedy[i])], 2 * step_bound) << "a near-tie, margin " << ref_gap;
        }
    }
    if (!mix) EXPECT_LE(flips, kMaxRoundingFlips) << "positions further than " << bound << " from llama.cpp";
    std::cout << name << ": max |logit - llama.cpp| " << worst << " (bound " << bound << " at all but " << flips
              << " positions), " << ties << " of " << greedy.size() << " greedy steps near-ties\n";
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

// The CPU reference forward (engine/reference), which decodes every weight through engine/gguf,
// on the same files and positions, in one batch; no GPU support needed. It rounds activations and
// sums IQ4_NL dots as llama.cpp's CPU backend does (cpu::matmul), so a file in one type must be
// within 1e-3 of llama.cpp at every position; a mix within llama.cpp's Vulkan-to-CPU distance.
TEST_P(IquantModel, CpuReferenceMatchesLlamaCpp) {
    const std::string name = GetParam(), base = golden_dir() + name;
    auto file = gguf::File::open(base + ".gguf");
    const double bound = name.rfind("mix-", 0) == 0 ? logit_bound() : 1e-3;
    std::vector<int32_t> tokens = test::read_ids(base + ".tokens.txt");
    const std::vector<int32_t> greedy = test::read_ids(base + ".greedy.txt");
    tokens.insert(tokens.end(), greedy.begin(), greedy.end() - 1);
    const std::vector<float> ref = test::read_f32(base + ".logits.f32");
    const model::ModelSpec spec = model::ModelSpec::from_gguf(*file);  // the forward keeps a reference
    model::ReferenceForward forward(*file, spec, 128);
    const std::vector<float> logits = forward.eval(tokens);
    ASSERT_EQ(logits.size(), ref.size());
    const double d = test::max_abs_diff(logits, ref);
    std::cout << name << ": CPU reference max |logit - llama.cpp| " << d << "\n";
    EXPECT_LE(d, bound);
}

INSTANTIATE_TEST_SUITE_P(Golden, IquantModel, ::testing::ValuesIn(golden_models()), [](const auto& info) {
    std::string n = info.param;
    std::replace_if(n.begin(), n.end(), [](char c) { return !std::isalnum(c); }, '_');
    return n;
});

// Every i-quant and ternary type appears in some golden file, and each file holds the type its
// models.txt line names.
TEST(IquantModels, EveryTypeHasAGoldenFile) {
    std::set<std::string> seen;
    for (const std::string& name : golden_models())
        for (const auto& t : gguf::File::open(golden_dir() + name + ".gguf")->tensors()) seen.insert(gguf::type_traits(t.type)->name);
    using namespace gguf;
    for (TensorType t : {TensorType::IQ2_XXS, TensorType::IQ2_XS, TensorType::IQ2_S, TensorType::IQ3_XXS, TensorType::IQ3_S, TensorType::IQ1_S, TensorType::IQ1_M, TensorType::IQ4_NL, TensorType::IQ4_XS, TensorType::TQ1_0, TensorType::TQ2_0})
        EXPECT_TRUE(seen.count(type_traits(t)->name)) << "no golden file holds " << type_traits(t)->name;
}

}  // namespace
}  // namespace vkllm
