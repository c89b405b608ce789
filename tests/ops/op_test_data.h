// Test data for the op tests: vectors uploaded into device buffers and read back, and the weight
// types the GPU ops take.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

#include "gguf/gguf.h"
#include "gpu/buffer.h"
#include "gpu/device.h"

namespace vkllm::test {

// A device buffer holding v, at least min_elems elements long.
template <class T>
gpu::Buffer upload(gpu::Context& ctx, const std::vector<T>& v, size_t min_elems = 1) {
    gpu::Buffer b(ctx, std::max(v.size(), min_elems) * sizeof(T), gpu::Memory::Device);
    if (!v.empty()) b.upload(v.data(), v.size() * sizeof(T));
    return b;
}

// The first n elements of b.
template <class T>
std::vector<T> download(const gpu::Buffer& b, size_t n) {
    std::vector<T> v(n);
    if (n) b.download(v.data(), n * sizeof(T));
    return v;
}

// Every float of b.
inline std::vector<float> download(const gpu::Buffer& b) { return download<float>(b, b.size() / 4); }

// Every weight type the GPU's matmul, get_rows and expert ops take.
inline constexpr gguf::TensorType kGpuWeightTypes[] = {
    gguf::TensorType::F32,  gguf::TensorType::F16,  gguf::TensorType::BF16, gguf::TensorType::Q8_0,
    gguf::TensorType::Q4_0, gguf::TensorType::Q4_1, gguf::TensorType::Q5_0, gguf::TensorType::Q5_1,
    gguf::TensorType::Q2_K, gguf::TensorType::Q3_K, gguf::TensorType::Q4_K, gguf::TensorType::Q5_K,
    gguf::TensorType::Q6_K, gguf::TensorType::MXFP4};

}  // namespace vkllm::test
