"""The tiny-shape path: its kernel (generated, proven, compiled), the decision, the plan's
launch on a fake device, and on a GPU the numerics at odd shapes, strides and alignments
against a float64 reference (CuPy arrays and torch tensors)."""

from __future__ import annotations

import dataclasses
import shutil
import subprocess

import numpy as np
import pytest
from test_gpu_plan import fake  # noqa: F401  (the shared fake CuPy fixture)

from layoutproof.gpu.config import GemmProblem
from layoutproof.gpu.errors import GemmConfigError, GemmInputError, ProofFailedError
from layoutproof.gpu.host import runtime, tiny
from layoutproof.gpu.kernels.tiny import TinyConfig, generate
from layoutproof.gpu.proof import kir, obligations
from layoutproof.gpu.proof.record import ProofLog

NVCC = shutil.which("nvcc")


# ============================================================================ the kernel
@pytest.mark.parametrize(
    "cfg, accesses",
    [
        (TinyConfig(2, 1, "relu"), 7),  # + the C input and the bias
        (TinyConfig(2, 4, "gelu", "bf16", "m"), 9),
        (TinyConfig(1, 8, "none", "f16"), 9),
    ],
)
def test_epilogue_kernels_are_proven(cfg, accesses):
    k = generate(cfg, GemmProblem(dtype="bf16", out_dtype="f32"))
    assert f"coverage: {accesses} of {accesses} memory accesses" in k.source
    assert f"lp_act_{cfg.activation}(y)" in k.source
    assert ("bias[c]" if cfg.bias_axis == "n" else "bias[r]") in k.source
    whats = {p.statement.split(":")[1].strip() for p in k.proofs if p.statement.startswith("global load")}
    assert {
        "C input element (row, col)",
        f"bias element ({'col' if cfg.bias_axis == 'n' else 'row'})",
    } <= whats


@pytest.mark.parametrize("ni, kw, ku", [(1, 1, 2), (2, 1, 1), (2, 4, 2), (1, 8, 8), (1, 16, 4), (2, 32, 2)])
@pytest.mark.parametrize("dt, out", [("f16", "f16"), ("bf16", "bf16"), ("bf16", "f32")])
def test_kernel_is_proven_and_covers_every_access(ni, kw, ku, dt, out):
    k = generate(TinyConfig(ni=ni, kw=kw, ku=ku), GemmProblem(dtype=dt, out_dtype=out))
    accesses = 5 if kw == 1 else 7  # A x2, B x2, C (+ the shared partial sums written and read)
    assert f"coverage: {accesses} of {accesses} memory accesses" in k.source
    assert k.threads == 32 * kw and k.smem_bytes == 0
    assert ("__syncthreads" in k.source) == (kw > 1)
    assert f".f32.{dt}.{dt}.f32" in k.source
    kinds = [p.kind for p in k.proofs]
    assert "atom" in kinds and "bijective" in kinds
    assert ("banks" in kinds) == (kw > 1)  # the shared-memory partial sums, conflict-free
    # the k-loop: ku k-steps unrolled together (ku = 1: the loop as written)
    assert (f"#pragma unroll {ku}\n  for (int kt = 0;" in k.source) == (ku > 1)


def test_config_and_problem_are_checked():
    with pytest.raises(GemmConfigError, match="ni=3"):
        generate(TinyConfig(ni=3))
    with pytest.raises(GemmConfigError, match="kw=3"):
        generate(TinyConfig(kw=3))
    with pytest.raises(GemmConfigError, match="ku=3"):
        generate(TinyConfig(ku=3))
    with pytest.raises(GemmConfigError, match="65536 bytes of static shared memory"):
        generate(TinyConfig(ni=4, kw=32))
    with pytest.raises(GemmConfigError, match="f16 or bf16"):
        generate(TinyConfig(), GemmProblem("k", "k", "e4m3"))
    with pytest.raises(GemmConfigError, match="activation='tanh'"):
        generate(TinyConfig(activation="tanh"))
    with pytest.raises(GemmConfigError, match="f32, f16 or bf16 along n or m"):
        generate(TinyConfig(activation="relu", bias_axis="k"))


def _mutate(k, pick, change):
    """The kernel IR with the first node ``pick`` selects replaced by ``change(node)``."""
    done = []

    def fn(node):
        if not done and pick(node):
            done.append(node)
            return change(node)
        return None

    body = kir.rewrite(k.ir.body, fn)
    assert done, "nothing to mutate"
    return dataclasses.replace(k.ir, body=body)


def _is_a_load(n):
    return isinstance(n, kir.Mem) and n.claim.what.startswith("A fragment")


def test_planted_bug_swapped_strides_is_caught():
    k = generate(TinyConfig(ni=2, kw=4))

    def swap(m):  # A[r * sam + c * sak] -> A[r * sak + c * sam]
        (r, sam), (c, sak) = (m.idx.a.a, m.idx.a.b), (m.idx.b.a, m.idx.b.b)
        return kir.Mem(m.ptr, m.claim, idx=r * sak + c * sam)

    bad = _mutate(k, _is_a_load, swap)
    with pytest.raises(ProofFailedError, match="address equals its layout|address"):
        obligations.discharge(bad, ProofLog())


def test_planted_bug_missing_guard_is_caught():
    k = generate(TinyConfig(ni=2, kw=1))

    def unguard(node):
        # the load's `if (r < M && c < K)` -> `if (r < M)`: the K bound is no longer implied
        return kir.If(node.cond.a, node.then)

    bad = _mutate(
        k,
        lambda n: isinstance(n, kir.If) and any(_is_a_load(x) for x in kir.walk(n.then)),
        unguard,
    )
    with pytest.raises(ProofFailedError, match="no enclosing guard implies"):
        obligations.discharge(bad, ProofLog())


@pytest.mark.skipif(NVCC is None, reason="nvcc not installed")
@pytest.mark.parametrize(
    "cfg, dt, out",
    [
        (TinyConfig(2, 4), "f16", "f16"),
        (TinyConfig(1, 8), "bf16", "f32"),
        (TinyConfig(2, 4, "silu", "bf16", "m"), "bf16", "bf16"),
    ],
)
def test_nvcc_compiles_the_kernel_without_spills(cfg, dt, out, tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(generate(cfg, GemmProblem(dtype=dt, out_dtype=out)).source)
    r = subprocess.run(
        [NVCC, "-arch=sm_90", "-cubin", "-std=c++17", "-Xptxas", "-v", "-o", str(tmp_path / "k.cubin")]
        + [str(src)],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
    assert "0 bytes spill stores" in r.stderr and "0 bytes spill loads" in r.stderr


# ============================================================================ the decision
def test_decision_is_the_documented_model():
    assert tiny.tiny_config(7, 13, 17) == TinyConfig(ni=1, kw=4, ku=4)
    assert tiny.tiny_config(1, 1, 1) == TinyConfig(ni=1, kw=4, ku=4)
    assert tiny.tiny_config(100, 100, 100) == TinyConfig(ni=1, kw=8, ku=4)
    assert tiny.tiny_config(3, 5, 1000, staged=True) == TinyConfig(ni=1, kw=16, ku=4)
    assert tiny.tiny_config(3, 5, 1000) is None  # 4 k-steps per warp: the tiled plan is faster
    assert tiny.tiny_config(1, 512, 512) == TinyConfig(ni=1, kw=16, ku=4)  # 2 k-steps per warp
    assert tiny.tiny_config(1, 1, 16 * 65, force=True) == TinyConfig(ni=1, kw=16, ku=4)
    assert tiny.tiny_config(128, 128, 128) is None and tiny.tiny_config(112, 112, 112) is not None
    with pytest.raises(GemmInputError, match="K < 2\\*\\*30"):
        tiny.tiny_config(1, 1, 1 << 30, force=True)
    rng = np.random.default_rng(0)
    for _ in range(500):
        m, n, k = (int(x) for x in rng.integers(1, 400, 3))
        staged = bool(rng.integers(2))
        cfg = tiny.tiny_config(m, n, k, staged=staged)
        forced = tiny.tiny_config(m, n, k, force=True)
        assert forced is not None and (cfg is None or cfg == forced)
        steps = -(-k // 16)
        chain = -(-steps // forced.kw)
        limit = tiny.TINY_CHAIN_STAGED if staged else tiny.TINY_CHAIN
        assert (cfg is not None) == (m * n * k < tiny.TINY_VOLUME and chain <= limit)
        assert forced.ni == 1 and forced.ku == 4
        assert forced.kw == (4 if steps <= 4 else 8 if steps <= 8 else 16)


def test_staging_is_the_rules_contract(fake):  # noqa: F811
    aligned = fake.array((64, 64))
    assert not tiny._breaks_contract(aligned)
    assert tiny._breaks_contract(fake.array((64, 64), offset=2))  # base not 16-byte aligned
    assert tiny._breaks_contract(fake.array((64, 13)))  # leading dimension 13
    assert tiny.wants_tiny(aligned, fake.array((64, 64)), "auto") == TinyConfig(1, 4, ku=4)
    a, b = fake.array((16, 1000)), fake.array((1000, 64))  # 4 k-steps per warp
    assert tiny.wants_tiny(a, b, "auto") is None
    assert tiny.wants_tiny(fake.array((16, 1000), offset=2), b, "auto") == TinyConfig(1, 16, ku=4)
    assert tiny.wants_tiny(a, b, "wgmma") is None and tiny.wants_tiny(a, b, "tiny") is not None


# ============================================================================ fake device
def test_fake_gemm_routes_small_products_to_one_launch(fake):  # noqa: F811
    a = fake.array((7, 13), offset=2)  # unaligned base, odd leading dimension: no staging
    b = fake.array((13, 17), order="F")
    c = runtime.gemm(a, b)
    (ln,) = fake.launches
    plan = runtime.last_launch["plan"]
    assert isinstance(plan, tiny.TinyPlan) and not fake.copies
    assert ln["kinds"] == ["ptr"] * 3 + ["i32"] * 3 + ["i64"] * 6
    pa, pb, pc, m, n, k, sam, sak, sbk, sbn, scm, scn = ln["values"]
    assert (pa, pb, pc) == (a.data.ptr, b.data.ptr, c.data.ptr)
    assert (m, n, k) == (7, 17, 13)
    assert (sam, sak, sbk, sbn, scm, scn) == (13, 1, 1, 13, 17, 1)
    assert ln["grid"] == (3, 1, 1) and ln["block"] == (128, 1, 1) and ln["stream"] == 0x5
    assert c.shape == (7, 17) and c.strides == (34, 2)
    runtime.gemm(a, b)  # the kept plan: one more launch, nothing else
    assert len(fake.launches) == 2 and runtime.last_launch["plan"] is plan


def test_fake_gemm_tiny_writes_a_given_output_at_its_strides(fake):  # noqa: F811
    a, b = fake.array((3, 1000)), fake.array((1000, 5))
    out = fake.array((3, 5), dtype=np.float32, order="F", ld=9)
    assert runtime.gemm(a, b, out) is out
    (ln,) = fake.launches
    assert ln["values"][3:] == [3, 5, 1000, 1000, 1, 5, 1, 1, 9]
    assert ln["block"] == (512, 1, 1)  # 63 k-steps: sixteen warps split K
    assert runtime.last_launch["problem"].out == "f32"


def test_fake_gemm_larger_products_and_epilogues_keep_the_tiled_plans(fake):  # noqa: F811
    a, b = fake.array((256, 256)), fake.array((256, 256))
    runtime.gemm(a, b)
    assert not isinstance(runtime.last_launch["plan"], tiny.TinyPlan)
    a, b = fake.array((8, 16)), fake.array((16, 8))
    runtime.gemm(a, b, config=runtime.DEFAULT_CONFIGS[-1])
    assert not isinstance(runtime.last_launch["plan"], tiny.TinyPlan)
    runtime.gemm(a, b, path="tiny")
    assert isinstance(runtime.last_launch["plan"], tiny.TinyPlan)
    big_a, big_b = fake.array((256, 256)), fake.array((256, 256))
    runtime.gemm(big_a, big_b, path="tiny")
    assert isinstance(runtime.last_launch["plan"], tiny.TinyPlan)
    with pytest.raises(GemmInputError, match="path='tiny' takes no config"):
        runtime.gemm(a, b, path="tiny", config=runtime.DEFAULT_CONFIGS[-1])
    # a TinyConfig selects the tiny kernel with that configuration (path 'auto' or 'tiny')
    for path in ("auto", "tiny"):
        runtime.gemm(big_a, big_b, path=path, config=TinyConfig(2, 8, ku=1))
        plan = runtime.last_launch["plan"]
        assert isinstance(plan, tiny.TinyPlan) and plan.config == TinyConfig(2, 8, ku=1)
    with pytest.raises(GemmInputError, match="a TinyConfig is the tiny kernel's.*path='wgmma'"):
        runtime.gemm(a, b, path="wgmma", config=TinyConfig())


def _vec(cp, n, dtype=np.float32):
    from test_gpu_plan import _FakeArray

    it = np.dtype(dtype).itemsize
    return _FakeArray(cp, (n,), (it,), dtype, cp.array((1, n), dtype=dtype).data.ptr)


def test_fake_gemm_tiny_fuses_the_epilogue(fake, monkeypatch):  # noqa: F811
    a, b = fake.array((7, 13)), fake.array((13, 17))
    if not tiny.TINY_EPILOGUE:  # the tiled epilogue plan, which needs TMA (the fake has none)
        with pytest.raises(GemmInputError, match="warp-specialized TMA kernel"):
            runtime.gemm(a, b, bias=_vec(fake, 17), activation="relu")
    monkeypatch.setattr(runtime, "TINY_EPILOGUE", True)
    bias = _vec(fake, 17)
    c = runtime.gemm(a, b, bias=bias, activation="gelu")
    plan = runtime.last_launch["plan"]
    assert isinstance(plan, tiny.TinyPlan) and plan.config.activation == "gelu"
    ln = fake.launches[-1]
    assert ln["kinds"] == ["ptr"] * 3 + ["i32"] * 3 + ["i64"] * 6 + [
        "ptr",
        "i32",
        "f32",
        "f32",
        "ptr",
        "i64",
        "i64",
    ]
    assert ln["values"][2] == c.data.ptr and ln["values"][12:] == [bias.data.ptr, 1, 1.0, 0.0, 0, 0, 0]
    assert "lp_act_gelu" in plan.kernel.source and "bias[c]" in plan.kernel.source
    # alpha * A @ B + beta * c, bias along m, in place (c is the output)
    out = fake.array((7, 17))
    bm = _vec(fake, 7, np.float16)
    runtime.gemm(a, b, out, bias=bm, bias_along="m", c=out, alpha=0.5, beta=2.0)
    plan = runtime.last_launch["plan"]
    assert plan.config.activation == "none" and plan.config.bias == "f16" and plan.config.bias_axis == "m"
    assert fake.launches[-1]["values"][12:] == [bm.data.ptr, 1, 0.5, 2.0, out.data.ptr, 17, 1]
    runtime.gemm(a, b, out, c=out, alpha=1.0, beta=-1.0)  # no bias: has_bias 0
    assert fake.launches[-1]["values"][12:] == [0, 0, 1.0, -1.0, out.data.ptr, 17, 1]
    with pytest.raises(GemmInputError, match="bias must be"):
        runtime.gemm(a, b, bias=_vec(fake, 16))
    with pytest.raises(GemmInputError, match="c \\(beta's input\\)"):
        runtime.gemm(a, b, out, c=fake.array((7, 17), order="F"), beta=1.0)


def test_fake_tiny_plan_checks_its_calls(fake):  # noqa: F811
    a, b = fake.array((7, 13)), fake.array((13, 17))
    plan = tiny.TinyPlan(a, b)
    plan(a, b)
    with pytest.raises(GemmInputError, match="differ from the plan"):
        plan(fake.array((7, 13), order="F"), b)
    with pytest.raises(GemmInputError, match="new row-major output"):
        plan(a, b, fake.array((7, 17), order="F"))
    with pytest.raises(GemmInputError, match="inner dimensions differ"):
        tiny.TinyPlan(a, fake.array((12, 17)))
    from test_gpu_plan import _FakeArray

    zero = _FakeArray(fake, (7, 17), (0, 2), np.float16, fake.array((1, 17)).data.ptr)
    with pytest.raises(GemmInputError, match="zero stride"):
        tiny.TinyPlan(a, b, zero)
    with pytest.raises(GemmInputError, match="2\\*\\*31 - 1 blocks"):
        tiny.TinyPlan(fake.array((1 << 20, 1)), fake.array((1, 1 << 20)), config=TinyConfig(2, 1))


# ============================================================================ GPU
def _gpu():
    from layoutproof.gpu.host import device

    if not device.gpu_available():
        pytest.skip("no GPU")
    return device.cupy()


_SHAPES = [
    (1, 1, 1),
    (7, 13, 17),
    (3, 5, 1000),
    (16, 8, 16),
    (33, 47, 65),
    (64, 64, 64),
    (1, 300, 700),
    (100, 3, 9),
]


@pytest.mark.parametrize("m, n, k", _SHAPES)
@pytest.mark.parametrize("dt", ["f16", "bf16"])
def test_gpu_tiny_matches_float64(m, n, k, dt):
    cp = _gpu()
    rng = np.random.default_rng(m * 7 + n * 3 + k)
    A = rng.standard_normal((m, k)).astype(np.float32)
    B = rng.standard_normal((k, n)).astype(np.float32)
    if dt == "bf16":  # the raw bits, rounded to bf16 on the host
        ab, bb = ((x.view(np.uint32) + 0x8000 >> 16).astype(np.uint16) for x in (A, B))
        A64 = (ab.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        B64 = (bb.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        a, b, kw = cp.asarray(ab), cp.asarray(bb), dict(dtype="bf16", out_dtype="f32")
    else:
        a, b, kw = cp.asarray(A.astype(np.float16)), cp.asarray(B.astype(np.float16)), {}
        A64, B64 = A.astype(np.float16).astype(np.float64), B.astype(np.float16).astype(np.float64)
    c = runtime.gemm(a, b, path="tiny", **kw)
    ref = A64 @ B64
    got = cp.asnumpy(c).astype(np.float64)
    tol = 1e-3 * np.sqrt(k) * (1 if dt == "bf16" else 2) + 2e-3 * np.abs(ref)
    assert np.all(np.abs(got - ref) <= tol + 1e-6), np.max(np.abs(got - ref))


def test_gpu_tiny_strided_transposed_offset_and_negative_views():
    cp = _gpu()
    rng = np.random.default_rng(5)
    big_a = cp.asarray(rng.standard_normal((40, 90)).astype(np.float16))
    big_b = cp.asarray(rng.standard_normal((70, 60)).astype(np.float16))
    cases = [
        (big_a[1:8, 3:20], big_b[2:19, 5:18]),  # offset bases, odd leading dimensions
        (big_a[1:20:3, 7:79:4], big_b[::-1][3:21, 1:40:3]),  # strides everywhere, reversed rows
        (big_a[:17, :7].T, big_b[:13, :17].T[:, :13]),  # transposed
    ]
    for a, b in cases:
        out = cp.zeros((b.shape[1] + 3, a.shape[0] + 2), dtype=cp.float32)[1:-2:1, 2:].T
        got = runtime.gemm(a, b, out, path="tiny")
        assert got is out
        ref = cp.asnumpy(a).astype(np.float64) @ cp.asnumpy(b).astype(np.float64)
        assert np.allclose(cp.asnumpy(out), ref, atol=2e-2, rtol=2e-3)


def test_gpu_auto_routes_tiny_and_matches_the_tiled_path():
    cp = _gpu()
    rng = np.random.default_rng(9)
    a = cp.asarray(rng.standard_normal((7, 13)).astype(np.float16))
    b = cp.asarray(rng.standard_normal((13, 17)).astype(np.float16))
    c = runtime.gemm(a, b)
    assert isinstance(runtime.last_launch["plan"], tiny.TinyPlan)
    d = runtime.gemm(a, b, path="wgmma" if cp.cuda.Device().compute_capability == "90" else "mma.sync")
    assert np.allclose(cp.asnumpy(c), cp.asnumpy(d), atol=1e-2)


def test_gpu_tiny_on_torch_tensors():
    torch = pytest.importorskip("torch")
    _gpu()
    if not torch.cuda.is_available():
        pytest.skip("no CUDA torch")
    g = torch.Generator(device="cuda").manual_seed(3)
    for dt in (torch.float16, torch.bfloat16):
        # (3, 5, 1000): 63 k-steps per warp; with a column-major B every operand meets the
        # tiled kernels' 16-byte contract, so the model keeps the tiled plan; a row-major B
        # (10-byte rows) would be copied first, so the tiny kernel takes it
        for m, n, k, col_b, want_tiny in (
            (7, 13, 17, True, True),
            (1, 1, 1, True, True),
            (3, 5, 1000, True, False),
            (3, 5, 1000, False, True),
        ):
            a = torch.randn(m, k, device="cuda", dtype=dt, generator=g)
            if col_b:
                b = torch.randn(n, k, device="cuda", dtype=dt, generator=g).T
            else:
                b = torch.randn(k, n, device="cuda", dtype=dt, generator=g)
            c = runtime.gemm(a, b)
            assert isinstance(runtime.last_launch["plan"], tiny.TinyPlan) == want_tiny, (m, n, k, col_b)
            assert c.dtype == dt and c.shape == (m, n)
            ref = a.double() @ b.double()
            assert torch.allclose(c.double(), ref, atol=3e-2 * max(1, k**0.5 / 4), rtol=1e-2)


@pytest.mark.parametrize("act", ["none", "relu", "silu", "gelu"])
@pytest.mark.parametrize("along", ["n", "m"])
def test_gpu_tiny_epilogue_matches_float64(act, along):
    cp = _gpu()
    from math import erf

    rng = np.random.default_rng(11)
    m, n, k = 7, 13, 17
    a = cp.asarray(rng.standard_normal((m, k)).astype(np.float16))
    b = cp.asarray(rng.standard_normal((k, n)).astype(np.float16))
    bias = cp.asarray(rng.standard_normal(n if along == "n" else m).astype(np.float32))
    cin = cp.asarray(rng.standard_normal((m, n)).astype(np.float32))
    out = cp.empty((m, n), dtype=cp.float32)
    kw = dict(bias=bias, activation=act, bias_along=along, c=cin, alpha=0.5, beta=2.0, path="tiny")
    got = runtime.gemm(a, b, out, **kw)
    assert got is out and isinstance(runtime.last_launch["plan"], tiny.TinyPlan)
    A, B = cp.asnumpy(a).astype(np.float64), cp.asnumpy(b).astype(np.float64)
    bv = cp.asnumpy(bias).astype(np.float64)
    y = 0.5 * (A @ B) + 2.0 * cp.asnumpy(cin) + (bv[None, :] if along == "n" else bv[:, None])
    f = {
        "none": lambda x: x,
        "relu": lambda x: np.maximum(x, 0),
        "silu": lambda x: x / (1 + np.exp(-x)),
        "gelu": lambda x: 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2))),
    }[act]
    assert np.allclose(cp.asnumpy(out), f(y), atol=2e-3, rtol=2e-3)
    # in place: c is the output itself
    out2 = cp.asarray(cp.asnumpy(cin))
    runtime.gemm(a, b, out2, c=out2, beta=1.0, path="tiny")
    assert np.allclose(cp.asnumpy(out2), A @ B + cp.asnumpy(cin), atol=2e-3, rtol=2e-3)
