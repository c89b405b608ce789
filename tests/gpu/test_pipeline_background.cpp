// Compiling a later step's pipelines in the background (gpu/pipeline_prepare.h's
// prepare_in_background) and the wait it puts in Pipeline::handle() (compile_elsewhere).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

#include "gpu/buffer.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "gpu/pipeline_prepare.h"
#include "gpu/stream.h"
#include "test_support.h"

namespace vkllm {
namespace {

struct FillPush {
    uint32_t n;
    float scale;
};

gpu::PipelineRequest fill(uint32_t workgroup) { return {"fill_test", 2, sizeof(FillPush), {workgroup}}; }

// fill_test with workgroup size `wg` over n floats: out[i] = in[i] * 2 + i, checked.
void expect_fill_works(gpu::Context& ctx, uint32_t wg) {
    const uint32_t n = 100;
    const std::vector<float> a = test::random_floats(n, wg);
    gpu::Buffer in(ctx, n * 4, gpu::Memory::Device), out(ctx, n * 4, gpu::Memory::Device);
    in.upload(a.data(), n * 4);
    gpu::Stream s(ctx);
    s.begin();
    s.dispatch(ctx.pipeline(fill(wg)), {in, out}, FillPush{n, 2.0f}, (n + wg - 1) / wg);
    s.submit_and_wait();
    std::vector<float> got(n);
    out.download(got.data(), n * 4);
    for (uint32_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(got[i], a[i] * 2.0f + float(i)) << "wg " << wg << " i " << i;
}

// A context whose pipeline list and the driver's shader cache start empty (a fresh
// XDG_CACHE_HOME for this process), so no pipeline counts as created by an earlier run.
std::unique_ptr<gpu::Context> fresh_context() {
    char dir[] = "/tmp/vkllm-background-XXXXXX";
    if (!mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
    setenv("XDG_CACHE_HOME", dir, 1);
    return gpu::Context::create();
}

TEST(PipelineBackground, HandleWaitsForACompileElsewhere) {
    auto ctx = fresh_context();
    const gpu::Pipeline& p = ctx->pipeline(fill(24));
    std::promise<void> compiled;
    p.compile_elsewhere(compiled.get_future().share());
    p.compile_elsewhere(std::shared_future<void>());  // a second one is ignored while the first is pending
    std::future<VkPipeline> handle = std::async(std::launch::async, [&] { return p.handle(); });
    EXPECT_EQ(handle.wait_for(std::chrono::milliseconds(200)), std::future_status::timeout)
        << "handle() returned before the compile elsewhere was done";
    compiled.set_value();
    ASSERT_EQ(handle.wait_for(std::chrono::seconds(10)), std::future_status::ready);
    EXPECT_NE(handle.get(), VkPipeline(VK_NULL_HANDLE));
    expect_fill_works(*ctx, 24);
}

TEST(PipelineBackground, LaterPipelinesAreCreatedNowAndCompiledBehindTheCaller) {
    auto ctx = fresh_context();
    const std::vector<gpu::PipelineRequest> requests{fill(72), fill(80), fill(88)};
    const size_t before = ctx->pipeline_count();
    const size_t background = gpu::prepare_in_background(*ctx, requests, 2);
    EXPECT_EQ(ctx->pipeline_count(), before + requests.size()) << "every pipeline is created on the context";
    // Only a driver that compiles at the first dispatch compiles them elsewhere.
    EXPECT_EQ(background, ctx->compiles_at_first_dispatch() ? requests.size() : 0u);
    // Dispatching them waits for their compiles where needed and computes the right thing.
    for (const gpu::PipelineRequest& r : requests) expect_fill_works(*ctx, r.spec_constants[0]);
    // Nothing is left to compile in the background when every one was created by an earlier run.
    ctx.reset();
    auto again = gpu::Context::create();
    EXPECT_EQ(gpu::prepare_in_background(*again, requests, 1), 0u);
    for (const gpu::PipelineRequest& r : requests) expect_fill_works(*again, r.spec_constants[0]);
}

}  // namespace
}  // namespace vkllm
