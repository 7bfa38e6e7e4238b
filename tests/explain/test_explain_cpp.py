"""The C++ that ``Explanation.render("cpp")`` emits compiles against the CuTe headers of the
nvidia-cutlass wheel (as the C++ export is tested, tests/algebra/test_interop.py): the static
form with ``Int<k>`` values, the runtime form with ``int`` values; and the checks behave --
the static one fails to compile where the assumption is false, the runtime one aborts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from oracles import cutlass_include, cxx_compiler, source_suffix

from layoutproof.explain import render_assumptions

CONDS = [
    "M % 64 == 0",
    "M >= 128",
    "(128 <= M) or (128 % M == 0)",
    "(N % 8 == 0) and (M % 64 == 0)",
    "floor(M/64) >= 2",
]


def _program(m: str, n: str, body: str) -> str:
    return (
        "#include <stdexcept>\n#include <cute/layout.hpp>\nusing namespace cute;\n"
        f"int main() {{\n  auto M = {m};\n  auto N = {n};\n  (void)M; (void)N;\n{body}\n  return 0;\n}}\n"
    )


@pytest.fixture(scope="module")
def cc():
    inc = cutlass_include()
    if inc is None:
        pytest.skip("no CuTe headers (the nvidia-cutlass wheel ships them)")
    c = cxx_compiler(inc)
    if c is None:
        pytest.skip("no C++ compiler (g++ with CUDA's CCCL headers, or nvcc)")
    return c


def _build(cc, tmp_path: Path, src: str, name: str):
    f = tmp_path / f"{name}{source_suffix(cc)}"
    f.write_text(src)
    exe = tmp_path / name
    return subprocess.run([*cc, str(f), "-o", str(exe)], capture_output=True, text=True, timeout=300), exe


def test_static_and_runtime_checks_compile_and_hold(cc, tmp_path):
    static = "\n".join("  " + render_assumptions([c], "cpp", static=["M", "N"]) for c in CONDS)
    runtime = "\n".join("  " + render_assumptions([c], "cpp") for c in CONDS)
    ok, exe = _build(cc, tmp_path, _program("Int<128>{}", "Int<16>{}", static), "static_ok")
    assert ok.returncode == 0, ok.stderr[-3000:]
    ok, exe = _build(cc, tmp_path, _program("128", "16", runtime), "runtime_ok")
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert subprocess.run([str(exe)], timeout=60).returncode == 0
    # false at M = 96: the static check does not compile, the runtime one aborts
    bad, _ = _build(cc, tmp_path, _program("Int<96>{}", "Int<16>{}", static), "static_bad")
    assert bad.returncode != 0 and "static assert" in bad.stderr.lower().replace("_", " ")
    ok, exe = _build(cc, tmp_path, _program("96", "16", runtime), "runtime_bad")
    assert ok.returncode == 0, ok.stderr[-3000:]
    assert subprocess.run([str(exe)], capture_output=True, timeout=60).returncode != 0
