"""Every docstring example in the package runs and gives what it shows."""

import doctest
import importlib
import pkgutil

import pytest

import layoutproof
import layoutproof.gpu
import layoutproof.proofs
import layoutproof.verify

# The four folders are separate trees (pyproject.toml maps them): walk each one.
_PACKAGES = [layoutproof, layoutproof.verify, layoutproof.proofs, layoutproof.gpu]
MODULES = sorted(
    {
        m.name
        for p in _PACKAGES
        for m in pkgutil.walk_packages(p.__path__, p.__name__ + ".")
        if not m.name.endswith("__main__") and m.name != "layoutproof.strategies"
    }  # a deprecated alias
    | {p.__name__ for p in _PACKAGES}
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL
    res = doctest.testmod(mod, optionflags=flags, verbose=False)
    assert res.failed == 0, f"{res.failed} docstring example(s) failed in {name}"
