# cmake -DNAME=n -DSPV=file.spv -DOUT=file.cpp -P EmbedSpirv.cmake
# Writes the SPIR-V words of one shader variant as a C++ array.
file(READ ${SPV} hex HEX)
string(LENGTH "${hex}" n_hex)
math(EXPR n_bytes "${n_hex} / 2")
# SPIR-V is a stream of little-endian 32-bit words: regroup each 8 hex digits.
string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," words "${hex}")
file(WRITE ${OUT} "// Generated from ${SPV}. Do not edit.
#include <cstddef>
#include <cstdint>
namespace vkllm::gpu {
extern const uint32_t spv_${NAME}[] = {${words}};
extern const size_t spv_${NAME}_size = ${n_bytes};
}  // namespace vkllm::gpu
")
