"""Divides and products (T7, T8), their regroupings and sizes, and GEMM tiling."""

from __future__ import annotations

import itertools
from typing import Any, Callable, List, Tuple

from layoutproof import (
    Layout,
    LayoutError,
    assuming,
    blocked_product,
    complement,
    composition,
    flat_divide,
    flat_product,
    local_partition,
    local_tile,
    logical_divide,
    logical_product,
    make_layout,
    make_tensor,
    raked_product,
    size,
    symbols,
    tiled_divide,
    tiled_product,
    zipped_divide,
    zipped_product,
)
from layoutproof.verify import Result, identity, postcondition
from layoutproof.verify.families import gemm_tilings, offsets

from ..kit import SKIP, for_all, sympy_equal, z3_claim
from ..theorem import Theorem
from .shared import bounds_of, family, family_words, memo

GROUP_D = "Divides and products (T7, T8)"
GROUP_G = "GEMM tiling"
WP = "Cecka, arXiv 2603.02298"
TALK = "seed 004 (Cecka's GTC talk)"
COLFAX = "Colfax Research, CuTe tutorials (tiling and partitioning)"

DA = (2, 4, 3)
DB = (2, 3, 2, False, 2, 1)


def _same(X: Any, Y: Any) -> bool:
    return X.shape == Y.shape and X.stride == Y.stride


def _both(X: Any, Y: Any, what: str) -> Any:
    """Both raise, or both return the same layout (shape and stride)."""
    ex, ey = isinstance(X, LayoutError), isinstance(Y, LayoutError)
    if ex and ey:
        return None
    if ex != ey:
        return f"{what}: one side raises ({X if ex else Y}), the other is {Y if ex else X}"
    if not _same(X, Y):
        return f"{what}: {X} != {Y}"
    return None


DPAIR_WORDS = f"A: {family_words(*DA)}; B: {family_words(*DB)}"
DPAIR_BOUNDS = {**bounds_of(*DA, prefix="A."), **bounds_of(*DB, prefix="B.")}


def _dpairs() -> Any:
    return itertools.product(family(*DA), family(*DB))


def _definition(A: Layout, B: Layout) -> Any:
    C = memo(complement, B, A.size)
    if isinstance(C, LayoutError):
        return C
    return memo(composition, A, make_layout(B, C))


# ----------------------------------------------------------------------------- T7
def check_divide_definition() -> Result:
    def case(m: Tuple[Layout, Layout]) -> Any:
        A, B = m
        return _both(memo(logical_divide, A, B), _definition(A, B), "logical_divide(A, B) vs A∘(B, B*)")

    return for_all(
        "logical_divide(A, B) = A∘(B, complement(B, size(A))): both inadmissible, or the same "
        "shape and strides",
        _dpairs(),
        case,
        family=DPAIR_WORDS,
        bounds=DPAIR_BOUNDS,
        names=("A", "B"),
    )


def check_zipped_mode0() -> Result:
    def case(m: Tuple[Layout, Layout]) -> Any:
        A, B = m
        Z = memo(zipped_divide, A, B)
        if isinstance(Z, LayoutError):
            return SKIP
        R = memo(composition, A, B)
        if isinstance(R, LayoutError):
            return f"zipped_divide is admissible but A∘B raises: {R}"
        if not _same(Z[0], R):
            return f"layout<0>(zipped_divide(A, B)) = {Z[0]} != A∘B = {R}"
        return None

    return for_all(
        "layout<0>(zipped_divide(A, B)) = A∘B",
        _dpairs(),
        case,
        family=DPAIR_WORDS,
        bounds=DPAIR_BOUNDS,
        names=("A", "B"),
    )


def check_divide_sizes() -> Result:
    def case(m: Tuple[Layout, Layout]) -> Any:
        A, B = m
        D = memo(logical_divide, A, B)
        if isinstance(D, LayoutError):
            return SKIP
        C = memo(complement, B, A.size)
        K = B.size * C.size  # (B, C) fills [0, K): K is size(A) rounded up (T1)
        if K < A.size:
            return f"(B, B*) fills [0, {K}), less than size(A) = {A.size}"
        if D.size != K or D[0].size != B.size or D[1].size != C.size:
            return (
                f"logical_divide = {D}: sizes {D.size}, {D[0].size}, {D[1].size} "
                f"(expected {K}, {B.size}, {C.size})"
            )
        if A.size % B.cosize == 0 and D.size != A.size and _chain_compact(B):
            return (
                f"B = {B} is compact and cosize(B) | size(A), but size(logical_divide) = {D.size} != {A.size}"
            )
        return None

    return for_all(
        "size(logical_divide(A, B)) = size(B)·size(B*) ≥ size(A) with mode sizes size(B) and "
        "size(B*) (B* = complement(B, size(A))); = size(A) when B is compact and cosize(B) | size(A)",
        _dpairs(),
        case,
        family=DPAIR_WORDS,
        bounds=DPAIR_BOUNDS,
        names=("A", "B"),
    )


def _chain_compact(B: Layout) -> bool:
    return sorted(offsets(B)) == list(range(B.size))


TILERS = (1, 2, 3, 4)


def check_divide_regrouping() -> Result:
    def case(m: Tuple[Layout, Tuple[int, int]]) -> Any:
        A, T = m
        L = memo(logical_divide, A, T)
        if isinstance(L, LayoutError):
            return SKIP
        t0, r0, t1, r1 = L[0][0], L[0][1], L[1][0], L[1][1]
        want = {
            "zipped_divide": make_layout(make_layout(t0, t1), make_layout(r0, r1)),
            "tiled_divide": make_layout(make_layout(t0, t1), r0, r1),
            "flat_divide": make_layout(t0, t1, r0, r1),
        }
        for name, fn in (
            ("zipped_divide", zipped_divide),
            ("tiled_divide", tiled_divide),
            ("flat_divide", flat_divide),
        ):
            X = memo(fn, A, T)
            if isinstance(X, LayoutError):
                return f"{name} raises although logical_divide does not: {X}"
            if not _same(X, want[name]):
                return f"{name}(A, {T}) = {X}, expected {want[name]} from logical_divide = {L}"
        for k in range(2):
            mk = memo(logical_divide, A[k], Layout.trusted(T[k], 1))
            if isinstance(mk, LayoutError) or not _same(L[k], mk):
                return (
                    f"mode {k} of logical_divide(A, {T}) = {L[k]} is not "
                    f"logical_divide(A[{k}], {T[k]}) = {mk}"
                )
        return None

    As = [A for A in family(*DA) if A.rank == 2]
    return for_all(
        "for a rank-2 A and a tiler (t0, t1): logical_divide(A, (t0,t1)) = (A0 ⊘ t0, A1 ⊘ t1) "
        "= ((T0,R0),(T1,R1)), zipped_divide = ((T0,T1),(R0,R1)), tiled_divide = ((T0,T1),R0,R1), "
        "flat_divide = (T0,T1,R0,R1) (shapes and strides)",
        itertools.product(As, itertools.product(TILERS, TILERS)),
        case,
        family=f"A: every rank-2 layout with extents 1..{DA[1]}, strides 0..{DA[2]}; (t0, t1) in "
        f"{{{TILERS[0]}..{TILERS[-1]}}}²",
        bounds={"A.extent": (1, DA[1]), "A.stride": (0, DA[2]), "t": (TILERS[0], TILERS[-1])},
        names=("A", "tiler"),
    )


# ----------------------------------------------------------------------------- T8
PA = (2, 4, 2)
PB = (2, 3, 2)


def check_product_definition() -> Result:
    def case(m: Tuple[Layout, Layout]) -> Any:
        A, B = m
        P = memo(logical_product, A, B)
        C = memo(complement, A, A.size * B.cosize)
        rhs = C if isinstance(C, LayoutError) else memo(composition, C, B)
        if not isinstance(rhs, LayoutError):
            rhs = make_layout(A, rhs)
        return _both(P, rhs, "logical_product(A, B) vs (A, A*∘B)")

    return for_all(
        "logical_product(A, B) = (A, complement(A, size(A)·cosize(B)) ∘ B): both inadmissible, or "
        "the same shape and strides",
        itertools.product(family(*PA), family(*PB)),
        case,
        family=f"A: {family_words(*PA)}; B: {family_words(*PB)}",
        bounds={**bounds_of(*PA, prefix="A."), **bounds_of(*PB, prefix="B.")},
        names=("A", "B"),
    )


def check_product_regrouping() -> List[Result]:
    def case(m: Tuple[Layout, Layout]) -> Any:
        A, B = m
        P = memo(logical_product, A, B)
        if isinstance(P, LayoutError):
            return SKIP
        a0, a1, c0, c1 = P[0][0], P[0][1], P[1][0], P[1][1]
        for name, fn, want in (
            ("blocked_product", blocked_product, make_layout(make_layout(a0, c0), make_layout(a1, c1))),
            ("raked_product", raked_product, make_layout(make_layout(c0, a0), make_layout(c1, a1))),
        ):
            X = memo(fn, A, B)
            if isinstance(X, LayoutError):
                return f"{name} raises although logical_product does not: {X}"
            if not _same(X, want):
                return f"{name}(A, B) = {X}, expected {want} from logical_product = {P}"
        return None

    def tcase(m: Tuple[Layout, Tuple[int, int]]) -> Any:
        A, T = m
        P0, P1 = (
            memo(logical_product, A[0], Layout.trusted(T[0], 1)),
            memo(logical_product, A[1], Layout.trusted(T[1], 1)),
        )
        if isinstance(P0, LayoutError) or isinstance(P1, LayoutError):
            return SKIP
        L = memo(logical_product, A, T)
        if isinstance(L, LayoutError) or not _same(L, make_layout(P0, P1)):
            return f"logical_product(A, {T}) = {L} is not by mode ({P0}, {P1})"
        want = {
            "zipped_product": make_layout(make_layout(P0[0], P1[0]), make_layout(P0[1], P1[1])),
            "tiled_product": make_layout(make_layout(P0[0], P1[0]), P0[1], P1[1]),
            "flat_product": make_layout(P0[0], P1[0], P0[1], P1[1]),
        }
        for name, fn in (
            ("zipped_product", zipped_product),
            ("tiled_product", tiled_product),
            ("flat_product", flat_product),
        ):
            X = memo(fn, A, T)
            if isinstance(X, LayoutError) or not _same(X, want[name]):
                return f"{name}(A, {T}) = {X}, expected {want[name]}"
        return None

    A2 = [A for A in family(*PA) if A.rank == 2]
    B2 = [B for B in family(*PB) if B.rank == 2]
    return [
        for_all(
            "for rank-2 A, B with logical_product(A, B) = ((A0,A1),(C0,C1)): blocked_product(A, B) = "
            "((A0,C0),(A1,C1)) and raked_product(A, B) = ((C0,A0),(C1,A1)) (a permutation of the modes)",
            itertools.product(A2, B2),
            case,
            family=f"A: every rank-2 layout with extents 1..{PA[1]}, strides 0..{PA[2]}; "
            f"B: every rank-2 layout with extents 1..{PB[1]}, strides 0..{PB[2]}",
            bounds={
                "A.extent": (1, PA[1]),
                "A.stride": (0, PA[2]),
                "B.extent": (1, PB[1]),
                "B.stride": (0, PB[2]),
            },
            names=("A", "B"),
        ),
        _tiler_products(A2, tcase),
    ]


def _tiler_products(A2: List[Layout], tcase: Callable[[Any], Any]) -> Result:
    return for_all(
        "for a rank-2 A and a tiler (t0, t1): logical_product(A, (t0,t1)) = (A0 ⊗ t0, A1 ⊗ t1) "
        "by mode, and with P_k = A_k ⊗ t_k: zipped_product = ((P0[0],P1[0]),(P0[1],P1[1])), "
        "tiled_product = ((P0[0],P1[0]),P0[1],P1[1]), flat_product = (P0[0],P1[0],P0[1],P1[1])",
        itertools.product(A2, itertools.product(TILERS, TILERS)),
        tcase,
        family=f"A: every rank-2 layout with extents 1..{PA[1]}, strides 0..{PA[2]}; (t0, t1) in "
        f"{{{TILERS[0]}..{TILERS[-1]}}}²",
        bounds={"A.extent": (1, PA[1]), "A.stride": (0, PA[2]), "t": (TILERS[0], TILERS[-1])},
        names=("A", "tiler"),
    )


def check_product_sizes() -> List[Result]:
    products = (logical_product, blocked_product, raked_product, zipped_product, tiled_product, flat_product)

    def case(m: Tuple[Layout, Layout]) -> Any:
        A, B = m
        for fn in products:
            P = memo(fn, A, B)
            if isinstance(P, LayoutError):
                return SKIP
            if P.size != A.size * B.size:
                return f"size({fn.__name__}(A, B)) = {P.size} != {A.size}·{B.size}"
        Bk = memo(blocked_product, A, B)
        r = max(A.rank, B.rank)
        for k in range(r):
            a = A[k].size if k < A.rank else 1
            b = B[k].size if k < B.rank else 1
            if Bk[k].size != a * b:
                return f"mode {k} of blocked_product(A, B) = {Bk} has size {Bk[k].size} != {a}·{b}"
        return None

    return [
        for_all(
            "size(X(A, B)) = size(A)·size(B) for X = logical, blocked, raked, zipped, tiled, flat product; "
            "mode k of blocked_product(A, B) has size size(A_k)·size(B_k)",
            itertools.product(family(*PA), family(*PB)),
            case,
            family=f"A: {family_words(*PA)}; B: {family_words(*PB)}",
            bounds={**bounds_of(*PA, prefix="A."), **bounds_of(*PB, prefix="B.")},
            names=("A", "B"),
        ),
        identity(
            lambda M, N: logical_product(Layout(M, 1), Layout(N, 1)),
            lambda M, N: Layout((M, N), (1, M)),
            assume=["M >= 2", "N >= 2"],
            claim="logical_product(M:1, N:1) == (M,N):(1,M)",
            bounds=False,
        ),
        identity(
            lambda M, N: size(blocked_product(Layout((M, N), (1, M)), Layout((4, 2), (1, 4)))),
            lambda M, N: 8 * M * N,
            assume=["M >= 2", "N >= 2"],
            claim="size(blocked_product((M,N):(1,M), (4,2):(1,4))) == 8*M*N",
            bounds=False,
        ),
    ]


def check_divide_symbolic() -> List[Result]:
    M, N = symbols("M N")
    out = [
        identity(
            lambda M, N: logical_divide(Layout((M, N), (1, M)), (64, 32)),
            lambda M, N: Layout(((64, M / 64), (32, N / 32)), ((1, 64), (M, 32 * M))),
            assume=["M % 64 == 0", "N % 32 == 0"],
            claim="logical_divide((M,N):(1,M), (64,32)) == ((64,M/64),(32,N/32)):((1,64),(M,32*M))",
            bounds=False,
        )
    ]
    with assuming("M % 64 == 0", "N % 32 == 0"):
        L = Layout((M, N), (1, M))
        out.append(postcondition("logical_divide", logical_divide(L, (64, 32)), L, (64, 32), bounds=False))
    out.append(
        identity(
            lambda M, N: size(logical_divide(Layout((M, N), (1, M)), Layout(8, 1))),
            lambda M, N: M * N,
            assume=["(M*N) % 8 == 0"],
            claim="size(logical_divide((M,N):(1,M), 8:1)) == M*N  ((M*N) % 8 == 0)",
            bounds=False,
        )
    )
    return out


# ----------------------------------------------------------------------------- GEMM
GEMM_TILES = ((128, 64), (16, 8))


def check_gemm_symbolic() -> List[Result]:
    import sympy as sp

    M, N = symbols("M N")
    i, j, m, n, i2, j2, m2, n2 = sp.symbols("i j m n i2 j2 m2 n2", integer=True, nonnegative=True)
    out: List[Result] = []
    for BM, BN in GEMM_TILES:
        facts = (sp.Eq(sp.Mod(M, BM), 0), sp.Eq(sp.Mod(N, BN), 0))
        for major, A in (("column-major", Layout((M, N), (1, M))), ("row-major", Layout((M, N), (N, 1)))):
            with assuming(f"M % {BM} == 0", f"N % {BN} == 0"):
                R = zipped_divide(A, (BM, BN))
                v, v2 = R(((i, j), (m, n))), R(((i2, j2), (m2, n2)))
                elem = A(BM * m + i, BN * n + j)
            rshape: Any = R.shape  # ((BM, BN), (M/BM, N/BN)): nested, so indexed as Any
            ext = rshape[0] + rshape[1]

            def dom(a: Any, b: Any, c: Any, d: Any, ext: Any = ext) -> Any:
                return sp.And(a < ext[0], b < ext[1], c < ext[2], d < ext[3])

            tag = f"{major} (M,N), tile ({BM},{BN}): R = zipped_divide(A, ({BM},{BN})) = {R}"
            out.append(sympy_equal(f"{tag}: size(R) == M*N", R.size, M * N))
            out.append(sympy_equal(f"{tag}: R((i,j),(m,n)) == A({BM}*m + i, {BN}*n + j)", v, elem))
            out.append(
                z3_claim(
                    f"{tag}: 0 <= R(c) < M*N on R's domain",
                    sp.Implies(dom(i, j, m, n), sp.And(v >= 0, v < M * N)),
                    facts,
                )
            )
            out.append(
                z3_claim(
                    f"{tag}: R is injective on its domain",
                    sp.Implies(
                        sp.And(dom(i, j, m, n), dom(i2, j2, m2, n2), sp.Eq(v, v2)),
                        sp.And(sp.Eq(i, i2), sp.Eq(j, j2), sp.Eq(m, m2), sp.Eq(n, n2)),
                    ),
                    facts,
                )
            )
    return out


GEMM_MAX = 20


def check_gemm_exhaustive() -> Result:
    def case(m: Tuple[int, int, int, int, str]) -> Any:
        M, N, BM, BN, major = m
        A = Layout.trusted((M, N), (1, M) if major == "col" else (N, 1))
        R = memo(zipped_divide, A, (BM, BN))
        if isinstance(R, LayoutError):
            return f"zipped_divide raises: {R}"
        v = offsets(R)
        if sorted(v) != list(range(M * N)):
            return f"R = {R} does not visit every element exactly once"
        p = M // BM
        got = 0
        for k, x in enumerate(v):  # R's 1-D coordinate k -> ((i, j), (m, n)), colexicographic
            i, j, mm, nn = k % BM, (k // BM) % BN, (k // (BM * BN)) % p, k // (BM * BN * p)
            row, col = mm * BM + i, nn * BN + j
            want = row + M * col if major == "col" else row * N + col
            if x != want:
                return f"R = {R}: R(({i},{j}),({mm},{nn})) = {x}, but element ({row},{col}) is at {want}"
            got += 1
        return None

    cases = ((M, N, BM, BN, major) for M, N, BM, BN in gemm_tilings(GEMM_MAX) for major in ("col", "row"))
    return for_all(
        "zipped_divide(A, (BM,BN)) of an M×N matrix A (column- or row-major), BM | M, BN | N, "
        "maps ((i,j),(m,n)) to element (m·BM + i, n·BN + j) and visits every element exactly once",
        cases,
        case,
        family=f"every M, N in 1..{GEMM_MAX}, every tile BM | M, BN | N, both majors",
        bounds={"M": (1, GEMM_MAX), "N": (1, GEMM_MAX)},
        names=("M", "N", "BM", "BN", "major"),
    )


TILE_MAX = 8


def check_local_tile() -> Result:
    import numpy as np

    def case(m: Tuple[int, int, int, int]) -> Any:
        M, N, BM, BN = m
        data = np.arange(M * N)
        mat = make_tensor(data, Layout.trusted((M, N), (1, M)))
        seen = np.zeros(M * N, dtype=np.int64)
        for tm in range(M // BM):
            for tn in range(N // BN):
                T = local_tile(mat, (BM, BN), (tm, tn))
                if T.shape != (BM, BN):
                    return f"tile ({tm},{tn}) has shape {T.shape}"
                idx = [T.offset + x for x in offsets(T.layout)]
                want = [(tm * BM + i) + M * (tn * BN + j) for j in range(BN) for i in range(BM)]
                if idx != want:
                    return f"tile ({tm},{tn}) = {T.layout} + {T.offset} is not mA[{tm}·{BM}:, {tn}·{BN}:]"
                seen[idx] += 1
        if not (seen == 1).all():
            return f"elements covered {seen.tolist()} times"
        return None

    return for_all(
        "the tiles local_tile(mA, (BM,BN), (m,n)) of an M×N matrix (BM | M, BN | N) are "
        "mA[m·BM:(m+1)·BM, n·BN:(n+1)·BN] and cover every element exactly once",
        gemm_tilings(TILE_MAX),
        case,
        family=f"every M, N in 1..{TILE_MAX}, every tile BM | M, BN | N",
        bounds={"M": (1, TILE_MAX), "N": (1, TILE_MAX)},
        names=("M", "N", "BM", "BN"),
    )


def check_local_partition() -> Result:
    import numpy as np

    def threads() -> Any:
        for BM, BN in itertools.product(range(1, TILE_MAX + 1), repeat=2):
            for TM in range(1, BM + 1):
                if BM % TM:
                    continue
                for TN in range(1, BN + 1):
                    if BN % TN:
                        continue
                    for order in ("col", "row"):
                        yield BM, BN, TM, TN, order

    def case(m: Tuple[int, int, int, int, str]) -> Any:
        BM, BN, TM, TN, order = m
        tile = make_tensor(np.arange(BM * BN), Layout.trusted((BM, BN), (1, BM)))
        thr = Layout.trusted((TM, TN), (1, TM) if order == "col" else (TN, 1))
        seen = np.zeros(BM * BN, dtype=np.int64)
        for tid in range(TM * TN):
            P = local_partition(tile, thr, tid)
            tm, tn = (tid % TM, tid // TM) if order == "col" else (tid // TN, tid % TN)
            idx = [P.offset + x for x in offsets(P.layout)]
            want = [(a * TM + tm) + BM * (b * TN + tn) for b in range(BN // TN) for a in range(BM // TM)]
            if idx != want:
                return (
                    f"thread {tid} ({tm},{tn}) gets {P.layout} + {P.offset}, not the elements "
                    f"≡ ({tm},{tn}) mod ({TM},{TN})"
                )
            seen[idx] += 1
        if not (seen == 1).all():
            return f"elements covered {seen.tolist()} times"
        return None

    return for_all(
        "local_partition(tile, thr, t) over a (TM,TN) thread layout (column- or row-major thread "
        "order, TM | BM, TN | BN) gives thread t with coordinate (tm,tn) the elements (a·TM + tm, "
        "b·TN + tn); the threads cover the BM×BN tile exactly once",
        threads(),
        case,
        family=f"every tile BM, BN in 1..{TILE_MAX}, every thread shape TM | BM, TN | BN, both thread orders",
        bounds={"BM": (1, TILE_MAX), "BN": (1, TILE_MAX)},
        names=("BM", "BN", "TM", "TN", "order"),
    )


THEOREMS = [
    Theorem(
        "T7.logical-divide-definition",
        "logical_divide is composition with (B, complement)",
        "logical_divide(A, B) = A ∘ (B, complement(B, size(A))): both sides are inadmissible together, "
        "or have the same shape and strides.",
        check_divide_definition,
        expected="checked",
        parameters="A, B: flat layouts",
        references=("REFERENCES T7", WP, "CuTe C++ logical_divide"),
        family=DPAIR_WORDS,
        group=GROUP_D,
    ),
    Theorem(
        "T7.zipped-divide-mode0",
        "The tile mode of zipped_divide is A∘B",
        "layout<0>(zipped_divide(A, B)) = A∘B (same shape and strides) whenever zipped_divide(A, B) is "
        "admissible.",
        check_zipped_mode0,
        expected="checked",
        parameters="A, B: flat layouts",
        references=("REFERENCES T7", WP),
        family=DPAIR_WORDS,
        group=GROUP_D,
    ),
    Theorem(
        "divide.sizes",
        "Sizes of a logical divide",
        "With B* = complement(B, size(A)): size(logical_divide(A, B)) = size(B)·size(B*) ≥ size(A), "
        "its two modes have sizes size(B) and size(B*), and the size is exactly size(A) when B is "
        "compact and cosize(B) divides size(A).",
        check_divide_sizes,
        expected="checked",
        parameters="A, B: flat layouts",
        references=("REFERENCES T1", "REFERENCES T7"),
        family=DPAIR_WORDS,
        group=GROUP_D,
    ),
    Theorem(
        "divide.regrouping",
        "zipped, tiled and flat divides regroup the logical divide",
        "For a rank-2 A and a tiler (t0, t1): logical_divide(A, (t0,t1)) = (A0 ⊘ t0, A1 ⊘ t1) = "
        "((T0,R0),(T1,R1)), "
        "and zipped_divide = ((T0,T1),(R0,R1)), tiled_divide = ((T0,T1),R0,R1), flat_divide = (T0,T1,R0,R1), "
        "shapes and strides.",
        check_divide_regrouping,
        expected="checked",
        parameters="A: rank-2 layouts; t0, t1: integer tilers",
        references=(WP, "CuTe C++ zipped_divide / tiled_divide / flat_divide"),
        family=f"A: every rank-2 layout with extents 1..{DA[1]}, strides 0..{DA[2]}; "
        f"t0, t1 in {TILERS[0]}..{TILERS[-1]}",
        group=GROUP_D,
    ),
    Theorem(
        "T7.logical-divide-symbolic",
        "Dividing an M×N matrix into 64×32 tiles",
        "For all M, N with 64 | M and 32 | N: logical_divide((M,N):(1,M), (64,32)) = "
        "((64,M/64),(32,N/32)):((1,64),(M,32·M)), and the divide's post-condition holds; "
        "size(logical_divide((M,N):(1,M), 8:1)) = M·N when 8 | M·N.",
        check_divide_symbolic,
        expected="proved",
        method="sympy+z3",
        parameters="M, N: positive integers (symbolic)",
        assumptions=("M % 64 == 0", "N % 32 == 0"),
        references=("REFERENCES T7", "docs/verify.md §4"),
        group=GROUP_D,
    ),
    Theorem(
        "T8.logical-product-definition",
        "logical_product is (A, complement ∘ B)",
        "logical_product(A, B) = (A, complement(A, size(A)·cosize(B)) ∘ B): both sides inadmissible "
        "together, "
        "or the same shape and strides.",
        check_product_definition,
        expected="checked",
        parameters="A, B: flat layouts",
        references=("REFERENCES T8", WP),
        family=f"A: {family_words(*PA)}; B: {family_words(*PB)}",
        group=GROUP_D,
    ),
    Theorem(
        "product.regrouping",
        "Blocked and raked products permute the modes of the logical product",
        "For rank-2 A, B with logical_product(A, B) = ((A0,A1),(C0,C1)): blocked_product(A, B) = "
        "((A0,C0),(A1,C1)) "
        "and raked_product(A, B) = ((C0,A0),(C1,A1)). For a tiler (t0, t1), the product is by mode, "
        "P_k = A_k ⊗ t_k, and zipped/tiled/flat_product regroup (P0, P1) as the divides do.",
        check_product_regrouping,
        expected="checked",
        parameters="A, B: rank-2 layouts; t0, t1: integer tilers",
        references=("REFERENCES T8", WP, TALK),
        family=f"A: every rank-2 layout with extents 1..{PA[1]}, strides 0..{PA[2]}; "
        f"B: every rank-2 layout with extents 1..{PB[1]}, strides 0..{PB[2]}; "
        f"t0, t1 in {TILERS[0]}..{TILERS[-1]}",
        group=GROUP_D,
    ),
    Theorem(
        "product.sizes",
        "Sizes multiply in products",
        "size(X(A, B)) = size(A)·size(B) for every product X (logical, blocked, raked, zipped, tiled, flat); "
        "mode k of blocked_product(A, B) has size size(A_k)·size(B_k); symbolically "
        "logical_product(M:1, N:1) = "
        "(M,N):(1,M) and size(blocked_product((M,N):(1,M), (4,2):(1,4))) = 8·M·N.",
        check_product_sizes,
        expected="checked",
        method="exhaustive+sympy",
        parameters="A, B: flat layouts; M, N ≥ 2 symbolic",
        references=("REFERENCES T8", WP),
        family=f"A: {family_words(*PA)}; B: {family_words(*PB)}",
        group=GROUP_D,
    ),
    Theorem(
        "gemm.zipped-divide-symbolic",
        "Tiling an M×N matrix visits every element once (all M, N)",
        "For A = (M,N):(1,M) (column-major) or (M,N):(N,1) (row-major), a tile (BM,BN) ∈ {(128,64), "
        "(16,8)} and "
        "all M, N with BM | M and BN | N: R = zipped_divide(A, (BM,BN)) has size M·N, "
        "R((i,j),(m,n)) = A(m·BM + i, n·BN + j), R maps its domain into [0, M·N), and R is injective — so R "
        "is a bijection onto [0, M·N) that visits element (m·BM + i, n·BN + j) at ((i,j),(m,n)).",
        check_gemm_symbolic,
        expected="proved",
        method="sympy+z3",
        parameters="M, N: positive integers (symbolic); i, j, m, n: coordinates",
        assumptions=("M % BM == 0", "N % BN == 0"),
        references=(COLFAX, WP, "CuTe GEMM tutorial (0x_gemm_tutorial.md)"),
        group=GROUP_G,
    ),
    Theorem(
        "gemm.zipped-divide-exhaustive",
        "Tiling small matrices visits every element once",
        "For every M×N matrix (column- or row-major) and every tile (BM,BN) with BM | M, BN | N: "
        "zipped_divide(A, (BM,BN)) maps ((i,j),(m,n)) to element (m·BM + i, n·BN + j) and is a bijection "
        "onto the matrix.",
        check_gemm_exhaustive,
        expected="checked",
        parameters="M, N, BM, BN: positive integers",
        references=(COLFAX, WP),
        family=f"every M, N in 1..{GEMM_MAX} and every tile BM | M, BN | N, both majors",
        group=GROUP_G,
    ),
    Theorem(
        "gemm.local-tile-cover",
        "local_tile cuts the matrix into its tiles",
        "For BM | M, BN | N: local_tile(mA, (BM,BN), (m,n)) is the sub-matrix mA[m·BM:(m+1)·BM, "
        "n·BN:(n+1)·BN], "
        "and the tiles cover every element of mA exactly once.",
        check_local_tile,
        expected="checked",
        parameters="M, N, BM, BN: positive integers",
        references=(COLFAX, "CuTe C++ local_tile"),
        family=f"every M, N in 1..{TILE_MAX} and every tile BM | M, BN | N",
        group=GROUP_G,
    ),
    Theorem(
        "gemm.local-partition-cover",
        "local_partition deals a tile out to the threads",
        "For a (TM,TN) thread layout (column- or row-major thread order) with TM | BM, TN | BN: thread "
        "t with "
        "coordinate (tm,tn) gets exactly the elements (a·TM + tm, b·TN + tn) of the BM×BN tile, and the "
        "threads together cover the tile exactly once.",
        check_local_partition,
        expected="checked",
        parameters="BM, BN, TM, TN: positive integers",
        references=(COLFAX, TALK, "CuTe C++ local_partition"),
        family=f"every BM, BN in 1..{TILE_MAX}, every TM | BM, TN | BN, both thread orders",
        group=GROUP_G,
    ),
]
