"""Concrete evaluation for the checks: every value of a layout-like object as a numpy array,
natural coordinates, exact integer evaluation of SymPy expressions, and substitution of
parameter values into layouts, tilers and arguments.

>>> from layoutproof import Layout, symbols
>>> M, N = symbols("M N")
>>> concretize(Layout((M, N), (1, M)), {"M": 4, "N": 2})
Layout((4, 2), (1, 4))
>>> int_eval((M * N) / 4 + 1, {"M": 4, "N": 2})
3
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Dict, Optional

from layoutproof.errors import LayoutError, MalformedLayoutError, show
from layoutproof.inttuple import idx2crd
from layoutproof.layout import Layout, Underscore
from layoutproof.symbolic import is_sym, is_symbolic

__all__ = [
    "values",
    "size_of",
    "natural",
    "int_eval",
    "concretize",
    "IllFormed",
    "is_sym",
    "is_symbolic",
    "lifted",
    "EXHAUSTIVE_LIMIT",
]

#: The largest domain evaluated exhaustively (elements); larger concrete claims go to Z3.
EXHAUSTIVE_LIMIT = 1 << 24


class IllFormed(LayoutError):
    """A parameter assignment makes a leaf non-integer or an extent non-positive."""


def lifted(x: Any) -> bool:
    """A swizzled or composed layout (a kind the algebra routes to its own operations)."""
    return getattr(type(x), "_lp_lifted", False) is True


def size_of(x: Any) -> Any:
    """The domain size of a layout-like object (a Layout, composed layout, swizzle, F2
    layout, a function wrapper) or of a shape."""
    if isinstance(x, Layout):
        return x.size
    n = getattr(x, "size", None)
    if n is not None and not callable(n):
        return n
    return Layout(x).size


def values(x: Any) -> Any:
    """Every value of a concrete layout-like object over its domain, as a numpy array in
    colexicographic order (vectorized where the object offers it)."""
    import numpy as np

    if isinstance(x, Layout):
        return x.eval_all()
    ev = getattr(x, "eval_all", None)
    if callable(ev):
        return ev()
    as_layout = getattr(x, "as_layout", None)  # a bare Swizzle: its domain is [0, size)
    if callable(as_layout):
        return as_layout().eval_all()
    if callable(x):
        n = size_of(x)
        if type(n) is not int:
            raise MalformedLayoutError(f"cannot evaluate {x!r}: its size is not an integer")
        out = [_int_value(x(i), i, x) for i in range(n)]
        try:
            return np.array(out, dtype=np.int64)
        except (OverflowError, TypeError, ValueError):
            arr = np.empty(n, dtype=object)
            arr[:] = out
            return arr
    return Layout(x).eval_all()


def _int_value(v: Any, i: int, fn: Any) -> int:
    """A value of a wrapped Python function as an int: ints, numpy integers and integral
    SymPy numbers are; anything else (0.25, 3.0, a string, None) is not an offset and is
    refused with the coordinate, never truncated."""
    if type(v) is int:
        return v
    if type(v) is not bool and hasattr(v, "__index__") and not isinstance(v, float):
        try:
            return int(v.__index__())
        except (TypeError, ValueError, OverflowError):
            pass
    if is_sym(v) and getattr(v, "is_Integer", False):
        return int(v)
    raise MalformedLayoutError(
        f"{show(fn)} returned {show(v)} ({type(v).__name__}) at coordinate {i}: a layout's values are "
        "integers"
    )


def natural(i: int, x: Any) -> Any:
    """The natural coordinate of the 1-D coordinate ``i`` in the domain of ``x``."""
    shape = getattr(x, "shape", None)
    if shape is None or is_symbolic(shape):
        return i
    try:
        return idx2crd(int(i), shape)
    except LayoutError:
        return i


def py(v: Any) -> Any:
    """numpy scalars (and arrays of tuples' items) as plain Python values."""
    if hasattr(v, "item") and not isinstance(v, tuple):
        try:
            return v.item()
        except (ValueError, AttributeError):
            return v
    return v


# ----------------------------------------------------------------------------- exact evaluation
class _NotEvaluable(LayoutError):
    pass


def int_eval(e: Any, env: Dict[str, int]) -> Any:
    """Evaluate a SymPy integer expression or condition exactly at ``env`` (symbol name ->
    int): an ``int`` (or ``bool`` for conditions); a non-integer value raises
    :class:`IllFormed`."""
    v = _ev(e, env)
    if isinstance(v, bool):
        return v
    if isinstance(v, Fraction):
        if v.denominator != 1:
            raise IllFormed(f"{e} is not an integer at {_assign(env)} ({v})")
        return int(v)
    return v


def _assign(env: Dict[str, int]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sorted(env.items()))


def _ev(e: Any, env: Dict[str, int]) -> Any:  # noqa: C901 - one case per SymPy node type
    if type(e) is int or type(e) is bool:
        return e
    import sympy as sp

    if e is sp.true:
        return True
    if e is sp.false:
        return False
    if e.is_Integer:
        return int(e)
    if e.is_Rational:
        return Fraction(int(e.p), int(e.q))
    if e.is_Symbol:
        try:
            return env[e.name]
        except KeyError:
            raise _NotEvaluable(f"no value for {e.name}") from None
    args = e.args
    if isinstance(e, sp.Add):
        out: Any = 0
        for a in args:
            out = out + _ev(a, env)
        return out
    if isinstance(e, sp.Mul):
        out = 1
        for a in args:
            out = out * _ev(a, env)
        return out
    if isinstance(e, sp.Pow):
        b, x = _ev(args[0], env), _ev(args[1], env)
        if not isinstance(x, int) or abs(x) > 4096:
            raise _NotEvaluable(f"unsupported power {e}")
        if x < 0:
            if b == 0:
                raise IllFormed(f"division by zero in {e} at {_assign(env)}")
            return Fraction(1) / (Fraction(b) ** -x)
        return b**x
    if isinstance(e, sp.Mod):
        a, b = _ev(args[0], env), _ev(args[1], env)
        if b == 0:
            raise IllFormed(f"modulo by zero in {e} at {_assign(env)}")
        return a % b
    if isinstance(e, sp.floor):
        return math.floor(_ev(args[0], env))
    if isinstance(e, sp.ceiling):
        return math.ceil(_ev(args[0], env))
    if isinstance(e, sp.Min):
        return min(_ev(a, env) for a in args)
    if isinstance(e, sp.Max):
        return max(_ev(a, env) for a in args)
    if isinstance(e, sp.Abs):
        return abs(_ev(args[0], env))
    if isinstance(e, sp.Eq):
        return _ev(args[0], env) == _ev(args[1], env)
    if isinstance(e, sp.Ne):
        return _ev(args[0], env) != _ev(args[1], env)
    if isinstance(e, sp.StrictLessThan):
        return _ev(e.lhs, env) < _ev(e.rhs, env)
    if isinstance(e, sp.LessThan):
        return _ev(e.lhs, env) <= _ev(e.rhs, env)
    if isinstance(e, sp.StrictGreaterThan):
        return _ev(e.lhs, env) > _ev(e.rhs, env)
    if isinstance(e, sp.GreaterThan):
        return _ev(e.lhs, env) >= _ev(e.rhs, env)
    if isinstance(e, sp.And):
        return all(_ev(a, env) for a in args)
    if isinstance(e, sp.Or):
        return any(_ev(a, env) for a in args)
    if isinstance(e, sp.Not):
        return not _ev(args[0], env)
    if isinstance(e, sp.Implies):
        return (not _ev(args[0], env)) or bool(_ev(args[1], env))
    if isinstance(e, sp.Piecewise):
        for val, cond in args:
            if _ev(cond, env):
                return _ev(val, env)
        raise _NotEvaluable(f"no branch of {e} applies")
    raise _NotEvaluable(f"cannot evaluate {type(e).__name__} {str(e)[:60]}")


def holds(cond: Any, env: Dict[str, int]) -> Optional[bool]:
    """The truth of a SymPy condition at ``env``; None when it cannot be evaluated (a
    division by zero, a symbol without value)."""
    try:
        return bool(_ev(cond, env))
    except (IllFormed, _NotEvaluable, ZeroDivisionError):
        return None


def concretize(x: Any, env: Dict[str, int]) -> Any:
    """``x`` (a Layout, leaf, tiler, tuple, ``None``/``_``, or anything without symbols)
    with the parameters replaced by the values of ``env`` (symbol name -> int).  Raises
    :class:`IllFormed` when a leaf is not an integer or a layout is not well formed there."""
    if type(x) is int or x is None or isinstance(x, Underscore):
        return x
    if isinstance(x, Layout):
        if not x.is_symbolic:
            return x
        try:
            return Layout(_leaves(x.shape, env), _leaves(x.stride, env))
        except MalformedLayoutError as e:
            raise IllFormed(str(e)) from None
    if type(x) is tuple or type(x) is list:
        return tuple(concretize(e, env) for e in x)
    if is_sym(x):
        try:
            return int_eval(x, env)
        except _NotEvaluable as e:
            raise IllFormed(str(e)) from None
    return x


def _leaves(t: Any, env: Dict[str, int]) -> Any:
    if type(t) is tuple:
        return tuple(_leaves(e, env) for e in t)
    if is_sym(t):
        try:
            return int_eval(t, env)
        except _NotEvaluable as e:
            raise IllFormed(str(e)) from None
    return t
