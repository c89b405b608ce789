#!/usr/bin/env python3
"""An independent float64 numpy forward pass of the dense and MoE families, written from the facts
listed in tests/golden/families/README.md and tests/golden/moe/README.md, compared with llama.cpp's golden logits. It confirms those
facts (a wrong one shows as a large difference) and measures how far an exact computation lands
from llama.cpp's CPU backend (for example GELU through ggml's fp16 table or exactly).

    numpy_forward.py tests/golden/families/NAME        (reads NAME.gguf, .tokens.txt, .logits.f32)
    numpy_forward.py tests/golden/moe/NAME            (deepseek2: its own forward_deepseek2)

Needs llama.cpp's gguf-py on PYTHONPATH (the oracle's env.sh sets it) and numpy. Quantized tensors
are dequantized with gguf-py (exact for the weights; llama.cpp also rounds the activations that
meet a quantized matrix to Q8_0, which this does not).
"""
import math
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


class Model:
    def __init__(self, path):
        self.reader = GGUFReader(path)
        self.t = {t.name: np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float64) for t in self.reader.tensors}
        self.quantized = {t.name for t in self.reader.tensors if t.tensor_type.name not in ("F32", "F16", "BF16")}
        self.arch = self.key("general.architecture", prefix=False)

    def key(self, name, default=None, prefix=True):
        field = self.reader.get_field(f"{self.arch}.{name}" if prefix else name)
        if field is None:
            return default
        value = field.parts[field.data[0]]
        return bytes(value).decode() if value.dtype == np.uint8 else value[0].item()

    def has(self, name):
        return name in self.t


def gelu_exact(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * x * (1 + 0.044715 * x * x)))


def gelu_ggml(x):
    """ggml's CPU GELU: the input rounded to fp16, looked up in a table of fp16 results."""
    y = gelu_exact(x.astype(np.float16).astype(np.float32).astype(np.float64)).astype(np.float16).astype(np.float64)
    return np.where(x <= -10, 0.0, np.where(x >= 10, x, y))


def silu(x):
    return x / (1 + np.exp(-x))


def rms_norm(x, w, eps):
    return x / np.sqrt((x * x).mean(-1, keepdims=True) + eps) * w


def layer_norm(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    return (x - m) / np.sqrt(((x - m) ** 2).mean(-1, keepdims=True) + eps) * w + b


def rope(x, n_rot, neox, base, freq_scale=1.0, factors=None, yarn=None, attn_factor=1.0):
    """ggml_rope_ext on x [n, heads, head_dim]: the first n_rot dims rotate, pairs (i, i+n_rot/2)
    for NeoX else (2i, 2i+1); theta = pos * base^(-2i/n_rot) / factors[i], scaled as ggml does."""
    n = x.shape[0]
    half = n_rot // 2
    i = np.arange(half)
    theta_extrap = np.arange(n)[:, None] * base ** (-2.0 * i / n_rot) / (1.0 if factors is None else factors)
    theta = freq_scale * theta_extrap
    mscale = attn_factor
    if yarn is not None:  # (n_ctx_orig, beta_fast, beta_slow): ggml's rope_yarn with ext_factor 1
        n_ctx_orig, beta_fast, beta_slow = yarn
        corr = lambda beta: n_rot * math.log(n_ctx_orig / (beta * 2 * math.pi)) / (2 * math.log(base))
        low, high = max(0.0, math.floor(corr(beta_fast))), min(n_rot - 1.0, math.ceil(corr(beta_slow)))
        ramp = 1 - np.clip((i - low) / max(0.001, high - low), 0, 1)
        theta = theta * (1 - ramp) + theta_extrap * ramp
        mscale *= 1 + 0.1 * math.log(1 / freq_scale)
    cos, sin = (np.cos(theta) * mscale)[:, None, :], (np.sin(theta) * mscale)[:, None, :]
    out = x.copy()
    if neox:
        a, b = x[..., :half], x[..., half:n_rot]
        out[..., :half], out[..., half:n_rot] = a * cos - b * sin, a * sin + b * cos
    else:
        a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
        out[..., 0:n_rot:2], out[..., 1:n_rot:2] = a * cos - b * sin, a * sin + b * cos
    return out


# llama.cpp's top-k weight renormalisation per MoE family (build_moe_ffn's norm_w, hard-coded in
# src/models/<arch>.cpp; no GGUF key): Mixtral (arch llama) and Qwen3-MoE yes, OLMoE no.
MOE_RENORM = {"llama": True, "qwen3moe": True, "olmoe": False}


def moe_ffn(t, p, h, n_used, renorm, stats):
    """Softmax over all experts' router logits, the n_used largest probabilities (ties: lower index),
    renormalised to sum 1 when `renorm`; each chosen expert's SwiGLU FFN weighted and summed."""
    logits = h @ t[p + "ffn_gate_inp.weight"].T                       # [n, n_expert]
    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    order = np.argsort(-logits, axis=1, kind="stable")
    chosen = order[:, :n_used]                                         # [n, n_used]
    if n_used < logits.shape[1]:  # the smallest gap between the last chosen and the first left out
        rows = np.arange(len(h))
        stats.append(np.min(logits[rows, order[:, n_used - 1]] - logits[rows, order[:, n_used]]))
    w = np.take_along_axis(probs, chosen, 1)
    if renorm:
        w = w / w.sum(-1, keepdims=True)
    gate, up, down = t[p + "ffn_gate_exps.weight"], t[p + "ffn_up_exps.weight"], t[p + "ffn_down_exps.weight"]
    out = np.zeros_like(h)
    for i in range(len(h)):
        for j, e in enumerate(chosen[i]):  # gate/up [n_expert, n_ff_exp, n_embd], down [n_expert, n_embd, n_ff_exp]
            out[i] += w[i, j] * (down[e] @ (silu(gate[e] @ h[i]) * (up[e] @ h[i])))
    return out


def swiglu_oai(gate, up, alpha=1.702, limit=7.0):
    """gpt-oss's clamped SwiGLU (ggml_swiglu_oai): the gate clamped above only, up both ways."""
    g, u = np.minimum(gate, limit), np.clip(up, -limit, limit)
    return g / (1 + np.exp(-alpha * g)) * (u + 1)


def round_q8_0(x):
    """llama.cpp's CPU rounding of the activations that meet a quantized matrix (its vec_dot type
    Q8_0 for MXFP4): per block of 32, d = max|x| / 127 stored as fp16, q = round(x / d)."""
    b = x.reshape(-1, 32)
    d = np.abs(b).max(-1, keepdims=True) / 127
    q = np.trunc(b / np.where(d == 0, 1, d) + np.copysign(0.5, b))  # roundf: halves away from zero
    return (q * d.astype(np.float16).astype(np.float64)).reshape(x.shape)


def moe_ffn_oss(t, p, h, n_used, stats, variant="", quantized=False):
    """gpt-oss: router logits plus bias, the n_used largest, softmax over those n_used only; each
    expert's projections have biases; clamped SwiGLU. `variant` switches one fact off to show it
    matters: "noclamp" (plain SwiGLU), "softmax_all" (softmax over all experts, not renormalised)."""
    logits = h @ t[p + "ffn_gate_inp.weight"].T + t[p + "ffn_gate_inp.bias"]   # [n, n_expert]
    order = np.argsort(-logits, axis=1, kind="stable")
    chosen = order[:, :n_used]
    rows = np.arange(len(h))
    stats.append(np.min(logits[rows, order[:, n_used - 1]] - logits[rows, order[:, n_used]]))
    if variant == "softmax_all":
        w = np.exp(logits - logits.max(-1, keepdims=True))
        w = np.take_along_axis(w / w.sum(-1, keepdims=True), chosen, 1)
    else:
        w = np.exp(np.take_along_axis(logits, chosen, 1) - logits[rows, chosen[:, 0]][:, None])
        w /= w.sum(-1, keepdims=True)
    act = (lambda g, u: silu(g) * u) if variant == "noclamp" else swiglu_oai
    r = round_q8_0 if quantized else (lambda v: v)
    out = np.zeros_like(h)
    for i in range(len(h)):
        hq = r(h[i])
        for j, e in enumerate(chosen[i]):  # biases [n_expert, n_ff_exp] / [n_expert, n_embd]
            g = t[p + "ffn_gate_exps.weight"][e] @ hq + t[p + "ffn_gate_exps.bias"][e]
            u = t[p + "ffn_up_exps.weight"][e] @ hq + t[p + "ffn_up_exps.bias"][e]
            out[i] += w[i, j] * (t[p + "ffn_down_exps.weight"][e] @ r(act(g, u)) + t[p + "ffn_down_exps.bias"][e])
    return out


def moe_ffn_llama4(t, p, h, n_used, stats, variant=""):
    """Llama 4: the n_used largest router logits (no softmax); each chosen expert gets
    w = sigmoid(its logit) multiplied into its INPUT (expert(w * h), not w * expert(h)); plus the
    shared expert on the unweighted h. Variants: "weight_after" (w * expert(h)), "no_shexp"."""
    logits = h @ t[p + "ffn_gate_inp.weight"].T                       # [n, n_expert]
    order = np.argsort(-logits, axis=1, kind="stable")
    chosen = order[:, :n_used]
    rows = np.arange(len(h))
    stats.append(np.min(logits[rows, order[:, n_used - 1]] - logits[rows, order[:, n_used]]))
    w = 1 / (1 + np.exp(-np.take_along_axis(logits, chosen, 1)))
    gate, up, down = t[p + "ffn_gate_exps.weight"], t[p + "ffn_up_exps.weight"], t[p + "ffn_down_exps.weight"]
    expert = lambda e, v: down[e] @ (silu(gate[e] @ v) * (up[e] @ v))
    out = np.zeros_like(h)
    for i in range(len(h)):
        for j, e in enumerate(chosen[i]):
            out[i] += w[i, j] * expert(e, h[i]) if variant == "weight_after" else expert(e, w[i, j] * h[i])
    if variant != "no_shexp":
        out += (silu(h @ t[p + "ffn_gate_shexp.weight"].T) * (h @ t[p + "ffn_up_shexp.weight"].T)) @ \
            t[p + "ffn_down_shexp.weight"].T
    return out


def forward(m, tokens, gelu, moe_renorm=None, moe_stats=None, variant=""):
    t, arch, n = m.t, m.arch, len(tokens)
    n_embd, n_layer = m.key("embedding_length"), m.key("block_count")
    n_head = m.key("attention.head_count")
    n_kv = m.key("attention.head_count_kv", n_head)
    hd = m.key("attention.key_length", n_embd // n_head)
    n_rot = m.key("rope.dimension_count", hd)
    base = m.key("rope.freq_base", 10000.0)
    eps = m.key("attention.layer_norm_rms_epsilon", m.key("attention.layer_norm_epsilon"))
    neox = arch not in ("llama", "smollm3", "llama4")
    gemma = arch in ("gemma2", "gemma3")
    window, period = m.key("attention.sliding_window", 0), {"gemma2": 2, "gemma3": 6, "gpt-oss": 2}.get(arch, 0)
    # RoPE scaling of the global layers; Gemma 3's local layers use freq_base_swa and no scaling.
    scaling = m.key("rope.scaling.type", "linear")
    factor = m.key("rope.scaling.factor", 0.0)
    freq_scale = 1.0 / factor if factor else 1.0
    n_ctx_orig = m.key("rope.scaling.original_context_length", m.key("context_length"))
    yarn = (n_ctx_orig, 32.0, 1.0) if scaling == "yarn" else None
    factors = t.get("rope_freqs.weight")
    attn_factor = m.key("rope.scaling.attn_factor", 1.0)
    if m.has("rope_factors_long.weight"):  # LongRoPE: llama-logits runs with n_ctx 512
        factors = t["rope_factors_long.weight" if 512 > n_ctx_orig else "rope_factors_short.weight"]

    x = t["token_embd.weight"][tokens]
    if arch == "gpt2":
        x = x + t["position_embd.weight"][np.arange(n)]
    if gemma:
        x = x * float(np.sqrt(np.float32(n_embd)))
    norm = (lambda v, p: layer_norm(v, t[p + ".weight"], t[p + ".bias"], eps)) if arch == "gpt2" else \
        (lambda v, p: rms_norm(v, t[p + ".weight"], eps))
    for l in range(n_layer):
        p = f"blk.{l}."
        local = bool(window) and period > 0 and l % period < period - 1
        # Llama 4 (llama.cpp constants): layers l % 4 < 3 use RoPE, QK L2-norm and chunked
        # attention (chunks of 8192); every 4th layer has no RoPE and scales q by the
        # temperature log(floor((pos + 1) / 8192) + 1) * 0.1 + 1 (1 below position 8191).
        l4_rope = arch == "llama4" and ((l + 1) % 4 != 0 or variant == "rope_all")
        chunk = 8 if variant == "chunk8" else 8192
        h = x if arch == "olmo2" else norm(x, p + "attn_norm")
        if p + "attn_qkv.weight" in t:  # fused rows [q; k; v]
            qkv = h @ t[p + "attn_qkv.weight"].T + t.get(p + "attn_qkv.bias", 0)
            q, k, v = np.split(qkv, [n_head * hd, (n_head + n_kv) * hd], axis=1)
        else:
            q, k, v = (h @ t[p + f"attn_{c}.weight"].T + t.get(p + f"attn_{c}.bias", 0) for c in "qkv")
        if arch in ("olmo2", "olmoe"):  # QK-norm over the whole projection
            q, k = rms_norm(q, t[p + "attn_q_norm.weight"], eps), rms_norm(k, t[p + "attn_k_norm.weight"], eps)
        q, k, v = q.reshape(n, n_head, hd), k.reshape(n, n_kv, hd), v.reshape(n, n_kv, hd)
        if p + "attn_q_norm.weight" in t and arch not in ("olmo2", "olmoe"):  # per head
            q, k = rms_norm(q, t[p + "attn_q_norm.weight"], eps), rms_norm(k, t[p + "attn_k_norm.weight"], eps)
        if arch == "llama4":
            if l4_rope:
                q, k = rope(q, n_rot, neox, base, factors=factors), rope(k, n_rot, neox, base, factors=factors)
                if variant != "no_qk_norm":
                    q, k = rms_norm(q, 1.0, eps), rms_norm(k, 1.0, eps)
            else:
                q = q * (np.log(np.floor((np.arange(n) + 1.0) / 8192) + 1) * 0.1 + 1)[:, None, None]
        elif arch != "gpt2" and not (arch == "smollm3" and (l + 1) % 4 == 0):
            if arch == "gemma3" and local:
                kw = dict(base=m.key("rope.freq_base_swa", 10000.0))
            else:
                kw = dict(base=base, freq_scale=freq_scale, factors=factors, yarn=yarn,
                          attn_factor=attn_factor if yarn is None else 1.0)
            q, k = rope(q, n_rot, neox, **kw), rope(k, n_rot, neox, **kw)
        scores = np.einsum("ihd,jhd->hij", q, np.repeat(k, n_head // n_kv, axis=1)) / math.sqrt(hd)
        if arch == "gemma2":
            cap = m.key("attn_logit_softcapping", 50.0)
            scores = np.tanh(scores / cap) * cap
        i, j = np.arange(n)[:, None], np.arange(n)[None, :]
        visible = (j <= i) & (~local | (i - j < window))  # a window of W keys, the query's own included
        if arch == "llama4" and l % 4 < 3:  # chunked: keys of the query's chunk only
            visible &= j >= (i // chunk) * chunk
        scores = np.where(visible, scores, -np.inf)
        # gpt-oss: a learned logit per head joins each softmax's denominator (a key of value 0)
        sink = t[p + "attn_sinks.weight"][:, None, None] if p + "attn_sinks.weight" in t and variant != "nosink" \
            else np.full((n_head, 1, 1), -np.inf)
        top = np.maximum(scores.max(-1, keepdims=True), sink)
        probs = np.exp(scores - top)
        probs /= probs.sum(-1, keepdims=True) + np.exp(sink - top)
        o = np.einsum("hij,jhd->ihd", probs, np.repeat(v, n_head // n_kv, axis=1)).reshape(n, -1)
        o = o @ t[p + "attn_output.weight"].T + t.get(p + "attn_output.bias", 0)
        if p + "post_attention_norm.weight" in t and arch != "gpt-oss":
            o = norm(o, p + "post_attention_norm")
        x = x + o
        if arch == "gpt-oss":  # post_attention_norm is the norm before the MoE
            x = x + moe_ffn_oss(t, p, norm(x, p + "post_attention_norm"), m.key("expert_used_count"), moe_stats,
                                variant, p + "ffn_up_exps.weight" in m.quantized and variant != "no_q8")
            continue
        h = x if arch == "olmo2" else norm(x, p + "ffn_norm")
        if arch == "llama4" and p + "ffn_gate_inp.weight" in t:
            x = x + moe_ffn_llama4(t, p, h, m.key("expert_used_count"), moe_stats, variant)
            continue
        if p + "ffn_gate_inp.weight" in t:
            x = x + moe_ffn(t, p, h, m.key("expert_used_count"), moe_renorm, moe_stats)
            continue
        up = h @ t[p + "ffn_up.weight"].T + t.get(p + "ffn_up.bias", 0)
        if arch == "gpt2":
            a = gelu(up)
        elif arch == "phi3":  # fused rows [gate; up]
            a = silu(up[:, : up.shape[1] // 2]) * up[:, up.shape[1] // 2:]
        else:
            a = (gelu if gemma else silu)(h @ t[p + "ffn_gate.weight"].T) * up
        f = a @ t[p + "ffn_down.weight"].T + t.get(p + "ffn_down.bias", 0)
        if p + "post_ffw_norm.weight" in t:
            f = norm(f, p + "post_ffw_norm")
        x = x + f
    logits = norm(x, "output_norm") @ t.get("output.weight", t["token_embd.weight"]).T
    cap = m.key("final_logit_softcapping", 30.0 if arch == "gemma2" else 0.0)
    return np.tanh(logits / cap) * cap if cap else logits


def forward_deepseek2(m, tokens, stats, variant=""):
    """DeepSeek-V3 (tests/golden/moe/README.md): multi-head latent attention, dense leading layers,
    sigmoid routing with selection bias and expert groups, shared experts. Variants switch one fact:
    group_max (a group scored by its best expert, DeepSeek-V2's rule), bias_in_weights (the selection
    bias also in the weights), logmul1 (mscale with mscale_all_dim 1), neox (NeoX RoPE pairing),
    rope_first (each q head laid out [rope | nope])."""
    t, n = m.t, len(tokens)
    n_head, eps = m.key("attention.head_count"), m.key("attention.layer_norm_rms_epsilon")
    dk, n_rot, kv_lora = m.key("attention.key_length_mla"), m.key("rope.dimension_count"), m.key("attention.kv_lora_rank")
    nope = dk - n_rot
    factor = m.key("rope.scaling.factor", 0.0)
    freq_scale = 1.0 / factor if factor else 1.0
    yarn = (m.key("rope.scaling.original_context_length"), 32.0, 1.0) if m.key("rope.scaling.type") == "yarn" else None
    mscale_all = m.key("rope.scaling.yarn_log_multiplier", 0.0) / 0.1
    if variant == "logmul1":
        mscale_all = 1.0
    mscale = 1 + 0.1 * mscale_all * math.log(factor) if yarn else 1.0
    kq_scale = mscale * mscale / math.sqrt(dk)
    rope_attn = 1 / (1 + 0.1 * math.log(factor)) if yarn else 1.0  # cancelled inside the kernel
    rot = lambda v: rope(v, n_rot, variant == "neox", m.key("rope.freq_base"), freq_scale, yarn=yarn, attn_factor=rope_attn)
    n_expert, k = m.key("expert_count"), m.key("expert_used_count")
    groups, groups_used = m.key("expert_group_count", 0), m.key("expert_group_used_count", 0)
    sigmoid = m.key("expert_gating_func", 1) == 2
    w_norm, w_scale = m.key("expert_weights_norm", False), m.key("expert_weights_scale", 0.0)
    mask = np.triu(np.full((n, n), -np.inf), 1)
    x = t["token_embd.weight"][tokens]
    for l in range(m.key("block_count")):
        p = f"blk.{l}."
        h = rms_norm(x, t[p + "attn_norm.weight"], eps)
        if p + "attn_q_a.weight" in t:
            q = rms_norm(h @ t[p + "attn_q_a.weight"].T, t[p + "attn_q_a_norm.weight"], eps) @ t[p + "attn_q_b.weight"].T
        else:
            q = h @ t[p + "attn_q.weight"].T
        q = q.reshape(n, n_head, dk)
        q_nope, q_pe = (q[..., n_rot:], q[..., :n_rot]) if variant == "rope_first" else (q[..., :nope], q[..., nope:])
        q_pe = rot(q_pe)
        c = h @ t[p + "attn_kv_a_mqa.weight"].T                           # [n, kv_lora + n_rot]
        latent = rms_norm(c[:, :kv_lora], t[p + "attn_kv_a_norm.weight"], eps)
        k_pe = rot(c[:, None, kv_lora:])[:, 0]                             # [n, n_rot], one for all heads
        k_b, v_b = t[p + "attn_k_b.weight"], t[p + "attn_v_b.weight"]      # [n_head, kv_lora, nope], [n_head, v, kv_lora]
        outs = []
        for hh in range(n_head):
            k_nope = latent @ k_b[hh]                                      # [n, nope]
            v = latent @ v_b[hh].T                                         # [n, v]
            s = (q_nope[:, hh] @ k_nope.T + q_pe[:, hh] @ k_pe.T) * kq_scale + mask
            pr = np.exp(s - s.max(-1, keepdims=True))
            outs.append((pr / pr.sum(-1, keepdims=True)) @ v)
        x = x + np.concatenate(outs, 1) @ t[p + "attn_output.weight"].T
        h = rms_norm(x, t[p + "ffn_norm.weight"], eps)
        if p + "ffn_gate.weight" in t:
            x = x + (silu(h @ t[p + "ffn_gate.weight"].T) * (h @ t[p + "ffn_up.weight"].T)) @ t[p + "ffn_down.weight"].T
            continue
        logits = h @ t[p + "ffn_gate_inp.weight"].T                        # [n, n_expert]
        if sigmoid:
            probs = 1 / (1 + np.exp(-logits))
        else:
            probs = np.exp(logits - logits.max(-1, keepdims=True))
            probs /= probs.sum(-1, keepdims=True)
        sel = probs + t.get(p + "exp_probs_b.bias", 0.0)
        if groups > 1:
            g = sel.reshape(n, groups, -1)
            score = g.max(-1) if variant == "group_max" else np.sort(g, -1)[..., -2:].sum(-1)
            order = np.argsort(-score, axis=1, kind="stable")
            rows = np.arange(n)
            stats.append(np.min(score[rows, order[:, groups_used - 1]] - score[rows, order[:, groups_used]]))
            keep = np.zeros_like(score, dtype=bool)
            np.put_along_axis(keep, order[:, :groups_used], True, 1)
            sel = np.where(np.repeat(keep, n_expert // groups, 1), sel, -np.inf)
        order = np.argsort(-sel, axis=1, kind="stable")
        rows = np.arange(n)
        nxt = sel[rows, order[:, k]]
        stats.append(np.min(np.where(np.isfinite(nxt), sel[rows, order[:, k - 1]] - nxt, np.inf)))
        chosen = order[:, :k]
        w = np.take_along_axis(sel if variant == "bias_in_weights" else probs, chosen, 1)
        if w_norm:
            w = w / np.maximum(w.sum(-1, keepdims=True), 6.103515625e-5)
        if w_scale not in (0.0, 1.0):
            w = w * w_scale
        gate, up, down = t[p + "ffn_gate_exps.weight"], t[p + "ffn_up_exps.weight"], t[p + "ffn_down_exps.weight"]
        y = (silu(h @ t[p + "ffn_gate_shexp.weight"].T) * (h @ t[p + "ffn_up_shexp.weight"].T)) @ t[p + "ffn_down_shexp.weight"].T
        for i in range(n):
            for j, e in enumerate(chosen[i]):
                y[i] += w[i, j] * (down[e] @ (silu(gate[e] @ h[i]) * (up[e] @ h[i])))
        x = x + y
    return rms_norm(x, t["output_norm.weight"], eps) @ t.get("output.weight", t["token_embd.weight"]).T


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    prefix = sys.argv[1]
    m = Model(prefix + ".gguf")
    tokens = [int(w) for w in open(prefix + ".tokens.txt").read().split()]
    ref = np.fromfile(prefix + ".logits.f32", np.float32).reshape(len(tokens), -1)
    if m.arch == "deepseek2":
        for variant in ("", "group_max", "bias_in_weights", "logmul1", "neox", "rope_first"):
            stats = []
            got = forward_deepseek2(m, tokens, stats, variant)
            print(f"{prefix.rsplit('/', 1)[-1]} ({variant or 'as llama.cpp'}): max |logit - llama.cpp| = "
                  f"{np.abs(got - ref).max():.3g}, smallest router margin (groups and experts) {min(stats):.3g}")
        return
    if m.arch in ("gpt-oss", "llama4"):
        variants = ("", "noclamp", "softmax_all", "nosink") + (("no_q8",) if m.quantized else ()) if m.arch == "gpt-oss" \
            else ("", "rope_all", "no_qk_norm", "weight_after", "no_shexp", "chunk8")
        for variant in variants:
            stats = []
            got = forward(m, tokens, gelu_exact, moe_stats=stats, variant=variant)
            print(f"{prefix.rsplit('/', 1)[-1]} ({variant or 'as llama.cpp'}): max |logit - llama.cpp| = "
                  f"{np.abs(got - ref).max():.3g}, smallest router margin {min(stats):.3g}")
        return
    if m.key("expert_count", 0):
        for renorm in (MOE_RENORM[m.arch], not MOE_RENORM[m.arch]):
            stats = []
            got = forward(m, tokens, gelu_exact, renorm, stats)
            print(f"{prefix.rsplit('/', 1)[-1]} (MoE top-k weights {'renormalised' if renorm else 'not renormalised'}): "
                  f"max |logit - llama.cpp| = {np.abs(got - ref).max():.3g}, smallest router margin "
                  f"(k-th minus (k+1)-th logit) {min(stats) if stats else float('nan'):.3g}")
        return
    for name, gelu in (("ggml fp16-table GELU", gelu_ggml), ("exact GELU", gelu_exact)):
        got = forward(m, tokens, gelu)
        print(f"{prefix.rsplit('/', 1)[-1]} ({name}): max |logit - llama.cpp| = {np.abs(got - ref).max():.3g}, "
              f"argmax agrees at {(got.argmax(1) == ref.argmax(1)).mean():.0%} of positions")
        if m.arch not in ("gpt2", "gemma2", "gemma3"):
            break


if __name__ == "__main__":
    main()
