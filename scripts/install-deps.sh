#!/usr/bin/env bash
# Installs what vkllm needs from Debian's archive, only what is missing. Idempotent and
# non-interactive; run as root or with sudo available.
#   scripts/install-deps.sh              what building and testing need
#   scripts/install-deps.sh --training   also what training the model zoo needs (tools/zoo)
# Then the server test's Node packages (the official `openai` client) into tests/server/node_modules
# when they are missing.
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools glslc spirv-tools
  libglfw3-dev libimgui-dev libstb-dev libgtest-dev xvfb
  nlohmann-json3-dev libboost-dev
  curl nodejs
  python3 python3-numpy
)
if [[ ${1:-} == --training ]]; then
  # PyTorch, and OpenBLAS for it (without it Debian's PyTorch uses the reference BLAS: 10x slower)
  packages+=(python3-torch libopenblas0-pthread)
elif [[ $# -gt 0 ]]; then
  echo "usage: scripts/install-deps.sh [--training]" >&2
  exit 2
fi
# Debian's npm, unless npm came with another Node.js build (NodeSource's nodejs carries its own).
command -v npm >/dev/null || packages+=(npm)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: every package is installed"
else
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install-deps: run as root (missing: ${missing[*]})" >&2; exit 1; }
    sudo="sudo"
  fi
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The server test's client: the `openai` npm package, at the versions tests/server/package-lock.json records.
server_tests="$(cd "$(dirname "$0")/.." && pwd)/tests/server"
if [[ ! -f $server_tests/node_modules/openai/package.json ]]; then
  echo "install-deps: npm ci in tests/server (the openai client for the server test)"
  (cd "$server_tests" && npm ci --no-audit --no-fund --loglevel=error)
fi
