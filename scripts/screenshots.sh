#!/usr/bin/env bash
# Regenerates the README's screenshots of vkllm-studio (assets/screenshots/*.png) with the
# zoo models: the whole window and each panel, under a private Xvfb on the default Vulkan
# device (lavapipe on a machine without a GPU).
#   scripts/screenshots.sh             uses build/bin/vkllm-studio (VKLLM_BUILD_DIR to change)
#   scripts/screenshots.sh NAME...     only the named shots (zoo-chat, state-zoo-hybrid, ...)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${VKLLM_BUILD_DIR:-$root/build}
studio=$build/bin/vkllm-studio
out=$root/assets/screenshots
[[ -x $studio ]] || { echo "screenshots: $studio not built (cmake --build $build --target vkllm-studio)" >&2; exit 1; }
command -v Xvfb >/dev/null || { echo "screenshots: Xvfb missing (scripts/install-deps.sh)" >&2; exit 1; }

# A free display number.
display=140
while [[ -e /tmp/.X11-unix/X$display || -e /tmp/.X$display-lock ]]; do display=$((display + 1)); done
Xvfb ":$display" -screen 0 1600x1000x24 -nolisten tcp >/dev/null 2>&1 &
xvfb_pid=$!
work=$(mktemp -d)
trap 'kill $xvfb_pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 50); do [[ -e /tmp/.X11-unix/X$display ]] && break; sleep 0.1; done
mkdir -p "$out"

# shoot MODEL.gguf NAME PANEL...: one conversation, then the window and each listed panel. The
# prompt is longer than zoo-swa's window (32), so its local layers show the band. $extra holds
# more studio options (--theme light, --scale 2); full=no skips the whole window; $before holds
# script lines run before the screenshots (zoom, link), one per line.
prompt="Once upon a time, there was a little girl named Lily. Lily had a red ball. One day, Lily went to the park"
extra=""
before=""
only=("$@")
shoot() {
  local model=$1 name=$2
  shift 2
  if (( ${#only[@]} )) && [[ " ${only[*]} " != *" $name "* ]]; then return; fi
  {
    echo "tokens 24"
    echo "send $prompt"
    [[ -n $before ]] && printf '%s\n' "$before"
    [[ ${full:-yes} == yes ]] && echo "screenshot $out/$name.png"
    for panel in "$@"; do echo "screenshot $out/$name-$panel.png $panel"; done
  } > "$work/$name.script"
  echo "screenshots: $name"
  # shellcheck disable=SC2086  # $extra is a list of options
  DISPLAY=":$display" "$studio" -m "$model" --temp 0 --panels all --size 1600x1000 $extra \
    --config-dir "$work/config-$name" --script "$work/$name.script" --exit
}
zoo=$root/assets/zoo

shoot "$zoo/zoo-dense.gguf" zoo-dense chat attention activations lens telemetry architecture
shoot "$zoo/zoo-swa.gguf" zoo-swa attention architecture
shoot "$zoo/zoo-moe.gguf" zoo-moe experts architecture
shoot "$zoo/zoo-mla.gguf" zoo-mla experts architecture attention
full=no shoot "$zoo/zoo-deep.gguf" zoo-deep activations
# The selected head's map zoomed to its first 15% (token labels on both axes) and the linked text
# view pinned on position 40, averaged over heads.
full=no before=$'zoom big 0 0.15 0 0.15\nlink 40 mean' shoot "$zoo/zoo-dense.gguf" zoo-dense-zoomed attention
extra="--theme light --size 1280x800" shoot "$zoo/zoo-moe.gguf" zoo-moe-light
# The hybrid's State window on its Mamba-2 layer 0, head 2 (the README's state-zoo-hybrid.png).
full=no before=$'state 0 2\nscreenshot '"$out"'/state-zoo-hybrid.png state' shoot "$zoo/zoo-hybrid.gguf" state-zoo-hybrid
# zoo-chat answering through its ChatML template (the model's own): a greeting, then a story asked
# for; each answer ends at the template's end of turn.
prompt="Hi!" before=$'tokens 160\nsend Tell me a story about Lily.' shoot "$zoo/zoo-chat.gguf" zoo-chat chat
# An encoder: zoo-bert when it is there, else a random BERT (vkllm-random-model).
bert=$zoo/zoo-bert.gguf
if [[ ! -f $bert ]]; then
  bert=$work/random-bert.gguf
  "$build/bin/vkllm-random-model" --arch bert --out "$bert" --seed 11 --n-head-kv 4 --vocab-from "$zoo/zoo-dense.gguf"
fi
prompt="the little girl took her red ball to the park and played with her friends"
full=no shoot "$bert" bert chat attention architecture
echo "screenshots: written to $out"
