"""The bank model against the hardware: shared-memory wavefronts predicted by
``layoutproof.gpu.analysis.banks`` and measured by timing on the GPU.

For each pattern (a tile layout, a thread-value access and an instruction, as a user gives
them to the analysis) the lane addresses of one instruction are taken from the analysis'
own access model, loaded into a kernel in which eight warps per block repeat that one
instruction 4096 times each (each unrolled copy 128 bytes further on: the same banks, but no
load the compiler could merge with another), and the SM's clock counts the cycles.  The
shared-memory pipe serves one wavefront per cycle, so the cycles per instruction per SM
should equal the predicted wavefronts.  Printed last: a table of predicted wavefronts,
cycles and their ratio; written to $OUT/bank_model_check.json when OUT is set.

    python bench/bank_model_check.py            # on a machine with a GPU and CuPy
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from layoutproof import Layout, Swizzle, composition
from layoutproof.gpu.analysis import banks, instruction
from layoutproof.gpu.analysis.access import lane_addresses

WARPS = 8
ITERS = 256
UNROLL = 16

SOURCE = r"""
extern "C" __device__ unsigned smem_base(const void* p) {
    return (unsigned)__cvta_generic_to_shared(p);
}
#define PROLOGUE                                                              \
    extern __shared__ __align__(1024) unsigned char smem[];                   \
    for (int i = threadIdx.x; i < nbytes / 4; i += blockDim.x)                \
        ((unsigned*)smem)[i] = (unsigned)i * 2654435761u;                     \
    __syncthreads();                                                          \
    unsigned a0 = smem_base(smem) + addr[threadIdx.x & 31];                   \
    unsigned acc = 0;                                                         \
    long long t0 = clock64();
#define EPILOGUE                                                              \
    __syncthreads();                                                          \
    long long t1 = clock64();                                                 \
    if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;                       \
    sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;

extern "C" __global__ void ld4(const unsigned* addr, int nbytes, int iters,
                               long long* cycles, unsigned* sink) {
    PROLOGUE
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < 16; ++u) {
            unsigned x;
            asm volatile("ld.volatile.shared.u32 %0, [%1];" : "=r"(x) : "r"(a0 + 128u * ((u + it) & 15u)));
            acc += x;
        }
    }
    EPILOGUE
}
extern "C" __global__ void ld8(const unsigned* addr, int nbytes, int iters,
                               long long* cycles, unsigned* sink) {
    PROLOGUE
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < 16; ++u) {
            unsigned x, y;
            asm volatile("ld.volatile.shared.v2.u32 {%0, %1}, [%2];" : "=r"(x), "=r"(y) : "r"(a0 + 128u * ((u + it) & 15u)));
            acc += x ^ y;
        }
    }
    EPILOGUE
}
extern "C" __global__ void ld16(const unsigned* addr, int nbytes, int iters,
                                long long* cycles, unsigned* sink) {
    PROLOGUE
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < 16; ++u) {
            unsigned x, y, z, w;
            asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                         : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(a0 + 128u * ((u + it) & 15u)));
            acc += x ^ y ^ z ^ w;
        }
    }
    EPILOGUE
}
extern "C" __global__ void ldsm4(const unsigned* addr, int nbytes, int iters,
                                 long long* cycles, unsigned* sink) {
    PROLOGUE
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int u = 0; u < 16; ++u) {
            unsigned x, y, z, w;
            asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                         : "=r"(x), "=r"(y), "=r"(z), "=r"(w) : "r"(a0 + 128u * ((u + it) & 15u)) : "memory");
            acc += x ^ y ^ z ^ w;
        }
    }
    EPILOGUE
}
"""

KERNEL = {
    "ld.shared.b32": "ld4",
    "ld.shared.v2.b32": "ld8",
    "ld.shared.v4.b32": "ld16",
    "ldmatrix.x4": "ldsm4",
}


def patterns():
    """(name, smem layout, TV layout, instruction, element bits) -- the first is the baseline."""
    row = Layout((64, 64), (64, 1))
    ldm = Layout(((8, 4), 8), ((1, 512), 64))  # lanes: 8 rows x 4 column chunks, 8 halves each
    out = [("b32 row (1 wavefront)", Layout(1024, 1), Layout(32, 1), "ld.shared.b32", 32)]
    for s in (2, 4, 8, 16, 32):
        out.append((f"b32 word stride {s}", Layout(1024 * 32, 1), Layout(32, s), "ld.shared.b32", 32))
    out += [
        ("b32 broadcast", Layout(1024, 1), Layout(32, 0), "ld.shared.b32", 32),
        ("b32 column of (32,32):(32,1)", Layout((32, 32), (32, 1)), Layout(32, 1), "ld.shared.b32", 32),
        ("v2 contiguous", Layout(2048, 1), Layout((32, 2), (2, 1)), "ld.shared.v2.b32", 32),
        ("v2 stride 16 B", Layout(4096, 1), Layout((32, 2), (4, 1)), "ld.shared.v2.b32", 32),
        ("v4 contiguous (f16 (32,8):(8,1))", Layout(256, 1), Layout((32, 8), (8, 1)), "ld.shared.v4.b32", 16),
        ("v4 stride 32 B", Layout(512, 1), Layout((32, 8), (16, 1)), "ld.shared.v4.b32", 16),
        ("v4 stride 128 B", Layout(2048, 1), Layout((32, 8), (64, 1)), "ld.shared.v4.b32", 16),
        ("ldmatrix.x4 row-major 128 B rows", row, ldm, "ldmatrix.x4", 16),
        ("ldmatrix.x4 Sw<3,3,3>", composition(Swizzle(3, 3, 3), row), ldm, "ldmatrix.x4", 16),
        ("ldmatrix.x4 Sw<2,3,3>", composition(Swizzle(2, 3, 3), row), ldm, "ldmatrix.x4", 16),
        ("ldmatrix.x4 Sw<1,3,3>", composition(Swizzle(1, 3, 3), row), ldm, "ldmatrix.x4", 16),
        ("ldmatrix.x4 padded +8", Layout((64, 64), (72, 1)), ldm, "ldmatrix.x4", 16),
    ]
    return out


def predict(smem, tv, ins, bits):
    rep = banks(smem, tv, ins, element_bits=bits)
    acc = lane_addresses(smem, tv, instruction(ins), element_bits=bits)
    addr = acc.addresses[0, 0].astype(np.uint32)
    return int(rep.wavefronts[0, 0].sum()), addr, rep.status


def main() -> int:
    import cupy as cp

    mod = cp.RawModule(code=SOURCE, options=("-arch=sm_90a",))
    sms = cp.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
    rows = []
    for name, smem, tv, ins, bits in patterns():
        want, addr, status = predict(smem, tv, ins, bits)
        # room for the 16 unrolled copies, each 128 bytes further (the same banks)
        nbytes = int(((int(addr.max()) + 16 + 128 * UNROLL + 1023) // 1024) * 1024)
        k = mod.get_function(KERNEL[ins])
        d_addr = cp.asarray(addr)
        cyc = cp.zeros(sms, dtype=cp.int64)
        sink = cp.zeros(sms * 32 * WARPS, dtype=cp.uint32)
        args = (d_addr, np.int32(nbytes), np.int32(ITERS), cyc, sink)
        k((sms,), (32 * WARPS,), args, shared_mem=nbytes)  # warm
        best = None
        for _ in range(5):
            k((sms,), (32 * WARPS,), args, shared_mem=nbytes)
            cp.cuda.Device().synchronize()
            c = float(cp.median(cyc).get()) / (WARPS * ITERS * UNROLL)
            best = c if best is None else min(best, c)
        rows.append(
            {
                "pattern": name,
                "instruction": ins,
                "predicted_wavefronts": want,
                "status": status,
                "cycles_per_instruction": best,
            }
        )
    # one wavefront per cycle: the cycles per instruction are the measured wavefronts
    worst = 0.0
    print(f"{'pattern':38s} {'instr':18s} {'predicted':>9s} {'cycles':>8s} {'ratio':>6s}")
    for r in rows:
        r["measured_over_predicted"] = r["cycles_per_instruction"] / r["predicted_wavefronts"]
        worst = max(worst, abs(np.log(r["measured_over_predicted"])))
        print(
            f"{r['pattern']:38s} {r['instruction']:18s} {r['predicted_wavefronts']:9d} "
            f"{r['cycles_per_instruction']:8.2f} {r['measured_over_predicted']:6.2f}"
        )
    name = cp.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"worst cycles/predicted: {np.exp(worst):.2f}x; machine {name}")
    out = os.environ.get("OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / "bank_model_check.json").write_text(
            json.dumps({"date": time.strftime("%Y-%m-%d"), "rows": rows}, indent=1)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
