"""Old text generators vs the kernel IR: are the emitted kernels the same machine code?

The generators before issue 16 wrote CUDA text with f-strings; now every kernel is built as
kernel IR (:mod:`layoutproof.gpu.proof.kir`) and printed by its one printer.  This script loads
the gpu/ package of an older commit (``git archive``) next to the current one, emits each
listed kernel with both, compiles both sources with ``nvcc -arch=sm_90a -cubin`` and
compares the cubins byte for byte (the kernel names are the same: they hash the generator
version, the config and the problem).  Identical cubins mean identical SASS, so no timing is
needed for those kernels.  No GPU is needed.  The generation columns are CPU seconds in one
process (the new generator runs first in each row, so it pays the lazy imports of the
first rows); ``--timing`` measures the default kernel cold, each run in a fresh process.

    python bench/ir_compare.py [--rev 85df0cd] [--quick] [--timing]
"""

from __future__ import annotations

import argparse
import importlib
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def old_package(rev: str, where: str) -> str:
    """Extract gpu/ of ``rev`` as the top-level package ``lp_old_gpu`` under ``where``."""
    blob = subprocess.run(["git", "-C", REPO, "archive", rev, "gpu"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(blob)) as tf:
        tf.extractall(where, filter="data")
    os.rename(os.path.join(where, "gpu"), os.path.join(where, "lp_old_gpu"))
    return "lp_old_gpu"


def cases(quick: bool):
    from layoutproof.gpu.config import GemmConfig, GemmProblem

    out = [
        ("mma.sync default", "codegen", "generate", GemmConfig(), GemmProblem()),
        ("ws default f16", "codegen_sm90", "generate_sm90", None, GemmProblem("k", "k")),
        (
            "ws default bf16",
            "codegen_sm90",
            "generate_sm90",
            None,
            GemmProblem("k", "k", dtype="bf16", out_dtype="bf16"),
        ),
    ]
    if not quick:
        from layoutproof.gpu.kernels.wgmma import Sm90Config

        out += [
            (
                "mma.sync bk64 m/n-major",
                "codegen",
                "generate",
                GemmConfig(bm=128, bn=128, bk=64, warps_m=2, warps_n=2, stages=3),
                GemmProblem("m", "k"),
            ),
            (
                "ws 2-CTA cluster",
                "codegen_sm90",
                "generate_sm90",
                Sm90Config(loader="tma", schedule="ws", cluster=2),
                GemmProblem("k", "k"),
            ),
            (
                "ws bm64 mn-major f32 out",
                "codegen_sm90",
                "generate_sm90",
                Sm90Config(bm=64, bn=128, loader="tma", schedule="ws"),
                GemmProblem("m", "n", out_dtype="f32"),
            ),
            (
                "mono cp.async",
                "codegen_sm90",
                "generate_sm90",
                Sm90Config(bn=128, stages=4),
                GemmProblem("k", "k"),
            ),
            ("mono TMA", "codegen_sm90", "generate_sm90", Sm90Config(loader="tma"), GemmProblem("k", "n")),
        ]
    return out


def compile_cubin(src: str, path: str) -> bytes:
    with open(path + ".cu", "w") as f:
        f.write(src)
    subprocess.run(
        ["nvcc", "-arch=sm_90a", "-cubin", "-o", path + ".cubin", path + ".cu"],
        check=True,
        capture_output=True,
    )
    with open(path + ".cubin", "rb") as f:
        return f.read()


_COLD = """
import importlib, sys, time
sys.path.insert(0, {path!r})
t0 = time.process_time()
m = importlib.import_module({pkg!r} + ".codegen_sm90")
import layoutproof.gpu.proof.lower  # noqa: F401  (sympy: imported by both)
t1 = time.process_time()
m.generate_sm90()
t2 = time.process_time()
print(t1 - t0, t2 - t1)
"""


def cold_timing(oldpkg: str, where: str, runs: int = 3) -> None:
    """Import and generate+prove CPU seconds of the default kernel, each in a fresh
    process (cold: nothing memoized), alternating old and new."""
    res: dict = {"old": [], "new": []}
    for _ in range(runs):
        for tag, pkg in (("old", oldpkg), ("new", "layoutproof.gpu")):
            out = subprocess.run(
                [sys.executable, "-c", _COLD.format(path=where, pkg=pkg)],
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()
            res[tag].append((float(out[0]), float(out[1])))
    print("| default kernel, cold (fresh process), CPU s | import | generate + prove |")
    print("|---|---|---|")
    for tag in ("old", "new"):
        imp = sorted(x[0] for x in res[tag])[len(res[tag]) // 2]
        gen = sorted(x[1] for x in res[tag])[len(res[tag]) // 2]
        print(
            f"| {'text generator' if tag == 'old' else 'kernel IR'} (median of {runs}) | "
            f"{imp:.2f} | {gen:.2f} |"
        )


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rev", default="85df0cd", help="the commit of the text generators")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--timing", action="store_true", help="only the cold generate+prove timing")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ir_compare_")
    sys.path.insert(0, tmp)
    oldpkg = old_package(args.rev, tmp)
    if args.timing:
        cold_timing(oldpkg, tmp)
        return 0
    rows = []
    jobs = []
    for label, mod, fn, cfg, prob in cases(args.quick):
        new = getattr(importlib.import_module(f"layoutproof.gpu.{mod}"), fn)
        old = getattr(importlib.import_module(f"{oldpkg}.{mod}"), fn)
        t = time.process_time()
        ks_new = new(cfg, prob, memo=False)
        t_new = time.process_time() - t
        ocfg = cfg
        if cfg is not None and mod == "codegen_sm90":  # the old module's own config class
            ocfg = importlib.import_module(f"{oldpkg}.{mod}").Sm90Config(**cfg.__dict__)
        t = time.process_time()
        ks_old = old(ocfg, prob, memo=False)
        t_old = time.process_time() - t
        if ks_new.name != ks_old.name:
            rows.append((label, "different kernel names", "", t_old, t_new))
            continue
        tag = "".join(ch if ch.isalnum() else "_" for ch in label)
        jobs.append((label, ks_old.source, ks_new.source, os.path.join(tmp, tag), t_old, t_new))
    with ThreadPoolExecutor(max_workers=2) as ex:
        futs = [
            (j, ex.submit(compile_cubin, j[1], j[3] + "_old"), ex.submit(compile_cubin, j[2], j[3] + "_new"))
            for j in jobs
        ]
        for (label, _o, _n, _p, t_old, t_new), fo, fn_ in futs:
            same = fo.result() == fn_.result()
            rows.append(
                (label, "identical cubin" if same else "CUBIN DIFFERS", f"{len(fo.result())} B", t_old, t_new)
            )
    print(f"| kernel | old ({args.rev}) vs IR | cubin | old gen CPU s | IR gen CPU s |")
    print("|---|---|---|---|---|")
    for label, verdict, size, t_old, t_new in rows:
        print(f"| {label} | {verdict} | {size} | {t_old:.2f} | {t_new:.2f} |")
    return 0 if all(r[1] == "identical cubin" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
