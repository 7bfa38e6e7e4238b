"""The playground's pictures are layoutproof.draw's pictures: the same cells, data
attributes, fills, labels, hover titles and size, compared cell by cell."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from layoutproof import ComposedLayout, Layout, Swizzle, draw
from layoutproof.serve import svg

NS = "{http://www.w3.org/2000/svg}"


def picture(text):
    root = ET.fromstring(re.sub(r"^<\?xml[^>]*>", "", text))
    cells = []
    for g in root.iter(NS + "g"):
        if g.get("class") != "cell":
            continue
        rect = g.find(NS + "rect")
        cells.append(
            (
                {k: v for k, v in g.attrib.items() if k.startswith("data-")},
                rect.get("fill"),
                tuple(float(rect.get(a)) for a in ("x", "y", "width", "height")),
                [t.text for t in g.findall(NS + "text")],
                g.find(NS + "title").text,
            )
        )
    caption = next(t.text for t in root.iter(NS + "text") if t.get("class") == "caption")
    return root.get("width"), root.get("height"), caption, cells


LAYOUTS = [
    Layout((2, 3), (1, 2)),
    Layout((4, 8), (8, 1)),
    Layout(7, 3),
    Layout((3, 5), (0, 1)),
    Layout(((2, 2), 4), ((1, 8), 2)),
    Layout((16, 16), (1, 16)),
    ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 64), (64, 1))),
    ComposedLayout(Swizzle(1, 0, 1), 0, Layout((2, 2), (2, 1))),
]


@pytest.mark.parametrize("L", LAYOUTS, ids=str)
@pytest.mark.parametrize("color, elem", [("offset", 4), ("bank", 2), ("bank", 8), ("none", 4)])
def test_layout_pictures_match_draw(L, color, elem):
    assert picture(svg.layout_svg(L, color=color, elem_bytes=elem)) == picture(
        draw.layout_svg(L, color=color, elem_bytes=elem, max_cells=None)
    )


@pytest.mark.parametrize(
    "tv, tile, thr",
    [
        (Layout(((2, 2), 2), ((2, 4), 1)), (2, 4), None),
        (Layout(((4, 8), 2), ((16, 1), 8)), (8, 8), None),
        (Layout((32, 4), (1, 32)), Layout((16, 8), (8, 1)), None),
        (Layout((8, 2), (1, 8)), (4, 4), Layout((4, 2), (1, 16))),
    ],
)
@pytest.mark.parametrize("color", ["thread", "value", "none"])
def test_tv_pictures_match_draw(tv, tile, thr, color):
    assert picture(svg.tv_layout_svg(tv, tile, color=color, thr_id=thr)) == picture(
        draw.tv_layout_svg(tv, tile, color=color, thr_id=thr, max_cells=None)
    )


def test_text_is_escaped():
    s = svg.layout_svg(Layout((2, 2), (1, 2)))
    assert "<script" not in s and ET.fromstring(re.sub(r"^<\?xml[^>]*>", "", s)) is not None
