"""The operand checks of ``gemm``: CuPy arrays (and the call's options) checked and turned
into the plain facts the launch rule decides on (:class:`~layoutproof.gpu.host.rule.GemmRequest`:
shapes, strides, dtypes, alignment), with the signatures a plan checks its later calls
against.  CuPy comes from :mod:`~layoutproof.gpu.host.device`; nothing here launches."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Tuple

import numpy as np

from ..errors import GemmInputError
from . import device
from .rule import GemmRequest, OperandFacts

__all__ = [
    "Checked",
    "check_pair",
    "request_2d",
    "request_batched",
    "batch_dims",
    "bias_dtype",
    "signature",
    "check_typed_call",
    "TF32_ONLY",
    "refuse_negated",
]

#: why float32 operands need the call to ask for tf32 (the message of either input kind)
TF32_ONLY = (
    "gemm: float32 operands run on the tensor cores only as tf32 (10-bit mantissa products, f32 "
    "accumulation): pass precision='tf32' (or dtype='tf32'), or convert to float16/bfloat16"
)


def refuse_negated(x: Any, what: str, who: str = "gemm") -> None:
    """Refuses a torch tensor whose negative bit is set (a lazily negated view, such as the
    ``.imag`` of a conjugate): its memory holds the negatives of its values, and the kernels
    read memory.  Other operands pass."""
    is_neg = getattr(x, "is_neg", None)
    if is_neg is not None and is_neg():
        raise GemmInputError(
            f"{who}: {what} is a negated view (torch's negative bit is set: its memory holds the "
            f"negatives of its values, as the .imag of a conjugate does): materialize it with "
            f".resolve_neg()"
        )


def check_typed_call(
    typed: str,
    a_shape: Tuple[int, ...],
    b_shape: Tuple[int, ...],
    bias: Any,
    c: Any,
    activation: Optional[str],
    alpha: float,
    beta: float,
) -> None:
    """What the typed kernels (tf32, int8, fp8: ``typed.typed_gemm``) take of a ``gemm`` call,
    for CuPy arrays and torch tensors alike, before their arrays are read: 2-D or 3-D
    (batched) operands, and ``beta`` only with the C input ``c``; a GemmInputError naming
    the fix otherwise.  (``typed.decide_typed_epilogue`` decides the rest of the epilogue:
    the exact s32 epilogue's integer alpha, beta and bias, the activations.)"""
    if len(a_shape) not in (2, 3) or len(b_shape) not in (2, 3):
        raise GemmInputError(
            f"gemm: {typed} products take 2-D operands or 3-D batches (a is {tuple(a_shape)}, "
            f"b is {tuple(b_shape)})"
        )
    if beta != 0 and c is None:
        raise GemmInputError(
            f"gemm: beta != 0 needs the C input c (an M x N array of the output's dtype), {typed}"
        )


_DT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}


def signature(x: Any, align: bool = False) -> Any:
    """What a plan compares a later argument against: (type, shape, strides, dtype, device),
    and with ``align`` whether its base address is 16-byte aligned; None for None."""
    if x is None:
        return None
    s = (type(x), x.shape, x.strides, x.dtype, x.data.device_id)
    return s + (x.data.ptr % 16 == 0,) if align else s


def check_pair(a: Any, b: Any, dtype: Optional[str]) -> Tuple[str, Any]:
    """(the inputs' dtype name, CuPy) for 2-D operands ``a`` and ``b``, after checking them."""
    cupy = device.cupy()
    for nm, x in (("a", a), ("b", b)):
        if not isinstance(x, cupy.ndarray):
            raise GemmInputError(f"gemm: {nm} must be a cupy.ndarray, got {type(x).__name__}")
        if x.ndim != 2:
            raise GemmInputError(f"gemm: {nm} must be 2-D, got shape {x.shape}")
        if 0 in x.shape:
            raise GemmInputError(f"gemm: {nm} has an empty dimension, shape {x.shape}")
        if max(x.shape) >= 2**31:
            raise GemmInputError(f"gemm: {nm} has an extent >= 2**31, shape {x.shape}")
    if a.shape[1] != b.shape[0]:
        raise GemmInputError(
            f"gemm: inner dimensions differ: a is {a.shape}, b is {b.shape} "
            f"(a.shape[1] must equal b.shape[0])"
        )
    if a.dtype != b.dtype:
        raise GemmInputError(
            f"gemm: a is {a.dtype} and b is {b.dtype}; both must be float16 or both bfloat16"
        )
    if a.device != b.device:
        raise GemmInputError(f"gemm: a is on {a.device} and b on {b.device}")
    if dtype is not None:
        if dtype not in ("f16", "bf16"):
            raise GemmInputError(f"gemm: dtype={dtype!r} must be 'f16' or 'bf16'")
        if a.itemsize != 2:
            raise GemmInputError(f"gemm: dtype={dtype!r} reinterprets 2-byte elements; a is {a.dtype}")
        return dtype, cupy
    dn = _DT.get(str(a.dtype), str(a.dtype))
    if dn not in ("f16", "bf16"):
        raise GemmInputError(
            f"gemm: unsupported dtype {a.dtype}: float16 or bfloat16 (or "
            f"2-byte arrays with dtype='bf16'), f32 accumulation"
        )
    return dn, cupy


def _out_dtype(cupy: Any, name: str, like: Any) -> Any:
    if name == "f16":
        return cupy.float16
    if name == "f32":
        return cupy.float32
    try:
        return cupy.dtype("bfloat16")
    except TypeError:
        return like.dtype  # raw bf16 bits in a 2-byte array (dtype='bf16' reinterpretation)


def bias_dtype(cupy: Any, bias: Any, M: int, N: int, dev: int, along: str, dt: str) -> str:
    """The element type (``"f32"``, ``"f16"``, ``"bf16"``) of a fused bias vector, after
    checking it: a contiguous cupy vector of N (``along="n"``) or M (``"m"``) elements on
    the current device; 2-byte raw bits count as bf16 where the inputs are bf16 bits."""
    if along not in ("n", "m"):
        raise GemmInputError(
            f"gemm: bias_along={along!r} must be 'n' (one value per column) or 'm' (per row)"
        )
    n = N if along == "n" else M
    kinds = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
    name = str(getattr(bias, "dtype", ""))
    kind = kinds.get(name) or ("bf16" if name == "uint16" and dt == "bf16" else None)
    ok = (
        isinstance(bias, cupy.ndarray)
        and kind is not None
        and bias.shape == (n,)
        and bias.strides == (bias.itemsize,)
        and bias.data.device_id == dev
    )
    if not ok or kind is None:
        raise GemmInputError(
            f"gemm: bias must be a contiguous float32, float16 or bfloat16 cupy array of shape ({n},) "
            f"(bias_along={along!r}) on device {dev}"
        )
    return kind


@dataclass
class Checked:
    """A checked call: the rule's request and what the plan keeps of the arrays (CuPy, the
    device, the output's dtype, the signatures its later calls must match)."""

    request: GemmRequest
    cupy: Any
    dev: int
    out_dtype: Any
    sigs: Tuple[Any, ...]  # (a, b, out, bias, c)


def _facts(x: Any) -> OperandFacts:
    """A 2-D or 3-D operand's facts (3-D: the first matrix's, with the batch extent)."""
    if x.ndim == 3:
        return OperandFacts(x.shape[1:], x.strides[1:], x.itemsize, x.data.ptr % 16, x.shape[0], x.strides[0])
    return OperandFacts(x.shape, x.strides, x.itemsize, x.data.ptr % 16)


def _out_name(out: Any, out_dtype: Optional[str], dt: str) -> str:
    """The output dtype's name: ``out_dtype``, else out's, else the inputs'."""
    od: Optional[str] = out_dtype or dt
    if out is not None:
        od = out_dtype or (
            {"float16": "f16", "float32": "f32"}.get(str(out.dtype))
            or ("bf16" if str(out.dtype) == "bfloat16" or dt == "bf16" else None)
        )
        if od is None:
            raise GemmInputError(f"gemm: out has dtype {out.dtype}; float16, bfloat16 or float32")
    if od not in ("f16", "bf16", "f32"):
        raise GemmInputError(f"gemm: out_dtype={od!r} must be 'f16', 'bf16' or 'f32'")
    return od


def _check_out(cupy: Any, out: Any, shape: Tuple[int, ...], dev: Optional[int]) -> None:
    """``out`` (if any) is a cupy array of ``shape`` (on device ``dev`` where given)."""
    if out is None:
        return
    if not isinstance(out, cupy.ndarray) or out.shape != shape:
        raise GemmInputError(
            f"gemm: out must be a cupy array of shape {shape}, got "
            f"{getattr(out, 'shape', type(out).__name__)}"
        )
    if dev is not None and out.data.device_id != dev:
        raise GemmInputError(f"gemm: out is on device {out.data.device_id} but the current device is {dev}")


def _out_itemsize(out: Any, od: str, odt: Any) -> int:
    """The output's element size; ``out`` (if any) stores elements of that size."""
    it = int(np.dtype(odt).itemsize)
    if out is not None and np.dtype(out.dtype).itemsize != it:
        raise GemmInputError(
            f"gemm: out has dtype {out.dtype} but out_dtype={od!r} stores {it}-byte elements"
        )
    return it


def _check_c_2d(cupy: Any, c: Any, M: int, N: int, odt: Any, dev: int) -> None:
    """The C input of a 2-D call: row-major (unit column stride), the output's dtype."""
    oit = np.dtype(odt).itemsize
    ok = (
        isinstance(c, cupy.ndarray)
        and c.shape == (M, N)
        and c.dtype == np.dtype(odt)
        and c.strides[1] == oit
        and c.strides[0] % oit == 0
        and c.strides[0] // oit >= N
        and c.data.device_id == dev
    )
    if not ok:
        raise GemmInputError(
            f"gemm: c (beta's input) must be a row-major (unit column stride) cupy array of "
            f"shape ({M}, {N}) and the output's dtype {np.dtype(odt)} on device {dev}"
        )


def request_2d(
    a: Any,
    b: Any,
    out: Any,
    *,
    dtype: Optional[str],
    out_dtype: Optional[str],
    path: str,
    bias: Any,
    activation: Optional[str],
    c: Any,
    alpha_beta: bool,
    bias_along: str,
) -> Checked:
    """A 2-D call checked: the operands (on the current device), the output, the fused
    epilogue's bias and C input."""
    dt, cupy = check_pair(a, b, dtype)
    M, N = a.shape[0], b.shape[1]
    dev = cupy.cuda.runtime.getDevice()
    for nm, x in (("a", a), ("b", b)):
        if x.data.device_id != dev:
            raise GemmInputError(
                f"gemm: {nm} is on device {x.data.device_id} but the current "
                f"device is {dev} (use `with cupy.cuda.Device(...)`)"
            )
    _check_out(cupy, out, (M, N), dev)
    od = _out_name(out, out_dtype, dt)
    odt = _out_dtype(cupy, od, a)
    it = _out_itemsize(out, od, odt)
    ab = bool(alpha_beta or c is not None)
    epi = bias is not None or activation is not None or ab
    bdt = bias_dtype(cupy, bias, M, N, dev, bias_along, dt) if bias is not None else "f32"
    c_ld = (0, 0)
    if epi and ab:
        _check_c_2d(cupy, c, M, N, odt, dev)
        c_ld = (c.strides[0] // c.itemsize, 0)
    req = GemmRequest(
        a=_facts(a),
        b=_facts(b),
        dtype=dt,
        out_dtype=od,
        out_itemsize=it,
        out_strides=None if out is None else tuple(out.strides),
        path=path,
        activation=activation,
        alpha_beta=ab,
        bias=bias is not None,
        bias_along=bias_along,
        bias_dtype=bdt,
        c_ld=c_ld,
    )
    sigs = (
        signature(a, True),
        signature(b, True),
        signature(out),
        signature(bias) if bias is not None else None,
        signature(c) if ab else None,
    )
    return Checked(req, cupy, dev, odt, sigs)


def batch_dims(a: Any, b: Any) -> Tuple[int, int, int]:
    """(batch, A's batch extent, B's batch extent) of a batched product, numpy-matmul
    broadcasting: a 2-D operand or a batch extent of 1 is shared by every batch."""
    for nm, x in (("a", a), ("b", b)):
        nd = getattr(x, "ndim", None)
        if nd not in (2, 3):
            raise GemmInputError(f"gemm: {nm} must be 2-D or 3-D (batch, rows, cols), got {nd}-D")
    ba = a.shape[0] if a.ndim == 3 else 1
    bb = b.shape[0] if b.ndim == 3 else 1
    if ba != bb and 1 not in (ba, bb):
        raise GemmInputError(
            f"gemm: batch extents differ: a is {a.shape}, b is {b.shape} (equal, or one of them 1 or 2-D)"
        )
    batch = max(ba, bb)
    if batch < 1:
        raise GemmInputError(f"gemm: empty batch: a is {a.shape}, b is {b.shape}")
    return batch, ba, bb


def _c_input(cupy: Any, c: Any, batch: int, M: int, N: int, odt: Any) -> Tuple[int, int]:
    """(row stride, batch stride) in elements of a batched call's C input ``c``: (batch, M,
    N) or a shared (M, N) / (1, M, N) array (batch stride 0), of the output's dtype, on the
    current device, rows of unit column stride (any batch stride: the kernel only reads it)."""
    it = np.dtype(odt).itemsize
    shapes = ((batch, M, N), (1, M, N), (M, N))
    ok = isinstance(c, cupy.ndarray) and c.shape in shapes and np.dtype(c.dtype) == np.dtype(odt)
    if ok:
        s = c.strides
        ok = (
            s[-1] == it
            and s[-2] % it == 0
            and s[-2] // it >= N
            and (c.ndim == 2 or s[0] % it == 0)
            and c.data.device_id == cupy.cuda.runtime.getDevice()
        )
    if not ok:
        raise GemmInputError(
            f"gemm: c (beta's input) must be a cupy array of shape {(batch, M, N)}, {(1, M, N)} or "
            f"{(M, N)} and the output's dtype {np.dtype(odt)}, rows of unit column stride, on the current "
            f"device; got {getattr(c, 'shape', type(c).__name__)}"
        )
    shared = c.ndim == 2 or c.shape[0] == 1
    return c.strides[-2] // it, 0 if shared else c.strides[0] // it


def request_batched(
    a: Any,
    b: Any,
    out: Any,
    *,
    dtype: Optional[str],
    out_dtype: Optional[str],
    path: str,
    bias: Any,
    activation: Optional[str],
    c: Any,
    alpha_beta: bool,
    bias_along: str,
) -> Checked:
    """A batched call checked: the operands' first matrices as a 2-D call's, the batch
    extents, the (batch, M, N) output, the bias and the C input."""
    batch, _, _ = batch_dims(a, b)
    a0, b0 = (x[0] if x.ndim == 3 else x for x in (a, b))
    dt, cupy = check_pair(a0, b0, dtype)
    M, N = a0.shape[0], b0.shape[1]
    ab = bool(alpha_beta or c is not None)
    od = out_dtype
    _check_out(cupy, out, (batch, M, N), None)
    if out is not None:
        od = od or {"float16": "f16", "float32": "f32", "bfloat16": "bf16"}.get(str(out.dtype)) or dt
    od = od or dt
    if od not in ("f16", "bf16", "f32"):
        raise GemmInputError(f"gemm: out_dtype={od!r} must be 'f16', 'bf16' or 'f32'")
    odt = _out_dtype(cupy, od, a)
    it = _out_itemsize(out, od, odt)
    dev = cupy.cuda.runtime.getDevice()
    bdt = "f32" if bias is None else bias_dtype(cupy, bias, M, N, dev, bias_along, dt)
    c_ld = (0, 0)
    if c is not None:
        c_ld = _c_input(cupy, c, batch, M, N, odt)
    elif ab:
        raise GemmInputError("gemm: alpha/beta need the C input c")
    req = GemmRequest(
        a=_facts(a),
        b=_facts(b),
        dtype=dt,
        out_dtype=od,
        out_itemsize=it,
        out_strides=None if out is None else tuple(out.strides),
        path=path,
        activation=activation,
        alpha_beta=ab,
        bias=bias is not None,
        bias_along=bias_along,
        bias_dtype=bdt,
        c_ld=c_ld,
        batch=batch,
    )
    sigs = (signature(a, True), signature(b, True), signature(out), signature(bias), signature(c))
    return Checked(req, cupy, dev, odt, sigs)
