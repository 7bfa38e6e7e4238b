"""Coordinate strides: arithmetic tuples, scaled basis elements and identity layouts.

CuTe lets a stride be a *basis element* instead of an integer (``ArithmeticTuple``,
``ScaledBasis``, ``E<i...>`` in ``cute/numeric/arithmetic_tuple.hpp``).  A layout with
such strides maps a coordinate to a *coordinate*: the identity layout of a shape,
``make_layout(shape, make_basis_like(shape))``, maps every coordinate to its own natural
coordinate, and the whole algebra (composition, divides, slicing) then tracks where each
element of a tile came from.  That is how CuTe builds predicates and checks partitions.

* :class:`ArithTuple` -- an element of the free module ``Z^S`` over a hierarchical index
  set: a hierarchical tuple of integers with elementwise ``+``/``-`` and integer ``*``.
  Trailing positions are implicitly zero (as in C++, where ``+`` pads with zeros): so
  ``(1,0) == (1,)`` and the zero tuple equals ``0``.  Equality and hashing follow that
  (PyCuTe's convention; C++ compares tuples of different rank as unequal).
* :class:`ScaledBasis` -- ``value * E(path...)``, the single-entry ArithTuple; ``E(1, 0)``
  is the unit vector at mode 1, sub-mode 0.  Prints like C++: ``value@i@j...`` with the
  innermost index first (``E(1, 0)`` prints ``1@0@1``; C++ prints static values with an
  underscore, ``_1@0@1``).  ``E()`` is the scalar 1.
* :func:`make_basis_like`, :func:`make_identity_layout`.

>>> E(0) + 3 * E(1)
ArithTuple(1, 3)
>>> print(E(0), E(1, 0), 3 * E(1))
1@0 1@0@1 3@1
>>> L = make_identity_layout((4, (2, 3)))
>>> print(L)
(4,(2,3)):(1@0,(1@0@1,1@1@1))
>>> L(13) == (1, (1, 1)), L.coshape, L.cosize
(True, (4, (2, 3)), 24)

Coordinates are not ordered: ``<`` on them raises
:class:`~layoutproof.errors.InadmissibleError` (condition ``"integer strides"``), which is
how complement, the inverses that need it and the products reject coordinate strides, as
CuTe C++ does (it has no ``operator<`` on ``ScaledBasis``).
"""

from __future__ import annotations

import numbers
from itertools import zip_longest
from typing import Any, List, Optional, Tuple

from . import kinds
from .errors import InadmissibleError, MalformedLayoutError, show
from .inttuple import MAX_DEPTH, MAX_RANK, raw_unflatten
from .layout import Layout, checked_shape, need_layout

__all__ = [
    "ArithTuple",
    "ScaledBasis",
    "E",
    "make_basis_like",
    "make_identity_layout",
    "is_coordinate",
    "has_coordinate_strides",
    "basis_value",
    "basis_get",
    "as_arith_tuple",
]


def _int(x: Any, what: str) -> int:
    if type(x) is int:
        return x
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        return int(x)
    raise MalformedLayoutError(f"{what} must be an integer, got {type(x).__name__} {show(x)}")


def _lift(x: Any, depth: int = 0) -> Any:
    """An ArithTuple element: an int, or an ArithTuple for a (nested) tuple."""
    t = type(x)
    if t is int:
        return x
    if isinstance(x, ArithTuple):
        return x
    if t is tuple or t is list or isinstance(x, tuple):
        if depth >= MAX_DEPTH:
            raise MalformedLayoutError(f"ArithTuple is nested deeper than {MAX_DEPTH} levels")
        return make_arith_tuple(tuple(_lift(e, depth + 1) for e in x))
    return _int(x, "an ArithTuple element")


def make_arith_tuple(data: Tuple[Any, ...]) -> "ArithTuple":
    """Trusted constructor: the ArithTuple of already-lifted elements (ints, ArithTuples)."""
    obj = object.__new__(ArithTuple)
    obj._data = data
    obj._hash = None
    return obj


def _is_zero(x: Any) -> bool:
    if type(x) is int:
        return x == 0
    return all(_is_zero(e) for e in x._data)


def _add(a: Any, b: Any, sign: int = 1) -> Any:
    """a + sign*b on ArithTuple elements (ints or ArithTuples)."""
    ia, ib = type(a) is int, type(b) is int
    if ia and ib:
        return a + b if sign == 1 else a - b
    if ia or ib:
        s, t = (a, b) if ia else (b, a)
        if s != 0:
            raise MalformedLayoutError(
                f"cannot add the scalar {s} to the coordinate {t}: a scalar and a coordinate "
                "(ArithTuple) only add when the scalar is 0 (a layout may not mix non-zero "
                "integer strides with basis strides)"
            )
        if ib:
            return a
        return b if sign == 1 else _neg(b)
    return make_arith_tuple(tuple(_add(x, y, sign) for x, y in zip_longest(a._data, b._data, fillvalue=0)))


def _neg(x: Any) -> Any:
    if type(x) is int:
        return -x
    return make_arith_tuple(tuple(_neg(e) for e in x._data))


def _scale(x: Any, k: int) -> Any:
    if type(x) is int:
        return x * k
    return make_arith_tuple(tuple(_scale(e, k) for e in x._data))


def _eq(a: Any, b: Any) -> bool:
    ia, ib = type(a) is int, type(b) is int
    if ia and ib:
        return bool(a == b)
    if ia:
        return a == 0 and _is_zero(b)
    if ib:
        return b == 0 and _is_zero(a)
    return all(_eq(x, y) for x, y in zip_longest(a._data, b._data, fillvalue=0))


def _canon(x: Any) -> Any:
    """The canonical (trailing zeros trimmed, zero -> 0) plain form, for hashing."""
    if type(x) is int:
        return x
    items = [_canon(e) for e in x._data]
    while items and items[-1] == 0 and type(items[-1]) is int:
        items.pop()
    return tuple(items) if items else 0


def _plain(x: Any) -> Any:
    if type(x) is int:
        return x
    return tuple(_plain(e) for e in x._data)


class Unordered:
    """Stride values with no order (coordinate tuples, F2 bit patterns): ``<``, ``<=``, ``>``
    and ``>=`` raise an InadmissibleError (condition "integer strides") naming what the
    values are (``_WHAT``) and which operations order strides (``_NEEDS``)."""

    __slots__ = ()
    _WHAT = "these strides"
    _NEEDS = "An operation that orders strides needs integer strides"

    def _unordered(self, other: Any, op: str) -> bool:
        raise InadmissibleError(
            f"{self._WHAT} are not ordered: {self} {op} {show(other)} is undefined. {self._NEEDS}",
            condition="integer strides",
            witness=None,
        )

    def __lt__(self, other: Any) -> bool:
        return self._unordered(other, "<")

    def __le__(self, other: Any) -> bool:
        return self._unordered(other, "<=")

    def __gt__(self, other: Any) -> bool:
        return self._unordered(other, ">")

    def __ge__(self, other: Any) -> bool:
        return self._unordered(other, ">=")


class ArithTuple(Unordered):
    """A hierarchical tuple of integers under elementwise ``+``, ``-`` and integer ``*``.

    ``ArithTuple(1, 0)``, ``ArithTuple((1, 0))`` and ``ArithTuple([1, 0])`` are the same;
    nested tuples become nested ArithTuples.  Missing trailing entries count as 0, and a
    scalar only adds to a coordinate when it is 0 (CuTe's ``C<0>`` special case).

    >>> a = ArithTuple(1, (2, 3))
    >>> a + ArithTuple(10), 2 * a, -a
    (ArithTuple(11, (2, 3)), ArithTuple(2, (4, 6)), ArithTuple(-1, (-2, -3)))
    >>> print(a); a == (1, (2, 3)), ArithTuple(1, 0) == ArithTuple(1), ArithTuple(0, 0) == 0
    (1,(2,3))
    (True, True, True)
    >>> a.to_tuple(), len(a), a[1]
    ((1, (2, 3)), 2, ArithTuple(2, 3))
    """

    _lp_coordinate = True  # lets the algebra below recognise coordinates without importing this module

    _WHAT = "coordinates"
    _NEEDS = (
        "An operation that orders strides (complement, left_inverse, the products, composition "
        "with basis strides in its right operand) needs integer strides; CuTe C++ rejects basis "
        "strides there too"
    )
    __slots__ = ("_data", "_hash")
    _data: Tuple[Any, ...]
    _hash: Optional[int]
    # numpy: do not broadcast over us; defer to our reflected operators.
    __array_ufunc__ = None

    def __init__(self, *elems: Any) -> None:
        if len(elems) == 1 and (type(elems[0]) in (tuple, list) or isinstance(elems[0], ArithTuple)):
            elems = tuple(elems[0])
        self._data = tuple(_lift(e, 1) for e in elems)
        self._hash = None

    # ------------------------------------------------------------------ tuple interface
    def __len__(self) -> int:
        return len(self._data)

    def __iter__(self) -> Any:
        return iter(self._data)

    def __getitem__(self, i: Any) -> Any:
        return self._data[i]

    def to_tuple(self) -> Tuple[Any, ...]:
        """The plain nested tuple of the entries (as stored: no trailing zeros trimmed)."""
        t: Tuple[Any, ...] = _plain(self)
        return t

    # ------------------------------------------------------------------ arithmetic
    def __add__(self, other: Any) -> Any:
        return _add(self, _operand(other, "+"))

    def __radd__(self, other: Any) -> Any:
        return _add(_operand(other, "+"), self)

    def __sub__(self, other: Any) -> Any:
        return _add(self, _operand(other, "-"), -1)

    def __rsub__(self, other: Any) -> Any:
        return _add(_operand(other, "-"), self, -1)

    def __neg__(self) -> Any:
        return _neg(self)

    def __pos__(self) -> Any:
        return self

    def __abs__(self) -> Any:
        return make_arith_tuple(tuple(abs(e) for e in self._data))

    def __mul__(self, k: Any) -> Any:
        return _scale(self, _int(k, "a coordinate's scale factor"))

    __rmul__ = __mul__

    # ------------------------------------------------------------------ comparison
    def __eq__(self, other: Any) -> bool:
        if isinstance(other, ArithTuple):
            return _eq(self, other)
        if type(other) is int or (isinstance(other, numbers.Integral) and not isinstance(other, bool)):
            return _eq(self, int(other))
        if isinstance(other, (tuple, list)):
            try:
                o = _lift(other, 1)
            except MalformedLayoutError:
                return False
            return _eq(self, o)
        return NotImplemented

    def __ne__(self, other: Any) -> bool:
        r = self.__eq__(other)
        return r if r is NotImplemented else not r

    def __hash__(self) -> int:
        h = self._hash
        if h is None:
            h = self._hash = hash(_canon(self))
        return h

    def __bool__(self) -> bool:
        return not _is_zero(self)

    # ------------------------------------------------------------------ display
    def __str__(self) -> str:
        return "(" + ",".join(str(e) for e in self._data) + ")"

    def __repr__(self) -> str:
        return "ArithTuple(" + ", ".join(repr(_plain(e)) for e in self._data) + ")"

    def __reduce__(self) -> Any:
        return (ArithTuple, (self.to_tuple(),))


def _operand(x: Any, op: str) -> Any:
    if type(x) is int or isinstance(x, ArithTuple):
        return x
    if isinstance(x, numbers.Integral) and not isinstance(x, bool):
        return int(x)
    if isinstance(x, (tuple, list)):
        return _lift(x, 1)
    raise MalformedLayoutError(
        f"a coordinate {op} {type(x).__name__} {show(x)}: the operand must be an integer or a coordinate"
    )


class ScaledBasis(ArithTuple):
    """``value * E(path...)``: the ArithTuple with ``value`` at ``path`` and 0 elsewhere.

    ``ScaledBasis(v, ())`` is the scalar ``v`` itself (C++'s ``E<>``), and a ScaledBasis
    value nests like C++ (``ScaledBasis(ScaledBasis(v, (j,)), (i,)) == ScaledBasis(v,
    (i, j))``).  Scaling keeps a ScaledBasis; adding gives an :class:`ArithTuple`.

    >>> b = ScaledBasis(3, (1, 0))
    >>> print(b); b.value, b.path, b.to_tuple()
    3@0@1
    (3, (1, 0), (0, (3,)))
    >>> 2 * E(1), E(0) + E(1)
    (ScaledBasis(2, (1,)), ArithTuple(1, 1))
    """

    __slots__ = ("_value", "_path")
    _value: int
    _path: Tuple[int, ...]

    def __new__(cls, value: Any = 1, path: Any = ()) -> Any:
        if type(path) is not tuple:
            if isinstance(path, (list, tuple)):
                path = tuple(path)
            else:
                path = (path,)
        p = tuple(_int(i, "a basis index") for i in path)
        for i in p:
            if not 0 <= i < MAX_RANK:
                raise MalformedLayoutError(f"a basis index must lie in [0, {MAX_RANK}), got {i}")
        if len(p) > MAX_DEPTH:
            raise MalformedLayoutError(f"a basis path is nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, ScaledBasis):
            return ScaledBasis(value._value, p + value._path)
        if isinstance(value, ArithTuple):
            x: Any = value
            for i in reversed(p):
                x = make_arith_tuple((0,) * i + (x,))
            return x
        v = _int(value, "a ScaledBasis value")
        if not p:
            return v
        return _make_sb(v, p)

    def __init__(self, value: Any = 1, path: Any = ()) -> None:  # built in __new__
        pass

    @property
    def value(self) -> int:
        """The scale (C++ ``basis_value``)."""
        return self._value

    @property
    def path(self) -> Tuple[Any, ...]:
        """The basis path, outermost index first (C++'s ``Ns...``)."""
        return self._path

    def __mul__(self, k: Any) -> Any:
        return _make_sb(self._value * _int(k, "a coordinate's scale factor"), self._path)

    __rmul__ = __mul__

    def __neg__(self) -> Any:
        return _make_sb(-self._value, self._path)

    def __abs__(self) -> Any:
        return _make_sb(abs(self._value), self._path)

    def __str__(self) -> str:
        return str(self._value) + "".join(f"@{i}" for i in reversed(self._path))

    def __repr__(self) -> str:
        if self._value == 1:
            return "E(" + ", ".join(str(i) for i in self._path) + ")"
        return f"ScaledBasis({self._value}, {self._path!r})"

    def __reduce__(self) -> Any:
        return (ScaledBasis, (self._value, self._path))


def _make_sb(v: int, path: Tuple[Any, ...]) -> ScaledBasis:
    x: Any = v
    for i in reversed(path[1:]):
        x = make_arith_tuple((0,) * i + (x,))
    obj = object.__new__(ScaledBasis)
    obj._value = v
    obj._path = path
    obj._data = (0,) * path[0] + (x,)
    obj._hash = None
    return obj


def E(*path: Any) -> Any:  # noqa: N802 - CuTe's name
    """The unit basis element at ``path``: ``E(0) = (1,0,...)``, ``E(1, 0) = (0,(1,...))``;
    ``E()`` is the scalar 1.

    >>> E(1), E(1).to_tuple(), E()
    (E(1), (0, 1), 1)
    """
    return ScaledBasis(1, path)


# ----------------------------------------------------------------------------- helpers
def is_coordinate(x: Any) -> bool:
    """True for an ArithTuple (a ScaledBasis included)."""
    return isinstance(x, ArithTuple)


def basis_value(x: Any) -> Any:
    """The scale of a ScaledBasis; anything else is returned as is (C++ ``basis_value``)."""
    return x._value if isinstance(x, ScaledBasis) else x


def basis_get(b: Any, t: Any) -> Any:
    """The entry of ``t`` that the basis element ``b`` selects (C++ ``basis_get``):
    ``basis_get(E(1, 0), (a, (b, c))) == b``.  A scalar basis returns ``t`` itself."""
    if not isinstance(b, ScaledBasis):
        return t
    for i in b._path:
        try:
            t = t[i]
        except (TypeError, IndexError, KeyError):
            raise MalformedLayoutError(
                f"basis_get: {b} selects index {i}, which {show(t)} does not have"
            ) from None
    return t


def as_arith_tuple(x: Any) -> Any:
    """An integer stays; a (nested) tuple becomes an ArithTuple."""
    return _lift(x)


def make_basis_like(shape: Any) -> Any:
    """The basis elements congruent with ``shape``: leaf ``path`` gets ``E(*path)``
    (C++ ``make_basis_like``).

    >>> make_basis_like((4, (2, 3)))
    (E(0), (E(1, 0), E(1, 1)))
    >>> make_basis_like(8)
    1
    """
    s = checked_shape(shape)

    def walk(x: Any, path: Tuple[Any, ...]) -> Any:
        if type(x) is tuple:
            return tuple(walk(e, path + (i,)) for i, e in enumerate(x))
        return E(*path)

    return walk(s, ())


def make_identity_layout(shape: Any) -> Any:
    """``make_layout(shape, make_basis_like(shape))``: every coordinate maps to its own
    natural coordinate (an :class:`ArithTuple`).

    >>> I = make_identity_layout((4, 8))
    >>> print(I); I(13), I(1, 3)
    (4,8):(1@0,1@1)
    (ArithTuple(1, 3), ArithTuple(1, 3))
    """
    s = checked_shape(shape)
    return Layout.trusted(s, make_basis_like(s))


def has_coordinate_strides(layout: Any) -> bool:
    """True when some stride of ``layout`` is a coordinate (an ArithTuple)."""
    need_layout(layout, "has_coordinate_strides")
    return any(isinstance(d, ArithTuple) for d in layout.flat_modes()[1])


# ----------------------------------------------------------------------------- components
# A layout with coordinate strides is a vector of integer layouts with one shape: one per
# position ("component") of the coordinates.  These helpers split it up, so that integer
# machinery (vectorized evaluation, witness search) applies per component.

_ABSENT = object()


def _union(p: Any, x: Any) -> Any:
    """Merge the profile ``p`` with the value ``x``.  Profile leaves: 0 (only zeros seen)
    or 1 (a non-zero scalar seen); a tuple is a node."""
    if type(x) is int:
        if p is _ABSENT or type(p) is int:
            return 1 if (x != 0 or p == 1) else 0
        if x != 0:
            raise MalformedLayoutError(
                f"a non-zero scalar stride {x} stands where other strides are coordinates; a "
                "layout may not mix them"
            )
        return p
    if type(p) is int:
        if p == 1 and not _is_zero(x):
            raise MalformedLayoutError(
                f"the coordinate stride {x} stands where other strides are non-zero scalars; a "
                "layout may not mix them"
            )
        p = ()
    elif p is _ABSENT:
        p = ()
    n = max(len(p), len(x._data))
    return tuple(
        _union(p[i] if i < len(p) else _ABSENT, x._data[i] if i < len(x._data) else 0) for i in range(n)
    )


def _profile(values: Any) -> Any:
    p: Any = _ABSENT
    for v in values:
        p = _union(p, v)
    return 0 if p is _ABSENT else p


def _paths(p: Any, prefix: Tuple[Any, ...] = ()) -> List[Tuple[Any, ...]]:
    if type(p) is tuple:
        out: List[Tuple[Any, ...]] = []
        for i, e in enumerate(p):
            out.extend(_paths(e, prefix + (i,)))
        return out
    return [prefix]


def _component(x: Any, path: Tuple[Any, ...]) -> int:
    for i in path:
        if type(x) is int:
            return 0  # a zero scalar (checked by _profile) padding a coordinate
        d = x._data
        x = d[i] if i < len(d) else 0
    if type(x) is int:
        return x
    return 0  # a zero ArithTuple (the profile has a leaf here, so it is all zeros)


def components(values: Any) -> Tuple[Any, List[Tuple[Any, ...]], List[List[int]]]:
    """Split coordinate values into integer components.

    Returns ``(profile, paths, comps)``: the union profile of the values (a nested tuple
    with 0/1 leaves), the path of each leaf, and for each path the list of that component
    of every value.  Raises MalformedLayoutError for values that mix non-zero scalars with
    coordinates."""
    values = list(values)
    p = _profile(values)
    paths = _paths(p)
    return p, paths, [[_component(v, q) for v in values] for q in paths]


def _shape_like(p: Any, leaves: List[int]) -> Any:
    if type(p) is not tuple:
        return leaves[0]
    return raw_unflatten(tuple(leaves), p)


def coord_coshape(layout: Any) -> Any:
    """C++ ``coshape`` for coordinate strides: ``abs(L)(size-1) + 1`` per component, a
    nested tuple with the profile of the coordinates."""
    fs, fd = layout.flat_modes()
    p, _paths_, comps = components(fd)
    ext = [1 + sum((s - 1) * abs(c) for s, c in zip(fs, comp)) for comp in comps]
    return _shape_like(p, ext)


def coord_eval_all(layout: Any) -> Any:
    """Every value of a layout with coordinate strides, colexicographically: an object
    array of plain nested tuples (each component evaluated vectorized)."""
    import numpy as np

    fs, fd = layout.flat_modes()
    p, _paths_, comps = components(fd)
    cols = [Layout.trusted(fs, tuple(c)).eval_all().tolist() for c in comps]
    n = len(cols[0])
    out = np.empty(n, dtype=object)
    if type(p) is tuple:
        for i, vals in enumerate(zip(*cols)):
            out[i] = raw_unflatten(vals, p)
    else:
        out[:] = cols[0]
    return out


def as_basis(x: Any) -> Any:
    """A coordinate with at most one non-zero entry as a ScaledBasis (0 when zero), so
    that strides print like C++ (``3@0``); anything else unchanged."""
    if not isinstance(x, ArithTuple) or isinstance(x, ScaledBasis):
        return x
    found: List[Tuple[int, Tuple[Any, ...]]] = []

    def walk(y: Any, path: Tuple[Any, ...]) -> None:
        if type(y) is int:
            if y != 0:
                found.append((y, path))
            return
        for i, e in enumerate(y._data):
            walk(e, path + (i,))

    walk(x, ())
    if not found:
        return 0
    if len(found) == 1 and found[0][1]:
        return _make_sb(found[0][0], found[0][1])
    return x


# Kept for modules that still import the old private name (layoutproof.tensor).
_at = make_arith_tuple

# Layouts with coordinate strides: the core (layoutproof.layout) asks for these services.
kinds.register_hook("coord_coshape", coord_coshape)
kinds.register_hook("coord_eval_all", coord_eval_all)
