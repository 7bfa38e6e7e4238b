"""The constructor's unrolled checks and the operations' concrete results keep every
behaviour of the general routines.

* ``Layout(shape, stride)`` -- flat ranks 1-3 (unrolled), longer flat tuples and two-deep
  nesting -- accepts exactly what the general check accepts, with the same shape and
  stride, and refuses the rest with the general check's error;
* a result an operation marks concrete (``_sym is False``) holds only integers, its cached
  flattening is its flattening, and it equals the result for the same operands built
  through the general path (lists: no cached flattening, nothing known in advance);
* equal layouts hash alike (the hash is no longer cached), SymPy and F2 operands still go
  to their own layers, and the shared ``1:0`` result is an ordinary value.

No timings here (bench/algebra.py measures).
"""

from __future__ import annotations

import random
from typing import Any, Callable, List, Tuple

import pytest

import layoutproof as lp
from layoutproof import Layout, LayoutError
from layoutproof.inttuple import raw_flatten


def _draw(rng: random.Random, depth: int) -> Any:
    if depth == 0 or rng.random() < 0.6:
        return rng.randint(1, 8)
    return tuple(_draw(rng, depth - 1) for _ in range(rng.randint(1, 3)))


def _like(rng: random.Random, s: Any, lo: int = 0, hi: int = 64) -> Any:
    if type(s) is tuple:
        return tuple(_like(rng, e, lo, hi) for e in s)
    return rng.randint(lo, hi)


def _as_lists(t: Any) -> Any:
    return [_as_lists(e) for e in t] if type(t) is tuple else t


def _spoil(rng: random.Random, t: Any) -> Any:
    """``t`` with one leaf replaced by something the constructor must judge."""
    leaves = raw_flatten(t)
    k = rng.randrange(len(leaves))
    bad = rng.choice([0, -1, True, False, 2.0, "2", None, (), (1,), [2]])
    it = iter(range(len(leaves)))

    def walk(x: Any) -> Any:
        if type(x) is tuple:
            return tuple(walk(e) for e in x)
        return bad if next(it) == k else x

    return walk(t)


def _outcome(fn: Callable[..., Any], *args: Any) -> Tuple[str, Any]:
    try:
        L = fn(*args)
    except LayoutError as e:
        return type(e).__name__, str(e)
    return "ok", (L.shape, L.stride, L.flat_modes())


def test_unrolled_constructor_agrees_with_the_general_check() -> None:
    rng = random.Random(4)
    for _ in range(4000):
        rank = rng.randint(1, 5)
        s = tuple(_draw(rng, rng.choice([0, 0, 1, 2])) for _ in range(rank))
        d = _like(rng, s, -8, 64)
        if rng.random() < 0.5:
            if rng.random() < 0.5:
                s = _spoil(rng, s)
            else:
                d = _spoil(rng, d)
        fast = _outcome(Layout, s, d)
        general = _outcome(Layout, _as_lists(s), _as_lists(d))  # lists: the general path
        assert fast == general, (s, d)


@pytest.mark.parametrize(
    "shape, stride",
    [
        ((0,), (1,)),
        ((2, 0), (1, 2)),
        ((2, 3, -1), (1, 2, 6)),
        ((True,), (1,)),
        ((2, 3), (1, 2.0)),
        ((2, 3, 4), (1, 2, None)),
        ((2, 3), (1, 2, 3)),
        ((2, (3, 4)), (1, (2, 4.5))),
        ((2, (3, 4)), (1, 2)),
    ],
)
def test_flat_and_two_deep_bad_input_is_refused(shape: Any, stride: Any) -> None:
    with pytest.raises(LayoutError) as fast:
        Layout(shape, stride)
    with pytest.raises(LayoutError) as general:
        Layout(_as_lists(shape), _as_lists(stride))
    assert type(fast.value) is type(general.value) and str(fast.value) == str(general.value)


_OPS: List[Tuple[str, int, Callable[..., Any]]] = [
    ("coalesce", 1, lambda a: lp.coalesce(a)),
    ("complement", 1, lambda a: lp.complement(a, 256)),
    ("complement_shape", 1, lambda a: lp.complement(a, (8, 32))),
    ("right_inverse", 1, lambda a: lp.right_inverse(a)),
    ("left_inverse", 1, lambda a: lp.left_inverse(a)),
    ("composition", 2, lambda a, b: lp.composition(a, b)),
    ("logical_divide", 2, lambda a, b: lp.logical_divide(a, b)),
    ("zipped_divide", 2, lambda a, b: lp.zipped_divide(a, b)),
    ("tiled_divide", 2, lambda a, b: lp.tiled_divide(a, b)),
    ("logical_product", 2, lambda a, b: lp.logical_product(a, b)),
    ("blocked_product", 2, lambda a, b: lp.blocked_product(a, b)),
]


def _check_result(R: Any) -> None:
    if not isinstance(R, Layout):
        return
    fs, fd = R._fs, R._fd
    if fs is not None:
        assert (fs, fd) == (raw_flatten(R.shape), raw_flatten(R.stride)), R
    if R._sym is False:
        assert all(type(x) is int for x in raw_flatten(R.shape) + raw_flatten(R.stride)), R
    assert hash(R) == hash(Layout._make(R.shape, R.stride)) and R == Layout._make(R.shape, R.stride)


@pytest.mark.parametrize("name, arity, op", _OPS, ids=[o[0] for o in _OPS])
def test_concrete_results_equal_the_general_path(name: str, arity: int, op: Callable[..., Any]) -> None:
    rng = random.Random(f"fast-{name}")
    for _ in range(400):
        data = []
        for k in range(arity):
            s = tuple(_draw(rng, rng.choice([0, 1, 1, 2])) for _ in range(rng.randint(1, 3)))
            if rng.random() < 0.3:
                s = s[0]
            if rng.random() < 0.5:  # compact strides: modes that merge, admissible operands
                d = Layout(s).stride
            else:
                d = _like(rng, s, 0, 64 if k == 0 else 16)
            data.append((s, d))
        fast = _outcome(op, *[Layout(s, d) for s, d in data])
        general = _outcome(op, *[Layout(_as_lists(s), _as_lists(d)) for s, d in data])
        assert fast == general, data
        if fast[0] == "ok":
            R = op(*[Layout(s, d) for s, d in data])
            _check_result(R)
            for i in range(min(R.size, 64)):
                R(i)  # evaluates (no stale cache)


def test_one_zero_is_an_ordinary_value() -> None:
    R = lp.coalesce(Layout(1, 7))
    S = lp.composition(Layout(4, 2), Layout(1, 3))
    assert str(R) == str(S) == "1:0" and R == Layout(1, 0) and hash(R) == hash(Layout(1, 0))
    assert R.size == 1 and R.cosize == 1 and R(0) == 0 and not R.is_symbolic
    assert lp.right_inverse(Layout(1, 1)) == Layout(1, 0)
    assert lp.right_inverse(Layout(8, 1)) == Layout(8, 1) and lp.right_inverse(Layout(8, 2)) == Layout(1, 0)


def test_other_layers_are_still_asked() -> None:
    from layoutproof.f2 import F2

    A = Layout(8, F2(1))
    assert str(lp.composition(A, Layout(4, 2))) == "4:F2"
    assert str(lp.composition(Layout((8,), (F2(1),)), Layout(4, 2))) == "4:F2"
    assert str(lp.right_inverse(A)) == "8:F1"
    with pytest.raises(LayoutError):
        lp.complement(A)
    sp = pytest.importorskip("sympy")
    M = sp.Symbol("M", positive=True, integer=True)
    assert str(lp.composition(Layout(M, 2), Layout(4, 2))) == "4:4"
    assert lp.composition(Layout(8, 2), Layout(M, 2)).is_symbolic
    assert lp.coalesce(Layout((M, 2), (1, M))).is_symbolic


def test_coordinate_strides_answer_alike_whatever_is_cached() -> None:
    """A layout with coordinate strides caches ``_sym = False`` once asked; the shortcuts
    for concrete operands must not change its compositions' answers (their zero strides
    stay coordinates where the general path makes them so)."""
    from layoutproof.arith import E

    Bs = [((2, 3), (0, 0)), ((1, 3), (5, 0)), (((2,), 1), ((0,), 7)), (4, 0), (1, 3), ((2, 2), (1, 2))]
    for make_a in (
        lambda: Layout(8, E(0)),
        lambda: Layout((8,), (E(1),)),
        lambda: Layout((4, 2), (E(0), E(1))),
    ):
        for s, d in Bs:
            fresh = make_a()
            asked = make_a()
            assert asked.is_symbolic is False
            a = _outcome(lp.composition, fresh, Layout(s, d))
            b = _outcome(lp.composition, asked, Layout(s, d))
            assert a == b and repr(lp.composition(make_a(), Layout(s, d))) == repr(
                lp.composition(asked, Layout(s, d))
            ), (s, d)
