"""The copy path's staging: an operand that breaks
the kernels' 16-byte contract is copied into a padded buffer the plan keeps per stream --
made (zero padding) on the first call, then refilled with one ``cudaMemcpy2DAsync`` where
its rows are contiguous; the launch reads the same buffer (and so the same tensor map)."""

from __future__ import annotations

import types

import pytest
from test_gpu_plan import _ExternalStream, fake  # noqa: F401  (the fixture)

from layoutproof.gpu.host import rule as P
from layoutproof.gpu.host import runtime


@pytest.fixture
def fake2d(fake, monkeypatch):  # noqa: F811
    monkeypatch.setitem(P.ELEM_RULE, "max_us", 0.0)  # the copy path, not the in-place loads
    calls = []
    fake.cuda.runtime.memcpy2DAsync = lambda *a: calls.append(a)
    fake.copy2d = calls
    fake.stream = 0x5  # the current stream, read by the full path and the direct launch alike
    fake.cuda.get_current_stream = lambda: types.SimpleNamespace(ptr=fake.stream)
    fake.cuda.ExternalStream = lambda ptr: _ExternalStream(fake, ptr)
    return fake


def test_copy_path_reuses_its_buffer_and_copies_rows_with_memcpy2d(fake2d):
    cp = fake2d
    a = cp.array((64, 100), offset=2)  # not 16-byte aligned, ld 100
    b = cp.array((100, 64))
    runtime.gemm(a, b, path="wgmma")
    first = cp.launches[-1]["values"][0]
    n_copies = len(cp.copies)
    for _ in range(3):
        runtime.gemm(a, b, path="wgmma")
        assert cp.launches[-1]["values"][0] == first  # the kept buffer
    assert len(cp.copies) == n_copies  # no element-wise copy after the first call
    assert len(cp.copy2d) == 3
    dst, dpitch, src, spitch, width, height, kind, stream = cp.copy2d[-1]
    assert (dst, dpitch, src, spitch) == (first, 104 * 2, a.data.ptr, 100 * 2)
    assert (width, height, kind, stream) == (100 * 2, 64, 3, 0x5)


def test_copy_path_keeps_one_buffer_per_stream(fake2d):
    cp = fake2d
    a, b = cp.array((64, 100), offset=2), cp.array((100, 64))
    runtime.gemm(a, b, path="wgmma")
    p5 = cp.launches[-1]["values"][0]
    cp.stream = 0x9
    runtime.gemm(a, b, path="wgmma")
    p9 = cp.launches[-1]["values"][0]
    assert p9 != p5 and p9 % 16 == 0
    assert cp.launches[-1]["stream"] == 0x9


def test_a_column_major_operand_is_staged_column_by_column_with_memcpy2d(fake2d):
    cp = fake2d
    # A column-major with ld 100 (not a multiple of 8) while B is row-major: the kernel
    # reads A's padded copy in A's own (column-major) order: rows of A^T are contiguous
    a = cp.array((100, 64), order="F", offset=2)
    b = cp.array((64, 64))
    runtime.gemm(a, b, path="wgmma")
    runtime.gemm(a, b, path="wgmma")
    assert len(cp.copy2d) == 1
