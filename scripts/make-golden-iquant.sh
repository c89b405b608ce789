#!/usr/bin/env bash
# Regenerates tests/golden/iquant: one random-weight Llama model (F32, width 256 so that every
# 256-block type applies), quantized by llama.cpp's own quantizer (llama-quantize-lite from
# ../shared/tools/llama-oracle) into each line of models.txt, and what llama.cpp's CPU backend
# in its most exact mode (F32 KV cache, no flash attention, one thread) makes of each file:
#   NAME.gguf         the quantized model
#   NAME.tokens.txt   the prompt's token ids (BOS first)
#   NAME.greedy.txt   16 greedy tokens after the prompt
#   NAME.logits.f32   float32 [n_prompt + 15][n_vocab]: the logits of every prompt position and of
#                     each greedy step, from one batch over the prompt and the first 15 greedy tokens
# and, with VULKAN=1, vulkan.txt: per model, the largest |logit| difference between llama.cpp's
# Vulkan backend (device Vulkan0) and its CPU backend over the same positions.
#   scripts/make-golden-iquant.sh [BUILD_DIR]     MODELS="iq2_xxs tq1_0" for those lines only
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${VKLLM_SHARED_DIR:-$root/../shared}
build=${1:-${BUILD_DIR:-$root/build}}
out=$root/tests/golden/iquant
n_greedy=16

[[ -n ${SKIP_BUILD:-} ]] || cmake --build "$build" --target vkllm-random-model
home=$("$shared/tools/llama-oracle/setup.sh")
source "$home/env.sh"
prompt=$(cat "$out/prompt.txt")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$build/bin/vkllm-random-model" --out "$work/base.gguf" --arch llama --seed 301 --n-embd 256 --n-ff 256 \
  --n-layer 1 --n-head 4 --n-head-kv 2 --n-ctx 128 --vocab-from "$shared/models/stories260K/stories260K-F32.gguf" >/dev/null

logits() {  # MODEL DEVICE PREFIX: logits of the prompt and the greedy tokens but the last, in one batch
  local ids
  ids=$(tr -s ' \n' ',' < "$out/$name.tokens.txt" | sed 's/,$//'),$(cut -d' ' -f1-$((n_greedy - 1)) "$out/$name.greedy.txt" | tr ' ' ',')
  NO_FA=1 KV_F32=1 "$home/llama-logits" "$1" "$2" "ids:$ids" 0 "$3" 1 >/dev/null 2>&1
}

while read -r name type env; do
  [[ -z $name || $name == \#* ]] && continue
  [[ -z ${MODELS:-} || " $MODELS " == *" $name "* ]] || continue
  # shellcheck disable=SC2086  # the settings are words
  env $env "$home/llama-quantize-lite" "$work/base.gguf" "$out/$name.gguf" "$type" 2 > "$work/quantize.log" 2>&1 ||
    { tail -3 "$work/quantize.log" >&2; echo "llama-quantize-lite failed on $name" >&2; exit 1; }
  NO_FA=1 KV_F32=1 "$home/llama-logits" "$out/$name.gguf" none "$prompt" "$n_greedy" "$work/$name" 1 2>/dev/null |
    sed -n 's/^generated: //p' > "$out/$name.greedy.txt"
  [[ -s $out/$name.greedy.txt ]] || { echo "llama.cpp failed on $name.gguf" >&2; exit 1; }
  cp "$work/$name.tokens.txt" "$out/$name.tokens.txt"
  logits "$out/$name.gguf" none "$work/$name.all"
  cp "$work/$name.all.logits.f32" "$out/$name.logits.f32"
  echo "$name: $(stat -c %s "$out/$name.gguf") bytes"
  if [[ -n ${VULKAN:-} ]]; then
    logits "$out/$name.gguf" Vulkan0 "$work/$name.vk"
    python3 - "$out/$name.logits.f32" "$work/$name.vk.logits.f32" "$name" >> "$work/vulkan.txt" <<'PY'
import struct, sys
a, b = (open(p, "rb").read() for p in sys.argv[1:3])
n = len(a) // 4
x, y = struct.unpack(f"{n}f", a), struct.unpack(f"{n}f", b)
print(sys.argv[3], f"{max(abs(p - q) for p, q in zip(x, y)):.4f}")
PY
  fi
done < "$out/models.txt"
if [[ -n ${VULKAN:-} ]]; then  # keep the lines of models not run this time
  touch "$out/vulkan.txt"
  awk 'NR == FNR { seen[$1] = 1; print; next } !($1 in seen)' "$work/vulkan.txt" "$out/vulkan.txt" | sort > "$work/merged.txt"
  mv "$work/merged.txt" "$out/vulkan.txt"
fi
echo "golden data written to $out"
