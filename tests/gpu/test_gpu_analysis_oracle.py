"""layoutproof.gpu.analysis against tensor-layouts (the differential oracle), on seeded
random concrete cases where both define the same quantity, and on the cases where they
differ by design (docs/semantics.md, "Bank conflicts and coalescing of users' layouts").

Both sides compose the data layout with the access in their own algebra: the oracle is
given ``compose(data, tv)`` (and the swizzle on top) built from tensor-layouts' own types,
so the composition is compared as well as the counting.

The same quantity:

* bank conflicts of accesses of at most 4 bytes per lane, one instruction per thread: the
  oracle's ``max_ways`` (distinct words in the worst bank, broadcast allowed) of each group
  of 32 threads is the wavefront count of that warp's one phase;
* a warp's one request of ``V * bytes`` per lane: the oracle's ``segment_analysis``
  segments and cache lines are the sectors and lines of the request, and
  ``coalescing_efficiency``'s transactions are its lines.
"""

from __future__ import annotations

import random
from typing import Any, List, Optional, Tuple

import numpy as np
import pytest

from layoutproof import ComposedLayout, Layout, Swizzle, composition
from layoutproof.errors import LayoutError
from layoutproof.gpu.analysis import AccessError, banks, coalescing

tl = pytest.importorskip("tensor_layouts")
tla = pytest.importorskip("tensor_layouts.analysis")

CASES = 240  # drawn per family; the tests check how many were comparable


def to_tl(L: Layout) -> Any:
    return tl.Layout(L.shape, L.stride)


def oracle_map(data: Any, tv: Layout) -> Any:
    """``data o tv`` in tensor-layouts' own algebra (a swizzle composed on top)."""
    if isinstance(data, ComposedLayout):
        sw = data.layout_a
        inner = tl.compose(to_tl(data.layout_b), to_tl(tv))
        return tl.compose(tl.Swizzle(sw.bits, sw.base, sw.shift), inner)
    return tl.compose(to_tl(data), to_tl(tv))


def faithful_oracle_map(data: Any, tv: Layout) -> Optional[Any]:
    """The oracle's ``data o tv`` when it is the function ``x -> data(tv(x))``; None when the
    oracle refuses the composition or returns another function -- which it does only where
    CuTe's composition is inadmissible (checked: layoutproof's ``composition`` refuses)."""
    inner = data.layout_b if isinstance(data, ComposedLayout) else data
    try:
        m = oracle_map(data, tv)
    except tl.LayoutError:
        return None
    want = np.asarray(data.eval_all())[tv.eval_all()].tolist()
    if [m(i) for i in range(tv.size)] == want:
        return m
    with pytest.raises(LayoutError):
        composition(inner, tv)
    return None


def random_smem(rng: random.Random) -> Tuple[Any, int, int]:
    """A shared-memory tile ``(R, C)``: row-major with padding, column-major, or swizzled."""
    R, C = rng.choice([(8, 32), (16, 16), (32, 32), (16, 64), (8, 64), (32, 8), (64, 16)])
    kind = rng.choice(["row", "row", "col", "swizzle", "swizzle"])
    if kind == "row":
        return Layout((R, C), (C + rng.choice([0, 0, 1, 2, 4, 8]), 1)), R, C
    if kind == "col":
        return Layout((R, C), (1, R + rng.choice([0, 1, 4]))), R, C
    b = rng.choice([1, 2, 3])
    m = rng.choice([0, 1, 2, 3])
    s = rng.choice([s for s in (3, 4, 5) if s >= b])
    return composition(Swizzle(b, m, s), Layout((R, C), (C, 1))), R, C


def random_tv(rng: random.Random, R: int, C: int, threads: int, vec: int) -> Optional[Layout]:
    """Threads ``(a, threads/a)`` over the tile, ``vec`` values along a row (coordinate
    stride ``R``), each thread's start at random strides; None if it leaves the tile."""
    a = rng.choice([d for d in (1, 2, 4, 8, 16, 32) if threads % d == 0])
    s1 = rng.choice([0, 1, 2, 3, R, R * vec, 2 * R * vec, 4, 8])
    s2 = rng.choice([0, 1, 2, R, R * vec, a * s1 or 1, 8 * R])
    tv = Layout(((a, threads // a), vec), ((s1, s2), R))
    top = (a - 1) * s1 + (threads // a - 1) * s2 + (vec - 1) * R
    return tv if top < R * C else None


def test_bank_conflicts_agree_with_tensor_layouts_on_small_accesses():
    rng = random.Random(20250)
    compared, refused, warps = 0, 0, 0
    bad: List[str] = []
    for _ in range(CASES * 3):
        smem, R, C = random_smem(rng)
        e = rng.choice([1, 2, 4])
        vec = rng.choice([v for v in (1, 2, 4) if v * e <= 4])
        T = rng.choice([32, 32, 64, 128])
        tv = random_tv(rng, R, C, T, vec)
        if tv is None or R * C * e > 48 * 1024:
            continue
        ins = f"ld.shared.b{8 * e * vec}"
        try:
            ours = banks(smem, tv, ins, element_bits=8 * e)
        except AccessError:  # values not one aligned vector: the oracle has no such notion
            refused += 1
            continue
        m = faithful_oracle_map(smem, tv)
        if m is None:  # an inadmissible composition: the oracle has no faithful input
            refused += 1
            continue
        if T == 32:
            theirs = [tla.bank_conflicts(m, element_bytes=e)["max_ways"]]
        else:
            theirs = [g["max_ways"] for g in tla.per_group_bank_conflicts(m, element_bytes=e)["groups"]]
        mine = ours.wavefronts[:, 0, 0].tolist()
        if mine != theirs:
            bad.append(f"{smem} | {tv} | {ins}: ours {mine}, tensor-layouts {theirs}")
        compared += 1
        warps += len(mine)
        if compared >= CASES:
            break
    assert not bad, "\n".join(bad[:10])
    assert compared >= 200, (compared, refused)


def test_coalescing_agrees_with_tensor_layouts_segment_analysis():
    rng = random.Random(7)
    compared = 0
    bad: List[str] = []
    for _ in range(CASES * 3):
        e = rng.choice([1, 2, 4, 8])
        vec = rng.choice([v for v in (1, 2, 4, 8, 16) if v * e <= 16])
        R, C = rng.choice([(64, 64), (32, 128), (128, 32), (16, 256)])
        ld = C + rng.choice([0, 0, 16, 32, 64, C])
        data = Layout((R, C), (ld, 1)) if rng.random() < 0.8 else Layout((R, C), (1, R + rng.choice([0, 16])))
        tv = random_tv(rng, R, C, 32, vec)
        if tv is None:
            continue
        try:
            ours = coalescing(data, tv, element_bits=8 * e, vector_bytes=vec * e)
        except AccessError:
            continue
        m = faithful_oracle_map(data, tv)
        if m is None:
            continue
        seg = tla.segment_analysis(m, element_bytes=e)
        eff = tla.coalescing_efficiency(m, element_bytes=e)
        mine = (int(ours.sectors[0, 0]), int(ours.lines[0, 0]), int(ours.lines[0, 0]))
        theirs = (seg["segments"], seg["cache_lines"], eff["transactions"])
        if mine != theirs:
            bad.append(f"{data} | {tv} | {vec * e} B: ours {mine}, tensor-layouts {theirs}")
        compared += 1
        if compared >= CASES:
            break
    assert not bad, "\n".join(bad[:10])
    assert compared >= 200, compared


# ----------------------------------------------------------------------------- where they differ
def test_128_bit_load_conflict_free_where_tensor_layouts_counts_4_way():
    """Thread t reads 16 bytes at byte 16 t (TV (32,8):(8,1) of f16): four phases of 8 lanes,
    each covering the 32 banks once.  The oracle merges the 32 lanes' 512 bytes into one
    access and counts 4 words per bank."""
    tv = Layout((32, 8), (8, 1))
    assert tla.bank_conflicts(to_tl(tv), element_bytes=2)["max_ways"] == 4
    r = banks(Layout(256, 1), tv, "ld.shared.v4.b32", element_bits=16)
    assert r.status == "proved" and r.wavefronts.tolist() == [[[1, 1, 1, 1]]]


def test_ldmatrix_conflict_free_where_tensor_layouts_counts_4_way():
    sw = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))
    tv = Layout(((8, 4), 8), ((1, 64), 8))
    assert tla.bank_conflicts(oracle_map(sw, tv), element_bytes=2)["max_ways"] == 4
    assert banks(sw, tv, "ldmatrix.x4", element_bits=16).status == "proved"


def test_first_warp_only_where_the_second_conflicts():
    """bank_conflicts inspects the first 32 threads: the second warp's conflict is not
    seen (per_group_bank_conflicts sees it; banks reports it as the witness).  Here a
    diagonal read (stride 33) through Sw<2,3,6>: warp 1 starts one element later, and the
    swizzle folds three of its lanes onto one bank."""
    data = composition(Swizzle(2, 3, 6), Layout(4096, 1))
    tv = Layout(((32, 2),), ((33, 1),))
    m = faithful_oracle_map(data, tv)
    assert tla.bank_conflicts(m, element_bytes=4)["max_ways"] == 1
    assert [g["max_ways"] for g in tla.per_group_bank_conflicts(m, element_bytes=4)["groups"]] == [1, 3]
    r = banks(data, tv, "ld.shared.b32", element_bits=32)
    assert r.status == "refuted" and r.witness.warp == 1 and r.witness.ways == 3


def test_values_of_several_instructions_are_not_one_access():
    """The oracle takes every value of a thread as one simultaneous access; each
    instruction's lanes are what the hardware serves together.  A warp reads a 32x32 float
    tile one row per instruction (thread t takes column t, its values down the column):
    conflict-free per instruction, 32 words per bank merged."""
    data = Layout((32, 32), (32, 1))
    tv = Layout((32, 32), (32, 1))
    theirs = tla.bank_conflicts(oracle_map(data, tv), element_bytes=4)["max_ways"]
    ours = banks(data, tv, "ld.shared.b32", element_bits=32)
    assert theirs == 32 and ours.status == "proved" and ours.wavefronts.shape == (1, 32, 1)
