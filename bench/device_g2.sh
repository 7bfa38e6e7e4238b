#!/usr/bin/env bash
# One device call for issue 17's batched GEMM, bias along M / in f16-bf16 and the copy path's
# host time: the GPU tests named in $PYTEST, compute-sanitizer memcheck on the new kernels,
# then the suite's $SHAPES (default: the ragged and batched ones) with host us per call.
# On the GPU machine, from the root of the tree:  PYTEST="tests/gpu/..." bash bench/device_g2.sh
set -o pipefail
source bench/device_env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LAYOUTPROOF_CACHE=/tmp/lpcache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
if [ -n "$PYTEST" ]; then
  timeout "${PYTEST_S:-300}" python3 -m pytest -q -p no:cacheprovider $PYTEST 2>&1 | tee "$OUT/pytest.log" | tail -6
fi
if [ -z "$SKIP_SANITIZER" ]; then
  timeout "${SAN_S:-200}" compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    python3 bench/sanitize_gemm.py --new > "$OUT/sanitizer.log" 2>&1
  echo "compute-sanitizer memcheck (new kernels) exit $?" | tee -a "$OUT/gpu.txt"
  grep -E "ERROR SUMMARY|sanitize run" "$OUT/sanitizer.log" | tail -2
fi
SHAPES=${SHAPES:-1000x3000x777,4095x4097x4093,2047x5003x1000,32x512x512x512,8x2048x2048x128,16x1024x1024x1024b,64x128x128x64}
if [ "$SHAPES" != none ]; then
  timeout "${SUITE_S:-240}" python3 bench/gemm_suite.py ${HOST:---no-host} --dtypes "${DTYPES:-f16}" \
    --shapes "$SHAPES" --rounds "${ROUNDS:-5}" --out "$OUT/suite" > "$OUT/suite.log" 2>&1
  grep -v "^  " "$OUT/suite.log" | tail -25
fi
