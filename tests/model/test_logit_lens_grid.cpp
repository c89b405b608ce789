// The logit lens as a layers x positions grid (ProbeConfig::logit_lens_positions), softmax and
// top-k on the GPU, against the CPU reference computed from full logits: the reference forward's
// residual rows through the final norm and the output matrix (cpu::lens_top_k). The window is
// wider than a pass, so the grid gathers columns from several passes (a decode step's one
// column is test_probes' last-layer lens); bad requests are refused.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "cpu/ref_lens.h"
#include "cpu/ref_ops.h"
#include "gguf/quant.h"
#include "gpu_test.h"
#include "model/model_internal.h"
#include "reference/reference_forward.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"
#include "vkllm/model.h"
#include "vkllm/session.h"

namespace vkllm {
namespace {

const char* kText = "Once upon a time, Mira found a small red box. \"Open it,\" said Tom.";

using LogitLensGridTest = test::GpuTest;

// The lens of residual rows [n][n_embd] on the CPU: RMS norm with the final norm's weights, the
// output projection, then the reference softmax and top-k.
std::vector<cpu::LensPick> cpu_lens(const gguf::File& file, const model::ModelSpec& spec, const float* rows, int n, int k) {
    const std::vector<float> norm_w = gguf::dequantize_tensor(*file.find_tensor(spec.output_norm_tensor + ".weight"));
    const std::vector<float> out_w =
        gguf::dequantize_tensor(*file.find_tensor(spec.tied_embeddings ? "token_embd.weight" : "output.weight"));
    const int E = spec.n_embd, V = spec.n_vocab;
    std::vector<float> h(size_t(n) * size_t(E)), logits(size_t(n) * size_t(V));
    cpu::rms_norm(rows, norm_w.data(), h.data(), n, E, spec.norm_eps);
    for (int r = 0; r < n; ++r)
        for (int v = 0; v < V; ++v) {
            double sum = 0;
            for (int e = 0; e < E; ++e) sum += double(h[size_t(r) * size_t(E) + size_t(e)]) * out_w[size_t(v) * size_t(E) + size_t(e)];
            logits[size_t(r) * size_t(V) + size_t(v)] = float(sum);
        }
    return cpu::lens_top_k(logits.data(), n, V, k);
}

// A cell against the reference: the same probabilities rank by rank; the same ids except where
// two tokens' probabilities are within the GPU's rounding of each other.
void expect_cell(const LensToken* got, const cpu::LensPick* want, int k, const std::string& where) {
    for (int t = 0; t < k; ++t) {
        EXPECT_NEAR(got[t].p, want[t].p, 2e-5 + 1e-4 * want[t].p) << where << " rank " << t;
        if (got[t].id != want[t].id) {
            const bool near_tie = (t > 0 && std::abs(want[t - 1].p - want[t].p) < 1e-4) ||
                                  (t + 1 < k && std::abs(want[t + 1].p - want[t].p) < 1e-4);
            EXPECT_TRUE(near_tie) << where << " rank " << t << ": id " << got[t].id << ", want " << want[t].id;
        }
    }
}

TEST_F(LogitLensGridTest, GridOverSeveralPassesMatchesTheCpuReference) {
    auto model = Model::load(test::source_dir() + "/assets/zoo/zoo-dense.gguf");
    const auto& spec = model->internals().spec();
    const int L = spec.n_layer, E = spec.n_embd, K = 5, N = 8;
    SessionOptions so;
    so.kv_cache = KvCacheType::F32;
    so.n_batch = 5;  // N positions span two passes and part of a third
    so.llama_cpp_rounding = false;
    so.probes.logit_lens_layers = {0, L / 2, L - 1};
    so.probes.logit_lens_top_n = K;
    so.probes.logit_lens_positions = N;
    Session session(*model, so);
    model::ReferenceForward ref(model->internals().file(), spec, session.n_ctx(), /*round_activations=*/false);
    const auto prompt = model->internals().tokenizer().encode(kText, true, false);
    const int T = int(prompt.size());
    ASSERT_GT(T, N + so.n_batch);
    session.eval(prompt, false);
    ref.eval(prompt);

    const LogitLensGrid& g = session.probes().logit_lens_grid;
    ASSERT_EQ(g.layers, so.probes.logit_lens_layers);
    ASSERT_EQ(g.top_k, K);
    ASSERT_EQ(g.cols(), N);
    for (int c = 0; c < N; ++c) EXPECT_EQ(g.positions[size_t(c)], T - N + c);
    ASSERT_EQ(g.cells.size(), size_t(g.rows()) * size_t(N) * size_t(K));
    for (int i = 0; i < g.rows(); ++i) {
        const int l = g.layers[size_t(i)];
        const auto want = cpu_lens(model->internals().file(), spec,
                                   ref.residual[size_t(l) + 1].data() + size_t(T - N) * size_t(E), N, K);
        for (int c = 0; c < N; ++c) {
            const LensToken* cell = g.cell(i, c);
            expect_cell(cell, &want[size_t(c) * size_t(K)], K,
                        "layer " + std::to_string(l) + " position " + std::to_string(g.positions[size_t(c)]));
            EXPECT_EQ(cell[0].text, model->internals().tokenizer().token_to_piece(cell[0].id));
        }
    }
    // The newest column is the newest-position lens.
    const std::vector<LogitLens>& newest = session.probes().logit_lens;
    ASSERT_EQ(newest.size(), g.layers.size());
    for (int i = 0; i < g.rows(); ++i) {
        EXPECT_EQ(newest[size_t(i)].layer, g.layers[size_t(i)]);
        EXPECT_EQ(newest[size_t(i)].position, T - 1);
        ASSERT_EQ(newest[size_t(i)].top.size(), size_t(K));
        for (int t = 0; t < K; ++t) EXPECT_EQ(newest[size_t(i)].top[size_t(t)].id, g.cell(i, N - 1)[t].id);
    }
}

TEST_F(LogitLensGridTest, RefusesBadRequests) {
    auto model = Model::load(test::source_dir() + "/assets/zoo/zoo-dense.gguf");
    SessionOptions so;
    so.probes.logit_lens_layers = {0};
    so.probes.logit_lens_top_n = kMaxLensTopN + 1;
    EXPECT_THROW({ Session s(*model, so); s.eval({1}, false); }, std::invalid_argument);
    so.probes.logit_lens_top_n = 4;
    so.probes.logit_lens_positions = 0;
    EXPECT_THROW({ Session s(*model, so); s.eval({1}, false); }, std::invalid_argument);
}

}  // namespace
}  // namespace vkllm
