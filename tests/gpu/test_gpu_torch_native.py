"""The native torch front (``layoutproof.gpu.host.torch_native``): a C++ extension against the
installed torch that serves ``gemm`` calls of kept signatures.

Without a GPU (CI): the extension is built against the CPU build of torch, and its
``Dispatch`` is driven with CPU tensors and stand-in callables -- the key (each field of
each tensor and each option makes its own entry), what it leaves to the Python path
(NotImplemented), the output it allocates, the launch arguments, errors, the entry cap,
the background build -- and compared call for call with the Python ``fast`` function it
stands in front of.  With a GPU: the torch tests run their kept signatures through it
(conftest), and here its outputs are compared with torch's on the device."""

from __future__ import annotations

import gc
import types

import pytest

torch = pytest.importorskip("torch")

from layoutproof.gpu.host import native, torch_native, torch_op  # noqa: E402

#: gemm's options in the front's order: config, out_dtype, dtype, path, activation, bias_along
OPTS = (None, None, None, "auto", None, "n")


@pytest.fixture
def built(native_build_dir):
    """The folder the session's front is built in (conftest)."""
    return native_build_dir


@pytest.fixture
def mod(torch_native_module):
    if torch_native_module is None:
        pytest.skip(f"the native front cannot be built here: {torch_native.status()}")
    return torch_native_module


class Rig:
    """A Dispatch with recording stand-ins for the device, the streams and the launch."""

    def __init__(self, mod, cap=256):
        self.d = mod.Dispatch(cap)
        self.launches = []
        self.device, self.torch_stream, self.cupy_stream = 0, 0x77, 0

    def launch(self, *args):
        self.launches.append(args)

    def keep(self, a, b, out=None, bias=None, opts=OPTS, with_bias=False, tmpl=None, launch=None):
        config, out_dtype, dtype, path, activation, bias_along = opts
        if tmpl is None:
            shape = (a.shape[-2], b.shape[-1]) if a.dim() == 2 else (a.shape[0], a.shape[1], b.shape[-1])
            tmpl = torch.empty((), dtype=a.dtype).expand(shape)
        return self.d.keep(
            a, b, out, config, out_dtype, dtype, path, bias, activation, bias_along,
            launch or self.launch, with_bias, lambda: self.device, lambda dev: self.torch_stream,
            lambda: self.cupy_stream, 0, tmpl,
        )  # fmt: skip

    def call(self, a, b, out=None, bias=None, opts=OPTS, alpha=1.0, beta=0.0, c=None):
        config, out_dtype, dtype, path, activation, bias_along = opts
        return self.d(a, b, out, config, out_dtype, dtype, path, bias, activation, alpha, beta, c, bias_along)


def _ab(m=64, k=32, n=48, dt=torch.float16):
    return torch.randn(m, k).to(dt), torch.randn(k, n).to(dt)


def test_the_front_builds_once_and_reports_loaded(mod, tmp_path_factory):
    assert torch_native.status() == "loaded"
    assert torch_native.module(tmp_path_factory.mktemp("again")) is mod  # kept for the process


def test_a_kept_signature_is_served_with_a_new_output_and_the_addresses(mod):
    rig = Rig(mod)
    a, b = _ab()
    assert rig.keep(a, b) is True and rig.d.size == 1
    c = rig.call(a, b)
    assert isinstance(c, torch.Tensor) and type(c) is torch.Tensor
    assert c.shape == (64, 48) and c.dtype == torch.float16 and c.is_contiguous() and c.device == a.device
    assert rig.launches == [(a.data_ptr(), b.data_ptr(), c.data_ptr(), 0x77)] and rig.d.hits == 1
    a2, b2 = _ab()  # other tensors of the same signature: their own addresses
    c2 = rig.call(a2, b2)
    assert rig.launches[-1] == (a2.data_ptr(), b2.data_ptr(), c2.data_ptr(), 0x77)
    assert c2.data_ptr() != c.data_ptr()  # a new output per call


def test_a_given_output_is_returned_itself(mod):
    rig = Rig(mod)
    a, b = _ab()
    out = torch.empty(64, 48, dtype=torch.float32)
    rig.keep(a, b, out)
    assert rig.call(a, b) is NotImplemented  # out=None is another signature
    r = rig.call(a, b, out)
    assert r is out and rig.launches[-1] == (a.data_ptr(), b.data_ptr(), out.data_ptr(), 0x77)


def test_the_fused_launch_takes_the_bias_address_or_zero(mod):
    rig = Rig(mod)
    a, b = _ab()
    bias = torch.randn(48)
    opts = (None, None, None, "auto", "gelu", "n")
    rig.keep(a, b, bias=bias, opts=opts, with_bias=True)
    c = rig.call(a, b, bias=bias, opts=opts)
    assert rig.launches[-1] == (a.data_ptr(), b.data_ptr(), c.data_ptr(), bias.data_ptr(), 0x77)
    rig.keep(a, b, opts=opts, with_bias=True)  # the activation alone: the plan's zero vector
    c = rig.call(a, b, opts=opts)
    assert rig.launches[-1] == (a.data_ptr(), b.data_ptr(), c.data_ptr(), 0, 0x77)


def test_a_batched_output_takes_the_templates_shape(mod):
    rig = Rig(mod)
    a, b = torch.randn(4, 24, 32).half(), torch.randn(32, 16).half()
    rig.keep(a, b)
    c = rig.call(a, b)
    assert c.shape == (4, 24, 16) and c.is_contiguous()


def test_every_field_of_the_key_makes_its_own_signature(mod):
    rig = Rig(mod)
    a, b = _ab()
    rig.keep(a, b)
    base = torch.zeros(64 * 32 + 8, dtype=torch.float16)
    others = [
        (_ab(m=63)[0][:, :32], b),  # shape
        (torch.randn(32, 64).half().t(), b),  # strides
        (a.bfloat16(), b.bfloat16()),  # type
        (base[1 : 1 + 64 * 32].view(64, 32), b),  # base address modulo 16
        (base[8 : 8 + 64 * 32].view(64, 32), b),  # ... 16 bytes on: the same signature (below)
        (a, torch.randn(48, 32).half().t()),  # b's strides
    ]
    served = [rig.call(x, y) is not NotImplemented for x, y in others]
    assert served == [False, False, False, False, True, False]
    assert rig.call(a, b, out=torch.empty(64, 48, dtype=torch.float16)) is NotImplemented
    assert rig.call(a, b, bias=torch.zeros(48)) is NotImplemented
    # the options, by identity: an equal string built at run time is another object
    path = "".join(["au", "to"])
    assert path == "auto" and path is not "auto"  # noqa: F632
    assert rig.call(a, b, opts=(None, None, None, path, None, "n")) is NotImplemented
    assert rig.call(a, b, opts=(None, "f32", None, "auto", None, "n")) is NotImplemented
    assert rig.call(a, b, opts=(None, None, None, "auto", "relu", "n")) is NotImplemented


def test_what_the_python_path_decides_is_not_served(mod):
    rig = Rig(mod)
    a, b = _ab()
    rig.keep(a, b)
    assert rig.call(a, b) is not NotImplemented
    assert rig.call(a, b, alpha=2.0) is NotImplemented
    assert rig.call(a, b, beta=1.0) is NotImplemented
    assert rig.call(a, b, alpha=True) is NotImplemented  # not exactly an int or a float
    assert rig.call(a, b, alpha=1, beta=0) is not NotImplemented
    assert rig.call(a, b, c=torch.zeros(64, 48).half()) is NotImplemented
    assert rig.call(a, b, alpha=float("nan")) is NotImplemented

    class Sub(torch.Tensor):
        pass

    assert rig.call(a.as_subclass(Sub), b) is NotImplemented
    assert rig.call(torch._neg_view(a), b) is NotImplemented  # the negative bit
    assert rig.call(a.to_sparse(), b) is NotImplemented
    assert rig.call(a.view(1, 1, 64, 32), b) is NotImplemented  # 4-D
    assert rig.call(torch.tensor(1.0).half(), b) is NotImplemented  # 0-D
    assert rig.call([[1.0]], b) is NotImplemented and rig.call(a, None) is NotImplemented
    assert rig.call(a.to("meta"), b) is NotImplemented


def test_another_device_or_a_foreign_cupy_stream_goes_to_the_python_path(mod):
    rig = Rig(mod)
    a, b = _ab()
    rig.keep(a, b)
    rig.device = 1
    assert rig.call(a, b) is NotImplemented
    rig.device = 0
    for cs in (1, 2, 0x77):  # CuPy's defaults, or torch's own stream
        rig.cupy_stream = cs
        assert rig.call(a, b) is not NotImplemented
    rig.cupy_stream = 0x99
    assert rig.call(a, b) is NotImplemented
    assert len(rig.launches) == 3


def test_errors_of_the_callables_propagate(mod):
    rig = Rig(mod)
    a, b = _ab()

    def refused(*args):
        raise RuntimeError("the driver refused the launch")

    rig.keep(a, b, launch=refused)
    with pytest.raises(RuntimeError, match="refused the launch"):
        rig.call(a, b)
    assert rig.d.hits == 0
    rig2 = Rig(mod)
    rig2.keep(a, b)
    rig2.device = "zero"  # get_device returning no int
    with pytest.raises(TypeError):
        rig2.call(a, b)


def test_bad_calls_of_the_object_itself(mod):
    rig = Rig(mod)
    a, b = _ab()
    with pytest.raises(TypeError, match="13 positional arguments"):
        rig.d(a, b)
    with pytest.raises(TypeError, match="17 arguments"):
        rig.d.keep(a, b)
    with pytest.raises(TypeError, match="tmpl must be a torch.Tensor"):
        rig.keep(a, b, tmpl=types.SimpleNamespace())
    with pytest.raises(ValueError, match="cap must be at least 1"):
        mod.Dispatch(0)
    assert rig.keep(torch._neg_view(a), b) is False and rig.d.size == 0  # not a signature it serves


def test_a_full_front_starts_over_and_clear_drops_everything(mod):
    rig = Rig(mod, cap=2)
    assert rig.d.cap == 2 and mod.Dispatch().cap == 256
    sigs = [_ab(m=m) for m in (16, 32, 48)]
    g0 = rig.d.generation
    assert g0 != Rig(mod).d.generation  # every entry set has its own stamp
    for x, y in sigs[:2]:
        rig.keep(x, y)
    assert rig.d.size == 2 and rig.d.generation == g0
    rig.keep(*sigs[0])  # a kept key again: replaced in place
    assert rig.d.size == 2 and rig.d.generation == g0
    rig.keep(*sigs[2])  # a third: the front starts over
    g1 = rig.d.generation
    assert rig.d.size == 1 and g1 != g0
    assert rig.call(*sigs[0]) is NotImplemented and rig.call(*sigs[2]) is not NotImplemented
    rig.d.clear()
    assert rig.d.size == 0 and rig.d.generation not in (g0, g1)


def test_entries_release_what_they_hold(mod):
    rig = Rig(mod)
    a, b = _ab()

    class Launch:
        def __call__(self, *args):
            pass

    ln = Launch()
    rig.keep(a, b, launch=ln)
    import weakref

    ref = weakref.ref(ln)
    del ln
    gc.collect()
    assert ref() is not None  # the entry holds it
    rig.d.clear()
    gc.collect()
    assert ref() is None


def _python_fast(direct, direct_bias, tmpl, rig):
    """torch_op's Python ``fast`` function over the same stand-ins."""
    ent = types.SimpleNamespace(
        direct=direct,
        direct_bias=direct_bias,
        tmpl=tmpl,
        empty_like=torch.empty_like,
        out_shape=tuple(tmpl.shape),
        out_tdtype=tmpl.dtype,
        dev=0,
        get_device=lambda: rig.device,
        raw_stream=lambda dev: rig.torch_stream,
        cur_stream=lambda: rig.cupy_stream,
        _stream=lambda sp: (_ for _ in ()).throw(RuntimeError("refused")),
        run_views=lambda *args: "views",
    )
    return torch_op._Entry._fast(ent)


@pytest.mark.parametrize("fused", [False, True])
def test_the_front_and_the_python_fast_function_launch_alike(mod, fused):
    rig = Rig(mod)
    a, b = _ab()
    tmpl = torch.empty((), dtype=torch.float32).expand(64, 48)
    bias = torch.randn(48) if fused else None
    py_launches = []

    def py_launch(*args):
        py_launches.append(args)

    fast = _python_fast(None if fused else py_launch, py_launch if fused else None, tmpl, rig)
    opts = (None, "f32", None, "auto", "gelu" if fused else None, "n")
    rig.keep(a, b, bias=bias, opts=opts, with_bias=fused, tmpl=tmpl)
    out = torch.empty(64, 48)
    rig.keep(a, b, out, bias=bias, opts=opts, with_bias=fused, tmpl=tmpl)
    for given in (None, out):
        for cs in (0, 0x77):
            rig.cupy_stream = cs
            c_native = rig.call(a, b, given, bias=bias, opts=opts)
            c_py = fast(a, b, given, bias, a.data_ptr(), b.data_ptr())
            for c in (c_native, c_py):
                assert c.shape == (64, 48) and c.dtype == torch.float32 and c.stride() == (48, 1)
            if given is not None:
                assert c_native is given and c_py is given
            # the same launch, but for the new outputs' own addresses
            want = [x if i != 2 else None for i, x in enumerate(py_launches[-1])]
            got = [x if i != 2 else None for i, x in enumerate(rig.launches[-1])]
            assert got == want
            assert rig.launches[-1][2] == c_native.data_ptr() and py_launches[-1][2] == c_py.data_ptr()
    rig.device = 1  # another device: both leave the call to the views path
    assert rig.call(a, b, bias=bias, opts=opts) is NotImplemented
    assert fast(a, b, None, bias, a.data_ptr(), b.data_ptr()) == "views"


# ============================================================================ the build
@pytest.fixture
def fresh(monkeypatch):
    monkeypatch.setattr(torch_native, "_STATE", {})


def test_the_background_build_hands_over_its_dispatch(mod, built, fresh):
    got = []
    assert torch_native.dispatcher(str(built), got.append, 1024) is None  # a str folder too
    assert torch_native.status() in ("building", "loaded")
    d = torch_native.wait(600)
    assert d is not None and got == [d] and torch_native.status() == "loaded" and d.cap == 1024
    assert torch_native.dispatcher(built, got.append) is d and got == [d]  # once


def test_a_bad_cap_is_refused_before_any_build(fresh, tmp_path):
    from layoutproof.gpu.errors import GemmConfigError

    for cap in (0, -3, 2.5, "256", True):
        with pytest.raises(GemmConfigError, match="must be a positive int"):
            torch_native.dispatcher(tmp_path, None, cap)
    assert torch_native.status() == "not tried" and list(tmp_path.iterdir()) == []


def test_the_build_is_off_or_says_why_it_failed(fresh, tmp_path, monkeypatch):
    monkeypatch.setenv("LAYOUTPROOF_NATIVE", "0")
    assert torch_native.module(tmp_path) is None
    assert torch_native.status() == "off (LAYOUTPROOF_NATIVE=0)"
    monkeypatch.delenv("LAYOUTPROOF_NATIVE")
    monkeypatch.setattr(torch_native, "_STATE", {})
    monkeypatch.setattr(torch_native, "SOURCE", "#include <planted_missing_header.h>\n" + torch_native.SOURCE)
    assert torch_native.module(tmp_path) is None
    assert torch_native.status().startswith("the C++ compiler failed") and "planted" in torch_native.status()
    monkeypatch.setattr(torch_native, "_STATE", {})
    fake_torch = types.SimpleNamespace(__file__=str(tmp_path / "torch" / "__init__.py"), __version__="0")
    monkeypatch.setitem(torch_native.sys.modules, "torch", fake_torch)
    assert torch_native.module(tmp_path / "other") is None
    assert "no torch headers" in torch_native.status()
    monkeypatch.setattr(torch_native, "_STATE", {})
    got = []
    assert torch_native.dispatcher(tmp_path / "other", got.append) is None
    assert torch_native.wait(60) is None and got == []  # a failed build hands over nothing


def test_the_builder_is_the_launchers(mod):
    assert torch_native.build_extension is native.build_extension


# ============================================================================ on the GPU
def _gpu():
    from layoutproof.gpu.host import runtime

    return torch.cuda.is_available() and runtime.gpu_available()


gpu = pytest.mark.skipif(not _gpu(), reason="no CUDA GPU / CuPy")


@pytest.fixture
def no_kept_signatures():
    """The GPU tests start from (and leave) no kept torch call signatures; they need the
    front (conftest hands every GPU test a Dispatch where it builds)."""
    if not torch_op.HOT:
        pytest.skip(f"the native front is not in use: {torch_native.status()}")
    torch_op.forget_entries()
    yield
    torch_op.forget_entries()


def _rel(c, ref):
    c64, r64 = c.double(), ref.double()
    return float((c64 - r64).norm() / r64.norm())


@gpu
@pytest.mark.usefixtures("no_kept_signatures")
def test_gpu_the_front_serves_kept_torch_calls_with_the_python_paths_results():
    from layoutproof.gpu.host import runtime

    d = torch_op.HOT[0]

    def rand(*shape, dt=torch.float16):
        return torch.randn(*shape, device="cuda").to(dt)

    bias = rand(3000, dt=torch.float32)
    cases = [
        ((rand(256, 512), rand(512, 256)), {}),
        ((rand(1000, 777), rand(777, 3000)), {}),  # ragged K: staged in the launch
        ((rand(1000, 777, dt=torch.bfloat16), rand(777, 3001, dt=torch.bfloat16)), {}),  # and N
        ((rand(4, 96, 512), rand(512, 128)), {}),  # a batch folded into one product
        ((rand(1000, 777), rand(777, 3000)), {"bias": bias, "activation": "gelu"}),
        ((rand(512, 512), rand(512, 512)), {"activation": "relu"}),  # the plan's zero bias
        ((rand(256, 512), rand(512, 256)), {"out_dtype": torch.float32}),
    ]
    for (a, b), kw in cases:
        first = runtime.gemm(a, b, **kw)  # the Python path makes the entry and hands it over
        h = d.hits
        again = runtime.gemm(a, b, **kw)
        assert d.hits == h + 1, (tuple(a.shape), tuple(b.shape), kw)
        torch.cuda.synchronize()
        assert torch.equal(first, again) and again.shape == first.shape and again.dtype == first.dtype
        ref = a.double() @ b.double()
        if "bias" in kw:
            ref = torch.nn.functional.gelu(ref + kw["bias"].double())
        elif kw.get("activation") == "relu":
            ref = torch.relu(ref)
        assert _rel(again, ref) < 1e-2
    # a given output, and torch's current stream
    a, b = rand(1000, 777), rand(777, 3000)
    out = torch.empty(1000, 3000, device="cuda", dtype=torch.float16)
    runtime.gemm(a, b, out)
    h = d.hits
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        r = runtime.gemm(a, b, out)
    assert r is out and d.hits == h + 1
    s.synchronize()
    assert _rel(out, a.double() @ b.double()) < 1e-2


@gpu
@pytest.mark.usefixtures("no_kept_signatures")
def test_gpu_cuda_graph_capture_through_the_front():
    from layoutproof.gpu.host import runtime

    d = torch_op.HOT[0]
    a = torch.randn(1000, 777, device="cuda").half()
    b = torch.randn(777, 3000, device="cuda").half()
    runtime.gemm(a, b)  # kept
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        runtime.gemm(a, b)  # warm on the capture stream
        s.synchronize()
        h = d.hits
        with torch.cuda.graph(g, stream=s):
            c = runtime.gemm(a, b)
    assert d.hits == h + 1
    a.copy_(torch.randn_like(a))
    g.replay()
    torch.cuda.synchronize()
    assert _rel(c, a.double() @ b.double()) < 1e-2


@gpu
def test_gpu_negated_views_are_refused_by_the_grouped_gemm():
    from layoutproof.gpu.errors import GemmInputError
    from layoutproof.gpu.host.grouped import gemm_moe

    a = torch.randn(64, 128, device="cuda").bfloat16()
    b = torch.randn(2, 128, 64, device="cuda").bfloat16()
    with pytest.raises(GemmInputError, match="negated view"):
        gemm_moe(torch._neg_view(a), b, sizes=[32, 32])
