"""GEMM configurations and problem variants of the mma.sync kernel generator.

A :class:`GemmConfig` is what a user tunes (block tile, warps, pipeline depth, swizzle);
a :class:`GemmProblem` is what the operands dictate (which dimension is contiguous in A
and in B, the input and output precisions).  Together they determine one kernel.

>>> cfg = GemmConfig(bm=128, bn=128, bk=32, warps_m=2, warps_n=2, stages=4)
>>> cfg.threads, cfg.warp_tile, cfg.smem_bytes
(128, (64, 64), 65536)
>>> GemmConfig(bm=96).validate()  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
layoutproof.gpu.errors.GemmConfigError: GemmConfig: bm=96 must be a multiple of ...
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Optional, Tuple, Union

from .errors import GemmConfigError

__all__ = [
    "GemmConfig",
    "GemmProblem",
    "DTYPES",
    "OUT_DTYPES",
    "TC_TYPES",
    "operand_storage",
    "SMEM_LIMIT",
    "BATCH_KINDS",
]

# CUDA C type, bytes per element
DTYPES: Dict[str, Tuple[str, int]] = {"f16": ("__half", 2), "bf16": ("__nv_bfloat16", 2)}
OUT_DTYPES: Dict[str, Tuple[str, int]] = {
    "f16": ("__half", 2),
    "bf16": ("__nv_bfloat16", 2),
    "f32": ("float", 4),
    "s32": ("int", 4),  # the integer types' output (TC_TYPES)
}

#: The other tensor-core operand types (the wgmma kernels only): ``dtype -> (bytes per
#: element, accumulator, the output dtypes, the default output; an s32 accumulator stored as a
#: float type is converted, and scaled by the fused epilogue's alpha)``.  Their kernels move the
#: operands as 16-bit storage units (:func:`operand_storage`): a K-major row of ``K``
#: elements is ``K * bytes / 2`` units, and the kernel's ``K``, ``lda``, ``ldb`` count units.
TC_TYPES: Dict[str, Tuple[int, str, Tuple[str, ...], str]] = {
    "tf32": (4, "f32", ("f32", "bf16", "f16"), "f32"),
    "e4m3": (1, "f32", ("bf16", "f16", "f32"), "bf16"),
    "e5m2": (1, "f32", ("bf16", "f16", "f32"), "bf16"),
    "s8": (1, "s32", ("s32", "f32", "bf16", "f16"), "s32"),
    "u8": (1, "s32", ("s32", "f32", "bf16", "f16"), "s32"),
}


def operand_storage(dtype: str) -> Tuple[str, int]:
    """The CUDA C type and bytes of the unit a kernel moves operands of ``dtype`` in: the
    element itself for ``f16``/``bf16``, a 16-bit unit for :data:`TC_TYPES`.

    >>> operand_storage("bf16"), operand_storage("e4m3")
    (('__nv_bfloat16', 2), ('unsigned short', 2))
    """
    if dtype in DTYPES:
        return DTYPES[dtype]
    if dtype in TC_TYPES:
        return ("unsigned short", 2)
    raise GemmConfigError(f"dtype={dtype!r} must be one of {list(DTYPES) + list(TC_TYPES)}")


# the largest dynamic shared memory one block may have on sm_80 / sm_90 (bytes)
SMEM_LIMIT = 227 * 1024

Swz = Union[str, Tuple[int, int, int]]


def _pow2(x: int) -> bool:
    return x > 0 and x & (x - 1) == 0


@dataclass(frozen=True)
class GemmConfig:
    """One block-tile configuration of the mma.sync GEMM.

    Attributes:
        bm, bn, bk: the block tile (M, N, K extents per thread block per main-loop step).
        warps_m, warps_n: the warp layout over the block tile (warp tile = bm/warps_m x
            bn/warps_n, a multiple of the 16x8 MMA atom; bn/warps_n a multiple of 16).
        stages: cp.async pipeline depth (>= 2; the issue asks for >= 3 by default).
        swizzle: ``"auto"`` (the algebra picks the smallest Swizzle<B,3,S> for which the
            ldmatrix reads and cp.async writes are proven conflict-free), or an explicit
            ``(B, M, S)`` for both operands (refused if it is not conflict-free).
        group_m: block rasterization: this many block rows are walked together (L2 reuse).
        min_blocks: ``__launch_bounds__``'s minimum resident blocks per SM (caps registers
            at 65536 / (threads * min_blocks); 2 with 8 warps gives 16 warps per SM).
    """

    bm: int = 128
    bn: int = 256
    bk: int = 32
    warps_m: int = 2
    warps_n: int = 4
    stages: int = 3
    swizzle: Any = "auto"
    group_m: int = 8
    min_blocks: int = 1

    @property
    def threads(self) -> int:
        return 32 * self.warps_m * self.warps_n

    @property
    def warp_tile(self) -> Tuple[int, int]:
        return self.bm // self.warps_m, self.bn // self.warps_n

    @property
    def smem_bytes(self) -> int:
        return self.stages * (self.bm + self.bn) * self.bk * 2

    def key(self) -> str:
        sw = self.swizzle if isinstance(self.swizzle, str) else "sw" + "".join(map(str, self.swizzle))
        mb = f"_b{self.min_blocks}" if self.min_blocks != 1 else ""
        return (
            f"{self.bm}x{self.bn}x{self.bk}_w{self.warps_m}x{self.warps_n}_s{self.stages}"
            f"_{sw}_g{self.group_m}{mb}"
        )

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)

    def validate(self) -> "GemmConfig":
        """Raise :class:`GemmConfigError` naming the first violated rule; return self."""
        ints = dict(
            bm=self.bm,
            bn=self.bn,
            bk=self.bk,
            warps_m=self.warps_m,
            warps_n=self.warps_n,
            stages=self.stages,
            group_m=self.group_m,
            min_blocks=self.min_blocks,
        )
        for k, v in ints.items():
            if type(v) is not int or v < 1:
                raise GemmConfigError(f"GemmConfig: {k}={v!r} must be a positive int")
        if not (_pow2(self.warps_m) and _pow2(self.warps_n)) or self.warps_m * self.warps_n > 16:
            raise GemmConfigError(
                f"GemmConfig: warps {self.warps_m}x{self.warps_n} must be powers of two, at most 16 warps"
            )
        if self.bm % (16 * self.warps_m) or not _pow2(self.bm):
            raise GemmConfigError(
                f"GemmConfig: bm={self.bm} must be a multiple of 16*warps_m = "
                f"{16 * self.warps_m} and a power of two"
            )
        if self.bn % (16 * self.warps_n) or not _pow2(self.bn):
            raise GemmConfigError(
                f"GemmConfig: bn={self.bn} must be a multiple of 16*warps_n = "
                f"{16 * self.warps_n} and a power of two"
            )
        if self.bk not in (32, 64, 128):
            # the main loop's barrier sits before the last of >= 2 k16 steps per tile
            raise GemmConfigError(f"GemmConfig: bk={self.bk} must be 32, 64 or 128")
        if self.stages < 2 or self.stages > 8:
            raise GemmConfigError(f"GemmConfig: stages={self.stages} must be in [2, 8]")
        if min(self.bm, self.bn) < 16 or max(self.bm, self.bn) > 256:
            raise GemmConfigError("GemmConfig: bm and bn must lie in [16, 256]")
        tm, tn = self.warp_tile
        if tm * tn > 128 * 128 // 2:
            raise GemmConfigError(
                f"GemmConfig: warp tile {tm}x{tn} needs {tm * tn // 32} f32 accumulators per "
                f"thread (at most 256 fit the register file)"
            )
        if self.min_blocks > 1 and self.min_blocks * self.smem_bytes > 228 * 1024:
            raise GemmConfigError(
                f"GemmConfig: min_blocks={self.min_blocks} blocks of {self.smem_bytes} bytes of "
                f"shared memory do not fit one SM (228 KB)"
            )
        if 65536 // (self.threads * self.min_blocks) < 64 + tm * tn // 32:
            raise GemmConfigError(
                f"GemmConfig: min_blocks={self.min_blocks} leaves "
                f"{65536 // (self.threads * self.min_blocks)} registers per thread, fewer than the "
                f"{tm * tn // 32} accumulators need"
            )
        if self.smem_bytes > SMEM_LIMIT:
            raise GemmConfigError(
                f"GemmConfig: {self.stages} stages of ({self.bm}+{self.bn})x{self.bk} f16 need "
                f"{self.smem_bytes} bytes of shared memory, more than {SMEM_LIMIT}"
            )
        sw = self.swizzle
        if not (sw == "auto" or (isinstance(sw, tuple) and len(sw) == 3 and all(type(x) is int for x in sw))):
            raise GemmConfigError(f"GemmConfig: swizzle={sw!r} must be 'auto' or a (B, M, S) tuple")
        return self


#: which operands of a batched product carry the batch index ("" = not batched)
BATCH_KINDS = ("", "ab", "a", "b")


@dataclass(frozen=True)
class GemmProblem:
    """The operand-dictated variant: C (M x N, row-major) = A (M x K) @ B (K x N).

    Attributes:
        a_major: ``"k"`` when A's rows are contiguous (row-major A, BLAS 'T' in CuTe's
            TN naming), ``"m"`` when its columns are (column-major A).
        b_major: ``"k"`` when B's columns are contiguous (column-major B), ``"n"`` when its
            rows are (row-major B).
        dtype: ``"f16"`` or ``"bf16"`` (both operands; f32 accumulation), or one of
            :data:`TC_TYPES` (``"tf32"``, ``"e4m3"``, ``"e5m2"``, ``"s8"``, ``"u8"``: the
            wgmma kernels only, K-major operands).
        out_dtype: ``"f16"``, ``"bf16"`` or ``"f32"`` (``"s32"`` for the integer types);
            the default is ``dtype`` (:data:`TC_TYPES` name theirs).
        batch: ``""`` (one product), or a batched product C[i] = A[i] @ B[i] of one launch
            (the warp-specialized TMA kernel): ``"ab"`` both operands carry a batch
            index, ``"a"`` only A (B is shared by every batch), ``"b"`` only B.  C always
            has one matrix per batch.  (Not in the repr: the names of unbatched kernels
            stay what they were; ``key()`` tells the variants apart.)
    """

    a_major: str = "k"
    b_major: str = "n"
    dtype: str = "f16"
    out_dtype: Optional[str] = None
    batch: str = field(default="", repr=False)

    @property
    def out(self) -> str:
        if self.out_dtype is None and self.dtype in TC_TYPES:
            return TC_TYPES[self.dtype][3]
        return self.out_dtype or self.dtype

    def key(self) -> str:
        return f"a{self.a_major}_b{self.b_major}_{self.dtype}_{self.out}" + (
            f"_batch{self.batch}" if self.batch else ""
        )

    def validate(self) -> "GemmProblem":
        if self.a_major not in ("k", "m"):
            raise GemmConfigError(f"GemmProblem: a_major={self.a_major!r} must be 'k' or 'm'")
        if self.b_major not in ("k", "n"):
            raise GemmConfigError(f"GemmProblem: b_major={self.b_major!r} must be 'k' or 'n'")
        if self.dtype in TC_TYPES:
            outs = TC_TYPES[self.dtype][2]
            if self.out not in outs:
                raise GemmConfigError(
                    f"GemmProblem: dtype={self.dtype!r} accumulates in {TC_TYPES[self.dtype][1]}: "
                    f"out_dtype={self.out!r} must be one of {list(outs)}"
                )
        elif self.dtype not in DTYPES:
            raise GemmConfigError(
                f"GemmProblem: dtype={self.dtype!r} must be one of {list(DTYPES) + list(TC_TYPES)}"
            )
        elif self.out not in OUT_DTYPES or self.out == "s32":
            raise GemmConfigError(
                f"GemmProblem: out_dtype={self.out!r} must be one of {['f16', 'bf16', 'f32']} "
                f"for dtype={self.dtype!r}"
            )
        if self.batch not in BATCH_KINDS:
            raise GemmConfigError(f"GemmProblem: batch={self.batch!r} must be one of {list(BATCH_KINDS)}")
        return self
