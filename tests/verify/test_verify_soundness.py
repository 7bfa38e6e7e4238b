"""The soundness contract of verify and of the symbolic algebra.

* proved: holds for every value in scope -- and survives a falsification pass on random
  admissible assignments;
* refuted / InadmissibleError on symbolic input: carries a concrete assignment that the
  concrete path confirms;
* otherwise unknown / UndecidableConditionError with the condition;
* bad input: a LayoutError subclass naming what is wrong (also under ``python -O``).
"""

from __future__ import annotations

import random
import subprocess
import sys
from fractions import Fraction

import numpy as np
import pytest

from layoutproof import (
    InadmissibleError,
    Layout,
    LayoutError,
    MalformedLayoutError,
    UndecidableConditionError,
    assuming,
    complement,
    composition,
    left_inverse,
    ops,
    right_inverse,
    symbols,
    verify,
)
from layoutproof.symbolic import condition, decide, require

M, N = symbols("M N")


def _nest(x, k):
    for _ in range(k):
        x = (x,)
    return x


# ----------------------------------------------------------------------------- values that are not offsets
@pytest.mark.parametrize("bad", [0.25, 3.0, "7", None, Fraction(1, 2), 2.5 + 0j])
def test_a_function_with_non_integer_values_is_never_proved(bad):
    L = Layout(9, 8)
    with pytest.raises(MalformedLayoutError, match="coordinate"):
        verify.equal(verify.function(lambda i: bad if i == 4 else L(i), 9), L)


def test_a_function_with_float_offsets_is_refused_not_truncated():
    L = Layout(9, 8)
    with pytest.raises(MalformedLayoutError, match="0.25"):
        verify.equal(verify.function(lambda i: L(i) + 0.25, 9), L)


def test_numpy_and_sympy_integers_are_offsets():
    import sympy as sp

    L = Layout(9, 8)
    assert verify.equal(verify.function(lambda i: np.int64(L(i)), 9), L).status == "proved"
    assert verify.equal(verify.function(lambda i: sp.Integer(L(i)), 9), L).status == "proved"


# ----------------------------------------------------------------------------- refutations are confirmed
def test_a_sufficient_condition_is_not_a_refutation():
    r = verify.identity(
        lambda M: composition(Layout((3, M), (M, 1)), Layout(2, 2)), lambda M: Layout(2, 2 * M)
    )
    assert r.status != "refuted", r
    # 2 does not divide 3, yet both points of 2:2 stay inside A's mode 0: exact
    assert composition(Layout((3, M), (M, 1)), Layout(2, 2)) == Layout(2, 2 * M)
    for m in range(1, 9):
        assert verify.equal(composition(Layout((3, m), (m, 1)), Layout(2, 2)), Layout(2, 2 * m)).proved


def test_an_unconfirmed_inadmissible_error_is_undecidable():
    with assuming("M % 8 == 0"):
        try:
            R = left_inverse(Layout((4 * M, N), (M, 8 * M)))
        except InadmissibleError as e:  # only with an assignment the concrete algebra confirms
            asg = e.assignment
            assert asg and {"M", "N"} <= set(asg)
            with pytest.raises(InadmissibleError):
                ops.left_inverse(Layout((4 * asg["M"], asg["N"]), (asg["M"], 8 * asg["M"])))
        except UndecidableConditionError as e:
            assert e.condition
        else:
            for m, n in [(8, 1), (8, 2), (16, 3)]:
                L = Layout((4 * m, n), (m, 8 * m))
                assert verify.postcondition("left_inverse", R.subs(M=m, N=n), L).status == "proved"


def test_require_never_trusts_the_solver_alone(monkeypatch):
    """A refutation whose assignment does not violate the condition (a solver or
    translation error) becomes undecidable."""
    from layoutproof.symbolic import Decision, smt

    def lying(claim, facts, timeout_ms):
        return Decision(False, "z3", counterexample={"M": 8}, cond=claim, facts=facts)

    from layoutproof import symbolic

    monkeypatch.setattr(smt, "decide_z3", lying)
    monkeypatch.setattr(symbolic, "_CACHE", {})
    with assuming("M % 8 == 0"):
        with pytest.raises(UndecidableConditionError):
            require("M % 4 == 0 and M >= 3", op="test", condition_name="a condition true at M = 8")


def test_falsification_pass_catches_a_wrong_proof(monkeypatch):
    from layoutproof.symbolic.solver import Verdict
    from layoutproof.verify import _run

    def always(purpose, claim, facts, timeout_ms):
        return Verdict("proved", purpose), None

    monkeypatch.setattr(_run, "prove", always)
    r = verify.equal(Layout((M, 2), (2, 1)), Layout(2 * M, 1))
    assert r.status == "refuted" and r.counterexample.assignment, r
    m = r.counterexample.assignment["M"]
    assert verify.equal(Layout((m, 2), (2, 1)), Layout(2 * m, 1)).status == "refuted"


def test_falsification_pass_on_a_domain_too_large_to_evaluate(monkeypatch):
    from layoutproof.symbolic.solver import Verdict
    from layoutproof.verify import _run

    monkeypatch.setattr(
        _run, "prove", lambda purpose, claim, facts, timeout_ms: (Verdict("proved", purpose), None)
    )
    n = 2**40
    r = verify.equal(Layout((n, 4), (1, n)), Layout((n, 4), (1, n + 1)))
    assert r.status == "refuted", r
    k = r.counterexample.coordinate
    assert Layout((n, 4), (1, n))(k) != Layout((n, 4), (1, n + 1))(k)


def test_left_inverse_postcondition_with_an_identity_inverse():
    L = Layout((4, M, N), (1, 4, 4 * M))
    assert verify.postcondition("left_inverse", left_inverse(L), L).proved
    r = verify.postcondition("left_inverse", Layout(4 * M * N, 1), Layout((4, M, N), (1, 4, 8 * M)))
    assert r.refuted and r.counterexample.assignment
    a = r.counterexample.assignment
    L2 = Layout((4, a["M"], a["N"]), (1, 4, 8 * a["M"]))
    assert verify.postcondition("left_inverse", Layout(4 * a["M"] * a["N"], 1), L2).refuted


def test_structural_refutations_carry_a_confirmed_assignment():
    r = verify.equal(Layout((M, N), (1, M)), Layout((M, N), (N, 1)))
    assert r.status == "refuted"
    a = r.counterexample.assignment
    assert verify.equal(Layout((a["M"], a["N"]), (1, a["M"])), Layout((a["M"], a["N"]), (a["N"], 1))).refuted


def test_exact_division_in_assumptions():
    """``M / 2 >= 3`` means M >= 6 (not: M even and M >= 6)."""
    assert decide("M % 2 == 0", facts=("M/2 >= 3",)).value is not True
    assert decide("M >= 6", facts=("M/2 >= 3",)).value is True
    assert decide("M == 6", facts=("M/2 == 3",)).value is True


def test_a_quotient_by_a_symbol_of_unknown_sign_is_exact():
    import sympy as sp

    b = sp.Symbol("b", integer=True)
    assert decide(sp.Le(3, M / b), facts=(sp.Eq(b, 2), sp.Eq(M, 6))).value is True
    assert decide(sp.Le(3, M / b), facts=(sp.Eq(b, -2), sp.Eq(M, 6))).value is False
    assert decide(sp.Le(-3, M / b), facts=(sp.Eq(b, -2), sp.Eq(M, 6))).value is True
    assert decide(sp.Eq(M / b, 3), facts=(sp.Eq(b, 2), sp.Eq(M, 6))).value is True


def test_a_quotient_inside_mod_is_not_rounded():
    """``(M/2) % 4 == 0`` is false at M = 9 (4.5 % 4 != 0); the solver's integer division
    would round it to 4 % 4 == 0: such a condition is refused, floor() is explicit."""
    with pytest.raises(MalformedLayoutError, match="floor"):
        condition("M/2 % 4 == 0")
    assert decide("floor(M/2) % 4 == 0", facts=("M == 9",)).value is True


# ----------------------------------------------------------------------------- the random referee
_LEAVES = [1, 2, 3, 4, 8, M, 2 * M, 4 * M, N, 2 * N]


def _random_layout(rng):
    r = rng.randint(1, 3)
    sh = tuple(rng.choice(_LEAVES) for _ in range(r))
    st = tuple(rng.choice([0, 1, 2, 4, 8, M, 2 * M, N, M * N]) for _ in range(r))
    return Layout(sh, st)


def _assignments(rng, k=3):
    return [{"M": m, "N": n} for m, n in [(rng.choice([4, 8, 16]), rng.choice([1, 2, 4])) for _ in range(k)]]


@pytest.mark.parametrize("seed", range(3))
def test_symbolic_operations_against_the_concrete_referee(seed):
    """Random symbolic operands under ``M % 4 == 0``: a result is the concrete result (as a
    function) at several assignments; an InadmissibleError carries an assignment at which
    the concrete operation is inadmissible too."""
    rng = random.Random(seed)
    cases = 0
    for _ in range(40):
        A, B = _random_layout(rng), _random_layout(rng)
        op = rng.choice(["composition", "complement", "left_inverse", "right_inverse"])
        fn = {
            "composition": composition,
            "complement": complement,
            "left_inverse": left_inverse,
            "right_inverse": right_inverse,
        }[op]
        cfn = getattr(ops, op)
        args = (A, B) if op == "composition" else (A,)
        try:
            with assuming("M % 4 == 0"):
                R = fn(*args)
        except InadmissibleError as e:
            asg = getattr(e, "assignment", None)
            assert asg, (op, args, e)
            with pytest.raises(InadmissibleError):
                cfn(*[a.subs(asg) for a in args])
            cases += 1
            continue
        except UndecidableConditionError as e:
            assert e.condition
            continue
        except LayoutError:
            continue
        for asg in _assignments(rng):
            try:
                C = cfn(*[a.subs(asg) for a in args])
            except LayoutError:
                continue
            got = R.subs(asg)
            if op == "complement":  # its own post-condition: (L, C) a bijection onto the range
                assert verify.postcondition("complement", got, args[0].subs(asg)).status == "proved"
            else:
                assert got.size == C.size and verify.equal(got, C).proved, (op, args, asg, got, C)
        cases += 1
    assert cases > 10


@pytest.mark.parametrize("seed", range(2))
def test_verify_equal_against_the_concrete_referee(seed):
    rng = random.Random(100 + seed)
    for _ in range(15):
        A, B = _random_layout(rng), _random_layout(rng)
        r = verify.equal(A, B, timeout_ms=500, deadline=5.0)
        if r.status == "refuted":
            a = r.counterexample.assignment
            if a:
                assert verify.equal(A.subs(a), B.subs(a)).refuted, (A, B, a)
        elif r.status == "proved":
            for asg in _assignments(rng):
                assert verify.equal(A.subs(asg), B.subs(asg)).proved, (A, B, asg)


# ----------------------------------------------------------------------------- one answer for both branches
def test_complement_does_not_ask_what_does_not_matter():
    assert complement(Layout(N, 1)) == Layout(1, 0)
    C = complement(Layout(N, 1), 4 * N)
    for n in range(1, 6):
        assert verify.equal(C.subs(N=n), ops.complement(Layout(n, 1), 4 * n)).proved


def test_left_inverse_asks_whether_an_extent_is_one():
    """At M = 1 the concrete left_inverse(1:2) is 1:0 (size 1): the symbolic one may not
    return a size-2M layout there (semantics: the sizes agree with the integer result)."""
    with pytest.raises(UndecidableConditionError) as e:
        left_inverse(Layout(M, 2))
    assert e.value.condition == "M >= 2"
    with assuming("M >= 2"):
        R = left_inverse(Layout(M, 2))
    for m in range(2, 6):
        C = ops.left_inverse(Layout(m, 2))
        assert R.subs(M=m).size == C.size and verify.equal(R.subs(M=m), C).proved


def test_either_branch_for_composite_operations():
    """logical_product's complement differs between M >= 2 and M = 1, its result does not."""
    from layoutproof import logical_product
    from layoutproof.symbolic import symops

    A, B = Layout(M, M * N), Layout(M, 1)
    R = symops.either_branch(ops.logical_product, A, B)
    for m, n in [(1, 1), (1, 3), (2, 2), (3, 1)]:
        C = logical_product(A.subs(M=m, N=n), B.subs(M=m))
        got = R.subs(M=m, N=n)
        assert verify.equal(got, C).proved
        assert [Layout(s).size for s in got.shape] == [Layout(s).size for s in C.shape]


def test_a_condition_that_matters_is_still_asked():
    with pytest.raises(UndecidableConditionError):
        composition(Layout((M, N), (N, 1)), Layout(4, 1))


# ----------------------------------------------------------------------------- typed errors
@pytest.mark.parametrize("text", ["M % 4", "M", "garbage", "M % 0 == 0", "M / 0 == 1", "M + ", "not M"])
def test_an_assumption_that_is_not_a_condition(text):
    with pytest.raises(MalformedLayoutError):
        with assuming(text):
            pass
    with pytest.raises(MalformedLayoutError):
        condition(text)
    with pytest.raises(MalformedLayoutError):
        verify.equal(Layout(M, 1), Layout(M, 1), assume=text)


def test_bad_arguments_to_verify_are_typed():
    with pytest.raises(MalformedLayoutError):
        verify.compatible(_nest(2, 500), 2)
    with pytest.raises(MalformedLayoutError):
        verify.postcondition("coalesce", _nest(2, 500), Layout(2, 1))
    with pytest.raises(MalformedLayoutError):
        verify.Result("bogus", "z3")
    with pytest.raises(MalformedLayoutError):
        verify.Result("proved", "guess")
    with pytest.raises(MalformedLayoutError):
        verify.postcondition("make_layout", Layout(2, 1), Layout(2, 1))
    with pytest.raises(MalformedLayoutError):
        verify.postcondition(Layout(2, 1), Layout(2, 1), Layout(2, 1))
    with pytest.raises(MalformedLayoutError):
        verify.postcondition("composition", Layout(2, 1), Layout(2, 1))
    with pytest.raises(MalformedLayoutError):
        verify.postcondition("left_inverse", Layout(2, 1), Layout(2, 1), 3, 4)
    with pytest.raises(MalformedLayoutError):
        verify.identity(lambda M: Layout(M, 1), lambda M: Layout(M, 1), params=Layout(2, 1))
    with pytest.raises(MalformedLayoutError):
        verify.identity(lambda M: Layout(M, 1), lambda M: Layout(M, 1), params=3)
    with pytest.raises(LayoutError):
        verify.compatible((2, 1.5), 3)


def test_the_callers_own_errors_pass_through():
    def boom(M):
        raise KeyError("mine")

    with pytest.raises(KeyError, match="mine"):
        verify.identity(boom, lambda M: Layout(M, 1))


def test_python_dash_o_gives_the_same_typed_errors():
    code = (
        "from layoutproof import assuming, verify, Layout\n"
        "from layoutproof.errors import MalformedLayoutError\n"
        "n = 0\n"
        "deep = 2\n"
        "for _ in range(300):\n"
        "    deep = (deep,)\n"
        "for f in (lambda: assuming('M % 4').__enter__(), lambda: verify.Result('x', 'z3'),\n"
        "          lambda: verify.compatible(deep, 2)):\n"
        "    try:\n"
        "        f()\n"
        "    except MalformedLayoutError:\n"
        "        n += 1\n"
        "print(n)\n"
    )
    out = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, timeout=300)
    assert out.stdout.strip() == "3", out.stderr[-2000:]
