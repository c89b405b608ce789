// Weight formats the GPU decodes, and the dispatch planning shared by matmul and get_rows.
#include <algorithm>
#include <cstdlib>
#include <span>
#include <string>

#include "gguf/quant.h"
#include "ops/ops.h"
#include "ops/weight_ops.h"

namespace vkllm::ops {

namespace weights {

// The variants of weight type `t` (its name in shaders/variants.cmake): the identifiers are
// pasted together here, so a variant that variants.cmake does not list fails to compile.
#define VKLLM_SG(name) SubgroupPair{gpu::ShaderId::name, gpu::ShaderId::name##_sg}
#define VKLLM_MATVECS(t, idot)                                                                    \
    MatvecShaders{VKLLM_SG(matvec_##t##idot), VKLLM_SG(matvec_swiglu_##t##idot),                  \
                  VKLLM_SG(moe_matvec_##t##idot), VKLLM_SG(moe_matvec_swiglu_##t##idot)}
#define VKLLM_WEIGHT(t)                                                                           \
    WeightShaders{gpu::ShaderId::matmul_##t, gpu::ShaderId::get_rows_##t, gpu::ShaderId::moe_matmul_##t, \
                  VKLLM_MATVECS(t, ), std::nullopt, VKLLM_SG(matvec_rows_##t)}
#define VKLLM_WEIGHT_IDOT(t)                                                                      \
    WeightShaders{gpu::ShaderId::matmul_##t, gpu::ShaderId::get_rows_##t, gpu::ShaderId::moe_matmul_##t, \
                  VKLLM_MATVECS(t, ), VKLLM_MATVECS(t, _idot), VKLLM_SG(matvec_rows_##t)}

// The types shaders/include/dequant*.glsl decode (block sizes as ggml-common.h).
bool gpu_format(TensorType t, Format* f) {
    switch (t) {
        case TensorType::F32: *f = {1, 4, VKLLM_WEIGHT(f32)}; return true;
        case TensorType::F16: *f = {1, 2, VKLLM_WEIGHT(f16)}; return true;
        case TensorType::BF16: *f = {1, 2, VKLLM_WEIGHT(bf16)}; return true;
        case TensorType::Q8_0: *f = {32, 34, VKLLM_WEIGHT_IDOT(q8_0)}; return true;
        case TensorType::Q4_0: *f = {32, 18, VKLLM_WEIGHT_IDOT(q4_0)}; return true;
        case TensorType::Q4_1: *f = {32, 20, VKLLM_WEIGHT_IDOT(q4_1)}; return true;
        case TensorType::Q5_0: *f = {32, 22, VKLLM_WEIGHT_IDOT(q5_0)}; return true;
        case TensorType::Q5_1: *f = {32, 24, VKLLM_WEIGHT_IDOT(q5_1)}; return true;
        case TensorType::Q2_K: *f = {256, 84, VKLLM_WEIGHT(q2_k)}; return true;
        case TensorType::Q3_K: *f = {256, 110, VKLLM_WEIGHT(q3_k)}; return true;
        case TensorType::Q4_K: *f = {256, 144, VKLLM_WEIGHT(q4_k)}; return true;
        case TensorType::Q5_K: *f = {256, 176, VKLLM_WEIGHT(q5_k)}; return true;
        case TensorType::Q6_K: *f = {256, 210, VKLLM_WEIGHT(q6_k)}; return true;
        case TensorType::MXFP4: *f = {32, 17, VKLLM_WEIGHT(mxfp4)}; return true;
        case gguf::TensorType::IQ4_NL: *f = {32, 18, VKLLM_WEIGHT(iq4_nl)}; return true;
        case gguf::TensorType::IQ4_XS: *f = {256, 136, VKLLM_WEIGHT(iq4_xs)}; return true;
        case gguf::TensorType::TQ1_0: *f = {256, 54, VKLLM_WEIGHT(tq1_0)}; return true;
        case gguf::TensorType::TQ2_0: *f = {256, 66, VKLLM_WEIGHT(tq2_0)}; return true;
        case gguf::TensorType::IQ2_XXS: *f = {256, 66, VKLLM_WEIGHT(iq2_xxs), gguf::IqGridId::IQ2_XXS}; return true;
        case gguf::TensorType::IQ2_XS: *f = {256, 74, VKLLM_WEIGHT(iq2_xs), gguf::IqGridId::IQ2_XS}; return true;
        case gguf::TensorType::IQ2_S: *f = {256, 82, VKLLM_WEIGHT(iq2_s), gguf::IqGridId::IQ2_S}; return true;
        case gguf::TensorType::IQ3_XXS: *f = {256, 98, VKLLM_WEIGHT(iq3_xxs), gguf::IqGridId::IQ3_XXS}; return true;
        case gguf::TensorType::IQ3_S: *f = {256, 110, VKLLM_WEIGHT(iq3_s), gguf::IqGridId::IQ3_S}; return true;
        case gguf::TensorType::IQ1_S: *f = {256, 50, VKLLM_WEIGHT(iq1_s), gguf::IqGridId::IQ1_S}; return true;
        case gguf::TensorType::IQ1_M: *f = {256, 56, VKLLM_WEIGHT(iq1_m), gguf::IqGridId::IQ1_S}; return true;
        default: return false;
    }
}

#define VKLLM_XQ(t) XqMatvecShaders{VKLLM_MATVECS(t, _xq), std::nullopt}
#define VKLLM_XQ_IDOT(t) XqMatvecShaders{VKLLM_MATVECS(t, _xq), VKLLM_MATVECS(t, _idot_xq)}

bool xq_matvec_shaders(TensorType t, XqMatvecShaders* out) {
    switch (t) {
        case TensorType::Q8_0: *out = VKLLM_XQ_IDOT(q8_0); return true;
        case TensorType::Q4_0: *out = VKLLM_XQ_IDOT(q4_0); return true;
        case TensorType::Q4_1: *out = VKLLM_XQ_IDOT(q4_1); return true;
        case TensorType::Q5_0: *out = VKLLM_XQ_IDOT(q5_0); return true;
        case TensorType::Q5_1: *out = VKLLM_XQ_IDOT(q5_1); return true;
        case TensorType::MXFP4: *out = VKLLM_XQ(mxfp4); return true;
        case TensorType::IQ4_NL: *out = VKLLM_XQ(iq4_nl); return true;
        case TensorType::Q2_K: *out = VKLLM_XQ_IDOT(q2_k); return true;
        case TensorType::Q3_K: *out = VKLLM_XQ_IDOT(q3_k); return true;
        case TensorType::Q4_K: *out = VKLLM_XQ_IDOT(q4_k); return true;
        case TensorType::Q5_K: *out = VKLLM_XQ_IDOT(q5_k); return true;
        case TensorType::Q6_K: *out = VKLLM_XQ_IDOT(q6_k); return true;
        case TensorType::IQ4_XS: *out = VKLLM_XQ(iq4_xs); return true;
        default: return false;
    }
}

#undef VKLLM_XQ_IDOT
#undef VKLLM_XQ
#undef VKLLM_WEIGHT_IDOT
#undef VKLLM_WEIGHT
#undef VKLLM_MATVECS
#undef VKLLM_SG

namespace {

std::string type_name(TensorType t) {
    auto tr = gguf::type_traits(t);
    return tr ? std::string(tr->name) : "type " + std::to_string(static_cast<uint32_t>(t));
}

// A positive integer from the environment, or `fallback` when unset. Throws for garbage.
uint64_t env_limit(const char* name, uint64_t fallback) {
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    const unsigned long long n = std::strtoull(v, &end, 10);
    if (*end != '\0' || n == 0)
        throw ShapeError(std::string(name) + "='" + v + "' is not a positive integer");
    return std::min<uint64_t>(n, fallback);
}

uint64_t round_up(uint64_t v, uint64_t m) { return (v + m - 1) / m * m; }

// " F32 F16 ...": the names of the types gpu_format takes, in GGUF's numbering.
std::string supported_types() {
    std::string names;
    Format f;
    for (uint32_t t = 0; t < 64; ++t)
        if (gpu_format(TensorType(t), &f)) names += " " + type_name(TensorType(t));
    return names;
}

}  // namespace

void require(bool ok, const char* op, const std::string& message) {
    if (!ok) throw ShapeError(std::string(op) + ": " + message);
}

Layout checked_layout(const Weight& w, const char* op) {
    Layout l;
    require(gpu_format(w.type, &l.format), op,
            "the GPU cannot decode " + type_name(w.type) +
                " weights (supported:" + supported_types() + ")");
    require(w.n_in > 0 && w.n_out > 0, op,
            "weight dims {" + std::to_string(w.n_in) + ", " + std::to_string(w.n_out) + "} must be positive");
    require(w.n_in % l.format.block_elems == 0, op,
            "row length " + std::to_string(w.n_in) + " is not a multiple of the " + type_name(w.type) +
                " block size " + std::to_string(l.format.block_elems));
    require(w.n_in < (int64_t(1) << 30), op, "row length " + std::to_string(w.n_in) + " is too long");
    require(w.buffer && w.buffer->valid(), op, "weight buffer is not allocated");
    require(w.offset % 4 == 0, op, "weight offset " + std::to_string(w.offset) + " is not a multiple of 4");
    if (w.grouped) {
        require(can_group_blocks(w.type, w.n_in), op,
                "grouped blocks are for Q4_0 and Q8_0 rows of a multiple of 256 elements and Q6_K rows of a "
                "multiple of 2048, not " + type_name(w.type) + " rows of " + std::to_string(w.n_in));
        require(w.offset % 16 == 0, op,
                "a weight with grouped blocks starts on a 16-byte boundary, not at offset " + std::to_string(w.offset));
    }
    l.grouped = w.grouped;
    l.aligned16 = w.grouped || ((w.type == TensorType::Q4_K || w.type == TensorType::Q5_K) && w.offset % 16 == 0);
    l.row_bytes = uint64_t(w.n_in) / l.format.block_elems * l.format.block_bytes;
    l.total_bytes = l.row_bytes * uint64_t(w.n_out);
    const uint64_t needed = weight_buffer_bytes(w.type, w.n_in, w.n_out);
    require(w.buffer->size() >= w.offset && w.buffer->size() - w.offset >= needed, op,
            "weight buffer holds " + std::to_string(w.buffer->size()) + " bytes (the weight at offset " +
                std::to_string(w.offset) + "); " + std::to_string(w.n_out) +
                " rows of " + std::to_string(w.n_in) + " " + type_name(w.type) + " elements need " +
                std::to_string(needed) + " (ops::weight_buffer_bytes: shaders read whole 32-bit words)");
    return l;
}

Limits limits(const gpu::Capabilities& caps) {
    Limits lim;
    // Byte addresses inside a binding are 32-bit in the shaders.
    lim.max_binding = env_limit("VKLLM_MAX_BINDING_BYTES", std::min<uint64_t>(caps.max_storage_buffer_range, 0xFFFFFFF0u));
    lim.align = std::max<uint64_t>(caps.min_storage_buffer_offset_alignment, 4);
    for (int i = 0; i < 3; ++i)
        lim.max_groups[i] = uint32_t(env_limit("VKLLM_MAX_WORKGROUP_COUNT", caps.max_workgroup_count[i]));
    require(lim.max_binding >= 2 * lim.align + 16, "weight ops",
            "the binding limit of " + std::to_string(lim.max_binding) + " bytes is too small to be usable");
    return lim;
}

Window window(const Buffer& b, uint64_t begin, uint64_t end, const Limits& lim, const char* op, const char* what) {
    require(end <= b.size(), op,
            std::string(what) + " needs bytes [" + std::to_string(begin) + ", " + std::to_string(end) +
                ") but its buffer holds " + std::to_string(b.size()));
    const uint64_t start = begin / lim.align * lim.align;
    const uint64_t stop = std::min(round_up(std::max(end, begin + 1), 4), b.size());
    require(stop - start <= lim.max_binding, op,
            std::string(what) + " spans " + std::to_string(stop - start) +
                " bytes, more than one binding may (" + std::to_string(lim.max_binding) + ")");
    Window w;
    w.range = gpu::BufferRange(b, start, stop - start);
    w.shift = uint32_t(begin - start);
    return w;
}

namespace {

// The grid as the shaders read it: coordinate j of point i is byte i * dim + j (int8 as a byte).
const gpu::Buffer& grid_buffer(gpu::Context& ctx, gguf::IqGridId id) {
    const gguf::IqGrid& g = gguf::iq_grid(id);
    const auto* bytes = reinterpret_cast<const uint8_t*>(g.values);
    return ctx.constant_buffer(std::string("iq_grid.") + g.name,
                               std::span<const uint8_t>(bytes, size_t(g.points) * g.dim));
}

}  // namespace

void dispatch(Stream& s, const gpu::Pipeline& p, const Format& f, std::initializer_list<gpu::BufferRange> buffers,
              const void* push, uint32_t push_bytes, uint32_t gx, uint32_t gy) {
    if (!f.grid) {
        s.dispatch(p, buffers, push, push_bytes, gx, gy);
        return;
    }
    constexpr size_t kMax = 8;
    require(buffers.size() < kMax, "weight ops", "too many bindings");
    gpu::BufferRange all[kMax];
    std::copy(buffers.begin(), buffers.end(), all);
    all[buffers.size()] = gpu::BufferRange(grid_buffer(s.context(), *f.grid));
    s.dispatch_bindings(p, std::span<const gpu::BufferRange>(all, buffers.size() + 1), push, push_bytes, gx, gy);
}

}  // namespace weights

bool gpu_supports(TensorType t) {
    weights::Format f;
    return weights::gpu_format(t, &f);
}

uint64_t weight_buffer_bytes(TensorType t, int64_t n_in, int64_t n_out) {
    weights::Format f;
    if (!weights::gpu_format(t, &f))
        throw ShapeError("weight_buffer_bytes: the GPU cannot decode " + weights::type_name(t) + " weights");
    if (n_in <= 0 || n_out < 0 || n_in % f.block_elems)
        throw ShapeError("weight_buffer_bytes: bad weight dims {" + std::to_string(n_in) + ", " +
                         std::to_string(n_out) + "} for " + weights::type_name(t));
    return weights::round_up(uint64_t(n_in) / f.block_elems * f.block_bytes * uint64_t(n_out), 4);
}

}  // namespace vkllm::ops
