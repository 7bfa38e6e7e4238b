"""T1 (complement) and T9 (inverses)."""

from __future__ import annotations

from typing import Any, List, Tuple

from layoutproof import (
    InadmissibleError,
    Layout,
    LayoutError,
    assuming,
    complement,
    left_inverse,
    right_inverse,
    symbols,
)
from layoutproof.verify import Counterexample, Result, identity, postcondition
from layoutproof.verify.families import compact_layouts, offsets, stride_chain

from ..kit import SKIP, fact, flat, for_all, greedy_tiling
from ..theorem import Theorem
from .shared import bounds_of, complement_of, family, family_words, first_diff

GROUP_C = "Complement (T1)"
GROUP_I = "Inverses (T9)"
WP = "Cecka, arXiv 2603.02298"
SHAH = "J. Shah, A note on the algebra of CuTe Layouts (Colfax, 2024)"
MAO = "Lei Mao, CuTe Layout Algebra / CuTe Inverse Layout (blog)"
SEED1 = "seed 001 (complement admissibility and definition)"

C_FAM = (3, 4, 4)
EX_FAM = (3, 4, 6, False, 1, 1)


def _cotargets(L: Layout) -> Tuple[int, ...]:
    c = L.cosize
    return (1, c, 2 * c + 1, 24)


def _modes(L: Layout) -> List[Tuple[int, int]]:
    """L's modes that matter to the complement (extent > 1, stride != 0), by stride."""
    fs, fd = flat(L)
    return sorted((d, s) for s, d in zip(fs, fd) if s != 1 and d != 0)


def _formula(L: Layout, M: int) -> Layout:
    """T1's complement: (d0, d1/(s0 d0), ..., M'/(s_a d_a)) : (1, s0 d0, ..., s_a d_a)."""
    shape, stride = [], []
    prev = 1
    for d, s in _modes(L):
        shape.append(d // prev)
        stride.append(prev)
        prev = s * d
    shape.append(-(-M // prev))
    stride.append(prev)
    return (
        Layout.trusted(tuple(shape), tuple(stride)) if len(shape) > 1 else Layout.trusted(shape[0], stride[0])
    )


def _cases() -> Any:
    for L in family(*C_FAM):
        for M in _cotargets(L):
            yield L, M


C_WORDS = f"L: {family_words(*C_FAM)}; M in {{1, cosize(L), 2·cosize(L)+1, 24}}"
C_BOUNDS = {**bounds_of(*C_FAM), "M": (1, 2 * 37 + 1)}


# ----------------------------------------------------------------------------- T1
def check_bijection() -> List[Result]:
    def case(m: Tuple[Layout, int]) -> Any:
        L, M = m
        C = complement_of(L, M)
        if isinstance(C, LayoutError):
            return SKIP
        modes = _modes(L)
        covered = modes[-1][0] * modes[-1][1] if modes else 1
        K = -(-M // covered) * covered
        fs, fd = flat(L)
        keep = [(s, d) for s, d in zip(fs, fd) if s != 1 and d != 0]
        core = (
            Layout.trusted(tuple(s for s, _ in keep), tuple(d for _, d in keep))
            if keep
            else Layout.trusted(1, 0)
        )
        v = offsets(core)
        w = offsets(C)
        allv = sorted(a + b for b in w for a in v)
        if allv != list(range(K)):
            return f"(L, C) with C = {C} is not a bijection onto [0, {K})"
        cs, cd = flat(C)
        if any(cd[k] > cd[k + 1] for k in range(len(cd) - 1) if cs[k] > 1 and cs[k + 1] > 1):
            return f"C = {C} is not ordered by stride"
        return None

    return [
        for_all(
            "(L, complement(L, M)) is a bijection onto [0, M') (M' = M rounded up to a multiple "
            "of what L covers; L's extent-1 and stride-0 modes ignored), and C is ordered",
            _cases(),
            case,
            family=C_WORDS,
            bounds=C_BOUNDS,
            names=("L", "M"),
        ),
        _seed_examples(),
    ]


def _seed_examples() -> Result:
    L = Layout((2, 4), (1, 2))
    C = complement(L, 16)
    B = Layout(8, 2)
    C2 = complement(B, 32)
    v2 = offsets(Layout.trusted((8, 2, 2), (2, 1, 16)))
    ok = (
        str(C) == "2:8"
        and sorted(offsets(Layout.trusted((2, 4, 2), (1, 2, 8)))) == list(range(16))
        and str(C2) == "(2,2):(1,16)"
        and sorted(v2) == list(range(32))
        and v2 != list(range(32))
    )
    return fact(
        "seed 001: complement((2,4):(1,2), 16) = 2:8 and complement(8:2, 32) = (2,2):(1,16); both "
        "concatenations are bijections of [0, 16) and [0, 32), the second not the identity",
        ok,
        f"got {C} and {C2}",
    )


def check_disjoint() -> Result:
    def case(m: Tuple[Layout, int]) -> Any:
        L, M = m
        C = complement_of(L, M)
        if isinstance(C, LayoutError):
            return SKIP
        common = set(offsets(L)) & set(offsets(C))
        if common != {0}:
            return f"image(L) ∩ image(C) = {sorted(common)} with C = {C}"
        return None

    return for_all(
        "image(L) ∩ image(complement(L, M)) = {0}",
        _cases(),
        case,
        family=C_WORDS,
        bounds=C_BOUNDS,
        names=("L", "M"),
    )


def check_formula() -> List[Result]:
    def case(m: Tuple[Layout, int]) -> Any:
        L, M = m
        C = complement_of(L, M)
        if isinstance(C, LayoutError):
            return SKIP
        F = _formula(L, M)
        a, b = offsets(C), offsets(F)
        if a != b:
            k = first_diff(a, b) if len(a) == len(b) else 0
            return f"complement = {C}, T1's formula gives {F} (first difference at {k})"
        return None

    K = symbols("K")
    return [
        for_all(
            "complement(L, M) = (d0, d1/(s0·d0), ..., ⌈M/(s_a·d_a)⌉):(1, s0·d0, ..., s_a·d_a) as functions, "
            "L's modes sorted by stride",
            _cases(),
            case,
            family=C_WORDS,
            bounds=C_BOUNDS,
            names=("L", "M"),
        ),
        identity(
            lambda M, N, K: complement(Layout((M, N), (1, M * K)), 4 * M * K * N),
            lambda M, N, K: Layout((K, 4), (M, M * K * N)),
            assume=["M >= 2", "N >= 2", "K >= 2"],
            claim="complement((M,N):(1,M*K), 4*M*K*N) == (K,4):(M,M*K*N)",
            bounds=False,
        ),
        identity(
            lambda K: complement(Layout(4, 2), 8 * K),
            lambda K: Layout((2, K), (1, 8)),
            claim="complement(4:2, 8*K) == (2,K):(1,8)",
            bounds=False,
        ),
        postcondition("complement", complement(Layout(4, 2), 8 * K), Layout(4, 2), 8 * K, bounds=False),
    ]


def check_existence() -> Result:
    stats = {"chain": 0, "no chain": 0}

    def case(L: Layout) -> Any:
        M = 2 * L.cosize
        C = complement_of(L, M)
        chain = stride_chain(L) is None
        if chain:
            stats["chain"] += 1
            if isinstance(C, LayoutError):
                return f"the stride chain holds, but complement raises: {C}"
            return None
        stats["no chain"] += 1
        if not isinstance(C, InadmissibleError):
            return f"the stride chain fails, but complement returns {C}"
        kind, where = greedy_tiling(offsets(L), 8 * L.cosize + 8)
        if kind != "collides":
            return (
                f"the stride chain fails, but translates of image(L) {kind} ({where}): a complement may exist"
            )
        return None

    r = for_all(
        "complement(L, M) is admissible iff L's modes (extent > 1, stride > 0), sorted by stride, "
        "chain: s(i-1)·d(i-1) | d(i); when they do not, no set C ∋ 0 at all (layout or not) makes "
        "(L, C) a bijection onto an interval [0, K)",
        family(*EX_FAM),
        case,
        family=family_words(*EX_FAM),
        bounds=bounds_of(*EX_FAM),
        names=("L",),
    )
    return r.replace(notes=list(r.notes) + [f"{stats['chain']} layouts chain, {stats['no chain']} do not"])


# ----------------------------------------------------------------------------- T9
RI_FAM = (3, 4, 3, True)
# left_inverse's exact decision searches; its post-condition and its admissibility decision are
# proved for all values at ranks 1-3 (sym.left-inverse-*), so this exhaustive family is a
# supplement, kept small enough for the main job.
LI_FAM = (3, 4, 4)


def check_right_inverse() -> List[Result]:
    def case(L: Layout) -> Any:
        try:
            R = right_inverse(L)
        except LayoutError as e:
            return f"right_inverse raises: {e}"
        v, r = offsets(L), offsets(R)
        if max(r) >= len(v) or min(r) < 0:
            return f"R = {R} leaves L's domain"
        got = [v[x] for x in r]
        k = first_diff(got, list(range(len(r))))
        if k >= 0:
            return Counterexample(coordinate=k, lhs=got[k], rhs=k, detail=f"R = {R}: L(R(i)) != i")
        return None

    M, N = symbols("M N")
    with assuming("M >= 2", "N >= 2"):
        L = Layout((M, N), (N, 1))
        sym = postcondition("right_inverse", right_inverse(L), L, bounds=False)
    return [
        for_all(
            "L(R(i)) = i for every i < size(R), R = right_inverse(L)",
            family(*RI_FAM),
            case,
            family=family_words(*RI_FAM),
            bounds=bounds_of(*RI_FAM),
            names=("L",),
        ),
        identity(
            lambda M, N: right_inverse(Layout((M, N), (N, 1))),
            lambda M, N: Layout((N, M), (M, 1)),
            assume=["M >= 2", "N >= 2"],
            claim="right_inverse((M,N):(N,1)) == (N,M):(M,1)",
            bounds=False,
        ),
        sym,
    ]


def check_left_inverse() -> List[Result]:
    stats = {"injective": 0, "not injective": 0}

    def case(L: Layout) -> Any:
        try:
            R = left_inverse(L)
        except LayoutError:
            return SKIP
        v, r = offsets(L), offsets(R)
        if max(v) >= len(r):
            return f"R = {R} does not reach L's offset {max(v)}"
        back = [r[x] for x in v]
        if len(set(v)) == len(v):
            stats["injective"] += 1
            k = first_diff(back, list(range(len(v))))
            if k >= 0:
                return Counterexample(coordinate=k, lhs=back[k], rhs=k, detail=f"R = {R}: R(L(i)) != i")
            return None
        stats["not injective"] += 1
        again = [v[x] for x in back]
        k = first_diff(again, v)
        if k >= 0:
            return Counterexample(coordinate=k, lhs=again[k], rhs=v[k], detail=f"R = {R}: L(R(L(i))) != L(i)")
        return None

    M, N = symbols("M N")
    with assuming("M >= 2", "N >= 2"):
        L = Layout((M, N), (N, 1))
        sym = postcondition("left_inverse", left_inverse(L), L, bounds=False)
    r = for_all(
        "R = left_inverse(L): R(L(i)) = i for every i when L is injective, L(R(L(i))) = L(i) always",
        family(*LI_FAM),
        case,
        family=family_words(*LI_FAM),
        bounds=bounds_of(*LI_FAM),
        names=("L",),
    )
    return [
        r.replace(notes=list(r.notes) + [f"{stats['injective']} injective, {stats['not injective']} not"]),
        sym,
    ]


def check_left_inverse_exists() -> Result:
    def case(L: Layout) -> Any:
        if stride_chain(L) is not None:
            return SKIP
        try:
            left_inverse(L)
        except LayoutError as e:
            return f"L has a complement (the stride chain holds) but left_inverse raises: {e}"
        return None

    return for_all(
        "left_inverse(L) is admissible whenever L's stride chain holds (L has a complement)",
        family(*LI_FAM),
        case,
        family=family_words(*LI_FAM),
        bounds=bounds_of(*LI_FAM),
        names=("L",),
    )


BJ_RANK, BJ_EXTENT = 4, 4


def check_bijective() -> Result:
    def case(L: Layout) -> Any:
        R, Q = right_inverse(L), left_inverse(L)
        n = L.size
        v, r, q = offsets(L), offsets(R), offsets(Q)
        if len(r) != n or len(q) != n:
            return f"right_inverse {R} / left_inverse {Q} do not have size {n}"
        if r != q:
            return f"right_inverse {R} != left_inverse {Q} as functions"
        if [v[x] for x in r] != list(range(n)) or [r[x] for x in v] != list(range(n)):
            return f"{R} is not the inverse permutation of L"
        RR = right_inverse(R)
        if offsets(RR) != v:
            return f"right_inverse(right_inverse(L)) = {RR} != L"
        return None

    return for_all(
        "for bijective L (onto [0, size)): right_inverse(L) = left_inverse(L) as functions, it is "
        "L's inverse permutation, and right_inverse(right_inverse(L)) = L",
        compact_layouts(BJ_RANK, BJ_EXTENT),
        case,
        family=f"every compact layout (every order of the column-major strides) of every flat shape of "
        f"rank 1..{BJ_RANK} with extents 1..{BJ_EXTENT}",
        bounds={"rank": (1, BJ_RANK), "extent": (1, BJ_EXTENT)},
        names=("L",),
    )


THEOREMS = [
    Theorem(
        "T1.complement-bijection",
        "(L, complement(L, M)) is a bijection onto [0, M')",
        "When complement(L, M) = C is admissible: (L, C) maps its domain bijectively onto [0, M'), "
        "M' = ⌈M/(s_a·d_a)⌉·s_a·d_a (L's modes sorted by stride; extent-1 and stride-0 modes ignored), "
        "and C is ordered (strides increase). Seed 001's two worked examples are instances.",
        check_bijection,
        expected="checked",
        parameters="L: flat layouts; M: positive integers",
        references=("REFERENCES T1", SHAH, MAO, SEED1),
        family=C_WORDS,
        group=GROUP_C,
    ),
    Theorem(
        "T1.complement-disjoint",
        "L and its complement meet only at 0",
        "image(L) ∩ image(complement(L, M)) = {0} whenever the complement is admissible.",
        check_disjoint,
        expected="checked",
        parameters="L: flat layouts; M: positive integers",
        references=("REFERENCES T1",),
        family=C_WORDS,
        group=GROUP_C,
    ),
    Theorem(
        "T1.complement-formula",
        "T1's formula for the complement",
        "For L = (s0..sa):(d0..da) sorted by stride and admissible: complement(L, M) = "
        "(d0, d1/(s0·d0), ..., ⌈M/(s_a·d_a)⌉) : (1, s0·d0, ..., s_a·d_a) as functions. Symbolically: "
        "complement((M,N):(1,M·K), 4·M·K·N) = (K,4):(M,M·K·N) (M, N, K ≥ 2) and complement(4:2, 8·K) = "
        "(2,K):(1,8) "
        "for every K ≥ 1, whose post-condition Z3 proves.",
        check_formula,
        expected="checked",
        method="exhaustive+sympy+z3",
        parameters="L: flat layouts; M: positive integers; M, N, K symbolic",
        references=("REFERENCES T1", SEED1, SHAH),
        family=C_WORDS,
        group=GROUP_C,
    ),
    Theorem(
        "T1.complement-exists-iff-chain",
        "A complement exists iff the strides chain",
        "complement(L, M) is admissible iff L's modes with extent > 1 and stride > 0, sorted by stride, "
        "satisfy s(i-1)·d(i-1) | d(i). When they do not, no set C with 0 ∈ C (a layout's image or not) "
        "makes (L, C) a bijection onto any interval [0, K): the forced greedy tiling by translates of "
        "image(L) collides.",
        check_existence,
        expected="checked",
        parameters="L: flat layouts with positive strides",
        references=("REFERENCES T1", SHAH, "docs/semantics.md §3"),
        family=family_words(*EX_FAM),
        group=GROUP_C,
    ),
    Theorem(
        "T9.right-inverse",
        "right_inverse is a right inverse",
        "R = right_inverse(L) maps into L's domain and L(R(i)) = i for every i < size(R); symbolically "
        "right_inverse((M,N):(N,1)) = (N,M):(M,1) for M, N ≥ 2, with its post-condition proved by Z3.",
        check_right_inverse,
        expected="checked",
        method="exhaustive+sympy+z3",
        parameters="L: flat layouts with strides of either sign; M, N symbolic",
        references=("REFERENCES T9", MAO, WP),
        family=family_words(*RI_FAM),
        group=GROUP_I,
    ),
    Theorem(
        "T9.left-inverse",
        "left_inverse is a left inverse on injective layouts",
        "Whenever R = left_inverse(L) is admissible: R(L(i)) = i for every i when L is injective, and "
        "L(R(L(i))) = L(i) for every i in any case; symbolically, the post-condition of "
        "left_inverse((M,N):(N,1)) is proved by Z3.",
        check_left_inverse,
        expected="checked",
        method="exhaustive+z3",
        parameters="L: flat layouts with non-negative strides; M, N symbolic",
        references=("REFERENCES T9", MAO, WP),
        family=family_words(*LI_FAM),
        group=GROUP_I,
    ),
    Theorem(
        "T9.left-inverse-exists",
        "Complementable layouts have a left inverse",
        "If L's modes satisfy T1's stride chain (L has a complement), left_inverse(L) is admissible.",
        check_left_inverse_exists,
        expected="checked",
        parameters="L: flat layouts with non-negative strides",
        references=("REFERENCES T1", "REFERENCES T9"),
        family=family_words(*LI_FAM),
        group=GROUP_I,
    ),
    Theorem(
        "T9.bijective-inverses-coincide",
        "For bijections, the inverses coincide",
        "For L a bijection onto [0, size(L)): right_inverse(L) = left_inverse(L) as functions, both are "
        "L's inverse permutation, and right_inverse(right_inverse(L)) = L.",
        check_bijective,
        expected="checked",
        parameters="L: compact layouts (bijections onto [0, size))",
        references=("REFERENCES T9", MAO),
        family=f"every compact layout of every flat shape of rank 1..{BJ_RANK} with extents 1..{BJ_EXTENT}",
        group=GROUP_I,
    ),
]
