// Shared by the random-model writer's tests: a tiny vocabulary and helpers to build and read
// models in memory.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <numeric>
#include <unistd.h>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "model/spec.h"
#include "random_model/command_line.h"
#include "random_model/random_model.h"
#include "random_model/random_weights.h"
#include "test_support.h"


using namespace vkllm;
using random_model::ConfigError;
using random_model::RandomModelConfig;
using random_model::RopeScalingConfig;
using gguf::TensorType;

namespace {

constexpr int kVocab = 40;

// A tiny SentencePiece-style vocabulary, so that these tests need no shared files.
std::unique_ptr<gguf::File> tiny_vocab() {
    gguf::Writer w;
    std::vector<std::string> tokens;
    std::vector<float> scores;
    std::vector<int32_t> types;
    for (int i = 0; i < kVocab; ++i) {
        tokens.push_back(i == 0 ? "<unk>" : i == 1 ? "<s>" : i == 2 ? "</s>" : "t" + std::to_string(i));
        scores.push_back(-float(i));
        types.push_back(i < 3 ? 3 : 1);
    }
    w.set("general.architecture", gguf::Value::from_string("llama"));  // not copied: only tokenizer.*
    w.set("tokenizer.ggml.model", gguf::Value::from_string("llama"));
    w.set("tokenizer.ggml.tokens", gguf::Value::from_strings(tokens));
    w.set("tokenizer.ggml.scores", gguf::Value::from_f32s(scores));
    w.set("tokenizer.ggml.token_type", gguf::Value::from_i32s(types));
    w.set("tokenizer.ggml.bos_token_id", gguf::Value::from_u32(1));
    w.set("tokenizer.ggml.eos_token_id", gguf::Value::from_u32(2));
    w.set("tokenizer.ggml.add_bos_token", gguf::Value::from_bool(true));
    auto bytes = w.to_bytes();
    return gguf::File::from_memory(bytes.data(), bytes.size(), "tiny-vocab.gguf");
}

std::vector<uint8_t> model_bytes(const RandomModelConfig& c) {
    return random_model::build_random_model(c, *tiny_vocab()).to_bytes();
}

[[maybe_unused]] std::unique_ptr<gguf::File> model_file(const RandomModelConfig& c) {
    auto bytes = model_bytes(c);
    return gguf::File::from_memory(bytes.data(), bytes.size(), "random.gguf");
}

[[maybe_unused]] const gguf::TensorInfo& tensor(const gguf::File& f, const std::string& name) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    if (!t) throw std::runtime_error("no tensor " + name);
    return *t;
}

struct Stats {
    double mean, std;
};
[[maybe_unused]] Stats stats_of(const std::vector<float>& v) {
    double sum = std::accumulate(v.begin(), v.end(), 0.0), sq = 0;
    const double mean = sum / double(v.size());
    for (float x : v) sq += (x - mean) * (x - mean);
    return {mean, std::sqrt(sq / double(v.size()))};
}

// Runs `fn`, expects a ConfigError whose message contains `needle`.
template <typename Fn>
void expect_config_error(Fn fn, const std::string& needle) {
    try {
        fn();
        ADD_FAILURE() << "no error; expected one mentioning '" << needle << "'";
    } catch (const ConfigError& e) {
        EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
}

}  // namespace
