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

from typing import Any, Dict, List, Optional, Tuple

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
    # layouts whose bits a swizzle moves: (8,8)-like tiles with power-of-two strides
    _call("composition", layouts(1, 16, 2, st.sampled_from([2, 4, 8])), swizzles()),
    # a sum of layouts over shapes with no common refinement
    st.tuples(
        st.lists(st.integers(0, 4), min_size=2, max_size=2),
        st.lists(st.integers(0, 4), min_size=2, max_size=2),
    ).map(lambda p: f"layout_add((2,3):({p[0][0]},{p[0][1]}), (3,2):({p[1][0]},{p[1][1]}))"),
    # overlapping modes of three leaves
    _call("left_inverse", layouts(0, 4, 3, st.integers(1, 3))),
    # thread-value layouts drawn over a tile
    st.tuples(
        layouts(-1, 8, 2, st.sampled_from([1, 2, 4])), st.sampled_from(["(2,2)", "(4,2)", "(2,4)", "(4,4)"])
    ).map(lambda p: f"tv_layout_table({p[0]}, {p[1]})"),
    _call(
        "composition",
        swizzles(),
        st.tuples(layouts(0, 4, 1), layouts(0, 4, 1)).map(
            lambda p: f"make_composed_layout({p[0]}, 0, {p[1]})"
        ),
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


def _basis_layout(shape: List[int], picks: List[int]) -> Any:
    """A layout whose strides are basis elements or integers: 0 -> E(0), 1 -> E(1),
    2 -> E(0) + E(1), 3 -> E(0, 1) (a sub-mode), 4 -> the integer 1."""
    E = lp.E
    table = [E(0), E(1), E(0) + E(1), E(0, 1), 1]
    d = [table[k] for k in picks]
    return lp.Layout(tuple(shape), tuple(d)) if len(shape) > 1 else lp.Layout(shape[0], d[0])


def _f2_layout(shape: List[int], bits: List[int]) -> Any:
    from layoutproof.f2 import f2_layout

    return f2_layout(tuple(shape), tuple(bits)) if len(shape) > 1 else f2_layout(shape[0], bits[0])


def _tensor(shape: List[int]) -> Any:
    L = lp.Layout(tuple(shape)) if len(shape) > 1 else lp.Layout(shape[0])
    return lp.make_tensor([0.0] * L.size, L)


class Call:
    """A zero-argument call of the algebra that the eval language does not write (basis and
    F2 strides, tensors), with a label for the reports."""

    def __init__(self, label: str, fn: Any) -> None:
        self.label, self.fn = label, fn

    def __call__(self) -> Any:
        return self.fn()

    def __repr__(self) -> str:
        return self.label


_SHAPE2 = st.lists(st.integers(1, 4), min_size=1, max_size=2)
_A = st.sampled_from([((4, 8), (1, 4)), (((2, 2), 4), ((1, 2), 4)), (((2, 3), (3, 2)), ((1, 10), (1, 10)))])

#: calls outside the eval language: basis strides, F2 strides, tensors
CALLS = st.one_of(
    st.tuples(
        _A,
        _SHAPE2.flatmap(
            lambda s: st.tuples(st.just(s), st.lists(st.integers(0, 4), min_size=len(s), max_size=len(s)))
        ),
    ).map(
        lambda p: Call(
            f"composition({lp.Layout(*p[0])}, basis {p[1]})",
            lambda: lp.composition(lp.Layout(*p[0]), _basis_layout(*p[1])),
        )
    ),
    st.tuples(_SHAPE2, st.integers(1, 32)).map(
        lambda p: Call(
            f"complement(basis {p[0]}, {p[1]})",
            lambda: lp.complement(_basis_layout(p[0], [0, 1][: len(p[0])]), p[1]),
        )
    ),
    st.tuples(
        _SHAPE2.flatmap(
            lambda s: st.tuples(st.just(s), st.lists(st.integers(0, 7), min_size=len(s), max_size=len(s)))
        ),
        layouts(-1, 4, 2),
    ).map(
        lambda p: Call(
            f"composition(f2 {p[0]}, {p[1]})",
            lambda: lp.composition(_f2_layout(*p[0]), evaluate(p[1], NAMES)),
        )
    ),
    st.tuples(
        _SHAPE2.flatmap(
            lambda s: st.tuples(st.just(s), st.lists(st.integers(0, 7), min_size=len(s), max_size=len(s)))
        ),
        layouts(-1, 4, 2),
    ).map(
        lambda p: Call(
            f"composition({p[1]}, f2 {p[0]})",
            lambda: lp.composition(evaluate(p[1], NAMES), _f2_layout(*p[0])),
        )
    ),
    _SHAPE2.flatmap(
        lambda s: st.tuples(st.just(s), st.lists(st.integers(0, 7), min_size=len(s), max_size=len(s)))
    ).map(lambda p: Call(f"left_inverse(f2 {p})", lambda: lp.left_inverse(_f2_layout(*p)))),
    st.tuples(_SHAPE2, _SHAPE2).map(
        lambda p: Call(f"copy({p[0]}, {p[1]})", lambda: lp.copy(_tensor(p[0]), _tensor(p[1])))
    ),
    st.tuples(_SHAPE2, _SHAPE2, _SHAPE2).map(
        lambda p: Call(f"gemm{p}", lambda: lp.gemm(_tensor(p[0]), _tensor(p[1]), _tensor(p[2])))
    ),
)

#: symbolic calls under an assumption: the case split of shape divisibility
ASSUMED = st.tuples(st.sampled_from([4, 8, 16]), st.sampled_from(["M+1", "M+2", "2*M+1"])).map(
    lambda p: (f"composition((M,4):(1,{p[1]}), {p[0]}:1)", (f"({p[0]} <= M) or ({p[0]} % M == 0)",))
)


def _eval(expr: Any) -> Any:
    if callable(expr):
        return expr()
    return evaluate(expr, NAMES)


def check(expr: Any, budget_s: float = 0.1, assume: Tuple[str, ...] = ()) -> Optional[Explanation]:
    """Run ``expr``; when it is refused or undecided, explain it and check the explanation:
    it names the error's condition, an entry of CONDITIONS; a refusal carries the error's
    witness and re-evaluates it (the reproduction holds); an undecided formula has models
    confirmed by evaluating the formula at them; every repair, run again here, is
    admissible and meets the operation's post-condition (under its assumptions, for an
    assumption)."""
    try:
        with symbolic.assuming(*assume) if assume else _Null():
            _eval(expr)
    except (InadmissibleError, UndecidableConditionError) as err:
        e = explain(expr, budget_s=budget_s, assume=assume)
        assert e.condition == str(err.condition), (expr, e.condition, err.condition)
        assert e.rule == rule_of(err) and e.rule in CONDITIONS, (expr, e.rule, str(err))
        assert e.spec == CONDITIONS[e.rule]
        if isinstance(err, UndecidableConditionError):
            assert e.status == "undecided" and e.settle, expr
            if err.expr is not None:
                c = symbolic.parse_expr(e.condition)
                facts = [symbolic.parse_expr(f) for f in e.used]
                for m, want in ((e.holds, True), (e.fails, False)):
                    if m is not None:  # the model satisfies the assumptions, and the condition as said
                        assert all(symbolic.exact_value(f, m.values) is True for f in facts), (expr, m)
                        assert symbolic.exact_value(c, m.values) is want, (expr, m)
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


def rules_reached(exprs: List[Any]) -> Dict[str, int]:
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
