"""SymPy integer expressions and conditions as Z3 terms, and the Z3 decision of one condition.

The translation keeps Python's integer semantics: ``Mod`` takes the sign of the divisor,
``floor(a/b)`` rounds toward minus infinity, a quotient ``p/q`` of integer polynomials is
the exact (floor) division ``p // q`` -- the library only builds such leaves after proving
that ``q`` divides ``p`` under the facts.  Every symbol is an unbounded mathematical integer
constrained by its SymPy assumptions (``positive``, ``nonnegative``, ...).

Z3 is imported when this module is, which happens the first time a symbolic condition
is not settled by SymPy alone.

>>> import sympy
>>> M = sympy.Symbol("M", integer=True, positive=True)
>>> str(to_z3(sympy.Mod(M, 8) + sympy.floor(M / 4), {}))
'M%8 + M/4'
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

import sympy as sp
import z3

from .. import budget
from ..errors import LayoutError, MalformedLayoutError
from . import Decision

__all__ = ["to_z3", "domain_constraints", "decide_z3", "obligation", "smt2", "check", "model_of"]


def check(s: Any, timeout_ms: int) -> Any:
    """``s.check()`` within ``timeout_ms`` (cut to the active deadline, see
    :mod:`layoutproof.budget`): Z3's own timeout, and an interrupt of the solver's context
    from a timer thread as a backstop.  A check interrupted or failing
    inside Z3 is ``z3.unknown``; past an active deadline it raises
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


def _var(sym: Any, env: Dict[Any, Any]) -> Any:
    v = env.get(sym)
    if v is None:
        v = env[sym] = z3.Int(sym.name)
    return v


def domain_constraints(env: Dict[Any, Any]) -> List[Any]:
    """What each symbol's SymPy assumptions say about its range."""
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


def _quotient(e: Any, env: Dict[Any, Any]) -> Tuple[Any, Any]:
    """``e`` as (numerator, denominator) Z3 integer terms."""
    num, den = sp.fraction(sp.together(e))
    return to_z3(num, env), to_z3(den, env)


def to_z3(e: Any, env: Dict[Any, Any]) -> Any:
    """A SymPy integer expression or condition as a Z3 term; ``env`` maps symbols to Z3
    variables (filled as new symbols are met)."""
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
        raise MalformedLayoutError(f"the non-integer number {e} appears in a symbolic layout expression")
    if isinstance(e, sp.Add):
        if any(isinstance(a, sp.Rational) and not isinstance(a, sp.Integer) for a in e.args) or any(
            _has_rational_coeff(a) for a in e.args
        ):
            n, d = _quotient(e, env)
            return _floordiv(n, d)
        return z3.Sum([to_z3(a, env) for a in e.args])
    if isinstance(e, sp.Mul):
        if _has_rational_coeff(e):
            n, d = _quotient(e, env)
            return _floordiv(n, d)
        out = to_z3(e.args[0], env)
        for a in e.args[1:]:
            out = out * to_z3(a, env)
        return out
    if isinstance(e, sp.Pow):
        b, x = e.args
        if isinstance(x, sp.Integer) and 0 <= int(x) <= 64:
            out = z3.IntVal(1)
            base = to_z3(b, env)
            for _ in range(int(x)):
                out = out * base
            return out
        if isinstance(x, sp.Integer) and int(x) < 0:
            n, d = _quotient(e, env)
            return _floordiv(n, d)
        raise MalformedLayoutError(f"unsupported power {e} in a symbolic expression")
    if isinstance(e, sp.Mod):
        return _mod(to_z3(e.args[0], env), to_z3(e.args[1], env))
    if isinstance(e, sp.floor):
        n, d = _quotient(e.args[0], env)
        return _floordiv(n, d)
    if isinstance(e, sp.ceiling):
        n, d = _quotient(-e.args[0], env)
        return -_floordiv(n, d)
    if isinstance(e, sp.Abs):
        a = to_z3(e.args[0], env)
        return z3.If(a >= 0, a, -a)
    if isinstance(e, (sp.Min, sp.Max)):
        args = [to_z3(a, env) for a in e.args]
        out = args[0]
        for a in args[1:]:
            out = z3.If(a < out, a, out) if isinstance(e, sp.Min) else z3.If(a > out, a, out)
        return out
    if isinstance(e, sp.Piecewise):
        out = None
        for val, cond in reversed(e.args):
            v = to_z3(val, env)
            out = v if out is None else z3.If(to_z3(cond, env), v, out)
        return out
    if isinstance(e, sp.Eq):
        return to_z3(e.lhs, env) == to_z3(e.rhs, env)
    if isinstance(e, sp.Ne):
        return to_z3(e.lhs, env) != to_z3(e.rhs, env)
    if isinstance(e, sp.StrictLessThan):
        return to_z3(e.lhs, env) < to_z3(e.rhs, env)
    if isinstance(e, sp.LessThan):
        return to_z3(e.lhs, env) <= to_z3(e.rhs, env)
    if isinstance(e, sp.StrictGreaterThan):
        return to_z3(e.lhs, env) > to_z3(e.rhs, env)
    if isinstance(e, sp.GreaterThan):
        return to_z3(e.lhs, env) >= to_z3(e.rhs, env)
    if isinstance(e, sp.And):
        return z3.And([to_z3(a, env) for a in e.args])
    if isinstance(e, sp.Or):
        return z3.Or([to_z3(a, env) for a in e.args])
    if isinstance(e, sp.Not):
        return z3.Not(to_z3(e.args[0], env))
    if isinstance(e, sp.Implies):
        return z3.Implies(to_z3(e.args[0], env), to_z3(e.args[1], env))
    raise MalformedLayoutError(f"cannot translate {type(e).__name__} {str(e)[:80]} to Z3")


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


class Obligation:
    """A Z3 query: ``facts and not claim`` is unsatisfiable iff ``claim`` follows."""

    __slots__ = ("claim", "facts", "env", "solver_terms")

    def __init__(self, claim: Any, facts: tuple) -> None:
        self.claim = claim
        self.facts = facts
        self.env: Dict[Any, Any] = {}
        zc = to_z3(claim, self.env)
        zf = [to_z3(f, self.env) for f in facts]
        self.solver_terms = (zc, zf)

    def solver(self, timeout_ms: int, negate: bool = True) -> Any:
        zc, zf = self.solver_terms
        s = z3.Solver()
        s.set("timeout", int(timeout_ms))
        for c in domain_constraints(self.env):
            s.add(c)
        for f in zf:
            s.add(f)
        s.add(z3.Not(zc) if negate else zc)
        return s

    def smt2(self) -> str:
        """SMT-LIB2 text of ``facts and not claim`` (``unsat`` means the claim is proved)."""
        s = self.solver(1000)
        return "(set-logic ALL)\n" + s.to_smt2()


def obligation(claim: Any, facts: tuple = ()) -> Obligation:
    return Obligation(claim, facts)


def smt2(claim: Any, facts: tuple = ()) -> str:
    return Obligation(claim, facts).smt2()


def _model(s: Any, env: Dict[Any, Any]) -> Dict[str, int]:
    m = s.model()
    out = {}
    for sym, v in env.items():
        val = m.eval(v, model_completion=True)
        out[sym.name] = val.as_long()
    return out


def _small_model(s: Any, env: Dict[Any, Any], timeout_ms: int = 1000, rounds: int = 12) -> Dict[str, int]:
    """A model of ``s`` with small values (readable counterexamples): halve a bound on
    every variable's magnitude while the constraints stay satisfiable."""
    best = _model(s, env)
    vs = list(env.values())
    try:
        return _shrink(s, env, vs, best, timeout_ms, rounds)
    except budget.BudgetExceeded:  # out of time: the model found so far is a model all the same
        return best


def _shrink(
    s: Any, env: Dict[Any, Any], vs: List[Any], best: Dict[str, int], timeout_ms: int, rounds: int
) -> Dict[str, int]:
    for _ in range(rounds):
        b = max((abs(v) for v in best.values()), default=0)
        if b <= 1:
            break
        s.push()
        lim = b // 2 if b > 2 else 1
        for v in vs:
            s.add(v <= lim, v >= -lim)
        r = check(s, timeout_ms)
        if r == z3.sat:
            best = _model(s, env)
            s.pop()
            continue
        s.pop()
        # not below half: try just below the current bound
        s.push()
        for v in vs:
            s.add(v <= b - 1, v >= -(b - 1))
        r = check(s, timeout_ms)
        if r == z3.sat:
            best = _model(s, env)
            s.pop()
            continue
        s.pop()
        break
    return best


_FACTS_OK: Dict[Any, bool] = {}


def _facts_consistent(facts: tuple, timeout_ms: int) -> None:
    if not facts:
        return
    ok = _FACTS_OK.get(facts)
    if ok is None:
        ob = Obligation(sp.true, facts)
        r = check(ob.solver(timeout_ms, negate=False), timeout_ms)
        ok = r != z3.unsat
        _FACTS_OK[facts] = ok
    if not ok:
        raise LayoutError(
            "the assumptions contradict each other (no assignment satisfies "
            + ", ".join(str(f) for f in facts)
            + "); every condition would follow from them"
        )


def decide_z3(claim: Any, facts: tuple, timeout_ms: int) -> Decision:
    """Prove ``claim`` from ``facts`` (unsat of facts and not claim), else refute it (unsat of
    facts and claim), else unknown; counterexamples are models of facts and not claim."""
    _facts_consistent(facts, timeout_ms)
    ob = Obligation(claim, facts)
    s = ob.solver(timeout_ms, negate=True)
    r = check(s, timeout_ms)
    if r == z3.unsat:
        return Decision(True, "z3", cond=claim, facts=facts)
    cex: Optional[Dict[str, int]] = None
    reason = None
    if r == z3.sat:
        cex = _small_model(s, ob.env, timeout_ms)
    else:
        reason = _unknown_reason(s)
    s2 = ob.solver(timeout_ms, negate=False)
    r2 = check(s2, timeout_ms)
    if r2 == z3.unsat:
        if cex is None:  # refuted, but no model of not-claim came back: take any model of the facts
            s3 = Obligation(sp.true, facts).solver(timeout_ms, negate=False)
            if check(s3, timeout_ms) == z3.sat:
                cex = _model(s3, ob.env) if ob.env else None
        return Decision(False, "z3", counterexample=cex, cond=claim, facts=facts)
    if reason is None:
        reason = "not implied by the assumptions" if r2 == z3.sat else _unknown_reason(s2)
    return Decision(None, "z3", counterexample=cex, reason=reason, cond=claim, facts=facts)


def model_of(facts: tuple, syms: Any, fixed: Dict[str, int], timeout_ms: int) -> Optional[Dict[str, int]]:
    """Values (name -> int) for every symbol of ``syms`` and of the facts that satisfy the
    facts and agree with ``fixed``, small where possible; None when Z3 finds none in time."""
    ob = Obligation(sp.true, facts)
    for sym in syms:
        _var(sym, ob.env)
    s = ob.solver(timeout_ms, negate=False)
    for sym, v in ob.env.items():
        if sym.name in fixed:
            s.add(v == int(fixed[sym.name]))
    if check(s, timeout_ms) != z3.sat:
        return None
    out = _small_model(s, ob.env, timeout_ms)
    out.update({k: int(v) for k, v in fixed.items()})
    return out


def _unknown_reason(s: Any) -> str:
    try:
        why = s.reason_unknown()
    except z3.Z3Exception:  # pragma: no cover - defensive
        why = "unknown"
    if "timeout" in why or "canceled" in why or "interrupt" in why:
        return "timeout"
    if "nonlinear" in why or "incomplete" in why:
        return f"nonlinear arithmetic ({why})"
    return why or "unknown"
