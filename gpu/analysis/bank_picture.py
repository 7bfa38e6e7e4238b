"""The bank pattern of one instruction, phase by phase, as a table and an SVG picture.

:func:`bank_pattern` takes what :func:`~layoutproof.gpu.analysis.smem_banks.banks` takes
and picks one instruction of one warp (by default the first conflicting one, else the
first): for every phase of that instruction, which lanes reach which of the 32 banks, at
which 4-byte words, and how many wavefronts the phase takes.  The counts are the bank
model's own (:func:`~layoutproof.gpu.analysis.smem_banks.phase_wavefronts`), so the
picture and the proof cannot disagree.

>>> from layoutproof import Layout
>>> p = bank_pattern(Layout((32, 32), (32, 1)), Layout(32, 1), "ld.shared.b32", element_bits=32)
>>> p.warp, p.instruction, p.wavefronts
(0, 0, [32])
>>> print(p.text().splitlines()[1])
phase 0 (lanes 0-31): 32 wavefronts, 32-way on bank 0
>>> p.cells[0][0][:3]
[(0, 0), (1, 32), (2, 64)]
>>> "<svg" in p.svg()
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from layoutproof.draw import grid_svg

from ..proof.banks import BANK_BYTES, NUM_BANKS
from .access import WARP, AccessError, is_symbolic, lane_addresses
from .access import instruction as read_instruction
from .smem_banks import check_shared, phase_wavefronts

__all__ = ["BankPattern", "bank_pattern"]

Cell = List[Tuple[int, int]]  # (lane, word) pairs that reach one bank in one phase


@dataclass(frozen=True)
class BankPattern:
    """One instruction's banks, phase by phase.

    Attributes:
        instruction_name: the instruction's PTX name.
        warp, instruction: which warp and which of its instructions (as ``banks`` counts them).
        step: the instruction's natural coordinate ``(vector, rest...)``.
        lanes: the lanes of each phase (``lanes[phase]``).
        cells: ``cells[phase][bank]``, the ``(lane, word)`` pairs that reach the bank; a word
            is a byte address divided by 4.
        wavefronts: the wavefronts each phase takes (the bank model's count).
        title: what the picture shows.
    """

    instruction_name: str
    warp: int
    instruction: int
    step: Tuple[int, ...]
    lanes: List[List[int]]
    cells: List[List[Cell]]
    wavefronts: List[int]
    title: str

    def ways(self, phase: int, bank: int) -> int:
        """Distinct words the bank delivers in the phase (broadcast: one word, one way)."""
        return len({w for _lane, w in self.cells[phase][bank]})

    def text(self) -> str:
        """Per phase: the lanes, the wavefronts and the worst bank; then a row per bank in
        use with its lanes and words."""
        out = [self.title]
        for ph, lanes in enumerate(self.lanes):
            ways = [self.ways(ph, b) for b in range(NUM_BANKS)]
            worst = int(np.argmax(ways))
            head = f"phase {ph} (lanes {lanes[0]}-{lanes[-1]}): {self.wavefronts[ph]} wavefront"
            head += "s" if self.wavefronts[ph] != 1 else ""
            if ways[worst] > 1:
                head += f", {ways[worst]}-way on bank {worst}"
            out.append(head)
            for b in range(NUM_BANKS):
                cell = self.cells[ph][b]
                if not cell:
                    continue
                words = sorted({w for _lane, w in cell})
                lanes_txt = ",".join(str(lane) for lane in sorted({lane for lane, _w in cell}))
                mark = " <-" if len(words) > 1 else ""
                out.append(f"  bank {b:2d}: lanes {lanes_txt}; words {','.join(str(w) for w in words)}{mark}")
        return "\n".join(out) + "\n"

    def svg(self) -> str:
        """A row per phase, a column per bank: each cell shows its ways and its first lane;
        conflicting banks in red, unused ones white; the hover tip lists lanes, words and
        byte addresses."""
        labels: List[List[List[str]]] = []
        fills: List[List[str]] = []
        tips: List[List[str]] = []
        data: List[List[Dict[str, int]]] = []
        for ph in range(len(self.lanes)):
            lr, fr, tr, dr = [], [], [], []
            for b in range(NUM_BANKS):
                cell = self.cells[ph][b]
                ways = self.ways(ph, b)
                if not cell:
                    lr.append(["-"])
                    fr.append("#ffffff")
                    tr.append(f"phase {ph}, bank {b}: unused")
                else:
                    lanes = sorted({lane for lane, _w in cell})
                    lr.append(
                        [f"{ways}x" if ways > 1 else "1", f"L{lanes[0]}" + ("+" if len(lanes) > 1 else "")]
                    )
                    fr.append(_CONFLICT[min(ways, len(_CONFLICT)) - 1])
                    tr.append(
                        f"phase {ph}, bank {b}: "
                        + "; ".join(f"lane {lane} word {w} (byte {w * BANK_BYTES})" for lane, w in cell)
                    )
                dr.append({"phase": ph, "bank": b, "ways": ways})
            labels.append(lr)
            fills.append(fr)
            tips.append(tr)
            data.append(dr)
        return grid_svg(f"{self.title}  (rows: phases, columns: banks)", labels, fills, tips, data)

    def as_dict(self) -> Dict[str, Any]:
        return {
            "instruction": self.instruction_name,
            "warp": self.warp,
            "index": self.instruction,
            "step": list(self.step),
            "wavefronts": list(self.wavefronts),
            "phases": [
                {
                    "lanes": self.lanes[ph],
                    "banks": [[list(e) for e in self.cells[ph][b]] for b in range(NUM_BANKS)],
                }
                for ph in range(len(self.lanes))
            ],
        }


# one way: light green; two ways and more: darker reds
_CONFLICT = ["#cdeccd", "#f7c4b8", "#f19a86", "#e86f57", "#d9462f"]


def bank_pattern(
    smem: Any,
    access: Any,
    instruction: Any = None,
    *,
    element_bits: int,
    base: int = 0,
    warp: Optional[int] = None,
    index: Optional[int] = None,
) -> BankPattern:
    """The bank pattern of one instruction of ``access`` on ``smem`` (the arguments of
    :func:`~layoutproof.gpu.analysis.smem_banks.banks`): of warp ``warp`` and instruction
    ``index`` -- by default the first instruction with a conflicting phase, else warp 0's
    first.  Concrete layouts only (a symbolic layout is drawn at values: substitute them)."""
    if instruction is None:
        atom = getattr(access, "atom", None)
        if atom is None:
            raise AccessError("no instruction: name one (e.g. 'ld.shared.b32')", condition="instruction")
        instruction = atom
    ins = read_instruction(instruction)
    check_shared(ins)
    if is_symbolic(smem) or is_symbolic(access):
        raise AccessError(
            "a bank picture shows concrete addresses: substitute values for the symbols first",
            condition="concrete layouts",
        )
    acc = lane_addresses(smem, access, ins, element_bits=element_bits, base=base)
    addr = acc.addresses
    warps, n = addr.shape[:2]
    ways = phase_wavefronts(addr, ins)
    if warp is None and index is None:
        bad = np.argwhere(ways.max(axis=2) > 1)
        warp, index = (int(bad[0][0]), int(bad[0][1])) if len(bad) else (0, 0)
    warp = 0 if warp is None else int(warp)
    index = 0 if index is None else int(index)
    if not (0 <= warp < warps and 0 <= index < n):
        raise AccessError(
            f"warp {warp}, instruction {index} does not exist: the access has {warps} warp(s) of "
            f"{n} instruction(s)",
            condition="instruction index",
            witness=(warp, index),
        )
    a = addr[warp, index]
    used = WARP if not ins.matrices else 8 * ins.matrices
    lanes_per_phase = WARP // ins.phases if not ins.matrices else 8
    width = max(ins.bytes, 1)
    k = max(width // BANK_BYTES, 1)
    lanes: List[List[int]] = []
    cells: List[List[Cell]] = []
    for ph in range(ins.phases):
        ls = [lane for lane in range(ph * lanes_per_phase, (ph + 1) * lanes_per_phase) if lane < used]
        row: List[Cell] = [[] for _ in range(NUM_BANKS)]
        for lane in ls:
            first = int(a[lane]) // BANK_BYTES
            for w in range(first, first + k):
                row[w % NUM_BANKS].append((lane, w))
        lanes.append(ls)
        cells.append(row)
    title = f"{ins.name}, warp {warp}, instruction {index} (step {acc.step_of(index)})"
    return BankPattern(
        ins.name,
        warp,
        index,
        acc.step_of(index),
        lanes,
        cells,
        [int(x) for x in ways[warp, index]],
        title,
    )
