#!/usr/bin/env bash
# Regenerates tests/golden/zoo from llama.cpp (../shared/tools/llama-oracle) in its most exact mode
# (F32 KV cache, no flash attention) on the CPU: for every model in assets/zoo and every prompt in
# tests/golden/zoo/prompts.txt, the prompt tokens, the logits of each prompt position and 48 greedy
# tokens (scripts/make-golden-zoo.sh [MODEL...]). Run after retraining the zoo (tools/zoo/make-zoo.sh). Needs npm, g++ and git (the oracle's setup.sh).
# zoo-chat answers conversations instead: each of tests/golden/zoo/zoo-chat.prompts.json, rendered
# with its ChatML template and encoded by tools/zoo/tokenizer.py (control tokens as themselves,
# which llama-logits's own tokenizer would not parse), is given to llama.cpp as token ids; the
# greedy answer stops at the end of the turn (<|im_end|>, up to 160 tokens).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${VKLLM_SHARED_DIR:-$root/../shared}
out=$root/tests/golden/zoo
home=$("$shared/tools/llama-oracle/setup.sh")
source "$home/env.sh"
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(zoo-dense zoo-swa zoo-moe zoo-mla zoo-deep zoo-hybrid zoo-chat zoo-wide zoo-facts)
oracle() {  # MODEL PROMPT N_GREEDY PREFIX
  "$home/llama-logits" "$root/assets/zoo/$1.gguf" none "$2" "$3" "$4" 1 2>/dev/null |
    sed -n 's/^generated: //p' > "$4.greedy.txt"
  [[ -s $4.greedy.txt ]] || { echo "oracle failed for $1 '$2'" >&2; exit 1; }
}
export NO_FA=1 KV_F32=1
for model in "${models[@]}"; do
  i=0
  if [[ $model == zoo-chat ]]; then
    while IFS= read -r ids; do
      STOP_AT_EOG=1 oracle "$model" "ids:$ids" 160 "$out/$model-$i"
      i=$((i + 1))
    done < <(/usr/bin/python3 "$root/tools/zoo/tokenizer.py" chat "$root/assets/zoo/$model.gguf" "$out/$model.prompts.json")
    continue
  fi
  while IFS= read -r prompt; do
    oracle "$model" "$prompt" 48 "$out/$model-$i"
    i=$((i + 1))
  done < "$out/prompts.txt"
done
echo "golden data written to $out"
