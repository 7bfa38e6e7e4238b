"""Symbolic-execution instances of the one-layout operations: coalesce, filter, complement,
right_inverse and left_inverse of :mod:`layoutproof.symbolic.symops`, each at a fixed flat rank
(:mod:`.symbolic`'s engine).  The induction modules run them as the bases and supplements of
their every-rank theorems.

>>> inst = coalesce_function_instance(sy.sym_layout("L", 2))
>>> inst.label
'rank 2'
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple

from layoutproof.errors import InadmissibleError
from layoutproof.layout import Layout
from layoutproof.symbolic import sympy_module as _sp

from .. import symexec as sx
from ..symexec import symops_module as _ops
from ..symexec import z3_module as _z3
from . import symbolic as sy


# ----------------------------------------------------------------------------- coalesce
def _post_instance(L: Layout, op: str, run: Callable[[], Any], build: sy.Builder) -> sy.Instance:
    """``op`` run on L (``run``), its claim built by ``build``, a refutation confirmed by the
    integer post-condition of ``op`` on L."""
    return sy.Instance(sy.rank_label(L), run, build, sy.confirm_post(op, lambda p: p.value, L))


def coalesce_function_instance(L: Layout) -> sy.Instance:
    ops = _ops()

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        R = cx.path.value
        cs, idx, val = sx.natural(cx.enc, cx.dg, L)
        rs, rd = sx.flat_modes(R)
        claims, rval = sy.eval_at_offset(cx, rs, rd, sy.input_terms(L, cs), idx, unbounded_last=False)
        return [], z3.And(claims + [rval == val])

    n = len(sx.flat_modes(L)[0])
    return sy.Instance(
        f"rank {n}", lambda: ops.coalesce(L), build, sy.confirm_post("coalesce", lambda p: p.value, L)
    )


def coalesce_size_instance(L: Layout) -> sy.Instance:
    ops = _ops()

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        R = cx.path.value
        e = cx.enc
        return [], sy.zprod(e, sx.flat_modes(R)[0]) == sy.zprod(e, sx.flat_modes(L)[0])

    n = len(sx.flat_modes(L)[0])
    return sy.Instance(
        f"rank {n}", lambda: ops.coalesce(L), build, sy.confirm_post("coalesce", lambda p: p.value, L)
    )


def coalesce_depth_instance(L: Layout) -> sy.Instance:
    ops = _ops()

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        return [], _z3().BoolVal(cx.path.value.depth <= 1)

    n = len(sx.flat_modes(L)[0])
    return sy.Instance(
        f"rank {n}", lambda: ops.coalesce(L), build, sy.confirm_post("coalesce", lambda p: p.value, L)
    )


def coalesce_idempotent_instance(L: Layout) -> sy.Instance:
    ops = _ops()

    def fn() -> Any:
        R = ops.coalesce(L)
        return R, ops.coalesce(R)

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        R, RR = cx.path.value
        return [], sy.same_layout(cx, R, RR)

    n = len(sx.flat_modes(L)[0])
    return sy.Instance(f"rank {n}", fn, build, sy.confirm_equal(lambda p: p.value[0], lambda p: p.value[1]))


def coalesce_keep_last_instance(L: Layout) -> sy.Instance:
    """The composition's view of A: coalesce keeping the last mode, extended along it."""
    ops = _ops()
    fs, fd = sx.flat_modes(L)

    def fn() -> Any:
        return ops.coalesce_flat(tuple(fs), tuple(fd), keep_last=True)

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        rs, rd = cx.path.value
        e = cx.enc
        # L extended along its last mode: digits c_k < s_k for k < last, the last unbounded
        cs = [cx.dg.new(e, s, "c") for s in fs[:-1]]
        top = e.fresh("c")
        cs.append(top)
        ctx = [top >= 0]
        idx = sx.index_of(e, fs, cs)
        val = sx.value_of(e, fd, cs)
        terms = [(c, s, p) for c, s, p in zip(cs, fs, sy.prefixes(fs))]
        claims, rval = sy.eval_at_offset(cx, rs, rd, terms, idx, unbounded_last=True)
        return ctx, z3.And(claims + [rval == val, z3.BoolVal(len(rs) >= 1)])

    n = len(fs)
    return sy.Instance(f"rank {n}", fn, build, lambda asg, p: None)


def filter_instance(L: Layout) -> sy.Instance:
    ops = _ops()

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        sp = _sp()
        e = cx.enc
        F = cx.path.value
        fs, fd = sx.flat_modes(L)
        kept = []
        for s_, d_ in zip(fs, fd):
            if sx.implied(sp.Eq(s_, 1), cx.facts, subs=e.subs) or sx.implied(
                sp.Eq(d_, 0), cx.facts, subs=e.subs
            ):
                continue
            if not (
                sx.implied(sp.Ne(s_, 1), cx.facts, subs=e.subs)
                and sx.implied(sp.Ne(d_, 0), cx.facts, subs=e.subs)
            ):
                raise sx.NoPlacement("which modes filter drops is not decided on this path")
            kept.append((s_, d_))
        cs_, _idx, lval = sx.natural(e, cx.dg, L)
        kc = [c for c, (s_, d_) in zip(cs_, zip(fs, fd)) if (s_, d_) in kept]
        ks = [m[0] for m in kept]
        terms = [(c, s_, p) for c, s_, p in zip(kc, ks, sy.prefixes(ks))] if kept else []
        rs, rd = sx.flat_modes(F)
        claims, fval = sy.eval_at_offset(
            cx, rs, rd, terms, sx.index_of(e, ks, kc) if kept else 0, unbounded_last=False
        )
        claims.append(sy.zprod(e, rs) == (sy.zprod(e, ks) if kept else 1))  # F's domain: the kept coordinates
        claims += [z3.Or(e.t(a) == 1, e.t(b) != 0) for a, b in zip(rs, rd)]  # no stride-0 mode
        return [], z3.And(claims + [fval == lval])

    n = len(sx.flat_modes(L)[0])
    return sy.Instance(
        f"rank {n}", lambda: ops.filter_(L), build, sy.confirm_post("filter", lambda p: p.value, L)
    )


# ----------------------------------------------------------------------------- complement
def _order(cx: sy.Ctx, modes: List[Tuple[Any, Any]]) -> Optional[List[Tuple[Any, Any]]]:
    """The modes (extent, stride) sorted by stride, each comparison implied by the path."""
    sp = _sp()
    out: List[Tuple[Any, Any]] = []
    for m in modes:
        pos = len(out)
        for j, o in enumerate(out):
            if sx.implied(sp.Lt(m[1], o[1]), cx.facts, subs=cx.enc.subs):
                pos = j
                break
            if not sx.implied(sp.Ge(m[1], o[1]), cx.facts, subs=cx.enc.subs):
                return None
        out.insert(pos, m)
    return out


def _kept_modes(cx: sy.Ctx, L: Layout) -> Optional[List[Tuple[Any, Any]]]:
    """L's modes that are neither extent 1 nor stride 0 on this path (None if the path
    does not say)."""
    sp = _sp()
    out = []
    for s, d in zip(*sx.flat_modes(L)):
        if sx.implied(sp.Eq(s, 1), cx.facts, subs=cx.enc.subs) or sx.implied(
            sp.Eq(d, 0), cx.facts, subs=cx.enc.subs
        ):
            continue
        if not (
            sx.implied(sp.Ne(s, 1), cx.facts, subs=cx.enc.subs)
            and sx.implied(sp.Ne(d, 0), cx.facts, subs=cx.enc.subs)
        ):
            return None
        out.append((s, d))
    return out


def complement_instance(L: Layout, M: Any) -> sy.Instance:
    ops = _ops()

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        C = cx.path.value
        kept = _kept_modes(cx, L)
        if kept is None:
            raise sx.NoPlacement("which modes of L are ignored is not decided on this path")
        cm = [m for m in zip(*sx.flat_modes(C)) if not sx.implied(_sp().Eq(m[0], 1), cx.facts, subs=e.subs)]
        allm = _order(cx, kept + cm)
        if allm is None:
            raise sx.NoPlacement("the order of the strides is not decided on this path")
        claims = []
        cur: Any = 1
        for s_, d_ in allm:  # sorted by stride, each stride is the product of the extents below
            claims.append(e.t(d_) == e.t(cur))
            cur = cur * s_
        K = sy.zprod(e, [m[0] for m in allm])
        claims.append(K >= e.t(M))  # fills [0, M) ...
        claims.append(K < e.t(M) + e.t(_cover(kept)))  # ... rounded up to L's cover
        cs, cd = sx.flat_modes(C)
        for k in range(len(cd) - 1):  # C is ordered
            claims.append(e.t(cd[k]) < e.t(cd[k + 1]))
        return [], z3.And(claims)

    n = len(sx.flat_modes(L)[0])
    return sy.Instance(
        f"rank {n}",
        lambda: ops.complement(L, M),
        build,
        sy.confirm_post("complement", lambda p: p.value, L, M),
    )


def _cover(kept: List[Tuple[Any, Any]]) -> Any:
    """The extent L's kept modes cover: the largest stride*extent (the complement rounds M
    up to a multiple of it)."""
    sp = _sp()
    if not kept:
        return sp.Integer(1)
    return sp.Max(*[s * d for s, d in kept]) if len(kept) > 1 else kept[0][0] * kept[0][1]


def complement_chain_instance(L: Layout, M: Any) -> sy.Instance:
    """Admissibility is exactly the stride chain: on every path that returns, the sorted
    kept modes satisfy s_k*d_k | d_{k+1}; on every inadmissible path they do not."""
    ops = _ops()

    def chain(cx: sy.Ctx) -> Optional[Any]:
        sp = _sp()
        kept = _kept_modes(cx, L)
        if kept is None:
            return None
        allm = _order(cx, kept)
        if allm is None:
            return None
        conds = [sp.Eq(sp.Mod(b[1], a[0] * a[1]), 0) for a, b in zip(allm, allm[1:])]
        nonneg = [sp.Ge(d, 0) for _s, d in kept]
        return sp.And(*(conds + nonneg)) if conds or nonneg else sp.true

    def fn() -> Any:
        try:
            return "admissible", ops.complement(L, M)
        except Exception as e:  # noqa: BLE001 - inadmissible paths are part of the statement
            if isinstance(e, InadmissibleError):
                return "inadmissible", e
            raise

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        c = chain(cx)
        if c is None:
            raise sx.NoPlacement("the kept modes or their order are not decided on this path")
        tag, _v = cx.path.value
        zc = cx.enc.t(c)
        return [], zc if tag == "admissible" else z3.Not(zc)

    n = len(sx.flat_modes(L)[0])
    return sy.Instance(f"rank {n}", fn, build, sy.confirm_chain("complement", L))


# ----------------------------------------------------------------------------- inverses
def right_inverse_instance(L: Layout) -> sy.Instance:
    ops = _ops()
    fs, fd = sx.flat_modes(L)

    def fn() -> Any:
        return ops.coalesce_flat(tuple(fs), tuple(fd)), ops.right_inverse(L)

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        (cs_, cd_), R = cx.path.value
        rs, rd = sx.flat_modes(R)
        gs = [cx.dg.new(e, s_, "g") for s_ in rs]
        idx = sx.index_of(e, rs, gs)
        off = sx.value_of(e, rd, gs)
        terms = [(g, s_, d_) for g, s_, d_ in zip(gs, rs, rd)]
        # L evaluated through coalesce(L): the same function (theorem sym.coalesce-function)
        claims, lval = sy.eval_at_offset(cx, cs_, cd_, terms, off, unbounded_last=False)
        return [], z3.And(claims + [lval == idx])

    return sy.Instance(
        f"rank {len(fs)}", fn, build, sy.confirm_post("right_inverse", lambda p: p.value[1], L)
    )


def left_inverse_instance(L: Layout) -> sy.Instance:
    ops = _ops()
    fs, fd = sx.flat_modes(L)

    def fn() -> Any:
        return ops.coalesce_flat(tuple(fs), tuple(fd)), ops.left_inverse(L)

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        sp = _sp()
        z3 = _z3()
        e = cx.enc
        (cs_, cd_), R = cx.path.value
        rs, rd = sx.flat_modes(R)
        cs, idx, lval = sx.natural(e, cx.dg, L)
        terms = [(c, s_, d_) for c, s_, d_ in zip(cs, fs, fd)]
        c1, rdig = _digits_at(cx, rs, terms, lval)
        injective = all(
            sx.implied(sp.Or(sp.Eq(s_, 1), sp.Ne(d_, 0)), cx.facts, subs=e.subs) for s_, d_ in zip(fs, fd)
        )
        rval = sx.value_of(e, rd, rdig)
        if injective:  # R(L(i)) == i
            return [], z3.And(c1 + [rval == idx])
        terms2 = [(g, s_, d_) for g, s_, d_ in zip(rdig, rs, rd)]
        # L at R(L(i)) through coalesce(L): the same function (theorem sym.coalesce-function)
        c2, lval2 = sy.eval_at_offset(cx, cs_, cd_, terms2, rval, unbounded_last=False)
        return [], z3.And(c1 + c2 + [lval2 == lval])  # L(R(L(i))) == L(i)

    return sy.Instance(f"rank {len(fs)}", fn, build, sy.confirm_post("left_inverse", lambda p: p.value[1], L))


def _digits_at(
    cx: sy.Ctx, shape: Sequence[Any], terms: List[Tuple[Any, Any, Any]], offset: Any
) -> Tuple[List[Any], List[Any]]:
    enc = cx.enc
    digs = sx.place(enc, shape, terms, cx.facts, unbounded_last=False)
    claims = sy.bounded(enc, shape, digs)
    claims.append(sx.index_of(enc, shape, digs) == offset)
    return claims, digs


def coalesce_cosize_instance(L: Layout) -> sy.Instance:
    ops = _ops()

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        return [], sy.zcosize(cx.enc, cx.path.value) == sy.zcosize(cx.enc, L)

    return sy.Instance(
        sy.rank_label(L), lambda: ops.coalesce(L), build, sy.confirm_post("coalesce", lambda p: p.value, L)
    )


def coalesce_maximal_instance(L: Layout) -> sy.Instance:
    """No mode of coalesce(L) has extent 1 (but the 1:0 of an all-unit L) and no two
    neighbouring modes could merge (d_{k+1} != s_k d_k)."""
    ops = _ops()

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        rs, rd = sx.flat_modes(cx.path.value)
        if len(rs) == 1 and rs[0] == 1 and rd[0] == 0:
            return [], z3.BoolVal(True)
        claims = [e.t(s_) != 1 for s_ in rs]
        claims += [e.t(rd[k + 1]) != e.t(rs[k]) * e.t(rd[k]) for k in range(len(rs) - 1)]
        return [], z3.And(claims)

    return sy.Instance(
        sy.rank_label(L), lambda: ops.coalesce(L), build, sy.confirm_post("coalesce", lambda p: p.value, L)
    )


def filter_cosize_instance(L: Layout) -> sy.Instance:
    ops = _ops()

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        return [], sy.zcosize(cx.enc, cx.path.value) == sy.zcosize(cx.enc, L)

    return sy.Instance(
        sy.rank_label(L), lambda: ops.filter_(L), build, sy.confirm_post("filter", lambda p: p.value, L)
    )


def _pair_same(first: Callable[[], Any], second: Callable[[Any], Any], label: str) -> sy.Instance:
    """``second(first())`` is the same layout as ``first()`` (profile, extents, strides)."""

    def fn() -> Any:
        X = first()
        return X, second(X)

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        X, Y = cx.path.value
        return [], sy.same_layout(cx, X, Y)

    return sy.Instance(label, fn, build, sy.confirm_equal(lambda p: p.value[0], lambda p: p.value[1]))


def filter_idempotent_instance(L: Layout) -> sy.Instance:
    ops = _ops()
    return _pair_same(lambda: ops.filter_(L), ops.filter_, sy.rank_label(L))


def filter_coalesced_instance(L: Layout) -> sy.Instance:
    ops = _ops()
    return _pair_same(lambda: ops.filter_(L), ops.coalesce, sy.rank_label(L))


def complement_size_instance(L: Layout, M: Any) -> sy.Instance:
    ops = _ops()

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        e = cx.enc
        C = cx.path.value
        return [], sy.zprod(e, sx.flat_modes(L)[0]) * sy.zprod(e, sx.flat_modes(C)[0]) >= e.t(M)

    return sy.Instance(
        sy.rank_label(L),
        lambda: ops.complement(L, M),
        build,
        sy.confirm_post("complement", lambda p: p.value, L, M),
    )


def right_inverse_image_instance(L: Layout) -> sy.Instance:
    """0 <= R(i) < size(L) for every i < size(R), R = right_inverse(L)."""
    ops = _ops()

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        rs, rd = sx.flat_modes(cx.path.value)
        gs = [cx.dg.new(e, s_, "g") for s_ in rs]
        off = sx.value_of(e, rd, gs)
        for g, s_, d_ in zip(gs, rs, rd):
            e.monotone(g, s_, e.t(d_))
        return [], z3.And(off >= 0, off < sy.zprod(e, sx.flat_modes(L)[0]))

    return _post_instance(L, "right_inverse", lambda: ops.right_inverse(L), build)


def right_inverse_size_instance(L: Layout) -> sy.Instance:
    """size(right_inverse(L)) divides size(L)."""
    ops = _ops()

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        sp = _sp()
        rs, _rd = sx.flat_modes(cx.path.value)
        return [], cx.enc.t(sp.Mod(sy.product_of(sx.flat_modes(L)[0]), sy.product_of(rs))) == 0

    return _post_instance(L, "right_inverse", lambda: ops.right_inverse(L), build)


def left_inverse_cover_instance(L: Layout) -> sy.Instance:
    """size(left_inverse(L)) >= cosize(L): the inverse's domain holds L's whole image."""
    ops = _ops()

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        e = cx.enc
        rs, _rd = sx.flat_modes(cx.path.value)
        return [], sy.zprod(e, rs) >= sy.zcosize(e, L)

    return _post_instance(L, "left_inverse", lambda: ops.left_inverse(L), build)


def _left_inverse_chain_cond(cx: sy.Ctx, C: Layout) -> Optional[Any]:
    """The modes of ``C`` (coalesce(L) on the path) other than extent 1 and stride 0, sorted
    by stride, satisfy d_k | d_{k+1} and s_k d_k <= d_{k+1}, strides non-negative (None when
    the path does not decide those modes or their order)."""
    sp = _sp()
    kept = _kept_modes(cx, C)
    if kept is None:
        return None
    allm = _order(cx, kept)
    if allm is None:
        return None
    conds: List[Any] = [sp.Ge(d, 0) for _s, d in kept]
    for a, b in zip(allm, allm[1:]):
        conds += [sp.Eq(sp.Mod(b[1], a[1]), 0), sp.Le(a[0] * a[1], b[1])]
    return sp.And(*conds) if conds else sp.true


def _left_inverse_run(L: Layout) -> Callable[[], Any]:
    """left_inverse(L) with its refusal made a value (:func:`raises`), plus coalesce(L)'s
    modes computed on the same path (left_inverse works on them)."""
    ops = _ops()
    fs, fd = sx.flat_modes(L)

    def fn() -> Any:
        cs_, cd_ = ops.coalesce_flat(tuple(fs), tuple(fd))
        tag, v = sy.raises(lambda: ops.left_inverse(L))()
        return tag, v, sy.lay(cs_, cd_)

    return fn


def left_inverse_chain_instance(L: Layout) -> sy.Instance:
    """left_inverse returns exactly when coalesce(L)'s sorted kept modes form the chain;
    every path that raises (inadmissible, or a side condition the path refutes) violates
    it."""

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        tag, _v, C = cx.path.value
        c = _left_inverse_chain_cond(cx, C)
        if c is None:
            raise sx.NoPlacement("the kept modes or their order are not decided on this path")
        zc = cx.enc.t(c)
        return [], zc if tag == "admissible" else z3.Not(zc)

    return sy.Instance(
        sy.rank_label(L), _left_inverse_run(L), build, sy.confirm_chain("left_inverse", L), strict=True
    )


def left_inverse_overlap_instance(L: Layout) -> sy.Instance:
    """Where left_inverse raises for injectivity, coalesce(L) -- and so L, which has its
    function (sym.coalesce-function) -- is not injective: two distinct coordinates with the
    same value, (d_b/d_a in mode a) and (1 in mode b), for two kept modes a != b with
    d_a | d_b and s_a d_a > d_b decided on the path."""

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        sp = _sp()
        z3 = _z3()
        e = cx.enc
        tag, err, C = cx.path.value
        if tag == "admissible" or "injectivity" not in str(err):
            return [], z3.BoolVal(True)  # the statement is about the injectivity refusals only
        kept = _kept_modes(cx, C)
        if kept is None:
            raise sx.NoPlacement("the kept modes are not decided on this path")
        for ia, a in enumerate(kept):
            for ib, b in enumerate(kept):
                if ia == ib:
                    continue
                if sx.implied(sp.Eq(sp.Mod(b[1], a[1]), 0), cx.facts, subs=e.subs) and sx.implied(
                    sp.Gt(a[0] * a[1], b[1]), cx.facts, subs=e.subs
                ):
                    q = e.t(sp.floor(b[1] / a[1]))
                    # x: q in mode a, 0 elsewhere; y: 1 in mode b, 0 elsewhere: distinct (their
                    # digits in mode b differ), both in range, the same value
                    return [], z3.And(q >= 0, q < e.t(a[0]), 1 < e.t(b[0]), q * e.t(a[1]) == e.t(b[1]))
        raise sx.NoPlacement("no overlapping pair of modes is decided on this path")

    return sy.Instance(sy.rank_label(L), _left_inverse_run(L), build, lambda asg, p: None, need_result=False)


def filter_size_instance(L: Layout) -> sy.Instance:
    """size(filter(L)) <= size(L), and == when L has no stride-0 mode of extent > 1."""
    ops = _ops()

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        fs, fd = sx.flat_modes(L)
        F = sy.zprod(e, sx.flat_modes(cx.path.value)[0])
        no_zero = z3.And([z3.Or(e.t(s_) == 1, e.t(d_) != 0) for s_, d_ in zip(fs, fd)])
        return [], z3.And(F <= sy.zprod(e, fs), z3.Implies(no_zero, F == sy.zprod(e, fs)))

    return sy.Instance(
        sy.rank_label(L), lambda: ops.filter_(L), build, sy.confirm_post("filter", lambda p: p.value, L)
    )


def right_inverse_two_sided_instance(L: Layout) -> sy.Instance:
    """When right_inverse(L) has L's size, it is also a left inverse: R(L(i)) == i."""
    ops = _ops()
    fs, fd = sx.flat_modes(L)

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        R = cx.path.value
        rs, rd = sx.flat_modes(R)
        cs, idx, lval = sx.natural(e, cx.dg, L)
        terms = [(c, s_, d_) for c, s_, d_ in zip(cs, fs, fd)]
        full = sy.zprod(e, rs) == sy.zprod(e, fs)  # the hypothesis
        claims, rdig = _digits_at(cx, rs, terms, lval)
        rval = sx.value_of(e, rd, rdig)
        return [full], z3.And(claims + [rval == idx])

    return _post_instance(L, "right_inverse", lambda: ops.right_inverse(L), build)
