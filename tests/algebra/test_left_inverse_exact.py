"""left_inverse is decided exactly: it returns a layout R with L(R(L(i))) == L(i)
for every i (R(L(i)) == i when L is injective) whenever one exists, and raises only when
none does.  Checked against two brute-force oracles over every small layout.

The oracles (written independently of layoutproof.ops):

* ``exact_oracle`` decides existence completely.  Every layout R is, on ``[0, ymax]``
  (``ymax`` the largest offset of L), ``y -> sum_j a_j * floor(y / T_j)`` for a divisor
  chain ``1 = T_0 | T_1 | ... | T_k <= ymax`` (the prefix products of R's shape, leaves of
  extent 1 and past ``ymax`` dropped; ``a_j = e_j - t_{j-1} e_{j-1}``) and conversely.  So
  R exists iff for some chain and some choice ``x_y`` of a preimage of every offset
  ``y`` (a *section*), the integer system ``sum_j a_j floor(y/T_j) = x_y`` has an integer
  solution.  The oracle enumerates *every* divisor chain below ``ymax`` (not only the
  prime-ratio chains the library walks) and every section, and decides each system over
  the integers by a column Hermite reduction of the whole matrix.  Nothing is bounded but
  L, so it is complete for the layouts it is given.
* ``enumerated_left_inverse`` tries every layout R of rank <= 3 with extents in 2..ymax+1 and
  strides in [-B, B]: a finite, lemma-free search.  It cannot prove absence (strides are
  bounded), but wherever the library refuses it must find nothing either.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from layoutproof import InadmissibleError, Layout, left_inverse
from layoutproof.errors import UndecidableConditionError


def offsets(L: Layout) -> list:
    return L.eval_all().tolist()


def preimages(L: Layout) -> dict:
    pre: dict = {}
    for i, y in enumerate(offsets(L)):
        pre.setdefault(y, []).append(i)
    return pre


def divisor_chains(ymax: int):
    """Every chain 1 = T_0 < T_1 < ... with T_j | T_(j+1) and T_k <= ymax."""

    def grow(chain):
        yield chain
        top = chain[-1]
        for m in range(2, ymax // top + 1):
            yield from grow(chain + [top * m])

    yield from grow([1])


def int_solvable(rows: list, rhs: list) -> bool:
    """Has sum_j rows[i][j] * a_j == rhs[i] (every i) an integer solution?  Column Hermite
    reduction of the whole matrix: A U = [H 0], H lower trapezoidal; then forward
    substitution, every division exact and every dependent row consistent."""
    if not rows:
        return True
    A = [r[:] for r in rows]
    m, c = len(A), len(A[0])
    piv = 0
    pivots = []  # (row, column) of each pivot
    for i in range(m):
        if piv == c:
            break
        # Euclid on the columns piv.. of row i
        while True:
            nz = [j for j in range(piv, c) if A[i][j] != 0]
            if len(nz) <= 1:
                break
            j0 = min(nz, key=lambda j: abs(A[i][j]))
            for j in nz:
                if j != j0:
                    q = A[i][j] // A[i][j0]
                    for r in range(m):
                        A[r][j] -= q * A[r][j0]
        nz = [j for j in range(piv, c) if A[i][j] != 0]
        if nz:
            j0 = nz[0]
            for r in range(m):
                A[r][piv], A[r][j0] = A[r][j0], A[r][piv]
            pivots.append((i, piv))
            piv += 1
    z = [0] * c
    for col, (i, p) in enumerate(pivots):
        known = sum(A[i][j] * z[j] for j in range(col))
        num = rhs[i] - known
        if num % A[i][p]:
            return False
        z[p] = num // A[i][p]
    return all(sum(A[i][j] * z[j] for j in range(c)) == rhs[i] for i in range(m))


def exact_oracle(L: Layout) -> bool:
    """Does a layout R with L(R(L(i))) == L(i) for all i exist?  (Complete; see above.)"""
    pre = preimages(L)
    if min(pre) < 0:
        return False
    ys = sorted(y for y in pre if y)
    if not ys:
        return True
    ymax = ys[-1]
    for chain in divisor_chains(ymax):
        rows = [[y // t for t in chain] for y in ys]
        for section in itertools.product(*(pre[y] for y in ys)):
            if int_solvable(rows, list(section)):
                return True
    return False


def enumerated_left_inverse(L: Layout, bound: int):
    """A layout of rank <= 3 with extents >= 2, size > ymax (only the last extent grows
    past ymax) and strides in [-bound, bound] that is a left inverse of L, or None.
    Vectorized over the strides: every candidate is evaluated at every offset of L."""
    pre = preimages(L)
    ys = sorted(pre)
    ymax, n = ys[-1], L.size
    allowed = np.zeros((len(ys), n), dtype=bool)
    for r, y in enumerate(ys):
        allowed[r, pre[y]] = True
    yv = np.array(ys, dtype=np.int64)
    for rank in (1, 2, 3):
        grid = np.array(list(itertools.product(range(-bound, bound + 1), repeat=rank)), dtype=np.int64)
        for ext in itertools.product(range(2, ymax + 2), repeat=rank - 1):
            p = math.prod(ext)
            if p > ymax:
                continue
            shape = ext + (ymax // p + 1,)
            digits = np.zeros((len(ys), rank), dtype=np.int64)
            rem = yv.copy()
            for k, e in enumerate(shape):
                digits[:, k] = rem % e if k < rank - 1 else rem
                rem //= e
            vals = digits @ grid.T  # offsets x candidates
            inside = (vals >= 0) & (vals < n)
            ok = inside.copy()
            rows = np.nonzero(inside)
            ok[rows] = allowed[rows[0], vals[rows]]
            good = np.flatnonzero(ok.all(axis=0))
            if good.size:
                st = tuple(int(x) for x in grid[good[0]])
                return Layout(shape, st) if rank > 1 else Layout(shape[0], st[0])
    return None


def is_quasi_inverse(R: Layout, L: Layout) -> bool:
    v = L.eval_all()
    if v.min() < 0 or v.max() >= R.size:
        return False
    back = R.eval_all()[v]
    if back.min() < 0 or back.max() >= L.size:
        return False
    return bool(np.array_equal(v[back], v))


def small_layouts(max_rank: int, extents, strides):
    for rank in range(1, max_rank + 1):
        for shp in itertools.product(extents, repeat=rank):
            for std in itertools.product(strides, repeat=rank):
                yield Layout(shp, std) if rank > 1 else Layout(shp[0], std[0])


def check_against_oracle(L: Layout) -> bool:
    exists = exact_oracle(L)
    try:
        R = left_inverse(L)
    except InadmissibleError:
        assert not exists, f"left_inverse({L}) raises, but a left inverse exists"
        return False
    assert exists, f"the oracle finds no left inverse of {L}, yet left_inverse returns {R}"
    assert is_quasi_inverse(R, L), (L, R)
    if len(set(offsets(L))) == L.size:
        assert [R(y) for y in offsets(L)] == list(range(L.size))
    return True


def test_every_small_layout_rank_1_2():
    """Sound and complete on every layout of rank <= 2 with extents 1..4 and strides
    -1..7 (36 + 1296 layouts), against the exact oracle."""
    n_ok = n_none = 0
    for L in small_layouts(2, (1, 2, 3, 4), range(-1, 8)):
        if check_against_oracle(L):
            n_ok += 1
        else:
            n_none += 1
    assert n_ok > 0 and n_none > 0


def test_every_small_layout_rank_3():
    """Rank 3, extents 1..3, strides 0..5 (also non-injective ones)."""
    for L in small_layouts(3, (1, 2, 3), range(0, 6)):
        if L.size <= 12:
            check_against_oracle(L)


def test_enumerated_layouts_imply_success():
    """Lemma-free cross-check: whenever a layout of the bounded enumeration is a left
    inverse, the library (and the exact oracle) find one."""
    refused = 0
    for L in small_layouts(2, (1, 2, 3, 4), range(0, 7)):
        ymax = max(offsets(L))
        if ymax > 16:
            continue
        try:
            R = left_inverse(L)
        except InadmissibleError:
            refused += 1
            found = enumerated_left_inverse(L, 6)
            assert found is None, f"left_inverse({L}) raises, but {found} is a left inverse"
            assert not exact_oracle(L)
            continue
        assert is_quasi_inverse(R, L)
    assert refused > 0


def test_issue_examples():
    R = left_inverse(Layout((2, 2), (2, 3)))  # C++'s construction fails (3 is not a multiple of 2)
    assert [R(y) for y in offsets(Layout((2, 2), (2, 3)))] == [0, 1, 2, 3]
    L = Layout((4, 2), (1, 2))  # overlapping modes: not injective, but a quasi-inverse exists
    R = left_inverse(L)
    assert is_quasi_inverse(R, L)
    # C++'s answer wherever C++'s construction applies
    assert left_inverse(Layout(4, 2)) == Layout((2, 4), (0, 1))
    assert left_inverse(Layout((2, 2), (1, 3))) == Layout((3, 2), (1, 2))


@pytest.mark.parametrize(
    "L",
    [
        Layout((3, 3), (2, 3)),
        Layout((4, 4), (3, 4)),  # injective
        Layout((4, 3), (2, 3)),
    ],
)  # not injective
def test_no_left_inverse_raises_with_reason(L):
    assert not exact_oracle(L)
    with pytest.raises(InadmissibleError) as ei:
        left_inverse(L)
    assert "no layout R" in str(ei.value)


def test_negative_offsets_have_no_left_inverse():
    with pytest.raises(InadmissibleError) as ei:
        left_inverse(Layout((2, 2), (1, -1)))
    assert ei.value.condition == "non-negative strides"
    assert not exact_oracle(Layout((2, 2), (1, -1)))


def test_large_layouts_are_searched_without_recursion():
    """4096 coordinates: the search walks its rows with an explicit stack, and an answer
    past its budget is undecided and says so -- an UndecidableConditionError, never a refusal
    (nor a RecursionError or a hang)."""
    L = Layout((64, 64), (64, 65))  # C++'s construction needs 64 | 65; a left inverse exists
    R = left_inverse(L)
    assert [R(y) for y in offsets(L)] == list(range(L.size))
    L = Layout((64, 64), (63, 64))
    try:
        R = left_inverse(L)
    except UndecidableConditionError as e:
        assert "undecided" in str(e)
    except InadmissibleError as e:
        assert "no layout R" in str(e)
    else:
        assert [R(y) for y in offsets(L)] == list(range(L.size))


def test_past_the_search_bounds_left_inverse_is_undecided_not_refused():
    """A layout past the exact search's size bound whose C++ construction fails: nothing is
    decided, so no InadmissibleError -- and verify says unknown, not refuted."""
    from layoutproof import ops
    from layoutproof.verify import admissible

    n = ops.LEFT_INVERSE_SIZE_LIMIT
    # C++'s construction needs 2 | 3; injective (3 + 2b is odd, 2b even), and R = (2, 2n+1):(-1, 2)
    # inverts it: so a refusal would be wrong
    L = Layout((2, n), (3, 2))
    R = Layout((2, 2 * n + 1), (-1, 2))
    assert all(R(L(i)) == i for i in range(0, L.size, 97))
    with pytest.raises(UndecidableConditionError) as ei:
        left_inverse(L)
    assert not isinstance(ei.value, InadmissibleError) and "undecided" in str(ei.value)
    assert admissible("left_inverse", L).status == "unknown"
