// RWKV-7's per-layer tensors on the GPU, by llama.cpp's names (src/models/rwkv7.cpp's
// load_arch_tensors): the two LayerNorms, the time mix (lerps, projections, the four loras and
// the per-channel constants) and the channel mix. Matrices keep the file's type; vectors are f32.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gguf/gguf.h"
#include "gpu/buffer.h"
#include "model/rwkv_spec.h"
#include "ops/ops.h"

namespace vkllm::gpu { class Context; }

namespace vkllm::model {

struct RwkvLayerWeights {
    const gpu::Buffer *attn_norm = nullptr, *attn_norm_b = nullptr;  // [n_embd] before the time mix
    const gpu::Buffer *ffn_norm = nullptr, *ffn_norm_b = nullptr;    // attn_norm_2: before the channel mix
    // Time mix. lerp: [6][n_embd] (r, w, k, v, a, g: time_mix_lerp_fused); w0, a0, v0, k_k, k_a,
    // r_k, ln, ln_b: [n_embd].
    const gpu::Buffer* lerp = nullptr;
    const gpu::Buffer *w0 = nullptr, *a0 = nullptr, *v0 = nullptr, *k_k = nullptr, *k_a = nullptr, *r_k = nullptr;
    const gpu::Buffer *ln = nullptr, *ln_b = nullptr;
    ops::Weight receptance, key, value, output;  // {n_embd, n_embd}
    ops::Weight w1, w2, a1, a2, v1, v2, g1, g2;  // the loras: x1 {n_embd, rank}, x2 {rank, n_embd}
    // Channel mix: lerp_k [n_embd]; key {n_embd, n_ff}; value {n_ff, n_embd}.
    const gpu::Buffer* cm_lerp = nullptr;
    ops::Weight cm_key, cm_value;
};

class RwkvWeights {
public:
    RwkvWeights(gpu::Context& ctx, const gguf::File& file);
    // Every layer's tensors of `spec` (layer 0's value lora is not loaded: llama.cpp loads it
    // unused). ModelError names a missing or misshapen tensor or a type the GPU cannot take.
    void load_layers(const RwkvSpec& spec, int n_layer);

    std::vector<RwkvLayerWeights> layers;

    // One tensor, uploaded: a matrix {n_in, n_out} in its own type, or n f32 values.
    ops::Weight matrix(const std::string& name, int64_t n_in, int64_t n_out);
    const gpu::Buffer* vector(const std::string& name, int64_t n);
    uint64_t bytes() const { return bytes_; }

private:
    const gguf::TensorInfo& tensor(const std::string& name) const;
    const gpu::Buffer* upload(const void* data, uint64_t n_bytes, uint64_t buffer_bytes);

    gpu::Context& ctx_;
    const gguf::File& file_;
    std::vector<std::unique_ptr<gpu::Buffer>> buffers_;
    uint64_t bytes_ = 0;
};

}  // namespace vkllm::model
