"""Theorem-style tests of layout code: :func:`theorem` states a property over layouts
and checks it **exhaustively** within a bound (every member of a family,
:mod:`layoutproof.verify.families`), **with hypothesis** beyond the bound (random,
larger layouts from :mod:`layoutproof.verify.strategies`, shrunk to a minimal counterexample),
and **with Z3** where the claim is symbolic (:meth:`theorem.identity`,
:meth:`theorem.symbolic`, through :func:`layoutproof.verify.identity`).

A failing theorem raises :class:`TheoremFailure` (an ``AssertionError``) that names the
mode that found the counterexample, how many cases passed, and each argument in CuTe
notation with its picture (``print_layout``); under pytest the plugin
(:mod:`layoutproof.verify.pytest_plugin`) adds the pictures as a report section
"layoutproof counterexample".

>>> from layoutproof import Layout, coalesce, left_inverse
>>> from layoutproof import verify
>>> from layoutproof.verify.theorem import Family, theorem
>>> @theorem(bound=dict(rank=2, extent=3, stride=3), examples=0)
... def test_coalesce_keeps_the_function(L):
...     assert verify.equal(coalesce(L), L)
>>> test_coalesce_keeps_the_function()
>>> test_coalesce_keeps_the_function.theorem_stats["exhaustive"]
156

A false claim fails with the smallest counterexample of the family (the enumeration
goes by rank, then extent, then stride):

>>> @theorem(Family.layouts(rank=2, extent=3, stride=2), examples=0)
... def test_every_layout_is_injective(L):
...     assert len(set(L.eval_all().tolist())) == L.size
>>> try:
...     test_every_layout_is_injective()
... except TheoremFailure as e:
...     print(e.mode, e.passed, e.arguments)
exhaustive 3 {'L': Layout(2, 0)}

Symbolic identities are proved by Z3 (or SymPy), for all parameter values:

>>> from layoutproof import composition
>>> test_tile = theorem.identity(lambda M, N: composition(Layout((M, N), (N, 1)), Layout(4, 1)),
...                              lambda M, N: Layout(4, N), assume="M % 4 == 0")
>>> test_tile()
>>> test_tile.theorem_stats["result"].status
'proved'
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import itertools
import math
import os
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Type

from layoutproof import complement, composition, logical_divide
from layoutproof.composed import ComposedLayout
from layoutproof.errors import LayoutError
from layoutproof.layout import Layout
from layoutproof.swizzle import Swizzle

from . import families as _families
from .result import Result

__all__ = [
    "theorem",
    "TheoremDecorator",
    "Family",
    "TheoremFailure",
    "TheoremError",
    "assume",
    "picture",
    "describe",
    "DEFAULT_BOUND",
    "DEFAULT_EXAMPLES",
    "MAX_CASES",
    "PICTURE_CELLS",
]

#: The family bound of ``@theorem`` without sources or ``bound=``.
DEFAULT_BOUND = {"rank": 2, "extent": 4, "stride": 4}
#: Hypothesis examples per theorem (times ``--layoutproof-scale``).
DEFAULT_EXAMPLES = 100
#: At most this many exhaustive cases (the product of the sources' families, unscaled).
MAX_CASES = 250_000
#: Pictures are drawn for layouts of at most this many elements.
PICTURE_CELLS = 256


# ============================================================================= errors
class TheoremError(LayoutError):
    """A theorem is ill-formed: an unknown parameter, a source of the wrong kind, or an
    exhaustive family too large (more than ``max_cases`` cases)."""


class TheoremFailure(AssertionError):
    """A theorem is false (or a symbolic claim could not be proved).

    Attributes:
        name: the theorem (test function) name.
        mode: ``"exhaustive"``, ``"hypothesis"`` or ``"z3"`` -- what found it.
        passed: how many cases passed before the counterexample (``None`` for Z3).
        arguments: the counterexample, a dict parameter name -> value.
        family: the family (or families) searched, in words.
        cause: the exception the test raised there (or None).
        result: the :class:`~layoutproof.verify.Result` (Z3 mode, or a test that returned one).
        layoutproof_report: the counterexample in CuTe notation with pictures (the pytest
            plugin shows it as a report section).
    """

    def __init__(
        self,
        message: str,
        *,
        name: str,
        mode: str,
        passed: Optional[int],
        arguments: Dict[str, Any],
        family: str,
        report: str,
        cause: Optional[BaseException] = None,
        result: Optional[Result] = None,
    ) -> None:
        super().__init__(message)
        self.name = name
        self.mode = mode
        self.passed = passed
        self.arguments = arguments
        self.family = family
        self.cause = cause
        self.result = result
        self.layoutproof_report = report


class _Rejected(Exception):
    """Raised by :func:`assume` outside hypothesis: the case is skipped."""


_MODE: contextvars.ContextVar[str] = contextvars.ContextVar("layoutproof_theorem_mode", default="")


def assume(condition: Any) -> bool:
    """Skip the current case unless ``condition`` holds (``hypothesis.assume`` in the
    hypothesis mode, a skipped case in the exhaustive mode; skipped cases are counted).

    >>> assume(True)
    True
    """
    if condition:
        return True
    if _MODE.get() == "hypothesis":
        from hypothesis import reject

        reject()
    raise _Rejected()


def _rejection_types() -> Tuple[Type[BaseException], ...]:
    hyp = sys.modules.get("hypothesis.errors")
    return (_Rejected, hyp.UnsatisfiedAssumption) if hyp is not None else (_Rejected,)


# ============================================================================= pytest plugin state
def _plugin_state(fn: Any = None) -> Dict[str, Any]:
    """``{"active": the plugin reports a failure of fn, "scale": F}``."""
    mod = sys.modules.get("layoutproof.verify.pytest_plugin")
    if mod is not None:
        state = mod.current()
        if state is not None:
            return {"active": fn is not None and mod.running(fn), "scale": state["scale"], "session": True}
    return {"active": False, "scale": _env_scale(), "session": False}


def _env_scale() -> float:
    text = os.environ.get("LAYOUTPROOF_SCALE", "")
    try:
        v = float(text) if text else 1.0
    except ValueError:
        return 1.0
    return v if v > 0 else 1.0


# ============================================================================= pictures
def _composed_table(C: Any) -> Optional[str]:
    B = C.layout_b
    if type(B.shape) is not tuple or B.rank == 1:
        rows, cols = 1, B.size
        cell = lambda m, n: C(n)  # noqa: E731
    elif B.rank == 2:
        rows, cols = B[0].size, B[1].size
        cell = lambda m, n: C(m, n)  # noqa: E731
    else:
        return None
    labels = [[str(cell(m, n)) for n in range(cols)] for m in range(rows)]
    w = max([len(str(max(C.size - 1, 0)))] + [len(s) for row in labels for s in row])
    rw = max(2, len(str(max(rows - 1, 0))))
    pad = " " * (rw + 2)
    rule = pad + ("+" + "-" * (w + 2)) * cols + "+"
    out = [str(C), (pad + "".join(f"  {n:>{w}} " for n in range(cols))).rstrip()]
    for m in range(rows):
        out.append(rule)
        out.append(f"{m:>{rw}}  " + "".join(f"| {s:>{w}} " for s in labels[m]) + "|")
    out.append(rule)
    return "\n".join(out) + "\n"


def picture(x: Any, max_cells: int = PICTURE_CELLS) -> str:
    """The picture of a layout (CuTe's ``print_layout`` table) or of a swizzled layout,
    ``""`` when there is none (not a concrete layout, or more than ``max_cells``
    elements).  A layout of rank > 2 is drawn with its modes 1.. grouped.

    >>> print(picture(Layout((2, 3), (3, 1))), end="")
    (2,3):(3,1)
          0   1   2
        +---+---+---+
     0  | 0 | 1 | 2 |
        +---+---+---+
     1  | 3 | 4 | 5 |
        +---+---+---+
    >>> picture(Layout(1024, 1))
    ''
    """
    try:
        if isinstance(x, Layout):
            if x.is_symbolic or x.size > max_cells:
                return ""
            from layoutproof.draw import layout_table

            if type(x.shape) is tuple and x.rank > 2:
                from layoutproof.layout import group_layout

                g = group_layout(x, 1, x.rank)
                return f"drawn as {g} (modes 1..{x.rank - 1} grouped)\n" + str(layout_table(g))
            return str(layout_table(x))
        if isinstance(x, ComposedLayout) and isinstance(x.layout_b, Layout):
            if x.layout_b.is_symbolic or x.size > max_cells:
                return ""
            return _composed_table(x) or ""
    except (LayoutError, TypeError, ValueError):
        return ""
    return ""


def describe(x: Any) -> str:
    """A value in notation: CuTe notation for layouts (with the constructor call that
    rebuilds it), ``str`` for swizzles, ``repr`` otherwise.

    >>> describe(Layout((2, 2), (1, 2)))
    '(2,2):(1,2)    # Layout((2, 2), (1, 2))'
    >>> describe((Layout(4, 1), 8))
    '(4:1, 8)'
    """
    if isinstance(x, Layout):
        return f"{x}    # {x!r}" if not x.is_symbolic else str(x)
    if isinstance(x, (ComposedLayout, Swizzle)):
        return f"{x}    # {x!r}"
    if type(x) is tuple and any(isinstance(e, (Layout, ComposedLayout, Swizzle)) for e in x):
        return (
            "("
            + ", ".join(str(e) if isinstance(e, (Layout, ComposedLayout, Swizzle)) else repr(e) for e in x)
            + ")"
        )
    return repr(x)


def _pictures(name: str, x: Any) -> List[str]:
    out = []
    if type(x) is tuple and any(isinstance(e, Layout) or hasattr(e, "layout_b") for e in x):
        for i, e in enumerate(x):
            out.extend(_pictures(f"{name}[{i}]", e))
        return out
    pic = picture(x)
    if pic:
        out.append(f"{name}:\n{pic.rstrip()}")
    return out


def _error_text(exc: Optional[BaseException], limit: int = 25) -> str:
    if exc is None:
        return ""
    text = str(exc).strip()
    lines = text.splitlines()
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more lines)"]
    head = type(exc).__name__
    return head + (": " + "\n".join(lines) if lines else "")


def _build_failure(
    fn: Any,
    name: str,
    mode: str,
    passed: Optional[int],
    skipped: int,
    arguments: Dict[str, Any],
    family: str,
    cause: Optional[BaseException],
    result: Optional[Result] = None,
    how: str = "",
    extra_pictures: Sequence[Tuple[str, Any]] = (),
    headline: Optional[str] = None,
) -> TheoremFailure:
    where = f"found by the {mode} mode" + (f" ({how})" if how else "")
    if passed is not None:
        where += f" after {passed} passing case{'s' if passed != 1 else ''}"
        if skipped:
            where += f" ({skipped} skipped)"
    lines = [
        f"theorem {name} is false: counterexample {where}"
        if headline is None
        else f"theorem {name} {headline}"
    ]
    if family:
        lines.append(f"  over: {family}")
    for k, v in arguments.items():
        lines.append(f"  {k} = {describe(v)}")
    if result is not None:
        lines.extend("  " + ln for ln in result.explain().splitlines())
    err = _error_text(cause)
    if err and not isinstance(cause, _Returned):
        lines.append("  " + err.replace("\n", "\n  "))
    summary = "\n".join(lines)
    pics: List[str] = []
    for k, v in list(arguments.items()) + list(extra_pictures):
        pics.extend(_pictures(k, v))
    report = "\n".join(
        [lines[0].replace(f"theorem {name} is false: ", "").replace(f"theorem {name} ", "")]
        + [f"{k} = {describe(v)}" for k, v in arguments.items()]
        + [f"{k} = {describe(v)}" for k, v in extra_pictures]
        + ([""] + pics if pics else [])
    )
    message = summary
    if pics and not _plugin_state(fn)["active"]:  # else the plugin shows them in a section
        message += "\n\n" + "\n".join(pics)
    return TheoremFailure(
        message,
        name=name,
        mode=mode,
        passed=passed,
        arguments=arguments,
        family=family,
        report=report,
        cause=cause,
        result=result,
    )


# ============================================================================= families (sources)
def _scaled(v: int, scale: float) -> int:
    return max(1, int(round(v * scale))) if scale != 1 else v


def _count_layouts(rank: int, extent: int, stride: int, negative: bool = False) -> int:
    k = (2 * stride + 1) if negative else (stride + 1)
    return sum((extent * k) ** r for r in range(1, rank + 1))


@dataclass(frozen=True, slots=True, init=False, repr=False, eq=False)
class Family:
    """A source of arguments for :func:`theorem`: the cases of an exhaustive family within
    a bound, and a hypothesis strategy for beyond it.  ``arity`` is how many parameters
    one case fills (2 for the pair families).

    Build one with the class methods (:meth:`layouts`, :meth:`injective`,
    :meth:`bijective`, :meth:`compact`, :meth:`composition_pairs`,
    :meth:`complement_pairs`, :meth:`tiler_pairs`, :meth:`swizzles`, :meth:`values`,
    :meth:`from_strategy`) or directly: ``cases`` is a function of the scale (float) returning
    an iterable, ``strategy`` a function returning a hypothesis strategy.

    >>> F = Family.layouts(rank=1, extent=2, stride=1)
    >>> [str(L) for L in F.cases()], F.words
    (['1:0', '1:1', '2:0', '2:1'], 'every flat layout of rank 1..1, extents 1..2, strides 0..1')
    >>> len(list(Family.layouts(rank=1, extent=2, stride=1).cases(scale=2)))
    12
    """

    words: str
    arity: int
    _cases: Optional[Callable[[float], Iterable[Any]]]
    _strategy: Optional[Callable[[], Any]]
    _count: Optional[Callable[[float], int]]

    def __init__(
        self,
        words: str,
        *,
        cases: Optional[Callable[[float], Iterable[Any]]] = None,
        strategy: Optional[Callable[[], Any]] = None,
        arity: int = 1,
        count: Optional[Callable[[float], int]] = None,
    ) -> None:
        if cases is None and strategy is None:
            raise TheoremError("a Family needs cases (exhaustive), a strategy (hypothesis), or both")
        if type(arity) is not int or arity < 1:
            raise TheoremError(f"arity must be a positive integer, got {arity!r}")
        s = object.__setattr__  # a frozen record: set once, here
        s(self, "words", words)
        s(self, "arity", arity)
        s(self, "_cases", cases)
        s(self, "_strategy", strategy)
        s(self, "_count", count)

    @property
    def exhaustive(self) -> bool:
        """True when the family can be enumerated."""
        return self._cases is not None

    @property
    def random(self) -> bool:
        """True when the family has a hypothesis strategy."""
        return self._strategy is not None

    def cases(self, scale: float = 1.0) -> Iterator[Any]:
        """Every case within the bound (scaled)."""
        if self._cases is None:
            raise TheoremError(f"{self.words}: no exhaustive cases (a hypothesis strategy only)")
        return iter(self._cases(scale))

    def strategy(self) -> Any:
        """The hypothesis strategy (for beyond the bound)."""
        if self._strategy is not None:
            return self._strategy()
        from hypothesis import strategies as st

        return st.sampled_from(list(self.cases()))

    def __repr__(self) -> str:
        return f"Family({self.words!r}, arity={self.arity})"

    # ------------------------------------------------------------------ constructors
    @classmethod
    def layouts(
        cls, rank: int = 2, extent: int = 4, stride: int = 4, *, negative: bool = False, nested: bool = False
    ) -> "Family":
        """Every flat layout of rank 1..``rank``, extents 1..``extent``, strides
        0..``stride`` (``-stride..stride`` with ``negative``); with ``nested``, also those
        regrouped as two hierarchical modes.  Beyond: :func:`layoutproof.verify.strategies.layouts`
        (nested shapes, extents up to ``2*extent``, strides up to ``2*stride``)."""
        _families._check(rank, extent, stride)

        def cases(scale: float) -> Iterator[Layout]:
            e, d = _scaled(extent, scale), _scaled(stride, scale)
            yield from _families.layouts(rank, e, d, negative=negative)
            if nested:
                yield from _families.nested_layouts(rank, e, d)

        def strategy() -> Any:
            from layoutproof.verify import strategies as S

            return S.layouts(
                max_rank=max(rank, 2),
                max_extent=2 * extent,
                max_stride=2 * stride,
                kind="any" if negative else "nonneg",
                max_size=1024,
            )

        words = _families.describe(rank, extent, stride, negative) + (" (and nested)" if nested else "")
        return cls(
            words,
            cases=cases,
            strategy=strategy,
            count=lambda s: _count_layouts(rank, _scaled(extent, s), _scaled(stride, s), negative),
        )

    @classmethod
    def injective(cls, rank: int = 2, extent: int = 4, stride: int = 8) -> "Family":
        """The injective layouts of :meth:`layouts`; beyond: injective layouts with gaps."""
        _families._check(rank, extent, stride)

        def strategy() -> Any:
            from layoutproof.verify import strategies as S

            return S.injective_layouts(max_rank=max(rank, 2), max_extent=2 * extent, max_size=1024)

        return cls(
            f"every injective {_families.describe(rank, extent, stride)[6:]}",
            cases=lambda s: _families.injective_layouts(rank, _scaled(extent, s), _scaled(stride, s)),
            strategy=strategy,
        )

    @classmethod
    def bijective(cls, rank: int = 2, extent: int = 4, stride: int = 8) -> "Family":
        """Layouts of :meth:`layouts` whose image is exactly ``[0, size)``."""
        _families._check(rank, extent, stride)

        def strategy() -> Any:
            from layoutproof.verify import strategies as S

            return S.bijective_layouts(max_rank=max(rank, 2), max_extent=2 * extent, max_size=1024)

        return cls(
            f"every bijective (image [0, size)) {_families.describe(rank, extent, stride)[6:]}",
            cases=lambda s: _families.bijective_layouts(rank, _scaled(extent, s), _scaled(stride, s)),
            strategy=strategy,
        )

    @classmethod
    def compact(cls, rank: int = 3, extent: int = 4) -> "Family":
        """Every compact layout (a permutation of the column-major strides) of rank
        1..``rank`` and extents 1..``extent``."""
        _families._check(rank, extent, 0)

        def strategy() -> Any:
            from layoutproof.verify import strategies as S

            return S.compact_layouts(max_rank=max(rank, 2), max_extent=2 * extent, max_size=1024)

        return cls(
            f"every compact layout of rank 1..{rank}, extents 1..{extent}",
            cases=lambda s: _families.compact_layouts(rank, _scaled(extent, s)),
            strategy=strategy,
        )

    @classmethod
    def composition_pairs(cls, rank: int = 2, extent: int = 4, stride: int = 4) -> "Family":
        """``(A, B)``, both from :meth:`layouts`, where ``composition(A, B)`` is
        admissible; beyond: :func:`layoutproof.verify.strategies.composition_pairs`.  Fills two
        parameters."""
        _families._check(rank, extent, stride)

        def cases(scale: float) -> Iterator[Tuple[Layout, Layout]]:
            e, d = _scaled(extent, scale), _scaled(stride, scale)
            firsts = list(_families.layouts(rank, e, d))
            for a, b, _ in _families.admissible_pairs(composition, iter(firsts), lambda: iter(firsts)):
                yield a, b

        def strategy() -> Any:
            from layoutproof.verify import strategies as S

            return S.composition_pairs(max_rank=max(rank, 2), max_extent=2 * extent, max_size=512)

        return cls(
            f"every admissible pair (A, B) for composition, A and B "
            f"{_families.describe(rank, extent, stride)[6:]}",
            cases=cases,
            strategy=strategy,
            arity=2,
        )

    @classmethod
    def complement_pairs(
        cls, rank: int = 2, extent: int = 4, stride: int = 8, cotarget: int = 32
    ) -> "Family":
        """``(L, M)`` with ``L`` from :meth:`layouts`, ``M`` in ``1..cotarget``, where
        ``complement(L, M)`` is admissible; beyond:
        :func:`layoutproof.verify.strategies.complement_pairs`.  Fills two parameters."""
        _families._check(rank, extent, stride)

        def cases(scale: float) -> Iterator[Tuple[Layout, int]]:
            e, d, c = _scaled(extent, scale), _scaled(stride, scale), _scaled(cotarget, scale)
            Ls = _families.layouts(rank, e, d)
            for a, b, _ in _families.admissible_pairs(complement, Ls, lambda: iter(range(1, c + 1))):
                yield a, b

        def strategy() -> Any:
            from layoutproof.verify import strategies as S

            return S.complement_pairs(max_rank=max(rank, 2), max_extent=2 * extent, max_size=512)

        return cls(
            f"every admissible (L, M) for complement, M in 1..{cotarget}, L "
            f"{_families.describe(rank, extent, stride)[6:]}",
            cases=cases,
            strategy=strategy,
            arity=2,
        )

    @classmethod
    def tiler_pairs(cls, rank: int = 2, extent: int = 4, stride: int = 4) -> "Family":
        """``(L, T)`` with ``L`` from :meth:`layouts` and ``T`` an int tiler ``1..size(L)``
        or a layout tiler from :meth:`layouts`, where ``logical_divide(L, T)`` is
        admissible; beyond: :func:`layoutproof.verify.strategies.tiler_pairs`.  Fills two
        parameters."""
        _families._check(rank, extent, stride)

        def cases(scale: float) -> Iterator[Tuple[Layout, Any]]:
            e, d = _scaled(extent, scale), _scaled(stride, scale)
            tls = list(_families.layouts(rank, e, d))
            for L in _families.layouts(rank, e, d):
                ts: List[Any] = list(range(1, L.size + 1)) + tls

                def tilers(ts: List[Any] = ts) -> Iterator[Any]:
                    return iter(ts)

                for _, T, _r in _families.admissible_pairs(logical_divide, iter([L]), tilers):
                    yield L, T

        def strategy() -> Any:
            from layoutproof.verify import strategies as S

            return S.tiler_pairs(max_rank=max(rank, 2), max_extent=2 * extent, max_size=512)

        return cls(
            f"every admissible (L, tiler) for logical_divide, L and layout tilers "
            f"{_families.describe(rank, extent, stride)[6:]}, int tilers 1..size(L)",
            cases=cases,
            strategy=strategy,
            arity=2,
        )

    @classmethod
    def swizzles(cls, max_bits: int = 6, *, negative_shift: bool = False) -> "Family":
        """Every valid ``Swizzle(B, M, S)`` with ``M + B + |S| <= max_bits``; beyond:
        :func:`layoutproof.verify.strategies.swizzles` up to ``2*max_bits`` bits."""

        def cases(scale: float) -> Iterator[Any]:
            bits = _scaled(max_bits, scale)
            for b in range(0, bits // 2 + 1):
                for s in range(b, bits - b + 1):
                    for m in range(0, bits - b - s + 1):
                        yield Swizzle(b, m, s)
                        if negative_shift and s:
                            yield Swizzle(b, m, -s)

        def strategy() -> Any:
            from layoutproof.verify import strategies as S

            return S.swizzles(max_bits=min(64, 2 * max_bits), negative_shift=negative_shift)

        return cls(f"every Swizzle(B, M, S) with M + B + |S| <= {max_bits}", cases=cases, strategy=strategy)

    @classmethod
    def values(cls, *values: Any) -> "Family":
        """Exactly these values (exhaustive; hypothesis draws among them)."""
        vals = list(values)
        if not vals:
            raise TheoremError("Family.values() needs at least one value")
        return cls(f"{len(vals)} given value{'s' if len(vals) != 1 else ''}", cases=lambda s: iter(vals))

    @classmethod
    def from_strategy(cls, strategy: Any, *, arity: int = 1, words: str = "") -> "Family":
        """A hypothesis strategy (no exhaustive cases); with ``arity`` > 1 each drawn
        tuple fills that many parameters."""
        return cls(words or f"hypothesis {strategy!r}", strategy=lambda: strategy, arity=arity)


def _as_family(src: Any, what: str) -> Family:
    if isinstance(src, Family):
        return src
    hs = sys.modules.get("hypothesis.strategies")
    if hs is not None and isinstance(src, hs.SearchStrategy):
        text = repr(src)
        return Family(
            f"hypothesis strategy {text if len(text) <= 100 else text[:97] + '...'}", strategy=lambda: src
        )
    if isinstance(src, (list, tuple, range)):
        return Family.values(*src)
    raise TheoremError(
        f"{what}: a source is a Family, a hypothesis strategy, or a list of values; got {type(src).__name__}"
    )


_FAMILIES = {
    "layouts": Family.layouts,
    "injective": Family.injective,
    "bijective": Family.bijective,
    "compact": Family.compact,
}


# ============================================================================= the runner
class _Binding:
    __slots__ = ("family", "names", "unpack")

    def __init__(self, family: Family, names: List[str], unpack: bool) -> None:
        self.family, self.names, self.unpack = family, names, unpack

    def bind(self, value: Any, into: Dict[str, Any]) -> None:
        if not self.unpack:
            into[self.names[0]] = value
            return
        if type(value) is not tuple or len(value) != len(self.names):
            raise TheoremError(
                f"{self.family.words} gave {value!r}, not a {len(self.names)}-tuple "
                f"for {', '.join(self.names)}"
            )
        for n, v in zip(self.names, value):
            into[n] = v


def _check_outcome(out: Any) -> Optional[Tuple[str, Optional[Result]]]:
    if isinstance(out, Result):
        return None if out else (f"the test returned {out}", out)
    if out is False:
        return ("the test returned False", None)
    return None


class _Returned(AssertionError):
    """A test returned False or a Result that is neither proved nor checked."""


def _call(fn: Callable[..., Any], kwargs: Dict[str, Any]) -> None:
    __tracebackhide__ = True
    out = fn(**kwargs)
    bad = _check_outcome(out)
    if bad is not None:
        err = _Returned(bad[0])
        err.result = bad[1]  # type: ignore[attr-defined]
        raise err


def _theorem_params(fn: Callable[..., Any]) -> Tuple[inspect.Signature, List[inspect.Parameter]]:
    sig = inspect.signature(fn)
    params = [
        p
        for p in sig.parameters.values()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    ]
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    return sig, params


def _mark(fn: Callable[..., Any]) -> Callable[..., Any]:
    pytest = sys.modules.get("pytest")
    if pytest is not None and _plugin_state()["session"]:
        return pytest.mark.theorem(fn)
    return fn


class TheoremDecorator:
    """The class of :data:`theorem`, the decorator (see the module docstring): calling it
    states a theorem over layouts; :meth:`identity` and :meth:`symbolic` state claims over
    symbolic parameters, proved by Z3."""

    def __call__(
        self,
        *sources: Any,
        bound: Optional[Dict[str, int]] = None,
        family: str = "layouts",
        examples: Optional[int] = None,
        exhaustive: bool = True,
        max_cases: int = MAX_CASES,
        derandomize: bool = True,
        **named: Any,
    ) -> Any:
        """``@theorem`` or ``@theorem(...)``.

        * positional ``sources`` fill the test's parameters in order (a pair family fills
          two), keyword sources fill the parameter of that name; a source is a
          :class:`Family`, a hypothesis strategy, or a list of values;
        * without sources every parameter is a layout from ``Family.<family>(**bound)``
          (``family``: ``"layouts"``, ``"injective"``, ``"bijective"``, ``"compact"``;
          ``bound``: :data:`DEFAULT_BOUND`); with sources, the remaining parameters are
          pytest fixtures;
        * ``exhaustive``: enumerate every case within the bound (if every source has
          cases; at most ``max_cases``); ``examples``: hypothesis examples beyond it (0:
          none; default :data:`DEFAULT_EXAMPLES`), ``derandomize``: the same examples on
          every run.

        The test passes when it returns without raising (or returns a true value, e.g. a
        proved :class:`~layoutproof.verify.Result`).
        """
        if (
            len(sources) == 1
            and callable(sources[0])
            and not isinstance(sources[0], Family)
            and inspect.isfunction(sources[0])
            and bound is None
            and not named
        ):
            return self()(sources[0])  # bare @theorem
        if type(max_cases) is not int or max_cases < 1:
            raise TheoremError(f"max_cases must be a positive integer, got {max_cases!r}")
        if examples is not None and (type(examples) is not int or examples < 0):
            raise TheoremError(f"examples must be a non-negative integer, got {examples!r}")
        if family not in _FAMILIES:
            raise TheoremError(f"family must be one of {sorted(_FAMILIES)}, got {family!r}")

        def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
            return _make_theorem(
                fn, sources, named, bound, family, examples, exhaustive, max_cases, derandomize
            )

        return decorate

    # ------------------------------------------------------------------ symbolic claims
    def identity(
        self,
        lhs: Any,
        rhs: Any,
        params: Any = None,
        *,
        assume: Any = (),
        bounds: Any = None,
        timeout_ms: Optional[int] = None,
        require_proof: bool = False,
        name: Optional[str] = None,
    ) -> Callable[[], None]:
        """A test function (assign it to a ``test_...`` name) that proves
        ``lhs(*params) == rhs(*params)`` for every parameter value satisfying ``assume``
        with :func:`layoutproof.verify.identity` (SymPy, Z3, then a bounded check of a
        box of values when a side condition is undecidable).  ``proved`` passes,
        ``checked`` (bounded) passes unless ``require_proof``; ``refuted`` and ``unknown``
        fail, with both sides drawn at the counterexample's parameter values.

        >>> from layoutproof import Layout
        >>> test_bad = theorem.identity(lambda M: Layout((M, 2), (2, 1)), lambda M: Layout(2 * M, 1))
        >>> try:
        ...     test_bad()
        ... except TheoremFailure as e:
        ...     print(e.mode, e.arguments)
        z3 {'M': 2}
        """

        def test() -> None:
            __tracebackhide__ = True
            _run_identity(test, lhs, rhs, params, assume, bounds, timeout_ms, require_proof)

        test.__name__ = test.__qualname__ = name or "test_identity"
        test.__doc__ = f"theorem.identity: {getattr(lhs, '__name__', lhs)} == {getattr(rhs, '__name__', rhs)}"
        test.theorem_stats = {}  # type: ignore[attr-defined]
        return _mark(test)

    def symbolic(
        self,
        params: Any = None,
        *,
        assume: Any = (),
        bounds: Any = None,
        timeout_ms: Optional[int] = None,
        require_proof: bool = False,
    ) -> Callable[[Callable[..., Any]], Callable[[], None]]:
        """Decorate a function of symbolic parameters that returns ``(lhs, rhs)``: the
        claim ``lhs == rhs`` for all values satisfying ``assume`` (see :meth:`identity`).
        The parameters are the function's, unless ``params`` names them.

        >>> from layoutproof import Layout, coalesce
        >>> @theorem.symbolic(assume="M % 8 == 0")
        ... def test_coalesce_merges(M, N):
        ...     return coalesce(Layout((M, N), (1, M))), Layout(M * N, 1)
        >>> test_coalesce_merges()
        """

        def decorate(fn: Callable[..., Any]) -> Callable[[], None]:
            names = params
            if names is None:
                _, ps = _theorem_params(fn)
                names = [p.name for p in ps]

            def lhs(*a: Any) -> Any:
                return _pair(fn, a)[0]

            def rhs(*a: Any) -> Any:
                return _pair(fn, a)[1]

            def test() -> None:
                __tracebackhide__ = True
                _run_identity(test, lhs, rhs, names, assume, bounds, timeout_ms, require_proof)

            functools.update_wrapper(test, fn)
            test.__signature__ = inspect.Signature([])  # type: ignore[attr-defined]
            delattr(test, "__wrapped__")
            test.theorem_stats = {}  # type: ignore[attr-defined]
            return _mark(test)

        return decorate


def _pair(fn: Callable[..., Any], args: Sequence[Any]) -> Tuple[Any, Any]:
    out = fn(*args)
    if type(out) is not tuple or len(out) != 2:
        raise TheoremError(f"a theorem.symbolic function returns (lhs, rhs); {fn.__name__} returned {out!r}")
    return out


def _run_identity(
    test: Any,
    lhs: Any,
    rhs: Any,
    params: Any,
    assume: Any,
    bounds: Any,
    timeout_ms: Optional[int],
    require_proof: bool,
) -> None:
    __tracebackhide__ = True
    from .identity import identity

    r = identity(lhs, rhs, params, assume=assume, bounds=bounds, timeout_ms=timeout_ms)
    test.theorem_stats = {"result": r, "mode": "z3"}
    if r.status == "proved" or (r.status == "checked" and not require_proof):
        return
    cex = r.counterexample
    arguments: Dict[str, Any] = dict(cex.assignment) if cex is not None and cex.assignment else {}
    extra: List[Tuple[str, Any]] = []
    if arguments or (cex is not None and not _symbolic_params(lhs, params)):
        vals = arguments
        for side, f in (("lhs", lhs), ("rhs", rhs)):
            try:
                extra.append((side, _at(f, params, vals)))
            except (LayoutError, TypeError, ValueError) as e:
                extra.append((side, f"{type(e).__name__}: {e}"))
    how = f"verify.identity: {r.status} by {r.method}"
    headline = None
    if r.status == "checked":
        headline = (
            f"is not proved by the z3 mode: only checked within bounds ({r.method}); "
            f"require_proof=True asks for an unbounded proof"
        )
    elif r.status == "unknown":
        headline = f"is not proved by the z3 mode: unknown ({r.method}): {r.reason}"
    name = test.__name__ if test.__name__ != "test_identity" else f"identity {r.claim}"
    raise _build_failure(
        test,
        name,
        "z3",
        None,
        0,
        arguments,
        "",
        None,
        result=r,
        how=how,
        extra_pictures=extra,
        headline=headline,
    )


def _symbolic_params(lhs: Any, params: Any) -> List[str]:
    from ._run import split_params
    from .identity import infer_params

    if params is None:
        return infer_params(lhs)
    return split_params(params)[1]


def _at(f: Any, params: Any, values: Dict[str, int]) -> Any:
    names = _symbolic_params(f, params)
    if not callable(f) or isinstance(f, Layout):
        return f
    return f(*[values[n] for n in names])


def _make_theorem(
    fn: Callable[..., Any],
    sources: Sequence[Any],
    named: Dict[str, Any],
    bound: Optional[Dict[str, int]],
    family: str,
    examples: Optional[int],
    exhaustive: bool,
    max_cases: int,
    derandomize: bool,
) -> Callable[..., Any]:
    sig, params = _theorem_params(fn)
    names = [p.name for p in params]
    bindings: List[_Binding] = []
    taken: List[str] = []
    if not sources and not named:
        b = dict(DEFAULT_BOUND if bound is None else bound)
        try:
            fam = _FAMILIES[family](**b)
        except TypeError as e:
            raise TheoremError(f"bound={bound!r} does not fit Family.{family}: {e}") from None
        free = [p.name for p in params if p.default is p.empty]
        if not free:
            raise TheoremError(f"theorem {fn.__name__} has no parameter to fill")
        for n in free:
            bindings.append(_Binding(fam, [n], False))
        taken = free
    else:
        if bound is not None:
            raise TheoremError("bound= applies when no sources are given; give the bound to the Family")
        pos = 0
        for i, src in enumerate(sources):
            fam = _as_family(src, f"theorem {fn.__name__}, source {i}")
            want = names[pos : pos + fam.arity]
            if len(want) < fam.arity:
                raise TheoremError(
                    f"theorem {fn.__name__}: source {i} ({fam.words}) fills {fam.arity} "
                    f"parameter(s), only {len(want)} left of {names}"
                )
            bindings.append(_Binding(fam, want, fam.arity > 1))
            taken.extend(want)
            pos += fam.arity
        for k, src in named.items():
            if k not in names:
                raise TheoremError(f"theorem {fn.__name__} has no parameter {k!r} (parameters: {names})")
            if k in taken:
                raise TheoremError(f"theorem {fn.__name__}: parameter {k!r} has two sources")
            bindings.append(_Binding(_as_family(src, f"theorem {fn.__name__}, {k}="), [k], False))
            taken.append(k)
    rest = [p for p in sig.parameters.values() if p.name not in taken]
    spec = {
        "exhaustive": exhaustive,
        "examples": DEFAULT_EXAMPLES if examples is None else examples,
        "max_cases": max_cases,
        "derandomize": derandomize,
    }

    @functools.wraps(fn)
    def wrapper(*args: Any, **fixtures: Any) -> None:
        __tracebackhide__ = True
        bound_fn: Callable[..., Any]
        if args:  # a method: self
            bound_fn = functools.partial(fn, *args)
        else:
            bound_fn = fn
        _run_theorem(wrapper, bound_fn, bindings, fixtures, spec)

    wrapper.__signature__ = sig.replace(parameters=rest)  # type: ignore[attr-defined]
    delattr(wrapper, "__wrapped__")
    wrapper.theorem_stats = {}  # type: ignore[attr-defined]
    wrapper.theorem_sources = [(b.names, b.family.words) for b in bindings]  # type: ignore[attr-defined]
    return _mark(wrapper)


def _words(bindings: Sequence[_Binding]) -> str:
    return "; ".join(f"{', '.join(b.names)}: {b.family.words}" for b in bindings)


def _run_theorem(
    wrapper: Any,
    fn: Callable[..., Any],
    bindings: List[_Binding],
    fixtures: Dict[str, Any],
    spec: Dict[str, Any],
) -> None:
    __tracebackhide__ = True
    state = _plugin_state()
    scale = float(state.get("scale") or 1.0)
    stats: Dict[str, Any] = {"exhaustive": 0, "skipped": 0, "hypothesis": 0, "scale": scale, "seconds": 0.0}
    wrapper.theorem_stats = stats
    t0 = time.perf_counter()
    name = getattr(wrapper, "__name__", "theorem")
    ran_exhaustive = spec["exhaustive"] and all(b.family.exhaustive for b in bindings)
    if ran_exhaustive:
        _run_exhaustive(wrapper, name, fn, bindings, fixtures, spec, scale, stats)
    n = spec["examples"]
    if n > 0 and any(b.family.random for b in bindings):
        _run_hypothesis(
            wrapper, name, fn, bindings, fixtures, max(1, int(round(n * scale))), spec["derandomize"], stats
        )
    elif not ran_exhaustive:
        raise TheoremError(
            f"theorem {name}: nothing to run (no exhaustive family"
            f"{' enabled' if not spec['exhaustive'] else ''} and no hypothesis examples)"
        )
    stats["seconds"] = time.perf_counter() - t0


def _run_exhaustive(
    wrapper: Any,
    name: str,
    fn: Callable[..., Any],
    bindings: List[_Binding],
    fixtures: Dict[str, Any],
    spec: Dict[str, Any],
    scale: float,
    stats: Dict[str, Any],
) -> None:
    __tracebackhide__ = True
    lists = []
    for b in bindings:
        lists.append(list(b.family.cases(scale)))
    total = math.prod(len(x) for x in lists)
    if scale != 1:
        base = math.prod(len(list(b.family.cases(1.0))) for b in bindings)
    else:
        base = total
    if base > spec["max_cases"]:
        sizes = " x ".join(str(len(x)) for x in lists)
        raise TheoremError(
            f"theorem {name}: the exhaustive family has {base} cases ({sizes}), more than "
            f"max_cases={spec['max_cases']}: lower the bound, use a pair family, or raise max_cases"
        )
    rejected = _rejection_types()
    failed: List[Tuple[Dict[str, Any], BaseException]] = []
    skipped = 0

    def check(combo: Tuple[Any, ...]) -> Any:
        nonlocal skipped
        kwargs: Dict[str, Any] = {}
        for b, v in zip(bindings, combo):
            b.bind(v, kwargs)
        try:
            _call(fn, {**kwargs, **fixtures})
        except rejected:
            skipped += 1
            return _families.SKIP
        except Exception as e:
            failed.append((kwargs, e))
            return f"{type(e).__name__}: {e}"
        return None

    token = _MODE.set("exhaustive")
    try:
        r = _families.for_all(
            f"theorem {name}",
            itertools.product(*lists),
            check,
            family=_words(bindings),
            bounds={},
            min_cases=0,
        )
    finally:
        _MODE.reset(token)
    passed = (r.cases or 0) - len(failed)
    stats.update(exhaustive=passed, skipped=skipped)
    if failed:
        kwargs, e = failed[0]
        raise _build_failure(
            wrapper,
            name,
            "exhaustive",
            passed,
            skipped,
            kwargs,
            _words(bindings),
            e,
            result=getattr(e, "result", None),
        ) from e


def _run_hypothesis(
    wrapper: Any,
    name: str,
    fn: Callable[..., Any],
    bindings: List[_Binding],
    fixtures: Dict[str, Any],
    n: int,
    derandomize: bool,
    stats: Dict[str, Any],
) -> None:
    __tracebackhide__ = True
    try:
        from hypothesis import HealthCheck, given, settings
        from hypothesis import strategies as st
        from hypothesis.errors import UnsatisfiedAssumption
    except ImportError:
        raise TheoremError(
            f"theorem {name}: the hypothesis mode needs hypothesis (pip install "
            f"hypothesis, or layoutproof's test extra); examples=0 runs the "
            f"exhaustive mode alone"
        ) from None

    strategy = st.tuples(*[b.family.strategy() for b in bindings])
    box: Dict[str, Any] = {"passed": 0, "failing": None}

    def check(combo: Tuple[Any, ...]) -> None:
        __tracebackhide__ = True
        kwargs: Dict[str, Any] = {}
        for b, v in zip(bindings, combo):
            b.bind(v, kwargs)
        try:
            _call(fn, {**kwargs, **fixtures})
        except (_Rejected, UnsatisfiedAssumption):
            from hypothesis import reject

            reject()
        except Exception as e:
            box["failing"] = (kwargs, e)
            raise
        if box["failing"] is None:
            box["passed"] += 1

    check.__qualname__ = check.__name__ = f"{name}_beyond_the_bound"
    runner = settings(
        max_examples=n,
        deadline=None,
        database=None,
        derandomize=derandomize,
        report_multiple_bugs=False,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.filter_too_much,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )(given(strategy)(check))
    token = _MODE.set("hypothesis")
    try:
        runner()
    except Exception as e:
        if box["failing"] is None:
            raise
        kwargs, cause = box["failing"]
        stats["hypothesis"] = box["passed"]
        raise _build_failure(
            wrapper,
            name,
            "hypothesis",
            box["passed"],
            0,
            kwargs,
            _words(bindings),
            cause,
            result=getattr(cause, "result", None),
            how="shrunk to a minimal example",
        ) from e
    finally:
        _MODE.reset(token)
    stats["hypothesis"] = box["passed"]


#: The decorator: ``@theorem``, ``@theorem(sources..., bound=, examples=, ...)``,
#: ``theorem.identity(lhs, rhs, assume=...)``, ``@theorem.symbolic(assume=...)``.
theorem = TheoremDecorator()
