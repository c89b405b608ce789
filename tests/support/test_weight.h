// A weight for the op tests: its bytes on the host (for the CPU reference) and the same bytes in a
// GPU buffer (for the op).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "cpu/ref_ops.h"
#include "gguf/quant.h"
#include "gpu/buffer.h"
#include "ops/ops.h"
#include "test_support.h"

namespace vkllm::test {

struct TestWeight {
    gguf::TensorType type;
    int64_t n_in, n_out;
    std::vector<uint8_t> bytes;
    gpu::Buffer buffer;

    ops::Weight gpu() const { return {type, &buffer, n_in, n_out}; }
    cpu::WeightView cpu() const { return {type, bytes.data(), n_in, n_out}; }
};

// `bytes` (n_out rows of n_in values in `type`) uploaded as a weight.
inline TestWeight upload_weight(gpu::Context& ctx, gguf::TensorType type, int64_t n_in, int64_t n_out,
                                std::vector<uint8_t> bytes) {
    TestWeight w{type, n_in, n_out, std::move(bytes), {}};
    w.buffer = gpu::Buffer(ctx, ops::weight_buffer_bytes(type, n_in, n_out), gpu::Memory::Device);
    w.buffer.upload(w.bytes.data(), w.bytes.size());
    return w;
}

// Random values quantized to `type` by the host encoder, uploaded.
inline TestWeight make_weight(gpu::Context& ctx, gguf::TensorType type, int64_t n_in, int64_t n_out, uint32_t seed) {
    const auto values = random_floats(size_t(n_in * n_out), seed);
    return upload_weight(ctx, type, n_in, n_out, gguf::quantize(type, values.data(), values.size()));
}

}  // namespace vkllm::test
