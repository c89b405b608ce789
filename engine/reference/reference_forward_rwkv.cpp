// The RWKV-7 CPU reference forward (reference_forward_rwkv.h).
#include "reference/reference_forward_rwkv.h"

#include <algorithm>

#include "cpu/ref_activation_extra.h"
#include "cpu/ref_ops.h"
#include "cpu/ref_rwkv.h"
#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "model/spec.h"

namespace vkllm::model {

namespace {

// llama.cpp's group-norm epsilon of the wkv output (build_rwkv7_time_mix's ggml_norm).
constexpr float kGroupNormEps = 64e-5f;

std::string layer_name(int64_t il, const char* tensor) { return "blk." + std::to_string(il) + "." + tensor; }

int64_t required_int(const gguf::File& f, const std::string& key) {
    const auto v = f.get_int(key);
    if (!v || *v < 0) throw ModelError("reference forward: '" + key + "' is missing or negative");
    return *v;
}

}  // namespace

Rwkv7Params Rwkv7Params::from_file(const gguf::File& f) {
    const auto arch = f.get_string("general.architecture");
    if (!arch) throw ModelError("reference forward: no general.architecture");
    const std::string a = *arch + ".";
    Rwkv7Params p;
    p.n_embd = required_int(f, a + "embedding_length");
    p.n_layer = required_int(f, a + "block_count");
    p.n_ff = required_int(f, a + "feed_forward_length");
    p.head_size = required_int(f, a + "wkv.head_size");
    p.norm_eps = float(f.get_float(a + "attention.layer_norm_epsilon").value_or(1e-5));
    if (p.head_size == 0 || p.n_embd % p.head_size != 0)
        throw ModelError("reference forward: embedding_length " + std::to_string(p.n_embd) +
                         " is not a multiple of wkv.head_size " + std::to_string(p.head_size));
    p.n_head = p.n_embd / p.head_size;
    const gguf::TensorInfo* emb = f.find_tensor("token_embd.weight");
    if (!emb || emb->dims.size() != 2) throw ModelError("reference forward: no 2-D token_embd.weight");
    p.n_vocab = int64_t(emb->dims[1]);
    return p;
}

Rwkv7ReferenceForward::Rwkv7ReferenceForward(const gguf::File& file) : file_(file), p_(Rwkv7Params::from_file(file)) {
    state_.assign(size_t(p_.n_layer), std::vector<float>(size_t(p_.state_floats_per_layer()), 0.0f));
}

std::vector<float> Rwkv7ReferenceForward::weight(const std::string& name) const {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) throw ModelError("reference forward: missing tensor '" + name + "'");
    return gguf::dequantize_tensor(*t);
}

namespace {

// y [n, n_out] = x [n, n_in] W^T for the file's 2-D tensor `name` ({n_in, n_out}).
std::vector<float> project(const gguf::File& f, const std::string& name, const float* x, int64_t n) {
    const gguf::TensorInfo* t = f.find_tensor(name);
    if (!t || t->dims.size() != 2) throw ModelError("reference forward: missing 2-D tensor '" + name + "'");
    const cpu::WeightView w{t->type, t->data, int64_t(t->dims[0]), int64_t(t->dims[1])};
    std::vector<float> y(size_t(n * w.n_out));
    // llama.cpp's CPU backend rounds a quantised matmul's activations to 8-bit blocks (of 32, or
    // 256 for the K-quants) and an F16/BF16 matmul's to that type; so does the reference.
    int block = 0;
    switch (w.type) {
        case gguf::TensorType::Q4_0: case gguf::TensorType::Q4_1: case gguf::TensorType::Q5_0:
        case gguf::TensorType::Q5_1: case gguf::TensorType::Q8_0: case gguf::TensorType::MXFP4: block = 32; break;
        case gguf::TensorType::Q2_K: case gguf::TensorType::Q3_K: case gguf::TensorType::Q4_K:
        case gguf::TensorType::Q5_K: case gguf::TensorType::Q6_K: block = 256; break;
        default: break;
    }
    const bool half = w.type == gguf::TensorType::F16 || w.type == gguf::TensorType::BF16;
    if (!half && (block == 0 || w.n_in % block)) {
        cpu::matmul(w, x, y.data(), n);
        return y;
    }
    std::vector<float> rounded(size_t(n * w.n_in));
    if (half) {
        for (size_t i = 0; i < rounded.size(); ++i)
            rounded[i] = w.type == gguf::TensorType::F16 ? gguf::fp16_to_fp32(gguf::fp32_to_fp16(x[i]))
                                                         : gguf::bf16_to_fp32(gguf::fp32_to_bf16(x[i]));
    } else {
        cpu::round_activations(x, rounded.data(), int64_t(rounded.size()), block);
    }
    cpu::matmul(w, rounded.data(), y.data(), n);
    return y;
}

}  // namespace

void Rwkv7ReferenceForward::time_mix(int64_t il, const std::vector<float>& xa, int64_t n, std::vector<float>& v_first,
                                     std::vector<float>& out) {
    const int64_t C = p_.n_embd, N = p_.head_size;
    float* shift = state_[size_t(il)].data();
    float* wkv = shift + 2 * C;
    auto W = [&](const char* t) { return weight(layer_name(il, t)); };
    auto proj = [&](const char* t, const float* x) { return project(file_, layer_name(il, t), x, n); };

    // the six lerps r, w, k, v, a, g, each [n, C]
    std::vector<float> mixed(size_t(6 * n * C));
    cpu::rwkv_shift_mix(xa.data(), C, n, C, shift, W("time_mix_lerp_fused.weight").data(), 6, mixed.data());
    auto xm = [&](int m) { return mixed.data() + size_t(m) * size_t(n * C); };

    std::vector<float> r = proj("time_mix_receptance.weight", xm(0));
    std::vector<float> k = proj("time_mix_key.weight", xm(2));
    std::vector<float> v = proj("time_mix_value.weight", xm(3));
    // the loras: w2(tanh(w1 x)), a2(a1 x), v2(v1 x), g2(sigmoid(g1 x))
    std::vector<float> wh = proj("time_mix_w1.weight", xm(1));
    cpu::rwkv_lora_act(wh.data(), wh.data(), int64_t(wh.size()), cpu::RwkvLoraAct::Tanh);
    std::vector<float> w = project(file_, layer_name(il, "time_mix_w2.weight"), wh.data(), n);
    std::vector<float> ah = proj("time_mix_a1.weight", xm(4));
    std::vector<float> a = project(file_, layer_name(il, "time_mix_a2.weight"), ah.data(), n);
    std::vector<float> gh = proj("time_mix_g1.weight", xm(5));
    cpu::rwkv_lora_act(gh.data(), gh.data(), int64_t(gh.size()), cpu::RwkvLoraAct::Sigmoid);
    std::vector<float> g = project(file_, layer_name(il, "time_mix_g2.weight"), gh.data(), n);
    if (v_first.empty()) {
        v_first = v;  // the first layer's values feed every later layer's residual
    } else {
        std::vector<float> vh = proj("time_mix_v1.weight", xm(3));
        std::vector<float> vm = project(file_, layer_name(il, "time_mix_v2.weight"), vh.data(), n);
        cpu::rwkv7_value_mix(v.data(), C, v_first.data(), C, vm.data(), C, W("time_mix_v0.weight").data(), n, C);
    }

    const std::vector<float> w0 = W("time_mix_w0.weight"), a0 = W("time_mix_a0.weight"), k_k = W("time_mix_k_k.weight"),
                             k_a = W("time_mix_k_a.weight");
    std::vector<float> b(size_t(n * C));
    cpu::Rwkv7InputsRef in;
    in.n_tokens = n, in.n_head = p_.n_head, in.head_size = N;
    in.w = w.data(), in.k = k.data(), in.a = a.data(), in.a_out = a.data(), in.b_out = b.data();
    in.w_stride = in.k_stride = in.a_stride = in.a_out_stride = in.b_out_stride = C;
    in.w0 = w0.data(), in.a0 = a0.data(), in.k_k = k_k.data(), in.k_a = k_a.data();
    cpu::rwkv7_wkv_inputs(in);

    std::vector<float> o(size_t(n * C));
    cpu::Wkv7Ref s;
    s.n_tokens = n, s.n_head = p_.n_head, s.head_size = N, s.state = wkv;
    s.r = r.data(), s.w = w.data(), s.k = k.data(), s.v = v.data(), s.a = a.data(), s.b = b.data();
    s.r_stride = s.w_stride = s.k_stride = s.v_stride = s.a_stride = s.b_stride = C;
    s.out = o.data(), s.out_stride = C;
    cpu::rwkv_wkv7(s);

    const std::vector<float> ln_w = W("time_mix_ln.weight"), ln_b = W("time_mix_ln.bias"), r_k = W("time_mix_r_k.weight");
    cpu::Rwkv7OutputRef y;
    y.n_tokens = n, y.n_head = p_.n_head, y.head_size = N;
    y.o = y.y = o.data(), y.r = r.data(), y.k = k.data(), y.v = v.data(), y.g = g.data();
    y.o_stride = y.y_stride = y.r_stride = y.k_stride = y.v_stride = y.g_stride = C;
    y.ln_w = ln_w.data(), y.ln_b = ln_b.data(), y.r_k = r_k.data(), y.eps = kGroupNormEps;
    cpu::rwkv7_wkv_output(y);
    out = proj("time_mix_output.weight", o.data());
}

void Rwkv7ReferenceForward::channel_mix(int64_t il, const std::vector<float>& xf, int64_t n, std::vector<float>& out) {
    const int64_t C = p_.n_embd;
    float* shift = state_[size_t(il)].data() + C;
    std::vector<float> xk(size_t(n * C));
    cpu::rwkv_shift_mix(xf.data(), C, n, C, shift, weight(layer_name(il, "channel_mix_lerp_k.weight")).data(), 1,
                        xk.data());
    std::vector<float> k = project(file_, layer_name(il, "channel_mix_key.weight"), xk.data(), n);
    cpu::relu_sqr(k.data(), k.data(), int64_t(k.size()));
    out = project(file_, layer_name(il, "channel_mix_value.weight"), k.data(), n);
}

std::vector<float> Rwkv7ReferenceForward::eval(const std::vector<int32_t>& tokens) {
    const int64_t n = int64_t(tokens.size()), C = p_.n_embd;
    if (n == 0) return {};
    for (int32_t t : tokens)
        if (t < 0 || t >= p_.n_vocab) throw ModelError("reference forward: token " + std::to_string(t) + " out of range");
    const gguf::TensorInfo* emb = file_.find_tensor("token_embd.weight");
    std::vector<float> x(size_t(n * C));
    cpu::get_rows({emb->type, emb->data, int64_t(emb->dims[0]), int64_t(emb->dims[1])}, tokens.data(), n, x.data());
    cpu::layer_norm(x.data(), weight("token_embd_norm.weight").data(), weight("token_embd_norm.bias").data(), x.data(), n,
                    C, p_.norm_eps);

    std::vector<float> v_first, normed(x.size()), out;
    for (int64_t il = 0; il < p_.n_layer; ++il) {
        cpu::layer_norm(x.data(), weight(layer_name(il, "attn_norm.weight")).data(),
                        weight(layer_name(il, "attn_norm.bias")).data(), normed.data(), n, C, p_.norm_eps);
        time_mix(il, normed, n, v_first, out);
        cpu::add(x.data(), out.data(), x.data(), n * C);
        cpu::layer_norm(x.data(), weight(layer_name(il, "attn_norm_2.weight")).data(),
                        weight(layer_name(il, "attn_norm_2.bias")).data(), normed.data(), n, C, p_.norm_eps);
        channel_mix(il, normed, n, out);
        cpu::add(x.data(), out.data(), x.data(), n * C);
    }
    cpu::layer_norm(x.data(), weight("output_norm.weight").data(), weight("output_norm.bias").data(), x.data(), n, C,
                    p_.norm_eps);
    return project(file_, "output.weight", x.data(), n);
}

}  // namespace vkllm::model
