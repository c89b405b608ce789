#!/usr/bin/env python3
"""Random blocks of the i-quant grid types and the ternary types with the values gguf-py's
reference dequantizers give them: tests/gguf/golden/iquant_dequant.txt, which
tests/gguf/test_iquant_dequant.cpp checks vkllm's CPU decoding against bit for bit. Random block
bytes (fixed seed) with finite fp16 scales: normal, negative, subnormal and zero.

    source $(../shared/tools/llama-oracle/setup.sh)/env.sh
    /usr/bin/python3 scripts/make_golden_iquant.py > tests/gguf/golden/iquant_dequant.txt
"""
import numpy as np
from gguf import GGMLQuantizationType as T, quants

rng = np.random.default_rng(20261128)
SCALES = np.array([0.013, -0.021, 6.1e-6, 0.0, 1.5, -0.0007], dtype=np.float16)
N_BLOCKS = len(SCALES)


def with_scale(raw, type_name):
    """Writes block i's fp16 scale where the type keeps it."""
    bits = SCALES.view(np.uint16)
    if type_name == "IQ1_M":  # the scale's four nibbles are the top nibbles of the last four u16
        sc = raw[:, 48:56].copy().view(np.uint16)
        for k in range(4):
            sc[:, k] = (sc[:, k] & 0x0FFF) | (((bits >> (4 * k)) & 0xF) << 12)
        raw[:, 48:56] = sc.view(np.uint8)
    else:
        at = {"TQ1_0": 52, "TQ2_0": 64}.get(type_name, 0)
        raw[:, at:at + 2] = bits.view(np.uint8).reshape(-1, 2)
    return raw


TYPES = ["IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "TQ1_0", "TQ2_0"]

print("# gguf-py (llama.cpp's gguf/quants.py) dequantization of random i-quant and ternary blocks:")
print("# 'TYPE bytes HEX' then 'TYPE f32 HEX' (the float32 bit patterns, little-endian, in order).")
for name in TYPES:
    qtype = T[name]
    block_size, type_size = quants.GGML_QUANT_SIZES[qtype]
    raw = with_scale(rng.integers(0, 256, size=(N_BLOCKS, type_size), dtype=np.uint8), name)
    values = quants.dequantize(raw.reshape(-1), qtype).astype(np.float32)
    assert values.size == N_BLOCKS * block_size
    print(f"{name} bytes {raw.tobytes().hex()}")
    print(f"{name} f32 {values.tobytes().hex()}")
