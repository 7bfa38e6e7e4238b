"""Errors of :mod:`layoutproof.gpu`, all :class:`layoutproof.LayoutError` subclasses.

* :class:`AtomMismatchError` -- an atom's layout disagrees with the independent encoding
  of the PTX ISA fragment tables (carries the ``witness`` (thread, value) and both answers).
* :class:`LoweringError` -- a layout could not be lowered to a C index expression, or the
  lowered expression is not equal to the layout (carries the ``witness`` coordinate).
* :class:`ProofFailedError` -- a kernel obligation (bounds, bijectivity, bank conflicts,
  fragment delivery) does not hold; carries the ``condition`` and a ``witness``.
* :class:`BankConflictError` -- a :class:`ProofFailedError` for shared-memory bank
  conflicts (the witness names the phase and the two threads that collide).
* :class:`GemmConfigError` -- a :class:`~layoutproof.gpu.GemmConfig` that no kernel can be
  built from (tile not divisible by the warp layout, too much shared memory, ...).
* :class:`GemmInputError` -- wrong dtype, shape, device or memory layout of an operand.
* :class:`NoGPUError` -- a GPU operation was asked for where CuPy or a device is missing.
"""

from __future__ import annotations

from typing import Any

from layoutproof.errors import InadmissibleError, LayoutError

__all__ = [
    "AtomMismatchError",
    "LoweringError",
    "ProofFailedError",
    "BankConflictError",
    "GemmConfigError",
    "GemmInputError",
    "NoGPUError",
]


class AtomMismatchError(InadmissibleError):
    """An atom's (thread, value) layout disagrees with the PTX ISA fragment table."""

    def __init__(
        self, message: str, *, condition: str, witness: Any = None, ours: Any = None, ptx: Any = None
    ) -> None:
        super().__init__(message, condition=condition, witness=witness)
        self.ours = ours
        self.ptx = ptx


class LoweringError(InadmissibleError):
    """A layout has no proven C index expression (or the expression is wrong somewhere)."""


class ProofFailedError(InadmissibleError):
    """A kernel obligation (bounds, bijectivity, fragment delivery, ...) does not hold."""


class BankConflictError(ProofFailedError):
    """Two threads of one shared-memory phase hit the same bank at different addresses."""


class GemmConfigError(LayoutError):
    """A GEMM configuration from which no valid kernel can be built."""


class GemmInputError(LayoutError):
    """An operand of ``layoutproof.gpu.gemm`` has the wrong dtype, shape, device or layout."""


class NoGPUError(LayoutError):
    """CuPy or a CUDA device is needed and missing."""
