#!/usr/bin/env bash
# The one command to run first on a lent GPU machine (an NVIDIA H100 or H200): in under 8
# minutes from a clean tree it runs
#   1. vkllm-bench-matvec: the device's copy bandwidth (vkCmdCopyBuffer of 1 GiB, bytes read plus
#      written: the achievable limit), then the decode matvec (--quantized-x, as the forward runs it:
#      x quantized once per input; F16 rounds x in the matvec)
#      for Q4_0, Q4_K, Q5_K, Q6_K, Q8_0 and F16 over 4096x4096, 14336x4096, 4096x14336 and the
#      1B shapes, weights cycled past the L2: GB/s and the percentage of the copy bandwidth;
#   2. scripts/bench-compare.sh (vkllm against llama.cpp's Vulkan backend, same files, same run)
#      on a Llama-3.2-1B-shaped random model (2048 wide, 16 layers, 32/8 heads, FFN 8192, tied,
#      the llama-bpe vocabulary; vkllm-random-model writes F16, llama.cpp's own llama-quantize-lite
#      makes Q4_K_M, Q4_0 and Q8_0 from it), pp512/tg128;
#   3. the GPU test programs (tests/gpu, tests/ops, tests/model: kernels and every family's
#      golden) with the validation layer on, while the 8B model is written;
#   4. bench-compare on a Llama-3.1-8B-shaped one (4096 wide, 32 layers, 32/8 heads, FFN 14336,
#      untied) in Q4_K_M and Q8_0, pp512/tg128, one run of each engine;
#   5. bench-compare's own model matrix (stories260K Q8_0, the four zoo models, the random 134M
#      Llama in F16, Q8_0 and Q4_0) at its sizes.
# Models are written multi-threaded in the background, niced, while the GPU-bound steps run; the
# timed comparisons run with nothing else on the machine. After every step (and every compared
# model) it rewrites the results, so a run cut short keeps what it measured:
#   bench/results/gpu-check-DATE-DEVICE.json   {device, driver, commit, copy_gbps,
#       matvec: [{type, rows, cols, gbps, pct_of_copy}], compare: [{model, vkllm_pp, llama_pp,
#       vkllm_tg, llama_tg}] (tokens/s), tests, steps, ...}
#   bench/results/gpu-check-DATE-DEVICE.md     the tables the README shows
# and copies both, with the full log and the per-step logs, into $OUT when it is set (the device
# tool brings $OUT back). Steps that would not finish inside GPU_CHECK_BUDGET seconds from the
# start (default 440) are skipped and say so.
#
# What runs it: the machine has CUDA, Python, CMake and ninja but no Vulkan loader, no glslc and
# none of the build's -dev libraries, and no network. So nothing is built there: this machine
# packs the build with scripts/gpu-pack.sh into .gpu/ (stripped binaries, Debian's Vulkan loader
# and libGLdispatch, the validation layer, llama.cpp's Vulkan build from the llama-oracle,
# stories260K and the llama vocabularies), the device call carries .gpu, and this script unpacks
# it into GPU_CHECK_WORK, points LD_LIBRARY_PATH, VK_LAYER_PATH and (when the loader finds no
# driver) VK_DRIVER_FILES at what it needs, and runs. docs/gpu-check.md has the exact call.
# Without .gpu/ it runs from BUILD_DIR (default build), ../shared and ORACLE_HOME, as
# bench-compare.sh does: that is how it is tried on lavapipe.
#
#   scripts/gpu-check.sh
#   GPU_CHECK_SMALL=1     a small run (lavapipe): tiny matvec shapes, "1B" and "8B" models 256
#                         wide with 2 layers, four test programs, one run of each engine; results
#                         go to GPU_CHECK_WORK/results unless GPU_CHECK_RESULTS says otherwise
#   GPU_CHECK_BUDGET=S    seconds the whole run may take (default 440; small: 7200)
#   GPU_CHECK_WORK=DIR    unpacked build, models and logs (default /tmp/vkllm-gpu-check, or the
#                         same under /var/tmp, $HOME or the tree's parent when one has more room)
#   GPU_CHECK_RESULTS=DIR where the JSON and Markdown go (default bench/results)
#   GPU_CHECK_STEPS=LIST  the steps to run, of matvec,1b,tests,8b,matrix (default all)
#   GPU_CHECK_TESTS=REGEX only the test programs whose name matches
#   GPU_CHECK_BUILD=DIR   without .gpu/: the build to run (default build)
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/lib/gpu-env.sh
source "$(dirname "$0")/lib/gpu-env.sh"
t0=$(date +%s)
small=${GPU_CHECK_SMALL:-0}
budget=${GPU_CHECK_BUDGET:-$([[ $small = 1 ]] && echo 7200 || echo 440)}
# The work folder: /tmp, unless another place has more room for the 8B files (about 35 GB).
if [[ -n ${GPU_CHECK_WORK:-} ]]; then
    work=$GPU_CHECK_WORK
else
    work=/tmp/vkllm-gpu-check
    best=$(df -Pk /tmp 2>/dev/null | awk 'NR == 2 { print $4 }')
    for d in /var/tmp "$HOME" "$(dirname "$root")"; do
        free=$(df -Pk "$d" 2>/dev/null | awk 'NR == 2 { print $4 }')
        if [[ -n $free && -w $d ]] && ((free > ${best:-0} + 10 * 1024 * 1024)); then
            best=$free work=$d/vkllm-gpu-check
        fi
    done
fi
steps=${GPU_CHECK_STEPS:-matvec,1b,tests,8b,matrix}
cores=$(nproc)
state=$work/state
logs=$work/logs
models=$work/models$([[ $small = 1 ]] && echo -small)  # kept: a second run reuses finished models
rm -rf "$state" "$logs"
mkdir -p "$state" "$logs/tests" "$models" || exit 1
touch "$state/compare.jsonl" "$state/steps.jsonl"
exec > >(tee -a "$logs/gpu-check.log") 2>&1

elapsed() { echo $(($(date +%s) - t0)); }
left() { echo $((budget - $(elapsed))); }
say() { printf '[gpu-check %4ds] %s\n' "$(elapsed)" "$*"; }
wants() { [[ ,$steps, = *,$1,* ]]; }
# step_done NAME STATUS START NOTE: one line of the steps record.
step_done() {
    python3 -c 'import json,sys; print(json.dumps({"step": sys.argv[1], "status": sys.argv[2], "start_s": int(sys.argv[3]), "seconds": int(sys.argv[4]), "note": sys.argv[5]}))' \
        "$1" "$2" "$3" "$(($(elapsed) - $3))" "${4:-}" >>"$state/steps.jsonl"
}
# fits NAME SECONDS: whether a step of about SECONDS still fits the budget (else records a skip).
fits() {
    if (($(left) < $2)); then
        say "skipping $1: $(left) s left, it needs about $2 s"
        step_done "$1" skipped "$(elapsed)" "budget: $(left) s left, needs about $2 s"
        return 1
    fi
}

# ---------------------------------------------------------------------------------------------
# The build: unpacked from .gpu/, or the local one.
validate=1  # the tests run under the validation layer
if [[ -f $root/.gpu/MANIFEST ]]; then
    mode=pack
    P=$work/pack
    if ! cmp -s "$root/.gpu/MANIFEST" "$P/MANIFEST"; then
        say "unpacking .gpu/ ($(du -ch "$root"/.gpu/*.tar.xz | tail -1 | cut -f1))"
        rm -rf "$P" && mkdir -p "$P"
        for a in "$root"/.gpu/*.tar.xz; do
            if command -v xz >/dev/null; then
                xz -dc "$a" | tar -xf - -C "$P"
            else
                python3 -c 'import lzma,sys,tarfile; tarfile.open(fileobj=lzma.open(sys.argv[1])).extractall(sys.argv[2])' "$a" "$P"
            fi || { say "cannot unpack $a"; exit 1; }
        done
        # Tree files the binaries embed were zeroed in the archive: put them back, then check
        # every packed file against its sha256.
        python3 - "$P" "$root" <<'EOF' || { say "the unpacked build does not match its MANIFEST"; exit 1; }
import hashlib, os, sys
pack, root = sys.argv[1], sys.argv[2]
lines = [l.split() for l in open(os.path.join(root, ".gpu", "MANIFEST"))]
for l in lines:
    if l[0] == "hole":
        path, at, n, tree = os.path.join(pack, l[1]), int(l[2]), int(l[3]), os.path.join(root, l[4])
        blob = open(tree, "rb").read()
        assert len(blob) == n, f"{l[4]}: {len(blob)} bytes here, {n} when packed"
        with open(path, "r+b") as f:
            f.seek(at)
            f.write(blob)
bad = [l[1] for l in lines if l[0] == "file" and hashlib.sha256(open(os.path.join(pack, l[1]), "rb").read()).hexdigest() != l[3]]
if bad:
    sys.exit("sha256 differs: " + " ".join(bad))
EOF
        cp "$root/.gpu/MANIFEST" "$P/MANIFEST"
    fi
    build=$P
    gpu_env_pack "$P"
    if [[ -f $P/layers/VkLayer_khronos_validation.json ]]; then
        export VK_LAYER_PATH=$P/layers VK_ADD_LAYER_PATH=$P/layers
    else
        validate=0
        say "the pack has no validation layer (left out to fit): the tests run without it"
    fi
    dropped=$(sed -n 's/^dropped //p' "$P/MANIFEST")
    cat >"$oracle/env.sh" <<ENV
export ORACLE_HOME=$oracle
export GGML_BACKEND_DIR=$oracle/lib
export GGML_VK_VISIBLE_DEVICES=0
export LD_LIBRARY_PATH=$oracle/lib:\$LD_LIBRARY_PATH
ENV
    # The CUDA image's libstdc++ is expected to be at least this build's (GLIBCXX_3.4.30).
    if missing=$(ldd "$bin/vkllm" "$oracle/llama-bench-lite" "$oracle/lib/libggml-vulkan.so" 2>&1 | grep -i "not found"); then
        say "libraries missing: $missing"
    fi
    commit=$(sed -n 's/^commit //p' "$P/MANIFEST")
    describe=$(sed -n 's/^describe //p' "$P/MANIFEST")
    # stories260K's F16, Q8_0 and Q4_0 files, made from the F32 one as llama-quantize made them.
    for t in F16 Q8_0 Q4_0; do
        f=$shared/models/stories260K/stories260K-$t.gguf
        [[ -f $f ]] && continue
        (source "$oracle/env.sh" && "$oracle/llama-quantize-lite" "$shared/models/stories260K/stories260K-F32.gguf" "$f" "$t" 1) \
            >"$logs/stories260K-$t.log" 2>&1
        want=$(awk -v p="shared/models/stories260K/stories260K-$t.gguf" '$1 == "derive" && $2 == p { print $3 }' "$P/MANIFEST")
        [[ $(sha256sum "$f" | cut -d' ' -f1) = "$want" ]] || say "warning: stories260K-$t.gguf differs from the shared file"
    done
else
    mode=build
    build=${GPU_CHECK_BUILD:-$root/build}
    [[ $build = /* ]] || build=$root/$build
    gpu_env_local "$root" "$build"
    commit=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo "?")
    describe=$(git -C "$root" describe --always --dirty 2>/dev/null || echo "?")
    dropped=""
fi
say "mode $mode: build $build, oracle $oracle, shared $shared, commit $describe"
for f in "$bin/vkllm" "$bin/vkllm-bench-matvec" "$bin/vkllm-random-model" "$oracle/llama-bench-lite" "$oracle/llama-quantize-lite"; do
    [[ -x $f ]] || { say "missing $f"; exit 1; }
done
oracle_run() { (source "$oracle/env.sh" && "$@"); }

# ---------------------------------------------------------------------------------------------
# The device. Debian's loader does not look where the NVIDIA driver's mount keeps its ICD
# manifest; point it there when it finds no GPU (scripts/lib/gpu-env.sh).
devices_json() { "$bin/vkllm" info --json 2>/dev/null; }
has_gpu() { devices_json | python3 -c 'import json,sys; sys.exit(0 if any(d["type"] != "cpu" for d in json.load(sys.stdin)["devices"]) else 1)' 2>/dev/null; }
command -v nvidia-smi >/dev/null && gpu_env_nvidia_libs
# The NVIDIA ICD answers vkCreateInstance only with glvnd's libraries installed (the H200 image
# has none): unpack the pack's Debian packages into / (as root) when no GPU is found.
if [[ $mode = pack && -d $P/debs ]] && command -v nvidia-smi >/dev/null && [[ $(id -u) = 0 ]] && ! has_gpu; then
    say "installing glvnd and the Vulkan loader from the pack's Debian packages"
    for f in "$P"/debs/*.deb; do dpkg -x "$f" /; done
    ldconfig
fi
if [[ -z ${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-} ]] && command -v nvidia-smi >/dev/null && ! has_gpu; then
    # shellcheck disable=SC2046  # one manifest a word
    gpu_env_nvidia_icd has_gpu $(find /usr/local/nvidia /usr/share /etc /usr/lib -maxdepth 6 -name 'nvidia_icd*.json' 2>/dev/null) &&
        say "using the ICD manifest $VK_DRIVER_FILES"
fi
devices_json >"$state/devices.json" || { say "vkllm info failed: no Vulkan device"; VK_LOADER_DEBUG=error,warn "$bin/vkllm" info; }
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv >"$state/nvidia-smi-start.csv" 2>&1
python3 - "$state" "$commit" "$describe" "$mode" "$small" "$budget" "$cores" "$dropped" <<'EOF'
import json, os, platform, sys, time
state, commit, describe, mode, small, budget, cores, dropped = sys.argv[1:]
try:
    devs = json.load(open(os.path.join(state, "devices.json")))["devices"]
except Exception:
    devs = []
# The engine's choice: a discrete GPU, else an integrated one, else the first.
rank = {"discrete": 0, "integrated": 1, "virtual": 2, "cpu": 3}
dev = sorted(devs, key=lambda d: rank.get(d.get("type"), 4))[0] if devs else {}
driver = " ".join(x for x in (dev.get("driver_name"), dev.get("driver_version")) if x)
if dev.get("driver_info") and dev.get("driver_info") != dev.get("driver_version"):
    driver += f" ({dev['driver_info']})"
meta = {"device": dev.get("name", "?"), "driver": driver or "?", "device_type": dev.get("type", "?"),
        "vulkan_api": dev.get("api_version"), "commit": commit, "describe": describe,
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "mode": mode, "small": small == "1",
        "budget_s": int(budget), "host": {"cpu_cores": int(cores), "kernel": platform.release()},
        "integer_dot_matvec": dev.get("integer_dot_matvec"), "cooperative_matrix": dev.get("cooperative_matrix")}
if dropped:
    meta["pack_dropped"] = dropped
json.dump(meta, open(os.path.join(state, "meta.json"), "w"), indent=1)
print(f"device: {meta['device']} ({meta['device_type']}), driver {meta['driver']}")
EOF
device=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["device"])' "$state/meta.json")
slug=$(python3 -c 'import re,sys; print(re.sub(r"[^a-z0-9]+", "-", sys.argv[1].lower()).strip("-")[:40] or "unknown")' "$device")
results=${GPU_CHECK_RESULTS:-$([[ $small = 1 ]] && echo "$work/results" || echo "$root/bench/results")}
mkdir -p "$results"
base=$results/gpu-check-$(date -u +%Y-%m-%d)-$slug$([[ $small = 1 ]] && echo -small)

# assemble: the JSON and Markdown from the state files, copied into $OUT.
assemble() {
    python3 - "$state" "$base" <<'EOF'
import json, os, sys
state, base = sys.argv[1], sys.argv[2]
def load(name, default):
    try:
        return json.load(open(os.path.join(state, name)))
    except Exception:
        return default
def lines(name):
    try:
        return [json.loads(l) for l in open(os.path.join(state, name)) if l.strip()]
    except Exception:
        return []
r = load("meta.json", {})
mv = load("matvec.json", {})
if mv.get("device"):
    r["device"], r["driver"] = mv["device"], mv.get("driver", r.get("driver"))
r["copy_gbps"] = mv.get("copy_gbps")
r["copy_mib"] = mv.get("copy_mib")
r["matvec_round_x"] = mv.get("round_x")
r["matvec"] = [{k: m.get(k) for k in ("type", "rows", "cols", "gbps", "pct_of_copy", "us", "mib")} for m in mv.get("matvec", [])]
keys = ("model", "vkllm_pp", "llama_pp", "vkllm_tg", "llama_tg", "pp", "tg", "llama_pp_tokens", "ttft_cold_s", "ttft_warm_s", "shape",
        "vkllm_decode_ops_ms", "vkllm_prompt_ops_ms")
r["compare"] = [{k: c.get(k) for k in keys} for c in lines("compare.jsonl")]
r["tests"] = load("tests.json", None)
r["steps"] = lines("steps.jsonl")
smi = {}
for when in ("start", "end"):
    try:
        rows = [l.strip() for l in open(os.path.join(state, f"nvidia-smi-{when}.csv")) if l.strip()]
        smi[when] = dict(zip([h.strip() for h in rows[0].split(",")], [v.strip() for v in rows[1].split(",")]))
    except Exception:
        pass
if smi:
    r["nvidia_smi"] = smi
tmp = base + ".json.tmp"
json.dump(r, open(tmp, "w"), indent=1)
os.replace(tmp, base + ".json")

def num(x, f="{:.1f}"):
    return "-" if x is None else f.format(x)
def ratio(a, b):
    return f"{a / b:.2f}" if a is not None and b else "-"
md = [f"# gpu-check: {r.get('device')}", "",
      f"Driver {r.get('driver')}; commit {r.get('describe')}; {r.get('date')}; {r.get('host', {}).get('cpu_cores')} CPU cores"
      + ("; small run (shapes and models shrunk)" if r.get("small") else "") + ".", ""]
if r["matvec"] or r["copy_gbps"]:
    md += ["## Decode matvec bandwidth", "",
           f"`vkllm-bench-matvec --quantized-x`, weights cycled past the L2, GPU timestamps. Copy bandwidth "
           f"(the faster of vkCmdCopyBuffer of {num(r.get('copy_mib'), '{:.0f}')} MiB and a compute shader's copy, bytes read + written): "
           f"**{num(r['copy_gbps'], '{:.0f}')} GB/s**; each cell is GB/s of weights read and its percentage of that.", ""]
    shapes = []
    for m in r["matvec"]:
        if (m["rows"], m["cols"]) not in shapes:
            shapes.append((m["rows"], m["cols"]))
    types = []
    for m in r["matvec"]:
        if m["type"] not in types:
            types.append(m["type"])
    md += ["| type | " + " | ".join(f"{a} x {b}" for a, b in shapes) + " |", "|---" * (len(shapes) + 1) + "|"]
    for t in types:
        cells = []
        for s in shapes:
            m = next((m for m in r["matvec"] if m["type"] == t and (m["rows"], m["cols"]) == s), None)
            g = None if m is None else m["gbps"]
            gb = "-" if g is None else f"{g:.0f}" if g >= 100 else f"{g:.1f}" if g >= 10 else f"{g:.2f}"
            cells.append("-" if m is None else f"{gb} ({num(m['pct_of_copy'], '{:.0f}')}%)")
        md.append(f"| {t} | " + " | ".join(cells) + " |")
    md.append("")
if r["compare"]:
    md += ["## vkllm against llama.cpp (`scripts/bench-compare.sh`)", "",
           "Tokens/s, llama.cpp's Vulkan backend (the llama-oracle's build) on the same files and device; "
           "TTFT: seconds from process start to the first token, empty / warm pipeline cache.", "",
           "| model | vkllm pp | llama.cpp pp | pp ratio | vkllm tg | llama.cpp tg | tg ratio | TTFT cold s | TTFT warm s |",
           "|---|---|---|---|---|---|---|---|---|"]
    for c in r["compare"]:
        label = f"{c['model']} (pp{c['pp']}/tg{c['tg']}" + (f"; llama.cpp pp{c['llama_pp_tokens']}" if c.get("llama_pp_tokens") != c["pp"] else "") + ")"
        md.append(f"| {label} | {num(c['vkllm_pp'])} | {num(c['llama_pp'])} | {ratio(c['vkllm_pp'], c['llama_pp'])} | "
                  f"{num(c['vkllm_tg'])} | {num(c['llama_tg'])} | {ratio(c['vkllm_tg'], c['llama_tg'])} | "
                  f"{num(c['ttft_cold_s'], '{:.2f}')} | {num(c['ttft_warm_s'], '{:.2f}')} |")
    md.append("")
t = r.get("tests")
if t:
    md += ["## Tests (validation layer " + ("on" if t.get("validation", True) else "off: left out of the pack") + ")", "",
           f"{t['passed']} passed, {t['failed']} failed, {t['skipped']} skipped in {len(t['programs'])} programs"
           + (f"; programs not passing: " + ", ".join(f"{p['name']} ({p['status']})" for p in t["programs"] if p["status"] != "passed") if any(p["status"] != "passed" for p in t["programs"]) else "") + ".", ""]
    failed = [f"{p['name']}: {n}" for p in t["programs"] for n in p.get("failed_tests", [])]
    if failed:
        md += ["Failed: " + "; ".join(failed[:40]), ""]
if r["steps"]:
    md += ["## Steps", "", "| step | status | start s | seconds | note |", "|---|---|---|---|---|"]
    md += [f"| {s['step']} | {s['status']} | {s['start_s']} | {s['seconds']} | {s['note']} |" for s in r["steps"]]
    md.append("")
open(base + ".md", "w").write("\n".join(md))
EOF
    if [[ -n ${OUT:-} && -d ${OUT:-} ]]; then
        cp "$base.json" "$OUT/gpu-check.json" 2>/dev/null
        cp "$base.md" "$OUT/gpu-check.md" 2>/dev/null
    fi
}
assemble
if [[ $device = "?" ]]; then
    say "no Vulkan device: stopping"
    step_done device failed 0 "vkllm info found no Vulkan device"
    assemble
    [[ -n ${OUT:-} && -d ${OUT:-} ]] && cp "$logs/gpu-check.log" "$OUT/gpu-check.log"
    exit 1
fi

# ---------------------------------------------------------------------------------------------
# Models, written in the background (niced) while the GPU-bound steps run.
vocab_bpe=$shared/models/vocab/ggml-vocab-llama-bpe.gguf
if [[ $small = 1 ]]; then
    shape_1b="--n-embd 256 --n-layer 2 --n-head 4 --n-head-kv 2 --n-ff 1024 --tied"
    shape_8b="--n-embd 256 --n-layer 2 --n-head 4 --n-head-kv 2 --n-ff 768"
    desc_1b="256 wide, 2 layers, 4/2 heads, FFN 1024, tied (small run)"
    desc_8b="256 wide, 2 layers, 4/2 heads, FFN 768 (small run)"
else
    shape_1b="--n-embd 2048 --n-layer 16 --n-head 32 --n-head-kv 8 --n-ff 8192 --tied --rope-scaling llama3:32:1:4:8192"
    shape_8b="--n-embd 4096 --n-layer 32 --n-head 32 --n-head-kv 8 --n-ff 14336 --rope-scaling llama3:8:1:4:8192"
    desc_1b="Llama-3.2-1B shape: 2048 wide, 16 layers, 32/8 heads, FFN 8192, tied"
    desc_8b="Llama-3.1-8B shape: 4096 wide, 32 layers, 32/8 heads, FFN 14336"
fi
# make_models TAG "SHAPE" TYPE...: TAG-F16.gguf from vkllm-random-model, then each TYPE with
# llama-quantize-lite (all at once); TAG-TYPE.ok marks each finished file. F16 is removed unless
# it is among the types.
make_models() {
    local tag=$1 shape=$2 t keep=0 t1
    shift 2
    local f16=$models/$tag-F16.gguf
    if [[ ! -f $models/$tag-F16.ok ]]; then
        t1=$(date +%s)
        # shellcheck disable=SC2086  # the shape is words
        nice -n 10 "$bin/vkllm-random-model" --arch llama --seed 1 $shape --rope-freq-base 500000 --n-ctx 131072 \
            --type F16 --vocab-from "$vocab_bpe" --name "random-$tag" --threads "$cores" --out "$f16" &&
            touch "$models/$tag-F16.ok" && echo "time: F16 $(($(date +%s) - t1)) s"
    fi
    local pids=()
    for t in "$@"; do
        [[ $t = F16 ]] && { keep=1; continue; }
        [[ -f $models/$tag-$t.ok ]] && continue
        (t1=$(date +%s) && source "$oracle/env.sh" &&
            nice -n 10 "$oracle/llama-quantize-lite" "$f16" "$models/$tag-$t.gguf" "$t" "$cores" >"$logs/quantize-$tag-$t.log" 2>&1 &&
            touch "$models/$tag-$t.ok" && echo "time: $t $(($(date +%s) - t1)) s") &
        pids+=($!)
    done
    ((${#pids[@]})) && wait "${pids[@]}"
    ((keep)) || rm -f "$f16" "$models/$tag-F16.ok"
    ls -l "$models"/"$tag"-*.gguf
}
# wait_for PID SECONDS FILE...: until every FILE.ok exists; 1 when the generator PID ended
# without it, 2 when fewer than SECONDS of the budget are left.
wait_for() {
    local pid=$1 need=$2 f
    shift 2
    for f in "$@"; do
        while [[ ! -f $models/$f.ok ]]; do
            kill -0 "$pid" 2>/dev/null || [[ -f $models/$f.ok ]] || return 1
            (($(left) < need)) && return 2
            sleep 1
        done
    done
}
# gen_note LOG: the generator's timings, for the steps record.
gen_note() { sed -n 's/^time: //p' "$1" | paste -sd, - | sed 's/,/, /g'; }
# kill_tree PID: PID and every process under it (the model writers a cut-short run leaves).
kill_tree() {
    local c
    for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do kill_tree "$c"; done
    kill "$1" 2>/dev/null
}
gen_pids=()
trap 'for p in "${gen_pids[@]}"; do kill_tree "$p"; done' EXIT

# compare_row KEY FILE PP TG ROUNDS REPEATS TTFT SHAPE: one bench-compare.sh row into compare.jsonl.
compare_row() {
    local key=$1 file=$2 pp=$3 tg=$4 rounds=$5 repeats=$6 ttft=$7 shape=$8 lpp=${9:-$3} n
    printf '%s|%s|%s|%s|%s|%s\n' "$key" "$file" "$pp" "$tg" "$lpp" "$key" >"$state/row.list"
    n=$(wc -l <"$state/compare.jsonl")
    say "compare $key (pp$pp/tg$tg, $rounds round(s) of $repeats)"
    BENCH_LIST=$state/row.list BENCH_JSONL=$state/compare.jsonl BENCH_ROUNDS=$rounds BENCH_REPEATS=$repeats \
        BENCH_TTFT=$ttft BENCH_DEVICE=$device BENCH_CACHE=$models VKLLM_SHARED_DIR=$shared ORACLE_HOME=$oracle \
        timeout "$(($(left) > 20 ? $(left) : 20))" "$root/scripts/bench-compare.sh" "$build" >>"$logs/compare.md" 2>>"$logs/compare.err"
    if (($(wc -l <"$state/compare.jsonl") > n)); then
        # the shape, for readers of the JSON
        python3 - "$state/compare.jsonl" "$shape" <<'EOF'
import json, sys
path, shape = sys.argv[1], sys.argv[2]
rows = [json.loads(l) for l in open(path) if l.strip()]
rows[-1]["shape"] = shape
open(path, "w").write("".join(json.dumps(r) + "\n" for r in rows))
EOF
        tail -1 "$logs/compare.md"
    else
        say "compare $key: no result (see $logs/compare.err)"
    fi
    assemble
}

if [[ $small = 1 ]]; then pp=16 tg=8 rounds_1b=1 reps=1; else pp=512 tg=128 rounds_1b=2 reps=3; fi

if wants 1b || wants 8b; then
    df -h "$models" | tail -1
    (make_models llama-1b "$shape_1b" Q4_K_M Q4_0 Q8_0 F16) >"$logs/models-1b.log" 2>&1 &
    gen_1b=$!
    gen_pids+=("$gen_1b")
fi

# ---------------------------------------------------------------------------------------------
# 1. Matvec bandwidth against the copy bandwidth.
if wants matvec && fits matvec 40; then
    s=$(elapsed)
    if [[ $small = 1 ]]; then
        args=(--shapes "256x256,512x256,256x512" --copy-mib 32 --min-mib 4 --copies 2 --repeats 2)
    else
        args=(--shapes "4096x4096,14336x4096,4096x14336,2048x2048,8192x2048,2048x8192" --copy-mib 1024 --repeats 5 --min-mib 2048)
    fi
    say "matvec: ${args[*]}"
    timeout "$(($(left) > 30 ? $(left) : 30))" "$bin/vkllm-bench-matvec" --quantized-x --types q4_0,q4_K,q5_K,q6_K,q8_0,f16 \
        "${args[@]}" --json "$state/matvec.json"
    rc=$?
    step_done matvec "$([[ $rc = 0 ]] && echo ok || { [[ $rc = 124 ]] && echo "cut at the budget"; } || echo "failed ($rc)")" "$s"
    assemble
fi

# ---------------------------------------------------------------------------------------------
# 2. The 1B shape, pp512/tg128.
if wants 1b; then
    s=$(elapsed)
    say "waiting for the 1B models"
    wait_for "$gen_1b" 60 llama-1b-Q4_K_M llama-1b-Q4_0 llama-1b-Q8_0 llama-1b-F16
    rc=$?
    if ((rc == 0)); then
        step_done models-1b ok "$s" "$(du -ch "$models"/llama-1b-*.gguf | tail -1 | cut -f1) ready at $(elapsed) s; $(gen_note "$logs/models-1b.log")"
        s=$(elapsed)
        for t in Q4_K_M Q4_0 Q8_0 F16; do
            fits "llama-1b-$t" 25 || continue
            compare_row "llama-1b-$t" "$models/llama-1b-$t.gguf" "$pp" "$tg" "$rounds_1b" "$reps" 1 "$desc_1b"
        done
        step_done compare-1b ok "$s"
    else
        step_done models-1b "$([[ $rc = 2 ]] && echo "not ready" || echo failed)" "$s" "see logs/models-1b.log"
        cat "$logs/models-1b.log"
    fi
    assemble
fi

# ---------------------------------------------------------------------------------------------
# 3. Tests, while the 8B model is written.
if wants 8b && [[ -n ${gen_1b:-} ]]; then
    # the 1B writer first (ended, or given up on when it cannot finish in time)
    wait_for "$gen_1b" 150 llama-1b-Q4_K_M llama-1b-Q4_0 llama-1b-Q8_0 llama-1b-F16 || kill_tree "$gen_1b"
    wait "$gen_1b" 2>/dev/null
    if (($(df -Pk "$models" | awk 'NR == 2 { print $4 }') < 32 * 1024 * 1024)) && [[ $small != 1 ]]; then
        say "less than 32 GiB free under $models: no 8B models"
        step_done models-8b skipped "$(elapsed)" "less than 32 GiB free under $models"
    elif (($(left) < 200)); then
        say "$(left) s left: too little to write and compare the 8B models"
        step_done models-8b skipped "$(elapsed)" "budget: $(left) s left, needs about 200 s"
    else
        (make_models llama-8b "$shape_8b" Q4_K_M Q8_0) >"$logs/models-8b.log" 2>&1 &
        gen_8b=$!
        gen_pids+=("$gen_8b")
    fi
fi
if wants tests && fits tests 30; then
    s=$(elapsed)
    cpu_only=" model_test_random_model model_test_random_model_families model_test_spec_errors "
    # name|program|extra environment|arguments; kernels first, then the goldens, then the rest.
    progs=()
    # The programs there are (the pack's, or the build's): a slim tree has no test sources.
    for exe_path in "$testdir"/gpu_test_* "$testdir"/ops_test_* "$testdir"/model_test_{families,stories260K,zoo,bert} \
        "$testdir"/model_test_*; do
        [[ -f $exe_path && -x $exe_path ]] || continue
        name=$(basename "$exe_path")
        layer=${name%%_test_*}
        [[ $cpu_only = *" $name "* || " ${progs[*]} " = *" $name|"* ]] && continue
        # The goldens hold the fp32 prompt matmul to llama.cpp's CPU logits (1e-3 on the zoo); the
        # tensor-core one rounds to fp16 (4-8e-3 there) and has its own bound in
        # ops_test_matmul_coopmat, so the model programs run with VKLLM_COOPMAT=0.
        fp32=$([[ $layer = model ]] && echo "VKLLM_COOPMAT=0")
        progs+=("$name|$name|$fp32|")
        [[ $name = model_test_stories260K ]] && progs+=("$name.idot|$name|$fp32 VKLLM_INTEGER_DOT=1|--gtest_filter=*Q8_0*:*Q4_0*"
            "$name.norm_in_matvec|$name|$fp32 VKLLM_NORM_IN_MATVEC=1|")
    done
    filter=${GPU_CHECK_TESTS:-$([[ $small = 1 ]] && echo '^(gpu_test_runtime|ops_test_argmax|ops_test_norm|model_test_stories260K)$')}
    jobs=$([[ $small = 1 ]] && echo 2 || echo $((cores < 12 ? cores : 12)))
    cap=$(($(left) - 60 < 150 ? $(left) - 60 : 150))
    ((cap < 30)) && cap=30
    say "tests: up to $jobs at once, each at most $cap s, validation $([[ $validate = 1 ]] && echo on || echo off)"
    pool=()
    for p in "${progs[@]}"; do
        IFS='|' read -r name exe envs args <<<"$p"
        [[ -n $filter && ! ${name%%.*} =~ $filter ]] && continue
        if [[ ! -x $testdir/$exe ]]; then
            echo "{\"name\": \"$name\", \"status\": \"missing\"}" >"$state/tests-$name.status"
            continue
        fi
        while :; do  # at most $jobs at once
            alive=()
            for q in "${pool[@]}"; do kill -0 "$q" 2>/dev/null && alive+=("$q"); done
            pool=("${alive[@]}")
            ((${#pool[@]} < jobs)) && break
            sleep 0.2
        done
        (
            t1=$(date +%s%N)
            # VKLLM_SLIM_TREE=1: the cases whose data scripts/gpu-slim-branch.sh leaves out skip.
            # shellcheck disable=SC2086  # words
            env VKLLM_VALIDATE=$validate VKLLM_SLIM_TREE=1 VKLLM_SOURCE_DIR="$root" VKLLM_SHARED_DIR="$shared" VKLLM_BIN="$bin/vkllm" $envs \
                timeout -k 5 "$cap" "$testdir/$exe" $args --gtest_output="json:$logs/tests/$name.json" \
                >"$logs/tests/$name.log" 2>&1
            rc=$?
            python3 -c 'import json,sys; n,rc,t=sys.argv[1],int(sys.argv[2]),float(sys.argv[3]); print(json.dumps({"name": n, "rc": rc, "seconds": round(t, 1)}))' \
                "$name" "$rc" "$((($(date +%s%N) - t1) / 1000000))e-3" >"$state/tests-$name.status"
            echo "  $name: rc $rc"
        ) &
        pool+=($!)
    done
    ((${#pool[@]})) && wait "${pool[@]}"
    python3 - "$state" "$logs/tests" "$validate" <<'EOF'
import glob, json, os, sys
state, logdir, validate = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
progs, totals = [], {"passed": 0, "failed": 0, "skipped": 0}
for f in sorted(glob.glob(os.path.join(state, "tests-*.status"))):
    st = json.load(open(f))
    p = {"name": st["name"], "seconds": st.get("seconds"), "passed": 0, "failed": 0, "skipped": 0, "failed_tests": []}
    try:
        report = json.load(open(os.path.join(logdir, st["name"] + ".json")))
        for suite in report.get("testsuites", []):
            for case in suite.get("testsuite", []):
                full = f"{suite['name']}.{case['name']}"
                if case.get("failures"):
                    p["failed"] += 1
                    p["failed_tests"].append(full)
                elif case.get("result") == "SKIPPED" or case.get("status") == "NOTRUN":
                    p["skipped"] += 1
                else:
                    p["passed"] += 1
    except Exception:
        pass
    rc = st.get("rc")
    if st.get("status") == "missing":
        p["status"] = "missing"
    elif rc in (124, 137):
        p["status"] = "timeout"
    elif rc == 0 and p["failed"] == 0:
        p["status"] = "passed"
    else:
        p["status"] = "failed" if p["failed"] else f"exit {rc}"
    for k in totals:
        totals[k] += p[k]
    progs.append(p)
json.dump({**totals, "validation": validate, "programs": progs}, open(os.path.join(state, "tests.json"), "w"), indent=1)
bad = [p for p in progs if p["status"] != "passed"]
print(f"tests: {totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped; "
      f"{len(progs) - len(bad)} of {len(progs)} programs passed" + ("" if not bad else ": not " + ", ".join(f"{p['name']} ({p['status']})" for p in bad)))
EOF
    step_done tests ok "$s" "each program at most $cap s"
    assemble
fi

# ---------------------------------------------------------------------------------------------
# 4. The 8B shape, pp512/tg128, one run of each engine.
if wants 8b && [[ -n ${gen_8b:-} ]]; then
    s=$(elapsed)
    say "waiting for the 8B models"
    wait_for "$gen_8b" 120 llama-8b-Q4_K_M llama-8b-Q8_0
    rc=$?
    if ((rc == 0)); then
        step_done models-8b ok "$s" "$(du -ch "$models"/llama-8b-*.gguf | tail -1 | cut -f1) ready at $(elapsed) s; $(gen_note "$logs/models-8b.log")"
        s=$(elapsed)
        for t in Q4_K_M Q8_0; do
            fits "llama-8b-$t" 50 || continue
            compare_row "llama-8b-$t" "$models/llama-8b-$t.gguf" "$pp" "$tg" 1 "$reps" 0 "$desc_8b"
        done
        step_done compare-8b ok "$s"
    else
        step_done models-8b "$([[ $rc = 2 ]] && echo "not ready" || echo failed)" "$s" "see logs/models-8b.log; $(gen_note "$logs/models-8b.log")"
        cat "$logs/models-8b.log"
    fi
    assemble
fi

# ---------------------------------------------------------------------------------------------
# 5. bench-compare's model matrix, at its sizes, with no model writer left running.
for p in "${gen_pids[@]}"; do kill_tree "$p"; done
if wants matrix; then
    s=$(elapsed)
    if [[ $small = 1 ]]; then mrounds=1 mreps=1 mttft=0; else mrounds=2 mreps=3 mttft=1; fi
    for row in "stories260K-Q8_0|$shared/models/stories260K/stories260K-Q8_0.gguf|64|32|64" \
        "zoo-dense|$root/assets/zoo/zoo-dense.gguf|64|32|64" "zoo-swa|$root/assets/zoo/zoo-swa.gguf|64|32|64" \
        "zoo-moe|$root/assets/zoo/zoo-moe.gguf|64|32|16" "zoo-mla|$root/assets/zoo/zoo-mla.gguf|64|32|16" \
        "llama-134m-F16|$models/llama-134m-F16.gguf|32|8|32" "llama-134m-Q8_0|$models/llama-134m-Q8_0.gguf|32|8|32" \
        "llama-134m-Q4_0|$models/llama-134m-Q4_0.gguf|32|8|32"; do
        IFS='|' read -r key file mpp mtg mlpp <<<"$row"
        fits "$key" 12 || continue
        compare_row "$key" "$file" "$mpp" "$mtg" "$mrounds" "$mreps" "$mttft" "bench-compare.sh's row" "$mlpp"
    done
    step_done compare-matrix ok "$s"
fi

# ---------------------------------------------------------------------------------------------
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
    --format=csv >"$state/nvidia-smi-end.csv" 2>&1
step_done total ok 0 "budget $budget s"
assemble
say "results: $base.json, $base.md"
cat "$base.md"
if [[ -n ${OUT:-} && -d ${OUT:-} ]]; then
    cp "$logs/gpu-check.log" "$OUT/gpu-check.log" 2>/dev/null
    # Every log, each cut to its last 256 KiB, in one archive.
    (cd "$work" && find logs state -type f -size +256k -exec sh -c 'tail -c 262144 "$1" >"$1.tail" && mv "$1.tail" "$1"' _ {} \; &&
        tar -cJf "$OUT/gpu-check-logs.tar.xz" logs state) 2>/dev/null
fi
exit 0
