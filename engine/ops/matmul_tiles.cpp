#include "ops/matmul_tiles.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace vkllm::ops {

namespace {

// Workgroups a GPU's prompt matmul should have in flight: about two per compute unit of a large
// GPU (an H100 has 132 SMs), so that no unit idles while the grid drains. A smaller GPU gets a
// few more waves of the same tiles, which costs it little. Vulkan does not report the units.
constexpr uint64_t kGpuMinWorkgroups = 256;

uint64_t workgroups(uint64_t n_rows, uint64_t n_tokens, uint32_t bm, uint32_t bn) {
    return ((n_rows + bm - 1) / bm) * ((n_tokens + bn - 1) / bn);
}

// Whether the grid-filling rule applies: GPUs. A CPU driver (lavapipe) runs one workgroup per
// core at a time and pays a fixed cost per workgroup, so it keeps the largest tile; the mobile
// clamp stands for GPUs with few compute units, which the largest tile already fills.
bool fill_the_grid(const gpu::Capabilities& caps) { return caps.type != "cpu" && caps.limits_profile != "mobile"; }

uint32_t max_threads(const gpu::Capabilities& caps) {
    return std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0]);
}

// VKLLM_MATMUL_TILE=BMxBN: the tile shape to take instead of the choice (for measuring tiles on a
// new device, and for tests that reach every tile on small matrices); 0 x 0 when unset.
struct ForcedTile {
    uint32_t bm = 0, bn = 0;
    explicit operator bool() const { return bm != 0; }
};
ForcedTile forced_tile() {
    const char* v = std::getenv("VKLLM_MATMUL_TILE");
    if (!v || !*v) return {};
    unsigned bm = 0, bn = 0;
    char end = 0;
    weights::require(std::sscanf(v, "%ux%u%c", &bm, &bn, &end) == 2 && bm > 0 && bn > 0, "matmul",
                     std::string("VKLLM_MATMUL_TILE=") + v + " is not ROWSxTOKENS");
    return {bm, bn};
}

// The error for a forced tile the kernel does not have or the device cannot hold.
[[noreturn]] void no_such_tile(ForcedTile f, const std::string& kernel, const std::string& have) {
    weights::require(false, "matmul",
                     "VKLLM_MATMUL_TILE=" + std::to_string(f.bm) + "x" + std::to_string(f.bn) + ": the " + kernel +
                         " matmul has no such tile that fits this device (it has " + have + ")");
    std::abort();  // require threw
}

}  // namespace

bool grid_leaves_units_idle(const gpu::Capabilities& caps, uint64_t n_rows, uint64_t n_columns, uint32_t bm,
                            uint32_t bn) {
    return fill_the_grid(caps) && workgroups(n_rows, n_columns, bm, bn) < kGpuMinWorkgroups;
}

// Largest first. Big tiles reuse each decoded weight for more tokens, so a tile is skipped only
// when the prompt would leave most of it empty (n_tokens <= BN / 2) or the device cannot hold it.
// On a GPU the choice then steps down to smaller tiles while the grid has fewer than
// kGpuMinWorkgroups workgroups: a 768-row matrix at 32 tokens has 12 workgroups of 64 x 32
// (the largest that suits 32 tokens), 24 of 32 x 32. A CPU driver and the mobile clamp keep the
// largest (lavapipe: the 128 x 128 tile is its fastest from 67 tokens on).
static MatmulTiles pick_tile_shape(const gpu::Capabilities& caps, uint64_t n_rows, uint64_t n_tokens) {
    static constexpr MatmulTiles kCandidates[] = {
        {128, 128, 16, 8, 8},  // 256 threads, 16 KiB
        {64, 64, 16, 4, 4},    // 256 threads, 8 KiB
        {64, 32, 16, 4, 4},    // 128 threads, 6 KiB
        {32, 32, 16, 4, 4},    // 64 threads, 4 KiB: every device holds it
    };
    static constexpr size_t kCount = std::size(kCandidates);
    auto fits = [&](const MatmulTiles& t) {
        return t.shared_bytes() <= caps.max_shared_memory && t.threads() <= max_threads(caps);
    };
    if (const ForcedTile f = forced_tile()) {
        std::string have;
        for (const MatmulTiles& t : kCandidates) {
            if (t.bm == f.bm && t.bn == f.bn && fits(t)) return t;
            if (fits(t)) have += (have.empty() ? "" : ", ") + std::to_string(t.bm) + "x" + std::to_string(t.bn);
        }
        no_such_tile(f, "scalar", have);
    }
    for (size_t i = 0; i + 1 < kCount; ++i) {
        const MatmulTiles& t = kCandidates[i];
        if (!fits(t)) continue;
        if (n_tokens <= uint64_t(t.bn) / 2) continue;
        if (grid_leaves_units_idle(caps, n_rows, n_tokens, t.bm, t.bn)) continue;
        return t;
    }
    return kCandidates[kCount - 1];
}

uint32_t matmul_prefetch(const gpu::Capabilities& caps) {
    if (const char* v = std::getenv("VKLLM_MATMUL_PREFETCH"); v && *v) {
        weights::require(std::string_view(v) == "0" || std::string_view(v) == "1", "matmul",
                         std::string("VKLLM_MATMUL_PREFETCH=") + v + " is not 0 or 1");
        return v[0] == '1' ? 1 : 0;
    }
    return caps.type == "cpu" ? 0 : 1;
}

MatmulTiles pick_matmul_tiles(const gpu::Capabilities& caps, uint64_t n_rows, uint64_t n_tokens) {
    MatmulTiles t = pick_tile_shape(caps, n_rows, n_tokens);
    t.prefetch = matmul_prefetch(caps);
    return t;
}

std::optional<gpu::ShaderId> coopmat_variant(const weights::Format& format) {
    // matmul_<type> -> matmul_coopmat_<type>
    const std::string_view scalar = gpu::shader_name(format.shaders.matmul);
    return gpu::find_shader_id("matmul_coopmat_" + std::string(scalar.substr(std::string_view("matmul_").size())));
}

// VKLLM_COOPMAT=0 keeps prompts on the scalar kernel where the tensor-core one would run (for
// measuring one against the other); unset or 1: the tensor cores where the device has them.
static bool coopmat_allowed() {
    const char* v = std::getenv("VKLLM_COOPMAT");
    if (!v || !*v || std::string_view(v) == "1") return true;
    weights::require(std::string_view(v) == "0", "matmul", std::string("VKLLM_COOPMAT=") + v + " is not 0 or 1");
    return false;
}

// The cooperative-matrix shape: 16 x 16 x 16 where the device lists it (NVIDIA's basic fp16
// shape), else the first it lists (its preferred) whose sides are 8, 16 or 32.
static std::optional<CooperativeMatrixShape> coopmat_shape(const gpu::Capabilities& caps) {
    auto side_ok = [](uint32_t v) { return v == 8 || v == 16 || v == 32; };
    const std::vector<CooperativeMatrixShape>& shapes = caps.cooperative_matrix_nv_shapes;
    for (const CooperativeMatrixShape& s : shapes)
        if (s.m == 16 && s.n == 16 && s.k == 16) return s;
    for (const CooperativeMatrixShape& s : shapes)
        if (side_ok(s.m) && side_ok(s.n) && side_ok(s.k)) return s;
    return std::nullopt;
}

// The tensor-core kernel's K step: 32 elements (two 16-deep products) or the shape's depth if
// larger; VKLLM_COOPMAT_BK=N (a multiple of 32 and of the depth, at most 128) takes N instead, for
// measuring fewer, longer steps between barriers on a new device.
static uint32_t coopmat_step(const CooperativeMatrixShape& shape) {
    const uint32_t chosen = std::max(32u, shape.k);
    const char* v = std::getenv("VKLLM_COOPMAT_BK");
    if (!v || !*v) return chosen;
    unsigned bk = 0;
    char end = 0;
    weights::require(std::sscanf(v, "%u%c", &bk, &end) == 1 && bk >= 32 && bk <= 128 && bk % 32 == 0 &&
                         bk % shape.k == 0,
                     "matmul",
                     std::string("VKLLM_COOPMAT_BK=") + v + " is not a multiple of 32 and of the tensor cores' depth " +
                         std::to_string(shape.k) + " up to 128");
    return bk;
}

// Tiles of 2 x 2 subgroups, each FM x FN accumulators, largest first, stepped down as the scalar
// tiles are: a tile is skipped when `columns` (tokens, or an expert's pairs on average) would
// leave most of its BN columns empty, or, on a GPU, when the grid of n_rows x grid_columns would
// have too few workgroups. BK: coopmat_step. `extra_shared` is what the
// kernel keeps in shared memory besides the tiles (the grouped matmul's pair lists).
static std::optional<CoopmatPlan> plan_tiles(const gpu::Capabilities& caps, std::optional<gpu::ShaderId> shader,
                                             uint64_t n_rows, double columns, uint64_t grid_columns,
                                             uint32_t extra_shared_per_column) {
    if (!caps.cooperative_matrix_nv || !coopmat_allowed()) return std::nullopt;
    const std::optional<CooperativeMatrixShape> shape = coopmat_shape(caps);
    if (!shader || !shape || caps.subgroup_size == 0) return std::nullopt;
    static constexpr uint32_t kFragments[][2] = {{4, 4}, {2, 2}, {2, 1}, {1, 1}};  // FM x FN per subgroup
    const uint32_t bk = coopmat_step(*shape);
    const ForcedTile forced = forced_tile();
    std::string have;
    std::optional<CoopmatTiles> fallback;
    for (const auto& f : kFragments) {
        const uint32_t wm = f[0] * shape->m, wn = f[1] * shape->n;
        const CoopmatTiles t{2 * wm, 2 * wn, bk, wm, wn, *shape, caps.subgroup_size, matmul_prefetch(caps)};
        const uint64_t shared = uint64_t(t.shared_bytes()) + uint64_t(extra_shared_per_column) * t.bn + 8;
        if (shared > caps.max_shared_memory || t.threads() > max_threads(caps)) continue;
        if (forced) {
            if (t.bm == forced.bm && t.bn == forced.bn) return CoopmatPlan{*shader, t};
            have += (have.empty() ? "" : ", ") + std::to_string(t.bm) + "x" + std::to_string(t.bn);
            continue;
        }
        fallback = t;  // the smallest that fits, when no tile passes the rules below
        if (columns <= double(t.bn) / 2) continue;
        if (grid_leaves_units_idle(caps, n_rows, grid_columns, t.bm, t.bn)) continue;
        return CoopmatPlan{*shader, t};
    }
    if (forced) no_such_tile(forced, "tensor-core", have);
    if (!fallback) return std::nullopt;
    return CoopmatPlan{*shader, *fallback};
}

std::optional<CoopmatPlan> coopmat_plan(const gpu::Capabilities& caps, const weights::Format& format,
                                        uint64_t n_rows, uint64_t n_tokens) {
    if (!caps.cooperative_matrix_nv) return std::nullopt;
    return plan_tiles(caps, coopmat_variant(format), n_rows, double(n_tokens), n_tokens, 0);
}

std::optional<gpu::ShaderId> coopmat_moe_variant(const weights::Format& format) {
    // moe_matmul_<type> -> moe_matmul_coopmat_<type>
    const std::string_view scalar = gpu::shader_name(format.shaders.moe_matmul);
    return gpu::find_shader_id("moe_matmul_coopmat_" +
                               std::string(scalar.substr(std::string_view("moe_matmul_").size())));
}

std::optional<CoopmatPlan> coopmat_moe_plan(const gpu::Capabilities& caps, const weights::Format& format,
                                            uint64_t n_rows, double pairs_per_expert, uint64_t n_pairs) {
    if (!caps.cooperative_matrix_nv) return std::nullopt;
    // moe_matmul.comp's tile_pair and tile_x_row: two uints per column.
    return plan_tiles(caps, coopmat_moe_variant(format), n_rows, pairs_per_expert, n_pairs, 8);
}

}  // namespace vkllm::ops
