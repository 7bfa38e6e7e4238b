"""The GEMM kernels as programmatic dependent launches, against stream order, in one process.

Every generated GEMM kernel starts with the grid dependency wait (``griddepcontrol.wait``,
proven first: its launch-ordering claim), so the runtime may launch it as a programmatic
dependent of the stream's previous kernel (``rule.PDL_PLAIN``): the launch overlaps that
kernel's tail.  For each shape (f16, N(0, 1) operands) this builds two plans of the same
kernel, one launched each way (``rule.PDL_PLAIN`` True and False while the plan is made),
and times, interleaved over ``--rounds`` rounds, CUDA events around ``--reps`` back-to-back
calls of each plan's direct launch and of ``torch.matmul(out=)`` on the same stream (the
device time per call of a stream of calls, launch gaps included); the median per call.
Both plans' outputs are checked against ``cupy.matmul`` and against each other.

    python3 bench/gemm_pdl.py [--shapes 64x11008x4096,...] [--rounds 9] [--out DIR]

A shape ``BxMxNxK`` is a batched product (B batches).  ``--split-gate ROWS`` compares the
split-K kernels (before a fix-up) launched as programmatic dependents for outputs of at most
``ROWS`` rows against stream order, on split shapes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

SHAPES = (
    "7x13x17,1x300x700,100x100x100,512x512x512,1024x1024x1024,16x4096x4096,64x9216x4096,"
    "64x11008x4096,128x9216x4096,2048x2048x2048,4096x4096x1024,8192x8192x256,4096x4096x4096,"
    "1000x3000x777,8x512x512x512"
)


def _shape(s: str):
    v = tuple(int(x) for x in s.lower().split("x"))
    if len(v) not in (3, 4):
        raise SystemExit(f"shape {s!r}: MxNxK or BxMxNxK")
    return v


def _plan(runtime, rule, a, b, c, pdl: bool, split_gate: int = 0):
    """A plan made with ``rule.PDL_PLAIN = pdl``; with ``split_gate``, the split kernels'
    gate instead (``SPLITK_MODEL["pdl_split_m"]``: ``split_gate`` rows where ``pdl``, else 0)."""
    old, gate = rule.PDL_PLAIN, rule.SPLITK_MODEL["pdl_split_m"]
    if split_gate:
        rule.SPLITK_MODEL["pdl_split_m"] = split_gate if pdl else 0
    else:
        rule.PDL_PLAIN = pdl
    try:
        p = runtime.plan_for(a, b, c)
    finally:
        rule.PDL_PLAIN, rule.SPLITK_MODEL["pdl_split_m"] = old, gate
    return p


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument(
        "--split-gate",
        type=int,
        default=0,
        help="compare the split kernels launched as programmatic dependents for outputs of at "
        "most this many rows against stream order (SPLITK_MODEL['pdl_split_m']) instead",
    )
    ap.add_argument("--out", default=os.environ.get("OUT", "bench/out/gemm_pdl"))
    args = ap.parse_args()

    import cupy as cp
    import torch
    from _timing import make

    from layoutproof.gpu.host import rule, runtime

    st = cp.cuda.Stream(non_blocking=True)
    torch.cuda.set_stream(torch.cuda.ExternalStream(st.ptr))
    rng = cp.random.default_rng(7)
    rows = []
    with st:
        for spec in args.shapes.split(","):
            v = _shape(spec)
            bt, (m, n, k) = (v[0], v[1:]) if len(v) == 4 else (0, v)
            sa, sb, sc = ((bt, m, k), (bt, k, n), (bt, m, n)) if bt else ((m, k), (k, n), (m, n))
            a, b = make(cp, sa, "f16", rng), make(cp, sb, "f16", rng)
            c_on, c_off = cp.full(sc, cp.nan, cp.float16), cp.full(sc, cp.nan, cp.float16)
            g = args.split_gate
            p_on, p_off = (
                _plan(runtime, rule, a, b, c_on, True, g),
                _plan(runtime, rule, a, b, c_off, False, g),
            )
            go_on, go_off = p_on.direct(), p_off.direct()
            if go_on is None or go_off is None:
                print(f"{spec}: no direct launch, skipped", flush=True)
                continue
            ptrs = (a.data.ptr, b.data.ptr)
            ref = cp.matmul(a, b)
            ta, tb = torch.from_dlpack(a), torch.from_dlpack(b)
            tc = torch.empty(sc, dtype=torch.float16, device="cuda")
            fns = {
                "pdl": lambda: go_on(*ptrs, c_on.data.ptr, st.ptr),
                "stream order": lambda: go_off(*ptrs, c_off.data.ptr, st.ptr),
                "torch": lambda: torch.matmul(ta, tb, out=tc),
            }
            for f in fns.values():
                f()
            st.synchronize()
            rf = ref.astype(cp.float32)
            scale = float(cp.abs(rf).max()) or 1.0
            err = {
                nm: float(cp.abs(x.astype(cp.float32) - rf).max()) / scale
                for nm, x in (("on", c_on), ("off", c_off))
            }
            same = bool(cp.array_equal(c_on, c_off))
            fl = 2.0 * m * n * k * max(bt, 1)
            reps = max(20, min(500, int(4e13 / fl)))
            times = {nm: [] for nm in fns}
            for _ in range(args.rounds):
                for nm, f in fns.items():
                    s, e = cp.cuda.Event(), cp.cuda.Event()
                    s.record(st)
                    for _ in range(reps):
                        f()
                    e.record(st)
                    e.synchronize()
                    times[nm].append(cp.cuda.get_elapsed_time(s, e) * 1e3 / reps)
            med = {nm: statistics.median(t) for nm, t in times.items()}
            kern = getattr(p_on, "kernel", None)
            row = dict(
                shape=spec,
                kernel=getattr(kern, "name", "?"),
                config=str(getattr(getattr(p_on, "config", None), "key", lambda: "?")()),
                programmatic=bool(getattr(kern, "programmatic", False)),
                us=med,
                times=times,
                err=err,
                identical=same,
                reps=reps,
            )
            rows.append(row)
            print(
                f"{spec:>16} [{row['config']}] pdl {med['pdl']:8.2f}  stream order {med['stream order']:8.2f}  "
                f"torch {med['torch']:8.2f} us  gain {med['stream order'] - med['pdl']:+.2f} us  "
                f"err {err['on']:.1e}/{err['off']:.1e} {'identical' if same else 'DIFFER'}",
                flush=True,
            )
            cp.get_default_memory_pool().free_all_blocks()
    print()
    print(
        f"{'shape':>16} {'pdl us':>9} {'order us':>9} {'torch us':>9} {'order/pdl':>9} {'torch/pdl':>9} {'torch/order':>11}"
    )
    for r in rows:
        u = r["us"]
        print(
            f"{r['shape']:>16} {u['pdl']:9.2f} {u['stream order']:9.2f} {u['torch']:9.2f} "
            f"{u['stream order'] / u['pdl']:9.3f} {u['torch'] / u['pdl']:9.3f} {u['torch'] / u['stream order']:11.3f}"
        )
    bad = [r["shape"] for r in rows if not r["identical"] or max(r["err"].values()) > 1e-2]
    print("outputs:", "all identical and within 1e-2 of cupy.matmul" if not bad else f"FAILED on {bad}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gemm_pdl.json").write_text(json.dumps(rows, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
