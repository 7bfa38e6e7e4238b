"""The proven GEMM on torch tensors: host microseconds per call against ``torch.matmul``,
device time, and the numerics against a float64 product.

For each shape and dtype: ``gemm(a, b)`` (a new torch output; as shipped, with the native
torch front of :mod:`layoutproof.gpu.host.torch_native` built before the timing, and again
with the front set aside: the Python path alone), ``gemm(a, b, out)``,
``torch.ops.layoutproof.gemm(a, b)`` (through the torch dispatcher, as compiled code calls
it), ``torch.matmul(a, b)`` and ``torch.matmul(a, b, out=c)``; each timed as the CPU time to
issue ``--reps`` calls after a synchronize (no synchronize inside, and few enough calls
that the launch queue never fills), the minimum over ``--rounds`` interleaved rounds.
Device time: CUDA events around ``--reps`` back-to-back calls, the median of three.  The
numerics: ``||C - A @ B|| / ||A @ B||`` against float64 on fresh N(0, 1) operands, ours and
torch's.

    python3 bench/gemm_torch.py [--shapes 512x512x512,...] [--out DIR]

``--tiny`` measures the tiny-shape path instead (:mod:`layoutproof.gpu.host.tiny`): for each
of ``--tiny-shapes`` (f16, fresh operands; ``T`` after a shape makes B column-major, ``O``
offsets A by one element, so the tiled path must stage it), the GPU time per call of
``gemm`` as routed, the tiny kernel, the tiled plans (``path="wgmma"``),
``torch.matmul(out=)`` and ``cupy.matmul(out=)`` on the same memory, each as CUDA events
around ``--reps`` calls queued behind ``torch.cuda._sleep`` (so the host's issue rate is
not what is timed), the median of three; and the host time per call of ``gemm(a, b)``
against ``torch.matmul(a, b)``.  ``--sweep`` adds the crossover of the tiny kernel and the
tiled plans over growing volumes (the measurement behind ``tiny.TINY_VOLUME``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

SHAPES = "64x64x64,512x512x512,16x4096x4096,4096x4096x4096,8x512x512x512,1000x3000x777,1000x777x3000,512x512x500,100x3000x777"


TINY_SHAPES = (
    "1x1x1,7x13x17,7x13x17O,3x5x1000,16x16x16,33x47x65T,64x64x64,1x300x700,100x100x100,"
    "128x128x128,8x512x512,1x1024x1024"
)
SWEEP = (
    "48x48x48,64x64x64,80x80x80,96x96x96,112x112x112,128x128x128,160x160x160,192x192x192,"
    "256x256x256,1x512x512,1x1024x1024,1x2048x2048,16x256x256,16x512x512,16x1024x1024,"
    "64x64x1024,256x256x16,32x32x4096"
)


def _gpu_us(torch, fns, reps, sleep=True):
    """GPU microseconds per call of each of ``fns``: CUDA events around ``reps`` calls queued
    behind a sleep kernel (the host enqueues them all before the first runs), median of 3.
    ``sleep=False``: no sleep, so a call costs the larger of its host and device time."""
    out = {}
    for nm, f in fns.items():
        f()
        ts = []
        for _ in range(3):
            torch.cuda.synchronize()
            if sleep:  # longer than the host needs to enqueue
                torch.cuda._sleep(int(reps * 40e-6 * 1.9e9))
            e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            e0.record()
            for _ in range(reps):
                f()
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1) / reps * 1e3)
        out[nm] = statistics.median(ts)
    return out


def _host_us(torch, fns, reps, rounds):
    best = {nm: float("inf") for nm in fns}
    for _ in range(rounds):
        for nm, f in fns.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(reps):
                f()
            best[nm] = min(best[nm], (time.perf_counter() - t0) / reps * 1e6)
    return best


def _tiny_operands(torch, spec, dev):
    flags = spec.lstrip("0123456789x")
    m, n, k = (int(x) for x in spec[: len(spec) - len(flags)].split("x"))
    g = torch.Generator(device=dev).manual_seed(m * 131 + n * 7 + k)
    a = torch.randn(m * k + 1, device=dev, generator=g).half()
    a = a[1:] if "O" in flags else a[:-1]
    a = a.view(m, k)
    b = torch.randn(n, k, device=dev, generator=g).half().t() if "T" in flags else None
    if b is None:
        b = torch.randn(k, n, device=dev, generator=g).half()
    return (m, n, k), a, b


def tiny_main(args) -> int:
    import cupy
    import torch

    from layoutproof.gpu.host import runtime, tiny

    gemm = runtime.gemm
    dev = torch.device("cuda")
    reps = min(args.reps, 100)
    rows = []
    print(f"TINY_VOLUME = {tiny.TINY_VOLUME}")
    print(
        f"{'shape':>14} {'route':>6}  GPU us: {'gemm':>6} {'tiny':>6} {'tiled':>6} {'torch':>6} {'cupy':>6}"
        f"   host us: {'gemm':>5} {'matmul':>6}   err"
    )
    for spec in args.tiny_shapes.split(","):
        (m, n, k), a, b = _tiny_operands(torch, spec, dev)
        out = torch.empty(m, n, device=dev, dtype=torch.float16)
        out_t = torch.empty_like(out)
        ca, cb, co = (cupy.from_dlpack(x) for x in (a, b, out_t))
        gemm(a, b, out)
        route = type(runtime.last_launch["plan"]).__name__
        ref = a.double() @ b.double()
        err = float((out.double() - ref).norm() / max(ref.norm(), 1e-30))
        fns = {
            "gemm": lambda: gemm(a, b, out),
            "tiny": lambda: gemm(a, b, out, path="tiny"),
            "tiled": lambda: gemm(a, b, out, path="wgmma"),
            "torch": lambda: torch.matmul(a, b, out=out_t),
            "cupy": lambda: cupy.matmul(ca, cb, out=co),
        }
        gpu = _gpu_us(torch, fns, reps)
        host = _host_us(
            torch, {"gemm(a,b)": lambda: gemm(a, b), "matmul(a,b)": lambda: torch.matmul(a, b)}, reps, 5
        )
        rows.append(dict(shape=spec, route=route, gpu_us=gpu, host_us=host, rel_err=err))
        print(
            f"{spec:>14} {route[:6]:>6}  GPU us: {gpu['gemm']:6.1f} {gpu['tiny']:6.1f} {gpu['tiled']:6.1f} "
            f"{gpu['torch']:6.1f} {gpu['cupy']:6.1f}   host us: {host['gemm(a,b)']:5.1f} "
            f"{host['matmul(a,b)']:6.1f}   {err:.1e}",
            flush=True,
        )
    if args.sweep:
        print("crossover: GPU us of the tiny kernel against the tiled plans (f16, row-major)")
        for spec in (SWEEP if args.sweep == "default" else args.sweep).split(","):
            (m, n, k), a, b = _tiny_operands(torch, spec, dev)
            out = torch.empty(m, n, device=dev, dtype=torch.float16)
            gpu = _gpu_us(
                torch,
                {
                    "tiny": lambda: gemm(a, b, out, path="tiny"),
                    "tiled": lambda: gemm(a, b, out, path="wgmma"),
                },
                reps,
            )
            vol = m * n * k
            rows.append(dict(sweep=spec, volume=vol, gpu_us=gpu))
            print(
                f"{spec:>14} volume {vol:>10}  tiny {gpu['tiny']:7.1f}  tiled {gpu['tiled']:7.1f}", flush=True
            )
    if args.kw:
        from layoutproof.gpu.kernels.tiny import TinyConfig

        print(
            "warps splitting K: GPU us of the tiny kernel (8-column warps) with kw = 1 .. 16 warps, "
            "ku = 2 and 4 k-steps unrolled (f16, row-major)"
        )
        for spec in args.kw.split(","):
            (m, n, k), a, b = _tiny_operands(torch, spec, dev)
            out = torch.empty(m, n, device=dev, dtype=torch.float16)
            ca, cb, co = (cupy.from_dlpack(x) for x in (a, b, out))
            plans = {
                f"kw{kw}/ku{ku}": tiny.TinyPlan(ca, cb, co, config=TinyConfig(1, kw, ku=ku))
                for kw in (1, 2, 4, 8, 16)
                for ku in (2, 4)
            }
            gpu = _gpu_us(torch, {kw: (lambda p=p: p(ca, cb, co)) for kw, p in plans.items()}, reps)
            rows.append(dict(kw_sweep=spec, gpu_us=gpu))
            print(f"{spec:>14} " + "  ".join(f"{c} {t:6.1f}" for c, t in gpu.items()), flush=True)
    od = Path(args.out)
    od.mkdir(parents=True, exist_ok=True)
    (od / "gemm_torch_tiny.json").write_text(json.dumps(rows, indent=1))
    return 0


def _shape(s: str):
    p = tuple(int(x) for x in s.split("x"))
    return p if len(p) == 3 else (p[1], p[2], p[3], p[0])  # (m, n, k[, batch])


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/out/gemm_torch"))
    ap.add_argument("--tiny", action="store_true", help="the tiny-shape path (module docstring)")
    ap.add_argument("--tiny-shapes", default=TINY_SHAPES)
    ap.add_argument("--sweep", default="", help="shapes of the tiny / tiled crossover")
    ap.add_argument("--kw", default="", help="shapes timed with each count of warps splitting K")
    args = ap.parse_args()
    if args.tiny:
        return tiny_main(args)
    import torch

    from layoutproof.gpu.host import runtime, torch_native, torch_op

    gemm = runtime.gemm
    op = torch_op.gemm_op
    dev = torch.device("cuda")
    rows = []
    x = torch.randn(64, 64, device=dev).half()
    gemm(x, x)  # a first torch entry starts building the native front; wait for it
    torch_native.wait(900)
    hot = list(torch_op.HOT)  # "python" rows time the Python path with the front set aside
    print(f"native torch front: {torch_native.status()}", flush=True)
    for spec in args.shapes.split(","):
        sh = _shape(spec)
        m, n, k = sh[:3]
        batch = sh[3] if len(sh) == 4 else None
        for dn in args.dtypes.split(","):
            dt = {"f16": torch.float16, "bf16": torch.bfloat16}[dn]
            lead = (batch,) if batch else ()
            a = torch.randn(*lead, m, k, device=dev).to(dt)
            b = torch.randn(*lead, k, n, device=dev).to(dt)
            ref = torch.matmul(a.double(), b.double())
            c = gemm(a, b)
            ct = torch.matmul(a, b)
            torch.cuda.synchronize()
            err = float((c.double() - ref).norm() / ref.norm())
            err_t = float((ct.double() - ref).norm() / ref.norm())
            out, out_t = torch.empty_like(c), torch.empty_like(ct)
            op(a, b)
            fns = {
                "gemm(a,b)": lambda: gemm(a, b),
                "gemm(a,b) python": lambda: gemm(a, b),
                "gemm(a,b,out)": lambda: gemm(a, b, out),
                "op(a,b)": lambda: op(a, b),
                "matmul(a,b)": lambda: torch.matmul(a, b),
                "matmul(a,b,out)": lambda: torch.matmul(a, b, out=out_t),
            }
            best = {nm: float("inf") for nm in fns}
            for rnd in range(args.rounds):
                names = list(fns)
                names = names[rnd % len(names) :] + names[: rnd % len(names)]
                for nm in names:
                    f = fns[nm]
                    torch_op.HOT[:] = [] if nm.endswith("python") else hot
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    for _ in range(args.reps):
                        f()
                    t1 = time.perf_counter()
                    best[nm] = min(best[nm], (t1 - t0) / args.reps * 1e6)
            torch_op.HOT[:] = hot
            torch.cuda.synchronize()
            dev_us = {}
            for nm in ("gemm(a,b,out)", "matmul(a,b,out)"):
                f = fns[nm]
                ts = []
                for _ in range(3):
                    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    e0.record()
                    for _ in range(args.reps):
                        f()
                    e1.record()
                    e1.synchronize()
                    ts.append(e0.elapsed_time(e1) / args.reps * 1e3)
                dev_us[nm] = statistics.median(ts)
            row = dict(
                shape=spec,
                dtype=dn,
                host_us=best,
                device_us=dev_us,
                rel_err=err,
                rel_err_torch=err_t,
                host_ratio=best["gemm(a,b)"] / best["matmul(a,b)"],
                host_ratio_out=best["gemm(a,b,out)"] / best["matmul(a,b,out)"],
            )
            rows.append(row)
            print(
                f"{spec:>18} {dn:>4}  host us: gemm {best['gemm(a,b)']:6.1f} (python "
                f"{best['gemm(a,b) python']:6.1f}) / out {best['gemm(a,b,out)']:6.1f}"
                f" / op {best['op(a,b)']:6.1f}   matmul {best['matmul(a,b)']:6.1f} / out "
                f"{best['matmul(a,b,out)']:6.1f}   device us {dev_us['gemm(a,b,out)']:8.1f} vs "
                f"{dev_us['matmul(a,b,out)']:8.1f}   err {err:.2e} (torch {err_t:.2e})",
                flush=True,
            )
    # where a torch call's host time goes (512^3 f16, given output): the plan's launch alone,
    # the same plan through gemm on CuPy views of the same memory, torch's allocation
    a = torch.randn(512, 512, device=dev).half()
    b = torch.randn(512, 512, device=dev).half()
    out = gemm(a, b)
    ent = next(e for e in torch_op._ENTRIES.values() if e.out_shape == (512, 512) and not e.fold)
    va, vb, vo = ent.va(a), ent.vb(b), ent.vo(out)
    parts = {
        "torch gemm(a,b,out)": lambda: gemm(a, b, out),
        "cupy gemm(a,b,out)": lambda: gemm(va, vb, vo),
        "plan._run": lambda: ent.plan._run(va, vb, vo, None, None, 1.0, 0.0),
        "torch.empty": lambda: torch.empty((512, 512), dtype=torch.float16, device=dev),
        "matmul(a,b,out)": lambda: torch.matmul(a, b, out=out),
    }
    best = {nm: float("inf") for nm in parts}
    for _ in range(args.rounds):
        for nm, f in parts.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(args.reps):
                f()
            best[nm] = min(best[nm], (time.perf_counter() - t0) / args.reps * 1e6)
    print("host us, 512^3 f16: " + ", ".join(f"{k} {v:.1f}" for k, v in best.items()))
    rows.append(dict(breakdown_512_f16=best))
    od = Path(args.out)
    od.mkdir(parents=True, exist_ok=True)
    (od / "gemm_torch.json").write_text(json.dumps(rows, indent=1))
    worst = max(r.get("host_ratio", 0) for r in rows)
    worst_out = max(r.get("host_ratio_out", 0) for r in rows)
    print(f"host time ours / torch.matmul: worst {worst:.3f} (new output), {worst_out:.3f} (given output)")
    print(f"largest relative error: {max(r.get('rel_err', 0) for r in rows):.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
