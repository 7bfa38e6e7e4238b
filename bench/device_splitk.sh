#!/usr/bin/env bash
# One device call for split-K (issue 17): memcheck of the split-K kernels, the GPU tests of
# the plan / run / split-K files, split-K's two kernels timed apart, optionally a sweep of
# split counts, then the suite.  On the GPU machine, from the root of the tree to run:
#   bash bench/device_splitk.sh "SWEEP_SHAPES" "SUITE_SHAPES|all" [DTYPES]
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
  if [ -n "$SANITIZE_ALL" ]; then  # every kernel variant (bench/sanitize_gemm.py), split-K included
    timeout 300 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
      python3 bench/sanitize_gemm.py >> "$OUT/sanitizer.log" 2>&1
    echo "compute-sanitizer memcheck (all variants) exit $?" | tee -a "$OUT/gpu.txt"
    tail -2 "$OUT/sanitizer.log"
  fi
fi
if [ -n "$PYTEST" ]; then
  timeout 400 python3 -m pytest -q -p no:cacheprovider $PYTEST 2>&1 | tee "$OUT/pytest.log" | tail -5
fi
if [ -n "$PARTS" ]; then
  python3 bench/gemm_suite.py --splitk-parts "$PARTS" --no-host --no-suite --out "$OUT/parts" 2>&1 \
    | grep "^parts"
fi
if [ -n "$1" ]; then
  python3 bench/gemm_suite.py --sweep --splitk --sweep-splits "${SWEEP_SPLITS:-2,4,8}" --no-host --no-suite \
    --shapes "$1" --out "$OUT/sweep" 2>&1 | tee "$OUT/sweep.log" | grep -v "^  "
fi
if [ -n "$2" ]; then
  shapes=(--shapes "$2"); [ "$2" = all ] && shapes=()
  python3 bench/gemm_suite.py ${NO_HOST:---no-host} --dtypes "${3:-f16}" "${shapes[@]}" --out "$OUT/suite" \
    > "$OUT/suite.log" 2>&1
  grep -v "^  " "$OUT/suite.log" | tail -60
fi
