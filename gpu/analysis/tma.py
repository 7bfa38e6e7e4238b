"""TMA pre-flight: the exact ``cuTensorMapEncodeTiled`` arguments of a user's tile, checked.

:func:`tma_preflight` takes the global tensor's layout (coordinates -> element offset;
symbolic extents and strides allowed), the shared-memory layout of the CTA tile (plain,
``Sw<B,M,S> o layout``, or a GMMA atom tiled to the tile) and the tiler (the tile's extent
per mode of the global tensor), and returns a :class:`TmaReport`:

* the tensor map (:class:`TensorMapArgs`): rank, ``globalDim``, ``globalStrides`` (bytes),
  ``boxDim``, ``elementStrides``, the data type, interleave, swizzle, L2 promotion and
  out-of-bounds fill enumerators -- printed as a C++ call (:meth:`TmaReport.cpp`) and as
  a ``cuda.bindings`` call (:meth:`TmaReport.python`), symbolic values as expressions of
  the runtime variables;
* every requirement the driver documents for those arguments (:func:`check_args`),
  decided for every value of the symbols the active assumptions admit (proved), refuted
  with symbol values confirmed by substitution, or unknown with the assumption that would
  settle it;
* the proof that the boxes land in shared memory exactly as the user's layout says:
  TMA writes a box dimension 0 fastest, densely, at the destination address the kernel
  gives, and applies the swizzle to the absolute byte address (``Sw<1,4,3>``,
  ``Sw<2,4,3>``, ``Sw<3,4,3>`` for the 32, 64, 128-byte modes: 16-byte chunk index XOR the
  128-byte line index, repeating every 256, 512, 1024 bytes); every element of the tile is
  compared (numpy, whole tile), refuted with the first coordinate whose byte differs.

Sources of the requirements (quoted in each check's ``source``):

* ``DRIVER``: CUDA Driver API, 6.30 "Tensor Map Object Management",
  ``cuTensorMapEncodeTiled``: tensorRank 1..5 (3..5 with interleave); globalAddress 16-byte
  aligned (32 with ``INTERLEAVE_32B``); globalDim non-zero and at most 2^32; globalStrides
  multiples of 16 (32 with ``INTERLEAVE_32B``) and less than 2^40; boxDim non-zero and at
  most 256, ``boxDim[0] * elementSize`` a multiple of 16 bytes with ``INTERLEAVE_NONE``;
  elementStrides non-zero and at most 8; with ``INTERLEAVE_NONE`` and a swizzle, the inner
  box dimension in bytes at most the swizzle span (32, 64, 128); ``INTERLEAVE_32B``
  requires ``SWIZZLE_32B``; ``FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA`` only for
  floating-point types.
* ``GUIDE``: CUDA C++ Programming Guide, "The Swizzle Modes" (TMA swizzle table): shared
  memory destinations 128-byte aligned; the pattern repeats after 256/512/1024 bytes, so a
  buffer aligned to that many bytes sees the pattern from its start.
* ``PTX``: PTX ISA 5.5.7 "Swizzling Modes" (the 16-byte-chunk tables, base offset
  ``(dstMem / 128) % 8|4|2``) and 5.5.3 "Tiled Mode" (traversal stride 1 in dimension 0
  without interleave).

>>> from layoutproof import Layout, composition, Swizzle
>>> a = Layout((256, 512), (512, 1))                    # row-major f16 A, (m, k)
>>> sA = composition(Swizzle(3, 3, 3), Layout((128, 64), (64, 1)))
>>> r = tma_preflight(a, sA, (128, 64), dtype="f16")
>>> r.status, r.args.box_dim, r.args.swizzle, r.boxes, r.smem_align
('proved', (64, 128), '128B', 1, 1024)
>>> r.args.global_dim, r.args.global_strides
((512, 256), (1024,))
>>> for part in r.cpp().splitlines()[-1].split(", CU_TENSOR_MAP_"):
...     print(part)
CUresult res = cuTensorMapEncodeTiled(&tensor_map
DATA_TYPE_FLOAT16, 2, ptr, globalDim, globalStrides, boxDim, elementStrides
INTERLEAVE_NONE
SWIZZLE_128B
L2_PROMOTION_L2_256B
FLOAT_OOB_FILL_NONE);
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from layoutproof import ComposedLayout, Layout, Swizzle
from layoutproof.errors import InadmissibleError, LayoutError, show
from layoutproof.inttuple import is_int
from layoutproof.outcome import PROVED, REFUTED, UNKNOWN, Outcome

from ..isa.gmma import GmmaSmemLayout

__all__ = [
    "TmaError",
    "TensorMapArgs",
    "TmaCheck",
    "BoxMismatch",
    "TmaReport",
    "DATA_TYPES",
    "data_type",
    "check_args",
    "tma_preflight",
]

DRIVER = "CUDA Driver API 6.30, cuTensorMapEncodeTiled"
GUIDE = "CUDA C++ Programming Guide, TMA swizzle modes"
PTX = "PTX ISA 5.5.7 Swizzling Modes"

#: ``CUtensorMapDataType`` enumerators (without the ``CU_TENSOR_MAP_DATA_TYPE_`` prefix):
#: value and element size in bytes
DATA_TYPES: Dict[str, Tuple[int, int]] = {
    "UINT8": (0, 1),
    "UINT16": (1, 2),
    "UINT32": (2, 4),
    "INT32": (3, 4),
    "UINT64": (4, 8),
    "INT64": (5, 8),
    "FLOAT16": (6, 2),
    "FLOAT32": (7, 4),
    "FLOAT64": (8, 8),
    "BFLOAT16": (9, 2),
    "FLOAT32_FTZ": (10, 4),
    "TFLOAT32": (11, 4),
    "TFLOAT32_FTZ": (12, 4),
}
_FLOATING = ("FLOAT16", "FLOAT32", "FLOAT64", "BFLOAT16", "FLOAT32_FTZ", "TFLOAT32", "TFLOAT32_FTZ")
# user spellings -> enumerator; 8-bit floats and signed bytes travel as UINT8 (TMA moves bytes)
_ALIASES: Dict[str, str] = {
    **{k: "UINT8" for k in ("u8", "uint8", "s8", "i8", "int8", "e4m3", "e5m2", "f8", "fp8")},
    **{k: "UINT8" for k in ("float8_e4m3fn", "float8_e5m2", "f8e4m3", "f8e5m2")},
    **{k: "UINT16" for k in ("u16", "uint16", "s16", "i16", "int16")},
    **{k: "UINT32" for k in ("u32", "uint32", "b32")},
    **{k: "INT32" for k in ("s32", "i32", "int32")},
    **{k: "UINT64" for k in ("u64", "uint64", "b64")},
    **{k: "INT64" for k in ("s64", "i64", "int64")},
    **{k: "FLOAT16" for k in ("f16", "fp16", "half", "float16")},
    **{k: "BFLOAT16" for k in ("bf16", "bfloat16")},
    **{k: "FLOAT32" for k in ("f32", "fp32", "float", "float32")},
    **{k: "TFLOAT32" for k in ("tf32", "tfloat32")},
    **{k: "FLOAT64" for k in ("f64", "fp64", "double", "float64")},
}
INTERLEAVES = ("NONE", "16B", "32B")
SWIZZLES = ("NONE", "32B", "64B", "128B")
L2_PROMOTIONS = ("NONE", "64B", "128B", "256B")
OOB_FILLS = ("NONE", "NAN_REQUEST_ZERO_FMA")
_SPAN = {"NONE": 0, "32B": 32, "64B": 64, "128B": 128}
_SW_BITS = {"NONE": 0, "32B": 1, "64B": 2, "128B": 3}
_SW_NAME = {v: k for k, v in _SW_BITS.items()}
_REPEAT = {"NONE": 128, "32B": 256, "64B": 512, "128B": 1024}
SMEM_ALIGN = 128  # GUIDE: every TMA shared-memory destination
SMEM_MAX = 227 * 1024  # bytes of shared memory one CTA can have on sm_90
SMEM_SOURCE = "CUDA C++ Programming Guide, compute capability 9.0: 227 KB of shared memory per block"


class TmaError(InadmissibleError):
    """Input the pre-flight cannot analyse as given: a global layout without a unit-stride
    mode or with hierarchical modes, a tiler that does not match the shared-memory layout
    or does not divide by the box, symbols without assumptions, an unknown data type or
    enumerator.  ``condition`` names what is wrong, ``witness`` where."""


def data_type(dtype: Any) -> str:
    """The ``CUtensorMapDataType`` enumerator (without its prefix) for a dtype name:
    ``f16`` -> ``FLOAT16``, ``bf16`` -> ``BFLOAT16``, ``tf32`` -> ``TFLOAT32``, 8-bit
    floats and signed bytes -> ``UINT8``; an enumerator name is taken as it is.

    >>> data_type("bf16"), data_type("e4m3"), data_type("CU_TENSOR_MAP_DATA_TYPE_INT32")
    ('BFLOAT16', 'UINT8', 'INT32')
    """
    if not isinstance(dtype, str):
        name = getattr(dtype, "name", None)  # numpy / torch dtypes
        if not isinstance(name, str):
            raise TmaError(f"dtype must be a name such as 'f16', got {show(dtype)}", condition="data type")
        dtype = name.replace("torch.", "")
    t = dtype.strip()
    u = t.upper().removeprefix("CU_TENSOR_MAP_DATA_TYPE_")
    if u in DATA_TYPES:
        return u
    low = t.lower().removeprefix("torch.")
    if low in _ALIASES:
        return _ALIASES[low]
    raise TmaError(
        f"unknown data type {t!r}: one of {sorted(_ALIASES)} or a CUtensorMapDataType name "
        "(packed sub-byte types are not analysed)",
        condition="data type",
        witness=t,
    )


def _enum(value: Any, allowed: Tuple[str, ...], what: str, prefix: str) -> str:
    if not isinstance(value, str):
        raise TmaError(f"{what} must be one of {allowed}, got {show(value)}", condition=what)
    v = value.strip().upper().removeprefix(prefix).removeprefix("L2_")
    if v in allowed:
        return v
    raise TmaError(f"{what} must be one of {allowed}, got {value!r}", condition=what, witness=value)


# ----------------------------------------------------------------------------- expressions
def _is_sym(x: Any) -> bool:
    return not is_int(x) and hasattr(x, "free_symbols")


def _int(x: Any) -> int:
    return int(x)


def _c_expr(e: Any) -> str:
    """An integer expression in C syntax (products, sums, integer powers)."""
    if is_int(e):
        return str(int(e))
    import sympy as sp

    if e.is_Integer or e.is_Symbol:
        return str(e)
    if isinstance(e, sp.Add):
        return " + ".join(_c_expr(a) for a in e.args).replace("+ -", "- ")
    if isinstance(e, sp.Mul):
        return " * ".join(f"({_c_expr(a)})" if isinstance(a, sp.Add) else _c_expr(a) for a in e.args)
    if isinstance(e, sp.Pow) and e.exp.is_Integer and int(e.exp) > 0:
        b = _c_expr(e.base)
        b = f"({b})" if not (e.base.is_Symbol or e.base.is_Integer) else b
        return " * ".join([b] * int(e.exp))
    from sympy.printing.c import ccode

    return str(ccode(e))


def _py_expr(e: Any) -> str:
    return str(int(e)) if is_int(e) else str(e)


# ----------------------------------------------------------------------------- the arguments
@dataclass(frozen=True)
class TensorMapArgs:
    """The arguments of ``cuTensorMapEncodeTiled`` but the pointer (enumerators without
    their prefix).  ``global_dim`` / ``global_strides`` may hold SymPy expressions (the
    runtime values); ``address_align`` is the alignment the caller guarantees for
    ``globalAddress`` (None: not stated, a precondition)."""

    dtype: str
    rank: int
    global_dim: Tuple[Any, ...]
    global_strides: Tuple[Any, ...]
    box_dim: Tuple[int, ...]
    element_strides: Tuple[int, ...]
    interleave: str = "NONE"
    swizzle: str = "NONE"
    l2_promotion: str = "NONE"
    oob_fill: str = "NONE"
    address_align: Optional[int] = None

    @property
    def elem_bytes(self) -> int:
        return DATA_TYPES[self.dtype][1]

    @property
    def is_symbolic(self) -> bool:
        return any(_is_sym(v) for v in self.global_dim + self.global_strides)

    @property
    def symbols(self) -> Tuple[str, ...]:
        """Names of the runtime values the arguments depend on, sorted."""
        names = set()
        for v in self.global_dim + self.global_strides:
            if _is_sym(v):
                names |= {str(s) for s in v.free_symbols}
        return tuple(sorted(names))

    def subs(self, values: Mapping[str, int]) -> "TensorMapArgs":
        """The arguments with the symbols replaced by ``values`` (name -> int)."""

        def one(v: Any) -> Any:
            if not _is_sym(v):
                return v
            r = v.subs({s: int(values[str(s)]) for s in v.free_symbols if str(s) in values})
            return int(r) if r.is_Integer else r

        return replace(
            self,
            global_dim=tuple(one(v) for v in self.global_dim),
            global_strides=tuple(one(v) for v in self.global_strides),
        )

    def enumerators(self) -> Dict[str, str]:
        """The full C enumerator names of the enum arguments."""
        return {
            "dtype": f"CU_TENSOR_MAP_DATA_TYPE_{self.dtype}",
            "interleave": f"CU_TENSOR_MAP_INTERLEAVE_{self.interleave}",
            "swizzle": f"CU_TENSOR_MAP_SWIZZLE_{self.swizzle}",
            "l2_promotion": "CU_TENSOR_MAP_L2_PROMOTION_"
            + ("NONE" if self.l2_promotion == "NONE" else f"L2_{self.l2_promotion}"),
            "oob_fill": f"CU_TENSOR_MAP_FLOAT_OOB_FILL_{self.oob_fill}",
        }

    def cpp(self, ptr: str = "ptr", name: str = "tensor_map") -> str:
        """A C++ call of ``cuTensorMapEncodeTiled`` with every array spelled out; symbolic
        values are expressions of runtime variables of the same names (64-bit)."""
        en = self.enumerators()
        r = self.rank
        lines = []
        if self.symbols:
            lines.append(f"// runtime values (cuuint64_t): {', '.join(self.symbols)}")
        lines.append(f"CUtensorMap {name};")
        lines.append(
            f"const cuuint64_t globalDim[{r}] = {{{', '.join(_c_expr(v) for v in self.global_dim)}}};"
        )
        if r > 1:
            st = ", ".join(_c_expr(v) for v in self.global_strides)
            lines.append(f"const cuuint64_t globalStrides[{r - 1}] = {{{st}}};  // bytes")
        else:
            lines.append("const cuuint64_t globalStrides[1] = {16};  // rank 1: never NULL (see driver_args)")
        lines.append(f"const cuuint32_t boxDim[{r}] = {{{', '.join(str(v) for v in self.box_dim)}}};")
        lines.append(
            f"const cuuint32_t elementStrides[{r}] = {{{', '.join(str(v) for v in self.element_strides)}}};"
        )
        lines.append(
            f"CUresult res = cuTensorMapEncodeTiled(&{name}, {en['dtype']}, {r}, {ptr}, globalDim, "
            f"globalStrides, boxDim, elementStrides, {en['interleave']}, {en['swizzle']}, "
            f"{en['l2_promotion']}, {en['oob_fill']});"
        )
        return "\n".join(lines)

    def python(self, ptr: str = "ptr", name: str = "tensor_map") -> str:
        """The same call through ``cuda.bindings.driver`` (symbols as Python variables)."""
        en = self.enumerators()

        def arr(kind: str, vals: Sequence[Any]) -> str:
            return "[" + ", ".join(f"driver.{kind}({_py_expr(v)})" for v in vals) + "]"

        return "\n".join(
            [
                "from cuda.bindings import driver",
                "",
                f"err, {name} = driver.cuTensorMapEncodeTiled(",
                f"    driver.CUtensorMapDataType.{en['dtype']},",
                f"    driver.cuuint32_t({self.rank}),",
                f"    {ptr},",
                f"    {arr('cuuint64_t', self.global_dim)},",
                f"    {arr('cuuint64_t', self.global_strides or (16,))},",
                f"    {arr('cuuint32_t', self.box_dim)},",
                f"    {arr('cuuint32_t', self.element_strides)},",
                f"    driver.CUtensorMapInterleave.{en['interleave']},",
                f"    driver.CUtensorMapSwizzle.{en['swizzle']},",
                f"    driver.CUtensorMapL2promotion.{en['l2_promotion']},",
                f"    driver.CUtensorMapFloatOOBfill.{en['oob_fill']},",
                ")",
            ]
        )

    def driver_args(self, driver: Any, ptr: int) -> Tuple[Any, ...]:
        """The positional arguments of ``driver.cuTensorMapEncodeTiled`` (``driver`` is
        ``cuda.bindings.driver``), the same as :meth:`python` spells; concrete values only.
        At rank 1 ``globalStrides`` has no entry the driver reads, but an empty array (a NULL
        pointer) is refused (driver 580.159.04, cuda.bindings 13.3.1:
        ``CUDA_ERROR_INVALID_VALUE``; with one entry the same map is accepted), so one
        placeholder entry, 16, is passed."""
        if self.is_symbolic:
            raise TmaError(
                f"the arguments depend on {', '.join(self.symbols)}: substitute values first (.subs)",
                condition="concrete arguments",
                witness=self.symbols,
            )
        en = self.enumerators()
        u32, u64 = driver.cuuint32_t, driver.cuuint64_t
        return (
            getattr(driver.CUtensorMapDataType, en["dtype"]),
            u32(self.rank),
            ptr,
            [u64(int(v)) for v in self.global_dim],
            [u64(int(v)) for v in self.global_strides or (16,)],
            [u32(int(v)) for v in self.box_dim],
            [u32(int(v)) for v in self.element_strides],
            getattr(driver.CUtensorMapInterleave, en["interleave"]),
            getattr(driver.CUtensorMapSwizzle, en["swizzle"]),
            getattr(driver.CUtensorMapL2promotion, en["l2_promotion"]),
            getattr(driver.CUtensorMapFloatOOBfill, en["oob_fill"]),
        )

    def as_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = dict(self.__dict__)
        for k in ("global_dim", "global_strides", "box_dim", "element_strides"):
            d[k] = [int(v) if is_int(v) else str(v) for v in d[k]]
        return d


# ----------------------------------------------------------------------------- checks
@dataclass(frozen=True, eq=False)
class TmaCheck(Outcome):
    """One requirement on the arguments: an :class:`~layoutproof.outcome.Outcome` with the
    ``constraint`` it checks, the ``source`` that documents it, and a ``hint`` (the
    assumption or change that would make it hold) where one is known."""

    constraint: str = ""
    source: str = ""
    hint: str = ""

    def as_dict(self) -> Dict[str, Any]:
        d = self.outcome_dict()
        d.update(constraint=self.constraint, source=self.source, hint=self.hint)
        return d


def _divisibility_hint(v: Any, m: int) -> str:
    """The assumption that makes ``v % m == 0``: for ``c * X``, ``X % (m / gcd(c, m)) == 0``."""
    try:
        c, rest = v.as_coeff_Mul()
        if c.is_Integer and rest != 1:
            need = m // math.gcd(int(c), m)
            return f"{rest} % {need} == 0" if need > 1 else ""
    except (AttributeError, TypeError):
        pass
    return f"({v}) % {m} == 0"


class _Decider:
    """Decides the checks of one call: concrete values directly, symbolic ones under the
    active assumptions (each decision within the per-call limit, the whole within
    ``budget_s``), refutations confirmed by substituting the counterexample."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self.t0 = time.perf_counter()
        self.methods: set = set()
        self.timed_out = False

    def check(
        self,
        constraint: str,
        statement: str,
        source: str,
        value: Any,
        ok: Callable[[int], bool],
        cond: Callable[[Any], Any],
        hint: str = "",
        what: str = "",
    ) -> TmaCheck:
        t = time.perf_counter()
        if not _is_sym(value):
            good = ok(int(value))
            self.methods.add("exhaustive")
            return TmaCheck(
                PROVED if good else REFUTED,
                statement,
                "exhaustive",
                cases=1,
                seconds=time.perf_counter() - t,
                witness=None if good else {what or constraint: int(value)},
                constraint=constraint,
                source=source,
                hint="" if good else hint,
            )
        from layoutproof import budget
        from layoutproof.symbolic import decide

        if self.timed_out or time.perf_counter() - self.t0 > self.budget_s:
            self.timed_out = True
            return TmaCheck(
                UNKNOWN,
                statement,
                "z3",
                reason="timeout (budget)",
                constraint=constraint,
                source=source,
                hint=hint,
            )
        try:
            left = max(0.05, self.budget_s - (time.perf_counter() - self.t0))
            with budget.deadline(left):
                d = decide(cond(value))
        except budget.BudgetExceeded:
            self.timed_out = True
            return TmaCheck(
                UNKNOWN,
                statement,
                "z3",
                reason="timeout (budget)",
                constraint=constraint,
                source=source,
                hint=hint,
            )
        self.methods.add(d.method)
        secs = time.perf_counter() - t
        if d.value is True:
            return TmaCheck(PROVED, statement, d.method, seconds=secs, constraint=constraint, source=source)
        cex = d.counterexample
        if cex:
            concrete = value.subs({s: int(cex[str(s)]) for s in value.free_symbols if str(s) in cex})
            if concrete.is_Integer and not ok(int(concrete)):
                w = dict(cex)
                w[what or constraint] = int(concrete)
                return TmaCheck(
                    REFUTED,
                    statement,
                    d.method,
                    seconds=secs,
                    witness=w,
                    constraint=constraint,
                    source=source,
                    hint=hint,
                )
        reason = d.reason or "not decided"
        if hint:
            reason += f"; assume {hint}"
        return TmaCheck(
            UNKNOWN,
            statement,
            d.method,
            seconds=secs,
            reason=reason,
            constraint=constraint,
            source=source,
            hint=hint,
        )


def _multiple(x: int, m: int) -> bool:
    return x % m == 0


def _multiple_cond(e: Any, m: int) -> Any:
    import sympy as sp

    return sp.Eq(sp.Mod(e, m), 0)


def _static(
    constraint: str, statement: str, source: str, good: bool, witness: Any = None, hint: str = ""
) -> TmaCheck:
    return TmaCheck(
        PROVED if good else REFUTED,
        statement,
        "exhaustive",
        cases=1,
        witness=None if good else witness,
        constraint=constraint,
        source=source,
        hint="" if good else hint,
    )


def check_args(args: TensorMapArgs, *, budget_s: float = 10.0) -> Tuple[TmaCheck, ...]:
    """Every requirement ``cuTensorMapEncodeTiled`` documents (``DRIVER``), decided for
    ``args``: concrete values exactly; symbolic ones for every value the active
    :func:`~layoutproof.symbolic.assuming` facts admit.

    >>> a = TensorMapArgs("FLOAT16", 2, (100, 64), (200,), (64, 64), (1, 1), swizzle="64B")
    >>> [c.constraint for c in check_args(a) if c.status == "refuted"]
    ['globalStrides multiple of 16', 'inner box bytes <= swizzle span']
    """
    return _check_args(args, _Decider(budget_s))


def _check_args(a: TensorMapArgs, dec: _Decider) -> Tuple[TmaCheck, ...]:
    import sympy as sp

    out: List[TmaCheck] = []
    E = a.elem_bytes
    r = a.rank
    il = a.interleave
    out.append(
        _static(
            "tensorRank",
            f"tensorRank = {r} is in [{3 if il != 'NONE' else 1}, 5]"
            + (" (interleaved)" if il != "NONE" else ""),
            f"{DRIVER}: tensorRank",
            (3 if il != "NONE" else 1) <= r <= 5,
            {"tensorRank": r},
            "merge or drop modes" if r > 5 else "interleaved maps have rank 3 to 5",
        )
    )
    n = (len(a.global_dim), len(a.global_strides) + 1, len(a.box_dim), len(a.element_strides))
    if n != (r, r, r, r):
        out.append(
            _static(
                "array lengths",
                f"globalDim, globalStrides, boxDim, elementStrides have {r}, {r - 1}, {r}, {r} entries",
                f"{DRIVER}: parameters",
                False,
                {"lengths": n},
            )
        )
        return tuple(out)
    if a.address_align is not None:
        need = 32 if il == "32B" else 16
        out.append(
            _static(
                "globalAddress alignment",
                f"globalAddress aligned to {a.address_align} bytes is {need}-byte aligned",
                f"{DRIVER}: globalAddress",
                a.address_align % need == 0,
                {"address_align": a.address_align},
                f"align the base pointer to {need} bytes",
            )
        )
    for i, v in enumerate(a.global_dim):
        out.append(
            dec.check(
                "globalDim range",
                f"globalDim[{i}] = {v} is in [1, 2^32]",
                f"{DRIVER}: globalDim",
                v,
                lambda x: 1 <= x <= 2**32,
                lambda e: sp.And(e >= 1, e <= 2**32),
                hint=f"{v} <= 2**32",
                what=f"globalDim[{i}]",
            )
        )
    sm = 32 if il == "32B" else 16
    for i, v in enumerate(a.global_strides):
        out.append(
            dec.check(
                f"globalStrides multiple of {sm}",
                f"globalStrides[{i}] = {v} bytes is a multiple of {sm}",
                f"{DRIVER}: globalStrides" + (" (INTERLEAVE_32B: 32)" if sm == 32 else ""),
                v,
                functools.partial(_multiple, m=sm),
                functools.partial(_multiple_cond, m=sm),
                hint=_divisibility_hint(v, sm)
                if _is_sym(v)
                else f"pad the stride to a multiple of {sm} bytes",
                what=f"globalStrides[{i}]",
            )
        )
        out.append(
            dec.check(
                "globalStrides range",
                f"globalStrides[{i}] = {v} bytes is in [0, 2^40)",
                f"{DRIVER}: globalStrides",
                v,
                lambda x: 0 <= x < 2**40,
                lambda e: sp.And(e >= 0, e < 2**40),
                hint=f"{v} < 2**40",
                what=f"globalStrides[{i}]",
            )
        )
    for i, b in enumerate(a.box_dim):
        out.append(
            _static(
                "boxDim range",
                f"boxDim[{i}] = {b} is in [1, 256]",
                f"{DRIVER}: boxDim",
                1 <= b <= 256,
                {f"boxDim[{i}]": b},
                "split the box (box=...) so every extent is at most 256",
            )
        )
    if il == "NONE":
        out.append(
            _static(
                "inner box multiple of 16 bytes",
                f"boxDim[0] * {E} = {a.box_dim[0] * E} bytes is a multiple of 16",
                f"{DRIVER}: boxDim (INTERLEAVE_NONE)",
                a.box_dim[0] * E % 16 == 0,
                {"boxDim[0] bytes": a.box_dim[0] * E},
                "make the contiguous extent of the box a multiple of 16 bytes",
            )
        )
    for i, s in enumerate(a.element_strides):
        out.append(
            _static(
                "elementStrides range",
                f"elementStrides[{i}] = {s} is in [1, 8]",
                f"{DRIVER}: elementStrides",
                1 <= s <= 8,
                {f"elementStrides[{i}]": s},
            )
        )
    if il == "NONE" and a.swizzle != "NONE":
        span = _SPAN[a.swizzle]
        inner = a.box_dim[0] * E
        out.append(
            _static(
                "inner box bytes <= swizzle span",
                f"the inner box dimension, {inner} bytes, is at most the {a.swizzle} swizzle span",
                f"{DRIVER}: interleave/swizzle; {GUIDE}",
                inner <= span,
                {"inner box bytes": inner, "swizzle span": span},
                f"use a box of at most {span // E} contiguous elements (or a wider swizzle)",
            )
        )
    if il == "32B":
        out.append(
            _static(
                "INTERLEAVE_32B needs SWIZZLE_32B",
                f"interleave 32B with swizzle {a.swizzle}: the driver requires SWIZZLE_32B",
                f"{DRIVER}: swizzle",
                a.swizzle == "32B",
                {"swizzle": a.swizzle},
            )
        )
    if a.oob_fill != "NONE":
        out.append(
            _static(
                "NaN fill needs a floating-point type",
                f"FLOAT_OOB_FILL_{a.oob_fill} with data type {a.dtype}",
                f"{DRIVER}: oobFill",
                a.dtype in _FLOATING,
                {"dtype": a.dtype},
            )
        )
    return tuple(out)


# ----------------------------------------------------------------------------- the report
@dataclass(frozen=True)
class BoxMismatch:
    """Where the bytes TMA writes differ from the user's shared-memory layout: the tile
    coordinate (per mode), the box that carries it, and the two byte addresses."""

    coordinate: Tuple[int, ...]
    box: int
    tma_byte: int
    layout_byte: int

    def __str__(self) -> str:
        return (
            f"tile coordinate {self.coordinate} (box {self.box}): TMA writes it at byte {self.tma_byte}, "
            f"the shared-memory layout puts it at byte {self.layout_byte}"
        )

    def as_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__, coordinate=list(self.coordinate))


@dataclass(frozen=True, eq=False)
class TmaReport(Outcome):
    """The pre-flight of one tensor map: an :class:`~layoutproof.outcome.Outcome` (proved:
    the driver accepts the arguments for every admitted shape and the boxes write exactly
    the shared-memory layout; refuted: ``witness`` from the first failing check; unknown:
    ``reason``), with

    * ``args``: the :class:`TensorMapArgs`;
    * ``dims``: the global mode of each TMA dimension (dimension 0 the unit-stride mode);
    * ``box``: the box extent per global mode; ``boxes``: copies per tile, with
      ``box_origins`` (tile coordinate of each box) and ``box_offsets`` (its shared-memory
      destination, bytes from the tile's start, before the swizzle);
    * ``tx_bytes``: the bytes one tile's copies deliver (the barrier's transaction count);
    * ``smem_align``: the alignment the tile's buffer needs (128, or the swizzle's repeat);
    * ``checks``: every :class:`TmaCheck`."""

    args: Optional[TensorMapArgs] = None
    dims: Tuple[int, ...] = ()
    box: Tuple[int, ...] = ()
    boxes: int = 0
    box_origins: Tuple[Tuple[int, ...], ...] = ()
    box_offsets: Tuple[int, ...] = ()
    tx_bytes: int = 0
    smem_align: int = SMEM_ALIGN
    checks: Tuple[TmaCheck, ...] = ()

    def failed(self) -> Tuple[TmaCheck, ...]:
        """The checks that are refuted or unknown."""
        return tuple(c for c in self.checks if c.status != PROVED)

    def cpp(self, ptr: str = "ptr", name: str = "tensor_map") -> str:
        """The literal C++ call (see :meth:`TensorMapArgs.cpp`)."""
        if self.args is None:
            raise TmaError("no tensor map was derived", condition="arguments")
        return self.args.cpp(ptr, name)

    def python(self, ptr: str = "ptr", name: str = "tensor_map") -> str:
        """The literal ``cuda.bindings`` call (see :meth:`TensorMapArgs.python`)."""
        if self.args is None:
            raise TmaError("no tensor map was derived", condition="arguments")
        return self.args.python(ptr, name)

    def text(self) -> str:
        """The report in lines: the verdict, the map, each check, the C++ call."""
        out = [self.line()]
        if self.args is not None:
            a = self.args
            out.append(
                f"tensor map: {a.dtype}, rank {a.rank}, dims = global modes {list(self.dims)}, "
                f"globalDim {[str(v) for v in a.global_dim]}, "
                f"globalStrides {[str(v) for v in a.global_strides]} B, "
                f"boxDim {list(a.box_dim)}, swizzle {a.swizzle}"
            )
            out.append(
                f"{self.boxes} box(es) per tile of {list(self.box)} (per global mode), "
                f"{self.tx_bytes} bytes per tile; "
                f"shared-memory buffer aligned to {self.smem_align} bytes"
            )
        for c in self.checks:
            out.append("  " + c.line() + (f"  [hint: {c.hint}]" if c.hint and c.status != PROVED else ""))
        if self.args is not None:
            out.append(self.args.cpp())
        return "\n".join(out)

    def as_dict(self) -> Dict[str, Any]:
        d = self.outcome_dict()
        w = self.witness
        d["witness"] = w.as_dict() if isinstance(w, BoxMismatch) else w
        d.update(
            args=self.args.as_dict() if self.args is not None else None,
            dims=list(self.dims),
            box=list(self.box),
            boxes=self.boxes,
            box_origins=[list(o) for o in self.box_origins],
            box_offsets=list(self.box_offsets),
            tx_bytes=self.tx_bytes,
            smem_align=self.smem_align,
            checks=[c.as_dict() for c in self.checks],
            cpp=self.cpp() if self.args is not None else None,
        )
        return d


# ----------------------------------------------------------------------------- derivation
def _gmem_modes(gmem: Any) -> Tuple[List[Any], List[Any]]:
    if not isinstance(gmem, Layout):
        raise TmaError(
            f"the global tensor is a Layout (coordinates -> element offset), got {type(gmem).__name__}",
            condition="global layout",
        )
    ext: List[Any] = []
    st: List[Any] = []
    for i in range(gmem.rank):
        fs, fd = (gmem[i] if gmem.rank > 1 or isinstance(gmem.shape, tuple) else gmem).flat_modes()
        if len(fs) != 1:
            raise TmaError(
                f"mode {i} of the global layout {gmem} is hierarchical {fs}: give one mode per tensor "
                "dimension (a flat layout)",
                condition="flat global layout",
                witness=i,
            )
        ext.append(fs[0])
        st.append(fd[0])
    return ext, st


def _split_smem(smem: Any, E: int) -> Tuple[Optional[Swizzle], Any, Layout, Any]:
    """``(swizzle, offset, inner layout, the layout itself)`` of the shared-memory layout."""
    if isinstance(smem, GmmaSmemLayout):
        if smem.elem_bits != 8 * E:
            raise TmaError(
                f"the GMMA layout holds {smem.elem_bits}-bit elements, the data type {8 * E}-bit ones",
                condition="element width",
                witness=(smem.elem_bits, 8 * E),
            )
        smem = smem.layout
    if isinstance(smem, ComposedLayout):
        sw, off, inner = smem.layout_a, smem.offset, smem.layout_b
        if not isinstance(sw, Swizzle) or not isinstance(inner, Layout):
            raise TmaError(
                f"{smem}: the shared-memory layout is a Layout or Swizzle o offset o Layout",
                condition="shared-memory layout",
            )
        if not is_int(off):
            raise TmaError(f"{smem}: symbolic offset", condition="concrete shared-memory layout")
        return sw, int(off), inner, smem
    if isinstance(smem, Layout):
        return None, 0, smem, smem
    raise TmaError(
        f"the shared-memory layout is a Layout, a swizzled ComposedLayout or a GmmaSmemLayout, got "
        f"{type(smem).__name__}",
        condition="shared-memory layout",
    )


def _leaves(inner: Layout, tile: Sequence[int]) -> List[List[Tuple[int, int]]]:
    """Per tile mode, its leaves ``(extent, stride)`` in order (colexicographic)."""
    r = len(tile)
    out: List[List[Tuple[int, int]]] = []
    for i in range(r):
        m = inner[i] if (r > 1 or isinstance(inner.shape, tuple)) and inner.rank == r else inner
        fs, fd = m.flat_modes()
        out.append([(int(s), int(d)) for s, d in zip(fs, fd)])
    return out


def _derive_box(
    leaves: List[List[Tuple[int, int]]], caps: Sequence[Optional[int]], fixed: bool, row: int = 0
) -> Tuple[List[int], List[int]]:
    """The box: the longest chain of leaves whose strides grow densely from 1 (``stride ==
    product of the extents before it``), each tile mode one consecutive group of its leading
    leaves, capped per mode (a leaf split where the cap falls inside it).  With a swizzle,
    ``row`` is its span in elements: a first group narrower than that is padded to it (TMA
    starts each swizzled row at a multiple of the span).  Returns the box extent per tile
    mode and the tile modes in box order (innermost first)."""
    r = len(leaves)
    box = [1] * r
    taken = [0] * r
    order: List[int] = []
    closed = [False] * r
    work = [list(lv) for lv in leaves]
    for i in range(r):  # extent-1 leading leaves are free
        while taken[i] < len(work[i]) and work[i][taken[i]][0] == 1:
            taken[i] += 1
    cur = 1
    while True:
        cand = [
            i
            for i in range(r)
            if not closed[i]
            and taken[i] < len(work[i])
            and work[i][taken[i]][1] == cur
            and work[i][taken[i]][0] > 1
        ]
        if not cand:
            if len(order) == 1 and row and cur < row and row % cur == 0:
                cur = row  # the rest of the swizzle span is padding
                closed[order[0]] = True
                continue
            break
        i = cand[0]
        if order and order[-1] != i:
            if i in order:
                break
            closed[order[-1]] = True
        if i not in order:
            order.append(i)
        ext, st = work[i][taken[i]]
        cap = caps[i]
        if cap is not None and box[i] * ext > cap:
            f = cap // box[i] if cap % box[i] == 0 else 1
            while f > 1 and ext % f:
                f -= 1
            if f <= 1:
                closed[i] = True
                break
            work[i][taken[i]] = (f, st)
            work[i].insert(taken[i] + 1, (ext // f, st * f))
            ext = f
        box[i] *= ext
        taken[i] += 1
        cur *= ext
        while taken[i] < len(work[i]) and work[i][taken[i]][0] == 1:
            taken[i] += 1
        if cap is not None and box[i] >= cap:
            closed[i] = True
    if fixed:
        for i in range(r):
            c = caps[i]
            if c is not None and box[i] != c:
                box[i] = int(c)  # the placement check shows where it goes wrong
    return box, order


def _tma_swizzle(addr: np.ndarray, bits: int) -> np.ndarray:
    """PTX 5.5.7: the 16-byte chunk index within a 128-byte line XOR the line index
    modulo 2, 4, 8 (``Sw<bits,4,3>`` on the absolute byte address)."""
    if bits == 0:
        return addr
    return addr ^ (((addr >> 7) & ((1 << bits) - 1)) << 4)


def _swizzle_mode(sw: Optional[Swizzle], E: int) -> Tuple[str, str]:
    """The TMA swizzle mode for the layout's element swizzle, and a note when the
    swizzle is not one TMA encodes (the placement check then decides)."""
    if sw is None or sw.bits == 0:
        return "NONE", ""
    mb = sw.base + int(math.log2(E))
    mode = _SW_NAME.get(min(sw.bits, 3), "128B")
    if sw.shift == 3 and mb == 4 and sw.bits <= 3:
        return mode, ""
    return mode, (
        f"{sw} on {E}-byte elements is Sw<{sw.bits},{mb},{sw.shift}> on bytes; TMA swizzles with "
        "Sw<1,4,3>, Sw<2,4,3> or Sw<3,4,3> only"
    )


def tma_preflight(
    gmem: Any,
    smem: Any,
    tiler: Sequence[int],
    *,
    dtype: Any,
    box: Optional[Sequence[int]] = None,
    interleave: str = "NONE",
    l2_promotion: str = "256B",
    oob_fill: str = "NONE",
    base_align: Optional[int] = None,
    budget_s: float = 10.0,
) -> TmaReport:
    """Derive and check the tensor map that loads tiles of ``gmem`` into ``smem``.

    Args:
        gmem: the global tensor, one flat mode per dimension -> element offset; extents and
            strides may be symbolic (decided under the active ``assuming`` facts; every
            symbol must appear in one).  Exactly one mode has stride 1: TMA dimension 0.
        smem: the tile in shared memory, tile coordinate -> element offset: a Layout,
            ``Swizzle o offset o Layout`` (element swizzle) or a
            :class:`~layoutproof.gpu.isa.gmma.GmmaSmemLayout`; its modes are the tiler's.
        tiler: the tile's extent per mode of ``gmem`` (fewer modes: the rest are 1).
        dtype: the element type (``f16``, ``bf16``, ``tf32``, ``f32``, ``u8``, ``e4m3``, ...).
        box: the box per tiler mode (default: the largest the shared-memory layout allows,
            extents above 256 split); it must divide the tile.
        interleave, l2_promotion, oob_fill: the enumerators (``NONE``/``16B``/``32B``;
            ``NONE``/``64B``/``128B``/``256B``; ``NONE``/``NAN_REQUEST_ZERO_FMA``).
        base_align: the alignment of the global base pointer, when known (checked).
        budget_s: the time for all symbolic decisions together.

    Bad input raises :class:`TmaError` naming the condition.
    """
    t0 = time.perf_counter()
    dt = data_type(dtype)
    E = DATA_TYPES[dt][1]
    il = _enum(interleave, INTERLEAVES, "interleave", "CU_TENSOR_MAP_INTERLEAVE_")
    l2 = _enum(l2_promotion, L2_PROMOTIONS, "l2_promotion", "CU_TENSOR_MAP_L2_PROMOTION_")
    oob = _enum(oob_fill, OOB_FILLS, "oob_fill", "CU_TENSOR_MAP_FLOAT_OOB_FILL_")
    ext, st = _gmem_modes(gmem)
    R = len(ext)
    tile = _tiler(tiler, R)
    r = len(tile)
    sw, off, inner, full = _split_smem(smem, E)
    if inner.is_symbolic:
        raise TmaError(
            f"the shared-memory layout {full} is symbolic: a tile has fixed extents",
            condition="concrete tile",
        )
    _match_tile(inner, tile, full)
    _require_assumptions(gmem)
    unit = [i for i in range(R) if is_int(st[i]) and int(st[i]) == 1]
    if not unit:
        raise TmaError(
            f"no mode of the global layout {gmem} has stride 1: TMA dimension 0 is the contiguous one "
            "(its stride is the element size); transpose the view or copy without TMA",
            condition="unit-stride mode",
            witness=tuple(str(s) for s in st),
        )
    if len(unit) > 1:
        nontriv = [i for i in unit if not (is_int(ext[i]) and int(ext[i]) == 1)]
        unit = nontriv or unit
    if box is not None:
        if len(box) != r or any(not is_int(b) or int(b) < 1 or tile[i] % int(b) for i, b in enumerate(box)):
            raise TmaError(
                f"box {tuple(box)} must give one positive extent per tiler mode dividing the tile "
                f"{tuple(tile)}",
                condition="box divides the tile",
                witness=tuple(box),
            )
    leaves = _leaves(inner, tile)
    caps: List[Optional[int]] = (
        [int(b) for b in box] if box is not None else [None if i == unit[0] else 256 for i in range(r)]
    )
    mode, sw_note = _swizzle_mode(sw, E)
    bx, order = _derive_box(leaves, caps, box is not None, _SPAN[mode] // E)
    u = order[0] if order and order[0] in unit else unit[0]
    dims = [u] + [i for i in order if i != u] + [i for i in range(R) if i != u and i not in order]
    box_full = bx + [1] * (R - r)
    args = TensorMapArgs(
        dtype=dt,
        rank=R,
        global_dim=tuple(ext[i] for i in dims),
        global_strides=tuple(_times(st[i], E) for i in dims[1:]),
        box_dim=tuple(int(box_full[i]) for i in dims),
        element_strides=(1,) * R,
        interleave=il,
        swizzle=mode,
        l2_promotion=l2,
        oob_fill=oob,
        address_align=base_align,
    )
    dec = _Decider(budget_s)
    checks = list(_check_args(args, dec))
    first = order[0] if order else None
    place, extra = _placement(full, inner, sw, off, tile, bx, dims, u, E, mode, il, sw_note, first)
    checks.extend(place)
    repeat = _REPEAT[mode]
    what = f"TMA load of {tuple(tile)} tiles of {gmem} into {full} ({dt})"
    facts = _facts_text()
    scope = "every value of the symbols" + (f" with {facts}" if facts else "") if args.is_symbolic else ""
    pre = f"globalAddress {32 if il == '32B' else 16}-byte aligned" if base_align is None else ""
    pre_smem = f"the tile's buffer {max(repeat, SMEM_ALIGN)}-byte aligned"
    scope = "; ".join(x for x in (scope, pre, pre_smem) if x)
    status, witness, reason = _verdict(checks)
    methods = sorted(dec.methods | {"exhaustive"})
    return TmaReport(
        status,
        f"{what}: cuTensorMapEncodeTiled accepts the map and its boxes write exactly the tile",
        "+".join(methods),
        scope=scope,
        cases=int(np.prod(tile)),
        seconds=time.perf_counter() - t0,
        witness=witness,
        reason=reason,
        args=args,
        dims=tuple(dims),
        box=tuple(box_full),
        boxes=extra["boxes"],
        box_origins=extra["origins"],
        box_offsets=extra["offsets"],
        tx_bytes=int(np.prod(tile)) * E,
        smem_align=max(repeat, SMEM_ALIGN),
        checks=tuple(checks),
    )


def _times(s: Any, E: int) -> Any:
    return int(s) * E if is_int(s) else s * E


def _tiler(tiler: Any, R: int) -> List[int]:
    if is_int(tiler):
        tiler = (tiler,)
    if not isinstance(tiler, (tuple, list)) or not tiler:
        raise TmaError(f"the tiler is a tuple of extents, got {show(tiler)}", condition="tiler")
    out = []
    for t in tiler:
        if not is_int(t) or int(t) < 1:
            raise TmaError(
                f"tiler {show(tiler)}: every extent must be a positive integer (a tile has a fixed shape)",
                condition="tiler",
                witness=show(t),
            )
        out.append(int(t))
    if len(out) > R:
        raise TmaError(
            f"tiler {tuple(out)} has {len(out)} modes, the global tensor {R}",
            condition="tiler fits the tensor",
            witness=(len(out), R),
        )
    return out


def _match_tile(inner: Layout, tile: List[int], full: Any) -> None:
    r = len(tile)
    if r == 1:
        sizes = [int(inner.size)]
    else:
        if inner.rank != r:
            raise TmaError(
                f"the shared-memory layout {full} has {inner.rank} modes, the tiler {len(tile)}",
                condition="shared-memory layout matches the tiler",
                witness=(inner.rank, r),
            )
        sizes = [int(inner[i].size) for i in range(r)]
    if sizes != tile:
        raise TmaError(
            f"the shared-memory layout {full} has mode extents {tuple(sizes)}, the tiler {tuple(tile)}",
            condition="shared-memory layout matches the tiler",
            witness=(tuple(sizes), tuple(tile)),
        )


def _require_assumptions(gmem: Layout) -> None:
    if not gmem.is_symbolic:
        return
    from layoutproof.symbolic import assumptions

    mentioned = set()
    for f in assumptions():
        mentioned |= {str(s) for s in getattr(f, "free_symbols", ())}
    missing = sorted({str(s) for s in gmem.free_symbols} - mentioned)
    if missing:
        ex = ", ".join(f"'{n} <= 2**31'" for n in missing)
        raise TmaError(
            f"{', '.join(missing)} appear(s) in the global layout {gmem} without any assumption: the driver "
            f"limits globalDim to 2^32 and globalStrides to 2^40 bytes, so state the ranges (and "
            f"divisibility) the kernel admits, e.g. assuming({ex})",
            condition="assumptions for symbols",
            witness=tuple(missing),
        )


def _facts_text() -> str:
    try:
        from layoutproof.symbolic import assumptions, pretty

        return ", ".join(pretty(f) for f in assumptions())
    except (LayoutError, ImportError):
        return ""


def _placement(
    full: Any,
    inner: Layout,
    sw: Optional[Swizzle],
    off: int,
    tile: List[int],
    bx: List[int],
    dims: List[int],
    u: int,
    E: int,
    mode: str,
    il: str,
    sw_note: str,
    first: Optional[int],
) -> Tuple[List[TmaCheck], Dict[str, Any]]:
    """Exhaustive: the byte TMA writes each tile element to, against the user's layout."""
    t = time.perf_counter()
    r = len(tile)
    n = int(np.prod(tile))
    user = np.asarray(full.eval_all(), dtype=np.int64).reshape(-1) * E
    pre = np.asarray(inner.eval_all(), dtype=np.int64).reshape(-1) + off
    idx = np.arange(n, dtype=np.int64)
    weights = np.cumprod([1] + tile[:-1]).astype(np.int64)
    coords = [(idx // weights[i]) % tile[i] for i in range(r)]
    b = [coords[i] % bx[i] for i in range(r)]
    q = [coords[i] // bx[i] for i in range(r)]
    origin = sum(q[i] * bx[i] * weights[i] for i in range(r))
    dst = pre[origin] * E  # the unswizzled address of the box's first element
    dense = np.zeros(n, dtype=np.int64)
    pitch = 1
    row = _SPAN[mode] // E
    for k, d in enumerate(dims):
        if d < r:
            dense += b[d] * pitch
            pitch *= bx[d]
        if k == 0 and mode != "NONE":
            pitch = max(pitch, row)  # a swizzled row is padded to the span
    model = _tma_swizzle(dst + dense * E, _SW_BITS[mode])
    nb = [tile[i] // bx[i] for i in range(r)]
    box_id = sum(q[i] * int(np.prod(nb[:i])) for i in range(r))
    firsts = np.unique(origin)
    origins = tuple(tuple(int(c[o]) for c in coords) for o in firsts)
    offsets = tuple(int(pre[o] * E) for o in firsts)
    extra = {"boxes": len(firsts), "origins": origins, "offsets": offsets}
    checks: List[TmaCheck] = []
    secs = lambda: time.perf_counter() - t  # noqa: E731
    stmt = (
        f"the {len(firsts)} box(es) of {[bx[d] for d in dims if d < r]} (TMA dimension 0 = mode {u}, "
        f"dimension 0 fastest, swizzle {mode}) write every element where {full} puts it"
    )
    if il != "NONE":
        checks.append(
            TmaCheck(
                UNKNOWN,
                stmt,
                "exhaustive",
                reason="the shared-memory placement of interleaved boxes is not modelled",
                constraint="boxes write the layout",
                source=PTX,
            )
        )
        return checks, extra
    bad_dst = np.flatnonzero(dst % SMEM_ALIGN)
    checks.append(
        TmaCheck(
            REFUTED if bad_dst.size else PROVED,
            f"every box destination is {SMEM_ALIGN}-byte aligned (from a {SMEM_ALIGN}-byte aligned buffer)",
            "exhaustive",
            cases=len(firsts),
            seconds=secs(),
            witness=(
                {
                    "box origin": tuple(int(c[bad_dst[0]]) for c in coords) if bad_dst.size else None,
                    "destination byte": int(dst[bad_dst[0]]),
                }
                if bad_dst.size
                else None
            ),
            constraint="box destination alignment",
            source=f"{GUIDE} (shared memory alignment)",
            hint="pad so that every box starts on a 128-byte boundary" if bad_dst.size else "",
        )
    )
    span_bytes = int(max(user.max(), model.max())) + E
    checks.append(
        TmaCheck(
            PROVED if span_bytes <= SMEM_MAX else REFUTED,
            f"the tile's {span_bytes} bytes of shared memory fit the {SMEM_MAX} a CTA can have",
            "exhaustive",
            cases=1,
            witness=None if span_bytes <= SMEM_MAX else {"bytes": span_bytes},
            constraint="tile fits in shared memory",
            source=SMEM_SOURCE,
            hint="" if span_bytes <= SMEM_MAX else "use a smaller tile",
        )
    )
    diff = np.flatnonzero(model != user)
    if diff.size:
        k = int(diff[0])
        w = BoxMismatch(tuple(int(c[k]) for c in coords), int(box_id[k]), int(model[k]), int(user[k]))
        hint = sw_note
        if not hint and tile[u] > 1 and (bx[u] == 1 or (first is not None and first != u)):
            hint = (
                f"TMA writes mode {u} (the global unit-stride mode) fastest; the layout's contiguous "
                "mode differs"
            )
        checks.append(
            TmaCheck(
                REFUTED,
                stmt,
                "exhaustive",
                cases=n,
                seconds=secs(),
                witness=w,
                constraint="boxes write the layout",
                source=PTX,
                hint=hint,
            )
        )
        return checks, extra
    uniq = np.unique(user).size
    if uniq != n:
        s = np.sort(user)
        dup = int(s[np.flatnonzero(np.diff(s) == 0)[0]])
        ks = np.flatnonzero(user == dup)[:2]
        checks.append(
            TmaCheck(
                REFUTED,
                f"the tile's {n} elements occupy {n} distinct shared-memory places",
                "exhaustive",
                cases=n,
                seconds=secs(),
                witness={
                    "coordinates": [tuple(int(c[k]) for c in coords) for k in ks],
                    "byte": dup,
                },
                constraint="boxes write the layout",
                source=PTX,
            )
        )
        return checks, extra
    checks.append(
        TmaCheck(
            PROVED,
            stmt,
            "exhaustive",
            cases=n,
            seconds=secs(),
            constraint="boxes write the layout",
            source=PTX,
        )
    )
    return checks, extra


def _verdict(checks: Sequence[TmaCheck]) -> Tuple[Any, Any, Optional[str]]:
    for c in checks:
        if c.status == REFUTED:
            w = c.witness
            if isinstance(w, BoxMismatch):
                return REFUTED, w, None
            text = f"{c.constraint}: {c.statement}"
            if isinstance(w, dict):
                text += " (" + ", ".join(f"{k} = {v}" for k, v in w.items()) + ")"
            if c.hint:
                text += f"; {c.hint}"
            return REFUTED, text, None
    for c in checks:
        if c.status == UNKNOWN:
            return UNKNOWN, None, f"{c.constraint}: {c.reason}"
    return PROVED, None, None
