"""The exhaustive search the protocol models share: every state reachable from a start.

:func:`explore` walks the states depth first; ``successors`` gives the states one step of
one agent leads to (and raises :class:`~layoutproof.gpu.errors.ProofFailedError` where a
step breaks a property); a state without successors is handed to ``at_end``, which raises
(a deadlock, a property of the end) or returns the state that follows (a next launch) or
None.  Used by :func:`layoutproof.gpu.proof.pipeline.check_pipeline` and
:func:`layoutproof.gpu.proof.splitk_model.check_serial`.

>>> explore(0, lambda s: [s + 1] if s < 5 else [], lambda s: None, lambda: ValueError("big"), 100)
6
"""

from __future__ import annotations

from typing import Callable, Hashable, List, Optional, TypeVar

__all__ = ["explore"]

S = TypeVar("S", bound=Hashable)


def explore(
    start: S,
    successors: Callable[[S], List[S]],
    at_end: Callable[[S], Optional[S]],
    too_many: Callable[[], Exception],
    max_states: int,
) -> int:
    """The number of states reachable from ``start`` (see the module docstring); raises
    ``too_many()`` once more than ``max_states`` are found through ``successors`` (a state
    ``at_end`` returns is not counted against the limit)."""
    seen = {start}
    stack = [start]
    while stack:
        state = stack.pop()
        succ = successors(state)
        if not succ:
            nxt = at_end(state)
            if nxt is not None and nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
            continue
        for n in succ:
            if n not in seen:
                seen.add(n)
                if len(seen) > max_states:
                    raise too_many()
                stack.append(n)
    return len(seen)
