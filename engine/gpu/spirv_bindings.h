// What a compute shader does with its storage buffers, read from its SPIR-V: the bindings of
// descriptor set 0 it may write. Stream::barrier names only buffers written since the last barrier.
#pragma once

#include <cstddef>
#include <cstdint>

namespace vkllm::gpu {

// Bit b set: some variable at binding b of set 0 lacks NonWritable (GLSL `readonly`), on the
// variable or on every member of its block. Throws std::runtime_error for malformed SPIR-V.
uint64_t spirv_written_bindings(const uint32_t* words, size_t n_words);

}  // namespace vkllm::gpu
