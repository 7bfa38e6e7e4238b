"""layoutproof.gpu: verified MMA / copy atoms, proven lowering, and proven tensor-core GEMMs.

The public names are here; the rest lives in four rooms, each importing only the rooms
below it (the ``gpu-rooms`` contract in pyproject.toml):

* :mod:`~layoutproof.gpu.host` -- ``gemm`` and ``gemm_plan`` on CuPy arrays: the rule that
  decides one frozen launch (:mod:`~layoutproof.gpu.host.rule`), the plans that carry it out
  (:mod:`~layoutproof.gpu.host.plan`), the compile caches and the autotuner; CuPy is imported
  only when a kernel runs.
* :mod:`~layoutproof.gpu.kernels` -- the generators: mma.sync (``GemmConfig``), wgmma
  (``Sm90Config``: monolithic or warp-specialized, clusters), split-K (``SplitKConfig``: a
  fix-up kernel, a serial or an in-cluster reduction) and the fused epilogue
  (``EpilogueConfig``); every index map is proven before the source is emitted.
* :mod:`~layoutproof.gpu.isa` -- the hardware as data: PTX fragment tables, MMA and copy atoms,
  wgmma descriptors, TiledMMA / TiledCopy.
* :mod:`~layoutproof.gpu.proof` -- the kernel IR and its obligations, lowering of layouts to
  C, the bank model, the model checkers, the proof record.

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
    "Sm90Config",
    "SplitKConfig",
    "EpilogueConfig",
    "gemm",
    "gemm_plan",
    "GemmPlan",
    "BatchedGemmPlan",
    "generate",
    "autotune",
    "gemm_op",
    "gemm_fp8_blockscale",
    "gemm_moe",
    "gemm_moe_masked",
    "gemm_grouped",
    "gemm_array",
    "gemm_grouped_stacked",
    "grouped_ops",
    "GroupedConfig",
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
    "Sm90Config": ("kernels.wgmma", "Sm90Config"),
    "SplitKConfig": ("kernels.splitk", "SplitKConfig"),
    "EpilogueConfig": ("kernels.epilogue", "EpilogueConfig"),
    "gemm_op": ("host.torch_op", "gemm_op"),  # reading it registers the torch operator
    "gemm_fp8_blockscale": ("host.blockscale", "gemm_fp8_blockscale"),
    "gemm_moe": ("host.grouped", "gemm_moe"),
    "gemm_moe_masked": ("host.grouped", "gemm_moe_masked"),
    "gemm_grouped": ("host.grouped", "gemm_grouped"),
    "gemm_array": ("host.grouped", "gemm_array"),
    "gemm_grouped_stacked": ("host.grouped", "gemm_grouped_stacked"),
    "grouped_ops": ("host.grouped_op", "ops"),  # calling it registers the torch operators
    "GroupedConfig": ("kernels.grouped", "GroupedConfig"),
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(f"{__name__}.{mod}"), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
