"""Composed layouts ``A o offset o B`` (CuTe C++'s ``layout_composed.hpp``).

A :class:`ComposedLayout` ``A o offset o B`` is the function ``c -> A(offset + B(c))``:
``B`` is a :class:`~layoutproof.layout.Layout` (it defines the domain), ``A`` a
:class:`~layoutproof.swizzle.Swizzle` (or a Layout).  The algebra is lifted over it where
CuTe C++ lifts it: composition with a layout on the right, slicing, the divides, the
products, ``tile_to_shape`` and ``coalesce`` act on ``B``.  This module registers those
implementations with :mod:`layoutproof.kinds` (for ComposedLayout and Swizzle
arguments), so the base algebra (:mod:`layoutproof.ops`) never names them, as C++'s
``layout.hpp`` never names ``ComposedLayout``.

>>> from layoutproof import Layout, Swizzle, composition, tile_to_shape
>>> atom = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))
>>> print(atom)
Sw<3,3,3> o 0 o (8,64):(64,1)
>>> tile = tile_to_shape(atom, (128, 64))
>>> print(tile)
Sw<3,3,3> o 0 o (128,64):(64,1)
>>> tile(1, 0), tile(1, 8), tile.size, tile.cosize
(72, 64, 8192, 8192)

Semantics (C++ ``layout_composed.hpp``, ``swizzle_layout.hpp``; legacy pycute):

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

import operator
import re
from typing import TYPE_CHECKING, Any, Callable, Iterator, List, Optional, Tuple

from . import kinds, ops, swizzle
from .errors import InadmissibleError, MalformedLayoutError, OutOfDomainError, UndecidableConditionError, show
from .inttuple import is_int, raw_flatten, raw_prefix_product, raw_unflatten
from .layout import Layout, _, concrete_only, need_layout, slice_and_offset
from .ops import coalesce_modes, coalesced_modes_x, composition, ext_eval_np, recognize_layout_fn
from .swizzle import Swizzle, compose_swizzles, int_arg, make_swizzle

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "ComposedLayout",
    "make_composed_layout",
    "lift",
    "compose_lifted",
    "ext_layout_at",
    "LIFTED_OPS",
]


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
    fs, fd = L.flat_modes()
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


def ext_layout_at(L: Layout, x: Any) -> Any:
    """``L̂`` (L with its own last mode unbounded, as composition reads it) at x >= 0 (an
    integer numpy array)."""
    need_layout(L, "ext_layout_at")
    if not hasattr(x, "dtype") or getattr(x.dtype, "kind", None) not in ("i", "u", "O"):
        raise MalformedLayoutError(
            f"ext_layout_at: x is an integer numpy array, got {type(x).__name__} {show(x)}"
        )
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
    _a: Any  # a Swizzle or a Layout
    _o: int
    _b: Layout
    _cosize: Optional[int]
    _hash: Optional[int]
    _n: int
    _sy: Optional[int]  # the swizzle's YYY mask and shifts (None: A is a Layout)
    _srs: int
    _sls: int
    _lp_lifted = True  # a kind of layout (layoutproof.verify recognises them by this marker)

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
        self._set(layout_a, int_arg(offset, "ComposedLayout offset"), layout_b)

    def _set(self, a: Any, o: int, b: Layout) -> None:
        self._a, self._o, self._b = a, o, b
        self._cosize = None
        self._hash = None
        self._n = b.size
        if isinstance(a, Swizzle):  # the swizzle's parameters, for the scalar fast path
            self._sy, self._srs, self._sls = a.xor_parts
        else:
            self._sy = None

    @classmethod
    def _make(cls, a: Any, o: int, b: Layout) -> "ComposedLayout":
        obj = object.__new__(cls)
        obj._set(a, o, b)
        return obj

    #: The trusted constructor for other modules: no checks (A a Swizzle or Layout, o an int,
    #: b a Layout).
    trusted = _make

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
        return self._b.shape

    @property
    def _shape(self) -> Any:  # the library's internals read _shape of layouts
        return self._b.shape

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
        v: int = self._a(x)
        return v

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
        if max(n, m) > swizzle.VERIFY_LIMIT:
            raise UndecidableConditionError(
                f"{op}({self}): the candidate {R} cannot be checked: the domain is larger than "
                f"swizzle.VERIFY_LIMIT ({swizzle.VERIFY_LIMIT})",
                condition=f"{op} of a composed layout (undecided)",
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
            return a(x)
        return _layout_at(a, x)

    def eval_all(self) -> "np.ndarray":
        """Every value, in colexicographic order of the domain, as a numpy array
        (vectorized; object dtype where int64 could overflow).

        >>> ComposedLayout(Swizzle(1, 0, 1), 0, Layout(4, 1)).eval_all().tolist()
        [0, 1, 3, 2]
        """
        v = self._b.eval_all()
        if self._o:
            fs, fd = self._b.flat_modes()
            bound = abs(self._o) + sum((s - 1) * abs(d) for s, d in zip(fs, fd))
            if bound >= 2**62 and v.dtype != object:
                v = v.astype(object)
            v = v + self._o
        out: np.ndarray = self._apply_outer_np(v)
        return out

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
        if n > swizzle.COSIZE_EVAL_LIMIT:
            raise UndecidableConditionError(
                f"cosize({self}): the swizzle does not keep B's image in place and the domain "
                f"({n}) is too large to evaluate (limit {swizzle.COSIZE_EVAL_LIMIT})",
                condition="cosize decidable by evaluation",
            )
        v = self.eval_all()
        return int(v.max()) - int(v.min()) + 1

    # ------------------------------------------------------------------ C++ conveniences
    def compose(self, *layouts: Any) -> Any:
        """``composition(self, layouts...)`` (several layouts form a tuple tiler)."""
        return compose_lifted(self, layouts[0] if len(layouts) == 1 else tuple(layouts))

    def with_shape(self, *shape: Any) -> Any:
        """``composition(self, Layout(shape))``: the same function reshaped."""
        s = shape[0] if len(shape) == 1 else tuple(shape)
        return _recompose(self._a, self._o, composition(self._b, Layout(s)))

    def to_f2(self) -> Any:
        """See :func:`layoutproof.f2.to_f2`."""
        return kinds.call("to_f2", self)  # layoutproof.f2 registers it


@concrete_only
def make_composed_layout(layout_a: Any, offset: Any, layout_b: Any) -> ComposedLayout:
    """C++'s ``make_composed_layout(A, offset, B)``: the constructor."""
    return ComposedLayout(layout_a, offset, layout_b)


def _block_closed(sw: Swizzle, o: int, B: Layout) -> bool:
    """Is ``{o + B(c)}`` a union of aligned ``2**(M+B+|S|)`` blocks?  Then the swizzle
    permutes each block within itself and the image set is unchanged."""
    if sw.is_identity():
        return True
    blk = sw.size
    if o % blk:
        return False
    fs, fd = B.flat_modes()
    leaves = sorted((abs(d), d, s) for s, d in zip(fs, fd) if s != 1 and d != 0)
    cur = 1
    rest: List[int] = []
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
            return _recompose(compose_swizzles(a, b._a), b._o, b._b)
        raise InadmissibleError(
            f"{a} o {o} o ({b}) is not of the form Swizzle o offset o Layout",
            condition="representable as A o offset o Layout",
            witness=None,
        )
    if o == 0 and isinstance(a, Swizzle) and a.is_identity():
        return b
    return ComposedLayout._make(a, o, b)


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
def compose_lifted(lhs: Any, rhs: Any) -> Any:
    """``composition`` when either side is a Swizzle or a ComposedLayout."""
    if isinstance(lhs, ComposedLayout):
        if rhs is None or rhs is _:
            return lhs
        return _recompose(lhs._a, lhs._o, composition(lhs._b, rhs))
    if isinstance(lhs, Swizzle):
        if rhs is None or rhs is _:
            return lhs
        if isinstance(rhs, Swizzle):
            return compose_swizzles(lhs, rhs)
        if isinstance(rhs, ComposedLayout):
            if isinstance(rhs._a, Swizzle):
                return _recompose(compose_swizzles(lhs, rhs._a), rhs._o, rhs._b)
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
    fs, fd = L.flat_modes()
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

    y = int(ext_layout_at(L, np.array([sw.yyy_msk], dtype=object))[0])
    z = int(ext_layout_at(L, np.array([sw.zzz_msk], dtype=object))[0])
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
        top = (sw.yyy_msk | sw.zzz_msk).bit_length()
        for j in range(min(len(imgs), top)):
            c = 1 << j
            truth = L._eval_int(sw(c))
            if cand(c) != truth:
                plain, _w = _plain_composite(L, sw)
                if plain is not None:
                    return plain
                _fail_commute(L, sw, cand, c, truth)
        return cand
    if n > swizzle.VERIFY_LIMIT:
        raise UndecidableConditionError(
            f"composition({L}, {sw}): the result {cand} cannot be checked structurally and the "
            f"domain ({n}) is larger than swizzle.VERIFY_LIMIT ({swizzle.VERIFY_LIMIT})",
            condition="swizzle passes through the layout (undecided)",
        )
    c = _arange(n, n)
    truth = ext_layout_at(L, sw(c))
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

    Evaluates it on ``[0, size(L))`` (up to swizzle.VERIFY_LIMIT values) and recognises it: first
    as a layout of L's own shape (the strides are the values at the unit coordinates),
    then as any layout (``ops.recognize_layout_fn``: the first mode of a coalesced layout is forced
    by the values, so the greedy recognition finds a layout whenever one exists).  Every
    answer is checked against the values at every coordinate before it is returned.
    Returns the layout, or None and the first coordinate no layout can match (None when
    the domain is too large or L has coordinate strides: undecided).
    """
    n = L.size
    fs, fd = L.flat_modes()
    if n > swizzle.VERIFY_LIMIT or any(type(d) is not int for d in fd):
        return None, None
    import numpy as np

    v = ext_layout_at(L, sw(_arange(n, n)))
    if v.dtype != object and v.size and max(abs(int(v.min())), abs(int(v.max()))) * n >= 1 << 62:
        v = v.astype(object)  # the recognition multiplies values by indices
    units = [int(v[p]) if s > 1 else 0 for s, p in zip(fs, raw_flatten(raw_prefix_product(fs)))]
    cand = Layout.trusted(
        L.shape, raw_unflatten(tuple(units), L.stride) if type(L.shape) is tuple else units[0]
    )
    if np.array_equal(cand.eval_all(), v):
        return cand, None
    rec, w = recognize_layout_fn(v)
    if rec is None:
        return None, w
    cs, cd = coalesce_modes(tuple(rec[0]), tuple(rec[1]))
    R = Layout.trusted(cs[0], cd[0]) if len(cs) == 1 else Layout.trusted(tuple(cs), tuple(cd))
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
    LA = composition(L, C._a)
    if isinstance(LA, Layout):
        R = composition(LA, C._b)
        if isinstance(C._a, Swizzle) and C._a.is_identity():
            return R  # LA is L itself, extension included
        # a plain L o A (decided on L's domain): checked below like the composed case
    else:
        R = _recompose(LA._a, LA._o, composition(LA._b, C._b))
    # composition(L, A) was checked on [0, size(L)); B's image must stay inside it
    fs, fd = C._b.flat_modes()
    lo = sum((s - 1) * d for s, d in zip(fs, fd) if d < 0)
    hi = sum((s - 1) * d for s, d in zip(fs, fd) if d > 0)
    if lo >= 0 and hi < L.size:
        return R
    import numpy as np

    n = C.size
    if n > swizzle.VERIFY_LIMIT:
        raise UndecidableConditionError(
            f"composition({L}, {C}): B reaches outside L's domain and the domain ({n}) is "
            f"larger than swizzle.VERIFY_LIMIT ({swizzle.VERIFY_LIMIT})",
            condition="swizzle passes through the layout (undecided)",
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
    truth = ext_layout_at(L, inner)
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


# ============================================================================= registration
# The algebra (layoutproof.ops) asks layoutproof.kinds for the implementation of an
# operation on a Swizzle or a composed layout; this module answers, as C++'s
# layout_composed.hpp lifts the operations over B.
LIFTED_OPS = (
    "coalesce",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "blocked_product",
    "raked_product",
    "tile_to_shape",
)


def _lifted_op(op: str) -> Callable[..., Any]:
    fn = getattr(ops, op)

    def lifted(layout: Any, *args: Any, **kwargs: Any) -> Any:
        return lift(fn, layout, *args, **kwargs)

    lifted.__name__ = lifted.__qualname__ = op
    return concrete_only(lifted)


def _right_inverse(C: ComposedLayout) -> Any:
    return C.right_inverse()


def _left_inverse(C: ComposedLayout) -> Any:
    return C.left_inverse()


for _op in LIFTED_OPS:
    kinds.register(_op, ComposedLayout, _lifted_op(_op))
    kinds.register(_op, Swizzle, kinds.lookup(_op, ComposedLayout))
kinds.register("composition", ComposedLayout, compose_lifted)
kinds.register("composition", Swizzle, compose_lifted)
kinds.register("right_inverse", ComposedLayout, _right_inverse)
kinds.register("left_inverse", ComposedLayout, _left_inverse)


def _slice_and_offset(crd: Any, C: ComposedLayout) -> Tuple[ComposedLayout, int]:
    return C.slice_and_offset(crd)


# The accessors the core's free functions (size, cosize, shape, rank, depth, slice_) ask for.
for _cls in (ComposedLayout, Swizzle):
    kinds.register("size", _cls, operator.attrgetter("size"))
    kinds.register("cosize", _cls, operator.attrgetter("cosize"))
for _name in ("shape", "rank", "depth"):
    kinds.register(_name, ComposedLayout, operator.attrgetter(_name))
kinds.register("slice_and_offset", ComposedLayout, _slice_and_offset)


def _as_layout(sw: Swizzle) -> ComposedLayout:
    return ComposedLayout(sw, 0, Layout(sw.size, 1))


kinds.register("as_layout", Swizzle, _as_layout)
