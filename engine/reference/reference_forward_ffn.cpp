// The reference forward's FFN block: a dense gated FFN (with biases or without), a plain GELU MLP,
// or a mixture of experts (router, top-k, each chosen expert's gated FFN weighted by its gate,
// and the shared expert).
#include <algorithm>
#include <map>

#include "gguf/quant.h"
#include "reference/reference_forward.h"

namespace vkllm::model {
namespace {

// GELU as ggml's CPU backend computes it (GGML_GELU_FP16): through an fp16 table,
// y = fp16(gelu(fp16(x))) for -10 < x < 10, 0 below, x above.
void gelu_fp16_table(float* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) {
        if (x[i] <= -10.0f) {
            x[i] = 0.0f;
        } else if (x[i] < 10.0f) {
            float v = gguf::fp16_to_fp32(gguf::fp32_to_fp16(x[i]));
            cpu::gelu(&v, &v, 1);
            x[i] = gguf::fp16_to_fp32(gguf::fp32_to_fp16(v));
        }
    }
}

}  // namespace

// down(act(gate h) * up h); *hidden gets the down projection's input [n_tokens, n_ff].
std::vector<float> ReferenceForward::gated_ffn(const std::string& gate, const std::string& up, const std::string& down,
                                               Activation act, const float* h, int T, int n_ff,
                                               std::vector<float>* hidden, bool bias) const {
    std::vector<float> g(size_t(T) * size_t(n_ff)), u(g.size()), o(size_t(T) * size_t(spec_.n_embd));
    // "blk.N.ffn_gate.weight" -> "blk.N.ffn_gate.bias"
    auto bias_of = [&](const std::string& w) { return bias ? values(w.substr(0, w.rfind('.')) + ".bias") : std::vector<float>{}; };
    const std::vector<float> bg = bias_of(gate), bu = bias_of(up), bd = bias_of(down);
    matmul(weight(gate), h, g.data(), T, bg.empty() ? nullptr : bg.data());
    matmul(weight(up), h, u.data(), T, bu.empty() ? nullptr : bu.data());
    if (act == Activation::SiLU) {
        cpu::swiglu(g.data(), u.data(), g.data(), T, n_ff);
    } else if (act == Activation::GeluTanh) {
        cpu::geglu(g.data(), u.data(), g.data(), T, n_ff);
    } else {
        cpu::gelu_erf(g.data(), g.data(), int64_t(g.size()));
        cpu::mul(g.data(), u.data(), g.data(), int64_t(g.size()));
    }
    matmul(weight(down), g.data(), o.data(), T, bd.empty() ? nullptr : bd.data());
    if (hidden) *hidden = std::move(g);
    return o;
}

std::vector<float> ReferenceForward::plain_ffn(int l, const float* h, int T) {
    const FfnSpec& f = spec_.layers[size_t(l)].ffn;
    const std::string p = "blk." + std::to_string(l) + ".";
    std::vector<float> u(size_t(T) * size_t(f.n_ff)), o(size_t(T) * size_t(spec_.n_embd)), bu, bd;
    if (f.bias) {
        bu = values(p + "ffn_up.bias");
        bd = values(p + "ffn_down.bias");
    }
    matmul(weight(p + "ffn_up.weight"), h, u.data(), T, bu.empty() ? nullptr : bu.data());
    if (round_activations_) gelu_fp16_table(u.data(), int64_t(u.size()));
    else cpu::gelu(u.data(), u.data(), int64_t(u.size()));
    matmul(weight(p + "ffn_down.weight"), u.data(), o.data(), T, bd.empty() ? nullptr : bd.data());
    ffn_in[size_t(l)] = std::move(u);
    return o;
}

std::vector<float> ReferenceForward::ffn_block(int l, const float* h, int T) {
    const FfnSpec& f = spec_.layers[size_t(l)].ffn;
    if (f.moe.n_expert > 0) return moe_ffn(l, h, T);
    if (!f.gated) return plain_ffn(l, h, T);
    const std::string p = "blk." + std::to_string(l) + ".";
    return gated_ffn(p + "ffn_gate.weight", p + "ffn_up.weight", p + "ffn_down.weight", f.activation, h, T, f.n_ff,
                     &ffn_in[size_t(l)], f.bias);
}

// out_t = sum over the chosen experts e_k of w_k down_e(silu(gate_e h_t) * up_e h_t)
//         (+ the shared expert's down(silu(gate h_t) * up h_t), unweighted).
std::vector<float> ReferenceForward::moe_ffn(int l, const float* h, int T) {
    const MoeSpec& moe = spec_.layers[size_t(l)].ffn.moe;
    const std::string p = "blk." + std::to_string(l) + ".";
    const int E = spec_.n_embd, K = moe.top_k, n_ff = moe.n_ff_expert;

    std::vector<float> logits(size_t(T) * size_t(moe.n_expert)), router_bias, selection_bias;
    if (moe.router_bias) router_bias = values(p + "ffn_gate_inp.bias");
    matmul(weight(p + "ffn_gate_inp.weight"), h, logits.data(), T, router_bias.empty() ? nullptr : router_bias.data());
    cpu::RouterParams rp;
    rp.n_expert = moe.n_expert;
    rp.top_k = K;
    rp.gating = moe.sigmoid ? cpu::RouterParams::Sigmoid : cpu::RouterParams::Softmax;
    rp.norm_topk = moe.norm_topk;
    rp.weights_scale = moe.weights_scale;
    rp.softmax_after_topk = moe.softmax_after_topk;
    rp.n_group = moe.n_group;
    rp.topk_group = moe.topk_group;
    if (moe.selection_bias) {
        selection_bias = values(p + "exp_probs_b.bias");
        rp.selection_bias = selection_bias.data();
    }
    Routing& r = routing[l];
    r.top_k = K;
    r.experts.resize(size_t(T) * size_t(K));
    r.weights.resize(r.experts.size());
    cpu::route(logits.data(), T, rp, r.experts.data(), r.weights.data());

    // Each expert once, over the (token, slot) pairs routed to it.
    std::map<int, std::vector<int>> pairs_of;
    for (int pr = 0; pr < T * K; ++pr) pairs_of[r.experts[size_t(pr)]].push_back(pr);
    std::vector<float>& in = expert_in[size_t(l)];
    std::vector<float>& out = expert_out[size_t(l)];
    in.assign(size_t(T) * size_t(K) * size_t(n_ff), 0.0f);
    out.assign(size_t(T) * size_t(K) * size_t(E), 0.0f);
    for (const auto& [e, pairs] : pairs_of) {
        const int n = int(pairs.size());
        std::vector<float> x(size_t(n) * size_t(E)), g(size_t(n) * size_t(n_ff)), u(g.size()), d(x.size());
        for (int i = 0; i < n; ++i)
            std::copy_n(h + size_t(pairs[size_t(i)] / K) * size_t(E), E, &x[size_t(i) * size_t(E)]);
        matmul(expert(p + "ffn_gate_exps.weight", e), x.data(), g.data(), n);
        matmul(expert(p + "ffn_up_exps.weight", e), x.data(), u.data(), n);
        cpu::swiglu(g.data(), u.data(), g.data(), n, n_ff);
        matmul(expert(p + "ffn_down_exps.weight", e), g.data(), d.data(), n);
        for (int i = 0; i < n; ++i) {
            const size_t pr = size_t(pairs[size_t(i)]);
            std::copy_n(&g[size_t(i) * size_t(n_ff)], n_ff, &in[pr * size_t(n_ff)]);
            std::copy_n(&d[size_t(i) * size_t(E)], E, &out[pr * size_t(E)]);
        }
    }
    std::vector<float> o(size_t(T) * size_t(E), 0.0f);
    for (size_t pr = 0; pr < size_t(T) * size_t(K); ++pr)
        for (int c = 0; c < E; ++c) o[(pr / size_t(K)) * size_t(E) + size_t(c)] += r.weights[pr] * out[pr * size_t(E) + size_t(c)];
    if (moe.n_ff_shared > 0) {
        std::vector<float> shared = gated_ffn(p + "ffn_gate_shexp.weight", p + "ffn_up_shexp.weight",
                                              p + "ffn_down_shexp.weight", Activation::SiLU, h, T, moe.n_ff_shared,
                                              &ffn_in[size_t(l)]);
        cpu::add(o.data(), shared.data(), o.data(), int64_t(o.size()));
        ffn_out[size_t(l)] = std::move(shared);
    }
    return o;
}

}  // namespace vkllm::model
