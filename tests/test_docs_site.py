"""The documentation site (mkdocs.yml, docs/) builds with ``mkdocs build --strict``: no
warning, no broken link or anchor, every page in the nav, the API reference generated from
the docstrings (docs/api/, mkdocstrings).  This test is how CI builds the site."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# What the nav and the API pages need besides docs/ itself: the catalog and the testing kit's
# page, and the modules that docs/api/strategies.md and docs/api/theorem.md document.
REQUIRED_FILES = {
    "docs/theorems.md": "the theorem catalog page",
    "docs/testing.md": "the testing kit page",
    "verify/strategies.py": "layoutproof.verify.strategies (docs/api/strategies.md)",
    "verify/theorem.py": "layoutproof.verify.theorem (docs/api/theorem.md)",
    "verify/pytest_plugin.py": "layoutproof.verify.pytest_plugin (docs/api/theorem.md)",
}

# page -> anchors (documented objects) that must be in it
PAGES = {
    "index.html": [],
    "quickstart/index.html": [],
    "semantics/index.html": [],
    "verify/index.html": [],
    "theorems/index.html": [],
    "testing/index.html": [],
    "architecture/index.html": [],
    "api/layout/index.html": [
        "layoutproof.layout.Layout",
        "layoutproof.layout.make_layout",
        "layoutproof.inttuple.crd2idx",
    ],
    "api/ops/index.html": [
        "layoutproof.ops.composition",
        "layoutproof.ops.complement",
        "layoutproof.ops.logical_divide",
    ],
    "api/swizzle/index.html": [
        "layoutproof.swizzle.Swizzle",
        "layoutproof.composed.ComposedLayout",
        "layoutproof.f2.F2Layout",
    ],
    "api/arith/index.html": ["layoutproof.arith.make_identity_layout"],
    "api/analysis/index.html": ["layoutproof.analysis.max_common_vector"],
    "api/tensor/index.html": ["layoutproof.tensor.Tensor", "layoutproof.tensor.local_tile"],
    "api/draw/index.html": ["layoutproof.draw.print_layout"],
    "api/symbolic/index.html": [
        "layoutproof.symbolic.symbols",
        "layoutproof.symbolic.assuming",
        "layoutproof.symbolic.solver.prove",
    ],
    "api/kinds/index.html": ["layoutproof.kinds.register", "layoutproof.kinds.call"],
    "api/errors/index.html": ["layoutproof.errors.InadmissibleError"],
    "api/verify/index.html": [
        "layoutproof.verify.result.Result",
        "layoutproof.verify.equal.equal",
        "layoutproof.verify.identity.identity",
        "layoutproof.verify.post.postcondition",
        "layoutproof.verify.smtlib.to_smtlib",
    ],
    "api/strategies/index.html": ["layoutproof.verify.strategies"],
    "api/theorem/index.html": ["layoutproof.verify.theorem", "layoutproof.verify.pytest_plugin"],
}


def _load_hooks():
    spec = importlib.util.spec_from_file_location("layoutproof_docs_hooks", ROOT / "docs" / "hooks.py")
    mod = importlib.util.module_from_spec(spec)
    dont_write, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no docs/__pycache__
    try:
        spec.loader.exec_module(mod)
    finally:
        sys.dont_write_bytecode = dont_write
    return mod


def _missing() -> list[str]:
    return [f"{path} ({what})" for path, what in REQUIRED_FILES.items() if not (ROOT / path).is_file()]


def test_docs_prerequisites_exist():
    missing = _missing()
    assert not missing, "the docs site's nav and API pages need files that do not exist:\n  " + "\n  ".join(
        missing
    )


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    for name in ("mkdocs", "mkdocstrings", "mkdocstrings_handlers.python", "griffe"):
        pytest.importorskip(name, reason="the docs tools come with the test extra: pip install -e '.[test]'")
    if _missing():
        pytest.skip("files the site needs are missing: test_docs_prerequisites_exist names them")
    out = tmp_path_factory.mktemp("docs") / "site"
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(out),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    log = res.stdout + res.stderr
    assert res.returncode == 0, "mkdocs build --strict failed:\n" + log[-6000:]
    problems = [line for line in log.splitlines() if line.startswith(("WARNING", "ERROR"))]
    assert not problems, "mkdocs build --strict logged:\n" + "\n".join(problems)
    return out


def test_site_builds_strict_with_every_page(site):
    missing = [page for page in PAGES if not (site / page).is_file()]
    assert not missing, f"pages missing from the built site: {missing}"


@pytest.mark.parametrize("page", [p for p, anchors in PAGES.items() if anchors])
def test_api_reference_renders_the_docstrings(site, page):
    html = (site / page).read_text(encoding="utf-8")
    absent = [a for a in PAGES[page] if f'id="{a}"' not in html]
    assert not absent, f"{page} does not document {absent}"


def test_docstring_examples_render_as_code(site):
    html = (site / "api/ops/index.html").read_text(encoding="utf-8")
    # a doctest in a docstring is a pycon code block, not a Markdown block quote
    assert 'class="language-pycon"' in html
    assert "<blockquote>" not in html
    # a Sphinx role naming a documented object is a link to it (ops.py's module docstring:
    # :class:`~layoutproof.errors.InadmissibleError`), and no role is left as text
    assert 'href="../errors/#layoutproof.errors.InadmissibleError"' in html
    assert ":class:`" not in html and ":func:`" not in html


def test_build_support_is_not_published(site):
    assert not (site / "hooks.py").exists()
    assert not list(site.rglob("*.pyc"))


def test_index_examples_run():
    """The home page's example is a doctest, like the quickstart's."""
    import doctest

    res = doctest.testfile(
        str(ROOT / "docs" / "index.md"), module_relative=False, verbose=False, encoding="utf-8"
    )
    assert res.failed == 0 and res.attempted >= 3, res


def test_docstring_to_markdown():
    hooks = _load_hooks()
    text = (
        "Compose with :func:`composition` and :class:`~layoutproof.layout.Layout`.\n"
        "\n"
        ">>> 1 + 1  # doctest: +SKIP\n"
        "2\n"
        ">>> print('a')\n"
        "a\n"
        "\n"
        "```python\n"
        ">>> :func:`kept`\n"
        "```\n"
        "Done."
    )
    links = {"composition": "layoutproof.ops.composition"}
    md = hooks.docstring_to_markdown(text, links.get)
    assert md.split("\n") == [
        'Compose with <autoref identifier="layoutproof.ops.composition" optional>'
        "<code>composition</code></autoref> and <code>Layout</code>.",
        "",
        "```pycon",
        ">>> 1 + 1",
        "2",
        ">>> print('a')",
        "a",
        "```",
        "",
        "```python",
        ">>> :func:`kept`",
        "```",
        "Done.",
    ]
