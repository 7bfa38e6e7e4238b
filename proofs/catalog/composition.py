"""Composition: T2-T6, identities, left distributivity, and its dependence on A."""

from __future__ import annotations

import itertools
from typing import Any, Iterator, List, Tuple

from layoutproof import Layout, LayoutError, assuming, coalesce, compatible, composition, make_layout, symbols
from layoutproof.verify import Counterexample, Result, identity, postcondition
from layoutproof.verify.families import offsets, shapes

from ..kit import (
    SKIP,
    bymode,
    cpp_conditions,
    fact,
    flat,
    for_all,
    reproducing_layout,
    shape_quotient,
    weakly_left_divisible,
)
from ..theorem import Theorem
from .shared import bounds_of, compose, ext_offsets, family, family_words, first_diff

GROUP = "Composition (T2–T6)"
WP = "Cecka, arXiv 2603.02298 (composition)"
CARLISLE = "Carlisle, Shah, Stern, VanKoughnett, arXiv 2601.05972"
SHAH = "J. Shah, A note on the algebra of CuTe Layouts (Colfax, 2024)"
TALK = "seed 004 (Cecka's GTC talk: composition laws)"

# the families (rank, extent, stride)
A_FAM = (2, 4, 3)
B_FAM = (2, 3, 2)
LEAF_N = range(1, 7)
LEAF_R = range(0, 7)


def _A() -> Tuple[Layout, ...]:
    return family(*A_FAM)


def _B() -> Tuple[Layout, ...]:
    return family(*B_FAM)


def _pairs() -> Iterator[Tuple[Layout, Layout]]:
    return itertools.product(_A(), _B())


PAIR_WORDS = f"A: {family_words(*A_FAM)}; B: {family_words(*B_FAM)} (every pair)"
PAIR_BOUNDS = {**bounds_of(*A_FAM, prefix="A."), **bounds_of(*B_FAM, prefix="B.")}
LEAF_WORDS = (
    f"A: {family_words(*A_FAM)}; B = n:r with n in {LEAF_N.start}..{LEAF_N.stop - 1}, r in "
    f"{LEAF_R.start}..{LEAF_R.stop - 1}"
)
LEAF_BOUNDS = {
    **bounds_of(*A_FAM, prefix="A."),
    "n": (LEAF_N.start, LEAF_N.stop - 1),
    "r": (LEAF_R.start, LEAF_R.stop - 1),
}


def _leaves(rs: range = LEAF_R) -> Iterator[Tuple[Layout, int, int]]:
    for A in _A():
        for n in LEAF_N:
            for r in rs:
                yield A, n, r


def _reproduces(R: Layout, A: Layout, B: Layout) -> Any:
    """R's shape admits B's coordinates (B compatible with R) and R(c) == Â(B(c))."""
    if not compatible(B, R):
        return f"A∘B = {R}: B's shape is not compatible with R's"
    want = ext_offsets(A, offsets(B))
    got = offsets(R)
    k = first_diff(got, want)
    if k >= 0:
        return Counterexample(coordinate=k, lhs=got[k], rhs=want[k], detail=f"A∘B = {R}: R(c) != Â(B(c))")
    return None


# ----------------------------------------------------------------------------- T5 post-condition
def check_postcondition() -> List[Result]:
    stats = {"admissible": 0, "inadmissible": 0}

    def case(m: Tuple[Layout, Layout]) -> Any:
        A, B = m
        R = compose(A, B)
        if isinstance(R, LayoutError):
            stats["inadmissible"] += 1
            return SKIP
        stats["admissible"] += 1
        return _reproduces(R, A, B)

    r = for_all(
        "every admissible A∘B = R has B compatible with R and R(c) = Â(B(c)) on B's domain",
        _pairs(),
        case,
        family=PAIR_WORDS,
        bounds=PAIR_BOUNDS,
        names=("A", "B"),
    )
    r = r.replace(notes=list(r.notes) + [f"{stats['inadmissible']} pairs are inadmissible (raise)"])

    # the verifier's own post-condition, on hierarchical right operands
    def spec(m: Tuple[Layout, Layout]) -> Any:
        A, B = m
        R = compose(A, B)
        if isinstance(R, LayoutError):
            return SKIP
        res = postcondition("composition", R, A, B)
        return None if res.status == "proved" else res.counterexample

    nested_b = [
        Layout.trusted(((s0, s1), s2), ((d0, d1), d2))
        for s0, s1, s2 in itertools.product((2, 3), repeat=3)
        for d0, d1, d2 in itertools.product((1, 3), repeat=3)
    ]
    a_small = family(2, 3, 3, min_extent=2, min_stride=1)
    r2 = for_all(
        "the same for hierarchical B = ((b0,b1),b2), by verify.postcondition",
        itertools.product(a_small, nested_b),
        spec,
        family=f"A: {family_words(2, 3, 3, min_extent=2, min_stride=1)}; "
        "B = ((s0,s1),s2):((d0,d1),d2) with every s in {2,3}, every d in {1,3}",
        bounds={
            **bounds_of(2, 3, 3, min_extent=2, min_stride=1, prefix="A."),
            "B.extent": (2, 3),
            "B.stride": (1, 3),
        },
        names=("A", "B"),
    )
    return [r, r2]


# ----------------------------------------------------------------------------- T5 C++ conditions
def check_cpp_sufficient() -> Result:
    def case(m: Tuple[Layout, int, int]) -> Any:
        A, n, r = m
        if cpp_conditions(A, n, r) is not None:
            return SKIP
        B = Layout.trusted(n, r)
        R = compose(A, B)
        if isinstance(R, LayoutError):
            return f"C++'s conditions hold but composition raises: {R}"
        return _reproduces(R, A, B)

    return for_all(
        "C++'s stride and shape divisibility (T5) imply A∘(n:r) is admissible and correct",
        _leaves(range(1, LEAF_R.stop)),
        case,
        family=LEAF_WORDS.replace(f"r in {LEAF_R.start}", "r in 1"),
        bounds={**LEAF_BOUNDS, "r": (1, LEAF_R.stop - 1)},
        names=("A", "n", "r"),
    )


# ----------------------------------------------------------------------------- T3 exactness
def check_single_mode_exact() -> List[Result]:
    stats = {"admissible": 0, "no layout": 0}

    def case(m: Tuple[Layout, int, int]) -> Any:
        A, n, r = m
        B = Layout.trusted(n, r)
        want = ext_offsets(A, [r * j for j in range(n)])
        witness = reproducing_layout(want)
        R = compose(A, B)
        if isinstance(R, LayoutError):
            stats["no layout"] += 1
            if witness is not None:
                why = getattr(R, "condition", R)
                return f"composition raises ({why}) although {witness} reproduces j -> Â(r·j)"
            return None
        stats["admissible"] += 1
        if witness is None:
            return f"composition returns {R} but no layout reproduces j -> Â(r·j)"
        return _reproduces(R, A, B)

    r = for_all(
        "A∘(n:r) is admissible iff some layout R of size n has R(j) = Â(r·j) for every j < n "
        "(brute force over every ordered factorization of n), and then it is such an R",
        _leaves(),
        case,
        family=LEAF_WORDS,
        bounds=LEAF_BOUNDS,
        names=("A", "n", "r"),
    )
    r = r.replace(
        notes=list(r.notes) + [f"{stats['admissible']} admissible, {stats['no layout']} with no layout"]
    )
    A, B = Layout((4, 6, 8, 10), (2, 3, 5, 7)), Layout(6, 12)
    R = composition(A, B)
    r2 = fact(
        "(4,6,8,10):(2,3,5,7) ∘ 6:12 = (2,3):(9,5) (Carlisle et al.; C++ rejects it)",
        str(R) == "(2,3):(9,5)" and _reproduces(R, A, B) is None,
        f"got {R}",
    )
    return [r, r2]


# ----------------------------------------------------------------------------- T3 sufficiency
def check_t3_sufficient() -> Result:
    def case(m: Tuple[Layout, int, int]) -> Any:
        A, n, r = m
        S, _ = flat(A)
        q = shape_quotient(S, r) if r >= 1 else None
        if q is None or not weakly_left_divisible(q, n):
            return SKIP
        B = Layout.trusted(n, r)
        R = compose(A, B)
        if isinstance(R, LayoutError):
            return (
                f"S = {S} is left divisible by {r} and S/{r} = {q} weakly by {n}, but composition raises: {R}"
            )
        if R.size != n:
            return f"size {R.size} != {n}"
        return _reproduces(R, A, B)

    return for_all(
        "if shape(A) is left divisible by r and shape(A)/r weakly left divisible by n, then "
        "A∘(n:r) is admissible, has size n and R(x) = Â(r·x)",
        _leaves(range(1, LEAF_R.stop)),
        case,
        family=LEAF_WORDS.replace(f"r in {LEAF_R.start}", "r in 1"),
        bounds={**LEAF_BOUNDS, "r": (1, LEAF_R.stop - 1)},
        names=("A", "n", "r"),
    )


# ----------------------------------------------------------------------------- T2 characterization
GENERIC = (1, 1000, 1_000_000)
T2_RANK, T2_EXTENT, T2_N = 3, 6, 24


def _size(S: Tuple[int, ...]) -> int:
    n = 1
    for s in S:
        n *= s
    return n


def _generic(S: Tuple[int, ...]) -> Layout:
    return Layout.trusted(S, GENERIC[: len(S)]) if len(S) > 1 else Layout.trusted(S[0], 1)


def check_t2() -> List[Result]:
    def weak(m: Tuple[Tuple[int, ...], int]) -> Any:
        S, N = m
        R = compose(_generic(S), Layout.trusted(N, 1))
        ok = not isinstance(R, LayoutError)
        if ok != weakly_left_divisible(S, N):
            return f"weakly left divisible: {not ok}, but A∘{N}:1 is {'admissible' if ok else 'inadmissible'}"
        return None

    def strong(m: Tuple[Tuple[int, ...], int]) -> Any:
        S, d = m
        q = shape_quotient(S, d)
        if q is None:
            return SKIP
        R = compose(_generic(S), Layout.trusted(_size(q), d))
        if isinstance(R, LayoutError):
            return f"S/d = {q}, but A∘({_size(q)}:{d}) raises: {R}"
        # the quotient formula: S/d = (s_i/c, s_(i+1), ...) with strides (c*d_i, d_(i+1), ...)
        p, i = 1, 0
        while d % (p * S[i]) == 0 and i < len(S) - 1 and d // p >= S[i]:
            p *= S[i]
            i += 1
        c = d // p
        want = (
            Layout.trusted(q, (c * GENERIC[i],) + GENERIC[i + 1 : len(S)])
            if len(q) > 1
            else Layout.trusted(q[0], c * GENERIC[i])
        )
        if offsets(R) != offsets(want):
            return f"A∘({_size(q)}:{d}) = {R}, not the quotient layout {want}"
        return None

    shp = list(shapes(T2_RANK, T2_EXTENT))
    words = (
        f"S: every flat shape of rank 1..{T2_RANK} with extents 1..{T2_EXTENT}, A = S:(1,1000,10^6) "
        "(generic strides: no two values coincide, no modes merge)"
    )
    sizes = {S: 1 for S in shp}
    for S in shp:
        for s in S:
            sizes[S] *= s
    return [
        for_all(
            "S is weakly left divisible by N iff S:(generic) ∘ N:1 is a layout",
            ((S, N) for S in shp for N in range(1, T2_N + 1)),
            weak,
            family=f"{words}; N in 1..{T2_N}",
            bounds={"rank": (1, T2_RANK), "extent": (1, T2_EXTENT), "N": (1, T2_N)},
            names=("S", "N"),
        ),
        for_all(
            "if S is left divisible by d, then S:(generic) ∘ size(S/d):d is the quotient layout "
            "S/d : (c·d_i, d_(i+1), ..., d_a)",
            ((S, d) for S in shp for d in range(1, sizes[S] + 1)),
            strong,
            family=f"{words}; every d in 1..size(S)",
            bounds={"rank": (1, T2_RANK), "extent": (1, T2_EXTENT)},
            names=("S", "d"),
        ),
    ]


# ----------------------------------------------------------------------------- T4 left distributivity
def check_left_distributivity() -> Result:
    stats = {"admissible": 0, "overlapping": 0}
    bs = [B for B in _B() if B.rank == 2 and all(s > 1 for s in flat(B)[0])]

    def case(m: Tuple[Layout, Layout]) -> Any:
        A, B = m
        try:
            byR = bymode(A, B)
        except LayoutError:
            return SKIP  # a mode of B is inadmissible on its own: outside the hypothesis
        R = compose(A, B)
        right = ext_offsets(A, offsets(B))
        by_ok = offsets(byR) == right
        if isinstance(R, LayoutError):
            stats["overlapping"] += 1
            if by_ok:
                return f"composition raises ({R}) although the by-mode result {byR} is A∘B"
            return None
        stats["admissible"] += 1
        if not by_ok:
            return f"composition admits A∘B = {R}, but the by-mode result {byR} differs from Â(B(c))"
        if R.shape != byR.shape or R.stride != byR.stride:
            return f"A∘B = {R} is not the by-mode concatenation {byR}"
        return _reproduces(R, A, B)

    r = for_all(
        "for B = (B0,B1) with each A∘Bi admissible: A∘B is admissible iff (A∘B0, A∘B1) reproduces "
        "Â(B(c)), and then A∘(B0,B1) = (A∘B0, A∘B1)",
        itertools.product(_A(), bs),
        case,
        family=f"A: {family_words(*A_FAM)}; B: every rank-2 layout with extents 2..3, strides 0..3",
        bounds={**bounds_of(*A_FAM, prefix="A."), "B.extent": (2, 3), "B.stride": (0, 3)},
        names=("A", "B"),
    )
    return r.replace(
        notes=list(r.notes)
        + [
            f"{stats['admissible']} admissible; {stats['overlapping']} where "
            "the modes of B overlap in A (by-mode wrong)"
        ]
    )


# ----------------------------------------------------------------------------- identities
ID_FAM = (3, 4, 3)
RID_FAM = (3, 3, 3, True)


def check_left_identity() -> Result:
    def case(B: Layout) -> Any:
        for n in (1, B.cosize):
            R = compose(Layout.trusted(n, 1), B)
            if isinstance(R, LayoutError):
                return f"{n}:1 ∘ B raises: {R}"
            if R.size != B.size or offsets(R) != offsets(B) or not compatible(B, R):
                return f"{n}:1 ∘ B = {R} is not B"
        return None

    return for_all(
        "I∘B = B for the identity layouts I = 1:1 and I = cosize(B):1",
        family(*ID_FAM),
        case,
        family=family_words(*ID_FAM),
        bounds=bounds_of(*ID_FAM),
        names=("B",),
    )


def check_right_identity() -> Result:
    def case(A: Layout) -> Any:
        for I in (Layout.trusted(A.size, 1), Layout(A.shape)):
            R = compose(A, I)
            if isinstance(R, LayoutError):
                return f"A∘{I} raises: {R}"
            if R.size != A.size or offsets(R) != offsets(A):
                return f"A∘{I} = {R} is not A as a function"
        return None

    return for_all(
        "A∘I_A = A for I_A = size(A):1 and for the compact layout of A's shape",
        family(*RID_FAM),
        case,
        family=family_words(*RID_FAM),
        bounds=bounds_of(*RID_FAM),
        names=("A",),
    )


def check_identities_symbolic() -> List[Result]:
    return [
        identity(
            lambda M, N, K: composition(Layout(M * N * K, 1), Layout((M, N), (1, M * K))),
            lambda M, N, K: Layout((M, N), (1, M * K)),
            claim="(M*N*K):1 ∘ (M,N):(1,M*K) == (M,N):(1,M*K)",
            bounds=False,
        ),
        identity(
            lambda M, N: composition(Layout((M, N), (N, 1)), Layout(M * N, 1)),
            lambda M, N: Layout((M, N), (N, 1)),
            claim="(M,N):(N,1) ∘ (M*N):1 == (M,N):(N,1)",
            bounds=False,
        ),
        identity(
            lambda M, N: composition(Layout((M, N), (N, 1)), Layout((M, N))),
            lambda M, N: Layout((M, N), (N, 1)),
            claim="(M,N):(N,1) ∘ (M,N):(1,M) == (M,N):(N,1)",
            bounds=False,
        ),
    ]


# ----------------------------------------------------------------------------- T6 associativity
AS_A = (2, 4, 4, False, 2, 1)
AS_B = (2, 3, 3, False, 2, 1)
AS_C = (1, 4, 3, False, 2, 1)


def check_associativity() -> Result:
    stats = {"all admissible": 0}

    def case(m: Tuple[Layout, Layout, Layout]) -> Any:
        A, B, C = m
        if max(offsets(B)) >= A.size or max(offsets(C)) >= B.size:
            return SKIP  # the domain condition: no composition reads past its left operand
        AB, BC = compose(A, B), compose(B, C)
        if isinstance(AB, LayoutError) or isinstance(BC, LayoutError):
            return SKIP
        L, R = compose(AB, C), compose(A, BC)
        if isinstance(L, LayoutError) or isinstance(R, LayoutError):
            return SKIP
        stats["all admissible"] += 1
        a, b = offsets(L), offsets(R)
        if L.size != R.size or a != b:
            k = first_diff(a, b)
            return Counterexample(coordinate=k, lhs=a[k], rhs=b[k], detail=f"(A∘B)∘C = {L} != A∘(B∘C) = {R}")
        return None

    r = for_all(
        "(A∘B)∘C = A∘(B∘C) when A∘B, B∘C, (A∘B)∘C and A∘(B∘C) are admissible and "
        "image(B) ⊆ [0, size(A)), image(C) ⊆ [0, size(B))",
        itertools.product(family(*AS_A), family(*AS_B), family(*AS_C)),
        case,
        family=f"A: {family_words(*AS_A)}; B: {family_words(*AS_B)}; C: {family_words(*AS_C)}",
        bounds={
            **bounds_of(*AS_A, prefix="A."),
            **bounds_of(*AS_B, prefix="B."),
            **bounds_of(*AS_C, prefix="C."),
        },
        names=("A", "B", "C"),
    )
    return r


# ----------------------------------------------------------------------------- A only through its function
FN_A = (2, 3, 3)
FN_B = (2, 3, 2)


def check_function_of_a() -> Result:
    def case(m: Tuple[Layout, Layout]) -> Any:
        A, B = m
        if max(offsets(B)) >= A.size:
            return SKIP
        R = compose(A, B)
        if isinstance(R, LayoutError):
            return SKIP
        ref = offsets(R)
        for A2 in (coalesce(A), make_layout(A, Layout.trusted(1, 0))):
            R2 = compose(A2, B)
            if isinstance(R2, LayoutError):
                return f"A' = {A2} (the same function) gives an inadmissible A'∘B: {R2}"
            if offsets(R2) != ref:
                return f"A' = {A2}: A'∘B = {R2} != A∘B = {R}"
        return None

    return for_all(
        "when image(B) ⊆ [0, size(A)), A∘B depends on A only through its function: A'∘B = A∘B "
        "for A' = coalesce(A) and A' = (A, 1:0)",
        itertools.product(family(*FN_A), family(*FN_B)),
        case,
        family=f"A: {family_words(*FN_A)}; B: {family_words(*FN_B)}",
        bounds={**bounds_of(*FN_A, prefix="A."), **bounds_of(*FN_B, prefix="B.")},
        names=("A", "B"),
    )


# ----------------------------------------------------------------------------- symbolic
def check_symbolic() -> List[Result]:
    M, N = symbols("M N")
    out = [
        identity(
            lambda M, N: composition(Layout((M, N), (N, 1)), Layout(4, 1)),
            lambda M, N: Layout(4, N),
            assume="M % 4 == 0",
            claim="(M,N):(N,1) ∘ 4:1 == 4:N  (M % 4 == 0)",
            bounds=False,
        ),
        identity(
            lambda M, N: composition(Layout((M, N), (1, M)), (Layout(8, 1), Layout(4, 1))),
            lambda M, N: Layout((8, 4), (1, M)),
            assume=["M % 8 == 0", "N % 4 == 0"],
            claim="(M,N):(1,M) ∘ (8:1, 4:1) == (8,4):(1,M)  (M % 8 == 0, N % 4 == 0)",
            bounds=False,
        ),
    ]
    for facts, A, B in (
        (("M % 4 == 0",), Layout((M, N), (N, 1)), Layout(4, 1)),
        (("M % 8 == 0", "N % 4 == 0"), Layout((M, N), (1, M)), Layout((8, 4), (1, M))),
        (("M % 16 == 0",), Layout((M, N), (1, M)), Layout((2, 8), (8, 1))),
    ):
        with assuming(*facts):
            R = composition(A, B)
            out.append(postcondition("composition", R, A, B, bounds=False))
    return out


THEOREMS = [
    Theorem(
        "T5.composition-postcondition",
        "Composition meets its post-condition",
        "Whenever composition(A, B) = R is admissible: B's shape is compatible with R's, and "
        "R(c) = Â(B(c)) for every c in B's domain (Â: A with its last mode unbounded).",
        check_postcondition,
        expected="checked",
        parameters="A, B: flat layouts; B also hierarchical",
        references=("REFERENCES T5", WP, TALK),
        family=PAIR_WORDS + "; and hierarchical B = ((s0,s1),s2) over a smaller A family",
        group=GROUP,
    ),
    Theorem(
        "T5.cpp-conditions-sufficient",
        "C++'s divisibility conditions are sufficient",
        "If coalesce(A) and n:r meet CuTe C++'s stride divisibility and shape divisibility "
        "(each shape_div exact in one direction), then A∘(n:r) is admissible and R(j) = Â(r·j).",
        check_cpp_sufficient,
        expected="checked",
        parameters="A: flat layouts; n, r: positive integers",
        references=("REFERENCES T5", "CuTe C++ composition_impl (2024)", WP),
        family=LEAF_WORDS.replace(f"r in {LEAF_R.start}", "r in 1"),
        group=GROUP,
    ),
    Theorem(
        "T3.single-mode-exact",
        "Single-mode composition is exact",
        "A∘(n:r) is admissible iff there is a layout R of size n with R(j) = Â(r·j) for every j < n "
        "(decided independently by brute force over every ordered factorization of n), and the "
        "result is such an R. In particular (4,6,8,10):(2,3,5,7) ∘ 6:12 = (2,3):(9,5), which C++ rejects.",
        check_single_mode_exact,
        expected="checked",
        parameters="A: flat layouts; n ≥ 1, r ≥ 0",
        references=("REFERENCES T3", CARLISLE, "docs/semantics.md §2.3"),
        family=LEAF_WORDS,
        group=GROUP,
    ),
    Theorem(
        "T3.divisibility-sufficient",
        "T3: left divisibility makes a single mode composable",
        "If shape(A) = S is left divisible by r (T2) and S/r = (s_i/c, s_(i+1), ..., s_a) is weakly "
        "left divisible by n, then A∘(n:r) is admissible, has size n, and R(x) = Â(r·x).",
        check_t3_sufficient,
        expected="checked",
        parameters="A: flat layouts; n, r ≥ 1",
        references=("REFERENCES T3", CARLISLE),
        family=LEAF_WORDS.replace(f"r in {LEAF_R.start}", "r in 1"),
        group=GROUP,
    ),
    Theorem(
        "T2.divisibility-characterization",
        "T2: weak left divisibility is composability with generic strides",
        "For a flat shape S with generic strides (A = S:(1,1000,10^6), so that no values coincide and "
        "no modes merge): S is weakly left divisible by N iff A∘N:1 is admissible. If S is left divisible "
        "by d (i, c = d/(s_0···s_(i-1))), then A∘(size(S)/d):d is the quotient layout "
        "(s_i/c, s_(i+1), ..., s_a):(c·d_i, d_(i+1), ..., d_a). (The converse of the last statement is "
        "false: for S = (3,4) and d = 4 the values 0, 1001, 2002 happen to be linear.)",
        check_t2,
        expected="checked",
        parameters="S: flat shapes; N ≥ 1; d a divisor of size(S)",
        references=("REFERENCES T2", CARLISLE),
        family=f"S: every flat shape of rank 1..{T2_RANK}, extents 1..{T2_EXTENT}; N in 1..{T2_N}; "
        "every d in 1..size(S)",
        group=GROUP,
    ),
    Theorem(
        "T4.left-distributivity",
        "Left distributivity holds exactly when the modes are disjoint",
        "For B = (B0, B1) with each A∘Bi admissible: A∘B is admissible iff the by-mode result "
        "(A∘B0, A∘B1) satisfies (A∘B0, A∘B1)(c) = Â(B(c)) for every c; and then "
        "A∘(B0, B1) = (A∘B0, A∘B1) (same shape and strides).",
        check_left_distributivity,
        expected="checked",
        parameters="A: flat layouts; B: rank-2 layouts",
        references=("REFERENCES T4", TALK, SHAH),
        family=f"A: {family_words(*A_FAM)}; B: every rank-2 layout with extents 2..3, strides 0..3",
        group=GROUP,
    ),
    Theorem(
        "composition.left-identity",
        "Identity layouts are left identities",
        "I∘B = B (as functions, B compatible with the result) for I = n:1, any n ≥ 1.",
        check_left_identity,
        expected="checked",
        parameters="B: flat layouts; n = 1 and n = cosize(B)",
        references=(TALK, WP),
        family=family_words(*ID_FAM),
        group=GROUP,
    ),
    Theorem(
        "composition.right-identity",
        "Identity layouts are right identities",
        "A∘I_A = A as functions, for I_A = size(A):1 and for the compact column-major layout of shape(A).",
        check_right_identity,
        expected="checked",
        parameters="A: flat layouts with strides of either sign",
        references=(TALK, WP),
        family=family_words(*RID_FAM),
        group=GROUP,
    ),
    Theorem(
        "composition.identities-symbolic",
        "Identity laws for symbolic layouts",
        "For all positive integers M, N, K: (M·N·K):1 ∘ (M,N):(1,M·K) = (M,N):(1,M·K); "
        "(M,N):(N,1) ∘ (M·N):1 = (M,N):(N,1); (M,N):(N,1) ∘ (M,N):(1,M) = (M,N):(N,1).",
        check_identities_symbolic,
        expected="proved",
        method="sympy",
        parameters="M, N, K: positive integers (symbolic)",
        references=(TALK,),
        group=GROUP,
    ),
    Theorem(
        "T6.associativity",
        "Composition is associative inside the domains",
        "(A∘B)∘C = A∘(B∘C) whenever the four compositions are admissible and no operand reads past "
        "its left operand's domain: image(B) ⊆ [0, size(A)) and image(C) ⊆ [0, size(B)).",
        check_associativity,
        expected="checked",
        parameters="A, B, C: flat layouts",
        assumptions=(
            "A∘B, B∘C, (A∘B)∘C, A∘(B∘C) admissible",
            "image(B) ⊆ [0, size(A))",
            "image(C) ⊆ [0, size(B))",
        ),
        references=("REFERENCES T6", TALK),
        family=f"A: {family_words(*AS_A)}; B: {family_words(*AS_B)}; C: {family_words(*AS_C)}",
        group=GROUP,
    ),
    Theorem(
        "composition.function-of-A",
        "Inside A's domain, A∘B depends only on A's function",
        "If image(B) ⊆ [0, size(A)) and A' has the same function as A (A' = coalesce(A), A' = (A, 1:0)), "
        "then A'∘B = A∘B as functions.",
        check_function_of_a,
        expected="checked",
        parameters="A, B: flat layouts",
        assumptions=("image(B) ⊆ [0, size(A))",),
        references=("docs/semantics.md §2.2", WP),
        family=f"A: {family_words(*FN_A)}; B: {family_words(*FN_B)}",
        group=GROUP,
    ),
    Theorem(
        "composition.symbolic",
        "Compositions with symbolic extents",
        "For all M, N with the stated divisibility: (M,N):(N,1) ∘ 4:1 = 4:N (M % 4 = 0); "
        "(M,N):(1,M) ∘ (8:1, 4:1) = (8,4):(1,M) (M % 8 = 0, N % 4 = 0); and the post-condition of "
        "(M,N):(N,1) ∘ 4:1, (M,N):(1,M) ∘ (8,4):(1,M) and (M,N):(1,M) ∘ (2,8):(8,1) (M % 16 = 0) holds.",
        check_symbolic,
        expected="proved",
        method="sympy+z3",
        parameters="M, N: positive integers (symbolic)",
        assumptions=("M % 4 == 0", "M % 8 == 0, N % 4 == 0", "M % 16 == 0"),
        references=("REFERENCES T5", WP, "docs/verify.md"),
        group=GROUP,
    ),
]
