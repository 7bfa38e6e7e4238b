"""The adversarial fuzz, as a CI run (the harness: ``tools/adversarial.py``).

One seeded run of at least 20,000 cases, each under a per-case hang detector and judged by
the brute-force referee (concrete post-conditions, small-candidate searches on refusals) and
the concrete-substitution referee (symbolic results and refutations substituted back). The
run fails on any case in a bad class -- wrong result, unsound verdict, call over budget,
untyped exception, invalid input accepted, over-rejection -- except the entries of
:data:`DOCUMENTED_OVER_REJECTIONS`, each naming the docs/semantics.md section that documents
the refusal and its reason, and of :data:`KNOWN_FAILURES` (explicit known failures, each
reported by name when it still occurs; none may be silently skipped).

Mix of the CI run (``adv.Mix``): 40 symbolic cases (symbolic operations under random facts,
their post-conditions, identities, admissibility and equality; about 0.1-0.5 s each), 20
hostile ``assuming`` facts and symbolic leaves, 20 CLI calls, then about 62 % concrete algebra
with referees, 30 % hostile input to every public callable and 8 % verify on concrete layouts
(0.1-1 ms each).  About 16 s of CPU time on the development VM (wall time grows with the
load of a shared machine: concrete calls are judged on CPU time, budgeted symbolic and verify
calls on wall time against twice the budgets the run sets).  The bigger run is
``bench/fuzz.py``.

The second half tests the harness itself: each referee must catch a planted bug, the hang
detector must fire, and the candidate searches must agree with brute force.
"""

from __future__ import annotations

import functools
import importlib.util
import random
import sys
import time
from pathlib import Path

import pytest

from layoutproof import InadmissibleError, Layout, LayoutError

_PATH = Path(__file__).resolve().parent.parent / "tools" / "adversarial.py"
_spec = importlib.util.spec_from_file_location("layoutproof_adversarial", _PATH)
adv = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = adv
_spec.loader.exec_module(adv)

SEED = 20261123
N_CASES = 20_000

# Over-rejections that docs/semantics.md documents with the reason: (function, a substring of
# the refusal's condition) -> the section.  Empty: none is documented as intended.
DOCUMENTED_OVER_REJECTIONS: dict = {}

# Known failures still open: (class, function, a substring of the reproduction) -> a line saying
# what is wrong.  Each is printed when it occurs; anything else fails.
KNOWN_FAILURES: dict = {}


def _allowed(o) -> bool:
    if o.cls == "over_rejection":
        for (fn, cond), _section in DOCUMENTED_OVER_REJECTIONS.items():
            if o.func == fn and cond in o.detail:
                return True
    return any(o.cls == c and o.func == f and sub in o.repro for (c, f, sub) in KNOWN_FAILURES)


@pytest.fixture(scope="module")
def report():
    return adv.run(SEED, N_CASES)


def test_ci_run_has_no_bad_case(report):
    assert len(report.outcomes) >= 20_000
    bad = [o for o in report.bad() if not _allowed(o)]
    known = [o for o in report.bad() if _allowed(o)]
    if known:
        print(f"{len(known)} known failures / documented over-rejections:")
        for o in known[:20]:
            print("  ", o.line()[:300])
    shown = "\n".join(o.line()[:400] for o in bad[:40])
    assert not bad, (
        f"{len(bad)} bad cases of {len(report.outcomes)} (seed {SEED}):\n{shown}\n\n{report.table()}"
    )


def test_ci_run_covers_every_class_of_input(report):
    funcs = {o.func for o in report.outcomes}
    for must in (
        "composition",
        "complement",
        "left_inverse",
        "right_inverse",
        "coalesce",
        "filter",
        "logical_divide",
        "logical_product",
        "downcast",
        "upcast",
        "composition(L, Swizzle)",
        "crd2idx",
        "idx2crd",
        "verify.equal",
        "verify.function",
        "verify.compatible",
        "verify.admissible",
        "assuming",
    ):
        assert must in funcs, f"no case for {must}"
    assert any(f.startswith("verify.postcondition[") for f in funcs)
    assert sum(f.startswith("symbolic.") for f in (o.func for o in report.outcomes)) >= 40


# ------------------------------------------------------------------ the harness can fail


def test_referee_catches_a_wrong_composition():
    A, B = Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))
    check = adv.referee_composition(A, B)
    assert check(Layout((3, 2), (2, 3)))[0] == "wrong"  # the by-mode answer, wrong at 5
    assert check(Layout(6, 1))[0] == "wrong"
    R = Layout((4, 2), (1, 8))
    assert adv.referee_composition(Layout((4, 2), (1, 8)), Layout(8, 1))(R) == adv.OK


def test_refusal_referee_finds_an_existing_composition():
    # (4,6):(1,5) o 2:3 is 2:3; a refusal would be an over-rejection
    A, B = Layout((4, 6), (1, 5)), Layout(2, 3)
    e = InadmissibleError("x", condition="stride divisibility")
    assert adv.refusal_composition(A, B)(e)[0] == "over_rejection"
    # (4,6):(1,5) o 4:3 has no layout (steps 3, 4, 4): the refusal is right
    assert adv.refusal_composition(A, Layout(4, 3))(e) == adv.OK


def test_as_layout_is_complete_on_small_layouts():
    rng = random.Random(5)
    for _i in range(300):
        L = adv.rand_layout(rng, 24, neg=0.2)
        v = adv.values(L)
        if v[0] != 0:
            continue
        r = adv.as_layout(v)
        assert r is not None, L
        assert [adv.ev(r[0], r[1], i) for i in range(len(v))] == v
    assert adv.as_layout([0, 3, 7, 11]) is None
    assert adv.as_layout([0, 1, 2, 3, 5, 6]) is None


def test_left_inverse_search_finds_known_inverses():
    for L in (Layout((2, 2), (1, 3)), Layout((2, 2), (2, 3)), Layout(4, 2)):
        r = adv.find_left_inverse(L)
        assert r is not None, L
    assert adv.find_left_inverse(Layout((2, 2), (1, 1))) is None  # not injective


def test_run_case_classifies_each_failure_mode():
    def boom():
        raise TypeError("deep inside")

    assert adv.run_case(adv.Case("f", "f()", boom)).cls == "untyped"
    # Python's own arity check at the call boundary is not the library's error
    assert adv.run_case(adv.Case("f", "f()", functools.partial(Layout.parse))).cls == "ok"
    assert adv.run_case(adv.Case("f", "f()", lambda: Layout(0))).cls == "ok"  # a LayoutError

    def slow():
        t = time.perf_counter()
        while time.perf_counter() - t < 5:
            pass

    o = adv.run_case(adv.Case("f", "f()", slow, limit=0.2))
    assert o.cls == "over_budget" and o.seconds < 2

    def caller():
        raise adv.CallerError("mine")

    assert adv.run_case(adv.Case("f", "f()", caller, expect_caller_error=True)).cls == "ok"
    assert adv.run_case(adv.Case("f", "f()", caller)).cls == "untyped"

    def swallowed():
        try:
            caller()
        except adv.CallerError as e:
            raise LayoutError("wrapped") from e

    assert adv.run_case(adv.Case("f", "f()", swallowed, expect_caller_error=True)).cls == "wrong"
    accepted = adv.Case("crd2idx", "...", lambda: 5, lambda r: ("invalid_accepted", str(r)))
    assert adv.run_case(accepted).cls == "invalid_accepted"


def test_verdict_judge():
    class R:
        def __init__(self, status, cex=None):
            self.status, self.counterexample = status, cex

    assert adv._judge_verdict(False, R("proved"), lambda c: True)[0] == "unsound"
    assert adv._judge_verdict(True, R("refuted", "c"), lambda c: True)[0] == "unsound"
    assert adv._judge_verdict(False, R("refuted", "c"), lambda c: False)[0] == "unsound"
    assert adv._judge_verdict(False, R("refuted", "c"), lambda c: True) == adv.OK
    assert adv._judge_verdict(True, R("unknown"), lambda c: True) == adv.OK


def test_generation_is_deterministic():
    a = [c.repro for c in adv.generate(7, 300)]
    b = [c.repro for c in adv.generate(7, 300)]
    assert a == b


def test_hostile_input_under_python_O_gives_typed_errors():
    """``python -O`` strips ``assert`` statements: the library's typed errors must not depend
    on them.  A seeded slice of the hostile-input and concrete cases, run under -O."""
    import subprocess

    code = (
        "import importlib.util, sys, json\n"
        f"spec = importlib.util.spec_from_file_location('adv', {str(_PATH)!r})\n"
        "adv = importlib.util.module_from_spec(spec); sys.modules['adv'] = adv\n"
        "spec.loader.exec_module(adv)\n"
        "assert False, 'asserts are on'  # -O removes this line\n"
        "mix = adv.Mix(symbolic=0, assumptions=10, cli=0, concrete=0.5, hostile=0.5, verify=0.0)\n"
        "rep = adv.run(4242, 1500, mix)\n"
        "bad = [o.line()[:300] for o in rep.bad() if o.cls in ('untyped', 'invalid_accepted', 'wrong')]\n"
        "print(json.dumps(bad))\n"
    )
    out = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    import json

    bad = json.loads(out.stdout.strip().splitlines()[-1])
    assert not bad, "\n".join(bad[:20])


def _run_gen(gen, n, seed="plant"):
    with adv.budgets():
        return [adv.run_case(gen(random.Random(f"{seed}-{k}"))) for k in range(n)]


def test_planted_library_bugs_are_caught(monkeypatch):
    """The harness against a library with a bug planted in each class it must report."""
    import layoutproof as lp
    from layoutproof import verify

    real_coalesce = lp.coalesce
    monkeypatch.setattr(lp, "coalesce", lambda L, *a: Layout(L.size, 1))  # wrong result
    assert any(o.cls == "wrong" for o in _run_gen(adv.gen_coalesce, 60))
    monkeypatch.setattr(lp, "coalesce", real_coalesce)

    def always_proved(A, B, **kw):
        return verify.Result("proved", "exhaustive", claim="planted")

    monkeypatch.setattr(verify, "equal", always_proved)  # unsound verdicts
    assert any(o.cls == "unsound" for o in _run_gen(adv.gen_verify_equal, 60))
    monkeypatch.undo()

    def raises_key_error(*a, **kw):
        raise KeyError("planted")

    monkeypatch.setattr(lp, "right_inverse", raises_key_error)  # untyped exception
    assert all(o.cls == "untyped" for o in _run_gen(adv.gen_right_inverse, 10))
    monkeypatch.undo()

    monkeypatch.setattr(lp, "idx2crd", lambda i, s, d=None: 0)  # invalid input accepted
    assert any(o.cls == "invalid_accepted" for o in _run_gen(adv.gen_eval, 120))
    monkeypatch.undo()

    def refuse(*a, **kw):
        raise InadmissibleError("planted", condition="planted")

    monkeypatch.setattr(lp, "composition", refuse)  # over-rejection
    assert any(o.cls == "over_rejection" for o in _run_gen(adv.gen_composition, 60))
