"""PyTorch interop: ``gemm`` on torch tensors and the ``layoutproof::gemm`` operator.

Without a GPU (CI): the operator's registration and schema, its fake (meta) implementation
on meta and fake CUDA tensors, ``torch.compile(fullgraph=True)`` tracing it, the bad-input
errors, and -- with a fake CuPy standing in for the device and CPU tensors standing in for
CUDA ones -- the zero-copy path itself: the kernel is handed the tensors' own addresses and
writes into the torch tensor that is returned.  With a GPU: the numerics against
``torch.matmul`` in float64, strided and transposed views, batches, output types, the fused
epilogue, the caller's current stream, CUDA graph capture and ``torch.compile``."""

from __future__ import annotations

import subprocess
import sys
import types

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_gpu_plan import _FakeArray, _FakeCupy  # noqa: E402  (the shared fake CuPy)

from layoutproof.gpu.errors import GemmInputError  # noqa: E402
from layoutproof.gpu.host import cache, device, runtime, torch_op  # noqa: E402
from layoutproof.gpu.host import rule as P  # noqa: E402

op = torch_op.gemm_op


# ============================================================================ no GPU needed
def test_importing_the_package_imports_neither_torch_nor_cupy():
    code = (
        "import sys, layoutproof.gpu, layoutproof.gpu.host.runtime, layoutproof.gpu.host.torch_op;"
        "print('torch' in sys.modules, 'cupy' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_the_operator_is_registered_with_its_schema():
    assert torch.ops.layoutproof.gemm.default is not None
    schema = str(torch.ops.layoutproof.gemm.default._schema)
    assert schema.startswith("layoutproof::gemm(Tensor a, Tensor b, Tensor? bias=None, Tensor? c=None")
    assert schema.endswith("-> Tensor")
    assert torch_op.gemm_op is op  # registered once


@pytest.mark.parametrize(
    "sa, sb, want",
    [
        ((7, 13), (13, 17), (7, 17)),
        ((4, 7, 13), (13, 17), (4, 7, 17)),
        ((7, 13), (4, 13, 17), (4, 7, 17)),
        ((1, 7, 13), (4, 13, 17), (4, 7, 17)),
        ((4, 7, 13), (4, 13, 17), (4, 7, 17)),
    ],
)
def test_meta_tensors_get_the_products_shape(sa, sb, want):
    for dt, odt in (
        (torch.float16, torch.float16),
        (torch.bfloat16, torch.bfloat16),
    ):
        a, b = torch.empty(sa, dtype=dt, device="meta"), torch.empty(sb, dtype=dt, device="meta")
        c = op(a, b)
        assert c.shape == want and c.dtype == odt and c.device.type == "meta" and c.is_contiguous()
    a, b = (
        torch.empty(sa, dtype=torch.bfloat16, device="meta"),
        torch.empty(sb, dtype=torch.bfloat16, device="meta"),
    )
    assert op(a, b, out_dtype=torch.float32).dtype == torch.float32


def test_meta_tensors_of_the_typed_kernels():
    def m(dt, *shape):
        return torch.empty(shape, dtype=dt, device="meta")

    f32 = m(torch.float32, 64, 32), m(torch.float32, 32, 48)
    assert op(*f32, dtype="tf32").dtype == torch.float32
    assert op(*f32, dtype="tf32", out_dtype=torch.bfloat16).dtype == torch.bfloat16
    for dt in (torch.float8_e4m3fn, torch.float8_e5m2):
        assert op(m(dt, 64, 32), m(dt, 32, 48)).dtype == torch.bfloat16
        assert op(m(dt, 64, 32), m(dt, 32, 48), alpha=0.5).shape == (64, 48)  # the fp8 scale
    for dt in (torch.int8, torch.uint8):
        assert op(m(dt, 64, 32), m(dt, 32, 48)).dtype == torch.int32
    with pytest.raises(GemmInputError, match=r"precision='tf32' \(or dtype='tf32'\)"):
        op(*f32)
    # batches, the fused epilogue and scaled int8 outputs (the typed kernels' epilogue)
    assert op(m(torch.int8, 2, 64, 32), m(torch.int8, 32, 48)).shape == (2, 64, 48)
    assert op(m(torch.int8, 64, 32), m(torch.int8, 32, 48), None, None, "relu").dtype == torch.int32
    assert op(m(torch.int8, 64, 32), m(torch.int8, 32, 48), alpha=2.0).dtype == torch.int32
    assert op(m(torch.int8, 64, 32), m(torch.int8, 32, 48), out_dtype=torch.float16).dtype == torch.float16
    e4 = torch.float8_e4m3fn
    assert op(m(e4, 64, 32), m(e4, 32, 48), m(torch.float32, 48)).shape == (64, 48)
    with pytest.raises(GemmInputError, match="beta != 0 needs the C input"):
        op(m(e4, 64, 32), m(e4, 32, 48), beta=1.0)
    with pytest.raises(GemmInputError, match="out_dtype"):
        op(m(torch.int8, 64, 32), m(torch.int8, 32, 48), out_dtype=torch.float64)
    with pytest.raises(GemmInputError, match="the one choice is dtype='tf32'"):
        op(m(torch.float16, 64, 32), m(torch.float16, 32, 48), dtype="tf32")


def test_meta_function_refuses_what_the_gemm_refuses():
    m = dict(device="meta", dtype=torch.float16)
    a, b = torch.empty(8, 16, **m), torch.empty(16, 4, **m)
    with pytest.raises(GemmInputError, match="inner dimensions differ.*transpose"):
        op(a, torch.empty(15, 4, **m))
    with pytest.raises(GemmInputError, match="convert one"):
        op(a, torch.empty(16, 4, device="meta", dtype=torch.bfloat16))
    with pytest.raises(GemmInputError, match="batch extents differ"):
        op(torch.empty(2, 8, 16, **m), torch.empty(3, 16, 4, **m))
    with pytest.raises(GemmInputError, match="2-D .* or 3-D"):
        op(torch.empty(16, **m), b)
    with pytest.raises(GemmInputError, match="not a GEMM input type.*to\\(torch"):
        op(a.double(), b.double())
    with pytest.raises(GemmInputError, match=r"bias must have shape \(4,\)"):
        op(a, b, torch.empty(8, **m))
    with pytest.raises(GemmInputError, match="needs the C input"):
        op(a, b, alpha=2.0)
    with pytest.raises(GemmInputError, match="out_dtype"):
        op(a, b, out_dtype=torch.float64)


@pytest.mark.filterwarnings("ignore:Accessing the data pointer of FakeTensor")
def test_fake_cuda_tensors_trace_and_devices_must_agree():
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode():
        a = torch.empty(64, 32, device="cuda", dtype=torch.bfloat16)
        b = torch.empty_strided((32, 48), (1, 32), device="cuda", dtype=torch.bfloat16)
        c = op(a, b, out_dtype=torch.float16)
        assert c.shape == (64, 48) and c.dtype == torch.float16 and c.device.type == "cuda"
        if torch.cuda.is_available() and torch.cuda.device_count() < 2:
            return  # a real CUDA build checks the ordinal of a fake device
        with pytest.raises(GemmInputError, match="one device"):
            op(a, torch.empty(32, 48, device="cuda:1", dtype=torch.bfloat16))
        with pytest.raises(GemmInputError, match="one device"):
            runtime.gemm(a, torch.empty(32, 48, device="cuda:1", dtype=torch.bfloat16))


def test_opcheck_on_meta_tensors():
    a = torch.empty(16, 32, dtype=torch.float16, device="meta")
    b = torch.empty(32, 8, dtype=torch.float16, device="meta")
    bias = torch.empty(8, dtype=torch.float32, device="meta")
    for args, kw in (((a, b), {}), ((a, b, bias), {"activation": "gelu"})):
        res = torch.library.opcheck(
            torch.ops.layoutproof.gemm.default,
            args,
            kw,
            test_utils=("test_schema", "test_faketensor", "test_autograd_registration"),
        )
        assert set(res.values()) == {"SUCCESS"}, res


@pytest.mark.parametrize("through", ["op", "gemm"])
def test_compile_fullgraph_traces_the_operator(through):
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def f(a, b, bias):
        if through == "op":
            y = torch.ops.layoutproof.gemm(a, b, bias, activation="relu")
        else:
            y = runtime.gemm(a, b, bias=bias, activation="relu")
        return y * 2

    g = torch.compile(f, fullgraph=True, backend=backend)
    a, b = torch.randn(16, 32).half(), torch.randn(32, 8).half()
    bias = torch.randn(8)
    # tracing runs the meta function; running the graph calls the real operator, which
    # refuses CPU tensors
    with pytest.raises(GemmInputError, match="move it to the GPU"):
        g(a, b, bias)
    (gm,) = graphs
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    assert torch.ops.layoutproof.gemm.default in targets or torch.ops.layoutproof.gemm in targets


@pytest.mark.slow  # a fresh interpreter importing torch and compiling: several seconds
def test_compile_registers_the_operator_on_first_use():
    # a process that loaded the GEMM before torch: the first call inside a compiled function
    # registers the operator (run as is, not traced), then traces it
    code = (
        "from layoutproof.gpu.host import runtime\n"
        "import torch\n"
        "from layoutproof.gpu.errors import GemmInputError\n"
        "gs = []\n"
        "def backend(gm, ex):\n"
        "    gs.append(gm)\n"
        "    return gm.forward\n"
        "g = torch.compile(lambda a, b: runtime.gemm(a, b) * 2, fullgraph=True, backend=backend)\n"
        "try:\n"
        "    g(torch.randn(4, 8).half(), torch.randn(8, 4).half())\n"
        "except GemmInputError as e:\n"
        "    print('refused:', e)\n"
        "print([str(n.target) for n in gs[0].graph.nodes if n.op == 'call_function'])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "refused: gemm: a is on cpu" in out.stdout
    assert "layoutproof.gemm" in out.stdout.splitlines()[-1]


def test_bad_torch_inputs_name_the_fix():
    a, b = torch.randn(8, 16).half(), torch.randn(16, 4).half()
    with pytest.raises(GemmInputError, match=r"a is on cpu.*a\.cuda\(\)"):
        runtime.gemm(a, b)
    with pytest.raises(GemmInputError, match=r"move it to the GPU"):
        op(a, b)
    with pytest.raises(GemmInputError, match="torch tensors for all of them.*from_dlpack"):
        runtime.gemm(a, np.zeros((16, 4), np.float16))
    with pytest.raises(GemmInputError, match="carry their type"):
        op(a.to("meta"), b.to("meta"), dtype="bf16")
    with pytest.raises(GemmInputError, match="gemm_plan: takes CuPy arrays"):
        runtime.gemm_plan(a, b)
    with pytest.raises(GemmInputError, match="needs the C input"):
        runtime.gemm(a, b, beta=1.0)
    z = torch.randn(16, 4, dtype=torch.complex64)
    neg = z.conj().imag  # float32 with torch's negative bit: its memory holds -imag
    assert neg.is_neg()
    with pytest.raises(GemmInputError, match=r"gemm: b is a negated view.*resolve_neg\(\)"):
        runtime.gemm(a.float(), neg, dtype="tf32")
    with pytest.raises(GemmInputError, match=r"a is a negated view"):
        runtime.gemm(torch._neg_view(a), b)


# ============================================================================ a fake device
@pytest.fixture(params=["python", "native"])
def fake(request, monkeypatch, tmp_path, torch_native_module):
    """CPU tensors stand in for CUDA ones, a fake CuPy for the device (launches recorded).
    Each test runs twice: with the Python path alone, and with the native front serving the
    calls of kept signatures (``cp.native``: its Dispatch, or None)."""
    cp = _FakeCupy()
    cp.native = None
    torch_op.HOT.clear()  # (conftest restores it)
    if request.param == "native":
        if torch_native_module is None:
            pytest.skip("the native front cannot be built here (a C++ compiler and torch's headers)")
        cp.native = torch_native_module.Dispatch()
        torch_op.HOT[:] = [cp.native, lambda: False]
    cp.current = 0x5
    cp.cuda.get_current_stream = lambda: types.SimpleNamespace(ptr=cp.current)
    cp.entered = []

    class Ext:
        def __init__(self, ptr, dev):
            self.ptr, self.dev = ptr, dev

        def __enter__(self):
            cp.entered.append(self.ptr)
            self.prev, cp.current = cp.current, self.ptr

        def __exit__(self, *exc):
            cp.current = self.prev

    cp.cuda.ExternalStream = Ext
    monkeypatch.setenv("LAYOUTPROOF_CACHE", str(tmp_path))
    monkeypatch.setattr(device, "_CUPY", [cp])
    monkeypatch.setattr(device, "_DEVICE_FACTS", {})
    monkeypatch.setattr(cache, "_MODULES", {})
    monkeypatch.setattr(runtime, "_PLANS", {})
    monkeypatch.setattr(torch_op, "_ENTRIES", {})
    monkeypatch.setattr(torch_op, "_EXTERNAL", {})
    monkeypatch.setattr(device, "tma_available", lambda: False)
    monkeypatch.setattr(P, "_WARNED", {"tma": True})
    monkeypatch.setattr(torch_op, "_DEVICE_TYPE", "cpu")
    cp.stream = 0x5
    monkeypatch.setattr(torch_op, "_raw_stream_fn", lambda t: lambda dev: cp.stream)
    cp.views = []

    def external_array(ptr, nbytes, shape, strides, dtype, dev):
        cp.views.append((ptr, nbytes, shape, strides, np.dtype(dtype)))
        return _FakeArray(cp, shape, strides, dtype, ptr, dev)

    monkeypatch.setattr(device, "external_array", external_array)
    device._sm_count_of.cache_clear()
    yield cp
    device._sm_count_of.cache_clear()


def _launch(cp):
    pa, pb, pc, m, n, k, lda, ldb, ldc, _ = cp.launches[-1]["values"]
    return (pa, pb, pc), (m, n, k), (lda, ldb, ldc)


def test_fake_device_zero_copy_in_and_torch_out(fake):
    a = torch.randn(96, 1024).half()  # above the tiny path's volume: the tiled plan
    b = torch.randn(1024, 72).half()
    c = runtime.gemm(a, b)
    assert isinstance(c, torch.Tensor) and c.shape == (96, 72) and c.dtype == torch.float16
    assert c.stride() == (72, 1)
    ptrs, mnk, lds = _launch(fake)
    assert ptrs == (a.data_ptr(), b.data_ptr(), c.data_ptr())  # the tensors' own memory
    assert mnk == (96, 72, 1024) and lds == (1024, 72, 72)
    assert fake.launches[-1]["stream"] == 0x5 and fake.entered == []
    # the DLPack view of the same tensor agrees with the view handed to the kernel
    va = fake.views[0]
    arr = np.from_dlpack(a)
    assert va[0] == arr.__array_interface__["data"][0] and va[2:4] == (arr.shape, arr.strides)
    # a second call: the entry, the plan and the views are reused, new output memory
    plan = runtime.last_launch["plan"]
    n_views = len(fake.views)
    c2 = runtime.gemm(a, b)
    assert runtime.last_launch["plan"] is plan and len(torch_op._ENTRIES) == 1
    assert _launch(fake)[0] == (a.data_ptr(), b.data_ptr(), c2.data_ptr())
    assert len(fake.views) == n_views  # the hot path hands the plan base addresses, no views
    if fake.native is not None:  # the second call was the native front's
        assert fake.native.hits == 1 and fake.native.size == 1


def test_a_kept_torch_signature_goes_straight_to_its_entrys_fast_function(monkeypatch):
    made, fast = [], []

    class Entry:  # stands in for torch_op._Entry: no plan, a fast function that records
        def __init__(self, torch_, tdev, a, b, out, bias, c, opts, od):
            made.append((tuple(a.shape), tuple(a.stride()), opts["activation"], od))
            self.fast = lambda *args: fast.append(args) or "fast"

        def run(self, a, b, out, bias, c, alpha, beta):
            return "made"

    monkeypatch.setattr(torch_op, "_Entry", Entry)
    monkeypatch.setattr(torch_op, "_check_devices", lambda named: torch.device("cpu"))
    torch_op.HOT.clear()  # the Python path's key (conftest restores the native front)
    monkeypatch.setattr(torch_op, "_ENTRIES", {})
    a, b = torch.zeros(8, 16, dtype=torch.float16), torch.zeros(16, 4, dtype=torch.float16)
    assert runtime.gemm(a, b) == "made" and len(made) == 1
    assert runtime.gemm(a, b) == "fast" and len(made) == 1  # the same key: no second entry
    assert fast[-1] == (a, b, None, None, a.data_ptr(), b.data_ptr())
    a2 = torch.zeros(8, 16, dtype=torch.float16)  # another tensor of the same signature
    assert runtime.gemm(a2, b) == "fast" and fast[-1][4] == a2.data_ptr()
    # anything the plan depends on makes another entry: strides, type, alignment, options
    runtime.gemm(torch.zeros(16, 8, dtype=torch.float16).t(), b)
    runtime.gemm(a.bfloat16(), b.bfloat16())
    runtime.gemm(torch.zeros(8 * 16 + 1, dtype=torch.float16)[1:].view(8, 16), b)
    runtime.gemm(a, b, activation="relu")
    runtime.gemm(a, b, out_dtype="f32")
    runtime.gemm(a, torch._neg_view(b))  # the negative bit (refused where the entry is made)
    assert len(made) == 7 and len(torch_op._ENTRIES) == 7
    assert made[1][1] == (1, 8) and made[4][2] == "relu" and made[5][3] == "f32"
    with pytest.raises(GemmInputError, match="needs the C input c"):  # not the fast function
        runtime.gemm(a, b, alpha=2.0)
    n = len(fast)
    out = torch.empty(8, 4, dtype=torch.float16)
    assert runtime.gemm(a, b, out) == "made" and runtime.gemm(a, b, out) == "fast"
    assert len(fast) == n + 1 and fast[-1][2] is out


def test_fake_device_native_front_takes_kept_signatures_again_after_it_starts_over(fake):
    if fake.native is None:
        pytest.skip("the native front's own test")
    a, b = torch.randn(96, 1024).half(), torch.randn(1024, 72).half()
    runtime.gemm(a, b)  # made: the Python path, and the entry handed to the front
    assert fake.native.size == 1 and fake.native.hits == 0
    c = runtime.gemm(a, b)
    assert fake.native.hits == 1 and _launch(fake)[0] == (a.data_ptr(), b.data_ptr(), c.data_ptr())
    fake.native.clear()  # (as when full): the next call is the Python path's, which hands it over again
    runtime.gemm(a, b)
    assert fake.native.hits == 1 and fake.native.size == 1
    runtime.gemm(a, b)
    assert fake.native.hits == 2
    fake.current = 0x99  # a foreign CuPy stream: the front leaves it to the Python path's refusal
    with pytest.raises(GemmInputError, match="CuPy stream .* is current"):
        runtime.gemm(a, b)
    assert fake.native.hits == 2


def test_fake_device_transposed_views_and_bf16(fake):
    a = torch.randn(1024, 96).bfloat16().t()  # (96, 1024), column-major: M-major A
    b = torch.randn(72, 1024).bfloat16().t()  # (1024, 72), column-major: K-major B
    out = torch.empty(96, 72, dtype=torch.float32)
    c = runtime.gemm(a, b, out)
    assert c is out
    ptrs, mnk, _ = _launch(fake)
    assert ptrs == (a.data_ptr(), b.data_ptr(), out.data_ptr())
    prob = runtime.last_launch["problem"]
    assert (prob.dtype, prob.out_dtype, prob.a_major, prob.b_major) == ("bf16", "f32", "m", "k")
    assert fake.views[0][4] == np.uint16  # bf16 travels as its bits
    # a column-major output is computed as the transposed product, still zero-copy
    outT = torch.empty(72, 96, dtype=torch.float32).t()
    runtime.gemm(a, b, outT)
    ptrs, mnk, _ = _launch(fake)
    assert ptrs == (b.data_ptr(), a.data_ptr(), outT.data_ptr()) and mnk == (72, 96, 1024)


def test_fake_device_batches_fold_into_one_product(fake):
    a = torch.randn(4, 24, 1024).half()
    b = torch.randn(1024, 72).half()
    c = runtime.gemm(a, b)
    assert c.shape == (4, 24, 72) and c.is_contiguous()
    ptrs, mnk, _ = _launch(fake)
    assert ptrs == (a.data_ptr(), b.data_ptr(), c.data_ptr()) and mnk == (96, 72, 1024)


def test_fake_device_runs_on_torchs_current_stream(fake):
    a, b = torch.randn(64, 32).half(), torch.randn(32, 64).half()
    fake.current, fake.stream = 0, 0x77  # CuPy on its default stream, torch on another
    runtime.gemm(a, b)  # launched on torch's stream handle itself: no CuPy stream entered
    assert fake.launches[-1]["stream"] == 0x77 and fake.entered == []
    fake.current = 0x99  # a CuPy stream the caller made current, not torch's
    with pytest.raises(GemmInputError, match="CuPy stream .* is current.*ExternalStream"):
        runtime.gemm(a, b)


def test_fake_device_small_products_take_the_tiny_kernel_in_place(fake):
    from layoutproof.gpu.host.tiny import TinyPlan

    a = torch.randn(40, 13).half()[3:10]  # (7, 13) at an odd offset
    b = torch.randn(17, 13).half().t()  # (13, 17), column-major
    c = runtime.gemm(a, b)
    assert isinstance(runtime.last_launch["plan"], TinyPlan) and not fake.copies
    ln = fake.launches[-1]
    assert ln["values"][:3] == [a.data_ptr(), b.data_ptr(), c.data_ptr()]
    assert ln["values"][3:] == [7, 17, 13, 13, 1, 1, 13, 17, 1] and ln["stream"] == 0x5
    # a batch of A rows over one B folds into one tiny product, at the same addresses
    a3 = torch.randn(2, 3, 13).half()
    c3 = runtime.gemm(a3, b)
    assert c3.shape == (2, 3, 17) and isinstance(runtime.last_launch["plan"], TinyPlan)
    assert fake.launches[-1]["values"][:6] == [a3.data_ptr(), b.data_ptr(), c3.data_ptr(), 6, 17, 13]


def test_fake_device_checks_out_and_dtypes(fake):
    a, b = torch.randn(64, 32).half(), torch.randn(32, 64).half()
    with pytest.raises(GemmInputError, match="out is"):
        runtime.gemm(a, b, torch.empty(64, 63, dtype=torch.float16))
    with pytest.raises(GemmInputError, match="out_dtype"):
        runtime.gemm(a, b, out_dtype="f64")
    c = runtime.gemm(a, b, out_dtype=torch.float32)
    assert c.dtype == torch.float32 and runtime.last_launch["problem"].out_dtype == "f32"
    with pytest.raises(GemmInputError, match="carry their type"):
        runtime.gemm(a, b, dtype="bf16")


def test_fake_device_routes_the_typed_kernels(fake, monkeypatch):
    from layoutproof.gpu.host import typed as typed_mod

    calls = []

    def typed_gemm(a, b, *, dtype, out_dtype=None, scale=1.0, out=None, config=None, **epilogue):
        calls.append((a, b, dtype, out_dtype, scale, out, config, epilogue))
        return "product"

    monkeypatch.setattr(typed_mod, "typed_gemm", typed_gemm)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    a, b = torch.randn(64, 32), torch.randn(48, 32).t()
    assert runtime.gemm(a, b, dtype="tf32") == "product"
    assert calls[-1][:6] == (a, b, "tf32", "f32", 1.0, None)
    fa, fb = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn)
    runtime.gemm(fa, fb, alpha=0.25, out_dtype=torch.float16)
    assert calls[-1][2:5] == ("e4m3", "f16", 0.25)
    runtime.gemm(a.to(torch.int8), b.to(torch.int8))
    assert calls[-1][2:5] == ("s8", "s32", 1.0)
    with pytest.raises(GemmInputError, match=r"precision='tf32' \(or dtype='tf32'\)"):
        runtime.gemm(a, b)
    with pytest.raises(GemmInputError, match="needs the C input"):
        runtime.gemm(a.to(torch.int8), b.to(torch.int8), beta=2.0)
    assert len(calls) == 3 and not any(v for k, v in calls[-1][7].items() if k != "bias_along")
    # the fused epilogue's options travel to typed_gemm, which decides what it runs
    bias = torch.zeros(48)
    runtime.gemm(fa, fb, bias=bias, activation="relu")
    assert calls[-1][7]["bias"] is bias and calls[-1][7]["activation"] == "relu"


# ============================================================================ on the GPU
def _gpu():
    return torch.cuda.is_available() and runtime.gpu_available()


gpu = pytest.mark.skipif(not _gpu(), reason="no CUDA GPU / CuPy")


def _rel(c, ref):
    c64, r64 = c.double(), ref.double()
    return float((c64 - r64).norm() / r64.norm())


def _rand(*shape, dtype=torch.float16):
    return torch.randn(*shape, device="cuda").to(dtype)


@gpu
@pytest.mark.parametrize("dt", [torch.float16, torch.bfloat16])
def test_gpu_numerics_against_float64(dt):
    for m, n, k in ((256, 256, 256), (1000, 3000, 777), (7, 13, 17), (128, 4096, 512)):
        a, b = _rand(m, k, dtype=dt), _rand(k, n, dtype=dt)
        c = runtime.gemm(a, b)
        ref = a.double() @ b.double()
        assert c.dtype == dt and c.shape == (m, n) and c.device == a.device
        assert _rel(c, ref) < 1e-2, (m, n, k)
        c32 = runtime.gemm(a, b, out_dtype=torch.float32)
        assert c32.dtype == torch.float32 and _rel(c32, ref) < 1e-3


@gpu
def test_gpu_strided_transposed_and_offset_views():
    base = _rand(300, 520)
    cases = [
        (base[:256, :512], _rand(512, 128)),  # a row-major slice: lda 520
        (_rand(512, 256).t(), _rand(128, 512).t()),  # both column-major
        (base[1:257, 3:131], _rand(128, 64)),  # misaligned base: staged copy path
    ]
    for a, b in cases:
        ref = a.double() @ b.double()
        c = runtime.gemm(a, b)
        assert _rel(c, ref) < 1e-2
        out = torch.empty(b.shape[1], a.shape[0], device="cuda", dtype=torch.float16).t()
        assert runtime.gemm(a, b, out) is out and _rel(out, ref) < 1e-2


@gpu
@pytest.mark.parametrize("which", ["a", "b"])
def test_gpu_staged_operands_launch_directly_on_torchs_stream(which):
    # K = 777 (A's rows are not 16-byte multiples) or N = 777 (B's): the operand is staged,
    # and the entry still launches from base addresses: one row copy into the stream's
    # padded buffer, then the kernel; a side stream gets its own buffer
    m, n, k = (1000, 3000, 777) if which == "a" else (1000, 777, 3000)
    torch_op.forget_entries()  # this test's own entry: its buffers are counted below
    b = _rand(k, n)
    side = torch.cuda.Stream()
    for rnd in range(3):
        a = _rand(m, k)
        ref = a.double() @ b.double()
        c = runtime.gemm(a, b)
        assert _rel(c, ref) < 1e-2, rnd
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            a2 = _rand(m, k)
            c2 = runtime.gemm(a2, b)
        side.synchronize()
        assert _rel(c2, a2.double() @ b.double()) < 1e-2, rnd
    ent = next(e for e in torch_op._ENTRIES.values() if getattr(e, "out_shape", None) == (m, n))
    op = ent.plan._A if which == "a" else ent.plan._B
    assert ent.direct is not None and op.copy and len(op.bufs) == 2


@gpu
def test_gpu_batched_and_broadcast():
    for sa, sb in (((8, 128, 64), (8, 64, 96)), ((8, 128, 64), (64, 96)), ((128, 64), (8, 64, 96))):
        a, b = _rand(*sa, dtype=torch.bfloat16), _rand(*sb, dtype=torch.bfloat16)
        c = runtime.gemm(a, b)
        assert _rel(c, torch.matmul(a.double(), b.double())) < 1e-2


@gpu
def test_gpu_fused_epilogue_matches_torch():
    a, b = _rand(512, 256), _rand(256, 384)
    bias = torch.randn(384, device="cuda")
    c = torch.ops.layoutproof.gemm(a, b, bias, activation="gelu")
    ref = torch.nn.functional.gelu(a.double() @ b.double() + bias.double())
    assert _rel(c, ref) < 1e-2
    cin = _rand(512, 384)
    c2 = runtime.gemm(a, b, c=cin, alpha=0.5, beta=2.0)
    assert _rel(c2, 0.5 * (a.double() @ b.double()) + 2.0 * cin.double()) < 1e-2


@gpu
@pytest.mark.parametrize("m, n, k", [(512, 384, 256), (16, 4096, 4096), (64, 4096, 11008)])
def test_gpu_fused_calls_launch_directly_with_their_bias(monkeypatch, m, n, k):
    # a fused call's entry launches its plan from base addresses, the bias pointer too; the
    # results are the entry's full path's bit for bit, for two biases and an activation alone
    monkeypatch.setattr(torch_op, "_ENTRIES", {})
    a, b = _rand(m, k), _rand(k, n)
    for bias in (torch.randn(n, device="cuda").half(), torch.randn(n, device="cuda").half(), None):
        got = runtime.gemm(a, b, bias=bias, activation="gelu")
        ent = torch_op._ENTRIES[next(reversed(torch_op._ENTRIES))]
        assert ent.direct is None and ent.direct_bias is not None, (m, n, k)
        fused, ent.direct_bias = ent.direct_bias, None
        try:
            ref = runtime.gemm(a, b, bias=bias, activation="gelu")  # the entry's full path
        finally:
            ent.direct_bias = fused
        assert torch.equal(got.view(torch.int16), ref.view(torch.int16)), (m, n, k, bias is None)
        x = a.double() @ b.double() + (0 if bias is None else bias.double())
        assert _rel(got, torch.nn.functional.gelu(x)) < 1e-2


@gpu
def test_gpu_runs_on_the_callers_current_stream():
    a, b = _rand(2048, 2048), _rand(2048, 2048)
    new = _rand(2048, 2048)
    s = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)  # the copy below lands late on s
        a.copy_(new)
        c = runtime.gemm(a, b)  # on s: ordered after the copy
    s.synchronize()
    assert _rel(c, new.double() @ b.double()) < 1e-2


@gpu
def test_gpu_cuda_graph_capture_of_the_operator():
    a, b = _rand(256, 512), _rand(512, 128)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up: the plan is made outside the capture
        torch.ops.layoutproof.gemm(a, b)
        runtime.gemm(a, b)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        c = torch.ops.layoutproof.gemm(a, b)
        d = runtime.gemm(a, b)
    for _ in range(2):
        a.copy_(_rand(256, 512))
        b.copy_(_rand(512, 128))
        g.replay()
        torch.cuda.synchronize()
        ref = a.double() @ b.double()
        assert _rel(c, ref) < 1e-2 and _rel(d, ref) < 1e-2


@gpu
def test_gpu_torch_compile_fullgraph():
    def f(a, b, bias):
        return torch.relu(runtime.gemm(a, b, bias=bias)) + 1

    g = torch.compile(f, fullgraph=True, backend="aot_eager")
    a, b, bias = _rand(256, 128), _rand(128, 192), torch.randn(192, device="cuda")
    ref = torch.relu(a.double() @ b.double() + bias.double()) + 1
    assert _rel(g(a, b, bias), ref) < 1e-2


@gpu
def test_gpu_typed_kernels_on_tensors():
    m, n, k = 256, 384, 512
    a32 = torch.randn(m, k, device="cuda")
    b32 = torch.randn(n, k, device="cuda").t()  # K-major B: the typed kernels' layout
    c = runtime.gemm(a32, b32, dtype="tf32")
    assert c.dtype == torch.float32 and _rel(c, a32.double() @ b32.double()) < 5e-3
    fa, fb = a32.to(torch.float8_e4m3fn), b32.to(torch.float8_e4m3fn)
    c = runtime.gemm(fa, fb, alpha=0.5)
    assert c.dtype == torch.bfloat16 and _rel(c, 0.5 * (fa.double() @ fb.double())) < 1e-2
    ia = torch.randint(-8, 8, (m, k), device="cuda", dtype=torch.int8)
    ib = torch.randint(-8, 8, (n, k), device="cuda", dtype=torch.int8).t()
    c = runtime.gemm(ia, ib)
    assert c.dtype == torch.int32 and torch.equal(c.long(), ia.long().cpu().matmul(ib.long().cpu()).cuda())
