"""SM100 (Blackwell datacenter) ``tcgen05.mma`` atoms (CuTe's UMMA) as data, checked against
an independent encoding of the PTX ISA's tables.

**These atoms cannot run on Hopper.**  ``tcgen05`` exists on ``sm_100a``/``sm_100f``/
``sm_103a`` only; the project's hardware is an H200 (``sm_90a``).  Everything here is
therefore checked against the PTX ISA's *tables and formulas* (section 9.7.16, "TensorCore
5th Generation Family Instructions"), transcribed below with PTX's own names, never against
a running instruction.  A wrong reading of the ISA would be reproduced by both sides; the
tests compare with CUTLASS's and tensor-layouts' atoms to narrow that risk.

What is here:

* **Shapes.** :data:`TCGEN05_SHAPES` is the ISA's "Various combinations of .kind and shapes"
  table (dense, without ``.ws``) for ``.kind::f16``, ``.kind::tf32`` and ``.kind::f8f6f4``:
  ``M`` in {64, 128} with ``N`` a multiple of 8 up to 256 for ``.cta_group::1``; ``M`` in
  {128, 256} with ``N`` a multiple of 16 for ``.cta_group::2``; ``K`` is 256 bits of the
  input type.  The rows for ``.kind::i8`` and the block-scaled kinds were not legible in
  the copy of the table available here: :data:`TCGEN05_K` gives their ``K`` (the same
  256-bit rule) and they have no atoms.
* **Atoms.** :class:`UMMAAtom` is CuTe's ``MMA_Traits`` of ``SM100_MMA_*_SS`` (and the
  ``2x1SM`` forms): one issuing thread per CTA, every operand a descriptor or a TMEM tile
  named by the whole CTA -- ``A = (1,(M,K)):(0,(1,M))``, ``C = (1,(M,N)):(0,(1,M))`` for
  ``.cta_group::1``; for ``.cta_group::2`` the "thread" is the peer CTA of the pair
  (``thr_id = 2:1``) and each CTA holds half of A and D (rows) and half of B (columns):
  ``A = (2,(M/2,K)):(M/2,(1,M))``.  :func:`verify_umma_atom` checks every ``(cta, value)``
  against :func:`cta_pair_owner`, the ISA's split of the operands across the CTA pair.
* **Accumulator in tensor memory.**  :func:`tmem_d_address` is the ISA's "data path layout
  organization": where row ``m``, column ``n`` of D lives in TMEM (lane, 32-bit column) for
  layout D (M = 128, ``.cta_group::1``: lane ``m``), layout F (M = 64, ``.cta_group::1``:
  warp ``w`` = ``m // 16`` owns rows ``16w .. 16w+15`` in lanes ``32w .. 32w+15``, the
  other half of each sub-partition unused), layout A (M = 256, ``.cta_group::2``: CTA
  ``m // 128``, lane ``m % 128``) and layout B (M = 128, ``.cta_group::2``: each CTA's
  64 rows in lanes 0..63 for columns ``[0, N/2)`` and in lanes 64..127 for ``[N/2, N)``).
  :func:`tmem_c_layout` gives each as a CuTe layout ``(M/ctas, N) -> (lane << 16) | col``
  (the TMEM address format); :func:`verify_tmem_layout` compares all points.  Only 32-bit
  accumulators (``.f32``, ``.s32``) are modelled.
* **Scale factors** of the block-scaled kinds: :func:`scale_factor_layout` maps each element
  ``(m, k)`` of A (or ``(n, k)`` of B) to its scale factor in the ``M x (K/VS)`` scale
  matrix (PTX "Block Scaling": each row of A is cut into chunks of ``VS`` along K, one scale
  per chunk), with ``VS`` from :data:`SCALE_VEC` (``scale_vec::1X`` / ``2X`` / ``4X``).
  Where the scale factors sit in TMEM is not modelled.
* **Shared-memory operands.**  The canonical layouts are SM90's
  (:func:`~layoutproof.gpu.isa.gmma.smem_atom`) plus one new MN-major mode, 128-byte
  swizzle with 32-byte atomicity (:func:`smem_atom_mn_sw128_32b`, CuTe's
  ``Layout_MN_SW128_32B_Atom``, ``Sw<2,5,2>`` on *bits*); the SM100 matrix descriptor has a
  3-bit layout-type field (:data:`SM100_LAYOUT_TYPE`) where SM90's has 2 bits.

>>> a = umma_atom("f16", 128, 256)
>>> a.name, str(a.c_layout)
('SM100_128x256x16_F32F16F16_SS', '(1,(128,256)):(0,(1,128))')
>>> str(umma_atom("tf32", 256, 128, cta_group=2).a_layout)
'(2,(128,8)):(128,(1,256))'
>>> tmem_d_address("F", 64, 37, 5)          # row 37 = warp 2, row 5 of its 16
(69, 5)
>>> str(tmem_c_layout("F", 64, 32))
'((16,4),32):((65536,2097152),1)'
>>> len(verify_umma_atom(a)) > 0
True
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, Dict, List, Tuple

import numpy as np

from layoutproof import ComposedLayout, Layout, Swizzle, composition
from layoutproof.errors import MalformedLayoutError

from ..errors import AtomMismatchError
from ..proof.record import ProofLog
from .atoms import MMAAtom, tv_bijective

__all__ = [
    # PTX encoding
    "TCGEN05_SHAPES",
    "TCGEN05_K",
    "SCALE_VEC",
    "SM100_LAYOUT_TYPE",
    "TMEM_LANES",
    "cta_pair_owner",
    "tmem_d_address",
    "datapath_layout",
    # atoms and layouts
    "UMMAAtom",
    "ACC_TYPES",
    "umma_atom",
    "SM100_ATOMS",
    "tmem_c_layout",
    "scale_factor_layout",
    "smem_atom_mn_sw128_32b",
    # verification
    "verify_umma_atom",
    "verify_tmem_layout",
    "verify_scale_factor_layout",
    "verify_all_sm100",
]

RowCol = Tuple[int, int]

# ============================================================================ PTX encoding
# Written from the PTX ISA text (9.7.16 "TensorCore 5th Generation Family Instructions"),
# with PTX's names; nothing in this section reads a layout.

#: Lanes (rows) of tensor memory; a TMEM address is ``(lane << 16) | column``.
TMEM_LANES = 128

_N1 = tuple(range(8, 257, 8))  # N = {8, 16, 24, ... 256}, steps of 8
_N2 = tuple(range(16, 257, 16))  # N = {16, 32, ... 256}, steps of 16

#: PTX "Various combinations of .kind and shapes" (dense, no ``.ws``):
#: ``kind -> {cta_group: (M values, N values, K)}`` and the input types of the kind.
TCGEN05_SHAPES: Dict[str, Dict[int, Tuple[Tuple[int, ...], Tuple[int, ...], int]]] = {
    "f16": {1: ((64, 128), _N1, 16), 2: ((128, 256), _N2, 16)},
    "tf32": {1: ((64, 128), _N1, 8), 2: ((128, 256), _N2, 8)},
    "f8f6f4": {1: ((64, 128), _N1, 32), 2: ((128, 256), _N2, 32)},
}

#: ``K`` of one dense ``tcgen05.mma`` per kind: 256 bits of the input type (4-bit inputs of
#: the ``mxf4`` kinds: 64).  The kinds without a row in :data:`TCGEN05_SHAPES` have no atoms.
TCGEN05_K: Dict[str, int] = {
    "f16": 16,
    "tf32": 8,
    "f8f6f4": 32,
    "i8": 32,
    "mxf8f6f4": 32,
    "mxf4": 64,
    "mxf4nvf4": 64,
}

#: PTX "Block Scaling": ``(kind, scale_vec) -> VS``, the K elements that share one scale
#: factor (``scale_A`` is ``M x K/VS``): ``scale_vec::1X`` with ``.kind::mxf8f6f4`` (K 32),
#: ``2X`` with ``.kind::mxf4`` / ``.kind::mxf4nvf4`` (K 64), ``4X`` with ``.kind::mxf4nvf4``.
SCALE_VEC: Dict[Tuple[str, str], int] = {
    ("mxf8f6f4", "1X"): 32,
    ("mxf4", "2X"): 32,
    ("mxf4nvf4", "2X"): 32,
    ("mxf4nvf4", "4X"): 16,
}

#: The SM100 shared-memory descriptor's 3-bit layout type (bits 61-63), by mode: SM90's
#: 2-bit field (bits 62-63) had INTER 0, SW128 1, SW64 2, SW32 3.  Data only (no descriptor
#: is built from it here); the same codes as CuTe's ``UMMA::LayoutType``.
SM100_LAYOUT_TYPE: Dict[str, int] = {
    "INTER": 0,
    "SW128_32B": 1,
    "SW128": 2,
    "SW64": 4,
    "SW32": 6,
}

#: PTX data-path layout letters modelled: ``letter -> (M, cta_group)``.
_DATAPATH: Dict[str, Tuple[int, int]] = {"A": (256, 2), "B": (128, 2), "D": (128, 1), "F": (64, 1)}


def datapath_layout(m: int, cta_group: int) -> str:
    """The PTX data-path layout letter of an ``M``, ``.cta_group`` pair (non-``.ws``, dense):
    ``A`` (256, 2), ``B`` (128, 2), ``D`` (128, 1), ``F`` (64, 1).

    >>> datapath_layout(128, 1), datapath_layout(128, 2)
    ('D', 'B')
    """
    for letter, key in _DATAPATH.items():
        if key == (m, cta_group):
            return letter
    raise MalformedLayoutError(
        f"no tcgen05 data-path layout for M = {m} with .cta_group::{cta_group} "
        f"(known: {sorted(_DATAPATH.values())})"
    )


def tmem_d_address(layout: str, n_cols: int, m: Any, n: Any) -> Any:
    """Where element ``(m, n)`` of the accumulator D (``M x N``, 32-bit elements) lives in the
    tensor memory of the CTA that holds it: ``(lane, column)`` relative to the D address.
    For ``.cta_group::2`` the lane is in the CTA that owns row ``m`` (:func:`cta_pair_owner`).
    ``m`` and ``n`` may be numpy arrays (then so are the results).

    PTX data-path layouts:

    * ``D`` (M = 128, ``.cta_group::1``): row ``m`` in lane ``m``, column ``n``.
    * ``F`` (M = 64, ``.cta_group::1``): rows ``16w .. 16w+15`` in lanes ``32w .. 32w+15``
      (the first half of warp ``w``'s 32-lane sub-partition), column ``n``.
    * ``A`` (M = 256, ``.cta_group::2``): row ``m`` in lane ``m % 128`` of CTA ``m // 128``.
    * ``B`` (M = 128, ``.cta_group::2``): each CTA's 64 rows (``r = m % 64``): columns
      ``n < N/2`` in lane ``r``, columns ``n >= N/2`` in lane ``64 + r`` at column ``n - N/2``.

    >>> tmem_d_address("D", 256, 127, 255), tmem_d_address("B", 64, 70, 40)
    ((127, 255), (70, 8))
    """
    if layout not in _DATAPATH:
        raise MalformedLayoutError(f"data-path layout must be one of {sorted(_DATAPATH)}, got {layout!r}")
    rows = _DATAPATH[layout][0]
    mm, nn = np.asarray(m), np.asarray(n)
    if np.any((mm < 0) | (mm >= rows) | (nn < 0) | (nn >= n_cols)):
        raise MalformedLayoutError(f"layout {layout}: (m, n) = ({m}, {n}) outside {rows} x {n_cols}")
    if layout == "D":
        lane, col = mm, nn
    elif layout == "F":
        lane, col = 32 * (mm // 16) + mm % 16, nn
    elif layout == "A":
        lane, col = mm % 128, nn
    else:  # layout B
        half = n_cols // 2
        hi = nn >= half
        lane, col = mm % 64 + 64 * hi, nn - half * hi
    if lane.ndim == 0 and col.ndim == 0:
        return int(lane), int(col)
    return lane, col


def cta_pair_owner(
    operand: str, shape_mnk: Tuple[int, int, int], cta_group: int, row: int
) -> Tuple[int, int]:
    """``(cta, local row)`` of row ``row`` of an operand (A and D: ``m``; B: ``n``).

    PTX ``.cta_group::2``: the pair computes one ``M x N`` product; each CTA supplies half the
    rows of A (``M/2 x K``) and receives the same half of D, and supplies half of B
    (``N/2`` of its columns) -- CTA ``i`` holds rows ``[i*M/2, (i+1)*M/2)`` of A and D and
    columns ``[i*N/2, (i+1)*N/2)`` of B.  With ``.cta_group::1`` everything is in CTA 0.

    >>> cta_pair_owner("A", (256, 128, 16), 2, 130), cta_pair_owner("B", (256, 128, 16), 2, 70)
    ((1, 2), (1, 6))
    """
    M, N, _K = shape_mnk
    ext = N if operand == "B" else M
    if cta_group == 1:
        return 0, row
    return divmod(row, ext // 2)


# ============================================================================ atoms
@dataclass(frozen=True)
class UMMAAtom(MMAAtom):
    """One ``tcgen05.mma`` as data (CuTe's SM100 ``MMA_Traits``).  The fields of
    :class:`~layoutproof.gpu.isa.atoms.MMAAtom` (``thr_id`` is ``1:0`` for
    ``.cta_group::1`` and ``2:1`` -- the CTA of the pair -- for ``.cta_group::2``; no
    registers: A and B are descriptors, D a TMEM address), plus ``kind`` and ``cta_group``.
    Checked against the ISA's tables only (:func:`verify_umma_atom`); cannot run on sm_90a.
    """

    kind: str = "f16"
    cta_group: int = 1


_F8F6F4 = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")
_TYPE_NAME = {"f16": "F16", "bf16": "BF16", "tf32": "TF32", **{t: t.upper() for t in _F8F6F4}}
_KIND_OF = {"f16": "f16", "bf16": "f16", "tf32": "tf32", **{t: "f8f6f4" for t in _F8F6F4}}


def _operand_layout(ctas: int, rows: int, cols: int) -> Layout:
    """``(ctas, (rows/ctas, cols)):(rows/ctas, (1, rows))``: CTA ``c`` names its block of rows,
    column-major in the whole ``rows x cols`` tile (for ``ctas = 1`` the stride is 0)."""
    r = rows // ctas
    return Layout((ctas, (r, cols)), (r if ctas > 1 else 0, (1, rows)))


#: PTX's accumulator types per input type (the table's dtype column): ``.f16`` accumulators
#: only with ``.f16`` inputs; ``.f32`` for every input type.
ACC_TYPES: Dict[str, Tuple[str, ...]] = {"f16": ("f32", "f16")}


def umma_atom(dtype: str, m: int, n: int, cta_group: int = 1, acc: str = "f32") -> UMMAAtom:
    """The dense ``tcgen05.mma.cta_group::{cta_group}.kind::{kind}`` atom with inputs of
    ``dtype`` (``f16``, ``bf16``, ``tf32``; ``e4m3``, ``e5m2``, ``e3m2``, ``e2m3``, ``e2m1``
    for ``.kind::f8f6f4``, where K is 32 for every type: the 6- and 4-bit elements occupy
    8-bit containers), ``.f32`` accumulator, A and B of the same type from shared memory
    (``SS``); ``M x N`` from :data:`TCGEN05_SHAPES`; ``acc`` ``"f16"`` only with ``.f16``
    inputs (:data:`ACC_TYPES`; its TMEM placement is not modelled).

    >>> umma_atom("e4m3", 64, 8).shape_mnk
    (64, 8, 32)
    >>> umma_atom("f16", 128, 64, acc="f16").name
    'SM100_128x64x16_F16F16F16_SS'
    """
    if acc not in ACC_TYPES.get(dtype, ("f32",)):
        raise MalformedLayoutError(
            f"tcgen05.mma: no .{acc} accumulator with .{dtype} inputs (PTX: {ACC_TYPES.get(dtype, ('f32',))})"
        )
    if dtype not in _KIND_OF:
        raise MalformedLayoutError(f"dtype must be one of {sorted(_KIND_OF)}, got {dtype!r}")
    kind = _KIND_OF[dtype]
    if cta_group not in (1, 2):
        raise MalformedLayoutError(f"cta_group must be 1 or 2, got {cta_group}")
    ms, ns, k = TCGEN05_SHAPES[kind][cta_group]
    if m not in ms or n not in ns:
        raise MalformedLayoutError(
            f"tcgen05.mma.cta_group::{cta_group}.kind::{kind}: no shape {m}x{n} (M in {list(ms)}, "
            f"N in {ns[0]}..{ns[-1]} step {ns[1] - ns[0]})"
        )
    ty = _TYPE_NAME[dtype]
    two = "2x1SM_" if cta_group == 2 else ""
    name = f"SM100_{two}{m}x{n}x{k}_{acc.upper()}{ty}{ty}_SS"
    ptx = f"tcgen05.mma.cta_group::{cta_group}.kind::{kind} m{m}n{n}k{k}.{acc}.{dtype}.{dtype}"
    return UMMAAtom(
        name,
        ptx,
        (m, n, k),
        Layout(cta_group, 1 if cta_group > 1 else 0),
        _operand_layout(cta_group, m, k),
        _operand_layout(cta_group, n, k),
        _operand_layout(cta_group, m, n),
        dtype,
        dtype,
        acc,
        0,
        0,
        0,
        kind,
        cta_group,
    )


def _all_atoms() -> List[UMMAAtom]:
    out = []
    for dtype in _KIND_OF:
        kind = _KIND_OF[dtype]
        for cg, (ms, ns, _k) in TCGEN05_SHAPES[kind].items():
            for m in ms:
                for n in ns:
                    for acc in ACC_TYPES.get(dtype, ("f32",)):
                        out.append(umma_atom(dtype, m, n, cg, acc))
    return out


#: Every dense SS atom of :data:`TCGEN05_SHAPES`, by CuTe-style name (the ``2x1SM`` names
#: for ``.cta_group::2``): f16, bf16, tf32 and the five f8f6f4 input types (A and B of one
#: type), ``.f32`` accumulators, and ``.f16`` accumulators with ``.f16`` inputs.
SM100_ATOMS: Dict[str, UMMAAtom] = {a.name: a for a in _all_atoms()}


def tmem_c_layout(layout: str, m: int, n: int) -> Layout:
    """The accumulator's TMEM layout as a CuTe layout: ``(M per CTA, N) -> (lane << 16) | col``
    for the data-path ``layout`` (``"A"``, ``"B"``, ``"D"``, ``"F"``) of an ``m x n`` D.

    >>> str(tmem_c_layout("B", 128, 64))
    '(64,(32,2)):(65536,(1,4194304))'
    """
    lane = 1 << 16
    want = _DATAPATH.get(layout)
    if want is None or want[0] != m:
        raise MalformedLayoutError(f"data-path layout {layout!r} is not one of M = {m}: {_DATAPATH}")
    if layout in ("D", "A"):
        return Layout((128, n), (lane, 1))
    if layout == "F":
        return Layout(((16, 4), n), ((lane, 32 * lane), 1))
    if n % 2:
        raise MalformedLayoutError(f"layout B needs an even N, got {n}")
    return Layout((64, (n // 2, 2)), (lane, (1, 64 * lane)))


def scale_factor_layout(rows: int, k: int, vs: int) -> Layout:
    """``(rows, K) -> `` index of the scale factor in the ``rows x K/VS`` scale matrix
    (column-major): element ``(r, k)`` uses scale ``(r, k // VS)``.

    >>> str(scale_factor_layout(128, 64, 32))
    '(128,(32,2)):(1,(0,128))'
    """
    if vs <= 0 or k % vs:
        raise MalformedLayoutError(f"K = {k} is not a multiple of the scale vector size {vs}")
    return Layout((rows, (vs, k // vs)), (1, (0, rows)))


def smem_atom_mn_sw128_32b(elem_bits: int = 16) -> ComposedLayout:
    """CuTe's ``Layout_MN_SW128_32B_Atom`` in elements: MN-major, 128-byte rows of MN, 4 rows
    of K, swizzled with 32-byte atomicity: in bits ``Sw<2,5,2> o (1024,4):(1,1024)``; in
    elements of ``b`` bits the swizzle acts on byte addresses (bits 5-6 XOR bits 7-8), so
    on element offsets it is ``Sw<2, 8 - log2 b, 2>`` (``b = 16``: ``Sw<2,4,2>``).

    >>> str(smem_atom_mn_sw128_32b(16))
    'Sw<2,4,2> o 0 o (64,4):(1,64)'
    """
    if elem_bits not in (4, 8, 16, 32):
        raise MalformedLayoutError(f"elem_bits must be 4, 8, 16 or 32, got {elem_bits}")
    base = 8 - (elem_bits.bit_length() - 1)  # byte bit 5 is element bit 5 - log2(bytes/elem)
    per_row = 1024 // elem_bits
    return composition(Swizzle(2, base, 2), Layout((per_row, 4), (1, per_row)))


# ============================================================================ verification
def _mismatch(what: str, witness, ours, ptx, condition: str) -> AtomMismatchError:
    return AtomMismatchError(
        f"{what}: {witness} is {ours} in the layout but {ptx} in the PTX table",
        condition=condition,
        witness=witness,
        ours=ours,
        ptx=ptx,
    )


def verify_umma_atom(atom: UMMAAtom) -> ProofLog:
    """Prove a :class:`UMMAAtom` against the ISA, exhaustively: the shape is a row of
    :data:`TCGEN05_SHAPES` for its kind and ``.cta_group``; for A, B and C every
    ``(cta, value)`` names an element of the operand tile held by that CTA
    (:func:`cta_pair_owner`), the values of a CTA enumerate its block column-major
    (value ``v`` = local row + rows-per-CTA * column), and the layout is a bijection onto the
    tile.  Raises AtomMismatchError with the witness ``(cta, value)``."""
    log = ProofLog()
    kind, cg = atom.kind, atom.cta_group
    M, N, K = atom.shape_mnk
    row = TCGEN05_SHAPES.get(kind, {}).get(cg)
    if row is None or M not in row[0] or N not in row[1] or K != row[2]:
        raise AtomMismatchError(
            f"{atom.name}: shape {atom.shape_mnk} is not a tcgen05.mma.cta_group::{cg}.kind::{kind} shape",
            condition="shape",
            witness=None,
            ours=atom.shape_mnk,
            ptx=row,
        )
    accs = ACC_TYPES.get(atom.a_type, ("f32",))
    if atom.num_threads != cg or atom.c_type not in accs or atom.b_type != atom.a_type:
        raise AtomMismatchError(
            f"{atom.name}: {atom.num_threads} issuing CTAs, types ({atom.a_type}, {atom.b_type}) -> "
            f".{atom.c_type}; PTX: {cg} CTA(s), accumulator one of {accs}",
            condition="cta group and types",
            witness=None,
            ours=(atom.num_threads, atom.c_type),
            ptx=(cg, accs),
        )
    log.add("config", f"{atom.name}: m{M}n{N}k{K} is a .cta_group::{cg} .kind::{kind} shape", "exhaustive", 1)
    for op in ("A", "B", "C"):
        L = atom.layout(op)
        rows, cols = atom.tile_shape(op)
        cases = tv_bijective(L, cg, (rows, cols), f"{atom.name} {op}")
        tv = atom.tv_table(op)
        per = rows // cg
        want_v = np.arange(per * cols)
        by_row = np.array(
            [cta_pair_owner("B" if op == "B" else "A", atom.shape_mnk, cg, x) for x in range(rows)]
        )
        for c in range(cg):
            idx = tv[c]
            r, col = idx % rows, idx // rows
            owner = by_row[r]
            bad = np.nonzero((owner[:, 0] != c) | (owner[:, 1] + per * col != want_v))[0]
            if bad.size:
                v = int(bad[0])
                raise _mismatch(
                    f"{atom.name} operand {op}",
                    (c, v),
                    (int(r[v]), int(col[v])),
                    f"CTA {c} local element {v} (owner of row {int(r[v])}: CTA {int(owner[v, 0])})",
                    f"operand {op} split across the CTA pair",
                )
        log.add(
            "atom",
            f"{atom.name} {op}: {L} == the tile held by each of {cg} CTA(s), column-major",
            "exhaustive",
            cases,
        )
    return log


def verify_tmem_layout(layout: str, n: int, L: Layout | None = None) -> ProofLog:
    """Prove ``L`` (default :func:`tmem_c_layout`) equal to :func:`tmem_d_address` at every
    ``(m, n)`` of the CTA's rows, and one-to-one (no two elements share a TMEM cell)."""
    log = ProofLog()
    m_total, cg = _DATAPATH[layout]
    if L is None:
        L = tmem_c_layout(layout, m_total, n)
    rows = m_total // cg
    if L.size != rows * n:
        raise AtomMismatchError(
            f"TMEM layout {layout}: {L} has {L.size} points, the CTA holds {rows} x {n}",
            condition="size",
            witness=None,
            ours=L.size,
            ptx=rows * n,
        )
    got = L.eval_all().reshape((rows, n), order="F")
    mm, nn = np.meshgrid(np.arange(rows), np.arange(n), indexing="ij")
    lane, col = tmem_d_address(layout, n, mm, nn)
    bad = np.argwhere(((got >> 16) != lane) | ((got & 0xFFFF) != col))
    if bad.size:
        m, j = (int(x) for x in bad[0])
        a = int(got[m, j])
        raise _mismatch(
            f"TMEM data-path layout {layout} (M = {m_total}, N = {n})",
            (m, j),
            (a >> 16, a & 0xFFFF),
            (int(lane[m, j]), int(col[m, j])),
            "D element in its PTX TMEM lane and column",
        )
    if np.unique(got).size != got.size:
        raise AtomMismatchError(
            f"TMEM layout {layout}: two elements of D share a TMEM cell", condition="injective", witness=None
        )
    log.add(
        "atom",
        f"TMEM layout {layout} (M={m_total}, .cta_group::{cg}, N={n}): {L} == PTX data path",
        "exhaustive",
        rows * n,
    )
    return log


def verify_scale_factor_layout(rows: int, k: int, vs: int, L: Layout | None = None) -> ProofLog:
    """Prove ``L`` (default :func:`scale_factor_layout`) maps every ``(r, k)`` to the scale
    ``(r, k // VS)`` (PTX: each chunk of ``VS`` elements of a row shares one scale), and
    that every scale of the ``rows x K/VS`` matrix is used."""
    log = ProofLog()
    if L is None:
        L = scale_factor_layout(rows, k, vs)
    got = L.eval_all().reshape((rows, k), order="F")
    r, kk = np.meshgrid(np.arange(rows), np.arange(k), indexing="ij")
    want = r + rows * (kk // vs)
    bad = np.argwhere(got != want)
    if bad.size:
        i, j = (int(x) for x in bad[0])
        raise _mismatch(
            f"scale factors {rows}x{k}, VS={vs}",
            (i, j),
            int(got[i, j]),
            int(want[i, j]),
            "element uses its row's chunk scale",
        )
    if np.unique(got).size != rows * (k // vs):
        raise AtomMismatchError("scale factors: some scale is unused", condition="surjective", witness=None)
    log.add(
        "atom",
        f"scale factors (rows={rows}, K={k}, VS={vs}): {L} == PTX block scaling",
        "exhaustive",
        rows * k,
    )
    return log


@functools.cache
def _sw128_32b_bits() -> np.ndarray:
    """PTX model of the 128B-swizzle-with-32B-atomicity pattern, on bit offsets of the
    ``(1024 bits of MN) x 4 rows`` atom: the 32-byte chunk index (bits 8-9 of the *bit*
    offset, i.e. bytes 32..127) is XORed with the row (bits 10-11)."""
    mn, kr = np.meshgrid(np.arange(1024), np.arange(4), indexing="ij")
    off = mn + 1024 * kr
    return off ^ (((off >> 10) & 3) << 8)


def verify_all_sm100() -> ProofLog:
    """Every atom of :data:`SM100_ATOMS`, the four TMEM data-path layouts at every N of
    their shapes, the scale-factor layouts of :data:`SCALE_VEC` at M = 128, and the
    ``MN_SW128_32B`` shared-memory atom (16-bit) against the bit pattern."""
    log = ProofLog()
    for a in SM100_ATOMS.values():
        log.extend(verify_umma_atom(a))
    for letter, (_m, cg) in _DATAPATH.items():
        for n in TCGEN05_SHAPES["f16"][cg][1]:
            log.extend(verify_tmem_layout(letter, n))
    for (kind, _sv), vs in SCALE_VEC.items():
        log.extend(verify_scale_factor_layout(128, TCGEN05_K[kind], vs))
    sw = smem_atom_mn_sw128_32b(16)
    want = _sw128_32b_bits()[::16, :] // 16
    got = np.array([[sw(i, j) for j in range(4)] for i in range(64)])
    if not np.array_equal(got, want):
        i, j = (int(x) for x in np.argwhere(got != want)[0])
        raise _mismatch("MN_SW128_32B atom (16-bit)", (i, j), int(got[i, j]), int(want[i, j]), "swizzle")
    log.add("atom", f"MN_SW128_32B atom (16-bit) {sw} == 32-byte-chunk XOR pattern", "exhaustive", 256)
    return log
