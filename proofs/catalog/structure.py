"""Compatibility of shapes (T11) and swizzles (T12)."""

from __future__ import annotations

import collections
import itertools
from typing import Any, Dict, Iterator, List, Tuple

from layoutproof import Layout, Swizzle, compatible, composition, tile_to_shape
from layoutproof.inttuple import product
from layoutproof.verify import Result
from layoutproof.verify.families import compact_layouts, nested_shapes, swizzles

from ..kit import SKIP, BVObligation, fact, for_all
from ..theorem import Theorem

GROUP_S = "Compatibility of shapes (T11)"
GROUP_W = "Swizzles (T12)"
SEED0 = "seed 000 (layout compatibility: a weak partial order)"
TALK = "seed 004 (Cecka's GTC talk: the compatibility poset)"
WP = "Cecka, arXiv 2603.02298"

SH: Dict[str, Any] = dict(rank=2, extent=4, depth=2, max_size=16)
SH_WORDS = (
    f"every hierarchical shape of depth <= {SH['depth']}, rank <= {SH['rank']} at every level, integer "
    f"leaves 1..{SH['extent']} and size <= {SH['max_size']}"
)
SH_BOUNDS = {
    "rank": (1, SH["rank"]),
    "extent": (1, SH["extent"]),
    "depth": (0, SH["depth"]),
    "size": (1, SH["max_size"]),
}


def _shapes() -> List[Any]:
    return list(nested_shapes(**SH))


def _by_size(shp: List[Any]) -> Dict[int, List[Any]]:
    out: Dict[int, List[Any]] = collections.defaultdict(list)
    for s in shp:
        out[product(s)].append(s)
    return out


def _fmt(s: Any) -> str:
    return "(" + ",".join(_fmt(e) for e in s) + ")" if type(s) is tuple else str(s)


# ----------------------------------------------------------------------------- T11
def _coords(S: Any) -> Iterator[Any]:
    """Every natural coordinate of shape S (hierarchical, as the shape)."""
    if type(S) is int:
        yield from range(S)
        return
    yield from itertools.product(*(list(_coords(e)) for e in S))


def _valid(c: Any, T: Any) -> bool:
    """Is c a coordinate of shape T (an integer coordinate fits any mode of its size)?"""
    if type(c) is int:
        return 0 <= c < product(T)
    return type(T) is tuple and len(T) == len(c) and all(_valid(x, t) for x, t in zip(c, T))


def check_definition() -> Result:
    shp = _shapes()
    groups = _by_size(shp)
    coords = {s: list(_coords(s)) for s in shp}

    def pairs() -> Iterator[Tuple[Any, Any]]:
        for g in groups.values():
            yield from itertools.product(g, g)

    def case(m: Tuple[Any, Any]) -> Any:
        S, T = m
        want = all(_valid(c, T) for c in coords[S])
        if compatible(S, T) != want:
            return f"compatible = {not want}, but every coordinate of S is a coordinate of T: {want}"
        return None

    return for_all(
        "compatible(S, T) iff size(S) = size(T) and every coordinate of S is a coordinate of T",
        pairs(),
        case,
        family=SH_WORDS + "; every pair of equal size",
        bounds=SH_BOUNDS,
        names=("S", "T"),
    )


def check_partial_order() -> List[Result]:
    shp = _shapes()
    groups = _by_size(shp)
    up: Dict[Any, List[Any]] = {}
    down: Dict[Any, List[Any]] = collections.defaultdict(list)
    for g in groups.values():
        for a in g:
            up[a] = [b for b in g if compatible(a, b)]
            for b in up[a]:
                down[b].append(a)

    def refl(S: Any) -> Any:
        return None if S in up[S] else "S is not compatible with itself"

    def anti(m: Tuple[Any, Any]) -> Any:
        S, T = m
        if S != T and S in up[T]:
            return "S ≤ T and T ≤ S but S != T"
        return None

    def trans(m: Tuple[Any, Any, Any]) -> Any:
        S, T, U = m
        return None if U in up[S] else "S ≤ T ≤ U but not S ≤ U"

    return [
        for_all("S ≤ S", shp, refl, family=SH_WORDS, bounds=SH_BOUNDS, names=("S",)),
        for_all(
            "S ≤ T and T ≤ S imply S = T",
            ((S, T) for S in shp for T in up[S]),
            anti,
            family=SH_WORDS + "; every pair S ≤ T",
            bounds=SH_BOUNDS,
            names=("S", "T"),
        ),
        for_all(
            "S ≤ T and T ≤ U imply S ≤ U",
            ((S, T, U) for T in shp for S in down[T] for U in up[T]),
            trans,
            family=SH_WORDS + "; every chain S ≤ T ≤ U",
            bounds=SH_BOUNDS,
            names=("S", "T", "U"),
        ),
    ]


def check_extremes() -> List[Result]:
    shp = _shapes()
    groups = _by_size(shp)

    def minimal(S: Any) -> Any:
        n = product(S)
        if not compatible(n, S):
            return f"the integer {n} is not compatible with S"
        if type(S) is not int and compatible(S, n):
            return f"S ≤ {n} although S is not an integer"
        return None

    def is_prime(p: int) -> bool:
        return p >= 2 and all(p % q for q in range(2, int(p**0.5) + 1))

    def reduced(S: Any) -> bool:
        if type(S) is int:
            return S >= 2
        return len(S) >= 2 and all(reduced(e) for e in S)

    def maximal(S: Any) -> Any:
        if not (type(S) is tuple and len(S) >= 2 and all(type(e) is int and is_prime(e) for e in S)):
            return SKIP
        for T in groups[product(S)]:
            if T != S and reduced(T) and compatible(S, T):
                return f"S ≤ T = {_fmt(T)}, a different shape without extent-1 leaves or rank-1 tuples"
        return None

    return [
        for_all(
            "every integer n is compatible with every shape of size n, and only integers are below an "
            "integer",
            shp,
            minimal,
            family=SH_WORDS,
            bounds=SH_BOUNDS,
            names=("S",),
        ),
        for_all(
            "a flat shape of primes (rank >= 2) is below no other shape without extent-1 leaves and "
            "rank-1 tuples",
            shp,
            maximal,
            family=SH_WORDS,
            bounds=SH_BOUNDS,
            names=("S",),
        ),
    ]


# ----------------------------------------------------------------------------- T12
def _sw_model(x: Any, b: Any, m: Any, s: Any, negative: bool, shr: Any) -> Any:
    """Swizzle<B,M,S>(x) written once for numpy integers and Z3 bit-vectors: the B bits
    at M + max(S,0) are XORed onto the B bits at M - min(S,0)."""
    one = x - x + 1
    msk = (one << b) - 1
    if not negative:
        yyy = msk << (m + s)
        return x ^ shr(x & yyy, s)
    yyy = msk << m
    return x ^ ((x & yyy) << s)


SW_MODEL_BITS = 8


def check_involution() -> List[Result]:
    import numpy as np
    import z3

    out: List[Result] = []
    w = 64
    x, b, m, s = z3.BitVecs("x b m s", w)
    for negative in (False, True):
        facts = [z3.ULE(b, 63), z3.ULE(m, 63), z3.ULE(s, 63), z3.UGE(s, b), z3.ULE(b + m + s, 63)]

        def f(v: Any, negative: bool = negative) -> Any:
            return _sw_model(v, b, m, s, negative, z3.LShR)

        claim = f(f(x)) == x
        ob = BVObligation(claim, facts)
        sign = "S < 0 (|S| = s)" if negative else "S >= 0"
        po = ob.decide(
            f"Swizzle<B,M,{'-' if negative else ''}s>(Swizzle<B,M,{'-' if negative else ''}s>(x)) == x "
            f"for all 64-bit x, {sign}, B <= |S|, B + M + |S| <= 63"
        )
        status = {"unsat": "proved", "sat": "refuted"}.get(po.verdict, "unknown")
        out.append(
            Result(
                status,
                "z3",
                claim=po.purpose,
                obligations=[po],
                seconds=po.seconds,
                reason=None if status != "unknown" else "timeout",
            )
        )

    # the Z3 model above is the library's swizzle: compare on every swizzle of <= 8 bits
    def agree(sw: Swizzle) -> Any:
        top = sw.bits + sw.base + abs(sw.shift)
        xs = np.arange(1 << (top + 2), dtype=np.int64)
        want = _sw_model(xs, sw.bits, sw.base, abs(sw.shift), sw.shift < 0, lambda a, k: a >> k)
        got = np.array([sw(int(v)) for v in xs], dtype=np.int64) if len(xs) <= 64 else sw(xs.copy())
        if not np.array_equal(got, want):
            k = int(np.flatnonzero(got != want)[0])
            return f"the model differs from Swizzle at x = {k}: {int(want[k])} != {int(got[k])}"
        return None

    out.append(
        for_all(
            "the bit-vector model used above computes Swizzle<B,M,S>(x) for every x < 2^(B+M+|S|+2)",
            swizzles(SW_MODEL_BITS),
            agree,
            family=f"every valid Swizzle<B,M,S> with B + M + |S| <= {SW_MODEL_BITS}",
            bounds={"B+M+|S|": (0, SW_MODEL_BITS)},
            names=("swizzle",),
        )
    )
    return out


SW_BITS = 10


def check_bijection() -> Result:
    import numpy as np

    def case(sw: Swizzle) -> Any:
        n = sw.size
        xs = np.arange(2 * n, dtype=np.int64)
        ys = sw(xs.copy())
        if not np.array_equal(np.sort(ys[:n]), xs[:n]):
            return f"{sw} does not permute [0, {n})"
        if not np.array_equal(ys // n, xs // n):
            return f"{sw} moves an offset out of its aligned block of {n}"
        if not np.array_equal(sw(ys.copy()), xs):
            return f"{sw} is not an involution on [0, {2 * n})"
        return None

    return for_all(
        "Swizzle<B,M,S> permutes [0, 2^(B+M+|S|)) and every aligned block of that size, and is an "
        "involution there",
        swizzles(SW_BITS),
        case,
        family=f"every valid Swizzle<B,M,S> with B + M + |S| <= {SW_BITS}",
        bounds={"B+M+|S|": (0, SW_BITS)},
        names=("swizzle",),
    )


SWL_RANK, SWL_EXTENT = 3, 4


def check_swizzled_layout() -> List[Result]:
    import numpy as np

    sws = [sw for sw in swizzles(6) if sw.bits > 0]

    def members() -> Iterator[Tuple[Swizzle, Layout]]:
        for L in compact_layouts(SWL_RANK, SWL_EXTENT):
            for sw in sws:
                if L.size % sw.size == 0:
                    yield sw, L

    def case(m: Tuple[Swizzle, Layout]) -> Any:
        sw, L = m
        C = composition(sw, L)
        v = np.asarray(C.eval_all(), dtype=np.int64)
        if not np.array_equal(np.sort(v), np.arange(L.size)):
            return f"{C} is not a bijection onto [0, {L.size})"
        return None

    atom = composition(Swizzle(3, 3, 3), Layout(((2, 4, 2), (8, 2)), ((8, 64, 32), (1, 16))))
    tile = tile_to_shape(atom, (128, 64))
    v = np.asarray(tile.eval_all(), dtype=np.int64)
    return [
        for_all(
            "Swizzle ∘ L is a bijection onto [0, size(L)) for L a bijection onto [0, size(L)) and "
            "2^(B+M+|S|) | size(L)",
            members(),
            case,
            family=f"L: every compact layout of every flat shape of rank 1..{SWL_RANK}, "
            f"extents 1..{SWL_EXTENT}; "
            "every swizzle with B >= 1, B + M + |S| <= 6 whose size divides size(L)",
            bounds={"rank": (1, SWL_RANK), "extent": (1, SWL_EXTENT), "B+M+|S|": (1, 6)},
            names=("swizzle", "L"),
        ),
        fact(
            "seed 004: tile_to_shape(Swizzle<3,3,3> ∘ ((2,4,2),(8,2)):((8,64,32),(1,16)), (128,64)) is a "
            "bijection onto [0, 8192)",
            tile.size == 8192 and np.array_equal(np.sort(v), np.arange(8192)),
            f"{tile} is not a bijection onto [0, 8192)",
        ),
    ]


THEOREMS = [
    Theorem(
        "T11.compatibility-definition",
        "compatible is the seed's definition",
        "compatible(S, T) holds iff size(S) = size(T) and every natural coordinate of S is a valid "
        "coordinate of T (an integer coordinate fits any mode of its size; a tuple coordinate needs a tuple "
        "mode of the same rank).",
        check_definition,
        expected="checked",
        parameters="S, T: hierarchical shapes",
        references=("REFERENCES T11", SEED0, TALK),
        family=SH_WORDS + "; every pair of equal size",
        group=GROUP_S,
    ),
    Theorem(
        "T11.partial-order",
        "Compatibility is a partial order",
        "Compatibility of shapes is reflexive (S ≤ S), antisymmetric (S ≤ T ≤ S ⟹ S = T) and "
        "transitive (S ≤ T ≤ U ⟹ S ≤ U).",
        check_partial_order,
        expected="checked",
        parameters="S, T, U: hierarchical shapes",
        references=("REFERENCES T11", SEED0, TALK, WP),
        family=SH_WORDS,
        group=GROUP_S,
    ),
    Theorem(
        "T11.extremes",
        "Integers are minimal; flat prime shapes are maximal",
        "The integer n is below every shape of size n, and only n is below n. A flat shape (p_1, ..., p_k), "
        "k ≥ 2, of primes is below no other shape without extent-1 leaves and rank-1 tuples (maximal among "
        "such reduced shapes; unit modes and 1-tuples would always extend it).",
        check_extremes,
        expected="checked",
        parameters="S: hierarchical shapes",
        references=("REFERENCES T11", TALK),
        family=SH_WORDS,
        group=GROUP_S,
    ),
    Theorem(
        "T12.swizzle-involution",
        "A swizzle is an involution",
        "Swizzle<B,M,S>(Swizzle<B,M,S>(x)) = x for every 64-bit x and all valid B, M, S "
        "(B ≤ |S|, B + M + |S| ≤ 63), proved by Z3 over bit-vectors with B, M, S symbolic; the bit-vector "
        "model is checked against layoutproof's Swizzle on every swizzle of at most 8 bits.",
        check_involution,
        expected="checked",
        method="z3+exhaustive",
        parameters="B, M, S: bit-vector parameters (symbolic); x: any 64-bit value",
        references=("REFERENCES T12", "CuTe C++ swizzle.hpp", "Triton Linear Layouts, arXiv 2505.23819"),
        family=f"model check: every valid swizzle with B + M + |S| <= {SW_MODEL_BITS}",
        group=GROUP_W,
    ),
    Theorem(
        "T12.swizzle-bijection",
        "A swizzle permutes its domain",
        "Swizzle<B,M,S> permutes [0, 2^(B+M+|S|)) and each aligned block of that size.",
        check_bijection,
        expected="checked",
        parameters="B, M, S: swizzle parameters",
        references=("REFERENCES T12",),
        family=f"every valid swizzle with B + M + |S| <= {SW_BITS}",
        group=GROUP_W,
    ),
    Theorem(
        "T12.swizzled-layout-bijective",
        "A swizzled bijection is a bijection",
        "If L is a bijection onto [0, size(L)) and 2^(B+M+|S|) divides size(L), then Swizzle<B,M,S> ∘ L is a "
        "bijection onto [0, size(L)). The talk's swizzled shared-memory tile (Swizzle<3,3,3> ∘ "
        "((2,4,2),(8,2)):((8,64,32),(1,16)) tiled to 128×64) is a bijection onto [0, 8192).",
        check_swizzled_layout,
        expected="checked",
        parameters="L: compact layouts; B, M, S: swizzle parameters",
        references=("REFERENCES T12", "seed 004 (swizzle_atom, tile_to_shape)"),
        family=f"every compact layout of rank 1..{SWL_RANK}, extents 1..{SWL_EXTENT}; every swizzle with "
        "B ≥ 1, B + M + |S| ≤ 6 dividing its size",
        group=GROUP_W,
    ),
]
