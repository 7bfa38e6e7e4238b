"""An independent encoding of the PTX ISA fragment tables (lane id, element -> row, col).

Nothing here is derived from the layouts of :mod:`layoutproof.gpu.isa.atoms`: every function is
a transcription of the formulas of the PTX ISA sections "Matrix Fragments for mma.m8n8k4",
"... mma.m16n8k4", "... mma.m16n8k8", "... mma.m16n8k16", "... mma.m16n8k32", of the
``dp4a`` description and of the ``ldmatrix``
description, written with PTX's own names (``groupID = %laneid >> 2``,
``threadID_in_group = %laneid % 4``).  :func:`~layoutproof.gpu.isa.atoms.verify_atom` compares
the atoms' CuTe layouts against these, point by point.

Conventions (PTX's, not CuTe's):

* ``i`` is the *element* index of the fragment (``a0, a1, ...``), not the register index.
  Two ``.f16``/``.bf16`` elements share a 32-bit register: element ``i`` lives in register
  ``i // 2`` (:func:`register_of`).  ``.tf32``/``.f32`` take one register per element,
  ``.f64`` one 64-bit register per element.
* A is ``M x K`` (row = m, col = k), B is ``K x N`` (row = k, col = n), C/D is ``M x N``.
* ``mma.m8n8k4`` (Volta, ``.f16``): the warp runs four independent MMAs, one per
  *quadpair* (lanes ``4q..4q+3`` low group, ``4q+16..4q+19`` high group); the functions
  give the (row, col) inside the lane's own quadpair's matrices.

Also here: the thread-value tables printed in the seed talk (Cecka, "CuTe", MMA atom
slides), transcribed as literal text (:data:`SEED_TABLES`), and their parser.

>>> m16n8k16_f16_a(5, 6)      # lane 5 (group 1, thread 1), element a6
(9, 10)
>>> ldmatrix_dst(9, 2, 1)     # lane 9, matrix 2, second b16 element: row 2, col 3
(2, 2, 3)
>>> ldmatrix_dst(9, 2, 1, trans=True)
(2, 3, 2)
"""

from __future__ import annotations

from typing import Callable, Dict, Optional, Tuple

from layoutproof.errors import MalformedLayoutError

__all__ = [
    "group_id",
    "thread_in_group",
    "register_of",
    "m16n8k16_f16_a",
    "m16n8k16_f16_b",
    "m16n8k8_f16_a",
    "m16n8k8_f16_b",
    "m16n8k8_tf32_a",
    "m16n8k8_tf32_b",
    "m16n8_c",
    "m8n8k4_f64_a",
    "m8n8k4_f64_b",
    "m8n8k4_f64_c",
    "m16n8k4_f64_a",
    "m16n8k4_f64_b",
    "m16n8k32_b8_a",
    "m16n8k32_b8_b",
    "dp4a_a",
    "dp4a_b",
    "dp4a_c",
    "m8n8k4_f16_a",
    "m8n8k4_f16_b",
    "m8n8k4_f32_c",
    "quadpair",
    "FragmentTable",
    "FRAGMENTS",
    "fragment",
    "ldmatrix_src",
    "ldmatrix_dst",
    "SEED_TABLES",
    "parse_seed_table",
]

RowCol = Tuple[int, int]


def group_id(lane: int) -> int:
    """PTX ``groupID = %laneid >> 2``."""
    return lane >> 2


def thread_in_group(lane: int) -> int:
    """PTX ``threadID_in_group = %laneid % 4``."""
    return lane % 4


def register_of(i: int, elem_bits: int) -> int:
    """The 32-bit register (64-bit for ``.f64``) that holds fragment element ``i``."""
    per = max(1, 32 // elem_bits)
    return i // per


# ----------------------------------------------------------------------------- m16n8k16
def m16n8k16_f16_a(lane: int, i: int) -> RowCol:
    """``mma.m16n8k16`` A, ``.f16``/``.bf16``, elements a0..a7."""
    g, t = group_id(lane), thread_in_group(lane)
    row = g if (i < 2 or 4 <= i < 6) else g + 8
    col = t * 2 + (i & 1) + (8 if i >= 4 else 0)
    return row, col


def m16n8k16_f16_b(lane: int, i: int) -> RowCol:
    """``mma.m16n8k16`` B, ``.f16``/``.bf16``, elements b0..b3 (row = k, col = n)."""
    g, t = group_id(lane), thread_in_group(lane)
    row = t * 2 + (i & 1) + (8 if i >= 2 else 0)
    return row, g


def m16n8_c(lane: int, i: int) -> RowCol:
    """``mma.m16n8k{4,8,16}`` C/D with ``.f32`` (or ``.f64``) accumulators, c0..c3."""
    g, t = group_id(lane), thread_in_group(lane)
    row = g if i < 2 else g + 8
    col = t * 2 + (i & 1)
    return row, col


# ----------------------------------------------------------------------------- m16n8k8
def m16n8k8_f16_a(lane: int, i: int) -> RowCol:
    """``mma.m16n8k8`` A, ``.f16``/``.bf16``, elements a0..a3."""
    g, t = group_id(lane), thread_in_group(lane)
    row = g if i < 2 else g + 8
    return row, t * 2 + (i & 1)


def m16n8k8_f16_b(lane: int, i: int) -> RowCol:
    """``mma.m16n8k8`` B, ``.f16``/``.bf16``, elements b0, b1."""
    g, t = group_id(lane), thread_in_group(lane)
    return t * 2 + i, g


def m16n8k8_tf32_a(lane: int, i: int) -> RowCol:
    """``mma.m16n8k8`` A, ``.tf32``, elements a0..a3 (one per register)."""
    g, t = group_id(lane), thread_in_group(lane)
    row = g if i in (0, 2) else g + 8
    col = t if i in (0, 1) else t + 4
    return row, col


def m16n8k8_tf32_b(lane: int, i: int) -> RowCol:
    """``mma.m16n8k8`` B, ``.tf32``, elements b0, b1."""
    g, t = group_id(lane), thread_in_group(lane)
    return (t if i == 0 else t + 4), g


# ----------------------------------------------------------------------------- m16n8k32
def m16n8k32_b8_a(lane: int, i: int) -> RowCol:
    """``mma.m16n8k32`` A, 8-bit (``.s8``/``.u8``/``.e4m3``/``.e5m2``), elements a0..a15
    (four per ``.b32`` register): ``a0..a3`` and ``a8..a11`` in row ``groupID``, the others
    in row ``groupID + 8``; column ``threadID_in_group*4 + (i & 3)``, plus 16 for ``a8..a15``."""
    g, t = group_id(lane), thread_in_group(lane)
    row = g if (i < 4 or 8 <= i < 12) else g + 8
    col = t * 4 + (i & 3) + (16 if i >= 8 else 0)
    return row, col


def m16n8k32_b8_b(lane: int, i: int) -> RowCol:
    """``mma.m16n8k32`` B, 8-bit, elements b0..b7 (row = k, col = n): row
    ``threadID_in_group*4 + (i & 3)``, plus 16 for ``b4..b7``; column ``groupID``."""
    g, t = group_id(lane), thread_in_group(lane)
    return t * 4 + (i & 3) + (16 if i >= 4 else 0), g


# ----------------------------------------------------------------------------- dp4a
def dp4a_a(lane: int, i: int) -> RowCol:
    """``dp4a.s32.s32 d, a, b, c`` (SM61): ``d = c + sum_i a.byte[i] * b.byte[i]`` -- one
    thread; A is the ``1 x 4`` row of the four bytes of register ``a`` (byte ``i`` = k ``i``)."""
    return 0, i


def dp4a_b(lane: int, i: int) -> RowCol:
    """``dp4a`` B: the ``4 x 1`` column of the bytes of ``b`` (row = k = byte ``i``)."""
    return i, 0


def dp4a_c(lane: int, i: int) -> RowCol:
    """``dp4a`` C/D: the one ``.s32``."""
    return 0, 0


# ----------------------------------------------------------------------------- f64
def m8n8k4_f64_a(lane: int, i: int) -> RowCol:
    """``mma.m8n8k4`` A, ``.f64``, element a0."""
    return group_id(lane), thread_in_group(lane)


def m8n8k4_f64_b(lane: int, i: int) -> RowCol:
    """``mma.m8n8k4`` B, ``.f64``, element b0."""
    return thread_in_group(lane), group_id(lane)


def m8n8k4_f64_c(lane: int, i: int) -> RowCol:
    """``mma.m8n8k4`` C/D, ``.f64``, elements c0, c1."""
    return group_id(lane), thread_in_group(lane) * 2 + i


def m16n8k4_f64_a(lane: int, i: int) -> RowCol:
    """``mma.m16n8k4`` A, ``.f64`` (and ``.tf32``), elements a0, a1."""
    g, t = group_id(lane), thread_in_group(lane)
    return (g if i == 0 else g + 8), t


def m16n8k4_f64_b(lane: int, i: int) -> RowCol:
    """``mma.m16n8k4`` B, ``.f64`` (and ``.tf32``), element b0."""
    return thread_in_group(lane), group_id(lane)


# ----------------------------------------------------------------------------- Volta m8n8k4
def quadpair(lane: int) -> int:
    """The quadpair (0..3) of a lane: lanes ``4q..4q+3`` and ``4q+16..4q+19``."""
    return (lane >> 2) & 3


def _high(lane: int) -> int:
    return 4 if lane >= 16 else 0


def m8n8k4_f16_a(lane: int, i: int, major: str = "row") -> RowCol:
    """``mma.m8n8k4`` A, ``.f16``, a0..a3, ``.row`` or ``.col`` A."""
    if major == "row":
        return lane % 4 + _high(lane), i
    return i % 4 + _high(lane), lane % 4


def m8n8k4_f16_b(lane: int, i: int, major: str = "col") -> RowCol:
    """``mma.m8n8k4`` B, ``.f16``, b0..b3, ``.row`` or ``.col`` B (row = k, col = n)."""
    if major == "row":
        return lane % 4, i + _high(lane)
    return i, lane % 4 + _high(lane)


def m8n8k4_f32_c(lane: int, i: int) -> RowCol:
    """``mma.m8n8k4`` C/D with ``.f32`` accumulators, c0..c7:
    ``X = (threadID_in_group & 1) + (i & 2)``, row = X (+4 for the high group),
    col = ``(threadID_in_group & 2) + (i & 1) + (i & 4)``."""
    t = thread_in_group(lane)
    row = (t & 1) + (i & 2) + _high(lane)
    col = (t & 2) + (i & 1) + (i & 4)
    return row, col


# ----------------------------------------------------------------------------- the table
class FragmentTable:
    """One operand of one PTX shape/type: ``elements`` per lane, ``rows x cols`` matrix,
    element width ``bits``, and ``fn(lane, i) -> (row, col)``."""

    __slots__ = ("fn", "elements", "rows", "cols", "bits", "doc")

    def __init__(
        self, fn: Callable[[int, int], RowCol], elements: int, rows: int, cols: int, bits: int, doc: str
    ) -> None:
        self.fn = fn
        self.elements = elements
        self.rows = rows
        self.cols = cols
        self.bits = bits
        self.doc = doc

    def __call__(self, lane: int, i: int) -> RowCol:
        return self.fn(lane, i)

    @property
    def registers(self) -> int:
        """Registers per lane (32-bit; 64-bit for ``.f64``)."""
        return register_of(self.elements - 1, self.bits) + 1


def _t(fn: Callable[[int, int], RowCol], n: int, r: int, c: int, bits: int, doc: str) -> FragmentTable:
    return FragmentTable(fn, n, r, c, bits, doc)


#: ``(ptx shape and type key, operand) -> FragmentTable``.  Keys: ``m16n8k16.f16`` (also
#: ``.bf16``), ``m16n8k8.f16``, ``m16n8k8.tf32``, ``m16n8k32.{s8,u8,e4m3,e5m2}``,
#: ``dp4a.s32.s32``, ``m8n8k4.f64``, ``m16n8k4.f64``,
#: ``m8n8k4.f16.row.col`` / ``.col.row`` / ``.row.row`` / ``.col.col`` (Volta).
FRAGMENTS: Dict[Tuple[str, str], FragmentTable] = {
    ("m16n8k16.f16", "A"): _t(m16n8k16_f16_a, 8, 16, 16, 16, "a0..a7, 4 x .f16x2"),
    ("m16n8k16.f16", "B"): _t(m16n8k16_f16_b, 4, 16, 8, 16, "b0..b3, 2 x .f16x2"),
    ("m16n8k16.f16", "C"): _t(m16n8_c, 4, 16, 8, 32, "c0..c3, 4 x .f32"),
    ("m16n8k8.f16", "A"): _t(m16n8k8_f16_a, 4, 16, 8, 16, "a0..a3, 2 x .f16x2"),
    ("m16n8k8.f16", "B"): _t(m16n8k8_f16_b, 2, 8, 8, 16, "b0, b1, 1 x .f16x2"),
    ("m16n8k8.f16", "C"): _t(m16n8_c, 4, 16, 8, 32, "c0..c3, 4 x .f32"),
    ("m16n8k8.tf32", "A"): _t(m16n8k8_tf32_a, 4, 16, 8, 32, "a0..a3, 4 x .b32"),
    ("m16n8k8.tf32", "B"): _t(m16n8k8_tf32_b, 2, 8, 8, 32, "b0, b1, 2 x .b32"),
    ("m16n8k8.tf32", "C"): _t(m16n8_c, 4, 16, 8, 32, "c0..c3, 4 x .f32"),
    ("m8n8k4.f64", "A"): _t(m8n8k4_f64_a, 1, 8, 4, 64, "a0, 1 x .f64"),
    ("m8n8k4.f64", "B"): _t(m8n8k4_f64_b, 1, 4, 8, 64, "b0, 1 x .f64"),
    ("m8n8k4.f64", "C"): _t(m8n8k4_f64_c, 2, 8, 8, 64, "c0, c1, 2 x .f64"),
    ("m16n8k4.f64", "A"): _t(m16n8k4_f64_a, 2, 16, 4, 64, "a0, a1, 2 x .f64"),
    ("m16n8k4.f64", "B"): _t(m16n8k4_f64_b, 1, 4, 8, 64, "b0, 1 x .f64"),
    ("m16n8k4.f64", "C"): _t(m16n8_c, 4, 16, 8, 64, "c0..c3, 4 x .f64"),
    ("dp4a.s32.s32", "A"): _t(dp4a_a, 4, 1, 4, 8, "a: 4 bytes of one .b32"),
    ("dp4a.s32.s32", "B"): _t(dp4a_b, 4, 4, 1, 8, "b: 4 bytes of one .b32"),
    ("dp4a.s32.s32", "C"): _t(dp4a_c, 1, 1, 1, 32, "c: 1 x .s32"),
}

# mma.m16n8k32 with 8-bit inputs: one fragment shape for every 8-bit type; the
# accumulator is .s32 for the integer types and .f32 for the fp8 types (sm_89+).
for _ty, _acc in (("s8", "s32"), ("u8", "s32"), ("e4m3", "f32"), ("e5m2", "f32")):
    FRAGMENTS[(f"m16n8k32.{_ty}", "A")] = _t(m16n8k32_b8_a, 16, 16, 32, 8, "a0..a15, 4 x .b32")
    FRAGMENTS[(f"m16n8k32.{_ty}", "B")] = _t(m16n8k32_b8_b, 8, 32, 8, 8, "b0..b7, 2 x .b32")
    FRAGMENTS[(f"m16n8k32.{_ty}", "C")] = _t(m16n8_c, 4, 16, 8, 32, f"c0..c3, 4 x .{_acc}")


def _with_major(fn: Callable[[int, int, str], RowCol], major: str) -> Callable[[int, int], RowCol]:
    """``fn`` with its ``major`` argument fixed (the Volta tables, one per layout)."""

    def table(lane: int, i: int) -> RowCol:
        return fn(lane, i, major)

    return table


for _a in ("row", "col"):
    for _b in ("row", "col"):
        _k = f"m8n8k4.f16.{_a}.{_b}"
        FRAGMENTS[(_k, "A")] = _t(_with_major(m8n8k4_f16_a, _a), 4, 8, 4, 16, f"a0..a3, 2 x .f16x2, .{_a} A")
        FRAGMENTS[(_k, "B")] = _t(_with_major(m8n8k4_f16_b, _b), 4, 4, 8, 16, f"b0..b3, 2 x .f16x2, .{_b} B")
        FRAGMENTS[(_k, "C")] = _t(m8n8k4_f32_c, 8, 8, 8, 32, "c0..c7, 8 x .f32")


def fragment(key: str, operand: str) -> FragmentTable:
    """The fragment table of ``key`` (see :data:`FRAGMENTS`) for operand A, B or C.

    >>> fragment("m16n8k8.tf32", "A")(6, 3)
    (9, 6)
    """
    try:
        return FRAGMENTS[(key, operand)]
    except KeyError:
        raise MalformedLayoutError(
            f"no PTX fragment table for {key!r} operand {operand!r}; known: "
            f"{sorted({k for k, _ in FRAGMENTS})}"
        ) from None


# ----------------------------------------------------------------------------- ldmatrix
def ldmatrix_src(lane: int, num: int) -> Optional[Tuple[int, int]]:
    """``ldmatrix.sync.aligned.m8n8.x{num}.b16``: the (matrix, row) whose 16-byte row address
    lane ``lane`` supplies, or ``None`` when the lane's address is unused (lanes
    ``8*num`` and up): lanes ``8j..8j+7`` give the rows 0..7 of matrix ``j``."""
    if lane >= 8 * num:
        return None
    return lane // 8, lane % 8


def ldmatrix_dst(lane: int, matrix: int, half: int, trans: bool = False) -> Tuple[int, int, int]:
    """The (matrix, row, col) of the b16 element that lane ``lane`` receives in destination
    register ``matrix`` (one register per matrix), low half (``half=0``) or high half.

    Without ``.trans``: row ``lane/4``, col ``2*(lane%4) + half``.  With ``.trans`` the
    matrix is delivered transposed: row ``2*(lane%4) + half``, col ``lane/4`` (row and col
    of the matrix as stored, rows being the 16-byte lines the addresses point to)."""
    if trans:
        return matrix, 2 * (lane % 4) + half, lane // 4
    return matrix, lane // 4, 2 * (lane % 4) + half


# ----------------------------------------------------------------------------- seed tables
#: The thread-value tables printed in the seed talk (MMA atom slides), one string per
#: operand, cells ``T<thread>V<value>``, rows as printed: A as ``M x K``, B as ``K x N``
#: (the talk prints B transposed, on top of C), C as ``M x N``.  Threads are physical lane
#: ids (SM70: the quadpair 0..3, 16..19).
SEED_TABLES: Dict[str, Dict[str, str]] = {
    "SM70_8x8x4_F32F16F16F32_NT": {
        "B": """
T0V0 T0V1 T0V2 T0V3 T16V0 T16V1 T16V2 T16V3
T1V0 T1V1 T1V2 T1V3 T17V0 T17V1 T17V2 T17V3
T2V0 T2V1 T2V2 T2V3 T18V0 T18V1 T18V2 T18V3
T3V0 T3V1 T3V2 T3V3 T19V0 T19V1 T19V2 T19V3
""",
        "A": """
T0V0 T1V0 T2V0 T3V0
T0V1 T1V1 T2V1 T3V1
T0V2 T1V2 T2V2 T3V2
T0V3 T1V3 T2V3 T3V3
T16V0 T17V0 T18V0 T19V0
T16V1 T17V1 T18V1 T19V1
T16V2 T17V2 T18V2 T19V2
T16V3 T17V3 T18V3 T19V3
""",
        "C": """
T0V0 T0V1 T2V0 T2V1 T0V4 T0V5 T2V4 T2V5
T1V0 T1V1 T3V0 T3V1 T1V4 T1V5 T3V4 T3V5
T0V2 T0V3 T2V2 T2V3 T0V6 T0V7 T2V6 T2V7
T1V2 T1V3 T3V2 T3V3 T1V6 T1V7 T3V6 T3V7
T16V0 T16V1 T18V0 T18V1 T16V4 T16V5 T18V4 T18V5
T17V0 T17V1 T19V0 T19V1 T17V4 T17V5 T19V4 T19V5
T16V2 T16V3 T18V2 T18V3 T16V6 T16V7 T18V6 T18V7
T17V2 T17V3 T19V2 T19V3 T17V6 T17V7 T19V6 T19V7
""",
    },
    "SM80_8x8x4_F64F64F64F64_TN": {
        "B": """
T0V0 T4V0 T8V0 T12V0 T16V0 T20V0 T24V0 T28V0
T1V0 T5V0 T9V0 T13V0 T17V0 T21V0 T25V0 T29V0
T2V0 T6V0 T10V0 T14V0 T18V0 T22V0 T26V0 T30V0
T3V0 T7V0 T11V0 T15V0 T19V0 T23V0 T27V0 T31V0
""",
        "A": """
T0V0 T1V0 T2V0 T3V0
T4V0 T5V0 T6V0 T7V0
T8V0 T9V0 T10V0 T11V0
T12V0 T13V0 T14V0 T15V0
T16V0 T17V0 T18V0 T19V0
T20V0 T21V0 T22V0 T23V0
T24V0 T25V0 T26V0 T27V0
T28V0 T29V0 T30V0 T31V0
""",
        "C": """
T0V0 T0V1 T1V0 T1V1 T2V0 T2V1 T3V0 T3V1
T4V0 T4V1 T5V0 T5V1 T6V0 T6V1 T7V0 T7V1
T8V0 T8V1 T9V0 T9V1 T10V0 T10V1 T11V0 T11V1
T12V0 T12V1 T13V0 T13V1 T14V0 T14V1 T15V0 T15V1
T16V0 T16V1 T17V0 T17V1 T18V0 T18V1 T19V0 T19V1
T20V0 T20V1 T21V0 T21V1 T22V0 T22V1 T23V0 T23V1
T24V0 T24V1 T25V0 T25V1 T26V0 T26V1 T27V0 T27V1
T28V0 T28V1 T29V0 T29V1 T30V0 T30V1 T31V0 T31V1
""",
    },
    "SM80_16x8x8_F32F16F16F32_TN": {
        "B": """
T0V0 T4V0 T8V0 T12V0 T16V0 T20V0 T24V0 T28V0
T0V1 T4V1 T8V1 T12V1 T16V1 T20V1 T24V1 T28V1
T1V0 T5V0 T9V0 T13V0 T17V0 T21V0 T25V0 T29V0
T1V1 T5V1 T9V1 T13V1 T17V1 T21V1 T25V1 T29V1
T2V0 T6V0 T10V0 T14V0 T18V0 T22V0 T26V0 T30V0
T2V1 T6V1 T10V1 T14V1 T18V1 T22V1 T26V1 T30V1
T3V0 T7V0 T11V0 T15V0 T19V0 T23V0 T27V0 T31V0
T3V1 T7V1 T11V1 T15V1 T19V1 T23V1 T27V1 T31V1
""",
        "A": """
T0V0 T0V1 T1V0 T1V1 T2V0 T2V1 T3V0 T3V1
T4V0 T4V1 T5V0 T5V1 T6V0 T6V1 T7V0 T7V1
T8V0 T8V1 T9V0 T9V1 T10V0 T10V1 T11V0 T11V1
T12V0 T12V1 T13V0 T13V1 T14V0 T14V1 T15V0 T15V1
T16V0 T16V1 T17V0 T17V1 T18V0 T18V1 T19V0 T19V1
T20V0 T20V1 T21V0 T21V1 T22V0 T22V1 T23V0 T23V1
T24V0 T24V1 T25V0 T25V1 T26V0 T26V1 T27V0 T27V1
T28V0 T28V1 T29V0 T29V1 T30V0 T30V1 T31V0 T31V1
T0V2 T0V3 T1V2 T1V3 T2V2 T2V3 T3V2 T3V3
T4V2 T4V3 T5V2 T5V3 T6V2 T6V3 T7V2 T7V3
T8V2 T8V3 T9V2 T9V3 T10V2 T10V3 T11V2 T11V3
T12V2 T12V3 T13V2 T13V3 T14V2 T14V3 T15V2 T15V3
T16V2 T16V3 T17V2 T17V3 T18V2 T18V3 T19V2 T19V3
T20V2 T20V3 T21V2 T21V3 T22V2 T22V3 T23V2 T23V3
T24V2 T24V3 T25V2 T25V3 T26V2 T26V3 T27V2 T27V3
T28V2 T28V3 T29V2 T29V3 T30V2 T30V3 T31V2 T31V3
""",
        "C": """
T0V0 T0V1 T1V0 T1V1 T2V0 T2V1 T3V0 T3V1
T4V0 T4V1 T5V0 T5V1 T6V0 T6V1 T7V0 T7V1
T8V0 T8V1 T9V0 T9V1 T10V0 T10V1 T11V0 T11V1
T12V0 T12V1 T13V0 T13V1 T14V0 T14V1 T15V0 T15V1
T16V0 T16V1 T17V0 T17V1 T18V0 T18V1 T19V0 T19V1
T20V0 T20V1 T21V0 T21V1 T22V0 T22V1 T23V0 T23V1
T24V0 T24V1 T25V0 T25V1 T26V0 T26V1 T27V0 T27V1
T28V0 T28V1 T29V0 T29V1 T30V0 T30V1 T31V0 T31V1
T0V2 T0V3 T1V2 T1V3 T2V2 T2V3 T3V2 T3V3
T4V2 T4V3 T5V2 T5V3 T6V2 T6V3 T7V2 T7V3
T8V2 T8V3 T9V2 T9V3 T10V2 T10V3 T11V2 T11V3
T12V2 T12V3 T13V2 T13V3 T14V2 T14V3 T15V2 T15V3
T16V2 T16V3 T17V2 T17V3 T18V2 T18V3 T19V2 T19V3
T20V2 T20V3 T21V2 T21V3 T22V2 T22V3 T23V2 T23V3
T24V2 T24V3 T25V2 T25V3 T26V2 T26V3 T27V2 T27V3
T28V2 T28V3 T29V2 T29V3 T30V2 T30V3 T31V2 T31V3
""",
    },
    # The "MMA_Atom" slide prints SM90_16x8x4_F64F64F64F64_TN.
    "SM90_16x8x4_F64F64F64F64_TN": {
        "B": """
T0V0 T4V0 T8V0 T12V0 T16V0 T20V0 T24V0 T28V0
T1V0 T5V0 T9V0 T13V0 T17V0 T21V0 T25V0 T29V0
T2V0 T6V0 T10V0 T14V0 T18V0 T22V0 T26V0 T30V0
T3V0 T7V0 T11V0 T15V0 T19V0 T23V0 T27V0 T31V0
""",
        "A": """
T0V0 T1V0 T2V0 T3V0
T4V0 T5V0 T6V0 T7V0
T8V0 T9V0 T10V0 T11V0
T12V0 T13V0 T14V0 T15V0
T16V0 T17V0 T18V0 T19V0
T20V0 T21V0 T22V0 T23V0
T24V0 T25V0 T26V0 T27V0
T28V0 T29V0 T30V0 T31V0
T0V1 T1V1 T2V1 T3V1
T4V1 T5V1 T6V1 T7V1
T8V1 T9V1 T10V1 T11V1
T12V1 T13V1 T14V1 T15V1
T16V1 T17V1 T18V1 T19V1
T20V1 T21V1 T22V1 T23V1
T24V1 T25V1 T26V1 T27V1
T28V1 T29V1 T30V1 T31V1
""",
        "C": """
T0V0 T0V1 T1V0 T1V1 T2V0 T2V1 T3V0 T3V1
T4V0 T4V1 T5V0 T5V1 T6V0 T6V1 T7V0 T7V1
T8V0 T8V1 T9V0 T9V1 T10V0 T10V1 T11V0 T11V1
T12V0 T12V1 T13V0 T13V1 T14V0 T14V1 T15V0 T15V1
T16V0 T16V1 T17V0 T17V1 T18V0 T18V1 T19V0 T19V1
T20V0 T20V1 T21V0 T21V1 T22V0 T22V1 T23V0 T23V1
T24V0 T24V1 T25V0 T25V1 T26V0 T26V1 T27V0 T27V1
T28V0 T28V1 T29V0 T29V1 T30V0 T30V1 T31V0 T31V1
T0V2 T0V3 T1V2 T1V3 T2V2 T2V3 T3V2 T3V3
T4V2 T4V3 T5V2 T5V3 T6V2 T6V3 T7V2 T7V3
T8V2 T8V3 T9V2 T9V3 T10V2 T10V3 T11V2 T11V3
T12V2 T12V3 T13V2 T13V3 T14V2 T14V3 T15V2 T15V3
T16V2 T16V3 T17V2 T17V3 T18V2 T18V3 T19V2 T19V3
T20V2 T20V3 T21V2 T21V3 T22V2 T22V3 T23V2 T23V3
T24V2 T24V3 T25V2 T25V3 T26V2 T26V3 T27V2 T27V3
T28V2 T28V3 T29V2 T29V3 T30V2 T30V3 T31V2 T31V3
""",
    },
}


def parse_seed_table(text: str, transpose: bool = False) -> Dict[Tuple[int, int], Tuple[int, int]]:
    """``{(row, col): (thread, value)}`` from a printed table (``transpose`` swaps row and
    col, e.g. to read the talk's ``K x N`` B table as ``(n, k)``).

    >>> parse_seed_table("T0V0 T0V1\\nT4V0 T4V1")[(1, 0)]
    (4, 0)
    """
    out: Dict[Tuple[int, int], Tuple[int, int]] = {}
    rows = [ln.split() for ln in text.strip().splitlines() if ln.strip()]
    for r, cells in enumerate(rows):
        for c, cell in enumerate(cells):
            t_part, v_part = cell[1:].split("V")
            key = (c, r) if transpose else (r, c)
            out[key] = (int(t_part), int(v_part))
    return out
