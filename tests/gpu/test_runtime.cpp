// The Vulkan runtime: device selection, capabilities, buffers, pipelines, streams, timestamps.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "gpu/buffer.h"
#include "gpu/device.h"
#include "gpu/error.h"
#include "gpu/pipeline.h"
#include "gpu/shaders.h"
#include "gpu/spirv_bindings.h"
#include "gpu/stream.h"
#include "gpu_test.h"
#include "ops/push_constants.h"
#include "test_support.h"

namespace vkllm {
namespace {

using test::GpuTest;

TEST(Devices, EnumerateListsAtLeastOneDeviceWithSaneLimits) {
    auto devices = gpu::enumerate_devices();
    ASSERT_FALSE(devices.empty());
    for (const auto& d : devices) {
        EXPECT_FALSE(d.name.empty());
        EXPECT_GT(d.max_storage_buffer_range, 0u);
        EXPECT_GT(d.max_shared_memory, 0u);
        EXPECT_GE(d.subgroup_size, 1u);
    }
}

TEST(Devices, MobileProfileClampsLimits) {
    gpu::Capabilities c;
    c.max_storage_buffer_range = 4ull << 30;
    c.max_shared_memory = 64 << 10;
    c.fp16_arithmetic = c.int8_arithmetic = c.subgroup_arithmetic = true;
    gpu::apply_limits_profile(c, "mobile");
    EXPECT_EQ(c.max_storage_buffer_range, 128ull << 20);
    EXPECT_EQ(c.max_shared_memory, 16u << 10);
    EXPECT_FALSE(c.fp16_arithmetic);
    EXPECT_FALSE(c.int8_arithmetic);
    EXPECT_FALSE(c.subgroup_arithmetic);
    EXPECT_EQ(c.limits_profile, "mobile");
    EXPECT_THROW(gpu::apply_limits_profile(c, "tiny"), std::runtime_error);
}

TEST(Devices, UnknownDeviceNameIsAClearError) {
    gpu::ContextOptions opt;
    opt.device = "no-such-gpu-anywhere";
    try {
        gpu::Context::create(opt);
        FAIL() << "expected an error";
    } catch (const gpu::GpuError& e) {
        EXPECT_NE(std::string(e.what()).find("no-such-gpu-anywhere"), std::string::npos);
    }
}

TEST_F(GpuTest, ContextHonoursLimitsEnvironment) {
    const char* limits = std::getenv("VKLLM_LIMITS");
    bool mobile = limits && std::string(limits) == "mobile";
    EXPECT_EQ(ctx().caps().limits_profile, mobile ? "mobile" : "native");
    if (mobile) {
        EXPECT_LE(ctx().caps().max_storage_buffer_range, 128ull << 20);
    }
}

TEST_F(GpuTest, UploadDispatchDownload) {
    const uint32_t n = 1000;  // not a multiple of the workgroup size
    auto a = test::random_floats(n, 1);
    gpu::Buffer in(ctx(), n * 4, gpu::Memory::Device), out(ctx(), n * 4, gpu::Memory::Device);
    in.upload(a.data(), n * 4);
    const auto& p = ctx().pipeline("fill_test", 2, 8, {64});
    struct { uint32_t n; float scale; } push{n, 2.5f};
    gpu::Stream s(ctx());
    s.set_profiling(true);
    s.begin();
    s.mark("fill");
    s.dispatch(p, {in, out}, push, (n + 63) / 64);
    s.submit_and_wait();
    std::vector<float> got(n);
    out.download(got.data(), n * 4);
    for (uint32_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(got[i], a[i] * 2.5f + float(i)) << i;
    if (ctx().caps().timestamps) {
        auto t = s.timings();
        ASSERT_EQ(t.size(), 1u);
        EXPECT_EQ(t[0].first, "fill");
        EXPECT_GE(t[0].second, 0.0);
    }
}

TEST_F(GpuTest, StreamIsReusableAndBarriersOrderDispatches) {
    const uint32_t n = 257;
    std::vector<float> ones(n, 1.0f);
    gpu::Buffer a(ctx(), n * 4, gpu::Memory::Device), b(ctx(), n * 4, gpu::Memory::Device);
    a.upload(ones.data(), n * 4);
    const auto& p = ctx().pipeline("fill_test", 2, 8, {32});
    struct { uint32_t n; float scale; } push{n, 1.0f};
    gpu::Stream s(ctx());
    for (int round = 0; round < 2; ++round) {
        s.begin();
        s.dispatch(p, {a, b}, push, (n + 31) / 32);  // b = a + i
        s.barrier("b written above is read below");
        s.dispatch(p, {b, a}, push, (n + 31) / 32);  // a = b + i = a + 2i
        s.submit_and_wait();
    }
    std::vector<float> got(n);
    a.download(got.data(), n * 4);
    for (uint32_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(got[i], 1.0f + 4.0f * float(i)) << i;
}

// Barriers name the buffer ranges written since the previous barrier: a shader's bindings that
// its SPIR-V does not declare readonly (fill_test writes binding 1 only; matvec writes y, binding
// 2) and transfer destinations, one range per buffer spanning its writes; a barrier after no write
// names nothing (an execution dependency alone). Synchronization validation (VKLLM_VALIDATE=1)
// checks that the dispatches after each barrier see what they read.
TEST_F(GpuTest, BarriersNameTheBuffersWrittenSinceTheLastOne) {
    EXPECT_EQ(ctx().pipeline("fill_test", 2, 8, {32}).written_bindings(), 0b10u);
    EXPECT_EQ(ctx().pipeline("matvec_q8_0", 4, sizeof(ops::MatvecPush), {32, 2, 0}).written_bindings(), 0b100u);
    EXPECT_EQ(ctx().pipeline("moe_matvec_q4_0", 5, sizeof(ops::MoeMatvecPush), {32, 2, 0}).written_bindings(), 0b100u);
    const uint32_t n = 64;
    std::vector<float> ones(3 * n, 1.0f);
    gpu::Buffer a(ctx(), 3 * n * 4, gpu::Memory::Device), b(ctx(), n * 4, gpu::Memory::Device),
        c(ctx(), 3 * n * 4, gpu::Memory::Device);
    a.upload(ones.data(), 3 * n * 4);
    c.upload(ones.data(), 3 * n * 4);
    const auto& p = ctx().pipeline("fill_test", 2, 8, {32});
    struct { uint32_t n; float scale; } push{n, 1.0f};
    gpu::Stream s(ctx());
    s.begin();
    s.dispatch(p, {gpu::BufferRange(a, 0, n * 4), b}, push, 2);  // b = a + i
    s.copy(a, 0, c, 2 * n * 4, n * 4);                            // c[2n..3n) = a[0..n)
    s.copy(a, 0, c, 0, 8);                                        // c[0..2)
    s.barrier("b and c are written above, read below");
    auto ranges = s.last_barrier_ranges();
    ASSERT_EQ(ranges.size(), 2u);
    EXPECT_EQ(ranges[0].buffer, b.handle());
    EXPECT_EQ(ranges[0].offset, 0u);
    EXPECT_EQ(ranges[1].buffer, c.handle());
    EXPECT_EQ(ranges[1].offset, 0u);
    EXPECT_EQ(ranges[1].size, 3u * n * 4);  // both copies, merged
    s.dispatch(p, {b, gpu::BufferRange(a, n * 4, n * 4)}, push, 2);  // a[n..2n) = b + i
    s.dispatch(p, {gpu::BufferRange(c, 2 * n * 4, n * 4), gpu::BufferRange(a, 2 * n * 4, n * 4)}, push, 2);
    s.barrier("a's second and third parts are written above");
    ranges = s.last_barrier_ranges();
    ASSERT_EQ(ranges.size(), 1u);
    EXPECT_EQ(ranges[0].buffer, a.handle());
    EXPECT_EQ(ranges[0].offset, uint64_t(n) * 4);
    EXPECT_EQ(ranges[0].size, 2u * n * 4);
    s.barrier("nothing written since the last barrier");
    EXPECT_TRUE(s.last_barrier_ranges().empty());
    s.dispatch(p, {gpu::BufferRange(a, n * 4, n * 4), b}, push, 2);  // b = a[n..2n) + i = 1 + 2i
    s.submit_and_wait();
    std::vector<float> got(3 * n);
    a.download(got.data(), 3 * n * 4);
    for (uint32_t i = 0; i < n; ++i) {
        ASSERT_FLOAT_EQ(got[n + i], 1.0f + 2.0f * float(i)) << i;
        ASSERT_FLOAT_EQ(got[2 * n + i], 1.0f + float(i)) << i;
    }
    b.download(got.data(), n * 4);
    for (uint32_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(got[i], 1.0f + 3.0f * float(i)) << i;
}

// Malformed SPIR-V is an error, not a guess.
TEST(SpirvBindings, RejectsWhatIsNotSpirv) {
    const uint32_t not_spirv[6] = {1, 2, 3, 4, 5, 6};
    EXPECT_THROW(gpu::spirv_written_bindings(not_spirv, 6), std::runtime_error);
    const uint32_t truncated[6] = {0x07230203, 0x00010500, 0, 10, 0, (9u << 16) | 71u};  // a 9-word op in 1 word
    EXPECT_THROW(gpu::spirv_written_bindings(truncated, 6), std::runtime_error);
}

TEST_F(GpuTest, BindingOverTheRangeLimitIsRejected) {
    const auto& p = ctx().pipeline("fill_test", 2, 8, {64});
    gpu::Buffer a(ctx(), 64, gpu::Memory::Device);
    gpu::Stream s(ctx());
    s.begin();
    struct { uint32_t n; float scale; } push{1, 1.0f};
    EXPECT_THROW(s.dispatch(p, {a, gpu::BufferRange(a, 3, 16)}, push, 1), std::logic_error);  // misaligned
    s.submit_and_wait();
}

TEST_F(GpuTest, UnknownShaderIsALogicError) {
    EXPECT_EQ(gpu::find_shader("no_such_shader"), nullptr);
    EXPECT_THROW(ctx().pipeline("no_such_shader", 1, 0), std::logic_error);
}

}  // namespace
}  // namespace vkllm

namespace vkllm {
namespace {

using test::GpuTest;

TEST_F(GpuTest, CopyRowsGathersStridedRows) {
    std::vector<float> src(40);
    for (size_t i = 0; i < src.size(); ++i) src[i] = float(i);
    gpu::Buffer a(ctx(), 160, gpu::Memory::Device), b(ctx(), 160, gpu::Memory::Device);
    a.upload(src.data(), 160);
    b.fill_zero();
    gpu::Stream s(ctx());
    s.begin();
    s.copy_rows(a, 4 * 4, 10 * 4, b, 0, 3 * 4, 3 * 4, 4);  // rows 4..6 of each 10-float block, packed
    EXPECT_THROW(s.copy_rows(a, 0, 10 * 4, b, 0, 10 * 4, 4 * 4, 5), std::logic_error);
    s.submit_and_wait();
    std::vector<float> got(12);
    b.download(got.data(), 48);
    EXPECT_EQ(got, (std::vector<float>{4, 5, 6, 14, 15, 16, 24, 25, 26, 34, 35, 36}));
}

}  // namespace
}  // namespace vkllm

namespace vkllm {
namespace {

// The pipeline cache is optional: a directory where its file should be must not stop a run,
// and must be left as it was.
TEST(PipelineCache, DirectoryInPlaceOfTheCacheFileIsIgnored) {
    const std::string home = ::testing::TempDir() + "/vkllm_cache_dir_test";
    std::filesystem::remove_all(home);
    test::ScopedEnv env("XDG_CACHE_HOME", home);
    {
        auto ctx = gpu::Context::create();  // writes the cache file on destruction
    }
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(home + "/vkllm")) files.push_back(e.path());
    ASSERT_EQ(files.size(), 1u) << "one cache file, no temporary left behind";
    std::filesystem::remove(files[0]);
    std::filesystem::create_directories(files[0] / "inside");
    {
        auto ctx = gpu::Context::create();
        EXPECT_TRUE(ctx->pipeline_cache() != VK_NULL_HANDLE);
    }
    EXPECT_TRUE(std::filesystem::is_directory(files[0] / "inside"));
    size_t n = 0;
    for (const auto& e : std::filesystem::directory_iterator(home + "/vkllm")) n += e.path() != files[0];
    EXPECT_EQ(n, 0u) << "no temporary file left behind";
    std::filesystem::remove_all(home);
}

}  // namespace
}  // namespace vkllm
