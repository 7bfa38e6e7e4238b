"""Functional equality of layouts, and compatibility of shapes.

Two layouts are *equal as functions* when they have the same size and the same offset at
every 1-D coordinate of the domain (their shapes may differ: ``(4,2):(1,4)`` equals
``8:1``).  Concrete layouts are compared exhaustively (every offset, vectorized with
numpy: complete, and about a millisecond per million elements); swizzled and composed
layouts, F2 layouts and any object with ``size`` and ``__call__`` are compared by their
values too.

>>> from layoutproof import Layout
>>> equal(Layout((4, 2), (1, 4)), Layout(8, 1)).status
'proved'
>>> r = equal(Layout((3, 2), (2, 3)), Layout((3, 2), (2, 4)))
>>> print(r.counterexample)
coordinate 3 = (0,1): 3 != 4

Symbolic layouts are compared by Z3 over the 1-D coordinate ``i`` and the parameters,
under the active :func:`~layoutproof.assuming` facts plus ``assume``: the sizes must be
equal and ``0 <= i < size and A(i) != B(i)`` unsatisfiable.  A model is a counterexample
(the coordinate and the parameter values), confirmed by evaluating both layouts there.

>>> from layoutproof import symbols
>>> M, N = symbols("M N")
>>> equal(Layout((M, N), (1, M)), Layout(M * N, 1)).status
'proved'
>>> r = equal(Layout((M, N), (1, M)), Layout((M, N), (N, 1)))
>>> r.status, r.counterexample.assignment, r.counterexample.coordinate
('refuted', {'M': 2, 'N': 2}, 1)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Optional

from layoutproof.errors import LayoutError, MalformedLayoutError, show
from layoutproof.inttuple import raw_product
from layoutproof.layout import Layout, fmt_htuple

from ._bounded import MAX_CASES
from ._concrete import is_symbolic, lifted
from ._engine import Fail
from ._run import call_budgeted, check_arity, guard_args, run
from .result import Counterexample, Result

__all__ = ["equal", "compatible", "function"]


def _describe(x: Any) -> str:
    return str(x) if isinstance(x, Layout) or lifted(x) else repr(x)


def layoutish(x: Any, what: str) -> Any:
    if isinstance(x, type):
        raise LayoutError(f"{what}: expected a layout, got the class {x.__name__}")
    if isinstance(x, Layout) or lifted(x):
        return x
    if isinstance(x, str):
        return Layout.parse(x)
    if hasattr(x, "eval_all") or (callable(x) and hasattr(x, "size")):
        return x
    if type(x) is int or type(x) is tuple or is_symbolic(x):
        return Layout(x)
    raise LayoutError(f"{what}: expected a layout, got {type(x).__name__} {x!r:.60}")


def equal(
    A: Any,
    B: Any,
    *,
    assume: Any = (),
    timeout_ms: Optional[int] = None,
    bounds: Any = False,
    max_cases: int = MAX_CASES,
    deadline: Optional[float] = None,
) -> Result:
    """Is ``A`` equal to ``B`` as a function on the domain (same size, same offset at
    every 1-D coordinate)?

    ``A`` and ``B`` are layouts (a string is parsed as CuTe notation; a shape is its
    compact layout), composed layouts, swizzles or :func:`function` wrappers.  Concrete:
    exhaustive, "proved" or "refuted" at the first differing coordinate.  Symbolic: Z3
    under the assumptions (``assume``: a condition or a list of them, added to the active
    ones), each call limited to ``timeout_ms`` (default
    :func:`layoutproof.symbolic.get_timeout`); "unknown" with the reason when Z3 does not
    answer.  With ``bounds`` (an int, ``(lo, hi)`` or a dict per parameter; None for the
    default box) an unknown falls back to checking every parameter assignment in the box
    ("checked").  The whole check runs within ``deadline`` seconds (default
    :func:`layoutproof.budget.get_deadline`); past it the result is "unknown" ("timeout").

    >>> equal("(2,4):(4,1)", "(2,4):(1,2)").counterexample.natural
    (1, 0)
    """
    return call_budgeted(_equal, "equal", deadline, A, B, assume, timeout_ms, bounds, max_cases)


def _equal(A: Any, B: Any, assume: Any, timeout_ms: Optional[int], bounds: Any, max_cases: int) -> Result:
    guard_args(A, B)
    A = layoutish(A, "equal")
    B = layoutish(B, "equal")
    claim = f"{_describe(A)} == {_describe(B)}"
    return run(
        claim,
        lambda eng, a, b: eng.same_function(a, b, ""),
        [A, B],
        assume=assume,
        timeout_ms=timeout_ms,
        bounds=bounds,
        max_cases=max_cases,
    )


_NO_SHAPE: Any = object()


@dataclass(frozen=True, slots=True, init=False, repr=False, eq=False)
class function:  # noqa: N801 - used like a function: verify.function(f, shape)
    """A Python function of the 1-D coordinate over the domain of ``shape``, usable where a
    layout is checked (:func:`equal`).  It is evaluated element by element.

    >>> from layoutproof import Layout
    >>> A, B = Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3))
    >>> r = equal(Layout((3, 2), (2, 3)), function(lambda i: A(B(i)), (3, 2)))
    >>> r.status, r.counterexample.coordinate, r.counterexample.natural
    ('refuted', 5, (2, 1))
    """

    fn: Callable[[int], Any]
    layout: Layout
    shape: Any
    size: int

    def __init__(self, fn: Any, shape: Any = _NO_SHAPE) -> None:
        if not callable(fn):
            raise LayoutError(f"function(fn, shape): fn must be callable, got {fn!r:.60}")
        if shape is _NO_SHAPE:
            raise MalformedLayoutError(
                "function(fn, shape): the shape of the coordinates fn is defined on is missing"
            )
        check_arity(fn, ["i"], "function(fn, shape): fn")
        layout = Layout(shape)
        s = object.__setattr__  # a frozen record: set once, here
        s(self, "fn", fn)
        s(self, "layout", layout)
        s(self, "shape", layout.shape)
        s(self, "size", layout.size)

    def __call__(self, i: int) -> Any:
        return self.fn(i)

    def __repr__(self) -> str:
        name = getattr(self.fn, "__name__", "fn")
        return f"function({name}, {self.layout.shape})"


def compatible(
    S: Any, T: Any, *, assume: Any = (), timeout_ms: Optional[int] = None, deadline: Optional[float] = None
) -> Result:
    """Is shape ``S`` compatible with shape ``T`` (same size, and every coordinate of ``S``
    is a coordinate of ``T``: ``S`` is ``T`` with some modes merged)?  Shapes or layouts,
    concrete or symbolic (each size equality decided under the assumptions).

    >>> compatible(12, (4, 3)).status, compatible((4, 3), 12).status
    ('proved', 'refuted')
    >>> print(compatible((4, 6), (4, (2, 2))).counterexample)
    mode 1: 6 != 4
    """
    return call_budgeted(_compatible, "compatible", deadline, S, T, assume, timeout_ms)


def _symbolic_shape(x: Any) -> None:
    """Every leaf of a symbolic shape is an int or a SymPy expression (its integrality and
    positivity are part of the claim, decided with it)."""
    import sympy as sp

    stack = [x]
    while stack:
        t = stack.pop()
        if type(t) is tuple:
            stack.extend(t)
        elif type(t) is not int and not isinstance(t, sp.Expr):
            raise LayoutError(
                f"compatible: a shape leaf must be an integer or a SymPy expression, got {show(t)}"
            )


def _compatible(S: Any, T: Any, assume: Any, timeout_ms: Optional[int]) -> Result:
    guard_args(S, T)
    for x in (S, T):  # each a layout or a well-formed shape (MalformedLayoutError otherwise)
        if not isinstance(x, Layout):
            if is_symbolic(x):
                _symbolic_shape(x)
            else:
                Layout(x)
    sa = S.shape if isinstance(S, Layout) else S
    sb = T.shape if isinstance(T, Layout) else T
    t0 = time.perf_counter()
    claim = f"{fmt_htuple(sa)} compatible with {fmt_htuple(sb)}"

    def check(eng: Any, a: Any, b: Any) -> None:
        def walk(x: Any, y: Any, path: str) -> None:
            if type(x) is tuple:
                if type(y) is not tuple or len(x) != len(y):
                    raise Fail(
                        Counterexample(
                            detail=f"{path or 'shape'}: {fmt_htuple(x)} has {len(x)} modes, "
                            f"{fmt_htuple(y)} {'is not a tuple' if type(y) is not tuple else len(y)}"
                        )
                    )
                for k, (u, v) in enumerate(zip(x, y)):
                    walk(u, v, f"{path}mode {k}" if not path else f"{path}.{k}")
                return
            py = raw_product(y)
            if eng.symbolic:
                import sympy as sp

                eng.add(f"{path or 'shape'}: {x} == size {fmt_htuple(y)}", sp.Eq(x, py))
            elif x != py:
                raise Fail(Counterexample(detail=f"{path or 'shape'}", lhs=x, rhs=py))

        walk(a, b, "")

    r = run(claim, check, [sa, sb], assume=assume, timeout_ms=timeout_ms, bounds=False)
    return r.replace(seconds=time.perf_counter() - t0)
