"""The constructor's memory of nested plain-int (shape, stride) pairs (``layout._SEEN``):
an entry answers only for the very tuple objects it holds, never for an equal value of
other types (``1 == 1.0 == True`` hash alike), it stays bounded, and a layout built from
it is the one the general check builds.  No timings here (bench/algebra.py measures)."""

from __future__ import annotations

import random
from typing import Any

import pytest

import layoutproof.layout as layout_mod
from layoutproof import Layout, MalformedLayoutError
from layoutproof.inttuple import raw_flatten


def _draw(rng: random.Random, depth: int) -> Any:
    if depth == 0 or rng.random() < 0.4:
        return rng.randint(1, 8)
    return tuple(_draw(rng, depth - 1) for _ in range(rng.randint(1, 3)))


def _like(rng: random.Random, s: Any) -> Any:
    if type(s) is tuple:
        return tuple(_like(rng, e) for e in s)
    return rng.randint(-4, 64)


def _fresh(x: Any) -> Any:
    """An equal HTuple made of new tuple objects."""
    return tuple([_fresh(e) for e in x]) if type(x) is tuple else x


def _general(s: Any, d: Any) -> Any:
    shape, stride = Layout._checked(s, d)
    return shape, stride, raw_flatten(shape), raw_flatten(stride)


def _seen(L: Layout) -> Any:
    return L.shape, L.stride, *L.flat_modes()


def test_a_remembered_pair_builds_what_the_general_check_builds() -> None:
    rng = random.Random(2029)
    for _ in range(2000):
        s = (_draw(rng, 2), _draw(rng, rng.choice([1, 2, 3])))
        d = _like(rng, s)
        first, again, fresh = Layout(s, d), Layout(s, d), Layout(_fresh(s), _fresh(d))
        want = _general(s, d)
        for L in (first, again, fresh):
            assert _seen(L) == want
            assert L.is_symbolic is False
            assert L == first and hash(L) == hash(first)


@pytest.mark.parametrize(
    "bad_shape",
    [
        (2, (2, True)),  # == (2, (2, 1)) and hashes alike, but a bool is no extent
        (2, (2, 2.0)),
        (2, (2, 0)),
        (2, (2, -1)),
        (2, (2, "2")),
    ],
)
def test_an_equal_or_similar_value_is_checked_in_full(bad_shape: Any) -> None:
    s, d = (2, (2, 1)), (1, (2, 4))
    Layout(s, d)
    Layout(s, d)  # remembered now
    assert any(e._shape is s and e._stride is d for e in layout_mod._SEEN)
    # the same stride object beside another shape object: checked, with the general message
    with pytest.raises(MalformedLayoutError) as fast:
        Layout(bad_shape, d)
    with pytest.raises(MalformedLayoutError) as general:
        Layout._checked(bad_shape, d)
    assert str(fast.value) == str(general.value)


def test_equal_values_of_other_leaf_types_are_not_taken_for_ints() -> None:
    s, d = ((2, 2), 3), ((1, 2), 4)
    Layout(s, d)
    for bad_s, bad_d in (
        (((2, 2), 3), ((1, 2.0), 4)),
        (((2, 2), 3), ((True, 2), 4)),
        (((2, 2), 3.0), ((1, 2), 4)),
    ):
        assert (bad_s, bad_d) == (s, d)  # equal values ...
        with pytest.raises(MalformedLayoutError):  # ... of other types: refused all the same
            Layout(bad_s, bad_d)


def test_numpy_leaves_are_converted_not_remembered() -> None:
    np = pytest.importorskip("numpy")
    s, d = ((2, 2), 3), ((1, 2), 4)
    Layout(s, d)
    t = ((np.int64(2), 2), 3)
    L = Layout(t, d)
    assert _seen(L) == _general(s, d)
    assert all(type(x) is int for x in L.flat_modes()[0])


def test_the_memory_stays_bounded() -> None:
    rng = random.Random(5)
    kept = []
    for _ in range(3 * layout_mod.SEEN_SLOTS):
        s = (rng.randint(1, 8), (rng.randint(1, 8), rng.randint(1, 8)))
        kept.append(Layout(s, _like(rng, s)))
        assert len(layout_mod._SEEN) == layout_mod.SEEN_SLOTS
    # every layout built is still what the general check builds, remembered or evicted
    for L in kept:
        assert _seen(L) == _general(L.shape, L.stride)
        again = Layout(L.shape, L.stride)
        assert _seen(again) == _seen(L)


def test_flat_and_general_inputs_are_not_remembered() -> None:
    layout_mod.forget_seen()
    Layout((4, 8), (1, 4))
    Layout([2, (2, 2)], [1, [2, 4]])  # lists: the general path (a converted copy)
    Layout((2, (2, 2)))  # compact stride
    with pytest.raises(MalformedLayoutError):
        Layout((2, (2, 0)), (1, (2, 4)))  # refused: never remembered
    assert all(e is layout_mod._NO_ENTRY for e in layout_mod._SEEN)


def _leaf_or_junk(rng: random.Random, lo: int) -> Any:
    x = rng.random()
    if x < 0.02:
        return True
    if x < 0.04:
        return 2.0
    if x < 0.06:
        return 0
    if x < 0.07:
        return (rng.randint(1, 4),)  # a tuple where the other side has a leaf
    return rng.randint(lo, 8)


def _mangle(rng: random.Random, s: Any, lo: int) -> Any:
    """A congruent-looking partner of ``s`` with, now and then, a structural mismatch."""
    if type(s) is tuple:
        if rng.random() < 0.03:
            return s[:-1] or 1
        return tuple(_mangle(rng, e, lo) for e in s)
    return _leaf_or_junk(rng, lo)


def test_every_input_is_built_or_refused_as_the_general_check_does() -> None:
    rng = random.Random(77)
    for _ in range(6000):
        s = tuple(_draw(rng, rng.choice([1, 2, 3])) for _ in range(rng.randint(1, 5)))
        if rng.random() < 0.5:
            s = _mangle(rng, s, 1)
        d = _mangle(rng, s, -3) if type(s) is tuple else rng.randint(0, 9)
        try:
            want: Any = _general(s, d)
        except MalformedLayoutError as e:
            want = str(e)
        for ss, dd in ((s, d), (s, d), (_fresh(s), _fresh(d))):  # built again: remembered
            try:
                got: Any = _seen(Layout(ss, dd))
            except MalformedLayoutError as e:
                got = str(e)
            assert got == want, (ss, dd)
