#!/usr/bin/env bash
# One call on the GPU machine: a sequence of steps, each one's output in a log under $OUT
# (bench/out/device unless set; the machine's runner sets it to the folder it brings back).
# From the repository root:
#
#   bash bench/device_run.sh [STEP ...]
#
# A STEP is one argument:
#   SCRIPT ARGS             python3 bench/SCRIPT ARGS
#   memcheck:SCRIPT ARGS    the same under compute-sanitizer --tool memcheck (also synccheck:,
#                           racecheck:, initcheck:)
#   pytest:ARGS             python3 -m pytest -q ARGS
# Without steps: memcheck of every kernel variant (sanitize_gemm.py), then bench/gemm.py.
# STEP_S (default 300) bounds each step in seconds; $OUT/summary.txt gets the GPU, and each
# step's exit status and last telling line; the tail of each log is printed at the end.
#
# Examples (each what one device call measured; the figures are in bench/RESULTS.md):
#   split-K on the decode shapes, PDL and a sweep of bases x splits:
#     "splitk_decode.py --time 1x4096x4096,16x4096x4096" "splitk_decode.py --check"
#     "memcheck:splitk_decode.py --sanitize" "splitk_decode.py --sweep 1x4096x4096,16x4096x4096"
#   the cluster reduction:  "splitk_decode.py --check --cluster" "memcheck:splitk_decode.py
#     --sanitize --cluster" "splitk_decode.py --variants 16x8192x8192 --cluster" cluster_occupancy.py
#   16-row mma.sync tiles:  "splitk_decode.py --variants 16x4096x4096 --mma 16x32x128w1x2s8"
#     "memcheck:splitk_decode.py --sanitize --mma 16x32x128w1x2s8,16x64x64w1x4s8"
#   the serial split-K:     "splitk_serial.py --check" "memcheck:splitk_serial.py --sanitize"
#     "synccheck:splitk_serial.py --sanitize" "splitk_serial.py --time 1x4096x4096"
#   batched and ragged:     "memcheck:sanitize_gemm.py --new" "gemm_suite.py --dtypes f16
#     --shapes 4095x4097x4093,32x512x512x512"
#   the split-K model fit:  "gemm_suite.py --sweep --splitk --no-host --no-suite --shapes ..."
#     "gemm_suite.py --splitk-parts 1x4096x4096 --no-host --no-suite"
#   kernel variants:        "gemm.py --no-autotune --sizes 8192x8192x8192" "gemm_configs.py ..."
set -o pipefail
source bench/device_env.sh
OUT=${OUT:-bench/out/device}; mkdir -p "$OUT"; export OUT
export LAYOUTPROOF_CACHE=${LAYOUTPROOF_CACHE:-/tmp/lpcache}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/summary.txt"
[ $# -eq 0 ] && set -- "memcheck:sanitize_gemm.py" "gemm.py"
logs=()
i=0
for step in "$@"; do
  i=$((i + 1))
  case "$step" in
    pytest:*) cmd="python3 -m pytest -q -p no:cacheprovider ${step#pytest:}" ;;
    memcheck:* | synccheck:* | racecheck:* | initcheck:*)
      # --report-api-errors no: cuda-python's driver bindings probe entry points with
      # cuGetProcAddress at import (host-side CUDA_ERROR_INVALID_VALUE, not memory errors)
      cmd="compute-sanitizer --tool ${step%%:*} --report-api-errors no --error-exitcode 9 python3 bench/${step#*:}" ;;
    *) cmd="python3 bench/$step" ;;
  esac
  word=${step%% *}
  log="$OUT/$(printf '%02d' "$i")_$(printf '%s' "${word//[^A-Za-z0-9_.]/_}").log"
  # shellcheck disable=SC2086  # the step's words are its arguments
  timeout "${STEP_S:-300}" $cmd > "$log" 2>&1
  rc=$?
  last=$(grep -E "ERROR SUMMARY|passed|failed|correct|^check:|==" "$log" | tail -1)
  echo "[exit $rc] $step: ${last:-$(tail -1 "$log")}" | tee -a "$OUT/summary.txt"
  logs+=("$log")
done
for log in "${logs[@]}"; do
  echo "== $log"
  grep -v "^  " "$log" | tail -n "${TAIL:-25}"
done
