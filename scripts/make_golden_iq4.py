#!/usr/bin/env python3
"""IQ4_NL and IQ4_XS blocks with the values gguf-py's reference dequantizers give them:
tests/gguf/golden/iq4_dequant.txt, which tests/gguf/test_quant.cpp checks vkllm's CPU decoding
against bit for bit. Random block bytes (fixed seed) with finite fp16 scales: normal, negative,
subnormal and zero.

    source $(../shared/tools/llama-oracle/setup.sh)/env.sh
    /usr/bin/python3 scripts/make_golden_iq4.py > tests/gguf/golden/iq4_dequant.txt
"""
import numpy as np
from gguf import GGMLQuantizationType, quants

rng = np.random.default_rng(20261127)
SCALES = np.array([0.013, -0.021, 6.1e-6, 0.0, 1.5, -0.0007, 3.0e-5, 0.25], dtype=np.float16)


def blocks(type_size, n):
    raw = rng.integers(0, 256, size=(n, type_size), dtype=np.uint8)
    raw[:, 0:2] = SCALES[:n].view(np.uint8).reshape(n, 2)  # d: the block's fp16 scale first
    return raw


print("# gguf-py (llama.cpp's gguf/quants.py) dequantization of random IQ4 blocks:")
print("# 'TYPE bytes HEX' then 'TYPE f32 HEX' (the float32 bit patterns, little-endian, in order).")
for name, qtype, type_size, n in [("IQ4_NL", GGMLQuantizationType.IQ4_NL, 18, 8),
                                  ("IQ4_XS", GGMLQuantizationType.IQ4_XS, 136, 8)]:
    raw = blocks(type_size, n)
    values = quants.dequantize(raw.reshape(-1), qtype).astype(np.float32)
    print(f"{name} bytes {raw.tobytes().hex()}")
    print(f"{name} f32 {values.tobytes().hex()}")
