"""Record every kernel source the GPU back end prints, and compare two recordings.

Every generated kernel leaves the package through the kernel IR's one printer
(``emit``).  As a pytest plugin this module wraps that printer for the whole run and
writes, per kernel name, the SHA-256 of the printed source with and without its proof
header (the ``//`` comment block before the first line of code)::

    python -m pytest tests/gpu -q -p kernel_sources --kernel-sources OUT.json
    python tools/kernel_sources.py compare BEFORE.json AFTER.json

``compare`` fails when a kernel present in both recordings prints a different body; a
kernel recorded on one side only is listed (a removed variant, a new test).  It is how a
restructuring of the back end shows that the kernels it emits did not change.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import sys
from typing import Any, Dict

_RECORD: Dict[str, Dict[str, str]] = {}
_PRINTERS = ("layoutproof.gpu.proof.kir", "layoutproof.gpu.kir")


def _split_header(src: str) -> str:
    lines = src.splitlines(keepends=True)
    i = 0
    while i < len(lines) and (lines[i].startswith("//") or not lines[i].strip()):
        i += 1
    return "".join(lines[i:])


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _wrap_printer() -> None:
    for modname in _PRINTERS:
        try:
            mod = importlib.import_module(modname)
        except ImportError:
            continue
        original = mod.emit

        def emit(kernel: Any, header: str = "", *args: Any, _original: Any = original, **kwargs: Any) -> str:
            src = _original(kernel, header, *args, **kwargs)
            name = getattr(kernel, "name", "?")
            _RECORD[name] = {"source": _digest(src), "body": _digest(_split_header(src))}
            return src

        mod.emit = emit
        return
    raise RuntimeError("no kernel printer found")


def pytest_addoption(parser: Any) -> None:
    parser.addoption("--kernel-sources", default=None, help="write the recorded kernel digests here")


def pytest_configure(config: Any) -> None:
    if config.getoption("--kernel-sources"):
        _wrap_printer()


def pytest_unconfigure(config: Any) -> None:
    out = config.getoption("--kernel-sources")
    if out:
        with open(out, "w") as f:
            json.dump(dict(sorted(_RECORD.items())), f, indent=1)


def compare(before: str, after: str) -> int:
    with open(before) as f:
        a = json.load(f)
    with open(after) as f:
        b = json.load(f)
    both = sorted(set(a) & set(b))
    body = [n for n in both if a[n]["body"] != b[n]["body"]]
    header = [n for n in both if a[n]["body"] == b[n]["body"] and a[n]["source"] != b[n]["source"]]
    print(f"kernels in both: {len(both)}; same source: {len(both) - len(body) - len(header)}")
    print(f"header only differs: {len(header)}; body differs: {len(body)}")
    for n in body:
        print("  BODY DIFFERS:", n)
    for tag, names in (("only before", sorted(set(a) - set(b))), ("only after", sorted(set(b) - set(a)))):
        print(f"{tag}: {len(names)}")
        for n in names:
            print("  ", n)
    return 1 if body else 0


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "compare":
        print(__doc__)
        sys.exit(2)
    sys.exit(compare(sys.argv[2], sys.argv[3]))
