"""The one Z3 driver (layoutproof.symbolic.solver): each verdict on claims whose truth is
known, refutations checked by substituting the model, the consistency check behind
"vacuous", timeouts under the budget, and the exported SMT-LIB obligation re-checked by
a second solver (cvc5) with the same answer."""

from __future__ import annotations

import dataclasses
import threading
import time

import pytest
import sympy as sp
import z3

from layoutproof import LayoutError, MalformedLayoutError, budget, symbols
from layoutproof.symbolic import exact_value, smt, solver
from layoutproof.symbolic.solver import Verdict, facts_consistent, prove, satisfiable, to_z3

M, N = symbols("M N")
i = sp.Symbol("i", integer=True, nonnegative=True)


def _holds(cond, model):
    return exact_value(cond, dict(model))


def test_proved():
    v = prove(sp.Eq(sp.Mod(M, 4), 0), [sp.Eq(sp.Mod(M, 8), 0)], name="8 | M implies 4 | M")
    assert isinstance(v, Verdict)
    assert v.status == "proved" and v.model is None and v.reason == ""
    assert v.name == "8 | M implies 4 | M" and v.z3_answer == "unsat" and v.seconds >= 0
    assert v.smtlib.startswith("(set-logic ALL)\n") and "(check-sat)" in v.smtlib


def test_proved_without_facts_uses_the_symbols_domains():
    # M is positive: M >= 1 holds, M >= 2 does not
    assert prove(M >= 1).status == "proved"
    v = prove(M >= 2)
    assert v.status == "refuted" and dict(v.model) == {"M": 1}


@pytest.mark.parametrize(
    "claim, facts",
    [
        (sp.Eq(sp.Mod(M, 8), 0), [sp.Eq(sp.Mod(M, 4), 0), M >= 10]),
        (sp.Lt(M * N, 100), [M >= 7, N >= 3, N <= 20]),
        (sp.Eq(sp.floor(M / 3) * 3, M), [M > 4]),
        (sp.Ne(sp.Mod(M + N, 5), 2), [sp.Eq(sp.Mod(M, 5), 1)]),
        (sp.Le(sp.ceiling(M / 4), 3), [M < 30]),
    ],
)
@pytest.mark.parametrize("small", [False, True])
def test_refuted_with_a_model_that_satisfies_the_facts_and_violates_the_claim(claim, facts, small):
    v = prove(claim, facts, small_model=small)
    assert v.status == "refuted" and v.z3_answer == "sat"
    syms = set(claim.free_symbols).union(*(f.free_symbols for f in facts))
    assert {s.name for s in syms} <= set(v.model)
    for f in facts:
        assert _holds(f, v.model) is True, (f, v.model)
    assert _holds(claim, v.model) is False, (claim, v.model)


def test_small_model_is_small():
    v = prove(sp.Eq(sp.Mod(M, 8), 0), [sp.Eq(sp.Mod(M, 4), 0), M >= 1000], small_model=True)
    assert v.status == "refuted"
    assert 1000 <= v.model["M"] <= 1100 and v.model["M"] % 4 == 0 and v.model["M"] % 8 != 0


def test_vacuous_when_the_facts_contradict_each_other():
    v = prove(M > 5, [M < 1])  # M is positive
    assert v.status == "vacuous" and v.model is None and v.z3_answer == "unsat"
    v = prove(sp.Eq(M, 3), [sp.Eq(sp.Mod(M, 4), 0), sp.Eq(sp.Mod(M, 4), 1)])
    assert v.status == "vacuous"
    assert facts_consistent([M < 1]) is False
    assert facts_consistent([sp.Eq(sp.Mod(M, 4), 0)]) is True
    assert facts_consistent([]) is True
    # without the check the unsatisfiable obligation is (vacuously) proved
    assert prove(M > 5, [M < 1], check_facts=False).status == "proved"


def test_satisfiable():
    r = satisfiable([sp.Eq(sp.Mod(M, 4), 0), M > 10], small_model=True)
    assert r.status == "sat" and r.model["M"] % 4 == 0 and r.model["M"] > 10
    assert satisfiable([M < 1]).status == "unsat"
    r = satisfiable([M + N < 20], fixed={"M": 7}, symbols=(N,))
    assert r.status == "sat" and r.model["M"] == 7 and 1 <= r.model["N"] < 13
    assert r.smtlib.startswith("(set-logic ALL)")


def test_unknown_on_a_tiny_per_call_limit():
    # x^3 + y^3 == z^3 has no positive solution; Z3 cannot show it in a millisecond
    x, y, z = symbols("x y z")
    v = prove(sp.Ne(x**3 + y**3, z**3), timeout_s=0.001)
    assert v.status == "unknown" and v.model is None
    assert v.reason == "timeout" or v.reason.startswith("nonlinear"), v.reason
    assert "(check-sat)" in v.smtlib  # the obligation is kept even when undecided


def test_unknown_past_an_enclosing_deadline():
    """Past the caller's deadline: "unknown" (timeout), or the caller's BudgetExceeded with
    on_deadline="raise".  Run in a worker thread, where a deadline is checked cooperatively
    (in the main thread its alarm would also fire in the test's own code)."""
    claim, facts = sp.Eq(sp.Mod(M, 4), 0), [sp.Eq(sp.Mod(M, 8), 0)]
    seen = {}

    def work():
        with budget.deadline(0.01):
            time.sleep(0.03)
            seen["default"] = prove(claim, facts)
            try:
                prove(claim, facts, on_deadline="raise")
                seen["raise"] = None
            except budget.BudgetExceeded as e:
                seen["raise"] = e

    th = threading.Thread(target=work)
    th.start()
    th.join(60)
    v = seen["default"]
    assert v.status == "unknown" and v.reason == "timeout"
    assert isinstance(seen["raise"], budget.BudgetExceeded)
    assert prove(claim, facts).status == "proved"  # no deadline: decided


def test_z3_terms_as_claims_and_facts():
    x, q, r = z3.Ints("x q r")
    facts = [x >= 0, x == 4 * q + r, r >= 0, r < 4]
    assert prove(z3.Implies(r == 0, x % 4 == 0), facts).status == "proved"
    v = prove(r == 0, facts)
    assert v.status == "refuted"
    assert v.model["x"] == 4 * v.model["q"] + v.model["r"] and v.model["r"] != 0
    # mixed: a SymPy fact about M, a Z3 claim about the same variable (by name)
    zM = z3.Int("M")
    assert prove(zM % 2 == 0, [sp.Eq(sp.Mod(M, 4), 0)]).status == "proved"
    assert prove(z3.BoolVal(False), [z3.BoolVal(False)]).status == "vacuous"


def test_to_z3_honours_the_callers_bindings():
    """A caller may bind a symbol to its own Z3 term (symexec binds quotient stand-ins); the
    driver's cache of translations must not override it."""
    e = sp.Eq(sp.Mod(M, 4), 0)
    assert prove(e, [sp.Eq(sp.Mod(M, 8), 0)]).status == "proved"  # e's translation is cached
    other = z3.Int("other")
    env = {M: other}
    t = to_z3(e, env)
    assert "other" in str(t) and "M" not in str(t).replace("Mod", "")
    assert env == {M: other}


def test_bit_vector_claims():
    b = z3.BitVec("b", 8)
    v = prove((b ^ b) == 0, logic="QF_BV")
    assert v.status == "proved" and v.smtlib.startswith("(set-logic QF_BV)")
    v = prove(b + 1 > b, logic="QF_BV")  # signed overflow at 127
    assert v.status == "refuted" and v.model["b"] == 127


def test_bad_input_is_a_layout_error():
    x = sp.Symbol("x")  # not declared integer
    with pytest.raises(MalformedLayoutError):
        prove(x > 0)
    with pytest.raises(MalformedLayoutError):
        to_z3(sp.Rational(1, 2) * sp.Integer(3) + sp.Rational(1, 3))
    with pytest.raises(LayoutError):
        prove(M > 0, timeout_s=0)
    with pytest.raises(LayoutError):
        prove(M > 0, timeout_s=float("nan"))


def test_verdicts_are_frozen():
    v = prove(M >= 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.status = "refuted"  # type: ignore[misc]


def test_translation_keeps_python_integer_semantics():
    a, b = sp.Symbol("a", integer=True), sp.Symbol("b", integer=True)
    for av in (-7, -1, 0, 5, 9):
        for bv in (-4, -3, 3, 4):
            env = {}
            fx = to_z3(sp.Mod(a, b), env)
            s = z3.Solver()
            s.add(env[a] == av, env[b] == bv)
            assert s.check() == z3.sat
            assert s.model().eval(fx).as_long() == av % bv
            fl = to_z3(sp.floor(a / b), env)
            assert s.model().eval(fl).as_long() == av // bv


def test_the_wrappers_agree_with_the_driver():
    facts = (sp.Eq(sp.Mod(M, 8), 0),)
    assert smt.decide_z3(sp.Eq(sp.Mod(M, 4), 0), facts, 3000).value is True
    d = smt.decide_z3(sp.Eq(sp.Mod(M, 8), 3), facts, 3000)
    assert d.value is False
    d = smt.decide_z3(sp.Eq(sp.Mod(M, 3), 1), facts, 3000)
    assert d.value is None and d.counterexample == {"M": 8}
    with pytest.raises(LayoutError, match="contradict"):
        smt.decide_z3(M > 3, (M < 1,), 3000)


cvc5 = pytest.importorskip("cvc5")


@pytest.mark.parametrize(
    "claim, facts, status",
    [
        (sp.Eq(sp.Mod(M, 4), 0), [sp.Eq(sp.Mod(M, 8), 0)], "proved"),
        (sp.Eq(sp.Mod(M, 8), 0), [sp.Eq(sp.Mod(M, 4), 0)], "refuted"),
        (sp.Eq(sp.floor(M / 4) * 4 + sp.Mod(M, 4), M), [], "proved"),
        (sp.Eq(sp.ceiling(M / 4) * 4, M + sp.Mod(-M, 4)), [], "proved"),
        (sp.Lt(i, M * N), [sp.Lt(i, M), N >= 1], "proved"),
        (sp.Lt(i + N, M * N), [sp.Lt(i, M), N >= 1], "refuted"),
        (M > 5, [M < 1], "vacuous"),
    ],
)
def test_cvc5_gives_the_same_verdict_on_the_exported_obligation(claim, facts, status):
    from layoutproof.verify.smtlib import run_cvc5

    v = prove(claim, facts)
    assert v.status == status
    assert run_cvc5(v.smtlib, 20_000) == [v.z3_answer]
    if status == "vacuous":  # the facts alone are unsatisfiable for cvc5 too
        assert run_cvc5(satisfiable(facts).smtlib, 20_000) == ["unsat"]
    assert solver.smtlib_text([to_z3(f) for f in facts]).startswith("(set-logic ALL)")
