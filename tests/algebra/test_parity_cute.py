"""Parity with CuTe C++ and PyCuTe, each case from the peer's documented
behaviour: the C++ source (cute/layout.hpp, layout_composed.hpp, swizzle_layout.hpp,
int_tuple.hpp) and the PyCuTe / legacy pycute reference implementations.  Every result is
also checked against its definition by evaluation, so a test cannot pass on a wrong
layout that merely matches a transcription."""

from __future__ import annotations

import numpy as np
import pytest

import layoutproof as lp
from layoutproof import (
    ComposedLayout,
    E,
    InadmissibleError,
    Layout,
    LayoutLeft,
    LayoutRight,
    MalformedLayoutError,
    OutOfDomainError,
    Swizzle,
    composition,
    evenly_divides,
    left_inverse,
    make_identity_layout,
    make_layout,
    right_inverse,
    slice_and_offset,
    weakly_congruent,
)


def coord_value(A: Layout, crd) -> int:
    """A at a natural coordinate given as an ArithTuple / tuple / int (trailing zeros)."""
    if not isinstance(crd, tuple):
        crd = tuple(crd.to_tuple()) if hasattr(crd, "to_tuple") else (crd,)
    r = A.rank
    crd = tuple(crd) + (0,) * (r - len(crd))

    def fill(c, s):
        if isinstance(s, tuple):
            if not isinstance(c, tuple):
                return c  # an integer against a tuple mode: A splits it
            c = tuple(c) + (0,) * (len(s) - len(c))
            return tuple(fill(x, y) for x, y in zip(c, s))
        return c

    return A(*fill(crd, A.shape))


# ----------------------------------------------------------------------------- composition with E strides
def test_composition_with_basis_strides_transposes():
    """C++ composition_impl, ScaledBasis case: a leaf n : v@i of B walks mode i of A.
    The issue's example: (4,4):(4,1) o (4,4):(1@1,1@0) is (4,4):(1,4)."""
    A = Layout((4, 4), (4, 1))
    B = Layout((4, 4), (E(1), E(0)))
    R = composition(A, B)
    assert R == Layout((4, 4), (1, 4))
    assert all(R(i) == coord_value(A, B(i)) for i in range(B.size))


@pytest.mark.parametrize(
    "A,B",
    [
        (Layout((4, 4), (4, 1)), make_identity_layout((4, 4))),  # identity: A itself
        (Layout((8, 6), (1, 8)), Layout((2, 3), (4 * E(0), 2 * E(1)))),  # strided tile
        (Layout((4, (2, 2)), (2, (1, 8))), Layout((2, 2), (E(1, 1), E(0)))),  # a sub-mode
        (Layout((8, 8), (8, 1)), Layout((2, 2, 2), (E(0), 2 * E(0), E(1)))),  # two leaves, one mode
    ],
)
def test_composition_with_basis_strides_is_a_o_b(A, B):
    R = composition(A, B)
    assert lp.compatible(B, R)
    assert all(R(i) == coord_value(A, B(i)) for i in range(B.size))


def test_composition_with_identity_layout_is_the_layout():
    for A in (Layout((4, 6), (6, 1)), Layout((2, (3, 2)), (1, (4, 2)))):
        assert composition(A, make_identity_layout(A.shape)) == A


def test_composition_with_basis_strides_checks_disjointness():
    # two leaves walk A's mode 0 = (2,2):(1,100); their digits in its sub-mode 0 add to
    # 1 + 1 >= 2 and carry into sub-mode 1: at B's coordinate (1,1), A(B) = A_0(2) = 100
    # but the leaf-by-leaf result gives 1 + 1
    with pytest.raises(InadmissibleError) as ei:
        composition(Layout(((2, 2), 4), ((1, 100), 7)), Layout((2, 2), (E(0), E(0))))
    assert ei.value.witness is not None
    R = composition(
        Layout((4, 4), (4, 1)), Layout(2, E(0) + E(1))
    )  # walks both modes (PyCuTe, semantics §7.2)
    assert str(R) == "2:5" and all(R(i) == Layout((4, 4), (4, 1))((i, i)) for i in range(2))


# ----------------------------------------------------------------------------- inverses of swizzled layouts
@pytest.mark.parametrize(
    "C",
    [
        ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 64), (64, 1))),  # the smem atom
        ComposedLayout(Swizzle(2, 0, 2), 0, Layout((4, 4), (4, 1))),
        ComposedLayout(Swizzle(1, 1, 2), 0, Layout(16, 1)),
    ],
)
def test_inverses_of_swizzled_layouts(C):
    """swizzle_layout.hpp: right_inverse(Sw o 0 o B) = right_inverse(B) o Sw, and
    left_inverse likewise (a swizzle is its own inverse)."""
    R = right_inverse(C)
    assert all(C(R(i)) == i for i in range(R.size))
    assert R.size == right_inverse(C.layout_b).size
    Li = left_inverse(C)
    assert all(Li(C(i)) == i for i in range(C.size))


def test_inverse_of_composed_layout_needs_swizzle_and_zero_offset():
    with pytest.raises(InadmissibleError):
        right_inverse(ComposedLayout(Swizzle(1, 0, 1), 2, Layout(4, 1)))
    with pytest.raises(InadmissibleError):
        left_inverse(ComposedLayout(Layout(8, 2), 0, Layout(4, 1)))


# ----------------------------------------------------------------------------- evenly_divides
@pytest.mark.parametrize(
    "shape,tiler,expected",
    [
        ((8, 6), (4, 3), True),
        ((8, 6), (4, 4), False),  # 6 is not a multiple of 4
        ((8, 6), 4, True),  # a tiler that is not a tuple: size(a) == size(b)*size(ceil_div(a, b))
        ((8, 6), 16, True),
        ((6, 6), 4, False),  # ceil_div((6,6), 4) = (2,6): 4*12 != 36
        ((8, 6), (4, 3, 2), False),  # more modes than the shape
        ((8, 6), (None, 3), True),
        (Layout((8, 6)), Layout(4, 2), True),
        (12, Layout(5), False),
    ],
)
def test_evenly_divides(shape, tiler, expected):
    assert evenly_divides(shape, tiler) is expected


@pytest.mark.parametrize("shape", [(8, 6), (6, 6), (4, (2, 3)), 12])
def test_evenly_divides_is_whole_tiles(shape):
    """For an integer tiler n: True iff the shape splits into whole tiles of n elements,
    colexicographically from the left, i.e. the ceil_div pieces lose nothing."""
    n_total = lp.size(shape)
    for n in range(1, n_total + 1):
        pieces = lp.ceil_div(shape, n)
        assert evenly_divides(shape, n) == (lp.size(pieces) * n == n_total)


# ----------------------------------------------------------------------------- weakly_congruent, congruent
def test_weakly_congruent_accepts_layouts_like_compatible():
    assert weakly_congruent(Layout(8), Layout((2, 4)))
    assert not weakly_congruent(Layout((2, 4)), Layout(8))
    assert weakly_congruent(Layout((2, 4)), (2, (2, 2)))
    assert lp.compatible(Layout(8), Layout((2, 4)))  # the same convention
    assert lp.congruent(Layout((2, 4), (1, 2)), (3, 5))


# ----------------------------------------------------------------------------- slice_and_offset, composed
def test_slice_and_offset_on_composed_layouts():
    """layout_composed.hpp: the slice's offset moves into the composed layout, and the
    returned offset is 0."""
    C = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 64), (64, 1)))
    sub, off = slice_and_offset((2, None), C)
    assert off == 0
    assert isinstance(sub, ComposedLayout) and sub.offset == 128
    assert [sub(j) for j in range(64)] == [C(2, j) for j in range(64)]
    sub, off = slice_and_offset((None, 5), C)
    assert [sub(i) for i in range(8)] == [C(i, 5) for i in range(8)]
    assert lp.slice_((None, 5), C) == sub


# ----------------------------------------------------------------------------- make_layout
def test_make_layout_forms_of_cpp():
    assert make_layout((4, 2)) == Layout((4, 2), (1, 4))  # make_layout(shape): LayoutLeft
    assert make_layout(8) == Layout(8, 1)
    assert make_layout((4, 2), (2, 1)) == Layout((4, 2), (2, 1))  # make_layout(shape, stride)
    assert make_layout((4, (2, 2)), (2, (1, 8))) == Layout((4, (2, 2)), (2, (1, 8)))
    assert make_layout((4, 2), LayoutRight) == Layout((4, 2), (2, 1))
    assert make_layout((4, 2), LayoutLeft) == Layout((4, 2), (1, 4))
    assert make_layout(Layout(4), Layout(2, 4)) == Layout((4, 2), (1, 4))  # make_layout(layouts...)
    assert make_layout(Layout((2, 2))) == Layout(((2, 2),), ((1, 2),))  # one layout: rank 1
    assert make_layout([Layout(4), Layout(2, 4)]) == Layout((4, 2), (1, 4))
    assert make_layout(L for L in (Layout(4), Layout(2, 4))) == Layout((4, 2), (1, 4))
    with pytest.raises(MalformedLayoutError):
        make_layout((4, 2), (1, 2, 3))  # not congruent
    with pytest.raises(MalformedLayoutError):
        make_layout((4, 2), Layout(8))  # a shape and a layout
    with pytest.raises(MalformedLayoutError):
        make_layout((4, 2), (1, 4), (1,))


# ----------------------------------------------------------------------------- evaluation past the domain
def test_evaluation_past_the_domain_is_explicit():
    """C++ crd2idx, PyCuTe and legacy pycute evaluate past size(L) by extending the last
    mode; layoutproof raises by default and does it with extend=True."""
    L = Layout((4, 2), (1, 8))
    with pytest.raises(OutOfDomainError):
        L(9)
    assert L(9, extend=True) == 1 + 2 * 8
    assert L((5, 0), extend=True) == 5  # a leaf mode's coordinate is not bounded either
    for i in range(L.size):  # inside the domain: the same values
        assert L(i, extend=True) == L(i)
    H = Layout((2, (2, 3)), (1, (10, 100)))
    for i in range(40):  # the last (nested) mode takes the remainder
        c0, rest = i % 2, i // 2
        assert H(i, extend=True) == c0 + (rest % 2) * 10 + (rest // 2) * 100
    with pytest.raises(OutOfDomainError):
        L(-1, extend=True)


def test_extended_evaluation_agrees_with_legacy_pycute():
    pc = pytest.importorskip("pycute")
    for shp in [(4, 2), (3, (2, 2)), 5]:
        L = Layout(shp)
        P = pc.Layout(shp)
        for i in range(3 * L.size):
            assert L(i, extend=True) == P(i)
    L, P = Layout((4, 3), (3, 1)), pc.Layout((4, 3), (3, 1))
    assert [L(i, extend=True) for i in range(30)] == [P(i) for i in range(30)]


def test_values_match_numpy_evaluation():
    L = Layout((4, 2), (1, 8))
    assert np.array_equal(L.eval_all(), [L(i, extend=True) for i in range(L.size)])


def test_inverses_of_swizzled_layouts_random():
    """Seeded sweep: whatever right_inverse / left_inverse return for Sw o 0 o B is an
    inverse at every coordinate (the structural shortcut included: inner inverses whose
    size is a multiple of the swizzle's period are not evaluated)."""
    import random

    from layoutproof import LayoutError

    rng = random.Random(20261123)
    checked = 0
    for _ in range(600):
        b = rng.randint(1, 3)
        sw = Swizzle(b, rng.randint(0, 3), rng.choice([-1, 1]) * rng.randint(b, 4))
        shp = tuple(rng.choice([1, 2, 4, 8]) for _ in range(rng.randint(1, 3)))
        std = tuple(rng.choice([0, 1, 2, 3, 4, 8, 16, 32]) for _ in shp)
        C = ComposedLayout(sw, 0, Layout(shp, std))
        try:
            R = right_inverse(C)
            assert all(C(R(i)) == i for i in range(R.size)), (C, R)
            checked += 1
        except LayoutError:
            pass
        try:
            Li = left_inverse(C)
            vals = [C(i) for i in range(C.size)]
            assert all(C(Li(x)) == x for x in vals), (C, Li)
            checked += 1
        except LayoutError:
            pass
    assert checked > 600
    big = ComposedLayout(Swizzle(3, 3, 3), 0, Layout(1 << 30, 1))  # past VERIFY_LIMIT: proved
    assert right_inverse(big) == big and left_inverse(big) == big


def test_composition_with_basis_strides_and_symbols():
    M = lp.symbols("M")
    assert composition(Layout((4, M), (M, 1)), Layout((4, 4), (E(1), E(0)))) == Layout((4, 4), (1, M))
    with pytest.raises(MalformedLayoutError):  # a symbolic B with basis strides: substitute first
        composition(Layout((4, 4), (4, 1)), Layout((4, M), (E(1), E(0))))
