"""Launch plans: a :class:`~layoutproof.gpu.host.rule.LaunchDecision` carried out.

A plan compiles the decided kernel (:mod:`~layoutproof.gpu.host.cache`), allocates the
split-K workspace, prepares the operands' tensor-map encoders, packs the parameter block
once, and on each call rewrites the few parameters that changed (base pointers; a tensor
map is re-encoded only for a base address the plan has not seen) before one
``cuLaunchKernel`` on the current CuPy stream -- also inside a CUDA graph capture.

:class:`GemmPlan` (2-D) and :class:`BatchedGemmPlan` (3-D, its one-launch kernel path)
share that machinery (:class:`_Launch`); what they check of their arguments differs.
"""

from __future__ import annotations

import os
import threading
import warnings
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from ..errors import GemmConfigError, GemmInputError
from ..kernels.splitk import FIXUP_DEFAULT
from ..kernels.wgmma import tensor_map_args
from ..kernels.wgmma_core import a_box_rows
from . import device, operands, rule
from .cache import compile_kernel, kernel_for, kernels_for
from .rule import LaunchDecision, ParamBuffer, Staging, warn_slow_path

__all__ = ["GemmPlan", "BatchedGemmPlan", "last_launch", "launch_programmatic", "programmatic_launcher"]

#: what the last launch ran (config, problem, kernel name, m, n, k, the plan; a batched
#: call's mode and batch)
last_launch: Dict[str, Any] = {}

_TMAP_REC = np.dtype({"names": [f"w{i}" for i in range(16)], "formats": [np.uint64] * 16})


# ============================================================================ operands
def _padded_copy(x: Any, cols_major: bool) -> Any:
    """``x`` (2-D) copied into a 16-byte-aligned buffer whose leading dimension is a
    multiple of 8 elements: row-major when ``cols_major``, else column-major (returned as
    the (cols, ldp) row-major buffer holding ``x.T``)."""
    cupy = device.cupy()
    r, c = x.shape
    if cols_major:
        buf = cupy.zeros((r, max(8, -(-c // 8) * 8)), dtype=x.dtype)
        buf[:, :c] = x
    else:
        buf = cupy.zeros((c, max(8, -(-r // 8) * 8)), dtype=x.dtype)
        buf[:, :r] = x.T
    return buf


def _row_copy(
    strides: Tuple[int, int], shape: Tuple[int, int], itemsize: int
) -> Optional[Tuple[int, int, int]]:
    """(source pitch, bytes per row, rows) of the one ``cudaMemcpy2DAsync`` that copies a
    ``shape`` source of byte ``strides`` row by row into a padded buffer; None where its
    rows are not contiguous (an element-wise copy then)."""
    s0, s1 = strides
    r, c = shape
    if s1 == itemsize and s0 >= c * itemsize and s0 % itemsize == 0:
        return (s0, c * itemsize, r)
    return None


def _on_stream(cupy: Any, sp: int, make: Callable[[], Any]) -> Any:
    """``make()`` with raw stream ``sp`` current (an allocation's fill then ordered on it)."""
    with warnings.catch_warnings():  # CuPy 14 prefers Stream.from_external (same object)
        warnings.simplefilter("ignore", DeprecationWarning)
        stream = cupy.cuda.ExternalStream(sp)
    with stream:
        return make()


class _Operand:
    """One kernel operand of a plan: its decided staging (:class:`~layoutproof.gpu.host.rule.Staging`),
    the padded buffers of the copy path, and for TMA its tensor-map encoder with a small
    cache of maps by base address."""

    __slots__ = (
        "transposed",
        "rows",
        "cols",
        "cols_major",
        "ld",
        "copy",
        "major",
        "tma_args",
        "maps",
        "current",
        "bufs",
    )

    def __init__(self, st: Staging) -> None:
        # (no reference to the call's arrays is kept: a cached plan must not hold them)
        self.transposed, self.rows, self.cols = st.transposed, st.rows, st.cols
        self.cols_major, self.ld, self.copy, self.major = st.cols_major, st.ld, st.copy, st.major
        self.tma_args: Optional[Tuple[Any, ...]] = None
        self.maps: Dict[int, Any] = {}
        self.current = -1
        self.bufs: Dict[int, Any] = {}  # stream -> the padded buffer of the copy path

    def array(self, x: Any) -> Any:
        """The array the kernel reads for the call's operand ``x`` (a padded copy on the
        copy path)."""
        v = x.T if self.transposed else x
        return _padded_copy(v, self.cols_major) if self.copy else v

    def staged(self, x: Any, stream: Any) -> Any:
        """:meth:`array` into a padded buffer the operand keeps (one per stream, so a copy
        never overwrites a buffer that a launch on another stream may still read; on one
        stream the copy is ordered after the previous launch).  The copy is one
        ``cudaMemcpy2DAsync`` where the rows to copy are contiguous (a few microseconds of
        host time, no allocation), else one element-wise copy.  The padding is zeroed once
        when the buffer is made; every call rewrites the whole operand."""
        v = x.T if self.transposed else x
        buf = self.bufs.get(stream.ptr)
        if buf is None:
            if len(self.bufs) >= 8:  # a few streams at most are kept
                self.bufs.clear()
            buf = self.bufs[stream.ptr] = _padded_copy(v, self.cols_major)
            return buf
        src = v if self.cols_major else v.T  # the rows of src become the rows of buf
        rows = _row_copy(src.strides, src.shape, src.itemsize)
        if rows is not None:
            rt = device.cupy().cuda.runtime  # 3: cudaMemcpyDeviceToDevice
            pitch, width, height = rows
            rt.memcpy2DAsync(buf.data.ptr, buf.strides[0], src.data.ptr, pitch, width, height, 3, stream.ptr)
        else:
            buf[:, : src.shape[1]] = src
        return buf

    def row_copy(self, strides: Tuple[int, int], itemsize: int) -> Optional[Tuple[int, int, int]]:
        """:func:`_row_copy` for a call's 2-D operand of byte ``strides`` (the user's, before
        any transpose): the one ``cudaMemcpy2DAsync`` that stages it, or None."""
        s0, s1 = strides
        if self.transposed:  # v = x.T
            s0, s1 = s1, s0
        shape = (self.rows, self.cols)
        if not self.cols_major:  # src = v.T
            s0, s1, shape = s1, s0, (self.cols, self.rows)
        return _row_copy((s0, s1), shape, itemsize)

    def staged_ptr(self, ptr: int, sp: int, rows: Tuple[int, int, int], dtype: Any) -> int:
        """:meth:`staged` from a base address on the raw stream ``sp`` (the direct launch's):
        the operand's rows copied by one ``cudaMemcpy2DAsync`` (``rows``: :meth:`row_copy`'s)
        into the stream's kept buffer, made and zeroed on that stream on first use; returns
        the buffer's address."""
        buf = self.bufs.get(sp)
        if buf is None:
            buf = self.kept_buffer(sp, dtype)
        device.cupy().cuda.runtime.memcpy2DAsync(
            buf.data.ptr, buf.strides[0], ptr, rows[0], rows[1], rows[2], 3, sp
        )
        return int(buf.data.ptr)

    def kept_buffer(self, sp: int, dtype: Any) -> Any:
        """The padded buffer kept for raw stream ``sp`` (its rows: the operand's rows along
        its contiguous dimension, ``ld`` elements each), made and zeroed on that stream (so
        the fill is ordered before any use on it); at most 8 streams' buffers are kept."""
        if len(self.bufs) >= 8:
            self.bufs.clear()
        cupy = device.cupy()
        nrows = self.rows if self.cols_major else self.cols
        buf = _on_stream(cupy, sp, lambda: cupy.zeros((nrows, self.ld), dtype=dtype))
        self.bufs[sp] = buf
        return buf

    def staged_batch(self, x: Any, stream: Any) -> Any:
        """:meth:`staged` for a 3-D operand: all its matrices into one kept (batch, R, ld)
        buffer (R = rows, or columns for a column-major operand), one ``cudaMemcpy2DAsync``
        where the rows of every batch lie at one pitch (contiguous batches), else one
        element-wise copy."""
        v = x if self.cols_major else x.transpose(0, 2, 1)
        nb, r, c = v.shape
        buf = self.bufs.get(stream.ptr)
        if buf is None:
            if len(self.bufs) >= 8:
                self.bufs.clear()
            buf = self.bufs[stream.ptr] = device.cupy().zeros((nb, r, self.ld), dtype=x.dtype)
        it = v.itemsize
        s0, s1, s2 = v.strides
        if s2 == it and s1 >= c * it and s1 % it == 0 and s0 == r * s1:
            rt = device.cupy().cuda.runtime  # 3: cudaMemcpyDeviceToDevice
            rt.memcpy2DAsync(buf.data.ptr, self.ld * it, v.data.ptr, s1, c * it, nb * r, 3, stream.ptr)
        else:
            buf[:, :, :c] = v
        return buf

    def prepare_tma(
        self, dt: str, k: int, mn: int, batch: Optional[Tuple[int, int]] = None, rows: int = 64
    ) -> None:
        """Build the encoder's constant arguments (``k`` and ``mn`` are the operand's K and
        M-or-N extents): the tensor map the kernel generator proved
        (:func:`~layoutproof.gpu.kernels.wgmma.tensor_map_args`: 64x64 boxes, 128-byte
        swizzle, zero fill outside the tensor, every driver rule decided for the leading
        dimensions the launch admits) with this operand's extents and leading dimension
        substituted.  ``batch`` = (count, stride in elements): a rank-3 map (inner, outer,
        batch) with 1-deep boxes, so a box of batch ``i`` never reads past that batch's
        matrix.  ``rows``: the box's rows along M or N (below 64: A's box of a kernel with
        :attr:`~layoutproof.gpu.kernels.wgmma_core.Sm90Config.a_rows`)."""
        from cuda.bindings import driver  # cuda-python: only where TMA is decided

        kmajor = self.major == "k"
        inner, outer = (k, mn) if kmajor else (mn, k)
        values = {"X": mn, "K": k, "ld": self.ld}
        if batch is not None:
            values.update(B=batch[0], bs=batch[1])
        args = tensor_map_args(kmajor, dt, batch is not None, rows).subs(values)
        self.tma_args = (driver, args, inner, outer)

    def tensor_map(self, ptr: int) -> Any:
        """The 128 bytes of the tensor map for base address ``ptr`` (encoded on first use of
        that address; every other encoder input is fixed by the plan)."""
        m = self.maps.get(ptr)
        if m is not None:
            return m
        driver, args, inner, outer = self.tma_args  # type: ignore[misc]
        err, tmap = driver.cuTensorMapEncodeTiled(*args.driver_args(driver, ptr))
        if err != driver.CUresult.CUDA_SUCCESS:
            raise GemmInputError(
                f"gemm: cuTensorMapEncodeTiled failed ({err}) for a "
                f"{outer}x{inner} operand with leading dimension {self.ld}"
            )
        m = np.array([int(v) for v in tmap.opaque], dtype=np.uint64).view(np.uint8)
        if len(self.maps) >= 64:  # activations cycle through a few buffers; bound the cache
            self.maps.clear()
        self.maps[ptr] = m
        return m

    def record(self, ptr: int) -> Any:
        """The tensor map for ``ptr`` as one 128-byte record (CuPy's own launcher)."""
        return self.tensor_map(ptr).view(np.uint64).view(_TMAP_REC)[0]


def param_setters(pb: ParamBuffer, idxs: Tuple[int, ...]) -> Tuple[Any, ...]:
    """ctypes views of parameters ``idxs`` of ``pb`` (kinds ``ptr``, ``i64``, ``i32``): setting
    ``.value`` writes the parameter the launch reads (a third of :meth:`ParamBuffer.set`'s
    host time, for the per-call parameters of a hot path)."""
    import ctypes

    types = {"ptr": ctypes.c_uint64, "i64": ctypes.c_int64, "i32": ctypes.c_int32}
    table = (ctypes.c_uint64 * len(pb.kinds)).from_address(pb.address)  # the void* array
    out = []
    for i in idxs:
        if pb.kinds[i] not in types:
            raise GemmConfigError(f"param_setters: parameter {i} is a {pb.kinds[i]}, not a scalar")
        out.append(types[pb.kinds[i]].from_address(table[i]))
    return tuple(out)


def _pdl_launcher(
    fn: int, grid: Tuple[int, int, int], threads: int, params: int, smem: int = 0, cp: Any = None
) -> Any:
    """A launcher of kernel ``fn`` (its parameter block at ``params``) as a programmatic
    dependent launch (:func:`~layoutproof.gpu.host.device.launch_kernel_ex`): the kernel may
    start while the previous kernel of the stream runs, and its ``griddepcontrol.wait``
    returns once that kernel has completed with its memory visible.  Returns
    ``launch(stream) -> bool`` (False: the launch was refused, nothing ran), or None where
    ``cp`` is not CuPy on a driver that offers the launch."""
    make = device.launch_kernel_ex(cp)
    return None if make is None or not fn else make(fn, grid, threads, params, smem)


def launch_programmatic(pdl: Any, stream: int) -> Tuple[bool, Any]:
    """Try the programmatic dependent launch ``pdl`` (or None) on ``stream``: returns whether
    it ran, and the launcher to keep -- None once the driver has refused it, so that the
    caller launches in stream order from then on."""
    if pdl is None:
        return False, None
    return (True, pdl) if pdl(stream) else (False, None)


def programmatic_launcher(
    kernel: Any,
    fn: int,
    grid: Tuple[int, int, int],
    threads: int,
    params: int,
    smem: int = 0,
    allowed: bool = True,
    cp: Any = None,
) -> Any:
    """:func:`_pdl_launcher` for a generated kernel where ``allowed`` (the rule's say), its
    proof log holds the launch-ordering claim (``kernel.programmatic``: every memory access
    after its grid dependency wait) and ``LAYOUTPROOF_PDL`` is not ``0``; else None (stream
    order).  ``cp``: the CuPy module the kernel was loaded with."""
    if (
        not allowed
        or not getattr(kernel, "programmatic", False)
        or os.environ.get("LAYOUTPROOF_PDL", "1") == "0"
    ):
        return None
    return _pdl_launcher(fn, grid, threads, params, smem, cp=cp)


# ============================================================================ the shared launch
class _Launch:
    """What a 2-D and a batched plan share: the decided kernel compiled, the operands'
    encoders prepared, the parameter block packed with the plan's constants, the per-call
    parameter updates and the one launch."""

    decision: LaunchDecision
    #: a stage_in kernel's cooperative launcher (:meth:`_setup_stage_in`); None otherwise
    _coop: Any = None

    def _carry_out(self, d: LaunchDecision, kern: Any, cupy: Any) -> None:
        self.decision, self._cupy = d, cupy
        self.config, self.problem, self.kernel = d.config, d.problem, kern
        self.m, self.n, self.k = d.m, d.n, d.k
        self.activation = d.activation
        self._rk = compile_kernel(kern)
        self.grid = tuple(int(g) for g in d.grid)
        self.threads, self.smem = int(kern.threads), int(kern.smem_bytes)
        self.tma = d.tma
        self._A, self._B = _Operand(d.a), _Operand(d.b)
        if d.tma:
            for op, mn, st, rows in ((self._A, d.m, d.a, a_box_rows(d.config)), (self._B, d.n, d.b, 64)):
                if st.batch_stride is None:  # a rank-2 map (a batched plan's shared operand too)
                    op.prepare_tma(d.problem.dtype, d.k, mn, rows=rows)
                else:
                    op.prepare_tma(d.problem.dtype, d.k, mn, (d.batch, st.batch_stride), rows=rows)
        self._pb = ParamBuffer(d.kinds)
        for i, v in d.statics:
            self._pb.set(i, v)
        # an epilogue without a bias adds a zero vector, kept
        self._zero_bias = cupy.zeros(d.zero_bias, dtype=cupy.float32) if d.zero_bias else None
        self._launch_kernel = device.launch_kernel(cupy)
        self._fn = int(self._rk.kernel.ptr) if self._launch_kernel is not None else 0
        self._lock = threading.Lock()
        # the kernel's programmatic dependent launch (:meth:`_programmatic`), where it has one
        self._pdl_main: Any = None
        self._coop = None
        self._stage_in = getattr(d.config, "stage_in", "")
        if self._stage_in:
            self._setup_stage_in(d, cupy)

    def _setup_stage_in(self, d: LaunchDecision, cupy: Any) -> None:
        """A kernel that stages its operands in the launch
        (:attr:`~layoutproof.gpu.kernels.wgmma_core.Sm90Config.stage_in`): its cooperative
        launcher (in stream order), the fast setters of the staging parameters, and the grid
        barrier's words (one zeroed pair per stream)."""
        make = device.launch_kernel_ex(cupy)
        if make is None or not self._fn:
            raise GemmConfigError(
                f"{d.config.key()}: stage_in={self._stage_in!r} meets the whole grid at a barrier, so it "
                f"needs a cooperative launch (cuLaunchKernelEx through CuPy's driver handles), which "
                f"this runtime does not offer: use a configuration without stage_in"
            )
        g = (int(d.grid[0]), int(d.grid[1]), int(d.grid[2]))
        # cooperative alone: with the programmatic attribute too, the launch cost 2.2 us more
        # host time (12.4 against 10.2 us a call at 1000x3000x777, bench/RESULTS.md)
        self._coop = make(
            self._fn, g, self.threads, self._pb.address, self.smem, programmatic=False, cooperative=True
        )
        names = [f"{P}_{w}" for P in self._stage_in for w in ("src", "dst")] + ["gbar"]
        sets = param_setters(self._pb, tuple(d.slot(x) for x in names))
        # per staged kernel operand: its position (0: A, 1: B), operand, source and buffer setters
        staged = [
            (i, op) for i, (P, op) in enumerate((("a", self._A), ("b", self._B))) if P in self._stage_in
        ]
        self._si_ops = tuple((i, op, sets[2 * j], sets[2 * j + 1]) for j, (i, op) in enumerate(staged))
        self._si_gbar = sets[-1]
        self._gbars: Dict[int, Any] = {}
        self._si_stream = -1
        # per kernel operand (A, then B): the staging copy's source setter and the stream's
        # padded buffer (None, 0: not staged)
        self._si_now: Tuple[Any, int, Any, int] = (None, 0, None, 0)

    def _launch_cooperative(self, sp: int) -> None:
        """The stage_in kernel's cooperative launch on stream ``sp``; an error where the
        driver refuses it."""
        if self._coop(sp):
            return
        raise self._coop_refused()

    def _coop_refused(self) -> GemmConfigError:
        """The error of a cooperative launch the driver refused."""
        return GemmConfigError(
            f"{self.config.key()}: the driver refused the cooperative launch of {self.grid[0]} CTAs "
            f"(stage_in needs every CTA resident at once): make the plan with a configuration "
            f"without stage_in"
        )

    def _stage_in_ptrs(self, pa: int, pb: int, sp: int) -> Tuple[int, int]:
        """A stage_in call on stream ``sp`` for the kernel operands at ``pa`` and ``pb``: the
        staged ones' addresses go to the kernel's copy, and the kernel's tensor maps read
        the stream's padded buffers instead, whose addresses it returns in their place.
        The caller holds the plan's staging lock."""
        if sp != self._si_stream:
            self._stage_in_stream(sp)
        src_a, buf_a, src_b, buf_b = self._si_now
        if src_a is not None:
            src_a.value = pa
            pa = buf_a
        if src_b is not None:
            src_b.value = pb
            pb = buf_b
        return pa, pb

    def _stage_in_stream(self, sp: int) -> None:
        """Point the staging at stream ``sp``: its padded buffers (made and zeroed on that
        stream on first use, as the copy path's) and its grid barrier's words (a zeroed
        pair); at most 8 streams' are kept."""
        cupy = self._cupy
        now: List[Any] = [None, 0, None, 0]  # as _si_now
        for i, op, src, dst in self._si_ops:
            buf = op.bufs.get(sp)
            if buf is None:
                buf = op.kept_buffer(sp, cupy.uint16)  # two-byte elements, as bits
            dst.value = int(buf.data.ptr)
            now[2 * i : 2 * i + 2] = [src, int(buf.data.ptr)]
        gb = self._gbars.get(sp)
        if gb is None:
            if len(self._gbars) >= 8:
                self._gbars.clear()
            gb = self._gbars[sp] = _on_stream(cupy, sp, lambda: cupy.zeros(2, cupy.uint32))
        self._si_gbar.value = int(gb.data.ptr)
        self._si_now, self._si_stream = (now[0], now[1], now[2], now[3]), sp

    def _programmatic(self, allowed: bool) -> None:
        """Launch the kernel as a programmatic dependent of the stream's previous kernel from
        now on where ``allowed``, its proof log holds the launch-ordering claim (every memory
        access after its grid dependency wait) and the driver offers the launch."""
        if self._launch_kernel is not None:
            g = self.grid
            self._pdl_main = programmatic_launcher(
                self.kernel,
                self._fn,
                (g[0], g[1], g[2]),
                self.threads,
                self._pb.address,
                self.smem,
                allowed,
                self._cupy,
            )

    def _launch_main(self, sp: int) -> None:
        """The kernel's launch on stream ``sp`` with the packed parameters: as a programmatic
        dependent where the plan holds that launch (a refused one is never tried again), else
        in stream order."""
        if self._coop is not None:
            self._launch_cooperative(sp)
            return
        ran, self._pdl_main = launch_programmatic(self._pdl_main, sp)
        if ran:
            return
        g, lk = self.grid, self._launch_kernel
        if lk is None:
            raise GemmConfigError("a direct launch needs CuPy's driver launchKernel")
        lk(self._fn, g[0], g[1], g[2], self.threads, 1, 1, self.smem, sp, self._pb.address, 0)

    def _set_operands(self, xa: Any, xb: Any) -> None:
        """The operands' parameters: tensor maps (re-encoded for a new base address only)
        or pointers."""
        self._set_ptrs(xa.data.ptr, xb.data.ptr)

    def _set_ptrs(self, pa: int, pb_: int) -> None:
        """:meth:`_set_operands` for the operands' base addresses."""
        A, B, pbuf = self._A, self._B, self._pb
        if not self.tma:
            pbuf.set(0, pa)
            pbuf.set(1, pb_)
            return
        if pa != A.current:
            pbuf.set(0, A.tensor_map(pa))
            A.current = pa
        if pb_ != B.current:
            pbuf.set(1, B.tensor_map(pb_))
            B.current = pb_

    def _set_epilogue(self, who: str, bias: Any, c: Any, alpha: float, beta: float) -> Any:
        """The fused epilogue's parameters (the bias, or the plan's zero bias; alpha, beta
        and the C input) -- in the fix-up kernel's parameters where the fix-up applies the
        epilogue; returns the bias vector the kernel reads."""
        d = self.decision
        fx = d.fixup if d.fixup is not None and d.fixup.epilogue else None
        fix = getattr(self, "_fix", None)  # a 2-D plan's fix-up (kernel, parameters, grid)
        pbuf = fix[1] if fx is not None and fix is not None else self._pb
        slot = fx.slot if fx is not None else d.slot
        bvec = bias if bias is not None else self._zero_bias
        if bvec is None:
            raise GemmInputError(f"{who}: the plan was made with a bias: pass one")
        pbuf.set(slot("bias"), bvec.data.ptr)
        if slot("alpha") >= 0:
            if c is None:
                raise GemmInputError(f"{who}: the plan was made with alpha/beta: pass c")
            pbuf.set(slot("alpha"), float(alpha))
            pbuf.set(slot("beta"), float(beta))
            pbuf.set(slot("cin"), c.data.ptr)
        return bvec

    #: the plan's launch from base addresses (``pbias``: the bias, where the plan has one)
    _launch_ptrs: Callable[..., None]

    def _bias_launch(self, pbuf: ParamBuffer, slot: int) -> Callable[[int, int, int, int, int], None]:
        """The direct launch with the fused epilogue's bias: parameter ``slot`` of ``pbuf``
        (the kernel that applies the epilogue) set from each call's bias pointer, the plan's
        zero vector where the call has none."""
        self._bias_set = param_setters(pbuf, (slot,))[0]
        zero = self._zero_bias
        self._bias_zero = 0 if zero is None else int(zero.data.ptr)
        return self._launch_ptrs_bias

    def _launch_ptrs_bias(self, pa: int, pb: int, pc: int, pbias: int, sp: int) -> None:
        """:meth:`_launch_ptrs` with the bias at ``pbias`` (0: the plan's zero vector)."""
        self._launch_ptrs(pa, pb, pc, sp, pbias or self._bias_zero)

    def _issue(self, args: Callable[[], Tuple[Any, ...]]) -> None:
        """One launch of the kernel on the current stream with the packed parameters
        (``cuLaunchKernel``), or through CuPy's own launcher with ``args()`` where its driver
        module lacks ``launchKernel``."""
        if self._launch_kernel is not None:
            self._launch_main(self._cupy.cuda.get_current_stream().ptr)
        else:
            self._rk(self.grid, (self.threads, 1, 1), args(), shared_mem=self.smem)

    def _epilogue_args(self, bvec: Any, c: Any, alpha: float, beta: float) -> Tuple[Any, ...]:
        """The epilogue's trailing arguments for CuPy's own launcher."""
        d = self.decision
        if d.activation is None or (d.fixup is not None and d.fixup.epilogue):
            return ()  # (the fix-up's, where it applies the epilogue: _fixup_epilogue_args)
        return _epilogue_tail(d, bvec, c, alpha, beta)

    def _fixup_epilogue_args(self, bvec: Any, c: Any, alpha: float, beta: float) -> Tuple[Any, ...]:
        """The fix-up's epilogue arguments for CuPy's own launcher (none without one)."""
        fx = self.decision.fixup
        if fx is None or not fx.epilogue:
            return ()
        return _epilogue_tail(fx, bvec, c, alpha, beta)


def _epilogue_tail(launch: Any, bvec: Any, c: Any, alpha: float, beta: float) -> Tuple[Any, ...]:
    """The epilogue's trailing arguments of a kernel whose parameters ``launch`` describes (a
    ``LaunchDecision`` or its ``FixupLaunch``: ``slot`` and ``statics``): the bias; with
    alpha/beta, alpha, beta, the C input and the fixed strides after it."""
    out: Tuple[Any, ...] = (bvec,)
    if launch.slot("alpha") >= 0:
        lds = tuple(np.int64(v) for i, v in launch.statics if i > launch.slot("cin"))
        out += (np.float32(alpha), np.float32(beta), c) + lds
    return out


# ============================================================================ 2-D plans
def _autotuned(req: rule.GemmRequest, dev: rule.DeviceFacts) -> Any:
    """``config="auto"``: the autotuner's configuration for the kernel's product."""
    from .runtime import autotune  # the autotuner times gemm calls: runtime imports this module

    _, m, n, k, _, _, prob = rule.kernel_operands(req)
    use90 = rule.use_wgmma("auto", req.path, dev.cc)
    return autotune(m, n, k, problem=prob, path="wgmma" if use90 else "mma.sync")


class GemmPlan(_Launch):
    """Everything one GEMM launch needs, decided once for operands of a given shape,
    strides, dtype, device and 16-byte alignment: the checked inputs, the kernel (chosen by
    :func:`~layoutproof.gpu.host.rule.choose_config` unless given, generated, proven, compiled),
    the launch geometry, and a packed parameter block whose TMA descriptors are re-encoded
    only when an operand's base address changes (and kept per address).  Calling the plan
    rewrites the changed parameters and issues one ``cuLaunchKernel`` on the current CuPy
    stream, so it can be captured in a CUDA graph.

    ``gemm`` keeps one plan per argument signature; :func:`gemm_plan` returns one to keep.
    The decision itself (:func:`~layoutproof.gpu.host.rule.decide`) is ``plan.decision``.

    Raises:
        GemmInputError: as :func:`gemm`; calling a plan with arrays of another shape,
            strides, dtype, device or alignment class.
    """

    def __init__(
        self,
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
        c: Any = None,
        alpha_beta: bool = False,
        bias_along: str = "n",
    ) -> None:
        chk = operands.request_2d(
            a,
            b,
            out,
            dtype=dtype,
            out_dtype=out_dtype,
            path=path,
            bias=bias,
            activation=activation,
            c=c,
            alpha_beta=alpha_beta,
            bias_along=bias_along,
        )
        dev = device.facts(chk.cupy)
        if config == "auto":
            config = _autotuned(chk.request, dev)
        d = rule.decide(chk.request, dev, config)
        if d.warn_no_tma:
            warn_slow_path(
                "tma",
                "layoutproof.gpu.gemm: cuda-python (cuda.bindings.driver) is "
                "not installed, so the Hopper kernel loads with cp.async "
                "instead of TMA (slower); pip install 'layoutproof[gpu]'",
            )
        self._setup(chk, d)

    def _setup(self, chk: operands.Checked, d: LaunchDecision) -> None:
        """Carry the decision out: the kernels, the workspace, the parameters, the launchers."""
        cupy, req = chk.cupy, chk.request
        # the unsplit kernel into one f32 plane and its fix-up (FixupEpilogueConfig), the split
        # kernel and its fix-up (None: serial, cluster), or the one kernel
        kern, fix = kernels_for(d.config, d.problem)
        self._carry_out(d, kern, cupy)
        self._a_sig, self._b_sig, self._out_sig, self._bias_sig, self._c_sig = chk.sigs
        self.out_dtype = chk.out_dtype
        self.alpha_beta, self.bias_along, self.bias_dtype = req.alpha_beta, req.bias_along, req.bias_dtype
        self.orient, self.splits = d.orient, d.splits
        self._swap = d.orient == "col"
        M, N = req.a.shape[0], req.b.shape[1]
        it = req.out_itemsize
        self.shape, self._order = (M, N), "F" if self._swap else "C"
        # a new output's (shape, strides, dtype): what out=None allocates
        self._fresh_out = ((M, N), (it * N, it) if not self._swap else (it, it * M), np.dtype(self.out_dtype))
        self._ldc, self._cvec_align, self._cvec_ld = d.ldc, d.cvec_align, d.cvec_ld
        # split-K: the GEMM kernel stores f32 partials into S planes of m x n (row stride
        # n), the fix-up kernel (or the serial reduction's last unit) sums them into C
        self._ws = cupy.empty(d.workspace, dtype=cupy.float32) if d.workspace else None
        if d.counters:  # one per (warpgroup, tile), zeroed once: each tile's reducer resets its own
            self._counters = cupy.zeros(d.counters, dtype=cupy.uint32)
            self._pb.set(d.slot("counters"), self._counters.data.ptr)
        self._fix: Optional[Tuple[Any, Any, Tuple[int, int, int]]] = None
        self._pdl: Any = None  # the fix-up's programmatic dependent launch, where available
        self.fixup_shape: Any = None  # the fix-up kernel's CTA shape (splitk.FixupShape)
        if fix is not None and d.fixup is not None:
            self._setup_fixup(d, fix)
        # the split kernel before a fix-up as the rule says (splitk_pdl), any other kernel
        # as rule.PDL_PLAIN says
        self._programmatic(d.pdl_split if d.fixup is not None else rule.PDL_PLAIN)
        self._stage_lock = threading.Lock()
        self._info = dict(
            config=d.config, problem=d.problem, kernel=kern.name, m=d.m, n=d.n, k=d.k, plan=self
        )

    def _setup_fixup(self, d: LaunchDecision, fix: Any) -> None:
        """The plane reduction's fix-up kernel: compiled, its parameters packed, and where
        the driver allows, both launches as programmatic dependents."""
        if d.fixup is None or self._ws is None:
            raise GemmConfigError("a fix-up launch needs the decision's fix-up grid and a workspace")
        self.fixup_shape = FIXUP_DEFAULT
        frk = compile_kernel(fix)
        fpb = ParamBuffer(d.fixup.kinds)
        fpb.set(0, self._ws.data.ptr)
        for i, v in ((2, d.m), (3, d.n), (4, d.ldc)) + d.fixup.statics:
            fpb.set(i, v)
        self._fix = (frk, fpb, d.fixup.grid)
        self._fix_threads = d.fixup.threads
        self._fix_fn = int(frk.kernel.ptr) if self._launch_kernel is not None else 0
        if self._launch_kernel is not None and os.environ.get("LAYOUTPROOF_PDL", "1") != "0":
            self._pdl = _pdl_launcher(self._fix_fn, d.fixup.grid, d.fixup.threads, fpb.address, cp=self._cupy)

    # ------------------------------------------------------------------ calls
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
        """C = A @ B for operands like the ones the plan was made for (checked); ``out``
        like the plan's (None: a new array); ``bias`` like the plan's (a plan made with a
        bias needs one each call)."""
        self._check_epilogue(bias, c, alpha, beta)
        try:
            sa, sb = operands.signature(a, True), operands.signature(b, True)
            so = operands.signature(out)
        except AttributeError:
            raise GemmInputError(
                f"GemmPlan: a, b (and out) must be cupy arrays, got {type(a).__name__}, {type(b).__name__}"
            ) from None
        for nm, got, want in (("a", sa, self._a_sig), ("b", sb, self._b_sig)):
            if got != want:
                raise GemmInputError(
                    f"GemmPlan: {nm} (shape {got[1]}, strides {got[2]}, {got[3]}, 16-byte "
                    f"aligned {got[5]}, device {got[4]}) differs from the plan's (shape "
                    f"{want[1]}, strides {want[2]}, {want[3]}, 16-byte aligned {want[5]}, "
                    f"device {want[4]}): make a plan for it"
                )
        if so is not None and self._out_sig is not None and so != self._out_sig:
            raise GemmInputError(
                f"GemmPlan: out (shape {so[1]}, strides {so[2]}, {so[3]}) "
                f"differs from the plan's (shape {self._out_sig[1]}, strides "
                f"{self._out_sig[2]}, {self._out_sig[3]})"
            )
        if so is not None and self._out_sig is None:
            if so[1:4] != self._fresh_out or so[4] != self._a_sig[4]:
                raise GemmInputError(
                    f"GemmPlan: the plan was made for a new {self._order}-order "
                    f"output; out (shape {so[1]}, strides {so[2]}, {so[3]}) "
                    f"is not one"
                )
        return self._run(a, b, out, bias, c, alpha, beta)

    def _check_epilogue(self, bias: Any, c: Any, alpha: float, beta: float) -> None:
        """A call's bias, C input, alpha and beta against the plan's."""
        if (bias is None) != (self._bias_sig is None):
            raise GemmInputError(
                "GemmPlan: the plan was made "
                + ("with a bias: pass one" if bias is None else "without a bias: make a plan with one")
            )
        if bias is not None:
            try:
                sig = operands.signature(bias)
            except AttributeError:
                sig = None
            if sig != self._bias_sig:
                raise GemmInputError(
                    f"GemmPlan: bias {sig and sig[1:]} differs from the plan's {self._bias_sig[1:]}"
                )
        if (c is not None or beta != 0 or alpha != 1) and not self.alpha_beta:
            raise GemmInputError(
                "GemmPlan: the plan was made without alpha/beta and c: make a plan with them"
            )
        if self.alpha_beta:
            try:
                csig = operands.signature(c)
            except AttributeError:
                csig = None
            if csig != self._c_sig:
                raise GemmInputError("GemmPlan: c differs from the plan's (shape, strides, dtype, device)")

    def _run(
        self, a: Any, b: Any, out: Any, bias: Any = None, c: Any = None, alpha: float = 1.0, beta: float = 0.0
    ) -> Any:
        """The launch, for arguments already known to match the plan (on the copy path the
        staged copies and the launch that reads them are issued under one lock)."""
        if not (self._A.copy or self._B.copy):
            return self._launch(a, b, out, bias, c, alpha, beta)
        with self._stage_lock:
            return self._launch(a, b, out, bias, c, alpha, beta)

    def _launch(
        self, a: Any, b: Any, out: Any, bias: Any = None, c: Any = None, alpha: float = 1.0, beta: float = 0.0
    ) -> Any:
        cupy, d = self._cupy, self.decision
        if out is None:
            out = cupy.empty(self.shape, self.out_dtype, order=self._order)
        target = cupy.empty(self.shape, self.out_dtype) if self.orient == "copy" else out
        A, B = self._A, self._B
        xa, xb = (b, a) if self._swap else (a, b)
        si: Optional[Tuple[int, int]] = None
        if self._stage_in:  # the kernel copies them itself: the buffers' addresses
            si = self._stage_in_ptrs(xa.data.ptr, xb.data.ptr, cupy.cuda.get_current_stream().ptr)
        elif A.copy or B.copy:  # the slower path: copies into the operands' padded buffers
            st = cupy.cuda.get_current_stream()
            xa = A.staged(xa, st) if A.copy else xa
            xb = B.staged(xb, st) if B.copy else xb
        pc = target.data.ptr
        pk = pc if self._ws is None else self._ws.data.ptr  # what the GEMM kernel stores into
        cvec = int(self._cvec_ld and pk % self._cvec_align == 0)
        with self._lock:
            if si is None:
                self._set_operands(xa, xb)
            else:
                self._set_ptrs(*si)
            self._pb.set(d.slot("c"), pk)
            self._pb.set(d.slot("cvec"), cvec)
            if d.slot("out") >= 0:  # serial split-K: the reducer writes C
                self._pb.set(d.slot("out"), pc)
            bvec = self._set_epilogue("GemmPlan", bias, c, alpha, beta) if d.activation is not None else None
            self._issue(lambda: self._args(xa, xb, target, cvec, bvec, c, alpha, beta))
            if self._fix is not None:  # split-K: sum the partial planes into C (stream order)
                self._launch_fixup(target, self._fixup_epilogue_args(bvec, c, alpha, beta))
        if self.orient == "copy":
            out[...] = target
        last_launch.update(self._info)
        return out

    def direct(self) -> Optional[Callable[[int, int, int, int], None]]:
        """``launch(a_ptr, b_ptr, c_ptr, stream)``: the plan's launch from base addresses and
        a raw stream handle alone (no arrays, no stream objects) -- what a caller that holds
        other libraries' tensors calls on its hot path.  A staged operand is copied into the
        stream's padded buffer by one ``cudaMemcpy2DAsync`` first.  None where the plan needs
        the arrays themselves (an element-wise staging copy, a copied output, a fused
        epilogue: :meth:`direct_bias`) or CuPy's driver module lacks ``launchKernel``."""
        if self.activation is not None or self._bias_sig is not None or not self._direct_ready():
            return None
        return self._launch_ptrs

    def direct_bias(self) -> Optional[Callable[[int, int, int, int, int], None]]:
        """``launch(a_ptr, b_ptr, c_ptr, bias_ptr, stream)``: :meth:`direct` for a plan with
        the fused bias + activation (no alpha/beta): the bias pointer goes to the kernel that
        applies the epilogue (the fix-up's where it does); ``bias_ptr`` 0 for a plan made
        without a bias (its zero vector is used).  None where :meth:`direct` would refuse for
        another reason than the epilogue."""
        if self.activation is None or self.alpha_beta or not self._direct_ready():
            return None
        d = self.decision
        fx = d.fixup if d.fixup is not None and d.fixup.epilogue else None
        if fx is not None:
            fix = getattr(self, "_fix", None)
            if fix is None:
                return None
            return self._bias_launch(fix[1], fx.slot("bias"))
        return self._bias_launch(self._pb, d.slot("bias"))

    def _direct_ready(self) -> bool:
        """The per-call parameter setters of the direct launches (False: no direct launch)."""
        if self._launch_kernel is None or self.orient == "copy" or self.alpha_beta:
            return False
        # a staged operand: its one row copy, from the plan's strides (None: not staged, or
        # copied by the stage_in kernel itself from the rows stage_sources found)
        rows: List[Any] = []
        sigs = (self._b_sig, self._a_sig) if self._swap else (self._a_sig, self._b_sig)
        for op, sig in zip((self._A, self._B), sigs):
            rc = op.row_copy(sig[2], sig[3].itemsize) if op.copy and not self._stage_in else None
            if op.copy and rc is None and not self._stage_in:  # the element-wise copy needs arrays
                return False
            rows.append(None if rc is None else (rc, sig[3]))
        self._row_copies = tuple(rows)
        d = self.decision
        so = d.slot("out")
        self._slots = param_setters(self._pb, (d.slot("c"), d.slot("cvec")) + ((so,) if so >= 0 else ()))
        self._ab_set = None if self.tma else param_setters(self._pb, (0, 1))
        self._ws_ptr = 0 if self._ws is None else int(self._ws.data.ptr)
        hot = self._hot_launch()
        if hot is not None:  # the instance's own, in the method's place
            self._launch_ptrs = hot  # type: ignore[method-assign]
        return True

    def _hot_launch(self) -> Optional[Callable[..., None]]:
        """:meth:`_launch_ptrs` as one function, for a plan without row copies or a fix-up
        (the common case): the same parameter updates under the same locks and the same
        launch (cooperative, programmatic with its fallback, or in stream order), without
        the method calls between them -- each is a fraction of a microsecond of a call's
        host time.  None for the other plans (the method stays)."""
        if self._fix is not None or any(r is not None for r in self._row_copies):
            return None
        lk = self._launch_kernel
        if lk is None:
            return None
        plan, info, stage = self, self._info, bool(self._stage_in)
        # one lock, the one every writer of this plan's parameters holds: a stage_in plan's
        # operands are copies, so its array path (_run) takes the staging lock before the
        # plan lock; any other plan's writers take the plan lock
        held = self._stage_lock if stage else self._lock
        acquire, release = held.acquire, held.release  # cheaper than a with statement
        upd, last_get = last_launch.update, last_launch.get
        A, B, pset, ab = self._A, self._B, self._pb.set, self._ab_set
        sc, sv = self._slots[0], self._slots[1]
        so = self._slots[2] if len(self._slots) > 2 else None
        ws = self._ws_ptr if self._ws is not None else None
        cld, cal, swap = self._cvec_ld, self._cvec_align, self._swap
        stage_ptrs, coop = self._stage_in_ptrs, self._coop
        fn, (g0, g1, g2), th, smem, addr = self._fn, self.grid, self.threads, self.smem, self._pb.address

        def launch(pa: int, pb: int, pc: int, sp: int, pbias: int = 0) -> None:
            if swap:
                pa, pb = pb, pa
            pk = pc if ws is None else ws
            acquire()
            try:
                if stage:
                    pa, pb = stage_ptrs(pa, pb, sp)
                if ab is None:  # tensor maps, re-encoded for a new base address only
                    if pa != A.current:
                        pset(0, A.tensor_map(pa))
                        A.current = pa
                    if pb != B.current:
                        pset(1, B.tensor_map(pb))
                        B.current = pb
                else:
                    ab[0].value = pa
                    ab[1].value = pb
                if pbias:
                    plan._bias_set.value = pbias
                sc.value = pk
                sv.value = int(cld and pk % cal == 0)
                if so is not None:
                    so.value = pc
                if coop is not None:
                    if not coop(sp):
                        raise plan._coop_refused()
                else:
                    pdl = plan._pdl_main
                    if pdl is None or not pdl(sp):
                        plan._pdl_main = None  # refused once: stream order from now on
                        lk(fn, g0, g1, g2, th, 1, 1, smem, sp, addr, 0)
            finally:
                release()
            # every writer of last_launch names its plan (or clears it): where it names this
            # plan, it holds this plan's record already
            if last_get("plan") is not plan:
                upd(info)

        return launch

    def _launch_ptrs(self, pa: int, pb: int, pc: int, sp: int, pbias: int = 0) -> None:
        """:meth:`_launch` for base addresses on stream ``sp`` (the plan's :meth:`direct` case;
        ``pbias``: the bias of :meth:`direct_bias`'s)."""
        if self._swap:
            pa, pb = pb, pa
        if self._stage_in:  # one launch: the kernel copies the staged operands itself
            with self._stage_lock:
                pa, pb = self._stage_in_ptrs(pa, pb, sp)
                self._launch_ready(pa, pb, pc, sp, pbias)
            return
        ra, rb = self._row_copies
        if ra is not None or rb is not None:  # staged operands: copies and launch in one order
            with self._stage_lock:
                if ra is not None:
                    pa = self._A.staged_ptr(pa, sp, ra[0], ra[1])
                if rb is not None:
                    pb = self._B.staged_ptr(pb, sp, rb[0], rb[1])
                self._launch_ready(pa, pb, pc, sp, pbias)
            return
        self._launch_ready(pa, pb, pc, sp, pbias)

    def _launch_ready(self, pa: int, pb: int, pc: int, sp: int, pbias: int) -> None:
        """:meth:`_launch_ptrs` once the kernel's operands are at ``pa`` and ``pb``."""
        slots = self._slots
        pk = pc if self._ws is None else self._ws_ptr
        ab = self._ab_set
        with self._lock:
            if ab is None:
                self._set_ptrs(pa, pb)
            else:
                ab[0].value = pa
                ab[1].value = pb
            if pbias:
                self._bias_set.value = pbias
            slots[0].value = pk
            slots[1].value = int(self._cvec_ld and pk % self._cvec_align == 0)
            if len(slots) > 2:
                slots[2].value = pc
            self._launch_main(sp)
            if self._fix is not None:
                self._fixup_ptr(pc, sp)
        last_launch.update(self._info)

    def _launch_fixup(self, target: Any, extra: Tuple[Any, ...] = ()) -> None:
        """The fix-up kernel after the split kernel: a programmatic dependent launch where
        the driver took one, else in stream order (``extra``: its epilogue's arguments, for
        CuPy's own launcher)."""
        self._fixup_ptr(target.data.ptr, self._cupy.cuda.get_current_stream().ptr, target, extra)

    def _fixup_ptr(self, pc: int, sp: int, target: Any = None, extra: Tuple[Any, ...] = ()) -> None:
        """:meth:`_launch_fixup` for C at ``pc`` on stream ``sp`` (``target`` and ``extra``: the
        array and the epilogue's arguments, for CuPy's own launcher)."""
        if self._fix is None:
            raise GemmConfigError("the plan has no fix-up kernel to launch")
        frk, fpb, fg = self._fix
        fpb.set(1, pc)
        ran, self._pdl = launch_programmatic(self._pdl, sp)
        if ran:
            return  # launched as a programmatic dependent of the split kernel
        if self._launch_kernel is not None:
            self._launch_kernel(
                self._fix_fn, fg[0], fg[1], fg[2], self._fix_threads, 1, 1, 0, sp, fpb.address, 0
            )
        else:
            args = (self._ws, target, np.int32(self.m), np.int32(self.n), np.int64(self._ldc))
            frk(fg, (self._fix_threads, 1, 1), args + extra)

    def _args(
        self, xa: Any, xb: Any, target: Any, cvec: int, bvec: Any, c: Any, alpha: float, beta: float
    ) -> Tuple[Any, ...]:
        """The argument tuple for CuPy's own launcher (where its driver module lacks
        ``launchKernel``)."""
        i32, i64 = np.int32, np.int64
        tgt = target if self._ws is None else self._ws
        if self.tma:
            ldc = self._ldc if self._ws is None else self.n
            ta, tb = self._A.record(xa.data.ptr), self._B.record(xb.data.ptr)
            args: Tuple[Any, ...] = (ta, tb, tgt, i32(self.m), i32(self.n), i32(self.k), i64(ldc), i32(cvec))
        else:
            mnk = (i32(self.m), i32(self.n), i32(self.k))
            ldc = self._ldc if self._ws is None else self.n
            args = (xa, xb, tgt) + mnk + (i64(self._A.ld), i64(self._B.ld), i64(ldc), i32(cvec))
        if self.decision.slot("out") >= 0:
            args += (target, np.int64(self._ldc), self._counters)
        return args + self._epilogue_args(bvec, c, alpha, beta)

    def __repr__(self) -> str:
        return (
            f"GemmPlan({self.shape[0]}x{self.shape[1]}x{self.k}, {self.config.key()}, "
            f"{self.problem.key()}, grid {self.grid}, {self.threads} threads)"
        )


# ============================================================================ batched plans
class BatchedGemmPlan(_Launch):
    """C[i] = A[i] @ B[i] for 3-D operands (batch, M, K) x (batch, K, N) -> (batch, M, N),
    numpy-matmul broadcasting (a 2-D operand, or one of batch extent 1, is shared by every
    batch); built by :func:`gemm` and :func:`gemm_plan` when an operand is 3-D.

    Paths, decided once per argument signature (:func:`~layoutproof.gpu.host.rule.decide_batched`):

    * ``"fold"``: B shared and A's batches contiguous row-major matrices (batch stride
      ``M * lda``, ``lda == K``) with a new output: one 2-D product of ``(batch * M) x K``
      rows (the batched product *is* that product);
    * ``"kernel"``: one launch of the batched persistent TMA kernel, warp-specialized or,
      where the rule swaps it (:func:`~layoutproof.gpu.host.rule.pingpong_swap`), ping-pong
      (compute capability 9.0 with cuda-python): the persistent CTAs walk ``tiles x batch``, A and B
      through rank-3 tensor maps (any batch stride that is a multiple of 16 bytes; a shared
      operand through a rank-2 map), C's matrices at ``bidx * ldcb``.  A bias (one vector
      of N, the same for every batch) and the activation are fused as in the 2-D kernel,
      and so is ``alpha * A @ B + beta * c``: batch ``i`` reads its C input at
      ``c + i * ldcib`` (``c`` of shape (batch, M, N) with any batch stride that is a
      whole number of elements, 0 included, or a shared (M, N) / (1, M, N) array);
    * ``"loop"``: anything else (a batch stride the TMA cannot take, an operand that needs a
      padded copy, an output with other strides, the mma.sync path): one 2-D :func:`gemm`
      per batch, each with its own cached plan -- correct, not one launch.

    ``c`` (beta's input) is of the output's dtype with rows of unit column stride, like
    :func:`gemm`'s; it may be the output itself.

    Raises:
        GemmInputError: as :func:`gemm`; calling a plan with arrays of another signature.
    """

    def __init__(
        self,
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
        c: Any = None,
        alpha_beta: bool = False,
        bias_along: str = "n",
    ) -> None:
        opts = dict(dtype=dtype, out_dtype=out_dtype, path=path, activation=activation, bias_along=bias_along)
        chk = operands.request_batched(a, b, out, bias=bias, c=c, alpha_beta=alpha_beta, **opts)  # type: ignore[arg-type]
        req = chk.request
        self._cupy, self.out_dtype = chk.cupy, chk.out_dtype
        self.batch, self.alpha_beta = req.batch, req.alpha_beta
        (M, K), N = req.a.shape, req.b.shape[1]
        self.m, self.n, self.k, self.shape = M, N, K, (req.batch, M, N)
        self._opts = dict(opts, config=config)
        self._sig = chk.sigs
        self._loop_ops = (max(req.a.batch, 1), max(req.b.batch, 1))
        bd = rule.decide_batched(req, device.facts(chk.cupy), config)
        self.mode = bd.mode
        self._info = dict(mode=self.mode, batch=req.batch, m=M, n=N, k=K, plan=self)
        if bd.launch is not None:
            d = bd.launch
            self._carry_out(d, kernel_for(d.config, d.problem), chk.cupy)
            self._stage = (d.a.copy, d.b.copy)
            self._per_batch = (d.a.batch_stride is not None, d.b.batch_stride is not None)
            self._info.update(config=self.config, problem=self.problem, kernel=self.kernel.name)
            self._programmatic(rule.PDL_PLAIN)

    # ------------------------------------------------------------------ calls
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
        """The batched product for arguments like the plan's (checked)."""
        if (c is not None or alpha != 1 or beta != 0) and not self.alpha_beta:
            raise GemmInputError(
                "BatchedGemmPlan: the plan was made without alpha/beta and c: make a plan with them"
            )
        if self.alpha_beta and c is None:
            raise GemmInputError("BatchedGemmPlan: the plan was made with alpha/beta: pass c")
        try:
            sig = self._signature(a, b, out, bias, c)
        except AttributeError:
            raise GemmInputError("BatchedGemmPlan: a, b (out, bias, c) must be cupy arrays") from None
        mine = self._sig
        if (
            sig[:2] != mine[:2]
            or sig[3:] != mine[3:]
            or (sig[2] is not None and mine[2] is not None and sig[2] != mine[2])
        ):
            raise GemmInputError(
                "BatchedGemmPlan: the arguments differ from the plan's (shape, strides, dtype, "
                "device): make a plan for them"
            )
        if sig[2] is not None and mine[2] is None:  # out like the new array the plan makes
            it = np.dtype(self.out_dtype).itemsize
            fresh = (self.shape, (self.m * self.n * it, self.n * it, it), np.dtype(self.out_dtype))
            if (out.shape, out.strides, np.dtype(out.dtype)) != fresh:
                raise GemmInputError(
                    "BatchedGemmPlan: the plan was made for a new output; out is not one like it"
                )
        return self._run(a, b, out, bias, c, alpha, beta)

    @staticmethod
    def _signature(a: Any, b: Any, out: Any, bias: Any, c: Any) -> Any:
        sig = operands.signature
        return (sig(a, True), sig(b, True), sig(out), sig(bias), sig(c))

    def _c_batch(self, c: Any, i: int) -> Any:
        """Batch ``i``'s C input (the loop path)."""
        return c if c.ndim == 2 else c[i if c.shape[0] > 1 else 0]

    def _run(
        self, a: Any, b: Any, out: Any, bias: Any = None, c: Any = None, alpha: float = 1.0, beta: float = 0.0
    ) -> Any:
        from .runtime import gemm  # the fold and loop paths are 2-D gemm calls: runtime imports this module

        if self.mode == "fold":
            o = gemm(
                a.reshape(self.batch * self.m, self.k), b if b.ndim == 2 else b[0], bias=bias, **self._opts
            )
            last_launch.update(self._info)
            return o.reshape(self.shape)
        if out is None:
            out = self._cupy.empty(self.shape, self.out_dtype)
        if self.mode == "loop":
            ba, bb = self._loop_ops
            for i in range(self.batch):
                ai = (a[i] if ba > 1 else a[0]) if a.ndim == 3 else a
                bi = (b[i] if bb > 1 else b[0]) if b.ndim == 3 else b
                kw: Dict[str, Any] = dict(self._opts)
                if c is not None or alpha != 1 or beta != 0:
                    if c is None:
                        raise GemmInputError("BatchedGemmPlan: alpha/beta need the C input c")
                    kw.update(c=self._c_batch(c, i), alpha=alpha, beta=beta)
                gemm(ai, bi, out[i], bias=bias, **kw)
            last_launch.update(self._info)
            return out
        return self._launch(a, b, out, bias, c, alpha, beta)

    def direct(self) -> Optional[Callable[[int, int, int, int], None]]:
        """``launch(a_ptr, b_ptr, c_ptr, stream)``: the batched kernel's one launch from base
        addresses and a raw stream handle alone (:meth:`GemmPlan.direct`'s counterpart); None
        for the fold and loop paths (their 2-D calls keep their own), staged operands, a
        fused epilogue, or where CuPy's driver module lacks ``launchKernel``."""
        if not self._direct_ready() or self.activation is not None:
            return None
        return self._launch_ptrs

    def direct_bias(self) -> Optional[Callable[[int, int, int, int, int], None]]:
        """``launch(a_ptr, b_ptr, c_ptr, bias_ptr, stream)``: :meth:`direct` for a plan with
        the fused bias + activation (no alpha/beta; ``bias_ptr`` 0: the plan's zero vector),
        as :meth:`GemmPlan.direct_bias`."""
        if not self._direct_ready() or self.activation is None:
            return None
        return self._bias_launch(self._pb, self.decision.slot("bias"))

    def _direct_ready(self) -> bool:
        """The per-call parameter setters of the direct launches (False: none; the fold and
        loop modes carry out no kernel of their own, so they are tested first)."""
        if (
            self.mode != "kernel"
            or self._launch_kernel is None
            or self._stage[0]
            or self._stage[1]
            or self.alpha_beta
        ):
            return False
        d = self.decision
        self._slots = param_setters(self._pb, (d.slot("c"), d.slot("cvec")))
        return True

    def _launch_ptrs(self, pa: int, pb: int, pc: int, sp: int, pbias: int = 0) -> None:
        """:meth:`_launch` for base addresses on stream ``sp`` (the :meth:`direct` case;
        ``pbias``: :meth:`direct_bias`'s bias)."""
        slots = self._slots
        with self._lock:
            self._set_ptrs(pa, pb)
            if pbias:
                self._bias_set.value = pbias
            slots[0].value = pc
            slots[1].value = int(self.decision.cvec_ld and pc % 16 == 0)
            self._launch_main(sp)
        last_launch.update(self._info)

    def _staged(self, op: _Operand, x: Any, stream: Any, per_batch: bool) -> Any:
        """The padded buffer the kernel reads for operand ``x`` (``per_batch``: all its
        batches; else its one shared matrix)."""
        if per_batch:
            return op.staged_batch(x, stream)
        return op.staged(x if x.ndim == 2 else x[0], stream)

    def _launch(self, a: Any, b: Any, out: Any, bias: Any, c: Any, alpha: float, beta: float) -> Any:
        """The batched kernel's one launch."""
        d, pbuf = self.decision, self._pb
        pc = out.data.ptr
        cvec = int(d.cvec_ld and pc % 16 == 0)
        with self._lock:
            if self._stage[0] or self._stage[1]:  # copies into the kept padded buffers
                st = self._cupy.cuda.get_current_stream()
                a = self._staged(self._A, a, st, self._per_batch[0]) if self._stage[0] else a
                b = self._staged(self._B, b, st, self._per_batch[1]) if self._stage[1] else b
            self._set_operands(a, b)
            pbuf.set(d.slot("c"), pc)
            pbuf.set(d.slot("cvec"), cvec)
            bvec = self._set_epilogue("BatchedGemmPlan", bias, c, alpha, beta) if self.activation else None
            self._issue(lambda: self._args(a, b, out, cvec, bvec, c, alpha, beta))
        last_launch.update(self._info)
        return out

    def _args(
        self, a: Any, b: Any, out: Any, cvec: int, bvec: Any, c: Any, alpha: float, beta: float
    ) -> Tuple[Any, ...]:
        """The argument tuple for CuPy's own launcher (where its driver module lacks
        ``launchKernel``)."""
        i32, i64 = np.int32, np.int64
        ta, tb = self._A.record(a.data.ptr), self._B.record(b.data.ptr)
        mnk = (i32(self.m), i32(self.n), i32(self.k))
        args = (
            (ta, tb, out)
            + mnk
            + (i64(self.decision.ldc), i32(cvec), i32(self.batch), i64(self.decision.ldcb))
        )
        return args + self._epilogue_args(bvec, c, alpha, beta)

    def __repr__(self) -> str:
        cfg = getattr(self, "config", None)
        return f"BatchedGemmPlan({self.batch} x {self.m}x{self.n}x{self.k}, {self.mode}" + (
            f", {cfg.key()})" if cfg is not None else ")"
        )
