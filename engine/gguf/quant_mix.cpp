// llama-quantize's mixes: the rules of llama.cpp's llama_tensor_get_type (src/llama-quant.cpp),
// restated. Tensors are visited in llama.cpp's order (non-layer tensors first, then by layer
// number, then by name) because some rules count the tensors of a role seen so far.
#include "gguf/quant_mix.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "gguf/quant.h"

namespace vkllm::gguf {

namespace {

// ggml type numbers.
enum : uint32_t {
    F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q2_K = 10, Q3_K = 11, Q4_K = 12,
    Q5_K = 13, Q6_K = 14, IQ2_XXS = 16, IQ2_XS = 17, IQ3_XXS = 18, IQ1_S = 19, IQ4_NL = 20, IQ3_S = 21,
    IQ2_S = 22, IQ4_XS = 23, IQ1_M = 29, BF16 = 30, TQ1_0 = 34, TQ2_0 = 35, MXFP4 = 39,
};

// llama_ftype numbers.
enum : uint32_t {
    FT_Q2_K = 10, FT_Q3_K_S = 11, FT_Q3_K_M = 12, FT_Q3_K_L = 13, FT_Q4_K_S = 14, FT_Q4_K_M = 15, FT_Q5_K_S = 16,
    FT_Q5_K_M = 17, FT_IQ2_XXS = 19, FT_IQ2_XS = 20, FT_Q2_K_S = 21, FT_IQ3_XS = 22, FT_IQ3_XXS = 23, FT_IQ1_S = 24,
    FT_IQ4_NL = 25, FT_IQ3_S = 26, FT_IQ3_M = 27, FT_IQ2_S = 28, FT_IQ2_M = 29, FT_IQ4_XS = 30, FT_IQ1_M = 31,
    FT_Q4_0 = 2, FT_Q5_0 = 8, FT_TQ1_0 = 36, FT_TQ2_0 = 37, FT_MXFP4_MOE = 38,
};

uint32_t block_size(uint32_t t) {
    switch (t) {
        case F32: case F16: case BF16: return 1;
        case Q4_0: case Q4_1: case Q5_0: case Q5_1: case Q8_0: case IQ4_NL: case MXFP4: return 32;
        default: return 256;
    }
}
bool is_quantized(uint32_t t) { return t != F32 && t != F16 && t != BF16; }

enum class Role { Output, TokenEmbd, AttnQkv, AttnKvB, AttnV, AttnK, AttnQ, AttnOutput, FfnUp, FfnGate, FfnDown, Other };

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

Role role_of(const std::string& name) {
    if (name == "output.weight") return Role::Output;
    if (name == "token_embd.weight" || name == "per_layer_token_embd.weight") return Role::TokenEmbd;
    if (has(name, "attn_qkv.weight")) return Role::AttnQkv;
    if (has(name, "attn_kv_b.weight")) return Role::AttnKvB;
    if (has(name, "attn_v.weight")) return Role::AttnV;
    if (has(name, "attn_k.weight")) return Role::AttnK;
    if (has(name, "attn_q.weight")) return Role::AttnQ;
    if (has(name, "attn_output.weight")) return Role::AttnOutput;
    if (has(name, "ffn_up")) return Role::FfnUp;
    if (has(name, "ffn_gate")) return Role::FfnGate;
    if (has(name, "ffn_down")) return Role::FfnDown;
    return Role::Other;
}
// Value-projection-like tensors: the most sensitive to quantization.
bool is_attn_v_like(Role r) { return r == Role::AttnV || r == Role::AttnQkv || r == Role::AttnKvB; }

// Dimensions as ggml counts them: trailing sizes of 1 do not count.
size_t n_dims(const TensorInfo& t) {
    size_t n = t.dims.size();
    while (n > 1 && t.dims[n - 1] == 1) --n;
    return n;
}

// llama.cpp's tensor_allows_quantization: 2-D and 3-D weights, less the small or sensitive ones.
bool allows_quantization(const TensorInfo& t) {
    if (n_dims(t) < 2) return false;
    const std::string& n = t.name;
    if (n.size() < 6 || n.compare(n.size() - 6, 6, "weight") != 0) return false;
    for (const char* part : {"_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
                             "per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
                             "indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight",
                             "time_mix_w1.weight", "time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight",
                             "time_mix_v2.weight", "time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight",
                             "time_mix_g1.weight", "time_mix_g2.weight", "time_mix_decay_w1.weight",
                             "time_mix_decay_w2.weight", "time_mix_lerp_fused.weight", "attn_rel_b.weight",
                             ".position_embd", "sam.pos_embd", "sam.neck.", "sam.net_", ".rel_pos", ".patch_embd",
                             ".patch_merger", "a.rvq.codebook", "mm.a.code_embd"})
        if (has(n, part)) return false;
    return n != "position_embd.weight" && n != "token_types.weight";
}

// What the rules read of the model's hyperparameters.
struct Shape {
    std::string arch;
    bool falcon_rules = false;
    int n_layer = 0;
    int n_gqa = 0;     // query heads per key/value head (layer 0)
    int n_expert = 0;
    bool is_70b = false;  // Llama 2/3 70B: 80 layers with grouped-query attention
};

int64_t first_int(const File& f, const std::string& key, int64_t fallback) {
    const Value* v = f.find(key);
    if (!v) return fallback;
    if (v->type == ValueType::ARRAY) return v->arr.empty() ? fallback : v->arr[0].as_int(key);
    return v->as_int(key);
}

Shape shape_of(const File& f, const MixArchRules& rules) {
    Shape s;
    s.arch = f.get_string("general.architecture").value_or("");
    s.n_layer = int(first_int(f, s.arch + ".block_count", 0));
    const int64_t n_head = first_int(f, s.arch + ".attention.head_count", 0);
    const int64_t n_head_kv = first_int(f, s.arch + ".attention.head_count_kv", n_head);
    s.n_gqa = n_head_kv == 0 ? 0 : int(n_head / n_head_kv);
    s.n_expert = int(first_int(f, s.arch + ".expert_count", 0));
    s.is_70b = rules.layers_70b > 0 && s.n_layer == rules.layers_70b && n_head != n_head_kv;
    s.falcon_rules = rules.falcon_rules;
    return s;
}

int layer_of(const std::string& name) {
    int layer = -1;
    if (std::sscanf(name.c_str(), "blk.%d.", &layer) != 1) return -1;
    return layer;
}

// The per-tensor choice for one mix, with llama.cpp's running counts of tensors by role.
class Chooser {
public:
    Chooser(const Shape& shape, uint32_t ftype, bool tied, bool imatrix)
        : s_(shape), ft_(ftype), tied_(tied), imatrix_(imatrix) {
        n_ffn_ = shape.n_layer;
    }
    void count_attn_v() { ++n_attention_wv_; }
    uint32_t choose(const TensorInfo& t, uint32_t type);

private:
    bool more_bits(int i, int n) const { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }
    bool ft(std::initializer_list<uint32_t> fts) const {
        return std::find(fts.begin(), fts.end(), ft_) != fts.end();
    }
    // The layer of an FFN tensor: its running count, or with experts its name (experts of a
    // layer need not be consecutive).
    int ffn_layer(int counter, const std::string& name) const {
        if (std::max(1, s_.n_expert) == 1) return counter;
        const int layer = layer_of(name);
        if (layer < 0 || layer >= n_ffn_)
            throw std::runtime_error("quantize: cannot tell the layer of " + name + " (of " + std::to_string(n_ffn_) + ")");
        return layer;
    }

    const Shape& s_;
    uint32_t ft_;
    bool tied_, imatrix_;
    int n_ffn_ = 0, n_attention_wv_ = 0;
    int i_attention_wv_ = 0, i_ffn_down_ = 0, i_ffn_gate_ = 0, i_ffn_up_ = 0;
};

uint32_t Chooser::choose(const TensorInfo& t, uint32_t type) {
    const Role role = role_of(t.name);
    const bool falcon = s_.falcon_rules;
    const int n_gqa = s_.n_gqa, n_expert = s_.n_expert;
    const bool iq2_or_1 = ft({FT_IQ2_XXS, FT_IQ2_XS, FT_IQ1_S, FT_IQ2_S, FT_IQ2_M, FT_IQ1_M});
    if (role == Role::Output || (tied_ && role == Role::TokenEmbd)) {
        if (ft_ == FT_MXFP4_MOE) type = Q8_0;
        else if (falcon || t.dims[0] % block_size(type) != 0) type = Q8_0;
        else if (iq2_or_1 || ft_ == FT_IQ3_XXS) type = Q5_K;
        else if (type != Q8_0) type = Q6_K;
    } else if (ft_ == FT_MXFP4_MOE) {
        type = (t.dims.size() > 2 && t.dims[2] > 1) ? MXFP4 : Q8_0;
    } else if (role == Role::TokenEmbd) {
        if (ft({FT_IQ2_XXS, FT_IQ2_XS, FT_IQ1_S, FT_IQ1_M})) type = Q2_K;
        else if (ft({FT_IQ2_S, FT_IQ2_M, FT_IQ3_XXS})) type = IQ3_S;
        else if (ft({FT_TQ1_0, FT_TQ2_0})) type = Q4_K;
    } else if (iq2_or_1) {
        const bool s_or_m = ft({FT_IQ2_S, FT_IQ2_M});
        if (is_attn_v_like(role)) {
            type = (n_gqa >= 4 || n_expert >= 4) ? Q4_K : s_or_m ? IQ3_S : Q2_K;
            ++i_attention_wv_;
        } else if (n_expert == 8 && role == Role::AttnK) {
            type = Q4_K;
        } else if (role == Role::FfnDown) {
            if (i_ffn_down_ < n_ffn_ / 8) type = s_or_m ? IQ3_S : Q2_K;
            ++i_ffn_down_;
        } else if (role == Role::AttnOutput) {
            if (n_expert == 8) type = Q5_K;
            else if (ft({FT_IQ1_S, FT_IQ1_M})) type = IQ2_XXS;
            else if (s_or_m) type = IQ3_S;
        }
    } else if (is_attn_v_like(role)) {
        if (ft_ == FT_Q2_K) type = n_gqa >= 4 ? Q4_K : Q3_K;
        else if (ft_ == FT_Q2_K_S && n_gqa >= 4) type = Q4_K;
        else if (ft_ == FT_IQ3_XXS) type = n_gqa >= 4 ? Q4_K : imatrix_ ? IQ3_XXS : IQ3_S;
        else if (ft({FT_IQ3_XS, FT_IQ3_S}) && n_gqa >= 4) type = Q4_K;
        else if (ft_ == FT_IQ3_M) type = Q4_K;
        else if (ft_ == FT_Q3_K_M) type = i_attention_wv_ < 2 ? Q5_K : Q4_K;
        else if (ft_ == FT_Q3_K_L) type = Q5_K;
        else if (ft({FT_IQ4_NL, FT_IQ4_XS}) && n_gqa >= 4) type = Q5_K;
        else if (ft({FT_Q4_K_M, FT_Q5_K_M}) && more_bits(i_attention_wv_, n_attention_wv_)) type = Q6_K;
        else if (ft_ == FT_Q4_K_S && i_attention_wv_ < 4) type = Q5_K;
        if (s_.is_70b && (type == Q3_K || type == Q4_K)) type = Q5_K;
        if (n_expert == 8) type = Q8_0;
        ++i_attention_wv_;
    } else if (role == Role::AttnK) {
        if (n_expert == 8) type = Q8_0;
        else if (ft_ == FT_IQ3_XS) type = IQ3_XXS;
        else if (ft_ == FT_IQ3_XXS) type = IQ2_S;
    } else if (role == Role::AttnQ) {
        if (ft_ == FT_IQ3_XS) type = IQ3_XXS;
        else if (ft_ == FT_IQ3_XXS) type = IQ2_S;
    } else if (role == Role::FfnDown) {
        const int i = ffn_layer(i_ffn_down_, t.name), n = n_ffn_;
        if (ft_ == FT_Q2_K) type = Q3_K;
        else if (ft_ == FT_Q2_K_S) { if (i < n / 8) type = Q4_K; }
        else if (ft_ == FT_IQ3_XXS && !imatrix_) type = i < n / 8 ? Q4_K : Q3_K;
        else if (ft_ == FT_Q3_K_M) type = i < n / 16 ? Q5_K : (!falcon || more_bits(i, n)) ? Q4_K : Q3_K;
        else if (ft_ == FT_IQ3_M && (i < n / 8 || (n_expert == 8 && more_bits(i, n)))) type = Q4_K;
        else if (ft_ == FT_Q3_K_L) type = falcon ? Q4_K : Q5_K;
        else if (ft_ == FT_Q4_K_M) {
            if (falcon) type = i < n / 16 ? Q6_K : more_bits(i, n) ? Q5_K : Q4_K;
            else if (more_bits(i, n)) type = Q6_K;
        }
        else if (i < n / 8 && ft({FT_IQ4_NL, FT_IQ4_XS}) && !imatrix_) type = Q5_K;
        else if (ft_ == FT_Q5_K_M && more_bits(i, n)) type = Q6_K;
        else if (ft_ == FT_Q4_K_S && !falcon && i < n / 8) type = Q5_K;
        else if (ft({FT_Q4_0, FT_Q5_0}) && imatrix_ && i < n / 8) type = ft_ == FT_Q4_0 ? Q4_1 : Q5_1;
        ++i_ffn_down_;
    } else if (role == Role::AttnOutput) {
        if (!falcon) {
            if (n_expert == 8) {
                if (ft({FT_Q2_K, FT_IQ3_XS, FT_IQ3_XXS, FT_Q3_K_S, FT_Q3_K_M, FT_IQ4_NL, FT_Q4_K_S, FT_Q4_K_M, FT_IQ3_S,
                        FT_IQ3_M, FT_IQ4_XS}))
                    type = Q5_K;
            } else {
                if (ft_ == FT_Q2_K) type = Q3_K;
                else if (ft_ == FT_IQ3_XXS) type = IQ3_S;
                else if (ft_ == FT_Q3_K_M) type = Q4_K;
                else if (ft_ == FT_Q3_K_L) type = Q5_K;
                else if (ft_ == FT_IQ3_M) type = Q4_K;
            }
        } else if (ft_ == FT_Q3_K_L) {
            type = Q4_K;
        }
    } else if (role == Role::FfnGate || role == Role::FfnUp) {
        int& counter = role == Role::FfnGate ? i_ffn_gate_ : i_ffn_up_;
        const int i = ffn_layer(counter, t.name), n = n_ffn_;
        if (ft_ == FT_IQ3_XS && i >= n / 8 && i < 7 * n / 8) type = IQ3_XXS;
        ++counter;
    }
    return type;
}

// llama.cpp's tensor_type_fallback: a type whose block does not divide the row.
uint32_t fallback(const TensorInfo& t, uint32_t type, std::string& note) {
    const uint64_t ncols = t.dims[0];
    if (ncols % block_size(type) == 0) return type;
    uint32_t to = type;
    switch (type) {
        case IQ1_S: case IQ1_M: case IQ2_XXS: case IQ2_XS: case IQ2_S: case IQ3_XXS: case IQ3_S: case IQ4_XS:
            to = IQ4_NL; break;
        case Q2_K: case Q3_K: case TQ1_0: case TQ2_0: to = Q4_0; break;
        case Q4_K: to = Q5_0; break;
        case Q5_K: to = Q5_1; break;
        case Q6_K: to = Q8_0; break;
        default: break;  // a 32-block type: only F16 is left
    }
    if (ncols % block_size(to) != 0) to = F16;
    note = "row length " + std::to_string(ncols) + " is not a multiple of the " + ggml_type_name_of(type) + " block";
    return to;
}

}  // namespace

const std::vector<QuantMix>& quant_mixes() {
    static const std::vector<QuantMix> mixes = {
        {"F32", 0, F32},       {"F16", 1, F16},        {"BF16", 32, BF16},     {"Q4_0", 2, Q4_0},
        {"Q4_1", 3, Q4_1},     {"Q5_0", 8, Q5_0},      {"Q5_1", 9, Q5_1},      {"Q8_0", 7, Q8_0},
        {"Q2_K", 10, Q2_K},    {"Q2_K_S", 21, Q2_K},   {"Q3_K_S", 11, Q3_K},   {"Q3_K_M", 12, Q3_K},
        {"Q3_K_L", 13, Q3_K},  {"Q4_K_S", 14, Q4_K},   {"Q4_K_M", 15, Q4_K},   {"Q5_K_S", 16, Q5_K},
        {"Q5_K_M", 17, Q5_K},  {"Q6_K", 18, Q6_K},     {"IQ2_XXS", 19, IQ2_XXS}, {"IQ2_XS", 20, IQ2_XS},
        {"IQ2_S", 28, IQ2_XS}, {"IQ2_M", 29, IQ2_S},   {"IQ3_XXS", 23, IQ3_XXS}, {"IQ3_XS", 22, IQ3_S},
        {"IQ3_S", 26, IQ3_S},  {"IQ3_M", 27, IQ3_S},   {"IQ1_S", 24, IQ1_S},   {"IQ1_M", 31, IQ1_M},
        {"IQ4_NL", 25, IQ4_NL}, {"IQ4_XS", 30, IQ4_XS}, {"TQ1_0", 36, TQ1_0},  {"TQ2_0", 37, TQ2_0},
        {"MXFP4_MOE", 38, MXFP4},
    };
    return mixes;
}

const QuantMix* find_quant_mix(const std::string& name) {
    for (const QuantMix& m : quant_mixes())
        if (name == m.name) return &m;
    return nullptr;
}

std::string ggml_type_name_of(uint32_t type) {
    static const std::map<uint32_t, const char*> extra = {
        {IQ2_XXS, "IQ2_XXS"}, {IQ2_XS, "IQ2_XS"}, {IQ3_XXS, "IQ3_XXS"}, {IQ1_S, "IQ1_S"}, {IQ4_NL, "IQ4_NL"},
        {IQ3_S, "IQ3_S"},     {IQ2_S, "IQ2_S"},   {IQ4_XS, "IQ4_XS"},   {IQ1_M, "IQ1_M"}, {TQ1_0, "TQ1_0"},
        {TQ2_0, "TQ2_0"},
    };
    if (auto tr = type_traits(static_cast<TensorType>(type))) return tr->name;
    if (auto it = extra.find(type); it != extra.end()) return it->second;
    return "type " + std::to_string(type);
}

std::vector<TensorConversion> plan_mix(const File& in, const QuantMix& mix, const MixArchRules& rules, bool pure,
                                      bool with_imatrix) {
    const Shape shape = shape_of(in, rules);
    const auto& tensors = in.tensors();
    bool tied = true;
    for (const TensorInfo& t : tensors) tied &= t.name != "output.weight";
    Chooser chooser(shape, mix.file_type, tied, with_imatrix);
    for (const TensorInfo& t : tensors)
        if (is_attn_v_like(role_of(t.name))) chooser.count_attn_v();

    std::vector<size_t> order(tensors.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        const int la = layer_of(tensors[a].name), lb = layer_of(tensors[b].name);
        return la != lb ? la < lb : tensors[a].name < tensors[b].name;
    });

    std::vector<TensorConversion> plan(tensors.size());
    for (size_t i : order) {
        const TensorInfo& t = tensors[i];
        TensorConversion& c = plan[i];
        c = {t.name, t.type, t.type, ""};
        if (!allows_quantization(t)) {
            c.note = n_dims(t) < 2 ? "1-D" : "kept by llama.cpp's rules";
            continue;
        }
        uint32_t type = mix.base_type;
        if (is_quantized(mix.base_type)) {
            if (!pure) type = chooser.choose(t, type);
            type = fallback(t, type, c.note);
        }
        auto src = type_traits(t.type);
        if (type != uint32_t(t.type) && (!src || !src->dequantizable)) {
            c.note = "cannot decode " + ggml_type_name_of(uint32_t(t.type));
            continue;
        }
        c.to = static_cast<TensorType>(type);
    }
    return plan;
}

std::vector<std::string> unwritable_types(const std::vector<TensorConversion>& plan) {
    std::vector<std::string> out;
    for (const TensorConversion& c : plan) {
        if (c.to == c.from || can_quantize(c.to)) continue;
        const std::string name = ggml_type_name_of(uint32_t(c.to));
        if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
    }
    return out;
}

}  // namespace vkllm::gguf
