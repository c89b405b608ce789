#!/bin/bash
# tests/golden/imatrix: llama.cpp's importance matrix of zoo-moe over text.txt (two chunks of 64
# tokens), made by tools/imatrix_oracle's llama-imatrix-lite (llama-imatrix's collection). The
# test reads it with vkllm's reader and checks its sums against the CPU reference forward's
# matmul inputs (tests/model/test_imatrix_llama.cpp).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
oracle=$("$root/tools/imatrix_oracle/build.sh")
source "$("$root/../shared/tools/llama-oracle/setup.sh")/env.sh"
"$oracle/llama-imatrix-lite" "$root/assets/zoo/zoo-moe.gguf" "$root/tests/golden/imatrix/text.txt" \
    "$root/tests/golden/imatrix/zoo-moe.imatrix.gguf" 64 2 2
"$oracle/llama-imatrix-lite" "$root/assets/zoo/zoo-mla.gguf" "$root/tests/golden/imatrix/text.txt" \
    "$root/tests/golden/imatrix/zoo-mla.imatrix.gguf" 64 2 2
