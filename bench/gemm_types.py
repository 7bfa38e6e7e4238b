"""The wgmma kernels of the other tensor-core types on the GPU: tf32, fp8 (e4m3, e5m2, with
a per-tensor scale) and int8 (s8 -> s32).

Each kernel is generated and proven (:func:`layoutproof.gpu.kernels.wgmma.generate_sm90`;
the fp8 kernels take the per-tensor scale as one f32 parameter), compiled, and launched
directly: the
operands are K-major (A row-major M x K, B as N x K rows) and move as 16-bit units, so the
tensor maps describe ``K * bytes / 2`` units per row.

* ``--check``: every type on a few shapes with tails on M, N and K, against float64 of the
  exactly representable inputs; the output is NaN-poisoned (a sentinel for s32), with a
  poisoned border that must stay untouched.
* ``--time SHAPES``: TFLOP/s against ``torch._scaled_mm`` (fp8), ``torch._int_mm`` (int8)
  and ``torch.matmul`` with tf32 allowed, interleaved rounds, median of per-round ratios.

Run on the GPU machine from the repository root (after ``. bench/device_env.sh``)::

    python3 bench/gemm_types.py --check --time 8192x8192x8192,4096x4096x4096
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.host.cache import compile_kernel
from layoutproof.gpu.host.rule import launch_grid
from layoutproof.gpu.kernels.wgmma import HOPPER_DEFAULT, generate_sm90
from layoutproof.gpu.kernels.wgmma_core import SCALED_TYPES

_KERNELS: Dict[Tuple[str, str, Any], Any] = {}


def kernel(dtype: str, out: str, cfg: Any = HOPPER_DEFAULT) -> Tuple[Any, Any]:
    """(generated kernel, compiled RawKernel) for ``dtype`` -> ``out`` on ``cfg``."""
    key = (dtype, out, cfg)
    if key not in _KERNELS:
        t0 = time.perf_counter()
        k = generate_sm90(cfg, GemmProblem("k", "k", dtype, out))
        t1 = time.perf_counter()
        rk = compile_kernel(k)
        t2 = time.perf_counter()
        print(
            f"[gen] {k.name} ({cfg.key()}): generated + proven in {t1 - t0:.2f} s "
            f"({len(k.proofs)} proof records), compiled in {t2 - t1:.2f} s",
            flush=True,
        )
        _KERNELS[key] = (k, rk)
    return _KERNELS[key]


def tensor_map(ptr: int, rows: int, k_bytes: int, ld_bytes: int) -> Any:
    """The typed kernels' map (the library's own: 16-bit units, 64 x 64-unit boxes)."""
    from layoutproof.gpu.host.typed import unit_tensor_map

    return unit_tensor_map(ptr, rows, k_bytes, ld_bytes)


_TORCH_OUT = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "s32": "int32"}
_TORCH_IN = {"e4m3": "float8_e4m3fn", "e5m2": "float8_e5m2", "tf32": "float32", "s8": "int8"}


class Launch:
    """One product C (M x N, row stride ldc) = alpha * A (M x K) @ B (N x K)^T."""

    def __init__(
        self, dtype: str, out: str, a: Any, b: Any, c: Any, alpha: float = 1.0, cfg: Any = HOPPER_DEFAULT
    ) -> None:
        import cupy as cp
        import torch

        self.k, self.rk = kernel(dtype, out, cfg)
        M, K = a.shape
        N = b.shape[0]
        eb = a.element_size()
        ob = c.element_size()
        ldc = c.stride(0)
        ta = tensor_map(a.data_ptr(), M, K * eb, a.stride(0) * eb)
        tb = tensor_map(b.data_ptr(), N, K * eb, b.stride(0) * eb)
        cv = int(ldc * ob % 16 == 0 and c.data_ptr() % 16 == 0)
        craw = cp.from_dlpack(c.view(torch.int32) if ob == 4 else c.view(torch.int16))
        self.args: Tuple[Any, ...] = (ta, tb, craw, np.int32(M), np.int32(N))
        self.args += (np.int32(K * eb // 2), np.int64(ldc), np.int32(cv))
        if dtype in SCALED_TYPES:  # the per-tensor scale_a * scale_b
            self.args += (np.float32(alpha),)
        sms = cp.cuda.Device().attributes["MultiProcessorCount"]
        self.grid = launch_grid(cfg, M, N, sms)
        self.keep = (a, b, c)

    def __call__(self) -> None:
        self.rk(self.grid, (self.k.threads, 1, 1), self.args, shared_mem=self.k.smem_bytes)


class PtrLaunch:
    """The pointer-operand kernels (the mma.sync kernel, the monolithic cp.async wgmma
    kernel): ``(A, B, C, M, N, K, lda, ldb, ldc, c_vec[, scale])``, K and the leading
    dimensions in 16-bit units."""

    def __init__(self, kern: Any, dtype: str, a: Any, b: Any, c: Any, alpha: float) -> None:
        import cupy as cp
        import torch

        from layoutproof.gpu.config import TC_TYPES

        self.k, self.rk = kern, compile_kernel(kern)
        M, K = a.shape
        N = b.shape[0]
        eb = TC_TYPES[dtype][0]
        ob = c.element_size()
        ldc = c.stride(0)

        def raw(t: Any) -> Any:
            return (
                cp.from_dlpack(t.view(torch.int16) if ob == 2 else t.view(torch.int32))
                if t is c
                else (cp.from_dlpack(t.view(torch.uint8) if eb == 1 else t))
            )

        cv = int(ldc * ob % 16 == 0 and c.data_ptr() % 16 == 0)
        self.args: Tuple[Any, ...] = (raw(a), raw(b), raw(c), np.int32(M), np.int32(N))
        self.args += (np.int32(K * eb // 2), np.int64(K * eb // 2), np.int64(K * eb // 2))
        self.args += (np.int64(ldc), np.int32(cv))
        if any(n == "float" and v.name == "scale" for n, v in kern.ir.params):
            self.args += (np.float32(alpha),)
        self.grid = kern.grid(M, N)
        self.keep = (a, b, c)

    def __call__(self) -> None:
        self.rk(self.grid, (self.k.threads, 1, 1), self.args, shared_mem=self.k.smem_bytes)


def check_ptr(what: str, kern: Any, dtype: str, out: str, m: int, n: int, k: int) -> bool:
    """One pointer-operand kernel against float64 (as :func:`check`)."""
    import torch

    a, b, a64, b64 = _inputs(dtype, m, n, k, 3)
    scaled = any(v.name == "scale" for _, v in kern.ir.params)
    alpha = 0.5 if scaled else 1.0
    ref = alpha * (a64 @ b64.T)
    tout = getattr(torch, _TORCH_OUT[out])
    full = torch.empty((m + 1, n + 8), device="cuda", dtype=tout)
    full.fill_(-(2**31) if out == "s32" else float("nan"))
    PtrLaunch(kern, dtype, a, b, full[:m, :n], alpha)()
    torch.cuda.synchronize()
    got = full.double().cpu().numpy()
    inside, border = got[:m, :n], np.concatenate([got[:m, n:].ravel(), got[m, :].ravel()])
    if out == "s32":
        ok = bool(np.all(border == -(2**31))) and float(np.max(np.abs(inside - ref))) == 0.0
        how = f"max |err| {float(np.max(np.abs(inside - ref))):g}"
    else:
        rel = float(np.max(np.abs(inside - ref) / (alpha * (np.abs(a64) @ np.abs(b64).T) + 1e-30)))
        tol = {"f32": 2e-6 if dtype == "tf32" else 2**-10, "bf16": 2**-8, "f16": 2**-10}[out]
        ok = bool(np.all(np.isnan(border))) and not np.isnan(inside).any() and rel <= tol
        how = f"rel err {rel:.2e}"
    print(f"[check] {what} {dtype}->{out} {m}x{n}x{k}: {'OK' if ok else 'FAIL'} {how}", flush=True)
    return ok


def mma_check() -> int:
    """The mma.sync kernels of the other types and the monolithic cp.async wgmma kernel."""
    from layoutproof.gpu.config import GemmConfig
    from layoutproof.gpu.kernels import mma_sync
    from layoutproof.gpu.kernels.wgmma import Sm90Config

    fails = 0
    small = GemmConfig(bm=128, bn=128, bk=32, warps_m=2, warps_n=2, stages=4)
    for dtype, out in (("tf32", "f32"), ("s8", "s32"), ("u8", "s32"), ("e4m3", "bf16"), ("e5m2", "f32")):
        kerns = {
            "mma.sync": mma_sync.generate(small, GemmProblem("k", "k", dtype, out)),
            "wgmma mono cp.async": generate_sm90(Sm90Config(), GemmProblem("k", "k", dtype, out)),
        }
        for what, kern in kerns.items():
            for m, n, k in ((1000, 1000, 1040), (257, 129, 96)):
                fails += not check_ptr(what, kern, dtype, out, m, n, k)
    return fails


# ============================================================================ correctness
def _inputs(dtype: str, m: int, n: int, k: int, seed: int) -> Tuple[Any, Any, np.ndarray, np.ndarray]:
    """A (m x k) and B (n x k) on the GPU in ``dtype`` and their exact float64 values."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    if dtype in ("s8", "u8"):
        lo, hi, t = (-128, 128, torch.int8) if dtype == "s8" else (0, 256, torch.uint8)
        a = torch.randint(lo, hi, (m, k), generator=g, device="cuda", dtype=t)
        b = torch.randint(lo, hi, (n, k), generator=g, device="cuda", dtype=t)
    elif dtype == "tf32":  # multiples of 1/16 in [-4, 4): exact in tf32, sums exact in f32
        a = torch.randint(-64, 64, (m, k), generator=g, device="cuda").float() / 16
        b = torch.randint(-64, 64, (n, k), generator=g, device="cuda").float() / 16
    else:
        t = getattr(torch, _TORCH_IN[dtype])
        a = torch.randn((m, k), generator=g, device="cuda").to(t)
        b = torch.randn((n, k), generator=g, device="cuda").to(t)
    return a, b, a.double().cpu().numpy(), b.double().cpu().numpy()


def check(dtype: str, out: str, m: int, n: int, k: int, seed: int = 0, cfg: Any = HOPPER_DEFAULT) -> bool:
    import torch

    a, b, a64, b64 = _inputs(dtype, m, n, k, seed)
    alpha = 0.5 if dtype in ("e4m3", "e5m2") else 1.0
    ref = alpha * (a64 @ b64.T)
    tout = getattr(torch, _TORCH_OUT[out])
    pad = 8
    full = torch.empty((m + 1, n + pad), device="cuda", dtype=tout)
    if out == "s32":
        full.fill_(-(2**31))
    else:
        full.fill_(float("nan"))
    c = full[:m, :n]
    L = Launch(dtype, out, a, b, c, alpha, cfg)
    L()
    torch.cuda.synchronize()
    got = full.double().cpu().numpy()
    inside = got[:m, :n]
    border = np.concatenate([got[:m, n:].ravel(), got[m, :].ravel()])
    if out == "s32":
        untouched = bool(np.all(border == -(2**31)))
        poisoned = int(np.sum(inside == -(2**31)))
        err = float(np.max(np.abs(inside - ref)))
        ok = untouched and poisoned == 0 and err == 0.0
        how = f"max |err| {err:g} (exact)"
    else:
        untouched = bool(np.all(np.isnan(border)))
        poisoned = int(np.sum(np.isnan(inside)))
        scale = alpha * (np.abs(a64) @ np.abs(b64).T) + 1e-30
        rel = float(np.max(np.abs(inside - ref) / scale))
        # tf32 inputs here sum exactly in f32; fp8 wgmma accumulates with fewer bits than f32
        tol = {"f32": 2e-6 if dtype == "tf32" else 2**-10, "bf16": 2**-8, "f16": 2**-10}[out]
        ok = untouched and poisoned == 0 and rel <= tol
        how = f"max |err| / (|A||B|) {rel:.2e} (tolerance {tol:.0e})"
    print(
        f"[check] {dtype}->{out} {m}x{n}x{k} ({cfg.key()}): {'OK' if ok else 'FAIL'} {how}, "
        f"{poisoned} poisoned left, border untouched {untouched}",
        flush=True,
    )
    return ok


# ============================================================================ timing
def _peers(dtype: str, a: Any, b: Any) -> Dict[str, Any]:
    import torch

    if dtype in ("e4m3", "e5m2"):
        one = torch.ones((), device="cuda", dtype=torch.float32)

        def mm(fast: bool) -> Any:
            return lambda: torch._scaled_mm(
                a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=fast
            )

        return {"_scaled_mm": mm(False), "_scaled_mm fast_accum": mm(True)}
    if dtype == "s8":
        return {"_int_mm": lambda: torch._int_mm(a, b.t())}
    torch.backends.cuda.matmul.allow_tf32 = True
    return {"matmul tf32": lambda: torch.matmul(a, b.t())}


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


def timing(dtype: str, out: str, m: int, n: int, k: int, rounds: int = 5) -> Dict[str, float]:
    """Median TFLOP/s of our kernel (the configuration :func:`~layoutproof.gpu.host.rule.
    decide_typed` picks, and the 128x256 default where it differs) and of the peers,
    interleaved round by round; the ratios (peer time / ours) are medians of the per-round
    ratios.  Returns ``{peer: ratio of the picked configuration}``."""
    import torch

    a, b, _, _ = _big(dtype, m, n, k)
    c = torch.empty((m, n), device="cuda", dtype=getattr(torch, _TORCH_OUT[out]))
    import cupy as cp

    from layoutproof.gpu.host.typed import decide_typed

    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    pick = decide_typed(m, n, k, dtype, out, sms).config
    ours = {"ours": Launch(dtype, out, a, b, c, 1.0, pick)}
    if pick != HOPPER_DEFAULT:
        ours["ours 128x256"] = Launch(dtype, out, a, b, c, 1.0)
    peers = {}
    for pname, peer in _peers(dtype, a, b).items():
        try:
            peer()
            peers[pname] = peer
        except Exception as e:  # a peer the installed torch does not run on this shape
            print(f"[time] {dtype} {m}x{n}x{k}: {pname} failed: {e}", flush=True)
    flop = 2.0 * m * n * k
    reps = max(3, min(50, int(2e13 / flop)))
    runs = {**ours, **peers}
    times: Dict[str, List[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, fn in runs.items():
            times[name].append(_time(fn, reps))
    tf = {name: flop / statistics.median(t) / 1e12 for name, t in times.items()}
    line = ", ".join(f"{name} {v:.0f}" for name, v in tf.items())
    ratios = {}
    for p in peers:
        for o in ours:
            r = statistics.median(tp / to for tp, to in zip(times[p], times[o]))
            line += f"; {p}/{o} {r:.3f}"
            if o == "ours":
                ratios[p] = r
    print(f"[time] {dtype}->{out} {m}x{n}x{k} ({pick.key()}) TFLOP/s: {line}", flush=True)
    return ratios


def _big(dtype: str, m: int, n: int, k: int) -> Tuple[Any, Any, None, None]:
    import torch

    t = getattr(torch, _TORCH_IN[dtype])
    if dtype == "s8":
        a = torch.randint(-128, 128, (m, k), device="cuda", dtype=torch.int8)
        b = torch.randint(-128, 128, (n, k), device="cuda", dtype=torch.int8)
    else:
        a = torch.randn((m, k), device="cuda").to(t)
        b = torch.randn((n, k), device="cuda").to(t)
    return a, b, None, None


def api_check() -> int:
    """:func:`layoutproof.gpu.host.typed.typed_gemm` on torch tensors and raw CuPy bytes:
    results against float64, the first call's time (generate + prove + compile), and the
    refusal of a row-major B."""
    import cupy as cp
    import torch

    from layoutproof.gpu.errors import GemmInputError
    from layoutproof.gpu.host.typed import typed_gemm

    fails = 0
    m, n, k = 1000, 700, 1040
    for dtype, out, scale in (
        ("e4m3", "bf16", 0.25),
        ("e5m2", "f32", 2.0),
        ("tf32", "f32", 1.0),
        ("s8", "s32", 1.0),
    ):
        a, bt, a64, b64 = _inputs(dtype, m, n, k, 7)
        t0 = time.perf_counter()
        c = typed_gemm(a, bt.t(), dtype=dtype, out_dtype=out, scale=scale)
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        ref = scale * (a64 @ b64.T)
        got = c.double().cpu().numpy()
        err = float(np.max(np.abs(got - ref) / (scale * (np.abs(a64) @ np.abs(b64).T) + 1e-30)))
        tol = {"bf16": 2**-8, "f32": 2**-10 if dtype != "tf32" else 2e-6, "s32": 0.0}[out]
        ok = err <= tol and not np.isnan(got).any()
        fails += not ok
        print(
            f"[api] typed_gemm torch {dtype}->{out} {m}x{n}x{k} scale {scale}: {'OK' if ok else 'FAIL'} "
            f"rel err {err:.2e}, first call {first:.2f} s",
            flush=True,
        )
        if dtype == "e4m3":  # the same bytes as CuPy uint8 arrays: bf16 comes back as raw uint16
            ca = cp.from_dlpack(a.view(torch.uint8))
            cb = cp.from_dlpack(bt.view(torch.uint8)).T
            raw = typed_gemm(ca, cb, dtype=dtype, out_dtype=out, scale=scale)
            cp.cuda.Device().synchronize()
            same = bool(cp.all(raw == cp.from_dlpack(c.view(torch.int16)).view(cp.uint16)))
            fails += not same
            print(
                f"[api] typed_gemm CuPy raw bytes e4m3 -> raw bf16 bits equal to the torch call: {same}",
                flush=True,
            )
            from layoutproof.gpu.host.plan import last_launch

            staged = typed_gemm(a, bt.t().contiguous(), dtype=dtype, out_dtype=out, scale=scale)
            torch.cuda.synchronize()
            same = bool(torch.equal(staged, c)) and last_launch.get("staged") == ("b",)
            fails += not same
            print(f"[api] row-major B staged into a K-major copy, result equal: {same}", flush=True)
            try:
                typed_gemm(a[:, :-1], bt.t()[:-1], dtype=dtype)  # an odd K of one-byte elements
                print("[api] odd K: NOT refused", flush=True)
                fails += 1
            except GemmInputError as e:
                print(f"[api] odd K refused: {e}", flush=True)
    return fails


# ============================================================================ the sweep
#: (input type, output type) of the correctness sweep: every output each type stores
SWEEP_TYPES: Tuple[Tuple[str, str], ...] = (
    ("tf32", "f32"),
    ("tf32", "bf16"),
    ("e4m3", "bf16"),
    ("e4m3", "f32"),
    ("e5m2", "f16"),
    ("s8", "s32"),
    ("u8", "s32"),
    ("s8", "f32"),
    ("u8", "bf16"),
)
#: tails on every dimension: M not a multiple of the tile's rows, N of its columns, K of
#: the 64-unit k-tile (in 16-bit units: 96 bytes of e4m3 is 48 units)
SWEEP_SHAPES: Tuple[Tuple[int, int, int], ...] = ((257, 129, 96), (1000, 700, 1040), (64, 520, 4096))


def sweep_cases(dtype: str, out: str) -> List[Dict[str, Any]]:
    """The epilogue options of the sweep for ``dtype -> out``: the plain product, alpha
    alone (fp8's per-tensor scale; tf32's and the integers' epilogue alpha), a bias along N
    with an activation, a bias along M with another, ``alpha * A @ B + beta * C + bias``,
    and batches (both operands batched with a batched C; B shared with one C)."""
    s32 = out == "s32"
    acts = ("relu", "none") if s32 else ("relu", "gelu", "silu")
    alpha, beta = (3, -2) if s32 else (0.5, 0.75)
    return [
        {},
        {"alpha": alpha},
        {"bias": "n", "activation": acts[0]},
        {"bias": "m", "activation": acts[1]} if s32 else {"bias": "m", "activation": acts[1], "bias16": True},
        {"bias": "n", "c": True, "alpha": alpha, "beta": beta, "activation": acts[-1]},
        {"batch": 3, "bias": "n", "c": True, "alpha": alpha, "beta": beta},
        {"batch": 2, "shared_b": True, "c": True, "c_shared": True, "beta": beta},
    ]


def _exact(dtype: str, shape: Tuple[int, ...], g: Any) -> Any:
    """Inputs of ``dtype`` whose float64 values are exact (and whose f32 sums are exact for
    tf32: multiples of 1/16 in [-4, 4))."""
    import torch

    if dtype in ("s8", "u8"):
        lo, hi, t = (-128, 128, torch.int8) if dtype == "s8" else (0, 256, torch.uint8)
        return torch.randint(lo, hi, shape, generator=g, device="cuda", dtype=t)
    if dtype == "tf32":
        return torch.randint(-64, 64, shape, generator=g, device="cuda").float() / 16
    return torch.randn(shape, generator=g, device="cuda").to(getattr(torch, _TORCH_IN[dtype]))


def _act64(name: str, x: np.ndarray) -> np.ndarray:
    if name == "relu":
        return np.maximum(x, 0)
    if name == "silu":
        return x / (1 + np.exp(-x))
    if name == "gelu":
        from math import erf

        return 0.5 * x * (1 + np.vectorize(erf)(x / math.sqrt(2)))
    return x


def sweep_one(
    dtype: str, out: str, m: int, n: int, k: int, case: Dict[str, Any], seed: int = 0
) -> Dict[str, Any]:
    """One call of ``typed_gemm`` (torch tensors) against float64: the output NaN-poisoned
    (a sentinel for s32) inside a padded buffer whose border must stay untouched."""
    import torch

    from layoutproof.gpu.host import plan
    from layoutproof.gpu.host.typed import typed_gemm

    g = torch.Generator(device="cuda").manual_seed(seed)
    nb = case.get("batch", 0)
    ash = (nb, m, k) if nb else (m, k)
    bsh = (n, k) if (not nb or case.get("shared_b")) else (nb, n, k)
    a, bt = _exact(dtype, ash, g), _exact(dtype, bsh, g)
    b = bt.transpose(-1, -2)  # K x N, K contiguous
    tout = getattr(torch, _TORCH_OUT[out])
    s32 = out == "s32"
    kw: Dict[str, Any] = dict(dtype=dtype, out_dtype=out)
    alpha, beta = case.get("alpha", 1), case.get("beta", 0)
    if "alpha" in case:
        kw["scale"] = alpha
    bias64: Any = 0.0
    if "bias" in case:
        ln = n if case["bias"] == "n" else m
        if s32:
            bias = torch.randint(-1000, 1000, (ln,), generator=g, device="cuda", dtype=torch.int32)
        else:
            bias = (torch.randint(-32, 32, (ln,), generator=g, device="cuda") / 4).to(
                torch.bfloat16 if case.get("bias16") else torch.float32
            )
        kw.update(bias=bias, bias_along=case["bias"])
        bv = bias.double().cpu().numpy()
        bias64 = bv[None, :] if case["bias"] == "n" else bv[:, None]
    if case.get("activation"):
        kw["activation"] = case["activation"]
    c64: Any = 0.0
    if case.get("c"):
        csh = (m, n) if (not nb or case.get("c_shared")) else (nb, m, n)
        if s32:
            cin = torch.randint(-1000, 1000, csh, generator=g, device="cuda", dtype=torch.int32)
        else:
            cin = (torch.randint(-32, 32, csh, generator=g, device="cuda") / 4).to(tout)
        kw.update(c=cin, beta=beta)
        c64 = cin.double().cpu().numpy()
    full = torch.empty(((nb,) if nb else ()) + (m + 1, n + 8), device="cuda", dtype=tout)
    full.fill_(-(2**31) if s32 else float("nan"))
    o = full[..., :m, :n]
    t0 = time.perf_counter()
    typed_gemm(a, b, out=o, **kw)
    torch.cuda.synchronize()
    first = time.perf_counter() - t0
    kern = plan.last_launch.get("kernel", "?")
    a64, b64 = a.double().cpu().numpy(), bt.double().cpu().numpy()
    prod = a64 @ np.swapaxes(b64, -1, -2)
    ref = _act64(case.get("activation", "none"), alpha * prod + beta * c64 + bias64)
    scale = abs(alpha) * (np.abs(a64) @ np.abs(np.swapaxes(b64, -1, -2))) + abs(beta) * np.abs(c64)
    scale = scale + np.abs(bias64) + 1e-30
    got = full.double().cpu().numpy()
    inside = got[..., :m, :n]
    border = np.concatenate([got[..., :m, n:].ravel(), got[..., m, :].ravel()])
    if s32:
        untouched = bool(np.all(border == -(2**31)))
        err = float(np.max(np.abs(inside - ref)))
        ok, tol = untouched and err == 0.0, 0.0
    else:
        untouched = bool(np.all(np.isnan(border)))
        err = float(np.max(np.abs(inside - ref) / scale)) if not np.isnan(inside).any() else float("inf")
        tol = {"f32": 4e-6 if dtype in ("tf32", "s8", "u8") else 2**-10, "bf16": 2**-8, "f16": 2**-10}[out]
        ok = untouched and err <= tol
    opts = ",".join(f"{key}={v}" for key, v in case.items()) or "plain"
    print(
        f"[sweep] {dtype}->{out} {m}x{n}x{k} {opts}: {'OK' if ok else 'FAIL'} err {err:.2e} (tol {tol:.0e}), "
        f"border untouched {untouched}, {first * 1e3:.0f} ms [{kern}]",
        flush=True,
    )
    return dict(dtype=dtype, out=out, m=m, n=n, k=k, case=opts, ok=ok, err=err, kernel=kern, first_s=first)


def _build(item: Tuple[Any, Any]) -> str:
    """Generate, prove and compile one kernel (in a worker: fills the disk caches)."""
    from layoutproof.gpu.host.cache import compile_kernel, kernel_for

    k = kernel_for(*item)
    compile_kernel(k)
    return k.name


def prebuild(items: List[Tuple[Any, Any]], workers: int = 0) -> None:
    """Build the kernels of ``items`` ((config, problem) pairs) in parallel worker processes
    (the kernel and CuPy disk caches then serve the calls that follow)."""
    import multiprocessing as mp
    import os

    uniq = list(dict.fromkeys(items))
    workers = workers or max(1, min(len(uniq), (os.cpu_count() or 2) - 1))
    t0 = time.perf_counter()
    with mp.get_context("spawn").Pool(workers) as pool:
        names = pool.map(_build, uniq)
    print(
        f"[build] {len(names)} kernels in {time.perf_counter() - t0:.1f} s on {workers} processes", flush=True
    )


def _case_kernel(
    dtype: str, out: str, m: int, n: int, k: int, case: Dict[str, Any], sms: int
) -> Tuple[Any, Any]:
    from layoutproof.gpu.host.typed import decide_typed_launch

    nb = case.get("batch", 0)
    bdt = None
    if "bias" in case:
        bdt = "s32" if out == "s32" else ("bf16" if case.get("bias16") else "f32")
    d, prob, ep = decide_typed_launch(
        m,
        n,
        k,
        dtype,
        out,
        sms,
        batch=("a" if case.get("shared_b") else "ab") if nb else "",
        count=max(nb, 1),
        activation=case.get("activation"),
        alpha=case.get("alpha", 1),
        beta=case.get("beta", 0),
        bias_dtype=bdt,
        has_c=bool(case.get("c")),
        bias_along=case.get("bias", "n"),
    )
    return (ep.config or d.config, prob)


def sweep(
    types: Tuple[Tuple[str, str], ...] = SWEEP_TYPES,
    shapes: Any = SWEEP_SHAPES,
    build: bool = True,
    cases: Optional[Tuple[int, ...]] = None,
) -> List[Dict[str, Any]]:
    """The correctness sweep: every type and output, the plain product on every shape, every
    epilogue option (:func:`sweep_cases`, or those numbered in ``cases``) on the first two;
    returns one row per call."""
    import cupy as cp

    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    plan = [
        (dt, o, sh, case)
        for dt, o in types
        for j, sh in enumerate(shapes)
        for i, case in enumerate(sweep_cases(dt, o))
        if (cases is None or i in cases) and (i == 0 or j < 2)
    ]
    if build:
        items = []
        for dt, o, (m, n, k), case in plan:
            try:
                items.append(_case_kernel(dt, o, m, n, k, case, sms))
            except Exception as e:  # refused: the call says so below
                print(f"[build] {dt}->{o} {case}: {type(e).__name__}: {e}", flush=True)
        prebuild(items)
    rows = []
    for dt, o, (m, n, k), case in plan:
        try:
            rows.append(sweep_one(dt, o, m, n, k, case))
        except Exception as e:
            from layoutproof.gpu.errors import GemmInputError

            refused = isinstance(e, GemmInputError)
            print(
                f"[sweep] {dt}->{o} {m}x{n}x{k} {case}: {'REFUSED' if refused else 'ERROR'} {e}", flush=True
            )
            rows.append(
                dict(dtype=dt, out=o, m=m, n=n, k=k, case=str(case), ok=False, refused=refused, err=str(e))
            )
    return rows


def sanitize() -> int:
    """Each new kernel once, on a small shape with tails on every dimension (for
    ``compute-sanitizer --tool memcheck``): every type and output, plain and with each
    epilogue option and batch.  Returns the failed checks."""
    rows = sweep(shapes=SWEEP_SHAPES[:1], build=False, cases=(0, 3, 4, 5))
    return sum(not r["ok"] for r in rows)


def explore(dtype: str, out: str, shapes: List[Tuple[int, int, int]], rounds: int = 5) -> None:
    """Every tile the rule may pick (and a few more) against the peer, interleaved, per
    shape: TFLOP/s and peer time / ours, the fastest marked; what the rule picks printed."""
    import cupy as cp
    import torch

    from layoutproof.gpu.host.rule import hopper_candidates
    from layoutproof.gpu.host.typed import decide_typed
    from layoutproof.gpu.kernels.wgmma import Sm90Config

    ws: Dict[str, Any] = dict(loader="tma", schedule="ws")
    cfgs = list(hopper_candidates(True))[:4] + [
        Sm90Config(bm=128, bn=192, stages=5, **ws),
        Sm90Config(bm=64, bn=128, stages=8, **ws),
    ]
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    prebuild([(cfg, GemmProblem("k", "k", dtype, out)) for cfg in cfgs])
    for cfg in cfgs:
        kernel(dtype, out, cfg)
    for m, n, k in shapes:
        a, b, _, _ = _big(dtype, m, n, k)
        c = torch.empty((m, n), device="cuda", dtype=getattr(torch, _TORCH_OUT[out]))
        runs: Dict[str, Any] = {cfg.key(): Launch(dtype, out, a, b, c, 1.0, cfg) for cfg in cfgs}
        peers = _peers(dtype, a, b)
        runs.update(peers)
        flop = 2.0 * m * n * k
        reps = max(3, min(30, int(1e13 / flop)))
        times: Dict[str, List[float]] = {name: [] for name in runs}
        for _ in range(rounds):
            for name, fn in runs.items():
                times[name].append(_time(fn, reps))
        pname = next(iter(peers))
        pick = decide_typed(m, n, k, dtype, out, sms).config.key()
        res = []
        for cfg in cfgs:
            r = statistics.median(tp / to for tp, to in zip(times[pname], times[cfg.key()]))
            res.append((r, cfg.key(), flop / statistics.median(times[cfg.key()]) / 1e12))
        res.sort(reverse=True)
        peer_tf = flop / statistics.median(times[pname]) / 1e12
        line = "; ".join(f"{key} {tf:.0f} ({r:.3f})" for r, key, tf in res)
        print(
            f"[explore] {dtype}->{out} {m}x{n}x{k}: {pname} {peer_tf:.0f} TFLOP/s; best {res[0][1]} "
            f"{res[0][0]:.3f}; rule picks {pick} {dict((key, r) for r, key, _ in res)[pick]:.3f} | {line}",
            flush=True,
        )


def suite_section(cp: Any, args: Any, log: Dict[str, Any]) -> List[Dict[str, Any]]:
    """A section for ``bench/gemm_suite.py``: the typed kernels' correctness sweep
    (:func:`sweep`, every type, output, tail and epilogue option against float64) and, where
    ``args`` has ``types_time`` (``"MxNxK,..."``), their timings against torch's peers
    (:func:`timing`).  Rows go to ``log["types"]`` (and ``log["types_time"]``); returns the
    sweep's rows.  ``cp`` is CuPy (unused: the calls take torch tensors, the library's own
    CuPy route is the one ``gemm`` takes)."""
    rows = sweep()
    log["types"] = rows
    shapes = getattr(args, "types_time", None)
    if shapes:
        tt = log.setdefault("types_time", [])
        for dtype, out in (("e4m3", "bf16"), ("tf32", "f32"), ("s8", "s32")):
            for sh in shapes.split(","):
                m, n, k = (int(x) for x in sh.split("x"))
                tt.append(dict(dtype=dtype, m=m, n=n, k=k, ratios=timing(dtype, out, m, n, k)))
    return rows


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--api", action="store_true", help="typed_gemm on torch and CuPy operands")
    ap.add_argument("--mma", action="store_true", help="the mma.sync and cp.async wgmma kernels")
    ap.add_argument("--time", default="", help="fp8 shapes MxNxK,...")
    ap.add_argument("--time-other", default="8192x8192x8192,4096x4096x4096", help="tf32/int8 shapes")
    ap.add_argument("--types", default="e4m3:bf16,e5m2:bf16,e4m3:f32,tf32:f32,s8:s32,u8:s32")
    ap.add_argument(
        "--sweep", action="store_true", help="the correctness sweep of typed_gemm (epilogue, batches)"
    )
    ap.add_argument("--sanitize", action="store_true", help="each new kernel once (for compute-sanitizer)")
    ap.add_argument("--explore", default="", help="tf32 shapes MxNxK,...: every tile against torch")
    ap.add_argument("--explore-types", default="tf32:f32")
    ns = ap.parse_args(argv)
    types = [tuple(t.split(":")) for t in ns.types.split(",")]
    fails = 0
    if ns.sanitize:
        fails += sanitize()
    if ns.sweep:
        rows = sweep()
        bad = [r for r in rows if not r["ok"]]
        fails += len(bad)
        print(f"[sweep] {len(rows) - len(bad)} of {len(rows)} calls correct", flush=True)
    if ns.explore:
        shp = [tuple(int(x) for x in sh.split("x")) for sh in ns.explore.split(",")]
        for t in ns.explore_types.split(","):
            dt, o = t.split(":")
            explore(dt, o, shp)  # type: ignore[arg-type]
    if ns.api:
        fails += api_check()
    if ns.mma:
        fails += mma_check()
    if ns.check:
        shapes = [(128, 256, 128), (1000, 1000, 1040), (257, 129, 96), (64, 520, 4096), (3000, 2000, 208)]
        from layoutproof.gpu.host.rule import hopper_candidates

        for dtype, out in types:
            for m, n, k in shapes:
                fails += not check(dtype, out, m, n, k)
            for cfg in hopper_candidates(True)[1:]:  # the other tiles the rule picks
                for m, n, k in shapes[1:3]:
                    fails += not check(dtype, out, m, n, k, cfg=cfg)
    if ns.time:
        for dtype, out in types:
            if out != {"s8": "s32", "tf32": "f32"}.get(dtype, "bf16"):
                continue
            shapes = ns.time if dtype in ("e4m3", "e5m2") else ns.time_other
            geo: Dict[str, List[float]] = {}
            for sh in shapes.split(","):
                m, n, k = (int(x) for x in sh.split("x"))
                for p, r in timing(dtype, out, m, n, k).items():
                    geo.setdefault(p, []).append(r)
            for p, rs in geo.items():
                g = math.exp(sum(math.log(r) for r in rs) / len(rs))
                print(f"[geomean] {dtype}: {p} time / ours over {len(rs)} shapes: {g:.3f}", flush=True)
    print(f"[done] {fails} failed checks")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
