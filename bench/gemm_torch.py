"""The proven GEMM on torch tensors: host microseconds per call against ``torch.matmul``,
device time, and the numerics against a float64 product.

For each shape and dtype: ``gemm(a, b)`` (a new torch output), ``gemm(a, b, out)``,
``torch.ops.layoutproof.gemm(a, b)`` (through the torch dispatcher, as compiled code calls
it), ``torch.matmul(a, b)`` and ``torch.matmul(a, b, out=c)``; each timed as the CPU time to
issue ``--reps`` calls after a synchronize (no synchronize inside, and few enough calls
that the launch queue never fills), the minimum over ``--rounds`` interleaved rounds.
Device time: CUDA events around ``--reps`` back-to-back calls, the median of three.  The
numerics: ``||C - A @ B|| / ||A @ B||`` against float64 on fresh N(0, 1) operands, ours and
torch's.

    python3 bench/gemm_torch.py [--shapes 512x512x512,...] [--out DIR]
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

SHAPES = "64x64x64,512x512x512,16x4096x4096,4096x4096x4096,8x512x512x512,1000x3000x777"


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
    args = ap.parse_args()
    import torch

    from layoutproof.gpu.host import runtime, torch_op

    gemm = runtime.gemm
    op = torch_op.gemm_op
    dev = torch.device("cuda")
    rows = []
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
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    for _ in range(args.reps):
                        f()
                    t1 = time.perf_counter()
                    best[nm] = min(best[nm], (t1 - t0) / args.reps * 1e6)
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
                f"{spec:>18} {dn:>4}  host us: gemm {best['gemm(a,b)']:6.1f} / out {best['gemm(a,b,out)']:6.1f}"
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
