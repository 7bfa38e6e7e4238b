"""CuTe notation: parsing ``"(4,(2,2)):(2,(1,8))"`` and the small expression language of
the ``layoutproof eval`` command (``"composition((4,2):(1,4), 8:1)"``).

Leaves are integers (``_4`` is CuTe's static 4) or, for symbolic layouts, integer
expressions of names: ``(M,N):(1,M)``, ``8*K:1``, ``(M/64,64):(64,1)``, ``2*M + 1``.
A leaf expression uses ``+ - * / **``, SymPy's ``floor``, ``ceiling``, ``Mod``, ``Min``
and ``Max``, and parentheses after an operator (``N*(M + 1)``); a parenthesis that starts
an element is tuple syntax, as in CuTe (``(8)`` is the rank-1 shape).  A symbol's name
starts with an upper-case letter (``M``, ``N``, ``K``, ``BLK_M``), so that a misspelt
function or a stray word is still an error; each name becomes a positive integer SymPy
symbol (:func:`layoutproof.symbolic.symbols`).  SymPy is imported only when a name leaf
is met: integer notation never loads it.  ``str()`` of a symbolic layout parses back:

>>> from layoutproof import Layout, assuming
>>> with assuming("N % 8 == 0"):
...     L = Layout.parse("(M,(8,N/8)):(1,(M,8*M))")
...     str(L), sorted(s.name for s in L.free_symbols), Layout.parse(str(L)) == L
('(M,(8,N/8)):(1,(M,8*M))', ['M', 'N'], True)
>>> Layout.parse("(_4,_2):(_1,_4)")
Layout((4, 2), (1, 4))
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Callable, Dict, List, Optional, Tuple

from . import kinds
from .errors import LayoutError, MalformedLayoutError, show
from .inttuple import MAX_DEPTH
from .layout import Layout, _
from .symbolic import symbols

__all__ = ["parse_layout", "evaluate", "parse_call", "symbol_names", "is_symbol_name"]

_TOKEN = re.compile(r"\s*(?:(?P<int>_?\d+)|(?P<name>[A-Za-z_][A-Za-z_0-9]*)|(?P<op>\*\*|[(),:*/+-]))")
_ARITH = ("+", "-", "*", "/", "**")
_RESERVED = ("None", "True", "False")
# SymPy functions that may appear in str() of a symbolic leaf
_LEAF_FUNCS = ("floor", "ceiling", "Mod", "Min", "Max")
_MAX_INT_DIGITS = 4000


def _tokenize(text: str) -> List[Tuple[str, Any, int]]:
    if not isinstance(text, str):
        raise MalformedLayoutError(f"layout notation must be a string, got {type(text).__name__}")
    if len(text) > 100_000:
        raise MalformedLayoutError("layout notation longer than 100000 characters")
    out: List[Tuple[str, Any, int]] = []
    pos = 0
    n = len(text)
    while pos < n:
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            if text[pos:].strip() == "":
                break
            raise MalformedLayoutError(f"unexpected character {text[pos]!r} at {pos} in {show(text)}")
        if m.group("int") is not None:
            digits = m.group("int").replace("_", "")
            if len(digits) > _MAX_INT_DIGITS:
                raise MalformedLayoutError(f"integer literal with more than {_MAX_INT_DIGITS} digits")
            out.append(("int", int(digits), m.start("int")))
        elif m.group("name") is not None:
            out.append(("name", m.group("name"), m.start("name")))
        else:
            out.append((m.group("op"), m.group("op"), m.start("op")))
        pos = m.end()
    return out


def is_symbol_name(name: str) -> bool:
    """Whether ``name`` may name a symbolic leaf: an identifier starting with an upper-case
    letter that is not ``None``, ``True`` or ``False``.

    >>> is_symbol_name("M"), is_symbol_name("BLK_M"), is_symbol_name("garbage"), is_symbol_name("None")
    (True, True, False, False)
    """
    return bool(name) and name[0].isupper() and name.isidentifier() and name not in _RESERVED


# ----------------------------------------------------------------------------- leaf arithmetic
def _is_sympy(x: Any) -> bool:
    import sys

    sp = sys.modules.get("sympy")
    return sp is not None and isinstance(x, sp.Basic)


def _number(x: Any, op: str, text: str) -> Any:
    if type(x) is int:
        return x
    if _is_sympy(x):
        import sympy as sp

        if isinstance(x, sp.Expr):
            return x
    raise MalformedLayoutError(f"{op!r} applies to integers and symbols, got {show(x)} in {text!r:.200}")


def leaf_arith(op: str, a: Any, b: Any, text: str) -> Any:
    """``a op b`` for the notation's operators (``+ - * / **``) on integers and SymPy
    expressions: an integer when both are integers (``/`` must divide exactly), else SymPy.
    A MalformedLayoutError (quoting ``text``) for anything else."""
    a = _number(a, op, text)
    b = _number(b, op, text)
    both_int = type(a) is int and type(b) is int
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        if both_int:
            if b == 0 or a % b != 0:
                raise MalformedLayoutError(f"{a}/{b} is not an integer in {text!r:.200}")
            return a // b
        import sympy as sp

        if sp.sympify(b) == 0:
            raise MalformedLayoutError(f"division by zero in {text!r:.200}")
        r = sp.sympify(a) / sp.sympify(b)
        return int(r) if r.is_Integer else r
    if op == "**":
        if type(b) is not int or not 0 <= b <= 64:
            raise MalformedLayoutError(f"only small constant exponents (0..64) are allowed in {text!r:.200}")
        if both_int and abs(a) > 1 and b * abs(a).bit_length() > 4 * _MAX_INT_DIGITS:
            raise MalformedLayoutError(f"{a}**{b} is too large in {text!r:.200}")
        return a**b
    raise MalformedLayoutError(f"unknown operator {op!r}")  # pragma: no cover


def leaf_function(name: str, args: List[Any], text: str) -> Any:
    """``name(*args)`` for the SymPy functions a symbolic leaf prints with (``floor``,
    ``ceiling``, ``Mod``, ``Min``, ``Max``): an integer for integer arguments where it is one."""
    for a in args:
        _number(a, name, text)
    if all(type(a) is int for a in args):
        if name == "Min" and args:
            return min(args)
        if name == "Max" and args:
            return max(args)
        if name == "Mod" and len(args) == 2 and args[1] != 0:
            return args[0] % args[1]
        if name in ("floor", "ceiling") and len(args) == 1:
            return args[0]
    import sympy as sp

    try:
        r = getattr(sp, name)(*[sp.sympify(a) for a in args])
    except (TypeError, ValueError) as e:
        raise MalformedLayoutError(f"{name}: {e}") from None
    return int(r) if getattr(r, "is_Integer", False) else r


class _Parser:
    def __init__(
        self, text: str, names: Dict[str, Callable[..., Any]] | None, symbols: Optional[Dict[str, Any]] = None
    ) -> None:
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0
        self.names = names
        self.symbols = symbols if symbols is not None else {}

    def peek(self) -> str | None:
        return self.toks[self.i][0] if self.i < len(self.toks) else None

    def peek2(self) -> str | None:
        return self.toks[self.i + 1][0] if self.i + 1 < len(self.toks) else None

    def take(self, kind: str) -> Any:
        if self.peek() != kind:
            where = self.toks[self.i][2] if self.i < len(self.toks) else len(self.text)
            got = self.toks[self.i][1] if self.i < len(self.toks) else "end of input"
            raise MalformedLayoutError(f"expected {kind!r} at {where} in {self.text!r:.200}, got {got!r}")
        tok = self.toks[self.i]
        self.i += 1
        return tok[1]

    # --------------------------------------------------------------- symbols and leaves
    def symbol(self, name: str) -> Any:
        v = self.symbols.get(name)
        if v is not None:
            return v
        if not is_symbol_name(name):
            raise MalformedLayoutError(
                f"unknown name {name!r} in {self.text!r:.200} (a symbolic leaf starts with an "
                "upper-case letter: M, N, K, BLK_M)"
            )
        v = self.symbols[name] = symbols(name)
        return v

    def arith_tail(self, left: Any, operand: Callable[[int], Any], depth: int, min_prec: int = 0) -> Any:
        """Precedence climbing over ``+ -`` (1), ``* /`` (2), ``**`` (3, right-assoc)."""
        prec = {"+": 1, "-": 1, "*": 2, "/": 2, "**": 3}
        while True:
            op = self.peek()
            p = prec.get(op or "")
            if p is None or p < min_prec:
                return left
            self.take(op)  # type: ignore[arg-type]
            right = operand(depth + 1)
            while True:
                op2 = self.peek()
                p2 = prec.get(op2 or "")
                if p2 is None or not (p2 > p or (p2 == p == 3)):
                    break
                right = self.arith_tail(right, operand, depth + 1, p2)
            left = leaf_arith(op, left, right, self.text)  # type: ignore[arg-type]

    def atom(self, depth: int) -> Any:
        """An operand inside a leaf expression: an integer, a name, ``-x``, ``(expr)`` or a
        leaf function ``floor(...)``."""
        if depth > MAX_DEPTH:
            raise MalformedLayoutError(f"expression nested deeper than {MAX_DEPTH} levels")
        k = self.peek()
        if k in ("-", "+"):  # unary: binds looser than ** (-M**2 is -(M**2))
            self.take(k)
            v = self.arith_tail(self.atom(depth + 1), self.atom, depth + 1, 3)
            return leaf_arith("-", 0, v, self.text) if k == "-" else _number(v, "+", self.text)
        if k == "int":
            return self.take("int")
        if k == "(":
            self.take("(")
            v = self.arith_expr(depth + 1)
            self.take(")")
            return v
        if k == "name":
            name = self.take("name")
            if self.peek() == "(" and name in _LEAF_FUNCS and name not in (self.names or {}):
                args = self.leaf_args(depth)
                return leaf_function(name, args, self.text)
            if self.peek() == "(" and self.names is not None and name in self.names:
                return self.call(name, depth)
            if self.peek() == "(":
                raise MalformedLayoutError(f"unknown function {name!r} in {self.text!r:.200}")
            return self.symbol(name)
        self.take("expression")  # raises
        return None  # pragma: no cover

    def arith_expr(self, depth: int) -> Any:
        return self.arith_tail(self.atom(depth), self.atom, depth)

    def leaf_args(self, depth: int) -> List[Any]:
        self.take("(")
        out = [self.arith_expr(depth + 1)]
        while self.peek() == ",":
            self.take(",")
            out.append(self.arith_expr(depth + 1))
        self.take(")")
        return out

    # An HTuple of leaves (shape/stride notation); rank-1 "(8)" is the tuple (8,).
    def htuple(self, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise MalformedLayoutError(f"notation nested deeper than {MAX_DEPTH} levels")
        if self.peek() == "(":
            self.take("(")
            items = []
            if self.peek() != ")":
                items.append(self.htuple(depth + 1))
                while self.peek() == ",":
                    self.take(",")
                    items.append(self.htuple(depth + 1))
            self.take(")")
            if self.peek() in _ARITH and len(items) == 1 and type(items[0]) is not tuple:
                return self.arith_tail(items[0], self.atom, depth)  # "(M + 1)*N": a group
            return tuple(items)
        return self.arith_expr(depth)

    # The expression language: ints, tuples, layouts "a:b", calls "f(x, y)", "_", "None",
    # symbolic leaves and their arithmetic.
    def expr(self, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise MalformedLayoutError(f"expression nested deeper than {MAX_DEPTH} levels")
        k = self.peek()
        if k == "(":
            items = self.items(depth)
            val: Any = tuple(items)
            if (
                self.peek() in _ARITH
                and len(items) == 1
                and type(items[0]) is not tuple
                and not isinstance(items[0], Layout)
            ):
                val = self.arith_tail(items[0], self.atom, depth)
        elif k == "name" and self.toks[self.i][1] in ("_", "None") and self.peek2() != "(":
            name = self.take("name")
            return _ if name == "_" else None
        elif k in ("int", "name", "-", "+"):
            val = self.arith_tail(self.atom(depth), self.atom, depth)
        else:
            self.take("expression")  # raises: nothing else can start an expression
            return None
        if self.peek() == ":":
            self.take(":")
            stride = self.expr(depth + 1)
            val = Layout(val, stride)
        while isinstance(val, Layout) and self.peek() == "(":
            # postfix evaluation: "(4,2):(2,1)(3)"
            val = val(*self.items(depth))
        return val

    def call(self, name: str, depth: int) -> Any:
        fn = (self.names or {})[name]
        args = self.items(depth)
        try:
            inspect.signature(fn).bind(*args)
        except TypeError as e:
            raise MalformedLayoutError(f"{name}: {e}") from None
        except ValueError:  # no signature (a builtin): let the call itself check
            pass
        return fn(*args)

    def items(self, depth: int) -> List[Any]:
        """A parenthesized, comma-separated list of expressions."""
        self.take("(")
        out: List[Any] = []
        if self.peek() != ")":
            out.append(self.expr(depth + 1))
            while self.peek() == ",":
                self.take(",")
                out.append(self.expr(depth + 1))
        self.take(")")
        return out

    def done(self) -> None:
        if self.i != len(self.toks):
            raise MalformedLayoutError(
                f"unexpected {self.toks[self.i][1]!r} at {self.toks[self.i][2]} in {self.text!r:.200}"
            )


def parse_layout(text: str, symbols: Optional[Dict[str, Any]] = None) -> Any:
    """Parse ``shape:stride`` (or a bare shape) in CuTe notation into a Layout.

    ``symbols`` maps names to values (ints or SymPy expressions) used for name leaves;
    other names become positive integer symbols and are added to it.

    >>> str(parse_layout("(M,N):(1,M)", {"M": 64}))
    '(64,N):(1,64)'
    """
    p = _Parser(text, None, symbols)
    s = p.htuple()
    d = None
    if p.peek() == ":":
        p.take(":")
        d = p.htuple()
    p.done()
    return Layout(s, d)


def evaluate(
    text: str, names: Dict[str, Callable[..., Any]], symbols: Optional[Dict[str, Any]] = None
) -> Any:
    """Evaluate an expression of the ``layoutproof eval`` language with the given
    function table.  ``symbols`` is as for :func:`parse_layout`: with integers for every
    name the expression is evaluated concretely.

    >>> from layoutproof import composition
    >>> str(evaluate("composition((M,N):(1,M), 4:1)", {"composition": composition}, {"M": 8, "N": 2}))
    '4:1'
    """
    p = _Parser(text, names, symbols)
    try:
        v = p.expr()
    except RecursionError:  # pragma: no cover - MAX_DEPTH bounds the recursion
        raise LayoutError(f"expression {text!r:.60} is nested too deeply") from None
    p.done()
    return v


def parse_call(
    text: str, names: Dict[str, Callable[..., Any]], symbols: Optional[Dict[str, Any]] = None
) -> tuple:
    """A call ``f(arg, ...)`` of the expression language as ``(f, [args])``, the arguments
    evaluated but ``f`` not called (``layoutproof check "admissible ..."``).

    >>> from layoutproof import composition
    >>> fn, args = parse_call("composition(8:1, 4:2)", {"composition": composition})
    >>> fn.__name__, [str(a) for a in args]
    ('composition', ['8:1', '4:2'])
    """
    p = _Parser(text, names, symbols)
    name = p.take("name")
    fn = (names or {}).get(name)
    if fn is None:
        raise MalformedLayoutError(f"unknown function {name!r} in {text!r:.200}")
    args = p.items(0)
    p.done()
    try:
        inspect.signature(fn).bind(*args)
    except TypeError as e:
        raise MalformedLayoutError(f"{name}: {e}") from None
    except ValueError:  # pragma: no cover - no signature
        pass
    return fn, args


def symbol_names(text: str, names: Optional[Dict[str, Callable[..., Any]]] = None) -> List[str]:
    """The names that the notation reads as symbolic leaves in ``text``, in order of first
    appearance (a name followed by ``(`` is a call, not a leaf).

    >>> symbol_names("composition((M,N):(N,1), 4:N)", {"composition": None})
    ['M', 'N']
    """
    toks = _tokenize(text)
    out: List[str] = []
    for k, (kind, val, _pos) in enumerate(toks):
        if kind != "name" or not is_symbol_name(val) or val in out:
            continue
        if k + 1 < len(toks) and toks[k + 1][0] == "(":
            continue
        out.append(val)
    return out


# Layout.parse (the core) parses with this module: it asks layoutproof.kinds for the
# "parse_layout" hook, which is registered here, so the core never imports the notation.
kinds.register_hook("parse_layout", parse_layout)
