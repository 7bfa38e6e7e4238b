"""Budgets: every solver call and every symbolic verification runs under a time limit.

The hang detectors below fail only at three times the budget given (plus a start-up
allowance); they are not speed assertions.  Speed is measured in bench/.
"""

from __future__ import annotations

import signal
import time

import pytest

from layoutproof import Layout, assuming, budget, left_inverse, logical_product, symbols, verify
from layoutproof.errors import MalformedLayoutError
from layoutproof.symbolic import assumptions, decide, timeout

M, N = symbols("M N")


def _hostile_product():
    with assuming("M >= 4"):
        A, B = Layout((8, 2 * N, M), (2 * M * N, M, 1)), Layout(M, 1)
        return logical_product(A, B), A, B


def _within(limit: float, fn):
    t0 = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t0
    assert dt < 3 * limit + 2.0, f"hang detector: {dt:.1f} s against a budget of {limit} s"
    return out


def test_deadline_interrupts_python_work():
    with budget.deadline(0.05):
        with pytest.raises(budget.BudgetExceeded) as e:
            while True:
                sum(range(1000))
    assert e.value.reason == "timeout"


def test_deadline_restores_the_alarm_and_the_context():
    before = signal.getsignal(signal.SIGALRM)
    R, A, B = _hostile_product()
    with assuming("M >= 4"):
        r = _within(1.0, lambda: verify.postcondition("logical_product", R, A, B, deadline=1.0))
    assert r.status in ("unknown", "proved", "checked")
    if r.status == "unknown":
        assert r.reason == "timeout"
    assert signal.getsignal(signal.SIGALRM) is before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert assumptions() == ()


@pytest.mark.parametrize("limit", [0.5, 2.0])
def test_hostile_postconditions_stop_at_their_deadline(limit):
    R, A, B = _hostile_product()
    with assuming("M >= 4"):
        r = _within(limit, lambda: verify.postcondition("logical_product", R, A, B, deadline=limit))
    assert r.status in ("unknown", "proved", "checked"), r
    if r.status == "unknown":
        assert r.reason == "timeout"


def test_hostile_left_inverse_postcondition():
    L = Layout((4, M, N), (1, 4, 4 * M))
    R = left_inverse(L)
    r = _within(2.0, lambda: verify.postcondition("left_inverse", R, L, deadline=2.0))
    assert r.status in ("proved", "checked") or (r.status == "unknown" and r.reason == "timeout"), r


def test_identity_under_a_deadline():
    r = _within(
        1.0,
        lambda: verify.identity(
            lambda M, N: logical_product(Layout((8, 2 * N, M), (2 * M * N, M, 1)), Layout(M, 1)),
            lambda M, N: Layout(((8, 2 * N, M), M), ((2 * M * N, M, 1), 16 * M * N)),
            assume="M >= 4",
            deadline=1.0,
        ),
    )
    assert r.status != "refuted"
    if r.status == "unknown":
        assert r.reason == "timeout" or r.reason


def test_an_enclosing_deadline_wins():
    R, A, B = _hostile_product()
    t0 = time.perf_counter()
    with pytest.raises(budget.BudgetExceeded):
        with budget.deadline(0.5):
            with assuming("M >= 4"):
                verify.postcondition("logical_product", R, A, B, deadline=30.0)
            while True:  # had the inner call swallowed the outer deadline, this would spin
                budget.check()
    assert time.perf_counter() - t0 < 3 * 0.5 + 2.0


def test_each_z3_call_has_its_limit():
    hard = "(M*N*M - 7*N*N*N + 3*M) % 97 == 5"
    with timeout(50):
        d = _within(0.1, lambda: decide(hard, facts=("M >= 1000", "N >= 1000")))
    assert d.value in (True, False, None)
    if d.value is None:
        assert d.reason


def test_timeouts_are_not_cached():
    from layoutproof import symbolic

    with budget.deadline(5.0):
        with timeout(1):
            decide("(M*M*M + N*N) % 91 == 3", facts=("M >= 10**6",))
    assert all(v.reason != "timeout" for v in symbolic._CACHE.values())


def test_budget_settings_are_validated():
    with pytest.raises(MalformedLayoutError):
        budget.set_deadline(-1)
    with pytest.raises(MalformedLayoutError):
        budget.set_deadline(float("nan"))
    with pytest.raises(MalformedLayoutError):
        with budget.deadline(0):
            pass
    with pytest.raises(MalformedLayoutError):
        with timeout(0):
            pass
    old = budget.get_deadline()
    budget.set_deadline(7.5)
    try:
        assert budget.get_deadline() == 7.5
    finally:
        budget.set_deadline(old)


def test_no_deadline_means_no_limit_beyond_the_per_call_one():
    assert budget.remaining_ms() is None
    assert budget.call_limit_ms(1234) == 1234
    with budget.deadline(10.0):
        assert 0 < budget.call_limit_ms(100_000) <= 10_000


def test_a_deadline_inside_a_finalizer_is_not_lost():
    """The alarm that fires inside ``__del__`` (where Python ignores exceptions) is raised
    just after it, not lost."""

    class Slow:
        def __del__(self):
            t = time.perf_counter()
            while time.perf_counter() - t < 0.2:
                pass

    t0 = time.perf_counter()
    with pytest.raises(budget.BudgetExceeded):
        with budget.deadline(0.05):
            x = Slow()
            del x  # the deadline passes inside the finalizer
            while time.perf_counter() - t0 < 5:
                sum(range(100))
    assert time.perf_counter() - t0 < 1.0
