"""Families and memoized operations shared by several theorems of the catalog.

The operations are memoized per process (``functools.lru_cache``): theorems that walk the
same family of pairs pay for each composition or complement once.  A memoized call returns
the result, or the :class:`~layoutproof.LayoutError` raised, as a value.
"""

from __future__ import annotations

import functools
from typing import Any, List, Sequence, Tuple

from layoutproof import Layout, LayoutError, complement, composition
from layoutproof.inttuple import raw_flatten
from layoutproof.verify import families
from layoutproof.verify.families import layouts

__all__ = [
    "compose",
    "complement_of",
    "family",
    "family_words",
    "ext_offsets",
    "bounds_of",
    "first_diff",
    "memo",
    "clear_caches",
]


@functools.lru_cache(maxsize=1 << 18)
def compose(A: Layout, B: Any) -> Any:
    """``composition(A, B)`` or the LayoutError it raises (memoized)."""
    try:
        return composition(A, B)
    except LayoutError as e:
        return e.with_traceback(None)


@functools.lru_cache(maxsize=1 << 18)
def complement_of(L: Layout, M: Any) -> Any:
    """``complement(L, M)`` or the LayoutError it raises (memoized)."""
    try:
        return complement(L, M)
    except LayoutError as e:
        return e.with_traceback(None)


@functools.cache
def family(
    rank: int, extent: int, stride: int, negative: bool = False, min_extent: int = 1, min_stride: int = 0
) -> Tuple[Layout, ...]:
    """The members of ``layouts(rank, extent, stride, negative)`` with every extent >=
    ``min_extent`` and every |stride| >= ``min_stride`` (memoized tuple)."""
    out: List[Layout] = []
    for L in layouts(rank, extent, stride, negative):
        s, d = raw_flatten(L.shape), raw_flatten(L.stride)
        ss, dd = (s, d) if type(s) is tuple else ((s,), (d,))
        if all(x >= min_extent for x in ss) and all(abs(y) >= min_stride for y in dd):
            out.append(L)
    return tuple(out)


def family_words(
    rank: int, extent: int, stride: int, negative: bool = False, min_extent: int = 1, min_stride: int = 0
) -> str:
    lo = -stride if negative else min_stride
    what = f"every flat layout of rank 1..{rank}, extents {min_extent}..{extent}, strides {lo}..{stride}"
    if negative and min_stride:
        what += f" with |stride| >= {min_stride}"
    return what


def bounds_of(
    rank: int,
    extent: int,
    stride: int,
    negative: bool = False,
    min_extent: int = 1,
    min_stride: int = 0,
    prefix: str = "",
) -> dict:
    return {
        f"{prefix}rank": (1, rank),
        f"{prefix}extent": (min_extent, extent),
        f"{prefix}stride": (-stride if negative else min_stride, stride),
    }


def ext_offsets(A: Layout, xs: Sequence[int]) -> List[int]:
    """``Â(x)`` for each ``x`` (``A`` with its own last flat mode unbounded), in Python."""
    s, d = raw_flatten(A.shape), raw_flatten(A.stride)
    last = len(s) - 1
    out = []
    for x in xs:
        v = 0
        for k in range(last):
            v += (x % s[k]) * d[k]
            x //= s[k]
        out.append(v + x * d[last])
    return out


def first_diff(a: Sequence[int], b: Sequence[int]) -> int:
    """The first index where two equal-length sequences differ (-1: none)."""
    for k in range(len(a)):
        if a[k] != b[k]:
            return k
    return -1


_MEMO: dict = {}


def memo(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` or the LayoutError it raises, memoized on ``(fn, args)`` (layouts and
    tuples of ints are hashable).  The memo is bounded (cleared past 2^18 entries)."""
    key = (fn, args)
    hit = _MEMO.get(key, _MISS)
    if hit is not _MISS:
        return hit
    try:
        out = fn(*args)
    except LayoutError as e:
        out = e.with_traceback(None)
    if len(_MEMO) >= 1 << 18:
        _MEMO.clear()
    _MEMO[key] = out
    return out


_MISS = object()


def clear_caches() -> None:
    """Drop the memoized results (the runner calls it between theorems)."""
    compose.cache_clear()
    complement_of.cache_clear()
    _MEMO.clear()

    families._VALUES.clear()
