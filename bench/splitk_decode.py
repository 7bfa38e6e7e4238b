"""Split-K and the unsplit 16-row tiles on the decode shapes (outputs of a few rows, long K):
correctness of back-to-back calls, a sanitizer workload, and timing against cuBLAS.

On the GPU machine, from the repository root (after ``source bench/device_env.sh``):

    python3 bench/splitk_decode.py --check               # back-to-back calls vs float64
    python3 bench/splitk_decode.py --sanitize            # a few launches, for compute-sanitizer
    python3 bench/splitk_decode.py --time 1x4096x4096,16x4096x4096
    python3 bench/splitk_decode.py --sweep 1x4096x4096,16x4096x4096
    python3 bench/splitk_decode.py --variants 16x8192x8192 --cluster
    python3 bench/splitk_decode.py --variants 16x4096x4096 --mma 16x32x128w1x2s8,16x64x64w1x4s8

JSON goes to ``bench/out/splitk_decode`` (or ``--out``).

With the fix-up reduction, the split kernel's first statement waits for the previous grid
of the stream (``griddepcontrol.wait``) and the runtime launches it as a programmatic
dependent: its launch and prologue overlap the previous call's fix-up, which reads the same
workspace the split kernel then writes.  ``--check`` calls one plan four times back to back
(new inputs and a NaN-poisoned output each time, no synchronization between the calls),
eagerly and replayed from a CUDA graph, and compares every output with a float64
reference: a split kernel storing its planes before the previous fix-up read them would
leave a wrong sum.  ``--time``: per shape and dtype, the rule's pick with both launches
programmatic, with the fix-up's only and with neither, and cuBLAS, interleaved over rounds
(graph replay = device time; eager ratio for the first).  ``--sweep``: bases 64x64 / 64x128
/ 64x256 with their stage counts, splits 1 (the unsplit kernel) / 2 / 4 / 8, graph time with
cuBLAS in every round.

``--cluster`` runs ``--check`` / ``--sanitize`` on the cluster reduction
(``SplitKConfig(..., reduction="cluster")``: the ``S`` units of a tile are one thread-block
cluster that sums the partials through distributed shared memory; no workspace, no second
kernel; outputs of at most 16 rows: the configurations ``CHECK_CLUSTER``) and makes
``--variants`` time the rule's pick against cluster configurations.

``--mma SPECS`` makes ``--variants`` (and ``--sanitize``) take unsplit mma.sync kernels
(``GemmConfig``, the cp.async pipeline; whole K per CTA, no workspace, no second kernel)
beside the pick.  A spec is ``BMxBNxBKwWMxWNsST`` with an optional ``bMB`` (min_blocks), e.g.
``16x32x128w1x2s8``.  The variants' order is rotated each round.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys

import _timing as gs

WS = dict(loader="tma", schedule="ws")
BASES = ((64, 64, 8), (64, 128, 8), (64, 256, 5))


def base_cfg(bm, bn, st):
    from layoutproof.gpu.kernels.wgmma import Sm90Config

    return Sm90Config(bm=bm, bn=bn, stages=st, **WS)


def split_cfg(bm, bn, st, s, reduction="kernel"):
    from layoutproof.gpu.kernels.splitk import SplitKConfig

    return base_cfg(bm, bn, st) if s == 1 else SplitKConfig(base_cfg(bm, bn, st), s, reduction)


def mma_cfg(spec):
    """``GemmConfig`` of a spec ``BMxBNxBKwWMxWNsST[bMB]`` (e.g. ``16x32x128w1x2s8``)."""
    from layoutproof.gpu.config import GemmConfig

    mt = re.fullmatch(r"(\d+)x(\d+)x(\d+)w(\d+)x(\d+)s(\d+)(?:b(\d+))?", spec)
    if mt is None:
        raise SystemExit(f"--mma: {spec!r} is not BMxBNxBKwWMxWNsST[bMB]")
    bm, bn, bk, wm, wn, st, mb = mt.groups()
    return GemmConfig(
        bm=int(bm),
        bn=int(bn),
        bk=int(bk),
        warps_m=int(wm),
        warps_n=int(wn),
        stages=int(st),
        min_blocks=int(mb or 1),
    ).validate()


CHECK = [
    ((64, 256, 5), 8, (16, 4096, 4096)),
    ((64, 256, 5), 8, (1, 4096, 4096)),
    ((64, 128, 8), 4, (37, 1000, 3000)),
    ((64, 64, 8), 2, (16, 100, 130)),
    ((128, 128, 6), 2, (130, 520, 2048)),
]


CHECK_CLUSTER = [
    ((64, 256, 5), 8, (16, 4096, 4096)),
    ((64, 256, 5), 8, (1, 4096, 4096)),
    ((64, 128, 8), 4, (13, 1000, 3000)),
    ((64, 64, 8), 2, (16, 100, 130)),
    ((64, 256, 5), 4, (16, 8192, 8192)),
]


def _run_series(cp, plan, xs, outs, mode):
    """Every (a, b) of ``xs`` through ``plan`` into ``outs``, back to back with no
    synchronization between the calls: eagerly, or captured in a CUDA graph and replayed
    (the outputs poisoned with NaN again after the capture, which runs nothing)."""
    for o in outs:
        o.fill(cp.nan)
    cp.cuda.Device().synchronize()
    if mode == "eager":
        for (a, b), o in zip(xs, outs):
            plan(a, b, o)
    else:
        st = cp.cuda.Stream(non_blocking=True)
        with st:
            st.begin_capture()
            for (a, b), o in zip(xs, outs):
                plan(a, b, o)
            g = st.end_capture()
        for o in outs:
            o.fill(cp.nan)
        cp.cuda.Device().synchronize()
        g.launch(st)
        st.synchronize()
    cp.cuda.Device().synchronize()


def check(cp, log, reduction):
    """Four calls of one plan back to back (eager, then two graph replays) per configuration
    of ``CHECK`` (``CHECK_CLUSTER`` for the cluster reduction), each output against float64."""
    from layoutproof.gpu.host.runtime import gemm_plan

    rng = cp.random.default_rng(17)
    rows = log.setdefault("check", [])
    bad = 0
    for dt in ("f16", "bf16"):
        for (bm, bn, st), s, (m, n, k) in CHECK_CLUSTER if reduction == "cluster" else CHECK:
            cfg = split_cfg(bm, bn, st, s, reduction)
            xs = [(gs.make(cp, (m, k), dt, rng), gs.make(cp, (k, n), dt, rng)) for _ in range(4)]
            outs = [cp.empty((m, n), dtype=xs[0][0].dtype) for _ in range(4)]
            refs = [cp.matmul(a.astype(cp.float64), b.astype(cp.float64)) for a, b in xs]
            plan = gemm_plan(xs[0][0], xs[0][1], outs[0], config=cfg)
            for mode in ("eager", "graph", "graph"):
                _run_series(cp, plan, xs, outs, mode)
                worst = max(gs.max_rel_err(cp, o, r) for o, r in zip(outs, refs))
                ok = worst < gs.tol(dt)
                bad += not ok
                pdl = (plan._pdl is not None, plan._pdl_split is not None)
                rows.append(
                    dict(dtype=dt, config=cfg.key(), m=m, n=n, k=k, mode=mode, worst=worst, ok=ok, pdl=pdl)
                )
                print(
                    f"check {'ok  ' if ok else 'FAIL'} {dt} {cfg.key()} {m}x{n}x{k} {mode}: 4 calls back to "
                    f"back, worst rel err {worst:.1e}, PDL (fix-up, split) {pdl}",
                    flush=True,
                )
            cp.get_default_memory_pool().free_all_blocks()
    print(f"check: {len(rows) - bad}/{len(rows)} ok", flush=True)
    return bad


def sanitize(cp, reduction, mma):
    """A few calls of each configuration, for compute-sanitizer: the first four of ``CHECK``
    (or ``CHECK_CLUSTER``), or with ``--mma`` each mma.sync spec on BMx4096x4096 and a ragged
    (BM-3)x1000x520, BM its rows (checked against float64 afterwards)."""
    from layoutproof.gpu.host.runtime import gemm_plan

    rng = cp.random.default_rng(3)
    if mma:
        cfgs = [mma_cfg(sp) for sp in mma]
        cases = [(c, shape) for c in cfgs for shape in ((c.bm, 4096, 4096), (c.bm - 3, 1000, 520))]
    else:
        table = CHECK_CLUSTER if reduction == "cluster" else CHECK
        cases = [(split_cfg(bm, bn, st, s, reduction), shape) for (bm, bn, st), s, shape in table[:4]]
    for cfg, (m, n, k) in cases:
        a, b = gs.make(cp, (m, k), "f16", rng), gs.make(cp, (k, n), "f16", rng)
        out = cp.full((m, n), cp.nan, dtype=a.dtype)
        plan = gemm_plan(a, b, out, config=cfg)
        for _ in range(3):
            plan(a, b, out)
        cp.cuda.Device().synchronize()
        err = gs.max_rel_err(cp, out, cp.matmul(a.astype(cp.float64), b.astype(cp.float64)))
        print(
            f"sanitize {cfg.key()} {m}x{n}x{k}: 3 calls back to back, rel err {err:.1e} "
            f"{'ok' if err < gs.tol('f16') else 'FAIL'}",
            flush=True,
        )


def timing(cp, shapes, args, log):
    from layoutproof.gpu.host.runtime import gemm_plan

    rng = cp.random.default_rng(11)
    rows = log.setdefault("time", [])
    reps = args.reps
    for dt in args.dtypes.split(","):
        for m, n, k in shapes:
            a, b = gs.make(cp, (m, k), dt, rng), gs.make(cp, (k, n), dt, rng)
            ref = cp.matmul(a, b)
            c = cp.full((m, n), cp.nan, dtype=a.dtype)
            plan = gemm_plan(a, b, c)
            plan(a, b, c)
            cp.cuda.Device().synchronize()
            err = gs.rel_err(cp, c, ref)
            split = getattr(plan, "splits", 1) > 1
            pdl, pdl_split = plan._pdl, getattr(plan, "_pdl_split", None)

            def variant(name):
                plan._pdl = pdl if name != "no_pdl" else None
                plan._pdl_split = pdl_split if name == "pdl_both" else None

            names = ["pdl_both", "pdl_fixup", "no_pdl"] if split else ["pdl_both"]
            graphs = {}
            flags = None
            for nm in names:
                variant(nm)
                graphs[nm] = gs.graph_of(cp, lambda: plan(a, b, c), reps)
                if flags is None:  # a launch refused under capture drops back to stream order
                    flags = (plan._pdl is not None, getattr(plan, "_pdl_split", None) is not None)
            variant("pdl_both")
            eager = {"pdl_both": lambda: plan(a, b, c)}
            g, g_ref, ratio = gs.graph_rounds(cp, graphs, eager, (a, b, ref), reps, args.rounds)
            ratios = ratio["pdl_both"]
            c.fill(cp.nan)
            plan(a, b, c)
            cp.cuda.Device().synchronize()
            err2 = gs.rel_err(cp, c, ref)
            ref_us = statistics.median(g_ref) if g_ref else None
            row = dict(
                dtype=dt,
                m=m,
                n=n,
                k=k,
                pick=plan.config.key(),
                pdl_captured=flags,
                rel_err=max(err, err2),
                cublas_graph_us=ref_us,
                eager_ratio=statistics.median(ratios),
                graph_us={nm: statistics.median(v) for nm, v in g.items() if v},
                graph_us_all={nm: v for nm, v in g.items()},
                cublas_graph_us_all=g_ref,
            )
            row["graph_ratio"] = {nm: (ref_us / v if ref_us else None) for nm, v in row["graph_us"].items()}
            rows.append(row)
            parts = "  ".join(
                f"{nm} {row['graph_us'][nm]:.2f}us ({row['graph_ratio'][nm] or 0:.3f})"
                for nm in row["graph_us"]
            )
            print(
                f"time {dt} {m}x{n}x{k} [{plan.config.key()}] PDL {flags} err {row['rel_err']:.1e} eager ratio "
                f"{row['eager_ratio']:.2f} | cuBLAS graph {ref_us or 0:.2f}us | {parts}",
                flush=True,
            )
            cp.get_default_memory_pool().free_all_blocks()


#: the split-K alternatives --variants times beside the rule's pick, where they fit one wave
PLANE_VARIANTS = (((64, 256, 5), 8), ((64, 128, 8), 4), ((64, 256, 5), 4))
CLUSTER_VARIANTS = (((64, 128, 8), 2), ((64, 64, 8), 2), ((64, 256, 5), 4), ((64, 128, 8), 4))


def variant_cfgs(m, n, k, dt, reduction, mma, sms=132):
    """(name, config) pairs that --variants times: the rule's pick first, then with ``mma``
    the wgmma pick (where the rule took an mma.sync tile) and the mma.sync specs; with the
    cluster reduction the plane split the rule would take without it and the cluster
    configurations of ``CLUSTER_VARIANTS`` (M <= 16); else the plane splits of
    ``PLANE_VARIANTS``.  Split configurations whose units overfill one wave are left out."""
    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host.rule import choose_config

    prob = GemmProblem(dtype=dt, out_dtype=dt)
    pick = choose_config(m, n, k, prob, hopper=True, tma=True, sms=sms)
    if mma:  # "pick" = the rule with mma=True: it may take an unsplit 16-row mma.sync tile
        out = [("pick", choose_config(m, n, k, prob, hopper=True, tma=True, sms=sms, mma=True))]
        if pick.key() != out[0][1].key():
            out.append(("wgmma", pick))
        cands = [("m" + sp, mma_cfg(sp)) for sp in mma]
    elif reduction == "cluster":
        out = [("pick", pick)]
        planes = choose_config(m, n, k, prob, hopper=True, tma=True, sms=sms, cluster=False)
        if planes.key() != pick.key():  # the rule took the cluster reduction: time the plane split too
            out.append(("planes", planes))
        cands = [(f"c{bn}s{s}", split_cfg(bm, bn, st, s, "cluster")) for (bm, bn, st), s in CLUSTER_VARIANTS]
        cands = [(nm, c) for nm, c in cands if m <= 16]
    else:
        out = [("pick", pick)]
        cands = [(f"p{bn}s{s}", split_cfg(bm, bn, st, s)) for (bm, bn, st), s in PLANE_VARIANTS]
    for nm, cfg in cands:
        splits = getattr(cfg, "splits", 1)
        bm, bn = (cfg.base.bm, cfg.base.bn) if splits > 1 else (cfg.bm, cfg.bn)
        fits = splits == 1 or -(-m // bm) * -(-n // bn) * splits <= sms
        if fits and all(cfg.key() != c.key() for _, c in out):
            out.append((nm, cfg))
    return out


def _variant_row(cp, shape, dt, named, args):
    """Graph time of every (name, config) of ``named`` and of cuBLAS in the same rounds (the
    variants' order rotated each round), the eager ratio, and each output against float64
    before and after the timing."""
    from layoutproof.gpu.host.runtime import gemm_plan

    m, n, k = shape
    reps = args.reps
    rng = cp.random.default_rng(23)
    a, b = gs.make(cp, (m, k), dt, rng), gs.make(cp, (k, n), dt, rng)
    ref = cp.matmul(a, b)
    ref64 = cp.matmul(a.astype(cp.float64), b.astype(cp.float64))
    c = cp.empty((m, n), dtype=a.dtype)

    def err_of(plan):
        c.fill(cp.nan)
        plan(a, b, c)
        plan(a, b, c)  # twice: the second call runs on the workspace the first left
        cp.cuda.Device().synchronize()
        return gs.max_rel_err(cp, c, ref64)

    plans, graphs, errs, keys = {}, {}, {}, {}
    for nm, cfg in named:
        try:
            plan = gemm_plan(a, b, c, config=cfg)
            errs[nm] = err_of(plan)
            graphs[nm] = gs.graph_of(cp, lambda plan=plan: plan(a, b, c), reps)
            plans[nm], keys[nm] = plan, cfg.key()
        except Exception as ex:
            print(f"  variant {nm} {cfg.key()} {m}x{n}x{k}: {type(ex).__name__}: {ex}", flush=True)
    fns = {nm: (lambda plan=plan: plan(a, b, c)) for nm, plan in plans.items()}
    t, t_ref, eager = gs.graph_rounds(cp, graphs, fns, (a, b, ref), reps, args.rounds)
    for nm, plan in plans.items():  # after all the replays, again against float64
        errs[nm] = max(errs[nm], err_of(plan))
    return dict(
        dtype=dt,
        m=m,
        n=n,
        k=k,
        default=gemm_plan(a, b, c).config.key(),  # what gemm(a, b, c) runs (the runtime's rule)
        cublas_graph_us=statistics.median(t_ref) if t_ref else None,
        cublas_graph_us_all=t_ref,
        configs=keys,
        graph_us={nm: statistics.median(v) for nm, v in t.items() if v},
        graph_us_all=t,
        eager_ratio={nm: statistics.median(v) for nm, v in eager.items() if v},
        rel_err=errs,
    )


def variants(cp, shapes, args, log, reduction, mma):
    """Per shape and dtype, the configurations of :func:`variant_cfgs` against cuBLAS."""
    rows = log.setdefault("variants", [])
    for dt in args.dtypes.split(","):
        for m, n, k in shapes:
            row = _variant_row(cp, (m, n, k), dt, variant_cfgs(m, n, k, dt, reduction, mma), args)
            rows.append(row)
            ref_us, med = row["cublas_graph_us"] or 0, row["graph_us"]
            print(f"variants {dt} {m}x{n}x{k}: cuBLAS graph {ref_us:.2f}us; gemm() default {row['default']}")
            for nm in sorted(med, key=med.get):
                err = row["rel_err"][nm]
                print(
                    f"  var {dt:4s} {m}x{n}x{k} {nm:12s} {row['configs'][nm]:34s} graph {med[nm]:7.2f}us "
                    f"({ref_us / med[nm]:.3f}) eager {row['eager_ratio'][nm]:.2f} err {err:.1e}"
                    + ("" if err < gs.tol(dt) else "  WRONG"),
                    flush=True,
                )
            cp.get_default_memory_pool().free_all_blocks()


def sweep(cp, shapes, args, log):
    from layoutproof.gpu.host.runtime import gemm_plan

    rng = cp.random.default_rng(5)
    rows = log.setdefault("sweep", [])
    reps = args.reps
    splits = [int(x) for x in args.splits.split(",")]
    for dt in args.dtypes.split(","):
        for m, n, k in shapes:
            a, b = gs.make(cp, (m, k), dt, rng), gs.make(cp, (k, n), dt, rng)
            ref = cp.matmul(a, b)
            c = cp.empty((m, n), dtype=a.dtype)
            graphs, errs = {}, {}
            for bm, bn, st in BASES:
                for s in splits:
                    cfg = split_cfg(bm, bn, st, s)
                    try:
                        plan = gemm_plan(a, b, c, config=cfg)
                        c.fill(cp.nan)
                        plan(a, b, c)
                        cp.cuda.Device().synchronize()
                        errs[cfg.key()] = gs.rel_err(cp, c, ref)
                        graphs[cfg.key()] = gs.graph_of(cp, lambda plan=plan: plan(a, b, c), reps)
                    except Exception as ex:
                        print(f"  {cfg.key()} {m}x{n}x{k}: {type(ex).__name__}: {ex}", flush=True)
            t = {kk: [] for kk in graphs}
            t_ref = []
            for _ in range(args.sweep_rounds):
                for kk, gg in graphs.items():
                    if gg:
                        t[kk].append(gs.graph_time(cp, gg, reps) * 1e6)
                x = gs.torch_graph_time(cp, a, b, ref, reps)
                if x:
                    t_ref.append(x * 1e6)
            ref_us = statistics.median(t_ref) if t_ref else None
            med = {kk: statistics.median(v) for kk, v in t.items() if v}
            rows.append(dict(dtype=dt, m=m, n=n, k=k, cublas_graph_us=ref_us, graph_us=med, rel_err=errs))
            order = sorted(med, key=med.get)
            print(f"sweep {dt} {m}x{n}x{k}: cuBLAS graph {ref_us or 0:.2f}us", flush=True)
            for kk in order:
                bad = "" if errs.get(kk, 1) < 1e-2 else "  WRONG"
                print(f"  sweep {kk:40s} {med[kk]:7.2f}us ({(ref_us or 0) / med[kk]:.3f}){bad}", flush=True)
            cp.get_default_memory_pool().free_all_blocks()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="back-to-back calls against float64")
    p.add_argument("--sanitize", action="store_true", help="a few launches, for compute-sanitizer")
    p.add_argument("--time", default=None, help="MxNxK,...: the pick with and without PDL, cuBLAS")
    p.add_argument("--sweep", default=None, help="MxNxK,...: bases x splits, graph time")
    p.add_argument("--variants", default=None, help="MxNxK,...: the pick against other configurations")
    p.add_argument(
        "--cluster", action="store_true", help="--check/--sanitize/--variants: the cluster reduction"
    )
    p.add_argument(
        "--mma",
        default=None,
        help="SPECS (BMxBNxBKwWMxWNsST[bMB],...): --variants/--sanitize take these mma.sync configs",
    )
    p.add_argument("--splits", default="1,2,4,8")
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--sweep-rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument(
        "--out", default=None, help="folder for splitk_decode.json (default bench/out/splitk_decode)"
    )
    args = p.parse_args()
    reduction = "cluster" if args.cluster else "kernel"
    mma = args.mma.split(",") if args.mma else []
    for sp in mma:
        mma_cfg(sp)  # a bad spec stops here, before any GPU work
    import cupy as cp

    log = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()}
    out = gs.out_dir("splitk_decode", args.out)

    def save():
        (out / "splitk_decode.json").write_text(json.dumps(log, indent=1, default=str))

    rc = 0
    if args.sanitize:
        sanitize(cp, reduction, mma)
    if args.check:
        rc = 1 if check(cp, log, reduction) else 0
        save()
    if args.time:
        timing(cp, gs.shapes_arg(args.time), args, log)
        save()
    if args.variants:
        variants(cp, gs.shapes_arg(args.variants), args, log, reduction, mma)
        save()
    if args.sweep:
        sweep(cp, gs.shapes_arg(args.sweep), args, log)
        save()
    return rc


if __name__ == "__main__":
    sys.exit(main())
