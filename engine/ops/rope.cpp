// Rotary position embedding (shaders/rope.comp), in place or into another buffer, with linear and
// YaRN scaling.
#include <algorithm>
#include <cmath>
#include <string>

#include "gpu/device.h"
#include "ops/dispatch_util.h"
#include "ops/ops.h"
#include "ops/push_constants.h"

namespace vkllm::ops {

namespace {

// YaRN's correction range as ggml computes it (ggml_rope_yarn_corr_dims, in float): the pair
// index where a wave makes n_rot turns over the original context is
// n_dims ln(n_ctx_orig / (2 pi n_rot)) / (2 ln base); the ramp runs from the beta_fast index
// (floored) to the beta_slow index (ceiled), clamped to [0, n_dims - 1].
void yarn_corr_dims(int n_dims, int n_ctx_orig, float base, float beta_fast, float beta_slow, float dims[2]) {
    auto corr_dim = [&](float n_rot) {
        return float(n_dims) * std::log(float(n_ctx_orig) / (n_rot * 2.0f * 3.14159265358979f)) / (2.0f * std::log(base));
    };
    dims[0] = std::max(0.0f, std::floor(corr_dim(beta_fast)));
    dims[1] = std::min(float(n_dims - 1), std::ceil(corr_dim(beta_slow)));
}

RopeAngle rope_angle(const RopeParams& p, bool has_freq_factors) {
    const bool yarn = p.ext_factor != 0.0f;
    RopeAngle a{};
    a.flags = (p.neox ? 1u : 0u) | (has_freq_factors ? 2u : 0u) | (yarn ? 4u : 0u);
    a.log2_base = std::log2(p.freq_base);
    a.freq_scale = p.freq_scale;
    a.ext_factor = p.ext_factor;
    a.mscale = p.attn_factor * (yarn ? 1.0f + 0.1f * std::log(1.0f / p.freq_scale) : 1.0f);
    if (yarn) {
        float dims[2];
        yarn_corr_dims(p.n_dims, p.n_ctx_orig, p.freq_base, p.beta_fast, p.beta_slow, dims);
        a.corr_low = dims[0];
        a.corr_high = dims[1];
    }
    return a;
}

void require_rope_params(const RopeParams& p, int head_dim, const char* op) {
    detail::require(p.n_dims > 0 && p.n_dims % 2 == 0 && p.n_dims <= head_dim, op,
                    "n_dims " + std::to_string(p.n_dims) + " must be even, positive and <= head_dim " +
                        std::to_string(head_dim));
    detail::require(p.freq_base > 0.0f && p.freq_scale > 0.0f, op, "freq_base and freq_scale must be > 0");
    detail::require(p.ext_factor == 0.0f || p.n_ctx_orig > 0, op, "YaRN (ext_factor != 0) needs n_ctx_orig > 0");
}

// Where rope.comp writes: x in place (neither set), a cache's slots (every dim), or the rotated
// dims into rows of y.
struct RopeOut {
    const Buffer* cache = nullptr;
    int64_t slots = 0;
    KvCacheType cache_type = KvCacheType::F32;
    const Buffer* y = nullptr;
    uint64_t y_offset = 0, y_span = 0;  // floats: y's first element, and the span of its rows
    uint64_t y_token_stride = 0, y_head_stride = 0;
};

// rope, rope_into_slots and rope_into.
void record_rope(Stream& s, const Buffer& x, uint64_t x_offset, const Buffer& positions, uint64_t pos_offset,
                 int64_t n_tokens, int n_heads, int head_dim, const RopeParams& p, const Buffer* freq_factors,
                 int64_t token_stride, const RopeOut& out, const char* op) {
    const Buffer* cache = out.cache;
    const int64_t slots = out.slots;
    const KvCacheType cache_type = out.cache_type;
    detail::require(n_tokens >= 0 && n_heads > 0 && head_dim > 0, op,
                    "needs n_tokens >= 0 and positive n_heads and head_dim");
    require_rope_params(p, head_dim, op);
    const int64_t row = int64_t(n_heads) * head_dim;
    if (token_stride == 0) token_stride = row;
    detail::require(token_stride >= row, op, "token_stride " + std::to_string(token_stride) +
                                                 " is shorter than n_heads * head_dim = " + std::to_string(row));
    if (n_tokens == 0) return;
    const uint64_t n_pairs_total = uint64_t(n_tokens) * uint64_t(n_heads) * uint64_t(p.n_dims / 2);
    detail::require(n_pairs_total <= 0xffffffffull, op, "too many pairs for one dispatch");

    gpu::Context& ctx = s.context();
    const uint64_t span = uint64_t(n_tokens - 1) * uint64_t(token_stride) + uint64_t(row);
    const detail::Window xw = detail::window(ctx, x, x_offset, span, op, "x");
    const detail::Window pw = detail::window(ctx, positions, pos_offset, uint64_t(n_tokens), op, "positions");
    const detail::Window fw =
        freq_factors ? detail::window(ctx, *freq_factors, 0, uint64_t(p.n_dims / 2), op, "freq_factors") : pw;
    const detail::Window yw =
        cache   ? detail::cache_window(ctx, *cache, uint64_t(slots) * uint64_t(row), cache_type, op, "cache")
        : out.y ? detail::window(ctx, *out.y, out.y_offset, out.y_span, op, "y")
                : xw;
    if (cache) {
        require_cache_type(ctx, cache_type, row, op);
        detail::require(cache_type != KvCacheType::Q8_0, op,
                        "writes f32 or f16 caches (quantise a q8_0 cache's rows with set_rows_into_slots)");
    }

    RopePush push{};
    push.n_pairs_total = uint32_t(n_pairs_total);
    push.n_heads = uint32_t(n_heads);
    push.head_dim = uint32_t(head_dim);
    push.n_pairs = uint32_t(p.n_dims / 2);
    push.token_stride = uint32_t(token_stride);
    push.x_shift = xw.shift;
    push.pos_shift = pw.shift;
    push.ff_shift = freq_factors ? fw.shift : 0u;
    push.angle = rope_angle(p, freq_factors != nullptr);
    push.y_shift = cache || out.y ? yw.shift : 0u;
    push.slots = cache ? uint32_t(slots) : 0u;
    if (out.y) {
        push.angle.flags |= 8u;  // the rotated dims into y (rope.comp's kRotatedIntoY)
        push.y_token_stride = uint32_t(out.y_token_stride);
        push.y_head_stride = uint32_t(out.y_head_stride);
    }
    // Into a cache, the unrotated dims are copied too (a second grid-stride loop).
    const uint64_t items = std::max<uint64_t>(
        n_pairs_total, cache ? uint64_t(n_tokens) * uint64_t(n_heads) * uint64_t(head_dim - p.n_dims) : 0);
    const uint32_t threads = detail::workgroup_size(ctx, 128);
    const uint32_t groups =
        uint32_t(std::clamp<uint64_t>((items + threads - 1) / threads, 1, ctx.caps().max_workgroup_count[0]));
    const gpu::ShaderId shader =
        cache && cache_type == KvCacheType::F16 ? gpu::ShaderId::rope_f16_out : gpu::ShaderId::rope;
    const auto& pipeline = ctx.pipeline(shader, 4, sizeof(RopePush), {threads});
    s.dispatch(pipeline, {xw.range, pw.range, fw.range, yw.range}, push, groups);
}

// x's heads: n_heads > 0 of head_dim = x.cols / n_heads; throws otherwise.
int head_dim_of(const TensorView& x, int n_heads, const char* op, const char* what) {
    detail::require(n_heads > 0 && x.cols > 0 && x.cols % n_heads == 0, op,
                    std::string(what) + "'s " + std::to_string(x.cols) + " columns are not " + std::to_string(n_heads) +
                        " heads of one width");
    return int(x.cols / n_heads);
}

}  // namespace

void rope(Stream& s, const TensorView& x, int n_heads, const TensorView& positions, const RopeParams& p,
          const Buffer* freq_factors) {
    const char* op = "rope";
    const uint64_t x_offset = detail::checked_f32(x, op, "x");
    const int head_dim = head_dim_of(x, n_heads, op, "x");
    const uint64_t pos_offset = detail::checked_vector(positions, TensorType::I32, x.rows, op, "positions");
    record_rope(s, *x.buffer, x_offset, *positions.buffer, pos_offset, x.rows, n_heads, head_dim, p, freq_factors,
                x.stride(), RopeOut{}, op);
}

void rope_into(Stream& s, const TensorView& x, int n_heads, const TensorView& positions, const RopeParams& p,
               const Buffer* freq_factors, const TensorView& y, int at) {
    const char* op = "rope_into";
    const uint64_t x_offset = detail::checked_f32(x, op, "x");
    const uint64_t y_offset = detail::checked_f32(y, op, "y");
    const int head_dim = head_dim_of(x, n_heads, op, "x");
    const int y_head = head_dim_of(y, n_heads, op, "y");
    detail::require(y.rows == x.rows, op, "x and y must have a row per token");
    detail::require(at >= 0 && at + p.n_dims <= y_head, op,
                    "the rotated dims at " + std::to_string(at) + " do not fit y's heads of " + std::to_string(y_head));
    const uint64_t pos_offset = detail::checked_vector(positions, TensorType::I32, x.rows, op, "positions");
    RopeOut out;
    out.y = y.buffer;
    out.y_offset = y_offset + uint64_t(at);
    out.y_token_stride = uint64_t(y.stride());
    out.y_head_stride = uint64_t(y_head);
    // From the first head's rotated dims up to the last head's.
    out.y_span = x.rows ? uint64_t(x.rows - 1) * out.y_token_stride + uint64_t(n_heads - 1) * uint64_t(y_head) +
                              uint64_t(p.n_dims)
                        : 0;
    const uint64_t x_span = x.rows ? uint64_t(x.rows - 1) * uint64_t(x.stride()) + uint64_t(x.cols) : 0;
    detail::require(x.buffer != y.buffer || out.y_offset + out.y_span <= x_offset || x_offset + x_span <= out.y_offset,
                    op, "x and y overlap in the same buffer");
    record_rope(s, *x.buffer, x_offset, *positions.buffer, pos_offset, x.rows, n_heads, head_dim, p, freq_factors,
                x.stride(), out, op);
}

void rope_into_slots(Stream& s, const TensorView& x, int n_heads, const TensorView& positions, const RopeParams& p,
                     const Buffer* freq_factors, const KvView& cache) {
    const char* op = "rope_into_slots";
    const uint64_t x_offset = detail::checked_f32(x, op, "x");
    detail::require_packed(x, op, "x");
    detail::require_kv(cache, op, "cache");
    detail::require(cache.row == x.cols, op,
                    "cache rows of " + std::to_string(cache.row) + " values do not match x's " + std::to_string(x.cols) +
                        " columns");
    const int head_dim = head_dim_of(x, n_heads, op, "x");
    const uint64_t pos_offset = detail::checked_vector(positions, TensorType::I32, x.rows, op, "positions");
    RopeOut out;
    out.cache = cache.buffer;
    out.slots = cache.slots;
    out.cache_type = cache.type;
    record_rope(s, *x.buffer, x_offset, *positions.buffer, pos_offset, x.rows, n_heads, head_dim, p, freq_factors, 0,
                out, op);
}

void rope_qkv_into_slots(Stream& s, const TensorView& q_view, int n_heads_q, const TensorView& k_view, int n_heads_kv,
                         const TensorView& v_view, const TensorView& positions_view, const RopeParams& p,
                         const Buffer* freq_factors, const KvView& k_cache_view, const KvView& v_cache_view) {
    const char* op = "rope_qkv_into_slots";
    const int64_t n_tokens = q_view.rows;
    const uint64_t q_offset = detail::checked_f32(q_view, op, "q");
    const uint64_t k_offset = detail::checked_f32(k_view, op, "k");
    const uint64_t v_offset = detail::checked_f32(v_view, op, "v");
    detail::require(q_view.packed() && k_view.packed() && v_view.packed(), op, "q, k and v must have packed rows");
    detail::require(k_view.rows == n_tokens && v_view.rows == n_tokens, op,
                    "q, k and v must have a row per token, got " + std::to_string(n_tokens) + ", " +
                        std::to_string(k_view.rows) + " and " + std::to_string(v_view.rows));
    const int head_dim = head_dim_of(q_view, n_heads_q, op, "q");
    detail::require(head_dim_of(k_view, n_heads_kv, op, "k") == head_dim, op, "q and k must have one head width");
    detail::require_kv(k_cache_view, op, "k cache");
    detail::require_kv(v_cache_view, op, "v cache");
    detail::require(k_cache_view.row == k_view.cols && v_cache_view.row == v_view.cols, op,
                    "the caches' rows must be k's and v's");
    detail::require(k_cache_view.slots == v_cache_view.slots && k_cache_view.type == v_cache_view.type, op,
                    "the k and v caches must have one slot count and one type");
    const uint64_t pos_offset = detail::checked_vector(positions_view, TensorType::I32, n_tokens, op, "positions");
    const Buffer &q = *q_view.buffer, &k = *k_view.buffer, &v = *v_view.buffer, &positions = *positions_view.buffer;
    const Buffer &k_cache = *k_cache_view.buffer, &v_cache = *v_cache_view.buffer;
    const int64_t v_row = v_view.cols, slots = k_cache_view.slots;
    const KvCacheType cache_type = k_cache_view.type;
    detail::require(n_tokens >= 0 && n_heads_q > 0 && n_heads_kv > 0 && head_dim > 0 && v_row > 0 && slots > 0, op,
                    "needs n_tokens >= 0 and positive heads, head_dim, v_row and slots");
    require_rope_params(p, head_dim, op);
    detail::require(cache_type != KvCacheType::Q8_0, op, "writes f32 or f16 caches");
    if (n_tokens == 0) return;
    const uint64_t T = uint64_t(n_tokens), q_row = uint64_t(n_heads_q) * uint64_t(head_dim),
                   k_row = uint64_t(n_heads_kv) * uint64_t(head_dim), vr = uint64_t(v_row);
    const uint64_t pairs = uint64_t(p.n_dims / 2);
    const uint64_t total = T * (uint64_t(n_heads_q) + uint64_t(n_heads_kv)) * pairs +
                           T * uint64_t(n_heads_kv) * uint64_t(head_dim - p.n_dims) + T * vr;
    detail::require(total <= 0xffffffffull && uint64_t(slots) * std::max(k_row, vr) <= 0xffffffffull, op,
                    "too many values for one dispatch");

    gpu::Context& ctx = s.context();
    require_cache_type(ctx, cache_type, int64_t(k_row), op);
    const detail::Window qw = detail::window(ctx, q, q_offset, T * q_row, op, "q");
    const detail::Window pw = detail::window(ctx, positions, pos_offset, T, op, "positions");
    const detail::Window fw = freq_factors ? detail::window(ctx, *freq_factors, 0, pairs, op, "freq_factors") : pw;
    const detail::Window kw = detail::window(ctx, k, k_offset, T * k_row, op, "k");
    const detail::Window vw = detail::window(ctx, v, v_offset, T * vr, op, "v");
    const detail::Window kcw = detail::cache_window(ctx, k_cache, uint64_t(slots) * k_row, cache_type, op, "k cache");
    const detail::Window vcw = detail::cache_window(ctx, v_cache, uint64_t(slots) * vr, cache_type, op, "v cache");

    RopeQkvPush push{};
    push.n_tokens = uint32_t(T);
    push.n_heads_q = uint32_t(n_heads_q);
    push.n_heads_kv = uint32_t(n_heads_kv);
    push.head_dim = uint32_t(head_dim);
    push.n_pairs = uint32_t(pairs);
    push.v_row = uint32_t(vr);
    push.slots = uint32_t(slots);
    push.q_shift = qw.shift;
    push.pos_shift = pw.shift;
    push.ff_shift = freq_factors ? fw.shift : 0u;
    push.k_shift = kw.shift;
    push.v_shift = vw.shift;
    push.kc_shift = kcw.shift;
    push.vc_shift = vcw.shift;
    push.angle = rope_angle(p, freq_factors != nullptr);

    const uint32_t threads = detail::workgroup_size(ctx, 128);
    const uint32_t groups =
        uint32_t(std::clamp<uint64_t>((total + threads - 1) / threads, 1, ctx.caps().max_workgroup_count[0]));
    const gpu::ShaderId shader = cache_type == KvCacheType::F16 ? gpu::ShaderId::rope_qkv_f16 : gpu::ShaderId::rope_qkv;
    const auto& pipeline = ctx.pipeline(shader, 7, sizeof(push), {threads});
    s.dispatch(pipeline, {qw.range, pw.range, fw.range, kw.range, vw.range, kcw.range, vcw.range}, push, groups);
}

}  // namespace vkllm::ops
