#!/usr/bin/env python3
"""Checks the training forward (train.py) against llama.cpp: computes the logits of a zoo model
for the tokens llama.cpp used and compares them with llama.cpp's (the oracle's llama-logits
output PREFIX.tokens.txt / PREFIX.logits.f32). A wrong fact in the training forward (RoPE
pairing, norm placement, routing) would train a model that llama.cpp runs differently.

    check_forward.py MODEL.gguf ORACLE_PREFIX
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_file  # noqa: E402
import train  # noqa: E402


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    meta, tensors = gguf_file.read(sys.argv[1])
    hp = train.Hparams(meta)
    params = {n: torch.from_numpy(a.astype(np.float64)) for n, a in tensors.items()}
    tokens = [int(w) for w in open(sys.argv[2] + ".tokens.txt").read().split()]
    ref = np.fromfile(sys.argv[2] + ".logits.f32", np.float32).reshape(len(tokens), -1)
    torch.set_default_dtype(torch.float64)
    with torch.no_grad():
        got = train.forward(hp, params, torch.tensor([tokens]), [])[0].numpy()
    diff = np.abs(got - ref).max()
    print(f"{os.path.basename(sys.argv[1])}: max |logit - llama.cpp| = {diff:.3g} over {len(tokens)} tokens, "
          f"argmax agrees at {(got.argmax(1) == ref.argmax(1)).mean():.0%}")
    sys.exit(0 if diff < 1e-3 else 1)


if __name__ == "__main__":
    main()
