"""The playground's pictures, written straight as SVG text.

They are the pictures of :mod:`layoutproof.draw` -- the same grid, geometry, colours,
``<g class="cell" data-row= data-col= data-offset= ...>`` groups and hover titles (the tests
compare the two cell by cell) -- built with string formatting over numpy arrays instead of
an SVG object tree, which makes a 64x64 picture about fifty times faster: the drawing is the
cost of a cheap request.

>>> from layoutproof import Layout
>>> s = layout_svg(Layout((2, 3), (1, 2)))
>>> s.count('<g class="cell"'), 'data-row="1" data-col="2" data-offset="5"' in s
(6, True)
"""

from __future__ import annotations

import colorsys
from html import escape
from typing import Any, List, Optional, Sequence, Tuple

__all__ = ["layout_svg", "tv_layout_svg", "offset_fill", "bank_fill"]

# viridis at 0, 1/4, 1/2, 3/4, 1, lightened toward white (the colours of layoutproof.draw)
_RAMP = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))
_LIGHTEN = 0.55
_CHAR_W = 7.83
_FONT = 13


def _hex(rgb: Sequence[float]) -> str:
    return "#" + "".join(f"{max(0, min(255, round(c))):02x}" for c in rgb)


def offset_fill(x: float) -> str:
    """The light viridis colour of ``x`` in [0, 1]."""
    x = min(1.0, max(0.0, x)) * (len(_RAMP) - 1)
    i = min(int(x), len(_RAMP) - 2)
    f = x - i
    c = [a + (b - a) * f for a, b in zip(_RAMP[i], _RAMP[i + 1])]
    return _hex([v + (255 - v) * _LIGHTEN for v in c])


def bank_fill(b: int) -> str:
    """The colour of shared-memory bank ``b``: 32 hues, neighbours 7/32 of the circle apart."""
    h = ((b * 7) % 32) / 32
    return _hex([255 * c for c in colorsys.hls_to_rgb(h % 1.0, 0.78, 0.75)])


def _num(x: float) -> str:
    """A coordinate as drawsvg writes it (integers without a fraction)."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


def _grid(
    title: str,
    rows: int,
    cols: int,
    labels: List[List[List[str]]],
    fills: List[List[str]],
    data: List[List[List[Tuple[str, int]]]],
    tips: List[List[str]],
) -> str:
    two = any(len(lab) > 1 for row in labels for lab in row)
    longest = max(len(s) for row in labels for lab in row for s in lab)
    cw = max(32, round(_CHAR_W * longest + 14))
    ch = 40 if two else 28
    left = round(_CHAR_W * len(str(rows - 1)) + 16)
    top = 52
    W = max(left + cw * cols + 12, round(0.602 * 14 * len(title) + 24))
    H = top + ch * rows + 12
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}">\n'
        f'<rect x="0" y="0" width="{W}" height="{H}" fill="#ffffff" />\n'
        f'<text x="10" y="20" font-size="14" font-family="monospace" fill="#000000" class="caption">'
        f"{escape(title)}</text>\n"
    ]
    for n in range(cols):
        out.append(
            f'<text x="{_num(left + cw * n + cw / 2)}" y="{top - 10}" font-size="12" text-anchor="middle" '
            f'font-family="monospace" fill="#555555" class="col-label">{n}</text>\n'
        )
    for m in range(rows):
        out.append(
            f'<text x="{left - 8}" y="{_num(top + ch * m + ch / 2 + 4)}" font-size="12" text-anchor="end" '
            f'font-family="monospace" fill="#555555" class="row-label">{m}</text>\n'
        )
    for m in range(rows):
        y = top + ch * m
        for n in range(cols):
            x = left + cw * n
            attrs = " ".join(f'data-{k}="{v}"' for k, v in data[m][n])
            lab = labels[m][n]
            cx = _num(x + cw / 2)
            if len(lab) == 1:
                text = (
                    f'<text x="{cx}" y="{_num(y + ch / 2 + 4.5)}" font-size="{_FONT}" text-anchor="middle" '
                    f'font-family="monospace" fill="#000000">{escape(lab[0])}</text>'
                )
            else:
                text = (
                    f'<text x="{cx}" y="{_num(y + ch / 2 - 2)}" font-size="{_FONT}" text-anchor="middle" '
                    f'font-family="monospace" fill="#000000">{escape(lab[0])}</text>'
                    f'<text x="{cx}" y="{_num(y + ch / 2 + 12)}" font-size="10" text-anchor="middle" '
                    f'font-family="monospace" fill="#444444">{escape(lab[1])}</text>'
                )
            out.append(
                f'<g class="cell" {attrs}><rect x="{x}" y="{y}" width="{cw}" height="{ch}" '
                f'fill="{fills[m][n]}" stroke="#000000" stroke-width="1" />{text}'
                f"<title>{escape(tips[m][n])}</title></g>\n"
            )
    out.append("</svg>")
    return "".join(out)


def layout_svg(L: Any, *, color: str = "offset", elem_bytes: int = 4) -> str:
    """The picture :func:`layoutproof.draw.layout_svg` draws of a concrete rank-1 or rank-2
    layout (plain or swizzled), for ``color`` ``"offset"``, ``"bank"`` or ``"none"``."""
    from layoutproof.draw import layout_grid, smem_bank
    from layoutproof.errors import MalformedLayoutError

    grid = layout_grid(L)
    M, N = grid.shape
    vals = grid.tolist()
    lo, hi = int(grid.min()), int(grid.max())
    if color == "bank":
        smem_bank(0, elem_bytes)  # refuses a bad element size
    elif color not in ("offset", "none"):
        raise MalformedLayoutError(f"color is 'offset', 'bank' or 'none', got {color!r}")
    labels, fills, data, tips = [], [], [], []
    for m in range(M):
        lr, fr, dr, tr = [], [], [], []
        for n in range(N):
            o = int(vals[m][n])
            d = [("row", m), ("col", n), ("offset", o)]
            tip = f"L({m},{n}) = {o}"
            if color == "offset":
                fr.append(offset_fill((o - lo) / (hi - lo) if hi > lo else 0.0))
                lr.append([str(o)])
            elif color == "bank":
                b = smem_bank(o, elem_bytes)
                d.append(("bank", b))
                fr.append(bank_fill(b))
                lr.append([str(o), f"b{b}"])
                tip += f", bank {b}"
            else:
                fr.append("#ffffff")
                lr.append([str(o)])
            dr.append(d)
            tr.append(tip)
        labels.append(lr)
        fills.append(fr)
        data.append(dr)
        tips.append(tr)
    title = str(L) + (f"   (banks of {elem_bytes}-byte elements)" if color == "bank" else "")
    return _grid(title, M, N, labels, fills, data, tips)


def tv_layout_svg(tv: Any, tile: Any, *, color: str = "thread", thr_id: Optional[Any] = None) -> str:
    """The picture :func:`layoutproof.draw.tv_layout_svg` draws of a thread-value layout over
    ``tile``, for ``color`` ``"thread"``, ``"value"`` or ``"none"``."""
    from layoutproof.draw import TV_COLORS, as_tile, tv_grid
    from layoutproof.errors import MalformedLayoutError
    from layoutproof.layout import Layout

    if color not in ("thread", "value", "none"):
        raise MalformedLayoutError(f"color of a TV picture is 'thread', 'value' or 'none', got {color!r}")
    T, V = tv_grid(tv, tile, thr_id)
    tl = as_tile(tile)
    M, N = T.shape
    Tl, Vl = T.tolist(), V.tolist()
    idx = tl.eval_all().reshape(N, M).T.tolist()
    labels, fills, data, tips = [], [], [], []
    for m in range(M):
        lr, fr, dr, tr = [], [], [], []
        for n in range(N):
            t, v = int(Tl[m][n]), int(Vl[m][n])
            fr.append(
                TV_COLORS[t % 8] if color == "thread" else TV_COLORS[v % 8] if color == "value" else "#ffffff"
            )
            lr.append([f"T{t} V{v}"])
            dr.append([("row", m), ("col", n), ("thread", t), ("value", v), ("index", int(idx[m][n]))])
            tr.append(f"({m},{n}): thread {t}, value {v}")
        labels.append(lr)
        fills.append(fr)
        data.append(dr)
        tips.append(tr)
    shape = str(tl).split(":")[0] if tl == Layout(tl.shape) else str(tl)
    title = f"{tv}  on tile {shape}" + (f", thr_id {thr_id}" if thr_id is not None else "")
    return _grid(title, M, N, labels, fills, data, tips)
