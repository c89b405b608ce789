#include "model/rwkv_weights.h"

#include <algorithm>

#include "gguf/quant.h"
#include "gpu/device.h"
#include "model/spec.h"

namespace vkllm::model {

RwkvWeights::RwkvWeights(gpu::Context& ctx, const gguf::File& file) : ctx_(ctx), file_(file) {}

const gguf::TensorInfo& RwkvWeights::tensor(const std::string& name) const {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) throw ModelError("missing tensor '" + name + "'");
    return *t;
}

const gpu::Buffer* RwkvWeights::upload(const void* data, uint64_t n_bytes, uint64_t buffer_bytes) {
    auto buf = std::make_unique<gpu::Buffer>(ctx_, std::max<uint64_t>({n_bytes, buffer_bytes, 4}), gpu::Memory::Device);
    buf->upload(data, n_bytes);
    bytes_ += buf->size();
    buffers_.push_back(std::move(buf));
    return buffers_.back().get();
}

ops::Weight RwkvWeights::matrix(const std::string& name, int64_t n_in, int64_t n_out) {
    const gguf::TensorInfo& t = tensor(name);
    if (t.dims.size() != 2 || int64_t(t.dims[0]) != n_in || int64_t(t.dims[1]) != n_out)
        throw ModelError("tensor '" + name + "' is not {" + std::to_string(n_in) + ", " + std::to_string(n_out) + "}");
    if (!ops::gpu_supports(t.type)) throw ModelError("tensor '" + name + "' has a type the GPU kernels do not take");
    ops::Weight w;
    w.type = t.type;
    w.n_in = n_in;
    w.n_out = n_out;
    w.buffer = upload(t.data, t.n_bytes, ops::weight_buffer_bytes(t.type, n_in, n_out));
    return w;
}

const gpu::Buffer* RwkvWeights::vector(const std::string& name, int64_t n) {
    const gguf::TensorInfo& t = tensor(name);
    uint64_t elements = 1;
    for (uint64_t d : t.dims) elements *= d;
    if (int64_t(elements) != n)
        throw ModelError("tensor '" + name + "' has " + std::to_string(elements) + " values, expected " + std::to_string(n));
    const std::vector<float> values = gguf::dequantize_tensor(t);
    return upload(values.data(), values.size() * sizeof(float), 0);
}

void RwkvWeights::load_layers(const RwkvSpec& s, int n_layer) {
    const int64_t C = s.n_embd;
    layers.assign(size_t(n_layer), {});
    for (int il = 0; il < n_layer; ++il) {
        const std::string p = "blk." + std::to_string(il) + ".";
        RwkvLayerWeights& L = layers[size_t(il)];
        L.attn_norm = vector(p + "attn_norm.weight", C);
        L.attn_norm_b = vector(p + "attn_norm.bias", C);
        L.ffn_norm = vector(p + "attn_norm_2.weight", C);
        L.ffn_norm_b = vector(p + "attn_norm_2.bias", C);
        L.lerp = vector(p + "time_mix_lerp_fused.weight", 6 * C);
        L.w0 = vector(p + "time_mix_w0.weight", C);
        L.a0 = vector(p + "time_mix_a0.weight", C);
        L.k_k = vector(p + "time_mix_k_k.weight", C);
        L.k_a = vector(p + "time_mix_k_a.weight", C);
        L.r_k = vector(p + "time_mix_r_k.weight", C);
        L.ln = vector(p + "time_mix_ln.weight", C);
        L.ln_b = vector(p + "time_mix_ln.bias", C);
        L.receptance = matrix(p + "time_mix_receptance.weight", C, C);
        L.key = matrix(p + "time_mix_key.weight", C, C);
        L.value = matrix(p + "time_mix_value.weight", C, C);
        L.output = matrix(p + "time_mix_output.weight", C, C);
        L.w1 = matrix(p + "time_mix_w1.weight", C, s.decay_rank);
        L.w2 = matrix(p + "time_mix_w2.weight", s.decay_rank, C);
        L.a1 = matrix(p + "time_mix_a1.weight", C, s.iclr_rank);
        L.a2 = matrix(p + "time_mix_a2.weight", s.iclr_rank, C);
        if (il > 0) {  // the value residual: layer 0's values are the others' v_first
            L.v0 = vector(p + "time_mix_v0.weight", C);
            L.v1 = matrix(p + "time_mix_v1.weight", C, s.value_rank);
            L.v2 = matrix(p + "time_mix_v2.weight", s.value_rank, C);
        }
        L.g1 = matrix(p + "time_mix_g1.weight", C, s.gate_rank);
        L.g2 = matrix(p + "time_mix_g2.weight", s.gate_rank, C);
        L.cm_lerp = vector(p + "channel_mix_lerp_k.weight", C);
        L.cm_key = matrix(p + "channel_mix_key.weight", C, s.n_ff);
        L.cm_value = matrix(p + "channel_mix_value.weight", s.n_ff, C);
    }
}

}  // namespace vkllm::model
