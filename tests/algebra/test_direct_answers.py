"""The operations' direct answers (where the result does not depend on reading every
leaf of an operand) give what the general route gives, operands validated all the same.
No timings here (bench/algebra.py measures)."""

from __future__ import annotations

import random
from typing import Any

import pytest

from layoutproof import E, Layout, MalformedLayoutError, composition, ops


def _draw(rng: random.Random, depth: int) -> Any:
    if depth == 0 or rng.random() < 0.4:
        return rng.randint(1, 8)
    return tuple(_draw(rng, depth - 1) for _ in range(rng.randint(1, 3)))


def _like(rng: random.Random, s: Any) -> Any:
    if type(s) is tuple:
        return tuple(_like(rng, e) for e in s)
    return rng.randint(-4, 64)


def test_composition_with_n_0_is_n_0() -> None:
    rng = random.Random(11)
    for _ in range(500):
        s = (_draw(rng, 2), _draw(rng, 2))
        A = Layout(s, _like(rng, s))
        B = Layout(rng.randint(1, 9), 0)
        R = composition(A, B)
        assert R == ops._compose_layout(A, B)
        assert [R(i) for i in range(R.size)] == [A(B(i)) for i in range(B.size)]
    # coordinate strides: the zero of the codomain is a coordinate, not the integer 0
    C = Layout((2, 3), (E(0), E(1)))
    assert composition(C, Layout(4, 0)) == ops._compose_layout(C, Layout(4, 0))


def test_bad_operands_of_n_0_are_still_refused() -> None:
    with pytest.raises(MalformedLayoutError):
        composition(Layout((2, (2, 0)), (1, (2, 4))), Layout(3, 0))
    with pytest.raises(MalformedLayoutError):
        composition(Layout((2, (2, 2)), (1, (2, 4))), Layout(0, 0))
