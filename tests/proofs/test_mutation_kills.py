"""Tests written against the survivors of the mutation run (``tools/mutation.py``).

Each test checks a documented semantic property of the algebra -- a post-condition, a
brute-force reference, or the error contract (an InadmissibleError names the violated
side condition) -- at a place where the rest of the suite did not look closely enough to
notice a deliberately planted bug.  The mutant that a test kills is named in its
docstring; none of the tests looks at source text.  Together they run in a few seconds.
"""

from __future__ import annotations

import itertools
import random

import pytest

from layoutproof import (
    ComposedLayout,
    InadmissibleError,
    Layout,
    LayoutError,
    Swizzle,
    UndecidableConditionError,
    assuming,
    symbols,
    tile_to_shape,
)
from layoutproof.inttuple import raw_flatten


# ----------------------------------------------------------------------------- swizzles
def _swizzles():
    for b, m in itertools.product((1, 2), (0, 1, 2)):
        for s in (b, b + 1, -b, -(b + 1)):
            yield Swizzle(b, m, s)


def _small_layouts(rng: random.Random, n: int):
    for _ in range(n):
        rank = rng.choice((1, 2, 3))
        shape = tuple(rng.choice((1, 2, 3, 4, 8)) for _ in range(rank))
        stride = tuple(rng.choice((0, 1, 2, 3, 4, 5, 7, 8, 9, 12, 16, -1, -3)) for _ in range(rank))
        yield Layout(shape, stride)


def test_composed_layout_cosize_is_the_exact_extent_of_its_values():
    """``cosize`` of ``Sw o offset o B`` is the length of the smallest interval holding every
    value (swizzle.py's documented semantics), computed here by brute force with the scalar
    swizzle.  The fast path (B's image is whole aligned 2**(M+B+|S|) blocks, so the
    swizzle keeps the set of values) must not fire when B has a stride that leaves the
    blocks.  Kills ``swizzle-block-closed`` (``swizzle-block-closed-chain`` is equivalent on
    values: see the next test but one)."""
    rng = random.Random(20261122)
    layouts = list(_small_layouts(rng, 120))
    # hand-picked: an aligned chain plus one unaligned stride, where the swizzle moves the
    # largest value up (B.cosize is 11, the values reach 11: the exact cosize is 12)
    layouts += [
        Layout((4, 2), (1, 7)),
        Layout((8, 2), (1, 9)),
        Layout((4, 2, 2), (1, 4, 6)),
        Layout((4, 2, 2), (1, 2, 4)),
    ]
    checked = 0
    for sw in _swizzles():
        blk = sw.size
        for B in layouts:
            for off in (0, blk, 3):
                C = ComposedLayout(sw, off, B)
                vals = [sw(off + B(i)) for i in range(B.size)]
                assert C.cosize == max(vals) - min(vals) + 1, (str(C), vals)
                checked += 1
    assert checked > 3000
    assert ComposedLayout(Swizzle(1, 0, 1), 0, Layout((4, 2), (1, 7))).cosize == 12


def test_composed_layout_cosize_fast_path_keeps_aligned_blocks():
    """The other side of the same rule: where B's values are whole aligned blocks the
    swizzle permutes each block within itself, so the cosize is B's (C++'s answer)."""
    sw = Swizzle(3, 3, 3)
    for B in (Layout((8, 64), (64, 1)), Layout((64, 8), (1, 64)), Layout((512, 2), (1, 1024))):
        C = ComposedLayout(sw, 0, B)
        vals = [sw(B(i)) for i in range(B.size)]
        assert C.cosize == B.cosize == max(vals) - min(vals) + 1


def test_composed_layout_cosize_is_exact_when_the_chain_resumes_after_a_gap():
    """Exact cosize (brute force, as above) where B's compact stride chain 1, s0, s0*s1, ...
    is interrupted by a stride that is a multiple of the block 2**(M+B+|S|) and then goes
    on, e.g. ``Sw<1,0,1> o 0 o (6,2,2):(1,4,6)``.  Such an image is still whole aligned
    blocks ([0, 12) plus a shift by 4), so the values are the same whether or not the fast
    path fires.  ``swizzle-block-closed-chain`` lets it fire here, and is therefore
    equivalent on every cosize value; it differs only in refusing less (a domain above the
    evaluation limit), so no value test kills it.  This test pins the semantics on the
    family it touches."""
    cases = [
        (Swizzle(1, 0, 1), 0, Layout((6, 2, 2), (1, 4, 6))),
        (Swizzle(1, 0, 1), 4, Layout((6, 2, 2), (1, -4, 6))),
        (Swizzle(1, 1, 1), 0, Layout((12, 2, 2), (1, 8, 12))),
        (Swizzle(1, 0, -1), 0, Layout((6, 2, 2, 3), (1, 4, 6, 12))),
        (Swizzle(2, 0, 2), 16, Layout((24, 2, 2), (1, -16, 24))),
    ]
    for sw, off, B in cases:
        vals = [sw(off + B(i)) for i in range(B.size)]
        C = ComposedLayout(sw, off, B)
        assert C.cosize == max(vals) - min(vals) + 1 == B.cosize, (str(C), vals)


# ----------------------------------------------------------------------------- make_layout_like
def _leaves(L: Layout) -> tuple:
    from layoutproof.inttuple import flatten

    return flatten(L.shape), flatten(L.stride)


def _check_layout_like(L: Layout) -> None:
    """The documented contract of make_layout_like (its docstring; C++'s
    ``make_layout_like``): the same shape, stride-0 leaves stay 0, and the other leaves get
    the compact (column-major) strides taken in the order of ``|stride|`` of ``L`` (ties by
    position), so the result is a bijection onto [0, product of those leaves' extents)."""
    from layoutproof import make_layout_like

    M = make_layout_like(L)
    assert M.shape == L.shape, (str(L), str(M))
    fs, fd = _leaves(L)
    _, md = _leaves(M)
    nz = [i for i in range(len(fs)) if fd[i] != 0]
    assert all(md[i] == 0 for i in range(len(fs)) if fd[i] == 0), (str(L), str(M))
    # ordered like L by magnitude: among leaves of extent > 1, a strictly larger |stride|
    # gets a strictly larger stride
    big = [i for i in nz if fs[i] > 1]
    for i, j in itertools.permutations(big, 2):
        if abs(fd[i]) < abs(fd[j]):
            assert md[i] < md[j], (str(L), str(M), i, j)
    # compact: the leaves with a nonzero stride cover [0, n) exactly once
    if nz:
        K = Layout(tuple(fs[i] for i in nz), tuple(md[i] for i in nz))
        assert sorted(K(c) for c in range(K.size)) == list(range(K.size)), (str(L), str(M))


def test_make_layout_like_orders_negative_strides_by_magnitude():
    """make_layout_like orders ``layout``'s strides "by absolute value" (its docstring), so a
    negative stride of large magnitude gets a large compact stride:
    ``make_layout_like((2,3):(-4,1)) == (2,3):(3,1)``.  Checked on hand-picked layouts and
    on random ones with negative strides against the documented contract.  Kills
    ``make-layout-like-abs`` (which sorts by signed value and gives ``(2,3):(1,2)``)."""
    from layoutproof import make_layout_like

    assert make_layout_like(Layout((2, 3), (-4, 1))) == Layout((2, 3), (3, 1))
    assert make_layout_like(Layout((4, (2, 3)), (-1, (0, -8)))) == Layout((4, (2, 3)), (1, (0, 4)))
    assert make_layout_like(Layout((2, 3, 2), (3, -1, -12))) == Layout((2, 3, 2), (3, 1, 6))
    rng = random.Random(20261123)
    for _ in range(300):
        rank = rng.choice((1, 2, 3, 4))
        shape = tuple(rng.choice((1, 2, 3, 4)) for _ in range(rank))
        stride = tuple(rng.choice((0, 1, 2, 3, 5, 8, -1, -2, -3, -6, -16)) for _ in range(rank))
        _check_layout_like(Layout(shape, stride))
    _check_layout_like(Layout(((2, 3), 4), ((-6, 0), -1)))


# ----------------------------------------------------------------------------- symbolic tile_to_shape
def test_symbolic_tile_to_shape_names_the_failed_condition_like_the_integer_path():
    """A block whose symbolic extent does not divide the target is refused with the same
    condition as the integer algebra ("block divides target"), not later by some other
    check.  Kills ``symops-tile-block-divides`` (which tests the divisibility the wrong way
    round, so the error only comes from the integrality of the extent 8/M)."""
    with pytest.raises(InadmissibleError) as ints:
        tile_to_shape(Layout(16, 1), 8)
    assert ints.value.condition == "block divides target"

    M = symbols("M")
    with assuming("M % 8 == 0", "M >= 16"), pytest.raises(InadmissibleError) as sym:
        tile_to_shape(Layout(M, 1), 8)
    assert sym.value.condition == ints.value.condition
    with assuming("M % 8 == 0"), pytest.raises(UndecidableConditionError) as und:
        tile_to_shape(Layout(M, 1), 8)
    assert "block divides target" in str(und.value)


def test_symbolic_tile_to_shape_accepts_what_is_proved():
    M = symbols("M")
    with assuming("M % 8 == 0"):
        T = tile_to_shape(Layout(8, 1), M)
    assert T.subs(M=64) == tile_to_shape(Layout(8, 1), 64)
    with pytest.raises(LayoutError):
        tile_to_shape(Layout(8, 1), M)  # nothing says 8 | M


# ----------------------------------------------------------------------------- exact composition, big strides
def _brute_compose(A: Layout, B: Layout) -> list:
    """A-hat(B(c)) for every 1-D coordinate c of B, in Python integers (A's last flat mode
    unbounded, as CuTe C++)."""
    fs, fd = raw_flatten(A.shape), raw_flatten(A.stride)

    def a_hat(x: int) -> int:
        off = 0
        for s, d in zip(fs[:-1], fd[:-1]):
            off += (x % s) * d
            x //= s
        return off + x * fd[-1]

    return [a_hat(B(c)) for c in range(B.size)]


@pytest.mark.parametrize("scale", [1, 2**20, 2**40, 2**61, 2**62, 2**70])
def test_exact_composition_is_exact_beyond_int64(scale):
    """Where CuTe's divisibility conditions fail, composition decides the leaf by evaluating
    it (numpy); offsets beyond int64 must be evaluated in Python integers, so the result is
    the same function at every scale of A's strides.  (4,2):(2,1) o 2:3 == 2:6 is CuTe-complete
    (C++'s stride divisibility fails, a layout exists).  Kills
    ``compose-exact-int64-overflow`` (int64 wraps 3*2**62 to -2**62)."""
    from layoutproof import composition

    A = Layout((4, 2), (2 * scale, scale))
    B = Layout(2, 3)
    R = composition(A, B)
    assert R == Layout(2, 6 * scale)
    assert [R(i) for i in range(R.size)] == _brute_compose(A, B)
    # a multi-mode B whose disjointness is decided by evaluation
    B2 = Layout((2, 2), (3, 8))
    R2 = composition(A, B2)
    assert [R2(i) for i in range(R2.size)] == _brute_compose(A, B2)


# ----------------------------------------------------------------------------- disjointness witnesses
def _by_mode(A: Layout, B: Layout, w: int) -> tuple:
    """(A-hat(B(w)), the sum of A-hat over B's modes at w's coordinates): they differ exactly
    where concatenating the per-mode compositions is not A o B."""
    fs, fd = raw_flatten(A.shape), raw_flatten(A.stride)

    def a_hat(x: int) -> int:
        off = 0
        for s, d in zip(fs[:-1], fd[:-1]):
            off += (x % s) * d
            x //= s
        return off + x * fd[-1]

    bs, bd = raw_flatten(B.shape), raw_flatten(B.stride)
    crd = []
    for s in bs:
        crd.append(w % s)
        w //= s
    return a_hat(sum(c * d for c, d in zip(crd, bd))), sum(a_hat(c * d) for c, d in zip(crd, bd))


def test_disjointness_witness_is_a_coordinate_where_the_modes_interfere():
    """InadmissibleError.witness of a failed disjointness check is a coordinate of B at which
    A(B(w)) differs from the mode-by-mode result (docs/architecture.md, composition step 4).
    In (2,2,2):(1,5,4) o (2,2,2,2):(1,1,1,1) the four modes' digits of A's mode 0 sum to 4,
    but at the all-ones coordinate the double carry lands on A's stride 4 == 2*2*1, so the
    values agree there; the witness is the prefix argument's (sym.composition-exact: the first
    two leaves, one carry).  Kills ``compose-disjoint-all-leaves`` (which reports the all-ones
    coordinate: "A(4) = 4 but ... 4")."""
    from layoutproof import composition

    rng = random.Random(7)
    pairs = [
        (Layout((2, 2, 2), (1, 5, 4)), Layout((2, 2, 2, 2), (1, 1, 1, 1))),
        (Layout((3, 3, 2), (1, 7, 9)), Layout((3, 3, 3), (1, 1, 1))),
        (Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))),
    ]
    for _ in range(400):
        ra, rb = rng.choice((2, 3)), rng.choice((2, 3, 4))
        pairs.append(
            (
                Layout(
                    tuple(rng.choice((2, 3, 4)) for _ in range(ra)),
                    tuple(rng.choice((1, 2, 3, 5, 7, 9, 16)) for _ in range(ra)),
                ),
                Layout(
                    tuple(rng.choice((2, 3)) for _ in range(rb)),
                    tuple(rng.choice((1, 1, 2, 3, 4)) for _ in range(rb)),
                ),
            )
        )
    seen = 0
    for A, B in pairs:
        try:
            composition(A, B)
        except InadmissibleError as e:
            if e.condition != "disjointness of B's modes in A":
                continue
            assert e.witness is not None and 0 <= e.witness < B.size
            truth, naive = _by_mode(A, B, e.witness)
            assert truth != naive, (str(A), str(B), e.witness)
            seen += 1
    assert seen >= 20


# ----------------------------------------------------------------------------- symbolic decisions
def test_z3_translation_of_ceiling_rounds_up():
    """smt.py keeps Python's integer semantics: ceiling(M/4) is the least k with 4k >= M.
    Proved here with Z3 over every positive M (and spot-checked by substitution).  The
    complement of a symbolic cotarget has such extents.  Kills ``smt-ceiling-as-floor``."""
    import sympy as sp
    import z3

    from layoutproof.symbolic import decide
    from layoutproof.symbolic.smt import to_z3

    M = symbols("M")
    env: dict = {}
    c = to_z3(sp.ceiling(M / 4), env)
    m = env[M]
    s = z3.Solver()
    s.add(m > 0, z3.Not(z3.And(4 * c >= m, 4 * c < m + 4)))
    assert s.check() == z3.unsat
    for v in range(1, 13):
        s2 = z3.Solver()
        s2.add(m == v, c != -(-v // 4))
        assert s2.check() == z3.unsat, v
    assert decide(sp.Ge(4 * sp.ceiling(M / 4), M)).value is True


def test_undecided_stride_order_is_reported_as_the_order():
    """The symbolic complement and left inverse sort the strides, and the order is a
    condition they need (docs/architecture.md: "an order between two strides" must be
    proved).  Undecided, it is what the UndecidableConditionError names -- an inequality
    between the two strides -- and assuming what is asked for leads to the right layout.
    Kills ``symops-sort-unknown-order`` (which sorts silently and reports a divisibility)."""
    import sympy as sp

    from layoutproof import complement, left_inverse

    M, N = symbols("M N")
    for fn in (complement, left_inverse):
        with pytest.raises(UndecidableConditionError) as e:
            fn(Layout((2, 2), (M, N)))
        assert isinstance(e.value.expr, sp.core.relational.Relational)
        assert not isinstance(e.value.expr, (sp.Eq, sp.Ne)), e.value.condition
        assert e.value.expr.free_symbols == {M, N}
        with pytest.raises(UndecidableConditionError) as e2:
            fn(Layout((2, 4), (M, 2)))
        assert isinstance(e2.value.expr, (sp.Le, sp.Ge, sp.Lt, sp.Gt)), e2.value.condition
    # assume what is asked for, one condition after the other, until a layout comes out
    facts: list = []
    for _ in range(4):
        try:
            with assuming(*facts):
                C = complement(Layout((2, 2), (M, N)))
            break
        except UndecidableConditionError as e:
            assert e.condition not in facts
            facts.append(e.condition)
    else:
        pytest.fail(f"no complement after assuming {facts}")
    from layoutproof.symbolic import parse_expr

    conds = [parse_expr(f, {"M": M, "N": N}) for f in facts]
    subs = [
        (m, n) for m in range(1, 25) for n in range(1, 25) if all(bool(c.subs({M: m, N: n})) for c in conds)
    ]
    assert len(subs) >= 5, facts
    for m, n in subs:  # the same function as the integer complement (docs: "Symbolic results")
        got, want = C.subs(M=m, N=n), complement(Layout((2, 2), (m, n)))
        assert got.size == want.size and [got(i) for i in range(got.size)] == [
            want(i) for i in range(want.size)
        ], (facts, m, n)
