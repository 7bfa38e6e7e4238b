"""Composition's leaf walk and overlap check at every rank of A: the induction on the real
step code (proofs/catalog/composition_fold.py), the opaque state and labels, the
corollaries built on it, and planted bugs in the new steps."""

from __future__ import annotations

import random
import types
from pathlib import Path

import pytest

sp = pytest.importorskip("sympy")
z3 = pytest.importorskip("z3")

from layoutproof import Layout, ops  # noqa: E402
from layoutproof.errors import InadmissibleError, LayoutError  # noqa: E402
from layoutproof.proofs import symexec as sx  # noqa: E402
from layoutproof.proofs.catalog import composition_fold as cf  # noqa: E402
from layoutproof.proofs.catalog import composition_leaf as cl  # noqa: E402
from layoutproof.proofs.catalog import get  # noqa: E402
from layoutproof.proofs.catalog import symbolic as cs  # noqa: E402
from layoutproof.proofs.catalog.induction import Head, HeadRead  # noqa: E402
from layoutproof.symbolic import symops  # noqa: E402
from layoutproof.verify import postcondition  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SYMOPS = REPO / "algebra" / "symbolic" / "symops.py"


def _symops_with(original: str, replacement: str) -> types.ModuleType:
    """symops with one snippet replaced (a planted bug), as its own module."""
    src = SYMOPS.read_text()
    assert src.count(original) == 1, original
    mod = types.ModuleType("layoutproof._symops_p5_mutant")
    mod.__package__ = "layoutproof.symbolic"
    exec(compile(src.replace(original, replacement), "<symops mutant>", "exec"), mod.__dict__)
    return mod


# ----------------------------------------------------------------------------- the induction
@pytest.mark.slow
def test_every_fold_obligation_is_proved_and_not_vacuous():
    results = cs.prove("fold", cf.fold_instances())
    bad = [(r.claim, r.status, r.reason) for r in results if r.status != "proved"]
    assert not bad, bad
    for r in results:
        assert r.obligations and all(o.verdict == "unsat" for o in r.obligations), r.claim
        assert "(0 on infeasible paths)" in r.notes[0], r.notes  # every path's context is satisfiable
    assert cf.fold_label_ok([i.label for i in cf.fold_instances()])


def test_compose_leaf_is_the_fold_of_its_step():
    """On integers: the trivial leaves, then compose_leaf_step over Â's modes below the last,
    compose_leaf_close and compose_leaf_finish give exactly compose_leaf's result (or its
    refusal)."""
    rng = random.Random(5)

    def fold(As, Ad, n, r):
        if n == 1:
            return [1], [0], {}
        if r == 0:
            return [n], [0], {}
        if r < 0:
            raise InadmissibleError("negative", condition="non-negative strides of B")
        state = ((), (), (), n, r)
        for i in range(len(As) - 1):
            state = symops.compose_leaf_step(state, i, As[i], Ad[i])
        return symops.compose_leaf_finish(symops.compose_leaf_close(state, Ad[-1]))

    for _ in range(3000):
        k = rng.randint(1, 4)
        As = [rng.choice((1, 2, 3, 4, 6, 8)) for _ in range(k)]
        Ad = [rng.randint(-3, 9) for _ in range(k)]
        n, r = rng.choice((1, 2, 3, 4, 6, 8, 12)), rng.randint(-1, 12)
        try:
            want = symops.compose_leaf(As, Ad, n, r, -1, None)
        except LayoutError as e:
            with pytest.raises(type(e)):
                fold(As, Ad, n, r)
            continue
        assert fold(As, Ad, n, r) == want, (As, Ad, n, r)


def test_the_check_is_the_fold_of_its_sums_and_mode_checks():
    rng = random.Random(7)
    for _ in range(2000):
        k = rng.randint(2, 4)
        As = [rng.randint(1, 9) for _ in range(k)]
        leaves = [
            ([1], [0], {i: rng.randint(0, 8) for i in range(k - 1) if rng.random() < 0.6}) for _ in range(3)
        ]
        used: dict = {}
        for lf in leaves:
            used = symops.footprint_sum_step(used, lf[2])
        want_ok = all(u < As[i] for i, (u, c) in used.items() if c >= 2)
        assert used == {
            i: (sum(lf[2][i] for lf in leaves if i in lf[2]), sum(1 for lf in leaves if i in lf[2]))
            for i in {j for lf in leaves for j in lf[2]}
        }
        try:
            symops.check_leaves_disjoint(As, leaves, None)
            assert want_ok
        except InadmissibleError:
            assert not want_ok


def test_labels_and_extents_are_opaque():
    label = cf.ModeLabel()
    assert f"{label}" == "i" and str(label) == "i"
    for use in (lambda x: x == 0, lambda x: x + 1, hash, int, lambda x: x < 1, lambda x: [0][x]):
        with pytest.raises(HeadRead):
            use(label)
    only = cf.OnlyIndex(3, 7)
    assert only[3] == 7
    for use in (lambda x: x[2], len, list, lambda x: x[-1]):
        with pytest.raises(HeadRead):
            use(only)


def test_a_step_that_reads_its_label_or_state_is_unknown_not_proved():
    """The opaque state and label are what make 'the step reads only rest_n, rest_r and its
    mode' machine-checked: a step that compares its index (or reads the finished modes) is
    refused on its path, and the instance (strict) is unknown."""

    def peeking_index(state, i, s, d, k=-1, conc=None):
        if i == 0:  # reads the index
            return state
        return symops.compose_leaf_step(state, i, s, d, k, conc)

    def peeking_state(state, i, s, d, k=-1, conc=None):
        if state[0]:  # reads the finished extents
            return state
        return symops.compose_leaf_step(state, i, s, d, k, conc)

    for bad in (peeking_index, peeking_state):
        (r,) = cs.prove("peek", [cf.step_instance(bad)])
        assert r.status == "unknown" and "refused" in r.reason, (r.status, r.reason)


# ----------------------------------------------------------------------------- planted bugs
STEP_MUTANTS = {
    # after a take the stride left stays rest_r instead of 1 (the next mode starts at stride 1)
    "stride-left-kept": (
        "return ms + (take,), md2, occ2, xdiv(rest_n, take), 1",
        "return ms + (take,), md2, occ2, xdiv(rest_n, take), rest_r",
    ),
    # a divisible leaf takes one point more than the mode holds
    "take-m-plus-1": (
        "        else:\n            take = m\n",
        "        else:\n            take = _num(m + 1)\n",
    ),
    # a skipped mode leaves the stride undivided
    "skip-undivided": (
        "return ms, md, occ, rest_n, xdiv(rest_r, s)",
        "return ms, md, occ, rest_n, rest_r",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(STEP_MUTANTS))
def test_a_planted_bug_in_the_step_is_refuted_on_integers(name):
    bad = _symops_with(*STEP_MUTANTS[name])
    inst = cf.step_instance(bad.compose_leaf_step)
    (r,) = cs.prove("planted", [inst])
    assert r.status == "refuted", (r.status, r.reason)
    cex = r.counterexample
    assert "path:" in cex.detail and cex.assignment
    # the refutation's path is one of the step's paths, and the confirmation -- the mutant
    # step run on the assignment's integers -- reproduces the failure
    path = next(
        p for p in sx.explore(inst.fn, inst.assumptions)[0] if f"path: {p.condition_text()}" in cex.detail
    )
    assert inst.confirm(cex.assignment, path) is not None
    vals = {k: int(cex.assignment.get(k + "0", 1)) for k in ("rn", "rr", "s", "d", "N", "P", "r")}
    assert cf.step_violation(bad.compose_leaf_step, vals, "mutant") is not None
    assert cf.step_violation(symops.compose_leaf_step, vals, "real") is None  # the real step is fine there


def test_the_stride_left_mutant_breaks_a_concrete_composition():
    """On the concrete path: A = (8,4):(1,100), B = 8:2 -- the leaf takes 4 points of mode 0 at
    stride 2, the 2 left start at stride 1 of the last mode; the mutant reads them at stride 2."""
    bad = _symops_with(*STEP_MUTANTS["stride-left-kept"])
    A, B = Layout((8, 4), (1, 100)), Layout(8, 2)
    good = symops.composition(A, B)
    assert good == ops.composition(A, B) and postcondition("composition", good, A, B).status != "refuted"
    R = bad.composition(A, B)
    assert str(R) == "(4,2):(2,200)" and postcondition("composition", R, A, B).status == "refuted"


@pytest.mark.slow
def test_a_mode_check_that_needs_three_users_is_refuted():
    """The overlap check skipping modes with two users: the per-mode closure is refuted, and
    the mutant check accepts the model's footprint sum at or past the extent."""
    bad = _symops_with("    if users < 2:\n        return\n", "    if users < 3:\n        return\n")
    results = cs.prove("closure", cf.mode_check_instances(bad.check_mode_disjoint))
    two = next(r for r in results if "2 users" in r.claim)
    assert two.status == "refuted", (two.status, two.reason)
    asg = two.counterexample.assignment
    assert asg["u0"] >= asg["S0"]
    bad.check_leaves_disjoint([asg["S0"], 1], [([1], [0], {0: asg["u0"]}), ([1], [0], {0: 0})], None)
    with pytest.raises(InadmissibleError):
        symops.check_leaves_disjoint([asg["S0"], 1], [([1], [0], {0: asg["u0"]}), ([1], [0], {0: 0})], None)
    assert all(r.status == "proved" for r in cs.prove("closure", cf.mode_check_instances()))


def test_a_sums_step_that_forgets_a_user_is_refuted():
    def bad_step(used, occ):
        out = dict(used)
        for i, dmax in occ.items():
            u, users = out.get(i, (0, 0))
            out[i] = (u + dmax, users)  # the count is not incremented
        return out

    (r,) = cs.prove("sums", cf.sum_step_instances(bad_step))
    assert r.status != "proved"


# ----------------------------------------------------------------------------- the theorems
def test_the_catalog_rows_claim_every_rank():
    for tid in (
        "sym.composition-post",
        "sym.composition-size",
        "sym.logical-divide-def",
        "sym.logical-divide-size",
        "sym.logical-product-def",
        "sym.logical-product-size",
        "sym.composition-associative",
        "sym.composition-right-identity",
    ):
        t = get(tid)
        assert "every rank" in t.family, tid
    # the base of the induction over Â's modes is the whole real walk at A rank 1
    labels = [i.label for i in cl.every_rank_instances()]
    assert labels[0] == "leaf lemma + step, A rank 1" and cf.fold_label_ok(labels)
    assoc = get("sym.composition-associative")
    assert "A, B, C of every rank" in assoc.family and "extension semantics" in assoc.statement


@pytest.mark.slow
def test_associativity_rests_on_the_every_rank_induction_and_cvc5_agrees():
    pytest.importorskip("cvc5")
    from layoutproof.proofs.runner import cross_check_outcome
    from layoutproof.proofs.theorem import evaluate

    o = evaluate(get("sym.composition-associative"))
    assert o.status == "proved", o.message
    purposes = " ".join(s["purpose"] for s in o.smt2)
    assert "leaf fold: step" in purposes and "overlap check: one mode" in purposes
    entries = cross_check_outcome(o, "cvc5", 20000)
    assert entries and len(entries) == len(o.smt2)
    assert all(e["agree"] is True for e in entries), [e for e in entries if e["agree"] is not True]


def test_head_is_what_the_step_appends_to():
    """The step appends to the opaque parts and hands them back (no copy, no read)."""
    ms, md, occ, rn2, rr2 = symops.compose_leaf_step((Head("MS"), Head("MD"), Head("OCC"), 6, 1), 0, 2, 3)
    assert isinstance(ms, Head) and ms.tail == (2,) and md.tail == (3,) and occ.tail == ((0, 1),)
    assert (rn2, rr2) == (3, 1)
