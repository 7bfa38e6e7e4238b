"""Fused epilogue for the mma.sync kernel: ``C = act(A @ B + bias)`` in its own pair stores.

:class:`MmaEpilogueConfig` adds a bias (one value per column of C, or with
``bias_axis="m"`` one per row; f32, f16 or bf16, converted to f32) and an activation
(``relu``, ``silu``, ``gelu``, or ``none``: the bias alone) to an mma.sync configuration --
what the decode rule runs for few output rows (:data:`~layoutproof.gpu.host.rule.MMA_DECODE_RULE`).
Without it such a call stored an f32 plane that a second kernel turned into C
(:class:`~layoutproof.gpu.kernels.splitk.FixupEpilogueConfig`); here the one kernel does it.

The kernel is :func:`~layoutproof.gpu.kernels.mma_sync.generate`'s, rewritten on its IR: the
epilogue stores each accumulator pair ``(acc[2h], acc[2h + 1])`` at ``(r, c)`` and ``(r, c +
1)``; before the stores the pair's biases ``bv0 = bias[c]`` (guarded ``c < N``) and ``bv1 =
bias[c + 1]`` (``c + 1 < N``; along M both are ``bias[r]`` under ``r < M``) are loaded, and
every store of the pair writes ``act(acc[2h] + bv0)`` and ``act(acc[2h + 1] + bv1)``.  Then
every obligation of the IR is discharged again on the rewritten tree.  What the fusion adds
is proven before emission:

* each bias load's claim is written with the column (or row) coordinate of the store it
  feeds -- the proven C map of the kernel (``n0 + col(lane, v, warp, block)``) -- so the
  obligations prove that the bias a value gets is the one of its own column, in bounds;
* the data flow, checked on the tree: the vector store and both scalar stores of a pair
  write ``act(acc + bv)`` with ``bv`` the load claimed at that store's column (row).

>>> from layoutproof.gpu.config import GemmConfig
>>> dec = GemmConfig(bm=32, bn=32, bk=128, warps_m=2, warps_n=2, stages=8)
>>> MmaEpilogueConfig(dec, "gelu").key()
'32x32x128_w2x2_s8_auto_g8_biasgelu'
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Tuple

from ..config import GemmConfig, GemmProblem
from ..errors import GemmConfigError, ProofFailedError
from ..proof import kir
from ..proof.record import ProofLog
from .epilogue import BIAS_DTYPES, check_epilogue_fields
from .mma_sync import generate
from .toolkit import STORE2, GemmKernel, addr_of, finish
from .variant import BaseKernelFields, base_plan_proofs

__all__ = ["MmaEpilogueConfig", "generate_mma_epilogue", "MMA_EPILOGUE_VERSION"]

MMA_EPILOGUE_VERSION = "mma-epilogue-1"
_STORE = "C accumulator store"


@dataclass(frozen=True)
class MmaEpilogueConfig(BaseKernelFields):
    """The mma.sync kernel ``base`` with ``C = act(A @ B + bias)`` fused into its pair stores
    (see the module docstring); f16 and bf16 operands, no alpha/beta (those calls keep the
    one-plane fix-up)."""

    base: GemmConfig
    activation: str = "none"
    bias_axis: str = "n"
    bias_dtype: str = "f32"

    #: no C input: alpha/beta calls run the one-plane fix-up's epilogue instead
    alpha_beta = False

    def key(self) -> str:
        return (
            f"{self.base.key()}_bias{self.activation}"
            + ("_biasm" if self.bias_axis == "m" else "")
            + (f"_b{self.bias_dtype}" if self.bias_dtype != "f32" else "")
        )

    def validate(self) -> "MmaEpilogueConfig":
        if not isinstance(self.base, GemmConfig):
            raise GemmConfigError(
                f"MmaEpilogueConfig: base must be a GemmConfig (the mma.sync kernel), got "
                f"{type(self.base).__name__}"
            )
        self.base.validate()
        check_epilogue_fields(
            "MmaEpilogueConfig", self.activation, self.bias_axis, self.bias_dtype, ("f32", "f16", "bf16")
        )
        return self


def _stores(body: kir.Block) -> Tuple[Any, Any, Any]:
    """The pair's three stores: the 2-element vector store, and the scalar stores of columns
    c and c + 1."""
    found: List[Any] = [
        n
        for n in kir.walk(body)
        if isinstance(n, kir.Assign) and isinstance(n.lhs, kir.Mem) and n.lhs.claim.what.startswith(_STORE)
    ]
    vec = [s for s in found if s.lhs.vec is not None]
    s0 = [s for s in found if s.lhs.vec is None and s.lhs.claim.what.endswith("(r, c + 0)")]
    s1 = [s for s in found if s.lhs.vec is None and s.lhs.claim.what.endswith("(r, c + 1)")]
    if len(found) != 3 or len(vec) != 1 or len(s0) != 1 or len(s1) != 1:
        raise ProofFailedError(
            "mma epilogue: expected the pair's vector store and its two scalar stores",
            condition="mma epilogue rewrite",
        )
    return vec[0], s0[0], s1[0]


_PACKS = {name for _, p2, p1 in STORE2.values() for name in (p2, p1) if name is not None}


def _values(store: Any) -> List[Any]:
    """The values a store writes, in order: its pack's arguments (a f32 scalar store writes
    its value unpacked)."""
    v = store.rhs
    return list(v.args) if isinstance(v, kir.Call) and v.name in _PACKS else [v]


def _pair_block(body: kir.Block, store: Any) -> Tuple[kir.Block, kir.Var, kir.Var]:
    """The pair loop's block (declarations of ``r`` and ``c``, then the guarded stores)."""
    for n in kir.walk(body):
        if isinstance(n, kir.Block) and any(s is store for s in kir.walk(n)):
            decls = {d.var.name: d.var for d in n.body if isinstance(d, kir.Decl)}
            if "r" in decls and "c" in decls:
                return n, decls["r"], decls["c"]
    raise ProofFailedError("mma epilogue: no pair block declares r and c", condition="mma epilogue rewrite")


class _Fused:
    """What the rewrite builds and the data-flow check reads back."""

    def __init__(self, cfg: MmaEpilogueConfig, M: kir.Var, N: kir.Var) -> None:
        self.cfg = cfg
        btype, bw, bconv = BIAS_DTYPES[cfg.bias_dtype]
        self.btype, self.bw, self.bconv = btype, bw, bconv
        self.bias = kir.Var("bias", f"const {btype}*")
        self.act = f"lp_act_{cfg.activation}"
        self.M, self.N = M, N
        self.loads: List[Tuple[kir.Var, Any]] = []  # (bv, the coordinate its claim reads)

    def load(self, j: int, idx: kir.Expr, coord: kir.Expr, bound: kir.Var, what: str) -> List[kir.Stmt]:
        bv = kir.Var(f"bv{j}", "float")
        claim = kir.Claim(what, addr_of(self.bias) + self.bw * coord, bounds=((coord, bound),), width=self.bw)
        ld: kir.Expr = kir.Mem(self.bias, claim, idx=idx)
        if self.bconv is not None:
            ld = kir.Call(self.bconv, (ld,), "float")
        self.loads.append((bv, coord))
        return [kir.Decl(bv, kir.FloatLit("0.f")), kir.If(idx.lt(bound), kir.block(kir.Assign(bv, ld)))]


def _rewrite(base: kir.Kernel, cfg: MmaEpilogueConfig) -> Tuple[kir.Kernel, _Fused, Tuple[Any, Any]]:
    vec, s0, s1 = _stores(base.body)
    x, y = _values(vec)
    if _values(s0) != [x] or _values(s1) != [y]:
        raise ProofFailedError(
            "mma epilogue: the scalar stores do not write the vector store's registers",
            condition="mma epilogue rewrite",
        )
    block, r, c = _pair_block(base.body, vec)
    M = next(v for _, v in base.params if v.name == "M")
    N = next(v for _, v in base.params if v.name == "N")
    F = _Fused(cfg, M, N)
    row = s0.lhs.claim.bounds[0][0]
    col0, col1 = s0.lhs.claim.bounds[1][0], s1.lhs.claim.bounds[1][0]
    if cfg.bias_axis == "m":
        loads = F.load(0, r, row, M, "bias load bias[m0 + row(lane, v, warp, block)]")
        bv0 = bv1 = F.loads[0][0]
    else:
        what = "bias load bias[n0 + col(lane, v, warp, block) + {}]"
        loads = F.load(0, c, col0, N, what.format(0)) + F.load(1, c + 1, col1, N, what.format(1))
        bv0, bv1 = F.loads[0][0], F.loads[1][0]
    fx = kir.Call(F.act, (x + bv0,), "float")
    fy = kir.Call(F.act, (y + bv1,), "float")

    def splice(node: Any) -> Any:
        if node is x:
            return fx
        if node is y:
            return fy
        return None

    def place(node: Any) -> Any:
        if node is block:
            out: List[kir.Stmt] = []
            for s in node.body:
                out.append(s)
                if isinstance(s, kir.Decl) and s.var is c:
                    out.extend(loads)
            return kir.Block(tuple(kir.rewrite(s, splice) for s in out), node.bare)
        return None

    body = kir.rewrite(base.body, place)
    return replace(base, body=body), F, (fx, fy)


def _prove_data_flow(k: kir.Kernel, F: _Fused, fxy: Tuple[Any, Any], log: ProofLog) -> None:
    """Each of the pair's stores writes ``act(acc + bv)`` with ``bv`` loaded under the claim
    of that store's own column (row): read back from the tree."""
    vec, s0, s1 = _stores(k.body)
    fx, fy = fxy
    ok = _values(vec) == [fx, fy] and _values(s0) == [fx] and _values(s1) == [fy]
    loads = [n for n in kir.walk(k.body) if isinstance(n, kir.Mem) and n.claim.what.startswith("bias load")]
    along_m = F.cfg.bias_axis == "m"
    want = [s0.lhs.claim.bounds[0][0]] if along_m else [s0.lhs.claim.bounds[1][0], s1.lhs.claim.bounds[1][0]]
    ok = ok and len(loads) == len(want) and [ld.claim.bounds[0][0] for ld in loads] == want
    bvs = [bv for bv, _ in F.loads]
    for f, bv in zip((fx, fy), (bvs[0], bvs[-1])):
        t = f.args[0]
        ok = ok and f.name == F.act and isinstance(t, kir.Bin) and t.op == "+" and t.b is bv
    if not ok:
        raise ProofFailedError(
            "mma epilogue: a stored value is not act(accumulator + the bias of its own column)",
            condition="fused epilogue data flow",
        )
    at = "bias[m0 + row(lane, v, warp, block)]" if along_m else "bias[n0 + col(lane, v, warp, block)]"
    log.add(
        "equal",
        f"fused epilogue data flow (mma.sync pair stores): the vector and both scalar stores of "
        f"a pair write {F.act}(acc[2h + e] + {at}), each bias load claimed at the coordinate of "
        f"the store it feeds and guarded by < {'M' if along_m else 'N'}; the bias "
        f"{F.cfg.bias_dtype}" + (f", converted by {F.bconv}" if F.bconv else ""),
        "exhaustive",
        3,
    )


_MEMO: Dict[Tuple[MmaEpilogueConfig, GemmProblem], GemmKernel] = {}


def generate_mma_epilogue(
    config: MmaEpilogueConfig, problem: Optional[GemmProblem] = None, *, memo: bool = True
) -> GemmKernel:
    """Build, prove and emit the mma.sync kernel with the fused bias + activation."""
    cfg = config.validate()
    prob = (problem or GemmProblem()).validate()
    if prob.dtype not in ("f16", "bf16") or prob.out not in ("f16", "bf16", "f32"):
        raise GemmConfigError(
            f"MmaEpilogueConfig: f16 or bf16 operands into f16, bf16 or f32 (got {prob.dtype} -> {prob.out})"
        )
    if memo and (cfg, prob) in _MEMO:
        return _MEMO[(cfg, prob)]
    base = generate(cfg.base, prob, memo=memo)
    log = ProofLog(base_plan_proofs(base, None))
    h = hashlib.sha256(f"{MMA_EPILOGUE_VERSION}{cfg.key()}{prob}".encode()).hexdigest()[:10]
    name = f"lp_gemm_ep_{prob.key()}_{h}"
    ir, F, fxy = _rewrite(base.ir, cfg)
    _prove_data_flow(ir, F, fxy, log)
    bname = "bias[m]" if cfg.bias_axis == "m" else "bias[n]"
    descr = (
        f"fused epilogue in the pair stores: C = {cfg.activation}(A @ B + {bname}), "
        f"bias {cfg.bias_dtype}, in f32"
    )
    ir = replace(
        ir,
        name=name,
        params=ir.params + ((f"const {F.btype}* __restrict__", F.bias),),
        helpers=("act",) + ir.helpers,
        description=ir.description + (descr,),
        sizes={**ir.sizes, "float": 4, F.btype: F.bw},
    )
    src = finish(ir, log, f"proven before emission ({cfg.key()}, {prob.key()})")
    k = GemmKernel(cfg, prob, src, name, base.threads, base.smem_bytes, log, dict(base.swizzles), ir)
    if memo:
        _MEMO[(cfg, prob)] = k
    return k
