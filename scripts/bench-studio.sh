#!/usr/bin/env bash
# The studio at scale: every panel open on a Llama-3.2-1B-shaped random model (16 layers, 32
# heads of 16, 8 KV heads; n_embd 512 and stories260K's 512-token vocabulary keep the weights
# small) with a prompt of at least 2,000 tokens, generating under a private Xvfb on the default
# Vulkan device (lavapipe without a GPU). Prints and writes (OUT/bench-studio.json):
#   peak resident memory (VmHWM of the studio process, from /usr/bin/time's maximum RSS),
#   the probe results kept per step (the prompt's eval and each generated token's, counted
#   from the studio's export: values x 4 bytes) against the probe budget,
#   the probes' device buffers, and the UI frame times while generating (median, p95, max).
# The studio's frame log (OUT/frames.log, --frame-log: one line per frame with what it did) is
# kept, and the frames over BENCH_SLOW_MS (default 1000) are printed from it.
#   scripts/bench-studio.sh [OUT_DIR]
# Environment: VKLLM_BUILD_DIR (default build), BENCH_TOKENS (prompt tokens, default 2000),
# BENCH_GENERATE (tokens to generate, default 8), BENCH_LAYERS / BENCH_HEADS / BENCH_EMBD (default
# 16 / 32 / 512; n_ff is 3 x BENCH_EMBD), BENCH_MODEL (a GGUF to run instead of the random
# model), BENCH_STUDIO_ARGS (more studio options, e.g. --engine-nice 0 to run the engine at the
# UI's priority).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${VKLLM_BUILD_DIR:-$root/build}
studio=$build/bin/vkllm-studio
vkllm=$build/bin/vkllm
gen=$build/bin/vkllm-random-model
target=${BENCH_TOKENS:-2000}
generate=${BENCH_GENERATE:-8}
layers=${BENCH_LAYERS:-16}
heads=${BENCH_HEADS:-32}
embd=${BENCH_EMBD:-512}
for b in "$studio" "$vkllm" "$gen"; do
  [[ -x $b ]] || { echo "bench-studio: $b not built (cmake --build $build --target vkllm-studio vkllm vkllm-random-model)" >&2; exit 1; }
done
command -v Xvfb >/dev/null || { echo "bench-studio: Xvfb missing (scripts/install-deps.sh)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "bench-studio: /usr/bin/time missing (apt-get install time)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench-studio: python3 missing" >&2; exit 1; }

out=${1:-$(mktemp -d)}
mkdir -p "$out"
work=$(mktemp -d)
xvfb_pid=
trap '[[ -n $xvfb_pid ]] && kill $xvfb_pid 2>/dev/null; rm -rf "$work"' EXIT

if [[ -n ${BENCH_MODEL:-} ]]; then
  model=$BENCH_MODEL
  [[ -f $model ]] || { echo "bench-studio: BENCH_MODEL $model is not a file" >&2; exit 1; }
  shape="$(basename "$model")"
else
  model=$work/llama-1b-shaped.gguf
  "$gen" --arch llama --out "$model" --seed 29 --n-layer "$layers" --n-head "$heads" --n-head-kv 8 \
    --n-embd "$embd" --n-ff $((3 * embd)) --n-ctx 4096 >/dev/null
  shape="$layers layers x $heads heads, n_embd $embd"
fi

# A prompt of at least $target tokens: a story paragraph repeated, counted with the model's tokenizer.
paragraph="Once upon a time, there was a little girl named Lily. She liked to play in the park with her \
red ball. One day, the ball rolled away under a big tree, and a small dog ran after it. Lily laughed \
and said thank you to the dog, and they played together until the sun went down. "
count_tokens() { printf '%s' "$1" | "$vkllm" tokenize -m "$model" -f - | wc -w; }
prompt=""
while (( $(count_tokens "$prompt") < target )); do prompt+=$paragraph; done
n_prompt=$(count_tokens "$prompt")

display=150
while [[ -e /tmp/.X11-unix/X$display || -e /tmp/.X$display-lock ]]; do display=$((display + 1)); done
Xvfb ":$display" -screen 0 1600x1000x24 -nolisten tcp >/dev/null 2>&1 &
xvfb_pid=$!
for _ in $(seq 50); do [[ -e /tmp/.X11-unix/X$display ]] && break; sleep 0.1; done

{
  echo "tokens $generate"
  echo "send $prompt"
  echo "export $out/studio-export.json"
} > "$work/bench.script"
echo "bench-studio: $shape, prompt $n_prompt tokens, generating $generate, every panel open"
start=$(date +%s)
# shellcheck disable=SC2086  # BENCH_STUDIO_ARGS is a list of options
DISPLAY=":$display" /usr/bin/time -f '%M %e' -o "$work/time" "$studio" -m "$model" --temp 0 --panels all ${BENCH_STUDIO_ARGS:-} \
  --size 1600x1000 --ctx $((n_prompt + generate + 64)) --config-dir "$work/config" \
  --script "$work/bench.script" --frame-log "$out/frames.log" --exit
wall=$(( $(date +%s) - start ))

python3 - "$out/studio-export.json" "$work/time" "$n_prompt" "$wall" "$out/bench-studio.json" "$out/frames.log" \
  "${BENCH_SLOW_MS:-1000}" <<'EOF'
import json, sys
doc = json.load(open(sys.argv[1]))
peak_kib, _ = open(sys.argv[2]).read().split()
n_prompt, wall, out = int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
frame_log, slow_ms = sys.argv[6], float(sys.argv[7])

def values(x):
    if isinstance(x, list): return sum(values(v) for v in x)
    if isinstance(x, dict): return sum(values(v) for k, v in x.items() if k not in ("eval", "layer", "head", "text"))
    return 1 if isinstance(x, (int, float)) and not isinstance(x, bool) else 0

# Values kept per eval: every per-eval field, and the summaries (4 floats per layer, head and row).
per_eval = {}
for field in ("attention_top_k", "attention_thumbnails", "residual", "ffn_down", "logit_lens", "logit_lens_grid"):
    for entry in doc.get(field) or []:
        per_eval[entry["eval"]] = per_eval.get(entry["eval"], 0) + values(entry)
summ = doc.get("attention_summary") or []
n_heads = len(summ)
for e in per_eval:
    # the prompt's eval has n_prompt rows, each later eval one
    per_eval[e] += n_heads * 4 * (n_prompt if e == 0 else 1)
steps = [per_eval[e] * 4 for e in sorted(per_eval) if e > 0]
frames = doc["frames"]
result = {
    "prompt_tokens": n_prompt,
    "generated": len(steps),
    "peak_rss_mib": int(peak_kib) / 1024,
    "probe_bytes_prompt_eval": per_eval.get(0, 0) * 4,
    "probe_bytes_per_step_max": max(steps) if steps else 0,
    "probe_bytes_per_step_median": sorted(steps)[len(steps) // 2] if steps else 0,
    "probe_budget_bytes": 256 << 20,
    "probe_device_buffers_bytes": doc["memory"]["probes"],
    "attention_view": "full maps" if doc.get("attention") else "GPU summaries",
    "frames_generating": frames["generating_count"],
    "frame_median_ms": frames["generating_median_ms"],
    "frame_p95_ms": frames["generating_p95_ms"],
    "frame_max_ms": frames["generating_max_ms"],
    "wall_s": wall,
}
# The frame log's slow frames while generating, each with what it did.
slow = []
for line in open(frame_log):
    f = dict(kv.split("=", 1) for kv in line.rstrip("\n").split("\t"))
    if f.get("gen") == "1" and float(f["ms"]) > slow_ms: slow.append(line.strip())
result["frames_over_slow_ms"] = len(slow)
# The same frames from the log: the time between frames (it includes sleeping for events with
# --draw events) and each frame's own work (that time less the sleep): how long an input waits.
gen = [dict(kv.split("=", 1) for kv in l.rstrip("\n").split("\t")) for l in open(frame_log)]
gen = [f for f in gen if f.get("gen") == "1"]
def stats(xs):
    xs = sorted(xs)
    return [round(xs[len(xs) // 2], 1), round(xs[int(len(xs) * 0.95)], 1), round(xs[-1], 1)] if xs else []
result["log_frames_generating"] = len(gen)
result["log_interval_ms_median_p95_max"] = stats([float(f["ms"]) for f in gen])
result["log_work_ms_median_p95_max"] = stats([float(f["ms"]) - float(f["wait"]) for f in gen])
json.dump(result, open(out, "w"), indent=1)
for k, v in result.items(): print(f"  {k}: {v:.1f}" if isinstance(v, float) else f"  {k}: {v}")
for line in slow: print(f"  slow frame: {line}")
EOF
