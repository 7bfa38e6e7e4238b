"""Layout pictures (layoutproof.draw and ``layoutproof show``): the seed talk's tables are
rendered as ASCII, SVG and TikZ, every cell is read back from the output and checked
against the layout evaluated coordinate by coordinate (and against the talk's own table)."""

from __future__ import annotations

import io
import re
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutproof import (
    ComposedLayout,
    InadmissibleError,
    Layout,
    LayoutError,
    MalformedLayoutError,
    Swizzle,
    blocked_product,
)
from layoutproof.cli import main
from layoutproof.draw import (
    MAX_SVG_CELLS,
    TV_COLORS,
    Picture,
    layout_grid,
    layout_html,
    layout_svg,
    layout_table,
    layout_tikz,
    print_layout,
    print_tensor,
    print_tv_layout,
    smem_bank,
    svg_to_png,
    tensor_html,
    tensor_svg,
    tensor_table,
    tv_grid,
    tv_layout_svg,
    tv_layout_table,
    tv_layout_tikz,
)

ROOT = Path(__file__).resolve().parents[2]
DOCS_IMAGES = ROOT / "docs" / "images"

# ----------------------------------------------------------------------------- the talk's tables
# shared/seeds/004 (Cecka's CuTe talk), "Quick Layout Examples", figure 1 (a)-(d)
COL_MAJOR = Layout((4, 8), (1, 4))
TALK_COL_MAJOR = """
0	4	8	12	16	20	24	28
1	5	9	13	17	21	25	29
2	6	10	14	18	22	26	30
3	7	11	15	19	23	27	31"""
TALK_FIGURE_1 = [
    (
        Layout((4, 8), (8, 1)),
        """
0	1	2	3	4	5	6	7
8	9	10	11	12	13	14	15
16	17	18	19	20	21	22	23
24	25	26	27	28	29	30	31""",
    ),
    (
        Layout((4, 8), (1, 5)),
        """
0	5	10	15	20	25	30	35
1	6	11	16	21	26	31	36
2	7	12	17	22	27	32	37
3	8	13	18	23	28	33	38""",
    ),
    (
        Layout((4, (4, 2)), (4, (1, 16))),
        """
0	1	2	3	16	17	18	19
4	5	6	7	20	21	22	23
8	9	10	11	24	25	26	27
12	13	14	15	28	29	30	31""",
    ),
    (
        Layout((8, (2, 2)), (2, (1, 16))),
        """
0	1	16	17
2	3	18	19
4	5	20	21
6	7	22	23
8	9	24	25
10	11	26	27
12	13	28	29
14	15	30	31""",
    ),
]

# "Hierarchical Layout: more multi-modes": morton3 = blocked_product(morton1, morton2).
# The talk's table has a typo in row 3 ("6 8 13 15"); the layout gives 5 7 13 15, which
# is what A(37) = 49 = A(5, 4) and the slice A(_, 2) = [8; 9; 12; 13; ...] also say.
MORTON1 = Layout((2, 2), (1, 2))
MORTON = Layout(((2, (2, 2)), (2, (2, 2))), ((1, (4, 16)), (2, (8, 32))))
TALK_MORTON = """
0	2	8	10	32	34	40	42
1	3	9	11	33	35	41	43
4	6	12	14	36	38	44	46
6	8	13	15	37	39	45	47
16	18	24	26	48	50	56	58
17	19	25	27	49	51	57	59
20	22	28	30	52	54	60	62
21	23	29	31	53	55	61	63"""
MORTON_TYPO = {(3, 0): (6, 5), (3, 1): (8, 7)}  # cell: (talk, true)

# SM80_16x8x8_F32F16F16F32_TN, C: (T32,V4) -> (M16,N8).  CuTe's SM80_16x8_Row; the talk's
# slide prints ((4,8),2):((16,1),8) (the 8x8x4 F64 C layout) above this table, which is
# the one below's layout, checked cell by cell.
SM80_16x8_C = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))
TALK_SM80_16x8_C = """
T0 V0	T0 V1	T1 V0	T1 V1	T2 V0	T2 V1	T3 V0	T3 V1
T4 V0	T4 V1	T5 V0	T5 V1	T6 V0	T6 V1	T7 V0	T7 V1
T8 V0	T8 V1	T9 V0	T9 V1	T10 V0	T10 V1	T11 V0	T11 V1
T12 V0	T12 V1	T13 V0	T13 V1	T14 V0	T14 V1	T15 V0	T15 V1
T16 V0	T16 V1	T17 V0	T17 V1	T18 V0	T18 V1	T19 V0	T19 V1
T20 V0	T20 V1	T21 V0	T21 V1	T22 V0	T22 V1	T23 V0	T23 V1
T24 V0	T24 V1	T25 V0	T25 V1	T26 V0	T26 V1	T27 V0	T27 V1
T28 V0	T28 V1	T29 V0	T29 V1	T30 V0	T30 V1	T31 V0	T31 V1
T0 V2	T0 V3	T1 V2	T1 V3	T2 V2	T2 V3	T3 V2	T3 V3
T4 V2	T4 V3	T5 V2	T5 V3	T6 V2	T6 V3	T7 V2	T7 V3
T8 V2	T8 V3	T9 V2	T9 V3	T10 V2	T10 V3	T11 V2	T11 V3
T12 V2	T12 V3	T13 V2	T13 V3	T14 V2	T14 V3	T15 V2	T15 V3
T16 V2	T16 V3	T17 V2	T17 V3	T18 V2	T18 V3	T19 V2	T19 V3
T20 V2	T20 V3	T21 V2	T21 V3	T22 V2	T22 V3	T23 V2	T23 V3
T24 V2	T24 V3	T25 V2	T25 V3	T26 V2	T26 V3	T27 V2	T27 V3
T28 V2	T28 V3	T29 V2	T29 V3	T30 V2	T30 V3	T31 V2	T31 V3"""

# SM80_8x8x4_F64F64F64F64_TN, C: (T32,V2) -> (M8,N8)
SM80_8x8_C = Layout(((4, 8), 2), ((16, 1), 8))
TALK_SM80_8x8_C = """
T0 V0	T0 V1	T1 V0	T1 V1	T2 V0	T2 V1	T3 V0	T3 V1
T4 V0	T4 V1	T5 V0	T5 V1	T6 V0	T6 V1	T7 V0	T7 V1
T8 V0	T8 V1	T9 V0	T9 V1	T10 V0	T10 V1	T11 V0	T11 V1
T12 V0	T12 V1	T13 V0	T13 V1	T14 V0	T14 V1	T15 V0	T15 V1
T16 V0	T16 V1	T17 V0	T17 V1	T18 V0	T18 V1	T19 V0	T19 V1
T20 V0	T20 V1	T21 V0	T21 V1	T22 V0	T22 V1	T23 V0	T23 V1
T24 V0	T24 V1	T25 V0	T25 V1	T26 V0	T26 V1	T27 V0	T27 V1
T28 V0	T28 V1	T29 V0	T29 V1	T30 V0	T30 V1	T31 V0	T31 V1"""

# SM70_8x8x4_F32F16F16F32_NT, C: (T8,V8) -> (M8,N8) with ThrID (4,2):(1,16) (quad pairs)
SM70_8x8_C = Layout(((2, 2, 2), (2, 2, 2)), ((1, 16, 4), (8, 2, 32)))
SM70_THR_ID = Layout((4, 2), (1, 16))
TALK_SM70_8x8_C = """
T0 V0	T0 V1	T2 V0	T2 V1	T0 V4	T0 V5	T2 V4	T2 V5
T1 V0	T1 V1	T3 V0	T3 V1	T1 V4	T1 V5	T3 V4	T3 V5
T0 V2	T0 V3	T2 V2	T2 V3	T0 V6	T0 V7	T2 V6	T2 V7
T1 V2	T1 V3	T3 V2	T3 V3	T1 V6	T1 V7	T3 V6	T3 V7
T16 V0	T16 V1	T18 V0	T18 V1	T16 V4	T16 V5	T18 V4	T18 V5
T17 V0	T17 V1	T19 V0	T19 V1	T17 V4	T17 V5	T19 V4	T19 V5
T16 V2	T16 V3	T18 V2	T18 V3	T16 V6	T16 V7	T18 V6	T18 V7
T17 V2	T17 V3	T19 V2	T19 V3	T17 V6	T17 V7	T19 V6	T19 V7"""

TV_CASES = [  # (tv, tile, thr_id, talk table)
    (SM80_16x8_C, (16, 8), None, TALK_SM80_16x8_C),
    (SM80_8x8_C, (8, 8), None, TALK_SM80_8x8_C),
    (SM70_8x8_C, (8, 8), SM70_THR_ID, TALK_SM70_8x8_C),
]
TV_IDS = ["sm80_16x8x8_C", "sm80_8x8x4_C", "sm70_8x8x4_C"]


def talk_table(text: str) -> list:
    return [row.split("\t") for row in text.strip("\n").splitlines()]


def talk_ints(text: str) -> list:
    return [[int(x) for x in row] for row in talk_table(text)]


# ----------------------------------------------------------------------------- readers
def read_ascii(text: str) -> tuple:
    """(header lines, column indices, row indices, cells) of a print_layout table, checking
    its frame: every rule identical, every cell the same width."""
    lines = text.rstrip("\n").split("\n")
    rules = [i for i, ln in enumerate(lines) if ln.lstrip().startswith("+")]
    first = rules[0]
    header, cols_line = lines[: first - 1], lines[first - 1]
    rule = lines[first]
    assert all(lines[i] == rule for i in rules), "rules differ"
    widths = {len(seg) for seg in rule.strip().strip("+").split("+")}
    assert len(widths) == 1, f"cells of different widths: {widths}"
    rows, cells = [], []
    body = lines[first:]
    assert len(body) % 2 == 1
    for k in range(1, len(body), 2):
        assert body[k - 1] == rule
        m = re.fullmatch(r"\s*(\d+)  \|(.*)\|", body[k])
        assert m, body[k]
        rows.append(int(m.group(1)))
        segs = m.group(2).split("|")
        assert all(len(s) == len(rule.strip().split("+")[1]) for s in segs)
        cells.append([s.strip() for s in segs])
    assert body[-1] == rule
    cols = [int(x) for x in cols_line.split()]
    # column indices sit right-aligned over their cells
    starts = [i for i, ch in enumerate(rule) if ch == "+"]
    for n, (a, b) in enumerate(zip(starts, starts[1:])):
        assert cols_line[a:b].strip() == str(n)
        assert cols_line[b - 2] == str(n)[-1]
    return header, cols, rows, cells


def read_svg(svg: str) -> tuple:
    """(caption, {(m, n): (data attributes, [texts], fill)}) of a layout SVG."""
    root = ET.fromstring(svg.encode())
    ns = {"s": "http://www.w3.org/2000/svg"}
    caption = root.find(".//s:text[@class='caption']", ns).text
    cells = {}
    for g in root.iter("{http://www.w3.org/2000/svg}g"):
        if g.get("class") != "cell":
            continue
        data = {k[5:]: int(v) for k, v in g.attrib.items() if k.startswith("data-")}
        texts = ["".join(t.itertext()) for t in g.findall("s:text", ns)]
        fill = g.find("s:rect", ns).get("fill")
        key = (data["row"], data["col"])
        assert key not in cells, f"cell {key} drawn twice"
        cells[key] = (data, texts, fill)
    return caption, cells


TIKZ_NODE = re.compile(
    r"^\\node\[fill=\{rgb,255:red,(\d+);green,(\d+);blue,(\d+)\}\] at \((\d+),(\d+)\) \{(.*)\};$"
)


def read_tikz(doc: str) -> dict:
    """{(m, n): (text, '#rrggbb')} from a TikZ document, checking its frame."""
    lines = doc.splitlines()
    assert "\\documentclass{standalone}" in lines and "\\usepackage{tikz}" in lines
    assert lines.index("\\begin{document}") < lines.index("\\end{document}") == len(lines) - 1
    assert doc.count("\\begin{tikzpicture}") == doc.count("\\end{tikzpicture}") == 1
    assert doc.count("{") == doc.count("}")
    cells = {}
    for ln in lines:
        m = TIKZ_NODE.match(ln)
        if m:
            r, g, b, i, j, text = m.groups()
            assert (int(i), int(j)) not in cells
            cells[int(i), int(j)] = (text, f"#{int(r):02x}{int(g):02x}{int(b):02x}")
    return cells


def tv_text(t: int, v: int) -> str:
    return f"T{t} V{v}"


def parse_tv(text: str) -> tuple:
    m = re.fullmatch(r"T(\d+) V(\d+)", text)
    assert m, text
    return int(m.group(1)), int(m.group(2))


def extents(L: Layout) -> tuple:
    return (L[0].size, L[1].size) if L.rank == 2 else (1, L.size)


def brute(L: Layout) -> list:
    """L(m, n) evaluated one coordinate at a time (rank-1: one row)."""
    M, N = extents(L)
    if L.rank == 2:
        return [[L(m, n) for n in range(N)] for m in range(M)]
    return [[L(n) for n in range(N)]]


def tv_owner(tv: Layout, tile: tuple, thr_id: Layout | None) -> dict:
    """Cell -> 'T V' by brute force in the forward direction."""
    M, N = tile
    out = {}
    for t in range(tv[0].size):
        for v in range(tv[1].size):
            i = tv(t, v)
            cell = (i % M, i // M)
            assert cell not in out
            out[cell] = tv_text(thr_id(t) if thr_id is not None else t, v)
    assert len(out) == M * N
    return out


LAYOUTS = [COL_MAJOR, MORTON] + [L for L, _ in TALK_FIGURE_1]


# ----------------------------------------------------------------------------- ASCII
def test_col_major_table_is_cute_print_layout():
    assert layout_table(COL_MAJOR) == (
        "(4,8):(1,4)\n"
        "       0    1    2    3    4    5    6    7\n"
        "    +----+----+----+----+----+----+----+----+\n"
        " 0  |  0 |  4 |  8 | 12 | 16 | 20 | 24 | 28 |\n"
        "    +----+----+----+----+----+----+----+----+\n"
        " 1  |  1 |  5 |  9 | 13 | 17 | 21 | 25 | 29 |\n"
        "    +----+----+----+----+----+----+----+----+\n"
        " 2  |  2 |  6 | 10 | 14 | 18 | 22 | 26 | 30 |\n"
        "    +----+----+----+----+----+----+----+----+\n"
        " 3  |  3 |  7 | 11 | 15 | 19 | 23 | 27 | 31 |\n"
        "    +----+----+----+----+----+----+----+----+\n"
    )


@pytest.mark.parametrize("L", LAYOUTS, ids=str)
def test_ascii_cells_are_the_layout(L):
    header, cols, rows, cells = read_ascii(layout_table(L))
    M, N = extents(L)
    assert header == [str(L)]
    assert cols == list(range(N)) and rows == list(range(M))
    assert [[int(c) for c in row] for row in cells] == brute(L)


def test_talk_tables():
    _, _, _, cells = read_ascii(layout_table(COL_MAJOR))
    assert [[int(c) for c in r] for r in cells] == talk_ints(TALK_COL_MAJOR)
    for L, table in TALK_FIGURE_1:
        _, _, _, cells = read_ascii(layout_table(L))
        assert [[int(c) for c in r] for r in cells] == talk_ints(table), str(L)


def test_morton_is_the_talks_blocked_product():
    morton3 = blocked_product(MORTON1, blocked_product(MORTON1, MORTON1))
    assert morton3 == MORTON
    _, _, _, cells = read_ascii(layout_table(morton3))
    got = [[int(c) for c in r] for r in cells]
    talk = talk_ints(TALK_MORTON)
    for (m, n), (typo, true) in MORTON_TYPO.items():
        assert talk[m][n] == typo and got[m][n] == true
        talk[m][n] = true
    assert got == talk
    # the talk's own evaluations
    assert MORTON(37) == MORTON(5, 4) == MORTON((1, 2), (0, 2)) == got[5][4] == 49
    assert [got[m][2] for m in range(8)] == [8, 9, 12, 13, 24, 25, 28, 29]


def test_rank1_is_one_row_and_rank0_one_cell():
    _, cols, rows, cells = read_ascii(layout_table(Layout(5, 3)))
    assert rows == [0] and cols == [0, 1, 2, 3, 4] and cells == [["0", "3", "6", "9", "12"]]
    assert layout_grid(Layout((), ())).tolist() == [[0]]
    assert layout_grid(Layout((6,), (2,))).tolist() == [[0, 2, 4, 6, 8, 10]]


def test_negative_and_zero_strides_keep_the_frame():
    L = Layout((3, 4), (-5, 0))
    _, _, _, cells = read_ascii(layout_table(L))
    assert [[int(c) for c in r] for r in cells] == brute(L)
    L = Layout((1, 12), (0, 0))  # cosize 1, column indices wider than the offsets
    _, cols, _, cells = read_ascii(layout_table(L))
    assert cols == list(range(12)) and cells == [["0"] * 12]


def test_wide_tables_keep_the_frame():
    L = Layout((101, 2), (1, 1000))  # three-digit row indices, four-digit offsets
    header, cols, rows, cells = read_ascii(layout_table(L))
    assert rows == list(range(101)) and [[int(c) for c in r] for r in cells] == brute(L)


def test_rank3_is_refused():
    with pytest.raises(LayoutError, match=r"rank 3.*group modes.*\(4,\(8,2\)\):\(1,\(4,32\)\)"):
        layout_table(Layout((4, 8, 2), (1, 4, 32)))
    for f in (layout_svg, layout_tikz, layout_grid):
        with pytest.raises(LayoutError):
            f(Layout((2, 2, 2)))


@pytest.mark.parametrize("bad", [None, 3, (4, 8), "(4,8):(1,4)"])
def test_non_layouts_are_refused(bad):
    for f in (print_layout, layout_svg, layout_tikz):
        with pytest.raises(MalformedLayoutError):
            f(bad)


def test_picture_file_and_repr():
    p = layout_table(COL_MAJOR)
    assert isinstance(p, Picture) and isinstance(p, str)
    assert repr(p) == p.rstrip("\n")
    q = tv_layout_table(SM80_16x8_C, (16, 8))
    assert isinstance(q, Picture) and q.startswith(str(SM80_16x8_C))


def test_print_functions_print_like_cute(capsys):
    """print_layout / print_tv_layout / print_tensor print (CuTe's print_layout does) and
    return None; file= writes elsewhere; the string forms are the *_table functions."""
    from layoutproof.tensor import make_tensor

    t = make_tensor(list(range(32)), COL_MAJOR)
    cases = [
        (print_layout, layout_table, (COL_MAJOR,)),
        (print_tv_layout, tv_layout_table, (SM80_16x8_C, (16, 8))),
        (print_tensor, tensor_table, (t,)),
    ]
    for printer, table, args in cases:
        assert printer(*args) is None
        out, err = capsys.readouterr()
        assert out == table(*args) and err == ""
        buf = io.StringIO()
        assert printer(*args, file=buf) is None
        assert buf.getvalue() == table(*args) and capsys.readouterr().out == ""


def test_print_layout_prints_in_a_script():
    code = "import layoutproof as lp\nlp.print_layout(lp.Layout((2, 2), (1, 2)))\n"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == layout_table(Layout((2, 2), (1, 2))), r.stderr


# ----------------------------------------------------------------------------- TV tables
@pytest.mark.parametrize("tv, tile, thr, talk", TV_CASES, ids=TV_IDS)
def test_tv_ascii_is_the_talks_table(tv, tile, thr, talk):
    header, cols, rows, cells = read_ascii(tv_layout_table(tv, tile, thr_id=thr))
    M, N = tile
    assert header[0] == str(tv) and header[1].startswith(f"tile ({M},{N})")
    assert rows == list(range(M)) and cols == list(range(N))
    assert cells == talk_table(talk)
    owner = tv_owner(tv, tile, thr)
    assert all(cells[m][n] == owner[m, n] for m in range(M) for n in range(N))


@pytest.mark.parametrize("tv, tile, thr, talk", TV_CASES, ids=TV_IDS)
def test_tv_grid_inverts(tv, tile, thr, talk):
    T, V = tv_grid(tv, tile)
    M, N = tile
    for m in range(M):
        for n in range(N):
            assert tv(int(T[m, n]), int(V[m, n])) == m + n * M


def test_tv_tile_given_as_a_layout():
    tile = Layout((16, 8), (8, 1))  # row-major tile: cell (m, n) is index 8m + n
    T, V = tv_grid(SM80_16x8_C, tile)
    for m in range(16):
        for n in range(8):
            assert SM80_16x8_C(int(T[m, n]), int(V[m, n])) == tile(m, n)
    for spelled in ("(16,8):(8,1)",):
        assert [a.tolist() for a in tv_grid(SM80_16x8_C, spelled)] == [T.tolist(), V.tolist()]
    for spelled in ("16x8", "16,8", "(16,8)", [16, 8], Layout((16, 8))):
        assert tv_grid(SM80_16x8_C, spelled)[0].tolist() == tv_grid(SM80_16x8_C, (16, 8))[0].tolist()
    # a hierarchical tile shape: M = 4*4
    assert tv_grid(SM80_16x8_C, ((4, 4), 8))[0].tolist() == tv_grid(SM80_16x8_C, (16, 8))[0].tolist()


def _check_witness(e, tv, tile):
    M, N = tile
    if e.condition == "tv injective":
        (t1, v1), (t2, v2) = e.witness
        assert (t1, v1) != (t2, v2) and tv(t1, v1) == tv(t2, v2)
    elif e.condition == "tv in tile":
        t, v = e.witness
        assert not 0 <= tv(t, v) < M * N
    elif e.condition == "tv surjective":
        m, n = e.witness
        image = {tv(t, v) for t in range(tv[0].size) for v in range(tv[1].size)}
        assert m + n * M not in image
    else:  # pragma: no cover
        pytest.fail(e.condition)


@pytest.mark.parametrize(
    "tv, tile, condition, needle",
    [
        (
            Layout(((4, 8), (2, 2)), ((32, 1), (16, 0))),
            (16, 8),
            "tv injective",
            "T0 V0 and T0 V2 both own cell (0,0)",
        ),
        (Layout(((4, 8), (2, 2)), ((32, 1), (16, 8))), (16, 4), "tv in tile", "no cell of the tile"),
        (Layout(((4, 8), 2), ((32, 1), 16)), (16, 8), "tv surjective", "owned by no"),
        (Layout((4, 2), (0, 1)), (2, 4), "tv injective", "T0 V0 and T1 V0"),  # replicated threads
        (Layout((2, 2), (1, -1)), (2, 2), "tv in tile", "T0 V1 maps to index -1"),
    ],
)
def test_tv_not_a_bijection_is_refused(tv, tile, condition, needle):
    for f in (tv_grid, print_tv_layout, tv_layout_svg, tv_layout_tikz):
        with pytest.raises(InadmissibleError) as ei:
            f(tv, tile)
        assert ei.value.condition == condition
        assert needle in str(ei.value)
        _check_witness(ei.value, tv, tile)


def test_tv_bad_arguments():
    with pytest.raises(InadmissibleError, match="tile .* is not injective") as ei:
        tv_grid(Layout((2, 2), (1, 2)), Layout((2, 2), (1, 1)))
    assert ei.value.condition == "tile injective"
    with pytest.raises(LayoutError, match="two modes"):
        tv_grid(Layout(8, 1), (2, 4))
    with pytest.raises(LayoutError, match=r"group\(tv, 1, 3\)"):
        tv_grid(Layout((2, 2, 2)), (2, 4))
    for tile in (8, (8,), (2, 2, 2), "2x", None, Layout(8, 1)):
        with pytest.raises(LayoutError):
            tv_grid(Layout((4, 2)), tile)
    with pytest.raises(LayoutError, match="size 4; the TV layout has 8 threads"):
        tv_grid(SM70_8x8_C, (8, 8), Layout(4, 1))
    with pytest.raises(InadmissibleError, match="thr_id .* is not injective") as ei:
        tv_grid(SM70_8x8_C, (8, 8), Layout((4, 2), (1, 0)))
    assert ei.value.condition == "thr_id injective" and ei.value.witness == (0, 4)


# ----------------------------------------------------------------------------- SVG
@pytest.mark.parametrize("L", LAYOUTS, ids=str)
def test_svg_cells_are_the_layout(L):
    caption, cells = read_svg(layout_svg(L))
    M, N = extents(L)
    want = brute(L)
    assert caption == str(L)
    assert set(cells) == {(m, n) for m in range(M) for n in range(N)}
    lo, hi = min(map(min, want)), max(map(max, want))
    for (m, n), (data, texts, fill) in cells.items():
        assert data["offset"] == want[m][n] and texts == [str(want[m][n])]
        assert re.fullmatch(r"#[0-9a-f]{6}", fill)
    # the ramp runs from the least to the largest offset
    fills = {data["offset"]: fill for data, _, fill in cells.values()}
    assert fills[lo] != fills[hi]


def test_svg_bank_coloring():
    L = Layout((8, 8), (8, 1))
    for elem_bytes in (2, 4, 8):
        _, cells = read_svg(layout_svg(L, color="bank", elem_bytes=elem_bytes))
        fill_of_bank = {}
        for (m, n), (data, texts, fill) in cells.items():
            b = smem_bank(L(m, n), elem_bytes)
            assert data["bank"] == b == (L(m, n) * elem_bytes // 4) % 32
            assert texts == [str(L(m, n)), f"b{b}"]
            assert fill_of_bank.setdefault(b, fill) == fill  # one color per bank
        assert len(set(fill_of_bank.values())) == len(fill_of_bank)  # distinct banks, distinct colors
    with pytest.raises(MalformedLayoutError):
        layout_svg(L, color="bank", elem_bytes=0)


def test_svg_other_colors():
    _, cells = read_svg(layout_svg(COL_MAJOR, color="none"))
    assert {f for _, _, f in cells.values()} == {"#ffffff"}
    _, cells = read_svg(layout_svg(COL_MAJOR, color=lambda o: "#00FF00" if o % 2 else "#0000ff"))
    assert all(f == ("#00ff00" if d["offset"] % 2 else "#0000ff") for d, _, f in cells.values())
    for bad in ("thread", "red", lambda o: "red", 3):
        with pytest.raises(MalformedLayoutError):
            layout_svg(COL_MAJOR, color=bad)


@pytest.mark.parametrize("tv, tile, thr, talk", TV_CASES, ids=TV_IDS)
def test_tv_svg_is_the_talks_table(tv, tile, thr, talk):
    caption, cells = read_svg(tv_layout_svg(tv, tile, thr_id=thr))
    M, N = tile
    table = talk_table(talk)
    owner = tv_owner(tv, tile, thr)
    assert caption.startswith(str(tv))
    assert set(cells) == {(m, n) for m in range(M) for n in range(N)}
    for (m, n), (data, texts, fill) in cells.items():
        assert texts == [table[m][n]] == [owner[m, n]]
        t, v = parse_tv(texts[0])
        assert (data["thread"], data["value"], data["index"]) == (t, v, m + n * M)
        assert fill == TV_COLORS[t % 8]


def test_tv_svg_value_coloring():
    _, cells = read_svg(tv_layout_svg(SM80_16x8_C, (16, 8), color="value"))
    assert all(f == TV_COLORS[d["value"] % 8] for d, _, f in cells.values())
    with pytest.raises(MalformedLayoutError):
        tv_layout_svg(SM80_16x8_C, (16, 8), color="offset")


def test_svg_size_guard():
    big = Layout((200, 200))
    assert 200 * 200 > MAX_SVG_CELLS
    with pytest.raises(LayoutError, match="max_cells"):
        layout_svg(big)
    with pytest.raises(LayoutError, match="40000 cells"):
        tv_layout_svg(Layout((200, 200)), (200, 200))
    _, cells = read_svg(layout_svg(Layout((3, 3)), max_cells=9))
    assert len(cells) == 9


def test_svg_is_escaped_and_well_formed():
    # a caption with the layout's own characters only, but the tooltips carry '(' ',' etc.
    svg = layout_svg(Layout((2, 2), (-1, 3)))
    ET.fromstring(svg.encode())
    assert svg.count("<title>") == 4


def test_html_for_notebooks():
    h = layout_html(COL_MAJOR)
    assert h.startswith('<div class="layoutproof-layout"><code>(4,8):(1,4)</code>')
    _, cells = read_svg(h[h.index("<svg") : h.index("</svg>") + 6])
    assert len(cells) == 32
    for L in (Layout((2, 2, 2)), Layout((100, 100))):
        h = layout_html(L)
        assert "<svg" not in h and "not drawn" in h and str(L) in h


# ----------------------------------------------------------------------------- tensors
def test_tensor_pictures_show_the_values():
    import numpy as np

    from layoutproof.tensor import local_tile, make_identity_tensor, make_tensor

    A = make_tensor(np.arange(64) * 10, MORTON)
    header, cols, rows, cells = read_ascii(tensor_table(A))
    assert header == [repr(A)] and cols == list(range(8)) and rows == list(range(8))
    assert [[int(c) for c in r] for r in cells] == [[10 * x for x in r] for r in brute(MORTON)]
    caption, svg_cells = read_svg(tensor_svg(A))
    assert caption == repr(A)
    for (m, n), (data, texts, _) in svg_cells.items():
        assert data["offset"] == MORTON(m, n) and texts == [str(10 * MORTON(m, n))]
    # a tile of a tensor: values and engine indices of the view
    T = local_tile(make_tensor(list(range(32)), Layout((4, 8), (8, 1))), (2, 4), (1, 1))
    _, svg_cells = read_svg(tensor_svg(T))
    for (m, n), (data, texts, _) in svg_cells.items():
        assert texts == [str(T(m, n))] and data["offset"] == T(m, n) == 8 * (2 + m) + 4 + n
    # an identity tensor shows coordinates and has no engine index
    I = make_identity_tensor((3, 4))
    _, _, _, cells = read_ascii(tensor_table(I))
    assert cells == [[f"({m},{n})" for n in range(4)] for m in range(3)]
    _, svg_cells = read_svg(tensor_svg(I))
    assert all("offset" not in d and f == "#ffffff" for d, _, f in svg_cells.values())
    # floats are shortened, notebooks degrade gracefully
    F = make_tensor(np.arange(4) / 3, Layout((2, 2)))
    assert read_ascii(tensor_table(F))[3] == [["0", "0.6667"], ["0.3333", "1"]]
    assert "<svg" in tensor_html(F)
    h = tensor_html(make_tensor(list(range(8)), Layout((2, 2, 2))))
    assert "<svg" not in h and "not drawn" in h
    for bad in (COL_MAJOR, [1, 2], None):
        with pytest.raises(MalformedLayoutError):
            tensor_svg(bad)
    with pytest.raises(MalformedLayoutError):
        tensor_svg(F, color="bank")


# ----------------------------------------------------------------------------- TikZ
@pytest.mark.parametrize("L", LAYOUTS, ids=str)
def test_tikz_cells_are_the_layout(L):
    doc = layout_tikz(L)
    assert doc.splitlines()[0] == f"% Layout: {L}"
    cells = read_tikz(doc)
    _, svg_cells = read_svg(layout_svg(L))
    want = brute(L)
    M, N = extents(L)
    assert set(cells) == {(m, n) for m in range(M) for n in range(N)}
    for (m, n), (text, fill) in cells.items():
        assert text == str(want[m][n])
        assert fill == svg_cells[m, n][2]  # the same colors as the SVG
    assert f"grid ({M},{N});" in doc
    for m in range(M):
        assert f"\\node at ({m},-1) {{\\Large{{\\texttt{{{m}}}}}}};" in doc


def test_tikz_bank():
    cells = read_tikz(layout_tikz(COL_MAJOR, color="bank", elem_bytes=8))
    for (m, n), (text, _) in cells.items():
        o = COL_MAJOR(m, n)
        assert text == f"\\shortstack{{{o} \\\\ \\tiny b{smem_bank(o, 8)}}}"


@pytest.mark.parametrize("tv, tile, thr, talk", TV_CASES, ids=TV_IDS)
def test_tv_tikz_is_the_talks_table(tv, tile, thr, talk):
    doc = tv_layout_tikz(tv, tile, thr_id=thr)
    assert doc.splitlines()[0] == f"% Layout TV: {tv}"
    cells = read_tikz(doc)
    table = talk_table(talk)
    for (m, n), (text, fill) in cells.items():
        mm = re.fullmatch(r"\\shortstack\{T(\d+) \\\\ V(\d+)\}", text)
        assert mm, text
        assert f"T{mm.group(1)} V{mm.group(2)}" == table[m][n]
        assert fill == TV_COLORS[int(mm.group(1)) % 8]
    assert len(cells) == tile[0] * tile[1]


# ----------------------------------------------------------------------------- properties
@st.composite
def rank2_layouts(draw):
    def mode():
        leaves = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3))
        strides = [draw(st.integers(-9, 40)) for _ in leaves]
        if len(leaves) == 1:
            return leaves[0], strides[0]
        return tuple(leaves), tuple(strides)

    (s0, d0), (s1, d1) = mode(), mode()
    return Layout((s0, s1), (d0, d1))


@settings(max_examples=60, deadline=None)
@given(rank2_layouts())
def test_property_ascii_svg_tikz_match_evaluation(L):
    want = brute(L)
    _, _, _, cells = read_ascii(layout_table(L))
    assert [[int(c) for c in r] for r in cells] == want
    assert layout_grid(L).tolist() == want
    _, svg_cells = read_svg(layout_svg(L, color="bank"))
    assert all(svg_cells[m, n][0]["offset"] == want[m][n] for m, n in svg_cells)
    assert all(int(t) == want[m][n] for (m, n), (t, _) in read_tikz(layout_tikz(L, color="none")).items())


@st.composite
def bijective_tv(draw):
    """A compact layout of shape (T, V), its leaves ordered at random, over an (M, N)
    tile with M*N == T*V: a bijection onto the tile."""
    leaves = draw(st.lists(st.integers(2, 4), min_size=2, max_size=5))
    k = draw(st.integers(1, len(leaves) - 1))
    order = draw(st.permutations(range(len(leaves))))
    strides = [0] * len(leaves)
    acc = 1
    for i in order:
        strides[i] = acc
        acc *= leaves[i]
    tv = Layout((tuple(leaves[:k]), tuple(leaves[k:])), (tuple(strides[:k]), tuple(strides[k:])))
    total = acc
    divisors = [d for d in range(1, total + 1) if total % d == 0]
    M = draw(st.sampled_from(divisors))
    return tv, (M, total // M)


@settings(max_examples=60, deadline=None)
@given(bijective_tv())
def test_property_tv_table_inverts(case):
    tv, (M, N) = case
    _, _, _, cells = read_ascii(tv_layout_table(tv, (M, N)))
    seen = set()
    for m in range(M):
        for n in range(N):
            t, v = parse_tv(cells[m][n])
            assert tv(t, v) == m + n * M
            seen.add((t, v))
    assert len(seen) == M * N


# ----------------------------------------------------------------------------- PNG
def _png_size(data: bytes) -> tuple:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def _svg_size(svg: str) -> tuple:
    root = ET.fromstring(svg.encode())
    return int(float(root.get("width"))), int(float(root.get("height")))


def test_docs_images_are_todays_pictures():
    """The pictures kept in docs/images are what the code draws now (the SVGs byte for
    byte; the PNG, rasterized from the SVG and looked at once, by its size)."""
    svg = tv_layout_svg(SM80_16x8_C, (16, 8))
    assert (DOCS_IMAGES / "sm80_16x8x8_c_tv.svg").read_text() == svg
    assert (DOCS_IMAGES / "morton.svg").read_text() == layout_svg(MORTON)
    w, h = _svg_size(svg)
    assert _png_size((DOCS_IMAGES / "sm80_16x8x8_c_tv.png").read_bytes()) == (2 * w, 2 * h)
    w, h = _svg_size(layout_svg(MORTON))
    assert _png_size((DOCS_IMAGES / "morton.png").read_bytes()) == (2 * w, 2 * h)


def _png(svg: str, path=None) -> bytes:
    """svg_to_png, or a skip where CairoSVG or the system cairo library is missing."""
    try:
        return svg_to_png(svg, path, scale=2)
    except ImportError as e:
        pytest.skip(str(e))


def _decode_png(data: bytes) -> tuple:
    """(width, height, rows of (r, g, b) pixels) of an 8-bit RGB/RGBA, non-interlaced PNG
    (what cairo writes), decoded with zlib alone."""
    w, h = _png_size(data)
    depth, ctype, _, _, interlace = data[24:29]
    assert depth == 8 and ctype in (2, 6) and interlace == 0, (depth, ctype, interlace)
    bpp = 4 if ctype == 6 else 3
    pos, idat = 8, b""
    while pos < len(data):
        (n,) = struct.unpack(">I", data[pos : pos + 4])
        if data[pos + 4 : pos + 8] == b"IDAT":
            idat += data[pos + 8 : pos + 8 + n]
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], (prev[i - bpp] if i >= bpp else 0)
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[x * bpp : x * bpp + 3]) for x in range(w)])
        prev = line
    return w, h, rows


def test_png_cells_have_the_thread_colors(tmp_path):
    svg = tv_layout_svg(SM80_16x8_C, (16, 8))
    out = tmp_path / "c.png"
    data = _png(svg, out)
    assert out.read_bytes() == data
    w, h, px = _decode_png(data)
    assert (w, h) == tuple(2 * x for x in _svg_size(svg))
    root = ET.fromstring(svg.encode())
    checked = 0
    for g in root.iter("{http://www.w3.org/2000/svg}g"):
        if g.get("class") != "cell":
            continue
        r = g.find("{http://www.w3.org/2000/svg}rect")
        x, y = float(r.get("x")), float(r.get("y"))
        got = px[int(2 * y + 6)][int(2 * x + 6)]  # inside the cell, off the text
        want = TV_COLORS[int(g.get("data-thread")) % 8]
        assert "#{:02x}{:02x}{:02x}".format(*got) == want, (g.attrib, got)
        checked += 1
    assert checked == 128


# ----------------------------------------------------------------------------- CLI
def test_cli_show_prints_the_table(capsys):
    assert main(["show", "(4,8):(1,4)"]) == 0
    out, err = capsys.readouterr()
    assert out == layout_table(COL_MAJOR) and err == ""


def test_cli_show_bare_shape(capsys):
    assert main(["show", "(4,8)"]) == 0
    assert capsys.readouterr().out == layout_table(COL_MAJOR)


def test_cli_show_expression(capsys):
    assert main(["show", "blocked_product((2,2):(1,2), blocked_product((2,2):(1,2), (2,2):(1,2)))"]) == 0
    out, _ = capsys.readouterr()
    assert out == layout_table(MORTON)


def test_cli_show_tv(capsys):
    assert main(["show", str(SM80_16x8_C), "--tv", "(16,8)"]) == 0
    out, _ = capsys.readouterr()
    _, _, _, cells = read_ascii(out)
    assert cells == talk_table(TALK_SM80_16x8_C)
    assert main(["show", str(SM70_8x8_C), "--tv", "8x8", "--thr-id", "(4,2):(1,16)"]) == 0
    out, _ = capsys.readouterr()
    assert read_ascii(out)[3] == talk_table(TALK_SM70_8x8_C)


def test_cli_show_files(tmp_path, capsys):
    svg, tex = tmp_path / "m.svg", tmp_path / "m.tex"
    assert main(["show", str(MORTON), "--svg", str(svg), "--tikz", str(tex)]) == 0
    out, err = capsys.readouterr()
    assert out == f"wrote {svg}\nwrote {tex}\n" and err == ""
    assert svg.read_text() == layout_svg(MORTON, max_cells=None)
    assert tex.read_text() == layout_tikz(MORTON)
    tsvg = tmp_path / "tv.svg"
    assert main(["show", str(SM80_16x8_C), "--tv", "16x8", "--svg", str(tsvg), "--color", "value"]) == 0
    assert tsvg.read_text() == tv_layout_svg(SM80_16x8_C, (16, 8), color="value")
    bsvg = tmp_path / "b.svg"
    assert main(["show", "(8,8):(8,1)", "--svg", str(bsvg), "--color", "bank", "--bytes", "2"]) == 0
    assert bsvg.read_text() == layout_svg(Layout((8, 8), (8, 1)), color="bank", elem_bytes=2)


def test_cli_show_to_stdout(capsys):
    assert main(["show", "(2,2):(1,2)", "--tikz", "-"]) == 0
    out, _ = capsys.readouterr()
    assert out == layout_tikz(Layout((2, 2), (1, 2)))
    assert main(["show", "(2,2):(1,2)", "--svg", "-"]) == 0
    out, _ = capsys.readouterr()
    assert out == layout_svg(Layout((2, 2), (1, 2)))


def test_cli_show_png(tmp_path, capsys):
    _png(layout_svg(Layout(1)))  # skips without CairoSVG
    png = tmp_path / "c.png"
    assert main(["show", str(SM80_16x8_C), "--tv", "(16,8)", "--png", str(png)]) == 0
    assert _png_size(png.read_bytes()) == tuple(2 * x for x in _svg_size(tv_layout_svg(SM80_16x8_C, (16, 8))))


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["(4,8,2):(1,4,32)"], "error: a layout is drawn with rows"),
        (["(4,8"], "error: "),
        (["(2,3):(1,2,3)"], "error: "),
        (["size((2,2):(1,2))"], "show draws a layout"),
        (["nosuch(4:1)"], "error: "),
        (["(4,2):(2,1)", "--tv", "2x2"], "inadmissible (tv in tile)"),
        (["((4,8),(2,2)):((32,1),(16,0))", "--tv", "16x8"], "witness: ((0, 0), (0, 2))"),
        (["(4,2):(1,4)", "--tv", "2x"], "error: tile"),
        (["(4,2):(1,4)", "--tv", "(2,2,2)"], "error: a tile has two modes"),
        (["(4,2):(1,4)", "--tv", "4x2", "--color", "bank"], "error: --color bank is for layouts"),
        (["(4,2):(1,4)", "--color", "thread"], "error: --color thread is for TV layouts"),
        (["(4,2):(1,4)", "--thr-id", "4:1"], "error: --thr-id goes with --tv"),
        (["(4,2):(1,4)", "--png", "-"], "error: --png writes a file"),
        (["(4,2):(1,4)", "--color", "bank", "--bytes", "0"], "elem_bytes must be a positive"),
        (["(4,2):(1,4)", "--svg", "/nonexistent-dir/x.svg"], "error: cannot write /nonexistent-dir/x.svg"),
    ],
)
def test_cli_show_errors_exit_2(argv, needle, capsys):
    assert main(["show"] + argv) == 2
    out, err = capsys.readouterr()
    assert needle in err, err
    assert "Traceback" not in err


def test_cli_show_usage(capsys):
    with pytest.raises(SystemExit) as ei:
        main(["show"])
    assert ei.value.code == 2
    with pytest.raises(SystemExit) as ei:
        main(["show", "--help"])
    assert ei.value.code == 0
    out, _ = capsys.readouterr()
    assert "--tv TILE" in out and "--tikz OUT" in out


# ----------------------------------------------------------------------------- imports
def test_drawing_libraries_are_imported_lazily():
    code = (
        "import sys, layoutproof, layoutproof.draw as d\n"
        "assert 'drawsvg' not in sys.modules and 'cairosvg' not in sys.modules, 'eager'\n"
        "d.print_layout(layoutproof.Layout((2, 2)))\n"
        "assert 'drawsvg' not in sys.modules, 'ascii needs no drawsvg'\n"
        "d.layout_svg(layoutproof.Layout((2, 2)))\n"
        "assert 'drawsvg' in sys.modules and 'cairosvg' not in sys.modules\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


# ----------------------------------------------------------------------------- swizzled layouts
SWZ = ComposedLayout(Swizzle(3, 3, 3), 0, Layout((8, 64), (64, 1)))


def test_swizzled_layouts_are_drawn():
    """Every picture of a swizzled layout shows its values: cell (m, n) is C(m, n)."""
    grid = layout_grid(SWZ)
    assert grid.shape == (8, 64)
    assert all(int(grid[m, n]) == SWZ(m, n) for m in range(8) for n in range(64))
    header, cols, rows, cells = read_ascii(layout_table(SWZ))
    assert header == [str(SWZ)]
    assert cells == [[str(SWZ(m, n)) for n in range(64)] for m in range(8)]
    svg = layout_svg(SWZ, color="bank", elem_bytes=2)
    assert svg.count('class="cell"') == 512
    assert f'data-row="1" data-col="0" data-offset="{SWZ(1, 0)}"' in svg
    tex = layout_tikz(SWZ)
    assert f"at (1,0) {{{SWZ(1, 0)}}}" in tex
    html = layout_html(ComposedLayout(Swizzle(1, 0, 1), 0, Layout((2, 2), (2, 1))))
    assert "<svg" in html and "not drawn" not in html


def test_swizzled_tensor_is_drawn():
    from layoutproof.tensor import make_tensor

    t = make_tensor([10 * i for i in range(512)], SWZ)
    _, _, _, cells = read_ascii(tensor_table(t))
    assert cells[1][0] == str(10 * SWZ(1, 0)) and cells[7][63] == str(10 * SWZ(7, 63))
    svg = tensor_svg(t)
    assert f'data-row="1" data-col="0" data-offset="{SWZ(1, 0)}"' in svg


def test_swizzled_symbolic_and_rank3_are_refused():
    from layoutproof import symbols

    M = symbols("M")
    with pytest.raises(LayoutError):
        layout_table(ComposedLayout(Swizzle(1, 0, 1), 0, Layout((M, 2), (2, 1))))
    with pytest.raises(LayoutError, match="group modes"):
        layout_table(ComposedLayout(Swizzle(1, 0, 1), 0, Layout((2, 2, 2))))


def test_swizzled_layouts_have_notebook_pictures():
    """Issue 18: a swizzled (composed) layout shows its picture in a notebook like a layout."""
    from layoutproof import Layout, Swizzle, composition

    C = composition(Swizzle(2, 0, 2), Layout((4, 4), (4, 1)))
    h = C._repr_html_()
    assert "Sw&lt;2,0,2&gt;" in h and "<svg" in h
    svg = C._repr_svg_()
    assert svg is not None and "<svg" in svg
    # the cells carry the swizzled offsets: row 1 of Sw<2,0,2> o (4,4):(4,1) is 5, 4, 7, 6
    assert [C(1, j) for j in range(4)] == [5, 4, 7, 6]
    big = composition(Swizzle(2, 0, 2), Layout((64, 64), (64, 1)))
    assert big._repr_svg_() is None  # past max_cells: no picture, never an error
