"""Batched products with few rows per matrix (``B x [M x N x K]``, M at most 32, A and B
both batched): the batched rule's pick, which cuts A's TMA box to the rows
(``rule.SHORT_A_RULE``), against the same rule without the box, and ``torch.matmul`` (bmm).

On the GPU machine, from the repository root (after ``source bench/device_env.sh``)::

    python3 bench/batched_decode.py
    python3 bench/batched_decode.py --shapes 8x16x4096x14336,64x1x128x4096 --dtypes bf16

Method: torch tensors in, a given output; each contender is checked against float64
(relative Frobenius error) and then timed in ``--rounds`` interleaved rounds (order
rotated), one batch of ``--reps`` calls between CUDA events per round; the median per
contender.  JSON goes to ``$OUT/batched_decode`` (or ``bench/out/batched_decode``).
"""

from __future__ import annotations

import argparse
import json
import statistics

import _timing as gs

SHAPES = ",".join(
    [
        "8x16x4096x14336",
        "8x16x14336x4096",
        "8x32x4096x14336",
        "64x1x128x4096",
        "16x32x2048x4096",
        "32x8x4096x4096",
        "8x4x14336x4096",
        "16x16x4096x4096",
    ]
)


def _request(rule, batch, m, n, k):
    a = rule.OperandFacts((m, k), (k * 2, 2), 2, 0, batch, m * k * 2)
    b = rule.OperandFacts((k, n), (n * 2, 2), 2, 0, batch, k * n * 2)
    return rule.GemmRequest(a, b, "f16", "f16", 2, batch=batch)


def picks(shape):
    """(the rule's batched pick, the same without A's short box) for ``B x [M x N x K]``."""
    from layoutproof.gpu.host import rule

    dev = rule.DeviceFacts(cc="90", sms=132, tma=True)
    now = rule.decide_batched(_request(rule, *shape), dev).launch.config
    saved = rule.SHORT_A_RULE["rows"]
    rule.SHORT_A_RULE["rows"] = ()
    try:
        before = rule.decide_batched(_request(rule, *shape), dev).launch.config
    finally:
        rule.SHORT_A_RULE["rows"] = saved
    return now, before


def row(torch, shape, dt, args):
    import cupy as cp

    from layoutproof.gpu.host import runtime

    batch, m, n, k = shape
    g = torch.Generator(device="cuda").manual_seed(5)
    tdt = torch.float16 if dt == "f16" else torch.bfloat16
    a = torch.randn(batch, m, k, device="cuda", generator=g).to(tdt)
    b = torch.randn(batch, k, n, device="cuda", generator=g).to(tdt)
    ref = torch.matmul(a.double(), b.double())
    out = torch.empty(batch, m, n, device="cuda", dtype=tdt)
    now, before = picks(shape)
    fns = {
        "rule": lambda: runtime.gemm(a, b, out, config=now),
        "no box": lambda: runtime.gemm(a, b, out, config=before),
        "torch": lambda: torch.matmul(a, b, out=out),
    }
    err = {}
    for name, fn in fns.items():
        out.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        err[name] = float(((out.double() - ref).norm() / ref.norm()).item())
    t = {name: [] for name in fns}
    for rnd in range(args.rounds):
        for name in gs.rotated(list(fns), rnd):
            t[name].append(gs.event_batch(cp, fns[name], args.reps)[0] * 1e6)
    us = {name: statistics.median(v) for name, v in t.items()}
    return dict(dtype=dt, shape=shape, rule=now.key(), before=before.key(), us=us, us_all=t, err=err)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--shapes", default=SHAPES, help="BxMxNxK,...")
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    import torch

    out = gs.out_dir("batched_decode", args.out)
    rows = []
    for dt in args.dtypes.split(","):
        for shape in gs.shapes_arg(args.shapes):
            r = row(torch, shape, dt, args)
            rows.append(r)
            us, (bt, m, n, k) = r["us"], shape
            print(
                f"{dt} {bt}x[{m}x{n}x{k}] torch {us['torch']:.1f} us; rule {us['rule']:.1f} "
                f"({us['torch'] / us['rule']:.3f}, {r['rule']}); no box {us['no box']:.1f} "
                f"({us['torch'] / us['no box']:.3f}, {r['before']}); err {max(r['err'].values()):.1e}",
                flush=True,
            )
            (out / "batched_decode.json").write_text(json.dumps(rows, indent=1, default=str))
    bad = [r for r in rows if not max(r["err"].values()) <= gs.tol(r["dtype"])]  # NaN: bad
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
