#include "gpu/spirv_bindings.h"

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>

namespace vkllm::gpu {

namespace {
// SPIR-V opcodes and enumerants (SPIR-V specification, sections 3.20 and 3.32).
constexpr uint32_t kMagic = 0x07230203;
constexpr uint32_t kOpTypeStruct = 30, kOpTypePointer = 32, kOpVariable = 59, kOpDecorate = 71, kOpMemberDecorate = 72;
constexpr uint32_t kDecorationNonWritable = 24, kDecorationBinding = 33, kDecorationDescriptorSet = 34;
constexpr uint32_t kOpTypeInt = 21, kOpTypeFloat = 22, kOpTypeVector = 23, kOpTypeMatrix = 24, kOpTypeArray = 28,
                   kOpConstant = 43;
constexpr uint32_t kDecorationArrayStride = 6, kDecorationMatrixStride = 7, kDecorationOffset = 35;
constexpr uint32_t kStorageClassPushConstant = 9;

// Calls f(opcode, operands, operand count) for each instruction after the header.
template <class F> void for_each_instruction(const uint32_t* words, size_t n_words, F&& f) {
    if (n_words < 5 || words[0] != kMagic) throw std::runtime_error("not SPIR-V (bad magic number)");
    for (size_t i = 5; i < n_words;) {
        const uint32_t count = words[i] >> 16, op = words[i] & 0xFFFF;
        if (count == 0 || i + count > n_words) throw std::runtime_error("malformed SPIR-V instruction");
        f(op, words + i + 1, count - 1);
        i += count;
    }
}

// The types of a module, enough to lay out a push-constant block.
struct Types {
    struct Type {
        uint32_t op = 0;
        std::vector<uint32_t> operands;  // after the result id
    };
    std::map<uint32_t, Type> types;
    std::map<uint32_t, uint32_t> constants;                          // id -> first value word
    std::map<uint32_t, uint32_t> array_stride;                       // type id -> bytes
    std::map<uint32_t, std::map<uint32_t, uint32_t>> member_offset;  // struct -> member -> bytes
    std::map<uint32_t, std::map<uint32_t, uint32_t>> member_matrix_stride;

    const Type& at(uint32_t id) const {
        const auto it = types.find(id);
        if (it == types.end()) throw std::runtime_error("SPIR-V push constants: unknown type %" + std::to_string(id));
        return it->second;
    }

    // Bytes of a type inside an explicitly laid out block.
    uint32_t size(uint32_t id, uint32_t matrix_stride_hint = 0) const {
        const Type& t = at(id);
        switch (t.op) {
            case kOpTypeInt:
            case kOpTypeFloat: return t.operands.at(0) / 8;
            case kOpTypeVector: return size(t.operands.at(0)) * t.operands.at(1);
            case kOpTypeMatrix: {
                if (!matrix_stride_hint)
                    throw std::runtime_error("SPIR-V push constants: a matrix without MatrixStride");
                return matrix_stride_hint * t.operands.at(1);
            }
            case kOpTypeArray: {
                const auto stride = array_stride.find(id);
                const auto length = constants.find(t.operands.at(1));
                if (stride == array_stride.end() || length == constants.end())
                    throw std::runtime_error("SPIR-V push constants: an array without ArrayStride or constant length");
                return stride->second * length->second;
            }
            case kOpTypeStruct: {
                uint32_t end = 0;
                for (uint32_t m = 0; m < t.operands.size(); ++m)
                    end = std::max(end, offset(id, m) + member_size(id, m));
                return end;
            }
            default: throw std::runtime_error("SPIR-V push constants: a member of unsupported type (opcode " +
                                              std::to_string(t.op) + ")");
        }
    }

    uint32_t offset(uint32_t struct_id, uint32_t member) const {
        const auto s = member_offset.find(struct_id);
        if (s == member_offset.end() || !s->second.count(member))
            throw std::runtime_error("SPIR-V push constants: member " + std::to_string(member) + " has no Offset");
        return s->second.at(member);
    }

    uint32_t member_size(uint32_t struct_id, uint32_t member) const {
        uint32_t stride = 0;
        if (auto s = member_matrix_stride.find(struct_id); s != member_matrix_stride.end() && s->second.count(member))
            stride = s->second.at(member);
        return size(at(struct_id).operands.at(member), stride);
    }

    // Appends the members of struct `id`, at `base`, flattening nested structs.
    void flatten(uint32_t id, uint32_t base, std::vector<SpirvPushMember>& out) const {
        const Type& t = at(id);
        for (uint32_t m = 0; m < t.operands.size(); ++m) {
            const uint32_t member_type = t.operands[m], at_offset = base + offset(id, m);
            const Type& mt = at(member_type);
            if (mt.op == kOpTypeStruct) {
                flatten(member_type, at_offset, out);
                continue;
            }
            SpirvPushMember p;
            p.offset = at_offset;
            p.size = member_size(id, m);
            if (mt.op == kOpTypeFloat) p.kind = SpirvPushMember::Kind::Float;
            if (mt.op == kOpTypeInt)
                p.kind = mt.operands.at(1) ? SpirvPushMember::Kind::Int : SpirvPushMember::Kind::Uint;
            out.push_back(p);
        }
    }
};
}  // namespace

uint64_t spirv_written_bindings(const uint32_t* words, size_t n_words) {
    std::map<uint32_t, uint32_t> binding, set, pointee, var_type, struct_members;
    std::set<uint32_t> non_writable;                   // ids decorated NonWritable
    std::map<uint32_t, std::set<uint32_t>> ro_members;  // struct id -> members decorated NonWritable
    for_each_instruction(words, n_words, [&](uint32_t op, const uint32_t* a, uint32_t n_operands) {
        const uint32_t count = n_operands + 1;
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
    });
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

SpirvPushBlock spirv_push_constants(const uint32_t* words, size_t n_words) {
    Types types;
    std::map<uint32_t, uint32_t> pointee;  // pointer type -> pointed-to type
    std::vector<uint32_t> push_pointers;   // types of the PushConstant variables
    for_each_instruction(words, n_words, [&](uint32_t op, const uint32_t* a, uint32_t n) {
        switch (op) {
            case kOpTypeInt: case kOpTypeFloat: case kOpTypeVector: case kOpTypeMatrix: case kOpTypeArray:
            case kOpTypeStruct:
                if (n >= 1) types.types[a[0]] = {op, std::vector<uint32_t>(a + 1, a + n)};
                break;
            case kOpTypePointer:
                if (n >= 3) pointee[a[0]] = a[2];
                break;
            case kOpConstant:
                if (n >= 3) types.constants[a[1]] = a[2];
                break;
            case kOpVariable:
                if (n >= 3 && a[2] == kStorageClassPushConstant) push_pointers.push_back(a[0]);
                break;
            case kOpDecorate:
                if (n >= 3 && a[1] == kDecorationArrayStride) types.array_stride[a[0]] = a[2];
                break;
            case kOpMemberDecorate:
                if (n >= 4 && a[2] == kDecorationOffset) types.member_offset[a[0]][a[1]] = a[3];
                if (n >= 4 && a[2] == kDecorationMatrixStride) types.member_matrix_stride[a[0]][a[1]] = a[3];
                break;
            default: break;
        }
    });
    SpirvPushBlock block;
    if (push_pointers.empty()) return block;
    if (push_pointers.size() > 1) throw std::runtime_error("SPIR-V declares more than one push-constant block");
    const auto p = pointee.find(push_pointers[0]);
    if (p == pointee.end() || types.at(p->second).op != kOpTypeStruct)
        throw std::runtime_error("SPIR-V push constants: the variable is not a pointer to a block");
    try {
        block.size = types.size(p->second);
        types.flatten(p->second, 0, block.members);
    } catch (const std::out_of_range&) {
        throw std::runtime_error("SPIR-V push constants: a type instruction has too few operands");
    }
    return block;
}

}  // namespace vkllm::gpu
