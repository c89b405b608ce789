#!/usr/bin/env bash
# Decode speed against context length: a pure Mamba-2 model (a recurrent state of fixed size)
# against an attention model (a KV cache that grows with the context), both random-weight
# models of about the same size written by vkllm-random-model, measured with
# `vkllm bench -d N` (decode after N tokens of context, filled once by an untimed prompt pass)
# at two depths. Prints a Markdown table: tokens/s at each depth and the ratio far/near.
#
#   scripts/bench-context.sh [BUILD_DIR]     (default: build)
#   CTX_NEAR=N    the short context (default 1024)
#   CTX_FAR=N     the long context (default 16384)
#   CTX_GEN=N     decode tokens timed (default 64)
#   CTX_REPEATS=N repeats inside each bench run (default 3; median)
#   CTX_ROUNDS=N  runs of each model and depth, interleaved; the best is kept (default 2)
#   CTX_CACHE=DIR where the models are written (default ~/.cache/vkllm-bench)
#
# On lavapipe the attention model's fill at 16K tokens takes minutes (its prompt pass is
# quadratic in the context); the Mamba-2 model's is linear.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
near=${CTX_NEAR:-1024}
far=${CTX_FAR:-16384}
gen=${CTX_GEN:-64}
reps=${CTX_REPEATS:-3}
rounds=${CTX_ROUNDS:-2}
cache=${CTX_CACHE:-$HOME/.cache/vkllm-bench}
vkllm=$build/bin/vkllm
writer=$build/bin/vkllm-random-model
for tool in "$vkllm" "$writer"; do
    [[ -x $tool ]] || { echo "bench-context: $tool is missing (build it first)" >&2; exit 1; }
done
mkdir -p "$cache"

# 4 layers of width 256 each: Mamba-2 (d_inner 512, 32 heads of 16, d_state 16) and Llama
# (4 heads of 64, FFN 512, a context long enough for the far depth).
mamba=$cache/context-mamba2.gguf
attn=$cache/context-llama.gguf
[[ -f $mamba ]] || "$writer" --arch mamba2 --out "$mamba" --n-embd 256 --n-layer 4 --seed 1 >&2
[[ -f $attn ]] || "$writer" --arch llama --out "$attn" --n-embd 256 --n-layer 4 --n-head 4 --n-head-kv 4 \
    --n-ff 512 --n-ctx 32768 --seed 1 >&2

# decode tokens/s of one run: bench's JSON decode_tps
decode_tps() {
    "$vkllm" bench -m "$1" -p 0 -n "$gen" -d "$2" -r "$reps" --json |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["decode_tps"])'
}
best() { printf '%s\n' "$@" | sort -g | tail -1; }

device=$("$vkllm" bench -m "$mamba" -p 0 -n 1 -r 1 --json |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["device"])')
declare -A runs
for ((r = 0; r < rounds; ++r)); do
    for model in mamba attn; do
        for depth in "$near" "$far"; do
            echo "bench-context: $model at depth $depth, round $((r + 1)) of $rounds" >&2
            file=$mamba
            [[ $model == attn ]] && file=$attn
            runs[$model.$depth]+="$(decode_tps "$file" "$depth") "
        done
    done
done

echo "Decode tokens/s at ${near} and ${far} tokens of context, $device (-n $gen, median of $reps, best of $rounds runs)"
echo
echo "| model | d$near | d$far | d$far / d$near |"
echo "|---|---|---|---|"
for model in mamba attn; do
    # shellcheck disable=SC2086
    a=$(best ${runs[$model.$near]})
    # shellcheck disable=SC2086
    b=$(best ${runs[$model.$far]})
    name="Mamba-2 ($(basename "$mamba"))"
    [[ $model == attn ]] && name="Llama, attention ($(basename "$attn"))"
    echo "| $name | $a | $b | $(python3 -c "print(f'{$b / $a:.2f}')") |"
done
