"""Every condition the algebra can refuse or leave undecided has an explanation.

The library's raise sites are found by scanning its source (tests/explain/explain_conditions.py):
each condition they can raise must be an entry of ``layoutproof.explain.CONDITIONS`` (its
statement in the algebra's terms), and each entry has an input that raises it.  For each,
the explanation names that entry, states it, carries the error's witness, re-evaluates
the witness (a refusal) or gives what settles it (an undecided condition), and every
repair it offers is run again here and meets the operation's post-condition.
"""

from __future__ import annotations

import importlib

import pytest
from explain_conditions import DYNAMIC, EXAMPLES, UNREACHED, Example, raise_sites, site_conditions

import layoutproof as lp
from layoutproof import InadmissibleError, MalformedLayoutError, UndecidableConditionError, symbolic
from layoutproof.explain import CONDITIONS, explain, render_assumptions, rule_of
from layoutproof.notation import evaluate
from layoutproof.verify import postcondition

NAMES = {n: getattr(lp, n) for n in lp.__all__ if callable(getattr(lp, n))}


def test_the_scan_finds_the_raise_sites():
    sites = raise_sites()
    files = {s.file for s in sites}
    assert {"ops.py", "analysis.py", "composed.py", "symbolic/symops.py", "symbolic/__init__.py"} <= files
    assert any(s.literal == "disjointness of B's modes in A" for s in sites)
    assert len(sites) > 60


def test_every_raise_site_has_an_explanation():
    """A new condition (a literal not in CONDITIONS, or a computed one not in DYNAMIC) fails."""
    missing = []
    for s in raise_sites():
        conds = site_conditions(s)
        if conds is None:
            missing.append(
                f"{s.file}:{s.line} ({s.function}): condition={s.condition} is computed; list it in DYNAMIC"
            )
            continue
        for c in conds:
            if c not in CONDITIONS and not (s.error == "condition_name" and "leaf" in c):
                missing.append(f"{s.file}:{s.line} ({s.function}): {c!r} has no entry in explain.CONDITIONS")
    assert not missing, "\n".join(missing)


def test_dynamic_table_is_current():
    """Each DYNAMIC entry still matches a site (a removed site leaves no stale entry)."""
    keys = {(s.file, s.condition) for s in raise_sites()}
    assert not set(DYNAMIC) - keys, set(DYNAMIC) - keys


def test_every_condition_has_an_example():
    assert set(EXAMPLES) == set(CONDITIONS), set(CONDITIONS) ^ set(EXAMPLES)


def _raise(ex: Example):
    """The error the example raises, run directly (not through explain)."""
    with symbolic.assuming(*ex.assume) if ex.assume else _Null():
        try:
            ex.expr() if callable(ex.expr) else evaluate(ex.expr, NAMES)
        except (InadmissibleError, UndecidableConditionError) as e:
            return e
    return None


class _Null:
    def __enter__(self):
        return None

    def __exit__(self, *a):
        return None


def check_repairs(e) -> None:
    for r in e.repairs:
        if r.kind == "assume":
            continue
        op = r.expression.split("(", 1)[0]
        v = evaluate(r.expression, NAMES)
        assert str(v) == r.result, r
        args = evaluate(
            r.expression.replace(op + "(", "make_tuple(", 1), {**NAMES, "make_tuple": lambda *a: a}
        )
        assert postcondition(op, v, *args).status == "proved", r


@pytest.mark.parametrize("rule", sorted(EXAMPLES))
def test_condition_is_explained(rule, monkeypatch):
    ex = EXAMPLES[rule]
    for mod, attr, value in ex.patch:
        monkeypatch.setattr(importlib.import_module(mod), attr, value)
    if rule in UNREACHED and UNREACHED[rule][0] is None:
        with pytest.raises(MalformedLayoutError):
            _raise(ex)
        return
    err = _raise(ex)
    assert err is not None, f"{rule}: the example does not raise"
    if rule in UNREACHED:
        rule = UNREACHED[rule][0]  # the condition raised first
    assert rule_of(err) == rule
    e = explain(ex.expr, assume=ex.assume, budget_s=0.2)
    assert e.rule == rule and e.spec == CONDITIONS[rule]
    assert e.condition == str(err.condition)
    text = e.render("text")
    assert CONDITIONS[rule] in text
    if isinstance(err, UndecidableConditionError):
        assert e.status == "undecided"
        assert e.settle
        if e.assumptions:  # a formula: the assumption that settles it, as code
            assert err.expr is not None and e.assumptions == (str(err.condition),)
            ns: dict = {}
            exec(render_assumptions(list(e.used) + list(e.assumptions), "python"), ns)
            code = ns["guard"].__code__
            names = code.co_varnames[: code.co_argcount]
            if e.holds is not None:  # the guard passes where the condition holds, fails where not
                ns["guard"](**{k: e.holds.values.get(k, 1) for k in names})
            if e.fails is not None:
                with pytest.raises(ValueError):
                    ns["guard"](**{k: e.fails.values.get(k, 1) for k in names})
    else:
        assert e.status == "refused"
        assert e.witness == err.witness
        assert e.reproduction is not None and e.reproduction.holds, e.reproduction
        assert e.repairs or e.no_repairs or "none found" in text
    check_repairs(e)
