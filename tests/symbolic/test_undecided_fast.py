"""An undecided condition is reported as soon as a model each way is known, not when the
time budget runs out.  No timed assertions: the tests count solver
runs and check that no Z3 call reaches its own time limit."""

from __future__ import annotations

import pytest

sp = pytest.importorskip("sympy")
pytest.importorskip("z3")

from layoutproof import Layout, UndecidableConditionError, logical_divide  # noqa: E402
from layoutproof.symbolic import decide, solver, symbols  # noqa: E402


def test_search_model_small_values_checked_exactly() -> None:
    M, N = symbols("M N")
    m = solver.search_model([sp.Eq(sp.Mod(M**2 + N**2, 3), 0)])
    assert m == {"M": 3, "N": 3}
    assert solver.search_model([sp.Eq(M, 0)]) is None  # M is positive
    assert solver.search_model([sp.Eq(M, 100)]) is None  # beyond the small values
    # a quotient is the rational it is
    assert solver.search_model([sp.Eq(M / 2, 1)]) == {"M": 2}
    assert solver.search_model([sp.Eq(M + sp.Rational(1, 2), 1)]) is None
    assert solver.search_model([sp.Eq(sp.Mod(M / 2, 3), sp.Rational(1, 2))]) == {"M": 1}
    assert solver.search_model([sp.Eq(sp.ceiling(M / 3), 1)]) == {"M": 1}
    assert solver.search_model([sp.Eq(M, 2)], fixed={"M": 3}) is None


def _count_long_checks(monkeypatch: pytest.MonkeyPatch) -> list:
    long: list = []
    orig = solver.check

    def check(s, ms):  # type: ignore[no-untyped-def]
        r = orig(s, ms)
        if str(r) == "unknown" and ms > solver.QUICK_MS:
            long.append(ms)
        return r

    monkeypatch.setattr(solver, "check", check)
    return long


def test_decide_nonlinear_both_models(monkeypatch: pytest.MonkeyPatch) -> None:
    M, N = symbols("M N")
    long = _count_long_checks(monkeypatch)
    d = decide(sp.Eq(sp.Mod(M**2 + N**2 + 1, 3), 1), ())
    assert d.value is None
    assert d.counterexample is not None and d.example is not None
    c = sp.Eq(sp.Mod(M**2 + N**2 + 1, 3), 1)
    asg = {M: d.example["M"], N: d.example["N"]}
    assert c.xreplace(asg) is sp.true
    asg = {M: d.counterexample["M"], N: d.counterexample["N"]}
    assert c.xreplace(asg) is sp.false
    assert long == []  # no Z3 call ran to its time limit


def test_logical_divide_two_symbols_undecided_with_both_models(monkeypatch: pytest.MonkeyPatch) -> None:
    M, N = symbols("M N")
    long = _count_long_checks(monkeypatch)
    with pytest.raises(UndecidableConditionError) as ei:
        logical_divide(Layout((M**2 + N**2, N), (1, M)), Layout(M + N, 3))
    e = ei.value
    assert e.counterexample == {"M": 1, "N": 1}
    assert e.example == {"M": 3, "N": 3}
    assert "it holds for M = 3, N = 3 and fails for M = 1, N = 1" in str(e)
    assert len(long) <= 1  # at most one Z3 call reaches its limit (it was a dozen)


def test_concrete_refusal_skips_the_branch_split() -> None:
    from layoutproof.symbolic import symops

    M, N = symbols("M N")
    A, B = Layout((M**2 + N**2, N), (1, M)), Layout(M + N, 3)
    assert symops._refused_at(symops.composition, (A, B), {"M": 1, "N": 1}) is False  # 2:1 o 2:3 fine
    assert symops._refused_at(symops.composition, (Layout((2, 3), (1, 2)), Layout(M, 3)), {"M": 2}) is False
    A2, B2 = Layout((M, 2), (1, 7)), Layout((3, 2), (2, 3))
    assert symops._refused_at(symops.composition, (A2, B2), {"M": 6}) is True  # disjointness fails
    assert symops._refused_at(symops.composition, (A, B), {"M": 1}) is False  # N has no value
