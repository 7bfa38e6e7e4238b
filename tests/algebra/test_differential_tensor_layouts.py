"""Differential tests: layoutproof against tensor-layouts (facebookresearch, PyPI 0.3.2) on the
algebra both implement: composition, complement, coalesce, right and left inverses,
logical divide and product.

The cases (``differential_cases``) are drawn with the generators of the legacy-pycute
differential from fixed seeds and decided by its rules: results compared as functions;
where the two differ or one refuses, the operation's post-condition, checked by brute
force, decides.  layoutproof returning a layout that breaks the post-condition, or refusing
where tensor-layouts' answer satisfies it, fails the test.
"""

from __future__ import annotations

import differential_cases as dc
import pytest
import test_differential_pycute as pyd

import layoutproof as lp
from layoutproof import Layout

tl = pytest.importorskip(
    "tensor_layouts", reason="tensor-layouts is not installed (pip install tensor-layouts)"
)

COUNTS = {
    "composition": 1500,
    "complement": 500,
    "coalesce": 300,
    "right_inverse": 400,
    "left_inverse": 400,
    "logical_divide": 500,
    "logical_product": 400,
}
_TL = {"composition": "compose"}


def _tl(x):
    return tl.Layout(x.shape, x.stride) if isinstance(x, Layout) else x


def _peer(case):
    def call():
        r = getattr(tl, _TL.get(case.op, case.op))(*(_tl(a) for a in case.args))
        if not (hasattr(r, "shape") and hasattr(r, "stride")):
            raise TypeError(f"tensor-layouts returned {type(r).__name__}, not a layout")
        return r

    return call


def decide():
    cases = dc.draw(COUNTS, 0x7E57)
    return dc.decide(cases, [_peer(c) for c in cases], "tensor-layouts")


def test_tensor_layouts_differential():
    dc.check(decide(), min_total=4000, min_agree=0.5)


def test_shahs_composition_is_wrong_in_tensor_layouts_and_refused_here():
    A, B = Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))
    theirs = tl.compose(_tl(A), _tl(B))
    assert pyd.post_composition(A, B)(theirs.shape, theirs.stride) is not None
    with pytest.raises(lp.InadmissibleError):
        lp.composition(A, B)


if __name__ == "__main__":  # the categories and an example of each
    print(dc.summary(decide()))
