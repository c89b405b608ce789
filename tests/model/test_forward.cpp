// The GPU forward against the CPU reference forward on the same file: logits through prefill
// and decode, context overflow, and the probes (attention probabilities, residual statistics,
// op timings).
#include <gtest/gtest.h>

#include <filesystem>
#include <numeric>

#include "gguf/gguf.h"
#include "model/spec.h"
#include "tokenizer/tokenizer.h"
#include "gpu/device.h"
#include "reference/reference_forward.h"
#include "test_support.h"
#include "model/model_internal.h"
#include "vkllm/gguf.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

// The reference rounds keys and values as the session's cache stores them.
KvCacheType cache_of(const Session& s) { return s.kv_cache_usage().type; }
// Exact activations agree to float precision; with a rounding cache, a few values whose GPU and
// CPU f32 results straddle a rounding boundary land one fp16 step (one Q8_0 step) apart.
double exact_bound(const Session& s) {
    return cache_of(s) == KvCacheType::F16 ? 1e-7 : cache_of(s) == KvCacheType::Q8_0 ? 1e-6 : 1e-8;
}

class ForwardTest : public ::testing::Test {
protected:
    void SetUp() override {
        auto shared = test::shared_dir();
        if (!shared) GTEST_SKIP() << "../shared is absent: skipping (needs shared models)";
        errors_before_ = gpu::validation_error_count();
        model_ = Model::load(*shared + "/models/stories260K/stories260K-Q8_0.gguf");
    }
    void TearDown() override {
        if (model_) {
            EXPECT_EQ(gpu::validation_error_count(), errors_before_);
        }
    }
    std::unique_ptr<Model> model_;
    uint64_t errors_before_ = 0;
};

// Exact f32 activations on both sides: the kernels must agree with the reference to float precision.
TEST_F(ForwardTest, PrefillInChunksAndDecodeMatchTheCpuReference) {
    SessionOptions so;
    so.n_batch = 7;  // forces the prompt through several passes
    so.llama_cpp_rounding = false;
    Session session(*model_, so);
    model::ReferenceForward ref(model_->internals().file(), model_->internals().spec(), session.n_ctx(),
                                /*round_activations=*/false, cache_of(session));
    std::vector<int32_t> prompt = model_->internals().tokenizer().encode("The cat sat on the mat and looked at the bird", true, false);
    ASSERT_GT(prompt.size(), 7u);
    auto got = session.eval(prompt, true);
    auto want = ref.eval(prompt);
    EXPECT_LT(test::nmse(got, want), exact_bound(session));
    for (int32_t t : {5, 100, 300}) {
        auto g = session.eval({t});
        auto w = ref.eval({t});
        std::vector<float> last(w.end() - model_->internals().spec().n_vocab, w.end());
        EXPECT_LT(test::nmse(g, last), exact_bound(session));
    }
}

// With llama.cpp's activation rounding the forward is a discontinuous function of its inputs:
// a float-level difference can move a value across a rounding boundary. Results agree closely,
// and exactly where no value sits on a boundary.
TEST_F(ForwardTest, RoundedActivationsFollowTheCpuReference) {
    Session session(*model_);
    model::ReferenceForward ref(model_->internals().file(), model_->internals().spec(), session.n_ctx(),
                                /*round_activations=*/true, cache_of(session));
    std::vector<int32_t> prompt = model_->internals().tokenizer().encode("The cat sat on the mat", true, false);
    EXPECT_LT(test::nmse(session.eval(prompt, true), ref.eval(prompt)), 1e-4);
    for (int32_t t : {5, 100}) {
        auto g = session.eval({t});
        auto w = ref.eval({t});
        EXPECT_LT(test::nmse(g, w), 1e-4);
    }
}

TEST_F(ForwardTest, ContextOverflowIsAClearErrorAndKeepsTheCache) {
    SessionOptions so;
    so.n_ctx = 8;
    Session session(*model_, so);
    session.eval({1, 2, 3, 4, 5});
    EXPECT_THROW(session.eval({1, 2, 3, 4}), ContextOverflow);
    EXPECT_EQ(session.n_past(), 5);
    EXPECT_NO_THROW(session.eval({6, 7, 8}));
    EXPECT_THROW(session.eval({9}), ContextOverflow);
    session.reset();
    EXPECT_THROW(session.eval({100000}), std::invalid_argument);
    EXPECT_EQ(session.n_past(), 0);
}

TEST_F(ForwardTest, AttentionProbesMatchTheCpuReferenceAndSumToOne) {
    const int layer = 2;
    SessionOptions so;
    so.probes.attention_layers = {layer};
    so.probes.residual_stats = true;
    so.probes.timings = true;
    so.llama_cpp_rounding = false;
    Session session(*model_, so);
    model::ReferenceForward ref(model_->internals().file(), model_->internals().spec(), session.n_ctx(),
                                /*round_activations=*/false, cache_of(session));
    std::vector<int32_t> prompt = model_->internals().tokenizer().encode("Lily and Ben played with a ball", true, false);
    for (int step = 0; step < 2; ++step) {
        std::vector<int32_t> toks = step == 0 ? prompt : std::vector<int32_t>{42};
        session.eval(toks);
        std::vector<float> want;
        ref.eval(toks, layer, &want);
        const ProbeResults& r = session.probes();
        ASSERT_EQ(r.attention.size(), 1u);
        const AttentionMap& p = r.attention[0];
        EXPECT_EQ(p.layer, layer);
        const int n_kv = p.n_key();
        EXPECT_EQ(n_kv, session.n_past());
        ASSERT_EQ(p.probs.size(), size_t(p.n_head) * size_t(p.n_query()) * size_t(n_kv));
        // The newest query row of every head.
        std::vector<float> newest;
        for (int h = 0; h < p.n_head; ++h)
            for (int k = 0; k < n_kv; ++k) newest.push_back(p.at(h, p.n_query() - 1, k));
        for (int h = 0; h < p.n_head; ++h) {
            double sum = std::accumulate(newest.begin() + long(h) * n_kv, newest.begin() + long(h + 1) * n_kv, 0.0);
            EXPECT_NEAR(sum, 1.0, 1e-5) << "head " << h;
        }
        EXPECT_LT(test::nmse(newest, want), exact_bound(session));

        ASSERT_EQ(r.residual.size(), size_t(model_->internals().spec().n_layer + 1));
        for (const ResidualStat& s : r.residual) {
            EXPECT_GE(s.max_abs, s.median_abs);
            EXPECT_GE(s.channel, 0);
            EXPECT_LT(s.channel, model_->internals().spec().n_embd);
            EXPECT_GE(s.token, session.n_past() - int(toks.size()));
            EXPECT_LT(s.token, session.n_past());
        }
    }
    if (model_->internals().context().caps().timestamps) {
        const auto& t = session.probes().timings;
        auto has = [&](const char* op) {
            return std::any_of(t.begin(), t.end(), [&](const OpTiming& o) { return o.op == op && o.count > 0; });
        };
        EXPECT_TRUE(has("matmul"));
        EXPECT_TRUE(has("attention"));
    }
}

TEST_F(ForwardTest, ProbesOffRecordNothing) {
    Session session(*model_);
    session.eval({1, 50, 60});
    EXPECT_TRUE(session.probes().attention.empty());
    EXPECT_TRUE(session.probes().residual.empty());
    EXPECT_TRUE(session.probes().timings.empty());
}

}  // namespace
}  // namespace vkllm

namespace vkllm {
namespace {

// A copy of a GGUF file with one more metadata key, written with the project's writer.
std::string with_key(const gguf::File& f, const std::string& key, gguf::Value value, const std::string& name) {
    gguf::Writer w;
    for (const std::string& k : f.keys_in_order())
        if (k != key) w.set(k, *f.find(k));
    w.set(key, std::move(value));
    for (const auto& t : f.tensors()) w.add_tensor(t.name, t.type, t.dims, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
    std::string path = test::temp_path(name);
    w.write(path);
    return path;
}

// Mistral-style sliding window on every layer from `llama.attention.sliding_window`: the GPU
// forward with its ring-buffer caches (wrapping with a small batch) against the CPU reference,
// which keeps every position and masks by the window.
TEST_F(ForwardTest, SlidingWindowFromMetadataMatchesTheCpuReference) {
    const std::string path = with_key(model_->internals().file(), "llama.attention.sliding_window", gguf::Value::from_u32(4),
                                      "stories260K-window4.gguf");
    auto windowed = Model::load(path);
    ASSERT_EQ(windowed->internals().spec().layers[0].attn.window, 4);
    std::vector<int32_t> prompt = windowed->internals().tokenizer().encode("Lily and Ben went to the park to play with a ball", true, false);
    ASSERT_GT(prompt.size(), 8u);
    for (int n_batch : {256, 3}) {
        SessionOptions so;
        so.n_batch = n_batch;
        so.llama_cpp_rounding = false;
        Session session(*windowed, so);
        auto usage = session.kv_cache_usage();
        if (n_batch == 3) {
            EXPECT_EQ(usage.local_layers, windowed->internals().spec().n_layer);  // rings of 4 + 3 - 1 slots
            EXPECT_EQ(usage.global_layers, 0);
        }
        model::ReferenceForward ref(windowed->internals().file(), windowed->internals().spec(), session.n_ctx(), false,
                                    cache_of(session));
        auto got = session.eval(prompt, true);
        auto want = ref.eval(prompt);
        EXPECT_LT(test::nmse(got, want), exact_bound(session)) << "batch " << n_batch;
        for (int32_t t : {5, 100, 300, 7, 9}) {  // decode across the ring's wrap point
            auto g = session.eval({t});
            auto w = ref.eval({t});
            EXPECT_LT(test::nmse(g, std::vector<float>(w.end() - windowed->internals().spec().n_vocab, w.end())),
                      exact_bound(session));
        }
    }
    // The window changes what the model computes.
    Session plain(*model_);
    Session win(*windowed);
    EXPECT_GT(test::max_abs_diff(plain.eval(prompt, true), win.eval(prompt, true)), 1e-2);
}

// Every golden family the reference models (dense and MoE, windows, sinks, MLA) with each cache
// type (F32, F16, Q8_0), exact activations: the GPU forward with the reference rounding keys and
// values as that cache does.
// Prefill in two passes, then decode steps.
TEST(ForwardCacheTypes, EveryGoldenFamilyMatchesTheReferenceWithEachCacheType) {
    const uint64_t errors_before = gpu::validation_error_count();
    int checked = 0;
    for (const char* dir : {"families", "moe"}) {
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(test::source_dir() + "/tests/golden/" + dir, ec)) {
            if (e.path().extension() != ".gguf") continue;
            auto model = Model::load(e.path().string());
            const auto& in = model->internals();
            try {  // the reference does not model every family (phi3's fused QKV, Llama 4's L2 norm)
                model::ReferenceForward probe(in.file(), in.spec(), 8, false);
            } catch (const std::exception&) {
                continue;
            }
            const std::vector<int32_t> prompt = test::read_ids(e.path().parent_path().string() + "/" +
                                                               e.path().stem().string() + ".tokens.txt");
            for (KvCacheType type : {KvCacheType::F32, KvCacheType::F16, KvCacheType::Q8_0}) {
                SCOPED_TRACE(e.path().stem().string() + " " + kv_cache_type_name(type));
                SessionOptions so;
                so.n_batch = 16;
                so.n_ctx = 64;
                so.llama_cpp_rounding = false;
                so.kv_cache = type;
                std::unique_ptr<Session> session;
                if (type == KvCacheType::F16 && !in.context().caps().storage_16bit) {
                    EXPECT_THROW(Session(*model, so), std::exception);
                    continue;
                }
                bool whole_blocks = true;  // Q8_0 needs K and V rows of whole 32-value blocks
                for (const auto& L : in.spec().layers)
                    whole_blocks = whole_blocks && (L.attn.n_head_kv * L.attn.head_dim) % 32 == 0 &&
                                   (L.attn.n_head_kv * L.attn.head_dim_v) % 32 == 0;
                if (type == KvCacheType::Q8_0 && !whole_blocks) {
                    EXPECT_THROW(Session(*model, so), model::ModelError);
                    continue;
                }
                session = std::make_unique<Session>(*model, so);
                ASSERT_EQ(session->kv_cache_usage().type, type);
                model::ReferenceForward ref(in.file(), in.spec(), session->n_ctx(), false, type);
                EXPECT_LT(test::nmse(session->eval(prompt, true), ref.eval(prompt)), exact_bound(*session));
                for (int32_t t : {5, 100, 300}) {
                    auto w = ref.eval({t});
                    EXPECT_LT(test::nmse(session->eval({t}), std::vector<float>(w.end() - in.spec().n_vocab, w.end())),
                              exact_bound(*session));
                }
            }
            ++checked;
        }
    }
    EXPECT_GE(checked, 12) << "golden models missing";
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

// Quantised experts with llama.cpp's activation rounding: decode's expert matvecs round their
// inputs themselves and the gate, up and SwiGLU of the experts run as one dispatch
// (ops::moe_matvec_swiglu). The golden MoE models Mixtral, OLMoE and Qwen3-MoE, quantised to Q8_0
// and Q4_0, follow the reference forward with the same rounding through prefill and decode.
// (DeepSeek V2 is left out here: the reference computes MLA in the plain form, the GPU in the
// absorbed one, so under rounding they round different tensors; exact, it is ForwardCacheTypes'.)
TEST(ForwardQuantisedMoe, DecodeWithInShaderRoundingFollowsTheCpuReference) {
    const uint64_t errors_before = gpu::validation_error_count();
    for (const char* name : {"mixtral", "olmoe", "qwen3moe"})
        for (const char* type : {"Q8_0", "Q4_0"}) {
            SCOPED_TRACE(std::string(name) + " " + type);
            const std::string dir = test::source_dir() + "/tests/golden/moe/";
            const std::string path = test::temp_path(std::string(name) + "-" + type + ".gguf");
            quantize_file(*GgufFile::open(dir + name + ".gguf"), path, type);
            auto model = Model::load(path);
            const auto& in = model->internals();
            const std::vector<int32_t> prompt = test::read_ids(dir + name + ".tokens.txt");
            SessionOptions so;
            so.kv_cache = KvCacheType::F32;
            Session session(*model, so);
            model::ReferenceForward ref(in.file(), in.spec(), session.n_ctx(), /*round_activations=*/true,
                                        KvCacheType::F32);
            EXPECT_LT(test::nmse(session.eval(prompt, true), ref.eval(prompt)), 1e-4);
            for (int32_t t : {5, 100, 300}) {
                auto w = ref.eval({t});
                EXPECT_LT(test::nmse(session.eval({t}), std::vector<float>(w.end() - in.spec().n_vocab, w.end())), 1e-4)
                    << "decode token " << t;
            }
            std::filesystem::remove(path);
        }
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

}  // namespace
}  // namespace vkllm
