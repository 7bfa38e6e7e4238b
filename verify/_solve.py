"""SymPy and Z3 for the checks: the facts in force, fresh coordinate symbols, and one
solver call per claim (always with a time limit), recorded as a ProofObligation."""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple

from layoutproof.errors import LayoutError

from .result import ProofObligation

__all__ = ["facts_for", "coord_symbol", "prove", "Verdict", "facts_consistent", "timeout_of", "facts_text"]


def timeout_of(timeout_ms: Optional[int]) -> int:
    """The per-call Z3 limit: the argument, else :func:`layoutproof.symbolic.get_timeout`."""
    if timeout_ms is None:
        from layoutproof.symbolic import get_timeout

        return get_timeout()
    if type(timeout_ms) is not int or timeout_ms <= 0:
        raise LayoutError(f"timeout_ms must be a positive int (milliseconds), got {timeout_ms!r}")
    return timeout_ms


def facts_for(assume: Any) -> tuple:
    """The active :func:`layoutproof.assuming` facts plus ``assume`` (a condition or an
    iterable of conditions: strings, SymPy relations)."""
    from layoutproof.symbolic import assumptions, condition

    if assume is None:
        extra: Iterable[Any] = ()
    elif isinstance(assume, str) or not hasattr(assume, "__iter__"):
        extra = (assume,)
    else:
        extra = assume
    out = list(assumptions())
    for a in extra:
        c = condition(a)
        if c not in out:
            out.append(c)
    return tuple(out)


def facts_text(facts: tuple) -> Tuple[str, ...]:
    from layoutproof.symbolic import pretty

    return tuple(pretty(f) for f in facts)


def coord_symbol(name: str, taken: Iterable[Any]) -> Any:
    """A non-negative integer symbol named ``name`` (or ``name_1``, ...) distinct by name
    from every symbol in ``taken`` (Z3 identifies variables by name)."""
    import sympy as sp

    names = {getattr(s, "name", str(s)) for s in taken}
    cand, k = name, 0
    while cand in names:
        k += 1
        cand = f"{name}_{k}"
    return sp.Symbol(cand, integer=True, nonnegative=True)


class Verdict:
    """One claim's fate: ``value`` True (proved), False (a model of facts and not claim
    exists: ``model``), None (unknown: ``reason``); ``method`` is "sympy" or "z3"."""

    __slots__ = ("value", "method", "model", "reason", "obligation")

    def __init__(
        self,
        value: Optional[bool],
        method: str,
        model: Optional[Dict[str, int]] = None,
        reason: Optional[str] = None,
        obligation: Optional[ProofObligation] = None,
    ) -> None:
        self.value = value
        self.method = method
        self.model = model
        self.reason = reason
        self.obligation = obligation


def _sympy_true(claim: Any) -> bool:
    import sympy as sp

    if claim is sp.true or claim is True:
        return True
    try:
        if isinstance(claim, sp.Eq):
            return sp.expand(claim.lhs - claim.rhs) == 0
        if isinstance(claim, sp.And):
            return all(_sympy_true(a) for a in claim.args)
    except (TypeError, ValueError, RecursionError):  # pragma: no cover - defensive
        return False
    return False


def prove(purpose: str, claim: Any, facts: tuple, timeout_ms: int) -> Verdict:
    """Decide ``claim`` under ``facts``: SymPy first (expansion of an equality), then Z3
    through :func:`layoutproof.symbolic.solver.prove` (``facts and not claim``: unsat
    proves it, a model refutes it).  The caller checks the facts' consistency once
    (:func:`facts_consistent`); an enclosing deadline's BudgetExceeded propagates."""
    import sympy as sp

    if claim is False:
        claim = sp.false  # Z3 still gives a model of the facts: the counterexample's assignment
    if _sympy_true(claim):
        return Verdict(True, "sympy")
    from layoutproof import budget
    from layoutproof.symbolic import solver

    try:
        v = solver.prove(
            claim, facts, timeout_s=timeout_ms / 1000.0, name=purpose, on_deadline="raise", check_facts=False
        )
    except budget.BudgetExceeded:
        raise
    except LayoutError as e:
        return Verdict(None, "z3", reason=f"not expressible in Z3: {e}")
    rec = ProofObligation(
        purpose, claim, facts, v.z3_answer, v, v.seconds, reason=v.reason if v.status == "unknown" else None
    )
    if v.status in ("proved", "vacuous"):
        return Verdict(True, "z3", obligation=rec)
    if v.status == "refuted":
        return Verdict(False, "z3", model=dict(v.model or {}), obligation=rec)
    return Verdict(None, "z3", reason=v.reason, obligation=rec)


def facts_consistent(facts: tuple, timeout_ms: int) -> Optional[bool]:
    """False when the facts contradict each other (every claim would follow from them);
    None when undecided in time or not expressible in Z3
    (:func:`layoutproof.symbolic.solver.facts_consistent`)."""
    if not facts:
        return True
    from layoutproof import budget
    from layoutproof.symbolic import solver

    try:
        return solver.facts_consistent(facts, timeout_s=timeout_ms / 1000.0)
    except budget.BudgetExceeded:
        raise
    except LayoutError:
        return None


def params_of(*objs: Any) -> List[Any]:
    """The SymPy symbols in the objects (layouts, leaves, tuples), sorted by name."""
    from layoutproof.symbolic import is_sym

    out: set = set()

    def walk(x: Any) -> None:
        from layoutproof.layout import Layout

        if isinstance(x, Layout):
            out.update(x.free_symbols)
        elif type(x) is tuple or type(x) is list:
            for e in x:
                walk(e)
        elif is_sym(x):
            out.update(x.free_symbols)

    for o in objs:
        walk(o)
    return sorted(out, key=lambda s: s.name)
