"""The C semantics of the kernel IR: an expression's value and type at every point of a
domain at once.

:func:`eval_expr` evaluates a :mod:`~layoutproof.gpu.proof.kir` expression in a :class:`Ctx`
(the values of the domain variables and symbols as broadcasting numpy arrays, the definitions
to inline, the per-thread tables, the element sizes) with C semantics: integer widths and
signedness, the usual arithmetic conversions, truncating ``/`` and ``%``, pointer arithmetic
scaled by the element size, calls of proven functions through their bodies, layout
applications (:class:`~layoutproof.gpu.proof.kir.LayoutApp`) through the algebra's own table
of the layout.  Undefined behaviour (signed overflow, a shift out of range, division by zero)
and an index outside its table or layout domain raise :class:`EvalFailure`;
:mod:`~layoutproof.gpu.proof.obligations` turns that into a failed proof.  :func:`ev` is the
convenience for closed expressions.

>>> from layoutproof.gpu.proof.kir import Bin, Const
>>> ev(Bin("/", Const(-7), Const(2)), {}).tolist()
-3
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

import numpy as np

from layoutproof.inttuple import product

from ..errors import ProofFailedError
from .kir import (
    INT_TYPES,
    AddrOf,
    AlignUp,
    AtomicAdd,
    Bin,
    Call,
    Cast,
    Cond,
    Const,
    Expr,
    FnCall,
    Inc,
    Index,
    LayoutApp,
    MbarRef,
    Mem,
    Reinterpret,
    TableDecl,
    Un,
    Var,
    emit_expr,
    is_ptr,
    pointee,
    walk,
)

__all__ = ["EvalFailure", "Ctx", "ev", "eval_expr"]


class EvalFailure(Exception):
    """An expression without a value here, or one whose C evaluation is undefined (signed
    overflow, a shift out of range, division by zero, an index outside its table or layout):
    the violated ``condition``, a ``message`` and a ``witness``."""

    def __init__(self, condition: str, message: str, witness: Any = None) -> None:
        super().__init__(message)
        self.condition = condition
        self.message = message
        self.witness = witness


def _wrap(v: np.ndarray, t: str) -> np.ndarray:
    bits, signed = INT_TYPES.get(t, (64, True))
    if bits >= 64:
        return v
    m = np.int64(1) << bits
    lo, hi = (-(m >> 1), (m >> 1) - 1) if signed else (0, m - 1)
    if np.ndim(v) == 0:
        if lo <= int(v) <= hi:
            return v
    elif v.size == 0 or (v.min() >= lo and v.max() <= hi):
        return v
    v = np.mod(v, m)
    if signed:
        v = np.where(v >= (m >> 1), v - m, v)
    return v


def _conv(ta: str, tb: str) -> str:
    """The usual arithmetic conversions of two integer types (bool and short promote)."""

    def promote(t: str) -> str:
        return "int" if t in ("bool", "unsigned short") else t

    ta, tb = promote(ta), promote(tb)
    if ta == tb:
        return ta
    ba, sa = INT_TYPES.get(ta, (64, True))
    bb, sb = INT_TYPES.get(tb, (64, True))
    if ba == bb:
        return ta if not sa else tb
    return ta if ba > bb else tb


def _tdiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.any(b == 0):
        raise EvalFailure("division by zero", "an index expression divides by zero")
    if np.all(b > 0) and np.all(a >= 0):
        return a // b
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) ^ (b < 0), -q, q)


class Ctx:
    """Evaluation context: values of domain variables and symbols, the definitions to
    inline, per-thread tables, element sizes of pointer types."""

    def __init__(
        self,
        env: Dict[int, np.ndarray],
        defs: Dict[int, Expr],
        tables: Dict[int, TableDecl],
        sizes: Dict[str, int],
        align_pad: Optional[np.ndarray] = None,
    ) -> None:
        self.env = env
        self.defs = defs
        self.tables = tables
        self.sizes = sizes
        self.align_pad = align_pad
        self.memo: Dict[int, Tuple[np.ndarray, str]] = {}
        self.mask: Any = True  # where the values matter (index checks only there)


def ev(e: Expr, env: Dict[str, Any]) -> np.ndarray:
    """Evaluate ``e`` with C semantics; ``env`` maps variable names to values (numpy
    broadcasting).  Convenience for closed expressions and tests."""
    names: Dict[int, np.ndarray] = {}
    for n in walk(e):
        if isinstance(n, Var) and n.name in env:
            names[id(n)] = np.asarray(env[n.name], dtype=np.int64)
    ctx = Ctx(names, {}, {}, {})
    try:
        return eval_expr(e, ctx)[0]
    except EvalFailure as f:
        raise ProofFailedError(f.message, condition=f.condition, witness=f.witness) from None


def _size(t: str, ctx: Ctx) -> int:
    base = pointee(t)
    if base in ctx.sizes:
        return ctx.sizes[base]
    raise EvalFailure("typed pointers", f"unknown element size of {t!r}")


def eval_expr(e: Expr, ctx: Ctx) -> Tuple[np.ndarray, str]:
    """``e`` evaluated with C semantics in ``ctx`` (vectorized over the arrays bound there):
    its value and its C type."""
    if isinstance(e, Const):
        return np.int64(e.value), e.ctype
    if isinstance(e, Var):
        return _eval_var(e, ctx)
    if isinstance(e, Bin):
        return _eval_bin(e, ctx)
    if isinstance(e, Un):
        a, t = eval_expr(e.a, ctx)
        if e.op == "-":
            return _wrap(-a, _conv(t, t)), _conv(t, t)
        if e.op == "~":
            return _wrap(~a, _conv(t, t)), _conv(t, t)
        return (a == 0).astype(np.int64), "bool"
    if isinstance(e, Cast):
        a, t = eval_expr(e.a, ctx)
        if is_ptr(e.ctype):
            return a, e.ctype
        return _wrap(a, e.ctype), e.ctype
    if isinstance(e, Reinterpret):
        a, _t = eval_expr(e.a, ctx)
        return a, e.ctype
    if isinstance(e, Cond):
        c, _ = eval_expr(e.c, ctx)
        a, ta = eval_expr(e.a, ctx)
        b, tb = eval_expr(e.b, ctx)
        return np.where(c != 0, a, b), ta if is_ptr(ta) else _conv(ta, tb)
    if isinstance(e, Call):
        return _eval_call(e, ctx)
    if isinstance(e, FnCall):
        return _eval_fn_call(e, ctx)
    if isinstance(e, Index):
        return _eval_index(e, ctx)
    if isinstance(e, Inc):
        v, t = eval_expr(e.v, ctx)
        return v + 1, t
    if isinstance(e, LayoutApp):
        return _layout_app(e, ctx), "long long"
    if isinstance(e, AlignUp):
        a, t = eval_expr(e.a, ctx)
        if ctx.align_pad is None:
            raise EvalFailure("index values known", "an aligned base needs its padding symbol")
        return a + ctx.align_pad, t
    if isinstance(e, MbarRef):
        b, _ = eval_expr(e.base, ctx)
        i, _ = eval_expr(e.idx, ctx)
        return b + 8 * i, "unsigned"
    if isinstance(e, (Mem, AtomicAdd)):
        raise EvalFailure("index values known", "a loaded value is not an index", emit_expr(e))
    if isinstance(e, AddrOf):
        raise EvalFailure("index values known", "an address of a register is not an index")
    raise EvalFailure("IR expression", f"cannot evaluate {type(e).__name__}")


def _eval_var(e: Var, ctx: Ctx) -> Tuple[np.ndarray, str]:
    """A variable: its bound value, else its definition evaluated (once, wrapped to its
    type unless a pointer)."""
    k = id(e)
    if k in ctx.env:
        return ctx.env[k], e.ctype
    if k in ctx.memo:
        return ctx.memo[k]
    if k in ctx.defs:
        v, t = eval_expr(ctx.defs[k], ctx)
        if not is_ptr(e.ctype):
            v = _wrap(v, e.ctype)
        t = e.ctype
        ctx.memo[k] = (v, t)
        return v, t
    raise EvalFailure("index values known", f"variable {e.name} has no value here", e.name)


_COMPARE = {
    "<": np.less,
    "<=": np.less_equal,
    ">": np.greater,
    ">=": np.greater_equal,
    "==": np.equal,
    "!=": np.not_equal,
}


def _eval_bin(e: Bin, ctx: Ctx) -> Tuple[np.ndarray, str]:
    """A binary operator: logic, pointer arithmetic, shifts, comparisons, then integer
    arithmetic in the usual arithmetic conversions (signed overflow refuted)."""
    a, ta = eval_expr(e.a, ctx)
    b, tb = eval_expr(e.b, ctx)
    op = e.op
    if op in ("&&", "||"):
        r = (a != 0) & (b != 0) if op == "&&" else (a != 0) | (b != 0)
        return r.astype(np.int64), "bool"
    if is_ptr(ta) or is_ptr(tb):
        return _eval_pointer_arith(op, a, ta, b, tb, ctx)
    if op in ("<<", ">>"):
        return _eval_shift(op, a, ta, b)
    t = _conv(ta, tb)
    bits, signed = INT_TYPES.get(t, (64, True))
    if not signed:
        a, b = _wrap(a, t), _wrap(b, t)
    if op in _COMPARE:
        return np.asarray(_COMPARE[op](a, b)).astype(np.int64), "bool"
    r = _integer_op(op, a, b)
    if signed and bits < 64:
        lim = np.int64(1) << (bits - 1)
        bad = (np.asarray(r) >= lim) | (np.asarray(r) < -lim)
        if np.any(bad):
            raise EvalFailure("no signed overflow", f"{emit_expr(e)} overflows {t}")
    return _wrap(np.asarray(r), t), t


def _eval_pointer_arith(
    op: str, a: np.ndarray, ta: str, b: np.ndarray, tb: str, ctx: Ctx
) -> Tuple[np.ndarray, str]:
    """``p + i``, ``i + p``, ``p - i``: the byte address, scaled by the element size."""
    if op == "+" and is_ptr(ta) and not is_ptr(tb):
        return a + b * _size(ta, ctx), ta
    if op == "+" and is_ptr(tb):
        return b + a * _size(tb, ctx), tb
    if op == "-" and is_ptr(ta) and not is_ptr(tb):
        return a - b * _size(ta, ctx), ta
    raise EvalFailure("typed pointers", f"pointer arithmetic {op} not supported")


def _eval_shift(op: str, a: np.ndarray, ta: str, b: np.ndarray) -> Tuple[np.ndarray, str]:
    """``a << b``, ``a >> b`` in the promoted type of ``a``: the count in range, no
    negative value shifted."""
    t = _conv(ta, ta)
    if np.any(b < 0) or np.any(b >= INT_TYPES.get(t, (64, True))[0]):
        raise EvalFailure("shift in range", "a shift count is negative or too large")
    if INT_TYPES.get(t, (64, True))[1] and np.any(a < 0):
        raise EvalFailure("no shift of a negative value", "a negative value is shifted")
    r = (a << b) if op == "<<" else (a >> b)
    return _wrap(r, t), t


def _integer_op(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``+ - * / % & | ^`` on int64 values (``/`` and ``%`` truncate, as C does)."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    if op == "/":
        return _tdiv(a, b)
    if op == "%":
        return a - b * _tdiv(a, b)
    if op == "&":
        return a & b
    if op == "|":
        return a | b
    if op == "^":
        return a ^ b
    raise EvalFailure("IR expression", f"unknown operator {op}")


def _eval_call(e: Call, ctx: Ctx) -> Tuple[np.ndarray, str]:
    """The builtins with an integer value: ``min``, ``max``, ``__cvta_generic_to_shared``."""
    vals = [eval_expr(a, ctx) for a in e.args]
    if e.name in ("min", "max") and len(vals) == 2:
        f = np.minimum if e.name == "min" else np.maximum
        return f(vals[0][0], vals[1][0]), _conv(vals[0][1], vals[1][1])
    if e.name == "__cvta_generic_to_shared" and len(vals) == 1:
        return vals[0][0], "unsigned"
    raise EvalFailure("index values known", f"{e.name}(...) has no integer value here", e.name)


def _eval_fn_call(e: FnCall, ctx: Ctx) -> Tuple[np.ndarray, str]:
    """A proven function's body evaluated with its parameters bound to the arguments
    (each wrapped to its parameter type)."""
    by = dict(e.args)
    env = dict(ctx.env)
    pv: Dict[str, Var] = {}
    for n in walk(e.fn.body):
        if isinstance(n, Var):
            pv[n.name] = n
    for t, n in e.fn.params:
        v, _ = eval_expr(by[n], ctx)
        if n in pv:
            env[id(pv[n])] = _wrap(np.asarray(v), t)
    sub = Ctx(env, {}, {}, ctx.sizes)
    sub.mask = ctx.mask
    v, _t = eval_expr(e.fn.body, sub)
    return v, e.fn.ret


def _eval_index(e: Index, ctx: Ctx) -> Tuple[np.ndarray, str]:
    """A read of a per-thread table (its index in range where the values matter); any
    other indexed value is a register, with no value here."""
    ib = e.base
    if isinstance(ib, Var) and id(ib) in ctx.tables and len(e.idx) == 1:
        tab = ctx.tables[id(ib)]
        j, _ = eval_expr(e.idx[0], ctx)
        out = (j < 0) | (j >= tab.n)
        if np.any(out & ctx.mask):
            raise EvalFailure("table index in range", f"{ib.name}[...] read outside [0, {tab.n})")
        if np.any(out):
            j = np.where(out, 0, j)
        env = dict(ctx.env)
        env[id(tab.j)] = np.asarray(j)
        sub = Ctx(env, ctx.defs, ctx.tables, ctx.sizes, ctx.align_pad)
        sub.mask = ctx.mask
        return eval_expr(tab.value, sub)
    raise EvalFailure("index values known", f"{emit_expr(e)} is a register value", emit_expr(e))


_TABLES: Dict[int, Tuple[Any, np.ndarray, Tuple[int, ...]]] = {}


def _layout_table(L: Any) -> Tuple[np.ndarray, Tuple[int, ...]]:
    hit = _TABLES.get(id(L))
    if hit is not None and hit[0] is L:
        return hit[1], hit[2]
    vals = np.asarray(L.eval_all(), dtype=np.int64).reshape(-1)
    shape = L.shape if hasattr(L, "shape") else L.layout_b.shape
    if not isinstance(shape, tuple):
        shape = (shape,)
    sizes = tuple(int(product(s)) for s in shape)
    _TABLES[id(L)] = (L, vals, sizes)
    return vals, sizes


def _layout_app(e: LayoutApp, ctx: Ctx) -> np.ndarray:
    vals, sizes = _layout_table(e.layout)
    if len(e.coords) != len(sizes):
        raise EvalFailure(
            "layout coordinate in domain",
            f"{e.what or e.layout}: {len(e.coords)} coordinates for {len(sizes)} modes",
        )
    flat = np.int64(0)
    mul = 1
    for c, n in zip(e.coords, sizes):
        v, _ = eval_expr(c, ctx)
        out = (v < 0) | (v >= n)
        if np.any(out & ctx.mask):
            sel = np.broadcast_to(out & ctx.mask, np.broadcast(out, ctx.mask).shape)
            vb = np.broadcast_to(v, sel.shape)
            bad = int(vb.reshape(-1)[np.flatnonzero(sel.reshape(-1))[0]])
            raise EvalFailure(
                "layout coordinate in domain",
                f"{e.what or e.layout}: coordinate {bad} outside [0, {n}) of a mode",
                bad,
            )
        if np.any(out):
            v = np.where(out, 0, v)
        flat = flat + v * mul
        mul *= n
    return vals[flat]
