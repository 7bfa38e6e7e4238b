"""Lowering: a layout becomes a C index expression, proven equal to the layout.

:func:`lower` turns a :class:`~layoutproof.Layout` (integer shape; integer or SymPy
strides, e.g. a runtime leading dimension ``ld``), a
:class:`~layoutproof.swizzle.ComposedLayout` (``Sw<B,M,S> o offset o Layout``, CuTe's
swizzled shared-memory layouts) or a bare :class:`~layoutproof.Swizzle` into a C
expression over one integer coordinate per top-level mode.  The expression is built with
SymPy (``floor`` and ``Mod`` of non-negative integers), simplified (modes coalesced,
stride-0 terms dropped, no ``%`` on the outermost digit of a mode, powers of two as
shifts and masks) and printed fully parenthesized.

The **printed C string** is what is proven, not the SymPy object: :func:`c_expr_eval`
evaluates the C expression language with C semantics (``/`` truncates toward zero, ``%``
takes the sign of the dividend, ``>>`` ``<<`` ``&`` ``^`` ``|`` ``~`` on two's complement;
with ``int_bits`` every intermediate must fit a signed integer of that width and shifts
of negative values are refused), vectorized with numpy over the whole domain, and
:func:`check_c_expr` compares it with the layout's own evaluation at every coordinate
(method ``exhaustive``).  With runtime symbols in the strides the expression must be a
multilinear polynomial in them (checked on the C syntax tree: a symbol never appears
under ``/ % >> << & ^ | ~``); each coefficient (a function of the coordinates only) is
then extracted by Moebius inversion over symbol values in {0, 1} and compared
exhaustively with the layout whose strides are the matching SymPy coefficients (method
``sympy``): equality for every value of the symbols.

>>> from layoutproof import Layout, Swizzle, composition
>>> low = lower(composition(Swizzle(2, 3, 3), Layout((8, 32), (32, 1))), ("row", "col"),
...             name="smem_a")
>>> low.c_expr
'(((32 * row) + col) ^ ((((32 * row) + col) >> 3) & 24))'
>>> low.proof.line()
'[equal] smem_a(row, col) == Sw<2,3,3> o 0 o (8,32):(32,1) -- exhaustive, 256 cases'
>>> print(lower(Layout((4, (2, 8)), (2, (1, 8))), ("i", "j"), name="f").c_function())
__device__ __forceinline__ int f(int i, int j) { return ((2 * i) + (j & 1) + (8 * (j >> 1))); }
>>> from layoutproof import symbols
>>> ld = symbols("ld")
>>> g = lower(Layout((16, 8), (1, ld)), ("m", "k"), name="gA")
>>> g.c_expr, g.proof.method
('(m + (k * ld))', 'sympy')
>>> c_expr_eval("(-7 / 2) + (-7 % 2)", {}).tolist()
-4
"""

from __future__ import annotations

import itertools
import keyword
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np
import sympy as sp

from layoutproof import Layout
from layoutproof.composed import ComposedLayout
from layoutproof.errors import MalformedLayoutError, OutOfDomainError
from layoutproof.inttuple import flatten, raw_product
from layoutproof.layout import top_modes
from layoutproof.ops import coalesce_modes
from layoutproof.swizzle import Swizzle

from ..errors import LoweringError, ProofFailedError
from .record import Proof, ProofLog

__all__ = [
    "Lowered",
    "lower",
    "lower_many",
    "check_c_expr",
    "c_expr_eval",
    "prove_bounds",
    "prove_bijective",
    "prove_injective",
    "EXHAUSTIVE_LIMIT",
]

#: The largest domain (number of coordinates) checked exhaustively.
EXHAUSTIVE_LIMIT = 1 << 24
_MAX_SYMBOLS = 8
_MAX_EXPR_CHARS = 1 << 20
_MAX_DEPTH = 400
_C_WORDS = frozenset(
    "auto break case char const continue default do double else enum extern float for goto if "
    "inline int long register restrict return short signed sizeof static struct switch typedef "
    "union unsigned void volatile while bool true false class template this new delete "
    "__device__ __forceinline__ __global__ __shared__ threadIdx blockIdx blockDim gridDim".split()
)
_ID_START = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
_ID_CHARS = _ID_START | frozenset("0123456789")
_DIGITS = frozenset("0123456789")
_OPS1 = frozenset("-+*/%&^|~()")


def _is_ident(s: str) -> bool:
    """Is ``s`` a C identifier (ASCII letters, digits, underscores; not a digit first)?"""
    return bool(s) and s[0] in _ID_START and all(ch in _ID_CHARS for ch in s)


def _scan(text: str, pos: int) -> Tuple[str, str, int]:
    """The token of ``text`` at ``pos`` (no whitespace there): (kind, text, end), kind
    ``num``, ``id``, ``op`` or ``bad`` (a hand-written lexer: no regular expression reads
    the text that becomes kernel source)."""
    n = len(text)
    ch = text[pos]
    end = pos + 1
    if ch in _DIGITS:
        while end < n and text[end] in _DIGITS:
            end += 1
        return "num", text[pos:end], end
    if ch in _ID_START:
        while end < n and text[end] in _ID_CHARS:
            end += 1
        return "id", text[pos:end], end
    if text.startswith("<<", pos) or text.startswith(">>", pos):
        return "op", text[pos : pos + 2], pos + 2
    if ch in _OPS1:
        return "op", ch, end
    return "bad", ch, end


_PLACEHOLDER = "_lp_o_"  # the outer layout's input while it is printed


# ============================================================================ the C evaluator
_BINARY_LEVELS: Tuple[Tuple[str, ...], ...] = (
    ("|",),
    ("^",),
    ("&",),
    ("<<", ">>"),
    ("+", "-"),
    ("*", "/", "%"),
)


def _tokenize(expr: str) -> List[Tuple[str, str]]:
    if not isinstance(expr, str):
        raise LoweringError(
            f"a C expression is a string, got {type(expr).__name__}", condition="C expression syntax"
        )
    if len(expr) > _MAX_EXPR_CHARS:
        raise LoweringError(
            f"C expression too long ({len(expr)} characters)", condition="C expression syntax"
        )
    out: List[Tuple[str, str]] = []
    pos = 0
    n = len(expr.rstrip())
    while pos < n:
        start = pos
        while pos < n and expr[pos].isspace():
            pos += 1
        kind, text, end = _scan(expr, pos) if pos < n else ("bad", "", pos)
        if kind == "bad":
            raise LoweringError(
                f"unexpected character {expr[start : start + 10]!r} at {start} in C expression",
                condition="C expression syntax",
            )
        out.append((kind, text))
        pos = end
    return out


class _Parser:
    """Recursive descent over C's precedence levels (unary - ~, * / %, + -, << >>, &, ^, |)."""

    def __init__(self, toks: List[Tuple[str, str]]) -> None:
        self.toks = toks
        self.i = 0

    def peek(self) -> Optional[Tuple[str, str]]:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def fail(self, what: str) -> LoweringError:
        t = self.peek()
        got = "end of expression" if t is None else repr(t[1])
        return LoweringError(f"C expression syntax: {what}, got {got}", condition="C expression syntax")

    def parse(self) -> tuple:
        node = self.binary(0, 0)
        if self.peek() is not None:
            raise self.fail("expected an operator")
        return node

    def binary(self, level: int, depth: int) -> tuple:
        if depth > _MAX_DEPTH:
            raise LoweringError("C expression nested too deeply", condition="C expression syntax")
        if level == len(_BINARY_LEVELS):
            return self.unary(depth)
        node = self.binary(level + 1, depth + 1)
        while True:
            t = self.peek()
            if t is None or t[0] != "op" or t[1] not in _BINARY_LEVELS[level]:
                return node
            self.i += 1
            node = ("bin", t[1], node, self.binary(level + 1, depth + 1))

    def unary(self, depth: int) -> tuple:
        t = self.peek()
        if t is None:
            raise self.fail("expected an operand")
        self.i += 1
        if t == ("op", "-"):
            return ("neg", self.unary(depth + 1))
        if t == ("op", "+"):
            return self.unary(depth + 1)
        if t == ("op", "~"):
            return ("not", self.unary(depth + 1))
        if t == ("op", "("):
            node = self.binary(0, depth + 1)
            if self.peek() != ("op", ")"):
                raise self.fail("expected ')'")
            self.i += 1
            return node
        if t[0] == "num":
            return ("num", int(t[1]))
        if t[0] == "id":
            return ("var", t[1])
        self.i -= 1
        raise self.fail("expected an operand")


def _parse_c(expr: str) -> tuple:
    return _Parser(_tokenize(expr)).parse()


def c_tree(expr: str) -> tuple:
    """The syntax tree of a lowered C expression -- the tree :func:`check_c_expr` proves --
    as nested tuples ``("num", n)``, ``("var", name)``, ``("neg", t)``, ``("not", t)``,
    ``("bin", op, left, right)`` (the kernel IR builds its function bodies from it).

    >>> c_tree("(i & 7) + 8")
    ('bin', '+', ('bin', '&', ('var', 'i'), ('num', 7)), ('num', 8))
    """
    return _parse_c(expr)


class _Fault(Exception):
    def __init__(self, condition: str, message: str, where: Any) -> None:
        super().__init__(message)
        self.condition = condition
        self.message = message
        self.where = where


def _first(mask: np.ndarray) -> Optional[int]:
    if mask.ndim == 0:
        return 0 if bool(mask) else None
    if not mask.any():
        return None
    return int(np.flatnonzero(mask.reshape(-1))[0])


def _check_range(v: np.ndarray, bits: int, what: str) -> None:
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if v.size and (int(v.min()) < lo or int(v.max()) > hi):
        raise _Fault(
            "integer overflow",
            f"{what} leaves the range of a {bits}-bit signed integer",
            _first((v < lo) | (v > hi)),
        )


def _maxabs(v: np.ndarray) -> int:
    return int(np.abs(v).max()) if v.size else 0


def _eval_node(node: tuple, env: Dict[str, np.ndarray], bits: Optional[int]) -> np.ndarray:
    tag = node[0]
    if tag == "num":
        v = node[1]
        if v >= (1 << 62) or (bits is not None and v >= (1 << (bits - 1))):
            raise _Fault("integer overflow", f"literal {v} does not fit", None)
        return np.asarray(v, dtype=np.int64)
    if tag == "var":
        if node[1] not in env:
            raise _Fault("unknown name", f"the C expression names {node[1]!r}, which has no value", None)
        return env[node[1]]
    if tag == "neg" or tag == "not":
        x = _eval_node(node[1], env, bits)
        r = -x if tag == "neg" else ~x
        if bits is not None:
            _check_range(r, bits, "a unary result")
        return r
    op = node[1]
    a = _eval_node(node[2], env, bits)
    b = _eval_node(node[3], env, bits)
    wide = 63 if bits is None else bits
    if op == "+" or op == "-":
        if _maxabs(a) + _maxabs(b) >= (1 << 62):
            raise _Fault("integer overflow", f"{op} overflows int64", None)
        r = a + b if op == "+" else a - b
    elif op == "*":
        if _maxabs(a) * _maxabs(b) >= (1 << 62):
            big = np.abs(a.astype(np.float64)) * np.abs(b.astype(np.float64)) >= float(1 << (wide - 1))
            raise _Fault("integer overflow", "* overflows", _first(big))
        r = a * b
    elif op == "/" or op == "%":
        a, b = np.broadcast_arrays(a, b)
        zero = b == 0
        if zero.any():
            raise _Fault("division by zero", f"{op} by zero", _first(zero))
        q = a // b
        q = q + (((q * b) != a) & ((a < 0) != (b < 0)))  # C truncates toward zero
        r = q if op == "/" else a - b * q
    elif op == "<<" or op == ">>":
        a, b = np.broadcast_arrays(a, b)
        badn = (b < 0) | (b >= wide)
        if badn.any():
            raise _Fault("shift count", f"{op} by a count outside [0, {wide})", _first(badn))
        if bits is not None and (a < 0).any():
            raise _Fault(
                "shift of a negative value",
                f"{op} of a negative value (undefined or implementation-defined in C)",
                _first(a < 0),
            )
        if op == "<<":
            if a.size and (_maxabs(a) << int(b.max())) >= (1 << 62):
                raise _Fault(
                    "integer overflow",
                    "<< overflows",
                    _first((np.abs(a).astype(object) << b.astype(object)) >= (1 << (wide - 1))),
                )
            r = a << b
        else:
            r = a >> b
    elif op == "&":
        r = a & b
    elif op == "^":
        r = a ^ b
    elif op == "|":
        r = a | b
    else:  # pragma: no cover - the parser produces no other operator
        raise _Fault("C expression syntax", f"unknown operator {op}", None)
    r = np.asarray(r, dtype=np.int64)
    if bits is not None:
        _check_range(r, bits, f"the result of {op!r}")
    return r


def c_expr_eval(expr: str, env: Dict[str, Any], *, int_bits: Optional[int] = None) -> np.ndarray:
    """Evaluate a C integer expression with C semantics, vectorized over numpy int64 arrays.

    The language: decimal literals, names (looked up in ``env``; arrays broadcast),
    parentheses, unary ``- + ~``, and ``* / % + - << >> & ^ |`` with C's precedence and
    left associativity.  ``/`` truncates toward zero and ``%`` takes the sign of the
    dividend (C99).  Division by zero, shift counts outside ``[0, width)`` and int64
    overflow raise :class:`LoweringError`.  With ``int_bits`` (e.g. 32 for ``int``), every
    literal, intermediate and the result must fit a signed integer of that width and
    shifting a negative value is refused (undefined / implementation-defined in C); the
    error's ``witness`` is the flat index (into the broadcast arrays) where it happens.

    >>> c_expr_eval("-7 / 2", {}).tolist(), c_expr_eval("-7 % 2", {}).tolist()
    (-3, -1)
    >>> import numpy as np
    >>> c_expr_eval("(x >> 1) ^ x", {"x": np.arange(4)}).tolist()
    [0, 1, 3, 2]
    """
    node = _parse_c(expr)
    arrs = {k: np.asarray(v, dtype=np.int64) for k, v in env.items()}
    try:
        out = _eval_node(node, arrs, int_bits)
        if int_bits is not None:
            _check_range(out, int_bits, "the value")
    except _Fault as f:
        raise LoweringError(
            f"C expression {_short(expr)}: {f.message}", condition=f.condition, witness=f.where
        ) from None
    return out


def _short(s: str, n: int = 120) -> str:
    return s if len(s) <= n else s[:n] + "..."


def _degrees(node: tuple, syms: frozenset) -> Dict[str, int]:
    """The degree of the expression in each runtime symbol (a polynomial in them), or a
    LoweringError when a symbol appears under a non-polynomial operator."""
    tag = node[0]
    if tag == "num":
        return {}
    if tag == "var":
        return {node[1]: 1} if node[1] in syms else {}
    if tag == "neg":
        return _degrees(node[1], syms)
    if tag == "not":
        d = _degrees(node[1], syms)
        if d:
            raise LoweringError(
                f"runtime symbol(s) {sorted(d)} under '~': not affine in them",
                condition="affine in the runtime symbols",
            )
        return d
    op, a, b = node[1], _degrees(node[2], syms), _degrees(node[3], syms)
    if op in ("+", "-"):
        return {k: max(a.get(k, 0), b.get(k, 0)) for k in set(a) | set(b)}
    if op == "*":
        return {k: a.get(k, 0) + b.get(k, 0) for k in set(a) | set(b)}
    if a or b:
        raise LoweringError(
            f"runtime symbol(s) {sorted(set(a) | set(b))} under {op!r}: the expression is not "
            "a polynomial in them, so no symbolic proof applies (substitute values)",
            condition="affine in the runtime symbols",
        )
    return {}


# ============================================================================ layouts to modes
@dataclass(frozen=True)
class Normalized:
    """A lowerable layout as ``outer o offset o inner`` (the form :func:`lower` prints)."""

    outer: Any  # None, a Swizzle or a Layout
    offset: int
    inner: Layout
    what: str  # how it prints


def normalize(layout: Any) -> Normalized:
    """A Layout, ComposedLayout or bare Swizzle as :class:`Normalized` (a LoweringError
    for anything else, or for a symbolic outer layout)."""
    if isinstance(layout, Swizzle):
        return Normalized(layout, 0, Layout(layout.size, 1), str(layout))
    if isinstance(layout, ComposedLayout):
        a = layout.layout_a
        if isinstance(a, Layout) and a.is_symbolic:
            raise LoweringError(
                f"{layout}: the outer layout must be concrete", condition="concrete outer layout"
            )
        return Normalized(a, layout.offset, layout.layout_b, str(layout))
    if isinstance(layout, Layout):
        return Normalized(None, 0, layout, str(layout))
    raise LoweringError(
        f"lower() takes a Layout, a ComposedLayout or a Swizzle, got {type(layout).__name__}",
        condition="layout type",
    )


def arg_modes(L: Layout, nargs: int) -> List[Tuple[tuple, tuple]]:
    """One (flat shape, flat stride) per argument: the top-level modes of ``L``, or the
    whole layout flattened when there is one argument (its 1-D index)."""
    if nargs == 1:
        return [(tuple(flatten(L.shape)), tuple(flatten(L.stride)))]
    s, d = top_modes(L)
    rank = len(s)
    if nargs != rank:
        raise LoweringError(
            f"{L} has {rank} top-level mode(s); give one argument per mode (or one for the "
            f"1-D index), got {nargs}",
            condition="one argument per mode",
        )
    return [(tuple(flatten(si)), tuple(flatten(di))) for si, di in zip(s, d)]


def _check_shape(L: Layout) -> None:
    for e in flatten(L.shape):
        if type(e) is not int:
            raise LoweringError(
                f"{L}: the shape must be integers (runtime extents are not lowered)",
                condition="integer shape",
            )


def _coalesced(fs: Tuple[int, ...], fd: tuple) -> List[Tuple[int, Any]]:
    """The (extent, stride) modes of one flat mode after the algebra's coalescing rule
    (:func:`layoutproof.ops.coalesce_modes`: extent-1 leaves dropped, a leaf merged into
    its predecessor when its stride is ``s_prev * d_prev``); no modes when every extent
    is 1.  SymPy strides are compared as expanded polynomials (an identity, not a
    spelling) and each merged mode keeps the stride of its first leaf as written."""
    canon = tuple(sp.expand(d) if isinstance(d, sp.Basic) else d for d in fd)
    leaves = [(s, d) for s, d in zip(fs, fd) if s != 1]
    if not leaves:
        return []
    extents, _strides = coalesce_modes(fs, canon)
    out: List[Tuple[int, Any]] = []
    k = 0  # the merged modes are runs of consecutive leaves of extent > 1
    for extent in extents:
        s, d = leaves[k]
        k += 1
        while s < extent:
            s *= leaves[k][0]
            k += 1
        out.append((extent, d))
    return out


def _arg_symbol(name: str) -> Any:
    return sp.Symbol(name, integer=True, nonnegative=True)


def _mode_terms(fs: tuple, fd: tuple, x: Any) -> List[Any]:
    """The terms ``digit_k * stride_k`` of one mode at the 1-D index ``x`` (coalesced,
    stride-0 digits dropped, the outermost digit without ``Mod``)."""
    modes = _coalesced(fs, fd)
    terms: List[Any] = []
    p = 1
    for k, (s, d) in enumerate(modes):
        if d != 0:
            digit = x if p == 1 else sp.floor(x / p)
            if k != len(modes) - 1:
                digit = sp.Mod(digit, s)
            terms.append(sp.sympify(digit * d))
        p *= s
    return terms


def _sum_c(terms: List[Any], const: int, pow2: bool) -> Tuple[str, Optional[int]]:
    """Print ``terms[0] + terms[1] + ... + const`` in this order (the value when constant)."""
    terms = [t for t in terms if t != 0]
    if not terms:
        return _to_c(sp.Integer(const)), const
    parts = [_to_c(t, pow2) for t in terms]
    if const:
        parts.append(_to_c(sp.Integer(const)))
    if len(parts) == 1:
        return parts[0], None
    return "(" + " + ".join(parts) + ")", None


def _runtime_symbols(layout: Any) -> List[Any]:
    n = normalize(layout)
    if not n.inner.is_symbolic:
        return []
    return sorted(n.inner.free_symbols, key=lambda s: s.name)


def _check_names(args: Sequence[str], extra: Sequence[str] = ()) -> Tuple[str, ...]:
    if isinstance(args, str):
        raise LoweringError(
            "args is a sequence of C names (one per mode), not a string", condition="C argument names"
        )
    out = tuple(args)
    for a in tuple(out) + tuple(extra):
        if (
            not isinstance(a, str)
            or not _is_ident(a)
            or a in _C_WORDS
            or keyword.iskeyword(a)
            or a.startswith(_PLACEHOLDER)
        ):
            raise LoweringError(f"{a!r} is not a usable C identifier", condition="C argument names")
    names = out + tuple(extra)
    if len(set(names)) != len(names):
        raise LoweringError(
            f"argument and runtime symbol names must be distinct: {names}", condition="C argument names"
        )
    if not out:
        raise LoweringError("at least one argument is needed", condition="one argument per mode")
    return out


# ============================================================================ SymPy -> C
def _pow2(n: int) -> int:
    return n.bit_length() - 1 if n > 0 and n & (n - 1) == 0 else -1


def _to_c(e: Any, pow2: bool = True) -> str:
    e = sp.sympify(e)
    if e.is_Integer:
        v = int(e)
        return str(v) if v >= 0 else f"(-{-v})"
    if e.is_Symbol:
        return e.name
    if e.is_Add:
        terms = list(e.as_ordered_terms())
        consts = [t for t in terms if t.is_Number]
        terms = [t for t in terms if not t.is_Number] + consts
        out = _to_c(terms[0], pow2)
        for t in terms[1:]:
            c, _rest = t.as_coeff_Mul()
            if c.is_negative:
                out += " - " + _to_c(-t, pow2)
            else:
                out += " + " + _to_c(t, pow2)
        return f"({out})"
    if e.is_Mul:
        c, rest = e.as_coeff_Mul()
        if not c.is_Integer:
            raise LoweringError(f"cannot print {e} as C (a rational coefficient)", condition="C printing")
        facs = [_to_c(f, pow2) for f in sp.Mul.make_args(rest)]
        if c == -1:
            return f"(-{facs[0]})" if len(facs) == 1 else "(-(" + " * ".join(facs) + "))"
        if c != 1:
            facs.insert(0, _to_c(c, pow2))
        return "(" + " * ".join(facs) + ")"
    if e.is_Pow:
        b, x = e.args
        if x.is_Integer and 1 < int(x) <= 8:
            return "(" + " * ".join([_to_c(b, pow2)] * int(x)) + ")"
    if isinstance(e, sp.floor):
        num, den = sp.fraction(sp.together(e.args[0]))
        if den.is_Integer and int(den) > 0:
            if den == 1:
                return _to_c(num, pow2)
            k = _pow2(int(den))
            if pow2 and k > 0:
                return f"({_to_c(num, pow2)} >> {k})"
            return f"({_to_c(num, pow2)} / {int(den)})"
    if isinstance(e, sp.Mod):
        x, m = e.args
        if m.is_Integer and int(m) > 0:
            k = _pow2(int(m))
            if pow2 and k >= 0:
                return f"({_to_c(x, pow2)} & {int(m) - 1})"
            return f"({_to_c(x, pow2)} % {int(m)})"
    raise LoweringError(f"cannot print {e} as C", condition="C printing")


def _outer_c(outer: Any, inner: str, inner_value: Optional[int], pow2: bool) -> str:
    if outer is None:
        return inner
    if inner_value is not None:  # a constant: fold
        v = outer(inner_value) if isinstance(outer, Swizzle) else outer(inner_value)
        return _to_c(sp.Integer(int(v)))
    if isinstance(outer, Swizzle):
        if outer.is_identity():
            return inner
        s = outer.shift
        if s > 0:
            return f"({inner} ^ (({inner} >> {s}) & {outer.zzz_msk}))"
        return f"({inner} ^ (({inner} & {outer.yyy_msk}) << {-s}))"
    # an outer Layout, at the 1-D index `inner`
    x = _arg_symbol(_PLACEHOLDER)
    fs, fd = tuple(flatten(outer.shape)), tuple(flatten(outer.stride))
    text, _v = _sum_c(_mode_terms(fs, fd, x), 0, pow2)
    return _replace_ident(text, _PLACEHOLDER, inner)


def _replace_ident(text: str, name: str, value: str) -> str:
    """``text`` with every whole identifier ``name`` replaced by ``value``."""
    out: List[str] = []
    pos, n = 0, len(text)
    while pos < n:
        if text[pos].isspace():
            out.append(text[pos])
            pos += 1
            continue
        kind, tok, end = _scan(text, pos)
        out.append(value if kind == "id" and tok == name else tok)
        pos = end
    return "".join(out)


# ============================================================================ the result
@dataclass(frozen=True)
class Lowered:
    """A proven C index expression for a layout.

    Attributes:
        name: the C function / variable name, e.g. ``"smem_a"``.
        layout: the Layout / ComposedLayout / Swizzle it implements.
        args: the C names of the inputs, one per top-level mode (or one 1-D index).
        c_expr: the C expression over ``args`` (and the runtime symbols of the strides).
        proof: the record of the equality proof (kind ``equal``).
    """

    name: str
    layout: Any
    args: Tuple[str, ...]
    c_expr: str
    proof: Proof

    @property
    def symbols(self) -> Tuple[str, ...]:
        """The runtime symbols (C names of the symbolic strides), sorted."""
        return tuple(s.name for s in _runtime_symbols(self.layout))

    @property
    def params(self) -> Tuple[str, ...]:
        """The parameters of :meth:`c_function`: the coordinates, then the symbols."""
        return self.args + self.symbols

    def c_function(self, ctype: str = "int") -> str:
        """``__device__ __forceinline__ int NAME(int a, int b) { return EXPR; }`` (runtime
        symbols become extra parameters after the coordinates, in sorted order)."""
        ps = ", ".join(f"{ctype} {p}" for p in self.params)
        return f"__device__ __forceinline__ {ctype} {self.name}({ps}) {{ return {self.c_expr}; }}"

    def __call__(self, *coords: Any, **symbols: Any) -> np.ndarray:
        """Evaluate the emitted C expression (vectorized) at coordinates."""
        if len(coords) != len(self.args):
            raise LoweringError(
                f"{self.name} takes {len(self.args)} coordinate(s)", condition="one argument per mode"
            )
        env: Dict[str, Any] = dict(zip(self.args, coords))
        env.update(symbols)
        return c_expr_eval(self.c_expr, env)


# ============================================================================ proofs
def _domain(norm: Normalized, nargs: int) -> Tuple[List[int], List[np.ndarray]]:
    L = norm.inner
    _check_shape(L)
    sizes = [raw_product(fs) for fs, _fd in arg_modes(L, nargs)]
    n = 1
    for s in sizes:
        n *= s
    if n > EXHAUSTIVE_LIMIT:
        raise LoweringError(
            f"{norm.what}: the domain has {n} points, above the exhaustive-proof limit "
            f"{EXHAUSTIVE_LIMIT}; lower a smaller tile (or a slice)",
            condition="domain size",
        )
    idx = np.arange(n, dtype=np.int64)
    arrs = []
    p = 1
    for s in sizes:
        arrs.append((idx // p) % s)
        p *= s
    return sizes, arrs


def reference_values(norm: Normalized) -> np.ndarray:
    """Every value of the normalized layout (colexicographic order), by the algebra's own
    evaluation, as int64 (a LoweringError beyond int64)."""
    if norm.outer is None:
        v = norm.inner.eval_all()
    elif isinstance(norm.outer, Swizzle) and norm.offset == 0 and norm.inner == Layout(norm.outer.size, 1):
        v = norm.outer(np.arange(norm.outer.size, dtype=np.int64))
    else:
        v = ComposedLayout(norm.outer, norm.offset, norm.inner).eval_all()
    if v.dtype == object:
        raise LoweringError(f"{norm.what}: values beyond int64", condition="integer overflow")
    return np.asarray(v, dtype=np.int64)


def _coord(arrs: List[np.ndarray], i: int) -> Tuple[int, ...]:
    return tuple(int(a[i]) for a in arrs)


def _statement(name: Optional[str], args: Sequence[str], what: str) -> str:
    return f"{name or 'f'}({', '.join(args)}) == {what}"


def check_c_expr(
    layout: Any,
    args: Sequence[str],
    c_expr: str,
    *,
    name: Optional[str] = None,
    int_bits: Optional[int] = 32,
    log: Optional[ProofLog] = None,
) -> Proof:
    """Prove that the C expression ``c_expr`` over ``args`` equals ``layout`` everywhere.

    Concrete layouts: every coordinate of the domain (at most :data:`EXHAUSTIVE_LIMIT`),
    evaluated with :func:`c_expr_eval` (with ``int_bits``: no intermediate overflows a
    signed integer of that width, no shift of a negative value).  Symbolic strides: see
    the module docstring (for all values of the symbols; no overflow check, the values
    are unknown).  A mismatch raises :class:`LoweringError` whose ``witness`` is the
    coordinate (a tuple, one integer per argument).

    >>> from layoutproof import Layout
    >>> check_c_expr(Layout((4, 8), (8, 1)), ("r", "c"), "r * 8 + c").cases
    32
    >>> check_c_expr(Layout((4, 8), (8, 1)), ("r", "c"), "r * 8 + (c & 3)")
    Traceback (most recent call last):
      ...
    layoutproof.gpu.errors.LoweringError: ... at (r, c) = (0, 4): the C expression gives 0, the layout 4
    """
    norm = normalize(layout)
    args = _check_names(args)
    node = _parse_c(c_expr)
    stmt = _statement(name, args, norm.what)
    if norm.inner.is_symbolic:
        return _check_symbolic(norm, args, c_expr, node, stmt, log)
    _sizes, arrs = _domain(norm, len(args))
    try:
        ref = reference_values(norm)
    except (MalformedLayoutError, OutOfDomainError) as e:
        raise LoweringError(
            f"{stmt}: the layout cannot be evaluated on its domain: {e}", condition="lowerable layout"
        ) from None
    env = dict(zip(args, arrs))
    try:
        got = np.broadcast_to(c_expr_eval(c_expr, env, int_bits=int_bits), ref.shape)
    except LoweringError as e:
        w = e.witness
        where = f" at ({', '.join(args)}) = {_coord(arrs, w)}" if isinstance(w, int) else ""
        raise LoweringError(
            f"{stmt}: {e}{where}",
            condition=e.condition,
            witness=_coord(arrs, w) if isinstance(w, int) else None,
        ) from None
    bad = got != ref
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        c = _coord(arrs, i)
        raise LoweringError(
            f"{stmt} fails at ({', '.join(args)}) = {c}: the C expression gives {int(got[i])}, "
            f"the layout {int(ref[i])}",
            condition="lowered expression equals the layout",
            witness=c,
        )
    p = Proof("equal", stmt, "exhaustive", int(ref.size))
    return log.add(p.kind, p.statement, p.method, p.cases) if log is not None else p


def _check_symbolic(
    norm: Normalized, args: Tuple[str, ...], c_expr: str, node: tuple, stmt: str, log: Optional[ProofLog]
) -> Proof:
    if norm.outer is not None:
        raise LoweringError(
            f"{norm.what}: a swizzle (or outer layout) of a symbolic offset is not affine in the "
            "runtime symbols; substitute values first",
            condition="affine in the runtime symbols",
        )
    L = norm.inner
    _check_shape(L)
    syms = sorted(L.free_symbols, key=lambda s: s.name)
    if len(syms) > _MAX_SYMBOLS:
        raise LoweringError(f"{L}: more than {_MAX_SYMBOLS} runtime symbols", condition="symbol count")
    names = tuple(s.name for s in syms)
    _check_names(args, names)
    deg = _degrees(node, frozenset(names))
    if any(v > 1 for v in deg.values()):
        raise LoweringError(
            f"{stmt}: the C expression is not multilinear in the runtime symbols (degrees {deg})",
            condition="affine in the runtime symbols",
        )
    fs, fd = tuple(flatten(L.shape)), tuple(flatten(L.stride))
    # the layout's coefficient of each monomial (a subset of the symbols), per flat stride
    coef: Dict[frozenset, List[int]] = {}
    for j, d in enumerate(fd):
        poly = sp.Poly(sp.expand(sp.sympify(d)), *syms) if syms else None
        terms = poly.terms() if poly is not None else [((), sp.sympify(d))]
        for mon, c in terms:
            if any(e > 1 for e in mon) or not sp.sympify(c).is_Integer:
                raise LoweringError(
                    f"{L}: stride {d} is not a multilinear integer polynomial in {names}",
                    condition="affine in the runtime symbols",
                )
            key = frozenset(s for s, e in zip(names, mon) if e)
            coef.setdefault(key, [0] * len(fd))[j] += int(c)
    _sizes, arrs = _domain(norm, len(args))
    env: Dict[str, Any] = dict(zip(args, arrs))
    values: Dict[frozenset, np.ndarray] = {}
    for bits in itertools.product((0, 1), repeat=len(names)):
        u = frozenset(s for s, b in zip(names, bits) if b)
        env.update({s: np.int64(b) for s, b in zip(names, bits)})
        values[u] = np.broadcast_to(c_expr_eval(c_expr, env), arrs[0].shape)
    cases = 0
    for t in sorted(values, key=lambda x: (len(x), sorted(x))):
        got = np.zeros(arrs[0].shape, dtype=np.int64)
        for r in range(len(t) + 1):
            for sub in itertools.combinations(sorted(t), r):
                got = got + (-1) ** (len(t) - r) * values[frozenset(sub)]
        ref = Layout(fs, tuple(coef.get(t, [0] * len(fd)))).eval_all()
        cases += int(ref.size)
        bad = got != ref
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            c = _coord(arrs, i)
            mon = "*".join(sorted(t)) or "1"
            raise LoweringError(
                f"{stmt} fails at ({', '.join(args)}) = {c}: the coefficient of {mon} is "
                f"{int(got[i])} in the C expression, {int(ref[i])} in the layout",
                condition="lowered expression equals the layout",
                witness=c,
            )
    p = Proof("equal", stmt + f" for all {', '.join(names)}", "sympy", cases)
    return log.add(p.kind, p.statement, p.method, p.cases) if log is not None else p


# ============================================================================ lowering
def _build_c(norm: Normalized, args: Tuple[str, ...], pow2: bool) -> str:
    L = norm.inner
    _check_shape(L)
    if norm.outer is not None and L.is_symbolic:
        raise LoweringError(
            f"{norm.what}: a swizzle (or outer layout) of a symbolic offset is not affine in the "
            "runtime symbols; substitute values first",
            condition="affine in the runtime symbols",
        )
    terms: List[Any] = []
    for a, (fs, fd) in zip(args, arg_modes(L, len(args))):
        terms += _mode_terms(fs, fd, _arg_symbol(a))
    inner, const = _sum_c(terms, norm.offset, pow2)
    return _outer_c(norm.outer, inner, const, pow2)


def lower(
    layout: Any,
    args: Sequence[str],
    *,
    name: str,
    log: Optional[ProofLog] = None,
    pow2: bool = True,
    int_bits: Optional[int] = 32,
) -> Lowered:
    """Lower ``layout`` to a C expression over ``args`` and prove it equal to the layout.

    ``args`` names one C integer coordinate per top-level mode (a 1-D colexicographic
    index into the mode when it is nested), or a single 1-D index of the whole layout.  A
    bare Swizzle takes one argument (the offset) and is proven on ``[0, 2**(M+B+|S|))``
    (bits above pass through both sides unchanged).  ``pow2`` prints ``/ 2**k`` and ``% 2**k``
    as ``>> k`` and ``& (2**k-1)`` (coordinates are non-negative; proven like the rest).
    ``int_bits`` (32: C ``int``) bounds every intermediate of the concrete proof.

    Raises :class:`LoweringError` (with ``condition``; a ``witness`` coordinate when the
    expression is wrong somewhere): symbolic shapes, a swizzle of a symbolic offset, a
    domain above :data:`EXHAUSTIVE_LIMIT`, an overflow of ``int_bits``, a shift of a
    negative value (e.g. a swizzle under negative strides).

    >>> from layoutproof import Layout
    >>> lower(Layout((8, 32), (1, 8)), ("i",), name="f").c_expr
    'i'
    >>> lower(Layout((8, 32), (32, 1)), ("i",), name="f").c_expr
    '((32 * (i & 7)) + (i >> 3))'
    >>> lower(Layout((4, 3), (0, 5)), ("i", "j"), name="f").c_expr
    '(5 * j)'
    """
    if not isinstance(name, str) or not _is_ident(name):
        raise LoweringError(f"name {name!r} is not a C identifier", condition="C argument names")
    norm = normalize(layout)
    args = _check_names(args)
    try:
        c = _build_c(norm, args, pow2)
    except (MalformedLayoutError, OutOfDomainError) as e:
        raise LoweringError(f"{norm.what}: {e}", condition="lowerable layout") from None
    proof = check_c_expr(layout, args, c, name=name, int_bits=int_bits, log=log)
    return Lowered(name, layout, args, c, proof)


def lower_many(items: Iterable[Any], *, log: Optional[ProofLog] = None) -> Tuple[List[Lowered], ProofLog]:
    """Lower several layouts: ``items`` holds ``(layout, args, name)`` tuples or dicts with
    those keys.  Returns the results and the log (a new one unless given).

    >>> from layoutproof import Layout
    >>> lows, log = lower_many([(Layout(8, 2), ("i",), "f"), (Layout((2, 2), (2, 1)), ("i", "j"), "g")])
    >>> [l.c_expr for l in lows], len(log)
    (['(2 * i)', '((2 * i) + j)'], 2)
    """
    log = ProofLog() if log is None else log
    out = []
    for it in items:
        if isinstance(it, dict):
            out.append(lower(it["layout"], it["args"], name=it["name"], log=log))
        else:
            lay, args, name = it
            out.append(lower(lay, args, name=name, log=log))
    return out, log


# ============================================================================ obligations
def _values(obj: Any) -> Tuple[List[np.ndarray], np.ndarray, str, Tuple[str, ...]]:
    """Coordinates (one array per argument) and values of a Lowered or a layout."""
    if isinstance(obj, Lowered):
        norm = normalize(obj.layout)
        if norm.inner.is_symbolic:
            raise ProofFailedError(
                f"{obj.name}: values depend on runtime symbols {obj.symbols}; substitute values",
                condition="concrete values",
            )
        _s, arrs = _domain(norm, len(obj.args))
        v = np.broadcast_to(c_expr_eval(obj.c_expr, dict(zip(obj.args, arrs))), arrs[0].shape)
        return arrs, v, obj.name, obj.args
    norm = normalize(obj)
    if norm.inner.is_symbolic:
        raise ProofFailedError(
            f"{norm.what}: values depend on runtime symbols; substitute values", condition="concrete values"
        )
    s = norm.inner.shape
    nargs = len(s) if isinstance(s, tuple) and s else 1
    _s, arrs = _domain(norm, nargs)
    return arrs, reference_values(norm), norm.what, tuple(f"c{i}" for i in range(nargs))


def _done(log: Optional[ProofLog], kind: str, stmt: str, cases: int) -> Proof:
    if log is not None:
        return log.add(kind, stmt, "exhaustive", cases)
    return Proof(kind, stmt, "exhaustive", int(cases))


def prove_bounds(
    lowered_or_layout: Any, lo: int, hi: int, *, what: str, log: Optional[ProofLog] = None
) -> Proof:
    """Prove that every value lies in ``[lo, hi)`` (exhaustively); otherwise raise
    :class:`ProofFailedError` (condition ``bounds``) with the coordinate as witness.

    >>> from layoutproof import Layout
    >>> prove_bounds(Layout((4, 8), (8, 1)), 0, 32, what="tile").line()
    '[bounds] tile: (4,8):(8,1) in [0, 32) -- exhaustive, 32 cases'
    >>> prove_bounds(Layout((4, 8), (9, 1)), 0, 32, what="tile")
    Traceback (most recent call last):
      ...
    layoutproof.gpu.errors.ProofFailedError: tile: ... at (3, 5) ...
    """
    arrs, v, label, _names = _values(lowered_or_layout)
    bad = (v < lo) | (v >= hi)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        c = _coord(arrs, i)
        raise ProofFailedError(
            f"{what}: {label} takes the value {int(v[i])} at {c}, outside [{lo}, {hi})",
            condition="bounds",
            witness=c,
        )
    return _done(log, "bounds", f"{what}: {label} in [{lo}, {hi})", int(v.size))


def _duplicates(v: np.ndarray) -> Optional[Tuple[int, int]]:
    order = np.argsort(v, kind="stable")
    sv = v[order]
    same = np.flatnonzero(sv[1:] == sv[:-1])
    if same.size == 0:
        return None
    k = int(same[0])
    return int(order[k]), int(order[k + 1])


def prove_injective(layout: Any, *, what: str, log: Optional[ProofLog] = None) -> Proof:
    """Prove that no two coordinates share a value; else :class:`ProofFailedError`
    (condition ``injective``, witness: the two coordinates).

    >>> from layoutproof import Layout
    >>> prove_injective(Layout((2, 4), (4, 1)), what="tv").kind
    'bijective'
    >>> prove_injective(Layout((2, 4), (2, 1)), what="tv")
    Traceback (most recent call last):
      ...
    layoutproof.gpu.errors.ProofFailedError: tv: ... (1, 0) and (0, 2) ...
    """
    arrs, v, label, _names = _values(layout)
    d = _duplicates(v)
    if d is not None:
        a, b = (_coord(arrs, d[0]), _coord(arrs, d[1]))
        raise ProofFailedError(
            f"{what}: {label} maps {a} and {b} to the same value {int(v[d[0]])}",
            condition="injective",
            witness=(a, b),
        )
    return _done(log, "bijective", f"{what}: {label} is injective", int(v.size))


def prove_bijective(layout: Any, n: int, *, what: str, log: Optional[ProofLog] = None) -> Proof:
    """Prove that the values are exactly ``[0, n)``, each taken once; else
    :class:`ProofFailedError` with condition ``bounds`` (witness: the coordinate),
    ``injective`` (the two coordinates) or ``surjective`` (the missing value).

    >>> from layoutproof import Layout
    >>> prove_bijective(Layout((4, 8), (8, 1)), 32, what="tv").line()
    '[bijective] tv: (4,8):(8,1) is a bijection onto [0, 32) -- exhaustive, 32 cases'
    """
    arrs, v, label, _names = _values(layout)
    bad = (v < 0) | (v >= n)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        c = _coord(arrs, i)
        raise ProofFailedError(
            f"{what}: {label} takes the value {int(v[i])} at {c}, outside [0, {n})",
            condition="bounds",
            witness=c,
        )
    d = _duplicates(v)
    if d is not None:
        a, b = _coord(arrs, d[0]), _coord(arrs, d[1])
        raise ProofFailedError(
            f"{what}: {label} maps {a} and {b} to the same value {int(v[d[0]])}",
            condition="injective",
            witness=(a, b),
        )
    if v.size != n:
        seen = np.zeros(n, dtype=bool)
        seen[v] = True
        m = int(np.flatnonzero(~seen)[0])
        raise ProofFailedError(
            f"{what}: {label} never takes the value {m} (size {v.size} < {n})",
            condition="surjective",
            witness=m,
        )
    return _done(log, "bijective", f"{what}: {label} is a bijection onto [0, {n})", int(v.size))
