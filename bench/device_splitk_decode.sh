#!/usr/bin/env bash
# One device call for split-K on the decode shapes (issue 17, G1b, session 21): timing of the
# rule's pick with the split kernel as a programmatic dependent launch (against the fix-up's
# PDL only, no PDL, and cuBLAS), back-to-back calls against float64, compute-sanitizer memcheck
# on those launches, optionally a sweep of bases x splits and the GPU tests.  From the root of
# the tree on the GPU machine:  bash bench/device_splitk_decode.sh
#   TIME=shapes SWEEP=shapes PYTEST="tests/..." SKIP_CHECK=1 SKIP_SANITIZER=1 SKIP_TIME=1
# Session 22 (G3): ATOMIC=1 runs --check and --sanitize on the atomic reduction (one f32
# plane, red.global.add, the fix-up zeroes it); VARIANTS=shapes times the rule's pick against
# atomic configurations with cuBLAS in the same rounds (bench/splitk_decode.py --variants).
# Session 22 (G4): CLUSTER=1 runs --check, --sanitize and --variants on the cluster reduction
# (the units of a tile are one cluster; partials summed through distributed shared memory).
set -o pipefail
source bench/device_env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LAYOUTPROOF_CACHE=/tmp/lpcache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
D=1x4096x4096,16x4096x4096
if [ -z "$SKIP_TIME" ]; then
  timeout "${TIME_LIMIT:-170}" python3 bench/splitk_decode.py --time "${TIME:-$D}" --out "$OUT/t" > "$OUT/time.log" 2>&1
  echo "time exit $?" | tee -a "$OUT/gpu.txt"
fi
if [ -z "$SKIP_CHECK" ]; then
  timeout 150 python3 bench/splitk_decode.py --check ${ATOMIC:+--atomic} ${CLUSTER:+--cluster} --out /tmp/check > "$OUT/check.log" 2>&1
  echo "check exit $?" | tee -a "$OUT/gpu.txt"; grep -E "FAIL|^check:" "$OUT/check.log" | tail -6
fi
if [ -z "$SKIP_SANITIZER" ]; then
  timeout 120 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    python3 bench/splitk_decode.py --sanitize ${ATOMIC:+--atomic} ${CLUSTER:+--cluster} --out /tmp/san > "$OUT/sanitizer.log" 2>&1
  echo "compute-sanitizer memcheck (split-K, PDL) exit $?" | tee -a "$OUT/gpu.txt"
  grep -E "ERROR SUMMARY" "$OUT/sanitizer.log" | tail -1
fi
if [ -n "$VARIANTS" ]; then
  timeout "${VARIANTS_LIMIT:-200}" python3 bench/splitk_decode.py --variants "$VARIANTS" ${CLUSTER:+--cluster} --out "$OUT/v" > "$OUT/variants.log" 2>&1
  echo "variants exit $?" | tee -a "$OUT/gpu.txt"
fi
if [ -n "$SWEEP" ]; then
  timeout "${SWEEP_LIMIT:-150}" python3 bench/splitk_decode.py --sweep "$SWEEP" --dtypes "${SWEEP_DTYPES:-f16,bf16}" \
    --out "$OUT/s" > "$OUT/sweep.log" 2>&1
  echo "sweep exit $?" | tee -a "$OUT/gpu.txt"
fi
if [ -n "$OCC" ]; then  # G4: clusters of the cluster split-K kernels resident at once
  timeout 90 python3 bench/cluster_occupancy.py > "$OUT/occupancy.log" 2>&1
  echo "occupancy exit $?" | tee -a "$OUT/gpu.txt"; grep "^occupancy" "$OUT/occupancy.log"
fi
if [ -n "$PYTEST" ]; then
  timeout "${PYTEST_LIMIT:-150}" python3 -m pytest -q -p no:cacheprovider $PYTEST > "$OUT/pytest.log" 2>&1
  echo "pytest exit $?" | tee -a "$OUT/gpu.txt"; tail -3 "$OUT/pytest.log"
fi
grep "^time" "$OUT/time.log" 2>/dev/null
grep -E "^sweep|^  sweep" "$OUT/sweep.log" 2>/dev/null | head -80
grep -E "^  var " "$OUT/variants.log" 2>/dev/null
