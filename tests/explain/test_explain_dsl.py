"""The CuTe DSL that ``Explanation.render("dsl")`` emits runs in the CuTe DSL
(nvidia-cutlass-dsl computes layouts inside ``@cute.jit`` without a GPU): a divisibility
becomes ``cute.assume(x, divby=k)``, which the DSL's layouts then carry (``?{div=k}``); any
other condition is a host-side ``assert`` that passes where it holds and fails where it does
not.  Skipped where ``cutlass.cute`` cannot be imported; run in a subprocess (some invalid
inputs kill the DSL's process)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from layoutproof.explain import explain

PROBE = "import cutlass.cute"


def _dsl_available() -> bool:
    r = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, timeout=120)
    return r.returncode == 0


pytestmark = pytest.mark.skipif(
    not _dsl_available(), reason="the CuTe DSL (nvidia-cutlass-dsl) is not installed"
)


def _run(src: str, tmp_path) -> subprocess.CompletedProcess:
    f = tmp_path / "snippet.py"  # @cute.jit reads its function's source from a file
    f.write_text(src)
    return subprocess.run([sys.executable, str(f)], capture_output=True, text=True, timeout=300)


def test_divby_assumption_runs_and_is_carried(tmp_path):
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
    r = _run(src, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "?{div=64}" in r.stdout, r.stdout


def test_host_assert_separates_the_models(tmp_path):
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
        r = _run(src, tmp_path)
        if ok is True:
            assert r.returncode == 0, r.stderr[-2000:]
        elif ok is False:
            assert r.returncode != 0 and "ValueError" in r.stderr
