"""coalesce merges two symbolic modes only when the merge condition is *proved*, outside
symbolic exploration too (where an undecided condition is a choice point): an undecided
merge keeps both modes, whose function is L's at every value, merging or not; a proved one
merges.  Kills the mutant ``symops-merge-unproved`` of tools/mutation.py directly."""

from __future__ import annotations

import itertools

import pytest

pytest.importorskip("sympy")

from layoutproof import Layout, assuming, coalesce, symbols  # noqa: E402
from layoutproof.symbolic import symops  # noqa: E402

M, N = symbols("M N")


def _values(L: Layout, size: int) -> list:
    return [L(i) for i in range(size)]


def test_an_undecided_merge_keeps_both_modes():
    C = coalesce(Layout((2, N), (1, M)))  # merges only where M == 2
    assert C.shape == (2, N) and C.stride == (1, M)
    assert symops.coalesce_flat((2, N), (1, M)) == ([2, N], [1, M])
    for m, n in itertools.product((1, 2, 3, 5), (1, 3, 4)):
        concrete = Layout((2, n), (1, m))
        assert _values(C.subs(M=m, N=n), 2 * n) == _values(concrete, 2 * n), (m, n)


def test_a_proved_merge_merges():
    with assuming("M == 2"):
        C = coalesce(Layout((2, N), (1, M)))
    assert C.shape == 2 * N and C.stride == 1
    for n in (1, 3, 4):
        assert _values(C.subs(N=n), 2 * n) == _values(Layout((2, n), (1, 2)), 2 * n)


def test_the_step_merges_only_on_a_proved_condition():
    st = symops.coalesce_step(((), (2, 1)), (N, M))
    assert st == (((2, 1),), (N, M))  # undecided: a new mode
    st = symops.coalesce_step(((), (2, 1)), (N, 2))
    assert st == ((), (2 * N, 1))  # proved (2*1 == 2): merged
