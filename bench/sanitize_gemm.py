"""A small proven-GEMM run for compute-sanitizer (memcheck): every variant (split-K, the fused
epilogue with bias along N or M, the batched kernel too), odd sizes.

compute-sanitizer --tool memcheck python bench/sanitize_gemm.py [--new]

``--new``: only the batched kernels and the epilogue inputs (bias along M / in f16, batched,
batched alpha/beta with a C input per batch, shared or in place).
"""

import sys

import cupy as cp

from layoutproof.gpu.config import GemmConfig
from layoutproof.gpu.host.runtime import gemm
from layoutproof.gpu.kernels.splitk import SplitKConfig
from layoutproof.gpu.kernels.wgmma import Sm90Config

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
