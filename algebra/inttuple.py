"""The hierarchical-tuple (HTuple / IntTuple) toolbox.

An HTuple is an integer or a tuple of HTuples.  These functions follow CuTe's
``int_tuple.hpp`` naming and meaning.  Every public function validates its input and
raises a :class:`~layoutproof.errors.MalformedLayoutError` for anything that is not an
HTuple of integers; the ``_``-prefixed helpers used inside the library skip that check.

>>> prefix_product((2, (3, 4)))
(1, (2, 6))
>>> idx2crd(16, (3, (2, 3)))
(1, (1, 2))
>>> crd2idx((1, (1, 2)), (3, (2, 3)))
16
"""

from __future__ import annotations

import builtins
import numbers
import sys
from typing import Any, List, Sequence, Tuple, Union

from . import kinds
from .errors import InadmissibleError, MalformedLayoutError, OutOfDomainError, show

__all__ = [
    "IntTuple",
    "is_int",
    "is_tuple",
    "flatten",
    "unflatten",
    "product",
    "product_each",
    "prefix_product",
    "inner_product",
    "congruent",
    "weakly_congruent",
    "idx2crd",
    "crd2idx",
    "crd2crd",
    "select",
    "take",
    "group",
    "append",
    "prepend",
    "zip",
    "wrap",
    "unwrap",
    "shape_div",
    "ceil_div",
    "signum",
]

IntTuple = Union[int, Tuple[Any, ...]]

_bzip = builtins.zip
# Nesting deeper than this is rejected up front (it is never a real layout, and it keeps
# every recursive routine far away from Python's recursion limit).
MAX_DEPTH = 64
# A rank beyond this is never a real layout; padding to it is refused rather than built.
MAX_RANK = 1 << 16


# ----------------------------------------------------------------------------- leaves
def is_int(x: Any) -> bool:
    """True for a Python or NumPy integer (``bool`` is not an integer here)."""
    t = type(x)
    if t is int:
        return True
    if t is bool:
        return False
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def is_tuple(x: Any) -> bool:
    """True for a tuple (an HTuple node)."""
    return isinstance(x, tuple)


def norm_htuple(x: Any, what: str, depth: int = 0) -> Any:
    """Validate an HTuple of integers and normalize it (lists -> tuples, numpy ints -> int)."""
    t = type(x)
    if t is int:
        return x
    if t is tuple or t is list:
        if depth >= MAX_DEPTH:
            raise MalformedLayoutError(f"{what} is nested deeper than {MAX_DEPTH} levels")
        return tuple(norm_htuple(e, what, depth + 1) for e in x)
    if is_int(x):
        return int(x)
    if isinstance(x, tuple):  # tuple subclasses (namedtuples)
        return norm_htuple(tuple(x), what, depth)
    sp = sys.modules.get("sympy")
    if sp is not None and isinstance(x, sp.Basic):  # a symbolic leaf (layoutproof.symbolic)
        return kinds.call_symbolic("norm_leaf", x, what)
    raise MalformedLayoutError(
        f"{what} must be an integer or a tuple of them, got {type(x).__name__} {show(x)}"
    )


def check_depth(x: Any, what: str) -> None:
    """Refuse (without recursing) a tuple nested deeper than MAX_DEPTH."""
    if type(x) is not tuple and type(x) is not list:
        return
    stack = [(x, 0)]
    while stack:
        t, d = stack.pop()
        if d >= MAX_DEPTH:
            raise MalformedLayoutError(f"{what} is nested deeper than {MAX_DEPTH} levels")
        for e in t:
            if type(e) is tuple or type(e) is list:
                stack.append((e, d + 1))


def checked_rank(n: Any, what: str, have: int = 0) -> int:
    """A target rank for padding: an integer in ``[have, MAX_RANK]`` (CuTe's
    ``append<N>``/``prepend<N>`` static_assert ``N >= rank``)."""
    r = _norm_int(n, what)
    if r > MAX_RANK:
        raise MalformedLayoutError(f"{what} {r} exceeds the largest supported rank {MAX_RANK}")
    if r < max(have, 1):
        raise MalformedLayoutError(
            f"{what} {r} is smaller than the rank {have} of the tuple it pads (it must be >= {max(have, 1)})"
        )
    return r


def _norm_int(x: Any, what: str) -> int:
    if type(x) is int:
        return x
    if is_int(x):
        return int(x)
    raise MalformedLayoutError(f"{what} must be an integer, got {type(x).__name__} {show(x)}")


# ----------------------------------------------------------------------------- private core
def raw_flatten(t: Any) -> Tuple[Any, ...]:
    if type(t) is not tuple:
        return (t,)
    for e in t:
        if type(e) is tuple:
            break
    else:
        return t
    out: List[Any] = []
    for e in t:  # depth 2, the common nesting: one loop
        if type(e) is tuple:
            for x in e:
                if type(x) is tuple:
                    return _flatten_deep(t)
                out.append(x)
        else:
            out.append(e)
    return tuple(out)


def _flatten_deep(t: Tuple[Any, ...]) -> Tuple[Any, ...]:
    out: List[Any] = []
    stack = [iter(t)]
    while stack:
        for e in stack[-1]:
            if type(e) is tuple:
                stack.append(iter(e))
                break
            out.append(e)
        else:
            stack.pop()
    return tuple(out)


def raw_product(t: Any) -> Any:
    if type(t) is not tuple:
        return t
    p = 1
    for e in raw_flatten(t):
        p *= e
    return p


def raw_depth(t: Any) -> int:
    if type(t) is not tuple:
        return 0
    return 1 + max((raw_depth(e) for e in t), default=0)


def raw_congruent(a: Any, b: Any) -> bool:
    ta, tb = type(a) is tuple, type(b) is tuple
    if ta and tb:
        return len(a) == len(b) and all(raw_congruent(x, y) for x, y in _bzip(a, b))
    return not ta and not tb


def raw_weakly_congruent(a: Any, b: Any) -> bool:
    if type(a) is not tuple:
        return True
    if type(b) is not tuple:
        return False
    return len(a) == len(b) and all(raw_weakly_congruent(x, y) for x, y in _bzip(a, b))


def raw_unflatten(flat: Sequence[Any], profile: Any) -> Any:
    if type(profile) is tuple:
        for e in profile:
            if type(e) is tuple:
                break
        else:
            return tuple(flat)
        return _unflat(flat, profile, 0)[0]
    return flat[0]


def _unflat(flat: Any, p: Tuple[Any, ...], i: int) -> Tuple[Tuple[Any, ...], int]:
    out = []
    for e in p:
        if type(e) is tuple:
            v, i = _unflat(flat, e, i)
            out.append(v)
        else:
            out.append(flat[i])
            i += 1
    return tuple(out), i


def raw_prefix_product(t: Any, init: Any = 1) -> Any:
    if type(init) is tuple:  # a tuple init applies mode by mode (CuTe)
        return tuple(raw_prefix_product(a, b) for a, b in _bzip(t, init))
    if type(t) is tuple:
        out = []
        cur = init
        for e in t:
            out.append(raw_prefix_product(e, cur))
            cur = cur * raw_product(e)
        return tuple(out)
    return init


def _inner_product(a: Any, b: Any) -> Any:
    if type(a) is tuple:
        s = 0
        for x, y in _bzip(a, b):
            s = s + _inner_product(x, y)
        return s
    return a * b


def ceil_div_int(a: Any, b: Any) -> Any:
    return -(-a // b)


def _idx2crd(idx: Any, shape: Any, stride: Any = None) -> Any:
    if type(idx) is tuple:  # each mode's coordinate within that mode (own strides by default)
        if stride is None:
            return tuple(_idx2crd(i, s) for i, s in _bzip(idx, shape))
        return tuple(_idx2crd(i, s, d) for i, s, d in _bzip(idx, shape, stride))
    if stride is None:
        stride = raw_prefix_product(shape)
    if type(shape) is tuple:
        return tuple(_idx2crd(idx, s, d) for s, d in _bzip(shape, stride))
    return (idx // stride) % shape


def raw_crd2idx(crd: Any, shape: Any, stride: Any = None) -> Any:
    """CuTe's crd2idx: an integer coordinate against a tuple shape is split colexicographically,
    with the last mode taking the remainder unbounded."""
    if stride is None:
        stride = raw_prefix_product(shape)
    if type(crd) is tuple:
        s = 0
        for c, sh, d in _bzip(crd, shape, stride):
            s = s + raw_crd2idx(c, sh, d)
        return s
    if type(shape) is tuple:
        n = len(shape)
        s = 0
        for i, (sh, d) in enumerate(_bzip(shape, stride)):
            if i == n - 1:
                s = s + raw_crd2idx(crd, sh, d)
            else:
                p = raw_product(sh)
                s = s + raw_crd2idx(crd % p, sh, d)
                crd = crd // p
        return s
    return crd * stride


# ----------------------------------------------------------------------------- public API
def flatten(t: Any) -> Tuple[Any, ...]:
    """The leaves of ``t`` in order, as a flat tuple (an integer gives a 1-tuple).

    Layouts are accepted too and give the flattened layout.
    """
    if type(t) is not tuple and type(t) is not int:
        fn = kinds.lookup("flatten", type(t))  # layouts (layoutproof.layout registers them)
        if fn is not None:
            result: Tuple[Any, ...] = fn(t)
            return result
    return raw_flatten(norm_htuple(t, "flatten argument"))


def unflatten(flat: Any, profile: Any) -> Any:
    """Rebuild the nesting of ``profile`` from the flat sequence ``flat``."""
    flat = norm_htuple(flat, "unflatten argument")
    profile = norm_htuple(profile, "unflatten profile")
    flat = flat if type(flat) is tuple else (flat,)
    n = len(raw_flatten(profile)) if type(profile) is tuple else 1
    if len(flat) != n:
        raise MalformedLayoutError(f"unflatten: {len(flat)} leaves do not fit a profile with {n} leaves")
    return raw_unflatten(flat, profile)


def product(t: Any) -> int:
    """The product of all leaves (1 for the empty tuple)."""
    p: int = raw_product(norm_htuple(t, "product argument"))  # an expression for symbolic leaves
    return p


def product_each(t: Any) -> Any:
    """The product of each top-level mode."""
    t = norm_htuple(t, "product_each argument")
    if type(t) is tuple:
        return tuple(raw_product(e) for e in t)
    return t


def prefix_product(t: Any, init: Any = 1) -> Any:
    """Exclusive prefix products, with the nesting of ``t``: ``(2,(3,4)) -> (1,(2,6))``."""
    t = norm_htuple(t, "prefix_product argument")
    init = norm_htuple(init, "prefix_product init")
    if not raw_weakly_congruent(init, t):
        raise MalformedLayoutError(
            f"prefix_product: init {show(init)} must be an integer or follow the profile of {show(t)}"
        )
    return raw_prefix_product(t, init)


def inner_product(a: Any, b: Any) -> int:
    """Sum of the products of corresponding leaves of two congruent HTuples."""
    a = norm_htuple(a, "inner_product argument")
    b = norm_htuple(b, "inner_product argument")
    if not raw_congruent(a, b):
        raise MalformedLayoutError(f"inner_product: {show(a)} and {show(b)} are not congruent")
    r: int = _inner_product(a, b)
    return r


def congruent(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` have the same nesting profile (layouts: their shapes)."""
    return raw_congruent(
        norm_htuple(_shape_arg(a), "congruent argument"), norm_htuple(_shape_arg(b), "congruent argument")
    )


def _shape_arg(x: Any) -> Any:
    """A layout (plain or composed) stands for its shape (duck-typed: this module does
    not import the layout types built on it)."""
    if (
        type(x) is not int
        and type(x) is not tuple
        and type(x) is not list
        and hasattr(type(x), "size")
        and hasattr(x, "_shape")  # layouts; numpy arrays have .shape and .size but no ._shape
    ):
        return x.shape
    return x


def weakly_congruent(a: Any, b: Any) -> bool:
    """True when the profile of ``a`` is a coarsening of the profile of ``b``
    (every integer of ``a`` stands where ``b`` has an integer or a tuple).  Layouts
    stand for their shapes, as in :func:`~layoutproof.ops.compatible`.

    >>> weakly_congruent(4, (2, 2)), weakly_congruent((2, 2), 4)
    (True, False)
    """
    return raw_weakly_congruent(
        norm_htuple(_shape_arg(a), "weakly_congruent argument"),
        norm_htuple(_shape_arg(b), "weakly_congruent argument"),
    )


def _check_range(crd: Any, shape: Any, what: str, full: Any) -> None:
    """Every integer of ``crd`` (weakly congruent with ``shape``) lies in ``[0, size)`` of
    the mode it stands for; else OutOfDomainError naming the entry and the range."""
    top = shape
    stack = [(crd, shape)]
    while stack:
        c, s = stack.pop()
        if type(c) is tuple:
            stack.extend(_bzip(c, s))
            continue
        n = raw_product(s)
        if type(c) is not int or type(n) is not int:
            _symbolic_in_range(c, n, full)
            continue
        if not 0 <= c < n:
            raise OutOfDomainError(
                f"{what}: coordinate {show(full)} is outside shape {show(top)}: {c} not in [0, {n})"
            )


def _symbolic_in_range(c: Any, n: Any, full: Any) -> None:
    """``0 <= c < n`` with a SymPy side, decided under the active assumptions by the
    symbolic layer (a symbolic coordinate is taken to be in the domain, as everywhere in
    layoutproof.symbolic).  SymPy leaves only get here through ``norm_htuple``, which loaded that
    layer; this module does not import it."""
    sym = sys.modules.get(__name__.rsplit(".", 1)[0] + ".symbolic")
    if sym is None:  # pragma: no cover - norm_htuple loads it before any SymPy leaf gets here
        raise MalformedLayoutError(f"coordinate {show(full)}: symbolic values need layoutproof.symbolic")
    sym._in_range(c, n, full)


def idx2crd(idx: Any, shape: Any, stride: Any = None) -> Any:
    """The natural (hierarchical) coordinate of an index, colexicographically.

    ``idx`` may be an integer or a coordinate weakly congruent with ``shape``.  Without
    ``stride``, every integer of ``idx`` must lie in ``[0, size)`` of its mode (else
    OutOfDomainError); with ``stride``, ``idx`` is any integer (an offset), and each
    coordinate is ``(idx // d) % s`` (floor division, as CuTe and pycute).

    >>> idx2crd(-1, (4, 2))
    Traceback (most recent call last):
      ...
    layoutproof.errors.OutOfDomainError: idx2crd: coordinate -1 is outside shape (4, 2): -1 not in [0, 8)
    """
    idx = norm_htuple(idx, "idx2crd index")
    shape = norm_htuple(shape, "idx2crd shape")
    if stride is not None:
        stride = norm_htuple(stride, "idx2crd stride")
        if not raw_congruent(shape, stride):
            raise MalformedLayoutError("idx2crd: shape and stride are not congruent")
        if any(d == 0 for d in raw_flatten(stride)):
            raise MalformedLayoutError("idx2crd: a stride (divisor) of 0 has no coordinate")
    if any(type(s) is int and s <= 0 for s in raw_flatten(shape)):
        raise MalformedLayoutError("idx2crd: a shape extent must be >= 1")
    if not raw_weakly_congruent(idx, shape):
        raise MalformedLayoutError(f"idx2crd: coordinate {show(idx)} does not fit shape {show(shape)}")
    if stride is None:
        _check_range(idx, shape, "idx2crd", idx)
    return _idx2crd(idx, shape, stride)


def crd2idx(crd: Any, shape: Any, stride: Any = None) -> int:
    """The index of a coordinate: inner product of its natural coordinate with ``stride``
    (default: the compact column-major stride of ``shape``).

    Every integer of ``crd`` must lie in ``[0, size)`` of the mode it stands for (CuTe
    C++ does not check; an integer past the last mode would extend it): else
    OutOfDomainError.

    >>> crd2idx((5, 0), (4, 2))
    Traceback (most recent call last):
      ...
    layoutproof.errors.OutOfDomainError: crd2idx: coordinate (5, 0) is outside shape (4, 2): 5 not in [0, 4)
    """
    crd = norm_htuple(crd, "crd2idx coordinate")
    shape = norm_htuple(shape, "crd2idx shape")
    if stride is not None:
        stride = norm_htuple(stride, "crd2idx stride")
        if not raw_congruent(shape, stride):
            raise MalformedLayoutError("crd2idx: shape and stride are not congruent")
    if not raw_weakly_congruent(crd, shape):
        raise MalformedLayoutError(f"crd2idx: coordinate {show(crd)} does not fit shape {show(shape)}")
    if any(type(s) is int and s <= 0 for s in raw_flatten(shape)):
        raise MalformedLayoutError("crd2idx: a shape extent must be >= 1")
    _check_range(crd, shape, "crd2idx", crd)
    idx: int = raw_crd2idx(crd, shape, stride)
    return idx


def crd2crd(crd: Any, dst_shape: Any, src_shape: Any = None) -> Any:
    """Convert a coordinate of ``src_shape`` into the coordinate of the same index in
    ``dst_shape`` (the shapes must be compatible on the modes involved)."""
    crd = norm_htuple(crd, "crd2crd coordinate")
    dst_shape = norm_htuple(dst_shape, "crd2crd shape")
    if src_shape is not None:
        src_shape = norm_htuple(src_shape, "crd2crd shape")
    for sh in (dst_shape, src_shape):
        if sh is not None and any(type(s) is int and s <= 0 for s in raw_flatten(sh)):
            raise MalformedLayoutError("crd2crd: a shape extent must be >= 1")
    return _crd2crd(crd, dst_shape, src_shape)


def _crd2crd(crd: Any, dst: Any, src: Any) -> Any:
    if type(crd) is tuple:
        if type(dst) is tuple:
            if len(crd) != len(dst) or (src is not None and (type(src) is not tuple or len(src) != len(crd))):
                raise MalformedLayoutError("crd2crd: coordinate and shapes differ in rank")
            return tuple(
                _crd2crd(c, d, None if src is None else s)
                for c, d, s in _bzip(crd, dst, src if src is not None else dst)
            )
        if src is None or not raw_weakly_congruent(crd, src):
            raise MalformedLayoutError("crd2crd: a tuple coordinate into an integer needs its source shape")
        _check_range(crd, src, "crd2crd", crd)
        i = raw_crd2idx(crd, src)
        _check_range(i, dst, "crd2crd", crd)
        return i
    _check_range(crd, dst, "crd2crd", crd)
    if src is not None:
        _check_range(crd, raw_product(src), "crd2crd", crd)
    if type(dst) is tuple:
        return _idx2crd(crd, dst)
    return crd


def _sel(t: Any) -> Tuple[Any, ...]:
    """Modes of an HTuple (an integer is a single mode)."""
    return t if type(t) is tuple else (t,)


def checked_index(i: Any, n: int, what: str) -> int:
    k = _norm_int(i, what)
    if not -n <= k < n:
        raise OutOfDomainError(f"{what} {k} is out of range for rank {n}")
    return k % n


def select(t: Any, *idx: Any) -> Any:
    """The modes of ``t`` at the given indices, as a tuple (layouts: as a layout)."""
    if type(t) is not tuple and type(t) is not int:
        fn = kinds.lookup("select", type(t))  # layouts (layoutproof.layout registers them)
        if fn is not None:
            return fn(t, *idx)
    m = _sel(norm_htuple(t, "select argument"))
    return tuple(m[checked_index(i, len(m), "select index")] for i in idx)


def checked_range(b: Any, e: Any, n: int, what: str) -> tuple[int, int]:
    b = _norm_int(b, f"{what} begin")
    e = n if e is None else _norm_int(e, f"{what} end")
    if e < 0:
        e += n
    if b < 0:
        b += n
    if not 0 <= b <= e <= n:
        raise OutOfDomainError(f"{what}: [{b}, {e}) is not a mode range of a rank-{n} tuple")
    return b, e


def take(t: Any, begin: Any, end: Any = None) -> Any:
    """The modes ``[begin, end)`` of ``t`` (layouts: as a layout)."""
    if type(t) is not tuple and type(t) is not int:
        fn = kinds.lookup("take", type(t))  # layouts (layoutproof.layout registers them)
        if fn is not None:
            return fn(t, begin, end)
    m = _sel(norm_htuple(t, "take argument"))
    b, e = checked_range(begin, end, len(m), "take")
    return m[b:e]


def group(t: Any, begin: Any, end: Any = None) -> Any:
    """``t`` with the modes ``[begin, end)`` grouped into one mode (layouts: as a layout)."""
    if type(t) is not tuple and type(t) is not int:
        fn = kinds.lookup("group", type(t))  # layouts (layoutproof.layout registers them)
        if fn is not None:
            return fn(t, begin, end)
    m = _sel(norm_htuple(t, "group argument"))
    b, e = checked_range(begin, end, len(m), "group")
    return m[:b] + (m[b:e],) + m[e:]


def append(t: Any, x: Any = None, n: Any = None) -> Any:
    """``t`` with ``x`` appended as a new last mode; with ``n``, pad with ``x`` (default 1)
    up to rank ``n`` (layouts: pad with ``1:0``)."""
    if type(t) is not tuple and type(t) is not int:
        fn = kinds.lookup("append", type(t))  # layouts (layoutproof.layout registers them)
        if fn is not None:
            return fn(t, x, n)
    t = norm_htuple(t, "append argument")
    m = _sel(t)
    x = 1 if x is None else norm_htuple(x, "append element")
    if n is None:
        return m + (x,)
    n = checked_rank(n, "append rank", len(m))
    if n == 1 and type(t) is not tuple:
        return t
    return m + (x,) * (n - len(m))


def prepend(t: Any, x: Any = None, n: Any = None) -> Any:
    """``t`` with ``x`` prepended as a new first mode; with ``n``, pad in front up to rank n."""
    if type(t) is not tuple and type(t) is not int:
        fn = kinds.lookup("prepend", type(t))  # layouts (layoutproof.layout registers them)
        if fn is not None:
            return fn(t, x, n)
    t = norm_htuple(t, "prepend argument")
    m = _sel(t)
    x = 1 if x is None else norm_htuple(x, "prepend element")
    if n is None:
        return (x,) + m
    n = checked_rank(n, "prepend rank", len(m))
    if n == 1 and type(t) is not tuple:
        return t
    return (x,) * (n - len(m)) + m


def zip(*ts: Any) -> Any:  # noqa: A001 - CuTe's name
    """Transpose a tuple of tuples: ``zip((1,2),(3,4)) == ((1,3),(2,4))``.

    With one argument, that argument is the tuple of tuples; layouts zip their modes.
    """
    if len(ts) == 1 and type(ts[0]) is not tuple and type(ts[0]) is not list:
        fn = kinds.lookup("zip", type(ts[0]))  # layouts (layoutproof.layout registers them)
        if fn is not None:
            return fn(ts[0])
    rows = norm_htuple(ts[0], "zip argument") if len(ts) == 1 else norm_htuple(ts, "zip argument")
    if type(rows) is not tuple or any(type(r) is not tuple for r in rows):
        raise MalformedLayoutError("zip needs a tuple of tuples")
    if len({len(r) for r in rows}) > 1:
        raise MalformedLayoutError("zip needs tuples of equal rank")
    return tuple(_bzip(*rows))


def wrap(x: Any) -> Tuple[Any, ...]:
    """``x`` if it is a tuple, else ``(x,)``."""
    x = norm_htuple(x, "wrap argument")
    return x if type(x) is tuple else (x,)


def unwrap(x: Any) -> Any:
    """Strip rank-1 tuple wrappers: ``((4,),) -> 4``."""
    x = norm_htuple(x, "unwrap argument")
    while type(x) is tuple and len(x) == 1:
        x = x[0]
    return x


def signum(a: Any) -> int:
    x = _norm_int(a, "signum argument")
    return (x > 0) - (x < 0)


def _shape_div(a: Any, b: Any) -> Any:
    if type(a) is tuple:
        if type(b) is tuple:
            if len(a) != len(b):
                raise MalformedLayoutError("shape_div: tuples of different rank")
            return tuple(_shape_div(x, y) for x, y in _bzip(a, b))
        out = []
        for x in a:
            out.append(_shape_div(x, b))
            px = raw_product(x)
            if px == 0:
                raise MalformedLayoutError("shape_div: a mode of extent 0 cannot absorb a divisor")
            b = _shape_div(b, px)
        return tuple(out)
    if type(b) is tuple:
        return _shape_div(a, raw_product(b))
    if b == 0:
        raise MalformedLayoutError("shape_div by zero")
    if a % b == 0:
        return a // b
    if a != 0 and b % a == 0:
        return 1 if (a > 0) == (b > 0) else -1
    raise InadmissibleError(f"shape_div({a}, {b}): neither divides the other", condition="shape divisibility")


def shape_div(a: Any, b: Any) -> Any:
    """CuTe's shape division: ``a / b`` where one divides the other (1 when ``b`` is the
    multiple); tuples divide their modes left to right, the divisor shrinking as it goes."""
    return _shape_div(norm_htuple(a, "shape_div argument"), norm_htuple(b, "shape_div argument"))


def raw_ceil_div(a: Any, b: Any) -> Any:
    if type(a) is tuple:
        if type(b) is tuple:
            if len(b) > len(a):
                raise MalformedLayoutError("ceil_div: divisor has a higher rank than the dividend")
            b = b + (1,) * (len(a) - len(b))
            return tuple(raw_ceil_div(x, y) for x, y in _bzip(a, b))
        out = []
        for x in a:
            out.append(raw_ceil_div(x, b))
            px = raw_product(x)
            if px == 0:
                raise MalformedLayoutError("ceil_div: a mode of extent 0 cannot absorb a divisor")
            b = ceil_div_int(b, px)
        return tuple(out)
    if type(b) is tuple:
        b = raw_product(b)
    if b == 0:
        raise MalformedLayoutError("ceil_div by zero")
    return ceil_div_int(a, b)


def ceil_div(a: Any, b: Any) -> Any:
    """Rounded-up division; tuples divide mode by mode (an integer divisor is spread
    over the modes from the left)."""
    return raw_ceil_div(norm_htuple(a, "ceil_div argument"), norm_htuple(b, "ceil_div argument"))
