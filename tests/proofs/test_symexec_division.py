"""The path encoder of the theorem catalog reads a quotient as a floor quotient only where the
path's facts show it exact: a claim true only under that reading is not proved, a fact that
the reading makes false at some point is no premise there, and the encoder's verdicts on
drawn conditions agree with exhaustive exact evaluation (every "proved" holds at every small
value the facts admit)."""

from __future__ import annotations

import pytest

sp = pytest.importorskip("sympy")
pytest.importorskip("z3")
pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from layoutproof import Layout  # noqa: E402
from layoutproof.errors import LayoutError  # noqa: E402
from layoutproof.proofs import symexec as sx  # noqa: E402
from layoutproof.proofs.catalog import symbolic as cs  # noqa: E402
from layoutproof.symbolic import Decision, symops  # noqa: E402
from layoutproof.verify.strategies import check_decision  # noqa: E402

M = sp.Symbol("M", integer=True, positive=True)
K = sp.Symbol("K", integer=True)
S = sp.Symbol("S", integer=True, positive=True)


def _verdict(claim, facts=(), timeout_ms=None):
    enc = sx.Enc()
    goal = enc.t(claim)
    po = sx.discharge(enc, tuple(facts), [], goal, "division", timeout_ms=timeout_ms)
    return po


@pytest.mark.parametrize(
    "claim, facts, want",
    [
        # true only when M/2 is read as floor(M/2): false at M = 1
        (sp.Eq(sp.Mod(M / 2, 1), 0), (), "unknown"),
        (sp.Eq(sp.Mod(M / 2, 1), 0), (sp.Eq(sp.Mod(M, 2), 0),), "unsat"),
        # floor(K/S) == K/S: false at K = 1, S = 2
        (sp.Eq(sp.floor(K / S), K / S), (), "unknown"),
        (sp.Eq(sp.floor(K / S), K / S), (sp.Eq(sp.Mod(K, S), 0),), "unsat"),
        # a divisibility shown by a fact that is itself exact only under another one
        (sp.Eq(sp.Mod(M / 256, 1), 0), (sp.Eq(sp.Mod(M, 64), 0), sp.Eq(sp.Mod(M / 64, 4), 0)), "unsat"),
        (sp.Eq(sp.Mod(M / 256, 1), 0), (sp.Eq(sp.Mod(M / 64, 4), 0),), "unknown"),
    ],
)
def test_a_quotient_is_exact_only_where_the_facts_show_it(claim, facts, want) -> None:
    po = _verdict(claim, facts)
    assert po.verdict == want, (po.verdict, po.reason)
    if want == "unknown":
        assert "not shown exact" in po.reason


def test_a_multiple_of_an_exact_quotient_is_exact() -> None:
    # Bd0 | As0*As1 (a path fact) gives Bd0 | As0*As1*k: the encoder states it as a lemma
    a0, a1, b, k = sp.symbols("As0 As1 Bd0 k", integer=True, positive=True)
    claim = sp.Eq(sp.Mod(a0 * a1 * k / b, 1), 0)
    assert _verdict(claim, (sp.Eq(sp.Mod(a0 * a1, b), 0),)).verdict == "unsat"
    assert _verdict(claim, ()).verdict == "unknown"


def test_a_fact_the_floor_reading_falsifies_is_not_a_premise() -> None:
    # "M/2 is not an integer" (M odd) reads Mod(M // 2, 1) != 0: false everywhere, so the
    # floor reading alone makes the path vacuous and proves M even -- false at M = 1
    po = _verdict(sp.Eq(sp.Mod(M, 2), 0), (sp.Ne(sp.Mod(M / 2, 1), 0),))
    assert po.verdict == "unknown" and "fact" in po.reason
    assert not sx.implied(sp.Eq(sp.Mod(M, 2), 0), (sp.Ne(sp.Mod(M / 2, 1), 0),))
    assert sx.implied(sp.Eq(sp.Mod(M / 2, 1), 0), (sp.Eq(sp.Mod(M, 4), 0),))


def test_a_relation_with_a_quotient_is_multiplied_out_exactly() -> None:
    # M/2 <= 2 is M <= 4 (not floor(M/2) <= 2, which admits M = 5)
    po = _verdict(sp.Le(M / 2, 2), (sp.Le(M, 5),))
    assert po.verdict == "sat" and po.model == {"M": 5}
    assert _verdict(sp.Le(M / 2, 2), (sp.Le(M, 4),)).verdict == "unsat"
    assert _verdict(sp.Lt(K / S, 1), (sp.Lt(K, S),)).verdict == "unsat"  # S > 0 by its range


def test_guards_are_reported_again_for_a_reused_quotient() -> None:
    enc = sx.Enc()
    enc.t(sp.Mod(M / 2, 3))
    _z, g = enc.t_guarded(sp.Eq(sp.Mod(M / 2, 3), 1))
    assert g == [(M, 2)]
    _z, g = enc.t_guarded(sp.Eq(sp.Mod(M, 3), 1))
    assert g == []
    assert list(enc.quotients) == [(M, 2)]


def test_a_planted_path_claim_is_not_proved_through_the_floor_reading() -> None:
    # every path of coalesce on (s0, s1):(d0, d1), claimed: d1/d0 is a whole number.  It
    # holds where coalesce merged the modes (d1 == s0*d0) and fails elsewhere (d0 = 2,
    # d1 = 1); reading d1/d0 as floor(d1/d0) made every path's obligation unsat.
    s0, s1 = sp.symbols("s0 s1", integer=True, positive=True)
    d0, d1 = sp.symbols("d0 d1", integer=True)
    L = Layout.trusted((s0, s1), (d0, d1))

    def build(cx):
        q = d1 / d0
        return [], cx.enc.t(sp.Eq(sp.floor(q), q))

    def confirm(asg, path):
        a, b = asg.get("d0", 1), asg.get("d1", 0)
        return None if a == 0 or b % a == 0 else f"d1/d0 = {b}/{a}"

    (r,) = cs.prove("d0 divides d1", [cs.Instance("rank 2", lambda: symops.coalesce(L), build, confirm)])
    assert r.status != "proved"
    assert "not shown exact" in r.reason or (r.status == "refuted" and r.counterexample is not None)


RELS = [sp.Eq, sp.Ne, sp.Lt, sp.Le, sp.Gt, sp.Ge]
DIVISORS = [sp.Integer(2), sp.Integer(3), S]


@st.composite
def _exprs(draw, depth: int = 2):
    """Small terms over M > 0, K and S > 0 with quotients, Mod, floor and ceiling."""
    form = draw(st.integers(0, 7 if depth > 0 else 1))
    if form == 0:
        return draw(st.sampled_from([M, K, S]))
    if form == 1:
        return sp.Integer(draw(st.integers(-2, 4)))
    a = draw(_exprs(depth - 1))
    c = draw(st.sampled_from(DIVISORS))
    if form == 2:
        return a + draw(_exprs(depth - 1))
    if form == 3:
        return a * draw(_exprs(depth - 1))
    if form == 4:
        return a / c
    if form == 5:
        return sp.Mod(a, c)
    if form == 6:
        return sp.floor(a / c)
    return sp.ceiling(a / c)


@st.composite
def _claims(draw):
    """``(claim, facts)``: half of the claims bound ``Mod`` of a quotient by a constant (true
    for integers, false for some rationals: where a floor reading goes wrong)."""
    rel = draw(st.sampled_from(RELS))
    if draw(st.booleans()):
        inner = draw(_exprs()) / draw(st.sampled_from(DIVISORS))
        top = draw(st.sampled_from([sp.Integer(1), sp.Integer(2), sp.Integer(3), S]))
        claim = rel(sp.Mod(inner, top), draw(st.integers(0, 2)))
    else:
        claim = rel(draw(_exprs()), draw(_exprs()))
    pool = [
        sp.Eq(sp.Mod(M, 2), 0),
        sp.Eq(sp.Mod(M, 2), 1),
        sp.Eq(sp.Mod(K, S), 0),
        sp.Le(M, 6),
        sp.Ge(K, 0),
        sp.Eq(sp.Mod(M, S), 0),
    ]
    facts = tuple(draw(st.lists(st.sampled_from(pool), max_size=2, unique=True)))
    if draw(st.booleans()):
        facts += (draw(st.sampled_from(RELS))(draw(_exprs(1)), draw(_exprs(1))),)
    return claim, tuple(f for f in facts if not isinstance(f, sp.logic.boolalg.BooleanAtom))


@settings(max_examples=40, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(_claims())
def test_encoder_verdicts_agree_with_exhaustive_evaluation(pair: tuple) -> None:
    claim, facts = pair
    if isinstance(claim, sp.logic.boolalg.BooleanAtom):
        return
    try:
        po = _verdict(claim, facts, timeout_ms=400)
    except LayoutError:
        return  # a term the encoder refuses (a bare rational): no verdict at all
    if po.verdict in ("unsat", "vacuous"):
        # proved (or no point at all): the claim holds wherever the facts do
        assert check_decision(Decision(True, "z3"), claim, facts, radius=8) == [], (claim, facts)
    try:
        ok = sx.implied(claim, facts, timeout_ms=400)
    except LayoutError:
        return
    if ok:
        assert check_decision(Decision(True, "z3"), claim, facts, radius=8) == [], (claim, facts)
