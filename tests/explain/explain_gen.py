"""Generators of refused and undecided calls of the algebra, for the property test of
layoutproof.explain (tests/explain/test_explain_generated.py).

Each strategy draws an expression of the ``layoutproof eval`` language over small operands
-- concrete layouts with negative, zero and non-dividing strides; swizzles and composed
layouts; GF(2) conversions; shapes for the refinement lattice; and symbolic layouts (the
symbols ``M`` and ``N`` in extents and strides) -- chosen to reach the conditions the
algebra refuses or leaves undecided, not only composition's.  :func:`check` runs one and,
when it is refused or undecided, checks its explanation.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from hypothesis import strategies as st

import layoutproof as lp
from layoutproof import InadmissibleError, LayoutError, UndecidableConditionError, symbolic
from layoutproof.explain import CONDITIONS, Explanation, explain, rule_of
from layoutproof.notation import evaluate
from layoutproof.verify import postcondition

NAMES = {n: getattr(lp, n) for n in lp.__all__ if callable(getattr(lp, n))}


def _lay(shape: List[Any], stride: List[Any]) -> str:
    if len(shape) == 1:
        return f"{shape[0]}:{stride[0]}"
    return f"({','.join(map(str, shape))}):({','.join(map(str, stride))})"


def layouts(
    min_stride: int = 0, max_stride: int = 9, max_rank: int = 3, ext: Optional[st.SearchStrategy] = None
) -> st.SearchStrategy[str]:
    """Concrete layouts of rank 1..max_rank (the eval language's notation)."""
    e = ext if ext is not None else st.integers(1, 6)
    return (
        st.integers(1, max_rank)
        .flatmap(
            lambda r: st.tuples(
                st.lists(e, min_size=r, max_size=r),
                st.lists(st.integers(min_stride, max_stride), min_size=r, max_size=r),
            )
        )
        .map(lambda p: _lay(p[0], p[1]))
    )


_SYM_EXT = st.sampled_from(["M", "N", "2*M", "M+1", "M-1", "M/2", 2, 3, 4, 8])
_SYM_STRIDE = st.sampled_from(["M", "N", "M+1", "2*M", 0, 1, 2, 3, 4, -1])


def sym_layouts(max_rank: int = 2) -> st.SearchStrategy[str]:
    """Layouts whose extents or strides involve the symbols M and N."""
    return (
        st.integers(1, max_rank)
        .flatmap(
            lambda r: st.tuples(
                st.lists(_SYM_EXT, min_size=r, max_size=r), st.lists(_SYM_STRIDE, min_size=r, max_size=r)
            )
        )
        .map(lambda p: _lay(p[0], p[1]))
    )


def shapes() -> st.SearchStrategy[str]:
    leaf = st.integers(1, 6)
    flat = st.lists(leaf, min_size=1, max_size=3).map(lambda xs: f"({','.join(map(str, xs))})")
    nested = st.tuples(leaf, st.lists(leaf, min_size=2, max_size=2)).map(
        lambda p: f"({p[0]},({p[1][0]},{p[1][1]}))"
    )
    return st.one_of(flat, nested)


def swizzles() -> st.SearchStrategy[str]:
    return (
        st.tuples(st.integers(0, 2), st.integers(0, 2), st.integers(-3, 3))
        .filter(lambda t: abs(t[2]) >= t[0] or t[0] == 0)
        .map(lambda t: f"Swizzle({t[0]},{t[1]},{t[2]})")
    )


def _call(name: str, *parts: st.SearchStrategy) -> st.SearchStrategy[str]:
    return st.tuples(*parts).map(lambda a: f"{name}({', '.join(map(str, a))})")


_N = st.sampled_from([2, 3, 4])
_TARGET = st.lists(st.integers(1, 9), min_size=1, max_size=2).map(lambda xs: f"({','.join(map(str, xs))})")

#: concrete refusals: composition, the divides and products, complement, the inverses,
#: upcast / downcast, tile_to_shape, layout_add, the shape lattice, GF(2), swizzles
CONCRETE = st.one_of(
    _call("composition", layouts(1), layouts(-1)),
    _call("logical_divide", layouts(1), layouts(1, max_rank=2)),
    _call("zipped_divide", layouts(1), layouts(1, max_rank=1)),
    _call("complement", layouts(-2), st.integers(1, 64)),
    _call("left_inverse", layouts(-2)),
    _call("right_inverse", layouts(-1)),
    _call("upcast", layouts(-1), _N),
    _call("downcast", layouts(-1), _N),
    _call("blocked_product", layouts(1, max_rank=2), layouts(1, max_rank=2)),
    _call("raked_product", layouts(1, max_rank=2), layouts(1, max_rank=2)),
    _call("tile_to_shape", layouts(1, max_rank=2), _TARGET),
    _call("layout_add", layouts(0, 4, 2), layouts(0, 4, 2)),
    _call("common_refinement", shapes(), shapes()),
    _call("common_coarsening", shapes(), shapes()),
    _call("to_f2", layouts(-2)),
    _call("composition", layouts(1, max_rank=2), swizzles()),
    _call("composition", swizzles(), swizzles()),
    st.tuples(
        swizzles(),
        st.sampled_from([0, 0, 1, 2]),
        layouts(0, 6, 2),
        st.sampled_from(["right_inverse", "left_inverse", "to_f2"]),
    ).map(lambda p: f"{p[3]}(make_composed_layout({p[0]}, {p[1]}, {p[2]}))"),
    st.tuples(layouts(1, max_rank=2), swizzles(), st.sampled_from([0, 0, 1]), layouts(-1, 6, 1)).map(
        lambda p: f"composition({p[0]}, make_composed_layout({p[1]}, {p[2]}, {p[3]}))"
    ),
)

#: symbolic operands: the conditions decided (or left open) by Z3
SYMBOLIC = st.one_of(
    _call("composition", sym_layouts(), st.one_of(layouts(-1, 9, 2), sym_layouts(1))),
    _call("complement", sym_layouts(), st.sampled_from([16, 64, "M*N"])),
    _call("left_inverse", sym_layouts()),
    _call("right_inverse", sym_layouts()),
    _call("logical_divide", sym_layouts(), st.sampled_from(["4:1", "8:2", "(4,2)", "M:1"])),
    _call("tile_to_shape", sym_layouts(1), st.sampled_from(["(N,4)", "(8,8)", "(M,N)"])),
    _call("crd2idx", st.sampled_from([3, 8, "N"]), st.sampled_from(["M", "(M,4)", "(2,N)"])),
    _call("compatible", st.sampled_from(["M", "N", "4"]), st.sampled_from(["(2,2)", "(M,2)", "6"])),
)


def _eval(expr: str) -> Any:
    return evaluate(expr, NAMES)


def check(expr: str, budget_s: float = 0.1) -> Optional[Explanation]:
    """Run ``expr``; when it is refused or undecided, explain it and check the explanation:
    it names the error's condition, an entry of CONDITIONS; a refusal carries the error's
    witness and re-evaluates it (the reproduction holds); an undecided formula has models
    confirmed by evaluating the formula at them; every repair, run again here, is
    admissible and meets the operation's post-condition (under its assumptions, for an
    assumption)."""
    try:
        _eval(expr)
    except (InadmissibleError, UndecidableConditionError) as err:
        e = explain(expr, budget_s=budget_s)
        assert e.condition == str(err.condition), (expr, e.condition, err.condition)
        assert e.rule == rule_of(err) and e.rule in CONDITIONS, (expr, e.rule, str(err))
        assert e.spec == CONDITIONS[e.rule]
        if isinstance(err, UndecidableConditionError):
            assert e.status == "undecided" and e.settle, expr
            if err.expr is not None:
                c = symbolic.parse_expr(e.condition)
                if e.holds is not None:
                    assert symbolic.exact_value(c, e.holds.values) is True, (expr, e.holds)
                if e.fails is not None:
                    assert symbolic.exact_value(c, e.fails.values) is False, (expr, e.fails)
        else:
            assert e.status == "refused", expr
            assert e.witness == err.witness, (expr, e.witness, err.witness)
            assert e.reproduction is not None and e.reproduction.holds, (expr, e.reproduction)
        check_repairs(e)
        return e
    except LayoutError:
        return None  # malformed operands: not a refusal
    return None


def check_repairs(e: Explanation) -> None:
    for r in e.repairs:
        op = r.expression.split("(", 1)[0]
        with symbolic.assuming(*e.used, *r.assumptions) if (r.assumptions or e.used) else _Null():
            v = _eval(r.expression)
            args = evaluate(
                r.expression.replace(op + "(", "make_tuple(", 1), {**NAMES, "make_tuple": lambda *a: a}
            )
            assert str(v) == r.result, (e.expression, r)
            got = postcondition(op, v, *args, assume=list(e.used) + list(r.assumptions)).status
        assert got == "proved", (e.expression, r, got)


class _Null:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: Any) -> None:
        return None


def rules_reached(exprs: List[str]) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for x in exprs:
        try:
            _eval(x)
        except (InadmissibleError, UndecidableConditionError) as err:
            r = rule_of(err)
            out[r] = out.get(r, 0) + 1
        except LayoutError:
            pass
    return out
