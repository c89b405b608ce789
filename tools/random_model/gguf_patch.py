#!/usr/bin/env python3
"""Edits a GGUF file in place, for feature checks against llama.cpp (check_features.sh): set an
existing scalar metadata value, or scale F32 tensors whose names match a regular expression.

    gguf_patch.py FILE [--set KEY=VALUE]... [--scale REGEX=FACTOR]...

Needs llama.cpp's gguf-py on PYTHONPATH (the oracle's env.sh sets it) and numpy.
"""
import argparse
import re
import sys

import numpy as np
from gguf import GGUFReader, GGUFValueType


def set_scalar(reader: GGUFReader, key: str, text: str) -> None:
    field = reader.get_field(key)
    if field is None:
        sys.exit(f"gguf_patch: no metadata key {key!r}")
    to_np = reader.gguf_scalar_to_np.get(field.types[0]) if field.types else None
    if to_np is None or field.types[0] == GGUFValueType.STRING:
        sys.exit(f"gguf_patch: {key!r} is not a number (type {field.types})")
    value = float(text) if field.types[0] in (GGUFValueType.FLOAT32, GGUFValueType.FLOAT64) else int(text)
    field.parts[field.data[0]][0] = to_np(value)


def scale_tensors(reader: GGUFReader, pattern: str, factor: float) -> None:
    matched = [t for t in reader.tensors if re.fullmatch(pattern, t.name)]
    if not matched:
        sys.exit(f"gguf_patch: no tensor matches {pattern!r}")
    for t in matched:
        if t.data.dtype != np.float32:
            sys.exit(f"gguf_patch: {t.name} is not F32")
        t.data[...] = t.data * np.float32(factor)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("file")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--scale", action="append", default=[], metavar="REGEX=FACTOR")
    args = parser.parse_args()
    reader = GGUFReader(args.file, "r+")
    for item in args.set:
        key, _, value = item.partition("=")
        set_scalar(reader, key, value)
    for item in args.scale:
        pattern, _, factor = item.rpartition("=")
        scale_tensors(reader, pattern, float(factor))
    reader.data.flush()


if __name__ == "__main__":
    main()
