// Constrained JSON sampling on real vocabularies (../shared/models/vocab): byte-level BPE
// (GPT-2, Qwen2: 151k tokens) and SentencePiece (Llama), each token checked by its bytes as the
// engine's TokenBytes reads them. Logits are random, so most of the best candidates are
// rejected: every run must still end in a whole value of the schema, greedy and sampled, and a
// step must stay fast on a 151k vocabulary.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/xoshiro.h"
#include "gguf/gguf.h"
#include "sampling/json_grammar.h"
#include "sampling/json_matcher.h"
#include "sampling/sampler.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

using namespace vkllm;

namespace {

const char* kSchema = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12}, "n": {"type": "integer"}, "x": {"type": "number"},
    "ok": {"type": "boolean"}, "kind": {"enum": ["a", "bc", null]},
    "tags": {"type": "array", "items": {"type": "string", "maxLength": 4}, "maxItems": 3},
    "child": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"v": {"type": "integer"}},
                         "required": ["v"], "additionalProperties": false}]}},
    "required": ["name", "n", "kind", "child"], "additionalProperties": false})";

struct Run {
    std::string text;
    bool closed = false;
    double seconds_per_step = 0;
};

// Generates with random logits: each step the sampler takes the best allowed token (greedy)
// or draws among the first top_k allowed, as generate_json does.
Run generate(const std::vector<std::string>& bytes, float temperature, uint64_t seed) {
    const auto grammar = std::make_shared<const sampling::JsonGrammarNodes>(sampling::JsonGrammarNodes::from_schema(kSchema));
    sampling::JsonMatcher m(grammar);
    sampling::SamplerParams p;
    p.temperature = temperature;
    p.seed = seed;
    sampling::Sampler sampler(p);
    Xoshiro256 rng(seed);
    std::vector<float> logits(bytes.size());
    Run r;
    const auto t0 = std::chrono::steady_clock::now();
    int steps = 0;
    for (; steps < 400 && !m.closed(); ++steps) {
        for (float& l : logits) l = float(rng.uniform() * 10.0);
        const int32_t id = sampler.sample(logits.data(), int32_t(logits.size()), [&](int32_t t) {
            return !bytes[size_t(t)].empty() && m.accepts(bytes[size_t(t)]);
        });
        EXPECT_TRUE(m.feed(bytes[size_t(id)]));
        r.text += bytes[size_t(id)];
    }
    r.closed = m.closed();
    r.seconds_per_step = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / steps;
    return r;
}

void check_vocabulary(const std::string& file) {
    const auto shared = vkllm::test::shared_dir();
    if (!shared) GTEST_SKIP() << "../shared is absent";
    const auto tok = tokenizer::Tokenizer::from_gguf(*gguf::File::open(*shared + "/models/vocab/" + file));
    std::vector<std::string> bytes(size_t(tok->n_vocab()));
    for (int32_t id = 0; id < tok->n_vocab(); ++id)
        if (!tok->is_control(id)) bytes[size_t(id)] = tok->token_to_piece(id);
    for (const float temperature : {0.0f, 1.0f}) {
        for (uint64_t seed = 1; seed <= 3; ++seed) {
            const Run r = generate(bytes, temperature, seed);
            ASSERT_TRUE(r.closed) << file << ": not closed after 400 tokens: " << r.text;
            const auto v = nlohmann::json::parse(r.text, nullptr, false);
            ASSERT_FALSE(v.is_discarded()) << file << ": " << r.text;
            EXPECT_TRUE(v["name"].is_string() && v["n"].is_number_integer() && v.contains("kind") && v.contains("child"))
                << r.text;
            EXPECT_LE(v.size(), 7u);
            // Each step sorts the vocabulary and checks candidates: well under 0.2 s on one
            // core of lavapipe's machine even for 151k tokens.
            EXPECT_LT(r.seconds_per_step, 0.2) << file;
            std::printf("%s temperature %.0f seed %d: %.2f ms per token, %s\n", file.c_str(), temperature, int(seed),
                        r.seconds_per_step * 1e3, r.text.c_str());
        }
    }
}

}  // namespace

TEST(JsonVocabularies, ByteLevelBpeGpt2) { check_vocabulary("ggml-vocab-gpt-2.gguf"); }
TEST(JsonVocabularies, ByteLevelBpeQwen2) { check_vocabulary("ggml-vocab-qwen2.gguf"); }
TEST(JsonVocabularies, SentencePieceLlama) { check_vocabulary("ggml-vocab-llama-spm.gguf"); }
