"""Shared-memory bank conflicts of a user's layout, access and instruction, per phase.

:func:`banks` takes the shared-memory layout of a tile (plain, swizzled, composed; symbolic
extents allowed), the access (a thread-value layout or a TiledCopy) and the instruction, and
returns a :class:`BankReport`: the wavefronts of every phase of every instruction of every
warp, and either the proof that each phase takes one wavefront (``proved``) or the first
conflict (``refuted``, witness :class:`BankConflict`).

The hardware model is the one of :mod:`layoutproof.gpu.proof.banks` (32 banks of 4-byte
words; phases: up to 4 bytes per lane one phase of 32 lanes, 8 bytes two phases of 16
lanes, 16 bytes four phases of 8 lanes, each phase covering at most 128 bytes; lanes that
read the same word are served by one broadcast).  ``ldmatrix`` / ``stmatrix`` ``.xN`` serve
one 8x8 matrix per phase: lanes ``8j..8j+7`` give the 16-byte rows of matrix ``j``, which
is the 16-byte model on those lanes; lanes ``8N`` and up are not read.  ``cp.async`` writes
shared memory as ``st.shared`` of the same width.  An access of 1 or 2 bytes touches the
word that holds it.

>>> from layoutproof import Layout
>>> r = banks(Layout(256, 1), Layout((32, 8), (8, 1)), "ld.shared.v4.b32", element_bits=16)
>>> r.status, r.wavefronts.tolist(), r.total
('proved', [[[1, 1, 1, 1]]], 4)
>>> col = banks(Layout((32, 32), (32, 1)), Layout(32, 1), "ld.shared.b32", element_bits=32)
>>> col.status, col.total
('refuted', 32)
>>> print(col.witness)
warp 0, instruction 0 (step (0, 0)), phase 0: lanes 0 and 1 hit bank 0 at bytes 0 and 128 (32-way)
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple

import numpy as np

from layoutproof import ComposedLayout, Layout, Swizzle, composition, make_layout
from layoutproof.outcome import PROVED, REFUTED, UNKNOWN, Outcome

from ..proof import banks as bank_model  # the one bank model
from ..proof.banks import NUM_BANKS
from .access import WARP, AccessError, Instruction, LaneAddresses, is_symbolic, lane_addresses
from .access import instruction as read_instruction

__all__ = ["BankConflict", "BankReport", "banks", "check_shared", "phase_wavefronts"]

_SHARED_KINDS = ("ld.shared", "st.shared", "ldmatrix", "stmatrix", "cp.async")


@dataclass(frozen=True)
class BankConflict:
    """Where a phase takes more than one wavefront: two lanes of one phase of one
    instruction that hit the same bank at different 4-byte words."""

    warp: int
    instruction: int
    step: Tuple[int, ...]
    phase: int
    lane_a: int
    lane_b: int
    bank: int
    address_a: int
    address_b: int
    ways: int

    def __str__(self) -> str:
        return (
            f"warp {self.warp}, instruction {self.instruction} (step {self.step}), phase {self.phase}: "
            f"lanes {self.lane_a} and {self.lane_b} hit bank {self.bank} at bytes {self.address_a} and "
            f"{self.address_b} ({self.ways}-way)"
        )

    def as_dict(self) -> Dict[str, Any]:
        return dict(self.__dict__, step=list(self.step))


@dataclass(frozen=True, eq=False)
class BankReport(Outcome):
    """The bank analysis of one access: an :class:`~layoutproof.outcome.Outcome` (proved:
    every phase of every instruction takes one wavefront; refuted: ``witness`` is the first
    :class:`BankConflict`; unknown: ``reason``) with the wavefronts
    ``[warp, instruction, phase]`` of the instructions analysed."""

    instruction: str = ""
    wavefronts: Optional[np.ndarray] = None

    @property
    def total(self) -> int:
        """Wavefronts of all the instructions analysed."""
        return int(self.wavefronts.sum()) if self.wavefronts is not None else 0

    @property
    def minimum(self) -> int:
        """One wavefront per phase: the fewest the instructions can take."""
        return int(self.wavefronts.size) if self.wavefronts is not None else 0

    @property
    def max_ways(self) -> int:
        """The most wavefronts one phase takes (1: conflict-free)."""
        return int(self.wavefronts.max()) if self.wavefronts is not None and self.wavefronts.size else 0

    def as_dict(self) -> Dict[str, Any]:
        d = self.outcome_dict()
        d["witness"] = self.witness.as_dict() if isinstance(self.witness, BankConflict) else self.witness
        d.update(instruction=self.instruction, total=self.total, minimum=self.minimum, max_ways=self.max_ways)
        d["wavefronts"] = self.wavefronts.tolist() if self.wavefronts is not None else None
        return d


def _hardware_rows(addr: np.ndarray, ins: Instruction) -> Tuple[np.ndarray, int]:
    """``(n, 32)`` addresses as the bank model reads them, and the width it models: words of
    1-2 byte accesses, and for ``ldmatrix.xN`` the unread lanes made copies of phase 0's."""
    a = addr.reshape(-1, WARP)
    width = ins.bytes
    if ins.matrices and ins.matrices < 4:
        a = a.copy()
        a[:, 8 * ins.matrices :] = np.tile(a[:, :8], (1, 4 - ins.matrices))
    if width < 4:
        a = a - a % 4
        width = 4
    return a, width


def _phase_words(addr: np.ndarray, ins: Instruction) -> Tuple[np.ndarray, int]:
    """``(words [n, phases, entries], width)``: the 4-byte words each phase's lanes touch."""
    rows, width = _hardware_rows(addr, ins)
    return bank_model.access_words(rows, width), width


def phase_wavefronts(addr: np.ndarray, ins: Instruction) -> np.ndarray:
    """Wavefronts ``[..., phase]`` of lane addresses ``[..., 32]`` under ``ins``."""
    words, _width = _phase_words(addr, ins)
    w = bank_model.phase_wavefronts(words, True)[:, : ins.phases]
    return w.reshape(addr.shape[:-1] + (ins.phases,))


def _first_conflict(
    acc: LaneAddresses, ins: Instruction, ways: np.ndarray, words: np.ndarray, width: int
) -> BankConflict:
    """The first phase that takes more than one wavefront, and in it the conflict that
    :func:`~layoutproof.gpu.proof.banks.prove_conflict_free` reports: the lowest bank with
    two words, its first lane, and the first lane there at another word."""
    warp, i, ph = (int(x[0]) for x in np.nonzero(ways > 1))
    w = words[warp * ways.shape[1] + i, ph]  # the phase's (lane, word) entries, lane-major
    k = width // 4
    per = WARP // k
    bank_of = w % NUM_BANKS
    distinct = np.bincount(np.unique(w) % NUM_BANKS, minlength=NUM_BANKS)  # words per bank
    bank = int(np.argmax(distinct > 1))
    at = np.flatnonzero(bank_of == bank)
    # entry e of phase ph belongs to lane ph * per + e // k
    la = ph * per + int(at[0]) // k
    lb = ph * per + int(at[int(np.argmax(w[at] != w[at[0]]))]) // k
    a = acc.addresses[warp, i]
    return BankConflict(
        warp, i, acc.step_of(i), ph, la, lb, bank, int(a[la]), int(a[lb]), int(ways[warp, i, ph])
    )


def check_shared(ins: Instruction) -> None:
    """Refuse an instruction that does not access shared memory."""
    if ins.kind not in _SHARED_KINDS:
        raise AccessError(
            f"{ins.name} does not access shared memory (banks analyse {', '.join(_SHARED_KINDS)})",
            condition="shared-memory instruction",
            witness=ins.name,
        )


def banks(smem: Any, access: Any, instruction: Any = None, *, element_bits: int, base: int = 0) -> BankReport:
    """The bank conflicts of ``access`` through ``instruction`` on the tile laid out by ``smem``.

    Args:
        smem: the tile's shared-memory layout: 1-D tile coordinate -> element offset
            (a Layout, a swizzled ComposedLayout, symbolic extents allowed).
        access: a thread-value Layout ``(thread, value, rest...)`` -> tile coordinate, or a
            TiledCopy (its atom is the default instruction).
        instruction: a PTX name (:func:`~layoutproof.gpu.analysis.access.instruction`) or a CopyAtom.
        element_bits: the element width.
        base: the tile's byte address modulo 128 (0: 128-byte aligned).

    Bad input raises :class:`~layoutproof.gpu.analysis.access.AccessError` (or another
    LayoutError naming the problem: an undecidable condition of a symbolic composition).
    """
    if instruction is None:
        atom = getattr(access, "atom", None)
        if atom is None:
            raise AccessError("no instruction: name one (e.g. 'ld.shared.b32')", condition="instruction")
        instruction = atom
    ins = read_instruction(instruction)
    check_shared(ins)
    t0 = time.perf_counter()
    if is_symbolic(smem) or is_symbolic(access):
        return _symbolic(smem, access, ins, element_bits, base, t0)
    acc = lane_addresses(smem, access, ins, element_bits=element_bits, base=base)
    return _report(acc, ins, f"{ins.name} of {access} on {smem}", element_bits, t0)


def _report(
    acc: LaneAddresses, ins: Instruction, what: str, bits: int, t0: float, scope: str = "", method: str = ""
) -> BankReport:
    warps, n = acc.addresses.shape[:2]
    words, width = _phase_words(acc.addresses, ins)
    ways = bank_model.phase_wavefronts(words, True)[:, : ins.phases].reshape(warps, n, ins.phases)
    scope = scope or (
        f"{warps} warp(s) x {n} instruction(s), {acc.covered} of {acc.elements} elements, {bits}-bit, "
        "tile 128-byte aligned"
    )
    stmt = f"{what}: every phase one wavefront"
    cases = warps * n * ins.lanes_used
    seconds = time.perf_counter() - t0
    method = method or "exhaustive"
    if (ways > 1).any():
        w = _first_conflict(acc, ins, ways, words, width)
        return BankReport(
            REFUTED,
            stmt,
            method,
            scope=scope,
            cases=cases,
            seconds=seconds,
            witness=w,
            instruction=ins.name,
            wavefronts=ways,
        )
    return BankReport(
        PROVED, stmt, method, scope=scope, cases=cases, seconds=seconds, instruction=ins.name, wavefronts=ways
    )


def _symbolic(smem: Any, access: Any, ins: Instruction, bits: int, base: int, t0: float) -> BankReport:
    """Symbolic extents: one period.  With the address map ``A = inner o access`` (the
    swizzle and offset of a composed ``smem`` outside), every rest mode of ``A`` whose
    stride ``d`` moves the bytes by a multiple of 128 (``d * bits % 1024 == 0``) and the
    swizzle's input by a multiple of its period repeats the first step's banks exactly:
    the first step is analysed, the strides proved under the active assumptions."""
    from layoutproof.symbolic import assumptions, decide, divides

    what = f"{ins.name} of {access} on {smem}"
    if not isinstance(access, Layout) or access.rank < 3:
        raise AccessError(
            f"{what}: a symbolic analysis needs a thread-value Layout whose symbols sit in its rest "
            "modes (modes 2 and up)",
            condition="symbolic access",
        )
    sw, off, inner = (
        (smem.layout_a, smem.offset, smem.layout_b) if isinstance(smem, ComposedLayout) else (None, 0, smem)
    )
    if sw is not None and not isinstance(sw, Swizzle):
        return BankReport(
            UNKNOWN,
            what,
            "z3",
            reason="the outer function of the composed layout is not a swizzle",
            instruction=ins.name,
        )
    A = composition(inner, access)  # an undecidable side condition raises, naming it
    head = make_layout(A[0], A[1])
    if head.is_symbolic:
        return BankReport(
            UNKNOWN, what, "z3", reason=f"one step's addresses {head} depend on symbols", instruction=ins.name
        )
    period = 1024 if sw is None else int(np.lcm(1024, sw.size * bits))
    methods = set()
    for k in range(2, A.rank):
        _fs, fd = A[k].flat_modes()
        for d in fd:
            dec = decide(divides(period, d * bits))
            methods.add(dec.method)
            if dec.value is not True:
                why = f"the rest stride {d} (mode {k}) is not proved a multiple of {period // bits} elements"
                if dec.counterexample:
                    why += f" (e.g. {dec.counterexample})"
                return BankReport(
                    UNKNOWN,
                    what,
                    "z3",
                    reason=why,
                    instruction=ins.name,
                    scope=", ".join(str(f) for f in assumptions()),
                )
    data = head if sw is None else ComposedLayout(sw, off, head)
    T, V = A[0].size, A[1].size
    acc = lane_addresses(
        data, Layout((T, V)), ins, element_bits=bits, base=base + (0 if sw else off * bits // 8)
    )
    facts = ", ".join(str(f) for f in assumptions())
    scope = "every value of the symbols" + (f" with {facts}" if facts else "") + "; tile 128-byte aligned"
    return _report(acc, ins, what, bits, t0, scope=scope, method="+".join(sorted(methods)) + "+exhaustive")
