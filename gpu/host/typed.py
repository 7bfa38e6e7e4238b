"""The other tensor-core types on the host: tf32, fp8 (e4m3/e5m2) and int8 (s8/u8).

:func:`typed_gemm` checks a call's operands (:func:`typed_operand`),
takes the kernel :func:`decide_typed` picks, generates and proves
it on first use, and launches it on the caller's stream with the operands' tensor maps over
16-bit units (the kernels move bytes as 16-bit units, so every byte-level proof of the f16
kernels holds unchanged).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import numpy as np

from ..config import OUT_DTYPES, TC_TYPES, GemmProblem
from ..errors import GemmInputError
from ..kernels.wgmma import Sm90Config
from ..kernels.wgmma_core import SCALED_TYPES
from . import device
from .cache import compile_kernel, kernel_for
from .plan import _TMAP_REC, last_launch
from .rule import choose_config, hopper_candidates, launch_grid

__all__ = ["TC_ITEMSIZE", "typed_operand", "TypedDecision", "decide_typed", "typed_gemm", "typed_output"]

# ============================================================================ the decision
#: bytes per element of the tensor-core types beyond f16/bf16 (what their operands' arrays
#: hold: f32 for tf32, one byte for fp8 and int8)
TC_ITEMSIZE: Dict[str, int] = {d: v[0] for d, v in TC_TYPES.items()}


def typed_operand(
    name: str, shape: Tuple[int, ...], strides: Tuple[int, ...], itemsize: int, ptr: int, dtype: str
) -> Tuple[int, int, int]:
    """Check one operand of a ``dtype`` product and return ``(rows, k, row stride in bytes)``.

    ``name`` is ``"a"`` (``M x K``) or ``"b"`` (``K x N``); ``strides`` are in bytes.  The
    wgmma of these types reads K-major operands only, so A must have unit stride along K
    (row-major) and B unit stride along K too (column-major: B's transpose row-major, as
    ``torch._scaled_mm`` takes it); the rows must start 16 bytes apart (the tensor maps'
    rule) and the base be 16-byte aligned.  Anything else is a GemmInputError naming what to
    pass instead -- never a silent copy or a wrong result.

    >>> typed_operand("a", (128, 64), (64, 1), 1, 0, "e4m3")
    (128, 64, 64)
    >>> typed_operand("b", (64, 256), (1, 64), 1, 0, "e4m3")
    (256, 64, 64)
    """
    if dtype not in TC_TYPES:
        raise GemmInputError(f"gemm: dtype={dtype!r} is not one of {sorted(TC_TYPES)}")
    want = TC_ITEMSIZE[dtype]
    what = f"{name.upper()} ({'M x K' if name == 'a' else 'K x N'})"
    if itemsize != want:
        raise GemmInputError(
            f"gemm: dtype={dtype!r} reads {want}-byte elements, but {what} has {itemsize}-byte "
            f"elements: pass {'float32' if want == 4 else 'one-byte (raw uint8 for fp8)'} data"
        )
    if len(shape) != 2:
        raise GemmInputError(f"gemm: {what} must be 2-D, got shape {tuple(shape)}")
    r, c = shape
    if min(r, c) < 1:
        raise GemmInputError(f"gemm: {what} has an empty dimension: shape {tuple(shape)}")
    if name == "a":
        rows, k, kstride, rstride = r, c, strides[1], strides[0]
        fix = "A row-major (a.contiguous())"
    else:
        k, rows, kstride, rstride = r, c, strides[0], strides[1]
        fix = "B column-major: b_t.T where b_t is the N x K row-major array (b.t().contiguous().t())"
    if kstride != itemsize and k > 1:
        raise GemmInputError(
            f"gemm: .{dtype} tensor cores read K-major operands only; {what} has K stride "
            f"{kstride} bytes (need {itemsize}): pass {fix}"
        )
    if rows > 1 and (rstride % 16 or rstride < k * itemsize):
        raise GemmInputError(
            f"gemm: {what}'s rows (K = {k} elements of {itemsize} bytes) are {rstride} bytes apart; "
            f"the tensor maps need a multiple of 16 bytes, at least one row: pad K to a multiple "
            f"of {16 // itemsize}"
        )
    if ptr % 16:
        raise GemmInputError(f"gemm: {what} starts at {ptr:#x}, not 16-byte aligned")
    return rows, k, rstride if rows > 1 else -(-k * itemsize // 16) * 16


@dataclass(frozen=True)
class TypedDecision:
    """A product of one of the other tensor-core types on the warp-specialized wgmma
    kernel: ``config``, ``problem`` (K-major operands), the shape, ``k_units`` (the kernel's
    K: 16-bit units, ``k * bytes / 2``), the grid, and whether the kernel takes the
    per-tensor scale parameter (fp8)."""

    config: Any
    problem: GemmProblem
    m: int
    n: int
    k: int
    k_units: int
    grid: Tuple[int, int, int]
    scaled: bool


def decide_typed(
    m: int, n: int, k: int, dtype: str, out_dtype: Optional[str], sms: int, config: Any = None
) -> TypedDecision:
    """The kernel for ``C (m x n) = A (m x k) @ B (k x n)`` of ``dtype``: ``config`` or the
    wave model's pick among the warp-specialized candidates (:func:`hopper_candidates`),
    modelled in 16-bit units of K (the tensor-core rate per byte of K is the same for
    tf32, f16 and fp8 on Hopper, so the f16 model carries over).

    >>> d = decide_typed(8192, 8192, 8192, "e4m3", None, 132)
    >>> d.config.key(), d.problem.key(), d.k_units, d.scaled
    ('sm90_128x256x64_s4_g8_tma_ws', 'ak_bk_e4m3_bf16', 4096, True)
    """
    if dtype not in TC_TYPES:
        raise GemmInputError(f"gemm: dtype={dtype!r} is not one of {sorted(TC_TYPES)}")
    prob = GemmProblem("k", "k", dtype, out_dtype)
    try:
        prob.validate()
    except Exception as e:  # GemmConfigError: say it as an input error
        raise GemmInputError(f"gemm: {e}") from None
    eb = TC_ITEMSIZE[dtype]
    if (k * eb) % 2:
        raise GemmInputError(f"gemm: K = {k} one-byte elements must be even (pad K)")
    ku = k * eb // 2
    if config is None:
        config = choose_config(
            m,
            n,
            ku,
            GemmProblem("k", "k", "f16", "f32"),
            hopper=True,
            tma=True,
            sms=sms,
            candidates=hopper_candidates(True),
        )
    if not isinstance(config, Sm90Config) or config.schedule != "ws":
        raise GemmInputError(
            f"gemm: .{dtype} products run on the warp-specialized wgmma kernel (an Sm90Config "
            f"with schedule='ws'), not {config!r}"
        )
    return TypedDecision(config, prob, m, n, k, ku, launch_grid(config, m, n, sms), dtype in SCALED_TYPES)


_TORCH_NAMES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "s32": "int32"}
_CUPY_NAMES = {"bf16": "uint16", "f16": "float16", "f32": "float32", "s32": "int32"}


def _array_facts(x: Any) -> Tuple[Tuple[int, ...], Tuple[int, ...], int, int, bool]:
    """(shape, strides in bytes, itemsize, device pointer, is a torch tensor) of a CuPy
    array or a torch CUDA tensor."""
    if hasattr(x, "data_ptr") and hasattr(x, "element_size"):  # torch
        if not getattr(x, "is_cuda", False):
            raise GemmInputError("gemm: a torch operand must be on a CUDA device")
        it = int(x.element_size())
        return tuple(x.shape), tuple(int(s) * it for s in x.stride()), it, int(x.data_ptr()), True
    if hasattr(x, "data") and hasattr(x.data, "ptr") and hasattr(x, "strides"):  # CuPy
        return tuple(x.shape), tuple(int(s) for s in x.strides), int(x.itemsize), int(x.data.ptr), False
    raise GemmInputError(f"gemm: operands must be CuPy arrays or torch CUDA tensors, got {type(x).__name__}")


def _unit_tensor_map(ptr: int, rows: int, k_bytes: int, row_bytes: int) -> Any:
    """The 128-byte tensor map of a K-major operand as 16-bit units: ``rows`` rows of
    ``k_bytes`` bytes, ``row_bytes`` apart; 64 x 64-unit boxes, 128-byte swizzle, zero fill
    outside (the boxes :func:`~layoutproof.gpu.kernels.wgmma.prove_tma` proves)."""
    from cuda.bindings import driver  # cuda-python

    u32, u64 = driver.cuuint32_t, driver.cuuint64_t
    err, tm = driver.cuTensorMapEncodeTiled(
        driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT16,
        u32(2),
        ptr,
        [u64(k_bytes // 2), u64(rows)],
        [u64(row_bytes)],
        [u32(64), u32(64)],
        [u32(1), u32(1)],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    if err != driver.CUresult.CUDA_SUCCESS:
        raise GemmInputError(
            f"gemm: cuTensorMapEncodeTiled failed ({err}) for a {rows} x {k_bytes}-byte operand"
        )
    return np.array([int(v) for v in tm.opaque], dtype=np.uint64).view(_TMAP_REC)[0]


def typed_output(
    out: Any, a: Any, torch_a: bool, m: int, n: int, ot: str, who: str
) -> Tuple[Any, Tuple[int, ...], int, bool, int]:
    """The ``m x n`` row-major output of a typed kernel: ``out`` checked, or a new array of
    ``a``'s kind (torch for torch operands, else CuPy; bf16 from CuPy as raw uint16); returns
    ``(out, byte strides, address, whether torch, bytes per element)``."""
    if out is None:
        if torch_a:
            import torch

            out = torch.empty((m, n), device=a.device, dtype=getattr(torch, _TORCH_NAMES[ot]))
        else:
            out = device.cupy().empty((m, n), dtype=_CUPY_NAMES[ot])
    so, to, io, po, torch_o = _array_facts(out)
    ob = OUT_DTYPES[ot][1]
    if so != (m, n) or io != ob or to[1] != ob:
        raise GemmInputError(
            f"{who}: out must be a row-major {m} x {n} array of {ot} ({ob}-byte elements), got shape "
            f"{so}, {io}-byte elements, strides {to}"
        )
    return out, to, po, torch_o, ob


def typed_gemm(
    a: Any,
    b: Any,
    *,
    dtype: str,
    out_dtype: Optional[str] = None,
    scale: float = 1.0,
    out: Any = None,
    config: Any = None,
    bias: Any = None,
    activation: Optional[str] = None,
    beta: float = 0.0,
    c: Any = None,
    bias_along: str = "n",
) -> Any:
    """``C = scale * A @ B`` on the tensor cores for ``dtype`` in ``"tf32"`` (float32
    operands), ``"e4m3"`` / ``"e5m2"`` (one-byte operands: torch float8 tensors or raw uint8
    CuPy arrays; f32 accumulation, output bf16 (default), f16 or f32), ``"s8"`` / ``"u8"``
    (int8 / uint8 -> s32; ``scale`` must be 1).  ``a`` is ``M x K`` row-major, ``b`` is
    ``K x N`` column-major (K contiguous in both: :func:`typed_operand`
    says what else to pass); ``scale`` is ``scale_a * scale_b`` as a Python float.  The kernel
    (:func:`decide_typed`) is generated and proven on first use
    and launched on the current stream (torch's for torch operands, else CuPy's).  Returns
    ``out`` or a new ``M x N`` array of the operands' kind (bf16 from CuPy operands as raw
    uint16, CuPy having no bfloat16)."""
    if bias is not None or activation is not None or c is not None or beta != 0:
        raise GemmInputError(
            f"gemm: the fused epilogue (bias, activation, c, beta) runs on float16/bfloat16 "
            f"operands, not {dtype}: apply it to the result"
        )
    cupy = device.cupy()
    sa, ta, ia, pa, torch_a = _array_facts(a)
    sb, tb, ib, pb, torch_b = _array_facts(b)
    m, k, lda = typed_operand("a", sa, ta, ia, pa, dtype)
    n, kb, ldb = typed_operand("b", sb, tb, ib, pb, dtype)
    if kb != k:
        raise GemmInputError(f"gemm: A is {m} x {k} but B is {kb} x {n}: the K extents differ")
    if dtype in ("s8", "u8") and scale != 1.0:
        raise GemmInputError(
            f"gemm: .{dtype} accumulates and stores s32 exactly: scale must be 1, got {scale}"
        )
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    d = decide_typed(m, n, k, dtype, out_dtype, sms, config)
    ot = d.problem.out
    out, to, po, torch_o, ob = typed_output(out, a, torch_a, m, n, ot, "gemm")
    ldc = to[0] // ob
    kern = kernel_for(d.config, d.problem)
    rk = compile_kernel(kern)
    c_vec = int(to[0] % 16 == 0 and po % 16 == 0)
    # the output as a CuPy array over its memory (CuPy's launcher passes its pointer)
    mem = cupy.cuda.UnownedMemory(po, m * to[0], out)
    c_arg = cupy.ndarray((m, ldc), dtype=_CUPY_NAMES[ot], memptr=cupy.cuda.MemoryPointer(mem, 0))
    args: Tuple[Any, ...] = (
        _unit_tensor_map(pa, m, k * ia, lda),
        _unit_tensor_map(pb, n, k * ib, ldb),
        c_arg,
        np.int32(m),
        np.int32(n),
        np.int32(d.k_units),
        np.int64(ldc),
        np.int32(c_vec),
    )
    if d.scaled:
        args += (np.float32(scale),)
    elif scale != 1.0:
        raise GemmInputError(f"gemm: dtype={dtype!r} takes no scale (got {scale}); multiply the output")
    stream = None
    if torch_a or torch_b or torch_o:
        import torch

        stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    if stream is not None:
        with stream:
            rk(d.grid, (kern.threads, 1, 1), args, shared_mem=kern.smem_bytes)
    else:
        rk(d.grid, (kern.threads, 1, 1), args, shared_mem=kern.smem_bytes)
    last_launch.clear()
    last_launch.update(config=d.config, problem=d.problem, kernel=kern.name, m=m, n=n, k=k)
    return out
