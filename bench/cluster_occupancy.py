"""How many clusters of a cluster split-K kernel the GPU holds at once.

``cuOccupancyMaxActiveClusters`` for the kernels of ``SplitKConfig(..., reduction="cluster")``
(one CTA per SM by their registers and shared memory): a grid of more clusters than this
runs in two waves.  On the GPU machine, from the repository root (after ``source
bench/device_env.sh``):  python3 bench/cluster_occupancy.py
"""

from __future__ import annotations


def main() -> None:
    import cupy as cp
    from cuda.bindings import driver

    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host.cache import compile_kernel
    from layoutproof.gpu.kernels.splitk import SplitKConfig
    from layoutproof.gpu.kernels.splitk_cluster import generate_cluster
    from layoutproof.gpu.kernels.wgmma import Sm90Config

    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    print(f"occupancy: {sms} SMs", flush=True)
    for (bm, bn, st), s in (
        ((64, 256, 5), 8),
        ((64, 256, 5), 4),
        ((64, 128, 8), 4),
        ((64, 128, 8), 2),
        ((64, 64, 8), 2),
    ):
        cfg = SplitKConfig(Sm90Config(bm=bm, bn=bn, stages=st, loader="tma", schedule="ws"), s, "cluster")
        k = generate_cluster(cfg, GemmProblem("k", "n")).gemm
        rk = compile_kernel(k)
        lc = driver.CUlaunchConfig()
        lc.gridDimX, lc.gridDimY, lc.gridDimZ = s * 64, 1, 1
        lc.blockDimX, lc.blockDimY, lc.blockDimZ = k.threads, 1, 1
        lc.sharedMemBytes = k.smem_bytes
        lc.numAttrs = 0
        func = driver.CUfunction(init_value=int(rk.kernel.ptr))
        err, n = driver.cuOccupancyMaxActiveClusters(func, lc)
        print(
            f"occupancy {cfg.key():36s} smem {k.smem_bytes}: {err.name} max active clusters {n} "
            f"= {n * s} CTAs at once",
            flush=True,
        )


if __name__ == "__main__":
    main()
