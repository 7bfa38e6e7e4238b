"""The GEMM kernels' launch ordering: every generated kernel waits for the previous grid of
the stream first (``griddepcontrol.wait``, proven: the launch-ordering claim), and the
runtime launches a kernel as a programmatic dependent only where that claim is in its proof
log and the rule allows.  The GPU test checks products launched that way back to back, with
each call reading the previous call's output."""

from __future__ import annotations

import dataclasses

import pytest

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import ProofFailedError
from layoutproof.gpu.host import cache, device, plan, rule, runtime
from layoutproof.gpu.kernels import mma_sync, tiny
from layoutproof.gpu.kernels.splitk import SplitKConfig, generate_splitk
from layoutproof.gpu.kernels.toolkit import GRID_ORDER, GRID_WAIT, prove_grid_order, waits_first
from layoutproof.gpu.kernels.wgmma import generate_sm90
from layoutproof.gpu.kernels.wgmma_core import Sm90Config
from layoutproof.gpu.kernels.wgmma_pingpong import generate_pingpong
from layoutproof.gpu.proof import kir
from layoutproof.gpu.proof.record import ProofLog

WS = Sm90Config(bm=128, bn=128, stages=4, loader="tma", schedule="ws")


def _kernels():
    prob = GemmProblem("k", "n")
    return {
        "ws": generate_sm90(WS, prob),
        "ws cluster": generate_sm90(dataclasses.replace(WS, cluster=2), prob),
        "mono tma": generate_sm90(Sm90Config(bm=128, bn=128, stages=4, loader="tma"), prob),
        "mono cp.async": generate_sm90(Sm90Config(bm=128, bn=128, stages=4), prob),
        "pingpong": generate_pingpong(
            Sm90Config(bm=64, bn=256, stages=5, loader="tma", schedule="pingpong"), prob
        ),
        "mma.sync": mma_sync.generate(None, prob),
        "tiny": tiny.generate(None, prob),
        "split": generate_splitk(SplitKConfig(WS, 2), prob).gemm,
        "fix-up": generate_splitk(SplitKConfig(WS, 2), prob).reduce,
    }


def test_every_kernel_family_waits_first_and_carries_the_claim():
    for name, k in _kernels().items():
        assert k.programmatic, name
        claims = [p for p in k.proofs if p.statement.startswith(GRID_ORDER + ":")]
        assert len(claims) == 1 and claims[0].kind == "protocol", name
        # the source's first statement is the wait (comments aside)
        body = k.source.split(f"{k.name}(", 1)[1].split(") {", 1)[1]
        first = next(x.strip() for x in body.splitlines() if x.strip() and not x.strip().startswith("//"))
        assert first == f"{GRID_WAIT}();", (name, first)
        if k.ir is not None:
            assert waits_first(k.ir) == 1, name


def test_the_claim_survives_the_disk_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("LAYOUTPROOF_CACHE", str(tmp_path))
    prob = GemmProblem("k", "n")
    k = generate_sm90(WS, prob)
    path = cache._kernel_path(WS.key(), prob)
    cache._store_kernel(path, k)
    again = cache._load_kernel(path, WS, prob)
    assert again is not None and again.ir is None  # read back without its IR
    assert again.programmatic and k.programmatic


@pytest.mark.parametrize("how", ["missing", "moved", "guarded", "twice"])
def test_a_misplaced_wait_is_refused_and_a_missing_one_is_stream_order(how):
    k = generate_sm90(WS, GemmProblem("k", "n")).ir
    wait = next(st for st in k.body.body if isinstance(st, kir.Eval) and st.e.name == GRID_WAIT)
    rest = tuple(st for st in k.body.body if st is not wait)
    body = {
        "missing": rest,
        "moved": rest[:5] + (wait,) + rest[5:],  # after shared-memory set-up statements
        "guarded": (kir.If(kir.THREAD_IDX.lt(32), kir.block(wait)),) + rest,
        "twice": (wait,) + rest + (wait,),
    }[how]
    bad = dataclasses.replace(k, body=kir.Block(body))
    log = ProofLog()
    if how == "missing":  # no wait: no claim, so the runtime launches it in stream order
        assert prove_grid_order(bad, log) is False and len(log) == 0
        return
    with pytest.raises(ProofFailedError) as e:
        prove_grid_order(bad, log)
    assert e.value.condition == "grid dependency wait first"
    assert len(log) == 0


def test_the_launcher_is_offered_only_with_the_claim_the_rule_and_the_switch(monkeypatch):
    made = []
    monkeypatch.setattr(plan, "_pdl_launcher", lambda *a, cp=None: made.append(a) or (lambda sp: True))
    k = generate_sm90(WS, GemmProblem("k", "n"))
    assert plan.programmatic_launcher(k, 0x10, (132, 1, 1), 256, 0x20, 1024) is not None
    assert made == [(0x10, (132, 1, 1), 256, 0x20, 1024)]
    assert plan.programmatic_launcher(k, 0x10, (1, 1, 1), 256, 0x20, 0, allowed=False) is None
    no_claim = dataclasses.replace(
        k, proofs=ProofLog([p for p in k.proofs if not p.statement.startswith(GRID_ORDER)])
    )
    assert not no_claim.programmatic
    assert plan.programmatic_launcher(no_claim, 0x10, (1, 1, 1), 256, 0x20) is None
    monkeypatch.setenv("LAYOUTPROOF_PDL", "0")
    assert plan.programmatic_launcher(k, 0x10, (1, 1, 1), 256, 0x20) is None
    assert len(made) == 1
    assert rule.PDL_PLAIN is True


def test_the_launch_is_offered_for_cupy_itself_only(monkeypatch):
    import types

    fake = types.SimpleNamespace(
        __name__="cupy"
    )  # a stand-in, not the module: its handles are not the driver's
    assert device.launch_kernel_ex(fake) is None
    assert plan._pdl_launcher(0x10, (1, 1, 1), 32, 0x20, cp=fake) is None
    mod = types.ModuleType("cupy")
    monkeypatch.setitem(device._DRIVER, "ex", None)  # no driver library
    assert device.launch_kernel_ex(mod) is None


def test_the_launch_structures_have_the_driver_layout(monkeypatch):
    import ctypes
    import types

    calls = []

    def fake_ex(*args):
        calls.append(args)
        return 0

    attr_t, cfg_t = device.launch_structs()
    assert ctypes.sizeof(attr_t) == 72  # CUlaunchAttribute: id, padding, a 64-byte value
    assert cfg_t.stream.offset == 32 and cfg_t.attrs.offset == 40 and cfg_t.num_attrs.offset == 48
    monkeypatch.setitem(device._DRIVER, "ex", (fake_ex, attr_t, cfg_t))
    launch = device.launch_kernel_ex(types.ModuleType("cupy"))(0x10, (3, 2, 1), 256, 0x20, 4096)
    assert launch(0x55) and launch(0x55) and len(calls) == 2
    cfg = cfg_t.from_address(calls[0][0].value)
    assert tuple(cfg.grid) == (3, 2, 1) and tuple(cfg.block) == (256, 1, 1) and cfg.smem == 4096
    assert (
        cfg.stream == 0x55 and cfg.num_attrs == 1 and calls[0][1].value == 0x10 and calls[0][2].value == 0x20
    )
    attr = attr_t.from_address(cfg.attrs)
    assert attr.id == 6 and bytes(attr)[8:12] == (1).to_bytes(4, "little")


# ============================================================================ on the GPU
gpu = pytest.mark.skipif(not runtime.gpu_available(), reason="no CUDA GPU / CuPy")


@gpu
@pytest.mark.parametrize("shape", [(7, 13, 17), (200, 136, 96), (256, 512, 512), (64, 1000, 2048)])
def test_gpu_chained_programmatic_launches_read_the_previous_output(shape):
    """Each call reads the previous call's output as its A (square B, so the chain type-checks):
    a kernel that started reading before its predecessor finished would see stale values."""
    cp = pytest.importorskip("cupy")
    m, _, k = shape  # C (m x k) feeds the next call's A
    rng = cp.random.default_rng(3)
    a0 = rng.integers(-2, 3, (m, k)).astype(cp.float16)
    b = cp.eye(k, dtype=cp.float16) * 2
    b[0, 1] = 1  # column 1 also takes column 0: not a pure scale, so a stale read shows
    outs = [cp.full((m, k), cp.nan, cp.float16) for _ in range(4)]
    st = cp.cuda.Stream(non_blocking=True)
    with st:
        x = a0
        for o in outs:
            runtime.gemm(x, b, o)
            x = o
        st.synchronize()
    p = runtime.last_launch["plan"]
    assert getattr(p, "_pdl_main", None) is not None or getattr(p, "_pdl", None) is not None, type(p)
    ref, b64 = a0.astype(cp.float64), b.astype(cp.float64)
    for o in outs:  # small integers: every product exact
        ref = ref @ b64
        assert bool(cp.array_equal(o.astype(cp.float64), ref)), runtime.last_launch.get("config")
