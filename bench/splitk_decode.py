"""Split-K on the decode shapes (issue 17, G1b, session 21): the split kernel as a
programmatic dependent launch, correctness of back-to-back calls, a sweep, timing.

On the GPU machine, from the repository root (after ``source bench/device_env.sh``):

    python3 bench/splitk_decode.py --check               # back-to-back calls vs float64
    python3 bench/splitk_decode.py --sanitize            # a few launches, for compute-sanitizer
    python3 bench/splitk_decode.py --time 1x4096x4096,16x4096x4096 --out DIR
    python3 bench/splitk_decode.py --sweep 1x4096x4096,16x4096x4096 --out DIR

With the fix-up reduction, the split kernel's first statement waits for the previous grid
of the stream (``griddepcontrol.wait``) and the runtime launches it as a programmatic
dependent: its launch and prologue overlap the previous call's fix-up, which reads the same
workspace the split kernel then writes.  ``--check`` calls one plan four times back to back
(new inputs and a NaN-poisoned output each time, no synchronization between the calls),
eagerly and replayed from a CUDA graph, and compares every output with a float64
reference: a split kernel storing its planes before the previous fix-up read them would
leave a wrong sum.  ``--time``: per shape and dtype, the rule's pick with both launches
programmatic, with the fix-up's only (as before) and with neither, and cuBLAS, interleaved
over rounds (graph replay = device time; eager ratio for the first).  ``--sweep``: bases
64x64 / 64x128 / 64x256 with their stage counts, splits 1 (the unsplit kernel) / 2 / 4 / 8,
graph time with cuBLAS in every round.

Session 22 (G3): ``--atomic`` adds the atomic reduction (``SplitKConfig(..., reduction=
"atomic")``: every unit adds into one f32 plane with ``red.global.add``, the fix-up converts
it and zeroes it) to ``--check`` and ``--sanitize`` (configurations ``CHECK`` with the
atomic reduction, and the plane checked zero after every series of calls), and
``--variants MxNxK,...`` times the rule's pick against its atomic twin and a few other atomic
configurations, with cuBLAS in the same rounds (graph and eager).

Session 22 (G4): ``--cluster`` runs ``--check`` / ``--sanitize`` on the cluster reduction
(``SplitKConfig(..., reduction="cluster")``: the ``S`` units of a tile are one thread-block
cluster that sums the partials through distributed shared memory; no workspace, no second
kernel; outputs of at most 16 rows: the configurations ``CHECK_CLUSTER``) and makes
``--variants`` time the pick against cluster configurations instead of atomic ones.

Session 22 (G6): ``--mma SPECS`` makes ``--variants`` time the pick against unsplit mma.sync
kernels (``GemmConfig``, the cp.async pipeline; whole K per CTA, no workspace, no second
kernel).  A spec is ``BMxBNxBKwWMxWNsST`` with an optional ``bMB`` (min_blocks), e.g.
``16x32x128w1x2s8``; the variants' order is rotated each round.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import sys
from pathlib import Path

_here = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("gemm_suite", _here / "gemm_suite.py")
gs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(gs)

WS = dict(loader="tma", schedule="ws")
BASES = ((64, 64, 8), (64, 128, 8), (64, 256, 5))


def base_cfg(bm, bn, st):
    from layoutproof.gpu.kernels.wgmma import Sm90Config

    return Sm90Config(bm=bm, bn=bn, stages=st, **WS)


def split_cfg(bm, bn, st, s, reduction="kernel"):
    from layoutproof.gpu.kernels.splitk import SplitKConfig

    return base_cfg(bm, bn, st) if s == 1 else SplitKConfig(base_cfg(bm, bn, st), s, reduction)


REDUCTION = "kernel"  # --atomic: the configurations of --check / --sanitize use "atomic"
MMA = []  # --mma SPECS: unsplit mma.sync GemmConfigs that --variants times beside the pick (G6)


def mma_cfg(spec):
    """``GemmConfig`` of a spec ``BMxBNxBKwWMxWNsST[bMB]`` (e.g. ``16x32x128w1x2s8``)."""
    import re

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


def check(cp, log):
    from layoutproof.gpu.host.runtime import gemm_plan

    rng = cp.random.default_rng(17)
    rows = log.setdefault("check", [])
    bad = 0
    for dt in ("f16", "bf16"):
        for (bm, bn, st), s, (m, n, k) in CHECK_CLUSTER if REDUCTION == "cluster" else CHECK:
            cfg = split_cfg(bm, bn, st, s, REDUCTION)
            xs = [(gs.make(cp, (m, k), dt, rng), gs.make(cp, (k, n), dt, rng)) for _ in range(4)]
            outs = [cp.empty((m, n), dtype=xs[0][0].dtype) for _ in range(4)]
            refs = [cp.matmul(a.astype(cp.float64), b.astype(cp.float64)) for a, b in xs]
            plan = gemm_plan(xs[0][0], xs[0][1], outs[0], config=cfg)
            for mode in ("eager", "graph", "graph"):
                for o in outs:
                    o.fill(cp.nan)
                cp.cuda.Device().synchronize()
                if mode == "eager":
                    for (a, b), o in zip(xs, outs):
                        plan(a, b, o)
                else:
                    st_ = cp.cuda.Stream(non_blocking=True)
                    with st_:
                        st_.begin_capture()
                        for (a, b), o in zip(xs, outs):
                            plan(a, b, o)
                        g = st_.end_capture()
                    for o in outs:  # capture ran nothing: poison again, then replay
                        o.fill(cp.nan)
                    cp.cuda.Device().synchronize()
                    g.launch(st_)
                    st_.synchronize()
                cp.cuda.Device().synchronize()
                errs = []
                for o, r in zip(outs, refs):
                    d = cp.abs(o.astype(cp.float64) - r)
                    nan = bool(cp.isnan(o.astype(cp.float32)).any())
                    rel = float(d.max()) / max(float(cp.abs(r).max()), 1e-30)
                    errs.append(float("inf") if nan else rel)
                worst = max(errs)
                ok = worst < (2e-3 if dt == "f16" else 1.6e-2)
                if REDUCTION == "atomic":  # each fix-up leaves the plane zero for the next call
                    left = float(cp.abs(plan._ws).max())
                    if left != 0.0:
                        print(f"check FAIL plane not zero after the calls: max |W| {left}", flush=True)
                        ok = False
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


def sanitize_mma(cp):
    """A few calls of every ``--mma`` configuration (16x4096x4096 and a ragged 13x1000x520, f16),
    each output checked against float64 afterwards (for compute-sanitizer)."""
    from layoutproof.gpu.host.runtime import gemm_plan

    rng = cp.random.default_rng(6)
    for sp in MMA:
        cfg = mma_cfg(sp)
        for m, n, k in ((16, 4096, 4096), (13, 1000, 520)):
            a, b = gs.make(cp, (m, k), "f16", rng), gs.make(cp, (k, n), "f16", rng)
            out = cp.full((m, n), cp.nan, dtype=a.dtype)
            plan = gemm_plan(a, b, out, config=cfg)
            for _ in range(3):
                plan(a, b, out)
            cp.cuda.Device().synchronize()
            r = cp.matmul(a.astype(cp.float64), b.astype(cp.float64))
            err = float(cp.abs(out.astype(cp.float64) - r).max()) / max(float(cp.abs(r).max()), 1e-30)
            ok = err < 2e-3 and not bool(cp.isnan(out.astype(cp.float32)).any())
            print(
                f"sanitize mma {cfg.key()} {m}x{n}x{k}: 3 calls, rel err {err:.1e} {'ok' if ok else 'FAIL'}",
                flush=True,
            )


def sanitize(cp):
    from layoutproof.gpu.host.runtime import gemm_plan

    rng = cp.random.default_rng(3)
    for (bm, bn, st), s, (m, n, k) in (CHECK_CLUSTER if REDUCTION == "cluster" else CHECK)[:4]:
        cfg = split_cfg(bm, bn, st, s, REDUCTION)
        a, b = gs.make(cp, (m, k), "f16", rng), gs.make(cp, (k, n), "f16", rng)
        out = cp.zeros((m, n), dtype=a.dtype)
        plan = gemm_plan(a, b, out, config=cfg)
        for _ in range(3):
            plan(a, b, out)
        cp.cuda.Device().synchronize()
        print(f"sanitize {cfg.key()} {m}x{n}x{k}: 3 calls back to back", flush=True)


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
            g = {nm: [] for nm in names}
            g_ref, ratios = [], []
            cub = lambda: cp.matmul(a, b, out=ref)
            for _ in range(args.rounds):
                for nm in names:
                    if graphs[nm]:
                        g[nm].append(gs.graph_time(cp, graphs[nm], reps) * 1e6)
                t = gs.torch_graph_time(cp, a, b, ref, reps)
                if t:
                    g_ref.append(t * 1e6)
                t1, _ = gs.event_batch(cp, lambda: plan(a, b, c), reps)
                t2, _ = gs.event_batch(cp, cub, reps)
                ratios.append(t2 / t1)
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


def variant_cfgs(m, n, k, dt):
    """The rule's pick, its atomic twin, and atomic 64x256 S8 / 64x128 S4 / 64x256 S4 where
    they fit one wave (unit count <= 132)."""
    from dataclasses import replace

    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host.rule import choose_config
    from layoutproof.gpu.kernels.splitk import SplitKConfig

    pick = choose_config(m, n, k, GemmProblem(dtype=dt, out_dtype=dt), hopper=True, tma=True, sms=132)
    out = [("pick", pick)]
    if MMA:  # G6: unsplit mma.sync kernels (whole K per CTA); "pick" = the rule with mma=True
        prob = GemmProblem(dtype=dt, out_dtype=dt)
        out = [("pick", choose_config(m, n, k, prob, hopper=True, tma=True, sms=132, mma=True))]
        if pick.key() != out[0][1].key():  # the rule took an mma.sync tile: time the wgmma pick too
            out.append(("wgmma", pick))
        return out + [("m" + sp, c) for sp in MMA if all((c := mma_cfg(sp)).key() != x.key() for _, x in out)]
    if REDUCTION == "cluster":  # G4: the cluster reduction (M <= 16), one CTA per unit
        prob = GemmProblem(dtype=dt, out_dtype=dt)
        planes = choose_config(m, n, k, prob, hopper=True, tma=True, sms=132, cluster=False)
        if planes.key() != pick.key():  # the rule took the cluster reduction: time the old pick too
            out.append(("planes", planes))
        for (bm, bn, st), s in (
            ((64, 128, 8), 2),
            ((64, 64, 8), 2),
            ((64, 256, 5), 4),
            ((64, 128, 8), 4),
        ):
            cfg = split_cfg(bm, bn, st, s, "cluster")
            tiles = -(-m // bm) * -(-n // bn)
            if m <= 16 and tiles * s <= 132 and all(cfg.key() != c.key() for _, c in out):
                out.append((f"c{bn}s{s}", cfg))
        return out
    if isinstance(pick, SplitKConfig):
        out.append(("pick_atomic", replace(pick, reduction="atomic")))
    for (bm, bn, st), s in (((64, 256, 5), 8), ((64, 128, 8), 4), ((64, 256, 5), 4)):
        cfg = split_cfg(bm, bn, st, s, "atomic")
        tiles = -(-m // bm) * -(-n // bn)
        if tiles * s <= 132 and all(cfg.key() != c.key() for _, c in out):
            out.append((f"a{bn}s{s}", cfg))
    return out


def variants(cp, shapes, args, log):
    from layoutproof.gpu.host.runtime import gemm_plan

    rng = cp.random.default_rng(23)
    rows = log.setdefault("variants", [])
    reps = args.reps
    for dt in args.dtypes.split(","):
        for m, n, k in shapes:
            a, b = gs.make(cp, (m, k), dt, rng), gs.make(cp, (k, n), dt, rng)
            ref = cp.matmul(a, b)
            ref64 = cp.matmul(a.astype(cp.float64), b.astype(cp.float64))
            c = cp.empty((m, n), dtype=a.dtype)
            plans, graphs, errs, keys = {}, {}, {}, {}
            for nm, cfg in variant_cfgs(m, n, k, dt):
                try:
                    plan = gemm_plan(a, b, c, config=cfg)
                    c.fill(cp.nan)
                    plan(a, b, c)
                    plan(a, b, c)  # twice: the second call runs on the plane the first left
                    cp.cuda.Device().synchronize()
                    d = cp.abs(c.astype(cp.float64) - ref64)
                    nan = bool(cp.isnan(c.astype(cp.float32)).any())
                    errs[nm] = (
                        float("inf") if nan else float(d.max()) / max(float(cp.abs(ref64).max()), 1e-30)
                    )
                    graphs[nm] = gs.graph_of(cp, lambda plan=plan: plan(a, b, c), reps)
                    plans[nm], keys[nm] = plan, cfg.key()
                except Exception as ex:
                    print(f"  variant {nm} {cfg.key()} {m}x{n}x{k}: {type(ex).__name__}: {ex}", flush=True)
            t = {nm: [] for nm in graphs}
            eager = {nm: [] for nm in graphs}
            t_ref = []
            cub = lambda: cp.matmul(a, b, out=ref)
            order = list(graphs)
            for rnd in range(args.rounds):
                rot = order[rnd % len(order) :] + order[: rnd % len(order)] if order else []
                for nm in rot:
                    if graphs[nm]:
                        t[nm].append(gs.graph_time(cp, graphs[nm], reps) * 1e6)
                x = gs.torch_graph_time(cp, a, b, ref, reps)
                if x:
                    t_ref.append(x * 1e6)
                t2, _ = gs.event_batch(cp, cub, reps)
                for nm in rot:
                    plan = plans[nm]
                    t1, _ = gs.event_batch(cp, lambda plan=plan: plan(a, b, c), reps)
                    eager[nm].append(t2 / t1)
            # after all the replays: one more call on the plane they left, against float64
            for nm, plan in plans.items():
                c.fill(cp.nan)
                plan(a, b, c)
                cp.cuda.Device().synchronize()
                d = cp.abs(c.astype(cp.float64) - ref64)
                nan = bool(cp.isnan(c.astype(cp.float32)).any())
                e2 = float("inf") if nan else float(d.max()) / max(float(cp.abs(ref64).max()), 1e-30)
                errs[nm] = max(errs[nm], e2)
            ref_us = statistics.median(t_ref) if t_ref else None
            med = {nm: statistics.median(v) for nm, v in t.items() if v}
            default = gemm_plan(a, b, c).config.key()  # what gemm(a, b, c) runs (the runtime's rule)
            row = dict(
                dtype=dt,
                m=m,
                n=n,
                k=k,
                default=default,
                cublas_graph_us=ref_us,
                cublas_graph_us_all=t_ref,
                configs=keys,
                graph_us=med,
                graph_us_all=t,
                eager_ratio={nm: statistics.median(v) for nm, v in eager.items() if v},
                rel_err=errs,
            )
            rows.append(row)
            print(
                f"variants {dt} {m}x{n}x{k}: cuBLAS graph {ref_us or 0:.2f}us; gemm() default {default}",
                flush=True,
            )
            tol = 2e-3 if dt == "f16" else 1.6e-2
            for nm in sorted(med, key=med.get):
                bad = "" if errs.get(nm, 1) < tol else "  WRONG"
                print(
                    f"  var {dt:4s} {m}x{n}x{k} {nm:12s} {keys[nm]:34s} graph {med[nm]:7.2f}us "
                    f"({(ref_us or 0) / med[nm]:.3f}) eager {row['eager_ratio'][nm]:.2f} err {errs[nm]:.1e}{bad}",
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


# ---------------------------------------------------------------- G5 (session 22): fix-up CTA shapes
FIXUPS = []  # --fixups NAMES: the fix-up CTA shapes (layoutproof.gpu.kernels.splitk_fixup.FIXUP_SHAPES)


class fixup_rule:
    """Plans made inside take the fix-up CTA shape ``name`` for every output (plan.FIXUP_RULE)."""

    def __init__(self, name):
        self.name = name

    def __enter__(self):
        from layoutproof.gpu.host import rule as P

        self.old = dict(P.FIXUP_RULE)
        P.FIXUP_RULE.update(max_m=1 << 30, shape=self.name)

    def __exit__(self, *exc):
        from layoutproof.gpu.host import rule as P

        P.FIXUP_RULE.clear()
        P.FIXUP_RULE.update(self.old)


def plane_cfg(m, n, k, dt):
    """The plane split (fix-up kernel) the rule takes for this shape, else 64x256 s5 S8 (S4 where
    8 splits overfill the SMs)."""
    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host.rule import choose_config
    from layoutproof.gpu.kernels.splitk import SplitKConfig

    pick = choose_config(m, n, k, GemmProblem(dtype=dt, out_dtype=dt), hopper=True, tma=True, sms=132)
    if isinstance(pick, SplitKConfig) and pick.reduction == "kernel":
        return pick
    tiles = -(-m // 64) * -(-n // 256)
    return split_cfg(64, 256, 5, 8 if tiles * 8 <= 132 else 4)


def fixup_times(cp, shapes, args, log):
    """Per shape and dtype: the plane split with each fix-up CTA shape (t256 = the current one)
    and cuBLAS in the same rounds (graph replay, eager ratio), the variants' order rotated each
    round; each output NaN-poisoned and checked against float64 before and after the timing."""
    from layoutproof.gpu.host.runtime import gemm_plan

    rng = cp.random.default_rng(29)
    rows = log.setdefault("fixups", [])
    reps = args.reps
    names = ["t256"] + [x for x in FIXUPS if x != "t256"]
    for dt in args.dtypes.split(","):
        for m, n, k in shapes:
            a, b = gs.make(cp, (m, k), dt, rng), gs.make(cp, (k, n), dt, rng)
            ref = cp.matmul(a, b)
            ref64 = cp.matmul(a.astype(cp.float64), b.astype(cp.float64))
            c = cp.empty((m, n), dtype=a.dtype)
            cfg = plane_cfg(m, n, k, dt)
            plans, graphs, errs, grids = {}, {}, {}, {}

            def err_of(plan):
                c.fill(cp.nan)
                plan(a, b, c)
                plan(a, b, c)
                cp.cuda.Device().synchronize()
                d = cp.abs(c.astype(cp.float64) - ref64)
                if bool(cp.isnan(c.astype(cp.float32)).any()):
                    return float("inf")
                return float(d.max()) / max(float(cp.abs(ref64).max()), 1e-30)

            for nm in names:
                try:
                    with fixup_rule(nm):
                        plan = gemm_plan(a, b, c, config=cfg)
                    errs[nm] = err_of(plan)
                    graphs[nm] = gs.graph_of(cp, lambda plan=plan: plan(a, b, c), reps)
                    plans[nm] = plan
                    grids[nm] = (plan._fix[2], plan._fix_threads, plan._pdl is not None)
                except Exception as ex:
                    print(f"  fixup {nm} {cfg.key()} {m}x{n}x{k}: {type(ex).__name__}: {ex}", flush=True)
            t = {nm: [] for nm in graphs}
            eager = {nm: [] for nm in graphs}
            t_ref = []
            cub = lambda: cp.matmul(a, b, out=ref)
            order = list(graphs)
            for rnd in range(args.rounds):
                rot = order[rnd % len(order) :] + order[: rnd % len(order)]
                for nm in rot:
                    if graphs[nm]:
                        t[nm].append(gs.graph_time(cp, graphs[nm], reps) * 1e6)
                x = gs.torch_graph_time(cp, a, b, ref, reps)
                if x:
                    t_ref.append(x * 1e6)
                t2, _ = gs.event_batch(cp, cub, reps)
                for nm in rot:
                    t1, _ = gs.event_batch(cp, lambda plan=plans[nm]: plan(a, b, c), reps)
                    eager[nm].append(t2 / t1)
            for nm, plan in plans.items():  # after all the replays, again against float64
                errs[nm] = max(errs[nm], err_of(plan))
            ref_us = statistics.median(t_ref) if t_ref else None
            med = {nm: statistics.median(v) for nm, v in t.items() if v}
            row = dict(
                dtype=dt,
                m=m,
                n=n,
                k=k,
                config=cfg.key(),
                cublas_graph_us=ref_us,
                cublas_graph_us_all=t_ref,
                graph_us=med,
                graph_us_all=t,
                eager_ratio={nm: statistics.median(v) for nm, v in eager.items() if v},
                rel_err=errs,
                fixup_grid=grids,
            )
            rows.append(row)
            print(f"fixups {dt} {m}x{n}x{k} [{cfg.key()}]: cuBLAS graph {ref_us or 0:.2f}us", flush=True)
            tol = 2e-3 if dt == "f16" else 1.6e-2
            for nm in names:
                if nm not in med:
                    continue
                bad = "" if errs.get(nm, 1) < tol else "  WRONG"
                g, th, pdl = grids[nm]
                print(
                    f"  fx {dt:4s} {m}x{n}x{k} {nm:9s} grid {str(g):14s} x{th:<4d} pdl {int(pdl)} graph "
                    f"{med[nm]:7.2f}us ({(ref_us or 0) / med[nm]:.3f}) eager {row['eager_ratio'][nm]:.2f} "
                    f"err {errs[nm]:.1e}{bad}",
                    flush=True,
                )
            cp.get_default_memory_pool().free_all_blocks()


def check_fixups(cp, log):
    """``--check`` (4 calls back to back, eager and graph, NaN-poisoned, float64) with every
    fix-up shape of ``--fixups`` on the plane-split configurations of CHECK."""
    bad = 0
    for nm in FIXUPS:
        print(f"check with fix-up shape {nm}", flush=True)
        n0 = len(log.get("check", []))
        with fixup_rule(nm):
            bad += check(cp, log)
        for r in log["check"][n0:]:
            r["fixup"] = nm
    return bad


def sanitize_fixups(cp):
    """A few calls of every fix-up shape of ``--fixups`` under compute-sanitizer: CHECK[0]
    (16x4096x4096) and CHECK[3] (16x100x130, ragged)."""
    from layoutproof.gpu.host.runtime import gemm_plan

    rng = cp.random.default_rng(4)
    for nm in FIXUPS:
        for (bm, bn, st), s, (m, n, k) in (CHECK[0], CHECK[3]):
            cfg = split_cfg(bm, bn, st, s)
            a, b = gs.make(cp, (m, k), "f16", rng), gs.make(cp, (k, n), "f16", rng)
            out = cp.zeros((m, n), dtype=a.dtype)
            with fixup_rule(nm):
                plan = gemm_plan(a, b, out, config=cfg)
            for _ in range(3):
                plan(a, b, out)
            cp.cuda.Device().synchronize()
            print(
                f"sanitize fix-up {nm} {cfg.key()} {m}x{n}x{k}: grid {plan._fix[2]} x {plan._fix_threads}",
                flush=True,
            )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--check", action="store_true")
    p.add_argument("--sanitize", action="store_true")
    p.add_argument("--time", default=None, help="MxNxK,...")
    p.add_argument("--sweep", default=None, help="MxNxK,...")
    p.add_argument("--variants", default=None, help="MxNxK,...: the pick vs the atomic reduction")
    p.add_argument("--atomic", action="store_true", help="--check/--sanitize: the atomic reduction")
    p.add_argument(
        "--cluster", action="store_true", help="--check/--sanitize/--variants: the cluster reduction (G4)"
    )
    p.add_argument(
        "--fixups",
        default=None,
        help="NAMES (splitk_fixup.FIXUP_SHAPES): --check/--sanitize run with each fix-up CTA shape (G5)",
    )
    p.add_argument(
        "--mma",
        default=None,
        help="SPECS (BMxBNxBKwWMxWNsST[bMB],...): --variants times these mma.sync configs (G6)",
    )
    p.add_argument("--fixup-time", default=None, help="MxNxK,...: the plane split with each --fixups shape")
    p.add_argument("--splits", default="1,2,4,8")
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--sweep-rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--out", default=os.environ.get("OUT", "build/splitk-decode"))
    args = p.parse_args()
    import cupy as cp

    global REDUCTION
    if args.atomic:
        REDUCTION = "atomic"
    if args.cluster:
        REDUCTION = "cluster"

    log = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode()}
    rc = 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    def save():
        (out / "splitk_decode.json").write_text(json.dumps(log, indent=1, default=str))

    if args.fixups:
        FIXUPS[:] = args.fixups.split(",")
    if args.mma:
        MMA[:] = args.mma.split(",")
        for sp in MMA:
            mma_cfg(sp)  # a bad spec stops here, before any GPU work
    if args.sanitize:
        sanitize_mma(cp) if MMA else sanitize_fixups(cp) if FIXUPS else sanitize(cp)
    if args.check:
        rc = 1 if (check_fixups(cp, log) if FIXUPS else check(cp, log)) else 0
        save()
    if args.fixup_time:
        fixup_times(cp, [tuple(int(v) for v in s.split("x")) for s in args.fixup_time.split(",")], args, log)
        save()
    if args.time:
        timing(cp, [tuple(int(v) for v in s.split("x")) for s in args.time.split(",")], args, log)
        save()
    if args.variants:
        variants(cp, [tuple(int(v) for v in s.split("x")) for s in args.variants.split(",")], args, log)
        save()
    if args.sweep:
        sweep(cp, [tuple(int(v) for v in s.split("x")) for s in args.sweep.split(",")], args, log)
        save()
    return rc


if __name__ == "__main__":
    sys.exit(main())
