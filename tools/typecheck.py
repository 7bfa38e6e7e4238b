"""Type-check the package as users import it, without copying the tree.

The import package ``layoutproof`` lives in the folders ``algebra/`` (with its ``symbolic/``
sub-package), ``verify/``, ``proofs/`` and ``gpu/`` (pyproject's ``package-dir``).  mypy finds
modules by folder name and cannot follow setuptools' editable-install finder, so this tool
builds a *link tree* — ``build/typecheck/layoutproof/`` whose entries are symbolic links to the
real files and folders — and runs ``mypy -p layoutproof`` over it with the project's
``[tool.mypy]`` settings.  Nothing is copied: errors name the link paths, which mirror the
import names (``layoutproof/verify/result.py`` is ``verify/result.py``).

    python tools/typecheck.py            # mypy over the whole package
    python tools/typecheck.py --tree     # only (re)build the link tree and print its root
    python tools/typecheck.py -- FILE    # mypy over FILE with the package importable

The same tree serves the documentation build (docs/hooks.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# import name -> folder, as in pyproject.toml's [tool.setuptools] package-dir
PACKAGE_DIRS = {
    "layoutproof": "algebra",
    "layoutproof.verify": "verify",
    "layoutproof.proofs": "proofs",
    "layoutproof.gpu": "gpu",
    "layoutproof.serve": "serve",
}


def link_tree(repo: Path = ROOT, dest: Path | None = None) -> Path:
    """(Re)build the link tree; returns its root (the folder holding ``layoutproof/``)."""
    root = dest if dest is not None else repo / "build" / "typecheck"
    pkg = root / "layoutproof"
    pkg.mkdir(parents=True, exist_ok=True)
    subs = {name.split(".", 1)[1]: folder for name, folder in PACKAGE_DIRS.items() if "." in name}
    wanted: dict[str, Path] = {}
    for entry in (repo / PACKAGE_DIRS["layoutproof"]).iterdir():
        if entry.name == "__pycache__" or entry.name in subs:
            continue
        if entry.is_dir() or entry.suffix in (".py", ".typed"):
            wanted[entry.name] = entry
    for sub, folder in subs.items():
        wanted[sub] = repo / folder
    for existing in pkg.iterdir():
        target = wanted.get(existing.name)
        stale = target is None or not existing.is_symlink() or existing.resolve() != target
        if stale and (existing.is_symlink() or existing.is_file()):
            existing.unlink()
    for name, target in wanted.items():
        link = pkg / name
        if not link.is_symlink():
            link.symlink_to(target, target_is_directory=target.is_dir())
    return root


def main(argv: list[str]) -> int:
    root = link_tree()
    if argv[:1] == ["--tree"]:
        print(root)
        return 0
    env = dict(os.environ, MYPYPATH=str(root))
    files = argv[argv.index("--") + 1 :] if "--" in argv else []
    extra = [a for a in (argv[: argv.index("--")] if "--" in argv else argv)]
    cmd = [sys.executable, "-m", "mypy", "--config-file", str(ROOT / "pyproject.toml"), *extra]
    cmd += files if files else ["-p", "layoutproof"]
    return subprocess.call(cmd, cwd=root, env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
