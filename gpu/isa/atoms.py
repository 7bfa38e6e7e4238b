"""MMA and copy atoms as data: CuTe's thread-value layouts, checked against the PTX ISA.

An :class:`MMAAtom` is one ``mma.sync`` instruction seen as layouts (CuTe's
``MMA_Traits``):

* ``thr_id`` maps the atom's *logical* thread index to the lane that executes it (the
  identity ``32:1`` for SM80; the quadpair ``(4,2):(1,16)`` for SM70's ``m8n8k4``);
* ``a_layout``, ``b_layout``, ``c_layout`` map ``(thread, value)`` to the *column-major*
  index of the element in the ``(M,K)``, ``(N,K)`` and ``(M,N)`` tile (``m + M*k``,
  ``n + N*k``, ``m + M*n``).  Values enumerate *elements*, so two ``f16`` values share one
  32-bit register (:meth:`MMAAtom.register`); the value index equals PTX's element index
  (``a0, a1, ...``).

:func:`verify_atom` compares every ``(thread, value)`` of the three layouts against the
independent encoding of the PTX fragment tables in :mod:`layoutproof.gpu.isa.ptx_tables`
and proves each layout a bijection onto its tile.

A :class:`CopyAtom` is one copy instruction (``cp.async``, ``ldmatrix``, a vectorized
load), in CuTe's bit convention: ``src_layout`` / ``dst_layout`` map
``(thread, bit)`` to the *bit* index in the data the instruction moves; :meth:`CopyAtom.src_tv`
/ :meth:`CopyAtom.dst_tv` give them in elements of a chosen width (``upcast``).  For
``ldmatrix`` the data is ``num`` 8x8 matrices of b16, matrix ``j`` at bits
``[1024 j, 1024 (j+1))``, each row-major (row ``r`` = the 128 bits at ``128 r``).

>>> atom = MMA_ATOMS["SM80_16x8x16_F32F16F16F32_TN"]
>>> str(atom.a_layout)
'((4,8),(2,2,2)):((32,1),(16,8,128))'
>>> atom.a(5, 6), atom.register("A", 6)      # lane 5, element a6 lives in register 3
((9, 10), 3)
>>> len(verify_atom(atom))
6
>>> str(COPY_ATOMS["SM75_U16x4_LDSM_T"].dst_tv(16))
'((4,8),(1,2,2)):((16,1),(1,8,64))'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Tuple

import numpy as np

from layoutproof import Layout
from layoutproof.analysis import upcast
from layoutproof.errors import MalformedLayoutError, OutOfDomainError

from ..errors import AtomMismatchError
from ..proof.record import ProofLog
from . import ptx_tables as _ptx

__all__ = [
    "MMAAtom",
    "CopyAtom",
    "MMA_ATOMS",
    "COPY_ATOMS",
    "DTYPE_BITS",
    "ptx_key",
    "verify_atom",
    "verify_copy_atom",
    "verify_seed_tables",
    "verify_all",
    "tv_bijective",
    "check_matrix_fragments",
    "check_row_addresses",
    "register_bytes",
    "prove_same_register_bytes",
]

#: Bit width of each element type name.
DTYPE_BITS: Dict[str, int] = {
    "f16": 16,
    "bf16": 16,
    "tf32": 32,
    "f32": 32,
    "f64": 64,
    "s8": 8,
    "u8": 8,
    "e4m3": 8,
    "e5m2": 8,
    "s32": 32,
}

_OPERANDS = ("A", "B", "C")


def _regs(values: int, dtype: str) -> int:
    bits = DTYPE_BITS[dtype]
    per = max(1, 32 // bits)
    return -(-values // per)


@dataclass(frozen=True)
class MMAAtom:
    """One MMA instruction as data (CuTe's ``MMA_Traits``).

    Attributes:
        name: CuTe's name, e.g. ``SM80_16x8x16_F32F16F16F32_TN``.
        ptx: the instruction, e.g. ``mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32``.
        shape_mnk: ``(M, N, K)`` of the atom.
        thr_id: logical thread index -> lane.
        a_layout, b_layout, c_layout: ``(thread, value)`` -> column-major index into the
            ``(M,K)``, ``(N,K)``, ``(M,N)`` tile.
        a_type, b_type, c_type: element types (``f16``, ``bf16``, ``tf32``, ``f32``, ``f64``,
            the 8-bit ``s8``, ``u8``, ``e4m3``, ``e5m2``, and ``s32``).
        a_regs, b_regs, c_regs: registers per thread per operand (32-bit; 64-bit for f64).
    """

    name: str
    ptx: str
    shape_mnk: Tuple[int, int, int]
    thr_id: Layout
    a_layout: Layout
    b_layout: Layout
    c_layout: Layout
    a_type: str
    b_type: str
    c_type: str
    a_regs: int
    b_regs: int
    c_regs: int

    # ------------------------------------------------------------------ shapes
    @property
    def num_threads(self) -> int:
        """Threads that execute one atom (``size(thr_id)``)."""
        return self.thr_id.size

    def layout(self, operand: str) -> Layout:
        """The TV layout of operand ``A``, ``B`` or ``C``."""
        return {"A": self.a_layout, "B": self.b_layout, "C": self.c_layout}[_op(operand)]

    def tile_shape(self, operand: str) -> Tuple[int, int]:
        """``(M,K)`` for A, ``(N,K)`` for B, ``(M,N)`` for C."""
        M, N, K = self.shape_mnk
        return {"A": (M, K), "B": (N, K), "C": (M, N)}[_op(operand)]

    def num_values(self, operand: str) -> int:
        """Values (elements) per thread of an operand."""
        return self.layout(operand).size // self.num_threads

    def dtype(self, operand: str) -> str:
        return {"A": self.a_type, "B": self.b_type, "C": self.c_type}[_op(operand)]

    def register(self, operand: str, value: int) -> int:
        """The register (32-bit; 64-bit for f64) that holds value ``value``."""
        bits = DTYPE_BITS[self.dtype(operand)]
        return value // max(1, 32 // bits)

    # ------------------------------------------------------------------ evaluation
    def coord(self, operand: str, thread: int, value: int) -> Tuple[int, int]:
        """``(row, col)`` of ``(thread, value)`` in the operand's tile: ``(m,k)``, ``(n,k)``
        or ``(m,n)``."""
        L = self.layout(operand)
        rows = self.tile_shape(operand)[0]
        nt = self.num_threads
        if not (0 <= thread < nt and 0 <= value < L.size // nt):
            raise OutOfDomainError(
                f"{self.name} {operand}: (thread, value) = ({thread}, {value}) outside "
                f"[0,{nt}) x [0,{L.size // nt})"
            )
        idx = L(thread + nt * value)
        return idx % rows, idx // rows

    def a(self, thread: int, value: int) -> Tuple[int, int]:
        """``(m, k)`` of A's ``(thread, value)``."""
        return self.coord("A", thread, value)

    def b(self, thread: int, value: int) -> Tuple[int, int]:
        """``(n, k)`` of B's ``(thread, value)``."""
        return self.coord("B", thread, value)

    def c(self, thread: int, value: int) -> Tuple[int, int]:
        """``(m, n)`` of C's ``(thread, value)``."""
        return self.coord("C", thread, value)

    def tv_table(self, operand: str) -> np.ndarray:
        """``(threads, values)`` array of tile indices (vectorized, exhaustive)."""
        L = self.layout(operand)
        nt = self.num_threads
        return L.eval_all().reshape((nt, L.size // nt), order="F")

    def lane(self, thread: int) -> int:
        """The lane that executes logical thread ``thread``."""
        return self.thr_id(thread)


@dataclass(frozen=True)
class CopyAtom:
    """One copy instruction as data (CuTe's ``Copy_Traits``), bit convention.

    Attributes:
        name: e.g. ``SM75_U32x4_LDSM_N``, ``SM80_CP_ASYNC_CACHEALWAYS_16B``.
        ptx: the instruction, e.g. ``ldmatrix.sync.aligned.m8n8.x4.shared.b16``.
        thr_id: logical thread -> lane (``1:0`` for single-thread copies).
        src_layout, dst_layout: ``(thread, bit)`` -> bit index in the data moved.
        bytes_per_thread: bytes each thread receives (``dst`` side).
        elem_bits: the natural element width (16 for ``ldmatrix``; the copy width else).
        num: matrices moved by ``ldmatrix`` (0 for the others); ``trans``: ``.trans``.
    """

    name: str
    ptx: str
    thr_id: Layout
    src_layout: Layout
    dst_layout: Layout
    bytes_per_thread: int
    elem_bits: int
    num: int = 0
    trans: bool = False

    @property
    def num_threads(self) -> int:
        return self.thr_id.size

    @property
    def is_ldmatrix(self) -> bool:
        return self.num > 0

    def src_tv(self, elem_bits: int | None = None) -> Layout:
        """``(thread, value)`` -> element index, elements of ``elem_bits`` bits."""
        return upcast(self.src_layout, elem_bits or self.elem_bits)

    def dst_tv(self, elem_bits: int | None = None) -> Layout:
        """``(thread, value)`` -> element index, elements of ``elem_bits`` bits."""
        return upcast(self.dst_layout, elem_bits or self.elem_bits)


def _op(operand: str) -> str:
    o = operand.upper()
    if o not in _OPERANDS:
        raise MalformedLayoutError(f"operand must be 'A', 'B' or 'C', got {operand!r}")
    return o


def _L(text: str) -> Layout:
    return Layout.parse(text)


# ----------------------------------------------------------------------------- the atoms
def _mma(
    name: str,
    ptx: str,
    mnk: Tuple[int, int, int],
    thr: str,
    a: str,
    b: str,
    c: str,
    ta: str,
    tb: str,
    tc: str,
) -> MMAAtom:
    thr_id, la, lb, lc = _L(thr), _L(a), _L(b), _L(c)
    nt = thr_id.size
    return MMAAtom(
        name,
        ptx,
        mnk,
        thr_id,
        la,
        lb,
        lc,
        ta,
        tb,
        tc,
        _regs(la.size // nt, ta),
        _regs(lb.size // nt, tb),
        _regs(lc.size // nt, tc),
    )


# Layouts derived by hand from the PTX fragment descriptions (t = (t0 = tig, t1 = groupID)).
_C16x8 = "((4,8),(2,2)):((32,1),(16,8))"
_SM70_COL = "((4,2),4):((8,4),1)"  # (T8,V4): thread holds a column (4 consecutive rows)
_SM70_ROW = "(8,4):(1,8)"  # (T8,V4): thread holds a row (4 consecutive k)
_SM70_C32 = "((2,2,2),(2,2,2)):((1,16,4),(8,2,32))"
_QUADPAIR = "(4,2):(1,16)"

_ATOM_LIST: List[MMAAtom] = [
    _mma(
        "SM80_16x8x16_F32F16F16F32_TN",
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
        (16, 8, 16),
        "32:1",
        "((4,8),(2,2,2)):((32,1),(16,8,128))",
        "((4,8),(2,2)):((16,1),(8,64))",
        _C16x8,
        "f16",
        "f16",
        "f32",
    ),
    _mma(
        "SM80_16x8x16_F32BF16BF16F32_TN",
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
        (16, 8, 16),
        "32:1",
        "((4,8),(2,2,2)):((32,1),(16,8,128))",
        "((4,8),(2,2)):((16,1),(8,64))",
        _C16x8,
        "bf16",
        "bf16",
        "f32",
    ),
    _mma(
        "SM80_16x8x8_F32F16F16F32_TN",
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32",
        (16, 8, 8),
        "32:1",
        "((4,8),(2,2)):((32,1),(16,8))",
        "((4,8),2):((16,1),8)",
        _C16x8,
        "f16",
        "f16",
        "f32",
    ),
    _mma(
        "SM80_16x8x8_F32BF16BF16F32_TN",
        "mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32",
        (16, 8, 8),
        "32:1",
        "((4,8),(2,2)):((32,1),(16,8))",
        "((4,8),2):((16,1),8)",
        _C16x8,
        "bf16",
        "bf16",
        "f32",
    ),
    _mma(
        "SM80_16x8x8_F32TF32TF32F32_TN",
        "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
        (16, 8, 8),
        "32:1",
        "((4,8),(2,2)):((16,1),(8,64))",
        "((4,8),2):((8,1),32)",
        _C16x8,
        "tf32",
        "tf32",
        "f32",
    ),
    _mma(
        "SM80_8x8x4_F64F64F64F64_TN",
        "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64",
        (8, 8, 4),
        "32:1",
        "((4,8),1):((8,1),0)",
        "((4,8),1):((8,1),0)",
        "((4,8),2):((16,1),8)",
        "f64",
        "f64",
        "f64",
    ),
    _mma(
        "SM90_16x8x4_F64F64F64F64_TN",
        "mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64",
        (16, 8, 4),
        "32:1",
        "((4,8),2):((16,1),8)",
        "((4,8),1):((8,1),0)",
        _C16x8,
        "f64",
        "f64",
        "f64",
    ),
    _mma(
        "SM70_8x8x4_F32F16F16F32_NT",
        "mma.sync.aligned.m8n8k4.col.row.f32.f16.f16.f32",
        (8, 8, 4),
        _QUADPAIR,
        _SM70_COL,
        _SM70_COL,
        _SM70_C32,
        "f16",
        "f16",
        "f32",
    ),
    _mma(
        "SM70_8x8x4_F32F16F16F32_TN",
        "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32",
        (8, 8, 4),
        _QUADPAIR,
        _SM70_ROW,
        _SM70_ROW,
        _SM70_C32,
        "f16",
        "f16",
        "f32",
    ),
    _mma(
        "SM70_8x8x4_F32F16F16F32_NN",
        "mma.sync.aligned.m8n8k4.col.col.f32.f16.f16.f32",
        (8, 8, 4),
        _QUADPAIR,
        _SM70_COL,
        _SM70_ROW,
        _SM70_C32,
        "f16",
        "f16",
        "f32",
    ),
    _mma(
        "SM70_8x8x4_F32F16F16F32_TT",
        "mma.sync.aligned.m8n8k4.row.row.f32.f16.f16.f32",
        (8, 8, 4),
        _QUADPAIR,
        _SM70_ROW,
        _SM70_COL,
        _SM70_C32,
        "f16",
        "f16",
        "f32",
    ),
    _mma(
        "UniversalFMA",
        "fma.rn.f32",
        (1, 1, 1),
        "1:0",
        "(1,1):(0,0)",
        "(1,1):(0,0)",
        "(1,1):(0,0)",
        "f32",
        "f32",
        "f32",
    ),
    # SM61's four-way byte dot product, a one-thread atom like UniversalFMA: K = 4 bytes of
    # one register each of A and B, accumulated into one s32.
    _mma(
        "SM61_DP4A",
        "dp4a.s32.s32",
        (1, 1, 4),
        "1:0",
        "(1,4):(0,1)",
        "(1,4):(0,1)",
        "(1,1):(0,0)",
        "s8",
        "s8",
        "s32",
    ),
]

# mma.sync m16n8k32 with 8-bit inputs (the integer ones from SM80, the fp8 ones from SM89):
# A ``((4,8),(4,2,2)):((64,1),(16,8,256))`` (t0 -> k 4*t0, t1 -> m, v0 -> k+1, v1 -> m+8,
# v2 -> k+16), B ``((4,8),(4,2)):((32,1),(8,128))``, C the 16x8 accumulator.
for _arch, _ty, _acc in (
    ("SM80", "s8", "s32"),
    ("SM80", "u8", "s32"),
    ("SM89", "e4m3", "f32"),
    ("SM89", "e5m2", "f32"),
):
    _T, _C = _ty.upper(), _acc.upper()
    _ATOM_LIST.append(
        _mma(
            f"{_arch}_16x8x32_{_C}{_T}{_T}{_C}_TN",
            f"mma.sync.aligned.m16n8k32.row.col.{_acc}.{_ty}.{_ty}.{_acc}",
            (16, 8, 32),
            "32:1",
            "((4,8),(4,2,2)):((64,1),(16,8,256))",
            "((4,8),(4,2)):((32,1),(8,128))",
            _C16x8,
            _ty,
            _ty,
            _acc,
        )
    )

#: Every MMA atom, by CuTe name.
MMA_ATOMS: Dict[str, MMAAtom] = {a.name: a for a in _ATOM_LIST}


def _copy1(name: str, ptx: str, nbytes: int) -> CopyAtom:
    bits = 8 * nbytes
    L = Layout((1, bits), (0, 1))
    return CopyAtom(name, ptx, Layout(1, 0), L, L, nbytes, bits)


def _ldsm(num: int, trans: bool) -> CopyAtom:
    rows = 8 * num
    src = Layout((32, 128), (128, 1)) if rows == 32 else Layout(((rows, 32 // rows), 128), ((128, 0), 1))
    if trans:
        name = f"SM75_U16x{2 * num}_LDSM_T"
        vshape: tuple = (16, 2) if num == 1 else (16, 2, num)
        vstride: tuple = (1, 128) if num == 1 else (1, 128, 1024)
        dst = Layout(((4, 8), vshape), ((256, 16), vstride))
        ptx = f"ldmatrix.sync.aligned.m8n8.x{num}.trans.shared.b16"
    else:
        name = f"SM75_U32x{num}_LDSM_N"
        dst = Layout((32, 32), (32, 1)) if num == 1 else Layout((32, (32, num)), (32, (1, 1024)))
        ptx = f"ldmatrix.sync.aligned.m8n8.x{num}.shared.b16"
    return CopyAtom(name, ptx, Layout(32, 1), src, dst, 4 * num, 16, num, trans)


_COPY_LIST: List[CopyAtom] = [
    _copy1("SM80_CP_ASYNC_CACHEALWAYS_4B", "cp.async.ca.shared.global 4", 4),
    _copy1("SM80_CP_ASYNC_CACHEALWAYS_8B", "cp.async.ca.shared.global 8", 8),
    _copy1("SM80_CP_ASYNC_CACHEALWAYS_16B", "cp.async.ca.shared.global 16", 16),
    _copy1("SM80_CP_ASYNC_CACHEGLOBAL_16B", "cp.async.cg.shared.global 16", 16),
    _copy1("UniversalCopy_U32", "ld.global.b32", 4),
    _copy1("UniversalCopy_U64", "ld.global.v2.b32", 8),
    _copy1("UniversalCopy_U128", "ld.global.v4.b32", 16),
] + [_ldsm(n, t) for t in (False, True) for n in (1, 2, 4)]

#: Every copy atom, by name.
COPY_ATOMS: Dict[str, CopyAtom] = {a.name: a for a in _COPY_LIST}


# ----------------------------------------------------------------------------- verification
_PTX_RE = re.compile(r"\.(m\d+n\d+k\d+)\.(row|col)\.(row|col)\.(\w+)\.(\w+)\.(\w+)\.(\w+)$")


def ptx_key(atom: MMAAtom) -> str | None:
    """The :data:`~layoutproof.gpu.isa.ptx_tables.FRAGMENTS` key of an atom's instruction
    (parsed from ``atom.ptx``; ``dp4a.s32.s32`` for SM61_DP4A), or ``None`` for an atom
    without a fragment table (UniversalFMA)."""
    if atom.ptx == "dp4a.s32.s32":
        return "dp4a.s32.s32"
    m = _PTX_RE.search(atom.ptx)
    if not atom.ptx.startswith("mma.") or m is None:
        return None
    shape, al, bl, _d, ta, _tb, _c = m.groups()
    if shape == "m8n8k4" and ta == "f16":
        return f"m8n8k4.f16.{al}.{bl}"
    kind = "f16" if ta in ("f16", "bf16") else ta
    return f"{shape}.{kind}"


def tv_bijective(L: Layout, threads: int, tile: Tuple[int, int], what: str) -> int:
    """Check that ``L`` maps ``[0, size)`` one-to-one onto ``[0, tile[0]*tile[1])``; raise
    AtomMismatchError with a witness ``(thread, value)`` otherwise.  Returns the cases."""
    n = tile[0] * tile[1]
    idx = L.eval_all()
    bad = np.nonzero((idx < 0) | (idx >= n))[0]
    if bad.size:
        i = int(bad[0])
        raise AtomMismatchError(
            f"{what}: (thread, value) = ({i % threads}, {i // threads}) maps to {int(idx[i])}, "
            f"outside the {tile} tile",
            condition="bounds",
            witness=(i % threads, i // threads),
            ours=int(idx[i]),
        )
    if idx.size != n or np.unique(idx).size != n:
        order = np.argsort(idx, kind="stable")
        dup = np.nonzero(np.diff(idx[order]) == 0)[0]
        if dup.size:
            i, j = int(order[dup[0]]), int(order[dup[0] + 1])
            w = ((i % threads, i // threads), (j % threads, j // threads))
            msg = f"{what}: {w[0]} and {w[1]} both map to {int(idx[i])}"
        else:
            w = None
            msg = f"{what}: {idx.size} (thread, value) pairs for {n} tile elements"
        raise AtomMismatchError(msg + "; not a bijection onto the tile", condition="bijective", witness=w)
    return n


def verify_atom(atom: MMAAtom) -> ProofLog:
    """Prove an MMA atom equal to the PTX fragment tables, operand by operand.

    For each of A, B, C: every ``(thread, value)`` is evaluated (numpy, exhaustive); the
    lane is ``thr_id(thread)``, PTX's element index is ``value``; PTX's (row, col) (A as
    ``M x K``, B as ``K x N``, C as ``M x N``) must equal ours (B's ``(n, k)`` read as
    ``(k, n)``).  Each layout must also be a bijection onto its tile.  Raises
    AtomMismatchError naming the operand, the witness ``(thread, value)``, our and PTX's
    (row, col).
    """
    log = ProofLog()
    key = ptx_key(atom)
    nt = atom.num_threads
    for op in _OPERANDS:
        L = atom.layout(op)
        tile = atom.tile_shape(op)
        cases = tv_bijective(L, nt, tile, f"{atom.name} {op}")
        log.add(
            "bijective",
            f"{atom.name} {op}: {L} is a bijection (T{nt},V{L.size // nt}) -> {tile}",
            "exhaustive",
            cases,
        )
        if key is None:
            continue
        table = _ptx.fragment(key, op)
        nv = L.size // nt
        if table.elements != nv:
            raise AtomMismatchError(
                f"{atom.name} {op}: {nv} values per thread, PTX {key} has {table.elements}",
                condition="fragment size",
                witness=None,
                ours=nv,
                ptx=table.elements,
            )
        tv = atom.tv_table(op)
        rows = tile[0]
        for t in range(nt):
            lane = atom.lane(t)
            for v in range(nv):
                idx = int(tv[t, v])
                ours = (idx % rows, idx // rows)
                pr, pc = table(lane, v)
                ptx = (pc, pr) if op == "B" else (pr, pc)  # B: PTX (k, n) -> ours (n, k)
                if ours != ptx:
                    raise AtomMismatchError(
                        f"{atom.name} operand {op}: (thread, value) = ({t}, {v}) (lane {lane}, "
                        f"PTX element {op.lower()}{v}) is {_names(op)} = {ours} in the layout "
                        f"but {ptx} in the PTX table {key}",
                        condition=f"operand {op} equals PTX fragment table",
                        witness=(t, v),
                        ours=ours,
                        ptx=ptx,
                    )
        log.add(
            "atom",
            f"{atom.name} {op} == PTX {key} fragment table (lane = thr_id(t), element = v)",
            "exhaustive",
            nt * nv,
        )
    return log


def _names(op: str) -> str:
    return {"A": "(m,k)", "B": "(n,k)", "C": "(m,n)"}[op]


def verify_seed_tables(atom: MMAAtom) -> ProofLog:
    """Compare an atom with the tables printed in the seed talk (where the talk has them):
    each printed cell ``T<lane>V<v>`` at (row, col) must be the atom's ``(thread, v)`` with
    ``thr_id(thread) == lane``."""
    log = ProofLog()
    tables = _ptx.SEED_TABLES.get(atom.name)
    if tables is None:
        return log
    lane_to_t = {atom.lane(t): t for t in range(atom.num_threads)}
    for op in _OPERANDS:
        printed = _ptx.parse_seed_table(tables[op], transpose=(op == "B"))
        tile = atom.tile_shape(op)
        if len(printed) != tile[0] * tile[1]:
            raise AtomMismatchError(
                f"{atom.name} {op}: the seed table has {len(printed)} cells, tile is {tile}",
                condition="seed table size",
                witness=None,
            )
        for (r, c), (lane, v) in sorted(printed.items()):
            t = lane_to_t.get(lane)
            ours = atom.coord(op, t, v) if t is not None else None
            if ours != (r, c):
                raise AtomMismatchError(
                    f"{atom.name} operand {op}: the seed table prints T{lane}V{v} at {(r, c)}, "
                    f"the layout puts it at {ours}",
                    condition=f"operand {op} equals the seed table",
                    witness=(t, v),
                    ours=ours,
                    ptx=(r, c),
                )
        log.add("atom", f"{atom.name} {op} == seed talk table", "exhaustive", len(printed))
    return log


def check_matrix_fragments(
    name: str, side: str, verb: str, tv: Any, ptx_of: Callable[[int, int, int], Any], condition: str
) -> None:
    """Every ``(lane, value)`` of a b16 fragment table ``tv`` (lanes x values, value ``v`` =
    register ``v // 2``, half ``v % 2``, element offsets into 8x8 matrices) is the
    ``(matrix, row, col)`` that ``ptx_of(lane, register, half)`` names -- the register side
    of ``ldmatrix`` and ``stmatrix``; an AtomMismatchError with the first lane that is not."""
    for lane in range(tv.shape[0]):
        for v in range(tv.shape[1]):
            e = int(tv[lane, v])
            ours = (e // 64, (e % 64) // 8, e % 8)
            ptx = ptx_of(lane, v // 2, v % 2)
            if ours != ptx:
                raise AtomMismatchError(
                    f"{name} {side}: lane {lane} value {v} (register {v // 2}, half {v % 2}) "
                    f"{verb} (matrix,row,col) = {ours} in the layout but {ptx} in PTX",
                    condition=condition,
                    witness=(lane, v),
                    ours=ours,
                    ptx=ptx,
                )


def check_row_addresses(
    name: str,
    side: str,
    verb: str,
    ptx_does: str,
    tv: Any,
    want_of: Callable[[int], Any],
    condition: str,
) -> int:
    """Every lane that supplies a row address (``want_of(lane)``: the ``(matrix, row)`` PTX
    takes from it, None where the hardware ignores the lane) names the 8 consecutive b16 of
    that row in ``tv`` (lanes x 8 element offsets) -- the shared-memory side of ``ldmatrix``
    and ``stmatrix``; returns the elements checked, or raises an AtomMismatchError with the
    first lane that does not."""
    checked = 0
    for lane in range(tv.shape[0]):
        want = want_of(lane)
        if want is None:
            continue  # the lane's address is ignored by the hardware
        row0 = int(tv[lane, 0])
        got = (row0 // 64, (row0 % 64) // 8)
        contiguous = row0 % 8 == 0 and bool(np.array_equal(tv[lane], row0 + np.arange(8)))
        if got != want or not contiguous:
            raise AtomMismatchError(
                f"{name} {side}: lane {lane} {verb} (matrix,row) = {got} "
                f"(contiguous row: {contiguous}) but PTX {ptx_does.format(want)}",
                condition=condition,
                witness=(lane, 0),
                ours=got,
                ptx=want,
            )
        checked += 8
    return checked


def verify_copy_atom(atom: CopyAtom) -> ProofLog:
    """Prove a copy atom's layouts: ``ldmatrix`` against the PTX ``ldmatrix`` encoding
    (which lane supplies which row address; which (matrix, row, col) each lane receives in
    each register half), the destination a bijection onto the ``num`` matrices; for
    single-thread copies, source and destination the identity on the copied bits."""
    log = ProofLog()
    nt = atom.num_threads
    if not atom.is_ldmatrix:
        bits = 8 * atom.bytes_per_thread
        for which, L in (("src", atom.src_layout), ("dst", atom.dst_layout)):
            idx = L.eval_all()
            if idx.size != bits or not np.array_equal(idx, np.arange(bits)):
                raise AtomMismatchError(
                    f"{atom.name} {which}: {L} is not the identity on {bits} bits",
                    condition=f"{which} identity",
                    witness=None,
                    ours=str(L),
                )
            log.add("bijective", f"{atom.name} {which}: {L} identity on {bits} bits", "exhaustive", bits)
        return log
    n16 = 64 * atom.num
    dst = atom.dst_tv(16)
    cases = tv_bijective(dst, nt, (n16, 1), f"{atom.name} dst")
    log.add(
        "bijective",
        f"{atom.name} dst (b16) {dst} bijective onto {atom.num} 8x8 matrices",
        "exhaustive",
        cases,
    )
    check_matrix_fragments(
        atom.name,
        "dst",
        "receives",
        dst.eval_all().reshape((nt, 2 * atom.num), order="F"),
        lambda lane, r, h: _ptx.ldmatrix_dst(lane, r, h, atom.trans),
        "dst equals PTX ldmatrix",
    )
    log.add(
        "atom",
        f"{atom.name} dst == PTX ldmatrix{' .trans' if atom.trans else ''} x{atom.num}",
        "exhaustive",
        nt * 2 * atom.num,
    )
    checked = check_row_addresses(
        atom.name,
        "src",
        "supplies",
        "reads {} from it",
        atom.src_tv(16).eval_all().reshape((nt, 8), order="F"),
        lambda lane: _ptx.ldmatrix_src(lane, atom.num),
        "src equals PTX ldmatrix",
    )
    log.add("atom", f"{atom.name} src: lanes 8j..8j+7 give the rows of matrix j", "exhaustive", checked)
    return log


def verify_all() -> ProofLog:
    """Every atom of :data:`MMA_ATOMS` and :data:`COPY_ATOMS`, and the seed tables."""
    log = ProofLog()
    for a in MMA_ATOMS.values():
        log.extend(verify_atom(a))
        log.extend(verify_seed_tables(a))
    for c in COPY_ATOMS.values():
        log.extend(verify_copy_atom(c))
    return log


# ----------------------------------------------------------------------------- 16-bit units
def register_bytes(atom: MMAAtom, operand: str) -> np.ndarray:
    """``(threads, registers, 4, 2)``: for every 32-bit register of an A or B fragment and
    each of its four bytes (little-endian: element ``i`` of a ``b``-bit type sits at bit
    ``b * (i mod 32/b)`` of register ``i // (32/b)``; a wider element spans registers), the
    ``(row, byte column)`` of the ``(M, K)`` / ``(N, K)`` tile it holds, byte column = ``k *
    bytes + byte of the element``."""
    op = _op(operand)
    if op == "C":
        raise MalformedLayoutError("register_bytes: operands A and B only")
    bits = DTYPE_BITS[atom.dtype(op)]
    if bits not in (8, 16, 32):
        raise MalformedLayoutError(f"register_bytes: {bits}-bit elements")
    eb = bits // 8
    tv = atom.tv_table(op)
    rows = atom.tile_shape(op)[0]
    nt, nv = tv.shape
    nreg = nv * eb // 4
    out = np.empty((nt, nreg, 4, 2), dtype=np.int64)
    for byte in range(nreg * 4):
        v, within = divmod(byte, eb)
        r, b = divmod(byte, 4)
        idx = tv[:, v]
        out[:, r, b, 0] = idx % rows
        out[:, r, b, 1] = (idx // rows) * eb + within
    return out


def prove_same_register_bytes(unit: MMAAtom, typed: MMAAtom) -> ProofLog:
    """Prove that the 16-bit atom ``unit`` and the atom ``typed`` of another width load the
    same bytes into every register of A and B, and have the same accumulator layout: a
    kernel that fills the registers for ``unit`` (ldmatrix of 16-bit units, K-major) feeds
    ``typed`` correctly.  Both atoms are first checked against PTX (:func:`verify_atom`).
    Raises AtomMismatchError with the witness (thread, register, byte)."""
    log = ProofLog()
    log.extend(verify_atom(unit))
    log.extend(verify_atom(typed))
    if unit.num_threads != typed.num_threads or str(unit.c_layout) != str(typed.c_layout):
        raise AtomMismatchError(
            f"{typed.name}: accumulator {typed.c_layout} differs from {unit.name}'s {unit.c_layout}",
            condition="same accumulator layout",
            witness=None,
        )
    for op in ("A", "B"):
        u, t = register_bytes(unit, op), register_bytes(typed, op)
        if u.shape != t.shape:
            raise AtomMismatchError(
                f"{typed.name} {op}: {t.shape[1]} registers per thread, {unit.name} has {u.shape[1]}",
                condition="same registers",
                witness=None,
            )
        bad = np.argwhere(np.any(u != t, axis=-1))
        if bad.size:
            th, r, b = (int(x) for x in bad[0])
            raise AtomMismatchError(
                f"{typed.name} {op}: thread {th}, register {r}, byte {b} holds (row, byte) "
                f"{tuple(int(x) for x in t[th, r, b])}, {unit.name} loads "
                f"{tuple(int(x) for x in u[th, r, b])} there",
                condition="same register bytes",
                witness=(th, r, b),
            )
        log.add(
            "equal",
            f"{typed.name} {op}: every register byte is the byte {unit.name} loads there "
            f"({u.shape[1]} registers x 4 bytes x {u.shape[0]} threads)",
            "exhaustive",
            int(u.size // 2),
        )
    return log
