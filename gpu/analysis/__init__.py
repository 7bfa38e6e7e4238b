"""Analyses of a user's own kernel layouts: shared-memory bank conflicts per instruction
phase, global-memory coalescing, TMA pre-flight, index width and swizzle synthesis, each
proved, refuted with a witness, or unknown with the reason.

Built so far: :func:`banks` (:mod:`.smem_banks`, with the per-phase picture of
:mod:`.bank_picture`), :func:`coalescing` (:mod:`.coalesce`), :func:`wgmma_operand`
(:mod:`.wgmma_operand`: whether a descriptor reads the layout), :func:`synthesize_swizzle`
(:mod:`.swizzle`), :func:`index_width` (:mod:`.width`) and :func:`tma_preflight`
(:mod:`.tma`), over the access model of :mod:`.access` (the instruction, every lane's byte
address)."""

from .access import AccessError, Instruction, instruction
from .coalesce import CoalescingReport, WastedRequest, coalescing, widest_vector
from .smem_banks import BankConflict, BankReport, banks
from .swizzle import PaddingReport, SwizzleReport, synthesize_swizzle
from .tma import BoxMismatch, TensorMapArgs, TmaCheck, TmaError, TmaReport, check_args, tma_preflight
from .wgmma_operand import WgmmaOperandReport, wgmma_operand
from .width import Overflow, Term, WidthError, WidthReport, index_width

__all__ = [
    "AccessError",
    "Instruction",
    "instruction",
    "BankConflict",
    "BankReport",
    "banks",
    "CoalescingReport",
    "WastedRequest",
    "coalescing",
    "widest_vector",
    "PaddingReport",
    "SwizzleReport",
    "synthesize_swizzle",
    "WgmmaOperandReport",
    "wgmma_operand",
    "Overflow",
    "Term",
    "WidthError",
    "WidthReport",
    "index_width",
    "BoxMismatch",
    "TensorMapArgs",
    "TmaCheck",
    "TmaError",
    "TmaReport",
    "check_args",
    "tma_preflight",
]
