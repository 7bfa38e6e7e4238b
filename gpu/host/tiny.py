"""The tiny-shape path of ``gemm``: one launch, no staging, for products too small to fill
a tiled kernel.

:func:`tiny_config` decides (a model with measured thresholds, not a table of shapes);
:class:`TinyPlan` carries the launch out: the kernel of :mod:`layoutproof.gpu.kernels.tiny`
reads A and B in place at their element strides (any strides, any base alignment) and
writes C in place at its own, so no operand is copied into a padded buffer and the call is
one ``cuLaunchKernel``.

The model (GPU time per call on an H200, f16, from ``bench/gemm_torch.py --tiny --sweep
default``).  The tiled plans cost a fixed 3-3.5 us on a small aligned product (the Hopper
kernel's prologue and epilogue: 16x16x16 2.9 us, 64^3 3.0, 128^3 3.2) plus about 4.5 us
when an operand breaks the 16-byte contract and is first copied into a padded buffer
(7x13x17 7.3 us, 100^3 8.8, 33x47x65 7.8).  The tiny kernel has a smaller fixed part (2.3
us at 1x1x1) but keeps nothing on chip: each warp runs a chain of ``L = ceil(ceil(K / 16) /
kw)`` k-steps, each a round of guarded global loads; unrolled four at a time (``ku``) their
loads are in flight together, so a chain costs about 0.3-0.5 us per four steps (1x300x700,
L = 3, 4.4 us; 3x5x1000, L = 4, 4.3 us; 64x64x1024, L = 4, 5.6 us), and every block re-reads
its rows of A and columns of B (the volume term: 128^3 3.4 us against 3.2, 192^3 4.5
against 3.4).  So the tiny kernel runs where

* the volume ``M * N * K`` is below :data:`TINY_VOLUME` (2**21: 112^3 3.3 us against 3.4;
  128^3 = 2**21 3.4 against 3.2), and
* the k-chain is at most :data:`TINY_CHAIN` (2) steps (1x512x512 3.9 us against 3.9,
  16x256x256 3.4 against 3.4), or at most :data:`TINY_CHAIN_STAGED` (16) where the tiled
  plan would copy an operand (1x300x700 4.4 us against 15.5, 3x5x1000 4.3 against 14.4).

Everything else takes the tiled plans; ``gemm(..., path="tiny")`` asks for the tiny kernel
at any size.

Inside the kernel, ``kw`` warps split K (their sums meet in shared memory): as many as the
k-steps, at least 4 and at most 16 (``kw`` 4, 8 and 16 against 16x8 tiles: 1x300x700 5.9,
4.6 and 4.4 us; 100^3 3.2, 2.9 and 3.2).  A warp covers 8 columns (``ni = 1``): more
blocks beat wider ones at every tiny size measured (16-column warps 1.0-1.5x slower).

>>> c = tiny_config(7, 13, 17)
>>> c.ni, c.kw, c.ku
(1, 4, 4)
>>> c = tiny_config(3, 5, 1000, staged=True)
>>> (c.ni, c.kw), tiny_config(3, 5, 1000)
((1, 16), None)
>>> tiny_config(4096, 4096, 4096) is None
True
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Callable, Dict, Optional, Tuple

import numpy as np

from ..config import GemmProblem
from ..errors import GemmInputError
from ..kernels.tiny import TinyConfig
from . import device, operands, rule
from .cache import compile_kernel, kernel_for
from .plan import last_launch, launch_programmatic, param_setters, programmatic_launcher
from .rule import ParamBuffer, operand_layout

__all__ = [
    "TINY_VOLUME",
    "TINY_CHAIN",
    "TINY_CHAIN_STAGED",
    "TINY_EPILOGUE",
    "tiny_config",
    "TinyPlan",
    "wants_tiny",
]

#: the product volume ``M * N * K`` below which :func:`tiny_config` may pick the tiny kernel
TINY_VOLUME = 1 << 21
#: the longest chain of k-steps per warp it takes where the operands meet the tiled
#: kernels' 16-byte contract, and where the tiled plan would copy an operand first
TINY_CHAIN = 2
TINY_CHAIN_STAGED = 16
#: whether ``path="auto"`` sends calls with a fused epilogue (bias, activation, C input) to
#: the tiny kernel too (``path="tiny"`` always does): the epilogue variant is proven and
#: compiled, and its numerics checked against float64 on a GPU
#: (tests/gpu/test_gpu_tiny.py::test_gpu_tiny_epilogue_matches_float64)
TINY_EPILOGUE = True


def tiny_config(m: int, n: int, k: int, *, staged: bool = False, force: bool = False) -> Optional[TinyConfig]:
    """The tiny kernel's configuration for an ``m x n x k`` product, or None where the
    tiled plans are faster by the module's model (``staged``: the tiled plan would copy an
    operand into a padded buffer; ``force``: the configuration at any size).  The kernel's
    k-step count is a C ``int``: K of 2**30 or more is never tiny."""
    if k >= 1 << 30:
        if force:
            raise GemmInputError(f"gemm: path='tiny' takes K < 2**30 (K = {k}); use path='auto'")
        return None
    steps = -(-k // 16)
    kw = min(16, max(4, 1 << (steps - 1).bit_length()))
    cfg = TinyConfig(ni=1, kw=kw, ku=4)
    if force:
        return cfg
    chain = -(-steps // kw)
    if m * n * k >= TINY_VOLUME or chain > (TINY_CHAIN_STAGED if staged else TINY_CHAIN):
        return None
    return cfg


def _breaks_contract(x: Any) -> bool:
    """Whether the tiled plans would copy 2-D operand ``x`` into a padded buffer
    (:func:`~layoutproof.gpu.host.rule.operand_layout`)."""
    try:
        r, c = x.shape
        s0, s1 = x.strides
        return bool(operand_layout(r, c, s0, s1, x.itemsize, x.data.ptr % 16)[2])
    except (AttributeError, TypeError, ValueError):
        return False


def wants_tiny(a: Any, b: Any, path: str) -> Optional[TinyConfig]:
    """The tiny kernel's configuration for a ``gemm`` call on 2-D operands ``a`` and ``b``
    of this ``path`` (``"tiny"``: always; ``"auto"``: by :func:`tiny_config`), or None."""
    if path not in ("auto", "tiny"):
        return None
    sa, sb = getattr(a, "shape", None), getattr(b, "shape", None)
    if sa is None or sb is None or len(sa) != 2 or len(sb) != 2:
        return None
    if path == "tiny":
        return tiny_config(int(sa[0]), int(sb[1]), int(sa[1]), force=True)
    staged = _breaks_contract(a) or _breaks_contract(b)
    return tiny_config(int(sa[0]), int(sb[1]), int(sa[1]), staged=staged)


_KINDS = ("ptr", "ptr", "ptr", "i32", "i32", "i32", "i64", "i64", "i64", "i64", "i64", "i64")
#: the fused epilogue's parameters after them: bias, has_bias, alpha, beta, Cin, its strides
_EPI_KINDS = ("ptr", "i32", "f32", "f32", "ptr", "i64", "i64")


def _elem_strides(nm: str, x: Any) -> Tuple[int, int]:
    it = x.itemsize
    s0, s1 = x.strides
    if s0 % it or s1 % it:
        raise GemmInputError(
            f"gemm: {nm} has byte strides {x.strides}, not whole {it}-byte elements: copy it "
            f"(cupy.ascontiguousarray({nm}))"
        )
    return s0 // it, s1 // it


class TinyPlan:
    """One launch of the tiny kernel for operands of a given shape, strides, dtype and
    device (any strides, any alignment): checked and packed once; a call sets the three
    base addresses and launches on the current stream.

    Raises:
        GemmInputError: as :func:`~layoutproof.gpu.host.runtime.gemm`; a later call with
            arrays of another shape or strides.
    """

    mode = "tiny"

    def __init__(
        self,
        a: Any,
        b: Any,
        out: Any = None,
        *,
        config: Optional[TinyConfig] = None,
        out_dtype: Optional[str] = None,
        dtype: Optional[str] = None,
        bias: Any = None,
        activation: Optional[str] = None,
        bias_along: str = "n",
        c: Any = None,
    ) -> None:
        dt, cupy = operands.check_pair(a, b, dtype)
        M, K = a.shape
        N = b.shape[1]
        dev = cupy.cuda.runtime.getDevice()
        if a.data.device_id != dev:
            raise GemmInputError(
                f"gemm: a and b are on device {a.data.device_id}; the current device is {dev}"
            )
        od = operands._out_name(out, out_dtype, dt)
        self.out_dtype = operands._out_dtype(cupy, od, a)
        operands._check_out(cupy, out, (M, N), dev)
        cfg = config or tiny_config(M, N, K, force=True)
        if cfg is None:
            raise GemmInputError("gemm: no tiny configuration for this product")
        self.epilogue = activation is not None or bias is not None or c is not None
        self._bias, self._c = bias is not None, c is not None
        if self.epilogue:  # the fused epilogue: its checks are the tiled plans' own
            bkind = "f32" if bias is None else operands.bias_dtype(cupy, bias, M, N, dev, bias_along, dt)
            if bias is None and bias_along not in ("n", "m"):
                raise GemmInputError(f"gemm: bias_along={bias_along!r} must be 'n' or 'm'")
            if c is not None:
                operands._check_c_2d(cupy, c, M, N, self.out_dtype, dev)
            cfg = replace(cfg, activation=activation or "none", bias=bkind, bias_axis=bias_along)
        cfg = cfg.validate()
        self.config, self.problem = cfg, GemmProblem(dtype=dt, out_dtype=od)
        self.kernel = kernel_for(cfg, self.problem)
        self._rk = compile_kernel(self.kernel)
        self._cupy = cupy
        self.m, self.n, self.k, self.shape = M, N, K, (M, N)
        self.grid = (-(-M // cfg.bm) * -(-N // cfg.bn), 1, 1)
        self.threads = cfg.threads
        sam, sak = _elem_strides("a", a)
        sbk, sbn = _elem_strides("b", b)
        scm, scn = (N, 1) if out is None else _elem_strides("out", out)
        if (scm == 0 and M > 1) or (scn == 0 and N > 1):
            raise GemmInputError(
                f"gemm: out has a zero stride ({out.strides}): several results would land in one "
                "element; pass a fresh array (cupy.empty)"
            )
        if self.grid[0] >= 1 << 31:
            raise GemmInputError(
                f"gemm: path='tiny' covers at most 2**31 - 1 blocks of 16x{cfg.bn} ({M}x{N} needs "
                f"{self.grid[0]}): use path='auto'"
            )
        self._sig = (operands.signature(a), operands.signature(b), operands.signature(out))
        self._ep_sig = (operands.signature(bias), operands.signature(c))
        pb = self._pb = ParamBuffer(_KINDS + (_EPI_KINDS if self.epilogue else ()))
        for i, v in enumerate((M, N, K, sam, sak, sbk, sbn, scm, scn)):
            pb.set(3 + i, v)
        self._statics = (M, N, K, sam, sak, sbk, sbn, scm, scn)
        self._ptr_set = param_setters(pb, (0, 1, 2))
        if self.epilogue:  # bias, has_bias, alpha, beta, Cin, its strides
            sxm, sxn = (0, 0) if c is None else _elem_strides("c", c)
            for i, v in ((13, int(bias is not None)), (14, 1.0), (15, 0.0), (17, sxm), (18, sxn)):
                pb.set(i, v)
        self._launch_kernel = device.launch_kernel(cupy)
        self._fn = int(self._rk.kernel.ptr) if self._launch_kernel is not None else 0
        # a programmatic dependent launch where the kernel's proof allows (rule.PDL_PLAIN)
        self._pdl = (
            programmatic_launcher(
                self.kernel, self._fn, self.grid, self.threads, pb.address, 0, rule.PDL_PLAIN, cupy
            )
            if self._launch_kernel is not None
            else None
        )
        self._lock = threading.Lock()
        self._info: Dict[str, Any] = dict(
            config=cfg, problem=self.problem, kernel=self.kernel.name, m=M, n=N, k=K, plan=self
        )

    def __call__(
        self,
        a: Any,
        b: Any,
        out: Any = None,
        bias: Any = None,
        *,
        c: Any = None,
        alpha: float = 1.0,
        beta: float = 0.0,
    ) -> Any:
        """C = A @ B (through the plan's epilogue) for arrays like the plan's (checked)."""
        try:
            sig = (operands.signature(a), operands.signature(b), operands.signature(out))
            ep_sig = (operands.signature(bias), operands.signature(c))
        except AttributeError:
            raise GemmInputError("TinyPlan: a, b (and out, bias, c) must be cupy arrays") from None
        if ep_sig != self._ep_sig:
            raise GemmInputError("TinyPlan: bias and c must be like the plan's (or None where it has none)")
        if not self._c and (alpha != 1 or beta != 0):
            raise GemmInputError("TinyPlan: the plan was made without c: alpha and beta need it")
        mine = self._sig
        if sig[:2] != mine[:2] or (out is not None and mine[2] is not None and sig[2] != mine[2]):
            raise GemmInputError(
                "TinyPlan: the arguments differ from the plan's (shape, strides, dtype, device)"
            )
        if out is not None and mine[2] is None:
            it = np.dtype(self.out_dtype).itemsize
            if (out.shape, out.strides) != (self.shape, (self.n * it, it)) or out.dtype != self.out_dtype:
                raise GemmInputError("TinyPlan: the plan was made for a new row-major output; out is not one")
        return self._run(a, b, out, bias, c, alpha, beta)

    def _run(
        self, a: Any, b: Any, out: Any, bias: Any = None, c: Any = None, alpha: float = 1.0, beta: float = 0.0
    ) -> Any:
        """The launch for arrays already known to match the plan (a plan is kept per
        signature, its epilogue's included)."""
        cp = self._cupy
        if out is None:
            out = cp.empty(self.shape, self.out_dtype)
        if self.epilogue:
            with self._lock:  # the epilogue's per-call parameters, then the launch
                pb = self._pb
                pb.set(12, 0 if bias is None else bias.data.ptr)
                pb.set(14, float(alpha))
                pb.set(15, float(beta))
                pb.set(16, 0 if c is None else c.data.ptr)
                self._launch(
                    a.data.ptr,
                    b.data.ptr,
                    out.data.ptr,
                    cp.cuda.get_current_stream().ptr,
                    (a, b, out, bias, c),
                )
            last_launch.update(self._info)
            return out
        self.launch(a.data.ptr, b.data.ptr, out.data.ptr, cp.cuda.get_current_stream().ptr, a, b, out)
        return out

    def direct(self) -> Optional[Callable[[int, int, int, int], None]]:
        """``launch(a_ptr, b_ptr, c_ptr, stream)`` from base addresses and a raw stream
        handle alone (None where CuPy's driver module lacks ``launchKernel``, or for a plan
        with an epilogue: its bias and C input are arrays)."""
        return self.launch if self._launch_kernel is not None and not self.epilogue else None

    def launch(self, pa: int, pb: int, pc: int, stream: int, *arrays: Any) -> None:
        """One launch with these base addresses on stream handle ``stream`` (``arrays``: the
        CuPy arrays themselves, for CuPy's own launcher where its driver module lacks
        ``launchKernel``)."""
        with self._lock:
            self._launch(pa, pb, pc, stream, arrays)
        last_launch.update(self._info)

    def _launch(self, pa: int, pb: int, pc: int, stream: int, arrays: Tuple[Any, ...]) -> None:
        """The launch itself (the caller holds the lock)."""
        g, buf = self.grid, self._pb
        sa, sb, sc = self._ptr_set
        sa.value = pa
        sb.value = pb
        sc.value = pc
        ran, self._pdl = launch_programmatic(self._pdl, stream)
        if ran:
            return
        if self._launch_kernel is not None:
            self._launch_kernel(self._fn, g[0], 1, 1, self.threads, 1, 1, 0, stream, buf.address, 0)
            return
        i32, i64 = np.int32, np.int64
        s = self._statics
        args = tuple(arrays[:3]) + tuple(i32(v) for v in s[:3]) + tuple(i64(v) for v in s[3:])
        if self.epilogue:
            bias, c = arrays[3], arrays[4]
            vals = buf.values()
            none = np.uint64(0)  # a null pointer where the call has no bias or C input
            bias, c = (none if x is None else x for x in (bias, c))
            args += (bias, i32(vals[13]), np.float32(vals[14]), np.float32(vals[15]), c)
            args += (i64(vals[17]), i64(vals[18]))
        self._rk(g, (self.threads, 1, 1), args)

    def __repr__(self) -> str:
        shape = f"{self.m}x{self.n}x{self.k}"
        return f"TinyPlan({shape}, {self.config.key()}, {self.problem.key()}, grid {self.grid})"
