#!/usr/bin/env bash
# Checks that llama.cpp reads each family feature the generator writes: for the golden models of
# tests/golden/families/models.txt, a variant with one feature switched off or changed (another
# generator option, a patched metadata value or scaled tensor, another architecture with the same
# weights) must change llama.cpp's logits, and only at the positions the feature can act on; where
# the feature cannot act, the logits must stay bit-identical.
#   tools/random_model/check_features.sh [BUILD_DIR]      (default: build)
# Needs the oracle installed (../shared/tools/llama-oracle/setup.sh) and /usr/bin/python3 with numpy.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=${1:-$root/build}
gen=$build/bin/vkllm-random-model
home=${ORACLE_HOME:-$HOME/.cache/llama-oracle}
golden=$root/tests/golden/families
[ -x "$gen" ] || { echo "no $gen: build the vkllm-random-model target first" >&2; exit 1; }
[ -x "$home/llama-logits" ] || { echo "no llama.cpp oracle in $home: run ../shared/tools/llama-oracle/setup.sh" >&2; exit 1; }
source "$home/env.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prompt=$(cat "$golden/prompt.txt")
failures=0

args_of() { sed -n "s/^$1  *//p" "$golden/models.txt"; }

# model NAME OPTIONS...: writes $tmp/NAME.gguf and runs llama.cpp on it.
model() {
    local name=$1; shift
    "$gen" --out "$tmp/$name.gguf" "$@"
    run "$name"
}
run() {
    NO_FA=1 KV_F32=1 "$home/llama-logits" "$tmp/$1.gguf" none "$prompt" 1 "$tmp/$1" 1 > "$tmp/$1.log" 2>&1 ||
        { echo "llama.cpp failed on $1: $(grep -iE 'error' "$tmp/$1.log" | head -2)" >&2; exit 1; }
}
# patched BASE NAME PATCH-OPTIONS...: a copy of BASE edited by gguf_patch.py, run as NAME.
patched() {
    local base=$1 name=$2; shift 2
    cp "$tmp/$base.gguf" "$tmp/$name.gguf"
    /usr/bin/python3 "$here/gguf_patch.py" "$tmp/$name.gguf" "$@"
    run "$name"
}
# differs A B FIRST_POS WHAT: logits differ by more than 1e-3 somewhere, first at position FIRST_POS
# (any position when FIRST_POS is '-').
differs() {
    local r; r=$(/usr/bin/python3 "$here/compare_logits.py" "$tmp/$1.logits.f32" "$tmp/$2.logits.f32" 512)
    local max first; max=$(sed 's/.*max_abs_diff=\([^ ]*\).*/\1/' <<< "$r"); first=$(sed 's/.*first_diff_pos=\([^ ]*\).*/\1/' <<< "$r")
    if awk "BEGIN { exit !($max > 1e-3) }" && { [ "$3" = - ] || [ "$first" = "$3" ]; }; then
        echo "ok   $4: $r"
    else
        echo "FAIL $4 (expected a difference above 1e-3 from position $3): $r"; failures=$((failures + 1))
    fi
}
same() {
    local r; r=$(/usr/bin/python3 "$here/compare_logits.py" "$tmp/$1.logits.f32" "$tmp/$2.logits.f32" 512)
    if [[ $r == *first_diff_pos=-1* ]]; then echo "ok   $3: identical"; else echo "FAIL $3 (expected identical): $r"; failures=$((failures + 1)); fi
}

# GPT-2: learned positions and LayerNorm epsilon are read.
model gpt2 $(args_of gpt2)
patched gpt2 gpt2-nopos --scale 'position_embd.weight=0'
differs gpt2 gpt2-nopos 0 "gpt2: position_embd is added"
patched gpt2 gpt2-eps --set gpt2.attention.layer_norm_epsilon=0.5
differs gpt2 gpt2-eps 0 "gpt2: attention.layer_norm_epsilon is read"

# Llama 3 RoPE: the rope_freqs tensor divides the low frequencies (nothing to rotate at position 0).
model llama3-rope $(args_of llama3-rope)
model llama3-rope-off $(args_of llama3-rope | sed 's/--rope-scaling [^ ]*//')
differs llama3-rope llama3-rope-off 1 "llama: rope_freqs (Llama 3 scaling) is applied"

# YaRN on arch llama: differs from no scaling and from linear scaling by the same factor.
model llama-yarn $(args_of llama-yarn)
model llama-yarn-off $(args_of llama-yarn | sed 's/--rope-scaling [^ ]*//')
model llama-linear $(args_of llama-yarn | sed 's/--rope-scaling [^ ]*/--rope-scaling linear:4/')
differs llama-yarn llama-yarn-off 1 "llama: rope.scaling.type yarn is applied"
differs llama-yarn llama-linear 1 "llama: YaRN is not linear scaling"
patched llama-yarn llama-yarn-orig --set llama.rope.scaling.original_context_length=32
differs llama-yarn llama-yarn-orig 1 "llama: rope.scaling.original_context_length is read"

# Qwen2: q/k/v biases are added.
model qwen2 $(args_of qwen2)
patched qwen2 qwen2-nobias --scale 'blk\.[0-9]+\.attn_[qkv]\.bias=0'
differs qwen2 qwen2-nobias 0 "qwen2: q/k/v biases are added"
model qwen2-q8_0 $(args_of qwen2-q8_0)
differs qwen2 qwen2-q8_0 0 "qwen2: Q8_0 weights differ from F32 (quantization error only)"

# Qwen3: per-head q/k RMSNorm weights are applied.
model qwen3 $(args_of qwen3)
patched qwen3 qwen3-qk --scale 'blk\.[0-9]+\.attn_q_norm\.weight=2'
differs qwen3 qwen3-qk 1 "qwen3: attn_q_norm scales the scores (one key at position 0: no effect)"

# Gemma 2: soft-caps and the sliding window (8: the query at position p sees keys p-7..p, so
# only positions >= 8 change when the window is widened).
model gemma2 $(args_of gemma2)
patched gemma2 gemma2-noattncap --set gemma2.attn_logit_softcapping=10000
differs gemma2 gemma2-noattncap 1 "gemma2: attn_logit_softcapping is applied"
patched gemma2 gemma2-nofinalcap --set gemma2.final_logit_softcapping=10000
differs gemma2 gemma2-nofinalcap 0 "gemma2: final_logit_softcapping is applied"
patched gemma2 gemma2-nowindow --set gemma2.attention.sliding_window=4096
differs gemma2 gemma2-nowindow 8 "gemma2: sliding_window 8 masks keys 8 or more positions back"

# Gemma 3: window, local RoPE base, and the default pattern (5 local layers, then 1 global).
model gemma3 $(args_of gemma3)
patched gemma3 gemma3-nowindow --set gemma3.attention.sliding_window=4096
differs gemma3 gemma3-nowindow 8 "gemma3: sliding_window 8 masks keys 8 or more positions back"
patched gemma3 gemma3-swabase --set gemma3.rope.freq_base_swa=20000
differs gemma3 gemma3-swabase 1 "gemma3: local layers use rope.freq_base_swa"
patched gemma3 gemma3-globalbase --set gemma3.rope.freq_base=20000
differs gemma3 gemma3-globalbase 1 "gemma3: the 6th layer is global (rope.freq_base)"
model gemma3-5 $(args_of gemma3 | sed 's/--n-layer 6/--n-layer 5/')
patched gemma3-5 gemma3-5-globalbase --set gemma3.rope.freq_base=20000
same gemma3-5 gemma3-5-globalbase "gemma3: layers 0-4 are all local (rope.freq_base unused)"

# OLMo 2: QK-norm over the whole projection, norms after attention and FFN.
model olmo2 $(args_of olmo2)
patched olmo2 olmo2-qk --scale 'blk\.[0-9]+\.attn_k_norm\.weight=2'
differs olmo2 olmo2-qk 1 "olmo2: attn_k_norm [n_head_kv*head_dim] scales the scores"
patched olmo2 olmo2-post --scale 'blk\.0\.post_ffw_norm\.weight=2'
differs olmo2 olmo2-post 0 "olmo2: post_ffw_norm is applied"

# Phi-3: partial rotary (rope.dimension_count 12 of 16), LongRoPE factors.
model phi3 $(args_of phi3)
patched phi3 phi3-fullrope --set phi3.rope.dimension_count=16
differs phi3 phi3-fullrope 1 "phi3: rope.dimension_count below head_dim rotates only those dims"
patched phi3 phi3-window --set phi3.attention.sliding_window=8
same phi3 phi3-window "phi3: attention.sliding_window is ignored (llama.cpp disables Phi-3 windows)"
model phi3-longrope $(args_of phi3) --rope-scaling longrope:32
differs phi3 phi3-longrope 1 "phi3: LongRoPE long factors and attn_factor (context 512 > 32)"
patched phi3-longrope phi3-longrope-short --set phi3.rope.scaling.original_context_length=1024
differs phi3-longrope phi3-longrope-short 1 "phi3: LongRoPE short factors when the context <= original"

# SmolLM3 = llama with the same weights, except no RoPE in layer 3 ((il + 1) % 4 == 0).
for n in 3 4; do
    model smollm3-$n $(args_of smollm3 | sed "s/--n-layer 4/--n-layer $n/")
    model llama-as-smollm3-$n $(args_of smollm3 | sed "s/--n-layer 4/--n-layer $n/; s/--arch smollm3/--arch llama/") \
        --rope-freq-base 5000000
    patched llama-as-smollm3-$n llama-as-smollm3-$n-eps --set llama.attention.layer_norm_rms_epsilon=1e-6
done
same smollm3-3 llama-as-smollm3-3-eps "smollm3: 3 layers equal llama (no NoPE layer yet)"
differs smollm3-4 llama-as-smollm3-4-eps 1 "smollm3: layer 3 has no RoPE"

# EXAONE = llama with the same weights and keys, except NeoX RoPE pairs: identical at position 0
# (no rotation there), different from position 1 on. Its Llama 3 rope_freqs are read.
model exaone $(args_of exaone)
model llama-as-exaone $(args_of exaone | sed "s/--arch exaone/--arch llama/") --rope-freq-base 1000000
differs exaone llama-as-exaone 1 "exaone: NeoX RoPE pairs (the llama layout otherwise)"
model exaone-nofactors $(args_of exaone | sed "s/--rope-scaling [^ ]*//")
differs exaone exaone-nofactors 1 "exaone: rope_freqs (Llama 3 factors) are read"

if [ "$failures" -gt 0 ]; then echo "$failures check(s) failed"; exit 1; fi
echo "llama.cpp reads every family feature"
