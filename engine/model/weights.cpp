#include "model/weights.h"

#include <algorithm>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "gpu/device.h"

namespace vkllm::model {
namespace {

std::string shape_text(const std::vector<uint64_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
}

}  // namespace

Weights::Weights(gpu::Context& ctx, const gguf::File& file, const ModelSpec& spec) : ctx_(ctx), file_(file) {
    token_embd = matrix("token_embd.weight", spec.n_embd, spec.n_vocab);
    output = spec.tied_embeddings ? token_embd : matrix("output.weight", spec.n_embd, spec.n_vocab);
    output_norm = vector("output_norm.weight", spec.n_embd);
    if (spec.norm == NormKind::LayerNorm) output_norm_b = vector("output_norm.bias", spec.n_embd);
    if (!spec.layers.empty() && spec.layers[0].attn.rope.freq_factors)
        rope_freqs = vector("rope_freqs.weight", spec.layers[0].attn.rope.n_dims / 2);

    for (int l = 0; l < spec.n_layer; ++l) {
        const LayerSpec& L = spec.layers[size_t(l)];
        const AttentionSpec& a = L.attn;
        std::string p = "blk." + std::to_string(l) + ".";
        LayerWeights w;
        w.attn_norm = vector(p + "attn_norm.weight", spec.n_embd);
        w.wq = matrix(p + "attn_q.weight", spec.n_embd, int64_t(a.n_head) * a.head_dim);
        w.wk = matrix(p + "attn_k.weight", spec.n_embd, int64_t(a.n_head_kv) * a.head_dim);
        w.wv = matrix(p + "attn_v.weight", spec.n_embd, int64_t(a.n_head_kv) * a.head_dim_v);
        w.wo = matrix(p + "attn_output.weight", int64_t(a.n_head) * a.head_dim_v, spec.n_embd);
        w.ffn_norm = vector(p + "ffn_norm.weight", spec.n_embd);
        if (L.ffn.gated) w.gate = matrix(p + "ffn_gate.weight", spec.n_embd, L.ffn.n_ff);
        w.up = matrix(p + "ffn_up.weight", spec.n_embd, L.ffn.n_ff);
        w.down = matrix(p + "ffn_down.weight", L.ffn.n_ff, spec.n_embd);
        layers.push_back(w);
    }
}

const gpu::Buffer* Weights::upload(const void* data, uint64_t n_bytes, uint64_t buffer_bytes) {
    // Shaders read whole 32-bit words: the buffer may be a little larger than the data.
    auto buf = std::make_unique<gpu::Buffer>(ctx_, std::max(n_bytes, buffer_bytes), gpu::Memory::Device);
    buf->upload(data, n_bytes);
    bytes_ += n_bytes;
    buffers_.push_back(std::move(buf));
    return buffers_.back().get();
}

ops::Weight Weights::matrix(const std::string& name, int64_t n_in, int64_t n_out, bool required) {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) {
        if (required) throw ModelError(file_.path() + ": missing tensor '" + name + "'");
        return {};
    }
    if (t->dims.size() != 2 || int64_t(t->dims[0]) != n_in || int64_t(t->dims[1]) != n_out)
        throw ModelError(file_.path() + ": tensor '" + name + "' has shape " + shape_text(t->dims) + ", expected [" +
                         std::to_string(n_in) + ", " + std::to_string(n_out) + "]");
    if (!ops::gpu_supports(t->type)) {
        auto traits = gguf::type_traits(t->type);
        throw ModelError(file_.path() + ": tensor '" + name + "' has type " + (traits ? traits->name : "?") +
                         ", which the GPU kernels do not support yet (re-quantize with `vkllm quantize`)");
    }
    ops::Weight w;
    w.type = t->type;
    w.n_in = n_in;
    w.n_out = n_out;
    w.buffer = upload(t->data, t->n_bytes, ops::weight_buffer_bytes(t->type, n_in, n_out));
    return w;
}

// Norm weights and other vectors are small: kept as f32 whatever their file type.
const gpu::Buffer* Weights::vector(const std::string& name, int64_t n, bool required) {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) {
        if (required) throw ModelError(file_.path() + ": missing tensor '" + name + "'");
        return nullptr;
    }
    if (int64_t(t->n_elements()) != n)
        throw ModelError(file_.path() + ": tensor '" + name + "' has " + std::to_string(t->n_elements()) +
                         " elements, expected " + std::to_string(n));
    std::vector<float> values = gguf::dequantize_tensor(*t);
    return upload(values.data(), values.size() * sizeof(float));
}

}  // namespace vkllm::model
