"""The kernel caches of the host path: generated kernels (source + proof log) in memory and
on disk, keyed by the generator's own source hash, the configuration and the variant; and
compiled modules (CuPy ``RawKernel``) in memory by source hash and device (CuPy keeps its
own on-disk cache, keyed by the source).

The disk cache lives in ``$LAYOUTPROOF_CACHE`` or ``~/.cache/layoutproof``; a cached kernel
is reused only while the code that proved it (``isa/``, ``proof/``, ``kernels/`` and
``config.py``) is unchanged.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from ..config import GemmConfig, GemmProblem
from ..errors import GemmConfigError
from ..kernels.epilogue import EpilogueConfig, generate_epilogue
from ..kernels.mma_epilogue import MmaEpilogueConfig, generate_mma_epilogue
from ..kernels.mma_sync import generate
from ..kernels.splitk import FixupEpilogueConfig, SplitKConfig, generate_fixup, generate_splitk
from ..kernels.splitk_cluster import generate_cluster
from ..kernels.tiny import TinyConfig
from ..kernels.tiny import generate as generate_tiny
from ..kernels.toolkit import GemmKernel
from ..kernels.wgmma import Sm90Config, generate_sm90
from ..kernels.wgmma_pingpong import PingpongEpilogueConfig, generate_pingpong, generate_pingpong_epilogue
from ..proof.record import Proof, ProofLog
from . import device
from .device import cache_dir

__all__ = ["cache_dir", "kernel_for", "splitk_kernels_for", "kernels_for", "compile_kernel"]

_KERNELS: Dict[Tuple[Any, GemmProblem], Any] = {}  # -> GemmKernel
_SPLITK: Dict[Tuple[Any, GemmProblem], Tuple[Any, Any]] = {}  # -> (gemm, fix-up) kernels
_MODULES: Dict[Tuple[str, int], Any] = {}  # (source hash, device) -> RawKernel


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
        entry = {
            "source": k.source,
            "name": k.name,
            "threads": k.threads,
            "smem_bytes": k.smem_bytes,
            "swizzles": k.swizzles,
            "proofs": [p.__dict__ for p in k.proofs],
        }
        tmp.write_text(json.dumps(entry))
        tmp.replace(path)
    except OSError:
        pass


def _generate(config: Any, problem: GemmProblem) -> Any:
    """The generator for this kind of configuration (each proves before it emits)."""
    if isinstance(config, GemmConfig):
        return generate(config, problem)
    if isinstance(config, MmaEpilogueConfig):
        return generate_mma_epilogue(config, problem)
    if isinstance(config, PingpongEpilogueConfig):
        return generate_pingpong_epilogue(config, problem)
    if isinstance(config, EpilogueConfig):
        return generate_epilogue(config, problem)
    if isinstance(config, TinyConfig):
        return generate_tiny(config, problem)
    if isinstance(config, Sm90Config) and config.schedule == "pingpong":
        return generate_pingpong(config, problem)
    return generate_sm90(config, problem)


def kernel_for(config: Any, problem: GemmProblem, *, disk: bool = True) -> Any:
    """The generated, proven kernel for (config, problem): memory cache, then disk cache,
    then :func:`~layoutproof.gpu.kernels.mma_sync.generate` (``generate_sm90`` for an ``Sm90Config``,
    :func:`~layoutproof.gpu.kernels.tiny.generate` for a ``TinyConfig``).
    For a :class:`~layoutproof.gpu.kernels.splitk.SplitKConfig` this is the split GEMM kernel (f32
    partials); :func:`splitk_kernels_for` gives it with its fix-up kernel."""
    if isinstance(config, SplitKConfig):
        return splitk_kernels_for(config, problem, disk=disk)[0]
    key = (config, problem)
    k = _KERNELS.get(key)
    if k is not None:
        return k
    if problem.batch and not isinstance(config, (Sm90Config, EpilogueConfig)):
        raise GemmConfigError(
            "kernel_for: a batched problem runs on the warp-specialized TMA kernel, "
            f"not a {type(config).__name__}"
        )
    path = _kernel_path(config.key(), problem)
    if disk:
        k = _load_kernel(path, config, problem)
        if k is not None:
            _KERNELS[key] = k
            return k
    k = _KERNELS[key] = _generate(config, problem)
    if disk:
        _store_kernel(path, k)
    return k


def splitk_kernels_for(config: Any, problem: GemmProblem, *, disk: bool = True) -> Tuple[Any, Any]:
    """(split GEMM kernel, fix-up kernel) for a ``SplitKConfig``: memory cache, disk cache,
    then :func:`~layoutproof.gpu.kernels.splitk.generate_splitk` (both proven before emission).
    The serial and cluster reductions have no fix-up kernel (None)."""
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
        if getattr(config, "reduction", "kernel") == "cluster":  # reduced in a cluster (DSMEM)
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


def kernels_for(config: Any, problem: GemmProblem, *, disk: bool = True) -> Tuple[Any, Any]:
    """(kernel, fix-up kernel or None): every kernel a call with ``config`` launches.  A
    :class:`~layoutproof.gpu.kernels.splitk.FixupEpilogueConfig` is its unsplit base kernel
    storing one f32 plane and the one-plane fix-up applying the epilogue; a split
    ``SplitKConfig`` is :func:`splitk_kernels_for`'s pair (no fix-up kernel for the serial
    and cluster reductions); anything else is :func:`kernel_for`'s kernel alone."""
    if isinstance(config, FixupEpilogueConfig):
        plane = replace(problem, out_dtype="f32")
        return kernel_for(config.base, plane, disk=disk), generate_fixup(1, problem, config.fixup_epilogue())
    if getattr(config, "splits", 1) > 1:
        return splitk_kernels_for(config, problem, disk=disk)
    return kernel_for(config, problem, disk=disk), None


def compile_kernel(kernel: Any) -> Any:
    """A CuPy RawKernel for a generated kernel (memory cache by source hash and device)."""
    cp = device.cupy()
    dev = cp.cuda.Device().id
    key = (kernel.source_hash, dev)
    rk = _MODULES.get(key)
    if rk is not None:
        return rk
    cc = cp.cuda.Device(dev).compute_capability
    # wgmma and setmaxnreg need the architecture-specific target
    arch = f"-arch=sm_{cc}a" if "wgmma." in kernel.source else f"-arch=sm_{cc}"
    rk = cp.RawKernel(kernel.source, kernel.name, options=(arch, "-std=c++17"))
    rk.max_dynamic_shared_size_bytes = kernel.smem_bytes
    rk.compile()
    _MODULES[key] = rk
    return rk
