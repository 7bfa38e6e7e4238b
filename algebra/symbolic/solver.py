"""The one Z3 driver of the package: a claim, the facts it may use and a time budget in, a
:class:`Verdict` out.

Every Z3 query of layoutproof goes through this module (the side conditions of the symbolic
operations, the verifier's obligations, the proof catalogue's claims):

* :func:`to_z3` is the translation of SymPy integer expressions and conditions into Z3
  terms, with Python's integer semantics (``Mod`` takes the divisor's sign, ``floor``
  rounds toward minus infinity) and a quotient ``p/q`` read as ``p // q``.  That reading
  is exact only where ``q`` divides ``p``: :func:`prove` and :func:`satisfiable` use it
  only after Z3 shows the facts imply every such divisibility, and otherwise read the
  query exactly (a quotient is the rational it is, ``Mod``/``floor`` of a rational as in
  SymPy), so ``Mod(M/2, 3) != 1/2`` is not proved (``M = 1``);
* :func:`prove` asks whether ``facts and not claim`` is satisfiable: unsatisfiable is
  ``"proved"`` -- or ``"vacuous"`` when the facts alone are unsatisfiable (they would prove
  anything) -- a model is ``"refuted"`` with the model's values, anything else
  ``"unknown"`` with the reason;
* :func:`satisfiable` asks whether facts have a model (optionally with some values
  fixed), :func:`facts_consistent` is the one consistency check (cached);
* :func:`check` is the only place a Z3 solver is run: within the per-call limit (cut to
  the time left before the active deadline, :mod:`layoutproof.budget`), with an
  interrupt of the solver's context from a timer thread as a backstop.

Claims and facts are SymPy conditions or Z3 Boolean terms (a caller that builds its own
encoding passes Z3 terms; both kinds mix: Z3 identifies variables by name).  Each call
runs under a deadline of its own (the translation's SymPy work included); past it, or
past the per-call limit, the verdict is ``"unknown"`` with the reason ``"timeout"``.

>>> import sympy
>>> M = sympy.Symbol("M", integer=True, positive=True)
>>> prove(sympy.Eq(sympy.Mod(M, 4), 0), [sympy.Eq(sympy.Mod(M, 8), 0)]).status
'proved'
>>> v = prove(sympy.Eq(sympy.Mod(M, 8), 0), [sympy.Eq(sympy.Mod(M, 4), 0)], small_model=True)
>>> v.status, dict(v.model)
('refuted', {'M': 4})
>>> prove(M > 5, [M < 1]).status
'vacuous'
>>> str(to_z3(sympy.Mod(M, 8) + sympy.floor(M / 4)))
'M%8 + M/4'
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Literal, Mapping, Optional, Sequence, Set, Tuple

import sympy as sp
import z3

from .. import budget
from ..errors import MalformedLayoutError
from ..outcome import Outcome, Status

__all__ = [
    "Verdict",
    "Satisfiable",
    "prove",
    "satisfiable",
    "facts_consistent",
    "to_z3",
    "domain_constraints",
    "check",
    "unknown_reason",
    "smtlib_text",
    "make_solver",
    "DEFAULT_TIMEOUT_S",
]

#: the per-call limit when neither the caller nor :func:`layoutproof.symbolic.get_timeout` says
DEFAULT_TIMEOUT_S = 3.0


@dataclass(frozen=True, slots=True)
class Verdict(Outcome):
    """The fate of one claim under facts: a :class:`~layoutproof.outcome.Outcome`.

    Attributes:
        status: ``"proved"`` (``facts and not claim`` is unsatisfiable, the facts are not),
            ``"refuted"`` (a model of ``facts and not claim`` exists: ``witness``),
            ``"vacuous"`` (the facts alone are unsatisfiable) or ``"unknown"`` (``reason``).
        statement: the caller's label of the claim (also ``name``).
        method: ``"z3"`` (``"sympy"`` when a caller decided the claim before asking Z3).
        witness: for "refuted", the values (name -> int) of the free variables in Z3's
            model (also ``model``); None otherwise.
        reason: for "unknown", why: ``"timeout"``, ``"nonlinear arithmetic (...)"`` or Z3's
            own reason; empty otherwise.
        seconds: the time the call took.
        scope, cases: as in :class:`~layoutproof.outcome.Outcome` (the facts bound the
            scope; ``smtlib`` states them).
        smtlib: the obligation ``facts and not claim`` as an SMT-LIB2 script (``unsat``
            means the claim holds); written when first read, from ``assertions``.
        assertions: the obligation's Z3 terms (domains, facts, ``not claim``).
        logic: the SMT-LIB logic the script names.
    """

    method: str = "z3"
    witness: Optional[Mapping[str, int]] = None
    reason: str = ""
    assertions: Tuple[Any, ...] = field(default=(), repr=False, compare=False, kw_only=True)
    logic: str = field(default="ALL", kw_only=True)

    @property
    def name(self) -> str:
        """The caller's label of the claim (``statement``)."""
        return self.statement

    @property
    def model(self) -> Optional[Mapping[str, int]]:
        """For "refuted", the model's values (``witness``); None otherwise."""
        return self.witness

    @property
    def smtlib(self) -> str:
        """The obligation as an SMT-LIB2 script."""
        return smtlib_text(self.assertions, self.logic)

    @property
    def z3_answer(self) -> str:
        """Z3's answer to ``facts and not claim``: "unsat", "sat" or "unknown"."""
        return {"proved": "unsat", "vacuous": "unsat", "refuted": "sat"}.get(self.status, "unknown")

    def smt2(self) -> str:
        """The SMT-LIB2 obligation (the interface the verifier's exports expect)."""
        return self.smtlib


@dataclass(frozen=True, slots=True)
class Satisfiable:
    """Whether facts have a model: ``status`` "sat" (``model``), "unsat" or "unknown"
    (``reason``); ``smtlib`` is the query as SMT-LIB2 (from ``assertions``)."""

    status: Literal["sat", "unsat", "unknown"]
    model: Optional[Mapping[str, int]]
    reason: str
    seconds: float
    assertions: Tuple[Any, ...] = field(default=(), repr=False, compare=False)
    logic: str = "ALL"

    @property
    def smtlib(self) -> str:
        """The query as an SMT-LIB2 script."""
        return smtlib_text(self.assertions, self.logic)


# ----------------------------------------------------------------------------- translation
def _var(sym: Any, env: Dict[Any, Any]) -> Any:
    v = env.get(sym)
    if v is None:
        v = env[sym] = z3.Int(sym.name)
    return v


def domain_constraints(env: Mapping[Any, Any]) -> List[Any]:
    """What each SymPy symbol's assumptions (``positive``, ``nonnegative``, ...) say about
    the range of its Z3 variable."""
    out = []
    for sym, v in env.items():
        if sym.is_positive:
            out.append(v > 0)
        elif sym.is_nonnegative:
            out.append(v >= 0)
        elif sym.is_negative:
            out.append(v < 0)
        elif sym.is_nonpositive:
            out.append(v <= 0)
    return out


def _floordiv(a: Any, b: Any) -> Any:
    if z3.is_int_value(b):
        bv = b.as_long()
        if bv > 0:
            return a / b
        if bv < 0:
            return (-a) / (-b)
        raise MalformedLayoutError("division by zero in a symbolic expression")
    return z3.If(b > 0, a / b, (-a) / (-b))


def _mod(a: Any, b: Any) -> Any:
    if z3.is_int_value(b):
        bv = b.as_long()
        if bv > 0:
            return a % b
        if bv < 0:
            return -((-a) % (-b))
        raise MalformedLayoutError("modulo by zero in a symbolic expression")
    return z3.If(b > 0, a % b, -((-a) % (-b)))


def _quotient(e: Any, env: Dict[Any, Any], guards: Optional[List[Any]] = None) -> Tuple[Any, Any]:
    """``e`` as (numerator, denominator) Z3 integer terms."""
    num, den = sp.fraction(sp.together(e))
    return _tr(num, env, guards), _tr(den, env, guards)


def _has_rational_coeff(e: Any) -> bool:
    if isinstance(e, sp.Mul):
        return any(
            (isinstance(a, sp.Rational) and not isinstance(a, sp.Integer))
            or (isinstance(a, sp.Pow) and isinstance(a.args[1], sp.Integer) and int(a.args[1]) < 0)
            for a in e.args
        )
    if isinstance(e, sp.Pow):
        return isinstance(e.args[1], sp.Integer) and int(e.args[1]) < 0
    return False


_RELATIONS: Dict[type, Any] = {}


def _relations() -> Dict[type, Any]:
    if not _RELATIONS:
        _RELATIONS.update(
            {
                sp.Eq: lambda a, b: a == b,
                sp.Ne: lambda a, b: a != b,
                sp.StrictLessThan: lambda a, b: a < b,
                sp.LessThan: lambda a, b: a <= b,
                sp.StrictGreaterThan: lambda a, b: a > b,
                sp.GreaterThan: lambda a, b: a >= b,
            }
        )
    return _RELATIONS


def to_z3(e: Any, env: Optional[Dict[Any, Any]] = None) -> Any:
    """A SymPy integer expression or condition as a Z3 term (a Z3 term passes unchanged).

    ``env`` maps SymPy symbols to Z3 variables and is filled as new symbols are met (pass
    the same dict for the claim and its facts; :func:`domain_constraints` reads the
    symbols' ranges from it).  A quotient ``p/q`` of integer polynomials is the floor
    division ``p // q``, which is its value only where ``q`` divides ``p`` (the driver's
    calls check that the facts imply it, and read the query exactly otherwise).  Raises
    :class:`~layoutproof.errors.MalformedLayoutError` for what has no integer reading (a
    non-integer symbol or number, a division by zero, ...)."""
    return _tr(e, {} if env is None else env)  # not cached: ``env`` may bind symbols to any term


# SymPy expression -> (its Z3 term, the (symbol, variable) pairs it met, in order).  SymPy
# expressions are immutable and compare structurally (assumptions included), and a Z3
# variable is identified by its name, so a translation can be reused in any ``env`` that
# maps each symbol to ``z3.Int(symbol.name)`` -- the driver's own (a caller's env given to
# :func:`to_z3` may bind a symbol to another term: that translation is not cached).
_TRANSLATED: Dict[Any, Tuple[Any, Tuple[Tuple[Any, Any], ...], Tuple[Any, ...]]] = {}
_TRANSLATED_MAX = 20000


def _translate(e: Any, env: Dict[Any, Any], guards: Optional[List[Any]] = None) -> Any:
    """:func:`_tr` (the integer reading), memoized; ``guards`` receives the divisibility
    conditions under which the reading is exact.  Raises :class:`_NeedsExact` for a term
    with no integer reading."""
    if not isinstance(e, sp.Basic):
        return _tr(e, env)
    hit = _TRANSLATED.get(e)
    if hit is None:
        met: Dict[Any, Any] = {}
        g: List[Any] = []
        hit = (_tr(e, met, g), tuple(met.items()), tuple(g))
        if len(_TRANSLATED) > _TRANSLATED_MAX:
            _TRANSLATED.clear()
        _TRANSLATED[e] = hit
    for sym, v in hit[1]:
        if sym not in env:
            env[sym] = v
    if guards is not None:
        guards.extend(hit[2])
    return hit[0]


class _NeedsExact(Exception):
    """Raised while reading a term in integers when it has no integer reading at all (a
    non-integer number): the query is read exactly instead (:func:`_trx`)."""


def _guard(n: Any, d: Any, guards: Optional[List[Any]]) -> None:
    """Record that the integer reading of the quotient ``n / d`` is exact only where ``d``
    divides ``n``."""
    if guards is not None:
        guards.append(_mod(n, d) == 0)


def _tr(e: Any, env: Dict[Any, Any], guards: Optional[List[Any]] = None) -> Any:
    """The integer reading of ``e``: a quotient ``p/q`` outside ``floor``/``ceiling`` is
    ``p // q``, and ``guards`` (when given) receives ``q | p`` for each such quotient: the
    reading is exact where every guard holds."""
    if isinstance(e, z3.ExprRef):
        return e
    if isinstance(e, bool):
        return z3.BoolVal(e)
    if isinstance(e, int):
        return z3.IntVal(e)
    if e is sp.true:
        return z3.BoolVal(True)
    if e is sp.false:
        return z3.BoolVal(False)
    if isinstance(e, sp.Integer):
        return z3.IntVal(int(e))
    if isinstance(e, sp.Symbol):
        if e.is_integer is not True:
            raise MalformedLayoutError(f"symbol {e} is not declared integer; use layoutproof.symbols()")
        return _var(e, env)
    if isinstance(e, sp.Rational):
        if guards is not None:
            raise _NeedsExact(str(e))
        raise MalformedLayoutError(f"the non-integer number {e} appears in a symbolic layout expression")
    if isinstance(e, sp.Add):
        if any(isinstance(a, sp.Rational) and not isinstance(a, sp.Integer) for a in e.args) or any(
            _has_rational_coeff(a) for a in e.args
        ):
            n, d = _quotient(e, env, guards)
            _guard(n, d, guards)
            return _floordiv(n, d)
        return z3.Sum([_tr(a, env, guards) for a in e.args])
    if isinstance(e, sp.Mul):
        if _has_rational_coeff(e):
            n, d = _quotient(e, env, guards)
            _guard(n, d, guards)
            return _floordiv(n, d)
        out = _tr(e.args[0], env, guards)
        for a in e.args[1:]:
            out = out * _tr(a, env, guards)
        return out
    if isinstance(e, sp.Pow):
        b, x = e.args
        if isinstance(x, sp.Integer) and 0 <= int(x) <= 64:
            out = z3.IntVal(1)
            base = _tr(b, env, guards)
            for _k in range(int(x)):
                out = out * base
            return out
        if isinstance(x, sp.Integer) and int(x) < 0:
            n, d = _quotient(e, env, guards)
            _guard(n, d, guards)
            return _floordiv(n, d)
        raise MalformedLayoutError(f"unsupported power {e} in a symbolic expression")
    if isinstance(e, sp.Mod):
        return _mod(_tr(e.args[0], env, guards), _tr(e.args[1], env, guards))
    if isinstance(e, sp.floor):
        n, d = _quotient(e.args[0], env, guards)
        return _floordiv(n, d)
    if isinstance(e, sp.ceiling):
        n, d = _quotient(-e.args[0], env, guards)
        return -_floordiv(n, d)
    if isinstance(e, sp.Abs):
        a = _tr(e.args[0], env, guards)
        return z3.If(a >= 0, a, -a)
    if isinstance(e, (sp.Min, sp.Max)):
        args = [_tr(a, env, guards) for a in e.args]
        out = args[0]
        for a in args[1:]:
            out = z3.If(a < out, a, out) if isinstance(e, sp.Min) else z3.If(a > out, a, out)
        return out
    if isinstance(e, sp.Piecewise):
        pw = None
        for val, cond in reversed(e.args):
            v = _tr(val, env, guards)
            pw = v if pw is None else z3.If(_tr(cond, env, guards), v, pw)
        return pw
    rel = _relations().get(type(e))
    if rel is not None:
        return rel(_tr(e.lhs, env, guards), _tr(e.rhs, env, guards))
    if isinstance(e, sp.And):
        return z3.And([_tr(a, env, guards) for a in e.args])
    if isinstance(e, sp.Or):
        return z3.Or([_tr(a, env, guards) for a in e.args])
    if isinstance(e, sp.Not):
        return z3.Not(_tr(e.args[0], env, guards))
    if isinstance(e, sp.Implies):
        return z3.Implies(_tr(e.args[0], env, guards), _tr(e.args[1], env, guards))
    raise MalformedLayoutError(f"cannot translate {type(e).__name__} {str(e)[:80]} to Z3")


def _real(a: Any) -> Any:
    return z3.ToReal(a) if z3.is_int(a) else a


def _xfloor(a: Any) -> Any:
    return a if z3.is_int(a) else z3.ToInt(a)


def _trx(e: Any, env: Dict[Any, Any]) -> Any:
    """The exact reading of ``e``: symbols are integers, a quotient is the rational
    quotient (a Z3 real), ``floor``/``ceiling``/``Mod`` of a rational are what they are
    in SymPy (``Mod(a, b) = a - b*floor(a/b)``).  Slower to decide than :func:`_tr`'s
    integer reading, which the driver uses wherever the facts imply its quotients exact."""
    if isinstance(e, (z3.ExprRef, bool, int)) or e is sp.true or e is sp.false:
        return _tr(e, env)
    if isinstance(e, sp.Integer) or isinstance(e, sp.Symbol):
        return _tr(e, env)
    if isinstance(e, sp.Rational):
        return z3.RealVal(e.p) / z3.RealVal(e.q)
    if isinstance(e, sp.Add):
        return z3.Sum([_trx(a, env) for a in e.args])
    if isinstance(e, sp.Mul):
        out = _trx(e.args[0], env)
        for a in e.args[1:]:
            out = out * _trx(a, env)
        return out
    if isinstance(e, sp.Pow):
        b, x = e.args
        if isinstance(x, sp.Integer) and -64 <= int(x) <= 64:
            out = z3.IntVal(1)
            base = _trx(b, env)
            for _k in range(abs(int(x))):
                out = out * base
            return out if int(x) >= 0 else z3.RealVal(1) / _real(out)
        raise MalformedLayoutError(f"unsupported power {e} in a symbolic expression")
    if isinstance(e, sp.Mod):
        a, b = _trx(e.args[0], env), _trx(e.args[1], env)
        if z3.is_int(a) and z3.is_int(b):
            return _mod(a, b)
        if isinstance(e.args[1], sp.Number) and e.args[1] == 0:
            raise MalformedLayoutError("modulo by zero in a symbolic expression")
        return a - b * z3.ToInt(_real(a) / _real(b))
    if isinstance(e, sp.floor):
        return _xfloor(_trx(e.args[0], env))
    if isinstance(e, sp.ceiling):
        return -_xfloor(-_trx(e.args[0], env))
    if isinstance(e, sp.Abs):
        a = _trx(e.args[0], env)
        return z3.If(a >= 0, a, -a)
    if isinstance(e, (sp.Min, sp.Max)):
        args = [_trx(a, env) for a in e.args]
        out = args[0]
        for a in args[1:]:
            out = z3.If(a < out, a, out) if isinstance(e, sp.Min) else z3.If(a > out, a, out)
        return out
    if isinstance(e, sp.Piecewise):
        pw = None
        for val, cond in reversed(e.args):
            v = _trx(val, env)
            pw = v if pw is None else z3.If(_trx(cond, env), v, pw)
        return pw
    rel = _relations().get(type(e))
    if rel is not None:
        return rel(_trx(e.lhs, env), _trx(e.rhs, env))
    if isinstance(e, sp.And):
        return z3.And([_trx(a, env) for a in e.args])
    if isinstance(e, sp.Or):
        return z3.Or([_trx(a, env) for a in e.args])
    if isinstance(e, sp.Not):
        return z3.Not(_trx(e.args[0], env))
    if isinstance(e, sp.Implies):
        return z3.Implies(_trx(e.args[0], env), _trx(e.args[1], env))
    raise MalformedLayoutError(f"cannot translate {type(e).__name__} {str(e)[:80]} to Z3")


# ----------------------------------------------------------------------------- running Z3
def check(s: Any, timeout_ms: int) -> Any:
    """``s.check()`` within ``timeout_ms`` (cut to the active deadline, see
    :mod:`layoutproof.budget`): Z3's own timeout, and an interrupt of the solver's context
    from a timer thread as a backstop.  A check interrupted or failing inside Z3 is
    ``z3.unknown``; past an active deadline it raises
    :class:`~layoutproof.budget.BudgetExceeded`."""
    budget.check()
    ms = budget.call_limit_ms(int(timeout_ms))
    s.set("timeout", ms)
    try:
        r = budget.run_interruptible(s.check, s.ctx.interrupt, ms)
    except z3.Z3Exception:
        r = z3.unknown
    budget.check()
    return r


def unknown_reason(s: Any) -> str:
    """Why ``s``'s last check was ``unknown``: ``"timeout"``, ``"nonlinear arithmetic
    (...)"`` or Z3's own words."""
    try:
        why = s.reason_unknown()
    except z3.Z3Exception:  # pragma: no cover - defensive
        why = "unknown"
    if "timeout" in why or "canceled" in why or "resource" in why or "interrupt" in why:
        return "timeout"
    if "nonlinear" in why or "incomplete" in why or "smt tactic failed" in why:
        return f"nonlinear arithmetic ({why})"
    return why or "unknown"


def _ms(timeout_s: Optional[float]) -> int:
    if timeout_s is None:
        from . import get_timeout

        return get_timeout()
    if type(timeout_s) not in (int, float) or not timeout_s > 0 or timeout_s != timeout_s:
        raise MalformedLayoutError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
    return max(1, int(round(float(timeout_s) * 1000)))


def _solver(parts: Iterable[Any]) -> Any:
    """A Z3 solver holding ``parts`` (:func:`check` sets its time limit)."""
    s = z3.Solver()
    for p in parts:
        s.add(p)
    return s


def make_solver(assertions: Iterable[Any], timeout_ms: Optional[int] = None) -> Any:
    """An unstarted Z3 solver holding ``assertions`` (Z3 terms), with ``timeout_ms`` set
    when given: for callers that keep a solver object (to export it, to add to it); run it
    with :func:`check`, which applies the budget."""
    s = _solver(assertions)
    if timeout_ms is not None:
        s.set("timeout", int(timeout_ms))
    return s


def smtlib_text(assertions: Sequence[Any], logic: str = "ALL") -> str:
    """The SMT-LIB2 script asserting ``assertions`` (Z3 terms) under ``logic``."""
    body: str = _solver(assertions).to_smt2()
    return f"(set-logic {logic})\n" + body


class _Query:
    """The Z3 terms of one call: the domain constraints of the SymPy symbols met, the facts
    and (optionally) the claim, translated in that order into one ``env``.

    Each is read in integers (:func:`_tr`) with the divisibility guards of its quotients
    (``claim_guards``, ``fact_guards``); ``exact`` (:meth:`read_exactly`) reads them all
    exactly (:func:`_trx`) instead.  A term with no integer reading (a non-integer number)
    makes the query exact from the start."""

    __slots__ = ("env", "claim", "facts", "claim_guards", "fact_guards", "exact", "_src")

    def __init__(self, claim: Any, facts: Sequence[Any], first: Sequence[Any] = ()) -> None:
        self._src = (claim, tuple(facts), tuple(first))
        self.env: Dict[Any, Any] = {}
        self.exact = False
        self.claim_guards: List[Any] = []
        self.fact_guards: List[List[Any]] = []
        try:
            for x in first:  # symbols to register first (the order of a model's names)
                _translate(x, self.env)
            self.claim = None if claim is None else _translate(claim, self.env, self.claim_guards)
            self.facts = []
            for f in facts:
                g: List[Any] = []
                self.facts.append(_translate(f, self.env, g))
                self.fact_guards.append(g)
        except _NeedsExact:
            self.read_exactly()

    @property
    def guarded(self) -> bool:
        """Whether the integer reading divides somewhere (exact only under its guards)."""
        return not self.exact and (bool(self.claim_guards) or any(self.fact_guards))

    def read_exactly(self) -> None:
        """Translate the claim and the facts again, exactly (:func:`_trx`)."""
        claim, facts, first = self._src
        self.env = {}
        for x in first:
            _trx(x, self.env)
        self.claim = None if claim is None else _trx(claim, self.env)
        self.facts = [_trx(f, self.env) for f in facts]
        self.claim_guards, self.fact_guards, self.exact = [], [[] for _f in facts], True

    def exactness(self, with_claim: bool) -> List[List[Any]]:
        """The queries whose unsatisfiability makes the integer reading exact at every
        point the facts admit: the guard-free facts imply the facts' guards (so the facts
        read exactly), and then the facts imply the claim's guards (``with_claim``)."""
        dom = domain_constraints(self.env)
        out: List[List[Any]] = []
        fg = [g for gs in self.fact_guards for g in gs]
        if fg:
            plain = [f for f, gs in zip(self.facts, self.fact_guards) if not gs]
            out.append(dom + plain + [z3.Not(z3.And(fg))])
        if with_claim and self.claim_guards:
            out.append(dom + list(self.facts) + [z3.Not(z3.And(self.claim_guards))])
        return out

    def assertions(self, negate: Optional[bool] = True) -> List[Any]:
        """Domains, facts, then ``not claim`` (``negate``), ``claim`` (False) or nothing (None)."""
        out = domain_constraints(self.env) + list(self.facts)
        if negate is not None and self.claim is not None:
            out.append(z3.Not(self.claim) if negate else self.claim)
        return out


def _settle_reading(q: _Query, ms: int, with_claim: bool) -> None:
    """Keep ``q``'s integer reading where its quotients are exact at every point the facts
    admit (each query of :meth:`_Query.exactness` unsatisfiable within ``ms``, at most
    :data:`QUICK_MS`); otherwise
    read the query exactly.  A quotient is never read as an integer division on the
    library's word alone."""
    if not q.guarded:
        return
    for parts in q.exactness(with_claim):
        # a short limit: the quotients the library builds follow from a divisibility fact
        # at once, and a guard Z3 cannot settle quickly (``5 % M == 0`` under a nonlinear
        # fact) only sends the query to the exact reading, which is sound either way
        if check(_solver(parts), min(ms, QUICK_MS)) != z3.unsat:
            q.read_exactly()
            return


def _value(v: Any) -> Optional[int]:
    if z3.is_int_value(v) or z3.is_bv_value(v):
        return int(v.as_long())
    if z3.is_true(v):
        return 1
    if z3.is_false(v):
        return 0
    return None


def _free_consts(terms: Sequence[Any]) -> List[Any]:
    """The uninterpreted constants (variables) of Z3 terms, in order of appearance."""
    seen: Set[int] = set()
    out: List[Any] = []
    names: Set[str] = set()
    stack = list(reversed(terms))
    while stack:
        t = stack.pop()
        k = t.get_id()
        if k in seen:
            continue
        seen.add(k)
        if z3.is_const(t) and t.decl().kind() == z3.Z3_OP_UNINTERPRETED:
            n = str(t)
            if n not in names:
                names.add(n)
                out.append(t)
            continue
        if z3.is_app(t):
            stack.extend(reversed(t.children()))
    return out


def _model(s: Any, env: Mapping[Any, Any], extra: Sequence[Any] = ()) -> Dict[str, int]:
    """The values of ``env``'s variables (by the SymPy symbol's name) and of ``extra``
    Z3 constants in ``s``'s model."""
    m = s.model()
    out: Dict[str, int] = {}
    for sym, v in env.items():
        x = _value(m.eval(v, model_completion=True))
        if x is not None:
            out[sym.name] = x
    for c in extra:
        n = str(c)
        if n not in out:
            x = _value(m.eval(c, model_completion=True))
            if x is not None:
                out[n] = x
    return out


def _shrink(
    s: Any, env: Mapping[Any, Any], best: Dict[str, int], timeout_ms: int, rounds: int = 12
) -> Dict[str, int]:
    """A model of ``s`` with small values (readable counterexamples): halve a bound on the
    magnitude of every variable of ``env`` while the constraints stay satisfiable.  Out of
    time, the model found so far is a model all the same.  The callers give each check
    :data:`QUICK_MS` at most: a bounded query Z3 cannot settle quickly ends the shrinking
    (it would otherwise spend the whole per-call limit on a cosmetic step)."""
    vs = list(env.values())
    try:
        for _k in range(rounds):
            b = max((abs(best[sym.name]) for sym in env if sym.name in best), default=0)
            if b <= 1:
                break
            found = False
            for lim in ((b // 2 if b > 2 else 1), b - 1):
                s.push()
                for v in vs:
                    s.add(v <= lim, v >= -lim)
                r = check(s, timeout_ms)
                if r == z3.sat:
                    best = {**best, **_model(s, env)}
                    found = True
                s.pop()
                if r == z3.unknown:
                    return best  # the solver is stuck: more rounds would only spend the time limit
                if found:
                    break
            if not found:
                break
    except budget.BudgetExceeded:
        pass
    return best


# ----------------------------------------------------------------------------- small models
#: the most assignments :func:`search_model` tries (a few milliseconds of SymPy evaluation)
SEARCH_TRIES = 400
#: the largest magnitude :func:`search_model` gives a symbol
SEARCH_MAX = 16


def _range_of(sym: Any, b: int) -> List[int]:
    """The values of magnitude exactly ``b`` that ``sym``'s assumptions allow."""
    if b == 0:
        vals = [0]
    else:
        vals = [b, -b]
    if sym.is_positive:
        return [v for v in vals if v > 0]
    if sym.is_nonnegative:
        return [v for v in vals if v >= 0]
    if sym.is_negative:
        return [v for v in vals if v < 0]
    if sym.is_nonpositive:
        return [v for v in vals if v <= 0]
    return vals


def _holds_at(c: Any, m: Mapping[Any, Any]) -> bool:
    """Whether ``c`` is true at ``m`` by exact evaluation (a quotient is the rational it is,
    as in the solver's reading)."""
    try:
        return bool(c.xreplace(m) is sp.true)
    except (ZeroDivisionError, TypeError, ValueError, AttributeError):
        return False


def search_model(
    conds: Sequence[Any],
    *,
    symbols: Sequence[Any] = (),
    fixed: Optional[Mapping[str, int]] = None,
    tries: int = SEARCH_TRIES,
) -> Optional[Dict[str, int]]:
    """A model of ``conds`` (SymPy conditions) found by trying small values, smallest
    magnitudes first, each checked by exact evaluation; None when none is found within
    ``tries`` assignments (or a condition is not a SymPy condition).  Z3 may spend its whole
    time limit on a nonlinear query a small model answers (``(M**2 + N**2) % 3 == 0``
    holds for M = N = 3): the solver tries this before and after Z3 where a model settles
    the question.  Every value respects its symbol's assumptions (``positive``, ...);
    ``fixed`` pins symbols by name; ``symbols`` get values too."""
    if not all(isinstance(c, sp.Basic) for c in conds) or not all(isinstance(x, sp.Basic) for x in symbols):
        return None
    fixed = dict(fixed or {})
    syms: Set[Any] = set()
    for c in conds:
        syms |= c.free_symbols
    for x in symbols:
        syms |= x.free_symbols
    if any(not x.is_integer for x in syms):
        return None
    base = {x: sp.Integer(int(fixed[x.name])) for x in syms if x.name in fixed}
    free = sorted((x for x in syms if x.name not in fixed), key=lambda x: x.name)
    if not free:
        ok = all(_holds_at(c, base) for c in conds)
        return {**fixed} if ok else None
    left = tries
    # shells of growing magnitude: every assignment whose largest |value| is b
    for b in range(SEARCH_MAX + 1):
        inner = [[v for k in range(b + 1) for v in _range_of(x, k)] for x in free]
        outer = [set(_range_of(x, b)) for x in free]
        if not any(outer):
            continue
        for combo in itertools.product(*inner):
            if not any(v in o for v, o in zip(combo, outer)):
                continue  # inside a smaller shell: tried already
            left -= 1
            if left < 0:
                return None
            m = dict(base)
            m.update({x: sp.Integer(v) for x, v in zip(free, combo)})
            if all(_holds_at(c, m) for c in conds):
                return {x.name: int(v) for x, v in m.items()}
    return None


def _check_or_search(
    s: Any,
    ms: int,
    conds: Optional[Sequence[Any]],
    symbols: Sequence[Any] = (),
    fixed: Optional[Mapping[str, int]] = None,
) -> Any:
    """``check(s, ms)``, except that a query Z3 leaves open after :data:`QUICK_MS` is first
    tried with small values (:func:`search_model` over ``conds``, the SymPy form of ``s``'s
    query; None: no search): a model found is returned (a dict), otherwise Z3 goes on for
    the rest of ``ms``.  Z3 may spend its whole limit looking for a model of a nonlinear
    query that ``M = N = 3`` satisfies."""
    if conds is None or ms <= 2 * QUICK_MS:
        return check(s, ms)
    r = check(s, QUICK_MS)
    if r != z3.unknown:
        return r
    found = search_model(conds, symbols=symbols, fixed=fixed)
    if found is not None:
        return found
    return check(s, ms - QUICK_MS)


#: how long Z3 runs before :func:`_check_or_search` tries small values
QUICK_MS = 200


# ----------------------------------------------------------------------------- consistency
_CONSISTENT: Dict[Any, bool] = {}
_CONSISTENT_MAX = 5000


def _sympy_key(facts: Sequence[Any]) -> Optional[Tuple[Any, ...]]:
    if all(isinstance(f, sp.Basic) for f in facts):
        return tuple(facts)
    return None  # Z3 terms overload ==: not used as keys


def facts_consistent(facts: Sequence[Any], *, timeout_s: Optional[float] = None) -> Optional[bool]:
    """Whether ``facts`` have a model: True, False (they contradict each other: every claim
    would follow from them) or None (undecided in time).  The one consistency check of the
    package; decided answers about SymPy facts are cached."""
    facts = tuple(facts)
    if not facts:
        return True
    key = _sympy_key(facts)
    if key is not None:
        hit = _CONSISTENT.get(key)
        if hit is not None:
            return hit
    if search_model(facts, tries=SEARCH_TRIES // 4) is not None:
        ok = True  # a small model, checked exactly: Z3 need not look for one
    else:
        r = satisfiable(facts, timeout_s=timeout_s, on_deadline="raise")
        if r.status == "unknown":
            return None
        ok = r.status == "sat"
    if key is not None:
        if len(_CONSISTENT) > _CONSISTENT_MAX:
            _CONSISTENT.clear()
        _CONSISTENT[key] = ok
    return ok


# ----------------------------------------------------------------------------- the calls
OnDeadline = Literal["unknown", "raise"]


def _own_limit_s(ms: int, checks: int) -> float:
    return checks * ms / 1000.0 + 1.0


def prove(
    claim: Any,
    facts: Sequence[Any] = (),
    *,
    timeout_s: Optional[float] = None,
    name: str = "",
    logic: str = "ALL",
    small_model: bool = False,
    on_deadline: OnDeadline = "unknown",
    check_facts: bool = True,
) -> Verdict:
    """Decide ``claim`` under ``facts`` (SymPy conditions or Z3 Boolean terms) with Z3.

    ``facts and not claim`` unsatisfiable: "proved", or "vacuous" when the facts alone are
    unsatisfiable (:func:`facts_consistent`); satisfiable: "refuted" with the model's values
    (made small first when ``small_model``); otherwise "unknown" with the reason.
    ``timeout_s`` is the limit of each Z3 check (default
    :func:`layoutproof.symbolic.get_timeout`); the whole call, translation included, runs
    under a deadline of its own.  When that or an enclosing deadline runs out the verdict is
    "unknown" (reason "timeout"); with ``on_deadline="raise"`` an enclosing deadline's
    :class:`~layoutproof.budget.BudgetExceeded` propagates instead (the caller owns that
    deadline).  ``logic`` is the SMT-LIB logic named in the exported script.  With
    ``check_facts=False`` an unsatisfiable obligation is "proved" without the consistency
    check (for a caller that checked the facts already: under contradictory facts a claim
    holds vacuously, so "proved" stays sound).  A claim or fact with no integer reading
    raises :class:`~layoutproof.errors.MalformedLayoutError`; an error inside Z3 is
    "unknown" with the reason ``"Z3 error: ..."``.
    """
    t0 = time.perf_counter()
    facts = tuple(facts)
    ms = _ms(timeout_s)
    parts: List[Any] = []
    mine = None

    def out(status: Status, model: Optional[Dict[str, int]] = None, reason: str = "") -> Verdict:
        return Verdict(
            status,
            name,
            witness=model,
            reason=reason,
            seconds=time.perf_counter() - t0,
            assertions=tuple(parts),
            logic=logic,
        )

    try:
        with budget.deadline(_own_limit_s(ms, 5 if small_model else 4)) as mine:
            q = _Query(claim, facts)
            _settle_reading(q, ms, True)
            parts = q.assertions(True)
            s = _solver(parts)
            r = _check_or_search(s, ms, facts + (sp.Not(claim),) if isinstance(claim, sp.Basic) else None)
            if isinstance(r, dict):  # Z3 gave up at first; a small model refutes the claim
                return out("refuted", r)
            if r == z3.unsat:
                ok = facts_consistent(facts, timeout_s=ms / 1000.0) if facts and check_facts else True
                return out("vacuous" if ok is False else "proved")
            if r == z3.sat:
                extra = _free_consts(parts) if _needs_extra(claim, facts) else ()
                model = _model(s, q.env, extra)
                if small_model and q.env:
                    model = _shrink(s, q.env, model, min(ms, QUICK_MS))
                return out("refuted", model)
            return out("unknown", reason=unknown_reason(s))
    except budget.BudgetExceeded as e:
        if on_deadline == "raise" and e.at != mine:
            raise
        return out("unknown", reason="timeout")
    except z3.Z3Exception as e:
        return out("unknown", reason=f"Z3 error: {e}")


def _needs_extra(claim: Any, facts: Sequence[Any]) -> bool:
    return isinstance(claim, z3.ExprRef) or any(isinstance(f, z3.ExprRef) for f in facts)


def satisfiable(
    facts: Sequence[Any],
    *,
    timeout_s: Optional[float] = None,
    fixed: Optional[Mapping[str, int]] = None,
    symbols: Sequence[Any] = (),
    small_model: bool = False,
    logic: str = "ALL",
    on_deadline: OnDeadline = "unknown",
) -> Satisfiable:
    """Do ``facts`` (SymPy conditions or Z3 Boolean terms) have a model?  ``fixed`` pins
    symbols (by name) to values; ``symbols`` (SymPy symbols or expressions) are given
    values in the model too, listed first.  "sat" with the model (small when
    ``small_model``; ``fixed`` included), "unsat", or "unknown" with the reason; deadlines
    as in :func:`prove`."""
    t0 = time.perf_counter()
    facts = tuple(facts)
    ms = _ms(timeout_s)
    parts: List[Any] = []
    mine = None

    def out(
        status: Literal["sat", "unsat", "unknown"], model: Optional[Dict[str, int]] = None, reason: str = ""
    ) -> Satisfiable:
        return Satisfiable(status, model, reason, time.perf_counter() - t0, tuple(parts), logic)

    try:
        with budget.deadline(_own_limit_s(ms, 3 if small_model else 2)) as mine:
            q = _Query(None, facts, first=tuple(symbols))
            _settle_reading(q, ms, False)
            parts = q.assertions(None)
            for sym, v in q.env.items():
                if fixed and sym.name in fixed:
                    parts.append(v == int(fixed[sym.name]))
            s = _solver(parts)
            r = _check_or_search(s, ms, facts, symbols=tuple(symbols), fixed=fixed)
            if isinstance(r, dict):  # Z3 gave up at first; a small model answers
                return out("sat", r)
            if r == z3.unsat:
                return out("unsat")
            if r == z3.sat:
                extra = _free_consts(parts) if any(isinstance(f, z3.ExprRef) for f in facts) else ()
                model = _model(s, q.env, extra)
                if small_model and q.env:
                    model = _shrink(s, q.env, model, min(ms, QUICK_MS))
                if fixed:
                    model.update({k: int(v) for k, v in fixed.items()})
                return out("sat", model)
            return out("unknown", reason=unknown_reason(s))
    except budget.BudgetExceeded as e:
        if on_deadline == "raise" and e.at != mine:
            raise
        return out("unknown", reason="timeout")
    except z3.Z3Exception as e:
        return out("unknown", reason=f"Z3 error: {e}")
