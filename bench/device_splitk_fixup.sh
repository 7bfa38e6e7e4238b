#!/usr/bin/env bash
# One device call for the split-K fix-up's CTA shapes (issue 17, G5, session 22): the plane split
# (the rule's 64x256 s5 S8 / S4) with each fix-up shape of FIXUPS against the current one (t256)
# and cuBLAS in the same rounds (graph + eager), back-to-back calls against float64 with
# NaN-poisoned outputs for each shape, compute-sanitizer memcheck of each shape, and the GPU tests
# of tests/gpu/test_gpu_splitk_fixup.py.  From the root of the tree on the GPU machine:
#   bash bench/device_splitk_fixup.sh      (FIXUPS=t128,t128c2,... SHAPES=MxNxK,... SKIP_*=1)
set -o pipefail
source bench/device_env.sh
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export LAYOUTPROOF_CACHE=/tmp/lpcache
F=${FIXUPS:-t128,t128c2,t128c4,t128c2r2,t64c4,t128c2cv}
S=${SHAPES:-1x4096x4096,16x4096x4096,1x4096x11008,16x8192x8192,16x4096x11008}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv | tee "$OUT/gpu.txt"
if [ -z "$SKIP_TIME" ]; then
  timeout "${TIME_LIMIT:-200}" python3 bench/splitk_decode.py --fixups "$F" --fixup-time "$S" --out "$OUT/t" \
    > "$OUT/fixup_time.log" 2>&1
  echo "fixup time exit $?" | tee -a "$OUT/gpu.txt"
fi
if [ -z "$SKIP_CHECK" ]; then
  timeout "${CHECK_LIMIT:-150}" python3 bench/splitk_decode.py --check --fixups "$F" --out /tmp/check \
    > "$OUT/check.log" 2>&1
  echo "check exit $?" | tee -a "$OUT/gpu.txt"; grep -E "FAIL|^check:" "$OUT/check.log" | tail -8
fi
if [ -z "$SKIP_SANITIZER" ]; then
  timeout "${SAN_LIMIT:-150}" compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 9 \
    python3 bench/splitk_decode.py --sanitize --fixups "$F" --out /tmp/san > "$OUT/sanitizer.log" 2>&1
  echo "compute-sanitizer memcheck (fix-up shapes) exit $?" | tee -a "$OUT/gpu.txt"
  grep -E "ERROR SUMMARY" "$OUT/sanitizer.log" | tail -1
fi
if [ -z "$SKIP_PYTEST" ]; then
  timeout "${PYTEST_LIMIT:-80}" python3 -m pytest -q -p no:cacheprovider tests/gpu/test_gpu_splitk_fixup.py -k gpu_fixup_shapes \
    > "$OUT/pytest.log" 2>&1
  echo "pytest exit $?" | tee -a "$OUT/gpu.txt"; tail -3 "$OUT/pytest.log"
fi
grep -E "^fixups|^  fx " "$OUT/fixup_time.log" 2>/dev/null
