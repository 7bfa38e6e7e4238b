"""Symbolic layouts: SymPy leaves, assumptions, and the decision of side conditions.

A shape or stride leaf may be a SymPy integer expression.  :func:`symbols` makes positive
integer symbols; :func:`assuming` declares facts about them for a ``with`` block.  Each
side condition an operation needs is decided from the active facts (:func:`decide`):
exactly on integers, then by SymPy's own evaluation, then by Z3.  An operation that
needs a condition calls :func:`require`, which returns when the condition is proved,
raises :class:`~layoutproof.errors.InadmissibleError` (with a counterexample assignment)
when the facts contradict it, and raises
:class:`~layoutproof.errors.UndecidableConditionError` naming the condition to assume
otherwise.

SymPy compares with ``==`` structurally, so ``M % 8 == 0`` is the Python value
``False``, not a condition.  Write conditions as strings (``"M % 8 == 0"``), as
``sympy.Eq(M % 8, 0)`` or with :func:`divides`; relations such as ``N >= 16`` are fine as
they are.

>>> from layoutproof import Layout, composition, symbols, assuming
>>> M, N = symbols("M N")
>>> with assuming("M % 4 == 0"):
...     str(composition(Layout((M, N), (N, 1)), Layout(4, 1)))
'4:N'
>>> composition(Layout((M, N), (N, 1)), Layout(4, 1))
Traceback (most recent call last):
  ...
layoutproof.errors.UndecidableConditionError: composition needs 4 <= M or M divides 4 ...

SymPy and Z3 are imported when the first symbolic value is met, never by
``import layoutproof``.
"""

from __future__ import annotations

import ast
import contextvars
import sys
import time
from contextlib import contextmanager
from typing import Any, Dict, Iterator, List, Optional, Tuple

from ..errors import (
    InadmissibleError,
    LayoutError,
    MalformedLayoutError,
    OutOfDomainError,
    UndecidableConditionError,
    show,
)
from ..inttuple import is_int, raw_flatten, raw_product
from ..layout import Layout, Underscore, holds_symbols

__all__ = [
    "symbols",
    "assuming",
    "assumptions",
    "divides",
    "condition",
    "decide",
    "require",
    "is_symbolic",
    "Decision",
    "set_timeout",
    "get_timeout",
    "timeout",
]

_FACTS: contextvars.ContextVar[tuple] = contextvars.ContextVar("layoutproof_facts", default=())
_TIMEOUT_MS = [3000]
_TIMEOUT_CTX: contextvars.ContextVar[Optional[int]] = contextvars.ContextVar(
    "layoutproof_timeout", default=None
)
_CACHE: Dict[Any, "Decision"] = {}
_CACHE_MAX = 20000


def sympy_module() -> Any:
    """The ``sympy`` module, imported on first use (``import layoutproof`` stays light)."""
    import sympy

    return sympy


_sympy = sympy_module  # the short name this package's modules use


def is_sym(x: Any) -> bool:
    """True when ``x`` is a SymPy object (no import of SymPy when it is not loaded)."""
    sp = sys.modules.get("sympy")
    return sp is not None and isinstance(x, sp.Basic)


def is_symbolic(x: Any) -> bool:
    """True when a leaf, HTuple or Layout holds a SymPy expression that is not a number.

    >>> from layoutproof import Layout, symbols
    >>> is_symbolic(Layout(4, 1)), is_symbolic(Layout(symbols("M"), 1))
    (False, True)
    """
    return holds_symbols(x)


# ----------------------------------------------------------------------------- symbols
def symbols(names: str) -> Any:
    """Positive integer SymPy symbols: ``M, N = symbols("M N")`` (one name: one symbol).

    >>> M, K = symbols("M K")
    >>> M.is_integer and M.is_positive
    True
    """
    if not isinstance(names, str) or not names.strip():
        raise MalformedLayoutError(f"symbols() takes a string of names, got {show(names)}")
    sp = _sympy()
    parts = names.replace(",", " ").split()
    for p in parts:
        if not p.isidentifier():
            raise MalformedLayoutError(f"symbols(): {p!r} is not a valid name")
    out = tuple(sp.Symbol(p, integer=True, positive=True) for p in parts)
    return out[0] if len(out) == 1 else out


def _symbol(name: str) -> Any:
    return _sympy().Symbol(name, integer=True, positive=True)


def divides(a: Any, b: Any) -> Any:
    """The condition ``a | b`` (``b % a == 0``) as a SymPy relation.

    >>> M = symbols("M")
    >>> divides(8, M)
    Eq(Mod(M, 8), 0)
    """
    sp = _sympy()
    for x in (a, b):
        if not (is_int(x) or isinstance(x, sp.Expr)):
            raise MalformedLayoutError(f"divides() takes integers or SymPy expressions, got {show(x)}")
    if is_int(a) and int(a) == 0:
        raise MalformedLayoutError("divides(0, b): zero divides nothing")
    return sp.Eq(sp.Mod(sp.sympify(int(b) if is_int(b) else b), sp.sympify(int(a) if is_int(a) else a)), 0)


# ----------------------------------------------------------------------------- conditions
_CMP = {ast.Eq: "Eq", ast.NotEq: "Ne", ast.Lt: "Lt", ast.LtE: "Le", ast.Gt: "Gt", ast.GtE: "Ge"}
_FUNCS = ("floor", "ceiling", "Mod", "Min", "Max", "Abs")


def parse_expr(text: str, names: Optional[Dict[str, Any]] = None) -> Any:
    """Parse an integer expression or condition written in Python syntax into SymPy,
    safely (no ``eval``): ``+ - * / // % **``, comparisons (chained too), ``and``,
    ``or``, ``not``, ``floor``, ``ceiling``, ``Mod``, ``Min``, ``Max``, ``Abs``.
    Unknown names become positive integer symbols.

    >>> parse_expr("M % 8 == 0")
    Eq(Mod(M, 8), 0)
    >>> pretty(parse_expr("N >= 16 and not M < 4"))
    'M >= 4 and N >= 16'
    """
    if not isinstance(text, str):
        raise MalformedLayoutError(f"expected a condition string, got {show(text)}")
    if len(text) > 10_000:
        raise MalformedLayoutError("condition longer than 10000 characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as e:
        raise MalformedLayoutError(f"cannot parse {text!r}: {e.msg}") from None
    sp = _sympy()
    env = dict(names or {})

    def walk(n: ast.AST, depth: int = 0) -> Any:
        if depth > 200:
            raise MalformedLayoutError(f"expression {text!r:.60} is nested too deeply")
        d = depth + 1
        if isinstance(n, ast.Expression):
            return walk(n.body, d)
        if isinstance(n, ast.Constant):
            if type(n.value) is int:
                return sp.Integer(n.value)
            if type(n.value) is bool:
                return sp.true if n.value else sp.false
            raise MalformedLayoutError(f"only integer constants are allowed, got {n.value!r} in {text!r}")
        if isinstance(n, ast.Name):
            if n.id not in env:
                env[n.id] = _symbol(n.id)
            return env[n.id]
        if isinstance(n, ast.UnaryOp):
            v = walk(n.operand, d)
            if isinstance(n.op, ast.USub):
                return -v
            if isinstance(n.op, ast.UAdd):
                return v
            if isinstance(n.op, ast.Not):
                return sp.Not(v)
        if isinstance(n, ast.BinOp):
            a, b = walk(n.left, d), walk(n.right, d)
            op = type(n.op)
            if op in (ast.Div, ast.FloorDiv, ast.Mod) and b.is_zero:
                raise MalformedLayoutError(f"division by zero in {text!r:.80}")
            if op is ast.Add:
                return a + b
            if op is ast.Sub:
                return a - b
            if op is ast.Mult:
                return a * b
            if op is ast.Div:
                return a / b
            if op is ast.FloorDiv:
                return sp.floor(a / b)
            if op is ast.Mod:
                return sp.Mod(a, b)
            if op is ast.Pow:
                if not (b.is_Integer and 0 <= int(b) <= 64):
                    raise MalformedLayoutError(f"only small constant exponents are allowed in {text!r}")
                return a**b
        if isinstance(n, ast.BoolOp):
            vals = [walk(v, d) for v in n.values]
            return sp.And(*vals) if isinstance(n.op, ast.And) else sp.Or(*vals)
        if isinstance(n, ast.Compare):
            parts = []
            left = walk(n.left, d)
            for cmp, right in zip(n.ops, n.comparators):
                r = walk(right, d)
                name = _CMP.get(type(cmp))
                if name is None:
                    raise MalformedLayoutError(f"unsupported comparison in {text!r}")
                parts.append(getattr(sp, name)(left, r))
                left = r
            return parts[0] if len(parts) == 1 else sp.And(*parts)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and not n.keywords:
            f = n.func.id
            args = [walk(a, d) for a in n.args]
            if f in _FUNCS:
                return getattr(sp, f)(*args)
            if f == "divides" and len(args) == 2:
                return divides(*args)
        raise MalformedLayoutError(f"unsupported syntax in {text!r}: {ast.dump(n)[:60]}")

    try:
        return walk(tree)
    except LayoutError:
        raise
    except (ZeroDivisionError, TypeError, ValueError, AttributeError, RecursionError) as e:
        raise MalformedLayoutError(f"cannot read {text!r:.80}: {type(e).__name__}: {e}") from None


_CHECKED: Dict[Any, Any] = {}


def _check_condition(c: Any, given: Any) -> Any:
    """:func:`_check_condition_uncached`, memoized (conditions are immutable SymPy objects)."""
    hit = _CHECKED.get(c)
    if hit is not None:
        return hit
    out = _check_condition_uncached(c, given)
    if len(_CHECKED) > _CACHE_MAX:
        _CHECKED.clear()
    _CHECKED[c] = out
    return out


def _check_condition_uncached(c: Any, given: Any) -> Any:
    """``c`` if it is a condition (a relation, And/Or/Not of them, true/false) over integer
    expressions; a relation with a top-level quotient (``M / 2 == 3``) is rewritten without
    it (``M == 6``), which keeps its meaning and its integer reading in the solver."""
    sp = _sympy()
    if c is sp.true or c is sp.false:
        return c
    if not isinstance(c, sp.logic.boolalg.Boolean) or isinstance(c, sp.Symbol):
        raise MalformedLayoutError(
            f"{show(given)} is not a condition (it is the value {show(c)}); write a comparison such "
            "as 'M % 4 == 0' or 'M >= 2'"
        )
    if c.has(sp.zoo, sp.nan, sp.oo, -sp.oo):
        raise MalformedLayoutError(f"the condition {show(given)} divides by zero or is infinite")
    if isinstance(c, (sp.And, sp.Or, sp.Not, sp.Implies)):
        return c.func(*[_check_condition(a, given) for a in c.args])
    if not isinstance(c, sp.core.relational.Relational):
        raise MalformedLayoutError(f"{show(given)} is not a condition over integers ({type(c).__name__})")
    for side in c.args:
        if not isinstance(side, sp.Expr) or side.is_integer is False and side.is_Number:
            if isinstance(side, sp.Expr) and side.is_Rational:
                continue
            raise MalformedLayoutError(f"the condition {show(given)} compares {show(side)}, not an integer")
        for s in side.free_symbols:
            if s.is_integer is not True:
                raise MalformedLayoutError(
                    f"the condition {show(given)} has the non-integer symbol {s}; use layoutproof.symbols()"
                )
    diff = c.lhs - c.rhs
    num, den = sp.fraction(sp.together(diff))
    if den == 1 or den.is_Number and int(den) == 1:
        return c
    # lhs - rhs = num / den, defined where den != 0 (elsewhere the condition itself is not)
    if den.is_positive is True or isinstance(c, (sp.Eq, sp.Ne)):
        # den > 0, or an (in)equality: it holds iff num compares the same way with 0
        return c.func(sp.expand(num), 0)
    # sign of den unknown: num / den compares with 0 as num * den does (den**2 > 0)
    return c.func(sp.expand(num * den), 0)


def _no_nested_quotient(c: Any, given: str) -> None:
    """A quotient inside ``%``, ``Min``, ``Max`` or ``Abs`` of a written condition is
    refused: ``(M / 2) % 3`` is a rational where ``M`` is odd, which a written condition
    rarely means (write ``floor(a / b)`` or state the divisibility).  A SymPy condition may
    have one; the solver reads it exactly (docs/semantics.md, "Division in conditions")."""
    sp = _sympy()
    for node in sp.preorder_traversal(c):
        if isinstance(node, (sp.Mod, sp.Min, sp.Max, sp.Abs)):
            for a in node.args:
                if isinstance(a, sp.Expr) and sp.fraction(sp.together(a))[1] != 1:
                    raise MalformedLayoutError(
                        f"{given!r:.80}: the quotient {a} inside {type(node).__name__} may not be an "
                        "integer; write floor(...) or multiply it out"
                    )


def condition(c: Any) -> Any:
    """A SymPy condition from a string, a SymPy relation or a bool.

    A Python ``False`` is refused with the reason: it is usually ``M % 8 == 0`` evaluated
    by Python (SymPy's ``==`` is structural), not a condition.
    """
    sp = _sympy()
    if isinstance(c, str):
        out = _check_condition(parse_expr(c), c)
        _no_nested_quotient(out, c)
        return out
    if c is True:
        return sp.true
    if c is False:
        raise MalformedLayoutError(
            "a condition is the Python value False; `M % 8 == 0` on SymPy symbols is evaluated "
            "by Python (structural equality) -- write it as a string 'M % 8 == 0', "
            "as sympy.Eq(M % 8, 0) or as layoutproof.divides(8, M)"
        )
    if isinstance(c, sp.logic.boolalg.Boolean):
        return _check_condition(c, c)
    raise MalformedLayoutError(f"a condition must be a string or a SymPy relation, got {show(c)}")


@contextmanager
def assuming(*facts: Any) -> Iterator[tuple]:
    """Declare facts about the symbols for the ``with`` block (nested blocks add up).

    >>> M = symbols("M")
    >>> with assuming("M % 8 == 0", M >= 16):
    ...     decide("M % 4 == 0").value, decide(M >= 8).value
    (True, True)
    """
    new = tuple(condition(f) for f in facts)
    tok = _FACTS.set(_FACTS.get() + new)
    try:
        yield _FACTS.get()
    finally:
        _FACTS.reset(tok)


def assumptions() -> tuple:
    """The facts active here (a tuple of SymPy conditions)."""
    return _FACTS.get()


def set_timeout(ms: int) -> None:
    """Set the time limit of every Z3 call, in milliseconds (default 3000)."""
    if type(ms) is not int or ms <= 0:
        raise MalformedLayoutError(
            f"the Z3 timeout must be a positive number of milliseconds, got {show(ms)}"
        )
    _TIMEOUT_MS[0] = ms
    _CACHE.clear()


def get_timeout() -> int:
    """The time limit of each Z3 call, in milliseconds (a :func:`timeout` block's, else
    the global one)."""
    t = _TIMEOUT_CTX.get()
    return _TIMEOUT_MS[0] if t is None else t


@contextmanager
def timeout(ms: Optional[int]) -> Iterator[None]:
    """Use ``ms`` milliseconds per Z3 call inside the block (this thread / task only);
    ``None`` keeps the current setting.

    >>> with timeout(50):
    ...     get_timeout()
    50
    """
    if ms is None:
        yield
        return
    if type(ms) is not int or ms <= 0:
        raise MalformedLayoutError(
            f"the Z3 timeout must be a positive number of milliseconds, got {show(ms)}"
        )
    tok = _TIMEOUT_CTX.set(ms)
    try:
        yield
    finally:
        _TIMEOUT_CTX.reset(tok)


# ----------------------------------------------------------------------------- pretty printing
def pretty(c: Any) -> str:
    """A condition in Python syntax: ``M % 4 == 0``, ``4 <= M or M divides 4``."""
    sp = _sympy()
    if c is True or c is sp.true:
        return "True"
    if c is False or c is sp.false:
        return "False"
    if isinstance(c, sp.Eq):
        a, b = c.args
        if isinstance(a, sp.Mod) and b == 0:
            return (
                f"{_pe(a.args[1])} divides {_pe(a.args[0])}"
                if not a.args[1].is_Integer
                else f"{_pe(a.args[0])} % {_pe(a.args[1])} == 0"
            )
        return f"{_pe(a)} == {_pe(b)}"
    if isinstance(c, sp.Ne):
        return f"{_pe(c.args[0])} != {_pe(c.args[1])}"
    if isinstance(c, sp.core.relational.Relational):
        return f"{_pe(c.lhs)} {c.rel_op} {_pe(c.rhs)}"
    if isinstance(c, sp.And):
        return " and ".join(_wrap(a) for a in c.args)
    if isinstance(c, sp.Or):
        return " or ".join(_wrap(a) for a in c.args)
    if isinstance(c, sp.Not):
        return f"not {_wrap(c.args[0])}"
    return str(c)


def _wrap(c: Any) -> str:
    sp = _sympy()
    s = pretty(c)
    return f"({s})" if isinstance(c, (sp.And, sp.Or)) else s


def as_python(c: Any) -> str:
    """A condition as :func:`parse_expr` reads it back (``M % 4 == 0``)."""
    sp = _sympy()
    if isinstance(c, sp.Eq):
        return f"{_pe(c.args[0])} == {_pe(c.args[1])}"
    if isinstance(c, sp.And):
        return " and ".join(f"({as_python(a)})" for a in c.args)
    if isinstance(c, sp.Or):
        return " or ".join(f"({as_python(a)})" for a in c.args)
    if isinstance(c, sp.Not):
        return f"not ({as_python(c.args[0])})"
    return pretty(c)


def _pe(e: Any) -> str:
    """An integer expression in Python syntax; a ``Mod`` operand that is not atomic gets
    parentheses, so the text reads back the same."""
    sp = _sympy()
    if isinstance(e, sp.Mod):
        a, b = e.args
        sa = _pe(a) if a.is_Atom else f"({_pe(a)})"
        sb = _pe(b) if b.is_Atom else f"({_pe(b)})"
        return f"{sa} % {sb}"
    if isinstance(e, (sp.Add, sp.Mul)) and e.has(sp.Mod):  # str() would print Mod(...) inside
        op = " + " if isinstance(e, sp.Add) else "*"
        return op.join(f"({_pe(a)})" for a in e.args)
    return str(e)


# ----------------------------------------------------------------------------- decision
class Decision:
    """The outcome of deciding one condition under facts.

    Attributes:
        value: True (proved), False (refuted: no assignment satisfying the facts meets it),
            or None (unknown).
        method: ``"int"``, ``"sympy"`` or ``"z3"``.
        counterexample: for False and None, an assignment of the symbols (dict name ->
            int) that satisfies the facts and violates the condition, when one was found.
        reason: for None, why (``"not implied by the assumptions"``, ``"timeout"``, ...).
        seconds: time spent.
        example: for None, an assignment that satisfies the facts and the condition, when
            one was found (with ``counterexample``: a model each way, so the condition is
            undecided by the facts, not by a lack of time).
    """

    __slots__ = ("value", "method", "counterexample", "reason", "seconds", "cond", "facts", "example")

    def __init__(
        self,
        value: Optional[bool],
        method: str,
        counterexample: Optional[Dict[str, int]] = None,
        reason: Optional[str] = None,
        seconds: float = 0.0,
        cond: Any = None,
        facts: tuple = (),
        example: Optional[Dict[str, int]] = None,
    ) -> None:
        self.value = value
        self.method = method
        self.counterexample = counterexample
        self.reason = reason
        self.seconds = seconds
        self.cond = cond
        self.facts = facts
        self.example = example

    def __repr__(self) -> str:
        return (
            f"Decision(value={self.value}, method={self.method!r}, counterexample={self.counterexample}, "
            f"reason={self.reason!r})"
        )


def _sympy_value(c: Any) -> Optional[bool]:
    """SymPy's own verdict, from the symbols' assumptions only (no facts)."""
    sp = _sympy()
    if c is sp.true or c is True:
        return True
    if c is sp.false or c is False:
        return False
    try:
        if isinstance(c, (sp.Eq, sp.Ne)):
            d = sp.expand(c.lhs - c.rhs)
            v = None
            if d == 0:
                v = True
            elif d.is_nonzero:
                v = False
            if v is not None:
                return v if isinstance(c, sp.Eq) else not v
            return None
        if isinstance(c, sp.core.relational.Relational):
            d = sp.expand(c.gts - c.lts)  # gts >= / > lts
            strict = isinstance(c, (sp.StrictGreaterThan, sp.StrictLessThan))
            if strict:
                if d.is_positive:
                    return True
                if d.is_nonpositive:
                    return False
            else:
                if d.is_nonnegative:
                    return True
                if d.is_negative:
                    return False
            return None
        if isinstance(c, sp.And):
            vals = [_sympy_value(a) for a in c.args]
            if any(v is False for v in vals):
                return False
            return True if all(v is True for v in vals) else None
        if isinstance(c, sp.Or):
            vals = [_sympy_value(a) for a in c.args]
            if any(v is True for v in vals):
                return True
            return False if all(v is False for v in vals) else None
        if isinstance(c, sp.Not):
            v = _sympy_value(c.args[0])
            return None if v is None else not v
    except (TypeError, ValueError, RecursionError, AttributeError):
        return None
    return None


#: at most this many residue tuples are enumerated by :func:`_residue_table`
_RESIDUE_CASES = 1024


def _residue_table(
    conds: List[Any],
) -> Optional[Tuple[List[Any], int, List[Tuple[Tuple[int, ...], Tuple[bool, ...]]]]]:
    """``(symbols, L, [(residues, values), ...])`` when the conditions ``conds`` depend on
    their symbols only modulo ``L``: every symbol appears only inside ``Mod(p, k)`` with ``k``
    a positive integer and ``p`` a polynomial of rational coefficients (common denominator
    ``d``) in the symbols and in the integer ``Mod`` terms inside it
    (``Mod(M**2 + Mod(N, 3), 6)``, ``Mod(K*N + 3/2, 3)``; ``L`` the lcm of every such ``d*k``;
    other functions of the outermost Mods around them are allowed).  Shifting a symbol by
    ``L`` changes each such ``d*p`` by a multiple of ``d*k``, so no ``Mod`` changes
    (innermost first): each condition at any integer values is its value at their residues,
    and every residue tuple in ``[0, L)^n`` (at most :data:`_RESIDUE_CASES`) is evaluated,
    each condition's truth value in order.  None when a condition is not of that form, there
    are too many residues, or a residue does not evaluate to a truth value."""
    sp = _sympy()
    syms = set().union(*(c.free_symbols for c in conds))
    if not syms or not all(x.is_integer for x in syms):
        return None  # residues speak of integers only
    order = sorted(syms, key=str)
    L = 1
    for c in conds:
        mods = [m for m in c.atoms(sp.Mod) if m.args[0].free_symbols & syms]
        for m in mods:
            p, k = m.args
            if not (k.is_Integer and k > 0):
                return None
            inner = {x: sp.Dummy(integer=True) for x in p.atoms(sp.Mod)}
            q = p.xreplace(inner)  # the outermost Mods inside p as unknown integers
            try:
                poly = sp.Poly(q, *order, *inner.values())
            except sp.PolynomialError:
                return None
            if not all(co.is_Rational for co in poly.coeffs()):
                return None
            if any(x.args[1].free_symbols or not x.args[0].is_integer for x in inner):
                return None  # an inner Mod must be an integer, periodic itself (checked in turn)
            # p = P/d with P of integer coefficients: Mod(p, k) has the period d*k
            d = int(sp.ilcm(1, *(int(co.q) for co in poly.coeffs())))
            L = int(sp.ilcm(L, int(k) * d))
        if c.free_symbols and (not mods or c.xreplace({m: sp.Dummy() for m in mods}).free_symbols & syms):
            return None  # a symbol outside every Mod
    if L ** len(order) > _RESIDUE_CASES:
        return None
    from itertools import product

    table = []
    for r in product(range(L), repeat=len(order)):
        at = dict(zip(order, (sp.Integer(x) for x in r)))
        vals = []
        for c in conds:
            v = c.xreplace(at)
            if v is sp.true or v is True:
                vals.append(True)
            elif v is sp.false or v is False:
                vals.append(False)
            else:
                return None
        table.append((r, tuple(vals)))
    return order, L, table


def _residue_value(c: Any) -> Optional[bool]:
    """True when :func:`_residue_table` finds ``c`` true at every residue, so at every
    integer value of its symbols; None otherwise.

    >>> M = symbols("M")
    >>> _residue_value(_sympy().Mod(M**2 + 1, 3) >= 1), _residue_value(_sympy().Mod(M, 3) >= 1)
    (True, None)
    """
    t = _residue_table([c])
    return True if t is not None and all(v[0] for _r, v in t[2]) else None


def _residue_decision(
    c: Any, fs: tuple
) -> Optional[Tuple[Optional[bool], Optional[Dict[str, int]], Optional[Dict[str, int]]]]:
    """``(value, example, counterexample)`` of ``c`` under the facts ``fs`` when ``c`` and
    every fact depend on the symbols only through residues (:func:`_residue_table`): the
    residue tuples where every fact holds are every case, so ``c`` is proved (true at all of
    them), refuted (false at all) or undecided (both, with a value of each kind: each symbol
    the least positive value of its residue, the smallest such assignment first).  None where
    the table does not apply or no residue satisfies the facts."""
    t = _residue_table([c, *fs])
    if t is None:
        return None
    order, L, table = t

    def values(r: Tuple[int, ...]) -> Dict[str, int]:
        return {str(s): (x if x > 0 else L) for s, x in zip(order, r)}

    admitted = sorted((values(r) for r, v in table if all(v[1:]) and v[0]), key=lambda d: sorted(d.values()))
    refuting = sorted(
        (values(r) for r, v in table if all(v[1:]) and not v[0]), key=lambda d: sorted(d.values())
    )
    if not admitted and not refuting:
        return None
    if not refuting:
        return True, admitted[0], None
    if not admitted:
        return False, None, refuting[0]
    return None, admitted[0], refuting[0]


def _mod_abstraction_value(c: Any) -> Optional[bool]:
    """True when ``c`` holds with each ``Mod(p, k)`` in it replaced by an integer unknown of
    what :func:`_residue_value` proves of it (never 0: positive; else non-negative) --
    SymPy's verdict on the abstraction, so ``N * Mod(M**2 + 1, 3) >= 1`` is proved from
    ``Mod(M**2 + 1, 3) != 0``.  None otherwise."""
    sp = _sympy()
    mods = c.atoms(sp.Mod)
    if not mods:
        return None
    rep = {}
    for m in mods:
        p, k = m.args
        if not (k.is_Integer and k > 0) or p.is_integer is not True:
            return None  # only an integer mod a positive integer is an integer in [0, k)
        never0 = _residue_value(sp.Ne(m, 0)) is True
        rep[m] = sp.Dummy(integer=True, positive=True) if never0 else sp.Dummy(integer=True, nonnegative=True)
    return True if _sympy_value(c.xreplace(rep)) is True else None


#: the moduli :func:`_never_zero_modulo` tries
_ZERO_MODULI = (2, 3, 4, 5, 7, 8, 9, 16)


def _never_zero_modulo(c: Any) -> Optional[int]:
    """For ``c`` an equation or inequation ``p == q`` / ``p != q`` of polynomials with
    integer coefficients: a modulus ``k`` at which ``p - q`` is never ``0`` (every residue
    tuple in ``[0, k)^n`` evaluated, at most :data:`_RESIDUE_CASES` of them), so the
    equation holds at no integers at all (``(M - N)**2 == 3``: a square is 0 or 1 mod 4);
    None otherwise.

    >>> M, N = symbols("M N")
    >>> _never_zero_modulo(_sympy().Eq((M - N)**2, 3)), _never_zero_modulo(_sympy().Eq(M**2, 2*N**2))
    (4, None)
    """
    sp = _sympy()
    if not isinstance(c, (sp.Eq, sp.Ne)):
        return None
    order = sorted(c.free_symbols, key=str)
    if not order or not all(x.is_integer for x in order):
        return None
    try:
        poly = sp.Poly(sp.expand(c.lhs - c.rhs), *order)
    except sp.PolynomialError:
        return None
    if not all(co.is_Integer for co in poly.coeffs()):
        return None
    terms = [(tuple(int(e) for e in mon), int(co)) for mon, co in poly.terms()]
    from itertools import product

    for k in _ZERO_MODULI:
        if k ** len(order) > _RESIDUE_CASES:
            break
        pw = [[pow(r, e, k) for e in range(poly.total_degree() + 1)] for r in range(k)]
        if all(
            sum(co * _prod(pw[r][e] for r, e in zip(rs, mon)) for mon, co in terms) % k != 0
            for rs in product(range(k), repeat=len(order))
        ):
            return k
    return None


def _prod(xs: Any) -> int:
    out = 1
    for x in xs:
        out *= x
    return out


#: the residue decisions made (condition, facts) -> Decision or None; bounded like _CACHE
_RESIDUES: Dict[Tuple[Any, tuple], Optional["Decision"]] = {}


def _residues(c: Any, fs: tuple) -> Optional["Decision"]:
    """The decision by residues (:func:`_residue_decision`, else :func:`_residue_value` or
    :func:`_mod_abstraction_value` proving it), None where they do not apply; memoized, as
    decide's callers ask the same conditions again (with or without Z3)."""
    key = (c, fs)
    if key in _RESIDUES:
        return _RESIDUES[key]
    d: Optional[Decision] = None
    rd = _residue_decision(c, fs)
    if rd is not None:  # condition and facts periodic: the residues are every case
        val, yes, no = rd
        d = Decision(
            val,
            "residues",
            counterexample=no,
            example=yes if val is None else None,
            cond=c,
            facts=fs,
            reason="not implied by the assumptions" if val is None else None,
        )
    elif _residue_value(c) is True or _mod_abstraction_value(c) is True:
        # periodic in every symbol and true at every residue (whatever the facts), or true of
        # any value the residues allow each Mod to take
        d = Decision(True, "residues", cond=c, facts=fs)
    elif _never_zero_modulo(c) is not None:
        # p == q holds at no integers (p - q is never 0 modulo k), whatever the facts
        sp = _sympy()
        if isinstance(c, sp.Ne):
            d = Decision(True, "residues", cond=c, facts=fs)
        else:
            from .solver import search_model

            cex = search_model(fs, symbols=tuple(c.free_symbols)) if fs else None
            if cex is None and not fs:
                cex = search_model((), symbols=tuple(c.free_symbols))
            d = Decision(False, "residues", counterexample=cex, cond=c, facts=fs)
    if len(_RESIDUES) > _CACHE_MAX:
        _RESIDUES.clear()
    _RESIDUES[key] = d
    return d


def decide(
    cond: Any, facts: Optional[tuple] = None, *, use_z3: bool = True, timeout_ms: Optional[int] = None
) -> Decision:
    """Decide ``cond`` under ``facts`` (default: the active :func:`assuming` facts).

    >>> M = symbols("M")
    >>> decide(M >= 1).value, decide(M >= 2).value
    (True, None)
    >>> with assuming("M % 8 == 0"):
    ...     d = decide("M % 3 == 1")
    >>> d.value, d.method, d.counterexample, d.example
    (None, 'residues', {'M': 8}, {'M': 16})
    >>> with assuming("M >= 64"):
    ...     d = decide("2 * M >= M + 64")
    >>> d.value, d.method
    (True, 'z3')

    A condition whose symbols (and the facts') appear only inside ``Mod(p, k)`` with integer
    polynomials ``p`` depends on them only through their residues: every residue is
    evaluated (``"residues"``) instead of asking Z3, whose nonlinear modular arithmetic can
    take the whole time budget to give up.
    """
    t0 = time.perf_counter()
    if type(cond) is bool:
        return Decision(cond, "int", seconds=0.0)
    tmo = get_timeout() if timeout_ms is None else timeout_ms
    from .. import budget

    budget.check()
    c: Any = None
    fs: tuple = ()
    try:
        # one decision, SymPy's reading and simplification included, within twice the
        # per-call limit
        with budget.deadline(2 * tmo / 1000.0) as mine:
            c = condition(cond)
            fs = _FACTS.get() if facts is None else tuple(condition(f) for f in facts)
            v = _sympy_value(c)
            if v is not None and (v is True or not fs):
                return Decision(v, "sympy", seconds=time.perf_counter() - t0, cond=c, facts=fs)
            key = (c, fs, tmo)
            if use_z3:
                hit = _CACHE.get(key)
                if hit is not None:
                    return _choice_point(hit) if facts is None else hit
            d = _residues(c, fs) if v is None else None
            if not use_z3:
                if d is not None:
                    d.seconds = time.perf_counter() - t0
                    return d
                return Decision(
                    v,
                    "sympy",
                    reason="not decided by SymPy",
                    seconds=time.perf_counter() - t0,
                    cond=c,
                    facts=fs,
                )
            if d is None:
                from . import smt

                d = smt.decide_z3(c, fs, tmo)
    except budget.BudgetExceeded as e:
        if e.at != mine:  # an enclosing deadline: the whole call is out of time
            raise
        d = Decision(None, "z3", reason="timeout", cond=c, facts=fs)
    d.seconds = time.perf_counter() - t0
    if d.reason != "timeout":  # a timeout depends on the time left; never cache it
        if len(_CACHE) > _CACHE_MAX:
            _CACHE.clear()
        _CACHE[key] = d
    return _choice_point(d) if facts is None else d


# --- symbolic-execution hook (layoutproof.proofs.symexec drives it; keep it tiny) ---
#: the active explorer of :func:`exploring` (None outside it)
EXPLORER: contextvars.ContextVar[Any] = contextvars.ContextVar("layoutproof_explorer", default=None)


@contextmanager
def exploring(explorer: Any) -> Iterator[Any]:
    """Inside the block, a condition the active facts leave undecided (``decide`` under
    the active facts, hence ``require``, ``holds`` and the symbolic operations' tests) is a
    choice point: ``explorer.branch(cond, decision)`` returns the outcome to follow (True or
    False), and that outcome is added to the active facts for the rest of the block."""
    tok = EXPLORER.set(explorer)
    ftok = _FACTS.set(_FACTS.get())
    try:
        yield explorer
    finally:
        _FACTS.reset(ftok)
        EXPLORER.reset(tok)


def _choice_point(d: "Decision") -> "Decision":
    ex = EXPLORER.get()
    if ex is None or d.value is not None or d.cond is None:
        return d
    out = bool(ex.branch(d.cond, d))
    fact = d.cond if out else _sympy().Not(d.cond)
    _FACTS.set(_FACTS.get() + (fact,))
    return Decision(out, "branch", cond=d.cond, facts=d.facts)


# --- end of the symbolic-execution hook ---


def _facts_text(fs: tuple) -> str:
    return ", ".join(pretty(f) for f in fs) if fs else "none"


def _assign_text(a: Optional[Dict[str, int]]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(a.items())) if a else ""


def require(cond: Any, *, op: str, condition_name: str, where: str = "", witness: Any = None) -> None:
    """Return when ``cond`` is proved under the active facts; otherwise raise.

    Refuted (the facts contradict it): InadmissibleError with ``.assignment`` set to an
    assignment of the symbols that satisfies the facts.  Unknown: UndecidableConditionError
    whose ``.condition`` is the condition (a string) to assume and whose
    ``.counterexample`` is an assignment that violates it, when one was found.
    """
    d = decide(cond)
    if d.value is True:
        return
    if d.value is False:
        d = _confirmed(d)
    text = pretty(d.cond if d.cond is not None else cond)
    place = f" of {where}" if where else ""
    if d.value is False:
        err = InadmissibleError(
            f"{op}: {condition_name}{place} fails: {text} is false under the assumptions "
            f"({_facts_text(d.facts)})"
            + (f"; e.g. {_assign_text(d.counterexample)}" if d.counterexample else ""),
            condition=condition_name,
            witness=witness,
        )
        err.assignment = d.counterexample  # type: ignore[attr-defined]
        raise err
    why = d.reason or "not implied by the assumptions"
    msg = f"{op} needs {text} ({condition_name}{place}); {why} ({_facts_text(d.facts)})"
    if d.example and d.counterexample:
        msg += f"; it holds for {_assign_text(d.example)} and fails for {_assign_text(d.counterexample)}"
    elif d.counterexample:
        msg += f"; it fails for {_assign_text(d.counterexample)}"
    msg += f" -- state it with layoutproof.assuming({as_python(d.cond if d.cond is not None else cond)!r})"
    c = d.cond if d.cond is not None else cond
    raise UndecidableConditionError(
        msg, condition=as_python(c), expr=c, counterexample=d.counterexample, example=d.example
    )


def exact_value(e: Any, assignment: Dict[str, int]) -> Any:
    """``e`` (a SymPy expression or condition) at ``assignment`` (name -> int), evaluated
    exactly by SymPy: a number, ``True``/``False``, or None when a symbol has no value or
    the value is undefined (a division by zero)."""
    sp = _sympy()
    if type(e) is bool or type(e) is int:
        return e
    try:
        m = {x: sp.Integer(assignment[x.name]) for x in e.free_symbols if x.name in assignment}
        if len(m) < len(e.free_symbols):
            return None
        v = e.xreplace(m)
    except (ZeroDivisionError, TypeError, ValueError, KeyError, AttributeError):
        return None
    if v is sp.true:
        return True
    if v is sp.false:
        return False
    if isinstance(v, sp.Expr) and v.is_Number and v.is_finite:
        return int(v) if v.is_Integer else v
    return None


def complete_assignment(
    assignment: Optional[Dict[str, int]], syms: Any, facts: tuple, timeout_ms: Optional[int] = None
) -> Optional[Dict[str, int]]:
    """``assignment`` extended with values for the other symbols of ``syms`` (and of the
    facts) such that every fact holds, checked exactly; None when none is found."""
    asg = dict(assignment or {})
    want = {x for x in syms} | {x for f in facts for x in f.free_symbols}
    if any(x.name not in asg for x in want):
        from . import smt

        try:
            m = smt.model_of(facts, want, asg, get_timeout() if timeout_ms is None else timeout_ms)
        except LayoutError:
            m = None
        if m is None:
            return None
        asg = m
    if all(exact_value(f, asg) is True for f in facts):
        return asg
    return None


def _confirmed(d: Decision) -> Decision:
    """A refutation whose assignment, substituted exactly, satisfies every fact and
    violates the condition; otherwise the decision becomes unknown (a solver's word alone
    never makes a refutation)."""
    c = d.cond
    if c is None:
        return d
    asg = complete_assignment(d.counterexample, c.free_symbols, d.facts)
    if asg is not None and exact_value(c, asg) is False:
        return Decision(
            False, d.method, counterexample=asg, reason=d.reason, seconds=d.seconds, cond=c, facts=d.facts
        )
    return Decision(
        None,
        d.method,
        reason="the solver's refutation is not confirmed by exact evaluation",
        seconds=d.seconds,
        cond=c,
        facts=d.facts,
    )


def holds(cond: Any) -> bool:
    """True only when ``cond`` is proved (False when refuted or unknown)."""
    return decide(cond).value is True


# ----------------------------------------------------------------------------- leaves
def norm_leaf(e: Any, what: str) -> Any:
    """A SymPy leaf as stored in a layout: numbers become ``int``; other expressions must be
    integer-valued (decided) and are returned as they are."""
    sp = _sympy()
    if not isinstance(e, sp.Expr):
        raise MalformedLayoutError(
            f"{what} leaves must be integers or SymPy integer expressions, got {show(e)}"
        )
    if e.is_Integer:
        return int(e)
    if e.is_Number:
        raise MalformedLayoutError(f"{what} has a non-integer value {e}")
    if e.is_integer:
        return e
    if e.is_integer is False:
        raise MalformedLayoutError(f"{what} leaf {e} is not an integer")
    if not all(s.is_integer for s in e.free_symbols):
        raise MalformedLayoutError(f"{what} leaf {e} has non-integer symbols; use layoutproof.symbols()")
    num, den = sp.fraction(sp.together(e))  # a quotient: integrality is a divisibility condition
    require(sp.Eq(sp.Mod(num, den), 0), op="layout", condition_name=f"{what} leaf {e} is an integer")
    return e


def check_extent(e: Any, what: str) -> Any:
    """A symbolic extent: integer-valued and decided >= 1."""
    e = norm_leaf(e, what)
    if type(e) is int:
        if e <= 0:
            raise MalformedLayoutError(f"{what} has a non-positive extent {e}; extents must be >= 1")
        return e
    d = decide(_sympy().Ge(e, 1))
    if d.value is True:
        return e
    if d.value is False:
        d = _confirmed(d)
    if d.value is False:
        raise MalformedLayoutError(f"{what} has the extent {e}, which is < 1 under the assumptions")
    raise UndecidableConditionError(
        f"{what} has the extent {e}, which needs {e} >= 1; not implied by the assumptions "
        f"({_facts_text(d.facts)})",
        condition=f"{e} >= 1",
        expr=_sympy().Ge(e, 1),
        counterexample=d.counterexample,
    )


def subs_tuple(t: Any, mapping: Dict[Any, Any]) -> Any:
    """Substitute in every leaf of an HTuple; numbers come back as ``int``."""
    if type(t) is tuple:
        return tuple(subs_tuple(e, mapping) for e in t)
    if is_sym(t):
        v = t.subs(mapping)
        if v.is_Integer:
            return int(v)
        return v
    return t


def free_symbols(t: Any) -> frozenset:
    out: set = set()
    stack = [t]
    while stack:
        x = stack.pop()
        if type(x) is tuple:
            stack.extend(x)
        elif is_sym(x):
            out |= x.free_symbols
    return frozenset(out)


def symbol_map(kw: Dict[str, Any], syms: frozenset) -> Dict[Any, Any]:
    by_name = {s.name: s for s in syms}
    out: Dict[Any, Any] = {}
    for k, v in kw.items():
        key = by_name.get(k) if isinstance(k, str) else k
        if key is None:
            key = _symbol(k)
        if type(v) is not int and not is_sym(v):
            from ..inttuple import is_int

            if is_int(v):
                v = int(v)
            else:
                raise MalformedLayoutError(
                    f"subs(): the value of {k} must be an integer or SymPy expression, got {show(v)}"
                )
        out[key] = v
    return out


def sym_list(x: Any) -> List[Any]:
    return sorted(free_symbols(x), key=lambda s: s.name)


# ----------------------------------------------------------------------------- evaluation
def _coord_symbol() -> Any:
    return _sympy().Symbol("i", integer=True, nonnegative=True)


def _split_1d(c: Any, fs: tuple) -> List[Any]:
    """The digits of a 1-D coordinate in the mixed radix ``fs`` (the last one unbounded:
    exact on the domain)."""
    sp = _sympy()
    out = []
    p: Any = 1
    last = len(fs) - 1
    for k, s in enumerate(fs):
        q = c if p == 1 else sp.floor(c / p) if is_sym(c) or is_sym(p) else c // p
        if k == last:
            out.append(q)
        else:
            out.append(sp.Mod(q, s) if is_sym(q) or is_sym(s) else q % s)
        p = p * s
    return out


def _in_range(c: Any, n: Any, full: Any) -> None:
    """Check ``0 <= c < n`` when ``c`` is a number (a symbolic coordinate is taken to be in
    the domain: the expression is the layout function there)."""
    if is_sym(c) and not c.is_Integer:
        return
    c = int(c)
    if c < 0:
        raise OutOfDomainError(f"coordinate {show(full)} is outside the domain: {c} < 0")
    if type(n) is int:
        if c >= n:
            raise OutOfDomainError(f"coordinate {show(full)} is outside the domain: {c} not in [0, {n})")
        return
    d = decide(_sympy().Lt(c, n))
    if d.value is True:
        return
    if d.value is False:
        d = _confirmed(d)
    if d.value is False:
        raise OutOfDomainError(f"coordinate {show(full)} is outside the domain: {c} not in [0, {n})")
    raise UndecidableConditionError(
        f"evaluating at {show(full)} needs {c} < {n} (the coordinate in the domain); not implied by "
        f"the assumptions ({_facts_text(d.facts)})",
        condition=f"{c} < {n}",
        expr=_sympy().Lt(c, n),
        counterexample=d.counterexample,
    )


def eval_parts(c: Any, s: Any, d: Any, full: Any) -> Tuple[list, list, Any]:
    """Kept modes (for ``_``) and the offset of a coordinate against a symbolic layout."""
    if c is None or isinstance(c, Underscore):
        return [s], [d], 0
    if type(c) is tuple or type(c) is list:
        if type(s) is not tuple or len(s) != len(c):
            raise MalformedLayoutError(
                f"coordinate {show(full)} does not fit the shape: {show(c)} against {show(s)}"
            )
        ks: list = []
        kd: list = []
        off: Any = 0
        for ci, si, di in zip(c, s, d):
            a, b, o = eval_parts(ci, si, di, full)
            ks += a
            kd += b
            off = off + o
        return ks, kd, off
    if is_int(c):
        c = int(c)
    elif not is_sym(c):
        raise MalformedLayoutError(f"coordinate leaves must be integers or SymPy expressions, got {show(c)}")
    _in_range(c, raw_product(s), full)
    fs, fd = raw_flatten(s), raw_flatten(d)
    digits = _split_1d(c, fs)
    off = 0
    for q, dd in zip(digits, fd):
        off = off + q * dd
    return [], [], off


def eval_symbolic(L: Any, args: tuple) -> Any:
    """``L(*args)`` when the layout or the coordinate is symbolic: an offset expression, or
    the sliced layout when the coordinate has ``_``."""
    if not args:
        raise MalformedLayoutError("a layout is evaluated at a coordinate; none given")
    c = args[0] if len(args) == 1 else tuple(args)
    ks, kd, off = eval_parts(c, L.shape, L.stride, c)
    if ks:  # a slice: the kept modes, as the integer slice gives them
        return Layout.trusted(tuple(ks), tuple(kd))
    return as_int(off)


def as_int(e: Any) -> Any:
    """A SymPy integer as ``int``; anything else unchanged."""
    if is_sym(e) and e.is_Integer:
        return int(e)
    return e


def layout_expr(L: Any, coord: Any = None) -> Any:
    """See :meth:`Layout.expr`."""
    sp = _sympy()
    fs, fd = raw_flatten(L.shape), raw_flatten(L.stride)
    if coord is None:
        coord = _coord_symbol()
    if type(coord) is tuple or type(coord) is list:
        return sp.sympify(eval_symbolic(L, (tuple(coord),)))
    if not is_int(coord) and not is_sym(coord):
        raise MalformedLayoutError(
            f"expr(): a coordinate is an int, a SymPy expression or a tuple, got {show(coord)}"
        )
    keep = [(s, d) for s, d in zip(fs, fd) if s != 1]
    if not keep:
        _in_range(coord, 1, coord)
        return sp.Integer(0)
    ks = tuple(k[0] for k in keep)
    _in_range(coord, L.size, coord)
    digits = _split_1d(sp.sympify(coord), ks)
    return sp.sympify(sum((q * d for q, (s, d) in zip(digits, keep)), sp.Integer(0)))


def subs_layout(L: Any, args: tuple, values: Dict[str, Any]) -> Any:
    """See :meth:`Layout.subs`."""
    if len(args) > 1 or (args and not isinstance(args[0], dict)):
        raise MalformedLayoutError("subs() takes one dict of values or keyword values (M=64)")
    kw: Dict[Any, Any] = dict(args[0]) if args else {}
    kw.update(values)
    if not L.is_symbolic:
        return L
    mapping = symbol_map(kw, L.free_symbols)
    return Layout(subs_tuple(L.shape, mapping), subs_tuple(L.stride, mapping))
