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

}  // namespace vkllm::test
