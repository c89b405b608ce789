#!/usr/bin/env bash
# Regenerates tests/golden/bert: a small WordPiece vocabulary (the first 4000 tokens of
# llama.cpp's bert-bge vocab file: special tokens, characters, "##" pieces and the commonest
# words), the random-weight BERT models of models.txt (vkllm-random-model --arch bert), and
# llama.cpp's embeddings of each prompt of prompts.txt (../shared/tools/llama-oracle, CPU, one
# thread, EMBED=none|mean|cls): NAME.P.POOL.embd.f32 (float32 [rows][n_embd]) and
# NAME.P.tokens.txt (the tokens llama.cpp used: [CLS] ... [SEP]). Then the same for the trained
# zoo-bert (assets/zoo/zoo-bert.gguf, its own vocabulary) on the prompts of zoo-prompts.txt.
#   scripts/make-golden-bert.sh [BUILD_DIR]     (or BUILD_DIR=...; default build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
shared=${VKLLM_SHARED_DIR:-$root/../shared}
build=${1:-${BUILD_DIR:-$root/build}}
out=$root/tests/golden/bert

[[ -f $build/CMakeCache.txt ]] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" --target vkllm-random-model
gen=$build/bin/vkllm-random-model

home=$("$shared/tools/llama-oracle/setup.sh")
source "$home/env.sh"

# The vocabulary: every tokenizer.* key of the bge file, with the token arrays cut to 4000.
/usr/bin/python3 - "$home/src/models/ggml-vocab-bert-bge.gguf" "$out/vocab.gguf" <<'PY'
import sys
import gguf
n = 4000
r = gguf.GGUFReader(sys.argv[1])
w = gguf.GGUFWriter(sys.argv[2], "bert")
for key, f in r.fields.items():
    if not key.startswith("tokenizer."):
        continue
    if key == "tokenizer.ggml.tokens":
        w.add_token_list([f.contents(i) for i in range(n)])
    elif key == "tokenizer.ggml.token_type":
        w.add_token_types([f.contents(i) for i in range(n)])
    elif key == "tokenizer.ggml.model":
        w.add_tokenizer_model(f.contents())
    elif key == "tokenizer.ggml.pre":
        w.add_tokenizer_pre(f.contents())
    else:
        w.add_uint32(key, int(f.contents()))
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
PY

# llama.cpp's embeddings of MODEL for each line of PROMPTS, as NAME.P.POOL.embd.f32 and NAME.P.tokens.txt.
embed_prompts() {
  local name=$1 model=$2 prompts=$3 p=0
  while IFS= read -r prompt; do
    for pool in none mean cls; do
      EMBED=$pool NO_FA=1 KV_F32=1 "$home/llama-logits" "$model" none "$prompt" 0 "$out/run" 1 >/dev/null 2>&1
      mv "$out/run.embd.f32" "$out/$name.$p.$pool.embd.f32"
    done
    mv "$out/run.tokens.txt" "$out/$name.$p.tokens.txt"
    rm -f "$out/run".*
    p=$((p + 1))
  done < "$prompts"
  echo "$name: $(stat -c %s "$model") bytes, $p prompts"
}

while read -r name args; do
  [[ -z $name || $name == \#* ]] && continue
  # shellcheck disable=SC2086  # the options are words
  "$gen" --arch bert --out "$out/$name.gguf" --vocab-from "$out/vocab.gguf" $args
  embed_prompts "$name" "$out/$name.gguf" "$out/prompts.txt"
done < "$out/models.txt"
embed_prompts zoo-bert "$root/assets/zoo/zoo-bert.gguf" "$out/zoo-prompts.txt"
echo "golden data written to $out"
