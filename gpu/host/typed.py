"""The other tensor-core types on the host: tf32, fp8 (e4m3/e5m2) and int8 (s8/u8).

:func:`typed_gemm` checks a call's operands (:func:`~layoutproof.gpu.host.rule.typed_operand`),
takes the kernel :func:`~layoutproof.gpu.host.rule.decide_typed` picks, generates and proves
it on first use, and launches it on the caller's stream with the operands' tensor maps over
16-bit units (the kernels move bytes as 16-bit units, so every byte-level proof of the f16
kernels holds unchanged).
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np

from ..config import OUT_DTYPES
from ..errors import GemmInputError
from . import device, rule
from .cache import compile_kernel, kernel_for
from .plan import _TMAP_REC, last_launch

__all__ = ["typed_gemm", "typed_output"]

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
) -> Any:
    """``C = scale * A @ B`` on the tensor cores for ``dtype`` in ``"tf32"`` (float32
    operands), ``"e4m3"`` / ``"e5m2"`` (one-byte operands: torch float8 tensors or raw uint8
    CuPy arrays; f32 accumulation, output bf16 (default), f16 or f32), ``"s8"`` / ``"u8"``
    (int8 / uint8 -> s32; ``scale`` must be 1).  ``a`` is ``M x K`` row-major, ``b`` is
    ``K x N`` column-major (K contiguous in both: :func:`~layoutproof.gpu.host.rule.typed_operand`
    says what else to pass); ``scale`` is ``scale_a * scale_b`` as a Python float.  The kernel
    (:func:`~layoutproof.gpu.host.rule.decide_typed`) is generated and proven on first use
    and launched on the current stream (torch's for torch operands, else CuPy's).  Returns
    ``out`` or a new ``M x N`` array of the operands' kind (bf16 from CuPy operands as raw
    uint16, CuPy having no bfloat16)."""
    cupy = device.cupy()
    sa, ta, ia, pa, torch_a = _array_facts(a)
    sb, tb, ib, pb, torch_b = _array_facts(b)
    m, k, lda = rule.typed_operand("a", sa, ta, ia, pa, dtype)
    n, kb, ldb = rule.typed_operand("b", sb, tb, ib, pb, dtype)
    if kb != k:
        raise GemmInputError(f"gemm: A is {m} x {k} but B is {kb} x {n}: the K extents differ")
    if dtype in ("s8", "u8") and scale != 1.0:
        raise GemmInputError(
            f"gemm: .{dtype} accumulates and stores s32 exactly: scale must be 1, got {scale}"
        )
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    d = rule.decide_typed(m, n, k, dtype, out_dtype, sms, config)
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
