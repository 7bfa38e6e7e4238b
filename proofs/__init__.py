"""layoutproof.proofs: the theorem catalog of the CuTe layout algebra and ``layoutproof prove``.

A :class:`Theorem` is data -- statement, parameters, assumptions, references, method, the
family or bounds it covers, the status it is expected to reach -- plus a check returning
:class:`~layoutproof.verify.Result` s.  Positive theorems are expected *proved* (SymPy/Z3
for every parameter value, or a complete exhaustive check of a concrete domain) or
*checked* (exhaustively over every member of a stated bounded family); negative theorems
are false claims expected to be *refuted* by a named counterexample.

>>> from layoutproof.proofs import THEOREMS, evaluate, get
>>> o = evaluate(get("neg.compatibility-symmetric"))
>>> o.status, o.verdict
('refuted', 'ok')

``layoutproof prove`` (:mod:`layoutproof.proofs.cli`) runs the catalog and writes the
report; :mod:`layoutproof.proofs.docs` generates docs/theorems.md from it.
"""

from .catalog import GROUPS, THEOREMS, get, select
from .runner import run
from .theorem import Expect, Theorem, TheoremOutcome, evaluate

__all__ = ["Theorem", "Expect", "TheoremOutcome", "evaluate", "THEOREMS", "GROUPS", "get", "select", "run"]
