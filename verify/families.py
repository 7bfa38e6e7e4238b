"""Exhaustive families of layouts: every layout up to a bound, for theorems checked by
enumeration ("checked" status: true for every member of the family).

A family is described by its bounds, and :func:`describe` states them in words, so a
result says exactly what was covered.  :func:`for_all` is the one runner over a family:
the theorem decorator's exhaustive mode (:mod:`layoutproof.verify.theorem`) and the
proof catalog's checks run through it.

Random layouts, for hypothesis, are :mod:`layoutproof.verify.strategies`' business; the
families here enumerate.

>>> sum(1 for _ in layouts(rank=2, extent=2, stride=1))
20
>>> str(next(iter(layouts(rank=1, extent=3, stride=2))))
'1:0'
>>> len(list(injective_layouts(rank=2, extent=3, stride=4)))
158
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from layoutproof import Layout, LayoutError, Swizzle, make_layout
from layoutproof.inttuple import raw_flatten
from layoutproof.layout import fmt_htuple, make_ordered_layout

from .result import Counterexample, Result

__all__ = [
    "for_all",
    "SKIP",
    "label",
    "Bounds",
    "nested_shapes",
    "swizzles",
    "gemm_tilings",
    "values",
    "offsets",
    "extended_values",
    "stride_chain",
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


class _Skip:
    def __repr__(self) -> str:
        return "SKIP"


#: returned by a :func:`for_all` check for a member outside the statement's hypothesis
SKIP: Any = _Skip()


def label(member: Any, names: Optional[Sequence[str]] = None) -> str:
    """A family member in words: ``"L = 4:2, M = 16"`` with ``names``.

    >>> label((Layout(4, 2), 16), ("L", "M")), label(Layout((2, 2), (1, 3)))
    ('L = 4:2, M = 16', '(2,2):(1,3)')
    """
    if names:
        items = member if type(member) is tuple and len(names) > 1 else (member,)
        return ", ".join(f"{n} = {fmt_htuple(v)}" for n, v in zip(names, items))
    return fmt_htuple(member)


def for_all(
    claim: str,
    members: Iterable[Any],
    check: Callable[[Any], Any],
    *,
    family: str,
    bounds: Dict[str, Tuple[int, int]],
    names: Optional[Sequence[str]] = None,
    min_cases: int = 1,
) -> Result:
    """Check ``check(member)`` for every member of a family, in order: it returns None
    (holds), a string or a :class:`~layoutproof.verify.Counterexample` (fails), or
    :data:`SKIP` (the member is outside the statement's hypothesis: not counted).

    ``"checked"`` with ``cases`` (the members counted) and ``bounds``, or ``"refuted"``
    at the first failing member (named with :func:`label`).  Fewer than ``min_cases``
    counted members is ``"unknown"``: an empty family proves nothing.

    >>> r = for_all("L(0) == 0", [Layout(2, 1), Layout(3, 5)], lambda L: None if L(0) == 0 else "no",
    ...             family="two layouts", bounds={"members": (1, 2)})
    >>> r.status, r.cases
    ('checked', 2)
    >>> r = for_all("L(1) == 1", [Layout(2, 1), Layout(3, 5)], lambda L: None if L(1) == 1 else "L(1) != 1",
    ...             family="two layouts", bounds={"members": (1, 2)}, names=("L",))
    >>> r.status, r.cases, str(r.counterexample)
    ('refuted', 2, 'L = 3:5: L(1) != 1')
    """
    t0 = time.perf_counter()
    n = skipped = 0
    for m in members:
        out = check(m)
        if out is SKIP:
            skipped += 1
            continue
        n += 1
        if out is None:
            continue
        where = label(m, names)
        if isinstance(out, Counterexample):
            cex = Counterexample(
                coordinate=out.coordinate,
                natural=out.natural,
                lhs=out.lhs,
                rhs=out.rhs,
                assignment=out.assignment,
                detail=f"{where}: {out.detail}" if out.detail else where,
            )
        else:
            cex = Counterexample(detail=f"{where}: {out}")
        return Result(
            "refuted",
            "exhaustive",
            claim=claim,
            counterexample=cex,
            cases=n,
            bounds=bounds,
            notes=(family,),
            seconds=time.perf_counter() - t0,
        )
    notes = [family]
    if skipped:
        notes.append(f"{skipped} member(s) outside the hypothesis were skipped")
    if n < min_cases:
        return Result(
            "unknown",
            "exhaustive",
            claim=claim,
            reason=f"only {n} case(s) in the family",
            cases=n,
            bounds=bounds,
            notes=notes,
            seconds=time.perf_counter() - t0,
        )
    return Result(
        "checked",
        "exhaustive",
        claim=claim,
        cases=n,
        bounds=bounds,
        notes=notes,
        seconds=time.perf_counter() - t0,
    )


@dataclass(frozen=True, slots=True)
class Bounds:
    """The bounds of a family: flat rank <= ``rank``, extents 1..``extent``, strides
    ``-stride..stride`` when ``negative`` else ``0..stride``."""

    rank: int = 3
    extent: int = 4
    stride: int = 8
    negative: bool = False

    def words(self) -> str:
        lo = -self.stride if self.negative else 0
        return (
            f"every flat layout of rank 1..{self.rank}, extents 1..{self.extent}, strides {lo}..{self.stride}"
        )


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
    for s in shapes(rank, extent):
        for d in itertools.product(svals, repeat=len(s)):
            # valid by construction (positive extents, int strides): no checks to repeat
            yield Layout.trusted(s[0], d[0]) if len(s) == 1 else Layout.trusted(s, d)


def nested_layouts(rank: int = 3, extent: int = 4, stride: int = 8) -> Iterator[Layout]:
    """The rank-``rank`` flat layouts regrouped as two top-level modes ``((s0..sk),(..))``
    at every split point: hierarchy for theorems about profiles."""
    for L in layouts(rank, extent, stride):
        modes = list(L)
        for k in range(1, len(modes)):
            yield make_layout(make_layout(*modes[:k]), make_layout(*modes[k:]))


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
    for s in shapes(rank, extent):
        if len(s) == 1:
            yield Layout(s[0], 1)
            continue
        for perm in itertools.permutations(range(len(s))):
            rank_of = [0] * len(s)  # the leaf perm[k] takes the k-th stride
            for k, i in enumerate(perm):
                rank_of[i] = k
            yield make_ordered_layout(s, tuple(rank_of))


def admissible_pairs(
    op: Callable[..., Any],
    firsts: Iterable[Any],
    seconds: Callable[[], Iterable[Any]],
    limit: Optional[int] = None,
) -> Iterator[Tuple[Any, Any, Any]]:
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


# ----------------------------------------------------------------------------- more families
def nested_shapes(
    rank: int = 2, extent: int = 3, depth: int = 2, max_size: Optional[int] = None, unit_tuples: bool = True
) -> Iterator[Any]:
    """Every hierarchical shape (HTuple) of depth <= ``depth``: an integer leaf
    ``1..extent``, or a tuple of 1..``rank`` such shapes of depth <= ``depth - 1``; only
    those of size <= ``max_size`` when it is given.  ``unit_tuples=False`` leaves out
    rank-1 tuples such as ``(4,)``.  Integers first, then tuples by rank, in a fixed order.

    >>> [s for s in nested_shapes(rank=2, extent=2, depth=1)]
    [1, 2, (1,), (2,), (1, 1), (1, 2), (2, 1), (2, 2)]
    >>> sum(1 for _ in nested_shapes(rank=2, extent=2, depth=2))
    74
    """
    _check(rank, extent, 0)
    if type(depth) is not int or depth < 0:
        raise LayoutError(f"family bound depth must be a non-negative integer, got {depth!r}")
    cap = max_size if max_size is not None else None

    def size(s: Any) -> int:
        if type(s) is int:
            return s
        p = 1
        for e in s:
            p *= size(e)
        return p

    def gen(d: int) -> List[Any]:
        out: List[Any] = [e for e in range(1, extent + 1) if cap is None or e <= cap]
        if d == 0:
            return out
        inner = gen(d - 1)
        for r in range(1 if unit_tuples else 2, rank + 1):
            for combo in itertools.product(inner, repeat=r):
                if cap is None or size(combo) <= cap:
                    out.append(combo)
        return out

    seen = set()
    for s in gen(depth):
        if s not in seen:
            seen.add(s)
            yield s


def swizzles(max_bits: int = 6, negative: bool = True) -> Iterator[Any]:
    """Every valid ``Swizzle(B, M, S)`` (``B >= 0``, ``M >= 0``, ``|S| >= B``; ``S < 0``
    only when ``negative``) touching at most ``max_bits`` bits (``M + B + |S| <= max_bits``).

    >>> len(list(swizzles(max_bits=3)))
    22
    """
    for top in range(0, max_bits + 1):
        for b in range(0, top + 1):
            for m in range(0, top - b + 1):
                s_abs = top - b - m
                if s_abs < b:
                    continue
                for s in (s_abs, -s_abs) if negative and s_abs > 0 else (s_abs,):
                    yield Swizzle(b, m, s)


def gemm_tilings(max_mn: int = 16, dividing: bool = True) -> Iterator[Tuple[int, int, int, int]]:
    """``(M, N, BM, BN)``: every matrix extent ``1 <= M, N <= max_mn`` with every tile
    ``1 <= BM <= M``, ``1 <= BN <= N`` (only tiles dividing the matrix when ``dividing``).

    >>> len(list(gemm_tilings(max_mn=4)))
    64
    """
    for M in range(1, max_mn + 1):
        for N in range(1, max_mn + 1):
            for BM in range(1, M + 1):
                if dividing and M % BM:
                    continue
                for BN in range(1, N + 1):
                    if dividing and N % BN:
                        continue
                    yield M, N, BM, BN


# ----------------------------------------------------------------------------- fast evaluation
_VALUES: Dict[Any, Any] = {}
_VALUES_MAX = 1 << 16


def values(L: Any) -> Any:
    """``L.eval_all()``, cached (read-only numpy array): families revisit the same layouts
    many times.  The cache is bounded (cleared when it reaches 65,536 layouts).

    >>> values(Layout((2, 2), (1, 3))).tolist()
    [0, 1, 3, 4]
    """
    v = _VALUES.get(L)
    if v is None:
        if len(_VALUES) >= _VALUES_MAX:
            _VALUES.clear()
        v = L.eval_all()
        v.setflags(write=False)
        _VALUES[L] = v
    return v


def offsets(L: Layout) -> List[int]:
    """Every offset of ``L`` as a Python list, in colexicographic order: the same as
    ``L.eval_all().tolist()``, computed without numpy for small layouts (a few microseconds
    for the members of a family, where numpy's per-call overhead dominates).

    >>> offsets(Layout((2, 2), (1, 3))), offsets(Layout(3, -2))
    ([0, 1, 3, 4], [0, -2, -4])
    """
    fs, fd = raw_flatten(L.shape), raw_flatten(L.stride)
    n = 1
    for x in fs:
        n *= x
    if n > 4096:
        return L.eval_all().tolist()
    out = [0]
    for s, d in zip(fs, fd):
        if s != 1:
            out = [x + k * d for k in range(s) for x in out] if d else out * s
    return out


def extended_values(A: Layout, x: Any) -> Any:
    """``Â(x)`` for a numpy array ``x`` of non-negative integers: ``A`` with its own last
    (flat) mode unbounded, the function CuTe's composition reads past ``size(A)``.

    >>> import numpy as np
    >>> extended_values(Layout((4, 2), (1, 8)), np.array([3, 4, 12])).tolist()
    [3, 8, 24]
    """
    import numpy as np

    fs, fd = raw_flatten(A.shape), raw_flatten(A.stride)
    y = np.asarray(x, dtype=np.int64)
    off = np.zeros(y.shape, dtype=np.int64)
    last = len(fs) - 1
    for k in range(last):
        off += (y % fs[k]) * fd[k]
        y = y // fs[k]
    return off + y * fd[last]


def stride_chain(L: Layout) -> Optional[int]:
    """T1's complement admissibility, on ``L``'s modes that matter (extent > 1, stride
    != 0), sorted by stride: ``s(i-1)*d(i-1)`` divides ``d(i)``.  Returns ``None`` when it
    holds, else the index (in the sorted order) of the first mode that breaks it.  Negative
    strides break it at once (index 0 of the offending mode).

    >>> stride_chain(Layout((2, 4), (1, 2))) is None, stride_chain(Layout((2, 2), (1, 3)))
    (True, 1)
    """
    fs, fd = raw_flatten(L.shape), raw_flatten(L.stride)
    modes = sorted((d, s) for s, d in zip(fs, fd) if s != 1 and d != 0)
    prev = 1
    for k, (d, s) in enumerate(modes):
        if d < 0 or d % prev:
            return k
        prev = s * d
    return None
