"""The one-layout folds at every rank: the induction obligations on the real step code
(proofs/catalog/induction.py), the opaque state, and planted bugs in the steps."""

import importlib.util
import sys
import types
from pathlib import Path

import pytest

pytest.importorskip("z3")
pytest.importorskip("sympy")

from layoutproof import Layout  # noqa: E402
from layoutproof.proofs import symexec as sx  # noqa: E402
from layoutproof.proofs.catalog import induction as ci  # noqa: E402
from layoutproof.proofs.catalog import induction_inverse as cv  # noqa: E402
from layoutproof.proofs.catalog import symbolic as cs  # noqa: E402
from layoutproof.symbolic import symops  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def _all_proved(insts):
    results = cs.prove("induction", insts)
    bad = [(r.status, r.claim, r.reason) for r in results if r.status != "proved"]
    assert not bad, bad
    return results


@pytest.mark.parametrize(
    "make",
    [
        lambda: ci.coalesce_instances(False),
        lambda: ci.coalesce_instances(True),
        ci.coalesce_depth_instances,
        ci.filter_instances,
        lambda: cv.complement_instances((1, 2, 3)),
        lambda: cv.left_inverse_instances((1, 2)),
        lambda: cv.right_inverse_instances((1, 2, 3)),
    ],
    ids=[
        "coalesce",
        "coalesce-keep-last",
        "coalesce-depth",
        "filter",
        "complement",
        "left_inverse",
        "right_inverse",
    ],
)
def test_every_base_and_step_is_proved_with_obligations(make):
    results = _all_proved(make())
    assert all(r.obligations for r in results)
    assert all(o.verdict == "unsat" for r in results for o in r.obligations)


def test_the_catalog_runs_the_induction_theorems():
    from layoutproof.proofs.catalog import get

    for tid, source in (
        ("sym.complement-post", "induction_inverse"),
        ("sym.left-inverse-post", "induction_inverse"),
        ("sym.right-inverse-post", "induction_inverse"),
        ("sym.filter-post", "induction"),
        ("sym.coalesce-every-rank", "induction"),
        ("sym.coalesce-function", "induction"),
        ("sym.coalesce-size", "induction"),
        ("sym.coalesce-depth", "induction"),
    ):
        t = get(tid)
        assert "every rank" in t.family and f"proofs/catalog/{source}.py" in t.references


def test_head_allows_appending_only():
    h = ci.Head("H") + (1,) + (2, 3)
    assert ci.appended(h, "H") == (1, 2, 3)
    assert ci.appended(ci.Head("U") | {7}, "U") == (7,)
    with pytest.raises(ci.HeadRead):
        ci.Head("U") | {1, 2}
    for use in (bool, len, list, lambda x: x[0], lambda x: x == h, lambda x: x < h, lambda x: x * 2):
        with pytest.raises(ci.HeadRead):
            use(h)
    with pytest.raises(ci.HeadRead):
        ci.appended(ci.Head("other"), "H")  # the step replaced its opaque part


def test_a_step_that_reads_the_opaque_state_is_unknown_not_proved():
    """The opaque head is what makes 'the step reads only the last mode' machine-checked: a
    step that looks at the finished modes is refused on its path, and the instance (strict)
    is unknown."""
    import z3

    s = cs.extents("s", 1)[0]

    def peeking_step():
        done, last = ci.Head("H"), (s, 1)
        if done:  # reads the finished modes
            return []
        return [last]

    inst = cs.Instance("peek", peeking_step, lambda cx: ([], z3.BoolVal(True)), ci.no_confirm, strict=True)
    (r,) = cs.prove("peek", [inst])
    assert r.status == "unknown" and "refused" in r.reason


# ----------------------------------------------------------------------------- planted bugs
def _mutant_symops(name: str) -> types.ModuleType:
    spec = importlib.util.spec_from_file_location("_lp_mutation_tool", REPO / "tools" / "mutation.py")
    tool = sys.modules.get(spec.name)
    if tool is None:
        tool = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = tool
        spec.loader.exec_module(tool)
    m = next(x for x in tool.MUTATIONS if x.name == name)
    assert m.file == "algebra/symbolic/symops.py"
    src = (REPO / m.file).read_text()
    assert src.count(m.original) == 1
    mod = types.ModuleType("layoutproof._symops_mutant")
    mod.__package__ = "layoutproof.symbolic"
    exec(compile(src.replace(m.original, m.replacement), f"<mutant {name}>", "exec"), mod.__dict__)
    return mod


def _refuted_step(monkeypatch, mutant, make, label_part):
    bad = _mutant_symops(mutant)
    for module in (ci, cv):  # the coalesce/filter folds and the sorted folds
        monkeypatch.setattr(module, "_ops", lambda: bad)
    inst = next(i for i in make() if label_part in i.label)
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
    return bad, cex.assignment


def test_a_dropped_stride_chain_check_fails_the_complement_step(monkeypatch):
    bad, asg = _refuted_step(
        monkeypatch, "symops-drop-need-chain", lambda: cv.complement_instances((1,)), "step"
    )
    cur, s, d = asg["cur0"], asg.get("s0", 2), asg["d0"]
    assert d % cur != 0  # the step went on past a broken chain
    # on the concrete path: L's first mode covers cur, the second starts at d; the mutant's
    # complement returns although the chain fails (the real one raises)
    L = Layout((cur, s), (1, d))
    assert not cs.int_chain(L, "complement")
    bad.complement(L, cur * s * d)  # returns: no InadmissibleError
    from layoutproof import ops
    from layoutproof.errors import InadmissibleError

    with pytest.raises(InadmissibleError):
        ops.complement(L, cur * s * d)


def test_a_dropped_injectivity_check_fails_the_left_inverse_step(monkeypatch):
    bad, asg = _refuted_step(
        monkeypatch, "symops-left-inverse-overlap", lambda: cv.left_inverse_instances((1,)), "step"
    )
    d0, s0, d1 = asg["d00"], asg["s00"], asg["d10"]
    assert d1 % d0 == 0 and s0 * d0 > d1  # the modes overlap, the mutant returns
    # on the concrete path: the layout (s0, s1):(d0, d1) is not injective and the mutant
    # left_inverse returns a layout that is not a left inverse
    s1 = max(asg.get("s10", 2), 2)
    L = Layout((s0, s1), (d0, d1))
    R = bad.left_inverse(L)
    vals = [L(i) for i in range(L.size)]
    assert len(set(vals)) < len(vals)
    assert any(R(v) != i for i, v in enumerate(vals))


def test_a_floor_for_a_ceiling_fails_the_complement_finish(monkeypatch):
    """A bug on the symbolic path only (the integer ceil_div is right): the finish's path
    result, at the model's values, does not reach M."""
    _bad, asg = _refuted_step(
        monkeypatch, "symops-ceil-div-floor", lambda: cv.complement_instances((1,)), "finish"
    )
    cur, M = asg["cur0"], asg["M0"]
    assert M % cur != 0
    # on the concrete path: the mutant's complement of cur:1 against a symbolic M, with the
    # model's M substituted into its result, covers less than M
    import sympy as sp

    from layoutproof.symbolic import assuming

    Ms = sp.Symbol("M", integer=True, positive=True)
    with assuming(sp.Ne(sp.Mod(Ms, cur), 0)):
        C = _bad.complement(Layout(cur, 1), Ms)
    assert C.size.subs(Ms, M) * cur < M


def test_a_coalesce_step_that_always_merges_is_refuted_on_integers(monkeypatch):
    """A hand-made wrong step (merges the mode into the last one whatever the strides): the
    function obligation is satisfiable and the model's integers reproduce the difference."""

    def bad_step(state, mode, keep=False):
        done, last = state
        if last is None:
            return done, mode
        return done, (last[0] * mode[0], last[1])

    fake = types.SimpleNamespace(COALESCE_START=symops.COALESCE_START, coalesce_step=bad_step)
    monkeypatch.setattr(ci, "_ops", lambda: fake)
    inst = next(i for i in ci.coalesce_instances(False) if i.label.startswith("step from (H"))
    (r,) = cs.prove("bad merge", [inst])
    assert r.status == "refuted", (r.status, r.reason)
    assert "differ at index" in r.counterexample.detail


def test_a_coalesce_step_that_nests_a_mode_fails_the_depth_step(monkeypatch):
    """A wrong step that keeps a merged mode as a nested pair: the depth step is not proved
    (the claim is structural, so the integer replay confirms it and it is refuted)."""

    def nesting_step(state, mode, keep=False):
        done, last = symops.coalesce_step(state, mode, keep=keep)
        return done, ((last[0], 1), last[1]) if last is not None else last

    fake = types.SimpleNamespace(COALESCE_START=symops.COALESCE_START, coalesce_step=nesting_step)
    monkeypatch.setattr(ci, "_ops", lambda: fake)
    for inst in ci.coalesce_depth_instances()[1:]:
        (r,) = cs.prove("nested", [inst])
        assert r.status == "refuted", (inst.label, r.status, r.reason)
        assert "nested mode" in r.counterexample.detail


def test_the_real_steps_pass_where_the_mutants_fail():
    for make in (lambda: cv.complement_instances((1,)), lambda: cv.left_inverse_instances((1,))):
        inst = next(i for i in make() if "step" in i.label)
        (r,) = cs.prove("real", [inst])
        assert r.status == "proved"


@pytest.mark.parametrize("op", ["coalesce", "filter"])
@pytest.mark.parametrize("what", ["maximal", "cosize", "identity"])
def test_structure_steps_are_proved(op, what):
    _all_proved(ci.structure_instances(op, what))


def test_the_identity_step_is_not_vacuous():
    """Without its hypothesis d != t e the identity step is false (the modes merge): refuted
    or at least not proved."""
    import sympy as sp

    inst = ci.structure_instances("coalesce", "identity")[1]
    weaker = cs.Instance(inst.label, inst.fn, inst.build, inst.confirm, assumptions=inst.assumptions[:2])
    (r,) = cs.prove("identity without d != t e", [weaker])
    assert r.status != "proved"
    assert any(isinstance(a, sp.Ne) for a in inst.assumptions)


def test_the_sort_lemma_at_rank_3():
    _all_proved(cv.sort_instances((3,)))


def test_symops_folds_are_their_steps():
    """The folds, as the induction states them: start, one step per mode, finish."""
    s0, s1 = 4, 1
    L = Layout((s0, s1, 2), (1, 7, 4))
    st = symops.COALESCE_START
    for m in zip((s0, s1, 2), (1, 7, 4)):
        st = symops.coalesce_step(st, m)
    assert symops.coalesce_finish(st) == symops.coalesce_flat((s0, s1, 2), (1, 7, 4)) == ([8], [1])
    assert str(symops.coalesce(L)) == "8:1"


# ----------------------------------------------------------------------------- sort and pick at every length
def test_the_sort_and_pick_scan_steps_are_proved():
    """The sort lemma and right_inverse's pick lemma at every length: their scan steps."""
    results = _all_proved(cv.sort_scan_instances() + cv.pick_scan_instances())
    assert all(o.verdict == "unsat" for r in results for o in r.obligations)


def test_sort_modes_and_the_pick_are_folds_of_their_steps():
    """sort_modes is insertion of each mode in turn, each insertion a scan of sort_scan_step;
    on integers it is Python's sort by (stride, index), and the pick's fold is the first
    unused mode of stride cur."""
    import itertools

    for ds in itertools.product((0, 1, 3), repeat=4):
        modes = [(d, 2, k) for k, d in enumerate(ds)]
        out: list = []
        for m in modes:
            pos = None
            for j, o in enumerate(out):
                pos = symops.sort_scan_step(pos, j, m, o, "sort")
            assert symops.sort_insert(out, m, "sort") == (
                out + [m] if pos is None else out[:pos] + [m] + out[pos:]
            )
            out = symops.sort_insert(out, m, "sort")
        assert out == symops.sort_modes(modes, "sort") == sorted(modes, key=lambda m: (m[0], m[2]))
        for cur, used in itertools.product((1, 3), ((), (1,), (0, 2))):
            state = ((), (), cur, frozenset(used))
            first = next((i for i, d in enumerate(ds) if i not in used and d == cur), None)
            assert symops.right_inverse_pick(ds, state) == first


def test_an_undecided_tie_in_the_sort_is_asked_for_not_guessed():
    """Strides known to be ordered (N <= M) but not known to differ: equal strides would be
    ordered by index, so the sort asks for the strict order instead of placing N first."""
    import sympy as sp

    from layoutproof import assuming, complement, symbols
    from layoutproof.errors import UndecidableConditionError

    M, N = symbols("M N")
    with assuming("N <= M"), pytest.raises(UndecidableConditionError) as e:
        complement(Layout((2, 2), (M, N)))
    assert isinstance(e.value.expr, sp.Lt) and e.value.expr.free_symbols == {M, N}
    with assuming("N < M", "M % (2*N) == 0"):
        C = complement(Layout((2, 2), (M, N)))
    assert C is not None


@pytest.mark.parametrize(
    "mutant, make, label",
    [
        ("symops-sort-ties-reversed", cv.sort_scan_instances, "compare (m index > o index)"),
        ("symops-sort-ties-reversed", cv.sort_scan_instances, "compare (m index < o index)"),
        ("symops-pick-takes-used-mode", cv.pick_scan_instances, "pick scan: used"),
    ],
)
def test_a_planted_bug_in_a_scan_step_is_refuted_on_integers(monkeypatch, mutant, make, label):
    _bad, asg = _refuted_step(monkeypatch, mutant, make, label)
    if mutant.startswith("symops-sort"):
        assert asg["dm0"] == asg["do0"]  # the tie the mutant orders the wrong way
    else:
        # the used mode that continues the chain (a symbol the path solved away takes the
        # other's value, as in the confirmation)
        assert asg.get("d0", asg.get("cur0", 1)) == asg.get("cur0", asg.get("d0", 1)), asg


# ----------------------------------------------------------------------------- a tuple cotarget
def test_the_tuple_cotarget_fold_is_proved():
    results = _all_proved(cv.rest_tuple_instances())
    assert all(o.verdict == "unsat" for r in results for o in r.obligations)


def test_complement_rest_on_a_tuple_is_the_fold_of_its_step_and_matches_the_concrete_complement():
    """complement_rest over a tuple cotarget folds complement_rest_step over its flat modes
    (falling back to one mode when the fold fails), covers M <= K < M + cur; the symbolic
    complement with integer leaves equals the concrete one for tuple cotargets, exact or not."""
    from layoutproof import complement
    from layoutproof.inttuple import raw_flatten, raw_product

    def outcome(fn, *args):
        try:
            return str(fn(*args))
        except Exception as e:  # the same error kind on both paths
            return type(e).__name__

    for cur, cot in (
        (4, (2, 4)),
        (4, (8, 2)),
        (6, (4, 3)),
        (3, (12,)),
        (8, (2, 2)),
        (2, ((2, 3), 4)),
        (4, (3, 4)),
    ):
        state = ((), (), cur, cur)
        for x in raw_flatten(cot):
            state = symops.complement_rest_step(state, x)
        rs, rd = symops.complement_rest(cur, cot)
        if state is not None:
            assert (rs, rd) == (list(state[0]), list(state[1]))
        else:
            assert (rs, rd) == ([-(-raw_product(cot) // cur)], [cur])
        K, M = cur * raw_product(tuple(rs)), raw_product(cot)
        assert M <= K < M + cur, (cur, cot, rs, rd)
    for L in (Layout(2, 1), Layout((2, 2), (1, 4)), Layout((2, 3), (3, 12)), Layout(4, 2)):
        for cot in ((4,), (2, 4), (8, 2), (3, 4), (4, 4, 2), (12, 2), ((2, 2), 4), (5,)):
            assert outcome(symops.complement, L, cot) == outcome(complement, L, cot), (L, cot)


def test_a_cotarget_mode_kept_whole_fails_the_tuple_step(monkeypatch):
    _bad, asg = _refuted_step(
        monkeypatch, "symops-rest-extent-undivided", cv.rest_tuple_instances, "complement_rest_step on"
    )
    assert asg.get("d0", 1) > 1  # cur covers part of the mode: its extent must shrink
