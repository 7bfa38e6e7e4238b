"""Do two revisions emit the same kernels?  Records every kernel source the GPU back end
prints while a test run generates its kernels, once per revision, and compares the two
recordings.

Every kernel leaves the package through the kernel IR's one printer, so equal printed
sources (past the proof-summary header) are the exact test that a change to the generators,
the proofs or the host left the machine code alone: no compiler or GPU is needed.  This is
how a restructuring of ``gpu/`` shows that it changed no kernel.  (An earlier form of this
script compiled the f-string generators of an old commit and the IR-built ones with nvcc and
compared cubins; that migration is finished, and comparing what the one printer emits is
both stricter and cheaper.)

    python bench/ir_compare.py REV_A [REV_B] [--tests tests/gpu ...]

``REV_B`` defaults to the working tree.  Each revision is checked out with ``git worktree``
into ``bench/out/ir_compare/`` and made importable as ``layoutproof`` from its own folders
(a link farm on ``PYTHONPATH``; an editable install's finder is taken out of the way); its tests run
with ``tools/kernel_sources.py`` of this checkout as a pytest plugin, which records the
SHA-256 of every printed source, and with an empty kernel cache (a kernel loaded from the
disk cache is not printed).  Exit status 1 when a kernel recorded on both sides prints
a different body; kernels recorded on one side only are listed (a removed variant, a new
test).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Optional

from _timing import out_dir

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "tools"
#: where pyproject.toml's package-dir puts the import packages
SUBPACKAGES = ("verify", "proofs", "gpu")


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True).stdout


def checkout(rev: Optional[str], where: Path) -> Path:
    """The tree of ``rev`` (a detached worktree under ``where``), or this checkout for None."""
    if rev is None:
        return REPO
    sha = _git("rev-parse", "--verify", f"{rev}^{{commit}}").strip()
    tree = where / sha[:12]
    if not tree.exists():
        _git("worktree", "add", "--detach", str(tree), sha)
    return tree


def link_farm(tree: Path, where: Path) -> Path:
    """A new folder under ``where`` holding ``layoutproof`` built of links into ``tree``:
    algebra/'s entries, and verify/, proofs/, gpu/ as its sub-packages."""
    site = Path(tempfile.mkdtemp(prefix="site-", dir=where))
    pkg = site / "layoutproof"
    pkg.mkdir()
    for entry in (tree / "algebra").iterdir():
        (pkg / entry.name).symlink_to(entry)
    for sub in SUBPACKAGES:
        if (tree / sub).is_dir():
            (pkg / sub).symlink_to(tree / sub)
    return site


#: pytest with an editable install's finder taken off ``sys.meta_path``: it would resolve a
#: module the tree lacks (a room added since) from this checkout instead of failing
_PYTEST_ALONE = (
    "import sys, pytest\n"
    "sys.meta_path[:] = [f for f in sys.meta_path if not getattr(f, '__module__', '').startswith('__editable__')]\n"
    "sys.exit(pytest.main(sys.argv[1:]))\n"
)


def record(tree: Path, tests: List[str], out: Path) -> int:
    """Runs ``tests`` of ``tree`` with the kernel-source recorder; the digests go to ``out``."""
    site = link_farm(tree, out.parent)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), str(TOOLS)]))
    # an empty kernel cache: a kernel loaded from disk is never printed, so never recorded
    env["LAYOUTPROOF_CACHE"] = tempfile.mkdtemp(prefix="cache-", dir=out.parent)
    args = ["-q", "-p", "no:cacheprovider", "-p", "kernel_sources", "--kernel-sources", str(out)]
    args += ["--rootdir", str(tree), *tests]
    print(f"$ (cd {tree} && pytest {' '.join(args)})", flush=True)
    cmd = [sys.executable, "-c", _PYTEST_ALONE, *args]
    return subprocess.run(cmd, cwd=tree, env=env).returncode


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("rev_a", help="the revision before (a commit, branch or tag)")
    p.add_argument("rev_b", nargs="?", default=None, help="the revision after (default: the working tree)")
    p.add_argument("--tests", nargs="+", default=["tests/gpu"], help="test paths, relative to each tree")
    p.add_argument("--keep", action="store_true", help="keep the worktrees for another comparison")
    args = p.parse_args(argv)
    sys.path.insert(0, str(TOOLS))
    import kernel_sources

    where = out_dir("ir_compare")
    made = []
    recs = []
    try:
        for rev in (args.rev_a, args.rev_b):
            tree = checkout(rev, where)
            if tree != REPO:
                made.append(tree)
            rec = where / f"{rev or 'worktree'}.json".replace("/", "_")
            rc = record(tree, args.tests, rec)
            if rc not in (0, 5):  # 5: no tests collected
                print(f"tests of {rev or 'the working tree'} exited {rc}; the recording may be partial")
            recs.append(rec)
    finally:
        if not args.keep:
            for tree in made:
                _git("worktree", "remove", "--force", str(tree))
    return kernel_sources.compare(str(recs[0]), str(recs[1]))


if __name__ == "__main__":
    sys.exit(main())
