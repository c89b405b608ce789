// Model's weight interventions: one element of a weight matrix set on the GPU without reloading.
// The block holding the element (one float for F32, 32 or 256 elements for quantised types) is
// decoded, changed, re-encoded in the tensor's own type and written to the GPU. The GPU holds
// the file's bytes, so a block's current bytes are the file's until an edit, then the edit's
// (kept on the host beside the original ones, which restore_weights() puts back): reading a
// weight needs no GPU work.
#include <cmath>
#include <stdexcept>
#include <string>

#include "gguf/quant.h"
#include "model/model_internal.h"

namespace vkllm {
namespace {

// The block of a GPU buffer that holds one element.
struct ElementBlock {
    const gpu::Buffer* buffer = nullptr;
    gguf::TensorType type = gguf::TensorType::F32;
    detail::ModelInternals::BlockPlace place;  // where the GPU keeps it
    const uint8_t* file_bytes = nullptr;  // the block in the mapped file
    uint32_t n_bytes = 0;      // the type's block size in bytes
    uint32_t n_elements = 0;   // elements per block
    uint32_t index = 0;        // the element inside the block
};

// A block's GGUF bytes written where the GPU keeps them: in place, or with grouped blocks its
// f16 scale and its payload (its other bytes in order) each at its own place.
void write_block(model::Weights& weights, const gpu::Buffer* buffer, const detail::ModelInternals::BlockPlace& at,
                 const std::vector<uint8_t>& bytes) {
    gpu::Buffer& b = weights.writable(buffer);
    if (!at.grouped) {
        b.upload(bytes.data(), bytes.size(), at.offset);
        return;
    }
    std::vector<uint8_t> payload(bytes.begin(), bytes.begin() + at.scale_in_block);
    payload.insert(payload.end(), bytes.begin() + at.scale_in_block + 2, bytes.end());
    b.upload(bytes.data() + at.scale_in_block, 2, at.scale_at);
    b.upload(payload.data(), payload.size(), at.quants_at);
}

std::string describe(const WeightRef& w) {
    std::string s = w.tensor + "[" + std::to_string(w.row) + ", " + std::to_string(w.col) + "]";
    if (w.expert >= 0) s += " of expert " + std::to_string(w.expert);
    return s + (w.layer >= 0 ? " in layer " + std::to_string(w.layer) : "");
}

// "blk.3.attn_q.weight" -> "attn_q"
std::string short_name(const std::string& file_name, const std::string& prefix) {
    std::string s = file_name.substr(prefix.size());
    const std::string suffix = ".weight";
    if (s.size() > suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0)
        s.resize(s.size() - suffix.size());
    return s;
}

ElementBlock locate(const detail::ModelInternals& m, const WeightRef& w) {
    const int n_layer = m.spec().n_layer;
    if (w.layer < -1 || w.layer >= n_layer)
        throw std::invalid_argument("weight edit: layer " + std::to_string(w.layer) + " is out of range [0, " +
                                    std::to_string(n_layer) + ") (-1: tensors outside the layers)");
    const std::string prefix = w.layer >= 0 ? "blk." + std::to_string(w.layer) + "." : "";
    const model::Weights& weights = m.weights();
    const model::UploadedMatrix* t = weights.uploaded(prefix + w.tensor + ".weight");
    if (!t) {
        std::string known;
        for (const std::string& name : weights.uploaded_names(prefix))
            if (w.layer >= 0 || name.rfind("blk.", 0) != 0)  // layer -1: not the layers' tensors
                known += (known.empty() ? "" : ", ") + short_name(name, prefix);
        throw std::invalid_argument("weight edit: " + (w.layer >= 0 ? "layer " + std::to_string(w.layer) : "the model") +
                                    " has no weight matrix '" + w.tensor + "' on the GPU (editable: " + known + ")");
    }
    if (t->n_expert > 0 && (w.expert < 0 || w.expert >= t->n_expert))
        throw std::invalid_argument("weight edit: " + describe(w) + ": expert must be in [0, " +
                                    std::to_string(t->n_expert) + ") for the expert tensor '" + w.tensor + "'");
    if (t->n_expert == 0 && w.expert != -1)
        throw std::invalid_argument("weight edit: " + describe(w) + ": '" + w.tensor +
                                    "' is not an expert tensor (expert must be -1)");
    if (w.row < 0 || w.row >= t->n_rows)
        throw std::invalid_argument("weight edit: " + describe(w) + ": row is out of range [0, " +
                                    std::to_string(t->n_rows) + ")");
    if (w.col < 0 || w.col >= t->n_in)
        throw std::invalid_argument("weight edit: " + describe(w) + ": col is out of range [0, " +
                                    std::to_string(t->n_in) + ")");

    // The file row of the element (expert tensors: experts one after another), then the part of
    // a fused tensor holding it, as each part's buffer starts at its own first row.
    const int64_t file_row = (t->n_expert > 0 ? int64_t(w.expert) * t->n_rows : 0) + w.row;
    const model::UploadedPart* part = nullptr;
    for (const model::UploadedPart& p : t->parts)
        if (file_row >= p.first_row && file_row < p.first_row + p.n_rows) part = &p;
    if (!part) throw std::invalid_argument("weight edit: " + describe(w) + ": that row was not uploaded to the GPU");

    const gguf::TypeTraits traits = *gguf::type_traits(t->type);
    const uint64_t row_bytes = gguf::row_size(t->type, size_t(t->n_in));
    const uint64_t block_in_row = uint64_t(w.col / traits.block_size) * traits.type_size;
    ElementBlock b;
    b.buffer = part->buffer;
    b.type = t->type;
    b.n_bytes = traits.type_size;
    b.n_elements = traits.block_size;
    b.place.offset = part->offset + uint64_t(file_row - part->first_row) * row_bytes + block_in_row;
    b.index = uint32_t(w.col % traits.block_size);
    if (t->grouped) {
        const uint64_t row_at = part->offset + uint64_t(file_row - part->first_row) * row_bytes;
        const ops::GroupedBlockPlace place = ops::grouped_block_place(t->type, w.col / traits.block_size);
        b.place.grouped = true;
        b.place.scale_at = row_at + place.scale;
        b.place.quants_at = row_at + place.quants;
        b.place.scale_in_block = place.scale_in_block;
    }
    b.file_bytes = m.file().find_tensor(prefix + w.tensor + ".weight")->data + uint64_t(file_row) * row_bytes + block_in_row;
    return b;
}

detail::ModelInternals::SavedBlock* saved_block(detail::ModelInternals& m, const ElementBlock& b) {
    for (detail::ModelInternals::SavedBlock& s : m.saved_blocks_)
        if (s.buffer == b.buffer && s.place.offset == b.place.offset) return &s;
    return nullptr;
}

// The block's current bytes (what the GPU holds), decoded.
std::vector<float> current_values(const detail::ModelInternals& m, const ElementBlock& b) {
    const uint8_t* bytes = b.file_bytes;
    for (const detail::ModelInternals::SavedBlock& s : m.saved_blocks_)
        if (s.buffer == b.buffer && s.place.offset == b.place.offset) bytes = s.current.data();
    std::vector<float> values(b.n_elements);
    gguf::dequantize_row(b.type, bytes, values.data(), b.n_elements);
    return values;
}

bool same_element(const WeightRef& a, const WeightRef& b) {
    return a.layer == b.layer && a.tensor == b.tensor && a.row == b.row && a.col == b.col && a.expert == b.expert;
}

}  // namespace

float Model::weight(const WeightRef& w) const {
    const ElementBlock b = locate(*impl_, w);
    return current_values(*impl_, b)[b.index];
}

float Model::set_weight(const WeightRef& w, float value) {
    if (!std::isfinite(value))
        throw std::invalid_argument("weight edit: " + describe(w) + ": the value must be finite");
    const ElementBlock b = locate(*impl_, w);
    std::vector<float> values = current_values(*impl_, b);
    const float old = values[b.index];
    values[b.index] = value;
    std::vector<uint8_t> encoded(b.n_bytes);
    gguf::quantize_row(b.type, values.data(), encoded.data(), b.n_elements);  // throws for a type it cannot encode

    write_block(*impl_->weights_, b.buffer, b.place, encoded);
    // Only the first edit of a block keeps its original bytes: they are the file's.
    detail::ModelInternals::SavedBlock* saved = saved_block(*impl_, b);
    if (!saved)
        saved = &impl_->saved_blocks_.emplace_back(detail::ModelInternals::SavedBlock{
            b.buffer, b.place, std::vector<uint8_t>(b.file_bytes, b.file_bytes + b.n_bytes), {}});
    saved->current = std::move(encoded);

    bool listed = false;
    for (const WeightRef& e : impl_->edits_) listed = listed || same_element(e, w);
    if (!listed) impl_->edits_.push_back(w);
    return old;
}

void Model::restore_weights() {
    for (const detail::ModelInternals::SavedBlock& s : impl_->saved_blocks_)
        write_block(*impl_->weights_, s.buffer, s.place, s.original);
    impl_->saved_blocks_.clear();
    impl_->edits_.clear();
}

std::vector<WeightRef> Model::weight_edits() const { return impl_->edits_; }

}  // namespace vkllm
