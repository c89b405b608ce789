// RWKV-7 against llama.cpp on the golden random model (tests/golden/rwkv7): the CPU reference
// forward (engine/reference/reference_forward_rwkv.h), and a GPU forward made of the time- and
// channel-mix blocks' recordings (record_rwkv7_time_mix, record_rwkv7_channel_mix) with the
// embedding, norms and head around them: every prompt position in one pass and in passes of 7
// tokens (the token shifts and wkv state carried through RwkvState), then 32 greedy one-token
// steps (the matvec path) equal to llama.cpp's greedy text, and truncation's rules.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "model/blocks/rwkv_channel_mix.h"
#include "model/blocks/rwkv_time_mix.h"
#include "model/rwkv_state.h"
#include "model/rwkv_weights.h"
#include "model/spec.h"
#include "ops/ops.h"
#include "random_model/random_model.h"
#include "reference/reference_forward_rwkv.h"
#include "test_support.h"

namespace vkllm {
namespace {

struct Golden {
    std::unique_ptr<gguf::File> file;
    std::vector<int32_t> tokens, greedy;
    std::vector<float> logits;  // [n_tokens][n_vocab]
};

Golden load_golden() {
    const std::string base = test::source_dir() + "/tests/golden/rwkv7/rwkv7";
    Golden g;
    g.file = gguf::File::open(base + ".gguf");
    g.tokens = test::read_ids(base + ".tokens.txt");
    g.greedy = test::read_ids(base + ".greedy.txt");
    g.logits = test::read_f32(base + ".logits.f32");
    return g;
}

double max_diff(const std::vector<float>& got, const std::vector<float>& want) {
    EXPECT_EQ(got.size(), want.size());
    return test::max_abs_diff(got, want);
}

TEST(Rwkv7Reference, MatchesLlamaCppAsOnePromptAndAsSteps) {
    const Golden g = load_golden();
    model::Rwkv7ReferenceForward one(*g.file);
    EXPECT_LT(max_diff(one.eval(g.tokens), g.logits), 1e-4);
    EXPECT_EQ(one.params().n_head, 2);
    // a prompt of 50, then one token at a time: the state carries everything
    model::Rwkv7ReferenceForward steps(*g.file);
    std::vector<float> got = steps.eval(std::vector<int32_t>(g.tokens.begin(), g.tokens.begin() + 50));
    for (size_t t = 50; t < g.tokens.size(); ++t) {
        const std::vector<float> row = steps.eval({g.tokens[t]});
        got.insert(got.end(), row.begin(), row.end());
    }
    EXPECT_LT(max_diff(got, g.logits), 1e-4);
    EXPECT_EQ(steps.state(0).size(), size_t(2 * 128 + 128 * 64));
}

TEST(Rwkv7Reference, GoldenModelIsReproducible) {
    const auto shared = test::shared_dir();
    if (!shared) GTEST_SKIP() << "no shared data (the stories260K vocabulary)";
    random_model::RandomModelConfig c;
    c.arch = "rwkv7", c.seed = 701, c.n_embd = 128, c.n_layer = 3, c.n_ff = 128;
    const auto vocab = gguf::File::open(*shared + "/models/stories260K/stories260K-F32.gguf");
    const std::vector<uint8_t> bytes = random_model::build_random_model(c, *vocab).to_bytes();
    EXPECT_TRUE(bytes == test::read_file(test::source_dir() + "/tests/golden/rwkv7/rwkv7.gguf"))
        << "vkllm-random-model --arch rwkv7 --seed 701 --n-embd 128 --n-layer 3 --n-ff 128 writes the golden";
    c.n_embd = 96;  // not a multiple of the head size
    EXPECT_THROW(random_model::build_random_model(c, *vocab), random_model::ConfigError);
}

// The GPU forward of the golden model, made of the blocks' recordings.
class Rwkv7Gpu : public test::GpuTest {
protected:
    void SetUp() override {
        test::GpuTest::SetUp();
        g_ = load_golden();
        const model::Rwkv7Params p = model::Rwkv7Params::from_file(*g_.file);
        n_layer_ = int(p.n_layer);
        n_vocab_ = p.n_vocab;
        spec_.n_embd = p.n_embd;
        spec_.head_size = p.head_size;
        spec_.n_ff = p.n_ff;
        eps_ = p.norm_eps;
        auto rank = [&](const char* t) { return int64_t(g_.file->find_tensor(std::string("blk.1.") + t)->dims[1]); };
        spec_.decay_rank = rank("time_mix_w1.weight");
        spec_.iclr_rank = rank("time_mix_a1.weight");
        spec_.value_rank = rank("time_mix_v1.weight");
        spec_.gate_rank = rank("time_mix_g1.weight");
        weights_ = std::make_unique<model::RwkvWeights>(ctx(), *g_.file);
        weights_->load_layers(spec_, n_layer_);
        const int64_t C = spec_.n_embd;
        embd_ = weights_->matrix("token_embd.weight", C, n_vocab_);
        embd_norm_ = weights_->vector("token_embd_norm.weight", C);
        embd_norm_b_ = weights_->vector("token_embd_norm.bias", C);
        out_norm_ = weights_->vector("output_norm.weight", C);
        out_norm_b_ = weights_->vector("output_norm.bias", C);
        output_ = weights_->matrix("output.weight", C, n_vocab_);
    }

    // Evaluates `tokens` in passes of up to n_batch from position 0; returns every logit row.
    std::vector<float> run(const std::vector<int32_t>& tokens, int n_batch, model::RwkvState& state) {
        std::vector<float> all;
        for (size_t at = 0; at < tokens.size(); at += size_t(n_batch)) {
            const std::vector<int32_t> part(tokens.begin() + long(at),
                                            tokens.begin() + long(std::min(tokens.size(), at + size_t(n_batch))));
            const std::vector<float> l = pass(part, int(at), state);
            all.insert(all.end(), l.begin(), l.end());
        }
        return all;
    }

    std::vector<float> pass(const std::vector<int32_t>& tokens, int pos0, model::RwkvState& state) {
        const int64_t T = int64_t(tokens.size()), C = spec_.n_embd;
        gpu::Buffer ids(ctx(), uint64_t(T) * 4, gpu::Memory::Device), x(ctx(), uint64_t(T * C) * 4, gpu::Memory::Device),
            h(ctx(), uint64_t(T * C) * 4, gpu::Memory::Device),
            logits(ctx(), uint64_t(T * n_vocab_) * 4, gpu::Memory::Device);
        ids.upload(tokens.data(), tokens.size() * 4);
        const ops::TensorView xv = ops::f32_rows(x, T, C), hv = ops::f32_rows(h, T, C);
        state.begin_pass(pos0, int(T));
        gpu::Stream s(ctx());
        s.begin();
        const model::RwkvMatmul matmul = [&s](const ops::Weight& w, const ops::TensorView& in,
                                              const ops::TensorView& y, bool acc) { ops::matmul(s, w, in, y, acc); };
        ops::get_rows(s, embd_, ops::i32_vector(ids, T), xv);
        s.barrier("embeddings");
        ops::layer_norm(s, xv, embd_norm_, embd_norm_b_, xv, eps_);
        s.barrier("ln0");
        for (int il = 0; il < n_layer_; ++il) {
            const model::RwkvLayerWeights& w = weights_->layers[size_t(il)];
            ops::layer_norm(s, xv, w.attn_norm, w.attn_norm_b, hv, eps_);
            s.barrier("time-mix norm");
            model::record_rwkv7_time_mix(s, spec_, w, state, il, hv, matmul);
            ops::matmul(s, w.output, ops::f32_rows(state.out(), T, C), xv, true);
            s.barrier("time-mix residual");
            ops::layer_norm(s, xv, w.ffn_norm, w.ffn_norm_b, hv, eps_);
            s.barrier("channel-mix norm");
            model::record_rwkv7_channel_mix(s, spec_, w, state, il, hv, matmul);
            ops::matmul(s, w.cm_value, ops::f32_rows(state.ffn(), T, spec_.n_ff), xv, true);
            s.barrier("channel-mix residual");
        }
        ops::layer_norm(s, xv, out_norm_, out_norm_b_, hv, eps_);
        s.barrier("output norm");
        ops::matmul(s, output_, hv, ops::f32_rows(logits, T, n_vocab_));
        s.submit_and_wait();
        std::vector<float> out(size_t(T * n_vocab_));
        logits.download(out.data(), out.size() * 4);
        return out;
    }

    Golden g_;
    model::RwkvSpec spec_;
    int n_layer_ = 0;
    int64_t n_vocab_ = 0;
    float eps_ = 1e-5f;
    std::unique_ptr<model::RwkvWeights> weights_;
    ops::Weight embd_, output_;
    const gpu::Buffer *embd_norm_ = nullptr, *embd_norm_b_ = nullptr, *out_norm_ = nullptr, *out_norm_b_ = nullptr;
};

TEST_F(Rwkv7Gpu, EveryPositionMatchesLlamaCppInOnePassAndInPassesOf7) {
    for (const int batch : {256, 7}) {
        model::RwkvState state(ctx(), spec_, n_layer_, batch);
        EXPECT_EQ(state.bytes(), uint64_t(n_layer_) * uint64_t(spec_.state_floats()) * 4);
        EXPECT_LT(max_diff(run(g_.tokens, batch, state), g_.logits), 1e-3) << "batch " << batch;
    }
}

TEST_F(Rwkv7Gpu, GreedyStepsGiveLlamaCppsTextAndTruncationReevaluates) {
    model::RwkvState state(ctx(), spec_, n_layer_, 256);
    std::vector<float> last = run(g_.tokens, 256, state);
    last.erase(last.begin(), last.end() - n_vocab_);
    std::vector<int32_t> text;
    int pos = int(g_.tokens.size());
    for (size_t i = 0; i < g_.greedy.size(); ++i) {
        const int32_t next = int32_t(std::max_element(last.begin(), last.end()) - last.begin());
        text.push_back(next);
        last = pass({next}, pos++, state);  // one token: the matvec path
    }
    EXPECT_EQ(text, g_.greedy);
    // the state folds every position in: only its newest position (or 0) can be kept
    EXPECT_TRUE(state.truncate(pos));
    EXPECT_FALSE(state.truncate(40));
    EXPECT_THROW(pass({g_.tokens[40]}, 40, state), std::logic_error);
    EXPECT_TRUE(state.truncate(0));
    const std::vector<float> again = run(std::vector<int32_t>(g_.tokens.begin(), g_.tokens.begin() + 41), 256, state);
    const std::vector<float> want(g_.logits.begin(), g_.logits.begin() + 41 * n_vocab_);
    EXPECT_LT(max_diff(again, want), 1e-3) << "re-evaluated from position 0";
}

}  // namespace
}  // namespace vkllm
