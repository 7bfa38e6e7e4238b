"""The dispatch registry: every kind of layout answers for itself.

The base algebra (:mod:`~layoutproof.inttuple`, :mod:`~layoutproof.layout`,
:mod:`~layoutproof.arith`, :mod:`~layoutproof.ops`) works on plain integer layouts and
never imports the modules that extend it.  An operation handles a plain
:class:`~layoutproof.layout.Layout` itself (the fast path, tested first with
``type(x) is Layout``) and asks this registry only on its slow branch:

* another kind of layout (a Swizzle, a ComposedLayout, a kind a user defines): the module
  that defines the kind registers its implementation of the operation under the class,
  ``register("coalesce", ComposedLayout)(fn)``, and the core calls
  ``call("coalesce", layout, profile)``, which finds ``fn`` by the argument's type (its
  classes in method-resolution order, as :func:`functools.singledispatch` does).

  An implementation takes the arguments in the order of the core function it stands in
  for: a binary operation (``composition``) passes both, and the core looks the
  implementation up by the argument that is not a plain layout.  A kind registers the
  accessors it has as well -- ``size`` (what makes it a kind of layout), ``cosize``,
  ``shape``, ``rank``, ``depth``, ``slice_and_offset`` -- which the free functions of
  :mod:`layoutproof.layout` ask for;
* a plain layout holding SymPy leaves: the symbolic layer registers its implementation
  under the marker :data:`SYMBOLIC` (``layoutproof.symbolic.register``) and the core
  calls ``call_symbolic("coalesce", layout)``;
* a plain layout holding strides of another algebra (F2, whose ``+`` is XOR; the class
  carries the marker ``_lp_stride_scalar``): :mod:`layoutproof.f2` registers its
  implementations under the marker :data:`STRIDE_SCALARS` and the core calls
  ``call_kind("composition", STRIDE_SCALARS, A, B)``;
* hooks, named services of higher layers that a core method offers (``Layout.parse``
  parses with :mod:`~layoutproof.notation`, ``Layout._repr_svg_`` draws with
  :mod:`~layoutproof.draw`): ``register_hook(name, fn)`` and ``hook(name)``.

An operation that finds no implementation raises
:class:`~layoutproof.errors.MalformedLayoutError` naming the operation and the
argument's type, never an AttributeError or a TypeError.

>>> class Reversed:                       # a new kind of layout: n-1-i over [0, n)
...     def __init__(self, n): self.n = n
>>> @register("coalesce", Reversed)
... def _coalesce_reversed(layout, profile=None):
...     return layout
>>> from layoutproof import coalesce
>>> r = Reversed(4); coalesce(r) is r
True
>>> coalesce(3.5)
Traceback (most recent call last):
  ...
layoutproof.errors.MalformedLayoutError: coalesce needs a Layout, got float 3.5 (no implementation ...
>>> unregister("coalesce", Reversed)
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple, TypeVar, Union

from .errors import MalformedLayoutError, show

__all__ = [
    "Kind",
    "SYMBOLIC",
    "STRIDE_SCALARS",
    "register",
    "unregister",
    "lookup",
    "handles",
    "call",
    "call_symbolic",
    "call_kind",
    "register_hook",
    "hook",
]

Fn = TypeVar("Fn", bound=Callable[..., Any])


class Kind:
    """A marker for a kind of layout that is no class of its own (:data:`SYMBOLIC`: a plain
    Layout holding SymPy leaves)."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"Kind({self.name!r})"


#: Plain layouts (and shapes) holding SymPy expressions; implemented by layoutproof.symbolic.
SYMBOLIC = Kind("symbolic")

#: Plain layouts whose strides are scalars of another algebra (F2, XOR strides: the class
#: carries the marker ``_lp_stride_scalar``); implemented by layoutproof.f2.
STRIDE_SCALARS = Kind("stride scalars")

KindKey = Union[type, Kind]

_handlers: Dict[Tuple[str, KindKey], Callable[..., Any]] = {}
# (op, concrete type) -> the implementation found along the type's MRO, or None
_resolved: Dict[Tuple[str, type], Optional[Callable[..., Any]]] = {}
_hooks: Dict[str, Callable[..., Any]] = {}


def _check_key(op: Any, kind: Any) -> None:
    if type(op) is not str or not op:
        raise MalformedLayoutError(f"kinds: an operation is named by a non-empty string, got {show(op)}")
    if not isinstance(kind, (type, Kind)):
        raise MalformedLayoutError(
            f"kinds ({op!r}): a kind is a class or a kinds.Kind marker, got "
            f"{type(kind).__name__} {show(kind)}"
        )


def register(op: str, kind: KindKey, fn: Optional[Fn] = None) -> Any:
    """Register ``fn`` as the implementation of the operation ``op`` for arguments of the
    class ``kind`` (and its subclasses), or for the marker :data:`SYMBOLIC`.  Without
    ``fn``, a decorator.  A later registration for the same ``(op, kind)`` replaces the
    earlier one."""
    _check_key(op, kind)
    if fn is None:

        def deco(f: Fn) -> Fn:
            register(op, kind, f)
            return f

        return deco
    if not callable(fn):
        raise MalformedLayoutError(f"kinds.register({op!r}, ...): the implementation must be callable")
    _handlers[(op, kind)] = fn
    _resolved.clear()
    return fn


def unregister(op: str, kind: KindKey) -> None:
    """Remove the implementation of ``op`` for ``kind`` (no error when there is none)."""
    _check_key(op, kind)
    _handlers.pop((op, kind), None)
    _resolved.clear()


def lookup(op: str, kind: KindKey) -> Optional[Callable[..., Any]]:
    """The implementation of ``op`` for the class ``kind`` (searched along its MRO) or the
    marker; None when there is none."""
    if isinstance(kind, Kind):
        return _handlers.get((op, kind))
    key = (op, kind)
    try:
        return _resolved[key]
    except (KeyError, TypeError):  # not seen yet, or not a valid key at all
        _check_key(op, kind)
    found: Optional[Callable[..., Any]] = None
    for k in kind.__mro__:
        found = _handlers.get((op, k))
        if found is not None:
            break
    _resolved[key] = found
    return found


def handles(op: str, x: Any) -> bool:
    """Is an implementation of ``op`` registered for the type of ``x``?"""
    return lookup(op, type(x)) is not None


def call(op: str, arg: Any, *args: Any, **kwargs: Any) -> Any:
    """``op(arg, *args, **kwargs)`` by the implementation registered for ``type(arg)``;
    MalformedLayoutError naming the operation and the type when there is none."""
    fn = lookup(op, type(arg))
    if fn is None:
        name = type(arg).__name__
        raise MalformedLayoutError(
            f"{op} needs a Layout, got {name} {show(arg)} "
            f"(no implementation of {op} is registered for {name})"
        )
    return fn(arg, *args, **kwargs)


def call_symbolic(op: str, *args: Any, **kwargs: Any) -> Any:
    """``op(*args)`` by the symbolic layer's implementation (an argument holds SymPy
    leaves); MalformedLayoutError when none is registered."""
    fn = _handlers.get((op, SYMBOLIC)) if type(op) is str else None
    if fn is None:
        raise MalformedLayoutError(
            f"{op}: an argument holds SymPy expressions and no symbolic implementation of {op} "
            "is registered (import layoutproof.symbolic)"
        )
    return fn(*args, **kwargs)


def call_kind(op: str, kind: Kind, *args: Any, **kwargs: Any) -> Any:
    """``op(*args)`` by the implementation registered for the marker ``kind``;
    MalformedLayoutError when none is registered."""
    if not isinstance(kind, Kind):
        raise MalformedLayoutError(
            f"kinds.call_kind({show(op)}, ...): the kind is a kinds.Kind marker, got {show(kind)}"
        )
    fn = _handlers.get((op, kind)) if type(op) is str else None
    if fn is None:
        raise MalformedLayoutError(
            f"{show(op)}: an argument has {kind.name} and no implementation of it is registered for them"
        )
    return fn(*args, **kwargs)


def register_hook(name: str, fn: Fn) -> Fn:
    """Offer the service ``name`` (e.g. ``"parse_layout"``, ``"layout_svg"``) to the core.
    A later registration replaces the earlier one."""
    if type(name) is not str or not name:
        raise MalformedLayoutError(f"kinds.register_hook: the hook is a non-empty name, got {show(name)}")
    if not callable(fn):
        raise MalformedLayoutError(f"kinds.register_hook({name!r}, fn): fn must be callable")
    _hooks[name] = fn
    return fn


def hook(name: str) -> Optional[Callable[..., Any]]:
    """The service registered as ``name``, or None."""
    return _hooks.get(name) if type(name) is str else None
