#!/usr/bin/env bash
# Regenerates tests/golden/stories260K from llama.cpp (../shared/tools/llama-oracle) in its most
# exact mode (F32 KV cache, no flash attention) on the CPU: for every stories260K file and every
# prompt in prompts.txt, the logits of each prompt position, the prompt tokens and 64 greedy
# tokens. Run from the repository root; needs npm, g++ and git (the oracle's setup.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${VKLLM_SHARED_DIR:-$root/../shared}
out=$root/tests/golden/stories260K
home=$("$shared/tools/llama-oracle/setup.sh")
source "$home/env.sh"
i=0
while IFS= read -r prompt; do
  for q in F32 F16 Q8_0 Q4_0; do
    prefix=$out/$q-$i
    NO_FA=1 KV_F32=1 "$home/llama-logits" "$shared/models/stories260K/stories260K-$q.gguf" none "$prompt" 64 \
      "$prefix" 1 2>/dev/null | sed -n 's/^generated: //p' > "$prefix.greedy.txt"
    [[ -s $prefix.greedy.txt ]] || { echo "oracle failed for $q '$prompt'" >&2; exit 1; }
  done
  i=$((i + 1))
done < "$out/prompts.txt"
echo "golden data written to $out"
