"""Theorems for all values: the engine that symbolically executes :mod:`layoutproof.symbolic.symops`
(the code the library runs on symbolic layouts), one Z3 obligation per path (:mod:`..symexec`).

Every extent and stride of the operands is a fresh symbol (extents positive integers,
strides arbitrary integers); the flat rank is fixed per instance and each theorem runs
every rank up to its stated bound.  A theorem is *proved* only when, at every rank in
scope, the path tree was exhausted within the budget and every path's obligation is
unsat (or the path is infeasible); a path Z3 leaves undecided makes the theorem unknown,
with its path condition; a satisfiable obligation is a refutation only once the model,
substituted into the operands, reproduces the failure on the integer path.

This module holds the operands, the path context, :func:`prove`, the confirmations on the
integer path and the group's theorem builder; the instances are stated per operation family
in :mod:`.symbolic_unary` (coalesce, filter, complement, the inverses) and
:mod:`.symbolic_binary` (composition, the divides and products, swizzles), and the
theorems at every rank in the induction modules.

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
from layoutproof.errors import InadmissibleError, UndecidableConditionError
from layoutproof.inttuple import congruent
from layoutproof.layout import Layout
from layoutproof.ops import coalesce
from layoutproof.symbolic import free_symbols, subs_tuple, symbol_map
from layoutproof.symbolic import sympy_module as _sp
from layoutproof.verify import Counterexample, Result, postcondition
from layoutproof.verify.result import ProofObligation

from .. import symexec as sx
from ..symexec import z3_module as _z3
from ..theorem import Theorem

GROUP = "All values (symbolic execution + Z3)"
REF = ("docs/architecture.md: proofs by symbolic execution",)

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
def subs_layout(L: Any, asg: Dict[str, int]) -> Any:
    if isinstance(L, Layout):
        return L.subs(asg)

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

        try:
            R = subs_layout(result_of(p), asg)
            args = [subs_layout(x, asg) for x in operands]
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
        a, b = subs_layout(left_of(p), asg), subs_layout(right_of(p), asg)
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
            L2 = subs_layout(L, asg)
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


def product_of(xs: Sequence[Any]) -> Any:
    sp = _sp()
    return sp.Mul(*[sp.sympify(x) for x in xs])


def same_layout(cx: Ctx, X: Layout, Y: Layout) -> Any:
    """X and Y have the same profile and, leaf by leaf, equal extents and strides."""
    z3 = _z3()

    if not congruent(X.shape, Y.shape):
        return z3.BoolVal(False)
    xs, xd = sx.flat_modes(X)
    ys, yd = sx.flat_modes(Y)
    e = cx.enc
    return z3.And([e.t(a) == e.t(b) for a, b in zip(xs + xd, ys + yd)])


def input_terms(L: Layout, cs: Sequence[Any]) -> List[Tuple[Any, Any, Any]]:
    fs, _fd = sx.flat_modes(L)
    return [(c, s, p) for c, s, p in zip(cs, fs, prefixes(fs))]


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


def rank_label(L: Layout) -> str:
    return f"rank {len(sx.flat_modes(L)[0])}"


def raises(fn: Callable[[], Any]) -> Callable[[], Any]:
    """``fn`` with its refusal made a value: ("admissible", result) or ("raises", error) when
    it raises InadmissibleError or names a side condition it cannot meet
    (UndecidableConditionError); any other error propagates (the path is "refused")."""

    def run() -> Any:

        try:
            return "admissible", fn()
        except (InadmissibleError, UndecidableConditionError) as e:
            return "raises", e

    return run


# ----------------------------------------------------------------------------- the theorems
def full_scope() -> bool:
    """``layoutproof prove --all`` (environment LAYOUTPROOF_PROVE_ALL=1, inherited by the
    worker processes): every rank in the stated bound; otherwise the main job's subset."""
    return os.environ.get("LAYOUTPROOF_PROVE_ALL") == "1"


M_SYM = "M"


def _M() -> Any:
    return _sp().Symbol(M_SYM, integer=True, positive=True)


def _L(r: int, kind: str = "int") -> Layout:
    return sym_layout("L", r, nonneg=kind == "nonneg", positive=kind == "pos")


#: the parameter texts the group's theorems share
EXTENTS = "extents positive integers"
STRIDES_ANY = "strides arbitrary integers"
STRIDES_POS = "strides positive integers"


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
