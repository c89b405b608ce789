#!/usr/bin/env bash
# A device call carries at most 64 MiB (the tree, untracked files git does not ignore, and what
# `carry` names), and the tree alone is larger (the goldens and the zoo). This checks out a local
# branch `gpu-slim` of the current commit without the files a GPU run does not read
# (scripts/lib/gpu-slim-paths.txt: the screenshots, the zoo models the benches and packed tests do
# not use, the goldens of the CPU-only and left-out test programs) and prints what the call would
# carry with .gpu/ and .gl/. Run it
# just before the device call and `git checkout main` right after: nothing is to be committed
# on that branch, and others working in the same checkout must not commit meanwhile.
#
#   scripts/gpu-slim-branch.sh     then the device call, then: git checkout main
set -euo pipefail
cd "$(dirname "$0")/.."
base=$(git rev-parse --abbrev-ref HEAD)
[[ $base != gpu-slim ]] || { echo "gpu-slim-branch: already on gpu-slim (git checkout main first)" >&2; exit 1; }
git checkout -q -B gpu-slim "$base"
mapfile -t slim < <(grep -v '^#' scripts/lib/gpu-slim-paths.txt | grep -v '^$')
git rm -rq --ignore-unmatch -- "${slim[@]}"
git commit -qm "gpu-slim: $base without the data a device call cannot carry"
{ git ls-files -z; git ls-files -z -o --exclude-standard; } | python3 -c 'import os,sys
fs = [f for f in sys.stdin.read().split("\0") if f and os.path.isfile(f) and not os.path.islink(f)]
size = lambda d: sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)) if os.path.isdir(d) else 0
t, g, l = sum(os.path.getsize(f) for f in fs), size(".gpu"), size(".gl")
m = 2**20
print(f"gpu-slim-branch: tree {t/m:.2f} MiB + .gpu {g/m:.2f} + .gl {l/m:.2f} = {(t+g+l)/m:.2f} MiB of 64")
sys.exit(0 if t + g + l <= 64 * m - 262144 else 1)' || echo "gpu-slim-branch: over the limit: pack fewer test programs (GPU_PACK_TESTS)" >&2
echo "gpu-slim-branch: on gpu-slim; after the call: git checkout $base"
