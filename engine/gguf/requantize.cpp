#include "gguf/requantize.h"

#include "gguf/quant.h"

namespace vkllm::gguf {

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
bool contains(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// Tensors that llama-quantize leaves in their type although they are 2-D weights.
const char* kept_by_policy(const std::string& name) {
    if (contains(name, "_norm.weight")) return "norm";
    if (contains(name, "ffn_gate_inp.weight")) return "MoE router";
    if (contains(name, "position_embd") || name == "token_types.weight") return "position/token-type embedding";
    if (contains(name, "ssm_conv1d") || contains(name, "shortconv.conv")) return "convolution kernel";
    if (contains(name, "attn_rel_b")) return "relative position bias";
    return nullptr;
}

// llama.cpp's tensor_type_fallback for the types we encode.
TensorType fallback_for(TensorType t) {
    switch (t) {
        case TensorType::Q2_K:
        case TensorType::Q3_K: return TensorType::Q4_0;
        case TensorType::Q4_K: return TensorType::Q5_0;
        case TensorType::Q5_K: return TensorType::Q5_1;
        case TensorType::Q6_K: return TensorType::Q8_0;
        default: return TensorType::F16;
    }
}

std::string name_of(TensorType t) {
    auto tr = type_traits(t);
    return tr ? tr->name : "type " + std::to_string(static_cast<uint32_t>(t));
}

}  // namespace

std::optional<uint32_t> llama_file_type(TensorType t) {
    switch (t) {
        case TensorType::F32: return 0;
        case TensorType::F16: return 1;
        case TensorType::Q4_0: return 2;
        case TensorType::Q4_1: return 3;
        case TensorType::Q8_0: return 7;
        case TensorType::Q5_0: return 8;
        case TensorType::Q5_1: return 9;
        case TensorType::Q2_K: return 10;
        case TensorType::Q3_K: return 11;  // Q3_K_S: every weight Q3_K
        case TensorType::Q4_K: return 14;  // Q4_K_S
        case TensorType::Q5_K: return 16;  // Q5_K_S
        case TensorType::Q6_K: return 18;
        case TensorType::BF16: return 32;
        case TensorType::MXFP4: return 38;
        default: return std::nullopt;
    }
}

TensorConversion plan_conversion(const TensorInfo& tensor, TensorType target) {
    TensorConversion c{tensor.name, tensor.type, tensor.type, ""};
    if (tensor.dims.size() < 2) {
        c.note = "1-D";
        return c;
    }
    if (!ends_with(tensor.name, "weight")) {
        c.note = "not a weight";
        return c;
    }
    if (const char* why = kept_by_policy(tensor.name)) {
        c.note = why;
        return c;
    }
    auto src = type_traits(tensor.type);
    if (!src || !src->dequantizable) {
        c.note = "cannot decode " + name_of(tensor.type);
        return c;
    }
    TensorType to = target;
    const uint64_t row = tensor.row_length();
    if (row % type_traits(to)->block_size != 0) {
        to = fallback_for(target);
        if (row % type_traits(to)->block_size != 0) to = TensorType::F16;
        c.note = "row length " + std::to_string(row) + " is not a multiple of the " + name_of(target) + " block";
    }
    c.to = to;
    return c;
}

Requantized requantize(const File& in, TensorType target) {
    if (!can_quantize(target)) throw UnsupportedType("quantize: cannot encode " + name_of(target) + " tensors");
    Requantized out;
    for (const std::string& key : in.keys_in_order()) out.writer.set(key, *in.find(key));
    if (auto ftype = llama_file_type(target)) out.writer.set("general.file_type", Value::from_u32(*ftype));
    out.writer.set("general.quantization_version", Value::from_u32(2));

    for (const TensorInfo& t : in.tensors()) {
        TensorConversion c = plan_conversion(t, target);
        std::vector<uint8_t> bytes;
        if (c.to == t.type) {
            bytes.assign(t.data, t.data + t.n_bytes);  // unchanged: no re-encoding loss
        } else {
            std::vector<float> values = dequantize_tensor(t);  // [n_rows][row_length]
            bytes = quantize(c.to, values.data(), values.size());
        }
        out.bytes_in += t.n_bytes;
        out.bytes_out += bytes.size();
        out.writer.add_tensor(t.name, c.to, t.dims, std::move(bytes));
        out.tensors.push_back(std::move(c));
    }
    return out;
}

}  // namespace vkllm::gguf
