"""Split-K with the serial reduction: correctness, sanitizer workload, timing.

On the GPU machine, from the repository root (after ``source bench/device_env.sh``):

    python3 bench/splitk_serial.py --check              # NaN-poisoned outputs vs float64
    python3 bench/splitk_serial.py --sanitize           # a few launches, for compute-sanitizer
    python3 bench/splitk_serial.py --time 1x4096x4096,16x4096x4096   # JSON: bench/out/splitk_serial

``--check``: every serial split-K configuration below against a float64 reference, f16
and bf16 in, on shapes with one tile row (decode), several tile rows (two warpgroup
counters with a 128-row base), ragged M/N/K and chunks left empty (K < 64 S); each case is
called three times with new data and the output poisoned with NaN before every call (the
second and third calls run on the counters the first left: a counter not reset leaves NaN
or a wrong sum), and with the fused epilogue (bias + relu/silu/gelu, alpha/beta with C).
``--time``: per shape, the default pick (graph replay and eager, cuBLAS interleaved), the
same split with the fix-up kernel (``reduction="kernel"``) and the best unsplit kernel.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys

import _timing as gs


def configs():
    from layoutproof.gpu.kernels.splitk import SplitKConfig
    from layoutproof.gpu.kernels.wgmma import Sm90Config

    ws = dict(loader="tma", schedule="ws")
    return [
        SplitKConfig(Sm90Config(bm=64, bn=256, stages=5, **ws), 8, "serial"),
        SplitKConfig(Sm90Config(bm=64, bn=128, stages=8, **ws), 4, "serial"),
        SplitKConfig(Sm90Config(bm=64, bn=64, stages=8, **ws), 3, "serial"),
        SplitKConfig(Sm90Config(bm=128, bn=128, stages=6, **ws), 2, "serial"),
    ]


CHECK_SHAPES = [
    (1, 4096, 4096),
    (16, 4096, 1024),
    (130, 520, 2048),
    (37, 1000, 3000),
    (16, 100, 130),
    (200, 264, 520),
]


def reference(cp, a, b, bias=None, act=None, alpha=1.0, beta=0.0, cin=None):
    r = cp.matmul(a.astype(cp.float64), b.astype(cp.float64)) * alpha
    if cin is not None:
        r = r + beta * cin.astype(cp.float64)
    if bias is not None:
        r = r + bias.astype(cp.float64)[None, :]
    if act == "relu":
        r = cp.maximum(r, 0)
    elif act == "silu":
        r = r / (1 + cp.exp(-r))
    elif act == "gelu":
        from cupyx.scipy.special import erf

        r = 0.5 * r * (1 + erf(r / 2**0.5))
    return r


def check(cp, log):
    from layoutproof.gpu.host import runtime
    from layoutproof.gpu.host.runtime import gemm

    rng = cp.random.default_rng(7)
    rows = log.setdefault("check", [])
    bad = 0
    for cfg in configs():
        for dt in ("f16", "bf16"):
            for m, n, k in CHECK_SHAPES:
                for ep in (None, "relu", "silu", "gelu", "ab"):
                    if ep is not None and (dt == "bf16" or cfg.base.bm != 64 or cfg.base.bn == 64):
                        continue  # the epilogue variants once per config (f16)
                    errs = []
                    for call in range(3):
                        a, b = gs.make(cp, (m, k), dt, rng), gs.make(cp, (k, n), dt, rng)
                        out = cp.full((m, n), cp.nan, dtype=a.dtype)
                        kw = {}
                        bias = cin = None
                        alpha, beta, act = 1.0, 0.0, None
                        if ep is not None:
                            bias = rng.standard_normal(n, dtype=cp.float32)
                            act = "relu" if ep == "ab" else ep
                            kw = dict(bias=bias, activation=act)
                            if ep == "ab":
                                alpha, beta = 0.75, -1.5
                                cin = gs.make(cp, (m, n), dt, rng)
                                kw.update(alpha=alpha, beta=beta, c=cin)
                        gemm(a, b, out, config=cfg, **kw)
                        cp.cuda.Device().synchronize()
                        got = runtime.last_launch["config"]
                        ref = reference(cp, a, b, bias, act, alpha, beta, cin)
                        nan = int(cp.isnan(out).sum())
                        d = out.astype(cp.float64) - ref
                        err = float(cp.linalg.norm(d) / max(float(cp.linalg.norm(ref)), 1e-30))
                        errs.append(err)
                        same = (
                            got.key() == cfg.key()
                            if ep is None
                            else (getattr(got, "splits", 1) == cfg.splits and got.reduction == "serial")
                        )
                        ok = nan == 0 and err < (1e-2 if dt == "f16" else 3e-2) and same
                        if not ok:
                            bad += 1
                        rows.append(
                            dict(
                                config=got.key(),
                                dtype=dt,
                                m=m,
                                n=n,
                                k=k,
                                epilogue=ep,
                                call=call,
                                nan=nan,
                                rel_err=err,
                                ok=ok,
                            )
                        )
                    print(
                        f"check {cfg.key():36s} {dt:4s} {m}x{n}x{k} ep={ep}: worst rel err "
                        f"{max(errs):.2e} over 3 calls{'' if all(r['ok'] for r in rows[-3:]) else '  FAIL'}",
                        flush=True,
                    )
    print(f"check: {len(rows) - bad}/{len(rows)} calls correct", flush=True)
    return bad


def sanitize(cp):
    from layoutproof.gpu.host.runtime import gemm

    rng = cp.random.default_rng(3)
    for cfg in configs():
        for m, n, k, ep in ((16, 4096, 4096, None), (37, 1000, 3000, "ab"), (16, 100, 130, "gelu")):
            a, b = gs.make(cp, (m, k), "f16", rng), gs.make(cp, (k, n), "f16", rng)
            out = cp.zeros((m, n), dtype=a.dtype)
            kw = {}
            if ep is not None:
                kw = dict(
                    bias=rng.standard_normal(n, dtype=cp.float32), activation="relu" if ep == "ab" else ep
                )
                if ep == "ab":
                    kw.update(alpha=0.5, beta=2.0, c=gs.make(cp, (m, n), "f16", rng))
            for _ in range(2):
                gemm(a, b, out, config=cfg, **kw)
            cp.cuda.Device().synchronize()
            print(f"sanitize {cfg.key()} {m}x{n}x{k} ep={ep}: 2 launches", flush=True)


def timing(cp, shapes, args, log):
    from dataclasses import replace

    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host import runtime
    from layoutproof.gpu.host.rule import choose_config, hopper_candidates
    from layoutproof.gpu.host.runtime import gemm

    rng = cp.random.default_rng(11)
    rows = log.setdefault("time", [])
    for dt in args.dtypes.split(","):
        for m, n, k in shapes:
            a, b = gs.make(cp, (m, k), dt, rng), gs.make(cp, (k, n), dt, rng)
            ref = cp.matmul(a, b)
            c = cp.full((m, n), cp.nan, dtype=a.dtype)
            gemm(a, b, c)
            cp.cuda.Device().synchronize()
            pick = runtime.last_launch["config"]
            err = gs.rel_err(cp, c, ref)
            variants = {"default": None}
            if getattr(pick, "splits", 1) > 1:
                variants["fixup_kernel"] = replace(pick, reduction="kernel")
            variants["unsplit"] = choose_config(
                m, n, k, GemmProblem(), hopper=True, tma=True, candidates=hopper_candidates(True)
            )
            reps = args.reps
            g_ref = gs.torch_graph_time(cp, a, b, ref, reps)
            row = dict(
                dtype=dt, m=m, n=n, k=k, pick=pick.key(), rel_err=err, torch_graph_us=(g_ref or 0) * 1e6
            )
            for name, cfg in variants.items():
                f = (
                    (lambda cfg=cfg: gemm(a, b, c, config=cfg))
                    if cfg is not None
                    else (lambda: gemm(a, b, c))
                )
                cub = lambda: cp.matmul(a, b, out=ref)
                f(), cub()
                cp.cuda.Device().synchronize()
                ratios, to = [], []
                for _ in range(args.rounds):
                    t1, _h1 = gs.event_batch(cp, f, reps)
                    t2, _h2 = gs.event_batch(cp, cub, reps)
                    ratios.append(t2 / t1)
                    to.append(t1)
                go = gs.graph_of(cp, f, reps)
                g = gs.graph_time(cp, go, reps) if go else None
                row[name] = dict(
                    config=(cfg or pick).key(),
                    eager_ratio=statistics.median(ratios),
                    eager_us=statistics.median(to) * 1e6,
                    graph_us=g * 1e6 if g else None,
                    graph_ratio=(g_ref / g) if (g and g_ref) else None,
                )
            rows.append(row)
            parts = "  ".join(
                f"{nm}: eager {v['eager_ratio']:.2f} graph {v['graph_us'] or 0:.1f}us"
                f" ({v['graph_ratio'] or 0:.2f})"
                for nm, v in row.items()
                if isinstance(v, dict)
            )
            print(
                f"time {dt} {m}x{n}x{k} pick {pick.key()} err {err:.1e} cuBLAS graph "
                f"{row['torch_graph_us']:.1f}us | {parts}",
                flush=True,
            )


def timing_epilogue(cp, shapes, args, log):
    """gemm(a, b, bias=, activation="relu") as a user calls it (the rule: serial split-K
    with the epilogue in its reducer, or the unsplit fused epilogue) against the unsplit
    fused epilogue forced, by graph replay; cuBLAS's plain product (torch graph) and the
    float64 reference of relu(A @ B + bias) for the error."""
    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host import runtime
    from layoutproof.gpu.host.rule import choose_config, hopper_candidates
    from layoutproof.gpu.host.runtime import gemm

    rng = cp.random.default_rng(13)
    rows = log.setdefault("time_epilogue", [])
    for dt in args.dtypes.split(","):
        for m, n, k in shapes:
            a, b = gs.make(cp, (m, k), dt, rng), gs.make(cp, (k, n), dt, rng)
            bias = rng.standard_normal(n, dtype=cp.float32)
            ref = reference(cp, a, b, bias, "relu")
            c = cp.full((m, n), cp.nan, dtype=a.dtype)
            gemm(a, b, c, bias=bias, activation="relu")
            cp.cuda.Device().synchronize()
            pick = runtime.last_launch["config"]
            nan = int(cp.isnan(c).sum())
            err = float(cp.linalg.norm(c.astype(cp.float64) - ref) / max(float(cp.linalg.norm(ref)), 1e-30))
            unsplit = choose_config(
                m, n, k, GemmProblem(), hopper=True, tma=True, candidates=hopper_candidates(True)
            )
            reps = args.reps
            plain = cp.empty((m, n), dtype=a.dtype)
            g_ref = gs.torch_graph_time(cp, a, b, plain, reps)
            row = dict(dtype=dt, m=m, n=n, k=k, pick=pick.key(), nan=nan, rel_err=err)
            row["torch_plain_graph_us"] = (g_ref or 0) * 1e6
            for name, cfg in (("rule", None), ("unsplit_epilogue", unsplit)):
                kw = dict(bias=bias, activation="relu")
                f = (
                    (lambda cfg=cfg: gemm(a, b, c, config=cfg, **kw))
                    if cfg
                    else (lambda: gemm(a, b, c, **kw))
                )
                f()
                cp.cuda.Device().synchronize()
                go = gs.graph_of(cp, f, reps)
                g = gs.graph_time(cp, go, reps) if go else None
                row[name] = dict(config=runtime.last_launch["config"].key(), graph_us=g * 1e6 if g else None)
            rows.append(row)
            print(
                f"epilogue {dt} {m}x{n}x{k} pick {pick.key()} nan {nan} err {err:.1e} | rule "
                f"{row['rule']['graph_us'] or 0:.1f}us  unsplit fused {row['unsplit_epilogue']['graph_us'] or 0:.1f}us"
                f" [{row['unsplit_epilogue']['config']}]  cuBLAS plain {row['torch_plain_graph_us']:.1f}us",
                flush=True,
            )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--check", action="store_true")
    p.add_argument("--sanitize", action="store_true")
    p.add_argument("--time", default=None, help="MxNxK,...")
    p.add_argument("--time-epilogue", default=None, help="MxNxK,...: bias + relu, rule vs unsplit")
    p.add_argument("--dtypes", default="f16")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument(
        "--out", default=None, help="folder for splitk_serial.json (default bench/out/splitk_serial)"
    )
    args = p.parse_args()
    import cupy as cp

    log = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()}
    rc = 0
    if args.sanitize:
        sanitize(cp)
    if args.check:
        rc = 1 if check(cp, log) else 0
    if args.time:
        timing(cp, gs.shapes_arg(args.time), args, log)
    if args.time_epilogue:
        timing_epilogue(cp, gs.shapes_arg(args.time_epilogue), args, log)
    (gs.out_dir("splitk_serial", args.out) / "splitk_serial.json").write_text(
        json.dumps(log, indent=1, default=str)
    )
    return rc


if __name__ == "__main__":
    sys.exit(main())
