#!/usr/bin/env bash
# The studio's time to first token, cold and warm: vkllm-studio with the built-in model (or -m
# MODEL) under a private Xvfb, an empty pipeline cache (XDG_CACHE_HOME in a new directory) for
# the cold run, the same cache for the warm runs. A script sends one prompt as soon as the model
# is loaded; the frame log (--frame-log) says when the first token was drawn, counted from the
# studio's start (`up` of the first frame whose new state has a token), and how many shaders the
# load reported it prepared. The window draws on events, as a person's does (a headless
# run would otherwise draw every frame, taking a core from the compiles on a CPU device).
#   scripts/bench-studio-ttft.sh [MODEL.gguf]
# Environment: VKLLM_BUILD_DIR (default build), TTFT_WARM_RUNS (default 2), TTFT_OUT (a
# directory to keep the frame logs and exports in; default a temporary one).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${VKLLM_BUILD_DIR:-$root/build}
studio=$build/bin/vkllm-studio
[[ -x $studio ]] || { echo "bench-studio-ttft: $studio not built (cmake --build $build --target vkllm-studio)" >&2; exit 1; }
command -v Xvfb >/dev/null || { echo "bench-studio-ttft: Xvfb missing (scripts/install-deps.sh)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench-studio-ttft: python3 missing" >&2; exit 1; }
model_args=()
[[ $# -ge 1 ]] && model_args=(-m "$1")

work=$(mktemp -d)
out=${TTFT_OUT:-$work/out}
mkdir -p "$out"
xvfb_pid=
trap '[[ -n $xvfb_pid ]] && kill $xvfb_pid 2>/dev/null; rm -rf "$work"' EXIT
display=160
while [[ -e /tmp/.X11-unix/X$display || -e /tmp/.X$display-lock ]]; do display=$((display + 1)); done
Xvfb ":$display" -screen 0 1600x1000x24 -nolisten tcp >/dev/null 2>&1 &
xvfb_pid=$!
for _ in $(seq 50); do [[ -e /tmp/.X11-unix/X$display ]] && break; sleep 0.1; done

printf 'tokens 4\nsend Once upon a time\nexport %s\n' "$work/EXPORT" > "$work/script.in"
cache=$work/cache  # empty: every pipeline is compiled
run() {  # run NAME: one start of the studio, its frame log and export under $out/NAME.*
  sed "s|$work/EXPORT|$out/$1.json|" "$work/script.in" > "$work/$1.script"
  # shellcheck disable=SC2068  # model_args is empty or -m MODEL
  DISPLAY=":$display" XDG_CACHE_HOME=$cache "$studio" ${model_args[@]+"${model_args[@]}"} --temp 0 --panels all \
    --draw events --size 1600x1000 --config-dir "$work/config-$1" --script "$work/$1.script" --frame-log "$out/$1.log" --exit
  python3 - "$out/$1.log" "$out/$1.json" "$1" <<'PY'
import json, sys
log, export, name = sys.argv[1:4]
first = None
for line in open(log):
    f = dict(kv.split("=", 1) for kv in line.rstrip("\n").split("\t"))
    if first is None and int(f.get("tok", "0")) >= 1: first = float(f["up"])
doc = json.load(open(export))
chat = doc["chat"]
print(f"  {name}: first token drawn {first / 1000:.2f} s after the start; "
      f"{chat.get('shaders_prepared', 0)} pipelines prepared at the load in {chat.get('prepare_seconds', 0):.1f} s")
PY
}
echo "bench-studio-ttft: $(uptime)"
run cold
for i in $(seq "${TTFT_WARM_RUNS:-2}"); do run "warm$i"; done
echo "bench-studio-ttft: $(uptime)"
