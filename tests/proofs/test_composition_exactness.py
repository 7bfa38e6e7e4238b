"""Exactness of composition's refusals (issue 15; proofs/catalog/composition_exact.py): shape
divisibility, the witness lemma, overlap refusals with any number of leaves, and the stride
divisibility left to the integer path."""

from __future__ import annotations

import types
from pathlib import Path

import pytest

sp = pytest.importorskip("sympy")
z3 = pytest.importorskip("z3")

from layoutproof import Layout, ops  # noqa: E402
from layoutproof.errors import InadmissibleError, UndecidableConditionError  # noqa: E402
from layoutproof.proofs import symexec as sx  # noqa: E402
from layoutproof.proofs.catalog import composition_exact as ce  # noqa: E402
from layoutproof.proofs.catalog import composition_leaf as cl  # noqa: E402
from layoutproof.proofs.catalog import get  # noqa: E402
from layoutproof.proofs.catalog import symbolic as cs  # noqa: E402
from layoutproof.symbolic import symops  # noqa: E402
from layoutproof.verify import postcondition  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SYMOPS = REPO / "algebra" / "symbolic" / "symops.py"


def _symops_with(*pairs: str) -> types.ModuleType:
    """symops with snippets replaced (a planted bug), as its own module: each (original,
    replacement) pair of ``pairs`` in turn; every original must occur once."""
    src = SYMOPS.read_text()
    for a, b in zip(pairs[::2], pairs[1::2]):
        assert src.count(a) == 1, a
        src = src.replace(a, b)
    mod = types.ModuleType("layoutproof._symops_p6_mutant")
    mod.__package__ = "layoutproof.symbolic"
    exec(compile(src, "<symops mutant>", "exec"), mod.__dict__)
    return mod


def _ext_eval(As, Ad, x):
    off = 0
    for s, d in zip(As[:-1], Ad[:-1]):
        off += (x % s) * d
        x //= s
    return off + x * Ad[-1]


# ----------------------------------------------------------------------------- the leaf walk
@pytest.mark.slow
def test_shape_refusals_and_the_witness_lemma_are_proved():
    (r,) = cs.prove("exact", ce.exact_instances((2,)))
    assert r.status == "proved", str(r)
    # the rank-2 walk has a shape-divisibility refusal and returning paths with a footprint
    assert len(r.obligations) >= 2 and all(o.verdict == "unsat" for o in r.obligations)


@pytest.mark.slow
def test_the_witness_lemma_reads_two_footprints_at_a_rank_3():
    """A rank 3: some returning paths have footprints in two modes of Â, the second one's
    witness coordinate a product of the first result extent and (its own extent - 1)."""
    (r,) = cs.prove("witness", ce.witness_instances((3,)))
    assert r.status == "proved", str(r)
    # on integers: Â = (4,6,5):(1,10,100), the leaf 12:2 takes 2 points of mode 0 (footprint 2)
    # and 6 of mode 1 (footprint 5); the witnesses are c = 1 and c = 2 * (6 - 1) = 10
    As, Ad = symops.coalesce_flat((4, 6, 5), (1, 10, 100), keep_last=True)
    ms, md, occ = symops.compose_leaf(As, Ad, 12, 2, -1, lambda a: None)
    assert occ == {0: 2, 1: 5} and ms == [2, 6]
    co = ce.witness_coordinates(ms, occ)
    assert co == {0: ([], 2), 1: ([2], 6)}
    assert [_ext_eval(As, [1, 1000, 10**6], 2 * c) for c in (1, 10)] == [2, 5000]  # digits 2 e_0, 5 e_1


def test_witness_coordinates_follow_the_result_modes():
    co = ce.witness_coordinates([2, 6, 7], {0: 2, 1: 5})
    assert co == {0: ([], 2), 1: ([2], 6)}
    with pytest.raises(sx.NoPlacement):
        ce.witness_coordinates([2], {0: 1, 1: 1})


@pytest.mark.slow
def test_first_break_lemma_holds_on_small_layouts():
    cases, bad = ce.first_break_lemma_check(extents=(1, 2, 3, 4), rank=3, strides=tuple(range(-2, 3)))
    assert cases > 1000 and bad == []


@pytest.mark.slow
def test_a_walk_that_refuses_too_often_fails_exactness_with_a_concrete_assignment():
    """A wrong divisibility test in the shape stage (m*m | rest_n instead of m | rest_n, in
    the test and in the condition it then requires) refuses where m divides rest_n:
    exactness is refuted, and at the model's integers the (exact) integer composition
    returns a layout meeting the post-condition."""
    bad = _symops_with(
        "even = dvd(m, rest_n)",
        "even = dvd(_num(m * m), rest_n)",
        "cond = sp.Or(sp.Le(rest_n, m), _dvd_cond(m, rest_n))",
        "cond = sp.Or(sp.Le(rest_n, m), _dvd_cond(m * m, rest_n))",
    )
    A, n, r = cl.leaf_operands(2)
    (res,) = cs.prove("exact", [ce.exact_instance(A, n, r, walk=bad.compose_leaf)])
    assert res.status == "refuted", str(res)
    asg = res.counterexample.assignment
    A2, B2 = A.subs(asg), Layout.trusted(n, r).subs(asg)
    R = ops.composition(A2, B2)
    assert postcondition("composition", R, A2, B2).status != "refuted"
    assert "path:" in res.counterexample.detail


@pytest.mark.slow
def test_a_footprint_one_too_large_refutes_the_witness_lemma():
    """A planted bug: the walk reports rest_r * take instead of rest_r * (take - 1) (the leaf
    lemma's bound delta <= occ still holds: only the witness lemma sees it).  Refuted, and at
    the model's integers the mutant walk reports a footprint that no coordinate of the leaf
    reaches, while the real walk's footprint is reached."""
    bad = _symops_with(
        "occ2 = occ + ((i, _num(rest_r * (take - 1))),)", "occ2 = occ + ((i, _num(rest_r * take)),)"
    )
    A, n, r = cl.leaf_operands(2)
    (res,) = cs.prove("witness", [ce.witness_instance(A, n, r, walk=bad.compose_leaf)])
    assert res.status == "refuted", str(res)
    asg = res.counterexample.assignment
    A2, B2 = A.subs(asg), Layout.trusted(n, r).subs(asg)
    fs = tuple(int(x) for x in A2.shape)
    fd = tuple(int(x) for x in A2.stride)
    ni, ri = int(B2.shape), int(B2.stride)
    As, Ad = symops.coalesce_flat(fs, fd, keep_last=True)
    _ms, _md, occ = bad.compose_leaf(As, Ad, ni, ri, -1, lambda a: None)
    _ms, _md, good = symops.compose_leaf(As, Ad, ni, ri, -1, lambda a: None)
    (i, o), (_, og) = next(iter(occ.items())), next(iter(good.items()))
    P = 1
    for s in As[:i]:
        P *= s
    assert not any(j * ri == o * P for j in range(ni))
    assert any(j * ri == og * P for j in range(ni))


@pytest.mark.slow
def test_the_fold_step_holds_at_every_rank():
    """The shape refusals and the witness lemma as a step of the leaf fold (opaque finished
    modes, opaque label): every refusing and every appending path of the real compose_leaf_step
    is proved."""
    (r,) = cs.prove("fold step", [ce.step_instance()])
    assert r.status == "proved", str(r)
    assert len(r.obligations) >= 2 and all(o.verdict == "unsat" for o in r.obligations)


@pytest.mark.slow
def test_a_shape_test_refusing_too_often_is_refuted_on_the_fold_step():
    """The m*m | rest_n bug in the fold's step: refuted at every rank, and the model's integers
    reproduce it (the mutant step refuses where m divides rest_n; the real step takes m)."""
    bad = _symops_with(
        "even = dvd(m, rest_n)",
        "even = dvd(_num(m * m), rest_n)",
        "cond = sp.Or(sp.Le(rest_n, m), _dvd_cond(m, rest_n))",
        "cond = sp.Or(sp.Le(rest_n, m), _dvd_cond(m * m, rest_n))",
    )
    (r,) = cs.prove("fold step", [ce.shape_step_instance(step=bad.compose_leaf_step)])
    assert r.status == "refuted", str(r)
    asg = r.counterexample.assignment
    rn, rr, s, d = (asg.get(k + "0", 1) for k in ("rn", "rr", "s", "d"))
    with pytest.raises(InadmissibleError):
        bad.compose_leaf_step(((), (), (), rn, rr), 0, s, d)
    ms = symops.compose_leaf_step(((), (), (), rn, rr), 0, s, d)[0]
    assert ms == (s // rr,) and rn % (s // rr) == 0


@pytest.mark.slow
def test_a_footprint_one_too_large_refutes_the_witness_step():
    """The same planted bug in the fold's step: refuted, and the model's integers reproduce it
    on the mutant step (its footprint is one rest_r past the digit of its last point)."""
    bad = _symops_with(
        "occ2 = occ + ((i, _num(rest_r * (take - 1))),)", "occ2 = occ + ((i, _num(rest_r * take)),)"
    )
    (r,) = cs.prove("witness step", [ce.witness_step_instance(step=bad.compose_leaf_step)])
    assert r.status == "refuted", str(r)
    asg = r.counterexample.assignment
    rn, rr, s, d = (asg.get(k + "0", 1) for k in ("rn", "rr", "s", "d"))
    ms, _md, occ, _a, _b = bad.compose_leaf_step(((), (), (), rn, rr), 0, s, d)
    good = symops.compose_leaf_step(((), (), (), rn, rr), 0, s, d)[2]
    assert occ[0][1] == rr * ms[0] != rr * (ms[0] - 1) == good[0][1]


# ----------------------------------------------------------------------------- overlap refusals
@pytest.mark.slow
def test_overlap_refusals_are_exact_for_two_three_and_four_leaves():
    """Every refusing path of the real check_leaves_disjoint (A rank 2 and 3, k = 2, 3, 4
    leaves) gets an obligation, and each is proved."""
    for a in (2, 3):
        for r in cs.prove("overlap", ce.overlap_instances((a,), (2, 3, 4))):
            assert r.status == "proved", str(r)
            assert len(r.obligations) >= 1, str(r)  # the refusing paths were reached


@pytest.mark.slow
@pytest.mark.parametrize("k", [2, 3])
def test_an_overlap_check_refusing_too_early_fails_with_a_reproducing_assignment(k):
    """A planted bug (refusing at u >= As_i - 1): the claim is refuted, and at the model's
    integers the mutant check refuses, the real one accepts, and at the leaves' witnesses the
    by-mode sum equals Â(B(c))."""
    bad = _symops_with(
        "sp.Lt(u, As[i]) if not _both_int(u, As[i]) else u < As[i]",
        "sp.Lt(u, As[i] - 1) if not _both_int(u, As[i]) else u < As[i] - 1",
    )
    (r,) = cs.prove("overlap", [ce.overlap_instance(2, k, check=bad.check_leaves_disjoint)])
    assert r.status == "refuted", str(r)
    asg = r.counterexample.assignment
    s = asg["As0"]
    os_ = [asg.get(f"o{j}_0", 0) for j in range(k)]
    assert sum(os_) == s - 1  # refused by the mutant, accepted by the real check
    leaves = [([1], [0], {0: o}) for o in os_]
    with pytest.raises(InadmissibleError):
        bad.check_leaves_disjoint([s, 1], leaves, None)
    symops.check_leaves_disjoint([s, 1], leaves, None)
    X = sum(os_)  # B(c) at the witnesses: digits sum(o) e_0, no carry
    assert (X % s) * asg["Ad0"] + (X // s) * asg["Ad1"] == X * asg["Ad0"]


@pytest.mark.slow
def test_overlap_refusals_at_one_mode_are_exact_at_every_rank():
    """The real footprint_sum_step fold and check_mode_disjoint at one mode (2-5 leaves, the
    next mode the last or not), and the keep step of coalesce_flat: all proved."""
    insts = ce.overlap_mode_instances((2, 3, 4, 5)) + [ce.coalesce_keep_instance()]
    for r in cs.prove("overlap at one mode", insts):
        assert r.status == "proved", str(r)
        assert r.obligations, str(r)


@pytest.mark.slow
def test_a_mode_check_refusing_too_early_is_refuted_at_every_rank():
    """The early-refusal bug planted in check_mode_disjoint: refuted at one mode, and the
    model's integers reproduce it (the mutant refuses a sum of As_i - 1, the real check does not)."""
    bad = _symops_with(
        "sp.Lt(u, As[i]) if not _both_int(u, As[i]) else u < As[i]",
        "sp.Lt(u, As[i] - 1) if not _both_int(u, As[i]) else u < As[i] - 1",
    )
    (r,) = cs.prove(
        "overlap at one mode", [ce.overlap_mode_instance(3, False, check=bad.check_mode_disjoint)]
    )
    assert r.status == "refuted", str(r)
    asg = r.counterexample.assignment
    S, os_ = asg["S0"], [asg.get(f"o{j}", 0) for j in range(3)]
    assert sum(os_) == S - 1
    with pytest.raises(InadmissibleError):
        bad.check_mode_disjoint([0, 0, 0, S], 3, sum(os_), 3, None)
    symops.check_mode_disjoint([0, 0, 0, S], 3, sum(os_), 3, None)


def test_the_prefix_argument_on_integers():
    """The statement's prefix argument, on integers: Â = (6, 5, *):(1, 100, 7), three leaves
    at mode 0 with footprints 2, 3, 4 (the check refuses: 9 >= 6); the shortest prefix reaching
    6 is the first three (2 + 3 + 4 = 9), and at their witnesses B(c) = 9 has digits (3, 1, 0),
    Â(B(c)) = 3 + 100 != 9 = the by-mode sum -- as real compositions: no layout is A o B."""
    As, Ad = [6, 5, 1], [1, 100, 7]
    leaves = [([1], [0], {0: o}) for o in (2, 3, 4)]
    with pytest.raises(InadmissibleError):
        symops.check_leaves_disjoint(As, leaves, None)
    assert _ext_eval(As, Ad, 9) == 103 != 9
    # the same on the integer composition: three leaves 3:1, 4:1, 5:1 of B (footprints 2, 3, 4)
    A = Layout((6, 5), (1, 100))
    with pytest.raises(InadmissibleError):
        ops.composition(A, Layout((3, 4, 5), (1, 1, 1)))


# ----------------------------------------------------------------------------- stride divisibility
@pytest.mark.slow
def test_stride_divisibility_refusals_are_not_decided_by_the_walk():
    """CuTe's stride divisibility is only sufficient: A = (4,8):(1,5), B = 4:6 fails it,
    yet a layout is A o B; the symbolic walk does not call that inadmissible."""
    A, B = Layout((4, 8), (1, 5)), Layout(4, 6)
    R = ops.composition(A, B)
    assert str(R) == "(2,2):(7,15)" and postcondition("composition", R, A, B).status != "refuted"
    D = sp.Symbol("D", integer=True, positive=True)
    with pytest.raises(UndecidableConditionError) as ei:
        symops.composition(Layout((4, 8), (1, D)), B)
    assert not isinstance(ei.value, InadmissibleError)


def test_past_the_exact_limit_an_undecided_leaf_is_no_refusal():
    """A leaf of 2^17 > EXACT_LIMIT points failing CuTe's stride divisibility: the integer
    composition cannot evaluate it, and the first break (j = 2) divides 2^17, so it decides
    nothing -- an UndecidableConditionError, never an InadmissibleError (rightly:
    (2, 2^16):(7, 15) reproduces j -> A(6 j)), and verify says unknown, not refuted. With an
    odd extent the first-break lemma refuses exactly (witness 2). Below the bound the refusal
    says it was decided by evaluation."""
    from layoutproof.verify import admissible

    A = Layout((4, 8), (1, 5))
    n = 2 * ops.EXACT_LIMIT
    with pytest.raises(UndecidableConditionError) as ei:
        ops.composition(A, Layout(n, 6))
    assert not isinstance(ei.value, InadmissibleError)
    assert ei.value.condition == "stride divisibility" and "undecided" in str(ei.value)
    assert admissible("composition", A, Layout(n, 6)).status == "unknown"
    with pytest.raises(InadmissibleError) as ej:
        ops.composition(A, Layout(n + 1, 6))
    assert ej.value.witness == 2 and "first-break lemma" in str(ej.value)
    assert admissible("composition", A, Layout(n + 1, 6)).status == "refuted"
    R = Layout((2, n // 2), (7, 15))
    for j in list(range(64)) + list(range(n - 64, n)):
        assert R(j) == _ext_eval([4, 8], [1, 5], 6 * j)
    with pytest.raises(InadmissibleError) as ei:
        ops.composition(A, Layout(8, 3))
    assert "decided by evaluation" in str(ei.value)


# ----------------------------------------------------------------------------- the catalog row
def test_catalog_row_names_this_module_and_every_leaf_count():
    t = get("sym.composition-exact")
    assert t.expected == "proved" and ce.SOURCE in t.references
    assert (
        t.family.startswith("every rank")
        and "k = 2-3" in t.family
        and "prefix argument" in t.statement.lower()
        and "EXACT_LIMIT" in t.statement
    )


@pytest.mark.slow
def test_every_obligation_rechecked_by_cvc5():
    pytest.importorskip("cvc5")
    from layoutproof.proofs.runner import cross_check_outcome
    from layoutproof.proofs.theorem import evaluate

    o = evaluate(get("sym.composition-exact"))
    assert o.status == "proved", o.message
    entries = cross_check_outcome(o, "cvc5", 20000)
    assert entries and len(entries) == len(o.smt2)
    assert all(e["agree"] is True for e in entries), [e for e in entries if e["agree"] is not True]
