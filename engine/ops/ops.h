// GPU ops: one C++ function per shader family. Each checks shapes, fills push constants, picks a
// variant from the device's capabilities and records a dispatch into a Stream. No op waits for
// the GPU or inserts barriers: the caller orders dependent ops with Stream::barrier.
//
// Conventions: activations are float32, row-major; `[n_tokens, n]` is n_tokens rows of n.
// Weights use ggml's layout: {n_in, n_out} is n_out rows of n_in elements, quantised per row.
// Operands are TensorViews (tensor_view.h) and KV caches KvViews; a view may start at any element
// of its buffer, so callers never need to respect the device's binding-offset alignment. Each op
// checks its views' types, shapes and bounds and names the op and the operand that is wrong.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>

#include "core/attention.h"
#include "core/router.h"
#include "gguf/gguf.h"
#include "gpu/buffer.h"
#include "gpu/stream.h"
#include "ops/tensor_view.h"
#include "vkllm/device.h"
#include "vkllm/kv_cache_type.h"

namespace vkllm::ops {

using gpu::Buffer;
using gpu::Stream;
using gguf::TensorType;

// Bad shapes or arguments given to an op: the message names the op and the offending value.
struct ShapeError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A weight matrix resident on the GPU.
struct Weight {
    TensorType type = TensorType::F32;
    const Buffer* buffer = nullptr;  // raw GGUF bytes of the tensor, starting at `offset`
    int64_t n_in = 0;                // row length (elements)
    int64_t n_out = 0;               // number of rows
    uint64_t offset = 0;             // byte offset of row 0 in buffer (a multiple of 4)
    // The bytes are in grouped-block order (group_blocks; Q4_0, Q8_0, Q6_K), and offset is a
    // multiple of 16.
    bool grouped = false;
};

// Grouped blocks: each 8 consecutive blocks of a Q4_0, Q8_0 or Q6_K row stored as their 8 f16
// scales and then their 8 payloads (each block's other bytes), so that every payload is 16-byte
// aligned and read with wide loads by the shaders (shaders/include/dequant.glsl). The same bytes,
// rearranged within each row: a row's size does not change. For rows of 8 whole blocks
// (Q4_0/Q8_0: a multiple of 256 elements; Q6_K: of 2048).
bool can_group_blocks(TensorType t, int64_t n_in);
// n_rows rows of type t (GGUF's block order in `src`) in grouped-block order into `dst` (the same
// size; src and dst must not overlap); ungroup_blocks undoes it. std::invalid_argument unless
// can_group_blocks(t, n_in).
void group_blocks(TensorType t, int64_t n_in, int64_t n_rows, const uint8_t* src, uint8_t* dst);
void ungroup_blocks(TensorType t, int64_t n_in, int64_t n_rows, const uint8_t* src, uint8_t* dst);
// Where a row with grouped blocks keeps block `ib`'s f16 scale and its payload (the block's
// other bytes in order), in bytes from the row's start, and where the scale sits in the file's
// block (0, or Q6_K's 208).
struct GroupedBlockPlace {
    uint64_t scale = 0, quants = 0;
    uint64_t scale_in_block = 0;
};
GroupedBlockPlace grouped_block_place(TensorType t, int64_t ib);
// Whether a model uploads the weights that can take it with grouped blocks: on GPUs, not on a CPU
// driver (lavapipe decoded zoo-wide's Q8_0 20% slower with them: its loads are a core's, where
// the address arithmetic costs more than the unaligned words); VKLLM_GROUPED_BLOCKS=0|1 forces it
// either way. Not yet measured on a GPU.
bool group_blocks_on_upload(const DeviceCapabilities& caps);

// True when a weight of this type can be used by matmul/get_rows on the GPU.
bool gpu_supports(TensorType t);
// Bytes to allocate for a weight's buffer: its rows rounded up to whole 32-bit words (shaders
// read words, and a tensor such as Q6_K can end mid-word). matmul/get_rows reject smaller buffers.
uint64_t weight_buffer_bytes(TensorType t, int64_t n_in, int64_t n_out);

// y[t, o] = sum_i W[o, i] * x[t, i]  (+ y[t, o] when accumulate: the residual add fused in).
// x: f32 [n_tokens, w.n_in] with packed rows; y: f32 [n_tokens, w.n_out], any row stride (a
// slice of wider rows). One token takes the matrix-vector path; more take the tiled matrix path.
// x and y must not overlap. A weight larger than one binding (maxStorageBufferRange, or
// VKLLM_MAX_BINDING_BYTES when that is smaller: a hook for tests) is split into row windows.
// round_x: the one-token matvec rounds x itself exactly as round_activations() with
// activation_rounding(w.type) would (matvec_rounds_activations(w.type) must hold, and n_tokens
// must be 1): decode then needs no rounding dispatch and barrier before its matmuls.
// norm (one token only): x is the raw residual stream and the matvec reads
// rms_norm(x) * norm->weight instead, as rms_norm would have written it (see MatvecNorm).
struct MatvecNorm;
void matmul(Stream& s, const Weight& w, const TensorView& x, const TensorView& y, bool accumulate = false,
            bool round_x = false, const MatvecNorm* norm = nullptr);

// Decode's pre-norm fused into the matvecs that read it (matmul with one token, matvec_swiglu):
// each workgroup computes inv = 1 / sqrt(mean(x^2) + eps) over x itself and reads
// (x * inv) * weight, which saves the norm's dispatch, its barrier and its output's trip through
// memory. The values equal rms_norm's up to the order of the x^2 sum (bit-equal where the
// matvec's workgroup size is the norm's). weight: n_in floats from element `offset`.
struct MatvecNorm {
    const Buffer* weight = nullptr;
    uint64_t offset = 0;
    float eps = 0.0f;
};

// How llama.cpp's CPU backend rounds activations before a dot product with a weight of a given
// type (ggml's vec_dot_type): quantised weights see activations quantised to 8 bits in blocks
// of 32 (Q8_0/Q8_1) or 256 (Q8_K); F16 and BF16 weights see activations rounded to their type.
// Rounding the same way makes vkllm's logits match llama.cpp's to ~1e-6 on quantised files
// instead of ~1e-1.
enum class ActRounding { None, Q8_32, Q8_256, F16, BF16 };
ActRounding activation_rounding(TensorType weight_type);
// One token's gated FFN input in one dispatch: y[o] = act(gate x)[o] * (up x)[o], for gate and
// up of one type and shape held in the same buffer (gate first: Weights uploads a gated FFN's
// pair that way) and both within one binding: each workgroup reads the same rows of both
// matrices against one load of x. act is swiglu's silu or geglu's gelu (fp16_table: as
// geglu(..., fp16_table)); the result equals matmul, matmul and that op bit for bit. round_x as
// in matmul. matvec_swiglu_fits says whether a pair can take this path; ShapeError otherwise.
enum class GluActivation { SiLU, Gelu, GeluFp16Table };
// Views: x f32 [1, n_in], y f32 [1, n_out].
bool matvec_swiglu_fits(const gpu::Context& ctx, const Weight& gate, const Weight& up);
void matvec_swiglu(Stream& s, const Weight& gate, const Weight& up, const TensorView& x, const TensorView& y,
                   bool round_x = false, GluActivation act = GluActivation::SiLU, const MatvecNorm* norm = nullptr);

// True when matmul(..., round_x = true) can round a single token's activations for this weight
// type inside the matvec: the 32-element blocks (Q4_0/Q4_1/Q5_0/Q5_1/Q8_0/MXFP4) and the
// per-element roundings (F16, BF16). Q8_K's blocks of 256 span threads: rounded beforehand.
bool matvec_rounds_activations(TensorType weight_type);
int64_t rounding_block(ActRounding mode);
// y = x rounded per `mode`: x, y f32 [n_rows, n] with packed rows; n a multiple of the block.
void round_activations(Stream& s, const TensorView& x, const TensorView& y, ActRounding mode);

// Activations quantized once for the decode matvecs that read them (quantize_activations), in
// llama.cpp's activation blocks for the weight's vec_dot_type: Q8_32 (block_q8_0: int8 quants
// and an f32 scale per 32, with each block's quant sum for the types with a bias or minimum)
// or Q8_256 (block_q8_K: a scale per 256 and the quant sums of every 16). The rounded
// activation is scale * quant, round_activations' value bit for bit. In `buffer` from byte
// `offset` (a multiple of 16), three streams, each starting on 16 bytes:
//   quants  rows * n int8, element e of row t at byte t * n + e (so 16 bytes load as a uvec4)
//   scales  rows * n / block f32 (block 32 or 256)
//   sums    rows * n / group int32 (group 32, or 16 for Q8_256)
struct QuantizedActs {
    const Buffer* buffer = nullptr;
    uint64_t offset = 0;
    ActRounding mode = ActRounding::Q8_32;
    int64_t rows = 0, n = 0;

    int64_t block() const { return rounding_block(mode); }
    int64_t sum_group() const { return mode == ActRounding::Q8_256 ? 16 : 32; }
    uint64_t scales_offset() const;  // bytes, from the start of the buffer
    uint64_t sums_offset() const;
    uint64_t bytes() const;  // from `offset` to the end of the sums
};
// A checked QuantizedActs over b from byte `offset`: mode Q8_32 or Q8_256, n a multiple of its
// block, all three streams within b. Throws ShapeError otherwise.
QuantizedActs quantized_acts(const Buffer& b, ActRounding mode, int64_t rows, int64_t n, uint64_t offset = 0);
// out = x quantized per out.mode (x: f32 [out.rows, out.n], packed). norm (one row only): x is
// the raw residual stream and rms_norm(x) * norm->weight is quantized, the norm computed as
// rms_norm computes it (so the result is rms_norm's output quantized, bit for bit).
void quantize_activations(Stream& s, const TensorView& x, const QuantizedActs& out, const MatvecNorm* norm = nullptr);
// True when a one-token matvec of this weight type can read quantize_activations' output
// (matvec_quantized): the types of 8-bit activation blocks whose dot reads each element of x
// once (Q8_0, Q4_0/1, Q5_0/1, MXFP4, IQ4_NL; Q2_K..Q6_K, IQ4_XS).
bool matvec_reads_quantized(TensorType weight_type);
// y = w x for one token with x quantized beforehand (x.mode must be activation_rounding(w.type),
// x.rows 1): matmul(..., round_x)'s result up to float summation order, without re-rounding x
// in every workgroup; the int8-dot types dot the quants in integers where the device has the
// integer dot product (Capabilities::integer_dot_matvec). y: f32 [1, w.n_out].
void matvec_quantized(Stream& s, const Weight& w, const QuantizedActs& x, const TensorView& y, bool accumulate = false);
// matvec_swiglu with x quantized beforehand (gate and up as matvec_swiglu_fits takes them).
void matvec_swiglu_quantized(Stream& s, const Weight& gate, const Weight& up, const QuantizedActs& x,
                             const TensorView& y, GluActivation act = GluActivation::SiLU);

// y = [W1; W2; W3] x for one token in one dispatch (decode's Q, K and V): the rows of two or three
// matrices of one type and row length, lying anywhere in one buffer, one after another in y
// (f32 [1, total rows]); each row as matmul's one-token matvec computes it at the same workgroup
// shape (round_x and norm as there). matvec_stack_fits says whether ws can take this path (one
// buffer, the span from the lowest matrix to the highest within one binding); ShapeError otherwise.
bool matvec_stack_fits(const gpu::Context& ctx, std::span<const Weight* const> ws);
void matvec_stacked(Stream& s, std::span<const Weight* const> ws, const TensorView& x, const TensorView& y,
                    bool round_x = false, const MatvecNorm* norm = nullptr);
// matvec_stacked with x quantized beforehand (as matvec_quantized reads it).
void matvec_stacked_quantized(Stream& s, std::span<const Weight* const> ws, const QuantizedActs& x,
                              const TensorView& y);

// out[t, :] = dequant(table row ids[t])   ids: int32 [n]; out: f32 [n, table.n_in], packed rows.
void get_rows(Stream& s, const Weight& table, const TensorView& ids, const TensorView& out);

// y = x / sqrt(mean(x^2) + eps) * w   (w optional: nullptr = no weight), per row. x, y: f32
// views of one shape and one row stride (per-head norms, QK-norm, work in place on
// [n_tokens, n_heads, head_dim] with rows of head_dim); they may be the same.
void rms_norm(Stream& s, const TensorView& x, const Buffer* w, const TensorView& y, float eps);

struct RopeParams {
    int n_dims = 0;         // rotated dimensions per head (<= head_dim)
    bool neox = false;      // pair i with i + n_dims/2 (NeoX); else pairs (2i, 2i+1)
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;   // linear scaling: 1/factor
    // YaRN (ggml's rope_yarn); ext_factor 0 disables it.
    float ext_factor = 0.0f, attn_factor = 1.0f, beta_fast = 32.0f, beta_slow = 1.0f;
    int n_ctx_orig = 0;
};

// In place on x: f32 [n_tokens, n_heads * head_dim] (a token's heads side by side), any row
// stride (a slice of wider rows). positions: int32 [n_tokens].
// freq_factors: optional float [n_dims/2] divisors of each pair's frequency (Llama 3 / LongRoPE).
void rope(Stream& s, const TensorView& x, int n_heads, const TensorView& positions, const RopeParams& p,
          const Buffer* freq_factors = nullptr);
// The rotation rope gives x's heads, x left as it is, with only the n_dims rotated values of each
// head written into y (f32 [n_tokens, n_heads * y_head], rows at any stride): head h of token
// t's at y[t, h * y_head + at ...], at + n_dims <= y_head, the rest of y untouched. MLA's q_rope
// straight into the attention queries' [q_abs | q_rope] rows. x and y must not overlap.
void rope_into(Stream& s, const TensorView& x, int n_heads, const TensorView& positions, const RopeParams& p,
               const Buffer* freq_factors, const TensorView& y, int at);
// A KV cache's element type (KvCacheType, never Auto here). The shaders read and write f32
// values: F16 is stored with 16-bit storage (caps().storage_16bit), each value rounded to nearest
// even on its way in; Q8_0 keeps blocks of 32 values as 9 words (the fp16-valued scale as an f32
// word, then 32 int8 quants, quantised as ggml's Q8_0), so its rows hold a multiple of 32 values.
// Bytes of n cached values (Q8_0: n a multiple of 32).
uint64_t cache_bytes(KvCacheType t, uint64_t n);
// Throws ShapeError naming `op` when t is Auto, when the device cannot hold a cache of type t,
// or (Q8_0) when rows of `row` values are not whole blocks.
void require_cache_type(const gpu::Context& ctx, KvCacheType t, int64_t row, const char* op);

// The same rotation of x (f32 [n_tokens, n_heads * head_dim], packed rows, not modified) written
// into a cache whose rows are x's (F32 or F16): token t's row goes to slot positions[t] % slots
// (positions >= 0), the dims past n_dims copied as they are. RoPE and the KV-cache write in one
// dispatch.
void rope_into_slots(Stream& s, const TensorView& x, int n_heads, const TensorView& positions, const RopeParams& p,
                     const Buffer* freq_factors, const KvView& cache);
// Decode's q, k and v in one dispatch: q (f32 [n_tokens, n_heads_q * head_dim]) rotated in place,
// k (f32 [n_tokens, n_heads_kv * head_dim]) rotated into k_cache's slots and v (f32 [n_tokens,
// v_cache.row]) copied into v_cache's: rope, rope_into_slots and set_rows_into_slots at once,
// with the same values. Packed rows; F32 or F16 caches of one type and one slot count.
void rope_qkv_into_slots(Stream& s, const TensorView& q, int n_heads_q, const TensorView& k, int n_heads_kv,
                         const TensorView& v, const TensorView& positions, const RopeParams& p,
                         const Buffer* freq_factors, const KvView& k_cache, const KvView& v_cache);
// The KV-cache write without a rotation: row t of src (f32 [n_tokens, dst.row], rows at any stride) to
// row positions[t] % dst.slots of dst (positions >= 0). The slots come from the positions
// buffer, so the recording does not depend on the step's position.
void set_rows_into_slots(Stream& s, const TensorView& src, const TensorView& positions, const KvView& dst);

// Attention of n_q queries over n_kv cached keys/values, as p describes (core/attention.h).
//   q:   f32 [n_q, n_head * head_dim], packed rows     q_pos: int32 [n_q], absolute positions,
//        from its buffer's start
//   k,v: caches of one type (F32, F16 or Q8_0) with rows of n_head_kv * head_dim (v: head_dim_v)
//        and at least n_kv slots        kv_pos: int32 [n_kv] from its buffer's start, the position
//        held by each slot (-1: empty), so ring-buffer caches work unchanged
//   out: f32 [n_q, n_head * head_dim_v] from its buffer's start
//   sinks: optional float [n_head]: a learned logit per head that joins the softmax denominator
//   probs: optional float [n_q, n_head, n_kv]: the attention probabilities (probes); with sinks
//        followed by [n_q, n_head]: the sink's probability of each row (rows + sink sum to 1)
//   scratch: optional. With it, few queries over a long cache are split over the keys (split-K:
//        partial softmax per key range, then a combine pass), which keeps a large GPU busy during
//        decode; without it one workgroup walks all keys per (query block, head block). Pass one
//        of attention_scratch_bytes(ctx, 1, n_ctx, p) bytes for decode; a smaller one splits less.
// Records one dispatch, or two with a barrier between them when split. Positions must be >= 0;
// a slot with a negative kv_pos is empty. Heads as wide as shared memory allows (576 tested: MLA).
void attention(Stream& s, const TensorView& q, const TensorView& q_pos, const KvView& k, const KvView& v,
               const TensorView& kv_pos, const TensorView& out, const AttentionParams& p, const Buffer* sinks = nullptr,
               const Buffer* probs = nullptr, const Buffer* scratch = nullptr);
// Bytes of scratch that lets attention() split n_q queries over n_kv keys as far as it would on
// this device (0: it would not split). Calls with probabilities never split.
uint64_t attention_scratch_bytes(const gpu::Context& ctx, int64_t n_q, int64_t n_kv, const AttentionParams& p);

// Elementwise ops take f32 views of one shape with packed rows; out may alias an input.
// out = silu(gate) * up.
void swiglu(Stream& s, const TensorView& gate, const TensorView& up, const TensorView& out);
// gpt-oss's clamped SwiGLU: g = min(gate, limit), u = clamp(up, -limit, limit),
// out = g * sigmoid(alpha g) * (u + 1). gpt-oss: 1.702, 7.
void swiglu_oai(Stream& s, const TensorView& gate, const TensorView& up, const TensorView& out, float alpha,
                float limit);
// out = a + b.
void add(Stream& s, const TensorView& a, const TensorView& b, const TensorView& out);
// Row softmax of scale * x into y: f32 [n_rows, n], packed rows.
void softmax(Stream& s, const TensorView& x, const TensorView& y, float scale = 1.0f);
// out[r] = index of the largest value in row r of x: f32 [n_rows, n] (lowest index on ties).
// out: int32 [n_rows].
void argmax(Stream& s, const TensorView& x, const TensorView& out);
// dst = src (f32 [n_rows, n], packed rows), and per row r flags[2r] += the number of NaN or
// infinite values, flags[2r + 1] = min(itself, the index of the first one): the caller sets
// flags (from its buffer's start) to {0, 0xffffffff} per row before the stream is submitted.
// The read-back of logits and embeddings, checked without a second pass over them.
void copy_checked(Stream& s, const TensorView& src, const TensorView& dst, const Buffer& flags);

// --- Ops for the GPT-2 / Gemma / Phi / BERT-style families -----------------------------------

// LayerNorm: y = (x - mean) / sqrt(var + eps) * w + b, var the biased (1/n) variance; w and b
// optional (nullptr). x, y as rms_norm's.
void layer_norm(Stream& s, const TensorView& x, const Buffer* w, const Buffer* b, const TensorView& y, float eps);
// y = gelu(x), tanh approximation (GPT-2); elementwise as swiglu. fp16_table: as llama.cpp's
// CPU backend computes it, from a table of fp16 values (x and the result rounded to fp16;
// x <= -10 gives 0, x >= 10 gives x), for logit parity.
void gelu(Stream& s, const TensorView& x, const TensorView& y, bool fp16_table = false);
// y = 0.5 x (1 + erf(x / sqrt 2)) (exact GELU).
void gelu_erf(Stream& s, const TensorView& x, const TensorView& y);
// out = gelu(gate) * up (tanh approximation); fp16_table as for gelu.
void geglu(Stream& s, const TensorView& gate, const TensorView& up, const TensorView& out, bool fp16_table = false);
// In place on x (f32, packed rows): x = cap * tanh(x / cap) (Gemma 2 soft-capping); cap > 0.
void softcap(Stream& s, const TensorView& x, float cap);
// In place on x (f32, packed rows): x *= factor.
void scale(Stream& s, const TensorView& x, float factor);
// x[t, :] += bias for every row of x (f32 [n_rows, n], any row stride); bias: f32 [n].
void add_bias(Stream& s, const TensorView& x, const TensorView& bias);

// --- Mixture of experts -------------------------------------------------------------------------
// Routing, grouping and the expert FFN stay on the GPU, with no readback. A MoE FFN records
//   moe_route -> moe_sort (for the tiled path) -> moe_matmul (gate) and moe_matmul (up)
//   -> swiglu over [n_tokens * top_k, n_ff] -> moe_matmul (down, x_per_pair) -> moe_combine
// with a barrier between dependent steps. A (token, slot) pair is p = token * top_k + slot.

// The router: core/router.h's rule (cpu::route is the reference) for n_expert in
// 1..kMaxExperts, with the selection bias on the GPU.
struct RouterParams : RouterRule {
    const Buffer* selection_bias = nullptr;  // float [n_expert] or null (DeepSeek V3)
};
inline constexpr int kMaxExperts = 512;

// logits: f32 [n_tokens, n_expert], packed rows -> experts: int32 [n_tokens, top_k],
// weights: f32 [n_tokens, top_k], both from their buffers' starts. One workgroup per token.
void moe_route(Stream& s, const TensorView& logits, const RouterParams& p, const TensorView& experts,
               const TensorView& weights);

// Counting sort of the pairs by expert. experts: int32 [n_pairs] (moe_route's output, n_pairs =
// n_tokens * top_k); sorted: int32 [moe_sort_ints(n_expert, n_pairs)], both from their buffers'
// starts, filled with
//   [0, n_expert)                  counts: pairs routed to each expert
//   [n_expert, 2 n_expert + 1)     offsets: exclusive prefix sums of the counts (last: the total)
//   [2 n_expert + 1, + n_pairs)    pair indices grouped by expert, ascending (token, then slot)
// Ids outside [0, n_expert) are left out. One workgroup.
uint64_t moe_sort_ints(int n_expert, int64_t n_pairs);
void moe_sort(Stream& s, const TensorView& experts, int n_expert, const TensorView& sorted);

// The experts' matrices: one 3-D GGUF tensor {n_in, n_out, n_expert}; expert e's matrix is rows
// [e n_out, (e + 1) n_out) in ggml's layout, from byte `offset` of the buffer (a multiple of 4).
// Any type gpu_supports(); the buffer holds at least weight_buffer_bytes(type, n_in, n_out *
// n_expert) bytes after offset.
struct ExpertWeights {
    TensorType type = TensorType::F32;
    const Buffer* buffer = nullptr;
    int64_t n_in = 0, n_out = 0, n_expert = 0;
    const Buffer* bias = nullptr;  // float [n_expert, n_out] or null (gpt-oss's expert biases)
    uint64_t offset = 0;
    bool grouped = false;  // as Weight::grouped
};

// A routed batch as the expert ops read it.
struct MoeRouting {
    const Buffer* experts = nullptr;  // int32 [n_tokens, top_k] (moe_route)
    const Buffer* weights = nullptr;  // float [n_tokens, top_k] (moe_route)
    const Buffer* sorted = nullptr;   // moe_sort's output for these pairs, or null
    int64_t n_tokens = 0;
    int top_k = 0;
};

// y[p, :] = W_{experts[p]} x[row(p), :] (+ bias[experts[p], :]) for every pair p, row(p) = p / top_k
// (x: f32 [n_tokens, n_in], the tokens' inputs) or, with x_per_pair, p (x: [n_tokens * top_k, n_in]).
// y: f32 [n_tokens * top_k, n_out]. Few tokens (or no sort) take a matrix-vector product per pair,
// indirect on the expert id, and x and y rows at any stride (a slice of wider rows: MLA's q_nope
// of each head in, its absorbed query into the attention query's row); more take tiles over
// each expert's sorted pairs, on packed rows (pass
// r.sorted from moe_sort with n_expert = w.n_expert). x and y must not overlap and must each fit
// one binding (route fewer tokens per call otherwise); the weights are split into windows.
// round_x (the matrix-vector path only: r.sorted null): x is rounded in the shader as
// activation_rounding(w.type) would round it (matvec_rounds_activations(w.type) must hold).
void moe_matmul(Stream& s, const ExpertWeights& w, const TensorView& x, bool x_per_pair, const MoeRouting& r,
                const TensorView& y, bool round_x = false);

// The experts' SwiGLU input in one dispatch (few tokens: MoE decode), y[p, :] =
// silu(W_gate,e x) * (W_up,e x) for e = experts[p], equal to moe_matmul of gate and of up and
// then swiglu. Gate and up must be one type and shape without bias, in one buffer (up after gate),
// every expert of both within one binding (moe_matvec_swiglu_fits); x and y as moe_matmul's.
bool moe_matvec_swiglu_fits(const gpu::Context& ctx, const ExpertWeights& gate, const ExpertWeights& up);
void moe_matvec_swiglu(Stream& s, const ExpertWeights& gate, const ExpertWeights& up, const TensorView& x,
                       bool x_per_pair, const MoeRouting& r, const TensorView& y, bool round_x = false);

// The expert matvecs (moe_matmul's matrix-vector path, moe_matvec_swiglu) with x quantized
// beforehand (quantize_activations of the tokens' inputs, or with x_per_pair the pairs': x.rows
// of them, packed): every workgroup reads the quants instead of rounding x again, and the
// int8-dot types dot them in integers where the device has the integer dot product (as
// matvec_quantized). x.mode must be activation_rounding(w.type) for a type
// matvec_reads_quantized takes; y as moe_matmul's (rows at any stride); r needs no sort.
void moe_matvec_quantized(Stream& s, const ExpertWeights& w, const QuantizedActs& x, bool x_per_pair,
                          const MoeRouting& r, const TensorView& y);
void moe_matvec_swiglu_quantized(Stream& s, const ExpertWeights& gate, const ExpertWeights& up,
                                 const QuantizedActs& x, bool x_per_pair, const MoeRouting& r, const TensorView& y);

// Weighted sum of the pairs' outputs: out[t, :] (+)= sum_k weights[t, k] y[t * top_k + k, :].
// y: f32 [n_tokens * top_k, n], out: f32 [n_tokens, n], packed rows; accumulate adds to out (the
// residual add fused in). out must not overlap y.
void moe_combine(Stream& s, const TensorView& y, const MoeRouting& r, const TensorView& out, bool accumulate = false);

// Llama 4: out[p, :] = weights[p] * x[p / top_k, :] — each pair's expert input scaled by its gate
// weight (feed to moe_matmul with x_per_pair). x: f32 [n_tokens, n]; out: f32 [n_pairs, n] from
// its buffer's start; packed rows.
void moe_weighted_input(Stream& s, const TensorView& x, const MoeRouting& r, const TensorView& out);

// Expert-load probe: load: f32 [n_expert, 2] = (pairs routed to expert e, sum of their weights);
// accumulate adds to the values already there (counting over several steps).
void moe_expert_load(Stream& s, const MoeRouting& r, const TensorView& load, bool accumulate = false);

// --- Residual-stream edits (interventions) ---------------------------------------------------

// One edit of a channel, laid out as the shader reads it (16 bytes).
struct ChannelEdit {
    enum Mode : uint32_t { Zero = 0, Value = 1, Scale = 2, Mean = 3 };
    uint32_t channel = 0;
    uint32_t mode = Zero;
    float value = 0;   // Value: the value set; Scale: the factor
    uint32_t unused = 0;
};
// Applies edits[first .. first + n_edits) in order to every row of x (f32 [n_tokens, n], packed rows):
//   Zero: x[t, c] = 0; Value: x[t, c] = value; Scale: x[t, c] *= value;
//   Mean: state[2 e] += sum_t x[t, c], state[2 e + 1] += n_tokens, then x[t, c] = their ratio
//         (the running mean of the channel over every call since the state was zeroed).
// edits: ChannelEdit array; state: float [2 * total edits], zeroed by the caller to start over.
// One dispatch (one workgroup).
void residual_edit(Stream& s, const TensorView& x, const Buffer& edits, int first, int n_edits, const Buffer& state);

// One super-weight correction (vkllm quantize --keep-super-weights), as the shader reads it (16
// bytes): the exact weight minus the weight as quantised, at down_proj.weight[row, col].
struct SuperCorrection {
    uint32_t row = 0;  // output channel
    uint32_t col = 0;  // input channel
    float delta = 0;
    uint32_t unused = 0;
};
// y[t, row] += delta * a[t, col] for every token t and every correction, in order: a down
// projection's output y (f32 [n_tokens, n_out], or the residual stream it was added to) made equal
// to the product with the exact super weights. a (f32 [n_tokens, n_in]) is the projection's input.
// Packed rows. Rows and columns must lie inside n_out and n_in (checked where the corrections are
// built). One dispatch.
void super_correction(Stream& s, const TensorView& y, const TensorView& a, const Buffer& corrections,
                      int n_corrections);

}  // namespace vkllm::ops
