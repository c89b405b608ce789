#!/usr/bin/env bash
# Regenerates tests/golden/zoo from llama.cpp (../shared/tools/llama-oracle) in its most exact mode
# (F32 KV cache, no flash attention) on the CPU: for every model in assets/zoo and every prompt in
# tests/golden/zoo/prompts.txt, the prompt tokens, the logits of each prompt position and 48 greedy
# tokens (scripts/make-golden-zoo.sh [MODEL...]). Run after retraining the zoo (tools/zoo/make-zoo.sh). Needs npm, g++ and git (the oracle's setup.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${VKLLM_SHARED_DIR:-$root/../shared}
out=$root/tests/golden/zoo
home=$("$shared/tools/llama-oracle/setup.sh")
source "$home/env.sh"
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(zoo-dense zoo-swa zoo-moe zoo-mla zoo-deep)
for model in "${models[@]}"; do
  i=0
  while IFS= read -r prompt; do
    prefix=$out/$model-$i
    NO_FA=1 KV_F32=1 "$home/llama-logits" "$root/assets/zoo/$model.gguf" none "$prompt" 48 "$prefix" 1 2>/dev/null |
      sed -n 's/^generated: //p' > "$prefix.greedy.txt"
    [[ -s $prefix.greedy.txt ]] || { echo "oracle failed for $model '$prompt'" >&2; exit 1; }
    i=$((i + 1))
  done < "$out/prompts.txt"
done
echo "golden data written to $out"
