// The CPU reference forward of RWKV-7 ("Goose"; llama.cpp's src/models/rwkv7.cpp and
// rwkv7-base.cpp), composed of cpu/ref_rwkv.h's steps and the plain reference ops, reading the
// weights from the GGUF file. No attention and no KV cache: each layer carries a recurrent state
// per sequence, the two token shifts (the previous token's normed input of the time mix and of
// the channel mix) and the wkv state (n_head matrices of head_size^2), so eval() continues
// where the last call ended and the state's size does not grow with the context.
//
// Per layer, x the residual stream (after the embedding's LayerNorm, ln0):
//   xa  = LayerNorm(x; attn_norm)        x += time_mix(xa, shift_a)
//   xf  = LayerNorm(x; attn_norm_2)      x += channel_mix(xf, shift_f)
// then the output LayerNorm and projection. The time mix is the chain ops/rwkv_ops.h describes;
// the channel mix is value(relu(key(lerp(xf, shift_f)))^2).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vkllm::gguf { class File; }

namespace vkllm::model {

// The hyperparameters llama.cpp reads for RWKV-7, from a file's metadata under its
// general.architecture prefix. Throws ModelError when one is missing or inconsistent.
struct Rwkv7Params {
    int64_t n_embd = 0, n_layer = 0, n_vocab = 0, n_ff = 0;
    int64_t head_size = 0, n_head = 0;
    float norm_eps = 1e-5f;  // attention.layer_norm_epsilon
    static Rwkv7Params from_file(const gguf::File& file);
    // The state of one sequence, in floats: per layer 2 * n_embd of token shifts and
    // n_embd * head_size of wkv state.
    int64_t state_floats_per_layer() const { return 2 * n_embd + n_embd * head_size; }
};

class Rwkv7ReferenceForward {
public:
    explicit Rwkv7ReferenceForward(const gguf::File& file);

    // Appends `tokens` to the sequence and returns their logits [n_tokens, n_vocab].
    std::vector<float> eval(const std::vector<int32_t>& tokens);
    const Rwkv7Params& params() const { return p_; }
    // The recurrent state of layer il: [shift_a (n_embd) | shift_f (n_embd) | wkv (n_embd * head_size)].
    const std::vector<float>& state(int64_t il) const { return state_[size_t(il)]; }

private:
    const gguf::File& file_;
    Rwkv7Params p_;
    std::vector<std::vector<float>> state_;
    std::vector<float> weight(const std::string& name) const;
    void time_mix(int64_t il, const std::vector<float>& xa, int64_t n, std::vector<float>& v_first,
                  std::vector<float>& out);
    void channel_mix(int64_t il, const std::vector<float>& xf, int64_t n, std::vector<float>& out);
};

}  // namespace vkllm::model
