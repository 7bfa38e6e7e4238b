"""Negative theorems: claims that are false, each refuted by the counterexample it names.

Each check evaluates the false claim exactly (exhaustively, on the named instance or on a
family searched in a fixed order) and must come out ``"refuted"``; the catalog compares
the counterexample found with the one the theorem expects.
"""

from __future__ import annotations

import itertools
from typing import Any, List, Tuple

from layoutproof import Layout, LayoutError, composition, left_inverse, zipped_divide
from layoutproof.verify import Result, admissible, compatible, equal, function
from layoutproof.verify.families import gemm_tilings, offsets, shapes

from ..kit import (
    SKIP,
    bymode,
    cpp_conditions,
    fact,
    for_all,
    greedy_tiling,
    left_divisible,
    reproducing_layout,
)
from ..theorem import Expect, Theorem
from .shared import compose, ext_offsets, family, family_words, first_diff, memo

GROUP = "Negative theorems (expected refutations)"
SHAH = "J. Shah, A note on the algebra of CuTe Layouts (Colfax, 2024)"
CARLISLE = "Carlisle, Shah, Stern, VanKoughnett, arXiv 2601.05972"
SEM = "docs/semantics.md"

SHAH_A, SHAH_B = Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))


def check_shah() -> List[Result]:
    A, B = SHAH_A, SHAH_B
    R = bymode(A, B)
    by = equal(R, function(lambda i: ext_offsets(A, [B(i)])[0], B.shape))
    by = by.replace(claim=f"by-mode (A∘B0, A∘B1) = {R} equals c -> A(B(c)) for A = {A}, B = {B}")
    return [by, admissible("composition", A, B)]


def check_complement_injective() -> Result:
    def case(L: Layout) -> Any:
        v = offsets(L)
        if len(set(v)) != len(v):
            return SKIP  # not injective: outside the claim's hypothesis
        kind, u = greedy_tiling(v, 8 * L.cosize + 8)
        if kind == "collides":
            return (
                f"L is injective, but the translate of image(L) forced at {u} overlaps: no C (a layout "
                "or any "
                "set containing 0) makes (L, C) a bijection onto an interval"
            )
        return None

    fam = (2, 4, 8)
    return for_all(
        "every injective layout L has a complement C: (L, C) a bijection onto some [0, K)",
        family(*fam),
        case,
        family=family_words(*fam) + " (in enumeration order)",
        bounds={"rank": (1, 2), "extent": (1, 4), "stride": (0, 8)},
        names=("L",),
    )


BM_A = (2, 3, 3, False, 2, 1)
BM_C = (1, 4, 6, False, 2, 1)


def check_bymode_associativity() -> List[Result]:
    bs = [B for B in family(*BM_A) if B.rank == 2]
    A, B, C = SHAH_A, SHAH_B, Layout(2, 5)
    lhs, rhs = bymode(bymode(A, B), C), bymode(A, bymode(B, C))
    named = equal(lhs, rhs).replace(
        claim=f"by-mode (A∘B)∘C = {lhs} equals A∘(B∘C) = {rhs} for A = {A}, B = {B}, C = {C}"
    )

    def case(m: Tuple[Layout, Layout, Layout]) -> Any:
        A, B, C = m
        try:
            AB = bymode(A, B)
            left = bymode(AB, C)
            BC = bymode(B, C)
            right = bymode(A, BC)
        except LayoutError:
            return SKIP
        a, b = offsets(left), offsets(right)
        k = first_diff(a, b)
        if k >= 0:
            return (
                f"(A∘B)∘C = {left} but A∘(B∘C) = {right} (by-mode compositions) at coordinate {k}: "
                f"{a[k]} != {b[k]}"
            )
        return None

    return [
        named,
        for_all(
            "C++'s by-mode composition is associative whenever every single-mode composition "
            "involved is admissible",
            itertools.product(family(*BM_A), bs, family(*BM_C)),
            case,
            family=f"A: {family_words(*BM_A)}; B: its rank-2 members; C: {family_words(*BM_C)}",
            bounds={"extent": (2, 4), "stride": (1, 6)},
            names=("A", "B", "C"),
        ),
    ]


AS_A = (2, 3, 3, False, 2, 1)
AS_C = (1, 4, 3, False, 2, 1)


def check_associativity_past_domain() -> Result:
    def case(m: Tuple[Layout, Layout, Layout]) -> Any:
        A, B, C = m
        AB, BC = compose(A, B), compose(B, C)
        if isinstance(AB, LayoutError) or isinstance(BC, LayoutError):
            return SKIP
        L, R = compose(AB, C), compose(A, BC)
        if isinstance(L, LayoutError) or isinstance(R, LayoutError):
            return SKIP
        a, b = offsets(L), offsets(R)
        k = first_diff(a, b)
        if k >= 0:
            return f"(A∘B)∘C = {L} but A∘(B∘C) = {R} at coordinate {k}: {a[k]} != {b[k]}"
        return None

    return for_all(
        "(A∘B)∘C = A∘(B∘C) whenever A∘B, B∘C, (A∘B)∘C and A∘(B∘C) are admissible (no domain condition)",
        itertools.product(_injective(family(*AS_A)), family(*AS_A), family(*AS_C)),
        case,
        family=f"A: the injective members of {family_words(*AS_A)}; B: all of them; C: "
        f"{family_words(*AS_C)} (in enumeration order)",
        bounds={"extent": (2, 4), "stride": (1, 3)},
        names=("A", "B", "C"),
    )


def _injective(Ls: Any) -> List[Layout]:
    return [L for L in Ls if len(set(offsets(L))) == L.size]


def check_prefix() -> List[Result]:
    A = Layout((4, 6), (1, 5))
    vals = [A(j) for j in range(6)]
    return [
        admissible("composition", A, Layout(6, 1)),
        fact(
            "some layout R of size 6 has R(j) = A(j) for j < 6 (brute force over every factorization of 6)",
            reproducing_layout(vals) is not None,
            f"no layout reproduces {vals}",
        ),
    ]


def check_left_inverse_right() -> Result:
    def case(L: Layout) -> Any:
        R = memo(left_inverse, L)
        if isinstance(R, LayoutError):
            return SKIP
        v, r = offsets(L), offsets(R)
        for i, x in enumerate(r):
            if x >= len(v) or v[x] != i:
                return f"R = left_inverse(L) = {R}: L(R({i})) = {v[x] if x < len(v) else 'undefined'} != {i}"
        return None

    fam = (2, 4, 4)
    return for_all(
        "R = left_inverse(L) is also a right inverse: L(R(i)) = i for every i < size(R)",
        family(*fam),
        case,
        family=family_words(*fam) + " (in enumeration order)",
        bounds={"rank": (1, 2), "extent": (1, 4), "stride": (0, 4)},
        names=("L",),
    )


def check_function_only() -> List[Result]:
    A, A2, B = Layout((4, 1), (1, 0)), Layout(4, 1), Layout(8, 1)
    same = equal(A, A2)
    diff = equal(composition(A, B), composition(A2, B))
    return [
        same,
        diff.replace(claim=f"{A} ∘ {B} = {composition(A, B)} equals {A2} ∘ {B} = {composition(A2, B)}"),
    ]


def check_cpp_necessary() -> List[Result]:
    A, B = Layout((4, 6, 8, 10), (2, 3, 5, 7)), Layout(6, 12)
    why = cpp_conditions(A, 6, 12)
    R = composition(A, B)
    ok = ext_offsets(A, [12 * j for j in range(6)]) == offsets(R)
    return [
        fact(
            f"A∘B is admissible only if C++'s conditions hold: A = {A}, B = {B}",
            why is None or not ok,
            f"A = {A}, B = {B}: C++'s {why} fails, yet A∘B = {R} (R(j) = Â(12·j) for every j)",
        )
    ]


def check_symmetric() -> List[Result]:
    return [compatible(4, (2, 2)), compatible((2, 2), 4)]


def check_sorting() -> List[Result]:
    L1 = Layout((2, 2), (3, 1))
    return [equal(L1, Layout((2, 2), (1, 3)))]


GT_MAX = 6


def check_divide_any_tile() -> Result:
    def case(m: Tuple[int, int, int, int]) -> Any:
        M, N, BM, BN = m
        R = memo(zipped_divide, Layout.trusted((M, N), (1, M)), (BM, BN))
        if isinstance(R, LayoutError):
            return f"zipped_divide raises: {R}"
        v = offsets(R)
        if sorted(v) != list(range(M * N)):
            return (
                f"R = {R} has {len(v)} coordinates and reaches offset {max(v)}: not a bijection onto "
                f"[0, {M * N})"
            )
        return None

    return for_all(
        "zipped_divide((M,N):(1,M), (BM,BN)) is a bijection onto [0, M·N) for every tile",
        gemm_tilings(GT_MAX, dividing=False),
        case,
        family=f"every M, N in 1..{GT_MAX} and every tile BM <= M, BN <= N (in enumeration order)",
        bounds={"M": (1, GT_MAX), "N": (1, GT_MAX)},
        names=("M", "N", "BM", "BN"),
    )


def check_t2_converse() -> Result:
    gen = (1, 1000, 1_000_000)

    def case(m: Tuple[Tuple[int, ...], int]) -> Any:
        S, d = m
        n = 1
        for s in S:
            n *= s
        if n % d:
            return SKIP
        A = Layout.trusted(S, gen[: len(S)]) if len(S) > 1 else Layout.trusted(S[0], 1)
        R = compose(A, Layout.trusted(n // d, d))
        if not isinstance(R, LayoutError) and not left_divisible(S, d):
            return f"A∘({n // d}:{d}) = {R} is a layout, but S is not left divisible by {d}"
        return None

    return for_all(
        "for d | size(S): if S:(1,1000,10^6) ∘ (size(S)/d):d is a layout, then S is left divisible by d",
        ((S, d) for S in shapes(3, 6) for d in range(1, 217)),
        case,
        family="S: every flat shape of rank 1..3, extents 1..6 (in enumeration order); d | size(S)",
        bounds={"rank": (1, 3), "extent": (1, 6)},
        names=("S", "d"),
    )


THEOREMS = [
    Theorem(
        "neg.shah-bymode-composition",
        "Composition is not unconditionally left distributive (Shah)",
        "Claim (false): for all A and B = (B0, B1) with each A∘Bi admissible, the by-mode result "
        "(A∘B0, A∘B1) computed by CuTe C++, PyCuTe and legacy pycute is A∘B. Refuted by A = (6,2):(1,7), "
        "B = (3,2):(2,3): the by-mode result (3,2):(2,3) gives 7 at coordinate 5 = (2,1), but A(B(5)) = "
        "A(7) = 8; "
        "layoutproof's composition rejects the pair (disjointness of B's modes in A, witness 5).",
        check_shah,
        expected="refuted",
        parameters="A, B: layouts",
        references=(SHAH, "REFERENCES T4", f"{SEM} §2.3"),
        expect=Expect(coordinate=5, lhs=7, rhs=8),
        group=GROUP,
    ),
    Theorem(
        "neg.complement-iff-injective",
        "Injective layouts need not have a complement",
        "Claim (false): every injective layout L has a complement (some C with (L, C) a bijection onto an "
        "interval). Searching every flat layout of rank ≤ 2, extents ≤ 4, strides ≤ 8 in order, the first "
        "counterexample is L = (2,2):(1,3): image {0,1,3,4}; 2 must be covered by a translate C(y) = 2, "
        "which "
        "collides with 1 + 2 = 3 = 3 + 0.",
        check_complement_injective,
        expected="refuted",
        parameters="L: flat layouts",
        references=("REFERENCES T1", SHAH, f"{SEM} §3"),
        family=family_words(2, 4, 8),
        expect=Expect(instance="L = (2,2):(1,3)"),
        group=GROUP,
    ),
    Theorem(
        "neg.bymode-associativity",
        "By-mode composition is not associative",
        "Claim (false): CuTe's by-mode composition (no disjointness check) is associative whenever every "
        "single-mode composition involved is admissible. Refuted by Shah's A = (6,2):(1,7), B = (3,2):(2,3) "
        "with C = 2:5: (A∘B)∘C = 2:7 but A∘(B∘C) = 2:8 (and A(B(C(1))) = A(7) = 8); a search of small "
        "layouts "
        "finds more, the first A = (2,2):(1,1), B = (2,2):(1,1), C = 2:3. layoutproof rejects such A∘B "
        "(disjointness).",
        check_bymode_associativity,
        expected="refuted",
        parameters="A, B, C: flat layouts",
        references=("REFERENCES T6", SHAH),
        family=f"A: {family_words(*BM_A)}; B: its rank-2 members; C: {family_words(*BM_C)}",
        expect=Expect(coordinate=1, lhs=7, rhs=8),
        group=GROUP,
    ),
    Theorem(
        "neg.associativity-past-domain",
        "Associativity needs the domain condition",
        "Claim (false): (A∘B)∘C = A∘(B∘C) whenever the four compositions are admissible. CuTe extends a "
        "composition's left operand past its size along its last mode, and the two sides extend different "
        "layouts. The first counterexample in enumeration order (A injective) is A = (2,2):(1,3), B = 2:1, "
        "C = 2:2: A∘B = 2:1 and (A∘B)∘C = 2:2, but B∘C = 2:2 and A∘(B∘C) = 2:3 (C reads past size(B)). "
        "With image(C) ⊆ [0, size(B)) and image(B) ⊆ [0, size(A)) the law holds (T6.associativity).",
        check_associativity_past_domain,
        expected="refuted",
        parameters="A, B, C: flat layouts",
        references=("REFERENCES T6", f"{SEM} §2.2"),
        family=f"A: the injective members of {family_words(*AS_A)}; B: all of them; C: {family_words(*AS_C)}",
        expect=Expect(instance="A = (2,2):(1,3), B = 2:1, C = 2:2"),
        group=GROUP,
    ),
    Theorem(
        "neg.prefix-composition",
        "A prefix of a layout need not be a layout ((4,6):(1,5) ∘ 6:1)",
        "Claim (false): for every layout A and n ≤ size(A), A∘(n:1) exists: some layout of size n has the "
        "values A(0), ..., A(n-1). Refuted by A = (4,6):(1,5), n = 6: the values 0,1,2,3,5,6 step by 2 at "
        "coordinate 4, and no layout of size 6 reproduces them (brute force over every factorization); "
        "layoutproof raises shape divisibility with witness 4, where legacy pycute returns a size-4 layout.",
        check_prefix,
        expected="refuted",
        parameters="A: layouts; n ≤ size(A)",
        references=("REFERENCES T5", f"{SEM} §2.3", "DESIGN.md (known cases)"),
        expect=Expect(coordinate=4, condition="shape divisibility"),
        group=GROUP,
    ),
    Theorem(
        "neg.left-inverse-is-right-inverse",
        "A left inverse is not a right inverse",
        "Claim (false): R = left_inverse(L) also satisfies L(R(i)) = i for every i < size(R). The first "
        "counterexample in enumeration order is L = 2:2, R = (2,2):(0,1): L(R(1)) = L(0) = 0 ≠ 1 (R maps the "
        "gaps of L's image through stride-0 modes).",
        check_left_inverse_right,
        expected="refuted",
        parameters="L: flat layouts",
        references=("REFERENCES T9", "Lei Mao, CuTe Inverse Layout"),
        family=family_words(2, 4, 4),
        expect=Expect(instance="L = 2:2"),
        group=GROUP,
    ),
    Theorem(
        "neg.composition-function-only",
        "Past size(A), composition depends on more than A's function",
        "Claim (false): A ≡ A' as functions implies A∘B ≡ A'∘B. Refuted by A = (4,1):(1,0) ≡ A' = 4:1 and "
        "B = 8:1: A∘B = (4,2):(1,0) (A's own last mode, stride 0, is extended) but A'∘B = 8:1; they "
        "differ at "
        "coordinate 4 (0 ≠ 4). Inside size(A) the claim holds (composition.function-of-A).",
        check_function_only,
        expected="refuted",
        parameters="A, A', B: layouts",
        references=(f"{SEM} §2.2",),
        expect=Expect(coordinate=4, lhs=0, rhs=4),
        group=GROUP,
    ),
    Theorem(
        "neg.cpp-conditions-necessary",
        "C++'s divisibility conditions are not necessary",
        "Claim (false): A∘(n:r) is admissible only when CuTe C++'s stride and shape divisibility hold. "
        "Refuted by Carlisle et al.'s (4,6,8,10):(2,3,5,7) ∘ 6:12: shape divisibility fails (C++: 'Static "
        "shape_div failure'), yet (2,3):(9,5) is the composition.",
        check_cpp_necessary,
        expected="refuted",
        parameters="A: layouts; n, r ≥ 1",
        references=(CARLISLE, "REFERENCES T3", "REFERENCES T5"),
        expect=Expect(instance="A = (4,6,8,10):(2,3,5,7), B = 6:12", text="shape divisibility fails"),
        group=GROUP,
    ),
    Theorem(
        "neg.compatibility-symmetric",
        "Compatibility is not symmetric",
        "Claim (false): S ≤ T implies T ≤ S. 4 ≤ (2,2) (an integer coordinate fits any shape of its size), "
        "but (2,2) is not compatible with 4 (a pair coordinate does not fit an integer mode).",
        check_symmetric,
        expected="refuted",
        parameters="S, T: shapes",
        references=("REFERENCES T11", "seed 000"),
        expect=Expect(text="is not a tuple"),
        group=GROUP,
    ),
    Theorem(
        "neg.sorting-preserves-function",
        "Sorting a layout's modes changes its function",
        "Claim (false): sorting the modes of a layout by stride preserves its function. Seed 001's "
        "L1 = (2,2):(3,1) and sorted(L1) = (2,2):(1,3) differ at coordinate 1 (3 ≠ 1): L1 is row-major, "
        "sorted(L1) column-major.",
        check_sorting,
        expected="refuted",
        parameters="L: layouts",
        references=("seed 001 (sorted layouts)",),
        expect=Expect(coordinate=1, lhs=3, rhs=1),
        group=GROUP,
    ),
    Theorem(
        "neg.divide-any-tile",
        "A tile that does not divide the matrix does not tile it exactly",
        "Claim (false): zipped_divide of an M×N matrix by any tile (BM,BN) is a bijection onto its elements. "
        "The first counterexample in enumeration order is M = 1, N = 3, tile (1,2): the divide has "
        "⌈3/2⌉·2 = 4 "
        "coordinates and reaches offset 3, outside the matrix (kernels predicate such tails).",
        check_divide_any_tile,
        expected="refuted",
        parameters="M, N, BM, BN: positive integers",
        references=("gemm.zipped-divide-exhaustive", "Colfax Research, CuTe tutorials"),
        family=f"every M, N in 1..{GT_MAX} and every tile BM <= M, BN <= N",
        expect=Expect(instance="M = 1, N = 3, BM = 1, BN = 2"),
        group=GROUP,
    ),
    Theorem(
        "neg.t2-converse",
        "Composability does not imply left divisibility",
        "Claim (false): for d | size(S), if S:(generic strides) ∘ (size(S)/d):d is a layout, S is left "
        "divisible by d. The first counterexample is S = (2,3), d = 3: A∘2:3 = 2:1001 is a layout (any two "
        "values are), although S is not left divisible by 3; a larger one is S = (3,4), d = 4 (values "
        "0, 1001, 2002). T2's divisibility is sufficient (T3.divisibility-sufficient), not necessary.",
        check_t2_converse,
        expected="refuted",
        parameters="S: flat shapes; d | size(S)",
        references=("REFERENCES T2", CARLISLE),
        family="S: every flat shape of rank 1..3, extents 1..6",
        expect=Expect(instance="S = (2,3), d = 3"),
        group=GROUP,
    ),
]
