#include "gguf/requantize.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <span>
#include <stdexcept>

#include "gguf/quant.h"
#include "gguf/quant_mix.h"

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
    return tr ? tr->name : ggml_type_name_of(static_cast<uint32_t>(t));
}

const std::string kSuperWeightPrefix = "vkllm.super_weight.";

std::string ffn_down_name(int layer) { return "blk." + std::to_string(layer) + ".ffn_down.weight"; }

bool is_dense_ffn_down(const std::string& name) {
    return name.compare(0, 4, "blk.") == 0 && ends_with(name, ".ffn_down.weight");
}

void check_coordinates(const File& in, const KeepSuperWeights& keep) {
    for (const auto& w : keep.weights) {
        const TensorInfo* t = in.find_tensor(ffn_down_name(w.layer));
        if (!t || t->dims.size() != 2)
            throw std::invalid_argument("quantize: layer " + std::to_string(w.layer) +
                                        " has no 2-D ffn_down to keep a super weight in");
        if (w.row < 0 || uint64_t(w.row) >= t->dims[1] || w.col < 0 || uint64_t(w.col) >= t->dims[0])
            throw std::invalid_argument("quantize: super weight [" + std::to_string(w.row) + ", " +
                                        std::to_string(w.col) + "] is outside " + t->name + " [" +
                                        std::to_string(t->dims[1]) + ", " + std::to_string(t->dims[0]) + "]");
    }
}

// One dense ffn_down around its super weights (see KeepSuperWeights): clip the other weights,
// put each super weight at its block's largest other |value| so it no longer sets the block's
// scale, quantise, and record exact minus stored for the correction.
std::vector<uint8_t> quantize_keeping(const TensorInfo& t, std::vector<float> w, TensorType to,
                                      const KeepSuperWeights& keep, Requantized& out) {
    // w: [rows][row_length], element [row, col] at row * n + col
    const int64_t n = int64_t(t.dims[0]);
    std::map<int64_t, float> exact;  // flat index -> the super weight
    std::vector<const KeepSuperWeights::Coordinate*> here;
    for (const auto& c : keep.weights)
        if (ffn_down_name(c.layer) == t.name) {
            exact[c.row * n + c.col] = w[size_t(c.row * n + c.col)];
            here.push_back(&c);
        }
    if (keep.clip_sigmas > 0) {
        double sum_sq = 0;
        for (size_t i = 0; i < w.size(); ++i)
            if (!exact.count(int64_t(i))) sum_sq += double(w[i]) * w[i];
        const double others = double(w.size() - exact.size());
        const float limit = float(keep.clip_sigmas * std::sqrt(sum_sq / std::max(others, 1.0)));
        for (size_t i = 0; i < w.size(); ++i)
            if (!exact.count(int64_t(i)) && std::fabs(w[i]) > limit) {
                w[i] = std::copysign(limit, w[i]);
                ++out.clipped;
            }
    }
    const int64_t block = int64_t(type_traits(to)->block_size);
    for (const auto& [i, value] : exact) {
        if (block <= 1) continue;  // F16/F32: no block scale to spoil; stored as itself
        const int64_t first = i / block * block;
        float largest = 0;
        for (int64_t j = first; j < first + block; ++j)
            if (!exact.count(j)) largest = std::max(largest, std::fabs(w[size_t(j)]));
        w[size_t(i)] = std::copysign(largest, value);
    }
    std::vector<uint8_t> bytes = quantize(to, w.data(), w.size());
    for (const auto* c : here) {
        const int64_t i = c->row * n + c->col;
        const size_t row_bytes = row_size(to, size_t(n));
        std::vector<float> row = dequantize(to, bytes.data() + size_t(c->row) * row_bytes, size_t(n));
        const float value = exact[i];
        out.kept.push_back({c->layer, c->row, c->col, value, value - row[size_t(c->col)]});
    }
    return bytes;
}

// The tensor's values with the exact super weights of `corrections` in place of the stored ones.
std::vector<float> exact_values(const TensorInfo& t, const std::vector<SuperWeightCorrection>& corrections) {
    std::vector<float> w = dequantize_tensor(t);
    for (const SuperWeightCorrection& k : corrections)
        if (ffn_down_name(k.layer) == t.name) w[size_t(k.row * int64_t(t.dims[0]) + k.col)] = k.value;
    return w;
}

void write_corrections(Writer& writer, const std::vector<SuperWeightCorrection>& kept) {
    if (kept.empty()) return;
    std::vector<int32_t> layer, row, col;
    std::vector<float> value, delta;
    for (const auto& k : kept) {
        layer.push_back(k.layer);
        row.push_back(int32_t(k.row));
        col.push_back(int32_t(k.col));
        value.push_back(k.value);
        delta.push_back(k.delta);
    }
    writer.set(kSuperWeightPrefix + "layer", Value::from_i32s(layer));
    writer.set(kSuperWeightPrefix + "row", Value::from_i32s(row));
    writer.set(kSuperWeightPrefix + "col", Value::from_i32s(col));
    writer.set(kSuperWeightPrefix + "value", Value::from_f32s(value));
    writer.set(kSuperWeightPrefix + "delta", Value::from_f32s(delta));
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

namespace {

// The importance of tensor t's columns from `imatrix`: [n_mat][row_length] with n_mat its
// experts (1 for a matrix); empty when the imatrix has no entry for it. Throws
// std::invalid_argument when the entry's size differs.
std::vector<float> importance_of(const TensorInfo& t, const Imatrix* imatrix) {
    const ImatrixEntry* e = imatrix ? imatrix->find(t.name) : nullptr;
    if (!e) return {};
    const uint64_t n_mat = t.dims.size() > 2 ? t.dims[2] : 1;
    std::vector<float> w = e->importance();
    if (w.size() != t.row_length() * n_mat)
        throw std::invalid_argument("imatrix: " + t.name + " has " + std::to_string(w.size()) + " values, the tensor " +
                                    std::to_string(t.row_length()) + " columns x " + std::to_string(n_mat) +
                                    (n_mat > 1 ? " experts" : " matrix"));
    return w;
}

// values ([n_rows][row_length], the tensor's rows in order) encoded in `to`, each matrix of a
// stack (an expert's rows) with its own slice of `importance` (empty: none).
std::vector<uint8_t> encode(TensorType to, const TensorInfo& t, const std::vector<float>& values,
                            const std::vector<float>& importance) {
    if (importance.empty()) return quantize(to, values.data(), values.size());
    const size_t cols = t.row_length(), n_mat = importance.size() / cols, per_mat = values.size() / n_mat;
    std::vector<uint8_t> out;
    for (size_t m = 0; m < n_mat; ++m) {
        std::vector<uint8_t> b = quantize(to, values.data() + m * per_mat, per_mat,
                                          std::span<const float>(importance.data() + m * cols, cols));
        out.insert(out.end(), b.begin(), b.end());
    }
    return out;
}

// Writes each tensor of `in` as `plan` (one entry per tensor, in the file's order) says, with
// the importance `imatrix` (may be null) gives each.
Requantized run_plan(const File& in, const std::vector<TensorConversion>& plan, std::optional<uint32_t> file_type,
                     const KeepSuperWeights* keep, const std::function<void(size_t, size_t)>& progress,
                     const Imatrix* imatrix = nullptr) {
    if (plan.size() != in.tensors().size()) throw std::logic_error("requantize: the plan does not cover every tensor");
    Requantized out;
    for (const std::string& key : in.keys_in_order())
        if (key.compare(0, kSuperWeightPrefix.size(), kSuperWeightPrefix) != 0)  // written anew below
            out.writer.set(key, *in.find(key));
    if (file_type) out.writer.set("general.file_type", Value::from_u32(*file_type));
    out.writer.set("general.quantization_version", Value::from_u32(2));
    if (keep) check_coordinates(in, *keep);
    // A file that already keeps super weights: its exact values go back into the weights first.
    const std::vector<SuperWeightCorrection> had = read_super_weight_corrections(in);

    for (size_t i = 0; i < plan.size(); ++i) {
        const TensorInfo& t = in.tensors()[i];
        TensorConversion c = plan[i];
        std::vector<uint8_t> bytes;
        bool corrected = false;
        for (const SuperWeightCorrection& k : had) corrected |= ffn_down_name(k.layer) == t.name;
        if (keep && is_dense_ffn_down(t.name) && t.dims.size() == 2 && c.note.empty()) {
            bytes = quantize_keeping(t, exact_values(t, had), c.to, *keep, out);
        } else if (corrected) {
            if (c.note.empty()) c.note = "kept super weights restored";
            const std::vector<float> values = exact_values(t, had);
            bytes = encode(c.to, t, values, importance_of(t, imatrix));
        } else if (c.to == t.type) {
            bytes.assign(t.data, t.data + t.n_bytes);  // unchanged: no re-encoding loss
        } else {
            std::vector<float> values = dequantize_tensor(t);  // [n_rows][row_length]
            bytes = encode(c.to, t, values, importance_of(t, imatrix));
        }
        out.bytes_in += t.n_bytes;
        out.bytes_out += bytes.size();
        out.writer.add_tensor(t.name, c.to, t.dims, std::move(bytes));
        out.tensors.push_back(std::move(c));
        if (progress) progress(i + 1, plan.size());
    }
    if (keep) write_corrections(out.writer, out.kept);
    return out;
}

}  // namespace

Requantized requantize(const File& in, TensorType target, const KeepSuperWeights* keep) {
    if (!can_quantize(target)) throw UnsupportedType("quantize: cannot encode " + name_of(target) + " tensors");
    std::vector<TensorConversion> plan;
    for (const TensorInfo& t : in.tensors()) plan.push_back(plan_conversion(t, target));
    return run_plan(in, plan, llama_file_type(target), keep, {});
}

Requantized requantize_planned(const File& in, const std::vector<TensorConversion>& plan, uint32_t file_type,
                               const std::function<void(size_t, size_t)>& progress, const Imatrix* imatrix) {
    if (!imatrix) {
        std::string need;
        int n = 0;
        for (const TensorConversion& c : plan) {
            if (c.to == c.from || !requires_imatrix(c.name, c.to, file_type)) continue;
            if (n++ < 3) need += (need.empty() ? "" : ", ") + c.name + " (" + name_of(c.to) + ")";
        }
        if (n > 0)
            throw std::invalid_argument("quantize: this file type needs an importance matrix (llama-quantize refuses "
                                        "it without one too): " + std::to_string(n) + " tensors would be written in "
                                        "types too coarse for plain rounding: " + need + (n > 3 ? ", ..." : "") +
                                        "; give one with --imatrix FILE (llama-imatrix's format: docs/imatrix.md)");
    }
    std::string missing;
    for (const TensorConversion& c : plan)
        if (c.to != c.from && !can_quantize(c.to) && missing.find(" " + name_of(c.to) + ",") == std::string::npos)
            missing += " " + name_of(c.to) + ",";
    if (!missing.empty())
        throw UnsupportedType("quantize: vkllm cannot write" + missing.substr(0, missing.size() - 1) + " tensors yet");
    return run_plan(in, plan, file_type, nullptr, progress, imatrix);
}

bool requires_imatrix(const std::string& name, TensorType to, uint32_t file_type) {
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight" || name == "output.weight") return false;
    switch (to) {
        case TensorType::IQ3_XXS: case TensorType::IQ2_XXS: case TensorType::IQ2_XS: case TensorType::IQ2_S:
        case TensorType::IQ1_M: case TensorType::IQ1_S:
            return true;
        case TensorType::Q2_K:
            return file_type == 21;  // LLAMA_FTYPE_MOSTLY_Q2_K_S
        default:
            return false;
    }
}

std::vector<SuperWeightCorrection> read_super_weight_corrections(const File& in) {
    const char* names[] = {"layer", "row", "col", "value", "delta"};
    int present = 0;
    for (const char* n : names) present += in.has(kSuperWeightPrefix + n);
    if (present == 0) return {};
    if (present != 5)
        throw FormatError("the super-weight corrections need all of " + kSuperWeightPrefix +
                          "{layer,row,col,value,delta}; only some are present");
    const auto layer = in.get_ints(kSuperWeightPrefix + "layer"), row = in.get_ints(kSuperWeightPrefix + "row"),
               col = in.get_ints(kSuperWeightPrefix + "col");
    const auto value = in.get_floats(kSuperWeightPrefix + "value"), delta = in.get_floats(kSuperWeightPrefix + "delta");
    const size_t n = layer->size();
    if (row->size() != n || col->size() != n || value->size() != n || delta->size() != n)
        throw FormatError("the super-weight correction arrays " + kSuperWeightPrefix +
                          "{layer,row,col,value,delta} differ in length");
    std::vector<SuperWeightCorrection> out;
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite((*value)[i]) || !std::isfinite((*delta)[i]))
            throw FormatError("super-weight correction " + std::to_string(i) + " is not finite");
        out.push_back({int((*layer)[i]), (*row)[i], (*col)[i], (*value)[i], (*delta)[i]});
    }
    return out;
}

}  // namespace vkllm::gguf
