"""The grouped (MoE) GEMM on a GPU: correctness against float64 and device time against
``torch._grouped_mm`` (where the installed torch has it) or else a loop of ``torch.matmul``.

Shapes: mixture-of-experts layers with 8, 64 and 128 experts, hidden 4096 and 7168 (the
up projection K = hidden, and the down projection N = hidden), token counts per expert
uneven (a multinomial over skewed expert weights, some experts forced to zero tokens);
the contiguous form with the offsets on the device (ours: ``gemm_moe(a, b, offs)``) and with
host sizes; and the masked decode form (``gemm_moe_masked``) against a loop over experts.

Correctness: for every shape, ``max_g ||C_g - A_g @ B_g|| / ||A_g @ B_g||`` against a
float64 product (ours and the peer's), and the rows of zero-token experts absent.  Timing:
CUDA events around ``--reps`` back-to-back calls after a warm-up, the median of three
interleaved rounds per function.  Prints a table (TFLOP/s, ratio to the peer, geometric
mean) and writes ``gemm_grouped.json`` and ``gemm_grouped.log`` under ``$OUT`` (or
``bench/out/gemm_grouped``).

The contiguous form runs on the rule's base (``grouped_config``: the ping-pong or the
warp-specialized kernel); ``--both`` times each base beside it in the same rounds.  The list form
(``gemm_grouped`` over per-group tensors in separate allocations, read in
place through per-group tensor maps) is timed beside the stacked form (``--lists``); a
sweep of kernel configurations (``--sweep``: the block tile) runs on the bf16
shapes in the same process, each against the same peer.  ``--prewarm`` compiles every
kernel the run needs in parallel processes first (the compiler's disk cache then serves
the timed process).

    python3 bench/gemm_grouped.py [--dtypes bf16,f16] [--reps 20] [--quick] [--lists] [--sweep] [--both]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))

from _timing import out_dir  # noqa: E402

# (experts, tokens routed in total, K, N, name)
SHAPES = [
    (8, 8192, 4096, 14336, "mixtral-up 8e h4096"),
    (8, 8192, 14336, 4096, "mixtral-down 8e h4096"),
    (64, 16384, 7168, 2048, "64e-up h7168"),
    (64, 16384, 2048, 7168, "64e-down h7168"),
    (128, 16384, 4096, 1536, "qwen3-up 128e h4096"),
    (128, 16384, 1536, 4096, "qwen3-down 128e h4096"),
    (128, 32768, 7168, 2048, "128e-up h7168"),
    (128, 4096, 7168, 2048, "128e-up h7168 small batch"),
    (8, 256, 4096, 14336, "mixtral-up 8e, 256 tokens"),
]
MASKED = [(64, 256, 7168, 2048, "decode masked 64e"), (128, 128, 4096, 1536, "decode masked 128e")]


def _pow2(g):
    return max(8, 1 << (g - 1).bit_length())


#: the sweep's configurations: (name, GroupedConfig fields, Sm90Config fields)
SWEEP = [
    ("default", {}, {}),
    ("128x192 s4", {}, {"bn": 192}),
    ("128x128 s6", {}, {"bn": 128, "stages": 6}),
    ("64x256 s5", {}, {"bm": 64, "stages": 5}),
    ("64x128 s8", {}, {"bm": 64, "bn": 128, "stages": 8}),
]


def _sweep_config(G, gfields, bfields):
    from dataclasses import replace

    from layoutproof.gpu.kernels.grouped import GroupedConfig
    from layoutproof.gpu.kernels.wgmma_core import HOPPER_DEFAULT

    return GroupedConfig(base=replace(HOPPER_DEFAULT, **bfields), max_groups=_pow2(G), **gfields)


def _needed(dtypes, shapes, lists, sweep, both=False):
    """Every (GroupedConfig, GemmProblem) the run launches (for --prewarm)."""

    from dataclasses import replace

    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host.grouped import grouped_config
    from layoutproof.gpu.kernels.grouped import GroupedConfig

    out = set()
    for dt in dtypes:
        for G, T, K, *_ in shapes:
            out.add((grouped_config(G, "contiguous", T, K), GemmProblem("k", "n", dt, batch="b")))
            if both:
                for cfg in _bases(G):
                    out.add((cfg, GemmProblem("k", "n", dt, batch="b")))
        for G, max_m, K, *_ in MASKED:  # the masked form's rule reads its allocated rows
            out.add((grouped_config(G, "masked", G * max_m, K), GemmProblem("k", "n", dt, batch="b")))
        for G, T, K, *_ in shapes:
            if lists and dt == "bf16":
                pick = grouped_config(G, "maps", T, K)
                out.add((replace(pick, per_group_maps=True), GemmProblem("k", "n", dt, batch="b")))
    if sweep:
        for G, *_ in shapes:
            for _n, gf, bf in SWEEP:
                out.add((_sweep_config(G, gf, bf), GemmProblem("k", "n", "bf16", batch="b")))
    # the GPU tests' kernels (tests/gpu/test_gpu_grouped*.py)
    for mg in (8,):
        for dt in ("f16", "bf16"):
            out.add((GroupedConfig(max_groups=mg), GemmProblem("k", "n", dt, batch="b")))
            out.add((grouped_config(mg, "contiguous"), GemmProblem("k", "n", dt, batch="b")))
        for major in ("n", "k"):
            for base in _bases(mg):
                out.add((replace(base, per_group_maps=True), GemmProblem("k", major, "bf16", batch="b")))
    return sorted(out, key=lambda x: (x[0].key(), x[1].key()))


def _bases(G):
    """The contiguous form's two bases for ``G`` groups: (ping-pong, warp-specialized)."""
    from dataclasses import replace

    from layoutproof.gpu.host.grouped import grouped_config
    from layoutproof.gpu.kernels.wgmma_core import HOPPER_DEFAULT

    pp = grouped_config(G, "contiguous")  # no rows, no K: the ping-pong base
    return pp, replace(pp, base=HOPPER_DEFAULT)


def _compile_one(item):
    cfg, prob = item
    from layoutproof.gpu.host.cache import compile_kernel
    from layoutproof.gpu.kernels.grouped import generate_grouped

    t = time.time()
    compile_kernel(generate_grouped(cfg, prob))
    return f"{cfg.key()} {prob.key()} {time.time() - t:.1f}s"


def prewarm(items, say):
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    t = time.time()
    with ProcessPoolExecutor(max_workers=min(14, len(items)), mp_context=mp.get_context("spawn")) as ex:
        for line in ex.map(_compile_one, items):
            say(f"  compiled {line}")
    say(f"prewarm: {len(items)} kernels in {time.time() - t:.1f} s")


def _counts(np, rng, G, total):
    w = rng.lognormal(0.0, 1.0, size=G)
    w[rng.choice(G, size=max(1, G // 8), replace=False)] = 0.0  # experts that get no token
    return rng.multinomial(total, w / w.sum()).astype(np.int64)


def _time(torch, fn, reps):
    fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    torch.cuda.synchronize()
    return s.elapsed_time(e) / reps * 1e3  # microseconds


def _rel(torch, c, a, b, ends, groups):
    worst, beg = 0.0, 0
    for g in range(len(ends)):
        end = int(ends[g])
        if g in groups and end > beg:
            ref = a[beg:end].double() @ b[g].double()
            worst = max(worst, float(torch.linalg.norm(c[beg:end].double() - ref) / torch.linalg.norm(ref)))
        beg = end
    return worst


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dtypes", default="bf16,f16")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="the first three shapes, one dtype")
    ap.add_argument("--out", default=None)
    ap.add_argument("--lists", action="store_true", help="also time gemm_grouped on per-group tensors")
    ap.add_argument("--sweep", action="store_true", help="bf16: kernel configurations in the same process")
    ap.add_argument(
        "--both", action="store_true", help="also time the ping-pong and the ws base of the contiguous form"
    )
    ap.add_argument("--prewarm", action="store_true", help="compile the run's kernels in parallel first")
    ap.add_argument("--prewarm-only", action="store_true", help="compile them and stop")
    args = ap.parse_args()
    import numpy as np
    import torch

    from layoutproof.gpu.host import grouped

    out = out_dir("gemm_grouped", args.out)
    log = open(out / "gemm_grouped.log", "w")

    def say(s=""):
        print(s, flush=True)
        log.write(s + "\n")

    dtypes0 = args.dtypes.split(",")[:1] if args.quick else args.dtypes.split(",")
    if args.prewarm or args.prewarm_only:
        prewarm(
            _needed(dtypes0, SHAPES[:3] if args.quick else SHAPES, args.lists, args.sweep, args.both), say
        )
        if args.prewarm_only:
            return 0
    has_gmm = hasattr(torch, "_grouped_mm")
    say(f"torch {torch.__version__}, {torch.cuda.get_device_name()}, torch._grouped_mm: {has_gmm}")
    rng = np.random.default_rng(0)
    rows, ratios, sweeps = [], {}, []
    dtypes = dtypes0
    shapes = SHAPES[:3] if args.quick else SHAPES
    hdr = f"{'shape':30s} {'dt':4s} {'ours us':>9s} {'peer us':>9s} {'peer':>10s} {'TF ours':>8s} {'ratio':>6s} {'err ours':>9s} {'err peer':>9s}"
    say(hdr)
    for dt in dtypes:
        tdt = torch.bfloat16 if dt == "bf16" else torch.float16
        for G, T, K, N, name in shapes:
            cnt = _counts(np, rng, G, T)
            ends_h = np.cumsum(cnt)
            a = torch.randn(T, K, device="cuda", dtype=tdt)
            b = torch.randn(G, K, N, device="cuda", dtype=tdt) / math.sqrt(K)
            offs = torch.tensor(ends_h, device="cuda", dtype=torch.int32)
            ours = lambda: grouped.gemm_moe(a, b, offs)  # noqa: E731
            ours_host = lambda: grouped.gemm_moe(a, b, sizes=cnt.tolist())  # noqa: E731
            pick = grouped.grouped_config(G, "contiguous", T, K)
            cfg_pp, cfg_ws = _bases(G)
            ours_pp = lambda: grouped.gemm_moe(a, b, offs, config=cfg_pp)  # noqa: E731
            ours_ws = lambda: grouped.gemm_moe(a, b, offs, config=cfg_ws)  # noqa: E731
            peer_name = "loop"
            peer = None
            if has_gmm:
                try:
                    bt = b.transpose(1, 2).contiguous().transpose(1, 2)  # column-major experts
                    torch._grouped_mm(a, bt, offs=offs)
                    peer = lambda: torch._grouped_mm(a, bt, offs=offs)  # noqa: E731
                    peer_name = "_grouped_mm"
                except Exception as e:  # a dtype or layout this torch's kernel refuses
                    say(f"  torch._grouped_mm refused {name} {dt}: {type(e).__name__}: {str(e)[:120]}")
            if peer is None:
                begs = np.concatenate([[0], ends_h[:-1]])

                def peer(a=a, b=b, begs=begs, ends=ends_h):
                    c = torch.empty(a.shape[0], b.shape[2], device="cuda", dtype=a.dtype)
                    for g in range(b.shape[0]):
                        if ends[g] > begs[g]:
                            torch.matmul(a[begs[g] : ends[g]], b[g], out=c[begs[g] : ends[g]])
                    return c

            c = ours()
            c2 = ours_host()
            cp_ = peer()
            torch.cuda.synchronize()
            check = set(rng.choice(G, size=min(G, 6), replace=False).tolist()) | {int(np.argmax(cnt))}
            e_ours = max(_rel(torch, c, a, b, ends_h, check), _rel(torch, c2, a, b, ends_h, check))
            if args.both:
                for fn in (ours_pp, ours_ws):
                    c3 = fn()
                    torch.cuda.synchronize()
                    e_ours = max(e_ours, _rel(torch, c3, a, b, ends_h, check))
            e_peer = _rel(torch, cp_, a, b, ends_h, check)
            t_o, t_h, t_p, t_pp, t_w = [], [], [], [], []
            for _ in range(3):
                t_o.append(_time(torch, ours, args.reps))
                t_h.append(_time(torch, ours_host, args.reps))
                t_p.append(_time(torch, peer, args.reps))
                if args.both:
                    t_pp.append(_time(torch, ours_pp, args.reps))
                    t_w.append(_time(torch, ours_ws, args.reps))
            uo, uh, up = statistics.median(t_o), statistics.median(t_h), statistics.median(t_p)
            upp = statistics.median(t_pp) if t_pp else None
            uw = statistics.median(t_w) if t_w else None
            ul = None
            if (
                args.lists and dt == "bf16"
            ):  # per-group tensors in separate allocations: read through per-group maps
                begs = np.concatenate([[0], ends_h[:-1]])
                # allocated last group first: the blocks are not one buffer in group order
                a_list, b_list = [None] * G, [None] * G
                for g in reversed(range(G)):
                    a_list[g] = a[int(begs[g]) : int(ends_h[g])].clone()
                    b_list[g] = b[g].clone()
                lists = lambda: grouped.gemm_grouped(a_list, b_list)  # noqa: E731
                cl = lists()
                torch.cuda.synchronize()
                if not grouped.last_grouped_launch.get("per_group_maps"):
                    say(
                        f"  note: {name}: the list form read one stacked operand ({grouped.last_grouped_launch.get('copied')!r})"
                    )
                e_l = max(
                    float(torch.linalg.norm(cl[g].double() - c[int(begs[g]) : int(ends_h[g])].double()))
                    / max(float(torch.linalg.norm(c[int(begs[g]) : int(ends_h[g])].double())), 1e-30)
                    for g in range(G)
                    if cnt[g]
                )
                if e_l > 1e-3:
                    say(f"  ERROR: {name}: the list form differs from the stacked form by {e_l:.2e}")
                ul = statistics.median(_time(torch, lists, args.reps) for _ in range(3))
                del a_list, b_list, cl
            flop = 2.0 * T * K * N
            r = up / uo
            ratios.setdefault(dt, []).append(r)
            say(
                f"{name:30s} {dt:4s} {uo:9.1f} {up:9.1f} {peer_name:>10s} {flop / uo / 1e6:8.1f} {r:6.3f} "
                f"{e_ours:9.2e} {e_peer:9.2e}   (host sizes: {uh:.1f} us; zero-token experts: "
                f"{int((cnt == 0).sum())}"
                + (f"; lists: {ul:.1f} us" if ul is not None else "")
                + (
                    f"; base {'pp' if pick.pingpong else 'ws'}; pp {upp:.1f} us ({up / upp:.3f}), "
                    f"ws {uw:.1f} us ({up / uw:.3f})"
                    if upp is not None and uw is not None
                    else ""
                )
                + ")"
            )
            if upp is not None and uw is not None:
                ratios.setdefault(dt + " pp", []).append(up / upp)
                ratios.setdefault(dt + " ws", []).append(up / uw)
            if args.sweep and dt == "bf16":
                for cname, gf, bf in SWEEP:
                    cfg = _sweep_config(G, gf, bf)
                    fn = lambda cfg=cfg: grouped.gemm_moe(a, b, offs, config=cfg)  # noqa: E731
                    cs = fn()
                    torch.cuda.synchronize()
                    es = _rel(torch, cs, a, b, ends_h, check)
                    sr = max(5, args.reps // 2)
                    us = statistics.median(_time(torch, fn, sr) for _ in range(3))
                    up2 = statistics.median(_time(torch, peer, sr) for _ in range(3))
                    say(
                        f"  sweep {name:28s} {cname:12s} {us:9.1f} us  peer {up2:9.1f} us  ratio {up2 / us:6.3f}  err {es:.1e}"
                    )
                    sweeps.append(
                        dict(
                            shape=name,
                            config=cname,
                            key=cfg.key(),
                            us=us,
                            us_peer=up2,
                            ratio=up2 / us,
                            err=es,
                        )
                    )
            rows.append(
                dict(
                    shape=name,
                    dtype=dt,
                    experts=G,
                    tokens=T,
                    k=K,
                    n=N,
                    us_ours=uo,
                    us_ours_host_sizes=uh,
                    us_ours_lists=ul,
                    base="pp" if pick.pingpong else "ws",
                    us_ours_pp=upp,
                    us_ours_ws=uw,
                    us_peer=up,
                    peer=peer_name,
                    ratio=r,
                    err_ours=e_ours,
                    err_peer=e_peer,
                    counts=cnt.tolist(),
                )
            )
            if e_ours > 5e-2:
                say(f"  ERROR: {name} {dt}: relative error {e_ours:.3e} against float64")
        for G, max_m, K, N, name in [] if args.quick else MASKED:
            a = torch.randn(G, max_m, K, device="cuda", dtype=tdt)
            b = torch.randn(G, K, N, device="cuda", dtype=tdt) / math.sqrt(K)
            mm_h = rng.integers(0, max_m + 1, size=G)
            mm_h[: G // 8] = 0
            mm = torch.tensor(mm_h, device="cuda", dtype=torch.int32)
            ours = lambda: grouped.gemm_moe_masked(a, b, mm)  # noqa: E731

            def peer(a=a, b=b, mm_h=mm_h):
                c = torch.empty(a.shape[0], a.shape[1], b.shape[2], device="cuda", dtype=a.dtype)
                for g in range(a.shape[0]):
                    if mm_h[g]:
                        torch.matmul(a[g, : mm_h[g]], b[g], out=c[g, : mm_h[g]])
                return c

            c = ours()
            torch.cuda.synchronize()
            err = 0.0
            for g in range(G):
                if mm_h[g]:
                    ref = a[g, : mm_h[g]].double() @ b[g].double()
                    err = max(
                        err, float(torch.linalg.norm(c[g, : mm_h[g]].double() - ref) / torch.linalg.norm(ref))
                    )
            uo = statistics.median(_time(torch, ours, args.reps) for _ in range(3))
            up = statistics.median(_time(torch, peer, args.reps) for _ in range(3))
            flop = 2.0 * int(mm_h.sum()) * K * N
            say(
                f"{name:30s} {dt:4s} {uo:9.1f} {up:9.1f} {'loop':>10s} {flop / uo / 1e6:8.1f} {up / uo:6.3f} {err:9.2e}"
            )
            rows.append(
                dict(
                    shape=name,
                    dtype=dt,
                    experts=G,
                    max_m=max_m,
                    k=K,
                    n=N,
                    us_ours=uo,
                    us_peer=up,
                    peer="loop",
                    ratio=up / uo,
                    err_ours=err,
                    masked=mm_h.tolist(),
                )
            )
    for dt, rs in ratios.items():
        gm = math.exp(sum(math.log(x) for x in rs) / len(rs))
        say(f"geometric mean ratio ({dt}, contiguous, {len(rs)} shapes): {gm:.3f}")
    if sweeps:
        by = {}
        for r in sweeps:
            by.setdefault(r["config"], []).append(r["ratio"])
        for cname, rs in by.items():
            gm = math.exp(sum(math.log(x) for x in rs) / len(rs))
            say(f"sweep geometric mean ({cname}, bf16, {len(rs)} shapes): {gm:.3f}, min {min(rs):.3f}")
    (out / "gemm_grouped.json").write_text(
        json.dumps(dict(rows=rows, sweeps=sweeps, time=time.time()), indent=1)
    )
    log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
