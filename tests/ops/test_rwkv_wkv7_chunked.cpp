// wkv7's chunked prompt kernel (shaders/rwkv_wkv7_chunked.comp) against the CPU reference and
// the sequential kernel: head sizes 64, 7 and 128 over several heads, prompts that are not a multiple
// of the chunk followed by decode steps, decays small enough that a chunk runs token by token
// amid chunks that do not, and VKLLM_WKV7's choice.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "gpu_test.h"
#include "ops/rwkv_ops.h"
#include "rwkv_test_data.h"

namespace vkllm {
namespace {

using test::describe;
using test::Heads;
using test::rel_err;

class Wkv7Chunked : public test::GpuTest {};

TEST_F(Wkv7Chunked, MatchesReferenceAndSequentialOverChunksAndSteps) {
    // the largest head size too: its shorter chunk (shared memory), a state row of 128 registers
    for (const Heads h : {Heads{3, 64}, Heads{5, 7}, Heads{1, 128}}) {
        const int64_t chunk = ops::rwkv_wkv7_chunk(ctx(), h.head_size);
        const int64_t n = 2 * chunk + 7;  // two whole chunks and a part
        const test::WkvOperands in(h, n);
        std::vector<float> ref_state = in.state, ref_out;
        in.reference(ref_state, ref_out);
        const test::WkvResult seq = test::run_wkv7(ctx(), in, {n}, ops::Wkv7Kernel::Sequential);

        // one pass; a prompt ending inside a chunk, then steps (a step of the chunked kernel is a
        // chunk of one token), then a second prompt that starts from the carried state
        const std::vector<int64_t> passes[] = {{n}, {chunk + 3, 1, 1, n - chunk - 5}};
        for (const std::vector<int64_t>& calls : passes) {
            const test::WkvResult got = test::run_wkv7(ctx(), in, calls, ops::Wkv7Kernel::Chunked);
            const std::string what = describe(h, n) + " in " + std::to_string(calls.size()) + " calls, chunk " +
                                     std::to_string(chunk);
            EXPECT_LT(rel_err(got.out, ref_out), 2e-5) << what;
            EXPECT_LT(rel_err(got.state, ref_state), 2e-5) << what;
            EXPECT_LT(rel_err(got.out, seq.out), 2e-5) << what << ", against the sequential kernel";
            EXPECT_LT(rel_err(got.state, seq.state), 2e-5) << what << ", against the sequential kernel";
            EXPECT_TRUE(test::all_finite(got.out) && test::all_finite(got.state)) << what;
            EXPECT_TRUE(got.guards_kept) << "written outside the state";
        }
    }
}

TEST_F(Wkv7Chunked, DecaysNearZeroRunTheirChunkTokenByToken) {
    const Heads h{5, 7};
    const int64_t chunk = ops::rwkv_wkv7_chunk(ctx(), h.head_size), n = 3 * chunk + 2;
    test::WkvOperands in(h, n);
    // the second chunk: decays of 1e-30 on three tokens of one channel (1 / g would be e^207,
    // past float's range) and one of exactly 0; the other chunks stay on the chunked path
    for (int64_t t = chunk; t < chunk + 3; ++t) in.decay(t, 3) = 1e-30f;
    in.decay(chunk + 1, 11) = 0.0f;
    std::vector<float> ref_state = in.state, ref_out;
    in.reference(ref_state, ref_out);
    ASSERT_TRUE(test::all_finite(ref_out) && test::all_finite(ref_state));
    const test::WkvResult got = test::run_wkv7(ctx(), in, {n}, ops::Wkv7Kernel::Chunked);
    EXPECT_TRUE(test::all_finite(got.out) && test::all_finite(got.state)) << describe(h, n);
    EXPECT_LT(rel_err(got.out, ref_out), 2e-5) << describe(h, n);
    EXPECT_LT(rel_err(got.state, ref_state), 2e-5) << describe(h, n);
}

TEST_F(Wkv7Chunked, EnvironmentChoosesTheKernel) {
    const Heads h{5, 7};
    const test::WkvOperands in(h, 20);
    std::vector<float> ref_state = in.state, ref_out;
    in.reference(ref_state, ref_out);
    const char* before = std::getenv("VKLLM_WKV7");
    const std::string saved = before ? before : "";
    for (const char* name : {"chunked", "sequential", "auto"}) {
        setenv("VKLLM_WKV7", name, 1);
        const test::WkvResult got = test::run_wkv7(ctx(), in, {20}, ops::Wkv7Kernel::Auto);
        EXPECT_LT(rel_err(got.out, ref_out), 2e-5) << "VKLLM_WKV7=" << name;
    }
    setenv("VKLLM_WKV7", "fast", 1);
    EXPECT_THROW(test::run_wkv7(ctx(), in, {20}, ops::Wkv7Kernel::Auto), ops::ShapeError);
    if (before)
        setenv("VKLLM_WKV7", saved.c_str(), 1);
    else
        unsetenv("VKLLM_WKV7");
}

}  // namespace
}  // namespace vkllm
