"""Symbolic layouts: the issue's examples, soundness against substitution, the decision
procedure, and the errors that name the condition to assume."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from conftest import examples, layouts
from hypothesis import given, settings
from hypothesis import strategies as st

import layoutproof as lp
from layoutproof import (
    InadmissibleError,
    Layout,
    LayoutError,
    MalformedLayoutError,
    OutOfDomainError,
    UndecidableConditionError,
    assuming,
    complement,
    composition,
    logical_divide,
    ops,
    symbols,
    zipped_divide,
)
from layoutproof.inttuple import flatten, unflatten
from layoutproof.symbolic import decide, get_timeout, parse_expr, pretty, set_timeout, symops

M, N, K = symbols("M N K")


def same_function(X: Layout, Y: Layout) -> bool:
    return X.size == Y.size and np.array_equal(X.eval_all(), Y.eval_all())


def same_modes(X: Layout, Y: Layout) -> bool:
    """Same rank and the same size in every top-level mode (agreement up to coalescing
    inside the modes, which depends on whether two symbolic products are equal)."""
    return X.rank == Y.rank and all(x.size == y.size for x, y in zip(X, Y))


def agrees(X: Layout, Y: Layout) -> bool:
    return same_function(X, Y) and same_modes(X, Y)


# ----------------------------------------------------------------------------- the examples
def test_composition_of_a_symbolic_matrix_with_a_static_tile():
    with assuming("M % 4 == 0"):
        assert composition(Layout((M, N), (1, M)), Layout(4, 1)) == Layout(4, 1)
        assert composition(Layout((M, N), (N, 1)), Layout(4, 1)) == Layout(4, N)
        assert composition(Layout((M, N), (N, 1)), Layout((2, 2), (2, 1))) == Layout((2, 2), (2 * N, N))


def test_logical_divide_in_terms_of_m_and_n():
    with assuming("M % 64 == 0", "N % 32 == 0"):
        R = logical_divide(Layout((M, N), (1, M)), (64, 32))
    assert R.shape == ((64, M / 64), (32, N / 32))
    assert R.stride == ((1, 64), (M, 32 * M))
    assert sp.simplify(R.size - M * N) == 0
    for m, n in [(64, 32), (128, 96), (192, 64)]:
        C = logical_divide(Layout((m, n), (1, m)), (64, 32))
        assert agrees(R.subs(M=m, N=n), C)
    assert R.subs(M=128, N=96) == logical_divide(Layout((128, 96), (1, 128)), (64, 32))


def test_complement_with_a_symbolic_cotarget():
    assert complement(Layout(4, 2), 8 * K) == Layout((2, K), (1, 8))
    for k in (1, 2, 5):
        assert same_function(complement(Layout(4, 2), 8 * K).subs(K=k), complement(Layout(4, 2), 8 * k))


def test_zipped_divide_of_a_symbolic_matrix_by_a_static_tile():
    with assuming("M % 128 == 0", "N % 64 == 0"):
        Z = zipped_divide(Layout((M, N), (N, 1)), (128, 64))  # row-major (M,N) by a 128x64 tile
    assert Z.shape == ((128, 64), (M / 128, N / 64))
    assert Z.stride == ((N, 1), (128 * N, 64))
    for m, n in [(128, 64), (256, 192)]:
        concrete = zipped_divide(Layout((m, n), (n, 1)), (128, 64))
        assert agrees(Z.subs(M=m, N=n), concrete)
        # every element of the matrix exactly once
        assert sorted(concrete.eval_all().tolist()) == list(range(m * n))


def test_an_undecidable_condition_is_named():
    with pytest.raises(UndecidableConditionError) as ei:
        composition(Layout((M, N), (N, 1)), Layout(4, 1))
    e = ei.value
    assert e.condition == "(4 <= M) or (4 % M == 0)"
    assert parse_expr(e.condition) == e.expr  # the condition reads back as the SymPy condition
    assert "shape divisibility" in str(e)
    assert e.counterexample == {"M": 3}  # the smallest M violating it
    # stating the condition that the message suggests makes it decidable
    with assuming(parse_expr("4 <= M")):
        assert composition(Layout((M, N), (N, 1)), Layout(4, 1)) == Layout(4, N)


def test_stride_divisibility_needs_an_assumption():
    with pytest.raises(UndecidableConditionError) as ei:
        composition(Layout((M, N), (N, 1)), Layout(4, 2))
    assert "stride divisibility" in str(ei.value)
    with assuming("M % 8 == 0"):
        assert composition(Layout((M, N), (N, 1)), Layout(4, 2)) == Layout(4, 2 * N)


def test_contradicted_condition_gives_an_assignment_and_a_witness():
    # Shah's composition with a symbolic extent: disjointness fails when M = 3
    with assuming("M == 3"):
        with pytest.raises(InadmissibleError) as ei:
            composition(Layout((2 * M, 2), (1, 7)), Layout((3, 2), (2, 3)))
    e = ei.value
    assert e.condition == "disjointness of B's modes in A"
    assert e.assignment == {"M": 3}
    assert e.witness == 5  # the coordinate found by the integer algebra at M = 3
    with pytest.raises(InadmissibleError):
        composition(Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3)))


def test_complement_stride_chain_refuted_with_assignment():
    with assuming("M == 3"):
        with pytest.raises(InadmissibleError) as ei:
            complement(Layout((2, 2), (1, M)), 16)
    assert ei.value.condition == "complement admissibility (stride chain)"
    assert ei.value.assignment == {"M": 3}


def test_complement_needs_to_know_ignored_modes():
    with pytest.raises(UndecidableConditionError) as ei:
        complement(Layout(M, 3), 64)  # at M = 1 the answer is 64:1, a different function
    assert ei.value.condition == "M >= 2"
    C = complement(Layout(M, 2), 64)  # both branches give the same function: no question
    for m in range(1, 9):
        assert lp.verify.equal(C.subs(M=m), lp.complement(Layout(m, 2), 64)).proved
    with assuming(M >= 2, "64 % (2*M) == 0"):
        assert complement(Layout(M, 2), 128 * M) == Layout((2, 64), (1, 2 * M))


def test_products_and_inverses_symbolic():
    with assuming(M >= 2):
        P = lp.logical_product(Layout(M, 1), Layout(4, 1))
        assert P == Layout((M, 4), (1, M))
        assert lp.right_inverse(Layout((M, 4), (4, 1))) == Layout((4, M), (M, 1))
        assert lp.left_inverse(Layout((M, 4), (4, 1))) == Layout((4, M), (M, 1))
        B = lp.blocked_product(Layout((M, 2), (1, M)), Layout((2, 3), (1, 2)))
        for m in (2, 3, 8):
            assert B.subs(M=m) == lp.blocked_product(Layout((m, 2), (1, m)), Layout((2, 3), (1, 2)))


def test_tile_to_shape_symbolic_target():
    with assuming("M % 8 == 0"):
        R = lp.tile_to_shape(Layout((8, 4), (4, 1)), (M, 4))
    for m in (8, 24):
        assert same_function(R.subs(M=m), lp.tile_to_shape(Layout((8, 4), (4, 1)), (m, 4)))
    with pytest.raises(UndecidableConditionError):
        lp.tile_to_shape(Layout((8, 4), (4, 1)), (M, 4))


def test_compatible_symbolic():
    assert lp.compatible((M, N), ((M,), (N,))) is True
    assert lp.compatible(M * N, (M, N)) is True
    with assuming("M == 4"):
        assert lp.compatible((4, N), (M, N)) is True
    with pytest.raises(UndecidableConditionError):
        lp.compatible((4, N), (M, N))


# ----------------------------------------------------------------------------- expr, subs, evaluation
def test_expr_and_subs():
    L = Layout((4, M), (M, 1))
    i = sp.Symbol("i", integer=True, nonnegative=True)
    assert L.expr() == M * sp.Mod(i, 4) + sp.floor(i / 4)
    with assuming(M >= 3):
        assert L.expr((1, 2)) == M + 2
        assert L(1, 2) == M + 2
    with pytest.raises(UndecidableConditionError, match="2 < M"):
        L(1, 2)  # (1, 2) is in the domain only when M > 2
    assert L.subs(M=3) == Layout((4, 3), (3, 1))
    assert L.subs({M: 3}) == L.subs(M=3)
    assert L.free_symbols == {M}
    assert L.is_symbolic and not L.subs(M=3).is_symbolic
    assert type(L.subs(M=3).shape[1]) is int
    with assuming(M >= 2):
        assert str(L(None, 1)) == "(4):(M)"
    with pytest.raises(MalformedLayoutError):
        L.subs(M="x")
    with pytest.raises(MalformedLayoutError):  # extent 0 after substitution
        L.subs(M=0)


@settings(max_examples=examples(120))
@given(layouts(max_size=256))
def test_expr_is_the_layout_function(L):
    e = L.expr()
    i = sp.Symbol("i", integer=True, nonnegative=True)
    vals = L.eval_all()
    for j in sorted({0, 1, L.size - 1, L.size // 2, L.size // 3} & set(range(L.size))):
        assert int(e.subs(i, j)) == int(vals[j])


def test_evaluation_domain_is_decided():
    L = Layout((4, M), (M, 1))
    with pytest.raises(UndecidableConditionError, match="5 < 4[*]M"):
        L(5)  # 5 = (1, 1) is in the domain only when M >= 2
    with assuming(M >= 2):
        assert L(5) == M + 1
    with assuming(M <= 1):
        with pytest.raises(OutOfDomainError):
            L(5)
    with pytest.raises(OutOfDomainError):
        Layout((4, M), (M, 1))(-1)


def test_construction_validates_symbolic_leaves():
    with pytest.raises(UndecidableConditionError) as ei:
        Layout(M - 4, 1)
    assert ei.value.condition == "M - 4 >= 1"
    with assuming(M >= 5):
        assert Layout(M - 4, 1).size == M - 4
    with assuming(M <= 4):
        with pytest.raises(MalformedLayoutError):
            Layout(M - 4, 1)
    with pytest.raises(MalformedLayoutError):
        Layout(sp.Rational(1, 2), 1)
    with pytest.raises(MalformedLayoutError):
        Layout(sp.Symbol("x"), 1)  # not declared integer
    with pytest.raises(UndecidableConditionError):
        Layout(M / 2, 1)
    with assuming("M % 2 == 0"):
        assert Layout(M / 2, 1).size == M / 2
    assert Layout(sp.Integer(4), sp.Integer(2)) == Layout(4, 2)
    assert type(Layout(sp.Integer(4), 1).shape) is int


# ----------------------------------------------------------------------------- decisions
def test_decide_methods_and_counterexamples():
    assert decide(M >= 1).value is True and decide(M >= 1).method == "sympy"
    d = decide(M >= 2)
    assert d.value is None and d.counterexample == {"M": 1}
    with assuming("M % 8 == 0"):
        assert decide("M % 4 == 0").value is True
        assert decide("M % 4 == 0").method == "residues"  # periodic in M: every residue
        r = decide("M % 8 == 3")
        assert r.value is False and r.counterexample["M"] % 8 == 0
    with assuming("M % 8 == 0", N >= 16):
        assert decide(M * N >= 128).value is True


def test_contradictory_assumptions_are_refused():
    with assuming("M % 2 == 0", "M % 2 == 1"):
        with pytest.raises(LayoutError, match="contradict"):
            decide("M % 3 == 0")


def test_python_false_is_refused_with_the_reason():
    with pytest.raises(MalformedLayoutError, match="structural"):
        with assuming(M % 8 == 0):  # Python evaluates this to False
            pass


def test_timeout_gives_unknown_never_proved():
    old = get_timeout()
    try:
        set_timeout(1)
        # a hard nonlinear claim (no small counterexample; not provable quickly)
        d = decide("M*M*M + N*N*N != K*K*K + 7*M*N*K + 1")
        assert d.value is not True
        assert d.value is None
        assert d.reason
    finally:
        set_timeout(old)
    with pytest.raises(MalformedLayoutError):
        set_timeout(0)


def test_parse_expr_is_safe_and_faithful():
    for bad in ["__import__('os')", "M.__class__", "lambda: 1", "M if N else K", "1.5 * M", "M ** M"]:
        with pytest.raises(MalformedLayoutError):
            parse_expr(bad)
    c = parse_expr("M % 8 == 0 and N >= 16 or not K < 3")
    assert decide(c, facts=("M == 8", "N == 16")).value is True
    assert pretty(parse_expr("M // 4 + 1 < N")) == "floor(M/4) + 1 < N"


# ----------------------------------------------------------------------------- soundness against substitution
_OPS = ["composition", "logical_divide", "complement", "logical_product", "zipped_divide"]


@st.composite
def symbolic_cases(draw):
    """A concrete layout with one shape leaf replaced by ``q*M`` under ``M % p == 0``, a
    second operand, an operation."""
    A = draw(layouts(max_size=64, kind="mixed"))
    fs = list(flatten(A.shape))
    k = draw(st.integers(0, len(fs) - 1))
    q = draw(st.sampled_from([1, 2, 4]))
    p = draw(st.sampled_from([1, 2, 4, 8]))
    fs[k] = q * M
    shape = unflatten(tuple(fs), A.shape) if isinstance(A.shape, tuple) else fs[0]
    As = Layout(shape, A.stride)
    B = draw(layouts(max_size=16, kind="mixed"))
    op = draw(st.sampled_from(_OPS))
    return As, B, op, p


def _run(op, A, B, m):
    if op == "complement":
        return complement(A, 64 * m)
    if op == "zipped_divide":
        return zipped_divide(A, B)
    return getattr(lp, op)(A, B)


@settings(max_examples=examples(250))
@given(symbolic_cases())
def test_symbolic_result_agrees_with_every_substitution(case):
    """Whatever the symbolic algebra returns under ``M % p == 0`` is, after substituting
    any such M, the integer algebra's result (same function, same non-unit extents); what
    it refutes, the integer algebra refutes at the assignment given."""
    As, B, op, p = case
    try:
        with assuming(f"M % {p} == 0"):
            R = _run(op, As, B, M)
    except UndecidableConditionError as e:
        assert e.condition
        return
    except InadmissibleError as e:
        asg = getattr(e, "assignment", None)
        if asg:
            assert asg["M"] % p == 0
            with pytest.raises(InadmissibleError):
                _run(op, As.subs(asg), B, asg["M"])
        return
    for m in (p, 2 * p, 3 * p, 5 * p):
        C = _run(op, As.subs(M=m), B, m)
        ok = same_function if op == "complement" else agrees  # a complement's modes are its own
        assert ok(R.subs(M=m), C), (op, As, B, m, R, C)


@settings(max_examples=examples(300))
@given(layouts(max_size=128, kind="mixed"), layouts(max_size=32, kind="mixed"))
def test_symbolic_routines_agree_with_the_integer_routines(A, B):
    """symops on integer layouts: identical to ops whenever it answers (it refuses only
    where ops decides a failed CuTe condition by evaluation)."""
    for f, g in [
        (ops.composition, symops.composition),
        (lambda x, y: ops.complement(x, 256), lambda x, y: symops.complement(x, 256)),
        (lambda x, y: ops.right_inverse(x), lambda x, y: symops.right_inverse(x)),
        (lambda x, y: ops.left_inverse(x), lambda x, y: symops.left_inverse(x)),
        (lambda x, y: ops.coalesce(x), lambda x, y: symops.coalesce(x)),
    ]:
        try:
            r1 = f(A, B)
        except LayoutError as e:
            r1 = e
        try:
            r2 = g(A, B)
        except (InadmissibleError, UndecidableConditionError):
            continue
        assert not isinstance(r1, Exception), (A, B, r2, r1)
        assert r1 == r2


def test_symbolic_algebra_raises_only_layout_errors():
    bad = [sp.Symbol("x"), sp.Rational(3, 2), M - 100, sp.sqrt(M), sp.oo, sp.nan, sp.I]
    calls = [
        lambda b: Layout(b, 1),
        lambda b: Layout(4, b),
        lambda b: complement(Layout(4, 1), b),
        lambda b: composition(Layout(8, 1), b),
        lambda b: logical_divide(Layout(M, 1), b),
    ]
    for b in bad:
        for fn in calls:
            try:
                fn(b)
            except LayoutError:
                pass


SYMBOLIC_ARGS = [
    M,
    2 * M,
    M - 1,
    M * N,
    (M, 4),
    (4, (M, 2)),
    Layout((M, N), (1, M)),
    Layout((4, M), (M, 1)),
    Layout(M, 2),
    Layout((M, 2), (2, 1)),
    Layout(8 * M, 1),
    Layout((2, M), (N, 1)),
]


def test_fuzz_public_api_with_symbolic_arguments():
    """Every public callable, given symbolic layouts, shapes and leaves among other values,
    raises nothing but LayoutErrors (operations that work on integers only say so)."""
    import random

    from test_errors_fuzz import ARITIES, ATOMS, CALLABLES

    rng = random.Random(7)
    names = sorted(CALLABLES)
    escapes = {}
    for _i in range(3000):
        name = rng.choice(names)
        lo, hi = ARITIES[name]
        args = [
            rng.choice(SYMBOLIC_ARGS) if rng.random() < 0.6 else rng.choice(ATOMS)
            for _j in range(rng.randint(lo, hi))
        ]
        try:
            with assuming(M >= 2):
                r = CALLABLES[name](*args)
                if isinstance(r, Layout):
                    str(r), repr(r), hash(r)
                    if not r.is_symbolic and r.size <= 100_000:
                        r.eval_all()
        except LayoutError:
            pass
        except Exception as e:  # noqa: BLE001 - that is the point of the fuzz
            escapes.setdefault((name, type(e).__name__), f"{name}{tuple(args)!r:.200}: {e!s:.100}")
    assert not escapes, "non-LayoutError escapes:\n" + "\n".join(sorted(escapes.values()))


def test_integer_only_operations_say_so():
    with pytest.raises(MalformedLayoutError, match="integer layouts"):
        lp.max_common_vector(Layout((M, N), (1, M)), Layout(8, 1))
    with pytest.raises(MalformedLayoutError, match="symbolic"):
        Layout((M, N), (1, M)).eval_all()
    assert "M" in Layout((M, N), (1, M))._repr_html_()
    assert Layout((M, N), (1, M))._repr_svg_() is None
