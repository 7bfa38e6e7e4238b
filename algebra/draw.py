"""Pictures of layouts: CuTe's ASCII table, thread-value tables, SVG, TikZ and PNG.

A rank-2 layout is drawn as a grid: row ``m`` is the 1-D coordinate of mode 0, column
``n`` the 1-D coordinate of mode 1, and cell ``(m, n)`` holds the offset ``L(m, n)``
(CuTe's ``print_layout``).  A rank-1 layout is a one-row table.

>>> from layoutproof import Layout
>>> print_layout(Layout((2, 3), (1, 2)))
(2,3):(1,2)
      0   1   2
    +---+---+---+
 0  | 0 | 2 | 4 |
    +---+---+---+
 1  | 1 | 3 | 5 |
    +---+---+---+

A thread-value (TV) layout maps ``(thread, value)`` to a 1-D index into an ``(M, N)``
tile (column-major unless the tile is given as a layout).  Its table shows, in cell
``(m, n)``, the one ``(t, v)`` with ``tv(t, v) == m + n*M``; a TV layout that is not a
bijection onto the tile is refused (:class:`~layoutproof.InadmissibleError`):

>>> tv = Layout(((2, 2), 2), ((2, 4), 1))       # 4 threads, 2 values each, on a 2x4 tile
>>> print_tv_layout(tv, (2, 4))
((2,2),2):((2,4),1)
tile (2,4)
          0       1       2       3
    +-------+-------+-------+-------+
 0  | T0 V0 | T1 V0 | T2 V0 | T3 V0 |
    +-------+-------+-------+-------+
 1  | T0 V1 | T1 V1 | T2 V1 | T3 V1 |
    +-------+-------+-------+-------+
>>> print_tv_layout(Layout((4, 2), (2, 1)), (2, 2))
Traceback (most recent call last):
    ...
layoutproof.errors.InadmissibleError: the TV layout (4,2):(2,1) is not a bijection ...

The SVG and TikZ pictures color each cell by its offset (default), by the shared-memory
bank of its offset (``color="bank"``), or, for TV layouts, by thread (CuTe's eight
pastel colors) or value.  SVG is written with `drawsvg <https://pypi.org/project/drawsvg>`_
and rasterized to PNG with `CairoSVG <https://pypi.org/project/CairoSVG>`_; both are
imported only when a picture is asked for.

>>> svg = layout_svg(Layout((2, 3), (1, 2)))
>>> svg.count('class="cell"'), 'data-offset="5"' in svg
(6, True)
>>> print(layout_tikz(Layout(4, 2)).splitlines()[0])
% Layout: 4:2
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import IO, TYPE_CHECKING, Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from . import kinds
from .composed import ComposedLayout
from .errors import InadmissibleError, LayoutError, MalformedLayoutError, show
from .layout import Layout, concrete_only, group_layout

if TYPE_CHECKING:  # pragma: no cover
    import numpy as np

__all__ = [
    "Picture",
    "layout_grid",
    "tv_grid",
    "print_layout",
    "print_tv_layout",
    "layout_table",
    "tv_layout_table",
    "tensor_table",
    "smem_bank",
    "layout_svg",
    "grid_svg",
    "tv_layout_svg",
    "layout_html",
    "layout_tikz",
    "tv_layout_tikz",
    "svg_to_png",
    "print_tensor",
    "tensor_svg",
    "tensor_html",
    "TV_COLORS",
    "MAX_SVG_CELLS",
]

#: Largest grid (in cells) that :func:`layout_svg` draws unless told otherwise.
MAX_SVG_CELLS = 16384
# No picture (ASCII, TikZ, grids) is computed beyond this many cells: a table that large is
# never read, and its offsets would not fit in memory long before the limit of the layout.
MAX_GRID_CELLS = 1 << 22

#: CuTe's eight pastel thread colors (``print_latex`` of a TV layout), by ``thread % 8``.
TV_COLORS = (
    "#afafff",
    "#afffaf",
    "#ffffaf",
    "#ffafaf",
    "#d2d2ff",
    "#d2ffd2",
    "#ffffd2",
    "#ffd2d2",
)

# viridis at 0, 1/4, 1/2, 3/4, 1; lightened toward white so that black text stays legible
_RAMP = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
_LIGHTEN = 0.55


class Picture(str):
    """A ``str`` whose ``repr`` is the text itself, so that a table returned at the
    interactive prompt shows as a table (it is an ordinary string otherwise)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return str(self).rstrip("\n")


# ----------------------------------------------------------------------------- grids
def _need_concrete(L: Any, what: str) -> Layout:
    if not isinstance(L, Layout):
        raise MalformedLayoutError(f"{what} needs a Layout, got {type(L).__name__} {show(L)}")
    fs, fd = L.flat_modes()
    for e in fs + fd:
        if type(e) is not int:
            raise LayoutError(f"{what} draws concrete layouts; {L} has a symbolic leaf {show(e)}")
    return L


def _need_drawable(L: Any, what: str) -> Any:
    """A concrete Layout or a swizzled (composed) layout over one: what the pictures draw."""
    if isinstance(L, ComposedLayout):
        a = L.layout_a
        if isinstance(a, Layout):
            _need_concrete(a, what)
        _need_concrete(L.layout_b, what)
        return L
    return _need_concrete(L, what)


def rank2_extents(L: Any) -> Tuple[int, int]:
    """``(M, N)``: the rows and columns a picture of ``L`` has (a rank-1 layout is one row);
    a LayoutError for rank 3 and above, naming the grouping that would draw it."""
    if type(L.shape) is not tuple or L.rank == 1:
        return 1, L.size
    r = L.rank
    if r == 0:
        return 1, 1
    if r == 2:
        return L[0].size, L[1].size
    raise LayoutError(
        f"a layout is drawn with rows (mode 0) and columns (mode 1); {L} has rank {r}: "
        f"pass a rank-2 layout, or group modes first, e.g. group(L, 1, {r}) = {_group_tail(L)}"
    )


def _group_tail(L: Any) -> str:
    if isinstance(L, ComposedLayout):
        return str(ComposedLayout(L.layout_a, L.offset, group_layout(L.layout_b, 1, L.rank)))
    return str(group_layout(L, 1, L.rank))


@concrete_only
def layout_grid(L: Drawable) -> "np.ndarray":
    """The offsets of a rank-2 (or rank-1) layout as an ``(M, N)`` numpy array:
    ``grid[m, n] == L(m, n)``; a rank-1 layout is one row.

    >>> layout_grid(Layout((2, 3), (1, 2))).tolist()
    [[0, 2, 4], [1, 3, 5]]
    >>> layout_grid(Layout(4, 3)).tolist()
    [[0, 3, 6, 9]]
    >>> from layoutproof import Swizzle, composition
    >>> layout_grid(composition(Swizzle(1, 0, 1), Layout((2, 2), (2, 1)))).tolist()
    [[0, 1], [3, 2]]
    """
    _need_drawable(L, "layout_grid")
    M, N = rank2_extents(L)
    _guard(L, M, N, MAX_GRID_CELLS)
    # eval_all() lists offsets in colexicographic order: index i = m + n*M
    return L.eval_all().reshape(N, M).T


def as_tile(tile: Any) -> Layout:
    """An (M, N) tile: a shape (column-major), CuTe notation, or a rank-2 layout."""
    if isinstance(tile, str):
        t = tile.strip()
        if t and t[0] != "(" and "," in t:
            t = "(" + t + ")"
        if "x" in t and ":" not in t:
            try:
                tile = tuple(int(p) for p in t.split("x"))
            except ValueError:
                raise MalformedLayoutError(f"tile {show(tile)}: expected MxN, e.g. 16x8") from None
        else:
            tile = Layout.parse(t)
    if not isinstance(tile, Layout):
        if type(tile) not in (tuple, list):
            raise MalformedLayoutError(
                f"a tile is an (M, N) shape or a rank-2 layout, got {type(tile).__name__} {show(tile)}"
            )
        tile = Layout(tuple(tile))
    _need_concrete(tile, "a tile")
    if tile.rank != 2 or type(tile.shape) is not tuple:
        raise LayoutError(f"a tile has two modes (M, N); got {tile} of rank {tile.rank}")
    return tile


@concrete_only
def tv_grid(tv: Layout, tile: Any, thr_id: Optional[Layout] = None) -> Tuple["np.ndarray", "np.ndarray"]:
    """Invert a thread-value layout over a tile: ``(threads, values)``, two ``(M, N)``
    arrays with ``tv(threads[m, n], values[m, n]) == tile(m, n)``.

    ``tv`` is rank 2, ``(thread, value) -> index``; ``tile`` is an ``(M, N)`` shape (the
    index of cell ``(m, n)`` is then ``m + n*M``), CuTe notation, or a rank-2 layout
    ``(m, n) -> index``.  Raises :class:`~layoutproof.InadmissibleError` unless ``tv`` is a
    bijection onto the tile's indices: the ``condition`` is ``"tv in tile"`` (a
    ``(t, v)`` lands outside the tile), ``"tv injective"`` (two ``(t, v)`` share a cell)
    or ``"tv surjective"`` (a cell no ``(t, v)`` owns); the ``witness`` is the
    offending ``(t, v)``, pair of them, or cell (``t`` is the thread coordinate of
    ``tv``).

    ``thr_id`` (CuTe's ``ThrID``, e.g. ``(4,2):(1,16)`` for SM70's quad pairs) maps the
    thread coordinate to the thread index shown: then ``threads[m, n]`` is
    ``thr_id(t)``.  It must be injective, of size ``size(tv[0])``.

    >>> T, V = tv_grid(Layout((2, 2), (2, 1)), (2, 2))
    >>> T.tolist(), V.tolist()
    ([[0, 1], [0, 1]], [[0, 0], [1, 1]])
    >>> tv_grid(Layout((2, 2), (1, 1)), (2, 2))
    Traceback (most recent call last):
        ...
    layoutproof.errors.InadmissibleError: ... T1 V0 and T0 V1 both own cell (1,0) ...
    """
    import numpy as np

    _need_concrete(tv, "a TV layout")
    if tv.rank != 2 or type(tv.shape) is not tuple:
        raise LayoutError(
            f"a TV layout has two modes (thread, value); {tv} has rank {tv.rank}"
            + (
                f": group modes first, e.g. group(tv, 1, {tv.rank}) = {_group_tail(tv)}"
                if tv.rank > 2
                else ": one value per thread is (T,1):(d,0)"
            )
        )
    tl = as_tile(tile)
    M, N = tl[0].size, tl[1].size
    _guard(tl, M, N, MAX_GRID_CELLS)
    _guard(tv, tv[0].size, tv[1].size, MAX_GRID_CELLS)
    T = tv[0].size
    cell_idx = tl.eval_all()  # cell c = m + n*M  ->  tile index
    what = f"the TV layout {tv} is not a bijection onto the {M}x{N} tile {tl}"

    order = np.argsort(cell_idx, kind="stable")
    sorted_idx = cell_idx[order]
    dup = np.nonzero(sorted_idx[1:] == sorted_idx[:-1])[0]
    if dup.size:
        a, b = sorted((int(order[dup[0]]), int(order[dup[0] + 1])))
        raise InadmissibleError(
            f"the tile {tl} is not injective: cells {_cell(a, M)} and {_cell(b, M)} share index "
            f"{int(cell_idx[a])}",
            condition="tile injective",
            witness=(_mn(a, M), _mn(b, M)),
        )
    idx = tv.eval_all()  # i = t + v*T  ->  tile index
    pos = np.searchsorted(sorted_idx, idx)
    pos_c = np.minimum(pos, sorted_idx.size - 1)
    outside = np.nonzero(sorted_idx[pos_c] != idx)[0]
    if outside.size:
        i = int(outside[0])
        raise InadmissibleError(
            f"{what}: {_tv(i, T)} maps to index {int(idx[i])}, which is no cell of the tile",
            condition="tv in tile",
            witness=_tvw(i, T),
        )
    cell_of = order[pos_c]  # the cell each (t, v) lands in
    owner = np.full(M * N, -1, dtype=np.int64)
    owner[cell_of] = np.arange(idx.size, dtype=np.int64)
    # owner[c] is the *last* (t, v) writing cell c; any other writer is a collision
    clash = np.nonzero(owner[cell_of] != np.arange(idx.size))[0]
    if clash.size:
        c = int(cell_of[int(clash[0])])
        i, j = (int(k) for k in np.nonzero(cell_of == c)[0][:2])  # the first two owners
        raise InadmissibleError(
            f"{what}: {_tv(i, T)} and {_tv(j, T)} both own cell {_cell(c, M)} (index {int(idx[i])})",
            condition="tv injective",
            witness=(_tvw(i, T), _tvw(j, T)),
        )
    missing = np.nonzero(owner < 0)[0]
    if missing.size:
        c = int(missing[0])
        raise InadmissibleError(
            f"{what}: cell {_cell(c, M)} (index {int(cell_idx[c])}) is owned by no (thread, value)",
            condition="tv surjective",
            witness=_mn(c, M),
        )
    grid = owner.reshape(N, M).T
    threads, values = grid % T, grid // T
    if thr_id is not None:
        ids = _thr_ids(thr_id, T)
        threads = ids[threads]
    return threads, values


def _thr_ids(thr_id: Any, T: int) -> "np.ndarray":
    import numpy as np

    if isinstance(thr_id, str):
        thr_id = Layout.parse(thr_id)
    _need_concrete(thr_id, "thr_id")
    if thr_id.size != T:
        raise LayoutError(f"thr_id {thr_id} has size {thr_id.size}; the TV layout has {T} threads")
    ids = thr_id.eval_all()
    u, first, counts = np.unique(ids, return_index=True, return_counts=True)
    if (counts > 1).any():
        k = int(np.nonzero(counts > 1)[0][0])
        a = int(first[k])
        b = int(np.nonzero(ids == u[k])[0][1])
        raise InadmissibleError(
            f"thr_id {thr_id} is not injective: threads {a} and {b} both become thread {int(u[k])}",
            condition="thr_id injective",
            witness=(a, b),
        )
    return ids


def _mn(c: int, M: int) -> Tuple[int, int]:
    return (c % M, c // M)


def _cell(c: int, M: int) -> str:
    return "({},{})".format(*_mn(c, M))


def _tvw(i: int, T: int) -> Tuple[int, int]:
    return (i % T, i // T)


def _tv(i: int, T: int) -> str:
    return "T{} V{}".format(*_tvw(i, T))


# ----------------------------------------------------------------------------- ASCII
def _table(header: List[str], labels: Sequence[Sequence[str]], width: int) -> str:
    """CuTe's print_layout grid: column indices, ``+---+`` rules, ``| v |`` cells."""
    M = len(labels)
    N = len(labels[0]) if M else 0
    w = max(width, len(str(max(N - 1, 0))))
    rw = max(2, len(str(max(M - 1, 0))))
    pad = " " * (rw + 2)
    rule = pad + ("+" + "-" * (w + 2)) * N + "+"
    out = list(header)
    out.append((pad + "".join(f"  {n:>{w}} " for n in range(N))).rstrip())
    for m in range(M):
        out.append(rule)
        out.append(f"{m:>{rw}}  " + "".join(f"| {s:>{w}} " for s in labels[m]) + "|")
    out.append(rule)
    return "\n".join(out) + "\n"


def _emit(text: str, file: Optional[IO[str]]) -> None:
    import sys

    (file if file is not None else sys.stdout).write(text)


@concrete_only
def layout_table(layout: Any) -> Picture:
    """The 2-D table of a layout's offsets, as CuTe C++'s ``print_layout`` prints it: the
    layout, column indices, then one row per coordinate of mode 0 between ``+---+`` rules.
    Returned as a :class:`Picture` (a ``str`` that shows as the table at the prompt);
    :func:`print_layout` prints it.  A rank-1 layout is a one-row table; a layout of rank >
    2 is refused (group its modes).  Swizzled layouts (composed layouts) are drawn too.

    >>> t = layout_table(Layout(((2, 2), 2), ((1, 4), 2)))
    >>> t
    ((2,2),2):((1,4),2)
          0   1
        +---+---+
     0  | 0 | 2 |
        +---+---+
     1  | 1 | 3 |
        +---+---+
     2  | 4 | 6 |
        +---+---+
     3  | 5 | 7 |
        +---+---+
    >>> from layoutproof import Swizzle, composition
    >>> print(layout_table(composition(Swizzle(1, 1, 1), Layout((4, 2), (2, 1)))), end="")
    Sw<1,1,1> o 0 o (4,2):(2,1)
          0   1
        +---+---+
     0  | 0 | 1 |
        +---+---+
     1  | 2 | 3 |
        +---+---+
     2  | 6 | 7 |
        +---+---+
     3  | 4 | 5 |
        +---+---+
    """
    grid = layout_grid(layout)
    labels = [[str(int(v)) for v in row] for row in grid.tolist()]
    # CuTe: idx_width = num_digits(cosize) + 2; wider where negative offsets need it
    top = layout.cosize if isinstance(layout, Layout) else int(grid.max()) + 1
    w = max([len(str(top))] + [len(s) for row in labels for s in row])
    return Picture(_table([str(layout)], labels, w))


def print_layout(layout: Any, *, file: Optional[IO[str]] = None) -> None:
    """Print :func:`layout_table` of ``layout`` to standard output (or ``file``), as CuTe
    C++'s ``print_layout`` does; returns None (the string is :func:`layout_table`).

    >>> print_layout(Layout(3, 1))
    3:1
          0   1   2
        +---+---+---+
     0  | 0 | 1 | 2 |
        +---+---+---+
    """
    _emit(layout_table(layout), file)


@concrete_only
def tv_layout_table(tv: Layout, tile: Any, *, thr_id: Optional[Layout] = None) -> Picture:
    """The thread-value table of a TV layout over an ``(M, N)`` tile: cell ``(m, n)``
    shows ``T{t} V{v}``, the one ``(thread, value)`` that owns it (see :func:`tv_grid`,
    which also says what is refused, and for ``thr_id``).  :func:`print_tv_layout`
    prints it.

    >>> tv_layout_table(Layout((2, 2), (2, 1)), (2, 2))
    (2,2):(2,1)
    tile (2,2)
              0       1
        +-------+-------+
     0  | T0 V0 | T1 V0 |
        +-------+-------+
     1  | T0 V1 | T1 V1 |
        +-------+-------+
    """
    T, V = tv_grid(tv, tile, thr_id)
    labels = [[f"T{t} V{v}" for t, v in zip(tr, vr)] for tr, vr in zip(T.tolist(), V.tolist())]
    tl = as_tile(tile)
    w = max((len(s) for row in labels for s in row), default=1)
    head = [str(tv), f"tile {_shape_txt(tl)}" + (f", thr_id {thr_id}" if thr_id is not None else "")]
    return Picture(_table(head, labels, w))


def print_tv_layout(
    tv: Layout, tile: Any, *, thr_id: Optional[Layout] = None, file: Optional[IO[str]] = None
) -> None:
    """Print :func:`tv_layout_table` to standard output (or ``file``), as CuTe's
    ``print_layout(tv, tile)``; returns None.

    >>> print_tv_layout(Layout((2, 1), (1, 0)), (2, 1))
    (2,1):(1,0)
    tile (2,1)
              0
        +-------+
     0  | T0 V0 |
        +-------+
     1  | T1 V0 |
        +-------+
    """
    _emit(tv_layout_table(tv, tile, thr_id=thr_id), file)


def _shape_txt(tl: Layout) -> str:
    """A compact column-major tile prints as its shape, any other as the layout."""
    return str(tl).split(":")[0] if tl == Layout(tl.shape) else str(tl)


# ----------------------------------------------------------------------------- colors
@concrete_only
def smem_bank(offset: int, elem_bytes: int = 4, *, banks: int = 32, bank_bytes: int = 4) -> int:
    """The shared-memory bank of element ``offset`` of ``elem_bytes``-byte elements:
    ``(offset * elem_bytes // bank_bytes) % banks`` (32 banks of 4 bytes on NVIDIA GPUs).

    >>> smem_bank(33), smem_bank(33, 2), smem_bank(5, 8)
    (1, 16, 10)
    """
    for name, v in (("elem_bytes", elem_bytes), ("banks", banks), ("bank_bytes", bank_bytes)):
        if type(v) is not int or v <= 0:
            raise MalformedLayoutError(f"smem_bank: {name} must be a positive integer, got {show(v)}")
    return (int(offset) * elem_bytes // bank_bytes) % banks


def _hex(rgb: Sequence[float]) -> str:
    return "#" + "".join(f"{max(0, min(255, round(c))):02x}" for c in rgb)


def _ramp(x: float) -> str:
    """A light viridis color for ``x`` in [0, 1]."""
    x = min(1.0, max(0.0, x)) * (len(_RAMP) - 1)
    i = min(int(x), len(_RAMP) - 2)
    f = x - i
    c = [a + (b - a) * f for a, b in zip(_RAMP[i], _RAMP[i + 1])]
    return _hex([v + (255 - v) * _LIGHTEN for v in c])


def _hsl(h: float, s: float, l: float) -> str:
    import colorsys

    return _hex([255 * c for c in colorsys.hls_to_rgb(h % 1.0, l, s)])


def _bank_color(b: int) -> str:
    # 32 hues; consecutive banks stride 7/32 of the circle apart so neighbors contrast
    return _hsl(((b * 7) % 32) / 32, 0.75, 0.78)


def _check_hex(c: Any, who: str) -> str:
    if isinstance(c, str) and len(c) == 7 and c[0] == "#":
        try:
            int(c[1:], 16)
            return c.lower()
        except ValueError:
            pass
    raise MalformedLayoutError(f"{who} must give colors as '#rrggbb', got {show(c)}")


ColorArg = Union[str, Callable[..., str], None]
#: what the layout pictures draw: a plain or a swizzled (composed) layout
Drawable = Union[Layout, ComposedLayout]


@dataclass
class _Grid:
    """What a picture shows: per cell its label lines, fill and data attributes."""

    title: str
    rows: int
    cols: int
    lines: List[List[List[str]]]
    fills: List[List[str]]
    data: List[List[Dict[str, int]]]
    tips: List[List[str]]
    kind: str = "layout"
    notes: List[str] = field(default_factory=list)


def _layout_model(L: Drawable, color: ColorArg, elem_bytes: int) -> _Grid:
    grid = layout_grid(L)
    M, N = grid.shape
    vals = [[int(v) for v in row] for row in grid.tolist()]
    lo = min(min(r) for r in vals)
    hi = max(max(r) for r in vals)
    if color == "bank":
        smem_bank(0, elem_bytes)  # validates elem_bytes
    lines: List[List[List[str]]] = []
    fills: List[List[str]] = []
    data: List[List[Dict[str, int]]] = []
    tips: List[List[str]] = []
    for m in range(M):
        lr, fr, dr, tr = [], [], [], []
        for n in range(N):
            o = vals[m][n]
            d = {"row": m, "col": n, "offset": o}
            tip = f"L({m},{n}) = {o}"
            if color == "offset":
                fill = _ramp((o - lo) / (hi - lo) if hi > lo else 0.0)
                lab = [str(o)]
            elif color == "bank":
                b = smem_bank(o, elem_bytes)
                d["bank"] = b
                fill = _bank_color(b)
                lab = [str(o), f"b{b}"]
                tip += f", bank {b}"
            elif color is None or color == "none":
                fill, lab = "#ffffff", [str(o)]
            elif callable(color):
                fill, lab = _check_hex(color(o), "color(offset)"), [str(o)]
            else:
                raise MalformedLayoutError(
                    "color must be 'offset', 'bank', 'none' or a function offset -> '#rrggbb', "
                    f"got {show(color)}"
                )
            lr.append(lab)
            fr.append(fill)
            dr.append(d)
            tr.append(tip)
        lines.append(lr)
        fills.append(fr)
        data.append(dr)
        tips.append(tr)
    title = str(L) + (f"   (banks of {elem_bytes}-byte elements)" if color == "bank" else "")
    return _Grid(title, M, N, lines, fills, data, tips)


def _tv_model(tv: Layout, tile: Any, color: ColorArg, thr_id: Any) -> _Grid:
    T, V = tv_grid(tv, tile, thr_id)
    tl = as_tile(tile)
    M, N = T.shape
    Tl, Vl = T.tolist(), V.tolist()
    idx = tl.eval_all().reshape(N, M).T.tolist()
    lines, fills, data, tips = [], [], [], []
    for m in range(M):
        lr, fr, dr, tr = [], [], [], []
        for n in range(N):
            t, v = Tl[m][n], Vl[m][n]
            if color == "thread":
                fill = TV_COLORS[t % 8]
            elif color == "value":
                fill = TV_COLORS[v % 8]
            elif color is None or color == "none":
                fill = "#ffffff"
            elif callable(color):
                fill = _check_hex(color(t, v), "color(thread, value)")
            else:
                raise MalformedLayoutError(
                    "color of a TV picture must be 'thread', 'value', 'none' or a function "
                    f"(thread, value) -> '#rrggbb', got {show(color)}"
                )
            lr.append([f"T{t} V{v}"])
            fr.append(fill)
            dr.append({"row": m, "col": n, "thread": t, "value": v, "index": int(idx[m][n])})
            tr.append(f"({m},{n}): thread {t}, value {v}")
        lines.append(lr)
        fills.append(fr)
        data.append(dr)
        tips.append(tr)
    title = f"{tv}  on tile {_shape_txt(tl)}" + (f", thr_id {thr_id}" if thr_id is not None else "")
    return _Grid(title, M, N, lines, fills, data, tips, kind="tv")


# ----------------------------------------------------------------------------- SVG
def _drawsvg() -> Any:
    try:
        import drawsvg
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "SVG pictures need the drawsvg package: pip install drawsvg (or pip install 'layoutproof[draw]')"
        ) from e
    return drawsvg


_CHAR_W = 7.83  # advance of a 13 px monospace character (0.602 em)
_FONT = 13


def _guard(what: Any, M: int, N: int, max_cells: Optional[int]) -> None:
    if max_cells is not None and M * N > max_cells:
        raise LayoutError(
            f"{what} has {M * N} cells, more than max_cells={max_cells}: "
            "pass a larger max_cells (or None) to draw it anyway"
        )


def _svg(g: _Grid, max_cells: Optional[int]) -> str:
    _guard(g.title, g.rows, g.cols, max_cells)
    dw = _drawsvg()
    two = any(len(lab) > 1 for row in g.lines for lab in row)
    longest = max(len(s) for row in g.lines for lab in row for s in lab)
    cw = max(32, round(_CHAR_W * longest + 14))
    ch = 40 if two else 28
    left = round(_CHAR_W * len(str(g.rows - 1)) + 16)
    top = 52
    W = left + cw * g.cols + 12
    W = max(W, round(0.602 * 14 * len(g.title) + 24))  # the 14 px caption
    H = top + ch * g.rows + 12
    d = dw.Drawing(W, H)
    d.append(dw.Rectangle(0, 0, W, H, fill="#ffffff"))
    d.append(dw.Text(g.title, 14, 10, 20, font_family="monospace", fill="#000000", class_="caption"))
    for n in range(g.cols):
        d.append(
            dw.Text(
                str(n),
                12,
                left + cw * n + cw / 2,
                top - 10,
                text_anchor="middle",
                font_family="monospace",
                fill="#555555",
                class_="col-label",
            )
        )
    for m in range(g.rows):
        d.append(
            dw.Text(
                str(m),
                12,
                left - 8,
                top + ch * m + ch / 2 + 4,
                text_anchor="end",
                font_family="monospace",
                fill="#555555",
                class_="row-label",
            )
        )
    for m in range(g.rows):
        for n in range(g.cols):
            x, y = left + cw * n, top + ch * m
            grp = dw.Group(class_="cell", **{f"data_{k}": v for k, v in g.data[m][n].items()})
            grp.append(dw.Rectangle(x, y, cw, ch, fill=g.fills[m][n], stroke="#000000", stroke_width=1))
            lab = g.lines[m][n]
            if len(lab) == 1:
                grp.append(
                    dw.Text(
                        lab[0],
                        _FONT,
                        x + cw / 2,
                        y + ch / 2 + 4.5,
                        text_anchor="middle",
                        font_family="monospace",
                        fill="#000000",
                    )
                )
            else:
                grp.append(
                    dw.Text(
                        lab[0],
                        _FONT,
                        x + cw / 2,
                        y + ch / 2 - 2,
                        text_anchor="middle",
                        font_family="monospace",
                        fill="#000000",
                    )
                )
                grp.append(
                    dw.Text(
                        lab[1],
                        10,
                        x + cw / 2,
                        y + ch / 2 + 12,
                        text_anchor="middle",
                        font_family="monospace",
                        fill="#444444",
                    )
                )
            grp.append_title(g.tips[m][n])
            d.append(grp)
    return d.as_svg()


def grid_svg(
    title: str,
    labels: Sequence[Sequence[Sequence[str]]],
    fills: Sequence[Sequence[str]],
    tips: Sequence[Sequence[str]],
    data: Optional[Sequence[Sequence[Dict[str, int]]]] = None,
) -> str:
    """An SVG grid drawn the way the layout pictures are: per cell one or two label lines,
    a fill (``'#rrggbb'``), a hover tip and ``data-*`` attributes; for pictures of other
    tables (bank patterns, analyses) that share the layout pictures' look.

    >>> svg = grid_svg("two cells", [[["a"], ["b", "c"]]], [["#ffffff", "#ff0000"]], [["tip a", "tip b"]])
    >>> svg.startswith("<?xml") and "tip b" in svg
    True
    """
    rows = len(labels)
    cols = len(labels[0]) if rows else 0
    shape_ok = (
        rows > 0
        and cols > 0
        and all(len(r) == cols for r in labels)
        and len(fills) == rows
        and len(tips) == rows
        and all(len(r) == cols for r in fills)
        and all(len(r) == cols for r in tips)
        and all(1 <= len(lab) <= 2 for r in labels for lab in r)
    )
    if not shape_ok:
        raise MalformedLayoutError(
            f"grid_svg needs equal, non-empty rows of labels (1 or 2 lines each), fills and tips; got "
            f"{rows} row(s) of labels, {len(fills)} of fills, {len(tips)} of tips"
        )
    fill_rows = [[_check_hex(c, "grid_svg") for c in r] for r in fills]
    cells = data if data is not None else [[{"row": m, "col": n} for n in range(cols)] for m in range(rows)]
    g = _Grid(
        title,
        rows,
        cols,
        [[list(lab) for lab in r] for r in labels],
        fill_rows,
        [[dict(c) for c in r] for r in cells],
        [[str(t) for t in r] for r in tips],
        kind="grid",
    )
    return _svg(g, None)


@concrete_only
def layout_svg(
    layout: Drawable,
    *,
    color: ColorArg = "offset",
    elem_bytes: int = 4,
    max_cells: Optional[int] = MAX_SVG_CELLS,
) -> str:
    """An SVG picture of a rank-2 (or rank-1) layout: a grid of its offsets.

    ``color`` is ``"offset"`` (a light viridis ramp from the least to the largest
    offset), ``"bank"`` (the 32-bank shared-memory bank of each offset for
    ``elem_bytes``-byte elements, see :func:`smem_bank`; the bank is also written in the
    cell), ``"none"``, or a function ``offset -> "#rrggbb"``.  Each cell is an SVG group
    ``<g class="cell" data-row= data-col= data-offset= [data-bank=]>`` with a tooltip.
    Grids larger than ``max_cells`` are refused (:class:`~layoutproof.LayoutError`).

    >>> s = layout_svg(Layout((4, 8), (1, 4)), color="bank", elem_bytes=8)
    >>> s.startswith('<?xml'), 'data-offset="31" data-bank="30"' in s
    (True, True)
    """
    _guard(_need_drawable(layout, "layout_svg"), *rank2_extents(layout), max_cells)
    return _svg(_layout_model(layout, color, elem_bytes), max_cells)


@concrete_only
def tv_layout_svg(
    tv: Layout,
    tile: Any,
    *,
    color: ColorArg = "thread",
    thr_id: Optional[Layout] = None,
    max_cells: Optional[int] = MAX_SVG_CELLS,
) -> str:
    """An SVG picture of a thread-value layout over an ``(M, N)`` tile (see
    :func:`tv_grid`): cell ``(m, n)`` reads ``T{t} V{v}`` and is colored by thread
    (CuTe's eight pastel colors, ``thread % 8``; default), by ``"value"``, ``"none"``,
    or a function ``(thread, value) -> "#rrggbb"``.  Cells carry ``data-thread``,
    ``data-value`` and ``data-index`` (the tile index).  ``thr_id``: see :func:`tv_grid`.

    >>> s = tv_layout_svg(Layout((2, 2), (2, 1)), (2, 2))
    >>> 'data-row="1" data-col="0" data-thread="0" data-value="1"' in s
    True
    """
    tl = as_tile(tile)
    _guard(tv, tl[0].size, tl[1].size, max_cells)
    return _svg(_tv_model(tv, tile, color, thr_id), max_cells)


@concrete_only
def layout_html(layout: Drawable, *, max_cells: Optional[int] = 1024) -> str:
    """HTML for a notebook (``Layout._repr_html_``): the layout in CuTe notation above its
    SVG picture.  It never raises for a layout it cannot draw (rank > 2, larger than
    ``max_cells``, symbolic, drawsvg missing): it shows the notation and says why.

    >>> h = layout_html(Layout((2, 2), (1, 2)))
    >>> h.startswith('<div class="layoutproof-layout">'), '<svg' in h
    (True, True)
    >>> 'group modes' in layout_html(Layout((2, 2, 2)))
    True
    """
    import html

    head = f'<div class="layoutproof-layout"><code>{html.escape(str(layout))}</code>'
    try:
        _guard(_need_drawable(layout, "layout_html"), *rank2_extents(layout), max_cells)
        svg = _svg(_layout_model(layout, "offset", 4), max_cells)
    except (LayoutError, ImportError) as e:
        return head + f"<br><small>(not drawn: {html.escape(str(e))})</small></div>"
    svg = svg[svg.index("<svg") :]
    return head + "<br>" + svg + "</div>"


# ----------------------------------------------------------------------------- tensors
def _need_tensor(t: Any, what: str) -> Drawable:
    L = getattr(t, "layout", None)
    if not isinstance(L, (Layout, ComposedLayout)) or not callable(t):
        raise MalformedLayoutError(f"{what} needs a Tensor, got {type(t).__name__} {show(t)}")
    return L


def _value_text(v: Any) -> str:
    import numbers

    if hasattr(v, "to_tuple"):  # a coordinate (identity tensors)
        v = v.to_tuple()
    if isinstance(v, numbers.Real) and not isinstance(v, numbers.Integral):
        s = f"{float(v):.4g}"
    else:
        s = str(v).replace(" ", "")
    return s if len(s) <= 12 else s[:11] + "\u2026"


def _tensor_cells(t: Any, what: str) -> Tuple[Drawable, int, int, List[List[Any]], Optional[List[List[int]]]]:
    L = _need_tensor(t, what)
    M, N = rank2_extents(L)
    # t(i) with an integer follows the colexicographic order of the domain: i = m + n*M
    values = [[t(m + n * M) for n in range(N)] for m in range(M)]
    offsets = None
    off = getattr(t, "offset", 0)
    if isinstance(L, ComposedLayout):
        concrete = True
    else:
        fs, fd = L.flat_modes()
        concrete = all(type(e) is int for e in fs + fd)
    if type(off) is int and concrete:
        offsets = [[off + int(o) for o in row] for row in layout_grid(L).tolist()]
    return L, M, N, values, offsets


@concrete_only
def tensor_table(t: Any) -> Picture:
    """A rank-2 (or rank-1) tensor's values in :func:`layout_table`'s table: cell
    ``(m, n)`` holds ``t(m, n)`` (coordinates for an identity tensor);
    :func:`print_tensor` prints it.

    >>> from layoutproof.tensor import make_tensor, make_identity_tensor
    >>> print_tensor(make_tensor([0.5 * i for i in range(6)], Layout((2, 3), (3, 1))))
    Tensor(list[6]+0 o (2,3):(3,1))
            0     1     2
        +-----+-----+-----+
     0  |   0 | 0.5 |   1 |
        +-----+-----+-----+
     1  | 1.5 |   2 | 2.5 |
        +-----+-----+-----+
    >>> print_tensor(make_identity_tensor((2, 2)))
    Tensor(ArithTuple+(0,0) o (2,2):(1@0,1@1))
              0       1
        +-------+-------+
     0  | (0,0) | (0,1) |
        +-------+-------+
     1  | (1,0) | (1,1) |
        +-------+-------+
    """
    _, _, _, values, _ = _tensor_cells(t, "tensor_table")
    labels = [[_value_text(v) for v in row] for row in values]
    w = max(len(x) for row in labels for x in row)
    return Picture(_table([repr(t)], labels, w))


def print_tensor(t: Any, *, file: Optional[IO[str]] = None) -> None:
    """Print :func:`tensor_table` to standard output (or ``file``), as CuTe's
    ``print_tensor``; returns None.

    >>> from layoutproof.tensor import make_tensor
    >>> print_tensor(make_tensor([7, 8], Layout(2, 1)))
    Tensor(list[2]+0 o 2:1)
          0   1
        +---+---+
     0  | 7 | 8 |
        +---+---+
    """
    _emit(tensor_table(t), file)


def _tensor_model(t: Any, color: ColorArg) -> _Grid:
    L, M, N, values, offsets = _tensor_cells(t, "tensor_svg")
    if color not in ("offset", "none", None):
        raise MalformedLayoutError(f"color of a tensor picture must be 'offset' or 'none', got {show(color)}")
    flat = [o for row in offsets for o in row] if offsets else [0]
    lo, hi = min(flat), max(flat)
    lines, fills, data, tips = [], [], [], []
    for m in range(M):
        lr, fr, dr, tr = [], [], [], []
        for n in range(N):
            txt = _value_text(values[m][n])
            d = {"row": m, "col": n}
            tip = f"t({m},{n}) = {txt}"
            if offsets is not None:
                o = offsets[m][n]
                d["offset"] = o
                tip += f" at engine index {o}"
            if color == "offset" and offsets is not None:
                fill = _ramp((offsets[m][n] - lo) / (hi - lo) if hi > lo else 0.0)
            else:
                fill = "#ffffff"
            lr.append([txt])
            fr.append(fill)
            dr.append(d)
            tr.append(tip)
        lines.append(lr)
        fills.append(fr)
        data.append(dr)
        tips.append(tr)
    return _Grid(repr(t), M, N, lines, fills, data, tips)


@concrete_only
def tensor_svg(t: Any, *, color: ColorArg = "offset", max_cells: Optional[int] = MAX_SVG_CELLS) -> str:
    """An SVG picture of a rank-2 (or rank-1) tensor: cell ``(m, n)`` shows ``t(m, n)``
    and is colored by the engine index it reads (``color="offset"``, where the layout is
    integral; ``"none"`` for white).  Cells carry ``data-row``, ``data-col`` and
    ``data-offset`` (the engine index).

    >>> from layoutproof.tensor import make_tensor
    >>> s = tensor_svg(make_tensor(list(range(10, 16)), Layout((2, 3), (3, 1))))
    >>> 'data-row="1" data-col="2" data-offset="5"' in s, ">15</text>" in s
    (True, True)
    """
    L = _need_tensor(t, "tensor_svg")
    _guard(repr(t), *rank2_extents(L), max_cells)
    return _svg(_tensor_model(t, color), max_cells)


@concrete_only
def tensor_html(t: Any, *, max_cells: Optional[int] = 1024) -> str:
    """HTML for a notebook (``Tensor._repr_html_``), as :func:`layout_html`: the tensor's
    repr above its SVG picture, or a note saying why it is not drawn.

    >>> from layoutproof.tensor import make_tensor
    >>> '<svg' in tensor_html(make_tensor(list(range(4)), Layout((2, 2))))
    True
    """
    import html

    head = f'<div class="layoutproof-tensor"><code>{html.escape(repr(t))}</code>'
    try:
        L = _need_tensor(t, "tensor_html")
        _guard(repr(t), *rank2_extents(L), max_cells)
        svg = _svg(_tensor_model(t, "offset"), max_cells)
    except (LayoutError, ImportError) as e:
        return head + f"<br><small>(not drawn: {html.escape(str(e))})</small></div>"
    return head + "<br>" + svg[svg.index("<svg") :] + "</div>"


# ----------------------------------------------------------------------------- TikZ
def _tikz_color(c: str) -> str:
    r, g, b = int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16)
    return f"{{rgb,255:red,{r};green,{g};blue,{b}}}"


def _tex(s: str) -> str:
    return "".join("\\" + ch if ch in "#$%&_{}" else ch for ch in s)


def _tikz(g: _Grid, comments: List[str]) -> str:
    out = [f"% {c}" for c in comments]
    out += [
        "\\documentclass{standalone}",
        "\\usepackage{tikz}",
        "",
        "\\begin{document}",
        "\\begin{tikzpicture}[x={(0cm,-1cm)},y={(1cm,0cm)},"
        "every node/.style={minimum size=1cm, outer sep=0pt}]",
        "",
    ]
    for m in range(g.rows):
        for n in range(g.cols):
            lab = g.lines[m][n]
            if g.kind == "tv":
                t, v = g.data[m][n]["thread"], g.data[m][n]["value"]
                body = f"\\shortstack{{T{t} \\\\ V{v}}}"
            elif len(lab) > 1:
                body = f"\\shortstack{{{_tex(lab[0])} \\\\ \\tiny {_tex(lab[1])}}}"
            else:
                body = _tex(lab[0])
            out.append(f"\\node[fill={_tikz_color(g.fills[m][n])}] at ({m},{n}) {{{body}}};")
    out.append(f"\\draw[color=black,thick,shift={{(-0.5,-0.5)}}] (0,0) grid ({g.rows},{g.cols});")
    out.append("")
    for m in range(g.rows):
        out.append(f"\\node at ({m},-1) {{\\Large{{\\texttt{{{m}}}}}}};")
    for n in range(g.cols):
        out.append(f"\\node at (-1,{n}) {{\\Large{{\\texttt{{{n}}}}}}};")
    out += ["\\end{tikzpicture}", "\\end{document}", ""]
    return "\n".join(out)


@concrete_only
def layout_tikz(layout: Layout, *, color: ColorArg = "offset", elem_bytes: int = 4) -> str:
    r"""A standalone LaTeX/TikZ document drawing the layout, as CuTe's ``print_latex``:
    one ``\node`` per cell at ``(m, n)`` (x down, y right) holding the offset and filled
    with the same color as :func:`layout_svg`, a grid, and row/column indices.

    >>> doc = layout_tikz(Layout((2, 2), (1, 2)), color="none")
    >>> print("\n".join(l for l in doc.splitlines() if l.startswith(r"\node[")))
    \node[fill={rgb,255:red,255;green,255;blue,255}] at (0,0) {0};
    \node[fill={rgb,255:red,255;green,255;blue,255}] at (0,1) {2};
    \node[fill={rgb,255:red,255;green,255;blue,255}] at (1,0) {1};
    \node[fill={rgb,255:red,255;green,255;blue,255}] at (1,1) {3};
    """
    _need_drawable(layout, "layout_tikz")
    g = _layout_model(layout, color, elem_bytes)
    return _tikz(g, [f"Layout: {layout}"])


@concrete_only
def tv_layout_tikz(
    tv: Layout, tile: Any, *, color: ColorArg = "thread", thr_id: Optional[Layout] = None
) -> str:
    r"""A standalone LaTeX/TikZ document of a TV layout over a tile, as CuTe's
    ``print_latex_tv``: each cell is ``\shortstack{T{t} \\ V{v}}`` on its thread's color.

    >>> doc = tv_layout_tikz(Layout((2, 2), (2, 1)), (2, 2))
    >>> print([l for l in doc.splitlines() if "at (1,0)" in l][0])
    \node[fill={rgb,255:red,175;green,175;blue,255}] at (1,0) {\shortstack{T0 \\ V1}};
    """
    g = _tv_model(tv, tile, color, thr_id)
    notes = [f"Layout TV: {tv}", f"Tile: {_shape_txt(as_tile(tile))}"]
    return _tikz(g, notes + ([f"ThrID: {thr_id}"] if thr_id is not None else []))


# ----------------------------------------------------------------------------- PNG
@concrete_only
def svg_to_png(svg: str, path: Any = None, *, scale: float = 2.0) -> bytes:
    """Rasterize an SVG string to PNG with CairoSVG (which needs the system cairo
    library); writes ``path`` when given and returns the PNG bytes."""
    try:
        import cairosvg
    except (ImportError, OSError) as e:
        raise ImportError(
            "PNG output needs CairoSVG and the cairo library: pip install cairosvg "
            "(or pip install 'layoutproof[draw]'), and the system's libcairo2"
        ) from e
    data = cairosvg.svg2png(bytestring=svg.encode("utf-8"), scale=scale)
    if path is not None:
        with open(path, "wb") as f:
            f.write(data)
    return data


# ----------------------------------------------------------------------------- notebooks
def _composed_repr_html(self: ComposedLayout) -> str:
    return layout_html(self)


def _composed_repr_svg(self: ComposedLayout) -> Optional[str]:
    try:
        return layout_svg(self, max_cells=1024)
    except (LayoutError, ImportError):
        return None


# Swizzled (composed) layouts get their notebook pictures from this module, which draws
# them: the picture is registered by the extension that makes it, so the composed-layout
# module never imports the drawing code.
ComposedLayout._repr_html_ = _composed_repr_html  # type: ignore[attr-defined]
ComposedLayout._repr_svg_ = _composed_repr_svg  # type: ignore[attr-defined]
# A plain Layout's notebook pictures: the core asks layoutproof.kinds for the hooks
# "layout_html" and "layout_svg" (called as fn(layout, max_cells=1024)), registered here.
kinds.register_hook("layout_html", layout_html)
kinds.register_hook("layout_svg", layout_svg)
