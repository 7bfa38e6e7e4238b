"""Hypothesis strategies for CuTe layouts: valid layouts, admissible operands, tilers,
swizzles and symbolic layouts, for property-based tests of code that uses layouts.

Every value is valid *by construction* (never by filtering, so hypothesis' health checks
pass and shrinking stays fast), and every admissibility promise is kept by construction:
:func:`composition_pairs` builds ``B`` from a refinement of ``A``'s mixed radix,
:func:`complement_pairs` builds a layout whose strides chain, :func:`tilers` builds tilers
from the digits of the layout they tile.  Values shrink towards small, flat layouts.

This module imports hypothesis (it is the testing kit, in the ``test`` extra); it is not
imported by ``import layoutproof``.  Import it as ``layoutproof.verify.strategies``:

>>> from hypothesis import given, settings
>>> from layoutproof import composition, size
>>> from layoutproof.verify.strategies import composition_pairs, sample
>>> @settings(max_examples=30, database=None)
... @given(composition_pairs())
... def test_composition_keeps_the_size_of_b(pair):
...     A, B = pair
...     assert size(composition(A, B)) == size(B)
>>> test_composition_keeps_the_size_of_b()

:func:`sample` draws a reproducible list of values (for looking at them, for benchmarks):

>>> pairs = sample(composition_pairs(max_size=16), 20)
>>> len(pairs), all(size(composition(A, B)) == size(B) for A, B in pairs)
(20, True)

Strategies (all keyword options have sensible defaults):

| strategy | values |
|---|---|
| `shapes` | hierarchical shapes (int or nested tuple of positive ints) |
| `strides(shape, kind)` | a stride congruent with `shape`, of a kind (`STRIDE_KINDS`) |
| `layouts` | layouts, strides of any kind |
| `compact_layouts` | image exactly `[0, size)`: column-, row-major or any mode order |
| `injective_layouts` | injective layouts (strides chain, with gaps) |
| `bijective_layouts` | image exactly `[0, size)` (any order, size-1 modes free) |
| `complement_pairs` | `(L, cotarget)` with `complement(L, cotarget)` admissible |
| `composition_pairs` | `(A, B)` with `composition(A, B)` admissible |
| `tilers` | int, Layout and tuple tilers (admissible for a given layout) |
| `tiler_pairs` | `(L, tiler)` with `logical_divide(L, tiler)` admissible |
| `swizzles` | valid `Swizzle(B, M, S)` |
| `swizzled_layouts` | `Swizzle o 0 o Layout`, bijective onto `[0, size)` |
| `symbolic_layouts` | `(layout, assumptions, symbols)` with SymPy leaves |
| `conditions` | `(condition, facts)` over 1-3 integer symbols, quotients and `Mod` of them included |

:func:`check_decision` is the oracle for :func:`conditions`: a decision checked against
exhaustive exact evaluation over small values.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from hypothesis import strategies as st
from hypothesis.strategies import SearchStrategy

from ..composed import ComposedLayout
from ..errors import MalformedLayoutError
from ..inttuple import flatten, product, unflatten
from ..layout import Layout, LayoutRight, get
from ..swizzle import SWIZZLE_MAX_BITS, Swizzle

__all__ = [
    "STRIDE_KINDS",
    "sample",
    "shapes",
    "strides",
    "layouts",
    "compact_layouts",
    "injective_layouts",
    "bijective_layouts",
    "complement_pairs",
    "composition_pairs",
    "tilers",
    "tiler_pairs",
    "swizzles",
    "swizzled_layouts",
    "symbolic_layouts",
    "CONDITION_SYMBOLS",
    "conditions",
    "check_decision",
]

#: The stride kinds of :func:`strides` (``"mixed"`` draws one of the others).
STRIDE_KINDS = ("any", "nonneg", "positive", "left", "right", "compact", "injective", "bijective", "mixed")

Draw = Callable[[SearchStrategy[Any]], Any]


# ============================================================================= helpers
def _positive(name: str, v: Any, lo: int = 1) -> int:
    if type(v) is not int or v < lo:
        raise MalformedLayoutError(f"{name} must be an integer >= {lo}, got {v!r}")
    return v


def _primes(n: int) -> List[int]:
    out, p = [], 2
    while p * p <= n:
        while n % p == 0:
            out.append(p)
            n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


def _digits(draw: Draw, extent: int) -> List[int]:
    """A random factorization of ``extent`` into digits >= 2 (a refinement of the mode)."""
    ps = _primes(extent)
    if len(ps) > 1:
        ps = [ps[i] for i in draw(st.permutations(range(len(ps))))]
    out: List[int] = []
    for p in ps:
        if out and draw(st.booleans()):
            out[-1] *= p
        else:
            out.append(p)
    return out


def _refinement(draw: Draw, flat_shape: Sequence[int]) -> Tuple[List[int], List[int]]:
    """The digits of a random refinement of a flat shape and their prefix products (the
    1-D index stride of each digit)."""
    ds: List[int] = []
    for s in flat_shape:
        ds.extend(_digits(draw, s))
    ps, cur = [], 1
    for d in ds:
        ps.append(cur)
        cur *= d
    return ds, ps


def _runs(draw: Draw, n: int) -> List[Tuple[int, int]]:
    """Disjoint runs ``[a, b)`` of ``range(n)``, in a random order."""
    runs: List[List[int]] = []
    open_run = False
    for i in range(n):
        act = draw(st.integers(0, 2))  # 0: skip, 1: start a run, 2: extend the open run
        if act == 2 and open_run:
            runs[-1][1] = i + 1
        elif act >= 1:
            runs.append([i, i + 1])
            open_run = True
        else:
            open_run = False
    if len(runs) > 1:
        runs = [runs[i] for i in draw(st.permutations(range(len(runs))))]
    return [(a, b) for a, b in runs]


def _nest(draw: Draw, leaves: List[Any], max_depth: int, max_rank: int) -> Any:
    """Group a flat list of leaves into a random hierarchical profile (leaf order kept).
    A single leaf may stay an int; more than ``max_rank`` leaves at the depth limit stay
    one flat tuple."""
    if len(leaves) == 1 and (max_depth <= 0 or draw(st.booleans())):
        return leaves[0]
    if max_depth <= 1 or len(leaves) == 1:
        return tuple(leaves)
    k = draw(st.integers(1, min(len(leaves), max_rank)))
    cuts = (
        sorted(draw(st.lists(st.integers(1, len(leaves) - 1), min_size=k - 1, max_size=k - 1, unique=True)))
        if k > 1
        else []
    )
    bounds = [0] + cuts + [len(leaves)]
    out = []
    for a, b in zip(bounds, bounds[1:]):
        part = leaves[a:b]
        out.append(part[0] if len(part) == 1 else _nest(draw, part, max_depth - 1, max_rank))
    return tuple(out)


def _shaped(flat: Sequence[Any], shape: Any) -> Any:
    return unflatten(tuple(flat), shape) if type(shape) is tuple else flat[0]


def _named(fn: Callable[..., Any], args: Dict[str, Any], body: Callable[[Draw], Any]) -> SearchStrategy[Any]:
    """``body`` as a strategy that shows as the call of ``fn`` with the options that differ
    from their defaults (hypothesis prints it in reports, e.g. ``layouts(kind='positive')``)."""
    params = inspect.signature(fn).parameters
    shown = {}
    for k, v in args.items():
        p = params.get(k)
        if p is not None and (p.default is p.empty or not (p.default is v or p.default == v)):
            shown[k] = v

    def draw_it(draw: Draw, **_: Any) -> Any:
        return body(draw)

    draw_it.__name__ = draw_it.__qualname__ = fn.__name__
    return st.composite(draw_it)(**shown)


# ============================================================================= sampling
def sample(strategy: SearchStrategy[Any], n: int = 10, *, seed: int = 0) -> List[Any]:
    """Up to ``n`` values drawn from ``strategy``, the same ones for the same ``seed``
    (hypothesis version permitting): for looking at a strategy, for benchmarks, for
    docstrings.  Fewer than ``n`` when the strategy has fewer distinct values.

    >>> from hypothesis import strategies as st
    >>> xs = sample(st.integers(0, 9), 5)
    >>> len(xs), xs == sample(st.integers(0, 9), 5), all(0 <= x <= 9 for x in xs)
    (5, True, True)
    """
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed

    _positive("n", n, 0)
    out: List[Any] = []
    if n == 0:
        return out

    @hseed(seed)
    @settings(
        max_examples=n,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def collect(value: Any) -> None:
        out.append(value)

    collect()
    return out[:n]


# ============================================================================= shapes, strides
def shapes(
    *,
    max_size: int = 256,
    max_rank: int = 3,
    max_depth: int = 2,
    max_extent: int = 8,
    allow_empty: bool = False,
) -> SearchStrategy[Any]:
    """Hierarchical shapes: an int or a nested tuple of positive ints.

    ``max_size`` bounds the product of the extents, ``max_extent`` each extent,
    ``max_rank`` the number of modes of each tuple, ``max_depth`` the nesting (0: ints
    only, 1: flat tuples); ``allow_empty`` lets a tuple have no modes (``()``, size 1).
    Shrinks towards ``1``.

    >>> from layoutproof import Layout
    >>> ss = sample(shapes(max_size=64, max_depth=2), 50)
    >>> all(Layout(s).size <= 64 and Layout(s).depth <= 2 for s in ss)
    True
    """
    _positive("max_size", max_size)
    _positive("max_rank", max_rank)
    _positive("max_depth", max_depth, 0)
    _positive("max_extent", max_extent)

    def build(draw: Draw) -> Any:
        budget = [max_size]

        def node(depth: int) -> Any:
            if depth < max_depth and draw(st.booleans()):
                n = draw(st.integers(0 if allow_empty else 1, max_rank))
                return tuple(node(depth + 1) for _ in range(n))
            e = draw(st.integers(1, max(1, min(max_extent, budget[0]))))
            budget[0] = max(1, budget[0] // e)
            return e

        return node(0)

    return _named(shapes, locals(), build)


_LOWEST = {"any": None, "nonneg": 0, "positive": 1}


def _pools(values: Optional[Sequence[int]]) -> Dict[str, SearchStrategy[int]]:
    """The stride values of the kinds any, nonneg and positive drawn from ``values`` (those
    of the kind's sign), sorted so that they shrink towards the smallest."""
    out: Dict[str, SearchStrategy[int]] = {}
    if values is None:
        return out
    for kind, lo in _LOWEST.items():
        pool = sorted({v for v in values if lo is None or v >= lo}, key=lambda v: (abs(v), v))
        if pool:
            out[kind] = st.sampled_from(pool)
    return out


def _flat_strides(
    draw: Draw,
    fs: Sequence[int],
    kind: str,
    max_stride: int,
    shape: Any,
    pools: Optional[Dict[str, SearchStrategy[int]]] = None,
) -> List[int]:
    n = len(fs)
    if pools and kind in pools:
        return [draw(pools[kind]) for _ in fs]
    if kind == "any":
        return [draw(st.integers(-max_stride, max_stride)) for _ in fs]
    if kind == "nonneg":
        return [draw(st.integers(0, max_stride)) for _ in fs]
    if kind == "positive":
        return [draw(st.integers(1, max(1, max_stride))) for _ in fs]
    if kind == "left":
        return list(flatten(Layout(shape).stride))
    if kind == "right":
        return list(flatten(LayoutRight(shape).stride))
    order = list(draw(st.permutations(range(n)))) if n > 1 else list(range(n))
    fd = [0] * n
    chain = kind == "injective"
    cur = draw(st.integers(1, 3)) if chain else 1
    for i in order:
        fd[i] = cur
        cur *= fs[i] * (draw(st.integers(1, 3)) if chain else 1)
    if kind in ("injective", "bijective"):
        # a size-1 mode adds nothing to the image: any stride keeps the promise
        for i in range(n):
            if fs[i] == 1 and draw(st.booleans()):
                fd[i] = draw(st.integers(0, max_stride))
    return fd


def strides(
    shape: Any, kind: str = "any", *, max_stride: int = 16, values: Optional[Sequence[int]] = None
) -> SearchStrategy[Any]:
    """A stride congruent with ``shape``.

    ``kind``:

    * ``"any"``: each stride in ``-max_stride..max_stride`` (0 included);
    * ``"nonneg"`` (``0..max_stride``), ``"positive"`` (``1..max_stride``);
    * ``"left"``, ``"right"``: the compact column-major / row-major stride;
    * ``"compact"``: a permutation of the column-major stride (image exactly ``[0, size)``);
    * ``"bijective"``: like ``"compact"``, and size-1 modes may take any stride;
    * ``"injective"``: the modes, in a random order, chain with gaps and a scale
      (``d[next] = d[prev] * s[prev] * gap``): injective, ``complement`` admissible;
    * ``"mixed"``: one of the above, drawn.

    ``values`` (integers) replaces the ranges of ``"any"``, ``"nonneg"`` and
    ``"positive"``: each stride is one of them (of the kind's sign), e.g. powers of two
    and products of extents, which make modes meet and coalesce more often than random
    strides do.

    >>> sorted(set(sample(strides(4, "nonneg", values=(-1, 0, 8, 64)), 20)))
    [0, 8, 64]
    >>> sample(strides((2, (3, 4)), "left"), 1)
    [(1, (2, 6))]
    >>> sorted(set(sample(strides((2, 3), "compact"), 20)))
    [(1, 2), (3, 1)]
    """
    if kind not in STRIDE_KINDS:
        raise MalformedLayoutError(f"stride kind must be one of {STRIDE_KINDS}, got {kind!r}")
    _positive("max_stride", max_stride, 0)
    if values is not None:
        values = tuple(values)
        if not values or any(type(v) is not int for v in values):
            raise MalformedLayoutError(
                f"strides: values must be a non-empty sequence of ints, got {values!r}"
            )
    pools = _pools(values)
    if kind in _LOWEST and values is not None and kind not in pools:
        raise MalformedLayoutError(f"strides: none of the values {values!r} is a {kind!r} stride")
    fs = flatten(shape)

    def build(draw: Draw) -> Any:
        k = kind
        if k == "mixed":
            k = draw(
                st.sampled_from(
                    [x for x in STRIDE_KINDS[:-1] if values is None or x not in _LOWEST or x in pools]
                )
            )
        return _shaped(_flat_strides(draw, fs, k, max_stride, shape, pools), shape)

    return _named(strides, locals(), build)


# ============================================================================= layouts
def layouts(
    *,
    max_size: int = 256,
    max_rank: int = 3,
    max_depth: int = 2,
    max_extent: int = 8,
    kind: str = "any",
    max_stride: int = 16,
    values: Optional[Sequence[int]] = None,
    allow_empty: bool = False,
) -> SearchStrategy[Layout]:
    """Layouts: a shape from :func:`shapes` and a stride of ``kind`` from :func:`strides`
    (``values``: see there; ``allow_empty``: see :func:`shapes`).

    >>> from layoutproof import Layout
    >>> Ls = sample(layouts(max_size=32, kind="nonneg"), 50)
    >>> all(isinstance(L, Layout) and L.size <= 32 and min(L.eval_all()) >= 0 for L in Ls)
    True
    """
    sh = shapes(
        max_size=max_size,
        max_rank=max_rank,
        max_depth=max_depth,
        max_extent=max_extent,
        allow_empty=allow_empty,
    )

    def build(draw: Draw) -> Layout:
        s = draw(sh)
        return Layout(s, draw(strides(s, kind, max_stride=max_stride, values=values)))

    return _named(layouts, locals(), build)


def compact_layouts(
    *,
    max_size: int = 256,
    max_rank: int = 3,
    max_depth: int = 2,
    max_extent: int = 8,
    major: Optional[str] = None,
) -> SearchStrategy[Layout]:
    """Compact layouts: the image is exactly ``[0, size)``.  ``major="left"``
    (column-major), ``"right"`` (row-major) or None (the modes in any order).

    >>> Ls = sample(compact_layouts(), 50)
    >>> all(sorted(L.eval_all()) == list(range(L.size)) for L in Ls)
    True
    """
    kinds = {None: "compact", "left": "left", "right": "right"}
    if major not in kinds:
        raise MalformedLayoutError(f"major must be 'left', 'right' or None, got {major!r}")
    inner = layouts(
        max_size=max_size, max_rank=max_rank, max_depth=max_depth, max_extent=max_extent, kind=kinds[major]
    )
    return _named(compact_layouts, locals(), lambda draw: draw(inner))


def injective_layouts(
    *, max_size: int = 256, max_rank: int = 3, max_depth: int = 2, max_extent: int = 8
) -> SearchStrategy[Layout]:
    """Injective layouts: the modes chain in a random order, with gaps and a scale (so
    ``complement`` of them is admissible too); size-1 modes take any stride.

    >>> Ls = sample(injective_layouts(), 50)
    >>> all(len(set(L.eval_all())) == L.size for L in Ls)
    True
    """
    inner = layouts(
        max_size=max_size, max_rank=max_rank, max_depth=max_depth, max_extent=max_extent, kind="injective"
    )
    return _named(injective_layouts, locals(), lambda draw: draw(inner))


def bijective_layouts(
    *, max_size: int = 256, max_rank: int = 3, max_depth: int = 2, max_extent: int = 8
) -> SearchStrategy[Layout]:
    """Layouts whose image is exactly ``[0, size)``, the modes in any order (size-1
    modes with any stride).

    >>> Ls = sample(bijective_layouts(), 50)
    >>> all(sorted(L.eval_all()) == list(range(L.size)) for L in Ls)
    True
    """
    inner = layouts(
        max_size=max_size, max_rank=max_rank, max_depth=max_depth, max_extent=max_extent, kind="bijective"
    )
    return _named(bijective_layouts, locals(), lambda draw: draw(inner))


# ============================================================================= admissible operands
def complement_pairs(
    *, max_size: int = 256, max_rank: int = 3, max_depth: int = 2, max_extent: int = 8, cotarget: str = "any"
) -> SearchStrategy[Tuple[Layout, Any]]:
    """``(L, cotarget)`` with ``complement(L, cotarget)`` admissible: ``L``'s strides
    chain (stride-0 modes, which complement ignores, may appear), and the cotarget is an
    int (``cotarget="int"``), a shape (``"shape"``, e.g. ``(8, 4)``) or either (``"any"``),
    at least ``L``'s cosize.

    >>> from layoutproof import complement
    >>> pairs = sample(complement_pairs(cotarget="shape"), 30)
    >>> all(isinstance(M, tuple) for _, M in pairs)
    True
    >>> cs = [complement(L, M) for L, M in pairs]     # none raises
    """
    if cotarget not in ("int", "shape", "any"):
        raise MalformedLayoutError(f"cotarget must be 'int', 'shape' or 'any', got {cotarget!r}")
    sh = shapes(max_size=max_size, max_rank=max_rank, max_depth=max_depth, max_extent=max_extent)

    def build(draw: Draw) -> Tuple[Layout, Any]:
        s = draw(sh)
        fs = flatten(s)
        fd = _flat_strides(draw, fs, "injective", 16, s)
        for i in range(len(fs)):
            if draw(st.integers(0, 5)) == 0:
                fd[i] = 0  # complement ignores stride-0 modes
        L = Layout(s, _shaped(fd, s))
        extent = max([d * e for d, e in zip(fd, fs) if d != 0] + [1])
        total = extent * draw(st.integers(1, 4)) + draw(st.integers(0, extent))
        kind = cotarget if cotarget != "any" else draw(st.sampled_from(["int", "shape"]))
        if kind == "int":
            return L, total
        return L, tuple(draw(st.permutations(_digits(draw, total)))) if total > 1 else (1,)

    return _named(complement_pairs, locals(), build)


def composition_pairs(
    *,
    max_size: int = 256,
    max_rank: int = 3,
    max_depth: int = 2,
    max_extent: int = 8,
    a_kind: str = "any",
    extend: bool = True,
    broadcast: bool = True,
) -> SearchStrategy[Tuple[Layout, Layout]]:
    """``(A, B)`` with ``composition(A, B)`` admissible (CuTe C++'s stride and shape
    divisibility and the disjointness of ``B``'s modes hold by construction).

    ``A`` is drawn from :func:`layouts` with strides of ``a_kind``.  ``B``'s modes are
    disjoint runs of the digits of a random refinement of ``A``'s shape (stride: the
    run's first digit's index stride), in a random order and nesting; with ``extend``
    a run may reach past ``size(A)`` (along ``A``'s last mode, as CuTe), with
    ``broadcast`` stride-0 modes appear.

    >>> from layoutproof import composition
    >>> pairs = sample(composition_pairs(extend=False), 30)     # B's image inside A's domain
    >>> all(A(B(i)) == composition(A, B)(i) for A, B in pairs for i in range(B.size))
    True
    """
    al = layouts(
        max_size=max_size, max_rank=max_rank, max_depth=max_depth, max_extent=max_extent, kind=a_kind
    )

    def build(draw: Draw) -> Tuple[Layout, Layout]:
        A = draw(al)
        ds, ps = _refinement(draw, flatten(A.shape))
        if extend and draw(st.integers(0, 3)) == 0:
            e = draw(st.integers(2, 4))
            ps.append(ps[-1] * ds[-1] if ds else 1)
            ds.append(e)
        leaves = [(product(tuple(ds[a:b])), ps[a]) for a, b in _runs(draw, len(ds))]
        if broadcast:
            for _ in range(draw(st.integers(0, 2)) if draw(st.integers(0, 2)) == 0 else 0):
                leaves.insert(draw(st.integers(0, len(leaves))), (draw(st.integers(1, 4)), 0))
        if not leaves:
            leaves = [(1, 0)]
        s = _nest(draw, [x for x, _ in leaves], max_depth, max_rank)
        d = _shaped([y for _, y in leaves], s)
        return A, Layout(s, d)

    return _named(composition_pairs, locals(), build)


# ============================================================================= tilers
_TILER_KINDS = ("int", "layout", "tuple")


def _tiler_for(draw: Draw, L: Layout, kinds: Sequence[str], max_depth: int) -> Any:
    kind = draw(st.sampled_from(list(kinds)))
    if kind == "tuple":
        modes = [L] if type(L.shape) is not tuple else [get(L, i) for i in range(L.rank)]
        k = draw(st.integers(1, len(modes)))
        inner = [x for x in kinds if x != "tuple"] or ["int"]
        out = []
        for m in modes[:k]:
            out.append(None if draw(st.integers(0, 4)) == 0 else _tiler_for(draw, m, inner, max_depth))
        return tuple(out)
    ds, ps = _refinement(draw, flatten(L.shape))
    if kind == "int":
        j = draw(st.integers(0, len(ds)))
        return ps[j] if j < len(ds) else product(tuple(ds))
    runs = _runs(draw, len(ds))
    if not runs:
        return Layout(1, 0)
    leaves = [(product(tuple(ds[a:b])), ps[a]) for a, b in runs]
    s = _nest(draw, [x for x, _ in leaves], max_depth, 3)
    return Layout(s, _shaped([y for _, y in leaves], s))


def tilers(
    layout: Optional[Layout] = None, *, kinds: Sequence[str] = _TILER_KINDS, max_depth: int = 2
) -> SearchStrategy[Any]:
    """Tilers: ints, Layouts and tuples of them (``None`` for a mode left whole).

    With ``layout``, every tiler is admissible for ``logical_divide(layout, tiler)`` (and
    so for ``composition`` and the other divides): an int is a prefix product of a
    refinement of ``layout``'s shape, a Layout takes disjoint runs of the digits of such
    a refinement (so its complement in ``size(layout)`` exists), a tuple does so mode by
    mode for the first modes.  Without ``layout``, any well-formed tiler (not admissible
    for any layout in particular: for tests of error handling).

    >>> from layoutproof import Layout, logical_divide
    >>> L = Layout((8, 6), (1, 8))
    >>> ts = sample(tilers(L), 30)
    >>> ds = [logical_divide(L, T) for T in ts]     # none raises
    >>> sorted({type(T).__name__ for T in ts})
    ['Layout', 'int', 'tuple']
    """
    bad = [k for k in kinds if k not in _TILER_KINDS]
    if bad or not kinds:
        raise MalformedLayoutError(f"tiler kinds are drawn from {_TILER_KINDS}, got {list(kinds)!r}")
    if layout is None:
        leaf: SearchStrategy[Any] = st.one_of(st.integers(1, 16), layouts(max_size=64, kind="nonneg"))
        parts: List[SearchStrategy[Any]] = []
        if "int" in kinds:
            parts.append(st.integers(1, 16))
        if "layout" in kinds:
            parts.append(layouts(max_size=64, kind="nonneg"))
        if "tuple" in kinds:
            parts.append(st.lists(st.one_of(st.none(), leaf), min_size=1, max_size=3).map(tuple))
        return st.one_of(*parts)
    if not isinstance(layout, Layout):
        raise MalformedLayoutError(f"tilers(layout): a Layout, got {type(layout).__name__}")

    def build(draw: Draw) -> Any:
        return _tiler_for(draw, layout, kinds, max_depth)

    return _named(tilers, locals(), build)


def tiler_pairs(
    *,
    max_size: int = 256,
    max_rank: int = 3,
    max_depth: int = 2,
    max_extent: int = 8,
    kind: str = "any",
    kinds: Sequence[str] = _TILER_KINDS,
) -> SearchStrategy[Tuple[Layout, Any]]:
    """``(L, tiler)`` with ``logical_divide(L, tiler)`` admissible: ``L`` from
    :func:`layouts`, the tiler from :func:`tilers` for it.

    >>> from layoutproof import zipped_divide
    >>> pairs = sample(tiler_pairs(kinds=["tuple"]), 30)
    >>> all(zipped_divide(L, T).size == L.size for L, T in pairs)
    True
    """
    base = layouts(
        max_size=max_size, max_rank=max_rank, max_depth=max_depth, max_extent=max_extent, kind=kind
    )

    def build(draw: Draw) -> Tuple[Layout, Any]:
        L = draw(base)
        return L, _tiler_for(draw, L, kinds, max_depth)

    return _named(tiler_pairs, locals(), build)


# ============================================================================= swizzles
def swizzles(
    *, max_bits: int = 10, allow_identity: bool = True, negative_shift: bool = False
) -> SearchStrategy[Swizzle]:
    """Valid ``Swizzle(B, M, S)``: ``B, M >= 0``, ``|S| >= B``, ``M + B + |S| <= max_bits``
    (at most 64).  ``allow_identity=False`` keeps ``B >= 1``; ``negative_shift`` allows
    ``S < 0``.

    >>> sws = sample(swizzles(max_bits=8, allow_identity=False), 30)
    >>> all(s.bits >= 1 and s.base + s.bits + abs(s.shift) <= 8 for s in sws)
    True
    """
    _positive("max_bits", max_bits, 0)
    if max_bits > SWIZZLE_MAX_BITS:
        raise MalformedLayoutError(f"max_bits is at most {SWIZZLE_MAX_BITS}, got {max_bits}")
    lo = 0 if allow_identity else 1
    if 2 * lo > max_bits:
        raise MalformedLayoutError(f"no swizzle with B >= 1 fits in max_bits={max_bits}")

    def build(draw: Draw) -> Swizzle:
        b = draw(st.integers(lo, max_bits // 2))
        s = draw(st.integers(b, max_bits - b))
        m = draw(st.integers(0, max_bits - b - s))
        if negative_shift and s and draw(st.booleans()):
            s = -s
        return Swizzle(b, m, s)

    return _named(swizzles, locals(), build)


def swizzled_layouts(
    *,
    max_bits: int = 8,
    bijective: bool = True,
    max_rank: int = 3,
    max_depth: int = 2,
    negative_shift: bool = False,
    swizzle: Optional[Any] = None,
) -> SearchStrategy[ComposedLayout]:
    """Swizzled layouts ``Sw<B,M,S> o 0 o L`` (CuTe's shared-memory tiles).

    With ``bijective`` (the default), ``L`` is compact (modes in any order, row- and
    column-major included) and its size is a multiple of the swizzle's ``2**(M+B+|S|)``,
    so the swizzled layout is a bijection onto ``[0, size)``; otherwise ``L`` has any
    non-negative strides.  ``swizzle`` fixes the swizzle (a Swizzle or a strategy of
    them); by default it is drawn from :func:`swizzles` with ``B >= 1``.

    >>> from layoutproof import Swizzle
    >>> Cs = sample(swizzled_layouts(swizzle=Swizzle(3, 3, 3)), 10)
    >>> all(sorted(C(i) for i in range(C.size)) == list(range(C.size)) for C in Cs)
    True
    >>> str(Cs[0]).startswith("Sw<3,3,3> o 0 o ")
    True
    """
    if swizzle is None:
        sws = swizzles(max_bits=max_bits, allow_identity=False, negative_shift=negative_shift)
    elif isinstance(swizzle, Swizzle):
        sws = st.just(swizzle)
    else:
        sws = swizzle

    def build(draw: Draw) -> ComposedLayout:
        sw = draw(sws)
        if not bijective:
            L = draw(
                layouts(max_rank=max_rank, max_depth=max_depth, kind="nonneg", max_size=max(256, 2 * sw.size))
            )
            return ComposedLayout(sw, 0, L)
        t = sw.size.bit_length() - 1
        n = draw(st.integers(1, max(1, min(2 * max_rank, t + 1))))
        exps = [0] * n
        for _ in range(t):
            exps[draw(st.integers(0, n - 1))] += 1
        fs = [1 << e for e in exps]
        fs[draw(st.integers(0, n - 1))] *= draw(st.integers(1, 3))
        s = _nest(draw, fs, max_depth, max_rank)
        kind = draw(st.sampled_from(["compact", "left", "right"]))
        d = _shaped(_flat_strides(draw, flatten(s), kind, 0, s), s)
        return ComposedLayout(sw, 0, Layout(s, d))

    return _named(swizzled_layouts, locals(), build)


# ============================================================================= symbolic layouts
def symbolic_layouts(
    *,
    names: Sequence[str] = ("M", "N", "K"),
    max_symbols: Optional[int] = None,
    max_rank: int = 3,
    max_depth: int = 2,
    divisors: Sequence[int] = (2, 4, 8, 16, 32, 64, 128),
    kind: str = "compact",
) -> SearchStrategy[Tuple[Layout, Tuple[str, ...], tuple]]:
    """Layouts with SymPy leaves, with the assumptions under which they are meaningful:
    ``(layout, assumptions, symbols)``.

    At most ``max_symbols`` (default: 2, or fewer ``names``) of ``names`` occur.

    ``assumptions`` is a tuple of conditions (``"M % 64 == 0"``) for
    :func:`layoutproof.assuming` or ``assume=`` of :mod:`layoutproof.verify`; ``symbols``
    are the positive integer symbols that occur.  Shape leaves are ints, ``M``, ``c*M``
    and ``M/c`` (with ``M % c == 0`` assumed); the stride is compact column-major
    (``kind="left"``), compact in any mode order (``"compact"``) or small ints and
    symbols (``"any"``).

    >>> triples = sample(symbolic_layouts(), 20)
    >>> all(L.is_symbolic and set(syms) == L.free_symbols for L, _, syms in triples)
    True
    >>> L, facts, syms = next(t for t in triples if t[1])
    >>> facts[0].endswith("== 0")
    True
    >>> L.subs({X: 128 for X in syms}).is_symbolic    # 128 satisfies every divisibility fact
    False
    """
    if kind not in ("left", "compact", "any"):
        raise MalformedLayoutError(f"kind must be 'left', 'compact' or 'any', got {kind!r}")
    avail = tuple(names)
    most = (min(2, len(avail)) or 1) if max_symbols is None else max_symbols
    _positive("max_symbols", most)
    if not avail or most > len(avail):
        raise MalformedLayoutError(f"max_symbols={most} needs as many names, got {list(avail)!r}")

    def build(draw: Draw) -> Tuple[Layout, Tuple[str, ...], tuple]:
        from ..symbolic import assuming, symbols

        k = draw(st.integers(1, most))
        syms = symbols(" ".join(avail[:k]))
        syms = syms if isinstance(syms, tuple) else (syms,)
        if isinstance(syms, list):
            syms = tuple(syms)
        divs = [draw(st.sampled_from((1,) + tuple(divisors))) for _ in syms]
        r = draw(st.integers(1, max_rank))
        fs: List[Any] = []
        used = set()
        for i in range(r):
            j = draw(st.integers(0, k - 1))
            form = draw(st.integers(0 if i else 1, 3))  # the first leaf is symbolic
            X, c = syms[j], divs[j]
            if form == 0:
                fs.append(draw(st.integers(1, 8)))
                continue
            used.add(j)
            if form == 1:
                fs.append(X)
            elif form == 2:
                fs.append(draw(st.integers(2, 4)) * X)
            else:
                fs.append(X / c if c > 1 else X)
        facts = tuple(f"{syms[j]} % {divs[j]} == 0" for j in sorted(used) if divs[j] > 1)
        s = _nest(draw, fs, max_depth, max_rank)
        if kind == "any":
            pool = [0, 1, 2, 4] + [syms[j] for j in sorted(used)]
            fd = [draw(st.sampled_from(pool)) for _ in fs]
        else:
            order = list(range(len(fs)))
            if kind == "compact" and len(fs) > 1:
                order = list(draw(st.permutations(order)))
            fd = [0] * len(fs)
            cur: Any = 1
            for i in order:
                fd[i] = cur
                cur = cur * fs[i]
        with assuming(*facts):
            L = Layout(s, _shaped(fd, s))
        return L, facts, tuple(syms[j] for j in sorted(used))

    return _named(symbolic_layouts, locals(), build)


# ============================================================================= conditions
#: the symbols :func:`conditions` draws from, by their range: positive, non-negative, any
CONDITION_SYMBOLS = (("M", "positive"), ("N", "nonnegative"), ("K", "integer"))


def _cond_symbols(k: int) -> List[Any]:
    import sympy as sp

    out = []
    for name, kind in CONDITION_SYMBOLS[:k]:
        out.append(sp.Symbol(name, integer=True, **({kind: True} if kind != "integer" else {})))
    return out


def conditions(
    *, max_symbols: int = 3, max_depth: int = 3, max_facts: int = 2
) -> SearchStrategy[Tuple[Any, Tuple[Any, ...]]]:
    """``(condition, facts)``: SymPy conditions over 1 to ``max_symbols`` integer symbols
    (``M`` positive, ``N`` non-negative, ``K`` any integer), with what makes an integer
    reading go wrong: quotients that need not be exact (``M/2``, ``M/N``, ``3*K/4``),
    ``Mod`` of a quotient, ``floor``/``ceiling``, rational constants, negative powers,
    products of symbols; ``facts`` are up to ``max_facts`` residue, bound or drawn
    conditions.  For differential tests of a decision procedure against exhaustive
    evaluation (:func:`check_decision`).

    >>> pairs = sample(conditions(), 40)
    >>> len(pairs), all({x.name for x in c.free_symbols} <= {"M", "N", "K"} for c, _ in pairs)
    (40, True)
    >>> import sympy
    >>> any(c.has(sympy.Mod) for c, _ in pairs), any(len(fs) == 2 for _, fs in pairs)
    (True, True)
    """
    _positive("max_symbols", max_symbols)
    if max_symbols > len(CONDITION_SYMBOLS):
        raise MalformedLayoutError(f"max_symbols must be at most {len(CONDITION_SYMBOLS)}, got {max_symbols}")
    _positive("max_depth", max_depth)
    _positive("max_facts", max_facts, 0)

    def build(draw: Draw) -> Tuple[Any, Tuple[Any, ...]]:
        import sympy as sp

        syms = _cond_symbols(draw(st.integers(1, max_symbols)))
        pos = [x for x in syms if x.is_positive]
        small = st.integers(-3, 8)

        def expr(d: int) -> Any:
            form = draw(st.integers(-1, 10 if d > 0 else 1))
            if form <= 0:
                return draw(st.sampled_from(syms))
            if form == 1:
                return sp.Integer(draw(small))
            a = expr(d - 1)
            if form == 2:
                return a + expr(d - 1)
            if form == 3:
                return a * expr(d - 1)
            if form == 4:  # a rational coefficient
                return a * sp.Rational(draw(st.integers(-3, 5)), draw(st.integers(1, 4)))
            if form == 5:  # a quotient by a positive number or symbol
                q = draw(st.sampled_from([sp.Integer(2), sp.Integer(3), sp.Integer(4)] + pos))
                return a / q
            if form == 6:
                return sp.Mod(a, draw(st.sampled_from([sp.Integer(2), sp.Integer(3), sp.Integer(8)] + pos)))
            if form == 7:
                return sp.floor(a / draw(st.sampled_from([sp.Integer(2), sp.Integer(3)] + pos)))
            if form == 8:
                return sp.ceiling(a / draw(st.sampled_from([sp.Integer(2), sp.Integer(4)] + pos)))
            if form == 9 and pos:  # a negative power of a positive symbol
                return a * draw(st.sampled_from(pos)) ** -draw(st.integers(1, 2))
            return a + sp.Rational(draw(st.integers(-3, 3)), 2)

        def relation(d: int) -> Any:
            rel = draw(st.sampled_from([sp.Eq, sp.Ne, sp.Lt, sp.Le, sp.Gt, sp.Ge]))
            rhs = (
                expr(0)
                if draw(st.booleans())
                else sp.Rational(draw(st.integers(-4, 8)), draw(st.integers(1, 2)))
            )
            out = rel(expr(d), rhs)
            if out is sp.true or out is sp.false:  # SymPy decided it at once: keep a symbol
                out = rel(draw(st.sampled_from(syms)) + expr(d), rhs)
            return out

        def cond(d: int) -> Any:
            form = draw(st.integers(0, 5))
            if form == 4 and d > 1:
                return sp.And(relation(d - 1), relation(d - 1))
            if form == 5 and d > 1:
                return sp.Or(relation(d - 1), sp.Not(relation(d - 1)))
            return relation(d)

        def fact() -> Any:
            x = draw(st.sampled_from(syms))
            form = draw(st.integers(0, 3))
            if form == 0:
                k = draw(st.integers(2, 6))
                return sp.Eq(sp.Mod(x, k), draw(st.integers(0, k - 1)))
            if form == 1:
                return sp.Ge(x, draw(st.integers(-2, 4)))
            if form == 2:
                return sp.Le(x, draw(st.integers(3, 9)))
            return relation(1)

        c = cond(max_depth)
        fs = tuple(fact() for _ in range(draw(st.integers(0, max_facts))))
        return c, fs

    return _named(conditions, locals(), build)


def _evaluator(e: Any, order: Sequence[Any]) -> Callable[[Sequence[int]], Any]:
    """``e`` (a SymPy condition or expression) as a function of the values of ``order``,
    computed exactly with fractions: a Fraction, a bool, or None where SymPy's value is
    undefined (a division by zero).  ``Mod(a, b)`` is ``a - b*floor(a/b)`` as in SymPy."""
    import math
    import operator
    from fractions import Fraction

    import sympy as sp

    idx = {x: i for i, x in enumerate(order)}

    class _Undefined(Exception):
        pass

    def div(a: Fraction, b: Fraction) -> Fraction:
        if b == 0:
            raise _Undefined
        return a / b

    rels = {
        sp.Eq: operator.eq,
        sp.Ne: operator.ne,
        sp.StrictLessThan: operator.lt,
        sp.LessThan: operator.le,
        sp.StrictGreaterThan: operator.gt,
        sp.GreaterThan: operator.ge,
    }

    def build(n: Any) -> Callable[[Sequence[int]], Any]:
        if n is sp.true or n is sp.false:
            val = n is sp.true
            return lambda v: val
        if isinstance(n, sp.Symbol):
            i = idx[n]
            return lambda v: Fraction(v[i])
        if isinstance(n, sp.Rational):
            q = Fraction(int(n.p), int(n.q))
            return lambda v: q
        fs = [build(a) for a in n.args]
        if isinstance(n, sp.Add):
            return lambda v: sum((f(v) for f in fs), Fraction(0))
        if isinstance(n, sp.Mul):

            def mul(v: Sequence[int]) -> Fraction:
                out = Fraction(1)
                for f in fs:
                    out *= f(v)
                return out

            return mul
        if isinstance(n, sp.Pow) and n.exp.is_Integer:
            k = int(n.exp)
            fb = fs[0]
            return lambda v: fb(v) ** k if k >= 0 else div(Fraction(1), fb(v) ** -k)
        if isinstance(n, sp.Mod):
            fa, fb = fs
            return lambda v: (lambda a, b: a - b * math.floor(div(a, b)))(fa(v), fb(v))
        if isinstance(n, sp.floor):
            return lambda v: Fraction(math.floor(fs[0](v)))
        if isinstance(n, sp.ceiling):
            return lambda v: Fraction(math.ceil(fs[0](v)))
        if isinstance(n, sp.Abs):
            return lambda v: abs(fs[0](v))
        if isinstance(n, sp.Min):
            return lambda v: min(f(v) for f in fs)
        if isinstance(n, sp.Max):
            return lambda v: max(f(v) for f in fs)
        if type(n) in rels:
            op, fa, fb = rels[type(n)], fs[0], fs[1]
            return lambda v: op(fa(v), fb(v))
        if isinstance(n, sp.And):
            return lambda v: all([f(v) for f in fs])
        if isinstance(n, sp.Or):
            return lambda v: any([f(v) for f in fs])
        if isinstance(n, sp.Not):
            return lambda v: not fs[0](v)
        raise MalformedLayoutError(f"cannot evaluate {type(n).__name__} {str(n)[:60]}")

    f = build(e)

    def run(v: Sequence[int]) -> Any:
        try:
            return f(v)
        except _Undefined:
            return None

    return run


def check_decision(decision: Any, cond: Any, facts: Sequence[Any] = (), *, radius: int = 12) -> List[str]:
    """What is wrong with ``decision`` (a :class:`layoutproof.symbolic.Decision` of ``cond``
    under ``facts``) by exhaustive exact evaluation at every assignment of the symbols in
    ``[-radius, radius]`` that their ranges allow (the points where a condition is undefined
    skipped): "proved" must hold wherever the facts do, "refuted" nowhere where they do, and
    every counterexample and example must be what it says.  An empty list: no fault found.

    >>> import sympy as sp
    >>> from layoutproof.symbolic import Decision
    >>> M = sp.Symbol("M", integer=True, positive=True)
    >>> c = sp.Ne(sp.Mod(M / 2, 3), sp.Rational(1, 2))
    >>> check_decision(Decision(True, "z3"), c)
    ['proved, but false at M=1']
    """
    import itertools

    order = sorted(set(cond.free_symbols).union(*(f.free_symbols for f in facts)), key=lambda x: x.name)
    fc = _evaluator(cond, order)
    ff = [_evaluator(f, order) for f in facts]

    def rng(x: Any) -> range:
        lo = 1 if x.is_positive else 0 if x.is_nonnegative else -radius
        hi = -1 if x.is_negative else 0 if x.is_nonpositive else radius
        return range(lo, hi + 1)

    def fills(a: Dict[str, int]) -> Iterable[Tuple[int, ...]]:
        # a symbol the assignment leaves out may take any value of its range
        return itertools.product(*((int(a[x.name]),) if x.name in a else rng(x) for x in order))

    def show(v: Sequence[int]) -> str:
        return ", ".join(f"{x.name}={k}" for x, k in zip(order, v))

    out: List[str] = []
    val = decision.value
    for name, a, want in (
        ("counterexample", decision.counterexample, False),
        ("example", decision.example, True),
    ):
        if a is None:
            continue
        if not any(all(f(v) is True for f in ff) and fc(v) is want for v in fills(a)):
            out.append(f"{name} {a} is not one (the facts fail or the condition is not {want})")
    if val is None:
        return out
    for v in itertools.product(*(rng(x) for x in order)):
        if all(f(v) is True for f in ff):
            c = fc(v)
            if c is None:
                continue
            if val is True and c is not True:
                out.append(f"proved, but false at {show(v)}")
                break
            if val is False and c is True:
                out.append(f"refuted, but true at {show(v)}")
                break
    return out
