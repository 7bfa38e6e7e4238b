"""Can ``wgmma`` read a user's shared-memory operand through a descriptor, and with which?

A ``wgmma`` operand in shared memory is not read lane by lane: the instruction reads a
``(MN, K)`` tile through a 64-bit *matrix descriptor* (start address, leading and stride
byte offsets, swizzle mode) and a major-ness (``imm-trans``).  Only the *canonical* layouts
of the PTX ISA ("Shared Memory Matrix Layout": K-major or MN-major, interleaved or 32-,
64-, 128-byte swizzled; CuTe's ``GMMA::Layout_{K,MN}_{INTER,SW32,SW64,SW128}_Atom``
repeated with any leading and stride offsets) can be read, and those the hardware reads at
full rate: there is no bank conflict to count, only the question whether the layout is one
the descriptor can express.

:func:`wgmma_operand` answers it by construction and proof: for every major-ness and
swizzle mode whose element swizzle the layout carries, it builds the descriptor of every
k-step (32 bytes of K) and every block of ``mn_block`` rows from the layout's own strides
(:func:`~layoutproof.gpu.isa.gmma.make_descriptor`) and proves that the hardware's address
of every element (:func:`~layoutproof.gpu.isa.gmma.prove_descriptor`, the PTX address
model) is the layout's.  Proved: the layout is canonical, and the report names the mode
and the descriptors' fields.  Refuted: no mode reads it; the witness is the element the
closest mode reads from the wrong byte (or the swizzle no mode has).

>>> from layoutproof import Layout
>>> from layoutproof.gpu.isa.gmma import smem_atom, tile_to_shape
>>> stage = tile_to_shape(smem_atom("K", "SW128"), (64, 64)).layout
>>> r = wgmma_operand(stage, element_bits=16)
>>> r.status, r.mode, r.descriptors[0]["stride_byte_offset"]
('proved', 'K-major SW128', 1024)
>>> bad = wgmma_operand(Layout((64, 64), (72, 1)), element_bits=16)
>>> bad.status
'refuted'
>>> print(bad.witness)
K-major INTER: element (1, 0) at byte 144, the descriptor reads byte 16
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Tuple

from layoutproof import ComposedLayout, Layout
from layoutproof.errors import LayoutError
from layoutproof.outcome import PROVED, REFUTED, Outcome

from ..errors import ProofFailedError
from ..isa.gmma import SWIZZLES, GmmaSmemLayout, decode_descriptor, make_descriptor, prove_descriptor
from .access import AccessError, is_symbolic

__all__ = ["WgmmaOperandReport", "wgmma_operand"]


@dataclass(frozen=True, eq=False)
class WgmmaOperandReport(Outcome):
    """Whether ``wgmma`` reads the layout through descriptors (an
    :class:`~layoutproof.outcome.Outcome`): proved with ``mode`` (``"K-major SW128"``) and
    ``descriptors`` (the decoded fields of each block's descriptor, the k-steps in order), or
    refuted with the closest mode's failure as ``witness`` and every mode's in ``tried``."""

    mode: str = ""
    descriptors: List[Dict[str, Any]] = field(default_factory=list)
    tried: List[str] = field(default_factory=list)

    def as_dict(self) -> Dict[str, Any]:
        d = self.outcome_dict()
        d.update(mode=self.mode, descriptors=self.descriptors, tried=self.tried)
        return d


def _shape(layout: Any) -> Tuple[int, int]:
    inner = layout.layout_b if isinstance(layout, ComposedLayout) else layout
    if not isinstance(inner, Layout) or not isinstance(inner.shape, tuple) or inner.rank != 2:
        raise AccessError(
            f"a wgmma operand is an (MN, K) tile: a rank-2 layout, got {layout}",
            condition="rank-2 operand",
            witness=str(layout),
        )
    return int(inner[0].size), int(inner[1].size)


def _try(
    layout: Any,
    major: str,
    swizzle: str,
    bits: int,
    mn_block: int,
    base: int,
    given: Optional[Mapping[Tuple[int, int], int]] = None,
) -> Tuple[List[Dict[str, Any]], int]:
    """The descriptors of every (mn block, k-step), each proved (a ``given`` one where there
    is one, else built from the layout); raises ProofFailedError."""
    smem = GmmaSmemLayout(layout, major, swizzle, bits)
    rows, cols = smem.shape
    kstep = 256 // bits
    descs: List[Dict[str, Any]] = []
    cases = 0
    for m0 in range(0, rows, mn_block):
        for k0 in range(0, cols, kstep):
            if given is not None and (m0, k0) in given:
                desc = int(given[(m0, k0)])
                named = decode_descriptor(desc)["swizzle"]
                if named != swizzle:  # the address model reads the descriptor's own field
                    raise ProofFailedError(
                        f"the given descriptor {desc:#x} of block ({m0}, {k0}) is in mode {named}",
                        condition="descriptor swizzle is the mode's",
                        witness=(m0, k0),
                    )
            else:
                desc = make_descriptor(smem, base, mn_offset=m0, k_offset=k0)
            prove_descriptor(smem, desc, base_addr=base, mn_offset=m0, k_offset=k0, mn_extent=mn_block)
            f = decode_descriptor(desc)
            f.update(mn_offset=m0, k_offset=k0, descriptor=hex(desc))
            descs.append(f)
            cases += mn_block * kstep
    return descs, cases


_AT = re.compile(r"reads element \((\d+), (\d+)\) at byte (\d+), the layout .* puts it at byte (\d+)")


def _witness(mode: str, err: ProofFailedError) -> str:
    m = _AT.search(str(err))
    if m:
        r, c, hw, ours = m.groups()
        return f"{mode}: element ({r}, {c}) at byte {ours}, the descriptor reads byte {hw}"
    return f"{mode}: {err}"


def wgmma_operand(
    layout: Any,
    *,
    element_bits: int,
    major: Optional[str] = None,
    mn_block: Optional[int] = None,
    base: int = 0,
    descriptors: Optional[Mapping[Tuple[int, int], int]] = None,
) -> WgmmaOperandReport:
    """Whether ``wgmma`` can read the ``(MN, K)`` operand tile ``layout`` (element offsets;
    a swizzle as a ComposedLayout) through descriptors.

    Args:
        layout: the operand's shared-memory layout, ``(mn, k)`` -> element offset.
        element_bits: 8, 16 or 32 (fp8/int8, f16/bf16, tf32).
        major: ``"K"`` or ``"MN"`` to try one major-ness (8- and 32-bit operands must be
            K-major for ``wgmma``); both by default.
        mn_block: the rows one descriptor covers (64 for A read by one warpgroup, N for B);
            default: all rows (one descriptor per k-step).
        base: the tile's shared-memory byte address (a multiple of 16; swizzled modes
            need the swizzle's repeat, e.g. 1024 bytes for SW128, which is assumed).
        descriptors: the descriptors a kernel forms, ``(mn offset, k offset)`` -> the 64-bit
            descriptor, for some or all blocks and k-steps: those are the ones proved (the
            rest are built from the layout's strides).  A field the hardware does not use
            for a block may then differ from the built descriptor's.

    The k extent must be a multiple of one k-step (32 bytes).  Symbolic layouts are
    refused: the descriptor fields are numbers.
    """
    t0 = time.perf_counter()
    bits = int(element_bits)
    if bits not in (8, 16, 32):
        raise AccessError(
            f"wgmma operands are 8-, 16- or 32-bit, got element_bits={element_bits}",
            condition="wgmma element width",
            witness=element_bits,
        )
    if not isinstance(layout, (Layout, ComposedLayout)):
        raise AccessError(
            f"the operand is a Layout or a swizzled ComposedLayout, got {type(layout).__name__}",
            condition="operand layout",
        )
    if is_symbolic(layout):
        raise AccessError(
            "descriptor fields are numbers: substitute values for the symbols of the operand layout",
            condition="concrete operand",
            witness=str(layout),
        )
    rows, cols = _shape(layout)
    kstep = 256 // bits
    if cols % kstep:
        raise AccessError(
            f"the K extent {cols} is not a multiple of one wgmma k-step ({kstep} {bits}-bit elements)",
            condition="whole k-steps",
            witness=cols,
        )
    block = rows if mn_block is None else int(mn_block)
    if block <= 0 or rows % block:
        raise AccessError(
            f"mn_block {mn_block} does not divide the {rows} rows", condition="mn blocks", witness=mn_block
        )
    if base % 16:
        raise AccessError(
            f"a descriptor's start address is a multiple of 16 bytes, base is {base}",
            condition="16-byte base",
            witness=base,
        )
    if descriptors is not None:
        steps = {(m0, k0) for m0 in range(0, rows, block) for k0 in range(0, cols, kstep)}
        stray = sorted(set(descriptors) - steps)
        if stray:
            raise AccessError(
                f"descriptors are keyed by (mn offset, k offset) of a block of {block} rows and a "
                f"k-step of {kstep} elements; {stray[0]} is none",
                condition="descriptor keys",
                witness=stray[0],
            )
    majors = ("K", "MN") if major is None else (major,)
    if any(m not in ("K", "MN") for m in majors):
        raise AccessError(f"major must be 'K' or 'MN', got {major!r}", condition="major-ness", witness=major)
    stmt = f"wgmma reads {layout} ({bits}-bit, {rows}x{cols}) through descriptors"
    tried: List[str] = []
    failures: List[Tuple[int, str]] = []
    for mj in majors:
        for sw in SWIZZLES:
            mode = f"{mj}-major {sw}"
            try:
                descs, cases = _try(layout, mj, sw, bits, block, base, descriptors)
            except ProofFailedError as e:
                # a wrong swizzle is further from the layout than a wrong byte
                rank = 0 if getattr(e, "condition", "") == "descriptor addresses equal layout" else 1
                failures.append((rank, _witness(mode, e)))
                tried.append(_witness(mode, e))
                continue
            except LayoutError as e:
                tried.append(f"{mode}: {e}")
                failures.append((2, f"{mode}: {e}"))
                continue
            if bits != 16 and mj == "MN":
                why = (
                    f"{mode}: the descriptor reads the layout, but {bits}-bit wgmma operands must be "
                    "K-major (the transpose is for 16-bit types only)"
                )
                tried.append(why)
                failures.append((-1, why))
                continue
            return WgmmaOperandReport(
                PROVED,
                stmt,
                "exhaustive",
                scope=f"{len(descs)} descriptor(s): {rows // block} block(s) of {block} rows x "
                f"{cols // kstep} k-step(s); base {base}",
                cases=cases,
                seconds=time.perf_counter() - t0,
                mode=mode,
                descriptors=descs,
                tried=tried,
            )
    failures.sort(key=lambda f: f[0])
    return WgmmaOperandReport(
        REFUTED,
        stmt,
        "exhaustive",
        scope=f"{len(tried)} descriptor mode(s) tried",
        cases=len(tried),
        seconds=time.perf_counter() - t0,
        witness=failures[0][1],
        reason="not a canonical wgmma layout: no descriptor mode reads it",
        tried=tried,
    )
