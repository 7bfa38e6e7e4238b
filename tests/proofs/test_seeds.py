"""The worked examples of the seed documents, checked value by value.

Seed 000: the coordinate table of shape (3,(2,3)).  Seed 001: the layout function,
sorting, coalescing and the two complement examples.  Seed 004 (Cecka's GTC talk): the
five layouts compatible with (4,8) with their printed 4x8 tables, the hierarchical layout
(8,(2,2)):(2,(1,16)) and the Morton layout, with their evaluations and slices.

The seed tables came through OCR; where a printed entry contradicts the layout's
definition, the test pins down exactly which entries are wrong (and why) instead of
silently trusting either side.
"""

from __future__ import annotations

import numpy as np
import pytest

from layoutproof import (
    Layout,
    _,
    blocked_product,
    coalesce,
    compatible,
    complement,
    composition,
    crd2idx,
    idx2crd,
    make_layout,
    slice_and_offset,
)
from layoutproof.inttuple import flatten


def table(L: Layout, rows: int, cols: int) -> np.ndarray:
    """L evaluated at every 2-D coordinate (i, j)."""
    return np.array([[L(i, j) for j in range(cols)] for i in range(rows)])


def ocr_diffs(printed, L: Layout) -> dict:
    t = table(L, len(printed), len(printed[0]))
    return {
        (i, j): (printed[i][j], int(t[i, j]))
        for i in range(len(printed))
        for j in range(len(printed[0]))
        if printed[i][j] != t[i, j]
    }


# ----------------------------------------------------------------------------- seed 000
# 1-D -> 2-D -> natural coordinates of shape (3,(2,3)), as printed in seed 000.
SEED000 = [
    (0, (0, 0), (0, (0, 0))),
    (1, (1, 0), (1, (0, 0))),
    (2, (2, 0), (2, (0, 0))),
    (3, (0, 1), (0, (1, 0))),
    (4, (1, 1), (1, (1, 0))),
    (5, (2, 1), (2, (1, 0))),
    (6, (0, 2), (0, (0, 1))),
    (7, (1, 2), (1, (0, 1))),
    (8, (2, 2), (2, (0, 1))),
    (9, (0, 3), (0, (1, 1))),
    (10, (1, 3), (1, (1, 1))),
    (11, (2, 3), (2, (1, 1))),
    (12, (0, 4), (0, (0, 2))),
    (13, (1, 4), (1, (0, 2))),
    (14, (2, 4), (2, (0, 2))),
    (15, (0, 5), (0, (1, 2))),
    (16, (1, 5), (1, (1, 2))),
    (17, (2, 5), (2, (1, 2))),
]


def test_seed000_coordinate_table():
    shape = (3, (2, 3))
    assert len(SEED000) == 18
    for i, two_d, natural in SEED000:
        assert idx2crd(i, shape) == natural
        assert idx2crd(i, (3, 6)) == two_d
        assert crd2idx(natural, shape) == i
        assert crd2idx(two_d, shape) == i


def test_seed000_2d_to_natural():
    """The 2-D coordinate (i, j) refines to the natural one, mode by mode: idx2crd of a
    tuple coordinate converts each entry within its own mode (CuTe's idx2crd(tuple, tuple))."""
    shape = (3, (2, 3))
    for _i, two_d, natural in SEED000:
        assert idx2crd(two_d, shape) == natural, two_d


def test_seed000_worked_division_and_index():
    # "16 div 3 = 5 ... 1, 2D coordinate is (1, 5); 5 div 2 = 2 ... 1 -> (1, (1, 2))"
    assert idx2crd(16, (3, 6)) == (1, 5)
    assert idx2crd(16, (3, (2, 3))) == (1, (1, 2))
    # ((3,(2,3)):(3,(12,1))): natural (i,(j,k)) -> 3i + 12j + k
    L = Layout((3, (2, 3)), (3, (12, 1)))
    for i, two_d, (a, (b, c)) in SEED000:
        expect = 3 * a + 12 * b + c
        assert L(i) == L(*two_d) == L(a, (b, c)) == expect
    assert L.size == 18


# ----------------------------------------------------------------------------- seed 001
def test_seed001_layout_function_and_sorting():
    L = Layout((2, 4), (2, 2))
    assert idx2crd(3, L.shape) == (1, 1)
    assert L(3) == 4
    L1, L2 = Layout((2, 2), (3, 1)), Layout((2, 2), (1, 3))  # L2 = sorted(L1)
    assert L1.eval_all().tolist() == [0, 3, 1, 4]
    assert L2.eval_all().tolist() == [0, 1, 3, 4]


def test_seed001_coalesce():
    assert coalesce(Layout((2, 1), (3, 1))) == Layout(2, 3)


def test_seed001_complement_2x4():
    L = Layout((2, 4), (1, 2))
    C = complement(L, 16)
    # (1,1,2):(1,2,8) by the formula, which coalesces to 2:8
    assert C == Layout(2, 8)
    assert coalesce(Layout((1, 1, 2), (1, 2, 8))) == C
    A = make_layout(L, C)
    assert flatten(A.shape) == (2, 4, 2) and flatten(A.stride) == (1, 2, 8)
    assert sorted(A.eval_all().tolist()) == list(range(16))


def test_seed001_complement_8_2():
    B = Layout(8, 2)
    assert (8 * 2) % 32 == 0 or 32 % (8 * 2) == 0  # admissible: 8*2 divides 32
    C = complement(B, 32)
    assert C == Layout((2, 2), (1, 16))
    A = make_layout(B, C)
    assert flatten(A.shape) == (8, 2, 2) and flatten(A.stride) == (2, 1, 16)
    v = A.eval_all().tolist()
    assert sorted(v) == list(range(32))  # a bijection of [0, 32) ...
    assert v != list(range(32))  # ... that is not the identity
    assert v[:10] == [0, 2, 4, 6, 8, 10, 12, 14, 1, 3]


# ----------------------------------------------------------------------------- seed 004: (a)-(e)
TALK_TABLES = {
    "a": (
        Layout((4, 8), (1, 4)),
        [
            [0, 4, 8, 12, 16, 20, 24, 28],
            [1, 5, 9, 13, 17, 21, 25, 29],
            [2, 6, 10, 14, 18, 22, 26, 30],
            [3, 7, 11, 15, 19, 23, 27, 31],
        ],
        {},
    ),
    "b": (
        Layout((4, 8), (8, 1)),
        [
            [0, 1, 2, 3, 4, 5, 6, 7],
            [8, 9, 10, 11, 12, 13, 14, 15],
            [16, 17, 18, 19, 20, 21, 22, 23],
            [24, 25, 26, 27, 28, 29, 30, 31],
        ],
        {},
    ),
    "c": (
        Layout((4, 8), (1, 5)),
        [
            [0, 5, 10, 15, 20, 25, 30, 35],
            [1, 6, 11, 16, 21, 26, 31, 36],
            [2, 7, 12, 17, 22, 27, 32, 37],
            [3, 8, 13, 18, 23, 28, 33, 38],
        ],
        {},
    ),
    "d": (
        Layout((4, (4, 2)), (4, (1, 16))),
        [
            [0, 1, 2, 3, 16, 17, 18, 19],
            [4, 5, 6, 7, 20, 21, 22, 23],
            [8, 9, 10, 11, 24, 25, 26, 27],
            [12, 13, 14, 15, 28, 29, 30, 31],
        ],
        {},
    ),
    # (e) as printed.  The print has 21 and 22 swapped: (0,7) is j=7 -> (3,1) in (4,2), so
    # 0*1 + 0*8 + 3*2 + 1*16 = 22, and (1,6) is 1*1 + 2*2 + 1*16 = 21.  (The first row must
    # also be increasing by 2 within each 4-column block, which 20, 21 is not.)
    "e": (
        Layout(((2, 2), (4, 2)), ((1, 8), (2, 16))),
        [
            [0, 2, 4, 6, 16, 18, 20, 21],
            [1, 3, 5, 7, 17, 19, 22, 23],
            [8, 10, 12, 14, 24, 26, 28, 30],
            [9, 11, 13, 15, 25, 27, 29, 31],
        ],
        {(0, 7): (21, 22), (1, 6): (22, 21)},
    ),
}


@pytest.mark.parametrize("name", sorted(TALK_TABLES))
def test_talk_layouts_compatible_with_4x8(name):
    L, printed, ocr_errors = TALK_TABLES[name]
    assert compatible((4, 8), L)
    assert L.size == 32
    assert ocr_diffs(printed, L) == ocr_errors
    t = table(L, 4, 8)
    # every 2-D coordinate is also a 1-D one, colexicographically
    assert [L(i + 4 * j) for j in range(8) for i in range(4)] == t.T.reshape(-1).tolist()
    if name != "c":  # all but the padded one cover [0, 32) exactly
        assert sorted(t.reshape(-1).tolist()) == list(range(32))
    else:
        assert L.cosize == 39 and t.max() == 38


# ----------------------------------------------------------------------------- seed 004: (8,(2,2))
HIER_PRINTED = [
    [0, 1, 16, 17],
    [2, 3, 18, 19],
    [4, 5, 20, 21],
    [6, 7, 22, 23],
    [8, 9, 24, 25],
    [10, 11, 26, 27],
    [12, 13, 28, 29],
    [14, 15, 30, 31],
]


def test_talk_hierarchical_layout():
    A = Layout((8, (2, 2)), (2, (1, 16)))
    assert str(A) == "(8,(2,2)):(2,(1,16))"
    assert ocr_diffs(HIER_PRINTED, A) == {}
    # the column headers: j -> (j0, j1)
    assert [idx2crd(j, (2, 2)) for j in range(4)] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert A(17) == A(1, 2) == A(1, (0, 1)) == 18


def test_talk_hierarchical_slices():
    A = Layout((8, (2, 2)), (2, (1, 16)))
    sub, off = slice_and_offset((3, _), A)
    assert off == 6 and [off + sub(k) for k in range(sub.size)] == [6, 7, 22, 23]
    assert A(3, _) == sub  # the call slices without the offset, like C++
    sub, off = slice_and_offset((5, (_, 1)), A)
    assert [off + sub(k) for k in range(sub.size)] == [26, 27]
    assert A(5, (_, 1)) == sub


# ----------------------------------------------------------------------------- seed 004: Morton
# As printed; row 3 reads "6 8 13 15 ...", but row 3 is i = 3 -> (1,(1,0)) -> 1 + 4 = 5,
# so it starts 5, 7 (the printed 6 and 8 already appear in row 2 / column 1 and row 0 /
# column 2, and the layout is a bijection of [0, 64)).
MORTON_PRINTED = [
    [0, 2, 8, 10, 32, 34, 40, 42],
    [1, 3, 9, 11, 33, 35, 41, 43],
    [4, 6, 12, 14, 36, 38, 44, 46],
    [6, 8, 13, 15, 37, 39, 45, 47],
    [16, 18, 24, 26, 48, 50, 56, 58],
    [17, 19, 25, 27, 49, 51, 57, 59],
    [20, 22, 28, 30, 52, 54, 60, 62],
    [21, 23, 29, 31, 53, 55, 61, 63],
]


@pytest.fixture
def morton():
    m1 = Layout((2, 2), (1, 2))
    return blocked_product(m1, blocked_product(m1, m1))


def test_talk_morton_construction(morton):
    assert morton.shape == ((2, (2, 2)), (2, (2, 2)))
    assert morton.stride == ((1, (4, 16)), (2, (8, 32)))
    assert str(morton) == "((2,(2,2)),(2,(2,2))):((1,(4,16)),(2,(8,32)))"
    assert sorted(morton.eval_all().tolist()) == list(range(64))


def test_talk_morton_table(morton):
    assert ocr_diffs(MORTON_PRINTED, morton) == {(3, 0): (6, 5), (3, 1): (8, 7)}
    t = table(morton, 8, 8)
    assert t[3].tolist() == [5, 7, 13, 15, 37, 39, 45, 47]
    assert sorted(t.reshape(-1).tolist()) == list(range(64))


def test_talk_morton_evaluations(morton):
    A = morton
    assert A(37) == A(5, 4) == A((1, 2), (0, 2)) == A((1, (0, 1)), (0, (0, 1))) == 49


def test_talk_morton_slices(morton):
    A = morton
    sub, off = slice_and_offset((_, 2), A)
    assert [off + sub(k) for k in range(sub.size)] == [8, 9, 12, 13, 24, 25, 28, 29]
    sub, off = slice_and_offset(((_, 1), (_, 2)), A)
    assert off == 36 and sub.size == 4
    # printed as the 2x2 matrix [36, 38; 37, 39] (column-major)
    assert [[off + sub(i, j) for j in range(2)] for i in range(2)] == [[36, 38], [37, 39]]


# ----------------------------------------------------------------------------- (4,(2,2)):(2,(1,8))
def test_layout_4_22_evaluations():
    A = Layout.parse("(4,(2,2)):(2,(1,8))")
    assert A == Layout((4, (2, 2)), (2, (1, 8)))
    assert A.size == 16 and A.cosize == 16
    # f(i, (j0, j1)) = 2i + j0 + 8 j1; 13 -> (1, 3) -> (1, (1, 1)) -> 2 + 1 + 8 = 11
    assert A(13) == A(1, 3) == A(1, (1, 1)) == 11
    assert A(5) == A(1, 1) == A(1, (1, 0)) == 3
    assert A.eval_all().tolist() == [0, 2, 4, 6, 1, 3, 5, 7, 8, 10, 12, 14, 9, 11, 13, 15]
    assert str(A[1]) == "(2,2):(1,8)"
    assert A(_, 1) == Layout((4,), (2,))


def test_issue_cli_example_composition():
    A = Layout.parse("(4,(2,2)):(2,(1,8))")
    B = Layout((2, 4), (1, 2))
    R = composition(A, B)
    assert str(R) == "(2,(2,2)):(2,(4,1))"
    assert compatible(B, R)
    assert [R(i) for i in range(8)] == [A(B(i)) for i in range(8)] == [0, 2, 4, 6, 1, 3, 5, 7]
