"""Lowering layouts to C index expressions (layoutproof.gpu.proof.lower), each result re-checked
here by an independent brute-force evaluation of the emitted C string."""

from __future__ import annotations

import ast
import itertools
import shutil
import subprocess

import numpy as np
import pytest
from conftest import examples, layouts
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutproof import ComposedLayout, Layout, Swizzle, composition, symbols
from layoutproof.gpu.errors import LoweringError, ProofFailedError
from layoutproof.gpu.proof.lower import (
    EXHAUSTIVE_LIMIT,
    Lowered,
    c_expr_eval,
    check_c_expr,
    lower,
    lower_many,
    prove_bijective,
    prove_bounds,
    prove_injective,
)
from layoutproof.gpu.proof.record import ProofLog
from layoutproof.verify.strategies import swizzled_layouts

# ----------------------------------------------------------------------------- an independent oracle


def c_eval_scalar(expr: str, env: dict) -> int:
    """C semantics for one point, by a translation to Python integer arithmetic: `/` and
    `%` are rewritten to truncating helpers (independent of c_expr_eval's parser: the
    expression is turned into a Python AST, whose precedences for these operators match
    C's for fully parenthesized input)."""
    tree = ast.parse(expr, mode="eval")

    def cdiv(a, b):
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q

    def ev(n):
        if isinstance(n, ast.Expression):
            return ev(n.body)
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            return env[n.id]
        if isinstance(n, ast.UnaryOp):
            v = ev(n.operand)
            return -v if isinstance(n.op, ast.USub) else ~v if isinstance(n.op, ast.Invert) else v
        if isinstance(n, ast.BinOp):
            a, b = ev(n.left), ev(n.right)
            op = type(n.op)
            if op is ast.Div:
                return cdiv(a, b)
            if op is ast.Mod:
                return a - b * cdiv(a, b)
            return (
                {
                    ast.Add: a + b,
                    ast.Sub: a - b,
                    ast.Mult: a * b,
                    ast.BitXor: a ^ b,
                    ast.BitAnd: a & b,
                    ast.BitOr: a | b,
                }.get(op)
                if op not in (ast.LShift, ast.RShift)
                else (a << b if op is ast.LShift else a >> b)
            )
        raise AssertionError(f"unexpected node {ast.dump(n)}")

    return ev(tree)


def brute_check(low: Lowered, layout=None, **syms):
    """Evaluate low.c_expr at every coordinate with plain Python ints and compare with the
    layout's own __call__ (natural per-mode coordinates)."""
    L = low.layout if layout is None else layout
    if isinstance(L, Swizzle):
        for o in range(L.size):
            assert c_eval_scalar(low.c_expr, {low.args[0]: o}) == L(o)
        return
    shape = L.shape
    if len(low.args) == 1:
        sizes = [L.size]
    else:
        sizes = [Layout(s).size for s in shape]
    for crd in itertools.product(*[range(s) for s in sizes]):
        env = dict(zip(low.args, crd))
        env.update(syms)
        want = L(crd[0]) if len(crd) == 1 else L(*crd)
        if hasattr(want, "subs"):  # a symbolic layout: substitute the runtime values
            want = int(want.subs({s: syms[s.name] for s in L.free_symbols}))
        assert c_eval_scalar(low.c_expr, env) == want, (crd, low.c_expr)


# ----------------------------------------------------------------------------- the C evaluator


def test_c_semantics_truncation():
    assert c_expr_eval("-7 / 2", {}).item() == -3
    assert c_expr_eval("7 / -2", {}).item() == -3
    assert c_expr_eval("-7 % 2", {}).item() == -1
    assert c_expr_eval("7 % -2", {}).item() == 1
    assert c_expr_eval("-8 / 2", {}).item() == -4
    x = np.arange(-20, 21)
    y = np.array([3, -3])[:, None]
    q = c_expr_eval("x / y", {"x": x, "y": y})
    r = c_expr_eval("x % y", {"x": x, "y": y})
    assert (q * y + r == x).all()
    assert (np.abs(r) < np.abs(y)).all() and ((r == 0) | (np.sign(r) == np.sign(x))).all()
    for a, b in itertools.product(range(-9, 10), [1, 2, 3, -4, 7]):
        assert c_expr_eval("a / b", {"a": a, "b": b}).item() == int(a / b)


def test_c_precedence_and_bits():
    assert c_expr_eval("1 + 2 * 3 << 1", {}).item() == 14
    assert c_expr_eval("6 & 3 ^ 1 | 8", {}).item() == ((6 & 3) ^ 1) | 8
    assert c_expr_eval("~5 + -(-3)", {}).item() == -3
    assert c_expr_eval("-9 >> 1", {}).item() == -5  # arithmetic shift (as nvcc and gcc)
    assert c_expr_eval("10 - 3 - 2", {}).item() == 5 and c_expr_eval("64 / 4 / 2", {}).item() == 8


@pytest.mark.parametrize("bad", ["1 +", "(1", "a $ b", "1 2", ")", "a ** 2", ""])
def test_c_syntax_errors(bad):
    with pytest.raises(LoweringError) as e:
        c_expr_eval(bad, {"a": 1, "b": 2})
    assert e.value.condition == "C expression syntax"


def test_c_faults():
    with pytest.raises(LoweringError) as e:
        c_expr_eval("x / (x - 3)", {"x": np.arange(5)})
    assert e.value.condition == "division by zero" and e.value.witness == 3
    with pytest.raises(LoweringError) as e:
        c_expr_eval("x * 65536", {"x": np.arange(40000)}, int_bits=32)
    assert e.value.condition == "integer overflow" and e.value.witness == 32768
    with pytest.raises(LoweringError) as e:
        c_expr_eval("(x - 2) >> 1", {"x": np.arange(5)}, int_bits=32)
    assert e.value.condition == "shift of a negative value" and e.value.witness == 0
    with pytest.raises(LoweringError) as e:
        c_expr_eval("1 << 40", {}, int_bits=32)
    assert e.value.condition == "shift count"
    with pytest.raises(LoweringError) as e:
        c_expr_eval("q + 1", {})
    assert e.value.condition == "unknown name"
    with pytest.raises(LoweringError):
        c_expr_eval("(" * 2000 + "1" + ")" * 2000, {})


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no C compiler")
def test_c_evaluator_against_gcc(tmp_path):
    exprs = [
        "(a / b)",
        "(a % b)",
        "((a * 7) - (b << 2))",
        "(a ^ ((a >> 2) & 12))",
        "(~a & 255)",
        "((a + 3) / -4 + (a % -5))",
        "(a - b * 3 % 4 | 17)",
    ]
    vals = [(a, b) for a in range(-17, 18, 3) for b in (1, 2, 3, -5, 7)]
    body = "\n".join(
        f'  for (int i = 0; i < {len(vals)}; ++i) {{ int a = A[i], b = B[i]; printf("%d\\n", {e}); }}'
        for e in exprs
    )
    src = (
        "#include <stdio.h>\n"
        f"int A[] = {{{', '.join(str(a) for a, _ in vals)}}};\n"
        f"int B[] = {{{', '.join(str(b) for _, b in vals)}}};\n"
        f"int main(void) {{\n{body}\n  return 0;\n}}\n"
    )
    (tmp_path / "t.c").write_text(src)
    subprocess.run(["gcc", "-O0", "-o", str(tmp_path / "t"), str(tmp_path / "t.c")], check=True)
    out = [
        int(x)
        for x in subprocess.run(
            [str(tmp_path / "t")], capture_output=True, text=True, check=True
        ).stdout.split()
    ]
    a = np.array([v[0] for v in vals])
    b = np.array([v[1] for v in vals])
    ours = np.concatenate([c_expr_eval(e, {"a": a, "b": b}, int_bits=None) for e in exprs])
    assert ours.tolist() == out


# ----------------------------------------------------------------------------- lowering examples

CASES = [
    (Layout((8, 32), (32, 1)), ("row", "col")),
    (Layout((8, 32), (32, 1)), ("i",)),
    (Layout((8, 32), (1, 8)), ("i",)),
    (Layout((4, (2, 8)), (2, (1, 8))), ("i", "j")),
    (Layout(((2, 3), (4, 5)), ((1, 8), (2, 24))), ("i", "j")),
    (Layout((4, 3, 5), (0, 1, 0)), ("a", "b", "c")),
    (Layout((6, (4, 2)), (0, (3, 0))), ("i", "j")),
    (Layout((4, (3, 5)), (-1, (7, -20))), ("i", "j")),
    (Layout((3, 5, 7), (35, 7, 1)), ("x",)),
    (Layout(1, 0), ("i",)),
    (composition(Swizzle(2, 3, 3), Layout((8, 32), (32, 1))), ("row", "col")),
    (composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1))), ("row", "col")),
    (composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1))), ("i",)),
    (ComposedLayout(Swizzle(3, 4, 3), 0, Layout((16, 64), (64, 1))), ("r", "c")),
    (ComposedLayout(Swizzle(2, 0, -2), 0, Layout((4, 4), (1, 4))), ("r", "c")),
    (ComposedLayout(Swizzle(1, 2, 3), 128, Layout((4, (2, 8)), (8, (1, 32)))), ("i", "j")),
    (ComposedLayout(Layout((4, 8), (8, 1)), 3, Layout((2, 4), (1, 2))), ("i", "j")),
    (Swizzle(3, 3, 3), ("off",)),
    (Swizzle(2, 1, -3), ("off",)),
]


@pytest.mark.parametrize("layout,args", CASES, ids=[str(c[0]) + "|" + ",".join(c[1]) for c in CASES])
def test_lower_examples(layout, args):
    log = ProofLog()
    low = lower(layout, args, name="f", log=log)
    assert low.proof.kind == "equal" and low.proof.method == "exhaustive"
    assert low.proof.cases == (layout.size if not isinstance(layout, Swizzle) else layout.size)
    assert list(log) == [low.proof]
    brute_check(low)
    fn = low.c_function()
    assert fn.startswith("__device__ __forceinline__ int f(") and low.c_expr in fn


def test_simplifications():
    assert lower(Layout((8, 32), (1, 8)), ("i",), name="f").c_expr == "i"
    assert lower(Layout((8, 32), (32, 1)), ("r", "c"), name="f").c_expr == "((32 * r) + c)"
    # stride-0 modes vanish, the outermost digit has no mask
    assert lower(Layout((4, 3), (0, 5)), ("i", "j"), name="f").c_expr == "(5 * j)"
    assert (
        lower(Layout((4, (2, 8)), (2, (1, 8))), ("i", "j"), name="f").c_expr
        == "((2 * i) + (j & 1) + (8 * (j >> 1)))"
    )
    assert lower(Layout((3, 5), (5, 1)), ("i",), name="f").c_expr == "((5 * (i % 3)) + (i / 3))"
    assert lower(Layout((3, 5), (5, 1)), ("i",), name="f", pow2=False).c_expr == "((5 * (i % 3)) + (i / 3))"
    assert lower(Layout((4, 8), (8, 1)), ("i",), name="f", pow2=False).c_expr == "((8 * (i % 4)) + (i / 4))"
    assert lower(Layout((2, 2), (0, 0)), ("i", "j"), name="f").c_expr == "0"
    # a constant swizzled offset folds
    assert lower(ComposedLayout(Swizzle(1, 0, 1), 2, Layout(1, 0)), ("i",), name="f").c_expr == "3"


def test_symbolic_ld():
    ld, M = symbols("ld M")
    low = lower(Layout((16, 8), (1, ld)), ("m", "k"), name="gA")
    assert low.c_expr == "(m + (k * ld))" and low.proof.method == "sympy"
    assert (
        low.c_function()
        == "__device__ __forceinline__ int gA(int m, int k, int ld) { return (m + (k * ld)); }"
    )
    brute_check(low, ld=100)
    # nested, coalescable in ld, products of symbols, constants mixed in
    for L in [
        Layout((16, (2, 4)), (1, (ld, 2 * ld))),
        Layout((16, 8), (ld + 1, M * ld)),
        Layout(((4, 2), 8), ((ld, 4 * ld), 1)),
    ]:
        low = lower(L, ("i", "j"), name="g")
        assert low.symbols == tuple(sorted(s.name for s in L.free_symbols))
        for vals in [(5, 3), (1, 0), (17, 1000)]:
            env = dict(zip(low.symbols, vals))
            for i, j in itertools.product(range(Layout(L.shape[0]).size), range(Layout(L.shape[1]).size)):
                want = int(L.expr((i, j)).subs({s: env[s.name] for s in L.free_symbols}))
                assert c_eval_scalar(low.c_expr, dict(env, i=i, j=j)) == want
    assert lower(Layout((16, (2, 4)), (1, (ld, 2 * ld))), ("i", "j"), name="g").c_expr == "(i + (j * ld))"


def test_symbolic_strides_coalesce_by_identity_and_print_as_written():
    # the second stride is 4 x the first as a polynomial, though SymPy spells the two
    # differently (a product vs its expansion): the modes merge, the first stride prints
    ld, M = symbols("ld M")
    L = Layout((4, 2, 8), (ld * (M + 1), 4 * M * ld + 4 * ld, 1))
    low = lower(L, ("x",), name="f")
    assert low.c_expr == "((ld * (M + 1) * (x & 7)) + (x >> 3))" and low.proof.method == "sympy"
    for vals in [(3, 2), (0, 5), (1000, 1)]:
        env = dict(zip(low.symbols, vals))
        for x in range(L.size):
            want = int(L.expr(x).subs({s: env[s.name] for s in L.free_symbols}))
            assert c_eval_scalar(low.c_expr, dict(env, x=x)) == want
    # equal strides that do not continue the previous mode stay separate modes
    low = lower(Layout((4, 2), (ld, ld)), ("x",), name="f")
    assert low.c_expr == "((ld * (x & 3)) + (ld * (x >> 2)))"
    brute_check(low, ld=7)


def test_symbolic_refusals():
    ld = symbols("ld")
    with pytest.raises(LoweringError) as e:
        lower(ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 64), (ld, 1))), ("r", "c"), name="x")
    assert e.value.condition == "affine in the runtime symbols"
    with pytest.raises(LoweringError) as e:
        lower(Layout((8, 4), (ld * ld, 1)), ("r", "c"), name="x")
    assert e.value.condition == "affine in the runtime symbols"
    with pytest.raises(LoweringError) as e:
        lower(Layout((ld, 4), (1, ld)), ("r", "c"), name="x")
    assert e.value.condition == "integer shape"
    # a symbol under a non-polynomial operator in a hand-written expression
    with pytest.raises(LoweringError) as e:
        check_c_expr(Layout((8, 4), (1, ld)), ("r", "c"), "r + ((c * ld) & 1023)")
    assert e.value.condition == "affine in the runtime symbols"


def test_symbolic_planted_wrong():
    ld = symbols("ld")
    L = Layout((8, 4), (1, ld))
    assert check_c_expr(L, ("r", "c"), "r + c * ld").method == "sympy"
    with pytest.raises(LoweringError) as e:
        check_c_expr(L, ("r", "c"), "r + c * ld + (r / 7) * ld")
    assert e.value.witness == (7, 0) and e.value.condition == "lowered expression equals the layout"
    with pytest.raises(LoweringError) as e:
        check_c_expr(L, ("r", "c"), "(r & 3) + c * ld")
    assert e.value.witness == (4, 0)


def test_planted_wrong_expression_refuted():
    L = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))
    good = lower(L, ("r", "c"), name="s").c_expr
    assert check_c_expr(L, ("r", "c"), good).cases == 512
    bad = good.replace("& 56", "& 48")
    with pytest.raises(LoweringError) as e:
        check_c_expr(L, ("r", "c"), bad)
    w = e.value.witness
    assert isinstance(w, tuple) and len(w) == 2
    assert c_eval_scalar(bad, {"r": w[0], "c": w[1]}) != L(*w)
    # the first mismatch in colexicographic order: row 1 sets bit 3 of the XOR mask
    assert w == (1, 0)
    with pytest.raises(LoweringError) as e:
        check_c_expr(Layout((4, 8), (8, 1)), ("r", "c"), "r * 8 + c + (r == 3)")
    assert e.value.condition == "C expression syntax"


def test_argument_and_domain_errors():
    with pytest.raises(LoweringError) as e:
        lower(Layout((4, 8, 2), (1, 4, 32)), ("a", "b"), name="f")
    assert e.value.condition == "one argument per mode"
    for bad in [("int", "b"), ("a", "a"), ("a b",), ("1a",)]:
        with pytest.raises(LoweringError):
            lower(Layout((4, 8), (1, 4)), bad, name="f")
    with pytest.raises(LoweringError):
        lower(Layout((4, 8), (1, 4)), ("a", "b"), name="not a name")
    with pytest.raises(LoweringError) as e:
        lower(Layout((EXHAUSTIVE_LIMIT, 2), (1, 0)), ("a", "b"), name="f")
    assert e.value.condition == "domain size"
    with pytest.raises(LoweringError) as e:
        lower(Layout((64, 64), (1 << 26, 1)), ("r", "c"), name="f")
    assert e.value.condition == "integer overflow" and e.value.witness == (32, 0)
    # 64-bit index type: no 32-bit overflow check
    assert lower(Layout((64, 64), (1 << 26, 1)), ("r", "c"), name="f", int_bits=None).proof.cases == 4096
    # a swizzle under negative strides would shift a negative value: refused
    with pytest.raises(LoweringError) as e:
        lower(ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 64), (-64, 1))), ("r", "c"), name="f")
    assert e.value.condition == "shift of a negative value"
    with pytest.raises(LoweringError):
        lower("(4,8):(1,4)", ("a",), name="f")
    # an outer layout read beyond its domain (offset 30 + 7 >= 32)
    with pytest.raises(LoweringError) as e:
        lower(ComposedLayout(Layout((4, 8), (8, 1)), 30, Layout((2, 4), (1, 2))), ("i", "j"), name="f")
    assert e.value.condition == "lowerable layout"


def test_lower_many_and_header():
    items = [
        (Layout((8, 8), (8, 1)), ("r", "c"), "a"),
        {"layout": composition(Swizzle(2, 3, 3), Layout((8, 32), (32, 1))), "args": ("r", "c"), "name": "b"},
    ]
    lows, log = lower_many(items)
    assert [x.name for x in lows] == ["a", "b"] and len(log) == 2 and log.cases == 64 + 256
    assert "[equal] b(r, c) == Sw<2,3,3> o 0 o (8,32):(32,1) -- exhaustive, 256 cases" in log.header()
    assert lows[1](np.array([1]), np.array([0])).tolist() == [
        composition(Swizzle(2, 3, 3), Layout((8, 32), (32, 1)))(1, 0)
    ]


# ----------------------------------------------------------------------------- properties


@settings(max_examples=examples(150))
@given(layouts(max_size=256, kind="mixed"), st.booleans(), st.booleans())
def test_property_lower_is_proven_or_refused(L, per_mode, pow2):
    s = L.shape
    args = tuple(f"a{i}" for i in range(len(s))) if per_mode and isinstance(s, tuple) and s else ("x",)
    try:
        low = lower(L, args, name="f", pow2=pow2)
    except LoweringError as e:
        assert e.condition  # refusals name their condition
        return
    got = np.broadcast_to(c_expr_eval(low.c_expr, _env(L, args)), (L.size,))
    assert got.tolist() == L.eval_all().tolist()


@settings(max_examples=examples(60))
@given(swizzled_layouts(max_bits=8), st.booleans())
def test_property_swizzled(C, per_mode):
    s = C.shape
    args = tuple(f"a{i}" for i in range(len(s))) if per_mode and isinstance(s, tuple) and s else ("x",)
    try:
        low = lower(C, args, name="f")
    except LoweringError as e:
        assert e.condition
        return
    got = np.broadcast_to(c_expr_eval(low.c_expr, _env(C, args)), (C.size,))
    assert got.tolist() == C.eval_all().tolist()
    # and one point by the independent scalar evaluator
    crd = tuple(int(a[-1]) for a in _env(C, args).values())
    assert c_eval_scalar(low.c_expr, dict(zip(args, crd))) == C.eval_all()[-1]


@settings(max_examples=examples(60))
@given(layouts(max_size=128, kind="nonneg"), st.data())
def test_property_tampered_expression_is_refuted(L, data):
    args = ("x",)
    low = lower(L, args, name="f")
    k = data.draw(st.integers(1, 5))
    bad = f"({low.c_expr} + (x / {L.size - 1 if L.size > 1 else 1}) * {k})"
    if L.size <= 1:
        bad = f"({low.c_expr} + {k})"
    with pytest.raises(LoweringError) as e:
        check_c_expr(L, args, bad)
    (x,) = e.value.witness
    assert c_eval_scalar(bad, {"x": x}) != L(x)


def _env(L, args):
    if len(args) == 1:
        return {args[0]: np.arange(L.size)}
    sizes = [Layout(s).size for s in L.shape]
    idx = np.arange(L.size)
    out, p = {}, 1
    for a, s in zip(args, sizes):
        out[a] = (idx // p) % s
        p *= s
    return out


# ----------------------------------------------------------------------------- obligations


def test_bounds():
    low = lower(composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1))), ("r", "c"), name="s")
    log = ProofLog()
    p = prove_bounds(low, 0, 512, what="smem A tile", log=log)
    assert p.kind == "bounds" and p.cases == 512 and list(log) == [p]
    with pytest.raises(ProofFailedError) as e:
        prove_bounds(low, 0, 511, what="smem A tile")
    assert e.value.condition == "bounds" and low(*map(np.array, e.value.witness)).item() == 511
    with pytest.raises(ProofFailedError) as e:
        prove_bounds(Layout((4, 8), (9, 1)), 0, 32, what="t")
    assert e.value.witness == (3, 5)  # 3*9 + 5 == 32, the first one out in colex order
    with pytest.raises(ProofFailedError) as e:
        prove_bounds(Layout((4, 8), (-1, 1)), 0, 32, what="t")
    assert e.value.witness == (1, 0)
    with pytest.raises(ProofFailedError):
        prove_bounds(Layout((4, 8), (1, symbols("ld"))), 0, 32, what="t")


def test_bijective_and_injective():
    tv = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))  # the m16n8 accumulator-like TV map
    assert prove_bijective(tv, 128, what="tv").cases == 128
    assert prove_injective(tv, what="tv").kind == "bijective"
    with pytest.raises(ProofFailedError) as e:
        prove_bijective(tv, 127, what="tv")
    assert e.value.condition == "bounds"
    with pytest.raises(ProofFailedError) as e:
        prove_bijective(Layout((2, 4), (1, 4)), 16, what="tv")  # injective, misses values
    assert e.value.condition == "surjective" and e.value.witness == 2
    with pytest.raises(ProofFailedError) as e:
        prove_bijective(Layout((2, 4), (2, 1)), 8, what="tv")
    assert e.value.condition == "injective"
    a, b = e.value.witness
    L = Layout((2, 4), (2, 1))
    assert a != b and L(*a) == L(*b)
    with pytest.raises(ProofFailedError) as e:
        prove_injective(composition(Swizzle(1, 0, 1), Layout((2, 2), (0, 1))), what="x")
    assert e.value.condition == "injective"
    assert prove_bijective(lower(Swizzle(3, 3, 3), ("o",), name="sw"), 512, what="sw").cases == 512
