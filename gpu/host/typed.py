"""The other tensor-core types on the host: tf32, fp8 (e4m3/e5m2) and int8 (s8/u8).

:func:`typed_gemm` checks a call's operands (:func:`typed_operand`),
takes the kernel :func:`decide_typed` picks, generates and proves
it on first use, and launches it on the caller's stream with the operands' tensor maps over
16-bit units (the kernels move bytes as 16-bit units, so every byte-level proof of the f16
kernels holds unchanged).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Dict, Optional, Tuple

import numpy as np

from ..config import OUT_DTYPES, TC_TYPES, GemmProblem
from ..errors import GemmConfigError, GemmInputError
from ..kernels.epilogue import S32_ACTIVATIONS, EpilogueConfig, check_compute, compute_type
from ..kernels.wgmma import Sm90Config
from ..kernels.wgmma_core import SCALED_TYPES
from . import device
from .cache import compile_kernel, kernel_for
from .operands import refuse_negated
from .plan import _TMAP_REC, last_launch
from .rule import choose_config, hopper_candidates, launch_grid

__all__ = [
    "TC_ITEMSIZE",
    "TF32_TILE",
    "typed_operand",
    "TypedDecision",
    "decide_typed",
    "TypedEpilogue",
    "decide_typed_epilogue",
    "decide_typed_launch",
    "typed_gemm",
    "typed_output",
    "TORCH_NAMES",
    "CUPY_NAMES",
    "array_facts",
    "unit_tensor_map",
    "vector_facts",
    "epilogue_args",
]

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


#: the tf32 products' tile where the f16 model picks 128 x 256: measured on an H200 against
#: every candidate (bench/gemm_types.py --explore), the 128 x 128 tile was the fastest, or
#: within 2% of the fastest, on each of six shapes (2048x7168x4096: 1.13x torch.matmul with
#: tf32, against 0.98x for 128 x 256)
TF32_TILE = Sm90Config(bm=128, bn=128, stages=6, loader="tma", schedule="ws")


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
    m: int,
    n: int,
    k: int,
    dtype: str,
    out_dtype: Optional[str],
    sms: int,
    config: Any = None,
    count: int = 1,
) -> TypedDecision:
    """The kernel for ``C (m x n) = A (m x k) @ B (k x n)`` of ``dtype``: ``config`` or the
    wave model's pick among the warp-specialized candidates (:func:`hopper_candidates`),
    modelled in 16-bit units of K (the tensor-core rate per byte of K is the same for
    tf32, f16 and fp8 on Hopper, so the f16 model carries over); ``count`` products of a
    batch are modelled as one of ``count * m`` rows and share the persistent grid.  tf32
    takes :data:`TF32_TILE` where the model picks a 128 x 256 tile (measured on an H200
    against every candidate: bench/gemm_types.py ``--explore``).

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
            m * count,
            n,
            ku,
            GemmProblem("k", "k", "f16", "f32"),
            hopper=True,
            tma=True,
            sms=sms,
            candidates=hopper_candidates(True),
        )
        if dtype == "tf32" and (config.bm, config.bn) == (128, 256):
            config = TF32_TILE
    if not isinstance(config, Sm90Config) or config.schedule != "ws":
        raise GemmInputError(
            f"gemm: .{dtype} products run on the warp-specialized wgmma kernel (an Sm90Config "
            f"with schedule='ws'), not {config!r}"
        )
    grid = launch_grid(config, m, n, sms, count)
    return TypedDecision(config, prob, m, n, k, ku, grid, dtype in SCALED_TYPES)


TORCH_NAMES = {"bf16": "bfloat16", "f16": "float16", "f32": "float32", "s32": "int32"}
CUPY_NAMES = {"bf16": "uint16", "f16": "float16", "f32": "float32", "s32": "int32"}


def array_facts(x: Any, who: str = "gemm") -> Tuple[Tuple[int, ...], Tuple[int, ...], int, int, bool]:
    """(shape, strides in bytes, itemsize, device pointer, is a torch tensor) of a CuPy
    array or a torch CUDA tensor (``who`` names the caller in the refusals)."""
    if hasattr(x, "data_ptr") and hasattr(x, "element_size"):  # torch
        if not getattr(x, "is_cuda", False):
            raise GemmInputError(f"{who}: a torch operand must be on a CUDA device")
        refuse_negated(x, "an operand", who)
        it = int(x.element_size())
        return tuple(x.shape), tuple(int(s) * it for s in x.stride()), it, int(x.data_ptr()), True
    if hasattr(x, "data") and hasattr(x.data, "ptr") and hasattr(x, "strides"):  # CuPy
        return tuple(x.shape), tuple(int(s) for s in x.strides), int(x.itemsize), int(x.data.ptr), False
    raise GemmInputError(f"{who}: operands must be CuPy arrays or torch CUDA tensors, got {type(x).__name__}")


def unit_tensor_map(
    ptr: int, rows: int, k_bytes: int, row_bytes: int, batch: Optional[Tuple[int, int]] = None
) -> Any:
    """The 128-byte tensor map of a K-major operand as 16-bit units: ``rows`` rows of
    ``k_bytes`` bytes, ``row_bytes`` apart; 64 x 64-unit boxes, 128-byte swizzle, zero fill
    outside (the boxes :func:`~layoutproof.gpu.kernels.wgmma.prove_tma` proves).  ``batch``
    = (count, stride in bytes): a rank-3 map with 1-deep boxes, so a box of batch ``i``
    never reads past that batch's matrix."""
    from cuda.bindings import driver  # cuda-python

    u32, u64 = driver.cuuint32_t, driver.cuuint64_t
    dims, strides, box = [u64(k_bytes // 2), u64(rows)], [u64(row_bytes)], [u32(64), u32(64)]
    if batch is not None:
        dims.append(u64(batch[0]))
        strides.append(u64(batch[1]))
        box.append(u32(1))
    err, tm = driver.cuTensorMapEncodeTiled(
        driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_UINT16,
        u32(len(dims)),
        ptr,
        dims,
        strides,
        box,
        [u32(1)] * len(dims),
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
    )
    if err != driver.CUresult.CUDA_SUCCESS:
        raise GemmInputError(
            f"gemm: cuTensorMapEncodeTiled failed ({err}) for a {rows} x {k_bytes}-byte operand"
            + (f" of {batch[0]} batches {batch[1]} bytes apart" if batch is not None else "")
        )
    return np.array([int(v) for v in tm.opaque], dtype=np.uint64).view(_TMAP_REC)[0]


def typed_output(
    out: Any, a: Any, torch_a: bool, m: int, n: int, ot: str, who: str, batch: Optional[int] = None
) -> Tuple[Any, Tuple[int, ...], int, bool, int]:
    """The ``m x n`` row-major output of a typed kernel (``batch`` of them: ``(batch, m,
    n)``, the batches disjoint): ``out`` checked, or a new array of ``a``'s kind (torch for
    torch operands, else CuPy; bf16 from CuPy as raw uint16); returns ``(out, byte strides,
    address, whether torch, bytes per element)``."""
    shape = (m, n) if batch is None else (batch, m, n)
    if out is None:
        if torch_a:
            import torch

            out = torch.empty(shape, device=a.device, dtype=getattr(torch, TORCH_NAMES[ot]))
        else:
            out = device.cupy().empty(shape, dtype=CUPY_NAMES[ot])
    so, to, io, po, torch_o = array_facts(out)
    ob = OUT_DTYPES[ot][1]
    bad = so != shape or io != ob or to[-1] != ob or to[-2] % ob or (m > 1 and to[-2] < n * ob)
    if batch is not None and not bad and batch > 1:
        # batches disjoint: ldcb >= (m - 1) * ldc + n (the kernel's proven condition)
        bad = to[0] % ob != 0 or to[0] < (m - 1) * to[1] + n * ob
    if bad:
        raise GemmInputError(
            f"{who}: out must be a row-major {' x '.join(map(str, shape))} array of {ot} ({ob}-byte "
            f"elements, disjoint rows and batches), got shape {so}, {io}-byte elements, strides {to}"
        )
    return out, to, po, torch_o, ob


# ============================================================================ the epilogue
@dataclass(frozen=True)
class TypedEpilogue:
    """What a typed call fuses (:func:`decide_typed_epilogue`): ``config`` the epilogue
    kernel's configuration around the decided ``Sm90Config`` (None: the plain kernel),
    ``scale`` the fp8 kernels' per-tensor scale parameter, ``alpha`` and ``beta`` the
    epilogue's (Python ``int`` in an s32 epilogue, else ``float``)."""

    config: Optional[EpilogueConfig]
    scale: float
    alpha: Any
    beta: Any

    @property
    def integer(self) -> bool:
        return self.config is not None and self.config.bias_dtype == "s32"


def _int32(name: str, v: float, dtype: str) -> int:
    if not math.isfinite(v) or float(v) != int(v) or not -(2**31) <= int(v) < 2**31:
        raise GemmInputError(
            f"gemm: .{dtype} -> s32 is exact: {name} must be an integer in the int32 range, got {v} "
            f"(store f32 or bf16 for a real {name})"
        )
    return int(v)


def decide_typed_epilogue(
    base: Sm90Config,
    problem: GemmProblem,
    *,
    activation: Optional[str] = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    bias_dtype: Optional[str] = None,
    has_c: bool = False,
    bias_along: str = "n",
) -> TypedEpilogue:
    """The fused epilogue of a typed product on ``base``: ``C = act(alpha * A @ B + beta *
    c + bias)`` through :class:`~layoutproof.gpu.kernels.epilogue.EpilogueConfig` (the f16
    kernels' one rewrite).  fp8 applies ``alpha`` (``scale_a * scale_b``) as the kernel's
    per-tensor scale; tf32 and the integer types stored as a float type through the
    epilogue's alpha (``alpha_only`` without a C input); the integer types stored as s32 in
    s32 (exact: integer alpha and beta, an s32 bias, ``relu`` or no activation).
    ``bias_dtype`` None: no bias (a zero vector is read where the epilogue runs).

    >>> from layoutproof.gpu.kernels.wgmma import HOPPER_DEFAULT as H
    >>> e = decide_typed_epilogue(H, GemmProblem("k", "k", "s8", "bf16"), alpha=0.5)
    >>> e.config.key(), e.scale, e.alpha
    ('sm90_128x256x64_s4_g8_tma_ws_biasnone_alpha', 1.0, 0.5)
    >>> decide_typed_epilogue(H, GemmProblem("k", "k", "e4m3"), alpha=0.5).config is None
    True
    """
    dtype, ot = problem.dtype, problem.out
    scaled = dtype in SCALED_TYPES
    integer = compute_type(problem) == "s32"
    if beta != 0 and not has_c:
        raise GemmInputError("gemm: beta != 0 needs the C input c (an M x N array of the output's dtype)")
    if integer:
        alpha, beta = _int32("alpha", alpha, dtype), _int32("beta", beta, dtype)
        if bias_dtype not in (None, "s32"):
            raise GemmInputError(
                f"gemm: .{dtype} -> s32 adds an int32 bias exactly, got a {bias_dtype} bias: pass "
                f"bias.astype(int32), or out_dtype='f32'/'bf16' for a float bias"
            )
        if activation not in (None, *S32_ACTIVATIONS):
            raise GemmInputError(
                f"gemm: .{dtype} -> s32 computes exactly: activation={activation!r} is not an "
                f"integer function (one of {S32_ACTIVATIONS}); pass out_dtype='f32' or 'bf16' for it"
            )
    elif bias_dtype not in (None, "f32", "f16", "bf16"):
        raise GemmInputError(
            f"gemm: .{dtype} -> {ot} adds a float32, float16 or bfloat16 bias, got {bias_dtype}"
        )
    ab = has_c
    scale = float(alpha) if scaled else 1.0
    if scaled:  # fp8: alpha is the kernel's own scale; the epilogue's alpha is 1
        alpha = 1.0
    alpha_only = not ab and alpha != 1
    if not (ab or alpha_only or bias_dtype is not None or activation is not None):
        return TypedEpilogue(None, scale, alpha, beta)
    bdt = bias_dtype or ("s32" if integer else "f32")
    cfg = EpilogueConfig(base, activation or "none", ab, bias_along, bdt, alpha_only)
    try:
        cfg.validate()
        check_compute(cfg, problem)
    except GemmConfigError as e:
        raise GemmInputError(f"gemm: {e}") from None
    return TypedEpilogue(cfg, scale, alpha, beta)


def decide_typed_launch(
    m: int,
    n: int,
    k: int,
    dtype: str,
    out_dtype: Optional[str],
    sms: int,
    config: Any = None,
    *,
    batch: str = "",
    count: int = 1,
    activation: Optional[str] = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    bias_dtype: Optional[str] = None,
    has_c: bool = False,
    bias_along: str = "n",
) -> Tuple[TypedDecision, GemmProblem, TypedEpilogue]:
    """What :func:`typed_gemm` launches for a call: the tile (:func:`decide_typed`), the
    problem (``batch`` the operands carrying the batch index, as
    :class:`~layoutproof.gpu.config.GemmProblem` names them) and the fused epilogue
    (:func:`decide_typed_epilogue`), ``count`` products in the batch; the kernel is
    ``kernel_for(epilogue.config or decision.config, problem)``.

    >>> d, p, e = decide_typed_launch(
    ...     1000, 700, 1040, "s8", "s32", 132, batch="ab", count=4, activation="relu"
    ... )
    >>> p.key(), e.config.key(), d.grid
    ('ak_bk_s8_s32_batchab', 'sm90_128x256x64_s4_g8_tma_ws_biasrelu_bs32', (96, 1, 1))
    """
    d = decide_typed(m, n, k, dtype, out_dtype, sms, config, count)
    prob = GemmProblem("k", "k", dtype, d.problem.out_dtype, batch) if batch else d.problem
    ep = decide_typed_epilogue(
        d.config,
        prob,
        activation=activation,
        alpha=alpha,
        beta=beta,
        bias_dtype=bias_dtype,
        has_c=has_c,
        bias_along=bias_along,
    )
    return d, prob, ep


_DTYPE_NAMES = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "int32": "s32"}


def vector_facts(x: Any, length: int, what: str, who: str = "gemm") -> Tuple[int, str]:
    """(device pointer, dtype name) of a contiguous 1-D bias of ``length`` elements."""
    sh, st, it, ptr, _t = array_facts(x, who)
    name = _DTYPE_NAMES.get(str(getattr(x, "dtype", "")).replace("torch.", ""))
    if sh != (length,) or (length > 1 and st[0] != it):
        raise GemmInputError(
            f"{who}: bias must be a contiguous vector of {length} elements ({what}), got shape {sh}, "
            f"strides {st}"
        )
    if name is None:
        raise GemmInputError(
            f"{who}: bias of dtype {getattr(x, 'dtype', '?')}: pass float32, float16, bfloat16 (torch) "
            f"or int32 (an integer product stored as s32)"
        )
    return ptr, name


_ZERO: Dict[Tuple[int, int, str], Any] = {}


def _zero_vector(n: int, ctype: str) -> Any:
    """A kept zero vector of ``n`` elements (f32 or s32) on the current device: the bias an
    epilogue without one reads."""
    cupy = device.cupy()
    key = (int(cupy.cuda.runtime.getDevice()), n, ctype)
    z = _ZERO.get(key)
    if z is None:
        if len(_ZERO) >= 64:
            _ZERO.clear()
        z = _ZERO[key] = cupy.zeros(n, dtype="int32" if ctype == "s32" else "float32")
    return z


def _ptr_arg(ptr: int, owner: Any = None) -> Any:
    """A CuPy array over device address ``ptr`` (CuPy's launcher passes its pointer)."""
    cupy = device.cupy()
    mem = cupy.cuda.UnownedMemory(ptr, 1, owner)
    return cupy.ndarray((1,), dtype="uint8", memptr=cupy.cuda.MemoryPointer(mem, 0))


# ============================================================================ batches
@dataclass(frozen=True)
class _Operand:
    rows: int
    k: int
    ld: int  # row stride in bytes
    batch: int  # 0: one matrix shared by every batch
    bstride: int  # bytes between batches


def _typed_operand3(
    name: str, shape: Tuple[int, ...], strides: Tuple[int, ...], itemsize: int, ptr: int, dtype: str
) -> _Operand:
    """:func:`typed_operand` of a 2-D operand or of each matrix of a 3-D one (its batch
    stride a multiple of 16 bytes, the tensor maps' rule; a batch extent of 1 is shared)."""
    if len(shape) == 3:
        rows, k, ld = typed_operand(name, shape[1:], strides[1:], itemsize, ptr, dtype)
        nb, bs = shape[0], strides[0]
        if nb > 1 and (bs % 16 or bs <= 0):
            raise GemmInputError(
                f"gemm: {name.upper()}'s batches are {bs} bytes apart: the tensor maps need a positive "
                f"multiple of 16 bytes (pass {name}.contiguous() with a padded K)"
            )
        return _Operand(rows, k, ld, nb if nb > 1 else 0, bs if nb > 1 else 0)
    rows, k, ld = typed_operand(name, shape, strides, itemsize, ptr, dtype)
    return _Operand(rows, k, ld, 0, 0)


def stage_k_major(x: Any, name: str, itemsize: int) -> Any:
    """``x`` (an operand of a typed product: A ``(..., M, K)`` or B ``(..., K, N)``, a
    torch tensor or a CuPy array) copied into a new K-major buffer whose rows start 16
    bytes apart (K padded to a multiple of ``16 / itemsize`` elements in the buffer; the
    view returned has ``x``'s shape, the padding outside it), or ``x`` itself where it is
    K-major with such rows and 16-byte aligned batches already.  One copy, on the current
    stream (torch's for a tensor, CuPy's for an array).

    >>> import numpy as np
    >>> b = np.arange(12, dtype=np.int8).reshape(3, 4)  # K x N row-major: N contiguous
    >>> s = stage_k_major(b, "b", 1)
    >>> s.shape, s.strides, bool((s == b).all())
    ((3, 4), (1, 16), True)
    """
    sh, st = tuple(x.shape), _strides_of(x)
    kax = -1 if name == "a" else -2
    k, rows = sh[kax], sh[-2 if name == "a" else -1]
    rax = -2 if name == "a" else -1
    ok = (st[kax] == itemsize or k == 1) and (rows == 1 or (st[rax] % 16 == 0 and st[rax] >= k * itemsize))
    ok = ok and _pointer_of(x) % 16 == 0 and (len(sh) < 3 or sh[0] == 1 or st[0] % 16 == 0)
    if ok:
        return x
    kp = -(-k * itemsize // 16) * 16 // itemsize
    lead = sh[:-2]
    buf = _empty_like_kind(x, lead + (rows, kp))  # rows x K (padded), K contiguous
    view = buf[..., :k]
    if name == "a":
        view[...] = x
        return view
    _assign(view, _swap(x))
    return _swap(view)


def _strides_of(x: Any) -> Tuple[int, ...]:
    if hasattr(x, "element_size"):  # torch
        return tuple(int(v) * int(x.element_size()) for v in x.stride())
    return tuple(int(v) for v in x.strides)


def _pointer_of(x: Any) -> int:
    if hasattr(x, "data_ptr"):
        return int(x.data_ptr())
    d: Any = getattr(x, "data", None)
    if hasattr(d, "ptr"):
        return int(d.ptr)
    return int(x.__array_interface__["data"][0])  # numpy (the docstring's example)


def _empty_like_kind(x: Any, shape: Tuple[int, ...]) -> Any:
    if hasattr(x, "new_empty"):  # torch
        return x.new_empty(shape)
    if type(x).__module__.startswith("cupy"):
        return device.cupy().empty(shape, dtype=x.dtype)
    buf = np.empty(shape, dtype=x.dtype)  # numpy: aligned as the allocator gives (the example)
    return buf


def _swap(x: Any) -> Any:
    return x.transpose(-1, -2) if hasattr(x, "new_empty") else x.swapaxes(-1, -2)


def _assign(dst: Any, src: Any) -> None:
    if hasattr(dst, "copy_"):
        dst.copy_(src)
    else:
        dst[...] = src


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
    """``C = act(scale * A @ B + beta * c + bias)`` on the tensor cores for ``dtype`` in
    ``"tf32"`` (float32 operands; output f32 (default), bf16 or f16), ``"e4m3"`` /
    ``"e5m2"`` (one-byte operands: torch float8 tensors or raw uint8 CuPy arrays; f32
    accumulation, output bf16 (default), f16 or f32; ``scale`` = ``scale_a * scale_b``),
    ``"s8"`` / ``"u8"`` (int8 / uint8: s32 (default) exactly -- integer ``scale`` and
    ``beta``, an int32 bias, ``relu`` or no activation -- or f32/bf16/f16 with a real
    ``scale`` applied to the converted sums).  ``a`` is ``M x K``, ``b`` is ``K x N``; the
    kernels read K-major operands (A row-major, B column-major, rows 16 bytes apart:
    :func:`typed_operand`), and any other layout is copied into such a buffer first
    (:func:`stage_k_major`; ``last_launch["staged"]`` names the operands copied); 3-D
    operands ``(batch, M, K)`` / ``(batch, K, N)`` (a 2-D operand or a batch extent of 1
    is shared) give ``(batch, M, N)`` in one launch. The fused epilogue
    (:func:`decide_typed_epilogue`): ``bias`` (one value per column, or per row with
    ``bias_along="m"``), ``activation`` (``relu``, ``silu``, ``gelu``), ``beta * c`` with
    ``c`` M x N (batched: (batch, M, N), or one M x N for every batch) of the output's
    dtype. The kernel (:func:`decide_typed`) is generated
    and proven on first use and launched on the current stream (torch's for torch operands,
    else CuPy's). Returns ``out`` or a new array of the operands' kind (bf16 from CuPy
    operands as raw uint16, CuPy having no bfloat16)."""
    cupy = device.cupy()
    if dtype not in TC_TYPES:
        raise GemmInputError(f"gemm: dtype={dtype!r} is not one of {sorted(TC_TYPES)}")
    staged = []
    for nm, x in (("a", a), ("b", b)):
        sh, _s, it, _p, _t = array_facts(x)
        if len(sh) not in (2, 3):
            raise GemmInputError(f"gemm: {nm} must be 2-D or 3-D (batch, rows, cols), got shape {sh}")
        if it == TC_ITEMSIZE[dtype] and min(sh) >= 1:  # else typed_operand names what to pass
            y = stage_k_major(x, nm, it)
            if y is not x:
                staged.append(nm)
                a, b = (y, b) if nm == "a" else (a, y)
    sa, ta, ia, pa, torch_a = array_facts(a)
    sb, tb, ib, pb, torch_b = array_facts(b)
    A = _typed_operand3("a", sa, ta, ia, pa, dtype)
    B = _typed_operand3("b", sb, tb, ib, pb, dtype)
    m, k, n = A.rows, A.k, B.rows
    if B.k != k:
        raise GemmInputError(f"gemm: A is {m} x {k} but B is {B.k} x {n}: the K extents differ")
    batched = len(sa) == 3 or len(sb) == 3
    nbatch = max(A.batch, B.batch, 1)
    if A.batch and B.batch and A.batch != B.batch:
        raise GemmInputError(f"gemm: batch extents differ: a is {sa}, b is {sb} (equal, or 1 to share)")
    kind = ("a" if A.batch else "") + ("b" if B.batch else "")
    if batched and not kind:  # every operand shared: one batch, A through a rank-3 map
        kind, A = "a", replace(A, batch=1, bstride=A.ld * m)
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    bias_ptr, bdt = (None, None)
    if bias_along not in ("n", "m"):
        raise GemmInputError(f"gemm: bias_along={bias_along!r} must be 'n' or 'm'")
    if bias is not None:
        bias_ptr, bdt = vector_facts(bias, n if bias_along == "n" else m, f"bias_along={bias_along!r}")
    d, prob, ep = decide_typed_launch(
        m,
        n,
        k,
        dtype,
        out_dtype,
        sms,
        config,
        batch=kind if batched else "",
        count=nbatch,
        activation=activation,
        alpha=scale,
        beta=beta,
        bias_dtype=bdt,
        has_c=c is not None,
        bias_along=bias_along,
    )
    ot = prob.out
    if not d.scaled and ep.config is None and scale != 1:  # unreachable: alpha_only takes it
        raise GemmInputError(f"gemm: dtype={dtype!r} takes no scale (got {scale})")
    out, to, po, torch_o, ob = typed_output(out, a, torch_a, m, n, ot, "gemm", nbatch if batched else None)
    ldc = to[-2] // ob
    try:
        kern = kernel_for(ep.config if ep.config is not None else d.config, prob)
    except GemmConfigError as e:
        if not batched:
            raise
        raise GemmInputError(
            f"gemm: batched .{dtype} products: {e}; call gemm once per matrix of the batch"
        ) from None
    rk = compile_kernel(kern)
    c_vec = int(to[-2] % 16 == 0 and po % 16 == 0 and (not batched or to[0] % 16 == 0))
    c_arg = _ptr_arg(po, out)
    grid = d.grid
    tma = (
        unit_tensor_map(pa, m, k * ia, A.ld, (A.batch, A.bstride) if A.batch else None),
        unit_tensor_map(pb, n, k * ib, B.ld, (B.batch, B.bstride) if B.batch else None),
    )
    args: Tuple[Any, ...] = tma + (
        c_arg,
        np.int32(m),
        np.int32(n),
        np.int32(d.k_units),
        np.int64(ldc),
        np.int32(c_vec),
    )
    if d.scaled:
        args += (np.float32(ep.scale),)
    if batched:
        args += (np.int32(nbatch), np.int64(to[0] // ob))
    if ep.config is not None:
        args += epilogue_args(ep, bias, bias_ptr, c, m, n, ot, nbatch if batched else None)
    stream = None
    if torch_a or torch_b or torch_o:
        import torch

        stream = cupy.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream)
    if stream is not None:
        with stream:
            rk(grid, (kern.threads, 1, 1), args, shared_mem=kern.smem_bytes)
    else:
        rk(grid, (kern.threads, 1, 1), args, shared_mem=kern.smem_bytes)
    last_launch.clear()
    last_launch.update(
        config=ep.config or d.config,
        problem=prob,
        kernel=kern.name,
        m=m,
        n=n,
        k=k,
        batch=nbatch,
        staged=tuple(staged),
    )
    return out


def epilogue_args(
    ep: TypedEpilogue,
    bias: Any,
    bias_ptr: Optional[int],
    c: Any,
    m: int,
    n: int,
    ot: str,
    nbatch: Optional[int],
    who: str = "gemm",
) -> Tuple[Any, ...]:
    """The epilogue kernel's parameters after the base kernel's: the bias (or a kept zero
    vector), alpha (``alpha_only``), or alpha, beta, the C input, its row stride and (batched)
    its batch stride; C checked: ``m x n`` of the output's dtype, unit stride along N
    (``who`` names the caller in the refusals)."""
    cfg = ep.config
    if cfg is None:
        return ()
    num = np.int32 if ep.integer else np.float32
    if bias_ptr is None:
        zero = _zero_vector(n if cfg.bias_axis == "n" else m, "s32" if ep.integer else "f32")
        bias_ptr, bias = int(zero.data.ptr), zero
    out: Tuple[Any, ...] = (_ptr_arg(bias_ptr, bias),)
    if cfg.alpha_only:
        return out + (num(ep.alpha),)
    if not cfg.alpha_beta:
        return out
    sc, tc, ic, pc, _t = array_facts(c, who)
    obytes = OUT_DTYPES[ot][1]
    want = (m, n) if nbatch is None else None
    ok2 = sc == (m, n) or (nbatch is not None and sc in ((m, n), (1, m, n), (nbatch, m, n)))
    if not ok2 or ic != obytes or tc[-1] != obytes or tc[-2] % obytes or tc[-2] < n * obytes:
        raise GemmInputError(
            f"{who}: c must be {'an' if want else 'a (batch,)'} {m} x {n} array of {ot} ({obytes}-byte "
            f"elements) with unit stride along N, got shape {sc}, {ic}-byte elements, strides {tc}"
        )
    ldcib = tc[0] // obytes if len(sc) == 3 and sc[0] > 1 else 0
    if len(sc) == 3 and sc[0] > 1 and tc[0] % obytes:
        raise GemmInputError(f"{who}: c's batch stride {tc[0]} bytes is not a whole number of elements")
    out += (num(ep.alpha), num(ep.beta), _ptr_arg(pc, c), np.int64(tc[-2] // obytes))
    if nbatch is not None:
        out += (np.int64(ldcib),)
    return out
