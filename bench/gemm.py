"""The proven mma.sync GEMM on a GPU: correctness sweep, sanitizer, speed against cuBLAS.

Run on the GPU machine from the repository root (``bench/device_env.sh`` makes the
package importable without installing it)::

    python bench/gemm.py                       # everything (about 5 minutes on an H100)
    python bench/gemm.py --quick               # a few shapes, one timing size

Sections (each writes JSON to ``bench/out/gemm`` or ``--out`` and prints a short table at
the end):

* ``correctness``: 50 random shapes (1, odd sizes, 4095x4097x4093, ...) x the four operand
  layouts (A row/column-major x B row/column-major) x f16 and bf16, fresh random inputs
  (never zeros), outputs poisoned with NaN before each run; relative Frobenius error
  against a float64 reference must be < 5e-3 (f16) / 2e-2 (bf16) and no NaN may survive.
  That is section ``base`` (800 cases); ``--sections`` adds ``auto`` (gemm's default rule,
  with the kernel it took on the decode shapes), ``kernels`` (explicit split-K reductions,
  16-row mma.sync tiles), ``batched`` and ``epilogue`` (all five by
  default; ``--jobs 12 --budget 400`` runs them in worker processes in about 2 minutes on
  an H100; ``--jobs 1``, the default, runs them one after the other);
* the newer paths, by name in ``--sections`` only (not in the default): ``torch`` (f16/bf16
  torch tensors through ``gemm`` and the ``layoutproof::gemm`` operator: new outputs, twice,
  the second the kept entry's direct launch; given outputs; transposed, offset and padded
  views; the fused epilogue and a C input through the operator; batches), ``tiny`` (the
  tiny-shape kernel by ``path="tiny"`` and by gemm's routing, odd shapes x operand orders,
  offset/strided/reversed/transposed views, its fused epilogue), ``hybrid`` (the rows +
  split-K tail schedule through gemm at 5120^3, which must take it, on CuPy arrays and torch
  tensors; forced ``streamk.HybridPlan`` s at smaller shapes, called and launched directly;
  the rows beside the cut checked on their own), ``tile192`` (``config=rule.WAVE_TILES[0]``,
  tails on every dimension x operand orders, an epilogue, a batch), ``grouped`` (uneven groups
  with zeros: stacked lists, separate padded lists read through per-group tensor maps with B
  N- or K-major, ``gemm_array`` with ``per_group_maps=True``, ``gemm_moe`` by offsets and by
  sizes, ``gemm_moe_masked``, a torch list).  All five, sized for about two minutes on an H200 with cold caches::

      python bench/gemm.py --skip compile --skip speed --jobs 10 --budget 240 \\
          --sections torch,tiny,hybrid,tile192,grouped

  The exit status is 1 when a correctness case failed;
* ``compile``: generate + prove + compile times, cold (empty caches) and from the caches;
* ``speed``: 4096^3, 8192^3 and 4095x4097x4093, f16 and bf16, median of event-timed runs
  of our kernel (autotuned config) and of cuBLAS (``cupy.matmul`` for f16, ``torch.matmul``
  for bf16 where CuPy has no bfloat16) in the same process; the ratio is cuBLAS time over
  ours (1.0 = cuBLAS speed).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np
from _timing import event_batch, out_dir, shapes_arg


def _bf16_support(cp):
    try:
        cp.dtype("bfloat16")
        cp.zeros(2, dtype="bfloat16")
        return True
    except Exception:
        return False


class Ops:
    """Operand factory: CuPy arrays for f16 (and bf16 where CuPy has it), else torch bf16
    tensors viewed as 2-byte CuPy arrays (gemm's dtype='bf16')."""

    def __init__(self, cp):
        self.cp = cp
        self.cp_bf16 = _bf16_support(cp)
        try:
            import torch  # noqa: F401

            self.torch = torch
        except Exception:
            self.torch = None

    def make(self, shape, dtype, order, rng):
        cp = self.cp
        x32 = rng.standard_normal(shape, dtype=cp.float32)
        if dtype == "f16":
            x = x32.astype(cp.float16)
        elif self.cp_bf16:
            x = x32.astype("bfloat16")
        else:
            t = self.torch.from_dlpack(x32).to(self.torch.bfloat16)
            x = cp.from_dlpack(t.view(self.torch.int16))
        if order == "F":
            x = cp.asfortranarray(x)
        return x

    def to64(self, x, dtype):
        cp = self.cp
        if dtype == "f16" or self.cp_bf16:
            return x.astype(cp.float64)
        t = self.torch.from_dlpack(cp.ascontiguousarray(x)).view(self.torch.bfloat16)
        return cp.from_dlpack(t.to(self.torch.float32)).astype(cp.float64)

    def kw(self, dtype):
        return {} if (dtype == "f16" or self.cp_bf16) else {"dtype": "bf16"}


def correctness(
    cp,
    ops,
    gemm,
    n_shapes,
    log,
    paths=("wgmma", "mma.sync"),
    dtypes=("f16", "bf16"),
    orders=(("C", "C"), ("C", "F"), ("F", "C"), ("F", "F")),
):
    rng = cp.random.default_rng(20261123)
    prng = np.random.default_rng(7)
    shapes = [
        (1, 1, 1),
        (1, 7, 3),
        (5, 1, 9),
        (17, 33, 1),
        (4095, 4097, 4093),
        (128, 128, 32),
        (129, 127, 33),
        (256, 8, 4096),
        (3, 2000, 17),
        (1000, 3, 5),
    ]
    while len(shapes) < n_shapes:
        m, n, k = (int(prng.choice([prng.integers(1, 64), prng.integers(64, 1200)])) for _ in range(3))
        shapes.append((m, n, k))
    rows, fails = [], 0
    for path, dtype in [(p, d) for p in paths for d in dtypes]:
        tol = 5e-3 if dtype == "f16" else 2e-2
        for m, n, k in shapes[:n_shapes]:
            for ao, bo in orders:
                a = ops.make((m, k), dtype, ao, rng)
                b = ops.make((k, n), dtype, bo, rng)
                ref = ops.to64(a, dtype) @ ops.to64(b, dtype)
                out = cp.full((m, n), cp.nan, dtype=cp.float32)
                gemm(a, b, out, out_dtype="f32", path=path, **ops.kw(dtype))
                cp.cuda.Device().synchronize()
                nan = int(cp.isnan(out).sum())
                den = float(cp.linalg.norm(ref)) or 1.0
                err = float(cp.linalg.norm(out.astype(cp.float64) - ref)) / den
                # the low-precision output too (f16 / bf16 epilogue)
                out2 = gemm(a, b, path=path, **ops.kw(dtype))
                o2 = ops.to64(out2, dtype)
                err2 = float(cp.linalg.norm(o2 - ref)) / den
                ok = nan == 0 and err < tol and err2 < tol and not np.isnan(err2)
                fails += not ok
                rows.append(
                    dict(
                        path=path,
                        dtype=dtype,
                        m=m,
                        n=n,
                        k=k,
                        a=ao,
                        b=bo,
                        err_f32=err,
                        err_out=err2,
                        nan=nan,
                        ok=ok,
                    )
                )
                if not ok:
                    print(
                        f"FAIL {path} {dtype} {m}x{n}x{k} A{ao} B{bo}: err {err:.2e} / {err2:.2e}, {nan} NaN",
                        flush=True,
                    )
    log["correctness"] = rows
    worst = {d: max(r["err_f32"] for r in rows if r["dtype"] == d) for d in dtypes}
    return fails, len(rows), worst


# ============================================================================ the extended sweep
# Sections ``auto``, ``kernels``, ``batched``, ``epilogue`` beside the 800 cases above (``base``).  Each section is a list of groups (a group: one kernel family,
# dtype and operand orders, so that a worker process compiles its kernels once); with --jobs N
# the groups run in N processes (spawned, each with its own CUDA context) sharing the disk
# caches.  Every output the API takes is NaN-poisoned before the call, every result compared
# with a float64 reference by the relative Frobenius error, tolerance 5e-3 (f16) / 2e-2 (bf16,
# the input's or the output's dtype).

#: the sections run when --sections is not given
DEFAULT_SECTIONS = ("base", "auto", "kernels", "batched", "epilogue")
#: every section --sections takes: the above and the newer paths (see below)
SECTIONS = DEFAULT_SECTIONS + ("torch", "tiny", "hybrid", "tile192", "grouped")
ORDERS = (("C", "C"), ("C", "F"), ("F", "C"), ("F", "F"))
#: the 16-row mma.sync decode tiles of plan.mma_decode (6k)
MMA_DECODE = (
    dict(bm=16, bn=32, bk=128, warps_m=1, warps_n=2, stages=8),
    dict(bm=16, bn=64, bk=64, warps_m=1, warps_n=4, stages=8),
)
#: decode / skinny shapes of the rule with the kernel it is expected to take (A, B row-major).
#: path="auto" applies plan.mma_decode before the wgmma rule (6k), so 16x8192x4096 takes the
#: 16-row mma.sync tile there; the cluster split (plan.cluster_split)
#: is what path="wgmma" takes at 16 rows, and path="auto" at M < 16 with K < 8192
AUTO_DECODE = (
    ((16, 4096, 4096), "mma16"),
    ((1, 4096, 8192), "split-kernel"),
    ((1, 14336, 4096), "mma16"),
    ((16, 8192, 8192), "mma16"),
    ((1, 4096, 4096), "split-kernel"),
    ((16, 8192, 4096), "mma16"),
    ((1, 8192, 4096), "split-cluster"),
    ((64, 4096, 11008), "split"),
    ((512, 512, 28672), "split"),
)
#: the same with path="wgmma" (default config): the cluster split at 16 rows
WGMMA_DECODE = (
    ((16, 8192, 4096), "split-cluster"),
    ((16, 8192, 8192), "split-cluster"),
    ((16, 4096, 4096), "split"),
)
#: shapes where gemm's rule splits K with the serial reduction and a fused epilogue (6g)
EPI_SPLIT_SHAPES = ((1, 4096, 4096), (16, 4096, 4096), (64, 4096, 11008), (512, 512, 28672))
EPI_SMALL_SHAPES = ((37, 45, 51), (1, 9, 17), (130, 260, 200))


def _tol(*dts):
    return 2e-2 if "bf16" in dts else 5e-3


def _kind(cfg):
    """What kind of kernel a configuration is: mma16 (the unsplit 16-row mma.sync tile),
    mma.sync, split-<reduction>, epilogue, wgmma."""
    if cfg is None:
        return "none"
    name = type(cfg).__name__
    if name == "GemmConfig":
        return "mma16" if cfg.bm == 16 else "mma.sync"
    if name == "SplitKConfig":
        return f"split-{cfg.reduction}"
    if name == "EpilogueConfig":
        return "epilogue"
    return "wgmma"


def _key(cfg):
    return cfg.key() if hasattr(cfg, "key") else str(cfg)


class Ctx:
    """One process's view: CuPy, the operand factory, gemm, the rows of a group, the deadline."""

    def __init__(self, deadline=None):
        import cupy as cp

        from layoutproof.gpu.host import runtime

        self.cp = cp
        self.ops = Ops(cp)
        self.runtime = runtime
        self.gemm = runtime.gemm
        self.deadline = deadline
        self.rows = []

    def expired(self):
        return self.deadline is not None and time.time() > self.deadline

    def nan_out(self, shape, od):
        cp = self.cp
        if od == "f32":
            return cp.full(shape, cp.nan, dtype=cp.float32)
        if od == "f16":
            return cp.full(shape, cp.nan, dtype=cp.float16)
        if self.ops.cp_bf16:
            return cp.full(shape, cp.nan, dtype="bfloat16")
        return cp.full(shape, 0x7FC0, dtype=cp.uint16)  # raw bf16 bits of a quiet NaN

    def rand(self, shape, od, rng):
        """A random array of the output dtype ``od`` (a C input)."""
        if od == "f32":
            return rng.standard_normal(shape, dtype=self.cp.float32)
        return self.ops.make(shape, od, "C", rng)

    def to64(self, x, od):
        return x.astype(self.cp.float64) if od == "f32" else self.ops.to64(x, od)

    def last(self):
        return _key(self.runtime.last_launch.get("config"))

    def record(self, section, case, out, od, ref, tol):
        """Compare ``out`` (dtype ``od``) with the float64 ``ref``: no NaN, rel. error < tol."""
        cp = self.cp
        cp.cuda.Device().synchronize()
        o = self.to64(out, od)
        nan = int(cp.isnan(o).sum())
        den = float(cp.linalg.norm(ref)) or 1.0
        err = float(cp.linalg.norm(cp.nan_to_num(o, nan=0.0) - ref)) / den
        ok = nan == 0 and err < tol
        row = dict(section=section, **case, out=od, err=err, nan=nan, tol=tol, ok=ok)
        self.rows.append(row)
        if not ok:
            print(f"FAIL {section} {case}: out {od} err {err:.2e} (tol {tol:g}), {nan} NaN", flush=True)
        return ok

    def error(self, section, case, ex):
        row = dict(section=section, **case, ok=False, error=f"{type(ex).__name__}: {ex}"[:400])
        self.rows.append(row)
        print(f"FAIL {section} {case}: {row['error']}", flush=True)

    def skipped(self, section, case):
        self.rows.append(dict(section=section, **case, ok=None, skipped="deadline"))


def _act64(cp, x, act):
    """The kernels' activations (gpu/kir.py lp_act_*) in float64: GELU in the erf form."""
    if act in (None, "none"):
        return x
    if act == "relu":
        return cp.maximum(x, 0.0)
    if act == "silu":
        return x / (1.0 + cp.exp(-x))
    if act == "gelu":
        from cupyx.scipy.special import erf

        return 0.5 * x * (1.0 + erf(x / np.sqrt(2.0)))
    raise ValueError(act)


# ---------------------------------------------------------------- base: the 800 cases of correctness()
def g_base(ctx, path, dtype, order, n_shapes):
    log = {}
    if ctx.expired():
        for m, n, k in _base_shapes(n_shapes):
            ctx.skipped("base", dict(path=path, dtype=dtype, m=m, n=n, k=k, a=order[0], b=order[1]))
        return
    correctness(ctx.cp, ctx.ops, ctx.gemm, n_shapes, log, paths=(path,), dtypes=(dtype,), orders=(order,))
    for r in log["correctness"]:
        r["section"] = "base"
        r["err"] = max(r["err_f32"], r["err_out"])
        ctx.rows.append(r)


def _base_shapes(n_shapes):
    prng = np.random.default_rng(7)
    shapes = [(1, 1, 1), (1, 7, 3), (5, 1, 9), (17, 33, 1), (4095, 4097, 4093)]
    shapes += [(128, 128, 32), (129, 127, 33), (256, 8, 4096), (3, 2000, 17), (1000, 3, 5)]
    while len(shapes) < n_shapes:
        m, n, k = (int(prng.choice([prng.integers(1, 64), prng.integers(64, 1200)])) for _ in range(3))
        shapes.append((m, n, k))
    return shapes[:n_shapes]


# ---------------------------------------------------------------- auto: gemm's default rule
def g_auto(ctx, dtype, orders, shapes, expect=None, path="auto"):
    """``path`` ("auto": gemm's default), default config: an f32 output (NaN-poisoned, given) and the dtype's own
    output (returned); the config the rule took for each (runtime.last_launch)."""
    cp, ops, gemm = ctx.cp, ctx.ops, ctx.gemm
    rng = cp.random.default_rng(101)
    for m, n, k in shapes:
        for ao, bo in orders:
            case = dict(path=path, dtype=dtype, m=m, n=n, k=k, a=ao, b=bo)
            if ctx.expired():
                ctx.skipped("auto", case)
                continue
            try:
                a = ops.make((m, k), dtype, ao, rng)
                b = ops.make((k, n), dtype, bo, rng)
                ref = ops.to64(a, dtype) @ ops.to64(b, dtype)
                out = ctx.nan_out((m, n), "f32")
                gemm(a, b, out, out_dtype="f32", path=path, **ops.kw(dtype))
                c32 = ctx.runtime.last_launch.get("config")
                ok = ctx.record(
                    "auto", dict(case, config=_key(c32), kind=_kind(c32)), out, "f32", ref, _tol(dtype)
                )
                out2 = ctx.nan_out((m, n), dtype)
                gemm(a, b, out2, path=path, **ops.kw(dtype))
                c2 = ctx.runtime.last_launch.get("config")
                ctx.record("auto", dict(case, config=_key(c2), kind=_kind(c2)), out2, dtype, ref, _tol(dtype))
                want = (expect or {}).get((m, n, k))
                if want and (ao, bo) == ("C", "C"):
                    hit = all(_kind(c).startswith(want) for c in (c32, c2))
                    ctx.rows[-1]["expected"], ctx.rows[-1]["hit"] = want, hit
                    print(
                        f"{path} {dtype} {m}x{n}x{k} A{ao}B{bo}: rule took {_key(c32)} (f32 out) / "
                        f"{_key(c2)} ({dtype} out); expected {want}: {'hit' if hit else 'MISSED'}"
                        f"{'' if ok else ' [FAIL]'}",
                        flush=True,
                    )
            except Exception as ex:  # noqa: BLE001 -- a failure is a finding: recorded, the sweep goes on
                ctx.error("auto", case, ex)


# ---------------------------------------------------------------- kernels: explicit configs
def _ws(bm, bn, stages, **kw):
    from layoutproof.gpu.kernels.wgmma import Sm90Config

    return Sm90Config(bm=bm, bn=bn, stages=stages, loader="tma", schedule="ws", **kw)


def _split(bm, bn, stages, s, reduction="kernel"):
    from layoutproof.gpu.kernels.splitk import SplitKConfig

    return SplitKConfig(_ws(bm, bn, stages), s, reduction)


#: (name, (bm, bn, stages, splits, reduction)) of the split-K kernels checked explicitly
SPLIT_CONFIGS = (
    ("kernel", (64, 128, 8, 3, "kernel")),
    ("kernel", (64, 256, 5, 8, "kernel")),
    ("serial", (64, 128, 8, 3, "serial")),
    ("serial", (128, 128, 6, 4, "serial")),
    ("cluster", (64, 128, 8, 2, "cluster")),
    ("cluster", (64, 256, 5, 4, "cluster")),
    ("cluster", (64, 64, 8, 2, "cluster")),
)
#: odd shapes: ragged M/N/K, M = 1, K not a multiple of the 64-deep tile, fewer k-blocks than splits
SPLIT_SHAPES = ((37, 45, 51), (1, 9, 17), (130, 260, 200), (300, 520, 1100), (16, 300, 1100), (1, 4096, 4100))
CLUSTER_SHAPES = ((1, 9, 17), (16, 300, 1100), (7, 260, 1000), (16, 130, 2000), (1, 4096, 4100))
MMA_SHAPES = ((1, 9, 17), (16, 300, 1100), (13, 130, 2000), (37, 45, 51), (16, 4096, 4100), (1, 4096, 8192))


def _two_calls(ctx, section, cfg, dtype, ao, bo, m, n, k, rng, case):
    """Two back-to-back calls of one plan (fresh inputs each, no synchronization between:
    a workspace or counter the first call left wrong, or a race on it, shows in the second),
    f32 outputs, then the dtype's own output."""
    ops, gemm = ctx.ops, ctx.gemm
    xs = [(ops.make((m, k), dtype, ao, rng), ops.make((k, n), dtype, bo, rng)) for _ in range(2)]
    outs = [ctx.nan_out((m, n), "f32") for _ in range(2)]
    for (a, b), o in zip(xs, outs):
        gemm(a, b, o, config=cfg, out_dtype="f32", **ops.kw(dtype))
    used = ctx.last()
    for i, ((a, b), o) in enumerate(zip(xs, outs)):
        ref = ops.to64(a, dtype) @ ops.to64(b, dtype)
        ctx.record(section, dict(case, call=i + 1, config=used), o, "f32", ref, _tol(dtype))
    a, b = xs[1]
    o = ctx.nan_out((m, n), dtype)
    gemm(a, b, o, config=cfg, **ops.kw(dtype))
    ctx.record(
        section,
        dict(case, call=3, config=ctx.last()),
        o,
        dtype,
        ops.to64(a, dtype) @ ops.to64(b, dtype),
        _tol(dtype),
    )


def _explicit(ctx, cfg, shapes, dtype, orders, seed):
    """:func:`_two_calls` of ``cfg`` on every shape and operand order (section ``kernels``)."""
    rng = ctx.cp.random.default_rng(seed)
    for m, n, k in shapes:
        for ao, bo in orders:
            case = dict(kernel=cfg.key(), dtype=dtype, m=m, n=n, k=k, a=ao, b=bo)
            if ctx.expired():
                ctx.skipped("kernels", case)
                continue
            try:
                _two_calls(ctx, "kernels", cfg, dtype, ao, bo, m, n, k, rng, case)
            except Exception as ex:  # noqa: BLE001
                ctx.error("kernels", case, ex)


def g_split(ctx, spec, dtype, orders):
    shapes = CLUSTER_SHAPES if spec[4] == "cluster" else SPLIT_SHAPES
    _explicit(ctx, _split(*spec), shapes, dtype, orders, 202)


def g_refused(ctx):
    """64x64 S8 cluster: refused before emission (its partial buffer's bank-conflict proof)."""
    cp = ctx.cp
    cfg = _split(64, 64, 8, 8, "cluster")
    case = dict(kernel=cfg.key(), dtype="f16", m=16, n=130, k=2000, a="C", b="C", expect="refused")
    a = ctx.ops.make((16, 2000), "f16", "C", cp.random.default_rng(5))
    b = ctx.ops.make((2000, 130), "f16", "C", cp.random.default_rng(6))
    try:
        ctx.gemm(a, b, config=cfg, out_dtype="f32")
        cp.cuda.Device().synchronize()
    except Exception as ex:  # noqa: BLE001 -- expected: the refusal, named
        msg = f"{type(ex).__name__}: {ex}"
        ok = "bank" in msg.lower() or "conflict" in msg.lower()
        ctx.rows.append(dict(section="kernels", **case, ok=ok, refused=msg[:400]))
        print(f"kernels {cfg.key()}: refused as expected: {msg[:200]}", flush=True)
        return
    ctx.rows.append(dict(section="kernels", **case, ok=False, refused=None))
    print(f"FAIL kernels {cfg.key()}: ran, expected the bank-conflict prover to refuse it", flush=True)


def g_mma(ctx, which, dtype):
    from layoutproof.gpu.config import GemmConfig

    _explicit(ctx, GemmConfig(**MMA_DECODE[which]), MMA_SHAPES, dtype, ORDERS, 404)


# ---------------------------------------------------------------- batched
def _batched_operands(ctx, dtype, rng):
    """(name, a, b, out given?) -- 3-D both, shared 2-D B with a given out, shared 2-D A,
    M = 1, a[::2], batch extent 1 (broadcast), column-major batches, a foldable product, odd
    sizes whose batch strides break 16 bytes, overlapping batches."""
    ops = ctx.ops

    def mk(shape):
        return ops.make(shape, dtype, "C", rng)

    return (
        ("3d-3d", mk((3, 37, 51)), mk((3, 51, 45)), True),
        ("3d-2dB", mk((4, 130, 200)), mk((200, 260)), True),
        ("2dA-3d", mk((130, 64)), mk((5, 64, 72)), True),
        ("M1", mk((2, 1, 24)), mk((2, 24, 9)), True),
        ("a[::2]", mk((6, 96, 64))[::2], mk((3, 64, 136)), True),
        ("b[::2]", mk((4, 33, 48)), mk((8, 48, 40))[::2], True),
        ("bcast1", mk((1, 37, 51)), mk((4, 51, 45)), True),
        ("colmajor", mk((3, 51, 37)).transpose(0, 2, 1), mk((3, 45, 51)).transpose(0, 2, 1), True),
        ("fold", mk((4, 33, 64)), mk((64, 40)), False),
        ("odd", mk((5, 17, 33)), mk((5, 33, 19)), True),
        # batches of A that overlap (batch stride one row): the per-batch loop path
        ("overlap", _overlapping(ctx, mk((42, 40)), 3, 40, 40), mk((3, 40, 24)), True),
    )


def _overlapping(ctx, x, batch, m, k):
    """``batch`` (m, k) views of the row-major ``x`` that start one row apart."""
    r = x.strides[0]
    return ctx.cp.lib.stride_tricks.as_strided(x, shape=(batch, m, k), strides=(r, r, x.strides[1]))


def g_batched(ctx, dtype, cfg):
    cp, ops, gemm = ctx.cp, ctx.ops, ctx.gemm
    rng = cp.random.default_rng(505)
    for name, a, b, given in _batched_operands(ctx, dtype, rng):
        ref = cp.matmul(ops.to64(a, dtype), ops.to64(b, dtype))
        base = dict(case=name, dtype=dtype, config=_key(cfg), a_shape=str(a.shape), b_shape=str(b.shape))
        for od in ("f32", dtype):
            case = dict(base, given=given)
            if ctx.expired():
                ctx.skipped("batched", case)
                continue
            try:
                if given:
                    out = ctx.nan_out(ref.shape, od)
                    gemm(a, b, out, config=cfg, out_dtype=od, **ops.kw(dtype))
                else:
                    out = gemm(a, b, config=cfg, out_dtype=od, **ops.kw(dtype))
                ll = ctx.runtime.last_launch
                case["mode"] = ll.get("mode")
                if ll.get("mode") == "kernel":
                    case["used"] = _key(ll.get("config"))
                ctx.record("batched", case, out, od, ref, _tol(dtype, od))
            except Exception as ex:  # noqa: BLE001
                ctx.error("batched", case, ex)


# ---------------------------------------------------------------- epilogue
def _epi_combos(dtype, cross=True):
    """(activation, bias (axis, dtype) or None, C input None | "sep" | "inplace", alpha, beta,
    output dtype); ``cross``: one output in the other half-precision type (needs CuPy's
    bfloat16 dtype)."""
    other = "bf16" if dtype == "f16" else "f16"
    return (
        ("relu", ("n", "f32"), None, 1.0, 0.0, dtype),
        ("gelu", ("n", "f32"), None, 1.0, 0.0, "f32"),
        ("silu", ("n", "f32"), None, 1.0, 0.0, dtype),
        ("gelu", None, None, 1.0, 0.0, other if cross else "f32"),
        ("none", ("m", "f32"), None, 1.0, 0.0, "f32"),
        ("relu", ("m", dtype), None, 1.0, 0.0, dtype),
        ("gelu", ("n", dtype), None, 1.0, 0.0, "f32"),
        ("none", None, "sep", 0.5, -1.5, "f32"),
        ("silu", ("n", "f32"), "sep", 0.5, -1.5, dtype),
        ("relu", None, "sep", 2.0, 0.0, "f32"),
        ("relu", ("m", "f32"), "inplace", 0.5, -1.5, "f32"),
        ("none", ("n", dtype), "inplace", -1.0, 0.25, dtype),
    )


def _epi_case(ctx, dtype, shape, combo, rng, cfg=None, batch=None):
    """One epilogue call against act(alpha * A @ B + beta * C + bias) in float64."""
    cp, ops, gemm = ctx.cp, ctx.ops, ctx.gemm
    act, bias_spec, cin, alpha, beta, od = combo
    m, n, k = shape
    lead = () if batch is None else (batch,)
    a = ops.make(lead + (m, k), dtype, "C", rng)
    b = ops.make(lead + (k, n), dtype, "C", rng)
    ab = cp.matmul(ops.to64(a, dtype), ops.to64(b, dtype))
    kw = dict(ops.kw(dtype), config=cfg, out_dtype=od, activation=act)
    pre = alpha * ab
    if bias_spec is not None:
        axis, bdt = bias_spec
        nb = n if axis == "n" else m
        bias = rng.standard_normal(nb, dtype=cp.float32) if bdt == "f32" else ops.make((nb,), bdt, "C", rng)
        b64 = bias.astype(cp.float64) if bdt == "f32" else ops.to64(bias, bdt)
        pre = pre + (b64 if axis == "n" else b64[:, None])
        kw.update(bias=bias, bias_along=axis)
    if cin == "sep":
        c_in = ctx.rand(ab.shape, od, rng)
        pre = pre + beta * ctx.to64(c_in, od)
        out = ctx.nan_out(ab.shape, od)
        gemm(a, b, out, c=c_in, alpha=alpha, beta=beta, **kw)
    elif cin == "inplace":
        out = ctx.rand(ab.shape, od, rng)  # the C input is the output: it cannot be poisoned
        pre = pre + beta * ctx.to64(out, od)
        gemm(a, b, out, c=out, alpha=alpha, beta=beta, **kw)
    else:
        out = ctx.nan_out(ab.shape, od)
        gemm(a, b, out, **kw)
    return out, od, _act64(cp, pre, act)


def g_epilogue(ctx, dtype, shapes, split_only=False, cfg=None):
    """The combos of :func:`_epi_combos` on ``shapes``; ``split_only``: those a serial split
    takes (a bias along N in f32, or none: the others take the unsplit kernel)."""
    cp = ctx.cp
    rng = cp.random.default_rng(606)
    combos = _epi_combos(dtype, ctx.ops.cp_bf16)
    if split_only:
        combos = [c for c in combos if c[1] in (None, ("n", "f32"))]
    for shape in shapes:
        for combo in combos:
            act, bias_spec, cin, alpha, beta, od = combo
            case = dict(
                dtype=dtype,
                m=shape[0],
                n=shape[1],
                k=shape[2],
                act=act,
                bias="-" if bias_spec is None else "/".join(bias_spec),
                c=cin or "-",
                alpha=alpha,
                beta=beta,
            )
            if ctx.expired():
                ctx.skipped("epilogue", case)
                continue
            try:
                out, od, ref = _epi_case(ctx, dtype, shape, combo, rng, cfg)
                case["config"] = ctx.last()
                ctx.record("epilogue", case, out, od, ref, _tol(dtype, od))
            except Exception as ex:  # noqa: BLE001
                ctx.error("epilogue", case, ex)


def g_epilogue_batched(ctx, dtype):
    """Batched with alpha/beta: a C input per batch (every other matrix of a bigger array), one
    shared (2-D), in place with a bias along M; a bias along N with an activation."""
    cp, ops, gemm = ctx.cp, ctx.ops, ctx.gemm
    rng = cp.random.default_rng(707)
    for sa, sb in (((3, 37, 51), (3, 51, 45)), ((2, 130, 64), (2, 64, 200)), ((4, 1, 40), (4, 40, 24))):
        a = ops.make(sa, dtype, "C", rng)
        b = ops.make(sb, dtype, "C", rng)
        ab = cp.matmul(ops.to64(a, dtype), ops.to64(b, dtype))
        nb, m, n = ab.shape
        for od in ("f32", dtype):
            base = dict(dtype=dtype, batch=nb, m=m, n=n, k=sa[2], batched=True)
            variants = ("per-batch[::2]", "shared2d", "inplace+biasM", "biasN+gelu")
            for v in variants:
                case = dict(base, c=v)
                if ctx.expired():
                    ctx.skipped("epilogue", case)
                    continue
                try:
                    if v == "per-batch[::2]":
                        cin = ctx.rand((2 * nb, m, n), od, rng)[::2]
                        out = ctx.nan_out(ab.shape, od)
                        gemm(a, b, out, out_dtype=od, c=cin, alpha=0.5, beta=-1.5, **ops.kw(dtype))
                        ref = 0.5 * ab - 1.5 * ctx.to64(cin, od)
                    elif v == "shared2d":
                        cin = ctx.rand((m, n), od, rng)
                        out = ctx.nan_out(ab.shape, od)
                        gemm(a, b, out, out_dtype=od, c=cin, alpha=0.5, beta=-1.5, **ops.kw(dtype))
                        ref = 0.5 * ab - 1.5 * ctx.to64(cin, od)
                    elif v == "inplace+biasM":
                        out = ctx.rand(ab.shape, od, rng)
                        c0 = ctx.to64(out, od).copy()
                        bias = ops.make((m,), dtype, "C", rng)
                        gemm(
                            a,
                            b,
                            out,
                            out_dtype=od,
                            c=out,
                            alpha=0.5,
                            beta=-1.5,
                            bias=bias,
                            bias_along="m",
                            **ops.kw(dtype),
                        )
                        ref = 0.5 * ab - 1.5 * c0 + ops.to64(bias, dtype)[:, None]
                    else:
                        bias = rng.standard_normal(n, dtype=cp.float32)
                        out = ctx.nan_out(ab.shape, od)
                        gemm(a, b, out, out_dtype=od, bias=bias, activation="gelu", **ops.kw(dtype))
                        ref = _act64(cp, ab + bias.astype(cp.float64), "gelu")
                    ll = ctx.runtime.last_launch
                    case["mode"] = ll.get("mode")
                    ctx.record("epilogue", case, out, od, ref, _tol(dtype, od))
                except Exception as ex:  # noqa: BLE001
                    ctx.error("epilogue", case, ex)


# ---------------------------------------------------------------- the newer paths
# Sections ``torch``, ``tiny``, ``hybrid``, ``tile192``, ``grouped``: torch tensors in and out,
# the tiny-shape kernel, the data-parallel rows + split-K tail schedule, the 128x192 ws tile
# and the grouped kernel's per-group tensor maps.  Every output the API takes is NaN-poisoned;
# results are compared with float64 as above.

#: tiny-kernel shapes: odd everywhere, K up to the forced kernel's warps over K
TINY_SHAPES = (
    (1, 1, 1),
    (1, 7, 3),
    (5, 1, 9),
    (7, 13, 17),
    (17, 33, 1),
    (31, 64, 100),
    (3, 5, 1000),
    (100, 100, 100),
    (112, 112, 112),
    (1, 1, 16 * 65),
    (63, 9, 257),
)
#: torch-tensor shapes: the tiny kernel, tiled plans with tails, a large odd product
TORCH_SHAPES = ((7, 13, 17), (1, 1, 1), (129, 257, 65), (1000, 1032, 520), (2047, 2049, 1031))
#: forced HybridPlans (shape, cut rows): tails on the main tile's rows and on n
HYBRID_FORCED = (
    ((300, 264, 1024), 128),
    ((1000, 1032, 520), 768),
    ((260, 136, 520), 256),
    ((1025, 2056, 4096), 896),
)
#: the 128x192 tile's shapes: tails on every dimension, one tile, several waves
TILE192_SHAPES = (
    (1, 9, 17),
    (37, 45, 51),
    (130, 200, 72),
    (257, 390, 100),
    (128, 192, 64),
    (1000, 1000, 1000),
    (4095, 4097, 4093),
)
#: grouped row counts (zeros included) with (K, N); K and N multiples of 8 (the TMA's rows)
GROUP_CASES = (
    ([0, 130, 1, 0, 257], 192, 320),
    ([64], 72, 40),
    ([0, 0, 3], 64, 264),
    ([1, 63, 64, 65, 127, 128, 129, 193], 320, 264),
    ([0, 300, 1, 64, 0, 129, 700], 320, 264),
    ([5, 0, 17, 200, 0, 0, 33, 1, 90, 41, 0, 8, 128, 3, 0, 77], 136, 72),
)


def _torch_to_cp(cp, t):
    """A torch tensor as a CuPy float32 array (a copy)."""
    return cp.from_dlpack(t.detach().float().contiguous())


def _record_t(ctx, section, case, got, ref, tol):
    """:meth:`Ctx.record` for a torch result (compared in float32 -> float64)."""
    case = dict(case, tout=str(got.dtype).replace("torch.", ""))
    ctx.ops.torch.cuda.synchronize()
    return ctx.record(section, case, _torch_to_cp(ctx.cp, got), "f32", ref, tol)


def _torch_views(torch, m, n, k, tdt, g):
    """(name, a, b): row-major, column-major, offset (misaligned) slices, strided rows."""

    def r(*s):
        return torch.randn(*s, device="cuda", generator=g).to(tdt)

    return (
        ("row", r(m, k), r(k, n)),
        ("colA", r(k, m).t(), r(k, n)),
        ("colB", r(m, k), r(n, k).t()),
        ("offset", r(m + 3, k + 5)[1 : m + 1, 3 : k + 3], r(k + 2, n + 7)[2:, 5 : n + 5]),
        ("lda+8", r(m, k + 8)[:, :k], r(k, n + 8)[:, :n]),
    )


def g_torch(ctx, dtype):
    """gemm and the ``layoutproof::gemm`` operator on torch tensors: new outputs (twice: the
    second call is the kept entry's direct launch from base addresses), given NaN-poisoned
    outputs (row-major f32, transposed in the input type), the fused epilogue and a C input
    through the operator, 3-D batches."""
    cp, torch = ctx.cp, ctx.ops.torch
    if torch is None or not torch.cuda.is_available():
        ctx.error("torch", dict(dtype=dtype), RuntimeError("torch with CUDA is not available"))
        return
    from layoutproof.gpu.host import torch_op

    op = torch_op.gemm_op
    tdt = torch.float16 if dtype == "f16" else torch.bfloat16
    g = torch.Generator(device="cuda").manual_seed(2811)
    tol = _tol(dtype)
    for m, n, k in TORCH_SHAPES:
        for view, a, b in _torch_views(torch, m, n, k, tdt, g):
            case = dict(dtype=dtype, m=m, n=n, k=k, view=view)
            if ctx.expired():
                ctx.skipped("torch", case)
                continue
            try:
                a64, b64 = _torch_to_cp(cp, a).astype(cp.float64), _torch_to_cp(cp, b).astype(cp.float64)
                ref = a64 @ b64
                for call in ("new", "new again"):
                    c = ctx.gemm(a, b)
                    if c.dtype != tdt or tuple(c.shape) != (m, n):
                        raise RuntimeError(f"gemm returned {c.dtype} {tuple(c.shape)}")
                    _record_t(ctx, "torch", dict(case, call=call), c, ref, tol)
                out = torch.full((m, n), float("nan"), device="cuda")
                if ctx.gemm(a, b, out) is not out:
                    raise RuntimeError("gemm did not return the given output")
                _record_t(ctx, "torch", dict(case, call="given f32"), out, ref, tol)
                out = torch.full((n, m), float("nan"), device="cuda", dtype=tdt).t()
                ctx.gemm(a, b, out)
                _record_t(ctx, "torch", dict(case, call="given transposed"), out, ref, tol)
                bias = torch.randn(n, device="cuda", generator=g)
                y = op(a, b, bias, activation="gelu")
                want = _act64(cp, ref + _torch_to_cp(cp, bias).astype(cp.float64), "gelu")
                _record_t(ctx, "torch", dict(case, call="op bias+gelu"), y, want, tol)
                cin = torch.randn(m, n, device="cuda", generator=g).to(tdt)
                y = op(a, b, None, cin, None, 0.5, -1.5)
                want = 0.5 * ref - 1.5 * _torch_to_cp(cp, cin).astype(cp.float64)
                _record_t(ctx, "torch", dict(case, call="op alpha/beta c"), y, want, tol)
            except Exception as ex:  # noqa: BLE001
                ctx.error("torch", case, ex)
    for sa, sb in (((8, 128, 64), (8, 64, 96)), ((3, 37, 51), (51, 45)), ((130, 64), (5, 64, 72))):
        case = dict(dtype=dtype, a_shape=str(sa), b_shape=str(sb), call="batched")
        try:
            a = torch.randn(*sa, device="cuda", generator=g).to(tdt)
            b = torch.randn(*sb, device="cuda", generator=g).to(tdt)
            ref = cp.matmul(_torch_to_cp(cp, a).astype(cp.float64), _torch_to_cp(cp, b).astype(cp.float64))
            _record_t(ctx, "torch", case, ctx.gemm(a, b), ref, tol)
        except Exception as ex:  # noqa: BLE001
            ctx.error("torch", case, ex)


def _plan_name(ctx):
    return type(ctx.runtime.last_launch.get("plan")).__name__


def g_tiny(ctx, dtype):
    """The tiny kernel: ``path="tiny"`` (given NaN f32 output, the input type's output
    returned) and gemm's routing (the plan it took recorded) on :data:`TINY_SHAPES` x the four
    operand orders; offset, strided, reversed and transposed views with a strided output;
    the fused epilogue (bias along N or M, activations, a C input with alpha/beta, in place)."""
    from layoutproof.gpu.host import tiny

    cp, ops, gemm = ctx.cp, ctx.ops, ctx.gemm
    rng = cp.random.default_rng(1128)
    kw = ops.kw(dtype)
    for m, n, k in TINY_SHAPES:
        for ao, bo in ORDERS:
            case = dict(dtype=dtype, m=m, n=n, k=k, a=ao, b=bo)
            if ctx.expired():
                ctx.skipped("tiny", case)
                continue
            try:
                a, b = ops.make((m, k), dtype, ao, rng), ops.make((k, n), dtype, bo, rng)
                ref = ops.to64(a, dtype) @ ops.to64(b, dtype)
                out = ctx.nan_out((m, n), "f32")
                gemm(a, b, out, out_dtype="f32", path="tiny", **kw)
                ok = isinstance(ctx.runtime.last_launch.get("plan"), tiny.TinyPlan)
                ctx.record(
                    "tiny", dict(case, path="tiny", plan=_plan_name(ctx)), out, "f32", ref, _tol(dtype)
                )
                if not ok:
                    ctx.rows[-1]["ok"] = False
                    print(f"FAIL tiny {case}: path='tiny' launched {_plan_name(ctx)}", flush=True)
                c = gemm(a, b, path="tiny", **kw)
                ctx.record("tiny", dict(case, path="tiny", out_new=True), c, dtype, ref, _tol(dtype))
                out = ctx.nan_out((m, n), dtype)
                gemm(a, b, out, **kw)
                ctx.record(
                    "tiny", dict(case, path="auto", plan=_plan_name(ctx)), out, dtype, ref, _tol(dtype)
                )
            except Exception as ex:  # noqa: BLE001
                ctx.error("tiny", case, ex)
    big_a, big_b = ops.make((40, 90), dtype, "C", rng), ops.make((70, 60), dtype, "C", rng)
    for view, a, b in (
        ("offset", big_a[1:8, 3:20], big_b[2:19, 5:18]),
        ("strided+reversed", big_a[1:20:3, 7:79:4], big_b[::-1][3:21, 1:40:3]),
        ("transposed", big_a[:17, :7].T, big_b[:13, :17].T[:, :13]),
    ):
        case = dict(dtype=dtype, view=view, m=a.shape[0], n=b.shape[1], k=a.shape[1])
        try:
            ref = ops.to64(cp.ascontiguousarray(a), dtype) @ ops.to64(cp.ascontiguousarray(b), dtype)
            for path in ("tiny", "auto"):
                out = ctx.nan_out((b.shape[1] + 3, a.shape[0] + 2), "f32")[1:-2, 2:].T
                gemm(a, b, out, out_dtype="f32", path=path, **kw)
                ctx.record("tiny", dict(case, path=path, plan=_plan_name(ctx)), out, "f32", ref, _tol(dtype))
        except Exception as ex:  # noqa: BLE001
            ctx.error("tiny", case, ex)
    for (m, n, k), act, along, cin in (
        ((9, 21, 40), "relu", "m", "sep"),
        ((33, 17, 130), "gelu", "n", None),
        ((1, 5, 700), "silu", "n", "inplace"),
        ((64, 96, 24), "none", "m", "inplace"),
    ):
        case = dict(dtype=dtype, m=m, n=n, k=k, act=act, bias=along, c=cin or "-", path="tiny")
        try:
            a, b = ops.make((m, k), dtype, "C", rng), ops.make((k, n), dtype, "C", rng)
            ab = ops.to64(a, dtype) @ ops.to64(b, dtype)
            bias = rng.standard_normal(n if along == "n" else m, dtype=cp.float32)
            b64 = bias.astype(cp.float64)
            pre = ab + (b64 if along == "n" else b64[:, None])
            ekw = dict(kw, path="tiny", out_dtype="f32", bias=bias, bias_along=along, activation=act)
            if cin == "sep":
                c_in = rng.standard_normal((m, n), dtype=cp.float32)
                out = ctx.nan_out((m, n), "f32")
                gemm(a, b, out, c=c_in, alpha=0.5, beta=2.0, **ekw)
                pre = 0.5 * ab + 2.0 * c_in + (b64 if along == "n" else b64[:, None])
            elif cin == "inplace":
                out = rng.standard_normal((m, n), dtype=cp.float32)
                pre = pre - 1.5 * out.astype(cp.float64)
                gemm(a, b, out, c=out, beta=-1.5, **ekw)
            else:
                out = ctx.nan_out((m, n), "f32")
                gemm(a, b, out, **ekw)
            ctx.record(
                "tiny", dict(case, plan=_plan_name(ctx)), out, "f32", _act64(cp, pre, act), _tol(dtype)
            )
        except Exception as ex:  # noqa: BLE001
            ctx.error("tiny", case, ex)


def _rows_ok(ctx, section, case, out, od, ref, rows, tol):
    """Rows on both sides of the cut (and the last) each against the reference."""
    m = ref.shape[0]
    for i in sorted({rows - 1, rows, m - 1}):
        ctx.record(section, dict(case, row=i), out[i : i + 1], od, ref[i : i + 1], tol)


def g_hybrid(ctx, dtype):
    """The data-parallel rows + split-K tail schedule: through gemm at 5120^3 (CuPy arrays,
    new and given outputs; torch tensors twice, the second the direct launch), where the
    rule must take it; forced :class:`~layoutproof.gpu.host.streamk.HybridPlan` s at
    smaller shapes (its call and its direct launch).  Rows beside the cut are checked on
    their own."""
    from layoutproof.gpu.host import rule, streamk
    from layoutproof.gpu.kernels.splitk import SplitKConfig
    from layoutproof.gpu.kernels.wgmma import Sm90Config

    cp, ops, gemm = ctx.cp, ctx.ops, ctx.gemm
    rng = cp.random.default_rng(5120)
    kw, tol = ops.kw(dtype), _tol(dtype)
    m = n = k = 5120
    case = dict(dtype=dtype, m=m, n=n, k=k, via="gemm")
    try:
        a, b = ops.make((m, k), dtype, "C", rng), ops.make((k, n), dtype, "C", rng)
        ref = ops.to64(a, dtype) @ ops.to64(b, dtype)
        plan = ctx.runtime.plan_for(a, b, **kw)
        took = type(plan).__name__
        rows = getattr(plan, "rows", m // 2)
        c = gemm(a, b, **kw)
        ctx.record("hybrid", dict(case, call="new", plan=took), c, dtype, ref, tol)
        if not isinstance(plan, streamk.HybridPlan):
            ctx.rows[-1]["ok"] = False
            print(f"FAIL hybrid {case}: gemm's rule took {took}, not the HybridPlan", flush=True)
        out = ctx.nan_out((m, n), dtype)
        took = type(ctx.runtime.plan_for(a, b, out, **kw)).__name__
        gemm(a, b, out, **kw)
        ctx.record("hybrid", dict(case, call="given", plan=took), out, dtype, ref, tol)
        _rows_ok(ctx, "hybrid", dict(case, call="given"), out, dtype, ref, rows, tol)
        torch = ops.torch
        if torch is not None and torch.cuda.is_available():
            if ops.cp_bf16 or dtype == "f16":
                ta, tb = torch.from_dlpack(a), torch.from_dlpack(b)
            else:  # int16 views of bf16 bits
                ta, tb = torch.from_dlpack(a).view(torch.bfloat16), torch.from_dlpack(b).view(torch.bfloat16)
            for call in ("torch", "torch again"):
                tc = gemm(ta, tb)
                _record_t(ctx, "hybrid", dict(case, call=call), tc, ref, tol)
            torch.cuda.synchronize()
            _rows_ok(
                ctx, "hybrid", dict(case, call="torch again"), _torch_to_cp(cp, tc), "f32", ref, rows, tol
            )
        del ref
    except Exception as ex:  # noqa: BLE001
        ctx.error("hybrid", case, ex)
    ws = dict(loader="tma", schedule="ws")
    for (m, n, k), rows in HYBRID_FORCED:
        case = dict(dtype=dtype, m=m, n=n, k=k, rows=rows, via="HybridPlan")
        if ctx.expired():
            ctx.skipped("hybrid", case)
            continue
        try:
            split = rule.HybridSplit(
                Sm90Config(bm=128, bn=256, stages=4, **ws),
                rows,
                SplitKConfig(Sm90Config(bm=64, bn=128, stages=8, **ws), 3),
                0.0,
                0.0,
            )
            a, b = ops.make((m, k), dtype, "C", rng), ops.make((k, n), dtype, "C", rng)
            ref = ops.to64(a, dtype) @ ops.to64(b, dtype)
            out = ctx.nan_out((m, n), dtype)
            plan = streamk.HybridPlan(a, b, out, split, **kw)
            plan(a, b, out)
            ctx.record("hybrid", dict(case, call="plan"), out, dtype, ref, tol)
            _rows_ok(ctx, "hybrid", dict(case, call="plan"), out, dtype, ref, rows, tol)
            launch = plan.direct()
            if launch is not None:
                out2 = ctx.nan_out((m, n), dtype)
                launch(a.data.ptr, b.data.ptr, out2.data.ptr, cp.cuda.get_current_stream().ptr)
                ctx.record("hybrid", dict(case, call="direct"), out2, dtype, ref, tol)
                _rows_ok(ctx, "hybrid", dict(case, call="direct"), out2, dtype, ref, rows, tol)
        except Exception as ex:  # noqa: BLE001
            ctx.error("hybrid", case, ex)


def g_tile192(ctx, dtype):
    """The 128x192 ws tile (``rule.WAVE_TILES``) by ``config=``: :data:`TILE192_SHAPES` x the
    four operand orders (given NaN f32 output, the input type's output returned); a fused
    bias + activation and a batched product."""
    from layoutproof.gpu.host import rule

    cp, ops, gemm = ctx.cp, ctx.ops, ctx.gemm
    cfg = rule.WAVE_TILES[0]
    rng = cp.random.default_rng(192)
    kw, tol = ops.kw(dtype), _tol(dtype)
    for m, n, k in TILE192_SHAPES:
        for ao, bo in ORDERS:
            case = dict(dtype=dtype, m=m, n=n, k=k, a=ao, b=bo, config=cfg.key())
            if ctx.expired():
                ctx.skipped("tile192", case)
                continue
            try:
                a, b = ops.make((m, k), dtype, ao, rng), ops.make((k, n), dtype, bo, rng)
                ref = ops.to64(a, dtype) @ ops.to64(b, dtype)
                out = ctx.nan_out((m, n), "f32")
                gemm(a, b, out, config=cfg, out_dtype="f32", **kw)
                ctx.record("tile192", dict(case, used=ctx.last()), out, "f32", ref, tol)
                c = gemm(a, b, config=cfg, **kw)
                ctx.record("tile192", dict(case, used=ctx.last()), c, dtype, ref, tol)
            except Exception as ex:  # noqa: BLE001
                ctx.error("tile192", case, ex)
    for combo in (
        ("relu", ("n", "f32"), None, 1.0, 0.0, dtype),
        ("gelu", ("m", dtype), "sep", 0.5, -1.5, "f32"),
    ):
        case = dict(dtype=dtype, m=257, n=390, k=100, act=combo[0], bias="/".join(combo[1]), config=cfg.key())
        try:
            out, od, ref = _epi_case(ctx, dtype, (257, 390, 100), combo, rng, cfg)
            ctx.record("tile192", case, out, od, ref, _tol(dtype, od))
        except Exception as ex:  # noqa: BLE001
            ctx.error("tile192", case, ex)
    case = dict(dtype=dtype, batch=3, m=130, n=200, k=64, config=cfg.key())
    try:
        a, b = ops.make((3, 130, 64), dtype, "C", rng), ops.make((3, 64, 200), dtype, "C", rng)
        ref = cp.matmul(ops.to64(a, dtype), ops.to64(b, dtype))
        out = ctx.nan_out(ref.shape, "f32")
        gemm(a, b, out, config=cfg, out_dtype="f32", **kw)
        ctx.record("tile192", case, out, "f32", ref, tol)
    except Exception as ex:  # noqa: BLE001
        ctx.error("tile192", case, ex)


def g_grouped(ctx, dtype):
    """The grouped kernel on :data:`GROUP_CASES` (zero-size groups included): lists that are
    one stacked buffer, lists of separate padded buffers (per-group tensor maps, B N-major
    and K-major), the pointer-array form with ``per_group_maps=True``, ``gemm_moe`` by
    device offsets and by host sizes (rows past the last group present), the masked form;
    and one list of torch tensors through per-group maps."""
    import numpy as np

    from layoutproof.gpu.host import grouped as hg
    from layoutproof.gpu.kernels.grouped import GroupedConfig

    cp, ops = ctx.cp, ctx.ops
    rng = cp.random.default_rng(4096)
    kw, tol = ops.kw(dtype), _tol(dtype)

    def to64(x):
        return ops.to64(cp.ascontiguousarray(x), dtype)

    def rec(case, c, a, b):
        return ctx.record("grouped", case, c, dtype, to64(a) @ to64(b), tol)

    for ci, (sizes, K, N) in enumerate(GROUP_CASES):
        G = len(sizes)
        base = dict(dtype=dtype, case=ci, groups=G, rows=sum(sizes), k=K, n=N)
        if ctx.expired():
            ctx.skipped("grouped", base)
            continue
        try:
            bs = ops.make((G, K, N), dtype, "C", rng)
            ends = np.cumsum(sizes)
            begs = ends - np.asarray(sizes)
            stacked = ops.make((int(ends[-1]), K), dtype, "C", rng)
            b_n = [bs[i] for i in range(G)]
            b_k = [cp.asfortranarray(bs[i]) for i in range(G)]
            a_st = [stacked[int(s) : int(e)] for s, e in zip(begs, ends)]
            a_pad = [ops.make((s, K + 8 * (i % 3)), dtype, "C", rng)[:, :K] for i, s in enumerate(sizes)]
            for form, al, bl in (("stacked", a_st, b_n), ("maps", a_pad, b_n), ("maps-kmajor", a_pad, b_k)):
                case = dict(base, form=form)
                try:
                    outs = hg.gemm_grouped(al, bl, **kw)
                    pm = bool(hg.last_grouped_launch.get("per_group_maps"))
                    for i, (x, y, c) in enumerate(zip(al, bl, outs)):
                        if x.shape[0]:
                            rec(dict(case, group=i, maps=pm), c, x, y)
                        elif tuple(c.shape) != (0, N):
                            raise RuntimeError(f"group {i} (empty) returned shape {c.shape}")
                    if form != "stacked" and not pm:
                        raise RuntimeError(f"not read through per-group maps: {hg.last_grouped_launch}")
                except Exception as ex:  # noqa: BLE001
                    ctx.error("grouped", case, ex)
            a_moe = ops.make((int(ends[-1]) + 5, K), dtype, "C", rng)
            offs = cp.asarray(ends.astype(np.int32))
            for form in ("moe offs", "moe sizes"):
                case = dict(base, form=form)
                try:
                    if form == "moe offs":
                        c = hg.gemm_moe(a_moe, bs, offs, **kw)
                    else:
                        c = hg.gemm_moe(a_moe, bs, sizes=sizes, **kw)
                    for i, (s, e) in enumerate(zip(begs, ends)):
                        if e > s:
                            rec(dict(case, group=i), c[int(s) : int(e)], a_moe[int(s) : int(e)], bs[i])
                except Exception as ex:  # noqa: BLE001
                    ctx.error("grouped", case, ex)
            case = dict(base, form="masked")
            try:
                max_m = max(sizes) + 3
                xm = ops.make((G, max_m, K), dtype, "C", rng)
                mm = cp.asarray(np.asarray(sizes, dtype=np.int32))
                y = hg.gemm_moe_masked(xm, bs, mm, **kw)
                for i, r in enumerate(sizes):
                    if r:
                        rec(dict(case, group=i), y[i, :r], xm[i, :r], bs[i])
            except Exception as ex:  # noqa: BLE001
                ctx.error("grouped", case, ex)
        except Exception as ex:  # noqa: BLE001
            ctx.error("grouped", base, ex)
    for M, K, N, G in ((37, 72, 40, 3), (1, 64, 264, 9), (130, 136, 200, 5)):
        case = dict(dtype=dtype, form="array per_group_maps", m=M, k=K, n=N, groups=G)
        try:
            same = [ops.make((M, K), dtype, "C", rng) for _ in range(G)]
            bl = [ops.make((K, N), dtype, "C", rng) for _ in range(G)]
            outs = hg.gemm_array(same, bl, config=GroupedConfig(max_groups=16, per_group_maps=True), **kw)
            for i in range(G):
                rec(dict(case, group=i), outs[i], same[i], bl[i])
        except Exception as ex:  # noqa: BLE001
            ctx.error("grouped", case, ex)
    torch = ops.torch
    if torch is not None and torch.cuda.is_available():
        tdt = torch.float16 if dtype == "f16" else torch.bfloat16
        g = torch.Generator(device="cuda").manual_seed(9)
        sizes, K, N = [0, 300, 1, 64, 0, 129, 77], 320, 264
        case = dict(dtype=dtype, form="torch maps", groups=len(sizes), k=K, n=N)
        try:
            al = [
                torch.randn(m, K + 8 * (i % 3), device="cuda", generator=g).to(tdt)[:, :K]
                for i, m in enumerate(sizes)
            ]
            bl = [torch.randn(N, K, device="cuda", generator=g).to(tdt).t() for _ in sizes]
            outs = hg.gemm_grouped(al, bl)
            for i, (x, y, c) in enumerate(zip(al, bl, outs)):
                if x.shape[0]:
                    ref = _torch_to_cp(cp, x).astype(cp.float64) @ _torch_to_cp(cp, y).astype(cp.float64)
                    _record_t(ctx, "grouped", dict(case, group=i), c, ref, tol)
        except Exception as ex:  # noqa: BLE001
            ctx.error("grouped", case, ex)


# ---------------------------------------------------------------- the groups, the workers
def build_groups(sections, n_shapes, dtypes=("f16", "bf16")):
    """[(section, function name, args)] -- the biggest first (they start first with --jobs)."""
    from layoutproof.gpu.kernels.wgmma import Sm90Config

    g = []
    if "base" in sections:
        g += [
            ("base", "g_base", (p, d, o, n_shapes))
            for p in ("wgmma", "mma.sync")
            for d in dtypes
            for o in ORDERS
        ]
    if "auto" in sections:
        shapes = _base_shapes(n_shapes)
        g += [("auto", "g_auto", (d, (o,), shapes)) for d in dtypes for o in ORDERS]
        expect = {s: w for s, w in AUTO_DECODE}
        g += [
            ("auto", "g_auto", (d, (("C", "C"), ("C", "F")), [s for s, _ in AUTO_DECODE], expect))
            for d in dtypes
        ]
        wg = dict(WGMMA_DECODE)
        g += [("auto", "g_auto", (d, (("C", "C"),), list(wg), wg, "wgmma")) for d in dtypes]
    if "kernels" in sections:
        for _, spec in SPLIT_CONFIGS:
            for d in dtypes:
                g.append(("kernels", "g_split", (spec, d, ORDERS)))
        g += [("kernels", "g_refused", ())]
        g += [("kernels", "g_mma", (i, d)) for i in range(len(MMA_DECODE)) for d in dtypes]
    if "batched" in sections:
        cfgs = (
            None,
            Sm90Config(loader="tma", schedule="ws", cluster=2),
            Sm90Config(bm=64, bn=64, stages=8, loader="tma", schedule="ws"),
        )
        g += [("batched", "g_batched", (d, c)) for d in dtypes for c in cfgs]
    if "epilogue" in sections:
        for d in dtypes:
            g.append(("epilogue", "g_epilogue", (d, EPI_SMALL_SHAPES)))
            g += [("epilogue", "g_epilogue", (d, (s,), True)) for s in EPI_SPLIT_SHAPES]
            g.append(("epilogue", "g_epilogue_batched", (d,)))
    for sec in ("hybrid", "grouped", "torch", "tile192", "tiny"):  # the newer paths
        if sec in sections:
            g += [(sec, f"g_{sec}", (d,)) for d in dtypes]
    return g


_CTX = []


def _init_worker(deadline):
    _CTX.append(Ctx(deadline))


def run_group(group):
    """Runs one group in this process; returns (section, name, args repr, rows, seconds)."""
    section, fn, args = group
    ctx = _CTX[0]
    ctx.rows = []
    t0 = time.time()
    try:
        globals()[fn](ctx, *args)
    except Exception as ex:  # noqa: BLE001 -- a group that breaks is recorded, the others run
        ctx.error(section, dict(group=fn, args=repr(args)[:200]), ex)
    rows = ctx.rows
    ok = sum(r["ok"] is True for r in rows)
    print(f"[{section}] {fn}{repr(args)[:90]}: {ok}/{len(rows)} ok in {time.time() - t0:.1f} s", flush=True)
    return section, fn, repr(args)[:200], rows, time.time() - t0


def sweep(sections, n_shapes, jobs, budget_s, log, out_path=None):
    """Every group of ``sections``: in this process (jobs <= 1) or in ``jobs`` spawned ones.
    Returns {section: summary}; ``log["sweep"]`` gets every row."""
    deadline = time.time() + budget_s if budget_s else None
    groups = build_groups(sections, n_shapes)
    rows = log.setdefault("sweep", [])
    done = log.setdefault("sweep_groups", [])

    def take(res):
        section, fn, args, rs, dt = res
        rows.extend(rs)
        done.append(dict(section=section, fn=fn, args=args, seconds=dt, cases=len(rs)))
        if out_path is not None:
            out_path.write_text(json.dumps(log, indent=1, default=str))

    if jobs <= 1:
        _init_worker(deadline)
        for gr in groups:
            take(run_group(gr))
    else:
        import concurrent.futures as cf
        import multiprocessing as mp

        with cf.ProcessPoolExecutor(
            max_workers=jobs,
            mp_context=mp.get_context("spawn"),
            initializer=_init_worker,
            initargs=(deadline,),
        ) as ex:
            futs = {ex.submit(run_group, gr): gr for gr in groups}
            for f in cf.as_completed(futs):
                try:
                    take(f.result())
                except Exception as e:  # noqa: BLE001 -- a worker died (a CUDA fault): its group fails
                    section, fn, args = futs[f]
                    take(
                        (
                            section,
                            fn,
                            repr(args)[:200],
                            [dict(section=section, group=fn, ok=False, error=repr(e)[:300])],
                            0.0,
                        )
                    )
    return summarize(rows, sections)


def summarize(rows, sections):
    out = {}
    for s in sections:
        rs = [r for r in rows if r.get("section") == s]
        run = [r for r in rs if r["ok"] is not None]
        worst = {}
        for r in run:
            if "err" in r and r.get("nan", 0) == 0:
                d = r.get("dtype", "?")
                worst[d] = max(worst.get(d, 0.0), r["err"])
        out[s] = dict(
            cases=len(rs),
            run=len(run),
            passed=sum(r["ok"] is True for r in rs),
            failed=[r for r in rs if r["ok"] is False],
            skipped=len(rs) - len(run),
            worst=worst,
        )
    return out


def compile_times(cp, log):
    import tempfile

    from layoutproof.gpu.config import GemmConfig, GemmProblem
    from layoutproof.gpu.host import cache
    from layoutproof.gpu.kernels import mma_sync as codegen

    os.environ["LAYOUTPROOF_CACHE"] = tempfile.mkdtemp()
    cfg = GemmConfig(bm=128, bn=128, bk=32, warps_m=2, warps_n=2, stages=3)
    prob = GemmProblem("k", "n", "f16", "f16")
    codegen._MEMO.clear()
    cache._KERNELS.clear()
    cache._MODULES.clear()
    t0 = time.perf_counter()
    k = cache.kernel_for(cfg, prob)
    t1 = time.perf_counter()
    cache.compile_kernel(k)
    t2 = time.perf_counter()
    # from the caches: a new process would hit the disk caches; here clear memory, keep disk
    codegen._MEMO.clear()
    cache._KERNELS.clear()
    cache._MODULES.clear()
    t3 = time.perf_counter()
    k2 = cache.kernel_for(cfg, prob)
    cache.compile_kernel(k2)
    t4 = time.perf_counter()
    t5 = time.perf_counter()
    cache.compile_kernel(cache.kernel_for(cfg, prob))
    t6 = time.perf_counter()
    d = dict(
        generate_prove_s=t1 - t0,
        compile_s=t2 - t1,
        cold_total_s=t2 - t0,
        disk_cache_s=t4 - t3,
        memory_cache_s=t6 - t5,
        obligations=len(k.proofs),
    )
    log["compile"] = d
    return d


def bench(cp, fn, reps, batches=7):
    """Median over ``batches`` of the mean time of ``reps`` back-to-back launches (events
    around each batch), after a warm-up: the same method for ours and cuBLAS."""
    for _ in range(3):
        fn()
    cp.cuda.Device().synchronize()
    ts = sorted(event_batch(cp, fn, reps)[0] for _ in range(batches))
    return ts[len(ts) // 2], ts


def speed(
    cp,
    ops,
    gemm,
    autotune,
    sizes,
    reps,
    log,
    configs=None,
    dtypes=("f16", "bf16"),
    paths=("wgmma", "mma.sync"),
    layouts=("CC", "CF"),
):
    from layoutproof.gpu.host import runtime

    rng = cp.random.default_rng(99)
    rows = log.setdefault("speed", [])
    for path, lay in [(p, la) for p in paths for la in layouts]:
        for dtype in dtypes:
            for m, n, k in sizes:
                a = ops.make((m, k), dtype, lay[0], rng)
                b = ops.make((k, n), dtype, lay[1], rng)
                cfg = "auto" if autotune is not None else None
                kw = dict(ops.kw(dtype), path=path, config=cfg)
                c = gemm(a, b, **kw)
                used = runtime.last_launch["config"].key()
                t_ours, _ = bench(cp, lambda: gemm(a, b, c, **kw), reps)
                if dtype == "f16" or ops.cp_bf16:
                    t_ref, _ = bench(cp, lambda: cp.matmul(a, b), reps)
                    ref_name = "cupy.matmul (cuBLAS)"
                else:
                    torch = ops.torch
                    ta = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
                    tb = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
                    t_ref, _ = bench(cp, lambda: torch.matmul(ta, tb), reps)
                    ref_name = "torch.matmul (cuBLAS)"
                fl = 2.0 * m * n * k
                row = dict(
                    path=path,
                    layout=f"A{lay[0]} B{lay[1]}",
                    dtype=dtype,
                    m=m,
                    n=n,
                    k=k,
                    config=used,
                    ours_ms=t_ours * 1e3,
                    ref_ms=t_ref * 1e3,
                    ours_tflops=fl / t_ours / 1e12,
                    ref_tflops=fl / t_ref / 1e12,
                    ratio=t_ref / t_ours,
                    reference=ref_name,
                )
                rows.append(row)
                print(
                    f"speed {path} A{lay[0]}B{lay[1]} {dtype} {m}x{n}x{k}: ours {row['ours_tflops']:.0f} TFLOP/s "
                    f"({used}), cuBLAS {row['ref_tflops']:.0f}, ratio {row['ratio']:.3f}",
                    flush=True,
                )
    return rows


def correctness_sections(args, log, out_path):
    """The correctness sweep's sections of ``--sections`` (worker processes with ``--jobs``);
    its summary lines: per section, then the rule's expected picks hit or missed."""
    sections = [x for x in args.sections.split(",") if x]
    bad = [x for x in sections if x not in SECTIONS]
    if bad:
        raise SystemExit(f"--sections: unknown {bad}; one of {SECTIONS}")
    t0 = time.time()
    summ = sweep(sections, 8 if args.quick else args.shapes, args.jobs, args.budget, log, out_path)
    log["sweep_summary"] = {s: dict(v, failed=len(v["failed"])) for s, v in summ.items()}
    log["sweep_seconds"] = time.time() - t0
    lines = []
    for sec, v in summ.items():
        w = ", ".join(f"{d} {e:.2e}" for d, e in sorted(v["worst"].items()))
        lines.append(
            f"correctness {sec}: {v['passed']}/{v['cases']} passed, {len(v['failed'])} failed, "
            f"{v['skipped']} skipped; worst rel. error {w}"
        )
        lines += [f"  FAILED {sec}: {r}" for r in v["failed"][:25]]
    hits = [r for r in log["sweep"] if "hit" in r]
    for r in sorted(hits, key=lambda r: (r["path"], r["dtype"], r["m"], r["n"], r["k"])):
        lines.append(
            f"{r['path']} {r['dtype']} {r['m']}x{r['n']}x{r['k']}: {r['config']} ({r['kind']}), "
            f"expected {r['expected']}: {'hit' if r['hit'] else 'MISSED'}"
        )
    lines.append(f"sweep: {time.time() - t0:.0f} s with {args.jobs} job(s)")
    return lines


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=None, help="folder for gemm_bench.json (default bench/out/gemm)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--shapes", type=int, default=50)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--skip", action="append", default=[], help="correctness|compile|speed")
    p.add_argument(
        "--sections",
        default=",".join(DEFAULT_SECTIONS),
        help="correctness sections: base (the 800 cases), auto, kernels, batched, epilogue (the "
        "default); torch, tiny, hybrid, tile192, grouped (the newer paths)",
    )
    p.add_argument("--jobs", type=int, default=1, help="worker processes for the correctness sections")
    p.add_argument("--budget", type=float, default=0, help="seconds for the sweep; later cases are skipped")
    p.add_argument("--no-autotune", action="store_true")
    p.add_argument("--sizes", default=None, help="MxNxK,MxNxK,... (speed section)")
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("--paths", default="wgmma,mma.sync")
    p.add_argument("--layouts", default="CC,CF", help="A and B orders: C row-major, F column-major")
    args = p.parse_args(argv)
    import cupy as cp

    from layoutproof.gpu.host.runtime import autotune, gemm

    out = out_dir("gemm", args.out)
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"]
    dev = dev.decode() if isinstance(dev, bytes) else str(dev)
    log = {"device": dev, "cupy": cp.__version__, "date": time.strftime("%Y-%m-%d %H:%M")}
    ops = Ops(cp)
    log["cupy_bfloat16"] = ops.cp_bf16
    summary = []
    try:
        if "compile" not in args.skip:
            d = compile_times(cp, log)
            summary.append(
                f"compile: generate+prove {d['generate_prove_s']:.2f} s + compile "
                f"{d['compile_s']:.2f} s cold; {d['disk_cache_s'] * 1e3:.1f} ms from "
                f"disk cache, {d['memory_cache_s'] * 1e3:.2f} ms from memory "
                f"({d['obligations']} obligations)"
            )
        if "correctness" not in args.skip:
            summary += correctness_sections(args, log, out / "gemm_bench.json")
        if "speed" not in args.skip:
            sizes = (
                [(4096, 4096, 4096)]
                if args.quick
                else [(4096, 4096, 4096), (8192, 8192, 8192), (4095, 4097, 4093)]
            )
            if args.sizes:
                sizes = shapes_arg(args.sizes)
            rows = speed(
                cp,
                ops,
                gemm,
                None if args.no_autotune else autotune,
                sizes,
                args.reps,
                log,
                dtypes=args.dtypes.split(","),
                paths=args.paths.split(","),
                layouts=args.layouts.split(","),
            )
            for r in rows:
                summary.append(
                    f"{r['path']:8s} {r['layout']} {r['dtype']:5s} {r['m']}x{r['n']}x{r['k']:<5d} ours "
                    f"{r['ours_tflops']:6.1f} TFLOP/s  cuBLAS {r['ref_tflops']:6.1f}  "
                    f"ratio {r['ratio']:.3f}  [{r['config']}]"
                )
    finally:
        (out / "gemm_bench.json").write_text(json.dumps(log, indent=1, default=str))
        print(f"\n== {dev} ==")
        for s in summary:
            print(s)
    failed = sum(v["failed"] for v in log.get("sweep_summary", {}).values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
