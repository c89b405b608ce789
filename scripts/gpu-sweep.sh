#!/usr/bin/env bash
# The decode matvec's tuning sweep, for a lent GPU after scripts/gpu-check.sh has unpacked its
# pack (same GPU_CHECK_WORK): vkllm-bench-matvec under each workgroup shape
# (VKLLM_MATVEC_SHAPE=THREADSxROWS) and units per loop trip (VKLLM_MATVEC_TRIP) for the types
# people download, with x quantized once per input as the forward reads it (--quantized-x); on
# request the matvecs that round x in every workgroup (round-x: VKLLM_MATVEC_XQ=0's path) and
# the float-x path beside them, decode of the 1B and 8B models under each decode switch, the few-rows kernel
# against the tiled matmul at 2-16 tokens (VKLLM_MATVEC_ROWS=1 sends them to the tiled one), and
# prompt processing under the prompt matmul's switches (tensor cores, prefetch, K step, tiles). One JSON line per measured row goes to
# $OUT/gpu-sweep.jsonl (or GPU_SWEEP_OUT), with the variant beside it; the readable lines to
# gpu-sweep.log beside it.
#
#   GPU_CHECK_WORK=/tmp/vkllm-gpu-check scripts/gpu-check.sh ...; scripts/gpu-sweep.sh
#   GPU_SWEEP_SHAPES="32x2 128x8"   the workgroup shapes (default below)
#   GPU_SWEEP_TYPES=q4_0,f16        the weight types
#   GPU_SWEEP_MATRIX=14336x4096     the matrix (rows x cols)
#   GPU_SWEEP_ROWS_MATRIX=4096x4096 the few-tokens comparison's matrix
#   GPU_SWEEP_PARTS=shapes,round-x,float-x,rows,decode,prefill   what to measure (default shapes)
#   GPU_SWEEP_TRIPS="2 4"           VKLLM_MATVEC_TRIP values for the shapes (default 2)
#   GPU_SWEEP_MODELS="llama-1b-Q4_0 ..." the decode and prefill parts' models (gpu-check.sh's names)
#   GPU_SWEEP_BUDGET=S              start no run after S seconds (default 90)
#   GPU_SWEEP_BUILD=DIR             binaries from DIR/bin instead of the unpacked pack (lavapipe)
set -uo pipefail
# shellcheck source=scripts/lib/gpu-env.sh
source "$(dirname "$0")/lib/gpu-env.sh"

work=${GPU_CHECK_WORK:-/tmp/vkllm-gpu-check}
out=${GPU_SWEEP_OUT:-${OUT:-$work/sweep}}
shapes=${GPU_SWEEP_SHAPES:-32x2 32x4 64x2 64x4 128x4 128x8 256x8}
types=${GPU_SWEEP_TYPES:-q4_0,q4_1,q4_K,q8_0,f16}
matrix=${GPU_SWEEP_MATRIX:-14336x4096}
rows_matrix=${GPU_SWEEP_ROWS_MATRIX:-4096x4096}
budget=${GPU_SWEEP_BUDGET:-90}
t0=$(date +%s)
parts=${GPU_SWEEP_PARTS:-shapes}
trips=${GPU_SWEEP_TRIPS:-2}
mkdir -p "$out" "$work/sweep" || exit 1
log=$out/gpu-sweep.log
jsonl=$out/gpu-sweep.jsonl
: >"$jsonl"

# The programs: the local build's, or the pack's that gpu-check.sh unpacked, with the NVIDIA
# driver's libraries and ICD manifest (scripts/lib/gpu-env.sh).
if [[ -n ${GPU_SWEEP_BUILD:-} ]]; then
    bin=$GPU_SWEEP_BUILD/bin
else
    gpu_env_pack "$work/pack"
    gpu_env_nvidia_libs
    [[ -z ${VK_DRIVER_FILES:-} ]] && gpu_env_nvidia_icd true
fi
[[ -x $bin/vkllm-bench-matvec ]] || { echo "gpu-sweep: no $bin/vkllm-bench-matvec" | tee -a "$log"; exit 1; }

# run VARIANT ENV... -- ARGS...: one bench_matvec run, its rows tagged with the variant.
run() {
    local variant=$1
    shift
    local envs=()
    while [[ $1 != -- ]]; do envs+=("$1"); shift; done
    shift
    local js=$work/sweep/$variant.json
    if (($(date +%s) - t0 > budget)); then
        echo "== $variant: skipped, past the sweep's $budget s" >>"$log"
        return
    fi
    echo "== $variant: ${envs[*]} $*" >>"$log"
    env "${envs[@]}" timeout 60 "$bin/vkllm-bench-matvec" --copy-mib 0 --repeats 3 --min-mib ${GPU_SWEEP_MIN_MIB:-1024} "$@" --json "$js" >>"$log" 2>&1
    echo "   rc $?" >>"$log"
    python3 - "$js" "$variant" "$*" >>"$jsonl" <<'EOF'
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception:
    sys.exit(0)
for m in d.get("matvec", []):
    m["variant"], m["args"] = sys.argv[2], sys.argv[3]
    print(json.dumps(m))
EOF
}

wants() { [[ ,$parts, = *,$1,* ]]; }
if wants shapes; then
    for t in $trips; do
        for s in default $shapes; do
            e=(VKLLM_MATVEC_TRIP=$t)
            [[ $s != default ]] && e+=(VKLLM_MATVEC_SHAPE=$s)
            run "trip-$t-shape-$s" "${e[@]}" -- --quantized-x --types "$types" --shapes "$matrix"
        done
    done
fi
if wants round-x; then  # every workgroup rounds x itself, at each shape (the path before --quantized-x)
    for s in default $shapes; do
        e=()
        [[ $s != default ]] && e+=(VKLLM_MATVEC_SHAPE=$s)
        run "round-x-shape-$s" "${e[@]}" -- --round-x --types "$types" --shapes "$matrix"
    done
fi
if wants float-x; then  # no rounding, at the default shape: what the f32-activation path reads
    run "float-x" -- --types "$types" --shapes "$matrix"
fi
if wants rows; then  # few tokens: matvec_rows against the tiled matmul
    for n in 2 4 8 16; do
        run "rows-$n" -- --types f16,q4_K,q8_0 --shapes "$rows_matrix" --tokens "$n"
        run "tiled-$n" VKLLM_MATVEC_ROWS=1 -- --types f16,q4_K,q8_0 --shapes "$rows_matrix" --tokens "$n"
    done
fi
# bench VARIANT MODEL ENV... -- ARGS...: one `vkllm bench --json` run on a model gpu-check.sh
# wrote, its JSON line tagged with the variant and the model.
bench() {
    local variant=$1 model=$2
    shift 2
    local envs=()
    while [[ $# -gt 0 && $1 != -- ]]; do envs+=("$1"); shift; done
    shift
    local m=$work/models/$model.gguf
    [[ -f $m ]] || return 0
    echo "== $variant $model ${envs[*]} $*" >>"$log"
    env "${envs[@]}" timeout 60 "$bin/vkllm" bench -m "$m" "$@" --json 2>>"$log" |
        python3 -c 'import json,sys; d=json.load(sys.stdin); d["variant"]=sys.argv[1]; d["model"]=sys.argv[2]; print(json.dumps(d))' \
            "$variant" "$model" >>"$jsonl" 2>>"$log"
}
# The models of the decode and prefill parts, the most telling first; each variant runs on every
# model before the next variant starts, so a short budget still compares the first variants.
sweep_models=${GPU_SWEEP_MODELS:-llama-1b-Q4_0 llama-1b-Q4_K_M llama-1b-F16 llama-1b-Q8_0 llama-8b-Q4_K_M}

# Decode, one JSON line per run of `vkllm bench -p 0 -n 64`: tokens/s and GPU time by op family
# (ops_ms), under the decode switches: Q4_0/Q8_0 weights in the file's block order instead of
# grouped (VKLLM_GROUPED_BLOCKS=0), the matvec's workgroup shape (VKLLM_MATVEC_SHAPE) and
# units per loop trip (VKLLM_MATVEC_TRIP) on the model's own matrices, the pre-norm inside the
# matvecs or a dispatch of its own (VKLLM_NORM_IN_MATVEC), x quantized once per input or rounded
# in every workgroup (VKLLM_MATVEC_XQ=0), the one-input matvecs' own quantize dispatch or not
# (VKLLM_MATVEC_XQ_SINGLE=0), Q, K and V as one stacked matvec or three (VKLLM_STACK_QKV=0), the
# integer dot on or off (VKLLM_INTEGER_DOT).
if wants decode; then
    variants=(default VKLLM_GROUPED_BLOCKS=0 VKLLM_MATVEC_SHAPE=32x4 VKLLM_MATVEC_SHAPE=64x4 VKLLM_MATVEC_SHAPE=128x8
              VKLLM_NORM_IN_MATVEC=0 VKLLM_MATVEC_XQ=0 VKLLM_MATVEC_TRIP=4 VKLLM_STACK_QKV=0
              VKLLM_MATVEC_XQ_SINGLE=0 VKLLM_INTEGER_DOT=0 VKLLM_INTEGER_DOT=1 VKLLM_NORM_IN_MATVEC=1)
    for v in "${variants[@]}"; do
        for model in $sweep_models; do
            (($(date +%s) - t0 > budget)) && break 2
            e=()
            [[ $v != default ]] && e+=("$v")
            bench "decode-$v" "$model" "${e[@]}" -- -p 0 -n 64 -r 3
        done
    done
fi
# Prompt processing, one JSON line per run of `vkllm bench -p 512 -n 0` with the prompt's GPU time
# by op family (prompt_ops_ms): the choice (the tensor cores where the device has them, in one
# pass of 512), without the register double buffering (VKLLM_MATMUL_PREFETCH=0), with K steps of
# 64 (VKLLM_COOPMAT_BK), Q4_0/Q8_0 in the file's block order (VKLLM_GROUPED_BLOCKS=0), on the
# scalar kernel (VKLLM_COOPMAT=0), with a forced tile
# (VKLLM_MATMUL_TILE; the choice steps down to smaller tiles until the grid has 256 workgroups),
# and in two passes of 256.
if wants prefill; then
    variants=(default VKLLM_MATMUL_PREFETCH=0 VKLLM_COOPMAT_BK=64 VKLLM_GROUPED_BLOCKS=0 VKLLM_COOPMAT=0
              VKLLM_MATMUL_TILE=128x128
              VKLLM_MATMUL_TILE=64x64 b256)
    for v in "${variants[@]}"; do
        for model in $sweep_models; do
            (($(date +%s) - t0 > budget)) && break 2
            e=() b=512
            case $v in default) ;; b256) b=256 ;; *) e+=("$v") ;; esac
            bench "prefill-$v" "$model" "${e[@]}" -- -p 512 -n 0 -r 3 -b "$b"
        done
    done
fi
echo "gpu-sweep: $(wc -l <"$jsonl") rows in $(($(date +%s) - t0)) s" | tee -a "$log"
