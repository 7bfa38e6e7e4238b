"""SM120 (Blackwell GeForce/workstation) warp-level ``mma.sync`` atoms, with the block-scaled
forms and their scale-factor operands, checked against an independent encoding of the PTX
ISA's fragment tables.

**These atoms cannot run on Hopper.**  ``mma.sync ... .kind::f8f6f4`` and the block-scaled
``.kind::mxf8f6f4`` / ``.kind::mxf4`` / ``.kind::mxf4nvf4`` need ``sm_120a``; the project's
hardware is ``sm_90a``.  The checks are against the ISA's tables only (section 9.7.14
"Warp-level matrix multiply-accumulate": "Matrix Fragments for mma.m16n8k32",
"... mma.m16n8k64", "Block Scaling for mma.sync"), transcribed below with PTX's names.

Atoms (:data:`SM120_ATOMS`, CuTe ``MMA_Traits`` convention: ``(thread, value)`` -> column-
major index of the ``(M,K)``, ``(N,K)``, ``(M,N)`` tile):

* ``SM120_16x8x32_{D}{A}{B}{C}_TN``: ``mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4``
  with A, B of any of ``e4m3``, ``e5m2``, ``e3m2``, ``e2m3``, ``e2m1`` (each element in an
  8-bit container: four per ``.b32``, the 8-bit fragment of ``m16n8k32``) and ``.f32`` or
  ``.f16`` accumulators (same positions).
* ``SM120_16x8x32_..._VS32``: ``.kind::mxf8f6f4.block_scale.scale_vec::1X`` (``ue8m0``
  scales, one per 32 K).
* ``SM120_16x8x64_..._VS32`` / ``_VS16``: ``.kind::mxf4`` (``scale_vec::2X``, ``ue8m0``) and
  ``.kind::mxf4nvf4`` (``2X`` with ``ue8m0``, ``4X`` with ``ue8m0`` or ``ue4m3``): ``e2m1``
  inputs packed eight per ``.b32`` (the 4-bit fragment of ``m16n8k64``).

The block-scaled atoms carry scale-factor layouts (CuTe's ``SFALayout`` / ``SFBLayout``):
``(thread, k) -> m + 16 k`` and ``(thread, k) -> n + 8 k``.  A thread names its row's
scales for every ``k``; the scale of ``k`` is byte ``k // VS`` of the thread's scale
register.  :func:`sf_a_lane` / :func:`sf_b_lane` encode which lanes supply them, as read
from the ISA's block-scaling section (the selector ``thread-id-a`` picks the thread pair
``2*thread-id-a``, ``2*thread-id-a + 1`` of each quad: the first supplies row ``groupID``,
the second row ``groupID + 8``; ``thread-id-b`` picks one thread of each quad, which
supplies column ``groupID``; ``byte-id`` is the byte of the first K chunk, later chunks in
the following bytes).  The figures of that section were not machine-readable here; this
reading agrees with CUTLASS's SM120 ``SFALayout``/``SFBLayout`` (selectors fixed to 0).
The layouts give every lane a value (the unselected lanes replicate a selected one through
a stride-0 mode); the hardware ignores those lanes, so the check requires only that they
stay inside the tile.

>>> a = SM120_ATOMS["SM120_16x8x64_F32E2M1E2M1F32_TN_VS32"]
>>> str(a.a_layout), str(a.sf_a_layout)
('((4,8),(8,2,2)):((128,1),(16,8,512))', '((2,2,8),64):((8,0,1),16)')
>>> a.a(5, 17), m16n8k64_e2m1_a(5, 17)
((1, 41), (1, 41))
>>> len(verify_sm120_atom(a)) > 0
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np

from layoutproof import Layout
from layoutproof.errors import MalformedLayoutError

from ..errors import AtomMismatchError
from ..proof.record import ProofLog
from .atoms import MMAAtom, tv_bijective

__all__ = [
    # PTX encoding
    "F8F6F4_TYPES",
    "BLOCK_SCALED",
    "m16n8k32_f8f6f4_a",
    "m16n8k32_f8f6f4_b",
    "m16n8k64_e2m1_a",
    "m16n8k64_e2m1_b",
    "m16n8_d",
    "sf_a_lane",
    "sf_b_lane",
    # atoms
    "SM120Atom",
    "SM120_ATOMS",
    "verify_sm120_atom",
    "verify_all_sm120",
]

RowCol = Tuple[int, int]

# ============================================================================ PTX encoding
# From the PTX ISA text, with PTX's names; nothing here reads a layout.

#: Element types of ``.kind::f8f6f4`` / ``.kind::mxf8f6f4`` (A and B independently).
F8F6F4_TYPES: Tuple[str, ...] = ("e4m3", "e5m2", "e3m2", "e2m3", "e2m1")

#: PTX "Valid combinations of .scale_vec_size and .kind": ``(kind, scale_vec, scale type)
#: -> (shape k, VS)``; ``scale_A`` is ``M x (K / VS)``.
BLOCK_SCALED: Dict[Tuple[str, str, str], Tuple[int, int]] = {
    ("mxf8f6f4", "1X", "ue8m0"): (32, 32),
    ("mxf4", "2X", "ue8m0"): (64, 32),
    ("mxf4nvf4", "2X", "ue8m0"): (64, 32),
    ("mxf4nvf4", "4X", "ue8m0"): (64, 16),
    ("mxf4nvf4", "4X", "ue4m3"): (64, 16),
}


def _g_t(lane: int) -> Tuple[int, int]:
    return lane >> 2, lane % 4  # groupID, threadID_in_group


def m16n8k32_f8f6f4_a(lane: int, i: int) -> RowCol:
    """``mma.m16n8k32`` A with ``.kind::f8f6f4`` types, element ``a_i`` (``i`` < 16, four per
    ``.b32``): row ``groupID`` for ``a0..a3``, ``a8..a11``, else ``groupID + 8``; column
    ``threadID_in_group*4 + (i & 3)``, plus 16 for ``i >= 8``."""
    g, t = _g_t(lane)
    return (g if (i < 4 or 8 <= i < 12) else g + 8), t * 4 + (i & 3) + (16 if i >= 8 else 0)


def m16n8k32_f8f6f4_b(lane: int, i: int) -> RowCol:
    """``mma.m16n8k32`` B (row = k, col = n), ``b_i`` (``i`` < 8): row
    ``threadID_in_group*4 + (i & 3)``, plus 16 for ``i >= 4``; column ``groupID``."""
    g, t = _g_t(lane)
    return t * 4 + (i & 3) + (16 if i >= 4 else 0), g


def m16n8k64_e2m1_a(lane: int, i: int) -> RowCol:
    """``mma.m16n8k64`` A, ``.e2m1`` (eight per ``.b32``), ``a_i`` (``i`` < 32): row
    ``groupID`` for ``0 <= i < 8`` or ``16 <= i < 24``, else ``groupID + 8``; column
    ``threadID_in_group*8 + (i & 7)``, plus 32 for ``i >= 16``."""
    g, t = _g_t(lane)
    return (g if (i < 8 or 16 <= i < 24) else g + 8), t * 8 + (i & 7) + (32 if i >= 16 else 0)


def m16n8k64_e2m1_b(lane: int, i: int) -> RowCol:
    """``mma.m16n8k64`` B, ``.e2m1``, ``b_i`` (``i`` < 16): row ``threadID_in_group*8 +
    (i & 7)``, plus 32 for ``i >= 8``; column ``groupID``."""
    g, t = _g_t(lane)
    return t * 8 + (i & 7) + (32 if i >= 8 else 0), g


def m16n8_d(lane: int, i: int) -> RowCol:
    """The ``m16n8`` accumulator (``.f32``: four registers; ``.f16``: two ``.f16x2``),
    ``c_i``: row ``groupID`` (+8 for ``i >= 2``), column ``threadID_in_group*2 + (i & 1)``."""
    g, t = _g_t(lane)
    return (g if i < 2 else g + 8), t * 2 + (i & 1)


def sf_a_lane(lane: int, thread_id_a: int = 0) -> Optional[int]:
    """The row of ``scale_A`` whose scales lane ``lane`` supplies, or ``None`` when the lane's
    scale register is not read: with selector ``thread-id-a`` (0 or 1), the thread with
    ``threadID_in_group == 2*thread-id-a`` supplies row ``groupID``, the next one row
    ``groupID + 8``."""
    if thread_id_a not in (0, 1):
        raise MalformedLayoutError(f"thread-id-a must be 0 or 1, got {thread_id_a}")
    g, t = _g_t(lane)
    if t // 2 != thread_id_a:
        return None
    return g + 8 * (t % 2)


def sf_b_lane(lane: int, thread_id_b: int = 0) -> Optional[int]:
    """The column of ``scale_B`` whose scales lane ``lane`` supplies, or ``None``: with
    selector ``thread-id-b`` (0..3), the thread with ``threadID_in_group == thread-id-b``
    supplies column ``groupID``."""
    if not 0 <= thread_id_b < 4:
        raise MalformedLayoutError(f"thread-id-b must be in 0..3, got {thread_id_b}")
    g, t = _g_t(lane)
    return g if t == thread_id_b else None


# ============================================================================ atoms
@dataclass(frozen=True)
class SM120Atom(MMAAtom):
    """One SM120 ``mma.sync`` as data: the :class:`~layoutproof.gpu.isa.atoms.MMAAtom` fields
    (32 threads) plus ``kind``, and for the block-scaled kinds ``sf_a_layout`` /
    ``sf_b_layout`` (``(thread, k)`` -> index into the ``(M,K)`` / ``(N,K)`` tile), ``vs``
    (K per scale) and ``sf_type`` (``ue8m0`` / ``ue4m3``).  Checked against the ISA's tables
    only (:func:`verify_sm120_atom`); cannot run on sm_90a."""

    kind: str = "f8f6f4"
    sf_a_layout: Optional[Layout] = None
    sf_b_layout: Optional[Layout] = None
    vs: int = 0
    sf_type: str = ""


_C16x8 = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))
_A32 = Layout(((4, 8), (4, 2, 2)), ((64, 1), (16, 8, 256)))
_B32 = Layout(((4, 8), (4, 2)), ((32, 1), (8, 128)))
_A64 = Layout(((4, 8), (8, 2, 2)), ((128, 1), (16, 8, 512)))
_B64 = Layout(((4, 8), (8, 2)), ((64, 1), (8, 256)))


def _sfa(k: int) -> Layout:
    # thread = t0 + 2 t1 + 4 g: row g + 8 t0; t1 (the other thread pair) replicates (stride 0)
    return Layout(((2, 2, 8), k), ((8, 0, 1), 16))


def _sfb(k: int) -> Layout:
    # thread = t + 4 g: column g for every t (stride 0)
    return Layout(((4, 8), k), ((0, 1), 8))


def _atoms() -> List[SM120Atom]:
    out: List[SM120Atom] = []
    thr = Layout(32, 1)
    for ta in F8F6F4_TYPES:
        for tb in F8F6F4_TYPES:
            A, B = ta.upper(), tb.upper()
            for acc in ("f32", "f16"):
                C = acc.upper()
                out.append(
                    SM120Atom(
                        f"SM120_16x8x32_{C}{A}{B}{C}_TN",
                        f"mma.sync.aligned.m16n8k32.row.col.kind::f8f6f4.{acc}.{ta}.{tb}.{acc}",
                        (16, 8, 32),
                        thr,
                        _A32,
                        _B32,
                        _C16x8,
                        ta,
                        tb,
                        acc,
                        4,
                        2,
                        4 if acc == "f32" else 2,
                        "f8f6f4",
                    )
                )
            out.append(
                SM120Atom(
                    f"SM120_16x8x32_F32{A}{B}F32_TN_VS32",
                    f"mma.sync.aligned.kind::mxf8f6f4.block_scale.scale_vec::1X.m16n8k32.row.col"
                    f".f32.{ta}.{tb}.f32.ue8m0",
                    (16, 8, 32),
                    thr,
                    _A32,
                    _B32,
                    _C16x8,
                    ta,
                    tb,
                    "f32",
                    4,
                    2,
                    4,
                    "mxf8f6f4",
                    _sfa(32),
                    _sfb(32),
                    32,
                    "ue8m0",
                )
            )
    for kind, sv, sft in (("mxf4", "2X", "ue8m0"), ("mxf4nvf4", "4X", "ue4m3")):
        _k, vs = BLOCK_SCALED[(kind, sv, sft)]
        out.append(
            SM120Atom(
                f"SM120_16x8x64_F32E2M1E2M1F32_TN_VS{vs}" + ("" if sft == "ue8m0" else "_UE4M3"),
                f"mma.sync.aligned.kind::{kind}.block_scale.scale_vec::{sv}.m16n8k64.row.col"
                f".f32.e2m1.e2m1.f32.{sft}",
                (16, 8, 64),
                thr,
                _A64,
                _B64,
                _C16x8,
                "e2m1",
                "e2m1",
                "f32",
                4,
                2,
                4,
                kind,
                _sfa(64),
                _sfb(64),
                vs,
                sft,
            )
        )
    return out


#: Every SM120 atom by name (50 ``kind::f8f6f4`` atoms, 25 ``mxf8f6f4`` block-scaled
#: ``m16n8k32`` atoms, and the ``m16n8k64`` ``mxf4`` (VS 32, ``ue8m0``) and ``mxf4nvf4``
#: (VS 16, ``ue4m3``) atoms).
SM120_ATOMS: Dict[str, SM120Atom] = {a.name: a for a in _atoms()}


# ============================================================================ verification
_TABLES = {
    32: (m16n8k32_f8f6f4_a, m16n8k32_f8f6f4_b, 16, 8),
    64: (m16n8k64_e2m1_a, m16n8k64_e2m1_b, 32, 16),
}


def _compare(atom: SM120Atom, op: str, fn, nv: int) -> int:
    tv = atom.tv_table(op)
    rows = atom.tile_shape(op)[0]
    if tv.shape != (32, nv):
        raise AtomMismatchError(
            f"{atom.name} {op}: {tv.shape[1]} values per thread, PTX has {nv}",
            condition="fragment size",
            witness=None,
            ours=tv.shape[1],
            ptx=nv,
        )
    for t in range(32):
        for v in range(nv):
            idx = int(tv[t, v])
            ours = (idx % rows, idx // rows)
            pr, pc = fn(t, v)
            ptx = (pc, pr) if op == "B" else (pr, pc)
            if ours != ptx:
                raise AtomMismatchError(
                    f"{atom.name} operand {op}: (thread, value) = ({t}, {v}) is {ours} in the "
                    f"layout but {ptx} in the PTX fragment",
                    condition=f"operand {op} equals PTX fragment",
                    witness=(t, v),
                    ours=ours,
                    ptx=ptx,
                )
    return 32 * nv


def _check_sf(atom: SM120Atom, which: str, L: Layout, rows: int, owner) -> int:
    """Selected lanes name exactly their row's scales for every k, in k order; every
    (row, k) is named by one selected (lane, value); unselected lanes stay in the tile."""
    K = atom.shape_mnk[2]
    if L.size != 32 * K:
        raise AtomMismatchError(
            f"{atom.name} {which}: {L} has {L.size} points, expected (T32,V{K})",
            condition=f"{which} size",
            witness=None,
        )
    tv = L.eval_all().reshape((32, K), order="F")
    if np.any((tv < 0) | (tv >= rows * K)):
        t, v = (int(x) for x in np.argwhere((tv < 0) | (tv >= rows * K))[0])
        raise AtomMismatchError(
            f"{atom.name} {which}: (thread, value) = ({t}, {v}) leaves the tile",
            condition=f"{which} bounds",
            witness=(t, v),
        )
    seen = np.zeros(rows * K, dtype=np.int64)
    for t in range(32):
        r = owner(t)
        if r is None:
            continue
        want = r + rows * np.arange(K)
        if not np.array_equal(tv[t], want):
            v = int(np.nonzero(tv[t] != want)[0][0])
            ours = (int(tv[t, v]) % rows, int(tv[t, v]) // rows)
            raise AtomMismatchError(
                f"{atom.name} {which}: lane {t} value {v} is {ours} in the layout, but PTX has lane "
                f"{t} supply row {r} (k {v} in byte {v // atom.vs})",
                condition=f"{which} equals PTX scale-factor ownership",
                witness=(t, v),
                ours=ours,
                ptx=(r, v),
            )
        seen[want] += 1
    if not np.all(seen == 1):
        e = int(np.nonzero(seen != 1)[0][0])
        raise AtomMismatchError(
            f"{atom.name} {which}: element (row, k) = ({e % rows}, {e // rows}) is supplied "
            f"{int(seen[e])} times by the selected lanes",
            condition=f"{which} covers the scale matrix once",
            witness=(e % rows, e // rows),
        )
    return 32 * K


def verify_sm120_atom(atom: SM120Atom) -> ProofLog:
    """Prove an :class:`SM120Atom` against the PTX fragments, exhaustively: the shape and
    types (``k32`` with the f8f6f4 types; ``k64`` with ``.e2m1``; a block-scaled kind's
    ``(shape k, VS)`` from :data:`BLOCK_SCALED`); A, B, C bijections onto their tiles, equal
    to :func:`m16n8k32_f8f6f4_a` / :func:`m16n8k64_e2m1_a` (and B), :func:`m16n8_d` at every
    ``(thread, value)``; for block-scaled atoms the scale-factor layouts against
    :func:`sf_a_lane` / :func:`sf_b_lane` (selectors 0) and ``K / VS`` scales per row."""
    log = ProofLog()
    M, N, K = atom.shape_mnk
    if (M, N) != (16, 8) or K not in _TABLES or atom.num_threads != 32:
        raise AtomMismatchError(
            f"{atom.name}: shape {atom.shape_mnk} is not m16n8k32 / m16n8k64 on a warp",
            condition="shape",
            witness=None,
            ours=atom.shape_mnk,
        )
    types_ok = (
        all(t in F8F6F4_TYPES for t in (atom.a_type, atom.b_type))
        if K == 32
        else atom.a_type == atom.b_type == "e2m1"
    )
    if not types_ok or atom.c_type not in ("f32", "f16"):
        raise AtomMismatchError(
            f"{atom.name}: types ({atom.a_type}, {atom.b_type}, {atom.c_type}) not valid for k{K}",
            condition="types",
            witness=None,
        )
    fa, fb, na, nb = _TABLES[K]
    for op, fn, nv, tile in (("A", fa, na, (M, K)), ("B", fb, nb, (N, K)), ("C", m16n8_d, 4, (M, N))):
        L = atom.layout(op)
        tv_bijective(L, 32, tile, f"{atom.name} {op}")
        cases = _compare(atom, op, fn, nv)
        log.add("atom", f"{atom.name} {op}: {L} == PTX m16n8k{K} fragment, bijective", "exhaustive", cases)
    if atom.kind == "f8f6f4":
        if atom.sf_a_layout is not None or atom.sf_b_layout is not None:
            raise AtomMismatchError(f"{atom.name}: scale factors on an unscaled kind", condition="kind")
        return log
    key = next(
        (
            k
            for k in BLOCK_SCALED
            if k[0] == atom.kind and k[2] == atom.sf_type and BLOCK_SCALED[k] == (K, atom.vs)
        ),
        None,
    )
    if key is None or atom.sf_a_layout is None or atom.sf_b_layout is None:
        raise AtomMismatchError(
            f"{atom.name}: .kind::{atom.kind} with k{K}, VS {atom.vs}, .{atom.sf_type} is not a PTX "
            f"block-scaled combination",
            condition="block scaling",
            witness=None,
            ours=(atom.kind, K, atom.vs, atom.sf_type),
        )
    cases = _check_sf(atom, "SFA", atom.sf_a_layout, M, lambda t: sf_a_lane(t, 0))
    log.add(
        "atom",
        f"{atom.name} SFA: {atom.sf_a_layout} == PTX scale_A ownership (thread-id-a 0)",
        "exhaustive",
        cases,
    )
    cases = _check_sf(atom, "SFB", atom.sf_b_layout, N, lambda t: sf_b_lane(t, 0))
    log.add(
        "atom",
        f"{atom.name} SFB: {atom.sf_b_layout} == PTX scale_B ownership (thread-id-b 0)",
        "exhaustive",
        cases,
    )
    log.add(
        "config",
        f"{atom.name}: scale_vec::{key[1]} -> scale_A {M}x{K // atom.vs}, "
        f"scale_B {K // atom.vs}x{N} .{atom.sf_type}",
        "exhaustive",
        1,
    )
    return log


def verify_all_sm120() -> ProofLog:
    """Every atom of :data:`SM120_ATOMS`."""
    log = ProofLog()
    for a in SM120_ATOMS.values():
        log.extend(verify_sm120_atom(a))
    return log
