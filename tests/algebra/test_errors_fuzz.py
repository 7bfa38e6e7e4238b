"""Soundness musts, malformed input, and a fuzz of the whole public API.

The contract under test: on bad input every public function raises a ``LayoutError``
subclass (never TypeError, AssertionError, RecursionError, ZeroDivisionError,
OverflowError, a bare IndexError, ...), and no operation ever returns a wrong layout.
"""

from __future__ import annotations

import inspect
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import layoutproof as lp
from layoutproof import (
    InadmissibleError,
    Layout,
    LayoutError,
    MalformedLayoutError,
    OutOfDomainError,
    _,
    append,
    ceil_div,
    coalesce,
    composition,
    crd2crd,
    crd2idx,
    idx2crd,
    prepend,
    size,
)
from layoutproof.cli import main


def deep(n: int, leaf=2):
    x = leaf
    for _i in range(n):
        x = (x,)
    return x


def ahat_value(A: Layout, x: int) -> int:
    """coalesce(A) at any x >= 0 with its last mode unbounded."""
    C = coalesce(A)
    s = C.shape if isinstance(C.shape, tuple) else (C.shape,)
    d = C.stride if isinstance(C.stride, tuple) else (C.stride,)
    off = 0
    for i in range(len(s) - 1):
        off += (x % s[i]) * d[i]
        x //= s[i]
    return off + x * d[-1]


# ----------------------------------------------------------------------------- soundness musts
def test_shah_counterexample_is_refused_with_witness_5():
    A, B = Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))
    with pytest.raises(InadmissibleError) as ei:
        composition(A, B)
    e = ei.value
    assert e.witness == 5
    assert e.condition in {"disjointness of B's modes in A", "stride divisibility", "shape divisibility"}
    # at 5 = (2,1): B = 7, A(7) = 1 + 7 = 8, whereas adding the modes' images gives A(4)+A(3) = 7
    assert B(5) == 7 and A(7) == 8 and A(4) + A(3) == 7
    # and indeed no layout of shape (3,2) reproduces A o B: it is not affine in mode 0
    vals = [A(B(i)) for i in range(6)]
    assert vals[2] - vals[1] != vals[1] - vals[0] or vals[5] - vals[4] != vals[4] - vals[3]


@pytest.mark.parametrize("rhs", [Layout(6, 1), 6, Layout((6,), (1,))])
def test_composition_never_truncates_to_size_of_a(rhs):
    A = Layout((4, 6), (1, 5))
    try:
        R = composition(A, rhs)
    except InadmissibleError as e:
        assert e.condition == "shape divisibility"
        return
    assert R.size == 6
    assert [R(i) for i in range(6)] == [ahat_value(A, i) for i in range(6)]


def test_shah_counterexample_every_refusal_path():
    # the same pair through the tuple-tiler and divide entry points must refuse too
    A, B = Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))
    with pytest.raises(InadmissibleError):
        composition(Layout(((6, 2),), ((1, 7),)), (B,))
    with pytest.raises(InadmissibleError):
        composition(A, Layout(((3, 2),), ((2, 3),)))


# ----------------------------------------------------------------------------- malformed input
@pytest.mark.parametrize(
    "args",
    [
        ((2, 3), (1,)),
        ((2, 3), (1, (2, 3))),
        ((2, (3, 4)), (1, 2)),
        (4, (1,)),
        ((4,), 1),
        (-3, 1),
        (0, 1),
        ((2, 0), (1, 2)),
        ((2, -1), None),
        (2.0, 1),
        (4, 1.0),
        ("4", 1),
        (4, "1"),
        (True, 1),
        (4, True),
        (None, 1),
        ({}, None),
        ({"a": 1}, 1),
        (b"4", 1),
        (np.float64(4.0), 1),
        (np.bool_(True), 1),
        ((2, [3, None]), None),
        (Layout(4), None),
        (4, Layout(4)),
    ],
)
def test_malformed_layouts_are_rejected(args):
    with pytest.raises(MalformedLayoutError):
        Layout(*args)


def test_malformed_error_is_a_value_error():
    with pytest.raises(ValueError):
        Layout(0, 1)
    assert issubclass(MalformedLayoutError, LayoutError)
    assert issubclass(OutOfDomainError, IndexError) and issubclass(OutOfDomainError, LayoutError)
    assert issubclass(InadmissibleError, LayoutError) and issubclass(LayoutError, ValueError)


def test_lists_and_numpy_ints_are_accepted():
    assert Layout([2, 3]) == Layout((2, 3))
    assert Layout([2, [3, 4]], [1, [2, 6]]) == Layout((2, (3, 4)), (1, (2, 6)))
    L = Layout(np.int64(4), np.int32(2))
    assert L == Layout(4, 2)
    assert type(L.shape) is int and type(L.stride) is int
    assert Layout((np.int8(2), np.uint16(3))) == Layout((2, 3))
    assert hash(Layout([2, 3])) == hash(Layout((2, 3)))


def test_deep_nesting_is_malformed_not_a_crash():
    for n in (65, 200):
        with pytest.raises(MalformedLayoutError):
            Layout(deep(n))
        with pytest.raises(MalformedLayoutError):
            Layout(deep(n), deep(n, 1))
        with pytest.raises(MalformedLayoutError):
            Layout.parse("(" * n + "4" + ")" * n)
    assert Layout(deep(10)).size == 2  # moderate nesting is fine


@pytest.mark.parametrize("n", [200, 5000])
@pytest.mark.parametrize(
    "call",
    [
        "coalesce(D)",
        "filter(D)",
        "complement(D)",
        "composition(L, D)",
        "logical_divide(L, D)",
        "zipped_divide(L, D)",
        "logical_product(L, D)",
        "blocked_product(L, D)",
        "tile_to_shape(L, D)",
        "L(D)",
        "L(D, 1)",
        "L(1, D)",
        "slice_and_offset(D, L)",
        "size(D)",
        "compatible(D, D)",
        "select(D, 0)",
        "take(D, 0)",
        "group(D, 0)",
        "cosize(D)",
        "shape(D)",
        "get(D, 0)",
        "make_layout_like(D)",
        "right_inverse(D)",
        "idx2crd(D, D)",
        "crd2idx(D, D)",
    ],
)
def test_deeply_nested_arguments_raise_layout_errors(n, call):
    """Nesting far past the 64-level limit (as a layout argument, a tiler or a coordinate)
    is reported as a LayoutError, never a RecursionError."""
    env = {name: getattr(lp, name) for name in [*lp.__all__, "filter", "zip"]}
    env.update(L=Layout((4, 2)), D=deep(n))
    with pytest.raises(LayoutError):
        eval(call, env)


def test_huge_extents_use_python_ints():
    n = 2**70
    L = Layout(n, 1)
    assert L.size == n and L.cosize == n
    assert L(n - 1) == n - 1
    L2 = Layout((n, 3), (1, n))
    assert L2.size == 3 * n
    assert L2(n + 5) == 5 + n and L2(n - 1, 2) == n - 1 + 2 * n
    assert L2(2 * n + 7) == 7 + 2 * n
    assert Layout((3, 3), (2**70, 1)).eval_all().tolist() == [
        0,
        n,
        2 * n,
        1,
        n + 1,
        2 * n + 1,
        2,
        n + 2,
        2 * n + 2,
    ]
    # the int64 boundary: offsets up to 2**63 - 1 and beyond stay exact
    assert Layout((2, 2), (2**62 - 1, 2**62 - 1)).eval_all().tolist() == [0, 2**62 - 1, 2**62 - 1, 2**63 - 2]
    assert Layout((2, 2), (2**62, 2**62)).eval_all().tolist() == [0, 2**62, 2**62, 2**63]
    assert Layout((2,), (-(2**63),)).eval_all().tolist() == [0, -(2**63)]
    assert size((n, n)) == n * n
    assert str(Layout((n,), (1,))) == f"({n}):(1)"
    assert Layout.parse(str(L2)) == L2
    with pytest.raises(OutOfDomainError):
        L(n)


def test_huge_values_through_the_algebra():
    n = 2**70
    assert coalesce(Layout((n, 2), (1, n))) == Layout(2 * n, 1)
    C = lp.complement(Layout(4, 1), n)
    assert C == Layout(n // 4, 4)
    R = composition(Layout((n, 4), (1, n)), Layout(2, n))
    assert R == Layout(2, n)
    assert lp.right_inverse(Layout((4, n), (n, 1))).size == 4 * n


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "garbage",
        "(4,",
        "4:",
        ":4",
        "4:1:2",
        "(4,2):(1)",
        "(4,,2)",
        "(,)",
        "((4)",
        "4)",
        "4;1",
        "a:b",
        "1e3:1",
        "4.0:1",
        "(-4):(1)",
        "0:1",
        "4 : (1,2)",
        "\x00",
        "(4)(2)",
        "4:1 extra",
        "None",
        "_",
        "composition(4:1, 2:1)",
        "((((",
        "(" * 100 + "4" + ")" * 100,
    ],
)
def test_parse_garbage(text):
    with pytest.raises(MalformedLayoutError):
        Layout.parse(text)


@pytest.mark.parametrize("text", [None, 4, b"4:1", ["4:1"], Layout(4)])
def test_parse_non_strings(text):
    with pytest.raises(MalformedLayoutError):
        Layout.parse(text)


def test_parse_accepts_cute_notation():
    assert Layout.parse("(_4,_2):(_1,_4)") == Layout((4, 2), (1, 4))
    assert Layout.parse(" ( 4 , ( 2 , 2 ) ) : ( 2 , ( 1 , 8 ) ) ") == Layout((4, (2, 2)), (2, (1, 8)))
    assert Layout.parse("(8)") == Layout((8,), (1,))
    assert Layout.parse("8:-1") == Layout(8, -1)
    assert Layout.parse("(2,3)") == Layout((2, 3))


# ----------------------------------------------------------------------------- known crashers
# Minimal reproductions of non-LayoutError escapes found by the fuzz below.
@pytest.mark.parametrize(
    "call",
    [
        lambda: ceil_div((0, 2), 3),  # ZeroDivisionError
        lambda: idx2crd(5, (0, 4)),  # ZeroDivisionError
        lambda: crd2idx(5, (0, 4)),  # ZeroDivisionError
        lambda: crd2crd(-1, (3, 0)),  # ZeroDivisionError
        lambda: append((4,), 2, 2**70),  # OverflowError
        lambda: prepend((4,), 2, 2**70),  # OverflowError
        lambda: append(Layout(4), None, 2**70),  # OverflowError
        lambda: prepend(Layout(4), None, 2**70),  # OverflowError
    ],
    ids=[
        "ceil_div-zero",
        "idx2crd-zero",
        "crd2idx-zero",
        "crd2crd-zero",
        "append-huge-n",
        "prepend-huge-n",
        "append-layout-huge-n",
        "prepend-layout-huge-n",
    ],
)
def test_known_crashers_raise_layout_errors(call):
    try:
        call()
    except LayoutError:
        pass


# ----------------------------------------------------------------------------- the API fuzz
def _public_callables():
    out = {}
    for name in lp.__all__:
        obj = getattr(lp, name)
        if isinstance(obj, type) and obj is not Layout:
            continue  # the exception classes and Underscore
        if callable(obj):
            out[name] = obj
    out["Layout.parse"] = Layout.parse
    out["filter"] = lp.filter  # CuTe's names, public but kept out of __all__
    out["zip"] = lp.zip
    return out


CALLABLES = _public_callables()


def _arity(name, f):
    if name == "Layout":
        return 1, 2
    params = list(inspect.signature(f).parameters.values())
    positional = [p for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
    lo = sum(1 for p in positional if p.default is p.empty)
    hi = len(positional) + (3 if any(p.kind == p.VAR_POSITIONAL for p in params) else 0)
    return lo, hi


ARITIES = {name: _arity(name, f) for name, f in CALLABLES.items()}

ATOMS = [
    0,
    1,
    2,
    3,
    4,
    6,
    -1,
    -3,
    2**70,
    -(2**70),
    2**63,
    1.5,
    2.0,
    float("nan"),
    float("inf"),
    "4",
    "x",
    "",
    None,
    True,
    False,
    {},
    {"a": 1},
    [],
    [2, 3],
    [[2], [3]],
    (),
    (2, 3),
    ((2,), (3, 4)),
    (0, 2),
    (2, -1),
    (1,),
    (2, 0),
    np.int64(3),
    np.int8(-2),
    np.float32(2),
    b"ab",
    object(),
    _,
    deep(70),
    deep(600),
    3 + 1j,
    range(3),
    (2**64, 3),
    (None, 2),
    (_, 2),
    ((_, 1), 2),
    slice(0, 2),
    Layout(8, 1),
    Layout((4, (2, 2)), (2, (1, 8))),
    Layout((2, 3), (0, -1)),
    Layout(1, 0),
    Layout((), ()),
    Layout((1,), (0,)),
    Layout((2**40, 3), (1, 2**40)),
    Layout(((2, 2),), ((1, 2),)),
    Layout((2, 2), (1, 3)),
    Layout((6, 2), (1, 7)),
    Layout(4, 0),
    Layout(((),), ((),)),
]

PARSE_TEXTS = [
    "(",
    ")",
    "4:",
    "(4,2):(1)",
    "4:1:2",
    "(-4):(1)",
    "0:1",
    "a:b",
    "(4,):(1,)",
    "_4:_1",
    "4:-1",
    "(2,(3,4)):(1,(2,6))",
    "9" * 400 + ":1",
    "(" * 100 + "4" + ")" * 100,
    "\x00",
    "(,)",
    "(4,,2)",
    "8:1",
    "():()",
]

_atom = st.sampled_from(ATOMS)
_small_layout = st.builds(
    lambda s, d: Layout(s, d),
    st.lists(st.sampled_from([1, 2, 3, 4, 2**40]), min_size=1, max_size=3).map(tuple),
    st.just(None),
) | st.lists(
    st.tuples(st.sampled_from([1, 2, 3, 4]), st.sampled_from([0, 1, -1, 2, 5, 2**40])), min_size=1, max_size=3
).map(lambda ms: Layout(tuple(m[0] for m in ms), tuple(m[1] for m in ms)))
GARBAGE = st.recursive(
    _atom | _small_layout,
    lambda inner: st.lists(inner, max_size=3).map(tuple) | st.lists(inner, max_size=2),
    max_leaves=8,
)


def _exercise(result):
    """Use a result the way a caller would (printing, hashing, evaluating small ones)."""
    if isinstance(result, Layout):
        str(result)
        repr(result)
        hash(result)
        if result.size <= 100_000:
            result.eval_all()


def _call(name, args):
    """Call and return None, or the offending exception when a non-LayoutError escapes."""
    try:
        _exercise(CALLABLES[name](*args))
    except LayoutError:
        return None
    except Exception as e:  # noqa: BLE001 - that is the point of the fuzz
        return e
    return None


@settings(max_examples=1500)
@given(st.data())
def test_fuzz_public_api_only_layout_errors(data):
    name = data.draw(st.sampled_from(sorted(CALLABLES)))
    lo, hi = ARITIES[name]
    if name == "Layout.parse" and data.draw(st.booleans()):
        args = [data.draw(st.sampled_from(PARSE_TEXTS))]
    else:
        args = [data.draw(GARBAGE) for _i in range(data.draw(st.integers(lo, hi)))]
    e = _call(name, args)
    assert e is None, f"{name}{tuple(args)!r:.300} raised {type(e).__name__}: {e}"


def test_fuzz_seeded_random_loop():
    """A few thousand seeded random calls; all escapes are collected and reported together."""
    rng = random.Random(20240607)
    names = sorted(CALLABLES)
    escapes = {}

    def garbage(depth=0):
        r = rng.random()
        if depth < 2 and r < 0.3:
            return tuple(garbage(depth + 1) for _i in range(rng.randint(0, 3)))
        if r < 0.45:
            k = rng.randint(1, 3)
            return Layout(
                tuple(rng.choice([1, 2, 3, 4, 2**40]) for _i in range(k)),
                tuple(rng.choice([0, 1, -1, 2, 5, 2**40]) for _i in range(k)),
            )
        return rng.choice(ATOMS)

    for _i in range(4000):
        name = rng.choice(names)
        lo, hi = ARITIES[name]
        if name == "Layout.parse" and rng.random() < 0.6:
            args = [rng.choice(PARSE_TEXTS)]
        else:
            args = [garbage() for _j in range(rng.randint(lo, hi))]
        e = _call(name, args)
        if e is not None:
            escapes.setdefault((name, type(e).__name__), f"{name}{tuple(args)!r:.200}: {e!s:.100}")
    assert not escapes, "non-LayoutError escapes:\n" + "\n".join(sorted(escapes.values()))


@pytest.mark.parametrize("name", sorted(CALLABLES))
def test_every_callable_with_each_edge_atom(name):
    """Each public callable, with each edge value in each argument position (the others
    valid-looking), raises nothing but LayoutErrors."""
    lo, hi = ARITIES[name]
    n = max(lo, 1) if hi else 0
    base = [Layout((4, (2, 2)), (2, (1, 8))), (2, 2), 2, 1][:n]
    escapes = []
    for pos in range(n):
        for atom in ATOMS:
            args = list(base)
            args[pos] = atom
            e = _call(name, args)
            if e is not None:
                escapes.append(f"{name}{tuple(args)!r:.160}: {type(e).__name__}: {e!s:.80}")
    assert not escapes, "\n".join(escapes[:20])


METHOD_CALLS = [
    lambda L, c: L(c),
    lambda L, c: L(c, 1),
    lambda L, c: L(1, c),
    lambda L, c: L[c],
    lambda L, c: L((c, 0)),
    lambda L, c: lp.slice_and_offset(c, L),
    lambda L, c: L == c,
    lambda L, c: L != c,
]


def test_layout_methods_with_edge_coordinates():
    layouts = [Layout((4, (2, 2)), (2, (1, 8))), Layout(8, 1), Layout((), ()), Layout((2, 3), (0, -1))]
    escapes = []
    for L in layouts:
        for c in ATOMS:
            for call in METHOD_CALLS:
                try:
                    _exercise(call(L, c))
                except LayoutError:
                    pass
                except Exception as e:  # noqa: BLE001
                    escapes.append(f"{L} with {c!r:.60}: {type(e).__name__}: {e!s:.80}")
    assert not escapes, "\n".join(escapes[:20])


def test_evaluation_errors_are_typed():
    L = Layout((4, 2))
    with pytest.raises(OutOfDomainError):
        L(8)
    with pytest.raises(OutOfDomainError):
        L(-1)
    with pytest.raises(OutOfDomainError):
        L(4, 0)
    with pytest.raises(OutOfDomainError):
        L(1, 1, 1)
    with pytest.raises(OutOfDomainError):
        L[2]
    with pytest.raises(IndexError):  # OutOfDomainError is an IndexError too
        L[-3]
    with pytest.raises(MalformedLayoutError):
        L(1.0)
    with pytest.raises(MalformedLayoutError):
        L(True)
    with pytest.raises(MalformedLayoutError):
        L()
    assert L(np.int64(3)) == 3 and L([1, 1]) == 5


# ----------------------------------------------------------------------------- CLI
def test_cli_eval_prints_the_composition(capsys):
    rc = main(["eval", "composition((4,(2,2)):(2,(1,8)), (2,4):(1,2))"])
    out, err = capsys.readouterr()
    assert rc == 0
    assert out.strip() == "(2,(2,2)):(2,(4,1))"
    assert err == ""


def test_cli_eval_values(capsys):
    assert main(["eval", "(4,(2,2)):(2,(1,8))(13)"]) == 0
    assert capsys.readouterr().out.strip() == "11"
    assert main(["eval", "complement((2,4):(1,2), 16)"]) == 0
    assert capsys.readouterr().out.strip() == "2:8"
    assert main(["eval", "size((4,2):(1,4))"]) == 0
    assert capsys.readouterr().out.strip() == "8"


def test_cli_eval_inadmissible(capsys):
    rc = main(["eval", "composition((6,2):(1,7), (3,2):(2,3))"])
    out, err = capsys.readouterr()
    assert rc == 2
    assert out == ""
    assert "disjointness of B's modes in A" in err
    assert "witness: 5" in err


@pytest.mark.parametrize(
    "expr",
    [
        "garbage(((",
        "(4,",
        "",
        "composition(",
        "4:1:",
        "unknown(4:1)",
        "composition(8:1, 3.5)",
        "(4,2):(1)",
        "0:1",
        "composition(8:1)",
        "Layout(4, 2, 3)",
        "coalesce()",
        "8:1(8)",
        "ceil_div((0,2), 3)",
        "prepend(4, 2, 99999999999999999999999)",
        "composition(" * 100 + "8:1" + ")" * 100,
    ],
)
def test_cli_eval_garbage_returns_2(expr, capsys):
    rc = main(["eval", expr])
    out, err = capsys.readouterr()
    assert rc == 2, (expr, out, err)
    assert out == ""
    assert err.startswith(("error:", "inadmissible")), err
