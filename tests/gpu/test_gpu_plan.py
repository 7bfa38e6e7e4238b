"""GEMM launch plans (host/rule.py, host/plan.py): the default-choice rule, operand
layouts, the packed parameter block, the launch decision as data, and -- with a fake CuPy
on any machine -- that a plan packs exactly the parameters the generated kernel's own
signature declares; with a GPU,
plans against a float64 reference, pointer changes, and CUDA graph capture."""

from __future__ import annotations

import ctypes
import dataclasses
import re
import types
import warnings

import numpy as np
import pytest

from layoutproof.gpu.config import GemmConfig, GemmProblem
from layoutproof.gpu.errors import GemmInputError
from layoutproof.gpu.host import cache, device, runtime
from layoutproof.gpu.host import rule as P
from layoutproof.gpu.kernels.mma_epilogue import MmaEpilogueConfig
from layoutproof.gpu.kernels.splitk import FixupEpilogueConfig, SplitKConfig
from layoutproof.gpu.kernels.wgmma import Sm90Config

# ============================================================================ the rule
SHAPES = [
    (m, n, k)
    for m in (1, 16, 64, 128, 256, 1000, 4096, 8192)
    for n in (64, 4096, 11008, 28672)
    for k in (64, 4096, 14336)
]


@pytest.mark.parametrize("hopper, tma", [(True, True), (True, False), (False, False)])
def test_choose_config_returns_a_valid_candidate_minimizing_the_model(hopper, tma):
    cands = P.default_candidates(tma) if hopper else P.mma_sync_candidates()
    for c in cands:
        c.validate()
    for m, n, k in SHAPES:
        cfg = P.choose_config(m, n, k, GemmProblem(), hopper=hopper, tma=tma)
        best = min(P.estimate_us(c, m, n, k) for c in cands)
        if P.a_box_rows(cfg) != 64:  # P.SHORT_A_RULE (tests/gpu/test_gpu_short_a.py)
            rows = P.short_a_rows(m, GemmProblem())
            assert hopper and tma and rows is not None and m <= rows == P.a_box_rows(cfg)
            continue
        if isinstance(cfg, SplitKConfig) and cfg.reduction == "cluster":
            # the cluster reduction replaces a plane split where P.cluster_split says
            assert hopper and tma and cfg == P.cluster_split(m, n, k)
            continue
        if isinstance(cfg, SplitKConfig):
            # split-K replaces the model's unsplit minimum only on Hopper with TMA, where
            # that minimum leaves SMs idle (or the output is a decode shape of at most
            # SPLITK_MODEL["decode_m"] rows) and the split beats it by the margin
            assert hopper and tma and cfg.base in cands and cfg in P.splitk_candidates(m, n, k, cands)
            top = next(c for c in cands if P.estimate_us(c, m, n, k) == best)
            gated = -(-m // top.bm) * -(-n // top.bn) <= P.SPLITK_MODEL["gate"] * 132
            assert gated or m <= P.SPLITK_MODEL["decode_m"]
            assert P.estimate_us(cfg, m, n, k) * P.SPLITK_MODEL["margin"] < best
            continue
        if hopper and tma and cfg.schedule == "pingpong":  # P.PINGPONG_RULE's swap of the minimum
            top = next(c for c in cands if P.estimate_us(c, m, n, k) == best)
            tiles = -(-m // top.bm) * -(-n // top.bn)
            assert P.pingpong_swap(top, k, GemmProblem(), False, (tiles, 132)) == cfg
            continue
        if hopper and tma and cfg in P.ROW64_RULE["tiles"]:  # it replaces a 64-row minimum
            top = next(c for c in cands if P.estimate_us(c, m, n, k) == best)
            assert (top.bm, top.bn) == P.ROW64_RULE["replaces"] and m <= P.ROW64_RULE["max_m"]
            assert P.estimate_us(cfg, m, n, k) < best
            continue
        assert cfg in cands
        t = P.estimate_us(cfg, m, n, k)
        assert t == best


def test_choose_config_big_squares_take_the_large_tile_small_problems_smaller_tiles():
    big = P.choose_config(8192, 8192, 8192, hopper=True, tma=True)
    assert big == P.pingpong_pick(5)  # the 128x256 pick, swapped for the ping-pong kernel
    big = P.choose_config(4096, 4096, 4096, hopper=True, tma=True)
    assert (big.bm, big.bn) == (128, 256)
    # a decode shape has 1 row of tiles: the rule must spread the work over more SMs
    # (narrower tiles, or split-K's (tile, k chunk) units)
    dec = P.choose_config(16, 4096, 4096, hopper=True, tma=True)
    units = -(-4096 // dec.bn) * getattr(dec, "splits", 1)
    assert dec.bm == 64 and units >= 64
    # the number of persistent CTAs a tile shape fills never decides alone: the model is
    # monotone in K for a fixed config
    for c in P.hopper_candidates(True):
        assert P.estimate_us(c, 512, 512, 1024) < P.estimate_us(c, 512, 512, 2048)


def test_mma_decode_rule_takes_the_16_row_mma_sync_tiles_only_where_measured_faster():
    # the shapes measured faster with an unsplit 16-row mma.sync tile (the H100, and the H200:
    # 16x4096x11008 23.5 us against the split's 27.3-27.7); 14336-16384 columns with two
    # resident CTAs per SM, measured on the H200 against the picks they replaced (1x14336x4096
    # 29.6-30.6 us against 33.1-33.5; 16x14336x4096 30.1 against 34.1; 4x14336x8192 57.2
    # against 62.9; 1x16384x4096 31.9 against 37.7; 16x16384x8192 62.1 against 69.6;
    # 8x13824x4096 29.1 against 35.4; 16x14336x14336 98.6 against 104.5; f16, bf16 alike)
    want = {
        (16, 4096, 4096): "16x32x128_w1x2_s8_auto_g8",
        (16, 4096, 11008): "16x32x128_w1x2_s8_auto_g8",
        (16, 4096, 14336): "16x32x128_w1x2_s8_auto_g8",
        (16, 8192, 8192): "16x64x64_w1x4_s8_auto_g8",
        (1, 8192, 8192): "16x64x64_w1x4_s8_auto_g8",
        (16, 8192, 28672): "16x64x64_w1x4_s8_auto_g8",
        (1, 14336, 4096): "16x64x64_w1x4_s8_auto_g8",
        (16, 14336, 4096): "16x64x64_w1x4_s8_auto_g8",
        (4, 14336, 8192): "16x64x64_w1x4_s8_auto_g8",
        (1, 16384, 4096): "16x64x64_w1x4_s8_auto_g8",
        (16, 16384, 8192): "16x64x64_w1x4_s8_auto_g8",
        (8, 13824, 4096): "16x64x64_w1x4_s8_auto_g8",
        (16, 14336, 14336): "16x64x64_w1x4_s8_auto_g8",
    }
    for (m, n, k), key in want.items():
        for dt in ("f16", "bf16"):
            prob = GemmProblem(dtype=dt, out_dtype=dt)
            cfg = P.choose_config(m, n, k, prob, hopper=True, tma=True, mma=True)
            assert isinstance(cfg, GemmConfig) and cfg.key() == key, (m, n, k, dt)
            assert cfg == P.mma_decode(m, n, k, prob)
            # one CTA per column tile, each streaming the whole K: no split, between 0.9 and 1.0 of
            # the SMs, or (the 4-warp tile) between 0.8 and 1.0 of two resident CTAs per SM
            tiles = -(-n // cfg.bn)
            assert cfg.bm == 16 and (
                0.9 * 132 <= tiles <= 132 or (cfg.bn == 64 and 0.8 * 264 <= tiles <= 264)
            )
            # without mma=True (path="wgmma", the CLI's wgmma branch) the wgmma rule's pick is
            # unchanged; with an epilogue, path='auto' runs this tile with the epilogue in its
            # own pair stores (mma_epilogue.MmaEpilogueConfig; with a C input, into one f32
            # plane that the fix-up kernel turns into C: rule.decide)
            old = P.choose_config(m, n, k, prob, hopper=True, tma=True)
            assert not isinstance(old, GemmConfig)
            ep = P.choose_config(m, n, k, prob, hopper=True, tma=True, mma=True, epilogue=True)
            assert isinstance(ep, MmaEpilogueConfig) and ep.base == cfg
            wg = P.choose_config(m, n, k, prob, hopper=True, tma=True, epilogue=True)
            assert not isinstance(wg, FixupEpilogueConfig)
    # the 2-warp 16x32x128 tile with fewer than 16 rows (a partial tile's guarded loads): the
    # split, measured faster on the H200 (1x4096x11008 26.9 us against 31.4; 4x4096x11008 27.4-27.5
    # against 30.9-31.3; 1x4096x8192 21.1 against 23.8; 8x4096x14336 33.8 against 39.3;
    # 12x4096x28672 63.3 against 75.3; f16, bf16 alike), though the H100 had measured the tile
    # faster on the first three
    for shape in [
        (1, 4096, 11008),
        (4, 4096, 11008),
        (8, 4096, 11008),
        (1, 4096, 8192),
        (8, 4096, 14336),
        (12, 4096, 28672),
    ]:
        assert P.mma_decode(*shape) is None, shape
        got = P.choose_config(*shape, GemmProblem(), hopper=True, tma=True, mma=True)
        assert isinstance(got, SplitKConfig) and got.reduction == "kernel", shape
    # measured slower (1 or 8 rows at K = 4096: the partial tile's guarded loads) or not measured:
    # unchanged
    for shape in [
        (1, 4096, 4096),
        (8, 4096, 4096),
        (15, 4096, 4096),
        (8, 4096, 6144),
        (17, 4096, 4096),
        (64, 4096, 4096),
        (16, 2048, 4096),
        (16, 11008, 4096),
        (1, 8192, 4096),
        (16, 17000, 4096),
        (16, 4096, 2048),
        (4096, 4096, 4096),
    ]:
        assert P.mma_decode(*shape) is None, shape
        got = P.choose_config(*shape, GemmProblem(), hopper=True, tma=True, mma=True)
        assert got == P.choose_config(*shape, GemmProblem(), hopper=True, tma=True), shape
    # other operand majors, a batched problem, another GPU, explicit candidates: never
    for prob in (GemmProblem(a_major="m"), GemmProblem(b_major="k"), GemmProblem(batch="ab")):
        assert P.mma_decode(16, 4096, 4096, prob) is None
    assert P.choose_config(16, 4096, 4096, hopper=False, tma=False, mma=True) in P.mma_sync_candidates()
    cands = P.hopper_candidates(True)
    assert P.choose_config(16, 4096, 4096, hopper=True, tma=True, mma=True, candidates=cands) in cands
    with pytest.raises(GemmInputError, match="must be a positive int"):
        P.mma_decode(16, 0, 4096)


def test_mma_decode_rule_takes_32_row_tiles_for_exactly_32_rows():
    # measured on the H200 against the wgmma picks they replace (device time, f16 / bf16):
    # 32x4096x14336 31.9 us against the split's 35.0; 32x4096x11008 25.3 against 28.8-29.0;
    # 32x4096x28672 61.6 against 64.1; 32x8192x8192 33.6 against 45.2; 32x28672x8192
    # 111.6-112.4 against 118.6-118.8
    want = {
        (32, 4096, 14336): "32x32x128_w2x2_s8_auto_g8",
        (32, 4096, 11008): "32x32x128_w2x2_s8_auto_g8",
        (32, 4096, 8192): "32x32x128_w2x2_s8_auto_g8",
        (32, 4096, 28672): "32x32x128_w2x2_s8_auto_g8",
        (32, 8192, 8192): "32x64x64_w1x4_s8_auto_g8",
        (32, 28672, 8192): "32x128x64_w2x4_s6_auto_g8",
    }
    for (m, n, k), key in want.items():
        for dt in ("f16", "bf16"):
            prob = GemmProblem(dtype=dt, out_dtype=dt)
            cfg = P.choose_config(m, n, k, prob, hopper=True, tma=True, mma=True)
            assert isinstance(cfg, GemmConfig) and cfg.key() == key, (m, n, k, dt)
            assert cfg == P.mma_decode(m, n, k, prob) and cfg.bm == 32
            # a full tile of rows: every warp's rows are in the output (no guarded A loads)
            assert cfg.bm // cfg.warps_m in (16, 32)
            # one resident CTA per column tile on 0.9-1.0 of the SMs, two on 0.8-1.0 of twice the
            # SMs, or the widest tile over at least 1.5 waves
            tiles = -(-n // cfg.bn)
            assert 0.9 * 132 <= tiles <= 132 or 0.8 * 264 <= tiles <= 264 or (cfg.bn == 128 and tiles >= 198)
    # 17-31 rows (partial 32-row tiles measured 20-25% slower than the split: 17, 20, 24 rows),
    # column counts no tile fills, K below min_k32 (the wgmma pick with A's 32-row box was
    # faster: 32x4096x4096 9.7 us against the tile's 10.5), other layouts: the wgmma rule's pick
    for shape in [
        (24, 4096, 14336),
        (17, 4096, 14336),
        (20, 4096, 8192),
        (32, 11008, 4096),
        (32, 6144, 8192),
        (32, 4096, 4096),
        (32, 14336, 4096),
        (32, 4096, 2048),
        (33, 4096, 14336),
    ]:
        assert P.mma_decode(*shape) is None, shape
        got = P.choose_config(*shape, GemmProblem(), hopper=True, tma=True, mma=True)
        assert got == P.choose_config(*shape, GemmProblem(), hopper=True, tma=True), shape
    for prob in (GemmProblem(a_major="m"), GemmProblem(b_major="k"), GemmProblem(batch="ab")):
        assert P.mma_decode(32, 4096, 14336, prob) is None


def test_mma_decode_configs_generate_and_prove():
    from layoutproof.gpu.kernels.mma_sync import generate

    seen = set()
    for m, n, k in [
        (16, 4096, 4096),
        (16, 8192, 8192),
        (32, 4096, 8192),
        (32, 8192, 8192),
        (32, 28672, 8192),
    ]:
        for dt in ("f16", "bf16"):
            prob = GemmProblem(dtype=dt, out_dtype=dt)
            cfg = P.mma_decode(m, n, k, prob)
            kern = generate(cfg, prob)
            assert kern.threads == cfg.threads and kern.smem_bytes == cfg.smem_bytes <= 227 * 1024
            assert len(kern.proofs) > 0
            seen.add(cfg.key())
    assert len(seen) == 5


def test_choose_config_bad_input_is_a_gemm_input_error():
    for bad in [(0, 1, 1), (1, -3, 1), (1, 1, 2.5)]:
        with pytest.raises(GemmInputError, match="must be a positive int"):
            P.choose_config(*bad, hopper=True, tma=True)
    with pytest.raises(GemmInputError, match="sms"):
        P.choose_config(8, 8, 8, hopper=True, tma=True, sms=0)


def test_every_model_entry_is_a_candidate_key():
    cands = P.default_candidates(True) + P.default_candidates(False) + P.ROW64_RULE["tiles"]
    assert {c.key() for c in cands} == set(P.SM90_MODEL["rates"])
    assert {c.key() for c in P.mma_sync_candidates()} == set(P.SM80_MODEL["rates"])


# ============================================================================ operands
@pytest.mark.parametrize(
    "rows, cols, strides, ptr, want",
    [
        (64, 4096, (8192, 2), 0, ("cols", 4096, False)),  # row-major
        (64, 4096, (2, 128), 256, ("rows", 64, False)),  # column-major
        (64, 4095, (8190, 2), 0, ("cols", 4095, True)),  # ld not a multiple of 8
        (64, 4096, (8192, 2), 8, ("cols", 4096, True)),  # base not 16-byte aligned
        (64, 64, (256, 4), 0, ("cols", -1, True)),  # no unit stride
        (1, 1, (2, 2), 0, ("cols", 1, True)),  # one element
        (1, 80, (160, 2), 0, ("cols", 80, False)),
    ],
)
def test_operand_layout(rows, cols, strides, ptr, want):
    assert P.operand_layout(rows, cols, *strides, 2, ptr) == want


# ============================================================================ parameters
def test_param_buffer_aligns_and_reads_back_through_the_pointer_array():
    kinds = ["i32", "tmap", "ptr", "i32", "i64", "tmap", "i32"]
    pb = P.ParamBuffer(kinds)
    ptrs = (ctypes.c_uint64 * len(kinds)).from_address(pb.address)
    for i, kd in enumerate(kinds):
        align = {"i32": 4, "i64": 8, "ptr": 8, "tmap": 64}[kd]
        assert ptrs[i] % align == 0, (i, kd)
    rng = np.random.default_rng(0)
    vals = []
    for i, kd in enumerate(kinds):
        if kd == "tmap":
            v = rng.integers(0, 256, 128, dtype=np.uint8)
            vals.append(v.tobytes())
        else:
            v = int(rng.integers(-(2**31), 2**31)) if kd == "i32" else int(rng.integers(0, 2**62))
            vals.append(v)
        pb.set(i, v)
    assert pb.values() == vals
    # no two parameters overlap
    spans = sorted(
        (ptrs[i], ptrs[i] + {"i32": 4, "i64": 8, "ptr": 8, "tmap": 128}[kd]) for i, kd in enumerate(kinds)
    )
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))


def test_param_buffer_rejects_unknown_kinds():
    with pytest.raises(GemmInputError, match="unknown parameter kind"):
        P.ParamBuffer(["ptr", "float"])


def test_slow_path_warning_is_given_once(monkeypatch):
    monkeypatch.setattr(P, "_WARNED", {})
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        assert P.warn_slow_path("x", "slow")
        assert not P.warn_slow_path("x", "slow")
    assert [type(x.message) for x in w] == [P.SlowPathWarning]


# ============================================================================ a fake CuPy
_TYPES = [("lp_tmap_t", "tmap"), ("*", "ptr"), ("long long", "i64"), ("int", "i32"), ("float", "f32")]


def _signature(source: str, name: str):
    """The kernel's parameter kinds, read off its generated source."""
    m = re.search(r'extern "C" __global__[^\n]*\n?\s*' + re.escape(name) + r"\(([^)]*)\)", source)
    assert m, "kernel signature not found"
    kinds = []
    for p in m.group(1).split(","):
        kinds.append(next(k for t, k in _TYPES if t in p))
    return kinds


class _FakeArray:
    def __init__(self, cp, shape, strides, dtype, ptr, dev=0):
        self._cp = cp
        self.shape, self.strides, self.dtype = tuple(shape), tuple(strides), np.dtype(dtype)
        self.itemsize = self.dtype.itemsize
        self.ndim = len(shape)
        self.data = types.SimpleNamespace(ptr=ptr, device_id=dev)
        self.device = dev

    @property
    def T(self):
        return _FakeArray(
            self._cp, self.shape[::-1], self.strides[::-1], self.dtype, self.data.ptr, self.device
        )

    def __setitem__(self, idx, value):
        self._cp.copies.append((self.data.ptr, getattr(value, "data", None)))


class _ExternalStream:
    """CuPy's ExternalStream in the fake: a context that makes ``ptr`` the current stream
    (``cp.stream``, where a test keeps the current stream)."""

    def __init__(self, cp, ptr):
        self.cp, self.ptr = cp, ptr

    def __enter__(self):
        self.saved, self.cp.stream = self.cp.stream, self.ptr

    def __exit__(self, *exc):
        self.cp.stream = self.saved


class _FakeCupy:
    """Just enough of CuPy for a plan: allocation, device facts, RawKernel, launchKernel."""

    def __init__(self, cc="90"):
        cp = self
        self.ndarray = _FakeArray
        self.float16, self.float32 = np.float16, np.float32
        self.next_ptr = 1 << 20
        self.launches, self.copies, self.functions = [], [], {}

        def dtype(name):
            raise TypeError("no bfloat16 in the fake")

        self.dtype = dtype

        class RawKernel:
            def __init__(self, source, name, options=()):
                self.source, self.name = source, name
                fn = types.SimpleNamespace(ptr=0x1000 + len(cp.functions), kinds=_signature(source, name))
                cp.functions[fn.ptr] = fn
                self.kernel = fn

            def compile(self):
                pass

        def launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
            kinds = cp.functions[f].kinds
            ptrs = (ctypes.c_uint64 * len(kinds)).from_address(params)
            vals = []
            for p, kd in zip(ptrs, kinds):
                if kd == "tmap":
                    vals.append(ctypes.string_at(p, 128))
                else:
                    ct = {
                        "ptr": ctypes.c_uint64,
                        "i32": ctypes.c_int32,
                        "i64": ctypes.c_int64,
                        "f32": ctypes.c_float,
                    }[kd]
                    vals.append(ct.from_address(p).value)
            cp.launches.append(
                dict(
                    grid=(gx, gy, gz), block=(bx, by, bz), smem=smem, stream=stream, kinds=kinds, values=vals
                )
            )

        self.RawKernel = RawKernel
        dev = types.SimpleNamespace(id=0, compute_capability=cc, attributes={"MultiProcessorCount": 132})
        self.cuda = types.SimpleNamespace(
            Device=lambda i=0: dev,
            runtime=types.SimpleNamespace(
                getDevice=lambda: 0,
                getDeviceCount=lambda: 1,
                getDeviceProperties=lambda i: {"name": b"Fake H100"},
            ),
            driver=types.SimpleNamespace(launchKernel=launch),
            get_current_stream=lambda: types.SimpleNamespace(
                ptr=0x5, synchronize=lambda: None, is_capturing=lambda: False
            ),
        )

    def _alloc(self, nbytes):
        p = self.next_ptr
        self.next_ptr += -(-max(nbytes, 1) // 256) * 256 + 256
        return p

    def empty(self, shape, dtype, order="C"):
        it = np.dtype(dtype).itemsize
        r, c = shape
        strides = (c * it, it) if order == "C" else (it, r * it)
        return _FakeArray(self, shape, strides, dtype, self._alloc(r * c * it))

    def zeros(self, shape, dtype):
        return self.empty(shape, dtype)

    def array(self, shape, dtype=np.float16, order="C", offset=0, ld=None):
        r, c = shape
        it = np.dtype(dtype).itemsize
        ld = ld or (c if order == "C" else r)
        strides = (ld * it, it) if order == "C" else (it, ld * it)
        return _FakeArray(self, shape, strides, dtype, self._alloc(ld * max(r, c) * it) + offset)


@pytest.fixture
def fake(monkeypatch, tmp_path):
    cp = _FakeCupy()
    monkeypatch.setenv("LAYOUTPROOF_CACHE", str(tmp_path))
    monkeypatch.setattr(device, "_CUPY", [cp])
    monkeypatch.setattr(device, "_DEVICE_FACTS", {})
    monkeypatch.setattr(cache, "_MODULES", {})
    monkeypatch.setattr(runtime, "_PLANS", {})
    monkeypatch.setattr(device, "tma_available", lambda: False)
    monkeypatch.setattr(P, "_WARNED", {"tma": True})  # warned already (one test resets it)
    device._sm_count_of.cache_clear()
    yield cp
    device._sm_count_of.cache_clear()


def test_fake_plan_packs_the_kernels_own_signature(fake):
    a = fake.array((300, 512))
    b = fake.array((512, 200))
    P._WARNED.clear()
    with pytest.warns(P.SlowPathWarning, match="cuda-python"):
        c = runtime.gemm(a, b)
    (ln,) = fake.launches
    cfg = runtime.last_launch["config"]
    assert isinstance(cfg, Sm90Config) and cfg.loader == "cp.async"
    assert ln["kinds"] == ["ptr", "ptr", "ptr", "i32", "i32", "i32", "i64", "i64", "i64", "i32"]
    pa, pb, pc, m, n, k, lda, ldb, ldc, cvec = ln["values"]
    assert (pa, pb, pc) == (a.data.ptr, b.data.ptr, c.data.ptr)
    assert (m, n, k, lda, ldb, ldc, cvec) == (300, 200, 512, 512, 200, 200, 1)
    assert ln["block"] == (runtime.last_launch["plan"].threads, 1, 1) and ln["stream"] == 0x5
    assert ln["grid"] == runtime.last_launch["plan"].kernel.grid(300, 200)


def test_fake_plan_is_reused_and_tracks_new_pointers(fake):
    a, b = fake.array((256, 128)), fake.array((128, 64))
    runtime.gemm(a, b)
    plan = runtime.last_launch["plan"]
    a2, b2 = fake.array((256, 128)), fake.array((128, 64))
    out = fake.empty((256, 64), np.float16)
    runtime.gemm(a2, b2, out)  # a new out signature: a second plan
    runtime.gemm(a2, b2)  # the first plan again, new pointers
    assert runtime.last_launch["plan"] is plan
    assert len(runtime._PLANS) == 2
    assert fake.launches[-1]["values"][:2] == [a2.data.ptr, b2.data.ptr]
    assert fake.launches[1]["values"][2] == out.data.ptr


def test_fake_plan_column_major_output_swaps_the_operands(fake):
    a, b = fake.array((96, 40)), fake.array((40, 72), order="F")
    out = fake.empty((96, 72), np.float32, order="F")
    runtime.gemm(a, b, out, out_dtype="f32", path="wgmma")
    pa, pb, pc, m, n, k, lda, ldb, ldc, _ = fake.launches[-1]["values"]
    # C^T (72 x 96) = B^T (72 x 40, row-major) @ A^T (40 x 96, column-major)
    assert (pa, pb, pc) == (b.data.ptr, a.data.ptr, out.data.ptr)
    assert (m, n, k, lda, ldb, ldc) == (72, 96, 40, 40, 40, 96)
    assert runtime.last_launch["problem"].key() == "ak_bk_f16_f32"


def test_fake_plan_copies_misaligned_operands_each_call(fake, monkeypatch):
    monkeypatch.setitem(P.ELEM_RULE, "max_us", 0.0)  # the copy path, not the in-place loads
    a = fake.array((64, 100), offset=2)  # not 16-byte aligned, ld 100
    b = fake.array((100, 64))
    runtime.gemm(a, b, path="wgmma")
    pa, pb, *_rest = fake.launches[-1]["values"]
    assert pa != a.data.ptr and pb == b.data.ptr and pa % 16 == 0
    assert _rest[4] == 104  # lda padded to a multiple of 8
    assert any(dst == pa for dst, _ in fake.copies)


def test_fake_plan_checks_its_arguments(fake):
    a, b = fake.array((64, 64)), fake.array((64, 64))
    plan = runtime.gemm_plan(a, b)
    plan(a, b)
    with pytest.raises(GemmInputError, match="differs from the plan"):
        plan(fake.array((64, 64), order="F"), b)
    with pytest.raises(GemmInputError, match="differs from the plan"):
        plan(a, fake.array((64, 64), offset=8))
    with pytest.raises(GemmInputError, match="must be cupy arrays"):
        plan(np.zeros((64, 64)), b)
    with pytest.raises(GemmInputError, match="new C-order output"):
        plan(a, b, fake.empty((64, 64), np.float32))
    with pytest.raises(GemmInputError, match="config must be"):
        runtime.gemm(a, b, config=[1])
    with pytest.raises(GemmInputError, match="inner dimensions"):
        runtime.gemm(a, fake.array((32, 64)))


def test_fake_plan_mma_sync_path_and_explicit_configs(fake):
    a, b = fake.array((128, 64)), fake.array((64, 256))
    runtime.gemm(a, b, path="mma.sync")
    assert isinstance(runtime.last_launch["config"], GemmConfig)
    assert runtime.last_launch["config"] in P.mma_sync_candidates()
    cfg = Sm90Config(bm=64, bn=128, stages=4)
    runtime.gemm(a, b, config=cfg)
    assert runtime.last_launch["config"] == cfg
    assert fake.launches[-1]["values"][3:6] == [128, 256, 64]


def test_fake_plan_runs_the_mma_decode_tile_one_cta_per_column_tile(fake):
    a, b = fake.array((16, 4096)), fake.array((4096, 4096))
    cfg = P.mma_decode(16, 4096, 4096)
    runtime.gemm(a, b, config=cfg)
    assert runtime.last_launch["config"] == cfg
    launch = fake.launches[-1]
    assert launch["values"][3:6] == [16, 4096, 4096]
    assert launch["grid"][0] * launch["grid"][1] * launch["grid"][2] == 4096 // 32
    assert launch["block"] == (cfg.threads, 1, 1)
    assert len(fake.launches) == 1  # no fix-up kernel, no workspace


# ============================================================================ on a GPU
gpu = pytest.mark.skipif(not runtime.gpu_available(), reason="no CUDA GPU / CuPy")


def _cp():
    return pytest.importorskip("cupy")


def _ints(cp, shape, seed, order="C"):
    x = cp.random.default_rng(seed).integers(-3, 4, size=shape).astype(cp.float16)
    return cp.asfortranarray(x) if order == "F" else x


@gpu
@pytest.mark.parametrize(
    "m, n, k", [(1, 4096, 4096), (16, 1000, 512), (300, 520, 136), (1024, 1024, 1024), (130, 8, 4096)]
)
def test_gpu_default_choice_matches_float64(m, n, k):
    cp = _cp()
    for ao, bo in (("C", "C"), ("F", "C"), ("C", "F")):
        a, b = _ints(cp, (m, k), m + k, ao), _ints(cp, (k, n), n, bo)
        c = cp.full((m, n), cp.nan, dtype=cp.float32)
        runtime.gemm(a, b, c, out_dtype="f32")
        ref = a.astype(cp.float64) @ b.astype(cp.float64)
        assert not bool(cp.isnan(c).any())
        assert float(cp.abs(c - ref).max()) == 0.0, (m, n, k, ao, bo, runtime.last_launch["config"])


@gpu
@pytest.mark.parametrize(
    "m, n, k", [(16, 4096, 4096), (1, 4096, 11008), (13, 4104, 11008), (16, 8192, 8192), (1, 14336, 4096)]
)
def test_gpu_mma_decode_tile_matches_float64_eager_and_in_a_graph(m, n, k):
    cp = _cp()
    cfg = P.mma_decode(16, n, k)  # the rule's tile for the shape's columns (13 rows: a partial tile)
    a, b = _ints(cp, (m, k), m + k), _ints(cp, (k, n), n)
    c = cp.full((m, n), cp.nan, dtype=cp.float32)
    plan = runtime.gemm_plan(a, b, c, out_dtype="f32", config=cfg)
    plan(a, b, c)
    ref = a.astype(cp.float64) @ b.astype(cp.float64)
    assert float(cp.abs(c - ref).max()) == 0.0
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        plan(a, b, c)
        g = s.end_capture()
    c.fill(cp.nan)
    cp.cuda.Device().synchronize()
    g.launch(stream=s)
    s.synchronize()
    assert not bool(cp.isnan(c).any()) and float(cp.abs(c - ref).max()) == 0.0


@gpu
def test_gpu_plan_follows_new_pointers_and_is_reused():
    cp = _cp()
    a, b = _ints(cp, (256, 512), 1), _ints(cp, (512, 384), 2)
    plan = runtime.gemm_plan(a, b, out_dtype="f32")
    for seed in range(4):  # new operands (new base addresses) each time
        a2, b2 = _ints(cp, (256, 512), 10 + seed), _ints(cp, (512, 384), 20 + seed)
        c = plan(a2, b2)
        ref = a2.astype(cp.float64) @ b2.astype(cp.float64)
        assert float(cp.abs(c - ref).max()) == 0.0
        # and the first operands again (a cached tensor map)
        c = plan(a, b)
        assert float(cp.abs(c - a.astype(cp.float64) @ b.astype(cp.float64)).max()) == 0.0
    runtime.gemm(a, b, out_dtype="f32")
    p1 = runtime.last_launch["plan"]
    runtime.gemm(a2, b2, out_dtype="f32")
    assert runtime.last_launch["plan"] is p1


@gpu
def test_gpu_plan_under_cuda_graph_capture():
    cp = _cp()
    m, n, k = 512, 768, 1024
    a, b = _ints(cp, (m, k), 3), _ints(cp, (k, n), 4)
    c = cp.full((m, n), cp.nan, dtype=cp.float32)
    plan = runtime.gemm_plan(a, b, c, out_dtype="f32")
    plan(a, b, c)  # compiled and warmed outside the capture
    s = cp.cuda.Stream(non_blocking=True)
    with s:
        s.begin_capture()
        plan(a, b, c)
        runtime.gemm(a, b, c, out_dtype="f32")  # the cached plan, also captured
        g = s.end_capture()
    for seed in range(3):  # new data in the same buffers, replayed
        a[...] = _ints(cp, (m, k), 30 + seed)
        b[...] = _ints(cp, (k, n), 40 + seed)
        c.fill(cp.nan)
        # the writes above ran on the legacy default stream, which a non-blocking stream does
        # not wait for
        cp.cuda.Device().synchronize()
        g.launch(stream=s)
        s.synchronize()
        ref = a.astype(cp.float64) @ b.astype(cp.float64)
        assert float(cp.abs(c - ref).max()) == 0.0, seed


def test_the_gpu_extra_installs_the_fast_path():
    """``pip install "layoutproof[gpu]"``: CuPy and cuda-python (the TMA path's tensor maps)."""
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    m = re.search(r"^gpu\s*=\s*\[(.*)\]\s*$", text, re.M)
    assert m, "no gpu extra in pyproject.toml"
    names = re.findall(r'"([A-Za-z0-9_.-]+)', m.group(1))
    assert any(n.startswith("cupy-cuda1") for n in names) and "cuda-python" in names, names


@gpu
def test_gpu_without_cuda_python_warns_once_and_takes_the_cp_async_kernel(monkeypatch):
    cp = _cp()
    if cp.cuda.Device().compute_capability != "90":
        pytest.skip("the TMA kernels exist on sm_90 only")
    monkeypatch.setattr(device, "tma_available", lambda: False)
    monkeypatch.setattr(runtime, "_PLANS", {})
    monkeypatch.setattr(P, "_WARNED", {})
    a, b = _ints(cp, (200, 300), 5), _ints(cp, (300, 136), 6)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c = runtime.gemm(a, b, out_dtype="f32")
        runtime.gemm(b.T, a.T, out_dtype="f32")
    assert [type(x.message) for x in w] == [P.SlowPathWarning]
    assert runtime.last_launch["config"].loader == "cp.async"
    assert float(cp.abs(c - a.astype(cp.float64) @ b.astype(cp.float64)).max()) == 0.0


def test_fake_cached_plans_do_not_keep_their_operands_alive(fake):
    import gc
    import weakref

    a, b = fake.array((128, 64)), fake.array((64, 128))
    c = runtime.gemm(a, b)
    refs = [weakref.ref(x) for x in (a, b, c)]
    plan = runtime.last_launch["plan"]
    out = fake.empty((128, 128), np.float16)
    plan(a, b, out)  # a new C-order output of the plan's kind is accepted
    assert fake.launches[-1]["values"][2] == out.data.ptr
    del a, b, c
    gc.collect()
    assert runtime._PLANS and all(r() is None for r in refs)


# ============================================================================ the decision as data
def _req(m, k, n, *, a_order="C", b_order="C", out=None, a_ptr16=0, lda=None, **kw):
    """A GemmRequest for row- or column-major f16 operands, built from numbers alone."""

    def facts(r, c, order, ld=None, ptr16=0):
        ld = ld or (c if order == "C" else r)
        return P.OperandFacts((r, c), (ld * 2, 2) if order == "C" else (2, ld * 2), 2, ptr16)

    it = 4 if kw.get("out_dtype") == "f32" else 2
    kw.setdefault("out_dtype", "f16")
    return P.GemmRequest(
        facts(m, k, a_order, lda, a_ptr16),
        facts(k, n, b_order),
        "f16",
        out_itemsize=it,
        out_strides=out,
        **kw,
    )


_H100 = P.DeviceFacts(cc="90", sms=132, tma=True)
_H100_NO_TMA = P.DeviceFacts(cc="90", sms=132, tma=False)

# (request, device, config key, grid, workspace floats, fix-up grid): what the plans launched
# before the rule returned a decision (recorded with the fake CuPy)
_DECISIONS = [
    (_req(300, 512, 200), _H100_NO_TMA, "sm90_128x128x64_s6_g8", (6, 1, 1), 0, None),
    (_req(300, 512, 200), _H100, "sm90_64x64x64_s8_g8_tma_ws", (20, 1, 1), 0, None),
    (_req(8192, 8192, 8192), _H100, "sm90_64x256x64_s5_g16_tma_pp", (132, 1, 1), 0, None),
    (_req(4096, 4096, 4096), _H100, "sm90_128x256x64_s4_g8_tma_ws", (132, 1, 1), 0, None),
    (_req(16, 4096, 4096), _H100, "16x32x128_w1x2_s8_auto_g8", (128, 1, 1), 0, None),
    (
        _req(16, 4096, 4096, path="wgmma"),
        _H100,
        "sm90_64x64x64_s8_g8_tma_ws_r16_sk2",
        (128, 1, 1),
        2 * 16 * 4096,
        (16, 16, 1),
    ),
    (_req(16, 8192, 8192, path="wgmma"), _H100, "sm90_64x64x64_s8_g8_tma_ws_r16", (128, 1, 1), 0, None),
    # an M-major A has no short box (P.short_a_rows): the decode split, reduced in clusters
    (
        _req(16, 8192, 8192, a_order="F", path="wgmma"),
        _H100,
        "sm90_64x128x64_s8_g8_tma_ws_sk2c",
        (128, 1, 1),
        0,
        None,
    ),
    (
        _req(256, 256, 256, activation="relu"),
        _H100,
        "sm90_64x64x64_s8_g8_tma_ws_biasrelu",
        (16, 1, 1),
        0,
        None,
    ),
]


@pytest.mark.parametrize("req, dev, key, grid, ws, fix", _DECISIONS)
def test_decision_is_data_decided_without_arrays(req, dev, key, grid, ws, fix):
    d = P.decide(req, dev)
    assert (d.config.key(), d.grid, d.workspace) == (key, grid, ws)
    assert (d.fixup and d.fixup.grid) == fix
    assert d == P.decide(req, dev)  # frozen and a function of its inputs alone
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.grid = (1, 1, 1)  # type: ignore[misc]


def test_decision_orientation_and_staging(monkeypatch):
    monkeypatch.setitem(P.ELEM_RULE, "max_us", 0.0)  # the copy path, not the in-place loads
    # a column-major output: C^T = B^T A^T, the operands' roles swapped
    d = P.decide(_req(96, 40, 72, b_order="F", out=(4, 96 * 4), out_dtype="f32"), _H100_NO_TMA)
    assert (d.orient, d.m, d.n, d.k, d.ldc) == ("col", 72, 96, 40, 96)
    assert (d.a.transposed, d.a.major, d.b.major) == (True, "k", "k")
    # a misaligned operand with an odd leading dimension: copied into a padded buffer
    d = P.decide(_req(64, 100, 64, a_ptr16=4), _H100_NO_TMA)
    assert (d.a.copy, d.a.ld, d.b.copy) == (True, 104, False)
    assert dict(d.statics)[6] == 104  # lda: the padded buffer's
    # an epilogue never takes the column-major orientation
    assert P.orientation(_req(64, 64, 64, out=(2, 128), activation="relu")) == "copy"


def test_decision_equals_what_the_fake_plan_launches(fake):
    for shape, kw in (((300, 512, 200), {}), ((128, 64, 256), dict(path="mma.sync")), ((16, 4096, 4096), {})):
        m, k, n = shape
        a, b = fake.array((m, k)), fake.array((k, n))
        runtime.gemm(a, b, **kw)
        plan = runtime.last_launch["plan"]
        d = P.decide(_req(m, k, n, **kw), P.DeviceFacts(cc="90", sms=132, tma=False))
        assert plan.decision == d
        launch = fake.launches[-1]
        assert (launch["grid"], launch["kinds"]) == (d.grid, list(d.kinds))
        assert launch["values"][3:6] == [d.m, d.n, d.k]


def test_every_kernel_variant_has_a_public_config():
    """Each kernel family is named by a config a user imports from layoutproof.gpu (the
    launches of each are tested with the fake GPU: here, the mma.sync/wgmma paths and the
    decode tile; tests/gpu/test_gpu_splitk*.py the three reductions; test_gpu_epilogue.py the
    fused epilogue), and a reduction no longer in the package is refused by name."""
    import layoutproof.gpu as gpu
    from layoutproof.gpu.errors import GemmConfigError
    from layoutproof.gpu.kernels import splitk

    assert gpu.Sm90Config is Sm90Config and gpu.SplitKConfig is SplitKConfig
    assert gpu.EpilogueConfig.__module__ == "layoutproof.gpu.kernels.epilogue"
    assert splitk.REDUCTIONS == ("kernel", "serial", "cluster")
    base = Sm90Config(loader="tma", schedule="ws")
    for red in splitk.REDUCTIONS:
        assert SplitKConfig(base, 2, red).validate().reduction == red
    with pytest.raises(GemmConfigError, match="reduction"):
        SplitKConfig(base, 2, "atomic").validate()
