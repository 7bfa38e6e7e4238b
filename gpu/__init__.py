"""layoutproof.gpu: verified MMA / copy atoms, proven lowering, and a proven mma.sync GEMM.

* :mod:`~layoutproof.gpu.isa.atoms` -- MMA and copy atoms as layouts of the algebra, checked
  against :mod:`~layoutproof.gpu.isa.ptx_tables` (an independent encoding of the PTX ISA).
* :mod:`~layoutproof.gpu.isa.tiled` -- TiledMMA / ThrMMA / TiledCopy: partitioning is
  composition followed by slicing.
* :mod:`~layoutproof.gpu.proof.lower` -- a layout becomes a C index expression, proven equal to
  it; bounds and bijectivity; :mod:`~layoutproof.gpu.proof.banks` -- bank-conflict proofs.
* :mod:`~layoutproof.gpu.kernels.mma_sync` -- the GEMM generator: every index map proven before
  the source is emitted; :mod:`~layoutproof.gpu.host.runtime` -- ``gemm`` on CuPy arrays and
  the autotuner, over the launch rule (:mod:`~layoutproof.gpu.host.rule`), the plans that carry
  its decision out (:mod:`~layoutproof.gpu.host.plan`) and the kernel caches
  (:mod:`~layoutproof.gpu.host.cache`); CuPy is imported only when a kernel runs.

>>> from layoutproof.gpu import GemmConfig
>>> GemmConfig().key()
'128x256x32_w2x4_s3_auto_g8'
"""

from __future__ import annotations

from typing import Any

from .config import GemmConfig, GemmProblem
from .errors import (
    AtomMismatchError,
    BankConflictError,
    GemmConfigError,
    GemmInputError,
    LoweringError,
    NoGPUError,
    ProofFailedError,
)
from .proof.record import Proof, ProofLog

__all__ = [
    "GemmConfig",
    "GemmProblem",
    "gemm",
    "gemm_plan",
    "GemmPlan",
    "BatchedGemmPlan",
    "generate",
    "autotune",
    "Proof",
    "ProofLog",
    "AtomMismatchError",
    "BankConflictError",
    "GemmConfigError",
    "GemmInputError",
    "LoweringError",
    "NoGPUError",
    "ProofFailedError",
]

_LAZY = {
    "gemm": ("host.runtime", "gemm"),
    "autotune": ("host.runtime", "autotune"),
    "gemm_plan": ("host.runtime", "gemm_plan"),
    "GemmPlan": ("host.plan", "GemmPlan"),
    "BatchedGemmPlan": ("host.plan", "BatchedGemmPlan"),
    "generate": ("kernels.mma_sync", "generate"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(f"{__name__}.{mod}"), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
