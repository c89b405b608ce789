// RWKV-7 random models (rwkv7_model.h).
#include "random_model/rwkv7_model.h"

#include <cmath>
#include <string>
#include <vector>

#include "gguf/quant.h"
#include "random_model/config_validation.h"
#include "random_model/random_weights.h"

namespace vkllm::random_model {

namespace {

using gguf::Value;

// Adds one tensor of `dims` (ggml order) whose values are mean + std * normal(), stored in `type`.
void add_normal(gguf::Writer& w, uint64_t seed, const std::string& name, std::vector<uint64_t> dims, double mean,
                double std, gguf::TensorType type = gguf::TensorType::F32) {
    uint64_t n = 1;
    for (uint64_t d : dims) n *= d;
    Rng rng(seed, name);
    const std::vector<float> values = normal_values(rng, size_t(n), mean, std);
    if (type == gguf::TensorType::F32)
        w.add_tensor_f32(name, std::move(dims), values);
    else
        w.add_tensor(name, type, std::move(dims), gguf::quantize(type, values.data(), values.size()));
}

// A projection {n_in, n_out}: std 1 / sqrt(n_in) keeps its output's variance at its input's.
// Stored in `type` where its rows take the type's blocks (matrix_storage_type's fallbacks).
void add_matrix(gguf::Writer& w, uint64_t seed, const std::string& name, uint64_t n_in, uint64_t n_out,
                gguf::TensorType type = gguf::TensorType::F32) {
    add_normal(w, seed, name, {n_in, n_out}, 0.0, 1.0 / std::sqrt(double(n_in)), matrix_storage_type(type, n_in));
}

// A LayerNorm's weight (near 1) and bias (near 0).
void add_layer_norm(gguf::Writer& w, uint64_t seed, const std::string& name, uint64_t n) {
    add_normal(w, seed, name + ".weight", {n}, 1.0, 0.1);
    add_normal(w, seed, name + ".bias", {n}, 0.0, 0.1);
}

}  // namespace

gguf::Writer build_rwkv7_model(const RandomModelConfig& c, const Rwkv7Sizes& s, const gguf::File& vocab) {
    require(gguf::can_quantize(c.type), "--arch rwkv7: --type names a type this generator cannot write");
    require(c.n_embd > 0 && c.n_layer > 0 && c.n_ff > 0, "--arch rwkv7: --n-embd, --n-layer and --n-ff must be positive");
    require(s.head_size > 0 && c.n_embd % s.head_size == 0,
            "--arch rwkv7: --n-embd " + std::to_string(c.n_embd) + " is not a multiple of the head size " +
                std::to_string(s.head_size));
    require(s.decay_rank > 0 && s.iclr_rank > 0 && s.value_rank > 0 && s.gate_rank > 0,
            "--arch rwkv7: the lora ranks must be positive");
    const auto tokens = vocab.get_strings("tokenizer.ggml.tokens");
    require(tokens && !tokens->empty(), vocab.path() + ": no tokenizer.ggml.tokens: not a vocabulary file (--vocab-from)");
    const uint64_t E = uint64_t(c.n_embd), V = tokens->size(), F = uint64_t(c.n_ff), seed = c.seed;
    // The large matrices take --type; the loras, lerps and per-channel vectors stay F32, as
    // llama.cpp's quantizer leaves "RWKV's small yet 2D weights" (llama-quant.cpp).
    const gguf::TensorType q = c.type;

    gguf::Writer w;
    const std::string a = "rwkv7.";
    w.set("general.architecture", Value::from_string("rwkv7"));
    w.set("general.name", Value::from_string(c.name.empty() ? "random-rwkv7" : c.name));
    w.set("general.file_type", Value::from_u32(file_type_of(c.type)));
    w.set("general.quantization_version", Value::from_u32(2));
    w.set(a + "vocab_size", Value::from_u32(uint32_t(V)));
    w.set(a + "context_length", Value::from_u32(uint32_t(c.n_ctx)));
    w.set(a + "embedding_length", Value::from_u32(uint32_t(E)));
    w.set(a + "block_count", Value::from_u32(uint32_t(c.n_layer)));
    w.set(a + "feed_forward_length", Value::from_u32(uint32_t(F)));
    w.set(a + "attention.head_count", Value::from_u32(0));  // "required by llama.cpp, unused" (the converter)
    w.set(a + "attention.layer_norm_epsilon", Value::from_f32(1e-5f));
    w.set(a + "wkv.head_size", Value::from_u32(uint32_t(s.head_size)));
    w.set(a + "attention.decay_lora_rank", Value::from_u32(uint32_t(s.decay_rank)));
    w.set(a + "attention.iclr_lora_rank", Value::from_u32(uint32_t(s.iclr_rank)));
    w.set(a + "attention.value_residual_mix_lora_rank", Value::from_u32(uint32_t(s.value_rank)));
    w.set(a + "attention.gate_lora_rank", Value::from_u32(uint32_t(s.gate_rank)));
    for (const std::string& key : vocab.keys_in_order())
        if (key.rfind("tokenizer.", 0) == 0) w.set(key, *vocab.find(key));

    add_normal(w, seed, "token_embd.weight", {E, V}, 0.0, 1.0 / std::sqrt(double(E)), matrix_storage_type(q, E));
    add_layer_norm(w, seed, "token_embd_norm", E);
    add_layer_norm(w, seed, "output_norm", E);
    add_matrix(w, seed, "output.weight", E, V, q);
    for (int il = 0; il < c.n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        add_layer_norm(w, seed, p + "attn_norm", E);
        add_layer_norm(w, seed, p + "attn_norm_2", E);
        // The decay: w0 spreads exp(-0.606531 sigmoid(w0 + lora)) over (0.55, 1).
        add_normal(w, seed, p + "time_mix_w0.weight", {E}, 0.0, 1.0);
        add_matrix(w, seed, p + "time_mix_w1.weight", E, uint64_t(s.decay_rank));
        add_matrix(w, seed, p + "time_mix_w2.weight", uint64_t(s.decay_rank), E);
        add_normal(w, seed, p + "time_mix_a0.weight", {E}, 0.0, 1.0);
        add_matrix(w, seed, p + "time_mix_a1.weight", E, uint64_t(s.iclr_rank));
        add_matrix(w, seed, p + "time_mix_a2.weight", uint64_t(s.iclr_rank), E);
        // Layer 0's value lora is loaded (unused) with the in-context-learning rank.
        const uint64_t vr = uint64_t(il == 0 ? s.iclr_rank : s.value_rank);
        add_normal(w, seed, p + "time_mix_v0.weight", {E}, 0.0, 1.0);
        add_matrix(w, seed, p + "time_mix_v1.weight", E, vr);
        add_matrix(w, seed, p + "time_mix_v2.weight", vr, E);
        add_matrix(w, seed, p + "time_mix_g1.weight", E, uint64_t(s.gate_rank));
        add_matrix(w, seed, p + "time_mix_g2.weight", uint64_t(s.gate_rank), E);
        // Six lerp weights (r, w, k, v, a, g), each channel's share of the previous token.
        add_normal(w, seed, p + "time_mix_lerp_fused.weight", {E, 1, 1, 6}, 0.5, 0.2);
        add_normal(w, seed, p + "time_mix_k_k.weight", {E}, 1.0, 0.2);
        add_normal(w, seed, p + "time_mix_k_a.weight", {E}, 1.0, 0.2);
        add_normal(w, seed, p + "time_mix_r_k.weight", {E}, 0.0, 0.5);
        add_matrix(w, seed, p + "time_mix_key.weight", E, E, q);
        add_matrix(w, seed, p + "time_mix_value.weight", E, E, q);
        add_matrix(w, seed, p + "time_mix_receptance.weight", E, E, q);
        add_layer_norm(w, seed, p + "time_mix_ln", E);
        add_matrix(w, seed, p + "time_mix_output.weight", E, E, q);
        add_normal(w, seed, p + "channel_mix_lerp_k.weight", {E, 1, 1}, 0.5, 0.2);
        add_matrix(w, seed, p + "channel_mix_key.weight", E, F, q);
        add_matrix(w, seed, p + "channel_mix_value.weight", F, E, q);
    }
    return w;
}

}  // namespace vkllm::random_model
