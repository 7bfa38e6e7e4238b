"""The HTuple toolbox (inttuple.py) and the structural side of Layout: construction,
equality, hashing, notation round trips, constructors, size/cosize/rank/depth, modes."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import examples, layouts, shapes
from hypothesis import given, settings
from hypothesis import strategies as st

import layoutproof as lp
from layoutproof import (
    InadmissibleError,
    Layout,
    LayoutLeft,
    LayoutRight,
    MalformedLayoutError,
    OutOfDomainError,
    append,
    ceil_div,
    congruent,
    cosize,
    crd2crd,
    crd2idx,
    depth,
    flatten,
    get,
    group,
    idx2crd,
    inner_product,
    is_int,
    is_tuple,
    make_layout,
    make_layout_like,
    make_ordered_layout,
    prefix_product,
    prepend,
    product,
    product_each,
    rank,
    select,
    shape_div,
    size,
    take,
    unflatten,
    unwrap,
    weakly_congruent,
    wrap,
)
from layoutproof import zip as lzip


# ----------------------------------------------------------------------------- leaves and nodes
def test_is_int_and_is_tuple():
    for x in (0, 3, -2, 2**80, np.int64(3), np.uint8(7), np.int32(-1)):
        assert is_int(x), x
    for x in (True, False, np.bool_(True), 3.0, "3", None, (3,), [3], np.float64(3)):
        assert not is_int(x), x
    assert is_tuple(()) and is_tuple((1,)) and is_tuple(((1, 2), 3))
    assert not is_tuple(3) and not is_tuple([1]) and not is_tuple(None)


def test_flatten_unflatten_examples():
    assert flatten((1, (2, (3, 4)), 5)) == (1, 2, 3, 4, 5)
    assert flatten(3) == (3,)
    assert flatten(()) == ()
    assert flatten(((), (1, ()))) == (1,)
    assert flatten([1, [2, [3]]]) == (1, 2, 3)
    assert flatten(Layout((4, (2, 2)), (2, (1, 8)))) == Layout((4, 2, 2), (2, 1, 8))
    assert unflatten((1, 2, 3, 4), ((0, 0), (0, 0))) == ((1, 2), (3, 4))
    assert unflatten((1, 2, 3), (0, (0, 0))) == (1, (2, 3))
    assert unflatten(5, 0) == 5
    assert unflatten((), ()) == ()
    with pytest.raises(MalformedLayoutError):
        unflatten((1, 2), (0, (0, 0)))
    with pytest.raises(MalformedLayoutError):
        unflatten((5,), ())
    with pytest.raises(MalformedLayoutError):
        flatten((1, "2"))


@settings(max_examples=examples(200))
@given(shapes(max_size=4096, max_depth=4, allow_empty=True))
def test_flatten_unflatten_round_trip(s):
    f = flatten(s)
    assert all(type(e) is int for e in f)
    assert unflatten(f, s) == s
    assert product(s) == int(np.prod(f, dtype=object)) if f else product(s) == 1
    assert congruent(s, unflatten(tuple(range(len(f))), s))


def test_product_and_product_each():
    assert product((2, (3, 4))) == 24
    assert product(()) == 1
    assert product(5) == 5
    assert product(((2, ()), 3)) == 6
    assert product_each((2, (3, 4), 5)) == (2, 12, 5)
    assert product_each(7) == 7
    assert product_each(()) == ()
    assert product_each(((2, 2),)) == (4,)


def test_prefix_product_examples():
    assert prefix_product((2, (3, 4))) == (1, (2, 6))
    assert prefix_product((2, 3, 4)) == (1, 2, 6)
    assert prefix_product((2, 3, 4), 5) == (5, 10, 30)
    assert prefix_product(5) == 1
    assert prefix_product(5, 7) == 7
    assert prefix_product(()) == ()
    assert prefix_product(((2, 3), (4, 5))) == ((1, 2), (6, 24))
    # a tuple init gives each mode its own start (CuTe: transform(a, init, prefix_product))
    assert prefix_product((2, 3), (5, 7)) == (5, 7)
    assert prefix_product((2, (3, 4)), (5, 7)) == (5, (7, 21))


def test_prefix_product_with_a_nested_init():
    # CuTe: prefix_product((3,4), (2,3)) = (prefix_product(3,2), prefix_product(4,3)) = (2,3)
    assert prefix_product((2, (3, 4)), (1, (2, 3))) == (1, (2, 3))
    assert prefix_product(((2, 3), 4), ((1, 2), 5)) == ((1, 2), 5)


@settings(max_examples=examples(200))
@given(shapes(max_size=4096, max_depth=4))
def test_prefix_product_definition(s):
    pp = flatten(prefix_product(s))
    f = flatten(s)
    assert congruent(prefix_product(s), s)
    assert pp == tuple(int(np.prod(f[:i], dtype=object)) for i in range(len(f)))


def test_inner_product():
    assert inner_product((2, (3, 4)), (1, (2, 3))) == 2 + 6 + 12
    assert inner_product(3, 4) == 12
    assert inner_product((), ()) == 0
    with pytest.raises(MalformedLayoutError):
        inner_product((2, (3, 4)), (1, 2))
    with pytest.raises(MalformedLayoutError):
        inner_product((2, 3), (1, 2, 3))


def test_congruent_and_weakly_congruent():
    assert congruent(1, 2) and congruent((1, (2, 3)), (4, (5, 6))) and congruent((), ())
    assert congruent([1, 2], (3, 4))
    assert not congruent((1,), 1) and not congruent((1, 2), (1, (2, 3))) and not congruent((1, 2), (1, 2, 3))
    assert weakly_congruent(1, (2, 3))  # an integer coarsens anything
    assert weakly_congruent((1, 2), (2, (3, 4)))
    assert not weakly_congruent((1, (2, 3)), (2, 3))
    assert not weakly_congruent((1, 2), (1, 2, 3))
    assert weakly_congruent((), ())
    assert not weakly_congruent((), 1)


# ----------------------------------------------------------------------------- coordinates
def test_idx2crd_crd2idx_examples():
    assert idx2crd(16, (3, (2, 3))) == (1, (1, 2))
    assert crd2idx((1, (1, 2)), (3, (2, 3))) == 16
    assert idx2crd(5, (2, 3)) == (1, 2)
    assert idx2crd(5, 7) == 5
    assert crd2idx((1, 2), (2, 3)) == 5
    # an integer coordinate against a tuple shape: the last mode takes the remainder
    with pytest.raises(OutOfDomainError):  # past the last mode: CuTe extends, layoutproof refuses
        crd2idx(13, (3, 4))
    assert crd2idx((1, 5), (3, (2, 3))) == 1 + 3 * 5
    # with an explicit stride
    assert idx2crd(7, (2, 4), (1, 2)) == (1, 3)
    assert crd2idx((1, 3), (2, 4), (4, 1)) == 7
    assert crd2idx((1, (1, 1)), (4, (2, 2)), (2, (1, 8))) == 11
    with pytest.raises(MalformedLayoutError):
        crd2idx((1, 2, 3), (2, 3))
    with pytest.raises(MalformedLayoutError):
        idx2crd((1, (2, 3)), (2, 3))
    with pytest.raises(MalformedLayoutError):
        crd2idx((1, 2), (2, 3), (1,))


@settings(max_examples=examples(200))
@given(shapes(max_size=512), st.data())
def test_idx2crd_crd2idx_round_trip(s, data):
    n = product(s)
    i = data.draw(st.integers(0, n - 1))
    c = idx2crd(i, s)
    assert congruent(c, s)
    for ci, si in zip(flatten(c), flatten(s)):
        assert 0 <= ci < si
    assert crd2idx(c, s) == i
    assert idx2crd(crd2idx(c, s), s) == c
    L = Layout(s)  # compact: the layout function is crd2idx
    assert L(i) == L(c) == i
    # an arbitrary stride: crd2idx is the inner product with the natural coordinate
    d = data.draw(st.lists(st.integers(-9, 9), min_size=len(flatten(s)), max_size=len(flatten(s))))
    d = unflatten(tuple(d), s)
    assert crd2idx(c, s, d) == inner_product(c, d) == Layout(s, d)(i) == crd2idx(i, s, d)


@settings(max_examples=examples(200))
@given(shapes(max_size=256), st.data())
def test_idx2crd_of_a_mode_coordinate_is_mode_by_mode(s, data):
    """A coordinate with one 1-D entry per top-level mode maps to the natural coordinate of
    each mode within that mode (CuTe's idx2crd(tuple, tuple))."""
    if not isinstance(s, tuple):
        return
    per_mode = tuple(data.draw(st.integers(0, product(m) - 1)) for m in s)
    assert idx2crd(per_mode, s) == tuple(idx2crd(c, m) for c, m in zip(per_mode, s))


def test_idx2crd_of_a_natural_coordinate_is_itself():
    assert idx2crd((0, 1), (2, 2)) == (0, 1)
    assert idx2crd((1, 2), (2, 3)) == (1, 2)
    assert idx2crd((0, (1, 0)), (3, (2, 3))) == (0, (1, 0))
    assert idx2crd((0, 1), (3, (2, 3))) == (0, (1, 0))


def test_crd2crd():
    assert crd2crd((1, 2), (3, (2, 2)), (3, 4)) == (1, (0, 1))
    assert crd2crd(7, (3, 4)) == (1, 2)
    assert crd2crd((1, 2), 12, (3, 4)) == 7
    assert crd2crd((1, (1, 1)), (3, (2, 2))) == (1, (1, 1))
    assert crd2crd(5, 12) == 5
    with pytest.raises(MalformedLayoutError):
        crd2crd((1, 2), (3, 4), 12)
    with pytest.raises(MalformedLayoutError):
        crd2crd((1, 2), 12)  # a tuple into an integer needs its source shape


@settings(max_examples=examples(200))
@given(shapes(max_size=256), st.data())
def test_crd2crd_between_compatible_shapes(s, data):
    """Through a coarser shape and back, a coordinate keeps its index."""
    i = data.draw(st.integers(0, product(s) - 1))
    coarse = tuple(product(m) for m in s) if isinstance(s, tuple) else s
    c = idx2crd(i, s)
    mid = crd2crd(c, coarse, s)
    assert crd2idx(mid, coarse) == i
    assert crd2crd(mid, s, coarse) == c


# ----------------------------------------------------------------------------- mode surgery
def test_select_take_group():
    assert select((1, 2, 3), 2, 0) == (3, 1)
    assert select((1, 2, 3), -1) == (3,)
    assert select(7, 0) == (7,)
    assert take((1, 2, 3), 1) == (2, 3)
    assert take((1, 2, 3), -2, -1) == (2,)
    assert take((1, 2, 3), 0, 0) == ()
    assert group((1, 2, 3), 1, 3) == (1, (2, 3))
    assert group((1, 2, 3), 0, 1) == ((1,), 2, 3)
    with pytest.raises(OutOfDomainError):
        select((1, 2), 2)
    with pytest.raises(OutOfDomainError):
        take((1, 2, 3), 2, 1)
    with pytest.raises(MalformedLayoutError):
        select((1, 2), 1.0)
    L = Layout((4, (2, 2), 3), (2, (1, 8), 32))
    assert select(L, 1, 0) == Layout(((2, 2), 4), ((1, 8), 2))
    assert take(L, 1) == Layout(((2, 2), 3), ((1, 8), 32))
    assert group(L, 0, 2) == Layout(((4, (2, 2)), 3), ((2, (1, 8)), 32))
    assert np.array_equal(group(L, 0, 2).eval_all(), L.eval_all())


def test_append_prepend():
    assert append((1, 2), 3) == (1, 2, 3)
    assert append(4, 5) == (4, 5)
    assert append((1,), None, 3) == (1, 1, 1)
    assert append((1, 2, 3), 9, 3) == (1, 2, 3)
    with pytest.raises(MalformedLayoutError):  # CuTe: static_assert(N >= rank)
        append((1, 2, 3), 9, 2)
    with pytest.raises(MalformedLayoutError):
        append((1, 2), 3, -4)
    assert prepend((1, 2), 0) == (0, 1, 2)
    assert prepend((1,), 7, 3) == (7, 7, 1)
    L = Layout((4, 2), (1, 4))
    assert append(L, Layout(3, 8)) == Layout((4, 2, 3), (1, 4, 8))
    assert append(L, None, 4) == Layout((4, 2, 1, 1), (1, 4, 0, 0))
    assert prepend(L, Layout(3, 8)) == Layout((3, 4, 2), (8, 1, 4))
    assert append(Layout(4, 1), 2) == Layout((4, 2), (1, 1))  # an integer is a compact layout


def test_zip_wrap_unwrap():
    assert lzip((1, 2), (3, 4)) == ((1, 3), (2, 4))
    assert lzip(((1, 2), (3, 4))) == ((1, 3), (2, 4))
    assert lzip((1, 2, 3), (4, 5, 6), (7, 8, 9)) == ((1, 4, 7), (2, 5, 8), (3, 6, 9))
    with pytest.raises(MalformedLayoutError):
        lzip((1, 2), (3,))
    with pytest.raises(MalformedLayoutError):
        lzip((1, 2), 3)
    Z = lzip(Layout(((2, 3), (4, 5))))
    assert Z.shape == ((2, 4), (3, 5))
    assert wrap(3) == (3,)
    assert wrap((3,)) == (3,)
    assert wrap((3, 4)) == (3, 4)
    assert unwrap(((4,),)) == 4
    assert unwrap((4, 5)) == (4, 5)
    assert unwrap(((4, 5),)) == (4, 5)
    assert unwrap(4) == 4


def test_shape_div_and_ceil_div():
    assert shape_div(12, 4) == 3
    assert shape_div(4, 12) == 1
    assert shape_div((6, 2), 2) == (3, 2)
    assert shape_div((6, 2), 12) == (1, 1)
    assert shape_div((6, 2), (2, 2)) == (3, 1)
    assert shape_div(12, (2, 3)) == 2
    with pytest.raises(InadmissibleError):
        shape_div(6, 4)
    with pytest.raises(MalformedLayoutError):
        shape_div(6, 0)
    assert ceil_div(7, 2) == 4
    assert ceil_div(8, 2) == 4
    assert ceil_div((4, 6), 8) == (1, 3)
    assert ceil_div((4, 6), (3, 4)) == (2, 2)
    assert ceil_div((4, 6), (3,)) == (2, 6)
    with pytest.raises(MalformedLayoutError):
        ceil_div(7, 0)
    with pytest.raises(MalformedLayoutError):
        ceil_div((4,), (1, 2))


@settings(max_examples=examples(200))
@given(st.integers(1, 10**6), st.integers(1, 10**4))
def test_ceil_div_definition(a, b):
    q = ceil_div(a, b)
    assert (q - 1) * b < a <= q * b


# ----------------------------------------------------------------------------- Layout structure
@settings(max_examples=examples(300))
@given(layouts(max_size=4096, kind="mixed", max_depth=4, allow_empty=True))
def test_str_parse_and_repr_round_trip(L):
    text = str(L)
    assert " " not in text and text.count(":") == 1
    assert Layout.parse(text) == L
    assert eval(repr(L), {"Layout": Layout}) == L
    assert hash(Layout.parse(text)) == hash(L)


def test_notation_examples():
    assert str(Layout((4, (2, 2)), (2, (1, 8)))) == "(4,(2,2)):(2,(1,8))"
    assert str(Layout((8,), (1,))) == "(8):(1)"
    assert str(Layout(8, 1)) == "8:1"
    assert str(Layout(((4,),), ((1,),))) == "((4)):((1))"
    assert str(Layout((), ())) == "():()"
    assert str(Layout((3, 3), (-1, 0))) == "(3,3):(-1,0)"
    assert repr(Layout((4, 2), (1, 4))) == "Layout((4, 2), (1, 4))"
    assert Layout.parse("(8):(1)") == Layout((8,), (1,)) != Layout(8, 1)


def test_equality_and_hash_are_structural():
    assert Layout(4) == Layout(4, 1) == Layout([4], None).__class__(4, 1)
    assert Layout((4,)) != Layout(4)  # different shapes, same function
    assert Layout((2, 2), (1, 2)) != Layout(4, 1)
    assert Layout((2, 3)) == Layout((2, 3), (1, 2))
    assert len({Layout((2, 3)), Layout([2, 3]), Layout((2, 3), (1, 2))}) == 1
    assert Layout(4) != "4:1" and Layout(4) != 4 and Layout(4) != (4, 1)
    assert (Layout(4) == "4:1") is False


@settings(max_examples=examples(200))
@given(layouts(max_size=512, kind="mixed"), layouts(max_size=512, kind="mixed"))
def test_equality_hash_consistency(A, B):
    assert (A == B) == (A.shape == B.shape and A.stride == B.stride)
    if A == B:
        assert hash(A) == hash(B)
    assert A == Layout(A.shape, A.stride)


@settings(max_examples=examples(300))
@given(layouts(max_size=512, kind="mixed"))
def test_size_cosize_rank_depth(L):
    fs, fd = flatten(L.shape), flatten(L.stride)
    assert L.size == size(L) == size(L.shape) == int(np.prod(fs, dtype=object))
    assert L.cosize == cosize(L) == 1 + sum((s - 1) * abs(d) for s, d in zip(fs, fd))
    v = L.eval_all()
    assert v.max() - v.min() == L.cosize - 1  # the codomain spans exactly cosize offsets
    assert L.rank == rank(L) == rank(L.shape) == (len(L.shape) if isinstance(L.shape, tuple) else 1)
    assert L.depth == depth(L) == depth(L.shape)
    assert len(L) == L.rank
    ms = list(L)
    assert len(ms) == L.rank
    if isinstance(L.shape, tuple):
        for i, m in enumerate(ms):
            assert m == L[i] == get(L, i) == Layout(L.shape[i], L.stride[i])
            assert L[i - L.rank] == m  # negative indices
        assert make_layout(ms) == L  # a list of modes is concatenated
        if L.rank != 1:
            assert make_layout(*ms) == L
    else:
        assert ms == [L] and L[0] == L and L[-1] == L
    with pytest.raises(OutOfDomainError):
        L[L.rank]


def test_rank_depth_examples():
    assert rank(()) == 0 and rank(4) == 1 and rank((1, (2, 3))) == 2
    assert depth(4) == 0 and depth((4,)) == 1 and depth((1, (2, 3))) == 2 and depth(()) == 1
    L = Layout((4, (2, 2)), (2, (1, 8)))
    assert L.rank == 2 and L.depth == 2
    assert Layout(4).rank == 1 and Layout(4).depth == 0
    assert Layout(()).size == 1 and Layout(()).cosize == 1 and Layout(()).rank == 0


def test_get_nested():
    L = Layout((4, (2, (3, 5))), (1, (4, (8, 24))))
    assert get(L, 1, 1, 0) == Layout(3, 8)
    assert get(L, 1) == L[1]
    assert get(L) == L
    assert get((1, (2, 3)), 1, 0) == 2
    assert get(4, 0, 0) == 4
    with pytest.raises(OutOfDomainError):
        get((1, 2), 5)


def test_cosize_examples():
    assert Layout((4, 3), (2, -5)).cosize == 17
    assert Layout((4, 8), (1, 5)).cosize == 39
    assert Layout(4, 0).cosize == 1
    assert lp.coshape(Layout((4, 8), (1, 5))) == 39


# ----------------------------------------------------------------------------- constructors
def test_layout_left_right_examples():
    assert LayoutLeft((2, (3, 4))) == Layout((2, (3, 4)), (1, (2, 6)))
    assert LayoutRight((2, (3, 4))) == Layout((2, (3, 4)), (12, (4, 1)))
    assert LayoutRight((4, 8)) == Layout((4, 8), (8, 1))
    assert LayoutRight(5) == Layout(5, 1)
    with pytest.raises(MalformedLayoutError):
        LayoutRight((2, 0))


@settings(max_examples=examples(200))
@given(shapes(max_size=1024, max_depth=3))
def test_layout_right_is_reversed_colex(s):
    R = LayoutRight(s)
    fs, fd = flatten(R.shape), flatten(R.stride)
    assert sorted(R.eval_all().tolist()) == list(range(product(s)))
    suffix = 1
    for e, d in zip(reversed(fs), reversed(fd)):  # the last leaf is the fastest
        assert d == suffix
        suffix *= e


@settings(max_examples=examples(200))
@given(shapes(max_size=1024, max_depth=3), st.data())
def test_make_ordered_layout(s, data):
    fs = flatten(s)
    order = tuple(data.draw(st.integers(0, 3)) for _ in fs)
    L = make_ordered_layout(s, unflatten(order, s) if isinstance(s, tuple) else order[0])
    assert L.shape == s
    fd = flatten(L.stride)
    assert sorted(L.eval_all().tolist()) == list(range(product(s)))
    ranks = sorted(range(len(fs)), key=lambda i: (order[i], i))  # ties go left to right
    cur = 1
    for i in ranks:
        assert fd[i] == cur
        cur *= fs[i]
    assert make_ordered_layout(s) == Layout(s)


def test_make_ordered_layout_examples():
    assert make_ordered_layout((2, 3, 4), (2, 0, 1)) == Layout((2, 3, 4), (12, 1, 3))
    assert make_ordered_layout((2, (3, 4)), (2, (0, 1))) == Layout((2, (3, 4)), (12, (1, 3)))
    with pytest.raises(MalformedLayoutError):
        make_ordered_layout((2, 3), (0,))


@settings(max_examples=examples(200))
@given(layouts(max_size=1024, kind="mixed"))
def test_make_layout_like(L):
    M = make_layout_like(L)
    assert M.shape == L.shape
    fs, fd, md = flatten(L.shape), flatten(L.stride), flatten(M.stride)
    nz = [i for i in range(len(fs)) if fd[i] != 0]
    assert all(md[i] == 0 for i in range(len(fs)) if fd[i] == 0)
    ranked = sorted(nz, key=lambda i: (abs(fd[i]), i))
    cur = 1
    for i in ranked:  # compact, in the order of |stride|
        assert md[i] == cur
        cur *= fs[i]


def test_make_layout_examples():
    A, B = Layout((2, 2), (1, 2)), Layout(3, 4)
    assert make_layout(A, B) == Layout(((2, 2), 3), ((1, 2), 4))
    assert make_layout(A) == Layout(((2, 2),), ((1, 2),))  # rank 1, as C++
    assert make_layout([A, B]) == make_layout(A, B)
    assert make_layout(m for m in (A, B)) == make_layout(A, B)
    assert make_layout() == Layout((), ())
    with pytest.raises(MalformedLayoutError):
        make_layout(A, (2, 2))
    assert make_layout(3) == Layout(3, 1)  # C++ make_layout(shape)
    with pytest.raises(MalformedLayoutError):
        make_layout("3")


def test_size_of_shapes():
    assert size((2, (3, 4))) == 24
    assert size(()) == 1
    with pytest.raises(MalformedLayoutError):
        size((2, 0))
    with pytest.raises(MalformedLayoutError):
        size("4")
