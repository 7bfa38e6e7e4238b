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


def test_unknown_result_renders_the_condition_that_settles_it() -> None:
    """An unknown (or bounded-only) result adds the undecided condition, after a comment."""
    r = check_statement("admissible composition((M,4):(1,M+1), 128:1)")
    assert r.status == "unknown" and r.needed() == ("(128 <= M) or (128 % M == 0)",)
    dsl = r.render("dsl").splitlines()
    assert dsl[0].startswith("# unknown: the check needs (128 <= M) or (128 % M == 0)")
    assert "if not ((128 <= M) or (128 % M == 0)):" in dsl
    cpp = r.render("cpp").splitlines()
    assert cpp[0].startswith("// unknown:") and cpp[1].startswith("if (!((128 <= M) || ((128 % M) == 0)))")
    ns: dict = {}
    exec(r.render("python"), ns)
    ns["guard"](M=256)  # holds
    ns["guard"](M=64)  # 64 divides 128
    with pytest.raises(ValueError, match="128 <= M"):
        ns["guard"](M=3)
    # a reason that names the condition, and one that names none
    assert Result("unknown", "z3", reason="undecided symbolically: M % 8 == 0").render("dsl").splitlines()[
        1
    ] == ("M = cute.assume(M, divby=8)")
    t = Result("unknown", "z3", claim="A == B", reason="timeout").render("python")
    assert t.startswith("# unknown: timeout -- no condition on the parameters is named")
    assert Result("unknown", "z3", condition="stride divisibility").needed() == ()  # a name, no formula
    assert Result("proved", "z3", condition="M >= 1").needed() == ()


def test_undecided_explanation_renders_what_settles_it() -> None:
    from layoutproof.explain import explain

    e = explain("composition((M,4):(1,M+1), 128:1)")
    lines = e.render("cpp").splitlines()
    assert lines[0] == "// undecided: shape divisibility of A's mode 0 -- assume 128 <= M, the weakest found"
    assert lines[1].startswith("if (!(128 <= M)) throw std::invalid_argument(")
    e = explain("left_inverse((8,8):(M,M))")  # no formula settles it: said so
    assert e.status == "undecided" and not e.assumptions
    assert e.render("dsl").startswith(
        "# undecided: injectivity (non-overlapping modes) -- no assumption settles"
    )


def test_cli_emit_of_an_unknown_check(capsys: pytest.CaptureFixture) -> None:
    rc = main(["admissible composition((M,4):(1,M+1), 128:1)", "--emit", "python"])
    out, err = capsys.readouterr()
    assert err.startswith("unknown")
    assert out.startswith("# unknown: the check needs (128 <= M) or (128 % M == 0)")
    ns: dict = {}
    exec(out, ns)
    ns["guard"](M=128)
    with pytest.raises(ValueError):
        ns["guard"](M=3)
    assert rc != 0


def test_a_python_guard_with_a_quotient_is_exact() -> None:
    """``(M/2) % 3 == 1`` is checked with fractions, never floats (a float rounds past
    2**53: 2**60 + 2 would pass as 2**60)."""
    import sympy as sp

    from layoutproof.symbolic import as_python, symbols
    from layoutproof.verify.emit import render_assumptions

    M = symbols("M")
    code = render_assumptions([as_python(sp.Eq(sp.Mod(M / 2, 3), 1))], "python")
    assert "from fractions import Fraction" in code and "Fraction(1, 2)" in code
    ns: dict = {}
    exec(code, ns)  # noqa: S102 - the emitted guard, run as the user would
    ok = {m for m in (1, 2, 3, 8, 2**60 + 2, 2**60 + 8) if _passes(ns["guard"], m)}
    assert ok == {m for m in (1, 2, 3, 8, 2**60 + 2, 2**60 + 8) if m % 2 == 0 and (m // 2) % 3 == 1}


def _passes(guard: object, m: int) -> bool:
    try:
        guard(m)  # type: ignore[operator]
    except ValueError:
        return False
    return True
