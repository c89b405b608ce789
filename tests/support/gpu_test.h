// A fixture for tests that run on the GPU: one shared Context for the whole program (created on
// the default device, honouring VKLLM_LIMITS and VKLLM_VALIDATE), and a check that no
// validation-layer error appeared during the test.
#pragma once

#include <gtest/gtest.h>

#include <memory>

#include "gpu/device.h"

namespace vkllm::test {

class GpuTest : public ::testing::Test {
public:
    static gpu::Context& ctx() {
        static std::unique_ptr<gpu::Context> context = gpu::Context::create();
        return *context;
    }

protected:
    void SetUp() override { errors_before_ = gpu::validation_error_count(); }
    void TearDown() override {
        EXPECT_EQ(gpu::validation_error_count(), errors_before_) << "the Vulkan validation layer reported errors";
    }

private:
    uint64_t errors_before_ = 0;
};

// A context of its own on the default device with the int8 matvec forced on (1) or off (0)
// (gpu::ContextOptions::integer_dot), to compare the two paths.
inline std::unique_ptr<gpu::Context> context_with_integer_dot(int integer_dot) {
    gpu::ContextOptions o;
    o.integer_dot = integer_dot;
    return gpu::Context::create(o);
}

}  // namespace vkllm::test
