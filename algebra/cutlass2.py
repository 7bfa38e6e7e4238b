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
  bits; ``TensorOpMultiplicandCongruous<32, k>`` is the class's own tf32 specialization;
* the SM80 double/complex multiplicands ``TensorOpMultiplicandCongruous64b``,
  ``TensorOpMultiplicand64bCrosswise``, ``TensorOpMultiplicandCongruous128b``,
  ``TensorOpMultiplicandCrosswise128x4``, the Volta ones
  ``VoltaTensorOpMultiplicandCongruous<bits>``, ``VoltaTensorOpMultiplicandBCongruous<bits>``,
  ``VoltaTensorOpMultiplicandCrosswise<bits, KBlock>`` (each with its ``RowMajor...`` /
  ``ColumnMajor...`` variants), and ``TensorOpMultiplicandColumnMajorInterleaved<bits, k>`` /
  ``TensorOpMultiplicandRowMajorInterleaved<bits, k>``.  Within a tile these map the
  coordinate's bits to the offset's bits, some to two of them (an XOR where another bit
  lands too): a single swizzled layout when every XOR spans one distance.
  ``TensorOpMultiplicand64bCrosswise`` with both extents at least 16, and Volta's crosswise
  layout over at least 4 vectors by 32 strided, XOR at two distances: only their factors
  exist, the inner one with F2 (XOR) strides.  The interleaved classes ignore the leading
  dimension (their ``operator()`` never reads it) and drop the low 4 bits of the column
  (offsets in 16-element blocks, stride 0).

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


# ============================================================================ bit-permuting classes
# The SM80 64- and 128-bit multiplicands, the Volta (SM70) multiplicands and the interleaved
# TensorOp multiplicands.  Each is, within one tile, a GF(2)-linear map of the coordinate's bits
# to the bits of a (column, line) pair -- a coordinate bit lands on one bit, or on two that it
# XORs -- and tiles repeat with plain strides; the offset is ``column + pitch * line``.  A
# class is written below as that table (``_Bits``); one construction turns any table into a
# layout: a single ``Swizzle o 0 o Layout`` when every bit that lands on two bits does so at
# the same distance (the layout places it on the high one, the swizzle copies it down), else
# an exact layout with F2 (XOR) strides (PyCuTe's generalization) as the inner factor.

_SM80 = (
    "TensorOpMultiplicandCongruous64b",
    "TensorOpMultiplicand64bCrosswise",
    "TensorOpMultiplicandCongruous128b",
    "TensorOpMultiplicandCrosswise128x4",
)
_VOLTA = {
    "VoltaTensorOpMultiplicandCongruous": 1,
    "VoltaTensorOpMultiplicandBCongruous": 1,
    "VoltaTensorOpMultiplicandCrosswise": 2,
}
_INTERLEAVED = ("TensorOpMultiplicandColumnMajorInterleaved", "TensorOpMultiplicandRowMajorInterleaved")
_BITWISE: Dict[str, int] = {
    **{prefix + n: 0 for n in _SM80 for prefix in ("", "RowMajor", "ColumnMajor")},
    **{prefix + n: k for n, k in _VOLTA.items() for prefix in ("", "RowMajor", "ColumnMajor")},
    **{n: 2 for n in _INTERLEAVED},
}
CUTLASS2_CLASSES.update(_BITWISE)

# an image: (column bits, line bits) as masks
_Img = Tuple[int, int]


class _Bits:
    """One class's table over (contiguous, strided): each coordinate's bits in order (the
    image of each bit within the tile) and the plain stride of its tile index (None: the
    coordinate has no tile index; its extent is at most the tile); ``mult`` scales the
    leading dimension into the line pitch; ``ldm`` False where operator() ignores it."""

    def __init__(
        self,
        c_bits: List[_Img],
        c_tile: Optional[_Img],
        s_bits: List[_Img],
        s_tile: Optional[_Img],
        mult: int = 1,
        ldm: bool = True,
    ) -> None:
        self.modes = ((c_bits, c_tile), (s_bits, s_tile))
        self.mult = mult
        self.ldm = ldm


def _pow2_bits(cls: str, bits: int, access: int, role: str = "the element size") -> int:
    """log2 of ``access / bits`` (elements per access), refusing what does not divide."""
    if bits < 1 or bits > access or bits & (bits - 1):
        raise Cutlass2Error(
            f"{cls}: {role} is a power of two of at most {access} bits, got {bits} "
            f"(kElementsPerAccess = {access} / ElementSize)",
            cls=cls,
            what="template",
        )
    return (access // bits).bit_length() - 1


def _col(k: int) -> _Img:
    return (1 << k, 0)


def _bits_table(base: str, args: Tuple[int, ...], cls: str) -> _Bits:
    """The bit table of a base (pitch-linear) class, derived from its operator()."""
    if base == "TensorOpMultiplicandCongruous64b":
        # tile 16 x 4: bank bit0 = c3, bit1 = c1 ^ s0, bit2 = c2 ^ s1, bit3 = c0;
        # line = (c1, c2), tiles: 16 columns along c, 4 lines along s
        return _Bits([_col(3), (2, 1), (4, 2), _col(0)], (16, 0), [_col(1), _col(2)], (0, 4))
    if base == "TensorOpMultiplicand64bCrosswise":
        # tile 16 x 16, c to lines and s to columns: bank bit0 = s3 ^ c2, bit1 = c0, bit2 = c1,
        # bit3 = c3 ^ s0; line = (s1, s2, c2, c3); tiles: 16 lines along c, 16 columns along s
        return _Bits([_col(1), _col(2), (1, 4), (8, 8)], (0, 16), [_col(3), (0, 1), (0, 2), _col(0)], (16, 0))
    if base == "TensorOpMultiplicandCongruous128b":
        # tile 8 x 4: bank bit0 = s0 ^ c1, bit1 = s1 ^ c2, bit2 = c0; line = (c1, c2)
        return _Bits([_col(2), (1, 1), (2, 2)], (8, 0), [_col(0), _col(1)], (0, 4))
    if base == "TensorOpMultiplicandCrosswise128x4":
        # tile 8 x 8: bank = (c0, c1, s0 ^ c2); line = (s1, s2, c2); tiles: 8 lines along c,
        # 8 columns along s
        return _Bits([_col(0), _col(1), (4, 4)], (0, 8), [_col(2), (0, 1), (0, 2)], (8, 0))
    if base in ("VoltaTensorOpMultiplicandCongruous", "VoltaTensorOpMultiplicandBCongruous"):
        m = _pow2_bits(cls, args[0], 128)
        v = 1 << m
        elem = [_col(k) for k in range(m)]
        if base == "VoltaTensorOpMultiplicandCongruous":
            # vector r = (r0, r1, r2) of a tile of 8 x 4 vectors: column vector (s0 ^ r1,
            # s1 ^ r2, r0), line (r1, r2)
            vec = [(4 * v, 0), (v, 1), (2 * v, 2)]
        else:  # B: column vector (s0 ^ r0, s1 ^ r1, r2), line (r0, r1)
            vec = [(v, 1), (2 * v, 2), (4 * v, 0)]
        return _Bits(elem + vec, (8 * v, 0), [(v, 0), (2 * v, 0)], (0, 4))
    if base == "VoltaTensorOpMultiplicandCrosswise":
        if args[1] < 1:
            raise Cutlass2Error(f"{cls}: KBlock must be positive, got {args[1]}", cls=cls, what="template")
        m = _pow2_bits(cls, args[0], 64)
        v = 1 << m
        # 64-bit vectors; the vector index r along c is the line (pitch ldm * v), s the
        # column vector: (s2 ^ r1, s3 ^ s4 ^ r2, s0, s1, s4, s5, ...)
        elem = [_col(k) for k in range(m)]
        vec = [(0, 1), (v, 2), (2 * v, 4)]
        s = [(4 * v, 0), (8 * v, 0), (v, 0), (2 * v, 0), (18 * v, 0)]
        return _Bits(elem + vec, (0, 8), s, (32 * v, 0), mult=v)
    if base in _INTERLEAVED:
        _pow2_bits(cls, args[0], 128)
        K = args[1]
        if K < 1 or K > 128 or K & (K - 1):
            raise Cutlass2Error(
                f"{cls}<{args[0]}, {K}>: InterleavedK must be a power of two from 1 to 128 "
                f"(128 / InterleavedK rows share one 128-element line; other values truncate "
                "or divide by zero)",
                cls=cls,
                what="template",
            )
        k = K.bit_length() - 1

        # column = (s % R) * K + c with R = 128 / K; its low 4 bits are dropped (the offset
        # is in 16-element blocks); block bit 0 ^= row bit 0; rows 128 apart
        def at(j: int) -> _Img:
            return _col(j) if j >= 4 else (0, 0)

        c = [at(j) for j in range(k)]
        s = [at(k + i) for i in range(7 - k)] + [(16 | 128, 0)]
        return _Bits(c, None, s, (256, 0), ldm=False)
    raise Cutlass2Error(f"{base} has no layout here", cls=cls, what="class")  # pragma: no cover


class _Digit:
    """A digit of a coordinate: ``ext`` values; ``img`` the image of its unit (a bit-digit
    or a plain run) or ``tile`` its plain stride; ``plain`` when value k maps to k * img."""

    def __init__(self, ext: int, img: _Img, plain: bool) -> None:
        self.ext = ext
        self.img = img
        self.plain = plain


def _single(img: _Img) -> bool:
    c, r = img
    return (c == 0 and (r & (r - 1)) == 0) or (r == 0 and (c & (c - 1)) == 0)


def _digits(cls: str, role: str, X: int, bits: List[_Img], tile: Optional[_Img]) -> List[_Digit]:
    """The digits of a coordinate of extent X: runs of bits whose images are consecutive
    single bits of one part (or all empty) merge into a plain digit; the tile index last."""
    runs: List[_Digit] = []
    for img in bits:
        if runs and runs[-1].plain and _single(img) and _single(runs[-1].img):
            last = runs[-1]
            nxt = (last.img[0] * last.ext, last.img[1] * last.ext)
            if img == nxt and (img != (0, 0) or last.img == (0, 0)):
                last.ext *= 2
                continue
        runs.append(_Digit(2, img, _single(img)))
    T = 1 << len(bits)
    if X > T:
        if tile is None:
            raise Cutlass2Error(
                f"{cls}: the {role} extent {X} exceeds {T} (InterleavedK): a larger coordinate "
                "runs into the next row's columns, where the XOR no longer follows a layout",
                cls=cls,
                what="extent",
            )
        if X % T:
            raise Cutlass2Error(
                f"{cls}: the {role} extent {X} is not a multiple of the {T}-element tile (the "
                "tile's bits are permuted, so a partial tile is no CuTe shape)",
                cls=cls,
                what="extent",
            )
        return runs + [_Digit(X // T, tile, True)]
    out: List[_Digit] = []
    rem = X
    for d in runs:
        if rem == 1:
            break
        if rem >= d.ext and rem % d.ext == 0:
            out.append(d)
            rem //= d.ext
        elif rem < d.ext and d.plain:
            out.append(_Digit(rem, d.img, True))
            rem = 1
        else:
            raise Cutlass2Error(
                f"{cls}: the {role} extent {X} does not split along the {T}-element tile's bits "
                "(a power of two below the tile, or a multiple of it, always does)",
                cls=cls,
                what="extent",
            )
    return out


def _span(d: _Digit) -> _Img:
    """The largest (column, line) a digit contributes (its bits are disjoint from others')."""
    return (d.img[0] * (d.ext - 1), d.img[1] * (d.ext - 1)) if d.plain else d.img


def _mask_bits(x: int) -> List[int]:
    return [k for k in range(x.bit_length()) if x >> k & 1]


def _reach(d: _Digit, v: int) -> int:
    """The bits a digit of unit image ``v`` (in the offset) may set."""
    if not d.plain:
        return v
    top = v * (d.ext - 1)
    return ((1 << top.bit_length()) - 1) & ~((v & -v) - 1) if top else 0


def _build(modes: List[List[_Digit]], w: int) -> Tuple[Any, Optional[Tuple[str, str]]]:
    """The layout of the digits with lines ``2**w`` apart: ``(Swizzle o 0 o Layout or
    Layout, None)``, or ``(Layout with F2 strides, (condition, why))`` where no single
    swizzle does.

    A digit whose image is one bit, or bits no other digit touches, is a plain stride (the
    sum is the XOR).  A two-bit image sharing one bit with other digits is an XOR: the
    layout places the digit on its other bit (the source) and the swizzle copies it onto
    the shared one (the target); every such pair must be at one distance."""
    from .f2 import F2

    def y(img: _Img) -> int:
        return img[0] | (img[1] << w)

    flat = [(i, d, y(d.img)) for i, m in enumerate(modes) for d in m]
    reach = [_reach(d, v) for _i, d, v in flat]
    why: Optional[Tuple[str, str]] = None
    place: List[int] = []  # the unit stride of each digit in the swizzle's domain
    pairs: List[Tuple[int, int]] = []  # (target, source)
    swizzled = set()  # the digits placed on a source bit
    for k, (_i, d, v) in enumerate(flat):
        if d.plain or v & (v - 1) == 0:
            place.append(v)
            continue
        others = 0
        for j, r in enumerate(reach):
            if j != k:
                others |= r
        shared = v & others
        if not shared:
            place.append(v)  # bits of its own: XOR and sum agree
            continue
        bits = _mask_bits(v)
        if len(bits) != 2 or shared & (shared - 1) or v & ~shared & others:
            why = ("one XOR distance", f"a coordinate bit lands on offset bits {bits}, more than one shared")
            break
        src = v & ~shared
        pairs.append((shared.bit_length() - 1, src.bit_length() - 1))
        swizzled.add(k)
        place.append(src)
    sw: Optional[Swizzle] = None
    if why is None and pairs:
        shifts = sorted({s - t for t, s in pairs})
        srcs = sorted(s for _t, s in pairs)
        B = srcs[-1] - srcs[0] + 1
        S = shifts[0]
        if len(shifts) > 1:
            why = (
                "one XOR distance",
                "its coordinate bits are XORed at different distances "
                f"({', '.join(str(abs(x)) for x in shifts)} bits; a CuTe swizzle XORs at one)",
            )
        elif abs(S) < B:
            why = ("one XOR distance", f"the XOR's source bits {srcs} lie within {abs(S)} of their targets")
        else:
            mask = ((1 << B) - 1) << srcs[0]
            for k, (_i, d, _v) in enumerate(flat):
                if k not in swizzled and (reach[k] if d.plain else place[k]) & mask:
                    why = ("one XOR distance", f"a plain stride reaches the XOR's source bits {srcs}")
                    break
            if why is None:
                sw = Swizzle(B, srcs[0] - max(S, 0), S)
    if why is None:  # every placement on bits of its own (else the sum carries)
        seen = 0
        for k, (_i, d, _v) in enumerate(flat):
            mine = reach[k] if d.plain else place[k]
            if mine & seen:
                why = (
                    "one XOR distance",
                    "two coordinate bits land on one offset bit with no XOR between them",
                )
                break
            seen |= mine
    shapes: List[Any] = []
    strides: List[Any] = []
    k = 0
    for m in modes:
        sh: List[int] = []
        st: List[Any] = []
        for d in m:
            v = flat[k][2]
            st.append((F2(v) if v else 0) if why is not None else place[k])
            sh.append(d.ext)
            k += 1
        if why is None:  # merge neighbours that continue each other (integer strides)
            j = 0
            while j + 1 < len(sh):
                if st[j + 1] == sh[j] * st[j] and st[j] != 0:
                    sh[j : j + 2] = [sh[j] * sh[j + 1]]
                    st[j : j + 2] = [st[j]]
                else:
                    j += 1
        if not sh:
            sh, st = [1], [0]
        shapes.append(sh[0] if len(sh) == 1 else tuple(sh))
        strides.append(st[0] if len(st) == 1 else tuple(st))
    L = Layout(tuple(shapes), tuple(strides))
    if why is not None:
        return L, why
    return (ComposedLayout(sw, 0, L) if sw is not None else L), None


def _bitwise(name: str, args: Tuple[int, ...], ext: Any, stride: Any, factors: bool) -> Any:
    if name in _INTERLEAVED:
        base, row = name, False
    else:
        base = next(n for n in (*_SM80, *_VOLTA) if name.endswith(n))
        row = name.startswith("RowMajor")
    variant = base != name
    if variant:
        M, N = _extent(ext, 2, name, "rows, columns")
        C, S = (N, M) if row else (M, N)
    else:
        C, S = _extent(ext, 2, name, "contiguous, strided")
    for val, role in ((C, "contiguous"), (S, "strided")):
        if not isinstance(val, int):
            raise Cutlass2Error(
                f"{name}: the {role} extent must be an integer here, got {show(val)} (the XOR "
                "reads bits of the coordinate, which a symbol does not fix)",
                cls=name,
                what="extent",
            )
    table = _bits_table(base, args, name)
    # packed(): the contiguous extent, except where the header takes the strided one
    crosswise_quirk = base == "VoltaTensorOpMultiplicandCrosswise" or (
        variant and base in ("TensorOpMultiplicand64bCrosswise", "TensorOpMultiplicandCrosswise128x4")
    )
    if base in _INTERLEAVED:
        d0 = (C if base == _INTERLEAVED[0] else S) * args[1]
    else:
        d0 = S if crosswise_quirk else C
    (ld,) = _stride(stride, (d0,), name)
    if not isinstance(ld, int):
        raise Cutlass2Error(
            f"{name}: the leading dimension must be an integer here, got {show(ld)}", cls=name, what="stride"
        )
    (cb, ct), (sb, st) = table.modes
    modes = [_digits(name, "contiguous", C, cb, ct), _digits(name, "strided", S, sb, st)]
    span_c = span_r = 0  # every bit a column (a line) may have set
    for m in modes:
        for d in m:
            c_top, r_top = _span(d)
            span_c |= (1 << c_top.bit_length()) - 1 if c_top else 0
            span_r |= (1 << r_top.bit_length()) - 1 if r_top else 0
    wc = span_c.bit_length()  # the canonical pitch 2**wc holds every column
    pitch = ld * table.mult

    def swap(x: Any) -> Any:
        if not row:
            return x
        if isinstance(x, ComposedLayout):
            return ComposedLayout(x.layout_a, x.offset, swap(x.layout_b))
        return Layout((x.shape[1], x.shape[0]), (x.stride[1], x.stride[0]))

    if factors:
        inner, _why = _build(modes, wc)
        outer = Layout((1 << wc, span_r + 1), (1, pitch if table.ldm else 0))
        return outer, swap(inner)
    direct = not table.ldm or (pitch > span_c and pitch & (pitch - 1) == 0)
    if direct:
        L, why = _build(modes, (pitch.bit_length() - 1) if table.ldm else wc)
        if why is None:
            return swap(L)
        raise Cutlass2UnrepresentableError(
            f"{name} over extent {show(tuple(ext))}: no Swizzle o offset o Layout equals it -- "
            f"{why[1]}; cutlass2_factors() gives it exactly, the inner factor with F2 (XOR) "
            "strides",
            condition=why[0],
            witness=None,
        )
    raise Cutlass2UnrepresentableError(
        f"{name} over extent {show(tuple(ext))} with ldm {ld}: no Swizzle o offset o Layout "
        f"equals it -- the XOR reads the line index, which sits at fixed bits of the offset "
        f"only when the line pitch{' ldm * ' + str(table.mult) if table.mult > 1 else ' ldm'} "
        f"is a power of two above the largest column ({span_c}); cutlass2_factors() gives it "
        "exactly as outer o inner",
        condition="line pitch a power of two",
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
    >>> print(from_cutlass2("TensorOpMultiplicandCongruous128b", (8, 4)))
    Sw<2,0,3> o 0 o (8,4):(4,1)
    """
    cls, args = parse_cutlass2(name)
    if cls in _BITWISE:
        return _bitwise(cls, args, extent, stride, False)
    if any(cls.endswith(t) for t in _TENSOR_OP):
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
    if cls in _BITWISE:
        pair: Tuple[Layout, Any] = _bitwise(cls, args, extent, stride, True)
        return pair
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
