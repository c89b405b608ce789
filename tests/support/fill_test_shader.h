// The runtime tests' shader, shaders/fill_test.comp (out[i] = in[i] * scale + i over n floats):
// its push constants, its pipeline request at a workgroup size (a specialisation constant, so
// each size is a pipeline of its own), and a dispatch checked against that formula.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "gpu/buffer.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "gpu/stream.h"
#include "test_support.h"

namespace vkllm::test {

struct FillPush {
    uint32_t n;
    float scale;
};

inline gpu::PipelineRequest fill_test_request(uint32_t workgroup) {
    return {"fill_test", 2, sizeof(FillPush), {workgroup}};
}

// fill_test with workgroup size `wg` over 100 floats (not a multiple of it): out[i] = in[i] * 2 + i.
inline void expect_fill_works(gpu::Context& ctx, uint32_t wg) {
    const uint32_t n = 100;
    const std::vector<float> a = random_floats(n, wg);
    gpu::Buffer in(ctx, n * 4, gpu::Memory::Device), out(ctx, n * 4, gpu::Memory::Device);
    in.upload(a.data(), n * 4);
    gpu::Stream s(ctx);
    s.begin();
    s.dispatch(ctx.pipeline(fill_test_request(wg)), {in, out}, FillPush{n, 2.0f}, (n + wg - 1) / wg);
    s.submit_and_wait();
    std::vector<float> got(n);
    out.download(got.data(), n * 4);
    for (uint32_t i = 0; i < n; ++i) ASSERT_FLOAT_EQ(got[i], a[i] * 2.0f + float(i)) << "wg " << wg << " i " << i;
}

}  // namespace vkllm::test
