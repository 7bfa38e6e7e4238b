"""SM90 ``stmatrix`` copy atoms (CuTe's ``SM90_U32x{1,2,4}_STSM_N`` and
``SM90_U16x{2,4,8}_STSM_T``) as data, checked against an independent encoding of the PTX
``stmatrix`` description.

``stmatrix.sync.aligned.m8n8.x{1,2,4}{.trans}.shared.b16 [p], r`` is the store-side
mirror of ``ldmatrix``: each lane holds one 32-bit register per 8x8 matrix (two b16
elements), and lanes ``8j .. 8j+7`` give the addresses of the eight 16-byte rows of matrix
``j``.  As :class:`~layoutproof.gpu.isa.atoms.CopyAtom` (bit convention, data = ``num``
row-major 8x8 b16 matrices, matrix ``j`` at bits ``[1024 j, 1024 (j+1))``):

* ``src_layout``: ``(thread, bit)`` of the *registers* -> bit of the data;
* ``dst_layout``: ``(thread, bit)`` of the *shared-memory rows* a lane addresses -> bit.

These run on sm_90a, but the project's kernels do not emit ``stmatrix``; like the SM100 and
SM120 atoms they are checked against the ISA's description only (PTX ISA "Warp Level
Matrix Store Instruction: stmatrix"), and compared with tensor-layouts' atoms in the tests.
No TMA copy atom is modelled here (the TMA boxes are proven by the kernels' own
obligations; tensor-layouts has none to compare with).

>>> a = STSM_ATOMS["SM90_U16x8_STSM_T"]
>>> str(a.src_tv(16))
'((4,8),(1,2,4)):((16,1),(1,8,64))'
>>> stmatrix_src(9, 2, 1, trans=True)
(2, 3, 2)
>>> len(verify_stsm_atom(a))
3
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

from layoutproof import Layout

from ..proof.record import ProofLog
from .atoms import CopyAtom, check_matrix_fragments, check_row_addresses, tv_bijective

__all__ = [
    "stmatrix_src",
    "stmatrix_row_address",
    "StmatrixAtom",
    "STSM_ATOMS",
    "verify_stsm_atom",
    "verify_all_stsm",
]


# ============================================================================ PTX encoding
def stmatrix_src(lane: int, reg: int, half: int, trans: bool = False) -> Tuple[int, int, int]:
    """The ``(matrix, row, col)`` of the b16 element that lane ``lane`` holds in source
    register ``reg`` (one register per matrix, ``reg = matrix``), low (``half = 0``) or high
    half.  PTX: "each thread holds a fragment of two consecutive elements of a row":
    row ``laneid / 4``, columns ``2 * (laneid % 4)`` and ``+1``; with ``.trans`` the matrix
    is stored transposed, so the fragment is column ``laneid / 4`` of rows
    ``2 * (laneid % 4)`` and ``+1`` of the matrix as stored."""
    r, c = lane // 4, 2 * (lane % 4) + half
    return (reg, c, r) if trans else (reg, r, c)


def stmatrix_row_address(lane: int, num: int) -> Optional[Tuple[int, int]]:
    """``(matrix, row)`` of the 16-byte row whose address lane ``lane`` supplies, or
    ``None`` when unused: lanes ``8j .. 8j+7`` give rows 0..7 of matrix ``j``, for
    ``j < num`` (``.x1``: lanes 0-7, ``.x2``: 0-15, ``.x4``: all)."""
    if lane >= 8 * num:
        return None
    return lane // 8, lane % 8


# ============================================================================ atoms
@dataclass(frozen=True)
class StmatrixAtom(CopyAtom):
    """A :class:`~layoutproof.gpu.isa.atoms.CopyAtom` for ``stmatrix``: the source is the
    register side, the destination the shared-memory rows (``ldmatrix``'s roles swapped).
    Use :func:`verify_stsm_atom`; ``atoms.verify_copy_atom`` refuses it."""

    @property
    def is_ldmatrix(self) -> bool:  # the register side is the source here
        return False

    @property
    def is_stmatrix(self) -> bool:
        return True


def _stsm(num: int, trans: bool) -> StmatrixAtom:
    rows = 8 * num
    smem = Layout((32, 128), (128, 1)) if rows == 32 else Layout(((rows, 32 // rows), 128), ((128, 0), 1))
    if trans:
        name = f"SM90_U16x{2 * num}_STSM_T"
        vshape: tuple = (16, 2) if num == 1 else (16, 2, num)
        vstride: tuple = (1, 128) if num == 1 else (1, 128, 1024)
        regs = Layout(((4, 8), vshape), ((256, 16), vstride))
    else:
        name = f"SM90_U32x{num}_STSM_N"
        regs = Layout((32, 32), (32, 1)) if num == 1 else Layout((32, (32, num)), (32, (1, 1024)))
    ptx = f"stmatrix.sync.aligned.m8n8.x{num}{'.trans' if trans else ''}.shared.b16"
    return StmatrixAtom(name, ptx, Layout(32, 1), regs, smem, 4 * num, 16, num, trans)


_LIST: List[StmatrixAtom] = [_stsm(n, t) for t in (False, True) for n in (1, 2, 4)]

#: The six ``stmatrix`` atoms by CuTe name.
STSM_ATOMS: Dict[str, StmatrixAtom] = {a.name: a for a in _LIST}


# ============================================================================ verification
def verify_stsm_atom(atom: StmatrixAtom) -> ProofLog:
    """Prove a ``stmatrix`` atom against the PTX description, exhaustively: the register
    side (b16 elements) is a bijection onto the ``num`` matrices and every ``(lane, value)``
    is :func:`stmatrix_src` (value ``v`` = register ``v // 2``, half ``v % 2``); every lane
    that supplies an address (:func:`stmatrix_row_address`) names the 8 consecutive b16 of
    that row."""
    log = ProofLog()
    num, nt = atom.num, atom.num_threads
    src = atom.src_tv(16)
    cases = tv_bijective(src, nt, (64 * num, 1), f"{atom.name} src")
    log.add(
        "bijective", f"{atom.name} src (b16) {src} bijective onto {num} 8x8 matrices", "exhaustive", cases
    )
    tv = src.eval_all().reshape((nt, 2 * num), order="F")
    check_matrix_fragments(
        atom.name,
        "src",
        "holds",
        tv,
        lambda lane, r, h: stmatrix_src(lane, r, h, atom.trans),
        "src equals PTX stmatrix fragment",
    )
    log.add(
        "atom",
        f"{atom.name} src == PTX stmatrix{' .trans' if atom.trans else ''} x{num}",
        "exhaustive",
        tv.size,
    )
    checked = check_row_addresses(
        atom.name,
        "dst",
        "addresses",
        "writes {} through it",
        atom.dst_tv(16).eval_all().reshape((nt, 8), order="F"),
        lambda lane: stmatrix_row_address(lane, num),
        "dst equals PTX stmatrix addresses",
    )
    log.add("atom", f"{atom.name} dst: lanes 8j..8j+7 address the rows of matrix j", "exhaustive", checked)
    return log


def verify_all_stsm() -> ProofLog:
    """Every atom of :data:`STSM_ATOMS`."""
    log = ProofLog()
    for a in STSM_ATOMS.values():
        log.extend(verify_stsm_atom(a))
    return log
