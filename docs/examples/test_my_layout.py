"""Example: theorem-style tests of your own layouts with layoutproof's testing kit.

Run it with ``pytest docs/examples/test_my_layout.py`` (the repository's own test run does
not collect docs/; tests/verify/test_plugin.py runs this file and checks that it passes).

The layouts are those of an SM80 fp16 GEMM: a 128x64 shared-memory tile of 128-byte
rows swizzled with ``Sw<3,3,3>``, and the thread-value layout of the accumulator of
``mma.sync.m16n8k8``.  The helper ``contiguous_prefix`` stands for code of your own that
inspects layouts.
"""

from __future__ import annotations

from layoutproof import Layout, Swizzle, coalesce, composition, left_inverse, tile_to_shape, verify
from layoutproof.verify.strategies import swizzled_layouts
from layoutproof.verify.theorem import Family, theorem

ELEMENT_BYTES = 2  # fp16


def smem_tile(rows: int, cols: int = 64) -> object:
    """A K-major fp16 shared-memory tile of ``rows`` x ``cols`` (cols a multiple of 64):
    8x64 atoms of 128-byte rows, swizzled with Sw<3,3,3> as in CUTLASS's SM80 GEMMs."""
    atom = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))
    return tile_to_shape(atom, (rows, cols))


SMEM = smem_tile(128)

# mma.sync.m16n8k8 (f16 -> f32): the C fragment, (thread, value) -> m + 16*n
TV_C = Layout(((4, 8), (2, 2)), ((32, 1), (16, 8)))


def bank_group(offset: int) -> int:
    """Which of the 8 groups of 4 banks (16 bytes) of a 128-byte line holds the element."""
    return offset * ELEMENT_BYTES // 16 % 8


# ----------------------------------------------------------------------------- the tile
@theorem(rows=Family.values(8, 16, 64, 128), cols=Family.values(64, 128))
def test_smem_tile_is_a_bijection(rows, cols):
    """Every element of the tile has its own offset, and the tile fills [0, rows*cols)."""
    tile = smem_tile(rows, cols)
    offsets = sorted(tile(i) for i in range(tile.size))
    assert offsets == list(range(rows * cols))


@theorem(row=Family.values(*range(0, 128, 8)), chunk=Family.values(*range(8)))
def test_ldmatrix_is_bank_conflict_free(row, chunk):
    """ldmatrix: 8 threads read 16 bytes each, from rows row..row+7 at column 8*chunk.
    The swizzle puts the 8 reads in 8 different bank groups."""
    groups = {bank_group(SMEM(row + i, 8 * chunk)) for i in range(8)}
    assert len(groups) == 8, groups


# ----------------------------------------------------------------------------- the TV layout
@theorem(lane=Family.values(*range(32)), v=Family.values(*range(4)))
def test_accumulator_layout_matches_the_ptx_table(lane, v):
    """The PTX ISA's fragment table: row = lane/4 (+8 for c2, c3), col = 2*(lane%4) + v%2."""
    row = lane // 4 + 8 * (v // 2)
    col = 2 * (lane % 4) + v % 2
    assert TV_C(lane, v) == row + 16 * col


def test_accumulator_layout_is_a_bijection_onto_the_tile():
    """A plain test: the kit changes nothing for functions it does not decorate."""
    assert verify.equal(composition(TV_C, left_inverse(TV_C)), Layout(128, 1))


# ----------------------------------------------------------------------------- your own helper
def contiguous_prefix(L: Layout) -> int:
    """How many elements, from coordinate 0 on, sit at consecutive offsets."""
    C = coalesce(L)
    s, d = (C.shape, C.stride) if isinstance(C.shape, tuple) else ((C.shape,), (C.stride,))
    return s[0] if d[0] == 1 else 1


@theorem(bound=dict(rank=3, extent=3, stride=3), examples=100)
def test_contiguous_prefix_is_contiguous(L):
    """Exhaustive over every flat layout of rank <= 3 with extents <= 3 and strides <= 3,
    then 100 random (nested, larger) layouts."""
    n = contiguous_prefix(L)
    assert all(L(i) == L(0) + i for i in range(n))


@theorem(Family.composition_pairs(rank=2, extent=2, stride=2), examples=100)
def test_composition_meets_its_postcondition(A, B):
    """A pair family fills two parameters: every admissible (A, B) within the bound."""
    assert verify.postcondition("composition", composition(A, B), A, B)


@theorem(C=swizzled_layouts(max_bits=6), examples=50)
def test_swizzled_tiles_are_bijections(C):
    """Hypothesis only (a strategy has no exhaustive cases): every swizzled compact tile
    whose size is a multiple of the swizzle's is a bijection onto [0, size)."""
    n = C.size
    assert sorted(C(i) for i in range(n)) == list(range(n))


@theorem(Family.swizzles(max_bits=6), block=Family.values(0, 1, 5), examples=50)
def test_a_swizzle_keeps_each_aligned_block(sw, block):
    """Every swizzle with M + B + |S| <= 6 (then random ones up to 12 bits): the offsets of
    an aligned block of 2**(M+B+|S|) stay in that block (why the tiles above stay bijective)."""
    lo, hi = block * sw.size, (block + 1) * sw.size
    assert all(lo <= sw(o) < hi for o in range(lo, hi))


# ----------------------------------------------------------------------------- symbolic claims
@theorem.symbolic(assume=["M % 64 == 0", "N % 64 == 0"])
def test_tiling_a_matrix_into_64x64_blocks(M, N):
    """For every M, N divisible by 64 (proved by SymPy/Z3, not sampled)."""
    from layoutproof import zipped_divide

    return (
        zipped_divide(Layout((M, N), (1, M)), (64, 64)),
        Layout(((64, 64), (M / 64, N / 64)), ((1, M), (64, 64 * M))),
    )


test_composition_with_a_row = theorem.identity(
    lambda M, N: composition(Layout((M, N), (N, 1)), Layout(4, 1)),
    lambda M, N: Layout(4, N),
    assume="M % 4 == 0",
)
