"""Swizzle synthesis with a certificate: the least ``Swizzle<B,M,S>`` (or canonical wgmma
shared-memory atom) that makes every writer and reader of a tile conflict-free.

:func:`synthesize_swizzle` takes the tile's *unswizzled* shared-memory layout, the accesses
that write and read it (thread-value layouts or TiledCopies, each with its instruction) and
the element width, and searches a finite, ordered family of candidate layouts:

* the free family: the unswizzled layout itself, then every ``Sw<B,M,S> o layout`` with
  ``1 <= B``, ``B <= S`` and ``M + B + S <= n`` (``n`` the address bits of the tile's
  largest offset), ordered by the fewest bits ``B``, then the smallest swizzle span
  ``2**(M+B+S)``, then the smallest shift ``S``.  A swizzle whose YYY bits reach above bit
  ``n`` acts on the tile as one with fewer bits, which comes earlier, so the family is
  complete for positive shifts;
* ``tma=True``: the swizzles the TMA unit can write, ``Sw<B,4,3>`` on byte addresses
  (32B, 64B, 128B for ``B`` = 1, 2, 3; in elements ``Sw<B, log2(128/bits), 3>``), each
  only where the tile's contiguous inner box fits in the swizzle span;
* ``wgmma="K"`` or ``"MN"``: the canonical wgmma layouts, CuTe's
  ``GMMA::Layout_{K|MN}_{INTER|SW32|SW64|SW128}_Atom`` tiled to the tile's ``(MN, K)``
  shape (:func:`~layoutproof.gpu.isa.gmma.tile_to_shape`), fewest swizzle bits first.

Each candidate is checked to use the same storage (a bijection of the tile's coordinates
onto the offsets of the unswizzled layout, exhaustively) and to keep every access's vectors
contiguous and aligned; then every access's wavefronts are counted (numpy over the whole
tile, rejected at the first conflicting access).  The first candidate that passes is
certified by :func:`~layoutproof.gpu.analysis.smem_banks.banks` on the candidate layout
itself, one :class:`~layoutproof.gpu.analysis.smem_banks.BankReport` per access: the report
is ``proved``, and every earlier candidate was rejected.  When none passes, the family has
been exhausted: the report is ``refuted`` and names the best candidate (fewest wavefronts
in all) with its remaining conflict as the witness.

>>> from layoutproof import Layout
>>> tile, column = Layout((32, 32), (32, 1)), Layout(32, 1)
>>> column = synthesize_swizzle(tile, [(column, "ld.shared.b32")], element_bits=32)
>>> column.status, str(column.swizzle), column.candidates
('proved', 'Sw<5,0,5>', 96)
>>> print(column.dsl())
smem = cute.make_composed_layout(cute.make_swizzle(5, 0, 5), 0, cute.make_layout((32, 32), stride=(32, 1)))
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from layoutproof import ComposedLayout, Layout, Swizzle
from layoutproof.errors import InadmissibleError, LayoutError, MalformedLayoutError
from layoutproof.interop import to_cpp, to_dsl
from layoutproof.outcome import PROVED, REFUTED, UNKNOWN, Outcome

from ..isa.gmma import GmmaSmemLayout, smem_atom, tile_to_shape
from ..isa.tiled import TiledCopy
from .access import WARP, AccessError, Instruction, is_symbolic, tv_table
from .access import instruction as read_instruction
from .smem_banks import BankConflict, BankReport, banks, phase_wavefronts

__all__ = [
    "PaddingReport",
    "SwizzleCandidate",
    "SwizzleReport",
    "swizzle_family",
    "synthesize_swizzle",
    "TMA_SWIZZLES",
]

#: the TMA unit's swizzle modes: ``CUtensorMapSwizzle`` name -> bits ``B`` of ``Sw<B,4,3>`` on bytes
TMA_SWIZZLES: Dict[str, int] = {
    "CU_TENSOR_MAP_SWIZZLE_NONE": 0,
    "CU_TENSOR_MAP_SWIZZLE_32B": 1,
    "CU_TENSOR_MAP_SWIZZLE_64B": 2,
    "CU_TENSOR_MAP_SWIZZLE_128B": 3,
}
_TMA_NAME = {b: k for k, b in TMA_SWIZZLES.items()}
_WGMMA_KINDS = ("INTER", "SW32", "SW64", "SW128")
_CPP_TYPE = {8: "uint8_t", 16: "half_t", 32: "float"}
_DSL_TYPE = {8: "cutlass.Uint8", 16: "cutlass.Float16", 32: "cutlass.Float32"}


@dataclass(frozen=True)
class SwizzleCandidate:
    """One member of the family: ``swizzle`` (``None``: the unswizzled layout) composed
    with the tile layout, or the canonical wgmma atom ``atom`` (``"K_SW128"``, ...) tiled
    to the tile's shape; ``layout`` is the candidate shared-memory layout."""

    swizzle: Optional[Swizzle]
    layout: Any
    atom: Optional[str] = None

    @property
    def name(self) -> str:
        if self.atom is not None:
            return f"GMMA {self.atom} atom"
        return "no swizzle" if self.swizzle is None else str(self.swizzle)


@dataclass(frozen=True, eq=False)
class SwizzleReport(Outcome):
    """The synthesis: an :class:`~layoutproof.outcome.Outcome` (proved: ``layout`` is the
    least candidate of the family that makes every access conflict-free on the same
    storage, ``reports`` the per-access certificates and ``storage`` the bijection proof;
    refuted: no candidate does, ``layout`` is the best one, ``witness`` its first remaining
    :class:`~layoutproof.gpu.analysis.smem_banks.BankConflict`; unknown: ``reason``).

    ``before`` holds the accesses' reports on the unswizzled layout, ``candidates`` the
    number of candidates examined (the whole family when refuted), ``rejected`` how many
    were rejected for each reason, ``family`` the family in words.  :meth:`cpp` and
    :meth:`dsl` write the layout as CuTe C++ and CuTe DSL code."""

    swizzle: Optional[Swizzle] = None
    layout: Any = None
    tile: Any = None
    atom: Optional[str] = None
    canonical: Optional[str] = None
    tma_mode: Optional[str] = None
    element_bits: int = 16
    reports: Tuple[BankReport, ...] = ()
    before: Tuple[BankReport, ...] = ()
    storage: Optional[Outcome] = None
    family: str = ""
    candidates: int = 0
    rejected: Dict[str, int] = field(default_factory=dict)
    padded: Optional["PaddingReport"] = None

    @property
    def total(self) -> int:
        """Wavefronts of every access on ``layout``."""
        return sum(r.total for r in self.reports)

    @property
    def minimum(self) -> int:
        """One wavefront per phase of every access: the fewest possible."""
        return sum(r.minimum for r in self.reports)

    def _name(self) -> str:
        return SwizzleCandidate(self.swizzle, self.layout, self.atom).name

    def cpp(self, name: str = "smem", element: Optional[str] = None) -> str:
        """CuTe C++ declaring ``layout``: ``make_composed_layout(Swizzle<B,M,S>{}, ...)``
        (the exporter :func:`~layoutproof.interop.to_cpp`), or for a wgmma atom
        ``tile_to_shape(GMMA::Layout_K_SW128_Atom<T>{}, ...)`` (``element`` names ``T``;
        by default ``uint8_t``, ``half_t`` or ``float`` for 8, 16, 32 bits)."""
        if self.layout is None:
            raise MalformedLayoutError("the report has no layout to write")
        if self.atom is not None:
            major, kind = self.atom.split("_", 1)
            t = element or _CPP_TYPE[self.element_bits]
            rows, cols = _shape2(self.tile)
            return (
                f"auto {name} = tile_to_shape(GMMA::Layout_{major}_{kind}_Atom<{t}>{{}}, "
                f"make_shape(Int<{rows}>{{}}, Int<{cols}>{{}}));"
            )
        return to_cpp(self.layout, name=name)

    def dsl(self, name: str = "smem", element: Optional[str] = None) -> str:
        """CuTe DSL (``import cutlass, cutlass.cute as cute``) for ``layout``:
        ``cute.make_composed_layout(cute.make_swizzle(B, M, S), 0, ...)`` (the exporter
        :func:`~layoutproof.interop.to_dsl`), or for a wgmma atom
        ``cute.tile_to_shape(cute.nvgpu.warpgroup.make_smem_layout_atom(...), shape, (0, 1))``
        (``element`` names the DSL type; by default ``cutlass.Uint8``, ``cutlass.Float16``
        or ``cutlass.Float32``)."""
        if self.layout is None:
            raise MalformedLayoutError("the report has no layout to write")
        if self.atom is not None:
            t = element or _DSL_TYPE[self.element_bits]
            rows, cols = _shape2(self.tile)
            kind = "cute.nvgpu.warpgroup.SmemLayoutAtomKind." + self.atom
            return (
                f"{name} = cute.tile_to_shape(cute.nvgpu.warpgroup.make_smem_layout_atom({kind}, {t}), "
                f"({rows}, {cols}), (0, 1))"
            )
        return f"{name} = {to_dsl(self.layout)}"

    def text(self) -> str:
        """The report in lines: the verdict, the family searched, what each access takes
        before and after, the storage proof, the code."""
        out = [self.line(), f"family: {self.family}; {self.candidates} candidate(s) examined"]
        if self.rejected:
            out.append("rejected: " + ", ".join(f"{n} {why}" for why, n in self.rejected.items()))
        if self.status == REFUTED and self.layout is not None:
            out.append(
                f"best in the family: {self._name()}, {self.total} wavefronts where {self.minimum} suffice"
            )
        for b, r in zip(self.before, self.reports):
            out.append(
                f"  {r.instruction}: {b.total} -> {r.total} wavefronts (minimum {r.minimum}), "
                f"worst phase {b.max_ways}-way -> {r.max_ways}-way"
            )
        if self.storage is not None:
            out.append(self.storage.line())
        if self.canonical:
            out.append(f"canonical wgmma layout: {self.canonical}")
        if self.tma_mode:
            out.append(f"TMA: {self.tma_mode}")
        if self.layout is not None:
            out.append(self.cpp())
            out.append(self.dsl())
        if self.padded is not None:
            out.append(self.padded.line())
            if self.padded.layout is not None:
                out.append(self.padded.cpp())
        return "\n".join(out)

    def as_dict(self) -> Dict[str, Any]:
        d = self.outcome_dict()
        d["witness"] = self.witness.as_dict() if isinstance(self.witness, BankConflict) else self.witness
        d.update(
            swizzle=str(self.swizzle) if self.swizzle is not None else None,
            layout=str(self.layout) if self.layout is not None else None,
            atom=self.atom,
            canonical=self.canonical,
            tma_mode=self.tma_mode,
            element_bits=self.element_bits,
            family=self.family,
            candidates=self.candidates,
            rejected=dict(self.rejected),
            total=self.total,
            minimum=self.minimum,
            reports=[r.as_dict() for r in self.reports],
            before=[r.as_dict() for r in self.before],
            storage=self.storage.outcome_dict() if self.storage is not None else None,
            cpp=self.cpp() if self.layout is not None else None,
            dsl=self.dsl() if self.layout is not None else None,
            padded=self.padded.as_dict() if self.padded is not None else None,
        )
        return d


@dataclass(frozen=True, eq=False)
class PaddingReport(Outcome):
    """The padded alternative (``synthesize_swizzle(..., padding=True)``): the least pad of
    the tile's rows, in whole vectors of the widest access, that makes every access
    conflict-free (proved, with ``layout``, ``pad`` elements per row, ``extra_bytes`` of
    storage and the per-access ``reports``), or refuted over every pad up to 128 bytes."""

    layout: Optional[Layout] = None
    pad: int = 0
    extra_bytes: int = 0
    reports: Tuple[BankReport, ...] = ()

    def cpp(self, name: str = "smem") -> str:
        """CuTe C++ declaring the padded layout."""
        if self.layout is None:
            raise MalformedLayoutError("no padded layout to write")
        return to_cpp(self.layout, name=name)

    def dsl(self, name: str = "smem") -> str:
        """CuTe DSL for the padded layout."""
        if self.layout is None:
            raise MalformedLayoutError("no padded layout to write")
        return f"{name} = {to_dsl(self.layout)}"

    def as_dict(self) -> Dict[str, Any]:
        d = self.outcome_dict()
        d["witness"] = self.witness.as_dict() if isinstance(self.witness, BankConflict) else self.witness
        d.update(
            layout=str(self.layout) if self.layout is not None else None,
            pad=self.pad,
            extra_bytes=self.extra_bytes,
            reports=[r.as_dict() for r in self.reports],
        )
        return d


# ----------------------------------------------------------------------------- the family
def _log2(x: int) -> int:
    return int(x).bit_length() - 1


def _shape2(tile: Layout) -> Tuple[int, int]:
    return int(tile[0].size), int(tile[1].size)


def _address_bits(cosize: int) -> int:
    """Bits of the largest offset ``cosize - 1`` (0 for a one-element tile)."""
    return max(0, int(cosize) - 1).bit_length()


def swizzle_family(address_bits: int) -> List[Swizzle]:
    """Every ``Sw<B,M,S>`` with ``1 <= B <= S`` and ``M + B + S <= address_bits``, in the
    synthesis order: fewest bits ``B``, then smallest span ``M + B + S``, then smallest
    shift ``S`` (the unswizzled layout, which precedes them, is not in the list).

    >>> [str(s) for s in swizzle_family(4)]
    ['Sw<1,0,1>', 'Sw<1,1,1>', 'Sw<1,0,2>', 'Sw<1,2,1>', 'Sw<1,1,2>', 'Sw<1,0,3>', 'Sw<2,0,2>']
    """
    n = int(address_bits)
    keys = [
        (b, m + b + s, s, m)
        for b in range(1, n // 2 + 1)
        for s in range(b, n - b + 1)
        for m in range(0, n - b - s + 1)
    ]
    return [Swizzle(b, m, s) for b, _span, s, m in sorted(keys)]


def _inner_box(tile: Layout) -> Optional[int]:
    """Elements of the tile's contiguous inner dimension: the extent of its stride-1 mode
    (flattened), or None when it has none."""
    shapes, strides = tile.flat_modes()
    for s, d in zip(shapes, strides):
        if d == 1 and s != 1:
            return int(s)
    return None


# ----------------------------------------------------------------------------- the accesses
@dataclass
class _Access:
    """One access, prepared once: its instruction, the tile coordinate of every
    ``(thread, value, step)``, and the shape of its vectors."""

    access: Any
    ins: Instruction
    idx: np.ndarray  # (T, V, R) tile coordinates
    n: int  # values per lane per instruction
    covered: np.ndarray  # bool (tile size,)
    before: BankReport


def _read_accesses(accesses: Any) -> List[Tuple[Any, Any]]:
    if isinstance(accesses, tuple) and len(accesses) == 2 and not isinstance(accesses[0], tuple):
        accesses = [accesses]
    if isinstance(accesses, (Layout, TiledCopy)):
        accesses = [(accesses, None)]
    try:
        items = list(accesses)
    except TypeError:
        raise MalformedLayoutError(
            f"accesses is a list of (access, instruction) pairs, got {type(accesses).__name__}"
        ) from None
    out: List[Tuple[Any, Any]] = []
    for k, it in enumerate(items):
        if isinstance(it, (Layout, TiledCopy)):
            out.append((it, None))
        elif isinstance(it, (tuple, list)) and len(it) == 2:
            out.append((it[0], it[1]))
        else:
            raise MalformedLayoutError(
                f"access {k} is not an (access, instruction) pair: {type(it).__name__} {it!r}"
            )
    if not out:
        raise MalformedLayoutError("no access given: name at least one (access, instruction) pair")
    return out


def _prepare(tile: Layout, pairs: List[Tuple[Any, Any]], bits: int, base: int) -> List[_Access]:
    prepared = []
    n_tile = int(tile.size)
    for access, ins_spec in pairs:
        # the analysis on the unswizzled tile validates the access (instruction kind, TV into the
        # tile, one-to-one writes, whole warps, vectors contiguous and aligned) and is the "before"
        before = banks(tile, access, ins_spec, element_bits=bits, base=base)
        ins = read_instruction(ins_spec if ins_spec is not None else access.atom)
        idx = tv_table(access, tile)
        seen = np.bincount(idx.reshape(-1), minlength=n_tile) > 0
        prepared.append(_Access(access, ins, idx, 8 * ins.bytes // bits, seen, before))
    writers = [a for a in prepared if a.ins.writes]
    if writers:
        written = np.logical_or.reduce([a.covered for a in writers])
        for k, a in enumerate(prepared):
            unread = a.covered & ~written
            if not a.ins.writes and unread.any():
                e = int(np.argmax(unread))
                raise AccessError(
                    f"access {k} ({a.ins.name}) reads tile element {e}, which no writer writes: the "
                    "accesses do not cover the tile consistently",
                    condition="reads covered by the writes",
                    witness=(k, e),
                )
    return prepared


# ----------------------------------------------------------------------------- one candidate, fast
def _wavefronts(table: np.ndarray, a: _Access, bits: int, base: int) -> Optional[np.ndarray]:
    """Wavefronts ``[warp, instruction, phase]`` of access ``a`` on the layout whose offset
    of tile coordinate ``i`` is ``table[i]``; None where a lane's vector is not contiguous
    and aligned there.  The same arithmetic as ``lane_addresses`` and ``banks``, on the
    coordinates prepared once."""
    offs = table[a.idx]
    T, V, R = offs.shape
    n = a.n
    runs = offs.reshape(T, V // n, n, R)
    if n > 1 and (np.diff(runs, axis=2) != 1).any():
        return None
    first_bits = runs[:, :, 0, :] * bits
    addr = base + first_bits // 8
    if ((first_bits % 8 != 0) | (addr % a.ins.bytes != 0)).any():
        return None
    lanes = addr.reshape(WARP, T // WARP, (V // n) * R, order="F").transpose(1, 2, 0)
    return phase_wavefronts(np.ascontiguousarray(lanes), a.ins)


def _storage_counts(table: np.ndarray, cosize: int) -> Optional[np.ndarray]:
    if table.size and (table.min() < 0 or table.max() >= cosize):
        return None
    return np.bincount(table, minlength=cosize)


# ----------------------------------------------------------------------------- the search
def _candidates(
    tile: Layout, bits: int, tma: bool, wgmma: Optional[str], family: Optional[Iterable[Swizzle]]
) -> Tuple[List[Tuple[SwizzleCandidate, Optional[str]]], str]:
    """``([(candidate, why not admissible or None)], family in words)``."""
    out: List[Tuple[SwizzleCandidate, Optional[str]]] = []
    if wgmma is not None:
        rows, cols = _shape2(tile)
        for kind in _WGMMA_KINDS:
            name = f"{wgmma}_{kind}"
            atom = smem_atom(wgmma, kind, bits)
            try:
                tiled: Optional[GmmaSmemLayout] = tile_to_shape(atom, (rows, cols))
            except LayoutError:
                tiled = None
            sw = atom.layout.layout_a if isinstance(atom.layout, ComposedLayout) else None
            if tiled is None:
                out.append((SwizzleCandidate(sw, None, name), "the atom does not tile the shape"))
            else:
                out.append((SwizzleCandidate(sw, tiled.layout, name), None))
        words = (
            f"the canonical {wgmma}-major wgmma layouts GMMA::Layout_{wgmma}_{{INTER,SW32,SW64,SW128}}_Atom "
            f"of {bits}-bit elements tiled to {(rows, cols)}"
        )
        return out, words
    box = _inner_box(tile)
    if tma:
        m = _log2(128 // bits)
        for b in (0, 1, 2, 3):
            sw = Swizzle(b, m, 3) if b else None
            span = 16 << b if b else 256 * bits // 8
            fits = box is not None and (box * bits) % 128 == 0 and box * bits <= 8 * span and box <= 256
            why = None if fits else "TMA cannot write it"
            out.append((SwizzleCandidate(sw, tile if sw is None else ComposedLayout(sw, 0, tile)), why))
        words = (
            f"the TMA swizzles none, 32B, 64B, 128B (Sw<B,4,3> on bytes: Sw<B,{m},3> on {bits}-bit elements)"
        )
        return out, words
    if family is not None:
        sws = list(family)
        for s in sws:
            if not isinstance(s, Swizzle):
                raise MalformedLayoutError(f"family holds Swizzles, got {type(s).__name__} {s!r}")
        words = f"the {len(sws)} given swizzle(s)"
    else:
        n = _address_bits(int(tile.cosize))
        sws = [Swizzle(0, 0, 0)] + swizzle_family(n)
        words = f"no swizzle and Sw<B,M,S> with 1 <= B <= S, M + B + S <= {n}"
    for s in sws:
        ident = s.is_identity()
        out.append(
            (SwizzleCandidate(None if ident else s, tile if ident else ComposedLayout(s, 0, tile)), None)
        )
    return out, words


def _canonical(layout: Any, tile: Layout, bits: int) -> Optional[str]:
    """The canonical wgmma layout ``layout`` equals (as a function of the tile coordinate),
    if any: ``"GMMA K-major SW128 atom tiled to (64, 64)"``."""
    if bits not in (8, 16, 32) or tile.rank != 2:
        return None
    rows, cols = _shape2(tile)
    vals = np.asarray(layout.eval_all())
    for major in ("K", "MN"):
        for kind in _WGMMA_KINDS:
            try:
                tiled = tile_to_shape(smem_atom(major, kind, bits), (rows, cols))
            except LayoutError:
                continue
            if np.array_equal(np.asarray(tiled.layout.eval_all()), vals):
                return f"GMMA {major}-major {kind} atom tiled to {(rows, cols)}"
    return None


def synthesize_swizzle(
    layout: Layout,
    accesses: Any,
    *,
    element_bits: int,
    tma: bool = False,
    wgmma: Optional[str] = None,
    family: Optional[Iterable[Swizzle]] = None,
    base: int = 0,
    padding: bool = False,
) -> SwizzleReport:
    """The least swizzle of ``layout`` that makes every access conflict-free (see the
    module docstring for the families and the order).

    Args:
        layout: the tile's unswizzled shared-memory layout (a concrete Layout; its offsets
            are the storage every candidate must use, one-to-one).
        accesses: ``[(access, instruction), ...]``: each access a thread-value Layout or a
            TiledCopy (instruction ``None``: its atom), writers and readers alike.
        element_bits: the element width.
        tma: only the swizzles the TMA unit can write (``Sw<B,4,3>`` on bytes, the inner box
            within the span); the tile must then be 128-byte aligned (``base`` 0).
        wgmma: ``"K"`` or ``"MN"``: only the canonical wgmma layouts of that majorness,
            tiled to ``layout``'s ``(MN, K)`` shape (8, 16 or 32-bit elements).
        family: the swizzles to try, in order, instead of the free family.
        base: the tile's byte address modulo 128.
        padding: also search the padded alternative (:class:`PaddingReport`, ``.padded``):
            a 2-D tile with one contiguous mode whose rows are padded, which uses more storage.

    Returns a :class:`SwizzleReport`.  Bad input raises
    :class:`~layoutproof.gpu.analysis.access.AccessError` (an access that does not fit, a
    read of an element no writer writes, an element width the constraint cannot take) or
    another LayoutError naming the problem.
    """
    t0 = time.perf_counter()
    if isinstance(layout, ComposedLayout):
        raise MalformedLayoutError(
            f"give the tile's unswizzled layout (the synthesis chooses the swizzle), got {layout}"
        )
    if not isinstance(layout, Layout):
        raise MalformedLayoutError(f"the tile layout is a Layout, got {type(layout).__name__}")
    bits = int(element_bits)
    if wgmma is not None:
        if wgmma not in ("K", "MN"):
            raise MalformedLayoutError(f"wgmma must be 'K' or 'MN', got {wgmma!r}")
        if bits not in (8, 16, 32):
            raise AccessError(
                f"the canonical wgmma layouts hold 8, 16 or 32-bit elements, got {bits}",
                condition="wgmma element width",
                witness=bits,
            )
        if family is not None:
            raise MalformedLayoutError("family and wgmma exclude each other: wgmma fixes the family")
    if tma:
        if bits not in (8, 16, 32, 64):
            raise AccessError(
                f"TMA moves 8, 16, 32 or 64-bit elements here, got {bits}",
                condition="TMA element width",
                witness=bits,
            )
        if base % 128:
            raise AccessError(
                f"TMA writes shared memory at 128-byte aligned addresses, the tile is at {base} mod 128",
                condition="TMA alignment",
                witness=base,
            )
    pairs = _read_accesses(accesses)
    if is_symbolic(layout) or any(is_symbolic(a) for a, _ in pairs):
        return SwizzleReport(
            UNKNOWN,
            f"least swizzle of {layout}",
            "exhaustive",
            reason="symbolic extents: the synthesis searches a concrete tile (give the extents)",
            tile=layout,
            element_bits=bits,
        )
    if wgmma is not None and layout.rank != 2:
        raise AccessError(
            f"wgmma layouts are (MN, K) tiles; {layout} has rank {layout.rank}",
            condition="wgmma tile rank",
            witness=layout.rank,
        )
    table0 = np.asarray(layout.eval_all(), dtype=np.int64)
    cosize = int(table0.max()) + 1 if table0.size else 0
    storage0 = np.bincount(table0, minlength=cosize) if table0.size else np.zeros(0, np.int64)
    if (storage0 > 1).any():
        off = int(np.argmax(storage0 > 1))
        i, j = (int(x) for x in np.flatnonzero(table0 == off)[:2])
        raise InadmissibleError(
            f"{layout} maps tile coordinates {i} and {j} to offset {off}: a shared-memory tile gives "
            "every element its own storage",
            condition="tile layout one-to-one",
            witness=(i, j),
        )
    if wgmma is not None:  # the canonical layouts are compact: storage [0, size)
        cosize = int(layout.size)
        storage0 = np.ones(cosize, dtype=np.int64)
    prepared = _prepare(layout, pairs, bits, base)
    cands, words = _candidates(layout, bits, tma, wgmma, family)

    rejected: Dict[str, int] = {}

    def reject(why: str) -> None:
        rejected[why] = rejected.get(why, 0) + 1

    def table_of(c: SwizzleCandidate) -> np.ndarray:
        if c.atom is not None:
            return np.asarray(c.layout.eval_all(), dtype=np.int64)
        return table0 if c.swizzle is None else np.asarray(c.swizzle(table0), dtype=np.int64)

    valid: List[SwizzleCandidate] = []
    for k, (c, why) in enumerate(cands):
        if why is not None:
            reject(why)
            continue
        table = table_of(c)
        counts = _storage_counts(table, cosize)
        if counts is None or not np.array_equal(counts, storage0):
            reject("not the same storage")
            continue
        ok = True
        broke = False
        for a in prepared:
            w = _wavefronts(table, a, bits, base)
            if w is None:
                broke = True
                ok = False
                break
            if (w > 1).any():
                ok = False
                break
        if broke:
            reject("vectors broken")
            continue
        valid.append(c)
        if not ok:
            reject("bank conflict")
            continue
        try:
            certs = tuple(banks(c.layout, a.access, a.ins, element_bits=bits, base=base) for a in prepared)
        except AccessError:  # a vector torn after all: the certificate decides
            certs = ()
        if certs and all(r.status == PROVED for r in certs):
            found = _found(
                c, k + 1, certs, layout, prepared, words, rejected, bits, tma, t0, cosize, storage0
            )
            return replace(found, padded=_padding(layout, prepared, bits, base)) if padding else found
        reject("refuted by the certificate")  # banks() decides; the fast count agrees in every test
    none = _none(valid, len(cands), layout, prepared, words, rejected, bits, tma, base, t0, table_of)
    return replace(none, padded=_padding(layout, prepared, bits, base)) if padding else none


def _storage_proof(c: SwizzleCandidate, tile: Layout, cosize: int, storage0: np.ndarray) -> Outcome:
    """The candidate layout, evaluated everywhere, is a bijection of the tile's coordinates
    onto the offsets of the unswizzled layout (or onto ``[0, size)`` for a wgmma tile)."""
    t0 = time.perf_counter()
    vals = np.asarray(c.layout.eval_all(), dtype=np.int64)
    counts = _storage_counts(vals, cosize)
    onto = f"[0, {cosize})" if storage0.all() else f"the {int(storage0.sum())} offsets of {tile}"
    stmt = f"{c.layout} maps the tile's {vals.size} coordinates one-to-one onto {onto}"
    if counts is None or not np.array_equal(counts, storage0):  # never: candidates are filtered on it
        return Outcome(REFUTED, stmt, "exhaustive", cases=int(vals.size), witness="offset multiset differs")
    return Outcome(PROVED, stmt, "exhaustive", cases=int(vals.size), seconds=time.perf_counter() - t0)


def _tma_mode(c: SwizzleCandidate, tma: bool, wgmma: Optional[str]) -> Optional[str]:
    if not tma:
        return None
    b = 0 if c.swizzle is None else c.swizzle.bits
    return _TMA_NAME[b]


def _accesses_text(prepared: Sequence[_Access]) -> str:
    return " and ".join(f"{a.ins.name} of {a.access}" for a in prepared)


def _found(
    c: SwizzleCandidate,
    k: int,
    certs: Tuple[BankReport, ...],
    tile: Layout,
    prepared: List[_Access],
    words: str,
    rejected: Dict[str, int],
    bits: int,
    tma: bool,
    t0: float,
    cosize: int,
    storage0: np.ndarray,
) -> SwizzleReport:
    wg = c.atom.split("_")[0] if c.atom else None
    what = f"{c.layout} (no swizzle)" if c.swizzle is None and c.atom is None else str(c.layout)
    if c.atom is not None:
        what = f"the GMMA {c.atom} atom tiled, {c.layout},"
    stmt = (
        f"{what} is the least of the family making {_accesses_text(prepared)} "
        "conflict-free on the same storage"
    )
    return SwizzleReport(
        PROVED,
        stmt,
        "exhaustive",
        scope=f"{words}; {bits}-bit elements; every warp, instruction and phase of each access",
        cases=k,
        seconds=time.perf_counter() - t0,
        swizzle=c.swizzle,
        layout=c.layout,
        tile=tile,
        atom=c.atom,
        canonical=_canonical(c.layout, tile, bits),
        tma_mode=_tma_mode(c, tma, wg),
        element_bits=bits,
        reports=certs,
        before=tuple(a.before for a in prepared),
        storage=_storage_proof(c, tile, cosize, storage0),
        family=words,
        candidates=k,
        rejected=rejected,
    )


def _none(
    valid: List[SwizzleCandidate],
    n: int,
    tile: Layout,
    prepared: List[_Access],
    words: str,
    rejected: Dict[str, int],
    bits: int,
    tma: bool,
    base: int,
    t0: float,
    table_of: Any,
) -> SwizzleReport:
    stmt = f"some candidate of the family makes {_accesses_text(prepared)} conflict-free on the same storage"
    scope = f"{words}; {bits}-bit elements; every warp, instruction and phase of each access"
    before = tuple(a.before for a in prepared)
    if not valid:
        return SwizzleReport(
            REFUTED,
            stmt,
            "exhaustive",
            scope=scope,
            cases=n,
            seconds=time.perf_counter() - t0,
            witness=f"none of the {n} candidates keeps the storage and every access's vectors",
            tile=tile,
            element_bits=bits,
            before=before,
            family=words,
            candidates=n,
            rejected=rejected,
        )
    best, best_total = valid[0], None
    for c in valid:  # the fewest wavefronts over every access; the earliest on a tie
        table = table_of(c)
        total = 0
        for a in prepared:
            w = _wavefronts(table, a, bits, base)
            total += int(w.sum()) if w is not None else 0
        if best_total is None or total < best_total:
            best, best_total = c, total
    certs = tuple(banks(best.layout, a.access, a.ins, element_bits=bits, base=base) for a in prepared)
    witness = next((r.witness for r in certs if r.status == REFUTED), None)
    return SwizzleReport(
        REFUTED,
        stmt,
        "exhaustive",
        scope=scope,
        cases=n,
        seconds=time.perf_counter() - t0,
        witness=witness,
        swizzle=best.swizzle,
        layout=best.layout,
        tile=tile,
        atom=best.atom,
        canonical=_canonical(best.layout, tile, bits),
        tma_mode=_tma_mode(best, tma, None),
        element_bits=bits,
        reports=certs,
        before=before,
        family=words,
        candidates=n,
        rejected=rejected,
    )


def _padding(tile: Layout, prepared: List[_Access], bits: int, base: int) -> PaddingReport:
    """The least row pad (a multiple of the widest access's vector, so every vector stays
    aligned) up to 128 bytes that makes every access conflict-free, each pad checked with
    banks() on the padded layout; the tile must be 2-D with a contiguous mode and compact
    rows (``(R, C):(C, 1)`` or ``(C, R):(1, C)``)."""
    t0 = time.perf_counter()
    what = f"a row pad of {tile}"
    shape: Tuple[Any, ...] = tile.shape if isinstance(tile.shape, tuple) else (tile.shape,)
    stride: Tuple[Any, ...] = tile.stride if isinstance(tile.stride, tuple) else (tile.stride,)
    if (
        len(shape) != 2
        or not all(isinstance(x, int) for x in (*shape, *stride))
        or 1 not in stride
        or sorted(stride) != [1, shape[stride.index(1)]]
    ):
        return PaddingReport(
            UNKNOWN,
            what,
            "exhaustive",
            reason=f"padding applies to a 2-D tile (R, C):(C, 1) or (C, R):(1, C), not {tile}",
        )
    inner = stride.index(1)
    outer = 1 - inner
    row = shape[inner]
    step = max(a.n for a in prepared)
    pads = list(range(step, 8 * 128 // bits + 1, step))
    best: Optional[Tuple[int, int, Layout, Tuple[BankReport, ...]]] = None
    for p in pads:
        strides = [1, 1]
        strides[outer] = row + p
        L = Layout(shape, tuple(strides))
        try:
            reps = tuple(banks(L, a.access, a.ins, element_bits=bits, base=base) for a in prepared)
        except AccessError:
            continue
        extra = (int(L.cosize) - int(tile.cosize)) * bits // 8
        if all(r.status == PROVED for r in reps):
            return PaddingReport(
                PROVED,
                f"{L} (rows padded by {p} element{'s' if p > 1 else ''}, {extra} bytes more) makes "
                "every access conflict-free; no smaller pad does",
                "exhaustive",
                scope=f"pads of {step}, {2 * step}, ... elements up to 128 bytes",
                cases=pads.index(p) + 1,
                seconds=time.perf_counter() - t0,
                layout=L,
                pad=p,
                extra_bytes=extra,
                reports=reps,
            )
        total = sum(r.total for r in reps)
        if best is None or total < best[0]:
            best = (total, p, L, reps)
    witness = next((r.witness for r in best[3] if r.status == REFUTED), None) if best else None
    return PaddingReport(
        REFUTED,
        f"some row pad of {tile} makes every access conflict-free",
        "exhaustive",
        scope=f"pads of {step}, {2 * step}, ... elements up to 128 bytes",
        cases=len(pads),
        seconds=time.perf_counter() - t0,
        witness=witness,
        layout=best[2] if best else None,
        pad=best[1] if best else 0,
        extra_bytes=(int(best[2].cosize) - int(tile.cosize)) * bits // 8 if best else 0,
        reports=best[3] if best else (),
    )
