"""layoutproof.explain: refusals explained, witnesses re-evaluated, repairs proven.

The property test generates small operands of the operations that refuse (composition,
logical_divide, complement, left/right inverse, upcast, blocked_product), and for every
refusal checks that the explanation names the error's condition and witness, that the
witness reproduces the failure (both sides evaluated there), and that every offered repair
is admissible and meets the operation's post-condition -- checked again here,
independently of the explanation.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import layoutproof as lp
from layoutproof import InadmissibleError, Layout, LayoutError, MalformedLayoutError
from layoutproof.explain import Explanation, explain, render_assumptions
from layoutproof.notation import evaluate
from layoutproof.verify import postcondition

NAMES = {n: getattr(lp, n) for n in lp.__all__ if callable(getattr(lp, n))}

# the conditions whose witness the explanation re-evaluates directly
EVALUATED = {
    "disjointness of B's modes in A",
    "stride divisibility",
    "shape divisibility",
    "non-negative strides of B",
    "complement admissibility (stride chain)",
    "non-negative strides",
    "injectivity (non-overlapping modes)",
    "upcast stride divisibility",
}


def _layout(min_stride: int = 0) -> st.SearchStrategy[Layout]:
    ext = st.integers(1, 6)
    strd = st.integers(min_stride, 9)
    one = st.tuples(ext, strd).map(lambda p: Layout(p[0], p[1]))
    two = st.tuples(ext, ext, strd, strd).map(lambda p: Layout((p[0], p[1]), (p[2], p[3])))
    three = st.tuples(ext, ext, ext, strd, strd, strd).map(lambda p: Layout(p[:3], p[3:]))
    return st.one_of(one, two, three)


CASES = st.one_of(
    st.tuples(st.just("composition"), _layout(1), _layout(0)),
    st.tuples(st.just("logical_divide"), _layout(1), _layout(1)),
    st.tuples(st.just("complement"), _layout(-2), st.integers(1, 64)),
    st.tuples(st.just("left_inverse"), _layout(-2)),
    st.tuples(st.just("right_inverse"), _layout(-2)),
    st.tuples(st.just("upcast"), _layout(1), st.sampled_from([2, 3, 4])),
    st.tuples(st.just("blocked_product"), _layout(1), _layout(1)),
)


def _text(name: str, args: tuple) -> str:
    return f"{name}({', '.join(str(a) for a in args)})"


def check_explanation(name: str, args: tuple) -> Explanation | None:
    fn = NAMES[name]
    try:
        fn(*args)
    except InadmissibleError as err:
        e = explain(_text(name, args), budget_s=0.15)
        assert e.status == "refused"
        assert e.condition == err.condition
        assert e.witness == err.witness
        assert e.message == str(err)
        if err.condition in EVALUATED and err.witness is not None:
            assert e.reproduction is not None and e.reproduction.holds, (e.reproduction, e.message)
        for r in e.repairs:  # each repair, run again here, is admissible and correct
            op = r.expression.split("(", 1)[0]
            v = evaluate(r.expression, NAMES)
            assert str(v) == r.result
            args2 = evaluate(
                r.expression.replace(op + "(", "make_tuple(", 1), {**NAMES, "make_tuple": lambda *a: a}
            )
            assert postcondition(op, v, *args2).status == "proved", r
        return e
    except LayoutError:
        return None  # not a refusal (malformed operands, say)
    return None


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(CASES)
def test_every_refusal_is_explained(case):
    name, *args = case
    check_explanation(name, tuple(args))


@pytest.mark.parametrize(
    "expr,condition,witness",
    [
        ("composition((6,2):(1,7), (3,2):(2,3))", "disjointness of B's modes in A", 5),
        ("composition((4,6):(1,5), 6:1)", "shape divisibility", 4),
        ("composition((4,6):(1,5), 4:3)", "stride divisibility", 2),
        ("composition((4,6):(1,5), 2:-1)", "non-negative strides of B", 1),
        ("complement((2,2):(1,3), 16)", "complement admissibility (stride chain)", 2),
        ("complement(4:-1, 16)", "non-negative strides", 1),
        ("upcast((4,3):(3,1), 2)", "upcast stride divisibility", 1),
        ("logical_divide((6,2):(1,7), 4:2)", "shape divisibility", 3),
    ],
)
def test_known_refusals(expr, condition, witness):
    e = explain(expr)
    assert (e.status, e.condition, e.witness) == ("refused", condition, witness)
    assert e.reproduction is not None and e.reproduction.holds
    assert f"*{e.picture.split('*')[1]}*" in e.picture  # the witness cell is marked
    text = e.render()
    assert condition in text and "witness" in text


def test_shah_worked_example():
    e = explain("composition((6,2):(1,7), (3,2):(2,3))")
    assert e.operation == "composition" and e.operands == ("(6,2):(1,7)", "(3,2):(2,3)")
    A, B = Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))
    assert B(5) == 7 and A(7) == 8  # A(B(5)) = 8 ...
    assert "gives 7" in e.reproduction.text  # ... the by-mode result gives 7
    assert "*7*" in e.picture
    first = e.repairs[0]
    assert first.kind == "pad" and first.expression == "composition((7,2):(1,7), (3,2):(2,3))"
    assert first.check == "proved"
    costs = [r.cost for r in e.repairs]
    assert costs == sorted(costs)
    kinds = {r.kind for r in e.repairs}
    assert {"pad", "shrink"} <= kinds


def test_logical_divide_names_the_inner_composition_and_offers_the_tuple_tiler():
    e = explain("logical_divide((6,2):(1,7), 4:2)")
    assert e.chain[0] == "logical_divide((6,2):(1,7), 4:2)" and e.operation == "composition"
    assert any(
        r.kind == "operation" and r.expression == "logical_divide((6,2):(1,7), (4))" for r in e.repairs
    )


def test_callable_input():
    e = explain(lambda: lp.complement(Layout((2, 2), (1, 3)), 16))
    assert e.status == "refused" and e.operation == "complement" and e.witness == 2
    assert e.repairs and all(r.check == "proved" for r in e.repairs)


def test_success_and_steps():
    e = explain("logical_divide(16:1, 4:2)", steps=True)
    assert e.status == "ok" and e.result == "(4,(2,2)):(2,(1,8))"
    assert [s.op for s in e.steps] == ["complement", "make_layout", "composition"]
    assert e.steps[-1].value == e.result
    z = explain("zipped_divide((8,8):(1,8), (2,4))", steps=True)
    assert z.steps[-1].value == z.result and z.steps[-1].op == "zipped_divide"
    p = explain("logical_product((2,2):(4,1), 6:1)", steps=True)
    assert [s.op for s in p.steps] == ["complement", "composition", "make_layout"]
    assert p.steps[-1].value == p.result == "((2,2),(2,3)):((4,1),(2,8))"
    c = explain("composition((6,2):(1,8), (2,2):(2,3))", steps=True)
    assert c.steps[0].op == "coalesce" and c.steps[-1].value == c.result


def test_undecided_models_and_weakest_assumption():
    e = explain("composition((M,4):(1,M+1), 128:1)")
    assert e.status == "undecided"
    assert e.condition == "(128 <= M) or (128 % M == 0)"
    assert e.named == "shape divisibility of A's mode 0" and e.rule == "shape divisibility"
    assert e.holds is not None and e.fails is not None
    assert e.holds.values == {"M": 1} and "=" in e.holds.confirmed and "refuses" not in e.holds.confirmed
    assert e.fails.values == {"M": 3} and "refuses: shape divisibility" in e.fails.confirmed
    assert e.repairs and all(r.kind == "assume" and r.check == "proved" for r in e.repairs)
    assert "the weakest found" in e.repairs[0].text
    found = {r.assumptions for r in e.repairs}
    assert ("128 <= M",) in found and ("M % 128 == 0",) in found  # M >= 128: equivalent, dropped


def test_assume_makes_it_admissible_and_is_emitted():
    e = explain("zipped_divide((M,N):(1,M), (64,32))", assume=["M % 64 == 0"])
    assert e.status == "ok" and e.used == ("M % 64 == 0",)
    assert e.render("dsl") == "M = cute.assume(M, divby=64)"
    assert e.render("cpp") == (
        'if (!((M % 64) == 0)) throw std::invalid_argument("zipped_divide: needs M % 64 == 0");'
        "  // <stdexcept>"
    )
    guard_src = e.render("python")
    ns: dict = {}
    exec(guard_src, ns)
    ns["guard"](128)
    with pytest.raises(ValueError, match="M % 64 == 0"):
        ns["guard"](100)


def test_python_guard_separates_the_models():
    e = explain("composition((M,4):(1,M+1), 128:1)")
    ns: dict = {}
    exec(render_assumptions([e.condition], "python", what="composition"), ns)
    ns["guard"](**e.holds.values)
    with pytest.raises(ValueError):
        ns["guard"](**e.fails.values)


def test_render_cpp_static_and_dynamic():
    assert (
        render_assumptions(["M % 64 == 0"], "cpp", static=["M"])
        == "CUTE_STATIC_ASSERT_V((M % Int<64>{}) == Int<0>{});"
    )
    assert render_assumptions(["M >= 128"], "cpp", static=["M"]) == "CUTE_STATIC_ASSERT_V((M >= Int<128>{}));"
    assert render_assumptions(["M >= 128"], "cpp").startswith(
        'if (!(M >= 128)) throw std::invalid_argument("assumption: needs M >= 128");'
    )
    assert render_assumptions([], "dsl").startswith("#")


def test_bad_input_is_a_layout_error():
    with pytest.raises(MalformedLayoutError):
        explain(42)
    with pytest.raises(LayoutError):
        explain("composition((6,2):(1,7), ")
    with pytest.raises(MalformedLayoutError):
        explain("composition(4:1, 2:1)").render("rust")
    with pytest.raises(LayoutError):
        explain("composition((0,2):(1,7), 2:1)")


def test_json_ready():
    import json

    d = explain("composition((6,2):(1,7), (3,2):(2,3))").to_dict()
    s = json.loads(json.dumps(d))
    assert s["condition"] == "disjointness of B's modes in A" and s["repairs"][0]["check"] == "proved"


def test_docs_page_examples():
    """docs/explain.md's examples run and give what they show."""
    import doctest
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "explain.md"
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
    res = doctest.testfile(str(page), module_relative=False, optionflags=flags, verbose=False)
    assert res.failed == 0 and res.attempted > 10


def test_foreign_notation_is_read():
    """A CuTe C++ type and a CuTe DSL print (with its divisibility) are read as the CLI reads them."""
    e = explain("composition(Layout<Shape<_6,_2>,Stride<_1,_7>>{}, (3,2):(2,3))")
    assert e.expression == "composition((6,2):(1,7), (3,2):(2,3))" and e.witness == 5
    d = explain("composition((?{div=8},4):(1,?), 64:2)")
    assert d.status == "undecided" and d.used == ("S0 % 8 == 0",)
    assert d.render("dsl").splitlines()[1] == "S0 = cute.assume(S0, divby=8)"  # after the comment


def test_svg_marks_the_witness():
    e = explain("complement((2,2):(1,3), 16)")
    s = e.svg()
    assert s.startswith("<?xml") and 'class="cell witness" data-row="0" data-col="1"' in s
    with pytest.raises(MalformedLayoutError):
        explain("composition((M,4):(1,M+1), 128:1)").svg()


def test_upcast_repairs_are_proved_and_a_merge_is_offered():
    e = explain("upcast((2,3,4):(1,2,6), 4)")
    assert (e.condition, e.witness) == ("upcast stride divisibility", 6)
    first = e.repairs[0]
    assert first.kind == "merge" and first.expression == "upcast((2,12):(1,2), 4)"
    for r in e.repairs:
        L, n = evaluate(
            r.expression.replace("upcast(", "make_tuple(", 1), {**NAMES, "make_tuple": lambda *a: a}
        )
        assert postcondition("upcast", lp.upcast(L, n), L, n).status == "proved"
    assert "use 1 instead" not in " ".join(r.text for r in e.repairs)  # a factor of 1 is no repair
    assert all(
        int(r.expression.rsplit(",", 1)[1].rstrip(") ")) in (2, 4, 8, 16)
        for r in explain("upcast(5:1, 2)").repairs
        if r.text.startswith("use ")
    )  # element widths are powers of two


def test_upcast_is_offered_a_unit_stride():
    e = explain("upcast((4,2):(3,12), 2)")
    assert [(r.kind, r.expression, r.result) for r in e.repairs] == [
        ("stride", "upcast((4,2):(1,12), 2)", "(2,2):(1,6)")
    ]


def test_regroupings_keep_the_function():
    from layoutproof.explain import _regroupings

    L = Layout(((6, 2), 4), ((1, 6), 12))
    seen = {k for _, k, _, _ in _regroupings(L)}
    assert seen == {"split", "merge"}
    for _, _, _, L2 in _regroupings(L):
        assert L2.size == L.size and str(L2) != str(L)
        assert all(L2(i) == L(i) for i in range(L.size))


def test_tile_to_shape_is_offered_for_a_product():
    e = explain("blocked_product(5:3, 3:5)")
    ops_ = [r for r in e.repairs if r.kind == "operation"]
    assert [r.expression for r in ops_] == ["tile_to_shape(5:3, (15))"]
    assert (
        postcondition("tile_to_shape", lp.tile_to_shape(Layout(5, 3), (15,)), Layout(5, 3), (15,)).status
        == "proved"
    )


def test_a_tuple_tiler_larger_than_its_mode_is_not_offered():
    e = explain("logical_divide((64,3):(1,12288), 96:1)")
    assert not any(r.expression == "logical_divide((64,3):(1,12288), (96))" for r in e.repairs)
    assert e.repairs[0].expression == "logical_divide((64,3):(1,12288), 128:1)"


def test_basis_strides_are_a_layout_error():
    with pytest.raises(MalformedLayoutError, match="basis strides"):
        explain("composition((4096,8192):(1,4096), (32,?,8,128):(1@0,8@1,1@1,32@0))")


def test_cutlass_2657_worked_example():
    """The CuTe DSL's documented composition (2,3):(4,1) o (3,4):(3,1) is refused with a
    reason: B's leaf 3:3 meets A's mode of extent 2 (stride divisibility), witness j = 2."""
    e = explain("composition((2,3):(4,1), (3,4):(3,1))")
    assert (e.status, e.rule, e.witness) == ("refused", "stride divisibility", 2)
    A = Layout((2, 3), (4, 1))
    assert [A(3 * j, extend=True) for j in range(3)] == [0, 5, 3]  # no layout of 3 elements gives these
    assert e.reproduction.holds and "*6*" in e.picture
    assert e.repairs and all(r.check == "proved" for r in e.repairs)
    assert ("stride", "composition((2,3):(4,1), (3,4):(2,1))") in [(r.kind, r.expression) for r in e.repairs]
    # the shapes the issue proposes instead compose
    assert explain("composition((6,2):(8,3), (4,3):(3,1))").status == "ok"
