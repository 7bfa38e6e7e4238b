"""The SMT-LIB2 export re-checked by a second solver: cvc5 reads every exported obligation
(true claims and false ones) and must give Z3's verdict -- unsat where the claim was
proved, sat where it was refuted."""

from __future__ import annotations

import pytest
import sympy as sp

from layoutproof import Layout, LayoutError, assuming, complement, composition, logical_divide, symbols
from layoutproof.symbolic import smt
from layoutproof.verify import ProofObligation, compatible, cross_check, equal, postcondition, to_smtlib
from layoutproof.verify.smtlib import run_cvc5

cvc5 = pytest.importorskip("cvc5")

M, N, K = symbols("M N K")


def _results():
    """(name, result, expected status) for claims whose obligations cvc5 decides quickly."""
    out = []
    A = Layout((M, N), (N, 1))
    with assuming("M % 4 == 0"):
        R = composition(A, Layout(4, 1))
        out.append(("composition 4:N", postcondition("composition", R, A, Layout(4, 1)), "proved"))
        out.append(
            (
                "composition 4:1 (false)",
                postcondition("composition", Layout(4, 1), A, Layout(4, 1)),
                "refuted",
            )
        )
    out.append(
        (
            "complement (2,K):(1,8)",
            postcondition("complement", complement(Layout(4, 2), 8 * K), Layout(4, 2), 8 * K),
            "proved",
        )
    )
    out.append(
        (
            "complement (2,K):(1,4) (false)",
            postcondition("complement", Layout((2, K), (1, 4)), Layout(4, 2), 8 * K),
            "refuted",
        )
    )
    with assuming("M % 64 == 0", "N % 32 == 0"):
        L = Layout((M, N), (1, M))
        out.append(
            (
                "logical_divide (64,32)",
                postcondition("logical_divide", logical_divide(L, (64, 32)), L, (64, 32)),
                "proved",
            )
        )
    out.append(
        (
            "equal under M == 8",
            equal(Layout((M, N), (1, M)), Layout((M, N), (1, 8)), assume="M == 8"),
            "proved",
        )
    )
    out.append(("transpose (false)", equal(Layout((M, N), (1, M)), Layout((M, N), (N, 1))), "refuted"))
    out.append(("(M,2):(2,1) == 2M:1 (false)", equal(Layout((M, 2), (2, 1)), Layout(2 * M, 1)), "refuted"))
    out.append(("(4,M) vs (M,4) (false)", equal(Layout((4, M), (M, 1)), Layout((M, 4), (1, M))), "refuted"))
    out.append(("compatible (false)", compatible((M, 8), (M, (2, N))), "refuted"))
    out.append(("compatible under N == 4", compatible((M, 8), (M, (2, N)), assume="N == 4"), "proved"))
    return out


RESULTS = _results()


@pytest.mark.parametrize("name, result, status", RESULTS, ids=[r[0] for r in RESULTS])
def test_cvc5_agrees_with_z3(name, result, status):
    assert result.status == status, result.explain()
    assert result.obligations, f"{name}: no Z3 obligation recorded"
    cc = cross_check(result, timeout_ms=20_000)
    assert cc.agree is True, str(cc)
    verdicts = [e["other"] for e in cc.entries]
    if status == "proved":
        assert set(verdicts) == {"unsat"}
    else:
        assert verdicts[-1] == "sat"


def test_a_dozen_obligations_true_and_false():
    obs = [o for _n, r, _s in RESULTS for o in r.obligations]
    assert len(obs) >= 12
    assert {o.verdict for o in obs} == {"sat", "unsat"}


def test_the_exported_file_is_one_cvc5_script():
    """to_smtlib's multi-obligation text (scripts separated by (reset)) parses as one input."""
    r = next(r for n, r, _s in RESULTS if n == "logical_divide (64,32)")
    answers = run_cvc5(to_smtlib(r), 20_000)
    assert answers == [o.verdict for o in r.obligations]


def test_raw_layoutproof_smt_obligations():
    true = smt.Obligation(sp.Eq(sp.Mod(M, 4), 0), (sp.Eq(sp.Mod(M, 8), 0),))
    false = smt.Obligation(sp.Eq(sp.Mod(M, 8), 0), (sp.Eq(sp.Mod(M, 4), 0),))
    floor = smt.Obligation(sp.Eq(sp.floor(M / 4) * 4 + sp.Mod(M, 4), M), ())
    assert run_cvc5(to_smtlib(true)) == ["unsat"]
    assert run_cvc5(to_smtlib(false)) == ["sat"]
    assert run_cvc5(to_smtlib(floor)) == ["unsat"]


def test_a_wrong_verdict_is_reported_as_disagreement():
    """cross_check can fail: an obligation recorded with the wrong verdict disagrees."""
    ob = smt.Obligation(sp.Eq(sp.Mod(M, 4), 0), (sp.Eq(sp.Mod(M, 8), 0),))
    lie = ProofObligation("M % 8 == 0 implies M % 4 == 0", ob.claim, ob.facts, "sat", ob)
    cc = cross_check(lie)
    assert cc.agree is False and not cc and "DISAGREES" in str(cc)
    with pytest.raises(LayoutError):
        cross_check(lie, solver="yices")
