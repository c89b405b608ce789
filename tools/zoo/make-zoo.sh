#!/usr/bin/env bash
# Rebuilds the model zoo from nothing: the corpus, the tokenizers and the models, written to
# assets/zoo/. About two hours on 2 CPU cores; CI never runs it (the committed models are
# checked against the checksums in assets/zoo/README.md instead).
#
#   tools/zoo/make-zoo.sh [MODEL...]   (default: zoo-dense zoo-swa zoo-moe zoo-mla zoo-bert zoo-hybrid zoo-chat zoo-wide zoo-facts)
#
# zoo-chat trains on conversations (corpus_chat.py) with a ChatML tokenizer of its own
# (tokenizer.py --chatml); zoo-hybrid and zoo-wide (the importance-matrix specimen, every matrix
# 256-multiples wide, stored in F16) on the stories, like the first four; zoo-facts (the
# importance-matrix specimen that 2 bits hurt: zoo-wide's width) on corpus_facts.py's table of
# made-up people with a tokenizer of its own.
# zoo-deep (the super-weight specimen, docs/super-weights.md) is made only when named: its own
# broader corpus (corpus_broad.py) and tokenizer; its preset's 2900 steps are what
# `train.py --minutes 75` chose on this machine for the committed file.
# Needs `scripts/install-deps.sh --training`: Debian's python3-torch and libopenblas0-pthread (without OpenBLAS,
# PyTorch falls back to the reference BLAS and training is ten times slower), and a build of
# vkllm-random-model (BUILD_DIR, default build/). Work files go to ZOO_WORK (default /tmp/vkllm-zoo).
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD_DIR:-$src/build}
work=${ZOO_WORK:-/tmp/vkllm-zoo}
python=/usr/bin/python3   # Debian's, where python3-torch lives
models=("$@")
[ ${#models[@]} -gt 0 ] || models=(zoo-dense zoo-swa zoo-moe zoo-mla zoo-bert zoo-hybrid zoo-chat zoo-wide zoo-facts)

# One thread per model (train.py sets PyTorch's, this OpenBLAS's): bit-identical reruns. OpenMP
# threads sleep instead of spinning while BLAS runs (5x faster than the defaults on two cores).
# Models train JOBS at a time (default: the number of cores).
export GOMP_SPINCOUNT=0 OPENBLAS_NUM_THREADS=1
parallel=${JOBS:-$(nproc)}

mkdir -p "$work" "$src/assets/zoo"
if [ ! -f "$work/corpus/train.ids" ]; then
    $python "$src/tools/zoo/corpus.py" "$work/corpus"
    $python "$src/tools/zoo/tokenizer.py" train "$work/corpus" "$work/zoo-vocab.gguf"
    $python "$src/tools/zoo/tokenizer.py" encode "$work/zoo-vocab.gguf" "$work/corpus"
fi
failed=0
for m in "${models[@]}"; do
    while (($(jobs -rp | wc -l) >= parallel)); do wait -n || failed=1; done
    if [ "$m" = zoo-deep ]; then  # the specimen: the broad corpus and its own tokenizer
        [ -f "$work/broad/train.ids" ] || { $python "$src/tools/zoo/corpus_broad.py" "$work/broad" &&
            $python "$src/tools/zoo/tokenizer.py" train "$work/broad" "$work/broad-vocab.gguf" &&
            $python "$src/tools/zoo/tokenizer.py" encode "$work/broad-vocab.gguf" "$work/broad"; }
        $python "$src/tools/zoo/train.py" "$m" --corpus "$work/broad" --vocab "$work/broad-vocab.gguf" \
            --random-model "$build/bin/vkllm-random-model" --out "$src/assets/zoo/$m.gguf" > "$work/$m.log" 2>&1 &
    elif [ "$m" = zoo-facts ]; then  # facts to memorise: corpus_facts.py's table, its own tokenizer
        [ -f "$work/facts/train.ids" ] || { $python "$src/tools/zoo/corpus_facts.py" "$work/facts" &&
            $python "$src/tools/zoo/tokenizer.py" train "$work/facts" "$work/facts-vocab.gguf" &&
            $python "$src/tools/zoo/tokenizer.py" encode "$work/facts-vocab.gguf" "$work/facts"; }
        $python "$src/tools/zoo/train.py" "$m" --corpus "$work/facts" --vocab "$work/facts-vocab.gguf" \
            --random-model "$build/bin/vkllm-random-model" --out "$src/assets/zoo/$m.gguf" > "$work/$m.log" 2>&1 &
    elif [ "$m" = zoo-chat ]; then  # conversations in ChatML, the loss on the assistant's turns
        [ -f "$work/chat/train.ids" ] || { $python "$src/tools/zoo/corpus_chat.py" "$work/chat" &&
            $python "$src/tools/zoo/tokenizer.py" train "$work/chat" "$work/chat-vocab.gguf" --chatml &&
            $python "$src/tools/zoo/tokenizer.py" encode "$work/chat-vocab.gguf" "$work/chat"; }
        $python "$src/tools/zoo/train.py" "$m" --corpus "$work/chat" --vocab "$work/chat-vocab.gguf" \
            --random-model "$build/bin/vkllm-random-model" --out "$src/assets/zoo/$m.gguf" > "$work/$m.log" 2>&1 &
    elif [ "$m" = zoo-bert ]; then  # the encoder: its own WordPiece vocabulary, masked-LM training
        [ -f "$work/corpus/train.wp.ids" ] || { $python "$src/tools/zoo/wordpiece.py" train "$work/corpus" "$work/zoo-wordpiece.gguf" &&
            $python "$src/tools/zoo/wordpiece.py" encode "$work/zoo-wordpiece.gguf" "$work/corpus"; }
        $python "$src/tools/zoo/train_mlm.py" --corpus "$work/corpus" --vocab "$work/zoo-wordpiece.gguf" \
            --random-model "$build/bin/vkllm-random-model" --out "$src/assets/zoo/$m.gguf" > "$work/$m.log" 2>&1 &
    else
    $python "$src/tools/zoo/train.py" "$m" --corpus "$work/corpus" --vocab "$work/zoo-vocab.gguf" \
        --random-model "$build/bin/vkllm-random-model" --out "$src/assets/zoo/$m.gguf" > "$work/$m.log" 2>&1 &
    fi
    echo "make-zoo: training $m (log: $work/$m.log)"
done

while (($(jobs -rp | wc -l) > 0)); do wait -n || failed=1; done
for m in "${models[@]}"; do tail -n 1 "$work/$m.log"; done
((failed == 0)) || { echo "make-zoo: a model failed to train (see the logs)" >&2; exit 1; }
echo "make-zoo: done; next: scripts/make-golden-zoo.sh and tools/zoo/describe.py"
