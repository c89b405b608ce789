#include "gpu/spirv_bindings.h"

#include <map>
#include <set>
#include <stdexcept>

namespace vkllm::gpu {

namespace {
// SPIR-V opcodes and enumerants (SPIR-V specification, sections 3.20 and 3.32).
constexpr uint32_t kMagic = 0x07230203;
constexpr uint32_t kOpTypeStruct = 30, kOpTypePointer = 32, kOpVariable = 59, kOpDecorate = 71, kOpMemberDecorate = 72;
constexpr uint32_t kDecorationNonWritable = 24, kDecorationBinding = 33, kDecorationDescriptorSet = 34;
}  // namespace

uint64_t spirv_written_bindings(const uint32_t* words, size_t n_words) {
    if (n_words < 5 || words[0] != kMagic) throw std::runtime_error("not SPIR-V (bad magic number)");
    std::map<uint32_t, uint32_t> binding, set, pointee, var_type, struct_members;
    std::set<uint32_t> non_writable;                   // ids decorated NonWritable
    std::map<uint32_t, std::set<uint32_t>> ro_members;  // struct id -> members decorated NonWritable
    for (size_t i = 5; i < n_words;) {
        const uint32_t count = words[i] >> 16, op = words[i] & 0xFFFF;
        if (count == 0 || i + count > n_words) throw std::runtime_error("malformed SPIR-V instruction");
        const uint32_t* a = words + i + 1;  // operands
        if (op == kOpDecorate && count >= 3) {
            if (a[1] == kDecorationBinding && count >= 4) binding[a[0]] = a[2];
            if (a[1] == kDecorationDescriptorSet && count >= 4) set[a[0]] = a[2];
            if (a[1] == kDecorationNonWritable) non_writable.insert(a[0]);
        } else if (op == kOpMemberDecorate && count >= 4 && a[2] == kDecorationNonWritable) {
            ro_members[a[0]].insert(a[1]);
        } else if (op == kOpTypeStruct && count >= 2) {
            struct_members[a[0]] = count - 2;
        } else if (op == kOpTypePointer && count >= 4) {
            pointee[a[0]] = a[2];
        } else if (op == kOpVariable && count >= 4) {
            var_type[a[1]] = a[0];
        }
        i += count;
    }
    uint64_t written = 0;
    for (const auto& [var, b] : binding) {
        if (!var_type.count(var) || (set.count(var) && set[var] != 0) || b >= 64) continue;
        if (non_writable.count(var)) continue;
        const uint32_t block = pointee.count(var_type[var]) ? pointee[var_type[var]] : 0;
        const auto members = struct_members.find(block);
        const bool all_readonly = members != struct_members.end() && ro_members.count(block) &&
                                  ro_members[block].size() == members->second;
        if (!all_readonly) written |= uint64_t(1) << b;
    }
    return written;
}

}  // namespace vkllm::gpu
