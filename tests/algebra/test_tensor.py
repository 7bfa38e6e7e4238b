"""Tensors (layoutproof.tensor): indexing and slicing views, identity tensors, the
partitioning utilities (local_tile, local_partition) against numpy slicing and C++
semantics, and the talk's rank-1 copy and reference gemm against numpy for many layouts.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from conftest import examples, layouts
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutproof import (
    InadmissibleError,
    Layout,
    LayoutError,
    LayoutRight,
    MalformedLayoutError,
    OutOfDomainError,
    _,
    idx2crd,
    make_ordered_layout,
)
from layoutproof.arith import ArithTuple, E, make_identity_layout
from layoutproof.tensor import (
    CoordinateEngine,
    Tensor,
    clear,
    composition,
    copy,
    copy_if,
    fill,
    flat_divide,
    gemm,
    inner_partition,
    local_partition,
    local_tile,
    logical_divide,
    make_identity_tensor,
    make_tensor,
    outer_partition,
    tiled_divide,
    zipped_divide,
)
from layoutproof.tensor import (
    _dice as dice,
)


def crd(v):
    return v.to_tuple() if isinstance(v, ArithTuple) else v


# ----------------------------------------------------------------------------- basics
def test_indexing_and_views():
    buf = np.arange(24)
    t = make_tensor(buf, Layout((4, 6), (6, 1)))  # row-major 4x6
    assert t.shape == (4, 6) and t.size == 24 and t.rank == 2 and len(t) == 24
    assert t(2, 3) == t[2, 3] == t[(2, 3)] == 15
    assert t(5) == 7  # 5 = (1, 1): 6*1 + 1
    assert [int(x) for x in t][:5] == [0, 6, 12, 18, 1]  # colexicographic order
    row = t(2, _)
    assert str(row.layout) == "(6):(1)" and row.offset == 12
    assert row.engine is t.engine  # a view
    assert [int(x) for x in row] == list(range(12, 18))
    col = t[:, 4]
    assert col.offset == 4 and [int(x) for x in col] == [4, 10, 16, 22]
    t[1, 1] = 100
    assert buf[7] == 100 and col.storage is t.data
    # nested slicing accumulates offsets
    sub = t(_, 3)(_)
    assert sub.offset == 3
    assert repr(t).startswith("Tensor(int64[24]+0 o (4,6):(6,1)")


def test_hierarchical_coordinates():
    L = Layout((4, (2, 2)), (2, (1, 8)))
    t = make_tensor(list(range(32)), L)
    for i in range(L.size):
        assert t(i) == L(i) == t[idx2crd(i, L.shape)]
    s = t(_, (1, _))
    assert s.shape == (4, 2) and s.offset == 1
    assert all(s(m, k) == L(m, (1, k)) for m in range(4) for k in range(2))


def test_make_tensor_from_ndarray_uses_its_strides():
    a = np.arange(60).reshape(5, 12)
    for view in (a, a.T, a[1:4, 2:11:3], a[::-1, ::2], a.T[::-2], a[:, 5]):
        t = make_tensor(view)
        for idx in itertools.product(*(range(n) for n in view.shape)):
            assert t(*idx) == view[idx]
        assert np.array_equal(t.to_numpy(), view)
    v = a[::2, ::-3]
    t = make_tensor(v)
    t[1, 2] = -1
    assert a[2, 11 - 6] == -1  # writes reach the array


def test_make_tensor_forms():
    t = make_tensor([1, 2, 3])
    assert str(t.layout) == "3:1" and list(t) == [1, 2, 3]
    t = make_tensor(np.zeros(12), (3, 4))
    assert str(t.layout) == "(3,4):(1,3)"
    t = make_tensor(np.zeros(16), (3, 4), (1, 4))
    assert str(t.layout) == "(3,4):(1,4)"
    t = make_tensor(np.arange(12.0).reshape(3, 4), Layout((4, 3), (1, 4)))  # C-contiguous: flat
    assert t(1, 2) == 9.0
    t = make_tensor(list(range(10)), Layout(4, 2), offset=2)
    assert list(t) == [2, 4, 6, 8]


@pytest.mark.parametrize(
    "bad,err",
    [
        (lambda: make_tensor(np.zeros(10), (3, 4)), OutOfDomainError),  # too short
        (lambda: make_tensor([0] * 8, Layout(4, -1)), OutOfDomainError),  # negative reach
        (lambda: make_tensor([0] * 8, Layout(4, -1), offset=3), None),  # fine
        (lambda: make_tensor(5, (2, 2)), MalformedLayoutError),
        (lambda: make_tensor("abcd", 4), MalformedLayoutError),
        (lambda: make_tensor(np.zeros((4, 4))[:, ::2], (4, 2)), MalformedLayoutError),
        (lambda: make_tensor(np.zeros(4), (2, 2), offset=1.5), MalformedLayoutError),
        (lambda: make_tensor(np.zeros(4), (0, 2)), MalformedLayoutError),
        (lambda: make_tensor(np.zeros(8), make_identity_layout((2, 4))), MalformedLayoutError),
        (lambda: make_tensor(np.zeros(0)), MalformedLayoutError),
        (lambda: make_tensor(np.zeros(4), Layout(4), (1,)), MalformedLayoutError),
        (lambda: make_tensor(np.zeros(4))(4), OutOfDomainError),
        (lambda: make_tensor(np.zeros(4))(1, 1), OutOfDomainError),
        (lambda: make_tensor(np.zeros(4))("x"), MalformedLayoutError),
        (lambda: make_tensor(np.zeros(4))(), MalformedLayoutError),
        (lambda: make_tensor(np.zeros(4))[1:3], MalformedLayoutError),
        (lambda: make_tensor(np.zeros(4))[...], MalformedLayoutError),
        (lambda: make_tensor(np.zeros(4)).__setitem__(_, 1), MalformedLayoutError),
        (lambda: make_identity_tensor((2, 2)).__setitem__((0, 0), 1), MalformedLayoutError),
        (lambda: Tensor(Layout(4), Layout(4)), MalformedLayoutError),
    ],
)
def test_tensor_bad_input(bad, err):
    if err is None:
        bad()
        return
    with pytest.raises(err):
        bad()


def test_to_numpy():
    t = make_tensor(np.arange(12), Layout((3, 4), (4, 1)))
    assert np.array_equal(t.to_numpy(), np.arange(12).reshape(3, 4))
    assert np.array_equal(t.numpy(), t.to_numpy())
    h = make_tensor(list(range(32)), Layout(((2, 2), (2, 4)), ((1, 4), (2, 8))))
    assert h.to_numpy().shape == (4, 8)
    assert all(h.to_numpy()[m, n] == h(m, n) for m in range(4) for n in range(8))
    o = make_tensor(["a", "b", "c", "d"], (2, 2)).to_numpy()
    assert o.tolist() == [["a", "c"], ["b", "d"]]
    I = make_identity_tensor((2, 3)).to_numpy()
    assert I.shape == (2, 3) and I[1, 2] == (1, 2) and I.dtype == object


# ----------------------------------------------------------------------------- identity tensors
@pytest.mark.parametrize("shape", [(4, 8), (3, (2, 2)), ((2, 3), 5), 6], ids=str)
def test_identity_tensor(shape):
    I = make_identity_tensor(shape)
    L = make_identity_layout(shape)
    assert I.layout == L and isinstance(I.engine, CoordinateEngine)
    for i in range(I.size):
        nat = idx2crd(i, shape)
        assert I(i) == nat and crd(I(i)) == nat and I[nat] == nat
    assert [crd(x) for x in I] == [idx2crd(i, shape) for i in range(I.size)]
    assert "ArithTuple" in repr(I)


def test_identity_tensor_slices_keep_full_coordinates():
    I = make_identity_tensor((4, 8))
    col = I(_, 3)
    assert crd(col(0)) == (0, 3) and crd(col(2)) == (2, 3)
    row = I(0, _)
    assert crd(row(0)) == (0, 0)  # full rank even where every term is zero


# ----------------------------------------------------------------------------- local_tile
@pytest.mark.parametrize("order", ["row", "col", "padded"])
@pytest.mark.parametrize("M,N,bm,bn", [(8, 12, 4, 3), (16, 16, 8, 4), (6, 10, 2, 5), (4, 4, 4, 4)])
def test_local_tile_is_numpy_slicing(order, M, N, bm, bn):
    ref = np.arange(M * N).reshape(M, N)
    if order == "row":
        t = make_tensor(ref.reshape(-1).copy(), LayoutRight((M, N)))
    elif order == "col":
        t = make_tensor(ref.T.reshape(-1).copy(), Layout((M, N)))
    else:
        buf = np.full(M * (N + 3), -1)
        t = make_tensor(buf, Layout((M, N), (N + 3, 1)))
        for m, n in itertools.product(range(M), range(N)):
            t[m, n] = ref[m, n]
    for i, j in itertools.product(range(M // bm), range(N // bn)):
        tile = local_tile(t, (bm, bn), (i, j))
        assert tile.shape == (bm, bn)
        assert np.array_equal(tile.to_numpy(), ref[i * bm : (i + 1) * bm, j * bn : (j + 1) * bn])
    all_tiles = local_tile(t, (bm, bn), (_, _))  # (bm, bn, M/bm, N/bn)
    assert all_tiles.shape == (bm, bn, M // bm, N // bn)
    assert all_tiles(1 % bm, 0, M // bm - 1, 0) == ref[(M // bm - 1) * bm + 1 % bm, 0]


def test_local_tile_identity_and_integer_coord():
    I = make_identity_tensor((8, 6))
    T = local_tile(I, (4, 3), (1, 1))
    assert crd(T(0, 0)) == (4, 3) and crd(T(3, 2)) == (7, 5)
    T2 = local_tile(I, (4, 3), 3)  # integer coord: 1-D index of the rest modes
    assert all(T2(a, b) == T(a, b) for a in range(4) for b in range(3))
    with pytest.raises(MalformedLayoutError):
        local_tile(I, (4, 3), (1, 1, 0))
    # extra tensor modes are kept (append<R1>(coord, _))
    I3 = make_identity_tensor((8, 6, 2))
    T3 = local_tile(I3, (4, 3), (1, 0))
    assert T3.shape == (4, 3, 2) and crd(T3(1, 2, 1)) == (5, 2, 1)


def test_local_tile_with_projection_gemm_tiles():
    """The C++ comment's example: A (M,K), B (N,K), C (M,N) tiled by (BM,BN,BK) at
    (bx, by, _) with Step<_1,X,_1>, Step<X,_1,_1>, Step<_1,_1,X>."""
    M, N, K, BM, BN, BK = 16, 12, 8, 4, 6, 2
    mA, mB, mC = make_identity_tensor((M, K)), make_identity_tensor((N, K)), make_identity_tensor((M, N))
    tiler, coord = (BM, BN, BK), (2, 1, _)
    gA = local_tile(mA, tiler, coord, proj=(1, _, 1))
    gB = local_tile(mB, tiler, coord, proj=(_, 1, 1))
    gC = local_tile(mC, tiler, coord, proj=(1, 1, _))
    assert gA.shape == (BM, BK, K // BK) and gB.shape == (BN, BK, K // BK) and gC.shape == (BM, BN)
    for m, k, kt in itertools.product(range(BM), range(BK), range(K // BK)):
        assert crd(gA(m, k, kt)) == (2 * BM + m, kt * BK + k)
    for n, k, kt in itertools.product(range(BN), range(BK), range(K // BK)):
        assert crd(gB(n, k, kt)) == (1 * BN + n, kt * BK + k)
    assert crd(gC(3, 5)) == (2 * BM + 3, BN + 5)


def test_dice():
    assert dice((1, _, 1), (32, 64, 4)) == (32, 4)
    assert dice((1, None, 1), (0, 1, _)) == (0, _)
    assert dice(1, (3, 4)) == (3, 4) and dice(_, (3, 4)) == ()
    assert dice((1, (1, _)), (1, (2, 3))) == (1, 2)  # nested: C++ flattens
    assert str(dice((1, _, 1), Layout((2, 16, 1), (16, 1, 0)))) == "(2,1):(16,0)"
    with pytest.raises(MalformedLayoutError):
        dice((1, _), (1, 2, 3))


# ----------------------------------------------------------------------------- local_partition
def test_local_partition_seed_example_every_element_once():
    """C++'s comment: data (16,64), thread layout (2,16), thr_data (8,4); over all threads
    every element is owned exactly once."""
    data = make_identity_tensor((16, 64))
    for thr_layout in (
        Layout((2, 16)),
        Layout((2, 16), (16, 1)),
        Layout((4, 8), (1, 4)),
        Layout((2, (4, 4)), (16, (1, 4))),
    ):
        owner = {}
        T0 = thr_layout.shape[0]
        T1 = thr_layout.size // T0
        for tid in range(thr_layout.size):
            part = local_partition(data, thr_layout, tid)
            assert part.shape == (16 // T0, 64 // T1)
            for v in part:
                c = crd(v)
                assert c not in owner, (tid, c, owner.get(c))
                owner[c] = tid
                # the thread's elements are congruent to its coordinate in thr_layout
                assert thr_layout(c[0] % T0, c[1] % T1) == tid
        assert len(owner) == 16 * 64


def test_local_partition_shapes_and_values():
    data = make_identity_tensor((16, 64))
    thr = local_partition(data, Layout((2, 16), (16, 1)), 17)  # thread 17 = (1, 1)
    assert thr.shape == (8, 4)
    for i, j in itertools.product(range(8), range(4)):
        assert crd(thr(i, j)) == (1 + 2 * i, 1 + 16 * j)
    # projections: A, B, C of a gemm partitioned by a (2,16,1) thread layout
    tl = Layout((2, 16, 1), (16, 1, 0))
    A, B, C = make_identity_tensor((8, 6)), make_identity_tensor((32, 6)), make_identity_tensor((8, 32))
    tA = local_partition(A, tl, 17, proj=(1, _, 1))
    tB = local_partition(B, tl, 17, proj=(_, 1, 1))
    tC = local_partition(C, tl, 17, proj=(1, 1, _))
    assert tA.shape == (4, 6) and tB.shape == (2, 6) and tC.shape == (4, 2)
    assert crd(tA(1, 5)) == (3, 5) and crd(tB(1, 2)) == (17, 2) and crd(tC(2, 1)) == (5, 17)


def test_local_partition_bad_index():
    data = make_identity_tensor((8, 8))
    with pytest.raises(OutOfDomainError):
        local_partition(data, Layout((2, 4)), 8)
    with pytest.raises(OutOfDomainError):
        local_partition(data, Layout((2, 2), (1, 1)), 1)  # non-injective thread layout
    with pytest.raises(MalformedLayoutError):
        local_partition(data, Layout((2, 4)), 1.0)
    with pytest.raises(MalformedLayoutError):
        local_partition(Layout(8), Layout(2), 0)


def test_seed_partitioning_is_composition_then_slicing():
    """The talk's slide: a 4x8 tensor of letters, thr-val layout ((2,4),(2,2)):((8,1),(4,16))
    composed with it, sliced at a thread: T0 holds a e q u, T1 holds i m y γ."""
    letters = list("abcdefghijklmnopqrstuvwxyzαβγδεη")
    data = make_tensor(letters, Layout((4, 8)))  # column-major, as on the slide
    tv = Layout(((2, 4), (2, 2)), ((8, 1), (4, 16)))
    tv_data = composition(data, tv)
    rows = [[tv_data(t, v) for v in range(4)] for t in range(8)]
    assert rows[0] == list("aequ") and rows[1] == list("imyγ")
    assert rows[2] == list("bfrv") and rows[7] == list("lpβη")
    owned = sorted(x for r in rows for x in r)
    assert owned == sorted(letters)  # each element exactly once
    # the same with an identity tensor: thread t owns coordinates, never twice
    I = composition(make_identity_tensor((4, 8)), tv)
    seen = [crd(I(t, v)) for t in range(8) for v in range(4)]
    assert sorted(seen) == sorted(itertools.product(range(4), range(8)))


def test_outer_inner_partition_and_divides_on_tensors():
    t = make_tensor(np.arange(48), (6, 8))
    z = zipped_divide(t, (3, 4))
    assert z.shape == ((3, 4), (2, 2)) and z.engine is t.engine
    assert tiled_divide(t, (3, 4)).shape == ((3, 4), 2, 2)
    assert flat_divide(t, (3, 4)).shape == (3, 4, 2, 2)
    assert logical_divide(t, (3, 4)).shape == ((3, 2), (4, 2))
    ip = inner_partition(t, (3, 4), (1, 0))
    op = outer_partition(t, (3, 4), (1, 0))
    assert ip.shape == (3, 4) and op.shape == (2, 2)
    assert ip(0, 0) == t(3, 0) and op(1, 1) == t(1 + 3, 0 + 4)
    assert t.compose((Layout(3, 2), Layout(2, 4))).shape == (3, 2)
    assert composition(Layout(8), Layout(4, 2)) == Layout(4, 2)  # layouts pass through


# ----------------------------------------------------------------------------- copy
COPY_TABLE = [  # the talk's table: (source layout, destination layout)
    ("1D", Layout(8, 1), Layout(8, 1)),
    ("ND", Layout((8, 2, 3), (1, 8, 16)), Layout((8, 2, 3), (1, 8, 16))),
    ("GATHER", Layout((2, 2, 2), (42, 1, 128)), Layout(8, 1)),
    ("SCATTER", Layout(8, 1), Layout((2, 2, 2), (42, 1, 128))),
    ("BROADCAST", Layout(8, 0), Layout(8, 1)),
    ("CONSTANT", Layout(8, 0), Layout(8, 0)),
    ("TRANSPOSE", Layout((8, 3), (1, 8)), Layout((8, 3), (3, 1))),
]


@pytest.mark.parametrize("name,S,D", COPY_TABLE, ids=[c[0] for c in COPY_TABLE])
@pytest.mark.parametrize("engine", ["numpy", "list"])
def test_copy_table(name, S, D, engine):
    n = max(S.cosize, D.cosize)
    src_buf = np.arange(1, n + 1) * 10
    dst_buf = np.zeros(n, dtype=np.int64)
    ref = dst_buf.copy()
    for i in range(S.size):  # the talk's loop
        ref[D(i)] = src_buf[S(i)]
    if engine == "list":
        src_buf, dst_buf = list(src_buf), list(dst_buf)
    copy(make_tensor(src_buf, S), dst := make_tensor(dst_buf, D))
    assert list(dst.engine) == list(ref)


def test_copy_aliasing_and_predicates():
    buf = np.arange(8)
    copy(make_tensor(buf, Layout(7, 1), offset=0), make_tensor(buf, Layout(7, 1), offset=1))
    assert buf.tolist() == [0] * 8  # sequential semantics
    buf = np.arange(6)
    dst = make_tensor(np.zeros(6, dtype=int), (6,))
    copy_if(lambda i: i % 2 == 0, make_tensor(buf), dst)
    assert dst.engine.tolist() == [0, 0, 2, 0, 4, 0]
    pred = make_tensor([True, False, True], (3,))
    d2 = make_tensor([0, 0, 0])
    copy_if(pred, make_tensor([7, 8, 9]), d2)
    assert d2.engine == [7, 0, 9]
    I = make_identity_tensor((2, 2))
    out = make_tensor([None] * 4)
    copy(I, out)
    assert [crd(x) for x in out.engine] == [(0, 0), (1, 0), (0, 1), (1, 1)]
    fill(d2, 5)
    assert d2.engine == [5, 5, 5]
    z = make_tensor(np.ones(4))
    clear(z)
    assert z.engine.tolist() == [0.0] * 4


def test_copy_size_mismatch():
    with pytest.raises(InadmissibleError) as ei:
        copy(make_tensor(np.zeros(8)), make_tensor(np.zeros(6)))
    assert ei.value.condition == "size(src) == size(dst)"
    with pytest.raises(InadmissibleError):
        copy_if(lambda i: True, make_tensor(np.zeros(8)), make_tensor(np.zeros(6)))
    with pytest.raises(MalformedLayoutError):
        copy(np.zeros(3), make_tensor(np.zeros(3)))
    with pytest.raises(MalformedLayoutError):
        copy_if(3, make_tensor(np.zeros(3)), make_tensor(np.zeros(3)))


@settings(max_examples=examples(60))
@given(layouts(max_size=64, kind="any"), st.data())
def test_copy_matches_the_loop(S, data):
    """copy == the talk's loop ``dst(i) = src(i)`` for random layouts (any strides, with
    broadcast and negative strides), both engines."""
    D = data.draw(layouts(max_size=S.size, kind="any").filter(lambda L: L.size == S.size))
    so = -min(0, sum((s - 1) * d for s, d in zip(_flat(S)[0], _flat(S)[1]) if d < 0))
    do = -min(0, sum((s - 1) * d for s, d in zip(_flat(D)[0], _flat(D)[1]) if d < 0))
    n = max(S.cosize, D.cosize) + max(so, do) + 1
    src = np.arange(n) * 3 + 1
    dst = np.zeros(n, dtype=np.int64)
    ref = dst.copy()
    for i in range(S.size):
        ref[do + D(i)] = src[so + S(i)]
    copy(make_tensor(src, S, offset=so), make_tensor(dst, D, offset=do))
    assert np.array_equal(dst, ref)


def _flat(L):
    return L._flat()


# ----------------------------------------------------------------------------- gemm
def _random_layout(rng, shape, kind):
    M, N = shape
    if kind == "col":
        return Layout((M, N))
    if kind == "row":
        return LayoutRight((M, N))
    if kind == "padded":
        return Layout((M, N), (1, M + int(rng.integers(1, 4))))
    if kind == "padded_row":
        return Layout((M, N), (N + int(rng.integers(1, 4)), 1))
    if kind == "hier":  # split each mode in two, strides permuted
        m1 = next(d for d in (2, 3, 1) if M % d == 0)
        n1 = next(d for d in (2, 3, 1) if N % d == 0)
        s = ((m1, M // m1), (n1, N // n1))
        order = tuple(int(x) for x in rng.permutation(4))
        return make_ordered_layout(s, ((order[0], order[1]), (order[2], order[3])))
    raise AssertionError(kind)


KINDS = ["col", "row", "padded", "padded_row", "hier"]


@pytest.mark.parametrize(
    "ka,kb,kc",
    [(a, b, c) for a in KINDS for b in KINDS for c in KINDS][::7]
    + [("col", "col", "col"), ("row", "row", "row"), ("hier", "hier", "hier")],
)
def test_gemm_matches_numpy(ka, kb, kc):
    rng = np.random.default_rng(KINDS.index(ka) * 25 + KINDS.index(kb) * 5 + KINDS.index(kc))
    M, N, K = 6, 4, 6
    LA, LB = _random_layout(rng, (M, K), ka), _random_layout(rng, (N, K), kb)
    LC = _random_layout(rng, (M, N), kc)
    a, b, c0 = rng.standard_normal((M, K)), rng.standard_normal((N, K)), rng.standard_normal((M, N))
    A, B, C = (make_tensor(np.zeros(L.cosize), L) for L in (LA, LB, LC))
    for T, ref in ((A, a), (B, b), (C, c0)):
        for i, j in itertools.product(*(range(n) for n in ref.shape)):
            T[i, j] = ref[i, j]
    gemm(A, B, C)
    assert np.allclose(C.to_numpy(), c0 + a @ b.T)
    # the same on list engines (the loop path) gives the same numbers
    A2, B2, C2 = (make_tensor(list(T.engine), T.layout) for T in (A, B, make_tensor(np.zeros(LC.cosize), LC)))
    for i, j in itertools.product(range(M), range(N)):
        C2[i, j] = c0[i, j]
    gemm(A2, B2, C2)
    assert np.allclose(C2.to_numpy().astype(float), c0 + a @ b.T)


def test_gemm_from_numpy_views_and_gett():
    rng = np.random.default_rng(7)
    a = rng.integers(-5, 5, (8, 6))
    b = rng.integers(-5, 5, (6, 10))  # B as (N,K) is b.T: a transposed view
    c = np.zeros((8, 10), dtype=np.int64)
    gemm(make_tensor(a), make_tensor(b.T), make_tensor(c))
    assert np.array_equal(c, a @ b)
    # GETT: A ((M1,M2),K), C ((M1,M2),N): hierarchical M mode
    A = make_tensor(a.reshape(-1).copy(), Layout(((2, 4), 6), ((6, 12), 1)))  # row-major a
    B = make_tensor(b.T.reshape(-1).copy(), LayoutRight((10, 6)))
    C = make_tensor(np.zeros(80, dtype=np.int64), Layout(((2, 4), 10)))
    gemm(A, B, C)
    assert np.array_equal(C.to_numpy(), a @ b)
    # outer product (M) x (N) -> (M,N)
    x, y = np.arange(3), np.arange(4)
    C = make_tensor(np.zeros((3, 4), dtype=np.int64))
    gemm(make_tensor(x), make_tensor(y), C)
    assert np.array_equal(C.to_numpy(), np.outer(x, y))


def test_gemm_broadcast_c_follows_the_loop():
    """C with a stride-0 mode accumulates every n into one element, as the loop does."""
    a, b = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(4, 3)
    C = make_tensor(np.zeros(2), Layout((2, 4), (1, 0)))
    gemm(make_tensor(a), make_tensor(b), C)
    assert np.allclose(C.engine, (a @ b.T).sum(axis=1))


@settings(max_examples=examples(40))
@given(st.integers(1, 5), st.integers(1, 5), st.integers(1, 5), st.data())
def test_gemm_hypothesis(M, N, K, data):
    def lay(shape):
        inner = data.draw(st.sampled_from([0, 1]))  # row- or column-major
        pad = data.draw(st.integers(0, 2))  # padded leading dimension
        d = [0, 0]
        d[inner], d[1 - inner] = 1, shape[inner] + pad
        return Layout(shape, tuple(d))

    rng = np.random.default_rng(M * 100 + N * 10 + K)
    a, b, c0 = (rng.integers(-9, 9, s) for s in ((M, K), (N, K), (M, N)))
    T = []
    for ref in (a, b, c0):
        L = lay(ref.shape)
        t = make_tensor(np.zeros(L.cosize, dtype=np.int64), L)
        for i, j in itertools.product(*(range(n) for n in ref.shape)):
            t[i, j] = ref[i, j]
        T.append(t)
    gemm(*T)
    assert np.array_equal(T[2].to_numpy(), c0 + a @ b.T)


@pytest.mark.parametrize(
    "shapes,cond",
    [
        (((4, 3), (5, 3), (4, 6)), "size<0>(B) == size<1>(C)"),
        (((4, 3), (5, 2), (4, 5)), "size<1>(A) == size<1>(B)"),
        (((4, 3), (5, 3), (3, 5)), "size<0>(A) == size<0>(C)"),
        (((4, 3, 2), (5, 3), (4, 5)), "operand ranks (M,K)x(N,K)->(M,N) or (M)x(N)->(M,N)"),
    ],
)
def test_gemm_incompatible(shapes, cond):
    A, B, C = (make_tensor(np.zeros(int(np.prod(s))), s) for s in shapes)
    with pytest.raises(InadmissibleError) as ei:
        gemm(A, B, C)
    assert ei.value.condition == cond
    with pytest.raises(MalformedLayoutError):
        gemm(A, B, np.zeros(3))


def test_errors_are_layout_errors():
    for f in (lambda: make_tensor(np.zeros(3), (4,)), lambda: dice((1,), (1, 2))):
        with pytest.raises(LayoutError):
            f()
    assert isinstance(E(0), ArithTuple)


_garbage = st.one_of(
    st.none(),
    st.integers(-5, 40),
    st.floats(allow_nan=True),
    st.text(max_size=2),
    st.tuples(st.integers(-1, 5), st.integers(-1, 9)),
    st.lists(st.integers(-2, 9), max_size=3),
    st.just(slice(1, 2)),
    st.just(Ellipsis),
    st.just(_),
    st.just(slice(None)),
    st.tuples(st.just(_), st.integers(-1, 9)),
    st.just(E(0)),
    st.booleans(),
)


@settings(max_examples=examples(150))
@given(_garbage, _garbage)
def test_garbage_raises_layout_errors_only(key, other):
    """Whatever the key or argument, the tensor API answers or raises a LayoutError."""
    t = make_tensor(np.arange(32), (4, 8))
    for f in (
        lambda: t[key],
        lambda: t(key),
        lambda: t(key, other),
        lambda: t.__setitem__(key, 1),
        lambda: make_tensor(np.arange(8), key),
        lambda: local_tile(t, key, other),
        lambda: local_partition(t, Layout((2, 2)), key),
        lambda: ArithTuple(key) + ArithTuple(other),
        lambda: E(0) * key,
        lambda: dice(key, other),
    ):
        try:
            f()
        except LayoutError:
            pass


# ----------------------------------------------------------------------------- issue 18 / 13
def test_tensor_on_a_swizzled_layout():
    """make_tensor(storage, swizzled): t(c) = storage[C(c)], slices are views with the
    slice offset inside the composed layout, partitioning and copy work as for layouts."""
    from layoutproof import ComposedLayout, Swizzle, tile_to_shape

    atom = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 64), (64, 1)))
    C = tile_to_shape(atom, (16, 64))
    data = np.arange(C.cosize) * 3
    t = make_tensor(data, C)
    for m in range(16):
        for n in range(64):
            assert t(m, n) == data[C(m, n)]
    row = t(5, _)
    assert [int(row(j)) for j in range(64)] == [int(data[C(5, j)]) for j in range(64)]
    assert t.to_numpy().shape == (16, 64)
    assert int(t.to_numpy()[3, 9]) == int(data[C(3, 9)])
    assert list(t) == [data[C(i)] for i in range(C.size)]
    tile = local_tile(t, (8, 8), (1, 2))
    assert int(tile(2, 3)) == int(data[C(8 + 2, 16 + 3)])
    dst = make_tensor(np.zeros(C.size, dtype=data.dtype), (16, 64))
    copy(t, dst)
    assert dst.to_numpy().tolist() == t.to_numpy().tolist()
    t[1, 1] = -1
    assert data[C(1, 1)] == -1
    fill(t(0, _), 7)
    assert all(data[C(0, j)] == 7 for j in range(64))
    with pytest.raises(OutOfDomainError):
        make_tensor(np.zeros(100), C)  # the swizzled offsets reach past the storage


def test_values_the_storage_cannot_hold_are_typed():
    """fill / t[c] = v / copy with a value the storage rejects: MalformedLayoutError (not
    numpy's ValueError), the numpy storage unchanged; a list takes any value."""
    a = np.zeros(6)
    t = make_tensor(a, (2, 3))
    for bad in (((2, 2), 3), "x", [1, 2]):
        with pytest.raises(MalformedLayoutError, match="rejected the value"):
            fill(t, bad)
        with pytest.raises(MalformedLayoutError, match="rejected the value"):
            t[1, 1] = bad
    assert a.tolist() == [0.0] * 6
    ro = make_tensor((0,) * 6, (2, 3))
    with pytest.raises(MalformedLayoutError, match="rejected the value"):
        fill(ro, 1)
    lst = make_tensor([0] * 6, (2, 3))
    fill(lst, ((2, 2), 3))
    assert lst.storage == [((2, 2), 3)] * 6
    src = make_tensor(np.array([(1, 2)] * 6 + [None], dtype=object)[:6], (2, 3))
    with pytest.raises(MalformedLayoutError, match="rejected the value"):
        copy(src, t)


def test_swizzled_bounds_of_a_large_tensor_without_evaluating(monkeypatch):
    """The storage check of a large swizzled layout bounds its values without evaluating
    them (a swizzle keeps each aligned 2**t block); the bound contains every value."""
    import layoutproof.tensor as T
    from layoutproof import ComposedLayout, Swizzle, composition, tile_to_shape

    cases = [
        tile_to_shape(composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1))), (64, 64)),
        ComposedLayout(Swizzle(2, 0, -2), 5, Layout((4, 6), (1, 4))),
        ComposedLayout(Layout(8, 3), 2, Layout((2, 3), (3, 1))),
    ]
    for C in cases:
        v = C.eval_all()
        exact = T._composed_range(C)
        assert exact == (int(v.min()), int(v.max()))
        monkeypatch.setattr(T, "_EXACT_RANGE_LIMIT", 0)
        lo, hi = T._composed_range(C)
        monkeypatch.undo()
        assert lo <= exact[0] and hi >= exact[1]

    class Sized:  # a storage with a length and no memory behind it
        def __init__(self, n):
            self.n = n

        def __len__(self):
            return self.n

        def __getitem__(self, i):
            return i

    big = tile_to_shape(composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1))), (1 << 14, 1 << 10))
    t = make_tensor(Sized(big.size), big)
    assert t(5, 7) == big(5, 7)
    with pytest.raises(OutOfDomainError):
        make_tensor(Sized(big.size - 1), big)


def test_fuzz_findings_overflow_and_deep_keys():
    """H4's fuzz (run 2): an int64 storage given 2**64 or inf, and a key nested 600 deep,
    raised OverflowError / RecursionError; both are MalformedLayoutError now."""
    a = np.arange(16)
    t = make_tensor(a, Layout((4, 4)))
    for v in (2**64, -(2**70), float("inf")):
        with pytest.raises(MalformedLayoutError, match="rejected the value"):
            fill(t, v)
        with pytest.raises(MalformedLayoutError, match="rejected the value"):
            t[1, 1] = v
    assert a.tolist() == list(range(16))
    k = 2
    for _level in range(600):
        k = (k,)
    with pytest.raises(MalformedLayoutError, match="nested deeper"):
        t[k]
    with pytest.raises(MalformedLayoutError, match="nested deeper"):
        t[k] = 1
