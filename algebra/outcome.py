"""One vocabulary for the fate of a claim: the status, and the record every producer returns.

Three parts of the package decide claims -- the Z3 driver
(:class:`layoutproof.symbolic.solver.Verdict`), the checks of :mod:`layoutproof.verify`
(:class:`layoutproof.verify.Result`) and the GPU back end's kernel obligations -- and each
returns an :class:`Outcome`: a frozen record with the same names.

* ``status`` -- one of :data:`STATUSES`:

  - ``"proved"``: the claim holds for every value in ``scope``;
  - ``"checked"``: it holds for every value inside stated bounds (each one checked
    exhaustively), nothing is claimed outside them;
  - ``"refuted"``: ``witness`` shows it false;
  - ``"unknown"``: neither; ``reason`` says why (``"timeout"``, ...);
  - ``"vacuous"``: the assumptions contradict each other, so the claim follows from them
    and says nothing (the solver's answer; the checks report it as ``"unknown"``).

* ``statement`` -- the claim, in words (CuTe notation for layouts);
* ``method`` -- how it was decided: ``"exhaustive"``, ``"sympy"``, ``"z3"``, ``"cvc5"``,
  ``"bounded"``;
* ``scope`` -- the values the status speaks for, in words (the assumptions, the bounds);
  empty when the producer does not say;
* ``cases`` -- how many points or assignments were checked (None or 0 when not counted);
* ``seconds`` -- the time it took;
* ``witness`` -- what refutes the claim (a counterexample, a model), None otherwise;
* ``reason`` -- why, when ``"unknown"``.

A status is a plain ``str`` (:data:`Status` names the values for a type checker), so
``record.status == "proved"`` and its printed form are the words themselves;
:data:`PROVED`, :data:`CHECKED`, ... are the same strings as constants.  Producers keep
their own extra fields (a solver verdict its SMT-LIB assertions, a verify result its bounds
and notes, a kernel obligation its kind) and may keep older names as aliases
(``Result.claim`` is ``statement``, ``Verdict.model`` is ``witness``).

>>> o = Outcome(PROVED, "L(i) < 64 for i < 32", "exhaustive", cases=32)
>>> o.line()
'[proved] L(i) < 64 for i < 32 -- exhaustive, 32 cases'
>>> o.holds, o.status == "proved"
(True, True)
>>> print(Outcome(UNKNOWN, "M % 8 == 0", "z3", reason="timeout"))
[unknown] M % 8 == 0 -- z3: timeout
>>> print(Outcome(REFUTED, "A == B", "exhaustive", witness="coordinate 1: 2 != 1"))
[refuted] A == B -- exhaustive: coordinate 1: 2 != 1
>>> print(Outcome(REFUTED, "4 | M", "z3", scope="2 | M", witness={"M": 2}))
[refuted] 4 | M -- z3 (2 | M): M = 2
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Any, Dict, Final, Literal, Optional, Tuple, cast

from .errors import MalformedLayoutError, show

__all__ = [
    "Status",
    "PROVED",
    "CHECKED",
    "REFUTED",
    "UNKNOWN",
    "VACUOUS",
    "STATUSES",
    "HOLDING",
    "SHARED_FIELDS",
    "status_of",
    "Outcome",
]

#: the statuses a claim can have (a ``str``: compare and print it as the word)
Status = Literal["proved", "checked", "refuted", "unknown", "vacuous"]

PROVED: Final = "proved"
CHECKED: Final = "checked"
REFUTED: Final = "refuted"
UNKNOWN: Final = "unknown"
VACUOUS: Final = "vacuous"

#: every status, in the order of the module docstring
STATUSES: Final[Tuple[Status, ...]] = (PROVED, CHECKED, REFUTED, UNKNOWN, VACUOUS)

#: the statuses under which the claim holds in its scope (vacuously for "vacuous")
HOLDING: Final[Tuple[Status, ...]] = (PROVED, CHECKED, VACUOUS)

#: the names every record has, in the order of :class:`Outcome`'s fields
SHARED_FIELDS: Final = ("status", "statement", "method", "scope", "cases", "seconds", "witness", "reason")


def status_of(x: object, allowed: Tuple[str, ...] = STATUSES, *, who: str = "status") -> Status:
    """``x`` as a :data:`Status`, checked to be one of ``allowed``; anything else raises
    :class:`~layoutproof.errors.MalformedLayoutError` naming ``who``.

    >>> status_of("checked")
    'checked'
    >>> status_of("maybe", ("proved", "refuted"))
    Traceback (most recent call last):
    ...
    layoutproof.errors.MalformedLayoutError: status must be one of ('proved', 'refuted'), got 'maybe'
    """
    if type(x) is not str or x not in allowed:
        raise MalformedLayoutError(f"{who} must be one of {allowed}, got {show(x)}")
    return cast(Status, x)


def _witness_text(w: Any) -> str:
    """A witness in words: a model (a mapping) as ``name = value, ...``, anything else as
    its ``str``."""
    if isinstance(w, dict):
        return ", ".join(f"{k} = {v}" for k, v in sorted(w.items())) or "{}"
    return str(w)


@dataclass(frozen=True, eq=False)
class Outcome:
    """The record of one decided (or undecided) claim: see the module docstring.

    Subclasses add their own fields (keyword or positional after ``method``) and may render
    a different tag in :meth:`line` by overriding :attr:`tag`.  Equality is identity here;
    a subclass may ask for field equality (``eq=True``).
    """

    status: Status
    statement: str = ""
    method: str = ""
    _: KW_ONLY
    scope: str = ""
    cases: Optional[int] = None
    seconds: float = 0.0
    witness: Any = None
    reason: Optional[str] = None

    @property
    def holds(self) -> bool:
        """Whether the claim holds in its scope: proved, checked or vacuous."""
        return self.status in HOLDING

    @property
    def tag(self) -> str:
        """The word in brackets that starts :meth:`line`: the status."""
        return self.status

    def line(self) -> str:
        """One line: ``[tag] statement -- method, N cases``, then `` (scope)`` when there is
        one, and ``: witness`` (refuted) or ``: reason`` (unknown)."""
        n = f", {self.cases} cases" if self.cases else ""
        text = f"[{self.tag}] {self.statement} -- {self.method}{n}"
        if self.scope:
            text += f" ({self.scope})"
        if self.status == REFUTED and self.witness is not None:
            text += f": {_witness_text(self.witness)}"
        elif self.status == UNKNOWN and self.reason:
            text += f": {self.reason}"
        return text

    def __str__(self) -> str:
        return self.line()

    def outcome_dict(self) -> Dict[str, Any]:
        """The shared fields (:data:`SHARED_FIELDS`) as a dict, whatever the producer."""
        return {k: getattr(self, k) for k in SHARED_FIELDS}
