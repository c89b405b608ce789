// The gated delta rule's chunked prompt kernel (shaders/delta_net_chunked.comp) against the CPU
// reference: key heads of 7 and 128, decays per head and per key row, value columns over one
// workgroup's block, prompts that are not a multiple of the chunk followed by decode steps and a
// second prompt, the output over v; decays past the chunk's safe range that make a chunk run
// token by token amid chunks that do not; and VKLLM_DELTA_NET's choice.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "delta_net_test_data.h"
#include "gpu_test.h"
#include "ops/delta_net_ops.h"

namespace vkllm {
namespace {

using test::delta::all_finite;
using test::delta::Case;
using test::delta::describe;
using test::delta::Operands;
using test::delta::rel_err;
using test::delta::Result;
using Kernel = ops::DeltaNetKernel;

constexpr auto kI = DeltaHeadShare::Interleaved;
constexpr auto kT = DeltaHeadShare::Tiled;

class DeltaNetChunked : public test::GpuTest {};

TEST_F(DeltaNetChunked, MatchesReferenceOverChunksAndSteps) {
    // d_k 7: three value heads per key head, a decay per head, q and k normalised in the kernel;
    // d_k 128: a decay per key row, 70 value columns (two workgroups of columns), tiled heads
    const Case shapes[] = {{0, 2, 6, 7, 5, kI, false, true}, {0, 1, 2, 128, 70, kT, true, false}};
    for (Case c : shapes) {
        const int64_t chunk = ops::delta_net_chunk(ctx(), c.d_k);
        c.n_tokens = 2 * chunk + 7;  // two whole chunks and a part
        const Operands o(c);
        const auto [ref_out, ref_state] = o.reference();
        // one pass; then a prompt ending inside a chunk, decode steps (a chunk of one token when
        // forced), and a second prompt that starts from the carried state, its output over v
        const int64_t n = c.n_tokens;
        const std::vector<int64_t> passes[] = {{n}, {chunk + 3, chunk + 4, chunk + 5, n}};
        for (const std::vector<int64_t>& calls : passes) {
            const bool in_place = calls.size() > 1;
            const Result got = test::delta::run(ctx(), o, calls, Kernel::Chunked, in_place);
            const std::string what = describe(c) + " in " + std::to_string(calls.size()) + " calls, chunk " +
                                     std::to_string(chunk) + (in_place ? ", over v" : "");
            EXPECT_LT(rel_err(got.out, ref_out), 2e-5) << what;
            EXPECT_LT(rel_err(got.state, ref_state), 2e-5) << what;
            EXPECT_TRUE(all_finite(got.out) && all_finite(got.state)) << what;
        }
    }
}

TEST_F(DeltaNetChunked, DecaysPastTheSafeRangeRunTheirChunkTokenByToken) {
    for (const bool per_key : {false, true}) {
        Case c{0, 2, 6, 7, 5, kI, per_key, true};
        const int64_t chunk = ops::delta_net_chunk(ctx(), c.d_k);
        c.n_tokens = 3 * chunk + 2;
        Operands o(c);
        // the second chunk: a log-decay of -100 (1 / G would be e^100, past float's range) on one
        // head or key row, and a decay of exactly 0 on another; the other chunks stay chunked
        o.log_decay(chunk + 2, 1, 3) = -100.0f;
        o.log_decay(chunk + 5, 4, 6) = -INFINITY;
        const auto [ref_out, ref_state] = o.reference();
        ASSERT_TRUE(all_finite(ref_out) && all_finite(ref_state));
        const Result got = test::delta::run(ctx(), o, {c.n_tokens}, Kernel::Chunked);
        EXPECT_TRUE(all_finite(got.out) && all_finite(got.state)) << describe(c);
        EXPECT_LT(rel_err(got.out, ref_out), 2e-5) << describe(c);
        EXPECT_LT(rel_err(got.state, ref_state), 2e-5) << describe(c);
    }
}

TEST_F(DeltaNetChunked, EnvironmentChoosesTheKernel) {
    const Operands o(Case{20, 2, 6, 7, 5, kI, false, true});
    const auto [ref_out, ref_state] = o.reference();
    const char* before = std::getenv("VKLLM_DELTA_NET");
    const std::string saved = before ? before : "";
    for (const char* name : {"chunked", "sequential", "auto"}) {
        setenv("VKLLM_DELTA_NET", name, 1);
        const Result got = test::delta::run(ctx(), o, {20});
        EXPECT_LT(rel_err(got.out, ref_out), 2e-5) << "VKLLM_DELTA_NET=" << name;
    }
    setenv("VKLLM_DELTA_NET", "fast", 1);
    EXPECT_THROW(test::delta::run(ctx(), o, {20}), ops::ShapeError);
    if (before)
        setenv("VKLLM_DELTA_NET", saved.c_str(), 1);
    else
        unsetenv("VKLLM_DELTA_NET");
}

}  // namespace
}  // namespace vkllm
