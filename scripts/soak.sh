#!/usr/bin/env bash
# Soak test (not part of CI's default run): 10,000 decode steps in one session with probes off,
# the same with probes on, and 200 sessions created and destroyed, on the public API
# (tools/soak/soak.cpp), sampling resident memory and the engine's GPU bytes. Exit 0 when every
# phase's memory stayed flat (the criterion is printed with the table; see docs/reliability.md).
#
#   scripts/soak.sh [MODEL.gguf] [extra vkllm-soak options: --steps N --sessions N --every N]
#
# MODEL defaults to ../shared/models/stories260K/stories260K-F32.gguf, else assets/zoo/zoo-dense.gguf.
# BUILD_DIR (default: build) is configured and vkllm-soak built there if needed.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
model="${1:-}"
[ $# -gt 0 ] && shift
if [ -z "$model" ]; then
    model="$root/../shared/models/stories260K/stories260K-F32.gguf"
    [ -f "$model" ] || model="$root/assets/zoo/zoo-dense.gguf"
fi
[ -f "$build/build.ninja" ] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" --target vkllm-soak
exec nice -n 10 "$build/bin/vkllm-soak" "$model" "$@"
