"""Check the import contract: ``layoutproof``'s layers, imports inside functions included.

The contract lives in pyproject.toml (``[tool.importlinter]``) and is checked by PyPI's
import-linter, whose import graph (grimp) reads every ``import`` statement of a module -- at
module level and inside functions alike.  Like mypy, import-linter finds a package by its folder,
so it runs over the link tree of ``tools/typecheck.py`` (``build/typecheck/layoutproof/``, links
to the real files: nothing is copied), with that tree first on ``sys.path``.

    python tools/layers.py              # check the contract over the package
    python tools/layers.py --root DIR   # check it over a link tree already built at DIR
    python tools/layers.py --verbose    # import-linter's own progress output too

Exit status: 0 when every contract is kept, 1 when one is broken (the report names each import
that breaks it: importer -> imported, with line numbers).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "pyproject.toml"

# import-linter's command line, run by this interpreter (whatever its virtual environment)
_LINT = "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())"


def link_tree(dest: Path | None = None) -> Path:
    """The link tree of the package (tools/typecheck.py's); returns its root."""
    spec = importlib.util.spec_from_file_location("_lp_typecheck", ROOT / "tools" / "typecheck.py")
    if spec is None or spec.loader is None:  # pragma: no cover - the file is in the repository
        raise RuntimeError("tools/typecheck.py not found")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    root: Path = module.link_tree(ROOT, dest)
    return root


def check(root: Path, config: Path = CONFIG, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run import-linter over the link tree at ``root`` (no cache); output captured."""
    env = dict(os.environ)
    # the link tree first: an installed (editable) layoutproof must not be what is analysed
    env["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [env.get("PYTHONPATH")])])
    cmd = [sys.executable, "-c", _LINT, "--config", str(config), "--no-cache", "--no-logo", *extra]
    return subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True)


def main(argv: list[str]) -> int:
    extra = list(argv)
    if "--root" in extra:
        i = extra.index("--root")
        root = Path(extra[i + 1])
        del extra[i : i + 2]
    else:
        root = link_tree()
    done = check(root, CONFIG, *extra)
    sys.stdout.write(done.stdout)
    sys.stderr.write(done.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
