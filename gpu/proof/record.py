"""The record of one proven kernel obligation, and the log a kernel's header is made from.

Every obligation the GPU back end discharges before it emits source (an index expression
equal to its layout, an offset inside its allocation, a thread-value map bijective onto
its tile, a shared-memory access free of bank conflicts, an atom equal to the PTX table)
is recorded as a :class:`Proof`: a :class:`layoutproof.outcome.Outcome` (the record shape
the solver's verdicts and verify's results share) with status ``"proved"`` and the
obligation's ``kind``, which tags its line.  A :class:`ProofLog` collects them;
``header()`` renders the comment that starts every emitted ``.cu`` file.

>>> log = ProofLog()
>>> p = log.add("equal", "smem_a(row, col) == Sw<2,3,3> o (128,32):(32,1)", "exhaustive", 4096)
>>> print(log.header().splitlines()[1])
//   [equal] smem_a(row, col) == Sw<2,3,3> o (128,32):(32,1) -- exhaustive, 4096 cases
>>> p.status, p.holds
('proved', True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterator, List, Optional

from layoutproof.outcome import PROVED, Outcome

__all__ = ["Proof", "ProofLog"]

KINDS = ("equal", "bounds", "bijective", "banks", "atom", "fragment", "config", "protocol")


@dataclass(frozen=True, init=False)
class Proof(Outcome):
    """One discharged obligation: an :class:`~layoutproof.outcome.Outcome` that is always
    ``"proved"`` (generation fails instead of recording anything else), tagged by its kind.

    Built as ``Proof(kind, statement, method, cases)``; the other shared fields (``scope``,
    ``seconds``, ...) may be given by keyword, so a record read back from ``__dict__`` (the
    kernel cache) is rebuilt as it was.

    Attributes:
        kind: one of ``equal``, ``bounds``, ``bijective``, ``banks``, ``atom``,
            ``fragment``, ``config``, ``protocol`` (a synchronization protocol
            model-checked over all interleavings).
        statement: what holds, in one line (CuTe notation for layouts).
        method: ``exhaustive`` (every point of a finite domain), ``sympy`` or ``z3``
            (for all values of runtime symbols).
        cases: points checked (0 for a symbolic proof).
    """

    kind: str = ""

    def __init__(
        self, kind: str, statement: str, method: str, cases: Optional[int] = 0, **shared: Any
    ) -> None:
        status = shared.pop("status", PROVED)
        Outcome.__init__(self, status, statement, method, cases=int(cases or 0), **shared)
        object.__setattr__(self, "kind", kind)

    @property
    def tag(self) -> str:
        """The word in brackets that starts :meth:`line`: the obligation's kind."""
        return self.kind


@dataclass
class ProofLog:
    """An ordered collection of :class:`Proof` records (one kernel's obligations)."""

    proofs: List[Proof] = field(default_factory=list)

    def add(self, kind: str, statement: str, method: str, cases: Optional[int] = 0) -> Proof:
        if kind not in KINDS:
            raise ValueError(f"unknown proof kind {kind!r}; one of {KINDS}")
        p = Proof(kind, statement, method, cases)
        self.proofs.append(p)
        return p

    def extend(self, other: "ProofLog") -> None:
        self.proofs.extend(other.proofs)

    def __len__(self) -> int:
        return len(self.proofs)

    def __iter__(self) -> Iterator[Proof]:
        return iter(self.proofs)

    @property
    def cases(self) -> int:
        return sum(p.cases or 0 for p in self.proofs)

    def header(self, title: str = "proven before emission") -> str:
        """The C comment block listing every obligation (one per line)."""
        lines = [f"// layoutproof: {len(self.proofs)} obligations {title}:"]
        lines += [f"//   {p.line()}" for p in self.proofs]
        return "\n".join(lines) + "\n"
