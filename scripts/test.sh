#!/usr/bin/env bash
# Builds vkllm and runs the whole test suite: every kernel against its CPU reference, on the
# default Vulkan device and again with VKLLM_LIMITS=mobile, all under the validation layers.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${VKLLM_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
cd "$build"
# The run's output is kept in ctest.log; at the end, pass or fail, the ten slowest tests.
status=0
ctest --output-on-failure -j"$(nproc)" "$@" 2>&1 | tee ctest.log || status=$?
echo "slowest tests (seconds):"
sed -nE 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/p' ctest.log | sort -rn | head -n 10 || true
exit "$status"
