"""The CuPy runtime of the proven GEMM: ``gemm``, launch plans, the compile cache and the
autotuner.

``gemm(a, b)`` multiplies two 2-D CuPy arrays (f16 or bf16, any strides) with a kernel
that :func:`layoutproof.gpu.kernels.mma_sync.generate` built and proved.  The operands' memory
layouts pick the variant (row- or column-major A and B: the NT/TN/NN/TT table); an output
in column-major order is computed as the transposed product.  Operands that break the
kernel's 16-byte contract (a leading dimension not a multiple of 8 elements, a base
pointer not 16-byte aligned, a non-unit inner stride) are copied once into a padded,
aligned buffer -- a correct, slower path whose cost is one pass over that operand.

The host path: the first call for an argument signature builds a :class:`GemmPlan`
(checks, the kernel choice of :func:`~layoutproof.gpu.host.rule.choose_config`, the kernel,
launch geometry, the packed parameters); later calls update the base pointers (a TMA
descriptor is re-encoded only for a base address the plan has not seen) and launch through
``cuLaunchKernel`` on the current stream -- also inside a CUDA graph capture.

Caches: plans in memory; generated kernels (source + proof log) in memory and on disk
(``$LAYOUTPROOF_CACHE`` or ``~/.cache/layoutproof``, keyed by the generator's own source
hash, the config and the variant); compiled modules in memory (and CuPy's own on-disk
cache, keyed by the source); autotuner results on disk (``autotune.json``).  CuPy is
imported only when a GPU function is called.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ..config import GemmConfig, GemmProblem
from ..errors import GemmInputError, NoGPUError
from .rule import (
    ParamBuffer,
    choose_config,
    hopper_candidates,
    operand_layout,
    splitk_candidates,
    splitk_pdl,
    warn_slow_path,
)

__all__ = [
    "gemm",
    "gemm_plan",
    "GemmPlan",
    "BatchedGemmPlan",
    "compile_kernel",
    "autotune",
    "cache_dir",
    "DEFAULT_CONFIGS",
    "kernel_for",
    "gpu_available",
    "last_launch",
]

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
    from ..kernels.wgmma import Sm90Config

    cands: Tuple[Any, ...] = (
        Sm90Config(bm=128, bn=256, stages=4),
        Sm90Config(bm=128, bn=256, stages=3),
        Sm90Config(bm=256, bn=128, stages=4),
        Sm90Config(bm=128, bn=128, stages=6),
    )
    if tma_available():
        cands = (
            Sm90Config(bm=128, bn=256, stages=4, loader="tma", schedule="ws"),
            Sm90Config(bm=128, bn=256, stages=4, loader="tma", schedule="ws", cluster=2),
            Sm90Config(bm=128, bn=128, stages=6, loader="tma", schedule="ws"),
            Sm90Config(bm=128, bn=256, stages=4, loader="tma"),
            Sm90Config(bm=256, bn=128, stages=4, loader="tma"),
        ) + cands
    # the default rule's candidates too: tuning never picks worse than the rule could
    return cands + tuple(c for c in hopper_candidates(tma_available()) if c not in cands)


_KERNELS: Dict[Tuple[Any, GemmProblem], Any] = {}  # -> GemmKernel
_SPLITK: Dict[Tuple[Any, GemmProblem], Tuple[Any, Any]] = {}  # -> (gemm, fix-up) kernels
_MODULES: Dict[Tuple[str, int], Any] = {}  # (source hash, device) -> RawKernel
_TUNED: Dict[Tuple[Any, ...], Any] = {}  # -> GemmConfig or Sm90Config
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
    gpu = Path(__file__).resolve().parent.parent
    h = hashlib.sha256()
    for sub in ("isa", "proof", "kernels"):
        for f in sorted((gpu / sub).glob("*.py")):
            h.update(f.read_bytes())
    h.update((gpu / "config.py").read_bytes())
    return h.hexdigest()[:16]


_GEN_HASH: Optional[str] = None


def _kernel_path(key: str, problem: GemmProblem) -> Path:
    global _GEN_HASH
    if _GEN_HASH is None:
        _GEN_HASH = _generator_hash()
    return cache_dir() / "gemm" / f"{_GEN_HASH}_{key}_{problem.key()}.json"


def _load_kernel(path: Path, config: Any, problem: GemmProblem) -> Any:
    """A cached kernel from disk, or None (missing or damaged: regenerated)."""
    from ..kernels.mma_sync import GemmKernel
    from ..proof.record import Proof, ProofLog

    if not path.exists():
        return None
    try:
        d = json.loads(path.read_text())
        log = ProofLog([Proof(**p) for p in d["proofs"]])
        sw = {k2: (tuple(v) if v else None) for k2, v in d["swizzles"].items()}
        return GemmKernel(config, problem, d["source"], d["name"], d["threads"], d["smem_bytes"], log, sw)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # a damaged cache entry is regenerated


def _store_kernel(path: Path, k: Any) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(
            json.dumps(
                {
                    "source": k.source,
                    "name": k.name,
                    "threads": k.threads,
                    "smem_bytes": k.smem_bytes,
                    "swizzles": k.swizzles,
                    "proofs": [p.__dict__ for p in k.proofs],
                }
            )
        )
        tmp.replace(path)
    except OSError:
        pass


def kernel_for(config: GemmConfig, problem: GemmProblem, *, disk: bool = True) -> Any:
    """The generated, proven kernel for (config, problem): memory cache, then disk cache,
    then :func:`~layoutproof.gpu.kernels.mma_sync.generate` (``generate_sm90`` for an ``Sm90Config``).
    For a :class:`~layoutproof.gpu.kernels.splitk.SplitKConfig` this is the split GEMM kernel (f32
    partials); :func:`splitk_kernels_for` gives it with its fix-up kernel."""
    from ..kernels.splitk import SplitKConfig

    if isinstance(config, SplitKConfig):
        return splitk_kernels_for(config, problem, disk=disk)[0]
    key = (config, problem)
    k = _KERNELS.get(key)
    if k is not None:
        return k
    if problem.batch and type(config).__name__ not in ("Sm90Config", "EpilogueConfig"):
        from ..errors import GemmConfigError

        raise GemmConfigError(
            "kernel_for: a batched problem runs on the warp-specialized TMA kernel, "
            f"not a {type(config).__name__}"
        )
    from ..kernels.mma_sync import generate

    path = _kernel_path(config.key(), problem)
    if disk:
        k = _load_kernel(path, config, problem)
        if k is not None:
            _KERNELS[key] = k
            return k
    if isinstance(config, GemmConfig):
        k = generate(config, problem)
    elif type(config).__name__ == "EpilogueConfig":
        from ..kernels.epilogue import generate_epilogue

        k = generate_epilogue(config, problem)
    else:
        from ..kernels.wgmma import generate_sm90

        k = generate_sm90(config, problem)
    _KERNELS[key] = k
    if disk:
        _store_kernel(path, k)
    return k


def splitk_kernels_for(config: Any, problem: GemmProblem, *, disk: bool = True) -> Tuple[Any, Any]:
    """(split GEMM kernel, fix-up kernel) for a ``SplitKConfig``: memory cache, disk cache,
    then :func:`~layoutproof.gpu.kernels.splitk.generate_splitk` (both proven before emission)."""
    key = (config, problem)
    hit = _SPLITK.get(key)
    if hit is not None:
        return hit
    pg = _kernel_path(config.key(), problem)
    pr = _kernel_path(config.key() + "_fixup", problem)
    serial = getattr(config, "reduction", "kernel") in ("serial", "cluster")  # no fix-up kernel
    pair = None
    if disk:
        g = _load_kernel(pg, config, problem)
        r = None if serial else _load_kernel(pr, config, problem)
        if g is not None and (serial or r is not None):
            pair = (g, r)
    if pair is None:
        from ..kernels.splitk import generate_splitk

        if getattr(config, "reduction", "kernel") == "cluster":  # G4: reduced in a cluster (DSMEM)
            from ..kernels.splitk_cluster import generate_cluster

            kk = generate_cluster(config, problem)
        else:
            kk = generate_splitk(config, problem)
        pair = (kk.gemm, kk.reduce)
        if disk:
            _store_kernel(pg, kk.gemm)
            if kk.reduce is not None:
                _store_kernel(pr, kk.reduce)
    _SPLITK[key] = pair
    return pair


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
    if type(config).__name__ in ("Sm90Config", "SplitKConfig", "EpilogueConfig") or path == "wgmma":
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


def _check(a: Any, b: Any, dtype: Optional[str]) -> Tuple[str, Any]:
    cupy = _cupy()
    for nm, x in (("a", a), ("b", b)):
        if not isinstance(x, cupy.ndarray):
            raise GemmInputError(f"gemm: {nm} must be a cupy.ndarray, got {type(x).__name__}")
        if x.ndim != 2:
            raise GemmInputError(f"gemm: {nm} must be 2-D, got shape {x.shape}")
        if 0 in x.shape:
            raise GemmInputError(f"gemm: {nm} has an empty dimension, shape {x.shape}")
        if max(x.shape) >= 2**31:
            raise GemmInputError(f"gemm: {nm} has an extent >= 2**31, shape {x.shape}")
    if a.shape[1] != b.shape[0]:
        raise GemmInputError(
            f"gemm: inner dimensions differ: a is {a.shape}, b is {b.shape} "
            f"(a.shape[1] must equal b.shape[0])"
        )
    if a.dtype != b.dtype:
        raise GemmInputError(
            f"gemm: a is {a.dtype} and b is {b.dtype}; both must be float16 or both bfloat16"
        )
    if a.device != b.device:
        raise GemmInputError(f"gemm: a is on {a.device} and b on {b.device}")
    if dtype is not None:
        if dtype not in ("f16", "bf16"):
            raise GemmInputError(f"gemm: dtype={dtype!r} must be 'f16' or 'bf16'")
        if a.itemsize != 2:
            raise GemmInputError(f"gemm: dtype={dtype!r} reinterprets 2-byte elements; a is {a.dtype}")
        return dtype, cupy
    dn = _dtype_name(a)
    if dn not in ("f16", "bf16"):
        raise GemmInputError(
            f"gemm: unsupported dtype {a.dtype}: float16 or bfloat16 (or "
            f"2-byte arrays with dtype='bf16'), f32 accumulation"
        )
    return dn, cupy


def _out_dtype(cupy: Any, name: str, like: Any) -> Any:
    if name == "f16":
        return cupy.float16
    if name == "f32":
        return cupy.float32
    try:
        return cupy.dtype("bfloat16")
    except TypeError:
        return like.dtype  # raw bf16 bits in a 2-byte array (dtype='bf16' reinterpretation)


# ============================================================================ plans
def _padded_copy(x: Any, cols_major: bool) -> Any:
    """``x`` (2-D) copied into a 16-byte-aligned buffer whose leading dimension is a
    multiple of 8 elements: row-major when ``cols_major``, else column-major (returned as
    the (cols, ldp) row-major buffer holding ``x.T``)."""
    cupy = _cupy()
    r, c = x.shape
    if cols_major:
        buf = cupy.zeros((r, max(8, -(-c // 8) * 8)), dtype=x.dtype)
        buf[:, :c] = x
    else:
        buf = cupy.zeros((c, max(8, -(-r // 8) * 8)), dtype=x.dtype)
        buf[:, :r] = x.T
    return buf


def _bias_dtype(cupy: Any, bias: Any, M: int, N: int, dev: int, along: str, dt: str) -> str:
    """The element type (``"f32"``, ``"f16"``, ``"bf16"``) of a fused bias vector, after
    checking it: a contiguous cupy vector of N (``along="n"``) or M (``"m"``) elements on
    the current device; 2-byte raw bits count as bf16 where the inputs are bf16 bits."""
    if along not in ("n", "m"):
        raise GemmInputError(
            f"gemm: bias_along={along!r} must be 'n' (one value per column) or 'm' (per row)"
        )
    n = N if along == "n" else M
    kinds = {"float32": "f32", "float16": "f16", "bfloat16": "bf16"}
    name = str(getattr(bias, "dtype", ""))
    kind = kinds.get(name) or ("bf16" if name == "uint16" and dt == "bf16" else None)
    ok = (
        isinstance(bias, cupy.ndarray)
        and kind is not None
        and bias.shape == (n,)
        and bias.strides == (bias.itemsize,)
        and bias.data.device_id == dev
    )
    if not ok or kind is None:
        raise GemmInputError(
            f"gemm: bias must be a contiguous float32, float16 or bfloat16 cupy array of shape ({n},) "
            f"(bias_along={along!r}) on device {dev}"
        )
    return kind


class _Operand:
    """One kernel operand of a plan: where it comes from, its layout and, for TMA, its
    tensor-map encoder with a small cache of maps by base address."""

    __slots__ = (
        "transposed",
        "rows",
        "cols",
        "cols_major",
        "ld",
        "copy",
        "major",
        "tma_args",
        "maps",
        "current",
        "bufs",
    )

    def __init__(
        self, src: Any, transposed: bool, rows: int, cols: int, names: Tuple[str, str], itemsize: int
    ) -> None:
        s0, s1 = src.strides
        if transposed:
            s0, s1 = s1, s0
        where, ld, copy = operand_layout(rows, cols, s0, s1, itemsize, src.data.ptr)
        # (no reference to ``src`` is kept: a cached plan must not hold its first operands)
        self.transposed, self.rows, self.cols = transposed, rows, cols
        self.cols_major = where == "cols"
        if copy:
            ld = max(8, -(-(cols if self.cols_major else rows) // 8) * 8)
        self.ld, self.copy = ld, copy
        self.major = names[1] if self.cols_major else names[0]
        self.tma_args: Optional[Tuple[Any, ...]] = None
        self.maps: Dict[int, Any] = {}
        self.current = -1
        self.bufs: Dict[int, Any] = {}  # stream -> the padded buffer of the copy path

    def array(self, x: Any) -> Any:
        """The array the kernel reads for the call's operand ``x`` (a padded copy on the
        copy path)."""
        v = x.T if self.transposed else x
        return _padded_copy(v, self.cols_major) if self.copy else v

    def staged(self, x: Any, stream: Any) -> Any:
        """:meth:`array` into a padded buffer the operand keeps (one per stream, so a copy
        never overwrites a buffer that a launch on another stream may still read; on one
        stream the copy is ordered after the previous launch).  The copy is one
        ``cudaMemcpy2DAsync`` where the rows to copy are contiguous (a few microseconds of
        host time, no allocation), else one element-wise copy.  The padding is zeroed once
        when the buffer is made; every call rewrites the whole operand."""
        v = x.T if self.transposed else x
        buf = self.bufs.get(stream.ptr)
        if buf is None:
            if len(self.bufs) >= 8:  # a few streams at most are kept
                self.bufs.clear()
            buf = self.bufs[stream.ptr] = _padded_copy(v, self.cols_major)
            return buf
        src = v if self.cols_major else v.T  # the rows of src become the rows of buf
        r, c = src.shape
        it = src.itemsize
        s0, s1 = src.strides
        if s1 == it and s0 >= c * it and s0 % it == 0:
            rt = _cupy().cuda.runtime  # 3: cudaMemcpyDeviceToDevice
            rt.memcpy2DAsync(buf.data.ptr, buf.strides[0], src.data.ptr, s0, c * it, r, 3, stream.ptr)
        else:
            buf[:, :c] = src
        return buf

    def staged_batch(self, x: Any, stream: Any) -> Any:
        """:meth:`staged` for a 3-D operand: all its matrices into one kept (batch, R, ld)
        buffer (R = rows, or columns for a column-major operand), one ``cudaMemcpy2DAsync``
        where the rows of every batch lie at one pitch (contiguous batches), else one
        element-wise copy."""
        v = x if self.cols_major else x.transpose(0, 2, 1)
        nb, r, c = v.shape
        buf = self.bufs.get(stream.ptr)
        if buf is None:
            if len(self.bufs) >= 8:
                self.bufs.clear()
            buf = self.bufs[stream.ptr] = _cupy().zeros((nb, r, self.ld), dtype=x.dtype)
        it = v.itemsize
        s0, s1, s2 = v.strides
        if s2 == it and s1 >= c * it and s1 % it == 0 and s0 == r * s1:
            rt = _cupy().cuda.runtime  # 3: cudaMemcpyDeviceToDevice
            rt.memcpy2DAsync(buf.data.ptr, self.ld * it, v.data.ptr, s1, c * it, nb * r, 3, stream.ptr)
        else:
            buf[:, :, :c] = v
        return buf

    def prepare_tma(self, dt: str, k: int, mn: int, batch: Optional[Tuple[int, int]] = None) -> None:
        """Build the encoder's constant arguments (``k`` and ``mn`` are the operand's K and
        M-or-N extents): 64x64 boxes, 128-byte swizzle, zero fill outside the tensor.
        ``batch`` = (count, stride in elements): a rank-3 map (inner, outer, batch) with
        1-deep boxes, so a box of batch ``i`` never reads past that batch's matrix."""
        from cuda.bindings import driver

        kmajor = self.major == "k"
        inner, outer = (k, mn) if kmajor else (mn, k)
        u32, u64 = driver.cuuint32_t, driver.cuuint64_t
        dims, strides, box = [u64(inner), u64(outer)], [u64(self.ld * 2)], [u32(64), u32(64)]
        if batch is not None:
            dims.append(u64(batch[0]))
            strides.append(u64(batch[1] * 2))
            box.append(u32(1))
        dtype = (
            driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_FLOAT16
            if dt == "f16"
            else driver.CUtensorMapDataType.CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
        )
        self.tma_args = (
            driver,
            dtype,
            u32(len(dims)),
            dims,
            strides,
            box,
            [u32(1)] * len(dims),
            driver.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE,
            driver.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B,
            driver.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            driver.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            inner,
            outer,
        )

    def tensor_map(self, ptr: int) -> Any:
        """The 128 bytes of the tensor map for base address ``ptr`` (encoded on first use of
        that address; every other encoder input is fixed by the plan)."""
        m = self.maps.get(ptr)
        if m is not None:
            return m
        import numpy as np

        (driver, dtype, rank, dims, strides, box, estr, il, sw, l2, oob, inner, outer) = self.tma_args  # type: ignore[misc]
        err, tmap = driver.cuTensorMapEncodeTiled(dtype, rank, ptr, dims, strides, box, estr, il, sw, l2, oob)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise GemmInputError(
                f"gemm: cuTensorMapEncodeTiled failed ({err}) for a "
                f"{outer}x{inner} operand with leading dimension {self.ld}"
            )
        m = np.array([int(v) for v in tmap.opaque], dtype=np.uint64).view(np.uint8)
        if len(self.maps) >= 64:  # activations cycle through a few buffers; bound the cache
            self.maps.clear()
        self.maps[ptr] = m
        return m


class GemmPlan:
    """Everything one GEMM launch needs, decided once for operands of a given shape,
    strides, dtype, device and 16-byte alignment: the checked inputs, the kernel (chosen by
    :func:`~layoutproof.gpu.host.rule.choose_config` unless given, generated, proven, compiled),
    the launch geometry, and a packed parameter block whose TMA descriptors are re-encoded
    only when an operand's base address changes (and kept per address).  Calling the plan
    rewrites the changed parameters and issues one ``cuLaunchKernel`` on the current CuPy
    stream, so it can be captured in a CUDA graph.

    ``gemm`` keeps one plan per argument signature; :func:`gemm_plan` returns one to keep.

    Raises:
        GemmInputError: as :func:`gemm`; calling a plan with arrays of another shape,
            strides, dtype, device or alignment class.
    """

    def __init__(
        self,
        a: Any,
        b: Any,
        out: Any = None,
        *,
        config: Any = None,
        out_dtype: Optional[str] = None,
        dtype: Optional[str] = None,
        path: str = "auto",
        bias: Any = None,
        activation: Optional[str] = None,
        c: Any = None,
        alpha_beta: bool = False,
        bias_along: str = "n",
    ) -> None:
        import threading

        import numpy as np

        dt, cupy = _check(a, b, dtype)
        self._cupy = cupy
        M, K = a.shape
        N = b.shape[1]
        dev = cupy.cuda.runtime.getDevice()
        for nm, x in (("a", a), ("b", b)):
            if x.data.device_id != dev:
                raise GemmInputError(
                    f"gemm: {nm} is on device {x.data.device_id} but the current "
                    f"device is {dev} (use `with cupy.cuda.Device(...)`)"
                )
        if out is not None:
            if not isinstance(out, cupy.ndarray) or out.shape != (M, N):
                raise GemmInputError(
                    f"gemm: out must be a cupy array of shape {(M, N)}, got "
                    f"{getattr(out, 'shape', type(out).__name__)}"
                )
            if out.data.device_id != dev:
                raise GemmInputError(
                    f"gemm: out is on device {out.data.device_id} but the current device is {dev}"
                )
            od = out_dtype or (
                {"float16": "f16", "float32": "f32"}.get(str(out.dtype))
                or ("bf16" if str(out.dtype) == "bfloat16" or dt == "bf16" else None)
            )
            if od is None:
                raise GemmInputError(f"gemm: out has dtype {out.dtype}; float16, bfloat16 or float32")
        else:
            od = out_dtype or dt
        if od not in ("f16", "bf16", "f32"):
            raise GemmInputError(f"gemm: out_dtype={od!r} must be 'f16', 'bf16' or 'f32'")
        self.out_dtype = _out_dtype(cupy, od, a)
        it = np.dtype(self.out_dtype).itemsize
        if out is not None and np.dtype(out.dtype).itemsize != it:
            raise GemmInputError(
                f"gemm: out has dtype {out.dtype} but out_dtype={od!r} stores {it}-byte elements"
            )
        # the output's layout: row-major (computed as is), column-major (C^T = B^T A^T with
        # the operands' roles swapped), anything else (a row-major temporary, then copied)
        orient = "row"
        if out is not None:
            s0, s1 = out.strides
            if s1 == it and s0 % it == 0 and s0 // it >= N:
                orient = "row"
            elif s0 == it and s1 % it == 0 and s1 // it >= M:
                orient = "col"
            else:
                orient = "copy"
        # the fused epilogue C = act(A @ B + bias[n]) or + bias[m] (the user's N and M)
        self.activation: Optional[str] = None
        self._bias_sig: Any = None
        self._c_sig: Any = None
        self.alpha_beta = bool(alpha_beta or c is not None)
        self.bias_along, self.bias_dtype = bias_along, "f32"
        if bias is not None or activation is not None or self.alpha_beta:
            self.activation = activation or "none"
            if bias is not None:
                self.bias_dtype = _bias_dtype(cupy, bias, M, N, dev, bias_along, dt)
                self._bias_sig = (type(bias), bias.shape, bias.strides, bias.dtype, dev)
            if orient == "col":  # the kernel's N must be the user's N: a row-major temporary
                orient = "copy"
            if self.alpha_beta:
                odt = np.dtype(self.out_dtype)
                oit = odt.itemsize
                ok = (
                    isinstance(c, cupy.ndarray)
                    and c.shape == (M, N)
                    and c.dtype == odt
                    and c.strides[1] == oit
                    and c.strides[0] % oit == 0
                    and c.strides[0] // oit >= N
                    and c.data.device_id == dev
                )
                if not ok:
                    raise GemmInputError(
                        f"gemm: c (beta's input) must be a row-major (unit column stride) cupy array of "
                        f"shape ({M}, {N}) and the output's dtype {odt} on device {dev}"
                    )
                self._c_sig = (type(c), c.shape, c.strides, c.dtype, dev)
        self.orient = orient
        swap = orient == "col"
        m, n = (N, M) if swap else (M, N)
        self.m, self.n, self.k = m, n, K
        self.shape = (M, N)
        self._a_sig = (type(a), a.shape, a.strides, a.dtype, a.data.ptr % 16 == 0, dev)
        self._b_sig = (type(b), b.shape, b.strides, b.dtype, b.data.ptr % 16 == 0, dev)
        self._out_sig = None if out is None else (type(out), out.shape, out.strides, out.dtype, dev)
        self._order = "F" if swap else "C"
        # a new output's (shape, strides, dtype): what out=None allocates
        self._fresh_out = ((M, N), (it * N, it) if not swap else (it, it * M), np.dtype(self.out_dtype))
        itin = a.itemsize
        A = _Operand(b if swap else a, True if swap else False, m, K, ("m", "k"), itin)
        B = _Operand(a if swap else b, True if swap else False, K, n, ("k", "n"), itin)
        self._swap = swap
        self._A, self._B = A, B
        use90 = _use_wgmma(cupy, config, path)
        prob = GemmProblem(a_major=A.major, b_major=B.major, dtype=dt, out_dtype=od)
        if config is None:
            tma = tma_available()
            if use90 and not tma:
                warn_slow_path(
                    "tma",
                    "layoutproof.gpu.gemm: cuda-python (cuda.bindings.driver) is "
                    "not installed, so the Hopper kernel loads with cp.async "
                    "instead of TMA (slower); pip install 'layoutproof[gpu]'",
                )
            # a fused epilogue: the rule's split-K sums its planes in the kernel (serial) (G1)
            ep = self.activation is not None
            # path='auto' may take the mma.sync kernel: a plain decode product on Hopper takes the
            # unsplit 16-row tile where plan.mma_decode covers it (measured faster, G6)
            cfg = choose_config(
                m, n, K, prob, hopper=use90, tma=tma, sms=_sm_count(cupy), epilogue=ep, mma=path == "auto"
            )
        elif config == "auto":
            cfg = autotune(m, n, K, problem=prob, path="wgmma" if use90 else "mma.sync")
        elif isinstance(config, GemmConfig) or type(config).__name__ in (
            "Sm90Config",
            "SplitKConfig",
            "EpilogueConfig",
        ):
            cfg = config
        else:
            raise GemmInputError(
                f"gemm: config must be a GemmConfig, an Sm90Config, 'auto' or None, got {config!r}"
            )
        from ..kernels.splitk import SplitKConfig

        if self.activation is not None:
            from ..kernels.epilogue import EpilogueConfig

            base = cfg.base if isinstance(cfg, (SplitKConfig, EpilogueConfig)) else cfg
            if not (use90 and getattr(base, "schedule", "") == "ws" and tma_available()):
                raise GemmInputError(
                    "gemm: the fused bias/activation epilogue runs on the warp-specialized TMA "
                    "kernel (compute capability 9.0 with cuda-python; an Sm90Config with "
                    "loader='tma', schedule='ws')"
                )
            plain_bias = (self.bias_along, self.bias_dtype) == ("n", "f32")
            if isinstance(cfg, SplitKConfig) and cfg.reduction == "serial" and plain_bias:
                # split-K with the serial reduction: its reducer applies the epilogue (G1)
                from dataclasses import replace

                cfg = replace(cfg, activation=self.activation, alpha_beta=self.alpha_beta)
                cfg = cfg.validate()
            else:
                cfg = EpilogueConfig(
                    base, self.activation, self.alpha_beta, self.bias_along, self.bias_dtype
                ).validate()
        self.config, self.problem = cfg, prob

        splits = cfg.splits if isinstance(cfg, SplitKConfig) else 1
        self.splits = splits
        fix = None
        if splits > 1:
            if m > 65535 and cfg.reduction not in ("serial", "cluster"):
                raise GemmInputError(f"gemm: split-K's fix-up runs one grid row per C row: M={m} > 65535")
            if cfg.reduction == "cluster":
                from ..kernels.splitk import CLUSTER_ROWS

                if m > CLUSTER_ROWS:
                    raise GemmInputError(
                        f"gemm: the cluster split-K reduction holds {CLUSTER_ROWS} rows of a tile: "
                        f"the kernel's M={m}"
                    )
            kern, fix = splitk_kernels_for(cfg, prob)  # fix: None for the serial reduction
        else:
            kern = kernel_for(cfg, prob)
        rk = compile_kernel(kern)
        self.kernel = kern
        self._rk = rk
        self.tma = getattr(cfg, "loader", "") == "tma"
        ws = getattr(cfg, "schedule", "") == "ws"
        if self.tma:
            if not tma_available():
                raise GemmInputError(
                    "gemm: Sm90Config(loader='tma') needs cuda-python "
                    "(cuda.bindings.driver) to encode tensor maps; use "
                    "loader='cp.async' or install cuda-python"
                )
            A.prepare_tma(dt, K, m)
            B.prepare_tma(dt, K, n)
        ldc = N if orient != "col" else M
        if out is not None and orient != "copy":
            ldc = (out.strides[0] if orient == "row" else out.strides[1]) // it
        self._ldc = ldc
        # c_vec: vector stores when ldc and C's base allow them (ws: 16-byte row vectors)
        self._cvec_align = 16 if ws else 2 * it
        self._cvec_ld = (ldc * it) % 16 == 0 if ws else ldc % 2 == 0
        self._ws = None
        cluster_red = splits > 1 and cfg.reduction == "cluster"  # G4: no workspace, one unit per CTA
        if splits > 1 and not cluster_red:
            # split-K: the GEMM kernel stores f32 partials into S planes of m x n (row
            # stride n), the fix-up kernel sums them into C; the workspace is the plan's
            ws_buf = cupy.empty(splits * m * n, dtype=cupy.float32)
            self._ws = ws_buf
            self._cvec_ld = (n * 4) % 16 == 0
        grid = kern.grid(m, n)
        if cluster_red:  # one CTA per (tile, k chunk); clusters of `splits` CTAs (__cluster_dims__)
            grid = (-(-m // cfg.bm) * -(-n // cfg.bn) * splits, 1, 1)
        elif ws:  # persistent: at most one CTA per SM
            cl = cfg.cluster  # clusters of `cl` CTAs share a tile column
            grid_m, grid_n = -(-m // cfg.bm), -(-n // cfg.bn)
            units = -(-grid_m // cl) * grid_n * splits
            grid = (cl * max(1, min(units, _sm_count(cupy) // cl)), 1, 1)
        self.grid = tuple(int(g) for g in grid)
        self.threads = int(kern.threads)
        self.smem = int(kern.smem_bytes)
        if self.tma:
            kinds = ["tmap", "tmap", "ptr", "i32", "i32", "i32", "i64", "i32"]
            statics = {3: m, 4: n, 5: K, 6: ldc if splits == 1 or cluster_red else n}
            self._ic = 2
        else:
            kinds = ["ptr", "ptr", "ptr", "i32", "i32", "i32", "i64", "i64", "i64", "i32"]
            statics = {3: m, 4: n, 5: K, 6: A.ld, 7: B.ld, 8: ldc}
            self._ic = 2
        self._icv = len(kinds) - 1
        self._iout = -1
        if (
            splits > 1 and fix is None and not cluster_red
        ):  # serial split-K: the output D, its row stride, the counters
            kinds += ["ptr", "i64", "ptr"]
            self._iout = len(kinds) - 3
            statics[self._iout + 1] = ldc
            # one counter per (warpgroup, tile), zeroed once: each tile's reducer resets its own
            tiles_mn = -(-m // cfg.bm) * -(-n // cfg.bn)
            self._counters = cupy.zeros(cfg.base.warpgroups * tiles_mn, dtype=cupy.uint32)
            statics[self._iout + 2] = self._counters.data.ptr
        self._ibias = -1
        self._zero_bias = None
        if self.activation is not None:  # the bias pointer follows c_vec
            kinds.append("ptr")
            self._ibias = len(kinds) - 1
            if self._bias_sig is None:  # no bias: a zero bias, kept
                self._zero_bias = cupy.zeros(N if bias_along == "n" else M, dtype=cupy.float32)
            if self.alpha_beta:  # alpha, beta, the C input and its row stride
                kinds += ["f32", "f32", "ptr", "i64"]
        self._pb = ParamBuffer(kinds)
        for i, v in statics.items():
            self._pb.set(i, v)
        launch = getattr(getattr(cupy.cuda, "driver", None), "launchKernel", None)
        self._launch_kernel = launch
        self._fn = int(rk.kernel.ptr) if launch is not None else 0
        self._fix: Optional[Tuple[Any, Any, Tuple[int, int, int]]] = None
        self._pdl: Any = None  # the fix-up's programmatic dependent launch, where available
        self._pdl_split: Any = None  # the split kernel's (split-K with the fix-up kernel)
        self.fixup_shape: Any = None  # the fix-up kernel's CTA shape (splitk.FixupShape)
        if fix is not None:
            from ..kernels.splitk import FIXUP_DEFAULT, fixup_grid

            fshape = FIXUP_DEFAULT
            self.fixup_shape = fshape
            frk = compile_kernel(fix)
            fpb = ParamBuffer(["ptr", "ptr", "i32", "i32", "i64"])
            fpb.set(0, ws_buf.data.ptr)
            for i, v in ((2, m), (3, n), (4, ldc)):
                fpb.set(i, v)
            self._fix = (frk, fpb, fixup_grid(m, n, fshape))
            self._fix_threads = fshape.threads
            self._fix_fn = int(frk.kernel.ptr) if launch is not None else 0
            if launch is not None and os.environ.get("LAYOUTPROOF_PDL", "1") != "0":
                self._pdl = _pdl_launcher(self._fix_fn, self._fix[2], fshape.threads, fpb.address)
                # the split kernel too where measured faster (its first statement waits for the
                # previous grid: the last call's fix-up, which reads the workspace): its launch
                # and prologue overlap the previous kernel's tail (G1b)
                if splitk_pdl(m):
                    g3 = (self.grid[0], self.grid[1], self.grid[2])
                    self._pdl_split = _pdl_launcher(
                        self._fn, g3, self.threads, self._pb.address, smem=self.smem
                    )
        self._lock = threading.Lock()
        self._stage_lock = threading.Lock()
        self._info = dict(config=cfg, problem=prob, kernel=kern.name, m=m, n=n, k=K, plan=self)

    # ------------------------------------------------------------------ calls
    def __call__(
        self,
        a: Any,
        b: Any,
        out: Any = None,
        bias: Any = None,
        *,
        c: Any = None,
        alpha: float = 1.0,
        beta: float = 0.0,
    ) -> Any:
        """C = A @ B for operands like the ones the plan was made for (checked); ``out``
        like the plan's (None: a new array); ``bias`` like the plan's (a plan made with a
        bias needs one each call)."""
        if (bias is None) != (self._bias_sig is None):
            raise GemmInputError(
                "GemmPlan: the plan was made "
                + ("with a bias: pass one" if bias is None else "without a bias: make a plan with one")
            )
        if bias is not None:
            try:
                sig = (type(bias), bias.shape, bias.strides, bias.dtype, bias.data.device_id)
            except AttributeError:
                sig = None
            if sig != self._bias_sig:
                raise GemmInputError(
                    f"GemmPlan: bias {sig and sig[1:]} differs from the plan's {self._bias_sig[1:]}"
                )
        try:
            dev = self._a_sig[-1]
            sa = (type(a), a.shape, a.strides, a.dtype, a.data.ptr % 16 == 0, a.data.device_id)
            sb = (type(b), b.shape, b.strides, b.dtype, b.data.ptr % 16 == 0, b.data.device_id)
            so = None if out is None else (type(out), out.shape, out.strides, out.dtype, out.data.device_id)
        except AttributeError:
            raise GemmInputError(
                f"GemmPlan: a, b (and out) must be cupy arrays, got {type(a).__name__}, {type(b).__name__}"
            ) from None
        for nm, got, want in (("a", sa, self._a_sig), ("b", sb, self._b_sig)):
            if got != want:
                raise GemmInputError(
                    f"GemmPlan: {nm} (shape {got[1]}, strides {got[2]}, {got[3]}, 16-byte "
                    f"aligned {got[4]}, device {got[5]}) differs from the plan's (shape "
                    f"{want[1]}, strides {want[2]}, {want[3]}, 16-byte aligned {want[4]}, "
                    f"device {want[5]}): make a plan for it"
                )
        if so is not None and self._out_sig is not None and so != self._out_sig:
            raise GemmInputError(
                f"GemmPlan: out (shape {so[1]}, strides {so[2]}, {so[3]}) "
                f"differs from the plan's (shape {self._out_sig[1]}, strides "
                f"{self._out_sig[2]}, {self._out_sig[3]})"
            )
        if so is not None and self._out_sig is None:
            if so[1:4] != self._fresh_out or so[4] != dev:
                raise GemmInputError(
                    f"GemmPlan: the plan was made for a new {self._order}-order "
                    f"output; out (shape {so[1]}, strides {so[2]}, {so[3]}) "
                    f"is not one"
                )
        if (c is not None or beta != 0 or alpha != 1) and not self.alpha_beta:
            raise GemmInputError(
                "GemmPlan: the plan was made without alpha/beta and c: make a plan with them"
            )
        if self.alpha_beta:
            try:
                csig = (type(c), c.shape, c.strides, c.dtype, c.data.device_id)
            except AttributeError:
                csig = None
            if csig != self._c_sig:
                raise GemmInputError("GemmPlan: c differs from the plan's (shape, strides, dtype, device)")
        return self._run(a, b, out, bias, c, alpha, beta)

    def _run(
        self, a: Any, b: Any, out: Any, bias: Any = None, c: Any = None, alpha: float = 1.0, beta: float = 0.0
    ) -> Any:
        """The launch, for arguments already known to match the plan (on the copy path the
        staged copies and the launch that reads them are issued under one lock)."""
        if not (self._A.copy or self._B.copy):
            return self._launch(a, b, out, bias, c, alpha, beta)
        with self._stage_lock:
            return self._launch(a, b, out, bias, c, alpha, beta)

    def _launch(
        self, a: Any, b: Any, out: Any, bias: Any = None, c: Any = None, alpha: float = 1.0, beta: float = 0.0
    ) -> Any:
        cupy = self._cupy
        if out is None:
            out = cupy.empty(self.shape, self.out_dtype, order=self._order)
        target = out
        if self.orient == "copy":
            target = cupy.empty(self.shape, self.out_dtype)
        A, B = self._A, self._B
        xa, xb = (b, a) if self._swap else (a, b)
        keep = None
        if A.copy or B.copy:  # the slower path: copies into the operands' padded buffers
            st = cupy.cuda.get_current_stream()
            xa = A.staged(xa, st) if A.copy else xa
            xb = B.staged(xb, st) if B.copy else xb
            keep = (xa, xb)
        pa, pb_, pc = xa.data.ptr, xb.data.ptr, target.data.ptr
        pk = pc if self._ws is None else self._ws.data.ptr  # what the GEMM kernel stores into
        cvec = int(self._cvec_ld and pk % self._cvec_align == 0)
        pbuf = self._pb
        with self._lock:
            if self.tma:
                if pa != A.current:
                    pbuf.set(0, A.tensor_map(pa))
                    A.current = pa
                if pb_ != B.current:
                    pbuf.set(1, B.tensor_map(pb_))
                    B.current = pb_
            else:
                pbuf.set(0, pa)
                pbuf.set(1, pb_)
            pbuf.set(self._ic, pk)
            pbuf.set(self._icv, cvec)
            if self._iout >= 0:  # serial split-K: the reducer writes C
                pbuf.set(self._iout, pc)
            if self._ibias >= 0:
                bvec = bias if bias is not None else self._zero_bias
                if bvec is None:
                    raise GemmInputError("GemmPlan: the plan was made with a bias: pass one")
                pbuf.set(self._ibias, bvec.data.ptr)
                if self.alpha_beta:
                    if c is None:
                        raise GemmInputError("GemmPlan: the plan was made with alpha/beta: pass c")
                    pbuf.set(self._ibias + 1, float(alpha))
                    pbuf.set(self._ibias + 2, float(beta))
                    pbuf.set(self._ibias + 3, c.data.ptr)
                    pbuf.set(self._ibias + 4, c.strides[0] // c.itemsize)
            if self._pdl_split is not None and not self._pdl_split(cupy.cuda.get_current_stream().ptr):
                self._pdl_split = None  # refused (driver or bindings): stream order from now on
            if self._pdl_split is not None:
                pass  # split-K: launched as a programmatic dependent of the previous kernel
            elif self._launch_kernel is not None:
                g = self.grid
                self._launch_kernel(
                    self._fn,
                    g[0],
                    g[1],
                    g[2],
                    self.threads,
                    1,
                    1,
                    self.smem,
                    cupy.cuda.get_current_stream().ptr,
                    pbuf.address,
                    0,
                )
            else:
                tgt = target if self._ws is None else self._ws
                args = self._args(xa, xb, tgt, cvec)
                if self._iout >= 0:
                    import numpy as np

                    args += (target, np.int64(self._ldc), self._counters)
                if self._ibias >= 0:
                    args += (bias if bias is not None else self._zero_bias,)
                if self.alpha_beta:
                    import numpy as np

                    args += (np.float32(alpha), np.float32(beta), c, np.int64(c.strides[0] // c.itemsize))
                self._rk(self.grid, (self.threads, 1, 1), args, shared_mem=self.smem)
            if self._fix is not None:  # split-K: sum the partial planes into C (stream order)
                frk, fpb, fg = self._fix
                fpb.set(1, pc)
                sp = cupy.cuda.get_current_stream().ptr
                if self._pdl is not None and not self._pdl(sp):
                    self._pdl = None  # refused (driver or bindings): stream order from now on
                if self._pdl is not None:
                    pass  # launched as a programmatic dependent of the split kernel
                elif self._launch_kernel is not None:
                    self._launch_kernel(
                        self._fix_fn, fg[0], fg[1], fg[2], self._fix_threads, 1, 1, 0, sp, fpb.address, 0
                    )
                else:
                    import numpy as np

                    frk(
                        fg,
                        (self._fix_threads, 1, 1),
                        (self._ws, target, np.int32(self.m), np.int32(self.n), np.int64(self._ldc)),
                    )
        del keep
        if self.orient == "copy":
            out[...] = target
        last_launch.update(self._info)
        return out

    def _args(self, xa: Any, xb: Any, target: Any, cvec: int) -> Tuple[Any, ...]:
        """The argument tuple for CuPy's own launcher (where its driver module lacks
        ``launchKernel``)."""
        import numpy as np

        i32, i64 = np.int32, np.int64
        if self.tma:
            rec = np.dtype({"names": [f"w{i}" for i in range(16)], "formats": [np.uint64] * 16})
            ta = self._A.tensor_map(xa.data.ptr).view(np.uint64).view(rec)[0]
            tb = self._B.tensor_map(xb.data.ptr).view(np.uint64).view(rec)[0]
            ldc = self._ldc if self._ws is None else self.n
            return (ta, tb, target, i32(self.m), i32(self.n), i32(self.k), i64(ldc), i32(cvec))
        return (
            xa,
            xb,
            target,
            i32(self.m),
            i32(self.n),
            i32(self.k),
            i64(self._A.ld),
            i64(self._B.ld),
            i64(self._ldc),
            i32(cvec),
        )

    def __repr__(self) -> str:
        return (
            f"GemmPlan({self.shape[0]}x{self.shape[1]}x{self.k}, {self.config.key()}, "
            f"{self.problem.key()}, grid {self.grid}, {self.threads} threads)"
        )


def _pdl_launcher(fn: int, grid: Tuple[int, int, int], threads: int, params: int, smem: int = 0) -> Any:
    """A launcher of kernel ``fn`` (its parameter block at ``params``) as a programmatic
    dependent launch (``cuLaunchKernelEx`` with programmatic stream serialization): the
    kernel may start while the previous kernel of the stream runs, and its
    ``griddepcontrol.wait`` returns once that kernel has completed with its memory visible.
    Returns ``launch(stream) -> bool`` (False: the launch was refused, nothing ran), or None
    without cuda-python."""
    try:
        from cuda.bindings import driver

        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attr.value.programmaticStreamSerializationAllowed = 1
        cfg = driver.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = threads, 1, 1
        cfg.sharedMemBytes = smem
        cfg.attrs = [attr]
        cfg.numAttrs = 1
        func = driver.CUfunction(init_value=fn)
        ok = driver.CUresult.CUDA_SUCCESS
    except Exception:  # no cuda-python, or bindings without these types
        return None
    streams: Dict[int, Any] = {}

    def launch(stream: int) -> bool:
        st = streams.get(stream)
        if st is None:
            st = streams[stream] = driver.CUstream(init_value=stream)
        cfg.hStream = st
        try:
            (err,) = driver.cuLaunchKernelEx(cfg, func, params, 0)
        except Exception:
            return False
        return bool(err == ok)

    return launch


# ============================================================================ batched
def _batch_dims(a: Any, b: Any) -> Tuple[int, int, int]:
    """(batch, A's batch extent, B's batch extent) of a batched product, numpy-matmul
    broadcasting: a 2-D operand or a batch extent of 1 is shared by every batch."""
    for nm, x in (("a", a), ("b", b)):
        nd = getattr(x, "ndim", None)
        if nd not in (2, 3):
            raise GemmInputError(f"gemm: {nm} must be 2-D or 3-D (batch, rows, cols), got {nd}-D")
    ba = a.shape[0] if a.ndim == 3 else 1
    bb = b.shape[0] if b.ndim == 3 else 1
    if ba != bb and 1 not in (ba, bb):
        raise GemmInputError(
            f"gemm: batch extents differ: a is {a.shape}, b is {b.shape} (equal, or one of them 1 or 2-D)"
        )
    batch = max(ba, bb)
    if batch < 1:
        raise GemmInputError(f"gemm: empty batch: a is {a.shape}, b is {b.shape}")
    return batch, ba, bb


def _matrix(x: Any) -> Any:
    """The first matrix of a 2-D or 3-D operand (its per-matrix shape and strides)."""
    return x[0] if x.ndim == 3 else x


def _stage_operand(op: _Operand, x: Any, stream: Any, per_batch: bool) -> Any:
    """The padded buffer a batched plan's kernel reads for operand ``x`` (``per_batch``:
    all its batches; else its one shared matrix)."""
    if per_batch:
        return op.staged_batch(x, stream)
    return op.staged(x if x.ndim == 2 else x[0], stream)


class BatchedGemmPlan:
    """C[i] = A[i] @ B[i] for 3-D operands (batch, M, K) x (batch, K, N) -> (batch, M, N),
    numpy-matmul broadcasting (a 2-D operand, or one of batch extent 1, is shared by every
    batch); built by :func:`gemm` and :func:`gemm_plan` when an operand is 3-D.

    Paths, decided once per argument signature:

    * ``"fold"``: B shared and A's batches contiguous row-major matrices (batch stride
      ``M * lda``, ``lda == K``) with a new output: one 2-D product of ``(batch * M) x K``
      rows (the batched product *is* that product);
    * ``"kernel"``: one launch of the batched warp-specialized TMA kernel (compute
      capability 9.0 with cuda-python): the persistent CTAs walk ``tiles x batch``, A and B
      through rank-3 tensor maps (any batch stride that is a multiple of 16 bytes; a shared
      operand through a rank-2 map), C's matrices at ``bidx * ldcb``.  A bias (one vector
      of N, the same for every batch) and the activation are fused as in the 2-D kernel,
      and so is ``alpha * A @ B + beta * c``: batch ``i`` reads its C input at
      ``c + i * ldcib`` (``c`` of shape (batch, M, N) with any batch stride that is a
      whole number of elements, 0 included, or a shared (M, N) / (1, M, N) array);
    * ``"loop"``: anything else (a batch stride the TMA cannot take, an operand that needs a
      padded copy, an output with other strides, the mma.sync path): one 2-D :func:`gemm`
      per batch, each with its own cached plan -- correct, not one launch.

    ``c`` (beta's input) is of the output's dtype with rows of unit column stride, like
    :func:`gemm`'s; it may be the output itself.

    Raises:
        GemmInputError: as :func:`gemm`; calling a plan with arrays of another signature.
    """

    def __init__(
        self,
        a: Any,
        b: Any,
        out: Any = None,
        *,
        config: Any = None,
        out_dtype: Optional[str] = None,
        dtype: Optional[str] = None,
        path: str = "auto",
        bias: Any = None,
        activation: Optional[str] = None,
        c: Any = None,
        alpha_beta: bool = False,
        bias_along: str = "n",
    ) -> None:
        import numpy as np

        batch, ba, bb = _batch_dims(a, b)
        a0, b0 = _matrix(a), _matrix(b)
        dt, cupy = _check(a0, b0, dtype)
        self._cupy = cupy
        M, K = a0.shape
        N = b0.shape[1]
        self.batch, self.shape = batch, (batch, M, N)
        self.m, self.n, self.k = M, N, K
        self._opts = dict(
            config=config,
            out_dtype=out_dtype,
            dtype=dtype,
            path=path,
            activation=activation,
            bias_along=bias_along,
        )
        self.alpha_beta = bool(alpha_beta or c is not None)
        od = out_dtype
        if out is not None:
            if not isinstance(out, cupy.ndarray) or out.shape != (batch, M, N):
                raise GemmInputError(
                    f"gemm: out must be a cupy array of shape {(batch, M, N)}, got "
                    f"{getattr(out, 'shape', type(out).__name__)}"
                )
            od = od or {"float16": "f16", "float32": "f32", "bfloat16": "bf16"}.get(str(out.dtype)) or dt
        od = od or dt
        if od not in ("f16", "bf16", "f32"):
            raise GemmInputError(f"gemm: out_dtype={od!r} must be 'f16', 'bf16' or 'f32'")
        self.out_dtype = _out_dtype(cupy, od, a)
        it = np.dtype(self.out_dtype).itemsize
        if out is not None and np.dtype(out.dtype).itemsize != it:
            raise GemmInputError(
                f"gemm: out has dtype {out.dtype} but out_dtype={od!r} stores {it}-byte elements"
            )
        self._ldci, self._ldcib = 0, 0
        if c is not None:
            self._ldci, self._ldcib = self._c_input(c, batch, M, N, it)
        elif self.alpha_beta:
            raise GemmInputError("gemm: alpha/beta need the C input c")
        self._sig = self._signature(a, b, out, bias, c)
        itin = a.itemsize
        # the output's matrices: row-major with unit column stride, batches disjoint
        if out is None:
            ldc, ldcb, out_ok = N, M * N, True
        else:
            s0, s1, s2 = out.strides
            out_ok = s2 == it and s1 % it == 0 and s0 % it == 0 and s1 // it >= N and s0 >= 0
            ldc, ldcb = s1 // it, s0 // it
            out_ok = out_ok and (batch == 1 or ldcb >= (M - 1) * ldc + N)
        self._ldc, self._ldcb = ldc, ldcb
        self.mode = "loop"
        self._loop_ops = (ba, bb)
        from ..kernels.wgmma import batched_kernels_available

        use90 = _use_wgmma(cupy, config, path) and tma_available() and batched_kernels_available()
        # an operand's batch stride (elements), or None where every batch reads one matrix
        # (2-D, batch extent 1, or batch stride 0: numpy broadcasting)
        a_st = a.strides[0] // itin if (a.ndim == 3 and ba > 1 and a.strides[0] != 0) else None
        b_st = b.strides[0] // itin if (b.ndim == 3 and bb > 1 and b.strides[0] != 0) else None
        # "fold": A's batches are the rows of one (batch * M) x K row-major matrix
        if (
            (bb == 1 or (b.ndim == 3 and b.strides[0] == 0))
            and ba == batch
            and out is None
            and not self.alpha_beta
            and a.ndim == 3
            and a.strides[2] == itin
            and a.strides[1] == K * itin
            and a.strides[0] == M * K * itin
            and (bias is None or bias_along == "n")
            and (config is None or config == "auto" or not isinstance(config, str))
        ):
            self.mode = "fold"
        elif use90 and out_ok and (config is None or type(config).__name__ == "Sm90Config"):
            batched = ("a" if a_st is not None else "") + ("b" if b_st is not None else "")
            if batched and self._kernel_setup(
                a, b, a0, b0, dt, od, it, batched, a_st, b_st, config, bias, activation, bias_along
            ):
                self.mode = "kernel"
        self._info = dict(mode=self.mode, batch=batch, m=M, n=N, k=K, plan=self)
        if self.mode == "kernel":
            self._info.update(config=self.config, problem=self.problem, kernel=self.kernel.name)

    def _c_input(self, c: Any, batch: int, M: int, N: int, it: int) -> Tuple[int, int]:
        """(row stride, batch stride) in elements of the C input ``c``: (batch, M, N) or a
        shared (M, N) / (1, M, N) array (batch stride 0), of the output's dtype, on the
        current device, rows of unit column stride (any batch stride: the kernel only reads
        it)."""
        import numpy as np

        cupy = self._cupy
        odt = np.dtype(self.out_dtype)
        shapes = ((batch, M, N), (1, M, N), (M, N))
        ok = isinstance(c, cupy.ndarray) and c.shape in shapes and np.dtype(c.dtype) == odt
        if ok:
            s = c.strides
            ok = (
                s[-1] == it
                and s[-2] % it == 0
                and s[-2] // it >= N
                and (c.ndim == 2 or s[0] % it == 0)
                and c.data.device_id == cupy.cuda.runtime.getDevice()
            )
        if not ok:
            raise GemmInputError(
                f"gemm: c (beta's input) must be a cupy array of shape {(batch, M, N)}, {(1, M, N)} or "
                f"{(M, N)} and the output's dtype {odt}, rows of unit column stride, on the current "
                f"device; got {getattr(c, 'shape', type(c).__name__)}"
            )
        shared = c.ndim == 2 or c.shape[0] == 1
        return c.strides[-2] // it, 0 if shared else c.strides[0] // it

    def _c_batch(self, c: Any, i: int) -> Any:
        """Batch ``i``'s C input (the loop path)."""
        return c if c.ndim == 2 else c[i if c.shape[0] > 1 else 0]

    # ------------------------------------------------------------------ the batched kernel
    def _kernel_setup(
        self,
        a: Any,
        b: Any,
        a0: Any,
        b0: Any,
        dt: str,
        od: str,
        it: int,
        batched: str,
        a_st: Optional[int],
        b_st: Optional[int],
        config: Any,
        bias: Any,
        activation: Optional[str],
        bias_along: str,
    ) -> bool:
        """Build the one-launch kernel's launch; False where it cannot take these operands
        (the plan then runs one product per batch)."""
        cupy = self._cupy
        M, N, K, batch = self.m, self.n, self.k, self.batch
        itin = a0.itemsize
        A = _Operand(a0, False, M, K, ("m", "k"), itin)
        B = _Operand(b0, False, K, N, ("k", "n"), itin)
        # an operand that breaks the 16-byte contract is staged into a padded buffer of the
        # plan (all its batches: batch stride = rows of the buffer x padded ld); another
        # operand's batches must start 16-byte aligned (the rank-3 map's stride)
        sts: List[Optional[int]] = []
        for x, op, st, rows, cols in ((a, A, a_st, M, K), (b, B, b_st, K, N)):
            if st is not None and op.copy:
                if x.strides[0] < 0:
                    return False
                st = (rows if op.cols_major else cols) * op.ld
            elif st is not None and (
                st * itin % 16 or x.strides[0] < 0 or st < (rows if op.cols_major else cols) * op.ld
            ):
                return False  # a rank-3 map needs 16-byte batch strides, batches not overlapping
            sts.append(st)
        a_st, b_st = sts
        self._stage = (A.copy, B.copy)
        self._per_batch = (a_st is not None, b_st is not None)
        from ..kernels.wgmma import Sm90Config

        prob = GemmProblem(a_major=A.major, b_major=B.major, dtype=dt, out_dtype=od, batch=batched)
        if config is None:
            ws = tuple(c for c in hopper_candidates(True) if getattr(c, "schedule", "") == "ws")
            cfg: Any = choose_config(
                M * batch, N, K, prob, hopper=True, tma=True, sms=_sm_count(cupy), candidates=ws
            )
        else:
            cfg = config
            if not (isinstance(cfg, Sm90Config) and cfg.schedule == "ws" and cfg.loader == "tma"):
                return False
        dev = cupy.cuda.runtime.getDevice()
        self._bias_sig = None
        self.activation = None
        if bias is not None or activation is not None or self.alpha_beta:
            from ..kernels.epilogue import EpilogueConfig

            self.activation = activation or "none"
            bdt = "f32" if bias is None else _bias_dtype(cupy, bias, M, N, dev, bias_along, dt)
            cfg = EpilogueConfig(cfg, self.activation, self.alpha_beta, bias_along, bdt).validate()
        if -(-M // cfg.bm) * -(-N // cfg.bn) * batch >= 2**31:
            raise GemmInputError(f"gemm: {batch} batches of {M}x{N} have 2**31 tiles or more")
        kern = kernel_for(cfg, prob)
        self._rk = compile_kernel(kern)
        self.kernel, self.config, self.problem = kern, cfg, prob
        A.prepare_tma(dt, K, M, None if a_st is None else (batch, a_st))
        B.prepare_tma(dt, K, N, None if b_st is None else (batch, b_st))
        self._A, self._B = A, B
        grid_m = -(-M // cfg.bm)
        units = -(-grid_m // cfg.cluster) * -(-N // cfg.bn) * batch
        self.grid = (cfg.cluster * max(1, min(units, _sm_count(cupy) // cfg.cluster)), 1, 1)
        self.threads, self.smem = int(kern.threads), int(kern.smem_bytes)
        kinds = ["tmap", "tmap", "ptr", "i32", "i32", "i32", "i64", "i32", "i32", "i64"]
        statics = {3: M, 4: N, 5: K, 6: self._ldc, 8: batch, 9: self._ldcb}
        if self.activation is not None:
            kinds.append("ptr")  # the bias (10)
        if self.alpha_beta:  # alpha (11), beta (12), the C input (13), its row and batch strides
            kinds += ["f32", "f32", "ptr", "i64", "i64"]
            statics.update({14: self._ldci, 15: self._ldcib})
        self._pb = ParamBuffer(kinds)
        for i, v in statics.items():
            self._pb.set(i, v)
        self._cvec_ok = (self._ldc * it) % 16 == 0 and (self._ldcb * it) % 16 == 0
        nb = N if bias_along == "n" else M
        self._zero_bias = cupy.zeros(nb, dtype=cupy.float32) if (self.activation and bias is None) else None
        launch = getattr(getattr(cupy.cuda, "driver", None), "launchKernel", None)
        self._launch_kernel = launch
        self._fn = int(self._rk.kernel.ptr) if launch is not None else 0
        import threading

        self._lock = threading.Lock()
        return True

    # ------------------------------------------------------------------ calls
    @staticmethod
    def _signature(a: Any, b: Any, out: Any, bias: Any, c: Any) -> Any:
        def sig(x: Any, align: bool = False) -> Any:
            if x is None:
                return None
            s = (type(x), x.shape, x.strides, x.dtype, x.data.device_id)
            return s + (x.data.ptr % 16 == 0,) if align else s

        return (sig(a, True), sig(b, True), sig(out), sig(bias), sig(c))

    def __call__(
        self,
        a: Any,
        b: Any,
        out: Any = None,
        bias: Any = None,
        *,
        c: Any = None,
        alpha: float = 1.0,
        beta: float = 0.0,
    ) -> Any:
        """The batched product for arguments like the plan's (checked)."""
        if (c is not None or alpha != 1 or beta != 0) and not self.alpha_beta:
            raise GemmInputError(
                "BatchedGemmPlan: the plan was made without alpha/beta and c: make a plan with them"
            )
        if self.alpha_beta and c is None:
            raise GemmInputError("BatchedGemmPlan: the plan was made with alpha/beta: pass c")
        try:
            sig = self._signature(a, b, out, bias, c)
        except AttributeError:
            raise GemmInputError("BatchedGemmPlan: a, b (out, bias, c) must be cupy arrays") from None
        mine = self._sig
        if (
            sig[:2] != mine[:2]
            or sig[3:] != mine[3:]
            or (sig[2] is not None and mine[2] is not None and sig[2] != mine[2])
        ):
            raise GemmInputError(
                "BatchedGemmPlan: the arguments differ from the plan's (shape, strides, dtype, "
                "device): make a plan for them"
            )
        if sig[2] is not None and mine[2] is None:  # out like the new array the plan makes
            import numpy as np

            it = np.dtype(self.out_dtype).itemsize
            fresh = (self.shape, (self.m * self.n * it, self.n * it, it), np.dtype(self.out_dtype))
            if (out.shape, out.strides, np.dtype(out.dtype)) != fresh:
                raise GemmInputError(
                    "BatchedGemmPlan: the plan was made for a new output; out is not one like it"
                )
        return self._run(a, b, out, bias, c, alpha, beta)

    def _run(
        self, a: Any, b: Any, out: Any, bias: Any = None, c: Any = None, alpha: float = 1.0, beta: float = 0.0
    ) -> Any:
        cupy = self._cupy
        if self.mode == "fold":
            o = gemm(
                a.reshape(self.batch * self.m, self.k), b if b.ndim == 2 else b[0], bias=bias, **self._opts
            )
            last_launch.update(self._info)
            return o.reshape(self.shape)
        if out is None:
            out = cupy.empty(self.shape, self.out_dtype)
        if self.mode == "loop":
            ba, bb = self._loop_ops
            for i in range(self.batch):
                ai = (a[i] if ba > 1 else a[0]) if a.ndim == 3 else a
                bi = (b[i] if bb > 1 else b[0]) if b.ndim == 3 else b
                kw: Dict[str, Any] = dict(self._opts)
                if c is not None or alpha != 1 or beta != 0:
                    if c is None:
                        raise GemmInputError("BatchedGemmPlan: alpha/beta need the C input c")
                    kw.update(c=self._c_batch(c, i), alpha=alpha, beta=beta)
                gemm(ai, bi, out[i], bias=bias, **kw)
            last_launch.update(self._info)
            return out
        A, B = self._A, self._B
        pc = out.data.ptr
        pbuf = self._pb
        with self._lock:
            if self._stage[0] or self._stage[1]:  # copies into the kept padded buffers
                st = cupy.cuda.get_current_stream()
                a = _stage_operand(A, a, st, self._per_batch[0]) if self._stage[0] else a
                b = _stage_operand(B, b, st, self._per_batch[1]) if self._stage[1] else b
            pa, pb_ = a.data.ptr, b.data.ptr
            if pa != A.current:
                pbuf.set(0, A.tensor_map(pa))
                A.current = pa
            if pb_ != B.current:
                pbuf.set(1, B.tensor_map(pb_))
                B.current = pb_
            pbuf.set(2, pc)
            pbuf.set(7, int(self._cvec_ok and pc % 16 == 0))
            if self.activation is not None:
                bvec = bias if bias is not None else self._zero_bias
                if bvec is None:
                    raise GemmInputError("BatchedGemmPlan: the plan was made with a bias: pass one")
                pbuf.set(10, bvec.data.ptr)
            if self.alpha_beta:
                if c is None:
                    raise GemmInputError("BatchedGemmPlan: the plan was made with alpha/beta: pass c")
                pbuf.set(11, float(alpha))
                pbuf.set(12, float(beta))
                pbuf.set(13, c.data.ptr)
            g = self.grid
            if self._launch_kernel is not None:
                self._launch_kernel(
                    self._fn,
                    g[0],
                    g[1],
                    g[2],
                    self.threads,
                    1,
                    1,
                    self.smem,
                    cupy.cuda.get_current_stream().ptr,
                    pbuf.address,
                    0,
                )
            else:
                import numpy as np

                rec = np.dtype({"names": [f"w{i}" for i in range(16)], "formats": [np.uint64] * 16})
                ta = A.tensor_map(pa).view(np.uint64).view(rec)[0]
                tb = B.tensor_map(pb_).view(np.uint64).view(rec)[0]
                i32, i64 = np.int32, np.int64
                args: Tuple[Any, ...] = (
                    ta,
                    tb,
                    out,
                    i32(self.m),
                    i32(self.n),
                    i32(self.k),
                    i64(self._ldc),
                    i32(int(self._cvec_ok and pc % 16 == 0)),
                    i32(self.batch),
                    i64(self._ldcb),
                )
                if self.activation is not None:
                    args += (bias if bias is not None else self._zero_bias,)
                if self.alpha_beta:
                    args += (np.float32(alpha), np.float32(beta), c, i64(self._ldci), i64(self._ldcib))
                self._rk(g, (self.threads, 1, 1), args, shared_mem=self.smem)
        last_launch.update(self._info)
        return out

    def __repr__(self) -> str:
        cfg = getattr(self, "config", None)
        return f"BatchedGemmPlan({self.batch} x {self.m}x{self.n}x{self.k}, {self.mode}" + (
            f", {cfg.key()})" if cfg is not None else ")"
        )


_PLANS: Dict[Any, Any] = {}  # -> GemmPlan or BatchedGemmPlan
_PLAN_CAP = 1024


def gemm_plan(
    a: Any,
    b: Any,
    out: Any = None,
    *,
    config: Any = None,
    out_dtype: Optional[str] = None,
    dtype: Optional[str] = None,
    path: str = "auto",
    bias: Any = None,
    activation: Optional[str] = None,
    bias_along: str = "n",
    c: Any = None,
) -> "GemmPlan | BatchedGemmPlan":
    """A :class:`GemmPlan` for operands like ``a`` and ``b`` (and ``out``, ``bias``, ``c``):
    validated, compiled and packed once; call it as ``plan(a, b)``, ``plan(a, b, out)`` or
    ``plan(a, b, out, bias)`` (with ``c``: ``plan(a, b, out, bias, c=c, alpha=..., beta=...)``,
    ``c`` like the plan's).  For a 3-D operand: a :class:`BatchedGemmPlan`.

    Arguments as :func:`gemm`, which keeps such plans itself (keyed by the arguments'
    shapes, strides, dtypes, alignment, device and options)."""
    ab = c is not None
    if getattr(a, "ndim", 2) == 3 or getattr(b, "ndim", 2) == 3:
        return BatchedGemmPlan(
            a,
            b,
            out,
            config=config,
            out_dtype=out_dtype,
            dtype=dtype,
            path=path,
            bias=bias,
            activation=activation,
            bias_along=bias_along,
            c=c,
            alpha_beta=ab,
        )
    return GemmPlan(
        a,
        b,
        out,
        config=config,
        out_dtype=out_dtype,
        dtype=dtype,
        path=path,
        bias=bias,
        activation=activation,
        bias_along=bias_along,
        c=c,
        alpha_beta=ab,
    )


def _plan_key(a: Any, b: Any, out: Any, config: Any, out_dtype: Any, dtype: Any, path: Any, dev: int) -> Any:
    ad, bd = a.data, b.data
    ko = (
        None
        if out is None
        else (type(out), out.shape, out.strides, out.dtype, out.data.ptr % 16 == 0, out.data.device_id)
    )
    return (
        type(a),
        a.shape,
        a.strides,
        a.dtype,
        ad.ptr % 16 == 0,
        ad.device_id,
        type(b),
        b.shape,
        b.strides,
        b.dtype,
        bd.ptr % 16 == 0,
        bd.device_id,
        ko,
        config,
        out_dtype,
        dtype,
        path,
        dev,
    )


# ============================================================================ gemm
def _gemm_batched(
    a: Any,
    b: Any,
    out: Any,
    config: Any,
    out_dtype: Optional[str],
    dtype: Optional[str],
    path: str,
    bias: Any,
    activation: Optional[str],
    alpha: float,
    beta: float,
    c: Any,
    ab: bool,
    bias_along: str = "n",
) -> Any:
    """:func:`gemm` for 3-D operands: a cached :class:`BatchedGemmPlan` per signature."""
    key: Any = None
    plan = None
    try:
        key = (
            "batched",
            BatchedGemmPlan._signature(a, b, out, bias, c),
            config,
            out_dtype,
            dtype,
            path,
            activation,
            ab,
            bias_along,
        )
        key = key + ((_CUPY[0].cuda.runtime.getDevice(),) if _CUPY else (None,))
        plan = _PLANS.get(key)
    except Exception:  # not arrays, or an unhashable option: the plan's checks say
        key = plan = None
    if plan is None:
        plan = BatchedGemmPlan(
            a,
            b,
            out,
            config=config,
            out_dtype=out_dtype,
            dtype=dtype,
            path=path,
            bias=bias,
            activation=activation,
            c=c,
            alpha_beta=ab,
            bias_along=bias_along,
        )
        if key is not None and key[-1] is None:
            key = key[:-1] + (plan._cupy.cuda.runtime.getDevice(),)
        if key is not None:
            if len(_PLANS) >= _PLAN_CAP:
                _PLANS.pop(next(iter(_PLANS)))
            _PLANS[key] = plan
    return plan._run(a, b, out, bias, c, alpha, beta)


def gemm(
    a: Any,
    b: Any,
    out: Any = None,
    *,
    config: Any = None,
    out_dtype: Optional[str] = None,
    dtype: Optional[str] = None,
    path: str = "auto",
    bias: Any = None,
    activation: Optional[str] = None,
    alpha: float = 1.0,
    beta: float = 0.0,
    c: Any = None,
    bias_along: str = "n",
) -> Any:
    """C = A @ B on the GPU with a proven tensor-core kernel (f32 accumulation): the wgmma
    kernel (:mod:`~layoutproof.gpu.kernels.wgmma`) on sm_90, the mma.sync kernel
    (:mod:`~layoutproof.gpu.kernels.mma_sync`) elsewhere or when asked for.

    The first call for a new argument signature builds a :class:`GemmPlan` (checks, kernel
    choice, generation and proofs or the disk cache, compilation); later calls with the same
    shapes, strides, dtypes, alignment and options reuse it and cost one parameter update and
    one launch.

    Args:
        a: (M, K) cupy array, float16 or bfloat16, any strides.
        b: (K, N) cupy array of the same dtype.
        out: optional (M, N) result array (row- or column-major), of ``out_dtype``.
        config: a :class:`GemmConfig` or ``Sm90Config``, ``"auto"`` (the autotuner's choice
            for this shape, tuned on first use and kept on disk) or None (the default: the
            :func:`~layoutproof.gpu.host.rule.choose_config` rule, nothing timed).
        out_dtype: ``"f16"``, ``"bf16"`` or ``"f32"``; default: the input dtype (or out's).
        dtype: reinterpret 2-byte arrays as this dtype (``"bf16"`` where CuPy has no
            bfloat16 dtype: pass the raw bits as uint16).
        path: ``"auto"`` (wgmma on compute capability 9.0, else mma.sync), ``"wgmma"`` or
            ``"mma.sync"``; a GemmConfig selects mma.sync, an Sm90Config wgmma.
        bias: optional vector of N elements (float32, float16 or bfloat16; M elements with
            ``bias_along="m"``): ``C = act(A @ B + bias)``, fused in the warp-specialized
            TMA kernel (``layoutproof.gpu.kernels.epilogue``; sm_90 with cuda-python), converted to
            and added in f32 before the output conversion.  Batched: one vector for every
            batch.
        activation: ``"relu"``, ``"silu"``, ``"gelu"`` (erf form) or ``"none"``, fused the
            same way (with or without a bias).
        alpha: the scale of the product in ``C = act(alpha * A @ B + beta * c + bias)``,
            fused the same way.
        beta: the scale of ``c`` in that sum.
        c: an (M, N) row-major array of the output's dtype, added as ``beta * c`` (it may be
            the output array itself).  Batched: (batch, M, N) with any batch stride, or one
            (M, N) / (1, M, N) array shared by every batch; fused in the one launch.
        bias_along: ``"n"`` (the default: ``bias[n]`` added to column n) or ``"m"``
            (``bias[m]`` added to row m).

    3-D operands (batch, M, K) and (batch, K, N) give (batch, M, N) (numpy ``matmul``
    broadcasting: a 2-D operand or a batch extent of 1 is shared): see
    :class:`BatchedGemmPlan`.

    Raises:
        GemmInputError: wrong dtype, shape, device or layout; NoGPUError without CuPy/GPU.
    """
    plan = None
    key = None

    ab = c is not None or beta != 0 or alpha != 1
    if ab and c is None:
        raise GemmInputError(
            "gemm: beta != 0 or alpha != 1 needs the C input c (pass beta=0 with c for alpha alone)"
        )
    if getattr(a, "ndim", 2) == 3 or getattr(b, "ndim", 2) == 3:
        return _gemm_batched(
            a, b, out, config, out_dtype, dtype, path, bias, activation, alpha, beta, c, ab, bias_along
        )

    def epi_key() -> Any:
        if bias is None and activation is None and not ab:
            return None
        bs = None if bias is None else (type(bias), bias.shape, bias.strides, bias.dtype, bias.data.device_id)
        cs = None if c is None else (type(c), c.shape, c.strides, c.dtype, c.data.device_id)
        return (activation, bs, cs, bias_along)

    if _CUPY:
        try:
            key = _plan_key(a, b, out, config, out_dtype, dtype, path, _CUPY[0].cuda.runtime.getDevice())
            key = key + (epi_key(),)
            plan = _PLANS.get(key)
        except Exception:  # not arrays, or an unhashable option: the full checks below say
            key = plan = None
    if plan is None:
        plan = GemmPlan(
            a,
            b,
            out,
            config=config,
            out_dtype=out_dtype,
            dtype=dtype,
            path=path,
            bias=bias,
            activation=activation,
            c=c,
            alpha_beta=ab,
            bias_along=bias_along,
        )
        if key is None:
            try:
                key = _plan_key(
                    a, b, out, config, out_dtype, dtype, path, plan._cupy.cuda.runtime.getDevice()
                ) + (epi_key(),)
            except Exception:
                key = None
        if key is not None:
            if len(_PLANS) >= _PLAN_CAP:
                _PLANS.pop(next(iter(_PLANS)))
            try:
                _PLANS[key] = plan
            except TypeError:
                pass
    return plan._run(a, b, out, bias, c, alpha, beta)


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


def config_entry(cfg: Any) -> Dict[str, Any]:
    """The JSON form of a configuration in ``autotune.json`` (its fields and its kind)."""
    from dataclasses import asdict

    kind = type(cfg).__name__
    kinds = {"GemmConfig": "sm80", "Sm90Config": "sm90", "SplitKConfig": "splitk"}
    if kind not in kinds:
        raise GemmInputError(f"autotune: cannot store a {kind}")
    return dict(asdict(cfg), kind=kinds[kind])


def config_from_entry(entry: Any) -> Optional[Any]:
    """The configuration an ``autotune.json`` entry describes, or None for an entry this
    version cannot read (then the shape is tuned again)."""
    from ..kernels.splitk import SplitKConfig
    from ..kernels.wgmma import Sm90Config

    try:
        d = dict(entry)
        kind = d.pop("kind", "sm80")
        if isinstance(d.get("swizzle"), list):
            d["swizzle"] = tuple(d["swizzle"])
        if kind == "splitk":
            return SplitKConfig(Sm90Config(**d["base"]), int(d["splits"]), str(d.get("reduction", "kernel")))
        if kind == "sm90":
            return Sm90Config(**d)
        if kind == "sm80":
            return GemmConfig(**d)
    except (TypeError, ValueError, KeyError):  # written by another version
        return None
    return None


def autotune(
    m: int,
    n: int,
    k: int,
    *,
    problem: Optional[GemmProblem] = None,
    configs: Optional[Sequence[Any]] = None,
    reps: int = 10,
    verbose: bool = False,
    path: str = "mma.sync",
) -> Any:
    """The fastest config for this shape (rounded up to powers of two) and variant, timed
    on the current device with fresh random operands; remembered in memory and on disk.
    ``path="wgmma"`` tunes the Hopper kernel's :class:`Sm90Config` candidates and, with
    TMA, the split-K variants the rule could pick for this shape."""
    cupy = _cupy()
    prob = problem or GemmProblem()
    if configs is None:
        configs = _sm90_configs() if path == "wgmma" else DEFAULT_CONFIGS
        if path == "wgmma" and tma_available():  # the split-K variants for this shape too
            configs = tuple(configs) + splitk_candidates(m, n, k, hopper_candidates(True), _sm_count(cupy))
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
        cfg = config_from_entry(table[skey])
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
    best: Optional[Tuple[float, Any]] = None
    results: List[Tuple[float, Any]] = []
    for cfg in configs:
        try:
            t = _time_kernel(lambda c=cfg: gemm(a, b, config=c, dtype=prob.dtype, out_dtype=prob.out), reps)
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
    table[skey] = config_entry(best[1])
    try:
        tpath.parent.mkdir(parents=True, exist_ok=True)
        tpath.write_text(json.dumps(table, indent=1))
    except OSError:
        pass
    return best[1]
