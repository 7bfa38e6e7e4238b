"""Differential tests: layoutproof against the CuTe DSL (``nvidia-cutlass-dsl`` 4.8.1) on the
CPU, on the algebra both implement.

The DSL is installed from PyPI into a cache folder on first use (``tests/oracles.py``) and
runs in a subprocess (``dsl_worker.py``): each case's layouts are compile-time constants
of a ``@cute.jit`` function, whose trace computes the result.  A case that kills the
process (the DSL raises SIGFPE on some inputs) is recorded as a crash and the run goes on
after it.  The cases (``differential_cases``) and the decision rules are those of the
other differentials; the DSL keeps the stride of an extent-1 mode where layoutproof writes
0, which the comparison as functions does not see.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import differential_cases as dc
import pytest
from oracles import Peer, PeerError, dsl_env, parse_layout, run_resuming

import layoutproof as lp
from layoutproof import Layout

pytestmark = pytest.mark.slow

COUNTS = {
    "composition": 900,
    "complement": 300,
    "coalesce": 200,
    "right_inverse": 200,
    "left_inverse": 200,
    "logical_divide": 300,
    "logical_product": 200,
}
WORKER = Path(__file__).with_name("dsl_worker.py")


def _json(x):
    return [x.shape, x.stride] if isinstance(x, Layout) else x


def _peer(result):
    def call():
        if result is None:
            raise PeerError("no answer")
        tag, text = result
        if tag == "R":
            return Peer(*parse_layout(text))
        # named by the DSL's error type (MLIRError, ...) or the signal that killed it
        name = text.split(":", 1)[0] if tag == "E" else text
        raise type(name, (PeerError,), {})(text)

    return call


def run_dsl(cases):
    env, why = dsl_env()
    if env is None:
        pytest.skip(why)
    lines = [
        json.dumps(
            {"k": k, "op": c.op, "a": _json(c.args[0]), "b": _json(c.args[1]) if len(c.args) > 1 else None}
        )
        + "\n"
        for k, c in enumerate(cases)
    ]
    return run_resuming([sys.executable, str(WORKER)], lines, env=env)


@pytest.fixture(scope="module")
def reports():
    cases = dc.draw(COUNTS, 0xD51)
    results = run_dsl(cases)
    return dc.decide(cases, [_peer(results.get(k)) for k in range(len(cases))], "CuTe DSL")


def test_dsl_differential(reports):
    dc.check(reports, min_total=2000, min_agree=0.5)


def test_dsl_returns_shahs_wrong_composition_silently():
    A, B = Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))
    case = dc.Case("composition", (A, B), "shah", lambda: lp.composition(A, B), None)
    (tag, text) = run_dsl([case])[0]
    assert tag == "R" and parse_layout(text) == ((3, 2), (2, 3))  # no error, a wrong layout
    with pytest.raises(lp.InadmissibleError):
        lp.composition(A, B)


if __name__ == "__main__":
    cases = dc.draw(COUNTS, 0xD51)
    results = run_dsl(cases)
    print(dc.summary(dc.decide(cases, [_peer(results.get(k)) for k in range(len(cases))], "CuTe DSL")))
