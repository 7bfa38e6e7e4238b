"""The sorted folds and the search at every rank: induction on the real step code of complement,
left_inverse and right_inverse (:mod:`.induction` explains the method and holds the opaque state).

complement and left_inverse fold over the modes sorted by stride: their steps are proved for any
state and mode, and the sort is a separate lemma (``symops.sort_modes``: a permutation with
non-decreasing strides, ties by index), itself a fold of ``sort_insert`` whose scan step is
explored the same way (:func:`sort_scan_instances`); right_inverse's search for the next mode
(``right_inverse_pick``, a fold of ``right_inverse_pick_step``) likewise
(:func:`pick_scan_instances`).
"""

from __future__ import annotations

import functools
from itertools import combinations
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from layoutproof.layout import Layout
from layoutproof.symbolic import sympy_module as _sp

from ..symexec import symops_module as _ops
from ..symexec import z3_module as _z3
from ..theorem import Theorem
from . import symbolic as cs
from . import symbolic_unary as su
from .induction import (
    BY_INSPECTION,
    FOLD,
    Head,
    HeadRead,
    appended,
    at_values,
    induction_check,
    int_symbol,
    ints_of,
    no_confirm,
    path_ints,
    pos_symbol,
)

# every theorem here is built by the group's one builder, naming this file as its source
_theorem = functools.partial(cs.all_values_theorem, source="proofs/catalog/induction_inverse.py")

__all__ = [
    "complement_instances",
    "left_inverse_instances",
    "right_inverse_instances",
    "sort_instances",
    "sort_scan_instances",
    "rest_tuple_instances",
    "pick_scan_instances",
    "THEOREMS",
]


# ----------------------------------------------------------------------------- sorting
def _sort_instance(n: int) -> cs.Instance:
    """symops.sort_modes on n modes with symbolic non-negative strides: a permutation of
    its input, strides non-decreasing, equal strides in index order."""
    ops = _ops()
    ds = cs.strides("d", n, nonneg=True)
    ss = cs.extents("s", n)
    modes = [(ds[k], ss[k], k) for k in range(n)]

    def fn() -> Any:
        return ops.sort_modes(list(modes), "sort")

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        out = cx.path.value
        perm = sorted(m[2] for m in out) == list(range(n)) and all(modes[m[2]] == m for m in out)
        claims = [z3.BoolVal(perm)]
        for a, b in zip(out, out[1:]):
            claims.append(e.t(a[0]) <= e.t(b[0]))
            if a[2] > b[2]:
                claims.append(e.t(a[0]) != e.t(b[0]))
        return [], z3.And(claims)

    return cs.Instance(f"sort_modes, {n} modes", fn, build, no_confirm, strict=True)


def sort_instances(ranks: Sequence[int]) -> List[cs.Instance]:
    return [_sort_instance(n) for n in ranks]


def _sort_scan_found_instance() -> cs.Instance:
    """sort_scan_step once the scan has found its position: it returns that position and
    reads neither the inserted mode nor the prefix's mode (both opaque)."""
    ops = _ops()

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        return [], _z3().BoolVal(cx.path.value == 3)

    return cs.Instance(
        "sort scan: position found (modes opaque)",
        lambda: ops.sort_scan_step(3, 5, Head("m"), Head("o"), "sort"),
        build,
        no_confirm,
        strict=True,
    )


def _key_before(e: Any, a: Tuple[Any, Any, int], b: Tuple[Any, Any, int]) -> Any:
    """a precedes b in the order (stride, index) (distinct integer indices)."""
    za, zb = e.t(a[0]), e.t(b[0])
    return _z3().Or(za < zb, za == zb) if a[2] < b[2] else za < zb


def _sort_scan_compare_instance(m_first: bool) -> cs.Instance:
    """sort_scan_step before any position is found, on the inserted mode m = (dm, sm, im)
    and the prefix's mode o = (do, so, io) at j (strides any integers; the indices distinct,
    im < io when ``m_first``): it returns j exactly when m precedes o in the order (stride,
    index), None exactly when o precedes m; it raises on no path (each comparison is decided
    on the path)."""
    ops = _ops()
    dm, do, sm, so = int_symbol("dm"), int_symbol("do"), pos_symbol("sm"), pos_symbol("so")
    im, io = (0, 1) if m_first else (1, 0)
    m, o = (dm, sm, im), (do, so, io)

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        r = cx.path.value
        before = _key_before(cx.enc, m, o)
        if r is None:
            return [], z3.Not(before)
        return [], z3.And(z3.BoolVal(r == 5), before)

    def confirm(asg: Dict[str, int], path: Any) -> Optional[str]:
        """The step on the model's integers: refuted when its answer is not the order."""
        v = path_ints(asg, path, dm=0, do=0)
        a, b = (v["dm"], 2, im), (v["do"], 2, io)
        r = _ops().sort_scan_step(None, 5, a, b, "sort")
        want = (a[0], a[2]) < (b[0], b[2])
        if (r == 5) != want or r not in (None, 5):
            return f"sort_scan_step on m = {a}, o = {b} at 5 gave {r}"
        return None

    return cs.Instance(
        f"sort scan: compare (m index {'<' if m_first else '>'} o index)",
        lambda: ops.sort_scan_step(None, 5, m, o, "sort"),
        build,
        confirm,
        strict=True,
    )


def sort_scan_instances() -> List[cs.Instance]:
    """The sort lemma at every length: the scan step of symops.sort_insert, found and not
    found (both index orders)."""
    return [
        _sort_scan_found_instance(),
        _sort_scan_compare_instance(True),
        _sort_scan_compare_instance(False),
    ]


# ----------------------------------------------------------------------------- complement
def _kept_mode_instance(op: str) -> cs.Instance:
    """symops.kept_mode (which modes complement / left_inverse count) on one mode s:d,
    s > 0, d any integer: False exactly when s == 1 or d == 0; True only with d > 0 and
    s != 1; it raises (inadmissible) only for d < 0."""
    ops = _ops()
    s, d = pos_symbol("s"), int_symbol("d")

    def fn() -> Any:
        return cs.raises(lambda: ops.kept_mode(op, 0, s, d, Layout.trusted(s, d)))()

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        tag, v = cx.path.value
        zs, zd = e.t(s), e.t(d)
        if tag == "raises":
            return [], z3.And(zd < 0, zs != 1)
        if v:
            return [], z3.And(zd > 0, zs != 1)
        return [], z3.Or(zs == 1, zd == 0)

    return cs.Instance(f"{op}: kept_mode on one mode", fn, build, no_confirm, strict=True)


def _complement_step_instance() -> cs.Instance:
    """complement_step on (R, D opaque, cur) and the mode (d, s), d > 0 and s != 1 (a kept
    mode): on a path that returns, cur | d, and the appended complement modes N followed by
    (s, d) form a chain from cur (N[0] has stride cur, each next stride is the previous
    stride times its extent) ending at the new covered extent s*d > cur, every appended
    extent >= 2 and stride cur; on a path that raises, cur does not divide d."""
    sp = _sp()
    ops = _ops()
    cur, s, d = pos_symbol("cur"), pos_symbol("s"), pos_symbol("d")

    def fn() -> Any:
        def run() -> Any:
            rs, rd, cur2 = ops.complement_step((Head("R"), Head("D"), cur), (d, s, 0))
            return list(appended(rs, "R")), list(appended(rd, "D")), cur2

        return cs.raises(run)()

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        tag, v = cx.path.value
        divides = e.t(sp.Mod(d, cur)) == 0
        if tag == "raises":
            return [], z3.Not(divides)
        ns, nd, cur2 = v
        chain = list(zip(ns, nd)) + [(s, d)]
        claims = [divides, z3.BoolVal(len(ns) == len(nd) and len(ns) <= 1)]
        stride: Any = e.t(cur)
        for a, b in chain:
            claims.append(e.t(b) == stride)
            stride = e.t(b) * e.t(a)
        claims.append(e.t(cur2) == stride)
        claims += [e.t(a) >= 2 for a in ns] + [e.t(b) == e.t(cur) for b in nd]
        claims.append(e.t(cur2) > e.t(cur))
        return [], z3.And(claims)

    def confirm(asg: Dict[str, int], _p: Any) -> Optional[str]:
        """The step run on the model's integers (the same symops step, no exploration): the
        refutation stands when its result there breaks the claim."""
        v = ints_of(asg, cur=1, s=2, d=1)
        c, s_, d_ = v["cur"], v["s"], v["d"]
        if c <= 0 or s_ <= 1 or d_ <= 0:
            return None
        tag, out = cs.raises(lambda: _ops().complement_step((Head("R"), Head("D"), c), (d_, s_, 0)))()
        at = f"complement_step on cur = {c} and the mode {s_}:{d_}"
        if tag == "raises":
            return f"{at} raised although cur | d" if d_ % c == 0 else None
        rs, rd, c2 = out
        ns, nd = appended(rs, "R"), appended(rd, "D")
        if d_ % c:
            return f"{at} returned although cur = {c} does not divide d = {d_} (the stride chain fails)"
        stride = c
        for a, b in list(zip(ns, nd)) + [(s_, d_)]:
            if b != stride:
                return f"{at} appended {list(zip(ns, nd))}: not a chain from {c}"
            stride = a * b
        if c2 != stride or any(a < 2 for a in ns) or c2 <= c:
            return f"{at} gave the covered extent {c2} after {list(zip(ns, nd))}"
        return None

    return cs.Instance(
        "step: (R, D opaque, cur), mode (d, s), s != 1",
        fn,
        build,
        confirm,
        assumptions=(sp.Ne(s, 1),),
        strict=True,
    )


def _complement_rest_instance() -> cs.Instance:
    """complement_rest(cur, M) (M a positive integer): one mode r:cur with r >= 1 and
    M <= r*cur < M + cur."""
    ops = _ops()
    cur, M = pos_symbol("cur"), cs.extents("M", 1)[0]

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        rs, rd = cx.path.value
        if len(rs) != 1 or len(rd) != 1:
            return [], z3.BoolVal(False)
        K = e.t(rs[0]) * e.t(cur)
        return [], z3.And(e.t(rd[0]) == e.t(cur), e.t(rs[0]) >= 1, K >= e.t(M), K < e.t(M) + e.t(cur))

    def confirm(asg: Dict[str, int], p: Any) -> Optional[str]:
        """The path's result with the model substituted (a bug of the symbolic path), else
        complement_rest run on the model's integers, checked on integers."""
        v = ints_of(asg, cur=1, M=1)
        c, m = v["cur"], v["M"]
        if c <= 0 or m <= 0:
            return None
        at = {cur: c, M: m}
        for how, (rs, rd) in (
            ("on this path", [[at_values(x, at) for x in xs] for xs in p.value]),
            ("on the integers", _ops().complement_rest(c, m)),
        ):
            if any(type(x) is not int for x in rs + rd):
                continue
            if len(rs) != 1 or rd != [c] or not (m <= rs[0] * c < m + c):
                return f"complement_rest({c}, {m}) gives {list(zip(rs, rd))} {how}: not M rounded up to cur"
        return None

    return cs.Instance(
        "finish: complement_rest(cur, M)",
        lambda: ops.complement_rest(cur, M),
        build,
        confirm,
        strict=True,
    )


def _rest_tuple_step_instance() -> cs.Instance:
    """complement_rest_step on (R, D opaque, d, p) and a tuple cotarget's mode x (d, p, x
    positive): it never raises; where it returns a state (e appended at stride p, d' left,
    next stride p'), e >= 1, d' >= 1, d' | d, e d == x d', d' == 1 or e == 1, and p' == p e
    -- the invariant's step; None is the fallback (one mode ceil(M / cur) : cur, the finish
    lemma)."""
    ops = _ops()
    d, p, x = pos_symbol("d"), pos_symbol("p"), pos_symbol("x")

    def fn() -> Any:
        def run() -> Any:
            out = ops.complement_rest_step((Head("R"), Head("D"), d, p), x)
            if out is None:
                return None
            rs, rd, d2, p2 = out
            return list(appended(rs, "R")), list(appended(rd, "D")), d2, p2

        return cs.raises(run)()

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        tag, v = cx.path.value
        if tag == "raises":
            return [], z3.BoolVal(False)
        if v is None:
            return [], z3.BoolVal(True)
        ns, nd, d2, p2 = v
        if len(ns) != 1 or len(nd) != 1:
            return [], z3.BoolVal(False)
        ze, zd2, zd = e.t(ns[0]), e.t(d2), e.t(d)
        claims = [e.t(nd[0]) == e.t(p), ze >= 1, zd2 >= 1, e.t(_sp().Mod(d, d2)) == 0]
        claims += [ze * zd == e.t(x) * zd2, z3.Or(zd2 == 1, ze == 1), e.t(p2) == e.t(p) * ze]
        return [], z3.And(claims)

    def confirm(asg: Dict[str, int], path: Any) -> Optional[str]:
        """The step on the model's integers, checked on integers."""
        v = path_ints(asg, path, d=1, p=1, x=1)
        d_, p_, x_ = v["d"], v["p"], v["x"]
        if min(d_, p_, x_) <= 0:
            return None
        tag, out = cs.raises(lambda: _ops().complement_rest_step(((), (), d_, p_), x_))()
        at = f"complement_rest_step on d = {d_}, p = {p_} and the mode {x_}"
        if tag == "raises":
            return f"{at} raised"
        if out is None:
            return f"{at} failed although one divides the other" if d_ % x_ == 0 or x_ % d_ == 0 else None
        (e_,), (s_,), d2, p2 = out
        if (
            s_ != p_
            or e_ < 1
            or d2 < 1
            or d_ % d2
            or e_ * d_ != x_ * d2
            or (d2 != 1 and e_ != 1)
            or p2 != p_ * e_
        ):
            return f"{at} gave the mode {e_}:{s_}, {d2} left, next stride {p2}"
        return None

    return cs.Instance(
        "tuple cotarget: complement_rest_step on (R, D opaque, d, p) and a mode x",
        fn,
        build,
        confirm,
        strict=True,
    )


def _rest_tuple_failed_instance() -> cs.Instance:
    """complement_rest_step once the fold failed: it stays failed and reads no mode."""
    ops = _ops()

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        return [], _z3().BoolVal(cx.path.value is None)

    return cs.Instance(
        "tuple cotarget: complement_rest_step after a failure (mode opaque)",
        lambda: ops.complement_rest_step(None, Head("x")),
        build,
        no_confirm,
        strict=True,
    )


def _rest_tuple_close_instance() -> cs.Instance:
    """The end of the tuple fold: from the invariant cur P == M D (P the product of the
    remaining extents, M the cotarget's size, D >= 1 the part of cur left) and (D == 1 or
    P == 1), the covered extent K = cur P satisfies M <= K < M + cur -- as the one-mode
    finish."""
    cur, P, M, D = pos_symbol("cur"), pos_symbol("P"), pos_symbol("M"), pos_symbol("D")

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        zc, zP, zM, zD = (e.t(v) for v in (cur, P, M, D))
        hyp = [zc >= 1, zP >= 1, zM >= 1, zD >= 1, zc * zP == zM * zD, z3.Or(zD == 1, zP == 1)]
        return hyp, z3.And(zc * zP >= zM, zc * zP < zM + zc)

    return cs.Instance(
        "tuple cotarget: the fold's end gives M <= K < M + cur",
        lambda: (cur, P, M, D),
        build,
        no_confirm,
        strict=True,
    )


def rest_tuple_instances() -> List[cs.Instance]:
    """complement_rest with a tuple (Shape) cotarget of any rank: its fold's step, its
    failed state, and the end."""
    return [_rest_tuple_step_instance(), _rest_tuple_failed_instance(), _rest_tuple_close_instance()]


def complement_instances(sort_ranks: Sequence[int]) -> List[cs.Instance]:
    return [
        _kept_mode_instance("complement"),
        *sort_scan_instances(),
        *sort_instances(sort_ranks),
        _complement_step_instance(),
        _complement_rest_instance(),
        *rest_tuple_instances(),
    ]


# ----------------------------------------------------------------------------- left_inverse
def _left_inverse_start_instance() -> cs.Instance:
    """left_inverse_start on the first sorted mode (d, s, p): the inverse so far is d:0 --
    size d, the value 0 -- and the previous mode is (d, s, p)."""
    ops = _ops()
    d, s, p = pos_symbol("d"), pos_symbol("s"), pos_symbol("p")

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        rs, rd, prev = cx.path.value
        ok = len(rs) == 1 and len(rd) == 1 and prev == (d, s, p)
        if not ok:
            return [], z3.BoolVal(False)
        return [], z3.And(e.t(rs[0]) == e.t(d), e.t(rd[0]) == 0)

    return cs.Instance(
        "base: left_inverse_start", lambda: ops.left_inverse_start((d, s, p)), build, no_confirm, strict=True
    )


def _left_inverse_step_instance() -> cs.Instance:
    """left_inverse_step on (R, D opaque, previous mode (d0, s0, p0)) and the mode (d1, s1,
    p1), extents != 1 and strides > 0 (kept modes).  The invariant: R's modes so far have
    size d0, and every value X of L's folded lower modes is < d0 with R's modes at X equal
    to its index V.  On a path that returns: d0 | d1, s0 d0 <= d1, one mode q:p is appended
    with d0*q == d1 and p == p0, and for every X < d0 and digit c0 < s0 the digits (X, c0)
    of Y = X + c0 d0 in the radix (d0, q) are in range (c0 < q) -- so the inverse at Y is
    V + c0 p0 -- and Y < d1: the invariant for the next mode.  On a path that raises: the chain
    d0 | d1 and s0 d0 <= d1 fails, and where it raises for injectivity two coordinates
    collide: (d1/d0 in the previous mode) and (1 in this one), d1/d0 < s0, s1 >= 2."""
    sp = _sp()
    ops = _ops()
    d0, s0, p0 = pos_symbol("d0"), pos_symbol("s0"), pos_symbol("p0")
    d1, s1, p1 = pos_symbol("d1"), pos_symbol("s1"), pos_symbol("p1")

    def fn() -> Any:
        def run() -> Any:
            rs, rd, prev = ops.left_inverse_step((Head("R"), Head("D"), (d0, s0, p0)), (d1, s1, p1))
            if prev != (d1, s1, p1):
                raise HeadRead("the step's next previous mode is not the mode it was given")
            return list(appended(rs, "R")), list(appended(rd, "D"))

        return cs.raises(run)()

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        tag, v = cx.path.value
        zd0, zd1, zs0, zs1 = e.t(d0), e.t(d1), e.t(s0), e.t(s1)
        chain = z3.And(e.t(sp.Mod(d1, d0)) == 0, zs0 * zd0 <= zd1)
        if tag == "raises":
            claims = [z3.Not(chain)]
            if "injectivity" in str(v):
                q = e.t(sp.floor(d1 / d0))
                claims.append(z3.And(q * zd0 == zd1, q >= 0, q < zs0, zs1 >= 2))
            return [], z3.And(claims)
        ns, nd = v
        if len(ns) != 1 or len(nd) != 1:
            return [], z3.BoolVal(False)
        q, p = e.t(ns[0]), e.t(nd[0])
        X, c0 = cx.dg.new(e, d0, "x"), cx.dg.new(e, s0, "c")
        Y = X + c0 * zd0
        e.monotone(c0, s0, zd0)
        # Y's digits in the radix (d0, q) of the inverse so far and its new mode are (X, c0):
        # in range and adding up to Y (a mixed-radix representation is unique), so the new
        # inverse at Y is (its value at X, i.e. V) + c0 p, which is V + c0 p0
        claims = [chain, zd0 * q == zd1, p == e.t(p0), c0 < q, Y < zd1]
        return [], z3.And(claims)

    def confirm(asg: Dict[str, int], _p: Any) -> Optional[str]:
        """The step run on the model's integers: the refutation stands when its result there
        breaks the claim (a return without the chain, a wrong appended mode, a digit out of
        range, or a raise where the chain holds)."""
        v = ints_of(asg, d0=1, s0=2, p0=1, d1=1, s1=2, p1=1)
        a0, b0, q0, a1, b1, q1 = v["d0"], v["s0"], v["p0"], v["d1"], v["s1"], v["p1"]
        if min(a0, q0, a1, q1) <= 0 or b0 <= 1 or b1 <= 1:
            return None
        chain = a1 % a0 == 0 and b0 * a0 <= a1
        tag, out = cs.raises(
            lambda: _ops().left_inverse_step((Head("R"), Head("D"), (a0, b0, q0)), (a1, b1, q1))
        )()
        at = f"left_inverse_step on the previous mode {b0}:{a0} and the mode {b1}:{a1}"
        if tag == "raises":
            return f"{at} raised although the chain holds" if chain else None
        if not chain:
            return f"{at} returned although the chain d0 | d1, s0 d0 <= d1 fails"
        ns, nd = appended(out[0], "R"), appended(out[1], "D")
        if list(ns) != [a1 // a0] or list(nd) != [q0]:
            return f"{at} appended {list(zip(ns, nd))}"
        return None

    return cs.Instance(
        "step: (R, D opaque, (d0, s0, p0)), mode (d1, s1, p1), s0, s1 != 1",
        fn,
        build,
        confirm,
        assumptions=(sp.Ne(s0, 1), sp.Ne(s1, 1)),
        strict=True,
    )


def _left_inverse_close_instance() -> cs.Instance:
    """left_inverse_close on (R, D opaque, last mode (d, s, p)): one mode s:p appended;
    for every X < d (where the inverse so far is V) and digit c < s, Y = X + c d has the
    digits (X, c) in the closed inverse's radix (d, s), below its size d*s, so the closed
    inverse there is V + c p."""
    ops = _ops()
    d, s, p = pos_symbol("d"), pos_symbol("s"), pos_symbol("p")

    def fn() -> Any:
        rs, rd = ops.left_inverse_close((Head("R"), Head("D"), (d, s, p)))
        return list(appended(rs, "R")), list(appended(rd, "D"))

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        ns, nd = cx.path.value
        if len(ns) != 1 or len(nd) != 1:
            return [], z3.BoolVal(False)
        zd = e.t(d)
        X, c = cx.dg.new(e, d, "x"), cx.dg.new(e, s, "c")
        Y = X + c * zd
        e.monotone(c, s, zd)
        # Y's digits in (d, s) are (X, c): in range, adding up to Y, below the size d*s; the
        # closed inverse there is V + c * (its last stride), which must be V + c p
        claims = [e.t(ns[0]) == e.t(s), e.t(nd[0]) == e.t(p), Y < zd * e.t(ns[0])]
        return [], z3.And(claims)

    return cs.Instance("finish: left_inverse_close", fn, build, no_confirm, strict=True)


def left_inverse_instances(sort_ranks: Sequence[int]) -> List[cs.Instance]:
    return [
        _kept_mode_instance("left_inverse"),
        *sort_scan_instances(),
        *sort_instances(sort_ranks),
        _left_inverse_start_instance(),
        _left_inverse_step_instance(),
        _left_inverse_close_instance(),
    ]


# ----------------------------------------------------------------------------- right_inverse
def _right_inverse_pick_instance(n: int, used: Tuple[int, ...]) -> cs.Instance:
    """right_inverse_pick over n strides (symbolic) with the modes ``used`` taken and the
    chain at ``cur``: it returns an unused index whose stride is cur, the first such; None
    only when every unused stride differs from cur."""
    ops = _ops()
    cd = cs.strides("d", n)
    cur = pos_symbol("cur")
    state = ((), (), cur, frozenset(used))

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        i = cx.path.value
        free = [k for k in range(n) if k not in used]
        if i is None:
            return [], z3.And([e.t(cd[k]) != e.t(cur) for k in free] or [z3.BoolVal(True)])
        claims = [z3.BoolVal(i in free), e.t(cd[i]) == e.t(cur)]
        claims += [e.t(cd[k]) != e.t(cur) for k in free if k < i]
        return [], z3.And(claims)

    return cs.Instance(
        f"pick: {n} modes, used {sorted(used)}",
        lambda: ops.right_inverse_pick(cd, state),
        build,
        no_confirm,
        strict=True,
    )


def _pick_scan_instance(kind: str) -> cs.Instance:
    """right_inverse_pick_step on the mode i = 5 (stride d) and the state (R, D opaque, cur,
    used). ``found``: a mode found stays, nothing else read (d, cur, used opaque); ``used``:
    i used (used = {5}) gives None; ``free``: i unused (used = {2}) gives i exactly when
    d == cur, None exactly when d != cur."""
    ops = _ops()
    d, cur = int_symbol("d"), pos_symbol("cur")
    R, D = Head("R"), Head("D")
    if kind == "found":
        args: Tuple[Any, ...] = (2, 5, Head("d"), (R, D, Head("cur"), Head("U")))
    else:
        args = (None, 5, d, (R, D, cur, frozenset({5} if kind == "used" else {2})))

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        r = cx.path.value
        if kind == "found":
            return [], z3.BoolVal(r == 2)
        if kind == "used":
            return [], z3.BoolVal(r is None)
        same = cx.enc.t(d) == cx.enc.t(cur)
        if r is None:
            return [], z3.Not(same)
        return [], z3.And(z3.BoolVal(r == 5), same)

    def confirm(asg: Dict[str, int], path: Any) -> Optional[str]:
        """The step on the model's integers: refuted when its answer is not None for a used
        mode, not (d == cur) for an unused one."""
        if kind == "found":
            return None
        v = path_ints(asg, path, d=1, cur=1)
        if v["cur"] <= 0:
            return None
        used = frozenset({5} if kind == "used" else {2})
        r = _ops().right_inverse_pick_step(None, 5, v["d"], ((), (), v["cur"], used))
        want = 5 if kind == "free" and v["d"] == v["cur"] else None
        if r != want:
            return f"right_inverse_pick_step on d = {v['d']}, cur = {v['cur']}, used {sorted(used)} gave {r}"
        return None

    return cs.Instance(
        f"pick scan: {kind}", lambda: ops.right_inverse_pick_step(*args), build, confirm, strict=True
    )


def pick_scan_instances() -> List[cs.Instance]:
    """The pick lemma at every number of modes: the search step of right_inverse_pick,
    after a find, on a used mode and on an unused one."""
    return [_pick_scan_instance(k) for k in ("found", "used", "free")]


def _right_inverse_step_instance() -> cs.Instance:
    """right_inverse_step on (R, D, used opaque, cur) and the picked mode (s, d, p, i), d ==
    cur (the pick's guarantee): it appends s:p to the inverse, i to the used modes, and the
    chain goes on at s*cur -- so for g < cur and h < s, the inverse at g + cur h is R(g) +
    h p: the coordinate of R(g) with digit h in the (unused) mode i, where L adds h d == h
    cur, keeping L(R(x)) == x."""
    sp = _sp()
    ops = _ops()
    cur, s, d, p = pos_symbol("cur"), pos_symbol("s"), int_symbol("d"), pos_symbol("p")

    def fn() -> Any:
        rs, rd, cur2, used = ops.right_inverse_step((Head("R"), Head("D"), cur, Head("U")), (s, d, p, 7))
        return list(appended(rs, "R")), list(appended(rd, "D")), cur2, list(appended(used, "U"))

    def build(cx: cs.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        ns, nd, cur2, used = cx.path.value
        if len(ns) != 1 or len(nd) != 1 or used != [7]:
            return [], z3.BoolVal(False)
        g, h = cx.dg.new(e, cur, "g"), cx.dg.new(e, s, "h")
        # L at the new coordinate: L(R(g)) == g (the invariant) plus h times mode i's stride
        x = g + h * e.t(cur)
        claims = [e.t(ns[0]) == e.t(s), e.t(nd[0]) == e.t(p), e.t(cur2) == e.t(s) * e.t(cur)]
        claims.append(g + h * e.t(d) == x)
        return [], z3.And(claims)

    return cs.Instance(
        "step: (R, D, used opaque, cur), picked mode (s, d == cur, p, i)",
        fn,
        build,
        no_confirm,
        assumptions=(sp.Eq(d, cur),),
        strict=True,
    )


def right_inverse_instances(pick_ranks: Sequence[int]) -> List[cs.Instance]:
    """The pick lemma (its search step: every number of modes; and, at each number of modes
    in ``pick_ranks``, the whole search with every proper subset of them used) and the step."""

    out = pick_scan_instances()
    for n in pick_ranks:
        for k in range(n):
            out += [_right_inverse_pick_instance(n, used) for used in combinations(range(n), k)]
    out.append(_right_inverse_step_instance())
    return out


# ----------------------------------------------------------------------------- the theorems
#: the whole sort_modes symbolically executed at these ranks as a supplement (the sort lemma
#: at every rank is its scan step's, both jobs): the main job, and `layoutproof prove --all`
SORT_MAIN: Tuple[int, ...] = ()
SORT_ALL = (1, 2, 3, 4)
#: the whole right_inverse_pick at these numbers of modes as a supplement (the pick lemma at
#: every number of modes is its search step's, both jobs): the main job, and with `--all`
PICK_MAIN: Tuple[int, ...] = ()
PICK_ALL = (1, 2, 3, 4)


def _sort_ranks() -> Sequence[int]:
    return SORT_ALL if cs.full_scope() else SORT_MAIN


def _build() -> List[Theorem]:
    sort_scope = (
        "the sort lemma at every rank (symops.sort_modes returns a permutation of its modes, strides "
        "non-decreasing, equal strides by index): sort_modes is a fold of sort_insert over the modes "
        "(invariant: the list so far is strictly increasing in the order (stride, index); the indices "
        "are the modes' positions, distinct), and "
        "sort_insert a fold of sort_scan_step over that list (invariant: while no position is found, "
        "every mode scanned precedes the inserted m); the real sort_scan_step explored on every path: "
        "a found position stays and neither mode is read (both opaque), else it returns j exactly when "
        "m precedes the mode o at j and None exactly when o precedes m (both index orders; an undecided "
        "comparison raises)"
    )
    sort_insp = (
        "; for the sort, its two fold loops and sort_insert's splice `out[:pos] + [m] + out[pos:]` "
        "(m between a mode that precedes it and one it precedes: the list stays sorted, one mode added)"
    )
    sort_sup = f"sort_modes itself at ranks {SORT_ALL[0]}-{SORT_ALL[-1]}"
    out: List[Theorem] = []
    cstep = (
        "Induction over complement's fold of symops.complement_step over L's kept modes sorted by stride. "
        "Kept modes: symops.kept_mode on one mode s:d (every path): dropped exactly when s == 1 or d == 0, "
        "kept only with d > 0, raises only for d < 0. Invariant of the state (C's modes so far, the covered "
        "extent cur): the kept L modes folded so far and C's modes, sorted by stride, form a chain from 1 "
        "(each stride the product of the extents below) ending at cur; C's extents >= 2, C's strides "
        "increase and are < cur. Start: no mode, cur = 1. Step (every path of complement_step on (R, D "
        "opaque, cur) and a kept mode (d, s)): it returns exactly when cur | d; then the appended modes "
        "(at most one, extent d/cur >= 2, stride cur) followed by (s, d) form a chain from cur ending at "
        "the new covered extent s*d > cur -- so cur is always s*d of the last folded mode, the step's "
        "decision is the stride chain s_{k-1} d_{k-1} | d_k, and cur is the largest s_k d_k. Finish: "
        "complement_rest(cur, M) (every path) is one mode r:cur with M <= r*cur < M + cur; for a tuple "
        "(Shape) cotarget M of any rank, complement_rest is a fold of complement_rest_step over M's modes "
        "(start: no mode, the part of cur left D = cur, the next stride p = cur), falling back to that "
        "one mode when the fold fails; invariant: cur * P == size(M's modes so far) * D with P the "
        "product of the modes emitted, D >= 1, D == 1 or P == 1, the emitted modes a chain from cur "
        "ending at p = cur * P; step (every path of complement_rest_step on (R, D opaque, d, p) and a "
        "mode x): it never raises, a failure stays failed without reading the mode, else it emits e:p "
        "with e >= 1, leaves d' | d, d' >= 1, e d == x d', d' == 1 or e == 1, next stride p e; end: "
        "M <= cur * P < M + cur (M the cotarget's size) -- the one-mode finish's conclusion, so the "
        "rest of the argument is the same; then coalesce, which keeps the function and size "
        "(sym.coalesce-every-rank) and keeps strides a subsequence (its step). "
        + FOLD
        + "; "
        + sort_scope
        + ". By inspection: "
        + BY_INSPECTION
        + "the fold's C with complement_rest's modes "
        "(complement_finish, one line), complement_rest's fold loop over the tuple (two lines) and its "
        "start state" + sort_insp
    )
    sc_c = (
        "every rank of L, M an integer or a tuple of any rank (kept-mode lemma, sort scan step, "
        "complement step, finish and the tuple cotarget's fold step on the real symops code, both jobs); "
        "direct symbolic execution at ranks 1-2 (integer M) and " + sort_sup + " as supplements with "
        "`--all`"
    )
    c_params = (
        f"L: {cs.EXTENTS}, {cs.STRIDES_POS}; M a positive integer, or a tuple (Shape) of positive integers "
        "of any rank (its size)"
    )
    Mv = cs.extents("M", 1)[0]
    out += [
        _theorem(
            "sym.complement-post",
            "complement meets its post-condition, for all extents, strides and M, at every rank",
            "Whenever complement(L, M) returns C: the modes of (L, C) other than extent-1 ones, sorted by "
            "stride, have strides 1, s_0, s_0 s_1, ... (so (L, C) is a bijection onto [0, K)), K >= M, "
            "K < M + max(s_k d_k) (M rounded up to L's cover), and C's strides increase. " + cstep,
            induction_check(
                "(L, complement(L, M)) is a bijection onto [0, K), K = M rounded up",
                lambda: complement_instances(_sort_ranks()),
                lambda: [su.complement_instance(cs._L(r, "pos"), Mv) for r in (1, 2)],
            ),
            sc_c,
            c_params,
        ),
        _theorem(
            "sym.complement-admissible-iff-chain",
            "complement is admissible exactly when the stride chain holds, at every rank",
            "On every path: complement(L, M) returns iff L's non-trivial modes, sorted by stride, satisfy "
            "s_k d_k | d_{k+1} (the existence condition of a complement); it raises InadmissibleError "
            "exactly where the chain fails. The fold's step returns exactly when cur | d with cur = "
            "s_{k-1} d_{k-1} (1 for the first mode), and nothing else in the fold raises (the finish "
            "returns on every path). " + cstep,
            induction_check(
                "admissible <=> stride chain",
                lambda: complement_instances(_sort_ranks()),
                lambda: [su.complement_chain_instance(cs._L(r, "pos"), Mv) for r in (1, 2)],
            ),
            sc_c,
            c_params,
        ),
        _theorem(
            "sym.complement-size",
            "size(L) size(complement(L, M)) >= M, for all extents, strides and M, at every rank",
            "Whenever complement(L, M) returns C: size(L) * size(C) >= M. The chain of the kept L modes and "
            "C's fold modes has product cur (the invariant), the finish multiplies it by r with r*cur >= M, "
            "L's dropped modes have extent >= 1 and coalesce keeps the size. " + cstep,
            induction_check(
                "size(L) size(C) >= M",
                lambda: complement_instances(_sort_ranks()),
                lambda: [su.complement_size_instance(cs._L(r, "pos"), Mv) for r in (1, 2)],
            ),
            sc_c,
            c_params,
        ),
    ]
    lstep = (
        "Induction over left_inverse's fold of symops.left_inverse_step over coalesce(L)'s kept modes "
        "(d_k, s_k, p_k: stride, extent, prefix product in coalesce(L)) sorted by stride; coalesce(L) has "
        "L's function (sym.coalesce-every-rank). Kept modes: symops.kept_mode (every path, as for "
        "complement). Invariant of the state (R's modes so far, the previous mode (d0, s0, p0)): R's modes "
        "so far have size d0, and every value X of the folded modes below (digits in range) is < d0 with "
        "R's modes at X equal to its index V = sum c_j p_j. Start: left_inverse_start on the first mode "
        "gives d0:0 (every path). Step (every path of left_inverse_step on (R, D opaque, (d0, s0, p0)) and "
        "(d1, s1, p1), s0, s1 != 1): it returns exactly when d0 | d1 and s0 d0 <= d1; then it appends one "
        "mode q:p with d0 q == d1, p == p0, and for X < d0 and c0 < s0 the digits (X, c0) of Y = X + c0 "
        "d0 are in range (c0 < q) with Y < d1 -- the invariant for the next mode; where it raises for "
        "injectivity, (d1/d0 in the previous mode) and (1 in this one) are two coordinates with the same "
        "value (d1/d0 < s0, s1 >= 2). Close: left_inverse_close appends s:p, every value Y = X + c d is "
        "below the size d*s, at digits (X, c). "
        + FOLD
        + "; "
        + sort_scope
        + ". By inspection: "
        + BY_INSPECTION
        + "R's modes with the step's; left_inverse's prefix products of coalesce(L) (a four-line loop), "
        "its 1:0 for no kept mode, and the final coalesce (function-preserving: sym.coalesce-every-rank)"
        + sort_insp
    )
    sc_l = (
        "every rank (kept-mode lemma, sort scan step, left_inverse start, step and close on the real "
        "symops code, both jobs); direct symbolic execution at ranks 1-3 and " + sort_sup + " as "
        "supplements with `--all`"
    )

    def lrun(claim: str, direct: Callable[[Layout], cs.Instance], ranks: Sequence[int] = (1, 2, 3)) -> Any:
        return induction_check(
            claim,
            lambda: left_inverse_instances(_sort_ranks()),
            lambda: [direct(cs._L(r, "pos")) for r in ranks],
        )

    out += [
        _theorem(
            "sym.left-inverse-post",
            "left_inverse meets its post-condition, for all extents and strides, at every rank",
            "Whenever left_inverse(L) returns R: R(L(i)) == i for every i (strides positive: every mode of "
            "extent > 1 is kept). From the invariant: R(L(i)) is the index of coalesce(L)'s coordinate "
            "with i's digits, i.e. i. " + lstep,
            lrun("R(L(i)) == i", su.left_inverse_instance),
            sc_l,
            f"{cs.EXTENTS}; {cs.STRIDES_POS}",
        ),
        _theorem(
            "sym.left-inverse-admissible-iff-chain",
            "left_inverse is admissible exactly when the sorted modes form its chain, at every rank",
            "On every path: left_inverse(L) returns iff the modes of coalesce(L) other than extent 1, "
            "sorted by stride, satisfy d_k | d_{k+1} and s_k d_k <= d_{k+1}; every path that raises "
            "violates that chain (the step's decision, exact on every path; start and close never raise). "
            + lstep,
            lrun("left_inverse admissible <=> chain", su.left_inverse_chain_instance),
            sc_l,
            f"{cs.EXTENTS}; {cs.STRIDES_POS}",
        ),
        _theorem(
            "sym.left-inverse-cover",
            "left_inverse(L)'s domain covers L's image, for all extents and strides, at every rank",
            "Whenever left_inverse(L) returns R: size(R) >= cosize(L) = 1 + sum((s_k - 1) d_k). R's size "
            "is d*s of the last sorted mode (the invariant's size d0, times the close's s) and every value "
            "of L is below it (the close), so cosize(L) = max L + 1 <= size(R). " + lstep,
            lrun("size(left_inverse(L)) >= cosize(L)", su.left_inverse_cover_instance),
            sc_l,
            f"{cs.EXTENTS}; {cs.STRIDES_POS}",
        ),
        _theorem(
            "sym.left-inverse-refuses-only-non-injective",
            "left_inverse refuses for injectivity only on layouts that are not injective, at every rank",
            "On every path where left_inverse raises its injectivity condition, two distinct coordinates "
            "of coalesce(L) (which has L's function: sym.coalesce-every-rank) have the same value: "
            "(d_b/d_a in mode a) and (1 in mode b) for two modes a != b with d_a | d_b and s_a d_a > d_b "
            "(the step's claim on its raising paths). " + lstep,
            lrun("injectivity refusal => L not injective", su.left_inverse_overlap_instance, (2, 3)),
            sc_l.replace("ranks 1-3", "ranks 2-3"),
            f"{cs.EXTENTS}; {cs.STRIDES_POS}",
        ),
    ]
    rstep = (
        "Induction over right_inverse's fold: `while (i := right_inverse_pick(cd, state)) is not None: "
        "state = right_inverse_step(state, (cs[i], cd[i], pp[i], i))` over coalesce(L)'s modes (cs, cd; pp "
        "their prefix products); coalesce(L) has L's function (sym.coalesce-every-rank) and no mode of "
        "extent 1 (its invariant). Invariant of the state (R's modes, the chain's next stride cur, the "
        "used modes): cur is the product of R's extents, and for every x < cur, R(x) is the index of the "
        "coordinate of coalesce(L) with x's digits in the used modes (in pick order) and 0 elsewhere, "
        "where L is x. Start: no mode, cur = 1, nothing used (R(0) = 0 = L^-1(0)). Pick lemma (every "
        "number of modes): it returns the first unused mode whose stride is proved == cur, None only "
        "when every unused stride is proved != cur. right_inverse_pick is a fold of "
        "right_inverse_pick_step over the modes (invariant: while nothing is found, every unused mode "
        "scanned has a stride != cur); the real step explored on every path: a found mode stays and "
        "nothing else is read (stride, cur, used opaque), a used mode gives None without reading its "
        "stride or cur, an unused one gives its index exactly when d == cur and None exactly when d != "
        "cur (an undecided equality raises). Step (every path of right_inverse_step on (R, D, used opaque, "
        "cur) and a picked mode (s, d == cur, p, i)): it appends s:p and i, the chain goes on at s*cur, "
        "and at x + cur h (h < s) R adds h p -- digit h in the unused mode i -- where L adds h d == h "
        "cur. " + FOLD + ". By inspection: the loop above (two lines) and the concatenation of R's "
        "modes with the step's, the prefix products (a four-line loop), 1:0 for no step, the final "
        "coalesce (function-preserving), and the pick's fold loop (two lines)"
    )
    sc_r = (
        "every rank (pick search step and right_inverse step on the real symops code, both jobs); "
        "direct symbolic execution at ranks {} and right_inverse_pick itself at "
        f"{PICK_ALL[0]}-{PICK_ALL[-1]} modes (every proper subset of them used) as supplements with "
        "`--all`"
    )

    def rrun(claim: str, direct: Callable[[Layout], cs.Instance], ranks: Sequence[int]) -> Any:
        return induction_check(
            claim,
            lambda: right_inverse_instances(PICK_ALL if cs.full_scope() else PICK_MAIN),
            lambda: [direct(cs._L(r)) for r in ranks],
        )

    out += [
        _theorem(
            "sym.right-inverse-post",
            "right_inverse meets its post-condition, for all extents and strides, at every rank",
            "L(R(i)) == i for every i < size(R), R = right_inverse(L) (the invariant at the end). " + rstep,
            rrun("L(right_inverse(L)(i)) == i", su.right_inverse_instance, (1, 2, 3, 4)),
            sc_r.format("1-4"),
            f"{cs.EXTENTS}; {cs.STRIDES_ANY}",
        ),
        _theorem(
            "sym.right-inverse-two-sided",
            "a right_inverse of full size is a left inverse too, at every rank",
            "Whenever size(right_inverse(L)) == size(L) (L a bijection onto [0, size(L))): R(L(i)) == i for "
            "every i < size(L), R = right_inverse(L). From the invariant: size(R) is the product of the used "
            "modes' extents, size(L) that of all of coalesce(L)'s modes, none of extent 1, so every mode is "
            "used; x -> R(x) is then onto coalesce(L)'s coordinates with L(R(x)) == x, hence a bijection, "
            "and R(L(i)) == i. " + rstep,
            rrun("size(R) == size(L) => R(L(i)) == i", su.right_inverse_two_sided_instance, (1, 2, 3)),
            sc_r.format("1-3"),
            f"{cs.EXTENTS}; {cs.STRIDES_ANY}",
            ("size(right_inverse(L)) == size(L)",),
        ),
        _theorem(
            "sym.right-inverse-image",
            "right_inverse(L) maps into L's domain, for all extents and strides, at every rank",
            "0 <= R(i) < size(L) for every i < size(R), R = right_inverse(L). From the invariant: R(x) is "
            "the index of a coordinate of coalesce(L), whose size is size(L) (sym.coalesce-every-rank). "
            + rstep,
            rrun("0 <= right_inverse(L)(i) < size(L)", su.right_inverse_image_instance, (1, 2, 3, 4)),
            sc_r.format("1-4"),
            f"{cs.EXTENTS}; {cs.STRIDES_ANY}",
        ),
        _theorem(
            "sym.right-inverse-size",
            "size(right_inverse(L)) divides size(L), for all extents and strides, at every rank",
            "size(L) mod size(right_inverse(L)) == 0. From the invariant: size(R) is cur, the product of the "
            "extents of the modes used (each step multiplies cur by the picked extent; the pick lemma "
            "takes each mode at most once), which divides the product of all of coalesce(L)'s extents, "
            "size(L). " + rstep,
            rrun("size(right_inverse(L)) | size(L)", su.right_inverse_size_instance, (1, 2, 3, 4)),
            sc_r.format("1-4"),
            f"{cs.EXTENTS}; {cs.STRIDES_ANY}",
        ),
    ]
    return out


THEOREMS: List[Theorem] = _build()
