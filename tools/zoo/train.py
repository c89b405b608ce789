#!/usr/bin/env python3
"""Trains one zoo model on the CPU with PyTorch (Debian's python3-torch) and writes it as GGUF.

The model's layout comes from vkllm's random-model writer (tools/random_model): it writes a
"skeleton" GGUF with llama.cpp's tensor names, shapes and metadata keys for the architecture (the
same writer whose files llama.cpp loads in the golden tests). This script reads the skeleton,
trains its tensors with a PyTorch forward that computes what llama.cpp computes for that
architecture (the facts are in tests/golden/families/README.md, tests/golden/moe/README.md and,
for the Mamba-2 layers of forward_ssm.py, tests/golden/ssm/README.md; tools/random_model's
numpy forwards check them against llama.cpp, check_forward.py this forward), and writes the
skeleton back with the trained values. A preset with `masked` trains on part of the text only
(zoo-chat: the assistant's turns, tokenizer.py's loss mask).

    train.py MODEL --corpus CORPUS_DIR --vocab VOCAB.gguf --random-model BIN --out MODEL.gguf
             [--steps N | --minutes M]

--minutes M picks the number of steps from the time of three trial steps (forward and backward
on a throw-away copy of the weights) so that training takes about M minutes on this machine; the
chosen count is printed and kept in the training record, and `--steps N` with it reproduces the
model exactly.

MODEL is one of the PRESETS below. Seeds are fixed and training runs a fixed number of steps on
one thread (PyTorch's and, set by make-zoo.sh, OpenBLAS's): two runs give bit-identical models on
the same software. (With two threads, PyTorch's parallel reductions differ in the last bits from
run to run, and it is no faster on two cores; make-zoo.sh runs two models at once instead.)
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import forward_ssm  # noqa: E402
import gguf_file  # noqa: E402

COMMON = ["--n-ctx", "256"]
PRESETS = {
    # Llama: RMSNorm, RoPE, grouped-query attention (4 query heads share 2 key/value heads), SwiGLU.
    "zoo-dense": dict(steps=400, args=["--arch", "llama", "--n-embd", "128", "--n-layer", "4", "--n-head", "4",
                                       "--n-head-kv", "2", "--n-ff", "384", "--tied"]),
    # Gemma 3: five sliding-window layers (window 32) then one global layer; sandwich norms, q/k norms, GeGLU.
    "zoo-swa": dict(steps=300, args=["--arch", "gemma3", "--n-embd", "128", "--n-layer", "6", "--n-head", "4",
                                     "--n-head-kv", "2", "--head-dim", "32", "--n-ff", "256",
                                     "--sliding-window", "32"]),
    # Mixtral: the Llama layout with 8 SwiGLU experts per layer, the top 2 per token.
    "zoo-moe": dict(steps=300, args=["--arch", "llama", "--n-embd", "96", "--n-layer", "4", "--n-head", "4",
                                     "--n-head-kv", "2", "--n-ff", "96", "--n-expert", "8", "--n-expert-used", "2",
                                     "--tied"]),
    # DeepSeek-V2: multi-head latent attention (a 32-wide latent key/value, a shared 16-wide RoPE key),
    # one dense layer, then layers of 8 routed experts (top 2, softmax gating) plus one shared expert.
    "zoo-mla": dict(steps=300, args=["--arch", "deepseek2", "--n-embd", "128", "--n-layer", "4", "--n-head", "4",
                                     "--n-head-kv", "1", "--head-dim", "48", "--rope-dims", "16",
                                     "--q-lora-rank", "0", "--kv-lora-rank", "32", "--v-head-dim", "32",
                                     "--leading-dense", "1", "--n-ff", "256", "--n-expert", "8",
                                     "--n-expert-used", "2", "--n-expert-shared", "1", "--n-ff-exp", "64",
                                     "--expert-gating", "softmax", "--expert-weights-norm", "0",
                                     "--expert-weights-scale", "1", "--tied"]),
    # zoo-dense's layout trained on corpus_chat.py's ChatML conversations (tokenizer.py --chatml),
    # the loss on the assistant's turns only.
    # 618 steps: what --minutes 28 chose for the committed file (as zoo-hybrid's 659).
    "zoo-chat": dict(steps=618, masked=True, args=["--arch", "llama", "--n-embd", "128", "--n-layer", "4",
                                                   "--n-head", "4", "--n-head-kv", "2", "--n-ff", "384", "--tied"]),
    # Granite 4.0-H's layout: Mamba-2 layers (8 heads of 32, d_state 32, one B/C group, 4 conv taps)
    # with one attention layer (4 query heads, 2 key/value heads, RoPE) in six, a SwiGLU FFN after each.
    "zoo-hybrid": dict(steps=659, args=["--arch", "granitehybrid", "--n-embd", "128", "--n-layer", "6",
                                        "--layers", "MMM*MM", "--n-head", "4", "--n-head-kv", "2", "--n-ff", "192",
                                        "--ssm-state", "32", "--ssm-head-dim", "32", "--ssm-groups", "1",
                                        "--ssm-conv", "4", "--tied"]),
    # The super-weight specimen: a deeper Llama trained longer on corpus_broad.py's corpus
    # (its own tokenizer, trained on that corpus); see assets/zoo/README.md.
    # Its windows start with BOS, as every prompt does at inference (vkllm and llama.cpp add it):
    # the first position is then always the same token, the one real LLMs park attention on.
    "zoo-deep": dict(steps=2900, bos=True, args=["--arch", "llama", "--n-embd", "96", "--n-layer", "8", "--n-head", "4",
                                                 "--n-head-kv", "2", "--n-ff", "256", "--tied"]),
    # The importance-matrix specimen: every matrix's rows a multiple of 256 wide (the block of the
    # K-quants and of most i-quants), so IQ2_XXS and Q2_K apply to all of them, not only to a few
    # (docs/imatrix.md). zoo-dense's corpus and vocabulary; windows led by BOS, as imatrix and
    # perplexity chunks are. 1.44 M parameters: the matrices are stored in F16 (2.9 MB; F32 5.8 MB).
    # 1475 steps: what --minutes 28 chose for the committed file.
    "zoo-wide": dict(steps=1475, bos=True, f16=True, args=["--arch", "llama", "--n-embd", "256", "--n-layer", "2",
                                                           "--n-head", "4", "--n-head-kv", "2", "--n-ff", "512",
                                                           "--tied"]),
    # The importance-matrix specimen that 2 bits hurt: zoo-wide's width (every matrix 256-multiples
    # wide, FFN 768) trained on corpus_facts.py's table of made-up people (its own tokenizer), whose
    # facts the held-out text can only be predicted from memory; after training each input
    # channel's scale is moved, by a factor log-uniform in [1/2, 2], between the matrix column and
    # what feeds it (`salient`: move_channel_scales, the same function), so the matrices' inputs
    # differ in scale from channel to channel as large models' do (docs/imatrix.md).
    # 622 steps: what --minutes 10 chose for the committed file.
    "zoo-facts": dict(steps=622, bos=True, f16=True, salient=2.0,
                      args=["--arch", "llama", "--n-embd", "256", "--n-layer", "2", "--n-head", "4", "--n-head-kv", "2",
                            "--n-ff", "768", "--tied"]),
}
SSM_ARCHS = ("mamba2", "granitehybrid")
SEQ, BATCH = 256, 16
AUX_LOSS = 0.01  # weight of the experts' load-balancing loss (Switch Transformer's)


class Hparams:
    def __init__(self, meta):
        self.meta = meta
        self.arch = meta["general.architecture"].value

    def get(self, key, default=None):
        v = self.meta.get(f"{self.arch}.{key}")
        return default if v is None else v.value


def rms_norm(x, w, eps):
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def rope_tables(n, n_rot, base):
    i = torch.arange(n_rot // 2, dtype=torch.float64)
    theta = torch.arange(n, dtype=torch.float64)[:, None] * base ** (-2.0 * i / n_rot)
    return torch.cos(theta).float(), torch.sin(theta).float()  # [n, n_rot/2]


def rope(x, tables, neox):
    """ggml_rope on x [B, T, H, D] (all D dims rotate): pairs (i, i + D/2) for NeoX, else (2i, 2i+1)."""
    cos, sin = tables[0][None, :, None, :], tables[1][None, :, None, :]
    if neox:
        a, b = x.chunk(2, -1)
        return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2)


def attention(q, k, v, scale, mask):
    """q [B, T, H, D], k/v [B, T, Hkv, D]: key/value head h // (H / Hkv) serves query head h."""
    rep = q.shape[2] // k.shape[2]
    k, v = k.repeat_interleave(rep, 2), v.repeat_interleave(rep, 2)
    s = torch.einsum("bihd,bjhd->bhij", q, k) * scale + mask
    return torch.einsum("bhij,bjhd->bihd", s.softmax(-1), v).flatten(2)


def causal_mask(n, window=0):
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    visible = (j <= i) & ((i - j < window) if window else True)
    return torch.where(visible, 0.0, float("-inf"))


def swiglu(h, gate, up, down):
    return (F.silu(h @ gate.T) * (h @ up.T)) @ down.T


def moe(h, p, t, n_used, renorm, scale, aux):
    """Router softmax over all experts, the n_used largest chosen; their weights renormalised to
    sum 1 (Mixtral) or not (DeepSeek-V2), times `scale`. Every expert is computed for every token
    and weighted (zero for the experts not chosen): simple, and cheap at this size."""
    logits = h @ t[p + "ffn_gate_inp.weight"].T                       # [N, E]
    probs = logits.softmax(-1)
    chosen = logits.topk(n_used, -1).indices                          # [N, K]
    w = probs.gather(1, chosen)
    if renorm:
        w = w / w.sum(-1, keepdim=True)
    weights = torch.zeros_like(probs).scatter(1, chosen, w * scale)   # [N, E]
    gate, up, down = t[p + "ffn_gate_exps.weight"], t[p + "ffn_up_exps.weight"], t[p + "ffn_down_exps.weight"]
    a = F.silu(torch.einsum("nd,efd->nef", h, gate)) * torch.einsum("nd,efd->nef", h, up)
    out = torch.einsum("nef,edf->nd", a * weights[..., None], down)
    n_expert = probs.shape[1]  # load balancing: n_expert * sum_e (share of choices) * (mean probability)
    share = torch.zeros(n_expert).scatter_add(0, chosen.flatten(), torch.ones(chosen.numel())) / chosen.numel()
    aux.append(n_expert * (share * probs.mean(0)).sum())
    return out


def forward(hp, t, tokens, aux):
    """Logits [B, T, vocab] as llama.cpp computes them for the llama, gemma3 and deepseek2 layouts,
    and (forward_ssm.py) the mamba2 and granitehybrid ones."""
    arch = hp.arch
    if arch in SSM_ARCHS:
        return forward_ssm.forward(hp, t, tokens, rms_norm, rope_tables, rope, attention, causal_mask, swiglu)
    B, T = tokens.shape
    n_embd, n_layer = hp.get("embedding_length"), hp.get("block_count")
    n_head = hp.get("attention.head_count")
    n_kv = hp.get("attention.head_count_kv", n_head)
    eps = hp.get("attention.layer_norm_rms_epsilon")
    x = t["token_embd.weight"][tokens]
    if arch == "gemma3":
        x = x * math.sqrt(n_embd)
    if arch == "deepseek2":
        dk, n_rot, kv_lora = hp.get("attention.key_length_mla"), hp.get("rope.dimension_count"), hp.get("attention.kv_lora_rank")
        rot = rope_tables(T, n_rot, hp.get("rope.freq_base"))
        global_mask = causal_mask(T)
    else:
        hd = hp.get("attention.key_length", n_embd // n_head)
        global_rope = rope_tables(T, hd, hp.get("rope.freq_base"))
        local_rope = rope_tables(T, hd, hp.get("rope.freq_base_swa", 10000.0))
        window = hp.get("attention.sliding_window", 0)
        global_mask, local_mask = causal_mask(T), causal_mask(T, window)
    for l in range(n_layer):
        p = f"blk.{l}."
        h = rms_norm(x, t[p + "attn_norm.weight"], eps)
        if arch == "deepseek2":
            q = (h @ t[p + "attn_q.weight"].T).view(B, T, n_head, dk)
            q_nope, q_pe = q[..., :dk - n_rot], rope(q[..., dk - n_rot:], rot, False)
            c = h @ t[p + "attn_kv_a_mqa.weight"].T                      # [B, T, kv_lora + n_rot]
            latent = rms_norm(c[..., :kv_lora], t[p + "attn_kv_a_norm.weight"], eps)
            k_pe = rope(c[..., None, kv_lora:], rot, False)             # [B, T, 1, n_rot]: one for all heads
            k_nope = torch.einsum("btc,hcn->bthn", latent, t[p + "attn_k_b.weight"])
            v = torch.einsum("btc,hvc->bthv", latent, t[p + "attn_v_b.weight"])
            s = (torch.einsum("bihn,bjhn->bhij", q_nope, k_nope) + torch.einsum("bihr,bjr->bhij", q_pe, k_pe[:, :, 0])) \
                / math.sqrt(dk) + global_mask
            o = torch.einsum("bhij,bjhv->bihv", s.softmax(-1), v).flatten(2)
        else:
            local = arch == "gemma3" and l % 6 < 5  # llama.cpp's Gemma 3 pattern: five local, one global
            q = (h @ t[p + "attn_q.weight"].T).view(B, T, n_head, hd)
            k = (h @ t[p + "attn_k.weight"].T).view(B, T, n_kv, hd)
            v = (h @ t[p + "attn_v.weight"].T).view(B, T, n_kv, hd)
            if arch == "gemma3":
                q, k = rms_norm(q, t[p + "attn_q_norm.weight"], eps), rms_norm(k, t[p + "attn_k_norm.weight"], eps)
            neox = arch != "llama"
            tables = local_rope if local else global_rope
            q, k = rope(q, tables, neox), rope(k, tables, neox)
            o = attention(q, k, v, 1 / math.sqrt(hd), local_mask if local else global_mask)
        o = o @ t[p + "attn_output.weight"].T
        if arch == "gemma3":
            o = rms_norm(o, t[p + "post_attention_norm.weight"], eps)
        x = x + o
        h = rms_norm(x, t[p + "ffn_norm.weight"], eps)
        if p + "ffn_gate_inp.weight" in t:
            flat = h.reshape(B * T, n_embd)
            n_used = hp.get("expert_used_count")
            if arch == "deepseek2":
                f = moe(flat, p, t, n_used, hp.get("expert_weights_norm", False), hp.get("expert_weights_scale", 1.0), aux)
                f = f + swiglu(flat, t[p + "ffn_gate_shexp.weight"], t[p + "ffn_up_shexp.weight"], t[p + "ffn_down_shexp.weight"])
            else:
                f = moe(flat, p, t, n_used, True, 1.0, aux)
            f = f.view(B, T, n_embd)
        elif arch == "gemma3":
            f = (F.gelu(h @ t[p + "ffn_gate.weight"].T, approximate="tanh") * (h @ t[p + "ffn_up.weight"].T)) \
                @ t[p + "ffn_down.weight"].T
            f = rms_norm(f, t[p + "post_ffw_norm.weight"], eps)
        else:
            f = swiglu(h, t[p + "ffn_gate.weight"], t[p + "ffn_up.weight"], t[p + "ffn_down.weight"])
        x = x + f
    x = rms_norm(x, t["output_norm.weight"], eps)
    return x @ t.get("output.weight", t["token_embd.weight"]).T


def initial_params(tensors, n_layer):
    """The skeleton's random values (normal, std 1/sqrt(fan-in)), with norms at 1 and the
    projections back into the residual stream scaled by 1/sqrt(2 n_layer) (GPT-2's rule).
    Mamba-2 layers start as mamba_ssm's do: A = -U(1, 16) per head (held as log(-A), see
    model_tensors), dt's bias the inverse softplus of a dt log-uniform in [0.001, 0.1], D = 1."""
    params = {}
    for name, a in tensors.items():
        a = torch.from_numpy(a.copy())
        if "norm" in name:
            a = torch.ones_like(a)
        elif name.endswith(("attn_output.weight", "ffn_down.weight", "ffn_down_exps.weight", "ffn_down_shexp.weight",
                            "ssm_out.weight")):
            a = a / math.sqrt(2 * n_layer)
        elif name.endswith("ssm_a"):
            a = torch.log(torch.empty_like(a).uniform_(1, 16))
        elif name.endswith("ssm_dt.bias"):
            dt = torch.exp(torch.empty_like(a).uniform_(math.log(1e-3), math.log(1e-1)))
            a = dt + torch.log(-torch.expm1(-dt))
        elif name.endswith("ssm_d"):
            a = torch.ones_like(a)
        params[name] = torch.nn.Parameter(a)
    return params


def move_channel_scales(out, hp, spread, seed=5):
    """Moves a factor s_j, log-uniform in [1/spread, spread], of each input channel j of every
    layer matrix from the matrix's column to what feeds it, leaving the model's function as it was
    (up to rounding): attn_norm and ffn_norm gains times s_j and the q/k/v and gate/up columns
    divided by it; ffn_up's rows times s_j and ffn_down's columns divided; attn_v's rows times s_j
    and attn_output's columns (the query heads each key/value head serves) divided. The inputs
    then differ in scale from channel to channel as large models' do (AWQ's salient channels),
    which the 256-wide blocks of a flat 2-bit quantizer cannot follow (zoo-facts, docs/imatrix.md).
    For llama-layout presets with matrices in F32 or F16; `out` holds float32 numpy arrays."""
    rng = np.random.default_rng(seed)

    def scales(n):
        return np.exp(rng.uniform(-math.log(spread), math.log(spread), n)).astype(np.float32)

    n_head, n_kv = hp.get("attention.head_count"), hp.get("attention.head_count_kv")
    for l in range(hp.get("block_count")):
        p = f"blk.{l}."
        a = scales(out[p + "attn_norm.weight"].shape[0])
        out[p + "attn_norm.weight"] *= a
        for m in ("attn_q", "attn_k", "attn_v"):
            out[p + m + ".weight"] /= a[None, :]
        b = scales(out[p + "ffn_norm.weight"].shape[0])
        out[p + "ffn_norm.weight"] *= b
        for m in ("ffn_gate", "ffn_up"):
            out[p + m + ".weight"] /= b[None, :]
        c = scales(out[p + "ffn_up.weight"].shape[0])
        out[p + "ffn_up.weight"] *= c[:, None]
        out[p + "ffn_down.weight"] /= c[None, :]
        d = scales(out[p + "attn_v.weight"].shape[0])
        out[p + "attn_v.weight"] *= d[:, None]
        hd = d.shape[0] // n_kv
        per_head = np.concatenate([d[(h // (n_head // n_kv)) * hd:(h // (n_head // n_kv) + 1) * hd]
                                   for h in range(n_head)])
        out[p + "attn_output.weight"] /= per_head[None, :]


def model_tensors(params):
    """The tensors the forward reads (and the file holds): the parameters, except that a Mamba-2
    layer's A, which must stay negative for the state to decay, is trained as log(-A)."""
    return {n: -torch.exp(p) if n.endswith("ssm_a") else p for n, p in params.items()}


# Not decayed: vectors, and the Mamba-2 layer's per-head A and D and its short convolution.
NO_DECAY = ("ssm_a", "ssm_d", "ssm_conv1d.weight")


BOS = 1  # tokenizer.py's and wordpiece.py's fixed BOS id


IGNORE = -100  # a target F.cross_entropy leaves out (its ignore_index)


def batches(ids, rng, bos=False, mask=None):
    """Random windows of SEQ tokens (inputs) and the next tokens (targets); with `bos` each window
    is BOS followed by SEQ - 1 corpus tokens. With `mask` (one byte per token, zoo-chat's
    assistant turns) only the targets it marks count in the loss."""
    while True:
        starts = rng.integers(0, len(ids) - SEQ - 1, BATCH)
        chunk = np.stack([ids[s:s + SEQ + 1] for s in starts]).astype(np.int64)
        if bos:
            chunk = np.concatenate([np.full((BATCH, 1), BOS, np.int64), chunk[:, :-1]], axis=1)
        targets = chunk[:, 1:]
        if mask is not None:
            marked = np.stack([mask[s + 1:s + SEQ + 1] for s in starts])
            targets = np.where(marked == 1, targets, IGNORE)
        yield torch.from_numpy(chunk[:, :-1]), torch.from_numpy(targets)


def read_split(corpus, split, masked):
    """A split's token ids, and its loss mask for a preset trained on part of the text."""
    ids = np.fromfile(os.path.join(corpus, split + ".ids"), np.uint16)
    if not masked:
        return ids, None
    mask = np.fromfile(os.path.join(corpus, split + ".mask"), np.uint8)
    if len(mask) != len(ids):
        sys.exit(f"{split}.mask has {len(mask)} entries for {len(ids)} tokens (tokenizer.py encode writes both)")
    return ids, mask


def heldout_loss(hp, params, ids, n_batches=16, bos=False, mask=None):
    rng = np.random.default_rng(12345)
    total = 0.0
    with torch.no_grad():
        gen = batches(ids, rng, bos, mask)
        for _ in range(n_batches):
            x, y = next(gen)
            total += F.cross_entropy(forward(hp, model_tensors(params), x, []).flatten(0, 1), y.flatten()).item()
    return total / n_batches


def steps_for_minutes(hp, params, ids, bos, minutes, mask=None):
    """Steps that fit `minutes`, from the time of three trial steps on a copy of the weights (the
    optimizer's update is a small part of a step and is left out)."""
    trial = {n: p.detach().clone().requires_grad_(True) for n, p in params.items()}
    gen = batches(ids, np.random.default_rng(999), bos, mask)
    times = []
    for _ in range(3):
        x, y = next(gen)
        t = time.time()
        aux = []
        loss = F.cross_entropy(forward(hp, model_tensors(trial), x, aux).flatten(0, 1), y.flatten())
        loss.backward()
        times.append(time.time() - t)
    per_step = sorted(times)[1] * 1.1  # the median, plus the update and the logging
    return max(20, int(minutes * 60 / per_step))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", choices=sorted(PRESETS))
    ap.add_argument("--corpus", required=True, help="directory with train.ids and heldout.ids (tokenizer.py encode)")
    ap.add_argument("--vocab", required=True, help="the tokenizer GGUF (tokenizer.py train)")
    ap.add_argument("--random-model", required=True, help="path of the vkllm-random-model binary")
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, help="training steps (default: the preset's)")
    ap.add_argument("--minutes", type=float, help="choose the steps to train for about this long (see above)")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    preset = PRESETS[args.model]
    steps = args.steps or preset["steps"]
    bos = preset.get("bos", False)
    torch.manual_seed(args.seed)
    torch.set_num_threads(1)  # deterministic (see the module comment)

    with tempfile.TemporaryDirectory() as tmp:
        skeleton = os.path.join(tmp, "skeleton.gguf")
        subprocess.run([args.random_model, "--out", skeleton, "--seed", str(args.seed), "--name", args.model,
                        "--vocab-from", args.vocab] + COMMON + preset["args"], check=True)
        meta, tensors = gguf_file.read(skeleton)
    hp = Hparams(meta)
    params = initial_params(tensors, hp.get("block_count"))
    n_params = sum(p.numel() for p in params.values())
    print(f"{args.model}: {hp.arch}, {n_params} parameters, {steps} steps of {BATCH}x{SEQ} tokens", flush=True)

    masked = preset.get("masked", False)
    train_ids, train_mask = read_split(args.corpus, "train", masked)
    heldout_ids, heldout_mask = read_split(args.corpus, "heldout", masked)
    if args.minutes:
        steps = steps_for_minutes(hp, params, train_ids, bos, args.minutes, train_mask)
        print(f"--minutes {args.minutes:g}: {steps} steps", flush=True)
    decay = [p for n, p in params.items() if p.dim() >= 2 and not n.endswith(NO_DECAY)]
    no_decay = [p for n, p in params.items() if p.dim() < 2 or n.endswith(NO_DECAY)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95))
    warmup = max(1, steps // 20)
    gen = batches(train_ids, np.random.default_rng(args.seed), bos, train_mask)
    start = time.time()
    stopped_early = None
    for step in range(steps):
        if args.minutes and time.time() - start > 1.3 * args.minutes * 60:
            # The machine got slower than the trial steps said: stop rather than overrun.
            stopped_early = step
            print(f"stopped after {step} of {steps} steps: past 1.3x --minutes", flush=True)
            break
        lr = args.lr * min(1.0, (step + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / steps)))
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = next(gen)
        aux = []
        loss = F.cross_entropy(forward(hp, model_tensors(params), x, aux).flatten(0, 1), y.flatten())
        total = loss + AUX_LOSS * sum(aux) if aux else loss
        opt.zero_grad()
        total.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        opt.step()
        if step % 20 == 0 or step == steps - 1:
            print(f"step {step:5d}  loss {loss.item():.3f}  lr {lr:.2e}  {time.time() - start:6.0f} s", flush=True)
    minutes = (time.time() - start) / 60
    f16 = preset.get("f16", False)
    if f16:  # matrices stored in F16 (vectors stay F32): the held-out loss is the stored model's
        with torch.no_grad():
            for p in params.values():
                if p.dim() >= 2:
                    p.copy_(p.half().float())
    held = heldout_loss(hp, params, heldout_ids, bos=bos, mask=heldout_mask)
    print(f"held-out loss {held:.3f} after {minutes:.1f} min", flush=True)

    out = {name: p.detach().numpy() for name, p in model_tensors(params).items()}
    if preset.get("salient"):
        move_channel_scales(out, hp, preset["salient"])
    if f16:
        out = {name: a.astype(np.float16) if a.ndim >= 2 else a for name, a in out.items()}
    gguf_file.write(args.out, meta, out)
    # The training record, read by describe.py for assets/zoo/README.md.
    record = os.path.join(os.path.dirname(os.path.abspath(args.out)), "training", args.model + ".json")
    os.makedirs(os.path.dirname(record), exist_ok=True)
    with open(record, "w") as f:
        json.dump({"model": args.model, "arch": hp.arch, "parameters": n_params, "layers": hp.get("block_count"),
                   "width": hp.get("embedding_length"), "steps": steps, "tokens_seen": steps * BATCH * SEQ,
                   "minutes": round(minutes, 1), **({"stopped_after": stopped_early} if stopped_early else {}), "heldout_loss": round(held, 3), "train_loss": round(loss.item(), 3),
                   "command": " ".join(["tools/zoo/train.py", args.model] +
                                      (["--steps", str(steps)] if args.steps or args.minutes else []))},
                  f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
