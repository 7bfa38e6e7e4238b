"""The tiny-shape GEMM: one launch, operands read in place with their strides.

For products too small to fill a tiled kernel (7x13x17, 1x1x1, 3x5x1000), the cost of the
tiled path is its fixed part: padded copies of operands whose leading dimension or base
breaks the 16-byte contract, the pipeline prologue, a 128x256 tile of which a few elements
are used.  :func:`generate` builds a kernel with none of it: each warp computes a 16 x BN
block of C with ``mma.sync.m16n8k16`` (f32 accumulation), its fragments loaded straight
from global memory element by element, at any element strides (``A[m * sam + k * sak]``),
each load guarded by the bounds (zero outside, so K needs no padding); the ``kw`` warps of a
block split K (warp ``w`` takes the k-steps ``w, w + kw, ...``; its loop unrolls ``ku`` of
them, so their loads are in flight together) and their partial sums meet in shared memory,
added in warp order by warp 0, which stores C at its own element strides.

Proven before emission (the header lists it):

* the atom (:func:`layoutproof.gpu.isa.atoms.verify_atom` against the PTX fragment tables),
  and the kernel's fragment maps are the atom's: for every lane and value, the (m, k) an A
  register half is loaded from, the (n, k) of a B half and the (m, n) an accumulator is
  stored to are the atom's A, B and C layouts (lowered to C and proven equal), and each is
  a bijection onto its 16x16, 8x16 and 16x8 tile; the warp's ``ni`` n-blocks cover the
  block's 16 x BN tile of C exactly once;
* the kernel IR's obligations (:func:`layoutproof.gpu.kernels.toolkit.finish`): every global
  load and store address equals ``base + bytes * (row * stride_row + col * stride_col)``
  for every index value and every runtime value (strides, sizes, block index, k-step), and
  lies inside the operand (``row < rows``, ``col < cols`` implied by the guard around it);
  the shared-memory partial sums stay in their buffer without bank conflicts; the barrier
  and the warp-wide ``mma`` never sit under a condition that splits their threads.

>>> k = generate(TinyConfig(ni=2, kw=4))
>>> k.threads, k.smem_bytes, k.config.key()
(128, 0, 'tiny16x16_kw4')
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

from layoutproof import Layout, composition
from layoutproof.layout import top_modes

from ..config import DTYPES, OUT_DTYPES, GemmProblem
from ..errors import GemmConfigError
from ..isa import atoms
from ..proof import kir, lower
from ..proof.record import ProofLog
from .epilogue import ACTIVATIONS
from .toolkit import STORE2, GemmKernel, addr_of, finish, grid_wait_head, ir_const, ir_var

__all__ = ["TinyConfig", "generate", "GENERATOR_VERSION"]

GENERATOR_VERSION = "1"


@dataclass(frozen=True)
class TinyConfig:
    """The tiny kernel's shape: a block computes a 16 x ``8 * ni`` tile of C with ``kw``
    warps that split K."""

    ni: int = 2
    kw: int = 4
    #: the fused epilogue ``C = act(alpha * acc + beta * Cin + bias)``: None (the plain
    #: product), or the activation (``"none"``, ``"relu"``, ``"silu"``, ``"gelu"``)
    activation: Optional[str] = None
    #: the bias vector's type (``"f32"``, ``"f16"``, ``"bf16"``) and axis (``"n"``: one value
    #: per column, ``"m"``: per row)
    bias: str = "f32"
    bias_axis: str = "n"
    #: k-steps of a warp's loop unrolled together: their fragment loads are issued ahead of
    #: their mma, so a warp waits on memory once per ``ku`` k-steps
    ku: int = 2

    @property
    def bm(self) -> int:
        return 16

    @property
    def bn(self) -> int:
        return 8 * self.ni

    @property
    def threads(self) -> int:
        return 32 * self.kw

    @property
    def red_floats(self) -> int:
        """The partial sums' shared buffer (f32 elements): every warp's ``ni`` accumulator
        tiles, 4 values per lane."""
        return self.kw * self.ni * 4 * 32

    def key(self) -> str:
        ep = "" if self.activation is None else f"_{self.activation}_b{self.bias}{self.bias_axis}"
        ku = "" if self.ku == 2 else f"_ku{self.ku}"
        return f"tiny{self.bm}x{self.bn}_kw{self.kw}{ku}{ep}"

    def validate(self) -> "TinyConfig":
        if self.activation is not None and self.activation not in ACTIVATIONS:
            raise GemmConfigError(f"TinyConfig: activation={self.activation!r} must be one of {ACTIVATIONS}")
        if self.bias not in ("f32", "f16", "bf16") or self.bias_axis not in ("n", "m"):
            raise GemmConfigError(
                f"TinyConfig: bias={self.bias!r} / bias_axis={self.bias_axis!r}: "
                "f32, f16 or bf16 along n or m"
            )
        if self.ni not in (1, 2, 4):
            raise GemmConfigError(f"TinyConfig: ni={self.ni} must be 1, 2 or 4 (n8 blocks per warp)")
        if self.kw not in (1, 2, 4, 8, 16, 32):
            raise GemmConfigError(
                f"TinyConfig: kw={self.kw} must be 1, 2, 4, 8, 16 or 32 (warps splitting K)"
            )
        if self.kw > 1 and 4 * self.red_floats > 48 * 1024:
            raise GemmConfigError(
                f"TinyConfig: kw={self.kw} warps x ni={self.ni} partial-sum tiles need "
                f"{4 * self.red_floats} bytes of static shared memory (at most 49152)"
            )
        if self.ku not in (1, 2, 4, 8):
            raise GemmConfigError(f"TinyConfig: ku={self.ku} must be 1, 2, 4 or 8 (k-steps unrolled)")
        return self


def _atom(dtype: str) -> atoms.MMAAtom:
    name = "SM80_16x8x16_F32BF16BF16F32_TN" if dtype == "bf16" else "SM80_16x8x16_F32F16F16F32_TN"
    return atoms.MMA_ATOMS[name]


def _maps(atom: atoms.MMAAtom, log: ProofLog) -> Dict[str, kir.ProvenFn]:
    """The atom's (lane, value) -> row and -> column maps of A (16x16, m and k), B (8x16, n
    and k) and C (16x8, m and n), each proven a bijection onto its tile and lowered to a
    proven C function."""
    out: Dict[str, kir.ProvenFn] = {}
    for op, L, (r, c), names in (
        ("A", atom.a_layout, (16, 16), ("m", "k")),
        ("B", atom.b_layout, (8, 16), ("n", "k")),
        ("C", atom.c_layout, (16, 8), ("m", "n")),
    ):
        lower.prove_bijective(L, r * c, what=f"{atom.name} {op} (lane, value) -> {r}x{c} tile", log=log)
        for j, nm in enumerate(names):
            sel = Layout((r, c), (1, 0) if j == 0 else (0, 1))
            low = lower.lower(composition(sel, L), ("lane", "v"), name=f"lp_t{op.lower()}_{nm}", log=log)
            out[f"{op}{nm}"] = kir.from_lowered(low)
    return out


def _prove_block_cover(cfg: TinyConfig, atom: atoms.MMAAtom, log: ProofLog) -> None:
    """The warp's ``ni`` n-blocks of the C atom (the atom's C layout, m + 16 n, with block
    ``ni`` at n + 8 ni) cover the 16 x BN block tile of C exactly once."""
    cs, cd = top_modes(atom.c_layout)
    L = Layout((cs[0], cs[1], cfg.ni), (cd[0], cd[1], 16 * 8))
    lower.prove_bijective(L, 16 * cfg.bn, what=f"(lane, value, ni) -> 16x{cfg.bn} block tile of C", log=log)


def _load_pair(
    dst: kir.Expr,
    ptr: kir.Var,
    rows: kir.Var,
    cols: kir.Var,
    srow: kir.Var,
    scol: kir.Var,
    row_of: Callable[[int], Tuple[kir.Expr, kir.Expr]],
    col_of: Callable[[int], Tuple[kir.Expr, kir.Expr]],
    what: str,
) -> kir.Block:
    """``dst = lo | hi << 16`` for the values v = 2j, 2j+1 whose (row, col) the two maps give:
    each a guarded 16-bit load (zero outside rows x cols)."""
    stmts = []
    halves = []
    for h in range(2):
        (rv, rc), (cv, cc) = row_of(h), col_of(h)
        x = kir.Var(f"x{h}", "unsigned")
        r, dr = ir_const(f"r{h}", rv)
        c, dc = ir_const(f"c{h}", cv)
        claim = kir.Claim(
            f"{what} (row, col) of the operand",
            addr_of(ptr) + 2 * (kir.Cast("long long", rc) * srow + kir.Cast("long long", cc) * scol),
            bounds=((rc, rows), (cc, cols)),
            width=2,
        )
        load = kir.Mem(ptr, claim, idx=kir.Cast("long long", r) * srow + kir.Cast("long long", c) * scol)
        stmts += [
            dr,
            dc,
            kir.Decl(x, kir.Const(0, "unsigned")),
            kir.If(r.lt(rows).and_(c.lt(cols)), kir.block(kir.Assign(x, kir.Cast("unsigned", load)))),
        ]
        halves.append(x)
    stmts.append(kir.Assign(dst, halves[0] | (halves[1] << kir.Const(16, "unsigned"))))
    return kir.Block(tuple(stmts), bare=True)


def _kernel_ir(cfg: TinyConfig, prob: GemmProblem, fn: Dict[str, kir.ProvenFn], name: str) -> kir.Kernel:
    NI, KW, BN = cfg.ni, cfg.kw, cfg.bn
    A, B = ir_var("A", "const lp_in_t*"), ir_var("B", "const lp_in_t*")
    C = ir_var("C", "lp_out_t*")
    M, N, K = ir_var("M"), ir_var("N"), ir_var("K")
    sam, sak, sbk, sbn, scm, scn = (
        ir_var(s, "long long") for s in ("sam", "sak", "sbk", "sbn", "scm", "scn")
    )
    T = kir.THREAD_IDX
    lane, dl = ir_const("lane", T & 31)
    w, dw = ir_const("w", T >> 5)
    gn, dgn = ir_const("gn", (N + (BN - 1)) / BN)
    m0, dm0 = ir_const("m0", (kir.BLOCK_IDX / gn) * 16)
    n0, dn0 = ir_const("n0", (kir.BLOCK_IDX % gn) * BN)
    nk, dnk = ir_const("nk", (K + (16 * KW - 1)) / (16 * KW))
    body: list = [dl, dw, dgn, dm0, dn0, dnk]
    acc = kir.Var("acc", "float")
    af = kir.Var("af", "unsigned")
    bfr = kir.Var("bfr", "unsigned")
    ni, e, j = ir_var("ni"), ir_var("e"), ir_var("j")
    body += [
        kir.Decl(acc, dims=(NI, 4)),
        kir.For(
            ni,
            kir.Const(0),
            kir.Const(NI),
            kir.block(
                kir.For(
                    e,
                    kir.Const(0),
                    kir.Const(4),
                    kir.block(kir.Assign(kir.Index(acc, (ni, e)), kir.FloatLit("0.f"))),
                    unroll=True,
                )
            ),
            unroll=True,
        ),
        kir.Decl(af, dims=(4,)),
        kir.Decl(bfr, dims=(NI, 2)),
    ]
    kt = ir_var("kt")
    k0, dk0 = ir_const("k0", (kt * KW + w) * 16)

    def app(key: str, v: kir.Expr) -> Tuple[kir.Expr, kir.Expr]:
        f = fn[key]
        return kir.call(f, lane=lane, v=v), kir.LayoutApp(f.layout, (lane, v), f.name)

    def a_row(h: int) -> Tuple[kir.Expr, kir.Expr]:
        c, cl = app("Am", 2 * j + h)
        return m0 + c, m0 + cl

    def a_col(h: int) -> Tuple[kir.Expr, kir.Expr]:
        c, cl = app("Ak", 2 * j + h)
        return k0 + c, k0 + cl

    def b_row(h: int) -> Tuple[kir.Expr, kir.Expr]:  # B's rows are k
        c, cl = app("Bk", 2 * j + h)
        return k0 + c, k0 + cl

    def b_col(h: int) -> Tuple[kir.Expr, kir.Expr]:
        c, cl = app("Bn", 2 * j + h)
        return n0 + ni * 8 + c, n0 + ni * 8 + cl

    a_load = kir.For(
        j,
        kir.Const(0),
        kir.Const(4),
        kir.block(_load_pair(kir.Index(af, (j,)), A, M, K, sam, sak, a_row, a_col, "A fragment element")),
        unroll=True,
    )
    b_load = kir.For(
        ni,
        kir.Const(0),
        kir.Const(NI),
        kir.block(
            kir.For(
                j,
                kir.Const(0),
                kir.Const(2),
                kir.block(
                    _load_pair(kir.Index(bfr, (ni, j)), B, K, N, sbk, sbn, b_row, b_col, "B fragment element")
                ),
                unroll=True,
            )
        ),
        unroll=True,
    )
    mma = kir.For(
        ni,
        kir.Const(0),
        kir.Const(NI),
        kir.block(kir.Mma(kir.Index(acc, (ni,)), af, kir.Index(bfr, (ni,)))),
        unroll=True,
    )
    body.append(
        kir.Comment(
            f"every warp runs the same nk k-steps (warp w takes k-steps w, w + {KW}, ...): the mma is\n"
            "warp-uniform; fragment elements outside the operands load as zero"
        )
    )
    body.append(
        kir.For(
            kt, kir.Const(0), nk, kir.block(dk0, a_load, b_load, mma), unroll=cfg.ku if cfg.ku > 1 else False
        )
    )
    ep = _epi(cfg)
    store_stmts = _store_ir(prob, C, M, N, scm, scn, m0, n0, acc, fn, lane, NI, ep)
    if KW == 1:
        body += store_stmts
    else:
        red = kir.Var("lp_red", "float*")
        size = cfg.red_floats
        RL = Layout((32, 4, NI, KW), (1, 32, 128, 128 * NI))
        region = (addr_of(red), 4 * size)
        ridx = lambda s: ((s * NI + ni) * 4 + e) * 32 + lane  # noqa: E731
        wclaim = kir.Claim(
            "partial sum (lane, value, ni, warp) into shared memory",
            addr_of(red) + 4 * kir.LayoutApp(RL, (lane, e, ni, w), "partial sums"),
            region=region,
            width=4,
        )
        s = ir_var("s")
        rclaim = kir.Claim(
            "partial sum (lane, value, ni, warp s) from shared memory",
            addr_of(red) + 4 * kir.LayoutApp(RL, (lane, e, ni, s), "partial sums"),
            region=region,
            width=4,
        )
        body.insert(0, kir.Decl(red, dims=(size,), prefix="__shared__", tname="float"))
        body.append(
            kir.For(
                ni,
                kir.Const(0),
                kir.Const(NI),
                kir.block(
                    kir.For(
                        e,
                        kir.Const(0),
                        kir.Const(4),
                        kir.block(
                            kir.Assign(
                                kir.Mem(red, wclaim, idx=ridx(w), space="shared"), kir.Index(acc, (ni, e))
                            )
                        ),
                        unroll=True,
                    )
                ),
                unroll=True,
            )
        )
        body.append(kir.SyncThreads("the warps' partial sums, then warp 0 adds them in warp order"))
        total = kir.Var("t", "float")
        sum_loop = kir.For(
            ni,
            kir.Const(0),
            kir.Const(NI),
            kir.block(
                kir.For(
                    e,
                    kir.Const(0),
                    kir.Const(4),
                    kir.block(
                        kir.Decl(total, kir.FloatLit("0.f")),
                        kir.For(
                            s,
                            kir.Const(0),
                            kir.Const(KW),
                            kir.block(
                                kir.Assign(total, kir.Mem(red, rclaim, idx=ridx(s), space="shared"), "+=")
                            ),
                            unroll=True,
                        ),
                        kir.Assign(kir.Index(acc, (ni, e)), total),
                    ),
                    unroll=True,
                )
            ),
            unroll=True,
        )
        body.append(kir.If(w.eq(0), kir.block(sum_loop, *store_stmts)))
    dt = prob.dtype
    return kir.Kernel(
        name,
        (
            ("const lp_in_t* __restrict__", A),
            ("const lp_in_t* __restrict__", B),
            ("lp_out_t* __restrict__", C),
            ("int", M),
            ("int", N),
            ("int", K),
            ("long long", sam),
            ("long long", sak),
            ("long long", sbk),
            ("long long", sbn),
            ("long long", scm),
            ("long long", scn),
        )
        + (
            ()
            if ep is None
            else (
                ("const lp_bias_t* __restrict__", ep.bias),
                ("int", ep.has_bias),
                ("float", ep.alpha),
                ("float", ep.beta),
                ("const lp_out_t*", ep.cin),
                ("long long", ep.sxm),
                ("long long", ep.sxn),
            )
        ),
        kir.block(*grid_wait_head(), *body),
        cfg.threads,
        typedefs=(("lp_in_t", "unsigned short"), ("lp_out_t", OUT_DTYPES[prob.out][0]))
        + (() if ep is None else (("lp_bias_t", OUT_DTYPES[ep.btype][0]),)),
        sizes={
            "lp_in_t": 2,
            "lp_out_t": OUT_DTYPES[prob.out][1],
            "lp_bias_t": OUT_DTYPES[cfg.bias][1],
            "float": 4,
            "unsigned": 4,
        },
        functions=tuple(fn.values()),
        description=(
            "",
            f"tiny mma.sync GEMM generated by layoutproof (tiny {GENERATOR_VERSION}):",
            "  C[M,N] (element strides scm, scn) = A[M,K] (sam, sak) @ B[K,N] (sbk, sbn)",
            f"{dt} in (as raw 16-bit patterns), f32 accumulate, {prob.out} out",
            f"block 16x{BN}, {KW} warp(s) splitting K, fragments loaded from global memory",
            "contract: any M, N, K >= 1, any strides (every load and store guarded)",
        )
        + (
            ()
            if ep is None
            else (
                f"epilogue: C = {ep.act}(alpha * acc + beta * Cin + bias[{ep.axis}]) in f32 "
                f"({ep.btype} bias; Cin read only where beta != 0, bias only where has_bias)",
            )
        ),
        helpers=("griddep", "mma") if ep is None else ("griddep", "act", "mma"),
        mma_dtype=dt,
    )


_TO_FLOAT = {"f16": "__half2float", "bf16": "__bfloat162float", "f32": None}


def _to_float(dt: str, x: kir.Expr) -> kir.Expr:
    fn = _TO_FLOAT[dt]
    return x if fn is None else kir.Call(fn, (x,), "float")


@dataclass(frozen=True)
class _Epi:
    """The fused epilogue's parameters (kernel IR variables) and its static choices."""

    bias: kir.Var
    has_bias: kir.Var
    alpha: kir.Var
    beta: kir.Var
    cin: kir.Var
    sxm: kir.Var
    sxn: kir.Var
    act: str
    btype: str
    axis: str


def _epi(cfg: TinyConfig) -> Optional[_Epi]:
    if cfg.activation is None:
        return None
    return _Epi(
        bias=ir_var("bias", "const lp_bias_t*"),
        has_bias=ir_var("has_bias"),
        alpha=ir_var("alpha", "float"),
        beta=ir_var("beta", "float"),
        cin=ir_var("Cin", "const lp_out_t*"),
        sxm=ir_var("sxm", "long long"),
        sxn=ir_var("sxn", "long long"),
        act=cfg.activation,
        btype=cfg.bias,
        axis=cfg.bias_axis,
    )


def _store_ir(
    prob: GemmProblem,
    C: kir.Var,
    M: kir.Var,
    N: kir.Var,
    scm: kir.Var,
    scn: kir.Var,
    m0: kir.Var,
    n0: kir.Var,
    acc: kir.Var,
    fn: Dict[str, kir.ProvenFn],
    lane: kir.Var,
    NI: int,
    ep: "Optional[_Epi]" = None,
) -> list:
    """Each accumulator to its C element (the atom's C map), guarded, in the output type;
    with ``ep`` through the fused epilogue ``act(alpha * acc + beta * Cin + bias)`` in f32
    (the C input read only where beta is not zero, the bias only where the call has one)."""
    ni, e = ir_var("ni"), ir_var("e")
    ob = OUT_DTYPES[prob.out][1]
    cvt = STORE2[prob.out][2]
    rv = m0 + kir.call(fn["Cm"], lane=lane, v=e)
    cv = n0 + ni * 8 + kir.call(fn["Cn"], lane=lane, v=e)
    rc = m0 + kir.LayoutApp(fn["Cm"].layout, (lane, e), fn["Cm"].name)
    cc = n0 + ni * 8 + kir.LayoutApp(fn["Cn"].layout, (lane, e), fn["Cn"].name)
    r, dr = ir_const("r", rv)
    c, dc = ir_const("c", cv)
    claim = kir.Claim(
        "C element (row, col)",
        addr_of(C) + ob * (kir.Cast("long long", rc) * scm + kir.Cast("long long", cc) * scn),
        bounds=((rc, M), (cc, N)),
        width=ob,
    )
    val: kir.Expr = kir.Index(acc, (ni, e))
    pre: list = []
    if ep is not None:
        v = kir.Var("y", "float")
        pre.append(kir.Decl(v, ep.alpha * val))
        xclaim = kir.Claim(
            "C input element (row, col)",
            addr_of(ep.cin) + ob * (kir.Cast("long long", rc) * ep.sxm + kir.Cast("long long", cc) * ep.sxn),
            bounds=((rc, M), (cc, N)),
            width=ob,
        )
        xin = kir.Mem(
            ep.cin, xclaim, idx=kir.Cast("long long", r) * ep.sxm + kir.Cast("long long", c) * ep.sxn
        )
        pre.append(
            kir.If(
                ep.beta.ne(kir.FloatLit("0.f")),
                kir.block(kir.Assign(v, ep.beta * _to_float(prob.out, xin), "+=")),
            )
        )
        bc, bcc, bext = (c, cc, N) if ep.axis == "n" else (r, rc, M)
        bclaim = kir.Claim(
            f"bias element ({'col' if ep.axis == 'n' else 'row'})",
            addr_of(ep.bias) + OUT_DTYPES[ep.btype][1] * kir.Cast("long long", bcc),
            bounds=((bcc, bext),),
            width=OUT_DTYPES[ep.btype][1],
        )
        pre.append(
            kir.If(
                ep.has_bias.ne(0),
                kir.block(kir.Assign(v, _to_float(ep.btype, kir.Mem(ep.bias, bclaim, idx=bc)), "+=")),
            )
        )
        val = kir.Call(f"lp_act_{ep.act}", (v,), "float")
    if cvt is not None:
        val = kir.Call(cvt, (val,), "lp_out_t")
    st = kir.Assign(
        kir.Mem(C, claim, idx=kir.Cast("long long", r) * scm + kir.Cast("long long", c) * scn), val
    )
    inner = kir.For(
        e,
        kir.Const(0),
        kir.Const(4),
        kir.block(dr, dc, kir.If(r.lt(M).and_(c.lt(N)), kir.block(*pre, st))),
        unroll=True,
    )
    return [
        kir.Comment("epilogue: accumulator (lane, value, ni) -> C (row, col), the atom's C map"),
        kir.For(ni, kir.Const(0), kir.Const(NI), kir.block(inner), unroll=True),
    ]


_MEMO: Dict[Tuple[TinyConfig, GemmProblem], GemmKernel] = {}


def generate(config: Optional[TinyConfig] = None, problem: Optional[GemmProblem] = None) -> GemmKernel:
    """Build, prove and emit the tiny kernel for ``config`` and ``problem`` (its dtype and
    output type; the majors do not matter: the strides are runtime parameters).  Memoized
    per process."""
    cfg = (config or TinyConfig()).validate()
    prob = problem or GemmProblem()
    if prob.dtype not in DTYPES or prob.out not in ("f16", "bf16", "f32"):
        raise GemmConfigError(
            f"tiny kernel: {prob.dtype} in, {prob.out} out: the tiny kernel takes f16 or bf16 "
            "operands and stores f16, bf16 or f32"
        )
    prob = GemmProblem(dtype=prob.dtype, out_dtype=prob.out)  # one kernel for every major
    hit = _MEMO.get((cfg, prob))
    if hit is not None:
        return hit
    atom = _atom(prob.dtype)
    log = ProofLog()
    for pr in atoms.verify_atom(atom):
        log.proofs.append(pr)
    fn = _maps(atom, log)
    _prove_block_cover(cfg, atom, log)
    h = hashlib.sha256(f"tiny{GENERATOR_VERSION}{cfg}{prob}".encode()).hexdigest()[:10]
    name = f"lp_tiny_{prob.key()}_{h}"
    ir = _kernel_ir(cfg, prob, fn, name)
    src = finish(ir, log, f"proven before emission ({cfg.key()}, {prob.key()})")
    k = GemmKernel(cfg, prob, src, name, cfg.threads, 0, log, {"a": None, "b": None}, ir)
    _MEMO[(cfg, prob)] = k
    return k
