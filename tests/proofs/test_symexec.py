"""Symbolic execution of the symbolic algebra and its per-path Z3 obligations."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

sp = pytest.importorskip("sympy")
z3 = pytest.importorskip("z3")

from layoutproof import Layout  # noqa: E402
from layoutproof.proofs import symexec as sx  # noqa: E402
from layoutproof.proofs.catalog import get, select  # noqa: E402
from layoutproof.proofs.catalog import symbolic as cs  # noqa: E402
from layoutproof.proofs.catalog import symbolic_binary as sb  # noqa: E402
from layoutproof.proofs.catalog import symbolic_unary as su  # noqa: E402
from layoutproof.proofs.theorem import evaluate  # noqa: E402
from layoutproof.symbolic import (  # noqa: E402
    assuming,
    decide,
    exploring,
    symops,  # noqa: E402
)

REPO = Path(__file__).resolve().parents[2]


def _syms(names: str, **kw):
    return sp.symbols(names, integer=True, **kw)


# ----------------------------------------------------------------------------- the hook
class _Always:
    def __init__(self, out: bool) -> None:
        self.out = out
        self.seen = []

    def branch(self, cond, decision=None):
        self.seen.append(cond)
        return self.out


def test_hook_turns_an_undecided_condition_into_a_choice_point():
    m = _syms("m", positive=True)
    c = sp.Ge(m, 2)
    assert decide(c).value is None  # no explorer: undecided
    ex = _Always(False)
    with exploring(ex):
        d = decide(c)
        assert d.value is False and d.method == "branch"
        # the outcome joined the facts: the same question is now decided without a choice
        assert decide(sp.Le(m, 1)).value is True
    assert ex.seen == [c]
    assert decide(c).value is None  # the facts are gone after the block


def test_hook_leaves_decided_conditions_and_explicit_facts_alone():
    m = _syms("m", positive=True)
    ex = _Always(True)
    with exploring(ex):
        assert decide(sp.Ge(m, 1)).value is True
        assert decide(sp.Ge(m, 5), facts=()).value is None  # explicit facts: no choice point
    assert ex.seen == []


def test_explore_enumerates_every_path_of_coalesce():
    s0, s1 = _syms("s0 s1", positive=True)
    d0, d1 = _syms("d0 d1")
    paths, complete = sx.explore(lambda: symops.coalesce(Layout.trusted((s0, s1), (d0, d1))))
    assert complete
    assert len(paths) == 5
    results = {str(p.value) for p in paths}
    assert {"1:0", "s1:d1", "s0:d0", "s0*s1:d0", "(s0,s1):(d0,d1)"} == results
    merged = next(p for p in paths if str(p.value) == "s0*s1:d0")
    assert sp.Eq(d0 * s0, d1) in merged.facts


def test_explore_respects_the_path_budget():
    L = cs.sym_layout("L", 3)
    paths, complete = sx.explore(lambda: symops.coalesce(L), max_paths=3)
    assert len(paths) == 3 and not complete


def test_inadmissible_paths_end_with_their_condition():
    s0 = _syms("s0", positive=True)
    d0 = _syms("d0")
    M = _syms("M", positive=True)
    with assuming(sp.Ne(s0, 1), sp.Lt(d0, 0)):
        paths, _ = sx.explore(lambda: symops.complement(Layout.trusted(s0, d0), M))
    assert paths and all(p.end in ("inadmissible", "refused") for p in paths)


# ----------------------------------------------------------------------------- encoding
def test_division_is_a_total_quotient_remainder_definition():
    a, b = _syms("a b", positive=True)
    enc = sx.Enc()
    q = enc.t(sp.floor(a / b))
    r = enc.t(sp.Mod(a, b))
    s = z3.Solver()
    s.add(*enc.defs, *enc.domains(), enc.t(a) == 17, enc.t(b) == 5)
    assert s.check() == z3.sat
    m = s.model()
    assert m.eval(q).as_long() == 3 and m.eval(r).as_long() == 2


def test_normalize_solves_divisibility_and_equalities():
    a, b, c = _syms("a b c", positive=True)
    subs, extra = sx.normalize((sp.Eq(sp.Mod(a, b), 0), sp.Eq(c, 1)))
    assert subs[c] == 1
    k = next(iter(subs[a].free_symbols - {b}))
    assert sp.simplify(subs[a] - b * k) == 0
    assert sp.Gt(subs[a], 0) in extra


def test_a_false_claim_is_not_proved():
    # coalesce's result with the merged stride replaced: the obligation must be sat
    L = cs.sym_layout("L", 2)
    inst = su.coalesce_function_instance(L)

    def wrong():
        R = symops.coalesce(L)
        fs, fd = sx.flat_modes(R)
        return Layout.trusted(fs[0], fd[0] + 1) if len(fs) == 1 else R

    bad = cs.Instance("rank 2", wrong, inst.build, inst.confirm)
    (r,) = cs.prove("wrong coalesce", [bad])
    assert r.status == "refuted"
    asg = r.counterexample.assignment
    assert asg and "path:" in r.counterexample.detail


# ----------------------------------------------------------------------------- theorems
def test_catalog_has_the_symbolic_theorems():
    from layoutproof.proofs.catalog import THEOREMS

    ids = {t.id for t in THEOREMS if t.group == cs.GROUP}
    for want in (
        "sym.coalesce-function",
        "sym.composition-post",
        "sym.complement-post",
        "sym.right-inverse-post",
        "sym.left-inverse-post",
        "sym.logical-divide-def",
        "sym.swizzle-involution",
    ):
        assert want in ids
    assert all(t.expected == "proved" and t.method == "z3" for t in THEOREMS if t.group == cs.GROUP)


@pytest.mark.parametrize("tid", ["sym.coalesce-function", "sym.right-inverse-post", "sym.swizzle-bijection"])
def test_symbolic_theorem_is_proved_with_obligations(tid):
    o = evaluate(get(tid))
    assert (o.status, o.verdict) == ("proved", "ok"), o.message
    assert o.smt2 and all(s["verdict"] == "unsat" for s in o.smt2)
    notes = [line for r in o.results for line in r.get("notes", [])]
    assert any("paths" in line or "bit-vector obligation" in line for line in notes), notes


def test_every_obligation_rechecked_by_cvc5():
    pytest.importorskip("cvc5")
    from layoutproof.proofs.runner import cross_check_outcome

    for tid in ("sym.coalesce-function", "sym.coalesce-extended", "sym.swizzle-involution"):
        o = evaluate(get(tid))
        entries = cross_check_outcome(o, "cvc5", 20000)
        assert entries and len(entries) == len(o.smt2)
        assert all(e["agree"] is True for e in entries), [e for e in entries if e["agree"] is not True]


def test_swizzle_with_overlapping_fields_is_refuted():
    (r,) = sb._swizzle_check("involution", separated=False)
    assert r.status == "refuted"
    a = r.counterexample.assignment
    assert abs(a["S"]) < a["B"]  # the fields overlap (S = 0 too: the XOR then clears them)


# ----------------------------------------------------------------------------- a planted bug
def _mutation(name: str):
    spec = importlib.util.spec_from_file_location("_lp_mutation_tool", REPO / "tools" / "mutation.py")
    mod = sys.modules.get(spec.name)
    if mod is None:
        mod = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = mod  # dataclasses look their module up
        spec.loader.exec_module(mod)
    return next(m for m in mod.MUTATIONS if m.name == name)


def _mutant_symops(name: str) -> types.ModuleType:
    m = _mutation(name)
    assert m.file == "algebra/symbolic/symops.py"
    src = (REPO / m.file).read_text()
    assert src.count(m.original) == 1
    mod = types.ModuleType("layoutproof._symops_mutant")
    mod.__package__ = "layoutproof.symbolic"
    exec(compile(src.replace(m.original, m.replacement), f"<mutant {name}>", "exec"), mod.__dict__)
    return mod


@pytest.mark.parametrize("mutant", ["symops-drop-need-shape", "symops-xdiv-inverted"])
def test_a_planted_bug_fails_a_universal_proof_with_a_reproducible_counterexample(mutant, monkeypatch):
    from layoutproof.verify import postcondition

    bad = _mutant_symops(mutant)
    monkeypatch.setattr(sb, "_ops", lambda: bad)
    A, B = cs.sym_layout("A", 2), cs.sym_layout("B", 1, positive=True)
    results = cs.prove("R(c) == A(B(c))", [sb.composition_instance(A, B)])
    ref = [r for r in results if r.status == "refuted"]
    assert ref, [str(r) for r in results]
    cex = ref[0].counterexample
    assert "path:" in cex.detail
    # the refutation was confirmed on integers: the path's result with the assignment
    # substituted fails the post-condition exhaustively (the detail quotes that check)
    assert cex.detail.startswith("composition") and ("gave" in cex.detail or "non-integer" in cex.detail)
    if mutant == "symops-drop-need-shape":  # a bug on the integer path too: the mutant, run on
        # the assignment's integers, returns a result that violates the post-condition
        A2, B2 = A.subs(cex.assignment), B.subs(cex.assignment)
        R2 = bad.composition(A2, B2)
        assert postcondition("composition", R2, A2, B2).status == "refuted"


# ----------------------------------------------------------------------------- selection
def test_filter_matches_ids_before_groups():
    t6 = select("T6")
    assert t6 and all("T6" in t.id.upper() for t in t6)
    assert {t.id for t in select("sym.swizzle")} == {
        "sym.swizzle-involution",
        "sym.swizzle-bijection",
        "sym.swizzle-block",
        "sym.swizzle-zzz-only",
        "sym.swizzle-xor-linear",
    }


def _mutant_module(name: str, modname: str) -> types.ModuleType:
    m = _mutation(name)
    src = (REPO / m.file).read_text()
    assert src.count(m.original) == 1
    mod = types.ModuleType(f"layoutproof._{modname}_mutant")
    mod.__package__ = "layoutproof"
    exec(compile(src.replace(m.original, m.replacement), f"<mutant {name}>", "exec"), mod.__dict__)
    return mod


@pytest.mark.parametrize(
    "mutant,kind",
    [("zipped-rest-order", "zipped"), ("tiled-not-unpacked", "tiled"), ("flat-regroup", "flat")],
)
def test_regrouping_mutants_fail_the_regroup_theorems(mutant, kind):
    bad = _mutant_module(mutant, "ops")
    (r,) = cs.prove("regroup", [sb._regroup(kind, impl=bad)])
    assert r.status == "refuted", str(r)
    (ok,) = cs.prove("regroup", [sb._regroup(kind)])
    assert ok.status == "proved"
    # the other tiler sizes the theorem runs (one to four tiled modes, with extra modes the
    # zipped mutant can misplace): the mutants fail, the real code passes
    for n, extra in ((1, 1), (3, 1), (4, 2)):
        (r,) = cs.prove("regroup", [sb._regroup(kind, extra, bad, n)])
        assert r.status == "refuted", (n, extra, str(r))
    for n, extra in ((1, 0), (3, 1), (4, 2)):
        (ok,) = cs.prove("regroup", [sb._regroup(kind, extra, None, n)])
        assert ok.status == "proved", (n, extra)


def test_cross_check_without_cvc5_is_a_usage_error(monkeypatch, capsys):
    import importlib.util as iu

    from layoutproof.proofs import cli as prove_cli

    real = iu.find_spec
    monkeypatch.setattr(iu, "find_spec", lambda name, *a: None if name == "cvc5" else real(name, *a))
    rc = prove_cli.main(["--filter", "sym.swizzle-bijection", "--cross-check", "cvc5", "--no-report"])
    assert rc == 2
    assert "cvc5" in capsys.readouterr().err


def test_heavy_theorems_wait_for_all(monkeypatch, capsys):
    from layoutproof.proofs import cli as prove_cli
    from layoutproof.proofs import runner

    seen = []
    monkeypatch.setattr(runner, "run", lambda ths, **kw: seen.extend(t.id for t in ths) or [])
    monkeypatch.setattr(prove_cli, "_emit_kernel", lambda d: 0)
    prove_cli.main(["--no-report", "-q"])
    assert "sym.logical-product-def" not in seen and "sym.coalesce-function" in seen
    assert "--all" in capsys.readouterr().err


def test_a_run_cut_by_a_time_budget_is_undecided_not_refused():
    from layoutproof.budget import BudgetExceeded

    def fn():
        raise BudgetExceeded("timeout: the time budget ran out")

    paths, complete = sx.explore(fn)
    assert [p.end for p in paths] == ["undecided"]
    (r,) = cs.prove("x", [cs.Instance("cut", fn, lambda cx: ([], z3.BoolVal(True)), lambda a, p: None)])
    assert r.status == "unknown"


def test_a_path_past_its_time_budget_is_unknown_with_reason_timeout(monkeypatch):
    import time

    from layoutproof import budget

    monkeypatch.setattr(sx, "PATH_SECONDS", 0.2)
    L = cs.sym_layout("L", 1)

    def slow_build(cx):  # stands for a SymPy simplification that does not end
        while True:
            time.sleep(0.01)
            budget.check()

    inst = cs.Instance("slow", lambda: symops.coalesce(L), slow_build, lambda a, p: None)
    (r,) = cs.prove("slow", [inst])
    assert r.status == "unknown" and r.reason.startswith("timeout"), r.reason

    def slow_op():
        while True:
            time.sleep(0.01)
            budget.check()

    paths, complete = sx.explore(slow_op)
    assert complete and [p.end for p in paths] == ["undecided"]
    assert "timeout" in str(paths[0].value)


@pytest.mark.parametrize(
    "mutant,theorem",
    [
        ("symops-ceil-div-floor", "complement-post"),
        ("symops-left-inverse-overlap", "left-inverse-post"),
        ("symops-left-inverse-overlap", "left-inverse-admissible-iff-chain"),
        ("symops-drop-need-chain", "complement-admissible-iff-chain"),
    ],
)
def test_planted_bugs_in_complement_and_left_inverse_fail_universal_proofs(mutant, theorem, monkeypatch):
    """A planted bug in the symbolic complement or left_inverse: the universal proof fails
    with the path condition and an assignment the integer check reproduces."""
    bad = _mutant_symops(mutant)
    monkeypatch.setattr(su, "_ops", lambda: bad)
    make = {
        "complement-post": lambda: su.complement_instance(cs._L(1, "pos"), cs._M()),
        "left-inverse-post": lambda: su.left_inverse_instance(cs._L(2, "pos")),
        "left-inverse-admissible-iff-chain": lambda: su.left_inverse_chain_instance(cs._L(2, "pos")),
        "complement-admissible-iff-chain": lambda: su.complement_chain_instance(cs._L(2, "pos"), cs._M()),
    }[theorem]
    inst = make()
    (r,) = cs.prove(theorem, [inst])
    assert r.status == "refuted", str(r)
    cex = r.counterexample
    assert "path:" in cex.detail and cex.assignment
    path = next(
        p for p in sx.explore(inst.fn, inst.assumptions)[0] if f"path: {p.condition_text()}" in cex.detail
    )
    # the reproduction: the confirmation run again on the assignment's integers fails
    assert inst.confirm(cex.assignment, path) is not None
    if theorem.endswith("admissible-iff-chain"):
        op = "left_inverse" if theorem.startswith("left") else "complement"
        L2 = cs._L(2, "pos").subs(cex.assignment)
        assert not cs.int_chain(L2, op)  # not admissible, yet the mutant returned


def test_a_strict_instance_makes_a_refused_path_unknown():
    from layoutproof.errors import MalformedLayoutError

    s0 = _syms("s0", positive=True)

    def fn():
        if symops.eq(s0, 1) is True:  # a choice point: one branch refuses
            raise MalformedLayoutError("refused on this branch")
        return Layout.trusted(s0, 1)

    def build(cx):
        return [], z3.BoolVal(True)

    (lax,) = cs.prove("x", [cs.Instance("lax", fn, build, lambda a, p: None)])
    assert lax.status == "proved"  # a refused path returns nothing: nothing to prove there
    (strict,) = cs.prove("x", [cs.Instance("strict", fn, build, lambda a, p: None, strict=True)])
    assert strict.status == "unknown" and "refused" in strict.reason
