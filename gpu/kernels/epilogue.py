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

>>> from layoutproof.gpu.kernels.wgmma import Sm90Config
>>> EpilogueConfig(Sm90Config(bm=64, bn=128, stages=8, loader="tma", schedule="ws"), "relu").key()
'sm90_64x128x64_s8_g8_tma_ws_biasrelu'
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional, Tuple

from layoutproof import Layout, composition

from ..config import OUT_DTYPES, GemmProblem
from ..errors import GemmConfigError, ProofFailedError
from ..isa import gmma
from ..proof import kir, lower
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
]

ACTIVATIONS = ("none", "relu", "silu", "gelu")
#: the bias vector's axis (one value per column ``"n"`` or per row ``"m"`` of C) and its
#: element types (converted to f32 in the kernel): CUDA type, bytes, conversion to float
BIAS_AXES = ("n", "m")
BIAS_DTYPES: Dict[str, Tuple[str, int, Optional[str]]] = {
    "f32": ("float", 4, None),
    "f16": ("__half", 2, "__half2float"),
    "bf16": ("__nv_bfloat16", 2, "__bfloat162float"),
}
EPILOGUE_VERSION = "epilogue-1"


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

    @property
    def cluster(self) -> int:
        return self.base.cluster

    def key(self) -> str:
        return (
            f"{self.base.key()}_bias{self.activation}"
            + ("_ab" if self.alpha_beta else "")
            + ("_biasm" if self.bias_axis == "m" else "")
            + (f"_b{self.bias_dtype}" if self.bias_dtype != "f32" else "")
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
        if self.activation not in ACTIVATIONS:
            raise GemmConfigError(
                f"EpilogueConfig: activation={self.activation!r} must be one of {ACTIVATIONS}"
            )
        if self.bias_axis not in BIAS_AXES:
            raise GemmConfigError(f"EpilogueConfig: bias_axis={self.bias_axis!r} must be one of {BIAS_AXES}")
        if self.bias_dtype not in BIAS_DTYPES:
            raise GemmConfigError(
                f"EpilogueConfig: bias_dtype={self.bias_dtype!r} must be one of {tuple(BIAS_DTYPES)}"
            )
        return self


def acc_row_layout(bn: int, dtype: str) -> Any:
    """(thread of the warpgroup, accumulator register) -> row of the warpgroup's 64-row
    slice of the C tile, from the wgmma atom's C layout."""
    atom = gmma.sm90_atom(bn, dtype, "SS")
    return composition(Layout((64, bn), (1, 0)), atom.c_layout)


#: the conversion of an output-type element to float, per output type
_TO_FLOAT = {"f16": "__half2float", "bf16": "__bfloat162float", "f32": None}


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


def epilogue_ir(
    base: kir.Kernel, cfg: EpilogueConfig, prob: GemmProblem, log: ProofLog, name: str
) -> Tuple[kir.Kernel, kir.ProvenFn]:
    """The kernel with the fused bias + activation (see the module docstring)."""
    # Long by design: one rewrite of the base kernel's epilogue write: the bias, activation,
    # alpha/beta and C-input statements replace a single IR node and share the variables found in the
    # base IR above.
    writes = _find(
        base.body,
        lambda n: (
            isinstance(n, kir.Assign)
            and isinstance(n.lhs, kir.Mem)
            and n.lhs.claim.what.startswith("epilogue buffer write")
        ),
        "epilogue buffer write",
    )
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
    along_m = cfg.bias_axis == "m"
    if cfg.alpha_beta or along_m:  # the register's row: the C input's, or the bias's
        m0 = find_decl(loops[-1].body, "m0", _WHAT, _WHAT)
        cg = find_decl(base.body, "cg", _WHAT, _WHAT)
        row_layout = acc_row_layout(cfg.bn, prob.dtype)
        rlow = lower.lower(row_layout, ("t", "v"), name="lp_acc_row", log=log)
        rowfn = kir.from_lowered(rlow)
        fns.append(rowfn)
        rows = dict(
            m0=m0,
            cg=cg,
            M=find_param(base, "M", _WHAT, _WHAT),
            row_layout=row_layout,
            rowfn=rowfn,
        )
    if cfg.alpha_beta:
        ab = dict(
            rows,
            alpha=kir.Var("alpha", "float"),
            beta=kir.Var("beta", "float"),
            Cin=kir.Var("Cin", "const lp_out_t*"),
            ldci=kir.Var("ldci", "long long"),
        )
        if prob.batch:  # the tile's batch (declared with m0, n0) and the C input's batch stride
            bidx = find_decl(loops[-1].body, "bidx", _WHAT, _WHAT)
            ab.update(bidx=bidx, ldcib=kir.Var("ldcib", "long long"))
    btype, bw, bconv = BIAS_DTYPES[cfg.bias_dtype]
    bias = kir.Var("bias", f"const {btype}*")
    act = f"lp_act_{cfg.activation}"
    stmts: List[kir.Stmt] = []
    vals = []
    for j, x in enumerate(rhs.args):
        if not isinstance(x, kir.Index):
            raise ProofFailedError(
                "epilogue rewrite: the write is not of accumulators", condition="epilogue rewrite"
            )
        e = x.idx[0]
        bv = kir.Var(f"bv{j}", "float")
        bc = kir.Var(f"bc{j}")
        rr = kir.Var(f"rr{j}")
        coord = n0 + kir.LayoutApp(col_layout, (wt, e), "bias column of (thread, register)")
        if rows:
            rcoord = (
                rows["m0"]
                + 64 * rows["cg"]
                + kir.LayoutApp(rows["row_layout"], (wt, e), "row of (thread, register)")
            )
            stmts.append(
                kir.Decl(
                    rr,
                    rows["m0"] + 64 * rows["cg"] + kir.call(rows["rowfn"], t=wt, v=_code_row_register(e)),
                    const=True,
                )
            )
        if ab or not along_m:
            stmts.append(kir.Decl(bc, n0 + kir.call(colfn, t=wt, v=_code_register(e)), const=True))
        if along_m:
            claim = kir.Claim(
                "bias load bias[m0 + row(thread, register)]",
                addr_of(bias) + bw * rcoord,
                bounds=((rcoord, rows["M"]),),
                width=bw,
            )
            bguard, bidx = rr.lt(rows["M"]), rr
        else:
            claim = kir.Claim(
                "bias load bias[n0 + col(thread, register)]",
                addr_of(bias) + bw * coord,
                bounds=((coord, N),),
                width=bw,
            )
            bguard, bidx = bc.lt(N), bc
        bload: kir.Expr = kir.Mem(bias, claim, idx=bidx)
        if bconv is not None:
            bload = kir.Call(bconv, (bload,), "float")
        stmts += [
            kir.Decl(bv, kir.FloatLit("0.f")),
            kir.If(bguard, kir.block(kir.Assign(bv, bload))),
        ]
        if not ab:
            vals.append(kir.Call(act, (x + bv,), "float"))
            continue
        # alpha * acc + beta * Cin[row, col] + bias: Cin read at the register's own (row, col)
        ob = OUT_DTYPES[prob.out][1]
        cv = kir.Var(f"cv{j}", "float")
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
        tof = _TO_FLOAT[prob.out]
        stmts += [
            kir.Decl(cv, kir.FloatLit("0.f")),
            kir.If(
                rr.lt(ab["M"]),
                kir.block(
                    kir.If(
                        bc.lt(N),
                        kir.block(kir.Assign(cv, cin if tof is None else kir.Call(tof, (cin,), "float"))),
                    )
                ),
            ),
        ]
        vals.append(kir.Call(act, (ab["alpha"] * x + ab["beta"] * cv + bv,), "float"))
    new_write = replace(write, rhs=replace(rhs, args=tuple(vals)))
    stmts.append(new_write)

    def fn(node: Any) -> Any:
        if isinstance(node, kir.Block) and any(s is write for s in node.body):
            out: List[kir.Stmt] = []
            for s in node.body:
                out.extend(stmts if s is write else [s])
            return kir.Block(tuple(out), node.bare)
        return None

    body = kir.rewrite(base.body, fn)
    # the data flow, on the tree: the one buffer write stores act(acc[i] + bv_j), bv_j loaded
    # under the claim of register i's column
    w2 = [
        n
        for n in kir.walk(body)
        if isinstance(n, kir.Assign)
        and isinstance(n.lhs, kir.Mem)
        and n.lhs.claim.what.startswith("epilogue buffer write")
    ]
    w2rhs = w2[0].rhs if len(w2) == 1 else None

    def reads_acc(a: Any, x: Any) -> bool:
        if not (isinstance(a, kir.Call) and a.name == act and isinstance(a.args[0], kir.Bin)):
            return False
        t = a.args[0]
        if not ab:
            return t.op == "+" and t.a is x
        # ((alpha * x) + (beta * cv)) + bv
        return (
            t.op == "+"
            and isinstance(t.a, kir.Bin)
            and isinstance(t.a.a, kir.Bin)
            and t.a.a.op == "*"
            and t.a.a.b is x
        )

    ok = isinstance(w2rhs, kir.Call) and all(reads_acc(a, x) for a, x in zip(w2rhs.args, rhs.args))
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
    form = f"alpha * acc[i] + beta * {cref} + bias" if ab else "acc[i] + bias"
    at = "[m0 + row(t, i)]" if along_m else "[n0 + col(t, i)]"
    log.add(
        "equal",
        f"fused epilogue data flow: each register pair written to the staging buffer is "
        f"{act}({form}{at}), the loads claimed at the row and column of their own "
        f"register (the wgmma atom's C layout) and guarded by < M, < N; the bias "
        f"{cfg.bias_dtype}" + (f", converted by {bconv}" if bconv else ""),
        "exhaustive",
        2,
    )
    params = base.params + ((f"const {btype}* __restrict__", bias),)
    if ab:
        params += (
            ("float", ab["alpha"]),
            ("float", ab["beta"]),
            ("const lp_out_t* __restrict__", ab["Cin"]),
            ("long long", ab["ldci"]),
        )
        if "ldcib" in ab:
            params += (("long long", ab["ldcib"]),)
    bname = "bias[m]" if along_m else "bias[n]"
    cin_s = "Cin[bidx]" if "ldcib" in ab else "Cin"
    what = f"alpha * A @ B + beta * {cin_s} + {bname}" if ab else f"A @ B + {bname}"
    descr = base.description + (
        f"fused epilogue: C = {cfg.activation}({what}), bias {cfg.bias_dtype}, in f32",
    )
    k = replace(
        base,
        name=name,
        body=body,
        params=params,
        functions=base.functions + tuple(fns),
        helpers=("act",) + base.helpers,
        description=descr,
        sizes={**base.sizes, "float": 4, btype: bw},
    )
    return k, colfn


_MEMO: Dict[Tuple[EpilogueConfig, GemmProblem], GemmKernel] = {}


def generate_epilogue(
    config: EpilogueConfig, problem: Optional[GemmProblem] = None, *, memo: bool = True
) -> GemmKernel:
    """Build, prove and emit the kernel with the fused bias + activation."""
    cfg = config.validate()
    prob = (problem or GemmProblem("k", "k")).validate()
    if memo and (cfg, prob) in _MEMO:
        return _MEMO[(cfg, prob)]
    base = generate_sm90(cfg.base, prob, memo=memo)
    log = ProofLog(base_plan_proofs(base, cfg.base))
    extra = "" if (cfg.bias_axis, cfg.bias_dtype) == ("n", "f32") else f"{cfg.bias_axis}{cfg.bias_dtype}"
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
