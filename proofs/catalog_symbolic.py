"""Theorems for all values: symbolic execution of :mod:`layoutproof.symops` (the code the
library runs on symbolic layouts), one Z3 obligation per path (:mod:`.symexec`).

Every extent and stride of the operands is a fresh symbol (extents positive integers,
strides arbitrary integers); the flat rank is fixed per instance and each theorem runs
every rank up to its stated bound.  A theorem is *proved* only when, at every rank in
scope, the path tree was exhausted within the budget and every path's obligation is
unsat (or the path is infeasible); a path Z3 leaves undecided makes the theorem unknown,
with its path condition; a satisfiable obligation is a refutation only once the model,
substituted into the operands, reproduces the failure on the integer path.

>>> from layoutproof.proofs.catalog_symbolic import THEOREMS
>>> len(THEOREMS) >= 20
True
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from layoutproof.layout import Layout
from layoutproof.verify import Counterexample, Result
from layoutproof.verify.result import ProofObligation

from . import symexec as sx

GROUP = "All values (symbolic execution + Z3)"
REF = ("issue 15", "docs/architecture.md: proofs by symbolic execution")

#: Z3 time for a path's whole claim before it is split into one query per conjunct (ms)
FIRST_MS = 1500

Builder = Callable[["Ctx"], Tuple[List[Any], Any]]


def _sp() -> Any:
    import sympy

    return sympy


def _ops() -> Any:
    from layoutproof import symops

    return symops


# ----------------------------------------------------------------------------- operands
def extents(prefix: str, n: int) -> List[Any]:
    sp = _sp()
    return [sp.Symbol(f"{prefix}{k}", integer=True, positive=True) for k in range(n)]


def strides(prefix: str, n: int, nonneg: bool = False, positive: bool = False) -> List[Any]:
    sp = _sp()
    if positive:
        return [sp.Symbol(f"{prefix}{k}", integer=True, positive=True) for k in range(n)]
    if nonneg:
        return [sp.Symbol(f"{prefix}{k}", integer=True, nonnegative=True) for k in range(n)]
    return [sp.Symbol(f"{prefix}{k}", integer=True) for k in range(n)]


def lay(shape: Sequence[Any], stride: Sequence[Any]) -> Layout:
    if len(shape) == 1:
        return Layout._make(shape[0], stride[0])
    return Layout._make(tuple(shape), tuple(stride))


def sym_layout(name: str, n: int, nonneg: bool = False, positive: bool = False) -> Layout:
    return lay(extents(f"{name}s", n), strides(f"{name}d", n, nonneg, positive))


# ----------------------------------------------------------------------------- context
@dataclass
class Ctx:
    """What a builder sees: the encoder, the quantified digits, the path."""

    enc: sx.Enc
    dg: sx.Digits
    path: sx.Path

    @property
    def facts(self) -> Tuple[Any, ...]:
        return self.path.facts


def _z3() -> Any:
    import z3

    return z3


def _leaves(L: Layout, n: int) -> List[Tuple[List[Any], List[Any]]]:
    """The modes of ``L`` grouped by the ``n`` top-level modes of a profile it is compatible
    with (``n == 1``: all of ``L``)."""
    if n == 1:
        return [sx.flat_modes(L)]
    out = []
    for s, d in zip(L._shape, L._stride):
        out.append(sx.flat_modes(Layout._make(s, d)))
    return out


def eval_compatible(cx: Ctx, R: Layout, n: int, coords: Sequence[Tuple[Any, Any]]) -> Tuple[List[Any], Any]:
    """``R`` evaluated at the coordinate ``coords`` (one (digit, extent) per top-level mode of
    a profile ``R`` is compatible with): the claims that the placement is the coordinate's
    representation in ``R``, and ``R``'s offset there."""
    z3 = _z3()
    sp = _sp()
    enc = cx.enc
    claims: List[Any] = []
    val: Any = 0
    if (n > 1) and (type(R._shape) is not tuple or len(R._shape) != n):
        return [z3.BoolVal(False)], 0
    for (rs, rd), (c, ext) in zip(_leaves(R, n), coords):
        claims.append(enc.t(sp.Mul(*rs)) == enc.t(ext))
        digs = sx.place(enc, rs, [(c, ext, sp.Integer(1))], cx.facts, unbounded_last=False)
        claims += bounded(enc, rs, digs)
        claims.append(sx.index_of(enc, rs, digs) == c)
        val = val + sx.value_of(enc, rd, digs)
    return claims, val


def by_profile(R: Layout, profile: Any) -> Optional[List[Tuple[List[Any], List[Any]]]]:
    """The flat modes of ``R`` under each leaf of ``profile`` (R compatible with it), in
    order; None when R's nesting does not follow the profile."""
    out: List[Tuple[List[Any], List[Any]]] = []

    def walk(s: Any, d: Any, p: Any) -> bool:
        if type(p) is not tuple:
            out.append(sx.flat_modes(Layout._make(s, d)))
            return True
        if type(s) is not tuple or len(s) != len(p):
            return False
        return all(walk(a, b, q) for a, b, q in zip(s, d, p))

    return out if walk(R._shape, R._stride, profile) else None


def bounded(enc: sx.Enc, shape: Sequence[Any], digs: Sequence[Any], last: bool = True) -> List[Any]:
    out = []
    for k, (g, s) in enumerate(zip(digs, shape)):
        out.append(g >= 0)
        if last or k < len(shape) - 1:
            out.append(g < enc.t(s))
    return out


def eval_at_offset(
    cx: Ctx,
    shape: Sequence[Any],
    stride: Sequence[Any],
    terms: List[Tuple[Any, Any, Any]],
    offset: Any,
    unbounded_last: bool,
) -> Tuple[List[Any], Any]:
    """A flat layout evaluated at the offset ``sum(g*w)`` (``offset`` its Z3 term): the
    representation claims and the value."""
    enc = cx.enc
    digs = sx.place(enc, shape, terms, cx.facts, unbounded_last)
    claims = bounded(enc, shape, digs, last=not unbounded_last)
    claims.append(sx.index_of(enc, shape, digs) == offset)
    return claims, sx.value_of(enc, stride, digs)


# ----------------------------------------------------------------------------- the engine
@dataclass
class Instance:
    """One rank instance of a theorem: the operation to explore, its assumptions, the
    builder of the path obligation, and the integer check that confirms a Z3 model."""

    label: str
    fn: Callable[[], Any]
    build: Builder
    confirm: Callable[[Dict[str, int], sx.Path], Optional[str]]
    assumptions: Tuple[Any, ...] = ()
    need_result: bool = True  # at least one path must return a result (not vacuous)


def _model_for(path: sx.Path, model: Dict[str, int], operands: Sequence[Layout]) -> Dict[str, int]:
    out = dict(model)
    for L in operands:
        for s in L.free_symbols:
            out.setdefault(s.name, 1)
    return out


def prove(claim: str, instances: Sequence[Instance]) -> List[Result]:
    """Explore each instance, discharge one obligation per result path; one Result per
    instance (status proved / refuted / unknown; notes: paths, obligations, times)."""
    results: List[Result] = []
    for inst in instances:
        t0 = time.perf_counter()
        paths, complete = sx.explore(inst.fn, inst.assumptions)
        obs: List[ProofObligation] = []
        unknown: List[str] = []
        refuted: Optional[Counterexample] = None
        n_res = n_inad = n_und = n_vac = n_ref = 0
        zsec = 0.0
        for p in paths:
            if p.end == "inadmissible":
                n_inad += 1
                continue
            if p.end == "refused":
                n_ref += 1
                continue
            if p.end == "undecided":
                n_und += 1
                unknown.append(f"path undecided ({p.value}) under {p.condition_text()}")
                continue
            n_res += 1
            subs, extra = sx.normalize(p.facts)
            enc, dg = sx.Enc(subs), sx.Digits()
            cx = Ctx(enc, dg, p)
            try:
                context, goal = inst.build(cx)
            except sx.NoPlacement as e:
                unknown.append(f"no digit placement ({e}) under {p.condition_text()}")
                continue
            context = context + dg.constraints(enc)
            comment = f"{inst.label}: {claim}\npath: {p.condition_text()}\nresult: {p.value}"
            facts = p.facts + extra
            pos = [sx.discharge(enc, facts, context, goal, comment, timeout_ms=FIRST_MS)]
            if pos[0].verdict == "unknown" and _z3().is_and(goal):
                # one query per conjunct: smaller problems for the nonlinear solver
                pos = [
                    sx.discharge(enc, facts, context, g, comment + f"\nconjunct {k + 1}")
                    for k, g in enumerate(goal.children())
                ]
            for po in pos:
                zsec += po.seconds
                if po.verdict == "vacuous":
                    n_vac += 1
                verdict = {"vacuous": "unsat"}.get(po.verdict, po.verdict)
                obs.append(
                    ProofObligation(
                        f"{inst.label}: path {n_res}: {claim}",
                        claim,
                        (),
                        verdict,
                        po.obligation,
                        po.seconds,
                        po.reason or None,
                    )
                )
                if po.verdict == "sat":
                    asg = _model_for(p, po.model or {}, ())
                    why = inst.confirm(asg, p)
                    if why is not None and refuted is None:
                        refuted = Counterexample(assignment=asg, detail=f"{why}; path: {p.condition_text()}")
                    elif why is None:
                        unknown.append(f"Z3 model {asg} not confirmed by integers under {p.condition_text()}")
                    break
                if po.verdict == "unknown":
                    unknown.append(f"Z3 {po.reason} under {p.condition_text()}")
                    break
        dt = time.perf_counter() - t0
        note = (
            f"{inst.label}: {len(paths)} paths ({n_res} results, {n_inad} inadmissible, "
            f"{n_ref} refused, {n_und} undecided), {len(obs)} obligations ({n_vac} on infeasible paths), "
            f"{len(unknown)} unknown; {dt:.2f} s ({zsec:.2f} s in Z3)"
        )
        if refuted is not None:
            results.append(
                Result(
                    "refuted",
                    "z3",
                    claim=f"{claim} [{inst.label}]",
                    seconds=dt,
                    counterexample=refuted,
                    obligations=obs,
                    notes=(note,),
                )
            )
        elif not complete:
            results.append(
                Result(
                    "unknown",
                    "z3",
                    claim=f"{claim} [{inst.label}]",
                    seconds=dt,
                    reason=f"path budget ({sx.MAX_PATHS}) exhausted",
                    obligations=obs,
                    notes=(note,),
                )
            )
        elif unknown:
            results.append(
                Result(
                    "unknown",
                    "z3",
                    claim=f"{claim} [{inst.label}]",
                    seconds=dt,
                    reason=unknown[0],
                    obligations=obs,
                    notes=(note,) + tuple(unknown[1:4]),
                )
            )
        elif inst.need_result and n_res == 0:
            results.append(
                Result(
                    "unknown",
                    "z3",
                    claim=f"{claim} [{inst.label}]",
                    seconds=dt,
                    reason="no path returns a result: the statement would be vacuous",
                    obligations=obs,
                    notes=(note,),
                )
            )
        else:
            results.append(
                Result(
                    "proved",
                    "z3",
                    claim=f"{claim} [{inst.label}]",
                    seconds=dt,
                    obligations=obs,
                    notes=(note,),
                )
            )
    return results


# ----------------------------------------------------------------------------- confirmation
def _subs(L: Any, asg: Dict[str, int]) -> Any:
    if isinstance(L, Layout):
        return L.subs(asg)
    from layoutproof.symbolic import free_symbols, subs_tuple, symbol_map

    if type(L) is tuple:
        return subs_tuple(L, symbol_map(asg, free_symbols(L)))
    sp = _sp()
    if isinstance(L, sp.Basic):
        v = L.subs(symbol_map(asg, frozenset(L.free_symbols)))
        return int(v) if v.is_Integer else v
    return L


def confirm_post(
    op: str, result_of: Callable[[sx.Path], Any], *operands: Any
) -> Callable[[Dict[str, int], sx.Path], Optional[str]]:
    """The Z3 model substituted into the path's result and the operands, the operation's
    post-condition checked exhaustively on integers (verify.postcondition)."""

    def confirm(asg: Dict[str, int], p: sx.Path) -> Optional[str]:
        from layoutproof.verify import postcondition

        try:
            R = _subs(result_of(p), asg)
            args = [_subs(x, asg) for x in operands]
            r = postcondition(op, R, *args)
        except Exception as e:  # noqa: BLE001 - a model that breaks evaluation confirms nothing
            return None if not isinstance(e, ValueError) else f"{op}: the integer check raised {e}"
        if r.status == "refuted":
            return f"{op}({', '.join(map(str, args))}) gave {R} on this path: {r.counterexample}"
        return None

    return confirm


def confirm_equal(
    left_of: Callable[[sx.Path], Any], right_of: Callable[[sx.Path], Any]
) -> Callable[[Dict[str, int], sx.Path], Optional[str]]:
    def confirm(asg: Dict[str, int], p: sx.Path) -> Optional[str]:
        a, b = _subs(left_of(p), asg), _subs(right_of(p), asg)
        if a != b:
            return f"{a} != {b}"
        return None

    return confirm


# ----------------------------------------------------------------------------- helpers
def _prefixes(shape: Sequence[Any]) -> List[Any]:
    sp = _sp()
    out = [sp.Integer(1)]
    for s in shape[:-1]:
        out.append(out[-1] * s)
    return out


def _product(xs: Sequence[Any]) -> Any:
    sp = _sp()
    return sp.Mul(*[sp.sympify(x) for x in xs])


def _same_layout(cx: Ctx, X: Layout, Y: Layout) -> Any:
    """X and Y have the same profile and, leaf by leaf, equal extents and strides."""
    z3 = _z3()
    from layoutproof.inttuple import congruent

    if not congruent(X._shape, Y._shape):
        return z3.BoolVal(False)
    xs, xd = sx.flat_modes(X)
    ys, yd = sx.flat_modes(Y)
    e = cx.enc
    return z3.And([e.t(a) == e.t(b) for a, b in zip(xs + xd, ys + yd)])


def _input_terms(L: Layout, cs: Sequence[Any]) -> List[Tuple[Any, Any, Any]]:
    fs, _fd = sx.flat_modes(L)
    return [(c, s, p) for c, s, p in zip(cs, fs, _prefixes(fs))]


# ----------------------------------------------------------------------------- coalesce
def _coalesce_function(L: Layout) -> Instance:
    ops = _ops()

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        R = cx.path.value
        cs, idx, val = sx.natural(cx.enc, cx.dg, L)
        rs, rd = sx.flat_modes(R)
        claims, rval = eval_at_offset(cx, rs, rd, _input_terms(L, cs), idx, unbounded_last=False)
        return [], z3.And(claims + [rval == val])

    n = len(sx.flat_modes(L)[0])
    return Instance(
        f"rank {n}", lambda: ops.coalesce(L), build, confirm_post("coalesce", lambda p: p.value, L)
    )


def _coalesce_size(L: Layout) -> Instance:
    ops = _ops()

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        R = cx.path.value
        e = cx.enc
        return [], e.t(_product(sx.flat_modes(R)[0])) == e.t(_product(sx.flat_modes(L)[0]))

    n = len(sx.flat_modes(L)[0])
    return Instance(
        f"rank {n}", lambda: ops.coalesce(L), build, confirm_post("coalesce", lambda p: p.value, L)
    )


def _coalesce_depth(L: Layout) -> Instance:
    ops = _ops()

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        return [], _z3().BoolVal(cx.path.value.depth <= 1)

    n = len(sx.flat_modes(L)[0])
    return Instance(
        f"rank {n}", lambda: ops.coalesce(L), build, confirm_post("coalesce", lambda p: p.value, L)
    )


def _coalesce_idempotent(L: Layout) -> Instance:
    ops = _ops()

    def fn() -> Any:
        R = ops.coalesce(L)
        return R, ops.coalesce(R)

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        R, RR = cx.path.value
        return [], _same_layout(cx, R, RR)

    n = len(sx.flat_modes(L)[0])
    return Instance(f"rank {n}", fn, build, confirm_equal(lambda p: p.value[0], lambda p: p.value[1]))


def _coalesce_keep_last(L: Layout) -> Instance:
    """The composition's view of A: coalesce keeping the last mode, extended along it."""
    ops = _ops()
    fs, fd = sx.flat_modes(L)

    def fn() -> Any:
        return ops.coalesce_flat(tuple(fs), tuple(fd), keep_last=True)

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
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
        terms = [(c, s, p) for c, s, p in zip(cs, fs, _prefixes(fs))]
        claims, rval = eval_at_offset(cx, rs, rd, terms, idx, unbounded_last=True)
        return ctx, z3.And(claims + [rval == val, z3.BoolVal(len(rs) >= 1)])

    n = len(fs)
    return Instance(f"rank {n}", fn, build, lambda asg, p: None)


def _ranks(
    make: Callable[[Layout], Instance], ranks: Sequence[int], name: str = "L"
) -> Callable[[], List[Result]]:
    return lambda: [make(sym_layout(name, r)) for r in ranks]  # type: ignore[misc]


# ----------------------------------------------------------------------------- composition
def composition_claims(
    cx: Ctx, A: Layout, B: Layout, As: Sequence[Any], Ad: Sequence[Any], R: Layout
) -> Tuple[List[Any], Any]:
    """The composition post-condition on a path: R is compatible with B (leaf by leaf, the
    sizes agree) and R(c) == Â(B(c)) at every coordinate c of B, with Â the coalesced A
    (``As``, ``Ad``) extended along its last mode.  Quantified over R's own digits (a
    refinement of B's coordinates)."""
    z3 = _z3()
    sp = _sp()
    e = cx.enc
    bs, bd = sx.flat_modes(B)
    leaves = by_profile(R, B._shape)
    if leaves is None:
        return [], z3.BoolVal(False)
    claims: List[Any] = []
    terms: List[Tuple[Any, Any, Any]] = []
    rval: Any = 0
    boff: Any = 0
    for (rs, rd), n, r in zip(leaves, bs, bd):
        claims.append(e.t(_product(rs)) == e.t(n))
        gs = [cx.dg.new(e, s, "g") for s in rs]
        ck = sx.index_of(e, rs, gs)
        boff = boff + ck * e.t(r)
        rval = rval + sx.value_of(e, rd, gs)
        for g, s, p in zip(gs, rs, _prefixes(rs)):
            terms.append((g, s, sp.expand(p * r)))
    more, aval = eval_at_offset(cx, list(As), list(Ad), terms, boff, unbounded_last=True)
    return [], z3.And(claims + more + [rval == aval])


def _composition(A: Layout, B: Layout) -> Instance:
    ops = _ops()
    fa, da = sx.flat_modes(A)

    def fn() -> Any:
        As, Ad = ops.coalesce_flat(tuple(fa), tuple(da), keep_last=True)
        return As, Ad, ops.composition(A, B)

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        As, Ad, R = cx.path.value
        return composition_claims(cx, A, B, As, Ad, R)

    return Instance(
        f"A rank {len(fa)}, B rank {len(sx.flat_modes(B)[0])}",
        fn,
        build,
        confirm_post("composition", lambda p: p.value[2], A, B),
    )


# ----------------------------------------------------------------------------- complement
def _order(cx: Ctx, modes: List[Tuple[Any, Any]]) -> Optional[List[Tuple[Any, Any]]]:
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


def _kept_modes(cx: Ctx, L: Layout) -> Optional[List[Tuple[Any, Any]]]:
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


def _complement(L: Layout, M: Any) -> Instance:
    ops = _ops()

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
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
        K = _product([m[0] for m in allm])
        claims.append(e.t(K) >= e.t(M))  # fills [0, M) ...
        claims.append(e.t(K) < e.t(M) + e.t(_cover(kept)))  # ... rounded up to L's cover
        cs, cd = sx.flat_modes(C)
        for k in range(len(cd) - 1):  # C is ordered
            claims.append(e.t(cd[k]) < e.t(cd[k + 1]))
        return [], z3.And(claims)

    n = len(sx.flat_modes(L)[0])
    return Instance(
        f"rank {n}", lambda: ops.complement(L, M), build, confirm_post("complement", lambda p: p.value, L, M)
    )


def _cover(kept: List[Tuple[Any, Any]]) -> Any:
    """The extent L's kept modes cover: the largest stride*extent (the complement rounds M
    up to a multiple of it)."""
    sp = _sp()
    if not kept:
        return sp.Integer(1)
    return sp.Max(*[s * d for s, d in kept]) if len(kept) > 1 else kept[0][0] * kept[0][1]


def _complement_chain(L: Layout, M: Any) -> Instance:
    """Admissibility is exactly the stride chain: on every path that returns, the sorted
    kept modes satisfy s_k*d_k | d_{k+1}; on every inadmissible path they do not."""
    ops = _ops()

    def chain(cx: Ctx) -> Optional[Any]:
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
            from layoutproof.errors import InadmissibleError

            if isinstance(e, InadmissibleError):
                return "inadmissible", e
            raise

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        c = chain(cx)
        if c is None:
            raise sx.NoPlacement("the kept modes or their order are not decided on this path")
        tag, _v = cx.path.value
        zc = cx.enc.t(c)
        return [], zc if tag == "admissible" else z3.Not(zc)

    n = len(sx.flat_modes(L)[0])
    return Instance(f"rank {n}", fn, build, lambda asg, p: None)


# ----------------------------------------------------------------------------- inverses
def _right_inverse(L: Layout) -> Instance:
    ops = _ops()
    fs, fd = sx.flat_modes(L)

    def fn() -> Any:
        return ops.coalesce_flat(tuple(fs), tuple(fd)), ops.right_inverse(L)

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        (cs_, cd_), R = cx.path.value
        rs, rd = sx.flat_modes(R)
        gs = [cx.dg.new(e, s_, "g") for s_ in rs]
        idx = sx.index_of(e, rs, gs)
        off = sx.value_of(e, rd, gs)
        terms = [(g, s_, d_) for g, s_, d_ in zip(gs, rs, rd)]
        # L evaluated through coalesce(L): the same function (theorem sym.coalesce-function)
        claims, lval = eval_at_offset(cx, cs_, cd_, terms, off, unbounded_last=False)
        return [], z3.And(claims + [lval == idx])

    return Instance(f"rank {len(fs)}", fn, build, confirm_post("right_inverse", lambda p: p.value[1], L))


def _left_inverse(L: Layout) -> Instance:
    ops = _ops()
    fs, fd = sx.flat_modes(L)

    def fn() -> Any:
        return ops.coalesce_flat(tuple(fs), tuple(fd)), ops.left_inverse(L)

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
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
        c2, lval2 = eval_at_offset(cx, cs_, cd_, terms2, rval, unbounded_last=False)
        return [], z3.And(c1 + c2 + [lval2 == lval])  # L(R(L(i))) == L(i)

    return Instance(f"rank {len(fs)}", fn, build, confirm_post("left_inverse", lambda p: p.value[1], L))


def _digits_at(
    cx: Ctx, shape: Sequence[Any], terms: List[Tuple[Any, Any, Any]], offset: Any
) -> Tuple[List[Any], List[Any]]:
    enc = cx.enc
    digs = sx.place(enc, shape, terms, cx.facts, unbounded_last=False)
    claims = bounded(enc, shape, digs)
    claims.append(sx.index_of(enc, shape, digs) == offset)
    return claims, digs


# ----------------------------------------------------------------------------- divide / product
def _logical_divide(L: Layout, T: Layout) -> Instance:
    """logical_divide(L, T) == L o (T, complement(T, size(L))): the composition
    post-condition of the result against that layout, both computed on the path."""
    ops = _ops()
    from layoutproof import ops as iops

    fa, da = sx.flat_modes(L)

    def fn() -> Any:
        As, Ad = ops.coalesce_flat(tuple(fa), tuple(da), keep_last=True)
        C = ops.complement(T, L.size)
        return As, Ad, C, iops.logical_divide(L, T)

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        As, Ad, C, R = cx.path.value
        B = Layout._make((T._shape, C._shape), (T._stride, C._stride))
        return composition_claims(cx, L, B, As, Ad, R)

    def result(p: sx.Path) -> Any:
        return p.value[3]

    def confirm(asg: Dict[str, int], p: sx.Path) -> Optional[str]:
        from layoutproof.verify import postcondition

        try:
            R, L2, T2 = _subs(result(p), asg), _subs(L, asg), _subs(T, asg)
            r = postcondition("logical_divide", R, L2, T2)
        except Exception:  # noqa: BLE001
            return None
        return None if r.status != "refuted" else f"logical_divide({L2}, {T2}) = {R}: {r.counterexample}"

    return Instance(f"L rank {len(fa)}, T rank {len(sx.flat_modes(T)[0])}", fn, build, confirm)


def _logical_product(A: Layout, B: Layout) -> Instance:
    """logical_product(A, B) == (A, complement(A, size(A)*cosize(B)) o B)."""
    ops = _ops()
    from layoutproof import ops as iops

    def fn() -> Any:
        C = ops.complement(A, A.size * B.cosize)
        cs_, cd_ = sx.flat_modes(C)
        As, Ad = ops.coalesce_flat(tuple(cs_), tuple(cd_), keep_last=True)
        return C, As, Ad, iops.logical_product(A, B)

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        C, As, Ad, R = cx.path.value
        if type(R._shape) is not tuple or len(R._shape) != 2:
            return [], z3.BoolVal(False)
        R0 = Layout._make(R._shape[0], R._stride[0])
        R1 = Layout._make(R._shape[1], R._stride[1])
        ctx, comp = composition_claims(cx, C, B, As, Ad, R1)
        return ctx, z3.And(_same_layout(cx, R0, A), comp)

    def confirm(asg: Dict[str, int], p: sx.Path) -> Optional[str]:
        from layoutproof.verify import postcondition

        try:
            R, A2, B2 = _subs(p.value[3], asg), _subs(A, asg), _subs(B, asg)
            r = postcondition("logical_product", R, A2, B2)
        except Exception:  # noqa: BLE001
            return None
        return None if r.status != "refuted" else f"logical_product({A2}, {B2}) = {R}: {r.counterexample}"

    return Instance(
        f"A rank {len(sx.flat_modes(A)[0])}, B rank {len(sx.flat_modes(B)[0])}", fn, build, confirm
    )


def _regroup(kind: str, L: Layout, tiler: Tuple[Layout, ...]) -> Instance:
    """zipped / tiled / flat {divide, product}: the by-mode logical result's parts,
    rearranged -- each leaf equal on the path."""
    from layoutproof import ops as iops

    base = iops.logical_divide if kind.endswith("divide") else iops.logical_product
    op = getattr(iops, kind)

    def fn() -> Any:
        return base(L, tiler), op(L, tiler)

    def expected(P: Layout) -> Layout:
        n = len(tiler)
        first = [(P._shape[i][0], P._stride[i][0]) for i in range(n)]
        second = [(P._shape[i][1], P._stride[i][1]) for i in range(n)]
        rest = [(P._shape[i], P._stride[i]) for i in range(n, len(P._shape))]
        if kind.startswith("zipped"):
            sec = second + rest
            return Layout._make(
                (tuple(f[0] for f in first), tuple(x[0] for x in sec)),
                (tuple(f[1] for f in first), tuple(x[1] for x in sec)),
            )
        if kind.startswith("tiled"):
            sec = second + rest
            return Layout._make(
                (tuple(f[0] for f in first),) + tuple(x[0] for x in sec),
                (tuple(f[1] for f in first),) + tuple(x[1] for x in sec),
            )
        modes = first + second + rest
        return Layout._make(tuple(m[0] for m in modes), tuple(m[1] for m in modes))

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        P, R = cx.path.value
        return [], _same_layout(cx, R, expected(P))

    return Instance(
        f"L rank {len(L._shape)}, tiler of {len(tiler)} layouts",
        fn,
        build,
        confirm_equal(lambda p: p.value[1], lambda p: expected(p.value[0])),
    )


def _associativity(A: Layout, B: Layout, C: Layout) -> Instance:
    """(A o B) o C == A o (B o C) as functions on C's domain, on every path where both sides
    are admissible."""
    from layoutproof import ops as iops

    def fn() -> Any:
        return iops.composition(iops.composition(A, B), C), iops.composition(A, iops.composition(B, C))

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        X, Y = cx.path.value
        lx = by_profile(X, C._shape)
        ly = by_profile(Y, C._shape)
        if lx is None or ly is None:
            return [], z3.BoolVal(False)
        cs_, cd_ = sx.flat_modes(C)
        claims: List[Any] = []
        vx: Any = 0
        vy: Any = 0
        for (xs, xd), (ys, yd), n in zip(lx, ly, cs_):
            c = cx.dg.new(e, n, "c")
            for sh, st, acc in ((xs, xd, "x"), (ys, yd, "y")):
                claims.append(e.t(_product(sh)) == e.t(n))
                digs = sx.place(e, sh, [(c, n, _sp().Integer(1))], cx.facts, unbounded_last=False)
                claims += bounded(e, sh, digs)
                claims.append(sx.index_of(e, sh, digs) == c)
                v = sx.value_of(e, st, digs)
                if acc == "x":
                    vx = vx + v
                else:
                    vy = vy + v
        return [], z3.And(claims + [vx == vy])

    return Instance(
        "A, B, C rank 1"
        if all(len(sx.flat_modes(x)[0]) == 1 for x in (A, B, C))
        else f"ranks {len(sx.flat_modes(A)[0])}, {len(sx.flat_modes(B)[0])}, {len(sx.flat_modes(C)[0])}",
        fn,
        build,
        confirm_equal(lambda p: p.value[0], lambda p: p.value[1]),
    )
