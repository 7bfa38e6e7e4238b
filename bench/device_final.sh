#!/usr/bin/env bash
# The closing call on the GPU machine for a tree: every GPU test, compute-sanitizer memcheck
# over every kernel variant (bench/sanitize_gemm.py: base kernels, split-K, the fused epilogue,
# bias along M / in f16, batched), over the serial split-K and over split-K's workload, then
# the whole suite (bench/gemm_suite.py: squares, LLM prefill/decode, K-heavy/light, ragged,
# batched; f16 and bf16; cuBLAS interleaved in the same process).  From the repository root:
#   bash bench/device_final.sh
# The GPU tests alone take 3-5 minutes: SKIP_PYTEST=1 leaves them to a call of their own
# (bash bench/device_run.sh "pytest:tests/gpu").  DTYPES and ROUNDS set the suite's.
steps=()
[ -z "$SKIP_PYTEST" ] && steps+=("pytest:-x tests/gpu")
steps+=(
  "memcheck:sanitize_gemm.py"
  "memcheck:sanitize_gemm.py --short-a"
  "memcheck:sanitize_gemm.py --staged"
  "memcheck:splitk_serial.py --sanitize"
  "memcheck:gemm_suite.py --sanitize-splitk"
  "gemm_suite.py --dtypes ${DTYPES:-f16,bf16} --rounds ${ROUNDS:-5}"
)
exec bash bench/device_run.sh "${steps[@]}"
