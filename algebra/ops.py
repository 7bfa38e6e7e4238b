"""The layout algebra: coalesce, composition, complement, inverses, divides, products.

Semantics follow CuTe C++ (see docs/semantics.md); where the references return a layout
that violates the operation's own post-condition, these functions raise
:class:`~layoutproof.errors.InadmissibleError` naming the condition and a witness.

>>> str(composition(Layout.parse("(6,2):(8,2)"), Layout.parse("(4,3):(3,1)")))
'((2,2),3):((24,2),8)'
>>> str(complement(Layout.parse("(2,4):(1,2)"), 16))
'2:8'
>>> composition(Layout.parse("(6,2):(1,7)"), Layout.parse("(3,2):(2,3)"))
Traceback (most recent call last):
  ...
layoutproof.errors.InadmissibleError: composition: the modes of B overlap inside A ...
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Set, Tuple, Union, overload

from . import kinds
from .arith import ArithTuple, as_basis, components
from .errors import InadmissibleError, MalformedLayoutError, UndecidableConditionError, show
from .inttuple import (
    ceil_div_int,
    check_depth,
    norm_htuple,
    raw_flatten,
    raw_prefix_product,
    raw_product,
    raw_unflatten,
)
from .layout import (
    Layout,
    Underscore,
    _,
    checked_shape,
    fmt_htuple,
    has_scalar_strides,
    holds_symbols,
    layout_arg,
    make_ordered_layout,
    need_layout,
    top_modes,
)

__all__ = [
    "coalesce",
    "filter",
    "composition",
    "complement",
    "right_inverse",
    "left_inverse",
    "logical_divide",
    "zipped_divide",
    "tiled_divide",
    "flat_divide",
    "logical_product",
    "zipped_product",
    "tiled_product",
    "flat_product",
    "blocked_product",
    "raked_product",
    "tile_to_shape",
    "compatible",
]

_make = Layout._make


def _symq(L: Layout) -> bool:
    """Does the layout hold a SymPy leaf?  (Cached on the layout; free when SymPy is not
    loaded.)  Symbolic layouts go to layoutproof.symbolic.symops."""
    v = L._sym
    return L.is_symbolic if v is None else v


_new = object.__new__


def _plain(shape: Any, stride: Any, fs: Any = None, fd: Any = None) -> Layout:
    """Trusted constructor for a result computed from concrete operands (no SymPy leaf, no
    F2 stride): marked as such (``_sym``), so the next operation does not look for them
    again; ``fs``/``fd`` its flattening when the caller has it."""
    out: Layout = _new(Layout)
    out._shape = shape
    out._stride = stride
    out._fs = fs
    out._fd = fd
    out._size = None
    out._sym = False
    return out


#: the layout 1:0 (layouts are immutable values: one object serves every result 1:0)
_ONE_ZERO = _plain(1, 0, (1,), (0,))
_ONE_ZERO._size = 1


def _plain_modes(ms: List[int], md: List[int]) -> Layout:
    """:func:`_from_modes` for integer modes: the result is known to be concrete."""
    if len(ms) == 1:
        m, e = ms[0], md[0]
        return _plain(m, e, (m,), (e,))
    s, d = tuple(ms), tuple(md)
    return _plain(s, d, s, d)


def _from_modes(ms: List[int], md: List[int]) -> Layout:
    """The layout of flat modes (extents ``ms``, strides ``md``); being flat, it is its
    own flattening (cached: the next operation does not flatten it again)."""
    if len(ms) == 1:
        return _make(ms[0], md[0])
    s, d = tuple(ms), tuple(md)
    out = _make(s, d)
    out._fs = s
    out._fd = d
    return out


# ----------------------------------------------------------------------------- coalesce / filter
def coalesce_modes(
    fs: Sequence[Any], fd: Sequence[Any], keep_last: bool = False
) -> Tuple[List[int], List[int]]:
    """Merge adjacent modes where ``s_prev*d_prev == d`` and drop extent-1 modes; with
    ``keep_last``, the last leaf stays a mode even when its extent is 1."""
    rs: List[int] = []
    rd: List[int] = []
    ps: Any = None  # the mode being merged (None: none yet), ps:pd
    pd: Any = 0
    n = len(fs)
    if keep_last and n:
        n -= 1
    for k in range(n):
        s = fs[k]
        if s != 1:
            d = fd[k]
            if ps is not None and ps * pd == d:
                ps *= s
            else:
                if ps is not None:
                    rs.append(ps)
                    rd.append(pd)
                ps = s
                pd = d
    if keep_last and fs:  # the last leaf, extent 1 or not
        s, d = fs[-1], fd[-1]
        if ps is not None and ps * pd == d:
            ps *= s
        else:
            if ps is not None:
                rs.append(ps)
                rd.append(pd)
            ps = s
            pd = d
    if ps is not None:
        rs.append(ps)
        rd.append(pd)
    if not rs:
        return [1], [0]
    return rs, rd


def _coalesce_linear(layout: Layout) -> Layout:
    """coalesce for strides of another algebra (F2): PyCuTe's two merge tests."""
    rs: List[Any] = []
    rd: List[Any] = []
    for s, d in zip(*layout._flat()):
        if s == 1:
            continue
        if rs and rs[-1] * rd[-1] == d and _linear_merge(rs[-1], rd[-1], d):
            rs[-1] *= s
        else:
            rs.append(s)
            rd.append(d)
    if not rs:
        return _make(1, 0)
    return _from_modes(rs, rd)


def _linear_merge(sa: Any, da: Any, db: Any) -> bool:
    """The second half of PyCuTe's merge test, for strides of another algebra: with
    ``sa*da == db`` (checked by the caller), ``(sa, n):(da, db)`` is ``sa*n : da`` when the
    value at coordinate ``(sa-1, 1)`` is linear too, ``(sa-1)*da + db == (2*sa-1)*da``.
    Integers and coordinates always pass; an F2 stride passes when ``sa`` is a power of
    two (its carry-less products then never carry into each other)."""
    return bool((sa - 1) * da + db == (2 * sa - 1) * da)


def coalesced_modes(L: Layout) -> Tuple[List[int], List[int]]:
    fs, fd = L._flat()
    return coalesce_modes(fs, fd)


def coalesced_modes_x(L: Layout) -> Tuple[List[int], List[int]]:
    """Coalesce, but keep the last leaf as the last mode (merged into its predecessor only
    when it continues it), even when its extent is 1: composition extends the left
    operand's own last mode past its size (CuTe C++), and a trailing size-1 mode decides
    how.  ``(4,1):(1,0)`` stays ``(4,1):(1,0)``, so it extends with stride 0."""
    fs, fd = L._flat()
    return coalesce_modes(fs, fd, keep_last=True)


def _by_mode(L: Layout, profile: Tuple[Any, ...], fn: Any, op: str) -> Layout:
    s, d = top_modes(L)
    if len(profile) > len(s):
        raise MalformedLayoutError(
            f"{op}: profile {show(profile)} has more modes ({len(profile)}) than the layout {L} ({len(s)})"
        )
    parts = [fn(_make(s[i], d[i]), p) for i, p in enumerate(profile)]
    parts += [_make(s[i], d[i]) for i in range(len(profile), len(s))]
    return _make(tuple(p._shape for p in parts), tuple(p._stride for p in parts))


@overload
def coalesce(layout: Layout, profile: Any = ...) -> Layout: ...
@overload
def coalesce(layout: Any, profile: Any = ...) -> Any: ...  # another kind of layout (kinds registry)
def coalesce(layout: Any, profile: Any = None) -> Any:
    """Merge modes without changing the function: same size, same values, depth <= 1.

    With a tuple ``profile``, coalesce each top-level mode separately (modes beyond the
    profile are kept as they are).

    >>> str(coalesce(Layout((2, (1, 6)), (1, (6, 2)))))
    '12:1'
    """
    if profile is None and type(layout) is Layout:
        if type(layout._shape) is int:  # a single integer mode
            return layout if layout._shape != 1 else _ONE_ZERO
        if layout._sym is False:
            fs, fd = layout._fs, layout._fd  # concrete: straight to the merge below
            if fs is not None and fd is not None:
                return _coalesce_plain(layout, fs, fd)
    if not isinstance(layout, Layout):  # other kinds of layouts answer for themselves
        return kinds.call("coalesce", layout, profile)
    if profile is None and type(layout._shape) is int:  # a single integer mode
        return layout if layout._shape != 1 else _ONE_ZERO
    if profile is not None and profile is not _:
        profile = norm_htuple(profile, "coalesce profile")
        if type(profile) is tuple:
            return _by_mode(layout, profile, coalesce, "coalesce")
    sym = layout._sym
    if sym is None:
        sym = layout.is_symbolic
        if not sym and layout._sym is None:  # left uncached: F2 strides (layoutproof.f2)
            return _coalesce_linear(layout)
    if sym:
        return kinds.call_symbolic("coalesce", layout)
    fs, fd = layout._fs, layout._fd
    if fs is None or fd is None:
        fs, fd = layout._flat()
    return _coalesce_plain(layout, fs, fd)


def _coalesce_two(s0: int, s1: int, d0: int, d1: int) -> Layout:
    """coalesce of the two concrete leaves ``(s0, s1):(d0, d1)``."""
    if s0 == 1:
        return _plain(s1, d1, (s1,), (d1,)) if s1 != 1 else _ONE_ZERO
    if s1 == 1:
        return _plain(s0, d0, (s0,), (d0,))
    if s0 * d0 == d1:
        m = s0 * s1
        return _plain(m, d0, (m,), (d0,))
    return _plain((s0, s1), (d0, d1), (s0, s1), (d0, d1))


def _coalesce_plain(layout: Layout, fs: Tuple[int, ...], fd: Tuple[int, ...]) -> Layout:
    """coalesce of a concrete layout with flattening ``fs``/``fd``."""
    n = len(fs)
    if n == 1:
        return _plain(fs[0], fd[0], fs, fd) if fs[0] != 1 else _ONE_ZERO
    if n == 2:  # the loop below, unrolled for two leaves
        s0, s1 = fs
        d0, d1 = fd
        if s0 != 1 and s1 != 1 and s0 * d0 != d1:
            return layout if layout._shape is fs else _plain(fs, fd, fs, fd)
        return _coalesce_two(s0, s1, d0, d1)
    if n == 3:  # and for three: none is 1 and none continues the one before, or one is 1
        s0, s1, s2 = fs
        d0, d1, d2 = fd
        if s0 == 1:
            return _coalesce_two(s1, s2, d1, d2)
        if s1 == 1:
            return _coalesce_two(s0, s2, d0, d2)
        if s2 == 1:
            return _coalesce_two(s0, s1, d0, d1)
        if s0 * d0 != d1 and s1 * d1 != d2:
            return layout if layout._shape is fs else _plain(fs, fd, fs, fd)
    rs: List[int] = []
    rd: List[int] = []
    ps = 0  # coalesce_modes, inline: the mode being merged (extent 0: none yet), ps:pd
    pd = 0
    for s, d in zip(fs, fd):
        if s != 1:
            if ps and ps * pd == d:
                ps *= s
            else:
                if ps:
                    rs.append(ps)
                    rd.append(pd)
                ps = s
                pd = d
    if not rs:  # at most one mode
        if ps:
            if type(layout._shape) is int:  # itself
                return layout
            return _plain(ps, pd, (ps,), (pd,))
        return _ONE_ZERO
    rs.append(ps)
    rd.append(pd)
    if len(rs) == len(fs):  # nothing merged or dropped: the flattening itself
        return layout if layout._shape is fs else _plain(fs, fd, fs, fd)
    s_, d_ = tuple(rs), tuple(rd)
    return _plain(s_, d_, s_, d_)


def filter(layout: Layout, profile: Any = None) -> Layout:  # noqa: A001 - CuTe's name
    """Drop stride-0 and size-1 modes, then coalesce (the image is unchanged).

    >>> str(filter(Layout((4, 2, 3), (0, 1, 2))))
    '6:1'
    """
    need_layout(layout, "filter")
    if profile is not None and profile is not _:
        profile = norm_htuple(profile, "filter profile")
        if type(profile) is tuple:
            return _by_mode(layout, profile, filter, "filter")
    if _symq(layout):
        result: Layout = kinds.call_symbolic("filter", layout)
        return result
    fs, fd = layout._flat()
    keep = [(s, d) for s, d in zip(fs, fd) if s != 1 and d != 0]
    rs, rd = coalesce_modes(tuple(k[0] for k in keep), tuple(k[1] for k in keep))
    return _from_modes(rs, rd)


# ----------------------------------------------------------------------------- composition
def ext_eval(As: List[int], Ad: List[int], x: int) -> int:
    """A flat layout evaluated at any x >= 0, its last mode unbounded (CuTe's semantics
    when B reaches past size(A))."""
    off = 0
    last = len(As) - 1
    for i in range(last):
        off += (x % As[i]) * Ad[i]
        x //= As[i]
    return off + x * Ad[last]


def _leaf_witness_nonlinear(As: List[int], Ad: List[int], n: int, r: int) -> int | None:
    """Smallest j with A(r*j) - A(r*(j-1)) != A(r): where j -> A(r*j) stops being linear."""
    step = ext_eval(As, Ad, r)
    prev = 0
    for j in range(1, min(n, 1 << 14)):
        cur = ext_eval(As, Ad, r * j)
        if cur - prev != step:
            return j
        prev = cur
    return None


class _Leaf:
    """The composition of A with one leaf (n:r) of B."""

    __slots__ = ("ms", "md", "occ")

    def __init__(self, ms: List[int], md: List[int], occ: Optional[Dict[int, Tuple[int, int]]]) -> None:
        self.ms = ms
        self.md = md
        # A-mode index -> (largest digit used there, leaf coordinate reaching it); None when
        # the leaf was decided by evaluation (its digits are then checked by evaluation too)
        self.occ = occ


# Domains up to this size are decided exactly by evaluation when CuTe's conditions fail.
EXACT_LIMIT = 1 << 16


def recognize_layout_fn(v: Any) -> Tuple[Optional[Tuple[List[int], List[int]]], Optional[int]]:
    """Is j -> v[j] (v[0] == 0) the function of a layout?  Returns its coalesced modes,
    or None and the first index where no layout can agree.

    Greedy and exact: in a coalesced layout f(j) = j*f(1) holds exactly for j < n0 and
    f(n0) = e1 != n0*e0, so the first mode is forced; recurse on the multiples of n0.
    """
    import numpy as np

    ms: List[int] = []
    md: List[int] = []
    cur = v
    scale = 1
    while len(cur) > 1:
        e = int(cur[1])
        lin = cur != np.arange(len(cur), dtype=np.int64).astype(cur.dtype) * e
        bad = np.flatnonzero(lin)
        n = int(bad[0]) if bad.size else len(cur)
        if len(cur) % n != 0:
            return None, n * scale
        ms.append(n)
        md.append(e)
        cur = cur[::n]
        scale *= n
    if not ms:
        return ([1], [0]), None
    cs, cd = coalesce_modes(tuple(ms), tuple(md))
    got = _make(tuple(cs), tuple(cd)).eval_all()
    diff = np.flatnonzero(got != v)
    if diff.size:
        return None, int(diff[0])
    return (cs, cd), None


#: leaves of up to this many coordinates are decided by evaluation in plain Python
SMALL_EXACT = 256


def _recognize_small(v: List[int]) -> Tuple[Optional[Tuple[List[int], List[int]]], Optional[int]]:
    """:func:`recognize_layout_fn` on a list of Python ints (the same greedy recognition,
    the same answers and witnesses)."""
    ms: List[int] = []
    md: List[int] = []
    cur = v
    scale = 1
    while len(cur) > 1:
        e = cur[1]
        n = len(cur)
        for j, x in enumerate(cur):
            if x != j * e:
                n = j
                break
        if len(cur) % n != 0:
            return None, n * scale
        ms.append(n)
        md.append(e)
        cur = cur[::n]
        scale *= n
    if not ms:
        return ([1], [0]), None
    cs, cd = coalesce_modes(ms, md)
    for i, x in enumerate(v):
        y, k = 0, i
        for s, d in zip(cs, cd):
            y += (k % s) * d
            k //= s
        if y != x:
            return None, i
    return (cs, cd), None


def ext_bound(As: List[int], Ad: List[int], xmax: int) -> int:
    """An upper bound of |A(x)| (and of x) for 0 <= x <= xmax, A extended."""
    p = 1
    b = 0
    for s, d in zip(As[:-1], Ad[:-1]):
        b += s * abs(d)
        p *= s
    return max(b + (xmax // p + 1) * abs(Ad[-1]), xmax)


def arange_exact(n: int, bound: int) -> Any:
    """0..n-1 as int64, or as Python integers when values up to ``bound`` would overflow."""
    import numpy as np

    a = np.arange(n, dtype=np.int64)
    return a if bound < (1 << 62) else a.astype(object)


def _exact_leaf(As: List[int], Ad: List[int], n: int, r: int, err: InadmissibleError) -> _Leaf:
    """CuTe's divisibility conditions failed: decide exactly whether j -> A(r*j) is a layout
    (by evaluation, for leaves of up to ``EXACT_LIMIT`` coordinates).  A shape-divisibility
    failure is exact by itself (no layout of size n reproduces j -> A(r*j): the catalog's
    sym.composition-exact); past the bound a stride-divisibility failure is a refusal only where
    the first-break lemma decides it (the first break does not divide n), else an
    UndecidableConditionError: CuTe's condition is only sufficient, so it refuses nothing."""

    if n > EXACT_LIMIT:
        if err.condition != "stride divisibility":
            raise err
        # The first-break lemma still decides a refusal: j -> A(r*j) is linear below its first
        # break m and not at m, so a layout reproducing it has m as a product of its first
        # extents -- if m does not divide n there is none.
        m = _leaf_witness_nonlinear(As, Ad, n, r)
        if m is not None and n % m:
            raise InadmissibleError(
                f"{err}; decided by the first-break lemma: j -> A({r}*j) is linear below j = {m} and "
                f"not at {m}, and {m} does not divide {n}, so no layout of size {n} reproduces it",
                condition=err.condition,
                witness=m,
            ) from None
        # Otherwise nothing is decided: CuTe's condition is only sufficient (A = (4,8):(1,5),
        # B = 2^17:6 fails it, yet (2,2^16):(7,15) is A o B), so this is no refusal.
        raise UndecidableConditionError(
            f"{err}; undecided: the leaf has {n} > EXACT_LIMIT = {EXACT_LIMIT} coordinates, too many to "
            f"decide by evaluation, and CuTe's stride divisibility is only a sufficient condition -- a "
            f"layout of size {n} may still reproduce j -> A({r}*j) (raise layoutproof.ops.EXACT_LIMIT "
            "to decide it)",
            condition="stride divisibility",
        ) from None
    if any(isinstance(d, ArithTuple) for d in Ad):  # coordinate strides: decide per component
        ms, md = exact_leaf_by_component(As, Ad, n, r, err)
        return _Leaf(ms, md, None)
    if n <= SMALL_EXACT:  # a few values: plain Python beats numpy's per-call overhead
        rec, w = _recognize_small([ext_eval(As, Ad, r * j) for j in range(n)])
    else:
        v = ext_eval_np(As, Ad, arange_exact(n, ext_bound(As, Ad, r * n)) * r)
        rec, w = recognize_layout_fn(v)
    if rec is None:
        if err.witness is None:
            err.witness = w
        if err.condition == "stride divisibility":  # decided here, not by CuTe's condition
            err.args = (
                f"{err}; decided by evaluation: no layout of size {n} reproduces j -> A({r}*j) "
                f"(the greedy recognition, exact by the first-break lemma, fails at j = {w})",
            )
        raise err
    return _Leaf(rec[0], rec[1], None)


def _compose_leaf(As: List[int], Ad: List[int], n: int, r: int, k: int) -> _Leaf:
    try:
        return _compose_leaf_cute(As, Ad, n, r, k)
    except InadmissibleError as e:
        if e.condition not in ("stride divisibility", "shape divisibility"):
            raise
        return _exact_leaf(As, Ad, n, r, e)


def _where(k: int) -> str:
    return "layout" if k < 0 else f"mode {k}"


def _compose_leaf_cute(As: List[int], Ad: List[int], n: int, r: int, k: int) -> _Leaf:
    if n == 1:
        return _Leaf([1], [0], {})
    if r == 0:
        return _Leaf([n], [0], {})
    if r < 0:
        raise InadmissibleError(
            f"composition: B's {_where(k)} has negative stride {r}, so B maps coordinate 1 of that "
            "mode to a negative index outside A's domain",
            condition="non-negative strides of B",
            witness=1,
        )
    ms: List[int] = []
    md: List[int] = []
    occ: Dict[int, Tuple[int, int]] = {}
    rest_n = n
    rest_r = r
    done = 1  # product of the extents taken so far (leaf coordinate scale)
    last = len(As) - 1
    for i in range(last):
        if rest_n == 1:
            break
        s = As[i]
        if rest_r % s == 0:
            rest_r //= s
            continue
        if s % rest_r == 0:
            m = s // rest_r
            if rest_n <= m:
                take = rest_n
            elif rest_n % m == 0:
                take = m
            else:
                raise InadmissibleError(
                    f"composition: shape divisibility: B's {_where(k)} ({n}:{r}) wraps around A's mode "
                    f"{i} (extent {s}) after {m} steps but has {rest_n} steps left and {m} does not "
                    f"divide {rest_n}; at coordinate {done * m} of that mode A(B(.)) = "
                    f"{ext_eval(As, Ad, r * done * m)}, which no layout of size {n} reproduces",
                    condition="shape divisibility",
                    witness=done * m,
                )
            ms.append(take)
            md.append(rest_r * Ad[i])
            occ[i] = (rest_r * (take - 1), done * (take - 1))
            done *= take
            rest_n //= take
            rest_r = 1
            continue
        if not ms and (n - 1) * rest_r < s and type(Ad[i]) is int and n <= EXACT_LIMIT:
            # The whole leaf lies inside A's mode i (r is rest_r times the extents before it,
            # which it skipped whole), so j -> A(r*j) = j*rest_r*Ad[i]: what evaluation finds
            # (and, like it, leaves disjointness to evaluation: occ None).
            return _Leaf([n], [rest_r * Ad[i]], None)
        w = _leaf_witness_nonlinear(As, Ad, n, r)
        raise InadmissibleError(
            f"composition: stride divisibility: B's {_where(k)} ({n}:{r}) has remaining stride "
            f"{rest_r} at A's mode {i} of extent {s}, and neither divides the other"
            + (f"; j -> A({r}*j) stops being linear at j = {w}" if w is not None else ""),
            condition="stride divisibility",
            witness=w,
        )
    if rest_n != 1:
        ms.append(rest_n)
        md.append(rest_r * Ad[last])
    if not ms:
        return _Leaf([1], [0], {})
    return _Leaf(ms, md, occ)


def _compose_layout(A: Layout, B: Layout) -> Layout:
    n = B._shape
    r = B._stride
    if type(n) is int and type(r) is int:
        # B one integer mode, A one integer leaf (so no SymPy leaf, no F2 stride): a scaling of B
        a = A._stride
        if type(a) is not int or type(A._shape) is not int:
            fa = A._fd
            a = fa[0] if fa is not None and len(fa) == 1 and A._sym is False else None
        if type(a) is int:
            if n == 1:
                return _ONE_ZERO
            if r >= 0:
                d = r * a
                return _plain(n, d, (n,), (d,))
        elif r == 0 and A._sym is False and A._fd is not None:  # n:0 over A of integer strides
            for d in A._fd:
                if type(d) is not int:
                    break
            else:
                return _plain(n, 0, (n,), (0,))
    fbs, fbd = B._flat()
    if A._sym is False and B._sym is False:
        for s, d in zip(fbs, fbd):
            if type(d) is not int or (d != 0 and s != 1):
                break
        else:  # every leaf of B is n:0 or 1:d: each stays at A(0) == 0 (A of integer strides)
            for d in A._flat()[1]:
                if type(d) is not int:
                    break
            else:
                z = (0,) * len(fbs)
                if B._shape is fbs:
                    return _plain(fbs, z, fbs, z)
                return _plain(B._shape, raw_unflatten(z, B._stride), fbs, z)
    for d in fbd:
        if type(d) is not int:
            if getattr(type(d), "_lp_coordinate", False) and not (
                A._sym is not False and has_scalar_strides(A)
            ):
                return _compose_basis(A, B)
            if getattr(type(d), "_lp_coordinate", False) or getattr(type(d), "_lp_stride_scalar", False):
                return _compose_f2(A, B)  # F2 strides on either side (layoutproof.f2)
    if A._sym is not False and has_scalar_strides(A):
        return _compose_f2(A, B)
    if _symq(A) or _symq(B):
        result: Layout = kinds.call_symbolic("composition", A, B)
        return result
    # from here on both are concrete (no SymPy leaf, no F2 stride), and so is the result
    As, Ad = coalesced_modes_x(A)
    if len(As) == 1:  # A is a single (unbounded) mode: a scaling of B
        a = Ad[0]
        if type(B._shape) is not tuple:
            if B._shape == 1:
                return _ONE_ZERO
            if B._stride >= 0:
                n, d = B._shape, B._stride * a
                return _plain(n, d, (n,), (d,))
            return _compose_general(A, B, As, Ad, fbs, fbd)
        for d in fbd:
            if d < 0:
                return _compose_general(A, B, As, Ad, fbs, fbd)
        rd = tuple([d * a if s != 1 else 0 for s, d in zip(fbs, fbd)])
        if B._shape is fbs:  # flat
            return _plain(fbs, rd, fbs, rd)
        return _plain(B._shape, raw_unflatten(rd, B._stride), fbs, rd)
    return _compose_general(A, B, As, Ad, fbs, fbd)


def _compose_f2(A: Layout, B: Layout) -> Layout:
    result: Layout = kinds.call_kind("composition", kinds.STRIDE_SCALARS, A, B)
    return result


def _basis_terms(d: Any) -> List[Tuple[int, Tuple[Any, ...]]]:
    """The non-zero entries of a stride as ``(value, path)`` pairs, path order: ``d ==
    sum(value * E(*path))`` (an integer ``v`` is ``[(v, ())]``, a zero stride ``[]``)."""
    if type(d) is int:
        return [(d, ())] if d != 0 else []
    if not getattr(type(d), "_lp_coordinate", False):  # an ArithTuple (layoutproof.arith)
        raise MalformedLayoutError(f"composition: a stride of B is {type(d).__name__} {show(d)}")
    if hasattr(d, "path") and hasattr(d, "value"):  # a ScaledBasis
        return [(d.value, tuple(d.path))] if d.value != 0 else []
    found: List[Tuple[int, Tuple[Any, ...]]] = []
    stack: List[Tuple[Any, Tuple[Any, ...]]] = [(d.to_tuple(), ())]
    while stack:
        x, path = stack.pop()
        if type(x) is tuple:
            stack.extend((e, path + (i,)) for i, e in reversed(list(enumerate(x))))
        elif x != 0:
            found.append((x, path))
    return found


def _basis_mode(A: Layout, path: Tuple[Any, ...], B: Layout) -> Layout:
    """The mode of A that the basis path selects (C++ ``basis_get``; as C++'s ``get<0>``,
    index 0 of an integer mode is the mode itself)."""
    s, d = A._shape, A._stride
    for i in path:
        if type(s) is tuple:
            if not 0 <= i < len(s):
                raise MalformedLayoutError(
                    f"composition: B's basis stride selects mode {path} of A = {A}, which has no "
                    f"mode {i} there"
                )
            s, d = s[i], d[i]
        elif i != 0:
            raise MalformedLayoutError(
                f"composition: B's basis stride selects mode {path} of A = {A}, which has no mode {i} there"
            )
    return _make(s, d)


def _compose_basis(A: Layout, B: Layout) -> Layout:
    """``A o B`` for a B with coordinate strides.  A leaf ``n : v@i`` of B walks mode
    ``i`` of A (C++ ``composition_impl``'s ScaledBasis case: ``basis_get`` of A's shape and
    stride, composed with ``n:v``); a leaf whose stride has several entries, ``n :
    sum_j v_j@i_j``, walks each of those modes at once (PyCuTe's generalization: A's value
    at a natural coordinate is the sum of its modes' values, so the leaf's result is the
    sum of the ``A_{i_j} o n:v_j``, taken on their common refinement).  Leaves of B that
    walk the same mode of A are composed with it together (their disjointness is
    checked); different modes of A add without carrying into each other."""
    fbs, fbd = B._flat()
    if any(type(n) is not int for n in fbs):
        raise MalformedLayoutError(
            f"composition: B = {B} has basis strides and a symbolic shape; substitute values "
            "first (Layout.subs)"
        )
    pb = raw_prefix_product(fbs) if len(fbs) > 1 else (1,)
    terms: List[List[Tuple[int, Tuple[Any, ...]]]] = []
    for k, (n, d) in enumerate(zip(fbs, fbd)):
        t = _basis_terms(d) if n > 1 else []
        if any(path == () for _v, path in t):
            raise InadmissibleError(
                f"composition: leaf {k} of B ({n}:{d}) has an integer stride beside coordinate "
                "strides: B's values would add an integer to a coordinate, which is undefined",
                condition="basis strides: one codomain",
                witness=pb[k],
            )
        terms.append(t)
    paths = sorted({path for t in terms for _v, path in t})
    for a, b in zip(paths, paths[1:]):
        if b[: len(a)] == a:
            raise InadmissibleError(
                f"composition: B walks mode {a} of A and also its sub-mode {b}; an integer "
                "coordinate and a sub-coordinate of the same mode do not add",
                condition="basis strides: one mode per leaf",
                witness=None,
            )
    parts: List[List[Tuple[Any, Any]]] = [[] for _ in fbs]
    for p in paths:
        ks = [(k, v) for k, t in enumerate(terms) for v, q in t if q == p]
        sub = _basis_mode(A, p, B)
        if len(ks) == 1:
            k, v = ks[0]
            R = _compose_layout(sub, _make(fbs[k], v))
            parts[k].append((R._shape, R._stride))
            continue
        gs = tuple(fbs[k] for k, _v in ks)
        try:
            R = _compose_layout(sub, _make(gs, tuple(v for _k, v in ks)))
        except InadmissibleError as e:
            if e.witness is not None:  # a coordinate of the group's layout -> one of B
                pp = raw_prefix_product(gs)
                e.witness = sum(((e.witness // q) % fbs[k]) * pb[k] for q, (k, _v) in zip(pp, ks))
            raise
        for j, (k, _v) in enumerate(ks):
            parts[k].append((R._shape[j], R._stride[j]))
    out_s: List[Any] = []
    out_d: List[Any] = []
    for k, n in enumerate(fbs):
        if not parts[k]:
            out_s.append(n)
            out_d.append(0)
        elif len(parts[k]) == 1:
            out_s.append(parts[k][0][0])
            out_d.append(parts[k][0][1])
        else:
            rs, rd = _sum_parts(n, parts[k], pb[k], B)
            out_s.append(rs)
            out_d.append(rd)
    if type(B._shape) is not tuple:
        return _make(out_s[0], out_d[0])
    return _make(raw_unflatten(tuple(out_s), B._shape), raw_unflatten(tuple(out_d), B._stride))


def _sum_parts(n: int, parts: List[Tuple[Any, Any]], unit: int, B: Layout) -> Tuple[Any, Any]:
    """The layout of ``c -> sum_j P_j(c)`` on ``[0, n)`` for layouts ``P_j`` of size ``n``
    (one leaf of B walking several modes of A).  Each ``P_j`` is linear on the pieces of
    its own shape, so the sum is a layout on a common refinement of their shapes: the
    union of their prefix products, when it is a divisor chain.  Otherwise the sum is
    evaluated (up to EXACT_LIMIT coordinates) and recognized as a layout, or refused with
    the first coordinate where no layout agrees (``unit`` maps a leaf coordinate to one
    of B)."""
    Ps = [_make(s, d) for s, d in parts]
    pts = sorted({q for P in Ps for q, s in zip(raw_prefix_product(P._flat()[0]), P._flat()[0]) if s > 1})
    if not pts or pts[0] != 1:
        pts = [1] + pts
    chain = all(b % a == 0 for a, b in zip(pts, pts[1:])) and n % pts[-1] == 0
    if chain:
        ext = [b // a for a, b in zip(pts, pts[1:])] + [n // pts[-1]]
        strides: List[Any] = []
        for q in pts:
            acc: Any = 0
            for P in Ps:
                acc = acc + P(q)
            strides.append(acc)
        R = coalesce(_make(tuple(ext), tuple(strides)) if len(ext) > 1 else _make(ext[0], strides[0]))
        return R._shape, R._stride
    vals: List[Any] = []
    if n <= EXACT_LIMIT:
        for c in range(n):
            acc = 0
            for P in Ps:
                acc = acc + P(c)
            vals.append(acc)
    if vals and all(type(v) is int for v in vals):
        import numpy as np

        modes, w = recognize_layout_fn(
            np.array(vals, dtype=object if max(map(abs, vals)) >= 1 << 62 else np.int64)
        )
        if modes is not None:
            R = _from_modes(list(modes[0]), list(modes[1]))
            return R._shape, R._stride
        witness: Optional[int] = None if w is None else w * unit
    else:
        witness = None
    raise InadmissibleError(
        f"composition: a leaf of B = {B} walks several modes of A, and the sum of their "
        f"compositions ({', '.join(str(P) for P in Ps)}) is "
        + ("no layout" if vals else f"not decided: no common refinement and {n} > EXACT_LIMIT coordinates"),
        condition="basis strides: the sum over modes is a layout",
        witness=witness,
    )


def _compose_general(
    A: Layout, B: Layout, As: List[int], Ad: List[int], fbs: Tuple[Any, ...], fbd: Tuple[Any, ...]
) -> Layout:
    leaves: List[_Leaf] = []
    multi = len(fbs) > 1
    k = 0
    ps: List[Any] = []
    pd: List[Any] = []
    try:
        for n, r in zip(fbs, fbd):
            if type(r) is int and r == 0 and n != 1:  # n:0 stays at A(0) == 0, as _compose_leaf_cute says
                leaves.append(_Leaf([n], [0], {}))
                ps.append(n)
                pd.append(0)
                k += 1
                continue
            lf = _compose_leaf(As, Ad, n, r, k if multi else -1)
            leaves.append(lf)
            if len(lf.ms) == 1:
                ps.append(lf.ms[0])
                pd.append(lf.md[0])
            else:
                ps.append(tuple(lf.ms))
                pd.append(tuple(lf.md))
            k += 1
    except InadmissibleError as e:
        if multi and e.witness is not None:
            e.witness = e.witness * raw_prefix_product(fbs)[k]
        raise
    if multi:
        _check_disjoint(A, B, As, Ad, fbs, fbd, leaves)
    if type(B._shape) is not tuple:
        return _plain(ps[0], pd[0])
    if B._shape is fbs:  # B flat: the result's shape is its flattening when each leaf is one mode
        rs, rd = tuple(ps), tuple(pd)
        for x in rs:
            if type(x) is not int:
                return _plain(rs, rd)
        return _plain(rs, rd, rs, rd)
    return _plain(raw_unflatten(ps, B._shape), raw_unflatten(pd, B._stride))


def _check_disjoint(
    A: Layout,
    B: Layout,
    As: List[int],
    Ad: List[int],
    fbs: Tuple[Any, ...],
    fbd: Tuple[Any, ...],
    leaves: List[_Leaf],
) -> None:
    """Every leaf of B uses digits of A's mixed radix; the by-mode result equals A∘B iff
    adding the leaves' images never carries from one digit of A into the next."""
    moving = 0
    for s, d in zip(fbs, fbd):
        if s != 1 and d != 0:
            moving += 1
    if moving <= 1:
        # at most one leaf of B moves (the others are extent 1 or stride 0, always at
        # offset 0): A(B(c)) is that leaf's composition, there is nothing to add up
        return
    last = len(As) - 1
    decided = True
    wrapping = 0
    for lf in leaves:
        if lf.occ is None:
            decided = False
            break
        if lf.occ:
            wrapping += 1
    if decided and wrapping <= 1:
        # a leaf's own digits stay below each extent (it takes at most s // r steps of
        # stride r in a mode of extent s), so with at most one leaf using digits below
        # A's last mode nothing carries: disjoint
        return
    if not decided:
        w = _search_witness(As, Ad, fbs, fbd)
        if w is None and raw_product(fbs) <= EXACT_LIMIT:
            return
        pp = raw_prefix_product(fbs)
        msg = "composition: the modes of B overlap inside A (disjointness)"
        if w is not None:
            crd = tuple((w // p) % s for p, s in zip(pp, fbs))
            bx = sum(c * d for c, d in zip(crd, fbd))
            naive = sum(ext_eval(As, Ad, c * d) for c, d in zip(crd, fbd))
            msg += (
                f": at coordinate {w} of B, A(B({w})) = A({bx}) = {ext_eval(As, Ad, bx)} but "
                f"the mode-by-mode result gives {naive}"
            )
            raise InadmissibleError(msg, condition="disjointness of B's modes in A", witness=w)
        # nothing decided: no refusal (the by-mode result may well be A o B)
        raise UndecidableConditionError(
            "composition: whether B's modes stay disjoint inside A is undecided -- a leaf of B was "
            "decided by evaluation, and B's domain "
            f"({raw_product(fbs)} coordinates) is too large (> EXACT_LIMIT = {EXACT_LIMIT}) to check the "
            "by-mode result against A(B(.)) everywhere",
            condition="disjointness of B's modes in A",
        )
    occs = [lf.occ for lf in leaves if lf.occ is not None]  # all of them (checked above)
    used: Dict[int, int] = {}
    for occ in occs:
        for i, (dmax, _j) in occ.items():
            used[i] = used.get(i, 0) + dmax
    bad = [i for i in range(last) if used.get(i, 0) >= As[i]]
    if not bad:
        return
    i = bad[0]
    # The witness of sym.composition-exact's prefix argument: the shortest prefix of the leaves
    # landing in mode i (in B's order) whose footprints reach As[i] (each is below As[i], so
    # their sum S has As[i] <= S < 2 As[i]), each leaf at the coordinate reaching its footprint
    # (Â-digits: the footprint in mode i, 0 elsewhere), every other leaf at 0.  There B(c) has
    # digits (S - As[i]) e_i + e_(i+1) while the by-mode result sums S in mode i: they differ by
    # As[i] Ad[i] - Ad[i+1], nonzero since coalesced modes i, i+1 do not merge.
    prefix: Set[int] = set()
    reach = 0
    for j, occ in enumerate(occs):
        if i in occ and reach < As[i]:
            prefix.add(j)
            reach += occ[i][0]
    crd = tuple(occ[i][1] if j in prefix else 0 for j, occ in enumerate(occs))
    pp = raw_prefix_product(fbs)
    w = sum(c * p for c, p in zip(crd, pp))
    bx = sum(c * d for c, d in zip(crd, fbd))
    truth = ext_eval(As, Ad, bx)
    naive = sum(ext_eval(As, Ad, c * d) for c, d in zip(crd, fbd))
    nat = raw_unflatten(crd, B._shape) if type(B._shape) is tuple else crd[0]
    msg = (
        f"composition: the modes of B overlap inside A (disjointness): their images together "
        f"need digit {used[i]} of A's mode {i}, whose extent is {As[i]}, so adding them carries "
        f"into the next mode"
    )
    if w is not None:
        msg += (
            f"; at coordinate {w} = {fmt_htuple(nat)} of B, A(B({w})) = A({bx}) = {truth} but the "
            f"mode-by-mode result gives {naive}"
        )
    raise InadmissibleError(msg, condition="disjointness of B's modes in A", witness=w)


def _search_witness(As: List[int], Ad: List[int], fbs: Tuple[Any, ...], fbd: Tuple[Any, ...]) -> int | None:
    import numpy as np

    total = raw_product(fbs)
    if total > EXACT_LIMIT:
        return None
    if any(isinstance(d, ArithTuple) for d in Ad):  # coordinate strides: per component
        found: Optional[int] = search_witness_by_component(As, Ad, fbs, fbd, _search_witness)
        return found
    if total <= SMALL_EXACT:  # a few coordinates: plain Python beats numpy's per-call overhead
        for w in range(total):
            k = w
            at = by_mode = 0
            for s, d in zip(fbs, fbd):
                c = k % s
                k //= s
                at += c * d
                by_mode += ext_eval(As, Ad, c * d)
            if ext_eval(As, Ad, at) != by_mode:
                return w
        return None
    xmax = sum((sh - 1) * abs(d) for sh, d in zip(fbs, fbd))
    idx = arange_exact(total, ext_bound(As, Ad, xmax) * len(fbs))
    bx = np.zeros(total, dtype=idx.dtype)
    naive = np.zeros(total, dtype=idx.dtype)
    rem = idx.copy()
    for s, d in zip(fbs, fbd):
        c = rem % s
        rem //= s
        bx += c * d
        naive += ext_eval_np(As, Ad, c * d)
    bad = np.nonzero(ext_eval_np(As, Ad, bx) != naive)[0]
    return int(bad[0]) if bad.size else None


# ----- coordinate strides (layoutproof.arith): integer machinery per component
def search_witness_by_component(
    As: List[int], Ad: List[Any], fbs: Tuple[Any, ...], fbd: Tuple[Any, ...], search: Any
) -> Any:
    """The smallest witness any integer component gives (``search`` is the integer search:
    a coordinate of B where the by-mode composition and A(B(.)) differ, or None)."""
    _p, _q, comps = components(Ad)
    ws = [w for w in (search(As, comp, fbs, fbd) for comp in comps) if w is not None]
    return min(ws) if ws else None


def exact_leaf_by_component(
    As: List[int], Ad: List[Any], n: int, r: int, err: Any
) -> Tuple[List[Any], List[Any]]:
    """Composition's exact decision (CuTe's divisibility conditions failed) for coordinate
    strides: is ``j -> Â(r*j)``, ``j < n``, a layout?

    Each integer component must be a layout (else raise ``err`` with the first failing
    index).  A joint layout exists iff the breakpoints (prefix products) of the components'
    coalesced shapes form one divisibility chain: its shape is that chain, its strides are
    the values at the breakpoints, and it is checked against every component."""
    import numpy as np

    _p, _q, comps = components(Ad)
    vals = []
    cuts = {1, n}
    bad: List[int] = []
    for comp in comps:
        v = ext_eval_np(As, comp, arange_exact(n, ext_bound(As, comp, r * n)) * r)
        rec, w = recognize_layout_fn(v)
        if rec is None:
            if w is None:  # pragma: no cover - recognize_layout_fn names the index when it fails
                raise err
            bad.append(w)
            continue
        vals.append((comp, v))
        p = 1
        for s in rec[0]:
            cuts.add(p)
            p *= s
    if bad:
        if err.witness is None:
            err.witness = min(bad)
        raise err
    chain = sorted(cuts)
    if any(b % a for a, b in zip(chain, chain[1:])):
        raise err
    ms = [b // a for a, b in zip(chain, chain[1:])]
    md = [ext_eval(As, Ad, r * c) for c in chain[:-1]]
    for comp, v in vals:
        mc = tuple(ext_eval(As, comp, r * c) for c in chain[:-1])
        got = _make(tuple(ms), mc).eval_all() if ms else np.zeros(1, dtype=np.int64)
        if got.shape != v.shape or bool(np.any(got != v)):  # pragma: no cover - by construction
            raise err
    if not ms:
        return [1], [0]
    rs, rd = coalesce_modes(tuple(ms), tuple(as_basis(d) for d in md))
    return rs, rd


def ext_eval_np(As: List[int], Ad: List[int], x: Any) -> Any:
    off = 0
    last = len(As) - 1
    for i in range(last):
        off = off + (x % As[i]) * Ad[i]
        x = x // As[i]
    return off + x * Ad[last]


@overload
def composition(
    lhs: Layout, rhs: Union[Layout, int, Tuple[Any, ...], List[Any], None, Underscore]
) -> Layout: ...
@overload
def composition(lhs: Any, rhs: Any) -> Any: ...  # a Swizzle, a composed layout, ... on either side
def composition(lhs: Any, rhs: Any) -> Any:
    """``R = lhs ∘ rhs``: ``R(c) = lhs(rhs(c))`` for every coordinate ``c`` of ``rhs``, and
    ``rhs``'s shape is compatible with ``R``'s.

    ``rhs`` may be a Layout, an integer (the layout ``n:1``), or a tuple tiler applied
    mode by mode (``None``/``_`` entries keep the mode; modes of ``lhs`` beyond the tuple
    are dropped, as in CuTe C++).  When ``rhs`` reaches past ``size(lhs)``, ``lhs``'s own
    last mode extends without bound, as in CuTe C++ (a trailing size-1 mode is kept for
    that: ``(4,1):(1,0) ∘ 8:1 == (4,2):(1,0)``).

    CuTe's stride- and shape-divisibility conditions are checked per mode of ``rhs``; where
    they fail, the mode is decided exactly by evaluation (domains up to ``EXACT_LIMIT``):
    a layout is returned when one reproduces ``lhs(rhs(c))``, else InadmissibleError.
    Negative strides in ``rhs`` and overlapping modes of ``rhs`` inside ``lhs``
    (disjointness: adding their images carries between ``lhs``'s digits) raise too, each
    error naming the condition and a witness coordinate of ``rhs``.
    """
    if type(rhs) is Layout and type(lhs) is Layout:
        r = rhs._stride
        if type(r) is int and r == 0 and type(rhs._shape) is int and lhs._sym is False:
            # rhs is n:0: every coordinate goes to lhs(0) == 0, whatever lhs is (once its
            # strides are integers: a coordinate stride's zero is not the integer 0)
            fd = lhs._fd
            if fd is not None:
                for d in fd:
                    if type(d) is not int:
                        break
                else:
                    return rhs  # layouts are values: n:0 itself
        return _compose_layout(lhs, rhs)
    if not isinstance(lhs, Layout):  # other kinds of layouts answer for themselves
        return kinds.call("composition", lhs, rhs)
    if isinstance(rhs, Layout):
        return _compose_layout(lhs, rhs)
    if rhs is None or rhs is _:
        return lhs
    if type(rhs) is not tuple and type(rhs) is not int:
        fn = kinds.lookup("composition", type(rhs))  # a Swizzle, a composed layout, ...
        if fn is not None:
            return fn(lhs, rhs)
    if type(rhs) is tuple or type(rhs) is list:
        check_depth(rhs, "composition tiler")
        s, d = top_modes(lhs)
        if len(rhs) > len(s):
            raise MalformedLayoutError(
                f"composition: the tiler has {len(rhs)} modes but {lhs} has only {len(s)}"
            )
        parts = [composition(_make(s[i], d[i]), t) for i, t in enumerate(rhs)]
        return _make(tuple(p._shape for p in parts), tuple(p._stride for p in parts))
    return _compose_layout(lhs, layout_arg(rhs, "composition"))


# ----------------------------------------------------------------------------- complement
def complement(layout: Layout, cotarget: Any = None) -> Layout:
    """The layout ``C`` such that ``(layout, C)`` is a bijection onto ``[0, cotarget)``
    (rounded up to a multiple of the covered extent), with ``C`` ordered and meeting
    ``layout``'s image only at 0.  ``cotarget`` is an integer or a Shape (default: the
    cosize); a Shape that the covered extent divides evenly keeps its structure (C++),
    one that it does not is rounded up as its size.  Stride-0 and size-1 modes are ignored.

    Raises InadmissibleError when the sorted strides do not chain (``s_{i-1} d_{i-1}``
    must divide ``d_i``): then no complement exists, even for injective layouts such as
    ``(2,2):(1,3)``.

    >>> str(complement(Layout(4, 2), 24))
    '(2,3):(1,8)'
    """
    if not isinstance(layout, Layout):
        need_layout(layout, "complement")
    if cotarget is None:
        cot: Any = layout.cosize
    elif type(cotarget) is int and cotarget > 0:
        cot = cotarget
    else:
        cot = checked_shape(cotarget, "complement cotarget")
    sym = layout._sym
    if sym is None:
        if has_scalar_strides(layout):  # F2 strides (layoutproof.f2)
            result_c: Layout = kinds.call_kind("complement", kinds.STRIDE_SCALARS, layout, cotarget)
            return result_c
        sym = layout.is_symbolic
    if sym or (type(cot) is not int and holds_symbols(cot)):
        result: Layout = kinds.call_symbolic("complement", layout, cot)
        return result
    fs, fd = layout._fs, layout._fd
    if fs is None or fd is None:
        fs, fd = layout._flat()
    modes = []
    k = 0
    for s, d in zip(fs, fd):
        if s != 1 and d != 0:
            if d < 0:
                raise InadmissibleError(
                    f"complement: mode {k} of {layout} has negative stride {d}; a complement fills "
                    "[0, M) and needs non-negative strides",
                    condition="non-negative strides",
                    witness=unit_crd(layout, k),
                )
            modes.append((d, s, k))
        k += 1
    if len(modes) > 1:
        modes.sort()
    rs: List[int] = []
    rd: List[int] = []
    cur = 1
    for d, s, k in modes:
        if d % cur != 0:
            raise InadmissibleError(
                f"complement: admissibility (sorted strides must chain, s_(i-1)*d_(i-1) | d_i): "
                f"mode {k} ({s}:{d}) of {layout} starts at offset {d}, which is not a multiple of "
                f"{cur}, the extent covered by the modes of smaller stride; no layout C makes "
                f"({layout}, C) a bijection",
                condition="complement admissibility (stride chain)",
                witness=unit_crd(layout, k),
            )
        if d // cur > 1:
            rs.append(d // cur)
            rd.append(cur)
        cur = s * d
    if type(cot) is int:  # round the size up
        if not rs:  # a single mode: coalesced already
            n = -(-cot // cur)
            if n == 1:
                return _ONE_ZERO
            return _plain(n, cur, (n,), (cur,))
        rs.append(-(-cot // cur))
        rd.append(cur)
        cs, cd = coalesce_modes(rs, rd)
        return _plain_modes(cs, cd)
    rest = _exact_shape_div(cot, cur)
    if rest is not None:  # C++: the cotarget's structure divided by what L covers
        p = cur
        for e in raw_flatten(rest):
            rs.append(e)
            rd.append(p)
            p *= e
    else:  # an integer cotarget, or a Shape that does not divide evenly: round the size up
        cot = raw_product(cot)
        rs.append(ceil_div_int(cot, cur))
        rd.append(cur)
    cs, cd = coalesce_modes(rs, rd)
    return _plain_modes(cs, cd)


def _exact_shape_div(shape: Tuple[Any, ...], d: int) -> Any:
    """``shape`` divided by ``d`` from the left when every step divides exactly, else None."""
    out = []
    for x in raw_flatten(shape):
        if d % x == 0:
            out.append(1)
            d //= x
        elif x % d == 0:
            out.append(x // d)
            d = 1
        else:
            return None
    return tuple(out)


def unit_crd(L: Layout, k: int) -> int:
    """The 1-D coordinate of L whose flat mode k is 1 and every other mode 0."""
    fs, _fd = L._flat()
    p = 1
    for s in fs[:k]:
        p *= s
    return p


# ----------------------------------------------------------------------------- inverses
@overload
def right_inverse(layout: Layout) -> Layout: ...
@overload
def right_inverse(layout: Any) -> Any: ...  # another kind of layout (kinds registry)
def right_inverse(layout: Any) -> Any:
    """A right inverse ``R``: ``layout(R(i)) == i`` for every ``i < size(R)``.

    Follows the chain of positive strides 1, s0*d0, ... of the coalesced layout, taking at
    each step the first mode whose stride continues it and skipping the others (CuTe C++);
    negative strides are never followed (their inverse would leave the domain).

    >>> str(right_inverse(Layout((4, 2), (2, 1))))
    '(2,4):(4,1)'

    A swizzled layout ``Sw o 0 o B`` gets C++'s ``right_inverse(B) o Sw`` (checked).
    """
    if not isinstance(layout, Layout):
        fn = kinds.lookup("right_inverse", type(layout))  # other kinds of layouts answer for themselves
        if fn is not None:
            return fn(layout)
        layout = layout_arg(layout, "right_inverse")
    n = layout._shape
    if type(n) is int and type(layout._stride) is int:  # one integer mode: n:1 inverts itself
        return _plain(n, 1, (n,), (1,)) if layout._stride == 1 and n != 1 else _ONE_ZERO
    sym = layout._sym
    if sym is None:
        if has_scalar_strides(layout):  # F2 strides (layoutproof.f2)
            result_k: Layout = kinds.call_kind("right_inverse", kinds.STRIDE_SCALARS, layout)
            return result_k
        sym = layout.is_symbolic
    if sym:
        return kinds.call_symbolic("right_inverse", layout)
    fs, fd = layout._fs, layout._fd
    if fs is None or fd is None:
        fs, fd = layout._flat()
    cs, cd = coalesce_modes(fs, fd)
    pp: List[int] = []
    acc = 1
    for c in cs:  # the prefix products of the (flat) coalesced shape
        pp.append(acc)
        acc *= c
    rs: List[int] = []
    rd: List[int] = []
    cur = 1
    # a mode taken has extent >= 2 (coalesced), so cur grows past its stride: it is never
    # taken again, and the first mode whose stride is cur is the first unused one
    while True:
        for i, d in enumerate(cd):
            if d == cur:
                rs.append(cs[i])
                rd.append(pp[i])
                cur = cs[i] * d
                break
        else:
            break
    if not rs:
        if _has_coord_strides(layout):  # no integer chain: invert each codomain axis
            return _coord_inverse(layout, right_inverse, "right_inverse")
        return _ONE_ZERO
    if len(rs) == 1:  # one mode of the coalesced layout, extent > 1
        return _plain(rs[0], rd[0], (rs[0],), (rd[0],))
    ms, md = coalesce_modes(rs, rd)
    return _plain_modes(ms, md)


# left_inverse's exact search (see _left_inverse_search and docs/semantics.md §4): layouts
# of up to this many coordinates with offsets below LEFT_INVERSE_OFFSET_LIMIT are decided;
# the search visits at most LEFT_INVERSE_BUDGET states (a row under a chain; past it:
# undecided, and it raises). 8,000 states take about 1-3 s.
LEFT_INVERSE_SIZE_LIMIT = 1 << 12
LEFT_INVERSE_OFFSET_LIMIT = 1 << 14
LEFT_INVERSE_BUDGET = 8_000


def _has_coord_strides(L: Layout) -> bool:
    for d in L._flat()[1]:
        if type(d) is not int and getattr(type(d), "_lp_coordinate", False):
            return True
    return False


def _coord_inverse(L: Layout, inverse: Any, op: str) -> Layout:
    """The inverse of a layout with coordinate strides, one codomain axis at a time
    (PyCuTe's generalization): for each leaf ``e`` of the coprofile, the modes whose
    stride is a multiple of ``E(e)`` form an integer layout (the other modes get stride
    0), which is inverted; the inverse has one mode per axis, in the nesting of the
    coprofile, and takes a natural coordinate of the codomain.  The modes of different
    axes are disjoint, so the index digits of the axes add without carries:
    ``L(R(c)) == c`` (right) and ``R(L(i)) == i`` for injective L (left).  A left inverse
    needs every stride to lie on one axis (a stride such as ``(1,1)`` mixes two, and its
    digit can be read back from neither); the right inverse leaves such modes out."""
    fs, fd = L._flat()
    if any(type(n) is not int for n in fs):
        raise MalformedLayoutError(
            f"{op}: {L} has coordinate strides and a symbolic shape; substitute values first"
        )
    prof, paths, comps = components(fd)
    pure: List[Optional[int]] = []  # the axis (index into paths) each leaf lies on, if one
    for k in range(len(fs)):
        axes = [a for a in range(len(paths)) if comps[a][k] != 0]
        if len(axes) > 1 and fs[k] > 1:
            if op == "left_inverse":
                raise InadmissibleError(
                    f"left_inverse({L}): leaf {k} has the stride {fd[k]}, which moves along "
                    "two axes of the codomain at once; inverting axis by axis reads each "
                    "index digit back from one axis",
                    condition="basis strides: one axis per leaf",
                    witness=raw_prefix_product(fs)[k] if len(fs) > 1 else 1,
                )
            pure.append(None)
        else:
            pure.append(axes[0] if axes else None)
    pp = raw_prefix_product(fs) if len(fs) > 1 else (1,)
    shp_all = fs if len(fs) > 1 else fs[0]
    parts: List[Layout] = []
    for a in range(len(paths)):
        masked = tuple(comps[a][k] if pure[k] == a else 0 for k in range(len(fs)))
        M = _make(shp_all, masked if len(fs) > 1 else masked[0])
        R = inverse(M)
        if op == "left_inverse":
            # R(M(i)) must be the part of i on this axis's modes (the other digits come
            # from the other axes); C++'s construction gives it, the exact search may
            # give another preimage, and then the axis's own modes are inverted alone
            part = _make(
                shp_all, tuple(pp[k] if pure[k] == a else 0 for k in range(len(fs))) if len(fs) > 1 else 1
            )
            if not _reads_back(R, M, part, L, op):
                ks = [k for k in range(len(fs)) if pure[k] == a and fs[k] > 1]
                sub = _make(tuple(fs[k] for k in ks), tuple(comps[a][k] for k in ks))
                embed = _make(tuple(fs[k] for k in ks), tuple(pp[k] for k in ks))
                try:
                    R = composition(embed, inverse(sub))
                except InadmissibleError:
                    R = None
                if R is None or not _reads_back(R, M, part, L, op):
                    raise InadmissibleError(
                        f"left_inverse({L}): axis {paths[a]} of the codomain is not inverted by a "
                        "layout that reads back its own modes' index digits",
                        condition="basis strides: each axis inverted alone",
                        witness=None,
                    )
        parts.append(R)
    it = iter(parts)

    def build(p: Any) -> Tuple[Any, Any]:
        if type(p) is tuple:
            sub = [build(e) for e in p]
            return tuple(x for x, _y in sub), tuple(y for _x, y in sub)
        P = next(it)
        return P._shape, P._stride

    shp, strd = build(prof)
    return _make(shp, strd)


def _reads_back(R: Layout, M: Layout, part: Layout, L: Layout, op: str) -> bool:
    """``R(M(i)) == part(i)`` for every ``i`` (up to EXACT_LIMIT coordinates)."""
    if M.size > EXACT_LIMIT:
        raise UndecidableConditionError(
            f"{op}({L}): checking an axis's inverse takes {M.size} > EXACT_LIMIT ({EXACT_LIMIT}) evaluations",
            condition="axis inverse checked by evaluation",
        )
    n = R.size
    for i in range(M.size):
        y = M(i)
        if not 0 <= y < n or R(y) != part(i):
            return False
    return True


def _primes_upto(n: int) -> List[int]:
    if n < 2:
        return []
    sieve = bytearray([1]) * (n + 1)
    sieve[0] = sieve[1] = 0
    for i in range(2, int(n**0.5) + 1):
        if sieve[i]:
            sieve[i * i :: i] = bytearray(len(sieve[i * i :: i]))
    return [i for i in range(2, n + 1) if sieve[i]]


class _SearchBudget(Exception):
    """The exact left-inverse search ran out of its budget (undecided)."""


_Modes = Tuple[List[int], List[int]]


def _left_inverse_search(ys: List[int], pre: Dict[int, List[int]], ymax: int) -> Optional[_Modes]:
    """Decide exactly whether a layout R with ``R(y) in pre[y]`` for every ``y`` in ``ys``
    exists (``ys``: the positive offsets of L, ascending; ``pre[y]``: the coordinates L maps
    to ``y``); return its flat modes, None when there is none, raise _SearchBudget when
    undecided.

    Every layout R is, on ``[0, ymax]``, ``R(y) = sum_j a_j * floor(y / T_j)`` with ``1 =
    T_0 | T_1 | ... | T_k <= ymax`` the prefix products of its shape (leaves of extent 1
    and leaves past ``ymax`` dropped) and integers ``a_j`` (``a_j = e_j - t_{j-1} e_{j-1}``
    from its strides); conversely every such sum is a layout (``e_j = a_j + t_{j-1}
    e_{j-1}``, the last extent ``ymax // T_k + 1``).  Refining the chain adds columns, so a
    solution exists iff one exists on a chain whose every ratio ``T_{j+1}/T_j`` is prime.
    The search enumerates those chains depth first, inserting each chain element just
    before the first offset it reaches, and solves the integer system row by row (offsets
    ascending) by column Hermite reduction: a row whose reduced entries past the current
    rank vanish determines ``R(y)`` (checked against ``pre[y]``), any other row takes a
    new pivot, and then each allowed value whose pivot division is exact is a branch.
    Rows see only the chain elements at or below them, so the enumeration is exhaustive.
    """
    primes = _primes_upto(ymax)
    budget = LEFT_INVERSE_BUDGET
    skip = _RowSkipper(ys, pre, ymax, primes)
    # depth-first over states (row i, chain, U, z) with an explicit stack (a layout has
    # thousands of offsets: no recursion per row).  chain: the T_j; U: the unimodular
    # column transform (U[j] is column j); z: the values of the pivots (rank = len(z)).
    stack: List[Tuple[int, List[int], List[List[int]], List[int]]] = [(0, [1], [[1]], [])]
    while stack:
        i, chain, U, z = stack.pop()
        if i == len(ys):
            c = len(chain)
            a = [sum(U[col][row] * (z[col] if col < len(z) else 0) for col in range(c)) for row in range(c)]
            return _chain_layout(chain, a, ymax)
        budget -= 1
        if budget < 0:
            raise _SearchBudget
        # rows that allow no insertion and that the current solution already satisfies
        # (their reduced entries past the rank vanish and R(y) is allowed) change nothing:
        # skip them in one vectorized step; a violated one ends this state
        i = skip.next_event(i, chain, U, z)
        if i < 0:
            continue
        if i == len(ys):
            stack.append((i, chain, U, z))
            continue
        y = ys[i]
        children: List[Tuple[int, List[int], List[List[int]], List[int]]] = []
        # option 1: the next chain element lies above y -- process y now
        res = _li_row(y, chain, U, z, pre[y])
        if res is not None:
            children.extend((i + 1, chain, U2, z2) for U2, z2 in res)
        # option 2: insert the next chain element T*p <= y (p prime), then decide again
        top = chain[-1]
        c = len(chain)
        for p in primes:
            t = top * p
            if t > y:
                break
            if i > 0 and t <= ys[i - 1]:
                continue  # it would reach an earlier row: inserted there instead
            children.append((i, chain + [t], [col + [0] for col in U] + [[0] * c + [1]], z))
        stack.extend(reversed(children))
    return None


class _RowSkipper:
    """Vectorized fast-forward over the rows of the left-inverse search (numpy)."""

    def __init__(self, ys: List[int], pre: Dict[int, List[int]], ymax: int, primes: List[int]) -> None:
        import numpy as np

        self.np = np
        self.Y = np.array(ys, dtype=np.int64)
        self.prev = np.concatenate([np.zeros(1, dtype=np.int64), self.Y[:-1]])
        pi = np.zeros(ymax + 2, dtype=np.int64)
        if primes:
            pi[np.array(primes, dtype=np.int64)] = 1
        self.pi = np.cumsum(pi)  # pi[x] = number of primes <= x
        n = 1 + max((max(v) for v in pre.values()), default=0)
        # owner[x] = the offset coordinate x maps to (-1: none), to test R(y) in pre[y]
        self.owner = np.full(n, -1, dtype=np.int64)
        for y, cs in pre.items():
            self.owner[np.array(cs, dtype=np.int64)] = y

    def next_event(self, i: int, chain: List[int], U: List[List[int]], z: List[int]) -> int:
        """The first row >= i that allows an insertion, takes a new pivot, or is violated
        (-1 if that row is violated and allows no insertion), len(ys) if none."""
        np = self.np
        n = len(self.Y)
        if n - i < 48:  # a few rows: the per-row path is cheaper than numpy's overhead
            return i
        c, r = len(chain), len(z)
        top = chain[-1]
        big = max((abs(x) for col in U for x in col), default=1) * max(1, int(self.Y[-1])) * c
        zmax = max((abs(x) for x in z), default=1)
        if big * max(1, zmax) * max(1, r) >= 1 << 62:
            return i  # no vectorized shortcut where int64 could overflow
        Um = np.array(U, dtype=np.int64).T  # Um[row][col]
        T = np.array(chain, dtype=np.int64)
        zv = np.array(z, dtype=np.int64)
        start, step = i, 64
        while start < n:
            stop = min(n, start + step)
            Yk = self.Y[start:stop]
            ins = (self.pi[Yk // top] - self.pi[self.prev[start:stop] // top]) > 0
            if start == 0:
                ins[0] = self.pi[int(Yk[0]) // top] > 0
            WU = (Yk[:, None] // T[None, :]) @ Um
            indep = (WU[:, r:] != 0).any(axis=1)
            known = WU[:, :r] @ zv if r else np.zeros(len(Yk), dtype=np.int64)
            inside = (known >= 0) & (known < len(self.owner))
            ok = np.zeros(len(Yk), dtype=bool)
            ok[inside] = self.owner[known[inside]] == Yk[inside]
            event = np.flatnonzero(ins | indep | ~ok)
            if event.size:
                k = int(event[0])
                if not ins[k] and not indep[k] and not ok[k]:
                    return -1
                return start + k
            start, step = stop, step * 4
        return n


def _li_row(
    y: int, chain: List[int], U: List[List[int]], z: List[int], allowed: List[int]
) -> Optional[List[Any]]:
    """One row of the left-inverse search: the states after requiring R(y) in ``allowed``."""
    c = len(chain)
    r = len(z)
    w = [y // t for t in chain]
    wu = [sum(w[row] * U[col][row] for row in range(c)) for col in range(c)]
    known = sum(wu[col] * z[col] for col in range(r))
    if all(wu[col] == 0 for col in range(r, c)):
        return [(U, z)] if known in allowed else None
    # gather the gcd of wu[r:] into column r by unimodular column operations
    U = [col[:] for col in U]
    wu = wu[:]
    for col in range(r + 1, c):
        while wu[col] != 0:
            q = wu[r] // wu[col]
            wu[r] -= q * wu[col]
            U[r] = [x - q * y2 for x, y2 in zip(U[r], U[col])]
            wu[r], wu[col] = wu[col], wu[r]
            U[r], U[col] = U[col], U[r]
    h = wu[r]
    out = []
    for v in allowed:
        num = v - known
        if num % h == 0:
            out.append((U, z + [num // h]))
    return out or None


def _chain_layout(chain: List[int], a: List[int], ymax: int) -> _Modes:
    """The flat modes of ``y -> sum_j a_j floor(y / chain[j])`` on ``[0, ymax]``."""
    ts = [chain[j + 1] // chain[j] for j in range(len(chain) - 1)] + [ymax // chain[-1] + 1]
    es: List[int] = []
    for j, aj in enumerate(a):
        es.append(aj + (ts[j - 1] * es[j - 1] if j else 0))
    return ts, es


def _left_inverse_exact(layout: Layout, err: InadmissibleError) -> Layout:
    """C++'s construction does not apply: decide exactly whether a layout R with
    ``L(R(L(i))) == L(i)`` for every ``i`` (``R(L(i)) == i`` when L is injective) exists,
    and return one (checked at every coordinate), or raise."""
    import numpy as np

    n = layout.size
    fs, fd = layout._flat()
    if any(type(d) is not int for d in fd):
        raise err
    if n > LEFT_INVERSE_SIZE_LIMIT or layout.cosize > LEFT_INVERSE_OFFSET_LIMIT:
        # C++'s construction is only sufficient: past the search's bounds nothing is decided
        raise UndecidableConditionError(
            f"{err} -- and the exact search that would look for another left inverse is limited "
            f"to layouts of at most {LEFT_INVERSE_SIZE_LIMIT} coordinates and offsets below "
            f"{LEFT_INVERSE_OFFSET_LIMIT} (undecided: a left inverse may still exist)",
            condition=err.condition,
        ) from None
    v = layout.eval_all()
    neg = np.flatnonzero(v < 0)
    if neg.size:
        i = int(neg[0])
        raise InadmissibleError(
            f"left_inverse: {layout} maps coordinate {i} to the negative offset {int(v[i])}, "
            "which is in the domain of no layout R, so no left inverse exists",
            condition="non-negative strides",
            witness=i,
        ) from None
    pre: Dict[int, List[int]] = {}
    for i, y in enumerate(v.tolist()):
        pre.setdefault(y, []).append(i)
    ys = sorted(y for y in pre if y != 0)
    ymax = ys[-1] if ys else 0
    if not ys:
        return _make(1, 0)
    try:
        found = _left_inverse_search(ys, pre, ymax)
    except _SearchBudget:
        raise UndecidableConditionError(
            f"{err} -- and the exact search for another left inverse ran out of its budget "
            f"({LEFT_INVERSE_BUDGET} states; layoutproof.ops.LEFT_INVERSE_BUDGET) (undecided: a left "
            "inverse may still exist)",
            condition=err.condition,
        ) from None
    if found is None:
        injective = len(pre) == n
        raise InadmissibleError(
            f"{err} -- and no layout R with "
            + ("R(L(i)) == i" if injective else "L(R(L(i))) == L(i)")
            + " for every i exists (exact search, docs/semantics.md §4)",
            condition=err.condition,
            witness=err.witness,
        ) from None
    cs, cd = coalesce_modes(tuple(found[0]), tuple(found[1]))
    R = _from_modes(cs, cd)
    idx = R.eval_all()[v] if R.size > ymax else None
    if idx is None or int(idx.min()) < 0 or int(idx.max()) >= n or not np.array_equal(v[idx], v):
        raise InadmissibleError(  # pragma: no cover - the search's answers satisfy this
            f"{err} -- and the exact search's candidate {R} failed its check",
            condition=err.condition,
            witness=err.witness,
        ) from None
    return R


@overload
def left_inverse(layout: Layout) -> Layout: ...
@overload
def left_inverse(layout: Any) -> Any: ...  # another kind of layout (kinds registry)
def left_inverse(layout: Any) -> Any:
    """``R`` with ``R(layout(i)) == i`` for every ``i`` when ``layout`` is injective, and
    ``layout(R(layout(i))) == layout(i)`` always (stride-0 modes are ignored).

    As CuTe C++: sort the non-zero strides ``d0 < d1 < ...`` of the coalesced layout; then
    ``R = (d0, d1/d0, ..., s_last) : (0, p0, p1, ...)`` with ``p`` the prefix products of
    the shape, so offsets between two strides land in the lower mode.  Raises
    InadmissibleError for negative strides, for a stride that does not divide the next
    one (left-inverse divisibility), and for modes that overlap (``s_k*d_k > d_(k+1)``,
    where no quasi-inverse exists).

    >>> str(left_inverse(Layout(4, 2)))
    '(2,4):(0,1)'
    >>> str(left_inverse(Layout((2, 2), (1, 3))))
    '(3,2):(1,2)'

    Where C++'s construction fails (a stride that does not divide the next, overlapping
    modes), the answer is decided exactly by a bounded exhaustive search (docs/semantics.md
    §4): a left inverse is returned whenever one exists.  A swizzled layout ``Sw o 0 o B``
    gets C++'s ``left_inverse(B) o Sw`` (checked).
    """
    if not isinstance(layout, Layout):
        fn = kinds.lookup("left_inverse", type(layout))  # other kinds of layouts answer for themselves
        if fn is not None:
            return fn(layout)
        layout = layout_arg(layout, "left_inverse")
    if layout._sym is None and has_scalar_strides(layout):  # F2 strides (layoutproof.f2)
        result_k: Layout = kinds.call_kind("left_inverse", kinds.STRIDE_SCALARS, layout)
        return result_k
    if _symq(layout):
        return kinds.call_symbolic("left_inverse", layout)
    try:
        return _left_inverse_cute(layout)
    except InadmissibleError as e:
        if e.condition == "integer strides" and _has_coord_strides(layout):
            return _coord_inverse(layout, left_inverse, "left_inverse")
        if e.condition in ("non-negative strides", "integer strides"):
            raise  # a negative offset is in no layout's domain
        return _left_inverse_exact(layout, e)


def _left_inverse_cute(layout: Layout) -> Layout:
    """C++ 2025's construction; InadmissibleError where it does not give a left inverse."""
    cs, cd = coalesced_modes(layout)
    pp = raw_prefix_product(tuple(cs))
    modes = []
    for i, (s, d) in enumerate(zip(cs, cd)):
        if d == 0 or s == 1:
            continue
        if d < 0:
            raise InadmissibleError(
                f"left_inverse: {layout} has negative stride {d}; its offsets are negative and "
                "no layout maps them back",
                condition="non-negative strides",
                witness=pp[i],
            )
        modes.append((d, cs[i], pp[i]))
    if not modes:
        return _make(1, 0)
    modes.sort()
    rs: List[int] = [modes[0][0]]
    rd: List[int] = [0]
    for k in range(1, len(modes)):
        (d0, s0, p0), (d1, s1, p1) = modes[k - 1], modes[k]
        if d1 % d0 != 0:
            raise InadmissibleError(
                f"left_inverse: divisibility: the stride {d1} of mode {s1}:{d1} is not a multiple "
                f"of the next smaller stride {d0}",
                condition="left-inverse divisibility",
                witness=p1,
            )
        if s0 * d0 > d1:
            raise InadmissibleError(
                f"left_inverse: the modes {s0}:{d0} and {s1}:{d1} of coalesce({layout}) overlap "
                f"(offset {d1} is reached by both), so no layout inverts it",
                condition="injectivity (non-overlapping modes)",
                witness=(d1 // d0) * p0,
            )
        rs.append(d1 // d0)
        rd.append(p0)
    rs.append(modes[-1][1])
    rd.append(modes[-1][2])
    ms, md = coalesce_modes(rs, rd)
    return _from_modes(ms, md)


# ----------------------------------------------------------------------------- divides
def _tiler_layout(t: Any, op: str) -> Layout:
    return t if isinstance(t, Layout) else layout_arg(t, op)


@overload
def logical_divide(layout: Layout, tiler: Any) -> Layout: ...
@overload
def logical_divide(layout: Any, tiler: Any) -> Any: ...  # another kind of layout (kinds registry)
def logical_divide(layout: Any, tiler: Any) -> Any:
    """``layout ∘ (tiler, complement(tiler, size(layout)))``: mode 0 is the tile, mode 1
    the tiles' arrangement.  A tuple tiler divides mode by mode (extra modes are kept).

    >>> str(logical_divide(Layout(16, 1), Layout(4, 2)))
    '(4,(2,2)):(2,(1,8))'
    """
    if not isinstance(layout, Layout):  # other kinds of layouts answer for themselves
        return kinds.call("logical_divide", layout, tiler)
    need_layout(layout, "logical_divide")
    if tiler is None or tiler is _:
        return layout
    if type(tiler) is tuple or type(tiler) is list:
        return _by_mode_tiler(layout, tuple(tiler), logical_divide, "logical_divide")
    B = _tiler_layout(tiler, "logical_divide")
    C = complement(B, layout.size)
    if B._sym is False and C._sym is False:  # concrete: (B, C) is too, with its flattening
        bs, bd = B._flat()
        cs, cd = C._flat()
        BC = _plain((B._shape, C._shape), (B._stride, C._stride), bs + cs, bd + cd)
    else:
        BC = _make((B._shape, C._shape), (B._stride, C._stride))
    return composition(layout, BC)  # the public call: explain reads it off a traceback


def _by_mode_tiler(layout: Layout, tiler: Tuple[Any, ...], fn: Any, op: str) -> Layout:
    check_depth(tiler, f"{op} tiler")
    s, d = top_modes(layout)
    if len(tiler) > len(s):
        raise MalformedLayoutError(f"{op}: the tiler has {len(tiler)} modes but {layout} has only {len(s)}")
    parts = [fn(_make(s[i], d[i]), t) for i, t in enumerate(tiler)]
    parts += [_make(s[i], d[i]) for i in range(len(tiler), len(s))]
    return _make(tuple(p._shape for p in parts), tuple(p._stride for p in parts))


def _hier_unzip(fn: Any, layout: Layout, tiler: Any, op: str) -> Layout:
    if tiler is None or tiler is _:
        return _make((1, layout._shape), (0, layout._stride))
    if type(tiler) is tuple or type(tiler) is list:
        tiler = tuple(tiler)
        s, d = top_modes(layout)
        if len(tiler) > len(s):
            raise MalformedLayoutError(
                f"{op}: the tiler has {len(tiler)} modes but {layout} has only {len(s)}"
            )
        split = [_hier_unzip(fn, _make(s[i], d[i]), t, op) for i, t in enumerate(tiler)]
        s0 = tuple([p._shape[0] for p in split])
        d0 = tuple([p._stride[0] for p in split])
        s1 = tuple([p._shape[1] for p in split]) + s[len(tiler) :]
        d1 = tuple([p._stride[1] for p in split]) + d[len(tiler) :]
        if layout._sym is False and _concrete(*split):
            return _plain((s0, s1), (d0, d1))
        return _make((s0, s1), (d0, d1))
    R: Layout = fn(layout, tiler)
    return R


def _concrete(*Ls: Layout) -> bool:
    """Are all the layouts known concrete (no SymPy leaf, no F2 stride)?"""
    for L in Ls:
        if L._sym is not False:
            return False
    return True


def _unzip_entry(fn: Any, layout: Layout, tiler: Any, op: str) -> Layout:
    """Public entry of the zipped operations: the tiler's depth is checked once here."""
    if type(tiler) is tuple or type(tiler) is list:
        check_depth(tiler, f"{op} tiler")
    return _hier_unzip(fn, layout, tiler, op)


@overload
def zipped_divide(layout: Layout, tiler: Any) -> Layout: ...
@overload
def zipped_divide(layout: Any, tiler: Any) -> Any: ...  # another kind of layout (kinds registry)
def zipped_divide(layout: Any, tiler: Any) -> Any:
    """``((tile modes...), (rest modes...))``: the logical divide with the tile parts
    gathered in mode 0 and everything else in mode 1.

    >>> str(zipped_divide(Layout((8, 6)), (4, 3)))
    '((4,3),(2,2)):((1,8),(4,24))'
    """
    if not isinstance(layout, Layout):  # other kinds of layouts answer for themselves
        return kinds.call("zipped_divide", layout, tiler)
    need_layout(layout, "zipped_divide")
    return _unzip_entry(logical_divide, layout, tiler, "zipped_divide")


def _tiled(Z: Layout) -> Layout:
    s1, d1 = Z._shape[1], Z._stride[1]
    if type(s1) is not tuple:
        s1, d1 = (s1,), (d1,)
    if Z._sym is False:
        return _plain((Z._shape[0],) + s1, (Z._stride[0],) + d1)
    return _make((Z._shape[0],) + s1, (Z._stride[0],) + d1)


def _flat2(Z: Layout) -> Layout:
    s0, d0 = top_modes(_make(Z._shape[0], Z._stride[0]))
    s1, d1 = top_modes(_make(Z._shape[1], Z._stride[1]))
    return _make(s0 + s1, d0 + d1)


@overload
def tiled_divide(layout: Layout, tiler: Any) -> Layout: ...
@overload
def tiled_divide(layout: Any, tiler: Any) -> Any: ...  # another kind of layout (kinds registry)
def tiled_divide(layout: Any, tiler: Any) -> Any:
    """``((tile modes...), rest0, rest1, ...)``."""
    if not isinstance(layout, Layout):  # other kinds of layouts answer for themselves
        return kinds.call("tiled_divide", layout, tiler)
    return _tiled(zipped_divide(layout, tiler))


@overload
def flat_divide(layout: Layout, tiler: Any) -> Layout: ...
@overload
def flat_divide(layout: Any, tiler: Any) -> Any: ...  # another kind of layout (kinds registry)
def flat_divide(layout: Any, tiler: Any) -> Any:
    """``(tile0, tile1, ..., rest0, rest1, ...)``."""
    if not isinstance(layout, Layout):  # other kinds of layouts answer for themselves
        return kinds.call("flat_divide", layout, tiler)
    return _flat2(zipped_divide(layout, tiler))


# ----------------------------------------------------------------------------- products
@overload
def logical_product(block: Layout, tiler: Any) -> Layout: ...
@overload
def logical_product(block: Any, tiler: Any) -> Any: ...  # another kind of layout (kinds registry)
def logical_product(block: Any, tiler: Any) -> Any:
    """``(block, complement(block, size(block)*cosize(tiler)) ∘ tiler)``: ``block``
    repeated over the arrangement ``tiler``.  A tuple tiler multiplies mode by mode; an
    integer ``n`` is the layout ``n:1`` (legacy pycute computes a divide there).

    >>> str(logical_product(Layout((2, 2), (4, 1)), Layout(6, 1)))
    '((2,2),(2,3)):((4,1),(2,8))'
    """
    if not isinstance(block, Layout):  # other kinds of layouts answer for themselves
        return kinds.call("logical_product", block, tiler)
    need_layout(block, "logical_product")
    if tiler is None or tiler is _:
        return block
    if type(tiler) is tuple or type(tiler) is list:
        return _by_mode_tiler(block, tuple(tiler), logical_product, "logical_product")
    B = _tiler_layout(tiler, "logical_product")
    C = complement(block, block.size * B.cosize)
    R = composition(C, B)
    if block._sym is False and R._sym is False:
        return _plain((block._shape, R._shape), (block._stride, R._stride))
    return _make((block._shape, R._shape), (block._stride, R._stride))


def zipped_product(block: Layout, tiler: Any) -> Layout:
    """``((block modes...), (product modes...))``."""
    need_layout(block, "zipped_product")
    return _unzip_entry(logical_product, block, tiler, "zipped_product")


def tiled_product(block: Layout, tiler: Any) -> Layout:
    """``((block modes...), product0, product1, ...)``."""
    return _tiled(zipped_product(block, tiler))


def flat_product(block: Layout, tiler: Any) -> Layout:
    """``(block0, block1, ..., product0, product1, ...)``."""
    return _flat2(zipped_product(block, tiler))


def _padded(L: Layout, n: int) -> Layout:
    s, d = top_modes(L)
    k = n - len(s)
    return _make(s + (1,) * k, d + (0,) * k)


def _zip_product(block: Layout, tiler: Any, op: str, raked: bool) -> Layout:
    need_layout(block, op)
    B = _tiler_layout(tiler, op)
    r = max(block.rank, B.rank)
    pa, pb = _padded(block, r), _padded(B, r)
    P = logical_product(pa, pb)
    A0 = _make(P._shape[0], P._stride[0])
    A1 = _make(P._shape[1], P._stride[1])
    firsts, seconds = (A1, A0) if raked else (A0, A1)
    out_s = tuple((firsts[i]._shape, seconds[i]._shape) for i in range(r))
    out_d = tuple((firsts[i]._stride, seconds[i]._stride) for i in range(r))
    return _make(out_s, out_d)


@overload
def blocked_product(block: Layout, tiler: Any) -> Layout: ...
@overload
def blocked_product(block: Any, tiler: Any) -> Any: ...  # another kind of layout (kinds registry)
def blocked_product(block: Any, tiler: Any) -> Any:
    """Mode ``i`` is ``(block_i, arrangement_i)``: whole blocks laid out by ``tiler``.

    >>> str(blocked_product(Layout((2, 2), (1, 2)), Layout((2, 3), (3, 1))))
    '((2,2),(2,3)):((1,12),(2,4))'
    """
    if not isinstance(block, Layout):  # other kinds of layouts answer for themselves
        return kinds.call("blocked_product", block, tiler)
    return _zip_product(block, tiler, "blocked_product", raked=False)


@overload
def raked_product(block: Layout, tiler: Any) -> Layout: ...
@overload
def raked_product(block: Any, tiler: Any) -> Any: ...  # another kind of layout (kinds registry)
def raked_product(block: Any, tiler: Any) -> Any:
    """Mode ``i`` is ``(arrangement_i, block_i)``: the blocks' elements interleaved."""
    if not isinstance(block, Layout):  # other kinds of layouts answer for themselves
        return kinds.call("raked_product", block, tiler)
    return _zip_product(block, tiler, "raked_product", raked=True)


@overload
def tile_to_shape(block: Layout, trg_shape: Any, order: Any = ...) -> Layout: ...
@overload
def tile_to_shape(
    block: Any, trg_shape: Any, order: Any = ...
) -> Any: ...  # another kind of layout (kinds registry)
def tile_to_shape(block: Any, trg_shape: Any, order: Any = None) -> Any:
    """Repeat ``block`` (a blocked product) until it has the shape ``trg_shape``; the
    repetitions are ordered by ``order`` (default column-major).  Each mode of the target
    must be a multiple of the block's."""
    if not isinstance(block, Layout):  # other kinds of layouts answer for themselves
        return kinds.call("tile_to_shape", block, trg_shape, order)
    need_layout(block, "tile_to_shape")
    trg = checked_shape(trg_shape, "tile_to_shape target")
    ts = trg if type(trg) is tuple else (trg,)
    if block.rank > len(ts):
        raise MalformedLayoutError(
            f"tile_to_shape: block {block} has more modes than the target shape {fmt_htuple(trg)}"
        )
    pb = _padded(block, len(ts))
    bshape = tuple(raw_product(e) for e in pb._shape)
    tshape = tuple(raw_product(e) for e in ts)
    if _symq(block) or holds_symbols(trg):
        for i, (t, b) in enumerate(zip(tshape, bshape)):
            kinds.call_symbolic("block_divides", t, b, i)
        pshape = tuple(kinds.call_symbolic("xdiv", t, b) for t, b in zip(tshape, bshape))
        R = coalesce(blocked_product(pb, make_ordered_layout(pshape, order)), pshape)
        return R if type(trg) is tuple else R[0]
    for i, (t, b) in enumerate(zip(tshape, bshape)):
        if t % b != 0:
            raise InadmissibleError(
                f"tile_to_shape: mode {i} of the target ({t}) is not a multiple of the block's ({b})",
                condition="block divides target",
                witness=None,
            )
    pshape = tuple(t // b for t, b in zip(tshape, bshape))
    R = coalesce(blocked_product(pb, make_ordered_layout(pshape, order)), pshape)
    return R if type(trg) is tuple else R[0]


# ----------------------------------------------------------------------------- compatibility
def _compat(a: Any, b: Any) -> bool:
    if type(a) is tuple:
        return type(b) is tuple and len(a) == len(b) and all(_compat(x, y) for x, y in zip(a, b))
    return bool(a == raw_product(b))


def compatible(a: Any, b: Any) -> bool:
    """Shape ``a`` is compatible with shape ``b``: same size, and every coordinate of ``a``
    is a coordinate of ``b`` (layouts compare their shapes).  A partial order."""
    sa = a._shape if isinstance(a, Layout) else checked_shape(a, "compatible argument")
    sb = b._shape if isinstance(b, Layout) else checked_shape(b, "compatible argument")
    if holds_symbols(sa) or holds_symbols(sb):
        result: bool = kinds.call_symbolic("compatible", sa, sb)
        return result
    return _compat(sa, sb)
