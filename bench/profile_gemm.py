"""One launch of the proven GEMM for Nsight Compute (``ncu``): config and size from argv.

ncu --section WarpStateStats --section SchedulerStats python bench/profile_gemm.py 128x256x32/2x4/3 4096
"""

import sys

import cupy as cp

from layoutproof.gpu.cli import parse_config
from layoutproof.gpu.host.runtime import gemm

cfg = parse_config(sys.argv[1] if len(sys.argv) > 1 else "128x256x32/2x4/3")
n = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
rng = cp.random.default_rng(0)
a = rng.standard_normal((n, n), dtype=cp.float32).astype(cp.float16)
b = rng.standard_normal((n, n), dtype=cp.float32).astype(cp.float16)
c = gemm(a, b, config=cfg)
cp.cuda.Device().synchronize()
c = gemm(a, b, c, config=cfg)
cp.cuda.Device().synchronize()
print("done", cfg.key())
