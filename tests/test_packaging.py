"""Packaging: what the wheel ships, what ``import layoutproof`` costs, that the README and
CI agree, the public API and its error hierarchy, behaviour under ``python -O``, and no
bare ``assert`` in the library.

The wheel test builds a real wheel (a few seconds; it stays in the default run because CI
must check it).  It builds without isolation when the running environment already has the
build backend (``setuptools>=68`` and ``wheel``, or ``setuptools>=70.1``, which ships
``bdist_wheel`` itself); otherwise pip builds in an isolated environment, which needs the
package index.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

import layoutproof

ROOT = Path(__file__).resolve().parents[1]

# folder in the repository -> package it becomes (the mapping pyproject.toml declares)
PACKAGE_DIRS = {
    "algebra": "layoutproof",
    "verify": "layoutproof.verify",
    "proofs": "layoutproof.proofs",
    "gpu": "layoutproof.gpu",
    "serve": "layoutproof.serve",
}
FORBIDDEN_TOP_LEVEL = {"algebra", "verify", "proofs", "gpu", "serve"}
HEAVY_MODULES = ("numpy", "sympy", "z3", "cupy", "cupyx", "scipy")
IMPORT_BUDGET_S = 0.150


def _marker_registered(name: str) -> bool:
    text = (ROOT / "pyproject.toml").read_text()
    m = re.search(r"^markers\s*=\s*\[(.*?)\]", text, re.S | re.M)
    return bool(m) and re.search(rf"[\"']{name}\s*:", m.group(1)) is not None


# Slow-ish (it builds a wheel) but part of the default run.  The marker is applied once
# pyproject.toml registers it, so that pytest never warns about an unknown marker.
slow = pytest.mark.slow if _marker_registered("slow") else (lambda f: f)


def _run(args, timeout=120, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)


def _fresh_env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    env.update(extra)
    return env


# ----------------------------------------------------------------------------- the wheel
def _version_tuple(v: str) -> tuple:
    return tuple(int(x) for x in re.findall(r"\d+", v)[:3])


def _can_build_offline() -> bool:
    try:
        st = _version_tuple(metadata.version("setuptools"))
    except metadata.PackageNotFoundError:
        return False
    if st >= (70, 1):
        return True
    if st < (68,):
        return False
    try:
        metadata.version("wheel")
    except metadata.PackageNotFoundError:
        return False
    return True


_NO_INDEX = re.compile(
    r"Could not find a version that satisfies|No matching distribution found|"
    r"Failed to establish a new connection|Temporary failure in name resolution|"
    r"Network is unreachable|ProxyError",
    re.I,
)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """Build the wheel from a clean copy of the sources (so that no build/ or egg-info
    lands in the repository, and stale build output cannot leak into the wheel)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build", "dist")
    for name in ("pyproject.toml", "README.md", "setup.py", "setup.cfg", "MANIFEST.in"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, src / name)
    for p in ROOT.iterdir():
        if p.name.upper().startswith(("LICENSE", "LICENCE", "NOTICE")) and p.is_file():
            shutil.copy2(p, src / p.name)
    for folder in PACKAGE_DIRS:
        shutil.copytree(ROOT / folder, src / folder, ignore=ignore)
    out = tmp / "dist"
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "wheel",
        str(src),
        "--no-deps",
        "-w",
        str(out),
        "--disable-pip-version-check",
        "-q",
    ]
    if _can_build_offline():
        cmd.append("--no-build-isolation")
    r = _run(cmd, timeout=300, cwd=tmp)
    if r.returncode != 0:
        log = r.stdout + r.stderr
        if "--no-build-isolation" not in cmd and _NO_INDEX.search(log):
            pytest.skip(
                "the isolated wheel build needs the package index (setuptools>=68, wheel), "
                "which is unreachable here; install them to build offline"
            )
        pytest.fail(f"building the wheel failed:\n{log[-4000:]}")
    wheels = list(out.glob("layoutproof-*.whl"))
    assert len(wheels) == 1, f"expected one layoutproof wheel, got {os.listdir(out)}"
    return wheels[0]


@slow
def test_wheel_top_level_is_only_layoutproof(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    tops = {n.split("/", 1)[0] for n in names}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert len(dist_info) == 1, tops
    assert tops - dist_info == {"layoutproof"}, f"unexpected top-level entries: {sorted(tops - dist_info)}"
    assert not (FORBIDDEN_TOP_LEVEL & tops)
    # top_level.txt (written by setuptools) must agree
    info = dist_info.pop()
    with zipfile.ZipFile(wheel) as z:
        if f"{info}/top_level.txt" in names:
            assert z.read(f"{info}/top_level.txt").decode().split() == ["layoutproof"]


@slow
def test_wheel_ships_every_subpackage_and_py_typed(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
    for must in (
        "layoutproof/__init__.py",
        "layoutproof/py.typed",
        "layoutproof/__main__.py",
        "layoutproof/cli.py",
        "layoutproof/verify/__init__.py",
        "layoutproof/proofs/__init__.py",
        "layoutproof/gpu/__init__.py",
    ):
        assert must in names, f"{must} missing from the wheel"
    # every Python file of every package folder (sub-packages included) is in the wheel at
    # its package path: a sub-package missing from pyproject's `packages` list shows here
    missing = []
    for folder, pkg in PACKAGE_DIRS.items():
        base = ROOT / folder
        for f in base.rglob("*.py"):
            if "__pycache__" in f.parts:
                continue
            rel = f.relative_to(base).as_posix()
            target = pkg.replace(".", "/") + "/" + rel
            if target not in names:
                missing.append(f"{folder}/{rel} -> {target}")
    assert not missing, "files not shipped in the wheel:\n" + "\n".join(missing)


@slow
def test_wheel_metadata(wheel):
    with zipfile.ZipFile(wheel) as z:
        info = next(n.split("/")[0] for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = z.read(f"{info}/METADATA").decode()
        eps = z.read(f"{info}/entry_points.txt").decode()
    assert re.search(r"^Name: layoutproof$", meta, re.M)
    version = re.search(r"^Version: (\S+)$", meta, re.M).group(1)
    assert version == layoutproof.__version__, "pyproject's version and layoutproof.__version__ differ"
    assert re.search(r"^Requires-Python: >=3\.10", meta, re.M)
    requires = re.findall(r"^Requires-Dist: ([A-Za-z0-9_.-]+)(.*)$", meta, re.M)
    runtime = {n.lower() for n, rest in requires if "extra ==" not in rest}
    assert {"numpy", "sympy", "z3-solver"} <= runtime
    assert re.search(r"^layoutproof\s*=\s*layoutproof\.cli:main$", eps, re.M)


@slow
def test_unpacked_wheel_imports_and_runs_the_demo(wheel, tmp_path):
    """The wheel's own files (not the editable checkout) import and run the main job."""
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        z.extractall(site)
    code = (
        "import layoutproof, layoutproof.verify, layoutproof.proofs, layoutproof.gpu, sys; "
        "print(layoutproof.__file__)"
    )
    env = _fresh_env(PYTHONPATH=str(site))
    r = _run([sys.executable, "-c", code], env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()).resolve().is_relative_to(site.resolve()), r.stdout
    r = _run([sys.executable, "-m", "layoutproof", "demo"], env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "witness coordinate 5" in r.stdout
    # the main job from the wheel's files: the catalog modules ship (a quick filter here;
    # the whole catalog runs in tests/proofs/test_proofs.py)
    r = _run(
        [
            sys.executable,
            "-m",
            "layoutproof",
            "prove",
            "--filter",
            "shah",
            "--report",
            str(tmp_path / "report"),
        ],
        env=env,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "refuted" in r.stdout and (tmp_path / "report" / "report.json").exists()


# ----------------------------------------------------------------------------- import cost
_PROBE = f"""
import json, sys, time
t = time.perf_counter()
import layoutproof
dt = time.perf_counter() - t
print(json.dumps({{"dt": dt, "loaded": [m for m in {HEAVY_MODULES!r} if m in sys.modules]}}))
"""


def _probe():
    r = _run([sys.executable, "-c", _PROBE], env=_fresh_env(), cwd=ROOT)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_import_is_lazy():
    """``import layoutproof`` pulls in none of numpy, sympy, z3, cupy (nor scipy)."""
    assert _probe()["loaded"] == []


def test_import_time_median_under_150ms():
    _probe()  # warm-up: byte-compile caches, file system caches
    times = [_probe()["dt"] for _ in range(5)]
    med = statistics.median(times)
    assert med < IMPORT_BUDGET_S, (
        f"median import time {med * 1e3:.1f} ms (runs: " + ", ".join(f"{t * 1e3:.1f}" for t in times) + " ms)"
    )


def test_numpy_only_when_needed():
    """The integer algebra never touches numpy; eval_all does."""
    code = """
import sys
from layoutproof import Layout, composition, complement, logical_divide, blocked_product
A = Layout.parse("(4,(2,2)):(2,(1,8))")
composition(A, Layout((2, 4), (1, 2))); complement(Layout(4, 2), 24)
logical_divide(Layout(16), Layout(4, 2)); blocked_product(Layout((2, 2)), Layout((2, 3)))
str(A); A(13); A(1, (1, 1)); A(3, None)
assert "numpy" not in sys.modules, "numpy imported by the integer algebra"
A.eval_all()
assert "numpy" in sys.modules
print("ok")
"""
    r = _run([sys.executable, "-c", code], env=_fresh_env(), cwd=ROOT)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


# ----------------------------------------------------------------------------- README and CI
def _sh_blocks(text: str) -> list[str]:
    return re.findall(r"^```sh[ \t]*\n(.*?)^```", text, re.S | re.M)


def _commands(block: str) -> list[str]:
    return [ln.strip() for ln in block.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def test_readme_has_exactly_two_setup_commands():
    blocks = _sh_blocks((ROOT / "README.md").read_text())
    assert len(blocks) == 2, f"README must hold exactly two ```sh blocks, found {len(blocks)}"
    cmds = [_commands(b) for b in blocks]
    assert all(len(c) == 1 for c in cmds), f"each ```sh block holds one command line: {cmds}"
    main, tests = cmds[0][0], cmds[1][0]
    assert main.startswith("pip install ") and main.endswith("layoutproof prove"), main
    assert "pytest" in tests and '".[test]"' in tests, tests


def test_ci_runs_the_readme_test_command_verbatim():
    blocks = _sh_blocks((ROOT / "README.md").read_text())
    test_cmd = next(c for b in blocks for c in _commands(b) if "pytest" in c)
    ci = ROOT / ".ci" / "run"
    lines = [ln.strip() for ln in ci.read_text().splitlines()]
    assert test_cmd in lines, f".ci/run does not run the README's test command:\n  {test_cmd}"
    # and that line is the last command CI runs, in strict mode, from a fresh venv
    code = [ln for ln in lines if ln and not ln.startswith("#")]
    assert code[-1] == test_cmd
    assert "set -euo pipefail" in lines
    assert any(re.search(r"-m venv\b", ln) for ln in lines)
    assert os.access(ci, os.X_OK), ".ci/run is not executable"


def test_test_dependencies_are_declared():
    """Every third-party module the tests import is installed by the README's test command:
    a runtime dependency, the ``test`` extra, or legacy pycute (nvidia-cutlass)."""
    text = (ROOT / "pyproject.toml").read_text()
    declared = {m.lower() for m in re.findall(r'"([A-Za-z0-9_.-]+)\s*[<>=!~;\[]', text)}
    # import name -> distribution
    dist = {
        "numpy": "numpy",
        "sympy": "sympy",
        "z3": "z3-solver",
        "pytest": "pytest",
        "hypothesis": "hypothesis",
        "build": "build",
        "pycute": "nvidia-cutlass",
        "_pytest": "pytest",
        "mpmath": "sympy",
        "cvc5": "cvc5",
        "torch": "torch",
        "tensor_layouts": "tensor-layouts",
        "starlette": "starlette",
        "uvicorn": "uvicorn",
        "httpx": "httpx",
        "selenium": "selenium",
    }
    local = {p.stem for p in (ROOT / "tests").rglob("*.py")} | {"layoutproof", "conftest"}
    local |= {p.stem for p in (ROOT / "bench").glob("*.py")}  # benches the tests run in dry mode
    # dsl_worker.py runs in a subprocess inside the CuTe DSL's own environment, which
    # tests/oracles.py installs on first use (its `cutlass` would shadow nvidia-cutlass's)
    workers = {"dsl_worker.py"}
    problems = []
    for f in sorted((ROOT / "tests").rglob("*.py")):
        if f.name in workers:
            continue
        tree = ast.parse(f.read_text(), str(f))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods = [node.module]
            else:
                continue
            for m in mods:
                top = m.split(".")[0]
                if top in sys.stdlib_module_names or top in local or top == "__future__":
                    continue
                d = dist.get(top)
                if d is None or d not in declared:
                    problems.append(f"{f.name}:{node.lineno}: {top} ({d or 'unknown distribution'})")
    assert not problems, "test imports not installed by the README's test command:\n" + "\n".join(problems)


# ----------------------------------------------------------------------------- public API
def test_every_name_in_all_exists():
    missing = [n for n in layoutproof.__all__ if not hasattr(layoutproof, n)]
    assert not missing
    assert len(set(layoutproof.__all__)) == len(layoutproof.__all__), "duplicates in __all__"


def test_version_matches_pyproject():
    m = re.search(r'^version\s*=\s*"([^"]+)"', (ROOT / "pyproject.toml").read_text(), re.M)
    assert m and m.group(1) == layoutproof.__version__


def test_py_typed_marker_present():
    assert (ROOT / "algebra" / "py.typed").is_file()


def test_error_hierarchy():
    from layoutproof import (
        InadmissibleError,
        LayoutError,
        MalformedLayoutError,
        OutOfDomainError,
        UndecidableConditionError,
    )

    assert issubclass(LayoutError, ValueError)
    for cls in (MalformedLayoutError, InadmissibleError, OutOfDomainError, UndecidableConditionError):
        assert issubclass(cls, LayoutError), cls
        assert cls.__name__ in layoutproof.__all__
    assert LayoutError.__name__ in layoutproof.__all__
    e = InadmissibleError("m", condition="shape divisibility", witness=4)
    assert (e.condition, e.witness, str(e)) == ("shape divisibility", 4, "m")
    assert InadmissibleError("m", condition="c").witness is None
    u = UndecidableConditionError("m", condition="M % 8 == 0")
    assert u.condition == "M % 8 == 0"


def test_errors_raised_by_the_algebra_carry_condition_and_witness():
    from layoutproof import InadmissibleError, Layout, complement, composition

    with pytest.raises(InadmissibleError) as ei:
        composition(Layout((6, 2), (1, 7)), Layout((3, 2), (2, 3)))
    assert "disjoint" in ei.value.condition and ei.value.witness == 5
    with pytest.raises(InadmissibleError) as ei:
        composition(Layout((4, 6), (1, 5)), Layout(6, 1))
    assert ei.value.condition == "shape divisibility" and ei.value.witness == 4
    with pytest.raises(InadmissibleError) as ei:
        complement(Layout((2, 2), (1, 3)), 16)
    assert "complement" in ei.value.condition and ei.value.witness == 2


def test_out_of_domain_is_also_an_index_error():
    from layoutproof import Layout, OutOfDomainError

    L = Layout(4, 2)
    with pytest.raises(OutOfDomainError):
        L(4)
    with pytest.raises(IndexError):
        L(-1)


# ----------------------------------------------------------------------------- python -O
def _last_exception_class(stderr: str) -> str:
    last = [ln for ln in stderr.strip().splitlines() if ln and not ln.startswith(" ")][-1]
    return last.split(":", 1)[0].rsplit(".", 1)[-1]


@pytest.mark.parametrize("flag", ["-O", "-OO"])
def test_malformed_input_raises_under_optimize(flag):
    r = _run(
        [sys.executable, flag, "-c", "import layoutproof; layoutproof.Layout((2,3),(1,))"],
        env=_fresh_env(),
        cwd=ROOT,
    )
    assert r.returncode == 1, (r.stdout, r.stderr)
    name = _last_exception_class(r.stderr)
    cls = getattr(layoutproof, name, None)
    assert isinstance(cls, type) and issubclass(cls, layoutproof.LayoutError), r.stderr
    assert name == "MalformedLayoutError"


@pytest.mark.parametrize("flag", ["-O", "-OO"])
def test_shah_composition_rejected_under_optimize(flag):
    code = """
import layoutproof as lp
try:
    lp.composition(lp.Layout((6, 2), (1, 7)), lp.Layout((3, 2), (2, 3)))
except lp.InadmissibleError as e:
    print(e.condition, e.witness, sep="|")
else:
    print("NOT RAISED")
"""
    r = _run([sys.executable, flag, "-c", code], env=_fresh_env(), cwd=ROOT)
    assert r.returncode == 0, r.stderr
    cond, witness = r.stdout.strip().split("|")
    assert "disjoint" in cond and witness == "5"


def test_demo_runs_under_OO():
    """``-OO`` strips docstrings: nothing may depend on them (argparse help, tables)."""
    r = _run([sys.executable, "-OO", "-m", "layoutproof", "demo"], env=_fresh_env(), cwd=ROOT)
    assert r.returncode == 0, r.stderr
    assert "witness coordinate 5" in r.stdout


# ----------------------------------------------------------------------------- dependency direction
# The layers (algebra core < symbolic < verify < proofs | gpu < the CLI, imports inside
# functions included) are an import-linter contract in pyproject.toml: tests/test_layers.py
# runs it on the package and shows that an upward import breaks it.


# ----------------------------------------------------------------------------- no bare assert
def test_no_bare_assert_in_the_library():
    """``assert`` vanishes under ``python -O``; the library checks with ``raise``."""
    found = []
    for folder in PACKAGE_DIRS:
        for f in sorted((ROOT / folder).rglob("*.py")):
            tree = ast.parse(f.read_text(), str(f))
            for node in ast.walk(tree):
                if isinstance(node, ast.Assert):
                    found.append(f"{f.relative_to(ROOT)}:{node.lineno}: assert")
                elif isinstance(node, ast.Raise) and node.exc is not None:
                    exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
                    if isinstance(exc, ast.Name) and exc.id == "AssertionError":
                        found.append(f"{f.relative_to(ROOT)}:{node.lineno}: raise AssertionError")
    assert not found, "\n".join(found)


def test_tree_is_ruff_clean():
    """The standard: the library, tests, benchmarks and tools are ruff-clean (pyproject's rules)
    and ruff-formatted (the pinned ruff of the test extra, as pre-commit runs it)."""
    import shutil

    ruff = shutil.which("ruff") or os.path.join(os.path.dirname(sys.executable), "ruff")
    if not os.path.exists(ruff):
        pytest.skip("ruff is not installed (it is in the test extra)")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    folders = ["algebra", "verify", "proofs", "gpu", "serve", "tests", "bench", "tools", "docs"]
    res = subprocess.run([ruff, "check", *folders], cwd=root, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-1000:]
    # and formatted: `ruff format` leaves every file as it is
    res = subprocess.run([ruff, "format", "--check", *folders], cwd=root, capture_output=True, text=True)
    assert res.returncode == 0, (
        "not ruff-formatted (run `ruff format`):\n" + res.stdout[-3000:] + res.stderr[-1000:]
    )


# ----------------------------------------------------------------------------- the edit loop
def test_slow_marks_name_existing_tests():
    """tests/slow_marks.py (the `slow` marker's measured list) names files and tests that
    exist: a renamed test must not silently fall into the quick edit loop's list -- or out
    of it."""
    import slow_marks

    missing = [f for f in sorted(slow_marks.SLOW_FILES) if not (ROOT / f).is_file()]
    for nodeid in sorted(slow_marks.SLOW_TESTS):
        path, _, name = nodeid.partition("::")
        f = ROOT / path
        if not f.is_file() or not re.search(rf"^\s*def {re.escape(name)}\(", f.read_text(), re.M):
            missing.append(nodeid)
    assert not missing, "tests/slow_marks.py names tests that do not exist:\n" + "\n".join(missing)
    assert slow_marks.is_slow("tests/test_adversarial.py::test_anything")
    some = sorted(slow_marks.SLOW_TESTS)[0]
    assert slow_marks.is_slow(some) and slow_marks.is_slow(some + "[a-param]")
    assert not slow_marks.is_slow("tests/algebra/test_inttuple.py::a_test_not_in_the_list")


def test_pyproject_loads_the_slow_marks_plugin():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.search(r'^addopts\s*=\s*".*-p slow_marks', text, re.M), (
        "pyproject's addopts must load slow_marks"
    )
    assert _marker_registered("slow")
