"""The kernel generators, each built on the kernel IR with every obligation proven: the
mma.sync kernel, the warp-specialized wgmma kernel, its variants (fused epilogue, split-K
and its reductions)."""
