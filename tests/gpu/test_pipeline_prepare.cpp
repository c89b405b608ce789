// Collecting the pipelines a recording uses without running it (gpu/pipeline_collector.h), and
// compiling a list of them ahead on several threads (gpu/pipeline_prepare.h).
#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

#include "fill_test_shader.h"
#include "gpu/buffer.h"
#include "gpu/pipeline.h"
#include "gpu/pipeline_collector.h"
#include "gpu/pipeline_prepare.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/push_constants.h"
#include "test_support.h"

namespace vkllm {
namespace {

using test::expect_fill_works;
using test::fill_test_request;
using test::FillPush;
using test::GpuTest;

TEST_F(GpuTest, CollectingRecordsNothingAndNotesOnlyNewPipelines) {
    gpu::Context& c = ctx();
    const gpu::Pipeline& known = c.pipeline(fill_test_request(48));
    const size_t created = c.pipeline_count();
    const uint32_t n = 64;
    const std::vector<float> zeros(n, 0.0f), ones(n, 1.0f);
    gpu::Buffer in(c, n * 4, gpu::Memory::Device), out(c, n * 4, gpu::Memory::Device);
    in.upload(ones.data(), n * 4);
    out.upload(zeros.data(), n * 4);
    gpu::Stream s(c);
    std::vector<gpu::PipelineRequest> requests;
    {
        gpu::PipelineCollector collector(c);
        EXPECT_THROW(gpu::PipelineCollector again(c), std::logic_error);
        s.begin();
        const gpu::Pipeline& p = c.pipeline(fill_test_request(40));
        EXPECT_EQ(p.handle(), VkPipeline(VK_NULL_HANDLE)) << "a placeholder, not a pipeline";
        EXPECT_EQ(p.written_bindings(), 0b10u);
        EXPECT_EQ(&c.pipeline(fill_test_request(40)), &p) << "one placeholder per key";
        EXPECT_EQ(&c.pipeline(fill_test_request(48)), &known) << "a created pipeline is itself";
        s.dispatch(p, {in, out}, FillPush{n, 1.0f}, 1);
        s.barrier("collecting: nothing is recorded");
        s.dispatch(known, {in, out}, FillPush{n, 1.0f}, 1);
        s.copy(in, 0, out, 0, 16);
        s.submit_and_wait();
        // Wrong push constants are refused while collecting too.
        EXPECT_THROW(c.pipeline("fill_test", 2, 4, {44}), std::logic_error);
        EXPECT_THROW(s.dispatch(p, {in}, FillPush{n, 1.0f}, 1), std::logic_error);
        // Another thread sees the context as usual: it creates what it asks for.
        std::thread other([&] {
            EXPECT_NE(c.pipeline(fill_test_request(56)).handle(), VkPipeline(VK_NULL_HANDLE));
            expect_fill_works(c, 56);
        });
        other.join();
        requests = collector.requests();
    }
    ASSERT_EQ(requests.size(), 1u);
    EXPECT_EQ(requests[0].key(), "fill_test:40");
    EXPECT_EQ(c.pipeline_count(), created + 1) << "only the other thread's pipeline was created";
    std::vector<float> got(n);
    out.download(got.data(), n * 4);
    EXPECT_EQ(got, zeros) << "a collected recording ran";
    // The same stream records for real again, and the collected request is created when asked.
    expect_fill_works(c, 40);
}

TEST_F(GpuTest, PreparedPipelinesAreCreatedWithProgressOnOneAndTwoThreads) {
    gpu::Context& c = ctx();
    for (int threads : {1, 2}) {
        const uint32_t base = threads == 1 ? 64 : 104;
        std::vector<gpu::PipelineRequest> requests;
        for (uint32_t k = 0; k < 4; ++k) requests.push_back(fill_test_request(base + 8 * k));
        const size_t before = c.pipeline_count();
        std::vector<gpu::PrepareStatus> seen;
        gpu::prepare_pipelines(c, requests, threads, [&](const gpu::PrepareStatus& s) { seen.push_back(s); });
        EXPECT_EQ(c.pipeline_count(), before + 4) << threads << " threads";
        ASSERT_FALSE(seen.empty());
        EXPECT_EQ(seen.front().done, 0u);
        EXPECT_EQ(seen.back().done, 4u);
        for (size_t i = 0; i < seen.size(); ++i) {
            EXPECT_EQ(seen[i].total, 4u);
            if (i) { EXPECT_GE(seen[i].done, seen[i - 1].done); }
        }
        EXPECT_EQ(seen.back().what.rfind("fill_test:", 0), 0u) << seen.back().what;
        for (const gpu::PipelineRequest& r : requests) expect_fill_works(c, r.spec_constants[0]);
        // Again: nothing left to do.
        seen.clear();
        gpu::prepare_pipelines(c, requests, threads, [&](const gpu::PrepareStatus& s) { seen.push_back(s); });
        EXPECT_EQ(c.pipeline_count(), before + 4);
    }
}

TEST_F(GpuTest, PrepareReportsTheFirstErrorAndKeepsWhatItCompiled) {
    gpu::Context& c = ctx();
    std::vector<gpu::PipelineRequest> requests{fill_test_request(168), {"fill_test", 2, 4, {176}}, fill_test_request(184)};
    EXPECT_THROW(gpu::prepare_pipelines(c, requests, 2), std::logic_error);
    requests = {{"no_such_shader", 1, 0, {}}};
    EXPECT_THROW(gpu::prepare_pipelines(c, requests, 1), std::logic_error);
    expect_fill_works(c, 168);
    // A callback that throws stops the preparation; its exception reaches the caller.
    requests = {fill_test_request(200), fill_test_request(208), fill_test_request(216)};
    EXPECT_THROW(gpu::prepare_pipelines(c, requests, 2,
                                        [](const gpu::PrepareStatus& s) {
                                            if (s.done > 0) throw std::runtime_error("stop");
                                        }),
                 std::runtime_error);
    gpu::prepare_pipelines(c, requests, 2);
    for (const gpu::PipelineRequest& r : requests) expect_fill_works(c, r.spec_constants[0]);
}

TEST_F(GpuTest, WarmingAPipelineIsAnEmptyDispatch) {
    gpu::Context& c = ctx();
    gpu::warm_pipeline(c, c.pipeline(fill_test_request(232)));
    gpu::warm_pipeline(c, c.pipeline("matvec_q8_0", 4, sizeof(ops::MatvecPush), {32, 2, 0}));
    expect_fill_works(c, 232);
}

}  // namespace
}  // namespace vkllm
