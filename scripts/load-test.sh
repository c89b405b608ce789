#!/usr/bin/env bash
# A load test of `vkllm serve` on loopback: starts a server (MODEL, default the built-in model;
# or uses BASE_URL, a loopback server already running), then at each level of CONCURRENCY
# clients sends REQUESTS streamed chat requests of MAX_TOKENS tokens and prints aggregate
# tokens/s, time to first token and time between tokens (tests/server/load_test.mjs).
#   scripts/load-test.sh                                  # 1, 4 and 16 clients, 16 requests each
#   MODEL=m.gguf CONCURRENCY="1 8" REQUESTS=32 MAX_TOKENS=64 scripts/load-test.sh
#   PARALLEL=8 scripts/load-test.sh                       # serve --parallel 8 (continuous batching)
# Bounded: at most 256 clients, 10000 requests per level; the server's queue is sized to the
# largest level. Needs node (scripts/install-deps.sh).
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
bin=${VKLLM_BIN:-$src/build/bin/vkllm}
command -v node >/dev/null || { echo "load-test: node is not installed (scripts/install-deps.sh)" >&2; exit 1; }
export CONCURRENCY=${CONCURRENCY:-1 4 16} REQUESTS=${REQUESTS:-16} MAX_TOKENS=${MAX_TOKENS:-32}

pid=
log=$(mktemp)
cleanup() {
  if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then kill -TERM "$pid"; wait "$pid" || true; fi
  rm -f "$log"
}
trap cleanup EXIT

if [[ -z ${BASE_URL:-} ]]; then
  [[ -x $bin ]] || { echo "load-test: no $bin (build it: scripts/build.sh, or set VKLLM_BIN)" >&2; exit 1; }
  largest=0
  for c in $CONCURRENCY; do (( c > largest )) && largest=$c; done
  model=()
  [[ -n ${MODEL:-} ]] && model=(-m "$MODEL")
  "$bin" serve "${model[@]}" --port 0 --queue "$largest" --parallel "${PARALLEL:-1}" --quiet 2>"$log" &
  pid=$!
  for _ in $(seq 600); do
    port=$(sed -n 's/.*listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
    [[ -n $port ]] && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  [[ -n ${port:-} ]] || { echo "load-test: the server did not listen within 60 s" >&2; exit 1; }
  head -n 1 "$log"
  export BASE_URL=http://127.0.0.1:$port
fi
node "$src/tests/server/load_test.mjs"
