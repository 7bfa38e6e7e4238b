"""``gemm_fp8_blockscale``: the fp8 (and int8) GEMM with DeepGEMM-style block scales, from the host.

``C = act(alpha * dequant(A) @ dequant(B) + beta * c + bias)`` where ``dequant(A)[m, k] =
A[m, k] * scale_a[m, k / 128]`` and ``dequant(B)[k, n] = B[k, n] * scale_b[n / 128, k / 128]``,
on the kernel of :mod:`layoutproof.gpu.kernels.blockscale` (generated and proven on first
use; with a bias, an activation, ``beta`` and ``c`` -- or ``alpha`` on int8 -- the kernel
with the fused epilogue).  The checks of the arguments are pure functions of their shapes,
strides and types (:func:`scale_strides`, :func:`operand_kind`, :func:`decide_blockscale`,
:func:`decide_blockscale_epilogue`, :func:`check_c_input`), each refusing bad input with a
:class:`~layoutproof.gpu.errors.GemmInputError` that names what to pass.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Optional, Tuple

import numpy as np

from ..config import OUT_DTYPES, GemmProblem
from ..errors import GemmConfigError, GemmInputError
from ..kernels.blockscale import (
    BLOCKSCALE_DEFAULT,
    BLOCKSCALE_TYPES,
    SCALE_A,
    SCALE_B,
    SCALED_OUTS,
    ScaleLayout,
    check_blockscale,
)
from ..kernels.epilogue import ACTIVATIONS
from ..kernels.wgmma_core import Sm90Config
from . import rule
from .operands import refuse_negated
from .typed import CUPY_NAMES, TORCH_NAMES, TypedEpilogue, decide_typed_epilogue

__all__ = [
    "BlockScaleDecision",
    "scale_strides",
    "operand_kind",
    "decide_blockscale",
    "decide_blockscale_epilogue",
    "check_c_input",
    "gemm_fp8_blockscale",
    "blockscale_launcher",
    "last_blockscale_launch",
]

#: the facts of the last launch (config, problem, kernel name, shape) for tests and tools
last_blockscale_launch: dict = {}

_TORCH_FP8 = {"float8_e4m3fn": "e4m3", "float8_e5m2": "e5m2"}


def scale_strides(
    which: ScaleLayout,
    rows: int,
    k: int,
    shape: Optional[Tuple[int, ...]],
    strides: Tuple[int, ...],
    dtype: str,
) -> Tuple[int, int]:
    """Check a scale tensor of operand ``which`` (``SCALE_A``: ``rows`` = M, ``SCALE_B``:
    ``rows`` = N) and return its layout's strides (elements) ``(s_rows, s_k)``.

    ``shape`` / ``strides`` (elements) / ``dtype`` (the array's dtype name) of the tensor;
    ``shape`` None means none was passed.  The tensor is ``(row blocks, ceil(k / 128))``
    float32 with any non-negative strides (row-major, MN-major as DeepGEMM stores
    ``scale_a``, expanded); a size-1 dimension broadcasts (stride 0): ``(1, 1)`` or a
    one-element tensor is a per-tensor scale read from device memory, ``(rows, 1)`` a
    per-row (per-token / per-channel block row) scale.

    >>> scale_strides(SCALE_A, 300, 1000, (300, 8), (1, 300), "float32")
    (1, 300)
    >>> scale_strides(SCALE_B, 300, 1000, (1, 1), (1, 1), "float32")
    (0, 0)
    """
    R, KB = which.shape(rows, k)
    name = f"scale_{which.name}"
    want = (
        f"({R}, {KB}) = (ceil({'M' if which.name == 'a' else 'N'} / {which.rows_per_block}), ceil(K / 128))"
    )
    if which.name == "a":
        want = f"({R}, {KB}) = (M, ceil(K / 128))"
    if shape is None:
        raise GemmInputError(
            f"gemm_fp8_blockscale: {name} is missing: pass a float32 tensor of shape {want} "
            "(or (1, 1) for a per-tensor scale)"
        )
    if dtype != "float32":
        raise GemmInputError(f"gemm_fp8_blockscale: {name} must be float32, got {dtype}: pass {name}.float()")
    if len(shape) == 0 or (len(shape) == 1 and shape[0] == 1):
        return (0, 0)
    if len(shape) != 2:
        raise GemmInputError(
            f"gemm_fp8_blockscale: {name} must be 2-D of shape {want}, got shape {tuple(shape)}"
        )
    out = []
    for d, (n, full) in enumerate(zip(shape, (R, KB))):
        if n == full:
            if strides[d] < 0:
                raise GemmInputError(
                    f"gemm_fp8_blockscale: {name} has a negative stride {strides[d]}: "
                    f"pass {name}.contiguous()"
                )
            out.append(int(strides[d]) if n > 1 else 0)
        elif n == 1:
            out.append(0)  # broadcast along this dimension
        else:
            raise GemmInputError(
                f"gemm_fp8_blockscale: {name} has shape {tuple(shape)}; it must be {want} "
                f"(or 1 in a dimension to broadcast)"
            )
    return (out[0], out[1])


def operand_kind(x_dtype: str, dtype: Optional[str]) -> str:
    """The 8-bit kind of an operand: a torch float8 dtype names itself, int8 data is
    ``"s8"``; raw uint8 bytes (e.g. CuPy, which has no fp8 dtype) need ``dtype=``
    (``"e4m3"``, ``"e5m2"`` or ``"u8"``).

    >>> operand_kind("float8_e4m3fn", None), operand_kind("uint8", "e5m2"), operand_kind("int8", None)
    ('e4m3', 'e5m2', 's8')
    """
    name = x_dtype.replace("torch.", "")
    own = _TORCH_FP8.get(name)
    if dtype is not None and dtype not in BLOCKSCALE_TYPES:
        raise GemmInputError(f"gemm_fp8_blockscale: dtype={dtype!r} must be one of {BLOCKSCALE_TYPES}")
    if own is not None:
        if dtype is not None and dtype != own:
            raise GemmInputError(f"gemm_fp8_blockscale: the operand is {x_dtype} but dtype={dtype!r}")
        return own
    if name == "int8":
        if dtype not in (None, "s8"):
            raise GemmInputError(f"gemm_fp8_blockscale: the operand is int8 but dtype={dtype!r}")
        return "s8"
    if name == "uint8":
        if dtype is None:
            raise GemmInputError(
                "gemm_fp8_blockscale: uint8 operands: pass dtype='e4m3' or 'e5m2' (fp8 bytes) "
                "or 'u8' (integers)"
            )
        return dtype
    raise GemmInputError(
        f"gemm_fp8_blockscale: operands must be 8-bit (torch float8_e4m3fn / float8_e5m2, int8, or raw "
        f"uint8 with dtype=), got {x_dtype}: quantize them first"
    )


@dataclass(frozen=True)
class BlockScaleDecision:
    """The kernel for one product: ``config``, ``problem``, the shape, ``k_units`` (K in
    16-bit units), the scale tensors' block counts ``kb``/``nb`` and the grid."""

    config: Sm90Config
    problem: GemmProblem
    m: int
    n: int
    k: int
    k_units: int
    kb: int
    nb: int
    grid: Tuple[int, int, int]


def decide_blockscale(
    m: int,
    n: int,
    k: int,
    dtype: str,
    out_dtype: Optional[str],
    sms: int,
    config: Optional[Sm90Config] = None,
) -> BlockScaleDecision:
    """The block-scaled kernel for ``C (m x n) = A (m x k) @ B (k x n)``: ``config`` or
    128 x 128 tiles (64 x 128 when ``m <= 64``: decode shapes), K a multiple of 16 (the
    tensor maps' rows; K tails within a 128-block are exact, the last block's scale).

    >>> d = decide_blockscale(4096, 7168, 2112, "e4m3", None, 132)
    >>> d.config.key(), d.kb, d.nb, d.k_units
    ('sm90_128x128x64_s6_g8_tma_ws', 17, 56, 1056)
    """
    if dtype not in BLOCKSCALE_TYPES:
        raise GemmInputError(f"gemm_fp8_blockscale: dtype={dtype!r} must be one of {BLOCKSCALE_TYPES}")
    prob = GemmProblem("k", "k", dtype, out_dtype or "bf16")
    if prob.out not in SCALED_OUTS:
        raise GemmInputError(
            f"gemm_fp8_blockscale: out_dtype={out_dtype!r} must be one of {SCALED_OUTS} (a scaled product)"
        )
    if k % 16:
        raise GemmInputError(
            f"gemm_fp8_blockscale: K = {k} must be a multiple of 16 (the tensor maps' 16-byte rows): "
            "pad K with zeros"
        )
    if config is None:
        config = (
            Sm90Config(bm=64, bn=128, stages=8, loader="tma", schedule="ws")
            if m <= 64
            else BLOCKSCALE_DEFAULT
        )
    if not isinstance(config, Sm90Config):
        raise GemmInputError(
            f"gemm_fp8_blockscale: config must be an Sm90Config (schedule='ws', bn=128), not {config!r}"
        )
    try:
        config.validate()
        check_blockscale(config, prob)
    except GemmConfigError as e:
        raise GemmInputError(f"gemm_fp8_blockscale: {e}") from None
    return BlockScaleDecision(
        config,
        prob,
        m,
        n,
        k,
        k // 2,
        SCALE_A.shape(m, k)[1],
        SCALE_B.shape(n, k)[0],
        rule.launch_grid(config, m, n, sms),
    )


def decide_blockscale_epilogue(
    decision: BlockScaleDecision,
    *,
    activation: Optional[str] = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    bias_dtype: Optional[str] = None,
    has_c: bool = False,
    bias_along: str = "n",
) -> TypedEpilogue:
    """The fused epilogue of a block-scaled product (the typed kernels' rule,
    :func:`~layoutproof.gpu.host.typed.decide_typed_epilogue`): ``config`` None for the
    plain kernel, else the :class:`~layoutproof.gpu.kernels.epilogue.EpilogueConfig` around
    the decided tile.  One ``alpha``: fp8 applies it as the kernel's per-tensor ``scale``
    (the epilogue's alpha is 1); int8 has no ``scale`` and takes it through the epilogue
    (``alpha_only`` without a C input).  ``activation`` one of ``relu``, ``silu``, ``gelu``
    (or None); ``bias_dtype`` (``"f32"``, ``"f16"``, ``"bf16"``; None: no bias) along
    ``bias_along`` (``"n"``: one per column, ``"m"``: one per row); ``beta`` needs a C input.

    >>> d = decide_blockscale(300, 520, 1040, "s8", "f32", 132)
    >>> e = decide_blockscale_epilogue(d, alpha=0.5)
    >>> e.config.key(), e.scale, e.alpha
    ('sm90_128x128x64_s6_g8_tma_ws_biasnone_alpha', 1.0, 0.5)
    >>> e = decide_blockscale_epilogue(decide_blockscale(300, 520, 1040, "e4m3", None, 132), alpha=0.5)
    >>> e.config is None, e.scale
    (True, 0.5)
    """
    if activation == "none":
        activation = None
    if activation is not None and activation not in ACTIVATIONS:
        raise GemmInputError(
            f"gemm_fp8_blockscale: activation={activation!r} is not one of {ACTIVATIONS[1:]}: pass one "
            "of them or None"
        )
    if bias_along not in ("n", "m"):
        raise GemmInputError(
            f"gemm_fp8_blockscale: bias_along={bias_along!r}: pass 'n' (one bias per column of C) or "
            "'m' (one per row)"
        )
    try:
        return decide_typed_epilogue(
            decision.config,
            decision.problem,
            activation=activation,
            alpha=alpha,
            beta=beta,
            bias_dtype=bias_dtype,
            has_c=has_c,
            bias_along=bias_along,
        )
    except GemmInputError as e:  # the typed rule's words, said for this call
        msg = str(e)
        raise GemmInputError("gemm_fp8_blockscale: " + msg.removeprefix("gemm: ")) from None


def check_c_input(
    shape: Tuple[int, ...], strides: Tuple[int, ...], itemsize: int, dtype: str, m: int, n: int, out: str
) -> None:
    """The C input of ``beta * c``: an ``m x n`` array of the output's type ``out`` (for
    bf16 a torch bfloat16 tensor or raw uint16 CuPy data), unit stride along N, rows at least
    ``n`` elements apart (``strides`` in bytes); else a GemmInputError naming what to pass.

    >>> check_c_input((4, 8), (16, 2), 2, "uint16", 4, 8, "bf16")
    """
    name = dtype.replace("torch.", "")
    ok = {TORCH_NAMES[out], CUPY_NAMES[out]}
    ob = OUT_DTYPES[out][1]
    if name not in ok:
        raise GemmInputError(
            f"gemm_fp8_blockscale: c is {name}, the output is {out}: pass c of the output's dtype "
            f"({' or '.join(sorted(ok))}), e.g. c.to(out's dtype)"
        )
    if tuple(shape) != (m, n):
        raise GemmInputError(
            f"gemm_fp8_blockscale: c has shape {tuple(shape)}: pass an {m} x {n} array (the output's shape)"
        )
    if itemsize != ob or (n > 1 and strides[1] != ob) or (m > 1 and (strides[0] % ob or strides[0] < n * ob)):
        raise GemmInputError(
            f"gemm_fp8_blockscale: c's strides {tuple(strides)} bytes: pass a row-major c (unit stride "
            "along N, rows apart by at least N elements), e.g. c.contiguous()"
        )


def _scale_facts(x: Any) -> Tuple[Optional[Tuple[int, ...]], Tuple[int, ...], str, int, int]:
    """(shape, strides in elements, dtype name, device pointer, bytes spanned) of a scale."""
    if x is None:
        return None, (), "", 0, 0
    if hasattr(x, "data_ptr") and hasattr(x, "element_size"):  # torch
        if not getattr(x, "is_cuda", False):
            raise GemmInputError("gemm_fp8_blockscale: a torch scale must be on a CUDA device")
        refuse_negated(x, "a scale", "gemm_fp8_blockscale")
        shape, st = tuple(int(s) for s in x.shape), tuple(int(s) for s in x.stride())
        dt, ptr, it = str(x.dtype).replace("torch.", ""), int(x.data_ptr()), int(x.element_size())
    elif hasattr(x, "data") and hasattr(x.data, "ptr") and hasattr(x, "strides"):  # CuPy
        it = int(x.itemsize)
        shape, st = tuple(int(s) for s in x.shape), tuple(int(s) // it for s in x.strides)
        dt, ptr = str(x.dtype), int(x.data.ptr)
    else:
        raise GemmInputError(
            f"gemm_fp8_blockscale: scales must be CuPy arrays or torch CUDA tensors, got {type(x).__name__}"
        )
    span = it * (1 + sum((n - 1) * abs(s) for n, s in zip(shape, st)))
    return shape, st, dt, ptr, span


def blockscale_launcher(
    a: Any,
    b: Any,
    scale_a: Any,
    scale_b: Any,
    *,
    out_dtype: str = "bf16",
    dtype: Optional[str] = None,
    alpha: float = 1.0,
    out: Any = None,
    config: Optional[Sm90Config] = None,
    bias: Any = None,
    activation: Optional[str] = None,
    beta: float = 0.0,
    c: Any = None,
    bias_along: str = "n",
    partials: int = 1,
    early_release: bool = False,
    late_scales: bool = False,
    prefetch_scales: bool = False,
) -> Tuple[Callable[[], None], Any]:
    """What :func:`gemm_fp8_blockscale` launches, prepared once: ``(launch, out)`` where
    ``launch()`` runs the product on the current stream (torch's for torch operands, else
    CuPy's) into ``out`` -- the same checks, the kernel generated, proven and compiled, the
    tensor maps encoded and the parameters packed (for benchmarks and repeated calls on
    the same arrays).  ``partials`` picks the consumer (1: one partial accumulator, waited
    for before each promotion; 2: two, k-tile kt's wgmmas running while kt - 1 is
    promoted) and ``early_release`` (a stage goes back to the producer before the
    promotion), ``late_scales`` and ``prefetch_scales`` (where the scale reads and
    products sit in the k-tile) the generator's variants
    (:func:`~layoutproof.gpu.kernels.blockscale.generate_blockscale`)."""
    from . import device
    from .cache import compile_kernel
    from .typed import array_facts, epilogue_args, typed_operand, typed_output, unit_tensor_map, vector_facts

    who = "gemm_fp8_blockscale"
    if partials not in (1, 2):
        raise GemmInputError(f"gemm_fp8_blockscale: partials={partials!r} must be 1 or 2")
    cupy = device.cupy()
    sa_, ta, ia, pa, torch_a = array_facts(a, who)
    sb_, tb, ib, pb, torch_b = array_facts(b, who)
    kind = operand_kind(str(getattr(a, "dtype", "")), dtype)
    kind_b = operand_kind(str(getattr(b, "dtype", "")), dtype or kind)
    if kind_b != kind:
        raise GemmInputError(f"gemm_fp8_blockscale: A is {kind} and B is {kind_b}: one fp8 type for both")
    m, k, lda = typed_operand("a", sa_, ta, ia, pa, kind)
    n, kb_, ldb = typed_operand("b", sb_, tb, ib, pb, kind)
    if kb_ != k:
        raise GemmInputError(
            f"gemm_fp8_blockscale: A is {m} x {k} but B is {kb_} x {n}: the K extents differ"
        )
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    d = decide_blockscale(m, n, k, kind, out_dtype, sms, config)
    fa = _scale_facts(scale_a)
    fb = _scale_facts(scale_b)
    sa_m, sa_k = scale_strides(SCALE_A, m, k, fa[0], fa[1], fa[2])
    sb_n, sb_k = scale_strides(SCALE_B, n, k, fb[0], fb[1], fb[2])
    ot = d.problem.out
    if bias_along not in ("n", "m"):  # before the bias's length is read along it
        decide_blockscale_epilogue(d, bias_along=bias_along)
    bias_ptr, bdt = None, None
    if bias is not None:
        along = f"bias_along={bias_along!r}: {'N' if bias_along == 'n' else 'M'}"
        bias_ptr, bdt = vector_facts(bias, n if bias_along == "n" else m, along, who)
    ep = decide_blockscale_epilogue(
        d,
        activation=activation,
        alpha=alpha,
        beta=beta,
        bias_dtype=bdt,
        has_c=c is not None,
        bias_along=bias_along,
    )
    if c is not None:
        sc_, tc_, ic_, _pc, _t = array_facts(c, who)
        check_c_input(sc_, tc_, ic_, str(getattr(c, "dtype", "")), m, n, ot)
    out, to, po, torch_o, ob = typed_output(out, a, torch_a, m, n, ot, "gemm_fp8_blockscale")
    from ..kernels.blockscale import generate_blockscale

    kern = generate_blockscale(
        d.config,
        d.problem,
        epilogue=ep.config,
        partials=partials,
        early_release=bool(early_release),
        late_scales=bool(late_scales),
        prefetch_scales=bool(prefetch_scales),
    )
    rk = compile_kernel(kern)

    def view(ptr: int, nbytes: int, owner: Any, dt: str, shape: Tuple[int, ...]) -> Any:
        mem = cupy.cuda.UnownedMemory(ptr, nbytes, owner)
        return cupy.ndarray(shape, dtype=dt, memptr=cupy.cuda.MemoryPointer(mem, 0))

    ldc = to[0] // ob
    c_arg = view(po, m * to[0], out, CUPY_NAMES[ot], (m, ldc))
    sa_arg = view(fa[3], fa[4], scale_a, "float32", (fa[4] // 4,))
    sb_arg = view(fb[3], fb[4], scale_b, "float32", (fb[4] // 4,))
    args: Tuple[Any, ...] = (
        unit_tensor_map(pa, m, k * ia, lda),
        unit_tensor_map(pb, n, k * ib, ldb),
        c_arg,
        np.int32(m),
        np.int32(n),
        np.int32(d.k_units),
        np.int64(ldc),
        np.int32(int(to[0] % 16 == 0 and po % 16 == 0)),
    )
    if any(v.name == "scale" for _, v in kern.ir.params):  # the fp8 kernels' per-tensor alpha
        args += (np.float32(ep.scale),)
    args += (
        sa_arg,
        sb_arg,
        np.int64(sa_m),
        np.int64(sa_k),
        np.int64(sb_n),
        np.int64(sb_k),
        np.int32(d.kb),
        np.int32(d.nb),
    )
    args += epilogue_args(ep, bias, bias_ptr, c, m, n, ot, None, who)
    facts = dict(
        config=d.config,
        problem=d.problem,
        epilogue=ep.config,
        kernel=kern.name,
        partials=partials,
        early_release=bool(early_release),
        late_scales=bool(late_scales),
        prefetch_scales=bool(prefetch_scales),
        m=m,
        n=n,
        k=k,
    )
    ext = None
    if torch_a or torch_b or torch_o:
        import torch

        ext = torch.cuda.current_stream().cuda_stream

    def launch() -> None:
        if ext is not None:
            with cupy.cuda.ExternalStream(ext):
                rk(d.grid, (kern.threads, 1, 1), args, shared_mem=kern.smem_bytes)
        else:
            rk(d.grid, (kern.threads, 1, 1), args, shared_mem=kern.smem_bytes)
        last_blockscale_launch.clear()
        last_blockscale_launch.update(facts)

    return launch, out


def gemm_fp8_blockscale(
    a: Any,
    b: Any,
    scale_a: Any,
    scale_b: Any,
    *,
    out_dtype: str = "bf16",
    dtype: Optional[str] = None,
    alpha: float = 1.0,
    out: Any = None,
    config: Optional[Sm90Config] = None,
    bias: Any = None,
    activation: Optional[str] = None,
    beta: float = 0.0,
    c: Any = None,
    bias_along: str = "n",
    partials: int = 1,
    early_release: bool = False,
    late_scales: bool = False,
    prefetch_scales: bool = False,
) -> Any:
    """``C = act(alpha * (A * scale_a) @ (B * scale_b) + beta * c + bias)`` with DeepGEMM's
    block scales.

    ``a``: ``M x K`` fp8, row-major (K contiguous); ``b``: ``K x N`` fp8 with K contiguous
    (``b_t.T`` for the ``N x K`` row-major weight ``b_t``, as ``torch._scaled_mm`` takes it);
    torch float8 tensors, or raw uint8 CuPy arrays with ``dtype="e4m3"``/``"e5m2"``; int8
    operands (``"s8"``, or uint8 with ``dtype="u8"``) take the same scales, their exact s32
    block sums promoted into f32.
    ``scale_a``: ``M x ceil(K/128)`` float32 (one per row and 128-wide K block; any strides,
    e.g. DeepGEMM's MN-major ``scale_a``); ``scale_b``: ``ceil(N/128) x ceil(K/128)``
    float32 (one per 128 x 128 block of B); a size-1 dimension broadcasts -- ``(1, 1)``
    tensors are per-tensor scales read from device memory.  Output ``out_dtype`` bf16
    (default), f16 or f32, a new ``M x N`` array of the operands' kind (bf16 from CuPy as
    raw uint16) or ``out``.

    The fused epilogue, in f32 on the promoted sums: ``bias`` a contiguous vector of N
    (``bias_along="n"``, one per column) or M (``"m"``, one per row) float32, float16 or
    bfloat16 values; ``activation`` ``"relu"``, ``"silu"`` or ``"gelu"``; ``beta * c`` with
    ``c`` an ``M x N`` row-major array of the output's dtype (``beta != 0`` needs ``c``; ``c``
    may be ``out``).  One ``alpha``: for fp8 the kernel's per-tensor scale, for int8 the
    epilogue's.  ``partials`` (1 or 2), ``early_release``, ``late_scales`` and
    ``prefetch_scales``: the consumer's variant (see :func:`blockscale_launcher`).
    Launched on the current stream (torch's for torch operands)."""
    launch, out = blockscale_launcher(
        a,
        b,
        scale_a,
        scale_b,
        out_dtype=out_dtype,
        dtype=dtype,
        alpha=alpha,
        out=out,
        config=config,
        bias=bias,
        activation=activation,
        beta=beta,
        c=c,
        bias_along=bias_along,
        partials=partials,
        early_release=early_release,
        late_scales=late_scales,
        prefetch_scales=prefetch_scales,
    )
    launch()
    return out
