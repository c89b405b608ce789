#!/usr/bin/env bash
# Installs what vkllm needs from Debian's archive, only what is missing. Idempotent and
# non-interactive; run as root or with sudo available.
#   scripts/install-deps.sh              what building and testing need
#   scripts/install-deps.sh --training   also what training the model zoo needs (tools/zoo)
set -euo pipefail
packages=(
  build-essential cmake ninja-build ccache pkg-config
  libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers vulkan-tools glslc spirv-tools
  libglfw3-dev libimgui-dev libstb-dev libgtest-dev xvfb
  nlohmann-json3-dev
  python3 python3-numpy
)
if [[ ${1:-} == --training ]]; then
  # PyTorch, and OpenBLAS for it (without it Debian's PyTorch uses the reference BLAS: 10x slower)
  packages+=(python3-torch libopenblas0-pthread)
elif [[ $# -gt 0 ]]; then
  echo "usage: scripts/install-deps.sh [--training]" >&2
  exit 2
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: everything is installed"
  exit 0
fi
sudo=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: run as root (missing: ${missing[*]})" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
