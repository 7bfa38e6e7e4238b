"""A small proven-GEMM run for compute-sanitizer (memcheck): every variant (split-K, the fused
epilogue with bias along N or M, the batched kernel too), odd sizes.

compute-sanitizer --tool memcheck python bench/sanitize_gemm.py [--new | --round2 | --short-a | --staged | --blockscale]

``--new``: only the batched kernels and the epilogue inputs (bias along M / in f16, batched,
batched alpha/beta with a C input per batch, shared or in place).

``--round2``: only the newer paths, each once or a few times at odd sizes (about a minute
under memcheck on an H200): torch tensors in and out (given and new outputs, strided and
offset views, the ``layoutproof::gemm`` operator, the direct launches from base addresses of
the tiled and tiny plans); the tiny-shape kernel (``path="tiny"`` and gemm's routing, offset,
strided, reversed and transposed views, a K split over warps, the fused epilogue); the
data-parallel rows + split-K tail schedule forced at a small shape (``streamk.HybridPlan``,
its call and its direct launch; rows on both sides of the cut checked); the 128x192 and 64x192
ws tiles; the grouped kernel (zero-size groups, lists read through per-group tensor maps, the
pointer-array form, the offsets, sizes and masked MoE forms, on CuPy arrays and repeated on
torch tensors).  Each result is checked against
float64 (relative Frobenius error, no NaN left in a NaN-poisoned output) and the script exits
1 on a mismatch.

``--short-a``: A's TMA box of 16 or 32 rows (``Sm90Config.a_rows``) on every kernel built on
it (split-K with either reduction or in a cluster, the fused and the fix-up epilogue), at
outputs of 1 to 32 rows with tails, a padded A, both B layouts, f16 and bf16; exits 1 on a
mismatch.

``--staged``: operands that break the 16-byte contract (a ragged K or N, a base off the
16-byte grid; torch tensors and CuPy arrays), launched directly from base addresses: first
as the rule routes them (where its pick is the warp-specialized kernel, copied by the kernel
itself before a grid barrier: ``Sm90Config.stage_in``), then with that off (short products
read in place by two-byte loads, the others copied into the stream's padded buffer), then
every one through the copy; on the default stream
and a side stream, with new operands every call; exits 1 on a mismatch, a call that did not
launch directly, or a route not taken.

``--blockscale``: the block-scaled fp8/int8 kernel, plain and with each fused epilogue form,
at a shape with tails on M, N and K (``gemm_blockscale.py --sanitize``); exits 1 on a
mismatch.
"""

import sys
from typing import Any

import cupy as cp

from layoutproof.gpu.config import GemmConfig
from layoutproof.gpu.host.runtime import gemm
from layoutproof.gpu.kernels.splitk import SplitKConfig
from layoutproof.gpu.kernels.wgmma import Sm90Config


def round2() -> int:
    """The newer paths of the module docstring's ``--round2``; returns the exit status."""
    import numpy as np

    from layoutproof.gpu.host import grouped as hg
    from layoutproof.gpu.host import rule, runtime, streamk, tiny
    from layoutproof.gpu.kernels.grouped import GroupedConfig

    try:
        import torch
    except Exception:  # noqa: BLE001 -- no torch: the CuPy paths still run
        torch = None
    rng = cp.random.default_rng(29)
    worst: dict = {}
    bad: list = []
    ws = dict(loader="tma", schedule="ws")

    def h(shape, dt="f16"):
        x = rng.standard_normal(shape, dtype=cp.float32)
        return x.astype(cp.float16 if dt == "f16" else "bfloat16")

    def check(name, got, ref, tol):
        """``got`` (CuPy or torch) against the float64 CuPy ``ref``."""
        if torch is not None and isinstance(got, torch.Tensor):
            torch.cuda.synchronize()
            got = cp.from_dlpack(got.detach().float().contiguous())
        cp.cuda.Device().synchronize()
        g = got.astype(cp.float64)
        nan = int(cp.isnan(g).sum())
        den = float(cp.linalg.norm(ref)) or 1.0
        err = float(cp.linalg.norm(cp.nan_to_num(g, nan=0.0) - ref)) / den
        worst[name.split()[0]] = max(worst.get(name.split()[0], 0.0), err)
        if nan or not err < tol:
            bad.append(f"{name}: rel. error {err:.2e} (tol {tol:g}), {nan} NaN")
            print("MISMATCH", bad[-1], flush=True)

    def d64(x):
        if torch is not None and isinstance(x, torch.Tensor):
            return cp.from_dlpack(x.detach().double().contiguous())
        return x.astype(cp.float64)

    def tol(dt):
        return 2e-2 if dt == "bf16" else 5e-3

    # (1) torch tensors: new and given (NaN-poisoned) outputs, views, the operator, direct launches
    if torch is not None and torch.cuda.is_available():
        from layoutproof.gpu.host import torch_op

        _native_front(torch, runtime)
        op = torch_op.gemm_op
        g = torch.Generator(device="cuda").manual_seed(7)
        for tdt, dt in ((torch.float16, "f16"), (torch.bfloat16, "bf16")):
            big = torch.randn(150, 280, device="cuda", generator=g).to(tdt)
            cases = (
                ("tiny", torch.randn(7, 13, device="cuda", generator=g).to(tdt), big[:13, :17]),
                ("tiled", big[1:131, 8:208], torch.randn(200, 264, device="cuda", generator=g).to(tdt)),
                ("tiledT", big[:72, :130].t(), torch.randn(40, 72, device="cuda", generator=g).to(tdt).t()),
                ("offset", big[3:40, 5:56], big[60:111, 1:46]),
            )
            for name, a, b in cases:
                ref = d64(a) @ d64(b)
                for _ in range(2):  # the second call: the kept entry's direct launch
                    check(f"torch {dt} {name} new", runtime.gemm(a, b), ref, tol(dt))
                out = torch.full((b.shape[1], a.shape[0]), float("nan"), device="cuda").t()
                runtime.gemm(a, b, out)
                check(f"torch {dt} {name} given f32 (transposed)", out, ref, tol(dt))
                bias = torch.randn(b.shape[1], device="cuda", generator=g)
                y = op(a, b, bias, activation="relu")
                check(f"torch {dt} {name} operator", y, cp.maximum(ref + d64(bias), 0), tol(dt))
    else:
        print("torch with CUDA not available: the torch cases are not run", flush=True)

    # (2) the tiny kernel: path="tiny", gemm's routing, views, K over warps, the epilogue
    big_a, big_b = h((40, 90)), h((70, 60))
    for name, a, b in (
        ("offset", big_a[1:8, 3:20], big_b[2:19, 5:18]),
        ("strided", big_a[1:20:3, 7:79:4], big_b[::-1][3:21, 1:40:3]),
        ("transposed", big_a[:17, :7].T, big_b[:13, :17].T[:, :13]),
    ):
        out = cp.zeros((b.shape[1] + 3, a.shape[0] + 2), dtype=cp.float32)[1:-2, 2:].T
        out[...] = cp.nan
        runtime.gemm(a, b, out, path="tiny")
        check(f"tiny {name}", out, a.astype(cp.float64) @ b.astype(cp.float64), tol("f16"))
    for m, n, k, dt in ((1, 1, 1, "f16"), (7, 13, 17, "bf16"), (3, 5, 1000, "f16"), (33, 9, 130, "bf16")):
        a, b = h((m, k), dt), h((k, n), dt)
        ref = a.astype(cp.float64) @ b.astype(cp.float64)
        out = cp.full((m, n), cp.nan, dtype=cp.float32)
        runtime.gemm(a, b, out, out_dtype="f32", path="tiny")
        check(f"tiny {m}x{n}x{k} {dt} forced", out, ref, tol(dt))
        c = runtime.gemm(a, b)
        kind = type(runtime.last_launch.get("plan")).__name__
        check(f"tiny {m}x{n}x{k} {dt} auto ({kind})", c, ref, tol(dt))
    a, b = h((9, 40)), h((40, 21))
    bias, cin = rng.standard_normal(9, dtype=cp.float32), rng.standard_normal((9, 21), dtype=cp.float32)
    out = cp.full((9, 21), cp.nan, dtype=cp.float32)
    runtime.gemm(
        a, b, out, path="tiny", bias=bias, bias_along="m", activation="relu", c=cin, alpha=0.5, beta=2.0
    )
    ref = cp.maximum(0.5 * (a.astype(cp.float64) @ b.astype(cp.float64)) + 2.0 * cin + bias[:, None], 0)
    check("tiny epilogue", out, ref, tol("f16"))
    if not isinstance(runtime.last_launch.get("plan"), tiny.TinyPlan):
        bad.append("tiny epilogue: path='tiny' did not launch a TinyPlan")

    # (3) the rows + split-K tail schedule, forced at small shapes; its call and direct launch
    for (m, n, k), rows, dt in (((300, 264, 1024), 128, "f16"), ((260, 136, 520), 256, "bf16")):
        split = rule.HybridSplit(
            Sm90Config(bm=128, bn=256, stages=4, **ws),
            rows,
            SplitKConfig(Sm90Config(bm=64, bn=128, stages=8, **ws), 3),
            0.0,
            0.0,
        )
        a, b = h((m, k), dt), h((k, n), dt)
        ref = a.astype(cp.float64) @ b.astype(cp.float64)
        out = cp.full((m, n), cp.nan, dtype=a.dtype)
        plan = streamk.HybridPlan(a, b, out, split)
        plan(a, b, out)
        check(f"hybrid {m}x{n}x{k} r{rows} {dt} call", out, ref, tol(dt))
        for i in (rows - 1, rows, m - 1):  # each side of the cut written by its own launch
            check(f"hybrid {m}x{n}x{k} r{rows} {dt} row {i}", out[i], ref[i], 0.05)
        launch = plan.direct()
        if launch is None:  # CuPy's driver module lacks launchKernel: the call above ran
            print(f"hybrid {m}x{n}x{k}: no direct launch here (CuPy lacks launchKernel)", flush=True)
        else:
            out2 = cp.full((m, n), cp.nan, dtype=a.dtype)
            launch(a.data.ptr, b.data.ptr, out2.data.ptr, cp.cuda.get_current_stream().ptr)
            check(f"hybrid {m}x{n}x{k} r{rows} {dt} direct", out2, ref, tol(dt))

    # (4) the 192-column ws tiles (128x192, 64x192): tails on every dimension, both operand orders
    for t192 in rule.WAVE_TILES + rule.ROW64_RULE["tiles"]:
        for (m, n, k), (ao, bo) in (
            ((130, 200, 72), ("C", "C")),
            ((257, 390, 100), ("F", "C")),
            ((37, 45, 51), ("C", "F")),
        ):
            a, b = h((m, k)), h((k, n))
            a = cp.asfortranarray(a) if ao == "F" else a
            b = cp.asfortranarray(b) if bo == "F" else b
            out = cp.full((m, n), cp.nan, dtype=cp.float32)
            runtime.gemm(a, b, out, config=t192, out_dtype="f32")
            ref = a.astype(cp.float64) @ b.astype(cp.float64)
            check(f"{t192.key()} {m}x{n}x{k} A{ao}B{bo}", out, ref, tol("f16"))

    # (5) grouped: zero-size groups, stacked and per-group maps, pointer array, MoE forms
    K, N = 72, 40
    sizes = [0, 130, 1, 0, 67]
    G = len(sizes)
    bs = h((G, K, N))
    stacked = h((sum(sizes), K))
    ends = np.cumsum(sizes)
    a_st = [stacked[int(e) - s : int(e)] for s, e in zip(sizes, ends)]
    a_pad = [h((s, K + 8 * (i % 3)))[:, :K] for i, s in enumerate(sizes)]  # separate, padded rows
    b_list = [bs[i] for i in range(G)]
    b_kmaj = [cp.ascontiguousarray(bs[i].T).T for i in range(G)]
    for name, al, bl in (("stacked", a_st, b_list), ("maps", a_pad, b_list), ("maps-kmajor", a_pad, b_kmaj)):
        outs = hg.gemm_grouped(al, bl)
        pm = bool(hg.last_grouped_launch.get("per_group_maps"))
        for i, (x, y, c) in enumerate(zip(al, bl, outs)):
            if x.shape[0]:
                check(
                    f"grouped {name} g{i} maps={pm}",
                    c,
                    x.astype(cp.float64) @ y.astype(cp.float64),
                    tol("f16"),
                )
            elif c.shape != (0, N):
                bad.append(f"grouped {name} g{i}: empty group's result has shape {c.shape}")
        if name != "stacked" and not pm:
            bad.append(f"grouped {name}: not read through per-group maps ({hg.last_grouped_launch})")
    same = [h((37, K)) for _ in range(3)]
    outs = hg.gemm_array(same, b_list[:3], config=GroupedConfig(max_groups=16, per_group_maps=True))
    for i in range(3):
        check(
            f"grouped array g{i}", outs[i], same[i].astype(cp.float64) @ bs[i].astype(cp.float64), tol("f16")
        )
    a_moe = h((sum(sizes) + 5, K))
    offs = cp.asarray(ends.astype(np.int32))
    # the rule's base (here the ping-pong kernel) and the warp-specialized one
    for base, gcfg in (("rule", None), ("ws", GroupedConfig(max_groups=8))):
        for name, c in (
            ("moe offs", hg.gemm_moe(a_moe, bs, offs, config=gcfg)),
            ("moe sizes", hg.gemm_moe(a_moe, bs, sizes=sizes, config=gcfg)),
        ):
            for i, (s, e) in enumerate(zip(ends - np.asarray(sizes), ends)):
                if e > s:
                    ref = a_moe[int(s) : int(e)].astype(cp.float64) @ bs[i].astype(cp.float64)
                    check(f"grouped {name} ({base}) g{i}", c[int(s) : int(e)], ref, tol("f16"))
    max_m = 70
    xm = h((G, max_m, K))
    mm = cp.asarray(np.array([0, 70, 5, 0, 64], dtype=np.int32))
    y = hg.gemm_moe_masked(xm, bs, mm)
    for i, r in enumerate(cp.asnumpy(mm).tolist()):
        if r:
            check(
                f"grouped masked g{i}",
                y[i, :r],
                xm[i, :r].astype(cp.float64) @ bs[i].astype(cp.float64),
                tol("f16"),
            )

    # (6) grouped calls on torch tensors, repeated (the kept call signature): device offsets,
    # host sizes new on each call (their table built from the launch's parameters), masked
    if torch is not None:
        ta, tb = torch.from_dlpack(a_moe), torch.from_dlpack(bs)
        tx, tm = torch.from_dlpack(xm), torch.from_dlpack(mm)
        for it, sz in enumerate(([0, 130, 1, 0, 67], [5, 0, 190, 3, 0], [0, 130, 1, 0, 67])):
            e = np.cumsum(sz)
            to = torch.tensor(e.astype(np.int32), device="cuda")
            for name, c in (("offs", hg.gemm_moe(ta, tb, to)), ("sizes", hg.gemm_moe(ta, tb, sizes=sz))):
                for i, (s0, e0) in enumerate(zip(e - np.asarray(sz), e)):
                    if e0 > s0:
                        ref = a_moe[int(s0) : int(e0)].astype(cp.float64) @ bs[i].astype(cp.float64)
                        check(f"grouped-torch {name} call {it} g{i}", c[int(s0) : int(e0)], ref, tol("f16"))
            ym = hg.gemm_moe_masked(tx, tb, tm)
            for i, r in enumerate(cp.asnumpy(mm).tolist()):
                if r:
                    ref = xm[i, :r].astype(cp.float64) @ bs[i].astype(cp.float64)
                    check(f"grouped-torch masked call {it} g{i}", ym[i, :r], ref, tol("f16"))
        if len(hg._CALLS) < 3:
            bad.append(f"grouped torch: the call signatures were not kept ({len(hg._CALLS)})")

    cp.cuda.Device().synchronize()
    w = ", ".join(f"{key} {v:.2e}" for key, v in sorted(worst.items()))
    print(f"sanitize --round2 done: {len(bad)} mismatches; worst relative error {w}")
    for line in bad:
        print("  MISMATCH", line)
    return 1 if bad else 0


def short_a() -> int:
    """A's TMA box of 16 or 32 rows (``Sm90Config.a_rows``): the kernel, its split-K with the
    fix-up and with the serial reduction, the cluster reduction, the fused epilogue and the
    fix-up's epilogue, at M of 1 to 32 with tails on N and K, both B layouts, f16 and bf16,
    a padded A; each against float64.  Returns the exit status."""
    from layoutproof.gpu.kernels.epilogue import EpilogueConfig
    from layoutproof.gpu.kernels.splitk import FixupEpilogueConfig

    rng = cp.random.default_rng(17)
    ws = dict(loader="tma", schedule="ws")
    bad, worst, runs = [], 0.0, 0
    for rows in (16, 32):
        base = Sm90Config(bm=64, bn=128, stages=8, a_rows=rows, **ws)
        cfgs = (
            Sm90Config(bm=64, bn=64, stages=8, a_rows=rows, **ws),
            base,
            SplitKConfig(base, 3),
            SplitKConfig(base, 3, "serial", activation="relu"),
            SplitKConfig(base, 2, "cluster"),
            EpilogueConfig(base, "relu"),
            FixupEpilogueConfig(base, "relu"),
        )
        for cfg in cfgs:
            act = getattr(cfg, "activation", None) not in (None, "none")
            for m, n, k, bo, dt in (
                (1, 200, 520, "C", "f16"),
                (rows, 130, 200, "F", "bf16"),
                (rows - 3, 72, 1000, "C", "f16"),
            ):
                if isinstance(cfg, SplitKConfig) and cfg.reduction == "cluster" and m > 16:
                    continue  # the cluster reduction holds 16 rows
                x = rng.standard_normal((m, k + 8), dtype=cp.float32)[:, :k]  # a padded A
                a = x.astype(cp.float16 if dt == "f16" else "bfloat16")
                b = rng.standard_normal((k, n), dtype=cp.float32).astype(a.dtype)
                b = cp.asfortranarray(b) if bo == "F" else b
                ref = a.astype(cp.float64) @ b.astype(cp.float64)
                c = cp.full((m, n), cp.nan, dtype=cp.float32)
                if act:
                    bias = rng.standard_normal(n, dtype=cp.float32)
                    gemm(a, b, c, config=cfg, out_dtype="f32", bias=bias, activation="relu")
                    ref = cp.maximum(ref + bias[None, :], 0)
                else:
                    gemm(a, b, c, config=cfg, out_dtype="f32")
                cp.cuda.Device().synchronize()
                e = float(
                    cp.linalg.norm(cp.nan_to_num(c.astype(cp.float64), nan=1e30) - ref) / cp.linalg.norm(ref)
                )
                worst, runs = max(worst, e), runs + 1
                if not e < (2e-2 if dt == "bf16" else 5e-3):
                    bad.append(f"{cfg.key()} {m}x{n}x{k} B{bo} {dt}: rel. error {e:.2e}")
                    print("MISMATCH", bad[-1], flush=True)
    print(f"short A boxes: {runs} launches, worst relative error {worst:.2e}, {len(bad)} mismatches")
    return 1 if bad else 0


def _native_front(torch: Any, runtime: Any) -> None:
    """Builds the native torch front (a first torch entry starts it) and waits for it, so the
    kept signatures' later calls below go through it."""
    from layoutproof.gpu.host import torch_native

    x = torch.randn(64, 64, device="cuda").half()
    runtime.gemm(x, x)
    torch_native.wait(900)
    print(f"native torch front: {torch_native.status()}", flush=True)


def staged() -> int:
    """``--staged`` (module docstring)."""
    import torch

    from layoutproof.gpu.host import rule, runtime, torch_op

    _native_front(torch, runtime)

    bad, runs, kinds = [], 0, set()
    side = torch.cuda.Stream()
    bound = rule.ELEM_RULE["max_us"]
    # the rule's route (the staging in the launch where the pick is the ws kernel), then with
    # that off (short products read in place), then every product through the copy
    for mode, max_us, inside in (("rule", bound, True), ("in place", bound, False), ("copy", 0.0, False)):
        rule.ELEM_RULE["max_us"] = max_us
        rule.STAGE_IN_RULE["on"] = inside
        torch_op.forget_entries()
        runtime._PLANS.clear()
        runtime._DIRECT.entries.clear()
        shapes = (
            (100, 3000, 777, 0),
            (70, 777, 320, 0),
            (129, 136, 200, 1),
            (1000, 96, 57, 0),
            (1000, 3000, 777, 0),  # 40 us in place by the rule's estimate: copied
        )
        for m, n, k, off in shapes:
            for dt in (torch.float16, torch.bfloat16):
                for stream in (None, side):
                    for _rnd in range(2):
                        with torch.cuda.stream(stream or torch.cuda.current_stream()):
                            a = torch.randn(m * k + off, device="cuda").to(dt)[off:].view(m, k)
                            b = torch.randn(k, n, device="cuda").to(dt)
                            c = runtime.gemm(a, b)
                        torch.cuda.synchronize()
                        ref = a.double() @ b.double()
                        e = float((c.double() - ref).norm() / ref.norm())
                        ent = next(
                            x
                            for x in torch_op._ENTRIES.values()
                            if getattr(x, "out_shape", None) == (m, n) and x.out_tdtype == dt
                        )
                        cfg = runtime.last_launch["config"]
                        route = "in place" if getattr(cfg, "elem_loads", "") else "copy"
                        kinds.add((mode, "in launch" if getattr(cfg, "stage_in", "") else route))
                        runs += 1
                        if not e < 1e-2 or ent.direct is None:
                            bad.append(
                                f"{mode}: torch {m}x{n}x{k}+{off} {dt}: error {e:.2e}, direct {ent.direct is not None}"
                            )
                            print("MISMATCH", bad[-1], flush=True)
        for m, n, k in ((100, 3000, 777), (70, 777, 320)):
            rng = cp.random.default_rng(m + n + k)
            for _rnd in range(3):
                a = rng.standard_normal((m, k), dtype=cp.float32).astype(cp.float16)
                b = rng.standard_normal((k, n), dtype=cp.float32).astype(cp.float16)
                c = gemm(a, b)
                cp.cuda.Device().synchronize()
                ref = a.astype(cp.float64) @ b.astype(cp.float64)
                e = float(cp.linalg.norm(c.astype(cp.float64) - ref) / cp.linalg.norm(ref))
                runs += 1
                if not e < 1e-2:
                    bad.append(f"{mode}: cupy {m}x{n}x{k}: error {e:.2e}")
                    print("MISMATCH", bad[-1], flush=True)
        if len(runtime._DIRECT.entries) < 2:
            bad.append(f"{mode}: {len(runtime._DIRECT.entries)} CuPy direct entries")
    rule.ELEM_RULE["max_us"] = bound
    rule.STAGE_IN_RULE["on"] = True
    want = {("in place", "in place"), ("in place", "copy"), ("copy", "copy")}
    if {x for x in kinds if x[0] != "rule"} != want or ("rule", "in launch") not in kinds:
        bad.append(f"routes taken {sorted(kinds)}, expected {sorted(want)}")
    print(f"staged operands: {runs} calls, routes {sorted(kinds)}, {len(bad)} mismatches")
    return 1 if bad else 0


if "--staged" in sys.argv:
    sys.exit(staged())
if "--short-a" in sys.argv:
    sys.exit(short_a())
if "--blockscale" in sys.argv:
    import gemm_blockscale  # bench/ is the script's folder

    sys.exit(gemm_blockscale.sanitize())
if "--round2" in sys.argv:
    sys.exit(round2())
rng = cp.random.default_rng(3)
worst = 0.0
NEW_ONLY = "--new" in sys.argv
for cfg, (m, n, k) in [
    (c, s)
    for c in (
        GemmConfig(bm=64, bn=64, bk=32, warps_m=2, warps_n=2, stages=3),
        # the unsplit 16-row mma.sync tiles gemm takes for decode products (plan.mma_decode)
        GemmConfig(bm=16, bn=32, bk=128, warps_m=1, warps_n=2, stages=8),
        GemmConfig(bm=16, bn=64, bk=64, warps_m=1, warps_n=4, stages=8),
        Sm90Config(bm=128, bn=128, stages=4),
        Sm90Config(bm=128, bn=128, stages=4, loader="tma"),
        Sm90Config(bm=128, bn=128, stages=4, loader="tma", schedule="ws"),
        Sm90Config(loader="tma", schedule="ws"),
        Sm90Config(loader="tma", schedule="ws", cluster=2),
        Sm90Config(bm=64, bn=128, stages=4, loader="tma", schedule="ws", cluster=2),
        # split-K: (37, 45, 51) has one k-block, so most chunks are empty (they store zeros)
        SplitKConfig(Sm90Config(bm=64, bn=128, stages=8, loader="tma", schedule="ws"), 3),
        SplitKConfig(Sm90Config(bm=128, bn=128, stages=6, loader="tma", schedule="ws"), 4),
    )
    for s in ((37, 45, 51), (64, 64, 64), (1, 9, 17), (130, 260, 200))
    if not NEW_ONLY
]:
    for ao in ("C", "F"):
        for bo in ("C", "F"):
            a = rng.standard_normal((m, k), dtype=cp.float32).astype(cp.float16)
            b = rng.standard_normal((k, n), dtype=cp.float32).astype(cp.float16)
            a = cp.asfortranarray(a) if ao == "F" else a
            b = cp.asfortranarray(b) if bo == "F" else b
            c = gemm(a, b, config=cfg, out_dtype="f32")
            ref = a.astype(cp.float64) @ b.astype(cp.float64)
            worst = max(worst, float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref)))
# split-K reduced inside a cluster through distributed shared memory (M <= 16; 64x128 S2 is
# the rule's pick at N ~ 8192, the others the variants timed beside it)
_ws = dict(loader="tma", schedule="ws")
for cfg, shapes in (
    (
        SplitKConfig(Sm90Config(bm=64, bn=128, stages=8, **_ws), 2, reduction="cluster"),
        ((1, 9, 17), (16, 300, 1100)),
    ),
    (SplitKConfig(Sm90Config(bm=64, bn=256, stages=5, **_ws), 4, reduction="cluster"), ((7, 260, 1000),)),
    (SplitKConfig(Sm90Config(bm=64, bn=64, stages=8, **_ws), 2, reduction="cluster"), ((16, 130, 2000),)),
):
    for m, n, k in shapes:
        a = rng.standard_normal((m, k), dtype=cp.float32).astype(cp.float16)
        b = rng.standard_normal((k, n), dtype=cp.float32).astype(cp.float16)
        for _ in range(2):  # back to back: the second call runs on what the first left
            c = gemm(a, b, config=cfg, out_dtype="f32")
        ref = a.astype(cp.float64) @ b.astype(cp.float64)
        worst = max(worst, float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref)))
# the fused epilogue (bias + activation) on the same odd shapes
for m, n, k in ((37, 45, 51), (64, 64, 64), (1, 9, 17), (130, 260, 200)) if not NEW_ONLY else ():
    a = rng.standard_normal((m, k), dtype=cp.float32).astype(cp.float16)
    b = rng.standard_normal((k, n), dtype=cp.float32).astype(cp.float16)
    bias = rng.standard_normal(n, dtype=cp.float32)
    c = gemm(a, b, out_dtype="f32", bias=bias, activation="relu")
    ref = cp.maximum(a.astype(cp.float64) @ b.astype(cp.float64) + bias, 0)
    worst = max(worst, float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref)))
    # alpha, beta and a C input, in place (c is the output)
    c0 = rng.standard_normal((m, n), dtype=cp.float32)
    c = c0.copy()
    gemm(a, b, c, alpha=0.5, beta=-1.5, c=c, bias=bias)
    ref = 0.5 * (a.astype(cp.float64) @ b.astype(cp.float64)) - 1.5 * c0 + bias
    worst = max(worst, float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref)))
# bias along M and in f16, on the same odd shapes
for m, n, k in ((37, 45, 51), (1, 9, 17), (130, 260, 200)):
    a = rng.standard_normal((m, k), dtype=cp.float32).astype(cp.float16)
    b = rng.standard_normal((k, n), dtype=cp.float32).astype(cp.float16)
    for along, nb in (("m", m), ("n", n)):
        bias = rng.standard_normal(nb, dtype=cp.float32).astype(cp.float16)
        c = gemm(a, b, out_dtype="f32", bias=bias, activation="relu", bias_along=along)
        bb = bias.astype(cp.float64)
        ref = cp.maximum(
            a.astype(cp.float64) @ b.astype(cp.float64) + (bb[:, None] if along == "m" else bb), 0
        )
        worst = max(worst, float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref)))
# the batched kernel (one launch): both operands batched, B shared (2-D, so not folded: a
# given output), A shared, strided batches, cluster 2, a fused bias; odd sizes
for cfg in (
    None,
    Sm90Config(loader="tma", schedule="ws", cluster=2),
    Sm90Config(bm=64, bn=64, stages=8, loader="tma", schedule="ws"),
):
    for sa, sb in (
        ((3, 37, 51), (3, 51, 45)),
        ((4, 130, 200), (200, 260)),
        ((130, 64), (5, 64, 72)),
        ((2, 1, 24), (2, 24, 9)),
    ):
        a = rng.standard_normal(sa, dtype=cp.float32).astype(cp.float16)
        b = rng.standard_normal(sb, dtype=cp.float32).astype(cp.float16)
        ref = cp.matmul(a.astype(cp.float64), b.astype(cp.float64))
        out = cp.full(ref.shape, cp.nan, dtype=cp.float32)
        gemm(a, b, out, config=cfg, out_dtype="f32")
        worst = max(worst, float(cp.linalg.norm(out - ref) / cp.linalg.norm(ref)))
    a = rng.standard_normal((6, 96, 64), dtype=cp.float32).astype(cp.float16)[::2]
    b = rng.standard_normal((3, 64, 136), dtype=cp.float32).astype(cp.float16)
    bias = rng.standard_normal(136, dtype=cp.float32)
    c = gemm(a, b, config=cfg, out_dtype="f32", bias=bias, activation="relu")
    ref = cp.maximum(cp.matmul(a.astype(cp.float64), b.astype(cp.float64)) + bias, 0)
    worst = max(worst, float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref)))
    # alpha, beta and a C input read at batch stride ldcib: one C per batch (every other
    # matrix of a bigger array), one shared (2-D: ldcib 0), and in place with a bias along M
    for sa, sb in (((3, 37, 51), (3, 51, 45)), ((2, 130, 64), (2, 64, 200))):
        a = rng.standard_normal(sa, dtype=cp.float32).astype(cp.float16)
        b = rng.standard_normal(sb, dtype=cp.float32).astype(cp.float16)
        ab = cp.matmul(a.astype(cp.float64), b.astype(cp.float64))
        nb, m, n = ab.shape
        for cin in (
            rng.standard_normal((2 * nb, m, n), dtype=cp.float32)[::2],
            rng.standard_normal((m, n), dtype=cp.float32),
        ):
            out = cp.full(ab.shape, cp.nan, dtype=cp.float32)
            gemm(a, b, out, config=cfg, out_dtype="f32", c=cin, alpha=0.5, beta=-1.5)
            ref = 0.5 * ab - 1.5 * cin
            worst = max(worst, float(cp.linalg.norm(out - ref) / cp.linalg.norm(ref)))
        c0 = rng.standard_normal(ab.shape, dtype=cp.float32)
        bias = rng.standard_normal(m, dtype=cp.float32).astype(cp.float16)
        c = c0.copy()
        gemm(a, b, c, config=cfg, out_dtype="f32", c=c, alpha=0.5, beta=-1.5, bias=bias, bias_along="m")
        ref = 0.5 * ab - 1.5 * c0 + bias.astype(cp.float64)[:, None]
        worst = max(worst, float(cp.linalg.norm(c - ref) / cp.linalg.norm(ref)))
cp.cuda.Device().synchronize()
print(f"sanitize run done, worst relative error {worst:.2e}")
