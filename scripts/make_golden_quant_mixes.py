#!/usr/bin/env python3
"""The tensor types llama.cpp's llama-quantize gives each tensor of the zoo models and of random
models of every family, under each named mix: tests/cli/golden/quant_mixes.txt, which
tests/cli/test_quantize_mixes.cpp compares `vkllm quantize`'s choices with.

Runs the llama-oracle's llama-quantize-lite (../shared/tools/llama-oracle: llama.cpp's own
llama_model_quantize, no importance matrix) on each model and mix, and reads the written files'
tensor types with gguf-py. Random models come from build/bin/vkllm-random-model with the
arguments recorded in the golden file (the types depend on names, shapes and metadata only).

    source $(../shared/tools/llama-oracle/setup.sh)/env.sh
    /usr/bin/python3 scripts/make_golden_quant_mixes.py > tests/cli/golden/quant_mixes.txt
"""
import os
import subprocess
import sys
import tempfile

from gguf import GGUFReader

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOME = os.environ.get("ORACLE_HOME", os.path.expanduser("~/.cache/llama-oracle"))
QUANTIZE = os.path.join(HOME, "llama-quantize-lite")
RANDOM_MODEL = os.path.join(ROOT, "build", "bin", "vkllm-random-model")

# Mixes llama-quantize writes without an importance matrix (IQ1_*, IQ2_*, IQ3_XXS, IQ3_XS and
# Q2_K_S need one).
MIXES = ["F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K_S", "Q3_K_M", "Q3_K_L",
         "Q4_K_S", "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K", "IQ4_NL", "IQ4_XS", "IQ3_S", "IQ3_M", "TQ1_0",
         "TQ2_0", "MXFP4_MOE"]

# Mixes written with a flat importance matrix (IMATRIX=ones: llama.cpp's rules then take the
# with-imatrix branches), columns named MIX+imatrix: the ones llama.cpp refuses without one, and
# those whose rules change with one.
IMATRIX_MIXES = ["IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ2_M", "IQ3_XXS", "IQ3_XS", "Q2_K_S",
                 "Q4_0", "Q5_0", "IQ4_XS"]

ZOO = ["zoo-dense", "zoo-moe", "zoo-swa", "zoo-mla", "zoo-deep", "zoo-bert"]

# Rows 256 wide (the K and i-quant block) so that the rules themselves show, not only fallbacks;
# 8 or 16 layers so that the first/last-eighth and every-third-layer rules differ by layer.
W = "--n-embd 256 --n-ff 512 --type F16"
RANDOM = {
    "llama16": f"--arch llama {W} --n-layer 16 --n-head 8 --n-head-kv 2",
    "llama-tied": f"--arch llama {W} --n-layer 8 --n-head 4 --n-head-kv 4 --tied",
    "mixtral8": f"--arch llama --n-embd 256 --n-ff 256 --type F16 --n-layer 8 --n-head 4 --n-head-kv 1 --n-expert 8",
    "qwen2": f"--arch qwen2 {W} --n-layer 8 --n-head 4 --n-head-kv 2",
    "qwen3": f"--arch qwen3 {W} --n-layer 8 --n-head 8 --n-head-kv 1",
    "gemma2": f"--arch gemma2 {W} --n-layer 8 --n-head 4 --n-head-kv 2",
    "gemma3": f"--arch gemma3 {W} --n-layer 8 --n-head 4 --n-head-kv 1",
    "gpt2": f"--arch gpt2 {W} --n-layer 8 --n-head 4 --n-head-kv 4",
    "bert": f"--arch bert {W} --n-layer 8 --n-head 4 --n-head-kv 4",
    "olmo2": f"--arch olmo2 {W} --n-layer 8 --n-head 4 --n-head-kv 4",
    "phi3": f"--arch phi3 {W} --n-layer 8 --n-head 4 --n-head-kv 4",
    "smollm3": f"--arch smollm3 {W} --n-layer 8 --n-head 4 --n-head-kv 1",
    "exaone": f"--arch exaone {W} --n-layer 8 --n-head 4 --n-head-kv 2",
    "mamba2": f"--arch mamba2 {W} --n-layer 8",
    "qwen3moe": "--arch qwen3moe --n-embd 256 --n-ff 256 --type F16 --n-layer 8 --n-head 4 --n-head-kv 2 --n-expert 8",
    "olmoe": "--arch olmoe --n-embd 256 --n-ff 256 --type F16 --n-layer 8 --n-head 4 --n-head-kv 4",
    "gpt-oss": "--arch gpt-oss --n-embd 256 --n-ff 256 --type F16 --n-layer 8 --n-head 4 --n-head-kv 1",
    "llama4": "--arch llama4 --n-embd 256 --n-ff 256 --type F16 --n-layer 8 --n-head 4 --n-head-kv 1",
    "deepseek2": "--arch deepseek2 --n-embd 256 --n-ff 256 --type F16 --n-layer 8 --n-head 4 --n-head-kv 1",
}


def types_of(path):
    return [(t.name, t.tensor_type.name) for t in GGUFReader(path).tensors]


def quantize(src, column, tmp):
    out = os.path.join(tmp, "out.gguf")
    mix, _, imatrix = column.partition("+")
    env = dict(os.environ, IMATRIX="ones") if imatrix else None
    r = subprocess.run([QUANTIZE, src, out, mix, "2"], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None
    types = dict(types_of(out))
    os.remove(out)
    return types


def main():
    print("# llama-quantize's tensor types (llama-quantize-lite) per model and mix:")
    print("# made by scripts/make_golden_quant_mixes.py. 'model NAME SOURCE' (zoo: assets/zoo/NAME.gguf;")
    print("# random: vkllm-random-model ARGS), 'mixes ...' (MIX+imatrix: with IMATRIX=ones), then")
    print("# 'NAME TENSOR TYPE...' in that mix order")
    print("# ('-': llama.cpp refused the mix for that model). Tensors not listed keep their type in every mix.")
    columns = MIXES + [m + "+imatrix" for m in IMATRIX_MIXES]
    print("mixes " + " ".join(columns))
    with tempfile.TemporaryDirectory() as tmp:
        models = [(name, "zoo", os.path.join(ROOT, "assets", "zoo", name + ".gguf")) for name in ZOO]
        for name, args in RANDOM.items():
            path = os.path.join(tmp, name + ".gguf")
            subprocess.run([RANDOM_MODEL, "--out", path] + args.split(), check=True, capture_output=True)
            models.append((name, "random " + args, path))
        for name, source, path in models:
            print(f"model {name} {source}", flush=True)
            per_mix = [quantize(path, column, tmp) for column in columns]
            for tensor, _ in types_of(path):
                row = [(m[tensor] if m else "-") for m in per_mix]
                if len(set(row)) > 1:  # a tensor no mix converts (norms, 1-D, routers) is left out
                    print(f"{name} {tensor} " + " ".join(row))
            print(f"{name}: done", file=sys.stderr)


if __name__ == "__main__":
    main()
