"""Analysis operations: kernels, common vectors, recasts, sums and shape lattices.

These follow CuTe C++ (``nullspace``, ``max_common_layout``, ``max_common_vector``,
``upcast``, ``downcast``, ``recast_layout``, ``dice``, ``domain_offset``, ``coprofile``)
and PyCuTe (``layout_add``, ``greatest_common_domain``, ``common_refinement``,
``common_coarsening``).  With integers every quantity is treated as static, so each of
C++'s ``static_assert``\\ s is a checked condition here.  Where the reference returns a
layout that violates the operation's own post-condition, these functions raise
:class:`~layoutproof.errors.InadmissibleError` naming the condition, with a witness.

>>> str(nullspace(Layout((2, 4, 6), (1, 2, 0))))
'6:8'
>>> max_common_vector(Layout((4, 8), (1, 4)), Layout(32, 1))
32
>>> str(recast_layout(Layout((4, 8), (1, 4)), 16, 32))
'(2,8):(1,2)'
>>> str(layout_add(Layout((4, 3), (1, 4)), Layout((4, 3), (3, 1))))
'(4,3):(4,5)'
"""

from __future__ import annotations

import math
from typing import Any, List, Optional, Tuple

from .arith import ArithTuple, has_coordinate_strides
from .errors import InadmissibleError, MalformedLayoutError, UndecidableConditionError, show
from .inttuple import is_int, norm_htuple, raw_flatten, raw_prefix_product, raw_product, raw_unflatten
from .layout import Layout, _, checked_shape, concrete_only, fmt_htuple, get, layout_arg, need_layout
from .ops import EXACT_LIMIT, coalesce_modes, coalesced_modes, composition, recognize_layout_fn, unit_crd

__all__ = [
    "nullspace",
    "max_common_layout",
    "max_common_vector",
    "upcast",
    "downcast",
    "recast_layout",
    "layout_add",
    "greatest_common_domain",
    "common_refinement",
    "common_coarsening",
    "dice",
    "domain_offset",
    "coprofile",
]

_make = Layout.trusted


def _from_modes(ms: List[int], md: List[int]) -> Layout:
    if len(ms) == 1:
        return _make(ms[0], md[0])
    return _make(tuple(ms), tuple(md))


def _pos_int(x: Any, what: str) -> int:
    if type(x) is not int:
        if not is_int(x):
            raise MalformedLayoutError(f"{what} must be a positive integer, got {type(x).__name__} {show(x)}")
        x = int(x)
    if x < 1:
        raise MalformedLayoutError(f"{what} must be a positive integer, got {x}")
    return x


def _need_int_strides(L: Layout, op: str) -> None:
    """Coordinate (ArithTuple) strides have no order and no divisibility: C++ does not
    compile these operations for them."""
    fd = L.flat_modes()[1]
    for d in fd:
        if type(d) is not int:
            break
    else:
        return
    for k, d in enumerate(fd):
        if isinstance(d, ArithTuple):
            raise InadmissibleError(
                f"{op} needs integer strides; leaf {k} of {L} has the coordinate stride {d} "
                "(CuTe C++ does not define it for basis strides)",
                condition="integer strides",
                witness=unit_crd(L, k),
            )
        if type(d) is not int and getattr(type(d), "_lp_stride_scalar", False):
            raise InadmissibleError(
                f"{op} needs integer strides; leaf {k} of {L} has the F2 stride {d} (XOR "
                "strides have no order and no divisibility)",
                condition="integer strides",
                witness=None,
            )


def _layout_arg(x: Any, op: str) -> Layout:
    if isinstance(x, Layout):
        return x
    if x is None or x is _ or not (is_int(x) or type(x) is tuple or type(x) is list):
        raise MalformedLayoutError(f"{op} needs a Layout (or a shape), got {type(x).__name__} {show(x)}")
    return layout_arg(x, op)


# ----------------------------------------------------------------------------- nullspace
@concrete_only
def nullspace(layout: Any) -> Layout:
    """The stride-0 part of the domain (CuTe C++'s ``nullspace``).

    The stride-0 leaves of ``flatten(layout)``, each with the compact column-major stride
    of its position in the flat shape, so that ``R(i)`` is a 1-D coordinate of ``layout``.
    Post-conditions: ``layout(R(i)) == 0`` for every ``i < size(R)``;
    ``size(R) == size(layout) / size(filter(layout))``; ``nullspace(R) == 1:0``.
    No stride-0 leaf gives ``1:0``.  (This is C++'s kernel: coordinates that reach 0
    through non-zero strides that cancel, as in ``(2,2):(1,-1)`` at 3, are not in it.)

    Unlike C++, stride-0 leaves of extent 1 are left out: they add nothing to the kernel,
    and C++ keeps them as ``1:p``, which breaks its own post-condition
    (``nullspace(4:1) = 1:0`` and then ``nullspace(1:0) = 1:1 != 1:0``).

    >>> str(nullspace(Layout((2, 4, 6), (1, 2, 0))))
    '6:8'
    >>> str(nullspace(Layout((4, (2, 3)), (0, (1, 0)))))
    '(4,3):(1,8)'
    >>> str(nullspace(Layout((4, 8), (1, 4))))
    '1:0'
    >>> str(nullspace(Layout((4, 1), (1, 0))))
    '1:0'
    """
    L = _layout_arg(layout, "nullspace")
    fs, fd = L.flat_modes()
    idx = [i for i, (s, d) in enumerate(zip(fs, fd)) if d == 0 and s != 1]
    if not idx:
        return _make(1, 0)
    pp = raw_prefix_product(fs) if len(fs) > 1 else (1,)
    if len(idx) == 1:
        return _make(fs[idx[0]], pp[idx[0]])
    return _make(tuple(fs[i] for i in idx), tuple(pp[i] for i in idx))


# ----------------------------------------------------------------------------- max common layout
def _np_eval_flat(fs: tuple, fd: tuple, x: Any) -> Any:
    """A flat layout at the 1-D coordinates ``x`` (numpy), its last mode unbounded."""
    off = 0
    last = len(fs) - 1
    for i in range(last):
        off = off + (x % fs[i]) * fd[i]
        x = x // fs[i]
    return off + x * fd[last]


def _identity_run_by_eval(a: Layout, inv: Layout) -> int:
    """Largest n with ``inv(j) < size(a)`` and ``a(inv(j)) == j`` for all ``j < n``."""
    import numpy as np

    n = inv.size
    afs, afd = a.flat_modes()
    ifs, ifd = inv.flat_modes()
    bound = max(a.cosize, inv.cosize, n) * 4
    dtype: Any = np.int64 if bound < (1 << 62) else object
    start, chunk = 0, 256
    while start < n:
        end = min(n, start + chunk)
        j = np.arange(start, end, dtype=np.int64).astype(dtype)
        x = _np_eval_flat(ifs, ifd, j)
        inside = x < a.size
        y = _np_eval_flat(afs, afd, np.where(inside, x, 0))
        bad = np.flatnonzero(~inside | (y != j))
        if bad.size:
            return start + int(bad[0])
        start = end
        chunk *= 4
    return n


def _identity_run(a: Layout, inv: Layout) -> int:
    """C++: the leading mode of ``coalesce(composition(a, inv))`` if its stride is 1."""
    try:
        common = composition(a, inv)
    except (InadmissibleError, UndecidableConditionError):
        # C++ would fail a static_assert (or, dynamically, compute a wrong layout), or the
        # integer composition could not decide it; the identity run is decided directly instead.
        return _identity_run_by_eval(a, inv)
    cs, cd = coalesced_modes(common)
    return cs[0] if cd[0] == 1 else 1


def _restrict(rs: List[int], rd: List[int], n: int, size_a: int) -> Layout:
    """``inv`` (flat, coalesced, positive strides) on its longest prefix ``[0, m)`` with
    ``m <= n``, all values ``< size_a`` and ``inv`` restricted to it a layout."""
    ms: List[int] = []
    md: List[int] = []
    p = 1
    reach = 0
    for s, d in zip(rs, rd):
        if s == 1:
            break
        t = min(s, n // p, (size_a - 1 - reach) // d + 1)
        if t > 1:
            ms.append(t)
            md.append(d)
        if t < s:
            break
        p *= s
        reach += (s - 1) * d
    if not ms:
        return _make(1, 0)
    return _from_modes(ms, md)


def _rinv_modes(cs: List[int], cd: List[int]) -> Tuple[List[int], List[int]]:
    """right_inverse of a coalesced layout, as coalesced modes (empty for ``1:0``): follow
    the strides 1, s*1, ... taking the first mode with that stride (as ``right_inverse``)."""
    first = {}
    for i, d in enumerate(cd):
        if d > 0 and d not in first:
            first[d] = i
    pp = []
    p = 1
    for s in cs:
        pp.append(p)
        p *= s
    rs: List[int] = []
    rd: List[int] = []
    cur = 1
    while True:
        k = first.get(cur)
        if k is None or cs[k] == 1:
            break
        s = cs[k]
        if rs and rs[-1] * rd[-1] == pp[k]:
            rs[-1] *= s
        else:
            rs.append(s)
            rd.append(pp[k])
        cur *= s
    return rs, rd


def _chain_injective(cs: List[int], cd: List[int]) -> bool:
    """Positive strides that, sorted, never overlap (``s_i*d_i <= d_j``): injective, and its
    image meets ``[0, n)`` only in the chain that ``right_inverse`` follows."""
    prev = 0
    for d, s in sorted(zip(cd, cs)):
        if d <= 0 or d < prev:
            return False
        prev = s * d
    return True


def _max_common_modes(a: Layout, b: Layout) -> Tuple[List[int], List[int]]:
    if a.size == 1 or b.size == 1:
        return [], []
    cas, cad = coalesced_modes(a)
    cbs, cbd = coalesced_modes(b)
    rbs, rbd = _rinv_modes(cbs, cbd)
    if not rbs:
        return [], []
    if cas == cbs and cad == cbd:
        return rbs, rbd  # the same function: b's whole right inverse is common
    if _chain_injective(cas, cad):
        # a(x) == j has one solution at most, inv_a(j), and none at j = size(inv_a): the run
        # is where the coalesced inverses of a and b stop agreeing (first differing mode).
        ras, rad = _rinv_modes(cas, cad)
        ms: List[int] = []
        md: List[int] = []
        for sa, da, sb, db in zip(ras, rad, rbs, rbd):
            if da != db:
                break
            if sa == sb:
                ms.append(sb)
                md.append(db)
                continue
            ms.append(min(sa, sb))
            md.append(db)
            break
        return ms, md
    inv = _from_modes(rbs, rbd)
    n = _identity_run(a, inv)
    R = _restrict(rbs, rbd, n, a.size)
    if R.size == 1:
        return [], []
    fs, fd = R.flat_modes()
    return list(fs), list(fd)


@concrete_only
def max_common_layout(a: Any, b: Any) -> Layout:
    """The layout ``R`` of the longest run of contiguous elements that ``a`` and ``b``
    both store at offsets ``0, 1, 2, ...`` (CuTe C++'s ``max_common_layout``).

    C++: ``common = coalesce(composition(a, right_inverse(b)))``; if its leading mode has
    stride 1 and extent ``N``, ``R = composition(right_inverse(b), N:1)``, else ``1:0``.
    Post-condition: for every ``i < size(R)``, ``R(i)`` is a coordinate of both ``a`` and
    ``b`` and ``a(R(i)) == i == b(R(i))``.

    Two refinements keep that post-condition where C++ does not: when ``size(b) >
    size(a)`` the run is cut where ``R(i)`` leaves ``a``'s domain (C++ evaluates ``a``
    past its end: ``max_common_vector(8:1, 16:1)`` is 16 there, 8 here), and when the
    composition is inadmissible (a C++ ``static_assert``) the run is found by evaluation.

    >>> str(max_common_layout(Layout((4, 8), (1, 4)), Layout((4, 8), (1, 4))))
    '32:1'
    >>> str(max_common_layout(Layout((4, 8), (8, 1)), Layout((4, 8), (1, 4))))
    '1:0'
    >>> str(max_common_layout(Layout((2, 4), (4, 1)), Layout((2, 4), (1, 2))))
    '1:0'
    >>> str(max_common_layout(Layout((4, 2), (1, 8)), Layout((4, 2), (1, 4))))
    '4:1'
    """
    a = _layout_arg(a, "max_common_layout")
    b = _layout_arg(b, "max_common_layout")
    _need_int_strides(a, "max_common_layout")
    _need_int_strides(b, "max_common_layout")
    ms, md = _max_common_modes(a, b)
    if not ms:
        return _make(1, 0)
    return _from_modes(ms, md)


@concrete_only
def max_common_vector(a: Any, b: Any) -> int:
    """``N``: the number of contiguous elements that logically correspond in ``a`` and
    ``b`` (CuTe C++'s ``max_common_vector``), the size of :func:`max_common_layout`.

    Post-condition: for every ``n < N``, with ``R = right_inverse(b)``, ``R(n)`` is a
    coordinate of ``a`` and ``a(R(n)) == n == b(R(n))``.  ``N >= 1``.

    >>> max_common_vector(Layout((8, 4), (1, 8)), Layout(32, 1))
    32
    >>> max_common_vector(Layout((8, 4), (1, 16)), Layout(32, 1))
    8
    """
    a = _layout_arg(a, "max_common_vector")
    b = _layout_arg(b, "max_common_vector")
    _need_int_strides(a, "max_common_vector")
    _need_int_strides(b, "max_common_vector")
    n = 1
    for s in _max_common_modes(a, b)[0]:
        n *= s
    return n


# ----------------------------------------------------------------------------- upcast / downcast
def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _sign(d: int) -> int:
    return (d > 0) - (d < 0)


def _interval(group: List[Tuple[int, int]]) -> Tuple[int, Optional[int]]:
    """``{sum c_k d_k : c_k < s_k}`` for positive ``d``: ``(reach, None)`` when it is the
    interval ``[0, reach]``, else ``(reach so far, the first missing value)``."""
    reach = 0
    for d, s in sorted(group):
        if d > reach + 1:
            return reach, reach + 1
        reach += (s - 1) * d
    return reach, None


def _upcast_verdict(n: int, small: List[Tuple[int, int, int]]) -> Optional[bool]:
    """Decide the block condition from the small-stride leaves (``0 < |d| < n``) alone,
    when that is possible (see :func:`upcast`); ``None`` when it is not."""
    if n == 1:
        return True
    pos = [(d, s) for s, d, _t in small if d > 0]
    neg = [(-d, s) for s, d, _t in small if d < 0]
    if not pos:
        # S's largest element is 0, so the block [0, n) holds only 0 of S: not full, and it
        # is the largest block of L's image (only the largest shift reaches it).
        return False
    rp, gp = _interval(pos)
    rn, gn = _interval(neg)
    if gp is None and gn is None:
        # S = [-rn, rp]: its extreme blocks are full iff rn and rp + 1 are multiples of n
        if rn % n or (rp + 1) % n:
            return False
        tp = sum(t - 1 for s, d, t in small if d > 0)
        tn = sum(t - 1 for s, d, t in small if d < 0)
        # R's small leaves (stride +-1) cover exactly the blocks of S iff these match; when
        # they do not, the extreme blocks of image(R) and of image(L) differ.
        return tp == (rp + 1) // n - 1 and tn == rn // n
    if not neg and gp is not None and gp < n:
        return False  # the smallest block [0, n) misses gp
    return None


def _covered(vals: Any, n: int) -> Any:
    import numpy as np

    return np.unique((vals[:, None] * n + np.arange(n, dtype=vals.dtype)).reshape(-1))


def _upcast_exact(L: Layout, R: Layout, n: int) -> Tuple[bool, Any, str]:
    """Exact block condition by evaluation: (holds, witness, what the witness shows)."""
    import numpy as np

    vl = L.eval_all()
    vr = R.eval_all()
    img = np.unique(vl)
    blocks = _covered(vr, n)
    if np.array_equal(img, blocks):
        return True, None, ""
    extra = np.setdiff1d(blocks, img)
    if extra.size:
        hit = np.isin(vr[:, None] * n + np.arange(n, dtype=vr.dtype), extra).any(axis=1)
        i = int(np.flatnonzero(hit)[0])
        x = int(extra[np.isin(extra, int(vr[i]) * n + np.arange(n))][0])
        return (
            False,
            i,
            (
                f"at coordinate {i} of the result, the wide element {int(vr[i])} holds "
                f"the narrow offset {x}, which is not in the image of {L}"
            ),
        )
    miss = np.setdiff1d(img, blocks)
    j = int(np.flatnonzero(np.isin(vl, miss))[0])
    return (
        False,
        j,
        (
            f"the narrow element at coordinate {j} of {L} (offset {int(vl[j])}) is in "
            "no wide element of the result"
        ),
    )


@concrete_only
def upcast(layout: Layout, n: Any) -> Layout:
    """The layout in units of ``n`` elements (CuTe C++'s ``upcast<N>``): offsets are
    divided by ``n``.  Leaf by leaf, ``s:0`` stays; ``s:d`` with ``n | d`` becomes
    ``s:d/n``; ``s:d`` with ``d | n`` becomes ``ceil(s/(n/|d|)):signum(d)`` (``n/|d|``
    consecutive coordinates share one wide element).

    Conditions: every leaf of extent > 1 has ``n | d`` or ``d | n`` (C++'s static
    "Divisibility condition"), and the **block condition**: the wide elements the result
    addresses hold exactly the narrow elements of ``layout``, i.e. ``image(layout) ==
    {n*R(c') + k : c', 0 <= k < n}``.  C++ does not check the latter, so it returns a
    layout whose wide elements reach data ``layout`` does not hold (``5:1`` by 2 gives
    ``3:1``, whose element 2 holds offset 5; ``4:2`` by 2 gives ``4:1``).  It is decided
    exactly: structurally from the small-stride leaves when they form an interval, else by
    evaluation (domains up to 2^16), else raised as undecided.

    Post-conditions (``R = upcast(L, n)``): ``R`` is congruent with ``L``; the block
    condition; and every wide element starts at an element of ``L``: ``n*R(c') == L(c)``
    with ``c`` the coordinate ``c'`` whose small-stride leaves are scaled by ``n/|d|``.

    >>> str(upcast(Layout((4, 8), (1, 4)), 2))
    '(2,8):(1,2)'
    >>> str(upcast(Layout(((2, 2), 4), ((2, 1), 4)), 4))
    '((1,1),4):((1,1),1)'
    >>> upcast(Layout(5, 1), 2)
    Traceback (most recent call last):
      ...
    layoutproof.errors.InadmissibleError: upcast: block condition ...
    """
    need_layout(layout, "upcast")
    n = _pos_int(n, "upcast factor")
    _need_int_strides(layout, "upcast")
    fs, fd = layout.flat_modes()
    os_: List[int] = []
    od: List[int] = []
    small: List[Tuple[int, int, int]] = []
    for k, (s, d) in enumerate(zip(fs, fd)):
        if d == 0:
            os_.append(s)
            od.append(0)
        elif s == 1:
            os_.append(1)
            od.append(_sign(d) * _cdiv(abs(d), n))
        elif d % n == 0:
            os_.append(s)
            od.append(d // n)
        elif n % d == 0:
            t = _cdiv(s, n // abs(d))
            os_.append(t)
            od.append(_sign(d))
            small.append((s, d, t))
        else:
            raise InadmissibleError(
                f"upcast: stride divisibility: leaf {k} ({s}:{d}) of {layout} has stride {d}, "
                f"and neither {d} nor {n} divides the other, so its elements do not fall on "
                f"whole elements of {n}",
                condition="upcast stride divisibility",
                witness=unit_crd(layout, k),
            )
    R = _rebuild(layout, os_, od)
    _check_blocks(layout, R, n, small, "upcast")
    return R


def _rebuild(L: Layout, fs: List[int], fd: List[int]) -> Layout:
    if type(L.shape) is not tuple:
        return _make(fs[0], fd[0])
    return _make(raw_unflatten(tuple(fs), L.shape), raw_unflatten(tuple(fd), L.stride))


def _check_blocks(L: Layout, R: Layout, n: int, small: List[Tuple[int, int, int]], op: str) -> None:
    verdict = _upcast_verdict(n, small)
    if verdict is True:
        return
    witness = None
    detail = ""
    if L.size <= EXACT_LIMIT and R.size * n <= EXACT_LIMIT * 16 and n <= EXACT_LIMIT:
        ok, witness, detail = _upcast_exact(L, R, n)
        if ok:
            return
    elif verdict is None:
        raise UndecidableConditionError(
            f"{op}: block condition: whether the wide elements of {R} hold exactly the elements "
            f"of {L} could not be decided: the domain ({L.size}, by a factor {n}) is too large to "
            "evaluate and "
            "the small-stride leaves do not form an interval",
            condition="upcast block condition",
        )
    raise InadmissibleError(
        f"{op}: block condition: the wide elements (of {n}) that {R} addresses do not hold "
        f"exactly the elements of {L}" + (f": {detail}" if detail else ""),
        condition="upcast block condition",
        witness=witness,
    )


@concrete_only
def downcast(layout: Layout, n: Any) -> Layout:
    """The layout in units of ``1/n`` elements (CuTe C++'s ``downcast<N>``): the stride-1
    leaf ``s:1`` becomes ``s*n:1`` (the ``n`` parts of each element are adjacent) and
    every other stride is multiplied by ``n``.

    Condition: some leaf holds the ``n`` parts of each element: a stride-1 leaf (the first
    one of extent > 1; C++'s choice when it is the only ``+-1`` leaf), else a size-1 leaf
    (size-1 leaves carry no elements: ``(1,4):(0,2)`` by 2 is ``(2,4):(1,4)``, where C++
    asserts).  Every other stride is multiplied by ``n``.  C++ asserts only that a
    stride-1 leaf exists ("Downcast requires adjacent elements") and scales every ``+-1``
    leaf, which is wrong for two of them (``(4,2):(1,1)`` by 2 gives ``(8,4):(1,1)``,
    reaching offset 10, outside the parts [0, 10) of the elements; here it is
    ``(8,2):(1,2)``) and for ``-1`` (``(4,2):(1,-1)`` by 2 is ``(8,2):(1,-2)`` here).
    Without a host leaf no layout meets the post-condition below (the host's stride must
    be 1, and so must its stride in L unless its extent is 1): InadmissibleError, with a
    witness coordinate of C++'s layout (``0``, the element whose other parts no coordinate
    reaches, when there is no stride-1 leaf).

    Post-conditions (``R = downcast(L, n)``): congruent with ``L``; ``R`` at the
    coordinate of ``L``'s coordinate ``c`` with its stride-1 leaf coordinate ``x``
    replaced by ``x*n + j`` is ``n*L(c) + j`` for every ``j < n``; hence ``image(R) ==
    {n*L(c) + j}``.

    >>> str(downcast(Layout((4, 8), (1, 4)), 2))
    '(8,8):(1,8)'
    >>> str(downcast(Layout((4, 8), (8, 1)), 4))
    '(4,32):(32,1)'
    """
    need_layout(layout, "downcast")
    n = _pos_int(n, "downcast factor")
    _need_int_strides(layout, "downcast")
    if n == 1:
        return layout
    fs, fd = layout.flat_modes()
    # The host leaf holds the n parts of every element: R(.., x*n + j, ..) = n*L(c) + j forces
    # its stride to be 1 (j = 1) and, unless its extent is 1, its own stride in L to be 1
    # (x = 1).  So the host is a stride-1 leaf of extent > 1 (C++'s), else a size-1 leaf
    # (size-1 leaves carry no elements); every other stride is multiplied by n.
    units = [k for k, (s, d) in enumerate(zip(fs, fd)) if d == 1 and s > 1]
    ones = [k for k, s in enumerate(fs) if s == 1]
    if units:
        u = units[0]
    elif ones:
        u = next((k for k in ones if fd[k] == 1), ones[0])
    else:
        negs = [k for k, (s, d) in enumerate(zip(fs, fd)) if d == -1 and s > 1]
        if negs:
            cond = "downcast: no stride -1 leaf"
            why = (
                f"leaf {negs[0]} of {layout} has stride -1 and no leaf has stride 1 (or extent "
                f"1); the {n} parts of an element are stored in increasing order, so they need "
                "a stride-1 leaf to hold them"
            )
            naive = _rebuild(
                layout,
                [s * n if d in (1, -1) else s for s, d in zip(fs, fd)],
                [d if d in (1, -1) else d * n for d in fd],
            )
            w = _downcast_witness(layout, naive, n)
        else:
            cond = "downcast: exactly one stride-1 leaf"
            why = (
                f"{layout} has no stride-1 leaf (and no size-1 leaf) to hold the {n} adjacent "
                f'parts of an element (C++: "Downcast requires adjacent elements"); the '
                f"parts 1..{n - 1} of element 0 would be reached by no coordinate"
            )
            naive, w = None, 0
        raise InadmissibleError(
            f"{cond}: {why}"
            + (f"; C++'s {naive} is wrong at coordinate {w}" if naive is not None and w is not None else ""),
            condition=cond,
            witness=w,
        )
    return _rebuild(
        layout,
        [s * n if k == u else s for k, s in enumerate(fs)],
        [1 if k == u else d * n for k, d in enumerate(fd)],
    )


def _downcast_witness(L: Layout, naive: Layout, n: int) -> Optional[int]:
    """The first coordinate of C++'s result whose offset is no part of an element of L."""
    import numpy as np

    if naive.size > EXACT_LIMIT * 4:
        return None
    allowed = _covered(np.unique(L.eval_all()), n)
    bad = np.flatnonzero(~np.isin(naive.eval_all(), allowed))
    return int(bad[0]) if bad.size else None


@concrete_only
def recast_layout(layout: Layout, old_bits: Any, new_bits: Any) -> Layout:
    """Reinterpret a layout of ``old_bits``-bit elements as one of ``new_bits``-bit
    elements (CuTe C++'s ``recast_layout<OldType, NewType>``, with the types' bit widths).

    With ``new_bits/old_bits = num/den`` in lowest terms: ``layout`` itself for 1,
    :func:`downcast` by ``den`` when ``num == 1`` (narrower), :func:`upcast` by ``num``
    when ``den == 1`` (wider), else ``downcast(upcast(layout, num), den)``.  Their
    conditions apply; they raise InadmissibleError.

    Post-condition: the bits covered are the same, ``{L(c)*old_bits + k : k < old_bits}
    == {R(c')*new_bits + k : k < new_bits}``, so the ``R``-elements that start a new
    element of ``L`` sit at the same bit address, ``R(c')*new_bits == L(c)*old_bits``.

    >>> str(recast_layout(Layout((4, 8), (1, 4)), 16, 32))
    '(2,8):(1,2)'
    >>> str(recast_layout(Layout((4, 8), (1, 4)), 32, 8))
    '(16,8):(1,16)'
    >>> str(recast_layout(Layout((6, 2), (1, 6)), 16, 24))
    '(4,2):(1,4)'
    """
    need_layout(layout, "recast_layout")
    ob = _pos_int(old_bits, "recast_layout old_bits")
    nb = _pos_int(new_bits, "recast_layout new_bits")
    _need_int_strides(layout, "recast_layout")
    g = math.gcd(ob, nb)
    num, den = nb // g, ob // g
    if num == 1 and den == 1:
        return layout
    if num == 1:
        return downcast(layout, den)
    if den == 1:
        return upcast(layout, num)
    return downcast(upcast(layout, num), den)


# ----------------------------------------------------------------------------- layout_add
@concrete_only
def layout_add(A: Any, B: Any) -> Layout:
    """The layout ``R`` with ``R(i) == A(i) + B(i)`` for every ``i < size(A)`` (PyCuTe's
    ``layout_add``); ``None`` for either argument returns the other.

    PyCuTe: coalesce both, take their :func:`greatest_common_domain` ``G``; if ``size(G)
    == size(A)`` the result is ``coalesce(G.shape : (A(d) + B(d) for d in G.stride))``.
    Where PyCuTe raises (``G`` too small), the sum is decided exactly by evaluation
    (domains up to 2^16): the coalesced layout of the sum is returned if there is one,
    else InadmissibleError with the first coordinate no layout can match.

    Post-conditions: ``size(R) == size(A) == size(B)``; ``R(i) == A(i) + B(i)``;
    ``layout_add(A, B) == layout_add(B, A)``; ``R`` is coalesced.

    >>> str(layout_add(Layout((5, 3, 4), (1, 5, 15)), Layout((10, 6), (1, 10))))
    '60:2'
    >>> str(layout_add(Layout((2, (3, 4)), (12, (4, 1))), Layout((6, 4), (4, 1))))
    '(2,3,4):(16,12,2)'
    >>> layout_add(Layout((2, 3), (1, 0)), Layout((3, 2), (0, 1)))
    Traceback (most recent call last):
      ...
    layoutproof.errors.InadmissibleError: layout_add: the sum is not a layout ...
    """
    if B is None:
        if A is None:
            raise MalformedLayoutError("layout_add needs at least one Layout, got None and None")
        need_layout(A, "layout_add")
        return A
    if A is None:
        need_layout(B, "layout_add")
        return B
    need_layout(A, "layout_add")
    need_layout(B, "layout_add")
    if A.size != B.size:
        raise InadmissibleError(
            f"layout_add: equal sizes: size({A}) = {A.size} but size({B}) = {B.size}",
            condition="layout_add: equal sizes",
            witness=None,
        )
    cas, cad = coalesced_modes(A)
    cbs, cbd = coalesced_modes(B)
    gs, gd = _gcd_walk(list(cas), list(cbs))
    if raw_product(tuple(gs)) == A.size:
        rd = [_zero_canon(_eval_flat(cas, cad, d) + _eval_flat(cbs, cbd, d)) for d in gd]
        ms, md = coalesce_modes(tuple(gs), tuple(rd))
        return _from_modes(ms, md)
    # PyCuTe raises: no common refinement of the coalesced shapes.  Decide exactly.
    if has_coordinate_strides(A) or has_coordinate_strides(B):
        raise InadmissibleError(
            f"layout_add: the coalesced shapes {fmt_htuple(tuple(cas))} and {fmt_htuple(tuple(cbs))} have no "
            "common refinement (PyCuTe's condition); with coordinate strides the sum is not "
            "decided by evaluation",
            condition="layout_add: the sum is a layout",
            witness=None,
        )
    if A.size > EXACT_LIMIT:
        raise UndecidableConditionError(
            f"layout_add: the coalesced shapes {fmt_htuple(tuple(cas))} and {fmt_htuple(tuple(cbs))} have no "
            f"common refinement, and the domain ({A.size}) is too large to decide by evaluation "
            "whether the sum is a layout",
            condition="layout_add: the sum is a layout",
        )
    v = A.eval_all() + B.eval_all()
    rec, w = recognize_layout_fn(v)
    if rec is None:
        raise InadmissibleError(
            f"layout_add: the sum is not a layout: no layout of size {A.size} agrees with "
            f"A(i) + B(i) on [0, {w}] (A = {A}, B = {B}; at {w} the sum is {int(v[w])})",
            condition="layout_add: the sum is a layout",
            witness=w,
        )
    return _from_modes(list(rec[0]), list(rec[1]))


def _zero_canon(x: Any) -> Any:
    """A coordinate that is zero becomes the integer 0 (they are equal; 0 prints as 0)."""
    if type(x) is not int and x == 0:
        return 0
    return x


def _eval_flat(fs: Any, fd: Any, x: int) -> int:
    off = 0
    for s, d in zip(fs, fd):
        off += (x % s) * d
        x //= s
    return off


# ----------------------------------------------------------------------------- shape lattice
def _shape_of(x: Any, op: str) -> Any:
    if isinstance(x, Layout):
        return x.shape
    if x is None or x is _:
        raise MalformedLayoutError(f"{op} needs a shape or a Layout, got {x!r}")
    return checked_shape(x, f"{op} argument")


def _gcd_walk(A: List[int], B: List[int]) -> Tuple[List[int], List[int]]:
    rs: List[int] = []
    rd: List[int] = []
    pa = pb = 1
    i = j = 0
    while i < len(A) and j < len(B):
        if A[i] == 1:
            i += 1
            continue
        if B[j] == 1:
            j += 1
            continue
        lcm = pa * pb // math.gcd(pa, pb)
        ra, rb = lcm // pa, lcm // pb
        if A[i] % ra == 0 and B[j] % rb == 0:
            g = math.gcd(A[i] // ra, B[j] // rb)
            if g != 1:
                rs.append(g)
                rd.append(lcm)
                A[i] //= ra * g
                B[j] //= rb * g
                pa = pb = lcm * g
                continue
        ea, eb = pa * A[i], pb * B[j]
        qa, qb = eb % ea == 0, ea % eb == 0
        if qa or not qb:
            pa = ea
            i += 1
        if qb or not qa:
            pb = eb
            j += 1
    return rs, rd


@concrete_only
def greatest_common_domain(A: Any, B: Any) -> Layout:
    """The greatest common domain of two shapes (PyCuTe's ``greatest_common_domain``):
    a depth-1 layout whose shape is the ordered factorization that ``shape(A)`` and
    ``shape(B)`` share, each factor at the 1-D offset (its stride) where it starts in both.

    Walks the flat leaves of both shapes from the left: at the smallest offset aligned in
    both (the lcm of the two running prefix products), the gcd of what is left of the two
    current leaves is a common factor; otherwise the leaf that ends first advances (both
    when neither end divides the other).  Only the shapes matter (Layouts give theirs).
    No common factor gives ``(1,):(0,)``.

    Post-conditions: symmetric; depth 1; ``size(R)`` divides ``gcd(size(A), size(B))``;
    ``composition(Layout(shape(A)), R)`` and ``composition(Layout(shape(B)), R)`` are
    admissible; the rest modes of ``logical_divide`` by ``R`` have no common domain left.

    >>> str(greatest_common_domain((5, 3, 4), (10, 6)))
    '(5,2):(1,30)'
    >>> str(greatest_common_domain((6, 35), (15, 14)))
    '(3,7):(1,30)'
    >>> str(greatest_common_domain((5, 3), (3, 5)))
    '(1):(0)'
    """
    sa = _shape_of(A, "greatest_common_domain")
    sb = _shape_of(B, "greatest_common_domain")
    rs, rd = _gcd_walk(list(raw_flatten(sa)), list(raw_flatten(sb)))
    if not rs:
        return _make((1,), (0,))
    return _make(tuple(rs), tuple(rd))


def _compat(a: Any, b: Any) -> bool:
    if type(a) is tuple:
        return type(b) is tuple and len(a) == len(b) and all(_compat(x, y) for x, y in zip(a, b))
    return a == raw_product(b)


def _refine(a: Any, b: Any, path: tuple) -> Any:
    ta, tb = type(a) is tuple, type(b) is tuple
    if ta and tb:
        if len(a) != len(b):
            raise InadmissibleError(
                f"common_refinement: equal ranks: at mode {path} the shapes {fmt_htuple(a)} and "
                f"{fmt_htuple(b)} "
                f"have ranks {len(a)} and {len(b)}, and a tuple refines only tuples of its rank",
                condition="common refinement: equal ranks",
                witness=path,
            )
        return tuple(_refine(x, y, path + (k,)) for k, (x, y) in enumerate(zip(a, b)))
    pa, pb = raw_product(a), raw_product(b)
    if pa != pb:
        raise InadmissibleError(
            f"common_refinement: equal sizes: at mode {path} the shapes {fmt_htuple(a)} and {fmt_htuple(b)} "
            f"have sizes {pa} and {pb}",
            condition="common refinement: equal sizes",
            witness=path,
        )
    return b if ta is False else a


@concrete_only
def common_refinement(a: Any, b: Any) -> Any:
    """The least shape ``c`` that refines both ``a`` and ``b``: ``compatible(a, c)``,
    ``compatible(b, c)``, and ``compatible(c, d)`` for every common refinement ``d``
    (PyCuTe's ``common_refinement``, the join of the compatibility order).

    Tuples of equal rank are refined mode by mode; an integer and a shape of its size give
    the shape.  Raises InadmissibleError where none exists (different sizes, or two tuples
    of different ranks), with the mode path as witness.  Layouts give their shapes.

    >>> common_refinement(((2, 3), 20), (6, (4, 5)))
    ((2, 3), (4, 5))
    >>> common_refinement(10, (10,))
    (10,)
    >>> common_refinement((6, 5), (2, 15))
    Traceback (most recent call last):
      ...
    layoutproof.errors.InadmissibleError: common_refinement: equal sizes: at mode (0,) ...
    """
    return _refine(_shape_of(a, "common_refinement"), _shape_of(b, "common_refinement"), ())


def _coarsen(a: Any, b: Any) -> Any:
    if type(a) is tuple and type(b) is tuple and len(a) == len(b):
        parts = []
        for x, y in zip(a, b):
            if raw_product(x) != raw_product(y):
                return raw_product(a)
            parts.append(_coarsen(x, y))
        return tuple(parts)
    return raw_product(a)


@concrete_only
def common_coarsening(a: Any, b: Any) -> Any:
    """The greatest shape ``c`` that coarsens both ``a`` and ``b``: ``compatible(c, a)``,
    ``compatible(c, b)``, and ``compatible(d, c)`` for every common coarsening ``d``
    (PyCuTe's ``common_coarsening``, the meet of the compatibility order).

    Tuples of equal rank whose modes have equal sizes are coarsened mode by mode; anything
    else gives the integer size.  Raises InadmissibleError when the sizes differ (then no
    common coarsening exists).  Layouts give their shapes.

    >>> common_coarsening((4, (3, 5)), ((2, 2), 15))
    (4, 15)
    >>> common_coarsening((2, (3, 5)), ((3, 2), 5))
    30
    """
    sa = _shape_of(a, "common_coarsening")
    sb = _shape_of(b, "common_coarsening")
    pa, pb = raw_product(sa), raw_product(sb)
    if pa != pb:
        raise InadmissibleError(
            f"common_coarsening: equal sizes: {fmt_htuple(sa)} has size {pa} and {fmt_htuple(sb)} has size "
            f"{pb}; shapes of different sizes have no common coarsening",
            condition="common coarsening: equal sizes",
            witness=(),
        )
    return _coarsen(sa, sb)


# ----------------------------------------------------------------------------- dice, offsets
def _dice_split(c: Any, s: Any, d: Any, path: tuple) -> Tuple[list, list]:
    if c is None or c is _:
        return [], []
    if type(c) is tuple or type(c) is list:
        if type(s) is not tuple or len(s) != len(c):
            raise MalformedLayoutError(
                f"dice: the coordinate {show(c)} at mode {path} does not fit the shape {fmt_htuple(s)} "
                "(a tuple needs a tuple mode of the same rank)"
            )
        ks: list = []
        kd: list = []
        for k, (ci, si, di) in enumerate(zip(c, s, d)):
            a, b = _dice_split(ci, si, di, path + (k,))
            ks.extend(a)
            kd.extend(b)
        return ks, kd
    if not is_int(c):
        raise MalformedLayoutError(
            f"dice: coordinate leaves must be integers or _ (None), got {type(c).__name__} {show(c)}"
        )
    return [s], [d]


@concrete_only
def dice(crd: Any, layout: Any) -> Any:
    """Keep the modes of ``layout`` where ``crd`` is *not* ``_`` (CuTe C++'s ``dice``, the
    complement of :func:`~layoutproof.layout.slice_`).  The integer values of ``crd`` do
    not matter, only where ``_`` (or ``None``) stands.

    An integer ``crd`` keeps everything, ``_`` keeps nothing (``():()``), and a tuple keeps
    the modes at its integer positions, gathered one level flat as C++ does.  ``layout``
    may also be an HTuple (then a tuple comes back).  Post-condition: for every natural
    coordinate ``x`` of ``layout``, ``layout(x) == dice(crd, layout)(x_int) +
    slice(crd, layout)(x_wild)``, where ``x_int``/``x_wild`` are the parts of ``x`` at the
    integer/wildcard positions of ``crd``.

    >>> str(dice((1, _), Layout((4, 8), (1, 4))))
    '(4):(1)'
    >>> str(dice((_, (2, _)), Layout((4, (2, 3)), (1, (4, 8)))))
    '(2):(4)'
    >>> dice((1, _, 1), (32, 16, 8))
    (32, 8)
    """
    if isinstance(layout, Layout):
        if type(crd) is not tuple and type(crd) is not list:
            if crd is None or crd is _:
                return _make((), ())
            _dice_split(crd, layout.shape, layout.stride, ())
            return layout
        ks, kd = _dice_split(tuple(crd), layout.shape, layout.stride, ())
        return _make(tuple(ks), tuple(kd))
    t = norm_htuple(layout, "dice argument")
    if type(crd) is not tuple and type(crd) is not list:
        if crd is None or crd is _:
            return ()
        _dice_split(crd, t, t, ())
        return t
    ks, _kd = _dice_split(tuple(crd), t, t, ())
    return tuple(ks)


@concrete_only
def domain_offset(coord: Any, layout: Layout) -> Tuple[Layout, int]:
    """``(layout, layout(coord))`` (CuTe C++'s ``domain_offset``, which exists so that
    composed layouts can shift their domain; a plain layout is unchanged and the
    coordinate becomes an offset).  ``coord`` is a full coordinate (no ``_``) of any form.

    >>> L, off = domain_offset((1, 2), Layout((4, 8), (1, 4)))
    >>> str(L), off
    ('(4,8):(1,4)', 9)
    """
    need_layout(layout, "domain_offset")
    if coord is None or coord is _:
        raise MalformedLayoutError("domain_offset needs a coordinate, got a wildcard")
    off = layout(coord)
    if isinstance(off, Layout):
        raise MalformedLayoutError(
            f"domain_offset needs a full coordinate, got {show(coord)} with a wildcard"
        )
    return layout, off


@concrete_only
def coprofile(layout: Layout, *modes: Any) -> Any:
    """The profile of the codomain of ``layout`` (or of its mode ``get(layout, *modes)``),
    as zeros congruent with its values (CuTe C++'s ``coprofile``: the sum of the strides,
    every entry replaced by 0).  Integer strides give ``0``; coordinate strides give a
    tuple of zeros with the nesting of the coordinates.

    Post-condition: congruent with ``layout(i)`` for every ``i``.  PyCuTe returns the sum
    of the strides itself (its leaf values "carry no meaning"): the same nesting, other
    leaf values -- ``(1, (1, 1))`` for the identity layout below.

    >>> coprofile(Layout((4, (2, 2)), (2, (1, 8))))
    0
    >>> from layoutproof.arith import make_identity_layout
    >>> coprofile(make_identity_layout((4, (2, 3))))
    (0, (0, 0))
    """
    need_layout(layout, "coprofile")
    sub = get(layout, *modes)
    total: Any = 0
    for d in sub.flat_modes()[1]:
        total = total + d
    return _zeros_like(total)


def _zeros_like(x: Any) -> Any:
    if isinstance(x, ArithTuple):
        return tuple(_zeros_like(e) for e in x._data)
    return 0  # an integer or a scalar of another algebra (F2): a one-axis codomain
