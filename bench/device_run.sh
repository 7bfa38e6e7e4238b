#!/usr/bin/env bash
# One device call: environment, sanitizer, then bench/gemm.py with the given arguments.
# Usage on the GPU machine: bash bench/device_run.sh [bench/gemm.py args...]
set -o pipefail
source bench/device_env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
if [ -z "$SKIP_SANITIZER" ]; then
  # --report-api-errors no: cuda-python's driver bindings probe entry points with
  # cuGetProcAddress at import (host-side CUDA_ERROR_INVALID_VALUE, not memory errors)
  timeout 240 compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    python3 bench/sanitize_gemm.py \
    > "$OUT/sanitizer.log" 2>&1; echo "compute-sanitizer memcheck exit $?" | tee -a "$OUT/gpu.txt"
  tail -4 "$OUT/sanitizer.log"
fi
python3 bench/gemm.py --out "$OUT" "$@" 2>&1 | tee "$OUT/bench.log"
