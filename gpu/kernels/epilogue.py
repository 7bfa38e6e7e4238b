"""Fused epilogue for the warp-specialized wgmma kernel: ``C = act(alpha A @ B + beta Cin + bias)``.

:class:`EpilogueConfig` adds a bias along N (one value per column of C; with
``bias_axis="m"`` one per row, read at ``m0 + row(t, i)`` under ``< M``; f32, f16 or bf16,
converted to f32 in the kernel) and an activation (``relu``, ``silu``, ``gelu``) to a
warp-specialized TMA configuration, batched or not (every batch adds the same bias; a
batched kernel reads batch ``bidx``'s C input at ``Cin + bidx * ldcib``).  The kernel is the
one :func:`~layoutproof.gpu.kernels.wgmma.generate_sm90` builds, rewritten on its IR
(:func:`epilogue_ir`): where the epilogue packs a pair of f32 accumulators into the
shared staging buffer, each accumulator becomes ``act(acc[i] + b_i)`` first, in f32, with
``b_i = bias[n0 + col(t, i)]`` loaded under the guard ``n0 + col(t, i) < N`` (0 past N).
Then every obligation of the IR is discharged again on the rewritten tree.  What the
fusion adds is proven before emission:

* ``col(t, i)`` is a lowered layout of the wgmma atom's own C layout (thread, value) ->
  column (itself proven against the PTX fragment tables); the bias load's claim says its
  address is ``bias + 4 * (n0 + L(t, i))`` with ``L`` that layout, so the bias a register
  gets is the one of *its* column, and the load is in bounds;
* with ``alpha_beta``, the C input ``Cin[m0 + row(t, i), n0 + col(t, i)]`` of register
  ``i`` is read under the guards ``< M`` and ``< N``, its claim written with the atom's row
  and column layouts (``lp_acc_row``, ``lp_bias_col``); in a batched kernel the claim is
  ``Cin + bidx * ldcib + row * ldci + col`` with ``bidx`` the tile's batch (the one its C
  stores use) and ``ldcib`` the C input's batch stride parameter (0: one C for every
  batch), so a load at another batch stride fails by name;
* the data flow: every value the epilogue writes is ``act(acc[i] + b_i)`` (or
  ``act(alpha * acc[i] + beta * c_i + b_i)``) with ``b_i``, ``c_i`` the loads claimed for
  register ``i`` (checked on the tree), so each C element is
  ``act(alpha * sum_k A[m,k] B[k,n] + beta * Cin[m,n] + bias[n])``.

A bias along N is read once per column pair of a chunk, before the chunk's buffer writes
(:data:`BIAS_PAIRS`): the slot ``s`` of the chunk holds the columns of register pair ``2 s``
(one 2-element vector load where the bias is aligned to two elements and the chunk's last
column is < N, else each column under ``< N``), and register pair ``p`` adds slot ``p / 2``.
Proven on the tree: the pairs ``p`` and ``p + 1`` of each chunk hold the same two columns
(the atom's C layout: rows ``r`` and ``r + 8``), every slot write stores the load claimed at
its own columns, and every buffer write reads its own pair's slot.

At the start of each tile, before its main loop, the first threads of each consumer
warpgroup prefetch the tile's bias (its ``bn`` columns, or its warpgroup's 64 rows) into L1
(``prefetch.global.L1``, one 128-byte line each, the addresses claimed in bounds like the
loads): the epilogue reads each column chunk's bias only in that chunk, so without it every
chunk waited on L2 (:data:`BIAS_PREFETCH`).

>>> from layoutproof.gpu.kernels.wgmma import Sm90Config
>>> EpilogueConfig(Sm90Config(bm=64, bn=128, stages=8, loader="tma", schedule="ws"), "relu").key()
'sm90_64x128x64_s8_g8_tma_ws_biasrelu'
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from layoutproof import Layout, composition, get, rank, size

from ..config import OUT_DTYPES, TC_TYPES, GemmProblem
from ..errors import GemmConfigError, ProofFailedError
from ..isa import gmma
from ..proof import evaluate, kir, lower
from ..proof.record import ProofLog
from .toolkit import GemmKernel, addr_of, finish
from .variant import WsVariantFields, base_plan_proofs, find_decl, find_param
from .wgmma import Sm90Config, generate_sm90
from .wgmma_ws import prove_ws_protocol

__all__ = [
    "EpilogueConfig",
    "ACTIVATIONS",
    "BIAS_AXES",
    "BIAS_DTYPES",
    "epilogue_ir",
    "generate_epilogue",
    "bias_column_layout",
    "acc_row_layout",
    "c_input_batch_stride",
    "S32_ACTIVATIONS",
    "compute_type",
    "check_compute",
    "check_epilogue_fields",
]

ACTIVATIONS = ("none", "relu", "silu", "gelu")
#: the bias vector's axis (one value per column ``"n"`` or per row ``"m"`` of C) and its
#: element types (converted to f32 in the kernel): CUDA type, bytes, conversion to float
BIAS_AXES = ("n", "m")
BIAS_DTYPES: Dict[str, Tuple[str, int, Optional[str]]] = {
    "f32": ("float", 4, None),
    "f16": ("__half", 2, "__half2float"),
    "bf16": ("__nv_bfloat16", 2, "__bfloat162float"),
    "s32": ("int", 4, None),  # the integer products' exact s32 epilogue only
}
#: the activations an s32 epilogue (integer accumulators stored as s32) computes exactly
S32_ACTIVATIONS = ("none", "relu")
EPILOGUE_VERSION = "epilogue-2"
#: prefetch each tile's bias into L1 before its main loop (False: the loads alone, as before;
#: a switch for benchmarks that time both).  Measured on the H200 (bench/RESULTS.md, "The
#: bias prefetch"): the epilogue's loads were 45% of the stalls of a K-light tile
#: (8192x8192x256 with bias + relu, L1 hit rate 32%)
BIAS_PREFETCH = True
#: read a bias along N once per column pair of a chunk, before the chunk's buffer writes (one
#: 2-element vector load where the bias is aligned to it), instead of once per register (each
#: value loaded twice, for the pair's two rows, element by element); False: per register, as
#: before (a switch for benchmarks that time both).  Bias along M and the alpha/beta epilogue
#: keep the per-register loads.
BIAS_PAIRS = True
#: the vector type of two bias elements, per bias C type (``lp_lo`` / ``lp_hi`` read its halves)
_PAIR_TYPES = {"float": "float2", "__half": "__half2", "__nv_bfloat16": "__nv_bfloat162", "int": "int2"}


@dataclass(frozen=True)
class EpilogueConfig(WsVariantFields):
    """The warp-specialized TMA kernel ``base`` with ``C = act(A @ B + bias)`` fused:
    ``activation`` one of :data:`ACTIVATIONS`; the bias is one value per column of C
    (``bias_axis="n"``) or per row (``"m"``), of ``bias_dtype`` ``"f32"``, ``"f16"`` or
    ``"bf16"`` (converted to f32 in the kernel).  In a batched kernel every batch adds the
    same bias vector; with ``alpha_beta`` batch ``i`` reads its C input at
    ``Cin + i * ldcib`` (a kernel parameter after ``ldci``; 0 shares one C).  (The two
    bias fields are not in the repr: the names of the f32-along-N kernels stay what they
    were; ``key()`` tells the variants apart.)"""

    base: Sm90Config
    activation: str = "none"
    alpha_beta: bool = False
    bias_axis: str = field(default="n", repr=False)
    bias_dtype: str = field(default="f32", repr=False)
    alpha_only: bool = field(default=False, repr=False)

    @property
    def cluster(self) -> int:
        return self.base.cluster

    def key(self) -> str:
        return (
            f"{self.base.key()}_bias{self.activation}"
            + ("_ab" if self.alpha_beta else "")
            + ("_biasm" if self.bias_axis == "m" else "")
            + (f"_b{self.bias_dtype}" if self.bias_dtype != "f32" else "")
            + ("_alpha" if self.alpha_only else "")
        )

    def validate(self) -> "EpilogueConfig":
        if not isinstance(self.base, Sm90Config):
            raise GemmConfigError(
                f"EpilogueConfig: base must be an Sm90Config, got {type(self.base).__name__}"
            )
        self.base.validate()
        if self.base.schedule != "ws" or self.base.loader != "tma":
            raise GemmConfigError(
                "EpilogueConfig: the fused epilogue rewrites the warp-specialized TMA kernel "
                "(schedule='ws', loader='tma')"
            )
        check_epilogue_fields(
            "EpilogueConfig", self.activation, self.bias_axis, self.bias_dtype, tuple(BIAS_DTYPES)
        )
        if self.alpha_only and self.alpha_beta:
            raise GemmConfigError(
                "EpilogueConfig: alpha_only (alpha * A @ B, no C input) and alpha_beta exclude each other"
            )
        return self


def check_epilogue_fields(
    who: str, activation: str, bias_axis: str, bias_dtype: str, dtypes: Tuple[str, ...]
) -> None:
    """The fields every fused epilogue's configuration shares (``who`` names it in the
    refusals): the activation one of :data:`ACTIVATIONS`, the bias axis one of
    :data:`BIAS_AXES`, the bias type one of ``dtypes``."""
    if activation not in ACTIVATIONS:
        raise GemmConfigError(f"{who}: activation={activation!r} must be one of {ACTIVATIONS}")
    if bias_axis not in BIAS_AXES:
        raise GemmConfigError(f"{who}: bias_axis={bias_axis!r} must be one of {BIAS_AXES}")
    if bias_dtype not in dtypes:
        raise GemmConfigError(f"{who}: bias_dtype={bias_dtype!r} must be one of {dtypes}")


def compute_type(prob: GemmProblem) -> str:
    """The arithmetic of the fused epilogue of ``prob``: ``"s32"`` where integer
    accumulators are stored as s32 (exact: bias, alpha, beta and the C input are s32 too,
    32-bit two's-complement arithmetic), else ``"f32"`` (an s32 accumulator is converted
    to f32 by the first operation that reads it).

    >>> compute_type(GemmProblem("k", "k", "s8")), compute_type(GemmProblem("k", "k", "s8", "bf16"))
    ('s32', 'f32')
    """
    if prob.dtype in TC_TYPES and TC_TYPES[prob.dtype][1] == "s32" and prob.out == "s32":
        return "s32"
    return "f32"


def check_compute(cfg: EpilogueConfig, prob: GemmProblem) -> None:
    """The epilogue ``cfg`` computes what it says in ``prob``'s arithmetic
    (:func:`compute_type`): an s32 epilogue takes an s32 bias and the activations
    :data:`S32_ACTIVATIONS`; a float epilogue takes no s32 bias."""
    if compute_type(prob) == "s32":
        if cfg.bias_dtype != "s32":
            raise GemmConfigError(
                f"generate_epilogue: .{prob.dtype} -> s32 is exact: its bias is s32 "
                f"(bias_dtype='s32'), not {cfg.bias_dtype}; for a float bias store f32 or bf16"
            )
        if cfg.activation not in S32_ACTIVATIONS:
            raise GemmConfigError(
                f"generate_epilogue: .{prob.dtype} -> s32 computes exactly: activation "
                f"{cfg.activation!r} is not an integer function (one of {S32_ACTIVATIONS}); store "
                f"f32 or bf16 for it"
            )
    elif cfg.bias_dtype == "s32":
        raise GemmConfigError(
            f"generate_epilogue: an s32 bias goes with an s32 output of an integer product, not "
            f".{prob.dtype} -> {prob.out}"
        )


def acc_row_layout(bn: int, dtype: str) -> Any:
    """(thread of the warpgroup, accumulator register) -> row of the warpgroup's 64-row
    slice of the C tile, from the wgmma atom's C layout."""
    atom = gmma.sm90_atom(bn, dtype, "SS")
    return composition(Layout((64, bn), (1, 0)), atom.c_layout)


#: the conversion of an output-type element to float, per output type
_TO_FLOAT = {"f16": "__half2float", "bf16": "__bfloat162float", "f32": None, "s32": None}


def bias_column_layout(bn: int, dtype: str) -> Any:
    """(thread of the warpgroup, accumulator register) -> column of the wgmma atom's C tile
    (64 x bn, column-major in the atom's C layout)."""
    atom = gmma.sm90_atom(bn, dtype, "SS")
    return composition(Layout((64, bn), (0, 1)), atom.c_layout)


def _code_register(e: kir.Expr) -> kir.Expr:
    """The register index the kernel passes to ``lp_bias_col`` (checked against the claim)."""
    return e


def _code_row_register(e: kir.Expr) -> kir.Expr:
    """The register index the kernel passes to ``lp_acc_row`` (checked against the claim)."""
    return e


def c_input_batch_stride(ldci: kir.Var, ldcib: kir.Var) -> kir.Expr:
    """The batch stride (elements) the batched kernel's C input loads use in their code;
    their claims use the parameter ``ldcib`` and the two are checked equal on every load
    (``ldci`` is the C input's row stride)."""
    return ldcib


#: the name and the condition of the rewrite's refusals
_WHAT = "epilogue rewrite"


def _find(body: kir.Block, pred: Any, what: str) -> List[Any]:
    hits = [n for n in kir.walk(body) if pred(n)]
    if not hits:
        raise ProofFailedError(f"epilogue rewrite: no {what}", condition="epilogue rewrite", witness=what)
    return hits


@dataclass(frozen=True)
class _EpilogueEnv:
    """What the phases of :func:`epilogue_ir` share: the base kernel's one buffer write and
    the variables found around it (:func:`_declare_epilogue`), the lowered register maps,
    and the parameters the fused epilogue adds (``rows``: the register's row, when read;
    ``ab``: alpha, beta and the C input, when asked)."""

    cfg: EpilogueConfig
    prob: GemmProblem
    write: Any  # the kir.Assign to the buffer (a kir.Mem)
    rhs: kir.Call
    wt: kir.Expr
    N: kir.Var
    n0: kir.Var
    col_layout: Any
    colfn: kir.ProvenFn
    fns: Tuple[kir.ProvenFn, ...]
    rows: Dict[str, Any]
    ab: Dict[str, Any]
    bias: kir.Var
    btype: str
    bw: int
    bconv: Optional[str]
    act: str
    ctype: str  # the arithmetic's C type: "float", or "int" (the exact s32 epilogue)
    alpha: Optional[kir.Var]  # alpha_only's alpha (no C input)

    @property
    def along_m(self) -> bool:
        return self.cfg.bias_axis == "m"

    def zero(self) -> kir.Expr:
        return kir.Const(0) if self.ctype == "int" else kir.FloatLit("0.f")

    def activate(self, v: kir.Expr) -> kir.Expr:
        """The activation of a value: ``lp_act_*`` in f32; in s32 the identity or
        ``max(v, 0)`` (exact)."""
        if self.ctype == "float":
            return kir.Call(self.act, (v,), "float")
        if self.cfg.activation == "relu":
            return kir.Call("max", (v, kir.Const(0)), "int")
        return v

    def inactivate(self, a: Any) -> Any:
        """The value inside :meth:`activate`'s result (None where ``a`` is not one)."""
        if self.ctype == "float":
            ok = isinstance(a, kir.Call) and a.name == self.act and len(a.args) == 1
            return a.args[0] if ok else None
        if self.cfg.activation == "relu":
            ok = (
                isinstance(a, kir.Call)
                and a.name == "max"
                and len(a.args) == 2
                and isinstance(a.args[1], kir.Const)
                and a.args[1].value == 0
            )
            return a.args[0] if ok else None
        return a


def _is_buffer_write(n: Any) -> bool:
    return (
        isinstance(n, kir.Assign)
        and isinstance(n.lhs, kir.Mem)
        and n.lhs.claim.what.startswith("epilogue buffer write")
    )


def _buffer_writes(body: kir.Block) -> List[Any]:
    """The epilogue buffer writes under ``body``."""
    return [n for n in kir.walk(body) if _is_buffer_write(n)]


def _buffer_write(base: kir.Kernel) -> Tuple[Any, kir.Call]:
    """The base kernel's one epilogue buffer write, of a pair of accumulators, and its value."""
    writes = _find(base.body, _is_buffer_write, "epilogue buffer write")
    if len(writes) != 1:
        raise ProofFailedError("epilogue rewrite: expected one buffer write", condition="epilogue rewrite")
    write = writes[0]
    rhs = write.rhs
    if not (
        isinstance(rhs, kir.Call)
        and len(rhs.args) == 2
        and all(isinstance(x, kir.Index) and len(x.idx) == 1 for x in rhs.args)
    ):
        raise ProofFailedError(
            "epilogue rewrite: the write is not a pair of accumulators", condition="epilogue rewrite"
        )
    return write, rhs


def _declare_epilogue(
    base: kir.Kernel, cfg: EpilogueConfig, prob: GemmProblem, log: ProofLog
) -> _EpilogueEnv:
    """The buffer write, the variables the rewrite reads, the lowered column (and row) maps
    of the registers, and the new parameters."""
    write, rhs = _buffer_write(base)
    apps = [x for x in kir.walk(write.lhs.claim.addr) if isinstance(x, kir.LayoutApp)]
    wt = apps[0].coords[0]
    loops = _find(
        base.body,
        lambda n: isinstance(n, kir.For) and n.cond is not None and any(x is write for x in kir.walk(n.body)),
        "consumer tile loop",
    )
    N = find_param(base, "N", _WHAT, _WHAT)
    n0 = find_decl(loops[-1].body, "n0", _WHAT, _WHAT)
    col_layout = bias_column_layout(cfg.bn, prob.dtype)
    low = lower.lower(col_layout, ("t", "v"), name="lp_bias_col", log=log)
    colfn = kir.from_lowered(low)
    fns = [colfn]
    ab: Dict[str, Any] = {}
    rows: Dict[str, Any] = {}
    if cfg.alpha_beta or cfg.bias_axis == "m":  # the register's row: the C input's, or the bias's
        row_layout = acc_row_layout(cfg.bn, prob.dtype)
        rowfn = kir.from_lowered(lower.lower(row_layout, ("t", "v"), name="lp_acc_row", log=log))
        fns.append(rowfn)
        rows = dict(
            m0=find_decl(loops[-1].body, "m0", _WHAT, _WHAT),
            cg=find_decl(base.body, "cg", _WHAT, _WHAT),
            M=find_param(base, "M", _WHAT, _WHAT),
            row_layout=row_layout,
            rowfn=rowfn,
        )
    ctype = "int" if compute_type(prob) == "s32" else "float"
    if cfg.alpha_beta:
        ab = dict(
            rows,
            alpha=kir.Var("alpha", ctype),
            beta=kir.Var("beta", ctype),
            Cin=kir.Var("Cin", "const lp_out_t*"),
            ldci=kir.Var("ldci", "long long"),
        )
        if prob.batch:  # the tile's batch (declared with m0, n0) and the C input's batch stride
            bidx = find_decl(loops[-1].body, "bidx", _WHAT, _WHAT)
            ab.update(bidx=bidx, ldcib=kir.Var("ldcib", "long long"))
    btype, bw, bconv = BIAS_DTYPES[cfg.bias_dtype]
    return _EpilogueEnv(
        cfg=cfg,
        prob=prob,
        write=write,
        rhs=rhs,
        wt=wt,
        N=N,
        n0=n0,
        col_layout=col_layout,
        colfn=colfn,
        fns=tuple(fns),
        rows=rows,
        ab=ab,
        bias=kir.Var("bias", f"const {btype}*"),
        btype=btype,
        bw=bw,
        bconv=bconv,
        act=f"lp_act_{cfg.activation}",
        ctype=ctype,
        alpha=kir.Var("alpha", ctype) if cfg.alpha_only else None,
    )


def _bias_ir(
    F: _EpilogueEnv, j: int, e: kir.Expr, rr: kir.Var, bc: kir.Var, rcoord: Any, coord: kir.Expr
) -> Tuple[List[kir.Stmt], kir.Var]:
    """Register ``e``'s row ``rr`` and column ``bc`` (those read), and its bias ``bv{j}``
    loaded at its row or column, guarded by ``< M`` or ``< N`` (0 outside)."""
    rows, wt, N = F.rows, F.wt, F.N
    stmts: List[kir.Stmt] = []
    bv = kir.Var(f"bv{j}", F.ctype)
    if rows:
        stmts.append(
            kir.Decl(
                rr,
                rows["m0"] + 64 * rows["cg"] + kir.call(rows["rowfn"], t=wt, v=_code_row_register(e)),
                const=True,
            )
        )
    if F.ab or not F.along_m:
        stmts.append(kir.Decl(bc, F.n0 + kir.call(F.colfn, t=wt, v=_code_register(e)), const=True))
    if F.along_m:
        claim = kir.Claim(
            "bias load bias[m0 + row(thread, register)]",
            addr_of(F.bias) + F.bw * rcoord,
            bounds=((rcoord, rows["M"]),),
            width=F.bw,
        )
        bguard, bidx = rr.lt(rows["M"]), rr
    else:
        claim = kir.Claim(
            "bias load bias[n0 + col(thread, register)]",
            addr_of(F.bias) + F.bw * coord,
            bounds=((coord, N),),
            width=F.bw,
        )
        bguard, bidx = bc.lt(N), bc
    bload: kir.Expr = kir.Mem(F.bias, claim, idx=bidx)
    if F.bconv is not None:
        bload = kir.Call(F.bconv, (bload,), "float")
    stmts += [
        kir.Decl(bv, F.zero()),
        kir.If(bguard, kir.block(kir.Assign(bv, bload))),
    ]
    return stmts, bv


def _c_input_ir(
    F: _EpilogueEnv, j: int, rr: kir.Var, bc: kir.Var, rcoord: Any, coord: kir.Expr
) -> Tuple[List[kir.Stmt], kir.Var]:
    """``cv{j}``: the C input at the register's own (row, col) (of batch ``bidx`` when
    batched), converted to float, guarded by ``< M`` and ``< N`` (0 outside)."""
    ab, N = F.ab, F.N
    ob = OUT_DTYPES[F.prob.out][1]
    cv = kir.Var(f"cv{j}", F.ctype)
    celem: kir.Expr = kir.Cast("long long", rcoord) * ab["ldci"] + coord
    cidx: kir.Expr = kir.Cast("long long", rr) * ab["ldci"] + bc
    cwhat = "C input load Cin[m0 + row(thread, register), n0 + col(thread, register)]"
    if "bidx" in ab:  # batched: batch bidx's C input, ldcib elements per batch
        bcast = kir.Cast("long long", ab["bidx"])
        celem = bcast * ab["ldcib"] + celem
        cidx = bcast * c_input_batch_stride(ab["ldci"], ab["ldcib"]) + cidx
        cwhat = "C input load Cin[bidx][m0 + row(thread, register), n0 + col(thread, register)]"
    cclaim = kir.Claim(
        cwhat,
        addr_of(ab["Cin"]) + ob * celem,
        bounds=((rcoord, ab["M"]), (coord, N)),
        width=ob,
    )
    cin = kir.Mem(ab["Cin"], cclaim, idx=cidx)
    tof = _TO_FLOAT[F.prob.out]
    load = kir.Assign(cv, cin if tof is None else kir.Call(tof, (cin,), "float"))
    return [
        kir.Decl(cv, F.zero()),
        kir.If(rr.lt(ab["M"]), kir.block(kir.If(bc.lt(N), kir.block(load)))),
    ], cv


def _fused_write_ir(F: _EpilogueEnv) -> List[kir.Stmt]:
    """The statements that replace the buffer write: per register of the pair its bias (and
    C input), then the write of ``act(acc + bias)`` (``act(alpha * acc + beta * Cin +
    bias)``)."""
    stmts: List[kir.Stmt] = []
    vals = []
    for j, x in enumerate(F.rhs.args):
        if not isinstance(x, kir.Index):
            raise ProofFailedError(
                "epilogue rewrite: the write is not of accumulators", condition="epilogue rewrite"
            )
        e = x.idx[0]
        bc = kir.Var(f"bc{j}")
        rr = kir.Var(f"rr{j}")
        coord = F.n0 + kir.LayoutApp(F.col_layout, (F.wt, e), "bias column of (thread, register)")
        rcoord: Optional[kir.Expr] = None
        if F.rows:
            rows = F.rows
            rcoord = (
                rows["m0"]
                + 64 * rows["cg"]
                + kir.LayoutApp(rows["row_layout"], (F.wt, e), "row of (thread, register)")
            )
        bstmts, bv = _bias_ir(F, j, e, rr, bc, rcoord, coord)
        stmts += bstmts
        if not F.ab:
            vals.append(F.activate((x if F.alpha is None else F.alpha * x) + bv))
            continue
        # alpha * acc + beta * Cin[row, col] + bias: Cin read at the register's own (row, col)
        cstmts, cv = _c_input_ir(F, j, rr, bc, rcoord, coord)
        stmts += cstmts
        vals.append(F.activate(F.ab["alpha"] * x + F.ab["beta"] * cv + bv))
    stmts.append(replace(F.write, rhs=replace(F.rhs, args=tuple(vals))))
    return stmts


def _pair_loop(F: _EpilogueEnv, body: kir.Block) -> Tuple[kir.For, kir.For]:
    """The unrolled loop whose body is the buffer write (over the register pairs of a chunk)
    and the chunk loop around it, both with constant bounds."""
    loops = [
        n for n in kir.walk(body) if isinstance(n, kir.For) and any(x is F.write for x in kir.walk(n.body))
    ]
    inner = [n for n in loops if any(x is F.write for x in n.body.body)]
    if len(inner) != 1 or len(loops) < 2:
        raise ProofFailedError("epilogue rewrite: no pair loop around the buffer write", condition=_WHAT)
    ploop = inner[0]
    qloop = loops[loops.index(ploop) - 1]
    for lp in (ploop, qloop):
        if not (isinstance(lp.start, kir.Const) and isinstance(lp.stop, kir.Const) and lp.cond is None):
            raise ProofFailedError(
                "epilogue rewrite: a chunk or pair loop without constant bounds", condition=_WHAT
            )
    return ploop, qloop


def _const(e: kir.Expr) -> int:
    if not isinstance(e, kir.Const):
        raise ProofFailedError("epilogue rewrite: a loop bound is not a constant", condition=_WHAT)
    return int(e.value)


def _reg(x: kir.Expr) -> kir.Expr:
    """The register index of an accumulator read ``acc[i]``."""
    if not (isinstance(x, kir.Index) and len(x.idx) == 1):
        raise ProofFailedError("epilogue rewrite: the write is not of accumulators", condition=_WHAT)
    return x.idx[0]


def _subst(e: kir.Expr, v: kir.Var, by: kir.Expr) -> kir.Expr:
    return kir.rewrite(e, lambda n: by if n is v else None)


def _prove_pair_slots(
    F: _EpilogueEnv, ploop: kir.For, qloop: kir.For, log: ProofLog
) -> Tuple[int, Tuple[int, int]]:
    """Register pair ``p`` of chunk ``q`` reads slot ``p // 2``: for every thread, chunk and
    pair, its two registers' columns are the columns of slot ``p // 2``'s first register and
    the one after it (the slot's two loads).  Evaluated over every (thread, q, p); returns
    the slot count."""
    P = _const(ploop.stop) - _const(ploop.start)
    if P % 2 or _const(ploop.start) != 0:
        raise ProofFailedError(f"epilogue rewrite: {P} register pairs per chunk (not even)", condition=_WHAT)
    threads = 128
    if rank(F.col_layout) != 2 or size(get(F.col_layout, 0)) != threads:
        raise ProofFailedError(
            "epilogue rewrite: the column map is not (128 threads, registers)", condition=_WHAT
        )
    # colexicographic order: the thread varies fastest
    cols = np.asarray(F.col_layout.eval_all(), dtype=np.int64).reshape((-1, threads)).T  # [thread, register]
    q = np.arange(_const(qloop.start), _const(qloop.stop)).reshape(-1, 1)
    p = np.arange(P).reshape(1, -1)
    env = {qloop.var.name: q, ploop.var.name: p}
    e0, e1 = (np.broadcast_to(evaluate.ev(_reg(x), env), (q.size, P)) for x in F.rhs.args)
    s0 = np.broadcast_to(
        evaluate.ev(_subst(_reg(F.rhs.args[0]), ploop.var, 2 * (ploop.var / 2)), env), e0.shape
    )
    bad = (cols[:, e0] != cols[:, s0]) | (cols[:, e1] != cols[:, s0] + 1)
    if bad.any():
        t, qi, pi = (int(x[0]) for x in np.nonzero(bad))
        raise ProofFailedError(
            f"epilogue rewrite: register pair {pi} of chunk {qi} (thread {t}) does not read the "
            f"columns of slot {pi // 2}",
            condition="bias pair slots",
            witness=(t, qi, pi),
        )
    # the chunk's last column as a q + b (the vector loads' guard)
    last = cols[:, e1].max(axis=(0, 2))
    a = int(last[1] - last[0]) if last.size > 1 else 0
    b = int(last[0]) - a * int(q[0, 0])
    if not np.array_equal(last, a * q[:, 0] + b):
        raise ProofFailedError(
            "epilogue rewrite: the chunks' last columns are not linear in q", condition=_WHAT
        )
    log.add(
        "equal",
        "bias pair slots: register pair p of each chunk holds the columns col(t, i) and "
        f"col(t, i) + 1 of slot p // 2's first register i, for every thread, chunk and pair; "
        f"chunk q's columns are at most {a} q + {b}",
        "exhaustive",
        int(bad.size),
    )
    return P // 2, (a, b)


def _slot_loads_ir(
    F: _EpilogueEnv, ploop: kir.For, qloop: kir.For, slots: int, hi: Tuple[int, int]
) -> Tuple[List[kir.Stmt], kir.Var]:
    """The chunk's bias, two columns per slot, into ``bvs``: slot ``s`` holds the column
    ``bcs`` of its first register and the one after it.  Where the bias is aligned to two
    elements and the chunk's last column ``n0 + a q + b`` (``hi = (a, b)``) is < N, one
    vector load per slot; else element by element under ``< N`` (0 past N)."""
    bvs = kir.Var("bvs", F.ctype)
    ptype = _PAIR_TYPES[F.btype]

    def slot_loop(vector: bool) -> kir.For:
        s = kir.Var("s")
        bcs = kir.Var("bcs")
        e_s = _subst(_reg(F.rhs.args[0]), ploop.var, 2 * s)
        coord = F.n0 + kir.LayoutApp(F.col_layout, (F.wt, e_s), "bias column of (thread, register)")
        stmts: List[kir.Stmt] = [
            kir.Decl(bcs, F.n0 + kir.call(F.colfn, t=F.wt, v=_code_register(e_s)), const=True)
        ]
        if vector:
            pv = kir.Var("bp", ptype)
            pair = kir.Claim(
                "bias pair load bias[n0 + col(thread, register) .. + 1]",
                addr_of(F.bias) + F.bw * coord,
                bounds=((coord + 1, F.N),),
                width=2 * F.bw,
            )
            stmts += [
                kir.Decl(pv, kir.Mem(F.bias + bcs, pair, vec=f"const {ptype}"), const=True),
                kir.Assign(kir.Index(bvs, (2 * s,)), kir.Call("lp_lo", (pv,), F.ctype)),
                kir.Assign(kir.Index(bvs, (2 * s + 1,)), kir.Call("lp_hi", (pv,), F.ctype)),
            ]
        else:
            for off in (0, 1):
                c = coord + off if off else coord
                at = bcs + off if off else bcs
                slot = 2 * s + off if off else 2 * s
                claim = kir.Claim(
                    "bias load bias[n0 + col(thread, register)]" + (" + 1" if off else ""),
                    addr_of(F.bias) + F.bw * c,
                    bounds=((c, F.N),),
                    width=F.bw,
                )
                ld: kir.Expr = kir.Mem(F.bias, claim, idx=at)
                if F.bconv is not None:
                    ld = kir.Call(F.bconv, (ld,), "float")
                stmts += [
                    kir.Assign(kir.Index(bvs, (slot,)), F.zero()),
                    kir.If(at.lt(F.N), kir.block(kir.Assign(kir.Index(bvs, (slot,)), ld))),
                ]
        return kir.For(s, kir.Const(0), kir.Const(slots), kir.block(*stmts), unroll=True)

    full = kir.Var("bfull", "bool")
    bptr = kir.Reinterpret("unsigned long long", F.bias)
    aligned = (bptr & kir.Const(2 * F.bw - 1, "unsigned long long")).eq(0)
    last = F.n0 + hi[0] * qloop.var + hi[1]
    return [
        kir.Decl(bvs, dims=(2 * slots,)),
        kir.Decl(full, aligned.and_(last.lt(F.N)), const=True),
        kir.If(
            full,
            kir.block(slot_loop(True)),
            kir.block(slot_loop(False)),
            comment="the chunk's bias: a vector per column pair where aligned and in bounds",
        ),
    ], bvs


def _paired_epilogue(F: _EpilogueEnv, body: kir.Block, log: ProofLog) -> Tuple[kir.Block, int, str, str]:
    """The tree with the chunk's bias pairs loaded before its pair loop and each buffer write
    ``act(acc[i] + bvs[2 (p / 2) + j])`` (``alpha * acc[i]`` with ``alpha_only``)."""
    ploop, qloop = _pair_loop(F, body)
    slots, hi = _prove_pair_slots(F, ploop, qloop, log)
    loads, bvs = _slot_loads_ir(F, ploop, qloop, slots, hi)
    p = ploop.var
    vals = []
    for j, x in enumerate(F.rhs.args):
        bv = kir.Index(bvs, (2 * (p / 2) + j,))
        vals.append(F.activate((x if F.alpha is None else F.alpha * x) + bv))
    write = replace(F.write, rhs=replace(F.rhs, args=tuple(vals)))
    new_ploop = replace(ploop, body=kir.rewrite(ploop.body, lambda n: write if n is F.write else None))

    def splice(node: Any) -> Any:
        if isinstance(node, kir.Block) and any(x is ploop for x in node.body):
            out: List[kir.Stmt] = []
            for x in node.body:
                out.extend(loads + [new_ploop] if x is ploop else [x])
            return kir.Block(tuple(out), node.bare)
        return None

    return kir.rewrite(body, splice), slots, p.name, qloop.var.name


def _written(F: _EpilogueEnv, form: str, at: str) -> str:
    """What the data-flow proofs say each written value is: ``form`` with the bias ``at``
    its row or column, under the activation (in s32: exact, ReLU as ``max(., 0)``)."""
    if F.ctype == "float":
        return f"{F.act}({form}{at})"
    inner = f"max({form}{at}, 0)" if F.cfg.activation == "relu" else f"{form}{at}"
    return inner + " in s32 (exact)"


def _slot_writes_ok(F: _EpilogueEnv, body: kir.Block, names: Any, slots: int, pname: str, qname: str) -> bool:
    """Every write of the slot array is a zero, or slot ``2 s + o`` of a load claimed at the
    column of register ``e(q, p = 2 s)`` (+ ``o``): an element load's claim (``+ 1`` for
    ``o = 1``) or the pair load's halves (``lp_lo`` 0, ``lp_hi`` 1).  Evaluated over every
    chunk and slot."""
    decls = {id(n.var): n.init for n in kir.walk(body) if isinstance(n, kir.Decl) and n.init is not None}
    q = np.arange(64).reshape(-1, 1)
    n_ok = 0
    for n in kir.walk(body):
        if not (isinstance(n, kir.Assign) and isinstance(n.lhs, kir.Index)):
            continue
        if not (isinstance(n.lhs.base, kir.Var) and n.lhs.base.name in names):
            continue
        rhs = n.rhs
        if isinstance(rhs, (kir.Const, kir.FloatLit)):
            continue
        if isinstance(rhs, kir.Call) and rhs.name in ("lp_lo", "lp_hi") and isinstance(rhs.args[0], kir.Var):
            off, mem = (0 if rhs.name == "lp_lo" else 1), decls.get(id(rhs.args[0]))
            want_what = "bias pair load"
        else:
            mem = rhs.args[0] if isinstance(rhs, kir.Call) and rhs.name == F.bconv else rhs
            off = 1 if isinstance(mem, kir.Mem) and mem.claim.what.endswith("+ 1") else 0
            want_what = "bias load"
        if not (isinstance(mem, kir.Mem) and mem.claim.what.startswith(want_what)):
            return False
        apps = [x for x in kir.walk(mem.claim.addr) if isinstance(x, kir.LayoutApp)]
        svars = {v.name for v in kir.walk(n.lhs.idx[0]) if isinstance(v, kir.Var)}
        if len(apps) != 1 or apps[0].layout is not F.col_layout or len(svars) != 1:
            return False
        sname = svars.pop()
        sv = np.arange(slots).reshape(1, -1)
        env = {sname: sv, qname: q}
        got_slot = np.broadcast_to(evaluate.ev(n.lhs.idx[0], env), (1, slots))
        got_reg = np.broadcast_to(evaluate.ev(apps[0].coords[1], env), (q.size, slots))
        want_reg = np.broadcast_to(
            evaluate.ev(_reg(F.rhs.args[0]), {qname: q, pname: 2 * sv}), (q.size, slots)
        )
        if not (np.array_equal(got_slot[0], 2 * sv[0] + off) and np.array_equal(got_reg, want_reg)):
            return False
        n_ok += 1
    return n_ok == 4


def _prove_pair_flow(
    F: _EpilogueEnv, body: kir.Block, slots: int, pname: str, qname: str, log: ProofLog
) -> None:
    """The paired data flow, on the tree: the one buffer write stores ``act(acc[i] +
    bvs[2 (p / 2) + j])`` for its registers ``j = 0, 1``, and ``bvs`` is written only by the
    slot loads (a vector load claimed at the slot's column and the one after it, or the two
    element loads claimed there)."""
    ws = _buffer_writes(body)
    wrhs = ws[0].rhs if len(ws) == 1 else None
    ok = isinstance(wrhs, kir.Call) and len(wrhs.args) == 2
    bvs_names = set()
    if isinstance(wrhs, kir.Call) and ok:
        for j, (a, x) in enumerate(zip(wrhs.args, F.rhs.args)):
            t = F.inactivate(a)
            acc = t.a if isinstance(t, kir.Bin) else None
            if F.alpha is not None and isinstance(acc, kir.Bin) and acc.op == "*" and acc.a is F.alpha:
                acc = acc.b
            bv = t.b if isinstance(t, kir.Bin) else None
            ok = ok and isinstance(t, kir.Bin) and t.op == "+" and acc is x
            if ok and isinstance(bv, kir.Index) and isinstance(bv.base, kir.Var):
                bvs_names.add(bv.base.name)
                idx = evaluate.ev(bv.idx[0], {pname: np.arange(2 * slots)})
                ok = bool(
                    np.array_equal(np.broadcast_to(idx, (2 * slots,)), 2 * (np.arange(2 * slots) // 2) + j)
                )
            else:
                ok = False
    loads = [
        n
        for n in kir.walk(body)
        if isinstance(n, kir.Mem) and n.claim.what.startswith(("bias load", "bias pair load"))
    ]
    kinds = sorted(n.claim.what for n in loads)
    want = sorted(
        [
            "bias pair load bias[n0 + col(thread, register) .. + 1]",
            "bias load bias[n0 + col(thread, register)]",
            "bias load bias[n0 + col(thread, register)] + 1",
        ]
    )
    ok = ok and len(bvs_names) == 1 and _slot_writes_ok(F, body, bvs_names, slots, pname, qname)
    if not ok or kinds != want:
        raise ProofFailedError(
            "epilogue: a written value is not act(accumulator + its bias slot)",
            condition="fused epilogue data flow",
        )
    form = "alpha * acc[i] + bias" if F.alpha is not None else "acc[i] + bias"
    log.add(
        "equal",
        f"fused epilogue data flow: each register pair written to the staging buffer is "
        f"{_written(F, form, '[n0 + col(t, i)]')}, the bias read once per column pair of the "
        f"chunk ({slots} slots: a "
        f"{2 * F.bw}-byte vector where aligned and both columns < N, else each column under < N) "
        f"and each register reading its own column's slot; the bias {F.cfg.bias_dtype}"
        + (f", converted by {F.bconv}" if F.bconv else ""),
        "exhaustive",
        2 * slots,
    )


def _prove_data_flow(F: _EpilogueEnv, body: kir.Block, log: ProofLog) -> None:
    """The data flow, on the tree: the one buffer write stores act(acc[i] + bv_j), bv_j
    loaded under the claim of register i's column (or row)."""
    ab = F.ab
    w2 = _buffer_writes(body)
    w2rhs = w2[0].rhs if len(w2) == 1 else None

    def reads_acc(a: Any, x: Any) -> bool:
        t = F.inactivate(a)
        if not isinstance(t, kir.Bin):
            return False
        if not ab and F.alpha is not None:  # (alpha * x) + bv
            return (
                t.op == "+" and isinstance(t.a, kir.Bin) and t.a.op == "*" and t.a.a is F.alpha and t.a.b is x
            )
        if not ab:
            return t.op == "+" and t.a is x
        # ((alpha * x) + (beta * cv)) + bv
        return (
            t.op == "+"
            and isinstance(t.a, kir.Bin)
            and isinstance(t.a.a, kir.Bin)
            and t.a.a.op == "*"
            and t.a.a.a is ab["alpha"]
            and t.a.a.b is x
        )

    ok = isinstance(w2rhs, kir.Call) and all(reads_acc(a, x) for a, x in zip(w2rhs.args, F.rhs.args))
    loads = [n for n in kir.walk(body) if isinstance(n, kir.Mem) and n.claim.what.startswith("bias load")]
    cins = [n for n in kir.walk(body) if isinstance(n, kir.Mem) and n.claim.what.startswith("C input load")]
    if not ok or len(loads) != 2 or len(cins) != (2 if ab else 0):
        raise ProofFailedError(
            "epilogue: a written value is not act(accumulator + its bias)",
            condition="fused epilogue data flow",
        )
    cref = (
        "Cin[bidx * ldcib + (m0 + row(t, i)) * ldci + n0 + col(t, i)]"
        if "bidx" in ab
        else "Cin[m0 + row(t, i), n0 + col(t, i)]"
    )
    form = (
        f"alpha * acc[i] + beta * {cref} + bias"
        if ab
        else ("alpha * acc[i] + bias" if F.alpha is not None else "acc[i] + bias")
    )
    at = "[m0 + row(t, i)]" if F.along_m else "[n0 + col(t, i)]"
    written = _written(F, form, at)
    log.add(
        "equal",
        f"fused epilogue data flow: each register pair written to the staging buffer is "
        f"{written}, the loads claimed at the row and column of their own "
        f"register (the wgmma atom's C layout) and guarded by < M, < N; the bias "
        f"{F.cfg.bias_dtype}" + (f", converted by {F.bconv}" if F.bconv else ""),
        "exhaustive",
        2,
    )


def _epilogue_kernel(
    base: kir.Kernel, F: _EpilogueEnv, body: kir.Block, name: str, paired: bool = False
) -> kir.Kernel:
    """The rewritten kernel: the bias (and alpha, beta, the C input) parameters, the lowered
    maps, the activation helpers and the description added."""
    ab, cfg = F.ab, F.cfg
    params = base.params + ((f"const {F.btype}* __restrict__", F.bias),)
    if F.alpha is not None:
        params += ((F.ctype, F.alpha),)
    if ab:
        params += (
            (F.ctype, ab["alpha"]),
            (F.ctype, ab["beta"]),
            ("const lp_out_t* __restrict__", ab["Cin"]),
            ("long long", ab["ldci"]),
        )
        if "ldcib" in ab:
            params += (("long long", ab["ldcib"]),)
    bname = "bias[m]" if F.along_m else "bias[n]"
    cin_s = "Cin[bidx]" if "ldcib" in ab else "Cin"
    what = (
        f"alpha * A @ B + beta * {cin_s} + {bname}"
        if ab
        else (f"alpha * A @ B + {bname}" if F.alpha is not None else f"A @ B + {bname}")
    )
    arith = "f32" if F.ctype == "float" else "s32 (exact)"
    descr = base.description + (
        f"fused epilogue: C = {cfg.activation}({what}), bias {cfg.bias_dtype}, in {arith}",
    )
    return replace(
        base,
        name=name,
        body=body,
        params=params,
        functions=base.functions + F.fns,
        helpers=("act",)
        + (("bias2",) if paired else ())
        + (("prefetch",) if BIAS_PREFETCH else ())
        + base.helpers,
        description=descr,
        sizes={**base.sizes, "float": 4, F.btype: F.bw},
    )


def _prefetch_ir(F: _EpilogueEnv) -> List[kir.Stmt]:
    """Threads ``j = 0 .. L`` of the warpgroup prefetch the line holding the bias at offset
    ``min(j * 128 / bw, extent - 1)`` from the tile's first column (or its warpgroup's first
    row): ``L`` lines of 128 bytes cover the tile's ``extent * bw`` bytes, one more where
    the first is not aligned; each address claimed in bounds under its guard."""
    if F.along_m:
        origin, extent, bound = F.rows["m0"] + 64 * F.rows["cg"], 64, F.rows["M"]
        what = "bias prefetch bias[m0 + 64 cg + min(t * 128 / bw, 63)]"
    else:
        origin, extent, bound = F.n0, F.cfg.bn, F.N
        what = f"bias prefetch bias[n0 + min(t * 128 / bw, {F.cfg.bn - 1})]"
    step = 128 // F.bw
    lines = -(-extent // step)
    pf = kir.Var("pfb")
    coord = origin + kir.Call("min", (F.wt * step, kir.Const(extent - 1)), "int")
    claim = kir.Claim(what, addr_of(F.bias) + F.bw * coord, bounds=((coord, bound),), width=F.bw)
    fetch = kir.Eval(kir.Call("lp_prefetch_l1", (kir.AddrOf(kir.Mem(F.bias, claim, idx=pf)),), "void"))
    return [
        kir.If(
            F.wt.le(lines),
            kir.block(kir.Decl(pf, coord, const=True), kir.If(pf.lt(bound), kir.block(fetch))),
            comment="the tile's bias lines into L1 ahead of its epilogue",
        )
    ]


def epilogue_ir(
    base: kir.Kernel, cfg: EpilogueConfig, prob: GemmProblem, log: ProofLog, name: str
) -> Tuple[kir.Kernel, kir.ProvenFn]:
    """The kernel with the fused bias + activation (see the module docstring): the buffer
    write of the base kernel's staged epilogue replaced by the fused statements, the data
    flow proven on the rewritten tree."""
    F = _declare_epilogue(base, cfg, prob, log)
    paired = BIAS_PAIRS and not F.along_m and not F.ab
    slots, pname, qname = 0, "", ""
    if paired:
        body, slots, pname, qname = _paired_epilogue(F, base.body, log)
    else:
        stmts = _fused_write_ir(F)
        write = F.write

        def splice(node: Any) -> Any:
            if isinstance(node, kir.Block) and any(s is write for s in node.body):
                out: List[kir.Stmt] = []
                for s in node.body:
                    out.extend(stmts if s is write else [s])
                return kir.Block(tuple(out), node.bare)
            return None

        body = kir.rewrite(base.body, splice)
    if BIAS_PREFETCH:
        origin = F.rows["m0"] if F.along_m else F.n0
        pre = _prefetch_ir(F)

        def ahead(node: Any) -> Any:  # after the declaration of the tile's origin
            if isinstance(node, kir.Block) and any(
                isinstance(x, kir.Decl) and x.var is origin for x in node.body
            ):
                out: List[kir.Stmt] = []
                for x in node.body:
                    out.append(x)
                    if isinstance(x, kir.Decl) and x.var is origin:
                        out.extend(pre)
                return kir.Block(tuple(out), node.bare)
            return None

        body = kir.rewrite(body, ahead)
    if paired:
        _prove_pair_flow(F, body, slots, pname, qname, log)
    else:
        _prove_data_flow(F, body, log)
    return _epilogue_kernel(base, F, body, name, paired), F.colfn


_MEMO: Dict[Tuple[EpilogueConfig, GemmProblem], GemmKernel] = {}


def generate_epilogue(
    config: EpilogueConfig, problem: Optional[GemmProblem] = None, *, memo: bool = True
) -> GemmKernel:
    """Build, prove and emit the kernel with the fused bias + activation."""
    cfg = config.validate()
    prob = (problem or GemmProblem("k", "k")).validate()
    if memo and (cfg, prob) in _MEMO:
        return _MEMO[(cfg, prob)]
    check_compute(cfg, prob)
    base = generate_sm90(cfg.base, prob, memo=memo)
    log = ProofLog(base_plan_proofs(base, cfg.base))
    extra = "" if (cfg.bias_axis, cfg.bias_dtype) == ("n", "f32") else f"{cfg.bias_axis}{cfg.bias_dtype}"
    extra += "alpha_only" if cfg.alpha_only else ""
    h = hashlib.sha256(f"{EPILOGUE_VERSION}{cfg}{prob}{extra}".encode()).hexdigest()[:10]
    name = f"lp_gemm_sm90_ep_{prob.key()}_{h}"
    ir, _fn = epilogue_ir(base.ir, cfg, prob, log, name)
    tx = next(n.nbytes for n in kir.walk(ir.body) if isinstance(n, kir.MbarExpectTx))

    def protocol(k: kir.Kernel) -> int:
        return prove_ws_protocol(k, cfg.base, tx, log, cfg.base.cluster)

    src = finish(ir, log, f"proven before emission ({cfg.key()}, {prob.key()})", protocol)
    k = GemmKernel(base.config, prob, src, name, base.threads, base.smem_bytes, log, dict(base.swizzles), ir)
    if memo:
        _MEMO[(cfg, prob)] = k
    return k
