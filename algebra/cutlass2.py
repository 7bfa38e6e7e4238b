"""CUTLASS 2.x layouts as CuTe layouts: ``from_cutlass2("ColumnMajorInterleaved<32>", (M, N))``.

CUTLASS 2.x describes memory with layout *classes* (``cutlass/layout/*.h``): a stride vector
held at run time and an ``operator()`` from a logical coordinate (``MatrixCoord``,
``PitchLinearCoord``, ``Tensor4DCoord``, ...) to an offset.  Each class supported here is,
over a given extent, exactly a CuTe layout: the result's top-level modes are the class's
coordinate, in the class's order (``(row, column)``, ``(contiguous, strided)``,
``(n, h, w, c)``, ``(n, d, h, w, c)``), and ``L(coord) == Class(stride)(coord)`` for every
coordinate of the extent.  The TensorOp multiplicand layouts (the Turing/Ampere shared-memory
layouts: an XOR of the vector index within a 128-byte line by the low bits of the row) are
swizzled layouts, ``Swizzle o 0 o Layout``.

Supported classes (``CUTLASS2_CLASSES``), template arguments as in C++:

* ``RowMajor``, ``ColumnMajor``, ``PitchLinear``, ``AffineRank2RowMajor``,
  ``AffineRank2ColumnMajor``;
* ``RowMajorInterleaved<k>``, ``ColumnMajorInterleaved<k>``, ``RowMajorBlockLinear<r, c>``,
  ``ColumnMajorBlockLinear<r, c>``;
* ``TensorNHWC``, ``TensorNCHW``, ``TensorNCxHWx<k>``, ``TensorCxRSKx<k>``, ``TensorNDHWC``;
* ``TensorOpMultiplicand<bits, crosswise>``, ``TensorOpMultiplicandCongruous<bits, crosswise>``,
  ``TensorOpMultiplicandCrosswise<bits, crosswise>`` and their ``RowMajor...`` /
  ``ColumnMajor...`` variants (``MatrixCoord``), for element sizes 4, 8, 16, 32 (and 64)
  bits; ``TensorOpMultiplicandCongruous<32, k>`` is the class's own tf32 specialization.

``stride`` is the class's stride vector (one number, the leading dimension ``ldm``, for the
rank-2 classes; a tuple for the tensor classes, in the class's order); left out, it is what
the class's ``packed(extent)`` gives.  Extents and strides of the affine classes may be
SymPy symbols (an interleave of a symbolic extent needs the divisibility assumed:
``with assuming("M % 32 == 0")``).  A TensorOp layout needs integers, and is a single swizzled
layout only when the XOR's source, the row index, sits at fixed bits of the offset: when
``ldm * kFactor`` is a power of two no smaller than the tile (``ldm`` at least the contiguous
extent).  Otherwise :func:`cutlass2_factors` gives the exact function as ``outer o inner``
(a plain layout after a swizzled one), and :func:`from_cutlass2` raises
:class:`Cutlass2UnrepresentableError`.

Every class is checked against the 2.x headers' own ``operator()`` (tests/algebra/
test_cutlass2.py compiles a program against the nvidia-cutlass wheel's headers).

>>> print(from_cutlass2("ColumnMajorInterleaved<4>", (2, 8)))
(2,(4,2)):(4,(1,8))
>>> print(from_cutlass2("cutlass::layout::TensorOpMultiplicandCongruous<16, 64>", (64, 8)))
Sw<3,3,3> o 0 o ((8,8),8):((1,8),64)
"""

from __future__ import annotations

import re
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import kinds
from .composed import ComposedLayout
from .errors import InadmissibleError, MalformedLayoutError, show
from .layout import Layout
from .swizzle import Swizzle

__all__ = [
    "CUTLASS2_CLASSES",
    "Cutlass2Error",
    "Cutlass2UnrepresentableError",
    "cutlass2_factors",
    "from_cutlass2",
    "parse_cutlass2",
]


class Cutlass2Error(MalformedLayoutError):
    """A CUTLASS 2.x layout request that names no supported class, gives template arguments
    the class forbids, or an extent or stride that does not fit it.

    Attributes:
        cls: the class name as read (without namespaces), or the text when none was read.
        what: which part is wrong: ``"class"``, ``"template"``, ``"extent"`` or ``"stride"``.
    """

    def __init__(self, message: str, *, cls: str, what: str) -> None:
        super().__init__(message)
        self.cls = cls
        self.what = what


class Cutlass2UnrepresentableError(InadmissibleError):
    """The 2.x class's function over this extent and stride is no single ``Layout`` or
    ``Swizzle o offset o Layout`` (the XOR's source is not at fixed bits of the offset);
    :func:`cutlass2_factors` gives it exactly as ``outer o inner``."""


# the element types whose sizeof_bits a C++ spelling may name instead of the number
_BITS = {
    "half_t": 16,
    "bfloat16_t": 16,
    "float": 32,
    "tfloat32_t": 32,
    "int32_t": 32,
    "uint32_t": 32,
    "int8_t": 8,
    "uint8_t": 8,
    "int4b_t": 4,
    "uint4b_t": 4,
    "double": 64,
    "int64_t": 64,
    "float_e4m3_t": 8,
    "float_e5m2_t": 8,
}

_TENSOR_OP = (
    "TensorOpMultiplicand",
    "TensorOpMultiplicandCongruous",
    "TensorOpMultiplicandCrosswise",
)
#: the class names :func:`from_cutlass2` knows, with their number of template arguments
CUTLASS2_CLASSES: Dict[str, int] = {
    "RowMajor": 0,
    "ColumnMajor": 0,
    "PitchLinear": 0,
    "AffineRank2RowMajor": 0,
    "AffineRank2ColumnMajor": 0,
    "RowMajorInterleaved": 1,
    "ColumnMajorInterleaved": 1,
    "RowMajorBlockLinear": 2,
    "ColumnMajorBlockLinear": 2,
    "TensorNHWC": 0,
    "TensorNCHW": 0,
    "TensorNCxHWx": 1,
    "TensorCxRSKx": 1,
    "TensorNDHWC": 0,
    **{
        prefix + n: 2
        for n in _TENSOR_OP
        for prefix in ("", "RowMajor", "ColumnMajor")
        if not prefix or n != _TENSOR_OP[0]
    },
}

_NAME = re.compile(r"\s*((?:::)?(?:[A-Za-z_][A-Za-z_0-9]*\s*::\s*)*)([A-Za-z_][A-Za-z_0-9]*)\s*")
_NAMESPACES = ("", "cutlass::", "cutlass::layout::", "layout::")


def _class_name(text: str) -> Optional[Tuple[str, int]]:
    """The class named at the start of ``text`` (namespaces ``cutlass::layout::`` optional)
    and where its name ends; None when it names none of the 2.x classes."""
    m = _NAME.match(text)
    if m is None:
        return None
    ns = re.sub(r"\s+", "", m.group(1)).removeprefix("::")
    if ns not in _NAMESPACES or m.group(2) not in CUTLASS2_CLASSES:
        return None
    return m.group(2), m.end()


_BITS_ARG = re.compile(
    r"(?:cutlass::)?sizeof_bits\s*<\s*(?:cutlass::)?([A-Za-z_][A-Za-z_0-9]*)\s*>\s*::\s*value"
)


# ============================================================================ reading names
def parse_cutlass2(text: str) -> Tuple[str, Tuple[int, ...]]:
    """The class name and template arguments of a 2.x layout's C++ spelling.

    >>> parse_cutlass2("cutlass::layout::RowMajorTensorOpMultiplicandCrosswise<"
    ...                "cutlass::sizeof_bits<cutlass::half_t>::value, 32>")
    ('RowMajorTensorOpMultiplicandCrosswise', (16, 32))
    """
    if not isinstance(text, str):
        raise Cutlass2Error(
            f"a CUTLASS 2.x layout is named by text, got {type(text).__name__} {show(text)}",
            cls=show(text),
            what="class",
        )
    found = _class_name(text) if len(text) <= 400 else None
    if found is None:
        m = _NAME.match(text)
        raise Cutlass2Error(
            f"{show(text[:200])} is not a CUTLASS 2.x layout class that layoutproof knows (known: "
            f"{', '.join(CUTLASS2_CLASSES)})",
            cls=m.group(2) if m else show(text[:200]),
            what="class",
        )
    name, end = found
    rest = text[end:].strip()
    args: List[int] = []
    if rest.startswith("<"):
        if not rest.endswith(">"):
            raise Cutlass2Error(f"unclosed template arguments in {show(text)}", cls=name, what="template")
        body = rest[1:-1].strip()
        for part in [p.strip() for p in body.split(",")] if body else []:
            b = _BITS_ARG.fullmatch(part)
            if b is not None:
                if b.group(1) not in _BITS:
                    raise Cutlass2Error(
                        f"{name}: unknown element type {b.group(1)!r} in sizeof_bits (known: "
                        f"{', '.join(sorted(_BITS))})",
                        cls=name,
                        what="template",
                    )
                args.append(_BITS[b.group(1)])
                continue
            p = re.fullmatch(r"(?:\(\s*)?(-?\d{1,9})[uUlL]{0,3}(?:\s*\))?", part)
            if p is None:
                raise Cutlass2Error(
                    f"{name}: template argument {show(part)} is not an integer", cls=name, what="template"
                )
            args.append(int(p.group(1)))
    elif rest and rest not in ("{}", "()"):
        raise Cutlass2Error(f"unexpected {show(rest)} after {name} in {show(text)}", cls=name, what="class")
    want = CUTLASS2_CLASSES[name]
    if len(args) != want:
        raise Cutlass2Error(
            f"{name} takes {want} template argument{'s' if want != 1 else ''}, "
            f"got {len(args)} in {show(text)}",
            cls=name,
            what="template",
        )
    return name, tuple(args)


# ============================================================================ leaves
def _is_sym(x: Any) -> bool:
    sp = sys.modules.get("sympy")
    return sp is not None and isinstance(x, sp.Basic)


def _leaf(x: Any, cls: str, what: str, role: str) -> Any:
    if type(x) is bool:
        raise Cutlass2Error(f"{cls}: {role} must be an integer, got {x!r}", cls=cls, what=what)
    if isinstance(x, int):
        if x < (1 if what == "extent" else 0):
            raise Cutlass2Error(
                f"{cls}: {role} must be {'positive' if what == 'extent' else 'non-negative'}, got {x}",
                cls=cls,
                what=what,
            )
        return int(x)
    if _is_sym(x):
        return x
    raise Cutlass2Error(
        f"{cls}: {role} must be an integer or a SymPy expression, got {type(x).__name__} {show(x)}",
        cls=cls,
        what=what,
    )


def _extent(extent: Any, n: int, cls: str, names: str) -> Tuple[Any, ...]:
    if isinstance(extent, (list, tuple)) and len(extent) == n:
        return tuple(
            _leaf(e, cls, "extent", f"extent {names.split(',')[k].strip()}") for k, e in enumerate(extent)
        )
    raise Cutlass2Error(
        f"{cls}: the extent is {n} numbers ({names}), got {show(extent)}", cls=cls, what="extent"
    )


def _stride(stride: Any, default: Sequence[Any], cls: str) -> Tuple[Any, ...]:
    n = len(default)
    if stride is None:
        return tuple(default)
    if n == 1 and not isinstance(stride, (list, tuple)):
        stride = (stride,)
    if isinstance(stride, (list, tuple)) and len(stride) == n:
        return tuple(_leaf(s, cls, "stride", f"stride[{k}]") for k, s in enumerate(stride))
    raise Cutlass2Error(
        f"{cls}: the stride vector has {n} entr{'y' if n == 1 else 'ies'} "
        f"({'the leading dimension' if n == 1 else 'in the class order'}), got {show(stride)}",
        cls=cls,
        what="stride",
    )


def _split(ext: Any, k: int, s_in: Any, s_out: Any, cls: str, role: str) -> Tuple[Any, Any]:
    """The mode of extent ``ext`` read as ``(x % k) * s_in + (x / k) * s_out``."""
    if k < 1:
        raise Cutlass2Error(f"{cls}: {role} must be positive, got {k}", cls=cls, what="template")
    if k == 1:
        return ext, s_out
    if isinstance(ext, int):
        if ext <= k:
            return ext, s_in
        if ext % k:
            raise Cutlass2Error(
                f"{cls}: {role} {k} does not divide the extent {ext} (the last block would be "
                "partial, which no CuTe shape describes)",
                cls=cls,
                what="extent",
            )
        return (k, ext // k), (s_in, s_out)
    return (k, ext / k), (s_in, s_out)  # the symbolic check names the divisibility needed


# ============================================================================ the classes
def _affine(name: str, args: Tuple[int, ...], ext: Any, stride: Any) -> Any:
    if name in ("RowMajor", "ColumnMajor", "AffineRank2RowMajor", "AffineRank2ColumnMajor"):
        M, N = _extent(ext, 2, name, "rows, columns")
        if name == "RowMajor":
            (ld,) = _stride(stride, (N,), name)
            return Layout((M, N), (ld, 1))
        if name == "ColumnMajor":
            (ld,) = _stride(stride, (M,), name)
            return Layout((M, N), (1, ld))
        # AffineRank2*: offset = dot(coord, stride); packed() differs between the two
        # packed() of both is (1, rows): the header writes AffineRank2RowMajor::packed as the
        # column-major one (a quirk of cutlass/layout/matrix.h, followed here)
        d = (1, M)
        s0, s1 = _stride(stride, d, name)
        return Layout((M, N), (s0, s1))
    if name == "PitchLinear":
        C, S = _extent(ext, 2, name, "contiguous, strided")
        (ld,) = _stride(stride, (C,), name)
        return Layout((C, S), (1, ld))
    if name in ("RowMajorInterleaved", "ColumnMajorInterleaved"):
        (k,) = args
        M, N = _extent(ext, 2, name, "rows, columns")
        if name == "RowMajorInterleaved":
            (ld,) = _stride(stride, (N * k,), name)
            sh, st = _split(M, k, 1, ld, name, "the interleave")
            return Layout((sh, N), (st, k))
        (ld,) = _stride(stride, (M * k,), name)
        sh, st = _split(N, k, 1, ld, name, "the interleave")
        return Layout((M, sh), (k, st))
    if name in ("RowMajorBlockLinear", "ColumnMajorBlockLinear"):
        br, bc = args
        M, N = _extent(ext, 2, name, "rows, columns")
        if name == "ColumnMajorBlockLinear":
            (ld,) = _stride(stride, (M * br * bc,), name)
            rs, rd = _split(M, br, 1, br * bc, name, "the block's rows")
            cs, cd = _split(N, bc, br, ld, name, "the block's columns")
        else:
            (ld,) = _stride(stride, (N * br * bc,), name)
            rs, rd = _split(M, br, bc, ld, name, "the block's rows")
            cs, cd = _split(N, bc, 1, br * bc, name, "the block's columns")
        return Layout((rs, cs), (rd, cd))
    if name in ("TensorNHWC", "TensorNCHW", "TensorNCxHWx", "TensorCxRSKx"):
        n, h, w, c = _extent(ext, 4, name, "n, h, w, c")
        if name == "TensorNHWC":
            sw, sh, sn = _stride(stride, (c, w * c, h * w * c), name)
            return Layout((n, h, w, c), (sn, sh, sw, 1))
        if name == "TensorNCHW":
            sh, sc, sn = _stride(stride, (w, w * h, h * w * c), name)
            return Layout((n, h, w, c), (sn, sh, 1, sc))
        (k,) = args
        if name == "TensorNCxHWx":
            sh, sc, sn = _stride(stride, (k * w, k * w * h, h * w * c), name)
            cs, cd = _split(c, k, 1, sc, name, "the interleave")
            return Layout((n, h, w, cs), (sn, sh, k, cd))
        sw, sh, sc = _stride(stride, (k * n, k * n * w, k * n * w * h), name)
        cs, cd = _split(c, k, 1, sc, name, "the interleave")
        return Layout((n, h, w, cs), (k, sh, sw, cd))
    if name == "TensorNDHWC":
        n, dd, h, w, c = _extent(ext, 5, name, "n, d, h, w, c")
        sw, sh, sd, sn = _stride(stride, (c, w * c, h * w * c, dd * h * w * c), name)
        return Layout((n, dd, h, w, c), (sn, sd, sh, sw, 1))
    raise Cutlass2Error(f"{name} has no layout here", cls=name, what="class")  # pragma: no cover


def _tensor_op_parts(
    cls: str, bits: int, crosswise: int, C: int, S: int, ld: int
) -> Tuple[Layout, ComposedLayout, Optional[Tuple[int, Swizzle, Layout]]]:
    """(outer, inner, direct) for the pitch-linear TensorOp layout of extent (C, S), ldm
    ``ld``: ``outer(inner(c, s))`` is the class's offset, ``inner`` a swizzle over a
    canonical arrangement (rows of one 128-byte tile line, ``8 * v`` elements apart);
    ``direct`` the single swizzled layout (power, swizzle, layout) when ``ld * kFactor`` is a
    power of two no smaller than the tile."""
    if bits < 1 or 128 % bits or bits & (bits - 1):
        raise Cutlass2Error(
            f"{cls}: the element size is a power of two of at most 128 bits, got {bits} "
            "(kElementsPerAccess = 128 / ElementSize)",
            cls=cls,
            what="template",
        )
    v = 128 // bits  # elements per 128-bit access
    mb = v.bit_length() - 1
    for val, role in ((C, "extent (contiguous)"), (S, "extent (strided)"), (ld, "the leading dimension")):
        if not isinstance(val, int):
            raise Cutlass2Error(
                f"{cls}: {role} must be an integer here, got {show(val)} (the XOR of a TensorOp "
                "layout reads bits of the offset, which a symbol does not fix)",
                cls=cls,
                what="stride" if role.startswith("the") else "extent",
            )
    if bits == 32 and cls.endswith("Congruous"):
        # TensorOpMultiplicandCongruous<32, Crosswise>: its own specialization (tf32):
        # (c % 4) + 4 * ((c % 32) / 4 ^ 2 * (s % 4)) + 32 * (c / 32) + ldm * s
        if C > 32 and C % 32:
            raise Cutlass2Error(
                f"{cls}<32, {crosswise}>: the contiguous extent {C} is not a multiple of 32",
                cls=cls,
                what="extent",
            )
        nt = max(1, C // 32)
        sp = -(-S // 4) * 4  # rows of the canonical arrangement: the XOR reads s % 4 only
        inner_c: Tuple[Any, Any] = (C, 1) if C <= 32 else ((32, nt), (1, 32 * sp))
        inner = ComposedLayout(Swizzle(2, 3, 2), 0, Layout((inner_c[0], S), (inner_c[1], 32)))
        outer = Layout((32, sp, nt), (1, ld, 32))
        direct = None
        if ld & (ld - 1) == 0 and ld >= 32 * nt:
            p = ld.bit_length() - 1
            dc: Tuple[Any, Any] = (C, 1) if C <= 32 else ((32, nt), (1, 32))
            direct = (p, Swizzle(2, 3, p - 3), Layout((dc[0], S), (dc[1], ld)))
        return outer, inner, direct
    if crosswise < 1 or crosswise > 8 * v:
        raise Cutlass2Error(
            f"{cls}<{bits}, {crosswise}>: the class forbids this crosswise (static_assert "
            f"kFactor > 0: kCrosswise is at most one 128-byte line, {8 * v} elements of {bits} bits)",
            cls=cls,
            what="template",
        )
    if (8 * v) % crosswise or crosswise < v:
        raise Cutlass2Error(
            f"{cls}<{bits}, {crosswise}>: kFactor = {8 * v} / {crosswise} must be a power of two "
            f"from 1 to 8 (crosswise a power of two from {v} to {8 * v}); other values make the "
            "class's index function truncate (or divide by zero) and no CUTLASS kernel uses them",
            cls=cls,
            what="template",
        )
    F = 8 * v // crosswise  # kFactor: rows of the strided dimension sharing one line
    per = 8 // F  # vectors of one row in a line
    # the contiguous coordinate: (x % v) + v * (vector % per) + (tile) ...
    nv_split: Tuple[Any, Any]
    if C <= v:
        nv_split = (C, 1)
        ntc = 1
    else:
        if C % v:
            raise Cutlass2Error(
                f"{cls}: the contiguous extent {C} is not a multiple of the {v}-element access",
                cls=cls,
                what="extent",
            )
        nv = C // v
        if nv <= per:
            nv_split = ((v, nv), (1, v))
            ntc = 1
        elif nv % per:
            raise Cutlass2Error(
                f"{cls}: the contiguous extent {C} is not a multiple of the {per * v}-element tile row",
                cls=cls,
                what="extent",
            )
        else:
            ntc = nv // per
            nv_split = ((v, per, ntc), (1, v, None))
    if S > F and S % F:
        raise Cutlass2Error(
            f"{cls}: the strided extent {S} is not a multiple of kFactor = {F}", cls=cls, what="extent"
        )
    ns = max(1, S // F)

    def c_mode(tile_stride: int) -> Tuple[Any, Any]:
        sh, st = nv_split
        if isinstance(st, tuple) and st[-1] is None:
            return sh, (st[0], st[1], tile_stride)
        return sh, st

    def s_mode(row_stride: int) -> Tuple[Any, Any]:
        if S <= F:
            return S, v * per
        if F == 1:
            return S, row_stride
        return (F, S // F), (v * per, row_stride)

    bsw = 3 if F == 1 else 2
    # rows of the canonical arrangement, padded so that the tile index stays clear of the
    # row bits the XOR reads
    nsp = -(-ns // (1 << bsw)) << bsw
    csh, cst = c_mode(8 * v * nsp)
    ssh, sst = s_mode(8 * v)
    inner = ComposedLayout(Swizzle(bsw, mb, 3), 0, Layout((csh, ssh), (cst, sst)))
    outer = Layout((8 * v, nsp, ntc), (1, ld * F, 8 * v))
    direct = None
    pitch = ld * F
    if pitch & (pitch - 1) == 0 and pitch >= 8 * v * ntc:
        p = pitch.bit_length() - 1
        csh, cst = c_mode(8 * v)
        ssh, sst = s_mode(pitch)
        direct = (p, Swizzle(bsw, mb, p - mb), Layout((csh, ssh), (cst, sst)))
    return outer, inner, direct


def _tensor_op(name: str, args: Tuple[int, ...], ext: Any, stride: Any, factors: bool) -> Any:
    bits, crosswise = args
    base = next(n for n in _TENSOR_OP[::-1] if name.endswith(n))
    if name.startswith(("RowMajor", "ColumnMajor")):
        M, N = _extent(ext, 2, name, "rows, columns")
        row = name.startswith("RowMajor")
        C, S = (N, M) if row else (M, N)
    else:
        C, S = _extent(ext, 2, name, "contiguous, strided")
        row = False
    (ld,) = _stride(stride, (C,), name)
    outer, inner, direct = _tensor_op_parts(base, bits, crosswise, C, S, ld)

    def swap(x: Any) -> Any:  # MatrixCoord (row, column) of a row-major variant: (strided, contiguous)
        if not row:
            return x
        if isinstance(x, ComposedLayout):
            return ComposedLayout(x.layout_a, x.offset, swap(x.layout_b))
        return Layout((x.shape[1], x.shape[0]), (x.stride[1], x.stride[0]))

    if factors:
        return outer, swap(inner)
    if direct is not None:
        _p, sw, B = direct
        return swap(ComposedLayout(sw, 0, B))
    raise Cutlass2UnrepresentableError(
        f"{name}<{bits}, {crosswise}> over extent {show(tuple(ext))} with ldm {ld}: no "
        "Swizzle o offset o Layout equals it -- the XOR reads the row index, which sits at fixed "
        "bits of the offset only when ldm * kFactor is a power of two no smaller than the lines "
        "of the tile; cutlass2_factors() gives it exactly as outer o inner",
        condition="ldm * kFactor a power of two",
        witness=None,
    )


# ============================================================================ the entry points
def from_cutlass2(name: str, extent: Any, *, stride: Any = None) -> Any:
    """The CUTLASS 2.x layout class ``name`` over ``extent`` as a CuTe layout.

    ``name`` is the class's C++ spelling, with or without ``cutlass::layout::``
    (``"RowMajorInterleaved<32>"``, ``"TensorOpMultiplicandCrosswise<16, 64>"``); ``extent``
    the class's coordinate extent in its order (``(rows, columns)``,
    ``(contiguous, strided)``, ``(n, h, w, c)``, ``(n, d, h, w, c)``); ``stride`` its stride
    vector (the leading dimension for rank-2 classes), ``packed(extent)``'s when left out.
    The result ``L`` has the extent's modes at its top level and
    ``L(coord) == Class(stride)(coord)`` for every coordinate: a ``Layout``, or for the
    TensorOp classes a ``ComposedLayout`` ``Swizzle o 0 o Layout``.

    >>> print(from_cutlass2("RowMajor", (4, 8), stride=16))
    (4,8):(16,1)
    >>> print(from_cutlass2("TensorNCxHWx<32>", (1, 2, 2, 64)))
    (1,2,2,(32,2)):(256,64,32,(1,128))
    >>> print(from_cutlass2("RowMajorTensorOpMultiplicandCrosswise<16, 32>", (16, 32)))
    Sw<2,3,3> o 0 o ((2,8),(8,4)):((32,64),(1,8))
    """
    cls, args = parse_cutlass2(name)
    if cls in CUTLASS2_CLASSES and any(cls.endswith(t) for t in _TENSOR_OP):
        return _tensor_op(cls, args, extent, stride, False)
    return _affine(cls, args, extent, stride)


def cutlass2_factors(name: str, extent: Any, *, stride: Any = None) -> Tuple[Layout, Any]:
    """A TensorOp class's function as ``(outer, inner)``: ``Class(c) == outer(inner(c))``,
    ``inner`` a swizzled layout over a canonical arrangement (the lines of the tile one
    after the other), ``outer`` the plain layout placing them with the real ``ldm``.  Exact
    for every ``ldm``, also where no single swizzled layout is (``ldm * kFactor`` not a power
    of two).

    >>> outer, inner = cutlass2_factors("TensorOpMultiplicandCrosswise<16, 64>", (192, 4), stride=192)
    >>> print(outer, "|", inner)
    (64,8,3):(1,192,64) | Sw<3,3,3> o 0 o ((8,8,3),4):((1,8,512),64)
    """
    cls, args = parse_cutlass2(name)
    if not any(cls.endswith(t) for t in _TENSOR_OP):
        raise Cutlass2Error(
            f"cutlass2_factors: {cls} is a plain layout (from_cutlass2 gives it); the factors are "
            "for the TensorOp multiplicand classes",
            cls=cls,
            what="class",
        )
    got: Tuple[Layout, Any] = _tensor_op(cls, args, extent, stride, True)
    return got


def _cpp_hook(text: str, extent: Any, stride: Any) -> Any:
    """The C++ reader's service: a 2.x class spelling with an extent (None when ``text``
    names no 2.x class, so that the reader goes on with CuTe)."""
    found = _class_name(text)
    if found is None:
        return None
    if extent is None:
        raise Cutlass2Error(
            f"{found[0]} is a CUTLASS 2.x layout class: from_cpp needs its extent "
            "(from_cpp(text, extent=(rows, columns)))",
            cls=found[0],
            what="extent",
        )
    return from_cutlass2(text, extent, stride=stride)


kinds.register_hook("cutlass2_class", _cpp_hook)
