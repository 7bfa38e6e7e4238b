"""The post-condition of ``upcast``: every result upcast returns meets it, wrong ones do not."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import layoutproof as lp
from layoutproof import Layout, LayoutError
from layoutproof.verify import postcondition


def test_upcast_results_are_proved() -> None:
    L = Layout((4, 8), (1, 4))
    assert postcondition("upcast", lp.upcast(L, 2), L, 2).status == "proved"
    L2 = Layout(((2, 2), 4), ((2, 1), 4))
    assert postcondition("upcast", lp.upcast(L2, 4), L2, 4).status == "proved"


def test_wrong_results_are_refuted() -> None:
    L = Layout((4, 8), (1, 4))
    r = postcondition("upcast", Layout((4, 8), (1, 2)), L, 2)
    assert r.status == "refuted" and "extent 4, not 2" in str(r.counterexample)
    # what CuTe C++ returns where the block condition fails (5:1 by 2 is 3:1; 4:2 by 2 is 4:1)
    assert "reach 5" in str(postcondition("upcast", Layout(3, 1), Layout(5, 1), 2).counterexample)
    assert "reach 1" in str(postcondition("upcast", Layout(4, 1), Layout(4, 2), 2).counterexample)
    assert postcondition("upcast", Layout(8, 1), Layout(8, 2), 2).status == "refuted"  # not scaled


_leaf = st.tuples(st.integers(1, 6), st.sampled_from([0, 1, 2, 4, 8, 16, 24, -1, 3, 6]))


@settings(max_examples=150, deadline=None)
@given(st.lists(_leaf, min_size=1, max_size=3), st.sampled_from([2, 4, 8]))
def test_every_upcast_meets_its_postcondition(leaves: list, n: int) -> None:
    L = Layout(tuple(s for s, _ in leaves), tuple(d for _, d in leaves))
    try:
        R = lp.upcast(L, n)
    except LayoutError:
        return
    assert postcondition("upcast", R, L, n).status == "proved", (L, n, R)
