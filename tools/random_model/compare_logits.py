#!/usr/bin/env python3
"""Compares two llama-logits outputs (float32 [n_tokens][n_vocab]) position by position.

    compare_logits.py A.logits.f32 B.logits.f32 N_VOCAB

Prints the largest absolute difference, the first and last position whose largest difference
exceeds 1e-6 (llama.cpp's run-to-run noise is 0), and the logit spread of A for scale.
"""
import sys

import numpy as np


def main() -> None:
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    n_vocab = int(sys.argv[3])
    a = np.fromfile(sys.argv[1], np.float32).reshape(-1, n_vocab)
    b = np.fromfile(sys.argv[2], np.float32).reshape(-1, n_vocab)
    if a.shape != b.shape:
        sys.exit(f"shapes differ: {a.shape} vs {b.shape}")
    per_position = np.abs(a - b).max(axis=1)
    differing = np.nonzero(per_position > 1e-6)[0]
    first = int(differing[0]) if differing.size else -1
    last = int(differing[-1]) if differing.size else -1
    print(f"max_abs_diff={per_position.max():.6g} first_diff_pos={first} last_diff_pos={last} "
          f"n_pos={a.shape[0]} logit_std={a.std():.4g} logit_max_abs={np.abs(a).max():.4g}")


if __name__ == "__main__":
    main()
