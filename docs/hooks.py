"""Build support for the documentation site (``mkdocs.yml`` names this file twice).

* As an MkDocs hook: the import package ``layoutproof`` lives in the folders ``algebra/``,
  ``verify/``, ``proofs/`` and ``gpu/`` (pyproject's ``package-dir``), a layout that griffe
  cannot find by name.  Before each build, :func:`on_config` builds the *link tree* of
  ``tools/typecheck.py`` (the one mypy and the import contract read: a temporary
  ``layoutproof/`` whose entries are symbolic links to the real files and folders, nothing
  copied) and gives it to mkdocstrings as its search path, so the API reference is read from
  the sources statically (nothing is imported), sub-packages included.
* As a griffe extension (:class:`DocstringMarkdown`): the docstrings are written for
  ``doctest`` and Sphinx.  Each run of ``>>>`` lines becomes a fenced ``pycon`` block (in
  Markdown a line starting with ``>`` is a block quote), and a Sphinx role such as
  ``:func:`composition``` becomes inline code, linked to the object's entry when the site
  has one (an optional cross-reference: never a broken link).  Undocumented dunders of
  classes (``__eq__``, ``__slots__``, ...) are left out of the reference.  The source
  files themselves are not touched.
"""

from __future__ import annotations

import atexit
import importlib.util
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

try:
    from mkdocs.plugins import event_priority
except ImportError:  # pragma: no cover - griffe loads this file for the extension alone

    def event_priority(priority: float) -> Any:
        return lambda f: f


_tmp: dict[str, Path] = {}


def _link_tree_builder(repo: Path) -> Callable[[Path, Path | None], Path]:
    """``link_tree(repo, dest)`` of the repository's tools/typecheck.py."""
    spec = importlib.util.spec_from_file_location("layoutproof_typecheck", repo / "tools" / "typecheck.py")
    if spec is None or spec.loader is None:  # pragma: no cover - the file is in the repository
        raise FileNotFoundError(repo / "tools" / "typecheck.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    link_tree: Callable[[Path, Path | None], Path] = module.link_tree
    return link_tree


def _source_tree(repo: Path) -> Path:
    """The package under its import name, as links to the sources; returns its root."""
    if "root" not in _tmp:
        _tmp["root"] = Path(tempfile.mkdtemp(prefix="layoutproof-docs-"))
        atexit.register(shutil.rmtree, _tmp["root"], True)
    return _link_tree_builder(repo)(repo, _tmp["root"])


@event_priority(100)  # before mkdocstrings' own on_config, which creates its handler
def on_config(config: Any, **kwargs: Any) -> Any:
    repo = Path(config.config_file_path).resolve().parent
    root = _source_tree(repo)
    handlers = config.plugins["mkdocstrings"].config.handlers
    python = handlers.setdefault("python", {})
    paths = [p for p in python.get("paths") or [] if p != str(root)]
    python["paths"] = [str(root), *paths]
    return config


def on_shutdown(**kwargs: Any) -> None:
    root = _tmp.pop("root", None)
    if root is not None:
        shutil.rmtree(root, ignore_errors=True)


# ----------------------------------------------------------------------- griffe extension
_ROLE = re.compile(r":(?:py:)?(?:func|class|meth|attr|mod|data|exc|obj|const):`(~?)([\w.]+)\s*`")
_FENCE = re.compile(r"^\s*(```|~~~)")
_DOCTEST_FLAGS = re.compile(r"\s*#\s*doctest:.*$")


def docstring_to_markdown(text: str, link: Callable[[str], str | None] = lambda name: None) -> str:
    """Fence each run of ``>>>`` lines (with their expected output) as ``pycon``, and turn
    Sphinx roles into inline code, linked where ``link`` gives the target's full path
    (an optional cross-reference: an object left out of the site gives plain code, never
    a broken link).  Text inside existing fences is left alone."""

    def role(m: re.Match) -> str:
        name = m.group(2)
        code = f"<code>{name.rsplit('.', 1)[-1] if m.group(1) else name}</code>"
        target = link(name)
        return f'<autoref identifier="{target}" optional>{code}</autoref>' if target else code

    out: list[str] = []
    lines = text.split("\n")
    fence: str | None = None
    i = 0
    while i < len(lines):
        line = lines[i]
        m = _FENCE.match(line)
        if fence is not None:
            out.append(line)
            if m and m.group(1) == fence:
                fence = None
            i += 1
            continue
        if m:
            fence = m.group(1)
            out.append(line)
            i += 1
            continue
        stripped = line.lstrip()
        if stripped.startswith(">>>"):
            indent = line[: len(line) - len(stripped)]
            block = []
            while i < len(lines) and lines[i].strip():
                cur = lines[i]
                cur = cur[len(indent) :] if cur.startswith(indent) else cur.lstrip()
                block.append(_DOCTEST_FLAGS.sub("", cur) if cur.startswith((">>>", "...")) else cur)
                i += 1
            if out and out[-1].strip():
                out.append("")
            out.append(f"{indent}```pycon")
            out.extend(indent + b if b else b for b in block)
            out.append(f"{indent}```")  # the blank line that ended the run follows
            continue
        out.append(_ROLE.sub(role, line))
        i += 1
    return "\n".join(out)


def _resolver(obj: Any, collection: Any) -> Callable[[str], str | None]:
    """The full path of a name as written in ``obj``'s docstring, or None."""

    def link(name: str) -> str | None:
        first, _, rest = name.partition(".")
        try:
            path = obj.resolve(first)
        except Exception:
            path = first if first == "layoutproof" else None
        if path is None:
            return None
        path = f"{path}.{rest}" if rest else path
        try:
            target = collection[path]
            return target.final_target.path if target.is_alias else target.path
        except Exception:
            return path

    return link


def _bare_dunder(name: str, member: Any) -> bool:
    return (
        name.startswith("__")
        and name.endswith("__")
        and name != "__init__"
        and (member.is_alias or not (member.docstring and member.docstring.value.strip()))
    )


try:
    import griffe
except ImportError:  # pragma: no cover - only mkdocstrings loads the extension
    griffe = None

if griffe is not None:

    class DocstringMarkdown(griffe.Extension):
        """Rewrite every docstring of a package as Markdown once the package is loaded
        (names in Sphinx roles are resolved then, across modules)."""

        def on_package(self, *, pkg: Any, loader: Any, **kwargs: Any) -> None:
            seen: set[int] = set()
            todo = [pkg]
            while todo:
                obj = todo.pop()
                if id(obj) in seen:
                    continue
                seen.add(id(obj))
                doc = obj.docstring
                if doc is not None and doc.value:
                    doc.value = docstring_to_markdown(doc.value, _resolver(obj, loader.modules_collection))
                if obj.is_class:
                    # The site shows undocumented public names too (a module's __all__ is its
                    # API), but not the undocumented dunders (__eq__, __slots__, ...) of a class.
                    for name in [n for n, m in obj.members.items() if _bare_dunder(n, m)]:
                        del obj.members[name]
                todo.extend(m for m in obj.members.values() if not m.is_alias)
