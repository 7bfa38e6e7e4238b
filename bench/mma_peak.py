"""The mma.sync ceiling of this GPU: a register-only loop of independent
``mma.sync.m16n8k16`` (f16 x f16 -> f32, the GEMM's instruction), no memory traffic.

Tells how far the proven GEMM is from what mma.sync itself can do here (on Hopper the
legacy warp-level MMA path is slower than wgmma, which cuBLAS uses).
"""

import cupy as cp

SRC = r"""
extern "C" __global__ void __launch_bounds__(256, 1) mma_peak(float* out, int iters) {
  unsigned a[4] = {threadIdx.x, threadIdx.x + 1, threadIdx.x + 2, threadIdx.x + 3};
  unsigned b[2] = {threadIdx.x * 3, threadIdx.x * 5};
  float acc[MI][NI][4];
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j)
#pragma unroll
      for (int v = 0; v < 4; ++v) acc[i][j][v] = 0.f;
  for (int it = 0; it < iters; ++it) {
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NI; ++j)
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
            : "+f"(acc[i][j][0]), "+f"(acc[i][j][1]), "+f"(acc[i][j][2]), "+f"(acc[i][j][3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
  float s = 0.f;
#pragma unroll
  for (int i = 0; i < MI; ++i)
#pragma unroll
    for (int j = 0; j < NI; ++j) s += acc[i][j][0] + acc[i][j][3];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""


def run(mi, ni, threads, blocks_per_sm, iters=4096):
    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    src = SRC.replace("MI", str(mi)).replace("NI", str(ni)).replace("(256, 1)", f"({threads}, 1)")
    k = cp.RawKernel(src, "mma_peak", options=("-arch=sm_90",))
    blocks = sms * blocks_per_sm
    out = cp.zeros(blocks * threads, dtype=cp.float32)
    k((blocks,), (threads,), (out, cp.int32(iters)))
    s, e = cp.cuda.Event(), cp.cuda.Event()
    best = 1e9
    for _ in range(5):
        s.record()
        k((blocks,), (threads,), (out, cp.int32(iters)))
        e.record()
        e.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(s, e) / 1e3)
    flops = 2.0 * 16 * 8 * 16 * mi * ni * iters * (threads // 32) * blocks
    return flops / best / 1e12


if __name__ == "__main__":
    for mi, ni, threads, bps in ((4, 8, 256, 1), (4, 8, 128, 2), (2, 4, 256, 2), (4, 8, 512, 1)):
        print(
            f"mma.sync m16n8k16 f32acc: {mi}x{ni} tiles/warp, {threads} threads x {bps} "
            f"blocks/SM: {run(mi, ni, threads, bps):.0f} TFLOP/s",
            flush=True,
        )
