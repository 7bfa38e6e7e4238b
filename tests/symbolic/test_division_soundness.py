"""A quotient that need not be exact is never read as an integer division: decisions over
conditions with quotients, ``Mod`` of quotients, ``floor``/``ceiling``, rational constants
and negative powers are checked against exhaustive exact evaluation (every "proved" holds at
every small value the facts admit, every "refuted" at none, every counterexample and
example is one).  ``bench/verify.py`` runs the same check on more draws."""

from __future__ import annotations

import pytest

sp = pytest.importorskip("sympy")
pytest.importorskip("z3")
pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402

from layoutproof.errors import LayoutError  # noqa: E402
from layoutproof.symbolic import Decision, assuming, decide, solver, symbols  # noqa: E402
from layoutproof.verify.strategies import check_decision, conditions  # noqa: E402

M = sp.Symbol("M", integer=True, positive=True)
K = sp.Symbol("K", integer=True)


def test_mod_of_a_half_is_not_an_integer() -> None:
    c = sp.Ne(sp.Mod(M / 2, 3), sp.Rational(1, 2))
    d = decide(c)
    assert d.value is None
    assert d.counterexample == {"M": 1} and d.example is not None
    assert check_decision(d, c) == []
    assert decide(c, (sp.Eq(sp.Mod(M, 2), 0),)).value is True
    # the driver alone, without the rewriting of conditions
    v = solver.prove(c, small_model=True)
    assert v.status == "refuted" and dict(v.model) == {"M": 1}


@pytest.mark.parametrize(
    "cond, facts, want",
    [
        (sp.Eq(sp.Mod(M / 2, 3), 1), (), None),  # 2, 8, ... (M = 1: 1/2)
        (sp.Eq(sp.Mod(M / 2, 3), 1), (sp.Eq(sp.Mod(M, 2), 1),), False),  # never an integer
        (sp.Ge(2 * (M / 2), M), (), True),  # (M/2)*2 == M exactly, odd M included
        (sp.Eq(M / 2 * 2, M), (), True),
        (sp.Eq(sp.floor(M / 2) * 2, M), (), None),
        (sp.Lt(sp.Mod(K / 4, 1), sp.Rational(3, 4) + sp.Rational(1, 8)), (), True),
        (sp.Eq(sp.Mod(K / 4, 1), 0), (sp.Eq(sp.Mod(K, 4), 0),), True),
        (sp.Ne(M * M**-2, 1), (sp.Ge(M, 2),), True),  # 1/M
        (sp.Eq(sp.ceiling(M / 3) - sp.floor(M / 3), 1), (), None),
        (sp.Gt(sp.Mod(3 * M / 2, 3) + sp.Rational(1, 2), 0), (), True),
    ],
)
def test_exact_reading(cond: object, facts: tuple, want: object) -> None:
    d = decide(cond, facts)
    assert d.value is want, d
    assert check_decision(d, cond, facts) == []


def test_library_quotients_keep_the_integer_reading() -> None:
    N = symbols("N")
    with assuming("N % 64 == 0"):
        d = decide(sp.Eq(sp.Mod(N / 64 * 8, 8), 0))
    assert d.value is True
    q = solver._Query(sp.Eq(sp.Mod(N / 64, 2), 0), (sp.Eq(sp.Mod(N, 128), 0),))
    assert q.guarded
    solver._settle_reading(q, 2000, True)
    assert not q.exact  # the facts imply 64 | N: Z3's integer division is the value


def test_contradictory_facts_are_contradictory() -> None:
    with pytest.raises(LayoutError, match="contradict"):
        decide(sp.Eq(M, 3), (sp.Eq(sp.Mod(M / 2, 1), sp.Rational(1, 2)), sp.Eq(sp.Mod(M, 2), 0)))
    # an odd M makes M/2 a half: consistent, and the claim follows
    assert decide(sp.Eq(sp.Mod(M, 2), 1), (sp.Eq(sp.Mod(M / 2, 1), sp.Rational(1, 2)),)).value is True


def test_check_decision_catches_a_planted_unsound_verdict() -> None:
    c = sp.Eq(sp.floor(M / 2) * 2, M)
    assert check_decision(Decision(True, "z3"), c) == ["proved, but false at M=1"]
    assert check_decision(Decision(False, "z3"), c) == ["refuted, but true at M=2"]
    assert check_decision(Decision(None, "z3", counterexample={"M": 2}), c) != []


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(conditions())
def test_decisions_agree_with_exhaustive_evaluation(pair: tuple) -> None:
    cond, facts = pair
    try:
        d = decide(cond, facts, timeout_ms=400)
    except LayoutError as e:
        # only contradictory facts may be refused: no small value satisfies them
        assert "contradict" in str(e)
        probe = Decision(False, "z3")
        assert check_decision(probe, sp.true, facts, radius=8) == []
        return
    assert check_decision(d, cond, facts, radius=10) == []
    v = solver.prove(cond, facts, timeout_s=0.4, small_model=True)
    if v.status == "proved":
        assert check_decision(Decision(True, "z3"), cond, facts, radius=10) == []
    elif v.status == "refuted":
        assert (
            check_decision(Decision(None, "z3", counterexample=dict(v.model)), cond, facts, radius=10) == []
        )
