"""The CuPy runtime of the proven GEMM: ``gemm``, ``gemm_plan`` and the autotuner.

``gemm(a, b)`` multiplies two 2-D CuPy arrays (f16 or bf16, any strides) with a kernel
that :func:`layoutproof.gpu.kernels.mma_sync.generate` built and proved.  The operands' memory
layouts pick the variant (row- or column-major A and B: the NT/TN/NN/TT table); an output
in column-major order is computed as the transposed product.  Operands that break the
kernel's 16-byte contract (a leading dimension not a multiple of 8 elements, a base
pointer not 16-byte aligned, a non-unit inner stride) are copied once into a padded,
aligned buffer -- a correct, slower path whose cost is one pass over that operand.  Small
products take neither: :mod:`~layoutproof.gpu.host.tiny` decides (a measured model of the
volume and the k-steps per warp) when one launch of the tiny kernel, which reads the
operands in place at any strides, is faster (:func:`plan_for`).

The host path, one way down: the operands are checked and described as plain data
(:mod:`~layoutproof.gpu.host.operands`), the rule decides the launch from that data and the
device's facts (:func:`~layoutproof.gpu.host.rule.decide`: kernel, staging, grid, workspace,
parameters), and a plan carries the decision out (:mod:`~layoutproof.gpu.host.plan`: compile
through :mod:`~layoutproof.gpu.host.cache`, allocate, encode, pack, launch).  ``gemm`` keeps
one plan per argument signature, so a repeated call costs one parameter update and one
``cuLaunchKernel`` on the current stream -- also inside a CUDA graph capture.  A plain 2-D
product (no epilogue) whose plan launches from base addresses alone (its ``direct()``: no
staged operand, no copied output) is kept once more under a short key of the arguments'
types, shapes, strides, dtypes, 16-byte alignment, devices and options: a repeated call
then costs that key, at most one allocation and the launch (:class:`_Direct`).

Caches: plans in memory (here); kernels and compiled modules in
:mod:`~layoutproof.gpu.host.cache`; autotuner results on disk (``autotune.json`` in
:func:`~layoutproof.gpu.host.cache.cache_dir`).  CuPy is imported only when a GPU function is
called (:mod:`~layoutproof.gpu.host.device`).
"""

from __future__ import annotations

import functools
import json
import sys
from dataclasses import asdict
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..config import GemmConfig, GemmProblem
from ..errors import GemmInputError
from ..kernels.splitk import SplitKConfig
from ..kernels.tiny import TinyConfig
from ..kernels.wgmma import Sm90Config
from . import device
from .cache import cache_dir
from .device import gpu_available, tma_available
from .operands import TF32_ONLY, check_typed_call
from .plan import BatchedGemmPlan, GemmPlan, last_launch
from .rule import hopper_candidates, short_a_rows, splitk_candidates, with_a_rows
from .streamk import HybridPlan, hybrid_plan
from .tiny import TINY_EPILOGUE, TinyPlan, wants_tiny
from .torch_op import HOT as _TORCH_HOT
from .torch_op import any_tensor as torch_op_any
from .torch_op import gemm_call as torch_op_call

__all__ = [
    "gemm",
    "gemm_plan",
    "GemmPlan",
    "BatchedGemmPlan",
    "TinyPlan",
    "plan_for",
    "autotune",
    "DEFAULT_CONFIGS",
    "gpu_available",
    "tma_available",
    "last_launch",
    "config_entry",
    "config_from_entry",
]

DEFAULT_CONFIG = GemmConfig()
# the autotuner's candidates (all proven when first generated): 64x64 warp tiles win;
# 16-warp / 2-block variants that cap registers at 128 spill and lose ILP, so they are not
# candidates (bench/RESULTS.md, "The mma.sync kernel, versions 1–3")
DEFAULT_CONFIGS: Tuple[GemmConfig, ...] = (
    GemmConfig(bm=128, bn=256, bk=32, warps_m=2, warps_n=4, stages=3),
    GemmConfig(bm=128, bn=256, bk=32, warps_m=2, warps_n=4, stages=4),
    GemmConfig(bm=256, bn=128, bk=32, warps_m=4, warps_n=2, stages=3),
    GemmConfig(bm=128, bn=256, bk=64, warps_m=2, warps_n=4, stages=3),
    GemmConfig(bm=256, bn=128, bk=64, warps_m=4, warps_n=2, stages=3),
    GemmConfig(bm=128, bn=128, bk=32, warps_m=2, warps_n=2, stages=4),
    GemmConfig(bm=64, bn=128, bk=32, warps_m=2, warps_n=2, stages=4, min_blocks=2),
    GemmConfig(bm=64, bn=64, bk=32, warps_m=2, warps_n=2, stages=4),
)


@functools.cache
def _sm90_configs() -> Tuple[Any, ...]:
    """The wgmma candidates (TMA first where cuda-python can encode tensor maps); decided
    once per process, not on every gemm call."""
    cands: Tuple[Any, ...] = (
        Sm90Config(bm=128, bn=256, stages=4),
        Sm90Config(bm=128, bn=256, stages=3),
        Sm90Config(bm=256, bn=128, stages=4),
        Sm90Config(bm=128, bn=128, stages=6),
    )
    if device.tma_available():
        cands = (
            Sm90Config(bm=128, bn=256, stages=4, loader="tma", schedule="ws"),
            Sm90Config(bm=128, bn=256, stages=4, loader="tma", schedule="ws", cluster=2),
            Sm90Config(bm=128, bn=128, stages=6, loader="tma", schedule="ws"),
            Sm90Config(bm=128, bn=256, stages=4, loader="tma"),
            Sm90Config(bm=256, bn=128, stages=4, loader="tma"),
        ) + cands
    # the default rule's candidates too: tuning never picks worse than the rule could
    return cands + tuple(c for c in hopper_candidates(device.tma_available()) if c not in cands)


_TUNED: Dict[Tuple[Any, ...], Any] = {}  # -> GemmConfig or Sm90Config


# ============================================================================ plans
_PLANS: Dict[Any, Any] = {}  # -> GemmPlan or BatchedGemmPlan
_PLAN_CAP = 1024


def gemm_plan(
    a: Any,
    b: Any,
    out: Any = None,
    *,
    config: Any = None,
    out_dtype: Optional[str] = None,
    dtype: Optional[str] = None,
    path: str = "auto",
    bias: Any = None,
    activation: Optional[str] = None,
    bias_along: str = "n",
    c: Any = None,
) -> "GemmPlan | BatchedGemmPlan":
    """A :class:`GemmPlan` for operands like ``a`` and ``b`` (and ``out``, ``bias``, ``c``):
    validated, compiled and packed once; call it as ``plan(a, b)``, ``plan(a, b, out)`` or
    ``plan(a, b, out, bias)`` (with ``c``: ``plan(a, b, out, bias, c=c, alpha=..., beta=...)``,
    ``c`` like the plan's).  For a 3-D operand: a :class:`BatchedGemmPlan`.

    Arguments as :func:`gemm`, which keeps such plans itself (keyed by the arguments'
    shapes, strides, dtypes, alignment, device and options)."""
    if torch_op_any(a, b, out, bias, c):
        raise GemmInputError(
            "gemm_plan: takes CuPy arrays; for torch tensors call gemm (it keeps a plan per "
            "argument signature), or torch.ops.layoutproof.gemm under torch.compile"
        )
    batched = getattr(a, "ndim", 2) == 3 or getattr(b, "ndim", 2) == 3
    plan_type = BatchedGemmPlan if batched else GemmPlan
    return plan_type(
        a,
        b,
        out,
        config=config,
        out_dtype=out_dtype,
        dtype=dtype,
        path=path,
        bias=bias,
        activation=activation,
        bias_along=bias_along,
        c=c,
        alpha_beta=c is not None,
    )


def plan_for(
    a: Any,
    b: Any,
    out: Any = None,
    *,
    config: Any = None,
    out_dtype: Optional[str] = None,
    dtype: Optional[str] = None,
    path: str = "auto",
    bias: Any = None,
    activation: Optional[str] = None,
    bias_along: str = "n",
    c: Any = None,
) -> "GemmPlan | BatchedGemmPlan | TinyPlan | HybridPlan":
    """The plan :func:`gemm` keeps for these arguments: a :class:`TinyPlan` where the tiny
    path decides so (2-D, no configuration asked for, and
    :func:`~layoutproof.gpu.host.tiny.tiny_config` picks it -- with a fused epilogue only
    where :data:`~layoutproof.gpu.host.tiny.TINY_EPILOGUE` says so -- or ``path="tiny"``),
    a :class:`~layoutproof.gpu.host.streamk.HybridPlan` where the wave model takes
    data-parallel rows plus a split-K tail (:func:`~layoutproof.gpu.host.streamk.hybrid_plan`),
    else :func:`gemm_plan`'s."""
    if isinstance(config, TinyConfig):  # the tiny kernel, with this configuration
        if path not in ("auto", "tiny") or getattr(a, "ndim", 2) != 2 or getattr(b, "ndim", 2) != 2:
            raise GemmInputError(
                f"gemm: a TinyConfig is the tiny kernel's, for 2-D operands with path='auto' or "
                f"'tiny' (got path={path!r}, {getattr(a, 'ndim', 2)}-D a, {getattr(b, 'ndim', 2)}-D b)"
            )
    elif path == "tiny" and config is not None:
        raise GemmInputError("gemm: path='tiny' takes no config (it has its own): drop one of them")
    epilogue = bias is not None or c is not None or activation is not None
    tiny_cfg = config if isinstance(config, TinyConfig) else None
    if tiny_cfg is not None or (config is None and (path == "tiny" or not epilogue or TINY_EPILOGUE)):
        cfg = tiny_cfg or wants_tiny(a, b, path)
        if cfg is not None:
            return TinyPlan(
                a,
                b,
                out,
                config=cfg,
                out_dtype=out_dtype,
                dtype=dtype,
                bias=bias,
                activation=activation,
                bias_along=bias_along,
                c=c,
            )
    if getattr(a, "ndim", 2) == 2 and getattr(b, "ndim", 2) == 2:
        hp = hybrid_plan(
            a,
            b,
            out,
            config=config,
            out_dtype=out_dtype,
            dtype=dtype,
            path=path,
            bias=bias,
            activation=activation,
            c=c,
        )
        if hp is not None:
            return hp
    return gemm_plan(
        a,
        b,
        out,
        config=config,
        out_dtype=out_dtype,
        dtype=dtype,
        path=path,
        bias=bias,
        activation=activation,
        bias_along=bias_along,
        c=c,
    )


def _remember(key: Any, plan: Any) -> None:
    """Keep ``plan`` under ``key`` (None: not kept), the oldest plan dropped at the cap."""
    if key is None:
        return
    if len(_PLANS) >= _PLAN_CAP:
        _PLANS.pop(next(iter(_PLANS)))
    try:
        _PLANS[key] = plan
    except TypeError:  # an unhashable option
        pass


def _plan_key(a: Any, b: Any, out: Any, config: Any, out_dtype: Any, dtype: Any, path: Any, dev: int) -> Any:
    ad, bd = a.data, b.data
    ko = (
        None
        if out is None
        else (type(out), out.shape, out.strides, out.dtype, out.data.ptr % 16 == 0, out.data.device_id)
    )
    return (
        type(a),
        a.shape,
        a.strides,
        a.dtype,
        ad.ptr % 16 == 0,
        ad.device_id,
        type(b),
        b.shape,
        b.strides,
        b.dtype,
        bd.ptr % 16 == 0,
        bd.device_id,
        ko,
        config,
        out_dtype,
        dtype,
        path,
        dev,
    )


# ============================================================================ direct launches
class _Direct:
    """The plain 2-D calls whose plans launch from base addresses alone: each kept under the
    key :func:`_direct_key` makes of the call (everything its plan depends on), as a
    function ``run(a, b, out) -> out`` (:func:`_direct_run`) that allocates a new output
    where the call has none, reads the current stream's handle and launches.  ``types``:
    the types of ``a`` with an entry (a call whose ``a`` is of none of them, e.g. a torch
    tensor, is not looked up); ``device``: CuPy's ``getDevice`` (a part of every key);
    ``owner``: the list :mod:`~layoutproof.gpu.host.device` holds CuPy in when the entries
    were made (a test that stands another CuPy in replaces that list: the entries are then
    not used, and dropped at the next one kept)."""

    __slots__ = ("entries", "types", "device", "owner")

    def __init__(self) -> None:
        self.reset(None)

    def reset(self, owner: Any) -> None:
        self.entries: Dict[Any, Any] = {}
        self.types: frozenset = frozenset()
        self.device: Any = None
        self.owner: Any = owner


_DIRECT = _Direct()
#: fused bias + activation calls (no alpha/beta, no C input) of a kept signature launch from
#: base addresses too (:meth:`GemmPlan.direct_bias`); False: they take the full path every
#: call (a switch for benchmarks that time both)
FUSED_DIRECT = True


def _direct_key(
    dc: _Direct,
    a: Any,
    b: Any,
    out: Any,
    config: Any,
    out_dtype: Any,
    dtype: Any,
    path: Any,
    bias_along: Any,
) -> Any:
    """The key of a plain call (no bias, activation, C input; alpha 1, beta 0): each
    array's type, shape, strides, dtype, base address modulo 16 and device, out's or None,
    the options, and the current device.  Raises (AttributeError, TypeError) for what is
    not an array or not hashable: the caller then takes the full path."""
    ad, bd = a.data, b.data
    if out is None:
        ko: Any = None
    else:
        od = out.data
        ko = (type(out), out.shape, out.strides, out.dtype, od.ptr & 15, od.device_id)
    return (
        type(a),
        a.shape,
        a.strides,
        a.dtype,
        ad.ptr & 15,
        ad.device_id,
        type(b),
        b.shape,
        b.strides,
        b.dtype,
        bd.ptr & 15,
        bd.device_id,
        ko,
        config,
        out_dtype,
        dtype,
        path,
        bias_along,
        dc.device(),
    )


def _direct_run(launch: Any, stream: Any, alloc: Any) -> Any:
    """``run(a, b, out) -> out`` for a kept plan's ``launch(a_ptr, b_ptr, c_ptr,
    stream_ptr)``: ``alloc()`` makes the new output where the entry is for ``out=None``
    (None: the entry is for a given output), ``stream()`` is CuPy's current stream."""
    if alloc is None:

        def run(a: Any, b: Any, out: Any) -> Any:
            launch(a.data.ptr, b.data.ptr, out.data.ptr, stream().ptr)
            return out

        return run

    def run_new(a: Any, b: Any, out: Any) -> Any:
        o = alloc()
        launch(a.data.ptr, b.data.ptr, o.data.ptr, stream().ptr)
        return o

    return run_new


def _direct_run_bias(launch: Any, stream: Any, alloc: Any) -> Any:
    """:func:`_direct_run` for a fused bias + activation plan's ``launch(a_ptr, b_ptr, c_ptr,
    bias_ptr, stream_ptr)``: ``run(a, b, out, bias) -> out`` (``bias`` None: the plan's
    zero vector)."""
    if alloc is None:

        def run(a: Any, b: Any, out: Any, bias: Any) -> Any:
            launch(a.data.ptr, b.data.ptr, out.data.ptr, 0 if bias is None else bias.data.ptr, stream().ptr)
            return out

        return run

    def run_new(a: Any, b: Any, out: Any, bias: Any) -> Any:
        o = alloc()
        launch(a.data.ptr, b.data.ptr, o.data.ptr, 0 if bias is None else bias.data.ptr, stream().ptr)
        return o

    return run_new


def _new_out_like(cp: Any, res: Any) -> Any:
    """A function making a new array of ``res``'s shape, strides and dtype (C or F order)
    as cheaply as CuPy allows, checked once against ``res``; None where neither order
    gives ``res``'s strides or no constructor does."""
    try:
        shape, strides, dt = tuple(res.shape), tuple(res.strides), res.dtype
        it = dt.itemsize
    except AttributeError:
        return None
    c_strides: List[int] = []
    f_strides: List[int] = []
    acc = it
    for n in reversed(shape):
        c_strides.insert(0, acc)
        acc *= n
    acc = it
    for n in shape:
        f_strides.append(acc)
        acc *= n
    if strides == tuple(c_strides):
        order = "C"
    elif strides == tuple(f_strides):
        order = "F"
    else:
        return None
    makers = []
    nd = getattr(cp, "ndarray", None)
    if nd is not None:  # the class itself, positional arguments only (shape, dtype, memptr,
        # strides, order): cupy.empty is a Python function around it, and keyword arguments
        # cost a dict per call (H200: 3.2 us against cupy.empty's 3.8)
        makers.append(
            functools.partial(nd, shape, dt)
            if order == "C"
            else functools.partial(nd, shape, dt, None, None, "F")
        )
    makers.append(functools.partial(cp.empty, shape, dt, order=order))
    for mk in makers:
        try:
            x = mk()
            if tuple(x.shape) == shape and tuple(x.strides) == strides and x.dtype == dt:
                return mk
        except Exception:  # a constructor of another signature: the next one
            continue
    return None


def _remember_direct(
    dc: _Direct, key: Any, plan: Any, out: Any, res: Any, cp: Any, fused: bool = False
) -> None:
    """Keep ``plan``'s direct launch under ``key`` where the plan offers one (and, for a
    call without ``out``, a new output like ``res`` can be made); ``fused``: the launch
    with the bias pointer (:meth:`GemmPlan.direct_bias`)."""
    direct = getattr(plan, "direct_bias" if fused else "direct", None)
    launch = direct() if direct is not None else None
    if launch is None:
        return
    alloc = None
    if out is None:
        alloc = _new_out_like(cp, res)
        if alloc is None:
            return
    if len(dc.entries) >= _PLAN_CAP:
        dc.entries.pop(next(iter(dc.entries)))
    make = _direct_run_bias if fused else _direct_run
    dc.entries[key] = make(launch, cp.cuda.get_current_stream, alloc)
    dc.types = dc.types | {key[0]}


# ============================================================================ gemm
def _gemm_batched(a: Any, b: Any, out: Any, bias: Any, c: Any, ab: bool, opts: Dict[str, Any]) -> Any:
    """The cached :class:`BatchedGemmPlan` for a :func:`gemm` call with a 3-D operand."""
    try:
        key: Any = ("batched", BatchedGemmPlan._signature(a, b, out, bias, c)) + tuple(opts.values())
        key = key + (ab, device._CUPY[0].cuda.runtime.getDevice() if device._CUPY else None)
        plan = _PLANS.get(key)
    except Exception:  # not arrays, or an unhashable option: the plan's checks say
        key = plan = None
    if plan is None:
        plan = gemm_plan(a, b, out, bias=bias, c=c, **opts)
        if key is not None and key[-1] is None:
            key = key[:-1] + (plan._cupy.cuda.runtime.getDevice(),)
        _remember(key, plan)
    return plan


def gemm(
    a: Any,
    b: Any,
    out: Any = None,
    *,
    config: Any = None,
    out_dtype: Optional[str] = None,
    dtype: Optional[str] = None,
    path: str = "auto",
    bias: Any = None,
    activation: Optional[str] = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    c: Any = None,
    bias_along: str = "n",
    precision: Optional[str] = None,
) -> Any:
    """C = A @ B on the GPU with a proven tensor-core kernel (f32 accumulation): the wgmma
    kernel (:mod:`~layoutproof.gpu.kernels.wgmma`) on sm_90, the mma.sync kernel
    (:mod:`~layoutproof.gpu.kernels.mma_sync`) elsewhere or when asked for.

    The first call for a new argument signature builds a :class:`GemmPlan` (checks, kernel
    choice, generation and proofs or the disk cache, compilation); later calls with the same
    shapes, strides, dtypes, alignment and options reuse it and cost one parameter update and
    one launch.

    Args:
        a: (M, K) cupy array, float16 or bfloat16, any strides.
        b: (K, N) cupy array of the same dtype.
        out: optional (M, N) result array (row- or column-major), of ``out_dtype``.
        config: a :class:`GemmConfig`, ``Sm90Config`` or ``TinyConfig``, ``"auto"`` (the autotuner's choice
            for this shape, tuned on first use and kept on disk) or None (the default: the
            :func:`~layoutproof.gpu.host.rule.choose_config` rule, nothing timed).
        out_dtype: ``"f16"``, ``"bf16"`` or ``"f32"``; default: the input dtype (or out's).
        dtype: reinterpret 2-byte arrays as this dtype (``"bf16"`` where CuPy has no
            bfloat16 dtype: pass the raw bits as uint16).
        path: ``"auto"`` (the tiny kernel for small products, :mod:`~layoutproof.gpu.host.tiny`;
            else wgmma on compute capability 9.0, else mma.sync), ``"wgmma"``,
            ``"mma.sync"`` or ``"tiny"`` (the one-launch kernel that reads the operands in
            place, at any size, with the fused epilogue too); a GemmConfig selects
            mma.sync, an Sm90Config wgmma, a TinyConfig the tiny kernel.
        bias: optional vector of N elements (float32, float16 or bfloat16; M elements with
            ``bias_along="m"``): ``C = act(A @ B + bias)``, fused in the warp-specialized
            TMA kernel (``layoutproof.gpu.kernels.epilogue``; sm_90 with cuda-python), converted to
            and added in f32 before the output conversion.  Batched: one vector for every
            batch.
        activation: ``"relu"``, ``"silu"``, ``"gelu"`` (erf form) or ``"none"``, fused the
            same way (with or without a bias).
        alpha: the scale of the product in ``C = act(alpha * A @ B + beta * c + bias)``,
            fused the same way.
        beta: the scale of ``c`` in that sum.
        c: an (M, N) row-major array of the output's dtype, added as ``beta * c`` (it may be
            the output array itself).  Batched: (batch, M, N) with any batch stride, or one
            (M, N) / (1, M, N) array shared by every batch; fused in the one launch.
        bias_along: ``"n"`` (the default: ``bias[n]`` added to column n) or ``"m"``
            (``bias[m]`` added to row m).
        precision: ``"tf32"`` runs float32 operands on the tensor cores as tf32 (10-bit
            mantissa products, f32 accumulation) -- the only tensor-core path for float32,
            so it is asked for, never implied (``dtype="tf32"`` says the same).

    Other number types (:func:`~layoutproof.gpu.host.typed.typed_gemm`, 2-D, A row-major and
    B column-major -- K contiguous in both, as the hardware reads them): float32 with
    ``precision="tf32"``; int8 (``dtype="s8"``, implied by an int8 array) and uint8
    (``dtype="u8"``) to s32; fp8 as raw bytes with ``dtype="e4m3"`` or ``"e5m2"`` (CuPy has
    no fp8 dtype; torch float8 tensors say it themselves), f32 accumulation, output bf16
    (default), f16 or f32, ``alpha`` the per-tensor scale ``scale_a * scale_b``.

    3-D operands (batch, M, K) and (batch, K, N) give (batch, M, N) (numpy ``matmul``
    broadcasting: a 2-D operand or a batch extent of 1 is shared): see
    :class:`BatchedGemmPlan`.

    torch tensors (CUDA, any strides) in place of the arrays give a torch tensor, computed
    in the tensors' own memory on torch's current stream; under ``torch.compile`` the call
    is the operator ``torch.ops.layoutproof.gemm``
    (:mod:`~layoutproof.gpu.host.torch_op`).

    Raises:
        GemmInputError: wrong dtype, shape, device or layout (for torch tensors also a CPU
            tensor, tensors on two devices, another CuPy stream current); NoGPUError
            without CuPy/GPU.
    """
    tmod = sys.modules.get("torch")
    if tmod is not None and type(a) is tmod.Tensor and precision is None:  # the torch route at once
        if _TORCH_HOT:  # the native front serves a kept signature (else NotImplemented)
            hot, compiling = _TORCH_HOT
            if not compiling():
                r = hot(
                    a, b, out, config, out_dtype, dtype, path, bias, activation, alpha, beta, c, bias_along
                )
                if r is not NotImplemented:
                    return r
        return torch_op_call(
            a, b, out, config, out_dtype, dtype, path, bias, activation, alpha, beta, c, bias_along
        )
    dc = _DIRECT
    if (
        type(a) in dc.types
        and dc.owner is device._CUPY
        and bias is None
        and c is None
        and activation is None
        and precision is None
        and alpha == 1
        and beta == 0
    ):  # a plain call of a kept signature: its plan's launch from base addresses
        try:
            run = dc.entries.get(_direct_key(dc, a, b, out, config, out_dtype, dtype, path, bias_along))
        except Exception:  # not arrays, or an unhashable option: the full path says
            run = None
        if run is not None:
            return run(a, b, out)
    elif (
        FUSED_DIRECT
        and (activation is not None or bias is not None)
        and c is None
        and precision is None
        and alpha == 1
        and beta == 0
        and type(a) in dc.types
        and dc.owner is device._CUPY
    ):  # a fused bias + activation call of a kept signature: the same, with the bias pointer
        try:
            run = dc.entries.get(
                _fused_key(dc, a, b, out, config, out_dtype, dtype, path, bias_along, activation, bias)
            )
        except Exception:  # not arrays, or an unhashable option: the full path says
            run = None
        if run is not None:
            return run(a, b, out, bias)
    if precision is not None:
        if precision != "tf32" or dtype not in (None, "tf32"):
            raise GemmInputError(
                f"gemm: precision={precision!r} with dtype={dtype!r}: precision='tf32' (float32 "
                "operands as tf32) is the one choice, and it takes no other dtype"
            )
        dtype = "tf32"
    if torch_op_any(a, b, out, bias, c):  # torch tensors: the same plans, torch in and out
        return torch_op_call(
            a, b, out, config, out_dtype, dtype, path, bias, activation, alpha, beta, c, bias_along
        )
    typed = _typed_kind(a, dtype)
    if typed is not None:
        return _typed_call(a, b, out, typed, out_dtype, config, bias, activation, alpha, beta, c, bias_along)
    plan = None
    key = None

    ab = c is not None or beta != 0 or alpha != 1
    if ab and c is None:
        raise GemmInputError(
            "gemm: beta != 0 or alpha != 1 needs the C input c (pass beta=0 with c for alpha alone)"
        )
    opts: Dict[str, Any] = dict(
        config=config,
        out_dtype=out_dtype,
        dtype=dtype,
        path=path,
        activation=activation,
        bias_along=bias_along,
    )
    if getattr(a, "ndim", 2) == 3 or getattr(b, "ndim", 2) == 3:
        bplan = _gemm_batched(a, b, out, bias, c, ab, opts)
        res = bplan._run(a, b, out, bias, c, alpha, beta)
        if not ab and bias is None and activation is None:
            _keep_direct(a, b, out, res, bplan, config, out_dtype, dtype, path, bias_along)
        elif not ab:
            _keep_direct(
                a, b, out, res, bplan, config, out_dtype, dtype, path, bias_along, (activation, bias)
            )
        return res

    def key_on(dev: int) -> Any:
        ep = None
        if bias is not None or activation is not None or ab:
            bs = (
                None
                if bias is None
                else (type(bias), bias.shape, bias.strides, bias.dtype, bias.data.device_id)
            )
            cs = None if c is None else (type(c), c.shape, c.strides, c.dtype, c.data.device_id)
            ep = (activation, bs, cs, bias_along)
        return _plan_key(a, b, out, config, out_dtype, dtype, path, dev) + (ep,)

    if device._CUPY:
        try:
            key = key_on(device._CUPY[0].cuda.runtime.getDevice())
            plan = _PLANS.get(key)
        except Exception:  # not arrays, or an unhashable option: the full checks below say
            key = plan = None
    if plan is None:
        plan = plan_for(a, b, out, bias=bias, c=c, **opts)
        if key is None:
            try:
                key = key_on(plan._cupy.cuda.runtime.getDevice())
            except Exception:
                key = None
        _remember(key, plan)
    res = plan._run(a, b, out, bias, c, alpha, beta)
    if not ab and activation is None and bias is None:
        _keep_direct(a, b, out, res, plan, config, out_dtype, dtype, path, bias_along)
    elif not ab:
        _keep_direct(a, b, out, res, plan, config, out_dtype, dtype, path, bias_along, (activation, bias))
    return res


def _fused_key(
    dc: _Direct,
    a: Any,
    b: Any,
    out: Any,
    config: Any,
    out_dtype: Any,
    dtype: Any,
    path: Any,
    bias_along: Any,
    activation: Optional[str],
    bias: Any,
) -> Any:
    """:func:`_direct_key` of a fused bias + activation call: the activation and the bias's
    type, shape, strides, dtype and device added (its base address is the kernel's to check:
    it reads pairs only where they are aligned)."""
    bk = None if bias is None else (type(bias), bias.shape, bias.strides, bias.dtype, bias.data.device_id)
    return _direct_key(dc, a, b, out, config, out_dtype, dtype, path, bias_along) + (activation, bk)


def _keep_direct(
    a: Any,
    b: Any,
    out: Any,
    res: Any,
    plan: Any,
    config: Any,
    out_dtype: Any,
    dtype: Any,
    path: Any,
    bias_along: Any,
    epilogue: Optional[Tuple[Optional[str], Any]] = None,
) -> None:
    """After a plain call (2-D, or batched) through the full path, or a 2-D call with the
    fused bias + activation (``epilogue = (activation, bias)``): keep its plan's direct
    launch (:class:`_Direct`) where it offers one."""
    dc = _DIRECT
    try:
        cp = plan._cupy
        if dc.owner is not device._CUPY:
            dc.reset(device._CUPY)
        if dc.device is None:
            dc.device = cp.cuda.runtime.getDevice
        if epilogue is None:
            key = _direct_key(dc, a, b, out, config, out_dtype, dtype, path, bias_along)
        else:
            key = _fused_key(dc, a, b, out, config, out_dtype, dtype, path, bias_along, *epilogue)
        if key in dc.entries:
            return
    except Exception:  # not arrays, or an unhashable option: nothing kept
        return
    _remember_direct(dc, key, plan, out, res, cp, epilogue is not None)


_TYPED_NAMES = ("tf32", "e4m3", "e5m2", "s8", "u8")


def _typed_kind(a: Any, dtype: Optional[str]) -> Optional[str]:
    """The typed kernels' name for CuPy operands (None: the f16/bf16 plans); refuses float32
    without tf32 and uint8 bytes that do not say what they hold."""
    if dtype in _TYPED_NAMES:
        return dtype
    if dtype is not None:
        return None  # "bf16" / "f16" reinterpretations: the plans check them
    name = str(getattr(a, "dtype", ""))
    if name == "float32":
        raise GemmInputError(TF32_ONLY)
    if name == "int8":
        return "s8"
    if name == "uint8":
        raise GemmInputError(
            "gemm: uint8 operands: pass dtype='u8' (integers to s32) or dtype='e4m3'/'e5m2' "
            "(fp8 bytes; CuPy has no fp8 dtype)"
        )
    return None


def _typed_call(
    a: Any,
    b: Any,
    out: Any,
    typed: str,
    out_dtype: Optional[str],
    config: Any,
    bias: Any,
    activation: Optional[str],
    alpha: float,
    beta: float,
    c: Any,
    bias_along: str,
) -> Any:
    from .typed import typed_gemm

    shape = lambda x: tuple(getattr(x, "shape", ()))  # noqa: E731
    check_typed_call(typed, shape(a), shape(b), bias, c, activation, alpha, beta)
    return typed_gemm(
        a,
        b,
        dtype=typed,
        out_dtype=out_dtype,
        scale=float(alpha),
        out=out,
        config=config,
        bias=bias,
        activation=activation,
        beta=float(beta),
        c=c,
        bias_along=bias_along,
    )


# ============================================================================ autotuner
def _time_kernel(fn: Any, reps: int = 10) -> float:
    cupy = device.cupy()
    fn()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(3):
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / reps)
    return sorted(times)[1]


def _bucket(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


def config_entry(cfg: Any) -> Dict[str, Any]:
    """The JSON form of a configuration in ``autotune.json`` (its fields and its kind)."""
    kind = type(cfg).__name__
    kinds = {"GemmConfig": "sm80", "Sm90Config": "sm90", "SplitKConfig": "splitk"}
    if kind not in kinds:
        raise GemmInputError(f"autotune: cannot store a {kind}")
    return dict(asdict(cfg), kind=kinds[kind])


def config_from_entry(entry: Any) -> Optional[Any]:
    """The configuration an ``autotune.json`` entry describes, or None for an entry this
    version cannot read (then the shape is tuned again)."""
    try:
        d = dict(entry)
        kind = d.pop("kind", "sm80")
        if isinstance(d.get("swizzle"), list):
            d["swizzle"] = tuple(d["swizzle"])
        if kind == "splitk":
            return SplitKConfig(Sm90Config(**d["base"]), int(d["splits"]), str(d.get("reduction", "kernel")))
        if kind == "sm90":
            return Sm90Config(**d)
        if kind == "sm80":
            return GemmConfig(**d)
    except (TypeError, ValueError, KeyError):  # written by another version
        return None
    return None


def tune_candidates(m: int, n: int, k: int, prob: GemmProblem, path: str, tma_sms: int) -> Tuple[Any, ...]:
    """The configurations :func:`autotune` times for an ``m x n x k`` product: the mma.sync
    defaults, or with ``path="wgmma"`` the Hopper candidates and, where TMA can run
    (``tma_sms``: the SM count, 0 without TMA), the split-K variants the rule could pick
    and, for an output of at most 32 rows, each 64-row one with A's box cut to the rows of
    M's bucket (the bucket never exceeds them)."""
    if path != "wgmma":
        return tuple(DEFAULT_CONFIGS)
    configs = tuple(_sm90_configs())
    if tma_sms:
        configs += splitk_candidates(m, n, k, hopper_candidates(True), tma_sms)
        rows = short_a_rows(_bucket(m), prob)
        if rows is not None:
            configs += tuple(c for c in (with_a_rows(x, rows) for x in configs) if c is not None)
    return configs


def autotune(
    m: int,
    n: int,
    k: int,
    *,
    problem: Optional[GemmProblem] = None,
    configs: Optional[Sequence[Any]] = None,
    reps: int = 10,
    verbose: bool = False,
    path: str = "mma.sync",
) -> Any:
    """The fastest config for this shape (rounded up to powers of two) and variant, timed
    on the current device with fresh random operands; remembered in memory and on disk.
    ``path="wgmma"`` tunes the Hopper kernel's :class:`Sm90Config` candidates and, with
    TMA, the split-K and short-box variants (:func:`tune_candidates`)."""
    cupy = device.cupy()
    prob = problem or GemmProblem()
    if configs is None:
        tma = path == "wgmma" and device.tma_available()
        configs = tune_candidates(m, n, k, prob, path, device.sm_count(cupy) if tma else 0)
    dev = device.device_facts(cupy)[0]
    key = (dev, path, prob, _bucket(m), _bucket(n), _bucket(k))
    if key in _TUNED:
        return _TUNED[key]
    tpath = cache_dir() / "autotune.json"
    skey = "|".join(map(str, (dev, path, prob.key(), *key[3:])))
    try:
        table = json.loads(tpath.read_text()) if tpath.exists() else {}
    except (OSError, ValueError):
        table = {}
    if skey in table:
        cfg = config_from_entry(table[skey])
        if cfg is not None and cfg in configs:
            _TUNED[key] = cfg
            return cfg
    rng = cupy.random.default_rng(1234)
    dt = cupy.float16
    a = rng.standard_normal((m, k), dtype=cupy.float32).astype(dt)
    b = rng.standard_normal((k, n), dtype=cupy.float32).astype(dt)
    if prob.a_major == "m":
        a = cupy.asfortranarray(a)
    if prob.b_major == "k":
        b = cupy.asfortranarray(b)
    best: Optional[Tuple[float, Any]] = None
    results: List[Tuple[float, Any]] = []
    for cfg in configs:
        try:
            t = _time_kernel(lambda c=cfg: gemm(a, b, config=c, dtype=prob.dtype, out_dtype=prob.out), reps)
        except Exception as e:  # a config that cannot run here is skipped, and said so
            if verbose:
                print(f"autotune: {cfg.key()} skipped: {e}")
            continue
        results.append((t, cfg))
        if verbose:
            print(f"autotune: {cfg.key()}: {t * 1e3:.1f} us")
        if best is None or t < best[0]:
            best = (t, cfg)
    if best is None:
        raise GemmInputError("autotune: no configuration ran")
    _TUNED[key] = best[1]
    table[skey] = config_entry(best[1])
    try:
        tpath.parent.mkdir(parents=True, exist_ok=True)
        tpath.write_text(json.dumps(table, indent=1))
    except OSError:
        pass
    return best[1]
