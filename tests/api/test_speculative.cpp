// Speculative decoding (DraftOptions): the output is plain generation's, token for token, for
// target/draft pairs sharing one tokenizer, at every draft length; stop strings, end of
// generation, the token budget, a full context and the callback end it as they end plain
// generation; the events carry the target's log-probabilities; a draft with another vocabulary
// is refused.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf.h"
#include "gpu_test.h"
#include "random_model/random_model.h"
#include "test_support.h"
#include "vkllm/generate.h"
#include "vkllm/gguf.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

std::unique_ptr<Model> load_zoo(const std::string& name) {
    return Model::load(test::source_dir() + "/assets/zoo/" + name + ".gguf");
}

// Each model loaded once. A function-local static initialised by the load is destroyed before
// the GPU context the load created (reverse order of construction).
const Model& zoo(const std::string& name) {
    if (name == "zoo-dense") {
        static const std::unique_ptr<Model> m = load_zoo(name);
        return *m;
    }
    if (name == "zoo-swa") {
        static const std::unique_ptr<Model> m = load_zoo(name);
        return *m;
    }
    if (name == "zoo-moe") {
        static const std::unique_ptr<Model> m = load_zoo(name);
        return *m;
    }
    throw std::invalid_argument("no zoo model " + name + " in this test");
}

std::vector<std::string> prompts() { return test::read_lines(test::source_dir() + "/tests/golden/zoo/prompts.txt"); }

GenerateOptions greedy(int max_tokens) {
    GenerateOptions o;
    o.sampler.temperature = 0.0f;
    o.max_tokens = max_tokens;
    return o;
}

struct Outcome {
    GenerateResult result;
    std::vector<TokenEvent> events;
    std::vector<int32_t> cache;  // the target session's tokens afterwards
};

// One generation in fresh sessions; with a draft model when `draft` is set. `stop_after`: the
// callback returns false at that event index.
Outcome generate(const Model& target, const Model* draft, const std::vector<int32_t>& prompt, GenerateOptions o,
             int n_draft = 4, const SessionOptions& so = {}, int stop_after = -1) {
    Session session(target, so);
    std::unique_ptr<Session> draft_session;
    if (draft) {
        draft_session = std::make_unique<Session>(*draft, so);
        o.draft = {draft_session.get(), n_draft};
    }
    Outcome run;
    run.result = session.generate(prompt, o, [&](const TokenEvent& e) {
        run.events.push_back(e);
        return e.index != stop_after;
    });
    run.cache = session.tokens();
    return run;
}

// Same tokens, text, reason, events and cache; the log-probabilities of the target's rows,
// batched or not, within rounding.
void expect_same_generation(const Outcome& plain, const Outcome& spec) {
    EXPECT_EQ(spec.result.reason, plain.result.reason)
        << to_string(spec.result.reason) << " vs " << to_string(plain.result.reason) << ": " << spec.result.message;
    EXPECT_EQ(spec.result.tokens, plain.result.tokens);
    EXPECT_EQ(spec.result.text, plain.result.text);
    EXPECT_EQ(spec.result.message, plain.result.message);
    EXPECT_EQ(spec.cache, plain.cache);
    ASSERT_EQ(spec.events.size(), plain.events.size());
    for (size_t k = 0; k < plain.events.size(); ++k) {
        const TokenEvent &a = plain.events[k], &b = spec.events[k];
        EXPECT_EQ(b.index, a.index);
        EXPECT_EQ(b.position, a.position);
        EXPECT_EQ(b.id, a.id) << "event " << k;
        EXPECT_EQ(b.text, a.text) << "event " << k;
        EXPECT_EQ(b.end_of_generation, a.end_of_generation);
        EXPECT_NEAR(b.logprob, a.logprob, 1e-3) << "event " << k;
        ASSERT_EQ(b.top.size(), a.top.size());
        for (size_t j = 0; j < a.top.size(); ++j) EXPECT_NEAR(b.top[j].logprob, a.top[j].logprob, 1e-3);
    }
    EXPECT_LE(spec.result.draft_accepted, spec.result.draft_proposed);
    EXPECT_EQ(plain.result.draft_proposed, 0);
}

class Speculative : public test::GpuTest {};

// The zoo's models share one tokenizer: a Gemma 3 sliding-window target and a Mixtral MoE
// target, each with the dense Llama as draft, at draft lengths 1, 3 and 8 (other prompts: the
// tests below).
TEST_F(Speculative, GreedyOutputIsPlainGreedyForZooPairsAtEveryDraftLength) {
    const Model& draft = zoo("zoo-dense");
    const std::pair<const char*, size_t> cases[] = {{"zoo-swa", 0}, {"zoo-moe", 3}};  // target, prompt
    for (const auto& [target_name, prompt_index] : cases) {
        const Model& target = zoo(target_name);
        const std::string text = prompts()[prompt_index];
        const std::vector<int32_t> prompt = target.tokenize(text, true);
        GenerateOptions o = greedy(24);
        o.top_n = 2;
        const Outcome plain = generate(target, nullptr, prompt, o);
        for (int k : {1, 3, 8}) {
            SCOPED_TRACE(std::string(target_name) + ", K " + std::to_string(k) + ", prompt '" + text + "'");
            const Outcome spec = generate(target, &draft, prompt, o, k);
            expect_same_generation(plain, spec);
            EXPECT_GT(spec.result.draft_proposed, 0);
        }
    }
}

// A model drafting for itself agrees with itself: nearly every proposal is accepted, and each
// verification pass yields up to K + 1 tokens. Prompt 1 ends in an end-of-generation token
// (tests/api/test_generate.cpp), which ends the speculative run at the same token.
TEST_F(Speculative, ADraftEqualToTheTargetIsAcceptedAndEndOfGenerationStopsAtTheSameToken) {
    const Model& m = zoo("zoo-dense");
    const std::vector<int32_t> prompt = m.tokenize(prompts()[1], true);
    const Outcome plain = generate(m, nullptr, prompt, greedy(48));
    ASSERT_EQ(plain.result.reason, StopReason::EndOfGeneration);
    const Outcome spec = generate(m, &m, prompt, greedy(48), 4);
    expect_same_generation(plain, spec);
    EXPECT_GE(spec.result.draft_accepted, spec.result.draft_proposed * 9 / 10)
        << spec.result.draft_accepted << " of " << spec.result.draft_proposed;
}

// Draft lengths past what is left of the budget are cut to it: the budget is met exactly.
TEST_F(Speculative, TheTokenBudgetAndDraftsLongerThanItBehaveAsPlainGeneration) {
    const Model& target = zoo("zoo-swa");
    const Model& draft = zoo("zoo-dense");
    const std::vector<int32_t> prompt = target.tokenize(prompts()[0], true);
    for (int budget : {0, 1, 2, 5}) {
        SCOPED_TRACE("budget " + std::to_string(budget));
        const Outcome plain = generate(target, nullptr, prompt, greedy(budget));
        const Outcome spec = generate(target, &draft, prompt, greedy(budget), 16);
        expect_same_generation(plain, spec);
        EXPECT_EQ(int(spec.result.tokens.size()), budget);
        // Each pass proposes at most what the budget has left after the pass's own token.
        EXPECT_LE(spec.result.draft_proposed, std::max(budget - 1, 0) * 16);
    }
    // Budget 2: one pass (the first token comes from the prompt), which may propose 1 token at most.
    EXPECT_LE(generate(target, &draft, prompt, greedy(2), 16).result.draft_proposed, 1);
}

// A stop string that straddles tokens ends both runs at the same text.
TEST_F(Speculative, StopStringsEndItAsPlainGeneration) {
    const Model& target = zoo("zoo-moe");
    const Model& draft = zoo("zoo-dense");
    const std::vector<int32_t> prompt = target.tokenize(prompts()[0], true);
    const Outcome full = generate(target, nullptr, prompt, greedy(32));
    ASSERT_GT(full.result.text.size(), 30u);
    GenerateOptions o = greedy(32);
    o.stop = {full.result.text.substr(20, 3)};
    const Outcome plain = generate(target, nullptr, prompt, o);
    ASSERT_EQ(plain.result.reason, StopReason::StopString);
    for (int k : {1, 5}) {
        SCOPED_TRACE("K " + std::to_string(k));
        expect_same_generation(plain, generate(target, &draft, prompt, o, k));
    }
}

// A context that fills: proposals are cut to the room left, and the run ends with ContextFull
// at the same token; the draft's own smaller context only shortens its proposals.
TEST_F(Speculative, AFullContextEndsItAsPlainGeneration) {
    const Model& target = zoo("zoo-swa");
    const Model& draft = zoo("zoo-dense");
    const std::vector<int32_t> prompt = target.tokenize(prompts()[3], true);
    SessionOptions so;
    so.n_ctx = int(prompt.size()) + 6;
    const Outcome plain = generate(target, nullptr, prompt, greedy(40), 4, so);
    ASSERT_EQ(plain.result.reason, StopReason::ContextFull);
    for (int k : {1, 4, 10}) {
        SCOPED_TRACE("K " + std::to_string(k));
        expect_same_generation(plain, generate(target, &draft, prompt, greedy(40), k, so));
    }

    // A draft whose context holds only the prompt proposes nothing after the first step.
    Session session(target);
    SessionOptions small;
    small.n_ctx = int(prompt.size()) + 1;
    Session draft_session(draft, small);
    GenerateOptions o = greedy(12);
    o.draft = {&draft_session, 4};
    const GenerateResult r = session.generate(prompt, o);
    EXPECT_EQ(r.tokens, generate(target, nullptr, prompt, greedy(12)).result.tokens);
    EXPECT_LE(r.draft_proposed, 1);
    EXPECT_LE(draft_session.n_past(), small.n_ctx);
}

// The callback's false ends both runs after the same token, with the same cache.
TEST_F(Speculative, TheCallbackEndsItAsPlainGeneration) {
    const Model& target = zoo("zoo-moe");
    const Model& draft = zoo("zoo-dense");
    const std::vector<int32_t> prompt = target.tokenize(prompts()[1], true);
    for (int stop_after : {0, 3, 6}) {
        SCOPED_TRACE("stop after " + std::to_string(stop_after));
        const Outcome plain = generate(target, nullptr, prompt, greedy(20), 4, {}, stop_after);
        ASSERT_EQ(plain.result.reason, StopReason::Callback);
        expect_same_generation(plain, generate(target, &draft, prompt, greedy(20), 4, {}, stop_after));
    }
}

// The draft session is reused across calls: its cache is brought to each new prompt.
TEST_F(Speculative, ADraftSessionFollowsTheTargetAcrossCalls) {
    const Model& target = zoo("zoo-swa");
    const Model& draft = zoo("zoo-dense");
    Session session(target), draft_session(draft);
    for (const std::string& text : prompts()) {
        SCOPED_TRACE(text);
        const std::vector<int32_t> prompt = target.tokenize(text, true);
        GenerateOptions o = greedy(10);
        o.draft = {&draft_session, 3};
        const GenerateResult r = session.generate(prompt, o);
        EXPECT_EQ(r.tokens, generate(target, nullptr, prompt, greedy(10)).result.tokens);
        // The draft holds a prefix of the target's context.
        const std::vector<int32_t>& d = draft_session.tokens();
        ASSERT_LE(d.size(), prompt.size() + r.tokens.size());
        std::vector<int32_t> context = prompt;
        context.insert(context.end(), r.tokens.begin(), r.tokens.end());
        EXPECT_TRUE(std::equal(d.begin(), d.end(), context.begin()));
    }
}

// Sampling: the target samples every position with plain generation's draws, so the same seed
// gives the same tokens; proposals are accepted only where the draw agrees.
TEST_F(Speculative, SamplingWithTheSameSeedGivesPlainGenerationsTokens) {
    const Model& target = zoo("zoo-swa");
    const Model& draft = zoo("zoo-dense");
    const std::vector<int32_t> prompt = target.tokenize(prompts()[0], true);
    for (uint64_t seed : {1u, 2u}) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        GenerateOptions o;
        o.sampler.temperature = 0.9f;
        o.sampler.seed = seed;
        o.sampler.repeat_penalty = 1.1f;
        o.max_tokens = 16;
        expect_same_generation(generate(target, nullptr, prompt, o), generate(target, &draft, prompt, o, 4));
    }
}

// stories260K F32 drafted by its own Q4_0 quantisation (one tokenizer, another from the zoo's).
TEST_F(Speculative, Stories260KDraftedByItsQ4_0IsPlainGreedy) {
    VKLLM_REQUIRE_SHARED(shared);
    const std::string dir = shared + "/models/stories260K/";
    auto target = Model::load(dir + "stories260K-F32.gguf");
    auto draft = Model::load(dir + "stories260K-Q4_0.gguf");
    const std::vector<int32_t> prompt = target->tokenize("Once upon a time", true);
    const Outcome plain = generate(*target, nullptr, prompt, greedy(40));
    for (int k : {1, 4, 50}) {
        SCOPED_TRACE("K " + std::to_string(k));
        const Outcome spec = generate(*target, draft.get(), prompt, greedy(40), k);
        expect_same_generation(plain, spec);
        // The quantised copy mostly agrees with its original (long drafts lose their tails).
        EXPECT_GT(spec.result.draft_accepted * 3, spec.result.draft_proposed)
            << spec.result.draft_accepted << " of " << spec.result.draft_proposed;
    }
    // Its vocabulary is not the zoo's.
    try {
        check_draft_vocabulary(*target, zoo("zoo-dense"));
        FAIL() << "a draft with another vocabulary was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("different vocabularies"), std::string::npos) << e.what();
    }
}

// A draft with as many tokens as the target but one token's text changed is refused, by
// check_draft_vocabulary and by generate (an Error result naming the token).
TEST_F(Speculative, ADraftWithAnotherVocabularyIsRefused) {
    const Model& target = zoo("zoo-dense");
    auto vocab = gguf::File::open(test::source_dir() + "/assets/zoo/zoo-dense.gguf");
    std::vector<std::string> texts = *vocab->get_strings("tokenizer.ggml.tokens");
    ASSERT_GT(texts.size(), 300u);
    random_model::RandomModelConfig c;
    c.seed = 3;
    gguf::Writer same = random_model::build_random_model(c, *vocab);
    texts[300] = "not-a-zoo-token";
    gguf::Writer other = random_model::build_random_model(c, *vocab);
    other.set("tokenizer.ggml.tokens", gguf::Value::from_strings(texts));
    const std::vector<uint8_t> same_bytes = same.to_bytes(), other_bytes = other.to_bytes();
    auto compatible = Model::load_from_memory(same_bytes.data(), same_bytes.size(), "random-same-vocab");
    auto incompatible = Model::load_from_memory(other_bytes.data(), other_bytes.size(), "random-other-vocab");

    EXPECT_NO_THROW(check_draft_vocabulary(target, *compatible));
    try {
        check_draft_vocabulary(target, *incompatible);
        FAIL() << "a draft with another vocabulary was accepted";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("token 300"), std::string::npos) << e.what();
    }

    Session session(target), draft_session(*incompatible);
    GenerateOptions o = greedy(4);
    o.draft = {&draft_session, 2};
    const GenerateResult r = session.generate(target.tokenize("Once", true), o);
    EXPECT_EQ(r.reason, StopReason::Error);
    EXPECT_NE(r.message.find("different vocabularies"), std::string::npos) << r.message;

    // Nonsense options are refused too.
    Session compatible_session(*compatible);
    o.draft = {&compatible_session, 0};
    EXPECT_EQ(session.generate(target.tokenize("Once", true), o).reason, StopReason::Error);
    o.draft = {&session, 2};
    const GenerateResult self = session.generate(target.tokenize("Once", true), o);
    EXPECT_EQ(self.reason, StopReason::Error);
    EXPECT_NE(self.message.find("another Session"), std::string::npos) << self.message;
}

}  // namespace
}  // namespace vkllm
