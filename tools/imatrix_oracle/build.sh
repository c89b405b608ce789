#!/bin/bash
# Builds llama-imatrix-lite and llama-quantize-imatrix against the llama-oracle's libllama
# (../shared/tools/llama-oracle/setup.sh installs it) into OUT (default build/imatrix-oracle) and
# prints that folder. Idempotent. These are llama.cpp's side of docs/imatrix.md's measurements and
# of the tests that check each tool reads the other's imatrix files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:-$root/build/imatrix-oracle}
home=$("$root/../shared/tools/llama-oracle/setup.sh")
libdir=$(. "$home/env.sh" && echo "$GGML_BACKEND_DIR")
mkdir -p "$out"
for tool in llama-imatrix-lite llama-quantize-imatrix; do
  src=$here/${tool//-/_}.cpp
  if [[ ! -x $out/$tool || $src -nt $out/$tool ]]; then
    g++ -O2 -std=c++17 "$src" -I"$home/src/include" -I"$home/src/ggml/include" -L"$home/lib" \
        -lllama -lggml -lggml-base -Wl,-rpath,"$libdir" -o "$out/$tool"
  fi
done
echo "$out"
