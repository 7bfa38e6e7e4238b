"""The default rule's picks against other configurations the library already has, per shape,
in device time (CUDA-graph replay) with cuBLAS (``torch.matmul`` replayed from a torch graph)
in the same rounds, f16 and bf16, every output checked against float64 before and after.

On the GPU machine, from the repository root (after ``source bench/device_env.sh``)::

    python3 bench/rule_sweep.py --compile-jobs 14       # the built-in shapes and candidates
    python3 bench/rule_sweep.py --shapes 4x4096x11008 --cands W64x256s5,K64x256s5/8,M16x32x128w1x2s8

Without ``--cands`` each shape takes its own list (:data:`PLAN`).  A candidate spec:

* ``pick`` -- what ``gemm_plan(a, b, c)`` runs (the runtime's rule);
* ``full`` -- the rule's pick without A's short TMA box (``SHORT_A_RULE`` off); ``nofill``
  -- with the box but the 64-row output's pick in place of the one-wave 64x64 split
  (``SHORT_A_RULE["fill"]`` off);
* ``WbmxbnsS`` (``c2``: a 2-CTA cluster; ``rR``: A's box of ``R`` rows, ``a_rows``) -- a
  warp-specialized TMA ``Sm90Config``; ``PbmxbnsS`` the ping-pong schedule's;
* ``Kbmxbns S/sp`` -- that base split ``sp`` ways, the fix-up reduction; ``C...`` the cluster
  reduction;
* ``MbmxbnxbkwWMxWNsS`` -- an mma.sync ``GemmConfig`` (the 16-row decode tiles); ``F...`` the
  same tile into one f32 plane and the one-plane fix-up (the epilogue's route).

``--epilogue ACT`` times ``bias`` (operands' dtype, along N) + ``ACT`` on every plan, against
``torch.addmm`` + the activation replayed from a torch graph, outputs against float64.

``--prepare DIR`` (CPU, no GPU) generates and proves every kernel the plan needs into the
kernel cache ``DIR`` (``LAYOUTPROOF_CACHE``), so the GPU call only compiles; ``--compile-jobs
N`` compiles every kernel in ``N`` processes first (CuPy's disk cache), then times.  JSON goes
to ``$OUT/rule_sweep`` (or ``bench/out/rule_sweep``).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time

import _timing as gs

K_LIGHT = ["W128x256s4", "W128x256s4c2", "W128x192s4", "W128x128s6", "W64x256s5", "W64x128s8"]
DECODE_4096 = [
    "K64x256s5/8",
    "K64x256s5/4",
    "K64x128s8/4",
    "K64x64s8/2",
    "C64x64s8/2",
    "C64x128s8/4",
    "M16x32x128w1x2s8",
    "M16x32x128w1x2s6",
    "M16x64x64w1x4s8",
]
PLAN = {
    (4, 4096, 11008): DECODE_4096,
    (1, 4096, 11008): DECODE_4096,
    (16, 4096, 11008): DECODE_4096,
    (1, 14336, 4096): [
        "K64x256s5/2",
        "W64x256s5",
        "W64x128s8",
        "C64x256s5/2",
        "M16x64x64w1x4s8",
        "M16x32x128w1x2s8",
    ],
    (64, 11008, 4096): ["W64x128s8", "W64x256s5", "K64x256s5/2", "K64x256s5/3", "W64x64s8", "W128x192s4"],
    (64, 14336, 4096): ["W64x128s8", "W64x256s5", "K64x256s5/2", "W64x64s8"],
    (32, 4096, 14336): [
        "K64x256s5/8",
        "K64x256s5/6",
        "K64x256s5/4",
        "K64x128s8/4",
        "K64x64s8/2",
        "M16x32x128w1x2s8",
    ],
    (32, 28672, 8192): [
        "W64x256s5",
        "W64x128s8",
        "W128x256s4",
        "W128x192s4",
        "K64x256s5/2",
        "M16x64x64w1x4s8",
    ],
    (128, 8192, 8192): ["W64x128s8", "K64x256s5/2", "K128x128s6/2", "K128x256s4/4", "W64x256s5"],
    (512, 512, 28672): ["K64x256s5/8", "K64x128s8/4", "K128x128s6/8", "K64x64s8/2", "K128x256s4/16"],
    (4096, 4096, 256): K_LIGHT,
    (4096, 4096, 512): K_LIGHT,
    (8192, 8192, 256): K_LIGHT,
    (6144, 6144, 256): K_LIGHT,
}

#: named plans (``--plan``): the rule's new picks against the picks they replace, on the suite's
#: shapes that moved and on shapes beside them (plain; ``verify_ep`` with ``--epilogue``)
PLANS = {
    "verify": {
        (4, 4096, 11008): ["M16x32x128w1x2s8", "K64x128s8/4"],
        (1, 14336, 4096): ["K64x256s5/2"],
        (1, 4096, 8192): ["M16x32x128w1x2s8"],
        (8, 4096, 14336): ["M16x32x128w1x2s8"],
        (12, 4096, 28672): ["M16x32x128w1x2s8"],
        (16, 14336, 4096): ["W64x128s8"],
        (4, 14336, 8192): ["K64x256s5/2"],
        (1, 16384, 4096): ["W64x128s8"],
        (16, 16384, 8192): ["W64x128s8"],
        (8, 13824, 4096): ["K64x256s5/2"],
        (16, 14336, 14336): ["K64x256s5/2"],
    },
    "verify_ep": {
        (4, 4096, 11008): ["F16x32x128w1x2s8"],
        (1, 14336, 4096): ["K64x256s5/2"],
        (16, 14336, 4096): ["W64x128s8"],
        (1, 16384, 4096): ["W64x128s8"],
    },
    # outputs of 17-32 rows (most of A's 64-row TMA box zero-filled), where the rule's 64x64
    # pick trails cuBLAS by 20-33% (bench/RESULTS.md, "Outputs of fewer than 64 rows"): the
    # 64x128 tile and the splits the wave model takes once the 64x64 tile is set aside
    "partial_rows": {
        s: ["W64x64s8", "W64x128s8", "K64x256s5/4", "K64x256s5/6", "K64x256s5/2", "M32x64x64w1x4s8"]
        for s in [
            (24, 6144, 4096),
            (32, 6144, 4096),
            (24, 5120, 13824),
            (32, 5120, 13824),
            (24, 8192, 4096),
            (24, 7168, 7168),
            (32, 7168, 7168),
            (24, 5120, 5120),
            (24, 8192, 8192),
            (17, 6144, 4096),
        ]
    },
    # A's TMA box cut to the output's rows (SHORT_A_RULE): the rule's pick against the pick
    # without the short box, and the short-box 64x64 and 64x128 tiles, over the decode widths
    # of 7B-70B models (bench/RESULTS.md, "A's TMA box of 16 or 32 rows")
    "short_a": {
        (m, n, k): ["full", f"W64x64s8r{16 if m <= 16 else 32}", f"W64x128s8r{16 if m <= 16 else 32}"]
        for m in (1, 16, 24, 32)
        for n, k in [
            (6144, 4096),
            (4096, 4096),
            (11008, 4096),
            (4096, 11008),
            (14336, 4096),
            (4096, 14336),
            (5120, 13824),
            (13824, 5120),
            (8192, 8192),
            (28672, 8192),
            (8192, 28672),
            (2048, 4096),
            (1024, 4096),
            (9216, 4096),
            (7168, 7168),
            (5120, 5120),
        ]
    },
}


def parse(spec, shape=None, prob=None, epilogue=False):
    """The configuration of one spec (``pick`` -> None; ``full`` needs the ``shape``)."""
    from layoutproof.gpu.config import GemmConfig
    from layoutproof.gpu.kernels.splitk import SplitKConfig
    from layoutproof.gpu.kernels.wgmma import Sm90Config

    if spec == "pick":
        return None
    if spec in ("full", "nofill"):  # the rule's pick without A's short box, or without its fill
        from layoutproof.gpu.host import rule

        key, off = ("rows", ()) if spec == "full" else ("fill", False)
        saved = rule.SHORT_A_RULE[key]
        rule.SHORT_A_RULE[key] = off
        try:
            return rule.choose_config(*shape, prob, hopper=True, tma=True, mma=True, epilogue=epilogue)
        finally:
            rule.SHORT_A_RULE[key] = saved
    mt = re.fullmatch(r"([WKCP])(\d+)x(\d+)s(\d+)(c2)?(?:r(\d+))?(?:/(\d+))?", spec)
    if mt:
        kind, bm, bn, st, c2, ar, sp = mt.groups()
        base = Sm90Config(
            bm=int(bm),
            bn=int(bn),
            stages=int(st),
            loader="tma",
            schedule="pingpong" if kind == "P" else "ws",
            cluster=2 if c2 else 1,
            a_rows=int(ar or 64),
        ).validate()
        if kind in "WP":
            return base
        return SplitKConfig(base, int(sp), "kernel" if kind == "K" else "cluster").validate()
    if spec.startswith("F"):  # the decode tile into one f32 plane, the fix-up applies the epilogue
        from layoutproof.gpu.kernels.splitk import FixupEpilogueConfig

        return FixupEpilogueConfig(parse("M" + spec[1:]))
    mt = re.fullmatch(r"M(\d+)x(\d+)x(\d+)w(\d+)x(\d+)s(\d+)", spec)
    if mt:
        bm, bn, bk, wm, wn, st = (int(v) for v in mt.groups())
        return GemmConfig(bm=bm, bn=bn, bk=bk, warps_m=wm, warps_n=wn, stages=st).validate()
    raise SystemExit(f"rule_sweep: bad candidate spec {spec!r}")


def jobs(args):
    """[(shape, [spec, ...])] of this run."""
    if args.plan:
        return [(s, ["pick"] + c) for s, c in PLANS[args.plan].items()]
    if args.shapes:
        shapes = gs.shapes_arg(args.shapes)
        return [(s, ["pick"] + (args.cands.split(",") if args.cands else PLAN.get(s, []))) for s in shapes]
    return [(s, ["pick"] + c) for s, c in PLAN.items()]


def problems(dtypes):
    from layoutproof.gpu.config import GemmProblem

    return [GemmProblem(a_major="k", b_major="n", dtype=dt, out_dtype=dt) for dt in dtypes]


def all_kernels(args):
    """Every (config, problem) the run launches: the candidates and the rule's picks."""
    from layoutproof.gpu.host.rule import choose_config

    out = {}
    for (m, n, k), specs in jobs(args):
        for prob in problems(args.dtypes.split(",")):
            for sp in specs:
                ep = bool(args.epilogue)
                cfg = parse(sp, (m, n, k), prob, ep) or choose_config(
                    m, n, k, prob, hopper=True, tma=True, mma=True, epilogue=ep
                )
                if ep:  # the kernels a plan with a bias and the activation compiles
                    cfg = _with_act(cfg, args.epilogue, prob)
                out[(cfg.key(), prob.key())] = (cfg, prob)
    return list(out.values())


def _with_act(cfg, act, prob):
    """``cfg`` with a bias (the operands' dtype, along N) and ``act``, as ``decide`` sets it."""
    from layoutproof.gpu.host import rule as P

    req = P.GemmRequest(
        a=P.OperandFacts((64, 64), (128, 2), 2),
        b=P.OperandFacts((64, 64), (128, 2), 2),
        dtype=prob.dtype,
        out_dtype=prob.out_dtype,
        out_itemsize=2,
        activation=act,
        bias=True,
        bias_dtype=prob.dtype,
    )
    return P.with_epilogue(cfg, req, True, True)


def prepare(args):
    """Generate and prove every kernel into the disk cache (CPU only)."""
    t0 = time.perf_counter()
    ks = all_kernels(args)
    for cfg, prob in ks:
        _kernels(cfg, prob)
    print(f"prepared {len(ks)} kernels in {time.perf_counter() - t0:.1f} s", flush=True)


def _kernels(cfg, prob):
    """The generated kernels a plan of ``cfg`` launches (from the disk cache when there)."""
    from layoutproof.gpu.host.cache import kernels_for

    return tuple(k for k in kernels_for(cfg, prob) if k is not None)


def _compile_some(items):
    from layoutproof.gpu.host.cache import compile_kernel

    done = 0
    for cfg, prob in items:
        try:
            for kk in _kernels(cfg, prob):
                if kk is not None:
                    compile_kernel(kk)
                    done += 1
        except Exception as ex:  # reported; the timing step reports it again for its shape
            print(f"  compile {cfg.key()} {prob.key()}: {type(ex).__name__}: {ex}", flush=True)
    return done


def compile_all(args):
    import multiprocessing as mp

    ks = all_kernels(args)
    n = max(1, args.compile_jobs)
    parts = [ks[i::n] for i in range(n)]
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(n) as pool:
        done = sum(pool.map(_compile_some, parts))
    print(f"compiled {done} modules ({len(ks)} configs) in {time.perf_counter() - t0:.1f} s", flush=True)


def _act64(cp, x, act):
    """The activation in float64 (gelu: the erf form, as the kernels)."""
    if act == "gelu":
        from cupyx.scipy.special import erf

        return 0.5 * x * (1.0 + erf(x / 2**0.5))
    if act == "silu":
        return x / (1.0 + cp.exp(-x))
    return cp.maximum(x, 0.0)


def _torch_peer(a, b, c, bias, act, reps):
    """A replay timer (seconds per call) of ``torch.matmul`` (or ``addmm`` + ``act``) captured
    once in a torch CUDA graph of ``reps`` calls."""
    import torch

    ta, tb, tc = torch.from_dlpack(a), torch.from_dlpack(b), torch.from_dlpack(c)
    fns = {"gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu, "relu": torch.relu}
    if act:
        tbias = torch.from_dlpack(bias)

        def call():
            torch.addmm(tbias, ta, tb, out=tc)
            fns[act](tc)
    else:

        def call():
            torch.matmul(ta, tb, out=tc)

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            call()

    def replay():
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ts = []
        for _ in range(3):
            e0.record()
            g.replay()
            e1.record()
            e1.synchronize()
            ts.append(e0.elapsed_time(e1) / 1e3 / reps)
        return statistics.median(ts)

    return replay


def row(cp, shape, dt, specs, args):
    """Graph time of every candidate and of the torch peer in the same rounds (order rotated),
    each output against float64 before and after the timing."""
    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host.rule import choose_config
    from layoutproof.gpu.host.runtime import gemm_plan

    m, n, k = shape
    reps = args.reps
    act = args.epilogue
    rng = cp.random.default_rng(31)
    a, b = gs.make(cp, (m, k), dt, rng), gs.make(cp, (k, n), dt, rng)
    bias = gs.make(cp, (n,), dt, rng) if act else None
    ref64 = cp.matmul(a.astype(cp.float64), b.astype(cp.float64))
    if act:
        ref64 = _act64(cp, ref64 + bias.astype(cp.float64)[None, :], act)
    c = cp.empty((m, n), dtype=a.dtype)
    c_peer = cp.empty((m, n), dtype=a.dtype)
    extra = (bias,) if act else ()
    opts = dict(bias=bias, activation=act) if act else {}

    def err_of(plan):
        c.fill(cp.nan)
        plan(a, b, c, *extra)
        plan(a, b, c, *extra)
        cp.cuda.Device().synchronize()
        return gs.max_rel_err(cp, c, ref64)

    graphs, errs, keys, plans = {}, {}, {}, {}
    prob = GemmProblem(a_major="k", b_major="n", dtype=dt, out_dtype=dt)
    for sp in specs:
        cfg = parse(sp, shape, prob, bool(act))
        try:
            plan = gemm_plan(a, b, c, config=cfg, **opts)
            key = plan.config.key() if hasattr(plan, "config") else type(plan).__name__
            errs[sp] = err_of(plan)
            graphs[sp] = gs.graph_of(cp, lambda plan=plan: plan(a, b, c, *extra), reps)
            keys[sp], plans[sp] = key, plan
        except Exception as ex:
            print(f"  {sp} {m}x{n}x{k} {dt}: {type(ex).__name__}: {ex}", flush=True)
    peer = _torch_peer(a, b, c_peer, bias, act, reps)
    t = {sp: [] for sp in graphs}
    t_ref = []
    for rnd in range(args.rounds):
        for sp in gs.rotated(list(graphs), rnd):
            if graphs[sp]:
                t[sp].append(gs.graph_time(cp, graphs[sp], reps) * 1e6)
        t_ref.append(peer() * 1e6)
    for sp, plan in plans.items():
        errs[sp] = max(errs[sp], err_of(plan))
    return dict(
        dtype=dt,
        m=m,
        n=n,
        k=k,
        epilogue=act,
        rule=choose_config(m, n, k, prob, hopper=True, tma=True, mma=True, epilogue=bool(act)).key(),
        cublas_us=statistics.median(t_ref) if t_ref else None,
        cublas_all=t_ref,
        configs=keys,
        us={sp: statistics.median(v) for sp, v in t.items() if v},
        us_all=t,
        err=errs,
    )


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--shapes", default=None, help="MxNxK,... (default: the built-in plan)")
    p.add_argument("--plan", default=None, help="a named plan of PLANS instead of PLAN")
    p.add_argument("--cands", default=None, help="specs for --shapes (default: the plan's for each)")
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("--epilogue", default=None, help="gelu, silu or relu: a bias and the activation")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--prepare", action="store_true", help="generate and prove only (no GPU)")
    p.add_argument("--compile-jobs", type=int, default=0)
    p.add_argument("--out", default=None)
    args = p.parse_args()
    if args.prepare:
        prepare(args)
        return 0
    if args.compile_jobs:
        compile_all(args)
    import cupy as cp

    out = gs.out_dir("rule_sweep", args.out)
    log = {"gpu": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(), "rows": []}
    t0 = time.perf_counter()
    for shape, specs in jobs(args):
        for dt in args.dtypes.split(","):
            r = row(cp, shape, dt, specs, args)
            log["rows"].append(r)
            (out / "rule_sweep.json").write_text(json.dumps(log, indent=1, default=str))
            ref, us = r["cublas_us"] or float("nan"), r["us"]
            m, n, k = shape
            print(f"{dt} {m}x{n}x{k}: cuBLAS {ref:.2f} us; rule {r['rule']}", flush=True)
            for sp in sorted(us, key=us.get):
                bad = "" if r["err"][sp] < gs.tol(dt) else "  WRONG"
                print(
                    f"  {dt:4s} {m}x{n}x{k} {sp:18s} {r['configs'][sp]:36s} {us[sp]:8.2f} us "
                    f"({ref / us[sp]:.3f}) err {r['err'][sp]:.1e}{bad}",
                    flush=True,
                )
            cp.get_default_memory_pool().free_all_blocks()
    print(f"timed in {time.perf_counter() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
