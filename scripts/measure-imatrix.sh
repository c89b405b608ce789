#!/bin/bash
# Perplexity of IQ2_XXS, Q2_K_S, IQ3_XXS, Q3_K_S and IQ1_S files (TYPES) with and without an importance matrix,
# vkllm's quantizer beside llama.cpp's, on a zoo model over held-out text (docs/imatrix.md).
#   [CTX=256] [CORPUS=corpus_broad.py] [TYPES="IQ2_XXS ..."] scripts/measure-imatrix.sh [MODEL=assets/zoo/zoo-deep.gguf] [WORK=/tmp/vkllm-imatrix]
# The imatrix text and the held-out text come from the generator the model was trained on
# (CORPUS in tools/zoo: corpus_broad.py for zoo-deep, corpus.py for zoo-wide, corpus_facts.py for zoo-facts): its train split and
# its held-out split (a different seed, so the imatrix never sees a held-out story). Two matrices: vkllm imatrix's and
# llama.cpp's (tools/imatrix_oracle: llama-imatrix-lite), each used by both quantizers.
# "flat" is a matrix of ones (llama-quantize-lite's IMATRIX=ones), the nearest to none for the
# types llama.cpp refuses without one. Every file is scored by vkllm perplexity.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
model=${1:-$root/assets/zoo/zoo-deep.gguf}
work=${2:-/tmp/vkllm-imatrix}
ctx=${CTX:-256}
corpus=${CORPUS:-corpus_broad.py}
vkllm=$root/build/bin/vkllm
mkdir -p "$work"
oracle=$("$root/tools/imatrix_oracle/build.sh")
home=$("$root/../shared/tools/llama-oracle/setup.sh")
source "$home/env.sh"

[[ -s $work/text/train.txt ]] || python3 "$root/tools/zoo/$corpus" "$work/text" --train-mb 0.2 --heldout-mb 0.1 >/dev/null
# The zoo trains on the stories' tokens one story after another (BOS, story, EOS: tokenizer.py
# encode), never on the blank lines between them, which the model would then meet once a story:
# the stories are joined by a space.
for split in heldout train; do sed -z 's/\n\n/ /g' "$work/text/$split.txt" > "$work/text/$split.joined"; done
head -c 30000 "$work/text/heldout.joined" > "$work/held.txt"
head -c 60000 "$work/text/train.joined" > "$work/train.txt"

# The matrices: vkllm's (when vkllm has the command) and llama.cpp's, over the same chunks.
"$oracle/llama-imatrix-lite" "$model" "$work/train.txt" "$work/llama.imatrix.gguf" "$ctx" 0 2 > "$work/llama-imatrix.log"
matrices="llama"
if "$vkllm" imatrix --help >/dev/null 2>&1; then
  "$vkllm" imatrix -m "$model" -f "$work/train.txt" -o "$work/vkllm.imatrix.gguf" -c "$ctx" > "$work/vkllm-imatrix.log" 2>&1
  matrices="vkllm llama"
fi
# A flat matrix: every weight's columns alike (sums 1, count 1).
/usr/bin/python3 - "$work/llama.imatrix.gguf" "$work/flat.imatrix.gguf" <<'PY'
import sys, numpy as np
from gguf import GGUFReader, GGUFWriter
r = GGUFReader(sys.argv[1])
w = GGUFWriter(sys.argv[2], arch="imatrix")
w.add_type("imatrix")
w.add_array("imatrix.datasets", ["flat"])
w.add_uint32("imatrix.chunk_count", 1)
w.add_uint32("imatrix.chunk_size", 1)
for t in r.tensors:
    w.add_tensor(t.name, np.ones_like(np.array(t.data, dtype=np.float32)))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
PY

ppl() { "$vkllm" perplexity -m "$1" -f "$work/held.txt" -c "$ctx" 2>/dev/null | sed -n 's/^perplexity: \([0-9.]*\).*/\1/p'; }
# The held-out text's own matrix, to weigh each file's weight errors by held-out activations.
"$oracle/llama-imatrix-lite" "$model" "$work/held.txt" "$work/held.imatrix.gguf" "$ctx" 0 2 > /dev/null
err() { /usr/bin/python3 "$root/scripts/imatrix_weighted_error.py" "$work/held.imatrix.gguf" "$model" "$1" | sed -n 's/.*: \([0-9.]*\) over.*/\1/p'; }
score() { if [[ -n $1 ]]; then echo "$(ppl "$1") | $(err "$1")"; else echo "refused | -"; fi; }
echo "model $(basename "$model"), held-out $(wc -c < "$work/held.txt") bytes, -c $ctx; unquantized perplexity: $(ppl "$model")"
echo "| type | matrix | vkllm: perplexity | vkllm: held-out weighted error | llama.cpp: perplexity | llama.cpp: held-out weighted error |"
echo "|---|---|---:|---:|---:|---:|"
for type in ${TYPES:-IQ2_XXS Q2_K_S IQ3_XXS Q3_K_S IQ1_S}; do
  for m in none flat $matrices; do
    v=$work/$type-$m-vkllm.gguf; l=$work/$type-$m-llama.gguf
    if [[ $m == none ]]; then
      "$vkllm" quantize "$model" "$v" "$type" > /dev/null 2>&1 || v=""
      "$home/llama-quantize-lite" "$model" "$l" "$type" > /dev/null 2>&1 || l=""
    else
      "$vkllm" quantize "$model" "$v" "$type" --imatrix "$work/$m.imatrix.gguf" > /dev/null
      "$oracle/llama-quantize-imatrix" "$model" "$l" "$type" "$work/$m.imatrix.gguf" > /dev/null 2>&1
    fi
    echo "| $type | $m | $(score "$v") | $(score "$l") |"
  done
done
