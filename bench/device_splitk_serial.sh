#!/usr/bin/env bash
# One device call for the serial split-K (issue 17, G1, session 21): the float64 check over
# repeated calls, compute-sanitizer (memcheck; racecheck and synccheck when asked) on the
# serial kernels, the GPU tests of the split-K file, the serial split against the fix-up
# kernel and the best unsplit kernel, then gemm_suite on the decode shapes.  From the root
# of the tree on the GPU machine:  bash bench/device_splitk_serial.sh "SHAPES" [SUITE_DTYPES]
set -o pipefail
source bench/device_env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LAYOUTPROOF_CACHE=/tmp/lpcache
SHAPES=${1:-1x4096x4096,16x4096x4096,1x4096x11008,16x8192x8192}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
if [ -z "$SKIP_CHECK" ]; then
  timeout 200 python3 bench/splitk_serial.py --check --out /tmp/check > "$OUT/check.log" 2>&1
  echo "check exit $?" | tee -a "$OUT/gpu.txt"; grep -E "FAIL|^check:" "$OUT/check.log" | tail -8
fi
if [ -z "$SKIP_SANITIZER" ]; then
  for tool in memcheck ${SANITIZE_MORE}; do
    timeout 150 compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 9 \
      python3 bench/splitk_serial.py --sanitize --out /tmp/san > /tmp/san_$tool.log 2>&1
    echo "compute-sanitizer $tool (serial split-K) exit $?" | tee -a "$OUT/gpu.txt"
    cat /tmp/san_$tool.log >> "$OUT/sanitizer.log"; grep -E "ERROR SUMMARY" /tmp/san_$tool.log | tail -1
  done
fi
if [ -n "$PYTEST" ]; then
  timeout 240 python3 -m pytest -q -p no:cacheprovider $PYTEST > "$OUT/pytest.log" 2>&1
  echo "pytest exit $?" | tee -a "$OUT/gpu.txt"; tail -3 "$OUT/pytest.log"
fi
if [ -z "$SKIP_TIME" ]; then
  timeout 150 python3 bench/splitk_serial.py --time "$SHAPES" --out "$OUT/time" > "$OUT/time.log" 2>&1
  echo "time exit $?" | tee -a "$OUT/gpu.txt"
fi
if [ -n "$EPILOGUE" ]; then
  timeout 150 python3 bench/splitk_serial.py --time-epilogue "$EPILOGUE" --out "$OUT/epi" > "$OUT/epilogue.log" 2>&1
  echo "epilogue exit $?" | tee -a "$OUT/gpu.txt"
fi
if [ -n "$SUITE" ]; then
  timeout 200 python3 bench/gemm_suite.py --no-host --dtypes "${2:-f16,bf16}" --shapes "$SUITE" \
    --out "$OUT/suite" > "$OUT/suite.log" 2>&1
  echo "suite exit $?" | tee -a "$OUT/gpu.txt"
fi
cat "$OUT/time.log" 2>/dev/null | grep "^time"
cat "$OUT/epilogue.log" 2>/dev/null | grep "^epilogue"
grep -v "^  " "$OUT/suite.log" 2>/dev/null | tail -20
