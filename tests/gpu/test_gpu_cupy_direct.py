"""The CuPy route's direct launch: a plain 2-D ``gemm`` call of a kept signature launches its
plan from base addresses (``plan.direct()``) under a short key of the call.

Without a GPU (CI), with the fake CuPy of test_gpu_plan: the key is complete (a call that
differs from a kept one in any field its plan depends on misses the entry; one that differs
only in its base addresses, alignment kept, hits it), the direct path is taken exactly where
the plan offers a direct launch, and it packs the parameters the full path packs, on the
current stream; a fused bias + activation call (no alpha/beta) launches with its bias pointer
(``plan.direct_bias()``).  With a GPU: results bit-identical to the full path's for each kind of
decision (warp-specialized, split-K with the fix-up kernel, tiny, hybrid, the mma.sync
decode tile), on a non-default stream, inside a CUDA graph capture, with ``out=`` given
(row- and column-major) and new.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
from test_gpu_plan import _ExternalStream, _FakeArray, _FakeCupy

from layoutproof.gpu.errors import GemmInputError
from layoutproof.gpu.host import cache, device, runtime
from layoutproof.gpu.host import rule as P
from layoutproof.gpu.host.plan import GemmPlan
from layoutproof.gpu.host.streamk import HybridPlan
from layoutproof.gpu.host.tiny import TinyPlan
from layoutproof.gpu.kernels.wgmma import Sm90Config


# ============================================================================ a fake device
@pytest.fixture
def fake(monkeypatch, tmp_path):
    cp = _FakeCupy()
    cp.dev = 0
    cp.cuda.runtime.getDevice = lambda: cp.dev
    cp.cuda.runtime.memcpy2DAsync = lambda *args: cp.copies.append(args)  # a staged operand's copy
    cp.stream = 0x5
    cp.cuda.get_current_stream = lambda: types.SimpleNamespace(ptr=cp.stream)
    monkeypatch.setenv("LAYOUTPROOF_CACHE", str(tmp_path))
    monkeypatch.setattr(device, "_CUPY", [cp])
    monkeypatch.setattr(device, "_DEVICE_FACTS", {})
    monkeypatch.setattr(cache, "_MODULES", {})
    monkeypatch.setattr(runtime, "_PLANS", {})
    monkeypatch.setattr(runtime, "_DIRECT", runtime._Direct())
    monkeypatch.setattr(device, "tma_available", lambda: False)
    monkeypatch.setattr(P, "_WARNED", {"tma": True})
    device._sm_count_of.cache_clear()
    yield cp
    device._sm_count_of.cache_clear()


def _spy(monkeypatch, name):
    """Each call of the entries ``runtime.<name>`` makes, logged (by its launch)."""
    log = []
    made = getattr(runtime, name)

    def spy(launch, stream, alloc):
        run = made(launch, stream, alloc)

        def logged(*args):
            log.append(launch)
            return run(*args)

        return logged

    monkeypatch.setattr(runtime, name, spy)
    return log


@pytest.fixture
def hits(monkeypatch):
    """Each call of a kept direct entry, logged (the plan, by its launch's owner)."""
    return _spy(monkeypatch, "_direct_run")


class _Sub(_FakeArray):
    """Another array type with the same attributes."""


def _like(x, *, cls=None, shape=None, strides=None, dtype=None, ptr=None, dev=None):
    """A fake array like ``x`` with one field changed."""
    return (cls or _FakeArray)(
        x._cp,
        x.shape if shape is None else shape,
        x.strides if strides is None else strides,
        x.dtype if dtype is None else dtype,
        x.data.ptr if ptr is None else ptr,
        x.data.device_id if dev is None else dev,
    )


def _call(*args, **kw):
    """gemm, a refusal of the full path counted as a call that did not hit."""
    try:
        return runtime.gemm(*args, **kw)
    except GemmInputError:
        return None


def test_fake_key_misses_on_every_field_and_hits_on_new_addresses(fake, hits):
    a, b = fake.array((96, 1024)), fake.array((1024, 72))
    out = fake.empty((96, 72), np.float16)
    runtime.gemm(a, b)
    runtime.gemm(a, b, out)
    assert hits == [] and len(runtime._DIRECT.entries) == 2
    runtime.gemm(a, b)
    runtime.gemm(a, b, out)
    assert len(hits) == 2
    # the same signature at other (16-byte aligned) addresses: hits
    a2, b2, out2 = (_like(x, ptr=fake._alloc(1 << 20)) for x in (a, b, out))
    runtime.gemm(a2, b2)
    runtime.gemm(a2, b2, out2)
    assert len(hits) == 4
    fresh = fake._alloc(1 << 21)
    for nm, x in (("a", a), ("b", b)):
        variants = {
            "type": _like(x, cls=_Sub),
            "shape": _like(x, shape=(x.shape[0] - 1, x.shape[1])),
            "strides": _like(x, strides=(x.strides[0] + 16, x.strides[1])),
            "order": _like(x, strides=(x.strides[1], x.shape[0] * x.strides[1])),
            "dtype": _like(x, dtype=np.uint16),
            "alignment": _like(x, ptr=fresh + 8),
            "device": _like(x, dev=1),
        }
        for field, v in variants.items():
            before = len(hits)
            if nm == "a":
                _call(v, b)
                _call(v, b, out)
            else:
                _call(a, v)
                _call(a, v, out)
            assert len(hits) == before, (nm, field)
    outs = {
        "type": _like(out, cls=_Sub),
        "shape": _like(out, shape=(96, 71)),
        "strides": _like(out, strides=(160, 2)),
        "order": fake.empty((96, 72), np.float16, order="F"),
        "dtype": _like(out, dtype=np.uint16),  # same strides: the dtype field alone
        "alignment": _like(out, ptr=fresh + 8),
        "device": _like(out, dev=1),
    }
    for field, v in outs.items():
        before = len(hits)
        _call(a, b, v)
        assert len(hits) == before, ("out", field)
    options = {
        "config": dict(config=Sm90Config(bm=64, bn=128, stages=4)),
        "out_dtype": dict(out_dtype="f32"),
        "dtype": dict(dtype="f16"),
        "path": dict(path="mma.sync"),
        "bias_along": dict(bias_along="m"),
    }
    for field, kw in options.items():
        before = len(hits)
        _call(a, b, **kw)
        assert len(hits) == before, ("option", field)
    # an epilogue, alpha / beta, precision: never looked up
    c = fake.empty((96, 72), np.float16)
    for kw in (
        dict(activation="relu"),
        dict(c=c, beta=1.0),
        dict(alpha=2.0, c=c, beta=0.0),
        dict(precision="tf32"),
    ):
        before = len(hits)
        _call(a, b, **kw)
        assert len(hits) == before, kw
    # another current device
    fake.dev = 1
    before = len(hits)
    _call(a, b)
    _call(a, b, out)
    assert len(hits) == before, "device"
    fake.dev = 0
    runtime.gemm(a, b)
    assert len(hits) == before + 1


def test_fake_unhashable_option_takes_the_full_path(fake, hits):
    a, b = fake.array((96, 1024)), fake.array((1024, 72))
    runtime.gemm(a, b)
    with pytest.raises(GemmInputError, match="config must be"):
        runtime.gemm(a, b, config=[1])
    assert hits == []


def _cases(cp):
    """(name, a, b, out, kwargs, whether the plan offers a direct launch)."""
    return [
        ("tiled", cp.array((96, 1024)), cp.array((1024, 72)), None, {}, True),
        ("tiled, out", cp.array((96, 1024)), cp.array((1024, 72)), cp.empty((96, 72), np.float16), {}, True),
        (
            "tiled, column-major out",
            cp.array((96, 40)),
            cp.array((40, 72), order="F"),
            cp.empty((96, 72), np.float32, order="F"),
            dict(out_dtype="f32", path="wgmma"),
            True,
        ),
        ("tiny", cp.array((7, 17)), cp.array((17, 13)), None, {}, True),
        (
            "tiny, F out",
            cp.array((7, 17)),
            cp.array((17, 13)),
            cp.empty((7, 13), np.float16, order="F"),
            {},
            True,
        ),
        ("mma decode", cp.array((16, 4096)), cp.array((4096, 4096)), None, {}, True),
        (
            "staged operand",
            cp.array((64, 100), offset=2),
            cp.array((100, 64)),
            None,
            dict(path="wgmma"),
            True,
        ),
        (
            "staged element by element",  # every other column: no row of A is contiguous
            _like(cp.array((64, 200)), shape=(64, 100), strides=(400, 4)),
            cp.array((100, 64)),
            None,
            dict(path="wgmma"),
            False,
        ),
        ("tiny epilogue", cp.array((7, 17)), cp.array((17, 13)), None, dict(activation="relu"), False),
    ]


@pytest.mark.parametrize("case", range(9))
def test_fake_direct_path_is_taken_exactly_where_the_plan_offers_it(fake, hits, monkeypatch, case):
    name, a, b, out, kw, offered = _cases(fake)[case]
    runs = []
    for cls in (GemmPlan, TinyPlan):
        full = cls._run

        def counted(self, *args, _full=full, **kws):
            runs.append(self)
            return _full(self, *args, **kws)

        monkeypatch.setattr(cls, "_run", counted)
    results, calls = [], []
    for _ in range(3):
        n0 = len(fake.launches)
        results.append(runtime.gemm(a, b, out, **kw))
        calls.append(fake.launches[n0:])
    (plan,) = runtime._PLANS.values()
    assert (plan.direct() is not None) == offered, name
    assert len(hits) == (2 if offered else 0) and len(runs) == (1 if offered else 3), name
    # the direct launches pack what the full path packed (the output's address aside)
    assert len(calls[0]) == len(calls[2]) >= 1
    for first, last in zip(calls[0], calls[2]):
        for k in ("grid", "block", "smem", "stream", "kinds"):
            assert first[k] == last[k], (name, k)
        if out is not None:
            assert first["values"] == last["values"]
    if out is not None:
        assert all(r is out for r in results)
    else:
        r0, r2 = results[0], results[2]
        assert (r0.shape, r0.strides, r0.dtype) == (r2.shape, r2.strides, r2.dtype)
        assert r0.data.ptr != r2.data.ptr


@pytest.fixture
def fake_tma(fake, monkeypatch):
    """The fake device with TMA (the fused epilogue's kernels): tensor maps as bytes."""
    from layoutproof.gpu.host import plan as plan_mod

    monkeypatch.setattr(device, "tma_available", lambda: True)
    monkeypatch.setenv("LAYOUTPROOF_PDL", "0")  # the fake has no driver for cuLaunchKernelEx
    monkeypatch.setattr(plan_mod._Operand, "prepare_tma", lambda self, dt, k, mn, batch=None, rows=64: None)
    monkeypatch.setattr(plan_mod._Operand, "tensor_map", lambda self, ptr: np.zeros(128, np.uint8))
    fake.float32 = np.float32
    empty = fake.empty
    fake.zeros = lambda shape, dtype: empty((1, shape) if isinstance(shape, int) else shape, dtype)
    return fake


def _vec(cp, n):
    """A fake f16 bias vector of ``n`` elements."""
    return _FakeArray(cp, (n,), (2,), np.float16, cp._alloc(2 * n))


@pytest.fixture
def fused_hits(monkeypatch):
    """Each call of a kept fused (bias + activation) direct entry, logged."""
    return _spy(monkeypatch, "_direct_run_bias")


@pytest.mark.parametrize("with_bias", [True, False])
def test_fake_fused_calls_take_the_direct_launch_with_their_bias(fake_tma, hits, fused_hits, with_bias):
    fake = fake_tma
    a, b = fake.array((96, 1024)), fake.array((1024, 72))
    out = fake.empty((96, 72), np.float16)
    biases = [_vec(fake, 72), _vec(fake, 72)] if with_bias else [None, None]
    runtime.gemm(a, b, out, bias=biases[0], activation="gelu")  # the full path, kept
    full = fake.launches[-1]
    (plan,) = runtime._PLANS.values()
    assert plan.direct() is None and plan.direct_bias() is not None
    slot = plan.decision.slot("bias")
    zero = plan._zero_bias
    for bias in biases:
        runtime.gemm(a, b, out, bias=bias, activation="gelu")
        got = fake.launches[-1]
        for key in ("grid", "block", "smem", "stream", "kinds"):
            assert got[key] == full[key], key
        want = bias.data.ptr if bias is not None else zero.data.ptr
        assert got["values"][slot] == want
        assert got["values"][2:slot] == full["values"][2:slot]
    assert len(fused_hits) == 2 and hits == []
    # another activation, or a bias of another shape, is another key: the full path
    runtime.gemm(a, b, out, bias=biases[0], activation="relu")
    assert len(fused_hits) == 2
    if with_bias:
        with pytest.raises(GemmInputError):
            runtime.gemm(a, b, out, bias=_vec(fake, 71), activation="gelu")
        assert len(fused_hits) == 2


def test_fake_alpha_beta_calls_keep_the_full_path(fake_tma, hits, fused_hits):
    fake = fake_tma
    a, b = fake.array((96, 1024)), fake.array((1024, 72))
    out, c = fake.empty((96, 72), np.float16), fake.empty((96, 72), np.float16)
    for _ in range(3):
        runtime.gemm(a, b, out, bias=_vec(fake, 72), c=c, alpha=0.5, beta=1.0, activation="relu")
    assert fused_hits == [] and hits == []


def test_fake_direct_launch_uses_the_current_stream_and_updates_last_launch(fake, hits):
    a, b = fake.array((96, 1024)), fake.array((1024, 72))
    runtime.gemm(a, b)
    plan = runtime.last_launch["plan"]
    fake.stream = 0x77
    runtime.last_launch.clear()
    c = runtime.gemm(a, b)
    assert len(hits) == 1 and fake.launches[-1]["stream"] == 0x77
    assert runtime.last_launch["plan"] is plan
    assert fake.launches[-1]["values"][:3] == [a.data.ptr, b.data.ptr, c.data.ptr]


@pytest.mark.parametrize("staged", ["a", "b, column-major out"])
def test_fake_staged_operand_launches_directly_after_one_row_copy_into_the_streams_buffer(
    fake, hits, staged, monkeypatch
):
    monkeypatch.setitem(P.ELEM_RULE, "max_us", 0.0)  # the copy path, not the in-place loads
    cp = fake
    zeroed = []
    cp.cuda.ExternalStream = lambda ptr: _ExternalStream(cp, ptr)
    zeros = cp.zeros
    cp.zeros = lambda shape, dtype: zeroed.append((shape, cp.stream)) or zeros(shape, dtype)
    if staged == "a":  # A 64x100 at an odd address: rows of 100 halves into a 104-wide buffer
        a, b, out = cp.array((64, 100), offset=2), cp.array((100, 64)), None
        src, pitch, width, height, ld = a, 200, 200, 64, 104
    else:  # C^T = B^T A^T: the user's B (100 x 60, ld 60) is the kernel's A, rows of 60 halves
        a, b = cp.array((100, 64)), cp.array((64, 60))
        out = cp.empty((100, 60), np.float16, order="F")
        src, pitch, width, height, ld = b, 120, 120, 64, 64
    runtime.gemm(a, b, out, path="wgmma")  # the full path makes the buffer (element-wise copy)
    buf = cp.launches[-1]["values"][0]
    n0 = len(cp.copies)
    for _ in range(2):
        runtime.gemm(a, b, out, path="wgmma")
        assert cp.launches[-1]["values"][0] == buf and cp.launches[-1]["stream"] == 0x5
    assert len(hits) == 2
    # one row copy per call into the same buffer, on the call's stream, nothing else copied
    assert cp.copies[n0:] == [(buf, ld * 2, src.data.ptr, pitch, width, height, 3, 0x5)] * 2
    # another stream: its own buffer, made and zeroed on that stream, then the row copy there
    cp.stream = 0x9
    z0 = len(zeroed)
    runtime.gemm(a, b, out, path="wgmma")
    assert len(hits) == 3
    buf9 = cp.launches[-1]["values"][0]
    assert buf9 != buf and cp.launches[-1]["stream"] == 0x9
    assert zeroed[z0:] == [((height, ld), 0x9)]
    assert cp.copies[-1] == (buf9, ld * 2, src.data.ptr, pitch, width, height, 3, 0x9)


def test_fake_entries_follow_the_cupy_they_were_made_with(fake, hits, monkeypatch):
    a, b = fake.array((96, 1024)), fake.array((1024, 72))
    runtime.gemm(a, b)
    monkeypatch.setattr(device, "_CUPY", [fake])  # another CuPy stood in (as a test does)
    monkeypatch.setattr(runtime, "_PLANS", {})
    runtime.gemm(a, b)
    assert hits == [] and len(runtime._DIRECT.entries) == 1
    runtime.gemm(a, b)
    assert len(hits) == 1


class _NumpyLike:
    """CuPy's two constructors over numpy: ``ndarray(shape, dtype, memptr, strides, order)``
    and ``empty(shape, dtype, order)``."""

    @staticmethod
    def ndarray(shape, dtype=float, memptr=None, strides=None, order="C"):
        return np.empty(shape, dtype, order=order)

    empty = staticmethod(np.empty)


def test_new_outputs_come_from_the_cheapest_constructor_that_reproduces_the_first(fake):
    cp = _NumpyLike()
    for order in "CF":
        res = np.empty((5, 7), np.float16, order=order)
        mk = runtime._new_out_like(cp, res)
        x = mk()
        assert mk.func is cp.ndarray and not mk.keywords, order  # positional arguments only
        assert (x.shape, x.strides, x.dtype) == (res.shape, res.strides, res.dtype)
    # a class of another signature (the fake's): cupy.empty's form
    mk = runtime._new_out_like(fake, fake.empty((5, 7), np.float16, order="F"))
    assert mk.func == fake.empty and mk().strides == (2, 10)
    # neither order's strides (a strided view): no direct entry for a new output
    assert runtime._new_out_like(cp, np.empty((5, 14), np.float16)[:, ::2]) is None


# ============================================================================ on a GPU
gpu = pytest.mark.skipif(not runtime.gpu_available(), reason="no CUDA GPU / CuPy")


def _cp():
    return pytest.importorskip("cupy")


def _hopper_tma() -> bool:
    return (
        runtime.gpu_available() and _cp().cuda.Device().compute_capability == "90" and runtime.tma_available()
    )


def _operands(cp, m, n, k, seed, dt="f16"):
    rng = cp.random.default_rng(seed)
    a = rng.standard_normal((m, k), dtype=cp.float32).astype(cp.float16)
    b = rng.standard_normal((k, n), dtype=cp.float32).astype(cp.float16)
    if dt == "bf16":  # the raw bits of bfloat16 values (the top halves of float32s)
        a = (a.astype(cp.float32).view(cp.uint32) >> 16).astype(cp.uint16)
        b = (b.astype(cp.float32).view(cp.uint32) >> 16).astype(cp.uint16)
    return a, b


def _bits(x):
    """The raw bits of a 2- or 4-byte array (NaNs compare equal, signed zeros do not)."""
    return x.view({2: "uint16", 4: "uint32"}[x.dtype.itemsize])


def _full_path(monkeypatch, fn):
    """``fn()`` with no direct entries: the first call of a signature is the full path."""
    with monkeypatch.context() as m:
        m.setattr(runtime, "_DIRECT", runtime._Direct())
        return fn()


# (name, m, n, k, what the decision must be)
KINDS = [
    ("ws", 2048, 2048, 2048, lambda cfg, plan: getattr(cfg, "schedule", None) == "ws"),
    ("split-K + fix-up", 1, 4096, 4096, lambda cfg, plan: getattr(cfg, "splits", 1) > 1),
    ("tiny", 7, 13, 17, lambda cfg, plan: isinstance(plan, TinyPlan)),
    ("hybrid", 5120, 5120, 2048, lambda cfg, plan: isinstance(plan, HybridPlan)),
    ("mma.sync decode", 16, 4096, 4096, lambda cfg, plan: "16x" in cfg.key() and "sm90" not in cfg.key()),
    ("staged A", 1000, 3000, 777, lambda cfg, plan: plan._A.copy and not plan._B.copy),
]


@pytest.fixture
def kept(monkeypatch):
    """Fresh plan and direct-entry caches (each test's plans are its own)."""
    monkeypatch.setattr(runtime, "_PLANS", {})
    monkeypatch.setattr(runtime, "_DIRECT", runtime._Direct())


@gpu
@pytest.mark.parametrize("kind", KINDS, ids=[k[0] for k in KINDS])
def test_gpu_direct_results_are_the_full_paths_bit_for_bit(kind, monkeypatch, hits, kept):
    cp = _cp()
    name, m, n, k, is_kind = kind
    if name != "tiny" and not _hopper_tma():
        pytest.skip("the decision kinds are Hopper's with TMA")
    dt = "bf16" if name == "split-K + fix-up" else "f16"
    a, b = _operands(cp, m, n, k, m + n + k, dt)
    kw = dict(dtype="bf16") if dt == "bf16" else {}
    ref_new = _full_path(monkeypatch, lambda: runtime.gemm(a, b, **kw))
    (plan,) = runtime._PLANS.values()
    assert is_kind(plan.config, plan), (name, plan.config.key())
    assert plan.direct() is not None, name
    runtime.gemm(a, b, **kw)  # the full path, kept
    before = len(hits)
    got_new = runtime.gemm(a, b, **kw)
    assert len(hits) == before + 1
    assert (got_new.shape, got_new.strides, got_new.dtype) == (ref_new.shape, ref_new.strides, ref_new.dtype)
    assert bool(cp.array_equal(_bits(got_new), _bits(ref_new))), name
    # a given output (poisoned), row-major; then a fresh pair of operands through the same entry
    out = cp.empty((m, n), dtype=ref_new.dtype)
    _bits(out).fill(0xFFFF)  # NaN in f16 and bf16
    runtime.gemm(a, b, out, **kw)
    runtime.gemm(a, b, out, **kw)
    assert len(hits) == before + 2
    assert bool(cp.array_equal(_bits(out), _bits(ref_new))), name
    a2, b2 = _operands(cp, m, n, k, 7 * m + n, dt)
    ref2 = _full_path(monkeypatch, lambda: runtime.gemm(a2, b2, **kw))
    runtime.gemm(a2, b2, out, **kw)
    assert len(hits) == before + 3
    assert bool(cp.array_equal(_bits(out), _bits(ref2))), name
    # and the product itself, against float64
    if dt == "f16":
        want = a2.astype(cp.float64) @ b2.astype(cp.float64)
        err = float(cp.linalg.norm(out.astype(cp.float64) - want) / cp.linalg.norm(want))
        assert err < 1e-2, (name, err)


FUSED_KINDS = [
    ("the rule's pick at 2048^3", 2048, 2048, 2048),
    ("ping-pong epilogue", 4096, 4096, 256),
    ("split-K, epilogue in the fix-up", 64, 4096, 11008),
    ("mma.sync decode epilogue", 16, 4096, 4096),
]


@gpu
@pytest.mark.parametrize("kind", FUSED_KINDS, ids=[k[0] for k in FUSED_KINDS])
def test_gpu_fused_direct_results_are_the_full_paths_bit_for_bit(kind, monkeypatch, fused_hits, kept):
    cp = _cp()
    if not _hopper_tma():
        pytest.skip("the fused epilogue runs the TMA kernels of sm_90")
    name, m, n, k = kind
    a, b = _operands(cp, m, n, k, m + n + k)
    biases = [
        cp.random.default_rng(s).standard_normal(n, dtype=cp.float32).astype(cp.float16) for s in (1, 2)
    ]
    refs = [
        _full_path(monkeypatch, lambda bb=bb: runtime.gemm(a, b, bias=bb, activation="gelu")) for bb in biases
    ]
    runtime.gemm(a, b, bias=biases[0], activation="gelu")  # the full path, kept
    (plan,) = runtime._PLANS.values()
    assert plan.direct_bias() is not None, (name, plan.config.key())
    out = cp.empty((m, n), dtype=cp.float16)
    for bb, ref in zip(biases, refs):  # a new output, then a given one (poisoned), each bias
        got = runtime.gemm(a, b, bias=bb, activation="gelu")
        assert bool(cp.array_equal(_bits(got), _bits(ref))), name
        _bits(out).fill(0xFFFF)
        runtime.gemm(a, b, out, bias=bb, activation="gelu")
        assert bool(cp.array_equal(_bits(out), _bits(ref))), name
    # the new-output calls hit the kept entry; the first call with out= is kept, then hits
    assert len(fused_hits) == 3, name
    # an activation alone: the plan's zero vector
    ref0 = _full_path(monkeypatch, lambda: runtime.gemm(a, b, activation="relu"))
    runtime.gemm(a, b, activation="relu")
    got0 = runtime.gemm(a, b, activation="relu")
    assert len(fused_hits) == 4 and bool(cp.array_equal(_bits(got0), _bits(ref0))), name


@gpu
def test_gpu_direct_column_major_out_and_a_non_default_stream(monkeypatch, hits, kept):
    cp = _cp()
    a, b = _operands(cp, 512, 512, 512, 5)
    ref = _full_path(monkeypatch, lambda: runtime.gemm(a, b))
    ref_f = _full_path(monkeypatch, lambda: runtime.gemm(a, b, cp.empty((512, 512), cp.float16, order="F")))
    out = cp.full((512, 512), cp.nan, dtype=cp.float16, order="F")
    runtime.gemm(a, b, out)
    out[...] = cp.nan
    runtime.gemm(a, b, out)
    assert len(hits) == 1 and bool(cp.array_equal(_bits(out), _bits(ref_f)))
    s = cp.cuda.Stream(non_blocking=True)
    out2 = cp.full((512, 512), cp.nan, dtype=cp.float16)
    out[...] = cp.nan
    cp.cuda.Device().synchronize()
    with s:
        runtime.gemm(a, b)  # the full path, kept
        got = runtime.gemm(a, b)
        runtime.gemm(a, b, out)
        runtime.gemm(a, b, out2)
        runtime.gemm(a, b, out2)
    s.synchronize()
    assert len(hits) == 4
    for x, want in ((got, ref), (out, ref_f), (out2, ref)):
        assert bool(cp.array_equal(_bits(x), _bits(want)))


@gpu
@pytest.mark.parametrize("shape", [(512, 512, 512), (1, 4096, 4096), (7, 13, 17)], ids=str)
def test_gpu_direct_launch_inside_a_cuda_graph_capture(shape, monkeypatch, hits, kept):
    cp = _cp()
    m, n, k = shape
    a, b = _operands(cp, m, n, k, 11)
    ref = _full_path(monkeypatch, lambda: runtime.gemm(a, b))
    out = cp.empty((m, n), dtype=cp.float16)
    runtime.gemm(a, b, out)  # the entry, kept before the capture
    s = cp.cuda.Stream(non_blocking=True)
    before = len(hits)
    with s:
        s.begin_capture()
        runtime.gemm(a, b, out)
        g = s.end_capture()
    assert len(hits) == before + 1
    out[...] = cp.nan
    cp.cuda.Device().synchronize()
    g.launch(stream=s)
    s.synchronize()
    assert bool(cp.array_equal(_bits(out), _bits(ref))), shape
    # new operands in the same memory: the replay reads them
    a2, b2 = _operands(cp, m, n, k, 12)
    ref2 = _full_path(monkeypatch, lambda: runtime.gemm(a2, b2))
    a[...] = a2
    b[...] = b2
    cp.cuda.Device().synchronize()
    g.launch(stream=s)
    s.synchronize()
    assert bool(cp.array_equal(_bits(out), _bits(ref2))), shape


# ============================================================================ batched plans
def _batched_stub(mode="kernel", stage=(False, False), activation=None, alpha_beta=False, lk=True):
    """A BatchedGemmPlan carried out without a device: pointer operands (no tensor maps), the
    parameter block of a batched kernel, a launcher that records what it is given."""
    import threading

    from layoutproof.gpu.host.plan import BatchedGemmPlan
    from layoutproof.gpu.host.rule import ParamBuffer

    p = BatchedGemmPlan.__new__(BatchedGemmPlan)
    launches = []
    slots = {"c": 2, "cvec": 6} if activation is None else {"c": 2, "cvec": 6, "bias": 7}
    p.decision = types.SimpleNamespace(slot=lambda nm: slots.get(nm, -1), cvec_ld=True)
    p.mode, p._stage, p.activation, p.alpha_beta = mode, stage, activation, alpha_beta
    p.tma = False
    p._A = p._B = None  # pointer operands: no tensor-map encoders
    p._pb = ParamBuffer(["ptr", "ptr", "ptr", "i32", "i32", "i32", "i32"] + (["ptr"] if activation else []))
    p._zero_bias = types.SimpleNamespace(data=types.SimpleNamespace(ptr=0x9000)) if activation else None
    p._launch_kernel = (lambda *args: launches.append((args, p._pb.values()))) if lk else None
    p._fn, p.grid, p.threads, p.smem = 0x77, (132, 1, 1), 384, 1024
    p._pdl_main = None  # no programmatic dependent launch (the driver's is not faked here)
    p._lock = threading.Lock()
    p._info = dict(mode=mode, batch=3, plan=p)
    return p, launches


@pytest.mark.parametrize(
    "why",
    ["fold", "loop", "staged a", "staged b", "epilogue", "alpha/beta", "no launchKernel"],
)
def test_fake_batched_plan_offers_no_direct_launch_where_it_needs_the_arrays(why):
    kw = {
        "fold": dict(mode="fold"),
        "loop": dict(mode="loop"),
        "staged a": dict(stage=(True, False)),
        "staged b": dict(stage=(False, True)),
        "epilogue": dict(activation="relu"),
        "alpha/beta": dict(alpha_beta=True),
        "no launchKernel": dict(lk=False),
    }[why]
    p, _ = _batched_stub(**kw)
    assert p.direct() is None, why


def test_fake_batched_direct_launch_packs_the_pointers_the_stream_and_last_launch():
    p, launches = _batched_stub()
    launch = p.direct()
    assert launch is not None
    runtime.last_launch.clear()
    launch(0x1000, 0x2000, 0x3000, 0x55)
    launch(0x1100, 0x2200, 0x3008, 0x66)  # C 8 bytes off 16: no vector stores
    (a0, v0), (a1, v1) = launches
    assert a0[0] == 0x77 and a0[1:4] == (132, 1, 1) and a0[4] == 384 and a0[7] == 1024
    assert a0[8] == 0x55 and a1[8] == 0x66 and a0[9] == p._pb.address
    assert v0[:3] == [0x1000, 0x2000, 0x3000] and v0[6] == 1
    assert v1[:3] == [0x1100, 0x2200, 0x3008] and v1[6] == 0
    assert runtime.last_launch["plan"] is p and runtime.last_launch["mode"] == "kernel"


def test_fake_programmatic_launch_is_taken_and_a_refused_one_falls_back_to_stream_order():
    p, launches = _batched_stub()
    taken = []
    answers = [True, False, True]  # the driver takes the first launch, refuses the second

    def pdl(stream):
        taken.append((stream, p._pb.values()[:3]))
        return answers[len(taken) - 1]

    p._pdl_main = pdl
    launch = p.direct()
    launch(0x1000, 0x2000, 0x3000, 0x55)  # programmatic: nothing through launchKernel
    assert taken == [(0x55, [0x1000, 0x2000, 0x3000])] and launches == []
    launch(0x1100, 0x2200, 0x3300, 0x66)  # refused: launched in stream order instead
    assert len(taken) == 2 and taken[1][0] == 0x66
    assert len(launches) == 1 and launches[0][0][8] == 0x66 and launches[0][1][:3] == [0x1100, 0x2200, 0x3300]
    launch(0x1200, 0x2400, 0x3600, 0x77)  # a refused launcher is not tried again
    assert len(taken) == 2 and len(launches) == 2 and p._pdl_main is None


def test_fake_batched_fused_direct_launch_packs_the_bias():
    p, launches = _batched_stub(activation="gelu")
    assert p.direct() is None
    launch = p.direct_bias()
    assert launch is not None
    launch(0x1000, 0x2000, 0x3000, 0x4000, 0x55)
    launch(0x1100, 0x2200, 0x3300, 0, 0x66)  # no bias: the plan's zero vector
    (a0, v0), (a1, v1) = launches
    assert v0[:3] == [0x1000, 0x2000, 0x3000] and v0[7] == 0x4000 and a0[8] == 0x55
    assert v1[:3] == [0x1100, 0x2200, 0x3300] and v1[7] == 0x9000 and a1[8] == 0x66
    assert _batched_stub(activation="gelu", alpha_beta=True)[0].direct_bias() is None


@gpu
def test_gpu_batched_fused_direct_results_are_the_full_paths_bit_for_bit(monkeypatch, fused_hits, kept):
    cp = _cp()
    if not _hopper_tma():
        pytest.skip("the batched kernel is Hopper's with TMA")
    rng = cp.random.default_rng(4)
    a = rng.standard_normal((6, 200, 96), dtype=cp.float32).astype(cp.float16)
    b = rng.standard_normal((6, 96, 136), dtype=cp.float32).astype(cp.float16)
    biases = [rng.standard_normal(136, dtype=cp.float32).astype(cp.float16) for _ in range(2)]
    refs = [
        _full_path(monkeypatch, lambda bb=bb: runtime.gemm(a, b, bias=bb, activation="silu")) for bb in biases
    ]
    runtime.gemm(a, b, bias=biases[0], activation="silu")  # the full path, kept
    plan = runtime.last_launch["plan"]
    assert plan.mode == "kernel" and plan.direct_bias() is not None
    for bb, ref in zip(biases, refs):
        got = runtime.gemm(a, b, bias=bb, activation="silu")
        assert bool(cp.array_equal(_bits(got), _bits(ref)))
    assert len(fused_hits) == 2


@gpu
def test_gpu_batched_direct_results_are_the_full_paths_bit_for_bit(monkeypatch, hits, kept):
    cp = _cp()
    if not _hopper_tma():
        pytest.skip("the batched kernel is Hopper's with TMA")
    rng = cp.random.default_rng(3)
    for shared_b in (False, True):
        a = rng.standard_normal((6, 200, 96), dtype=cp.float32).astype(cp.float16)
        bs = (96, 136) if shared_b else (6, 96, 136)
        b = rng.standard_normal(bs, dtype=cp.float32).astype(cp.float16)
        if shared_b:  # a shared B folds into one 2-D product unless A's batches are apart
            a = cp.empty((6, 208, 96), cp.float16)[:, :200]
            a[...] = rng.standard_normal((6, 200, 96), dtype=cp.float32).astype(cp.float16)
        ref = _full_path(monkeypatch, lambda a=a, b=b: runtime.gemm(a, b))
        plan = runtime.last_launch["plan"]
        assert plan.mode == "kernel" and plan.direct() is not None, shared_b
        runtime.gemm(a, b)  # the full path, kept
        before = len(hits)
        got = runtime.gemm(a, b)
        assert len(hits) == before + 1
        assert (got.shape, got.strides) == (ref.shape, ref.strides)
        assert bool(cp.array_equal(_bits(got), _bits(ref))), shared_b
        out = cp.empty(ref.shape, cp.float16)
        _bits(out).fill(0xFFFF)
        runtime.gemm(a, b, out)
        runtime.gemm(a, b, out)
        assert len(hits) == before + 2 and bool(cp.array_equal(_bits(out), _bits(ref)))
        want = cp.matmul(a.astype(cp.float64), b.astype(cp.float64))
        err = float(cp.linalg.norm(out.astype(cp.float64) - want) / cp.linalg.norm(want))
        assert err < 1e-2, (shared_b, err)


# ============================================================================ 2-D plans: one-function launch
def _plan_stub(swap=False, stage="", ws=0, bias=False, coop=None, pdl=None, out_slot=False):
    """A GemmPlan carried out without a device (pointer operands, a parameter block with the
    2-D kernel's slots, a launcher that records what it is given), its direct launch ready."""
    import threading

    from layoutproof.gpu.host.rule import ParamBuffer

    p = GemmPlan.__new__(GemmPlan)
    launches = []
    slots = {"c": 2, "cvec": 6}
    if out_slot:
        slots["out"] = 7
    if bias:
        slots["bias"] = 8
    kinds = ["ptr", "ptr", "ptr", "i32", "i32", "i32", "i32", "ptr", "ptr"]
    p.decision = types.SimpleNamespace(slot=lambda nm: slots.get(nm, -1), fixup=None)
    p._launch_kernel = lambda *args: launches.append((args, p._pb.values()))
    p.orient, p._swap, p.alpha_beta, p.tma = ("col" if swap else "row"), swap, False, False
    p.activation = "gelu" if bias else None
    p._bias_sig = None
    p._a_sig = p._b_sig = (None, (64, 64), (128, 2), np.dtype(np.float16))
    p._A = types.SimpleNamespace(copy="a" in stage)
    p._B = types.SimpleNamespace(copy="b" in stage)
    p._stage_in = stage
    p._pb = ParamBuffer(kinds)
    p._ws = types.SimpleNamespace(data=types.SimpleNamespace(ptr=ws)) if ws else None
    p._fix = None
    p._cvec_ld, p._cvec_align = True, 16
    p._fn, p.grid, p.threads, p.smem = 0x77, (132, 1, 1), 384, 1024
    p._pdl_main, p._coop = pdl, coop
    if stage and coop is None:  # a cooperative launcher recording what the launch reads
        p._coop = lambda sp: launches.append((("coop", sp), p._pb.values())) or True
    p.config = types.SimpleNamespace(key=lambda: "128x256_S4_ws")
    p._lock, p._stage_lock = threading.Lock(), threading.Lock()
    p._info = dict(plan=p)
    p._zero_bias = types.SimpleNamespace(data=types.SimpleNamespace(ptr=0x9000)) if bias else None
    if stage:  # the stream's padded buffers, already pointed at (what _stage_in_stream sets)
        p._si_stream, p._si_now = (
            0x55,
            ((types.SimpleNamespace(value=0), 0xB000) if "a" in stage else (None, 0))
            + ((types.SimpleNamespace(value=0), 0xB001) if "b" in stage else (None, 0)),
        )
    return p, launches


_CALLS = [(0x1000, 0x2000, 0x3000, 0x55), (0x1100, 0x2200, 0x3008, 0x55), (0x1000, 0x2000, 0x3010, 0x55)]


@pytest.mark.parametrize(
    "kw",
    [
        dict(),
        dict(swap=True),
        dict(ws=0x7000),
        dict(out_slot=True, ws=0x7000),
        dict(bias=True),
        dict(stage="a"),
        dict(stage="ab", swap=True),
    ],
    ids=["plain", "swapped", "workspace", "serial-out", "bias", "stage-a", "stage-ab-swapped"],
)
def test_fake_2d_direct_launch_is_one_function_packing_what_the_method_packs(kw):
    hot, hot_launches = _plan_stub(**kw)
    ref, ref_launches = _plan_stub(**kw)
    launch = hot.direct_bias() if kw.get("bias") else hot.direct()
    assert launch is not None
    assert hot._launch_ptrs.__name__ == "launch"  # the instance's one function
    ref._direct_ready()
    del ref.__dict__["_launch_ptrs"]  # the method it stands in for
    if kw.get("bias"):
        ref._bias_launch(ref._pb, 8)
    runtime.last_launch.clear()
    for pa, pb, pc, sp in _CALLS:
        if kw.get("bias"):
            launch(pa, pb, pc, pa + 1, sp)
            ref._launch_ptrs(pa, pb, pc, sp, pa + 1)
            launch(pa, pb, pc, 0, sp)  # no bias: the plan's zero vector
            ref._launch_ptrs(pa, pb, pc, sp, 0x9000)
        else:
            launch(pa, pb, pc, sp)
            assert runtime.last_launch["plan"] is hot
            ref._launch_ptrs(pa, pb, pc, sp)

    def own(launches, plan):  # each plan's parameter block is its own: compare the rest
        if kw.get("stage"):
            return launches
        assert all(args[9] == plan._pb.address for args, _ in launches)
        return [(args[:9] + args[10:], vals) for args, vals in launches]

    assert own(hot_launches, hot) == own(ref_launches, ref)
    assert len(hot_launches) == len(_CALLS) * (2 if kw.get("bias") else 1)
    args, vals = hot_launches[0]
    if kw.get("stage"):  # the kernel's maps read the stream's buffers; the copies read the caller's
        assert args == ("coop", 0x55) and vals[:2] == [0xB000, 0xB001 if "b" in kw["stage"] else 0x2000]
        src_a, _, src_b, _ = hot._si_now
        assert src_a.value == (0x2000 if kw.get("swap") else 0x1000)
        assert src_b is None or src_b.value == 0x1000
        return
    assert args == (0x77, 132, 1, 1, 384, 1, 1, 1024, 0x55, hot._pb.address, 0)
    first = (0x2000, 0x1000) if kw.get("swap") else (0x1000, 0x2000)
    assert vals[:2] == list(first) and vals[2] == (kw.get("ws") or 0x3000)
    assert vals[6] == (0 if kw.get("ws") and kw["ws"] % 16 else 1)
    if kw.get("out_slot"):
        assert vals[7] == 0x3000
    second = hot_launches[2 if kw.get("bias") else 1][1]  # the second call's: C 8 bytes off 16
    assert second[6] == (1 if kw.get("ws") else 0)  # no vector stores (a workspace is aligned)


def test_fake_2d_direct_launch_programmatic_then_stream_order_once_refused():
    answers = [True, False, True]
    taken = []

    def pdl(stream):
        taken.append(stream)
        return answers[len(taken) - 1]

    p, launches = _plan_stub(pdl=pdl)
    launch = p.direct()
    launch(0x1000, 0x2000, 0x3000, 0x55)
    assert taken == [0x55] and launches == []
    launch(0x1000, 0x2000, 0x3000, 0x66)  # refused: in stream order instead, and from now on
    assert taken == [0x55, 0x66] and len(launches) == 1 and launches[0][0][8] == 0x66
    launch(0x1000, 0x2000, 0x3000, 0x77)
    assert len(taken) == 2 and len(launches) == 2 and p._pdl_main is None


def test_fake_2d_direct_launch_stages_in_the_launch_cooperatively():
    coop = []
    p, launches = _plan_stub(stage="a", coop=lambda sp: coop.append((sp, p._pb.values()[:3])) or True)
    launch = p.direct()
    launch(0x1000, 0x2000, 0x3000, 0x55)
    # the kernel's A map reads the stream's padded buffer, the staging copy reads the caller's A
    assert coop == [(0x55, [0xB000, 0x2000, 0x3000])] and launches == []
    assert p._si_now[0].value == 0x1000
    p._coop = None  # the launch keeps the launcher it was made with
    refused, _ = _plan_stub(stage="b", coop=lambda sp: False)
    with pytest.raises(GemmInputError.__mro__[1], match="refused the cooperative launch of 132 CTAs"):
        refused.direct()(0x1000, 0x2000, 0x3000, 0x55)
    assert refused._si_now[2].value == 0x2000


@pytest.mark.parametrize("stage, held", [("", "_lock"), ("a", "_stage_lock")])
def test_fake_2d_direct_launch_waits_for_the_lock_every_writer_holds(stage, held):
    import threading

    p, launches = _plan_stub(stage=stage)
    launch = p.direct()
    lock = getattr(p, held)  # the array path holds it while it writes the parameters
    lock.acquire()
    t = threading.Thread(target=launch, args=(0x1000, 0x2000, 0x3000, 0x55))
    t.start()
    t.join(0.2)
    assert t.is_alive() and not launches
    lock.release()
    t.join(5)
    assert not t.is_alive() and len(launches) == 1
