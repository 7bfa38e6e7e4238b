"""The outcome of every check in :mod:`layoutproof.verify`.

A :class:`Result` says what happened to one claim:

* ``"proved"`` -- the claim holds for every coordinate and every parameter assignment that
  satisfies the assumptions (an unbounded proof by SymPy or Z3, or an exhaustive check of a
  concrete domain, which is complete);
* ``"checked"`` -- the claim holds for every parameter assignment inside the stated
  ``bounds`` (each one checked exhaustively); nothing is claimed outside them;
* ``"refuted"`` -- a :class:`Counterexample` shows the claim false (a coordinate, and the
  parameter assignment when the claim is symbolic);
* ``"unknown"`` -- neither: ``reason`` says why (``"timeout"``, ``"nonlinear arithmetic
  ..."``, the condition that could not be decided).  An unknown is never reported as
  proved.

``bool(result)`` is True only for proved and checked.

>>> from layoutproof import Layout
>>> from layoutproof.verify import equal
>>> r = equal(Layout((4, 2), (2, 1)), Layout((4, 2), (2, 1)))
>>> r.status, r.method, bool(r)
('proved', 'exhaustive', True)
>>> r = equal(Layout((4, 2), (2, 1)), Layout((4, 2), (1, 4)))
>>> r.status, r.counterexample.coordinate, r.counterexample.natural
('refuted', 1, (1, 0))
>>> print(r.counterexample)
coordinate 1 = (1,0): 2 != 1
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from typing import Any, Dict, Iterable, Optional, Tuple

from layoutproof.errors import MalformedLayoutError, show
from layoutproof.layout import fmt_htuple
from layoutproof.outcome import Outcome, status_of

__all__ = ["Result", "Counterexample", "ProofObligation", "STATUSES", "METHODS"]

#: the statuses of a check (the solver's "vacuous" is reported as "unknown")
STATUSES = ("proved", "checked", "refuted", "unknown")
METHODS = ("exhaustive", "sympy", "z3", "cvc5", "bounded")


def _assign_text(a: Optional[Dict[str, int]]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(a.items())) if a else ""


# The records below are frozen dataclasses with slots: their attributes are typed (a user's
# type checker knows ``r.status``), set once in ``__init__`` and never reassigned.  Their
# ``__init__`` is written out (init=False) to keep the constructors' signatures, which
# accept any iterable and store a tuple.  Equality and hashing stay as they were:
# a Counterexample compares by value, a Result or ProofObligation by identity.
@dataclass(frozen=True, slots=True, init=False, repr=False, eq=False)
class Counterexample:
    """Where a claim fails.

    Attributes:
        coordinate: the 1-D coordinate (an int), or None when the failure is not at a
            coordinate (sizes or shapes differ, a side condition fails).
        natural: the same coordinate as a natural coordinate of the domain's shape.
        assignment: for a symbolic claim, the parameter values (dict name -> int) at which
            it fails; None for concrete claims.
        lhs, rhs: the two values that differ (None where a side has no value).
        detail: which part of the claim fails, in words.

    >>> c = Counterexample(coordinate=5, natural=(2, 1), lhs=8, rhs=7, assignment={"M": 4})
    >>> str(c)
    'coordinate 5 = (2,1): 8 != 7; M = 4'
    """

    coordinate: Any
    natural: Any
    assignment: Optional[Dict[str, int]]
    lhs: Any
    rhs: Any
    detail: Optional[str]

    def __init__(
        self,
        *,
        coordinate: Any = None,
        natural: Any = None,
        assignment: Optional[Dict[str, int]] = None,
        lhs: Any = None,
        rhs: Any = None,
        detail: Optional[str] = None,
    ) -> None:
        s = object.__setattr__
        s(self, "coordinate", coordinate)
        s(self, "natural", natural)
        s(self, "assignment", dict(assignment) if assignment else None)
        s(self, "lhs", lhs)
        s(self, "rhs", rhs)
        s(self, "detail", detail)

    def with_assignment(self, assignment: Optional[Dict[str, int]]) -> "Counterexample":
        """A copy with ``assignment`` set."""
        return Counterexample(
            coordinate=self.coordinate,
            natural=self.natural,
            assignment=assignment,
            lhs=self.lhs,
            rhs=self.rhs,
            detail=self.detail,
        )

    def as_dict(self) -> Dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    def __str__(self) -> str:
        text = self.detail or ""
        if self.coordinate is not None:
            where = f"coordinate {self.coordinate}"
            if self.natural is not None and self.natural != self.coordinate:
                where += f" = {fmt_htuple(self.natural)}"
            if self.lhs is not None and self.rhs is not None:
                where += f": {fmt_htuple(self.lhs)} != {fmt_htuple(self.rhs)}"
            text = f"{text} at {where}" if text else where
        elif self.lhs is not None and self.rhs is not None:
            vals = f"{fmt_htuple(self.lhs)} != {fmt_htuple(self.rhs)}"
            text = f"{text}: {vals}" if text else vals
        text = text or "counterexample"
        if self.assignment:
            text += f"; {_assign_text(self.assignment)}"
        return text

    def __repr__(self) -> str:
        items = ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items() if v is not None)
        return f"Counterexample({items})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Counterexample) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash((self.coordinate, self.detail))


@dataclass(frozen=True, slots=True, init=False, repr=False, eq=False)
class ProofObligation:
    """One query put to an SMT solver: the ``facts`` (assumptions, coordinate domains) and
    the ``claim``; the solver is asked whether ``facts and not claim`` is satisfiable.

    Attributes:
        purpose: what the claim expresses, in words.
        claim, facts: SymPy conditions.
        verdict: Z3's answer to ``facts and not claim``: ``"unsat"`` (the claim is proved),
            ``"sat"`` (a counterexample exists) or ``"unknown"``.
        obligation: the :class:`layoutproof.symbolic.smt.Obligation` (Z3 terms).
        seconds: the solver's time.
    """

    purpose: str
    claim: Any
    facts: Tuple[Any, ...]
    verdict: str
    obligation: Any
    seconds: float
    reason: Optional[str]

    def __init__(
        self,
        purpose: str,
        claim: Any,
        facts: Iterable[Any],
        verdict: str,
        obligation: Any,
        seconds: float = 0.0,
        reason: Optional[str] = None,
    ) -> None:
        s = object.__setattr__
        s(self, "purpose", purpose)
        s(self, "claim", claim)
        s(self, "facts", tuple(facts))
        s(self, "verdict", verdict)
        s(self, "obligation", obligation)
        s(self, "seconds", seconds)
        s(self, "reason", reason)

    def smt2(self) -> str:
        """SMT-LIB2 text of ``facts and not claim`` (``unsat`` means the claim holds)."""
        return self.obligation.smt2()

    def __repr__(self) -> str:
        return f"ProofObligation({self.purpose!r}, verdict={self.verdict!r})"


@dataclass(frozen=True, slots=True, init=False, repr=False, eq=False)
class Result(Outcome):
    """The outcome of a check: see the module docstring for the four statuses.  A
    :class:`~layoutproof.outcome.Outcome`: ``statement``, ``witness`` and ``scope`` are the
    shared names of ``claim``, ``counterexample`` and the assumptions and bounds.

    Attributes:
        status: ``"proved"``, ``"checked"``, ``"refuted"`` or ``"unknown"``.
        method: ``"exhaustive"``, ``"sympy"``, ``"z3"``, ``"cvc5"`` or ``"bounded"``.
        claim: the statement checked, in words (also ``statement``).
        seconds: wall time of the check.
        counterexample: a :class:`Counterexample` when refuted (also ``witness``).
        reason: why, when unknown (also set for some refutations: the violated condition).
        condition: the side condition concerned (admissibility checks), when there is one.
        bounds: for ``"checked"``, the parameter box (dict name -> (lo, hi)) within which
            every assignment satisfying the assumptions was checked.
        cases: for bounded checks, how many parameter assignments were checked.
        obligations: the :class:`ProofObligation` s put to Z3 (see :func:`to_smtlib`).
        assumptions: the facts the claim was checked under (text).
        scope: the assumptions and the bounds in one text ("" when there are none).
        notes: further remarks (e.g. why a Z3 attempt gave way to bounded checking).

    >>> r = Result("unknown", "z3", claim="A == B", reason="timeout")
    >>> bool(r), str(r)
    (False, 'unknown (z3, 0.0 ms): A == B -- timeout')
    >>> r.line()
    '[unknown] A == B -- z3: timeout'
    """

    witness: Optional[Counterexample] = None
    reason: Optional[str] = None
    condition: Optional[str] = None
    bounds: Optional[Dict[str, Tuple[int, int]]] = None
    obligations: Tuple[ProofObligation, ...] = ()
    assumptions: Tuple[str, ...] = ()
    notes: Tuple[str, ...] = ()

    def __init__(
        self,
        status: str,
        method: str,
        *,
        claim: Optional[str] = None,
        seconds: float = 0.0,
        counterexample: Optional[Counterexample] = None,
        reason: Optional[str] = None,
        condition: Optional[str] = None,
        bounds: Optional[Dict[str, Tuple[int, int]]] = None,
        cases: Optional[int] = None,
        obligations: Iterable[ProofObligation] = (),
        assumptions: Iterable[str] = (),
        notes: Iterable[str] = (),
        statement: Optional[str] = None,
        witness: Optional[Counterexample] = None,
        scope: Optional[str] = None,
    ) -> None:
        # ``statement`` and ``witness`` are the shared names of ``claim`` and
        # ``counterexample`` (``dataclasses.replace`` passes them); the own names win when
        # both are given.  ``scope`` is derived from the assumptions and bounds.
        if claim is None:
            claim = statement or ""
        if counterexample is None:
            counterexample = witness
        st = status_of(status, STATUSES, who="Result: status")
        if type(method) is not str or method not in METHODS:
            raise MalformedLayoutError(f"Result: method must be one of {METHODS}, got {show(method)}")
        s = object.__setattr__
        s(self, "status", st)
        s(self, "method", method)
        s(self, "statement", claim)
        s(self, "seconds", float(seconds))
        s(self, "witness", counterexample)
        s(self, "reason", reason)
        s(self, "condition", condition)
        s(self, "bounds", dict(bounds) if bounds is not None else None)
        s(self, "cases", cases)
        s(self, "obligations", tuple(obligations))
        s(self, "assumptions", tuple(assumptions))
        s(self, "notes", tuple(notes))
        scope = ", ".join(self.assumptions)
        if self.bounds:
            scope += ("; " if scope else "") + f"within {_bounds_text(self.bounds)}"
        s(self, "scope", scope)

    @property
    def claim(self) -> str:
        """The statement checked, in words (``statement``)."""
        return self.statement

    @property
    def counterexample(self) -> Optional[Counterexample]:
        """Where the claim fails, when refuted (``witness``)."""
        return self.witness

    # ------------------------------------------------------------------ derived
    @property
    def proved(self) -> bool:
        return self.status == "proved"

    @property
    def refuted(self) -> bool:
        return self.status == "refuted"

    @property
    def ok(self) -> bool:
        """proved or checked."""
        return self.status in ("proved", "checked")

    def __bool__(self) -> bool:
        return self.status in ("proved", "checked")

    def replace(self, **changes: Any) -> "Result":
        """A copy with some fields changed (by the constructor's names, or the shared
        ``statement`` and ``witness``; ``scope`` follows the assumptions and bounds)."""
        for shared, own in _ALIASES.items():
            if shared in changes:
                changes[own] = changes.pop(shared)
        kw = {k: getattr(self, k) for k in _INIT_FIELDS}
        kw.update(changes)
        return Result(kw.pop("status"), kw.pop("method"), **kw)

    # ------------------------------------------------------------------ text
    def _head(self) -> str:
        ms = self.seconds * 1e3
        t = f"{ms:.1f} ms" if ms < 10_000 else f"{self.seconds:.1f} s"
        return f"{self.status} ({self.method}, {t})"

    def __str__(self) -> str:
        text = self._head()
        if self.claim:
            text += f": {self.claim}"
        if self.status == "refuted" and self.counterexample is not None:
            text += f" -- {self.counterexample}"
        elif self.status == "unknown" and self.reason:
            text += f" -- {self.reason}"
        elif self.status == "checked" and self.bounds:
            text += f" -- within {_bounds_text(self.bounds)}"
        return text

    def explain(self) -> str:
        """Several lines: the verdict, the method and time, the assumptions, the
        counterexample or the reason, the bounds, and the obligations put to Z3.

        >>> print(Result("refuted", "exhaustive", claim="A == B",
        ...              counterexample=Counterexample(coordinate=1, natural=(1, 0), lhs=2, rhs=1)).explain())
        refuted (exhaustive, 0.0 ms): A == B
          counterexample: coordinate 1 = (1,0): 2 != 1
        """
        lines = [self._head() + (f": {self.claim}" if self.claim else "")]
        if self.assumptions:
            lines.append("  assuming: " + ", ".join(self.assumptions))
        if self.condition and self.status != "proved":
            lines.append(f"  condition: {self.condition}")
        c = self.counterexample
        if c is not None:
            lines.append(f"  counterexample: {c.with_assignment(None)}")
            if c.assignment:
                lines.append(f"  assignment: {_assign_text(c.assignment)}")
        if self.reason:
            lines.append(f"  reason: {self.reason}")
        if self.bounds:
            lines.append(
                f"  bounds: {_bounds_text(self.bounds)}"
                + (
                    f" ({self.cases} assignment{'s' if self.cases != 1 else ''} checked)"
                    if self.cases is not None
                    else ""
                )
            )
        if self.obligations:
            verdicts = ", ".join(f"{o.verdict}" for o in self.obligations)
            lines.append(f"  obligations: {len(self.obligations)} ({verdicts})")
        for n in self.notes:
            lines.append(f"  note: {n}")
        return "\n".join(lines)

    def needed(self) -> Tuple[str, ...]:
        """The condition that would settle an unknown result (or one checked only within
        bounds): the undecided side condition, when it is a formula over the parameters
        (Python syntax, as ``UndecidableConditionError.condition``); () otherwise.

        >>> Result("unknown", "z3", claim="admissible composition((M,4):(1,M+1), 128:1)",
        ...        condition="(128 <= M) or (128 % M == 0)").needed()
        ('(128 <= M) or (128 % M == 0)',)
        >>> Result("unknown", "z3", claim="A == B", reason="timeout").needed()
        ()
        """
        if self.status not in ("unknown", "checked"):
            return ()
        cands = [self.condition] if self.condition else []
        for pat in _UNDECIDED:
            m = re.match(pat, self.reason or "")
            if m:
                cands.append(m.group(1))
        for c in cands:
            if _is_formula(c):
                return () if c in self.assumptions else (c,)
        return ()

    def render(self, emit: str = "text", *, static: Iterable[str] = ()) -> str:
        """The result as text (:meth:`explain`), or the assumptions it was checked under as
        code for the user's stack (:func:`layoutproof.verify.emit.render_assumptions`):
        ``"dsl"`` (``cute.assume(x, divby=k)``, else a host-side check raising
        ``ValueError``), ``"cpp"`` (``CUTE_STATIC_ASSERT_V`` where every symbol is in
        ``static``, else a runtime check throwing ``std::invalid_argument``), ``"python"`` (a
        guard function raising ``ValueError``).  An unknown result (or one checked only
        within bounds) adds the condition that would settle it (:meth:`needed`), after a
        comment saying so; where no formula settles it the comment says why.

        >>> r = Result("proved", "z3", claim="M*N:1 == M*N:1", assumptions=["M % 64 == 0"])
        >>> print(r.render("dsl"))
        M = cute.assume(M, divby=64)
        >>> print(r.render("cpp", static=["M"]))
        CUTE_STATIC_ASSERT_V((M % Int<64>{}) == Int<0>{});
        >>> u = Result("unknown", "z3", claim="lhs == rhs", condition="(128 <= M) or (128 % M == 0)")
        >>> print(u.render("dsl"))
        # unknown: the check needs (128 <= M) or (128 % M == 0) to be decided; assumed below
        # check on the host, before the kernel is traced:
        if not ((128 <= M) or (128 % M == 0)):
            raise ValueError('check: lhs == rhs: needs (128 <= M) or (128 % M == 0)')
        """
        if emit == "text":
            return self.explain()
        from .emit import CODE_EMITS, render_assumptions

        if emit not in CODE_EMITS:
            raise MalformedLayoutError(
                f"render: emit must be one of text, {', '.join(CODE_EMITS)}, got {show(emit)}"
            )
        claim = self.claim
        what = (
            f"check: {claim}"
            if claim and len(claim) <= 100 and not set("\\'\"") & set(claim)
            else "the check"
        )
        more = self.needed()
        code = render_assumptions(tuple(self.assumptions) + more, emit, what=what, static=tuple(static))
        mark = "//" if emit == "cpp" else "#"
        if more:
            head = f"{mark} {self.status}: the check needs {' and '.join(more)} to be decided; assumed below"
            if self.status == "checked" and self.bounds:
                head = (
                    f"{mark} checked within {_bounds_text(self.bounds)} only: {' and '.join(more)} is "
                    "undecided; assumed below"
                )
            return head + "\n" + code
        if self.status == "unknown":
            why = self.reason or "no reason given"
            return (
                f"{mark} unknown: {why} -- no condition on the parameters is named that settles it\n" + code
            )
        return code

    def __repr__(self) -> str:
        extra = ""
        if self.counterexample is not None:
            extra += f", counterexample={self.counterexample!r}"
        if self.reason:
            extra += f", reason={self.reason!r}"
        if self.bounds:
            extra += f", bounds={self.bounds!r}"
        return f"Result({self.status!r}, {self.method!r}, claim={self.claim!r}{extra})"

    def as_dict(self) -> Dict[str, Any]:
        """A JSON-friendly dict (obligations as their purposes and verdicts)."""
        return {
            "status": self.status,
            "method": self.method,
            "claim": self.claim,
            "seconds": self.seconds,
            "counterexample": None
            if self.counterexample is None
            else {
                k: (fmt_htuple(v) if k in ("natural", "lhs", "rhs") and v is not None else v)
                for k, v in self.counterexample.as_dict().items()
            },
            "reason": self.reason,
            "condition": self.condition,
            "bounds": None if self.bounds is None else {k: list(v) for k, v in self.bounds.items()},
            "cases": self.cases,
            "obligations": [{"purpose": o.purpose, "verdict": o.verdict} for o in self.obligations],
            "assumptions": list(self.assumptions),
            "notes": list(self.notes),
        }


# the constructor's names of Result's fields, and the shared names they are stored under
_ALIASES = {"statement": "claim", "witness": "counterexample"}
_INIT_FIELDS = (
    "status",
    "method",
    "claim",
    "seconds",
    "counterexample",
    "reason",
    "condition",
    "bounds",
    "cases",
    "obligations",
    "assumptions",
    "notes",
)


# the reasons that carry an undecided condition (verify's engines word them so)
_UNDECIDED = (
    r"^undecided symbolically: (.*)$",
    r"^a side condition is undecided with symbolic parameters: (.*)$",
    r"^undecided: (.*) \(assume it, or its negation\)$",
)


def _is_formula(c: str) -> bool:
    """``c`` parses as a condition on symbols (not a condition's name in words)."""
    from layoutproof import symbolic
    from layoutproof.errors import LayoutError

    try:
        e = symbolic.parse_expr(c)
    except (LayoutError, SyntaxError, TypeError, ValueError):
        return False
    sp = symbolic.sympy_module()
    return isinstance(e, (sp.Rel, sp.And, sp.Or, sp.Not)) and bool(e.free_symbols)


def _bounds_text(b: Dict[str, Tuple[int, int]]) -> str:
    return ", ".join(f"{lo} <= {k} <= {hi}" for k, (lo, hi) in sorted(b.items()))
