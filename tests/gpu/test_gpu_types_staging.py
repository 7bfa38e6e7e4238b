"""Operands the typed kernels cannot read as they are (MN-major, rows not 16 bytes apart,
batches not 16 bytes apart) are copied into a K-major buffer first: the copy holds the same
values, in a layout typed_operand accepts; K-major operands are passed through untouched."""

import numpy as np
import pytest

from layoutproof.gpu.errors import GemmInputError
from layoutproof.gpu.host import typed

torch = pytest.importorskip("torch")

TYPES = {"tf32": torch.float32, "e4m3": torch.float8_e4m3fn, "s8": torch.int8, "u8": torch.uint8}


def _facts(x):
    it = x.element_size()
    return tuple(x.shape), tuple(s * it for s in x.stride()), it, x.data_ptr()


def _values(x):
    return x.float() if x.dtype == torch.float8_e4m3fn else x


def _make(dtype, shape):
    t = TYPES[dtype]
    if t in (torch.int8, torch.uint8):
        return torch.randint(0, 100, shape, dtype=t)
    return torch.randn(shape).to(t)


@pytest.mark.parametrize("dtype", sorted(TYPES))
@pytest.mark.parametrize(
    "name, make",
    [
        ("a", lambda d: _make(d, (40, 24)).t()),  # column-major A (24 x 40)
        ("b", lambda d: _make(d, (24, 40))),  # row-major B (K x N, N contiguous)
        ("a", lambda d: _make(d, (24, 40))[:, :37]),  # rows 40 elements apart: K = 37
        ("b", lambda d: _make(d, (3, 40, 24)).transpose(1, 2)[:, :, :30]),  # batched, N sliced
        ("a", lambda d: _make(d, (3, 24, 40)).transpose(1, 2)),  # batched column-major A
    ],
)
def test_staged_operand_is_k_major_and_equal(dtype, name, make):
    x = make(dtype)
    it = x.element_size()
    try:
        typed._typed_operand3(name, *_facts(x), dtype)
        readable = True
    except GemmInputError:
        readable = False
    y = typed.stage_k_major(x, name, it)
    assert (y is x) == readable  # copied exactly when the kernels cannot read it
    assert y.shape == x.shape and y.dtype == x.dtype
    assert torch.equal(_values(y), _values(x))
    typed._typed_operand3(name, *_facts(y), dtype)  # accepted as it is


def test_each_kind_of_layout_is_staged_for_one_byte_types():
    for name, x in (
        ("a", _make("s8", (40, 32)).t()),  # column-major A
        ("b", _make("s8", (32, 48))),  # row-major B
        ("a", _make("s8", (24, 40))[:, :32]),  # rows 40 bytes apart
        ("b", _make("s8", (3, 40, 24)).transpose(1, 2)),  # K-major, rows 24 bytes apart
    ):
        assert typed.stage_k_major(x, name, 1) is not x


@pytest.mark.parametrize("dtype", sorted(TYPES))
def test_k_major_operands_pass_through(dtype):
    a = _make(dtype, (48, 64))
    b = _make(dtype, (32, 64)).t()  # K x N column-major
    assert typed.stage_k_major(a, "a", a.element_size()) is a
    assert typed.stage_k_major(b, "b", b.element_size()) is b
    ab = _make(dtype, (2, 48, 64))
    assert typed.stage_k_major(ab, "a", ab.element_size()) is ab


def test_numpy_stand_in():
    b = np.arange(24, dtype=np.int8).reshape(4, 6)  # K x N row-major
    s = typed.stage_k_major(b, "b", 1)
    assert s.strides[0] == 1 and s.strides[1] % 16 == 0 and (s == b).all()


def test_gpu_staged_operands_give_the_k_major_result():
    cp = pytest.importorskip("cupy")
    try:
        if not torch.cuda.is_available() or cp.cuda.Device().compute_capability != "90":
            pytest.skip("the typed wgmma kernels need an sm_90 GPU")
    except Exception:
        pytest.skip("no GPU")
    from layoutproof.gpu.host.plan import last_launch

    g = torch.Generator(device="cuda").manual_seed(4)
    a = torch.randint(-128, 128, (130, 96), generator=g, device="cuda", dtype=torch.int8)
    bt = torch.randint(-128, 128, (72, 96), generator=g, device="cuda", dtype=torch.int8)
    want = typed.typed_gemm(a, bt.t(), dtype="s8")
    assert last_launch["staged"] == ()
    got = typed.typed_gemm(a.t().contiguous().t(), bt.t().contiguous(), dtype="s8")
    assert last_launch["staged"] == ("a", "b") and torch.equal(got, want)
