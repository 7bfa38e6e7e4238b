"""T10: coalesce -- same size, same function, depth <= 1, idempotent, irreducible."""

from __future__ import annotations

from typing import Any, List

from layoutproof import Layout, coalesce, symbols
from layoutproof.verify import Counterexample, Result, identity, postcondition
from layoutproof.verify.families import Bounds, layouts, nested_layouts, offsets

from ..kit import flat, for_all
from ..theorem import Theorem

GROUP = "Coalesce (T10)"
REF = ("REFERENCES T10", "Cecka, arXiv 2603.02298 (coalesce)", "seed 001 (coalescing)")

FLAT = Bounds(rank=3, extent=4, stride=3, negative=True)
NESTED = dict(rank=3, extent=3, stride=3)
NESTED_WORDS = (
    "every flat layout of rank 3, extents 1..3, strides 0..3, grouped into two top-level "
    "modes at every split point"
)
NESTED_BOUNDS = {"rank": (2, 3), "extent": (1, 3), "stride": (0, 3)}


def _flat_family() -> Any:
    return layouts(FLAT.rank, FLAT.extent, FLAT.stride, FLAT.negative)


def _for_all_flat(claim: str, case: Any) -> Result:
    """``case`` for every flat layout L of the family FLAT."""
    return for_all(claim, _flat_family(), case, family=FLAT.words(), bounds=_bounds(FLAT), names=("L",))


def _bounds(b: Bounds) -> dict:
    return {
        "rank": (1, b.rank),
        "extent": (1, b.extent),
        "stride": (-b.stride if b.negative else 0, b.stride),
    }


def check_postcondition() -> List[Result]:
    def fast(L: Layout) -> Any:
        C = coalesce(L)
        if C.size != L.size:
            return f"size {C.size} != {L.size}"
        if C.depth > 1:
            return f"{C} has depth {C.depth}"
        a, b = offsets(C), offsets(L)
        if a != b:
            k = next(i for i in range(len(a)) if a[i] != b[i])
            return Counterexample(
                coordinate=k, lhs=a[k], rhs=b[k], detail=f"coalesce(L) = {C} differs from L"
            )
        return None

    def spec(L: Layout) -> Any:
        r = postcondition("coalesce", coalesce(L), L)
        return None if r.status == "proved" else r.counterexample

    nb = NESTED
    return [
        _for_all_flat(
            "coalesce(L) has L's size and function, and depth <= 1",
            fast,
        ),
        for_all(
            "the same for hierarchical layouts (verify.postcondition)",
            nested_layouts(nb["rank"], nb["extent"], nb["stride"]),
            spec,
            family=NESTED_WORDS,
            bounds=NESTED_BOUNDS,
            names=("L",),
        ),
    ]


def check_idempotent() -> Result:
    def case(L: Layout) -> Any:
        C = coalesce(L)
        C2 = coalesce(C)
        if C2.shape != C.shape or C2.stride != C.stride:
            return f"coalesce(coalesce(L)) = {C2} != coalesce(L) = {C}"
        return None

    return _for_all_flat(
        "coalesce(coalesce(L)) == coalesce(L), shape and stride",
        case,
    )


def check_irreducible() -> Result:
    def case(L: Layout) -> Any:
        C = coalesce(L)
        s, d = flat(C)
        if len(s) == 1:
            if s[0] == 1 and d[0] != 0:
                return f"{C}: a size-1 result should be 1:0"
            return None
        for k in range(len(s)):
            if s[k] == 1:
                return f"{C}: mode {k} has extent 1"
            if k + 1 < len(s) and s[k] * d[k] == d[k + 1]:
                return f"{C}: modes {k} and {k + 1} would merge ({s[k]}*{d[k]} == {d[k + 1]})"
        return None

    return _for_all_flat(
        "coalesce(L) has no extent-1 mode (unless it is 1:0) and no two adjacent modes "
        "(s_k, d_k), (s_k+1, d_k+1) with s_k*d_k == d_k+1",
        case,
    )


def check_profile() -> Result:
    nb = NESTED
    prof = (1, 1)

    def case(L: Layout) -> Any:
        C = coalesce(L, prof)
        if C.rank != 2:
            return f"coalesce(L, (1,1)) = {C} has rank {C.rank}"
        for k in range(2):
            if C[k].depth > 1:
                return f"mode {k} of {C} has depth {C[k].depth}"
            if C[k].size != L[k].size or offsets(C[k]) != offsets(L[k]):
                return f"mode {k}: {C[k]} is not {L[k]} as a function"
        return None

    return for_all(
        "coalesce(L, (1,1)) coalesces each top-level mode: same size and function per mode, "
        "each mode of depth <= 1",
        nested_layouts(nb["rank"], nb["extent"], nb["stride"]),
        case,
        family=NESTED_WORDS,
        bounds=NESTED_BOUNDS,
        names=("L",),
    )


def check_symbolic() -> List[Result]:
    return [
        identity(
            lambda M, N, K: coalesce(Layout((M, N, K), (1, M, M * N))),
            lambda M, N, K: Layout(M * N * K, 1),
            claim="coalesce((M,N,K):(1,M,M*N)) == M*N*K:1",
            bounds=False,
        ),
        identity(
            lambda M, N, K: coalesce(Layout(((M, N), K), ((1, M), 2 * M * N))),
            lambda M, N, K: Layout((M * N, K), (1, 2 * M * N)),
            claim="coalesce(((M,N),K):((1,M),2*M*N)) == (M*N,K):(1,2*M*N)",
            bounds=False,
        ),
        identity(
            lambda M, N: coalesce(Layout((M, 1, N), (1, 7, M))),
            lambda M, N: Layout(M * N, 1),
            claim="coalesce((M,1,N):(1,7,M)) == M*N:1",
            bounds=False,
        ),
        _symbolic_post(),
    ]


def _symbolic_post() -> Result:

    M, N = symbols("M N")
    L = Layout(((M, 4), N), ((4, 1), 4 * M))
    return postcondition("coalesce", coalesce(L), L, bounds=False)


THEOREMS = [
    Theorem(
        "T10.coalesce-postcondition",
        "coalesce preserves size and function and flattens",
        "For every layout L: size(coalesce(L)) = size(L), coalesce(L)(i) = L(i) for every "
        "i < size(L), and depth(coalesce(L)) ≤ 1.",
        check_postcondition,
        expected="checked",
        method="exhaustive",
        parameters="L: flat layouts (strides of either sign) and hierarchical layouts",
        references=REF,
        family=f"{FLAT.words()}; and {NESTED_WORDS}",
        group=GROUP,
    ),
    Theorem(
        "T10.coalesce-idempotent",
        "coalesce is idempotent",
        "coalesce(coalesce(L)) = coalesce(L), as shapes and strides (not only as functions).",
        check_idempotent,
        expected="checked",
        parameters="L: flat layouts",
        references=REF,
        family=FLAT.words(),
        group=GROUP,
    ),
    Theorem(
        "T10.coalesce-irreducible",
        "coalesce leaves nothing to merge",
        "coalesce(L) = (s_0..s_k):(d_0..d_k) has no extent-1 mode (unless it is 1:0) and no "
        "adjacent modes with s_j·d_j = d_(j+1): no further mode can be merged or dropped.",
        check_irreducible,
        expected="checked",
        parameters="L: flat layouts",
        references=REF,
        family=FLAT.words(),
        group=GROUP,
    ),
    Theorem(
        "T10.coalesce-by-mode",
        "coalesce with a profile works mode by mode",
        "For a layout L of rank 2: coalesce(L, (1,1)) has, in each top-level mode, the size and "
        "function of that mode of L, and each mode has depth ≤ 1.",
        check_profile,
        expected="checked",
        parameters="L: hierarchical layouts of rank 2",
        references=REF + ("CuTe C++ coalesce(layout, trg_profile)",),
        family=NESTED_WORDS,
        group=GROUP,
    ),
    Theorem(
        "T10.coalesce-symbolic",
        "coalesce of symbolic layouts",
        "For all positive integers M, N, K: coalesce((M,N,K):(1,M,M·N)) = M·N·K:1, "
        "coalesce(((M,N),K):((1,M),2·M·N)) = (M·N,K):(1,2·M·N), coalesce((M,1,N):(1,7,M)) = M·N:1, "
        "and coalesce(((M,4),N):((4,1),4·M)) satisfies the post-condition.",
        check_symbolic,
        expected="proved",
        method="sympy",
        parameters="M, N, K: positive integers (symbolic)",
        references=REF,
        group=GROUP,
    ),
]
