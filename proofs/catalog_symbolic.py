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
    nb = len(bs)
    if nb > 1 and (type(R._shape) is not tuple or len(R._shape) != nb):
        return [], z3.BoolVal(False)
    claims: List[Any] = []
    terms: List[Tuple[Any, Any, Any]] = []
    rval: Any = 0
    boff: Any = 0
    for (rs, rd), n, r in zip(_leaves(R, nb), bs, bd):
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
