"""Launches of one proven GEMM for Nsight Compute (``ncu``): the shape, the type, the
configuration and the fused epilogue from the command line; a warm-up call first, then
``--calls`` profiled ones (``ncu --launch-skip`` the warm-up's kernels).

    ncu --clock-control none --section WarpStateStats --section SchedulerStats \\
        -k regex:lp_gemm --launch-skip 1 -c 1 python bench/profile_gemm.py 8192x8192x256 \\
        --dtype bf16 --config pp:64x256/5 --bias --act gelu

``--config``: ``rule`` (what ``gemm`` picks), an mma.sync ``BMxBNxBK/WMxWN/STAGES`` or a wgmma
``[ws|pp:]BMxBN/STAGES`` (the CLI's spellings).
"""

from __future__ import annotations

import argparse

import torch

from layoutproof.gpu.cli import parse_config, parse_sm90_config
from layoutproof.gpu.host.runtime import gemm


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("shape", help="MxNxK")
    ap.add_argument("--dtype", default="f16", choices=("f16", "bf16"))
    ap.add_argument("--config", default="rule")
    ap.add_argument("--bias", action="store_true", help="a bias along N in the operands' type")
    ap.add_argument("--act", default=None, help="relu, silu or gelu")
    ap.add_argument("--calls", type=int, default=1)
    args = ap.parse_args()
    m, n, k = (int(v) for v in args.shape.split("x"))
    cfg = None
    if args.config != "rule":
        cfg = parse_config(args.config) if args.config.count("/") == 2 else parse_sm90_config(args.config)
    torch.manual_seed(0)
    dt = torch.float16 if args.dtype == "f16" else torch.bfloat16

    def make(shape):
        return torch.randn(shape, dtype=dt, device="cuda")

    a, b = make((m, k)), make((k, n))
    c = torch.empty((m, n), dtype=dt, device="cuda")
    kw = dict(config=cfg)
    if args.bias or args.act:
        kw.update(bias=make((n,)), activation=args.act)
    gemm(a, b, c, **kw)
    torch.cuda.synchronize()
    for _ in range(args.calls):
        gemm(a, b, c, **kw)
    torch.cuda.synchronize()
    print("done", args.shape, args.dtype, args.config, kw.get("activation"))


if __name__ == "__main__":
    main()
