// Session::prepare: the pipelines a first prompt and the decode steps after it use are compiled
// ahead, with progress; the generation that follows compiles nothing more and answers as it
// would without the preparation.
#include <gtest/gtest.h>

#include <stdexcept>

#include "gpu/device.h"
#include "model/model_internal.h"
#include "test_support.h"
#include "vkllm/generate.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

std::string zoo(const std::string& name) { return test::source_dir() + "/assets/zoo/" + name + ".gguf"; }

size_t pipelines(const Model& m) { return m.internals().context().pipeline_count(); }

std::vector<int32_t> greedy(Session& s, const std::vector<int32_t>& prompt, int n) {
    GenerateOptions o;
    o.max_tokens = n;
    o.sampler.temperature = 0;
    const GenerateResult r = s.generate(prompt, o);
    EXPECT_NE(r.reason, StopReason::Error) << r.message;
    return r.tokens;
}

// Prepares `session` for `prompt`, checks the progress it reported, and returns how many
// pipelines it compiled.
int prepare_checked(Session& session, const std::vector<int32_t>& prompt) {
    const Model& m = session.model();
    const size_t before = pipelines(m);
    std::vector<PrepareProgress> seen;
    PrepareOptions o;
    o.prompt_tokens = int(prompt.size());
    const PrepareProgress last = session.prepare(o, [&](const PrepareProgress& p) { seen.push_back(p); });
    EXPECT_EQ(pipelines(m), before + size_t(last.total));
    EXPECT_EQ(last.done, last.total);
    if (seen.empty()) {
        ADD_FAILURE() << "no progress reported";
        return last.total;
    }
    EXPECT_EQ(seen.front().done, 0);
    for (size_t i = 1; i < seen.size(); ++i) {
        EXPECT_GE(seen[i].done, seen[i - 1].done);
        EXPECT_EQ(seen[i].total, last.total);
    }
    if (last.total > 0) EXPECT_FALSE(seen.back().what.empty());
    return last.total;
}

class PrepareZoo : public ::testing::TestWithParam<const char*> {};

TEST_P(PrepareZoo, GenerationAfterPrepareCompilesNothingAndAnswersTheSame) {
    auto model = Model::load(zoo(GetParam()));
    SessionOptions so;
    so.n_ctx = 128;
    Session session(*model, so);
    const std::vector<int32_t> prompt = model->tokenize("Once upon a time, Tom", true);
    EXPECT_GT(prepare_checked(session, prompt), 0) << "a fresh model has every pipeline to compile";
    const size_t prepared = pipelines(*model);
    const std::vector<int32_t> answer = greedy(session, prompt, 8);
    EXPECT_EQ(pipelines(*model), prepared) << "the generation compiled a pipeline the preparation missed";
    PrepareOptions again;
    again.prompt_tokens = int(prompt.size());
    EXPECT_EQ(session.prepare(again).total, 0) << "everything is compiled already";

    // The same model without the preparation gives the same tokens.
    auto unprepared = Model::load(zoo(GetParam()));
    Session plain(*unprepared, so);
    EXPECT_EQ(greedy(plain, prompt, 8), answer);
}

INSTANTIATE_TEST_SUITE_P(Zoo, PrepareZoo, ::testing::Values("zoo-dense", "zoo-moe", "zoo-mla"));

// A prompt longer than a batch runs in several passes; probes change the recording (no replay,
// probe copies): both are foreseen.
TEST(Prepare, CoversPassesOfABatchAndProbes) {
    auto model = Model::load(zoo("zoo-swa"));
    SessionOptions so;
    so.n_ctx = 128;
    so.n_batch = 8;
    so.probes.attention_layers = {0, 1};
    so.probes.residual_stats = true;
    Session session(*model, so);
    std::vector<int32_t> prompt = model->tokenize("Once upon a time there was a little dog who liked to run", true);
    ASSERT_GT(prompt.size(), size_t(so.n_batch));
    prepare_checked(session, prompt);
    const size_t prepared = pipelines(*model);
    greedy(session, prompt, 4);
    EXPECT_EQ(pipelines(*model), prepared);
}

TEST(Prepare, EncoderPreparesItsOnePass) {
    auto model = Model::load(zoo("zoo-bert"));
    Session session(*model);
    const std::vector<int32_t> text = model->tokenize("Tom had a red ball.", true);
    EXPECT_GT(prepare_checked(session, text), 0);
    const size_t prepared = pipelines(*model);
    const Embeddings e = session.embed(text);
    EXPECT_EQ(e.rows, 1);
    EXPECT_EQ(pipelines(*model), prepared);
}

TEST(Prepare, RefusesBadOptionsAndStopsWhenTheCallbackThrows) {
    auto model = Model::load(zoo("zoo-dense"));
    Session session(*model);
    PrepareOptions o;
    o.prompt_tokens = 0;
    EXPECT_THROW(session.prepare(o), std::invalid_argument);
    o.prompt_tokens = 4;
    o.threads = -1;
    EXPECT_THROW(session.prepare(o), std::invalid_argument);
    o.threads = 0;
    EXPECT_THROW(session.prepare(o, [](const PrepareProgress& p) {
        if (p.done > 0) throw std::runtime_error("enough");
    }),
                 std::runtime_error);
    // What was left is compiled on first use, as without a preparation.
    const std::vector<int32_t> prompt = model->tokenize("Once upon a time", true);
    EXPECT_EQ(greedy(session, prompt, 4).size(), 4u);
}

}  // namespace
}  // namespace vkllm
