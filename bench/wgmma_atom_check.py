"""The wgmma atoms on the hardware: one warpgroup, one ``wgmma.mma_async.m64nNk16``, A from
shared memory (SS) or from registers (RS), D read back through the atom's C layout.

The GEMM kernels exercise the SS atoms at N = 128 and 256 only; this runs each atom of
``layoutproof.gpu.isa.gmma`` for N in 8 (the N = 8 accumulator bug class, cutlass#3254), 16,
64, 256 and f16 / bf16, with operands that are small integers (every product and sum is
exact in f32).  For RS, each thread's four A registers are packed on the host from the
atom's A thread-value layout; for SS and B, the operands are laid out in shared memory
by CuTe's K-major 32-byte-swizzled GMMA atom (``tile_to_shape``) and addressed through
descriptors from :func:`layoutproof.gpu.isa.gmma.make_descriptor`.  Any element of D that
differs from A @ B, placed by the atom's C layout, is a failure.

    python bench/wgmma_atom_check.py          # prints one line per atom, exits 1 on a mismatch
"""

import sys

import numpy as np


def _bits(x, dtype):
    """uint16 bit patterns of the float32 array ``x`` (exact small integers)."""
    if dtype == "f16":
        return x.astype(np.float16).view(np.uint16)
    return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)


def _source(n, dtype, mode):
    regs = n // 2
    ty = dtype
    dl = ", ".join(f"%{i}" for i in range(regs))
    outs = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
    if mode == "RS":
        a_ops = f"{{%{regs}, %{regs + 1}, %{regs + 2}, %{regs + 3}}}"
        b_op, p_op = f"%{regs + 4}", f"%{regs + 5}"
        tail = "1, 1, 0"  # imm-scale-a, imm-scale-b, imm-trans-b
        ins = '"r"(a0), "r"(a1), "r"(a2), "r"(a3), "l"(db), "r"(1)'
    else:
        a_ops = f"%{regs}"
        b_op, p_op = f"%{regs + 1}", f"%{regs + 2}"
        tail = "1, 1, 0, 0"  # imm-scale-a/b, imm-trans-a/b
        ins = '"l"(da), "l"(db), "r"(1)'
    return f"""
extern "C" __global__ void chk(const unsigned short* Aimg, const unsigned short* Bimg,
                               const unsigned* Areg, float* D, unsigned long long da_t,
                               unsigned long long db_t, int a_elems, int b_elems) {{
  __shared__ __align__(1024) unsigned short sA[64 * 16];
  __shared__ __align__(1024) unsigned short sB[256 * 16];
  const int t = threadIdx.x;
  for (int i = t; i < a_elems; i += 128) sA[i] = Aimg[i];
  for (int i = t; i < b_elems; i += 128) sB[i] = Bimg[i];
  asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");
  __syncthreads();
  const unsigned sa = (unsigned)__cvta_generic_to_shared(sA);
  const unsigned sb = (unsigned)__cvta_generic_to_shared(sB);
  const unsigned long long da = da_t | ((sa & 0x3FFFFu) >> 4);
  const unsigned long long db = db_t | ((sb & 0x3FFFFu) >> 4);
  const unsigned a0 = Areg[4 * t], a1 = Areg[4 * t + 1], a2 = Areg[4 * t + 2],
                 a3 = Areg[4 * t + 3];
  float d[{regs}];
#pragma unroll
  for (int i = 0; i < {regs}; ++i) d[i] = 0.f;
  asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");
  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, {p_op}, 0;\\n"
               "wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{ty}.{ty} {{{dl}}}, {a_ops}, {b_op}, "
               "p, {tail};\\n}}\\n" : {outs} : {ins});
  asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;\\n" ::: "memory");
#pragma unroll
  for (int i = 0; i < {regs}; ++i) D[t * {regs} + i] = d[i];
}}
"""


def check(cp, n, dtype, mode, rng):
    from layoutproof.gpu.isa import gmma as sm90

    atom = sm90.sm90_atom(n, dtype, mode)
    A = rng.integers(-3, 4, size=(64, 16)).astype(np.float32)
    B = rng.integers(-3, 4, size=(n, 16)).astype(np.float32)  # (n, k): K-major
    sa = sm90.tile_to_shape(sm90.smem_atom("K", "SW32"), (64, 16))
    sb = sm90.tile_to_shape(sm90.smem_atom("K", "SW32"), (n, 16))
    a_img = np.zeros(64 * 16, np.uint16)
    a_img[sa.table()] = _bits(A, dtype)
    b_img = np.zeros(n * 16, np.uint16)
    b_img[sb.table()] = _bits(B, dtype)
    # the A registers of each thread, from the atom's A thread-value layout
    av = (
        np.asarray(atom.a_layout.eval_all(), np.int64).reshape(8, 128).T
        if mode == "RS"
        else np.zeros((128, 8), np.int64)
    )
    a_bits = _bits(A, dtype).reshape(-1, order="F")[av]  # [t, i]
    a_reg = a_bits[:, 0::2].astype(np.uint32) | (a_bits[:, 1::2].astype(np.uint32) << 16)
    da = sm90.make_descriptor(sa, 0)
    db = sm90.make_descriptor(sb, 0)
    rk = cp.RawKernel(_source(n, dtype, mode), "chk", options=("-arch=sm_90a",))
    d = cp.zeros(128 * (n // 2), cp.float32)
    rk(
        (1,),
        (128,),
        (
            cp.asarray(a_img),
            cp.asarray(b_img),
            cp.asarray(a_reg.reshape(-1)),
            d,
            np.uint64(da),
            np.uint64(db),
            np.int32(a_img.size),
            np.int32(b_img.size),
        ),
    )
    got = cp.asnumpy(d).reshape(128, n // 2)
    where = np.asarray(atom.c_layout.eval_all(), np.int64).reshape(n // 2, 128).T  # m + 64 n
    want = (A @ B.T).reshape(-1, order="F")[where]
    bad = np.argwhere(got != want)
    return bad.shape[0], got.size, (tuple(int(v) for v in bad[0]) if bad.size else None)


def main():
    import cupy as cp

    rng = np.random.default_rng(11)
    fails = 0
    for mode in ("SS", "RS"):
        for dtype in ("f16", "bf16"):
            for n in (8, 16, 64, 256):
                nbad, total, first = check(cp, n, dtype, mode, rng)
                fails += nbad > 0
                print(
                    f"{sm90_name(n, dtype, mode):34s} {total - nbad}/{total} elements of D "
                    f"correct" + (f"; first wrong (thread, register) {first}" if nbad else "")
                )
    print("all wgmma atoms agree with the hardware" if not fails else f"{fails} atom(s) FAILED")
    return 1 if fails else 0


def sm90_name(n, dtype, mode):
    from layoutproof.gpu.isa import gmma as sm90

    return sm90.sm90_atom(n, dtype, mode).name


if __name__ == "__main__":
    sys.exit(main())
