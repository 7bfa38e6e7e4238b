#!/usr/bin/env bash
# One device call for split-K (issue 17): memcheck of the split-K kernels, a sweep of the
# split counts against the unsplit candidates and cuBLAS, and the suite on chosen shapes.
# Usage on the GPU machine, from the root of the tree to run:
#   bash bench/device_splitk.sh "SWEEP_SHAPES" "SUITE_SHAPES" [DTYPES]
set -o pipefail
source bench/device_env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LAYOUTPROOF_CACHE=/tmp/lpcache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
if [ -z "$SKIP_SANITIZER" ]; then
  timeout 300 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    python3 bench/gemm_suite.py --sanitize-splitk > "$OUT/sanitizer.log" 2>&1
  echo "compute-sanitizer memcheck (split-K) exit $?" | tee -a "$OUT/gpu.txt"
  tail -3 "$OUT/sanitizer.log"
fi
if [ -n "$1" ]; then
  python3 bench/gemm_suite.py --sweep --splitk --sweep-splits "${SWEEP_SPLITS:-2,4,8}" --no-host --no-suite \
    --shapes "$1" --out "$OUT/sweep" 2>&1 | tee "$OUT/sweep.log" | grep -v "^  "
fi
if [ -n "$2" ]; then
  python3 bench/gemm_suite.py ${NO_HOST:---no-host} --dtypes "${3:-f16}" --shapes "$2" --out "$OUT/suite" 2>&1 \
    | tee "$OUT/suite.log"
fi
