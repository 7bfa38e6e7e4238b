"""SymPy and Z3 for the checks: the facts in force, fresh coordinate symbols, and one
solver call per claim (always with a time limit), recorded as a ProofObligation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, List, Optional, Tuple

from layoutproof import budget
from layoutproof.errors import LayoutError
from layoutproof.layout import Layout
from layoutproof.outcome import PROVED, UNKNOWN
from layoutproof.symbolic import assumptions, condition, is_sym, pretty

from .result import ProofObligation

if TYPE_CHECKING:
    from layoutproof.symbolic.solver import Verdict

__all__ = ["facts_for", "coord_symbol", "prove", "facts_consistent", "timeout_of", "facts_text"]


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


def prove(
    purpose: str, claim: Any, facts: tuple, timeout_ms: int
) -> Tuple[Verdict, Optional[ProofObligation]]:
    """Decide ``claim`` under ``facts``: SymPy first (expansion of an equality), then Z3
    through :func:`layoutproof.symbolic.solver.prove` (``facts and not claim``: unsat
    proves it, a model refutes it).  The solver's :class:`~layoutproof.symbolic.solver.Verdict`
    (``method`` "sympy" when SymPy decided it; "vacuous" only if the caller skipped
    :func:`facts_consistent`) and, when Z3 was asked, the :class:`ProofObligation` put to
    it.  The caller checks the facts' consistency once (:func:`facts_consistent`); an
    enclosing deadline's BudgetExceeded propagates."""
    import sympy as sp

    if claim is False:
        claim = sp.false  # Z3 still gives a model of the facts: the counterexample's assignment
    from layoutproof.symbolic import solver
    from layoutproof.symbolic.solver import Verdict

    if _sympy_true(claim):
        return Verdict(PROVED, purpose, "sympy"), None

    try:
        v = solver.prove(
            claim, facts, timeout_s=timeout_ms / 1000.0, name=purpose, on_deadline="raise", check_facts=False
        )
    except budget.BudgetExceeded:
        raise
    except LayoutError as e:
        return Verdict(UNKNOWN, purpose, reason=f"not expressible in Z3: {e}"), None
    rec = ProofObligation(
        purpose, claim, facts, v.z3_answer, v, v.seconds, reason=v.reason if v.status == UNKNOWN else None
    )
    return v, rec


def facts_consistent(facts: tuple, timeout_ms: int) -> Optional[bool]:
    """False when the facts contradict each other (every claim would follow from them);
    None when undecided in time or not expressible in Z3
    (:func:`layoutproof.symbolic.solver.facts_consistent`)."""
    if not facts:
        return True
    from layoutproof.symbolic import solver

    try:
        return solver.facts_consistent(facts, timeout_s=timeout_ms / 1000.0)
    except budget.BudgetExceeded:
        raise
    except LayoutError:
        return None


def params_of(*objs: Any) -> List[Any]:
    """The SymPy symbols in the objects (layouts, leaves, tuples), sorted by name."""
    out: set = set()

    def walk(x: Any) -> None:
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
