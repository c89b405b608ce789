// The engine's side of a vkllm::Model: what Session, the interventions and the tests reach
// through Model::internals(). Not part of the public API.
#pragma once

#include <memory>
#include <vector>

#include "gguf/gguf.h"
#include "gguf/requantize.h"
#include "gpu/device.h"
#include "model/spec.h"
#include "model/weights.h"
#include "tokenizer/tokenizer.h"
#include "vkllm/gguf.h"
#include "vkllm/model.h"

namespace vkllm::detail {

struct ModelInternals {
    std::unique_ptr<gguf::File> file_;
    model::ModelSpec spec_;
    std::unique_ptr<tokenizer::Tokenizer> tok_;
    std::unique_ptr<gpu::Context> ctx_;
    std::unique_ptr<model::Weights> weights_;
    ModelInfo info_;
    DeviceInfo device_;

    // Weight interventions (weight_edit.cpp): the edits in force, one per element, in the order
    // made; and for every block they touched, its bytes before the first edit of it and now.
    // Where a weight's block lies in its buffer: at `offset` in the file's block order (which
    // names it), or with grouped blocks (ops::group_blocks) its f16 scale at scale_at and its
    // payload (its other bytes in order) at quants_at; the scale is scale_in_block bytes into
    // the file's block.
    struct BlockPlace {
        uint64_t offset = 0;
        bool grouped = false;
        uint64_t scale_at = 0, quants_at = 0;
        uint64_t scale_in_block = 0;
    };
    struct SavedBlock {
        const gpu::Buffer* buffer = nullptr;
        BlockPlace place;
        std::vector<uint8_t> original;   // the file's bytes
        std::vector<uint8_t> current;    // what the GPU holds
    };
    std::vector<WeightRef> edits_;
    std::vector<SavedBlock> saved_blocks_;

    // Model::load's common path: takes the engine's reader of an opened file.
    static std::unique_ptr<Model> load(std::unique_ptr<gguf::File> file, const ModelOptions& options);

    const model::ModelSpec& spec() const { return spec_; }
    const tokenizer::Tokenizer& tokenizer() const { return *tok_; }
    const gguf::File& file() const { return *file_; }
    gpu::Context& context() const { return *ctx_; }
    const model::Weights& weights() const { return *weights_; }
};

// vkllm::quantize_file with super weights kept (KeepSuperWeights; null: plain) and, when
// `details` is given, requantize's record of the conversions, corrections and clipping
// (gguf_api.cpp; quantize_keeping_super_weights in super_weights.cpp uses it).
QuantizeReport quantize_file(const GgufFile& in, const std::string& out_path, const std::string& type,
                             const gguf::KeepSuperWeights* keep, gguf::Requantized* details);

// The public record of an engine capability record (device_info.cpp).
DeviceInfo device_info(const gpu::Capabilities& caps);
// The public description of a model (model_info.cpp); tok may be null (no tokenizer).
ModelInfo model_info(const gguf::File& file, const model::ModelSpec& spec, const tokenizer::Tokenizer* tok);

}  // namespace vkllm::detail
