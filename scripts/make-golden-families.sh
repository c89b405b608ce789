#!/usr/bin/env bash
# Regenerates tests/golden/families (or, with GOLDEN=moe, tests/golden/moe): for every line of
# its models.txt, writes the random-weight model
# NAME.gguf with vkllm-random-model, then runs llama.cpp (../shared/tools/llama-oracle) in its
# most exact mode (F32 KV cache, no flash attention, CPU, one thread) on prompt.txt and keeps the
# logits of every prompt position (NAME.logits.f32, float32 [n_tokens][n_vocab]), the prompt
# tokens (NAME.tokens.txt) and 32 greedy tokens (NAME.greedy.txt).
#   scripts/make-golden-families.sh [BUILD_DIR]     (or BUILD_DIR=...; default build)
# MODELS="exaone qwen3" regenerates those lines of models.txt only (a new family's golden: the
# others stay as they are); SKIP_BUILD=1 uses the vkllm-random-model already built in BUILD_DIR.
# Run from anywhere; needs cmake, ninja, npm, g++ and git (the oracle's setup.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${VKLLM_SHARED_DIR:-$root/../shared}
build=${1:-${BUILD_DIR:-$root/build}}
out=$root/tests/golden/${GOLDEN:-families}
n_greedy=32

if [[ -z ${SKIP_BUILD:-} ]]; then
  [[ -f $build/CMakeCache.txt ]] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
  cmake --build "$build" --target vkllm-random-model
fi
gen=$build/bin/vkllm-random-model
vocab=$shared/models/stories260K/stories260K-F32.gguf

home=$("$shared/tools/llama-oracle/setup.sh")
source "$home/env.sh"
prompt=$(cat "$out/prompt.txt")

while read -r name args; do
  [[ -z $name || $name == \#* ]] && continue
  [[ -z ${MODELS:-} || " $MODELS " == *" $name "* ]] || continue
  # shellcheck disable=SC2086  # the options are words
  "$gen" --out "$out/$name.gguf" --vocab-from "$vocab" $args
  NO_FA=1 KV_F32=1 "$home/llama-logits" "$out/$name.gguf" none "$prompt" "$n_greedy" "$out/$name" 1 2>/dev/null |
    sed -n 's/^generated: //p' > "$out/$name.greedy.txt"
  [[ -s $out/$name.greedy.txt ]] || { echo "llama.cpp failed on $name.gguf" >&2; exit 1; }
  echo "$name: $(stat -c %s "$out/$name.gguf") bytes, $(wc -w < "$out/$name.tokens.txt") prompt tokens"
done < "$out/models.txt"
echo "golden data written to $out"
