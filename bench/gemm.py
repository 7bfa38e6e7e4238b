"""The proven mma.sync GEMM on a GPU: correctness sweep, sanitizer, speed against cuBLAS.

Run on the GPU machine from the repository root (``bench/device_env.sh`` makes the
package importable without installing it)::

    python bench/gemm.py --out $OUT            # everything (about 5 minutes on an H100)
    python bench/gemm.py --quick               # a few shapes, one timing size

Sections (each writes JSON under --out and prints a short table at the end):

* ``correctness``: 50 random shapes (1, odd sizes, 4095x4097x4093, ...) x the four operand
  layouts (A row/column-major x B row/column-major) x f16 and bf16, fresh random inputs
  (never zeros), outputs poisoned with NaN before each run; relative Frobenius error
  against a float64 reference must be < 5e-3 (f16) / 2e-2 (bf16) and no NaN may survive;
* ``compile``: generate + prove + compile times, cold (empty caches) and from the caches;
* ``speed``: 4096^3, 8192^3 and 4095x4097x4093, f16 and bf16, median of event-timed runs
  of our kernel (autotuned config) and of cuBLAS (``cupy.matmul`` for f16, ``torch.matmul``
  for bf16 where CuPy has no bfloat16) in the same process; the ratio is cuBLAS time over
  ours (1.0 = cuBLAS speed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np


def _bf16_support(cp):
    try:
        cp.dtype("bfloat16")
        cp.zeros(2, dtype="bfloat16")
        return True
    except Exception:
        return False


class Ops:
    """Operand factory: CuPy arrays for f16 (and bf16 where CuPy has it), else torch bf16
    tensors viewed as 2-byte CuPy arrays (gemm's dtype='bf16')."""

    def __init__(self, cp):
        self.cp = cp
        self.cp_bf16 = _bf16_support(cp)
        try:
            import torch  # noqa: F401

            self.torch = torch
        except Exception:
            self.torch = None

    def make(self, shape, dtype, order, rng):
        cp = self.cp
        x32 = rng.standard_normal(shape, dtype=cp.float32)
        if dtype == "f16":
            x = x32.astype(cp.float16)
        elif self.cp_bf16:
            x = x32.astype("bfloat16")
        else:
            t = self.torch.from_dlpack(x32).to(self.torch.bfloat16)
            x = cp.from_dlpack(t.view(self.torch.int16))
        if order == "F":
            x = cp.asfortranarray(x)
        return x

    def to64(self, x, dtype):
        cp = self.cp
        if dtype == "f16" or self.cp_bf16:
            return x.astype(cp.float64)
        t = self.torch.from_dlpack(cp.ascontiguousarray(x)).view(self.torch.bfloat16)
        return cp.from_dlpack(t.to(self.torch.float32)).astype(cp.float64)

    def kw(self, dtype):
        return {} if (dtype == "f16" or self.cp_bf16) else {"dtype": "bf16"}


def correctness(cp, ops, gemm, n_shapes, log, paths=("wgmma", "mma.sync")):
    rng = cp.random.default_rng(20261123)
    prng = np.random.default_rng(7)
    shapes = [
        (1, 1, 1),
        (1, 7, 3),
        (5, 1, 9),
        (17, 33, 1),
        (4095, 4097, 4093),
        (128, 128, 32),
        (129, 127, 33),
        (256, 8, 4096),
        (3, 2000, 17),
        (1000, 3, 5),
    ]
    while len(shapes) < n_shapes:
        m, n, k = (int(prng.choice([prng.integers(1, 64), prng.integers(64, 1200)])) for _ in range(3))
        shapes.append((m, n, k))
    rows, fails = [], 0
    for path, dtype in [(p, d) for p in paths for d in ("f16", "bf16")]:
        tol = 5e-3 if dtype == "f16" else 2e-2
        for m, n, k in shapes[:n_shapes]:
            for ao, bo in (("C", "C"), ("C", "F"), ("F", "C"), ("F", "F")):
                a = ops.make((m, k), dtype, ao, rng)
                b = ops.make((k, n), dtype, bo, rng)
                ref = ops.to64(a, dtype) @ ops.to64(b, dtype)
                out = cp.full((m, n), cp.nan, dtype=cp.float32)
                gemm(a, b, out, out_dtype="f32", path=path, **ops.kw(dtype))
                cp.cuda.Device().synchronize()
                nan = int(cp.isnan(out).sum())
                den = float(cp.linalg.norm(ref)) or 1.0
                err = float(cp.linalg.norm(out.astype(cp.float64) - ref)) / den
                # the low-precision output too (f16 / bf16 epilogue)
                out2 = gemm(a, b, path=path, **ops.kw(dtype))
                o2 = ops.to64(out2, dtype)
                err2 = float(cp.linalg.norm(o2 - ref)) / den
                ok = nan == 0 and err < tol and err2 < tol and not np.isnan(err2)
                fails += not ok
                rows.append(
                    dict(
                        path=path,
                        dtype=dtype,
                        m=m,
                        n=n,
                        k=k,
                        a=ao,
                        b=bo,
                        err_f32=err,
                        err_out=err2,
                        nan=nan,
                        ok=ok,
                    )
                )
                if not ok:
                    print(
                        f"FAIL {path} {dtype} {m}x{n}x{k} A{ao} B{bo}: err {err:.2e} / {err2:.2e}, {nan} NaN",
                        flush=True,
                    )
    log["correctness"] = rows
    worst = {d: max(r["err_f32"] for r in rows if r["dtype"] == d) for d in ("f16", "bf16")}
    return fails, len(rows), worst


def compile_times(cp, log):
    import tempfile

    from layoutproof.gpu import codegen, runtime
    from layoutproof.gpu.config import GemmConfig, GemmProblem

    os.environ["LAYOUTPROOF_CACHE"] = tempfile.mkdtemp()
    cfg = GemmConfig(bm=128, bn=128, bk=32, warps_m=2, warps_n=2, stages=3)
    prob = GemmProblem("k", "n", "f16", "f16")
    codegen._MEMO.clear()
    runtime._KERNELS.clear()
    runtime._MODULES.clear()
    t0 = time.perf_counter()
    k = runtime.kernel_for(cfg, prob)
    t1 = time.perf_counter()
    runtime.compile_kernel(k)
    t2 = time.perf_counter()
    # from the caches: a new process would hit the disk caches; here clear memory, keep disk
    codegen._MEMO.clear()
    runtime._KERNELS.clear()
    runtime._MODULES.clear()
    t3 = time.perf_counter()
    k2 = runtime.kernel_for(cfg, prob)
    runtime.compile_kernel(k2)
    t4 = time.perf_counter()
    t5 = time.perf_counter()
    runtime.compile_kernel(runtime.kernel_for(cfg, prob))
    t6 = time.perf_counter()
    d = dict(
        generate_prove_s=t1 - t0,
        compile_s=t2 - t1,
        cold_total_s=t2 - t0,
        disk_cache_s=t4 - t3,
        memory_cache_s=t6 - t5,
        obligations=len(k.proofs),
    )
    log["compile"] = d
    return d


def bench(cp, fn, reps, batches=7):
    """Median over ``batches`` of the mean time of ``reps`` back-to-back launches (events
    around each batch), after a warm-up batch: the same method for ours and cuBLAS."""
    for _ in range(3):
        fn()
    cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    ts = []
    for _ in range(batches):
        s.record()
        for _ in range(reps):
            fn()
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) / 1e3 / reps)
    ts.sort()
    return ts[len(ts) // 2], ts


def speed(
    cp,
    ops,
    gemm,
    autotune,
    sizes,
    reps,
    log,
    configs=None,
    dtypes=("f16", "bf16"),
    paths=("wgmma", "mma.sync"),
    layouts=("CC", "CF"),
):
    from layoutproof.gpu import runtime

    rng = cp.random.default_rng(99)
    rows = log.setdefault("speed", [])
    for path, lay in [(p, la) for p in paths for la in layouts]:
        for dtype in dtypes:
            for m, n, k in sizes:
                a = ops.make((m, k), dtype, lay[0], rng)
                b = ops.make((k, n), dtype, lay[1], rng)
                cfg = "auto" if autotune is not None else None
                kw = dict(ops.kw(dtype), path=path, config=cfg)
                c = gemm(a, b, **kw)
                used = runtime.last_launch["config"].key()
                t_ours, _ = bench(cp, lambda: gemm(a, b, c, **kw), reps)
                if dtype == "f16" or ops.cp_bf16:
                    t_ref, _ = bench(cp, lambda: cp.matmul(a, b), reps)
                    ref_name = "cupy.matmul (cuBLAS)"
                else:
                    torch = ops.torch
                    ta = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                    tb = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
                    t_ref, _ = bench(cp, lambda: torch.matmul(ta, tb), reps)
                    ref_name = "torch.matmul (cuBLAS)"
                fl = 2.0 * m * n * k
                row = dict(
                    path=path,
                    layout=f"A{lay[0]} B{lay[1]}",
                    dtype=dtype,
                    m=m,
                    n=n,
                    k=k,
                    config=used,
                    ours_ms=t_ours * 1e3,
                    ref_ms=t_ref * 1e3,
                    ours_tflops=fl / t_ours / 1e12,
                    ref_tflops=fl / t_ref / 1e12,
                    ratio=t_ref / t_ours,
                    reference=ref_name,
                )
                rows.append(row)
                print(
                    f"speed {path} A{lay[0]}B{lay[1]} {dtype} {m}x{n}x{k}: ours {row['ours_tflops']:.0f} TFLOP/s "
                    f"({used}), cuBLAS {row['ref_tflops']:.0f}, ratio {row['ratio']:.3f}",
                    flush=True,
                )
    return rows


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.environ.get("OUT", "build/bench-gemm"))
    p.add_argument("--quick", action="store_true")
    p.add_argument("--shapes", type=int, default=50)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--skip", action="append", default=[], help="correctness|compile|speed")
    p.add_argument("--no-autotune", action="store_true")
    p.add_argument("--sizes", default=None, help="MxNxK,MxNxK,... (speed section)")
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("--paths", default="wgmma,mma.sync")
    p.add_argument("--layouts", default="CC,CF", help="A and B orders: C row-major, F column-major")
    args = p.parse_args(argv)
    import cupy as cp

    from layoutproof.gpu.runtime import autotune, gemm

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"]
    dev = dev.decode() if isinstance(dev, bytes) else str(dev)
    log = {"device": dev, "cupy": cp.__version__, "date": time.strftime("%Y-%m-%d %H:%M")}
    ops = Ops(cp)
    log["cupy_bfloat16"] = ops.cp_bf16
    summary = []
    try:
        if "compile" not in args.skip:
            d = compile_times(cp, log)
            summary.append(
                f"compile: generate+prove {d['generate_prove_s']:.2f} s + compile "
                f"{d['compile_s']:.2f} s cold; {d['disk_cache_s'] * 1e3:.1f} ms from "
                f"disk cache, {d['memory_cache_s'] * 1e3:.2f} ms from memory "
                f"({d['obligations']} obligations)"
            )
        if "correctness" not in args.skip:
            fails, total, worst = correctness(
                cp, ops, gemm, 8 if args.quick else args.shapes, log, paths=args.paths.split(",")
            )
            summary.append(
                f"correctness: {total - fails}/{total} passed; worst rel. error "
                f"f16 {worst['f16']:.2e}, bf16 {worst['bf16']:.2e}"
            )
        if "speed" not in args.skip:
            sizes = (
                [(4096, 4096, 4096)]
                if args.quick
                else [(4096, 4096, 4096), (8192, 8192, 8192), (4095, 4097, 4093)]
            )
            if args.sizes:
                sizes = [tuple(int(v) for v in s.split("x")) for s in args.sizes.split(",")]
            rows = speed(
                cp,
                ops,
                gemm,
                None if args.no_autotune else autotune,
                sizes,
                args.reps,
                log,
                dtypes=args.dtypes.split(","),
                paths=args.paths.split(","),
                layouts=args.layouts.split(","),
            )
            for r in rows:
                summary.append(
                    f"{r['path']:8s} {r['layout']} {r['dtype']:5s} {r['m']}x{r['n']}x{r['k']:<5d} ours "
                    f"{r['ours_tflops']:6.1f} TFLOP/s  cuBLAS {r['ref_tflops']:6.1f}  "
                    f"ratio {r['ratio']:.3f}  [{r['config']}]"
                )
    finally:
        (out / "gemm_bench.json").write_text(json.dumps(log, indent=1, default=str))
        print(f"\n== {dev} ==")
        for s in summary:
            print(s)
    return 0


if __name__ == "__main__":
    sys.exit(main())
