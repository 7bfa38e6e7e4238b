"""The TMA-loaded wgmma kernel on the GPU: correctness (4 layouts, odd shapes, NaN-poisoned
outputs) and a quick speed comparison with the cp.async loader and cuBLAS."""

import sys

import cupy as cp

from layoutproof.gpu.host.runtime import gemm, tma_available
from layoutproof.gpu.kernels.wgmma import Sm90Config

sys.path.insert(0, "bench")
from gemm import bench  # noqa: E402

print("tma available:", tma_available(), flush=True)
rng = cp.random.default_rng(11)
worst, fails = 0.0, 0
for cfg in (Sm90Config(loader="tma"), Sm90Config(bm=256, bn=128, loader="tma")):
    for dt in (cp.float16, "bfloat16"):
        for m, n, k in ((1, 1, 1), (37, 45, 51), (128, 256, 64), (300, 517, 1000), (4095, 4097, 4093)):
            for ao in "CF":
                for bo in "CF":
                    a = rng.standard_normal((m, k), dtype=cp.float32).astype(dt)
                    b = rng.standard_normal((k, n), dtype=cp.float32).astype(dt)
                    a = cp.asfortranarray(a) if ao == "F" else a
                    b = cp.asfortranarray(b) if bo == "F" else b
                    out = cp.full((m, n), cp.nan, dtype=cp.float32)
                    gemm(a, b, out, config=cfg, out_dtype="f32")
                    ref = a.astype(cp.float64) @ b.astype(cp.float64)
                    err = float(cp.linalg.norm(out - ref) / cp.linalg.norm(ref))
                    bad = bool(cp.isnan(out).any()) or not err < 1e-4
                    fails += bad
                    worst = max(worst, err if err == err else 1.0)
                    if bad:
                        print("FAIL", cfg.key(), dt, m, n, k, ao, bo, err, flush=True)
print(f"tma correctness: {fails} failures, worst rel err {worst:.2e}", flush=True)
for s in (4096, 8192):
    for dt in (cp.float16, "bfloat16"):
        a = rng.standard_normal((s, s), dtype=cp.float32).astype(dt)
        b = rng.standard_normal((s, s), dtype=cp.float32).astype(dt)
        c = gemm(a, b)
        line = f"{s} {dt}:"
        for cfg in (Sm90Config(loader="tma"), Sm90Config(bm=256, bn=128, loader="tma"), Sm90Config()):
            t, _ = bench(cp, lambda: gemm(a, b, c, config=cfg), 10)
            line += f" {cfg.key()} {2 * s**3 / t / 1e12:.0f}"
        t, _ = bench(cp, lambda: cp.matmul(a, b), 10)
        print(line + f" | cuBLAS {2 * s**3 / t / 1e12:.0f} TFLOP/s", flush=True)
