"""Composition for every rank of B (induction over B's leaves;
proofs/catalog/composition_induction.py).  The exactness of its refusals is tested in
tests/proofs/test_composition_exactness.py."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

sp = pytest.importorskip("sympy")
z3 = pytest.importorskip("z3")

from layoutproof import Layout  # noqa: E402
from layoutproof.proofs import symexec as sx  # noqa: E402
from layoutproof.proofs.catalog import composition_induction as ci  # noqa: E402
from layoutproof.proofs.catalog import composition_leaf as cl  # noqa: E402
from layoutproof.proofs.catalog import get  # noqa: E402
from layoutproof.proofs.catalog import symbolic as cs  # noqa: E402
from layoutproof.verify import postcondition  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SYMOPS = REPO / "algebra" / "symbolic" / "symops.py"


def _symops_with(original: str, replacement: str, *more: str) -> types.ModuleType:
    """symops with snippets replaced (a planted bug), as its own module: ``original`` by
    ``replacement``, then each further pair of ``more`` likewise."""
    src = SYMOPS.read_text()
    pairs = [(original, replacement)] + list(zip(more[::2], more[1::2]))
    for a, b in pairs:
        assert src.count(a) == 1, a
        src = src.replace(a, b)
    mod = types.ModuleType("layoutproof._symops_p1_mutant")
    mod.__package__ = "layoutproof.symbolic"
    exec(compile(src, "<symops mutant>", "exec"), mod.__dict__)
    return mod


# ----------------------------------------------------------------------------- the induction
def test_leaf_lemma_and_step_are_proved_on_every_path():
    for inst in cl.leaf_instances((1, 2)):
        (r,) = cs.prove("leaf", [inst])
        assert r.status == "proved", str(r)
        assert r.obligations and all(o.verdict == "unsat" for o in r.obligations)


def test_the_leaf_walk_is_the_one_composition_calls():
    from layoutproof.symbolic import symops

    assert cl.leaf_walk() is symops.compose_leaf
    # composition = one walk per leaf, then the overlap check: a B of two leaves gives the
    # two walks' results side by side
    M = sp.Symbol("M", integer=True, positive=True)
    A = Layout((4, M), (1, 16))
    B = Layout((2, 3), (1, 4))
    R = symops.composition(A, B)
    As, Ad = symops.coalesce_flat((4, M), (1, 16), keep_last=True)
    parts = [
        symops.compose_leaf(As, Ad, n, r, k, lambda a: None) for k, (n, r) in enumerate([(2, 1), (3, 4)])
    ]
    assert [lf[0][0] for lf in parts] == list(R.shape) and [lf[1][0] for lf in parts] == list(R.stride)


def test_a_wrong_footprint_fails_the_leaf_lemma():
    """The walk reporting a footprint one short (occ[i] too small) breaks the lemma that
    closes the induction: refuted with a model the integer post-condition does not refute,
    so the theorem is unknown or refuted -- never proved."""
    bad = _symops_with(
        "occ2 = occ + ((i, _num(rest_r * (take - 1))),)", "occ2 = occ + ((i, _num(rest_r * (take - 2))),)"
    )
    A, n, r = cl.leaf_operands(2)
    inst = cl.leaf_instance(A, n, r, "lemma")
    inst = cs.Instance(
        inst.label,
        lambda: _run_with(bad, A, n, r),
        inst.build,
        inst.confirm,
    )
    (res,) = cs.prove("leaf lemma", [inst])
    assert res.status != "proved", str(res)


def _run_with(mod, A, n, r):
    fa, da = sx.flat_modes(A)
    As, Ad = mod.coalesce_flat(tuple(fa), tuple(da), keep_last=True)
    ms, md, occ = mod.compose_leaf(As, Ad, n, r, -1, cl.integer_composition(A, Layout.trusted(n, r)))
    return As, Ad, cs.lay(ms, md), dict(occ)


def test_a_planted_bug_in_the_leaf_walk_refutes_the_leaf_lemma():
    """A wrong stride for the mode a leaf takes: the lemma (R_leaf(c) == Â(c r)) is refuted
    with an assignment that the integer post-condition confirms."""
    bad = _symops_with(
        "md2 = md + (_num(rest_r * d),)",
        "md2 = md + (_num(d),)",
    )
    A, n, r = cl.leaf_operands(2)
    inst = cl.leaf_instance(A, n, r, "lemma")
    inst = cs.Instance(inst.label, lambda: _run_with(bad, A, n, r), inst.build, inst.confirm)
    (res,) = cs.prove("leaf lemma", [inst])
    assert res.status == "refuted", str(res)
    asg = res.counterexample.assignment
    A2 = A.subs(asg)
    B2 = Layout.trusted(n, r).subs(asg)
    ms, md, _occ = bad.compose_leaf(
        *bad.coalesce_flat(*(tuple(x) for x in sx.flat_modes(A2)), keep_last=True),
        B2.shape,
        B2.stride,
        -1,
        lambda a: None,
    )
    R2 = Layout(ms[0], md[0]) if len(ms) == 1 else Layout(tuple(ms), tuple(md))
    assert postcondition("composition", R2, A2, B2).status == "refuted"


# ----------------------------------------------------------------------------- the rows, the closure
def test_catalog_rows():
    for tid in ("sym.composition-post", "sym.composition-size", "sym.composition-exact"):
        t = get(tid)
        assert t.expected == "proved" and "every rank" in t.family or tid.endswith("exact")


def test_every_obligation_rechecked_by_cvc5():
    pytest.importorskip("cvc5")
    from layoutproof.proofs.runner import cross_check_outcome
    from layoutproof.proofs.theorem import evaluate

    for tid in ("sym.composition-post",):  # sym.composition-exact: tests/proofs/test_composition_exactness.py
        o = evaluate(get(tid))
        assert o.status == "proved", o.message
        entries = cross_check_outcome(o, "cvc5", 20000)
        assert entries and len(entries) == len(o.smt2)
        assert all(e["agree"] is True for e in entries), [e for e in entries if e["agree"] is not True]


def test_normalize_derives_a_unit_divisor():
    """Bd0 | Ad0 and Ad0 | Bd0*(Bs0-1) + 1 force Bd0 == 1 (logical_product's hard path)."""
    a, b, s = sp.symbols("Ad0 Bd0 Bs0", integer=True, positive=True)
    subs, _extra = sx.normalize((sp.Eq(sp.Mod(b * (s - 1) + 1, a), 0), sp.Eq(sp.Mod(a, b), 0)))
    assert subs[b] == 1
    # nothing is derived without the second fact
    subs, _extra = sx.normalize((sp.Eq(sp.Mod(b * (s - 1) + 1, a), 0),))
    assert b not in subs


def test_the_overlap_check_closes_the_induction():
    for r in cs.prove("closure", ci.closure_instances((2, 3))):
        assert r.status == "proved", str(r)


def test_a_dropped_overlap_check_refutes_the_closure():
    """tools/mutation.py's symops-drop-disjointness: the closure is refuted, and the model's
    integers reproduce it (the mutant check accepts footprints that add up past the extent)."""
    bad = _symops_with("    if len(leaves) > 1 and len(As) > 1:\n", "    if False:\n")
    (r,) = cs.prove("closure", [ci.closure_instance(2, [[0], [0]], check=bad.check_leaves_disjoint)])
    assert r.status == "refuted", str(r)
    asg = r.counterexample.assignment
    assert asg["o0_0"] + asg["o1_0"] >= asg["As0"]


def test_normalize_binds_a_multiple_of_an_exact_quotient():
    """m | Bs0 with m = As0*As1/Bd0 exact on the path (Bd0 | As0*As1): Bs0 := m*k, so the
    leaf's extents (m, Bd0*Bs0/(As0*As1)) become (m, k); without the exactness fact nothing
    is bound."""
    a0, a1, b, s = sp.symbols("As0 As1 Bd0 Bs0", integer=True, positive=True)
    m = a0 * a1 / b
    subs, _ = sx.normalize((sp.Eq(sp.Mod(a0 * a1, b), 0), sp.Eq(sp.Mod(s, m), 0)))
    k = next(iter(subs[s].free_symbols - {a0, a1, b}))
    assert sp.simplify(subs[s] - m * k) == 0
    assert sp.cancel((b * s / (a0 * a1)).xreplace(subs)) == k
    assert sx.normalize((sp.Eq(sp.Mod(s, m), 0),))[0] == {}
