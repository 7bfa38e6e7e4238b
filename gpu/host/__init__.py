"""The host side of a GEMM: the rule that chooses a kernel, the launch plan, the runtime
that carries it out on CuPy arrays, and the compile cache."""
