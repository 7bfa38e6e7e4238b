"""The real implementations as test oracles: where they live, how to run many cases
through one program that may die on some of them, and how to read what they print.

* CuTe DSL (``nvidia-cutlass-dsl``): installed from PyPI on first use into a cache folder
  (``LAYOUTPROOF_DSL_PATH``, default ``~/.cache/layoutproof/cutlass-dsl-4.8.1``), beside --
  not into -- the test environment, because its ``cutlass`` package would shadow the one of
  the ``nvidia-cutlass`` wheel that carries legacy pycute and the CuTe C++ headers.  It runs
  in subprocesses with that folder on ``PYTHONPATH``; on a machine without a GPU it
  computes layouts while a ``@cute.jit`` function is traced.
* CuTe C++ and CUTLASS 2.x: the headers of the ``nvidia-cutlass`` wheel
  (:func:`cutlass_include`), compiled by g++ with CUDA's CCCL headers, else nvcc
  (:func:`cxx_compiler`).
* Programs that may crash on a case (CuTe C++ divides by zero on some inputs, the DSL
  raises SIGFPE on others) are driven by :func:`run_resuming`: each case is announced with
  ``S k`` before it runs, answered with ``R k ...`` (a result) or ``E k ...`` (an error),
  and a run that dies is resumed after the case that killed it.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple, Union

DSL_VERSION = "4.8.1"
DSL_PACKAGES = [
    f"nvidia-cutlass-dsl=={DSL_VERSION}",
    f"nvidia-cutlass-dsl-libs-base=={DSL_VERSION}",
    f"nvidia-cutlass-dsl-libs-core=={DSL_VERSION}",
    f"nvidia-cutlass-dsl-libs-cu12=={DSL_VERSION}",
    "cuda-bindings==13.5.0",
    "cuda-pathfinder==1.9.1",
    "protobuf",
]

_dsl_state: Dict[str, Optional[str]] = {}


def cutlass_include(probe: str = "cute/layout.hpp") -> Optional[Path]:
    """The include folder of the ``nvidia-cutlass`` wheel (CuTe and CUTLASS headers), or
    None where the wheel (or the header ``probe``) is missing."""
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.submodule_search_locations:
        return None
    inc = Path(list(spec.submodule_search_locations)[0]) / "source" / "include"
    return inc if (inc / probe).is_file() else None


def cxx_compiler(inc: Path) -> Optional[List[str]]:
    """The command prefix that compiles a C++17 program against ``inc``: g++ (or clang++)
    with CUDA's headers (CCCL's ``cuda/std``, the runtime's types the CUTLASS headers
    include), else nvcc, else None.  Warnings are off: the headers are not ours."""
    nvcc = shutil.which("nvcc")
    roots = [os.environ.get("CUDA_HOME", ""), os.environ.get("CUDA_PATH", ""), "/usr/local/cuda"]
    if nvcc:
        roots.append(str(Path(nvcc).resolve().parents[2]))
    gxx = shutil.which("g++") or shutil.which("clang++")
    for r in roots:
        cuda = Path(r) / "include" if r else None
        if (
            cuda
            and gxx
            and (cuda / "cccl" / "cuda" / "std" / "utility").is_file()
            and (cuda / "cuda_runtime.h").is_file()
        ):
            return [gxx, "-std=c++17", "-O0", "-w", f"-I{inc}", f"-I{cuda / 'cccl'}", f"-I{cuda}"]
    if nvcc:
        return [nvcc, "-std=c++17", "-w", f"-I{inc}"]
    return None


def source_suffix(cc: List[str]) -> str:
    """The suffix a source file needs for the compiler ``cc`` (nvcc compiles .cu as C++)."""
    return ".cu" if Path(cc[0]).name.startswith("nvcc") else ".cpp"


def _dsl_ok(root: Path) -> bool:
    return (root / "nvidia_cutlass_dsl" / "dsl_packages" / "cutlass" / "cute" / "__init__.py").is_file()


def dsl_env() -> Tuple[Optional[Dict[str, str]], str]:
    """``(environment for a subprocess that imports cutlass.cute, "")``, installing the DSL
    on first use; ``(None, why)`` where it cannot be installed (no network, no wheel for
    this Python)."""
    if "env" in _dsl_state:
        env_path, why = _dsl_state["env"], _dsl_state.get("why") or ""
    else:
        root = Path(
            os.environ.get("LAYOUTPROOF_DSL_PATH")
            or Path.home() / ".cache" / "layoutproof" / f"cutlass-dsl-{DSL_VERSION}"
        )
        why = ""
        if not _dsl_ok(root):
            root.mkdir(parents=True, exist_ok=True)
            cmd = [sys.executable, "-m", "pip", "install", "--quiet", "--target", str(root), "--no-deps"]
            try:
                res = subprocess.run(cmd + DSL_PACKAGES, capture_output=True, text=True, timeout=600)
                if res.returncode != 0:
                    why = f"pip could not install the CuTe DSL {DSL_VERSION}: {res.stderr.strip()[-300:]}"
            except (OSError, subprocess.TimeoutExpired) as e:
                why = f"pip could not install the CuTe DSL {DSL_VERSION}: {e}"
        if not why and not _dsl_ok(root):
            why = f"the CuTe DSL {DSL_VERSION} installed into {root} has no cutlass.cute"
        env_path = None if why else str(root)
        _dsl_state.update(env=env_path, why=why)
    if env_path is None:
        return None, why
    env = dict(os.environ)
    pkgs = str(Path(env_path) / "nvidia_cutlass_dsl" / "dsl_packages")
    env["PYTHONPATH"] = os.pathsep.join([pkgs, env_path])
    return env, ""


Result = Union[Tuple[str, str], Tuple[str, int]]


def run_resuming(argv: List[str], lines: List[str], env: Optional[Dict[str, str]] = None, timeout: int = 600):
    """Feed ``lines`` (case ``k`` is ``lines[k]``) to the program ``argv``; returns
    ``{k: ("R", text) | ("E", text) | ("crash", signal name)}``.  A run that dies is resumed
    after the case announced last."""
    out: Dict[int, Result] = {}
    start = 0
    while start < len(lines):
        res = subprocess.run(
            argv, input="".join(lines[start:]), capture_output=True, text=True, timeout=timeout, env=env
        )
        last = None
        for line in res.stdout.splitlines():
            tag, _, rest = line.partition(" ")
            if tag == "S":
                last = int(rest)
            elif tag in ("R", "E"):
                k, _, text = rest.partition(" ")
                out[int(k)] = (tag, text)
        if res.returncode == 0:
            break
        if last is None or last in out:
            raise RuntimeError(
                f"{argv[0]} died outside a case (status {res.returncode}): {res.stderr[-2000:]}"
            )
        rc = res.returncode
        out[last] = ("crash", signal.Signals(-rc).name if rc < 0 else f"exit status {rc}")
        start = last + 1
    return out


def parse_layout(text: str):
    """A CuTe print -- ``(4,2):(_2,_1)`` from C++, ``(4,2):(2,1)`` from the DSL -- as
    ``(shape, stride)`` of Python ints and tuples."""
    text = text.replace("_", "").strip()
    depth = 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == ":" and depth == 0:
            return _tuple(text[:i]), _tuple(text[i + 1 :])
    raise ValueError(f"not a CuTe layout print: {text!r}")


def _tuple(t: str):
    t = t.strip()
    return ast.literal_eval(t.replace(")", ",)") if t.startswith("(") else t)


class Peer:
    """A peer's result as the differential decision rules read it: ``shape``, ``stride``."""

    def __init__(self, shape, stride) -> None:
        self.shape, self.stride = shape, stride


class PeerError(Exception):
    """A peer refused a case (its error type and message) or died on it."""
