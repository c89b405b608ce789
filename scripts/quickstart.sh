#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and generates text with the default model.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
model=${VKLLM_MODEL:-$root/../shared/models/stories260K/stories260K-F32.gguf}
[[ -f $model ]] || { echo "quickstart: no model at $model (set VKLLM_MODEL=path/to/model.gguf)" >&2; exit 1; }
exec "$root/build/bin/vkllm" run -m "$model" -p "${1:-Once upon a time}" -n 64 --temp 0
