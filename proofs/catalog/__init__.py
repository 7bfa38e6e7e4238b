"""The theorem catalog: every :class:`~layoutproof.proofs.Theorem`, grouped by topic.

The registry is the package itself, so ``from layoutproof.proofs.catalog import THEOREMS`` names
the list; each module of the package states one topic's theorems.

>>> from layoutproof.proofs.catalog import THEOREMS, get
>>> len(THEOREMS) >= 40
True
>>> get("neg.shah-bymode-composition").expected
'refuted'
"""

from __future__ import annotations

import re
from typing import Iterable, List, Optional

from ..theorem import Theorem
from . import (
    coalesce,
    complement,
    composition,
    composition_induction,
    induction,
    induction_inverse,
    negative,
    seeds,
    structure,
    symbolic_binary,
    tiling,
)

__all__ = ["THEOREMS", "GROUPS", "get", "select"]

#: every theorem, in catalog order
THEOREMS: List[Theorem] = [
    *coalesce.THEOREMS,
    *composition.THEOREMS,
    *complement.THEOREMS,
    *tiling.THEOREMS,
    *structure.THEOREMS,
    *seeds.THEOREMS,
    *symbolic_binary.THEOREMS,
    *composition_induction.THEOREMS,
    *induction.FOLD_THEOREMS,
    *induction_inverse.THEOREMS,
    *induction.STRUCTURE_THEOREMS,
    *negative.THEOREMS,
]

#: the groups, in catalog order
GROUPS: List[str] = list(dict.fromkeys(t.group for t in THEOREMS))

_ids = [t.id for t in THEOREMS]
if len(set(_ids)) != len(_ids):  # pragma: no cover - a catalog edit error
    dup = sorted({i for i in _ids if _ids.count(i) > 1})
    raise ValueError(f"duplicate theorem ids in the catalog: {dup}")


def get(theorem_id: str, theorems: Optional[Iterable[Theorem]] = None) -> Theorem:
    """The theorem with this id (KeyError if there is none)."""
    for t in THEOREMS if theorems is None else theorems:
        if t.id == theorem_id:
            return t
    raise KeyError(theorem_id)


def select(pattern: Optional[str], theorems: Optional[Iterable[Theorem]] = None) -> List[Theorem]:
    """The theorems whose id contains ``pattern`` (case-insensitive) or matches it as a regular
    expression; when no id does, those whose title or group does; all of them for None.
    Ids come first, so ``T6`` selects the T6 theorems, not every theorem of a group whose
    name mentions T6.

    >>> [t.id for t in select("T9.bij")]
    ['T9.bijective-inverses-coincide']
    >>> len(select("^neg\\\\.")) >= 10
    True
    """
    pool = list(THEOREMS if theorems is None else theorems)
    if not pattern:
        return pool
    low = pattern.lower()
    try:
        rx: Optional[re.Pattern] = re.compile(pattern, re.I)
    except re.error:
        rx = None

    def hit(h: str) -> bool:
        return low in h.lower() or (rx is not None and rx.search(h) is not None)

    by_id = [t for t in pool if hit(t.id)]
    if by_id:
        return by_id
    return [t for t in pool if hit(t.title) or hit(t.group)]
