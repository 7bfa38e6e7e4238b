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


def test_a_leaf_inside_one_mode_of_a_is_what_evaluation_finds() -> None:
    # B's stride and A's extent divide neither way, yet the whole leaf lies inside one
    # mode of A: the answer is the one exact evaluation gives, and meets the post-condition
    rng = random.Random(3)
    seen = 0
    for _ in range(3000):
        As = [rng.randint(2, 9) for _ in range(rng.randint(2, 3))]
        Ad = [rng.randint(0, 30) for _ in As]
        n, r = rng.randint(2, 4), rng.randint(2, 7)
        try:
            ops._compose_leaf_cute(As, Ad, n, r, -1)
            continue  # CuTe's conditions hold: not this path
        except ops.InadmissibleError as e:
            err = e
        try:
            want = ops._exact_leaf(As, Ad, n, r, err)
        except ops.InadmissibleError as refused:
            with pytest.raises(ops.InadmissibleError) as got:
                ops._compose_leaf(As, Ad, n, r, -1)
            assert str(got.value) == str(refused)
            continue
        lf = ops._compose_leaf(As, Ad, n, r, -1)
        assert (lf.ms, lf.md, lf.occ) == (want.ms, want.md, want.occ)
        seen += 1
    assert seen > 100


def test_one_moving_leaf_needs_no_disjointness_search() -> None:
    A, B = Layout((3, 1), (19, 23)), Layout((1, 2), (43, 2))
    R = composition(A, B)
    assert [R(i) for i in range(R.size)] == [A(B(i), extend=True) for i in range(B.size)]
    rng = random.Random(8)
    for _ in range(2000):
        A = Layout(tuple(rng.randint(1, 8) for _ in range(2)), tuple(rng.randint(0, 40) for _ in range(2)))
        fixed = [(1, rng.randint(0, 9)), (rng.randint(1, 4), 0)]
        moving = (rng.randint(2, 4), rng.randint(1, 9))
        modes = fixed + [moving]
        rng.shuffle(modes)
        B = Layout(tuple(m[0] for m in modes), tuple(m[1] for m in modes))
        try:
            R = composition(A, B)
        except ops.InadmissibleError:
            # refused: then no layout reproduces the moving leaf either
            with pytest.raises(ops.InadmissibleError):
                composition(A, Layout(*moving))
            continue
        # B may reach past size(A): A's last mode extends, as in CuTe C++
        assert [R(i) for i in range(R.size)] == [A(B(i), extend=True) for i in range(B.size)]
