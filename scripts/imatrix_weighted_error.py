#!/usr/bin/env python3
"""The error a quantized file's weights make on held-out activations, as an importance matrix
measures it: for each weight W the imatrix of HELDOUT (sums of x_j^2 over held-out tokens) covers,
sum over rows and columns of imp_j * (W - Q)^2, over the same sum of imp_j * W^2 (so the mean
squared error of W x against Q x over those tokens, relative to that of W x, with the tokens'
columns taken as independent). Run with the llama-oracle's env (gguf-py on PYTHONPATH).

    imatrix_weighted_error.py HELDOUT.imatrix.gguf F32.gguf Q1.gguf [Q2.gguf ...]

prints one line per quantized file: its relative weighted error over the covered weights whose
type differs from F32's, and how many weights that is."""
import sys

import numpy as np
from gguf import GGUFReader
from gguf.quants import dequantize


def tensors(path):
    r = GGUFReader(path)
    return {t.name: t for t in r.tensors}


def values(t):
    return np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float64).reshape(-1, int(t.shape[0]))


def main():
    held, ref_path, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    imat = tensors(held)
    ref = tensors(ref_path)
    for path in files:
        q = tensors(path)
        num = den = 0.0
        n = 0
        for name, t in q.items():
            s, c = imat.get(name + ".in_sum2"), imat.get(name + ".counts")
            if s is None or t.tensor_type == ref[name].tensor_type:
                continue
            counts = np.asarray(c.data, dtype=np.float64).reshape(-1)
            sums = np.asarray(s.data, dtype=np.float64).reshape(len(counts), -1)
            imp = sums / np.maximum(counts, 1)[:, None]  # [n_mat, cols]
            w, wq = values(ref[name]), values(t)
            rows = w.shape[0] // len(counts)
            for m in range(len(counts)):
                d = w[m * rows:(m + 1) * rows] - wq[m * rows:(m + 1) * rows]
                num += float((d * d * imp[m]).sum())
                den += float((w[m * rows:(m + 1) * rows] ** 2 * imp[m]).sum())
            n += 1
        print(f"{path}: {num / den if den else float('nan'):.5f} over {n} weights")


if __name__ == "__main__":
    main()
