#!/usr/bin/env bash
# The coordinator's closing device call for issue 17 (sessions 21-22): every GPU test, compute-sanitizer
# memcheck over every kernel variant (bench/sanitize_gemm.py: base, split-K with the fix-up kernel, the
# fused epilogue, bias along M / in f16, batched, batched alpha/beta), over the serial split-K
# (bench/splitk_serial.py --sanitize) and over split-K's memcheck workload, then the whole suite
# (bench/gemm_suite.py: squares, LLM prefill/decode, K-heavy/light, ragged, batched; f16 and bf16;
# cuBLAS interleaved in the same process).  From the repository root on the GPU machine:
#   bash bench/device_final.sh
set -o pipefail
source bench/device_env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LAYOUTPROOF_CACHE=/tmp/lpcache
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
if [ -z "$SKIP_PYTEST" ]; then  # the GPU tests alone take ~2-4 min: SKIP_PYTEST=1 runs them in a call of their own
  timeout "${PYTEST_S:-200}" python3 -m pytest -q -p no:cacheprovider -x tests/gpu > "$OUT/pytest.log" 2>&1
  echo "pytest tests/gpu exit $?: $(tail -1 "$OUT/pytest.log")" | tee -a "$OUT/gpu.txt"
fi
for w in "bench/sanitize_gemm.py" "bench/splitk_serial.py --sanitize --out /tmp/san" \
         "bench/gemm_suite.py --sanitize-splitk"; do
  timeout "${SAN_S:-150}" compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    python3 $w >> "$OUT/sanitizer.log" 2>&1
  echo "compute-sanitizer memcheck ($w) exit $?: $(grep 'ERROR SUMMARY' "$OUT/sanitizer.log" | tail -1)" \
    | tee -a "$OUT/gpu.txt"
done
timeout "${SUITE_S:-260}" python3 bench/gemm_suite.py --dtypes "${DTYPES:-f16,bf16}" --rounds "${ROUNDS:-5}" \
  --out "$OUT/suite" > "$OUT/suite.log" 2>&1
echo "suite exit $?" | tee -a "$OUT/gpu.txt"
grep -v "^  " "$OUT/suite.log" | tail -70
