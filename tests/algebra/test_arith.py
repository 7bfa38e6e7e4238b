"""Coordinate strides (layoutproof.arith): ArithTuple / ScaledBasis / E arithmetic, the
identity layout, and the algebra on layouts whose strides are basis elements.

The post-conditions are checked by brute force: the identity layout maps every
coordinate to its natural coordinate; ``composition(I, B)(c) == Î(B(c))`` (``Î``: I with
its last mode unbounded, CuTe's extension); a zipped divide of ``I`` enumerates every
coordinate exactly once.
"""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest
from conftest import examples, layouts, shapes
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutproof import (
    InadmissibleError,
    Layout,
    LayoutError,
    MalformedLayoutError,
    _,
    blocked_product,
    coalesce,
    complement,
    composition,
    flat_divide,
    idx2crd,
    logical_divide,
    logical_product,
    raked_product,
    right_inverse,
    slice_and_offset,
    tiled_divide,
    zipped_divide,
)
from layoutproof.arith import (
    ArithTuple,
    E,
    ScaledBasis,
    as_arith_tuple,
    basis_get,
    basis_value,
    has_coordinate_strides,
    is_coordinate,
    make_basis_like,
    make_identity_layout,
)
from layoutproof.inttuple import flatten, product
from layoutproof.ops import filter as lp_filter


def plain(x):
    """A coordinate as a plain nested tuple with trailing zeros kept as stored."""
    return x.to_tuple() if isinstance(x, ArithTuple) else x


def norm(v, shape):
    """A coordinate value (int 0, plain tuple or ArithTuple, trailing zeros possibly
    omitted) as the full natural-coordinate tuple of ``shape``."""
    if isinstance(v, ArithTuple):
        v = v.to_tuple()
    if not isinstance(shape, tuple):
        assert not isinstance(v, tuple) or all(e == 0 for e in flatten(v[1:])), v
        return v if not isinstance(v, tuple) else (v[0] if v else 0)
    if not isinstance(v, tuple):
        assert v == 0, v
        v = ()
    assert len(v) <= len(shape), (v, shape)
    return tuple(norm(v[i] if i < len(v) else 0, s) for i, s in enumerate(shape))


def ext_crd(x, shape):
    """The natural coordinate of index x in ``shape`` with the LAST leaf unbounded
    (the identity layout extended past its size, CuTe's semantics)."""
    fs = flatten(shape)
    out = []
    for i, s in enumerate(fs):
        if i == len(fs) - 1:
            out.append(x)
        else:
            out.append(x % s)
            x //= s
    if isinstance(shape, tuple):
        from layoutproof.inttuple import unflatten

        return unflatten(tuple(out), shape)
    return out[0]


# ----------------------------------------------------------------------------- arithmetic
def test_basis_elements_print_like_cpp():
    assert str(E(0)) == "1@0"
    assert str(E(1)) == "1@1"
    assert str(E(1, 0)) == "1@0@1"  # C++ prints the innermost index first
    assert str(3 * E(2)) == "3@2"
    assert str(E(0) + E(1)) == "(1,1)"
    assert str(ArithTuple(1, (2, 3))) == "(1,(2,3))"
    assert repr(E(1, 0)) == "E(1, 0)"
    assert repr(ScaledBasis(3, (0,))) == "ScaledBasis(3, (0,))"
    assert repr(ArithTuple(1, (2, 3))) == "ArithTuple(1, (2, 3))"
    assert E() == 1 and type(E()) is int  # E<> is the scalar 1
    assert ScaledBasis(5, ()) == 5


def test_basis_data_and_nesting():
    assert E(0).to_tuple() == (1,)
    assert E(2).to_tuple() == (0, 0, 1)
    assert E(1, 0).to_tuple() == (0, (1,))
    assert E(1, 1).to_tuple() == (0, (0, 1))
    # C++: ScaledBasis<ScaledBasis<T, Ms...>, Ns...> == ScaledBasis<T, Ns..., Ms...>
    assert ScaledBasis(ScaledBasis(3, (1,)), (2,)) == ScaledBasis(3, (2, 1))
    assert ScaledBasis(ArithTuple(1, 2), (1,)).to_tuple() == (0, (1, 2))
    b = ScaledBasis(3, (1, 0))
    assert basis_value(b) == 3 and basis_value(7) == 7
    assert b.path == (1, 0) and b.value == 3
    assert basis_get(E(1, 0), ("a", ("b", "c"))) == "b"
    assert basis_get(5, ("a",)) == ("a",)
    with pytest.raises(MalformedLayoutError):
        basis_get(E(3), (1, 2))


def test_arith_tuple_equality_zero_extension_and_hash():
    assert ArithTuple(1, 0) == ArithTuple(1) == E(0)
    assert ArithTuple(1, 0) == (1, 0) and ArithTuple(1, 0) == (1,)
    assert ArithTuple(0, (0, 0)) == 0 and 0 == ArithTuple(0, 0)
    assert ArithTuple(5) != 5  # a coordinate is never a non-zero scalar
    assert ArithTuple(1, 5) != ArithTuple(1, (5,))
    assert ArithTuple(1, 0) != ArithTuple(0, 1)
    assert ArithTuple(1, 2) != "x"
    assert hash(ArithTuple(1, 0)) == hash(ArithTuple(1)) == hash(E(0))
    assert hash(ArithTuple(0, 0)) == hash(0)
    assert len({ArithTuple(1, 0), E(0), ArithTuple((1,))}) == 1
    assert not ArithTuple(0, 0) and ArithTuple(0, 1)
    # a ScaledBasis of value 0 is the zero vector (C++ compares the modes too)
    assert 0 * E(1) == 0 == 0 * E(0)


def test_arith_operations():
    a, b = ArithTuple(1, (2, 3)), ArithTuple(10, (20,), 5)
    assert a + b == (11, (22, 3), 5)
    assert b - a == (9, (18, -3), 5)
    assert -a == (-1, (-2, -3))
    assert 2 * a == a * 2 == (2, (4, 6))
    assert abs(ArithTuple(-1, (2, -3))) == (1, (2, 3))
    assert a + 0 == a and 0 + a == a and a - 0 == a and 0 - a == -a
    assert sum([E(0), E(1), 3 * E(1)]) == (1, 4)
    assert a + (1, (1, 1)) == (2, (3, 4))  # plain tuples lift
    assert np.int64(3) * E(1) == 3 * E(1)  # numpy ints do not broadcast
    assert E(1) * np.int32(2) == ScaledBasis(2, (1,))
    assert isinstance(2 * E(1), ScaledBasis) and isinstance(-E(1), ScaledBasis)
    assert isinstance(E(0) + E(1), ArithTuple)
    assert pickle.loads(pickle.dumps(a)) == a
    assert pickle.loads(pickle.dumps(3 * E(1, 0))) == 3 * E(1, 0)
    assert as_arith_tuple((1, (2,))) == ArithTuple(1, (2,)) and as_arith_tuple(4) == 4
    assert is_coordinate(E(0)) and not is_coordinate(3)
    assert list(ArithTuple(1, 2)) == [1, 2] and ArithTuple(1, 2)[1] == 2 and len(ArithTuple()) == 0


@pytest.mark.parametrize(
    "bad",
    [
        lambda: ArithTuple(1, 2) + 3,  # a non-zero scalar plus a coordinate
        lambda: 3 + E(0),
        lambda: E(0) - 1,
        lambda: E(0) * E(1),
        lambda: E(0) * 1.5,
        lambda: E(0) + "x",
        lambda: E(-1),
        lambda: E("a"),
        lambda: E(1 << 20),
        lambda: ScaledBasis(1.5, (0,)),
        lambda: ArithTuple(1, "x"),
        lambda: ArithTuple(True),
    ],
)
def test_arith_bad_input_is_malformed(bad):
    with pytest.raises(MalformedLayoutError):
        bad()


def test_coordinates_are_not_ordered():
    for op in (
        lambda: E(0) < E(1),
        lambda: E(0) <= 0,
        lambda: 0 > E(0),
        lambda: E(0) >= 1,
        lambda: sorted([E(0), E(1)]),
    ):
        with pytest.raises(InadmissibleError) as ei:
            op()
        assert ei.value.condition == "integer strides"


_ints = st.integers(-50, 50)
_profile = st.recursive(st.none(), lambda ch: st.lists(ch, max_size=3).map(tuple), max_leaves=6)


@st.composite
def _ats(draw, n=3):
    """n ArithTuples over one profile (each possibly truncated: trailing zeros implied)."""
    prof = draw(st.lists(_profile, min_size=1, max_size=4).map(tuple))

    def fill(p):
        if p is None:
            return draw(_ints)
        k = draw(st.integers(0, len(p)))
        return tuple(fill(e) for e in p[:k])

    return [ArithTuple(fill(prof)) for _ in range(n)]


@settings(max_examples=examples(150))
@given(_ats(), _ints, _ints)
def test_module_laws(abc, k, m):
    """Z^S is a module: + is an abelian group with 0, * distributes; hashes follow ==."""
    a, b, c = abc
    assert a + b == b + a
    assert (a + b) + c == a + (b + c)
    assert a + 0 == a and a - a == 0 and a + (-a) == 0
    assert k * (a + b) == k * a + k * b
    assert (k + m) * a == k * a + m * a
    assert (k * m) * a == k * (m * a)
    if a == b:
        assert hash(a) == hash(b)
    assert hash(a + b - b) == hash(a)


# ----------------------------------------------------------------------------- identity layout
def test_make_basis_like_and_identity():
    assert make_basis_like((4, (2, 3))) == (E(0), (E(1, 0), E(1, 1)))
    assert make_basis_like(8) == 1
    I = make_identity_layout((4, 8))
    assert str(I) == "(4,8):(1@0,1@1)"
    assert repr(I) == "Layout((4, 8), (E(0), E(1)))"
    assert I == Layout((4, 8), (E(0), E(1)))
    assert hash(I) == hash(Layout((4, 8), (E(0), E(1))))
    assert str(make_identity_layout(8)) == "8:1"
    assert has_coordinate_strides(I) and not has_coordinate_strides(Layout(8))
    for bad in ((0, 2), "x", (4, -1)):
        with pytest.raises(MalformedLayoutError):
            make_identity_layout(bad)


IDENTITY_SHAPES = [
    8,
    (8,),
    (4, 8),
    (3, 5),
    (4, (2, 3)),
    ((2, 2), (3, 2)),
    (2, (3, (2, 2)), 2),
    ((4,), 2, (1, 3)),
]


@pytest.mark.parametrize("shape", IDENTITY_SHAPES, ids=str)
def test_identity_maps_every_coordinate_to_itself(shape):
    I = make_identity_layout(shape)
    vals = I.eval_all()
    assert I.coshape == shape and I.cosize == product(shape) and I.size == product(shape)
    for i in range(I.size):
        nat = idx2crd(i, shape)
        assert I(i) == nat
        assert plain(I(i)) == nat if isinstance(shape, tuple) else I(i) == nat
        assert I(nat) == nat
        assert vals[i] == nat  # eval_all: plain tuples, colex order
    # every coordinate exactly once
    assert len({v for v in vals}) == I.size


@settings(max_examples=examples(60))
@given(shapes(max_size=256))
def test_identity_hypothesis(shape):
    I = make_identity_layout(shape)
    vals = I.eval_all()
    assert len(vals) == product(shape)
    for i in range(0, len(vals), max(1, len(vals) // 23)):
        assert vals[i] == idx2crd(i, shape) == I(i)
    assert I.coshape == shape


def test_layout_validation_and_mixing():
    assert Layout((4, 8), (E(0), 0)).cosize == 4  # zero integers mix with bases
    with pytest.raises(MalformedLayoutError):
        Layout((4, 8), (E(0), "x"))
    with pytest.raises(MalformedLayoutError):
        Layout((4, 8), E(0))  # not congruent
    L = Layout((2, 2), (1, E(0)))  # a non-zero scalar and a basis
    with pytest.raises(MalformedLayoutError):
        L(1, 1)
    with pytest.raises(MalformedLayoutError):
        L.cosize  # noqa: B018
    with pytest.raises(MalformedLayoutError):
        L.eval_all()


def test_slicing_identity():
    I = make_identity_layout((4, 8))
    sub, off = slice_and_offset((_, 3), I)
    assert str(sub) == "(4):(1@0)" and off == (0, 3)
    for m in range(4):
        assert off + sub(m) == (m, 3)
    assert I(_, 3) == sub
    sub, off = slice_and_offset((2, _), make_identity_layout((4, (2, 3))))
    assert off == (2, 0) and sub(4) + off == (2, (0, 2))


def test_coalesce_filter_on_coordinates():
    assert str(coalesce(make_identity_layout((4, 8)))) == "(4,8):(1@0,1@1)"
    assert str(coalesce(Layout((2, 4), (E(0), 2 * E(0))))) == "8:1@0"
    assert str(lp_filter(Layout((2, 4), (0 * E(0), E(1))))) == "4:1@1"
    R = coalesce(make_identity_layout(((2, 2), (3, 2))))
    I = make_identity_layout(((2, 2), (3, 2)))
    assert all(R(i) == I(i) for i in range(I.size))


# ----------------------------------------------------------------------------- composition
def check_composition(S, B):
    """composition(I_S, B) is B-compatible and equals Î(B(c)) for every c, or raises a
    typed InadmissibleError."""
    I = make_identity_layout(S)
    try:
        R = composition(I, B)
    except InadmissibleError as e:
        assert e.condition
        return None
    assert R.size == B.size
    bv = B.eval_all()
    rv = R.eval_all()
    for c in range(B.size):
        x = int(bv[c])
        assert norm(R(c), S) == ext_crd(x, S), (S, B, R, c)
        assert norm(rv[c], S) == ext_crd(x, S)
    return R


@pytest.mark.parametrize(
    "S,B,expect",
    [
        ((4, 8), Layout(8, 4), "8:1@1"),
        ((4, 8), Layout((2, 4), (2, 8)), "(2,4):(2@0,2@1)"),
        ((8, 6), Layout((4, 3), (1, 8)), "(4,3):(1@0,1@1)"),
        ((4, 6), Layout(2, 3), "2:3@0"),  # decided exactly (3 and 4 coprime)
        ((4, 6, 8, 10), Layout(6, 12), "(2,3):(3@1,1@2)"),  # Carlisle et al.'s example
        ((4, 6), Layout(3, 1), "3:1@0"),
    ],
)
def test_composition_examples(S, B, expect):
    R = check_composition(S, B)
    assert str(R) == expect


@pytest.mark.parametrize(
    "S,B,cond,witness",
    [
        ((4, 8), Layout(8, 3), "stride divisibility", 2),
        ((4, 6), Layout(6, 1), "shape divisibility", 4),
        ((6, 2), Layout((3, 2), (2, 3)), "disjointness of B's modes in A", 5),  # Shah's example
        ((4, 6), Layout((2, 2), (3, 1)), "disjointness of B's modes in A", 3),
        ((4, 6), Layout(2, -1), "non-negative strides of B", 1),
    ],
)
def test_composition_side_conditions(S, B, cond, witness):
    with pytest.raises(InadmissibleError) as ei:
        composition(make_identity_layout(S), B)
    assert ei.value.condition == cond and ei.value.witness == witness
    I = make_identity_layout(S)
    if witness is not None and cond != "non-negative strides of B":
        # the mode-by-mode layout C++ would return differs from I(B(.)) there, or no layout of
        # B's size reproduces I(B(.)) at all (the witness is where linearity breaks)
        x = B(witness)
        assert I(x) == ext_crd(x, S)


@settings(max_examples=examples(120))
@given(st.data())
def test_composition_postcondition(data):
    S = data.draw(shapes(max_size=96, max_depth=2, max_rank=3))
    B = data.draw(layouts(max_size=64, kind="nonneg", max_depth=2, max_rank=3))
    check_composition(S, B)


@settings(max_examples=examples(80))
@given(st.data())
def test_composition_agrees_with_compact_layout(data):
    """Where the integer algebra composes the compact layout of S with B, the coordinate
    algebra composes the identity of S with B, and crd2idx maps one onto the other."""
    S = data.draw(shapes(max_size=96, max_depth=2, max_rank=3))
    B = data.draw(layouts(max_size=64, kind="nonneg", max_depth=2, max_rank=3))
    try:
        Ri = composition(Layout(S), B)
    except InadmissibleError:
        return
    R = check_composition(S, B)
    if R is None:
        # the integer result may coalesce digits the coordinates keep apart; then it must
        # mix components: confirm no layout of B's shape reproduces I(B(.)) mode by mode
        return
    from layoutproof import crd2idx

    fs = flatten(S)
    for c in range(B.size):
        nat = norm(R(c), S)
        # crd2idx with the last mode unbounded == the compact layout's (extended) value
        if isinstance(S, tuple):
            flat = list(flatten(nat)) + [0] * (len(fs) - len(flatten(nat)))
            idx, p = 0, 1
            for x, s in zip(flat, fs):
                idx += x * p
                p *= s
        else:
            idx = nat
        assert idx == Ri(c)
    assert crd2idx(0, S) == 0


def test_composition_tuple_tilers():
    I = make_identity_layout((8, 6))
    R = composition(I, (Layout(4, 2), Layout(3, 2)))
    assert str(R) == "(4,3):(2@0,2@1)"
    for m, n in itertools.product(range(4), range(3)):
        assert R(m, n) == (2 * m, 2 * n)
    assert str(composition(I, (Layout(4, 2),))) == "(4):(2@0)"  # C++ drops mode 1
    assert str(composition(I, (_, 3))) == "(8,3):(1@0,1@1)"


# ----------------------------------------------------------------------------- divides
@pytest.mark.parametrize(
    "M,N,tm,tn", [(8, 6, 4, 3), (16, 16, 4, 8), (12, 10, 3, 5), (6, 4, 6, 1), (4, 8, 1, 1), (32, 8, 8, 8)]
)
def test_zipped_divide_identity_enumerates_every_coordinate_once(M, N, tm, tn):
    I = make_identity_layout((M, N))
    Z = zipped_divide(I, (tm, tn))
    assert Z.shape == ((tm, tn), (M // tm, N // tn))
    seen = [norm(v, (M, N)) for v in Z.eval_all()]
    assert sorted(seen) == sorted(itertools.product(range(M), range(N)))
    # tile (i, j), element (a, b) is (i*tm + a, j*tn + b)
    for i, j, a, b in itertools.product(range(M // tm), range(N // tn), range(tm), range(tn)):
        assert Z((a, b), (i, j)) == (i * tm + a, j * tn + b)


@pytest.mark.parametrize("M,N,tm,tn", [(7, 6, 4, 4), (10, 3, 3, 2), (5, 5, 2, 3)])
def test_zipped_divide_identity_with_residue(M, N, tm, tn):
    """Tiles that do not divide the shape cover it once, plus coordinates past the end (C++
    semantics: predicate them with the identity tensor)."""
    Z = zipped_divide(make_identity_layout((M, N)), (tm, tn))
    seen = [norm(v, (M, N)) for v in Z.eval_all()]
    inside = [v for v in seen if v[0] < M and v[1] < N]
    assert sorted(inside) == sorted(itertools.product(range(M), range(N)))
    assert len(seen) == len(set(seen))
    assert Z.size == -(-M // tm) * tm * -(-N // tn) * tn


@settings(max_examples=examples(60))
@given(st.data())
def test_divides_of_identity_are_bijections(data):
    """zipped/tiled/flat/logical divides of an identity layout by tiles that divide it
    enumerate every coordinate exactly once."""
    rank = data.draw(st.integers(1, 3))
    tiles = [data.draw(st.sampled_from([1, 2, 3, 4])) for _ in range(rank)]
    reps = [data.draw(st.integers(1, 4)) for _ in range(rank)]
    S = tuple(t * r for t, r in zip(tiles, reps))
    I = make_identity_layout(S)
    want = sorted(itertools.product(*(range(s) for s in S)))
    for f in (zipped_divide, tiled_divide, flat_divide, logical_divide):
        D = f(I, tuple(tiles))
        got = sorted(norm(v, S) for v in D.eval_all())
        assert got == want, (f.__name__, S, tiles, D)


def test_logical_divide_by_layout_tiler():
    I = make_identity_layout((4, 8))
    D = logical_divide(I, Layout((2, 4), (1, 8)))  # a 2x4... as a 1-D tiler of the 32 coords
    vals = sorted(norm(v, (4, 8)) for v in D.eval_all())
    assert vals == sorted(itertools.product(range(4), range(8)))
    assert D.shape[0] == (2, 4)
    # the tile is the 1-D positions {0,1,8,9,16,17,24,25} of I
    tile = [D(t, 0) for t in range(8)]
    assert tile == [I(p) for p in (0, 1, 8, 9, 16, 17, 24, 25)]


# ----------------------------------------------------------------------------- unsupported
@pytest.mark.parametrize(
    "op",
    [
        lambda I: complement(I),
        lambda I: complement(I, 64),
        lambda I: logical_product(I, Layout(2)),
        lambda I: blocked_product(I, Layout((2, 2))),
        lambda I: raked_product(I, Layout((2, 2))),
    ],
)
def test_operations_cpp_rejects_raise(op):
    I = make_identity_layout((4, 8))
    with pytest.raises(InadmissibleError) as ei:
        op(I)
    assert ei.value.condition == "integer strides"
    assert isinstance(ei.value, LayoutError)


def test_composition_with_basis_strides_on_the_right():
    """C++ composes a leaf n : v@i of B with mode i of A (issue 18; more in
    tests/algebra/test_parity_cute.py); index 0 of an integer mode is the mode (C++ get<0>)."""
    assert composition(Layout(32), Layout(4, E(0))) == Layout(4, 1)
    assert composition(Layout((4, 8), (8, 1)), Layout((8, 4), (E(1), E(0)))) == Layout((8, 4), (1, 8))
    with pytest.raises(MalformedLayoutError):
        composition(Layout(32), Layout(4, E(1)))


def test_right_inverse_of_identity_is_the_compact_layout():
    """C++ does not compile it; PyCuTe inverts each codomain axis (docs/semantics.md §7.2)."""
    assert str(right_inverse(make_identity_layout((4, 8)))) == "(4,8):(1,4)"
