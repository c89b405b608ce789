// The attention probes' detail against the CPU reference: each query row's top keys and every
// head's max-pooled thumbnail (computed on the GPU a block of rows at a time, over several
// passes) equal what cpu::attention_top_k and cpu::attention_thumbnails compute from the full
// maps of the same eval, on a ring-wrapped sliding-window cache (zoo-swa: 38 slots) and on
// gpt-oss's learned sinks, then on a decode step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "cpu/ref_probe_detail.h"
#include "gpu_test.h"
#include "model/model_internal.h"
#include "param_names.h"
#include "probe_test.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

// The maps come from the pass's attention, the detail from a recomputation: equal to rounding.
constexpr float kTol = 1e-5f;
// Another session whose forward wrote maps (its attention kernel writes probabilities): its
// rounding differs in the first layer's attention and is carried through the later layers. With
// passes of 8 tokens (the few-rows matvec, which sums as the one-token matvec) zoo-swa's largest
// difference is 1.4e-4 (layer 4, row 11); with the tiled matmul it was under 1e-4.
constexpr float kOtherSessionTol = 3e-4f;

std::unique_ptr<Model> load(const std::string& name) {
    return name == "gptoss" ? test::gptoss_model() : test::zoo_model(name);
}

class ProbeDetail : public test::GpuTest, public ::testing::WithParamInterface<std::string> {};

template <class T>
const T& find_head(const std::vector<T>& v, int layer, int head) {
    auto it = std::find_if(v.begin(), v.end(), [&](const T& t) { return t.layer == layer && t.head == head; });
    if (it == v.end()) throw std::runtime_error("no entry for layer " + std::to_string(layer) + " head " + std::to_string(head));
    return *it;
}

// Top keys: the same probabilities in the same order; where the keys differ, the two are a tie
// within the tolerance (the map's probability of the GPU's key is the CPU's).
void expect_top_keys(const AttentionMap& m, const std::vector<AttentionTopK>& got, int k, float tol = kTol) {
    for (const AttentionTopK& want : cpu::attention_top_k(m, k)) {
        const std::string where = "layer " + std::to_string(want.layer) + " head " + std::to_string(want.head);
        const AttentionTopK& g = find_head(got, want.layer, want.head);
        ASSERT_EQ(g.k, k) << where;
        ASSERT_EQ(g.query_pos, want.query_pos) << where;
        ASSERT_EQ(g.key_pos.size(), want.key_pos.size()) << where;
        for (size_t i = 0; i < want.key_pos.size(); ++i) {
            const size_t q = i / size_t(k);
            ASSERT_NEAR(g.probs[i], want.probs[i], tol) << where << " row " << q << " rank " << i % size_t(k);
            if (g.key_pos[i] == want.key_pos[i]) continue;
            ASSERT_GE(g.key_pos[i], 0) << where << " row " << q;
            ASSERT_NEAR(m.at(want.head - (m.head >= 0 ? m.head : 0), int(q), g.key_pos[i]), want.probs[i], tol)
                << where << " row " << q << ": key " << g.key_pos[i] << " instead of " << want.key_pos[i];
        }
    }
}

void expect_thumbnails(const AttentionMap& m, const std::vector<AttentionThumbnail>& got, int cells, float tol = kTol) {
    for (const AttentionThumbnail& want : cpu::attention_thumbnails(m, cells)) {
        const std::string where = "layer " + std::to_string(want.layer) + " head " + std::to_string(want.head);
        const AttentionThumbnail& g = find_head(got, want.layer, want.head);
        ASSERT_EQ(g.cell, want.cell) << where;
        ASSERT_EQ(g.query_first, want.query_first) << where;
        ASSERT_EQ(g.rows, want.rows) << where;
        ASSERT_EQ(g.cols, want.cols) << where;
        ASSERT_LE(g.cols, cells) << where;
        for (int r = 0; r < want.rows; ++r)
            for (int c = 0; c < want.cols; ++c) ASSERT_NEAR(g.at(r, c), want.at(r, c), tol) << where << " cell " << r << "," << c;
    }
}

TEST_P(ProbeDetail, TopKeysAndThumbnailsEqualTheCpuReferenceOfTheFullMaps) {
    auto model = load(GetParam());
    const auto& spec = model->internals().spec();
    std::vector<int32_t> prompt;
    for (int i = 0; i < 61; ++i) prompt.push_back(int32_t((i * 37 + 11) % spec.n_vocab));  // past zoo-swa's window
    SessionOptions so;
    so.kv_cache = KvCacheType::F32;
    so.n_batch = 7;  // nine passes: the thumbnail's cell grows from 2 to 16 positions on the way
    for (int l = 0; l < spec.n_layer; ++l) so.probes.attention_layers.push_back(l);
    so.probes.attention_max_rows = int(prompt.size());
    const int k = 5, cells = 4;
    so.probes.attention_top_k = k;
    so.probes.attention_thumbnail = cells;
    Session s(*model, so);
    for (const std::vector<int32_t>& toks : {prompt, std::vector<int32_t>{7}}) {
        s.eval(toks);
        const ProbeResults& r = s.probes();
        size_t heads = 0;
        for (const AttentionMap& m : r.attention) {
            heads += size_t(m.n_head);
            expect_top_keys(m, r.attention_top_k, k);
            expect_thumbnails(m, r.attention_thumbnails, cells);
        }
        EXPECT_EQ(r.attention_top_k.size(), heads);
        EXPECT_EQ(r.attention_thumbnails.size(), heads);
        for (const AttentionTopK& t : r.attention_top_k) EXPECT_EQ(t.n_query(), int(toks.size()));
    }
}

INSTANTIATE_TEST_SUITE_P(Models, ProbeDetail, ::testing::Values("zoo-swa", "gptoss"),
                         test::ModelParamName());

// The detail alone (no map, no summary) equals the CPU reference of another session's maps, and bad sizes and a small
// budget are clear errors.
TEST_F(ProbeDetail, AloneAndBadRequests) {
    auto model = load("zoo-swa");
    std::vector<int32_t> prompt;
    for (int i = 0; i < 19; ++i) prompt.push_back(int32_t(1 + i * 5));
    SessionOptions so;
    so.kv_cache = KvCacheType::F32;
    so.n_batch = 8;
    for (int l = 0; l < model->internals().spec().n_layer; ++l) so.probes.attention_layers.push_back(l);
    so.probes.attention_top_k = 16;  // the largest
    so.probes.attention_thumbnail = 7;
    Session with_maps(*model, so);
    with_maps.eval(prompt);
    ProbeConfig alone;
    alone.attention_top_k = 16;
    alone.attention_thumbnail = 7;
    SessionOptions plain;
    plain.kv_cache = KvCacheType::F32;
    plain.n_batch = so.n_batch;  // the same passes give the same probabilities
    Session s(*model, plain);
    s.set_probes(alone);
    s.eval(prompt);
    const ProbeResults& a = s.probes();
    const ProbeResults& b = with_maps.probes();
    EXPECT_TRUE(a.attention.empty());
    ASSERT_EQ(a.attention_top_k.size(), b.attention_top_k.size());
    ASSERT_EQ(a.attention_thumbnails.size(), b.attention_thumbnails.size());
    // (Probing maps changes the forward's attention kernel: the two sessions agree to rounding.)
    for (const AttentionMap& m : b.attention) {
        expect_top_keys(m, a.attention_top_k, 16, kOtherSessionTol);
        expect_thumbnails(m, a.attention_thumbnails, 7, kOtherSessionTol);
    }
    for (int bad : {-1, 17}) {
        ProbeConfig p;
        p.attention_top_k = bad;
        s.set_probes(p);
        EXPECT_THROW(s.eval({1, 2}), std::invalid_argument) << "top_k " << bad;
    }
    for (int bad : {-1, 257}) {
        ProbeConfig p;
        p.attention_thumbnail = bad;
        s.set_probes(p);
        EXPECT_THROW(s.eval({1, 2}), std::invalid_argument) << "thumbnail " << bad;
    }
    ProbeConfig tight;
    tight.attention_top_k = 16;
    tight.max_bytes = 4096;
    s.set_probes(tight);
    try {
        s.eval({1, 2});
        ADD_FAILURE() << "no error over the budget";
    } catch (const std::invalid_argument& e) {
        EXPECT_NE(std::string(e.what()).find("budget"), std::string::npos) << e.what();
    }
}

}  // namespace
}  // namespace vkllm
