"""The CuPy runtime of the proven GEMM: ``gemm``, the compile cache and the autotuner.

``gemm(a, b)`` multiplies two 2-D CuPy arrays (f16 or bf16, any strides) with a kernel
that :func:`layoutproof.gpu.codegen.generate` built and proved.  The operands' memory
layouts pick the variant (row- or column-major A and B: the NT/TN/NN/TT table); an output
in column-major order is computed as the transposed product.  Operands that break the
kernel's 16-byte contract (a leading dimension not a multiple of 8 elements, a base
pointer not 16-byte aligned, a non-unit inner stride) are copied once into a padded,
aligned buffer -- a correct, slower path whose cost is one pass over that operand.

Caches: generated kernels (source + proof log) in memory and on disk
(``$LAYOUTPROOF_CACHE`` or ``~/.cache/layoutproof``, keyed by the generator's own source
hash, the config and the variant); compiled modules in memory (and CuPy's own on-disk
cache, keyed by the source).  CuPy is imported only when a GPU function is called.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from .config import GemmConfig, GemmProblem
from .errors import GemmInputError, NoGPUError

__all__ = ["gemm", "compile_kernel", "autotune", "cache_dir", "DEFAULT_CONFIGS", "kernel_for",
           "gpu_available", "last_launch"]

DEFAULT_CONFIG = GemmConfig()
# the autotuner's candidates (all proven when first generated)
# (measured on an H100, bench/RESULTS.md: 64x64 warp tiles win; 16-warp / 2-block variants
# that cap registers at 128 spill and lose ILP, so they are not candidates)
DEFAULT_CONFIGS: Tuple[GemmConfig, ...] = (
    GemmConfig(bm=128, bn=256, bk=32, warps_m=2, warps_n=4, stages=3),
    GemmConfig(bm=128, bn=256, bk=32, warps_m=2, warps_n=4, stages=4),
    GemmConfig(bm=256, bn=128, bk=32, warps_m=4, warps_n=2, stages=3),
    GemmConfig(bm=128, bn=256, bk=64, warps_m=2, warps_n=4, stages=3),
    GemmConfig(bm=256, bn=128, bk=64, warps_m=4, warps_n=2, stages=3),
    GemmConfig(bm=128, bn=128, bk=32, warps_m=2, warps_n=2, stages=4),
    GemmConfig(bm=64, bn=128, bk=32, warps_m=2, warps_n=2, stages=4, min_blocks=2),
    GemmConfig(bm=64, bn=64, bk=32, warps_m=2, warps_n=2, stages=4),
)

@functools.cache
def _sm90_configs() -> Tuple[Any, ...]:
    """The wgmma candidates (TMA first where cuda-python can encode tensor maps); decided
    once per process, not on every gemm call."""
    from .codegen_sm90 import Sm90Config

    cands = (Sm90Config(bm=128, bn=256, stages=4), Sm90Config(bm=128, bn=256, stages=3),
             Sm90Config(bm=256, bn=128, stages=4), Sm90Config(bm=128, bn=128, stages=6))
    if tma_available():
        cands = (Sm90Config(bm=128, bn=256, stages=4, loader="tma", schedule="ws"),
                 Sm90Config(bm=128, bn=256, stages=4, loader="tma", schedule="ws", cluster=2),
                 Sm90Config(bm=128, bn=128, stages=6, loader="tma", schedule="ws"),
                 Sm90Config(bm=128, bn=256, stages=4, loader="tma"),
                 Sm90Config(bm=256, bn=128, stages=4, loader="tma")) + cands
    return cands


_KERNELS: Dict[Tuple[Any, GemmProblem], Any] = {}      # -> GemmKernel
_MODULES: Dict[Tuple[str, int], Any] = {}                      # (source hash, device) -> RawKernel
_TUNED: Dict[Tuple[Any, ...], GemmConfig] = {}
last_launch: Dict[str, Any] = {}


# ============================================================================ helpers
_CUPY: List[Any] = []


def _cupy() -> Any:
    """CuPy, once it has been seen to import and to see a device (checked once)."""
    if _CUPY:
        return _CUPY[0]
    try:
        import cupy
    except Exception as e:  # ImportError, or a CUDA library that fails to load
        raise NoGPUError(f"layoutproof.gpu needs CuPy with a CUDA device: {e}") from None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise NoGPUError("layoutproof.gpu: no CUDA device is visible")
    except NoGPUError:
        raise
    except Exception as e:
        raise NoGPUError(f"layoutproof.gpu: no usable CUDA device ({e})") from None
    _CUPY.append(cupy)
    return cupy


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        _cupy()
        return True
    except NoGPUError:
        return False


def cache_dir() -> Path:
    d = os.environ.get("LAYOUTPROOF_CACHE")
    return Path(d) if d else Path.home() / ".cache" / "layoutproof"


def _generator_hash() -> str:
    """Hash of the generator's own source files: a cached kernel is reused only when the
    code that proved it is unchanged."""
    here = Path(__file__).resolve().parent
    h = hashlib.sha256()
    for name in ("codegen.py", "codegen_sm90.py", "lower.py", "banks.py", "atoms.py",
                 "ptx_tables.py", "config.py"):
        f = here / name
        if f.exists():
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


_GEN_HASH: Optional[str] = None


def kernel_for(config: GemmConfig, problem: GemmProblem, *, disk: bool = True) -> Any:
    """The generated, proven kernel for (config, problem): memory cache, then disk cache,
    then :func:`~layoutproof.gpu.codegen.generate`."""
    global _GEN_HASH
    key = (config, problem)
    k = _KERNELS.get(key)
    if k is not None:
        return k
    from .codegen import GemmKernel, generate
    from .proofrec import Proof, ProofLog

    if _GEN_HASH is None:
        _GEN_HASH = _generator_hash()
    path = cache_dir() / "gemm" / f"{_GEN_HASH}_{config.key()}_{problem.key()}.json"
    if disk and path.exists():
        try:
            d = json.loads(path.read_text())
            log = ProofLog([Proof(**p) for p in d["proofs"]])
            sw = {k2: (tuple(v) if v else None) for k2, v in d["swizzles"].items()}
            k = GemmKernel(config, problem, d["source"], d["name"], d["threads"],
                           d["smem_bytes"], log, sw)
            _KERNELS[key] = k
            return k
        except (OSError, ValueError, KeyError, TypeError):
            pass  # a damaged cache entry is regenerated
    if isinstance(config, GemmConfig):
        k = generate(config, problem)
    else:
        from .codegen_sm90 import generate_sm90

        k = generate_sm90(config, problem)
    _KERNELS[key] = k
    if disk:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps({
                "source": k.source, "name": k.name, "threads": k.threads,
                "smem_bytes": k.smem_bytes, "swizzles": k.swizzles,
                "proofs": [p.__dict__ for p in k.proofs]}))
            tmp.replace(path)
        except OSError:
            pass
    return k


def compile_kernel(kernel: Any) -> Any:
    """A CuPy RawKernel for a generated kernel (memory cache by source hash and device)."""
    cupy = _cupy()
    dev = cupy.cuda.Device().id
    key = (kernel.source_hash, dev)
    rk = _MODULES.get(key)
    if rk is not None:
        return rk
    cc = cupy.cuda.Device(dev).compute_capability
    # wgmma and setmaxnreg need the architecture-specific target
    arch = f"-arch=sm_{cc}a" if "wgmma." in kernel.source else f"-arch=sm_{cc}"
    rk = cupy.RawKernel(kernel.source, kernel.name, options=(arch, "-std=c++17"))
    rk.max_dynamic_shared_size_bytes = kernel.smem_bytes
    rk.compile()
    _MODULES[key] = rk
    return rk


# ============================================================================ operands
_DT = {"float16": "f16", "bfloat16": "bf16", "float32": "f32"}


def _dtype_name(x: Any) -> str:
    return _DT.get(str(x.dtype), str(x.dtype))


def _major(x: Any, rows: str, cols: str) -> Tuple[str, int, Any]:
    """(contiguous dimension name, leading dimension, array) for a 2-D operand, copying it
    into a padded aligned buffer when it breaks the kernel's 16-byte contract."""
    cupy = _cupy()
    it = x.itemsize
    r, c = x.shape
    s0, s1 = x.strides
    if s1 == it and s0 % it == 0 and s0 // it >= max(c, 1):
        major, ld = cols, s0 // it
    elif s0 == it and s1 % it == 0 and s1 // it >= max(r, 1):
        major, ld = rows, s1 // it
    elif r == 1 or c == 1:
        major, ld = cols, c
    else:
        major, ld = cols, -1
    aligned = x.data.ptr % 16 == 0 and ld > 0 and ld % 8 == 0
    if not aligned or (r == 1 and c == 1):
        # the correct slower path: one copy into a padded, aligned buffer
        if major == cols:
            ldp = max(8, -(-c // 8) * 8)
            buf = cupy.zeros((r, ldp), dtype=x.dtype)
            buf[:, :c] = x
            return cols, ldp, buf
        ldp = max(8, -(-r // 8) * 8)
        buf = cupy.zeros((c, ldp), dtype=x.dtype)
        buf[:, :r] = x.T
        return rows, ldp, buf
    return major, ld, x


_DEVICE_FACTS: Dict[int, Tuple[str, str]] = {}


def _device_facts(cupy: Any) -> Tuple[str, str]:
    """(name, compute capability) of the current device, read once per device (the CUDA
    property query costs far more than a kernel launch)."""
    dev = cupy.cuda.Device().id
    facts = _DEVICE_FACTS.get(dev)
    if facts is None:
        name = cupy.cuda.runtime.getDeviceProperties(dev)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        facts = _DEVICE_FACTS[dev] = (name, cupy.cuda.Device(dev).compute_capability)
    return facts


def _use_wgmma(cupy: Any, config: Any, path: str) -> bool:
    if path not in ("auto", "wgmma", "mma.sync"):
        raise GemmInputError(f"gemm: path={path!r} must be 'auto', 'wgmma' or 'mma.sync'")
    if isinstance(config, GemmConfig) or path == "mma.sync":
        return False
    sm90 = _device_facts(cupy)[1] == "90"
    if type(config).__name__ == "Sm90Config" or path == "wgmma":
        if not sm90:
            raise GemmInputError("gemm: the wgmma kernel needs compute capability 9.0 (Hopper)")
        return True
    return sm90


@functools.cache
def _sm_count_of(dev: int) -> int:
    cupy = _cupy()
    return int(cupy.cuda.Device(dev).attributes["MultiProcessorCount"])


def _sm_count(cupy: Any) -> int:
    return _sm_count_of(cupy.cuda.Device().id)


@functools.cache
def tma_available() -> bool:
    """True when cuda-python's driver bindings (``cuda.bindings.driver``) can encode tensor
    maps; without them the wgmma kernel loads with cp.async."""
    try:
        from cuda.bindings import driver  # noqa: F401
    except Exception:
        return False
    return True


def _tensor_map(x: Any, inner: int, outer: int, ld: int, dt: str) -> Any:
    """A CUtensorMap (as a 128-byte numpy scalar, passed by value as the kernel's
    ``__grid_constant__`` parameter) for a 2-D operand: ``inner`` contiguous elements per
    row, ``outer`` rows ``ld`` elements apart; 64x64 boxes, 128-byte swizzle, zero fill
    outside the tensor (the M, N, K tails)."""
    import numpy as np
    from cuda.bindings import driver

    dtype = (driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16 if dt == "f16"
             else driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16)
    u32, u64 = driver.cuuint32_t, driver.cuuint64_t
    err, tmap = driver.cuTensorMapEncodeTiled(
        dtype, u32(2), x.data.ptr, [u64(inner), u64(outer)], [u64(ld * 2)], [u32(64), u32(64)],
        [u32(1), u32(1)],
        driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
        driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
        driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
        driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise GemmInputError(f"gemm: cuTensorMapEncodeTiled failed ({err}) for a {outer}x{inner} "
                             f"operand with leading dimension {ld}")
    raw = np.array([int(v) for v in tmap.opaque], dtype=np.uint64)
    return raw.view(np.dtype({"names": [f"w{i}" for i in range(16)],
                              "formats": [np.uint64] * 16}))[0]


def _check(a: Any, b: Any, dtype: Optional[str]) -> Tuple[str, Any]:
    cupy = _cupy()
    for nm, x in (("a", a), ("b", b)):
        if not isinstance(x, cupy.ndarray):
            raise GemmInputError(f"gemm: {nm} must be a cupy.ndarray, got {type(x).__name__}")
        if x.ndim != 2:
            raise GemmInputError(f"gemm: {nm} must be 2-D, got shape {x.shape}")
        if 0 in x.shape:
            raise GemmInputError(f"gemm: {nm} has an empty dimension, shape {x.shape}")
        if max(x.shape) >= 2 ** 31:
            raise GemmInputError(f"gemm: {nm} has an extent >= 2**31, shape {x.shape}")
    if a.shape[1] != b.shape[0]:
        raise GemmInputError(f"gemm: inner dimensions differ: a is {a.shape}, b is {b.shape} "
                             f"(a.shape[1] must equal b.shape[0])")
    if a.dtype != b.dtype:
        raise GemmInputError(f"gemm: a is {a.dtype} and b is {b.dtype}; both must be float16 "
                             f"or both bfloat16")
    if a.device != b.device:
        raise GemmInputError(f"gemm: a is on {a.device} and b on {b.device}")
    if dtype is not None:
        if dtype not in ("f16", "bf16"):
            raise GemmInputError(f"gemm: dtype={dtype!r} must be 'f16' or 'bf16'")
        if a.itemsize != 2:
            raise GemmInputError(f"gemm: dtype={dtype!r} reinterprets 2-byte elements; a is "
                                 f"{a.dtype}")
        return dtype, cupy
    dn = _dtype_name(a)
    if dn not in ("f16", "bf16"):
        raise GemmInputError(f"gemm: unsupported dtype {a.dtype}: float16 or bfloat16 (or "
                             f"2-byte arrays with dtype='bf16'), f32 accumulation")
    return dn, cupy


def _out_dtype(cupy: Any, name: str, like: Any) -> Any:
    if name == "f16":
        return cupy.float16
    if name == "f32":
        return cupy.float32
    try:
        return cupy.dtype("bfloat16")
    except TypeError:
        return like.dtype   # raw bf16 bits in a 2-byte array (dtype='bf16' reinterpretation)


# ============================================================================ gemm
def gemm(a: Any, b: Any, out: Any = None, *, config: Any = None, out_dtype: Optional[str] = None,
         dtype: Optional[str] = None, path: str = "auto") -> Any:
    """C = A @ B on the GPU with a proven tensor-core kernel (f32 accumulation): the wgmma
    kernel (:mod:`~layoutproof.gpu.codegen_sm90`) on sm_90, the mma.sync kernel
    (:mod:`~layoutproof.gpu.codegen`) elsewhere or when asked for.

    Args:
        a: (M, K) cupy array, float16 or bfloat16, any strides.
        b: (K, N) cupy array of the same dtype.
        out: optional (M, N) result array (row- or column-major), of ``out_dtype``.
        config: a :class:`GemmConfig`, ``"auto"`` (the autotuner's choice for this shape,
            tuned on first use) or None (the default config).
        out_dtype: ``"f16"``, ``"bf16"`` or ``"f32"``; default: the input dtype (or out's).
        dtype: reinterpret 2-byte arrays as this dtype (``"bf16"`` where CuPy has no
            bfloat16 dtype: pass the raw bits as uint16).
        path: ``"auto"`` (wgmma on compute capability 9.0, else mma.sync), ``"wgmma"`` or
            ``"mma.sync"``; a GemmConfig selects mma.sync, an Sm90Config wgmma.

    Raises:
        GemmInputError: wrong dtype, shape, device or layout; NoGPUError without CuPy/GPU.
    """
    dt, cupy = _check(a, b, dtype)
    M, K = a.shape
    N = b.shape[1]
    if out is not None:
        if not isinstance(out, cupy.ndarray) or out.shape != (M, N):
            raise GemmInputError(f"gemm: out must be a cupy array of shape {(M, N)}, got "
                                 f"{getattr(out, 'shape', type(out).__name__)}")
        od = out_dtype or ({"float16": "f16", "float32": "f32"}.get(str(out.dtype))
                           or ("bf16" if str(out.dtype) == "bfloat16" or dt == "bf16" else None))
        if od is None:
            raise GemmInputError(f"gemm: out has dtype {out.dtype}; float16, bfloat16 or float32")
    else:
        od = out_dtype or dt
    if od not in ("f16", "bf16", "f32"):
        raise GemmInputError(f"gemm: out_dtype={od!r} must be 'f16', 'bf16' or 'f32'")
    if out is None:
        out = cupy.empty((M, N), dtype=_out_dtype(cupy, od, a))
    # column-major output: C^T = B^T A^T with the roles of the operands swapped
    it = out.itemsize
    if out.strides[1] == it and out.strides[0] % it == 0 and out.strides[0] // it >= N:
        target, A, B, m, n = out, a, b, M, N
    elif out.strides[0] == it and out.strides[1] % it == 0 and out.strides[1] // it >= M:
        target, A, B, m, n = out.T, b.T, a.T, N, M
    else:
        tmp = gemm(a, b, None, config=config, out_dtype=od, dtype=dtype, path=path)
        out[...] = tmp
        return out
    amaj, lda, A = _major(A, "m", "k")
    bmaj, ldb, B = _major(B, "k", "n")
    use90 = _use_wgmma(cupy, config, path)
    prob = GemmProblem(a_major=amaj, b_major=bmaj, dtype=dt, out_dtype=od)
    if config is None:
        cfg = _sm90_configs()[0] if use90 else DEFAULT_CONFIG
    elif config == "auto":
        cfg = autotune(m, n, K, problem=prob, path="wgmma" if use90 else "mma.sync")
    elif isinstance(config, GemmConfig) or type(config).__name__ == "Sm90Config":
        cfg = config
    else:
        raise GemmInputError(f"gemm: config must be a GemmConfig, an Sm90Config, 'auto' or None, "
                             f"got {config!r}")
    kern = kernel_for(cfg, prob)
    rk = compile_kernel(kern)
    ldc = target.strides[0] // it
    c_vec = int(ldc % 2 == 0 and target.data.ptr % (2 * it) == 0)
    import numpy as np

    if getattr(cfg, "loader", "") == "tma":
        if not tma_available():
            raise GemmInputError("gemm: Sm90Config(loader='tma') needs cuda-python "
                                 "(cuda.bindings.driver) to encode tensor maps; use "
                                 "loader='cp.async' or install cuda-python")
        # TMA: tensor maps for A and B (contiguous dimension innermost)
        tma = _tensor_map(A, K if amaj == "k" else m, m if amaj == "k" else K, lda, dt)
        tmb = _tensor_map(B, K if bmaj == "k" else n, n if bmaj == "k" else K, ldb, dt)
        if cfg.schedule == "ws":
            # the staged epilogue stores 16-byte row vectors: C and ldc 16-byte aligned
            c_vec = int((ldc * it) % 16 == 0 and target.data.ptr % 16 == 0)
        args = (tma, tmb, target, np.int32(m), np.int32(n), np.int32(K), np.int64(ldc),
                np.int32(c_vec))
    else:
        args = (A, B, target, np.int32(m), np.int32(n), np.int32(K), np.int64(lda),
                np.int64(ldb), np.int64(ldc), np.int32(c_vec))
    grid = kern.grid(m, n)
    if getattr(cfg, "schedule", "") == "ws":   # persistent: at most one CTA per SM
        cl = cfg.cluster                       # clusters of `cl` CTAs share a tile column
        grid_m, grid_n = -(-m // cfg.bm), -(-n // cfg.bn)
        units = -(-grid_m // cl) * grid_n
        grid = (cl * max(1, min(units, _sm_count(cupy) // cl)), 1, 1)
    rk(grid, (kern.threads, 1, 1), args, shared_mem=kern.smem_bytes)
    last_launch.update(config=cfg, problem=prob, kernel=kern.name, m=m, n=n, k=K)
    return out


# ============================================================================ autotuner
def _time_kernel(fn: Any, reps: int = 10) -> float:
    cupy = _cupy()
    fn()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(3):
        start.record()
        for _ in range(reps):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / reps)
    return sorted(times)[1]


def _bucket(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


def autotune(m: int, n: int, k: int, *, problem: Optional[GemmProblem] = None,
             configs: Optional[Sequence[Any]] = None, reps: int = 10,
             verbose: bool = False, path: str = "mma.sync") -> Any:
    """The fastest config for this shape (rounded up to powers of two) and variant, timed
    on the current device with fresh random operands; remembered in memory and on disk.
    ``path="wgmma"`` tunes the Hopper kernel's :class:`Sm90Config` candidates."""
    from dataclasses import asdict

    cupy = _cupy()
    prob = problem or GemmProblem()
    if configs is None:
        configs = _sm90_configs() if path == "wgmma" else DEFAULT_CONFIGS
    dev = _device_facts(cupy)[0]
    key = (dev, path, prob, _bucket(m), _bucket(n), _bucket(k))
    if key in _TUNED:
        return _TUNED[key]
    tpath = cache_dir() / "autotune.json"
    skey = "|".join(map(str, (dev, path, prob.key(), *key[3:])))
    try:
        table = json.loads(tpath.read_text()) if tpath.exists() else {}
    except (OSError, ValueError):
        table = {}
    if skey in table:
        d = dict(table[skey])
        kind = d.pop("kind", "sm80")
        if isinstance(d.get("swizzle"), list):
            d["swizzle"] = tuple(d["swizzle"])
        try:
            if kind == "sm90":
                from .codegen_sm90 import Sm90Config

                cfg = Sm90Config(**d)
            else:
                cfg = GemmConfig(**d)
        except TypeError:   # an entry written by another version: tune again
            cfg = None
        if cfg is not None and cfg in configs:
            _TUNED[key] = cfg
            return cfg
    rng = cupy.random.default_rng(1234)
    dt = cupy.float16
    a = rng.standard_normal((m, k), dtype=cupy.float32).astype(dt)
    b = rng.standard_normal((k, n), dtype=cupy.float32).astype(dt)
    if prob.a_major == "m":
        a = cupy.asfortranarray(a)
    if prob.b_major == "k":
        b = cupy.asfortranarray(b)
    best: Optional[Tuple[float, GemmConfig]] = None
    results: List[Tuple[float, GemmConfig]] = []
    for cfg in configs:
        try:
            t = _time_kernel(lambda c=cfg: gemm(a, b, config=c, dtype=prob.dtype,
                                                  out_dtype=prob.out), reps)
        except Exception as e:  # a config that cannot run here is skipped, and said so
            if verbose:
                print(f"autotune: {cfg.key()} skipped: {e}")
            continue
        results.append((t, cfg))
        if verbose:
            print(f"autotune: {cfg.key()}: {t * 1e3:.1f} us")
        if best is None or t < best[0]:
            best = (t, cfg)
    if best is None:
        raise GemmInputError("autotune: no configuration ran")
    _TUNED[key] = best[1]
    table[skey] = dict(asdict(best[1]), kind="sm80" if isinstance(best[1], GemmConfig) else "sm90")
    try:
        tpath.parent.mkdir(parents=True, exist_ok=True)
        tpath.write_text(json.dumps(table, indent=1))
    except OSError:
        pass
    return best[1]
