// Compiling a later step's pipelines in the background (gpu/pipeline_prepare.h's
// prepare_in_background) and the wait it puts in Pipeline::handle() (compile_elsewhere).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <future>
#include <thread>

#include "fill_test_shader.h"
#include "gpu/buffer.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "gpu/pipeline_prepare.h"
#include "gpu/stream.h"
#include "test_support.h"

namespace vkllm {
namespace {

using test::expect_fill_works;
using test::fill_test_request;

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
    const gpu::Pipeline& p = ctx->pipeline(fill_test_request(24));
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
    const std::vector<gpu::PipelineRequest> requests{fill_test_request(72), fill_test_request(80), fill_test_request(88)};
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
