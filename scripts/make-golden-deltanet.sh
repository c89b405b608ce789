#!/usr/bin/env bash
# Regenerates tests/golden/deltanet: the Gated DeltaNet families' random-weight models (models.txt
# there), llama.cpp's logits of every prompt position and its greedy tokens on prompt.txt, in
# llama.cpp's most exact mode, exactly as scripts/make-golden-families.sh does for the dense
# families (same options: BUILD_DIR, MODELS, SKIP_BUILD).
set -euo pipefail
GOLDEN=deltanet exec "$(dirname "$0")/make-golden-families.sh" "$@"
