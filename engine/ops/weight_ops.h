// Internal to the weight ops (matmul.cpp, get_rows.cpp, weights.cpp): weight formats the shaders
// decode, the limits the ops plan their dispatches against, and binding windows.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>

#include "gguf/iq_grids.h"
#include "gpu/buffer.h"
#include "gpu/device.h"
#include "gpu/shaders.h"
#include "gpu/stream.h"
#include "ops/ops.h"

namespace vkllm::ops::weights {

// The decode matvecs (matvec.comp, moe_matvec.comp): one weight, the fused gate/up pair with its
// GLU, and the experts' versions of both.
enum class MatvecOp : uint8_t { Matvec, MatvecSwiglu, MoeMatvec, MoeMatvecSwiglu };
inline constexpr size_t kMatvecOps = 4;

using gpu::SubgroupPair;
using MatvecShaders = std::array<SubgroupPair, kMatvecOps>;  // indexed by MatvecOp

// The shader variants of one weight type (the per-type loops of shaders/variants.cmake).
struct WeightShaders {
    gpu::ShaderId matmul{}, get_rows{}, moe_matmul{};
    MatvecShaders matvec{};
    // The _idot matvecs (x rounded to 8-bit blocks of 32, dotted in integers): Q8_0, Q4_0/1, Q5_0/1.
    std::optional<MatvecShaders> idot;
    SubgroupPair matvec_rows{};  // matvec_rows.comp: a few tokens, each weight decoded once for all
};

// How the shaders see one weight type (shaders/include/dequant*.glsl).
struct Format {
    uint32_t block_elems = 1;  // elements per ggml block (1 for float types: any row length)
    uint32_t block_bytes = 4;
    WeightShaders shaders;
    // The grid i-quants: the codebook their variants read from one binding after the op's own
    // (shaders/include/dequant_iq_grid.glsl), which no other type's variants declare.
    std::optional<gguf::IqGridId> grid;

    // Bindings of a pipeline of this type for an op of `own` bindings.
    uint32_t bindings(uint32_t own) const { return own + (grid ? 1u : 0u); }
};

// False for a type the shaders do not decode.
bool gpu_format(TensorType t, Format* f);

// The checked layout of a weight: format, bytes per row, total bytes read. Throws ShapeError
// naming `op` for an unsupported type, a row length that is not a whole number of blocks, a
// missing buffer or one too small for the rows (rounded up to whole 32-bit words).
struct Layout {
    Format format;
    uint64_t row_bytes = 0;
    uint64_t total_bytes = 0;
    bool grouped = false;  // Weight::grouped (checked: a type and row length that have it, 16-byte aligned)
    // The rows in their 16-byte-aligned layout (shaders/include/dequant.glsl): grouped blocks, or
    // Q4_K/Q5_K blocks (16-byte multiples) from a 16-byte boundary. Ops that bind several weights
    // in one dispatch keep it only where every one of them has it (and_aligned).
    bool aligned16 = false;
    // The shaders' W_ALIGNED specialization constant, which follows each weight shader's own.
    uint32_t aligned_spec() const { return aligned16 ? 1u : 0u; }
    void and_aligned(const Layout& other) { aligned16 = aligned16 && other.aligned16; }
};
Layout checked_layout(const Weight& w, const char* op);

// The limits dispatches are planned against: the device's (possibly VKLLM_LIMITS-clamped)
// capabilities, optionally narrowed further for tests by the environment:
//   VKLLM_MAX_BINDING_BYTES=<n>     largest binding in bytes (splits weights into row windows)
//   VKLLM_MAX_WORKGROUP_COUNT=<n>   largest workgroup count per grid dimension
struct Limits {
    uint64_t max_binding = 0;  // bytes, also capped below 4 GiB so byte addresses fit a uint
    uint64_t align = 4;        // binding offset alignment (>= 4)
    uint32_t max_groups[3] = {1, 1, 1};
};
Limits limits(const gpu::Capabilities& caps);

// A binding window over bytes [begin, end) of `b`: the binding starts at the aligned offset at
// or below `begin`; `shift` is begin's byte offset inside it. The end is rounded up to a whole
// word (within the buffer). Throws ShapeError naming `op`/`what` when the window exceeds the limit.
struct Window {
    gpu::BufferRange range;
    uint32_t shift = 0;  // bytes
};
Window window(const Buffer& b, uint64_t begin, uint64_t end, const Limits& lim, const char* op, const char* what);

// Threads and rows per workgroup of the decode matvecs (matvec.comp, moe_matvec.comp) for rows
// of `units` 32-element units (defined in matmul.cpp, where the reasons are written).
struct MatvecShape {
    uint32_t threads = 0, rows = 0;
};
// glu: the fused SwiGLU variants, which dot two rows (gate and up) per output. large_int8: a
// plain matvec over at least 4096 x 4096 weights of a type with 8-bit-activation blocks
// (large_int8_matvec).
// float16: F16 or BF16 weights (their 16-byte octet loads take 4 rows on a GPU).
MatvecShape matvec_shape(const gpu::Capabilities& caps, uint64_t units, bool glu = false, bool large_int8 = false,
                         bool float16 = false);
// The decode matvecs' MV_ROLLED specialization constant: 1 on CPU drivers (matmul.cpp says why).
uint32_t matvec_rolled(const gpu::Capabilities& caps);
// The decode matvec's MV_TRIP specialization constant: units per thread per loop trip (matmul.cpp).
uint32_t matvec_trip(const gpu::Capabilities& caps);
// Q8_0, Q4_0/1 or Q5_0/1 weights (blocks of 32 with one scale) of n_out x n_in >= 4096 x 4096.
bool large_int8_matvec(TensorType t, uint64_t n_in, uint64_t n_out);

// The decode matvec variant for a weight type: the _idot one where x is rounded to 8-bit blocks
// of 32 (round_x), the type has one and the context dots those in int8
// (Capabilities::integer_dot_matvec), the _sg one with subgroup arithmetic. Throws ShapeError for
// a type the GPU does not decode.
gpu::ShaderId matvec_shader(const gpu::Capabilities& caps, MatvecOp op, TensorType t, bool round_x);
// The same variant's name, for an op named by its variant prefix ("matvec_", "matvec_swiglu_",
// "moe_matvec_", "moe_matvec_swiglu_"; std::logic_error for another).
std::string matvec_variant(const gpu::Capabilities& caps, const char* op_prefix, TensorType t, bool round_x);

// The decode matvecs reading x quantized beforehand (ops::matvec_quantized,
// moe_matvec_quantized; the XQ variants of shaders/variants_matvec_xq.cmake): every MatvecOp,
// with their int8-dot twins for the types that have them (Q8_0, Q4_0/1, Q5_0/1; Q2_K..Q6_K
// against blocks of 256).
struct XqMatvecShaders {
    MatvecShaders xq{};
    std::optional<MatvecShaders> idot;
};
// False for a type without them (ops::matvec_reads_quantized).
bool xq_matvec_shaders(TensorType t, XqMatvecShaders* out);

// Records a weight op's dispatch: `buffers` (the op's own bindings), then the format's grid when
// it has one (uploaded once per context, Context::constant_buffer).
void dispatch(Stream& s, const gpu::Pipeline& p, const Format& f, std::initializer_list<gpu::BufferRange> buffers,
              const void* push, uint32_t push_bytes, uint32_t gx, uint32_t gy = 1);
template <class Push>
void dispatch(Stream& s, const gpu::Pipeline& p, const Format& f, std::initializer_list<gpu::BufferRange> buffers,
              const Push& push, uint32_t gx, uint32_t gy = 1) {
    dispatch(s, p, f, buffers, &push, sizeof(Push), gx, gy);
}

// Throws ShapeError("<op>: <message>") unless `ok`.
void require(bool ok, const char* op, const std::string& message);

}  // namespace vkllm::ops::weights
