"""The one error hierarchy of layoutproof.

Every failure the library reports on bad input is a :class:`LayoutError` (itself a
``ValueError``).  Subclasses say *what kind* of failure it is:

* :class:`MalformedLayoutError` -- the input is not a layout (non-congruent shape and
  stride, a non-positive extent, a leaf that is not an integer, ...).
* :class:`InadmissibleError` -- an operation's side condition does not hold; carries the
  violated ``condition`` and, where one exists, a ``witness`` (a coordinate at which the
  result a less careful implementation returns is wrong).
* :class:`OutOfDomainError` -- a coordinate outside a layout's domain (also an
  ``IndexError`` so that Python's sequence protocols behave).
* :class:`UndecidableConditionError` -- a symbolic side condition that cannot be decided
  from the active assumptions; carries the ``condition`` to assume.
"""

from __future__ import annotations

import reprlib
from typing import Any

_REPR = reprlib.Repr()
_REPR.maxlevel = 4
_REPR.maxtuple = _REPR.maxlist = 8
_REPR.maxstring = _REPR.maxother = 60


def show(x: Any) -> str:
    """A short, depth-limited repr for error messages (safe on deeply nested garbage)."""
    try:
        return _REPR.repr(x)
    except Exception:  # a hostile __repr__ must not hide the real error
        return f"<{type(x).__name__}>"


__all__ = [
    "LayoutError",
    "MalformedLayoutError",
    "InadmissibleError",
    "OutOfDomainError",
    "UndecidableConditionError",
]


class LayoutError(ValueError):
    """Base class of every error layoutproof raises on bad input."""


class MalformedLayoutError(LayoutError):
    """The value given is not a well-formed shape, stride, coordinate or layout."""


class InadmissibleError(LayoutError):
    """An operation's side condition is violated.

    Attributes:
        condition: the name of the violated condition, e.g. ``"stride divisibility"``.
        witness: a coordinate showing the failure, or ``None`` when there is none.
    """

    def __init__(self, message: str, *, condition: str, witness: Any = None) -> None:
        super().__init__(message)
        self.condition = condition
        self.witness = witness


class OutOfDomainError(LayoutError, IndexError):
    """A coordinate (or mode index) lies outside the domain it is applied to."""


class UndecidableConditionError(LayoutError):
    """A side condition cannot be decided: a symbolic one from the active assumptions, or
    (integer operands) one the exact decision procedure cannot settle within its bound --
    e.g. composition past ``ops.EXACT_LIMIT`` where only CuTe's sufficient condition fails.
    Never a refusal: the operation may well be admissible.

    Attributes:
        condition: the condition that, once assumed (or refuted), makes it decidable (text
            in Python syntax, readable by ``layoutproof.symbolic.parse_expr``); for integer
            operands the name of the undecided condition (e.g. ``"stride divisibility"``).
        expr: the same condition as a SymPy expression, when there is one.
        counterexample: values of the symbols (name -> int) that satisfy the assumptions
            and violate the condition, when one was found.
        example: values of the symbols that satisfy the assumptions and the condition, when
            one was found (with ``counterexample``: the assumptions leave it open).
    """

    def __init__(
        self,
        message: str,
        *,
        condition: Any,
        expr: Any = None,
        counterexample: Any = None,
        example: Any = None,
    ) -> None:
        super().__init__(message)
        self.condition = condition
        self.expr = expr
        self.counterexample = counterexample
        self.example = example
