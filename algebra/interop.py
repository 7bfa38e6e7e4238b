"""Layouts in and out: CuTe C++, the CuTe DSL, legacy pycute and Triton linear layouts.

Export (the text compiles, or runs, where it is pasted):

* :func:`to_cpp` -- a CuTe C++ expression: every integer leaf is static (``Int<4>{}``), a
  symbolic leaf is a dynamic ``int`` expression of its names (``M``, ``N/8``), a swizzled
  layout is ``make_composed_layout(Swizzle<B,M,S>{}, Int<0>{}, ...)``;
* :func:`to_dsl` -- CuTe DSL Python (``cute.make_layout((4, 8), stride=(1, 4))``);
* :func:`to_pycute` -- a legacy pycute object; :func:`to_triton` -- Triton's dictionary of
  bases of a linear (F2) layout.

Import (:func:`import_layout` picks the form; each has its own function):

* :func:`from_cpp` -- CuTe C++ type spellings as compilers print them
  (``cute::Layout<cute::tuple<cute::C<4>, int>, cute::tuple<cute::C<1>, cute::C<4>>>``),
  C++'s ``print`` output (``(_4,8):(_1,_4)``, ``Sw<3,3,3> o _0 o ...``), and the
  expressions :func:`to_cpp` writes.  A dynamic ``int`` leaf of a type has no value: it
  becomes a symbol (shape leaves ``S0, S1, ...``, strides ``D0, D1, ...``).
* :func:`from_dsl` -- the CuTe DSL's printed layouts and MLIR types
  (``(?,?{div=16}):(?{i64},1)``, ``!cute.composed_layout<"S<3,4,3> o 0 o ...">``): each ``?``
  becomes a symbol, ``div=16`` the assumption that it is a multiple of 16; and the Python
  that :func:`to_dsl` writes.
* :func:`from_pycute` -- legacy pycute ``Layout``, ``Swizzle`` and ``ComposedLayout`` objects.
* :func:`from_triton` -- a Triton linear layout, ``{"register": [[0, 1], ...], "lane": ...}``,
  as an :class:`~layoutproof.f2.F2Layout`.

An import returns an :class:`Imported`: the value and the assumptions its dynamic leaves
carry (strings for :func:`~layoutproof.symbolic.assuming`).  Symbols are positive
integers, as everywhere in layoutproof: a dynamic stride of 0 or below is out of scope.

>>> from layoutproof import Layout
>>> to_cpp(Layout((4, 8), (1, 4)))
'make_layout(make_shape(Int<4>{}, Int<8>{}), make_stride(Int<1>{}, Int<4>{}))'
>>> r = from_cpp("cute::Layout<cute::tuple<cute::C<4>, int>, cute::tuple<cute::C<1>, cute::C<4>>>")
>>> print(r.value, r.assumptions)
(4,S0):(1,4) ()
>>> r = from_dsl('!cute.layout<"(?,?{div=16}):(1,?{i64})">')
>>> print(r.value, r.assumptions)
(S0,S1):(1,D2) ('S1 % 16 == 0',)
>>> to_dsl(Layout((4, 8), (1, 4)))
'cute.make_layout((4, 8), stride=(1, 4))'
>>> print(from_triton({"register": [[1], [2]], "lane": [[4], [8]]}))
((2,2),(2,2)):((F1,F2),(F4,F8))
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any, Dict, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from . import kinds
from .arith import ScaledBasis
from .composed import ComposedLayout
from .errors import LayoutError, MalformedLayoutError, show
from .f2 import F2Layout, from_f2, to_f2
from .layout import Layout
from .notation import is_symbol_name, leaf_arith
from .swizzle import Swizzle
from .symbolic import symbols
from .tensor import Tensor

__all__ = [
    "Imported",
    "to_cpp",
    "to_dsl",
    "to_pycute",
    "to_triton",
    "from_cpp",
    "from_dsl",
    "from_pycute",
    "from_triton",
    "import_layout",
    "rewrite_foreign",
]

_MAX_TEXT = 100_000


class Imported(NamedTuple):
    """An imported layout and the assumptions on its symbols (``"S1 % 16 == 0"``)."""

    value: Any
    assumptions: Tuple[str, ...] = ()

    def __str__(self) -> str:
        s = str(self.value)
        return s + (f"  [assuming {', '.join(self.assumptions)}]" if self.assumptions else "")


# ============================================================================ export
def _swizzle_types() -> Tuple[Any, Any, Any]:
    return Swizzle, ComposedLayout, F2Layout


def _unwrap(x: Any, who: str) -> Any:
    """A Tensor exports its layout; an F2 layout its swizzle form (:func:`from_f2`)."""
    Swizzle, ComposedLayout, F2Layout = _swizzle_types()
    if isinstance(x, Tensor):
        x = x.layout
    if isinstance(x, F2Layout):
        from .f2 import from_f2

        x = from_f2(x)
    if not isinstance(x, (Layout, ComposedLayout, Swizzle)):
        raise MalformedLayoutError(
            f"{who} exports a Layout, a swizzled (composed) layout, a Swizzle, an F2 layout or a "
            f"Tensor's layout, got {type(x).__name__} {show(x)}"
        )
    return x


def _is_sympy(x: Any) -> bool:
    import sys

    sp = sys.modules.get("sympy")
    return sp is not None and isinstance(x, sp.Basic)


def _expr_text(e: Any, lang: str) -> str:
    """A SymPy integer expression as C++ (``/`` integer division) or Python (``//``)."""
    import sympy as sp

    div = "/" if lang == "cpp" else "//"

    def atom(x: Any) -> str:
        s = go(x)
        return s if re.fullmatch(r"[A-Za-z_0-9]+", s) else f"({s})"

    def go(x: Any) -> str:
        if x.is_Integer:
            return str(int(x))
        if x.is_Symbol:
            return x.name
        if x.is_Add:
            terms = sorted(x.args, key=sp.default_sort_key)
            out = go(terms[0])
            for t in terms[1:]:
                c, rest = t.as_coeff_Mul()
                if c < 0:
                    out += " - " + go(-t)
                else:
                    out += " + " + go(t)
            return out
        if x.is_Mul:
            c, rest = x.as_coeff_Mul()
            p, q = sp.fraction(sp.Rational(c))
            factors = [atom(f) for f in sp.Mul.make_args(rest) if f != 1]
            if p != 1:
                factors.insert(0, str(int(p)) if p > 0 else f"({int(p)})")
            body = "*".join(factors) if factors else "1"
            return body if q == 1 else f"({body}){div}{int(q)}"
        if x.is_Pow and x.exp.is_Integer and int(x.exp) >= 0:
            return "*".join([atom(x.base)] * int(x.exp)) or "1"
        if isinstance(x, sp.floor):
            num, den = sp.fraction(sp.together(x.args[0]))
            if den.is_Integer:
                return f"({go(num)}){div}{int(den)}"
        if isinstance(x, sp.ceiling):
            num, den = sp.fraction(sp.together(x.args[0]))
            if den.is_Integer:
                if lang == "cpp":
                    return f"cute::ceil_div({go(num)}, {int(den)})"
                return f"-(-({go(num)})//{int(den)})"
        if isinstance(x, sp.Mod):
            return f"{atom(x.args[0])} % {atom(x.args[1])}"
        if isinstance(x, (sp.Min, sp.Max)):
            fn = (
                ("cute::min" if isinstance(x, sp.Min) else "cute::max")
                if lang == "cpp"
                else ("min" if isinstance(x, sp.Min) else "max")
            )
            args = [go(a) for a in x.args]
            out = args[0]
            for a in args[1:]:
                out = f"{fn}({out}, {a})"
            return out
        raise MalformedLayoutError(
            f"cannot write the leaf {show(x)} as {'C++' if lang == 'cpp' else 'Python'}"
        )

    return go(sp.sympify(e))


def _cpp_leaf(x: Any) -> str:
    if type(x) is int:
        return f"Int<{x}>{{}}"
    if isinstance(x, ScaledBasis):
        path = ", ".join(str(i) for i in x.path)
        if x.value == 1:
            return f"E<{path}>{{}}"
        return f"ScaledBasis<Int<{x.value}>, {path}>{{}}"
    if _is_sympy(x):
        return _expr_text(x, "cpp")
    raise MalformedLayoutError(f"to_cpp: cannot write the leaf {show(x)}")


def _cpp_tuple(t: Any, maker: str) -> str:
    if type(t) is tuple:
        return f"{maker}(" + ", ".join(_cpp_tuple(e, maker) for e in t) + ")"
    return _cpp_leaf(t)


def _cpp_layout(L: Layout) -> str:
    s, d = L.shape, L.stride
    if type(s) is not tuple:  # rank-1 unwrapped: make_layout(Int<4>{}, Int<2>{})
        return f"make_layout({_cpp_leaf(s)}, {_cpp_leaf(d)})"
    return f"make_layout({_cpp_tuple(s, 'make_shape')}, {_cpp_tuple(d, 'make_stride')})"


def to_cpp(x: Any, *, name: Optional[str] = None) -> str:
    """CuTe C++ for a layout, a swizzled layout, a Swizzle, a Tensor's layout or an F2
    layout (through :func:`~layoutproof.f2.from_f2`): static ``Int<n>{}`` for integer
    leaves, ``int`` expressions of the symbols for symbolic ones (declare them in the C++).
    ``name`` makes a declaration ``auto name = ...;``.  The code is compile-tested against
    the CuTe headers (tests/algebra/test_interop.py).

    >>> from layoutproof import Layout, Swizzle, symbols, composition
    >>> to_cpp(Layout(((2, 4), 8), ((1, 16), 2)), name="L").replace("make_", "")
    'auto L = layout(shape(shape(Int<2>{}, Int<4>{}), Int<8>{}), stride(stride(Int<1>{}, ...
    >>> M, N = symbols("M N")
    >>> to_cpp(Layout((M, 8), (1, M)))
    'make_layout(make_shape(M, Int<8>{}), make_stride(Int<1>{}, M))'
    >>> to_cpp(composition(Swizzle(3, 3, 3), Layout(8, 64)))
    'make_composed_layout(Swizzle<3, 3, 3>{}, Int<0>{}, make_layout(Int<8>{}, Int<64>{}))'
    """
    Swizzle, ComposedLayout, _ = _swizzle_types()
    x = _unwrap(x, "to_cpp")
    if isinstance(x, Swizzle):
        text = f"Swizzle<{x.bits}, {x.base}, {x.shift}>{{}}"
    elif isinstance(x, ComposedLayout):
        a = x.layout_a
        at = f"Swizzle<{a.bits}, {a.base}, {a.shift}>{{}}" if isinstance(a, Swizzle) else _cpp_layout(a)
        text = f"make_composed_layout({at}, Int<{x.offset}>{{}}, {_cpp_layout(x.layout_b)})"
    else:
        text = _cpp_layout(x)
    if name is not None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z_0-9]*", str(name)):
            raise MalformedLayoutError(f"to_cpp: name must be a C++ identifier, got {show(name)}")
        return f"auto {name} = {text};"
    return text


def _py_tuple(t: Any) -> str:
    if type(t) is tuple:
        inner = ", ".join(_py_tuple(e) for e in t)
        return f"({inner},)" if len(t) == 1 else f"({inner})"
    if type(t) is int:
        return str(t)
    if isinstance(t, ScaledBasis):
        raise MalformedLayoutError(
            f"to_dsl: the basis stride {t} has no CuTe DSL spelling here (export it with to_cpp)"
        )
    if _is_sympy(t):
        return _expr_text(t, "py")
    raise MalformedLayoutError(f"to_dsl: cannot write the leaf {show(t)}")


def _dsl_layout(L: Layout) -> str:
    return f"cute.make_layout({_py_tuple(L.shape)}, stride={_py_tuple(L.stride)})"


def to_dsl(x: Any, *, module: str = "cute") -> str:
    """CuTe DSL Python (``import cutlass.cute as cute``) for what :func:`to_cpp` takes:
    ``cute.make_layout(shape, stride=stride)``, ``cute.make_swizzle(b, m, s)``,
    ``cute.make_composed_layout(swizzle, offset, layout)``; symbolic leaves are Python
    expressions of their names (``//`` for division).  ``module`` names the import.

    >>> from layoutproof import Layout, Swizzle, ComposedLayout, symbols
    >>> M = symbols("M")
    >>> to_dsl(Layout((M, 8), (1, M)))
    'cute.make_layout((M, 8), stride=(1, M))'
    >>> to_dsl(ComposedLayout(Swizzle(2, 4, 3), 0, Layout((8, 32), (32, 1))))
    'cute.make_composed_layout(cute.make_swizzle(2, 4, 3), 0, cute.make_layout((8, 32), stride=(32, 1)))'
    """
    Swizzle, ComposedLayout, _ = _swizzle_types()
    if not re.fullmatch(r"[A-Za-z_][A-Za-z_0-9.]*", str(module)):
        raise MalformedLayoutError(f"to_dsl: module must be a Python name, got {show(module)}")
    x = _unwrap(x, "to_dsl")
    text: str
    if isinstance(x, Swizzle):
        text = f"cute.make_swizzle({x.bits}, {x.base}, {x.shift})"
    elif isinstance(x, ComposedLayout):
        a = x.layout_a
        at = f"cute.make_swizzle({a.bits}, {a.base}, {a.shift})" if isinstance(a, Swizzle) else _dsl_layout(a)
        text = f"cute.make_composed_layout({at}, {x.offset}, {_dsl_layout(x.layout_b)})"
    else:
        text = _dsl_layout(x)
    return text if module == "cute" else text.replace("cute.", module + ".")


# ============================================================================ names
class _Names:
    """Fresh symbol names for dynamic leaves: shape leaves ``S<k>``, strides ``D<k>`` (one
    counter), skipping names already taken."""

    def __init__(self, taken: Sequence[str] = ()) -> None:
        self.k = 0
        self.taken = set(taken)
        self.facts: List[str] = []

    def fresh(self, role: str, div: int = 1) -> Any:
        while True:
            name = f"{'S' if role == 'shape' else 'D'}{self.k}"
            self.k += 1
            if name not in self.taken:
                break
        self.taken.add(name)
        if div > 1:
            self.facts.append(f"{name} % {div} == 0")
        return symbols(name)


def _check_text(text: Any, who: str) -> str:
    if not isinstance(text, str):
        raise MalformedLayoutError(f"{who} reads text, got {type(text).__name__} {show(text)}")
    if len(text) > _MAX_TEXT:
        raise MalformedLayoutError(f"{who}: text longer than {_MAX_TEXT} characters")
    return text


# ============================================================================ C++ import
_CPP_TOKEN = re.compile(
    r"\s*(?:(?P<int>-?\d+)(?:[uUlL]{0,3})\b|(?P<name>(?:::)?[A-Za-z_][A-Za-z_0-9]*(?:::[A-Za-z_][A-Za-z_0-9]*)*)"
    r"|(?P<op>[<>(){},*/+%:-]))"
)
_DYN_TYPES = {
    "int",
    "long",
    "short",
    "unsigned",
    "signed",
    "size_t",
    "int32_t",
    "int64_t",
    "uint32_t",
    "uint64_t",
    "int8_t",
    "int16_t",
    "uint8_t",
    "uint16_t",
    "char",
}
_CPP_MAX_DEPTH = 64


def _cpp_tokens(text: str) -> List[Tuple[str, Any, int]]:
    out: List[Tuple[str, Any, int]] = []
    pos, n = 0, len(text)
    while pos < n:
        m = _CPP_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            out.append(("bad", text[pos], pos))
            pos += 1
            continue
        if m.group("int") is not None:
            digits = m.group("int")
            if len(digits) > 400:
                raise MalformedLayoutError("integer literal with more than 400 digits")
            out.append(("int", int(digits), m.start("int")))
        elif m.group("name") is not None:
            name = m.group("name")
            if name.startswith("::"):
                name = name[2:]
            for pre in ("cute::", "std::"):
                if name.startswith(pre):
                    name = name[len(pre) :]
            out.append(("name", name, m.start("name")))
        else:
            out.append((m.group("op"), m.group("op"), m.start("op")))
        pos = m.end()
    return out


class _CppParser:
    """CuTe C++ types and the expressions :func:`to_cpp` writes."""

    def __init__(self, text: str, names: _Names) -> None:
        self.text = text
        self.toks = _cpp_tokens(text)
        self.i = 0
        self.names = names

    def peek(self, k: int = 0) -> Optional[str]:
        j = self.i + k
        return self.toks[j][0] if j < len(self.toks) else None

    def val(self, k: int = 0) -> Any:
        j = self.i + k
        return self.toks[j][1] if j < len(self.toks) else None

    def pos(self) -> int:
        return self.toks[self.i][2] if self.i < len(self.toks) else len(self.text)

    def fail(self, what: str) -> Any:
        got = repr(self.val()) if self.i < len(self.toks) else "end of input"
        raise MalformedLayoutError(
            f"CuTe C++: expected {what} at {self.pos()} in {show(self.text)}, got {got}"
        )

    def take(self, kind: str) -> Any:
        if self.peek() != kind:
            self.fail(repr(kind))
        v = self.val()
        self.i += 1
        return v

    def maybe(self, kind: str) -> bool:
        if self.peek() == kind:
            self.i += 1
            return True
        return False

    def targs(self, depth: int, role: str) -> List[Any]:
        self.take("<")
        out: List[Any] = []
        if self.peek() != ">":
            out.append(self.thing(depth + 1, role))
            while self.maybe(","):
                out.append(self.thing(depth + 1, role))
        self.take(">")
        self.maybe_braces()
        return out

    def maybe_braces(self) -> None:
        if self.peek() == "{" and self.peek(1) == "}":
            self.i += 2
        elif self.peek() == "(" and self.peek(1) == ")":
            self.i += 2

    def args(self, depth: int, role: str) -> List[Any]:
        self.take("(")
        out: List[Any] = []
        if self.peek() != ")":
            out.append(self.expr(depth + 1, role))
            while self.maybe(","):
                out.append(self.expr(depth + 1, role))
        self.take(")")
        return out

    def int_arg(self, x: Any, what: str) -> int:
        if type(x) is not int:
            raise MalformedLayoutError(
                f"CuTe C++: {what} must be an integer, got {show(x)} in {show(self.text)}"
            )
        return x

    def expr(self, depth: int, role: str) -> Any:
        """A value with ``*``, ``/``, ``+``, ``-`` between things (dynamic leaf arithmetic)."""
        left = self.term(depth, role)
        while self.peek() in ("+", "-"):
            op = self.take(self.peek())  # type: ignore[arg-type]
            right = self.term(depth, role)
            left = self.arith(op, left, right)
        return left

    def term(self, depth: int, role: str) -> Any:
        left = self.thing(depth, role)
        while self.peek() in ("*", "/", "%"):
            op = self.take(self.peek())  # type: ignore[arg-type]
            right = self.thing(depth, role)
            left = self.arith(op, left, right)
        return left

    def arith(self, op: str, a: Any, b: Any) -> Any:
        if op == "*" and (isinstance(a, ScaledBasis) or isinstance(b, ScaledBasis)):
            return a * b
        if op == "%":
            from .notation import leaf_function

            return leaf_function("Mod", [a, b], self.text)
        return leaf_arith(op, a, b, self.text)

    def thing(self, depth: int, role: str) -> Any:
        if depth > _CPP_MAX_DEPTH:
            raise MalformedLayoutError(f"CuTe C++ nested deeper than {_CPP_MAX_DEPTH} levels")
        k = self.peek()
        if k == "int":
            return self.take("int")
        if k == "-" and self.peek(1) == "int":
            self.take("-")
            return -self.take("int")
        if k == "(":
            self.take("(")
            v = self.expr(depth + 1, role)
            self.take(")")
            return v
        if k != "name":
            return self.fail("a CuTe type or expression")
        name = self.take("name")
        if name in ("integral_constant", "constant") and self.peek() == "<":
            self.take("<")
            while self.peek() == "name":
                self.take("name")  # the value type: int, long, ...
            self.take(",")
            neg = self.maybe("-")
            v = self.take("int")
            self.take(">")
            self.maybe_braces()
            return -v if neg else v
        if name in ("C", "Int"):
            args = self.targs(depth, role)
            vals = [a for a in args if type(a) is int]
            if not vals:
                raise MalformedLayoutError(f"CuTe C++: {name}<...> without a value in {show(self.text)}")
            return vals[-1]
        if re.fullmatch(r"_\d+", name):  # _4, _4{}
            self.maybe_braces()
            return int(name[1:])
        if name in _DYN_TYPES or name in ("long long", "unsigned int"):
            while self.peek() == "name" and self.val() in _DYN_TYPES:
                self.take("name")  # "unsigned int", "long long"
            return self.names.fresh(role)
        if name in ("tuple", "Shape", "Stride", "Coord", "Tile", "Step", "make_tuple"):
            elems = self.targs(depth, role) if self.peek() == "<" else self.args(depth, role)
            return tuple(elems)
        if name in ("make_shape",):
            return tuple(self.args(depth, "shape"))
        if name in ("make_stride",):
            return tuple(self.args(depth, "stride"))
        if name == "Layout":
            if self.peek() != "<":
                return self.fail("'<' after Layout")
            self.take("<")
            s = self.thing(depth + 1, "shape")
            d = self.thing(depth + 1, "stride") if self.maybe(",") else None
            self.take(">")
            self.maybe_braces()
            return Layout(s, d)
        if name == "make_layout":
            a = self.args(depth, "shape")
            if len(a) == 1:
                return a[0] if isinstance(a[0], Layout) else Layout(a[0])
            if len(a) == 2 and not isinstance(a[0], Layout):
                if type(a[1]) is tuple or type(a[0]) is not tuple:
                    return Layout(a[0], self.restride(a[1]))
            raise MalformedLayoutError(
                f"CuTe C++: make_layout(shape[, stride]) expected in {show(self.text)}"
            )
        if name == "Swizzle":
            if self.peek() == "<":
                b = self.targs(depth, "shape")
            else:
                b = self.args(depth, "shape")
            if len(b) != 3:
                raise MalformedLayoutError(f"CuTe C++: Swizzle takes <B, M, S> in {show(self.text)}")
            return Swizzle(*(self.int_arg(v, "a Swizzle parameter") for v in b))
        if name == "ComposedLayout":
            a = self.targs(depth, "stride")
            if len(a) != 3:
                raise MalformedLayoutError(f"CuTe C++: ComposedLayout<A, Offset, B> in {show(self.text)}")
            return ComposedLayout(a[0], self.offset(a[1]), a[2])
        if name in ("make_composed_layout", "composition"):
            a = self.args(depth, "stride")
            if len(a) == 3:
                return ComposedLayout(a[0], self.offset(a[1]), a[2])
            if len(a) == 2 and isinstance(a[0], Swizzle) and isinstance(a[1], Layout):
                return ComposedLayout(a[0], 0, a[1])
            raise MalformedLayoutError(
                f"CuTe C++: {name}(Swizzle, offset, layout) expected in {show(self.text)}"
            )
        if name in ("E", "ScaledBasis"):
            from .arith import ScaledBasis

            a = self.targs(depth, role)
            if name == "E":
                return ScaledBasis(1, tuple(self.int_arg(v, "a basis index") for v in a))
            if not a:
                raise MalformedLayoutError(
                    f"CuTe C++: ScaledBasis<value, index...> without a value in {show(self.text)}"
                )
            return ScaledBasis(
                self.int_arg(a[0], "a basis scale"), tuple(self.int_arg(v, "a basis index") for v in a[1:])
            )
        if is_symbol_name(name):
            from .symbolic import symbols

            self.names.taken.add(name)
            return symbols(name)
        raise MalformedLayoutError(
            f"CuTe C++: unknown name {name!r} at {self.toks[self.i - 1][2]} in {show(self.text)} "
            "(a dynamic variable starts with an upper-case letter: M, N, BLK_M)"
        )

    def offset(self, o: Any) -> int:
        if type(o) is tuple and len(o) == 0:
            return 0
        return self.int_arg(o, "the offset of a composed layout")

    def restride(self, d: Any) -> Any:
        return d


def from_cpp(text: str, *, extent: Any = None, stride: Any = None) -> Imported:
    """Read a CuTe C++ layout: a type spelling from a compiler message, ``print`` output,
    or an expression as :func:`to_cpp` writes it.  A CUTLASS 2.x layout class
    (``"cutlass::layout::ColumnMajorInterleaved<32>"``) is read too, given its ``extent``
    (and ``stride``, the class's stride vector): :func:`layoutproof.cutlass2.from_cutlass2`.

    Types: ``Layout<Shape, Stride>`` with ``tuple<...>``, ``C<n>`` / ``Int<n>`` /
    ``integral_constant<int, n>`` / ``_n`` (static) and ``int`` (dynamic: a fresh symbol);
    ``ComposedLayout<Swizzle<B,M,S>, C<0>, Layout<...>>``; ``ScaledBasis<C<v>, i...>`` and
    ``E<i...>`` strides.  Namespaces (``cute::``) are optional.

    >>> r = from_cpp("cute::ComposedLayout<cute::Swizzle<3, 3, 3>, cute::C<0>, cute::Layout<"
    ...              "cute::tuple<cute::C<8>, cute::C<64>>, cute::tuple<cute::C<64>, cute::C<1>>>>")
    >>> print(r.value)
    Sw<3,3,3> o 0 o (8,64):(64,1)
    >>> print(from_cpp("make_layout(make_shape(Int<4>{}, N), make_stride(Int<1>{}, Int<4>{}))").value)
    (4,N):(1,4)
    >>> print(from_cpp("Sw<3,4,3> o _0 o (_8,_64):(_64,_1)").value)
    Sw<3,4,3> o 0 o (8,64):(64,1)
    """
    text = _check_text(text, "from_cpp")
    two = kinds.hook("cutlass2_class")  # registered by layoutproof.cutlass2 (the façade loads it)
    value2 = two(text, extent, stride) if two is not None else None
    if value2 is not None:
        return Imported(value2, ())
    if extent is not None or stride is not None:
        raise MalformedLayoutError(
            f"from_cpp: extent and stride are for CUTLASS 2.x layout classes; {show(text[:200])} names none"
        )
    decl = re.match(r"\s*(?:(?:constexpr|static|const)\s+)*auto\s+[A-Za-z_][A-Za-z_0-9]*\s*=\s*", text)
    if decl is None:  # a type as in "const cute::Layout<...>&"
        decl = re.match(r"\s*(?:const\s+|volatile\s+)+", text)
    value, end, names = _parse_cpp_prefix(text, decl.end() if decl else 0)
    rest = re.sub(r"^(?:\s*(?:const|volatile|&&|&|;))+", "", text[end:]).strip()
    if rest:
        raise MalformedLayoutError(f"CuTe C++: unexpected {show(rest)} after the layout in {show(text)}")
    return Imported(value, tuple(names.facts))


def _parse_cpp_prefix(text: str, start: int, names: Optional[_Names] = None) -> Tuple[Any, int, _Names]:
    names = names or _Names()
    body = text[start:]
    stripped = body.lstrip()
    if re.match(r"(?:cute::)?Sw<", stripped) or (re.match(r"[(_\d]", stripped) and "{}" not in stripped[:2]):
        v, n = _parse_printed(body, names, "C++ print")
        return v, start + n, names
    p = _CppParser(body, names)
    try:
        v = p.expr(0, "shape")
    except RecursionError:  # pragma: no cover - the depth limit comes first
        raise MalformedLayoutError("CuTe C++ nested too deeply") from None
    end = p.toks[p.i][2] if p.i < len(p.toks) else len(body)
    if not isinstance(v, (Layout, ComposedLayout, Swizzle)):
        raise MalformedLayoutError(f"CuTe C++: {show(body.strip()[:200])} is no layout (got {show(v)})")
    return v, start + end, names


# ============================================================================ printed forms (C++ print, DSL)
_PRINTED_TOKEN = re.compile(
    r"\s*(?:(?P<q>\?(?:\{[^{}]{0,80}\})?)|(?P<int>(?:_-|-_?|_)?\d+)|(?P<at>@\d+)|(?P<op>[(),:])|(?P<o>\bo\b)"
    r"|(?P<sw>(?:Sw|SW|S)<\s*-?\d+\s*,\s*-?\d+\s*,\s*-?\d+\s*>))"
)


def _parse_printed(text: str, names: _Names, who: str) -> Tuple[Any, int]:
    """A printed layout ``shape:stride`` or ``A o offset o B`` at the start of ``text``
    (C++ ``print``: ``_4`` static leaves; the CuTe DSL: ``?`` dynamic leaves with
    ``{div=16}`` / ``{i64}`` annotations, ``1@0`` basis strides).  Returns the value and
    the number of characters read."""
    toks: List[Tuple[str, Any, int, int]] = []
    pos, n = 0, len(text)
    while pos < n:
        m = _PRINTED_TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            break
        kind = m.lastgroup or ""
        val = m.group(kind)
        toks.append((val if kind == "op" else kind, val, m.start(kind), m.end()))
        pos = m.end()
    i = 0

    def peek() -> Optional[str]:
        return toks[i][0] if i < len(toks) else None

    def fail(what: str) -> Any:
        at = toks[i][2] if i < len(toks) else len(text)
        raise MalformedLayoutError(f"{who}: expected {what} at {at} in {show(text)}")

    def leaf(role: str) -> Any:
        nonlocal i
        k = peek()
        if k == "int":
            v = int(toks[i][1].replace("_", ""))
            i += 1
            parts = []
            while peek() == "at":
                parts.append(int(toks[i][1][1:]))
                i += 1
            if parts:
                from .arith import ScaledBasis

                return ScaledBasis(v, tuple(reversed(parts)))
            return v
        if k == "q":
            ann = toks[i][1][1:].strip("{}")
            i += 1
            div = 1
            for part in ann.split():
                mm = re.fullmatch(r"div=(\d+)", part)
                if mm:
                    div = int(mm.group(1))
                elif not re.fullmatch(r"[iu]\d+", part):
                    raise MalformedLayoutError(f"{who}: unknown annotation {part!r} of a dynamic leaf")
            return names.fresh(role, div)
        return fail("an integer or '?'")

    def htuple(role: str, depth: int = 0) -> Any:
        nonlocal i
        if depth > 64:
            raise MalformedLayoutError(f"{who}: nested deeper than 64 levels")
        if peek() == "(":
            i += 1
            items = [htuple(role, depth + 1)]
            while peek() == ",":
                i += 1
                items.append(htuple(role, depth + 1))
            if peek() != ")":
                fail("')'")
            i += 1
            return tuple(items)
        return leaf(role)

    def layout() -> Layout:
        nonlocal i
        s = htuple("shape")
        d = None
        if peek() == ":":
            i += 1
            d = htuple("stride")
        return Layout(s, d)

    if peek() == "sw":
        b, m_, s_ = (int(v) for v in re.findall(r"-?\d+", toks[i][1]))
        i += 1
        a: Any = Swizzle(b, m_, s_)
    else:
        a = layout()
    if peek() != "o":
        if isinstance(a, Swizzle):
            return a, toks[i - 1][3]
        return a, toks[i - 1][3]
    i += 1
    if peek() == "int" and i + 1 < len(toks) and toks[i + 1][0] == "o":
        off = int(toks[i][1].replace("_", ""))
        i += 2
    else:
        off = 0
    b_layout = layout()
    return ComposedLayout(a, off, b_layout), toks[i - 1][3]


def _mlir_payload(text: str) -> Optional[str]:
    """The quoted layout of an MLIR type ``!cute.layout<"...">`` (the last quoted string,
    as in ``!cute.memref<f16, smem, align<16>, "...">``)."""
    t = text.strip()
    if not t.startswith("!cute.") and not t.startswith("!cute_"):
        return None
    q = re.findall(r'"([^"]*)"', t)
    if not q:
        raise MalformedLayoutError(f"CuTe DSL: no quoted layout in the MLIR type {show(t)}")
    return q[-1]


def from_dsl(text: str) -> Imported:
    """Read a CuTe DSL layout: its printed form (``print(layout)``, ``cute.printf``), an MLIR
    type (``!cute.layout<"...">``, ``!cute.composed_layout<"...">``, ``!cute.memref<...,
    "...">``) or the Python :func:`to_dsl` writes.  Each ``?`` leaf becomes a fresh symbol
    (shape ``S<k>``, stride ``D<k>``); ``?{div=16}`` adds the assumption ``S<k> % 16 == 0``.

    >>> r = from_dsl('!cute.memref<f16, gmem, align<16>, "(?,?{div=64}):(?{i64 div=64},1)">')
    >>> print(r.value, r.assumptions)
    (S0,S1):(D2,1) ('S1 % 64 == 0', 'D2 % 64 == 0')
    >>> print(from_dsl("S<3,4,3> o 0 o ((8,16),(64,1)):((64,512),(1,0))").value)
    Sw<3,4,3> o 0 o ((8,16),(64,1)):((64,512),(1,0))
    >>> print(from_dsl("cute.make_layout((4, 8), stride=(8, 1))").value)
    (4,8):(8,1)
    """
    text = _check_text(text, "from_dsl")
    names = _Names()
    payload = _mlir_payload(text)
    body = payload if payload is not None else text
    if re.match(r"\s*[A-Za-z_][A-Za-z_0-9]*\.make_", body):
        return Imported(_dsl_code(body, names), tuple(names.facts))
    v, n = _parse_printed(body, names, "CuTe DSL")
    rest = body[n:].strip()
    if rest:
        raise MalformedLayoutError(f"CuTe DSL: unexpected {show(rest)} after the layout in {show(body)}")
    return Imported(v, tuple(names.facts))


def _dsl_code(text: str, names: _Names) -> Any:
    """The Python expression of :func:`to_dsl`, read with :mod:`ast` (never executed)."""
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings of odd literals: it is refused below
            tree = ast.parse(text.strip(), mode="eval")
    except (SyntaxError, ValueError, MemoryError, RecursionError) as e:
        raise MalformedLayoutError(f"CuTe DSL: not a Python expression: {e}") from None

    def val(node: Any, depth: int = 0) -> Any:
        if depth > 64:
            raise MalformedLayoutError("CuTe DSL: nested deeper than 64 levels")
        if isinstance(node, ast.Constant) and type(node.value) is int:
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = val(node.operand, depth + 1)
            return -v
        if isinstance(node, ast.Tuple):
            return tuple(val(e, depth + 1) for e in node.elts)
        if isinstance(node, ast.Name):
            from .notation import is_symbol_name
            from .symbolic import symbols

            if not is_symbol_name(node.id):
                raise MalformedLayoutError(
                    f"CuTe DSL: the name {node.id!r} is no symbol (they start with an upper-case letter)"
                )
            names.taken.add(node.id)
            return symbols(node.id)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv)):
            from .notation import leaf_arith

            op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.FloorDiv: "/"}[type(node.op)]
            return leaf_arith(op, val(node.left, depth + 1), val(node.right, depth + 1), text)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            fn = node.func.attr
            args = [val(a, depth + 1) for a in node.args]
            kw = {k.arg: val(k.value, depth + 1) for k in node.keywords}
            if fn == "make_layout" and len(args) == 1 and set(kw) <= {"stride"}:
                return Layout(args[0], kw.get("stride"))
            if fn == "make_swizzle" and len(args) == 3 and not kw:
                return Swizzle(*args)
            if fn == "make_composed_layout" and len(args) in (2, 3) and not kw:
                if len(args) == 2:
                    return ComposedLayout(args[0], 0, args[1])
                return ComposedLayout(*args)
            raise MalformedLayoutError(f"CuTe DSL: unsupported call {fn}(...) in {show(text)}")
        raise MalformedLayoutError(f"CuTe DSL: unsupported Python {type(node).__name__} in {show(text)}")

    return val(tree.body)


# ============================================================================ pycute
def _is_pycute(x: Any, cls: str) -> bool:
    t = type(x)
    return t.__name__ == cls and t.__module__.split(".")[0] == "pycute"


def from_pycute(obj: Any) -> Any:
    """A legacy pycute ``Layout``, ``Swizzle`` or ``ComposedLayout`` (nvidia-cutlass's
    ``pycute``) as layoutproof's.  pycute's ``ComposedLayout(layoutB, offset, layoutA)``
    is ``layoutB o offset o layoutA``: the same order as :class:`ComposedLayout`.

    >>> import pycute
    >>> print(from_pycute(pycute.Layout((4, 8), (8, 1))))
    (4,8):(8,1)
    >>> print(from_pycute(pycute.ComposedLayout(pycute.Swizzle(2, 0, 2), 0, pycute.Layout((4, 4), (4, 1)))))
    Sw<2,0,2> o 0 o (4,4):(4,1)
    """
    if _is_pycute(obj, "Layout"):
        return Layout(_plain_tuple(obj.shape), _plain_tuple(obj.stride))
    if _is_pycute(obj, "Swizzle"):
        return Swizzle(obj.bits, obj.base, obj.shift)
    if _is_pycute(obj, "ComposedLayout"):
        return ComposedLayout(from_pycute(obj.layoutB), obj.offset, from_pycute(obj.layoutA))
    raise MalformedLayoutError(
        f"from_pycute takes a pycute Layout, Swizzle or ComposedLayout, got {type(obj).__name__} {show(obj)}"
    )


def _plain_tuple(t: Any) -> Any:
    if isinstance(t, (tuple, list)):
        return tuple(_plain_tuple(e) for e in t)
    return t


def to_pycute(x: Any) -> Any:
    """layoutproof's Layout, Swizzle or swizzled ComposedLayout as legacy pycute objects
    (needs the nvidia-cutlass wheel; integer layouts only).

    >>> from layoutproof import Layout
    >>> to_pycute(Layout((4, 8), (8, 1)))
    Layout((4, 8),(8, 1))
    """
    Swizzle, ComposedLayout, _ = _swizzle_types()
    try:
        import pycute
    except ImportError as e:
        raise ImportError(
            "to_pycute needs legacy pycute: pip install --no-deps nvidia-cutlass==4.2.0.0"
        ) from e
    x = _unwrap(x, "to_pycute")
    if isinstance(x, Swizzle):
        return pycute.Swizzle(x.bits, x.base, x.shift)
    if isinstance(x, ComposedLayout):
        return pycute.ComposedLayout(to_pycute(x.layout_a), x.offset, to_pycute(x.layout_b))
    fs, fd = x.flat_modes()
    if any(type(e) is not int for e in fs + fd):
        raise MalformedLayoutError(f"to_pycute: pycute takes integer layouts; {x} has a non-integer leaf")
    return pycute.Layout(x.shape, x.stride)


# ============================================================================ Triton
_TRITON_IN = ("register", "lane", "warp", "block")


def _pow2_log(n: int, what: str) -> int:
    if type(n) is not int or n < 1 or n & (n - 1):
        raise LayoutError(
            f"{what} must be a power of two, got {show(n)} (Triton linear layouts are over GF(2))"
        )
    return n.bit_length() - 1


def from_triton(bases: Mapping[str, Any], out_dims: Any = None) -> Any:
    """A Triton linear layout as an :class:`~layoutproof.f2.F2Layout`.

    ``bases`` is Triton's dictionary of bases, ``{in_dim: [basis, ...]}`` (``"register"``,
    ``"lane"``, ``"warp"``, ``"block"``, ``"offset"``: any names, in order), each basis a list
    with one coordinate per output dimension (or an integer for one output dimension):
    input bit ``j`` of ``in_dim`` maps to its ``j``-th basis, and a coordinate's image is the
    XOR of the bases of its set bits.  ``out_dims`` gives the output dimensions' sizes
    (powers of two; a list, or a dict ``{"dim0": 16, ...}``); by default each is the
    smallest power of two above its largest basis coordinate.

    The F2 layout has one mode per input dimension, one shape-2 leaf per basis (an input
    dimension without bases is the leaf ``1:F0``); output dimension ``0`` is the least
    significant (``dim0 + size(dim0) * dim1 + ...``, Triton's ``flattenOuts`` and CuTe's
    column-major order).  :func:`to_triton` is the inverse.

    >>> L = from_triton({"register": [[0, 1], [0, 2]], "lane": [[1, 0], [2, 0], [0, 4]]}, [4, 8])
    >>> print(L)
    ((2,2),(2,2,2)):((F4,F8),(F1,F2,F16))
    >>> to_triton(L, out_dims=[4, 8], in_dims=["register", "lane"])
    {'register': [[0, 1], [0, 2]], 'lane': [[1, 0], [2, 0], [0, 4]]}
    """
    if isinstance(bases, str):
        bases = _literal(bases)
    if not isinstance(bases, Mapping) or not bases:
        raise MalformedLayoutError(f"from_triton takes a non-empty dict of bases, got {show(bases)}")
    if "bases" in bases and isinstance(bases.get("bases"), Mapping):  # {"bases": ..., "out_dims": ...}
        if out_dims is None:
            out_dims = bases.get("out_dims")
        bases = bases["bases"]
    rows: Dict[str, List[List[int]]] = {}
    width = None
    for name, bl in bases.items():
        if not isinstance(name, str) or not isinstance(bl, (list, tuple)):
            raise MalformedLayoutError(
                f"from_triton: each entry is in_dim name -> list of bases, got {show(name)}: {show(bl)}"
            )
        rows[name] = []
        for b in bl:
            vec = [b] if type(b) is int else list(b) if isinstance(b, (list, tuple)) else None
            if vec is None or not vec or any(type(c) is not int or c < 0 for c in vec):
                raise MalformedLayoutError(
                    f"from_triton: a basis is a list of non-negative integers (one per out dim), got "
                    f"{show(b)}"
                )
            if width is None:
                width = len(vec)
            elif len(vec) != width:
                raise MalformedLayoutError(
                    f"from_triton: every basis has {width} coordinates (one per out dim); {show(b)} has "
                    f"{len(vec)}"
                )
            rows[name].append(vec)
    if width is None:  # no basis at all: the out dims, if given, say how many
        od = list(out_dims.values()) if isinstance(out_dims, Mapping) else out_dims
        width = len(od) if isinstance(od, (list, tuple)) and od else 1
    sizes = _out_sizes(out_dims, width, rows)
    shifts = [0]
    for s in sizes[:-1]:
        shifts.append(shifts[-1] + _pow2_log(s, "an out dim size"))
    modes_s: List[Any] = []
    modes_d: List[Any] = []
    for name, vecs in rows.items():
        imgs = []
        for vec in vecs:
            v = 0
            for k, (c, s) in enumerate(zip(vec, sizes)):
                if c >= s:
                    raise LayoutError(
                        f"from_triton: basis {vec} of {name!r} has coordinate {c} >= out dim {k}'s size {s}"
                    )
                v |= c << shifts[k]
            imgs.append(v)
        if not imgs:
            modes_s.append(1)
            modes_d.append(0)
        elif len(imgs) == 1:
            modes_s.append(2)
            modes_d.append(imgs[0])
        else:
            modes_s.append((2,) * len(imgs))
            modes_d.append(tuple(imgs))
    return F2Layout(tuple(modes_s), tuple(modes_d))


def _out_sizes(out_dims: Any, width: int, rows: Mapping[str, List[List[int]]]) -> List[int]:
    if out_dims is None:
        sizes = []
        for k in range(width):
            top = 0
            for vecs in rows.values():
                for v in vecs:
                    top |= v[k]
            sizes.append(1 << top.bit_length())
        return sizes
    if isinstance(out_dims, Mapping):
        out_dims = list(out_dims.values())
    if type(out_dims) is int:
        out_dims = [out_dims]
    if not isinstance(out_dims, (list, tuple)) or len(out_dims) != width:
        raise MalformedLayoutError(
            f"from_triton: out_dims gives one size per out dim ({width}), got {show(out_dims)}"
        )
    for s in out_dims:
        _pow2_log(s, "an out dim size")
    return list(out_dims)


def to_triton(
    x: Any, *, out_dims: Any = None, in_dims: Optional[Sequence[str]] = None
) -> Dict[str, List[List[int]]]:
    """Triton's dictionary of bases of an F2 layout (or of anything
    :func:`~layoutproof.f2.to_f2` converts: a swizzled or a plain layout): one input
    dimension per top-level mode (named ``in_dims``, by default ``register``, ``lane``,
    ``warp``, ``block``), one basis per bit of each power-of-two leaf.  ``out_dims`` splits
    the value into output dimensions (sizes, powers of two, ``dim0`` least significant;
    default: one output dimension).  The inverse of :func:`from_triton`.

    >>> from layoutproof import Layout, Swizzle, ComposedLayout
    >>> to_triton(ComposedLayout(Swizzle(1, 0, 1), 0, Layout((2, 2), (2, 1))), in_dims=["offset", "block"])
    {'offset': [[3]], 'block': [[1]]}
    """
    if not isinstance(x, F2Layout):
        from .tensor import Tensor

        x = to_f2(x.layout if isinstance(x, Tensor) else x)
    L = x
    shape = L.shape
    stride = L.stride  # F2 values: int() is the bit pattern
    modes = list(zip(shape, stride)) if type(shape) is tuple else [(shape, stride)]
    if in_dims is None:
        in_dims = list(_TRITON_IN[: len(modes)]) if len(modes) <= 4 else [f"in{k}" for k in range(len(modes))]
    in_dims = list(in_dims)
    if len(in_dims) != len(modes) or len(set(in_dims)) != len(in_dims):
        raise MalformedLayoutError(
            f"to_triton: {len(modes)} distinct in_dims names needed (one per mode of {L}), got "
            f"{show(in_dims)}"
        )
    if out_dims is None:
        sizes = [1 << max(0, (L.cosize - 1).bit_length())]
    else:
        if isinstance(out_dims, Mapping):
            out_dims = list(out_dims.values())
        sizes = list(out_dims) if isinstance(out_dims, (list, tuple)) else [out_dims]
    shifts, total = [], 0
    for s in sizes:
        shifts.append(total)
        total += _pow2_log(s, "an out dim size")
    out: Dict[str, List[List[int]]] = {}
    for name, (s, d) in zip(in_dims, modes):
        from .inttuple import raw_flatten

        fs = raw_flatten(s) if type(s) is tuple else (s,)
        fd = raw_flatten(d) if type(d) is tuple else (d,)
        vecs = []
        for sz, st in zip(fs, fd):
            for j in range(_pow2_log(sz, f"the extent of a leaf of {L}")):
                img = int(st) << j
                if img >> total:
                    raise LayoutError(
                        f"to_triton: the image {img} of {name!r} bit {j} does not fit the out dims {sizes}"
                    )
                vecs.append([(img >> sh) & (sz_ - 1) for sh, sz_ in zip(shifts, sizes)])
        out[name] = vecs
    return out


def _literal(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        pass
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings of odd literals: refused below
            return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as e:
        raise MalformedLayoutError(f"not a dict of bases: {show(text)} ({type(e).__name__})") from None


# ============================================================================ any form
def import_layout(x: Any) -> Imported:
    """Import a layout from any form this module reads: a legacy pycute object, a Triton
    dict of bases (or its JSON text), or text -- CuTe C++ (types, ``print`` output,
    :func:`to_cpp` expressions), the CuTe DSL (printed, MLIR types, :func:`to_dsl` code)
    or layoutproof's own notation.

    >>> print(import_layout("cute::Layout<cute::tuple<cute::C<2>, int>, cute::tuple<int, cute::C<1>>>").value)
    (2,S0):(D1,1)
    >>> print(import_layout("(4,?{div=8}):(?,1)"))
    (4,S0):(D1,1)  [assuming S0 % 8 == 0]
    """
    if isinstance(x, Mapping):
        return Imported(from_triton(x))
    if type(x).__module__.split(".")[0] == "pycute":
        return Imported(from_pycute(x))
    text = _check_text(x, "import_layout").strip()
    if text.startswith("{"):
        return Imported(from_triton(_literal(text)))
    if (
        text.startswith("!cute")
        or "?" in text
        or "@" in text
        or re.match(r"S<", text)
        or re.match(r"[A-Za-z_][A-Za-z_0-9]*\.make_", text)
    ):
        return from_dsl(text)
    if re.search(
        r"::|\{\}|\bC<|\bInt<|\btuple<|\bLayout<|\bSwizzle<|\bmake_shape\(|\b_\d", text
    ) or text.startswith("Sw<"):
        return from_cpp(text)
    if " o " in text:
        return Imported(ComposedLayout.parse(text))
    return Imported(Layout.parse(text))


# ============================================================================ the CLI's rewriter
_FOREIGN_START = re.compile(
    r"!cute[._]|(?<![A-Za-z_0-9.])(?:cute::|(?:Layout|ComposedLayout|Swizzle|tuple)<|S[Ww]?<\s*-?\d"
    r"|make_layout\(\s*make_shape|make_composed_layout\(\s*(?:cute::)?Swizzle<|composition\(\s*(?:cute::)?Swizzle<"
    r"|[A-Za-z_][A-Za-z_0-9]*\.make_(?:layout|composed_layout|swizzle)\()|(?<!\?)\{(?!\})"
)
_QMARK = re.compile(r"\?(?:\{[^{}]{0,80}\})?")


def native_text(v: Any) -> str:
    """Text of the ``eval`` language for an imported value."""
    if isinstance(v, F2Layout):
        v = from_f2(v)
    if isinstance(v, Swizzle):
        return f"Swizzle({v.bits},{v.base},{v.shift})"
    if isinstance(v, ComposedLayout):
        return f"make_composed_layout({native_text(v.layout_a)},{v.offset},{native_text(v.layout_b)})"
    if isinstance(v, Layout):
        fs, fd = v.flat_modes()
        from .arith import ScaledBasis

        if any(isinstance(e, ScaledBasis) for e in fd):
            raise MalformedLayoutError(f"{v} has basis strides, which the eval language does not write")
        return str(v)
    raise MalformedLayoutError(f"cannot write {show(v)} in the eval language")  # pragma: no cover


def _match_close(text: str, start: int, open_: str, close: str) -> int:
    """Index after the bracket closing the one at ``start`` (quotes skipped)."""
    depth = 0
    inq = False
    for k in range(start, len(text)):
        ch = text[k]
        if ch == '"':
            inq = not inq
        elif inq:
            continue
        elif ch == open_:
            depth += 1
        elif ch == close:
            depth -= 1
            if depth == 0:
                return k + 1
    raise MalformedLayoutError(f"unbalanced {open_!r} at {start} in {show(text)}")


def _printed_extent(text: str, start: int) -> int:
    """End of a printed layout starting at ``start``: up to a top-level ``,`` / ``)`` /
    ``==`` (the CLI statement's own syntax) or the end."""
    depth = 0
    k = start
    n = len(text)
    while k < n:
        ch = text[k]
        if ch in "{<":
            k = _match_close(text, k, ch, "}" if ch == "{" else ">")
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            if depth == 0:
                return k
            depth -= 1
        elif depth == 0 and (ch == "," or text.startswith("==", k)):
            return k
        k += 1
    return n


def rewrite_foreign(text: str) -> Tuple[str, Tuple[str, ...]]:
    """Replace every CuTe C++, CuTe DSL or Triton layout inside an ``eval`` / ``check``
    expression by layoutproof notation; returns the new text and the assumptions the
    imported dynamic leaves carry.  Text without foreign layouts comes back unchanged.

    >>> rewrite_foreign("composition(Layout<tuple<int, C<4>>, tuple<C<1>, int>>, 8)")
    ('composition((S0,4):(1,D1), 8)', ())
    >>> rewrite_foreign("(?{div=8},4):(1,?) == 8:1")
    ('(S0,4):(1,D1) == 8:1', ('S0 % 8 == 0',))
    """
    text = _check_text(text, "rewrite_foreign")
    names = _Names([w for w in re.findall(r"[A-Za-z_][A-Za-z_0-9]*", text) if is_symbol_name(w)])
    out: List[str] = []
    pos = 0
    for _guard in range(10_000):
        m = _FOREIGN_START.search(text, pos)
        if m is None:
            break
        s = m.start()
        tok = m.group(0)
        if tok.startswith("!cute"):
            lt = text.find("<", s)
            end = _match_close(text, lt, "<", ">") if lt >= 0 else len(text)
            r = _sub_import(text[s:end], names)
        elif tok == "{":
            end = _match_close(text, s, "{", "}")
            r = Imported(from_triton(_literal(text[s:end])))
        elif re.match(r"S[Ww]?<", tok):
            end = _printed_extent(text, s)
            v, n = _parse_printed(text[s:end], names, "printed layout")
            end = s + n
            r = Imported(v)
        elif re.match(r"[A-Za-z_][A-Za-z_0-9]*\.make_", tok) and not tok.startswith("cute::"):
            lp = text.find("(", s)
            end = _match_close(text, lp, "(", ")")
            r = Imported(_dsl_code(text[s:end], names))
        else:
            v, end, _ = _parse_cpp_prefix(text, s, names)
            r = Imported(v)
        out.append(text[pos:s])
        out.append(native_text(r.value))
        pos = end
    out.append(text[pos:])
    res = "".join(out)
    if "?" in res:  # the DSL's dynamic leaves inside layoutproof notation: "(4,?{div=8}):(1,4)"
        res = _replace_qmarks(res, names)
    return res, tuple(names.facts)


def _sub_import(fragment: str, names: _Names) -> Imported:
    payload = _mlir_payload(fragment)
    body = payload if payload is not None else fragment
    v, n = _parse_printed(body, names, "CuTe DSL")
    if body[n:].strip():
        raise MalformedLayoutError(f"CuTe DSL: unexpected {show(body[n:].strip())} in {show(fragment)}")
    return Imported(v)


def _replace_qmarks(text: str, names: _Names) -> str:
    """Each ``?`` leaf of a layout in the text becomes a fresh symbol: a shape leaf left of
    its layout's ``:``, a stride leaf right of it."""
    out: List[str] = []
    pos = 0
    depth = 0
    colons: List[int] = []  # depths of the ':' whose stride is being read
    k = 0
    n = len(text)
    while k < n:
        ch = text[k]
        if ch == "?":
            m = _QMARK.match(text, k)
            out.append(text[pos:k])
            role = "stride" if any(c <= depth for c in colons) else "shape"
            ann = m.group(0)[1:].strip("{}") if m else ""
            div = 1
            for part in ann.split():
                mm = re.fullmatch(r"div=(\d+)", part)
                if mm:
                    div = int(mm.group(1))
                elif not re.fullmatch(r"[iu]\d+", part):
                    raise MalformedLayoutError(f"unknown annotation {part!r} of a dynamic leaf '?'")
            out.append(str(names.fresh(role, div)))
            k = pos = m.end() if m else k + 1
            continue
        if ch == "(":
            depth += 1
        elif ch == ")":
            colons = [c for c in colons if c < depth]
            depth -= 1
        elif ch == ",":
            colons = [c for c in colons if c < depth]
        elif ch == ":":
            colons.append(depth)
        elif ch == "=":
            colons = []
        k += 1
    out.append(text[pos:])
    return "".join(out)
