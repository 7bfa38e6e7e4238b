"""docs/architecture.md's module maps name every module of the package, and only those.

Each ``| module | role |`` table of docs/architecture.md belongs to the package folder named
(in backquotes, ending in ``/``) by the nearest heading above it, e.g. ``### `gpu/isa/` ...``;
its first column names files as the tree has them below the top folder (``isa/gmma.py``,
``catalog/seeds.py``, ``symbolic/smt.py``, ``ops.py``), each inside that package folder.

For every package folder of the four trees (every folder holding an ``__init__.py``:
``algebra/``, ``algebra/symbolic/``, ``verify/``, ``proofs/``, ``proofs/catalog/``, ``gpu/``
and each of its rooms) the ``.py`` files the tables name must be exactly the ``.py`` files in
the folder: a module added, moved or removed without its row fails here, naming the file.
It reads files only (no import of the package), so it is one of the quick tests.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE = ROOT / "docs" / "architecture.md"
TREES = ("algebra", "verify", "proofs", "gpu", "serve")

_HEADING = re.compile(r"^#{1,6}\s")
_FOLDER = re.compile(r"`([A-Za-z0-9_./]+/)`")
_NAME = re.compile(r"`([^`]+)`")


def module_map(text: str) -> List[Tuple[str, str, int]]:
    """Every (path relative to the repository root, folder of its table, line number) the
    module-map tables of ``text`` name in their first column."""
    rows: List[Tuple[str, str, int]] = []
    folder = None
    in_table = False
    for number, line in enumerate(text.splitlines(), 1):
        if _HEADING.match(line):
            m = _FOLDER.search(line)
            folder = m.group(1).rstrip("/") if m else None
            in_table = False
        elif re.match(r"^\|\s*module\s*\|\s*role\s*\|", line):
            in_table = folder is not None
        elif in_table and line.startswith("|"):
            cell = line.split("|")[1]
            if set(cell.strip()) <= set("-: "):
                continue  # the separator row
            top = str(folder).split("/")[0]
            for name in _NAME.findall(cell):
                rows.append((f"{top}/{name}".rstrip("/"), str(folder), number))
        elif in_table:
            in_table = False
    return rows


def packages() -> List[Path]:
    """Every package folder of the four trees, relative to the repository root."""
    return sorted(
        init.parent.relative_to(ROOT) for tree in TREES for init in (ROOT / tree).rglob("__init__.py")
    )


@pytest.fixture(scope="module")
def named() -> Dict[str, List[int]]:
    out: Dict[str, List[int]] = {}
    for path, _, number in module_map(ARCHITECTURE.read_text(encoding="utf-8")):
        out.setdefault(path, []).append(number)
    return out


def test_the_maps_are_found(named):
    folders = {folder for _, folder, _ in module_map(ARCHITECTURE.read_text(encoding="utf-8"))}
    assert folders, "docs/architecture.md has no '| module | role |' table under a folder heading"


@pytest.mark.parametrize("package", [str(p) for p in packages()])
def test_every_module_of_the_package_is_mapped(named, package):
    here = {str(p.relative_to(ROOT)) for p in (ROOT / package).glob("*.py")}
    mapped = {path for path in named if path.endswith(".py") and str(Path(path).parent) == package}
    unmapped = sorted(here - mapped)
    stale = sorted(mapped - here)
    problems = [f"{p} is in the tree but in no module map of docs/architecture.md" for p in unmapped]
    problems += [
        f"docs/architecture.md (line {named[p][0]}) maps {p}, which is not in the tree" for p in stale
    ]
    assert not problems, "\n".join(problems)


def test_every_row_is_in_its_package_table():
    wrong = [
        f"{path} (line {number}) in the table of {folder}/"
        for path, folder, number in module_map(ARCHITECTURE.read_text(encoding="utf-8"))
        if path != folder and str(Path(path).parent) != folder
    ]
    assert not wrong, "docs/architecture.md maps modules under another package's heading: " + ", ".join(wrong)


def test_every_mapped_name_exists_once(named):
    missing = [f"{p} (line {lines[0]})" for p, lines in named.items() if not (ROOT / p).exists()]
    assert not missing, "docs/architecture.md's module maps name paths that do not exist: " + ", ".join(
        missing
    )
    twice = [f"{p} (lines {lines})" for p, lines in named.items() if len(lines) > 1]
    assert not twice, "docs/architecture.md maps a module more than once: " + ", ".join(twice)


def test_every_package_has_a_map(named):
    folders = {str(Path(p).parent) for p in named}
    bare = [str(p) for p in packages() if str(p) not in folders]
    assert not bare, f"no module map of docs/architecture.md names a module of {bare}"
