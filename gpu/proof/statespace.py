"""The exhaustive search the protocol models share: every state reachable from a start.

:func:`explore` walks the states depth first; ``successors`` gives the states one step of
one agent leads to (and raises :class:`~layoutproof.gpu.errors.ProofFailedError` where a
step breaks a property); a state without successors is handed to ``at_end``, which raises
(a deadlock, a property of the end) or returns the state that follows (a next launch) or
None.  Used by :func:`layoutproof.gpu.proof.pipeline.check_pipeline`,
:func:`layoutproof.gpu.proof.pingpong_model.check_pingpong` and
:func:`layoutproof.gpu.proof.splitk_model.check_serial`; :func:`held` reads the stages an
agent of the ring models holds from its program.

>>> explore(0, lambda s: [s + 1] if s < 5 else [], lambda s: None, lambda: ValueError("big"), 100)
6
"""

from __future__ import annotations

from typing import Any, Callable, FrozenSet, Hashable, List, Optional, Tuple, TypeVar

from ..errors import ProofFailedError

__all__ = ["explore", "ACQUIRE", "RELEASE", "held", "check_sizes"]

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


#: the action kinds of the ring models' agent programs: an acquisition of a stage (a full
#: wait and the reads that follow) and its release (the arrive on its empty barrier)
ACQUIRE, RELEASE = 0, 1


def held(prog: Tuple[Tuple[int, ...], ...], pc: int, key: int) -> FrozenSet[int]:
    """What an agent at ``pc`` of its program ``prog`` has acquired and not yet released:
    the ``key`` field of its :data:`ACQUIRE` actions (a k-tile, a ring position) less those
    of the :data:`RELEASE` actions since (the read ends at the first release)."""
    out = set()
    for act in prog[:pc]:
        if act[0] == ACQUIRE:
            out.add(act[key])
        elif act[0] == RELEASE:
            out.discard(act[key])
    return frozenset(out)


def check_sizes(who: str, sizes: Tuple[Tuple[str, Any, int], ...]) -> None:
    """Each ``(name, value, least)`` of a model's sizes is an int of at least ``least``, else
    a :class:`~layoutproof.gpu.errors.ProofFailedError` (condition ``model parameters``)
    naming ``who`` and the size."""
    for nm, v, lo in sizes:
        if type(v) is not int or v < lo:
            raise ProofFailedError(f"{who}: {nm}={v!r} must be an int >= {lo}", condition="model parameters")
