// Dispatches, barriers and transfer commands per decode step, pinned per layer for each layer
// kind of the zoo (dense Llama, Gemma 3 sliding window, Mixtral MoE, DeepSeek-V2 MLA) and for the
// whole step. On a GPU, and even more on lavapipe, decode of a small model is paid per dispatch
// and per barrier: these numbers must not grow unnoticed. A change that lowers them updates the
// table (and says so in its commit); a change that raises them must say why.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "gpu/device.h"
#include "gpu/stream.h"
#include "model/forward.h"
#include "model/model_internal.h"
#include "test_support.h"
#include "vkllm/model.h"

namespace vkllm {
namespace {

using Counts = gpu::Stream::Counts;

struct CountCase {
    std::string model;
    std::vector<Counts> layers;  // layer l has layers[min(l, size - 1)] (zoo-mla: a dense layer 0, then MoE)
    Counts outside;              // embeddings and output head
    bool norm_in_matvec = false;  // decode's pre-norms inside the matvecs (VKLLM_NORM_IN_MATVEC)
};

void PrintTo(const CountCase& c, std::ostream* os) { *os << c.model << (c.norm_in_matvec ? " (norm in matvec)" : ""); }

std::string str(const Counts& c) {
    return std::to_string(c.dispatches) + " dispatches, " + std::to_string(c.barriers) + " barriers, " +
           std::to_string(c.copies) + " copies";
}
}  // namespace
namespace gpu {
void PrintTo(const Stream::Counts& c, std::ostream* os) { *os << str(c); }
}  // namespace gpu
namespace {

class DispatchCounts : public ::testing::TestWithParam<CountCase> {};

// Decode (one token, no probes) after a short prompt, as `vkllm run` and `bench` decode.
TEST_P(DispatchCounts, DecodeStepIsPinnedPerLayerAndInTotal) {
    const CountCase& c = GetParam();
    const uint64_t errors_before = gpu::validation_error_count();
    test::ScopedEnv norm_policy("VKLLM_NORM_IN_MATVEC", c.norm_in_matvec ? "1" : "0");  // else per device
    auto model = Model::load(test::source_dir() + "/assets/zoo/" + c.model + ".gguf");
    const auto& in = model->internals();
    const int n_vocab = in.spec().n_vocab;
    model::Forward fwd(in.context(), in.spec(), in.weights(), /*n_ctx=*/64, /*n_batch=*/8);
    std::vector<float> logits(size_t(8) * size_t(n_vocab));
    const std::vector<int32_t> prompt{1, 5, 9, 13, 17};
    ProbeConfig off;
    fwd.step(prompt.data(), int(prompt.size()), 0, false, logits.data(), off, nullptr);
    const int32_t next = 21;
    fwd.step(&next, 1, int(prompt.size()), false, logits.data(), off, nullptr);

    const std::vector<Counts>& got = fwd.step_counts();
    const int n_layer = in.spec().n_layer;
    ASSERT_EQ(got.size(), size_t(n_layer) + 1);
    EXPECT_EQ(got[0], c.outside) << "outside the layers";
    uint32_t want_dispatches = c.outside.dispatches, want_barriers = c.outside.barriers;
    for (int l = 0; l < n_layer; ++l) {
        const Counts& want = c.layers[std::min(size_t(l), c.layers.size() - 1)];
        EXPECT_EQ(got[size_t(l) + 1], want) << "layer " << l;
        want_dispatches += want.dispatches;
        want_barriers += want.barriers;
    }
    Counts total;
    for (const Counts& x : got) {
        total.dispatches += x.dispatches;
        total.barriers += x.barriers;
        total.copies += x.copies;
    }
    EXPECT_EQ(total.dispatches, want_dispatches) << "whole step: " << str(total);
    EXPECT_EQ(total.barriers, want_barriers) << "whole step: " << str(total);
    EXPECT_EQ(gpu::validation_error_count(), errors_before);
}

// Measured on lavapipe, native and VKLLM_LIMITS=mobile alike (the zoo's shapes need no split
// that depends on the limits). History (per layer: dispatches / barriers / copies):
//   zoo-dense 13/10/2 -> 13/9/1 (RoPE writes k into its cache slot; v's copy joins that group)
//   zoo-swa   19/15/2 -> 19/14/1,  zoo-moe 16/13/2 -> 16/12/1;  zoo-mla unchanged (its own path)
// Outside the layers: the logits' read-back became a dispatch that also counts non-finite values
// (ops::copy_checked): 3/3/1 -> 4/3/0 (zoo-swa 4/4/1 -> 5/4/0).
// KV-cache writes by a shader that takes the slot from the positions buffer (ops::set_rows_into_slots,
// so a decode step's recording can be replayed): each cache copy became a dispatch, no barrier
// added: zoo-dense 13/9/1 -> 14/9/0, zoo-swa 19/14/1 -> 20/14/0, zoo-moe 16/12/1 -> 17/12/0,
// zoo-mla 15/15/6 -> 17/15/4 and 22/21/6 -> 24/21/4 (its other copies move latent rows).
// Decode's gated SiLU FFN in one dispatch (ops::matvec_swiglu: gate, up and SwiGLU; no barrier
// between them): zoo-dense 14/9/0 -> 12/8/0, zoo-mla's dense layer 17/15/4 -> 15/14/4; zoo-swa
// (GEGLU) and the MoE layers unchanged.
// The experts' gate, up and SwiGLU in one dispatch too (ops::moe_matvec_swiglu): zoo-moe
// 17/12/0 -> 15/11/0, zoo-mla's MoE layers 24/21/4 -> 22/20/4. (With quantised experts the expert
// matvecs also round their inputs themselves: two rounding dispatches and barriers fewer; the zoo
// is F32.)
// GeGLU in that one dispatch as well (matvec_swiglu's GLU_ACT: gelu, or gelu as llama.cpp's fp16
// table): zoo-swa 20/14/0 -> 18/13/0.
// q's RoPE, k's RoPE into its cache slots and v's cache write in one dispatch
// (ops::rope_qkv_into_slots): zoo-dense 12/8/0 -> 10/8/0, zoo-swa 18/13/0 -> 16/13/0, zoo-moe
// 15/11/0 -> 13/11/0; zoo-mla unchanged (its own path).
// Decode's RMSNorms inside the matvecs that read them (ops::MatvecNorm; GPUs' default, forced
// here both ways): the attention and dense-FFN pre-norms and the final norm lose their dispatch
// and barrier (MLA: its attention norm, and q_a's norm before W_qb where the model has q_a). The
// second table; the MoE FFN's norm stays a dispatch.
// Q, K and V in one stacked matvec (ops::matvec_stacked; the three matrices in one buffer): two
// dispatches fewer, no barrier fewer (there was none between them): zoo-dense 10/8/0 -> 8/8/0,
// zoo-swa 16/13/0 -> 14/13/0, zoo-moe 13/11/0 -> 11/11/0 (norm in matvec: 8 -> 6, 14 -> 12,
// 12 -> 10); zoo-mla unchanged (its own path).
// MLA's W_kb reads each head's q_nope where the projection left it and writes its absorbed query
// straight into the attention query's row (ops::moe_matmul on strided rows), q's rotated part
// copied into place beside the latent value copy, and the cache writes share W_kb's phase: two
// copies and two barriers fewer: zoo-mla 15/14/4 -> 15/12/2, 22/20/4 -> 22/18/2 (norm in matvec:
// 13/12/4 -> 13/10/2, 21/19/4 -> 21/17/2).
// The latent values written to the cache from inside the [c | kr] rows (set_rows_into_slots on
// strided rows): the value copy goes, zoo-mla 15/12/2 -> 15/12/1, 22/18/2 -> 22/18/1.
// q's rotated part written by RoPE straight into the attention queries' rows (ops::rope_into):
// its copy and the barrier after it go, zoo-mla 15/12/1 -> 15/11/0, 22/18/1 -> 22/17/0 (norm in
// matvec: 13/10/1 -> 13/9/0, 21/17/1 -> 21/16/0).
auto name_of = [](const auto& info) {
    std::string n = info.param.model + (info.param.norm_in_matvec ? "_norm_in_matvec" : "");
    for (char& ch : n)
        if (ch == '-') ch = '_';
    return n;
};
INSTANTIATE_TEST_SUITE_P(Zoo, DispatchCounts,
                         ::testing::Values(CountCase{"zoo-dense", {{8, 8, 0}}, {4, 3, 0}},
                                           CountCase{"zoo-swa", {{14, 13, 0}}, {5, 4, 0}},
                                           CountCase{"zoo-moe", {{11, 11, 0}}, {4, 3, 0}},
                                           CountCase{"zoo-mla", {{15, 11, 0}, {22, 17, 0}}, {4, 3, 0}}),
                         name_of);
INSTANTIATE_TEST_SUITE_P(NormInMatvec, DispatchCounts,
                         ::testing::Values(CountCase{"zoo-dense", {{6, 6, 0}}, {3, 2, 0}, true},
                                           CountCase{"zoo-swa", {{12, 11, 0}}, {4, 3, 0}, true},
                                           CountCase{"zoo-moe", {{10, 10, 0}}, {3, 2, 0}, true},
                                           CountCase{"zoo-mla", {{13, 9, 0}, {21, 16, 0}}, {3, 2, 0}, true}),
                         name_of);

}  // namespace
}  // namespace vkllm
