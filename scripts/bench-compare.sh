#!/usr/bin/env bash
# vkllm against llama.cpp's Vulkan backend on the same files and device, in one run:
# the README's table. For each model, `vkllm bench --json` and the oracle's `llama-bench-lite` run
# interleaved (vkllm, llama.cpp, vkllm, llama.cpp) and each engine's better run is kept: on
# lavapipe llama.cpp's speed has been seen to move 3x between runs half an hour apart. Also
# vkllm's time to first token (`vkllm run -n 1`, process start to exit, model load included)
# with an empty pipeline cache (cold) and with the cache that run left (warm).
#
#   scripts/bench-compare.sh [BUILD_DIR]      (default: build)
#   BENCH_MODELS=REGEX  only the models whose name or key matches (e.g. 'zoo-dense|Q8_0')
#   BENCH_REPEATS=N     repeats inside each bench run (default 3)
# For other runs (scripts/gpu-check.sh uses them; unset, the run is the one described above):
#   BENCH_LIST=FILE     the models to run instead of the list below, one "name|file|pp|tg|llama
#                       pp|key" a line ('#' starts a comment)
#   BENCH_JSONL=FILE    also append one JSON object a row: {model (the key), name, pp, tg,
#                       llama_pp_tokens, vkllm_pp, llama_pp, vkllm_tg, llama_tg, ttft_cold_s,
#                       ttft_warm_s}, tokens/s and seconds, null where a run failed or was skipped
#   BENCH_ROUNDS=N      interleaved runs of each engine (default 2)
#   BENCH_TTFT=0        skip the time to first token (its columns show "-")
#   BENCH_THREADS=N     llama-bench-lite's CPU threads (default 2)
#   BENCH_DEVICE=NAME   the device name for the header, instead of asking vkllm
#
# Needs ../shared (stories260K, the llama vocabulary) and the llama-oracle set up
# (../shared/tools/llama-oracle/setup.sh; ORACLE_HOME, default ~/.cache/llama-oracle). The random
# 134M Llama files are written once into BENCH_CACHE (default ~/.cache/vkllm-bench), never into
# the repository. Prints a Markdown table on stdout, progress on stderr. Models whose file or
# tool is missing are skipped with a note; a llama.cpp run that fails shows as "fails".
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
[[ $build = /* ]] || build=$root/$build
vkllm=$build/bin/vkllm
random_model=$build/bin/vkllm-random-model
shared=${VKLLM_SHARED_DIR:-$root/../shared}
oracle=${ORACLE_HOME:-$HOME/.cache/llama-oracle}
cache=${BENCH_CACHE:-$HOME/.cache/vkllm-bench}
reps=${BENCH_REPEATS:-3}
only=${BENCH_MODELS:-}
rounds=${BENCH_ROUNDS:-2}
ttft=${BENCH_TTFT:-1}
threads=${BENCH_THREADS:-2}
jsonl=${BENCH_JSONL:-}

die() { echo "bench-compare: $*" >&2; exit 1; }
[[ -x $vkllm ]] || die "no $vkllm (build it: cmake --build $build --target vkllm)"
[[ -x $oracle/llama-bench-lite ]] || die "no $oracle/llama-bench-lite (run ../shared/tools/llama-oracle/setup.sh)"
# shellcheck disable=SC1091
source "$oracle/env.sh"
mkdir -p "$cache"

# The 134M random Llama (tools/random_model/README.md) in three weight types, made once, when a
# row that reads it is run.
make_134m() {  # FILE: writes $cache/llama-134m-TYPE.gguf if that is FILE and it is missing
    local f=$1 type
    [[ -f $f || $f != "$cache"/llama-134m-*.gguf ]] && return 0
    [[ -x $random_model && -f $shared/models/vocab/ggml-vocab-llama-spm.gguf ]] || return 0
    type=${f#"$cache"/llama-134m-}
    type=${type%.gguf}
    echo "bench-compare: writing $f" >&2
    "$random_model" --arch llama --out "$f.tmp" --seed 42 --n-embd 768 --n-layer 12 --n-head 12 \
        --n-head-kv 12 --n-ff 2048 --n-ctx 2048 --type "$type" \
        --vocab-from "$shared/models/vocab/ggml-vocab-llama-spm.gguf" >&2
    mv "$f.tmp" "$f"
}

# name | file | prompt tokens | decode tokens | llama.cpp prompt tokens (its Vulkan backend
# crashes on a 32-token batch of the MoE and MLA zoo models, so they get 16) | key (BENCH_JSONL)
models=(
    "stories260K F32|$shared/models/stories260K/stories260K-F32.gguf|64|32|64|stories260K-F32"
    "stories260K Q8_0|$shared/models/stories260K/stories260K-Q8_0.gguf|64|32|64|stories260K-Q8_0"
    "zoo-dense|$root/assets/zoo/zoo-dense.gguf|64|32|64|zoo-dense"
    "zoo-swa|$root/assets/zoo/zoo-swa.gguf|64|32|64|zoo-swa"
    "zoo-moe|$root/assets/zoo/zoo-moe.gguf|64|32|16|zoo-moe"
    "zoo-mla|$root/assets/zoo/zoo-mla.gguf|64|32|16|zoo-mla"
    "random Llama 134M F16|$cache/llama-134m-F16.gguf|32|8|32|llama-134m-F16"
    "random Llama 134M Q8_0|$cache/llama-134m-Q8_0.gguf|32|8|32|llama-134m-Q8_0"
    "random Llama 134M Q4_0|$cache/llama-134m-Q4_0.gguf|32|8|32|llama-134m-Q4_0"
)
if [[ -n ${BENCH_LIST:-} ]]; then
    models=()
    while IFS= read -r line; do
        [[ -z ${line// } || $line = \#* ]] || models+=("$line")
    done <"$BENCH_LIST"
fi

# field FILE KEY: a number from a one-line JSON object (empty when absent).
field() { python3 -c 'import json,sys
try: print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])[sys.argv[2]])
except Exception: print("")' "$1" "$2"; }
# better A B: the larger number, or the one present.
better() { python3 -c 'import sys
v=[float(x) for x in sys.argv[1:] if x]
print(f"{max(v):.1f}" if v else "")' "$@"; }
ratio() { python3 -c 'import sys
a,b=sys.argv[1],sys.argv[2]
print(f"{float(a)/float(b):.2f}" if a and b and float(b)>0 else "-")' "$1" "$2"; }
seconds_of() { local t0 t1; t0=$(date +%s.%N); "$@" >/dev/null 2>&1 || return 1; t1=$(date +%s.%N); python3 -c "print(f'{$t1-$t0:.2f}')"; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
device=${BENCH_DEVICE:-$("$vkllm" bench -m "$root/assets/zoo/zoo-dense.gguf" -p 1 -n 1 -r 1 --json 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["device"])' || echo "?")}
# jsonrow KEY NAME PP TG LPP VP LP VT LT COLD WARM VKJSON: one BENCH_JSONL line (empty or "-": null),
# with vkllm's GPU time by op family of one decode step and of one prompt pass (`vkllm bench
# --json`'s ops_ms and prompt_ops_ms, from VKJSON: the last round's output) as
# vkllm_decode_ops_ms and vkllm_prompt_ops_ms.
jsonrow() { python3 -c 'import json,sys
a=sys.argv[1:]
num=lambda x: float(x) if x not in ("", "-") else None
try: vk=json.loads(open(a[11]).read().strip().splitlines()[-1])
except Exception: vk={}
print(json.dumps({"model": a[0], "name": a[1], "pp": int(a[2]), "tg": int(a[3]), "llama_pp_tokens": int(a[4]),
    "vkllm_pp": num(a[5]), "llama_pp": num(a[6]), "vkllm_tg": num(a[7]), "llama_tg": num(a[8]),
    "ttft_cold_s": num(a[9]), "ttft_warm_s": num(a[10]),
    "vkllm_decode_ops_ms": vk.get("ops_ms"), "vkllm_prompt_ops_ms": vk.get("prompt_ops_ms")}))' "$@"; }

# The header first and each row as its model finishes, so a run cut short keeps what it measured.
runs="two interleaved runs"
[[ $rounds = 2 ]] || runs="$rounds interleaved runs"
[[ $rounds = 1 ]] && runs="one run"
echo "Device: $device; $(nproc) CPU cores; $(date -u +%Y-%m-%d). Tokens/s, each engine's better of $runs (median of $reps repeats each); TTFT: seconds from process start to the first token (model load included), empty / warm pipeline cache."
echo
echo "| model | vkllm pp | llama.cpp pp | pp ratio | vkllm tg | llama.cpp tg | tg ratio | TTFT cold s | TTFT warm s |"
echo "|---|---|---|---|---|---|---|---|---|"
for m in "${models[@]}"; do
    IFS='|' read -r name file pp tg lpp key <<<"$m"
    key=${key:-$name}
    [[ -n $only && ! $name =~ $only && ! $key =~ $only ]] && continue
    make_134m "$file"
    if [[ ! -f $file ]]; then
        echo "bench-compare: skipping $name: no $file" >&2
        continue
    fi
    echo "bench-compare: $name" >&2
    vk_pp=() vk_tg=() ll_pp=() ll_tg=()
    for ((round = 1; round <= rounds; round++)); do
        "$vkllm" bench -m "$file" -p "$pp" -n "$tg" -r "$reps" --json >"$tmp/vk$round" 2>"$tmp/vk$round.err" || true
        vk_pp+=("$(field "$tmp/vk$round" prompt_tps)") vk_tg+=("$(field "$tmp/vk$round" decode_tps)")
        "$oracle/llama-bench-lite" "$file" Vulkan0 "$lpp" "$tg" "$reps" "$threads" >"$tmp/ll$round" 2>"$tmp/ll$round.err" || true
        ll_pp+=("$(field "$tmp/ll$round" pp_tps)") ll_tg+=("$(field "$tmp/ll$round" tg_tps)")
    done
    vp=$(better "${vk_pp[@]}") vt=$(better "${vk_tg[@]}") lp=$(better "${ll_pp[@]}") lt=$(better "${ll_tg[@]}")
    # Time to first token: a fresh pipeline cache, then the one it left.
    cold=- warm=-
    if [[ $ttft != 0 ]]; then
        export XDG_CACHE_HOME=$tmp/xdg-${name// /_}
        cold=$(seconds_of "$vkllm" run -m "$file" -p "Once upon a time" -n 1 --temp 0 || echo "-")
        warm=$(seconds_of "$vkllm" run -m "$file" -p "Once upon a time" -n 1 --temp 0 || echo "-")
        unset XDG_CACHE_HOME
    fi
    label="$name (pp$pp/tg$tg)"
    [[ $lpp != "$pp" ]] && label="$name (pp$pp/tg$tg; llama.cpp pp$lpp)"
    echo "| $label | ${vp:-fails} | ${lp:-fails} | $(ratio "$vp" "$lp") | ${vt:-fails} | ${lt:-fails} | $(ratio "$vt" "$lt") | $cold | $warm |"
    [[ -z $jsonl ]] || jsonrow "$key" "$name" "$pp" "$tg" "$lpp" "$vp" "$lp" "$vt" "$lt" "$cold" "$warm" "$tmp/vk$rounds" >>"$jsonl"
done
