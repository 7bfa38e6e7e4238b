"""Differential tests: layoutproof against tensor-layouts (facebookresearch, PyPI 0.3.2) on the
algebra both implement: composition, complement, coalesce, right and left inverses,
logical divide and product.

The cases are drawn with the generators of the legacy-pycute differential from fixed seeds
and decided by its rules (``_run_case``): results compared as functions; where the two
differ or one refuses, the operation's post-condition, checked by brute force, decides.
layoutproof returning a layout that breaks the post-condition, or refusing where
tensor-layouts' answer satisfies it, fails the test.
"""

from __future__ import annotations

import random
import zlib

import pytest
import test_differential_pycute as pyd

import layoutproof as lp
from layoutproof import Layout

tl = pytest.importorskip(
    "tensor_layouts", reason="tensor-layouts is not installed (pip install tensor-layouts)"
)

N = {
    "composition": 1500,
    "complement": 500,
    "coalesce": 300,
    "right_inverse": 400,
    "left_inverse": 400,
    "logical_divide": 500,
    "logical_product": 400,
}
MIN_TOTAL = 4000


def _seed(op: str) -> int:
    return zlib.crc32(op.encode()) ^ 0x7E57


def _tl(x):
    return tl.Layout(x.shape, x.stride) if isinstance(x, Layout) else x


def _peer(fn, *args):
    def call():
        r = fn(*(_tl(a) for a in args))
        if not (hasattr(r, "shape") and hasattr(r, "stride")):
            raise TypeError(f"tensor-layouts returned {type(r).__name__}, not a layout")
        return r

    return call


def _cases():
    out = []
    rng = random.Random(_seed("composition"))
    for _ in range(N["composition"]):
        A = pyd.g_layout(rng)
        _k, rhs = pyd.g_B(rng, A)
        B = pyd._lo(rhs)
        out.append(
            (
                "composition",
                f"composition({pyd._show(A)}, {pyd._show(B)})",
                lambda A=A, B=B: lp.composition(A, B),
                _peer(tl.compose, A, B),
                pyd.post_composition(A, B),
                None,
            )
        )
    rng = random.Random(_seed("complement"))
    for _ in range(N["complement"]):
        L = pyd.g_layout(rng, max_size=64)
        M = rng.choice((1, 8, 16, 32, 64, 100, 128, 256, 512))
        out.append(
            (
                "complement",
                f"complement({pyd._show(L)}, {M})",
                lambda L=L, M=M: lp.complement(L, M),
                _peer(tl.complement, L, M),
                pyd.post_complement(L, M),
                None,
            )
        )
    rng = random.Random(_seed("coalesce"))
    for _ in range(N["coalesce"]):
        L = pyd.g_layout(rng)
        out.append(
            (
                "coalesce",
                f"coalesce({pyd._show(L)})",
                lambda L=L: lp.coalesce(L),
                _peer(tl.coalesce, L),
                pyd._post_coalesce(L),
                pyd._post_same_as(L),
            )
        )
    for op, post in (("right_inverse", pyd.post_right_inverse), ("left_inverse", pyd.post_left_inverse)):
        rng = random.Random(_seed(op))
        for _ in range(N[op]):
            L = pyd.g_layout(rng, max_size=128)
            out.append(
                (
                    op,
                    f"{op}({pyd._show(L)})",
                    lambda L=L, op=op: getattr(lp, op)(L),
                    _peer(getattr(tl, op), L),
                    post(L),
                    None,
                )
            )
    rng = random.Random(_seed("logical_divide"))
    for _ in range(N["logical_divide"]):
        A = pyd.g_layout(rng)
        B = pyd.g_tile_B(rng, A) if rng.random() < 0.6 else pyd.g_random_B(rng, 16)
        out.append(
            (
                "logical_divide",
                f"logical_divide({pyd._show(A)}, {pyd._show(B)})",
                lambda A=A, B=B: lp.logical_divide(A, B),
                _peer(tl.logical_divide, A, B),
                pyd.post_logical_divide(A, B),
                None,
            )
        )
    rng = random.Random(_seed("logical_product"))
    for _ in range(N["logical_product"]):
        A = pyd.g_layout(rng, max_size=16)
        B = pyd.g_layout(rng, max_size=16)
        out.append(
            (
                "logical_product",
                f"logical_product({pyd._show(A)}, {pyd._show(B)})",
                lambda A=A, B=B: lp.logical_product(A, B),
                _peer(tl.logical_product, A, B),
                pyd.post_logical_product(A, B),
                None,
            )
        )
    return out


def decide():
    reports = {}
    for op, ex, ours, theirs, post, post_peer in _cases():
        rep = reports.setdefault(op, pyd.Report(op))
        pyd._run_case(rep, ex, ours, theirs, post, struct=False, post_pc=post_peer, peer="tensor-layouts")
    return reports


def test_tensor_layouts_differential():
    reports = decide()
    total = sum(r.cases for r in reports.values())
    failures = [f for r in reports.values() for f in r.failures]
    incomplete = [f for r in reports.values() for f in r.incomplete]
    assert not failures, "\n".join(failures[:10])
    assert not incomplete, "\n".join(incomplete[:10])
    assert total >= MIN_TOTAL
    agree = sum(r.kinds["agree"] for r in reports.values())
    assert agree > total // 2, {op: dict(r.kinds) for op, r in reports.items()}


def test_shahs_composition_is_wrong_in_tensor_layouts_and_refused_here():
    A, B = Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))
    theirs = tl.compose(_tl(A), _tl(B))
    assert pyd.post_composition(A, B)(theirs.shape, theirs.stride) is not None
    with pytest.raises(lp.InadmissibleError):
        lp.composition(A, B)


if __name__ == "__main__":  # the categories and an example of each
    for op, rep in decide().items():
        print(f"== {op}: {rep.cases} cases")
        for kind, n in rep.kinds.most_common():
            print(f"   {n:5d}  {kind}\n          e.g. {rep.examples[kind][:300]}")
