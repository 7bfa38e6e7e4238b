"""Global-memory coalescing of a user's access: sectors and lines per warp request.

A warp's load or store of ``W`` bytes per lane (``W`` in 1, 2, 4, 8, 16, each lane's bytes
aligned to ``W``, so inside one sector) is served in 32-byte *sectors* of 128-byte *lines*.
A request is optimal when it touches no more sectors than its distinct bytes need,
``ceil(bytes / 32)``.  :func:`coalescing` counts, for every request of every warp, the
sectors and lines touched against that minimum, finds the widest legal vector per thread
(:func:`layoutproof.analysis.max_common_vector` of the thread's values against memory, then
checked for every thread: contiguous, aligned, at most 16 bytes) and returns a
:class:`CoalescingReport`: proved (every request minimal), or refuted with the request that
wastes the most.

>>> from layoutproof import Layout
>>> r = coalescing(Layout(1024, 1), Layout((32, 4), (4, 1)), element_bits=32)
>>> r.status, r.vector_bytes, r.sectors.tolist(), r.lines.tolist()
('proved', 16, [[16]], [[4]])
>>> rows = coalescing(Layout((32, 32), (32, 1)), Layout((32, 32), (1, 32)), element_bits=32)
>>> rows.status, rows.vector_bytes, int(rows.sectors[0, 0]), int(rows.min_sectors[0, 0])
('refuted', 16, 32, 16)
>>> print(rows.witness)
warp 0, instruction 0: 32 sectors (32 lines) where 16 suffice; lanes 0.. at bytes 0, 128, 256, 384, ...
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Dict, Optional

import numpy as np

from layoutproof import Layout, composition
from layoutproof.analysis import max_common_vector
from layoutproof.errors import LayoutError
from layoutproof.outcome import PROVED, REFUTED, UNKNOWN, Outcome

from .access import WARP, AccessError, Instruction, element_offsets, is_symbolic, lane_addresses

__all__ = ["CoalescingReport", "WastedRequest", "coalescing", "widest_vector"]

SECTOR = 32
LINE = 128


@dataclass(frozen=True)
class WastedRequest:
    """The request that touches the most sectors beyond its minimum."""

    warp: int
    instruction: int
    sectors: int
    minimum: int
    lines: int
    addresses: tuple

    def __str__(self) -> str:
        lanes = ", ".join(str(a) for a in self.addresses[:4])
        return (
            f"warp {self.warp}, instruction {self.instruction}: {self.sectors} sectors ({self.lines} lines) "
            f"where {self.minimum} suffice; lanes 0.. at bytes {lanes}, ..."
        )

    def as_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__, addresses=list(self.addresses))


@dataclass(frozen=True, eq=False)
class CoalescingReport(Outcome):
    """An :class:`~layoutproof.outcome.Outcome` with ``sectors`` / ``lines``
    ``[warp, instruction]`` touched, ``min_sectors`` their minimum, ``vector_bytes`` the
    width analysed and ``widest_bytes`` the widest legal one."""

    vector_bytes: int = 0
    widest_bytes: int = 0
    sectors: Optional[np.ndarray] = None
    lines: Optional[np.ndarray] = None
    min_sectors: Optional[np.ndarray] = None

    @property
    def efficiency(self) -> float:
        """The fraction of the sectors' bytes that the requests need."""
        if self.sectors is None or self.min_sectors is None or not self.sectors.size:
            return 0.0
        return float(self.min_sectors.sum()) / float(self.sectors.sum())

    def as_dict(self) -> Dict[str, Any]:
        d = self.outcome_dict()
        d["witness"] = self.witness.as_dict() if isinstance(self.witness, WastedRequest) else self.witness
        d.update(vector_bytes=self.vector_bytes, widest_bytes=self.widest_bytes, efficiency=self.efficiency)
        for k in ("sectors", "lines", "min_sectors"):
            v = getattr(self, k)
            d[k] = v.tolist() if v is not None else None
        return d


def _legal(offs: np.ndarray, n: int, bits: int, base: int) -> bool:
    T, V, R = offs.shape
    if V % n:
        return False
    runs = offs.reshape(T, V // n, n, R)
    first = runs[:, :, 0, :].astype(np.int64) * bits  # in bits
    addr = base * 8 + first
    return bool((np.diff(runs, axis=2) == 1).all() and (addr % (n * bits) == 0).all())


def widest_vector(data: Any, access: Any, *, element_bits: int, base: int = 0) -> int:
    """The most elements one lane can move with one instruction (a power of two, at most
    16 bytes, at least one element): the run that :func:`max_common_vector` finds for
    thread 0's values against memory, halved until every thread's vectors are contiguous
    and aligned."""
    offs, _n, _c = element_offsets(data, access)
    V = offs.shape[1]
    cap = max(1, 128 // element_bits) if element_bits <= 128 else 1
    run = V
    if isinstance(data, Layout) and isinstance(access, Layout) and access.rank >= 2:
        try:
            run = max_common_vector(composition(data, access[1]), Layout(V, 1))
        except LayoutError:
            run = V
    n = 1
    while n * 2 <= min(run, cap, V) and V % (n * 2) == 0:
        n *= 2
    while n > 1 and not _legal(offs, n, element_bits, base):
        n //= 2
    return n


def _count_unique(x: np.ndarray) -> np.ndarray:
    s = np.sort(x, axis=-1)
    return 1 + (np.diff(s, axis=-1) != 0).sum(axis=-1)


def coalescing(
    data: Any,
    access: Any,
    *,
    element_bits: int,
    vector_bytes: Optional[int] = None,
    base: int = 0,
    store: bool = False,
) -> CoalescingReport:
    """Sectors and lines of every warp request of ``access`` on the global tile ``data``.

    Args:
        data: tile coordinate -> element offset in global memory (integer strides).
        access: thread-value Layout ``(thread, value, rest...)`` -> tile coordinate, or a TiledCopy.
        element_bits: the element width (8, 16, 32, 64).
        vector_bytes: the bytes per lane per instruction; default: the widest legal vector.
        base: the tile's byte address modulo 128.
        store: a store (``st.global``) rather than a load; the counting is the same.
    """
    t0 = time.perf_counter()
    kind = "st.global" if store else "ld.global"
    what = f"{kind} of {access} on {data}"
    if is_symbolic(data) or is_symbolic(access):
        return CoalescingReport(
            UNKNOWN, what, "exhaustive", reason="symbolic strides or extents: substitute values (Layout.subs)"
        )
    if element_bits % 8:
        raise AccessError(
            f"coalescing counts bytes: element_bits must be a multiple of 8, got {element_bits}",
            condition="element width",
            witness=element_bits,
        )
    widest = widest_vector(data, access, element_bits=element_bits, base=base) * element_bits // 8
    w = widest if vector_bytes is None else int(vector_bytes)
    ins = Instruction(f"{kind}.{w * 8}", kind, w)
    acc = lane_addresses(data, access, ins, element_bits=element_bits, base=base)
    a = acc.addresses
    sectors = _count_unique(a // SECTOR)
    lines = _count_unique(a // LINE)
    need = -(-_count_unique(a) * w // SECTOR)
    warps, n = a.shape[:2]
    stmt = f"{what}: every request touches the fewest sectors its bytes need"
    scope = f"{warps} warp(s) x {n} request(s) of {w} bytes per lane, tile at byte {base} mod 128"
    common = dict(
        scope=scope,
        cases=warps * n * WARP,
        vector_bytes=w,
        widest_bytes=widest,
        sectors=sectors,
        lines=lines,
        min_sectors=need,
    )
    waste = sectors - need
    if (waste > 0).any() or w < widest:
        wi, ii = (int(x) for x in np.unravel_index(int(np.argmax(waste)), waste.shape))
        wr = WastedRequest(
            wi,
            ii,
            int(sectors[wi, ii]),
            int(need[wi, ii]),
            int(lines[wi, ii]),
            tuple(int(x) for x in a[wi, ii]),
        )
        why = wr if (waste > 0).any() else f"{w}-byte vectors where {widest}-byte ones are legal"
        return CoalescingReport(
            REFUTED, stmt, "exhaustive", seconds=time.perf_counter() - t0, witness=why, **common
        )
    return CoalescingReport(PROVED, stmt, "exhaustive", seconds=time.perf_counter() - t0, **common)
