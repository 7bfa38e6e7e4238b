"""Deprecated import path: the testing kit's strategies live in :mod:`layoutproof.verify.strategies`.

``import layoutproof.strategies`` still works (it is the same module) and warns once.
"""

import sys
import warnings

from .verify import strategies as _moved

warnings.warn(
    "layoutproof.strategies moved to layoutproof.verify.strategies; the old path will be removed",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
