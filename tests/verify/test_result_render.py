"""verify results render the assumptions they used as code (the renderer explain uses too)."""

from __future__ import annotations

import pytest

from layoutproof import MalformedLayoutError
from layoutproof.verify import Result
from layoutproof.verify.cli import check_statement, main
from layoutproof.verify.emit import render_assumptions

STMT = "zipped_divide((M,N):(1,M), (64,32)) == zipped_divide((M,N):(1,M), (64,32))"


def test_result_renders_its_assumptions() -> None:
    r = Result("proved", "z3", claim="M*N:1 == M*N:1", assumptions=["M % 64 == 0", "N >= 2"])
    assert r.render("dsl").splitlines()[0] == "M = cute.assume(M, divby=64)"
    assert "if not (N >= 2):" in r.render("dsl")
    assert r.render("cpp", static=["M"]).splitlines() == [
        "CUTE_STATIC_ASSERT_V((M % Int<64>{}) == Int<0>{});",
        'if (!(N >= 2)) throw std::invalid_argument("check: M*N:1 == M*N:1: needs N >= 2");  // <stdexcept>',
    ]
    ns: dict = {}
    exec(r.render("python"), ns)
    ns["guard"](M=128, N=2)
    with pytest.raises(ValueError, match="M % 64 == 0"):
        ns["guard"](M=100, N=2)
    assert r.render() == r.explain()
    assert Result("proved", "exhaustive").render("cpp") == "// no assumptions needed"
    with pytest.raises(MalformedLayoutError):
        r.render("rust")


def test_explain_uses_the_same_renderer() -> None:
    from layoutproof import explain as ex

    assert ex.render_assumptions is render_assumptions


def test_check_result_and_cli_emit(capsys: pytest.CaptureFixture) -> None:
    r = check_statement(STMT, assume=["M % 64 == 0"])
    assert r.status == "proved" and r.render("dsl") == "M = cute.assume(M, divby=64)"
    rc = main([STMT, "--assume", "M % 64 == 0", "--emit", "cpp", "--static", "M"])
    out, err = capsys.readouterr()
    assert rc == 0 and out.strip() == "CUTE_STATIC_ASSERT_V((M % Int<64>{}) == Int<0>{});"
    assert err.startswith("proved")
    rc = main(["coalesce((M,N):(1,M)) == M*N:1", "--emit", "python"])
    out, _ = capsys.readouterr()
    assert rc == 0 and out.strip() == "# no assumptions needed"
