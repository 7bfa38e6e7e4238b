"""``layoutproof gemm``: emit a proven GEMM kernel (Hopper wgmma or mma.sync); run, check, time it on a GPU.

    layoutproof gemm --m 4096 --n 4096 --k 4096 --dtype f16 --emit kernel.cu
    layoutproof gemm --path mma.sync --a-major m --b-major k --config 128x256x32/2x4/3
    layoutproof gemm --path wgmma --sm90-config 128x256/4 --emit kernel_sm90.cu
    layoutproof gemm --dtype e4m3 --out-dtype bf16 --m 8192 --n 8192 --k 8192 --emit fp8.cu
    layoutproof gemm --dtype bf16 --bias n --activation gelu --emit gemm_bias_gelu.cu
    layoutproof gemm --path tiny --m 1 --n 300 --k 700 --emit gemv.cu
    layoutproof gemm --groups 8 --m 8192 --n 14336 --k 4096 --dtype bf16 --emit moe.cu

``--path wgmma`` (the default) is the Hopper kernel (wgmma, sm_90a); ``--path mma.sync``
the SM80-style kernel that runs on any GPU from sm_80 on; ``--path tiny`` the one-launch
kernel of small products (operands read in place; ``--config KW/KU[nNI]`` its warps
splitting K, k-steps unrolled and 8-column blocks per warp, default the rule's pick).  ``--bias n|m`` and
``--activation relu|silu|gelu`` fuse ``C = act(A @ B + bias)``: the kernels
``gemm(a, b, bias=..., activation=...)`` runs for the shape -- the fused epilogue kernel,
or the plain product's kernel with the epilogue in a fix-up kernel -- with the epilogue's
proofs in the header.  ``--groups G`` is the grouped (mixture-of-experts) product of
``layoutproof.gpu.gemm_moe``: ``--m`` token rows over G experts, on the rule's base (or the
one ``--sm90-config`` names).  Without a GPU (or with
``--no-run``) it generates the kernel, discharges every proof obligation and writes the
source (whose header lists them).  With a GPU it also runs the
kernel on fresh random operands, compares with a float64 reference (relative Frobenius
error) and times it against cuBLAS (``cupy.matmul``) and, where PyTorch is installed, its
``torch.matmul`` (``torch.addmm`` + the activation for a fused call) in the same process.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from typing import Any, Dict, List, Optional, Tuple

from layoutproof.errors import LayoutError

from .config import TC_TYPES, GemmConfig, GemmProblem


def parse_config(text: str) -> GemmConfig:
    """``BMxBNxBK/WMxWN/STAGES`` (e.g. ``128x256x32/2x4/3``) -> GemmConfig."""
    m = re.fullmatch(r"\s*(\d+)x(\d+)x(\d+)\s*/\s*(\d+)x(\d+)\s*/\s*(\d+)\s*", text)
    if not m:
        raise LayoutError(f"--config {text!r}: expected BMxBNxBK/WMxWN/STAGES, e.g. 128x128x32/2x2/4")
    bm, bn, bk, wm, wn, st = (int(x) for x in m.groups())
    return GemmConfig(bm=bm, bn=bn, bk=bk, warps_m=wm, warps_n=wn, stages=st).validate()


def parse_tiny_config(text: str) -> "Any":
    """``KW/KU[nNI]`` (e.g. ``16/4``, ``8/2n2``) -> TinyConfig: ``KW`` warps splitting K,
    ``KU`` k-steps unrolled together, ``NI`` 8-column blocks per warp (default 1)."""
    from .kernels.tiny import TinyConfig

    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*(?:n\s*(\d+))?\s*", text)
    if not m:
        raise LayoutError(f"--config {text!r} with --path tiny: expected KW/KU[nNI], e.g. 16/4 or 8/2n2")
    kw, ku = int(m.group(1)), int(m.group(2))
    return TinyConfig(ni=int(m.group(3) or 1), kw=kw, ku=ku).validate()


_SCHEDULES: Dict[str, Dict[str, Any]] = {
    "ws": dict(loader="tma", schedule="ws"),
    "ws2": dict(loader="tma", schedule="ws", cluster=2),
    "tma": dict(loader="tma"),
    "cp": dict(loader="cp.async"),
    "pp": dict(loader="tma", schedule="pingpong"),
}


def parse_sm90_config(text: str) -> "Any":
    """``[KIND:]BMxBN/STAGES[rROWS][eOPS][sOPS]`` (e.g. ``128x256/4``, ``ws2:128x256/4``,
    ``64x64/8r16``, ``cp:64x128/6ea``) -> Sm90Config.  KIND: ``ws`` (default:
    warp-specialized, persistent, TMA), ``ws2`` (the same in 2-CTA clusters, B multicast),
    ``tma`` (one role, TMA loads), ``cp`` (one role, cp.async), ``pp`` (the ping-pong
    schedule: consumer warpgroups owning alternate 64-row tiles).  ``rROWS``: A's TMA box of
    16 or 32 rows (``Sm90Config.a_rows``; outputs of at most that many rows).  ``eOPS``
    (``a``, ``b`` or ``ab``; with ``cp``): those operands read in place by two-byte loads
    (``Sm90Config.elem_loads``).  ``sOPS`` (with ``ws``): those operands copied into their
    padded buffers by the kernel itself before a grid barrier (``Sm90Config.stage_in``)."""
    from .kernels.wgmma import Sm90Config

    m = re.fullmatch(
        r"\s*(?:(ws2|ws|tma|cp|pp)\s*:)?\s*(\d+)x(\d+)\s*/\s*(\d+)\s*(?:r\s*(\d+))?\s*(?:e\s*(ab|a|b))?"
        r"\s*(?:s\s*(ab|a|b))?\s*",
        text,
    )
    if not m:
        raise LayoutError(
            f"--sm90-config {text!r}: expected [ws|ws2|tma|cp|pp:]BMxBN/STAGES[rROWS][eOPS][sOPS], "
            "e.g. 128x256/4, 64x64/8r16, cp:64x128/6ea or 128x192/4sa"
        )
    kind = m.group(1) or "ws"
    bm, bn, st = (int(x) for x in m.groups()[1:4])
    rows = int(m.group(5)) if m.group(5) else 64
    ops, staged = m.group(6) or "", m.group(7) or ""
    return Sm90Config(
        bm=bm, bn=bn, stages=st, a_rows=rows, elem_loads=ops, stage_in=staged, **_SCHEDULES[kind]
    ).validate()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="layoutproof gemm", description=__doc__.split("\n\n")[0])
    p.add_argument("--m", type=int, default=4096, help="rows of A and C (default 4096)")
    p.add_argument("--n", type=int, default=4096, help="columns of B and C (default 4096)")
    p.add_argument(
        "--k", type=int, default=4096, help="the reduction extent: columns of A, rows of B (default 4096)"
    )
    p.add_argument(
        "--dtype",
        choices=["f16", "bf16", "tf32", "e4m3", "e5m2", "s8", "u8"],
        default="f16",
        help="f16/bf16, or one of the other tensor-core types (tf32, fp8 e4m3/e5m2, int8 s8/u8: "
        "the warp-specialized wgmma kernel, K-major operands)",
    )
    p.add_argument("--out-dtype", choices=["f16", "bf16", "f32", "s32"], default=None)
    p.add_argument(
        "--a-major", choices=["k", "m"], default="k", help="k: A row-major (default); m: A column-major"
    )
    p.add_argument(
        "--b-major",
        choices=["k", "n"],
        default=None,
        help="n: B row-major (the default for f16/bf16); k: B column-major (the only one, and the "
        "default, for the other types)",
    )
    p.add_argument(
        "--path",
        choices=["wgmma", "mma.sync", "tiny", "auto"],
        default="wgmma",
        help="wgmma: the Hopper kernel (default); mma.sync: the SM80-style kernel; tiny: the one-launch "
        "kernel of small products; auto: the one layoutproof.gpu.gemm runs on Hopper (path='auto': "
        "the decode rule's mma.sync tiles included)",
    )
    p.add_argument(
        "--config",
        default=None,
        help="with --path mma.sync: the block, BMxBNxBK/WMxWN/STAGES (default: the one gemm "
        "picks for the shape, layoutproof.gpu.host.rule.choose_config); with --path tiny: "
        "KW/KU[nNI] (default: layoutproof.gpu.host.tiny.tiny_config's pick)",
    )
    p.add_argument(
        "--sm90-config",
        default=None,
        help="with --path wgmma: [ws|ws2|tma|cp|pp:]BMxBN/STAGES[rROWS][eOPS] (rROWS: A's TMA box of "
        "16 or 32 rows, for --m at most that; eOPS, with cp: operands a, b or ab read by two-byte "
        "loads; default: the one gemm picks for the shape, with TMA)",
    )
    p.add_argument(
        "--bias",
        choices=["n", "m"],
        default=None,
        help="fuse a bias vector: one value per column of C (n) or per row (m)",
    )
    p.add_argument(
        "--bias-dtype",
        choices=["f32", "f16", "bf16", "s32"],
        default=None,
        help="the bias vector's type (default: the operands' type for f16/bf16; f32 for the other "
        "types, s32 for an s32 output)",
    )
    p.add_argument(
        "--activation",
        choices=["none", "relu", "silu", "gelu"],
        default="none",
        help="fuse an activation after the bias: C = act(A @ B + bias) (gelu is the erf form)",
    )
    p.add_argument(
        "--groups",
        type=int,
        default=None,
        metavar="G",
        help="a grouped (mixture-of-experts) product: --m token rows stacked over G groups, B one "
        "K x N matrix per expert (layoutproof.gpu.gemm_moe); the base is the rule's "
        "(grouped_config) or --sm90-config ws:128x256/4 or pp:64x256/5",
    )
    p.add_argument("--emit", metavar="FILE", default=None, help="write the proven CUDA source here")
    p.add_argument("--no-run", action="store_true", help="do not run on a GPU even if one is present")
    p.add_argument("--reps", type=int, default=20, help="timed repetitions on a GPU (>= 1, default 20)")
    return p


def _check_args(args: argparse.Namespace) -> Optional[str]:
    """The first problem with the arguments, or None."""
    if args.path == "auto" and (args.config is not None or args.sm90_config is not None):
        return (
            "--path auto takes the rule's kernel: give --config with --path mma.sync, "
            "--sm90-config with --path wgmma"
        )
    if args.config is not None and args.path not in ("mma.sync", "tiny"):
        return (
            f"--config is the mma.sync kernel's block or the tiny kernel's; this is --path {args.path} "
            "(use --sm90-config, or add --path mma.sync)"
        )
    if args.sm90_config is not None and args.path != "wgmma":
        return f"--sm90-config is the wgmma kernel's; this is --path {args.path} (use --config)"
    if args.b_major is None:
        args.b_major = "k" if args.dtype in TC_TYPES else "n"
    if args.dtype in TC_TYPES:
        if args.path in ("mma.sync", "tiny"):
            return f"--dtype {args.dtype} runs on the wgmma kernel (drop --path {args.path})"
        if args.a_major != "k" or args.b_major != "k":
            return (
                f"--dtype {args.dtype}: the tensor cores read K-major operands only (--a-major k --b-major k)"
            )
    if args.groups is not None:
        if not 1 <= args.groups <= 1024:
            return f"--groups must be in 1..1024, got {args.groups}"
        if args.dtype not in ("f16", "bf16") or args.a_major != "k" or args.path not in ("wgmma", "auto"):
            return (
                "--groups runs the grouped wgmma kernel: --dtype f16 or bf16, --a-major k, --path "
                f"wgmma or auto (got --dtype {args.dtype}, --a-major {args.a_major}, --path {args.path})"
            )
        if _epilogue(args) or args.config is not None or args.out_dtype not in (None, args.dtype):
            return "--groups takes no --bias, --activation, --config or other --out-dtype"
    if args.bias_dtype is not None and args.bias is None:
        return "--bias-dtype needs --bias n or --bias m"
    if args.bias_dtype == "s32" and args.dtype not in ("s8", "u8"):
        return f"--bias-dtype s32 is the integer products' (--dtype s8 or u8), not --dtype {args.dtype}'s"
    if args.reps < 1:
        return f"--reps must be >= 1, got {args.reps}"
    if args.emit is not None:
        if not args.emit.strip():
            return "--emit needs a file name"
        folder = os.path.dirname(os.path.abspath(args.emit))
        if os.path.isdir(args.emit):
            return f"cannot write {args.emit}: it is a directory"
        if not os.path.isdir(folder):
            return f"cannot write {args.emit}: no directory {folder}"
        if not os.access(folder, os.W_OK):
            return f"cannot write {args.emit}: the directory {folder} is not writable"
    return None


def _epilogue(args: argparse.Namespace) -> bool:
    """The call fuses a bias or an activation."""
    return args.bias is not None or args.activation != "none"


def _request(args: argparse.Namespace, prob: GemmProblem) -> Any:
    """The ``gemm`` call the arguments describe, as the rule sees it (fresh contiguous
    operands in the stated majors, a new row-major output)."""
    from .host.rule import GemmRequest, OperandFacts

    M, N, K = args.m, args.n, args.k
    it = 2  # f16/bf16 operands
    a = OperandFacts((M, K), (K * it, it) if prob.a_major == "k" else (it, M * it), it)
    b = OperandFacts((K, N), (N * it, it) if prob.b_major == "n" else (it, K * it), it)
    return GemmRequest(
        a=a,
        b=b,
        dtype=prob.dtype,
        out_dtype=prob.out,
        out_itemsize=4 if prob.out == "f32" else 2,
        path=args.path,
        activation=None if args.activation == "none" else args.activation,
        bias=args.bias is not None,
        bias_along=args.bias or "n",
        bias_dtype=(args.bias_dtype or prob.dtype) if args.bias else "f32",  # gemm's zero bias: f32
    )


def main(argv: Optional[List[str]] = None) -> int:
    args = _parser().parse_args(sys.argv[1:] if argv is None else argv)
    problem = _check_args(args)
    if problem is not None:  # before any proof: the arguments decide the kernel and the output
        print(f"layoutproof gemm: error: {problem}", file=sys.stderr)
        return 2
    fixup: Any = None  # the fix-up kernel, where the rule splits K or moves the epilogue there
    given: Any = None  # the configuration the arguments name (gemm adds the epilogue to it)
    try:
        prob = GemmProblem(args.a_major, args.b_major, args.dtype, args.out_dtype).validate()
        if min(args.m, args.n, args.k) < 1:
            raise LayoutError("--m, --n and --k must be >= 1")
        t0 = time.perf_counter()
        # without a configuration: the one gemm itself runs for this shape (the plan's rule)
        from .host.rule import choose_config

        if args.groups is not None:
            cfg, kern = _grouped_kernel(args, prob)
        elif args.path == "tiny":
            from dataclasses import replace

            from .host.cache import kernel_for
            from .host.tiny import tiny_config

            given = parse_tiny_config(args.config) if args.config else None
            tc = given or tiny_config(args.m, args.n, args.k, force=True)
            if tc is None:  # (force=True refuses by raising, never returns None)
                raise LayoutError("--path tiny: no tiny configuration for this product")
            cfg = tc
            if _epilogue(args):  # as gemm(..., path="tiny", bias=, activation=) fuses it
                cfg = replace(
                    tc,
                    activation=args.activation,
                    bias=(args.bias_dtype or prob.dtype) if args.bias else "f32",
                    bias_axis=args.bias or "n",
                )
            kern = kernel_for(cfg, prob, disk=False)
        elif args.dtype in TC_TYPES:
            from .host.cache import kernels_for
            from .host.typed import decide_typed, decide_typed_epilogue

            cfg = parse_sm90_config(args.sm90_config) if args.sm90_config else None
            # the rule's pick for an H100/H200's 132 SMs, as choose_config's default
            cfg = decide_typed(args.m, args.n, args.k, args.dtype, args.out_dtype, 132, cfg).config
            if _epilogue(args):  # the fused epilogue gemm(..., bias=, activation=) runs
                bdt = (args.bias_dtype or ("s32" if prob.out == "s32" else "f32")) if args.bias else None
                act = None if args.activation == "none" else args.activation
                fused = decide_typed_epilogue(
                    cfg, prob, activation=act, bias_dtype=bdt, bias_along=args.bias or "n"
                ).config
                cfg = fused if fused is not None else cfg
            kern, _ = kernels_for(cfg, prob, disk=False)
        else:
            from .errors import GemmConfigError
            from .host.cache import kernels_for
            from .host.rule import with_epilogue
            from .kernels.wgmma_core import a_box_rows

            hopper = args.path in ("wgmma", "auto")
            ep = _epilogue(args)
            shape = (args.m, args.n, args.k, prob)
            if args.sm90_config or args.config:
                cfg = given = parse_sm90_config(args.sm90_config) if hopper else parse_config(args.config)
                rows = a_box_rows(cfg)
                if rows < 64 and args.m > rows:
                    raise GemmConfigError(
                        f"--sm90-config {args.sm90_config!r} loads {rows} rows of A per tile: "
                        f"--m {args.m} must be at most {rows} (drop the r{rows} for more rows)"
                    )
            else:  # path='auto': the decode rule's mma.sync tiles too
                cfg = choose_config(*shape, hopper=hopper, tma=hopper, mma=args.path == "auto", epilogue=ep)
            if ep:  # the fused epilogue as gemm(..., bias=, activation=) carries it out
                cfg = with_epilogue(cfg, _request(args, prob), hopper, hopper)
            # the rule's kernel, with the split or one-plane kernel's fix-up where it takes one
            kern, fixup = kernels_for(cfg, prob, disk=False)
        dt = time.perf_counter() - t0
    except LayoutError as e:
        print(f"layoutproof gemm: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    print(
        f"kernel {kern.name}: {cfg.key()} {prob.key()}, {kern.threads} threads, "
        f"{kern.smem_bytes} B shared memory"
    )
    sw = (
        ""
        if kern.swizzles.get("a") is None and kern.swizzles.get("b") is None
        else (f"; swizzles A {kern.swizzles['a']}, B {kern.swizzles['b']}")
    )
    print(f"proved {len(kern.proofs)} obligations ({kern.proofs.cases} cases) in {dt:.2f} s{sw}")
    if fixup is not None:
        print(f"fix-up kernel {fixup.name}: {fixup.threads} threads, {len(fixup.proofs)} obligations proved")
    if args.emit is not None:
        stem, ext = os.path.splitext(args.emit)
        files = [(args.emit, kern)] + ([(f"{stem}_fixup{ext or '.cu'}", fixup)] if fixup is not None else [])
        for path, k in files:
            try:
                with open(path, "w") as f:
                    f.write(k.source)
            except OSError as e:
                print(f"layoutproof gemm: error: cannot write {path}: {e.strerror}", file=sys.stderr)
                return 2
            print(f"wrote {path} ({len(k.source)} bytes)")
    if args.no_run:
        return 0
    if args.dtype in TC_TYPES:
        print(
            f"generated and proved only: run .{args.dtype} products through "
            f"layoutproof.gpu.gemm (docs/gpu.md, 'Other number types'); bench/gemm_types.py "
            "checks and times them"
        )
        return 0
    from .host.device import gpu_available

    if not gpu_available():
        print("no GPU: generated and proved only (run on a CUDA machine to check and time it)")
        return 0
    if args.groups is not None:
        return _run_grouped(args, cfg, prob)
    # wgmma without an explicit --sm90-config: the runtime's default for this machine (the
    # TMA kernels need cuda-python; without it the cp.async kernel runs)
    return _run(args, given, prob)


def _grouped_kernel(args: argparse.Namespace, prob: GemmProblem) -> Tuple[Any, Any]:
    """The grouped kernel of ``--groups``: (its configuration, the kernel) -- the rule's base
    for ``--m`` rows over G groups at depth ``--k`` (``grouped_config``), or the base
    ``--sm90-config`` names."""
    from .host.grouped import grouped_config
    from .kernels.grouped import generate_grouped

    G = args.groups
    cfg = grouped_config(G, "contiguous", args.m, args.k)
    if args.sm90_config:
        from dataclasses import replace

        cfg = replace(cfg, base=parse_sm90_config(args.sm90_config)).validate()
    return cfg, generate_grouped(cfg, prob)


def _run_grouped(args: argparse.Namespace, cfg: Any, prob: GemmProblem) -> int:
    """``--groups`` on a GPU, on torch tensors: uneven group sizes (some empty) summing to
    ``--m``, the result checked group by group against float64, then timed against
    ``torch._grouped_mm`` where torch has it, else a loop of ``torch.matmul``."""
    try:
        import torch
    except ImportError:
        print("--groups runs on torch tensors: pip install torch (or use layoutproof.gpu.gemm_moe)")
        return 2
    import numpy as np

    from .host.grouped import gemm_moe

    M, N, K, G = args.m, args.n, args.k, args.groups
    rng = np.random.default_rng(0)
    w = rng.gamma(0.7, size=G)
    w[rng.random(G) < 0.15] = 0.0  # experts that get no token
    w = w if w.sum() > 0 else np.ones(G)
    sizes = rng.multinomial(M, w / w.sum())
    ends = np.cumsum(sizes)
    td = torch.float16 if prob.dtype == "f16" else torch.bfloat16
    gen = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randn((M, K), device="cuda", generator=gen).to(td)
    b = (torch.randn((G, K, N), device="cuda", generator=gen) / K**0.5).to(td)
    if prob.b_major == "k":
        b = b.transpose(1, 2).contiguous().transpose(1, 2)
    offs = torch.tensor(ends, device="cuda", dtype=torch.int32)
    c = gemm_moe(a, b, offs, config=cfg).double()
    err, beg = 0.0, 0
    for g in range(G):
        end = int(ends[g])
        if end > beg:
            ref = a[beg:end].double() @ b[g].double()
            err = max(err, float(torch.linalg.norm(c[beg:end] - ref) / torch.linalg.norm(ref)))
        beg = end
    print(f"groups: {G}, {int(sizes.min())}..{int(sizes.max())} rows each, {int((sizes == 0).sum())} empty")
    print(f"relative error vs float64 (worst group): {err:.2e}")
    peer_name = "torch.matmul per group"
    peer_fn: Any = None
    if hasattr(torch, "_grouped_mm"):
        try:
            bc = b.transpose(1, 2).contiguous().transpose(1, 2)  # the layout its kernel takes
            torch._grouped_mm(a, bc, offs=offs)
            peer_name, peer_fn = "torch._grouped_mm", lambda: torch._grouped_mm(a, bc, offs=offs)
        except Exception:  # a torch whose grouped kernel refuses this type or device
            peer_fn = None
    if peer_fn is None:
        begs = np.concatenate([[0], ends[:-1]])

        def peer_fn() -> None:
            for g in range(G):
                if ends[g] > begs[g]:
                    torch.matmul(a[int(begs[g]) : int(ends[g])], b[g])

    def timed(fn: Any) -> float:
        fn()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        ts = []
        for _ in range(args.reps):
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts.append(s.elapsed_time(e) / 1e3)
        return sorted(ts)[len(ts) // 2]

    t_ours = timed(lambda: gemm_moe(a, b, offs, config=cfg))
    t_peer = timed(peer_fn)
    flops = 2.0 * M * N * K
    print(
        f"TFLOP/s: layoutproof {flops / t_ours / 1e12:.1f}, {peer_name} {flops / t_peer / 1e12:.1f}; "
        f"ratio {t_peer / t_ours:.3f}"
    )
    return 0 if err < (2e-2 if prob.dtype == "bf16" else 5e-3) else 1


def _activation_f64(cupy: Any, act: str, x: Any) -> Any:
    """The activation in float64, the reference the fused epilogue is checked against."""
    if act == "relu":
        return cupy.maximum(x, 0.0)
    if act == "silu":
        return x / (1.0 + cupy.exp(-x))
    from cupyx.scipy.special import erf

    return 0.5 * x * (1.0 + erf(x / 2.0**0.5))


def _torch_peer(ah: Any, bh: Any, epi: Dict[str, Any]) -> Optional[Tuple[str, Any]]:
    """(name, call) of PyTorch's product on the same operands (shared through DLPack) --
    ``torch.matmul``, or ``torch.addmm`` with the bias and then the activation where the
    call fuses them -- or None without torch (or a torch that cannot share the arrays)."""
    try:
        import torch

        ta, tb = torch.from_dlpack(ah), torch.from_dlpack(bh)
        bias = torch.from_dlpack(epi["bias"]).to(ta.dtype) if "bias" in epi else None
    except Exception:  # no torch, or no DLPack exchange for this dtype: cuBLAS alone
        return None
    if bias is not None and epi.get("bias_along") == "m":
        bias = bias[:, None]
    act = {"relu": torch.relu, "silu": torch.nn.functional.silu, "gelu": torch.nn.functional.gelu}.get(
        epi.get("activation", ""), lambda x: x
    )
    if bias is None and "activation" not in epi:
        return "torch.matmul", lambda: torch.matmul(ta, tb)
    what = ("torch.addmm" if bias is not None else "torch.matmul") + (
        f" + {epi['activation']}" if "activation" in epi else ""
    )
    if bias is None:
        return what, lambda: act(torch.matmul(ta, tb))
    return what, lambda: act(torch.addmm(bias, ta, tb))


def _run(args: argparse.Namespace, cfg: Any, prob: GemmProblem) -> int:
    import cupy

    from .host.runtime import gemm

    M, N, K = args.m, args.n, args.k
    rng = cupy.random.default_rng()
    a = rng.standard_normal((M, K), dtype=cupy.float32)
    b = rng.standard_normal((K, N), dtype=cupy.float32)
    dt = cupy.float16
    if prob.dtype == "bf16":
        try:
            dt = cupy.dtype("bfloat16")
        except TypeError:
            print("this CuPy has no bfloat16 dtype: use the Python API with dtype='bf16'")
            return 2
    ah, bh = a.astype(dt), b.astype(dt)
    if prob.a_major == "m":
        ah = cupy.asfortranarray(ah)
    if prob.b_major == "k":
        bh = cupy.asfortranarray(bh)
    epi: Dict[str, Any] = {}
    ref = ah.astype(cupy.float64) @ bh.astype(cupy.float64)
    if _epilogue(args):
        if args.bias is not None:
            name = args.bias_dtype or prob.dtype
            try:
                bdt = {"f32": cupy.float32, "f16": cupy.float16}.get(name) or cupy.dtype("bfloat16")
            except TypeError:
                print("this CuPy has no bfloat16 dtype: use the Python API with a torch bias")
                return 2
            bias = rng.standard_normal(N if args.bias == "n" else M, dtype=cupy.float32).astype(bdt)
            epi.update(bias=bias, bias_along=args.bias)
            ref = ref + (bias[None, :] if args.bias == "n" else bias[:, None]).astype(cupy.float64)
        if args.activation != "none":
            epi["activation"] = args.activation
            ref = _activation_f64(cupy, args.activation, ref)
    c = gemm(ah, bh, config=cfg, out_dtype=prob.out, path=args.path, **epi)
    err = float(cupy.linalg.norm(c.astype(cupy.float64) - ref) / cupy.linalg.norm(ref))
    flops = 2.0 * M * N * K

    def timed(fn: Any, n: int) -> List[float]:
        s, e = cupy.cuda.Event(), cupy.cuda.Event()
        ts = []
        for _ in range(n):
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts.append(cupy.cuda.get_elapsed_time(s, e) / 1e3)
        return ts

    runs: List[Tuple[str, Any]] = [
        ("layoutproof", lambda: gemm(ah, bh, c, config=cfg, out_dtype=prob.out, path=args.path, **epi)),
        (f"cuBLAS (cupy.matmul{', the product alone' if epi else ''})", lambda: cupy.matmul(ah, bh)),
    ]
    peer = _torch_peer(ah, bh, epi)
    if peer is not None:
        runs.append(peer)
    for _nm, fn in runs:  # warm-up (and the first call's compile) outside the timing
        fn()
    cupy.cuda.Device().synchronize()
    # interleaved rounds, so that clock and temperature drift reach every contender alike
    times: Dict[str, List[float]] = {nm: [] for nm, _ in runs}
    rounds = min(5, args.reps)
    for r in range(rounds):
        for nm, fn in runs:
            times[nm] += timed(fn, args.reps // rounds + (r < args.reps % rounds))
    med = {nm: sorted(ts)[len(ts) // 2] for nm, ts in times.items()}
    t_ours = med.pop("layoutproof")
    print(f"relative error vs float64: {err:.2e}")
    tf = ", ".join(f"{nm} {flops / t / 1e12:.1f}" for nm, t in med.items())
    best = min(med.values())
    print(f"TFLOP/s: layoutproof {flops / t_ours / 1e12:.1f}, {tf}; ratio to the faster {best / t_ours:.3f}")
    return 0 if err < (2e-2 if prob.dtype == "bf16" else 5e-3) else 1


ANALYZE_DOC = """layoutproof analyze: banks, coalescing, wgmma, swizzles, index width and TMA of your layouts.

    layoutproof analyze banks "Sw<3,3,3> o (8,64):(64,1)" "((8,4),8):((1,64),8)" --instr ldmatrix.x4 --bits 16
    layoutproof analyze banks "(32,32):(32,1)" "32:1" --instr ld.shared.b32 --bits 32 --show --svg banks.svg
    layoutproof analyze coalesce "(64,64):(64,1)" "((8,4),(4,16)):((512,4),(1,64))" --bits 16
    layoutproof analyze wgmma "Sw<3,3,3> o (64,64):(64,1)" --bits 16
    layoutproof analyze swizzle "(8,64):(64,1)" --access "((8,4),8,2):((64,1),8,4):cp.async.16" \\
        --access "((8,4),8,2):((1,64),8,256):ldmatrix.x4" --bits 16
    layoutproof analyze width "(M,K):(K,1)" --assume "M <= 65536" --assume "K <= 32769"
    layoutproof analyze tma "(M,K):(K,1)" gmma:K:SW128 --tile 128,64 --dtype f16 \\
        --assume "K % 8 == 0" --assume "1 <= M <= 2**31" --assume "8 <= K <= 2**20"

DATA is the tile's layout (tile coordinate -> element offset; CuTe notation, C++ or DSL
spellings, a swizzle as ``Sw<B,M,S> o LAYOUT``); ACCESS the thread-value layout
(thread, value, rest...) -> tile coordinate.  Symbols need --assume facts.  Exit status:
0 proved, 1 refuted, 3 unknown, 2 bad input."""


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--assume", action="append", default=[], help="a fact about the symbols, e.g. 'K %% 8 == 0'"
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")


def _analyze_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="layoutproof analyze",
        description=ANALYZE_DOC.split("\n\n")[0],
        epilog=ANALYZE_DOC.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="what", required=True, metavar="{banks,coalesce,wgmma,swizzle,width,tma}")
    b = sub.add_parser("banks", help="shared-memory bank conflicts of an access, per instruction phase")
    b.add_argument("data", help="the tile's shared-memory layout")
    b.add_argument("access", help="the thread-value layout (thread, value, rest...) -> tile coordinate")
    b.add_argument("--bits", type=int, required=True, help="element width in bits")
    b.add_argument(
        "--instr", required=True, help="the instruction (ld.shared.b32, ldmatrix.x4, cp.async.16, ...)"
    )
    b.add_argument("--base", type=int, default=0, help="the tile's byte address modulo 128 (default 0)")
    b.add_argument(
        "--show", action="store_true", help="print the bank pattern of the first conflicting instruction"
    )
    b.add_argument("--svg", metavar="FILE", help="write the bank pattern, phase by phase, as an SVG picture")
    _common(b)
    c = sub.add_parser("coalesce", help="global-memory sectors and lines per warp request")
    c.add_argument("data", help="the global tensor's layout")
    c.add_argument("access", help="the thread-value layout (thread, value, rest...) -> tile coordinate")
    c.add_argument("--bits", type=int, required=True, help="element width in bits")
    c.add_argument("--vector", type=int, default=None, help="bytes per lane (default: the widest legal)")
    c.add_argument("--base", type=int, default=0, help="the tile's byte address modulo 128 (default 0)")
    _common(c)
    w = sub.add_parser("wgmma", help="whether wgmma reads an (MN, K) operand through descriptors, and which")
    w.add_argument("data", help="the operand's shared-memory layout, (mn, k) -> element offset")
    w.add_argument("--bits", type=int, required=True, help="element width in bits (8, 16 or 32)")
    w.add_argument("--major", choices=["K", "MN"], default=None, help="try one major-ness only")
    w.add_argument("--mn-block", type=int, default=None, help="rows per descriptor (64 for A; default all)")
    w.add_argument("--base", type=int, default=0, help="the tile's shared-memory byte address")
    _common(w)
    s = sub.add_parser(
        "swizzle", help="the least swizzle that makes every writer and reader of a tile conflict-free"
    )
    s.add_argument("data", help="the tile's unswizzled shared-memory layout")
    s.add_argument(
        "--access",
        action="append",
        required=True,
        metavar="TV:INSTR",
        help="an access: its thread-value layout, then ':' and the instruction "
        "(e.g. '((8,4),8,2):((1,64),8,256):ldmatrix.x4'); repeat for every writer and reader",
    )
    s.add_argument("--bits", type=int, required=True, help="element width in bits")
    s.add_argument("--tma", action="store_true", help="only the swizzles the TMA unit can write")
    s.add_argument(
        "--wgmma",
        choices=["K", "MN"],
        default=None,
        help="only the canonical wgmma layouts of that major-ness",
    )
    s.add_argument("--padding", action="store_true", help="also search the least row pad")
    s.add_argument("--base", type=int, default=0, help="the tile's byte address modulo 128 (default 0)")
    _common(s)
    x = sub.add_parser("width", help="every offset and intermediate of a layout fits int32 (or int64)")
    x.add_argument("data", help="the layout (symbols need --assume bounds)")
    x.add_argument("--bits", type=int, default=32, help="the index width in bits, 8..64 (default 32)")
    x.add_argument("--unsigned", action="store_true", help="an unsigned index type")
    x.add_argument("--base", type=int, default=0, help="an offset added to every index (a tile's start)")
    _common(x)
    t = sub.add_parser("tma", help="the cuTensorMapEncodeTiled arguments of a TMA load, checked and proved")
    t.add_argument("gmem", help="the global tensor's layout (symbols need --assume ranges)")
    t.add_argument(
        "smem", help="one tile's shared-memory layout, or a GMMA atom tiled to the tile: gmma:K:SW128"
    )
    t.add_argument("--tile", required=True, help="the CTA tile, one extent per global mode: 128,64")
    t.add_argument("--dtype", required=True, help="the element type (f16, bf16, f32, tf32, u8, e4m3, ...)")
    t.add_argument("--box", default=None, help="the box extents (default: the largest the tile allows)")
    t.add_argument("--interleave", default="NONE", help="NONE, 16B or 32B")
    t.add_argument("--l2", default="256B", help="L2 promotion: NONE, 64B, 128B or 256B")
    t.add_argument("--oob", default="NONE", help="out-of-bounds fill: NONE or NAN_REQUEST_ZERO_FMA")
    t.add_argument(
        "--base-align", type=int, default=None, help="the global base address's alignment in bytes"
    )
    t.add_argument(
        "--python", action="store_true", help="print the cuda.bindings call instead of the C++ one"
    )
    _common(t)
    return p


def _read_layout(text: str) -> Any:
    from layoutproof import ComposedLayout, Layout
    from layoutproof.cli import eval_names, read_foreign
    from layoutproof.notation import evaluate

    native, facts = read_foreign(text)
    if facts:
        raise LayoutError(f"{text!r} brings facts {facts}: state them with --assume")
    v = evaluate(native, eval_names())
    if not isinstance(v, (Layout, ComposedLayout)):
        raise LayoutError(f"{text!r} is not a layout (got {type(v).__name__})")
    return v


def _analyze_banks(args: argparse.Namespace) -> Tuple[Any, List[str]]:
    from .analysis import banks
    from .analysis.bank_picture import bank_pattern

    data, access = _read_layout(args.data), _read_layout(args.access)
    rep = banks(data, access, args.instr, element_bits=args.bits, base=args.base)
    lines = []
    if rep.wavefronts is not None:
        lines.append(f"wavefronts {rep.total} (minimum {rep.minimum}), worst phase {rep.max_ways}-way")
    if args.show or args.svg:
        pic = bank_pattern(data, access, args.instr, element_bits=args.bits, base=args.base)
        if args.show:
            lines.append(pic.text().rstrip("\n"))
        if args.svg:
            with open(args.svg, "w", encoding="utf-8") as f:
                f.write(pic.svg())
            lines.append(f"bank pattern written to {args.svg}")
    return rep, lines


def _analyze_coalesce(args: argparse.Namespace) -> Tuple[Any, List[str]]:
    from .analysis import coalescing

    data, access = _read_layout(args.data), _read_layout(args.access)
    rep = coalescing(data, access, element_bits=args.bits, vector_bytes=args.vector, base=args.base)
    lines = []
    if rep.sectors is not None and rep.min_sectors is not None and rep.lines is not None:
        lines.append(
            f"{rep.vector_bytes}-byte vectors (widest legal {rep.widest_bytes}); sectors "
            f"{int(rep.sectors.sum())} (minimum {int(rep.min_sectors.sum())}), lines "
            f"{int(rep.lines.sum())}, efficiency {rep.efficiency:.2f}"
        )
    return rep, lines


def _analyze_wgmma(args: argparse.Namespace) -> Tuple[Any, List[str]]:
    from .analysis.wgmma_operand import wgmma_operand

    rep = wgmma_operand(
        _read_layout(args.data),
        element_bits=args.bits,
        major=args.major,
        mn_block=args.mn_block,
        base=args.base,
    )
    lines = [
        f"{d['mn_offset']:>4},{d['k_offset']:>4}: {d['descriptor']} start {d['start_address']} "
        f"LBO {d['leading_byte_offset']} SBO {d['stride_byte_offset']} {d['swizzle']}"
        for d in rep.descriptors
    ]
    if lines:
        lines.insert(0, f"{rep.mode}; descriptors per (mn, k) block:")
    return rep, lines


def _analyze_swizzle(args: argparse.Namespace) -> Tuple[Any, List[str]]:
    from .analysis.swizzle import synthesize_swizzle

    accesses = []
    for spec in args.access:
        tv, sep, ins = spec.rpartition(":")  # the instruction follows the last ':'
        if not sep or not tv.strip() or not ins.strip():
            raise LayoutError(f"--access {spec!r}: expected TV:INSTR (the instruction after the last ':')")
        accesses.append((_read_layout(tv), ins.strip()))
    rep = synthesize_swizzle(
        _read_layout(args.data),
        accesses,
        element_bits=args.bits,
        tma=args.tma,
        wgmma=args.wgmma,
        base=args.base,
        padding=args.padding,
    )
    return rep, rep.text().splitlines()[1:]


def _analyze_width(args: argparse.Namespace) -> Tuple[Any, List[str]]:
    from .analysis.width import index_width

    rep = index_width(_read_layout(args.data), bits=args.bits, signed=not args.unsigned, base=args.base)
    lines = [rep.table().rstrip("\n")]
    if rep.overflows:
        lines.append("overflows:")
        lines += [f"  {o}" for o in rep.overflows]
    if rep.fits_note:
        lines.append(rep.fits_note)
    return rep, lines


def _ints(text: str, what: str) -> Tuple[int, ...]:
    try:
        return tuple(int(v) for v in text.replace("x", ",").split(",") if v.strip())
    except ValueError:
        raise LayoutError(f"{what} {text!r}: expected extents like 128,64") from None


def _analyze_tma(args: argparse.Namespace) -> Tuple[Any, List[str]]:
    from .analysis.tma import DATA_TYPES, data_type, tma_preflight
    from .isa.gmma import smem_atom, tile_to_shape

    tile = _ints(args.tile, "--tile")
    if args.smem.startswith("gmma:"):
        parts = args.smem.split(":")
        if len(parts) != 3:
            raise LayoutError(f"{args.smem!r}: a GMMA atom is written gmma:MAJOR:SWIZZLE, e.g. gmma:K:SW128")
        if len(tile) != 2:
            raise LayoutError(f"a GMMA atom tiles a rank-2 tile, --tile gives {len(tile)} extents")
        bits = 8 * DATA_TYPES[data_type(args.dtype)][1]
        smem = tile_to_shape(smem_atom(parts[1], parts[2], bits), (tile[0], tile[1])).layout
    else:
        smem = _read_layout(args.smem)
    rep = tma_preflight(
        _read_layout(args.gmem),
        smem,
        tile,
        dtype=args.dtype,
        box=_ints(args.box, "--box") if args.box else None,
        interleave=args.interleave,
        l2_promotion=args.l2,
        oob_fill=args.oob,
        base_align=args.base_align,
    )
    lines = rep.text().splitlines()[1:]
    if rep.args is not None:
        lines.append(rep.python() if args.python else rep.cpp())
    return rep, lines


_ANALYSES = {
    "banks": _analyze_banks,
    "coalesce": _analyze_coalesce,
    "wgmma": _analyze_wgmma,
    "swizzle": _analyze_swizzle,
    "width": _analyze_width,
    "tma": _analyze_tma,
}


def analyze_main(argv: Optional[List[str]] = None) -> int:
    """``layoutproof analyze ANALYSIS ...``: print the report (or JSON)."""
    import json

    from layoutproof.symbolic import assuming

    args = _analyze_parser().parse_args(sys.argv[1:] if argv is None else argv)
    try:
        with assuming(*args.assume):
            rep, lines = _ANALYSES[args.what](args)
    except (LayoutError, OSError) as e:
        print(f"layoutproof analyze: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rep.as_dict(), default=str, indent=1))
    else:
        print(rep.line())
        for line in lines:
            print(line)
    return {"proved": 0, "refuted": 1}.get(rep.status, 3)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
