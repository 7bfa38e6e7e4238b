"""Swizzles: CuTe's bit-XOR permutations of offsets (C++ ``swizzle.hpp``).

A :class:`Swizzle` ``Sw<B,M,S>`` is CuTe's bit-XOR permutation of offsets: the ``B`` bits
at ``[M + max(0,S), M + max(0,S) + B)`` (the "YYY" bits) are XORed into the ``B`` bits at
``[M - min(0,S), M - min(0,S) + B)`` (the "ZZZ" bits).  ``|S| >= B`` keeps the two fields
apart, so every swizzle is an involution, hence a bijection, of the integers, and of
every ``[0, k * 2**(M+B+|S|))``.

>>> sw = Swizzle(3, 3, 3)
>>> sw, str(sw), sw(64), sw(sw(64))
(Swizzle(3, 3, 3), 'Sw<3,3,3>', 72, 64)

Swizzled layouts ``Sw o offset o Layout`` are :class:`~layoutproof.composed.ComposedLayout`
(module :mod:`layoutproof.composed`), their F2-stride form is in :mod:`layoutproof.f2`.
For code written against the single module of earlier versions, their names are still
importable from here (``from layoutproof.swizzle import ComposedLayout, to_f2``).

Semantics (C++ ``swizzle.hpp``; PyCuTe; legacy pycute): C++'s checks (``B, M >= 0``,
``|S| >= B``); PyCuTe checks ``|S| >= B`` only for negative ``S`` (so its
``Swizzle(3,0,1)`` overlaps and is no involution); legacy pycute asserts.
``Swizzle(0, b, 0)`` is the identity (legacy pycute: RecursionError).
``size == cosize == 2**(M+B+|S|)`` (legacy pycute; C++ has no size, and its
``make_layout(Swizzle)`` takes the *shape* ``M+B+|S|``).  Printed ``Sw<B,M,S>`` (C++).
"""

from __future__ import annotations

import re
from typing import Any, List, Optional, Tuple

from . import kinds
from .errors import InadmissibleError, MalformedLayoutError, show
from .inttuple import is_int

__all__ = [
    "Swizzle",
    "make_swizzle",
    "compose_swizzles",
    "SWIZZLE_MAX_BITS",
    "VERIFY_LIMIT",
]

# A swizzle touches bits below M+B+|S|; beyond 64 it is no machine address (C++ uses 32-bit
# int masks).  The bound also keeps hostile parameters from building gigantic masks.
SWIZZLE_MAX_BITS = 64
# Where a result is checked by evaluating it everywhere (no structural proof applies),
# domains up to this size are checked; larger ones raise rather than go unchecked.  The
# composed-layout and F2 modules read it here (layoutproof.swizzle.VERIFY_LIMIT = ...).
VERIFY_LIMIT = 1 << 22
# cosize of a composed layout is exact; without the closed-block fast path it evaluates.
COSIZE_EVAL_LIMIT = 1 << 26


def int_arg(x: Any, what: str) -> int:
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


def popcount(x: int) -> int:
    return bin(x).count("1")


def bits_of(x: int) -> List[int]:
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
    _b: int
    _m: int
    _s: int
    _y: int
    _z: int
    _rs: int
    _ls: int
    _top: int
    _hash: Optional[int]
    _lp_lifted = True  # a kind of layout (layoutproof.verify recognises them by this marker)

    def __init__(self, bits: Any, base: Any, shift: Any = None) -> None:
        b = int_arg(bits, "Swizzle bits (B)")
        m = int_arg(base, "Swizzle base (M)")
        s = b if shift is None else int_arg(shift, "Swizzle shift (S)")
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

    @property
    def xor_parts(self) -> Tuple[int, int, int]:
        """``(yyy_msk, r, l)`` with ``self(x) == x ^ (((x & yyy_msk) >> r) << l)`` for every
        integer ``x`` (one of the shifts is 0): the swizzle as three integers, for callers
        that inline it.

        >>> Swizzle(2, 0, 2).xor_parts, Swizzle(1, 0, -1).xor_parts
        ((12, 2, 0), (1, 0, 1))
        """
        return self._y, self._rs, self._ls

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
    def to_f2(self) -> Any:
        """The swizzle on ``[0, size)`` as a layout with F2 strides (the image of each bit).

        >>> print(Swizzle(3, 3, 3).to_f2())
        (64,8):(F1,F72)
        """
        return kinds.call("to_f2", self)  # layoutproof.f2 registers it

    def as_layout(self) -> Any:
        """``Sw o 0 o size:1``: the swizzle on its domain as a composed layout (C++'s
        ``make_layout(Swizzle)`` uses the shape ``M+B+|S|``, which is not closed under the
        swizzle; this uses ``2**(M+B+|S|)``).

        >>> print(Swizzle(1, 2, 3).as_layout())
        Sw<1,2,3> o 0 o 64:1
        """
        return kinds.call("as_layout", self)  # layoutproof.composed registers it


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
    y = int_arg(yyy, "make_swizzle YYY mask")
    z = int_arg(zzz, "make_swizzle ZZZ mask")
    if y < 0 or z < 0 or y.bit_length() > SWIZZLE_MAX_BITS or z.bit_length() > SWIZZLE_MAX_BITS:
        raise MalformedLayoutError(
            f"make_swizzle({show(yyy)}, {show(zzz)}): masks are non-negative and below 2**{SWIZZLE_MAX_BITS}"
        )
    b = popcount(y)
    if b != popcount(z):
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


def swizzle_images(sw: Swizzle, nbits: int) -> List[int]:
    return [sw(1 << j) for j in range(nbits)]


def swizzle_from_yz(ys: List[int], zs: List[int]) -> Optional[Swizzle]:
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


def compose_swizzles(s1: Swizzle, s2: Swizzle) -> Swizzle:
    """``s1 o s2`` when it is a swizzle (both are GF(2)-linear on the bits and fix every
    bit from max(M+B+|S|) up, so comparing the images of the lower bits is exact)."""
    if not isinstance(s1, Swizzle) or not isinstance(s2, Swizzle):
        bad = s2 if isinstance(s1, Swizzle) else s1
        raise MalformedLayoutError(
            f"compose_swizzles takes two Swizzles, got {type(bad).__name__} {show(bad)}"
        )
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
        if popcount(rest) != 1 or not v >> j & 1:
            ok = False
            break
        ys.append(j)
        zs.append(rest.bit_length() - 1)
    cand = swizzle_from_yz(ys, zs) if ok else None
    if cand is not None and swizzle_images(cand, n) == imgs:
        return cand
    raise InadmissibleError(
        f"composition({s1}, {s2}): the composite is not a swizzle (bit images "
        f"{[hex(v) for v in imgs]}); C++'s make_swizzle static_assert fails here",
        condition="composite of swizzles is a swizzle",
        witness=None,
    )


# The names that lived here before the split into swizzle, composed and f2 (users import
# them from layoutproof.swizzle).  Loaded on first use: the modules that define them are
# built on this one.
_MOVED = {
    "ComposedLayout": "composed",
    "make_composed_layout": "composed",
    "lift": "composed",
    "F2": "f2",
    "F2Layout": "f2",
    "to_f2": "f2",
    "from_f2": "f2",
}


def __getattr__(name: str) -> Any:
    where = _MOVED.get(name)
    if where == "composed":
        from . import composed

        return getattr(composed, name)
    if where == "f2":
        from . import f2

        return getattr(f2, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
