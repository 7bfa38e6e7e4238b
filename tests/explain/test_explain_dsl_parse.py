"""The emitted CuTe DSL, checked by parsing where the DSL itself is not installed
(test_explain_dsl.py runs it in the DSL where it is).

Every snippet ``render("dsl")`` produces -- for explanations (used and needed assumptions,
undecided conditions, generated refusals) and for verify's results (including unknown ones)
-- is Python that parses; each ``cute`` call is ``X = cute.assume(X, divby=k)`` with ``X`` a
symbol of the conditions and ``k`` a positive integer literal, the only attribute of
``cute`` used; every other statement is a comment, or an ``if not (...)`` host check that
raises ``ValueError`` with a string; every name read is a symbol of the conditions (or
``ValueError``).  The host checks are run, with the symbols bound to a model where the
condition holds and one where it fails: they pass and raise as they should.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterable, List, Set

import pytest
from explain_gen import SYMBOLIC
from hypothesis import HealthCheck, given, settings

from layoutproof import symbolic
from layoutproof.explain import explain
from layoutproof.verify import Result
from layoutproof.verify.emit import render_assumptions

CONDS = [
    "M % 64 == 0",
    "M >= 128",
    "(128 <= M) or (128 % M == 0)",
    "(N % 8 == 0) and (M % 64 == 0)",
    "M - 1 >= 1",
    "not (M == 2)",
    "N <= M",
    "4 % (M + 1) == 0",
    "M*(Mod(2, M + 1)) == 0",
]


def check_dsl(src: str, symbols: Iterable[str]) -> List[ast.stmt]:
    """Parse ``src`` and check its form (module docstring); the host checks it contains."""
    tree = ast.parse(src)
    syms: Set[str] = set(symbols)
    allowed = syms | {"ValueError"}
    checks: List[ast.stmt] = []
    for st in tree.body:
        if isinstance(st, ast.Assign):
            # X = cute.assume(X, divby=k)
            assert len(st.targets) == 1 and isinstance(st.targets[0], ast.Name), ast.dump(st)
            x = st.targets[0].id
            call = st.value
            assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute), ast.dump(st)
            assert isinstance(call.func.value, ast.Name) and call.func.value.id == "cute"
            assert call.func.attr == "assume"
            assert len(call.args) == 1 and isinstance(call.args[0], ast.Name) and call.args[0].id == x
            assert [k.arg for k in call.keywords] == ["divby"]
            k = call.keywords[0].value
            assert isinstance(k, ast.Constant) and type(k.value) is int and k.value > 0
            assert x in syms, (x, syms)
        elif isinstance(st, ast.If):
            # if not (cond): raise ValueError("...")
            assert isinstance(st.test, ast.UnaryOp) and isinstance(st.test.op, ast.Not), ast.dump(st.test)
            assert not st.orelse and len(st.body) == 1 and isinstance(st.body[0], ast.Raise)
            exc = st.body[0].exc
            assert (
                isinstance(exc, ast.Call) and isinstance(exc.func, ast.Name) and exc.func.id == "ValueError"
            )
            assert (
                len(exc.args) == 1
                and isinstance(exc.args[0], ast.Constant)
                and isinstance(exc.args[0].value, str)
            )
            checks.append(st)
        else:
            raise AssertionError(f"unexpected statement {ast.dump(st)}")
        for node in ast.walk(st):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id != "cute":
                assert node.id in allowed, (node.id, src)
            if isinstance(node, ast.Attribute):
                assert isinstance(node.value, ast.Name) and node.value.id == "cute" and node.attr == "assume"
            assert not isinstance(node, (ast.Assert, ast.Import, ast.ImportFrom))
    return checks


def _symbols(conds: Iterable[str]) -> Set[str]:
    return {s.name for c in conds for s in symbolic.parse_expr(c).free_symbols}


def _model(cond: str, want: bool) -> Dict[str, int]:
    names = sorted(_symbols([cond]))
    c = symbolic.parse_expr(cond)
    import itertools

    for vals in itertools.product(range(1, 200), repeat=len(names)):
        asg = dict(zip(names, vals))
        if symbolic.exact_value(c, asg) is want:
            return asg
    raise AssertionError(f"no model of {cond} = {want}")


@pytest.mark.parametrize("cond", CONDS)
def test_each_condition_parses_and_its_check_separates_the_models(cond):
    src = render_assumptions([cond], "dsl", what="op")
    checks = check_dsl(src, _symbols([cond]))
    if "cute.assume(" in src:
        assert not checks  # a divisibility is declared, not checked
        return
    assert len(checks) == 1
    exec(src, dict(_model(cond, True)))  # holds: passes
    with pytest.raises(ValueError, match="op: needs"):
        exec(src, dict(_model(cond, False)))


def test_several_conditions_and_the_explanations():
    src = render_assumptions(CONDS, "dsl", what="op")
    check_dsl(src, _symbols(CONDS))
    for expr, assume, rep in [
        ("zipped_divide((M,N):(1,M), (64,32))", ["M % 64 == 0"], False),
        ("composition((M,4):(1,M+1), 128:1)", [], True),  # the weakest assumption found
        ("composition((?{div=8},4):(1,?), 64:2)", [], False),
        ("complement((2,2):(M,N), 64)", [], False),
        ("left_inverse((8,8):(M,M))", [], False),  # undecided, no formula settles it: a comment
        ("composition((6,2):(1,7), (3,2):(2,3))", [], False),  # concrete: nothing to assume
    ]:
        e = explain(expr, assume=assume, repairs=rep)
        src = e.render("dsl")
        syms = _symbols(list(e.used) + list(e.needed()))
        check_dsl(src, syms)
        if e.status == "undecided":
            assert src.startswith("# undecided: ")


def test_results_render_parseable_dsl():
    for r in [
        Result("proved", "z3", claim="A == B", assumptions=["M % 64 == 0", "N >= 2"]),
        Result("unknown", "z3", claim="admissible X", condition="(128 <= M) or (128 % M == 0)"),
        Result("unknown", "z3", claim="A == B", reason="undecided symbolically: M % 8 == 0"),
        Result("unknown", "z3", claim="A == B", reason="timeout"),
        Result("checked", "bounded", claim="A == B", condition="N <= M", bounds={"M": (1, 8), "N": (1, 8)}),
    ]:
        check_dsl(r.render("dsl"), _symbols(list(r.assumptions) + list(r.needed())))


@settings(max_examples=8, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(SYMBOLIC)
def test_generated_undecided_conditions_render_parseable_dsl(expr):
    try:
        e = explain(expr, repairs=False)
    except Exception:  # malformed operands (a LayoutError): nothing to render
        return
    check_dsl(e.render("dsl"), _symbols(list(e.used) + list(e.needed())))


@pytest.mark.slow
@settings(max_examples=25, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(SYMBOLIC)
def test_generated_repairs_render_parseable_dsl(expr):
    """With the repair search: the weakest assumption found is what is rendered."""
    try:
        e = explain(expr, budget_s=0.05)
    except Exception:
        return
    check_dsl(e.render("dsl"), _symbols(list(e.used) + list(e.needed())))
