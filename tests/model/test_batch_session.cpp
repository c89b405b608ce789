// BatchSession (vkllm/batch.h) against one Session per slot: every step's tokens go through the
// batch and through the slot's own Session, and each slot's logits must agree within 1e-4 (of
// the largest logit) and give the same greedy token. The run has slots of different prompt
// lengths (one longer than n_batch, so chunked over passes beside the others), slots that stop
// being stepped and come back, a slot truncated to the prefix it shares with a new prompt, a
// slot emptied for a new request, and slots at different positions throughout; on zoo-dense and
// on zoo-swa, whose sliding-window rings wrap per slot. The validation layer reports nothing.
// Both run exact f32 activations: under llama.cpp's rounding zoo-swa's GELU reads an fp16 table,
// which turns a last-bit difference of summation order (a 16-row pass against a 6-row one) into
// up to 2e-4 of the largest logit, as a Session's own prefill and decode of the same tokens show.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "param_names.h"
#include "random_model_fixture.h"
#include "test_support.h"
#include "vkllm/batch.h"
#include "vkllm/batch_generate.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

int32_t argmax(const std::vector<float>& v) { return int32_t(std::max_element(v.begin(), v.end()) - v.begin()); }

std::vector<int32_t> tokens(int n, int seed, int n_vocab = 900) {
    std::vector<int32_t> t{1};
    for (int i = 1; i < n; ++i) t.push_back(int32_t(3 + (seed * 37 + i * 11) % (n_vocab - 3)));
    return t;
}

// A BatchSession and, per slot, a Session fed the same tokens.
struct Mirror {
    Mirror(const Model& m, int n_slots) {
        BatchOptions o;
        o.n_slots = n_slots;
        o.n_ctx = 160;
        o.n_batch = 16;
        o.llama_cpp_rounding = false;
        batch = std::make_unique<BatchSession>(m, o);
        SessionOptions so;
        so.n_ctx = 160;
        so.n_batch = 16;
        so.llama_cpp_rounding = false;
        for (int i = 0; i < n_slots; ++i) single.push_back(std::make_unique<Session>(m, so));
        last.resize(size_t(n_slots));
    }

    // Steps the inputs in both and compares each slot's logits.
    void step(const std::vector<BatchInput>& inputs) {
        const std::vector<std::vector<float>> got = batch->step(inputs);
        ASSERT_EQ(got.size(), inputs.size());
        for (size_t i = 0; i < inputs.size(); ++i) {
            const int slot = inputs[i].slot;
            const std::vector<float> want = single[size_t(slot)]->eval(inputs[i].tokens);
            ASSERT_EQ(got[i].size(), want.size());
            float scale = 1.0f, diff = 0.0f;
            for (size_t v = 0; v < want.size(); ++v) {
                scale = std::max(scale, std::fabs(want[v]));
                diff = std::max(diff, std::fabs(got[i][v] - want[v]));
            }
            ASSERT_LE(diff, 1e-4f * scale) << "slot " << slot << " at " << batch->tokens(slot).size() << " tokens";
            ASSERT_EQ(argmax(got[i]), argmax(want)) << "slot " << slot;
            ASSERT_EQ(batch->tokens(slot), single[size_t(slot)]->tokens());
            last[size_t(slot)] = got[i];
        }
    }
    // One greedy token for each of `slots`.
    void decode(const std::vector<int>& slots) {
        std::vector<BatchInput> in;
        for (int s : slots) in.push_back({s, {argmax(last[size_t(s)])}});
        step(in);
    }
    // Keeps the prefix the slot shares with `prompt` and evaluates the rest (at least its last
    // token, for logits), as a request joining a used slot does.
    BatchInput join(int slot, const std::vector<int32_t>& prompt) {
        const size_t keep = std::min(batch->common_prefix(slot, prompt), prompt.size() - 1);
        batch->truncate(slot, int(keep));
        single[size_t(slot)]->truncate(int(keep));
        return {slot, std::vector<int32_t>(prompt.begin() + std::ptrdiff_t(keep), prompt.end())};
    }

    std::unique_ptr<BatchSession> batch;
    std::vector<std::unique_ptr<Session>> single;
    std::vector<std::vector<float>> last;
};

class BatchMatchesSessions : public ::testing::TestWithParam<std::string> {};

TEST_P(BatchMatchesSessions, SlotsJoinLeaveAndTruncate) {
    const uint64_t errors_before = gpu::validation_error_count();
    auto model = Model::load(test::source_dir() + "/assets/zoo/" + GetParam() + ".gguf");
    Mirror m(*model, 3);
    // Prompts of 5, 40 (more than n_batch: three passes, the others decoding in the first) and 3.
    m.step({{0, tokens(5, 1)}, {1, tokens(40, 2)}, {2, tokens(3, 3)}});
    for (int i = 0; i < 6; ++i) m.decode({0, 1, 2});
    // Slot 1 pauses while the others go on, then comes back at its own position.
    for (int i = 0; i < 4; ++i) m.decode({0, 2});
    for (int i = 0; i < 3; ++i) m.decode({1, 0});
    // A new request in slot 1 shares the first 20 tokens of its prompt; slot 2 takes an unrelated
    // one (nothing kept); slot 0 decodes beside both prompts.
    std::vector<int32_t> d = tokens(40, 2);
    d.resize(20);
    const std::vector<int32_t> more = tokens(9, 4);
    d.insert(d.end(), more.begin() + 1, more.end());
    EXPECT_EQ(m.batch->common_prefix(1, d), 20u);
    const BatchInput in1 = m.join(1, d);
    EXPECT_EQ(in1.tokens.size(), 8u);
    const BatchInput in2 = m.join(2, tokens(7, 5));
    m.step({{0, {argmax(m.last[0])}}, in1, in2});
    for (int i = 0; i < 12; ++i) m.decode({2, 1, 0});  // slot 1 passes 47 positions: swa's ring wraps
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

INSTANTIATE_TEST_SUITE_P(Zoo, BatchMatchesSessions, ::testing::Values("zoo-dense", "zoo-swa"), test::ModelParamName());

// Attention rows of 3 heads x 6 values (72 bytes) do not start every segment at an offset the
// storage alignment divides, so the batched attention writes through staging rows.
TEST(BatchSession, OddAttentionRowsMatchSessions) {
    RandomModelConfig c;
    c.seed = 11;
    c.n_embd = 18;
    c.n_head = 3;
    c.n_head_kv = 1;
    c.head_dim = 6;
    c.n_ff = 40;
    const std::vector<uint8_t> bytes = model_bytes(c);
    auto model = Model::load_from_memory(bytes.data(), bytes.size(), "odd-rows.gguf");
    Mirror m(*model, 3);
    m.step({{0, tokens(3, 1, kVocab)}, {1, tokens(5, 2, kVocab)}, {2, tokens(2, 3, kVocab)}});
    for (int i = 0; i < 4; ++i) m.decode({0, 1, 2});
}

// BatchGenerator: four greedy requests over three slots (the fourth joins when the first ends,
// keeping the prompt it shares with it), one with a stop string, one with
// a banned token, one longer than the prompt budget of a step: each gives Session::generate's
// tokens, text and stop reason, and the callbacks see the same text.
TEST(BatchGenerator, RequestsMatchSessionGenerate) {
    auto model = Model::load(test::source_dir() + "/assets/zoo/zoo-dense.gguf");
    BatchOptions o;
    o.n_slots = 3;
    o.n_ctx = 128;
    o.n_batch = 16;
    o.llama_cpp_rounding = false;
    BatchSession batch(*model, o);
    BatchGenerator gen(batch, /*prompt_tokens_per_step=*/8);
    SessionOptions so;
    so.n_ctx = 128;
    so.llama_cpp_rounding = false;
    Session single(*model, so);

    std::vector<std::vector<int32_t>> prompts{tokens(6, 1), tokens(30, 2), tokens(4, 3), tokens(6, 1)};
    prompts[3].insert(prompts[3].end(), {17, 18, 19, 20});
    std::vector<GenerateOptions> options(4);
    for (GenerateOptions& g : options) {
        g.sampler.temperature = 0;
        g.max_tokens = 12;
        g.top_n = 2;
    }
    const GenerateResult plain = single.generate(prompts[0], options[0], nullptr);
    ASSERT_GE(plain.tokens.size(), 3u);
    options[0].stop = {model->piece(plain.tokens[2])};      // ends at its third token
    options[2].sampler.logit_bias[plain.tokens[0]] = -100;  // never chosen
    std::vector<std::string> streamed(4);
    std::vector<GenerateResult> got(4);
    int next = 0, done = 0;
    auto start = [&] {
        const int i = next;
        BatchRequest r{prompts[size_t(i)], options[size_t(i)], [&streamed, i](const TokenEvent& ev) {
                           streamed[size_t(i)] += ev.text;
                           return true;
                       }};
        ASSERT_GE(gen.start(std::move(r)), 0);
        ++next;
    };
    std::vector<int> request_in(3, -1);
    for (int i = 0; i < 3; ++i) {
        start();
        for (int s = 0; s < 3; ++s)
            if (gen.busy(s) && request_in[size_t(s)] < 0) request_in[size_t(s)] = i;
    }
    EXPECT_EQ(gen.start({prompts[3], options[3], nullptr}), -1);  // every slot busy
    while (done < 4) {
        for (BatchGenerator::Finished& f : gen.step()) {
            got[size_t(request_in[size_t(f.slot)])] = std::move(f.result);
            request_in[size_t(f.slot)] = -1;
            ++done;
            if (next < 4) {
                start();
                for (int s = 0; s < 3; ++s)
                    if (gen.busy(s) && request_in[size_t(s)] < 0) request_in[size_t(s)] = next - 1;
            }
        }
    }
    EXPECT_EQ(got[3].n_prompt_evaluated, 4);  // the fourth kept the first's prompt from its slot
    for (size_t i = 0; i < 4; ++i) {
        Session fresh(*model, so);
        const GenerateResult want = fresh.generate(prompts[i], options[i], nullptr);
        EXPECT_EQ(got[i].tokens, want.tokens) << "request " << i;
        EXPECT_EQ(got[i].text, want.text) << "request " << i;
        EXPECT_EQ(streamed[i], want.text) << "request " << i;
        EXPECT_EQ(got[i].reason, want.reason) << "request " << i << ": " << got[i].message;
    }
    EXPECT_EQ(got[0].reason, StopReason::StopString);
    EXPECT_NE(got[2].tokens[0], plain.tokens[0]);
}

TEST(BatchSession, RefusesBadInputBeforeChangingASlot) {
    auto model = Model::load(test::source_dir() + "/assets/zoo/zoo-dense.gguf");
    BatchOptions o;
    o.n_slots = 2;
    o.n_ctx = 8;
    o.n_batch = 8;
    BatchSession b(*model, o);
    EXPECT_THROW(b.step({{2, {1}}}), std::invalid_argument);
    EXPECT_THROW(b.step({{0, {1}}, {0, {2}}}), std::invalid_argument);
    EXPECT_THROW(b.step({{0, {}}}), std::invalid_argument);
    EXPECT_THROW(b.step({{0, {1}}, {1, {model->n_vocab()}}}), std::invalid_argument);
    EXPECT_THROW(b.step({{0, {1}}, {1, std::vector<int32_t>(9, 5)}}), ContextOverflow);
    EXPECT_TRUE(b.tokens(0).empty());
    EXPECT_THROW(b.truncate(0, 1), std::invalid_argument);
    o.n_batch = 1;
    EXPECT_THROW(BatchSession(*model, o), std::invalid_argument);
}

TEST(BatchSession, RefusesAnEncoderByName) {
    if (test::left_out_of_slim_tree("assets/zoo/zoo-bert.gguf"))
        GTEST_SKIP() << "assets/zoo/zoo-bert.gguf is not in this slim tree (scripts/gpu-slim-branch.sh)";
    auto model = Model::load(test::source_dir() + "/assets/zoo/zoo-bert.gguf");
    EXPECT_NE(batch_unsupported(*model).find("encoder"), std::string::npos) << batch_unsupported(*model);
    try {
        BatchSession b(*model);
        FAIL() << "an encoder was batched";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("encoder"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace vkllm
