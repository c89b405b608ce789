// Shader variants as identifiers: every variant's SPIR-V push-constant block against the C++
// struct of its source (ops/push_constants.h), the typed variant choices of the weight ops against
// the names the variants are built under (shaders/variants.cmake), the name lookups, and the
// pipeline's own check of the push-constant size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "gguf/gguf.h"
#include "gpu/device.h"
#include "gpu/pipeline.h"
#include "gpu/shaders.h"
#include "gpu/spirv_bindings.h"
#include "gpu_test.h"
#include "ops/push_constants.h"
#include "ops/weight_ops.h"

namespace vkllm {
namespace {

using gguf::TensorType;
using Kind = gpu::SpirvPushMember::Kind;

// --- The C++ side: an aggregate's scalars in order, nested aggregates flattened ---------------

// Converts to any member type: T{Any{}, ...} compiles for up to as many initialisers as T has
// members (a nested aggregate takes one, converted whole).
struct Any {
    template <class U> operator U() const;
};

template <class T, class... A> constexpr size_t member_count() {
    if constexpr (requires { T{A{}..., Any{}}; })
        return member_count<T, A..., Any>();
    else
        return sizeof...(A);
}

template <class T> constexpr Kind scalar_kind() {
    if constexpr (std::is_same_v<T, uint32_t>)
        return Kind::Uint;
    else if constexpr (std::is_same_v<T, int32_t>)
        return Kind::Int;
    else if constexpr (std::is_same_v<T, float>)
        return Kind::Float;
    else
        static_assert(sizeof(T) == 0, "push constants hold 32-bit uint, int and float members only");
}

void flatten(const auto& value, const char* base, std::vector<gpu::SpirvPushMember>& out);

template <class... M> void flatten_members(const char* base, std::vector<gpu::SpirvPushMember>& out, const M&... m) {
    (flatten(m, base, out), ...);
}

// Calls flatten_members with the members of an aggregate (structured bindings, up to 24).
template <class T> void flatten_aggregate(const T& v, const char* base, std::vector<gpu::SpirvPushMember>& out) {
    constexpr size_t n = member_count<T>();
    static_assert(n >= 1 && n <= 24, "a push-constant struct of 1 to 24 top-level members");
#define VKLLM_BIND(count, ...)                   \
    if constexpr (n == count) {                  \
        const auto& [__VA_ARGS__] = v;           \
        flatten_members(base, out, __VA_ARGS__); \
    }
    VKLLM_BIND(1, a)
    VKLLM_BIND(2, a, b)
    VKLLM_BIND(3, a, b, c)
    VKLLM_BIND(4, a, b, c, d)
    VKLLM_BIND(5, a, b, c, d, e)
    VKLLM_BIND(6, a, b, c, d, e, f)
    VKLLM_BIND(7, a, b, c, d, e, f, g)
    VKLLM_BIND(8, a, b, c, d, e, f, g, h)
    VKLLM_BIND(9, a, b, c, d, e, f, g, h, i)
    VKLLM_BIND(10, a, b, c, d, e, f, g, h, i, j)
    VKLLM_BIND(11, a, b, c, d, e, f, g, h, i, j, k)
    VKLLM_BIND(12, a, b, c, d, e, f, g, h, i, j, k, l)
    VKLLM_BIND(13, a, b, c, d, e, f, g, h, i, j, k, l, m)
    VKLLM_BIND(14, a, b, c, d, e, f, g, h, i, j, k, l, m, n2)
    VKLLM_BIND(15, a, b, c, d, e, f, g, h, i, j, k, l, m, n2, o)
    VKLLM_BIND(16, a, b, c, d, e, f, g, h, i, j, k, l, m, n2, o, p)
    VKLLM_BIND(17, a, b, c, d, e, f, g, h, i, j, k, l, m, n2, o, p, q)
    VKLLM_BIND(18, a, b, c, d, e, f, g, h, i, j, k, l, m, n2, o, p, q, r)
    VKLLM_BIND(19, a, b, c, d, e, f, g, h, i, j, k, l, m, n2, o, p, q, r, s)
    VKLLM_BIND(20, a, b, c, d, e, f, g, h, i, j, k, l, m, n2, o, p, q, r, s, t)
    VKLLM_BIND(21, a, b, c, d, e, f, g, h, i, j, k, l, m, n2, o, p, q, r, s, t, u)
    VKLLM_BIND(22, a, b, c, d, e, f, g, h, i, j, k, l, m, n2, o, p, q, r, s, t, u, v2)
    VKLLM_BIND(23, a, b, c, d, e, f, g, h, i, j, k, l, m, n2, o, p, q, r, s, t, u, v2, w)
    VKLLM_BIND(24, a, b, c, d, e, f, g, h, i, j, k, l, m, n2, o, p, q, r, s, t, u, v2, w, x)
#undef VKLLM_BIND
}

void flatten(const auto& value, const char* base, std::vector<gpu::SpirvPushMember>& out) {
    using T = std::remove_cvref_t<decltype(value)>;
    if constexpr (std::is_aggregate_v<T>) {
        flatten_aggregate(value, base, out);
    } else {
        gpu::SpirvPushMember m;
        m.offset = uint32_t(reinterpret_cast<const char*>(&value) - base);
        m.size = sizeof(T);
        m.kind = scalar_kind<T>();
        out.push_back(m);
    }
}

// The layout of push struct T as SpirvPushBlock describes a block.
template <class T> gpu::SpirvPushBlock cpp_layout() {
    static_assert(std::is_aggregate_v<T> && std::is_trivially_copyable_v<T>);
    const T value{};
    gpu::SpirvPushBlock block;
    block.size = sizeof(T);
    flatten_aggregate(value, reinterpret_cast<const char*>(&value), block.members);
    return block;
}

// Every source's layout, indexed by ShaderSource; a source without PushOf does not compile.
std::vector<gpu::SpirvPushBlock> cpp_layouts() {
    return [&]<size_t... S>(std::index_sequence<S...>) {
        return std::vector<gpu::SpirvPushBlock>{
            cpp_layout<typename ops::PushOf<static_cast<gpu::ShaderSource>(S)>::type>()...};
    }(std::make_index_sequence<gpu::kShaderSourceCount>{});
}

const char* kind_name(Kind k) {
    switch (k) {
        case Kind::Uint: return "uint";
        case Kind::Int: return "int";
        case Kind::Float: return "float";
        default: return "other";
    }
}

std::string describe(const gpu::SpirvPushBlock& b) {
    std::string s = std::to_string(b.size) + " bytes:";
    for (const auto& m : b.members) s += " " + std::string(kind_name(m.kind)) + "@" + std::to_string(m.offset);
    return s;
}

gpu::SpirvPushBlock spirv_layout(gpu::ShaderId id) {
    const gpu::EmbeddedShader& spv = gpu::embedded_shader(id);
    return gpu::spirv_push_constants(spv.code, spv.size / 4);
}

// "" when the blocks agree in size and, member for member, in offset, size and scalar type;
// otherwise both layouts.
std::string mismatch(const gpu::SpirvPushBlock& spirv, const gpu::SpirvPushBlock& cpp) {
    bool same = spirv.size == cpp.size && spirv.members.size() == cpp.members.size();
    for (size_t m = 0; same && m < spirv.members.size(); ++m)
        same = spirv.members[m].offset == cpp.members[m].offset && spirv.members[m].size == cpp.members[m].size &&
               spirv.members[m].kind == cpp.members[m].kind;
    return same ? "" : "SPIR-V " + describe(spirv) + "\nC++    " + describe(cpp);
}

// Every variant of every source: the SPIR-V block has the C++ struct's size and, member for
// member, its offsets, sizes and scalar types.
TEST(ShaderVariants, EveryPushConstantBlockMatchesItsCppStruct) {
    const std::vector<gpu::SpirvPushBlock> cpp = cpp_layouts();
    for (size_t i = 0; i < gpu::kShaderCount; ++i) {
        const auto id = static_cast<gpu::ShaderId>(i);
        const gpu::ShaderSource source = gpu::shader_source(id);
        EXPECT_EQ(mismatch(spirv_layout(id), cpp[static_cast<size_t>(source)]), "")
            << gpu::shader_name(id) << " (" << gpu::source_file(source) << ")";
    }
}

// The comparison sees a member of the wrong type, a missing member and a reordered one.
TEST(ShaderVariants, PushConstantMismatchesAreSeen) {
    struct Swapped {  // fill_test.comp has uint n, float scale
        float n;
        uint32_t scale;
    };
    struct Longer {
        uint32_t n;
        float scale;
        uint32_t extra;
    };
    struct Shorter {
        uint32_t n;
    };
    const gpu::SpirvPushBlock fill = spirv_layout(gpu::ShaderId::fill_test);
    EXPECT_EQ(mismatch(fill, cpp_layout<ops::FillTestPush>()), "");
    EXPECT_NE(mismatch(fill, cpp_layout<Swapped>()), "");
    EXPECT_NE(mismatch(fill, cpp_layout<Longer>()), "");
    EXPECT_NE(mismatch(fill, cpp_layout<Shorter>()), "");
    EXPECT_NE(mismatch(spirv_layout(gpu::ShaderId::matvec_f32), cpp_layout<ops::MatmulPush>()), "");
}

// The C++ reflection itself: a nested struct's members take their place in order.
TEST(ShaderVariants, CppLayoutFlattensNestedStructs) {
    const gpu::SpirvPushBlock rope = cpp_layout<ops::RopePush>();
    EXPECT_EQ(rope.size, 19u * 4);
    ASSERT_EQ(rope.members.size(), 19u);
    EXPECT_EQ(rope.members[8].kind, Kind::Uint);    // angle.flags
    EXPECT_EQ(rope.members[9].kind, Kind::Float);   // angle.log2_base
    EXPECT_EQ(rope.members[16].offset, 16u * 4);    // slots
    const gpu::SpirvPushBlock attention = cpp_layout<ops::AttentionPush>();
    EXPECT_EQ(attention.members[10].kind, Kind::Int);  // window
}

// A block the reader cannot take apart is an error, not a guess; no block is size 0.
TEST(ShaderVariants, SpirvPushReaderRejectsMalformedInput) {
    const uint32_t not_spirv[6] = {1, 2, 3, 4, 5, 6};
    EXPECT_THROW(gpu::spirv_push_constants(not_spirv, 6), std::runtime_error);
    const uint32_t header_only[5] = {0x07230203, 0x00010500, 0, 1, 0};
    EXPECT_EQ(gpu::spirv_push_constants(header_only, 5).size, 0u);
    EXPECT_TRUE(gpu::spirv_push_constants(header_only, 5).members.empty());
}

// Names: each identifier has its variant's name, the registry is indexed by identifier, and
// the name lookup finds each one.
TEST(ShaderVariants, IdentifiersNamesAndRegistryAgree) {
    for (size_t i = 0; i < gpu::kShaderCount; ++i) {
        const auto id = static_cast<gpu::ShaderId>(i);
        const gpu::EmbeddedShader& spv = gpu::embedded_shader(id);
        EXPECT_STREQ(spv.name, gpu::shader_name(id));
        EXPECT_GT(spv.size, 20u);
        EXPECT_EQ(gpu::find_shader_id(gpu::shader_name(id)), id);
        EXPECT_EQ(gpu::find_shader(gpu::shader_name(id)), &spv);
    }
    static_assert(gpu::shader_name(gpu::ShaderId::matvec_q4_0_idot_sg) == std::string_view("matvec_q4_0_idot_sg"));
    static_assert(gpu::shader_source(gpu::ShaderId::moe_matvec_swiglu_q6_k) == gpu::ShaderSource::moe_matvec);
    EXPECT_STREQ(gpu::source_file(gpu::ShaderSource::rope_qkv), "rope_qkv.comp");
    EXPECT_FALSE(gpu::find_shader_id("no_such_shader"));
    EXPECT_EQ(gpu::find_shader("no_such_shader"), nullptr);
}

// The weight ops' typed choice gives the variant that the name scheme of shaders/variants.cmake
// names (<op>_<type>[_idot][_sg]) for every type, op and capability: the ops pick the same
// variants as when they assembled names.
TEST(ShaderVariants, WeightTypesChooseTheirVariants) {
    const char* prefixes[ops::weights::kMatvecOps] = {"matvec_", "matvec_swiglu_", "moe_matvec_", "moe_matvec_swiglu_"};
    const gpu::ShaderSource sources[ops::weights::kMatvecOps] = {gpu::ShaderSource::matvec, gpu::ShaderSource::matvec,
                                                                  gpu::ShaderSource::moe_matvec,
                                                                  gpu::ShaderSource::moe_matvec};
    int types = 0;
    for (uint32_t t = 0; t < 64; ++t) {
        const auto type = static_cast<TensorType>(t);
        ops::weights::Format f;
        if (!ops::weights::gpu_format(type, &f)) continue;
        ++types;
        std::string suffix = gguf::type_traits(type)->name;
        std::transform(suffix.begin(), suffix.end(), suffix.begin(), [](unsigned char c) { return std::tolower(c); });
        SCOPED_TRACE(suffix);
        EXPECT_EQ(gpu::shader_name(f.shaders.matmul), "matmul_" + suffix);
        EXPECT_EQ(gpu::shader_name(f.shaders.get_rows), "get_rows_" + suffix);
        EXPECT_EQ(gpu::shader_name(f.shaders.moe_matmul), "moe_matmul_" + suffix);
        const bool int8_blocks = type == TensorType::Q8_0 || type == TensorType::Q4_0 || type == TensorType::Q4_1 ||
                                 type == TensorType::Q5_0 || type == TensorType::Q5_1;
        EXPECT_EQ(f.shaders.idot.has_value(), int8_blocks);
        for (size_t op = 0; op < ops::weights::kMatvecOps; ++op)
            for (int bits = 0; bits < 8; ++bits) {
                gpu::Capabilities caps;
                caps.subgroup_arithmetic = bits & 1;
                caps.integer_dot_matvec = bits & 2;
                const bool round_x = bits & 4;
                const bool idot = round_x && caps.integer_dot_matvec && int8_blocks;
                const std::string want = prefixes[op] + suffix + (idot ? "_idot" : "") +
                                         (caps.subgroup_arithmetic ? "_sg" : "");
                const gpu::ShaderId id =
                    ops::weights::matvec_shader(caps, static_cast<ops::weights::MatvecOp>(op), type, round_x);
                EXPECT_EQ(gpu::shader_name(id), want);
                EXPECT_EQ(gpu::shader_source(id), sources[op]);
                EXPECT_EQ(ops::weights::matvec_variant(caps, prefixes[op], type, round_x), want);
            }
    }
    // Every weight type with a get_rows variant (the types of VKLLM_WEIGHT_TYPES) is in the table.
    int get_rows_variants = 0;
    for (size_t i = 0; i < gpu::kShaderCount; ++i)
        if (std::string_view(gpu::shader_name(static_cast<gpu::ShaderId>(i))).starts_with("get_rows_")) ++get_rows_variants;
    EXPECT_EQ(types, get_rows_variants);
    EXPECT_GE(types, 18);
    const gpu::Capabilities caps;
    EXPECT_THROW(ops::weights::matvec_variant(caps, "matmul_", TensorType::F32, false), std::logic_error);
    EXPECT_THROW(ops::weights::matvec_shader(caps, ops::weights::MatvecOp::Matvec, TensorType::Q8_K, false),
                 ops::ShapeError);
}

using test::GpuTest;

// Pipeline creation compares the push-constant bytes it is given with the shader's block
// (fill_test.comp declares a uint and a float): a wrong size is a logic_error naming both.
TEST_F(GpuTest, PipelineRejectsAPushSizeItsShaderDoesNotDeclare) {
    static_assert(sizeof(ops::FillTestPush) == 8);
    try {
        ctx().pipeline(gpu::ShaderId::fill_test, 2, 12, {16});
        FAIL() << "expected a logic_error";
    } catch (const std::logic_error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find("fill_test"), std::string::npos) << what;
        EXPECT_NE(what.find("declares 8 bytes"), std::string::npos) << what;
        EXPECT_NE(what.find("12"), std::string::npos) << what;
    }
    EXPECT_THROW(ctx().pipeline("fill_test", 2, 4, {16}), std::logic_error);
    EXPECT_THROW(ctx().pipeline(gpu::ShaderId::matvec_q8_0, 4, sizeof(ops::MatmulPush), {32, 2, 0}), std::logic_error);
    // The right size creates it, by identifier or by name (one pipeline: the key is the name).
    const gpu::Pipeline& by_id = ctx().pipeline(gpu::ShaderId::fill_test, 2, sizeof(ops::FillTestPush), {16});
    EXPECT_EQ(&ctx().pipeline("fill_test", 2, sizeof(ops::FillTestPush), {16}), &by_id);
    EXPECT_EQ(by_id.name(), "fill_test");
}

}  // namespace
}  // namespace vkllm
