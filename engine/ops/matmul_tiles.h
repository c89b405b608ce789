// Tile shapes of the prompt matmul (shaders/matmul.comp): the scalar kernel's, chosen for the
// matrix and prompt at hand and the device, and the tensor-core kernel's (COOPMAT variants on
// NVIDIA's cooperative matrices) where the device and the build have them.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gpu/device.h"
#include "gpu/shaders.h"
#include "ops/weight_ops.h"

namespace vkllm::ops {

// The scalar kernel: BM weight rows x BN tokens per workgroup, BK elements of K per step, TM x TN
// outputs per thread (multiples of 4: the shader reads shared memory as vec4).
struct MatmulTiles {
    uint32_t bm, bn, bk, tm, tn;
    uint32_t prefetch = 0;  // 1: the next step's slices read during this one's product (matmul_prefetch)
    uint32_t threads() const { return (bm / tm) * (bn / tn); }
    uint32_t shared_bytes() const { return 4 * bk * (bm + bn); }
    // matmul_tile.glsl's specialization constants 0..6.
    std::vector<uint32_t> spec() const { return {threads(), bm, bn, bk, tm, tn, prefetch}; }
};

// Whether the prompt matmuls read each step's slices during the previous step's product
// (matmul_tile.glsl's PREFETCH, register double buffering): on GPUs, where it hides the loads'
// latency; not on a CPU driver, where a workgroup's loads and arithmetic are the same core's
// work anyway (lavapipe, zoo-facts and zoo-moe pp512: within noise either way). VKLLM_MATMUL_PREFETCH=0|1
// forces it either way. 1 or 0, as the specialization constant takes it.
uint32_t matmul_prefetch(const gpu::Capabilities& caps);

// Whether a grid of n_rows x n_columns in tiles of bm x bn would leave a GPU's compute units idle
// (fewer than about two workgroups per unit of a large GPU); false on a CPU driver and under the
// mobile clamp, which keep the largest tile. The tile choices step down while it holds.
bool grid_leaves_units_idle(const gpu::Capabilities& caps, uint64_t n_rows, uint64_t n_columns, uint32_t bm,
                            uint32_t bn);

// The scalar tile for an n_rows x n_in matrix times n_tokens tokens (pick_matmul_tiles in
// matmul_tiles.cpp says how).
MatmulTiles pick_matmul_tiles(const gpu::Capabilities& caps, uint64_t n_rows, uint64_t n_tokens);

// The tensor-core kernel: BM x BN per workgroup, BK of K per step; each subgroup computes WM rows
// x WN tokens with shape.m x shape.n x shape.k cooperative matrices.
struct CoopmatTiles {
    uint32_t bm = 0, bn = 0, bk = 0, wm = 0, wn = 0;
    CooperativeMatrixShape shape;
    uint32_t subgroup = 0;  // the device's subgroup size
    uint32_t prefetch = 0;  // as MatmulTiles::prefetch
    uint32_t subgroups() const { return (bm / wm) * (bn / wn); }
    uint32_t threads() const { return subgroups() * subgroup; }
    // fp16 W and X slices with rows padded by 8 halves, and an fp32 staging tile per subgroup.
    uint32_t shared_bytes() const { return 2 * (bm + bn) * (bk + 8) + 4 * subgroups() * shape.m * shape.n; }
    // matmul_tile.glsl's COOPMAT specialization constants 0..9.
    std::vector<uint32_t> spec() const { return {threads(), bm, bn, bk, wm, wn, shape.m, shape.n, shape.k, prefetch}; }
};

// A kernel's tile constants followed by the weight layout's W_ALIGNED (dequant.glsl), which each
// matmul shader declares right after its tile constants.
inline std::vector<uint32_t> with_grouped(std::vector<uint32_t> spec, const weights::Layout& layout) {
    spec.push_back(layout.aligned_spec());
    return spec;
}

struct CoopmatPlan {
    gpu::ShaderId shader;
    CoopmatTiles tiles;
};

// The tensor-core matmul for weights of `format` over n_rows x n_tokens, or nullopt when the
// device has no NV cooperative matrices (cooperative_matrix_nv), VKLLM_COOPMAT=0 turns them off,
// the build left the variants out (cmake/CoopmatProbe.cmake), or no tile fits the device.
std::optional<CoopmatPlan> coopmat_plan(const gpu::Capabilities& caps, const weights::Format& format,
                                        uint64_t n_rows, uint64_t n_tokens);

// The matmul_coopmat_<type> variant of a weight format, or nullopt when the build has none.
std::optional<gpu::ShaderId> coopmat_variant(const weights::Format& format);

// The same for the grouped expert matmul (moe_matmul.comp COOPMAT, moe_matmul_coopmat_<type>):
// tiles chosen by the pairs an expert gets on average (as the scalar grouped matmul's) and the
// grid of n_rows x n_pairs.
std::optional<CoopmatPlan> coopmat_moe_plan(const gpu::Capabilities& caps, const weights::Format& format,
                                            uint64_t n_rows, double pairs_per_expert, uint64_t n_pairs);
std::optional<gpu::ShaderId> coopmat_moe_variant(const weights::Format& format);

}  // namespace vkllm::ops
