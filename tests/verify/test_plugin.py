"""The theorem decorator (layoutproof.verify.theorem) and the pytest plugin
(layoutproof.verify.pytest_plugin): the three modes, the failure report (counterexample in
CuTe notation and its picture, the mode, the passing cases), the options, and that the
plugin leaves every other test alone.  The examples of docs/examples run here: the passing
file passes, the failing one fails with the report shown in docs/testing.md.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import hypothesis  # noqa: F401 - loaded before pytester's in-process runs (see below)
import numpy  # noqa: F401
import pytest
import sympy  # noqa: F401
import z3  # noqa: F401

import layoutproof.verify.strategies  # noqa: F401
from layoutproof import Layout, Swizzle, coalesce, composition, verify
from layoutproof.verify import pytest_plugin
from layoutproof.verify.theorem import (
    Family,
    TheoremError,
    TheoremFailure,
    assume,
    describe,
    picture,
    theorem,
)

# pytester's in-process runs unload the modules they import; numpy, SymPy and Z3 cannot be
# loaded twice in one process, so they are imported above, before any run.
pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"


# ----------------------------------------------------------------------------- the plugin is light
def test_plugin_is_registered_as_an_entry_point():
    eps = metadata.entry_points(group="pytest11")
    assert any(ep.name == "layoutproof" and ep.value == "layoutproof.verify.pytest_plugin" for ep in eps)


def test_loading_the_plugin_imports_nothing_heavy():
    code = (
        "import json, sys, time; t = time.perf_counter(); import layoutproof.verify.pytest_plugin; "
        "dt = time.perf_counter() - t; heavy = ('numpy', 'sympy', 'z3', 'hypothesis', "
        "'layoutproof.verify.theorem', 'layoutproof.verify.strategies'); "
        "print(json.dumps({'loaded': [m for m in heavy if m in sys.modules], 'dt': dt}))"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["loaded"] == []  # what it costs is measured by what it loads, not by a clock


def test_the_plugin_is_active_in_this_session(pytestconfig):
    state = pytest_plugin.current()
    assert state is not None and state["active"] and state["config"] is pytestconfig
    assert pytestconfig.pluginmanager.has_plugin("layoutproof")


# ----------------------------------------------------------------------------- plain tests unchanged
PLAIN = """
import pytest

def test_ok():
    assert 1 + 1 == 2

def test_fails():
    assert [1, 2] == [1, 3]

@pytest.mark.parametrize("x", [1, 2])
def test_param(x):
    assert x > 0

def test_fixture(tmp_path):
    assert tmp_path.exists()
"""


def test_plain_tests_run_as_without_the_plugin(pytester):
    pytester.makepyfile(test_plain=PLAIN)
    with_plugin = pytester.runpytest("-p", "no:cacheprovider")
    without = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:layoutproof")
    for r in (with_plugin, without):
        r.assert_outcomes(passed=4, failed=1)

    # the same report, line for line, after the header (which lists the plugins) and up to
    # the timing of the last line
    def body(r):
        lines = r.stdout.lines
        return lines[next(i for i, ln in enumerate(lines) if ln.startswith("collected")) : -1]

    assert body(with_plugin) == body(without)
    assert not any("layoutproof" in ln for ln in body(with_plugin))


def test_marker_and_option_are_registered(pytester):
    r = pytester.runpytest("--markers")
    r.stdout.fnmatch_lines(["*@pytest.mark.theorem*layoutproof*"])
    r = pytester.runpytest("--help")
    r.stdout.fnmatch_lines(["*--layoutproof-scale*"])


# ----------------------------------------------------------------------------- the examples
def test_passing_examples_pass(pytester):
    shutil.copy(EXAMPLES / "test_my_layout.py", pytester.path / "test_my_layout.py")
    r = pytester.runpytest("-p", "no:cacheprovider", "test_my_layout.py")
    r.assert_outcomes(passed=10)
    r = pytester.runpytest("-p", "no:cacheprovider", "-m", "theorem", "test_my_layout.py")
    r.assert_outcomes(passed=9, deselected=1)


@pytest.fixture(scope="module")
def failing_run(tmp_path_factory):
    """docs/examples/failing_example.py in a subprocess (as a user runs it)."""
    d = tmp_path_factory.mktemp("failing")
    shutil.copy(EXAMPLES / "failing_example.py", d / "failing_example.py")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "failing_example.py"],
        capture_output=True,
        text=True,
        cwd=d,
        timeout=300,
    )
    return r


def test_failing_example_fails_three_times(failing_run):
    assert failing_run.returncode == 1, failing_run.stdout[-3000:] + failing_run.stderr[-3000:]
    assert "3 failed" in failing_run.stdout
    assert failing_run.stdout.count("-- layoutproof counterexample --") == 3


def test_failure_report_exhaustive(failing_run):
    out = failing_run.stdout
    assert (
        "theorem test_left_inverse_inverts_every_layout is false: counterexample found by the "
        "exhaustive mode after 5 passing cases" in out
    )
    assert "over: L: every flat layout of rank 1..2, extents 1..3, strides 0..4" in out
    assert "L = 2:0    # Layout(2, 0)" in out
    picture_of_2_0 = "2:0\n      0   1\n    +---+---+\n 0  | 0 | 0 |\n    +---+---+"
    assert picture_of_2_0 in out
    assert "assert all(R(L(i)) == i for i in range(L.size))" in out  # the user's failing line


def test_failure_report_hypothesis(failing_run):
    out = failing_run.stdout
    assert "found by the hypothesis mode (shrunk to a minimal example)" in out
    assert "L = (2,2):(1,1)    # Layout((2, 2), (1, 1))" in out
    assert " 0  | 0 | 1 |\n    +---+---+\n 1  | 1 | 2 |" in out
    assert "two coordinates share an offset" in out


def test_failure_report_z3(failing_run):
    out = failing_run.stdout
    assert "found by the z3 mode (verify.identity: refuted by z3)" in out
    assert "counterexample: coordinate 1 = (1,0): 2 != 1" in out
    assert "M = 2" in out
    assert "lhs = (2,2):(2,1)" in out and "rhs = 4:1" in out
    assert " 0  | 0 | 1 | 2 | 3 |" in out


def test_without_the_plugin_the_pictures_go_into_the_message(pytester):
    shutil.copy(EXAMPLES / "failing_example.py", pytester.path / "failing_example.py")
    r = pytester.runpytest(
        "-p", "no:cacheprovider", "-p", "no:layoutproof", "failing_example.py", "-k", "left_inverse"
    )
    r.assert_outcomes(failed=1)
    out = r.stdout.str()
    assert "layoutproof counterexample" not in out
    assert "L = 2:0" in out and " 0  | 0 | 0 |" in out


# ----------------------------------------------------------------------------- options
SCALED = """
from layoutproof.verify.theorem import Family, theorem

@theorem(Family.layouts(rank=1, extent=2, stride=2), examples=10)
def test_counted(L):
    pass

def test_counts():
    test_counted()
    s = test_counted.theorem_stats
    print("STATS", s["exhaustive"], s["hypothesis"], s["scale"])
"""


@pytest.mark.parametrize(
    "args, env, expected",
    [
        ((), None, "STATS 6 10 1.0"),
        (("--layoutproof-scale=2",), None, "STATS 20 20 2.0"),
        ((), "0.5", "STATS 2 5 0.5"),
        (("--layoutproof-scale=3",), "0.5", "STATS 42 30 3.0"),
    ],
)
def test_scale_option(pytester, monkeypatch, args, env, expected):
    if env is None:
        monkeypatch.delenv("LAYOUTPROOF_SCALE", raising=False)
    else:
        monkeypatch.setenv("LAYOUTPROOF_SCALE", env)
    pytester.makepyfile(test_scaled=SCALED)
    r = pytester.runpytest("-p", "no:cacheprovider", "-s", *args)
    r.assert_outcomes(passed=2)
    assert expected in r.stdout.str()
    if args:
        assert "layoutproof: theorem scale" in r.stdout.str()


def test_scale_from_ini(pytester, monkeypatch):
    monkeypatch.delenv("LAYOUTPROOF_SCALE", raising=False)
    pytester.makepyfile(test_scaled=SCALED)
    pytester.makeini("[pytest]\nlayoutproof_scale = 2\n")
    r = pytester.runpytest("-p", "no:cacheprovider", "-s")
    assert "STATS 20 20 2.0" in r.stdout.str()


@pytest.mark.parametrize("value", ["0", "-1", "many"])
def test_bad_scale_is_a_usage_error(pytester, value):
    pytester.makepyfile(test_scaled=SCALED)
    r = pytester.runpytest("-p", "no:cacheprovider", f"--layoutproof-scale={value}")
    assert r.ret == pytest.ExitCode.USAGE_ERROR
    assert "--layoutproof-scale" in r.stderr.str()


# ----------------------------------------------------------------------------- the decorator
def test_exhaustive_then_hypothesis_counts():
    @theorem(Family.layouts(rank=2, extent=2, stride=1), examples=7)
    def prop(L):
        assert verify.equal(coalesce(L), L)

    prop()
    s = prop.theorem_stats
    assert (s["exhaustive"], s["hypothesis"], s["skipped"]) == (4 + 16, 7, 0)


def test_bare_decorator_and_default_bound():
    @theorem
    def prop(L):
        assert L.size >= 1

    prop()
    assert prop.theorem_stats["exhaustive"] == 4 * 5 + 16 * 25
    assert prop.theorem_sources == [(["L"], "every flat layout of rank 1..2, extents 1..4, strides 0..4")]


def test_two_layout_parameters_take_the_product():
    @theorem(bound=dict(rank=1, extent=2, stride=1), examples=0)
    def prop(A, B):
        pass

    prop()
    assert prop.theorem_stats["exhaustive"] == 16


def test_pair_family_fills_two_parameters_and_keyword_gives_the_pair():
    seen = []

    @theorem(Family.composition_pairs(rank=1, extent=2, stride=2), examples=0)
    def prop(A, B):
        seen.append((A, B))
        assert verify.postcondition("composition", composition(A, B), A, B)

    prop()
    assert len(seen) == prop.theorem_stats["exhaustive"] > 10

    @theorem(pair=Family.complement_pairs(rank=1, extent=2, stride=2, cotarget=4), examples=5)
    def prop2(pair):
        L, M = pair
        assert isinstance(L, Layout) and M >= 1

    prop2()


def test_fixtures_and_methods(pytester):
    pytester.makepyfile(
        test_fx="""
        from layoutproof.verify.theorem import Family, theorem

        @theorem(L=Family.layouts(rank=1, extent=2, stride=1), examples=3)
        def test_with_fixture(L, tmp_path):
            assert tmp_path.exists() and L.size >= 1

        import pytest

        @pytest.mark.parametrize("n", [1, 2])
        @theorem(L=Family.layouts(rank=1, extent=2, stride=1), examples=3)
        def test_parametrized(L, n):
            assert n in (1, 2) and L.size >= 1

        class TestInClass:
            @theorem(Family.values(1, 2, 3))
            def test_method(self, n):
                assert n in (1, 2, 3) and isinstance(self, TestInClass)
    """
    )
    pytester.runpytest("-p", "no:cacheprovider").assert_outcomes(passed=4)


def test_assume_skips_cases():
    @theorem(Family.layouts(rank=1, extent=3, stride=1), examples=10)
    def prop(L):
        assume(L.size > 1)
        assert L.size > 1

    prop()
    assert prop.theorem_stats["skipped"] == 2 and prop.theorem_stats["exhaustive"] == 4


def test_a_returned_result_is_checked():
    @theorem(Family.layouts(rank=1, extent=2, stride=2), examples=0)
    def prop(L):
        return verify.equal(L, Layout(L.size, 1))

    with pytest.raises(TheoremFailure) as ei:
        prop()
    e = ei.value
    assert e.mode == "exhaustive" and e.arguments == {"L": Layout(1, 0)} or e.arguments["L"].size == 2
    assert e.result is not None and e.result.status == "refuted"
    assert "counterexample: coordinate 1" in str(e)


def test_hypothesis_only_source_and_swizzle_picture():
    from layoutproof.verify.strategies import swizzled_layouts

    @theorem(C=swizzled_layouts(swizzle=Swizzle(1, 0, 1)), examples=20)
    def prop(C):
        assert C(1) == 1, "the swizzle moved element 1"

    with pytest.raises(TheoremFailure) as ei:
        prop()
    e = ei.value
    assert e.mode == "hypothesis"
    assert "Sw<1,0,1> o 0 o" in e.layoutproof_report and "+---+" in e.layoutproof_report


def test_explicit_values_only_run_exhaustively():
    @theorem(Family.values(Layout(4, 1), Layout((2, 2), (2, 1))))
    def prop(L):
        assert L.size == 4

    prop()
    assert prop.theorem_stats["exhaustive"] == 2 and prop.theorem_stats["hypothesis"] == 0


def test_ill_formed_theorems():
    with pytest.raises(TheoremError, match="no parameter 'X'"):
        theorem(X=Family.values(1))(lambda L: None)
    with pytest.raises(TheoremError, match="two sources"):
        theorem(Family.values(1), L=Family.values(1))(lambda L: None)
    with pytest.raises(TheoremError, match="fills 2"):
        theorem(Family.composition_pairs())(lambda A: None)
    with pytest.raises(TheoremError, match="source"):
        theorem(42)(lambda L: None)
    with pytest.raises(TheoremError, match="family must be"):
        theorem(family="diagonal")
    with pytest.raises(TheoremError, match="bound="):
        theorem(bound=dict(rank=1, extent=2, stride=1, colour=3))(lambda L: None)

    @theorem(bound=dict(rank=2, extent=4, stride=4), max_cases=1000)
    def too_big(A, B):
        pass

    with pytest.raises(TheoremError, match="max_cases=1000"):
        too_big()

    @theorem(Family.values(1), exhaustive=False)
    def nothing(n):
        pass

    with pytest.raises(TheoremError, match="nothing to run"):
        nothing()


def test_symbolic_decorator_and_identity():
    @theorem.symbolic(assume="M % 4 == 0")
    def tile(M, N):
        return composition(Layout((M, N), (N, 1)), Layout(4, 1)), Layout(4, N)

    tile()
    assert tile.theorem_stats["result"].status == "proved"

    @theorem.symbolic()
    def tile_without_the_assumption(M, N):
        return composition(Layout((M, N), (N, 1)), Layout(4, 1)), Layout(4, N)

    with pytest.raises(TheoremFailure) as ei:
        tile_without_the_assumption()
    e = ei.value
    assert e.mode == "z3" and e.result.status == "refuted"
    assert set(e.arguments) == {"M", "N"}
    assert "lhs = " in e.layoutproof_report and "rhs = " in e.layoutproof_report

    bounded = theorem.identity(
        lambda M, N: composition(Layout((M, N), (N, 1)), Layout(4, 1)),
        lambda M, N: Layout(4, N),
        assume="M % 4 == 0",
        require_proof=True,
    )
    bounded()  # proved: require_proof is satisfied
    # Z3 cannot settle this equality in 100 ms (nonlinear div/mod): a bounded "checked" verdict
    sides = (
        lambda M, N: Layout((2, 3 * M, N), (1, 2, 6 * M)),
        lambda M, N: Layout((3, 2 * M, N), (1, 3, 6 * M)),
    )
    checked = theorem.identity(*sides, bounds=3, timeout_ms=100)
    checked()
    assert checked.theorem_stats["result"].status == "checked"
    with pytest.raises(TheoremFailure, match="only checked within bounds"):
        theorem.identity(*sides, bounds=3, require_proof=True, timeout_ms=100)()
    with pytest.raises(TheoremFailure, match="not proved by the z3 mode: unknown"):
        theorem.identity(*sides, bounds=False, timeout_ms=100)()


# ----------------------------------------------------------------------------- pictures
def test_pictures():
    assert picture(Layout((2, 2, 2), (1, 2, 4))).startswith("drawn as (2,(2,2)):(1,(2,4))")
    from layoutproof import symbols

    M = symbols("M")
    assert picture(Layout((M, 2), (1, M))) == ""
    assert picture("not a layout") == ""
    C = composition(Swizzle(1, 0, 1), Layout((2, 2), (2, 1)))
    assert picture(C).splitlines()[0] == "Sw<1,0,1> o 0 o (2,2):(2,1)"
    assert " 0  | 0 | 1 |\n    +---+---+\n 1  | 3 | 2 |" in picture(C)
    assert describe(Swizzle(3, 3, 3)) == "Sw<3,3,3>    # Swizzle(3, 3, 3)"
    assert describe(5) == "5"
