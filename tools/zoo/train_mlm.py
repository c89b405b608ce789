#!/usr/bin/env python3
"""Trains zoo-bert, a tiny BERT, by masked-language modelling on the zoo corpus, on the CPU with
PyTorch (Debian's python3-torch), and writes it as GGUF that llama.cpp and vkllm load.

    train_mlm.py --corpus CORPUS_DIR --vocab VOCAB.gguf --random-model BIN --out zoo-bert.gguf [--steps N]
    train_mlm.py --corpus CORPUS_DIR --describe zoo-bert.gguf      (held-out MLM loss, outlier dimensions)

CORPUS_DIR holds train.txt/heldout.txt and their WordPiece ids (wordpiece.py encode); VOCAB.gguf
is wordpiece.py's vocabulary. As train.py does for the decoders, vkllm-random-model writes a
skeleton of the `bert` architecture (llama.cpp's tensor names, shapes and metadata) and this
script trains its tensors with a forward that computes what llama.cpp computes for BERT:

    x = LayerNorm(token_embd[id] + token_types[0] + position_embd[pos])
    per layer: x = LayerNorm(x + Attention(x))         (bidirectional, biases; attn_output_norm)
               x = LayerNorm(x + W_down GELU(W_up x))  (biases; GELU's tanh form; layer_output_norm)

The masked-LM head is the token embedding matrix itself: logits = x_final @ token_embd^T, with
no transform layer and no output bias, so the file carries no tensor llama.cpp does not know,
and `vkllm fill-mask` (Session::encode_logits, the tied output projection of the last hidden
state) computes exactly what was trained.

Masking (BERT's rule): 15% of the non-special positions are selected; of those, 80% become
[MASK], 10% a random token, 10% stay; the loss is the cross-entropy at the selected positions.
Each sequence is [CLS] + a window of the corpus + [SEP]; the window length is drawn per batch
from 14, 30, 62, 126 tokens (1024 tokens a batch) so that short inputs like a single sentence
are as familiar as long ones. One thread, fixed seeds: reruns give the same file.
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
import gguf_file  # noqa: E402
import wordpiece  # noqa: E402

ARGS = ["--arch", "bert", "--n-embd", "128", "--n-layer", "4", "--n-head", "4", "--n-head-kv", "4", "--n-ff", "256", "--n-ctx", "128"]
STEPS = 1200
TOKENS_PER_BATCH = 1024
WINDOWS = [14, 30, 62, 126]  # text tokens per sequence, without [CLS] and [SEP]
MASK_RATE = 0.15
POOLING_MEAN = 1  # llama.cpp's LLAMA_POOLING_TYPE_MEAN: sentence embeddings of an MLM model


def layer_norm(x, w, b, eps):
    return F.layer_norm(x, (x.shape[-1],), w, b, eps)


def forward(hp, t, tokens, layer_outputs=None):
    """Final hidden states [B, T, n_embd] of BERT as llama.cpp computes them (no padding: every
    sequence of the batch has the same length). `layer_outputs`, if a list, gets each layer's
    output (after its output LayerNorm)."""
    B, T = tokens.shape
    n_head, eps = hp["attention.head_count"], hp["attention.layer_norm_epsilon"]
    x = t["token_embd.weight"][tokens] + t["token_types.weight"][0] + t["position_embd.weight"][:T]
    x = layer_norm(x, t["token_embd_norm.weight"], t["token_embd_norm.bias"], eps)
    hd = x.shape[-1] // n_head
    for l in range(hp["block_count"]):
        p = f"blk.{l}."

        def proj(h, name):
            return h @ t[p + name + ".weight"].T + t[p + name + ".bias"]

        q, k, v = (proj(x, n).view(B, T, n_head, hd) for n in ("attn_q", "attn_k", "attn_v"))
        s = torch.einsum("bihd,bjhd->bhij", q, k) / math.sqrt(hd)
        o = torch.einsum("bhij,bjhd->bihd", s.softmax(-1), v).flatten(2)
        x = layer_norm(x + proj(o, "attn_output"), t[p + "attn_output_norm.weight"], t[p + "attn_output_norm.bias"], eps)
        f = proj(F.gelu(proj(x, "ffn_up"), approximate="tanh"), "ffn_down")
        x = layer_norm(x + f, t[p + "layer_output_norm.weight"], t[p + "layer_output_norm.bias"], eps)
        if layer_outputs is not None:
            layer_outputs.append(x)
    return x


def mlm_logits(t, hidden):
    return hidden @ t["token_embd.weight"].T  # the head tied to the token embeddings


def masked_batch(ids, rng, n_vocab, window):
    """(inputs, targets) [B, window + 2]: targets are -100 except at the selected positions."""
    batch = TOKENS_PER_BATCH // (window + 2)
    starts = rng.integers(0, len(ids) - window, batch)
    text = np.stack([ids[s:s + window] for s in starts]).astype(np.int64)
    selected = rng.random(text.shape) < MASK_RATE
    action = rng.random(text.shape)
    inputs = text.copy()
    inputs[selected & (action < 0.8)] = wordpiece.MASK
    randomised = selected & (action >= 0.8) & (action < 0.9)
    # random replacements are ordinary tokens (never a special one)
    inputs[randomised] = rng.integers(len(wordpiece.SPECIALS), n_vocab, randomised.sum())
    targets = np.where(selected, text, -100)
    col = lambda v: np.full((batch, 1), v, np.int64)  # noqa: E731
    inputs = np.concatenate([col(wordpiece.CLS), inputs, col(wordpiece.SEP)], 1)
    targets = np.concatenate([col(-100), targets, col(-100)], 1)
    return torch.from_numpy(inputs), torch.from_numpy(targets)


def mlm_loss(hp, t, inputs, targets):
    keep = targets != -100
    logits = mlm_logits(t, forward(hp, t, inputs)[keep])  # the head at the selected positions only
    loss = F.cross_entropy(logits, targets[keep])
    correct = (logits.argmax(-1) == targets[keep]).sum().item()
    return loss, correct, int(keep.sum())


def heldout(hp, t, ids, n_vocab, n_batches=16):
    """Mean masked-LM loss and accuracy (top-1 at the selected positions) over held-out batches
    of 62-token windows (a fixed seed, so every run measures the same positions)."""
    rng = np.random.default_rng(12345)
    loss_sum, correct, count = 0.0, 0, 0
    with torch.no_grad():
        for _ in range(n_batches):
            x, y = masked_batch(ids, rng, n_vocab, 62)
            loss, c, n = mlm_loss(hp, t, x, y)
            loss_sum, correct, count = loss_sum + loss.item() * n, correct + c, count + n
    return loss_sum / count, correct / count


def describe(path, corpus):
    """The held-out masked-LM loss and accuracy of a trained file, and BERT busters' outlier
    dimensions (Kovaleva et al. 2021): per layer, each channel's largest |x| after the output
    LayerNorm over held-out windows against the median channel's, and the LayerNorm weights
    more than 3 standard deviations from their layer's mean."""
    meta, tensors = gguf_file.read(path)
    hp = {k[len("bert."):]: v.value for k, v in meta.items() if k.startswith("bert.")}
    t = {n: torch.from_numpy(a) for n, a in tensors.items()}
    ids = np.fromfile(os.path.join(corpus, "heldout.wp.ids"), np.uint16)
    n_vocab = len(meta["tokenizer.ggml.tokens"].value)
    loss, acc = heldout(hp, t, ids, n_vocab)
    print(f"{path}: held-out masked-LM loss {loss:.3f}, accuracy {acc:.3f}")
    rng = np.random.default_rng(777)
    outputs = []
    with torch.no_grad():
        starts = rng.integers(0, len(ids) - 126, 32)  # 32 windows of plain text, no masks
        text = np.stack([np.concatenate([[wordpiece.CLS], ids[s:s + 126], [wordpiece.SEP]]) for s in starts])
        forward(hp, t, torch.from_numpy(text.astype(np.int64)), outputs)
    print("layer  largest |x| channel  median channel's  ratio   LayerNorm weight outliers (|w - mean| > 3 sd)")
    for l, out in enumerate(outputs):
        peak = out.abs().flatten(0, 1).max(0).values  # per channel
        top = int(peak.argmax())
        w = t[f"blk.{l}.layer_output_norm.weight"]
        far = ((w - w.mean()).abs() > 3 * w.std()).nonzero().flatten().tolist()
        far_text = ", ".join(f"{c} ({float(w[c]):+.2f})" for c in far) or "none"
        print(f"{l:5d}  {float(peak[top]):11.2f} {top:7d}  {float(peak.median()):16.2f}  {float(peak[top] / peak.median()):5.1f}x"
              f"  mean {float(w.mean()):.2f} sd {float(w.std()):.2f}: {far_text}")


def initial_params(tensors, n_layer):
    """The skeleton's random values, LayerNorm weights at 1 and biases at 0, the projections
    into the residual stream scaled by 1/sqrt(2 n_layer) (as train.py)."""
    params = {}
    for name, a in tensors.items():
        a = torch.from_numpy(a.copy())
        if name.endswith("norm.weight"):
            a = torch.ones_like(a)
        elif name.endswith(".bias"):
            a = torch.zeros_like(a)
        elif name.endswith(("attn_output.weight", "ffn_down.weight")):
            a = a / math.sqrt(2 * n_layer)
        params[name] = torch.nn.Parameter(a)
    return params


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--corpus", required=True, help="directory with train.wp.ids and heldout.wp.ids (wordpiece.py encode)")
    ap.add_argument("--vocab", help="the WordPiece vocabulary GGUF (wordpiece.py train)")
    ap.add_argument("--random-model", help="path of the vkllm-random-model binary")
    ap.add_argument("--out")
    ap.add_argument("--describe", metavar="MODEL", help="describe a trained file instead of training")
    ap.add_argument("--steps", type=int, default=STEPS)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(1)
    if args.describe:
        describe(args.describe, args.corpus)
        return
    if not (args.vocab and args.random_model and args.out):
        ap.error("training needs --vocab, --random-model and --out")
    torch.manual_seed(args.seed)  # one thread (above): deterministic (see train.py)

    with tempfile.TemporaryDirectory() as tmp:
        skeleton = os.path.join(tmp, "skeleton.gguf")
        subprocess.run([args.random_model, "--out", skeleton, "--seed", str(args.seed), "--name", "zoo-bert",
                        "--vocab-from", args.vocab] + ARGS, check=True)
        meta, tensors = gguf_file.read(skeleton)
    meta["bert.pooling_type"] = gguf_file.u32(POOLING_MEAN)
    hp = {k[len("bert."):]: v.value for k, v in meta.items() if k.startswith("bert.")}
    n_vocab = len(meta["tokenizer.ggml.tokens"].value)
    params = initial_params(tensors, hp["block_count"])
    n_params = sum(p.numel() for p in params.values())
    print(f"zoo-bert: {n_params} parameters, vocabulary {n_vocab}, {args.steps} steps of {TOKENS_PER_BATCH} tokens",
          flush=True)

    train_ids = np.fromfile(os.path.join(args.corpus, "train.wp.ids"), np.uint16)
    heldout_ids = np.fromfile(os.path.join(args.corpus, "heldout.wp.ids"), np.uint16)
    decay = [p for n, p in params.items() if p.dim() >= 2]
    no_decay = [p for n, p in params.items() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.98))
    warmup = max(1, args.steps // 20)
    rng = np.random.default_rng(args.seed)
    start = time.time()
    for step in range(args.steps):
        lr = args.lr * min(1.0, (step + 1) / warmup) * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / args.steps)))
        for group in opt.param_groups:
            group["lr"] = lr
        x, y = masked_batch(train_ids, rng, n_vocab, WINDOWS[rng.integers(len(WINDOWS))])
        loss, correct, count = mlm_loss(hp, params, x, y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(list(params.values()), 1.0)
        opt.step()
        if step % 20 == 0 or step == args.steps - 1:
            print(f"step {step:5d}  loss {loss.item():.3f}  acc {correct / count:.3f}  lr {lr:.2e}  "
                  f"{time.time() - start:6.0f} s", flush=True)
    minutes = (time.time() - start) / 60
    held_loss, held_acc = heldout(hp, params, heldout_ids, n_vocab)
    print(f"held-out masked-LM loss {held_loss:.3f}, accuracy {held_acc:.3f} after {minutes:.1f} min", flush=True)

    gguf_file.write(args.out, meta, {name: p.detach().numpy() for name, p in params.items()})
    record = os.path.join(os.path.dirname(os.path.abspath(args.out)), "training", "zoo-bert.json")
    os.makedirs(os.path.dirname(record), exist_ok=True)
    with open(record, "w") as f:
        json.dump({"model": "zoo-bert", "arch": "bert", "parameters": n_params, "layers": hp["block_count"],
                   "width": hp["embedding_length"], "vocabulary": n_vocab, "steps": args.steps,
                   "tokens_seen": args.steps * TOKENS_PER_BATCH, "minutes": round(minutes, 1),
                   "train_mlm_loss": round(loss.item(), 3), "heldout_mlm_loss": round(held_loss, 3),
                   "heldout_mlm_accuracy": round(held_acc, 3),
                   "command": "tools/zoo/train_mlm.py" + (f" --steps {args.steps}" if args.steps != STEPS else "")},
                  f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
