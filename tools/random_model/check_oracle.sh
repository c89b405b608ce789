#!/usr/bin/env bash
# Writes a small random model of every architecture and several tensor types, and checks that
# llama.cpp (the oracle, ../shared/tools/llama-oracle) loads each one and produces finite logits.
#   tools/random_model/check_oracle.sh [BUILD_DIR]      (default: build)
# Needs the oracle installed (setup.sh prints its home) and /usr/bin/python3 with numpy.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
gen=$build/bin/vkllm-random-model
home=${ORACLE_HOME:-$HOME/.cache/llama-oracle}
[ -x "$gen" ] || { echo "no $gen: build the vkllm-random-model target first" >&2; exit 1; }
[ -x "$home/llama-logits" ] || { echo "no llama.cpp oracle in $home: run ../shared/tools/llama-oracle/setup.sh" >&2; exit 1; }
source "$home/env.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failures=0
check() {  # check NAME GENERATOR-OPTIONS...
    local name=$1; shift
    if ! "$gen" --out "$tmp/$name.gguf" "$@" 2> "$tmp/$name.gen.log"; then
        echo "FAIL $name: vkllm-random-model: $(cat "$tmp/$name.gen.log")"; failures=$((failures + 1)); return
    fi
    if ! NO_FA=1 KV_F32=1 "$home/llama-logits" "$tmp/$name.gguf" none "Once upon a time" 4 "$tmp/$name" 2 \
            > "$tmp/$name.log" 2>&1; then
        echo "FAIL $name: llama.cpp: $(grep -iE 'error|fail' "$tmp/$name.log" | head -3)"; failures=$((failures + 1)); return
    fi
    if ! /usr/bin/python3 -c "import numpy as np, sys; x = np.fromfile(sys.argv[1], np.float32); sys.exit(0 if x.size and np.isfinite(x).all() else 1)" \
            "$tmp/$name.logits.f32"; then
        echo "FAIL $name: logits missing or not finite"; failures=$((failures + 1)); return
    fi
    echo "ok   $name: $(grep '^generated' "$tmp/$name.log")"
}

check llama-f32        --arch llama --seed 1
check llama-f16-tied   --arch llama --seed 1 --type F16 --tied
check llama-bf16       --arch llama --seed 1 --type BF16 --head-dim 32
check llama-q8_0       --arch llama --seed 2 --type Q8_0 --rope-scaling linear:4
check llama-q4_0       --arch llama --seed 2 --type Q4_0 --rope-scaling yarn:4:64
check llama-q4_k       --arch llama --seed 3 --type Q4_K --n-embd 256 --n-ff 160
check llama-q6_k       --arch llama --seed 3 --type Q6_K --n-embd 256 --n-ff 512
check llama3-rope      --arch llama --seed 4 --rope-freq-base 500000 --rope-scaling llama3:8:1:4:64
check qwen2            --arch qwen2 --seed 5
check qwen2-q8_0-tied  --arch qwen2 --seed 5 --type Q8_0 --tied
check qwen3            --arch qwen3 --seed 6 --head-dim 32
check gemma2           --arch gemma2 --seed 7 --sliding-window 3
check gemma3           --arch gemma3 --seed 8 --sliding-window 3 --head-dim 32 --n-layer 7
check gemma3-untied    --arch gemma3 --seed 8 --type Q8_0
check gemma2-softcap   --arch gemma2 --seed 7 --attn-softcap 5 --final-softcap 5 --sliding-window 8
check gemma3-softcap   --arch gemma3 --seed 8 --final-softcap 10 --sliding-window 3 --n-layer 7
check gpt2             --arch gpt2 --seed 9 --n-head 4 --n-head-kv 4 --tied
check gpt2-q8_0-untied --arch gpt2 --seed 9 --n-head 4 --n-head-kv 4 --type Q8_0
check olmo2            --arch olmo2 --seed 10
check olmo2-q4_0       --arch olmo2 --seed 10 --type Q4_0 --n-head-kv 1
check phi3             --arch phi3 --seed 11 --rope-dims 12
check phi3-longrope    --arch phi3 --seed 11 --rope-dims 8 --rope-scaling longrope:64 --type Q8_0 --tied
check smollm3          --arch smollm3 --seed 12 --n-layer 4
check smollm3-f16      --arch smollm3 --seed 12 --n-layer 5 --type F16 --head-dim 32
check exaone           --arch exaone --seed 13
check exaone-q8_0      --arch exaone --seed 13 --type Q8_0 --tied --rope-scaling llama3:8:1:4:64
check mamba2           --arch mamba2 --seed 14
check mamba2-q8_0      --arch mamba2 --seed 14 --type Q8_0 --tied --ssm-groups 2 --ssm-state 32 --ssm-conv 3
check falcon           --arch falcon --seed 17 --n-head-kv 1 --tied
check falcon-40b-q8_0  --arch falcon --seed 17 --two-norms --type Q8_0
check jais             --arch jais --seed 18 --n-head 8 --n-head-kv 2
check jais-f16         --arch jais --seed 18 --n-embd 48 --n-head 3 --n-head-kv 3 --type F16
check falcon-h1        --arch falcon-h1 --seed 19 --ssm-groups 2
check falcon-h1-q8_0   --arch falcon-h1 --seed 19 --type Q8_0 --tied --n-head-kv 1 --ssm-head-dim 32
check lfm2             --arch lfm2 --seed 20 --n-layer 5 --layers CC*C*
check lfm2-q8_0-window --arch lfm2 --seed 20 --n-layer 3 --type Q8_0 --tied --sliding-window 8 --conv-l-cache 5

if [ "$failures" -gt 0 ]; then echo "$failures model(s) failed"; exit 1; fi
echo "all models load and run in llama.cpp"
