"""The :class:`Layout` type: a function from coordinates to offsets.

A layout pairs a hierarchical shape with a congruent hierarchical stride.  It maps a
coordinate (1-D, n-D or natural) to the inner product of the natural coordinate with the
stride.

>>> L = Layout.parse("(4,(2,2)):(2,(1,8))")
>>> L(13), L(1, 3), L(1, (1, 1))
(11, 11, 11)
>>> str(L[1])
'(2,2):(1,8)'
>>> L(_, 1)
Layout((4,), (2,))
"""

from __future__ import annotations

import functools
import sys
from typing import TYPE_CHECKING, Any, Callable, FrozenSet, Iterator, List, Optional, Tuple, TypeVar, cast

from . import kinds
from .errors import InadmissibleError, LayoutError, MalformedLayoutError, OutOfDomainError, show
from .inttuple import (
    MAX_DEPTH,
    IntTuple,
    check_depth,
    checked_index,
    checked_range,
    checked_rank,
    is_int,
    norm_htuple,
    raw_ceil_div,
    raw_congruent,
    raw_crd2idx,
    raw_depth,
    raw_flatten,
    raw_prefix_product,
    raw_product,
    raw_unflatten,
    raw_weakly_congruent,
)

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "Layout",
    "Underscore",
    "_",
    "LayoutLeft",
    "LayoutRight",
    "make_layout",
    "make_ordered_layout",
    "make_layout_like",
    "size",
    "cosize",
    "coshape",
    "rank",
    "depth",
    "shape",
    "stride",
    "get",
    "slice_and_offset",
    "slice_",
    "EVAL_LIMIT",
    "evenly_divides",
]


class Underscore:
    """The slicing wildcard ``_`` (``None`` means the same)."""

    _inst: "Underscore" | None = None

    def __new__(cls) -> "Underscore":
        if cls._inst is None:
            cls._inst = super().__new__(cls)
        return cls._inst

    def __repr__(self) -> str:
        return "_"

    def __reduce__(self) -> str:
        return "_"


_ = Underscore()


# ----------------------------------------------------------------------------- size limits
# The most values an enumerating function (eval_all and everything built on it) produces:
# 2**26 int64 values are 512 MiB.  Larger domains are refused before any work is done;
# raise it (layoutproof.layout.EVAL_LIMIT = ...) where the memory is there.
EVAL_LIMIT = 1 << 26


def check_enumerable(n: int, what: str) -> None:
    """Refuse, before any work, to enumerate a domain of ``n`` values beyond EVAL_LIMIT
    (an InadmissibleError naming the size and the limit)."""
    if n > EVAL_LIMIT:
        raise InadmissibleError(
            f"{what}: the domain has {n if n < 10**30 else f'about 2**{n.bit_length() - 1}'} "
            f"values, more than the enumeration limit EVAL_LIMIT = {EVAL_LIMIT} "
            "(layoutproof.layout.EVAL_LIMIT)",
            condition="enumeration size limit",
            witness=None,
        )


# ----------------------------------------------------------------------------- validation
def _plain_pair(s: Tuple[Any, ...], d: Tuple[Any, ...], depth: int) -> bool:
    """The fast path of ``Layout(shape, stride)``: are ``s`` and ``d`` congruent non-empty
    tuples of plain ints, extents >= 1, nested at most MAX_DEPTH deep?  One pass, exact
    type tests only; anything else (lists, NumPy or SymPy leaves, coordinates, a bad
    leaf) is False and goes through the general check, which says what is wrong."""
    if len(s) != len(d) or not s:
        return False
    for a, b in zip(s, d):
        ta = type(a)
        if ta is int:
            if a < 1 or type(b) is not int:
                return False
        elif ta is tuple:  # one level inline (the common nesting), deeper by recursion
            if type(b) is not tuple or len(a) != len(b) or not a:
                return False
            for x, y in zip(a, b):
                if type(x) is int:
                    if x < 1 or type(y) is not int:
                        return False
                elif type(x) is not tuple or type(y) is not tuple:
                    return False
                elif depth >= MAX_DEPTH - 2 or not _plain_pair(x, y, depth + 2):
                    return False
        else:
            return False
    return True


def _plain_shape(s: Tuple[Any, ...], depth: int) -> bool:
    """:func:`_plain_pair` for a shape alone (``Layout(shape)``, compact stride)."""
    if not s:
        return False
    for a in s:
        ta = type(a)
        if ta is int:
            if a < 1:
                return False
        elif ta is tuple:
            if depth >= MAX_DEPTH - 1 or not _plain_shape(a, depth + 1):
                return False
        else:
            return False
    return True


# Nested plain-int (shape, stride) pairs the constructor has checked are remembered by the
# identity of the stride tuple, in a direct-mapped table of SEEN_SLOTS layouts built from
# them (``_SEEN``, below the class): a new pair replaces whatever held its slot, so the
# table is bounded without any bookkeeping.  An entry is used only when both tuples are the
# very objects its layout holds (``is``), never for an equal value: ``(1, 2) == (True,
# 2.0)`` hash alike, but only tuples whose leaves were checked to be exact ints are
# entered, tuples are immutable, and the entry keeps them alive (so their ids are not
# reused).  It pays for a script that builds the same literal layout again and again (a
# tuple literal is one constant object); equal tuples built anew are checked in full.
SEEN_SLOTS = 64
_SEEN_MASK = SEEN_SLOTS - 1
_ONCE = (None,)  # a loop of one pass: a block that ``break`` leaves


def checked_shape(s: Any, what: str = "shape", depth: int = 0) -> Any:
    t = type(s)
    if t is int:
        if s <= 0:
            raise MalformedLayoutError(f"{what} has a non-positive extent {s}; extents must be >= 1")
        return s
    if t is tuple or t is list:
        if depth >= MAX_DEPTH:
            raise MalformedLayoutError(f"{what} is nested deeper than {MAX_DEPTH} levels")
        return tuple(checked_shape(e, what, depth + 1) for e in s)
    if is_int(s):
        return checked_shape(int(s), what, depth)
    if isinstance(s, tuple):
        return checked_shape(tuple(s), what, depth)
    if _is_sympy(s):  # a symbolic extent (layoutproof.symbolic)
        return kinds.call_symbolic("check_extent", s, what)
    raise MalformedLayoutError(f"{what} leaves must be positive integers, got {type(s).__name__} {show(s)}")


def _check_stride(d: Any, depth: int = 0) -> Any:
    t = type(d)
    if t is int:
        return d
    if t is tuple or t is list:
        if depth >= MAX_DEPTH:
            raise MalformedLayoutError(f"stride is nested deeper than {MAX_DEPTH} levels")
        return tuple(_check_stride(e, depth + 1) for e in d)
    if is_int(d):
        return int(d)
    if isinstance(d, tuple):
        return _check_stride(tuple(d), depth)
    if is_coordinate(d):  # a coordinate (basis) stride, see layoutproof.arith
        return d
    if is_stride_scalar(d):  # a scalar of another algebra (F2, see layoutproof.f2)
        return d
    if _is_sympy(d):  # a symbolic stride (layoutproof.symbolic)
        return kinds.call_symbolic("norm_leaf", d, "stride")
    raise MalformedLayoutError(
        f"stride leaves must be integers or coordinates (E(i), ArithTuple), got {type(d).__name__} {show(d)}"
    )


def is_coordinate(d: Any) -> bool:
    """Is ``d`` a coordinate (an ArithTuple of :mod:`layoutproof.arith`)?  Coordinate classes
    carry the marker ``_lp_coordinate``, so the core needs no import of the module."""
    return getattr(type(d), "_lp_coordinate", False) is True


def is_stride_scalar(d: Any) -> bool:
    """Is ``d`` a stride scalar of another algebra (an :class:`~layoutproof.f2.F2`, whose
    ``+`` is XOR)?  Such classes carry the marker ``_lp_stride_scalar``."""
    return getattr(type(d), "_lp_stride_scalar", False) is True


def has_scalar_strides(layout: "Layout") -> bool:
    """Does some stride of ``layout`` belong to another algebra (F2)?  False at once for
    a layout known to hold plain ints."""
    if layout._sym is False:
        return False
    if layout._sym is None and not layout.is_symbolic and layout._sym is False:
        return False  # is_symbolic caches False only without SymPy leaves and stride scalars
    for d in layout._flat()[1]:
        if type(d) is not int and getattr(type(d), "_lp_stride_scalar", False) is True:
            return True
    return False


def _check_codomain(d: Any, s: Any) -> None:
    """Stride scalars of another algebra share the codomain only with zeros: ``F2 + 3``
    (XOR beside integer addition) and ``F2 + E(0)`` are undefined, so a layout mixing
    them has no function.  Their extents are integers (the F2 algebra has no symbolic
    layer)."""
    leaves = raw_flatten(d)
    kinds_seen = {type(x) for x in leaves if is_stride_scalar(x)}
    if not kinds_seen:
        return
    sym = [x for x in raw_flatten(s) if type(x) is not int]
    if sym:
        raise MalformedLayoutError(
            f"shape {fmt_htuple(s)} has the symbolic extent {show(sym[0])} beside F2 strides; "
            "F2 layouts take integer extents (substitute values first)"
        )
    other = [x for x in leaves if not is_stride_scalar(x) and not (type(x) is int and x == 0)]
    if other or len(kinds_seen) > 1:
        bad = other[0] if other else leaves[0]
        raise MalformedLayoutError(
            f"stride {fmt_htuple(d)} mixes {next(iter(kinds_seen)).__name__} strides with "
            f"{show(bad)}: an F2 (XOR) stride shares the codomain only with zero strides"
        )


def coordinate_service(name: str) -> Callable[..., Any]:
    """A service of :mod:`layoutproof.arith` for layouts with coordinate strides (it
    registers them with :mod:`layoutproof.kinds` when it is imported)."""
    fn = kinds.hook(name)
    if fn is None:  # pragma: no cover - layoutproof.arith registers it on import
        raise MalformedLayoutError(f"{name}: coordinate strides need layoutproof.arith (import it)")
    return fn


def _is_sympy(x: Any) -> bool:
    sp = sys.modules.get("sympy")
    return sp is not None and isinstance(x, sp.Basic)


def any_symbolic(args: Tuple[Any, ...]) -> bool:
    """Does an argument (a Layout, an HTuple, a leaf) hold a SymPy expression?"""
    stack = list(args)
    n = 0
    while stack and n < 10_000:
        x = stack.pop()
        n += 1
        if isinstance(x, Layout):
            if x.is_symbolic:
                return True
        elif type(x) is tuple or type(x) is list:
            stack.extend(x)
        elif _is_sympy(x):
            return True
    return False


def holds_symbols(x: Any) -> bool:
    """Does a leaf, an HTuple or a Layout (also one inside a tuple, such as a tiler's) hold a
    SymPy expression that is not a number?  False without a look when SymPy is not loaded.
    (:func:`any_symbolic` also counts SymPy numbers: it guards the integer-only operations.)"""
    sp = sys.modules.get("sympy")
    if sp is None:
        return False
    if isinstance(x, Layout):
        return x.is_symbolic
    stack = [x]
    while stack:
        t = stack.pop()
        if type(t) is tuple or type(t) is list:
            stack.extend(t)
        elif isinstance(t, Layout):
            if t.is_symbolic:
                return True
        elif isinstance(t, sp.Basic) and not t.is_Number:
            return True
    return False


def concrete_only(fn: F) -> F:
    """Refuse symbolic arguments with a LayoutError: the decorated operation works on
    integer layouts only (substitute values with ``Layout.subs`` first)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if sys.modules.get("sympy") is not None and any_symbolic(args + tuple(kwargs.values())):
            raise MalformedLayoutError(
                f"{fn.__name__} works on integer layouts; an argument is symbolic -- substitute "
                "values first (Layout.subs(M=64))"
            )
        return fn(*args, **kwargs)

    return cast(F, wrapper)  # same signature as fn


def fmt_htuple(t: Any) -> str:
    if type(t) is tuple:
        return "(" + ",".join(fmt_htuple(e) for e in t) + ")"
    return str(t)


# ----------------------------------------------------------------------------- the type
class Layout:
    """A CuTe layout: hierarchical ``shape`` and congruent ``stride``.

    ``Layout(shape)`` uses the compact column-major (LayoutLeft) stride.  Layouts are
    immutable and hashable; ``==`` compares shape and stride structurally (functional
    equality is :func:`layoutproof.verify.equal`'s business).
    """

    __slots__ = ("_shape", "_stride", "_fs", "_fd", "_size", "_sym")
    # leaves are ints, SymPy expressions (layoutproof.symbolic) or coordinates (layoutproof.arith)
    _shape: Any
    _stride: Any
    _fs: Optional[Tuple[Any, ...]]
    _fd: Optional[Tuple[Any, ...]]
    _size: Any
    _sym: Optional[bool]

    def __init__(self, shape: Any, stride: Any = None) -> None:
        # The fast path (docs/architecture.md, "A fast path for plain ints"): plain-int
        # input is checked with exact type tests (flat ranks 1-3 unrolled, two levels in
        # one pass that also flattens) and known to be concrete (``_sym``); flat input is
        # its own flattening.  Anything else, bad input included, goes through the general
        # check and its messages.
        self._size = None
        if type(shape) is tuple:
            if type(stride) is tuple:
                n = len(shape)
                if n == len(stride):
                    if n == 2:
                        a, b = shape
                        c, d = stride
                        if type(a) is int and type(b) is int and type(c) is int and type(d) is int:
                            if a > 0 and b > 0:
                                self._shape = self._fs = shape
                                self._stride = self._fd = stride
                                self._sym = False
                                return
                    elif n == 1:
                        (a,) = shape
                        (c,) = stride
                        if type(a) is int and type(c) is int and a > 0:
                            self._shape = self._fs = shape
                            self._stride = self._fd = stride
                            self._sym = False
                            return
                    elif n == 3:
                        a, b, e = shape
                        c, d, f = stride
                        if type(a) is int and type(b) is int and type(e) is int:
                            if (
                                type(c) is int
                                and type(d) is int
                                and type(f) is int
                                and a > 0
                                and b > 0
                                and e > 0
                            ):
                                self._shape = self._fs = shape
                                self._stride = self._fd = stride
                                self._sym = False
                                return
                    elif n > 3:
                        for a, c in zip(shape, stride):
                            if type(a) is not int or a < 1 or type(c) is not int:
                                break
                        else:  # flat tuples of plain ints
                            self._shape = self._fs = shape
                            self._stride = self._fd = stride
                            self._sym = False
                            return
                    if n:
                        # nested plain ints seen before as these very objects (tuples of
                        # exact ints are immutable, and the entry keeps them alive, so
                        # the identity test is the whole check): the cached flattening
                        slot = id(stride) >> 4 & _SEEN_MASK
                        seen = _SEEN[slot]
                        if seen._stride is stride and seen._shape is shape:
                            self._shape = shape
                            self._stride = stride
                            self._fs = seen._fs
                            self._fd = seen._fd
                            self._sym = False
                            return
                        # the common nesting, plain ints two deep: checked and flattened
                        # at once, ranks 1 to 3 unrolled (a tuple nested deeper is a leaf
                        # that is not an int); ``break`` leaves for the deeper check below
                        fs: Tuple[Any, ...]
                        fd: Tuple[Any, ...]
                        for _x in _ONCE:
                            if n == 1:
                                if type(a) is not tuple or type(c) is not tuple or len(a) != len(c) or not a:
                                    break
                                fs = a
                                fd = c
                            elif n == 2 or n == 3:
                                if type(a) is tuple:
                                    if type(c) is not tuple or len(a) != len(c) or not a:
                                        break
                                    fs = a
                                    fd = c
                                else:
                                    fs = (a,)
                                    fd = (c,)
                                if type(b) is tuple:
                                    if type(d) is not tuple or len(b) != len(d) or not b:
                                        break
                                    fs += b
                                    fd += d
                                else:
                                    fs += (b,)
                                    fd += (d,)
                                if n == 3:
                                    if type(e) is tuple:
                                        if type(f) is not tuple or len(e) != len(f) or not e:
                                            break
                                        fs += e
                                        fd += f
                                    else:
                                        fs += (e,)
                                        fd += (f,)
                            else:
                                fs = fd = ()
                                for x, y in zip(shape, stride):
                                    if type(x) is tuple:
                                        if type(y) is not tuple or len(x) != len(y) or not x:
                                            fd = None  # type: ignore[assignment]
                                            break
                                        fs += x
                                        fd += y
                                    else:
                                        fs += (x,)
                                        fd += (y,)
                                if fd is None:
                                    break
                            for x in fs:
                                if type(x) is not int or x < 1:
                                    break
                            else:
                                for y in fd:
                                    if type(y) is not int:
                                        break
                                else:
                                    self._shape = shape
                                    self._stride = stride
                                    self._fs = fs
                                    self._fd = fd
                                    self._sym = False
                                    _SEEN[slot] = self
                                    return
                        if _plain_pair(shape, stride, 0):  # nested deeper
                            self._shape = shape
                            self._stride = stride
                            self._fs = self._fd = None
                            self._sym = False
                            _SEEN[slot] = self
                            return
            elif stride is None and _plain_shape(shape, 0):
                self._shape = shape
                self._stride = raw_prefix_product(shape)
                self._fs = self._fd = None
                self._sym = False
                return
            s, d = self._checked(shape, stride)
        elif type(shape) is int and shape > 0 and (type(stride) is int or stride is None):  # scalar
            self._shape = shape
            self._stride = d = 1 if stride is None else stride
            self._fs = (shape,)
            self._fd = (d,)
            self._sym = False
            return
        else:
            if isinstance(shape, Layout):
                raise MalformedLayoutError("Layout(shape, stride): shape is already a Layout")
            s, d = self._checked(shape, stride)
        self._shape = s
        self._stride = d
        self._fs = None
        self._fd = None
        self._sym = None

    @staticmethod
    def _checked(shape: Any, stride: Any) -> Tuple[Any, Any]:
        s = checked_shape(shape)
        if stride is None:
            d = raw_prefix_product(s)
        else:
            d = _check_stride(stride)
            if not raw_congruent(s, d):
                raise MalformedLayoutError(
                    f"shape {fmt_htuple(s)} and stride {fmt_htuple(d)} are not congruent "
                    "(they must have the same nesting profile)"
                )
            _check_codomain(d, s)
        return s, d

    @classmethod
    def _make(cls, shape: Any, stride: Any) -> "Layout":
        """Trusted constructor: no validation (the library's own results)."""
        obj = object.__new__(cls)
        obj._shape = shape
        obj._stride = stride
        obj._fs = None
        obj._fd = None
        obj._size = None
        obj._sym = None
        return obj

    #: The trusted constructor for other modules: no checks -- shape and stride must already
    #: be valid and congruent (e.g. modes of existing layouts).
    trusted = _make

    # --------------------------------------------------------------- basic properties
    @property
    def shape(self) -> IntTuple:
        s: IntTuple = self._shape
        return s

    @property
    def stride(self) -> IntTuple:
        d: IntTuple = self._stride
        return d

    def _flat(self) -> Tuple[Tuple[Any, ...], Tuple[Any, ...]]:
        fs, fd = self._fs, self._fd
        if fs is None or fd is None:
            fs = self._fs = raw_flatten(self._shape)
            fd = self._fd = raw_flatten(self._stride)
        return fs, fd

    #: ``(flat shape, flat stride)``: the leaves in colexicographic order, as two tuples
    #: (computed once per layout).
    flat_modes = _flat

    @property
    def size(self) -> int:
        """Number of coordinates in the domain."""
        sz = self._size
        if sz is None:
            sz = 1
            for e in self._flat()[0]:
                sz *= e
            self._size = sz
        n: int = sz  # an expression for symbolic extents
        return n

    @property
    def cosize(self) -> int:
        """Length of the codomain interval: ``1 + sum((s-1)*|d|)`` (CuTe's cosize, negative
        strides included).  Coordinate strides: the product of :attr:`coshape`."""
        fs, fd = self._flat()
        c = 1
        try:
            for s, d in zip(fs, fd):
                c += (s - 1) * abs(d)
        except MalformedLayoutError:  # 1 + a coordinate: coordinate strides
            if any(is_coordinate(d) for d in fd):
                n: int = raw_product(coordinate_service("coord_coshape")(self))
                return n
            if any(is_stride_scalar(d) for d in fd):  # F2: the largest XOR of the bit images
                m: int = coordinate_service("scalar_cosize")(self)
                return m
            raise
        return c

    @property
    def coshape(self) -> IntTuple:
        """The codomain extent; for integer strides it is :attr:`cosize`.  Coordinate
        strides (layoutproof.arith): C++'s ``abs(L)(size-1) + 1`` per coordinate component,
        a shape (``make_identity_layout(S).coshape == S``)."""
        fd = self._flat()[1]
        if all(type(d) is int for d in fd):
            return self.cosize
        if any(is_coordinate(d) for d in fd):
            result: IntTuple = coordinate_service("coord_coshape")(self)
            return result
        return self.cosize

    @property
    def rank(self) -> int:
        """Number of top-level modes (an integer shape has rank 1)."""
        return len(self._shape) if type(self._shape) is tuple else 1

    @property
    def depth(self) -> int:
        """Nesting depth of the shape (0 for an integer shape)."""
        return raw_depth(self._shape)

    # --------------------------------------------------------------- container protocol
    def __len__(self) -> int:
        return self.rank

    def __iter__(self) -> Iterator["Layout"]:
        if type(self._shape) is tuple:
            for s, d in zip(self._shape, self._stride):
                yield Layout._make(s, d)
        else:
            yield self

    def __getitem__(self, i: Any) -> "Layout":
        if type(self._shape) is not tuple:
            checked_index(i, 1, "mode index")
            return self
        i = checked_index(i, len(self._shape), "mode index")
        return Layout._make(self._shape[i], self._stride[i])

    def __eq__(self, other: object) -> bool:
        # False (not NotImplemented) for other types: numpy scalars would otherwise try to
        # broadcast the layout as a sequence.
        if not isinstance(other, Layout):
            return False
        return bool(self._shape == other._shape and self._stride == other._stride)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((self._shape, self._stride))

    # --------------------------------------------------------------- notation
    def __str__(self) -> str:
        return fmt_htuple(self._shape) + ":" + fmt_htuple(self._stride)

    def __repr__(self) -> str:
        return f"Layout({self._shape!r}, {self._stride!r})"

    @staticmethod
    def parse(text: str) -> "Layout":
        """Parse CuTe notation: ``"(4,(2,2)):(2,(1,8))"``, ``"8:1"``, ``"(_4,_2):(_1,_4)"``;
        a bare shape gets the compact column-major stride."""
        parse = kinds.hook("parse_layout")  # layoutproof.notation registers it
        if parse is None:  # pragma: no cover - the package imports layoutproof.notation
            raise MalformedLayoutError("Layout.parse needs layoutproof.notation (import it)")
        result: Layout = parse(text)
        return result

    # --------------------------------------------------------------- evaluation
    def __call__(self, *args: Any, extend: bool = False) -> Any:
        """Evaluate at a 1-D, n-D or natural coordinate, or slice with ``_``/``None``.

        ``L(13)``, ``L(1, 2)``, ``L(1, (0, 1))`` give offsets; ``L(3, _)`` gives the
        sub-layout (see :func:`slice_and_offset` for the offset as well).  A coordinate
        outside the domain raises OutOfDomainError; ``extend=True`` evaluates it the way
        CuTe C++, PyCuTe and legacy pycute do, by extending the last mode (of the layout,
        or of the mode the coordinate entry stands for) without bound:

        >>> L = Layout((4, 2), (1, 8))
        >>> L(9, extend=True), L((5, 0), extend=True)     # 9 = (1, 2): 1 + 2*8
        (17, 5)
        """
        if extend:
            return self._eval_extended(args)
        if self._sym is not False and self.is_symbolic:
            return kinds.call_symbolic("eval", self, args)
        if len(args) == 1:
            c = args[0]
            if type(c) is int:
                if 0 <= c < self.size:
                    return self._eval_int(c)
                raise OutOfDomainError(f"coordinate {c} is outside the domain [0, {self.size}) of {self}")
        elif len(args) == 0:
            raise MalformedLayoutError("a layout is evaluated at a coordinate; none given")
        else:
            c = args
            s = self._shape
            if type(s) is tuple and len(s) == len(c):
                try:
                    return _eval_tuple(c, s, self._stride, c)
                except _SliceSeen:
                    return slice_and_offset(c, self)[0]
                except _SymbolSeen:
                    return kinds.call_symbolic("eval", self, args)
        try:
            return _eval_checked(c, self._shape, self._stride, c)
        except _SliceSeen:
            return slice_and_offset(c, self)[0]
        except _SymbolSeen:
            return kinds.call_symbolic("eval", self, args)

    def _eval_extended(self, args: Tuple[Any, ...]) -> int:
        """C++'s ``crd2idx``: no bounds; an integer against a tuple mode splits
        colexicographically with that mode's last entry taking the rest."""
        if self.is_symbolic:
            raise MalformedLayoutError("extend=True evaluates integer layouts (substitute values first)")

        if not args:
            raise MalformedLayoutError("a layout is evaluated at a coordinate; none given")
        raw = args[0] if len(args) == 1 else args
        if is_coordinate(raw) or (type(raw) is tuple and any(is_coordinate(x) for x in raw)):
            raw = natural_coord(raw, self._shape)
        c = norm_htuple(raw, "coordinate")
        if not raw_weakly_congruent(c, self._shape):
            raise OutOfDomainError(f"coordinate {show(c)} does not fit the shape {fmt_htuple(self._shape)}")
        neg = [x for x in raw_flatten(c) if x < 0]
        if neg:
            raise OutOfDomainError(
                f"coordinate {show(c)} has the negative entry {neg[0]}; extend=True extends "
                "past the end of the domain, not before its start"
            )
        off: int = raw_crd2idx(c, self._shape, self._stride)
        return off

    def _eval_int(self, c: int) -> int:
        fs, fd = self._flat()
        off = 0
        for s, d in zip(fs, fd):
            off += (c % s) * d
            c //= s
        return off

    def eval_all(self) -> "np.ndarray":
        """Every offset, in colexicographic order of the domain, as a numpy array.

        Vectorized (no Python loop per element).  Offsets that do not fit in int64 make an
        object array of Python integers.  Coordinate strides (layoutproof.arith): the values
        are coordinates, an object array of plain nested tuples (components vectorized).
        """
        if self._sym is not False and self.is_symbolic:
            raise MalformedLayoutError(
                f"eval_all needs integer leaves; {self} is symbolic -- substitute values first "
                "(Layout.subs(M=64)) or use Layout.expr()"
            )
        check_enumerable(
            self.size, f"eval_all of {fmt_htuple(self._shape)}" if self.rank <= 8 else "eval_all"
        )
        import numpy as np

        fs, fd = self._flat()
        bound = sum((s - 1) * abs(d) for s, d in zip(fs, fd))
        if type(bound) is not int and is_coordinate(bound):
            result: np.ndarray = coordinate_service("coord_eval_all")(self)
            return result
        if is_stride_scalar(bound):  # F2 strides: XOR of carry-less products
            scalar_vals: np.ndarray = coordinate_service("scalar_eval_all")(self)
            return scalar_vals
        dtype: Any = np.int64 if bound < 2**62 else object
        out = np.zeros(1, dtype=dtype)
        for s, d in zip(fs, fd):
            if s == 1:
                continue
            col = np.arange(s, dtype=np.int64).astype(dtype) * d
            out = (col[:, None] + out[None, :]).reshape(-1)
        return out

    # --------------------------------------------------------------- notebooks
    # The pictures come from layoutproof.draw, which registers them as the hooks
    # "layout_html" and "layout_svg" (the core never imports the drawing code).
    def _repr_html_(self) -> str:
        draw = kinds.hook("layout_html")
        if draw is not None:
            try:
                result: str = draw(self)
                return result
            except LayoutError:  # symbolic layouts have no picture; show the notation
                pass
        import html

        return f"<pre>{html.escape(str(self))}</pre>"

    def _repr_svg_(self) -> "str | None":
        draw = kinds.hook("layout_svg")
        if draw is None:
            return None
        try:
            result: str | None = draw(self, max_cells=1024)
            return result
        except (LayoutError, ImportError):
            return None

    # --------------------------------------------------------------- symbolic layouts
    @property
    def is_symbolic(self) -> bool:
        """True when a shape or stride leaf is a SymPy expression (layoutproof.symbolic)."""
        v = self._sym
        if v is None:
            fs, fd = self._flat()
            v = False
            if sys.modules.get("sympy") is not None:
                v = any(type(e) is not int and _is_sympy(e) for e in fs + fd)
            if not v:
                for e in fd:
                    if type(e) is not int and is_stride_scalar(e):
                        return False  # not cached: _sym False would claim plain-int strides
            self._sym = v
        return v

    @property
    def free_symbols(self) -> FrozenSet[Any]:
        """The SymPy symbols in the shape and stride."""
        if not self.is_symbolic:
            return frozenset()
        result: FrozenSet[Any] = kinds.call_symbolic("free_symbols", (self._shape, self._stride))
        return result

    def expr(self, coord: Any = None) -> Any:
        """The layout function as a SymPy expression.

        ``L.expr()`` is a function of the 1-D coordinate, the symbol ``i`` (a non-negative
        integer), written with ``floor`` and ``Mod``; ``L.expr(c)`` takes a 1-D coordinate
        (an int or a SymPy expression) or a natural coordinate congruent to the shape (an
        HTuple of ints or symbols).  The 1-D form is exact on the domain ``0 <= i <
        size(L)`` (the outermost mode needs no ``Mod`` there).

        >>> from layoutproof import symbols
        >>> M = symbols("M")
        >>> Layout((4, M), (M, 1)).expr()
        M*(Mod(i, 4)) + floor(i/4)
        >>> Layout((4, 8), (8, 1)).expr((2, 3))
        19
        """
        return kinds.call_symbolic("layout_expr", self, coord)

    def subs(self, *args: Any, **values: Any) -> "Layout":
        """Substitute values for symbols: ``L.subs(M=64)`` or ``L.subs({M: 64})``.  The
        result is validated (extents must stay positive) and its numbers are ``int``.

        >>> from layoutproof import symbols
        >>> M, N = symbols("M N")
        >>> str(Layout((M, N), (1, M)).subs(M=8, N=4))
        '(8,4):(1,8)'
        """
        result: Layout = kinds.call_symbolic("subs_layout", self, args, values)
        return result


# ----------------------------------------------------------------------------- evaluation helpers
def _no_entry() -> Layout:
    """The empty slot of ``_SEEN``: a layout whose shape and stride are no tuple."""
    e: Layout = object.__new__(Layout)
    e._shape = e._stride = e._fs = e._fd = e._size = e._sym = None
    return e


_NO_ENTRY = _no_entry()
_SEEN: List[Layout] = [_NO_ENTRY] * SEEN_SLOTS


def forget_seen() -> None:
    """Empty the constructor's table of remembered nested pairs (it never changes a result;
    tests and benchmarks use it to time first constructions)."""
    _SEEN[:] = [_NO_ENTRY] * SEEN_SLOTS


class _SliceSeen(Exception):
    """Raised inside evaluation when a wildcard is met: the call is a slice."""


class _SymbolSeen(Exception):
    """Raised inside evaluation when a SymPy coordinate is met: evaluate symbolically."""


def _eval_tuple(c: Tuple[Any, ...], s: Tuple[Any, ...], d: Tuple[Any, ...], full: Any) -> int:
    """A tuple coordinate against a tuple shape of the same rank (the hot n-D path)."""
    off = 0
    for ci, si, di in zip(c, s, d):
        tc = type(ci)
        if tc is int and type(si) is int:
            if 0 <= ci < si:
                off += ci * di
                continue
        elif tc is tuple and type(si) is tuple and len(ci) == len(si):
            off += _eval_tuple(ci, si, di, full)
            continue
        off += _eval_checked(ci, si, di, full)
    return off


def _eval_checked(c: Any, s: Any, d: Any, full: Any) -> int:
    tc = type(c)
    if tc is int:
        pass
    elif tc is tuple or tc is list:
        if type(s) is not tuple or len(s) != len(c):
            raise OutOfDomainError(
                f"coordinate {show(full)} does not fit the shape: {show(c)} against {show(s)}"
            )
        off = 0
        for ci, si, di in zip(c, s, d):
            if type(ci) is int and type(si) is int:
                if 0 <= ci < si:
                    off += ci * di
                    continue
                raise OutOfDomainError(
                    f"coordinate {show(full)} is outside the domain: {ci} not in [0, {si})"
                )
            off += _eval_checked(ci, si, di, full)
        return off
    elif c is None or c is _:
        raise _SliceSeen
    elif is_int(c):
        c = int(c)
    elif _is_sympy(c):
        raise _SymbolSeen
    elif is_coordinate(c):  # an ArithTuple (e.g. the value of a layout with basis strides)
        return _eval_checked(natural_coord(c, s, full), s, d, full)
    elif is_stride_scalar(c):  # an F2 value as a 1-D coordinate: its bit pattern
        c = int(c)
    else:
        raise MalformedLayoutError(f"coordinate leaves must be integers, got {type(c).__name__} {show(c)}")
    if type(s) is not tuple:
        if 0 <= c < s:
            v: int = c * d
            return v
        raise OutOfDomainError(f"coordinate {show(full)} is outside the domain: {c} not in [0, {s})")
    n = raw_product(s)
    if not 0 <= c < n:
        raise OutOfDomainError(f"coordinate {show(full)} is outside the domain: {c} not in [0, {n})")
    off = 0
    for sh, dd in zip(raw_flatten(s), raw_flatten(d)):
        off += (c % sh) * dd
        c //= sh
    return off


def natural_coord(c: Any, s: Any, full: Any = None) -> Any:
    """The plain coordinate that the ArithTuple ``c`` stands for against the shape ``s``.

    Missing trailing entries are 0 (as in ``+`` on ArithTuples), and against an integer
    mode a coordinate ``(x, 0, ...)`` is ``x`` (C++'s ``get<0>`` of an integer is the
    integer itself, which is how a ``v@0`` stride walks a rank-1 layout).  An entry
    beyond the shape's rank that is not 0 raises OutOfDomainError."""
    if is_coordinate(c):
        c = c.to_tuple()
    if type(c) is not tuple:
        return c
    if type(s) is tuple:
        if len(c) > len(s) and any(_nonzero(e) for e in c[len(s) :]):
            raise OutOfDomainError(
                f"coordinate {show(full if full is not None else c)} has more modes than the shape "
                f"{fmt_htuple(s)}"
            )
        return tuple(natural_coord(c[i] if i < len(c) else 0, si, full) for i, si in enumerate(s))
    if any(_nonzero(e) for e in c[1:]):
        raise OutOfDomainError(
            f"coordinate {show(full if full is not None else c)} has an entry past mode 0 of an "
            f"integer mode of extent {show(s)}"
        )
    return natural_coord(c[0], s, full) if c else 0


def _nonzero(x: Any) -> bool:
    if type(x) is tuple:
        return any(_nonzero(e) for e in x)
    return bool(x != 0)


def _slice_split(c: Any, s: Any, d: Any, full: Any) -> Tuple[List[Any], List[Any], int]:
    """Kept shape/stride items (flattened one level as CuTe does) and the offset."""
    if c is None or c is _:
        return [s], [d], 0
    if type(c) is tuple or type(c) is list:
        if type(s) is not tuple or len(s) != len(c):
            raise OutOfDomainError(f"slice coordinate {show(full)} does not fit shape {show(s)}")
        ks: List[Any] = []
        kd: List[Any] = []
        off = 0
        for ci, si, di in zip(c, s, d):
            a, b, o = _slice_split(ci, si, di, full)
            ks.extend(a)
            kd.extend(b)
            off += o
        return ks, kd, off
    return [], [], _eval_checked(c, s, d, full)


def slice_and_offset(crd: Any, layout: Layout) -> Tuple[Layout, int]:
    """Slice ``layout`` at a coordinate holding ``_`` (or ``None``) wildcards.

    Returns the layout of the wildcard modes and the offset contributed by the fixed
    coordinates, so that ``layout(crd with the wildcards filled) == offset + sub(fill)``.
    """
    if not isinstance(layout, Layout):
        fn = kinds.lookup("slice_and_offset", type(layout))  # A o off o B (C++), ...
        if fn is not None:
            sliced: Tuple[Layout, int] = fn(crd, layout)
            return sliced
        raise MalformedLayoutError("slice_and_offset(crd, layout): layout must be a Layout")
    if crd is None or crd is _:
        return layout, 0
    if sys.modules.get("sympy") is not None and (layout.is_symbolic or any_symbolic((crd,))):
        result: Tuple[Layout, int] = kinds.call_symbolic("slice_and_offset", crd, layout)
        return result
    if type(crd) is not tuple and type(crd) is not list:
        return Layout._make((), ()), _eval_checked(crd, layout._shape, layout._stride, crd)
    ks, kd, off = _slice_split(tuple(crd), layout._shape, layout._stride, crd)
    return Layout._make(tuple(ks), tuple(kd)), off


def slice_(crd: Any, layout: Layout) -> Layout:
    """The sub-layout of the wildcard modes of ``crd`` (CuTe's ``slice``)."""
    return slice_and_offset(crd, layout)[0]


def evenly_divides(shape: Any, tiler: Any) -> bool:
    """CuTe C++'s ``evenly_divides(a, b)``: does the tiler divide the shape into whole
    tiles?  A tuple tiler divides mode by mode (never more modes than the shape has;
    ``None``/``_`` keeps a mode); any other tiler (an integer, a shape, a layout) divides
    when ``size(a) == size(b) * size(ceil_div(shape(a), b))``.  For a layout ``b``,
    ``ceil_div(a, b)`` is C++'s, ``shape(complement(b, a))``: the rest mode of
    ``logical_divide(make_layout(a), b)``, so the gaps a strided tile leaves count.

    >>> evenly_divides((8, 6), (4, 3)), evenly_divides((8, 6), (4, 4)), evenly_divides(12, Layout(4, 3))
    (True, False, True)
    >>> evenly_divides((32, 64), (Layout(8, 2), 32)), evenly_divides((32, 64), (Layout(8, 3), 32))
    (True, False)
    """
    if isinstance(shape, Layout):
        a = shape._shape
    elif other_kind(shape):
        get_shape = kinds.lookup("shape", type(shape))  # a composed layout's is its inner layout's
        if get_shape is None:
            raise MalformedLayoutError(f"evenly_divides: {shape} has no shape (compose it with a layout)")
        a = get_shape(shape)
    else:
        a = checked_shape(shape)
    if type(tiler) is tuple or type(tiler) is list:
        check_depth(tiler, "evenly_divides tiler")
        modes = a if type(a) is tuple else (a,)
        if len(tiler) > len(modes):
            return False
        return all(t is None or t is _ or evenly_divides(m, t) for m, t in zip(modes, tiler))
    if isinstance(tiler, Layout):
        return _evenly_divides_layout(a, tiler)
    if other_kind(tiler):
        b = size(tiler)  # a Swizzle's size is its period
    elif tiler is None or tiler is _:
        return True
    else:
        b = raw_product(checked_shape(norm_htuple(tiler, "evenly_divides tiler"), "evenly_divides tiler"))
    if type(b) is not int or type(raw_product(a)) is not int:
        raise MalformedLayoutError("evenly_divides works on integer shapes (substitute values first)")
    return bool(raw_product(a) == b * raw_product(raw_ceil_div(a, b)))


def _evenly_divides_layout(a: Any, b: Layout) -> bool:
    """C++'s ``size(a) == size(b) * size(ceil_div(a, b))`` for a layout ``b``, where
    ``ceil_div(a, b)`` is ``shape(complement(b, a))`` (the rest mode of
    ``logical_divide``): the sizes of C++'s complement are computed as C++ does (filter,
    then the strides in increasing order), so ``(32,64)`` is divided by ``<8:2, 32>`` but
    not by ``<8:3, 32>`` (8:3 leaves gaps that the rest mode must cover)."""
    if type(raw_product(a)) is not int or b.is_symbolic:
        raise MalformedLayoutError("evenly_divides works on integer shapes (substitute values first)")
    fs, fd = b._flat()
    modes = [(d, s) for s, d in zip(fs, fd) if s != 1 and not (type(d) is int and d == 0)]
    if any(type(d) is not int for d, _s in modes):
        raise InadmissibleError(
            f"evenly_divides: the tiler {b} has coordinate strides; the rest mode of a divide "
            "(C++'s complement) needs integer strides",
            condition="integer strides",
            witness=None,
        )
    if any(d < 0 for d, _s in modes):
        raise InadmissibleError(
            f"evenly_divides: the tiler {b} has a negative stride; the rest mode of a divide "
            "(C++'s complement) needs non-negative strides",
            condition="non-negative strides",
            witness=None,
        )
    n = raw_product(a)
    if not modes:  # C++'s special case: the complement of a stride-0 layout is the whole shape
        return bool(n == b.size * n)
    modes.sort(key=lambda m: m[0])  # stable: C++ takes the first of equal strides
    last = 1
    covered = 1
    for d, s in modes:
        covered *= d // last
        last = d * s
    rest = raw_product(raw_ceil_div(a, last))
    return bool(n == b.size * covered * rest)


# ----------------------------------------------------------------------------- constructors
def LayoutLeft(shape: Any) -> Layout:  # noqa: N802 - CuTe's name
    """Compact column-major layout of ``shape`` (the default)."""
    return Layout(shape)


def LayoutRight(shape: Any) -> Layout:  # noqa: N802 - CuTe's name
    """Compact row-major layout of ``shape``: the last mode (innermost leaf) has stride 1."""
    s = checked_shape(shape)
    return Layout._make(s, _suffix_product(s))


def _suffix_product(s: Any) -> Any:
    cur = [1]

    def walk(x: Any) -> Any:
        if type(x) is tuple:
            return tuple(reversed([walk(e) for e in reversed(x)]))
        v = cur[0]
        cur[0] = v * x
        return v

    return walk(s)


def make_ordered_layout(shape: Any, order: Any = None) -> Layout:
    """Compact layout of ``shape`` whose leaves get increasing strides in the order given
    by ``order`` (congruent with ``shape``; ties go left to right).  ``order=None`` is
    column-major."""
    s = checked_shape(shape)
    if order is None:
        return Layout._make(s, raw_prefix_product(s))
    o = _check_stride(order)
    fo = raw_flatten(o)
    fs = raw_flatten(s)
    if any(type(x) is not int for x in fo):
        raise MalformedLayoutError(
            f"make_ordered_layout: the order {fmt_htuple(o)} must hold integers (it ranks the leaves, "
            "as C++'s static Step)"
        )
    if not raw_congruent(s, o) and not (len(fo) == len(fs) and type(o) is tuple):
        raise MalformedLayoutError(
            f"make_ordered_layout: order {fmt_htuple(o)} does not match shape {fmt_htuple(s)}"
        )
    idx = sorted(range(len(fs)), key=lambda i: (fo[i], i))
    fd = [0] * len(fs)
    cur = 1
    for i in idx:
        fd[i] = cur
        cur *= fs[i]
    return Layout._make(s, raw_unflatten(tuple(fd), s))


def make_layout(*layouts: Any) -> Layout:
    """CuTe C++'s ``make_layout``, all three forms:

    * ``make_layout(shape)`` -- the compact column-major layout of ``shape``;
    * ``make_layout(shape, stride)`` -- the layout ``shape:stride`` (``stride`` may also be
      ``LayoutLeft`` or ``LayoutRight``, C++'s ``make_layout(shape, LayoutRight{})``);
    * ``make_layout(A, B, ...)`` -- the layouts concatenated as modes: ``(A, B, ...)``;
      one layout gives the rank-1 layout ``(A)`` (as C++).  A generator or list of
      layouts is accepted as the single argument too.

    >>> print(make_layout((4, 2)), make_layout((4, 2), (2, 1)), make_layout(Layout(4), Layout(2, 4)))
    (4,2):(1,4) (4,2):(2,1) (4,2):(1,4)
    >>> print(make_layout((4, 2), LayoutRight))
    (4,2):(2,1)
    """
    if not layouts:
        return Layout._make((), ())  # C++: make_layout() is the empty layout
    first = layouts[0]
    if not isinstance(first, Layout) and not other_kind(first):
        if (
            len(layouts) == 1
            and type(first) is not int
            and not is_int(first)
            and not isinstance(first, (tuple, list))
            and first is not None
            and not _is_sympy(first)
        ):
            try:
                items = tuple(first)  # a generator of layouts
            except TypeError:
                raise MalformedLayoutError(
                    f"make_layout takes a shape (and a stride) or layouts, got "
                    f"{type(first).__name__} {show(first)}"
                ) from None
            if not all(isinstance(x, Layout) for x in items):
                raise MalformedLayoutError(
                    f"make_layout takes a shape (and a stride) or layouts, got "
                    f"{type(first).__name__} {show(first)}"
                )
            return make_layout(*items) if items else make_layout(())
        if (
            len(layouts) == 1
            and isinstance(first, (tuple, list))
            and first
            and all(isinstance(x, Layout) for x in first)
        ):
            layouts = tuple(first)  # a list of layouts
        elif len(layouts) > 2:
            raise MalformedLayoutError(f"make_layout(shape, stride) takes two arguments, got {len(layouts)}")
        else:
            st = layouts[1] if len(layouts) == 2 else None
            if st is LayoutLeft or st is None:
                return Layout(first)
            if st is LayoutRight:
                right: Layout = LayoutRight(first)
                return right
            if isinstance(st, Layout):
                raise MalformedLayoutError(
                    f"make_layout: {show(first)} is a shape, so the second argument is a stride, "
                    f"not the layout {st}"
                )
            return Layout(first, st)
    for L in layouts:
        if not isinstance(L, Layout):
            raise MalformedLayoutError(f"make_layout takes layouts, got {type(L).__name__}")
    return Layout._make(tuple(L._shape for L in layouts), tuple(L._stride for L in layouts))


@concrete_only
def make_layout_like(layout: Layout) -> Layout:
    """A compact layout with ``layout``'s shape whose strides are ordered like
    ``layout``'s (by absolute value; stride-0 leaves stay 0)."""
    need_layout(layout, "make_layout_like")
    fs, fd = layout._flat()
    idx = sorted((i for i in range(len(fs)) if fd[i] != 0), key=lambda i: (abs(fd[i]), i))
    out = [0] * len(fs)
    cur = 1
    for i in idx:
        out[i] = cur
        cur *= fs[i]
    return Layout._make(layout._shape, raw_unflatten(tuple(out), layout._shape))


def need_layout(L: Any, op: str) -> None:
    if not isinstance(L, Layout):
        raise MalformedLayoutError(f"{op} needs a Layout, got {type(L).__name__} {show(L)}")


def layout_arg(x: Any, op: str) -> Layout:
    """Layouts pass; an integer or HTuple becomes the compact layout of that shape."""
    if isinstance(x, Layout):
        return x
    if x is None or x is _:
        raise MalformedLayoutError(f"{op} needs a layout here, got {x!r}")
    return Layout(x)


# ----------------------------------------------------------------------------- free functions
# Another kind of layout (a Swizzle, a composed layout, ...) registers with layoutproof.kinds
# the accessors it has -- "size" (every kind), "cosize", "shape", "rank", "depth",
# "slice_and_offset" -- and the free functions below ask for them.
def other_kind(x: Any) -> bool:
    """Is ``x`` another kind of layout (one whose module registered its ``size`` with
    :mod:`layoutproof.kinds`)?"""
    return type(x) is not Layout and kinds.lookup("size", type(x)) is not None


def size(x: Any) -> int:
    """Size of a layout (plain or composed) or of an HTuple shape."""
    if isinstance(x, Layout):
        n: int = x.size
        return n
    fn = kinds.lookup("size", type(x))
    m: int = fn(x) if fn is not None else raw_product(checked_shape(x))
    return m


def cosize(x: Layout) -> int:
    """Length of the codomain interval of a layout (plain or composed): ``1 + sum((s-1)*|d|)``.

    >>> cosize(Layout((4, 3), (2, -5)))
    17
    """
    if not isinstance(x, Layout):
        fn = kinds.lookup("cosize", type(x))
        if fn is not None:
            c: int = fn(x)
            return c
        need_layout(x, "cosize")
    n: int = x.cosize
    return n


def coshape(x: Layout) -> Any:
    """The codomain extent: :attr:`Layout.cosize` for integer strides, a shape for
    coordinate strides (see :mod:`layoutproof.arith`)."""
    need_layout(x, "coshape")
    return x.coshape


def rank(x: Any) -> int:
    """Number of top-level modes of a layout or an HTuple (an integer has rank 1).

    >>> rank(Layout((4, (2, 2)))), rank((2, 3, 4)), rank(8)
    (2, 3, 1)
    """
    if isinstance(x, Layout):
        return x.rank
    fn = kinds.lookup("rank", type(x))
    if fn is not None:
        r: int = fn(x)
        return r
    t = norm_htuple(x, "rank argument")
    return len(t) if type(t) is tuple else 1


def depth(x: Any) -> int:
    """Nesting depth of a layout's shape or of an HTuple (0 for an integer).

    >>> depth(Layout((4, (2, 2)))), depth(8)
    (2, 0)
    """
    if isinstance(x, Layout):
        return x.depth
    fn = kinds.lookup("depth", type(x))
    if fn is not None:
        dp: int = fn(x)
        return dp
    return raw_depth(norm_htuple(x, "depth argument"))


def shape(x: Layout) -> Any:
    """The shape of a layout (plain or composed).

    >>> shape(Layout((4, (2, 2)), (2, (1, 8))))
    (4, (2, 2))
    """
    if not isinstance(x, Layout):
        fn = kinds.lookup("shape", type(x))
        if fn is not None:
            return fn(x)
        need_layout(x, "shape")
    return x.shape


def stride(x: Layout) -> Any:
    """The stride of a layout.

    >>> stride(Layout((4, (2, 2)), (2, (1, 8))))
    (2, (1, 8))
    """
    need_layout(x, "stride")
    return x.stride


def get(x: Any, *idx: Any) -> Any:
    """Nested mode access: ``get(L, 1, 0)`` is mode 0 of mode 1 (tuples alike)."""
    if isinstance(x, Layout):
        for i in idx:
            x = x[i]
        return x
    t = norm_htuple(x, "get argument")
    for i in idx:
        if type(t) is not tuple:
            checked_index(i, 1, "get index")
            continue
        t = t[checked_index(i, len(t), "get index")]
    return t


# ----------------------------------------------------------------------------- mode surgery
def top_modes(L: Layout) -> Tuple[Tuple[Any, ...], Tuple[Any, ...]]:
    if type(L._shape) is tuple:
        return L._shape, L._stride
    return (L._shape,), (L._stride,)


def flatten_layout(L: Layout) -> Layout:
    fs, fd = L._flat()
    if type(L._shape) is not tuple:
        return L
    return Layout._make(fs, fd)


def select_layout(L: Layout, *idx: Any) -> Layout:
    s, d = top_modes(L)
    ii = [checked_index(i, len(s), "select index") for i in idx]
    return Layout._make(tuple(s[i] for i in ii), tuple(d[i] for i in ii))


def take_layout(L: Layout, begin: Any, end: Any = None) -> Layout:
    s, d = top_modes(L)
    b, e = checked_range(begin, end, len(s), "take")
    return Layout._make(s[b:e], d[b:e])


def group_layout(L: Layout, begin: Any, end: Any = None) -> Layout:
    s, d = top_modes(L)
    b, e = checked_range(begin, end, len(s), "group")
    return Layout._make(s[:b] + (s[b:e],) + s[e:], d[:b] + (d[b:e],) + d[e:])


def append_layout(L: Layout, x: Any = None, n: Any = None) -> Layout:
    s, d = top_modes(L)
    x = Layout._make(1, 0) if x is None else layout_arg(x, "append")
    if n is None:
        return Layout._make(s + (x._shape,), d + (x._stride,))
    n = checked_rank(n, "append rank", len(s))
    k = n - len(s)
    if k == 0:
        return L
    return Layout._make(s + (x._shape,) * k, d + (x._stride,) * k)


def prepend_layout(L: Layout, x: Any = None, n: Any = None) -> Layout:
    s, d = top_modes(L)
    x = Layout._make(1, 0) if x is None else layout_arg(x, "prepend")
    if n is None:
        return Layout._make((x._shape,) + s, (x._stride,) + d)
    n = checked_rank(n, "prepend rank", len(s))
    k = n - len(s)
    if k == 0:
        return L
    return Layout._make((x._shape,) * k + s, (x._stride,) * k + d)


def zip_layout(L: Layout) -> Layout:
    """Transpose the two levels of a layout whose modes are all tuples of equal rank."""
    s, d = top_modes(L)
    if any(type(e) is not tuple for e in s) or len({len(e) for e in s}) > 1:
        raise MalformedLayoutError(f"zip needs a layout whose modes have equal rank, got {L}")
    return Layout._make(tuple(zip(*s)), tuple(zip(*d)))


# The tuple functions of layoutproof.inttuple take layouts too: this module registers the
# layout versions (inttuple is below it and never imports it).
kinds.register("flatten", Layout, flatten_layout)
kinds.register("select", Layout, select_layout)
kinds.register("take", Layout, take_layout)
kinds.register("group", Layout, group_layout)
kinds.register("append", Layout, append_layout)
kinds.register("prepend", Layout, prepend_layout)
kinds.register("zip", Layout, zip_layout)
