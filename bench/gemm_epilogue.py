"""The fused epilogue (bias + activation) against torch's unfused ``addmm`` + the activation,
and the rule's epilogue route against the fused kernels' route it replaced: ``gemm(a, b, out,
bias=bias, activation=act)`` with the rule's pick (the plain product's kernel with the
epilogue in the fix-up kernel where the wave model says so: ``rule.epilogue_routes``) and,
with ``--old``, with ``rule.EPILOGUE_RULE["fixup"] = False`` (the fused kernels only: the
unsplit epilogue kernel or split-K's serial reduction).  Interleaved rounds (eager, events
around a batch of calls; ratio = torch's time / ours, median over the rounds), the bias in
the operands' dtype along N, each output NaN-poisoned and checked against torch's result
before timing.  Run on the GPU machine after ``source bench/device_env.sh``::

    python bench/gemm_epilogue.py --old
    python bench/gemm_epilogue.py --shapes 1x4096x4096,16x8192x28672 --dtypes f16 --acts gelu

``--pingpong`` times the ping-pong kernel (``Sm90Config(schedule="pingpong")``, the tiles of
``--pp-configs``) against the rule's cooperative pick and torch, plain (``torch.matmul``) and
with the bias + activation (``addmm`` + the activation), every output checked::

    python bench/gemm_epilogue.py --pingpong --dtypes f16 --acts gelu
    python bench/gemm_epilogue.py --pingpong --acts relu --pp-configs 64x256s5,ws:128x192s4,ws:128x256s4
    python bench/gemm_epilogue.py --pingpong --acts none --pp-configs 64x256s5,64x256s4,ws:128x256s4c2

``--acts none`` times the plain products only; ``c2`` is the cooperative kernel in 2-CTA clusters.
A shape ``BxMxNxK`` is a batched product (3-D operands, ``BatchedGemmPlan``, plain only)
against ``torch.matmul`` on the same tensors.

``--gelu-erff`` makes the "before" column the same route with the former GELU (``0.5 x (1 +
erff(x / sqrt 2))``) in place of the emitted one, kernels generated and proven afresh;
``--gelu-cheb`` the same with the ten-term Chebyshev form emitted before the degree-6 fit;
``--no-prefetch`` the same route without the bias prefetch into L1; ``--no-pairs`` the same
route with the bias loaded per register instead of once per column pair.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics

import _timing as G
import cupy as cp
from gemm_suite import peer_rounds

#: the decode and split shapes where the fused epilogue trailed addmm + the activation
SHAPES = (
    "512x512x28672,4x4096x11008,1x8192x28672,32x4096x14336,16x8192x28672,8x8192x8192,"
    "64x4096x11008,1x4096x4096,8192x8192x256"
)


def _plan(a, b, c, bias, act, fixup):
    """A plan made with the epilogue rule's fix-up routes on (the rule now) or off (before)."""
    from layoutproof.gpu.host import plan, rule

    old = rule.EPILOGUE_RULE["fixup"]
    rule.EPILOGUE_RULE["fixup"] = fixup
    try:
        return plan.GemmPlan(a, b, c, bias=bias, activation=act)
    finally:
        rule.EPILOGUE_RULE["fixup"] = old


#: the former definition of the emitted GELU, for ``--gelu-erff``
FORMER_GELU = (
    "__device__ __forceinline__ float lp_act_gelu(float x) "
    "{ return 0.5f * x * (1.f + erff(x * 0.70710678f)); }\n"
)

#: the GELU emitted before the degree-6 fit, for ``--gelu-cheb``: ``x Phi(x)`` with ``Phi(-|x|)``
#: from Numerical Recipes' ten-term Chebyshev fit of erfc, ``__fdividef`` and a select
CHEB_GELU = r"""__device__ __forceinline__ float lp_act_gelu(float x) {
  float z = fabsf(x) * 0.70710678f;
  float t = __fdividef(1.f, fmaf(0.5f, z, 1.f));
  float p = fmaf(t, 0.17087277f, -0.82215223f);
  p = fmaf(t, p, 1.48851587f);
  p = fmaf(t, p, -1.13520398f);
  p = fmaf(t, p, 0.27886807f);
  p = fmaf(t, p, -0.18628806f);
  p = fmaf(t, p, 0.09678418f);
  p = fmaf(t, p, 0.37409196f);
  p = fmaf(t, p, 1.00002368f);
  p = fmaf(t, p, -1.26551223f);
  float h = 0.5f * t * __expf(fmaf(-z, z, p));
  return x * (x >= 0.f ? 1.f - h : h);
}
"""


def _plan_former_gelu(a, b, c, bias, act, text=None, prefetch=True, pairs=True):
    """The rule's plan with another GELU helper (``text``; None: the emitted one), without
    the bias prefetch (``prefetch=False``) or with the bias loaded per register
    (``pairs=False``): the generator's memos and the kernel caches set aside (and the disk
    cache under another name) while it is made."""
    from layoutproof.gpu.host import cache, plan
    from layoutproof.gpu.kernels import epilogue, splitk, wgmma_pingpong
    from layoutproof.gpu.proof import kir

    src = kir._HELPERS["act"]
    head = "// gelu" if "// gelu" in src else "__device__ __forceinline__ float lp_act_gelu"
    i = src.index(head)  # the GELU is the last activation of the helper
    text = src[i:] if text is None else text
    tables = (
        cache._KERNELS,
        cache._SPLITK,
        epilogue._MEMO,
        splitk._MEMO,
        splitk._FIXUPS,
        wgmma_pingpong._MEMO,
        wgmma_pingpong._EP_MEMO,
    )
    saved = [dict(t) for t in tables]
    gen = cache._GEN_HASH
    kir._HELPERS["act"] = src[:i] + text
    epilogue.BIAS_PREFETCH = prefetch
    epilogue.BIAS_PAIRS = pairs
    for t in tables:
        t.clear()
    cache._GEN_HASH = f"gelu-{prefetch}-{pairs}-" + hashlib.sha256(text.encode()).hexdigest()[:10]
    try:
        return plan.GemmPlan(a, b, c, bias=bias, activation=act)
    finally:
        kir._HELPERS["act"] = src
        epilogue.BIAS_PREFETCH = True
        epilogue.BIAS_PAIRS = True
        for t, sv in zip(tables, saved):
            t.clear()
            t.update(sv)
        cache._GEN_HASH = gen


#: the shapes of the ping-pong comparison (large squares, K-light, the MLP shape)
PP_SHAPES = "8192x8192x8192,4096x4096x256,8192x8192x256,8192x8192x1024,5120x5120x5120,4096x14336x4096"


def _pp_config(text):
    """``64x256s5`` -> the ping-pong Sm90Config of that tile and stage count; ``ws:128x192s4``
    the cooperative warp-specialized one, with a ``c2`` suffix (``ws:128x256s4c2``) in 2-CTA
    clusters (B multicast)."""
    from layoutproof.gpu.kernels.wgmma_core import Sm90Config

    schedule = "ws" if text.startswith("ws:") else "pingpong"
    text, _, cl = text.removeprefix("ws:").partition("c")
    tile, st = text.split("s")
    bm, bn = (int(x) for x in tile.split("x"))
    return Sm90Config(
        bm=bm, bn=bn, stages=int(st), loader="tma", schedule=schedule, cluster=int(cl or 1)
    ).validate()


def pingpong(args):
    """The ping-pong kernels against the rule's pick and torch (see the module docstring)."""
    import torch

    from layoutproof.gpu.host import plan

    acts = {"gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu}
    rng = cp.random.default_rng(11)
    rows = []
    for dtype in args.dtypes.split(","):
        for shape in G.shapes_arg(args.shapes if args.shapes != SHAPES else PP_SHAPES):
            nb, (m, n, k) = (shape[0], shape[1:]) if len(shape) == 4 else (0, shape)
            lead = (nb,) if nb else ()
            a, b = G.make(cp, lead + (m, k), dtype, rng), G.make(cp, lead + (k, n), dtype, rng)
            bias = G.make(cp, (n,), dtype, rng)
            ta, tb, tbias = (torch.from_dlpack(x) for x in (a, b, bias))
            tc = torch.empty(lead + (m, n), dtype=ta.dtype, device=ta.device)
            fl = 2.0 * m * n * k * max(nb, 1)
            reps = max(3, min(args.reps, int(2e12 / fl) + 1)) if fl > 2e12 else args.reps
            acts_here = [x for x in args.acts.split(",") if x not in ("", "none")] if not nb else []
            make_plan = plan.BatchedGemmPlan if nb else plan.GemmPlan
            for act in [None] + acts_here:
                fn = acts.get(act)
                ref = cp.from_dlpack(torch.matmul(ta, tb) if act is None else fn(torch.addmm(tbias, ta, tb)))
                kw = {} if act is None else dict(bias=bias, activation=act)
                outs, plans = {}, {}
                for name in ["rule"] + args.pp_configs.split(","):
                    outs[name] = cp.full(lead + (m, n), cp.nan, dtype=a.dtype)
                    cfg = None if name == "rule" else _pp_config(name)
                    plans[name] = make_plan(a, b, outs[name], config=cfg, **kw)
                errs = {}
                for name, pl in plans.items():
                    pl(a, b, outs[name], bias) if act else pl(a, b, outs[name])
                    errs[name] = G.rel_err(cp, outs[name], ref)

                def call(name):
                    pl, o = plans[name], outs[name]
                    return (lambda: pl(a, b, o, bias)) if act else (lambda: pl(a, b, o))

                def peer():
                    if act is None:
                        torch.matmul(ta, tb, out=tc)
                    else:
                        torch.addmm(tbias, ta, tb, out=tc)
                        fn(tc)

                names = list(plans)
                peers = {nm: call(nm) for nm in names[1:]}
                peers["torch"] = peer
                _, times, _ = peer_rounds(cp, call("rule"), peers, reps, args.rounds)
                times["rule"] = times.pop("ours")
                med = {nm: statistics.median(ts) * 1e6 for nm, ts in times.items()}
                ok = all(e < (1e-2 if dtype == "f16" else 3e-2) for e in errs.values())
                row = dict(
                    dtype=dtype,
                    activation=act or "none",
                    shape=(f"{nb}x[{m}x{n}x{k}]" if nb else f"{m}x{n}x{k}"),
                    rule=plans["rule"].config.key(),
                    us=med,
                    vs_rule={
                        nm: statistics.median(r / p for r, p in zip(times["rule"], times[nm])) for nm in names
                    },
                    vs_torch={
                        nm: statistics.median(t / p for t, p in zip(times["torch"], times[nm]))
                        for nm in names
                    },
                    errs=errs,
                    ok=ok,
                )
                rows.append(row)
                print(
                    f"{dtype:4s} {row['activation']:4s} {row['shape']:16s} "
                    + "  ".join(f"{nm} {med[nm]:8.1f} us (torch/x {row['vs_torch'][nm]:.3f})" for nm in names)
                    + f"  torch {med['torch']:8.1f} us  {'ok' if ok else 'FAIL ' + str(errs)}  [{row['rule']}]",
                    flush=True,
                )
                cp.get_default_memory_pool().free_all_blocks()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    pps = args.pp_configs.split(",")
    print(
        "\n| shape | dtype | act | rule us | "
        + " | ".join(f"pp {p} us" for p in pps)
        + " | torch us | "
        + " | ".join(f"rule/pp {p}" for p in pps)
        + " | torch/rule | "
        + " | ".join(f"torch/pp {p}" for p in pps)
        + " | rule's pick |"
    )
    print("|---" * (5 + 3 * len(pps) + 1) + "|---|")
    for r in rows:
        print(
            f"| {r['shape']} | {r['dtype']} | {r['activation']} | {r['us']['rule']:.1f} | "
            + " | ".join(f"{r['us'][p]:.1f}" for p in pps)
            + f" | {r['us']['torch']:.1f} | "
            + " | ".join(f"{r['vs_rule'][p]:.3f}" for p in pps)
            + f" | {r['vs_torch']['rule']:.3f} | "
            + " | ".join(f"{r['vs_torch'][p]:.3f}" for p in pps)
            + f" | {r['rule']} |"
        )
    print(f"\nping-pong: {len(rows)} cases, {sum(r['ok'] for r in rows)} correct")


def main(argv=None):
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shapes", default=SHAPES)
    ap.add_argument("--dtypes", default="f16,bf16")
    ap.add_argument("--acts", default="gelu,silu")
    ap.add_argument("--old", action="store_true", help="also time the fused kernels' route (the rule before)")
    ap.add_argument(
        "--gelu-erff", action="store_true", help="'before' = the same route with the former erff GELU"
    )
    ap.add_argument(
        "--gelu-cheb", action="store_true", help="'before' = the same route with the ten-term Chebyshev GELU"
    )
    ap.add_argument(
        "--no-prefetch",
        action="store_true",
        help="'before' = the same route without the bias prefetch (epilogue.BIAS_PREFETCH = False)",
    )
    ap.add_argument(
        "--no-pairs",
        action="store_true",
        help="'before' = the same route with the bias loaded per register (epilogue.BIAS_PAIRS = False)",
    )
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", default=None)
    ap.add_argument(
        "--pingpong", action="store_true", help="the ping-pong kernels against the rule and torch"
    )
    ap.add_argument(
        "--pp-configs",
        default="64x256s5,64x128s8",
        help="ping-pong tiles: BMxBNsSTAGES,... (ws:BMxBNsSTAGES[c2]: a cooperative one, c2 in 2-CTA clusters)",
    )
    args = ap.parse_args(argv)
    if args.pingpong:
        return pingpong(args)
    acts = {"gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu, "relu": torch.relu}
    rng = cp.random.default_rng(7)
    rows = []
    for dtype in args.dtypes.split(","):
        for act in args.acts.split(","):
            fn = acts[act]
            for m, n, k in G.shapes_arg(args.shapes):
                a, b = G.make(cp, (m, k), dtype, rng), G.make(cp, (k, n), dtype, rng)
                bias = G.make(cp, (n,), dtype, rng)
                ta, tb, tbias = (torch.from_dlpack(x) for x in (a, b, bias))
                tc = torch.empty((m, n), dtype=ta.dtype, device=ta.device)
                ref = cp.from_dlpack(fn(torch.addmm(tbias, ta, tb)))
                c_new = cp.full((m, n), cp.nan, dtype=a.dtype)
                c_old = cp.full((m, n), cp.nan, dtype=a.dtype)
                new = _plan(a, b, c_new, bias, act, True)
                if args.no_prefetch:
                    old = _plan_former_gelu(a, b, c_old, bias, act, prefetch=False)
                elif args.no_pairs:
                    old = _plan_former_gelu(a, b, c_old, bias, act, pairs=False)
                elif args.gelu_erff or args.gelu_cheb:
                    text = CHEB_GELU if args.gelu_cheb else FORMER_GELU
                    old = _plan_former_gelu(a, b, c_old, bias, act, text) if act == "gelu" else None
                else:
                    old = _plan(a, b, c_old, bias, act, False) if args.old else None
                same = (
                    old is not None
                    and old.config == new.config
                    and not (args.gelu_erff or args.gelu_cheb or args.no_prefetch or args.no_pairs)
                )
                new(a, b, c_new, bias)
                errs = {"new": G.rel_err(cp, c_new, ref)}
                if old is not None and not same:
                    old(a, b, c_old, bias)
                    errs["old"] = G.rel_err(cp, c_old, ref)

                def peer():
                    torch.addmm(tbias, ta, tb, out=tc)
                    fn(tc)

                peers = {"torch": peer}
                if old is not None and not same:
                    peers["old"] = lambda: old(a, b, c_old, bias)
                fl = 2.0 * m * n * k
                reps = max(3, min(args.reps, int(2e12 / fl) + 1)) if fl > 2e12 else args.reps
                _, times, _ = peer_rounds(cp, lambda: new(a, b, c_new, bias), peers, reps, args.rounds)
                med = {nm: statistics.median(ts) * 1e6 for nm, ts in times.items()}
                ratio = statistics.median(t / o for t, o in zip(times["torch"], times["ours"]))
                if old is None:
                    old_us, old_ratio = None, None
                elif same:
                    old_us, old_ratio = med["ours"], ratio
                else:
                    old_us = med["old"]
                    old_ratio = statistics.median(t / o for t, o in zip(times["torch"], times["old"]))
                ok = all(e < (1e-2 if dtype == "f16" else 3e-2) for e in errs.values())
                row = dict(
                    dtype=dtype,
                    activation=act,
                    shape=f"{m}x{n}x{k}",
                    config=new.config.key(),
                    old_config=None if old is None else old.config.key(),
                    ours_us=med["ours"],
                    old_us=old_us,
                    torch_us=med["torch"],
                    ratio=ratio,
                    old_ratio=old_ratio,
                    errs=errs,
                    ok=ok,
                )
                rows.append(row)
                print(
                    f"{dtype:4s} {act:4s} {m}x{n}x{k:<6d} ratio {ratio:.3f}"
                    + (f" (before {old_ratio:.3f})" if old_ratio is not None else "")
                    + f"  ours {med['ours']:7.1f} us  addmm+{act} {med['torch']:7.1f} us  "
                    f"{'ok' if ok else 'FAIL ' + str(errs)}  [{row['config']}]",
                    flush=True,
                )
                cp.get_default_memory_pool().free_all_blocks()
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=1)
    print(
        "\n| shape | dtype | act | ratio now | ratio before | ours us | before us | addmm+act us | route now |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        before = "" if r["old_ratio"] is None else f"{r['old_ratio']:.3f}"
        bus = "" if r["old_us"] is None else f"{r['old_us']:.1f}"
        print(
            f"| {r['shape']} | {r['dtype']} | {r['activation']} | {r['ratio']:.3f} | {before} | "
            f"{r['ours_us']:.1f} | {bus} | {r['torch_us']:.1f} | {r['config']} |"
        )
    rs = [r["ratio"] for r in rows]
    if rs:
        gm = statistics.geometric_mean(rs)
        print(
            f"\nepilogue: {len(rs)} cases, {sum(r['ok'] for r in rows)} correct; geomean {gm:.3f}, "
            f"min {min(rs):.3f}; >= 1.0 on {sum(x >= 1.0 for x in rs)}"
        )


if __name__ == "__main__":
    main()
