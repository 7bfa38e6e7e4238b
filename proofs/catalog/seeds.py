"""The worked examples of the seed documents, as theorems: seed 000 (the coordinates of a nested
shape) and seed 004 (the layouts of Cecka's GTC talk)."""

from __future__ import annotations

import itertools
from typing import Any, Dict, List

from layoutproof import (
    Layout,
    blocked_product,
    compatible,
    composition,
    crd2idx,
    idx2crd,
    slice_and_offset,
)
from layoutproof.inttuple import product
from layoutproof.verify import Result, equal, function
from layoutproof.verify.families import nested_shapes, offsets

from ..kit import fact, for_all
from ..theorem import Theorem

GROUP = "Seed examples"
SEED0 = "seed 000 (coordinates of (3,(2,3)))"
TALK = "seed 004 (Cecka's GTC talk)"

CO: Dict[str, Any] = dict(rank=2, extent=4, depth=2, max_size=32)


def _coords(S: Any) -> List[Any]:

    if type(S) is int:
        return list(range(S))
    return [c for c in itertools.product(*(_coords(e) for e in S))]


def check_coordinates() -> List[Result]:
    def case(S: Any) -> Any:
        n = product(S)
        nat = [idx2crd(i, S) for i in range(n)]
        if sorted(nat, key=lambda c: crd2idx(c, S)) != nat or len(set(nat)) != n:
            return "idx2crd is not injective"
        if set(map(repr, nat)) != set(map(repr, _coords(S))):
            return "idx2crd does not reach every natural coordinate"
        if [crd2idx(c, S) for c in nat] != list(range(n)):
            return "crd2idx is not the inverse of idx2crd"
        return None

    S = (3, (2, 3))
    table = [idx2crd(i, S) for i in range(18)]
    two_d = [idx2crd(i, (3, 6)) for i in range(18)]
    ok = (
        table[16] == (1, (1, 2))
        and two_d[16] == (1, 5)
        and idx2crd((1, 5), S) == (1, (1, 2))
        and all(crd2idx(t, S) == i for i, t in enumerate(table))
    )
    L = Layout((3, (2, 3)), (3, (12, 1)))
    vals_ok = all(L(i) == 3 * c[0] + 12 * c[1][0] + c[1][1] for i, c in enumerate(table))
    return [
        for_all(
            "idx2crd(., S) is a bijection [0, size(S)) -> natural coordinates of S, colexicographic, with "
            "inverse crd2idx(., S)",
            nested_shapes(**CO),
            case,
            family=f"every hierarchical shape of depth <= {CO['depth']}, rank <= {CO['rank']}, leaves "
            f"1..{CO['extent']}, size <= {CO['max_size']}",
            bounds={
                "rank": (1, CO["rank"]),
                "extent": (1, CO["extent"]),
                "depth": (0, CO["depth"]),
                "size": (1, CO["max_size"]),
            },
            names=("S",),
        ),
        fact(
            "seed 000: in (3,(2,3)), 16 -> (1,5) -> (1,(1,2)), and ((3,(2,3)):(3,(12,1)))(i) = 3·i0 + "
            "12·j0 + j1",
            ok and vals_ok,
            "the seed's coordinate table does not match",
        ),
    ]


TALK_LAYOUTS = {
    "a": Layout((4, 8), (1, 4)),
    "b": Layout((4, 8), (8, 1)),
    "c": Layout((4, 8), (1, 5)),
    "d": Layout((4, (4, 2)), (4, (1, 16))),
    "e": Layout(((2, 2), (4, 2)), ((1, 8), (2, 16))),
}


def check_talk_layouts() -> List[Result]:
    out = []
    for name, L in TALK_LAYOUTS.items():
        v = offsets(L)
        bij = sorted(v) == list(range(32))
        ok = (
            compatible((4, 8), L)
            and L.size == 32
            and (bij if name != "c" else (L.cosize == 39 and max(v) == 38))
        )
        out.append(
            fact(
                f"seed 004 ({name}) {L}: compatible with (4,8), "
                + ("a bijection onto [0, 32)" if name != "c" else "padded: cosize 39"),
                ok,
                f"{L} fails",
            )
        )
    A = Layout((8, (2, 2)), (2, (1, 16)))
    sub, off = slice_and_offset((3, None), A)
    sub2, off2 = slice_and_offset((5, (None, 1)), A)
    out.append(
        fact(
            "seed 004: (8,(2,2)):(2,(1,16)) has A(17) = A(1,2) = A(1,(0,1)) = 18; row 3 is 6,7,22,23; "
            "A(5,(_,1)) is 26,27",
            A(17) == A(1, 2) == A(1, (0, 1)) == 18
            and [off + sub(k) for k in range(sub.size)] == [6, 7, 22, 23]
            and [off2 + sub2(k) for k in range(sub2.size)] == [26, 27],
            "evaluations differ",
        )
    )
    B = Layout((2, 4), (1, 2))
    R = composition(Layout((4, (2, 2)), (2, (1, 8))), B)
    out.append(
        fact(
            "(4,(2,2)):(2,(1,8)) ∘ (2,4):(1,2) = (2,(2,2)):(2,(4,1)) (the command-line example)",
            str(R) == "(2,(2,2)):(2,(4,1))" and compatible(B, R) and offsets(R) == [0, 2, 4, 6, 1, 3, 5, 7],
            f"got {R}",
        )
    )
    return out


def check_morton() -> Result:
    m1 = Layout((2, 2), (1, 2))
    A = blocked_product(m1, blocked_product(m1, m1))

    def interleave(i: int, j: int) -> int:
        return sum(((i >> k) & 1) << (2 * k) | ((j >> k) & 1) << (2 * k + 1) for k in range(3))

    ok = str(A) == "((2,(2,2)),(2,(2,2))):((1,(4,16)),(2,(8,32)))" and all(
        A(i, j) == interleave(i, j) for i in range(8) for j in range(8)
    )
    r = equal(A, function(lambda x: interleave(x % 8, x // 8), (8, 8)))
    return fact(
        "seed 004: blocked_product(m, blocked_product(m, m)), m = (2,2):(1,2), is "
        "((2,(2,2)),(2,(2,2))):((1,(4,16)),(2,(8,32))), the Morton (Z-order) curve: A(i,j) interleaves the "
        "bits of i (even) and j (odd), a bijection of the 8×8 grid onto [0, 64)",
        ok and r.status == "proved",
        f"got {A}; {r}",
    )


SM70_C_PRINTED = """
T0 V0|T0 V1|T2 V0|T2 V1|T0 V4|T0 V5|T2 V4|T2 V5
T1 V0|T1 V1|T3 V0|T3 V1|T1 V4|T1 V5|T3 V4|T3 V5
T0 V2|T0 V3|T2 V2|T2 V3|T0 V6|T0 V7|T2 V6|T2 V7
T1 V2|T1 V3|T3 V2|T3 V3|T1 V6|T1 V7|T3 V6|T3 V7
T16 V0|T16 V1|T18 V0|T18 V1|T16 V4|T16 V5|T18 V4|T18 V5
T17 V0|T17 V1|T19 V0|T19 V1|T17 V4|T17 V5|T19 V4|T19 V5
T16 V2|T16 V3|T18 V2|T18 V3|T16 V6|T16 V7|T18 V6|T18 V7
T17 V2|T17 V3|T19 V2|T19 V3|T17 V6|T17 V7|T19 V6|T19 V7
"""


def _sm80_c_printed() -> List[List[str]]:
    return [[f"T{4 * m + n // 2} V{n % 2}" for n in range(8)] for m in range(8)]


def _table(TV: Layout, thr: Layout, rows: int, cols: int) -> List[List[str]]:
    t_n, v_n = TV[0].size, TV[1].size
    tab = [["" for _ in range(cols)] for _ in range(rows)]
    for t in range(t_n):
        for v in range(v_n):
            idx = TV(t, v)
            tab[idx % rows][idx // rows] = f"T{thr(t)} V{v}"
    return tab


def check_tv_layouts() -> List[Result]:
    out = []
    for name, TV, n in (
        (
            "((2,2),(2,3)):((2,12),(1,4)) (4×6 values, 4 threads)",
            Layout(((2, 2), (2, 3)), ((2, 12), (1, 4))),
            24,
        ),
        (
            "((2,4),(2,2)):((8,1),(4,16)) (8×4 thread-value → 4×8)",
            Layout(((2, 4), (2, 2)), ((8, 1), (4, 16))),
            32,
        ),
    ):
        v = offsets(TV)
        # partitioning = composition + slicing: thread t's elements of any data layout D
        D = Layout((4, n // 4), (n // 4, 1))
        P = composition(D, TV)
        slices_ok = all(
            [P(t, k) for k in range(TV[1].size)] == [D(TV(t, k)) for k in range(TV[1].size)]
            for t in range(TV[0].size)
        )
        out.append(
            fact(
                f"seed 004: the TV layout {name} is a bijection onto [0, {n}), and partitioning a row-major "
                f"4×{n // 4} tensor is composition followed by slicing",
                sorted(v) == list(range(n)) and slices_ok,
                f"{TV} fails",
            )
        )
    sm70 = [row.split("|") for row in SM70_C_PRINTED.strip().splitlines()]
    C70, thr70 = Layout(((2, 2, 2), (2, 2, 2)), ((1, 16, 4), (8, 2, 32))), Layout((4, 2), (1, 16))
    out.append(
        fact(
            "seed 004: SM70 8x8x4 C layout ((2,2,2),(2,2,2)):((1,16,4),(8,2,32)) with ThrID (4,2):(1,16) "
            "is a bijection onto the 8×8 tile and reproduces the talk's table",
            sorted(offsets(C70)) == list(range(64)) and _table(C70, thr70, 8, 8) == sm70,
            "table differs",
        )
    )
    C80, id32 = Layout(((4, 8), 2), ((16, 1), 8)), Layout(32, 1)
    out.append(
        fact(
            "seed 004: SM80 8x8x4 F64 C layout ((4,8),2):((16,1),8) is a bijection onto the 8×8 tile "
            "and reproduces the talk's table",
            sorted(offsets(C80)) == list(range(64)) and _table(C80, id32, 8, 8) == _sm80_c_printed(),
            "table differs",
        )
    )
    A80 = Layout(((4, 8), 1), ((8, 1), 0))
    out.append(
        fact(
            "seed 004: SM80 8x8x4 F64 A layout ((4,8),1):((8,1),0) is a bijection onto the 8×4 (M×K) tile, "
            "thread t at (t/4, t%4)",
            sorted(offsets(A80)) == list(range(32))
            and all(A80(t, 0) == (t // 4) + 8 * (t % 4) for t in range(32)),
            "A layout differs",
        )
    )
    return out


THEOREMS = [
    Theorem(
        "seed000.coordinates",
        "1-D and natural coordinates are in bijection",
        "For every shape S, idx2crd(·, S) is a bijection from [0, size(S)) onto the natural coordinates of S "
        "(colexicographic), with inverse crd2idx(·, S); seed 000's table for (3,(2,3)) is an instance "
        "(16 → (1,5) → (1,(1,2))).",
        check_coordinates,
        expected="checked",
        parameters="S: hierarchical shapes",
        references=(SEED0, "seed 002 (colexicographic coordinates)"),
        family=f"every hierarchical shape of depth <= {CO['depth']}, rank <= {CO['rank']}, "
        f"leaves 1..{CO['extent']}, "
        f"size <= {CO['max_size']}",
        group=GROUP,
    ),
    Theorem(
        "seed004.talk-layouts",
        "The talk's layouts of a 4×8 matrix",
        "The five layouts (a)-(e) of the talk are compatible with (4,8); (a), (b), (d), (e) are "
        "bijections onto "
        "[0, 32) and (c) = (4,8):(1,5) is padded (cosize 39); (8,(2,2)):(2,(1,16)) evaluates and slices "
        "as shown; "
        "(4,(2,2)):(2,(1,8)) ∘ (2,4):(1,2) = (2,(2,2)):(2,(4,1)).",
        check_talk_layouts,
        expected="proved",
        parameters="none (concrete layouts)",
        references=(TALK,),
        group=GROUP,
    ),
    Theorem(
        "seed004.morton",
        "The talk's Morton layout is the Z-order curve",
        "blocked_product(m, blocked_product(m, m)) with m = (2,2):(1,2) is "
        "((2,(2,2)),(2,(2,2))):((1,(4,16)),(2,(8,32))), and A(i,j) interleaves the bits of i and j.",
        check_morton,
        expected="proved",
        parameters="none (a concrete layout)",
        references=(TALK,),
        group=GROUP,
    ),
    Theorem(
        "seed004.thread-value-layouts",
        "The talk's thread-value layouts are bijections onto their tiles",
        "The TV layouts ((2,2),(2,3)):((2,12),(1,4)) and ((2,4),(2,2)):((8,1),(4,16)) are bijections "
        "onto their "
        "tiles and partitioning is composition followed by slicing; the SM70 8x8x4 and SM80 8x8x4 F64 MMA "
        "C layouts are bijections onto the 8×8 tile and reproduce the talk's thread-value tables; the SM80 A "
        "layout is a bijection onto the 8×4 tile.",
        check_tv_layouts,
        expected="proved",
        parameters="none (concrete layouts)",
        references=(TALK, "REFERENCES (MMA atoms: each TV layout is a bijection onto its tile)"),
        group=GROUP,
    ),
]
