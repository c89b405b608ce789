#!/usr/bin/env bash
# Builds vkllm and runs the whole test suite: every kernel against its CPU reference, on the
# default Vulkan device and again with VKLLM_LIMITS=mobile, all under the validation layers.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${VKLLM_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cd "$build"
ctest --output-on-failure -j"$(nproc)" "$@"
