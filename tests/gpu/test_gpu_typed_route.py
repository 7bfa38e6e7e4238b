"""gemm's route to the other number types for CuPy-style arrays, without a GPU: float32 only
when tf32 is asked for, uint8 only when it says what it holds, the typed kernels' limits
named (a batch of more than one dimension, beta without its C input) -- each a
GemmInputError before any device work."""

import pytest

from layoutproof.gpu.errors import GemmInputError
from layoutproof.gpu.host import runtime


class Arr:
    """What the route reads of an array: its dtype and rank."""

    def __init__(self, dtype, shape=(64, 64)):
        self.dtype, self.shape, self.ndim = dtype, shape, len(shape)


@pytest.mark.parametrize(
    "dtype, kw, match",
    [
        ("float32", {}, "precision='tf32'"),
        ("uint8", {}, "dtype='u8'"),
        ("float32", {"precision": "fp32"}, "precision='tf32'"),
        ("float16", {"precision": "tf32", "dtype": "bf16"}, "takes no other dtype"),
        ("int8", {"beta": 1.0}, "beta != 0 needs the C input"),
    ],
)
def test_typed_route_refuses_by_name(dtype, kw, match):
    with pytest.raises(GemmInputError, match=match):
        runtime.gemm(Arr(dtype), Arr(dtype), **kw)


def test_typed_route_takes_2d_or_3d_operands_only():
    with pytest.raises(GemmInputError, match="2-D operands or 3-D batches"):
        runtime.gemm(Arr("int8", (2, 2, 64, 64)), Arr("int8", (64, 64)))
    with pytest.raises(GemmInputError, match="2-D operands or 3-D batches"):
        runtime.gemm(Arr("int8", (64,)), Arr("int8", (64, 64)))


def test_typed_kind():
    assert runtime._typed_kind(Arr("int8"), None) == "s8"
    assert runtime._typed_kind(Arr("uint8"), "e4m3") == "e4m3"
    assert runtime._typed_kind(Arr("float32"), "tf32") == "tf32"
    assert runtime._typed_kind(Arr("float16"), None) is None
    assert runtime._typed_kind(Arr("uint16"), "bf16") is None
