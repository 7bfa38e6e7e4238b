"""The proven kernels on a GPU: every Hopper variant and the mma.sync kernel against a float64
reference on awkward shapes, and each wgmma atom against the hardware.  Without CuPy and a
GPU (CI) every test here is a skip; the wgmma tests also need compute capability 9.0."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest

from layoutproof.gpu.config import GemmConfig
from layoutproof.gpu.host import runtime
from layoutproof.gpu.kernels.wgmma import Sm90Config

pytestmark = pytest.mark.skipif(not runtime.gpu_available(), reason="no CUDA GPU / CuPy")


def _cupy():
    # CuPy is present wherever these tests run (a GPU machine); CI never reaches here
    return pytest.importorskip("cupy")


def _cc() -> str:
    return _cupy().cuda.Device().compute_capability


hopper = pytest.mark.skipif(
    not runtime.gpu_available() or _cc() != "90", reason="wgmma needs compute capability 9.0"
)

SHAPES = [(1, 1, 1), (37, 45, 51), (130, 260, 200), (129, 513, 1000), (1000, 3, 77), (256, 512, 256)]


def _run(config, m, n, k, ao, bo, out_dtype):
    cupy = _cupy()
    rng = cupy.random.default_rng(m * 7 + n * 3 + k)
    a = rng.integers(-3, 4, size=(m, k)).astype(cupy.float16)
    b = rng.integers(-3, 4, size=(k, n)).astype(cupy.float16)
    a = cupy.asfortranarray(a) if ao == "F" else a
    b = cupy.asfortranarray(b) if bo == "F" else b
    c = cupy.full((m, n), cupy.nan, dtype=cupy.float32 if out_dtype == "f32" else cupy.float16)
    runtime.gemm(a, b, c, config=config, out_dtype=out_dtype)
    ref = a.astype(cupy.float64) @ b.astype(cupy.float64)
    got = c.astype(cupy.float64)
    # small integers: every product and partial sum is exact in f32; the f16 store rounds
    tol = 0 if out_dtype == "f32" else 1e-3
    err = float(cupy.abs(got - ref).max() / max(1.0, float(cupy.abs(ref).max())))
    assert not bool(cupy.isnan(got).any()) and err <= tol, (config, m, n, k, ao, bo, err)


HOPPER_CONFIGS = [
    Sm90Config(loader="tma", schedule="ws"),
    Sm90Config(bm=128, bn=128, stages=6, loader="tma", schedule="ws"),
    Sm90Config(bm=64, bn=128, stages=4, loader="tma", schedule="ws", cluster=2),
    Sm90Config(loader="tma", schedule="ws", cluster=2),
    Sm90Config(loader="tma"),
    Sm90Config(),
]


@hopper
@pytest.mark.parametrize("config", HOPPER_CONFIGS, ids=lambda c: c.key())
@pytest.mark.parametrize("ao, bo", [("C", "C"), ("C", "F"), ("F", "C"), ("F", "F")])
def test_hopper_kernels_match_float64(config, ao, bo):
    if config.loader == "tma" and not runtime.tma_available():
        pytest.skip("cuda-python is not installed: no tensor maps")
    for m, n, k in SHAPES:
        for od in ("f32", "f16"):
            _run(config, m, n, k, ao, bo, od)


@pytest.mark.parametrize("ao, bo", [("C", "C"), ("F", "F")])
def test_mma_sync_kernel_matches_float64(ao, bo):
    for m, n, k in SHAPES:
        _run(GemmConfig(), m, n, k, ao, bo, "f32")


@hopper
def test_every_tested_wgmma_atom_agrees_with_the_hardware():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
    w = importlib.import_module("wgmma_atom_check")  # bench/wgmma_atom_check.py
    cupy = _cupy()

    rng = np.random.default_rng(3)
    for mode in ("SS", "RS"):
        for dtype in ("f16", "bf16"):
            for n in (8, 24, 128, 256):
                nbad, total, first = w.check(cupy, n, dtype, mode, rng)
                assert nbad == 0, (mode, dtype, n, first)


@hopper
@pytest.mark.parametrize(
    "config", [HOPPER_CONFIGS[0], GemmConfig()], ids=lambda c: c.key() if hasattr(c, "key") else str(c)
)
@pytest.mark.parametrize("ao, bo", [("C", "C"), ("F", "C")])
def test_repeated_calls_launch_directly_and_match_the_first(config, ao, bo):
    """A repeated plain call with a configuration asked for takes the kept plan's direct
    launch (runtime._Direct) and writes the first call's bits, into a new output and a
    given one."""
    if config.__class__.__name__ == "Sm90Config" and not runtime.tma_available():
        pytest.skip("cuda-python is not installed: no tensor maps")
    cupy = _cupy()
    rng = cupy.random.default_rng(17)
    m, n, k = 264, 136, 520  # 16-byte leading dimensions in either order: nothing staged
    a = rng.standard_normal((m, k), dtype=cupy.float32).astype(cupy.float16)
    b = rng.standard_normal((k, n), dtype=cupy.float32).astype(cupy.float16)
    a = cupy.asfortranarray(a) if ao == "F" else a
    b = cupy.asfortranarray(b) if bo == "F" else b
    first = runtime.gemm(a, b, config=config)
    dc = runtime._DIRECT
    assert runtime._direct_key(dc, a, b, None, config, None, None, "auto", "n") in dc.entries
    again = runtime.gemm(a, b, config=config)
    out = cupy.full((m, n), cupy.nan, dtype=cupy.float16)
    runtime.gemm(a, b, out, config=config)
    assert runtime._direct_key(dc, a, b, out, config, None, None, "auto", "n") in dc.entries
    out[...] = cupy.nan
    runtime.gemm(a, b, out, config=config)
    for got in (again, out):
        assert bool(cupy.array_equal(got.view(cupy.uint16), first.view(cupy.uint16))), (config, ao, bo)
    ref = a.astype(cupy.float64) @ b.astype(cupy.float64)
    err = float(cupy.linalg.norm(first.astype(cupy.float64) - ref) / cupy.linalg.norm(ref))
    assert err < 1e-2, (config, ao, bo, err)


@hopper
@pytest.mark.parametrize(
    "argv",
    [
        ["--m", "256", "--n", "512", "--k", "384", "--bias", "n", "--activation", "gelu"],
        ["--m", "16", "--n", "4096", "--k", "4096", "--bias", "m", "--activation", "silu", "--path", "auto"],
        ["--m", "128", "--n", "256", "--k", "64"],
    ],
    ids=["fused-gelu", "fixup-silu-bias-m", "plain"],
)
def test_cli_run_checks_the_epilogue_against_float64_and_times_the_peers(argv, capsys):
    """``layoutproof gemm`` on a GPU: the emitted kernel runs with a drawn bias and the
    activation, is checked against float64 with both applied (exit 0 only within the
    tolerance), and is timed beside cupy.matmul (and torch where installed)."""
    from layoutproof.gpu.cli import main

    assert main(argv + ["--reps", "3"]) == 0
    out = capsys.readouterr().out
    assert "relative error vs float64" in out and "ratio to the faster" in out
    assert "cuBLAS (cupy.matmul" in out
