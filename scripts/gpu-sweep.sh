#!/usr/bin/env bash
# The decode matvec's tuning sweep, for a lent GPU after scripts/gpu-check.sh has unpacked its
# pack (same GPU_CHECK_WORK): vkllm-bench-matvec under each workgroup shape
# (VKLLM_MATVEC_SHAPE=THREADSxROWS) for the types people download, the float-x path beside the
# rounded one, and the few-rows kernel against the tiled matmul at 2-16 tokens
# (VKLLM_MATVEC_ROWS=1 sends them to the tiled one). One JSON line per measured row goes to
# $OUT/gpu-sweep.jsonl (or GPU_SWEEP_OUT), with the variant beside it; the readable lines to
# gpu-sweep.log beside it.
#
#   GPU_CHECK_WORK=/tmp/vkllm-gpu-check scripts/gpu-check.sh ...; scripts/gpu-sweep.sh
#   GPU_SWEEP_SHAPES="32x2 128x8"   the workgroup shapes (default below)
#   GPU_SWEEP_TYPES=q4_0,f16        the weight types
#   GPU_SWEEP_MATRIX=14336x4096     the matrix (rows x cols)
#   GPU_SWEEP_ROWS_MATRIX=4096x4096 the few-tokens comparison's matrix
#   GPU_SWEEP_BUDGET=S              start no run after S seconds (default 90)
#   GPU_SWEEP_BUILD=DIR             binaries from DIR/bin instead of the unpacked pack (lavapipe)
set -uo pipefail

work=${GPU_CHECK_WORK:-/tmp/vkllm-gpu-check}
out=${GPU_SWEEP_OUT:-${OUT:-$work/sweep}}
shapes=${GPU_SWEEP_SHAPES:-32x2 32x4 64x2 64x4 128x4 128x8 256x8}
types=${GPU_SWEEP_TYPES:-q4_0,q4_1,q4_K,q8_0,f16}
matrix=${GPU_SWEEP_MATRIX:-14336x4096}
rows_matrix=${GPU_SWEEP_ROWS_MATRIX:-4096x4096}
budget=${GPU_SWEEP_BUDGET:-90}
t0=$(date +%s)
mkdir -p "$out" "$work/sweep" || exit 1
log=$out/gpu-sweep.log
jsonl=$out/gpu-sweep.jsonl
: >"$jsonl"

if [[ -n ${GPU_SWEEP_BUILD:-} ]]; then
    bin=$GPU_SWEEP_BUILD/bin
else
    P=$work/pack
    bin=$P/bin
    export LD_LIBRARY_PATH=$P/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    for d in /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
        [[ -d $d ]] && export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d
    done
    # The NVIDIA ICD manifest, where the loader does not look by itself (as gpu-check.sh finds it).
    if [[ -z ${VK_DRIVER_FILES:-} ]]; then
        for icd in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/local/nvidia/icd.d/nvidia_icd.json \
            /etc/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json; do
            [[ -f $icd ]] && { export VK_DRIVER_FILES=$icd VK_ICD_FILENAMES=$icd; break; }
        done
    fi
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

for s in default $shapes; do
    e=()
    [[ $s != default ]] && e=(VKLLM_MATVEC_SHAPE=$s)
    run "shape-$s" "${e[@]}" -- --round-x --types "$types" --shapes "$matrix"
done
# The float-x path (no rounding) at the default shape: what the F32 reference path reads.
run "float-x" -- --types "$types" --shapes "$matrix"
# Few tokens: matvec_rows against the tiled matmul.
for n in 2 4 8 16; do
    run "rows-$n" -- --types f16,q4_K,q8_0 --shapes "$rows_matrix" --tokens "$n"
    run "tiled-$n" VKLLM_MATVEC_ROWS=1 -- --types f16,q4_K,q8_0 --shapes "$rows_matrix" --tokens "$n"
done
echo "gpu-sweep: $(wc -l <"$jsonl") rows in $(($(date +%s) - t0)) s" | tee -a "$log"
