"""The enforced layers and the type checks, as CI runs them.

* The import contract (pyproject ``[tool.importlinter]``, checked by import-linter through
  ``tools/layers.py``) holds on the package -- and it is not vacuous: a lower module that imports
  a higher one, inside a function or at module level, breaks it, and the report names the import.
* mypy is clean on the whole package and ``--strict`` clean on the algebra core
  (``tools/typecheck.py``; slow: about a minute each).
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool(name: str):
    spec = importlib.util.spec_from_file_location(f"_lp_tool_{name}", ROOT / "tools" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


layers = _tool("layers")


def _report(done: subprocess.CompletedProcess) -> str:
    return (done.stdout + done.stderr).strip()


def _import_linter_missing() -> bool:
    return importlib.util.find_spec("importlinter") is None


needs_linter = pytest.mark.skipif(_import_linter_missing(), reason="import-linter is in the test extra")


# ----------------------------------------------------------------------------- the contract
@needs_linter
def test_the_import_contract_holds_on_the_package():
    done = layers.check(layers.link_tree())
    assert done.returncode == 0, "the import contract is broken:\n" + _report(done)[-6000:]


@needs_linter
def test_every_contract_is_checked():
    done = layers.check(layers.link_tree())
    text = _report(done)
    assert "layoutproof layers" in text and "imported by the command line only" in text, text[-3000:]


def _planted_tree(tmp_path: Path, replace: dict[str, str]) -> Path:
    """A link tree of the package in which the files named in ``replace`` (paths inside the
    package, e.g. ``budget.py`` or ``verify/result.py``) are real files: the original text
    plus the given lines."""
    root = layers.link_tree(tmp_path / "tree")
    pkg = root / "layoutproof"
    for rel, extra in replace.items():
        parts = Path(rel).parts
        for depth in range(1, len(parts)):  # each enclosing folder link becomes a folder of links
            sub = pkg.joinpath(*parts[:depth])
            if not sub.is_symlink():
                continue
            real = sub.resolve()
            sub.unlink()
            sub.mkdir()
            for entry in real.iterdir():
                if entry.name != "__pycache__":
                    (sub / entry.name).symlink_to(entry, target_is_directory=entry.is_dir())
        target = pkg / rel
        text = target.resolve().read_text()
        target.unlink()
        target.write_text(text + "\n\n" + extra + "\n")
    return root


PLANTED = [
    # a core module reaching up into verify, inside a function (what the AST check of old missed
    # when the import went through a string, and what import-linter must see)
    (
        "budget.py",
        "def _planted():\n    from layoutproof.verify import equal\n\n    return equal\n",
        "layoutproof.budget",
        "layoutproof.verify",
    ),
    # the core importing the command line at module level
    ("errors.py", "import layoutproof.cli  # noqa: E402\n", "layoutproof.errors", "layoutproof.cli"),
    # the symbolic layer reaching into the readers above it
    (
        "symbolic/smt.py",
        "def _planted():\n    from layoutproof.notation import evaluate\n\n    return evaluate\n",
        "layoutproof.symbolic.smt",
        "layoutproof.notation",
    ),
    # the core importing the façade: the façade imports the extensions, so that is an upward
    # chain (core -> layoutproof -> symbolic, composed, ...)
    (
        "inttuple.py",
        "def _planted():\n    import layoutproof\n\n    return layoutproof\n",
        "layoutproof.inttuple",
        "layoutproof",
    ),
    # proofs and gpu are independent of each other
    (
        "gpu/config.py",
        "def _planted():\n    import layoutproof.proofs.catalog\n",
        "layoutproof.gpu.config",
        "layoutproof.proofs.catalog",
    ),
    # the GPU back end's rooms point one way: the hardware tables never reach the kernels
    (
        "gpu/isa/atoms.py",
        "def _planted():\n    from layoutproof.gpu.kernels import wgmma\n\n    return wgmma\n",
        "layoutproof.gpu.isa.atoms",
        "layoutproof.gpu.kernels.wgmma",
    ),
    # ... nor does the proof machinery reach the host side
    (
        "gpu/proof/kir.py",
        "def _planted():\n    from layoutproof.gpu.host import rule\n\n    return rule\n",
        "layoutproof.gpu.proof.kir",
        "layoutproof.gpu.host.rule",
    ),
]


@needs_linter
@pytest.mark.parametrize("rel, code, importer, imported", PLANTED, ids=[p[0] for p in PLANTED])
def test_an_upward_import_breaks_the_contract(tmp_path, rel, code, importer, imported):
    root = _planted_tree(tmp_path, {rel: code})
    done = layers.check(root)
    text = _report(done)
    assert done.returncode == 1, text[-3000:]
    flat = re.sub(r"\s+", " ", text)
    assert "is not allowed to import" in flat, text[-3000:]
    assert f"{importer} -> {imported}" in flat, text[-3000:]


@needs_linter
def test_only_the_command_line_imports_a_command_module(tmp_path):
    code = "def _planted():\n    from layoutproof.verify import cli\n\n    return cli\n"
    root = _planted_tree(tmp_path, {"verify/result.py": code})
    done = layers.check(root)
    flat = re.sub(r"\s+", " ", _report(done))
    assert done.returncode == 1
    assert "imported by the command line only BROKEN" in flat, flat[-3000:]
    assert "layoutproof.verify.result" in flat and "layoutproof.verify.cli" in flat, flat[-3000:]


@needs_linter
def test_a_planted_tree_without_the_import_is_judged_like_the_package(tmp_path):
    """The planting itself (real files in place of links) changes nothing: a planted file
    whose extra text imports nothing is judged as the package is."""
    root = _planted_tree(tmp_path, {"budget.py": "_PLANTED = 1\n", "verify/result.py": "_PLANTED = 1\n"})
    planted = layers.check(root)
    real = layers.check(layers.link_tree())
    assert planted.returncode == real.returncode, _report(planted)[-3000:]


# ----------------------------------------------------------------------------- types
def _typecheck(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "tools" / "typecheck.py"), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )


def _core_modules() -> list[str]:
    """The modules of pyproject's strict override (the one with disallow_untyped_defs) that exist."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        pytest.skip("reading pyproject.toml needs tomllib (Python 3.11)")
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())
    strict = [o for o in cfg["tool"]["mypy"]["overrides"] if o.get("disallow_untyped_defs")]
    assert len(strict) == 1, "pyproject.toml should hold one strict override (the algebra core)"
    folder = ROOT / "algebra"
    names = [
        m for m in strict[0]["module"] if (folder / (m.split(".", 1)[1].replace(".", "/") + ".py")).exists()
    ]
    assert names, "the strict override names no existing module"
    return names


def _errors(done: subprocess.CompletedProcess) -> str:
    lines = (done.stdout + done.stderr).splitlines()
    errs = [ln for ln in lines if ": error:" in ln]
    return "\n".join(errs[:200] + lines[-3:])


@pytest.mark.slow
def test_mypy_is_clean_on_the_whole_package():
    pytest.importorskip("mypy")
    done = _typecheck()
    assert done.returncode == 0, "mypy over the package:\n" + _errors(done)


@pytest.mark.slow
def test_mypy_strict_is_clean_on_the_algebra_core():
    pytest.importorskip("mypy")
    mods = [a for m in _core_modules() for a in ("-m", m)]
    done = _typecheck("--strict", "--follow-imports=silent", "--", *mods)
    assert done.returncode == 0, "mypy --strict over the algebra core:\n" + _errors(done)
