"""PyTorch tensors in and out of the proven GEMM: ``gemm`` on torch tensors, and the
``layoutproof::gemm`` operator for ``torch.compile`` and CUDA graphs.

``gemm(a, b)`` with torch tensors (CUDA, any strides) reads and writes the tensors' own
memory: each operand is handed to the plan as a CuPy array over the tensor's storage (the
pointer, shape and byte strides, as the CUDA array interface describes it; no copy), the
output is a torch tensor allocated by torch's caching allocator, and the kernel is launched
on torch's current stream of the tensors' device.  bfloat16 travels as its raw 16-bit
pattern (CuPy has no bfloat16 type) with the plan told ``dtype="bf16"``.

A call keeps one prepared entry per argument signature (shapes, strides, dtypes, device,
16-byte alignment, options): a repeated call costs the output's allocation, a look-up of
the operands' CuPy views by address, and the plan's launch.

The operator ``torch.ops.layoutproof.gemm`` (registered when this module is imported after
torch, or on first use; torch is imported nowhere else in the package) is functional -- it
returns a new tensor -- and has a fake (meta) implementation that computes the output's
shape, dtype and strides from the inputs' metadata, so ``torch.compile(fullgraph=True)``
traces it and a captured CUDA graph replays its launch.  ``gemm`` called on torch tensors
while ``torch.compile`` traces goes through the operator.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any, Dict, List, Optional, Tuple

from ..errors import GemmInputError
from . import device, torch_native
from .operands import TF32_ONLY, check_typed_call, refuse_negated

__all__ = ["any_tensor", "gemm_tensors", "gemm_call", "out_dtype_of", "result_shape", "DEFAULT_OUT"]

#: the device type whose tensors the kernels read (a test may stand another in)
_DEVICE_TYPE = "cuda"

# torch dtype name -> (the element type of the CuPy view, gemm's dtype= option, the name)
_INPUTS: Dict[str, Tuple[str, Optional[str], str]] = {
    "float16": ("float16", None, "f16"),
    "bfloat16": ("uint16", "bf16", "bf16"),
    "float32": ("float32", None, "f32"),
    "int8": ("int8", None, "s8"),
    "uint8": ("uint8", None, "u8"),
    "float8_e4m3fn": ("uint8", "e4m3", "e4m3"),
    "float8_e5m2": ("uint8", "e5m2", "e5m2"),
}
# output names -> torch dtype names
_OUTPUTS: Dict[str, str] = {"f16": "float16", "bf16": "bfloat16", "f32": "float32", "s32": "int32"}
#: the output type of a call without ``out_dtype``, by input type (fp8 inputs name theirs)
DEFAULT_OUT: Dict[str, str] = {
    "f16": "f16",
    "bf16": "bf16",
    "f32": "f32",
    "s8": "s32",
    "u8": "s32",
    "e4m3": "bf16",
    "e5m2": "bf16",
}
#: input types whose products run on the typed kernels (``typed.typed_gemm``), by the name
#: those take; float32 only where the call asks for tf32
_TYPED = {"f32": "tf32", "s8": "s8", "u8": "u8", "e4m3": "e4m3", "e5m2": "e5m2"}
_FP8 = ("float8_e4m3fn", "float8_e5m2")


def any_tensor(*xs: Any) -> bool:
    """Whether any of ``xs`` is a torch tensor (torch is not imported for this: an object
    can only be a tensor once torch has been imported by someone)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    T = torch.Tensor
    for x in xs:
        if isinstance(x, T):
            return True
    return False


def _dtname(dt: Any) -> str:
    return str(dt).rpartition(".")[2]


def _input_kind(nm: str, t: Any) -> Tuple[str, Optional[str], str]:
    kind = _INPUTS.get(_dtname(t.dtype))
    if kind is None:
        raise GemmInputError(
            f"gemm: {nm} is {t.dtype}, not a GEMM input type (float16, bfloat16, float32 as tf32, int8, "
            f"uint8, float8_e4m3fn, float8_e5m2): convert it, e.g. {nm}.to(torch.bfloat16)"
        )
    return kind


def out_dtype_of(a: Any, out_dtype: Any) -> str:
    """The output type's name (``"f16"``, ``"bf16"``, ``"f32"``, ``"s32"``) of a product
    of tensors like ``a`` with ``out_dtype`` (a torch dtype, a name, or None: the input's
    type; int8 gives int32)."""
    _, _, name = _input_kind("a", a)
    if out_dtype is None:
        od = DEFAULT_OUT.get(name)
        if od is None:
            raise GemmInputError(
                f"gemm: {a.dtype} inputs need out_dtype= (torch.bfloat16, torch.float16, ...)"
            )
        return od
    if isinstance(out_dtype, str):
        if out_dtype not in _OUTPUTS:
            raise GemmInputError(f"gemm: out_dtype={out_dtype!r} must be one of {sorted(_OUTPUTS)}")
        return out_dtype
    rev = {v: k for k, v in _OUTPUTS.items()}
    od = rev.get(_dtname(out_dtype))
    if od is None:
        raise GemmInputError(
            f"gemm: out_dtype={out_dtype} must be torch.float16, torch.bfloat16, torch.float32 or torch.int32"
        )
    return od


def typed_kind(
    a: Any,
    b: Any,
    dtype: Optional[str],
    bias: Any,
    c: Any,
    activation: Optional[str],
    alpha: float,
    beta: float,
) -> Optional[str]:
    """The typed kernels' type name (``"tf32"``, ``"s8"``, ``"u8"``, ``"e4m3"``,
    ``"e5m2"``) for a product of tensors like ``a`` and ``b``, or None for float16 /
    bfloat16 (the GEMM's own plans); refuses what the typed kernels do not take."""
    _, _, name = _input_kind("a", a)
    if dtype is not None and not (dtype == "tf32" and name == "f32"):
        raise GemmInputError(
            f"gemm: dtype={dtype!r} on {a.dtype} tensors: torch tensors carry their type; the one "
            f"choice is dtype='tf32' for float32 tensors"
        )
    typed = _TYPED.get(name)
    if typed is None:
        return None
    if name == "f32" and dtype != "tf32":
        raise GemmInputError(TF32_ONLY)
    check_typed_call(typed, tuple(a.shape), tuple(b.shape), bias, c, activation, alpha, beta)
    return typed


def result_shape(a: Any, b: Any) -> Tuple[int, ...]:
    """The product's shape for operands of ``a``'s and ``b``'s shapes (2-D, or 3-D with
    numpy-matmul broadcasting of the batch), after checking the shapes and dtypes."""
    for nm, x in (("a", a), ("b", b)):
        if x.dim() not in (2, 3):
            raise GemmInputError(
                f"gemm: {nm} must be 2-D (rows, cols) or 3-D (batch, rows, cols), got shape {tuple(x.shape)}"
            )
        if 0 in x.shape:
            raise GemmInputError(f"gemm: {nm} has an empty dimension, shape {tuple(x.shape)}")
    if a.shape[-1] != b.shape[-2]:
        raise GemmInputError(
            f"gemm: inner dimensions differ: a is {tuple(a.shape)}, b is {tuple(b.shape)} "
            f"(a.shape[-1] must equal b.shape[-2]; transpose with .mT or slice K to match)"
        )
    if a.dtype != b.dtype:
        raise GemmInputError(f"gemm: a is {a.dtype} and b is {b.dtype}: convert one, e.g. b.to(a.dtype)")
    _input_kind("a", a)
    M, N = a.shape[-2], b.shape[-1]
    if a.dim() == 2 and b.dim() == 2:
        return (M, N)
    ba = a.shape[0] if a.dim() == 3 else 1
    bb = b.shape[0] if b.dim() == 3 else 1
    if ba != bb and 1 not in (ba, bb):
        raise GemmInputError(
            f"gemm: batch extents differ: a is {tuple(a.shape)}, b is {tuple(b.shape)} "
            f"(equal, or one of them 1 or 2-D)"
        )
    return (max(ba, bb), M, N)


def _check_devices(named: List[Tuple[str, Any]]) -> Any:
    """The one device of the call's tensors (named (name, tensor) pairs, None skipped)."""
    torch = sys.modules["torch"]
    first: Any = None
    for nm, x in named:
        if x is not None and not isinstance(x, torch.Tensor):
            raise GemmInputError(
                f"gemm: {nm} is a {type(x).__module__}.{type(x).__name__} while other operands are torch "
                f"tensors: pass torch tensors for all of them (torch.from_dlpack({nm}) wraps a CuPy array "
                f"without a copy)"
            )
    for nm, x in named:
        if x is not None:
            refuse_negated(x, nm)
    for nm, x in named:
        if x is None:
            continue
        if x.device.type != _DEVICE_TYPE:
            raise GemmInputError(
                f"gemm: {nm} is on {x.device}; the kernels read CUDA memory: move it to the GPU "
                f"({nm}.cuda() or {nm}.to('cuda'))"
            )
        if first is None:
            first = (nm, x.device)
        elif x.device != first[1]:
            raise GemmInputError(
                f"gemm: {first[0]} is on {first[1]} and {nm} on {x.device}: put them on one device "
                f"({nm}.to({first[0]}.device))"
            )
    return first[1]


def _compiling_fn(torch: Any) -> Any:
    """``() -> bool``: whether torch.compile is tracing (``torch.compiler.is_compiling``,
    torch >= 2.3; else always False), looked up once and kept in ``_IS_COMPILING``."""
    if not _IS_COMPILING:
        fn = getattr(torch.compiler, "is_compiling", None)
        _IS_COMPILING.append(fn if fn is not None else (lambda: False))
    return _IS_COMPILING[0]


_IS_COMPILING: List[Any] = []


def _raw_stream_fn(torch: Any) -> Any:
    """``dev -> the raw handle of torch's current stream on device dev``."""
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    if raw is not None:
        return raw
    return lambda dev: torch.cuda.current_stream(dev).cuda_stream


# the CuPy streams standing for torch's (by handle), and the handles CuPy uses for its
# defaults (legacy, per-thread): a CuPy stream the caller made current is none of these
_EXTERNAL: Dict[Tuple[int, int], Any] = {}
_DEFAULT_HANDLES = (0, 1, 2)


def _view_spec(t: Any, vt: Any) -> Tuple[Tuple[int, ...], Tuple[int, ...], Any, int]:
    """(shape, byte strides, CuPy element type ``vt``, bytes spanned) of tensor ``t``'s view."""
    it = t.element_size()
    shape, strides = tuple(t.shape), tuple(s * it for s in t.stride())
    if any(s < 0 for s in strides):
        raise GemmInputError(f"gemm: negative strides {t.stride()}: make the tensor .contiguous()")
    span = it * (1 + sum((n - 1) * (s // it) for n, s in zip(shape, strides)))
    return shape, strides, vt, span


class _Views:
    """CuPy views of one argument position's tensors (one fixed shape, strides and type), by
    base address: a view owns nothing, the tensor passed in the call keeps its memory alive."""

    __slots__ = ("spec", "dev", "by_ptr")

    def __init__(self, spec: Tuple[Any, ...], dev: int) -> None:
        self.spec, self.dev = spec, dev
        self.by_ptr: Dict[int, Any] = {}

    def __call__(self, t: Any) -> Any:
        if t is None:
            return None
        p = t.data_ptr()
        v = self.by_ptr.get(p)
        if v is None:
            shape, strides, vt, span = self.spec
            if len(self.by_ptr) >= 64:  # tensors cycle through a few addresses; bound the cache
                self.by_ptr.clear()
            v = self.by_ptr[p] = device.external_array(p, span, shape, strides, vt, self.dev)
        return v


class _Entry:
    """What a call signature keeps: the plan, the views, the output's allocation, the
    stream handling."""

    def __init__(
        self,
        torch: Any,
        tdev: Any,
        a: Any,
        b: Any,
        out: Any,
        bias: Any,
        c: Any,
        opts: Dict[str, Any],
        od: str,
    ) -> None:
        self.torch = torch
        shape = result_shape(a, b)
        view_t, dopt, _ = _input_kind("a", a)
        self.tdev = tdev
        self.dev = int(tdev.index) if tdev.index is not None else 0
        self.out_shape = shape
        self.out_tdtype = getattr(torch, _OUTPUTS[od])
        if out is not None:
            if tuple(out.shape) != shape or out.dtype != self.out_tdtype:
                raise GemmInputError(
                    f"gemm: out is {tuple(out.shape)} {out.dtype}; the product is {shape} {self.out_tdtype}"
                )
        # B shared by contiguous A batches, a new output: one 2-D product of batch * M rows
        self.fold = (
            a.dim() == 3
            and (b.dim() == 2 or b.shape[0] == 1)
            and out is None
            and c is None
            and a.is_contiguous()
            and opts.get("bias_along", "n") == "n"
        )
        if self.fold:
            a = a.reshape(shape[0] * shape[1], a.shape[2])
            b = b if b.dim() == 2 else b[0]
            self.fold_shape = (shape[0] * shape[1], shape[2])
        cp = device.cupy()
        self.cp = cp
        bf = _bf16_view_type(cp)
        outv = _OUTPUTS[od] if od != "bf16" else bf
        self.va = _Views(_view_spec(a, view_t), self.dev)
        self.vb = _Views(_view_spec(b, view_t), self.dev)
        # a new output per call: empty_like of a one-element template expanded to the shape
        # (overlapping, so the result is row-major) parses fewer arguments than new_empty
        self.tmpl: Any = torch.empty((), dtype=self.out_tdtype, device=tdev).expand(shape)
        self.empty_like = torch.empty_like
        first = self.empty_like(self.tmpl)
        if tuple(first.shape) != shape or not first.is_contiguous():
            self.tmpl = None
        probe = out
        if probe is None:  # a row-major output of the product's (or the fold's) shape
            pshape = self.fold_shape if self.fold else shape
            probe = first.view(pshape) if self.tmpl is not None else None
            if probe is None:
                probe = torch.empty(pshape, dtype=self.out_tdtype, device=tdev)
        elif self.fold:
            probe = out.view(self.fold_shape)
        self.vo = _Views(_view_spec(probe, outv), self.dev)
        self.vbias: Optional[_Views] = None
        self.vc: Optional[_Views] = None
        if bias is not None:
            bn = _dtname(bias.dtype)
            bt = {"float32": "float32", "float16": "float16", "bfloat16": bf}.get(bn)
            if bt is None:
                raise GemmInputError(
                    f"gemm: bias is {bias.dtype}: float32, float16 or bfloat16 (bias.float())"
                )
            self.vbias = _Views(_view_spec(bias, bt), self.dev)
        if c is not None:
            self.vc = _Views(_view_spec(c, outv), self.dev)
        self.raw_stream = _raw_stream_fn(torch)
        self.cur_stream = _current_stream_fn(cp)
        from .runtime import plan_for  # runtime imports this module

        with self._device():
            self.plan = plan_for(
                self.va(a),
                self.vb(b),
                self.vo(probe),
                dtype=dopt,
                out_dtype=od,
                bias=None if self.vbias is None else self.vbias(bias),
                c=None if self.vc is None else self.vc(c),
                **opts,
            )
        if getattr(self.plan, "mode", None) == "fold":  # a given output never folds in the plan
            raise GemmInputError("gemm: internal: a plan for a given output folded its batches")
        # the plan's launch from base addresses (no CuPy views, no stream objects), where it
        # has one: a folded batch has the same base addresses as its 2-D product
        direct = getattr(self.plan, "direct", None)
        self.direct = direct() if direct is not None and bias is None and c is None else None
        # with the fused bias + activation (no C input): the same launch, the bias pointer too
        fused = getattr(self.plan, "direct_bias", None)
        self.direct_bias = fused() if fused is not None and self.direct is None and c is None else None
        self.get_device = cp.cuda.runtime.getDevice
        self.fast = self._fast()
        self.kept: Any = None  # the native front's generation this entry was handed to

    def _fast(self) -> Any:
        """``fast(a, b, out, bias, a_ptr, b_ptr) -> out``: the call of a kept signature in one
        function where the plan launches from base addresses -- a new output (or the given
        one), torch's current stream of the entry's device (refused where a CuPy stream
        that is not torch's is current), the plan's direct launch; with another device
        current, the views path (:meth:`run_views`).  None where the plan has no direct
        launch."""
        direct, fused = self.direct, self.direct_bias  # one of them (the other None)
        if direct is None and fused is None:
            return None
        with_bias: Any = fused
        tmpl, empty_like = self.tmpl, self.empty_like
        shape, tdtype = self.out_shape, self.out_tdtype
        dev, get_device, raw, cur = self.dev, self.get_device, self.raw_stream, self.cur_stream
        refuse, views, defaults = self._stream, self.run_views, _DEFAULT_HANDLES

        def fast(a: Any, b: Any, out: Any, bias: Any, pa: int, pb: int) -> Any:
            if out is None:  # on the entry's device (a's)
                out = empty_like(tmpl) if tmpl is not None else a.new_empty(shape, dtype=tdtype)
            if get_device() != dev:
                return views(a, b, out, bias, None, 1.0, 0.0)
            sp = raw(dev)
            cs = cur()
            if cs != sp and cs not in defaults:
                refuse(sp)  # refuses the call, naming the fix
            if direct is not None:
                direct(pa, pb, out.data_ptr(), sp)
            else:
                with_bias(pa, pb, out.data_ptr(), 0 if bias is None else bias.data_ptr(), sp)
            return out

        return fast

    def _device(self) -> Any:
        cp = self.cp
        if cp.cuda.runtime.getDevice() == self.dev:
            return _NULL_CONTEXT
        return cp.cuda.Device(self.dev)

    def _stream(self, sp: int) -> Any:
        """The CuPy stream standing for torch's current stream ``sp`` (CuPy's current stream
        is another one: its default, or the call is refused)."""
        cur = self.cur_stream()
        if cur not in _DEFAULT_HANDLES:
            raise GemmInputError(
                f"gemm: torch tensors run on torch's current stream (0x{sp:x}) but a CuPy stream "
                f"(0x{cur:x}) is current: leave the CuPy stream's `with` block, or make it torch's "
                f"(`with torch.cuda.stream(torch.cuda.ExternalStream(0x{cur:x})):`)"
            )
        st = _EXTERNAL.get((self.dev, sp))
        if st is None:
            if len(_EXTERNAL) >= 64:
                _EXTERNAL.clear()
            with warnings.catch_warnings():  # CuPy 14 prefers Stream.from_external (same object)
                warnings.simplefilter("ignore", DeprecationWarning)
                st = _EXTERNAL[(self.dev, sp)] = self.cp.cuda.ExternalStream(sp, self.dev)
        return st

    def run(self, a: Any, b: Any, out: Any, bias: Any, c: Any, alpha: float, beta: float) -> Any:
        fast = self.fast
        if fast is not None and c is None:
            return fast(a, b, out, bias, a.data_ptr(), b.data_ptr())
        return self.run_views(a, b, out, bias, c, alpha, beta)

    def run_views(self, a: Any, b: Any, out: Any, bias: Any, c: Any, alpha: float, beta: float) -> Any:
        """The call through CuPy views of the tensors and the plan's own launch (on the
        entry's device, torch's current stream)."""
        if out is None:  # on the entry's device (a's)
            tm = self.tmpl
            if tm is not None:
                out = self.empty_like(tm)
            else:
                out = a.new_empty(self.out_shape, dtype=self.out_tdtype)
        o = out
        if self.fold:
            a = a.view(self.fold_shape[0], a.shape[2])
            b = b if b.dim() == 2 else b[0]
            o = out.view(self.fold_shape)
        va, vb, vo = self.va(a), self.vb(b), self.vo(o)
        vbias = None if self.vbias is None else self.vbias(bias)
        vc = None if self.vc is None else self.vc(c)
        cp = self.cp
        if cp.cuda.runtime.getDevice() != self.dev:
            with cp.cuda.Device(self.dev):
                self._launch(va, vb, vo, vbias, vc, alpha, beta)
            return out
        self._launch(va, vb, vo, vbias, vc, alpha, beta)
        return out

    def _launch(self, va: Any, vb: Any, vo: Any, vbias: Any, vc: Any, alpha: float, beta: float) -> None:
        """The plan's launch on torch's current stream (on the current device)."""
        sp = self.raw_stream(self.dev)
        if self.cur_stream() == sp:
            self.plan._run(va, vb, vo, vbias, vc, alpha, beta)
            return
        with self._stream(sp):
            self.plan._run(va, vb, vo, vbias, vc, alpha, beta)


def _current_stream_fn(cp: Any) -> Any:
    """``() -> the handle of CuPy's current stream on the current device``."""
    fn = getattr(getattr(cp.cuda, "stream", None), "get_current_stream_ptr", None)
    if fn is not None:
        return fn
    return lambda: cp.cuda.get_current_stream().ptr


class _NullContext:
    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


_NULL_CONTEXT = _NullContext()


def _bf16_view_type(cp: Any) -> Any:
    """The CuPy element type a bfloat16 output or C input is viewed as: CuPy's bfloat16
    where it has one (what the plan allocates and compares against), else uint16."""
    try:
        return cp.dtype("bfloat16")
    except TypeError:
        return "uint16"


_ENTRIES: Dict[Any, Any] = {}  # -> _Entry or _TypedEntry
_ENTRY_CAP = 1024

#: ``[dispatch, is_compiling]`` once the native front (:mod:`torch_native`) is loaded, else
#: empty: what ``gemm`` tries first on a torch tensor outside of ``torch.compile``'s tracing
HOT: List[Any] = []


def forget_entries() -> None:
    """Drops every kept torch call signature: the entries and the native front's copies of
    them (after changing a switch of the launch rule, which the keys do not hold)."""
    _ENTRIES.clear()
    if HOT:
        HOT[0].clear()


def _native_ready(dispatch: Any) -> None:
    """The native front is loaded (called from its build thread)."""
    HOT[:] = [dispatch, _compiling_fn(sys.modules["torch"])]


def _start_native() -> None:
    """Starts building the native front (once per process; nothing waits for it)."""
    torch_native.dispatcher(device.cache_dir(), _native_ready, _ENTRY_CAP)


def _keep_native(ent: Any, *call: Any) -> None:
    """Hands entry ``ent``'s fast launch to the native front under the key of ``call`` (the
    call's a, b, out, config, out_dtype, dtype, path, bias, activation, bias_along: the
    front's order), once per stamp of its entry set (it drops them all when full)."""
    d = HOT[0]
    if call[2] is not None or ent.tmpl is not None:  # a given out, or a template to allocate from
        launch = ent.direct if ent.direct is not None else ent.direct_bias
        d.keep(
            *call,
            launch,
            ent.direct is None,
            ent.get_device,
            ent.raw_stream,
            ent.cur_stream,
            ent.dev,
            ent.tmpl,
        )
    ent.kept = d.generation


def tensor_sig(t: Any) -> Tuple[Any, ...]:
    """What a call's checks read of a tensor: shape, strides, type, device index, base
    address modulo 16 and the negative bit (the part of a call signature one tensor
    contributes)."""
    return (t.shape, t.stride(), t.dtype, t.get_device(), t.data_ptr() & 15, t.is_neg())


def gemm_tensors(
    a: Any,
    b: Any,
    out: Any = None,
    *,
    config: Any = None,
    out_dtype: Any = None,
    dtype: Optional[str] = None,
    path: str = "auto",
    bias: Any = None,
    activation: Optional[str] = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    c: Any = None,
    bias_along: str = "n",
) -> Any:
    """:func:`~layoutproof.gpu.host.runtime.gemm` for torch tensors (its arguments; ``out``,
    ``bias`` and ``c`` torch tensors too, ``out_dtype`` a torch dtype or a name): the
    product as a torch tensor, computed in the tensors' memory on torch's current stream.

    Raises:
        GemmInputError: a CPU tensor, tensors on different devices, a CuPy stream current
            that is not torch's, a torch tensor beside a CuPy array, and what :func:`gemm`
            refuses.
    """
    return gemm_call(a, b, out, config, out_dtype, dtype, path, bias, activation, alpha, beta, c, bias_along)


def gemm_call(
    a: Any,
    b: Any,
    out: Any,
    config: Any,
    out_dtype: Any,
    dtype: Optional[str],
    path: str,
    bias: Any,
    activation: Optional[str],
    alpha: float,
    beta: float,
    c: Any,
    bias_along: str,
) -> Any:
    """:func:`gemm_tensors` with its arguments in order (what ``gemm`` calls)."""
    torch = sys.modules["torch"]
    if (_IS_COMPILING[0] if _IS_COMPILING else _compiling_fn(torch))():
        if out is not None or config is not None:
            raise GemmInputError(
                "gemm: under torch.compile the product is the functional operator "
                "torch.ops.layoutproof.gemm: drop out= and config="
            )
        od = out_dtype
        if isinstance(od, str):
            od = getattr(torch, _OUTPUTS[out_dtype_of(a, od)])
        _registered()
        return torch.ops.layoutproof.gemm(
            a, b, bias, c, activation, float(alpha), float(beta), bias_along, od, path, dtype
        )
    try:
        # the call's signature: a's and b's fields of tensor_sig (their addresses read once,
        # for the launch too), then out's, bias's and c's, and the options
        pa, pb = a.data_ptr(), b.data_ptr()
        key: Any = (
            a.shape,
            a.stride(),
            a.dtype,
            a.get_device(),
            pa & 15,
            a.is_neg(),
            b.shape,
            b.stride(),
            b.dtype,
            b.get_device(),
            pb & 15,
            b.is_neg(),
            None if out is None else tensor_sig(out),
            None if bias is None else tensor_sig(bias),
            None if c is None else tensor_sig(c),
            config,
            out_dtype,
            path,
            activation,
            bias_along,
            dtype,
        )
        ent = _ENTRIES.get(key)
    except (AttributeError, TypeError):  # not tensors, or an unhashable option: checked below
        key = ent = None
    if ent is not None and alpha == 1 and beta == 0:
        fast = ent.fast
        if fast is not None:  # a kept plan's launch from base addresses
            if HOT and ent.kept != HOT[0].generation:
                _keep_native(ent, a, b, out, config, out_dtype, dtype, path, bias, activation, bias_along)
            return fast(a, b, out, bias, pa, pb)
    if c is None and (beta != 0 or alpha != 1) and (beta != 0 or _dtname(a.dtype) not in _FP8):
        raise GemmInputError(
            "gemm: beta != 0 or alpha != 1 needs the C input c (pass beta=0 with c for alpha alone)"
        )
    if ent is None:
        tdev = _check_devices([("a", a), ("b", b), ("out", out), ("bias", bias), ("c", c)])
        od = out_dtype_of(a, out.dtype if out_dtype is None and out is not None else out_dtype)
        typed = typed_kind(a, b, dtype, bias, c, activation, alpha, beta)
        if typed is not None:
            ent = _TypedEntry(torch, tdev, a, b, typed, od, config, activation, bias_along)
        else:
            opts = dict(config=config, path=path, activation=activation, bias_along=bias_along)
            ent = _Entry(torch, tdev, a, b, out, bias, c, opts, od)
            if ent.fast is not None:  # (no C input) the native front's from the next call
                if HOT:
                    _keep_native(ent, a, b, out, config, out_dtype, dtype, path, bias, activation, bias_along)
                else:
                    _start_native()
        if key is not None:
            if len(_ENTRIES) >= _ENTRY_CAP:
                _ENTRIES.pop(next(iter(_ENTRIES)))
            _ENTRIES[key] = ent
    return ent.run(a, b, out, bias, c, alpha, beta)


class _TypedEntry:
    """A call signature of the typed kernels (tf32, int8, fp8): ``typed.typed_gemm`` on the
    tensors themselves, on torch's current stream of their device."""

    def __init__(
        self,
        torch: Any,
        tdev: Any,
        a: Any,
        b: Any,
        typed: str,
        od: str,
        config: Any,
        activation: Optional[str] = None,
        bias_along: str = "n",
    ) -> None:
        from ..config import TC_TYPES

        result_shape(a, b)
        outs = TC_TYPES[typed][2]
        if od not in outs:
            raise GemmInputError(
                f"gemm: {typed} products store {', '.join(outs)}; out_dtype={od!r} is not one"
            )
        self.torch, self.tdev, self.typed, self.od, self.config = torch, tdev, typed, od, config
        self.activation, self.bias_along = activation, bias_along
        self.dev = int(tdev.index) if tdev.index is not None else 0
        self.fast = None  # every call through typed_gemm

    def run(self, a: Any, b: Any, out: Any, bias: Any, c: Any, alpha: float, beta: float) -> Any:
        from .typed import typed_gemm

        torch = self.torch
        kw = dict(
            dtype=self.typed,
            out_dtype=self.od,
            scale=float(alpha),
            out=out,
            config=self.config,
            bias=bias,
            activation=self.activation,
            beta=float(beta),
            c=c,
            bias_along=self.bias_along,
        )
        if torch.cuda.current_device() == self.dev:
            return typed_gemm(a, b, **kw)
        with torch.cuda.device(self.dev), device.cupy().cuda.Device(self.dev):
            return typed_gemm(a, b, **kw)


# ============================================================================ the operator
_SCHEMA = (
    "(Tensor a, Tensor b, Tensor? bias=None, Tensor? c=None, str? activation=None, float alpha=1.0, "
    'float beta=0.0, str bias_along="n", ScalarType? out_dtype=None, str path="auto", str? dtype=None) '
    "-> Tensor"
)


def _register() -> Any:
    import torch

    def _impl(
        a: torch.Tensor,
        b: torch.Tensor,
        bias: Optional[torch.Tensor] = None,
        c: Optional[torch.Tensor] = None,
        activation: Optional[str] = None,
        alpha: float = 1.0,
        beta: float = 0.0,
        bias_along: str = "n",
        out_dtype: Optional[torch.dtype] = None,
        path: str = "auto",
        dtype: Optional[str] = None,
    ) -> torch.Tensor:
        return gemm_tensors(
            a,
            b,
            bias=bias,
            c=c,
            activation=activation,
            alpha=alpha,
            beta=beta,
            bias_along=bias_along,
            out_dtype=out_dtype,
            path=path,
            dtype=dtype,
        )

    # a plain library definition: the dispatcher calls _impl directly (torch.library.custom_op
    # wraps each call in a few more Python layers, about twice the host time per call)
    lib = torch.library.Library("layoutproof", "DEF")
    lib.define("gemm" + _SCHEMA)
    for key in ("CUDA", "CPU"):  # CPU: so that a CPU tensor gets the error naming the fix
        lib.impl("gemm", _impl, key)

    def _fake(
        a: torch.Tensor,
        b: torch.Tensor,
        bias: Optional[torch.Tensor] = None,
        c: Optional[torch.Tensor] = None,
        activation: Optional[str] = None,
        alpha: float = 1.0,
        beta: float = 0.0,
        bias_along: str = "n",
        out_dtype: Optional[torch.dtype] = None,
        path: str = "auto",
        dtype: Optional[str] = None,
    ) -> torch.Tensor:
        shape = result_shape(a, b)
        for nm, x in (("b", b), ("bias", bias), ("c", c)):
            if x is not None and x.device != a.device:
                raise GemmInputError(
                    f"gemm: a is on {a.device} and {nm} on {x.device}: "
                    f"put them on one device ({nm}.to(a.device))"
                )
        typed = typed_kind(a, b, dtype, bias, c, activation, alpha, beta)
        if typed is not None:
            from ..config import TC_TYPES

            od_name = out_dtype_of(a, out_dtype)
            if od_name not in TC_TYPES[typed][2]:
                raise GemmInputError(f"gemm: {typed} products store {', '.join(TC_TYPES[typed][2])}")
            return a.new_empty(shape, dtype=getattr(torch, _OUTPUTS[od_name]))
        if (c is None) and (alpha != 1 or beta != 0):
            raise GemmInputError("gemm: beta != 0 or alpha != 1 needs the C input c")
        if bias is not None:
            n = shape[-1] if bias_along == "n" else shape[-2]
            if tuple(bias.shape) != (n,):
                raise GemmInputError(f"gemm: bias must have shape ({n},) (bias_along={bias_along!r})")
        od = getattr(torch, _OUTPUTS[out_dtype_of(a, out_dtype)])
        return a.new_empty(shape, dtype=od)  # row-major, as the real call allocates it

    torch.library.register_fake("layoutproof::gemm", _fake, lib=lib)
    _LIB.append(lib)  # the registrations live as long as the library object
    return torch.ops.layoutproof.gemm


_OP: List[Any] = []
_LIB: List[Any] = []


def _op() -> Any:
    """The ``layoutproof::gemm`` operator (registered once per process)."""
    if not _OP:
        _OP.append(_register())
    return _OP[0]


def _registered() -> bool:
    """Register the operator if it is not yet (True once it is).  torch.compile runs this
    function as it is instead of tracing it (the attribute below is what
    ``torch._dynamo.assume_constant_result`` sets), so a first call of ``gemm`` inside a
    compiled function registers the operator before the trace names it."""
    _op()
    return True


_registered._dynamo_marked_constant = True  # type: ignore[attr-defined]


def __getattr__(name: str) -> Any:
    if name == "gemm_op":
        return _op()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if "torch" in sys.modules:  # imported beside torch (gemm on a tensor): the operator exists at once
    _op()
