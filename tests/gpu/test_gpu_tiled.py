"""TiledMMA / ThrMMA / TiledCopy: coverage proofs and partitions against brute force."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutproof import Layout, make_tensor
from layoutproof.errors import InadmissibleError
from layoutproof.gpu.errors import ProofFailedError
from layoutproof.gpu.isa import ptx_tables as ptx
from layoutproof.gpu.isa.atoms import COPY_ATOMS, MMA_ATOMS
from layoutproof.gpu.isa.tiled import TiledCopy, TiledMMA, prove_tiled_copy, prove_tiled_mma

H16 = MMA_ATOMS["SM80_16x8x16_F32F16F16F32_TN"]

CASES = [
    ("SM80_16x8x16_F32F16F16F32_TN", (2, 2), None),
    ("SM80_16x8x16_F32F16F16F32_TN", (4, 1), None),
    ("SM80_16x8x16_F32F16F16F32_TN", (2, 2), (64, 32, 16)),
    ("SM80_16x8x8_F32TF32TF32F32_TN", (2, 4), (64, 64, 16)),
    ("SM80_8x8x4_F64F64F64F64_TN", (1, 2), None),
    ("SM90_16x8x4_F64F64F64F64_TN", (2, 2), (Layout((8, 2, 2), (1, 16, 8)), None, None)),
    ("SM70_8x8x4_F32F16F16F32_NT", (2, 2), None),
    ("SM70_8x8x4_F32F16F16F32_TN", (2, 2), (32, 32, 4)),
    ("UniversalFMA", (16, 8), None),
]


@pytest.mark.parametrize("name,al,perm", CASES)
def test_tiled_coverage(name, al, perm):
    tm = TiledMMA(MMA_ATOMS[name], al, perm)
    log = prove_tiled_mma(tm)
    assert [p.kind for p in log][0] == "bijective"
    C = tm.get_layoutC_TV()
    TM, TN = tm.tile_shape("C")
    assert C.size == TM * TN and C[0].size == tm.size
    assert sorted(C.eval_all().tolist()) == list(range(TM * TN))


def test_k_split_counts_replication():
    tm = TiledMMA(MMA_ATOMS["SM80_8x8x4_F64F64F64F64_TN"], (2, 2, 2))
    log = prove_tiled_mma(tm)
    assert "exactly 2 times" in log.proofs[0].statement


def _ptx_c(tm, thr, m_tile, n_tile, wm_n):
    """Brute force for SM80 16x8 C with a column-major (AM, AN) warp layout."""
    warp, lane = divmod(thr, 32)
    AM, AN = wm_n
    wm, wn = warp % AM, warp // AM
    out = []
    for rn in range(n_tile):
        for rm in range(m_tile):
            for i in range(4):
                r, c = ptx.m16n8_c(lane, i)
                out.append((rm, rn, i, rm * 16 * AM + wm * 16 + r, rn * 8 * AN + wn * 8 + c))
    return out


@pytest.mark.parametrize("thr", [0, 5, 31, 32, 77, 127])
def test_partition_C_128x128_four_warps_brute_force(thr):
    tm = TiledMMA(H16, (2, 2))
    data = np.arange(128 * 128)
    gC = make_tensor(data, Layout((128, 128)))
    tC = tm.get_slice(thr).partition_C(gC)
    assert tC.shape == ((2, 2), 4, 8)  # 4 values x (128/32) x (128/16) per thread
    assert tC.size == 128
    for rm, rn, i, m, n in _ptx_c(tm, thr, 4, 8, (2, 2)):
        assert tC(i, rm, rn) == m + 128 * n


def test_partition_C_threads_tile_the_matrix():
    tm = TiledMMA(H16, (2, 2))
    seen = np.zeros(128 * 128, dtype=int)
    for thr in range(tm.size):
        tC = tm.get_slice(thr).partition_C(Layout((128, 128)))
        seen[np.asarray(tC.to_numpy(), dtype=int).ravel()] += 1
    assert (seen == 1).all()


def test_partition_A_B_shapes_and_values():
    tm = TiledMMA(H16, (2, 2))
    sA = Layout((64, 32), (32, 1))  # row-major (M, K)
    tA = tm.get_slice(37).partition_A(sA)  # warp 1 -> wm = 1
    assert tA.shape == ((2, 2, 2), 2, 2)
    lane = 5
    for v in range(8):
        r, c = ptx.m16n8k16_f16_a(lane, v)
        assert tA(v, 1, 1) == (32 + 16 + r) * 32 + (16 + c)
    tB = tm.get_slice(64 + 9).partition_B(Layout((32, 32)))  # warp 2 -> wn = 1
    assert tB.shape == ((2, 2), 2, 2)
    for v in range(4):
        k, n = ptx.m16n8k16_f16_b(9, v)
        assert tB(v, 0, 0) == (8 + n) + 32 * k


@settings(max_examples=25, deadline=None)
@given(am=st.sampled_from([1, 2, 4]), an=st.sampled_from([1, 2, 4]), thr=st.integers(0, 10**6))
def test_C_tv_matches_ptx(am, an, thr):
    tm = TiledMMA(H16, (am, an))
    C = tm.get_layoutC_TV()
    t = thr % tm.size
    warp, lane = divmod(t, 32)
    wm, wn = warp % am, warp // am
    TM = tm.tile_mnk[0]
    for i in range(4):
        r, c = ptx.m16n8_c(lane, i)
        assert C(t, i) == (wm * 16 + r) + TM * (wn * 8 + c)


def test_sm70_quadpairs_fill_a_warp():
    tm = TiledMMA(MMA_ATOMS["SM70_8x8x4_F32F16F16F32_NT"], (2, 2))
    assert tm.size == 32
    C = tm.get_layoutC_TV()
    # lanes 4..7 are quadpair 1: the atom at M block 1
    for i in range(8):
        r, c = ptx.m8n8k4_f32_c(4, i)
        assert C(4, i) == (8 + r) + 16 * c


def test_bad_tile_raises():
    with pytest.raises(InadmissibleError):
        TiledMMA(H16, (2, 2), (48, 16, 16))


def test_tiled_copy_cp_async():
    cp = COPY_ATOMS["SM80_CP_ASYNC_CACHEALWAYS_16B"]
    tc = TiledCopy(cp, Layout((16, 8), (8, 1)), Layout((1, 8)), elem_bits=16)
    assert tc.tile_shape == (16, 64)
    log = prove_tiled_copy(tc, Layout((16, 64), (64, 1)))
    assert len(log) == 2
    # thread t holds row t // 8, columns 8*(t % 8) .. +7
    g = make_tensor(np.arange(128 * 64), Layout((128, 64), (64, 1)))
    for t in (0, 9, 127):
        s = tc.get_slice(t).partition_S(g)
        assert s.shape == (8, 8, 1)
        assert [s(v, 2, 0) for v in range(8)] == [(32 + t // 8) * 64 + 8 * (t % 8) + v for v in range(8)]
    with pytest.raises(ProofFailedError):  # column-major source: not vectorizable
        prove_tiled_copy(tc, Layout((16, 64)))


def test_tiled_copy_bad_values():
    cp = COPY_ATOMS["SM80_CP_ASYNC_CACHEALWAYS_16B"]
    with pytest.raises(InadmissibleError):
        TiledCopy(cp, Layout((16, 8), (8, 1)), Layout((1, 4)), elem_bits=16)
