"""Every docstring example in the package runs and gives what it shows."""

import doctest
import importlib
import pkgutil

import pytest

import layoutproof

MODULES = sorted(
    m.name for m in pkgutil.walk_packages(layoutproof.__path__, "layoutproof.")
    if not m.name.endswith("__main__")
) + ["layoutproof"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    flags = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL
    res = doctest.testmod(mod, optionflags=flags, verbose=False)
    assert res.failed == 0, f"{res.failed} docstring example(s) failed in {name}"
