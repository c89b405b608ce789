#!/usr/bin/env bash
# Regenerates tests/golden/moe (the mixture-of-experts models) the way make-golden-families.sh
# regenerates the dense ones: scripts/make-golden-moe.sh [BUILD_DIR]
exec env GOLDEN=moe "$(dirname "$0")/make-golden-families.sh" "$@"
