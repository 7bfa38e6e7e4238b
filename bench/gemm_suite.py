"""The GEMM suite: ``layoutproof.gpu.gemm`` as a user calls it (default config, plan cache)
against the faster of cuBLAS behind ``cupy.matmul`` and cuBLASLt behind ``torch.matmul`` on
the shapes people run, plus host time per call.

Run on the GPU machine from the repository root (``source bench/device_env.sh`` first)::

    python bench/gemm_suite.py                 # suite + host time (f16 and bf16)
    python bench/gemm_suite.py --sweep         # every default-rule candidate, timed
    python bench/gemm_suite.py --epilogue gelu,silu --no-suite --no-host   # fused epilogue

Raw output: ``bench/out/suite/gemm_suite.json`` (or ``--out``).

Method (suite): fresh N(0,1) operands, row-major A and B, one output per side allocated
once; batched shapes ``B x [M x N x K]`` are 3-D operands (``bB``: B a shared 2-D matrix).
The peers are ``cupy.matmul`` (cuBLAS; CuPy has no batched bf16) and ``torch.matmul``
(cuBLASLt for 2-D products, cuBLAS's strided-batched GEMM for 3-D ones), each writing into
an output allocated once.  Each shape is checked first (ours against a peer, relative
Frobenius error, NaN-poisoned output).  Then ``--rounds`` interleaved rounds; in each round
one batch of ``--reps`` back-to-back launches of ours and one of each peer, each between two
CUDA events (so the host's launch cost counts where it exceeds the GPU time, as it does for
a user); the reported ratio is the median over rounds of (faster peer's time in that round /
our time) -- 1.0 = the faster peer's speed; ``ratio_cupy`` and ``ratio_torch`` are each
peer's alone.  ``graph`` columns: device time without the host -- ours captured once in a
CUDA graph and replayed, the peer as ``torch.matmul`` in a torch CUDA graph (CuPy refuses
cuBLAS calls under capture).  Host us/call: CPU time to issue one call (``perf_counter``
around a batch, before synchronizing), the minimum over rounds.  The summary gives, per
dtype, the geometric mean of the ratios, the smallest, and 8192^3's.
``LAYOUTPROOF_BENCH_FULL_PATH=1`` (read here only) makes ``gemm`` on CuPy arrays take its
full path on every call, as before the direct launch, for before/after eager ratios.

Host section (unless ``--no-host``; shapes ``--host-shapes``, default 512^3, 1024^3,
1x4096x4096, 16x4096x4096, 7x13x17): host us per call of ``gemm`` on CuPy arrays with a new
and a given output through its full path and through the kept direct launch, a kept plan,
``cupy.matmul`` and ``torch.matmul`` (new and given output) and ``gemm`` on torch tensors,
batches of 200 calls (the launch queue never full), the minimum over 15 interleaved rounds;
then the pieces of one call (allocations, stream and device queries, the key, the bare
launch, the torch route's pieces).

``--epilogue ACTS`` times ``gemm(a, b, out, bias=bias, activation=act)`` against torch's
unfused ``torch.addmm(bias, a, b)`` followed by the activation (``gelu``: erf form, as ours),
on the 2-D shapes (``--epilogue-shapes``, default: the suite's 2-D shapes), the same rounds.

``--hybrid`` times the data-parallel + split-K schedule (:func:`layoutproof.gpu.host.rule.hybrid_split`,
:mod:`layoutproof.gpu.host.streamk`) where the rule takes it (``--hybrid-shapes``, default:
the suite's 2-D shapes it is taken for), in the same interleaved rounds as the unsplit
plan (the rule's pick before it), ``cupy.matmul`` and ``torch.matmul``, and both plans in
graph replay.

``--sweep`` times every candidate of :func:`layoutproof.gpu.host.rule.default_candidates` on every
shape (f16, graph replay) and reports the rule's pick against the fastest candidate.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time

from _timing import event_batch, graph_of, graph_time, make, out_dir, rel_err, torch_graph_time

SQUARES = [(s, s, s) for s in (512, 1024, 2048, 4096, 8192, 16384)]
# LLM decode / prefill shapes of 7B-70B models: M tokens x N out-features x K in-features
LLM = [
    (1, 4096, 4096),
    (16, 4096, 4096),
    (64, 11008, 4096),
    (128, 8192, 8192),
    (256, 28672, 8192),
    (1, 14336, 4096),
    (16, 8192, 28672),
    (64, 4096, 11008),
    (256, 4096, 14336),
    (4096, 11008, 4096),
    (4096, 4096, 11008),
    (4096, 14336, 4096),
    (8192, 28672, 8192),
    (8192, 8192, 28672),
]
K_HEAVY = [(1024, 1024, 16384), (512, 512, 28672)]
K_LIGHT = [(8192, 8192, 256), (8192, 8192, 1024)]
RAGGED = [(1000, 3000, 777), (4095, 4097, 4093), (2047, 5003, 1000)]
# batched: (batch, M, N, K), "bB" = B shared by every batch (a 2-D B, numpy broadcasting)
BATCHED = [(32, 512, 512, 512), (8, 2048, 2048, 128), (16, 1024, 1024, 1024, "bB"), (64, 128, 128, 64)]
SUITE = SQUARES + LLM + K_HEAVY + K_LIGHT + RAGGED + BATCHED
# shapes beyond the first suite: mid-size squares (where a 128x256 tile leaves a partial last
# wave on 132 SMs), K-light products and decode products (M = 1..64) of 7B-70B models
MID_SQUARES = [(s, s, s) for s in (2560, 3072, 3584, 5120, 6144)]
K_LIGHT_MORE = [(4096, 4096, 256), (4096, 4096, 512), (6144, 6144, 256)]
DECODE_MORE = [
    (32, 4096, 14336),
    (1, 8192, 28672),
    (4, 4096, 11008),
    (32, 28672, 8192),
    (64, 14336, 4096),
    (8, 8192, 8192),
]
NEW = MID_SQUARES + K_LIGHT_MORE + DECODE_MORE
FULL = SUITE + NEW


def parse_shape(text):
    """``MxNxK`` or, batched, ``BxMxNxK`` (a trailing ``b``: B shared by every batch)."""
    shared = text.endswith("b")
    vals = tuple(int(v) for v in text.rstrip("b").split("x"))
    return vals + ("bB",) if shared else vals


def unpack(shape):
    """(batch or 0, M, N, K, B shared?) of a suite entry."""
    if len(shape) == 3:
        return (0,) + tuple(shape) + (False,)
    return tuple(shape[:4]) + (len(shape) > 4 and shape[4] == "bB",)


def label(shape):
    bt, m, n, k, shared = unpack(shape)
    base = f"{m}x{n}x{k}"
    return base if not bt else f"{bt}x[{base}]" + ("bB" if shared else "")


def torch_matmul(a, b):
    """(torch views of a and b, the product's torch tensor) -- the torch peer -- or None
    without torch."""
    try:
        import torch

        ta, tb = torch.from_dlpack(a), torch.from_dlpack(b)
        return ta, tb, torch.matmul(ta, tb)
    except Exception as ex:
        print(f"  torch reference failed: {type(ex).__name__}: {ex}", flush=True)
        return None


def torch_matmul_into(ta, tb, tc):
    import torch

    torch.matmul(ta, tb, out=tc)


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def suite_line(row, shape):
    """The printed line of one suite row."""
    pr = lambda v: f"{v:.3f}" if v else "  -  "  # noqa: E731
    us = lambda v: f"{v:9.1f}" if v else "      -  "  # noqa: E731
    return (
        f"{row['dtype']:4s} {label(shape):>17s} ratio {row['ratio']:.3f} (cupy {pr(row['ratio_cupy'])} "
        f"torch {pr(row['ratio_torch'])}) graph {row['graph_ratio'] or float('nan'):.3f}  ours "
        f"{row['ours_us']:9.1f} us cupy {us(row['cupy_us'])} us torch {us(row['torch_us'])} us  host "
        f"{row['host_ours_us']:.1f}/{row['host_ref_us']:.1f} us  err {row['rel_err']:.1e} "
        f"{'ok' if row['ok'] else 'FAIL'}  [{row['config']}] first {row['first_call_s']:.2f}s"
    )


def peer_rounds(cp, ours, peers, reps, rounds):
    """Interleaved rounds of ``ours`` and each peer (name -> function): per round the faster
    peer's time over ours, and every function's times and host times."""
    for f in [ours, *peers.values()]:
        f()
    cp.cuda.Device().synchronize()
    times = {nm: [] for nm in ["ours", *peers]}
    hosts = {nm: [] for nm in times}
    ratios = []
    for _ in range(rounds):
        for nm, f in [("ours", ours), *peers.items()]:
            t, h = event_batch(cp, f, reps)
            times[nm].append(t)
            hosts[nm].append(h)
        ratios.append(min(times[nm][-1] for nm in peers) / times["ours"][-1])
    return ratios, times, hosts


def _per_peer(times, nm):
    """(median ratio of this peer's time over ours, median microseconds) or (None, None)."""
    if nm not in times:
        return None, None
    r = statistics.median(t / o for t, o in zip(times[nm], times["ours"]))
    return r, statistics.median(times[nm]) * 1e6


def suite(cp, args, log):
    from layoutproof.gpu.host import runtime
    from layoutproof.gpu.host.runtime import gemm

    rng = cp.random.default_rng(2026)
    rows = log.setdefault("suite", [])
    shapes = (
        (NEW if args.new_only else FULL)
        if not args.shapes
        else [parse_shape(s) for s in args.shapes.split(",")]
    )
    for dtype in args.dtypes.split(","):
        for shape in shapes:
            bt, m, n, k, shared = unpack(shape)
            sa = (bt, m, k) if bt else (m, k)
            sb = (bt, k, n) if bt and not shared else (k, n)
            a, b = make(cp, sa, dtype, rng), make(cp, sb, dtype, rng)
            cupy_ok = True
            try:
                ref = cp.matmul(a, b)
            except TypeError:  # CuPy's batched matmul has no bf16 (its integer-kernel path)
                cupy_ok = False
            tmm = torch_matmul(a, b)
            if not cupy_ok:
                if tmm is None:
                    print(f"  {label(shape)} {dtype}: no peer can run it", flush=True)
                    continue
                ref = cp.from_dlpack(tmm[2])
            c = cp.full(ref.shape, cp.nan, dtype=a.dtype)
            t0 = time.perf_counter()
            gemm(a, b, c)
            cp.cuda.Device().synchronize()
            first_s = time.perf_counter() - t0
            info = runtime.last_launch
            cfg = info["config"].key() + (f" ({info['mode']})" if bt else "")
            err = rel_err(cp, c, ref)
            nan = int(cp.isnan(c).sum())
            fl = 2.0 * m * n * k * max(bt, 1)
            reps = max(3, min(args.reps, int(2e12 / fl) + 1)) if fl > 2e12 else args.reps
            peers = {}
            if cupy_ok:
                peers["cupy"] = lambda: cp.matmul(a, b, out=ref)
            if tmm is not None:
                ta, tb, tc = tmm
                peers["torch"] = lambda: torch_matmul_into(ta, tb, tc)
            ratios, times, hosts = peer_rounds(cp, lambda: gemm(a, b, c), peers, reps, args.rounds)
            go = graph_of(cp, lambda: gemm(a, b, c), reps)
            g_ours = graph_time(cp, go, reps) if go else None
            g_ref = torch_graph_time(cp, a, b, ref, reps)
            r_cupy, t_cupy = _per_peer(times, "cupy")
            r_torch, t_torch = _per_peer(times, "torch")
            to = statistics.median(times["ours"])
            tr = min(statistics.median(times[nm]) for nm in peers)
            row = dict(
                dtype=dtype,
                batch=bt,
                b_shared=shared,
                m=m,
                n=n,
                k=k,
                new=tuple(shape) in NEW,
                config=cfg,
                first_call_s=first_s,
                rel_err=err,
                nan=nan,
                ok=nan == 0 and err < (1e-2 if dtype == "f16" else 3e-2),
                ratio=statistics.median(ratios),
                ratios=ratios,
                ours_us=to * 1e6,
                ref_us=tr * 1e6,
                ours_tflops=fl / to / 1e12,
                ref_tflops=fl / tr / 1e12,
                host_ours_us=min(hosts["ours"]) * 1e6,
                host_ref_us=min(min(hosts[nm]) for nm in peers) * 1e6,
                graph_ours_us=g_ours and g_ours * 1e6,
                graph_ref_us=g_ref and g_ref * 1e6,
                graph_ratio=(g_ref / g_ours) if (g_ours and g_ref) else None,
                reference="faster of " + "/".join(peers),
                ratio_cupy=r_cupy,
                cupy_us=t_cupy,
                host_cupy_us=min(hosts["cupy"]) * 1e6 if "cupy" in hosts else None,
                ratio_torch=r_torch,
                torch_us=t_torch,
                host_torch_us=min(hosts["torch"]) * 1e6 if "torch" in hosts else None,
            )
            rows.append(row)
            print(suite_line(row, shape), flush=True)
            cp.get_default_memory_pool().free_all_blocks()
    return rows


def epilogue(cp, args, log):
    """The fused bias + activation against torch's unfused ``addmm`` + the activation (2-D
    shapes; the bias in the operands' dtype, one value per column)."""
    import torch

    from layoutproof.gpu.host import runtime
    from layoutproof.gpu.host.runtime import gemm

    acts = {"gelu": torch.nn.functional.gelu, "silu": torch.nn.functional.silu, "relu": torch.relu}
    rng = cp.random.default_rng(7)
    rows = log.setdefault("epilogue", [])
    if args.epilogue_shapes:
        shapes = [tuple(int(v) for v in s.split("x")) for s in args.epilogue_shapes.split(",")]
    else:
        shapes = [x for x in FULL if len(x) == 3]
    for dtype in args.dtypes.split(","):
        for act in args.epilogue.split(","):
            fn = acts[act]
            for m, n, k in shapes:
                a, b = make(cp, (m, k), dtype, rng), make(cp, (k, n), dtype, rng)
                bias = make(cp, (n,), dtype, rng)
                c = cp.full((m, n), cp.nan, dtype=a.dtype)
                ta, tb, tbias = (torch.from_dlpack(x) for x in (a, b, bias))
                tc = torch.empty((m, n), dtype=ta.dtype, device=ta.device)

                def peer():
                    torch.addmm(tbias, ta, tb, out=tc)
                    fn(tc)

                gemm(a, b, c, bias=bias, activation=act)
                cp.cuda.Device().synchronize()
                cfg = runtime.last_launch["config"].key()
                ref = cp.from_dlpack(fn(torch.addmm(tbias, ta, tb)))
                err = rel_err(cp, c, ref)
                fl = 2.0 * m * n * k
                reps = max(3, min(args.reps, int(2e12 / fl) + 1)) if fl > 2e12 else args.reps
                ratios, times, _ = peer_rounds(
                    cp, lambda: gemm(a, b, c, bias=bias, activation=act), {"torch": peer}, reps, args.rounds
                )
                row = dict(
                    dtype=dtype,
                    activation=act,
                    m=m,
                    n=n,
                    k=k,
                    config=cfg,
                    rel_err=err,
                    ok=err < (1e-2 if dtype == "f16" else 3e-2),
                    ratio=statistics.median(ratios),
                    ours_us=statistics.median(times["ours"]) * 1e6,
                    torch_us=statistics.median(times["torch"]) * 1e6,
                )
                rows.append(row)
                print(
                    f"epilogue {dtype:4s} {act:4s} {m}x{n}x{k:<6d} ratio {row['ratio']:.3f}  ours "
                    f"{row['ours_us']:9.1f} us addmm+{act} {row['torch_us']:9.1f} us  err {err:.1e} "
                    f"{'ok' if row['ok'] else 'FAIL'}  [{cfg}]",
                    flush=True,
                )
                cp.get_default_memory_pool().free_all_blocks()
    return rows


HOST_SHAPES = [(512, 512, 512), (1024, 1024, 1024), (1, 4096, 4096), (16, 4096, 4096), (7, 13, 17)]


def _full_path_only(runtime):
    """Make ``gemm`` on CuPy arrays take its full path on every call (no direct entries, none
    kept); returns the function that restores the direct path."""
    kept, keep = runtime._DIRECT, runtime._keep_direct
    runtime._DIRECT = runtime._Direct()
    runtime._keep_direct = lambda *args, **kw: None

    def restore():
        runtime._DIRECT, runtime._keep_direct = kept, keep

    return restore


def _host_us(cp, fn, reps):
    """Host microseconds per call of ``reps`` back-to-back calls of ``fn`` (few enough that
    the launch queue never fills: the host is never held up by the GPU)."""
    cp.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    us = (time.perf_counter() - t0) / reps * 1e6
    cp.cuda.Device().synchronize()
    return us


def _host_parts(cp, runtime, a, b, c, reps=2000):
    """Host microseconds of the pieces of one call (the minimum of 5 batches each): the
    allocations a new output may take, the stream and device queries, the key, the bare
    launch; and, where torch is installed, the pieces of the torch route's call."""
    import functools

    m, n = a.shape[0], b.shape[1]
    dt = c.dtype
    pool = cp.get_default_memory_pool()
    nbytes = m * n * dt.itemsize
    stream = cp.cuda.get_current_stream
    gemm = runtime.gemm
    gemm(a, b, c)
    gemm(a, b, c)
    run = runtime._DIRECT.entries.get(
        runtime._direct_key(runtime._DIRECT, a, b, c, None, None, None, "auto", "n")
    )
    plan = runtime.last_launch["plan"]
    launch = plan.direct() if hasattr(plan, "direct") else None
    pa, pb, pc = a.data.ptr, b.data.ptr, c.data.ptr
    sp = stream().ptr
    parts = {
        "cupy.empty": lambda: cp.empty((m, n), dt),
        "cupy.ndarray": lambda: cp.ndarray((m, n), dt),
        "partial(cupy.ndarray)": functools.partial(cp.ndarray, (m, n), dt, order="C"),
        "ndarray(memptr=pool.malloc)": lambda: cp.ndarray((m, n), dt, memptr=pool.malloc(nbytes)),
        "ndarray(memptr=cuda.alloc)": lambda: cp.ndarray((m, n), dt, memptr=cp.cuda.alloc(nbytes)),
        "get_current_stream().ptr": lambda: stream().ptr,
        "runtime.getDevice()": cp.cuda.runtime.getDevice,
        "key": lambda: runtime._direct_key(runtime._DIRECT, a, b, c, None, None, None, "auto", "n"),
        "key + lookup": lambda: runtime._DIRECT.entries.get(
            runtime._direct_key(runtime._DIRECT, a, b, c, None, None, None, "auto", "n")
        ),
        "kept entry run(a,b,out)": (lambda: run(a, b, c)) if run else None,
        "bare launch(pa,pb,pc,sp)": (lambda: launch(pa, pb, pc, sp)) if launch else None,
    }
    try:
        import torch

        from layoutproof.gpu.host import torch_op

        ta = torch.from_dlpack(a)
        raw = torch._C._cuda_getCurrentRawStream
        tdt = ta.dtype
        parts.update(
            {
                "torch a.new_empty": lambda: ta.new_empty((m, n), dtype=tdt),
                "torch.empty(device=)": lambda: torch.empty((m, n), dtype=tdt, device=ta.device),
                "torch raw stream": lambda: raw(0),
                "torch is_compiling": torch.compiler.is_compiling,
                "torch a.data_ptr()": ta.data_ptr,
                "torch a.shape, a.stride()": lambda: (ta.shape, ta.stride()),
                "torch_op any_tensor": lambda: torch_op.any_tensor(a, b, None, None, None),
            }
        )
    except Exception as ex:
        print(f"  torch parts skipped: {type(ex).__name__}: {ex}", flush=True)
    out = {}
    for nm, f in parts.items():
        if f is None:
            continue
        r = reps if "launch" not in nm and "run" not in nm else 200
        out[nm] = min(_host_us(cp, f, r) for _ in range(5))
    return out


def host(cp, log, reps=200, rounds=15, shapes=None):
    """Host microseconds per call on small problems (issued with the launch queue never
    full, so the GPU never holds the host up): ``gemm`` on CuPy arrays with a new and a given
    output -- through its full path (checks, views, parameter packing: what every call
    cost before the direct launch; ``[full]``) and through the kept direct launch
    (``[direct]``) -- a kept plan, ``cupy.matmul`` and ``torch.matmul`` (new and given
    output), and ``gemm`` on torch tensors; the minimum over interleaved rounds.  Then the
    pieces of one call at 512^3 (:func:`_host_parts`)."""
    from layoutproof.gpu.host import runtime
    from layoutproof.gpu.host.runtime import gemm, gemm_plan

    try:
        import torch
    except Exception:
        torch = None
    out = {}
    for m, n, k in shapes or HOST_SHAPES:
        rng = cp.random.default_rng(1)
        a, b = make(cp, (m, k), "f16", rng), make(cp, (k, n), "f16", rng)
        c = gemm(a, b)
        c2 = cp.matmul(a, b)
        plan = gemm_plan(a, b, c)
        fns = {
            "gemm(a,b) [full]": lambda: gemm(a, b),
            "gemm(a,b) [direct]": lambda: gemm(a, b),
            "gemm(a,b,out) [full]": lambda: gemm(a, b, c),
            "gemm(a,b,out) [direct]": lambda: gemm(a, b, c),
            "plan(a,b,out)": lambda: plan(a, b, c),
            "cupy.matmul(a,b)": lambda: cp.matmul(a, b),
            "cupy.matmul(a,b,out)": lambda: cp.matmul(a, b, out=c2),
        }
        if torch is not None:
            ta, tb = torch.from_dlpack(a), torch.from_dlpack(b)
            tc, tc2 = torch.from_dlpack(c), torch.matmul(ta, tb)
            fns.update(
                {
                    "torch.matmul(a,b)": lambda: torch.matmul(ta, tb),
                    "torch.matmul(a,b,out)": lambda: torch.matmul(ta, tb, out=tc2),
                    "gemm(ta,tb) torch": lambda: gemm(ta, tb),
                    "gemm(ta,tb,out) torch": lambda: gemm(ta, tb, tc),
                }
            )
        for f in fns.values():  # plans, entries, cuBLAS handles: made before timing
            f()
            f()
        best = {nm: math.inf for nm in fns}
        for _ in range(rounds):
            for nm, f in fns.items():
                restore = _full_path_only(runtime) if "[full]" in nm else None
                try:
                    best[nm] = min(best[nm], _host_us(cp, f, reps))
                finally:
                    if restore is not None:
                        restore()
        ours = {"new": best["gemm(a,b) [direct]"], "out": best["gemm(a,b,out) [direct]"]}
        for kind, peer_new, peer_out in (
            ("cupy", "cupy.matmul(a,b)", "cupy.matmul(a,b,out)"),
            ("torch", "torch.matmul(a,b)", "torch.matmul(a,b,out)"),
        ):
            if peer_new in best:
                best[f"ratio new vs {kind}"] = ours["new"] / best[peer_new]
                best[f"ratio out vs {kind}"] = ours["out"] / best[peer_out]
        out[f"{m}x{n}x{k}"] = best
        print(
            f"host us/call {m}x{n}x{k}: " + ", ".join(f"{nm} {v:.2f}" for nm, v in best.items()), flush=True
        )
    a = make(cp, (512, 512), "f16", cp.random.default_rng(2))
    b = make(cp, (512, 512), "f16", cp.random.default_rng(3))
    parts = _host_parts(cp, runtime, a, b, cp.empty((512, 512), cp.float16))
    out["parts 512^3"] = parts
    print("host us, pieces (512^3): " + ", ".join(f"{nm} {v:.2f}" for nm, v in parts.items()), flush=True)
    print("\nhost us per call (f16; ours [full] -> [direct] / cupy.matmul / torch.matmul):")
    print(f"{'shape':>14s} | {'new output':^34s} | {'given output':^34s}")
    for shape, r in out.items():
        if not shape[0].isdigit():
            continue
        row = []
        for kind in ("gemm(a,b)", "gemm(a,b,out)"):
            peer = "(a,b)" if kind == "gemm(a,b)" else "(a,b,out)"
            tv = r.get("torch.matmul" + peer, math.nan)
            row.append(
                f"{r[kind + ' [full]']:5.1f} -> {r[kind + ' [direct]']:5.1f} / {r['cupy.matmul' + peer]:5.1f}"
                f" / {tv:5.1f}"
            )
        print(f"{shape:>14s} | {row[0]:^34s} | {row[1]:^34s}")
    log["host"] = out
    return out


def extra_config(text):
    """``BMxBNsS`` (``c2``: a 2-CTA cluster) as a warp-specialized TMA ``Sm90Config``."""
    from layoutproof.gpu.kernels.wgmma import Sm90Config

    cl = 2 if text.endswith("c2") else 1
    tile, st = text.removesuffix("c2").split("s")
    bm, bn = (int(v) for v in tile.split("x"))
    return Sm90Config(bm=bm, bn=bn, stages=int(st), loader="tma", schedule="ws", cluster=cl).validate()


def sweep(cp, args, log):
    from layoutproof.gpu.host import rule as P
    from layoutproof.gpu.host.device import sm_count
    from layoutproof.gpu.host.runtime import gemm

    mma = args.sweep_path == "mma.sync"
    base = P.mma_sync_candidates() if mma else P.default_candidates(True)
    if args.sweep_bases:  # only these base keys (the split-K variants of the others too)
        keep = set(args.sweep_bases.split(","))
        base = tuple(c for c in base if c.key() in keep)
    if args.sweep_extra and not mma:  # tiles beside the rule's: BMxBNsS warp-specialized TMA
        base = tuple(base) + tuple(extra_config(x) for x in args.sweep_extra.split(","))
    rng = cp.random.default_rng(5)
    sms = sm_count(cp)
    rows = log.setdefault("sweep", [])
    shapes = (
        [x for x in FULL if len(x) == 3]  # the sweep times 2-D products
        if not args.shapes
        else [tuple(int(v) for v in s.split("x")) for s in args.shapes.split(",")]
    )
    for m, n, k in shapes:
        cands = tuple(base)
        if args.splitk and not mma:  # the split-K variants the rule may pick for this shape
            sk = P.splitk_candidates(m, n, k, P.default_candidates(True), sms)
            if args.sweep_splits:
                want = {int(x) for x in args.sweep_splits.split(",")}
                sk = tuple(c for c in sk if c.splits in want)
            cands += sk
        a, b = make(cp, (m, k), "f16", rng), make(cp, (k, n), "f16", rng)
        ref = cp.matmul(a, b)
        c = cp.empty((m, n), dtype=cp.float16)
        fl = 2.0 * m * n * k
        reps = max(3, min(20, int(4e12 / fl) + 1))
        times = {}
        for cfg in cands:
            try:
                c.fill(cp.nan)
                gemm(a, b, c, config=cfg)
                cp.cuda.Device().synchronize()
                err = rel_err(cp, c, ref)
                if not err < 1e-2:
                    print(f"  {cfg.key()} {m}x{n}x{k}: WRONG rel err {err:.2e}", flush=True)
                    times[cfg.key()] = None
                    continue
                gs = graph_of(cp, lambda: gemm(a, b, c, config=cfg), reps)
                times[cfg.key()] = graph_time(cp, gs, reps) * 1e6 if gs else None
            except Exception as ex:
                print(f"  {cfg.key()} {m}x{n}x{k}: {type(ex).__name__}: {ex}", flush=True)
                times[cfg.key()] = None
        t_ref = torch_graph_time(cp, a, b, ref, reps)
        t_ref = t_ref and t_ref * 1e6
        pick = P.choose_config(m, n, k, hopper=not mma, tma=True, sms=sms).key()
        ok = {kk: v for kk, v in times.items() if v}
        best = min(ok, key=ok.get) if ok else None
        model = {c.key(): P.estimate_us(c, m, n, k, sms=sms) for c in cands}
        rows.append(
            dict(
                path=args.sweep_path,
                m=m,
                n=n,
                k=k,
                times_us=times,
                cublas_us=t_ref,
                pick=pick,
                best=best,
                model_us=model,
            )
        )
        if best:
            print(
                f"sweep {m:>5d}x{n:<5d}x{k:<5d} best {best} {ok[best]:.1f} us, rule {pick} "
                f"{(ok.get(pick) or float('nan')):.1f} us (x{(ok.get(pick) or float('nan')) / ok[best]:.2f}); "
                f"cuBLAS {t_ref or float('nan'):.1f} us",
                flush=True,
            )
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def hybrid(cp, args, log):
    """Before / after of the data-parallel + split-K schedule: per shape and dtype, the
    unsplit plan (the rule's pick), the hybrid plan, ``cupy.matmul`` and ``torch.matmul``
    in the same interleaved rounds (events around ``--reps`` back-to-back calls), the
    ratio of the faster peer over each of ours per round (median), and graph replay."""
    from layoutproof.gpu.host import rule as P
    from layoutproof.gpu.host import streamk
    from layoutproof.gpu.host.device import sm_count
    from layoutproof.gpu.host.runtime import gemm_plan

    rng = cp.random.default_rng(17)
    sms = sm_count(cp)
    rows_out = log.setdefault("hybrid", [])
    if args.hybrid_shapes:
        shapes = [tuple(int(v) for v in s.split("x")) for s in args.hybrid_shapes.split(",")]
    else:
        shapes = [x for x in FULL if len(x) == 3 and P.hybrid_split(*x, sms=sms) is not None]
    for dtype in args.dtypes.split(","):
        for m, n, k in shapes:
            split = P.hybrid_split(m, n, k, sms=sms)
            if split is None:
                print(f"hybrid {dtype} {m}x{n}x{k}: not taken by the rule", flush=True)
                continue
            a, b = make(cp, (m, k), dtype, rng), make(cp, (k, n), dtype, rng)
            ref = cp.matmul(a, b)
            c0 = cp.full((m, n), cp.nan, dtype=a.dtype)
            c1 = cp.full((m, n), cp.nan, dtype=a.dtype)
            t0 = time.perf_counter()
            unsplit = gemm_plan(a, b, c0)
            hyb = streamk.HybridPlan(a, b, c1, split)
            build_s = time.perf_counter() - t0
            unsplit(a, b, c0)
            hyb(a, b, c1)
            cp.cuda.Device().synchronize()
            errs = (rel_err(cp, c0, ref), rel_err(cp, c1, ref))
            nan = int(cp.isnan(c1).sum())
            tmm = torch_matmul(a, b)
            fns = {
                "unsplit": lambda: unsplit(a, b, c0),
                "hybrid": lambda: hyb(a, b, c1),
                "cupy": lambda: cp.matmul(a, b, out=ref),
            }
            if tmm is not None:
                ta, tb, tc = tmm
                fns["torch"] = lambda: torch_matmul_into(ta, tb, tc)
            fl = 2.0 * m * n * k
            reps = max(3, min(args.reps, int(2e12 / fl) + 1)) if fl > 2e12 else args.reps
            for f in fns.values():
                f()
            times = {nm: [] for nm in fns}
            for _ in range(args.rounds):
                for nm, f in fns.items():
                    times[nm].append(event_batch(cp, f, reps)[0])
            peers = [nm for nm in ("cupy", "torch") if nm in times]
            best_peer = [min(times[p][i] for p in peers) for i in range(args.rounds)]
            before = statistics.median(bp / t for bp, t in zip(best_peer, times["unsplit"]))
            after = statistics.median(bp / t for bp, t in zip(best_peer, times["hybrid"]))
            speedup = statistics.median(u / h for u, h in zip(times["unsplit"], times["hybrid"]))
            g = {}
            for nm in ("unsplit", "hybrid"):
                gs = graph_of(cp, fns[nm], reps)
                g[nm] = graph_time(cp, gs, reps) * 1e6 if gs else None
            row = dict(
                dtype=dtype,
                m=m,
                n=n,
                k=k,
                unsplit=unsplit.config.key(),
                hybrid=streamk.describe(split),
                build_s=build_s,
                rel_err_unsplit=errs[0],
                rel_err_hybrid=errs[1],
                nan_hybrid=nan,
                ok=nan == 0 and errs[1] < (1e-2 if dtype == "f16" else 3e-2),
                ratio_before=before,
                ratio_after=after,
                speedup=speedup,
                us={nm: statistics.median(v) * 1e6 for nm, v in times.items()},
                graph_us=g,
            )
            rows_out.append(row)
            us = row["us"]
            print(
                f"hybrid {dtype:4s} {m}x{n}x{k}: ratio vs faster peer {before:.3f} -> {after:.3f} "
                f"(x{speedup:.3f}); us unsplit {us['unsplit']:.1f} hybrid {us['hybrid']:.1f} cupy "
                f"{us['cupy']:.1f} torch {us.get('torch', float('nan')):.1f}; graph {g['unsplit'] or 0:.1f} -> "
                f"{g['hybrid'] or 0:.1f}; err {errs[1]:.1e} {'ok' if row['ok'] else 'FAIL'} "
                f"[{unsplit.config.key()} -> {split.key()}] build {build_s:.1f}s",
                flush=True,
            )
            cp.get_default_memory_pool().free_all_blocks()
    return rows_out


def splitk_parts(cp, args, log):
    """Where the rule picks split-K: device time (graph replay) of the whole call, of the
    split kernel alone (the plan's fix-up launch left out: the output is then wrong, this
    is timing only) -- the fix-up's share, launch gap included."""
    from layoutproof.gpu.host.runtime import gemm_plan

    rng = cp.random.default_rng(9)
    rows = log.setdefault("splitk_parts", [])
    shapes = [tuple(int(v) for v in s.split("x")) for s in args.splitk_parts.split(",")]
    for m, n, k in shapes:
        a, b = make(cp, (m, k), "f16", rng), make(cp, (k, n), "f16", rng)
        c = cp.empty((m, n), dtype=cp.float16)
        plan = gemm_plan(a, b, c)
        if getattr(plan, "splits", 1) == 1:
            print(f"parts {m}x{n}x{k}: not split ({plan.config.key()})", flush=True)
            continue
        reps = 20
        c.fill(cp.nan)
        whole = graph_time(cp, graph_of(cp, lambda: plan(a, b, c), reps), reps) * 1e6
        pdl = plan._pdl is not None
        ref = cp.matmul(a, b)
        err = rel_err(cp, c, ref)
        fix, plan._fix = plan._fix, None
        try:
            alone = graph_time(cp, graph_of(cp, lambda: plan(a, b, c), reps), reps) * 1e6
        finally:
            plan._fix = fix
        pd, plan._pdl = plan._pdl, None  # the fix-up in plain stream order
        try:
            c.fill(cp.nan)
            plain = graph_time(cp, graph_of(cp, lambda: plan(a, b, c), reps), reps) * 1e6
            err_plain = rel_err(cp, c, ref)
        finally:
            plan._pdl = pd
        rows.append(
            dict(
                m=m,
                n=n,
                k=k,
                config=plan.config.key(),
                whole_us=whole,
                pdl=pdl,
                whole_stream_order_us=plain,
                split_kernel_us=alone,
                rel_err=err,
                rel_err_stream_order=err_plain,
            )
        )
        print(
            f"parts {m}x{n}x{k} [{plan.config.key()}]: whole {whole:.1f} us (PDL {pdl}, err {err:.1e}), "
            f"stream order {plain:.1f} us (err {err_plain:.1e}), split kernel alone {alone:.1f} us",
            flush=True,
        )
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def sanitize(cp, only_splitk=False):
    """Every default-rule candidate (and the mma.sync ones) through gemm on odd shapes and the
    four operand layouts against float64, for ``compute-sanitizer --tool memcheck``."""
    from layoutproof.gpu.host import rule as P
    from layoutproof.gpu.host.runtime import gemm

    rng = cp.random.default_rng(11)
    worst, runs = 0.0, 0
    from layoutproof.gpu.kernels.splitk import SplitKConfig
    from layoutproof.gpu.kernels.wgmma import Sm90Config

    ws = dict(loader="tma", schedule="ws")
    splitk = (
        SplitKConfig(Sm90Config(bm=64, bn=128, stages=8, **ws), 3),
        SplitKConfig(Sm90Config(bm=128, bn=128, stages=6, **ws), 4),
    )
    cfgs = splitk if only_splitk else P.default_candidates(True) + P.mma_sync_candidates()[-2:] + splitk
    for cfg in cfgs:
        # (37, 45, 51): one k-block, so split-K's other chunks are empty (they store zeros)
        for m, n, k in ((37, 45, 51), (1, 200, 64), (130, 260, 200), (64, 64, 8), (3, 300, 1000)):
            for ao, bo in (("C", "C"), ("C", "F"), ("F", "C"), ("F", "F")):
                a = rng.standard_normal((m, k), dtype=cp.float32).astype(cp.float16)
                b = rng.standard_normal((k, n), dtype=cp.float32).astype(cp.float16)
                a = cp.asfortranarray(a) if ao == "F" else a
                b = cp.asfortranarray(b) if bo == "F" else b
                c = cp.full((m, n), cp.nan, dtype=cp.float32)
                gemm(a, b, c, config=cfg, out_dtype="f32")
                ref = a.astype(cp.float64) @ b.astype(cp.float64)
                e = float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref))
                worst = max(worst, e if e == e else float("inf"))
                runs += 1
    cp.cuda.Device().synchronize()
    print(f"sanitize run: {runs} launches, worst relative error {worst:.2e}")
    return worst < 1e-5


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None, help="folder for gemm_suite.json (default bench/out/suite)")
    p.add_argument("--sweep", action="store_true")
    p.add_argument("--sanitize", action="store_true", help="only the memcheck workload")
    p.add_argument(
        "--sweep-path",
        default="wgmma",
        choices=("wgmma", "mma.sync"),
        help="the candidates --sweep times: the Hopper rule's or the mma.sync rule's",
    )
    p.add_argument("--sanitize-splitk", action="store_true", help="only the split-K memcheck workload")
    p.add_argument("--splitk", action="store_true", help="--sweep also times the split-K variants")
    p.add_argument("--sweep-bases", default=None, help="--sweep only these base config keys (comma list)")
    p.add_argument("--sweep-extra", default=None, help="--sweep also times these tiles (BMxBNsS,...)")
    p.add_argument("--sweep-splits", default=None, help="--sweep only these split counts (comma list)")
    p.add_argument("--splitk-parts", default=None, help="MxNxK,...: time split-K's two kernels")
    p.add_argument(
        "--hybrid", action="store_true", help="before/after of the data-parallel + split-K schedule"
    )
    p.add_argument(
        "--hybrid-shapes", default=None, help="MxNxK,... for --hybrid (default: where it is taken)"
    )
    p.add_argument("--no-suite", action="store_true")
    p.add_argument("--no-host", action="store_true")
    p.add_argument("--host-shapes", default=None, help="MxNxK,...: the host section's shapes")
    p.add_argument("--shapes", default=None, help="MxNxK,... (default: the suite and the new shapes)")
    p.add_argument("--new-only", action="store_true", help="the suite on the new shapes alone")
    p.add_argument(
        "--epilogue", default=None, help="ACT,...: time the fused bias + activation against addmm + ACT"
    )
    p.add_argument(
        "--epilogue-shapes", default=None, help="MxNxK,... for --epilogue (default: the 2-D shapes)"
    )
    p.add_argument(
        "--no-fused-direct",
        action="store_true",
        help="fused calls take the full path every call (runtime.FUSED_DIRECT = False), for an A/B",
    )
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument(
        "--types",
        action="store_true",
        help="the tf32/fp8/int8 section: gemm_types.py's correctness sweep against float64",
    )
    p.add_argument(
        "--types-time", default=None, help="with --types, MxNxK,...: the typed kernels against torch's peers"
    )
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--reps", type=int, default=20)
    args = p.parse_args(argv)
    import cupy as cp

    if args.sanitize or args.sanitize_splitk:
        return 0 if sanitize(cp, only_splitk=args.sanitize_splitk) else 1
    out = out_dir("suite", args.out)
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"]
    dev = dev.decode() if isinstance(dev, bytes) else str(dev)
    log = {"device": dev, "cupy": cp.__version__, "date": time.strftime("%Y-%m-%d %H:%M")}
    try:
        if args.splitk_parts:
            splitk_parts(cp, args, log)
        if args.hybrid:
            hybrid(cp, args, log)
        if args.sweep:
            sweep(cp, args, log)
        if args.types:
            import gemm_types

            gemm_types.suite_section(cp, args, log)
        if os.environ.get("LAYOUTPROOF_BENCH_FULL_PATH") == "1":  # the CuPy route as before its direct launch
            from layoutproof.gpu.host import runtime

            _full_path_only(runtime)
            log["full_path"] = True
            print(
                "gemm on CuPy arrays: the full path on every call (LAYOUTPROOF_BENCH_FULL_PATH=1)", flush=True
            )
        if args.no_fused_direct:  # the fused calls as before their direct launch
            from layoutproof.gpu.host import runtime

            runtime.FUSED_DIRECT = False
            log["fused_direct"] = False
            print("gemm with a bias/activation: the full path on every call", flush=True)
        if not args.no_host:
            host(
                cp,
                log,
                shapes=[parse_shape(x) for x in args.host_shapes.split(",")] if args.host_shapes else None,
            )
        if not args.no_suite:
            rows = suite(cp, args, log)
            for dt in args.dtypes.split(","):
                rs = [r for r in rows if r["dtype"] == dt]
                if rs:
                    low = min(rs, key=lambda r: r["ratio"])
                    big = [
                        r["ratio"]
                        for r in rs
                        if (r["batch"], r["m"], r["n"], r["k"]) == (0, 8192, 8192, 8192)
                    ]
                    log.setdefault("summary", {})[dt] = dict(
                        geomean=geomean([r["ratio"] for r in rs]),
                        geomean_cupy=geomean([r["ratio_cupy"] for r in rs]),
                        geomean_torch=geomean([r["ratio_torch"] for r in rs]),
                        geomean_graph=geomean([r["graph_ratio"] for r in rs]),
                        min=low["ratio"],
                        min_shape=f"{low['m']}x{low['n']}x{low['k']}"
                        + (f" batch {low['batch']}" if low["batch"] else ""),
                        below_095=[f"{r['m']}x{r['n']}x{r['k']}" for r in rs if r["ratio"] < 0.95],
                        r8192=big[0] if big else None,
                        shapes=len(rs),
                        correct=sum(r["ok"] for r in rs),
                    )
        if args.epilogue:
            erows = epilogue(cp, args, log)
            for dt in args.dtypes.split(","):
                for act in args.epilogue.split(","):
                    rs = [r for r in erows if r["dtype"] == dt and r["activation"] == act]
                    if rs:
                        log.setdefault("epilogue_summary", {})[f"{dt} {act}"] = dict(
                            geomean=geomean([r["ratio"] for r in rs]),
                            min=min(r["ratio"] for r in rs),
                            below_1=[f"{r['m']}x{r['n']}x{r['k']}" for r in rs if r["ratio"] < 1.0],
                            correct=sum(r["ok"] for r in rs),
                            shapes=len(rs),
                        )
    finally:
        (out / "gemm_suite.json").write_text(json.dumps(log, indent=1, default=str))
    print(f"\n== {dev} {log['date']} ==")
    for dt, s in log.get("summary", {}).items():
        r8 = f"{s['r8192']:.3f}" if s["r8192"] else "-"
        print(
            f"{dt}: {s['shapes']} shapes, {s['correct']} correct; geomean vs faster peer {s['geomean']:.3f} "
            f"(cupy {s['geomean_cupy']:.3f}, torch {s['geomean_torch']:.3f}, graph {s['geomean_graph']:.3f}), "
            f"min {s['min']:.3f} ({s['min_shape']}), 8192^3 {r8}, below 0.95: {', '.join(s['below_095']) or 'none'}"
        )
    if "types" in log:
        bad = [r for r in log["types"] if not r.get("ok", False)]
        print(f"types: {len(log['types'])} sweep calls, {len(bad)} wrong")
    for row in log.get("types_time", []):
        print(f"types {row['dtype']} {row['m']}x{row['n']}x{row['k']}: {row['ratios']}")
    for key, s in log.get("epilogue_summary", {}).items():
        print(
            f"epilogue {key}: {s['shapes']} shapes, {s['correct']} correct; geomean {s['geomean']:.3f}, "
            f"min {s['min']:.3f}, below 1.0: {', '.join(s['below_1']) or 'none'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
