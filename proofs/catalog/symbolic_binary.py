"""Symbolic-execution instances of the operations on two or more layouts -- composition, the
divides and products and their regroupings, associativity -- and the swizzle functor's
bit-vector theorems; the theorems of the group "All values" stated at fixed ranks
(:mod:`.symbolic`'s engine; the every-rank theorems are in the induction modules).

>>> [t.id for t in THEOREMS][:2]
['sym.coalesce-extended', 'sym.zipped-regroup']
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from layoutproof import ops
from layoutproof import ops as iops
from layoutproof.layout import Layout
from layoutproof.swizzle import Swizzle
from layoutproof.symbolic import sympy_module as _sp
from layoutproof.verify import Counterexample, Result, postcondition
from layoutproof.verify.result import ProofObligation

from .. import symexec as sx
from ..symexec import symops_module as _ops
from ..symexec import z3_module as _z3
from ..theorem import Theorem
from . import symbolic as sy
from . import symbolic_unary as su


def _one(
    make: Callable[..., sy.Instance], main: Sequence[Any], full: Sequence[Any], claim: str
) -> Callable[[], List[Result]]:
    def check() -> List[Result]:
        return sy.prove(claim, [make(*args) for args in (full if sy.full_scope() else main)])

    return check


def _scope(main: str, full: str) -> str:
    return f"{main} in `layoutproof prove`; {full} with `layoutproof prove --all`"


# ----------------------------------------------------------------------------- composition
def composition_claims(
    cx: sy.Ctx, A: Layout, B: Layout, As: Sequence[Any], Ad: Sequence[Any], R: Layout
) -> Tuple[List[Any], Any]:
    """The composition post-condition on a path: R is compatible with B (leaf by leaf, the
    sizes agree) and R(c) == Â(B(c)) at every coordinate c of B, with Â the coalesced A
    (``As``, ``Ad``) extended along its last mode.  Quantified over R's own digits (a
    refinement of B's coordinates)."""
    z3 = _z3()
    sp = _sp()
    e = cx.enc
    bs, bd = sx.flat_modes(B)
    leaves = sy.by_profile(R, B.shape)
    if leaves is None:
        return [], z3.BoolVal(False)
    claims: List[Any] = []
    terms: List[Tuple[Any, Any, Any]] = []
    rval: Any = 0
    boff: Any = 0
    for (rs, rd), n, r in zip(leaves, bs, bd):
        claims.append(sy.zprod(e, rs) == e.t(n))
        gs = [cx.dg.new(e, s, "g") for s in rs]
        ck = sx.index_of(e, rs, gs)
        boff = boff + ck * e.t(r)
        rval = rval + sx.value_of(e, rd, gs)
        for g, s, p in zip(gs, rs, sy.prefixes(rs)):
            terms.append((g, s, sp.expand(p * r)))
    more, aval = sy.eval_at_offset(cx, list(As), list(Ad), terms, boff, unbounded_last=True)
    return [], z3.And(claims + more + [rval == aval])


def composition_instance(A: Layout, B: Layout) -> sy.Instance:
    ops = _ops()
    fa, da = sx.flat_modes(A)

    def fn() -> Any:
        As, Ad = ops.coalesce_flat(tuple(fa), tuple(da), keep_last=True)
        return As, Ad, ops.composition(A, B)

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        As, Ad, R = cx.path.value
        return composition_claims(cx, A, B, As, Ad, R)

    return sy.Instance(
        f"A rank {len(fa)}, B rank {len(sx.flat_modes(B)[0])}",
        fn,
        build,
        sy.confirm_post("composition", lambda p: p.value[2], A, B),
    )


def right_identity_instance(A: Layout) -> sy.Instance:
    """A o (size(A):1) has A's function: composition_claims with B = size(A):1."""
    ops = _ops()
    fa, da = sx.flat_modes(A)
    B = Layout.trusted(A.size, 1)

    def fn() -> Any:
        As, Ad = ops.coalesce_flat(tuple(fa), tuple(da), keep_last=True)
        return As, Ad, ops.composition(A, B)

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        As, Ad, R = cx.path.value
        return composition_claims(cx, A, B, As, Ad, R)

    return sy.Instance(
        f"A rank {len(fa)}", fn, build, sy.confirm_post("composition", lambda p: p.value[2], A, B)
    )


def left_identity_instance(B: Layout) -> sy.Instance:
    """(N:1) o B == B as functions (N a symbol; the identity extended past N)."""
    ops = _ops()
    N = sy.extents("N", 1)[0]
    A = Layout.trusted(N, 1)

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        R = cx.path.value
        bs, bd = sx.flat_modes(B)
        leaves = sy.by_profile(R, B.shape)
        if leaves is None:
            return [], z3.BoolVal(False)
        claims: List[Any] = []
        for (rs, rd), n, r in zip(leaves, bs, bd):
            c = cx.dg.new(e, n, "c")
            claims.append(sy.zprod(e, rs) == e.t(n))
            digs = sx.place(e, rs, [(c, n, _sp().Integer(1))], cx.facts, unbounded_last=False)
            claims += sy.bounded(e, rs, digs)
            claims.append(sx.index_of(e, rs, digs) == c)
            claims.append(sx.value_of(e, rd, digs) == c * e.t(r))
        return [], z3.And(claims)

    return sy.Instance(
        f"B rank {len(sx.flat_modes(B)[0])}",
        lambda: ops.composition(A, B),
        build,
        sy.confirm_post("composition", lambda p: p.value, A, B),
    )


# ----------------------------------------------------------------------------- divide / product
def logical_divide_instance(L: Layout, T: Layout) -> sy.Instance:
    """logical_divide(L, T) == L o (T, complement(T, size(L))): the composition
    post-condition of the result against that layout, both computed on the path."""
    ops = _ops()

    fa, da = sx.flat_modes(L)

    def fn() -> Any:
        As, Ad = ops.coalesce_flat(tuple(fa), tuple(da), keep_last=True)
        C = ops.complement(T, L.size)
        return As, Ad, C, iops.logical_divide(L, T)

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        As, Ad, C, R = cx.path.value
        B = Layout.trusted((T.shape, C.shape), (T.stride, C.stride))
        return composition_claims(cx, L, B, As, Ad, R)

    def result(p: sx.Path) -> Any:
        return p.value[3]

    def confirm(asg: Dict[str, int], p: sx.Path) -> Optional[str]:

        try:
            R, L2, T2 = sy.subs_layout(result(p), asg), sy.subs_layout(L, asg), sy.subs_layout(T, asg)
            r = postcondition("logical_divide", R, L2, T2)
        except Exception:  # noqa: BLE001
            return None
        return None if r.status != "refuted" else f"logical_divide({L2}, {T2}) = {R}: {r.counterexample}"

    return sy.Instance(f"L rank {len(fa)}, T rank {len(sx.flat_modes(T)[0])}", fn, build, confirm)


def logical_product_instance(A: Layout, B: Layout) -> sy.Instance:
    """logical_product(A, B) == (A, complement(A, size(A)*cosize(B)) o B)."""
    ops = _ops()

    def fn() -> Any:
        C = ops.complement(A, A.size * B.cosize)
        cs_, cd_ = sx.flat_modes(C)
        As, Ad = ops.coalesce_flat(tuple(cs_), tuple(cd_), keep_last=True)
        return C, As, Ad, iops.logical_product(A, B)

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        C, As, Ad, R = cx.path.value
        if type(R.shape) is not tuple or len(R.shape) != 2:
            return [], z3.BoolVal(False)
        R0 = Layout.trusted(R.shape[0], R.stride[0])
        R1 = Layout.trusted(R.shape[1], R.stride[1])
        ctx, comp = composition_claims(cx, C, B, As, Ad, R1)
        return ctx, z3.And(sy.same_layout(cx, R0, A), comp)

    def confirm(asg: Dict[str, int], p: sx.Path) -> Optional[str]:

        try:
            R, A2, B2 = sy.subs_layout(p.value[3], asg), sy.subs_layout(A, asg), sy.subs_layout(B, asg)
            r = postcondition("logical_product", R, A2, B2)
        except Exception:  # noqa: BLE001
            return None
        return None if r.status != "refuted" else f"logical_product({A2}, {B2}) = {R}: {r.counterexample}"

    return sy.Instance(
        f"A rank {len(sx.flat_modes(A)[0])}, B rank {len(sx.flat_modes(B)[0])}", fn, build, confirm
    )


def _regroup(kind: str, n_extra: int = 1, impl: Any = None, n: int = 2) -> sy.Instance:
    """zipped / tiled / flat: the library's regrouping code (``_unzip_entry``, ``_tiled``,
    ``_flat2`` of ``ops``, shared by the divides and the products) applied to an opaque
    by-mode operation whose every part is a fresh symbol: the result is the by-mode result's
    tiles and rests rearranged, leaf for leaf, whatever the by-mode operation returns."""

    iops = ops if impl is None else impl
    L = sy.sym_layout("L", n + n_extra)
    tiler = tuple(sy.sym_layout(f"T{i}_", 1) for i in range(n))
    sp = _sp()
    counter = [0]

    def opaque(Li: Layout, Ti: Layout) -> Layout:
        k = counter[0] = counter[0] + 1
        a = sp.symbols(f"a{k}_0 a{k}_1 c{k}", integer=True, positive=True)
        b = sp.symbols(f"b{k}_0 b{k}_1 e{k}", integer=True)
        return Layout.trusted(((a[0], a[1]), a[2]), ((b[0], b[1]), b[2]))

    def fn() -> Any:
        counter[0] = 0
        P = iops._by_mode_tiler(L, tiler, opaque, kind)
        counter[0] = 0
        Z = iops._unzip_entry(opaque, L, tiler, kind)
        R = Z if kind == "zipped" else iops._tiled(Z) if kind == "tiled" else iops._flat2(Z)
        return P, R

    def expected(P: Layout) -> Layout:
        ps: Any = P.shape  # nested ((tile, rest), ...): indexed as Any
        pd: Any = P.stride
        first = [(ps[i][0], pd[i][0]) for i in range(n)]
        second = [(ps[i][1], pd[i][1]) for i in range(n)]
        rest = [(ps[i], pd[i]) for i in range(n, len(ps))]
        if kind == "zipped":
            sec = second + rest
            return Layout.trusted(
                (tuple(f[0] for f in first), tuple(x[0] for x in sec)),
                (tuple(f[1] for f in first), tuple(x[1] for x in sec)),
            )
        if kind == "tiled":
            sec = second + rest
            return Layout.trusted(
                (tuple(f[0] for f in first),) + tuple(x[0] for x in sec),
                (tuple(f[1] for f in first),) + tuple(x[1] for x in sec),
            )
        return Layout.trusted(
            tuple(m[0] for m in first + second + rest), tuple(m[1] for m in first + second + rest)
        )

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        P, R = cx.path.value
        return [], sy.same_layout(cx, R, expected(P))

    return sy.Instance(
        f"L rank {n + n_extra}, tiler of {n} layouts, opaque by-mode parts",
        fn,
        build,
        sy.confirm_equal(lambda p: p.value[1], lambda p: expected(p.value[0])),
    )


def associativity_instance(A: Layout, B: Layout, C: Layout) -> sy.Instance:
    """(A o B) o C == A o (B o C) as functions on C's domain, on every path where both sides
    are admissible."""

    def fn() -> Any:
        return iops.composition(iops.composition(A, B), C), iops.composition(A, iops.composition(B, C))

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        X, Y = cx.path.value
        lx = sy.by_profile(X, C.shape)
        ly = sy.by_profile(Y, C.shape)
        if lx is None or ly is None:
            return [], z3.BoolVal(False)
        cs_, cd_ = sx.flat_modes(C)
        claims: List[Any] = []
        ctx: List[Any] = []
        vx: Any = 0
        vy: Any = 0
        for (xs, xd), (ys, yd), n, dc in zip(lx, ly, cs_, cd_):
            c = cx.dg.new(e, n, "c")
            # inside the domains: C(c) in B's domain, B(C(c)) in A's (B is rank 1 here)
            ctx += [
                c * e.t(dc) >= 0,
                c * e.t(dc) < e.t(B.size),
                c * e.t(dc) * e.t(sx.flat_modes(B)[1][0]) < e.t(A.size),
            ]
            for sh, st, acc in ((xs, xd, "x"), (ys, yd, "y")):
                claims.append(sy.zprod(e, sh) == e.t(n))
                digs = sx.place(e, sh, [(c, n, _sp().Integer(1))], cx.facts, unbounded_last=False)
                claims += sy.bounded(e, sh, digs)
                claims.append(sx.index_of(e, sh, digs) == c)
                v = sx.value_of(e, st, digs)
                if acc == "x":
                    vx = vx + v
                else:
                    vy = vy + v
        return ctx, z3.And(claims + [vx == vy])

    return sy.Instance(
        "A, B, C rank 1"
        if all(len(sx.flat_modes(x)[0]) == 1 for x in (A, B, C))
        else f"ranks {len(sx.flat_modes(A)[0])}, {len(sx.flat_modes(B)[0])}, {len(sx.flat_modes(C)[0])}",
        fn,
        build,
        sy.confirm_equal(lambda p: p.value[0], lambda p: p.value[1]),
    )


# ----------------------------------------------------------------------------- swizzle
SWZ_MAX = 20  # B, M, |S| up to 20 (M + B + |S| <= 60: the 64-bit offsets the library uses)


def _signed(v: int, width: int) -> int:
    return v - (1 << width) if v >= 1 << (width - 1) else v


def _swizzle_check(what: str, separated: bool = True) -> List[Result]:
    """One bit-vector query for every (B, M, S) at once (B, M, S are Z3 variables), plus
    the library's masks and shifts compared with the same formula for every triple."""
    z3 = _z3()

    t0 = time.perf_counter()
    W = 64
    B, M, S, x, y = (z3.BitVec(n, W) for n in ("B", "M", "S", "x", "y"))
    one = z3.BitVecVal(1, W)
    pos = S >= 0
    absS = z3.If(pos, S, -S)
    Y = ((one << B) - 1) << (M + z3.If(pos, S, z3.BitVecVal(0, W)))

    def f(v: Any) -> Any:
        return z3.If(pos, v ^ z3.LShR(v & Y, S), v ^ ((v & Y) << -S))

    top = M + B + absS
    dom = [B >= 0, B <= SWZ_MAX, M >= 0, M <= SWZ_MAX, S >= -SWZ_MAX, S <= SWZ_MAX]
    if separated:  # the library's condition |S| >= B (the YYY and ZZZ fields do not overlap)
        dom.append(z3.Or(B == 0, absS >= B))
    if what == "involution":
        claim = f(f(x)) == x
    elif what == "bijection":
        claim = z3.Implies(f(x) == f(y), x == y)
    elif what == "zzz-only":  # only the ZZZ field changes
        Z = ((one << B) - 1) << (M + z3.If(pos, z3.BitVecVal(0, W), -S))
        claim = (f(x) ^ x) & ~Z == 0
    elif what == "xor-linear":  # linear over F2
        claim = f(x ^ y) == f(x) ^ f(y)
    else:  # closed on each aligned block [k 2^top, (k+1) 2^top)
        claim = z3.LShR(f(x), top) == z3.LShR(x, top)
    from layoutproof.symbolic import solver

    v = solver.prove(claim, dom, timeout_s=20.0, name=f"swizzle {what} for all B, M, S")
    dt = time.perf_counter() - t0

    class _BV:
        def smt2(self) -> str:
            return f"; swizzle {what} for every B, M, S (bit-vectors)\n" + v.smtlib

    verdict = v.z3_answer
    ob = ProofObligation(f"swizzle {what} for all B, M, S", what, (), verdict, _BV(), dt)
    # the library's own masks and shifts are the formula's, for every triple in scope
    bad = None
    n = 0
    for b in range(0, SWZ_MAX + 1):
        for m in range(0, SWZ_MAX + 1):
            for sh in range(-SWZ_MAX, SWZ_MAX + 1):
                if b and abs(sh) < b:
                    continue
                n += 1
                sw = Swizzle(b, m, sh)
                want_y = ((1 << b) - 1) << (m + max(sh, 0))
                want_z = ((1 << b) - 1) << (m + max(-sh, 0))
                if (
                    sw.yyy_msk != want_y
                    or sw.zzz_msk != want_z
                    or sw._rs != max(sh, 0)
                    or sw._ls != max(-sh, 0)
                ):
                    bad = (b, m, sh)
                    break
    if v.status == "refuted":
        mod = dict(v.model or {})
        # the driver reports a bit-vector's value unsigned: read it as two's complement
        asg = {k: _signed(int(mod.get(k, 0)), W) for k in ("B", "M", "S")}
        return [
            Result(
                "refuted",
                "z3",
                claim=f"swizzle {what}",
                counterexample=Counterexample(assignment=asg),
                obligations=[ob],
                seconds=dt,
            )
        ]
    if bad is not None:
        return [
            Result(
                "refuted",
                "exhaustive",
                claim=f"Swizzle{bad} masks",
                counterexample=Counterexample(detail=f"Swizzle{bad} has masks other than the formula's"),
            )
        ]
    if v.status != "proved":  # unknown (a vacuous scope would prove nothing: unknown too)
        why = v.reason or "the bit-vector domain is empty"
        return [Result("unknown", "z3", claim=f"swizzle {what}", reason=why, obligations=[ob])]
    return [
        Result(
            "proved",
            "z3",
            claim=f"swizzle {what} for all B, M, S in scope",
            obligations=[ob],
            seconds=dt,
            notes=(f"1 bit-vector obligation; the library's masks equal the formula's for all {n} triples",),
        )
    ]


def _composition_stride_zero(A: Layout) -> sy.Instance:
    """A o (N:0): size N, the value 0 at every coordinate (A(0) == 0)."""
    ops = _ops()
    N = sy.extents("N", 1)[0]
    B = Layout(N, 0)

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        rs, rd = sx.flat_modes(cx.path.value)
        gs = [cx.dg.new(e, s_, "g") for s_ in rs]
        return [], z3.And(sy.zprod(e, rs) == e.t(N), sx.value_of(e, rd, gs) == 0)

    return sy.Instance(
        f"A {sy.rank_label(A)}",
        lambda: ops.composition(A, B),
        build,
        sy.confirm_post("composition", lambda p: p.value, A, B),
    )


def composition_size_instance(A: Layout, B: Layout) -> sy.Instance:
    ops = _ops()

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        e = cx.enc
        return [], sy.zprod(e, sx.flat_modes(cx.path.value)[0]) == sy.zprod(e, sx.flat_modes(B)[0])

    return sy.Instance(
        f"A {sy.rank_label(A)}, B {sy.rank_label(B)}",
        lambda: ops.composition(A, B),
        build,
        sy.confirm_post("composition", lambda p: p.value, A, B),
    )


def logical_divide_size_instance(L: Layout, T: Layout) -> sy.Instance:
    """size(logical_divide(L, T)) == size(T) size(complement(T, size(L))) >= size(L)."""
    ops = _ops()

    def fn() -> Any:
        return ops.complement(T, L.size), iops.logical_divide(L, T)

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        C, R = cx.path.value
        rsz = sy.zprod(e, sx.flat_modes(R)[0])
        return [], z3.And(
            rsz == sy.zprod(e, sx.flat_modes(T)[0]) * sy.zprod(e, sx.flat_modes(C)[0]),
            rsz >= sy.zprod(e, sx.flat_modes(L)[0]),
        )

    return sy.Instance(f"L {sy.rank_label(L)}, T {sy.rank_label(T)}", fn, build, lambda asg, p: None)


def logical_product_size_instance(A: Layout, B: Layout) -> sy.Instance:
    """size(logical_product(A, B)) == size(A) size(B)."""

    def build(cx: sy.Ctx) -> Tuple[List[Any], Any]:
        e = cx.enc
        R = cx.path.value
        return [], sy.zprod(e, sx.flat_modes(R)[0]) == sy.zprod(e, sx.flat_modes(A)[0]) * sy.zprod(
            e, sx.flat_modes(B)[0]
        )

    return sy.Instance(
        f"A {sy.rank_label(A)}, B {sy.rank_label(B)}",
        lambda: iops.logical_product(A, B),
        build,
        lambda asg, p: None,
    )


# (tiler modes, extra modes of L): the regroup runs (cheap: ~0.02 s each)
_REGROUP_MAIN = ((1, 0), (2, 1), (3, 1))
_REGROUP_ALL = tuple((n, x) for n in (1, 2, 3, 4) for x in (0, 1, 2))


def _regroup_check(kind: str) -> Callable[[], List[Result]]:
    def check() -> List[Result]:
        sizes = _REGROUP_ALL if sy.full_scope() else _REGROUP_MAIN
        return sy.prove(f"{kind} regroups", [_regroup(kind, x, None, n) for n, x in sizes])

    return check


def _swizzle_theorem(what: str) -> Callable[[], List[Result]]:
    return lambda: _swizzle_check(what)


def _build() -> List[Theorem]:
    out: List[Theorem] = []
    r14, r12 = (1, 2, 3, 4), (1, 2)
    co = [(sy._L(r),) for r in r14]
    co_main = [(sy._L(r),) for r in r12]
    sc_co = _scope("ranks 1-2", "ranks 1-4")
    out += [
        sy.all_values_theorem(
            "sym.coalesce-extended",
            "coalesce keeping the last mode preserves the extended function",
            "With keep_last (composition's view of A), the coalesced modes evaluated at any index i >= 0 "
            "(the last mode unbounded) give L extended along its last mode: the lemma behind the "
            "composition theorems",
            _one(su.coalesce_keep_last_instance, co_main, co, "coalesce_keep_last(L)^(i) == L^(i)"),
            sc_co,
            f"{sy.EXTENTS}; {sy.STRIDES_ANY}",
        ),
    ]
    for kind in ("zipped", "tiled", "flat"):
        shape = {
            "zipped": "((tiles...), (rests..., extra modes...))",
            "tiled": "((tiles...), rest0, rest1, ..., extra modes...)",
            "flat": "(tile0, tile1, ..., rest0, rest1, ..., extra modes...)",
        }[kind]
        out.append(
            sy.all_values_theorem(
                f"sym.{kind}-regroup",
                f"{kind}_divide and {kind}_product regroup the by-mode result",
                f"For a layout with n tiled modes and m more, and a tiler of n layouts: the "
                f"library's {kind} regrouping (the code behind {kind}_divide and {kind}_product) returns "
                f"{shape} made of the by-mode result's modes, leaf for leaf, for every by-mode result "
                "(its parts are opaque symbols: the statement holds whatever logical_divide or "
                "logical_product returns per mode)",
                _regroup_check(kind),
                "tilers of n = 1-3 layouts on L of rank n + m (n, m) = (1, 0), (2, 1), (3, 1) in "
                "`layoutproof prove`; n = 1-4 x m = 0-2 with `--all`; opaque by-mode parts",
                "every extent and stride a symbol",
            )
        )
    for what, title, st in (
        ("involution", "every swizzle is an involution", "Sw(Sw(x)) == x for every 64-bit x"),
        ("bijection", "every swizzle is a bijection", "Sw(x) == Sw(y) implies x == y for every 64-bit x, y"),
        (
            "block",
            "every swizzle maps each aligned 2^(M+B+|S|) block onto itself",
            "Sw(x) >> (M+B+|S|) == x >> (M+B+|S|) for every 64-bit x",
        ),
        (
            "zzz-only",
            "every swizzle changes only its ZZZ field",
            "(Sw(x) ^ x) & ~Z == 0 for every 64-bit x, Z = (2^B - 1) 2^(M + max(-S, 0)) the library's "
            "zzz_msk",
        ),
        (
            "xor-linear",
            "every swizzle is linear over F2",
            "Sw(x ^ y) == Sw(x) ^ Sw(y) for every 64-bit x, y",
        ),
    ):
        out.append(
            sy.all_values_theorem(
                f"sym.swizzle-{what}",
                f"{title[0].upper()}{title[1:]}, for all B, M, S",
                f"For all B, M, S with 0 <= B, M <= {SWZ_MAX}, |S| <= {SWZ_MAX}, |S| >= B (or B == 0): "
                f"{st}, "
                "Sw(x) = x ^ ((x & Y) >> S) (<< -S for S < 0), Y = (2^B - 1) 2^(M + max(S, 0)); "
                "B, M, S are "
                "bit-vector variables of one query; the library's Swizzle(B, M, S) has exactly these "
                "masks and "
                f"shifts for every one of the triples",
                _swizzle_theorem(what),
                f"every B, M, S up to {SWZ_MAX} (both jobs)",
                "B, M, S integers in scope; x, y 64-bit",
            )
        )
    out += _build_more()
    return out


def _build_more() -> List[Theorem]:
    """Composition with a stride-0 layout, at ranks 1-2 of A (1-4 with ``--all``)."""
    r12, r14 = (1, 2), (1, 2, 3, 4)
    sc_14 = _scope("ranks 1-2", "ranks 1-4")
    anyL = f"{sy.EXTENTS}; {sy.STRIDES_ANY}"

    def one(
        make: Callable[..., sy.Instance],
        main: Sequence[int],
        full: Sequence[int],
        claim: str,
        kind: str = "int",
    ) -> Callable[[], List[Result]]:
        return _one(make, [(sy._L(r, kind),) for r in main], [(sy._L(r, kind),) for r in full], claim)

    out = [
        sy.all_values_theorem(
            "sym.composition-stride-zero",
            "A o N:0 is the constant 0 of size N, for all A and N",
            "Whenever composition(A, N:0) returns R: size(R) == N and R(c) == 0 at every coordinate c of R",
            one(_composition_stride_zero, r12, r14, "(A o N:0)(c) == 0"),
            sc_14,
            f"A: {anyL}; N a positive integer",
        ),
    ]
    return out


THEOREMS: List[Theorem] = _build()
