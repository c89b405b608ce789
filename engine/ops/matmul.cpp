// y = W x over ggml-layout weights: shaders/matvec.comp for one token (decode, memory-bound),
// shaders/matvec_rows.comp for 2-16 (a batched decode pass: the weights read once for up to 8),
// shaders/matmul.comp for more (prefill, tiled; its cooperative-matrix kernel on devices with
// NVIDIA's tensor cores, matmul_tiles.h). Weights larger than one binding are split
// into row windows; activations larger than one binding into token windows.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "gpu/device.h"
#include "gpu/shaders.h"
#include "ops/matmul_tiles.h"
#include "ops/matvec_bindings.h"
#include "ops/ops.h"
#include "ops/push_constants.h"
#include "ops/weight_ops.h"

namespace vkllm::ops {

namespace {

using weights::require;

}  // namespace

// Blocks of 32 with one scale, whose matvecs dot x rounded to 8-bit blocks of 32 in integers.
static bool int8_blocks(TensorType t) {
    return t == TensorType::Q8_0 || t == TensorType::Q4_0 || t == TensorType::Q4_1 || t == TensorType::Q5_0 ||
           t == TensorType::Q5_1;
}

bool weights::large_int8_matvec(TensorType t, uint64_t n_in, uint64_t n_out) {
    return int8_blocks(t) && n_in * n_out >= uint64_t(4096) * 4096;
}

// Threads and rows per workgroup of matvec.comp, from the 32-element units in a row.
// With subgroup arithmetic a workgroup is one subgroup (as llama.cpp's mul_mat_vec): the shader
// then reduces with subgroupAdd alone, no shared memory and no barrier. Each thread reads its own
// x values for every unit and dots them with all the workgroup's rows, so more rows per workgroup
// means fewer x loads per weight; on a CPU device (lavapipe: every non-uniform load is a scalar
// loop over the lanes, and each workgroup has a fixed start-up cost) 8 rows read weights 2-5x
// faster than 2 (tools/bench_matvec), while a GPU, whose loads are cheap, keeps 2-4 rows and more
// workgroups in flight.
// Without subgroup arithmetic (the mobile clamp) the shared-memory tree reduction wants wider
// workgroups: each thread should get at least two units of each row (loads in flight); short rows
// take more rows per workgroup so that each x value loaded serves more weights.
// The GLU variants (gate and up rows per output) take half a CPU device's rows: the same 8 row
// streams per load of x, and half the accumulators, which lavapipe compiles several times faster.
// Large matrices of the 8-bit-block types on a GPU take 128 threads and 8 rows: each workgroup
// rounds its x units again (in-matvec rounding), which 8 rows share. On an H100 (bench_matvec
// --round-x, weights cycled past the L2) Q8_0 read 1150-1480 GB/s against 950-1190 with 32 x 2,
// Q4_0 245-290 against 147, at 4096 x 4096, 14336 x 4096 and 4096 x 14336; at a 134M Llama's
// 768 x 2048 the 32 x 2 shape decoded faster (1220 tokens/s against 1120), so small stays as is.
// VKLLM_MATVEC_SHAPE=THREADSxROWS replaces the choice, for measuring other shapes with
// tools/bench_matvec on a new device (threads a power of two within the device's workgroup
// limit and at least a subgroup where subgroup arithmetic is on; 1 <= rows <= min(threads, 16)).
// The decode matvecs' MV_ROLLED constant (matvec_unit.glsl): a CPU driver keeps the loop over a
// workgroup's rows rolled, which lavapipe compiles several times faster (8 rows of f32: 4 s of
// CPU against 10 for a first dispatch in tools/bench_matvec) and runs faster (f32 1.8 -> 2.7
// GB/s, q4_0 0.72 -> 0.85); a GPU unrolls it to keep the sums in registers.
uint32_t weights::matvec_rolled(const gpu::Capabilities& caps) { return caps.type == "cpu" ? 1u : 0u; }

// The decode matvec's MV_TRIP constant (matvec.comp): the units each thread starts per loop trip
// before it sums any, so that more weight loads are in flight per thread (a GPU's memory latency
// is hidden by the bytes in flight per compute unit). 2 by default; VKLLM_MATVEC_TRIP=1..8 sets
// it, for measuring with tools/bench_matvec.
uint32_t weights::matvec_trip(const gpu::Capabilities&) {
    const char* forced = std::getenv("VKLLM_MATVEC_TRIP");
    if (!forced || !*forced) return 2u;
    char* end = nullptr;
    const long n = std::strtol(forced, &end, 10);
    require(*end == '\0' && n >= 1 && n <= 8, "matvec",
            std::string("VKLLM_MATVEC_TRIP=") + forced + " is not a unit count from 1 to 8");
    return uint32_t(n);
}

weights::MatvecShape weights::matvec_shape(const gpu::Capabilities& caps, uint64_t units, bool glu, bool large_int8,
                                           bool float16) {
    const uint32_t max_threads = std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0]);
    const uint32_t sg = caps.subgroup_size;
    if (const char* forced = std::getenv("VKLLM_MATVEC_SHAPE"); forced && *forced) {
        unsigned threads = 0, rows = 0;
        char end = 0;
        const bool parsed = std::sscanf(forced, "%ux%u%c", &threads, &rows, &end) == 2;
        const bool ok = parsed && threads >= 1 && threads <= max_threads && (threads & (threads - 1)) == 0 &&
                        (!caps.subgroup_arithmetic || threads >= sg) && rows >= 1 && rows <= std::min(threads, 16u);
        require(ok, "matvec", std::string("VKLLM_MATVEC_SHAPE=") + forced +
                                  " is not THREADSxROWS with threads a power of two up to " +
                                  std::to_string(max_threads) + (caps.subgroup_arithmetic ? " and at least the subgroup size " + std::to_string(sg) : "") +
                                  ", and 1 <= rows <= min(threads, 16)");
        return {threads, rows};
    }
    if (caps.subgroup_arithmetic && sg >= 4 && sg <= 128 && sg <= max_threads && (sg & (sg - 1)) == 0) {
        // ROWS <= threads: the shaders' shared-memory fallback lets thread r write row r.
        if (caps.type != "cpu" && large_int8 && !glu && max_threads >= 128) return {128, 8};
        // 16-bit float rows (the octet loads) read faster with 4 rows per subgroup: an H200 read
        // 14336 x 4096 F16 at 3.1 TB/s with 32 x 4 against 2.4 with 32 x 2 (scripts/gpu-sweep.sh).
        if (caps.type != "cpu" && float16 && !glu) return {sg, std::min(4u, sg)};
        const uint32_t rows = caps.type == "cpu" ? (glu ? 4 : 8) : (units >= 64 ? 2 : 4);
        return {sg, std::min(rows, sg)};
    }
    weights::MatvecShape m{units >= 512 ? 128u : 64u, units >= 64 ? 2u : 4u};
    while (m.threads > max_threads) m.threads /= 2;
    return m;
}

gpu::ShaderId weights::matvec_shader(const gpu::Capabilities& caps, MatvecOp op, TensorType t, bool round_x) {
    Format f;
    if (!gpu_format(t, &f)) throw ShapeError("matvec: the GPU cannot decode this weight type");
    const bool idot = round_x && caps.integer_dot_matvec && f.shaders.idot.has_value();
    const MatvecShaders& shaders = idot ? *f.shaders.idot : f.shaders.matvec;
    return shaders[static_cast<size_t>(op)].pick(caps.subgroup_arithmetic);
}

std::string weights::matvec_variant(const gpu::Capabilities& caps, const char* op_prefix, TensorType t, bool round_x) {
    static constexpr const char* kPrefixes[kMatvecOps] = {"matvec_", "matvec_swiglu_", "moe_matvec_",
                                                          "moe_matvec_swiglu_"};
    for (size_t i = 0; i < kMatvecOps; ++i)
        if (std::string_view(op_prefix) == kPrefixes[i])
            return gpu::shader_name(matvec_shader(caps, static_cast<MatvecOp>(i), t, round_x));
    throw std::logic_error(std::string("matvec_variant: no decode matvec has the prefix '") + op_prefix + "'");
}

// The few-tokens matvec (shaders/matvec_rows.comp) takes 2..matvec_rows_max() tokens, in windows of
// up to kMatvecRowsCols; the tiled matmul more. On lavapipe (tools/bench_matvec --tokens N over
// zoo-dense's shapes) the tiled kernel's smallest tile costs about the same for 2 tokens as for 16,
// while the few-rows kernel's cost grows slowly with the tokens: it is 2.5-10x faster up to 8 and
// still faster at 16 (two windows). Up to 16 it also keeps a batched pass of up to n_batch = 16
// rows on the kernel a sequence's own pass of fewer rows takes (float weights: the one-token
// matvec's sums bit for bit). VKLLM_MATVEC_ROWS=N moves the limit (1: never; at most 64), for
// measuring the crossover with tools/bench_matvec.
static constexpr uint32_t kMatvecRowsCols = 8;   // rows of x per dispatch, at most
static constexpr int64_t kMatvecRowsMax = 16;    // tokens, by default

static int64_t matvec_rows_max() {
    const char* forced = std::getenv("VKLLM_MATVEC_ROWS");
    if (!forced || !*forced) return kMatvecRowsMax;
    char* end = nullptr;
    const long n = std::strtol(forced, &end, 10);
    require(*end == '\0' && n >= 1 && n <= 64, "matmul",
            std::string("VKLLM_MATVEC_ROWS=") + forced + " is not a token count from 1 to 64");
    return n;
}

// The x rows a matvec_rows pipeline is compiled for: a window's tokens rounded up to 2, 4 or 8, so
// three pipelines per type serve every batch (the rows past the tokens cost their dots, not a compile).
static uint32_t matvec_rows_cols(uint64_t n_tokens) { return n_tokens <= 2 ? 2u : n_tokens <= 4 ? 4u : kMatvecRowsCols; }

// Threads and weight rows per workgroup of matvec_rows.comp: as the one-token matvec's, a subgroup
// with 8 rows on a CPU device, where a load of x served by more rows is what saves time (lavapipe,
// zoo-dense's shapes, 8 tokens: 8 rows 3.2 ms for the set against 4.3 with 4), 2 on a GPU, which
// keeps ROWS x COLS sums per thread in registers. VKLLM_MATVEC_SHAPE replaces the choice as it
// does the one-token matvec's.
static weights::MatvecShape matvec_rows_shape(const gpu::Capabilities& caps, uint64_t units) {
    if (const char* forced = std::getenv("VKLLM_MATVEC_SHAPE"); forced && *forced)
        return weights::matvec_shape(caps, units);
    const uint32_t max_threads = std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0]);
    const uint32_t sg = caps.subgroup_size;
    if (caps.subgroup_arithmetic && sg >= 4 && sg <= 128 && sg <= max_threads && (sg & (sg - 1)) == 0)
        return {sg, caps.type == "cpu" ? 8u : 2u};
    weights::MatvecShape m{units >= 512 ? 128u : 64u, 2u};  // the one-token matvec's widths
    while (m.threads > max_threads) m.threads /= 2;
    return m;
}

static void record_matmul(Stream& s, const Weight& w, const Buffer& x, uint64_t x_offset, const Buffer& y,
                          uint64_t y_offset, int64_t n_tokens, bool accumulate, int64_t y_stride, bool round_x,
                          const MatvecNorm* norm);
static void record_matvec_swiglu(Stream& s, const Weight& gate, const Weight& up, const Buffer& x,
                                 uint64_t x_offset, const Buffer& y, uint64_t y_offset, bool round_x,
                                 GluActivation act, const MatvecNorm* norm);

void matmul(Stream& s, const Weight& w, const TensorView& x, const TensorView& y, bool accumulate, bool round_x,
            const MatvecNorm* norm) {
    const char* op = "matmul";
    const uint64_t x_offset = detail::checked_f32(x, op, "x");
    const uint64_t y_offset = detail::checked_f32(y, op, "y");
    require(x.cols == w.n_in && x.packed(), op,
            "x must be packed rows of the weight's " + std::to_string(w.n_in) + " inputs, got " +
                std::to_string(x.cols) + " columns with a row stride of " + std::to_string(x.stride()));
    require(y.cols == w.n_out, op,
            "y must have the weight's " + std::to_string(w.n_out) + " outputs as columns, got " + std::to_string(y.cols));
    require(x.rows == y.rows, op, "x has " + std::to_string(x.rows) + " rows, y " + std::to_string(y.rows));
    record_matmul(s, w, *x.buffer, x_offset, *y.buffer, y_offset, x.rows, accumulate, y.stride(), round_x, norm);
}

// Records matmul over positional operands the views were checked into.
static void record_matmul(Stream& s, const Weight& w, const Buffer& x, uint64_t x_offset, const Buffer& y,
                          uint64_t y_offset, int64_t n_tokens, bool accumulate, int64_t y_stride, bool round_x,
                          const MatvecNorm* norm) {
    const char* op = "matmul";
    const weights::Layout layout = weights::checked_layout(w, op);
    require(n_tokens >= 0, op, "negative n_tokens " + std::to_string(n_tokens));
    if (y_stride == 0) y_stride = w.n_out;
    require(y_stride >= w.n_out, op,
            "y_stride " + std::to_string(y_stride) + " is shorter than the " + std::to_string(w.n_out) + " outputs");
    require(!round_x || (n_tokens <= 1 && matvec_rounds_activations(w.type)), op,
            "round_x needs one token and a weight type whose matvec rounds activations");
    require(!norm || n_tokens <= 1, op, "a fused norm needs one token (the matrix-vector path)");
    if (n_tokens == 0) return;

    const uint64_t n_in = uint64_t(w.n_in), n_out = uint64_t(w.n_out), stride = uint64_t(y_stride);
    const uint64_t x_end = (x_offset + uint64_t(n_tokens) * n_in) * 4;
    const uint64_t y_end = (y_offset + uint64_t(n_tokens - 1) * stride + n_out) * 4;
    require(x.valid() && x_end <= x.size(), op,
            "x needs " + std::to_string(x_end) + " bytes, its buffer holds " + std::to_string(x.size()));
    require(y.valid() && y_end <= y.size(), op,
            "y needs " + std::to_string(y_end) + " bytes, its buffer holds " + std::to_string(y.size()));
    require(&x != &y || x_end <= y_offset * 4 || y_end <= x_offset * 4, op, "x and y overlap in the same buffer");

    gpu::Context& ctx = s.context();
    const gpu::Capabilities& caps = ctx.caps();
    const weights::Limits lim = weights::limits(caps);
    // Usable bytes of a window after the alignment slack at its start and the word rounding at its end.
    const uint64_t usable = lim.max_binding - lim.align - 4;

    const uint64_t row_bytes = layout.row_bytes;
    require(row_bytes <= usable && n_in * 4 <= usable, op,
            "one row of " + std::to_string(n_in) + " elements does not fit one binding (" +
                std::to_string(lim.max_binding) + " bytes)");
    const bool single = n_tokens == 1;
    const bool few = !single && n_tokens <= matvec_rows_max();  // matvec_rows.comp
    // The tiled kernel: the tensor-core variant where the device and build have one, else scalar.
    const std::optional<CoopmatPlan> coop =
        single || few ? std::nullopt : coopmat_plan(caps, layout.format, n_out, uint64_t(n_tokens));
    const MatmulTiles tiles = pick_matmul_tiles(caps, n_out, uint64_t(n_tokens));
    const uint32_t tile_rows = coop ? coop->tiles.bm : tiles.bm, tile_tokens = coop ? coop->tiles.bn : tiles.bn;
    const weights::MatvecShape mv =
        few ? matvec_rows_shape(caps, n_in / 32)
            : weights::matvec_shape(caps, n_in / 32, /*glu=*/false, weights::large_int8_matvec(w.type, n_in, n_out),
                                    w.type == TensorType::F16 || w.type == TensorType::BF16);
    const uint32_t mv_threads = mv.threads, mv_rows = mv.rows;
    // The few-rows pipeline for a window of `nt` tokens.
    auto rows_pipe = [&](uint64_t nt) {
        return &ctx.pipeline(layout.format.shaders.matvec_rows.pick(caps.subgroup_arithmetic), layout.format.bindings(3),
                             sizeof(MatvecRowsPush), {mv_threads, mv_rows, matvec_rows_cols(nt), layout.aligned_spec()});
    };
    // Rows per window: what one binding holds, and what one grid covers.
    const uint64_t grid_rows = single || few ? uint64_t(lim.max_groups[0]) * lim.max_groups[1] * mv_rows
                                             : uint64_t(lim.max_groups[0]) * tile_rows;
    const uint64_t rows_per_window = std::min({usable / row_bytes, usable / 4, grid_rows});
    const gpu::Pipeline* pipe =
        single ? &ctx.pipeline(weights::matvec_shader(caps, weights::MatvecOp::Matvec, w.type, round_x),
                               layout.format.bindings(4),
                               sizeof(MatvecPush),
                               {mv_threads, mv_rows, round_x ? 1u : 0u, /*GLU_ACT*/ 0u, norm ? 1u : 0u,
                                weights::matvec_rolled(caps), weights::matvec_trip(caps), layout.aligned_spec()})
        : few ? nullptr  // per window (rows_pipe)
        : coop ? &ctx.pipeline(coop->shader, layout.format.bindings(3), sizeof(MatmulPush),
                               with_grouped(coop->tiles.spec(), layout))
               : &ctx.pipeline(layout.format.shaders.matmul, layout.format.bindings(3), sizeof(MatmulPush),
                               with_grouped(tiles.spec(), layout));

    for (uint64_t row0 = 0; row0 < n_out; row0 += rows_per_window) {
        const uint64_t rows = std::min(rows_per_window, n_out - row0);
        const weights::Window ww =
            weights::window(*w.buffer, w.offset + row0 * row_bytes, w.offset + (row0 + rows) * row_bytes, lim, op,
                            "weight");
        // Tokens per window: x [t, n_in] and y [t, y_stride] (of which `rows` columns) must fit.
        uint64_t per = std::min(usable / (n_in * 4), usable / 4 >= rows ? (usable / 4 - rows) / stride + 1 : 0);
        if (few) per = std::min<uint64_t>(per, kMatvecRowsCols);
        else if (!single) per = std::min<uint64_t>(per, uint64_t(lim.max_groups[1]) * tile_tokens);
        require(per >= 1, op, "a token's activations do not fit one binding");
        for (uint64_t t0 = 0; t0 < uint64_t(n_tokens); t0 += per) {
            const uint64_t nt = std::min<uint64_t>(per, uint64_t(n_tokens) - t0);
            const uint64_t x_first = x_offset + t0 * n_in, y_first = y_offset + t0 * stride + row0;
            const weights::Window xw = weights::window(x, x_first * 4, (x_first + nt * n_in) * 4, lim, op, "x");
            const weights::Window yw =
                weights::window(y, y_first * 4, (y_first + (nt - 1) * stride + rows) * 4, lim, op, "y");
            const uint32_t x_base = xw.shift / 4;
            const uint32_t x_vec4 = x_base % 4 == 0 && n_in % 4 == 0 ? 1u : 0u;  // x quads 16-byte aligned
            if (single) {
                const NormBinding nb = norm_binding(norm, n_in, xw, lim, op);
                const MatvecPush push{uint32_t(n_in), uint32_t(rows), ww.shift,    uint32_t(row_bytes),
                                      x_base,         yw.shift / 4,   accumulate ? 1u : 0u,
                                      x_vec4 && nb.vec4_ok ? 1u : 0u, 0u, nb.base, nb.eps, 0u};
                // A 2-D grid when the row groups exceed the x limit; the shader skips the padding.
                const uint64_t groups = (rows + mv_rows - 1) / mv_rows;
                const uint64_t gx = std::min<uint64_t>(groups, lim.max_groups[0]);
                const uint64_t gy = (groups + gx - 1) / gx;
                require(gy <= lim.max_groups[1], op, std::to_string(n_out) + " rows exceed the workgroup-count limits");
                weights::dispatch(s, *pipe, layout.format, {ww.range, xw.range, yw.range, nb.range}, push, uint32_t(gx),
                                  uint32_t(gy));
            } else if (few) {
                const MatvecRowsPush push{uint32_t(n_in), uint32_t(rows),   uint32_t(nt),     ww.shift,
                                          uint32_t(row_bytes), x_base,    yw.shift / 4,     uint32_t(stride),
                                          accumulate ? 1u : 0u, x_vec4};
                const uint64_t groups = (rows + mv_rows - 1) / mv_rows;
                const uint64_t gx = std::min<uint64_t>(groups, lim.max_groups[0]);
                const uint64_t gy = (groups + gx - 1) / gx;
                require(gy <= lim.max_groups[1], op, std::to_string(n_out) + " rows exceed the workgroup-count limits");
                weights::dispatch(s, *rows_pipe(nt), layout.format, {ww.range, xw.range, yw.range}, push, uint32_t(gx),
                                  uint32_t(gy));
            } else {
                const MatmulPush push{uint32_t(n_in), uint32_t(rows), uint32_t(nt),      ww.shift,
                                      uint32_t(row_bytes), x_base, yw.shift / 4, uint32_t(stride),
                                      accumulate ? 1u : 0u, x_vec4};
                const uint64_t gx = (rows + tile_rows - 1) / tile_rows, gy = (nt + tile_tokens - 1) / tile_tokens;
                weights::dispatch(s, *pipe, layout.format, {ww.range, xw.range, yw.range}, push, uint32_t(gx), uint32_t(gy));
            }
        }
    }
}

namespace {

// The bytes one binding must span for the fused pair: gate's rows through up's.
bool swiglu_pair(const Weight& gate, const Weight& up, uint64_t* span) {
    if (gate.buffer != up.buffer || gate.type != up.type || gate.grouped != up.grouped || gate.n_in != up.n_in ||
        gate.n_out != up.n_out || up.offset < gate.offset)
        return false;
    weights::Format f;
    if (!weights::gpu_format(gate.type, &f) || gate.n_in % f.block_elems) return false;
    const uint64_t row_bytes = uint64_t(gate.n_in) / f.block_elems * f.block_bytes;
    *span = up.offset - gate.offset + row_bytes * uint64_t(up.n_out);
    return true;
}

}  // namespace

bool matvec_swiglu_fits(const gpu::Context& ctx, const Weight& gate, const Weight& up) {
    uint64_t span = 0;
    if (!swiglu_pair(gate, up, &span)) return false;
    const weights::Limits lim = weights::limits(ctx.caps());
    const uint64_t usable = lim.max_binding - lim.align - 4;
    return span <= usable && uint64_t(gate.n_in) * 4 <= usable && uint64_t(gate.n_out) * 4 <= usable;
}

void matvec_swiglu(Stream& s, const Weight& gate, const Weight& up, const TensorView& x, const TensorView& y,
                   bool round_x, GluActivation act, const MatvecNorm* norm) {
    const char* op = "matvec_swiglu";
    const uint64_t x_offset = detail::checked_f32(x, op, "x");
    const uint64_t y_offset = detail::checked_f32(y, op, "y");
    require(x.rows == 1 && y.rows == 1, op, "x and y must be one row each (one token)");
    require(x.cols == gate.n_in && y.cols == gate.n_out, op,
            "x must have the weights' " + std::to_string(gate.n_in) + " inputs and y their " +
                std::to_string(gate.n_out) + " outputs, got " + std::to_string(x.cols) + " and " +
                std::to_string(y.cols));
    record_matvec_swiglu(s, gate, up, *x.buffer, x_offset, *y.buffer, y_offset, round_x, act, norm);
}

// Records matvec_swiglu over positional operands the views were checked into.
static void record_matvec_swiglu(Stream& s, const Weight& gate, const Weight& up, const Buffer& x,
                                 uint64_t x_offset, const Buffer& y, uint64_t y_offset, bool round_x,
                                 GluActivation act, const MatvecNorm* norm) {
    const char* op = "matvec_swiglu";
    weights::Layout layout = weights::checked_layout(gate, op);
    layout.and_aligned(weights::checked_layout(up, op));
    gpu::Context& ctx = s.context();
    require(matvec_swiglu_fits(ctx, gate, up), op,
            "gate and up must be one type and shape in one buffer (gate first), within one binding");
    require(!round_x || matvec_rounds_activations(gate.type), op, "round_x needs a weight type whose matvec rounds");
    const uint64_t n_in = uint64_t(gate.n_in), n_out = uint64_t(gate.n_out);
    require(x.valid() && (x_offset + n_in) * 4 <= x.size(), op, "x holds fewer than n_in values after x_offset");
    require(y.valid() && (y_offset + n_out) * 4 <= y.size(), op, "y holds fewer than n_out values after y_offset");
    require(&x != &y || (x_offset + n_in) <= y_offset || (y_offset + n_out) <= x_offset, op,
            "x and y overlap in the same buffer");

    const gpu::Capabilities& caps = ctx.caps();
    const weights::Limits lim = weights::limits(caps);
    const uint64_t row_bytes = layout.row_bytes;
    const weights::Window ww =
        weights::window(*gate.buffer, gate.offset, up.offset + n_out * row_bytes, lim, op, "gate and up");
    const weights::Window xw = weights::window(x, x_offset * 4, (x_offset + n_in) * 4, lim, op, "x");
    const weights::Window yw = weights::window(y, y_offset * 4, (y_offset + n_out) * 4, lim, op, "y");
    const uint32_t x_base = xw.shift / 4;
    const NormBinding nb = norm_binding(norm, n_in, xw, lim, op);
    const uint32_t x_vec4 = x_base % 4 == 0 && n_in % 4 == 0 && nb.vec4_ok ? 1u : 0u;
    const weights::MatvecShape mv = weights::matvec_shape(caps, n_in / 32, /*glu=*/true);
    const gpu::Pipeline& pipe =
        ctx.pipeline(weights::matvec_shader(caps, weights::MatvecOp::MatvecSwiglu, gate.type, round_x),
                     layout.format.bindings(4),
                     sizeof(MatvecPush),
                     {mv.threads, mv.rows, round_x ? 1u : 0u, uint32_t(act), norm ? 1u : 0u, weights::matvec_rolled(caps),
                      weights::matvec_trip(caps), layout.aligned_spec()});
    const MatvecPush push{uint32_t(n_in), uint32_t(n_out), ww.shift,       uint32_t(row_bytes),
                          x_base,         yw.shift / 4,    0u,             x_vec4,
                          uint32_t(up.offset - gate.offset), nb.base, nb.eps, 0u};
    const uint64_t groups = (n_out + mv.rows - 1) / mv.rows;
    const uint64_t gx = std::min<uint64_t>(groups, lim.max_groups[0]);
    const uint64_t gy = (groups + gx - 1) / gx;
    require(gy <= lim.max_groups[1], op, std::to_string(n_out) + " rows exceed the workgroup-count limits");
    weights::dispatch(s, pipe, layout.format, {ww.range, xw.range, yw.range, nb.range}, push, uint32_t(gx), uint32_t(gy));
}

}  // namespace vkllm::ops
