"""Theorems for all values: symbolic execution of :mod:`layoutproof.symbolic.symops` (the code the
library runs on symbolic layouts), one Z3 obligation per path (:mod:`.symexec`).

Every extent and stride of the operands is a fresh symbol (extents positive integers,
strides arbitrary integers); the flat rank is fixed per instance and each theorem runs
every rank up to its stated bound.  A theorem is *proved* only when, at every rank in
scope, the path tree was exhausted within the budget and every path's obligation is
unsat (or the path is infeasible); a path Z3 leaves undecided makes the theorem unknown,
with its path condition; a satisfiable obligation is a refutation only once the model,
substituted into the operands, reproduces the failure on the integer path.

>>> from layoutproof.proofs.catalog import THEOREMS
>>> len([t for t in THEOREMS if t.group == GROUP]) >= 40  # here and in the induction modules
True
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from layoutproof.budget import BudgetExceeded, deadline, expired
from layoutproof.layout import Layout
from layoutproof.symbolic import sympy_module as _sp
from layoutproof.verify import Counterexample, Result
from layoutproof.verify.result import ProofObligation

from .. import symexec as sx
from ..symexec import symops_module as _ops
from ..symexec import z3_module as _z3
from ..theorem import Theorem

GROUP = "All values (symbolic execution + Z3)"
REF = ("issue 15", "docs/architecture.md: proofs by symbolic execution")

#: Z3 time for a path's whole claim before it is split into one query per conjunct (ms)
FIRST_MS = 5000

Builder = Callable[["Ctx"], Tuple[List[Any], Any]]


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
        return Layout.trusted(shape[0], stride[0])
    return Layout.trusted(tuple(shape), tuple(stride))


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


def _leaves(L: Layout, n: int) -> List[Tuple[List[Any], List[Any]]]:
    """The modes of ``L`` grouped by the ``n`` top-level modes of a profile it is compatible
    with (``n == 1``: all of ``L``)."""
    if n == 1:
        return [sx.flat_modes(L)]
    shape, stride = L.shape, L.stride
    if not isinstance(shape, tuple) or not isinstance(stride, tuple):
        return [sx.flat_modes(L)]
    return [sx.flat_modes(Layout.trusted(s, d)) for s, d in zip(shape, stride)]


def eval_compatible(cx: Ctx, R: Layout, n: int, coords: Sequence[Tuple[Any, Any]]) -> Tuple[List[Any], Any]:
    """``R`` evaluated at the coordinate ``coords`` (one (digit, extent) per top-level mode of
    a profile ``R`` is compatible with): the claims that the placement is the coordinate's
    representation in ``R``, and ``R``'s offset there."""
    z3 = _z3()
    sp = _sp()
    enc = cx.enc
    claims: List[Any] = []
    val: Any = 0
    if (n > 1) and (type(R.shape) is not tuple or len(R.shape) != n):
        return [z3.BoolVal(False)], 0
    for (rs, rd), (c, ext) in zip(_leaves(R, n), coords):
        claims.append(zprod(enc, rs) == enc.t(ext))
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
            out.append(sx.flat_modes(Layout.trusted(s, d)))
            return True
        if type(s) is not tuple or len(s) != len(p):
            return False
        return all(walk(a, b, q) for a, b, q in zip(s, d, p))

    return out if walk(R.shape, R.stride, profile) else None


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
    #: a path where the operation refuses (a LayoutError other than InadmissibleError) makes
    #: the theorem unknown instead of being set aside: for statements about every path
    strict: bool = False
    #: a path whose claim is the literal True (outside the statement, e.g. a returning path
    #: of a statement about refusals) gets no obligation at all (counted as such)
    skip_trivial: bool = False


def _model_for(path: sx.Path, model: Dict[str, int], operands: Sequence[Layout]) -> Dict[str, int]:
    out = dict(model)
    for L in operands:
        for s in L.free_symbols:
            out.setdefault(s.name, 1)
    return out


def _discharge_path(
    inst: Instance, claim: str, p: sx.Path, n_res: int
) -> Tuple[List[Tuple[sx.PathOutcome, ProofObligation]], Optional[str], Optional[Counterexample]]:
    """The obligations of one result path: (outcome, obligation) pairs, and when the path is
    not proved, why (with the confirmed counterexample when it is refuted)."""
    subs, extra = sx.normalize(p.facts)
    enc, dg = sx.Enc(subs), sx.Digits()
    cx = Ctx(enc, dg, p)
    try:
        context, goal = inst.build(cx)
    except sx.NoPlacement as e:
        return [], f"no digit placement ({e}) under {p.condition_text()}", None
    if inst.skip_trivial and not context and _z3().is_true(goal):
        return [], None, None
    context = context + dg.constraints(enc)
    whole = integral(enc, p.value)  # the result's leaves are integers on the path
    if whole:
        goal = _z3().And(whole + [goal])
    comment = f"{inst.label}: {claim}\npath: {p.condition_text()}\nresult: {p.value}"
    facts = p.facts + extra
    pos = [sx.discharge(enc, facts, context, goal, comment, timeout_ms=FIRST_MS)]
    if pos[0].verdict == "unknown" and _z3().is_and(goal):
        # one query per conjunct (nested conjunctions flattened): smaller problems for the
        # nonlinear solver
        pos = [
            sx.discharge(enc, facts, context, g, comment + f"\nconjunct {k + 1}")
            for k, g in enumerate(conjuncts(goal))
        ]
    out: List[Tuple[sx.PathOutcome, ProofObligation]] = []
    for po in pos:
        verdict = {"vacuous": "unsat"}.get(po.verdict, po.verdict)
        ob = ProofObligation(
            f"{inst.label}: path {n_res}: {claim}",
            claim,
            (),
            verdict,
            po.obligation,
            po.seconds,
            po.reason or None,
        )
        out.append((po, ob))
        if po.verdict == "sat":
            asg = _model_for(p, po.model or {}, ())
            why = inst.confirm(asg, p)
            if why is not None:
                return out, why, Counterexample(assignment=asg, detail=f"{why}; path: {p.condition_text()}")
            return out, f"Z3 model {asg} not confirmed by integers under {p.condition_text()}", None
        if po.verdict == "unknown":
            return out, f"Z3 {po.reason} under {p.condition_text()}", None
    return out, None, None


def conjuncts(goal: Any) -> List[Any]:
    """The conjuncts of a Z3 formula, nested conjunctions flattened (in order)."""
    z3 = _z3()
    out: List[Any] = []
    stack = [goal]
    while stack:
        g = stack.pop()
        if z3.is_and(g):
            stack.extend(reversed(g.children()))
        else:
            out.append(g)
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
                if inst.strict:
                    unknown.append(f"the operation refused ({p.value}) under {p.condition_text()}")
                continue
            if p.end == "undecided":
                n_und += 1
                unknown.append(f"path undecided ({p.value}) under {p.condition_text()}")
                continue
            n_res += 1
            try:
                with deadline(sx.PATH_SECONDS):
                    po_list, why, cex = _discharge_path(inst, claim, p, n_res)
            except BudgetExceeded as e:
                if expired(e):
                    raise
                unknown.append(
                    f"timeout: the path's {sx.PATH_SECONDS:g} s budget ran out under {p.condition_text()}"
                )
                continue
            for po, ob in po_list:
                zsec += po.seconds
                if po.verdict == "vacuous":
                    n_vac += 1
                obs.append(ob)
            if why is not None:
                if cex is not None:
                    if refuted is None:
                        refuted = cex
                else:
                    unknown.append(why)
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


def int_chain(L: Layout, kind: str) -> bool:
    """The admissibility chain on an integer layout: the modes (of coalesce(L) for
    ``"left_inverse"``) other than extent 1 and stride 0, sorted by stride, have
    non-negative strides and ``s_k d_k | d_{k+1}`` (``kind == "complement"``) or
    ``d_k | d_{k+1}`` and ``s_k d_k <= d_{k+1}`` (``"left_inverse"``)."""
    if kind == "left_inverse":  # left_inverse decides on coalesce(L)'s modes
        from layoutproof.ops import coalesce

        L = coalesce(L)
    fs, fd = sx.flat_modes(L)
    kept = sorted(((int(d), int(s_)) for s_, d in zip(fs, fd) if s_ != 1 and d != 0))
    if any(d < 0 for d, _s in kept):
        return False
    for (d0, s0), (d1, _s1) in zip(kept, kept[1:]):
        if kind == "complement":
            if d1 % (s0 * d0):
                return False
        elif d1 % d0 or s0 * d0 > d1:
            return False
    return True


def confirm_chain(op: str, L: Layout) -> Callable[[Dict[str, int], sx.Path], Optional[str]]:
    """For an admissibility theorem: the Z3 model substituted into L, the chain evaluated on
    the integers (:func:`int_chain`): the refutation is confirmed when the symbolic path
    returned and the chain fails, or raised and the chain holds."""

    def confirm(asg: Dict[str, int], p: sx.Path) -> Optional[str]:
        try:
            L2 = _subs(L, asg)
            holds = int_chain(L2, op)
        except Exception:  # noqa: BLE001 - a model that breaks substitution confirms nothing
            return None
        returned = p.value[0] == "admissible"
        if holds != returned:
            said = "returned" if returned else "raised"
            return f"{op}: the chain {'holds' if holds else 'fails'} for {L2}, and the symbolic path {said}"
        return None

    return confirm


# ----------------------------------------------------------------------------- helpers
def prefixes(shape: Sequence[Any]) -> List[Any]:
    sp = _sp()
    out = [sp.Integer(1)]
    for s in shape[:-1]:
        out.append(out[-1] * s)
    return out


def zprod(enc: sx.Enc, xs: Sequence[Any]) -> Any:
    """The product of the leaves' values (each leaf encoded on its own: a leaf that is not an
    integer is its floor, so a product of non-integer leaves is never taken as exact)."""
    out: Any = 1
    for x in xs:
        out = out * enc.t(x)
    return out


def integral(enc: sx.Enc, value: Any) -> List[Any]:
    """Every leaf of every layout in ``value`` (a layout or nested tuples/lists holding some)
    is an integer: for a leaf that is a quotient after the path's substitution, the
    remainder is zero."""
    sp = _sp()
    out: List[Any] = []
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, Layout):
            fs, fd = sx.flat_modes(v)
            stack.extend(fs + fd)
        elif isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, sp.Expr) and not v.is_Integer:
            x = v.xreplace(enc.subs) if enc.subs else v
            num, den = sp.fraction(sp.cancel(x))
            if den != 1:
                out.append(enc.t(sp.Mod(num, den)) == 0)
    return out


def _product(xs: Sequence[Any]) -> Any:
    sp = _sp()
    return sp.Mul(*[sp.sympify(x) for x in xs])


def _same_layout(cx: Ctx, X: Layout, Y: Layout) -> Any:
    """X and Y have the same profile and, leaf by leaf, equal extents and strides."""
    z3 = _z3()
    from layoutproof.inttuple import congruent

    if not congruent(X.shape, Y.shape):
        return z3.BoolVal(False)
    xs, xd = sx.flat_modes(X)
    ys, yd = sx.flat_modes(Y)
    e = cx.enc
    return z3.And([e.t(a) == e.t(b) for a, b in zip(xs + xd, ys + yd)])


def _input_terms(L: Layout, cs: Sequence[Any]) -> List[Tuple[Any, Any, Any]]:
    fs, _fd = sx.flat_modes(L)
    return [(c, s, p) for c, s, p in zip(cs, fs, prefixes(fs))]


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
        return [], zprod(e, sx.flat_modes(R)[0]) == zprod(e, sx.flat_modes(L)[0])

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
        terms = [(c, s, p) for c, s, p in zip(cs, fs, prefixes(fs))]
        claims, rval = eval_at_offset(cx, rs, rd, terms, idx, unbounded_last=True)
        return ctx, z3.And(claims + [rval == val, z3.BoolVal(len(rs) >= 1)])

    n = len(fs)
    return Instance(f"rank {n}", fn, build, lambda asg, p: None)


def _ranks(
    make: Callable[[Layout], Instance], ranks: Sequence[int], name: str = "L"
) -> Callable[[], List[Result]]:
    return lambda: [make(sym_layout(name, r)) for r in ranks]  # type: ignore[misc]


def _filter(L: Layout) -> Instance:
    ops = _ops()

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
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
        terms = [(c, s_, p) for c, s_, p in zip(kc, ks, prefixes(ks))] if kept else []
        rs, rd = sx.flat_modes(F)
        claims, fval = eval_at_offset(
            cx, rs, rd, terms, sx.index_of(e, ks, kc) if kept else 0, unbounded_last=False
        )
        claims.append(zprod(e, rs) == (zprod(e, ks) if kept else 1))  # F's domain: the kept coordinates
        claims += [z3.Or(e.t(a) == 1, e.t(b) != 0) for a, b in zip(rs, rd)]  # no stride-0 mode
        return [], z3.And(claims + [fval == lval])

    n = len(sx.flat_modes(L)[0])
    return Instance(f"rank {n}", lambda: ops.filter_(L), build, confirm_post("filter", lambda p: p.value, L))


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
    leaves = by_profile(R, B.shape)
    if leaves is None:
        return [], z3.BoolVal(False)
    claims: List[Any] = []
    terms: List[Tuple[Any, Any, Any]] = []
    rval: Any = 0
    boff: Any = 0
    for (rs, rd), n, r in zip(leaves, bs, bd):
        claims.append(zprod(e, rs) == e.t(n))
        gs = [cx.dg.new(e, s, "g") for s in rs]
        ck = sx.index_of(e, rs, gs)
        boff = boff + ck * e.t(r)
        rval = rval + sx.value_of(e, rd, gs)
        for g, s, p in zip(gs, rs, prefixes(rs)):
            terms.append((g, s, sp.expand(p * r)))
    more, aval = eval_at_offset(cx, list(As), list(Ad), terms, boff, unbounded_last=True)
    return [], z3.And(claims + more + [rval == aval])


def composition_instance(A: Layout, B: Layout) -> Instance:
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


def right_identity_instance(A: Layout) -> Instance:
    """A o (size(A):1) has A's function: composition_claims with B = size(A):1."""
    ops = _ops()
    fa, da = sx.flat_modes(A)
    B = Layout.trusted(A.size, 1)

    def fn() -> Any:
        As, Ad = ops.coalesce_flat(tuple(fa), tuple(da), keep_last=True)
        return As, Ad, ops.composition(A, B)

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        As, Ad, R = cx.path.value
        return composition_claims(cx, A, B, As, Ad, R)

    return Instance(f"A rank {len(fa)}", fn, build, confirm_post("composition", lambda p: p.value[2], A, B))


def left_identity_instance(B: Layout) -> Instance:
    """(N:1) o B == B as functions (N a symbol; the identity extended past N)."""
    ops = _ops()
    N = extents("N", 1)[0]
    A = Layout.trusted(N, 1)

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        R = cx.path.value
        bs, bd = sx.flat_modes(B)
        leaves = by_profile(R, B.shape)
        if leaves is None:
            return [], z3.BoolVal(False)
        claims: List[Any] = []
        for (rs, rd), n, r in zip(leaves, bs, bd):
            c = cx.dg.new(e, n, "c")
            claims.append(zprod(e, rs) == e.t(n))
            digs = sx.place(e, rs, [(c, n, _sp().Integer(1))], cx.facts, unbounded_last=False)
            claims += bounded(e, rs, digs)
            claims.append(sx.index_of(e, rs, digs) == c)
            claims.append(sx.value_of(e, rd, digs) == c * e.t(r))
        return [], z3.And(claims)

    return Instance(
        f"B rank {len(sx.flat_modes(B)[0])}",
        lambda: ops.composition(A, B),
        build,
        confirm_post("composition", lambda p: p.value, A, B),
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
        K = zprod(e, [m[0] for m in allm])
        claims.append(K >= e.t(M))  # fills [0, M) ...
        claims.append(K < e.t(M) + e.t(_cover(kept)))  # ... rounded up to L's cover
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
    return Instance(f"rank {n}", fn, build, confirm_chain("complement", L))


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
def logical_divide_instance(L: Layout, T: Layout) -> Instance:
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
        B = Layout.trusted((T.shape, C.shape), (T.stride, C.stride))
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


def logical_product_instance(A: Layout, B: Layout) -> Instance:
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
        if type(R.shape) is not tuple or len(R.shape) != 2:
            return [], z3.BoolVal(False)
        R0 = Layout.trusted(R.shape[0], R.stride[0])
        R1 = Layout.trusted(R.shape[1], R.stride[1])
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


def _regroup(kind: str, n_extra: int = 1, impl: Any = None, n: int = 2) -> Instance:
    """zipped / tiled / flat: the library's regrouping code (``_unzip_entry``, ``_tiled``,
    ``_flat2`` of ``ops``, shared by the divides and the products) applied to an opaque
    by-mode operation whose every part is a fresh symbol: the result is the by-mode result's
    tiles and rests rearranged, leaf for leaf, whatever the by-mode operation returns."""
    from layoutproof import ops

    iops = ops if impl is None else impl
    L = sym_layout("L", n + n_extra)
    tiler = tuple(sym_layout(f"T{i}_", 1) for i in range(n))
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

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        P, R = cx.path.value
        return [], _same_layout(cx, R, expected(P))

    return Instance(
        f"L rank {n + n_extra}, tiler of {n} layouts, opaque by-mode parts",
        fn,
        build,
        confirm_equal(lambda p: p.value[1], lambda p: expected(p.value[0])),
    )


def associativity_instance(A: Layout, B: Layout, C: Layout) -> Instance:
    """(A o B) o C == A o (B o C) as functions on C's domain, on every path where both sides
    are admissible."""
    from layoutproof import ops as iops

    def fn() -> Any:
        return iops.composition(iops.composition(A, B), C), iops.composition(A, iops.composition(B, C))

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        X, Y = cx.path.value
        lx = by_profile(X, C.shape)
        ly = by_profile(Y, C.shape)
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
                claims.append(zprod(e, sh) == e.t(n))
                digs = sx.place(e, sh, [(c, n, _sp().Integer(1))], cx.facts, unbounded_last=False)
                claims += bounded(e, sh, digs)
                claims.append(sx.index_of(e, sh, digs) == c)
                v = sx.value_of(e, st, digs)
                if acc == "x":
                    vx = vx + v
                else:
                    vy = vy + v
        return ctx, z3.And(claims + [vx == vy])

    return Instance(
        "A, B, C rank 1"
        if all(len(sx.flat_modes(x)[0]) == 1 for x in (A, B, C))
        else f"ranks {len(sx.flat_modes(A)[0])}, {len(sx.flat_modes(B)[0])}, {len(sx.flat_modes(C)[0])}",
        fn,
        build,
        confirm_equal(lambda p: p.value[0], lambda p: p.value[1]),
    )


# ----------------------------------------------------------------------------- swizzle
SWZ_MAX = 20  # B, M, |S| up to 20 (M + B + |S| <= 60: the 64-bit offsets the library uses)


def _signed(v: int, width: int) -> int:
    return v - (1 << width) if v >= 1 << (width - 1) else v


def _swizzle_check(what: str, separated: bool = True) -> List[Result]:
    """One bit-vector query for every (B, M, S) at once (B, M, S are Z3 variables), plus
    the library's masks and shifts compared with the same formula for every triple."""
    import z3

    from layoutproof.swizzle import Swizzle

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


# ----------------------------------------------------------------------------- more theorems
def zabs(enc: sx.Enc, e: Any) -> Any:
    """|e| as a Z3 term: after the path's substitution, the factors of a product that are
    known positive (extents) or integer constants come out of the absolute value
    (|s*d| == s*|d|), so the nonlinear solver meets |d| of the strides themselves."""
    z3 = _z3()
    sp = _sp()
    x = sp.sympify(e)
    if enc.subs and x.free_symbols & enc.subs.keys():
        x = sp.cancel(x.xreplace(enc.subs))
    out: Any = 1
    if isinstance(x, sp.Mul):
        rest = []
        for a in x.args:
            if a.is_Integer:
                out = out * abs(int(a))
            elif a.is_positive:
                out = out * enc.t(a)
            else:
                rest.append(a)
        x = sp.Mul(*rest)
    if x.is_Integer:
        return out * abs(int(x))
    v = enc.t(x)
    return out * z3.If(v >= 0, v, -v)


def zcosize(enc: sx.Enc, L: Layout) -> Any:
    """CuTe's cosize of a flat view of ``L``: ``1 + sum((s-1)*|d|)``."""
    out: Any = 1
    for s_, d_ in zip(*sx.flat_modes(L)):
        out = out + (enc.t(s_) - 1) * zabs(enc, d_)
    return out


def _rank_label(L: Layout) -> str:
    return f"rank {len(sx.flat_modes(L)[0])}"


def _coalesce_cosize(L: Layout) -> Instance:
    ops = _ops()

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        return [], zcosize(cx.enc, cx.path.value) == zcosize(cx.enc, L)

    return Instance(
        _rank_label(L), lambda: ops.coalesce(L), build, confirm_post("coalesce", lambda p: p.value, L)
    )


def _coalesce_maximal(L: Layout) -> Instance:
    """No mode of coalesce(L) has extent 1 (but the 1:0 of an all-unit L) and no two
    neighbouring modes could merge (d_{k+1} != s_k d_k)."""
    ops = _ops()

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        rs, rd = sx.flat_modes(cx.path.value)
        if len(rs) == 1 and rs[0] == 1 and rd[0] == 0:
            return [], z3.BoolVal(True)
        claims = [e.t(s_) != 1 for s_ in rs]
        claims += [e.t(rd[k + 1]) != e.t(rs[k]) * e.t(rd[k]) for k in range(len(rs) - 1)]
        return [], z3.And(claims)

    return Instance(
        _rank_label(L), lambda: ops.coalesce(L), build, confirm_post("coalesce", lambda p: p.value, L)
    )


def _filter_cosize(L: Layout) -> Instance:
    ops = _ops()

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        return [], zcosize(cx.enc, cx.path.value) == zcosize(cx.enc, L)

    return Instance(
        _rank_label(L), lambda: ops.filter_(L), build, confirm_post("filter", lambda p: p.value, L)
    )


def _pair_same(first: Callable[[], Any], second: Callable[[Any], Any], label: str) -> Instance:
    """``second(first())`` is the same layout as ``first()`` (profile, extents, strides)."""

    def fn() -> Any:
        X = first()
        return X, second(X)

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        X, Y = cx.path.value
        return [], _same_layout(cx, X, Y)

    return Instance(label, fn, build, confirm_equal(lambda p: p.value[0], lambda p: p.value[1]))


def _filter_idempotent(L: Layout) -> Instance:
    ops = _ops()
    return _pair_same(lambda: ops.filter_(L), ops.filter_, _rank_label(L))


def _filter_coalesced(L: Layout) -> Instance:
    ops = _ops()
    return _pair_same(lambda: ops.filter_(L), ops.coalesce, _rank_label(L))


def _composition_stride_zero(A: Layout) -> Instance:
    """A o (N:0): size N, the value 0 at every coordinate (A(0) == 0)."""
    ops = _ops()
    N = extents("N", 1)[0]
    B = Layout(N, 0)

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        rs, rd = sx.flat_modes(cx.path.value)
        gs = [cx.dg.new(e, s_, "g") for s_ in rs]
        return [], z3.And(zprod(e, rs) == e.t(N), sx.value_of(e, rd, gs) == 0)

    return Instance(
        f"A {_rank_label(A)}",
        lambda: ops.composition(A, B),
        build,
        confirm_post("composition", lambda p: p.value, A, B),
    )


def composition_size_instance(A: Layout, B: Layout) -> Instance:
    ops = _ops()

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        e = cx.enc
        return [], zprod(e, sx.flat_modes(cx.path.value)[0]) == zprod(e, sx.flat_modes(B)[0])

    return Instance(
        f"A {_rank_label(A)}, B {_rank_label(B)}",
        lambda: ops.composition(A, B),
        build,
        confirm_post("composition", lambda p: p.value, A, B),
    )


def _complement_size(L: Layout, M: Any) -> Instance:
    ops = _ops()

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        e = cx.enc
        C = cx.path.value
        return [], zprod(e, sx.flat_modes(L)[0]) * zprod(e, sx.flat_modes(C)[0]) >= e.t(M)

    return Instance(
        _rank_label(L),
        lambda: ops.complement(L, M),
        build,
        confirm_post("complement", lambda p: p.value, L, M),
    )


def _right_inverse_image(L: Layout) -> Instance:
    """0 <= R(i) < size(L) for every i < size(R), R = right_inverse(L)."""
    ops = _ops()

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        rs, rd = sx.flat_modes(cx.path.value)
        gs = [cx.dg.new(e, s_, "g") for s_ in rs]
        off = sx.value_of(e, rd, gs)
        for g, s_, d_ in zip(gs, rs, rd):
            e.monotone(g, s_, e.t(d_))
        return [], z3.And(off >= 0, off < zprod(e, sx.flat_modes(L)[0]))

    return Instance(
        _rank_label(L),
        lambda: ops.right_inverse(L),
        build,
        confirm_post("right_inverse", lambda p: p.value, L),
    )


def _right_inverse_size(L: Layout) -> Instance:
    """size(right_inverse(L)) divides size(L)."""
    ops = _ops()

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        sp = _sp()
        rs, _rd = sx.flat_modes(cx.path.value)
        return [], cx.enc.t(sp.Mod(_product(sx.flat_modes(L)[0]), _product(rs))) == 0

    return Instance(
        _rank_label(L),
        lambda: ops.right_inverse(L),
        build,
        confirm_post("right_inverse", lambda p: p.value, L),
    )


def _left_inverse_cover(L: Layout) -> Instance:
    """size(left_inverse(L)) >= cosize(L): the inverse's domain holds L's whole image."""
    ops = _ops()

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        e = cx.enc
        rs, _rd = sx.flat_modes(cx.path.value)
        return [], zprod(e, rs) >= zcosize(e, L)

    return Instance(
        _rank_label(L), lambda: ops.left_inverse(L), build, confirm_post("left_inverse", lambda p: p.value, L)
    )


def raises(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with its refusal made a value: ("admissible", result) or ("raises", error) when
    it raises InadmissibleError or names a side condition it cannot meet
    (UndecidableConditionError); any other error propagates (the path is "refused")."""

    def run() -> Any:
        from layoutproof.errors import InadmissibleError, UndecidableConditionError

        try:
            return "admissible", fn()
        except (InadmissibleError, UndecidableConditionError) as e:
            return "raises", e

    return run


def _left_inverse_chain_cond(cx: Ctx, C: Layout) -> Optional[Any]:
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
        tag, v = raises(lambda: ops.left_inverse(L))()
        return tag, v, lay(cs_, cd_)

    return fn


def _left_inverse_chain(L: Layout) -> Instance:
    """left_inverse returns exactly when coalesce(L)'s sorted kept modes form the chain;
    every path that raises (inadmissible, or a side condition the path refutes) violates
    it."""

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        tag, _v, C = cx.path.value
        c = _left_inverse_chain_cond(cx, C)
        if c is None:
            raise sx.NoPlacement("the kept modes or their order are not decided on this path")
        zc = cx.enc.t(c)
        return [], zc if tag == "admissible" else z3.Not(zc)

    return Instance(
        _rank_label(L), _left_inverse_run(L), build, confirm_chain("left_inverse", L), strict=True
    )


def _left_inverse_overlap(L: Layout) -> Instance:
    """Where left_inverse raises for injectivity, coalesce(L) -- and so L, which has its
    function (sym.coalesce-function) -- is not injective: two distinct coordinates with the
    same value, (d_b/d_a in mode a) and (1 in mode b), for two kept modes a != b with
    d_a | d_b and s_a d_a > d_b decided on the path."""

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
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

    return Instance(_rank_label(L), _left_inverse_run(L), build, lambda asg, p: None, need_result=False)


def logical_divide_size_instance(L: Layout, T: Layout) -> Instance:
    """size(logical_divide(L, T)) == size(T) size(complement(T, size(L))) >= size(L)."""
    ops = _ops()
    from layoutproof import ops as iops

    def fn() -> Any:
        return ops.complement(T, L.size), iops.logical_divide(L, T)

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        C, R = cx.path.value
        rsz = zprod(e, sx.flat_modes(R)[0])
        return [], z3.And(
            rsz == zprod(e, sx.flat_modes(T)[0]) * zprod(e, sx.flat_modes(C)[0]),
            rsz >= zprod(e, sx.flat_modes(L)[0]),
        )

    return Instance(f"L {_rank_label(L)}, T {_rank_label(T)}", fn, build, lambda asg, p: None)


def _filter_size(L: Layout) -> Instance:
    """size(filter(L)) <= size(L), and == when L has no stride-0 mode of extent > 1."""
    ops = _ops()

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        fs, fd = sx.flat_modes(L)
        F = zprod(e, sx.flat_modes(cx.path.value)[0])
        no_zero = z3.And([z3.Or(e.t(s_) == 1, e.t(d_) != 0) for s_, d_ in zip(fs, fd)])
        return [], z3.And(F <= zprod(e, fs), z3.Implies(no_zero, F == zprod(e, fs)))

    return Instance(
        _rank_label(L), lambda: ops.filter_(L), build, confirm_post("filter", lambda p: p.value, L)
    )


def _right_inverse_two_sided(L: Layout) -> Instance:
    """When right_inverse(L) has L's size, it is also a left inverse: R(L(i)) == i."""
    ops = _ops()
    fs, fd = sx.flat_modes(L)

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        z3 = _z3()
        e = cx.enc
        R = cx.path.value
        rs, rd = sx.flat_modes(R)
        cs, idx, lval = sx.natural(e, cx.dg, L)
        terms = [(c, s_, d_) for c, s_, d_ in zip(cs, fs, fd)]
        full = zprod(e, rs) == zprod(e, fs)  # the hypothesis
        claims, rdig = _digits_at(cx, rs, terms, lval)
        rval = sx.value_of(e, rd, rdig)
        return [full], z3.And(claims + [rval == idx])

    return Instance(
        _rank_label(L),
        lambda: ops.right_inverse(L),
        build,
        confirm_post("right_inverse", lambda p: p.value, L),
    )


def logical_product_size_instance(A: Layout, B: Layout) -> Instance:
    """size(logical_product(A, B)) == size(A) size(B)."""
    from layoutproof import ops as iops

    def build(cx: Ctx) -> Tuple[List[Any], Any]:
        e = cx.enc
        R = cx.path.value
        return [], zprod(e, sx.flat_modes(R)[0]) == zprod(e, sx.flat_modes(A)[0]) * zprod(
            e, sx.flat_modes(B)[0]
        )

    return Instance(
        f"A {_rank_label(A)}, B {_rank_label(B)}",
        lambda: iops.logical_product(A, B),
        build,
        lambda asg, p: None,
    )


# ----------------------------------------------------------------------------- the theorems
def full_scope() -> bool:
    """``layoutproof prove --all`` (environment LAYOUTPROOF_PROVE_ALL=1, inherited by the
    worker processes): every rank in the stated bound; otherwise the main job's subset."""
    return os.environ.get("LAYOUTPROOF_PROVE_ALL") == "1"


M_SYM = "M"


def _M() -> Any:
    return _sp().Symbol(M_SYM, integer=True, positive=True)


def _one(
    make: Callable[..., Instance], main: Sequence[Any], full: Sequence[Any], claim: str
) -> Callable[[], List[Result]]:
    def check() -> List[Result]:
        return prove(claim, [make(*args) for args in (full if full_scope() else main)])

    return check


def _L(r: int, kind: str = "int") -> Layout:
    return sym_layout("L", r, nonneg=kind == "nonneg", positive=kind == "pos")


def _pairs(a: Sequence[int], b: Sequence[int]) -> List[Tuple[int, int]]:
    return [(x, y) for x in a for y in b]


def _scope(main: str, full: str) -> str:
    return f"{main} in `layoutproof prove`; {full} with `layoutproof prove --all`"


_EXT = "extents positive integers"
_ANY = "strides arbitrary integers"
_POS = "strides positive integers"


def all_values_theorem(
    tid: str,
    title: str,
    statement: str,
    check: Callable[[], List[Result]],
    scope: str,
    params: str,
    assumptions: Tuple[str, ...] = (),
    *,
    source: Optional[str] = None,
    heavy: bool = False,
) -> Theorem:
    """The one builder of this group's theorems (expected "proved", method "z3").

    ``scope`` is the theorem's family (the values it covers, e.g. "every rank"); ``source`` the
    catalog file that states it, added to the references when it is not this one.
    """
    return Theorem(
        tid,
        title,
        statement,
        check,
        expected="proved",
        method="z3",
        parameters=params,
        assumptions=assumptions,
        references=REF + ((source,) if source else ()),
        family=scope,
        group=GROUP,
        heavy=heavy,
    )


# (tiler modes, extra modes of L): the regroup runs (cheap: ~0.02 s each)
_REGROUP_MAIN = ((1, 0), (2, 1), (3, 1))
_REGROUP_ALL = tuple((n, x) for n in (1, 2, 3, 4) for x in (0, 1, 2))


def _regroup_check(kind: str) -> Callable[[], List[Result]]:
    def check() -> List[Result]:
        sizes = _REGROUP_ALL if full_scope() else _REGROUP_MAIN
        return prove(f"{kind} regroups", [_regroup(kind, x, None, n) for n, x in sizes])

    return check


def _swizzle_theorem(what: str) -> Callable[[], List[Result]]:
    return lambda: _swizzle_check(what)


def _build() -> List[Theorem]:
    out: List[Theorem] = []
    r14, r12 = (1, 2, 3, 4), (1, 2)
    co = [(_L(r),) for r in r14]
    co_main = [(_L(r),) for r in r12]
    sc_co = _scope("ranks 1-2", "ranks 1-4")
    out += [
        all_values_theorem(
            "sym.coalesce-extended",
            "coalesce keeping the last mode preserves the extended function",
            "With keep_last (composition's view of A), the coalesced modes evaluated at any index i >= 0 "
            "(the last mode unbounded) give L extended along its last mode: the lemma behind the "
            "composition theorems",
            _one(_coalesce_keep_last, co_main, co, "coalesce_keep_last(L)^(i) == L^(i)"),
            sc_co,
            f"{_EXT}; {_ANY}",
        ),
    ]
    for kind in ("zipped", "tiled", "flat"):
        shape = {
            "zipped": "((tiles...), (rests..., extra modes...))",
            "tiled": "((tiles...), rest0, rest1, ..., extra modes...)",
            "flat": "(tile0, tile1, ..., rest0, rest1, ..., extra modes...)",
        }[kind]
        out.append(
            all_values_theorem(
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
            all_values_theorem(
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
    """The theorems added for issue 15's target of 40 (one-layout theorems at ranks 1-4 with
    ``--all`` where they finish, two-layout ones at the composition's ranks)."""
    r12, r14 = (1, 2), (1, 2, 3, 4)
    sc_14 = _scope("ranks 1-2", "ranks 1-4")
    anyL = f"{_EXT}; {_ANY}"

    def one(
        make: Callable[..., Instance], main: Sequence[int], full: Sequence[int], claim: str, kind: str = "int"
    ) -> Callable[[], List[Result]]:
        return _one(make, [(_L(r, kind),) for r in main], [(_L(r, kind),) for r in full], claim)

    out = [
        all_values_theorem(
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


# --- P2 folds: the rank-bounded instances that proofs/catalog/induction.py runs as the bases
# and supplements of its inductions (public names for another module)
coalesce_function_instance = _coalesce_function
coalesce_size_instance = _coalesce_size
coalesce_depth_instance = _coalesce_depth
coalesce_keep_last_instance = _coalesce_keep_last
filter_instance = _filter
complement_instance = _complement
complement_chain_instance = _complement_chain
complement_size_instance = _complement_size
left_inverse_instance = _left_inverse
left_inverse_chain_instance = _left_inverse_chain
left_inverse_cover_instance = _left_inverse_cover
left_inverse_overlap_instance = _left_inverse_overlap
right_inverse_instance = _right_inverse
right_inverse_two_sided_instance = _right_inverse_two_sided
right_inverse_image_instance = _right_inverse_image
right_inverse_size_instance = _right_inverse_size
filter_size_instance = _filter_size
coalesce_cosize_instance = _coalesce_cosize
coalesce_maximal_instance = _coalesce_maximal
coalesce_idempotent_instance = _coalesce_idempotent
filter_cosize_instance = _filter_cosize
filter_idempotent_instance = _filter_idempotent
filter_coalesced_instance = _filter_coalesced
