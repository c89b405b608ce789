#!/usr/bin/env bash
# Builds one libFuzzer target (clang, ASan + UBSan) and runs it for a given time.
#
#   scripts/fuzz.sh TARGET SECONDS [extra libFuzzer options]
#
# TARGET: gguf, tokenizer, template or http (the programs fuzz_TARGET in tests/fuzz). Seeds come from
# tests/fuzz/corpus/TARGET; what the run finds goes to build-fuzz/work/TARGET (kept between
# runs), crashes to build-fuzz/artifacts/. Minimise the committed seeds after a long run with
#   build-fuzz/bin/fuzz_TARGET -merge=1 NEW_DIR tests/fuzz/corpus/TARGET build-fuzz/work/TARGET
# Runs under nice. BUILD_FUZZ (default: build-fuzz) is the build directory. See docs/fuzzing.md.
set -euo pipefail
if [ $# -lt 2 ]; then
    echo "usage: scripts/fuzz.sh gguf|tokenizer|template|http SECONDS [libFuzzer options]" >&2
    exit 2
fi
target="$1" seconds="$2"
shift 2
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BUILD_FUZZ:-$root/build-fuzz}"
case "$target" in
    gguf) opts=(-dict="$root/tests/fuzz/gguf.dict" -max_len=8192 -timeout=10) ;;
    tokenizer) opts=(-max_len=4096 -timeout=10) ;;
    template) opts=(-max_len=16384 -timeout=30 -malloc_limit_mb=1536) ;;
    http) opts=(-dict="$root/tests/fuzz/http.dict" -max_len=16384 -timeout=10) ;;
    *) echo "scripts/fuzz.sh: unknown target '$target' (gguf, tokenizer, template or http)" >&2; exit 2 ;;
esac
case "$seconds" in
    ''|*[!0-9]*) echo "scripts/fuzz.sh: SECONDS must be a positive integer, got '$seconds'" >&2; exit 2 ;;
esac

if [ ! -f "$build/build.ninja" ]; then
    CC=clang CXX=clang++ cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DVKLLM_FUZZ=ON -DVKLLM_BUILD_TESTS=OFF
fi
cmake --build "$build" --target "fuzz_$target"
mkdir -p "$build/work/$target" "$build/artifacts"
# ASan keeps freed memory in a 256 MiB quarantine and returns little to the system, so a target
# whose inputs legitimately build large strings (a template's values may reach 64 MiB) crosses
# -rss_limit_mb with a small live heap. A smaller quarantine that is released promptly keeps the
# resident size close to what the code holds (a render that peaks at 20 MB without ASan: 2.2 GB
# with the defaults, 330 MB with these).
export ASAN_OPTIONS=${ASAN_OPTIONS:-quarantine_size_mb=16:allocator_release_to_os_interval_ms=100}
exec nice -n 10 "$build/bin/fuzz_$target" "${opts[@]}" -max_total_time="$seconds" -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/" "$@" \
    "$build/work/$target" "$root/tests/fuzz/corpus/$target"
