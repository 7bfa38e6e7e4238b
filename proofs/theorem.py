"""A theorem as data, and the outcome of checking it.

A :class:`Theorem` carries its statement (mathematical text), parameters, assumptions,
references, the method it is checked by, the family or bounds it covers, the status it is
*expected* to reach, and a ``check`` function returning one
:class:`~layoutproof.verify.Result` or a list of them.

* A **positive** theorem is expected ``"proved"`` (SymPy or Z3 for every value of its
  parameters, or an exhaustive check of a concrete domain, which is complete) or
  ``"checked"`` (exhaustively, for every member of a stated bounded family; random
  testing never counts).
* A **negative** theorem states a claim that is *false*: it is expected ``"refuted"``, and
  its :class:`Expect` names the counterexample the check must find.

:func:`evaluate` runs the check and returns an :class:`TheoremOutcome` (plain data: it is pickled
between processes and written to ``report.json``) whose ``verdict`` says whether the
theorem behaved as declared.

>>> from layoutproof import Layout
>>> from layoutproof import verify
>>> t = Theorem("demo.equal", "Two spellings of 8:1", "(4,2):(1,4) = 8:1 as functions",
...             lambda: verify.equal(Layout((4, 2), (1, 4)), Layout(8, 1)))
>>> o = evaluate(t)
>>> o.status, o.verdict, o.methods
('proved', 'ok', ('exhaustive',))
>>> bad = Theorem("demo.false", "A false claim", "(4,2):(2,1) = 8:1",
...               lambda: verify.equal(Layout((4, 2), (2, 1)), Layout(8, 1)))
>>> o = evaluate(bad)
>>> o.status, o.verdict, o.counterexample
('refuted', 'FAILED', 'coordinate 1 = (1,0): 2 != 1')
>>> neg = Theorem("demo.neg", "A refuted claim", "(4,2):(2,1) = 8:1",
...               lambda: verify.equal(Layout((4, 2), (2, 1)), Layout(8, 1)),
...               expected="refuted", expect=Expect(coordinate=1, lhs=2, rhs=1))
>>> evaluate(neg).verdict
'ok'
"""

from __future__ import annotations

import time
import traceback
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from layoutproof.verify import Result

__all__ = ["Theorem", "Expect", "TheoremOutcome", "evaluate", "merge_status", "EXPECTED", "VERDICTS"]

#: the statuses a theorem may be declared to reach
EXPECTED = ("proved", "checked", "refuted")
#: ok: as declared; FAILED: contradicts its declaration; weaker: holds, but less strongly
#: than declared (checked instead of proved); unknown: undecided; error: the check raised
VERDICTS = ("ok", "FAILED", "weaker", "unknown", "error")

Check = Callable[[], Union[Result, Sequence[Result]]]


@dataclass(frozen=True, slots=True)
class Expect:
    """The counterexample a negative theorem must find.  Every field given must match the
    refuting result: ``coordinate``, ``natural``, ``lhs``, ``rhs``, ``assignment`` compare
    with the :class:`~layoutproof.verify.Counterexample`'s fields; ``instance`` and
    ``text`` must occur in its text (``instance`` names the family member, e.g.
    ``"A = (2,2):(1,3)"``); ``condition`` compares with the result's violated condition.

    >>> from layoutproof.verify import Counterexample
    >>> r = Result("refuted", "exhaustive", counterexample=Counterexample(coordinate=5, lhs=7, rhs=8))
    >>> Expect(coordinate=5).mismatch(r) is None, Expect(coordinate=4).mismatch(r)
    (True, 'coordinate: expected 4, found 5')
    """

    coordinate: Any = None
    natural: Any = None
    lhs: Any = None
    rhs: Any = None
    assignment: Optional[Dict[str, int]] = None
    instance: Optional[str] = None
    text: Optional[str] = None
    condition: Optional[str] = None

    def mismatch(self, result: Result) -> Optional[str]:
        """None when ``result`` refutes with this counterexample, else what differs."""
        c = result.counterexample
        if result.status != "refuted" or c is None:
            return f"not refuted with a counterexample (status {result.status})"
        for name in ("coordinate", "natural", "lhs", "rhs", "assignment"):
            want = getattr(self, name)
            if want is not None and getattr(c, name) != want:
                return f"{name}: expected {want!r}, found {getattr(c, name)!r}"
        text = str(c)
        for name in ("instance", "text"):
            want = getattr(self, name)
            if want is not None and want not in text:
                return f"{name}: expected {want!r} in {text!r}"
        if self.condition is not None and result.condition != self.condition:
            return f"condition: expected {self.condition!r}, found {result.condition!r}"
        return None

    def describe(self) -> str:
        """The expected counterexample in words (for the docs)."""
        parts = []
        if self.instance:
            parts.append(self.instance)
        if self.condition:
            parts.append(f"condition: {self.condition}")
        if self.coordinate is not None:
            parts.append(f"coordinate {self.coordinate}")
        if self.lhs is not None and self.rhs is not None:
            parts.append(f"values {self.lhs} != {self.rhs}")
        if self.assignment:
            parts.append(", ".join(f"{k} = {v}" for k, v in sorted(self.assignment.items())))
        if self.text:
            parts.append(f"“{self.text}”")
        return "; ".join(parts)


@dataclass(frozen=True, slots=True)
class Theorem:
    """One theorem of the catalog (see the module docstring).

    Attributes:
        id: a stable identifier (``"T1.complement-bijection"``); it names the report's
            SMT-LIB files, so it uses letters, digits, ``.``, ``-`` and ``_`` only.
        title: a one-line title.
        statement: the claim, in mathematical text.
        check: runs the check; returns a Result or a list of Results (merged).
        expected: ``"proved"``, ``"checked"`` or ``"refuted"``.
        method: how it is checked (``"z3"``, ``"sympy"``, ``"exhaustive"``, or a
            combination such as ``"sympy+exhaustive"``).
        parameters: the parameters and their ranges, in words.
        assumptions: the side conditions the statement assumes.
        references: where it comes from (papers, notes, seeds, REFERENCES T-numbers).
        family: the family or bounds an exhaustive check covers, in words.
        expect: for a negative theorem, the counterexample it must find.
        group: the section of the catalog it belongs to.
        heavy: too slow for the default run of ``layoutproof prove`` (under a minute); it runs
            with ``--all`` or when selected with ``--filter``.
    """

    id: str
    title: str
    statement: str
    check: Check = field(compare=False, repr=False)
    expected: str = "proved"
    method: str = "exhaustive"
    parameters: str = ""
    assumptions: Tuple[str, ...] = ()
    references: Tuple[str, ...] = ()
    family: str = ""
    expect: Optional[Expect] = None
    group: str = "Miscellaneous"
    heavy: bool = False

    def __post_init__(self) -> None:
        if self.expected not in EXPECTED:
            raise ValueError(f"theorem {self.id}: expected must be one of {EXPECTED}, got {self.expected!r}")
        bad = [ch for ch in self.id if not (ch.isalnum() or ch in ".-_")]
        if not self.id or bad:
            raise ValueError(f"theorem id {self.id!r}: letters, digits, '.', '-' and '_' only")
        if self.expected == "refuted" and self.expect is None:
            raise ValueError(f"theorem {self.id}: a negative theorem names its counterexample (expect=)")

    @property
    def negative(self) -> bool:
        """True for a claim expected to be refuted."""
        return self.expected == "refuted"


@dataclass(frozen=True, slots=True)
class TheoremOutcome:
    """The result of checking one theorem: plain, JSON-friendly data.

    ``status`` merges the check's results (refuted if any is refuted, else unknown if any is
    unknown, else proved if all are proved, else checked); ``verdict`` compares it with the
    declaration (:data:`VERDICTS`).  ``results`` holds every sub-result as
    ``Result.as_dict()``; ``smt2`` every Z3 obligation as ``{"purpose", "verdict", "text"}``;
    ``cross_check`` the second solver's verdicts when asked for.
    """

    id: str
    title: str
    expected: str
    status: str
    verdict: str
    methods: Tuple[str, ...]
    seconds: float
    cases: Optional[int] = None
    message: str = ""
    counterexample: Optional[str] = None
    results: List[Dict[str, Any]] = field(default_factory=list)
    smt2: List[Dict[str, str]] = field(default_factory=list)
    cross_check: Optional[List[Dict[str, Any]]] = None
    summaries: List[str] = field(default_factory=list)

    @property
    def method(self) -> str:
        return "+".join(self.methods) if self.methods else "-"

    def as_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        d["methods"] = list(self.methods)
        d["method"] = self.method
        return d


def merge_status(results: Sequence[Result]) -> str:
    """The status of a theorem checked by several results.

    >>> merge_status([Result("proved", "z3"), Result("checked", "exhaustive")])
    'checked'
    >>> merge_status([Result("proved", "z3"), Result("unknown", "z3")])
    'unknown'
    """
    st = [r.status for r in results]
    if not st:
        return "unknown"
    if "refuted" in st:
        return "refuted"
    if "unknown" in st:
        return "unknown"
    return "proved" if all(s == "proved" for s in st) else "checked"


def _results(x: Any) -> List[Result]:
    if isinstance(x, Result):
        return [x]
    if isinstance(x, (list, tuple)) and all(isinstance(r, Result) for r in x):
        return list(x)
    raise TypeError(f"a theorem's check returns a Result or a list of Results, got {type(x).__name__}")


def _verdict(th: Theorem, status: str, decisive: Optional[Result]) -> Tuple[str, str]:
    if th.negative:
        if status != "refuted" or decisive is None:
            return "FAILED", f"expected a refutation, got {status}"
        why = th.expect.mismatch(decisive) if th.expect is not None else None
        if why is not None:
            return "FAILED", f"refuted, but not by the expected counterexample ({why})"
        return "ok", "refuted by the expected counterexample"
    if status == "refuted":
        return "FAILED", "a positive theorem was refuted"
    if status == "unknown":
        return "unknown", "not decided"
    if th.expected == "proved" and status == "checked":
        return "weaker", "expected proved, only checked within bounds"
    return "ok", f"{status} as declared" if status == th.expected else f"{status} (declared {th.expected})"


def evaluate(th: Theorem) -> TheoremOutcome:
    """Run ``th.check`` and compare its outcome with the declaration.  An exception in the
    check is an ``"error"`` verdict (with the traceback's last line), never a pass."""
    t0 = time.perf_counter()
    try:
        results = _results(th.check())
    except Exception as e:  # noqa: BLE001 - a broken check is reported, not raised
        tb = traceback.format_exc(limit=4).strip().splitlines()
        return TheoremOutcome(
            th.id,
            th.title,
            th.expected,
            "unknown",
            "error",
            (),
            time.perf_counter() - t0,
            message=f"{type(e).__name__}: {e}",
            summaries=tb[-3:],
        )
    seconds = time.perf_counter() - t0
    status = merge_status(results)
    decisive = next((r for r in results if r.status == "refuted"), None)
    verdict, message = _verdict(th, status, decisive)
    unknown = next((r for r in results if r.status == "unknown"), None)
    if verdict == "unknown" and unknown is not None and unknown.reason:
        message = f"not decided: {unknown.reason}"
    methods: List[str] = []
    for r in results:
        if r.method not in methods:
            methods.append(r.method)
    counted = [r.cases for r in results if r.cases is not None]
    smt2 = []
    for r in results:
        for ob in r.obligations:
            try:
                text = ob.smt2()
            except Exception as e:  # noqa: BLE001 - an obligation that cannot be printed is noted
                text = f"; could not export: {type(e).__name__}: {e}\n"
            smt2.append({"purpose": str(ob.purpose), "verdict": str(ob.verdict), "text": text})
    return TheoremOutcome(
        th.id,
        th.title,
        th.expected,
        status,
        verdict,
        tuple(methods),
        seconds,
        cases=sum(counted) if counted else None,
        message=message,
        counterexample=None
        if decisive is None or decisive.counterexample is None
        else str(decisive.counterexample),
        results=[_jsonable(r.as_dict()) for r in results],
        smt2=smt2,
        summaries=[str(r) for r in results],
    )


def _jsonable(x: Any) -> Any:
    if isinstance(x, dict):
        return {str(k): _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if x is None or isinstance(x, (bool, int, float, str)):
        return x
    return str(x)
