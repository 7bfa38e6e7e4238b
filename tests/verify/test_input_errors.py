"""Mistakes in how a check is called are MalformedLayoutError (a LayoutError) naming the
mistake, never a bare TypeError from inside verify."""

from __future__ import annotations

import pytest

pytest.importorskip("sympy")
pytest.importorskip("z3")

from layoutproof import Layout, LayoutError, MalformedLayoutError, symbols, verify  # noqa: E402


def test_identity_params_do_not_match_the_functions() -> None:
    with pytest.raises(MalformedLayoutError, match=r"identity: the lhs takes \(M\).* 0 \(none\)"):
        verify.identity(lambda M: M, lambda M: Layout(M, 1), [])
    with pytest.raises(MalformedLayoutError, match=r"the lhs takes \(M\).* 2 \(M, N\)"):
        verify.identity(lambda M: Layout(M, 1), lambda M, N: Layout(M, 1), ["M", "N"])
    with pytest.raises(MalformedLayoutError, match=r"the rhs takes \(M, N\)"):
        verify.identity(lambda M: Layout(M, 1), lambda M, N: Layout(M, 1), "M")
    with pytest.raises(MalformedLayoutError, match="no positional parameters"):
        verify.identity(lambda *, M: Layout(M, 1), lambda M: Layout(M, 1), ["M"])
    # *args and defaults fit
    assert verify.identity(lambda *a: Layout(a[0], 1), lambda M: Layout(M, 1), ["M"]).status == "proved"
    assert verify.identity(lambda M, k=1: Layout(M, k), lambda M: Layout(M, 1), ["M"]).status == "proved"


@pytest.mark.parametrize("side", [None, 3.5, object()])
def test_identity_sides_that_are_not_functions_or_layouts(side: object) -> None:
    with pytest.raises(LayoutError):
        verify.identity(side, lambda M: Layout(M, 1), ["M"])


@pytest.mark.parametrize(
    "bounds", ["x", 3.5, (1, 2, 3), (5, 1), 0, {"M": "a"}, {"M": (4, 2)}, {3: (1, 2)}, [1, 2]]
)
def test_wrong_bounds_refused_on_entry(bounds: object) -> None:
    M = symbols("M")
    with pytest.raises(MalformedLayoutError, match="bounds"):
        verify.identity(lambda M: Layout(M, 1), lambda M: Layout(M, 1), ["M"], bounds=bounds)
    with pytest.raises(MalformedLayoutError, match="bounds"):
        verify.equal(Layout(M, 1), Layout(M, 1), bounds=bounds)
    with pytest.raises(MalformedLayoutError, match="bounds"):
        verify.admissible("coalesce", Layout(M, 1), bounds=bounds)
    with pytest.raises(MalformedLayoutError, match="bounds"):
        verify.postcondition("coalesce", Layout(M, 1), Layout(M, 1), bounds=bounds)


def test_good_bounds_accepted() -> None:
    M = symbols("M")
    for b in (None, False, 8, (2, 8), {"M": 8}, {M: (1, 4)}):
        r = verify.identity(lambda M: Layout(M, 1), lambda M: Layout(M, 1), ["M"], bounds=b)
        assert r.status == "proved"


def test_other_entry_points_name_the_mistake() -> None:
    M = symbols("M")
    with pytest.raises(MalformedLayoutError, match="do not fit its signature"):
        verify.admissible("composition", Layout(M, 1))
    with pytest.raises(MalformedLayoutError, match="unknown operation"):
        verify.admissible(3, Layout(M, 1))
    with pytest.raises(MalformedLayoutError, match="operands are expected"):
        verify.postcondition("coalesce", Layout(M, 1))
    with pytest.raises(LayoutError, match="fn must be callable"):
        verify.function(3, (4,))
    with pytest.raises(LayoutError, match="expected a layout"):
        verify.equal(lambda M: Layout(M, 1), Layout(M, 1))


def test_function_needs_a_shape_and_a_one_argument_function() -> None:
    with pytest.raises(MalformedLayoutError, match="shape of the coordinates"):
        verify.function(lambda i: i)
    with pytest.raises(MalformedLayoutError, match=r"fn takes \(i, j\)"):
        verify.function(lambda i, j: i, 4)
    assert verify.equal(verify.function(lambda i: i, 4), Layout(4, 1)).status == "proved"


@pytest.mark.parametrize("assume", [3, object(), ["M > 0", 5], [None]])
def test_assumptions_of_the_wrong_type_are_refused_everywhere(assume: object) -> None:
    M = symbols("M")
    with pytest.raises(MalformedLayoutError, match="assum"):
        verify.equal(Layout(4, 1), Layout(4, 1), assume=assume)  # concrete: nothing parses them
    with pytest.raises(MalformedLayoutError, match="assum|condition"):
        verify.identity(lambda M: Layout(M, 1), lambda M: Layout(M, 1), ["M"], assume=assume)
    with pytest.raises(MalformedLayoutError, match="assum|condition"):
        verify.postcondition("coalesce", Layout(M, 1), Layout(M, 1), assume=assume)
    with pytest.raises(MalformedLayoutError, match="assum|condition"):
        verify.admissible("coalesce", Layout(4, 1), assume=assume)


def test_identity_params_named_twice_or_sides_out_of_scope() -> None:
    with pytest.raises(MalformedLayoutError, match="M more than once"):
        verify.identity(lambda M, N: Layout(M, 1), lambda M, N: Layout(M, 1), ["M", "M"])
    N = symbols("N")
    with pytest.raises(MalformedLayoutError, match=r"symbols \['N'\], not parameters"):
        verify.identity(lambda M: Layout(N, 1), lambda M: Layout(M, 1), ["M"])


def test_non_layout_returns_are_named() -> None:
    for bad in (None, 1.5, [1], {"a": 1}):
        with pytest.raises(LayoutError, match=r"identity \(lhs\): expected a layout"):
            verify.identity(lambda M, bad=bad: bad, lambda M: Layout(M, 1), ["M"])
    with pytest.raises(LayoutError, match="the result: expected a layout"):
        verify.postcondition("coalesce", None, Layout(4, 1))


def test_a_side_that_needs_integers_is_checked_at_integers() -> None:
    # range(M) cannot take a SymPy symbol: the identity is checked in a box instead
    r = verify.identity(lambda M: Layout(len(range(M)), 1), lambda M: Layout(M, 1), ["M"], bounds=8)
    assert r.status == "checked"
    assert any("symbolic parameters" in n for n in r.notes)
    r = verify.identity(lambda M: Layout(len(range(M)), 1), lambda M: Layout(M + 1, 1), ["M"], bounds=8)
    assert r.status == "refuted" and r.counterexample.assignment == {"M": 1}
