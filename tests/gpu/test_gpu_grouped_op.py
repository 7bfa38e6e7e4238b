"""The grouped GEMM as torch operators (``layoutproof::gemm_moe``, ``gemm_moe_masked``,
``gemm_grouped``).  Without a GPU: registration and schemas, the fake (meta) functions'
shapes and refusals, ``torch.library.opcheck`` on meta tensors, ``torch.compile
(fullgraph=True)`` tracing the operators, CPU tensors refused by name.  With a GPU: the
numerics against float64, CUDA graph capture with new offsets each replay, and
``torch.compile``."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from test_gpu_grouped import _gpu  # noqa: E402

from layoutproof.gpu.errors import GemmInputError  # noqa: E402
from layoutproof.gpu.host import grouped_op  # noqa: E402

ops = grouped_op.ops()
gpu = pytest.mark.skipif(not _gpu(), reason="no CUDA GPU / CuPy / cuda-python")


def _meta(*shape, dtype=torch.bfloat16):
    return torch.empty(shape, dtype=dtype, device="meta")


# ============================================================================ no GPU needed
def test_importing_the_operator_module_imports_no_torch():
    code = "import sys, layoutproof.gpu.host.grouped_op; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]


def test_operators_registered_with_their_schemas():
    for name, schema in grouped_op.SCHEMAS.items():
        op = getattr(torch.ops.layoutproof, name).default
        s = str(op._schema)
        assert s.startswith(f"layoutproof::{name}(") and s.endswith("-> Tensor"), s
        assert s.split("(", 1)[1].split(")")[0] == schema.split("(", 1)[1].split(")")[0]
    assert grouped_op.ops() is ops  # registered once
    # beside the dense operator in the same namespace
    from layoutproof.gpu.host import torch_op

    assert torch_op.gemm_op is torch.ops.layoutproof.gemm


def test_meta_shapes():
    offs = torch.empty(4, dtype=torch.int32, device="meta")
    c = ops.gemm_moe(_meta(100, 64), _meta(4, 64, 48), offs)
    assert c.shape == (100, 48) and c.dtype == torch.bfloat16 and c.device.type == "meta"
    c = ops.gemm_moe(
        _meta(100, 64, dtype=torch.float16), _meta(4, 64, 48, dtype=torch.float16), sizes=[1] * 4
    )
    assert c.shape == (100, 48) and c.dtype == torch.float16
    mm = torch.empty(4, dtype=torch.int32, device="meta")
    assert ops.gemm_moe_masked(_meta(4, 16, 64), _meta(4, 64, 8), mm).shape == (4, 16, 8)
    c = ops.gemm_grouped([_meta(3, 64), _meta(0, 64), _meta(9, 64)], [_meta(64, 8)] * 3)
    assert c.shape == (12, 8)


def test_meta_functions_refuse_what_the_call_refuses():
    offs = torch.empty(4, dtype=torch.int32, device="meta")
    with pytest.raises(GemmInputError, match="share one K"):
        ops.gemm_moe(_meta(100, 64), _meta(4, 48, 48), offs)
    with pytest.raises(GemmInputError, match="one per expert"):
        ops.gemm_moe(_meta(100, 64), _meta(3, 64, 48), offs)
    with pytest.raises(GemmInputError, match=r"offs.to\(torch.int32\)"):
        ops.gemm_moe(_meta(100, 64), _meta(4, 64, 48), offs.to(torch.int64))
    with pytest.raises(GemmInputError, match="offs .* or sizes"):
        ops.gemm_moe(_meta(100, 64), _meta(4, 64, 48))
    with pytest.raises(GemmInputError, match="both float16 or both bfloat16"):
        ops.gemm_moe(_meta(100, 64), _meta(4, 64, 48, dtype=torch.float16), offs)
    with pytest.raises(GemmInputError, match="one K and one N"):
        ops.gemm_grouped([_meta(3, 64), _meta(3, 32)], [_meta(64, 8), _meta(32, 8)])
    with pytest.raises(GemmInputError, match="int32"):
        ops.gemm_moe_masked(
            _meta(4, 16, 64), _meta(4, 64, 8), torch.empty(4, dtype=torch.int64, device="meta")
        )


def test_opcheck_on_meta_tensors():
    offs = torch.empty(4, dtype=torch.int32, device="meta")
    cases = [
        (torch.ops.layoutproof.gemm_moe.default, (_meta(100, 64), _meta(4, 64, 48), offs), {}),
        (
            torch.ops.layoutproof.gemm_moe_masked.default,
            (_meta(4, 16, 64), _meta(4, 64, 8), offs),
            {},
        ),
        (torch.ops.layoutproof.gemm_grouped.default, ([_meta(3, 64), _meta(5, 64)], [_meta(64, 8)] * 2), {}),
    ]
    for op, args, kw in cases:
        res = torch.library.opcheck(
            op, args, kw, test_utils=("test_schema", "test_faketensor", "test_autograd_registration")
        )
        assert set(res.values()) == {"SUCCESS"}, (op, res)


def test_cpu_tensors_are_refused_by_name():
    a, b = torch.randn(10, 64).bfloat16(), torch.randn(2, 64, 8).bfloat16()
    with pytest.raises(GemmInputError, match=r"move it to the GPU \(a.cuda\(\)\)"):
        ops.gemm_moe(a, b, torch.tensor([4, 10], dtype=torch.int32))
    with pytest.raises(GemmInputError, match="move it to the GPU"):
        ops.gemm_grouped([a], [b[0]])


def test_compile_fullgraph_traces_the_operators():
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    def f(a, b, offs, a_list, b_list):
        y = torch.ops.layoutproof.gemm_moe(a, b, offs)
        z = torch.ops.layoutproof.gemm_grouped(a_list, b_list)
        return y * 2, z + 1

    g = torch.compile(f, fullgraph=True, backend=backend)
    a, b = torch.randn(10, 64).bfloat16(), torch.randn(2, 64, 8).bfloat16()
    offs = torch.tensor([4, 10], dtype=torch.int32)
    with pytest.raises(GemmInputError, match="move it to the GPU"):  # the graph runs the real call
        g(a, b, offs, [a[:4], a[4:]], [b[0], b[1]])
    (gm,) = graphs
    targets = {str(n.target) for n in gm.graph.nodes if n.op == "call_function"}
    assert any("gemm_moe" in t for t in targets) and any("gemm_grouped" in t for t in targets), targets


# ============================================================================ GPU
def _rel(c, ref):
    return float((c.double() - ref).norm() / ref.norm())


def _moe_case(seed, G=6, K=256, N=192):
    g = torch.Generator(device="cuda").manual_seed(seed)
    sizes = torch.randint(0, 300, (G,), generator=g, device="cuda")
    sizes[1] = 0
    T = int(sizes.sum())
    a = torch.randn(T, K, device="cuda", generator=g, dtype=torch.bfloat16)
    b = torch.randn(G, K, N, device="cuda", generator=g, dtype=torch.bfloat16)
    return a, b, torch.cumsum(sizes, 0).to(torch.int32)


def _moe_ref(a, b, offs):
    ends = offs.tolist()
    out, beg = [], 0
    for g, e in enumerate(ends):
        out.append((beg, e, a[beg:e].double() @ b[g].double()))
        beg = e
    return out


@gpu
def test_gpu_operators_match_float64():
    a, b, offs = _moe_case(0)
    c = ops.gemm_moe(a, b, offs)
    for beg, e, ref in _moe_ref(a, b, offs):
        if e > beg:
            assert _rel(c[beg:e], ref) < 1e-2
    a_list = [a[int(s) : int(e)] for s, e in zip([0] + offs.tolist()[:-1], offs.tolist())]
    b_list = [b[g] for g in range(b.shape[0])]
    z = ops.gemm_grouped(a_list, b_list)
    assert z.shape == c.shape and _rel(z, c.double()) < 1e-3
    G, max_m, K, N = 4, 96, 128, 64
    x = torch.randn(G, max_m, K, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(G, K, N, device="cuda", dtype=torch.bfloat16)
    mm = torch.tensor([0, 96, 5, 64], device="cuda", dtype=torch.int32)
    y = ops.gemm_moe_masked(x, w, mm)
    for g, m in enumerate(mm.tolist()):
        if m:
            assert _rel(y[g, :m], x[g, :m].double() @ w[g].double()) < 1e-2


@gpu
def test_gpu_cuda_graph_replays_with_new_offsets():
    a, b, offs = _moe_case(1)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm up: the kernel is compiled outside the capture
        ops.gemm_moe(a, b, offs)
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        c = ops.gemm_moe(a, b, offs)
    rng = np.random.default_rng(2)
    for _ in range(2):
        sizes = rng.multinomial(a.shape[0], np.ones(b.shape[0]) / b.shape[0])
        sizes[0] = 0
        sizes[-1] += a.shape[0] - sizes.sum()
        offs.copy_(torch.tensor(np.cumsum(sizes), dtype=torch.int32))
        a.copy_(torch.randn_like(a))
        graph.replay()
        torch.cuda.synchronize()
        for beg, e, ref in _moe_ref(a, b, offs):
            if e > beg:
                assert _rel(c[beg:e], ref) < 1e-2


@gpu
def test_gpu_torch_compile_fullgraph():
    a, b, offs = _moe_case(3)

    def f(a, b, offs):
        return torch.relu(torch.ops.layoutproof.gemm_moe(a, b, offs)) + 1

    g = torch.compile(f, fullgraph=True, backend="aot_eager")
    got = g(a, b, offs)
    for beg, e, ref in _moe_ref(a, b, offs):
        if e > beg:
            assert _rel(got[beg:e], torch.relu(ref) + 1) < 1e-2


@gpu
def test_gpu_kept_calls_with_new_sizes_each_call():
    """Repeated torch calls take the kept signature: host sizes that change per call (their
    table built from the launch's parameters), repeated ones, all-zero ones, and device
    offsets, on a side stream too -- each against float64; host sizes under capture are
    refused by name."""
    from layoutproof.gpu.host import grouped as hg

    a, b, offs = _moe_case(4)
    T, G = a.shape[0], b.shape[0]
    rng = np.random.default_rng(5)
    vectors = [rng.multinomial(T - 7, np.ones(G) / G).tolist() for _ in range(3)]
    vectors[1][0] = 0
    vectors += [vectors[0], [0] * G]
    s = torch.cuda.Stream()
    for i, sizes in enumerate(vectors):
        stream = s if i == 3 else torch.cuda.current_stream()
        with torch.cuda.stream(stream):
            c = hg.gemm_moe(a, b, sizes=sizes)
            d = hg.gemm_moe(a, b, torch.tensor(np.cumsum(sizes), dtype=torch.int32, device="cuda"))
        stream.synchronize()
        beg = 0
        for g, n in enumerate(sizes):
            if n:
                ref = a[beg : beg + n].double() @ b[g].double()
                assert _rel(c[beg : beg + n], ref) < 1e-2 and _rel(d[beg : beg + n], ref) < 1e-2
            beg += n
    assert len([k for k in hg._CALLS if k[0] in ("sizes", "offs")]) >= 2
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        with pytest.raises(GemmInputError, match="CUDA-graph capture; pass offs"):
            hg.gemm_moe(a, b, sizes=vectors[0])
