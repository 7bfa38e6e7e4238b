"""layoutproof.verify: the Result type, functional equality (exhaustive and Z3), identities,
admissibility, the post-condition of every operation, SMT-LIB export, symbolic notation and
the ``layoutproof check`` command.

Soundness is tested both ways: true statements are proved, false ones refuted with a
counterexample that is checked here by plain evaluation (never by the module under test),
and results perturbed on purpose must be refuted."""

from __future__ import annotations

import doctest
import importlib
import json
import os
import pkgutil
import subprocess
import sys
import time

import numpy as np
import pytest
import sympy as sp
from conftest import examples, layouts, strides_for
from hypothesis import given, settings
from hypothesis import strategies as st

import layoutproof as lp
from layoutproof import (
    ComposedLayout,
    InadmissibleError,
    Layout,
    LayoutError,
    MalformedLayoutError,
    Swizzle,
    assuming,
    complement,
    composition,
    logical_divide,
    symbols,
    verify,
    zipped_divide,
)
from layoutproof.inttuple import flatten, idx2crd
from layoutproof.verify import (
    Counterexample,
    Result,
    admissible,
    compatible,
    cross_check,
    equal,
    function,
    identity,
    postcondition,
    to_smtlib,
)

M, N, K = symbols("M N K")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def values(L) -> list:
    return [L(i) for i in range(L.size)]


def sub(L: Layout, env: dict) -> Layout:
    if not L.is_symbolic:
        return L
    return L.subs({k: v for k, v in env.items() if k in {s.name for s in L.free_symbols}})


def assert_real_counterexample(r: Result, A: Layout, B: Layout) -> None:
    """The refutation of ``A == B`` is true: at the reported assignment the layouts differ
    at the reported coordinate, with the reported values (plain evaluation)."""
    assert r.status == "refuted", r
    c = r.counterexample
    env = c.assignment or {}
    a, b = sub(A, env), sub(B, env)
    if a.size != b.size:
        return
    assert c.coordinate is not None
    assert a(c.coordinate) == c.lhs and b(c.coordinate) == c.rhs and c.lhs != c.rhs
    assert all(a(i) == b(i) for i in range(c.coordinate)), "not the first differing coordinate"


# ----------------------------------------------------------------------------- Result
def test_result_status_bool_text_and_immutability():
    p = Result("proved", "z3", claim="A == B", seconds=0.0123)
    ch = Result("checked", "bounded", claim="A == B", bounds={"M": (1, 8)}, cases=8)
    cex = Counterexample(coordinate=5, natural=(2, 1), lhs=7, rhs=8, assignment={"M": 4})
    rf = Result("refuted", "exhaustive", claim="A == B", counterexample=cex)
    un = Result("unknown", "z3", claim="A == B", reason="timeout")
    assert [bool(x) for x in (p, ch, rf, un)] == [True, True, False, False]
    assert str(p) == "proved (z3, 12.3 ms): A == B"
    assert str(ch).endswith("within 1 <= M <= 8")
    assert str(rf).endswith("coordinate 5 = (2,1): 7 != 8; M = 4")
    assert str(un).endswith("-- timeout")
    text = rf.explain()
    assert "counterexample: coordinate 5 = (2,1): 7 != 8" in text and "assignment: M = 4" in text
    assert "8 assignments checked" in ch.explain()
    json.dumps(rf.as_dict())
    with pytest.raises(AttributeError):
        p.status = "refuted"
    with pytest.raises(AttributeError):
        rf.counterexample.coordinate = 0
    with pytest.raises(ValueError):
        Result("maybe", "z3")
    with pytest.raises(ValueError):
        Result("proved", "guess")
    assert p.replace(status="unknown", reason="x").status == "unknown" and p.status == "proved"


# ----------------------------------------------------------------------------- concrete equality
def test_equal_concrete_examples():
    assert equal(Layout((4, 2), (1, 4)), Layout(8, 1)).status == "proved"
    assert equal("(2,(2,2)):(1,(2,4))", "8:1").method == "exhaustive"
    r = equal(Layout((3, 2), (2, 3)), Layout((3, 2), (2, 4)))
    assert (r.status, r.counterexample.coordinate, r.counterexample.natural) == ("refuted", 3, (0, 1))
    assert (r.counterexample.lhs, r.counterexample.rhs) == (3, 4)
    r = equal(Layout(8, 1), Layout(6, 1))
    assert r.status == "refuted" and "sizes differ" in str(r.counterexample)
    assert equal(Layout(1, 0), Layout((1, 1), (5, 7))).status == "proved"


@st.composite
def layout_pairs(draw):
    """(A, B) of the same size: same shape with another stride, A's coalesced form, or a
    layout of a different shape of the same size."""
    A = draw(layouts(max_size=96, kind="any"))
    how = draw(st.integers(0, 3))
    if how == 0:
        B = Layout(A.shape, draw(strides_for(A.shape, "any")))
    elif how == 1:
        B = lp.coalesce(A)
    elif how == 2:  # one stride changed by one
        fd = list(flatten(A.stride))
        k = draw(st.integers(0, len(fd) - 1)) if fd else 0
        if fd:
            fd[k] += draw(st.sampled_from([-1, 1]))
        B = Layout(A.shape, lp.unflatten(tuple(fd), A.shape) if type(A.shape) is tuple else fd[0])
    else:
        B = Layout(A.size, draw(st.sampled_from([0, 1, 2])))
    return A, B


@settings(max_examples=examples(150))
@given(layout_pairs())
def test_equal_concrete_matches_brute_force(pair):
    A, B = pair
    va, vb = values(A), values(B)
    r = equal(A, B)
    assert r.method == "exhaustive"
    assert (r.status == "proved") == (va == vb)
    if r.status == "refuted":
        first = next(i for i in range(len(va)) if va[i] != vb[i])
        c = r.counterexample
        assert (c.coordinate, c.lhs, c.rhs) == (first, va[first], vb[first])
        assert c.natural == idx2crd(first, A.shape) and A(c.natural) == va[first]


def test_equal_swizzled_and_composed_layouts():
    C = ComposedLayout(Swizzle(1, 0, 1), 0, Layout((2, 2), (2, 1)))  # values 0, 3, 1, 2
    assert equal(C, function(lambda i: [0, 3, 1, 2][i], 4)).status == "proved"
    c = equal(C, Layout(4, 1)).counterexample
    assert (c.coordinate, c.lhs, c.rhs) == (1, 3, 1)
    sw = Swizzle(3, 3, 3)
    tile = lp.composition(sw, Layout((8, 64), (64, 1)))
    assert equal(tile, function(lambda i: sw(Layout((8, 64), (64, 1))(i)), (8, 64))).status == "proved"
    assert equal(sw, sw.as_layout()).status == "proved"
    assert equal(sw, Layout(sw.size, 1)).status == "refuted"


def test_equal_two_to_the_twenty_under_50_ms():
    A = Layout((2,) * 20, tuple(2**k for k in range(20)))
    B = Layout((1024, 1024), (1, 1024))
    equal(A, B)  # warm-up (numpy import)
    best = min(_timed(lambda: equal(A, B)) for _ in range(5))
    assert equal(A, B).status == "proved"
    assert best < 0.050, f"exhaustive equality of 2^20 elements took {best * 1e3:.1f} ms"
    r = equal(A, Layout((1024, 1024), (1024, 1)))
    assert r.status == "refuted" and r.counterexample.coordinate == 1


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def test_equal_huge_concrete_domains_go_to_z3():
    n = 2**40
    r = equal(Layout((n, 4), (1, n)), Layout(4 * n, 1))
    assert r.status == "proved" and r.method in ("sympy", "z3")
    r = equal(Layout((n, 4), (1, n)), Layout((n, 4), (1, n + 1)))
    assert r.status == "refuted" and r.counterexample.coordinate == n


# ----------------------------------------------------------------------------- symbolic equality
@pytest.mark.parametrize(
    "A, B",
    [
        (Layout((M, N), (1, M)), Layout(M * N, 1)),
        (Layout((M, N, K), (1, M, M * N)), Layout(M * N * K, 1)),
        (Layout(((M, N), K), ((1, M), M * N)), Layout((M, (N, K)), (1, (M, M * N)))),
        (Layout((2, M), (1, 2)), Layout(2 * M, 1)),
        (Layout((4, M), (M, 1)), Layout((4, M), (M, 1))),
    ],
)
def test_equal_symbolic_proved(A, B):
    r = equal(A, B)
    assert r.status == "proved" and r.method in ("sympy", "z3"), r


@pytest.mark.parametrize(
    "A, B",
    [
        (Layout((M, N), (1, M)), Layout((M, N), (N, 1))),
        (Layout((M, 2), (2, 1)), Layout(2 * M, 1)),
        (Layout((M * N, K), (K, 1)), Layout((M, N, K), (N * K, K, 1))),
        (Layout((4, M), (M, 1)), Layout((M, 4), (1, M))),
        (Layout((M, N), (1, M)), Layout((M, N), (1, 8))),
    ],
)
def test_equal_symbolic_refuted_with_a_real_counterexample(A, B):
    r = equal(A, B)
    assert r.counterexample.assignment, r
    assert_real_counterexample(r, A, B)


def test_equal_symbolic_uses_the_assumptions():
    A, B = Layout((M, N), (1, M)), Layout((M, N), (1, 8))
    assert equal(A, B, assume="M == 8").status == "proved"
    with assuming("M == 8"):
        assert equal(A, B).status == "proved"
    r = equal(A, B, assume="M >= 2")
    assert r.counterexample.assignment["M"] not in (8,) and r.counterexample.assignment["M"] >= 2
    assert_real_counterexample(r, A, B)
    r = equal(A, B, assume=["M == 1", "M == 2"])
    assert r.status == "unknown" and "contradict" in r.reason


def test_equal_symbolic_sizes_differ():
    r = equal(Layout((M, 2), (1, M)), Layout(M, 1))
    assert r.status == "refuted" and "sizes" in str(r.counterexample)


def test_timeout_gives_unknown_never_proved():
    L = Layout((M, N), (N, 1))
    r = postcondition("right_inverse", Layout((N, M), (M, 1)), L, timeout_ms=1, bounds=False)
    assert r.status == "unknown" and not r and "timeout" in r.reason
    assert postcondition("right_inverse", Layout((N, M), (M, 1)), L).status == "proved"
    # Fermat for cubes: true, and beyond Z3
    fermat = (lambda M, N, K: sp.Min(sp.Abs(M**3 + N**3 - K**3), 1), lambda M, N, K: 1)
    r = identity(*fermat, bounds=False, timeout_ms=100)
    assert r.status == "unknown" and r.reason and r.obligations[-1].verdict == "unknown"


def test_invalid_timeout_is_an_error():
    with pytest.raises(LayoutError):
        equal(Layout(M, 1), Layout(M, 1), timeout_ms=0)


# ----------------------------------------------------------------------------- identities
def test_identity_composition_under_an_assumption():
    lhs = lambda M, N: composition(Layout((M, N), (N, 1)), Layout(4, 1))  # noqa: E731
    rhs = lambda M, N: Layout(4, N)  # noqa: E731
    r = identity(lhs, rhs, assume="M % 4 == 0")
    assert r.status == "proved" and r.method in ("sympy", "z3")
    assert identity(lhs, rhs, params="M N", assume="M % 4 == 0").status == "proved"
    assert identity(lhs, rhs, params=[M, N], assume=[sp.Eq(M % 4, 0)]).status == "proved"
    # without the assumption the statement is false: refuted at an assignment with 4 ∤ M
    r = identity(lhs, rhs)
    assert r.status == "refuted", r
    env = r.counterexample.assignment
    assert env["M"] % 4 != 0
    try:
        left = lhs(env["M"], env["N"])
    except InadmissibleError:
        return
    assert not np.array_equal(left.eval_all(), rhs(env["M"], env["N"]).eval_all())


def test_identity_shah_composition_is_refuted_with_its_witness():
    A, B = Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))
    r = identity(lambda: composition(A, B), lambda: Layout((3, 2), (2, 3)))
    assert r.status == "refuted" and r.condition == "disjointness of B's modes in A"
    assert r.counterexample.coordinate == 5
    # the same false claim stated pointwise: (3,2):(2,3) is not A∘B at coordinate 5
    r = equal(Layout((3, 2), (2, 3)), function(lambda i: A(B(i)), (3, 2)))
    c = r.counterexample
    assert (r.status, c.coordinate, c.natural, c.lhs, c.rhs) == ("refuted", 5, (2, 1), 7, 8)
    r = postcondition("composition", Layout((3, 2), (2, 3)), A, B)
    c = r.counterexample
    assert (r.status, c.coordinate, c.lhs, c.rhs) == ("refuted", 5, 7, 8)


def test_identity_divides_and_complement_examples():
    r = identity(
        lambda M, N: logical_divide(Layout((M, N), (1, M)), (64, 32)),
        lambda M, N: Layout(((64, M / 64), (32, N / 32)), ((1, 64), (M, 32 * M))),
        assume=["M % 64 == 0", "N % 32 == 0"],
    )
    assert r.status == "proved", r
    r = identity(lambda K: complement(Layout(4, 2), 8 * K), lambda K: Layout((2, K), (1, 8)))
    assert r.status == "proved"
    ok = lambda M, N: Layout(((8, 4), (M / 8, N / 4)), ((1, M), (8, 4 * M)))  # noqa: E731
    bad = lambda M, N: Layout(((8, 4), (M / 8, N / 4)), ((1, M), (8, 8 * M)))  # noqa: E731
    zd = lambda M, N: zipped_divide(Layout((M, N), (1, M)), (8, 4))  # noqa: E731
    facts = ["M % 8 == 0", "N % 4 == 0"]
    assert identity(zd, ok, assume=facts).status == "proved"
    r = identity(zd, bad, assume=facts)
    env = r.counterexample.assignment
    assert env["M"] % 8 == 0 and env["N"] % 4 == 0
    with assuming(*facts):
        assert_real_counterexample(r, zd(M, N), bad(M, N))


def test_identity_bounded_fallback():
    fermat = (lambda M, N, K: sp.Min(sp.Abs(M**3 + N**3 - K**3), 1), lambda M, N, K: 1)
    r = identity(*fermat, bounds=6, timeout_ms=100)
    assert r.status == "checked" and r.method == "bounded" and bool(r)
    assert r.bounds == {"K": (1, 6), "M": (1, 6), "N": (1, 6)} and r.cases == 216
    pyth = (lambda M, N, K: sp.Min(sp.Abs(M**2 + N**2 - K**2), 1), lambda M, N, K: 1)
    r = identity(*pyth, bounds=10, timeout_ms=500)
    env = r.counterexample.assignment
    assert r.status == "refuted" and env["M"] ** 2 + env["N"] ** 2 == env["K"] ** 2


def test_identity_bounded_box_follows_congruences_and_cap():
    # the symbolic layout needs 4 | M: undecided without the assumption, so bounded
    r = identity(lambda M: Layout((4, M / 4), (1, 4)), lambda M: Layout(M, 1), max_cases=64)
    assert r.status == "checked" and r.cases >= 4, r.explain()
    fermat = (lambda M, N, K: sp.Min(sp.Abs(M**3 + N**3 - K**3), 1), lambda M, N, K: 1)
    r = identity(*fermat, bounds={"M": (2, 5), N: 3, "K": 4}, timeout_ms=100)
    assert r.status == "checked" and r.bounds == {"M": (2, 5), "N": (1, 3), "K": (1, 4)} and r.cases == 48
    r = identity(*fermat, assume=["M % 8 == 0", "N <= 2"], timeout_ms=100, max_cases=1000)
    assert r.status == "checked" and r.bounds["N"] == (1, 2), r.bounds
    assert r.bounds["M"][1] % 8 == 0 and r.bounds["M"][1] >= 64  # widened by the congruence, then cut
    assert r.cases <= 1000


def test_identity_scalar_sides_and_errors():
    assert identity(lambda M, N: lp.size(Layout((M, N), (1, M))), lambda M, N: M * N).status == "proved"
    r = identity(lambda M, N: lp.cosize(Layout((M, N), (1, M))), lambda M, N: M * N + 1)
    assert r.status == "refuted" and (r.counterexample.lhs, r.counterexample.rhs) == (1, 2)
    with pytest.raises(MalformedLayoutError):
        identity(lambda M: Layout((M, N), (1, M)), lambda M: Layout((M, N), (1, M)), params="M")


# ----------------------------------------------------------------------------- admissibility
def test_admissible_concrete():
    assert admissible(composition, Layout((4, 2), (1, 4)), Layout(2, 1)).status == "proved"
    r = admissible("complement", Layout((2, 2), (1, 3)), 16)
    assert r.status == "refuted" and r.condition == "complement admissibility (stride chain)"
    r = admissible("composition", Layout((4, 6), (1, 5)), Layout(6, 1))
    assert (r.condition, r.counterexample.coordinate) == ("shape divisibility", 4)
    r = admissible("composition", Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3)))
    assert (r.condition, r.counterexample.coordinate) == ("disjointness of B's modes in A", 5)
    with pytest.raises(MalformedLayoutError):
        admissible("no_such_operation", Layout(4, 1))


def test_admissible_symbolic():
    A = Layout((M, N), (N, 1))
    assert admissible("composition", A, Layout(4, 1), assume="M % 4 == 0").status == "proved"
    r = admissible("composition", A, Layout(4, 1))
    assert r.status == "unknown" and "M" in r.condition and not r
    r = admissible("composition", A, Layout(4, 1), bounds=8)
    assert r.status == "refuted" and r.counterexample.assignment["M"] % 4 != 0
    with pytest.raises(InadmissibleError):
        composition(
            Layout(
                (r.counterexample.assignment["M"], r.counterexample.assignment["N"]),
                (r.counterexample.assignment["N"], 1),
            ),
            Layout(4, 1),
        )


def test_compatible():
    assert compatible(12, (4, 3)).status == "proved"
    assert compatible((4, 3), 12).status == "refuted"
    assert compatible(Layout((4, 6)), Layout((4, (2, 3)))).status == "proved"
    assert str(compatible((4, 6), (4, (2, 2))).counterexample) == "mode 1: 6 != 4"
    assert compatible((M, N), (M, (2, N / 2))).status == "proved"
    r = compatible((M, 8), (M, (2, N)))
    assert r.status == "refuted" and r.counterexample.assignment["N"] != 4
    assert compatible((M, 8), (M, (2, N)), assume="N == 4").status == "proved"


# ----------------------------------------------------------------------------- post-conditions, concrete
def _tiler(draw, L, tupled):
    """A tiler for L: a layout, or a tuple of per-mode integer tilers (one per leading mode)."""
    if tupled:
        k = draw(st.integers(1, L.rank))
        return tuple(draw(st.sampled_from(sorted({lp.size(L[i]), 1, 2}))) for i in range(k))
    return draw(layouts(max_size=16, kind=draw(st.sampled_from(["compact", "chain", "nonneg"]))))


@st.composite
def op_inputs(draw, op):
    kind = draw(st.sampled_from(["compact", "chain", "mixed"]))
    L = draw(layouts(max_size=64, kind=kind))
    if op in ("coalesce", "filter", "right_inverse", "left_inverse"):
        return (L,)
    if op == "composition":
        return (L, draw(layouts(max_size=32, kind=draw(st.sampled_from(["compact", "chain", "nonneg"])))))
    if op == "complement":
        return (L, draw(st.integers(1, 128)))
    if op == "upcast":
        return (L, draw(st.sampled_from([1, 2, 4, 8])))
    if op.endswith("divide"):
        return (L, _tiler(draw, L, draw(st.booleans())))
    if op == "tile_to_shape":
        B = draw(layouts(max_size=8, kind="compact", max_rank=2, max_depth=1))
        ts = tuple(lp.size(B[i]) * draw(st.integers(1, 3)) for i in range(B.rank))
        return (B, ts)
    block = draw(layouts(max_size=16, kind=kind, max_rank=2))
    if op in ("logical_product", "zipped_product", "tiled_product", "flat_product") and draw(st.booleans()):
        k = draw(st.integers(1, block.rank))  # a tuple tiler: mode by mode
        return (block, tuple(draw(layouts(max_size=4, kind="compact", max_depth=1)) for _ in range(k)))
    return (block, draw(layouts(max_size=8, kind="compact", max_rank=2)))


OPS = sorted(verify.OPERATIONS)


@pytest.mark.parametrize("op", OPS)
def test_postcondition_holds_on_every_admissible_result(op):
    fn = getattr(lp, op)

    @settings(max_examples=examples(25))
    @given(op_inputs(op))
    def prop(args):
        try:
            R = fn(*args)
        except InadmissibleError:
            return
        r = postcondition(op, R, *args)
        assert r.status == "proved", (op, args, str(R), r.explain())

    prop()


def _perturbed(R: Layout, k: int, delta: int) -> Layout:
    fd = list(flatten(R.stride))
    fd[k] += delta
    return Layout(R.shape, lp.unflatten(tuple(fd), R.shape) if type(R.shape) is tuple else fd[0])


@pytest.mark.parametrize(
    "op",
    [
        "composition",
        "coalesce",
        "logical_divide",
        "zipped_divide",
        "logical_product",
        "blocked_product",
        "raked_product",
        "flat_divide",
        "tiled_product",
    ],
)
def test_postcondition_refutes_perturbed_results(op):
    """The post-condition determines these results as functions: any other function fails."""
    fn = getattr(lp, op)

    @settings(max_examples=examples(25))
    @given(op_inputs(op), st.data())
    def prop(args, data):
        try:
            R = fn(*args)
        except InadmissibleError:
            return
        movable = [k for k, s in enumerate(flatten(R.shape)) if s > 1]
        if not movable:
            return
        k = data.draw(st.sampled_from(movable))
        bad = _perturbed(R, k, data.draw(st.sampled_from([-1, 1, 3])))
        r = postcondition(op, bad, *args)
        assert r.status == "refuted", (op, args, str(R), str(bad))
        if op == "composition" and r.counterexample.coordinate is not None:
            A, B = args
            c = r.counterexample.coordinate
            if B(c) < A.size:  # plain evaluation inside A's domain
                assert r.counterexample.lhs == bad(c) and r.counterexample.rhs == A(B(c))

    prop()


def _oracle(op: str, R: Layout, L: Layout, M=None) -> bool:
    """The specification evaluated naively (Python loops)."""
    if op == "right_inverse":
        return all(0 <= R(i) < L.size and L(R(i)) == i for i in range(R.size))
    if op == "left_inverse":
        img = [L(i) for i in range(L.size)]
        if any(not 0 <= y < R.size for y in img):
            return False
        if len(set(img)) == len(img):
            return all(R(img[i]) == i for i in range(L.size))
        return all(0 <= R(y) < L.size and L(R(y)) == y for y in img)
    keep = [(s, d) for s, d in zip(flatten(L.shape), flatten(L.stride)) if s != 1 and d != 0]
    if any(d < 0 for _s, d in keep):
        return False
    X = Layout(tuple(s for s, _ in keep) + flatten(R.shape), tuple(d for _, d in keep) + flatten(R.stride))
    v = values(X)
    if sorted(v) != list(range(len(v))):
        return False
    c = values(R)
    if any(c[i] >= c[i + 1] for i in range(len(c) - 1)):
        return False
    ext = max([s * d for s, d in keep], default=1)
    return len(v) == -(-M // ext) * ext


@pytest.mark.parametrize("op", ["right_inverse", "left_inverse", "complement"])
def test_postcondition_agrees_with_a_naive_oracle(op):
    @settings(max_examples=examples(120))
    @given(
        layouts(max_size=32, kind="mixed"),
        layouts(max_size=32, kind="mixed"),
        st.integers(1, 64),
        st.sampled_from(["op", "perturbed", "random"]),
        st.data(),
    )
    def prop(L, other, M, how, data):
        args = (L, M) if op == "complement" else (L,)
        R = other
        if how != "random":
            try:
                R = getattr(lp, op)(*args)
            except InadmissibleError:
                return
            if how == "perturbed":
                R = _perturbed(
                    R,
                    data.draw(st.integers(0, len(flatten(R.shape)) - 1)),
                    data.draw(st.sampled_from([-1, 1, 2])),
                )
        r = postcondition(op, R, *args)
        want = "proved" if _oracle(op, R, L, M) else "refuted"
        assert r.status == want, (op, str(L), str(R), M, r.explain())

    prop()


def test_postcondition_messages_name_the_failure():
    r = postcondition("complement", Layout(2, 4), Layout((2, 2), (1, 8)), 32)
    assert "(L, C)" in str(r.counterexample)
    r = postcondition("complement", Layout(4, 4), Layout(4, 1), 24)  # (4,4):(1,4) fills [0,16) only
    assert "fills [0, 16)" in str(r.counterexample)
    r = postcondition("complement", Layout(3, 4), Layout(2, 1), 8)  # (2,3):(1,4) leaves gaps
    assert r.status == "refuted" and "does not map onto [0, 6)" in str(r.counterexample)
    r = postcondition("coalesce", Layout((2, (2, 3)), (1, (2, 4))), Layout((2, (2, 3)), (1, (2, 4))))
    assert r.status == "refuted" and "depth" in str(r.counterexample)
    r = postcondition("left_inverse", Layout(4, 1), Layout(4, 2))
    assert "outside R's domain" in str(r.counterexample)
    r = postcondition("tile_to_shape", Layout((2, 4), (1, 2)), Layout((2, 2), (1, 2)), (2, 4))
    assert r.status == "proved"
    r = postcondition("tile_to_shape", Layout((2, 4), (1, 2)), Layout((2, 2), (1, 2)), (4, 2))
    assert r.status == "refuted"
    with pytest.raises(MalformedLayoutError, match="no post-condition"):
        postcondition("make_layout", Layout(2, 1), Layout(2, 1))


def test_postcondition_composition_with_a_swizzle():
    sw, B = Swizzle(3, 3, 3), Layout((8, 64), (64, 1))
    R = composition(sw, B)
    assert postcondition("composition", R, sw, B).status == "proved"
    assert postcondition("composition", B, sw, B).status == "refuted"


# ----------------------------------------------------------------------------- post-conditions, symbolic
def test_postcondition_symbolic_divides():
    with assuming("M % 64 == 0", "N % 32 == 0"):
        L = Layout((M, N), (1, M))
        for op in ("logical_divide", "zipped_divide", "tiled_divide", "flat_divide"):
            R = getattr(lp, op)(L, (64, 32))
            r = postcondition(op, R, L, (64, 32))
            assert r.status == "proved" and r.method in ("sympy", "z3"), r.explain()
        R = logical_divide(L, (64, 32))
        bad = Layout(R.shape, ((1, 64), (M, 64 * M)))
        r = postcondition("logical_divide", bad, L, (64, 32))
        env = r.counterexample.assignment
        assert r.status == "refuted" and env["M"] % 64 == 0 and env["N"] % 32 == 0
        assert_real_counterexample(equal(bad, R), bad, R)


def test_postcondition_symbolic_composition_complement_inverses():
    A = Layout((M, N), (N, 1))
    with assuming("M % 4 == 0"):
        R = composition(A, Layout(4, 1))
        assert postcondition("composition", R, A, Layout(4, 1)).status == "proved"
        r = postcondition("composition", Layout(4, 1), A, Layout(4, 1))
        assert r.status == "refuted" and r.counterexample.assignment["N"] != 1
    C = complement(Layout(4, 2), 8 * K)
    assert postcondition("complement", C, Layout(4, 2), 8 * K).status == "proved"
    r = postcondition("complement", Layout((2, K), (1, 4)), Layout(4, 2), 8 * K)
    assert r.status == "refuted" and "injective" in str(r.counterexample)
    assert postcondition("coalesce", Layout(M * N, 1), Layout((M, N), (1, M))).status == "proved"
    assert postcondition("left_inverse", lp.left_inverse(A), A).status == "proved"
    assert postcondition("right_inverse", Layout((N, M), (M, 1)), A).status == "proved"
    r = postcondition("right_inverse", Layout((N, M), (1, N)), A)
    assert r.status == "refuted" and r.counterexample.assignment


def test_postcondition_symbolic_bounded_fallback():
    r = postcondition("filter", Layout(M * N, 1), Layout((M, N), (1, M)), bounds=6)
    assert r.status == "checked" and r.bounds == {"M": (1, 6), "N": (1, 6)} and r.cases == 36
    assert any("bounded" in n for n in r.notes)
    r = postcondition("filter", Layout(M * N, 2), Layout((M, N), (1, M)), bounds=6)
    assert r.status == "refuted" and r.method == "bounded" and r.counterexample.assignment == {"M": 1, "N": 2}
    r = postcondition("filter", Layout(M * N, 1), Layout((M, N), (1, M)), bounds=False)
    assert r.status == "unknown"


# ----------------------------------------------------------------------------- SMT-LIB
def test_to_smtlib(tmp_path):
    r = postcondition("composition", Layout(4, N), Layout((M, N), (N, 1)), Layout(4, 1), assume="M % 4 == 0")
    assert r.method == "z3" and r.obligations
    path = tmp_path / "ob.smt2"
    text = to_smtlib(r, str(path))
    assert path.read_text() == text
    assert "(set-logic ALL)" in text and "(check-sat)" in text and "(declare-fun M () Int)" in text
    assert to_smtlib(r.obligations[0]) == to_smtlib(r)
    assert to_smtlib(r.obligations[0].obligation).startswith("(set-logic ALL)")
    two = postcondition("complement", complement(Layout(4, 2), 8 * K), Layout(4, 2), 8 * K)
    assert to_smtlib(two).count("(reset)") == len(two.obligations) - 1
    with pytest.raises(LayoutError):
        to_smtlib(equal(Layout(4, 1), Layout(4, 1)))
    with pytest.raises(LayoutError):
        to_smtlib("not an obligation")


# ----------------------------------------------------------------------------- notation with symbols
def test_notation_symbolic_leaves_round_trip():
    with assuming("M % 64 == 0", "N % 32 == 0"):
        for L in (
            logical_divide(Layout((M, N), (1, M)), (64, 32)),
            zipped_divide(Layout((M, N), (1, M)), (64, 32)),
            Layout((M, 2 * N + 1, M**2), (N * (M + 1), -M, 1)),
            complement(Layout(4, 2), 8 * K),
        ):
            assert Layout.parse(str(L)) == L, str(L)
    assert Layout.parse("(M,N):(1,M)") == Layout((M, N), (1, M))
    assert Layout.parse("8*K:1") == Layout(8 * K, 1)
    assert Layout.parse("(2*M+1):(-M)") == Layout((2 * M + 1,), (-M,))
    assert Layout.parse("(M + 1)*N:1") == Layout((M + 1) * N, 1)
    assert Layout.parse("-M**2+2*M**2:3") == Layout(M**2, 3)
    assert Layout.parse("(_4,_2):(_1,_4)") == Layout((4, 2), (1, 4))
    assert Layout.parse("(2*3,8/4):(1,6)") == Layout((6, 2), (1, 6))


@pytest.mark.parametrize(
    "text", ["garbage", "a:b", "None", "_", "M(3)", "(4,2):(1,M", "3/2:1", "M/0:1", "M**M:1", "(M,):(1,)x"]
)
def test_notation_rejects(text):
    with pytest.raises(MalformedLayoutError):
        Layout.parse(text)


def test_notation_eval_language_with_symbols():
    from layoutproof.cli import eval_names
    from layoutproof.notation import evaluate, parse_call, symbol_names

    names = eval_names()
    with assuming("M % 4 == 0"):
        assert evaluate("composition((M,N):(N,1), 4:1)", names) == Layout(4, N)
    assert evaluate("composition((M,N):(N,1), 4:1)", names, {"M": 8, "N": 3}) == Layout(4, 3)
    assert evaluate("size((M,N):(1,M))*2 + 1", names) == 2 * M * N + 1
    assert symbol_names("logical_divide((M,N):(1,M), (BLK_M, 32))", names) == ["M", "N", "BLK_M"]
    fn, args = parse_call("complement(4:2, 8*K)", names)
    assert fn is lp.complement and args == [Layout(4, 2), 8 * K]
    with pytest.raises(MalformedLayoutError):
        evaluate("nosuchfunction(8:1)", names)
    with pytest.raises(MalformedLayoutError):
        evaluate("composition(8:1, 4:1)*2", names)


def test_integer_notation_does_not_import_sympy():
    code = (
        "import sys, layoutproof as lp; L = lp.Layout.parse('(4,(2,2)):(2,(1,8))'); "
        "from layoutproof.notation import evaluate; from layoutproof.cli import eval_names; "
        "evaluate('composition((4,2):(1,4), 8:1)', eval_names()); print('sympy' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    r = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


# ----------------------------------------------------------------------------- the check command
def _check(capsys, *argv):
    from layoutproof.cli import main

    code = main(["check", *argv])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_check_command_verdicts_and_exit_status(capsys):
    code, out, _ = _check(capsys, "coalesce((M,N):(1,M)) == M*N:1")
    assert code == 0 and out.startswith("proved (")
    code, out, _ = _check(capsys, "composition((M,N):(N,1), 4:1) == 4:N", "--assume", "M % 4 == 0")
    assert code == 0 and out.startswith("proved") and "assuming: M % 4 == 0" in out
    code, out, _ = _check(capsys, "(M,2):(2,1) == 2*M:1")
    assert code == 1 and out.startswith("refuted (z3") and "coordinate 1 = (1,0): 2 != 1" in out
    assert "assignment: M = 2" in out
    code, out, _ = _check(capsys, "composition((6,2):(1,7), (3,2):(2,3)) == (3,2):(2,3)")
    assert code == 1 and "disjointness" in out and "coordinate 5" in out
    claim = "(2,3*M,N):(1,2,6*M) == (3,2*M,N):(1,3,6*M)"  # Z3 cannot settle it in time
    code, out, _ = _check(capsys, claim, "--bound", "5", "--timeout", "100")
    assert code == 0 and out.startswith("checked (bounded") and "1 <= M <= 5" in out
    code, out, _ = _check(capsys, "admissible composition((M,N):(N,1), 4:1)")
    assert code == 3 and out.startswith("unknown") and "condition: (4 <= M) or (4 % M == 0)" in out
    code, out, _ = _check(capsys, "admissible composition((M,N):(N,1), 4:1)", "--bound", "8")
    assert code == 1 and "assignment: M = 3" in out
    code, out, _ = _check(capsys, "admissible complement((2,2):(1,3), 16)")
    assert code == 1 and "complement admissibility" in out
    code, out, _ = _check(capsys, "admissible complement(4:2, 8*K)")
    assert code == 0 and out.startswith("proved")


def test_check_command_errors_exit_2(capsys):
    for argv in (
        ["bogus"],
        ["(4,2):(1,4 == 8:1"],
        ["8:1 == 8:1 == 8:1"],
        ["x == 8:1"],
        ["8:1 == 8:1", "--assume", "M %% 8"],
        ["8:1 == 8:1", "--timeout", "0"],
    ):
        try:
            code, _out, err = _check(capsys, *argv)
        except SystemExit as e:  # argparse's own usage errors
            code, err = e.code, capsys.readouterr().err
        assert code == 2, argv
        assert "Traceback" not in err


def test_check_command_json_and_smtlib(capsys, tmp_path):
    path = tmp_path / "out.smt2"
    code, out, _ = _check(capsys, "(M,N):(1,M) == (M,N):(N,1)", "--json", "--smtlib", str(path))
    data = json.loads(out)
    assert code == 1 and data["status"] == "refuted" and data["counterexample"]["assignment"]
    assert "(check-sat)" in path.read_text()


# ----------------------------------------------------------------------------- docstring examples
VERIFY_MODULES = ["layoutproof.verify"] + sorted(
    m.name for m in pkgutil.walk_packages(verify.__path__, "layoutproof.verify.")
)


@pytest.mark.parametrize("name", VERIFY_MODULES)
def test_verify_docstring_examples(name):
    """tests/test_doctests.py walks layoutproof's own folder; the verify sub-package lives in
    another folder, so its examples run here."""
    mod = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL
    res = doctest.testmod(mod, optionflags=flags, verbose=False)
    assert res.failed == 0, f"{res.failed} docstring example(s) failed in {name}"


def test_public_api():
    for name in verify.__all__:
        assert getattr(verify, name) is not None
    assert set(verify.OPERATIONS) >= {
        "coalesce",
        "composition",
        "complement",
        "right_inverse",
        "left_inverse",
        "logical_divide",
        "zipped_divide",
        "tiled_divide",
        "flat_divide",
        "logical_product",
        "zipped_product",
        "tiled_product",
        "flat_product",
        "blocked_product",
        "raked_product",
        "tile_to_shape",
    }
    assert callable(cross_check)
