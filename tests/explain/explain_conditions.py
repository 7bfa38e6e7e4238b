"""The refusal and undecided conditions the algebra can raise, found by scanning its source,
and one input that raises each (for tests/explain/test_explain_conditions.py).

:func:`raise_sites` reads every module of ``layoutproof`` and ``layoutproof.symbolic`` (the
folders ``algebra/`` and ``algebra/symbolic/``) and lists each construction of an
``InadmissibleError`` (or subclass) or ``UndecidableConditionError`` with the expression it
passes as ``condition=``, plus every ``condition_name=`` handed to the symbolic ``require`` /
``need`` helpers.  A literal names the condition; any other expression must be listed in
:data:`DYNAMIC` with the conditions it can take.  :data:`EXAMPLES` holds, for every entry
of ``layoutproof.explain.CONDITIONS``, an input that raises it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple, Union

ROOT = Path(__file__).resolve().parents[2] / "algebra"

#: the error classes whose conditions explain must know (subclasses of InadmissibleError
#: defined in the algebra are added by the scan)
BASE = {"InadmissibleError", "UndecidableConditionError"}
#: modules that define or consume errors rather than raise conditions
SKIP = {"explain.py", "errors.py"}


@dataclass(frozen=True)
class Site:
    file: str  # relative to algebra/
    line: int
    function: str
    error: str
    condition: str  # the source of the condition= expression
    literal: Optional[str]  # its value when it is a string literal


def _error_classes(trees: Dict[str, ast.Module]) -> set:
    names = set(BASE)
    changed = True
    while changed:
        changed = False
        for tree in trees.values():
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef) and node.name not in names:
                    if any(isinstance(b, ast.Name) and b.id in names for b in node.bases):
                        names.add(node.name)
                        changed = True
    return names


def _trees() -> Dict[str, ast.Module]:
    files = sorted(list(ROOT.glob("*.py")) + list(ROOT.glob("symbolic/*.py")))
    return {str(f.relative_to(ROOT)): ast.parse(f.read_text()) for f in files if f.name not in SKIP}


def _owner(funcs: List[Tuple[int, int, str]], line: int) -> str:
    inside = [f for f in funcs if f[0] <= line <= f[1]]
    return min(inside, key=lambda f: f[1] - f[0])[2] if inside else "<module>"


def raise_sites() -> List[Site]:
    """Every error construction with a ``condition=`` and every ``condition_name=`` keyword."""
    trees = _trees()
    classes = _error_classes(trees)
    out: List[Site] = []
    for rel, tree in trees.items():
        funcs: List[Tuple[int, int, str]] = [
            (n.lineno, n.end_lineno or n.lineno, n.name)
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        ]

        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            fn = node.func
            name = fn.id if isinstance(fn, ast.Name) else fn.attr if isinstance(fn, ast.Attribute) else ""
            for kw in node.keywords:
                is_error = name in classes and kw.arg == "condition"
                if not (is_error or kw.arg == "condition_name"):
                    continue
                lit = kw.value.value if isinstance(kw.value, ast.Constant) else None
                out.append(
                    Site(
                        rel,
                        node.lineno,
                        _owner(funcs, node.lineno),
                        name if is_error else "condition_name",
                        ast.unparse(kw.value),
                        lit if isinstance(lit, str) else None,
                    )
                )
    return out


# (file, the condition= source) -> the CONDITIONS entries it can be.  A condition passed on
# (err.condition) is one raised elsewhere; the symbolic formulas (as_python(...)) are keyed
# by what they decide.
_COMPOSITION = frozenset(
    {
        "stride divisibility",
        "shape divisibility",
        "disjointness of B's modes in A",
        "non-negative strides of B",
    }
)
_INVERSE = frozenset(
    {"left-inverse divisibility", "injectivity (non-overlapping modes)", "non-negative strides"}
)
_NEED_NAMES = frozenset(
    _COMPOSITION
    | _INVERSE
    | {"complement admissibility (stride chain)", "block divides target", "integer leaf"}
)
DYNAMIC: Dict[Tuple[str, str], FrozenSet[str]] = {
    ("analysis.py", "cond"): frozenset(
        {"downcast: no stride -1 leaf", "downcast: exactly one stride-1 leaf"}
    ),
    ("tensor.py", "cond"): frozenset(
        {"size<0>(A) == size<0>(C)", "size<0>(B) == size<1>(C)", "size<1>(A) == size<1>(B)"}
    ),
    ("ops.py", "err.condition"): _COMPOSITION | _INVERSE,
    ("cutlass2.py", "why[0]"): frozenset({"one XOR distance"}),
    ("composed.py", "f'{op} of a composed layout'"): frozenset(
        {"right_inverse of a composed layout", "left_inverse of a composed layout"}
    ),
    ("composed.py", "f'{op} of a composed layout (undecided)'"): frozenset(
        {"right_inverse of a composed layout (undecided)", "left_inverse of a composed layout (undecided)"}
    ),
    ("symbolic/__init__.py", "condition_name"): _NEED_NAMES,
    ("symbolic/__init__.py", "as_python(c)"): _NEED_NAMES,
    ("symbolic/__init__.py", "f'{what} leaf {e} is an integer'"): frozenset({"integer leaf"}),
    ("symbolic/__init__.py", "f'{e} >= 1'"): frozenset({"extent >= 1"}),
    ("symbolic/__init__.py", "f'{c} < {n}'"): frozenset({"coordinate in the domain"}),
    ("symbolic/symops.py", "condition_name"): _NEED_NAMES,
    ("symbolic/symops.py", "named"): _NEED_NAMES,
    ("symbolic/symops.py", "as_python(sp.Le(rest_n, m))"): frozenset({"which case of shape divisibility"}),
    ("symbolic/symops.py", "as_python(sp.Le(m[0], o[0]))"): frozenset({"order of the strides"}),
    ("symbolic/symops.py", "as_python(sp.Lt(m[0], o[0]))"): frozenset({"order of the strides"}),
    ("symbolic/symops.py", "as_python(c)"): frozenset({"extent 1 or stride 0"}),
    ("symbolic/symops.py", "as_python(_sympy().Eq(d, cur))"): frozenset({"right-inverse chain"}),
    ("symbolic/symops.py", "as_python(sp.Eq(a, raw_product(b)))"): frozenset({"compatible shapes"}),
}


def site_conditions(site: Site) -> Optional[FrozenSet[str]]:
    """The CONDITIONS entries a site can raise (None: not known -- a new dynamic site)."""
    if site.literal is not None:
        return frozenset({site.literal})
    return DYNAMIC.get((site.file, site.condition))


# ----------------------------------------------------------------------------- examples
Input = Union[str, Callable[[], Any]]


@dataclass(frozen=True)
class Example:
    expr: Input
    assume: Tuple[str, ...] = ()
    #: (module, attribute, value) set while it runs: the evaluation bounds, lowered so that a
    #: small input reaches the "undecided past the bound" branch
    patch: Tuple[Tuple[str, str, Any], ...] = ()


def _lp() -> Any:
    import layoutproof

    return layoutproof


def _f2(shape: Any, bits: Any) -> Any:
    from layoutproof.f2 import f2_layout

    return f2_layout(shape, bits)


def _mixed_f2() -> Any:
    from layoutproof.f2 import F2

    return _lp().Layout((2, 2), (_lp().E(0), F2(1)))


def _tensor(shape: Any) -> Any:
    lp = _lp()
    L = lp.Layout(shape)
    return lp.make_tensor([0.0] * L.size, L)


_SW = "layoutproof.swizzle"
_OPS = "layoutproof.ops"

EXAMPLES: Dict[str, Example] = {
    "stride divisibility": Example("composition((4,6):(1,5), 4:3)"),
    "shape divisibility": Example("composition((4,6):(1,5), 6:1)"),
    "disjointness of B's modes in A": Example("composition((6,2):(1,7), (3,2):(2,3))"),
    "non-negative strides of B": Example("composition((4,6):(1,5), 2:-1)"),
    "basis strides: one codomain": Example(
        lambda: _lp().composition(_lp().Layout((4, 8)), _lp().Layout((2, 2), (_lp().E(0), 1)))
    ),
    "basis strides: the sum over modes is a layout": Example(
        lambda: _lp().composition(
            _lp().Layout(((2, 3), (3, 2)), ((1, 10), (1, 10))), _lp().Layout(6, _lp().E(0) + _lp().E(1))
        )
    ),
    "basis strides: one mode per leaf": Example(
        lambda: _lp().composition(
            _lp().Layout(((2, 2), 4)), _lp().Layout((2, 2), (_lp().E(0), _lp().E(0, 1)))
        )
    ),
    "complement admissibility (stride chain)": Example("complement((2,2):(1,3), 16)"),
    "non-negative strides": Example("complement(4:-1, 16)"),
    "left-inverse divisibility": Example("left_inverse((1,3,3):(-2,2,3))"),
    "injectivity (non-overlapping modes)": Example("left_inverse((2,2,2):(1,3,1))"),
    "block divides target": Example("tile_to_shape((2,3):(1,2), (5,7))"),
    "upcast stride divisibility": Example("upcast((4,3):(3,1), 2)"),
    "upcast block condition": Example("upcast(5:1, 2)"),
    "downcast: no stride -1 leaf": Example("downcast(4:-1, 2)"),
    "downcast: exactly one stride-1 leaf": Example("downcast((4,2):(2,8), 2)"),
    "integer strides": Example(lambda: _lp().complement(_lp().Layout((2, 4), (_lp().E(0), _lp().E(1))), 16)),
    "layout_add: equal sizes": Example("layout_add(6:1, 8:1)"),
    "layout_add: the sum is a layout": Example("layout_add((2,3):(0,1), (3,2):(0,1))"),
    "common refinement: equal ranks": Example("common_refinement((2,3), (2,3,1))"),
    "common refinement: equal sizes": Example("common_refinement((2,(3,5)), (2,(3,4)))"),
    "common coarsening: equal sizes": Example("common_coarsening((3,4), (7,(2,3)))"),
    "enumeration size limit": Example(
        "layout_add((2,3):(0,1), (3,2):(0,1))", patch=(("layoutproof.layout", "EVAL_LIMIT", 4),)
    ),
    "swizzle passes through the layout": Example("composition((8,8):(1,4), Swizzle(2,0,3))"),
    "swizzle passes through the layout (undecided)": Example(
        "composition(6:1, Swizzle(1,1,1))", patch=((_SW, "VERIFY_LIMIT", 4),)
    ),
    "representable as A o offset o Layout": Example(
        "composition(Swizzle(1,1,1), make_composed_layout(4:2, 0, 4:1))"
    ),
    "offset == 0": Example("composition(64:1, make_composed_layout(Swizzle(1,1,1), 2, 4:1))"),
    "non-negative offsets of B": Example("composition(64:1, make_composed_layout(Swizzle(1,1,1), 0, 4:-1))"),
    "swizzle o 0 o layout": Example("right_inverse(make_composed_layout(4:2, 0, 4:1))"),
    "right_inverse of a composed layout": Example(
        "right_inverse(make_composed_layout(Swizzle(1,0,1), 0, (1,3):(0,1)))"
    ),
    "left_inverse of a composed layout": Example(
        "left_inverse(make_composed_layout(Swizzle(1,0,1), 0, (1,3):(0,1)))"
    ),
    "right_inverse of a composed layout (undecided)": Example(
        "right_inverse(make_composed_layout(Swizzle(1,0,1), 0, (1,2):(0,0)))",
        patch=((_SW, "VERIFY_LIMIT", 1),),
    ),
    "left_inverse of a composed layout (undecided)": Example(
        "left_inverse(make_composed_layout(Swizzle(1,0,1), 0, (1,2):(0,0)))",
        patch=((_SW, "VERIFY_LIMIT", 1),),
    ),
    "cosize decidable by evaluation": Example(
        "cosize(make_composed_layout(Swizzle(1,0,1), 0, (2,3):(3,1)))", patch=((_SW, "COSIZE_EVAL_LIMIT", 2),)
    ),
    "composite of swizzles is a swizzle": Example("composition(Swizzle(1,0,1), Swizzle(1,1,1))"),
    "ldm * kFactor a power of two": Example(
        lambda: _lp().from_cutlass2("TensorOpMultiplicandCrosswise<16, 64>", (192, 4), stride=192)
    ),
    "one XOR distance": Example(
        lambda: _lp().from_cutlass2("VoltaTensorOpMultiplicandCrosswise<16, 32>", (64, 64))
    ),
    "line pitch a power of two": Example(
        lambda: _lp().from_cutlass2("VoltaTensorOpMultiplicandCongruous<16>", (64, 8), stride=96)
    ),
    "basis strides: one axis per leaf": Example(
        lambda: _lp().left_inverse(_lp().Layout(2, _lp().E(0) + _lp().E(1)))
    ),
    "basis strides: each axis inverted alone": Example(
        lambda: _lp().left_inverse(_lp().Layout((2, 2), (_lp().E(0), _lp().E(0))))
    ),
    "axis inverse checked by evaluation": Example(
        lambda: _lp().left_inverse(_lp().Layout((3, 2), (_lp().E(0), _lp().E(1)))),
        patch=((_OPS, "EXACT_LIMIT", 1),),
    ),
    "GF(2)-linearity": Example("to_f2(4:3)"),
    "GF(2)-linearity (zero at the origin)": Example("to_f2(make_composed_layout(Swizzle(1,1,1), 4, 4:1))"),
    "GF(2)-linearity (non-negative values)": Example("to_f2((1,1,2):(-2,-2,-2))"),
    "GF(2)-linearity (undecided)": Example(
        "to_f2(make_composed_layout(2:1, 0, 4:1))", patch=((_SW, "VERIFY_LIMIT", 2),)
    ),
    "F2 composition checked by evaluation": Example(
        lambda: _lp().composition(_f2((2, 2), (1, 2)), _lp().Layout(4, 1)), patch=((_OPS, "EXACT_LIMIT", 2),)
    ),
    "one codomain": Example(lambda: _lp().composition(_f2((2, 2), (1, 2)), _mixed_f2())),
    "F2 composition: XOR-linear": Example(lambda: _lp().composition(_f2((2, 2), (0, 1)), _lp().Layout(4, 3))),
    "F2 composition: non-negative values": Example(
        lambda: _lp().composition(_lp().Layout(2, -1), _f2((2, 2), (0, 1)))
    ),
    "F2 inverse decided by evaluation": Example(
        lambda: _lp().right_inverse(_f2((3, 2), (1, 2))), patch=((_OPS, "EXACT_LIMIT", 2),)
    ),
    "F2 inverse: power-of-two extents": Example(lambda: _lp().left_inverse(_f2((3, 2), (0, 0)))),
    "swizzle form": Example("from_f2(F2Layout((2,2),(1,1)))"),
    "tile injective": Example("tv_layout_table((2,2):(1,2), (2,2):(1,1))"),
    "tv in tile": Example("tv_layout_table(((4,8),(2,2)):((32,1),(16,8)), (16,4))"),
    "tv injective": Example("tv_layout_table((4,2):(0,1), (2,4))"),
    "tv surjective": Example("tv_layout_table(((4,8),2):((32,1),16), (16,8))"),
    "thr_id injective": Example(
        lambda: _lp().tv_layout_table(
            _lp().Layout(((2, 2, 2), (2, 2, 2)), ((1, 16, 4), (8, 2, 32))),
            (8, 8),
            thr_id=_lp().Layout((4, 2), (1, 0)),
        )
    ),
    "size(src) == size(dst)": Example(lambda: _lp().copy(_tensor((2, 3)), _tensor((2, 2)))),
    "operand ranks (M,K)x(N,K)->(M,N) or (M)x(N)->(M,N)": Example(
        lambda: _lp().gemm(_tensor((2, 3)), _tensor((2, 3)), _tensor((2,)))
    ),
    "size<0>(A) == size<0>(C)": Example(
        lambda: _lp().gemm(_tensor((3, 4)), _tensor((2, 4)), _tensor((2, 2)))
    ),
    "size<0>(B) == size<1>(C)": Example(
        lambda: _lp().gemm(_tensor((2, 4)), _tensor((3, 4)), _tensor((2, 2)))
    ),
    "size<1>(A) == size<1>(B)": Example(
        lambda: _lp().gemm(_tensor((2, 4)), _tensor((2, 3)), _tensor((2, 2)))
    ),
    "integer leaf": Example("composition((M/2,2):(1,M), 4:1)"),
    "extent >= 1": Example("size((M-1,2):(1,M))"),
    "coordinate in the domain": Example("crd2idx(8, M)"),
    "which case of shape divisibility": Example(
        "composition((M,4):(1,M+1), 8:1)", assume=("(8 <= M) or (8 % M == 0)",)
    ),
    "order of the strides": Example("complement((2,2):(M,N), 64)"),
    "extent 1 or stride 0": Example("complement((M,2):(1,3), 64)"),
    "right-inverse chain": Example("right_inverse((2,2):(1,M))"),
    "compatible shapes": Example("compatible(M, (2,2))"),
}


#: conditions whose raise site no input reaches, with the reason; their example shows the
#: condition that is raised first instead (None: the layout constructor refuses the operand,
#: a MalformedLayoutError).  They stay in CONDITIONS so that a future path to the site is
#: explained too.
UNREACHED: Dict[str, Tuple[Optional[str], str]] = {
    "one codomain": (
        None,
        "the Layout constructor already refuses a stride that mixes F2 with coordinate strides "
        "(MalformedLayoutError), so composition never sees such a B",
    ),
    "non-negative offsets of B": (
        "non-negative strides of B",
        "composition(L, Sw o 0 o B) first computes composition(L o Sw, B), which refuses a negative "
        "stride of B (a non-trivial leaf) before the offsets of the composed layout are checked",
    ),
}
