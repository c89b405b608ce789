#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and generates text with the model built into
# vkllm (no -m, nothing to download). VKLLM_MODEL=path/to/model.gguf runs that file instead.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
model_args=()
if [[ -n ${VKLLM_MODEL:-} ]]; then
  [[ -f $VKLLM_MODEL ]] || { echo "quickstart: no model at VKLLM_MODEL=$VKLLM_MODEL" >&2; exit 1; }
  model_args=(-m "$VKLLM_MODEL")
fi
exec "$root/build/bin/vkllm" run "${model_args[@]}" -p "${1:-Once upon a time}" -n 64 --temp 0
