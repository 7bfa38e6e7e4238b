"""The plain-int fast paths give exactly what the general routines give:
the validating constructor's one-pass check, and composition's exact fallback in plain
Python for small leaves and domains.  No timings here (bench/algebra.py measures)."""

from __future__ import annotations

import random

import pytest

from layoutproof import Layout, MalformedLayoutError, ops
from layoutproof.inttuple import raw_flatten


def _draw(rng: random.Random, depth: int = 2) -> object:
    if depth == 0 or rng.random() < 0.5:
        return rng.randint(1, 8)
    return tuple(_draw(rng, depth - 1) for _ in range(rng.randint(1, 3)))


def _like(rng: random.Random, s: object) -> object:
    if type(s) is tuple:
        return tuple(_like(rng, e) for e in s)
    return rng.randint(-4, 64)


def test_constructor_fast_path_matches_the_general_check() -> None:
    rng = random.Random(29)
    for _ in range(3000):
        s = _draw(rng, rng.choice([1, 2, 3]))
        d = _like(rng, s)
        L = Layout(s, d)
        shape, stride = Layout._checked(s, d)
        assert (L.shape, L.stride) == (shape, stride)
        assert L.flat_modes() == (raw_flatten(shape), raw_flatten(stride))
        assert L.is_symbolic is False
        C = Layout(s)
        assert (C.shape, C.stride) == Layout._checked(s, None)
    for s, d in (((2, ()), (1, ())), ((), ()), ([2, (3, 4)], [1, [2, 6]])):  # the general path's
        L = Layout(s, d)
        assert (L.shape, L.stride) == Layout._checked(s, d)


@pytest.mark.parametrize(
    "shape, stride",
    [
        ((2, 0), (1, 2)),
        ((2, True), (1, 2)),
        ((2, (3, 4)), (1, (2, True))),
        ((2, (3, 4)), (1, 2)),
        ((2, (3,)), (1, (2, 3))),
        ((2, (0, 4)), (1, (2, 3))),
        ((2, (3, 4.0)), (1, (2, 3))),
        (((2, (2, 2)),), ((1, (2, "x")),)),
    ],
)
def test_bad_input_keeps_the_general_message(shape: object, stride: object) -> None:
    with pytest.raises(MalformedLayoutError) as fast:
        Layout(shape, stride)
    with pytest.raises(MalformedLayoutError) as general:
        Layout._checked(shape, stride)
    assert str(fast.value) == str(general.value)


def test_small_exact_fallback_matches_numpy() -> None:
    np = pytest.importorskip("numpy")
    rng = random.Random(7)
    for _ in range(3000):
        if rng.random() < 0.5:
            k = rng.randint(1, 3)
            L = Layout(tuple(rng.randint(1, 4) for _ in range(k)), tuple(rng.randint(0, 9) for _ in range(k)))
            v = [int(x) for x in L.eval_all()]
        else:
            v = [0] + [rng.randint(0, 20) for _ in range(rng.randint(0, 30))]
        assert ops._recognize_small(v) == ops.recognize_layout_fn(np.array(v, dtype=np.int64))
    for _ in range(3000):
        k = rng.randint(1, 3)
        As = [rng.randint(1, 6) for _ in range(k)]
        Ad = [rng.randint(0, 30) for _ in range(k)]
        m = rng.randint(1, 3)
        fbs = tuple(rng.randint(1, 5) for _ in range(m))
        fbd = tuple(rng.randint(0, 20) for _ in range(m))
        small = ops._search_witness(As, Ad, fbs, fbd)
        old = ops.SMALL_EXACT
        ops.SMALL_EXACT = 0
        try:
            assert ops._search_witness(As, Ad, fbs, fbd) == small
        finally:
            ops.SMALL_EXACT = old


def test_composition_with_a_constant_b() -> None:
    A = Layout((6, 7, 8), (22, 58, 55))
    assert ops.composition(A, Layout(4, 0)) == Layout(4, 0)
    assert ops.composition(A, Layout(1, 0)) == Layout(1, 0)
