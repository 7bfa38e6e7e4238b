"""layoutproof.verify: functional equality, side conditions, post-conditions and identities,
proved by exhaustive evaluation (concrete layouts), SymPy and Z3 (symbolic layouts), with
SMT-LIB2 export and a cvc5 cross-check.

Every check returns a :class:`Result`: ``"proved"``, ``"checked"`` (within stated bounds of
the parameters), ``"refuted"`` (with a counterexample) or ``"unknown"`` (with the reason).

>>> from layoutproof import Layout, composition
>>> from layoutproof import verify
>>> verify.equal(Layout((4, 2), (1, 4)), Layout(8, 1)).status
'proved'
>>> A, B = Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))
>>> r = verify.postcondition("composition", Layout((3, 2), (2, 3)), A, B)
>>> r.status, r.counterexample.coordinate
('refuted', 5)

SymPy and Z3 are imported when a symbolic check needs them; numpy when a concrete one does.
"""

from .equal import compatible, equal, function
from .identity import admissible, identity
from .post import OPERATIONS, postcondition
from .result import Counterexample, ProofObligation, Result
from .smtlib import cross_check, to_smtlib

__all__ = [
    "Result",
    "Counterexample",
    "ProofObligation",
    "equal",
    "compatible",
    "function",
    "admissible",
    "identity",
    "postcondition",
    "OPERATIONS",
    "to_smtlib",
    "cross_check",
]
