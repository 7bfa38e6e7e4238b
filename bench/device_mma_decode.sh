#!/usr/bin/env bash
# One device call for unsplit mma.sync tiles of 16 rows on the decode shapes (issue 17, G6,
# session 22): bench/splitk_decode.py --variants --mma times the rule's pick (the warp-specialized
# TMA split-K kernel) against GemmConfigs of bm=16 (whole K per CTA: no planes, no fix-up) with
# cuBLAS in the same rounds, each output NaN-poisoned and checked against float64 before and after
# the timing; then compute-sanitizer memcheck on a few calls of each config (M = 16 and a ragged
# 13x1000x520).  From the root of the tree on the GPU machine:
#   MMA=16x32x128w1x2s8,... SHAPES=16x4096x4096,... bash bench/device_mma_decode.sh
#   SKIP_TIME=1 SKIP_SANITIZER=1 PYTEST="tests/gpu/..."
set -o pipefail
source bench/device_env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LAYOUTPROOF_CACHE=/tmp/lpcache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
S=${SHAPES:-1x4096x4096,16x4096x4096,1x4096x11008,16x4096x11008,16x8192x8192}
if [ -z "$SKIP_TIME" ]; then
  timeout "${TIME_LIMIT:-300}" python3 bench/splitk_decode.py --variants "$S" --mma "$MMA" \
    --dtypes "${DTYPES:-f16,bf16}" --out "$OUT/v" > "$OUT/variants.log" 2>&1
  echo "variants exit $?" | tee -a "$OUT/gpu.txt"
fi
if [ -z "$SKIP_SANITIZER" ]; then
  timeout "${SAN_LIMIT:-120}" compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    python3 bench/splitk_decode.py --sanitize --mma "${SAN_MMA:-$MMA}" --out /tmp/san > "$OUT/sanitizer.log" 2>&1
  echo "compute-sanitizer memcheck (mma.sync bm=16) exit $?" | tee -a "$OUT/gpu.txt"
  grep -E "ERROR SUMMARY|^sanitize" "$OUT/sanitizer.log" | tail -30
fi
if [ -n "$PYTEST" ]; then
  timeout "${PYTEST_LIMIT:-150}" python3 -m pytest -q -p no:cacheprovider $PYTEST > "$OUT/pytest.log" 2>&1
  echo "pytest exit $?" | tee -a "$OUT/gpu.txt"; tail -3 "$OUT/pytest.log"
fi
grep -E "^variants|^  var |variant .*Error" "$OUT/variants.log" 2>/dev/null
