// What a compute shader declares, read from its SPIR-V: the bindings of descriptor set 0 it may
// write (Stream::barrier names only buffers written since the last barrier) and the layout of its
// push-constant block (Pipeline checks the C++ push constants' size against it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace vkllm::gpu {

// Bit b set: some variable at binding b of set 0 lacks NonWritable (GLSL `readonly`), on the
// variable or on every member of its block. Throws std::runtime_error for malformed SPIR-V.
uint64_t spirv_written_bindings(const uint32_t* words, size_t n_words);

// One scalar of a push-constant block, or a vector, matrix or array as a whole (Other).
struct SpirvPushMember {
    enum class Kind : uint8_t { Uint, Int, Float, Other };
    uint32_t offset = 0;  // bytes from the block's start (OpMemberDecorate Offset, nested blocks added)
    uint32_t size = 0;    // bytes
    Kind kind = Kind::Other;
};

// The push-constant block: its members in declaration order (members of nested structs in place
// of the struct) and its size, the end of its last byte (the range a pipeline layout must cover).
// size 0 and no members when the shader has none.
struct SpirvPushBlock {
    uint32_t size = 0;
    std::vector<SpirvPushMember> members;
};

// Throws std::runtime_error for malformed SPIR-V, more than one push-constant variable, or a
// block member without an Offset or of a type whose size the reader does not know.
SpirvPushBlock spirv_push_constants(const uint32_t* words, size_t n_words);

}  // namespace vkllm::gpu
