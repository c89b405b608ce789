#!/usr/bin/env python3
"""An independent float64 numpy forward pass of the dense and MoE families, written from the facts
listed in tests/golden/families/README.md and tests/golden/moe/README.md, compared with llama.cpp's golden logits. It confirms those
facts (a wrong one shows as a large difference) and measures how far an exact computation lands
from llama.cpp's CPU backend (for example GELU through ggml's fp16 table or exactly).

    numpy_forward.py tests/golden/families/NAME        (reads NAME.gguf, .tokens.txt, .logits.f32)
    numpy_forward.py tests/golden/moe/NAME

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


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    prefix = sys.argv[1]
    m = Model(prefix + ".gguf")
    tokens = [int(w) for w in open(prefix + ".tokens.txt").read().split()]
    ref = np.fromfile(prefix + ".logits.f32", np.float32).reshape(len(tokens), -1)
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
