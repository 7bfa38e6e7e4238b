"""The fused epilogue's cost: device time (CUDA-graph replay) of gemm with bias + activation
against the plain gemm, and against torch's unfused `relu(matmul + bias)` (cuBLAS, then an
elementwise kernel).  Run on the GPU machine after ``source bench/device_env.sh``::

    python bench/gemm_epilogue.py
"""

from __future__ import annotations

import _timing as G
import cupy as cp

from layoutproof.gpu.host.runtime import gemm


def torch_unfused_time(a, b, bias, c, reps):
    import torch

    ta, tb, tbias, tc = (torch.from_dlpack(x) for x in (a, b, bias, c))
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            tc.copy_(torch.relu(torch.matmul(ta, tb) + tbias))
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            tc.copy_(torch.relu(torch.matmul(ta, tb) + tbias))
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ts = []
    for _ in range(3):
        e0.record()
        g.replay()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) / 1e3 / reps)
    return sorted(ts)[1]


def main():
    rng = cp.random.default_rng(4)
    print("shape: ours plain / ours bias+relu / torch matmul / torch relu(matmul + bias), us (graph)")
    for m, n, k in [(8192, 8192, 8192), (4096, 4096, 4096), (4096, 11008, 4096), (128, 8192, 8192)]:
        a, b = G.make(cp, (m, k), "f16", rng), G.make(cp, (k, n), "f16", rng)
        bias = rng.standard_normal(n, dtype=cp.float32)
        c = cp.empty((m, n), cp.float16)
        reps = 3 if m * n * k >= 8192**3 else 10
        gemm(a, b, c)
        t0 = G.graph_time(cp, G.graph_of(cp, lambda: gemm(a, b, c), reps), reps) * 1e6
        gemm(a, b, c, bias=bias, activation="relu")
        ref = cp.maximum(a.astype(cp.float32) @ b.astype(cp.float32) + bias, 0)
        err = G.rel_err(cp, c, ref)
        t1 = (
            G.graph_time(cp, G.graph_of(cp, lambda: gemm(a, b, c, bias=bias, activation="relu"), reps), reps)
            * 1e6
        )
        tr = G.torch_graph_time(cp, a, b, c, reps) * 1e6
        tu = torch_unfused_time(a, b, bias, c, reps) * 1e6
        print(f"{m}x{n}x{k}: {t0:.1f} / {t1:.1f} (err {err:.1e}) / {tr:.1f} / {tu:.1f}", flush=True)
        cp.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
