#include "model/weights.h"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "gguf/gguf.h"
#include "gguf/quant.h"
#include "gguf/requantize.h"
#include "gpu/device.h"

namespace vkllm::model {
namespace {

std::string shape_text(const std::vector<uint64_t>& dims) {
    std::string s = "[";
    for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
    return s + "]";
}

// The bytes of n_rows rows of `type` as the GPU keeps them: in grouped-block order where the type
// and row length take it and the device wants it (ops::group_blocks_on_upload; then in `scratch`,
// and *grouped is set), else `data` as it is.
const uint8_t* device_rows(const gpu::Capabilities& caps, gguf::TensorType type, int64_t n_in, int64_t n_rows,
                           const uint8_t* data, std::vector<uint8_t>& scratch, bool* grouped) {
    *grouped = ops::can_group_blocks(type, n_in) && ops::group_blocks_on_upload(caps);
    if (!*grouped) return data;
    scratch.resize(gguf::row_size(type, size_t(n_in)) * uint64_t(n_rows));
    ops::group_blocks(type, n_in, n_rows, data, scratch.data());
    return scratch.data();
}

}  // namespace

Weights::Weights(gpu::Context& ctx, const gguf::File& file, const ModelSpec& spec) : ctx_(ctx), file_(file) {
    const bool layer_norm = spec.norm == NormKind::LayerNorm;
    token_embd = matrix("token_embd.weight", spec.n_embd, spec.n_vocab);
    output = spec.tied_embeddings ? token_embd : matrix("output.weight", spec.n_embd, spec.n_vocab);
    if (spec.learned_positions) {
        const gguf::TensorInfo* t = file.find_tensor("position_embd.weight");
        if (!t || t->dims.size() != 2) throw ModelError(file.path() + ": missing tensor 'position_embd.weight'");
        position_embd = matrix("position_embd.weight", spec.n_embd, int64_t(t->dims[1]));
    }
    if (spec.final_norm) {
        output_norm = vector(spec.output_norm_tensor + ".weight", spec.n_embd);
        if (layer_norm) output_norm_b = vector(spec.output_norm_tensor + ".bias", spec.n_embd);
    }
    if (spec.embd_norm) {
        embd_norm = vector("token_embd_norm.weight", spec.n_embd);
        embd_norm_b = vector("token_embd_norm.bias", spec.n_embd);
    }
    if (spec.token_types) {
        // Token type 0 ("sentence A") for every token, as llama.cpp does.
        const gguf::TensorInfo* t = file.find_tensor("token_types.weight");
        if (!t || t->dims.size() != 2 || int64_t(t->dims[0]) != spec.n_embd)
            throw ModelError(file.path() + ": tensor 'token_types.weight' is not [n_embd, n_types]");
        token_type0 = vector_part("token_types.weight", int64_t(t->n_elements()), 0, spec.n_embd);
    }
    if (!spec.layers.empty() && spec.layers[0].attn.rope.freq_factors)
        rope_freqs = vector("rope_freqs.weight", spec.layers[0].attn.rope.n_dims / 2);
    if (!spec.layers.empty() && spec.layers[0].attn.rope.longrope) {
        rope_long = vector("rope_factors_long.weight", spec.layers[0].attn.rope.n_dims / 2);
        rope_short = vector("rope_factors_short.weight", spec.layers[0].attn.rope.n_dims / 2);
    }

    for (const LayerSpec& L : spec.layers)
        if (L.mixer == LayerMixer::Rwkv7) {  // every layer of an RWKV-7 model: one spec
            rwkv = std::make_unique<RwkvWeights>(ctx, file);
            rwkv->load_layers(L.rwkv, spec.n_layer);
            bytes_ += rwkv->bytes();
            break;
        }

    for (int l = 0; l < spec.n_layer; ++l) {
        const LayerSpec& L = spec.layers[size_t(l)];
        const int64_t E = spec.n_embd;
        const std::string p = "blk." + std::to_string(l) + ".";
        LayerWeights w;
        if (L.mixer == LayerMixer::Mamba1) {  // Mamba-1: the mixer's tensors (llama.cpp's names)
            const SsmSpec& m = L.ssm;
            const int64_t x_rows = int64_t(m.dt_rank) + 2 * int64_t(m.d_state);
            w.attn_norm = vector(p + "attn_norm.weight", E);
            w.ssm_in = matrix(p + "ssm_in.weight", E, m.in_proj_rows());
            w.ssm_conv1d = vector(p + "ssm_conv1d.weight", int64_t(m.conv_channels()) * m.d_conv);
            w.ssm_conv1d_b = vector(p + "ssm_conv1d.bias", m.conv_channels());
            w.ssm_x_dt = matrix_rows(p + "ssm_x.weight", m.d_inner, x_rows, 0, m.dt_rank);
            w.ssm_x_bc = matrix_rows(p + "ssm_x.weight", m.d_inner, x_rows, m.dt_rank, 2 * int64_t(m.d_state));
            w.ssm_dt = matrix(p + "ssm_dt.weight", m.dt_rank, m.d_inner);
            w.ssm_dt_b = vector(p + "ssm_dt.bias", m.d_inner);
            w.ssm_dt_norm = vector(p + "ssm_dt_norm.weight", m.dt_rank, /*required=*/false);
            w.ssm_b_norm = vector(p + "ssm_b_norm.weight", m.d_state, /*required=*/false);
            w.ssm_c_norm = vector(p + "ssm_c_norm.weight", m.d_state, /*required=*/false);
            w.ssm_a = vector(p + "ssm_a", int64_t(m.d_inner) * m.d_state);
            w.ssm_d = vector(p + "ssm_d", m.d_inner);
            w.ssm_out = matrix(p + "ssm_out.weight", m.d_inner, E);
        } else if (L.mixer == LayerMixer::Mamba2) {
            w.attn_norm = vector(p + "attn_norm.weight", E);
            mamba2_weights(spec, L, p, w);
        } else if (L.mixer == LayerMixer::ShortConv) {  // LFM2 (llama.cpp's names)
            const ShortConvSpec& c = L.shortconv;
            w.attn_norm = vector(p + "attn_norm.weight", E);
            w.shortconv_in = matrix(p + "shortconv.in_proj.weight", E, c.in_proj_rows());
            w.shortconv_conv = vector(p + "shortconv.conv.weight", int64_t(c.channels) * c.l_cache);
            w.shortconv_out = matrix(p + "shortconv.out_proj.weight", c.channels, E);
        } else if (L.mixer == LayerMixer::GatedDeltaNet) {
            delta_net_weights(spec, L, p, w);
        } else if (L.mixer == LayerMixer::Rwkv7) {  // the mixes' tensors are rwkv's; the norms also here
            const RwkvLayerWeights& r = rwkv->layers[size_t(l)];
            w.attn_norm = r.attn_norm, w.attn_norm_b = r.attn_norm_b;
            w.ffn_norm = r.ffn_norm, w.ffn_norm_b = r.ffn_norm_b;
        } else if (L.mixer == LayerMixer::Attention) {
            attention_weights(spec, L, p, w);
            if (L.ssm_beside_attention) mamba2_weights(spec, L, p, w);  // Falcon-H1: the same attn_norm
        }
        if (L.has_ffn && L.mixer != LayerMixer::Rwkv7) ffn_weights(spec, L, p, w);
        layers.push_back(w);
    }
    super_corrections(spec);
}

// A Mamba-2 mixer's tensors (llama.cpp's names); its norm is the layer's attn_norm, loaded by the caller.
void Weights::mamba2_weights(const ModelSpec& spec, const LayerSpec& L, const std::string& p, LayerWeights& w) {
    const SsmSpec& m = L.ssm;
    w.ssm_in = matrix(p + "ssm_in.weight", spec.n_embd, m.in_proj_rows());
    w.ssm_conv1d = vector(p + "ssm_conv1d.weight", int64_t(m.conv_channels()) * m.d_conv);
    w.ssm_conv1d_b = vector(p + "ssm_conv1d.bias", m.conv_channels());
    w.ssm_dt_b = vector(p + "ssm_dt.bias", m.n_head);
    w.ssm_a = vector(p + "ssm_a", m.n_head);
    w.ssm_d = vector(p + "ssm_d", m.n_head);
    w.ssm_norm = vector(p + "ssm_norm.weight", m.d_inner, /*required=*/false);
    w.ssm_out = matrix(p + "ssm_out.weight", m.d_inner, spec.n_embd);
}

// A Gated DeltaNet mixer's tensors (llama.cpp's names). Files from converters before attn_qkv and
// attn_gate (one ssm_in of q, k, v, z per key head) are refused.
void Weights::delta_net_weights(const ModelSpec& spec, const LayerSpec& L, const std::string& p, LayerWeights& w) {
    const SsmSpec& m = L.ssm;
    const int64_t E = spec.n_embd;
    if (!file_.find_tensor(p + "attn_qkv.weight") && file_.find_tensor(p + "ssm_in.weight"))
        throw ModelError(file_.path() + ": '" + p + "ssm_in.weight' is the old Gated DeltaNet layout (q, k, v, z per key "
                         "head); convert the model again with a current llama.cpp, which writes attn_qkv and attn_gate");
    w.attn_norm = vector(p + "attn_norm.weight", E);
    w.delta_qkv = matrix(p + "attn_qkv.weight", E, m.conv_channels());
    w.delta_gate = matrix(p + "attn_gate.weight", E, m.d_inner);
    if (m.delta_ba_grouped) {
        w.delta_ba = matrix(p + "ssm_ba.weight", E, 2 * int64_t(m.n_head));
    } else {
        w.delta_beta = matrix(p + "ssm_beta.weight", E, m.n_head);
        w.delta_alpha = matrix(p + "ssm_alpha.weight", E, m.n_head);
    }
    w.ssm_conv1d = vector(p + "ssm_conv1d.weight", int64_t(m.conv_channels()) * m.d_conv);
    w.ssm_dt_b = vector(p + "ssm_dt.bias", m.n_head);
    w.ssm_a = vector(p + "ssm_a", m.n_head);
    w.ssm_norm = vector(p + "ssm_norm.weight", m.head_dim());
    w.ssm_out = matrix(p + "ssm_out.weight", m.d_inner, E);
}

// An attention layer's norm, projections, biases, QK-norms and post-norms.
void Weights::attention_weights(const ModelSpec& spec, const LayerSpec& L, const std::string& p, LayerWeights& w) {
    const bool layer_norm = spec.norm == NormKind::LayerNorm;
    const AttentionSpec& a = L.attn;
    const int64_t E = spec.n_embd;
    const int64_t qd = int64_t(a.n_head) * a.head_dim, kd = int64_t(a.n_head_kv) * a.head_dim;
    const int64_t vd = int64_t(a.n_head_kv) * a.head_dim_v;
    const bool pre = L.norm_placement == NormPlacement::Pre || L.norm_placement == NormPlacement::Sandwich;
    // Falcon-40B's attention has its own norm (attn_norm_2); every other layer's is attn_norm.
    if (pre) w.attn_norm = vector(p + L.attn_norm_tensor + ".weight", E);
    if (pre && layer_norm) w.attn_norm_b = vector(p + L.attn_norm_tensor + ".bias", E);
    if (a.mla.kv_lora_rank > 0) {
        const MlaSpec& mla = a.mla;
        const int64_t q_width = int64_t(a.n_head) * (mla.qk_nope + mla.qk_rope);
        if (mla.q_lora_rank > 0) {
            w.wq_a = matrix(p + "attn_q_a.weight", E, mla.q_lora_rank);
            w.q_a_norm = vector(p + "attn_q_a_norm.weight", mla.q_lora_rank);
            w.wq = matrix(p + "attn_q_b.weight", mla.q_lora_rank, q_width);
        } else {
            w.wq = matrix(p + "attn_q.weight", E, q_width);
        }
        w.wkv_a = matrix(p + "attn_kv_a_mqa.weight", E, mla.kv_lora_rank + mla.qk_rope);
        w.kv_a_norm = vector(p + "attn_kv_a_norm.weight", mla.kv_lora_rank);
        w.k_b = experts(p + "attn_k_b", mla.qk_nope, mla.kv_lora_rank, a.n_head);
        w.v_b = experts(p + "attn_v_b", mla.kv_lora_rank, mla.v_head, a.n_head);
    } else if (a.fused_qkv) {
        const int64_t rows = qd + kd + vd;
        w.wq = matrix_rows(p + "attn_qkv.weight", E, rows, 0, qd);
        w.wk = matrix_rows(p + "attn_qkv.weight", E, rows, qd, kd);
        w.wv = matrix_rows(p + "attn_qkv.weight", E, rows, qd + kd, vd);
        if (a.bias_qkv) {
            w.bq = vector_part(p + "attn_qkv.bias", rows, 0, qd);
            w.bk = vector_part(p + "attn_qkv.bias", rows, qd, kd);
            w.bv = vector_part(p + "attn_qkv.bias", rows, qd + kd, vd);
        }
    } else if (a.gated) {  // attn_q: [query | gate] per head, head_dim rows each
        w.wq = matrix_row_chunks(p + "attn_q.weight", E, 2 * qd, 2 * int64_t(a.head_dim), 0, a.head_dim);
        w.wq_gate = matrix_row_chunks(p + "attn_q.weight", E, 2 * qd, 2 * int64_t(a.head_dim), a.head_dim, a.head_dim);
        w.wk = matrix(p + "attn_k.weight", E, kd);
        w.wv = matrix(p + "attn_v.weight", E, vd);
        const std::vector<float> zeros(size_t(qd), 0.0f);
        w.zeros = upload(zeros.data(), zeros.size() * sizeof(float));
    } else {
        one_buffer({{p + "attn_q.weight", qd, &w.wq}, {p + "attn_k.weight", kd, &w.wk}, {p + "attn_v.weight", vd, &w.wv}},
                   E);
        if (a.bias_qkv) {
            w.bq = vector(p + "attn_q.bias", qd);
            w.bk = vector(p + "attn_k.bias", kd);
            w.bv = vector(p + "attn_v.bias", vd);
        }
    }
    const int64_t o_in = int64_t(a.n_head) * (a.mla.kv_lora_rank > 0 ? a.mla.v_head : a.head_dim_v);
    w.wo = matrix(p + "attn_output.weight", o_in, E);
    if (a.bias_o) w.bo = vector(p + "attn_output.bias", E);
    if (a.sinks) w.sinks = vector(p + "attn_sinks.weight", a.n_head);
    if (a.qk_norm == QkNorm::PerHead) {
        w.q_norm = vector(p + "attn_q_norm.weight", a.head_dim);
        w.k_norm = vector(p + "attn_k_norm.weight", a.head_dim);
    } else if (a.qk_norm == QkNorm::FullWidth) {
        w.q_norm = vector(p + "attn_q_norm.weight", qd);
        w.k_norm = vector(p + "attn_k_norm.weight", kd);
    }
    if (L.norm_placement == NormPlacement::PostResidual) {
        w.post_attn_norm = vector(p + "attn_output_norm.weight", E);
        w.post_attn_norm_b = vector(p + "attn_output_norm.bias", E);
        w.post_ffn_norm = vector(p + "layer_output_norm.weight", E);
        w.post_ffn_norm_b = vector(p + "layer_output_norm.bias", E);
    } else if (L.norm_placement != NormPlacement::Pre) {
        w.post_attn_norm = vector(p + "post_attention_norm.weight", E);
        w.post_ffn_norm = vector(p + "post_ffw_norm.weight", E);
    }
}

// A layer's FFN: its norm, then dense projections or experts (with shared experts).
void Weights::ffn_weights(const ModelSpec& spec, const LayerSpec& L, const std::string& p, LayerWeights& w) {
    const bool layer_norm = spec.norm == NormKind::LayerNorm;
    const int64_t E = spec.n_embd;
    const bool pre = L.norm_placement == NormPlacement::Pre || L.norm_placement == NormPlacement::Sandwich;
    if (pre) w.ffn_norm = vector(p + L.ffn_norm_tensor + (L.ffn_norm_unsuffixed ? "" : ".weight"), E);
    if (pre && layer_norm) w.ffn_norm_b = vector(p + L.ffn_norm_tensor + ".bias", E);
    const int64_t ff = L.ffn.n_ff;
    if (L.ffn.moe.n_expert > 0) {
        const MoeSpec& moe = L.ffn.moe;
        w.router = matrix(p + "ffn_gate_inp.weight", E, moe.n_expert);
        if (moe.router_bias) w.router_bias = vector(p + "ffn_gate_inp.bias", moe.n_expert);
        if (moe.selection_bias) w.selection_bias = vector(p + "exp_probs_b.bias", moe.n_expert);
        if (moe.expert_bias) {
            w.gate_exps = experts(p + "ffn_gate_exps", E, moe.n_ff_expert, moe.n_expert, true);
            w.up_exps = experts(p + "ffn_up_exps", E, moe.n_ff_expert, moe.n_expert, true);
        } else {
            expert_gate_up_pair(p + "ffn_gate_exps", p + "ffn_up_exps", E, moe.n_ff_expert, moe.n_expert,
                                &w.gate_exps, &w.up_exps);
        }
        w.down_exps = experts(p + "ffn_down_exps", moe.n_ff_expert, E, moe.n_expert, moe.expert_bias);
        if (moe.n_ff_shared > 0 || moe.n_ff_shared_gated > 0) {
            const int64_t ff_sh = std::max(moe.n_ff_shared, moe.n_ff_shared_gated);
            w.gate_sh = matrix(p + "ffn_gate_shexp.weight", E, ff_sh);
            w.up_sh = matrix(p + "ffn_up_shexp.weight", E, ff_sh);
            w.down_sh = matrix(p + "ffn_down_shexp.weight", ff_sh, E);
        }
        if (moe.n_ff_shared_gated > 0) w.gate_inp_sh = matrix(p + "ffn_gate_inp_shexp.weight", E, 1);
    } else if (L.ffn.fused_gate_up) {
        // ffn_up holds [gate; up]: ggml's swiglu takes silu of the first half times the second.
        fused_gate_up(p + "ffn_up.weight", E, ff, &w.gate, &w.up);
    } else {
        if (L.ffn.gated) gate_up_pair(p + "ffn_gate.weight", p + "ffn_up.weight", E, ff, &w.gate, &w.up);
        else w.up = matrix(p + "ffn_up.weight", E, ff);
    }
    if (L.ffn.moe.n_expert == 0) w.down = matrix(p + "ffn_down.weight", ff, E);
    if (L.ffn.bias) {
        w.b_up = vector(p + "ffn_up.bias", ff);
        w.b_down = vector(p + "ffn_down.bias", E);
        // A gated FFN with biases (Jais): gate and up each carry one, added before the activation.
        if (L.ffn.gated && !L.ffn.fused_gate_up && L.ffn.moe.n_expert == 0) w.b_gate = vector(p + "ffn_gate.bias", ff);
    }
}

// The exact super weights a `vkllm quantize --keep-super-weights` file keeps in its metadata
// (gguf/requantize.h), uploaded per layer for the correction after ffn_down.
void Weights::super_corrections(const ModelSpec& spec) {
    std::vector<gguf::SuperWeightCorrection> all;
    try {
        all = gguf::read_super_weight_corrections(file_);
    } catch (const gguf::FormatError& e) {
        throw ModelError(file_.path() + ": " + e.what());
    }
    std::vector<std::vector<ops::SuperCorrection>> per_layer(size_t(spec.n_layer));
    for (const gguf::SuperWeightCorrection& c : all) {
        const std::string where = file_.path() + ": super-weight correction of layer " + std::to_string(c.layer);
        if (c.layer < 0 || c.layer >= spec.n_layer) throw ModelError(where + ": the model has no such layer");
        const LayerSpec& L = spec.layers[size_t(c.layer)];
        const LayerWeights& w = layers[size_t(c.layer)];
        // The correction is added to the residual stream after the FFN: only where nothing
        // (a post-norm, an expert's gate) stands between ffn_down and that sum.
        if (L.ffn.moe.n_expert > 0 || w.post_ffn_norm)
            throw ModelError(where + ": supported only for a dense FFN without a post-FFN norm");
        if (c.row < 0 || c.row >= spec.n_embd || c.col < 0 || c.col >= L.ffn.n_ff)
            throw ModelError(where + ": [" + std::to_string(c.row) + ", " + std::to_string(c.col) +
                             "] is outside ffn_down [" + std::to_string(spec.n_embd) + ", " +
                             std::to_string(L.ffn.n_ff) + "]");
        per_layer[size_t(c.layer)].push_back({uint32_t(c.row), uint32_t(c.col), c.delta, 0});
    }
    for (int l = 0; l < spec.n_layer; ++l) {
        const auto& list = per_layer[size_t(l)];
        if (list.empty()) continue;
        layers[size_t(l)].down_super = upload(list.data(), list.size() * sizeof(ops::SuperCorrection));
        layers[size_t(l)].n_down_super = int(list.size());
    }
}

const UploadedMatrix* Weights::uploaded(const std::string& name) const {
    auto it = uploaded_.find(name);
    return it == uploaded_.end() ? nullptr : &it->second;
}

std::vector<std::string> Weights::uploaded_names(const std::string& prefix) const {
    std::vector<std::string> names;
    for (const auto& [name, m] : uploaded_)
        if (name.compare(0, prefix.size(), prefix) == 0) names.push_back(name);
    return names;
}

gpu::Buffer& Weights::writable(const gpu::Buffer* buffer) {
    for (const std::unique_ptr<gpu::Buffer>& b : buffers_)
        if (b.get() == buffer) return *b;
    throw std::logic_error("Weights::writable: not a weight buffer of this model");
}

const gpu::Buffer* Weights::upload(const void* data, uint64_t n_bytes, uint64_t buffer_bytes) {
    // Shaders read whole 32-bit words: the buffer may be a little larger than the data.
    auto buf = std::make_unique<gpu::Buffer>(ctx_, std::max(n_bytes, buffer_bytes), gpu::Memory::Device);
    buf->upload(data, n_bytes);
    bytes_ += n_bytes;
    buffers_.push_back(std::move(buf));
    return buffers_.back().get();
}

const gguf::TensorInfo& Weights::tensor(const std::string& name, int64_t n_in, int64_t n_out) {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) throw ModelError(file_.path() + ": missing tensor '" + name + "'");
    // A 1-D tensor of n_in values is one row (a gate vector: ffn_gate_inp_shexp).
    const bool one_row = t->dims.size() == 1 && n_out == 1 && int64_t(t->dims[0]) == n_in;
    if (!one_row && (t->dims.size() != 2 || int64_t(t->dims[0]) != n_in || int64_t(t->dims[1]) != n_out))
        throw ModelError(file_.path() + ": tensor '" + name + "' has shape " + shape_text(t->dims) + ", expected [" +
                         std::to_string(n_in) + ", " + std::to_string(n_out) + "]");
    if (!ops::gpu_supports(t->type)) {
        auto traits = gguf::type_traits(t->type);
        throw ModelError(file_.path() + ": tensor '" + name + "' has type " + (traits ? traits->name : "?") +
                         ", which the GPU kernels do not support yet (re-quantize with `vkllm quantize`)");
    }
    return *t;
}

ops::Weight Weights::matrix(const std::string& name, int64_t n_in, int64_t n_out, bool required) {
    if (!required && !file_.find_tensor(name)) return {};
    return matrix_rows(name, n_in, n_out, 0, n_out);
}

ops::Weight Weights::matrix_rows(const std::string& name, int64_t n_in, int64_t total_rows, int64_t row0,
                                 int64_t n_out) {
    const gguf::TensorInfo& t = tensor(name, n_in, total_rows);
    const uint64_t row_bytes = gguf::row_size(t.type, size_t(n_in));
    ops::Weight w;
    w.type = t.type;
    w.n_in = n_in;
    w.n_out = n_out;
    std::vector<uint8_t> scratch;
    const uint8_t* rows = device_rows(ctx_.caps(), t.type, n_in, n_out, t.data + uint64_t(row0) * row_bytes, scratch, &w.grouped);
    w.buffer = upload(rows, uint64_t(n_out) * row_bytes, ops::weight_buffer_bytes(t.type, n_in, n_out));
    UploadedMatrix& m = uploaded_[name];
    m.type = t.type;
    m.n_in = n_in;
    m.n_rows = total_rows;
    m.grouped = w.grouped;
    m.parts.push_back({w.buffer, row0, n_out});
    return w;
}

ops::Weight Weights::matrix_row_chunks(const std::string& name, int64_t n_in, int64_t total_rows, int64_t period,
                                       int64_t first, int64_t chunk) {
    const gguf::TensorInfo& t = tensor(name, n_in, total_rows);
    if (period <= 0 || total_rows % period || first + chunk > period)
        throw std::logic_error("Weights::matrix_row_chunks: chunks do not tile '" + name + "'");
    const uint64_t row_bytes = gguf::row_size(t.type, size_t(n_in));
    const int64_t n_chunks = total_rows / period, n_out = n_chunks * chunk;
    std::vector<uint8_t> rows(uint64_t(n_out) * row_bytes);
    for (int64_t k = 0; k < n_chunks; ++k)
        std::copy_n(t.data + uint64_t(k * period + first) * row_bytes, uint64_t(chunk) * row_bytes,
                    rows.data() + uint64_t(k * chunk) * row_bytes);
    ops::Weight w;
    w.type = t.type;
    w.n_in = n_in;
    w.n_out = n_out;
    std::vector<uint8_t> scratch;
    w.buffer = upload(device_rows(ctx_.caps(), t.type, n_in, n_out, rows.data(), scratch, &w.grouped), rows.size(),
                      ops::weight_buffer_bytes(t.type, n_in, n_out));
    UploadedMatrix& m = uploaded_[name];
    m.type = t.type;
    m.n_in = n_in;
    m.n_rows = total_rows;
    m.grouped = w.grouped;
    for (int64_t k = 0; k < n_chunks; ++k)
        m.parts.push_back({w.buffer, k * period + first, chunk, uint64_t(k * chunk) * row_bytes});
    return w;
}

void Weights::gate_up_pair(const std::string& gate_name, const std::string& up_name, int64_t n_in, int64_t n_out,
                           ops::Weight* gate, ops::Weight* up) {
    one_buffer({{gate_name, n_out, gate}, {up_name, n_out, up}}, n_in);
}

void Weights::one_buffer(std::initializer_list<Member> members, int64_t n_in) {
    std::vector<const Member*> group;  // the members of the first member's type, in order
    for (const Member& m : members) {
        const gguf::TensorInfo& t = tensor(m.name, n_in, m.n_out);
        if (t.type == tensor(members.begin()->name, n_in, members.begin()->n_out).type) group.push_back(&m);
        else *m.out = matrix(m.name, n_in, m.n_out);  // another type: a buffer of its own
    }
    if (group.size() == 1) {
        *group[0]->out = matrix(group[0]->name, n_in, group[0]->n_out);
        return;
    }
    // Each matrix from a 256-byte boundary: word-aligned, and a binding-friendly start.
    std::vector<uint64_t> offset;
    uint64_t end = 0;
    for (const Member* m : group) {
        offset.push_back((end + 255) / 256 * 256);
        end = offset.back() + ops::weight_buffer_bytes(tensor(m->name, n_in, m->n_out).type, n_in, m->n_out);
    }
    const gpu::Buffer* buffer = nullptr;
    for (size_t i = 0; i < group.size(); ++i) {
        const Member& m = *group[i];
        const gguf::TensorInfo& t = tensor(m.name, n_in, m.n_out);
        const uint64_t bytes = gguf::row_size(t.type, size_t(n_in)) * uint64_t(m.n_out);
        std::vector<uint8_t> scratch;
        bool grouped = false;
        const uint8_t* rows = device_rows(ctx_.caps(), t.type, n_in, m.n_out, t.data, scratch, &grouped);
        if (!buffer) {
            buffer = upload(rows, bytes, end);
        } else {
            writable(buffer).upload(rows, bytes, offset[i]);
            bytes_ += bytes;
        }
        *m.out = ops::Weight{t.type, buffer, n_in, m.n_out, offset[i], grouped};
        UploadedMatrix& u = uploaded_[m.name];
        u.type = t.type;
        u.n_in = n_in;
        u.n_rows = m.n_out;
        u.grouped = grouped;
        u.parts.push_back({buffer, 0, m.n_out, offset[i]});
    }
}

const gguf::TensorInfo& Weights::expert_tensor(const std::string& name, int64_t n_in, int64_t n_out,
                                               int64_t n_expert) {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) throw ModelError(file_.path() + ": missing tensor '" + name + "'");
    if (t->dims.size() != 3 || int64_t(t->dims[0]) != n_in || int64_t(t->dims[1]) != n_out ||
        int64_t(t->dims[2]) != n_expert)
        throw ModelError(file_.path() + ": tensor '" + name + "' has shape " + shape_text(t->dims) + ", expected [" +
                         std::to_string(n_in) + ", " + std::to_string(n_out) + ", " + std::to_string(n_expert) + "]");
    if (!ops::gpu_supports(t->type)) {
        auto traits = gguf::type_traits(t->type);
        throw ModelError(file_.path() + ": tensor '" + name + "' has type " + (traits ? traits->name : "?") +
                         ", which the GPU kernels do not support yet");
    }
    return *t;
}

// Phi-3's ffn_up {n_in, 2 n_out}: gate rows then up rows, uploaded whole into one buffer (so
// decode's fused gated FFN applies), up at its row's byte offset when that is word-aligned; as
// two matrices otherwise.
void Weights::fused_gate_up(const std::string& name, int64_t n_in, int64_t n_out, ops::Weight* gate, ops::Weight* up) {
    const gguf::TensorInfo& t = tensor(name, n_in, 2 * n_out);
    const uint64_t half = gguf::row_size(t.type, size_t(n_in)) * uint64_t(n_out);
    if (half % 4) {
        *gate = matrix_rows(name, n_in, 2 * n_out, 0, n_out);
        *up = matrix_rows(name, n_in, 2 * n_out, n_out, n_out);
        return;
    }
    std::vector<uint8_t> scratch;
    bool grouped = false;
    const uint8_t* rows = device_rows(ctx_.caps(), t.type, n_in, 2 * n_out, t.data, scratch, &grouped);
    const gpu::Buffer* buffer = upload(rows, 2 * half, ops::weight_buffer_bytes(t.type, n_in, 2 * n_out));
    *gate = ops::Weight{t.type, buffer, n_in, n_out, 0, grouped};
    *up = ops::Weight{t.type, buffer, n_in, n_out, half, grouped};
    uploaded_[name] = UploadedMatrix{t.type, n_in, 2 * n_out, 0, {{buffer, 0, 2 * n_out, 0}}, grouped};
}

// `stem`.weight {n_in, n_out, n_expert}, and with `bias` `stem`.bias {n_out, n_expert}.
ops::ExpertWeights Weights::experts(const std::string& stem, int64_t n_in, int64_t n_out, int64_t n_expert, bool bias) {
    const std::string name = stem + ".weight";
    const gguf::TensorInfo* t = &expert_tensor(name, n_in, n_out, n_expert);
    ops::ExpertWeights w;
    w.type = t->type;
    w.n_in = n_in;
    w.n_out = n_out;
    w.n_expert = n_expert;
    std::vector<uint8_t> scratch;
    const uint8_t* rows = device_rows(ctx_.caps(), t->type, n_in, n_out * n_expert, t->data, scratch, &w.grouped);
    w.buffer = upload(rows, t->n_bytes, ops::weight_buffer_bytes(t->type, n_in, n_out * n_expert));
    uploaded_[name] = UploadedMatrix{t->type, n_in, n_out, n_expert, {{w.buffer, 0, n_out * n_expert}}, w.grouped};
    if (bias) w.bias = vector(stem + ".bias", n_out * n_expert);
    return w;
}

void Weights::expert_gate_up_pair(const std::string& gate_stem, const std::string& up_stem, int64_t n_in,
                                  int64_t n_out, int64_t n_expert, ops::ExpertWeights* gate, ops::ExpertWeights* up) {
    const std::string gate_name = gate_stem + ".weight", up_name = up_stem + ".weight";
    const gguf::TensorInfo& g = expert_tensor(gate_name, n_in, n_out, n_expert);
    const gguf::TensorInfo& u = expert_tensor(up_name, n_in, n_out, n_expert);
    const uint64_t up_offset = (g.n_bytes + 255) / 256 * 256;  // word-aligned (and binding-friendly) start of up
    const uint64_t pair_bytes = up_offset + ops::weight_buffer_bytes(u.type, n_in, n_out * n_expert);
    // One buffer only where the fused path can bind it whole: a pair too large for one binding
    // (or one allocation) gains nothing and might not allocate where two halves would.
    const gpu::Capabilities& caps = ctx_.caps();
    if (g.type != u.type || pair_bytes > std::min(caps.max_storage_buffer_range, caps.max_memory_allocation_size)) {
        *gate = experts(gate_stem, n_in, n_out, n_expert, false);
        *up = experts(up_stem, n_in, n_out, n_expert, false);
        return;
    }
    std::vector<uint8_t> scratch;
    bool grouped = false;
    const gpu::Buffer* buffer = upload(device_rows(ctx_.caps(), g.type, n_in, n_out * n_expert, g.data, scratch, &grouped),
                                       g.n_bytes, pair_bytes);
    writable(buffer).upload(device_rows(ctx_.caps(), u.type, n_in, n_out * n_expert, u.data, scratch, &grouped), u.n_bytes,
                            up_offset);
    bytes_ += u.n_bytes;
    for (auto [w, t, name, offset] : {std::tuple{gate, &g, &gate_name, uint64_t(0)}, {up, &u, &up_name, up_offset}}) {
        w->type = t->type;
        w->n_in = n_in;
        w->n_out = n_out;
        w->n_expert = n_expert;
        w->buffer = buffer;
        w->offset = offset;
        w->grouped = grouped;  // one type and row length: both or neither
        uploaded_[*name] =
            UploadedMatrix{t->type, n_in, n_out, n_expert, {{buffer, 0, n_out * n_expert, offset}}, grouped};
    }
}

const gpu::Buffer* Weights::vector_part(const std::string& name, int64_t total, int64_t first, int64_t n) {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) throw ModelError(file_.path() + ": missing tensor '" + name + "'");
    if (int64_t(t->n_elements()) != total)
        throw ModelError(file_.path() + ": tensor '" + name + "' has " + std::to_string(t->n_elements()) +
                         " elements, expected " + std::to_string(total));
    std::vector<float> values = gguf::dequantize_tensor(*t);
    return upload(values.data() + first, uint64_t(n) * sizeof(float));
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
