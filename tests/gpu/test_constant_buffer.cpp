// Context::constant_buffer: read-only tables uploaded once per context and shared by key.
#include <gtest/gtest.h>

#include <cstdint>
#include <stdexcept>
#include <thread>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/device.h"
#include "gpu_test.h"

namespace vkllm {
namespace {

using test::GpuTest;

std::vector<uint8_t> table(size_t n, uint8_t seed) {
    std::vector<uint8_t> t(n);
    for (size_t i = 0; i < n; ++i) t[i] = uint8_t(seed + 7 * i);
    return t;
}

TEST_F(GpuTest, ConstantBufferHoldsItsBytesPaddedToAWord) {
    const auto bytes = table(1027, 3);  // not a whole number of words
    const gpu::Buffer& b = ctx().constant_buffer("test.table_1027", bytes);
    ASSERT_EQ(b.size(), 1028u);
    std::vector<uint8_t> got(b.size());
    b.download(got.data(), got.size());
    for (size_t i = 0; i < bytes.size(); ++i) ASSERT_EQ(got[i], bytes[i]) << i;
    EXPECT_EQ(got.back(), 0u);
}

TEST_F(GpuTest, ConstantBufferIsSharedByKeyAndRefusesOtherBytes) {
    const auto a = table(64, 1), b = table(64, 2);
    const gpu::Buffer* first = nullptr;
    const gpu::Buffer* from_thread = nullptr;
    first = &ctx().constant_buffer("test.shared", a);
    std::thread t([&] { from_thread = &ctx().constant_buffer("test.shared", a); });
    t.join();
    EXPECT_EQ(first, from_thread);
    EXPECT_NE(first, &ctx().constant_buffer("test.other", b));
    EXPECT_THROW(ctx().constant_buffer("test.shared", b), std::invalid_argument);
    EXPECT_THROW(ctx().constant_buffer("test.shared", table(63, 1)), std::invalid_argument);
    EXPECT_THROW(ctx().constant_buffer("test.empty", {}), std::invalid_argument);
}

}  // namespace
}  // namespace vkllm
