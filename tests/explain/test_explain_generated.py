"""A property test over generated refusals: for every call the algebra refuses or leaves
undecided, the explanation names the error's condition (an entry of
``layoutproof.explain.CONDITIONS``), a refusal's witness reproduces the failure (re-evaluated
there, or the call re-run with the same condition and witness), an undecided formula's
models satisfy it and violate it as said, and every repair offered -- run again here,
independently of the explanation -- is admissible and meets the operation's post-condition
(under its assumptions, for an assumption).

The generators (tests/explain/explain_gen.py) reach composition's conditions and the
others: complement and the inverses, upcast / downcast, tile_to_shape, layout_add, the
shape lattice, swizzles and composed layouts, GF(2), thread-value layouts, basis and F2
strides, tensors, and symbolic operands.
"""

from __future__ import annotations

import pytest
from explain_gen import ASSUMED, CALLS, CONCRETE, SYMBOLIC, check
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutproof.explain import CONDITIONS

FAST = settings(max_examples=40, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@FAST
@given(CONCRETE)
def test_concrete_refusals(expr):
    check(expr)


@settings(max_examples=12, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(SYMBOLIC)
def test_symbolic_refusals(expr):
    check(expr)


@FAST
@given(CALLS)
def test_calls_outside_the_eval_language(call):
    check(call)


@settings(max_examples=3, deadline=None, database=None)
@given(ASSUMED)
def test_refusals_under_assumptions(case):
    expr, assume = case
    check(expr, assume=assume)


@pytest.mark.slow
def test_the_generators_reach_the_conditions():
    """Derandomized, many examples: every one checked, and the distinct conditions reached
    counted (34 of them with these generators)."""
    seen: dict = {}

    @settings(
        max_examples=400,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(st.one_of(CONCRETE, CONCRETE, CALLS, SYMBOLIC))
    def run(x):
        e = check(x, budget_s=0.05)
        if e is not None:
            seen[e.rule] = seen.get(e.rule, 0) + 1

    run()
    assert set(seen) <= set(CONDITIONS)
    assert len(seen) >= 30, sorted(seen)
