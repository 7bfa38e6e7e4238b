"""The CuTe DSL that ``Explanation.render("dsl")`` emits runs in the CuTe DSL
(nvidia-cutlass-dsl computes layouts inside ``@cute.jit`` without a GPU): a divisibility
becomes ``cute.assume(x, divby=k)``, which the DSL's layouts then carry (``?{div=k}``); any
other condition is a host-side check that passes where it holds and raises ValueError where
it does not.  The DSL is installed from PyPI into a cache folder on first use
(tests/oracles.py); where it cannot be, the tests skip and test_explain_dsl_parse.py checks
the emitted DSL by parsing.  Run in a subprocess (some invalid inputs kill the DSL's
process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Dict

import pytest
from oracles import dsl_env

from layoutproof.explain import explain

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def dsl():
    """The environment a subprocess imports the CuTe DSL with (installed from PyPI into a
    cache folder on first use: tests/oracles.py), or a skip saying why there is none."""
    env, why = dsl_env()
    if env is None:
        pytest.skip(f"{why}; test_explain_dsl_parse.py checks the emitted DSL by parsing")
    return env


def _run(src: str, tmp_path, env: Dict[str, str]) -> subprocess.CompletedProcess:
    f = tmp_path / "snippet.py"  # @cute.jit reads its function's source from a file
    f.write_text(src)
    return subprocess.run([sys.executable, str(f)], capture_output=True, text=True, timeout=300, env=env)


def test_divby_assumption_runs_and_is_carried(tmp_path, dsl):
    e = explain("zipped_divide((M,N):(1,M), (64,32))", assume=["M % 64 == 0"])
    snippet = e.render("dsl")
    assert snippet == "M = cute.assume(M, divby=64)"
    src = textwrap.dedent(
        """
        import cutlass
        import cutlass.cute as cute

        @cute.jit
        def f(M: cutlass.Int32, N: cutlass.Int32):
        {body}
            L = cute.make_layout((M, N), stride=(1, M))
            print(cute.zipped_divide(L, (64, 32)))

        f(128, 64)
        """
    ).format(body=textwrap.indent(snippet, "    "))
    r = _run(src, tmp_path, dsl)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "?{div=64}" in r.stdout, r.stdout


def test_host_assert_separates_the_models(tmp_path, dsl):
    e = explain("composition((M,4):(1,M+1), 128:1)")
    snippet = e.render("dsl")
    assert snippet.splitlines()[-1].startswith("    raise ValueError(")
    for values, ok in ((e.holds.values, None), ({"M": 128}, True), (e.fails.values, False)):
        src = (
            "import cutlass.cute as cute\n"
            + "".join(f"{k} = {v}\n" for k, v in values.items())
            + snippet
            + "\n"
        )
        r = _run(src, tmp_path, dsl)
        if ok is True:
            assert r.returncode == 0, r.stderr[-2000:]
        elif ok is False:
            assert r.returncode != 0 and "ValueError" in r.stderr


def _compose_src(a: str, b: str) -> str:
    def mk(t: str) -> str:
        sh, st = t.split(":")
        return f"cute.make_layout({sh}, stride={st})"

    return textwrap.dedent(
        f"""
        import cutlass.cute as cute

        @cute.jit
        def f():
            print(cute.composition({mk(a)}, {mk(b)}))

        f()
        """
    )


def test_2657_refused_in_the_dsl_and_the_repair_computes_there(tmp_path, dsl):
    """NVIDIA/cutlass#2657: the DSL cannot compose (2,3):(4,1) o (3,4):(3,1); the repair
    explain offers first that changes B's stride computes, in the DSL, the layout
    layoutproof computes."""
    r = _run(_compose_src("(2,3):(4,1)", "(3,4):(3,1)"), tmp_path, dsl)
    assert r.returncode != 0 and "unable to compute" in (r.stdout + r.stderr), (r.stdout, r.stderr[-2000:])
    e = explain("composition((2,3):(4,1), (3,4):(3,1))")
    rep = next(x for x in e.repairs if x.kind == "stride")
    a, b = rep.expression[len("composition(") : -1].split(", ")
    r = _run(_compose_src(a, b), tmp_path, dsl)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip().replace(" ", "") == rep.result, (r.stdout, rep.result)
