"""Swizzles, composed layouts and F2 (XOR) strides.

A :class:`Swizzle` ``Sw<B,M,S>`` is CuTe's bit-XOR permutation of offsets: the ``B`` bits
at ``[M + max(0,S), M + max(0,S) + B)`` (the "YYY" bits) are XORed into the ``B`` bits at
``[M - min(0,S), M - min(0,S) + B)`` (the "ZZZ" bits).  ``|S| >= B`` keeps the two fields
apart, so every swizzle is an involution, hence a bijection, of the integers, and of
every ``[0, k * 2**(M+B+|S|))``.

A :class:`ComposedLayout` ``A o offset o B`` is the function ``c -> A(offset + B(c))``:
``B`` is a :class:`~layoutproof.layout.Layout` (it defines the domain), ``A`` a Swizzle
(or a Layout).  The algebra is lifted over it where CuTe C++ lifts it
(``layout_composed.hpp``): composition with a layout on the right, slicing, the divides,
the products, ``tile_to_shape`` and ``coalesce`` act on ``B``.

>>> sw = Swizzle(3, 3, 3)
>>> sw, str(sw), sw(64), sw(sw(64))
(Swizzle(3, 3, 3), 'Sw<3,3,3>', 72, 64)
>>> from layoutproof import Layout, composition, tile_to_shape
>>> atom = composition(sw, Layout((8, 64), (64, 1)))
>>> print(atom)
Sw<3,3,3> o 0 o (8,64):(64,1)
>>> tile = tile_to_shape(atom, (128, 64))
>>> print(tile)
Sw<3,3,3> o 0 o (128,64):(64,1)
>>> tile(1, 0), tile(1, 8), tile.size, tile.cosize
(72, 64, 8192, 8192)

F2 strides (as in PyCuTe): a layout whose strides are added with XOR, and multiplied
carry-less, so that the same swizzled layout is written as a plain-looking layout:

>>> print(to_f2(atom))
(8,64):(F72,F1)
>>> print(from_f2(to_f2(atom)))
Sw<3,3,3> o 0 o (8,64):(64,1)

Semantics (C++ ``swizzle.hpp``, ``layout_composed.hpp``, ``swizzle_layout.hpp``; PyCuTe;
legacy pycute):

* ``Swizzle``: C++'s checks (``B, M >= 0``, ``|S| >= B``); PyCuTe checks ``|S| >= B`` only
  for negative ``S`` (so its ``Swizzle(3,0,1)`` overlaps and is no involution); legacy
  pycute asserts.  ``Swizzle(0, b, 0)`` is the identity (legacy pycute: RecursionError).
  ``size == cosize == 2**(M+B+|S|)`` (legacy pycute; C++ has no size, and its
  ``make_layout(Swizzle)`` takes the *shape* ``M+B+|S|``).  Printed ``Sw<B,M,S>`` (C++).
* ``ComposedLayout(A, offset, B)``: C++'s order and meaning (legacy pycute's constructor
  takes the same order but names the outer function ``layoutB``).  Printed like C++,
  ``A o offset o B``, with integers unadorned as everywhere in layoutproof (C++ prints a
  static zero as ``_0``; ``parse`` reads both).
* Lifted over ``B`` as C++ does: composition with anything on the right, ``[i]``,
  slicing (the slice offset moves into the layout), the divides, the products,
  ``tile_to_shape``, ``coalesce`` (and any other layout function through :func:`lift`).
  As in C++, the three-argument composition drops an identity swizzle with offset 0:
  ``composition(Swizzle(0,m,s), L) == L``.  C++'s swizzle-specific slice, which decays to
  a plain layout when the slice misses the swizzled bits, is not reproduced: slices stay
  composed layouts (same function).
* ``composition(L, Swizzle)``: C++ returns ``make_swizzle(L(yyy), L(zzz)) o L`` ("works in
  simple cases"); here that answer is checked against ``L(sw(c))`` on L's domain
  (structurally for bit-permuting layouts, else by evaluation) and InadmissibleError with
  a witness replaces a wrong one.  ``composition(L, A o 0 o B)`` likewise (offset 0, as
  C++'s static_assert).  ``composition(Swizzle, Swizzle)`` is the swizzle equal to the
  composite, or InadmissibleError (C++: ``make_swizzle`` of the XORed masks, a
  static_assert when they are no swizzle).
* ``cosize`` of a composed layout is exact, the length of the smallest interval holding
  every value; C++ returns ``cosize(B)``, the same whenever the values of ``offset + B``
  are whole aligned ``2**(M+B+|S|)`` blocks (every tiled smem atom), and too small
  elsewhere: ``Sw<1,0,-1> o 0 o 2:1`` takes the values ``{0, 3}``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Tuple

from .errors import InadmissibleError, MalformedLayoutError, OutOfDomainError, show
from .inttuple import is_int, raw_flatten, raw_prefix_product, raw_unflatten
from .layout import Layout, _, checked_shape, concrete_only, fmt_htuple, need_layout, slice_and_offset

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "Swizzle",
    "make_swizzle",
    "ComposedLayout",
    "make_composed_layout",
    "F2",
    "F2Layout",
    "to_f2",
    "from_f2",
    "lift",
    "SWIZZLE_MAX_BITS",
    "VERIFY_LIMIT",
]

# A swizzle touches bits below M+B+|S|; beyond 64 it is no machine address (C++ uses 32-bit
# int masks).  The bound also keeps hostile parameters from building gigantic masks.
SWIZZLE_MAX_BITS = 64
# Where a result is checked by evaluating it everywhere (no structural proof applies),
# domains up to this size are checked; larger ones raise rather than go unchecked.
VERIFY_LIMIT = 1 << 22
# cosize of a composed layout is exact; without the closed-block fast path it evaluates.
_COSIZE_EVAL_LIMIT = 1 << 26
# from_f2 tries every swizzle whose fields lie below this many bits (about t**3/6 of them).
_F2_SEARCH_BITS = 24


def _int_arg(x: Any, what: str) -> int:
    if type(x) is int:
        return x
    if is_int(x):
        return int(x)
    raise MalformedLayoutError(f"{what} must be an integer, got {type(x).__name__} {show(x)}")


_NP: Any = None
_ND: Any = None  # numpy.ndarray, once numpy is loaded (the array fast path tests it)
_I64: Any = None  # numpy.dtype("int64")


def _numpy() -> Any:
    """numpy, imported on first use (``import layoutproof`` never loads it)."""
    global _NP, _ND, _I64
    if _NP is None:
        import numpy

        _NP = numpy
        _ND = numpy.ndarray
        _I64 = numpy.dtype(numpy.int64)
    return _NP


def _popcount(x: int) -> int:
    return bin(x).count("1")


def _bits_of(x: int) -> List[int]:
    out = []
    j = 0
    while x:
        if x & 1:
            out.append(j)
        x >>= 1
        j += 1
    return out


# ============================================================================= Swizzle
class Swizzle:
    """CuTe's ``Swizzle<B,M,S>``: ``x -> x ^ ((x & yyy_msk) >> S)`` (a negative ``S``
    shifts left).

    ``bits`` (B) is the width of the two bit fields, ``base`` (M) the number of low bits
    kept constant, ``shift`` (S) the distance from the YYY field down to the ZZZ field.
    As in C++: ``B >= 0``, ``M >= 0``, ``|S| >= B`` (the fields do not overlap), and
    ``shift`` defaults to ``bits``.  Parameters must be integers and ``M + B + |S|`` at most
    :data:`SWIZZLE_MAX_BITS`; anything else raises MalformedLayoutError.

    A swizzle applies to any integer, negative ones included (bitwise, on the two's
    complement, as C++ on ``int``), and to integer numpy arrays elementwise.  It is an
    involution.  ``Swizzle(0, M, S)`` is the identity (legacy pycute recurses forever on
    it).  ``==`` compares the parameters, as C++ does: ``Swizzle(0,4,3)`` and
    ``Swizzle(0,0,0)`` are the same function but not equal.

    >>> s = Swizzle(2, 0, 2)
    >>> [s(i) for i in range(16)]
    [0, 1, 2, 3, 5, 4, 7, 6, 10, 11, 8, 9, 15, 14, 13, 12]
    >>> bin(s.yyy_msk), bin(s.zzz_msk), s.size
    ('0b1100', '0b11', 16)
    >>> Swizzle(1, 0, -1)(1), Swizzle(0, 3, 0)(12345), Swizzle(3, 3, 3)(-1), Swizzle(3, 3, 3)(-57)
    (3, 12345, -57, -1)
    >>> Swizzle(3, 3, 2)
    Traceback (most recent call last):
      ...
    layoutproof.errors.MalformedLayoutError: Swizzle(3, 3, 2): |S| >= B is required ...
    """

    __slots__ = ("_b", "_m", "_s", "_y", "_z", "_rs", "_ls", "_top", "_hash")
    _lp_lifted = True  # ops.py routes swizzles and composed layouts here

    def __init__(self, bits: Any, base: Any, shift: Any = None) -> None:
        b = _int_arg(bits, "Swizzle bits (B)")
        m = _int_arg(base, "Swizzle base (M)")
        s = b if shift is None else _int_arg(shift, "Swizzle shift (S)")
        if b < 0 or m < 0:
            raise MalformedLayoutError(f"Swizzle({b}, {m}, {s}): B >= 0 and M >= 0 are required")
        if abs(s) < b:
            raise MalformedLayoutError(
                f"Swizzle({b}, {m}, {s}): |S| >= B is required (C++ static_assert "
                "'abs(SShift) must be more than BBits'), else the YYY and ZZZ fields overlap "
                "and the swizzle is no involution"
            )
        if m + b + abs(s) > SWIZZLE_MAX_BITS:
            raise MalformedLayoutError(
                f"Swizzle({b}, {m}, {s}) touches bit {m + b + abs(s) - 1}; at most "
                f"{SWIZZLE_MAX_BITS} bits (M + B + |S| <= {SWIZZLE_MAX_BITS}) are supported"
            )
        self._b, self._m, self._s = b, m, s
        msk = (1 << b) - 1
        self._y = msk << (m + max(0, s))
        self._z = msk << (m - min(0, s))
        self._rs = s if s > 0 else 0
        self._ls = -s if s < 0 else 0
        self._top = m + b + abs(s)
        self._hash = None
        if s < 0 and type(self) is Swizzle:
            self.__class__ = _SwizzleLeft  # same slots; one shift less per call

    # ------------------------------------------------------------------ parameters
    @property
    def bits(self) -> int:
        """B: the width of the YYY and ZZZ fields."""
        return self._b

    @property
    def base(self) -> int:
        """M: the number of least significant bits kept constant."""
        return self._m

    @property
    def shift(self) -> int:
        """S: YYY sits ``S`` bits above ZZZ (below it when negative)."""
        return self._s

    @property
    def yyy_msk(self) -> int:
        """The mask of the bits that are read (and left unchanged)."""
        return self._y

    @property
    def zzz_msk(self) -> int:
        """The mask of the bits that are flipped by the YYY bits."""
        return self._z

    @property
    def size(self) -> int:
        """``2**(M+B+|S|)``: the smallest ``[0, 2**k)`` holding both fields; the swizzle
        permutes it (and each aligned block of that size)."""
        return 1 << self._top

    @property
    def cosize(self) -> int:
        """Same as :attr:`size`: the swizzle maps ``[0, size)`` onto itself."""
        return 1 << self._top

    def is_identity(self) -> bool:
        """True when ``B == 0``: every offset is left as it is."""
        return self._b == 0

    # ------------------------------------------------------------------ evaluation
    def __call__(self, x: Any) -> Any:  # S >= 0 (a negative S uses _SwizzleLeft's)
        if type(x) is int:
            return x ^ ((x & self._y) >> self._rs)
        if type(x) is _ND and x.dtype is _I64 and self._top < 63:  # int64 arrays, in place
            t = x & self._y
            t >>= self._rs
            t ^= x
            return t
        return self._apply(x)

    def _apply(self, x: Any) -> Any:
        np = _numpy()
        if type(x) is np.ndarray and x.dtype.kind in "iu" and x.ndim:
            if self._top < x.dtype.itemsize * 8 - 1 and self._b:  # the common case, in place
                t = x & self._y
                if self._rs:
                    t >>= self._rs
                else:
                    t <<= self._ls
                t ^= x
                return t
            return self._apply_np(x)
        dt = getattr(x, "dtype", None)
        if dt is None:
            if is_int(x):
                x = int(x)
                return x ^ (((x & self._y) >> self._rs) << self._ls)
        elif getattr(dt, "kind", None) in ("i", "u", "O"):
            return self._apply_np(x)
        raise MalformedLayoutError(
            f"a swizzle applies to integers and integer numpy arrays, got {type(x).__name__} {show(x)}"
        )

    def _apply_np(self, x: Any) -> Any:
        import numpy as np

        if not isinstance(x, (np.ndarray, np.generic)):
            x = np.asarray(x)
        kind = x.dtype.kind
        if kind in "iu":
            width = x.dtype.itemsize * 8 - (1 if kind == "i" else 0)
            if self._top > width:  # the masks do not fit the dtype: compute exactly
                x = x.astype(np.int64) if self._top <= 63 else x.astype(object)
        elif kind != "O":
            raise MalformedLayoutError(f"a swizzle applies to integer arrays, got dtype {x.dtype}")
        if self._b == 0:
            return x.copy() if isinstance(x, np.ndarray) else x
        if not isinstance(x, np.ndarray) or x.ndim == 0 or x.dtype.kind == "O":
            try:
                return x ^ (((x & self._y) >> self._rs) << self._ls)
            except TypeError:
                raise MalformedLayoutError(
                    "a swizzle applies to integers; the object array holds something else"
                ) from None
        t = x & self._y
        if self._rs:
            t >>= self._rs
        else:
            t <<= self._ls
        t ^= x
        return t

    # ------------------------------------------------------------------ protocol
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Swizzle):
            return False
        return self._b == other._b and self._m == other._m and self._s == other._s

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash(("Swizzle", self._b, self._m, self._s))
        return h

    def __str__(self) -> str:
        return f"Sw<{self._b},{self._m},{self._s}>"

    def __repr__(self) -> str:
        return f"Swizzle({self._b}, {self._m}, {self._s})"

    def __reduce__(self) -> Any:
        return (Swizzle, (self._b, self._m, self._s))

    @staticmethod
    def parse(text: str) -> "Swizzle":
        """Parse ``"Sw<3,3,3>"`` (C++'s print format; ``SW_3_3_3`` of legacy pycute too).

        >>> Swizzle.parse("Sw<2,4,-3>")
        Swizzle(2, 4, -3)
        """
        if not isinstance(text, str):
            raise MalformedLayoutError(f"swizzle notation must be a string, got {type(text).__name__}")
        m = _SW_RE.fullmatch(text.strip()[:200]) or _SW_PY_RE.fullmatch(text.strip()[:200])
        if m is None:
            raise MalformedLayoutError(f"not a swizzle: {show(text)} (expected 'Sw<B,M,S>')")
        return Swizzle(int(m.group(1)), int(m.group(2)), int(m.group(3)))

    # ------------------------------------------------------------------ conversions
    def to_f2(self) -> "F2Layout":
        """The swizzle on ``[0, size)`` as a layout with F2 strides (the image of each bit).

        >>> print(Swizzle(3, 3, 3).to_f2())
        (64,8):(F1,F72)
        """
        imgs = [self(1 << j) for j in range(self._top)]
        ms, md = _f2_coalesce([2] * len(imgs), imgs)
        return F2Layout._make(_one_or_tuple(ms), _one_or_tuple(md))

    def as_layout(self) -> "ComposedLayout":
        """``Sw o 0 o size:1``: the swizzle on its domain as a composed layout (C++'s
        ``make_layout(Swizzle)`` uses the shape ``M+B+|S|``, which is not closed under the
        swizzle; this uses ``2**(M+B+|S|)``).

        >>> print(Swizzle(1, 2, 3).as_layout())
        Sw<1,2,3> o 0 o 64:1
        """
        return ComposedLayout(self, 0, Layout(self.size, 1))


class _SwizzleLeft(Swizzle):
    """A swizzle with a negative shift: YYY sits below ZZZ (the call shifts left)."""

    __slots__ = ()

    def __call__(self, x: Any) -> Any:
        if type(x) is int:
            return x ^ ((x & self._y) << self._ls)
        if type(x) is _ND and x.dtype is _I64 and self._top < 63:
            t = x & self._y
            t <<= self._ls
            t ^= x
            return t
        return self._apply(x)


_SW_RE = re.compile(r"Sw<\s*(-?\d{1,3})\s*,\s*(-?\d{1,3})\s*,\s*(-?\d{1,3})\s*>")
_SW_PY_RE = re.compile(r"SW_(-?\d{1,3})_(-?\d{1,3})_(-?\d{1,3})")


def _ctz(x: int) -> int:
    return (x & -x).bit_length() - 1 if x else 0


def make_swizzle(yyy: Any, zzz: Any) -> Swizzle:
    """The swizzle with the given YYY and ZZZ masks (C++'s ``make_swizzle<Y, Z>``), e.g.
    ``make_swizzle(0b1000, 0b0100) == Swizzle(1, 2, 1)``.  Stricter than C++, which checks
    only ``Y | Z``: the masks must be exactly the fields of one swizzle.

    >>> make_swizzle(0b11000000, 0b00000110)
    Swizzle(2, 1, 5)
    >>> make_swizzle(0, 0)
    Swizzle(0, 0, 0)
    """
    y = _int_arg(yyy, "make_swizzle YYY mask")
    z = _int_arg(zzz, "make_swizzle ZZZ mask")
    if y < 0 or z < 0 or y.bit_length() > SWIZZLE_MAX_BITS or z.bit_length() > SWIZZLE_MAX_BITS:
        raise MalformedLayoutError(
            f"make_swizzle({show(yyy)}, {show(zzz)}): masks are non-negative and below 2**{SWIZZLE_MAX_BITS}"
        )
    b = _popcount(y)
    if b != _popcount(z):
        raise MalformedLayoutError(
            f"make_swizzle({y:#b}, {z:#b}): the YYY and ZZZ masks have different numbers of bits"
        )
    if b == 0:
        return Swizzle(0, 0, 0)
    ty, tz = _ctz(y), _ctz(z)
    s = ty - tz
    m = min(ty, tz)
    if abs(s) < b:
        raise MalformedLayoutError(f"make_swizzle({y:#b}, {z:#b}): the masks overlap")
    sw = Swizzle(b, m, s)
    if sw._y != y or sw._z != z:
        raise MalformedLayoutError(
            f"make_swizzle({y:#b}, {z:#b}): the masks are not two contiguous fields of one swizzle"
        )
    return sw


def _swizzle_images(sw: Swizzle, nbits: int) -> List[int]:
    return [sw(1 << j) for j in range(nbits)]


def _swizzle_from_yz(ys: List[int], zs: List[int]) -> Optional[Swizzle]:
    """The smallest swizzle reading bit ys[k] into bit zs[k] for every k, or None."""
    if not ys:
        return Swizzle(0, 0, 0)
    shifts = {y - z for y, z in zip(ys, zs)}
    if len(shifts) != 1:
        return None
    s = shifts.pop()
    if s == 0:
        return None
    lo, hi = min(ys), max(ys)
    b = hi - lo + 1
    m = lo - s if s > 0 else lo
    if abs(s) < b or m < 0 or m + b + abs(s) > SWIZZLE_MAX_BITS:
        return None
    return Swizzle(b, m, s)


def _compose_swizzles(s1: Swizzle, s2: Swizzle) -> Swizzle:
    """``s1 o s2`` when it is a swizzle (both are GF(2)-linear on the bits and fix every
    bit from max(M+B+|S|) up, so comparing the images of the lower bits is exact)."""
    if s2.is_identity():
        return s1
    if s1.is_identity():
        return s2
    n = max(s1._top, s2._top)
    imgs = [s1(s2(1 << j)) for j in range(n)]
    ys: List[int] = []
    zs: List[int] = []
    ok = True
    for j, v in enumerate(imgs):
        if v == 1 << j:
            continue
        rest = v ^ (1 << j)
        if _popcount(rest) != 1 or not v >> j & 1:
            ok = False
            break
        ys.append(j)
        zs.append(rest.bit_length() - 1)
    cand = _swizzle_from_yz(ys, zs) if ok else None
    if cand is not None and _swizzle_images(cand, n) == imgs:
        return cand
    raise InadmissibleError(
        f"composition({s1}, {s2}): the composite is not a swizzle (bit images "
        f"{[hex(v) for v in imgs]}); C++'s make_swizzle static_assert fails here",
        condition="composite of swizzles is a swizzle",
        witness=None,
    )


# ============================================================================= numpy helpers
def _layout_at(L: Layout, idx: Any) -> Any:
    """L at every 1-D coordinate in the numpy array ``idx`` (checked against the domain)."""
    import numpy as np

    n = L.size
    if idx.size:
        lo, hi = int(idx.min()), int(idx.max())
        if lo < 0 or hi >= n:
            bad = int(np.flatnonzero((idx < 0) | (idx >= n))[0])
            raise OutOfDomainError(f"offset {int(idx.flat[bad])} is outside the domain [0, {n}) of {L}")
    fs, fd = L._flat()
    bound = sum((s - 1) * abs(d) for s, d in zip(fs, fd))
    dtype: Any = np.int64 if bound < 2**62 and n < 2**62 else object
    x = idx.astype(dtype)
    out = np.zeros(idx.shape, dtype=dtype)
    for s, d in zip(fs, fd):
        if s == 1:
            continue
        out += (x % s) * d
        x = x // s
    return out


def _ext_layout_at(L: Layout, x: Any) -> Any:
    """``L̂`` (L with its own last mode unbounded, as composition reads it) at x >= 0."""
    from .ops import coalesced_modes_x, ext_eval_np

    As, Ad = coalesced_modes_x(L)
    return ext_eval_np(As, Ad, x)


def _arange(n: int, bound: int) -> Any:
    import numpy as np

    a = np.arange(n, dtype=np.int64)
    return a if bound < (1 << 62) else a.astype(object)


# ============================================================================= ComposedLayout
class ComposedLayout:
    """``A o offset o B``: the function ``c -> A(offset + B(c))`` (C++'s
    ``ComposedLayout<LayoutA, Offset, LayoutB>``, same argument order).

    ``A`` is a :class:`Swizzle` or a :class:`~layoutproof.layout.Layout`; ``offset`` an
    integer; ``B`` a Layout, which gives the domain: ``shape``, ``size``, ``rank``,
    ``depth``, ``len`` and modes (``CL[i] == ComposedLayout(A, offset, B[i])``) are
    ``B``'s.  Like C++, it has no strides (``.stride`` raises MalformedLayoutError).

    Calling it with a coordinate (1-D, n-D or natural) gives ``A(offset + B(c))``; with
    ``_`` wildcards it slices as C++ does: ``ComposedLayout(A, offset + o, sub)`` where
    ``(sub, o) = slice_and_offset(crd, B)``.  ``cosize`` is exact: the length of the
    smallest interval holding every value (C++ returns ``cosize(B)``, which is the same
    whenever the swizzle keeps B's image in place, and can be too small otherwise).

    >>> from layoutproof import Layout, _
    >>> C = ComposedLayout(Swizzle(1, 0, 1), 0, Layout((2, 2), (2, 1)))
    >>> [C(i) for i in range(4)], C(1, 1), str(C[0])
    ([0, 3, 1, 2], 2, 'Sw<1,0,1> o 0 o 2:2')
    >>> print(C(1, _))
    Sw<1,0,1> o 2 o (2):(1)
    >>> ComposedLayout(Swizzle(1, 0, -1), 0, Layout(2, 1)).cosize  # C++ says 2
    4
    """

    __slots__ = ("_a", "_o", "_b", "_cosize", "_hash", "_n", "_sy", "_srs", "_sls")
    _lp_lifted = True

    def __init__(self, layout_a: Any, offset: Any, layout_b: Any) -> None:
        if not isinstance(layout_a, (Swizzle, Layout)):
            raise MalformedLayoutError(
                f"ComposedLayout(A, offset, B): A must be a Swizzle or a Layout, got "
                f"{type(layout_a).__name__} {show(layout_a)}"
            )
        if not isinstance(layout_b, Layout):
            raise MalformedLayoutError(
                f"ComposedLayout(A, offset, B): B must be a Layout, got "
                f"{type(layout_b).__name__} {show(layout_b)}"
            )
        self._set(layout_a, _int_arg(offset, "ComposedLayout offset"), layout_b)

    def _set(self, a: Any, o: int, b: Layout) -> None:
        self._a, self._o, self._b = a, o, b
        self._cosize: Optional[int] = None
        self._hash: Optional[int] = None
        self._n = b.size
        if isinstance(a, Swizzle):  # the swizzle's parameters, for the scalar fast path
            self._sy, self._srs, self._sls = a._y, a._rs, a._ls
        else:
            self._sy = None

    @classmethod
    def _make(cls, a: Any, o: int, b: Layout) -> "ComposedLayout":
        obj = object.__new__(cls)
        obj._set(a, o, b)
        return obj

    # ------------------------------------------------------------------ accessors
    @property
    def layout_a(self) -> Any:
        """The outer function (usually a Swizzle)."""
        return self._a

    @property
    def offset(self) -> int:
        return self._o

    @property
    def layout_b(self) -> Layout:
        """The inner layout: it defines the domain."""
        return self._b

    @property
    def swizzle(self) -> Optional[Swizzle]:
        """``A`` when it is a Swizzle, else None."""
        return self._a if isinstance(self._a, Swizzle) else None

    @property
    def shape(self) -> Any:
        return self._b._shape

    @property
    def _shape(self) -> Any:  # the library's internals read _shape of layouts
        return self._b._shape

    @property
    def stride(self) -> Any:
        raise MalformedLayoutError(
            f"{self} has no strides (a composed layout is not a plain layout; C++ deletes stride())"
        )

    _stride = stride

    @property
    def size(self) -> int:
        return self._b.size

    @property
    def rank(self) -> int:
        return self._b.rank

    @property
    def depth(self) -> int:
        return self._b.depth

    def __len__(self) -> int:
        return self._b.rank

    def __iter__(self) -> Iterator["ComposedLayout"]:
        for m in self._b:
            yield ComposedLayout._make(self._a, self._o, m)

    def __getitem__(self, i: Any) -> "ComposedLayout":
        return ComposedLayout._make(self._a, self._o, self._b[i])

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ComposedLayout):
            return False
        return self._a == other._a and self._o == other._o and self._b == other._b

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash(("ComposedLayout", self._a, self._o, self._b))
        return h

    def __str__(self) -> str:
        return f"{self._a} o {self._o} o {self._b}"

    def __repr__(self) -> str:
        return f"ComposedLayout({self._a!r}, {self._o!r}, {self._b!r})"

    def __reduce__(self) -> Any:
        return (ComposedLayout, (self._a, self._o, self._b))

    @staticmethod
    def parse(text: str) -> "ComposedLayout":
        """Parse C++'s print format ``"Sw<3,3,3> o _0 o (8,64):(64,1)"`` (the offset may
        be left out: ``"Sw<3,3,3> o (8,64):(64,1)"``).

        >>> ComposedLayout.parse("Sw<3,3,3> o _0 o (_8,_64):(_64,_1)")
        ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 64), (64, 1)))
        """
        if not isinstance(text, str):
            raise MalformedLayoutError(f"layout notation must be a string, got {type(text).__name__}")
        parts = [p.strip() for p in text.split(" o ")]
        if len(parts) == 2:
            parts = [parts[0], "0", parts[1]]
        if len(parts) != 3:
            raise MalformedLayoutError(f"expected 'A o offset o B', got {show(text)}")
        a_txt, o_txt, b_txt = parts
        a: Any = Swizzle.parse(a_txt) if a_txt.startswith(("Sw", "SW")) else Layout.parse(a_txt)
        if not re.fullmatch(r"-?_?\d{1,400}", o_txt):
            raise MalformedLayoutError(f"the offset of a composed layout is an integer, got {show(o_txt)}")
        return ComposedLayout(a, int(o_txt.replace("_", "")), Layout.parse(b_txt))

    # ------------------------------------------------------------------ evaluation
    def _outer(self, x: int) -> int:
        y = self._sy
        if y is not None:
            return x ^ (((x & y) >> self._srs) << self._sls)
        return self._a(x)

    def __call__(self, *args: Any) -> Any:
        if len(args) == 1:
            c = args[0]
            if type(c) is int and 0 <= c < self._n:  # 1-D coordinate: the fast path
                x = self._o + self._b._eval_int(c)
                y = self._sy
                if y is not None:
                    return x ^ (((x & y) >> self._srs) << self._sls)
                return self._a(x)
        r = self._b(*args)
        if type(r) is int:
            x = self._o + r
            y = self._sy
            if y is not None:
                return x ^ (((x & y) >> self._srs) << self._sls)
            return self._outer(x)
        if isinstance(r, Layout):  # a slice
            crd = args[0] if len(args) == 1 else args
            sub, off = slice_and_offset(crd, self._b)
            return ComposedLayout._make(self._a, self._o + off, sub)
        return self._outer(self._o + r)

    def slice_and_offset(self, crd: Any) -> Tuple["ComposedLayout", int]:
        """C++'s ``slice_and_offset`` for composed layouts: the offset goes into the layout
        (``ComposedLayout(A, offset + o, sub)``) and the returned offset is 0."""
        sub, off = slice_and_offset(crd, self._b)
        return ComposedLayout._make(self._a, self._o + off, sub), 0

    def right_inverse(self) -> Any:
        """C++ (``swizzle_layout.hpp``): ``right_inverse(Sw o 0 o B) = right_inverse(B) o
        Sw`` (a swizzle is an involution), checked: ``self(R(i)) == i`` for every ``i <
        size(R)``.

        >>> C = ComposedLayout(Swizzle(2, 0, 2), 0, Layout((4, 4), (4, 1)))
        >>> R = C.right_inverse()
        >>> print(R)
        Sw<2,0,-2> o 0 o (4,4):(4,1)
        >>> all(C(R(i)) == i for i in range(16))
        True
        """
        return self._inverse("right_inverse")

    def left_inverse(self) -> Any:
        """C++ (``swizzle_layout.hpp``): ``left_inverse(Sw o 0 o B) = left_inverse(B) o
        Sw``, checked: ``R(self(i)) == i`` for every ``i`` (``self(R(self(i))) == self(i)``
        when ``B`` is not injective)."""
        return self._inverse("left_inverse")

    def _inverse(self, op: str) -> Any:
        from . import ops

        if not isinstance(self._a, Swizzle) or self._o != 0:
            raise InadmissibleError(
                f"{op}({self}): C++ inverts a composed layout Swizzle o 0 o B only (its "
                "swizzle_layout.hpp); here the outer function is "
                + ("a layout" if not isinstance(self._a, Swizzle) else f"offset by {self._o}"),
                condition="swizzle o 0 o layout",
                witness=None,
            )
        inner = getattr(ops, op)(self._b)
        R = ops.composition(inner, self._a)
        if inner.size % self._a.size == 0:
            # proved: R(c) = inner(sw(c)) on [0, size(inner)) (composition's post-condition),
            # and sw permutes that interval (its size is a multiple of sw's period), so
            # right: B(inner(sw(i))) = sw(i), hence self(R(i)) = sw(sw(i)) = i; left: B's
            # values lie in inner's domain, so R(self(i)) = inner(sw(sw(B(i)))) = inner(B(i))
            return R
        import numpy as np

        n = self.size
        m = R.size
        if max(n, m) > VERIFY_LIMIT:
            raise InadmissibleError(
                f"{op}({self}): the candidate {R} cannot be checked: the domain is larger than "
                f"VERIFY_LIMIT ({VERIFY_LIMIT})",
                condition=f"{op} of a composed layout (undecided)",
                witness=None,
            )
        cv = self.eval_all()
        rv = R.eval_all()
        if op == "right_inverse":
            bad = np.flatnonzero((rv < 0) | (rv >= n))
            if not bad.size:
                bad = np.flatnonzero(cv[rv] != np.arange(m))
        else:
            bad = np.flatnonzero((cv < 0) | (cv >= m))
            if not bad.size:
                back = rv[cv]
                bad = np.flatnonzero((back < 0) | (back >= n))
                if not bad.size:
                    bad = np.flatnonzero(cv[back] != cv)
        if bad.size:
            w = int(bad[0])
            raise InadmissibleError(
                f"{op}({self}): C++'s {R} is no {op.replace('_', ' ')}: it fails at coordinate {w}",
                condition=f"{op} of a composed layout",
                witness=w,
            )
        return R

    def _apply_outer_np(self, x: Any) -> Any:
        a = self._a
        if isinstance(a, Swizzle):
            return a._apply_np(x)
        return _layout_at(a, x)

    def eval_all(self) -> "np.ndarray":
        """Every value, in colexicographic order of the domain, as a numpy array
        (vectorized; object dtype where int64 could overflow).

        >>> ComposedLayout(Swizzle(1, 0, 1), 0, Layout(4, 1)).eval_all().tolist()
        [0, 1, 3, 2]
        """
        v = self._b.eval_all()
        if self._o:
            fs, fd = self._b._flat()
            bound = abs(self._o) + sum((s - 1) * abs(d) for s, d in zip(fs, fd))
            if bound >= 2**62 and v.dtype != object:
                v = v.astype(object)
            v = v + self._o
        return self._apply_outer_np(v)

    @property
    def cosize(self) -> int:
        """The length of the smallest interval holding every value (exact)."""
        c = self._cosize
        if c is None:
            c = self._cosize = self._compute_cosize()
        return c

    def _compute_cosize(self) -> int:
        a = self._a
        if isinstance(a, Swizzle) and _block_closed(a, self._o, self._b):
            return self._b.cosize
        n = self.size
        if n > _COSIZE_EVAL_LIMIT:
            raise InadmissibleError(
                f"cosize({self}): the swizzle does not keep B's image in place and the domain "
                f"({n}) is too large to evaluate (limit {_COSIZE_EVAL_LIMIT})",
                condition="cosize decidable by evaluation",
                witness=None,
            )
        v = self.eval_all()
        return int(v.max()) - int(v.min()) + 1

    # ------------------------------------------------------------------ C++ conveniences
    def compose(self, *layouts: Any) -> Any:
        """``composition(self, layouts...)`` (several layouts form a tuple tiler)."""
        from .ops import composition

        return composition(self, layouts[0] if len(layouts) == 1 else tuple(layouts))

    def with_shape(self, *shape: Any) -> Any:
        """``composition(self, Layout(shape))``: the same function reshaped."""
        s = shape[0] if len(shape) == 1 else tuple(shape)
        return _recompose(self._a, self._o, _composition_of(self._b, Layout(s)))

    def to_f2(self) -> "F2Layout":
        """See :func:`to_f2`."""
        return to_f2(self)


@concrete_only
def make_composed_layout(layout_a: Any, offset: Any, layout_b: Any) -> ComposedLayout:
    """C++'s ``make_composed_layout(A, offset, B)``: the constructor."""
    return ComposedLayout(layout_a, offset, layout_b)


def _block_closed(sw: Swizzle, o: int, B: Layout) -> bool:
    """Is ``{o + B(c)}`` a union of aligned ``2**(M+B+|S|)`` blocks?  Then the swizzle
    permutes each block within itself and the image set is unchanged."""
    if sw._b == 0:
        return True
    blk = 1 << sw._top
    if o % blk:
        return False
    fs, fd = B._flat()
    leaves = sorted((abs(d), d, s) for s, d in zip(fs, fd) if s != 1 and d != 0)
    cur = 1
    rest = []
    for _ad, d, s in leaves:
        if d == cur and not rest:
            cur *= s
        else:
            rest.append(d)
    return cur % blk == 0 and all(d % blk == 0 for d in rest)


def _recompose(a: Any, o: int, b: Any) -> Any:
    """C++'s three-argument composition: the constructor, except that an identity swizzle
    with offset 0 gives the layout itself."""
    if isinstance(b, ComposedLayout):
        # a o o o (a2 o o2 o b2) with a swizzle a, o == 0 and a swizzle a2
        if o == 0 and isinstance(a, Swizzle) and isinstance(b._a, Swizzle):
            return _recompose(_compose_swizzles(a, b._a), b._o, b._b)
        raise InadmissibleError(
            f"{a} o {o} o ({b}) is not of the form Swizzle o offset o Layout",
            condition="representable as A o offset o Layout",
            witness=None,
        )
    if o == 0 and isinstance(a, Swizzle) and a._b == 0:
        return b
    return ComposedLayout._make(a, o, b)


def _composition_of(B: Layout, tiler: Any) -> Any:
    from .ops import composition

    return composition(B, tiler)


# ============================================================================= lifting
@concrete_only
def lift(fn: Any, layout: Any, *args: Any, **kwargs: Any) -> Any:
    """Apply a layout operation to a composed layout the way C++ lifts it:
    ``fn(A o off o B, ...) == A o off o fn(B, ...)``.  Plain layouts go to ``fn`` as they
    are.

    >>> from layoutproof import Layout, filter
    >>> print(lift(filter, ComposedLayout(Swizzle(1, 1, 1), 0, Layout((4, 2), (1, 0)))))
    Sw<1,1,1> o 0 o 4:1
    """
    if not callable(fn):
        raise MalformedLayoutError(
            f"lift(fn, layout): fn must be a layout operation, got {type(fn).__name__} {show(fn)}"
        )
    if isinstance(layout, ComposedLayout):
        return _recompose(layout._a, layout._o, fn(layout._b, *args, **kwargs))
    if isinstance(layout, Swizzle):
        raise MalformedLayoutError(
            f"{getattr(fn, '__name__', 'operation')}: a Swizzle has no shape; compose it "
            "with a layout first (composition(Swizzle, Layout))"
        )
    return fn(layout, *args, **kwargs)


@concrete_only
def _lifted(op: str, layout: Any, *args: Any, **kwargs: Any) -> Any:
    """The dispatch target of ops.py for a non-Layout first argument."""
    from . import ops

    fn = getattr(ops, op)
    if isinstance(layout, (ComposedLayout, Swizzle)):
        return lift(fn, layout, *args, **kwargs)
    need_layout(layout, op)  # garbage: MalformedLayoutError, as before
    return fn(layout, *args, **kwargs)  # pragma: no cover - need_layout raised


@concrete_only
def _composition_lifted(lhs: Any, rhs: Any) -> Any:
    """``composition`` when either side is a Swizzle or a ComposedLayout."""
    if isinstance(lhs, ComposedLayout):
        if rhs is None or rhs is _:
            return lhs
        return _recompose(lhs._a, lhs._o, _composition_of(lhs._b, rhs))
    if isinstance(lhs, Swizzle):
        if rhs is None or rhs is _:
            return lhs
        if isinstance(rhs, Swizzle):
            return _compose_swizzles(lhs, rhs)
        if isinstance(rhs, ComposedLayout):
            if isinstance(rhs._a, Swizzle):
                return _recompose(_compose_swizzles(lhs, rhs._a), rhs._o, rhs._b)
            raise InadmissibleError(
                f"composition({lhs}, {rhs}): a swizzle after a layout-valued composed layout "
                "is not of the form Swizzle o offset o Layout",
                condition="representable as A o offset o Layout",
                witness=None,
            )
        if isinstance(rhs, Layout):
            return _recompose(lhs, 0, rhs)
        if type(rhs) is int or (is_int(rhs) and not hasattr(rhs, "shape")):
            return _recompose(lhs, 0, Layout(int(rhs), 1))
        raise MalformedLayoutError(
            f"composition(Swizzle, rhs): rhs must be a Layout (or an integer n for n:1), got "
            f"{type(rhs).__name__} {show(rhs)}"
        )
    if isinstance(lhs, Layout):
        if isinstance(rhs, Swizzle):
            return _compose_layout_swizzle(lhs, rhs)
        if isinstance(rhs, ComposedLayout):
            return _compose_layout_composed(lhs, rhs)
    need_layout(lhs, "composition")
    raise MalformedLayoutError(  # pragma: no cover - only lifted types are routed here
        f"composition: unsupported operands {type(lhs).__name__}, {type(rhs).__name__}"
    )


# ----------------------------------------------------------------------------- Layout o Swizzle
def _bit_images(L: Layout) -> Optional[List[int]]:
    """The images ``L(2**j)`` when every leaf of L has a power-of-two extent and the
    images are pairwise bit-disjoint (then L is GF(2)-linear: sums are XORs), else None."""
    fs, fd = L._flat()
    imgs: List[int] = []
    seen = 0
    for s, d in zip(fs, fd):
        if s & (s - 1) or d < 0:
            return None
        for j in range(s.bit_length() - 1):
            v = d << j
            if v & seen:
                return None
            seen |= v
            imgs.append(v)
    return imgs


def _compose_layout_swizzle(L: Layout, sw: Swizzle) -> Any:
    """``L o sw`` as C++ builds it, ``make_swizzle(L(yyy), L(zzz)) o L``, checked: it must
    equal ``L̂(sw(c))`` for every c in L's domain."""
    if sw.is_identity():
        return L
    import numpy as np

    y = int(_ext_layout_at(L, np.array([sw._y], dtype=object))[0])
    z = int(_ext_layout_at(L, np.array([sw._z], dtype=object))[0])
    try:
        cand_sw = make_swizzle(y, z)
    except MalformedLayoutError:
        plain, w = _plain_composite(L, sw)
        if plain is not None:
            return plain
        raise InadmissibleError(
            f"composition({L}, {sw}): the swizzle does not pass through the layout: "
            f"L(yyy) = {y:#b} and L(zzz) = {z:#b} are not the fields of a swizzle "
            "(C++'s make_swizzle static_assert)"
            + (
                f", and no layout reproduces c -> L(sw(c)): it stops being one at c = {w}"
                if w is not None
                else ""
            ),
            condition="swizzle passes through the layout",
            witness=w,
        ) from None
    cand = _recompose(cand_sw, 0, L)
    n = L.size
    imgs = _bit_images(L)
    if imgs is not None and n % sw.size == 0:
        # exact: both sides are GF(2)-linear in the bits of c on [0, n).  Only the bits the
        # swizzle touches need a check: for j >= M+B+|S|, sw(2**j) = 2**j, and L(2**j) shares
        # no bit with L(yyy) or L(zzz) (the images are pairwise bit-disjoint), so C++'s
        # swizzle leaves it too.
        top = (sw._y | sw._z).bit_length()
        for j in range(min(len(imgs), top)):
            c = 1 << j
            truth = L._eval_int(sw(c))
            if cand(c) != truth:
                plain, _w = _plain_composite(L, sw)
                if plain is not None:
                    return plain
                _fail_commute(L, sw, cand, c, truth)
        return cand
    if n > VERIFY_LIMIT:
        raise InadmissibleError(
            f"composition({L}, {sw}): the result {cand} cannot be checked structurally and the "
            f"domain ({n}) is larger than VERIFY_LIMIT ({VERIFY_LIMIT})",
            condition="swizzle passes through the layout (undecided)",
            witness=None,
        )
    c = _arange(n, n)
    truth = _ext_layout_at(L, sw._apply_np(c))
    got = cand.eval_all() if isinstance(cand, ComposedLayout) else L.eval_all()
    bad = np.flatnonzero(got != truth)
    if bad.size:
        w = int(bad[0])
        plain, _w = _plain_composite(L, sw)
        if plain is not None:
            return plain
        _fail_commute(L, sw, cand, w, int(truth[w]))
    return cand


def _plain_composite(L: Layout, sw: Swizzle) -> Tuple[Optional[Layout], Optional[int]]:
    """Decide exactly whether ``c -> L̂(sw(c))`` on L's domain is a plain layout.

    Evaluates it on ``[0, size(L))`` (up to VERIFY_LIMIT values) and recognises it: first
    as a layout of L's own shape (the strides are the values at the unit coordinates),
    then as any layout (``ops.recognize_layout_fn``: the first mode of a coalesced layout is forced
    by the values, so the greedy recognition finds a layout whenever one exists).  Every
    answer is checked against the values at every coordinate before it is returned.
    Returns the layout, or None and the first coordinate no layout can match (None when
    the domain is too large or L has coordinate strides: undecided).
    """
    n = L.size
    fs, fd = L._flat()
    if n > VERIFY_LIMIT or any(type(d) is not int for d in fd):
        return None, None
    import numpy as np

    from .ops import coalesce_modes, recognize_layout_fn

    v = _ext_layout_at(L, sw._apply_np(_arange(n, n)))
    if v.dtype != object and v.size and max(abs(int(v.min())), abs(int(v.max()))) * n >= 1 << 62:
        v = v.astype(object)  # the recognition multiplies values by indices
    units = [int(v[p]) if s > 1 else 0 for s, p in zip(fs, raw_flatten(raw_prefix_product(fs)))]
    cand = Layout._make(
        L._shape, raw_unflatten(tuple(units), L._stride) if type(L._shape) is tuple else units[0]
    )
    if np.array_equal(cand.eval_all(), v):
        return cand, None
    rec, w = recognize_layout_fn(v)
    if rec is None:
        return None, w
    cs, cd = coalesce_modes(tuple(rec[0]), tuple(rec[1]))
    R = Layout._make(cs[0], cd[0]) if len(cs) == 1 else Layout._make(tuple(cs), tuple(cd))
    if not np.array_equal(R.eval_all(), v):  # recognize_layout_fn checks this too; belt and braces
        return None, None
    return R, None


def _fail_commute(L: Layout, sw: Swizzle, cand: Any, w: int, truth: int) -> None:
    raise InadmissibleError(
        f"composition({L}, {sw}): the swizzle does not pass through the layout: C++'s "
        f"result {cand} gives {cand(w)} at coordinate {w}, but L(sw({w})) = {truth}",
        condition="swizzle passes through the layout",
        witness=w,
    )


def _compose_layout_composed(L: Layout, C: ComposedLayout) -> Any:
    """C++: ``composition(L, A o 0 o B) = composition(composition(L, A), B)`` (offset 0
    required), checked against ``L̂(A(B(c)))``."""
    if C._o != 0:
        raise InadmissibleError(
            f"composition({L}, {C}): a composed layout on the right needs offset 0 "
            "(C++ static_assert 'Require offset == 0')",
            condition="offset == 0",
            witness=None,
        )
    from .ops import composition

    LA = composition(L, C._a)
    if isinstance(LA, Layout):
        R = composition(LA, C._b)
        if isinstance(C._a, Swizzle) and C._a.is_identity():
            return R  # LA is L itself, extension included
        # a plain L o A (decided on L's domain): checked below like the composed case
    else:
        R = _recompose(LA._a, LA._o, composition(LA._b, C._b))
    # composition(L, A) was checked on [0, size(L)); B's image must stay inside it
    fs, fd = C._b._flat()
    lo = sum((s - 1) * d for s, d in zip(fs, fd) if d < 0)
    hi = sum((s - 1) * d for s, d in zip(fs, fd) if d > 0)
    if lo >= 0 and hi < L.size:
        return R
    import numpy as np

    n = C.size
    if n > VERIFY_LIMIT:
        raise InadmissibleError(
            f"composition({L}, {C}): B reaches outside L's domain and the domain ({n}) is "
            f"larger than VERIFY_LIMIT ({VERIFY_LIMIT})",
            condition="swizzle passes through the layout (undecided)",
            witness=None,
        )
    inner = C.eval_all()
    if inner.size and int(inner.min()) < 0:
        w = int(np.flatnonzero(inner < 0)[0])
        raise InadmissibleError(
            f"composition({L}, {C}): the composed layout maps coordinate {w} to the negative "
            f"offset {int(inner[w])}, outside L's domain",
            condition="non-negative offsets of B",
            witness=w,
        )
    truth = _ext_layout_at(L, inner)
    got = R.eval_all() if isinstance(R, ComposedLayout) else R.eval_all()
    bad = np.flatnonzero(got != truth)
    if bad.size:
        w = int(bad[0])
        raise InadmissibleError(
            f"composition({L}, {C}): the result {R} gives {int(got[w])} at coordinate {w}, but "
            f"L(C({w})) = {int(truth[w])}",
            condition="swizzle passes through the layout",
            witness=w,
        )
    return R


# ============================================================================= F2 strides
class F2:
    """An F2 (XOR) stride scalar, as in PyCuTe: ``+`` is XOR and ``n * F2(d)`` the
    carry-less product (each set bit ``j`` of ``n`` contributes ``d << j``).

    >>> F2(0b1010) + F2(0b1100), F2(0b1010) * 2, 3 * F2(0b1010), F2(7) + F2(7) == 0
    (F6, F20, F30, True)
    """

    __slots__ = ("val",)

    def __init__(self, value: Any) -> None:
        v = value.val if isinstance(value, F2) else _int_arg(value, "F2 value")
        if v < 0:
            raise MalformedLayoutError(f"F2 values are bit patterns (>= 0), got {v}")
        self.val = v

    def __int__(self) -> int:
        return self.val

    def __index__(self) -> int:
        return self.val

    def __eq__(self, other: object) -> bool:
        if isinstance(other, F2):
            return self.val == other.val
        if type(other) is int:
            return self.val == other
        return False

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self.val)  # F2(v) == v

    def __add__(self, other: Any) -> "F2":
        if isinstance(other, F2):
            return F2(self.val ^ other.val)
        if type(other) is int and other == 0:
            return self
        raise MalformedLayoutError(f"F2 + non-F2: {self} + {show(other)}")

    __radd__ = __add__

    def __mul__(self, other: Any) -> "F2":
        if isinstance(other, F2):
            return F2(_clmul(self.val, other.val))
        n = _int_arg(other, "F2 multiplier")
        if n < 0:
            raise MalformedLayoutError(f"F2 * negative integer: {self} * {n}")
        return F2(_clmul(n, self.val))

    __rmul__ = __mul__

    def __str__(self) -> str:
        return f"F{self.val}"

    __repr__ = __str__


def _clmul(a: int, b: int) -> int:
    r = 0
    j = 0
    while a:
        if a & 1:
            r ^= b << j
        a >>= 1
        j += 1
    return r


def _clmul_np(c: Any, d: int, nbits: int) -> Any:
    import numpy as np

    out = np.zeros(c.shape, dtype=c.dtype)
    for j in range(nbits):
        out ^= ((c >> j) & 1) * (d << j)
    return out


def _f2_coalesce(fs: List[int], fd: List[int]) -> Tuple[List[int], List[int]]:
    """Merge F2 modes: ``2**k:F(d), n:F(d << k)`` is ``2**k * n:F(d)``; size-1 modes go."""
    rs: List[int] = []
    rd: List[int] = []
    for s, d in zip(fs, fd):
        if s == 1:
            continue
        if rs:
            ps, pd = rs[-1], rd[-1]
            if (pd == 0 and d == 0) or (ps & (ps - 1) == 0 and d == pd << (ps.bit_length() - 1)):
                rs[-1] = ps * s
                continue
        rs.append(s)
        rd.append(d)
    if not rs:
        return [1], [0]
    return rs, rd


def _one_or_tuple(xs: List[int]) -> Any:
    return xs[0] if len(xs) == 1 else tuple(xs)


def _check_f2_stride(d: Any, depth: int = 0) -> Any:
    if type(d) is tuple or type(d) is list:
        if depth >= 64:
            raise MalformedLayoutError("F2 stride is nested too deeply")
        return tuple(_check_f2_stride(e, depth + 1) for e in d)
    if isinstance(d, F2):
        return d.val
    v = _int_arg(d, "F2 stride leaf")
    if v < 0:
        raise MalformedLayoutError(f"F2 strides are bit patterns (>= 0), got {v}")
    return v


class F2Layout:
    """A layout whose strides are F2 (XOR) strides, as PyCuTe writes swizzles:
    ``L(c) = XOR_i c_i * F(d_i)`` with the carry-less product of :class:`F2`.  Stride
    leaves are non-negative integers or ``F2`` values (both mean the bit pattern).

    >>> L = F2Layout((4, 8), (F2(1), F2(8)))
    >>> L(2, 1), L(3, 3), str(L)
    (10, 27, '(4,8):(F1,F8)')
    """

    __slots__ = ("_shape", "_stride", "_L", "_hash")

    def __init__(self, shape: Any, stride: Any) -> None:
        s = checked_shape(shape, "F2 layout shape")
        d = _check_f2_stride(stride)
        self._L = Layout(s, d)  # congruence (and depth) checked by Layout
        self._shape = s
        self._stride = d
        self._hash = None

    @classmethod
    def _make(cls, shape: Any, stride: Any) -> "F2Layout":
        obj = object.__new__(cls)
        obj._shape, obj._stride = shape, stride
        obj._L = Layout._make(shape, stride)
        obj._hash = None
        return obj

    @property
    def shape(self) -> Any:
        return self._shape

    @property
    def stride(self) -> Any:
        """The strides as :class:`F2` values."""

        def wrap(t: Any) -> Any:
            return tuple(wrap(e) for e in t) if type(t) is tuple else F2(t)

        return wrap(self._stride)

    @property
    def size(self) -> int:
        return self._L.size

    @property
    def rank(self) -> int:
        return self._L.rank

    def __len__(self) -> int:
        return self._L.rank

    def __getitem__(self, i: Any) -> "F2Layout":
        m = self._L[i]
        return F2Layout._make(m._shape, m._stride)

    @property
    def cosize(self) -> int:
        """``1 +`` the largest value (values are bit patterns and ``L(0) == 0``), exact.

        >>> F2Layout((8, 64), (72, 1)).cosize
        512
        """
        fs, fd = self._L._flat()
        if all(s & (s - 1) == 0 for s in fs):
            # the values are the GF(2) span of the bit images: its largest element, greedily
            basis: List[int] = []
            for v in self._bit_images():
                for b in basis:
                    v = min(v, v ^ b)
                if v:
                    basis.append(v)
                    basis.sort(reverse=True)
            best = 0
            for b in basis:
                best = max(best, best ^ b)
            return best + 1
        if self.size > _COSIZE_EVAL_LIMIT:
            raise InadmissibleError(
                f"cosize({self}): a non-power-of-two extent and a domain ({self.size}) too large "
                f"to evaluate (limit {_COSIZE_EVAL_LIMIT})",
                condition="cosize decidable by evaluation",
                witness=None,
            )
        return int(self.eval_all().max()) + 1

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, F2Layout):
            return False
        return self._shape == other._shape and self._stride == other._stride

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash(("F2Layout", self._shape, self._stride))
        return h

    def __str__(self) -> str:
        def f(t: Any) -> str:
            if type(t) is tuple:
                return "(" + ",".join(f(e) for e in t) + ")"
            return f"F{t}"

        return fmt_htuple(self._shape) + ":" + f(self._stride)

    def __repr__(self) -> str:
        return f"F2Layout({self._shape!r}, {self._stride!r})"

    def __call__(self, *args: Any) -> int:
        if len(args) == 1 and type(args[0]) is int:
            i = args[0]
            if not 0 <= i < self.size:
                raise OutOfDomainError(f"coordinate {i} is outside the domain [0, {self.size}) of {self}")
        else:
            i = Layout._make(self._shape, raw_prefix_product(self._shape))(*args)
            if isinstance(i, Layout):
                raise MalformedLayoutError("slicing an F2 layout is not supported")
        fs, fd = self._L._flat()
        v = 0
        for s, d in zip(fs, fd):
            v ^= _clmul(i % s, d)
            i //= s
        return v

    def eval_all(self) -> "np.ndarray":
        """Every value in colexicographic order, vectorized.

        >>> F2Layout((2, 2), (3, 1)).eval_all().tolist()
        [0, 3, 1, 2]
        """
        from .layout import check_enumerable

        check_enumerable(self.size, "eval_all of an F2 layout")
        import numpy as np

        fs, fd = self._L._flat()
        top = max([d.bit_length() + max(0, (s - 1).bit_length()) for s, d in zip(fs, fd)] + [0])
        dtype: Any = np.int64 if top < 62 else object
        out = np.zeros(1, dtype=dtype)
        for s, d in zip(fs, fd):
            if s == 1:
                continue
            c = np.arange(s, dtype=np.int64).astype(dtype)
            col = _clmul_np(c, d, (s - 1).bit_length())
            out = (col[:, None] ^ out[None, :]).reshape(-1)
        return out

    def _bit_images(self) -> List[int]:
        fs, fd = self._L._flat()
        return [d << j for s, d in zip(fs, fd) for j in range(max(0, (s - 1).bit_length()))]


# ----------------------------------------------------------------------------- conversions
@concrete_only
def to_f2(x: Any) -> F2Layout:
    """The F2-stride form of a Swizzle, a ComposedLayout or a Layout, where one exists.

    A Swizzle becomes its bit images on ``[0, size)``.  A layout (composed or plain) keeps
    its shape; a power-of-two leaf whose values are not ``c * F(d)`` for one ``d`` is
    refined into single bits (so the result's shape is a refinement of the input's, and
    1-D coordinates mean the same).  The result equals the input everywhere, which is
    proven structurally (bit-disjoint strides) or checked by evaluation (domains up to
    :data:`VERIFY_LIMIT`).  Where the function is not GF(2)-linear in the bits of its
    coordinates -- a non-zero offset, a plain stride that carries -- InadmissibleError
    names the condition and a witness coordinate.

    >>> from layoutproof import Layout
    >>> print(to_f2(ComposedLayout(Swizzle(2, 0, 2), 0, Layout((4, 4), (4, 1)))))
    (4,4):(F5,F1)
    >>> print(to_f2(Layout((2, 4), (4, 1))))
    (2,4):(F4,F1)
    >>> to_f2(Layout(4, 3))
    Traceback (most recent call last):
      ...
    layoutproof.errors.InadmissibleError: to_f2(4:3): not GF(2)-linear: at coordinate 3 ...
    """
    if isinstance(x, Swizzle):
        return x.to_f2()
    if isinstance(x, ComposedLayout):
        return _to_f2_composed(x)
    if isinstance(x, F2Layout):
        return x
    if isinstance(x, Layout):
        return _to_f2_generic(x, None, x)
    raise MalformedLayoutError(
        f"to_f2 takes a Swizzle, a ComposedLayout or a Layout, got {type(x).__name__} {show(x)}"
    )


def _to_f2_composed(C: ComposedLayout) -> F2Layout:
    sw = C.swizzle
    if sw is not None and C._o != 0 and sw(C._o) != 0:
        raise InadmissibleError(
            f"to_f2({C}): the value at coordinate 0 is {sw(C._o)}; an F2 layout maps 0 to 0 "
            "(a non-zero offset makes the function affine, not linear)",
            condition="GF(2)-linearity (zero at the origin)",
            witness=0,
        )
    if sw is not None and _linear_layout(C._b):
        return _to_f2_generic(C, sw, C._b)
    return _to_f2_generic(C, None, C._b)


def _to_f2_generic(f: Any, sw: Optional[Swizzle], B: Layout) -> F2Layout:
    """F2 strides of the function ``f`` on B's domain.  With ``sw`` given, f = sw o B and
    B is bit-disjoint: f is GF(2)-linear and the strides follow from the bit images
    (no evaluation); otherwise candidate strides are read off the values and checked."""
    import numpy as np

    fs, fd = B._flat()
    pp = raw_flatten(raw_prefix_product(B._shape))
    if sw is not None:

        def unit(k: int, j: int) -> int:
            return sw(fd[k] << j)

        vals = None
    elif B.size == 1 or (isinstance(f, Layout) and _linear_layout(f)):
        vals = None

        def unit(k: int, j: int) -> int:
            return fd[k] << j
    else:
        n = B.size
        if n > VERIFY_LIMIT:
            raise InadmissibleError(
                f"to_f2({f}): no structural proof applies and the domain ({n}) is larger than "
                f"VERIFY_LIMIT ({VERIFY_LIMIT})",
                condition="GF(2)-linearity (undecided)",
                witness=None,
            )
        vals = f.eval_all()
        if int(vals[0]) != 0:
            raise InadmissibleError(
                f"to_f2({f}): the value at coordinate 0 is {int(vals[0])}; an F2 layout maps 0 to 0",
                condition="GF(2)-linearity (zero at the origin)",
                witness=0,
            )

        def unit(k: int, j: int) -> int:
            return int(vals[pp[k] << j])

    leaves_s: List[Any] = []
    leaves_d: List[Any] = []
    for k, s in enumerate(fs):
        nb = max(0, (s - 1).bit_length())
        imgs = [unit(k, j) for j in range(nb)]
        if any(v < 0 for v in imgs):
            j = next(j for j, v in enumerate(imgs) if v < 0)
            raise InadmissibleError(
                f"to_f2({f}): the value {imgs[j]} at coordinate {pp[k] << j} is negative; F2 "
                "values are bit patterns",
                condition="GF(2)-linearity (non-negative values)",
                witness=pp[k] << j,
            )
        d = imgs[0] if imgs else 0
        if all(v == d << j for j, v in enumerate(imgs)):
            leaves_s.append(s)
            leaves_d.append(d)
        elif s & (s - 1) == 0:
            ms, md = _f2_coalesce([2] * nb, imgs)
            leaves_s.append(_one_or_tuple(ms))
            leaves_d.append(_one_or_tuple(md))
        else:
            j = next(j for j, v in enumerate(imgs) if v != d << j)
            raise InadmissibleError(
                f"to_f2({f}): not GF(2)-linear: mode {k} has extent {s} (not a power of two), "
                f"and its values are not c * F{d}: at coordinate {pp[k] << j} the value is "
                f"{imgs[j]}, F-stride form gives {d << j}",
                condition="GF(2)-linearity",
                witness=pp[k] << j,
            )
    shape = raw_unflatten(tuple(leaves_s), B._shape) if type(B._shape) is tuple else leaves_s[0]
    stride = raw_unflatten(tuple(leaves_d), B._stride) if type(B._stride) is tuple else leaves_d[0]
    R = F2Layout._make(shape, stride)
    if vals is not None:
        got = R.eval_all()
        bad = np.flatnonzero(got != vals)
        if bad.size:
            w = int(bad[0])
            raise InadmissibleError(
                f"to_f2({f}): not GF(2)-linear: at coordinate {w} the value is {int(vals[w])}, "
                f"but the XOR of its bits' images is {int(got[w])}",
                condition="GF(2)-linearity",
                witness=w,
            )
    return R


@concrete_only
def from_f2(L: Any) -> Any:
    """A plain Layout, or ``Swizzle o 0 o Layout``, equal to the F2 layout ``L`` on its
    domain; InadmissibleError where none is found.

    A plain Layout is returned when the strides never overlap (XOR is then +).  Else the
    swizzle read off the bit images that are pairs of bits at one distance ``|S|`` (the
    read and the flipped bit of one swizzle) is tried with either sign, then every swizzle
    whose fields lie within the images' bits (up to 24 bits), smallest first.  For a
    swizzle ``sw`` the inner layout is forced, ``P(c) = sw(L(c))`` (a swizzle is an
    involution): its strides are ``sw(image)`` per leaf, or per bit where a leaf's images
    are not one stride's multiples (the leaf is then refined).  Every answer is checked:
    structurally when P's strides are bit-disjoint (then sw o P is GF(2)-linear and agrees
    with L on every bit), else by evaluation up to :data:`VERIFY_LIMIT`.

    >>> print(from_f2(F2Layout((2, 2), (3, 1))))
    Sw<1,0,1> o 0 o (2,2):(2,1)
    >>> print(from_f2(Swizzle(2, 1, -3).to_f2()))
    Sw<2,1,-3> o 0 o (2,4,8):(1,2,8)
    >>> print(from_f2(F2Layout((4, 2), (1, 4))))
    (4,2):(1,4)
    """
    if not isinstance(L, F2Layout):
        raise MalformedLayoutError(f"from_f2 takes an F2Layout, got {type(L).__name__} {show(L)}")
    fs, fd = L._L._flat()
    plain = Layout._make(L._shape, L._stride)
    if _layout_bit_disjoint(fs, fd):
        return plain
    imgs = L._bit_images()
    pairs = []
    for v in imgs:
        pc = _popcount(v)
        if pc > 2:
            pairs = None
            break
        if pc == 2:
            b = _bits_of(v)
            pairs.append((b[0], b[1]))
    tried: List[Swizzle] = []
    if pairs:
        for sign in (1, -1):
            ys = [hi if sign > 0 else lo for lo, hi in pairs]
            zs = [lo if sign > 0 else hi for lo, hi in pairs]
            sw = _swizzle_from_yz(ys, zs)
            if sw is None or sw.is_identity():
                continue
            tried.append(sw)
            R = _try_inner(L, sw, fs, fd)
            if R is not None:
                return R
    # every swizzle within the images' bits, smallest first, each decided structurally
    t = max((v.bit_length() for v in imgs), default=0)
    if t <= _F2_SEARCH_BITS:
        for b in range(1, t // 2 + 1):
            for a in range(b, t - b + 1):
                for sgn in (1, -1):
                    for m in range(0, t - b - a + 1):
                        sw = Swizzle(b, m, sgn * a)
                        R = _try_inner(L, sw, fs, fd, allow_eval=False)
                        if R is not None:
                            return R
    n = L.size
    if n <= VERIFY_LIMIT:
        got = L.eval_all()
        plain_vals = plain.eval_all()
        if bool((got == plain_vals).all()):
            return plain
    raise InadmissibleError(
        f"from_f2({L}): no plain layout and no swizzle o layout equals it"
        + (f" (tried {', '.join(map(str, tried))})" if tried else "")
        + "; its bit images "
        + str(imgs[:16])
        + ("..." if len(imgs) > 16 else "")
        + (f" (every swizzle within bit {t} tried)" if t <= _F2_SEARCH_BITS else ""),
        condition="swizzle form",
        witness=None,
    )


def _linear_layout(L: Layout) -> bool:
    """Non-negative strides whose bit images never overlap: L is GF(2)-linear."""
    fs, fd = L._flat()
    return all(d >= 0 for d in fd) and _layout_bit_disjoint(fs, fd)


def _layout_bit_disjoint(fs: tuple, fd: tuple) -> bool:
    """All images ``d << j`` (j below the bit length of s-1) pairwise bit-disjoint: then
    XOR equals + for the plain layout with the same strides."""
    seen = 0
    for s, d in zip(fs, fd):
        for j in range(max(0, (s - 1).bit_length())):
            v = d << j
            if v & seen:
                return False
            seen |= v
    return True


def _try_inner(
    L: F2Layout, sw: Swizzle, fs: tuple, fd: tuple, allow_eval: bool = True
) -> Optional[ComposedLayout]:

    leaves_s: List[Any] = []
    leaves_d: List[Any] = []
    for s, d in zip(fs, fd):
        nb = max(0, (s - 1).bit_length())
        p = sw(d)
        ps = [sw(d << j) for j in range(nb)]
        if all(q == p << j for j, q in enumerate(ps)):
            leaves_s.append(s)
            leaves_d.append(p)
        elif s & (s - 1) == 0:
            from .ops import coalesce_modes

            ms, md = coalesce_modes(tuple([2] * nb), tuple(ps))
            leaves_s.append(_one_or_tuple(ms))
            leaves_d.append(_one_or_tuple(md))
        else:
            return None
    prof_s, prof_d = L._shape, L._stride
    shape = raw_unflatten(tuple(leaves_s), prof_s) if type(prof_s) is tuple else leaves_s[0]
    stride = raw_unflatten(tuple(leaves_d), prof_d) if type(prof_d) is tuple else leaves_d[0]
    inner = Layout._make(shape, stride)
    R = ComposedLayout._make(sw, 0, inner)
    ifs, ifd = inner._flat()
    if _layout_bit_disjoint(ifs, ifd) and all(d >= 0 for d in ifd):
        # inner is GF(2)-linear and sw(inner(bit)) == L(bit) for every bit: equal
        ok = all(sw(q) == v for q, v in zip(_f2_like_images(ifs, ifd), _refined_images(L, ifs)))
        return R if ok else None
    if not allow_eval or L.size > VERIFY_LIMIT:
        return None
    return R if bool((R.eval_all() == L.eval_all()).all()) else None


def _f2_like_images(fs: tuple, fd: tuple) -> List[int]:
    return [d << j for s, d in zip(fs, fd) for j in range(max(0, (s - 1).bit_length()))]


def _refined_images(L: F2Layout, ifs: tuple) -> List[int]:
    """L's values at the coordinates that are one bit of one leaf of the refined shape
    ``ifs`` (a refinement of L's flat shape, same 1-D coordinates)."""
    out = []
    p = 1
    for s in ifs:
        for j in range(max(0, (s - 1).bit_length())):
            out.append(L(p << j))
        p *= s
    return out
