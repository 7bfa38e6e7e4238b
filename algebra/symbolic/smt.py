"""SymPy conditions as Z3 obligations, and the Z3 decision of one side condition.

The translation and every solver run live in :mod:`layoutproof.symbolic.solver` (the one Z3
driver); this module keeps the names the rest of the package and its users know:
:class:`Obligation` (a claim and its facts as an exportable query), :func:`decide_z3`
(the three-valued decision :func:`layoutproof.symbolic.decide` falls back on) and
:func:`model_of`.

The translation keeps Python's integer semantics: ``Mod`` takes the sign of the divisor,
``floor(a/b)`` rounds toward minus infinity, a quotient ``p/q`` of integer polynomials is
the floor division ``p // q``.  The decisions use that reading only where Z3 shows the
facts imply ``q | p`` (the library builds such leaves after proving it); elsewhere the
query is read exactly, a quotient being the rational it is (``docs/semantics.md``,
"Division").  Every symbol is an unbounded mathematical integer constrained by its SymPy
assumptions (``positive``, ``nonnegative``, ...).

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

from ..errors import LayoutError
from . import Decision, solver
from .solver import check, domain_constraints, to_z3

__all__ = [
    "to_z3",
    "domain_constraints",
    "decide_z3",
    "obligation",
    "smt2",
    "check",
    "model_of",
    "Obligation",
]


class Obligation:
    """A Z3 query: ``facts and not claim`` is unsatisfiable iff ``claim`` follows.

    A quotient is read as an integer division only where nothing divides inexactly; a
    claim or fact with a quotient is read exactly (no solver runs here to show the
    quotient exact), so the exported script means what the condition means."""

    __slots__ = ("claim", "facts", "env", "solver_terms")

    def __init__(self, claim: Any, facts: Tuple[Any, ...]) -> None:
        self.claim = claim
        self.facts = facts
        q = solver._Query(claim, facts)
        if q.guarded:
            q.read_exactly()
        self.env: Dict[Any, Any] = q.env
        self.solver_terms = (q.claim, list(q.facts))

    def assertions(self, negate: bool = True) -> List[Any]:
        """Domains, facts and ``not claim`` (``claim`` when not ``negate``) as Z3 terms."""
        zc, zf = self.solver_terms
        return domain_constraints(self.env) + list(zf) + [z3.Not(zc) if negate else zc]

    def solver(self, timeout_ms: int, negate: bool = True) -> Any:
        """An unstarted Z3 solver holding :meth:`assertions` (run it with :func:`check`)."""
        return solver.make_solver(self.assertions(negate), timeout_ms)

    def smt2(self) -> str:
        """SMT-LIB2 text of ``facts and not claim`` (``unsat`` means the claim is proved)."""
        return solver.smtlib_text(self.assertions(True))


def obligation(claim: Any, facts: Tuple[Any, ...] = ()) -> Obligation:
    return Obligation(claim, facts)


def smt2(claim: Any, facts: Tuple[Any, ...] = ()) -> str:
    return Obligation(claim, facts).smt2()


def decide_z3(claim: Any, facts: Tuple[Any, ...], timeout_ms: int) -> Decision:
    """Prove ``claim`` from ``facts`` (unsat of facts and not claim), else refute it (unsat of
    facts and claim), else unknown; counterexamples are small models of facts and not
    claim.  Facts that contradict each other raise LayoutError.  An enclosing deadline's
    :class:`~layoutproof.budget.BudgetExceeded` propagates."""
    tmo = timeout_ms / 1000.0
    if facts and solver.facts_consistent(facts, timeout_s=tmo) is False:
        raise LayoutError(
            "the assumptions contradict each other (no assignment satisfies "
            + ", ".join(str(f) for f in facts)
            + "); every condition would follow from them"
        )
    v = solver.prove(claim, facts, timeout_s=tmo, small_model=True, on_deadline="raise")
    if v.status in ("proved", "vacuous"):
        return Decision(True, "z3", cond=claim, facts=facts)
    cex: Optional[Dict[str, int]] = dict(v.model) if v.model is not None else None
    reason = v.reason if v.status == "unknown" else None
    if cex is not None:
        # a model each way decides "undecided": look for one of the claim by small values
        # before Z3 spends its time limit on it (nonlinear claims)
        ex = solver.search_model(facts + (claim,))
        if ex is not None:
            return Decision(
                None, "z3", counterexample=cex, reason=_UNDECIDED, cond=claim, facts=facts, example=ex
            )
    v2 = solver.prove(sp.Not(claim), facts, timeout_s=tmo, on_deadline="raise")
    if v2.status in ("proved", "vacuous"):
        if cex is None:  # refuted, but no model of not-claim came back: take any model of the facts
            sat = solver.satisfiable(facts, timeout_s=tmo, symbols=(claim,), on_deadline="raise")
            if sat.status == "sat" and sat.model:
                cex = dict(sat.model)
        return Decision(False, "z3", counterexample=cex, cond=claim, facts=facts)
    ex = dict(v2.model) if v2.status == "refuted" and v2.model is not None else None
    if reason is None:
        reason = _UNDECIDED if v2.status == "refuted" else v2.reason
    return Decision(None, "z3", counterexample=cex, reason=reason, cond=claim, facts=facts, example=ex)


_UNDECIDED = "not implied by the assumptions"


def model_of(
    facts: Tuple[Any, ...], syms: Any, fixed: Dict[str, int], timeout_ms: int
) -> Optional[Dict[str, int]]:
    """Values (name -> int) for every symbol of ``syms`` and of the facts that satisfy the
    facts and agree with ``fixed``, small where possible; None when Z3 finds none in time."""
    r = solver.satisfiable(
        facts,
        timeout_s=timeout_ms / 1000.0,
        fixed=fixed,
        symbols=tuple(syms),
        small_model=True,
        on_deadline="raise",
    )
    return dict(r.model) if r.status == "sat" and r.model is not None else None
