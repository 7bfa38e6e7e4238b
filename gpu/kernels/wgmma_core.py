"""The wgmma kernels' configuration and the kernel IR pieces both kernel shapes share.

:class:`Sm90Config` (with :data:`HOPPER_DEFAULT`, the warp-specialized persistent kernel)
describes a kernel of :mod:`layoutproof.gpu.kernels.wgmma` (the monolithic kernels and the
generator) or :mod:`layoutproof.gpu.kernels.wgmma_ws` (the warp-specialized kernel).  The IR
pieces they share: the kernel's variables and parameters (:func:`env90`, :func:`params90`),
the dynamic shared-memory arena (:func:`smem_arena`), one k-block's batch of wgmma
instructions (:func:`wgmma_batch_ir`), the accumulators (:func:`acc_ir`), the TMA loads of
a stage (:func:`tma_loads_ir`) and the kernel record (:func:`kernel90`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from layoutproof import Layout

from ..config import OUT_DTYPES, SMEM_LIMIT, TC_TYPES, GemmProblem, operand_storage
from ..errors import GemmConfigError
from ..proof import kir
from .toolkit import (
    Env,
    OperandPlan,
    base_env,
    grid_wait_head,
    ir_const,
    ir_var,
    kernel_params,
    type_sizes,
)

__all__ = [
    "Sm90Config",
    "A_ROWS",
    "sm90_base",
    "a_box_rows",
    "HOPPER_DEFAULT",
    "GENERATOR_VERSION",
    "TMA_BOX",
    "TMA_BOX_BYTES",
    "env90",
    "env_var",
    "need_var",
    "params90",
    "smem_arena",
    "wgmma_batch_ir",
    "acc_ir",
    "acc_type",
    "SCALED_TYPES",
    "scale_ir",
    "tid_ir",
    "kernel90",
    "tma_loads_ir",
    "stage_bases_ir",
]


GENERATOR_VERSION = "sm90-2"


@dataclass(frozen=True)
class Sm90Config:
    """Block tile of the wgmma kernel: ``bm`` = 64 x consumer warpgroups, ``bn`` the wgmma
    N (8..256, a multiple of 8 that the copies tile), ``bk`` = 64 (one 128-byte row);
    ``loader`` ``"cp.async"`` or ``"tma"``; ``schedule`` ``"mono"`` (every warpgroup
    computes) or ``"ws"`` (a TMA producer warpgroup, persistent grid; needs ``"tma"``);
    ``cluster`` 1 or 2 (CTAs sharing the B tile by multicast; ``"ws"`` only).
    ``schedule="pingpong"`` (TMA, ``bm=64``, no cluster): a TMA producer and two consumer
    warpgroups that own alternate 64 x ``bn`` tiles of the persistent walk
    (:mod:`layoutproof.gpu.kernels.wgmma_pingpong`).

    ``a_rows`` (16 or 32; ``bm=64``, ``"ws"``, no cluster, K-major f16/bf16 A):
    A's TMA box loads only the first ``a_rows`` rows of each 64-row stage, for outputs of at
    most ``a_rows`` rows (the host refuses a larger M).  The box's zero-filled rows past M
    are not fetched: a 64-row box over a 16-row output measured up to twice the time of the
    same kernel over 64 rows (bench/RESULTS.md, "A's TMA box of 16 or 32 rows").

    ``elem_loads`` (``""``, ``"a"``, ``"b"`` or ``"ab"``; ``loader="cp.async"``, ``"mono"``):
    the named operands' 16-byte chunks are read by two-byte loads instead of cp.async, so
    the kernel reads them in place at any leading dimension and any 2-byte-aligned base --
    an operand the TMA and cp.async kernels would first copy into a padded buffer.

    ``stage_in`` (``""``, ``"a"``, ``"b"`` or ``"ab"``; ``"ws"``, no cluster, not batched):
    the kernel copies the named operands itself, from the user's rows (any leading
    dimension, 2-byte-aligned) into the padded buffers its TMA maps read, then meets every
    other CTA at a grid barrier (:class:`~layoutproof.gpu.proof.kir.GridSync`) before its
    first box: the staging copy and the product in one launch, which must be cooperative
    (every CTA resident at once)."""

    bm: int = 128
    bn: int = 256
    bk: int = 64
    stages: int = 4
    group_m: int = 8
    loader: str = "cp.async"
    schedule: str = "mono"
    cluster: int = 1
    a_rows: int = 64
    elem_loads: str = ""
    stage_in: str = ""

    def __repr__(self) -> str:
        # a_rows and elem_loads are shown only where they are not the defaults, so the names
        # (and the kernel hashes derived from this text) of the other kernels do not depend
        # on them
        parts = [f"{f}={getattr(self, f)!r}" for f in _SM90_FIELDS]
        if self.a_rows != 64:
            parts.append(f"a_rows={self.a_rows}")
        if self.elem_loads:
            parts.append(f"elem_loads={self.elem_loads!r}")
        if self.stage_in:
            parts.append(f"stage_in={self.stage_in!r}")
        return f"Sm90Config({', '.join(parts)})"

    @property
    def warpgroups(self) -> int:
        """Consumer (wgmma) warpgroups: one per 64 rows of the block."""
        return self.bm // 64

    @property
    def threads(self) -> int:
        if self.schedule == "pingpong":  # a producer and two consumers of 64-row tiles
            return 384
        # the warp-specialized kernel adds one producer warpgroup in front of the consumers
        return 128 * (self.warpgroups + (self.schedule == "ws"))

    @property
    def epilogue_bytes(self) -> int:
        """Shared memory of the staged epilogue: 64 rows x 128 bytes per consumer warpgroup."""
        if self.schedule == "pingpong":
            return 16384
        return 8192 * self.warpgroups if self.schedule == "ws" else 0

    @property
    def smem_bytes(self) -> int:
        # + 1024 to align the stages to the 128-byte swizzle's 1024-byte period
        return self.stages * (self.bm + self.bn) * self.bk * 2 + self.epilogue_bytes + 1024

    def key(self) -> str:
        ld = "_tma" if self.loader == "tma" else ""
        ws = {"ws": "_ws", "pingpong": "_pp"}.get(self.schedule, "")
        cl = f"_c{self.cluster}" if self.cluster != 1 else ""
        ar = f"_r{self.a_rows}" if self.a_rows != 64 else ""
        el = f"_e{self.elem_loads}" if self.elem_loads else ""
        el += f"_si{self.stage_in}" if self.stage_in else ""
        return f"sm90_{self.bm}x{self.bn}x{self.bk}_s{self.stages}_g{self.group_m}{ld}{ws}{cl}{ar}{el}"

    def validate(self) -> "Sm90Config":
        for k in ("bm", "bn", "bk", "stages", "group_m", "cluster"):
            v = getattr(self, k)
            if type(v) is not int or v < 1:
                raise GemmConfigError(f"Sm90Config: {k}={v!r} must be a positive int")
        if self.bm not in (64, 128, 192, 256):
            raise GemmConfigError(f"Sm90Config: bm={self.bm} must be 64 x (1..4 warpgroups)")
        if self.bn % 16 or not 16 <= self.bn <= 256:
            raise GemmConfigError(f"Sm90Config: bn={self.bn} must be a multiple of 16 in [16, 256]")
        if self.loader == "tma" and self.bn % 64:
            raise GemmConfigError(
                f"Sm90Config: the TMA loader moves 64-row boxes: bn={self.bn} must be a multiple of 64"
            )
        if self.loader not in ("cp.async", "tma"):
            raise GemmConfigError(f"Sm90Config: loader={self.loader!r} must be 'cp.async' or 'tma'")
        if self.schedule not in ("mono", "ws", "pingpong"):
            raise GemmConfigError(
                f"Sm90Config: schedule={self.schedule!r} must be 'mono', 'ws' or 'pingpong'"
            )
        if self.schedule == "pingpong" and (self.loader != "tma" or self.bm != 64 or self.cluster != 1):
            raise GemmConfigError(
                "Sm90Config: the ping-pong schedule gives each consumer warpgroup whole 64-row "
                f"tiles fed by the TMA producer: it needs loader='tma', bm=64, cluster=1 (got "
                f"loader={self.loader!r}, bm={self.bm}, cluster={self.cluster})"
            )
        if self.schedule == "ws" and self.loader != "tma":
            raise GemmConfigError(
                "Sm90Config: the warp-specialized schedule ('ws') is fed by "
                "the TMA producer: it needs loader='tma'"
            )
        if self.cluster not in (1, 2):
            raise GemmConfigError(f"Sm90Config: cluster={self.cluster} must be 1 or 2")
        if self.cluster == 2 and (self.schedule != "ws" or (self.bn // 64) % 2):
            raise GemmConfigError(
                "Sm90Config: a 2-CTA cluster multicasts half of the B tile's "
                "64-row boxes from each CTA: it needs schedule='ws' and bn "
                f"a multiple of 128 (bn={self.bn})"
            )
        if self.schedule == "ws" and self.bm > 128:
            raise GemmConfigError(
                f"Sm90Config: schedule='ws' runs one producer and at most two "
                f"consumer warpgroups (register budget): bm={self.bm} > 128"
            )
        if self.bk != 64:
            raise GemmConfigError("Sm90Config: bk must be 64 (one 128-byte swizzled row)")
        if not 3 <= self.stages <= 8:
            raise GemmConfigError(f"Sm90Config: stages={self.stages} must be in [3, 8]")
        if self.smem_bytes > SMEM_LIMIT:
            raise GemmConfigError(f"Sm90Config: {self.smem_bytes} bytes of shared memory exceed {SMEM_LIMIT}")
        if self.bn // 2 + 40 > 255:
            raise GemmConfigError("Sm90Config: too many accumulators")
        if type(self.a_rows) is not int or self.a_rows not in A_ROWS:
            raise GemmConfigError(f"Sm90Config: a_rows={self.a_rows!r} must be one of {A_ROWS}")
        if self.a_rows != 64 and (
            self.bm != 64 or self.loader != "tma" or self.schedule != "ws" or self.cluster != 1
        ):
            raise GemmConfigError(
                f"Sm90Config: a_rows={self.a_rows} (A's TMA box of fewer rows than the tile) needs "
                f"bm=64, loader='tma', schedule='ws' and cluster=1 (got bm={self.bm}, "
                f"loader={self.loader!r}, schedule={self.schedule!r}, cluster={self.cluster})"
            )
        if self.elem_loads not in ("", "a", "b", "ab"):
            raise GemmConfigError(
                f"Sm90Config: elem_loads={self.elem_loads!r} must name operands: '', 'a', 'b' or 'ab'"
            )
        if self.elem_loads and (self.loader != "cp.async" or self.schedule != "mono"):
            raise GemmConfigError(
                f"Sm90Config: elem_loads={self.elem_loads!r} replaces cp.async copies by two-byte "
                f"loads: it needs loader='cp.async' and schedule='mono' (got loader="
                f"{self.loader!r}, schedule={self.schedule!r})"
            )
        if self.stage_in not in ("", "a", "b", "ab"):
            raise GemmConfigError(
                f"Sm90Config: stage_in={self.stage_in!r} must name operands: '', 'a', 'b' or 'ab'"
            )
        if self.stage_in and (self.schedule != "ws" or self.cluster != 1):
            raise GemmConfigError(
                f"Sm90Config: stage_in={self.stage_in!r} copies the operands before a grid barrier "
                f"of the persistent warp-specialized kernel: it needs schedule='ws' and cluster=1 "
                f"(got schedule={self.schedule!r}, cluster={self.cluster})"
            )
        return self


#: the rows A's TMA box may load per 64-row stage (:attr:`Sm90Config.a_rows`)
A_ROWS: Tuple[int, ...] = (16, 32, 64)
_SM90_FIELDS = ("bm", "bn", "bk", "stages", "group_m", "loader", "schedule", "cluster")


def sm90_base(config: Any) -> Optional["Sm90Config"]:
    """The :class:`Sm90Config` a configuration builds on (itself, or the ``base`` of a
    split-K, epilogue or fix-up configuration, followed down), or None (an mma.sync one)."""
    seen = 0
    while not isinstance(config, Sm90Config) and hasattr(config, "base") and seen < 8:
        config, seen = config.base, seen + 1
    return config if isinstance(config, Sm90Config) else None


def a_box_rows(config: Any) -> int:
    """The rows of A's TMA box per stage for ``config``'s kernel (64 unless its wgmma base
    sets :attr:`Sm90Config.a_rows`); the launch needs M at most this where it is below 64."""
    base = sm90_base(config)
    return 64 if base is None else base.a_rows


HOPPER_DEFAULT = Sm90Config(loader="tma", schedule="ws")


# ============================================================================ TMA
TMA_BOX = 64  # a box is 64 x 64 elements: 64 along the contiguous dimension = 128 B
TMA_BOX_BYTES = 8192  # the stage bytes between the destinations of consecutive boxes


# ============================================================================ kernel IR
#: the operand types whose kernels take a per-tensor scale (``scale_a * scale_b``, one f32
#: parameter after ``c_vec``) applied to the accumulators before the epilogue
SCALED_TYPES: Tuple[str, ...] = ("e4m3", "e5m2")


def env90(prob: GemmProblem, tma: bool) -> Env:
    E = base_env()
    if tma:
        E.add(tmA=kir.Var("tmA", "lp_tmap_t"), tmB=kir.Var("tmB", "lp_tmap_t"))
    if prob.dtype in SCALED_TYPES:
        E.add(scale=kir.Var("scale", "float"))
    return E


def scale_ir(E: Env, cfg: Sm90Config, acc: kir.Var) -> List[kir.Stmt]:
    """``acc[i] *= scale`` for every accumulator of a kernel with a per-tensor scale
    (:data:`SCALED_TYPES`); nothing for the others."""
    sc = env_var(E, "scale")
    if sc is None:
        return []
    i = ir_var("i")
    return [
        kir.Comment("the per-tensor scale (scale_a * scale_b) on the f32 accumulators"),
        kir.For(
            i,
            kir.Const(0),
            kir.Const(cfg.bn // 2),
            kir.block(kir.Assign(kir.Index(acc, (i,)), kir.Index(acc, (i,)) * sc)),
            unroll=True,
        ),
    ]


def env_var(E: Env, name: str) -> Optional[kir.Var]:
    """A kernel variable added to ``E`` by name (the batched kernel's ``batch``, ``ldcb``,
    ``bidx``), or None where the kernel has none."""
    v = E.__dict__.get(name)
    return v if isinstance(v, kir.Var) else None


def need_var(E: Env, name: str) -> kir.Var:
    """:func:`env_var` where the kernel must have it."""
    v = env_var(E, name)
    if v is None:
        raise GemmConfigError(f"kernel IR: no variable {name!r} in this kernel")
    return v


def params90(E: Env, tma: bool) -> Tuple[Tuple[str, kir.Var], ...]:
    sc = env_var(E, "scale")
    scale: Tuple[Tuple[str, kir.Var], ...] = () if sc is None else (("float", sc),)
    if not tma:
        return kernel_params(E, None) + scale
    params: Tuple[Tuple[str, kir.Var], ...] = (
        ("const __grid_constant__ lp_tmap_t", E.tmA),
        ("const __grid_constant__ lp_tmap_t", E.tmB),
        ("lp_out_t* __restrict__", E.C),
        ("int", E.M),
        ("int", E.N),
        ("int", E.K),
        ("long long", E.ldc),
        ("int", E.c_vec),
    ) + scale
    if env_var(E, "batch") is not None:  # batched: the batch count, C's batch stride
        params += (("int", need_var(E, "batch")), ("long long", need_var(E, "ldcb")))
    for P in "ab":  # stage_in: per staged operand its source, source ld, buffer, buffer ld
        if env_var(E, f"{P}_src") is not None:
            params += (
                ("const lp_in_t* __restrict__", need_var(E, f"{P}_src")),
                ("long long", need_var(E, f"{P}_sld")),
                ("lp_in_t* __restrict__", need_var(E, f"{P}_dst")),
                ("long long", need_var(E, f"{P}_dld")),
            )
    if env_var(E, "lp_gbar") is not None:  # and the grid barrier's two words
        params += (("unsigned* __restrict__", need_var(E, "lp_gbar")),)
    return params


def smem_arena(E: Env, body: List[Any], aligned_name: str = "s0", split: bool = False) -> None:
    """``lp_smem`` (1024-byte aligned start ``s0``), ``sA``, ``sB``."""
    smem = kir.Var("lp_smem", "unsigned char*")
    body.append(kir.Decl(smem, dims=(0,), prefix="extern __shared__ __align__(1024)", tname="unsigned char"))
    cvta = kir.Cast("unsigned", kir.Call("__cvta_generic_to_shared", (smem,), "unsigned"))
    if split:
        sbase, d = ir_const("sbase", cvta, "unsigned")
        body.append(d)
        s0, d = ir_const(aligned_name, kir.AlignUp(sbase, 1024), "unsigned")
    else:
        sbase = None
        s0, d = ir_const(aligned_name, kir.AlignUp(cvta, 1024), "unsigned")
    body.append(d)
    E.add(smem=smem, sbase=sbase, s0=s0)


def wgmma_batch_ir(
    E: Env,
    cfg: Sm90Config,
    desc: Dict[str, Tuple[int, int, int]],
    a: OperandPlan,
    b: OperandPlan,
    stage: kir.Expr,
    slice_: kir.Expr,
    acc: kir.Var,
    *,
    steps: Optional[Tuple[int, int]] = None,
    wait: int = 1,
    step_name: str = "k16 step",
) -> List[kir.Stmt]:
    """One k-tile's wgmma batch on stage ``stage`` for warpgroup slice ``slice_``: the
    proven descriptor starts, ``bk / 16`` wgmmas, commit, and a wait that leaves this batch
    in flight (the previous one is complete after it).  ``steps = (lo, hi)`` issues only
    the k16 steps ``lo .. hi - 1`` of the k-tile; ``wait`` is the ``wgmma.wait_group``
    depth after the commit (0: this batch is complete after it); ``step_name`` is the k
    step's word in the descriptor claims (the proof records name it)."""
    S = cfg.stages
    a_base, d1 = ir_const(
        "a_base",
        E.sA
        + stage * kir.Const(2 * a.stage_elems, "unsigned")
        + slice_ * kir.Const(desc["a"][1], "unsigned"),
        "unsigned",
    )
    b_base, d2 = ir_const("b_base", E.sB + stage * kir.Const(2 * b.stage_elems, "unsigned"), "unsigned")
    ks = ir_var("ks")
    nk = cfg.bk // 16
    # the descriptor starts plan_descriptors proved: (slice, k step, stage) -> byte offset
    la = Layout((cfg.warpgroups, nk, S), (desc["a"][1], desc["a"][2], 2 * a.stage_elems))
    lb = Layout((nk, S), (desc["b"][2], 2 * b.stage_elems))
    lo, hi = (0, nk) if steps is None else steps
    ca = kir.Claim(
        f"A descriptor start address (warpgroup slice, {step_name}, stage)",
        E.sA + kir.LayoutApp(la, (slice_, ks, stage), "A descriptor starts"),
        region=(E.sA, 2 * S * a.stage_elems),
        width=1,
    )
    cb = kir.Claim(
        f"B descriptor start address ({step_name}, stage)",
        E.sB + kir.LayoutApp(lb, (ks, stage), "B descriptor starts"),
        region=(E.sB, 2 * S * b.stage_elems),
        width=1,
    )
    return [
        d1,
        d2,
        kir.WgmmaFence(),
        kir.For(
            ks,
            kir.Const(lo),
            kir.Const(hi),
            kir.block(
                kir.Wgmma(
                    acc,
                    a_base + kir.Const(desc["a"][2], "unsigned") * ks,
                    b_base + kir.Const(desc["b"][2], "unsigned") * ks,
                    ca,
                    cb,
                )
            ),
            unroll=True,
        ),
        kir.WgmmaCommit(),
        kir.WgmmaWait(wait),
    ]


def acc_type(prob: GemmProblem) -> str:
    """The accumulator of ``prob``'s wgmma: ``"f32"``, or ``"s32"`` for the integer types."""
    return TC_TYPES[prob.dtype][1] if prob.dtype in TC_TYPES else "f32"


def acc_ir(cfg: Sm90Config, acc: str = "f32") -> Tuple[kir.Var, List[kir.Stmt]]:
    """The ``bn / 2`` accumulator registers of a thread, zeroed (``float``, or ``int`` for
    an ``s32`` accumulator)."""
    R = cfg.bn // 2
    var = kir.Var("acc", "int" if acc == "s32" else "float")
    zero: kir.Expr = kir.Const(0) if acc == "s32" else kir.FloatLit("0.f")
    i = ir_var("i")
    return var, [
        kir.Decl(var, dims=(R,)),
        kir.For(
            i,
            kir.Const(0),
            kir.Const(R),
            kir.block(kir.Assign(kir.Index(var, (i,)), zero)),
            unroll=True,
        ),
    ]


def tid_ir(E: Env, body: List[Any]) -> None:
    tid, d1 = ir_const("tid", E.threadIdx)
    wg, d2 = ir_const("wg", tid >> 7)
    wt, d3 = ir_const("wt", tid & 127)
    body += [d1, d2, d3]
    E.add(tid=tid, wg=wg, wt=wt)


def kernel90(
    cfg: Sm90Config,
    prob: GemmProblem,
    a: OperandPlan,
    b: OperandPlan,
    desc: Dict[str, Tuple[int, int, int]],
    name: str,
    E: Env,
    body: List[Any],
    descr: Tuple[str, ...],
    fns: Tuple[Any, ...],
    helpers: Tuple[str, ...],
    *,
    tma: bool,
    devfns: Tuple[Any, ...] = (),
) -> kir.Kernel:
    tin = operand_storage(prob.dtype)[0]
    tout = OUT_DTYPES[prob.out][0]
    if "griddep" not in helpers:  # every wgmma kernel may be a programmatic dependent launch
        helpers = ("griddep",) + helpers
    if env_var(E, "lp_gbar") is not None:  # stage_in's grid barrier (on the atomic add)
        helpers += tuple(h for h in ("atomic", "grid_sync") if h not in helpers)
    return kir.Kernel(
        name,
        params90(E, tma),
        kir.block(*grid_wait_head(), *body),
        cfg.threads,
        min_blocks=1,
        cluster=cfg.cluster,
        typedefs=(("lp_in_t", tin), ("lp_out_t", tout)),
        sizes={**type_sizes(prob), **({"unsigned": 4} if env_var(E, "lp_gbar") is not None else {})},
        functions=fns,
        devfns=devfns,
        description=descr,
        helpers=helpers,
        desc_fields={"a": desc["a"][0], "b": desc["b"][0]},
        wgmma=(cfg.bn, prob.dtype, 0 if a.kmajor else 1, 0 if b.kmajor else 1),
    )


def tma_loads_ir(
    E: Env,
    p: OperandPlan,
    tmap: kir.Var,
    base: kir.Var,
    st: kir.Expr,
    kt: kir.Expr,
    bar: kir.Expr,
    boxes: Optional[Tuple[int, ...]] = None,
    mask: Optional[int] = None,
    c2: Optional[kir.Expr] = None,
) -> List[kir.Stmt]:
    """The TMA box loads of tile ``kt`` of operand ``p`` into stage ``st`` on barrier ``bar``
    (the boxes :func:`~layoutproof.gpu.kernels.wgmma.prove_tma` proved, by the TMA
    pre-flight, to write exactly the stage layout).  In a batched kernel an operand that
    carries the batch index reads through a rank-3 tensor map at batch coordinate ``c2``
    (the tile's batch, :func:`batch_split_ir`)."""
    o0 = E.m0 if p.name == "a" else E.n0
    lay = p.maps["tma"]
    out: List[kir.Stmt] = []
    rows = min(p.loaded_rows, TMA_BOX)  # each box's rows (a partial box: the one box)
    for j in boxes if boxes is not None else range(-(-p.loaded_rows // TMA_BOX)):
        x = o0 + TMA_BOX * j
        k0 = kt * 64
        c0, c1 = (k0, x) if p.kmajor else (x, k0)
        xc = o0 + kir.Const(TMA_BOX * j)
        kc = kt * kir.Const(64)
        claim = kir.Claim(
            f"{p.name.upper()} TMA box {j} (stage, box origin (x {TMA_BOX * j}, k 0))",
            base
            + 2
            * (
                st * p.stage_elems
                + kir.LayoutApp(
                    lay, (kir.Const(TMA_BOX * j), kir.Const(0)), f"{p.name.upper()} TMA stage layout"
                )
            ),
            region=(base, 2 * p.stages * p.stage_elems),
            width=2 * rows * 64,
        )
        dst = base + st * kir.Const(2 * p.stage_elems, "unsigned") + kir.Const(TMA_BOX_BYTES * j, "unsigned")
        cc = (kc, xc) if p.kmajor else (xc, kc)
        if c2 is None:
            out.append(kir.TmaLoad(dst, tmap, c0, c1, bar, claim, cc, mask=mask))
        else:
            out.append(kir.TmaLoad(dst, tmap, c0, c1, bar, claim, cc, mask=mask, c2=c2))
    return out


def stage_bases_ir(E: Env, stages: int, a: OperandPlan) -> Tuple[kir.Var, kir.Var, kir.Decl, kir.Decl]:
    """The shared-memory addresses of the A and B stage buffers in the arena (``sA`` at its
    aligned start ``s0``, ``sB`` after the ``stages`` A stages) and their declarations."""
    sA, dA = ir_const("sA", E.s0, "unsigned")
    sB, dB = ir_const("sB", E.s0 + kir.Const(stages * 2 * a.stage_elems, "unsigned"), "unsigned")
    return sA, sB, dA, dB
