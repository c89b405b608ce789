// Session::generate through the public API: greedy tokens against llama.cpp's goldens, stop
// strings, every stop reason, prefix reuse, truncation (sliding-window rings included), the
// sampler funnel, the per-token alternatives, a token constraint of the caller's and the logit
// bias.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "gpu_test.h"
#include "test_support.h"
#include "vkllm/generate.h"
#include "vkllm/json_output.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

class Generate : public test::GpuTest {
protected:
    static const Model& dense() {
        static std::unique_ptr<Model> m = Model::load(test::source_dir() + "/assets/zoo/zoo-dense.gguf");
        return *m;
    }
    static const Model& swa() {
        static std::unique_ptr<Model> m = Model::load(test::source_dir() + "/assets/zoo/zoo-swa.gguf");
        return *m;
    }
    static std::vector<std::string> prompts() {
        return test::read_lines(test::source_dir() + "/tests/golden/zoo/prompts.txt");
    }
    static GenerateOptions greedy(int max_tokens) {
        GenerateOptions o;
        o.sampler.temperature = 0.0f;
        o.max_tokens = max_tokens;
        return o;
    }
    static std::string concat_texts(const std::vector<TokenEvent>& events) {
        std::string s;
        for (const TokenEvent& e : events) s += e.text;
        return s;
    }
};

// The generated tokens of `prompt` in a session of its own.
GenerateResult fresh_generate(const Model& m, const std::vector<int32_t>& prompt, const GenerateOptions& o,
                              const SessionOptions& so = {}) {
    Session s(m, so);
    return s.generate(prompt, o);
}

std::vector<double> log_softmax(const std::vector<float>& logits) {
    double mx = *std::max_element(logits.begin(), logits.end()), sum = 0;
    for (float l : logits) sum += std::exp(double(l) - mx);
    std::vector<double> out;
    for (float l : logits) out.push_back(double(l) - mx - std::log(sum));
    return out;
}

// llama.cpp's golden greedy tokens run on past the end-of-generation token; generate() stops
// at it (prompts 1 and 2 reach one), so the tokens are the golden ones up to and including it.
TEST_F(Generate, GreedyTokensEqualLlamaCppsAndTheEventsDescribeThem) {
    const Model& m = dense();
    const auto ps = prompts();
    for (size_t i : {1, 2}) {
        SCOPED_TRACE("prompt '" + ps[i] + "'");
        const std::string golden = test::source_dir() + "/tests/golden/zoo/zoo-dense-" + std::to_string(i);
        const std::vector<int32_t> prompt = m.tokenize(ps[i], true);
        std::vector<int32_t> expected = test::read_ids(golden + ".greedy.txt");
        const auto eog = std::find_if(expected.begin(), expected.end(), [&](int32_t t) { return m.is_eog(t); });
        ASSERT_NE(eog, expected.end()) << "the golden text was expected to reach an end-of-generation token";
        expected.erase(eog + 1, expected.end());
        Session session(m);
        std::vector<TokenEvent> events;
        GenerateOptions o = greedy(48);
        o.top_n = 3;
        const GenerateResult r = session.generate(prompt, o, [&](const TokenEvent& e) {
            events.push_back(e);
            return true;
        });
        EXPECT_EQ(r.reason, StopReason::EndOfGeneration) << to_string(r.reason) << " " << r.message;
        EXPECT_EQ(r.tokens, expected);
        EXPECT_EQ(r.n_prompt, int(prompt.size()));
        EXPECT_EQ(r.n_prompt_evaluated, int(prompt.size()));
        EXPECT_GT(r.prompt_seconds, 0.0);
        EXPECT_GT(r.decode_seconds, 0.0);
        EXPECT_GE(r.first_token_seconds, r.prompt_seconds);
        // The cache holds the prompt and every generated token but the last (never evaluated).
        std::vector<int32_t> cached = prompt;
        cached.insert(cached.end(), r.tokens.begin(), r.tokens.end() - 1);
        EXPECT_EQ(session.tokens(), cached);

        ASSERT_EQ(events.size(), r.tokens.size());
        std::string pieces;
        for (size_t k = 0; k < events.size(); ++k) {
            const TokenEvent& e = events[k];
            EXPECT_EQ(e.index, int(k));
            EXPECT_EQ(e.position, int(prompt.size() + k));
            EXPECT_EQ(e.id, r.tokens[k]);
            EXPECT_EQ(e.piece, m.piece(e.id));
            EXPECT_EQ(e.end_of_generation, k + 1 == events.size());
            if (!e.end_of_generation) pieces += e.piece;
            // Greedy: the chosen token is the most likely, so it leads the alternatives.
            ASSERT_EQ(e.top.size(), 3u);
            EXPECT_EQ(e.top[0].id, e.id);
            EXPECT_FLOAT_EQ(e.top[0].logprob, e.logprob);
            EXPECT_LE(e.logprob, 0.0f);
            EXPECT_GE(e.top[0].logprob, e.top[1].logprob);
            EXPECT_GE(e.top[1].logprob, e.top[2].logprob);
            EXPECT_EQ(e.top[1].piece, m.piece(e.top[1].id));
        }
        EXPECT_TRUE(events.back().text.empty());
        EXPECT_EQ(r.text, pieces);  // ASCII stories: every piece is complete text
        EXPECT_EQ(concat_texts(events), r.text);

        const SessionSnapshot snap = session.snapshot();
        EXPECT_FALSE(snap.generating);
        EXPECT_EQ(snap.step, int(r.tokens.size()));
        EXPECT_EQ(snap.generated_text, r.text);
        EXPECT_EQ(snap.generated.size(), events.size());
        EXPECT_EQ(snap.tokens, session.tokens());
    }
}

// The event's log-probability and alternatives are the model's own distribution: the log
// softmax of the logits eval() gives for the same prompt.
TEST_F(Generate, LogprobsAndAlternativesAreTheLogSoftmaxOfTheLogits) {
    const Model& m = dense();
    const std::vector<int32_t> prompt = m.tokenize(prompts()[1], true);
    Session ref(m);
    const std::vector<double> lp = log_softmax(ref.eval(prompt));

    GenerateOptions o;
    o.sampler.seed = 5;
    o.sampler.temperature = 1.5f;
    o.max_tokens = 1;
    o.top_n = 8;
    std::vector<TokenEvent> events;
    Session session(m);
    session.generate(prompt, o, [&](const TokenEvent& e) {
        events.push_back(e);
        return true;
    });
    ASSERT_EQ(events.size(), 1u);
    const TokenEvent& e = events[0];
    EXPECT_NEAR(e.logprob, lp[size_t(e.id)], 1e-4);
    std::vector<int32_t> order(lp.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = int32_t(i);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return lp[size_t(a)] > lp[size_t(b)]; });
    ASSERT_EQ(e.top.size(), 8u);
    for (size_t k = 0; k < 8; ++k) {
        EXPECT_EQ(e.top[k].id, order[k]) << k;
        EXPECT_NEAR(e.top[k].logprob, lp[size_t(order[k])], 1e-4) << k;
    }
}

// A stop string is never released: the text ends right before it, and text + stop is a prefix
// of what generation would have said without it; one that straddles two tokens is held back
// across them. A stop string that never appears changes nothing.
TEST_F(Generate, StopStringsCutTheTextBeforeTheStop) {
    const Model& m = dense();
    const std::vector<int32_t> prompt = m.tokenize(prompts()[0], true);
    const GenerateResult full = fresh_generate(m, prompt, greedy(32));
    const std::string& u = full.text;
    ASSERT_GT(u.size(), 40u);

    // A stop of 4 bytes across a token boundary, at its first occurrence.
    size_t boundary = 0, stop_at = std::string::npos;
    for (size_t k = 0; k + 1 < full.tokens.size() && stop_at == std::string::npos; ++k) {
        boundary += m.piece(full.tokens[k]).size();
        if (boundary >= 10 && boundary + 2 <= u.size() && u.find(u.substr(boundary - 2, 4)) == boundary - 2)
            stop_at = boundary - 2;
    }
    ASSERT_NE(stop_at, std::string::npos) << u;
    const std::string stop = u.substr(stop_at, 4);

    GenerateOptions o = greedy(32);
    o.stop = {"never in a story \x01", stop};
    std::vector<TokenEvent> events;
    Session session(m);
    const GenerateResult r = session.generate(prompt, o, [&](const TokenEvent& e) {
        events.push_back(e);
        return true;
    });
    EXPECT_EQ(r.reason, StopReason::StopString);
    EXPECT_EQ(r.text, u.substr(0, stop_at)) << "stop '" << stop << "'";
    EXPECT_EQ(r.text.find(stop), std::string::npos);
    EXPECT_EQ(u.rfind(r.text + stop, 0), 0u);
    EXPECT_EQ(concat_texts(events), r.text);
    EXPECT_LT(r.tokens.size(), full.tokens.size());
    EXPECT_TRUE(std::equal(r.tokens.begin(), r.tokens.end(), full.tokens.begin()));
    // Nothing of the stop was released early: every prefix of events' text is a prefix of r.text.
    std::string released;
    for (const TokenEvent& e : events) {
        released += e.text;
        EXPECT_EQ(released.find(stop.substr(0, 2), stop_at), std::string::npos);
    }

    // The text ends with the beginning of a stop string that never completes: held back by the
    // events, then released by the last one. A stop string that never appears changes nothing.
    std::string u12;
    for (size_t k = 0; k < 12; ++k) u12 += m.piece(full.tokens[k]);
    o = greedy(12);
    o.stop = {u12.substr(u12.size() - 2) + "\x01", "zzzz-not-there"};
    events.clear();
    const GenerateResult held = Session(m).generate(prompt, o, [&](const TokenEvent& e) {
        events.push_back(e);
        return true;
    });
    EXPECT_EQ(held.reason, StopReason::MaxTokens);
    EXPECT_EQ(held.text, u12);
    ASSERT_EQ(events.size(), 12u);
    EXPECT_EQ(concat_texts(events), u12);
    EXPECT_GE(events.back().text.size(), 2u);

    o.stop = {""};
    const GenerateResult bad = fresh_generate(m, prompt, o);
    EXPECT_EQ(bad.reason, StopReason::Error);
    EXPECT_NE(bad.message.find("stop string"), std::string::npos) << bad.message;
}

TEST_F(Generate, MaxTokensCallbackCancelAndContextFull) {
    const Model& m = dense();
    const std::vector<int32_t> prompt = m.tokenize(prompts()[2], true);

    const GenerateResult five = fresh_generate(m, prompt, greedy(5));
    EXPECT_EQ(five.reason, StopReason::MaxTokens);
    EXPECT_EQ(five.tokens.size(), 5u);

    Session zero(m);
    const GenerateResult none = zero.generate(prompt, greedy(0));
    EXPECT_EQ(none.reason, StopReason::MaxTokens);
    EXPECT_TRUE(none.tokens.empty());
    EXPECT_EQ(none.n_prompt_evaluated, int(prompt.size()));
    EXPECT_EQ(zero.n_past(), int(prompt.size()));

    Session cb(m);
    const GenerateResult by_callback = cb.generate(prompt, greedy(40), [](const TokenEvent& e) { return e.index < 2; });
    EXPECT_EQ(by_callback.reason, StopReason::Callback);
    EXPECT_EQ(by_callback.tokens, std::vector<int32_t>(five.tokens.begin(), five.tokens.begin() + 3));

    Session cancelled(m);
    const GenerateResult by_cancel = cancelled.generate(prompt, greedy(40), [&](const TokenEvent& e) {
        if (e.index == 3) cancelled.cancel();
        return true;
    });
    EXPECT_EQ(by_cancel.reason, StopReason::Cancelled);
    EXPECT_EQ(by_cancel.tokens.size(), 4u);
    // The next generate starts afresh (the cancel belonged to the one that ran).
    EXPECT_EQ(cancelled.generate(prompt, greedy(2)).reason, StopReason::MaxTokens);

    const GenerateResult throws = fresh_generate(m, prompt, greedy(4));
    Session thrower(m);
    const GenerateResult by_throw =
        thrower.generate(prompt, greedy(4), [](const TokenEvent&) -> bool { throw std::runtime_error("callback broke"); });
    EXPECT_EQ(by_throw.reason, StopReason::Error);
    EXPECT_EQ(by_throw.message, "callback broke");
    EXPECT_EQ(by_throw.tokens.size(), 1u);

    // Room for 3 more tokens: the 4th is sampled but cannot be evaluated.
    SessionOptions small;
    small.n_ctx = int(prompt.size()) + 3;
    const GenerateResult full = fresh_generate(m, prompt, greedy(40), small);
    EXPECT_EQ(full.reason, StopReason::ContextFull);
    EXPECT_EQ(full.tokens, std::vector<int32_t>(throws.tokens.begin(), throws.tokens.begin() + 4));
    EXPECT_NE(full.message.find("context"), std::string::npos);

    small.n_ctx = int(prompt.size()) - 1;
    const GenerateResult too_long = fresh_generate(m, prompt, greedy(4), small);
    EXPECT_EQ(too_long.reason, StopReason::ContextFull);
    EXPECT_TRUE(too_long.tokens.empty());
    EXPECT_NE(too_long.message.find("longer than the context"), std::string::npos) << too_long.message;
}

TEST_F(Generate, BadInputIsAnErrorAndLeavesTheCacheAlone) {
    const Model& m = dense();
    const std::vector<int32_t> prompt = m.tokenize(prompts()[0], true);
    Session session(m);
    session.eval(prompt);
    GenerateOptions o = greedy(4);
    o.sampler.top_p = 1.5f;
    GenerateResult r = session.generate(prompt, o);
    EXPECT_EQ(r.reason, StopReason::Error);
    EXPECT_NE(r.message.find("top_p"), std::string::npos) << r.message;
    r = session.generate({}, greedy(4));
    EXPECT_EQ(r.reason, StopReason::Error);
    std::vector<int32_t> bad = prompt;
    bad.back() = m.n_vocab();
    r = session.generate(bad, greedy(4));
    EXPECT_EQ(r.reason, StopReason::Error);
    EXPECT_NE(r.message.find("outside the vocabulary"), std::string::npos) << r.message;
    EXPECT_EQ(session.tokens(), prompt);
}

// A second generate whose prompt extends the first's conversation evaluates only what is new,
// and gives what a fresh session gives; the same prompt again evaluates its last token only.
TEST_F(Generate, PrefixReuseEvaluatesOnlyTheNewSuffix) {
    const Model& m = dense();
    const std::vector<int32_t> a = m.tokenize(prompts()[0], true);
    Session session(m);
    const GenerateResult first = session.generate(a, greedy(6));
    ASSERT_EQ(first.tokens.size(), 6u);
    std::vector<int32_t> b = a;
    b.insert(b.end(), first.tokens.begin(), first.tokens.end());
    const std::vector<int32_t> more = m.tokenize(" Tom", false);
    b.insert(b.end(), more.begin(), more.end());

    const GenerateResult second = session.generate(b, greedy(8));
    EXPECT_EQ(second.n_prompt, int(b.size()));
    EXPECT_EQ(second.n_prompt_evaluated, int(1 + more.size()));  // the last generated token + the new text
    EXPECT_EQ(second.tokens, fresh_generate(m, b, greedy(8)).tokens);

    const GenerateResult again = session.generate(b, greedy(8));
    EXPECT_EQ(again.n_prompt_evaluated, 1);
    EXPECT_EQ(again.tokens, second.tokens);

    // A different ending: the common prefix is kept, the rest evaluated.
    std::vector<int32_t> c(a.begin(), a.end() - 1);
    const std::vector<int32_t> other = m.tokenize(" dog", false);
    c.insert(c.end(), other.begin(), other.end());
    const GenerateResult third = session.generate(c, greedy(8));
    EXPECT_EQ(third.n_prompt_evaluated, int(other.size()));
    EXPECT_EQ(third.tokens, fresh_generate(m, c, greedy(8)).tokens);
}

TEST_F(Generate, TruncateThenGenerateEqualsAFreshSession) {
    const Model& m = dense();
    const std::vector<int32_t> a = m.tokenize(prompts()[3], true);
    Session session(m);
    session.generate(a, greedy(8));
    EXPECT_THROW(session.truncate(session.n_past() + 1), std::invalid_argument);
    session.truncate(5);
    EXPECT_EQ(session.n_past(), 5);
    EXPECT_EQ(session.tokens(), std::vector<int32_t>(a.begin(), a.begin() + 5));
    const std::vector<int32_t> b = m.tokenize(prompts()[1], true);
    const std::vector<float> after = session.eval(std::vector<int32_t>(b.begin() + 5, b.end()));
    // The cache's first 5 tokens are a's, so compare with a fresh session fed the same tokens.
    std::vector<int32_t> mixed(a.begin(), a.begin() + 5);
    mixed.insert(mixed.end(), b.begin() + 5, b.end());
    Session fresh(m);
    EXPECT_LE(test::max_abs_diff(after, fresh.eval(mixed)), 1e-5);
    EXPECT_EQ(session.generate(mixed, greedy(6)).tokens, fresh_generate(m, mixed, greedy(6)).tokens);
    session.reset();
    EXPECT_EQ(session.n_past(), 0);
    EXPECT_EQ(session.generate(b, greedy(6)).tokens, fresh_generate(m, b, greedy(6)).tokens);
}

// zoo-swa: 5 of 6 layers see a window of 32 positions, through a ring of window + n_batch - 1
// = 39 slots here. Truncating far back loses positions the window still needs (their slots
// were reused by the dropped ones), so the session rebuilds the cache; truncating a little keeps
// them. Either way the logits equal those of a fresh session fed the same tokens in the same
// evals (so in the same forward passes).
TEST_F(Generate, TruncateOnSlidingWindowRingsEqualsAFreshSession) {
    const Model& m = swa();
    std::vector<int32_t> tokens;
    for (const std::string& p : prompts()) {
        const auto t = m.tokenize(p + " ", tokens.empty());
        tokens.insert(tokens.end(), t.begin(), t.end());
    }
    ASSERT_GE(tokens.size(), 56u) << "the test needs a prompt well past the window of 32";
    SessionOptions so;
    so.n_batch = 8;
    so.n_ctx = 96;
    const Session::KvCacheUsage kv = Session(m, so).kv_cache_usage();
    ASSERT_EQ(kv.local_layers, 5 * kv.global_layers);
    ASSERT_LT(kv.local_bytes, kv.global_bytes * uint64_t(kv.local_layers / kv.global_layers)) << "no rings";
    const int n = int(tokens.size());
    const std::vector<int32_t> tail = m.tokenize(" Tom was happy.", false);
    for (int keep : {n - 2, 40}) {
        SCOPED_TRACE("truncate to " + std::to_string(keep) + " of " + std::to_string(n));
        const std::vector<int32_t> kept(tokens.begin(), tokens.begin() + keep);
        Session fresh(m, so);
        fresh.eval(kept);
        const std::vector<float> want = fresh.eval(tail, true);

        Session session(m, so);
        session.eval(tokens);
        session.truncate(keep);
        EXPECT_EQ(session.tokens(), kept);
        EXPECT_LE(test::max_abs_diff(session.eval(tail, true), want), 1e-5);

        // generate() truncates the same way for a prompt that departs from the cache.
        std::vector<int32_t> all = kept;
        all.insert(all.end(), tail.begin(), tail.end());
        Session g(m, so);
        g.eval(tokens);
        const GenerateResult r = g.generate(all, greedy(4));
        EXPECT_EQ(r.tokens, fresh.generate(all, greedy(4)).tokens);
        EXPECT_GE(r.n_prompt_evaluated, int(tail.size()));
    }
}

// The funnel of every token: six stages in order, candidates and mass never grow, the last
// stage is what was drawn from; greedy ends at one candidate, the most likely token.
TEST_F(Generate, FunnelStagesAreMonotone) {
    const Model& m = dense();
    const std::vector<int32_t> prompt = m.tokenize(prompts()[0], true);
    for (float temperature : {0.0f, 0.9f}) {
        SCOPED_TRACE("temperature " + std::to_string(temperature));
        GenerateOptions o;
        o.sampler.temperature = temperature;
        o.sampler.seed = 11;
        o.sampler.top_k = 20;
        o.max_tokens = 12;
        o.funnel = true;
        std::vector<TokenEvent> events;
        Session session(m);
        session.generate(prompt, o, [&](const TokenEvent& e) {
            events.push_back(e);
            return true;
        });
        ASSERT_EQ(events.size(), 12u);
        for (const TokenEvent& e : events) {
            const auto& st = e.funnel.stages;
            ASSERT_EQ(st.size(), 6u);
            EXPECT_EQ(st[0].stage, "vocabulary");
            EXPECT_EQ(st[0].candidates, m.n_vocab());
            EXPECT_NEAR(st[0].mass, 1.0f, 1e-5);
            EXPECT_EQ(st[5].stage, "temperature");
            for (size_t i = 1; i < st.size(); ++i) {
                EXPECT_LE(st[i].candidates, st[i - 1].candidates);
                EXPECT_LE(st[i].mass, st[i - 1].mass + 1e-6f);
            }
            EXPECT_GE(st[5].candidates, 1);
            EXPECT_GT(e.funnel.chosen_p, 0.0f);
            if (temperature == 0.0f) {
                EXPECT_EQ(st[5].candidates, 1);
                EXPECT_EQ(e.funnel.chosen_rank, 0);
                EXPECT_NEAR(st[5].mass, std::exp(e.logprob), 1e-5);
            } else {
                EXPECT_LE(st[2].candidates, 20);
                EXPECT_LT(e.funnel.chosen_rank, 20);
            }
        }
    }
}

// A constraint of the caller's: one to three ASCII digits (complete after one, closed after three).
class Digits : public TokenConstraint {
public:
    bool feed(std::string_view b) override {
        if (!accepts(b)) return false;
        text_ += b;
        return true;
    }
    bool accepts(std::string_view b) const override {
        return text_.size() + b.size() <= 3 && std::all_of(b.begin(), b.end(), [](char c) { return c >= '0' && c <= '9'; });
    }
    bool complete() const override { return !text_.empty(); }
    bool closed() const override { return text_.size() == 3; }
    std::string text_name() const override { return "the digits"; }

private:
    std::string text_;
};

// Accepts nothing: no token can be sampled.
class Nothing : public Digits {
public:
    bool accepts(std::string_view) const override { return false; }
    bool complete() const override { return false; }
};

TEST_F(Generate, TheConstraintDecidesEveryToken) {
    const Model& m = dense();
    const std::vector<int32_t> prompt = m.tokenize(prompts()[0], true);
    const TokenBytes bytes(m);
    for (uint64_t seed : {1, 2}) {
        Session session(m);
        Digits digits;
        GenerateOptions o = greedy(10);
        o.sampler.temperature = 1.0f;
        o.sampler.seed = seed;
        o.constraint = {&digits, seed == 1 ? &bytes : nullptr};  // the bytes read from the model when not given
        std::vector<TokenEvent> events;
        const GenerateResult r = session.generate(prompt, o, [&](const TokenEvent& e) {
            events.push_back(e);
            return true;
        });
        ASSERT_EQ(r.reason, StopReason::EndOfGeneration) << r.message;
        ASSERT_TRUE(r.text.size() >= 1 && r.text.size() <= 3) << r.text;
        for (char c : r.text) EXPECT_TRUE(c >= '0' && c <= '9') << r.text;
        EXPECT_EQ(concat_texts(events), r.text);
        // Ended on a closed matcher, or on an end-of-generation token where it was complete.
        EXPECT_TRUE(r.text.size() == 3 || m.is_eog(r.tokens.back())) << r.text;
    }
    Session session(m);
    Nothing nothing;
    GenerateOptions o = greedy(4);
    o.constraint.matcher = &nothing;
    GenerateResult r = session.generate(prompt, o);
    EXPECT_EQ(r.reason, StopReason::Error);
    EXPECT_NE(r.message.find("no token of the vocabulary continues the digits"), std::string::npos) << r.message;
    Session draft(m);
    Digits digits;
    o.constraint.matcher = &digits;
    o.draft.session = &draft;
    r = session.generate(prompt, o);
    EXPECT_EQ(r.reason, StopReason::Error);
    EXPECT_NE(r.message.find("not combined with constrained output"), std::string::npos) << r.message;
}

TEST_F(Generate, LogitBiasBansAndForcesTokens) {
    const Model& m = dense();
    const std::vector<int32_t> prompt = m.tokenize(prompts()[0], true);
    Session session(m);
    const GenerateResult plain = session.generate(prompt, greedy(3));
    ASSERT_EQ(plain.tokens.size(), 3u);
    GenerateOptions o = greedy(3);
    o.sampler.logit_bias[plain.tokens[0]] = -100.0f;
    const GenerateResult banned = session.generate(prompt, o);
    ASSERT_FALSE(banned.tokens.empty()) << banned.message;
    EXPECT_NE(banned.tokens[0], plain.tokens[0]);
    for (int32_t t : banned.tokens) EXPECT_NE(t, plain.tokens[0]);
    // Forced under sampling: every token is the biased one.
    o = greedy(3);
    o.sampler.temperature = 1.0f;
    o.sampler.logit_bias[plain.tokens[1]] = 100.0f;
    EXPECT_EQ(session.generate(prompt, o).tokens, std::vector<int32_t>(3, plain.tokens[1]));
    o.sampler.logit_bias[m.n_vocab()] = 1.0f;
    const GenerateResult outside = session.generate(prompt, o);
    EXPECT_EQ(outside.reason, StopReason::Error);
    EXPECT_NE(outside.message.find("logit_bias"), std::string::npos) << outside.message;
}

TEST(GenerateNames, StopReasonsHaveNames) {
    EXPECT_STREQ(to_string(StopReason::EndOfGeneration), "end_of_generation");
    EXPECT_STREQ(to_string(StopReason::StopString), "stop_string");
    EXPECT_STREQ(to_string(StopReason::Cancelled), "cancelled");
}

}  // namespace
}  // namespace vkllm
