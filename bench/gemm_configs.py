"""Side-by-side wgmma kernel variants against cuBLAS (same process, same operands).

    python bench/gemm_configs.py --configs ws:128x256/4,tma:128x256/4 --sizes 8192x8192x8192

A config is ``SCHEDULE:BMxBN/STAGES[/GROUP_M]`` with SCHEDULE ``ws`` (warp-specialized,
persistent, TMA), ``ws2`` (the same in 2-CTA clusters, B multicast), ``tma`` (one kernel
role, TMA loads) or ``cp`` (cp.async loads).  For each config: a correctness check on
awkward shapes (all four operand orders, NaN-poisoned output against float64), then the
speed at each size for f16 and bf16, timed in turns with cuBLAS (``cupy.matmul``;
``torch.matmul`` for bf16 where CuPy lacks bfloat16): the ratio is the median over rounds
of cuBLAS's batch time over ours in the same round, with the range.  Writes
``configs.json`` and the SASS instruction counts of each kernel.
"""

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import out_dir  # noqa: E402
from gemm import Ops  # noqa: E402


def parse(spec):
    from layoutproof.gpu.kernels.wgmma import Sm90Config

    sched, rest = spec.split(":")
    parts = rest.split("/")
    bm, bn = (int(v) for v in parts[0].split("x"))
    kw = dict(bm=bm, bn=bn, stages=int(parts[1]))
    if len(parts) > 2:
        kw["group_m"] = int(parts[2])
    if sched == "ws":
        kw.update(loader="tma", schedule="ws")
    elif sched == "ws2":
        kw.update(loader="tma", schedule="ws", cluster=2)
    elif sched == "tma":
        kw.update(loader="tma")
    return Sm90Config(**kw).validate()


def sass_stats(kern):
    """HGMMA / local-memory / setmaxnreg instruction counts of the compiled kernel (built
    and disassembled in a scratch folder: only the counts are kept)."""
    if shutil.which("cuobjdump") is None or shutil.which("nvcc") is None:
        return {}
    out = Path(tempfile.mkdtemp())
    src = out / f"{kern.name}.cu"
    src.write_text(kern.source)
    cub = out / f"{kern.name}.cubin"
    r = subprocess.run(
        [
            "nvcc",
            "-gencode=arch=compute_90a,code=sm_90a",
            "-cubin",
            "-std=c++17",
            "-Xptxas",
            "-v",
            "-o",
            str(cub),
            str(src),
        ],
        capture_output=True,
        text=True,
    )
    sass = subprocess.run(["cuobjdump", "-sass", str(cub)], capture_output=True, text=True).stdout
    ops = [ln.split()[1] if len(ln.split()) > 1 else "" for ln in sass.splitlines() if "/*" in ln]
    return dict(
        ptxas=r.stderr.strip().splitlines()[-3:],
        hgmma=sum("HGMMA" in o for o in ops),
        local=sum(o.startswith(("LDL", "STL")) for o in ops),
        setmaxreg=sum("SETMAXREG" in o for o in ops),
        instructions=len(ops),
    )


def interleaved(cp, fns, reps, rounds):
    """Batch times of each function, measured in turns: in every round each function runs
    one batch of ``reps`` back-to-back launches (events around the batch), the order
    rotating from round to round, so that clock and thermal drift fall on all of them alike.
    A round's ratio pairs the reference's batch with ours from the same round."""
    names = list(fns)
    for f in fns.values():  # warm-up
        for _ in range(3):
            f()
    cp.cuda.Device().synchronize()
    s, e = cp.cuda.Event(), cp.cuda.Event()
    times = {k: [] for k in names}
    for r in range(rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for k in order:
            s.record()
            for _ in range(reps):
                fns[k]()
            e.record()
            e.synchronize()
            times[k].append(cp.cuda.get_elapsed_time(s, e) / 1e3 / reps)
    return times


#: awkward shapes of the correctness check: 7 shapes x 4 operand orders x 2 output dtypes
CHECK_SHAPES = (
    (1, 1, 1),
    (37, 45, 51),
    (130, 260, 200),
    (129, 513, 1000),
    (1000, 3, 77),
    (640, 1290, 4096),
    (2000, 1100, 64),
)


def check_config(cp, ops, gemm, spec, cfg, rng, log):
    """``cfg`` on :data:`CHECK_SHAPES` in every operand order, f32 and f16 outputs poisoned
    with NaN, against float64; the summary line."""
    worst, bad, cases = 0.0, 0, 0
    for m, n, kk in CHECK_SHAPES:
        for ao in "CF":
            for bo in "CF":
                a = ops.make((m, kk), "f16", ao, rng)
                b = ops.make((kk, n), "f16", bo, rng)
                ref = a.astype(cp.float64) @ b.astype(cp.float64)
                for od in ("f32", "f16"):
                    c = cp.full((m, n), cp.nan, dtype=cp.float32 if od == "f32" else cp.float16)
                    gemm(a, b, c, config=cfg, out_dtype=od)
                    cp.cuda.Device().synchronize()
                    den = float(cp.linalg.norm(ref)) or 1.0
                    err = float(cp.linalg.norm(c.astype(cp.float64) - ref)) / den
                    ok = bool(np.isfinite(err)) and err < 5e-3
                    bad += not ok
                    cases += 1
                    worst = max(worst, err if np.isfinite(err) else 1e9)
                    log["checks"].append(
                        dict(config=spec, m=m, n=n, k=kk, a=ao, b=bo, out=od, err=err, ok=ok)
                    )
    return f"check {spec}: {cases - bad}/{cases} ok, worst rel. error {worst:.2e}"


def speed(cp, ops, gemm, cfgs, args, rng, log):
    """Every config of ``cfgs`` and cuBLAS in turns at each of ``--sizes`` and ``--dtypes``;
    one summary line per (config, dtype, size)."""
    lines = []
    for size in args.sizes.split(","):
        m, n, kk = (int(v) for v in size.split("x"))
        for dtype in args.dtypes.split(","):
            a = ops.make((m, kk), dtype, args.layout[0], rng)
            b = ops.make((kk, n), dtype, args.layout[1], rng)
            fl = 2.0 * m * n * kk
            if dtype == "f16" or ops.cp_bf16:
                ref_fn = lambda: cp.matmul(a, b)  # noqa: E731
            else:
                ta = ops.torch.randn(m, kk, device="cuda", dtype=ops.torch.bfloat16)
                tb = ops.torch.randn(kk, n, device="cuda", dtype=ops.torch.bfloat16)
                ref_fn = lambda: ops.torch.matmul(ta, tb)  # noqa: E731
            fns = {"cuBLAS": ref_fn}
            for spec, cfg in cfgs:
                c = gemm(a, b, config=cfg, **ops.kw(dtype))
                fns[spec] = lambda c=c, cfg=cfg: gemm(a, b, c, config=cfg, **ops.kw(dtype))
            times = interleaved(cp, fns, args.reps, args.rounds)
            for spec, _ in cfgs:
                ratios = sorted(r / o for r, o in zip(times["cuBLAS"], times[spec]))
                t = float(np.median(times[spec]))
                t_ref = float(np.median(times["cuBLAS"]))
                row = dict(
                    config=spec,
                    dtype=dtype,
                    m=m,
                    n=n,
                    k=kk,
                    ours_tflops=fl / t / 1e12,
                    ref_tflops=fl / t_ref / 1e12,
                    ratio=float(np.median(ratios)),
                    ratio_min=ratios[0],
                    ratio_max=ratios[-1],
                    rounds=len(ratios),
                )
                log["rows"].append(row)
                lines.append(
                    f"{spec:18s} {dtype:5s} {size:16s} ours {row['ours_tflops']:6.1f}  "
                    f"cuBLAS {row['ref_tflops']:6.1f}  ratio {row['ratio']:.3f} "
                    f"[{row['ratio_min']:.3f}, {row['ratio_max']:.3f}]"
                )
                print(lines[-1], flush=True)
    return lines


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--configs", default="ws:128x256/4,tma:128x256/4")
    p.add_argument("--sizes", default="8192x8192x8192,4096x4096x4096,4095x4097x4093")
    p.add_argument("--dtypes", default="f16,bf16")
    p.add_argument("--layout", default="CC")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--out", default=None, help="folder for configs.json (default bench/out/configs)")
    p.add_argument("--no-check", action="store_true")
    args = p.parse_args(argv)
    import cupy as cp

    from layoutproof.gpu.config import GemmProblem
    from layoutproof.gpu.host import cache, runtime

    out = out_dir("configs", args.out)
    ops = Ops(cp)
    dev = cp.cuda.runtime.getDeviceProperties(0)["name"]
    dev = dev.decode() if isinstance(dev, bytes) else str(dev)
    log = {"device": dev, "date": time.strftime("%Y-%m-%d %H:%M"), "rows": [], "checks": [], "sass": {}}
    cfgs = [(s, parse(s)) for s in args.configs.split(",")]
    rng = cp.random.default_rng(5)
    lines = []
    for spec, cfg in cfgs:
        t0 = time.perf_counter()
        k = cache.kernel_for(cfg, GemmProblem("k", "k", "f16", "f16"), disk=False)
        cache.compile_kernel(k)
        log["sass"][spec] = dict(sass_stats(k), obligations=len(k.proofs), build_s=time.perf_counter() - t0)
        if not args.no_check:
            lines.append(check_config(cp, ops, runtime.gemm, spec, cfg, rng, log))
            print(lines[-1], flush=True)
    lines += speed(cp, ops, runtime.gemm, cfgs, args, rng, log)
    (out / "configs.json").write_text(json.dumps(log, indent=1, default=str))
    print(f"\n== {dev} ==")
    for spec, st in log["sass"].items():
        print(f"{spec}: {st}")
    for ln in lines:
        print(ln)


if __name__ == "__main__":
    main()
