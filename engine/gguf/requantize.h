// Rewriting a GGUF file's weights in another tensor type (`vkllm quantize`).
//
// Policy (llama-quantize's, without its per-model type mixes): only tensors with 2 or more
// dimensions whose name ends in "weight" are converted; norms, MoE routers, position and
// token-type embeddings and convolution kernels keep their type. A tensor whose row length is
// not a multiple of the target's block falls back as llama.cpp does (Q2_K/Q3_K -> Q4_0,
// Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0) and, if that does not fit either, to F16.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "vkllm/imatrix.h"

namespace vkllm::gguf {

// A super weight kept exactly (vkllm quantize --keep-super-weights): element [row, col] of
// blk.LAYER.ffn_down.weight (row: output channel, col: input channel). The file stores the
// weight quantised like its block-mates and these corrections in its metadata (never as extra
// tensors, which llama.cpp refuses); vkllm's loader adds delta * input[col] to output[row] after
// ffn_down. Keys: vkllm.super_weight.{layer,row,col} (INT32 arrays), .value (the exact weight)
// and .delta (exact minus stored), FLOAT32 arrays of the same length.
struct SuperWeightCorrection {
    int layer = 0;
    int64_t row = 0, col = 0;
    float value = 0;  // the exact weight
    float delta = 0;  // value - the weight as quantised in the file
};
// The corrections of a file (empty when it has none). Throws FormatError when the keys are
// partly present, of different lengths or not finite.
std::vector<SuperWeightCorrection> read_super_weight_corrections(const File& in);

struct TensorConversion {
    std::string name;
    TensorType from;
    TensorType to;
    std::string note;  // why it kept its type or fell back; empty for a plain conversion
};

struct Requantized {
    Writer writer;  // metadata and tensors of the new file
    std::vector<TensorConversion> tensors;
    uint64_t bytes_in = 0;
    uint64_t bytes_out = 0;
    std::vector<SuperWeightCorrection> kept;  // with KeepSuperWeights: in the order given
    uint64_t clipped = 0;                     // weights clipped (KeepSuperWeights::clip_sigmas)
};

// The type `tensor` gets when a file is converted to `target` (see the policy above).
TensorConversion plan_conversion(const TensorInfo& tensor, TensorType target);

// What requantize does to ffn_down around its super weights.
struct KeepSuperWeights {
    struct Coordinate {
        int layer = 0;
        int64_t row = 0, col = 0;
    };
    std::vector<Coordinate> weights;  // dense ffn_down only
    // Before quantisation, the weights of every dense ffn_down other than the super weights are
    // clipped to +-clip_sigmas x the tensor's RMS (0: no clipping), and each super weight is replaced by
    // the largest |value| of its block's other weights (same sign), so that it no longer sets
    // its block's scale; the exact value comes back through the correction.
    float clip_sigmas = 0;
};

// Converts every tensor of `in` per the policy, copies all metadata and sets
// general.file_type (llama_ftype numbering) and general.quantization_version.
// Throws UnsupportedType when `target` cannot be encoded. With `keep`, ffn_down tensors are
// treated as KeepSuperWeights says and the corrections written; std::invalid_argument for a
// coordinate outside its tensor or a layer without a 2-D ffn_down.
Requantized requantize(const File& in, TensorType target, const KeepSuperWeights* keep = nullptr);

// Converts each tensor of `in` to the type `plan` gives it (one entry per tensor, in the file's
// order: plan_mix in quant_mix.h), restoring the input's super-weight corrections, with
// general.file_type = file_type; `progress(done, total)` after each tensor. Throws
// UnsupportedType naming every planned type that cannot be encoded.
//
// `imatrix` (may be null): each weight found in it by name is encoded with its importance (one
// weight per column, per expert for stacked experts), as llama-quantize does; a weight absent
// from it is encoded without. Without an imatrix, a plan that puts a tensor in a type that
// llama.cpp refuses to write without one (requires_imatrix) throws std::invalid_argument naming
// the tensors. std::invalid_argument too when an entry's size differs from its tensor's columns
// x experts.
Requantized requantize_planned(const File& in, const std::vector<TensorConversion>& plan, uint32_t file_type,
                               const std::function<void(size_t, size_t)>& progress = {},
                               const Imatrix* imatrix = nullptr);

// llama.cpp's rule for the types too coarse to write without an importance matrix: IQ1_S, IQ1_M,
// IQ2_XXS, IQ2_XS, IQ2_S and IQ3_XXS, and Q2_K in a Q2_K_S file (file_type: llama_ftype); never
// for the token embedding or the output matrix.
bool requires_imatrix(const std::string& tensor_name, TensorType to, uint32_t file_type);

// llama.cpp's general.file_type for a file whose weights are mostly `t` (nullopt: none defined).
std::optional<uint32_t> llama_file_type(TensorType t);

}  // namespace vkllm::gguf
