"""Exhaustive families of layouts: every layout up to a bound, for theorems checked by
enumeration ("checked" status: true for every member of the family).

A family is described by its bounds, and :func:`describe` states them in words, so a
result says exactly what was covered.

>>> sum(1 for _ in layouts(rank=2, extent=2, stride=1))
20
>>> str(next(iter(layouts(rank=1, extent=3, stride=2))))
'1:0'
>>> len(list(injective_layouts(rank=2, extent=3, stride=4)))
158
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable, Iterator, Optional, Tuple

from layoutproof import Layout, LayoutError

__all__ = [
    "Bounds",
    "shapes",
    "layouts",
    "nested_layouts",
    "injective_layouts",
    "compact_layouts",
    "bijective_layouts",
    "admissible_pairs",
    "describe",
    "is_injective",
    "is_bijective_onto_range",
]


@dataclass(frozen=True)
class Bounds:
    """The bounds of a family: flat rank <= ``rank``, extents 1..``extent``, strides
    ``-stride..stride`` when ``negative`` else ``0..stride``."""

    rank: int = 3
    extent: int = 4
    stride: int = 8
    negative: bool = False

    def words(self) -> str:
        lo = -self.stride if self.negative else 0
        return (f"every flat layout of rank 1..{self.rank}, extents 1..{self.extent}, "
                f"strides {lo}..{self.stride}")


def describe(rank: int, extent: int, stride: int, negative: bool = False) -> str:
    return Bounds(rank, extent, stride, negative).words()


def _check(rank: int, extent: int, stride: int) -> None:
    for name, v in (("rank", rank), ("extent", extent), ("stride", stride)):
        if type(v) is not int or v < (0 if name == "stride" else 1):
            kind = "non-negative" if name == "stride" else "positive"
            raise LayoutError(f"family bound {name} must be a {kind} integer, got {v!r}")


def shapes(rank: int = 3, extent: int = 4) -> Iterator[tuple]:
    """Every flat shape of rank 1..``rank`` with extents 1..``extent`` (rank 1 as a
    1-tuple)."""
    _check(rank, extent, 0)
    for r in range(1, rank + 1):
        yield from itertools.product(range(1, extent + 1), repeat=r)


def layouts(rank: int = 3, extent: int = 4, stride: int = 8, negative: bool = False) -> Iterator[Layout]:
    """Every flat layout within the bounds; rank-1 layouts are integer layouts ``s:d``."""
    _check(rank, extent, stride)
    svals = list(range(-stride, stride + 1)) if negative else list(range(0, stride + 1))
    make = Layout._make
    for s in shapes(rank, extent):
        for d in itertools.product(svals, repeat=len(s)):
            yield make(s[0], d[0]) if len(s) == 1 else make(s, d)


def nested_layouts(rank: int = 3, extent: int = 4, stride: int = 8) -> Iterator[Layout]:
    """The rank-``rank`` flat layouts regrouped as two top-level modes ``((s0..sk),(..))``
    at every split point: hierarchy for theorems about profiles."""
    make = Layout._make
    for L in layouts(rank, extent, stride):
        s, d = L._flat()
        for k in range(1, len(s)):
            yield make((s[:k], s[k:]), (d[:k], d[k:]))


def is_injective(L: Layout) -> bool:
    import numpy as np

    v = L.eval_all()
    return len(np.unique(v)) == len(v)


def is_bijective_onto_range(L: Layout) -> bool:
    """The image is exactly ``[0, size)``."""
    import numpy as np

    v = L.eval_all()
    return bool(np.array_equal(np.sort(v), np.arange(len(v))))


def injective_layouts(rank: int = 3, extent: int = 4, stride: int = 8) -> Iterator[Layout]:
    return (L for L in layouts(rank, extent, stride) if is_injective(L))


def bijective_layouts(rank: int = 3, extent: int = 4, stride: int = 8) -> Iterator[Layout]:
    """Layouts whose image is exactly ``[0, size)`` (compact, any order)."""
    return (L for L in layouts(rank, extent, stride) if is_bijective_onto_range(L))


def compact_layouts(rank: int = 3, extent: int = 4) -> Iterator[Layout]:
    """Compact layouts: every permutation of the column-major strides of every shape."""
    make = Layout._make
    for s in shapes(rank, extent):
        for perm in itertools.permutations(range(len(s))):
            d = [0] * len(s)
            cur = 1
            for i in perm:
                d[i] = cur
                cur *= s[i]
            yield make(s[0], d[0]) if len(s) == 1 else make(s, tuple(d))


def admissible_pairs(op: Callable[..., object], firsts: Iterator[object],
                     seconds: Callable[[], Iterator[object]],
                     limit: Optional[int] = None) -> Iterator[Tuple[object, object, object]]:
    """``(a, b, op(a, b))`` for every pair where ``op`` is admissible (raises no
    LayoutError); ``seconds`` is called once per first element (a fresh iterator)."""
    n = 0
    for a in firsts:
        for b in seconds():
            try:
                r = op(a, b)
            except LayoutError:
                continue
            yield a, b, r
            n += 1
            if limit is not None and n >= limit:
                return
