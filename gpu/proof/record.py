"""The record of one proven kernel obligation, and the log a kernel's header is made from.

Every obligation the GPU back end discharges before it emits source (an index expression
equal to its layout, an offset inside its allocation, a thread-value map bijective onto
its tile, a shared-memory access free of bank conflicts, an atom equal to the PTX table)
is recorded as a :class:`Proof`.  A :class:`ProofLog` collects them; ``header()`` renders
the comment that starts every emitted ``.cu`` file.

>>> log = ProofLog()
>>> _ = log.add("equal", "smem_a(row, col) == Sw<2,3,3> o (128,32):(32,1)", "exhaustive", 4096)
>>> print(log.header().splitlines()[1])
//   [equal] smem_a(row, col) == Sw<2,3,3> o (128,32):(32,1) -- exhaustive, 4096 cases
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List

__all__ = ["Proof", "ProofLog"]

KINDS = ("equal", "bounds", "bijective", "banks", "atom", "fragment", "config", "protocol")


@dataclass(frozen=True)
class Proof:
    """One discharged obligation.

    Attributes:
        kind: one of ``equal``, ``bounds``, ``bijective``, ``banks``, ``atom``,
            ``fragment``, ``config``, ``protocol`` (a synchronization protocol
            model-checked over all interleavings).
        statement: what holds, in one line (CuTe notation for layouts).
        method: ``exhaustive`` (every point of a finite domain), ``sympy`` or ``z3``
            (for all values of runtime symbols).
        cases: points checked (0 for a symbolic proof).
    """

    kind: str
    statement: str
    method: str
    cases: int = 0

    def line(self) -> str:
        n = f", {self.cases} cases" if self.cases else ""
        return f"[{self.kind}] {self.statement} -- {self.method}{n}"


@dataclass
class ProofLog:
    """An ordered collection of :class:`Proof` records (one kernel's obligations)."""

    proofs: List[Proof] = field(default_factory=list)

    def add(self, kind: str, statement: str, method: str, cases: int = 0) -> Proof:
        if kind not in KINDS:
            raise ValueError(f"unknown proof kind {kind!r}; one of {KINDS}")
        p = Proof(kind, statement, method, int(cases))
        self.proofs.append(p)
        return p

    def extend(self, other: "ProofLog") -> None:
        self.proofs.extend(other.proofs)

    def __len__(self) -> int:
        return len(self.proofs)

    def __iter__(self):
        return iter(self.proofs)

    @property
    def cases(self) -> int:
        return sum(p.cases for p in self.proofs)

    def header(self, title: str = "proven before emission") -> str:
        """The C comment block listing every obligation (one per line)."""
        lines = [f"// layoutproof: {len(self.proofs)} obligations {title}:"]
        lines += [f"//   {p.line()}" for p in self.proofs]
        return "\n".join(lines) + "\n"
