"""A deliberately failing example: three false theorems, one per mode, to show the report.

Not collected by default (the file name does not start with ``test_``).  Run it with

    pytest docs/examples/failing_example.py

and each failure names the mode that found the counterexample, how many cases passed, and
the counterexample in CuTe notation with its picture (section "layoutproof
counterexample").  tests/verify/test_plugin.py runs it and checks that output.
"""

from __future__ import annotations

from layoutproof import Layout, left_inverse
from layoutproof.verify.strategies import layouts
from layoutproof.verify.theorem import Family, theorem


@theorem(Family.layouts(rank=2, extent=3, stride=4))
def test_left_inverse_inverts_every_layout(L):
    """False: only injective layouts have a left inverse (found by the exhaustive mode)."""
    R = left_inverse(L)
    assert all(R(L(i)) == i for i in range(L.size))


@theorem(L=layouts(kind="positive", max_depth=1), examples=200)
def test_positive_strides_make_a_layout_injective(L):
    """False: (2,2):(1,1) maps two coordinates to 1 (found and shrunk by hypothesis)."""
    offsets = [L(i) for i in range(L.size)]
    assert len(set(offsets)) == len(offsets), "two coordinates share an offset"


test_row_major_equals_column_major = theorem.identity(
    lambda M: Layout((M, 2), (2, 1)),
    lambda M: Layout(2 * M, 1),
)
