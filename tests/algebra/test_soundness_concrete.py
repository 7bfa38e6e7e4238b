"""Issue 13, the concrete algebra: invalid input is refused with a typed error, size limits
are checked up front, the over-rejections are gone, ``python -O`` behaves the same, and no
public function of the concrete modules leaks an untyped exception on bad arguments."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys

import numpy as np
import pytest

import layoutproof as lp
from layoutproof import (
    ComposedLayout,
    InadmissibleError,
    Layout,
    LayoutError,
    MalformedLayoutError,
    OutOfDomainError,
    Swizzle,
    analysis,
    arith,
    composed,
    composition,
    downcast,
    f2,
    inttuple,
    kinds,
    layout,
    left_inverse,
    ops,
    swizzle,
)


def nest(x, k):
    for _ in range(k):
        x = (x,)
    return x


# ----------------------------------------------------------------------------- invalid input accepted
@pytest.mark.parametrize(
    "call,err",
    [
        (lambda: lp.crd2idx((5, 0), (4, 2)), OutOfDomainError),
        (lambda: lp.crd2idx(8, (4, 2)), OutOfDomainError),
        (lambda: lp.crd2idx((1, (2, 0)), (3, (2, 3))), OutOfDomainError),
        (lambda: lp.idx2crd(-1, (4, 2)), OutOfDomainError),
        (lambda: lp.idx2crd(8, (4, 2)), OutOfDomainError),
        (lambda: lp.idx2crd((4, 0), (4, 2)), OutOfDomainError),
        (lambda: lp.crd2crd(8, (4, 2)), OutOfDomainError),
        (lambda: lp.crd2crd((2, 0), 4, (2, 2)), OutOfDomainError),
        (lambda: lp.append((1, 2), 3, -4), MalformedLayoutError),
        (lambda: lp.append((1, 2, 3), 9, 2), MalformedLayoutError),
        (lambda: lp.prepend((1, 2), 3, 1), MalformedLayoutError),
        (lambda: lp.append(Layout((4, 2)), None, 1), MalformedLayoutError),
        (lambda: Layout((4, 2))(8), OutOfDomainError),
        (lambda: Layout((4, 2))(4, 0), OutOfDomainError),
        (lambda: lp.slice_and_offset((5, None), Layout((4, 2))), OutOfDomainError),
    ],
)
def test_out_of_range_and_bad_arguments_are_refused(call, err):
    with pytest.raises(err):
        call()


def test_in_range_coordinates_still_work():
    S = (3, (2, 3))
    for i in range(18):
        assert lp.crd2idx(lp.idx2crd(i, S), S) == i
    assert lp.append((1, 2), 3, 2) == (1, 2) and lp.append((1, 2), 3, 4) == (1, 2, 3, 3)
    assert lp.idx2crd(-3, 4, -1) == 3  # with a stride: any offset, floor semantics (pycute)


# ----------------------------------------------------------------------------- size limits
@pytest.mark.parametrize(
    "make",
    [
        lambda: Layout((2,) * 10000),
        lambda: Layout((2**62, 2**62)),
        lambda: Layout((2,) * 40),
        lambda: ComposedLayout(Swizzle(3, 3, 3), 0, Layout((2,) * 40)),
        lambda: lp.to_f2(Layout((2,) * 40)),
        lambda: arith.make_identity_layout((2**20, 2**20)),
    ],
)
def test_enumeration_refused_up_front(make):
    L = make()
    with pytest.raises(InadmissibleError) as ei:
        L.eval_all()
    assert ei.value.condition == "enumeration size limit"
    assert str(layout.EVAL_LIMIT) in str(ei.value)  # the limit is named (and the size)


# ----------------------------------------------------------------------------- over-rejections
def test_layout_o_swizzle_plain_result():
    assert composition(Layout(2, 9), Swizzle(3, 0, 3)) == Layout(2, 9)


def test_layout_o_swizzle_sweep():
    """Seeded: every answer of composition(L, Sw) equals L̂(sw(c)) on L's domain, and a
    refusal happens only when neither C++'s swizzle form nor any plain layout computes it
    (the plain-layout check: a flat layout's strides are its values at the unit
    coordinates, so trying every ordered factorisation of the size is exhaustive)."""
    import random

    rng = random.Random(13)

    def ext(L, x):  # L with its last mode unbounded
        fs, fd = lp.flatten(L.shape), lp.flatten(L.stride)
        off = 0
        for s, d in zip(fs[:-1], fd[:-1]):
            off += (x % s) * d
            x //= s
        return off + x * fd[-1]

    def factorizations(n):
        if n == 1:
            yield ()
            return
        for f in range(2, n + 1):
            if n % f == 0:
                for rest in factorizations(n // f):
                    yield (f,) + rest

    def some_layout(vals):
        n = len(vals)
        if n == 1:
            return vals[0] == 0
        for shp in factorizations(n):
            pp = [1]
            for f in shp[:-1]:
                pp.append(pp[-1] * f)
            if Layout(shp, tuple(vals[p] for p in pp)).eval_all().tolist() == vals:
                return True
        return False

    refused = 0
    for _ in range(300):
        shp = tuple(rng.choice([1, 2, 3, 4]) for _ in range(rng.randint(1, 3)))
        std = tuple(rng.randint(0, 12) for _ in shp)
        L = Layout(shp, std)
        b = rng.randint(1, 2)
        sw = Swizzle(b, rng.randint(0, 2), rng.choice([-1, 1]) * rng.randint(b, 3))
        truth = [ext(L, sw(c)) for c in range(L.size)]
        try:
            R = composition(L, sw)
        except InadmissibleError:
            refused += 1
            assert not some_layout(truth), (L, sw)
            continue
        assert [R(c) for c in range(L.size)] == truth, (L, sw, R)
    assert refused < 300


@pytest.mark.parametrize(
    "L,n",
    [
        (Layout((1, 9), (1, 1)), 2),
        (Layout((1, 1), (-1, 1)), 2),
        (Layout((2, 2, 2), (1, 1, 8)), 3),
        (Layout((4, 2), (1, -1)), 2),
    ],
)
def test_downcast_size1_and_several_unit_leaves(L, n):
    R = downcast(L, n)
    want = sorted(n * v + j for v in L.eval_all().tolist() for j in range(n))
    assert sorted(R.eval_all().tolist()) == want


@pytest.mark.parametrize(
    "L",
    [
        Layout((2, 2), (2, 3)),
        Layout((4, 2), (1, 2)),
        Layout((2, 2), (7, 9)),
        Layout((2, 3), (7, 2)),
        Layout((2, 1, 3), (24, 12, 7)),
    ],
)
def test_left_inverse_over_rejections_gone(L):
    R = left_inverse(L)
    v = L.eval_all()
    back = R.eval_all()[v]
    assert np.array_equal(v[back], v)


# ----------------------------------------------------------------------------- python -O
_O_SCRIPT = r"""
import json, layoutproof as lp
from layoutproof import Layout, Swizzle
def nest(x, k):
    for _ in range(k): x = (x,)
    return x
calls = [
    lambda: lp.crd2idx((5, 0), (4, 2)), lambda: lp.idx2crd(-1, (4, 2)),
    lambda: lp.append((1, 2), 3, -4), lambda: Layout((2,) * 10000).eval_all(),
    lambda: Layout((2**62, 2**62)).eval_all(), lambda: lp.compatible(nest(2, 500), 2),
    lambda: lp.left_inverse(Layout((3, 3), (2, 3))),
    lambda: lp.composition(Layout((4, 6), (1, 5)), Layout(4, 3)),
    lambda: Layout((0, 2)), lambda: Swizzle(3, 3, 2), lambda: lp.downcast(Layout(4, 2), 2),
    lambda: lp.complement(Layout((2, 2), (1, 3)), 16), lambda: Layout(4)(4),
]
out = []
for c in calls:
    try:
        c(); out.append("ok")
    except Exception as e:
        out.append(type(e).__name__ + ":" + str(getattr(e, "condition", "")))
print(json.dumps(out))
"""


def test_python_O_gives_the_same_typed_errors():
    runs = [
        subprocess.run([sys.executable, *flags, "-c", _O_SCRIPT], capture_output=True, text=True, timeout=300)
        for flags in ([], ["-O"])
    ]
    plain, opt = (json.loads(r.stdout.strip().splitlines()[-1]) for r in runs)
    assert plain == opt
    assert "ok" not in plain
    assert not any(
        x.startswith(("AssertionError", "TypeError", "RecursionError", "ValueError:")) for x in plain
    )


def test_no_assert_statements_in_the_concrete_modules():
    import ast
    import inspect

    for m in (inttuple, layout, ops, swizzle, analysis, arith):
        tree = ast.parse(inspect.getsource(m))
        assert not [n for n in ast.walk(tree) if isinstance(n, ast.Assert)], m.__name__


# ----------------------------------------------------------------------------- bad argument kinds
_GARBAGE = [
    None,
    "x",
    1.5,
    [],
    {},
    object(),
    nest(2, 500),
    nest(2, 70),
    -3,
    0,
    2**80,
    np.array([1, 2]),
    (1, "a"),
    (2, (3, None)),
    True,
    (),
    ((),),
    b"ab",
    slice(1, 2),
    np.float64(2.0),
]
_VALID = [
    Layout((4, 2)),
    Swizzle(2, 0, 3),
    ComposedLayout(Swizzle(1, 0, 1), 0, Layout(4)),
    4,
    (4, 2),
    arith.E(0),
]


def _public(mod):
    for name in mod.__all__:
        f = getattr(mod, name)
        if callable(f) and name not in ("IntTuple",):
            yield name, f


@pytest.mark.parametrize(
    "mod", [inttuple, layout, ops, swizzle, composed, f2, kinds, analysis, arith], ids=lambda m: m.__name__
)
def test_bad_argument_kinds_give_layout_errors(mod):
    """Every public function, given garbage in any position (the rest valid or garbage),
    raises a LayoutError (or a Python arity TypeError) -- never TypeError, AttributeError,
    RecursionError or a numpy error from inside."""
    leaks = {}
    for name, f in _public(mod):
        for k in (1, 2, 3):
            for pos in range(k):
                for bad in _GARBAGE:
                    for fill in itertools.islice(itertools.product(_VALID, repeat=k - 1), 12):
                        args = list(fill)
                        args.insert(pos, bad)
                        try:
                            f(*args)
                        except LayoutError:
                            pass
                        except TypeError as e:
                            if "positional argument" not in str(e):
                                leaks.setdefault(name, f"{type(e).__name__}: {e}")
                        except Exception as e:  # noqa: BLE001 - the point of the test
                            leaks.setdefault(name, f"{type(e).__name__}: {e}")
    assert not leaks, leaks
