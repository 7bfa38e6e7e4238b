"""The theorem catalog (layoutproof.proofs) and ``layoutproof prove``.

The whole catalog runs once (module fixture); every theorem must reach its declared status,
negative theorems with their expected counterexample.  The rest checks that this is not a
tautology -- a corrupted claim, a broken algebra, a wrong expected counterexample each make
the catalog fail -- and the command line: exit codes, the report directory (Markdown, JSON,
SMT-LIB2 files that cvc5 parses and agrees with), and that docs/theorems.md is up to date.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from layoutproof import Layout
from layoutproof.proofs import THEOREMS, Expect, Theorem, evaluate, get, run, select
from layoutproof.proofs import cli as prove_cli
from layoutproof.proofs import docs as prove_docs
from layoutproof.proofs.catalog import composition as cat_composition
from layoutproof.proofs.kit import SKIP, for_all, greedy_tiling, reproducing_layout
from layoutproof.proofs.runner import default_jobs
from layoutproof.verify import Result, equal

ROOT = Path(__file__).resolve().parents[2]
IDS = [t.id for t in THEOREMS]
#: the theorems `layoutproof prove` runs by default (the heavy ones wait for --all)
RUN_IDS = [t.id for t in THEOREMS if not t.heavy]


@pytest.fixture(scope="module")
def outcomes():
    """Every theorem of the default run, checked once."""
    outs = run([t for t in THEOREMS if not t.heavy], jobs=default_jobs())
    return {o.id: o for o in outs}


# ----------------------------------------------------------------------------- the catalog itself
def test_catalog_shape():
    assert len(THEOREMS) >= 40
    assert len(set(IDS)) == len(IDS)
    negative = [t for t in THEOREMS if t.negative]
    assert len(negative) >= 10
    for t in THEOREMS:
        assert t.statement and t.title and t.references, t.id
        assert t.expected in ("proved", "checked", "refuted"), t.id
        if t.expected == "checked":
            assert t.family, f"{t.id}: a checked theorem states its family"
        if t.negative:
            assert t.expect is not None and t.expect.describe(), t.id
    # the theorems the issue names are there
    for must in (
        "T1.complement-bijection",
        "T6.associativity",
        "T4.left-distributivity",
        "T9.bijective-inverses-coincide",
        "T11.partial-order",
        "T12.swizzle-involution",
        "gemm.zipped-divide-symbolic",
        "neg.shah-bymode-composition",
        "neg.complement-iff-injective",
        "neg.prefix-composition",
        "neg.associativity-past-domain",
    ):
        assert must in IDS


@pytest.mark.parametrize("tid", RUN_IDS)
def test_theorem_reaches_its_declared_status(outcomes, tid):
    o = outcomes[tid]
    t = get(tid)
    assert o.verdict == "ok", f"{tid}: {o.status} ({o.message}); {o.counterexample}; {o.summaries}"
    if t.negative:
        assert o.status == "refuted" and o.counterexample
    elif t.expected == "proved":
        assert o.status == "proved"
    else:
        assert o.status in ("checked", "proved")


def test_declared_methods_are_the_methods_used(outcomes):
    for t in THEOREMS:
        if t.heavy:
            continue
        assert set(t.method.split("+")) == set(outcomes[t.id].methods), t.id


def test_exhaustive_theorems_cover_thousands_of_cases(outcomes):
    """ "checked" means every member of a family; the families are not token-sized."""
    big = [o for o in outcomes.values() if o.expected == "checked" and (o.cases or 0) >= 1000]
    assert len(big) >= 25
    for o in outcomes.values():
        if o.expected == "checked":
            assert o.cases and o.cases >= 100, (o.id, o.cases)


def test_symbolic_theorems_use_z3_and_sympy(outcomes):
    methods = {m for o in outcomes.values() for m in o.methods}
    assert {"z3", "sympy", "exhaustive"} <= methods
    g = outcomes["gemm.zipped-divide-symbolic"]
    assert g.status == "proved" and "z3" in g.methods and len(g.smt2) >= 8
    assert all(s["verdict"] == "unsat" for s in g.smt2)


def test_shah_counterexample_is_coordinate_5(outcomes):
    o = outcomes["neg.shah-bymode-composition"]
    r = o.results[0]["counterexample"]
    assert r["coordinate"] == 5 and r["lhs"] == "7" and r["rhs"] == "8"
    assert "(2,2):(1,3)" in outcomes["neg.complement-iff-injective"].counterexample


# ----------------------------------------------------------------------------- not a tautology
def _with(t: Theorem, **changes) -> Theorem:
    return dataclasses.replace(t, **changes)


def test_a_corrupted_claim_fails():
    """The same check declared with the opposite outcome fails."""
    t = get("T1.complement-disjoint")
    o = evaluate(_with(t, expected="refuted", expect=Expect(coordinate=0)))
    assert o.verdict == "FAILED" and "expected a refutation" in o.message
    neg = get("neg.sorting-preserves-function")
    o = evaluate(_with(neg, expected="checked", expect=None))
    assert o.verdict == "FAILED" and o.status == "refuted"


def test_a_wrong_expected_counterexample_fails():
    t = get("neg.shah-bymode-composition")
    o = evaluate(_with(t, expect=Expect(coordinate=4)))
    assert o.verdict == "FAILED" and "coordinate: expected 4, found 5" in o.message
    t = get("neg.complement-iff-injective")
    o = evaluate(_with(t, expect=Expect(instance="L = (2,2):(1,5)")))
    assert o.verdict == "FAILED"


def test_a_broken_algebra_is_caught(monkeypatch):
    """Make composition return C++'s by-mode result without the disjointness check: the
    post-condition theorem and left distributivity must find it."""
    from layoutproof import LayoutError
    from layoutproof.proofs.kit import bymode

    def unsound(A, B):
        try:
            return bymode(A, B)
        except LayoutError as e:
            return e

    monkeypatch.setattr(cat_composition, "compose", unsound)
    for tid in ("T5.composition-postcondition", "T4.left-distributivity"):
        o = evaluate(get(tid))
        assert o.verdict == "FAILED" and o.status == "refuted", (tid, o.message)
        assert o.counterexample


def test_a_broken_coalesce_is_caught(monkeypatch):
    from layoutproof.proofs.catalog import coalesce as cat_coalesce

    real = cat_coalesce.coalesce

    def drops_last_mode(L, *a):
        C = real(L, *a)
        if not a and C.rank > 1:
            return Layout(C.shape[:-1], C.stride[:-1])
        return C

    monkeypatch.setattr(cat_coalesce, "coalesce", drops_last_mode)
    o = evaluate(get("T10.coalesce-postcondition"))
    assert o.verdict == "FAILED" and "size" in o.counterexample


def test_an_empty_family_proves_nothing():
    r = for_all("vacuous", [], lambda x: None, family="nothing", bounds={})
    assert r.status == "unknown"
    r = for_all("all skipped", [1, 2], lambda x: SKIP, family="two", bounds={})
    assert r.status == "unknown" and "skipped" in " ".join(r.notes)


def test_a_check_that_raises_is_an_error():
    t = Theorem("x.raises", "raises", "1 = 1", lambda: 1 / 0)
    o = evaluate(t)
    assert o.verdict == "error" and "ZeroDivisionError" in o.message


def test_oracles():
    assert greedy_tiling([0, 1, 3, 4], 64) == ("collides", 2)
    assert greedy_tiling([0, 2, 1, 3], 64) == ("tiles", 4)
    assert reproducing_layout([0, 1, 2, 3, 5, 6]) is None
    L = reproducing_layout([0, 3, 1, 4, 2, 5])
    assert L is not None and equal(L, Layout((2, 3), (3, 1))).status == "proved"


# ----------------------------------------------------------------------------- the command line
EXTRA = textwrap.dedent("""
    from layoutproof import Layout
    from layoutproof.proofs import Expect, Theorem
    from layoutproof.verify import Result, equal

    THEOREMS = [
        Theorem("extra.true", "true", "8:1 = (4,2):(1,4)",
                lambda: equal(Layout(8, 1), Layout((4, 2), (1, 4)))),
        Theorem("extra.false", "false", "8:1 = (4,2):(2,1)",
                lambda: equal(Layout(8, 1), Layout((4, 2), (2, 1)))),
        Theorem("extra.negative-holds", "a negative theorem that holds", "8:1 = 8:1",
                lambda: equal(Layout(8, 1), Layout(8, 1)), expected="refuted", expect=Expect(coordinate=0)),
        Theorem("extra.negative-wrong", "refuted elsewhere", "8:1 = (4,2):(2,1)",
                lambda: equal(Layout(8, 1), Layout((4, 2), (2, 1))), expected="refuted",
                expect=Expect(coordinate=3)),
        Theorem("extra.negative-right", "refuted as expected", "8:1 = (4,2):(2,1)",
                lambda: equal(Layout(8, 1), Layout((4, 2), (2, 1))), expected="refuted",
                expect=Expect(coordinate=1)),
        Theorem("extra.unknown", "undecided", "?",
                lambda: Result("unknown", "z3", reason="timeout")),
        Theorem("extra.weaker", "declared proved, only checked", "x",
                lambda: Result("checked", "exhaustive", bounds={"n": (1, 2)}, cases=2)),
    ]
""")


@pytest.fixture
def extra(tmp_path):
    p = tmp_path / "extra_theorems.py"
    p.write_text(EXTRA)
    return str(p)


@pytest.mark.parametrize(
    "pattern, code",
    [
        ("^extra\\.true$", 0),
        ("^extra\\.false$", 1),
        ("^extra\\.negative-holds$", 1),
        ("^extra\\.negative-wrong$", 1),
        ("^extra\\.negative-right$", 0),
        ("^extra\\.unknown$", 3),
        ("^extra\\.weaker$", 3),
        ("^extra\\.(true|negative-right|unknown)$", 3),
        ("^extra\\.(true|false|unknown)$", 1),
    ],
)
def test_exit_codes(extra, pattern, code, capsys):
    rc = prove_cli.main(["--extra", extra, "--filter", pattern, "--no-report", "--jobs", "1"])
    out = capsys.readouterr()
    assert rc == code, out.out + out.err
    assert "theorem" in out.out


def test_progress_and_table(extra, capsys):
    rc = prove_cli.main(["--extra", extra, "--filter", "^extra\\.(true|false)$", "--no-report", "-j", "1"])
    out = capsys.readouterr()
    assert rc == 1
    assert "[1/2] ok" in out.err and "FAILED  extra.false" in out.err
    assert "counterexample: coordinate 1" in out.err
    assert "extra.true" in out.out and "2 theorems: 1 proved, 1 refuted" in out.out


def test_usage_errors(capsys, tmp_path):
    assert prove_cli.main(["--filter", "no-such-theorem-xyz", "--no-report"]) == 2
    assert prove_cli.main(["--extra", str(tmp_path / "missing.py"), "--no-report"]) == 2
    assert "error" in capsys.readouterr().err


def test_list(capsys):
    assert prove_cli.main(["--list"]) == 0
    out = capsys.readouterr().out
    assert f"{len(THEOREMS)} theorems" in out and "neg.shah-bymode-composition" in out


def test_parallel_runs_agree_with_serial():
    ths = select("^(neg\\.sorting|neg\\.compat|T11\\.extremes)")
    a = [(o.id, o.status, o.verdict) for o in run(ths, jobs=1)]
    b = [(o.id, o.status, o.verdict) for o in run(ths, jobs=2)]
    assert a == b and len(a) == 3


def test_report_directory(tmp_path, capsys):
    rep = tmp_path / "rep"
    rc = prove_cli.main(
        [
            "--filter",
            "^(composition\\.symbolic|neg\\.shah)",
            "--report",
            str(rep),
            "-q",
            "--cross-check",
            "cvc5",
            "--jobs",
            "1",
        ]
    )
    out = capsys.readouterr().out
    assert rc == 0, out
    md = (rep / "report.md").read_text()
    assert md.startswith("# layoutproof theorem report")
    assert "| `composition.symbolic` | proved | proved | ok |" in md
    assert "coordinate 5 = (2,1): 7 != 8" in md
    doc = json.loads((rep / "report.json").read_text())
    assert doc["summary"]["theorems"] == 2 and doc["exit_code"] == 0
    th = {t["id"]: t for t in doc["theorems"]}
    assert th["neg.shah-bymode-composition"]["status"] == "refuted"
    files = th["composition.symbolic"]["smt2_files"]
    assert files and all((rep / f).is_file() for f in files)
    assert sorted(os.listdir(rep / "smt2")) == sorted(os.path.basename(f) for f in files)
    assert files[0] == "smt2/composition.symbolic-1.smt2"
    from layoutproof.verify.smtlib import run_cvc5

    for f in files:
        text = (rep / f).read_text()
        assert "(check-sat)" in text and "(set-logic" in text
        assert run_cvc5(text, 10_000) == ["unsat"]
    cc = th["composition.symbolic"]["cross_check"]
    assert cc and all(e["agree"] is True for e in cc)
    assert "cvc5: 3 obligations, 3 agree, 0 disagree" in out
    # a second run replaces the old SMT files instead of accumulating them
    assert prove_cli.main(["--filter", "^neg\\.shah", "--report", str(rep), "-q", "--jobs", "1"]) == 0
    assert os.listdir(rep / "smt2") == []


def test_console_script_dispatch(tmp_path):
    """``layoutproof prove`` goes through the algebra's dispatcher (EXTERNAL) in a fresh process."""
    exe = Path(sys.executable).with_name("layoutproof")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "layoutproof"]
    r = subprocess.run(
        cmd + ["prove", "--filter", "^neg\\.sorting", "--report", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 theorem: 1 refuted" in r.stdout
    assert (tmp_path / "r" / "report.json").is_file()
    r = subprocess.run(cmd + ["--help"], capture_output=True, text=True, timeout=60)
    assert "prove" in r.stdout


# ----------------------------------------------------------------------------- the generated page
def test_theorems_md_is_up_to_date():
    path = ROOT / "docs" / "theorems.md"
    assert path.is_file(), "docs/theorems.md is missing: python -m layoutproof.proofs.docs docs/theorems.md"
    assert path.read_text(encoding="utf-8") == prove_docs.render(), (
        "docs/theorems.md is stale: regenerate it with python -m layoutproof.proofs.docs docs/theorems.md"
    )


def test_theorems_md_mentions_every_theorem_and_links_exist():
    text = prove_docs.render()
    for t in THEOREMS:
        assert f"### `{t.id}`" in text
    import re

    for target in re.findall(r"\]\(([^)#]+)\)", text):
        assert (ROOT / "docs" / target).is_file(), f"broken link {target}"


def test_docs_check_mode(tmp_path, capsys):
    p = tmp_path / "t.md"
    assert prove_docs.main(["--check", str(p)]) == 1
    assert prove_docs.main([str(p)]) == 0
    assert prove_docs.main(["--check", str(p)]) == 0
    p.write_text(p.read_text() + "edited\n")
    assert prove_docs.main(["--check", str(p)]) == 1
    capsys.readouterr()


def test_result_type_is_verify_result():
    r = get("neg.sorting-preserves-function").check()
    assert all(isinstance(x, Result) for x in (r if isinstance(r, list) else [r]))


def test_symbolic_execution_obligations_agree_with_cvc5(outcomes):
    """Every Z3 obligation of the all-values group is re-checked by cvc5: same
    verdicts, none undecided."""
    pytest.importorskip("cvc5")
    from layoutproof.proofs.runner import cross_check_outcome

    sym = [o for tid, o in outcomes.items() if tid.startswith("sym.")]
    assert len(sym) >= 20
    n = 0
    for o in sym:
        assert o.smt2, o.id
        entries = cross_check_outcome(o, "cvc5", 30_000)
        bad = [e for e in entries if e["agree"] is not True]
        assert not bad, (o.id, bad[:3])
        n += len(entries)
    assert n >= 100
