"""The training forward of the state-space zoo models: llama.cpp's Mamba-2 layer (mamba2) and the
Granite 4.0-H hybrid (granitehybrid: Mamba-2 or attention per layer, a SwiGLU FFN after each), in
PyTorch, batched over whole training windows.

The facts (tests/golden/ssm/README.md; tools/random_model/numpy_forward_ssm.py checks them token
by token against llama.cpp): ssm_in gives z | xBC | dt; xBC goes through a causal depthwise
conv1d (d_conv taps, oldest first, zero history) plus bias and SiLU, then splits into x (n_head
heads of head_dim), B and C (n_group groups of d_state; head h reads group h / (n_head / n_group));
dt = softplus(dt + ssm_dt.bias); per head the state S [head_dim][d_state] runs

    S_t = exp(dt_t A) S_{t-1} + dt_t x_t B_t^T,      y_t = S_t C_t + D x_t,

then y * silu(z), an RMSNorm over each group's share of d_inner (times ssm_norm) and ssm_out.

The scan is computed in the chunked matrix form of Mamba-2's SSD (Dao and Gu 2024, "ssd_minimal"),
not a loop over tokens: within a chunk of Q tokens y = (L o C B^T) (dt x) with the decay matrix
L[t][s] = exp(sum_{s<r<=t} dt_r A) for s <= t (0 above the diagonal); each chunk's final state
is carried to the next by the same decays. The same recurrence, so the same numbers up to
rounding.
"""
import math

import torch
import torch.nn.functional as F

CHUNK = 64  # tokens per SSD chunk: the quadratic part is Q x Q per head


def segsum(a):
    """a [..., Q] -> [..., Q, Q]: out[t][s] = sum_{s<r<=t} a[r] for s <= t, -inf above the
    diagonal (exp gives L). Summed after masking, not as a difference of cumulative sums, so
    long runs of strong decay stay exact."""
    q = a.shape[-1]
    x = a[..., None, :].expand(*a.shape, q).transpose(-1, -2)        # x[t][s] = a[t]
    x = x.masked_fill(~torch.tril(torch.ones(q, q, dtype=torch.bool), -1), 0)
    x = x.cumsum(-2)                                                  # sum over r = s+1..t
    return x.masked_fill(~torch.tril(torch.ones(q, q, dtype=torch.bool)), float("-inf"))


def ssd_scan(x, a, b, c, chunk=CHUNK):
    """The scan over a zero initial state. x [B, T, H, P] (already times dt), a [B, T, H] (dt A),
    b and c [B, T, H, N]. Returns y [B, T, H, P]."""
    B_, T, H, P = x.shape
    pad = (-T) % chunk
    if pad:  # padded tokens come after the real ones, so they change nothing before them
        x, a, b, c = (F.pad(v, (0, 0) * (v.dim() - 2) + (0, pad)) for v in (x, a, b, c))
    n = x.shape[1] // chunk
    x, b, c = (v.reshape(B_, n, chunk, H, -1) for v in (x, b, c))
    a = a.reshape(B_, n, chunk, H).permute(0, 3, 1, 2)                # [B, H, n, Q]
    a_cum = a.cumsum(-1)
    # 1. within each chunk: y = (L o C B^T) x
    L = torch.exp(segsum(a))                                          # [B, H, n, Q, Q]
    scores = torch.einsum("bclhn,bcshn->bhcls", c, b) * L
    y = torch.einsum("bhcls,bcshp->bclhp", scores, x)
    # 2. the state each chunk leaves (from its own tokens), decayed to the chunk's end
    decay_to_end = torch.exp(a_cum[..., -1:] - a_cum)                 # [B, H, n, Q]
    states = torch.einsum("bclhn,bhcl,bclhp->bchpn", b, decay_to_end, x)
    # 3. carry states across chunks: the state entering chunk k sums chunk j < k's, decayed
    states = torch.cat([torch.zeros_like(states[:, :1]), states], 1)  # [B, n + 1, H, P, N]
    chunk_decay = torch.exp(segsum(F.pad(a_cum[..., -1], (1, 0))))    # [B, H, n + 1, n + 1]
    entering = torch.einsum("bhzc,bchpn->bzhpn", chunk_decay, states)[:, :-1]
    # 4. what the entering state adds to each token: C_t (decay from the chunk start to t) S
    y = y + torch.einsum("bclhn,bchpn,bhcl->bclhp", c, entering, torch.exp(a_cum))
    return y.reshape(B_, n * chunk, H, P)[:, :T]


def mamba2_mixer(hp, t, p, h, eps):
    """llama.cpp's build_mamba2_layer on the normed input h [B, T, n_embd]."""
    B_, T, _ = h.shape
    d_inner, d_state = hp.get("ssm.inner_size"), hp.get("ssm.state_size")
    n_head, n_group, d_conv = hp.get("ssm.time_step_rank"), hp.get("ssm.group_count"), hp.get("ssm.conv_kernel")
    head_dim, conv_dim = d_inner // n_head, d_inner + 2 * n_group * d_state
    z, xbc, dt = (h @ t[p + "ssm_in.weight"].T).split([d_inner, conv_dim, n_head], -1)
    # causal depthwise conv: output t sees inputs t - d_conv + 1 .. t, the oldest tap first
    xbc = F.conv1d(F.pad(xbc.transpose(1, 2), (d_conv - 1, 0)), t[p + "ssm_conv1d.weight"][:, None, :],
                   t[p + "ssm_conv1d.bias"], groups=conv_dim).transpose(1, 2)
    x, b, c = F.silu(xbc).split([d_inner, n_group * d_state, n_group * d_state], -1)
    x = x.reshape(B_, T, n_head, head_dim)
    per_group = n_head // n_group
    b = b.reshape(B_, T, n_group, d_state).repeat_interleave(per_group, 2)
    c = c.reshape(B_, T, n_group, d_state).repeat_interleave(per_group, 2)
    dt = F.softplus(dt + t[p + "ssm_dt.bias"])  # torch's threshold 20 is llama.cpp's: dt itself above it
    A, D = t[p + "ssm_a"].reshape(n_head), t[p + "ssm_d"].reshape(n_head)
    y = ssd_scan(x * dt[..., None], dt * A, b, c) + x * D[:, None]
    y = y.reshape(B_, T, d_inner) * F.silu(z)
    g = y.reshape(B_, T, n_group, d_inner // n_group)
    g = g * torch.rsqrt((g * g).mean(-1, keepdim=True) + eps) * t[p + "ssm_norm.weight"].reshape(n_group, -1)
    return g.reshape(B_, T, d_inner) @ t[p + "ssm_out.weight"].T


def forward(hp, t, tokens, rms_norm, rope_tables, rope, attention, causal_mask, swiglu):
    """Logits [B, T, vocab] for mamba2 and granitehybrid (llama.cpp's granite-hybrid.cpp: the
    multipliers embedding_scale, attention.scale, residual_scale and logit_scale each applied
    when present and non-zero; a layer is Mamba-2 where its head_count_kv is 0; RoPE on adjacent
    pairs). The attention helpers are train.py's."""
    B, T = tokens.shape
    n_layer, eps = hp.get("block_count"), hp.get("attention.layer_norm_rms_epsilon")
    x = t["token_embd.weight"][tokens]
    if hp.get("embedding_scale"):
        x = x * hp.get("embedding_scale")
    residual = hp.get("residual_scale") or 1.0
    kv_heads = hp.get("attention.head_count_kv", 0)
    if not isinstance(kv_heads, list):
        kv_heads = [kv_heads] * n_layer
    if any(kv_heads):
        n_head = hp.get("attention.head_count")
        hd = hp.get("attention.key_length", hp.get("embedding_length") // n_head)
        tables, mask = rope_tables(T, hd, hp.get("rope.freq_base")), causal_mask(T)
        scale = hp.get("attention.scale") or 1 / math.sqrt(hd)
    for l in range(n_layer):
        p = f"blk.{l}."
        h = rms_norm(x, t[p + "attn_norm.weight"], eps)
        if kv_heads[l] == 0:
            o = mamba2_mixer(hp, t, p, h, eps)
        else:
            q = rope((h @ t[p + "attn_q.weight"].T).view(B, T, n_head, hd), tables, False)
            k = rope((h @ t[p + "attn_k.weight"].T).view(B, T, kv_heads[l], hd), tables, False)
            v = (h @ t[p + "attn_v.weight"].T).view(B, T, kv_heads[l], hd)
            o = attention(q, k, v, scale, mask) @ t[p + "attn_output.weight"].T
        x = x + o * residual
        if p + "ffn_norm.weight" in t:
            h = rms_norm(x, t[p + "ffn_norm.weight"], eps)
            x = x + swiglu(h, t[p + "ffn_gate.weight"], t[p + "ffn_up.weight"], t[p + "ffn_down.weight"]) * residual
    logits = rms_norm(x, t["output_norm.weight"], eps) @ t.get("output.weight", t["token_embd.weight"]).T
    return logits / hp.get("logit_scale") if hp.get("logit_scale") else logits
