"""A warp's memory access as data: the instruction, and the address of every lane.

An access is described the way CuTe describes it: a *thread-value layout* (or a
:class:`~layoutproof.gpu.isa.tiled.TiledCopy`) maps ``(thread, value, rest...)`` to the 1-D
(colexicographic) coordinate of an element of the tile, and the tile's *data layout* (plain,
swizzled, composed) maps that coordinate to the element's offset in memory.  Mode 0 of the
TV layout is the thread, mode 1 the values one thread moves per step, the modes after it
(the *rest* modes) the steps.  The instruction fixes how many consecutive values one lane
moves at once: they must be contiguous and aligned in memory, or the access is refused.

:func:`lane_addresses` turns the three into the byte address of every lane of every
instruction of every warp, vectorized (numpy over the whole tile, no Python loop per
element): an array ``(warps, instructions, 32)``.

>>> from layoutproof import Layout
>>> ins = instruction("ld.shared.v4.b32")
>>> ins.name, ins.bytes, ins.phases
('ld.shared.v4.b32', 16, 4)
>>> acc = lane_addresses(Layout(256, 1), Layout((32, 8), (8, 1)), ins, element_bits=16)
>>> acc.addresses.shape, acc.addresses[0, 0, :3].tolist()
((1, 1, 32), [0, 16, 32])
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Tuple

import numpy as np

from layoutproof import ComposedLayout, Layout
from layoutproof.errors import InadmissibleError, MalformedLayoutError
from layoutproof.inttuple import raw_product

from ..isa.atoms import CopyAtom
from ..isa.tiled import TiledCopy

__all__ = ["AccessError", "Instruction", "instruction", "LaneAddresses", "lane_addresses", "WARP"]

WARP = 32


class AccessError(InadmissibleError):
    """An access that cannot be analysed as given: a TV layout that does not map into the
    tile, an instruction that does not fit the element width, values that are not one
    contiguous aligned vector, a thread count that is not whole warps.  ``condition``
    names what is wrong, ``witness`` where."""


@dataclass(frozen=True)
class Instruction:
    """One memory instruction as the bank and coalescing models see it.

    Attributes:
        name: the PTX spelling it was read from (normalized).
        kind: ``"ld.shared"``, ``"st.shared"``, ``"ldmatrix"``, ``"stmatrix"``, ``"cp.async"``
            (a shared-memory write of ``bytes`` per lane) or ``"ld.global"`` / ``"st.global"``.
        bytes: bytes per lane per instruction (for ldmatrix/stmatrix: one 16-byte row).
        matrices: ldmatrix/stmatrix ``.x1/.x2/.x4`` (0 for the others).
        trans: ``.trans`` (moves the same rows; only the registers differ).
    """

    name: str
    kind: str
    bytes: int
    matrices: int = 0
    trans: bool = False

    @property
    def phases(self) -> int:
        """Shared-memory phases per instruction: one of 32 lanes up to 4 bytes, two of 16
        lanes for 8 bytes, four of 8 lanes for 16 bytes; one per 8x8 matrix for
        ldmatrix/stmatrix.  Each phase covers at most 128 bytes, one word per bank."""
        if self.matrices:
            return self.matrices
        return max(1, self.bytes // 4)

    @property
    def writes(self) -> bool:
        """Whether the instruction writes the memory analysed with every lane (stmatrix
        ``.x1/.x2`` ignore the upper lanes, whose points may repeat the lower ones')."""
        return self.kind in ("st.shared", "cp.async", "st.global") or (
            self.kind == "stmatrix" and self.matrices == 4
        )

    @property
    def lanes_used(self) -> int:
        """The lanes whose address the instruction reads (ldmatrix ``.xN``: ``8N``)."""
        return 8 * self.matrices if self.matrices else WARP


_SHARED = re.compile(r"(ld|st)\.shared(?:\.v([24]))?\.[bsuf](8|16|32|64|128)")
_GLOBAL = re.compile(r"(ld|st)\.global(?:\.v([24]))?\.[bsuf](8|16|32|64|128)")
_MATRIX = re.compile(
    r"(ldmatrix|stmatrix)(?:\.sync\.aligned\.m8n8)?\.x([124])(\.trans)?(?:\.shared)?(?:\.b16)?"
)
_CPASYNC = re.compile(r"cp\.async(?:\.c[ag])?(?:\.shared\.global)?[ .](4|8|16)")


def instruction(spec: Any) -> Instruction:
    """Read an instruction: ``ld.shared.b32``, ``st.shared.v2.b32`` (8 bytes),
    ``ld.shared.v4.b32`` (16), ``ld.shared.u8``, ``ldmatrix.x4``, ``ldmatrix.x2.trans``,
    ``stmatrix.x4``, ``cp.async.16`` (``cp.async.cg.shared.global 16``), ``ld.global.v4.b32``;
    an :class:`Instruction` or a :class:`~layoutproof.gpu.isa.atoms.CopyAtom` as it is.

    >>> instruction("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16")
    Instruction(name='ldmatrix.x2.trans', kind='ldmatrix', bytes=16, matrices=2, trans=True)
    >>> instruction("ld.shared.v4.b64")
    Traceback (most recent call last):
      ...
    layoutproof.gpu.analysis.access.AccessError: ld.shared.v4.b64: 32 bytes per lane; a lane moves at most 16
    """
    if isinstance(spec, Instruction):
        return spec
    if isinstance(spec, CopyAtom):
        return _from_atom(spec)
    if not isinstance(spec, str):
        raise MalformedLayoutError(f"an instruction is a PTX name or a CopyAtom, got {type(spec).__name__}")
    text = spec.strip()
    for rx, where in ((_SHARED, "shared"), (_GLOBAL, "global")):
        m = rx.fullmatch(text)
        if m:
            vec = int(m.group(2) or 1)
            nbytes = vec * int(m.group(3)) // 8
            if nbytes > 16:
                raise AccessError(
                    f"{text}: {nbytes} bytes per lane; a lane moves at most 16",
                    condition="instruction width",
                    witness=nbytes,
                )
            return Instruction(text, f"{m.group(1)}.{where}", nbytes)
    m = _MATRIX.fullmatch(text)
    if m:
        name = f"{m.group(1)}.x{m.group(2)}{m.group(3) or ''}"
        return Instruction(name, m.group(1), 16, int(m.group(2)), bool(m.group(3)))
    m = _CPASYNC.fullmatch(text)
    if m:
        return Instruction(f"cp.async.{m.group(1)}", "cp.async", int(m.group(1)))
    raise MalformedLayoutError(
        f"unknown instruction {text!r}: expected ld|st.shared[.v2|.v4].b8..b64, ldmatrix|stmatrix.x1|x2|x4"
        "[.trans], cp.async.4|8|16 or ld|st.global[.v2|.v4].bNN"
    )


def _from_atom(atom: CopyAtom) -> Instruction:
    if atom.is_ldmatrix:
        return instruction(f"ldmatrix.x{atom.num}{'.trans' if atom.trans else ''}")
    if atom.ptx.startswith("cp.async"):
        return instruction(f"cp.async.{atom.bytes_per_thread}")
    return Instruction(f"{atom.name}", "ld.global", atom.bytes_per_thread)


@dataclass(frozen=True)
class LaneAddresses:
    """Every lane's byte address, ``addresses[warp, instruction, lane]``; ``steps`` is the
    shape of the instruction index (``(instructions per step, rest modes...)``, column-major:
    instruction ``i`` is the colexicographic index of that shape)."""

    addresses: np.ndarray
    steps: Tuple[int, ...]
    values_per_lane: int
    elements: int
    covered: int

    def step_of(self, i: int) -> Tuple[int, ...]:
        """The natural coordinate of instruction ``i``: ``(vector, rest...)``."""
        return tuple(int(x) for x in np.unravel_index(i, self.steps, order="F"))


def is_symbolic(x: Any) -> bool:
    """Whether a data layout or access has symbolic extents or strides."""
    if isinstance(x, ComposedLayout):
        return bool(x.layout_b.is_symbolic) or (isinstance(x.layout_a, Layout) and x.layout_a.is_symbolic)
    return isinstance(x, Layout) and bool(x.is_symbolic)


def tv_table(access: Any, data: Any) -> np.ndarray:
    """``(T, V, R)`` tile coordinates of a TV layout (or a TiledCopy over ``data``'s shape)."""
    if isinstance(access, TiledCopy):
        ident = Layout(data.shape)
        f = access.tidfrg(ident)
        T, V = access.size, access.val_layout.size
        return f.eval_all().reshape((T, V, -1), order="F")
    if not isinstance(access, Layout):
        raise MalformedLayoutError(
            f"the access is a thread-value Layout or a TiledCopy, got {type(access).__name__}"
        )
    T = (
        int(raw_product(access[0].shape))
        if access.rank >= 1 and isinstance(access.shape, tuple)
        else access.size
    )
    V = int(raw_product(access[1].shape)) if access.rank >= 2 and isinstance(access.shape, tuple) else 1
    return access.eval_all().reshape((T, V, -1), order="F")


def element_offsets(data: Any, access: Any, write: bool = False) -> Tuple[np.ndarray, int, int]:
    """``(offsets (T, V, R), tile size, elements covered)``: ``data``'s offset of every
    ``(thread, value, rest)``, refused where a coordinate falls outside the tile or (a
    write) where two points write one element."""
    if not isinstance(data, (Layout, ComposedLayout)):
        raise MalformedLayoutError(
            f"the data layout is a Layout or a ComposedLayout, got {type(data).__name__}"
        )
    idx = tv_table(access, data)
    n = int(data.size)
    bad = (idx < 0) | (idx >= n)
    if bad.any():
        t, v, r = (int(x[0]) for x in np.nonzero(bad))
        raise AccessError(
            f"the access maps thread {t}, value {v}, step {r} to tile coordinate {int(idx[t, v, r])}, "
            f"outside the tile [0, {n}) of {data}: it is not a function into the tile",
            condition="TV into the tile",
            witness=(t, v, r),
        )
    seen = np.bincount(idx.reshape(-1), minlength=n)
    if write:  # two points writing one element race; a read may broadcast
        if (seen > 1).any():
            twice = int(np.argmax(seen > 1))
            raise AccessError(
                f"the write touches tile element {twice} {int(seen[twice])} times: the access is not "
                "a one-to-one function onto the elements it writes",
                condition="TV one-to-one",
                witness=twice,
            )
    covered = int(np.count_nonzero(seen))
    return np.asarray(data.eval_all())[idx], n, covered


def lane_addresses(
    data: Any, access: Any, ins: Instruction, *, element_bits: int, base: int = 0
) -> LaneAddresses:
    """The byte address of every lane of every instruction: ``base + offset * bits / 8``
    of the first element each lane moves; refused (:class:`AccessError`) where the
    instruction does not fit the element width, a lane's values are not contiguous and
    aligned, or the threads are not whole warps."""
    bits = int(element_bits)
    if bits <= 0 or (bits < 8 and 8 % bits) or (bits >= 8 and bits % 8):
        raise AccessError(
            f"element_bits must be 1, 2, 4 or a multiple of 8, got {element_bits}",
            condition="element width",
            witness=element_bits,
        )
    lane_bits = 8 * ins.bytes
    if bits > lane_bits or lane_bits % bits:
        raise AccessError(
            f"{ins.name} moves {ins.bytes} bytes per lane: not a whole number of {bits}-bit elements",
            condition="instruction fits the element width",
            witness=(ins.bytes, bits),
        )
    n = lane_bits // bits
    offs, size, covered = element_offsets(data, access, ins.writes)
    T, V, R = offs.shape
    if T % WARP:
        raise AccessError(
            f"the access has {T} threads, not whole warps of {WARP}", condition="whole warps", witness=T
        )
    if V % n:
        raise AccessError(
            f"{ins.name} moves {n} values per lane; a thread's {V} values do not split into such vectors",
            condition="values per instruction",
            witness=(V, n),
        )
    runs = offs.reshape(T, V // n, n, R)
    step = np.diff(runs, axis=2) if n > 1 else None
    if step is not None and (step != 1).any():
        t, c, j, r = (int(x[0]) for x in np.nonzero(step != 1))
        raise AccessError(
            f"{ins.name} moves {n} consecutive elements per lane, but thread {t}'s values "
            f"{c * n}..{c * n + n - 1} (step {r}) sit at offsets {runs[t, c, :, r].tolist()}",
            condition="contiguous vector",
            witness=(t, c * n + j, r),
        )
    first_bits = runs[:, :, 0, :].astype(np.int64) * bits
    addr = base + first_bits // 8
    mis = (first_bits % 8 != 0) | (addr % ins.bytes != 0)
    if mis.any():
        t, c, r = (int(x[0]) for x in np.nonzero(mis))
        raise AccessError(
            f"{ins.name}: thread {t} accesses {ins.bytes} bytes at byte {int(addr[t, c, r])} "
            f"(values {c * n}..{c * n + n - 1}, step {r}), not {ins.bytes}-byte aligned",
            condition="alignment",
            witness=(t, c * n, r),
        )
    warps = T // WARP
    # (T, C, R) -> (warp, C*R instructions, lane), the instruction index column-major in (C, R)
    a = addr.reshape(WARP, warps, (V // n) * R, order="F").transpose(1, 2, 0)
    return LaneAddresses(np.ascontiguousarray(a), (V // n, R), n, size, covered)
