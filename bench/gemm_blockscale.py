"""The fp8 GEMM with DeepGEMM's block scales on the GPU: correctness against a float64
dequantize-and-multiply reference, and speed on DeepSeek-V3's shapes.

``C = (A * scale_a) @ (B * scale_b)`` with ``scale_a`` one f32 per row and 128 elements of K
(``M x ceil(K/128)``), ``scale_b`` one per 128 x 128 block of B (``ceil(N/128) x ceil(K/128)``),
through :func:`layoutproof.gpu.host.blockscale.gemm_fp8_blockscale` (the kernel generated and
proven on first use).

* ``--check``: e4m3/e5m2 into bf16/f16/f32 (and int8 with scales into f32/bf16) on shapes with tails on M, N and K (K a multiple
  of 16, not of 128), scale_a row-major, MN-major (DeepGEMM's layout, padded to 16 bytes),
  per-row and per-tensor (a one-element device tensor, broadcast); outputs NaN-poisoned and
  written through a padded view whose border must stay untouched.  The error is the largest
  ``|ours - ref| / max |ref|`` against float64 of the exactly representable inputs; the
  float32 dequantize-and-matmul error is printed beside it for scale.
* ``--epilogue``: the fused epilogue options on the same kind of shapes (tails on M, N, K):
  a bias along N or M in f32/f16/bf16, relu/silu/gelu, ``alpha``/``beta`` with a C input
  (also in place, ``c`` the output), for e4m3/e5m2 and int8 (whose ``alpha`` is the
  epilogue's), against float64 ``act(alpha * ref + beta * c + bias)``; the same NaN
  poisoning and border check.
* ``--sanitize``: a run small enough for ``compute-sanitizer --tool memcheck``: the plain
  kernel and each epilogue form, e4m3 and s8, at a shape with tails on M, N and K, against
  float64
  (exit 1 on a mismatch).
* ``--time SHAPES`` (``deepgemm``: the dense shapes of DeepGEMM's README): TFLOP/s of ours
  against the torch reference (dequantize to bf16 + ``torch.matmul``) and
  ``torch._scaled_mm`` with per-tensor scales (the same fp8 FLOPs without block scales; a
  ceiling, not the same product), interleaved rounds, median of per-round ratios, beside
  DeepGEMM's published figure for the shape (H800 SXM5, which has the H100's dense compute).

  With ``--time-epilogue`` ours is timed with the epilogue fused too (a bf16 bias along N,
  gelu, ``beta * c``), beside the plain kernel.

* ``--variants SHAPES``: the generator's variants (:data:`VARIANTS`: the current
  consumer, ``early_release``, ``partials=2`` and both) checked against float64, then timed against each other and
  ``torch._scaled_mm`` in one process, interleaved (median of per-round speed-ups);
  ``--sanitize-variants`` is ``--sanitize`` with each variant.

Run on the GPU machine from the repository root (after ``. bench/device_env.sh``)::

    python3 bench/gemm_blockscale.py --check --epilogue --time deepgemm
    compute-sanitizer --tool memcheck python3 bench/gemm_blockscale.py --sanitize

Logs (and a JSON of every figure) go under ``$OUT/gemm_blockscale`` (``bench/out/...``
locally).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from _timing import out_dir

#: DeepGEMM's README (commit 55ab91f, 2025-03-25, "Normal GEMMs for dense models"; H800 SXM5,
#: NVCC 12.8): (M, N, K) -> TFLOP/s of its fp8 block-scaled GEMM
DEEPGEMM_H800: Dict[Tuple[int, int, int], int] = {
    (64, 2112, 7168): 206,
    (64, 24576, 1536): 289,
    (64, 32768, 512): 219,
    (64, 7168, 16384): 336,
    (64, 4096, 7168): 287,
    (64, 7168, 2048): 295,
    (128, 2112, 7168): 352,
    (128, 24576, 1536): 535,
    (128, 32768, 512): 358,
    (128, 7168, 16384): 645,
    (128, 4096, 7168): 533,
    (128, 7168, 2048): 510,
    (4096, 2112, 7168): 1009,
    (4096, 24576, 1536): 1125,
    (4096, 32768, 512): 751,
    (4096, 7168, 16384): 1426,
    (4096, 4096, 7168): 1265,
    (4096, 7168, 2048): 1168,
}

_TORCH_OUT = {"bf16": "bfloat16", "f16": "float16", "f32": "float32"}
_TORCH_IN = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "s8": "int8"}
_TOL = {"bf16": 1.5e-2, "f16": 4e-3, "f32": 2e-3}

LOG: List[str] = []
RESULTS: Dict[str, Any] = {"check": [], "time": []}


def say(line: str) -> None:
    print(line, flush=True)
    LOG.append(line)


def inputs(dtype: str, m: int, n: int, k: int, seed: int, sa_layout: str) -> Tuple[Any, Any, Any, Any]:
    """fp8 A (M x K row-major), B (K x N, K contiguous: the transpose of an N x K row-major
    weight), scale_a in ``sa_layout`` (``row``, ``mn``: MN-major padded to 4 rows, ``per_row``,
    ``tensor``) and a row-major scale_b; scales in [0.5, 1.5) times powers of two."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    if dtype == "s8":
        a = torch.randint(-128, 128, (m, k), device="cuda", generator=g, dtype=torch.int8)
        bt = torch.randint(-128, 128, (n, k), device="cuda", generator=g, dtype=torch.int8)
    else:
        f8 = getattr(torch, _TORCH_IN[dtype])
        a = (torch.randn(m, k, device="cuda", generator=g) * 2).to(f8)
        bt = (torch.randn(n, k, device="cuda", generator=g) * 2).to(f8)
    kb, nb = -(-k // 128), -(-n // 128)

    def sc(*shape: int) -> Any:
        e = torch.randint(-3, 4, shape, device="cuda", generator=g).float()
        return (torch.rand(*shape, device="cuda", generator=g) + 0.5) * torch.exp2(e)

    if sa_layout == "row":
        sa = sc(m, kb)
    elif sa_layout == "mn":
        mp = -(-m // 4) * 4
        sa = sc(kb, mp).T[:m]  # (m, kb) with strides (1, mp)
    elif sa_layout == "per_row":
        sa = sc(m, 1)
    else:
        sa = sc(1)
    return a, bt.T, sa, sc(nb, kb)


def reference(a: Any, b: Any, sa: Any, sb: Any, kind: Any) -> Any:
    """``(A * sa) @ (B * sb)`` in ``kind`` (torch.float64 or torch.float32, TF32 off)."""
    import torch

    m, k = a.shape
    n = b.shape[1]
    kb = -(-k // 128)
    kk = torch.arange(k, device="cuda") // 128
    nn = torch.arange(n, device="cuda") // 128
    sa2 = sa.reshape(1, 1) if sa.dim() == 1 else sa
    sa2 = sa2.to(kind).expand(m, kb)
    sb2 = sb.to(kind).expand(-(-n // 128), kb)
    A = a.to(kind) * sa2[:, kk]
    B = b.to(kind) * sb2[nn][:, kk].T
    torch.backends.cuda.matmul.allow_tf32 = False
    return A @ B


#: the epilogue forms of ``--epilogue`` and ``--sanitize``: (name, options); ``bias`` is the
#: bias's dtype, ``along`` its axis, ``c`` a C input (``"inplace"``: the output itself)
EPILOGUES: List[Tuple[str, Dict[str, Any]]] = [
    ("bias_n f32 + relu", dict(bias="f32", act="relu")),
    (
        "bias_m bf16 + gelu, alpha/beta c",
        dict(bias="bf16", along="m", act="gelu", alpha=0.5, beta=-1.5, c=True),
    ),
    ("bias_n f16 + silu, beta c", dict(bias="f16", act="silu", beta=2.0, c=True)),
    ("alpha/beta in place", dict(alpha=2.0, beta=0.5, c="inplace")),
    ("alpha alone", dict(alpha=0.25)),
]


def epilogue_inputs(m: int, n: int, out: str, opt: Dict[str, Any], seed: int, mag: float) -> Dict[str, Any]:
    """The bias and the C input an epilogue form ``opt`` reads (torch tensors), of the
    product's magnitude ``mag`` (so that a bias or C element read at the wrong place moves
    the result by about ``mag``, far past the tolerance)."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(1000 + seed)
    along = opt.get("along", "n")
    got: Dict[str, Any] = dict(along=along, alpha=opt.get("alpha", 1.0), beta=opt.get("beta", 0.0))
    got["act"] = opt.get("act")
    if "bias" in opt:
        bdt = getattr(torch, _TORCH_OUT[opt["bias"]])
        got["bias"] = (torch.randn(m if along == "m" else n, device="cuda", generator=g) * mag).to(bdt)
    if opt.get("c"):
        got["c"] = (torch.randn(m, n, device="cuda", generator=g) * mag).to(getattr(torch, _TORCH_OUT[out]))
        got["inplace"] = opt["c"] == "inplace"
    return got


def apply_epilogue(r: Any, e: Optional[Dict[str, Any]]) -> Any:
    """``act(alpha * r + beta * c + bias)`` in ``r``'s precision (``e`` None: ``r``)."""
    import torch

    if e is None:
        return r
    r = e["alpha"] * r
    if "c" in e:
        r = r + e["beta"] * e["c"].to(r.dtype)
    if "bias" in e:
        bb = e["bias"].to(r.dtype)
        r = r + (bb[:, None] if e["along"] == "m" else bb[None, :])
    act = e["act"]
    if act == "relu":
        r = torch.relu(r)
    elif act == "silu":
        r = torch.nn.functional.silu(r)
    elif act == "gelu":
        r = torch.nn.functional.gelu(r)
    return r


def check(
    dtype: str,
    out: str,
    m: int,
    n: int,
    k: int,
    sa_layout: str,
    seed: int = 0,
    epilogue: Optional[Tuple[str, Dict[str, Any]]] = None,
    partials: int = 1,
    early_release: bool = False,
    **variant: Any,
) -> bool:
    import torch

    from layoutproof.gpu.host.blockscale import gemm_fp8_blockscale, last_blockscale_launch

    a, b, sa, sb = inputs(dtype, m, n, k, seed, sa_layout)
    tout = getattr(torch, _TORCH_OUT[out])
    pad = 8
    big = torch.full((m + 2, n + 2 * pad), float("nan"), device="cuda", dtype=tout)
    view = big[1 : m + 1, pad : pad + n]
    plain = reference(a, b, sa, sb, torch.float64)
    # an f16 bias, C input or output stays finite (f16 tops out at 65504)
    mag = min(max(plain.abs().max().item(), 1e-30) / 2, 1e3 if out == "f16" else 1e4)
    e = None if epilogue is None else epilogue_inputs(m, n, out, epilogue[1], seed, mag)
    kw: Dict[str, Any] = {}
    if e is not None:
        kw = dict(alpha=e["alpha"], beta=e["beta"], bias=e.get("bias"), bias_along=e["along"])
        kw["activation"] = e["act"]
        if "c" in e:
            if e["inplace"]:
                view.copy_(e["c"])
            kw["c"] = view if e["inplace"] else e["c"]
    t0 = time.perf_counter()
    gemm_fp8_blockscale(
        a, b, sa, sb, out_dtype=out, out=view, partials=partials, early_release=early_release, **variant, **kw
    )
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    ref = apply_epilogue(plain, e)
    r32 = apply_epilogue(reference(a, b, sa, sb, torch.float32), e)
    scale = max(ref.abs().max().item(), 1e-30)
    got = view.double()
    nan = int(torch.isnan(got).sum().item())
    err = (got - ref).abs().max().item() / scale if nan == 0 else float("inf")
    e32 = (r32.double() - ref).abs().max().item() / scale
    border = big.clone()
    border[1 : m + 1, pad : pad + n] = float("nan")
    untouched = bool(torch.isnan(border).all().item())
    ok = nan == 0 and err <= _TOL[out] and untouched
    cfg = last_blockscale_launch.get("config")
    ename = "" if epilogue is None else f" epilogue [{epilogue[0]}]"
    ename += "" if partials == 1 else f" partials={partials}"
    ename += " early_release" if early_release else ""
    ename += "".join(
        f" {k}" if v is True else f" {k}={getattr(v, 'key', lambda: v)()}" for k, v in variant.items() if v
    )
    say(
        f"[check] {'ok  ' if ok else 'FAIL'} {dtype}->{out} {m}x{n}x{k} scale_a {sa_layout}{ename}: "
        f"max err {err:.2e} (f32 dequant+matmul {e32:.2e}, tol {_TOL[out]:.0e}), NaN left {nan}, "
        f"border {'untouched' if untouched else 'WRITTEN'}, first call {first:.2f} s "
        f"({cfg.key() if cfg is not None else '?'})"
    )
    RESULTS["check"].append(
        dict(
            dtype=dtype,
            out=out,
            m=m,
            n=n,
            k=k,
            sa=sa_layout,
            epilogue=None if epilogue is None else epilogue[0],
            partials=partials,
            early_release=early_release,
            err=err,
            err_f32=e32,
            ok=ok,
            first_s=first,
        )
    )
    return ok


def _time(fn: Any, reps: int) -> float:
    import torch

    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    fn()
    s.record()
    for _ in range(reps):
        fn()
    e.record()
    e.synchronize()
    return s.elapsed_time(e) / reps / 1e3


def timing(m: int, n: int, k: int, rounds: int = 7, epilogue: bool = False) -> Dict[str, float]:
    """Median TFLOP/s of ours and the peers, interleaved round by round; the ratios (peer
    time / ours) are medians of the per-round ratios.  Returns ``{peer: ratio}``.  With
    ``epilogue``, ours with the fused epilogue (a bf16 bias along N, gelu, ``beta * c``) is
    a peer too."""
    import torch

    from layoutproof.gpu.host.blockscale import blockscale_launcher, last_blockscale_launch

    a, b, sa, sb = inputs("e4m3", m, n, k, 1, "mn")
    ours, c = blockscale_launcher(a, b, sa, sb, out_dtype="bf16")
    ours()
    cfg = last_blockscale_launch["config"]
    kk = torch.arange(k, device="cuda") // 128
    nn = torch.arange(n, device="cuda") // 128
    sa_full = sa[:, kk]  # the reference's scales, expanded once (not timed)
    sb_full = sb[nn][:, kk].T

    def dequant_matmul() -> Any:
        return (a.to(torch.bfloat16) * sa_full.to(torch.bfloat16)) @ (
            b.to(torch.bfloat16) * sb_full.to(torch.bfloat16)
        )

    one = torch.ones((), device="cuda")
    peers: Dict[str, Any] = {"torch dequant+matmul": dequant_matmul}
    if epilogue:
        bias = torch.randn(n, device="cuda").to(torch.bfloat16)
        cin = torch.randn(m, n, device="cuda").to(torch.bfloat16)
        fused, _c2 = blockscale_launcher(
            a, b, sa, sb, out_dtype="bf16", bias=bias, activation="gelu", beta=0.5, c=cin
        )
        fused()
        peers["ours + epilogue"] = fused

    def scaled_mm() -> Any:
        return torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)

    for name, fn in (("_scaled_mm per-tensor", scaled_mm),):
        try:
            fn()
            peers[name] = fn
        except Exception as e:  # a peer the installed torch does not run on this shape
            say(f"[time] {m}x{n}x{k}: {name} failed: {e}")
    flop = 2.0 * m * n * k
    reps = max(5, min(100, int(2e13 / flop)))
    runs = {"ours": ours, **peers}
    times: Dict[str, List[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            times[name].append(_time(fn, reps))
    tf = {name: flop / statistics.median(t) / 1e12 for name, t in times.items()}
    ratios = {p: statistics.median(tp / to for tp, to in zip(times[p], times["ours"])) for p in peers}
    dg = DEEPGEMM_H800.get((m, n, k))
    line = ", ".join(f"{name} {v:.0f}" for name, v in tf.items())
    # the timed peers ran after ours: the config printed is the plain kernel's
    last_blockscale_launch["config"] = cfg
    line += "".join(f"; {p}/ours {r:.3f}" for p, r in ratios.items())
    if dg is not None:
        line += f"; DeepGEMM (H800, published) {dg}, ours/DeepGEMM {tf['ours'] / dg:.2f}"
    say(f"[time] e4m3->bf16 {m}x{n}x{k} ({cfg.key()}) TFLOP/s: {line}")
    RESULTS["time"].append(dict(m=m, n=n, k=k, config=cfg.key(), tflops=tf, ratios=ratios, deepgemm_h800=dg))
    return ratios


#: the generator options ``--variants`` times against each other: name -> launcher keywords
VARIANTS: Dict[str, Dict[str, Any]] = {
    "current": {},
    "early release": dict(early_release=True),
    "two partials": dict(partials=2),
    "two partials + early release": dict(partials=2, early_release=True),
    "late scales": dict(late_scales=True),
    "prefetched scales": dict(prefetch_scales=True),
    "prefetched scales + early release": dict(prefetch_scales=True, early_release=True),
    "4 stages": dict(config="s4"),
    "cluster 2 (4 stages)": dict(config="s4c2"),
}
#: the tile configurations the variants name (the block-scaled kernel's 128 x 128 tile)
_VARIANT_CONFIGS = {
    "s4": dict(bm=128, bn=128, stages=4, loader="tma", schedule="ws"),
    "s4c2": dict(bm=128, bn=128, stages=4, loader="tma", schedule="ws", cluster=2),
}


def variant_kw(kw: Dict[str, Any]) -> Dict[str, Any]:
    """A variant's keywords for the host, its named tile configuration made a
    :class:`Sm90Config`."""
    from layoutproof.gpu.kernels.wgmma_core import Sm90Config

    out = dict(kw)
    if "config" in out:
        out["config"] = Sm90Config(**_VARIANT_CONFIGS[out["config"]])
    return out


def timing_variants(m: int, n: int, k: int, rounds: int = 7) -> Dict[str, float]:
    """The generator variants of :data:`VARIANTS` and ``torch._scaled_mm`` (per-tensor: a
    ceiling, not the same product) at one shape, interleaved round by round in one
    process; TFLOP/s medians and each variant's speed-up over ``current`` (median of
    per-round time ratios).  Returns ``{variant: ratio}``."""
    import torch

    from layoutproof.gpu.host.blockscale import blockscale_launcher

    a, b, sa, sb = inputs("e4m3", m, n, k, 1, "mn")
    runs: Dict[str, Any] = {}
    outs: Dict[str, Any] = {}
    for name, kw in VARIANTS.items():
        fn, c = blockscale_launcher(a, b, sa, sb, out_dtype="bf16", **variant_kw(kw))
        fn()
        runs[name], outs[name] = fn, c
    torch.cuda.synchronize()
    # the same wgmmas and promotions in the same order: every variant's output is the
    # current kernel's, bit for bit
    same = {v: bool(torch.equal(outs[v], outs["current"])) for v in VARIANTS}
    if not all(same.values()):
        RESULTS.setdefault("variant_mismatch", []).append(dict(m=m, n=n, k=k, same=same))
    one = torch.ones((), device="cuda")
    runs["_scaled_mm per-tensor"] = lambda: torch._scaled_mm(
        a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16
    )
    flop = 2.0 * m * n * k
    reps = max(5, min(100, int(2e13 / flop)))
    times: Dict[str, List[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            times[name].append(_time(fn, reps))
    tf = {name: flop / statistics.median(t) / 1e12 for name, t in times.items()}
    ratios = {v: statistics.median(tc / tv for tc, tv in zip(times["current"], times[v])) for v in VARIANTS}
    dg = DEEPGEMM_H800.get((m, n, k))
    line = ", ".join(f"{name} {v:.0f}" for name, v in tf.items())
    line += "".join(f"; {v} speed-up {r:.3f}" for v, r in ratios.items() if v != "current")
    line += "; outputs bit-identical to current: " + ("all" if all(same.values()) else f"NO {same}")
    if dg is not None:
        line += f"; DeepGEMM (H800, published) {dg}"
    say(f"[variants] e4m3->bf16 {m}x{n}x{k} TFLOP/s: {line}")
    RESULTS.setdefault("variants", []).append(
        dict(m=m, n=n, k=k, tflops=tf, speedup=ratios, deepgemm_h800=dg)
    )
    return ratios


def check_variants() -> int:
    """Each variant's numerics against float64 (tails on M, N and K, every scale_a
    layout, fp8 and int8, with and without an epilogue); returns the failures."""
    fails = 0
    for name, kw in VARIANTS.items():
        if not kw:
            continue
        for i, (dtype, out, shape) in enumerate(
            (
                ("e4m3", "bf16", (200, 300, 400)),  # 128 x 128 tiles, tails on M, N, K
                ("e5m2", "f16", (1, 130, 16)),  # 64 x 128 tiles, one k-tile
                ("s8", "f32", (129, 256, 7168)),
                ("e4m3", "bf16", (4096, 512, 7168)),
            )
        ):
            sl = ("row", "mn", "per_row", "tensor")[i % 4]
            fails += not check(dtype, out, *shape, sl, i, **variant_kw(kw))
        fails += not check("e4m3", "bf16", 257, 513, 1040, "mn", 7, EPILOGUES[1], **variant_kw(kw))
        say(f"[variants] {name}: numerics checked")
    return fails


def sanitize(partials: int = 1, early_release: bool = False, light: bool = False, **variant: Any) -> int:
    """The ``--sanitize`` run: the plain kernel and each epilogue form, e4m3 and s8, at a
    shape with a tail on every dimension, against float64 (``partials``: the consumer
    variant, ``early_release`` too; ``light``: one epilogue form, e4m3 only for it);
    returns the exit status (1 on a mismatch)."""
    fails, before = 0, len(RESULTS["check"])
    m, n, k = 37, 200, 272  # 37 of 64 rows, 200 = 128 + 72 columns, 272 = 2 * 128 + 16 of K
    for dtype, out in (("e4m3", "bf16"), ("s8", "f32")):
        fails += not check(
            dtype, out, m, n, k, "mn", partials=partials, early_release=early_release, **variant
        )
        for j, e in enumerate(EPILOGUES):
            if light and (j != 1 or dtype != "e4m3"):
                continue
            sl = ("row", "per_row", "tensor")[j % 3]
            fails += not check(
                dtype, out, m, n, k, sl, j + 1, e, partials=partials, early_release=early_release, **variant
            )
    say(f"[sanitize] {len(RESULTS['check']) - before} runs, {fails} mismatches")
    return 1 if fails else 0


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--epilogue", action="store_true", help="check the fused epilogue options")
    ap.add_argument("--sanitize", action="store_true", help="a small run for compute-sanitizer")
    ap.add_argument("--time-epilogue", action="store_true", help="time ours with the epilogue too")
    ap.add_argument("--time", default="", help="MxNxK,... or 'deepgemm' (DeepGEMM's README shapes)")
    ap.add_argument("--variants", default="", help="MxNxK,... : time the generator variants (VARIANTS)")
    ap.add_argument("--sanitize-variants", action="store_true", help="--sanitize with every variant")
    ap.add_argument("--which", default="", help="the variants to run (names of VARIANTS, comma-separated)")
    ap.add_argument("--out", default=None, help="log folder (default $OUT/gemm_blockscale)")
    ns = ap.parse_args(argv)
    import torch

    say(f"[env] {torch.cuda.get_device_name()}, torch {torch.__version__}")
    if ns.which:  # the current kernel always, as the baseline
        keep = {"current"} | {w.strip() for w in ns.which.split(",")}
        for v in [v for v in VARIANTS if v not in keep]:
            del VARIANTS[v]
    fails = 0
    if ns.check:
        shapes = [
            (128, 128, 128),
            (200, 300, 400),
            (64, 2112, 7168),
            (1, 130, 16),
            (257, 513, 1040),
            (4096, 512, 7168),
        ]
        for dtype, out in (("e4m3", "bf16"), ("e4m3", "f32"), ("e5m2", "f16"), ("s8", "f32"), ("s8", "bf16")):
            for i, (m, n, k) in enumerate(shapes):
                fails += not check(dtype, out, m, n, k, ("row", "mn", "per_row", "tensor")[i % 4], seed=i)
    if ns.epilogue:
        shapes = [(200, 300, 400), (1, 130, 16), (257, 513, 1040)]
        kinds = (("e4m3", "bf16"), ("e4m3", "f32"), ("e5m2", "f16"), ("s8", "f32"), ("s8", "bf16"))
        for i, (m, n, k) in enumerate(shapes):
            for j, (dtype, out) in enumerate(kinds):
                e = EPILOGUES[(i + j) % len(EPILOGUES)]
                fails += not check(dtype, out, m, n, k, ("row", "mn", "per_row", "tensor")[j % 4], i + j, e)
    if ns.sanitize:
        fails += sanitize()
    if ns.sanitize_variants:  # the consumer variants: early release, two partials (and both)
        for kw in VARIANTS.values():
            if kw:
                fails += sanitize(light=True, **variant_kw(kw))
    if ns.variants:
        fails += check_variants()
        vgeo: Dict[str, List[float]] = {}
        for m, n, k in [tuple(int(x) for x in s.split("x")) for s in ns.variants.split(",")]:
            for v, r in timing_variants(m, n, k).items():
                vgeo.setdefault(v, []).append(r)
        fails += len(RESULTS.get("variant_mismatch", []))  # a variant's output differs
        for v, rs in vgeo.items():
            if v != "current":
                g = math.exp(sum(math.log(r) for r in rs) / len(rs))
                say(f"[geomean] {v} speed-up over current, {len(rs)} shapes: {g:.3f} (min {min(rs):.3f})")
    if ns.time:
        shapes = (
            list(DEEPGEMM_H800)
            if ns.time == "deepgemm"
            else [tuple(int(x) for x in s.split("x")) for s in ns.time.split(",")]
        )
        geo: Dict[str, List[float]] = {}
        for m, n, k in shapes:
            for p, r in timing(m, n, k, epilogue=ns.time_epilogue).items():
                geo.setdefault(p, []).append(r)
        for p, rs in geo.items():
            g = math.exp(sum(math.log(r) for r in rs) / len(rs))
            say(f"[geomean] {p} time / ours over {len(rs)} shapes: {g:.3f}")
        rel = [t["tflops"]["ours"] / t["deepgemm_h800"] for t in RESULTS["time"] if t["deepgemm_h800"]]
        if rel:
            g = math.exp(sum(math.log(r) for r in rel) / len(rel))
            say(f"[geomean] ours / DeepGEMM's published H800 TFLOP/s over {len(rel)} shapes: {g:.3f}")
    say(f"[done] {fails} failed checks")
    d = out_dir("gemm_blockscale", ns.out)
    (d / "log.txt").write_text("\n".join(LOG) + "\n")
    (d / "results.json").write_text(json.dumps(RESULTS, indent=1, default=str))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
