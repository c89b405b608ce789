#!/usr/bin/env bash
# Configures (once) and builds vkllm with Ninja into build/. Extra arguments go to CMake's
# configure step, e.g. scripts/build.sh -DVKLLM_SANITIZE=ON.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${VKLLM_BUILD_DIR:-$root/build}
if [[ ! -f $build/build.ninja || $# -gt 0 ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
fi
cmake --build "$build" -j"$(nproc)"
