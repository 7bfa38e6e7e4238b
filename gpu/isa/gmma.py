"""SM90 (Hopper) ``wgmma`` atoms, canonical shared-memory layouts and matrix descriptors.

Three things, each checked against an independent encoding of the PTX ISA (section
9.7.15, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate Instructions"):

* **Atoms.**  :class:`GMMAAtom` is one ``wgmma.mma_async.sync.aligned.m64nNk16.f32.{f16,bf16}``
  instruction (``N`` in 8, 16, ..., 256), with A from shared memory (``SS``) or from
  registers (``RS``), as CuTe ``MMA_Traits``: 128 threads (a warpgroup), the
  ``(thread, value)`` layouts mapping to the *column-major* index of the ``(M,K)``,
  ``(N,K)``, ``(M,N)`` tile.  The accumulator is CuTe's ``CLayout_64xN``
  ``((4,8,4),(2,2,N/8)):((128,1,16),(64,8,512))``; an ``RS`` A is ``ALayout_64x16``
  (the same formula with ``N = 16``); a shared-memory operand is CuTe's ``ABLayout``
  ``(128,(R,16)):(0,(1,R))`` (every thread names the whole tile: the operand is a
  descriptor).  :func:`verify_gmma_atom` compares every ``(thread, value)`` against
  :func:`wgmma_d_f32` / :func:`wgmma_a_f16`, written from the PTX fragment description
  ("Matrix Fragments for wgmma.mma_async.m64nNk16"), not from the layouts, and checks the
  *profile* ``((4,8,4),(2,2,N/8))`` too: for ``N = 8`` the value mode must keep its
  trailing ``1`` (cutlass#3254: the CuTe DSL printed ``((4,8,4),(2,2))``, the right
  function with the wrong rank).
* **Shared-memory layouts.**  :func:`smem_atom` gives CuTe's ``GMMA::Layout_{K,MN}_{INTER,
  SW32,SW64,SW128}_Atom<T>`` as element layouts ``(rows = M or N, cols = K) -> element
  offset``.  CuTe defines them in bits with the swizzle acting on *byte* addresses
  (``Sw<B,4,3> o smem_ptr o (8,1024):(1024,1)`` for K-major SW128); for 16-bit elements
  the same function on element offsets is ``Sw<B,3,3>``.  :func:`verify_smem_atom`
  proves the element form equal to the bit form, a bijection, and of the shape of PTX's
  "Shared Memory Matrix Layout" table; :func:`tile_to_shape` builds a stage from an atom.
* **Descriptors.**  :func:`make_descriptor` / :func:`decode_descriptor` /
  :func:`encode_descriptor` for the 64-bit matrix descriptor ("Matrix Descriptor
  Format"), and :func:`prove_descriptor`: every element of the tile the instruction reads
  is addressed by the hardware (:func:`descriptor_address`, the PTX model: core matrices of
  8 rows x 16 bytes, LBO / SBO, the swizzle XOR of address bits [4,7) by [7,10)) exactly
  where the layout puts it.  :func:`prove_k_advance` proves the per-k16 advance of the
  start address (``+32`` bytes inside a K-major SW128 atom).

>>> atom = sm90_atom(8, "f16", "RS")
>>> atom.name, str(atom.c_layout)
('SM90_64x8x16_F32F16F16_RS', '((4,8,4),(2,2,1)):((128,1,16),(64,8,512))')
>>> atom.c(37, 2), wgmma_d_f32(37, 2, 8)          # warp 1, lane 5: row 16+1+8, col 2
((25, 2), (25, 2))
>>> len(verify_gmma_atom(atom)) > 0
True
>>> sA = tile_to_shape(smem_atom("K", "SW128"), (128, 64))
>>> print(sA.layout)
Sw<3,3,3> o 0 o (128,64):(64,1)
>>> desc = make_descriptor(sA, 0x400)
>>> hex(desc)
'0x4000004000010040'
>>> d = decode_descriptor(desc)
>>> d["start_address"], d["leading_byte_offset"], d["stride_byte_offset"], d["swizzle"]
(1024, 16, 1024, 'SW128')
>>> prove_descriptor(sA, desc, base_addr=0x400, mn_extent=64).cases
1024
>>> [p.statement.split(": ")[0] for p in prove_k_advance(sA, 0x400, mn_extent=64)][:1]
['k-advance +0/+32/+64/+96 bytes']
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from layoutproof import ComposedLayout, Layout, Swizzle, composition
from layoutproof import tile_to_shape as _tile_to_shape
from layoutproof.errors import MalformedLayoutError
from layoutproof.inttuple import raw_product
from layoutproof.layout import top_modes

from ..errors import AtomMismatchError, ProofFailedError
from ..proof.record import ProofLog
from .atoms import MMAAtom, tv_bijective

__all__ = [
    # PTX encoding
    "WARPGROUP_THREADS",
    "N_VALUES",
    "wgmma_d_f32",
    "wgmma_a_f16",
    "wgmma_a_tf32",
    "wgmma_a_b8",
    "WGMMA_TYPES",
    "wgmma_d_registers",
    "PTX_SWIZZLE_ATOMS",
    "descriptor_address",
    # atoms
    "GMMAAtom",
    "SM90_ATOMS",
    "SM90_TYPED_ATOMS",
    "sm90_atom",
    "verify_gmma_atom",
    "verify_all_sm90",
    # smem layouts
    "SWIZZLES",
    "GmmaSmemLayout",
    "smem_atom",
    "tile_to_shape",
    "verify_smem_atom",
    # descriptors
    "encode_descriptor",
    "decode_descriptor",
    "make_descriptor",
    "prove_descriptor",
    "prove_k_advance",
]

RowCol = Tuple[int, int]

#: Threads of a warpgroup (the ``wgmma`` execution unit): four consecutive warps.
WARPGROUP_THREADS = 128
#: The ``N`` of ``wgmma.m64nNk16`` (``.f16``/``.bf16`` inputs): multiples of 8 up to 256.
N_VALUES: Tuple[int, ...] = tuple(range(8, 257, 8))

# ============================================================================ PTX encoding
# Everything in this section is written from the PTX ISA text, with PTX's names, and never
# reads a layout.  Sections used (PTX ISA 8.x, 9.7.15 "Asynchronous Warpgroup Level Matrix
# Multiply-Accumulate Instructions"):
#   9.7.15.5.1.1.1 "Matrix Fragments for wgmma.mma_async.m64nNk16"  (A in registers:
#       four .f16x2 registers, a0..a7, Figure 148; accumulator D .f32: N/2 .f32 registers,
#       d0..d(N/2-1), Figure 149)
#   9.7.15.5.1.2   "Shared Memory Matrix Layout"  (Table: swizzle atom shapes in 128b units)
#   9.7.15.5.1.2.2 "Matrix Descriptor Format"  (bit fields, matrix-descriptor-encode)
# plus the stride definitions (leading / stride dimension byte offset) as stated for the
# same canonical layouts in 9.7.16.3 "Major-ness supported by Strides".  The text of the
# fragment figures (148, 149) was not readable here: the D / A positions below are the
# figures' m16n8 pattern per warp (warp w: rows 16w..16w+15), cross-read against the
# transcription of Figure 149 in LLVM MLIR's NVGPUToNVVM (WarpgroupMmaStoreOp lowering).
# Both were then confirmed on an H100 by bench/wgmma_atom_check.py: one wgmma per atom (SS
# and RS, f16 and bf16, N = 8, 16, 64, 256; 32-byte-swizzled descriptors), every element of
# D equal to A @ B placed by these layouts (bench/RESULTS.md, the wgmma atoms' hardware check).


def _warp_lane(tid: int) -> Tuple[int, int, int, int]:
    """``(warp in the warpgroup, laneid, groupID, threadID_in_group)`` of thread ``tid``."""
    warp = (tid % WARPGROUP_THREADS) >> 5
    lane = tid & 31
    return warp, lane, lane >> 2, lane % 4


def wgmma_d_f32(tid: int, i: int, n: int) -> RowCol:
    """``wgmma.mma_async.m64nNk16`` accumulator D (``.f32``), element ``d_i`` of thread
    ``tid`` (0..127 in the warpgroup): ``(row, col)`` of the ``64 x N`` matrix.

    PTX (Figure 149): warp ``w`` of the warpgroup owns rows ``16w .. 16w+15``; inside a
    warp the ``8``-column slab ``j`` holds ``d_{4j} .. d_{4j+3}`` in the ``m16n8``
    accumulator pattern -- ``d_{4j}, d_{4j+1}`` in row ``groupID``, ``d_{4j+2}, d_{4j+3}``
    in row ``groupID + 8``, columns ``8j + threadID_in_group*2 + (i & 1)``.

    >>> wgmma_d_f32(0, 0, 8), wgmma_d_f32(0, 3, 8), wgmma_d_f32(127, 7, 16)
    ((0, 0), (8, 1), (63, 15))
    """
    if not (0 <= tid < WARPGROUP_THREADS and 0 <= i < n // 2 and n in N_VALUES):
        raise MalformedLayoutError(f"wgmma D m64n{n}k16: (tid, i) = ({tid}, {i}) out of range")
    warp, _lane, group, tig = _warp_lane(tid)
    slab, pos = divmod(i, 4)
    row = 16 * warp + group + (8 if pos >= 2 else 0)
    col = 8 * slab + tig * 2 + (i & 1)
    return row, col


def wgmma_a_f16(tid: int, i: int) -> RowCol:
    """``wgmma.mma_async.m64nNk16`` A in registers (``.f16``/``.bf16``), element ``a_i``
    (``i`` in 0..7) of thread ``tid``: ``(row, col) = (m, k)`` of the ``64 x 16`` matrix.

    PTX (Figure 148): warp ``w`` owns rows ``16w .. 16w+15``, in the ``m16n8k16`` A pattern:
    ``a0, a1, a4, a5`` in row ``groupID``, ``a2, a3, a6, a7`` in row ``groupID + 8``;
    columns ``threadID_in_group*2 + (i & 1)``, plus 8 for ``a4 .. a7``.

    >>> wgmma_a_f16(0, 0), wgmma_a_f16(33, 6), wgmma_a_f16(127, 7)
    ((0, 0), (24, 10), (63, 15))
    """
    if not (0 <= tid < WARPGROUP_THREADS and 0 <= i < 8):
        raise MalformedLayoutError(f"wgmma A m64nNk16: (tid, i) = ({tid}, {i}) out of range")
    warp, _lane, group, tig = _warp_lane(tid)
    row = 16 * warp + group + (8 if i in (2, 3, 6, 7) else 0)
    col = tig * 2 + (i & 1) + (8 if i >= 4 else 0)
    return row, col


def wgmma_a_tf32(tid: int, i: int) -> RowCol:
    """``wgmma.mma_async.m64nNk8`` A in registers (``.tf32``), element ``a_i`` (``i`` in
    0..3, one ``.b32`` each) of thread ``tid``: ``(m, k)`` of the ``64 x 8`` matrix.

    PTX ("Matrix Fragments for wgmma.mma_async.m64nNk8"): warp ``w`` owns rows
    ``16w .. 16w+15`` in the ``m16n8k8`` ``.tf32`` A pattern: ``a0, a2`` in row ``groupID``,
    ``a1, a3`` in row ``groupID + 8``; column ``threadID_in_group``, plus 4 for ``a2, a3``.

    >>> wgmma_a_tf32(0, 1), wgmma_a_tf32(37, 2)
    ((8, 0), (17, 5))
    """
    if not (0 <= tid < WARPGROUP_THREADS and 0 <= i < 4):
        raise MalformedLayoutError(f"wgmma A m64nNk8: (tid, i) = ({tid}, {i}) out of range")
    warp, _lane, group, tig = _warp_lane(tid)
    return 16 * warp + group + (8 if i in (1, 3) else 0), tig + (4 if i >= 2 else 0)


def wgmma_a_b8(tid: int, i: int) -> RowCol:
    """``wgmma.mma_async.m64nNk32`` A in registers (8-bit: ``.s8``, ``.u8``, ``.e4m3``,
    ``.e5m2``), element ``a_i`` (``i`` in 0..15, four per ``.b32``) of thread ``tid``.

    PTX ("Matrix Fragments for wgmma.mma_async.m64nNk32"): warp ``w`` owns rows
    ``16w .. 16w+15`` in the ``m16n8k32`` A pattern: ``a0..a3``, ``a8..a11`` in row
    ``groupID``, the others in row ``groupID + 8``; column ``threadID_in_group*4 + (i & 3)``,
    plus 16 for ``a8..a15``.

    >>> wgmma_a_b8(0, 4), wgmma_a_b8(37, 9)
    ((8, 0), (17, 21))
    """
    if not (0 <= tid < WARPGROUP_THREADS and 0 <= i < 16):
        raise MalformedLayoutError(f"wgmma A m64nNk32: (tid, i) = ({tid}, {i}) out of range")
    warp, _lane, group, tig = _warp_lane(tid)
    row = 16 * warp + group + (8 if (4 <= i < 8 or i >= 12) else 0)
    return row, tig * 4 + (i & 3) + (16 if i >= 8 else 0)


#: PTX's ``wgmma`` operand types beyond 16 bits: ``dtype -> (bits, k of one instruction,
#: accumulator type, the instruction's N values)``.  A descriptor row of K is 32 bytes for
#: every type (k16 of ``.f16``, k8 of ``.tf32``, k32 of 8-bit types).  The integer types
#: have fewer N: 8, 16, 24 and the multiples of 16 (PTX: ``.m64n8k32`` ... ``.m64n256k32``,
#: checked against ptxas by the tests).  Only ``.f16``/``.bf16`` take the transpose
#: immediates: every other type reads K-major operands from shared memory.
WGMMA_TYPES: Dict[str, Tuple[int, int, str, Tuple[int, ...]]] = {
    "f16": (16, 16, "f32", N_VALUES),
    "bf16": (16, 16, "f32", N_VALUES),
    "tf32": (32, 8, "f32", N_VALUES),
    "e4m3": (8, 32, "f32", N_VALUES),
    "e5m2": (8, 32, "f32", N_VALUES),
    "s8": (8, 32, "s32", (8, 16, 24) + tuple(range(32, 257, 16))),
    "u8": (8, 32, "s32", (8, 16, 24) + tuple(range(32, 257, 16))),
}


def wgmma_d_registers(n: int, dtype: str = "f32") -> int:
    """Registers per thread of the accumulator: ``N/2`` ``.f32`` registers, or ``N/4``
    ``.f16x2`` registers for an ``.f16`` accumulator (PTX fragment table)."""
    return n // 2 if dtype in ("f32", "s32") else n // 4


#: PTX "Shared Memory Matrix Layout" table: swizzle atom ``(MN, K)`` shape in 128-bit
#: elements, by (swizzling mode, major-ness).  For narrower elements the *leading*
#: dimension (MN for MN-major, K for K-major) is multiplied by ``128 / bits``.
PTX_SWIZZLE_ATOMS: Dict[Tuple[str, str], Tuple[int, int]] = {
    ("SW128", "MN"): (8, 8),
    ("SW128", "K"): (8, 8),
    ("SW64", "MN"): (4, 8),
    ("SW64", "K"): (8, 4),
    ("SW32", "MN"): (2, 8),
    ("SW32", "K"): (8, 2),
    ("INTER", "MN"): (1, 8),
    ("INTER", "K"): (8, 1),
}

# Descriptor bits 63-62: 0 no swizzle (interleave), 1 128B, 2 64B, 3 32B.
_MODE_OF = {"INTER": 0, "SW128": 1, "SW64": 2, "SW32": 3}
_NAME_OF = {v: k for k, v in _MODE_OF.items()}
# 16-byte chunks per swizzle row ("swizzle-byte-size / 16"); 1 for interleave.
_WIDTH = {"INTER": 1, "SW32": 2, "SW64": 4, "SW128": 8}


def _desc_encode(x: int, what: str) -> int:
    """PTX ``matrix-descriptor-encode(x) = (x & 0x3FFFF) >> 4``, refusing what it would lose."""
    if x < 0 or x >= 1 << 18 or x % 16:
        raise ProofFailedError(
            f"descriptor {what} = {x} bytes is not encodable (must be a multiple of 16 in [0, 2^18))",
            condition="descriptor field encodable",
            witness=x,
        )
    return (x & 0x3FFFF) >> 4


def encode_descriptor(
    start_address: int,
    leading_byte_offset: int,
    stride_byte_offset: int,
    base_offset: int = 0,
    swizzle: str = "INTER",
) -> int:
    """The 64-bit ``wgmma`` matrix descriptor (PTX "Matrix Descriptor Format"): bits 13-0
    ``encode(start address)``, 29-16 ``encode(LBO)``, 45-32 ``encode(SBO)``, 51-49 the
    base offset, 63-62 the swizzle mode (``INTER`` 0, ``SW128`` 1, ``SW64`` 2, ``SW32`` 3).
    Addresses and offsets are in bytes.

    >>> hex(encode_descriptor(0x400, 16, 1024, 0, "SW128"))
    '0x4000004000010040'
    """
    if swizzle not in _MODE_OF:
        raise MalformedLayoutError(f"swizzle must be one of {sorted(_MODE_OF)}, got {swizzle!r}")
    if not 0 <= base_offset < 8:
        raise ProofFailedError(
            f"base offset {base_offset} does not fit in 3 bits",
            condition="descriptor field encodable",
            witness=base_offset,
        )
    return (
        _desc_encode(start_address, "start address")
        | _desc_encode(leading_byte_offset, "leading dimension byte offset") << 16
        | _desc_encode(stride_byte_offset, "stride dimension byte offset") << 32
        | base_offset << 49
        | _MODE_OF[swizzle] << 62
    )


def decode_descriptor(desc: int) -> Dict[str, Any]:
    """The fields of a descriptor: ``start_address``, ``leading_byte_offset``,
    ``stride_byte_offset`` (bytes), ``base_offset``, ``swizzle`` (name) and ``layout_type``
    (the 2-bit code).  Inverse of :func:`encode_descriptor` on encodable fields.

    >>> decode_descriptor(0x4000004000010040)["stride_byte_offset"]
    1024
    """
    if not 0 <= desc < 1 << 64:
        raise MalformedLayoutError(f"a descriptor is a 64-bit unsigned integer, got {desc}")
    mode = (desc >> 62) & 0x3
    return {
        "start_address": (desc & 0x3FFF) << 4,
        "leading_byte_offset": ((desc >> 16) & 0x3FFF) << 4,
        "stride_byte_offset": ((desc >> 32) & 0x3FFF) << 4,
        "base_offset": (desc >> 49) & 0x7,
        "swizzle": _NAME_OF[mode],
        "layout_type": mode,
    }


def descriptor_address(desc: int, major: str, mn: Any, k: Any, elem_bits: int = 16) -> Any:
    """The shared-memory byte address the hardware reads for element ``(mn, k)`` of the
    operand tile a descriptor describes (``mn``, ``k`` relative to the tile; ints or numpy
    arrays).  ``major`` is the instruction's major-ness of the operand (``imm-trans``: 0 is
    ``"K"``, 1 is ``"MN"``), which the descriptor does not hold.

    The PTX model, in 16-byte units ("128-bit elements", ``T = 128/bits`` elements each):

    * K-major, no swizzle: core matrices of 8 rows x 16 bytes, rows 16 bytes apart;
      the next 8 rows (M/N) at SBO, the next 16-byte column (K) at LBO.
    * K-major, ``W*16``-byte swizzle (``W`` = 2, 4, 8): rows ``W*16`` bytes apart, the
      16-byte K chunks of a row adjacent (LBO unused), the next 8 rows at SBO.
    * MN-major, no swizzle: core matrices of 8 K-rows x 16 bytes (``T`` M/N elements);
      the next ``T`` M/N elements at SBO, the next 8 K at LBO.
    * MN-major, swizzled: ``W*16`` contiguous bytes of M/N per K-row, K-rows ``W*16``
      bytes apart; the next ``W*T`` M/N elements at LBO, the next 8 K at SBO.

    The swizzle then XORs the 16-byte chunk bits ``[4, 4+log2 W)`` of the *absolute*
    address with bits ``[7, 7+log2 W)`` (the repeating pattern is 1024 / 512 / 256 bytes).
    A non-zero base offset is not modelled (raises).
    """
    f = decode_descriptor(desc)
    if f["base_offset"]:
        raise ProofFailedError(
            f"descriptor base offset {f['base_offset']} is not modelled (only 0, a swizzle "
            f"pattern starting on its repeat boundary)",
            condition="base offset 0",
            witness=f["base_offset"],
        )
    if elem_bits not in (8, 16, 32):
        raise MalformedLayoutError(f"elem_bits must be 8, 16 or 32, got {elem_bits}")
    eb = elem_bits // 8
    T = 16 // eb
    W = _WIDTH[f["swizzle"]]
    start, lbo, sbo = f["start_address"], f["leading_byte_offset"], f["stride_byte_offset"]
    mn = np.asarray(mn, dtype=np.int64)
    k = np.asarray(k, dtype=np.int64)
    if major == "K":
        chunk, within = k // T, k % T
        row, group = mn % 8, mn // 8
        if W == 1:
            addr = start + group * sbo + chunk * lbo + row * 16 + within * eb
        else:
            if np.any(chunk >= W):
                raise ProofFailedError(
                    f"K-major {f['swizzle']}: K extent beyond the {W * 16}-byte swizzle row",
                    condition="tile inside one swizzle row",
                    witness=int(np.max(k)),
                )
            addr = start + group * sbo + row * (16 * W) + chunk * 16 + within * eb
    elif major == "MN":
        chunk, within = mn // T, mn % T
        krow, kgroup = k % 8, k // 8
        if W == 1:
            addr = start + chunk * sbo + kgroup * lbo + krow * 16 + within * eb
        else:
            addr = (
                start + (chunk // W) * lbo + kgroup * sbo + krow * (16 * W) + (chunk % W) * 16 + within * eb
            )
    else:
        raise MalformedLayoutError(f"major must be 'K' or 'MN', got {major!r}")
    if W > 1:
        addr = addr ^ (((addr >> 7) & (W - 1)) << 4)
    return addr if addr.ndim else int(addr)


# ============================================================================ atoms
@dataclass(frozen=True)
class GMMAAtom(MMAAtom):
    """One ``wgmma.mma_async`` instruction as data (CuTe's SM90 ``MMA_Traits``).

    The fields of :class:`~layoutproof.gpu.isa.atoms.MMAAtom` (``thr_id = 128:1``; ``a_regs``
    is 4 for ``RS`` and 0 for ``SS``, whose A is a descriptor, as is B: ``b_regs = 0``;
    ``c_regs = N/2``), plus ``a_source``: ``"SS"`` (A from shared memory) or ``"RS"``
    (A from registers).  Use :func:`verify_gmma_atom`, not ``atoms.verify_atom`` (which
    knows the ``mma.sync`` tables only).
    """

    a_source: str = "SS"

    @property
    def n(self) -> int:
        return self.shape_mnk[1]


def _c_layout(n: int) -> Layout:
    # thread = t0 + 4*t1 + 32*t2 (t0 = threadID_in_group, t1 = groupID, t2 = warp);
    # value  = v0 + 2*v1 + 4*v2 (v0: column parity, v1: +8 rows, v2: 8-column slab).
    # m = t1 + 16*t2 + 8*v1, n = 2*t0 + v0 + 8*v2  ->  index m + 64*n.
    return Layout(((4, 8, 4), (2, 2, n // 8)), ((128, 1, 16), (64, 8, 512)))


def _smem_operand_layout(rows: int, cols: int) -> Layout:
    return Layout((WARPGROUP_THREADS, (rows, cols)), (0, (1, rows)))


_TYPE_NAME = {
    "f16": "F16",
    "bf16": "BF16",
    "tf32": "TF32",
    "e4m3": "E4M3",
    "e5m2": "E5M2",
    "s8": "S8",
    "u8": "U8",
}


def _a_register_layout(k: int) -> Layout:
    """CuTe's ``ALayout_64x{k}`` (A in registers): index ``m + 64 k``; thread ``t0 + 4 t1
    + 32 t2`` (threadID_in_group, groupID, warp)."""
    if k == 16:  # v0 -> k+1, v1 -> m+8, v2 -> k+8
        return _c_layout(16)
    if k == 8:  # tf32: t0 -> k, v0 -> m+8, v1 -> k+4
        return Layout(((4, 8, 4), (2, 2)), ((64, 1, 16), (8, 256)))
    # 8-bit: t0 -> k 4*t0, v0 -> k+1, v1 -> m+8, v2 -> k+16
    return Layout(((4, 8, 4), (4, 2, 2)), ((256, 1, 16), (64, 8, 1024)))


def _gmma(n: int, dtype: str, a_source: str) -> GMMAAtom:
    ty = _TYPE_NAME[dtype]
    _bits, k, acc, _ns = WGMMA_TYPES[dtype]
    if dtype in ("f16", "bf16"):
        name = f"SM90_64x{n}x16_F32{ty}{ty}_{a_source}"
    else:  # K-major operands only: CuTe's _TN atoms
        name = f"SM90_64x{n}x{k}_{acc.upper()}{ty}{ty}_{a_source}_TN"
    ptx = f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{acc}.{dtype}.{dtype}"
    a = _a_register_layout(k) if a_source == "RS" else _smem_operand_layout(64, k)
    return GMMAAtom(
        name,
        ptx,
        (64, n, k),
        Layout(WARPGROUP_THREADS, 1),
        a,
        _smem_operand_layout(n, k),
        _c_layout(n),
        dtype,
        dtype,
        acc,
        4 if a_source == "RS" else 0,
        0,
        wgmma_d_registers(n, acc),
        a_source,
    )


#: The SM90 ``wgmma`` atoms of 16-bit inputs, by CuTe name (``SM90_64x{N}x16_F32F16F16_SS``,
#: ``..._RS``, ``..._F32BF16BF16_...``): N in :data:`N_VALUES`, 128 atoms.
SM90_ATOMS: Dict[str, GMMAAtom] = {
    a.name: a for a in (_gmma(n, d, s) for d in ("f16", "bf16") for s in ("SS", "RS") for n in N_VALUES)
}

#: The K-major atoms of the other types, by CuTe name:
#: ``SM90_64x{N}x8_F32TF32TF32_{SS,RS}_TN``, ``SM90_64x{N}x32_F32E4M3E4M3_..._TN`` (and
#: ``E5M2``), ``SM90_64x{N}x32_S32S8S8_..._TN`` (and ``U8``; the integer N of
#: :data:`WGMMA_TYPES`).
SM90_TYPED_ATOMS: Dict[str, GMMAAtom] = {
    a.name: a
    for a in (
        _gmma(n, d, s)
        for d in WGMMA_TYPES
        if d not in ("f16", "bf16")
        for s in ("SS", "RS")
        for n in WGMMA_TYPES[d][3]
    )
}


def sm90_atom(n: int, dtype: str = "f16", a_source: str = "SS") -> GMMAAtom:
    """The ``wgmma.m64n{n}k{k}.{acc}.{dtype}.{dtype}`` atom (k and the accumulator by
    :data:`WGMMA_TYPES`), A from ``"SS"`` (shared memory) or ``"RS"`` (registers).

    >>> sm90_atom(256, "bf16").ptx
    'wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16'
    >>> sm90_atom(128, "e4m3").name, sm90_atom(64, "s8").ptx
    ('SM90_64x128x32_F32E4M3E4M3_SS_TN', 'wgmma.mma_async.sync.aligned.m64n64k32.s32.s8.s8')
    """
    if dtype not in WGMMA_TYPES:
        raise MalformedLayoutError(f"dtype must be one of {sorted(WGMMA_TYPES)}, got {dtype!r}")
    ns = WGMMA_TYPES[dtype][3]
    if n not in ns:
        raise MalformedLayoutError(
            f"wgmma m64nNk{WGMMA_TYPES[dtype][1]} .{dtype}: N must be one of {list(ns)}, got {n}"
        )
    if a_source not in ("SS", "RS"):
        raise MalformedLayoutError(f"a_source must be 'SS' or 'RS', got {a_source!r}")
    return _gmma(n, dtype, a_source)


@functools.cache
def _ptx_d_table(n: int) -> np.ndarray:
    """``(128, N/2, 2)``: PTX's (row, col) of every (thread, d_i), from :func:`wgmma_d_f32`."""
    out = np.empty((WARPGROUP_THREADS, n // 2, 2), dtype=np.int64)
    for t in range(WARPGROUP_THREADS):
        for i in range(n // 2):
            out[t, i] = wgmma_d_f32(t, i, n)
    return out


@functools.cache
def _ptx_a_table(k: int = 16) -> np.ndarray:
    """``(128, values, 2)``: PTX's (m, k) of every (thread, a_i) of an A register fragment
    with ``k`` columns (16: :func:`wgmma_a_f16`, 8: :func:`wgmma_a_tf32`, 32:
    :func:`wgmma_a_b8`)."""
    fn, nv = {16: (wgmma_a_f16, 8), 8: (wgmma_a_tf32, 4), 32: (wgmma_a_b8, 16)}[k]
    out = np.empty((WARPGROUP_THREADS, nv, 2), dtype=np.int64)
    for t in range(WARPGROUP_THREADS):
        for i in range(nv):
            out[t, i] = fn(t, i)
    return out


def _compare_tv(atom: GMMAAtom, op: str, want: np.ndarray, key: str) -> int:
    tv = atom.tv_table(op)
    rows = atom.tile_shape(op)[0]
    ours = np.stack([tv % rows, tv // rows], axis=-1)
    if ours.shape != want.shape:
        raise AtomMismatchError(
            f"{atom.name} {op}: {ours.shape[1]} values per thread, PTX {key} has {want.shape[1]}",
            condition="fragment size",
            witness=None,
            ours=ours.shape[1],
            ptx=want.shape[1],
        )
    bad = np.nonzero(np.any(ours != want, axis=-1))
    if bad[0].size:
        t, v = int(bad[0][0]), int(bad[1][0])
        o, p = tuple(int(x) for x in ours[t, v]), tuple(int(x) for x in want[t, v])
        raise AtomMismatchError(
            f"{atom.name} operand {op}: (thread, value) = ({t}, {v}) (warp {t // 32}, lane "
            f"{t % 32}, PTX element {'d' if op == 'C' else 'a'}{v}) is {o} in the layout but "
            f"{p} in the PTX fragment {key}",
            condition=f"operand {op} equals PTX fragment",
            witness=(t, v),
            ours=o,
            ptx=p,
        )
    return int(tv.size)


def _check_descriptor_operand(atom: GMMAAtom, op: str) -> int:
    """A shared-memory operand: every thread's value ``v`` is tile element ``v``
    (column-major), i.e. the whole ``(R,16)`` tile is named by each thread (CuTe ABLayout)."""
    L = atom.layout(op)
    rows, cols = atom.tile_shape(op)
    tv = atom.tv_table(op)
    want = np.arange(rows * cols, dtype=np.int64)
    if tv.shape != (WARPGROUP_THREADS, rows * cols) or not np.array_equal(
        tv, np.broadcast_to(want, tv.shape)
    ):
        bad = np.nonzero(tv != want) if tv.shape[1:] == want.shape else (np.array([0]), np.array([0]))
        t, v = int(bad[0][0]), int(bad[1][0])
        raise AtomMismatchError(
            f"{atom.name} {op}: {L} is not the descriptor operand (128,({rows},{cols})):(0,(1,{rows})) "
            f"-- (thread, value) = ({t}, {v}) does not name tile element {v}",
            condition=f"operand {op} is a descriptor tile",
            witness=(t, v),
        )
    return int(tv.size)


def verify_gmma_atom(atom: GMMAAtom) -> ProofLog:
    """Prove a :class:`GMMAAtom` against the PTX ``wgmma`` fragments, exhaustively.

    * C: the profile is ``((4,8,4),(2,2,N/8))`` (cutlass#3254: ``N = 8`` keeps the
      trailing ``1``); a bijection onto ``64 x N``; every ``(thread, value)`` is PTX's
      ``d_value`` of that thread (:func:`wgmma_d_f32`; the ``.s32`` accumulator of the
      integer types has the same fragment); ``c_regs == N/2``.
    * the shape is ``m64nNk{k}`` with ``k`` and the accumulator type of
      :data:`WGMMA_TYPES` (32 bytes of K: k16, k8 for ``.tf32``, k32 for 8-bit types).
    * A, ``RS``: a bijection onto ``64 x k``, equal to :func:`wgmma_a_f16` /
      :func:`wgmma_a_tf32` / :func:`wgmma_a_b8`; 4 registers.
    * A, ``SS``, and B: the descriptor operand ``(128,(R,k)):(0,(1,R))``.

    Raises AtomMismatchError with the witness ``(thread, value)`` and both answers.
    """
    log = ProofLog()
    n = atom.n
    nt = atom.num_threads
    if atom.a_type not in WGMMA_TYPES or atom.b_type != atom.a_type:
        raise AtomMismatchError(
            f"{atom.name}: operand types ({atom.a_type}, {atom.b_type}) are not a wgmma type pair",
            condition="types",
            witness=None,
            ours=(atom.a_type, atom.b_type),
        )
    bits, kk, acc, ns = WGMMA_TYPES[atom.a_type]
    if nt != WARPGROUP_THREADS or atom.shape_mnk != (64, n, kk) or n not in ns:
        raise AtomMismatchError(
            f"{atom.name}: not an m64nNk{kk} warpgroup atom of .{atom.a_type} (N in {list(ns)}): "
            f"shape {atom.shape_mnk}",
            condition="shape",
            witness=None,
            ours=atom.shape_mnk,
            ptx=(64, n, kk),
        )
    if atom.c_type != acc or kk * bits != 256:
        raise AtomMismatchError(
            f"{atom.name}: accumulator .{atom.c_type}, PTX has .{acc} for .{atom.a_type}",
            condition="accumulator type",
            witness=None,
            ours=atom.c_type,
            ptx=acc,
        )
    C = atom.c_layout
    profile = ((4, 8, 4), (2, 2, n // 8))
    if C.shape != profile:
        raise AtomMismatchError(
            f"{atom.name} C: profile {C.shape} is not ((4,8,4),(2,2,{n // 8})) -- the value mode "
            f"must be (2,2,N/8) for every N, N = 8 included (cutlass#3254)",
            condition="C profile",
            witness=None,
            ours=C.shape,
            ptx=profile,
        )
    cases = tv_bijective(C, nt, (64, n), f"{atom.name} C")
    log.add(
        "bijective", f"{atom.name} C: {C} is a bijection (T128,V{n // 2}) -> (64, {n})", "exhaustive", cases
    )
    key = f"m64n{n}k{kk} D.{acc}"
    cases = _compare_tv(atom, "C", _ptx_d_table(n), key)
    if atom.c_regs != wgmma_d_registers(n, acc):
        raise AtomMismatchError(
            f"{atom.name}: {atom.c_regs} C registers, PTX has {n // 2}",
            condition="register count",
            witness=None,
            ours=atom.c_regs,
            ptx=n // 2,
        )
    log.add("atom", f"{atom.name} C == PTX wgmma {key} fragment (profile {C.shape})", "exhaustive", cases)
    if atom.a_source == "RS":
        A = atom.a_layout
        nv = 128 // bits
        cases = tv_bijective(A, nt, (64, kk), f"{atom.name} A")
        log.add(
            "bijective", f"{atom.name} A: {A} is a bijection (T128,V{nv}) -> (64, {kk})", "exhaustive", cases
        )
        cases = _compare_tv(atom, "A", _ptx_a_table(kk), f"m64nNk{kk} A (registers)")
        if atom.a_regs != 4:
            raise AtomMismatchError(
                f"{atom.name}: {atom.a_regs} A registers, PTX has 4",
                condition="register count",
                witness=None,
                ours=atom.a_regs,
                ptx=4,
            )
        log.add("atom", f"{atom.name} A == PTX wgmma m64nNk{kk} A register fragment", "exhaustive", cases)
    elif atom.a_source == "SS":
        cases = _check_descriptor_operand(atom, "A")
        log.add("atom", f"{atom.name} A: descriptor operand {atom.a_layout}", "exhaustive", cases)
    else:
        raise AtomMismatchError(
            f"{atom.name}: a_source {atom.a_source!r}", condition="a_source", witness=None
        )
    cases = _check_descriptor_operand(atom, "B")
    log.add("atom", f"{atom.name} B: descriptor operand {atom.b_layout}", "exhaustive", cases)
    return log


def verify_all_sm90() -> ProofLog:
    """Every atom of :data:`SM90_ATOMS` and :data:`SM90_TYPED_ATOMS`, and every canonical
    shared-memory atom of 16-, 8- and 32-bit elements."""
    log = ProofLog()
    for a in (*SM90_ATOMS.values(), *SM90_TYPED_ATOMS.values()):
        log.extend(verify_gmma_atom(a))
    for bits in (16, 8, 32):
        for major in ("K", "MN"):
            for sw in SWIZZLES:
                log.extend(verify_smem_atom(smem_atom(major, sw, bits)))
    return log


# ============================================================================ smem layouts
#: CuTe's names of the four canonical layout families (``LayoutType``).
SWIZZLES: Tuple[str, ...] = ("INTER", "SW32", "SW64", "SW128")

AnyLayout = Union[Layout, ComposedLayout]


@dataclass(frozen=True)
class GmmaSmemLayout:
    """A shared-memory operand layout for ``wgmma``: ``layout`` maps ``(row, col) =
    (m or n, k)`` to the element offset; ``major`` is ``"K"`` or ``"MN"`` (the
    instruction's ``imm-trans``), ``swizzle`` one of :data:`SWIZZLES`, ``elem_bits`` the
    element width."""

    layout: AnyLayout
    major: str
    swizzle: str
    elem_bits: int = 16

    @property
    def shape(self) -> Tuple[int, int]:
        s = top_modes(self.layout.layout_b if isinstance(self.layout, ComposedLayout) else self.layout)[0]
        return _extent(s[0]), _extent(s[1])

    @property
    def elem_bytes(self) -> int:
        return self.elem_bits // 8

    def table(self) -> np.ndarray:
        """``(rows, cols)`` array of element offsets (vectorized, exhaustive)."""
        return np.asarray(self.layout.eval_all(), dtype=np.int64).reshape(self.shape, order="F")

    def pre_swizzle(self, row: int, col: int) -> int:
        """The offset before the swizzle (``offset + B(row, col)`` of ``A o offset o B``)."""
        L = self.layout
        if isinstance(L, ComposedLayout):
            return int(L.offset + L.layout_b(row, col))
        return int(L(row, col))


def _extent(s: Any) -> int:
    return int(raw_product(s))


def _log2(x: int) -> int:
    return x.bit_length() - 1


def _check_kind(major: str, swizzle: str, elem_bits: int) -> None:
    if major not in ("K", "MN"):
        raise MalformedLayoutError(f"major must be 'K' or 'MN', got {major!r}")
    if swizzle not in SWIZZLES:
        raise MalformedLayoutError(f"swizzle must be one of {SWIZZLES}, got {swizzle!r}")
    if elem_bits not in (8, 16, 32):
        raise MalformedLayoutError(f"elem_bits must be 8, 16 or 32, got {elem_bits}")


def _element_swizzle(swizzle: str, elem_bits: int) -> Swizzle:
    """The byte-address swizzle ``Sw<B,4,3>`` as a swizzle of element offsets."""
    return Swizzle(_log2(_WIDTH[swizzle]), 4 - _log2(elem_bits // 8), 3)


def smem_atom(major: str, swizzle: str, elem_bits: int = 16) -> GmmaSmemLayout:
    """CuTe's ``GMMA::Layout_{major}_{swizzle}_Atom<T>`` for ``elem_bits``-bit ``T``, as an
    element layout ``(rows, cols) = (m|n, k)``.  With ``T = 128/bits`` elements per 16
    bytes and ``W`` = 1, 2, 4, 8 sixteen-byte chunks per swizzle row:

    * K-major: ``Sw o (8, W*T):(W*T, 1)`` (16-bit: ``(8,8)``, ``(8,16)``, ``(8,32)``,
      ``(8,64)``);
    * MN-major: ``Sw o (W*T, 8):(1, W*T)`` (16-bit: ``(8,8)``, ``(16,8)``, ``(32,8)``,
      ``(64,8)``);

    ``Sw`` is ``Sw<log2 W, 4 - log2(bytes), 3>`` (16-bit: ``Sw<3,3,3>`` for SW128), the
    element form of CuTe's ``Sw<log2 W,4,3>`` on byte addresses; ``INTER`` has none.

    >>> print(smem_atom("MN", "SW64").layout)
    Sw<2,3,3> o 0 o (32,8):(1,32)
    >>> print(smem_atom("K", "INTER").layout)
    (8,8):(8,1)
    """
    _check_kind(major, swizzle, elem_bits)
    T = 128 // elem_bits
    W = _WIDTH[swizzle]
    base = Layout((8, W * T), (W * T, 1)) if major == "K" else Layout((W * T, 8), (1, W * T))
    sw = _element_swizzle(swizzle, elem_bits)
    return GmmaSmemLayout(composition(sw, base), major, swizzle, elem_bits)


def tile_to_shape(
    atom: GmmaSmemLayout, shape: Tuple[int, int], order: Optional[Sequence[int]] = None
) -> GmmaSmemLayout:
    """A ``(BM, BK)`` (A) or ``(BN, BK)`` (B) stage: the atom repeated to ``shape``
    (CuTe's ``tile_to_shape``; repetitions column-major unless ``order``).  Each mode of
    ``shape`` must be a multiple of the atom's (InadmissibleError otherwise).

    >>> print(tile_to_shape(smem_atom("MN", "SW128"), (128, 64)).layout)
    Sw<3,3,3> o 0 o ((64,2),(8,8)):((1,512),(64,1024))
    """
    L = _tile_to_shape(atom.layout, tuple(shape), order)
    return GmmaSmemLayout(L, atom.major, atom.swizzle, atom.elem_bits)


def verify_smem_atom(atom: GmmaSmemLayout) -> ProofLog:
    """Prove a canonical atom: (1) its shape is the PTX "Shared Memory Matrix Layout" table
    entry (128b units, leading dimension scaled by ``128/bits``); (2) it is a bijection
    onto ``[0, size)`` (its span); (3) it equals CuTe's bit-unit definition
    ``Sw<log2 W,4,3> o smem_ptr o (8, 128W):(128W, 1)`` (K-major; MN-major transposed)
    with the swizzle acting on *byte* addresses: ``bytes * L(r,c) == Sw(bitlayout(r,c)/8)``
    for every element.  Raises ProofFailedError with the witness element."""
    _check_kind(atom.major, atom.swizzle, atom.elem_bits)
    log = ProofLog()
    T = 128 // atom.elem_bits
    a, b = PTX_SWIZZLE_ATOMS[(atom.swizzle, atom.major)]
    want = (a * T, b) if atom.major == "MN" else (a, b * T)
    if atom.shape != want:
        raise ProofFailedError(
            f"{atom.major}-major {atom.swizzle} atom of {atom.elem_bits}-bit elements has shape "
            f"{atom.shape}, PTX's table gives {want}",
            condition="atom shape",
            witness=atom.shape,
        )
    tab = atom.table()
    size = tab.size
    vals = np.sort(tab, axis=None)
    if not np.array_equal(vals, np.arange(size)):
        bad = int(np.nonzero(vals != np.arange(size))[0][0])
        raise ProofFailedError(
            f"{atom.layout} is not a bijection onto [0, {size}) (offset {bad})",
            condition="bijective",
            witness=bad,
        )
    log.add(
        "bijective",
        f"{atom.major}-major {atom.swizzle} atom {atom.layout} is a bijection {atom.shape} -> [0, {size})",
        "exhaustive",
        size,
    )
    W = _WIDTH[atom.swizzle]
    bits = atom.elem_bits
    byte_sw = Swizzle(_log2(W), 4, 3)
    r, c = np.meshgrid(np.arange(atom.shape[0]), np.arange(atom.shape[1]), indexing="ij")
    if atom.major == "K":
        bit_addr = r * (128 * W) + c * bits  # (8, 128W):(128W, 1) in bits
    else:
        bit_addr = r * bits + c * (128 * W)  # (128W, 8):(1, 128W) in bits
    cute_bytes = np.vectorize(byte_sw)(bit_addr // 8)
    ours = tab * (bits // 8)
    wrong = np.argwhere(ours != cute_bytes)
    if wrong.size:
        rr, cc = (int(x) for x in wrong[0])
        raise ProofFailedError(
            f"{atom.layout}: element ({rr}, {cc}) at byte {int(ours[rr, cc])}, CuTe's bit-unit atom "
            f"puts it at byte {int(cute_bytes[rr, cc])}",
            condition="equals CuTe bit-unit atom",
            witness=(rr, cc),
        )
    bit_form = f"(8,{128 * W}):({128 * W},1)" if atom.major == "K" else f"({128 * W},8):(1,{128 * W})"
    log.add(
        "equal",
        f"{atom.major}-major {atom.swizzle}: {atom.layout} (elements) == {byte_sw} "
        f"o smem_ptr o {bit_form} (bits; swizzle on bytes)",
        "exhaustive",
        size,
    )
    return log


# ============================================================================ descriptors
def _k_extent(smem: GmmaSmemLayout) -> int:
    return 256 // smem.elem_bits  # one wgmma reads 32 bytes of K (k16 for 16-bit)


def make_descriptor(smem: GmmaSmemLayout, base_addr: int, *, mn_offset: int = 0, k_offset: int = 0) -> int:
    """The descriptor of the operand tile starting at element ``(mn_offset, k_offset)`` of
    ``smem`` placed at shared-memory byte address ``base_addr``.  The fields are read off
    the layout (before its swizzle), as CuTe's ``make_gmma_desc`` does:

    * start address: ``base_addr + bytes * B(mn_offset, k_offset)``;
    * K-major: SBO = distance of 8 rows; LBO = distance of ``T`` columns (16 bytes of K) for
      ``INTER``, else 16 (PTX: "not used, assumed 1");
    * MN-major ``INTER``: SBO = distance of ``T`` rows, LBO = distance of 8 columns;
      swizzled: LBO = distance of ``W*T`` rows, SBO = distance of 8 columns;

    a distance the tile does not reach is encoded as 0.  The base offset is 0; the swizzle
    mode is ``smem.swizzle``, checked against the layout's own swizzle.  Nothing here is
    trusted: :func:`prove_descriptor` checks the result element by element.
    """
    _check_kind(smem.major, smem.swizzle, smem.elem_bits)
    L = smem.layout
    want_sw = _element_swizzle(smem.swizzle, smem.elem_bits)
    have_sw = L.swizzle if isinstance(L, ComposedLayout) else None
    have = None if have_sw is None or have_sw.is_identity() else have_sw
    want = None if want_sw.is_identity() else want_sw
    if have != want:
        raise ProofFailedError(
            f"{L}: swizzle {have_sw} is not the {smem.swizzle} swizzle {want_sw} of "
            f"{smem.elem_bits}-bit elements",
            condition="canonical swizzle",
            witness=str(have_sw),
        )
    rows, cols = smem.shape
    if not (0 <= mn_offset < rows and 0 <= k_offset < cols):
        raise ProofFailedError(
            f"tile origin ({mn_offset}, {k_offset}) outside {smem.shape}",
            condition="bounds",
            witness=(mn_offset, k_offset),
        )
    eb = smem.elem_bytes
    T = 16 // eb
    W = _WIDTH[smem.swizzle]
    origin = smem.pre_swizzle(mn_offset, k_offset)

    def dist(dr: int, dc: int) -> int:
        r, c = mn_offset + dr, k_offset + dc
        if r >= rows or c >= cols:
            return 0
        return eb * (smem.pre_swizzle(r, c) - origin)

    if smem.major == "K":
        sbo = dist(8, 0)
        lbo = dist(0, T) if W == 1 else 16
    elif W == 1:
        sbo, lbo = dist(T, 0), dist(0, 8)
    else:
        lbo, sbo = dist(W * T, 0), dist(0, 8)
    return encode_descriptor(base_addr + eb * origin, lbo, sbo, 0, smem.swizzle)


def prove_descriptor(
    smem: GmmaSmemLayout,
    desc: int,
    *,
    base_addr: int = 0,
    mn_offset: int = 0,
    k_offset: int = 0,
    mn_extent: Optional[int] = None,
    k_extent: Optional[int] = None,
) -> ProofLog:
    """Prove that ``desc`` reads the tile ``[mn_offset, +mn_extent) x [k_offset, +k_extent)``
    of ``smem`` (at byte ``base_addr``): for every element, the hardware address
    (:func:`descriptor_address`, the PTX model, with major-ness ``smem.major``) equals
    ``base_addr + bytes * layout(mn, k)``.  ``mn_extent`` defaults to the rest of the rows
    (64 for an A stage read by one warpgroup: pass it), ``k_extent`` to 32 bytes of K (k16).
    Raises ProofFailedError with the witness ``(mn, k)`` and both addresses."""
    _check_kind(smem.major, smem.swizzle, smem.elem_bits)
    rows, cols = smem.shape
    mext = rows - mn_offset if mn_extent is None else mn_extent
    kext = _k_extent(smem) if k_extent is None else k_extent
    if not (
        0 <= mn_offset
        and mext > 0
        and mn_offset + mext <= rows
        and 0 <= k_offset
        and kext > 0
        and k_offset + kext <= cols
    ):
        raise ProofFailedError(
            f"tile [{mn_offset},{mn_offset + mext}) x [{k_offset},{k_offset + kext}) outside the "
            f"{smem.shape} layout",
            condition="bounds",
            witness=(mn_offset, k_offset),
        )
    tab = smem.table()[mn_offset : mn_offset + mext, k_offset : k_offset + kext]
    ours = base_addr + smem.elem_bytes * tab
    dm, dk = np.meshgrid(np.arange(mext), np.arange(kext), indexing="ij")
    hw = descriptor_address(desc, smem.major, dm, dk, smem.elem_bits)
    bad = np.argwhere(ours != hw)
    f = decode_descriptor(desc)
    if bad.size:
        i, j = (int(x) for x in bad[0])
        w = (mn_offset + i, k_offset + j)
        raise ProofFailedError(
            f"descriptor {desc:#x} (start {f['start_address']}, LBO {f['leading_byte_offset']}, "
            f"SBO {f['stride_byte_offset']}, {f['swizzle']}, {smem.major}-major) reads element "
            f"{w} at byte {int(hw[i, j])}, the layout {smem.layout} (base {base_addr}) puts it at "
            f"byte {int(ours[i, j])}",
            condition="descriptor addresses equal layout",
            witness=w,
        )
    log = ProofLog()
    log.add(
        "equal",
        f"wgmma desc {desc:#x} ({smem.major}-major {f['swizzle']}, start "
        f"{f['start_address']}, LBO {f['leading_byte_offset']}, SBO {f['stride_byte_offset']}) "
        f"reads [{mn_offset},{mn_offset + mext})x[{k_offset},{k_offset + kext}) of {smem.layout} "
        f"at {base_addr}",
        "exhaustive",
        mext * kext,
    )
    return log


def prove_k_advance(
    smem: GmmaSmemLayout, base_addr: int = 0, *, mn_offset: int = 0, mn_extent: Optional[int] = None
) -> ProofLog:
    """Prove the per-k-step descriptors of a stage: for each k-block ``j`` (32 bytes of K),
    the descriptor is the first one plus ``delta_j >> 4`` (only the start address moves --
    CuTe's ``DescriptorIterator + offset``), and that advanced descriptor passes
    :func:`prove_descriptor` on k-block ``j``.  Inside a K-major SW128 16-bit atom
    ``delta_j = 32 j`` bytes.  The first record lists the deltas."""
    kext = _k_extent(smem)
    cols = smem.shape[1]
    if cols % kext:
        raise ProofFailedError(
            f"K extent {cols} is not a multiple of the k-step {kext}",
            condition="k-step divides K",
            witness=cols,
        )
    d0 = make_descriptor(smem, base_addr, mn_offset=mn_offset)
    s0 = d0 & 0x3FFF
    deltas: List[int] = []
    sub = ProofLog()
    for j in range(cols // kext):
        dj = make_descriptor(smem, base_addr, mn_offset=mn_offset, k_offset=j * kext)
        step = (dj & 0x3FFF) - s0
        if step < 0 or s0 + step >= 1 << 14 or dj != d0 + step:
            raise ProofFailedError(
                f"k-block {j}: descriptor {dj:#x} is not {d0:#x} + {step} (fields other than the "
                f"start address change, or the start address wraps)",
                condition="k-advance moves the start address only",
                witness=j,
            )
        deltas.append(16 * step)
        sub.extend(
            prove_descriptor(
                smem,
                d0 + step,
                base_addr=base_addr,
                mn_offset=mn_offset,
                k_offset=j * kext,
                mn_extent=mn_extent,
            )
        )
    log = ProofLog()
    log.add(
        "equal",
        f"k-advance {'/'.join(f'+{d}' for d in deltas)} bytes: desc_j == desc_0 + "
        f"(delta_j >> 4) for {smem.layout}",
        "exhaustive",
        len(deltas),
    )
    log.extend(sub)
    return log
