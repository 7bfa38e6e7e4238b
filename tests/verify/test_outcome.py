"""One result vocabulary: the solver's verdict, a verify result and a kernel obligation are
each a :class:`layoutproof.outcome.Outcome` (the kernel obligation: the GPU back end's
``Proof``) -- the same status words and the same names
(status, statement, method, scope, cases, seconds, witness, reason)."""

from __future__ import annotations

import json

import pytest
import sympy as sp

from layoutproof import Layout, outcome, symbols
from layoutproof.errors import MalformedLayoutError
from layoutproof.gpu.proof.record import Proof
from layoutproof.outcome import REFUTED, SHARED_FIELDS, STATUSES, UNKNOWN, Outcome
from layoutproof.symbolic import solver
from layoutproof.verify import Result, equal

M = sp.Symbol("M", integer=True, positive=True)


def _three() -> list:
    verdict = solver.prove(sp.Eq(sp.Mod(M, 4), 0), [sp.Eq(sp.Mod(M, 8), 0)], name="8 | M implies 4 | M")
    result = equal(Layout((4, 2), (2, 1)), Layout((4, 2), (2, 1)))
    kernel = Proof("bounds", "tile(i) < 64 for i < 32", "exhaustive", 32)
    return [verdict, result, kernel]


def test_the_three_producers_share_one_shape():
    for r in _three():
        assert isinstance(r, Outcome)
        assert r.status == "proved" and r.status in STATUSES and r.holds
        assert set(r.outcome_dict()) == set(SHARED_FIELDS)
        assert all(hasattr(r, name) for name in SHARED_FIELDS)
        assert isinstance(r.statement, str) and r.statement
        assert r.method in ("exhaustive", "sympy", "z3") and r.seconds >= 0
        assert r.witness is None
        assert r.line().startswith("[") and " -- " in r.line()


def test_old_names_are_aliases_of_the_shared_ones():
    v = solver.prove(
        sp.Eq(sp.Mod(M, 8), 0), [sp.Eq(sp.Mod(M, 4), 0)], small_model=True, name="4 | M implies 8 | M"
    )
    assert v.status == REFUTED and v.model == v.witness == {"M": 4} and v.name == v.statement
    assert v.line() == "[refuted] 4 | M implies 8 | M -- z3: M = 4"
    r = equal(Layout((4, 2), (2, 1)), Layout((4, 2), (1, 4)))
    assert r.status == REFUTED and r.counterexample is r.witness and r.claim == r.statement
    assert r.line() == f"[refuted] {r.claim} -- exhaustive: {r.counterexample}"
    assert str(r).startswith("refuted (exhaustive, ")  # Result keeps its own str()


def test_unknown_carries_a_reason_everywhere():
    u = Result("unknown", "z3", claim="A == B", reason="timeout")
    assert u.line() == "[unknown] A == B -- z3: timeout"
    assert Outcome(UNKNOWN, "A == B", "z3", reason="timeout").line() == u.line()
    assert not u.holds and not bool(u)


def test_a_result_names_its_scope():
    N = symbols("N")
    r = equal(Layout((N, 2), (2, 1)), Layout((N, 2), (2, 1)), assume="N % 4 == 0")
    assert r.status == "proved" and r.scope == ", ".join(r.assumptions) and r.scope
    ch = Result("checked", "bounded", claim="A == B", bounds={"M": (1, 8)}, cases=8)
    assert ch.scope == "within 1 <= M <= 8" and ch.holds
    assert ch.line() == "[checked] A == B -- bounded, 8 cases (within 1 <= M <= 8)"
    assert ch.replace(claim="C == D").scope == ch.scope
    assert ch.replace(statement="C == D").claim == "C == D"


def test_a_kernel_obligation_renders_as_the_kernel_header_line():
    assert Proof("equal", "smem(r, c) == (128,32):(32,1)", "exhaustive", 4096).line() == (
        "[equal] smem(r, c) == (128,32):(32,1) -- exhaustive, 4096 cases"
    )
    p = Proof("banks", "no conflicts for all M", "z3")
    assert p.line() == "[banks] no conflicts for all M -- z3"
    assert Proof(**json.loads(json.dumps(p.__dict__))) == p  # kernel caches round-trip


def test_statuses_are_plain_words():
    assert STATUSES == ("proved", "checked", "refuted", "unknown", "vacuous")
    assert outcome.status_of("vacuous") == "vacuous" and type(outcome.status_of("proved")) is str
    with pytest.raises(MalformedLayoutError, match="must be one of"):
        outcome.status_of("maybe")
    with pytest.raises(ValueError):  # a Result has no "vacuous": the checks report it as unknown
        Result("vacuous", "z3")
    assert solver.prove(M > 5, [M < 1]).status == outcome.VACUOUS
