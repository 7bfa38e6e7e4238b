"""The grid barrier of :class:`~layoutproof.gpu.proof.kir.GridSync`, model-checked.

Thread 0 of each of the grid's ``n`` CTAs runs the helper ``lp_grid_sync`` on a pair of
global words, ``count`` and ``gen``, that persists from launch to launch (one pair per
stream, zeroed once by the host)::

    g = gen                    (acquire load)
    a = count; count += 1      (atomic add, acq_rel)
    if a == n - 1:             the last CTA to arrive
        count = 0              (relaxed store)
        gen = g + 1            (release store)
    else:
        wait until gen != g    (acquire loads)

:func:`check_grid_sync` explores every interleaving of these steps for ``n`` CTAs over
several launches in a row (the next launch starts once every CTA of the last has left, as
on one stream) and proves:

* no CTA leaves before every CTA of its launch has arrived;
* every CTA leaves (no interleaving leaves a CTA waiting on a generation that never comes);
* after each launch ``count`` is 0 again and ``gen`` moved by one (modulo 2^32: the start
  value is 2^32 - 1, so the wrap is among the cases).

The memory orders (acquire load, acq_rel add, release store, with a fence before the
arrival and after the wait) make the arrivals' writes visible to every CTA that leaves;
the model checks the control protocol those orders rest on.  ``read_gen_first`` and
``reset`` exist so that the tests can show what the checker refutes without them.

>>> from layoutproof.gpu.proof.record import ProofLog
>>> check_grid_sync(3, 2, ProofLog()) > 0
True
"""

from __future__ import annotations

from typing import List, Optional, Tuple

from ..errors import ProofFailedError
from .record import ProofLog
from .statespace import explore

__all__ = ["check_grid_sync", "MAX_STATES"]

#: the search stops past this many states
MAX_STATES = 2_000_000

_WORD = 1 << 32
# a CTA's program counter: before its read of gen, before its arrival, the last CTA's
# reset and release, waiting, left
_READ, _ARRIVE, _RESET, _RELEASE, _WAIT, _LEFT = range(6)

# launch, its start gen, gen, count, and per CTA (step, generation read, arrived last)
State = Tuple[int, int, int, int, Tuple[Tuple[int, int, bool], ...]]


def check_grid_sync(
    ctas: int,
    launches: int,
    log: Optional[ProofLog] = None,
    *,
    read_gen_first: bool = True,
    reset: bool = True,
) -> int:
    """Explore the protocol for ``ctas`` CTAs over ``launches`` launches; raises
    :class:`~layoutproof.gpu.errors.ProofFailedError` with the interleaving's state where a
    property fails.  Records the proof in ``log`` and returns the number of states."""
    if ctas < 1 or launches < 1:
        raise ProofFailedError(
            f"grid barrier model: {ctas} CTAs over {launches} launches (both must be at least 1)",
            condition="model size",
            witness=(ctas, launches),
        )
    g0 = _WORD - 1
    first = _READ if read_gen_first else _ARRIVE
    fresh = tuple((first, -1, False) for _ in range(ctas))
    start: State = (0, g0, g0, 0, fresh)

    def fail(what: str, s: State) -> ProofFailedError:
        return ProofFailedError(
            f"grid barrier ({ctas} CTAs, launch {s[0] + 1}): {what} (gen {s[2]}, count {s[3]}, "
            f"CTAs (step, generation read, last) {s[4]})",
            condition="grid barrier",
            witness=s,
        )

    def after(pc: int, last: bool) -> int:
        """The step after ``pc`` (the read and the arrival in the program's order)."""
        if pc == _READ and not read_gen_first:
            return _RESET if last else _WAIT
        if pc == _READ:
            return _ARRIVE
        if not read_gen_first:  # pc == _ARRIVE
            return _READ
        return _RESET if last else _WAIT

    def successors(s: State) -> List[State]:
        launch, gs, gen, count, cs = s
        out: List[State] = []
        for i, (pc, g, last) in enumerate(cs):
            ncount, ngen, ng, nlast = count, gen, g, last
            if pc == _READ:
                ng = gen
                npc = after(pc, last)
            elif pc == _ARRIVE:
                ncount, nlast = count + 1, count == ctas - 1
                npc = after(pc, nlast)
            elif pc == _RESET:
                ncount, npc = (0 if reset else count), _RELEASE
            elif pc == _RELEASE:
                ngen, npc = (g + 1) % _WORD, _LEFT
            elif pc == _WAIT:
                if gen == g:
                    continue  # blocked: no step
                npc = _LEFT
            else:
                continue
            if npc == _LEFT:
                done = (_RESET, _RELEASE, _WAIT, _LEFT) + (() if read_gen_first else (_READ,))
                arrived = sum(1 for j, (p, _g, _l) in enumerate(cs) if j != i and p in done)
                if arrived != ctas - 1:
                    raise fail(f"CTA {i} leaves while {ctas - 1 - arrived} CTA(s) have not arrived", s)
            out.append((launch, gs, ngen, ncount, cs[:i] + ((npc, ng, nlast),) + cs[i + 1 :]))
        return out

    def at_end(s: State) -> Optional[State]:
        launch, gs, gen, count, cs = s
        stuck = [i for i, (pc, _g, _l) in enumerate(cs) if pc != _LEFT]
        if stuck:
            raise fail(f"CTA(s) {stuck} wait for a generation that never comes", s)
        if count != 0 or gen != (gs + 1) % _WORD:
            raise fail(f"the launch ends with count {count} and gen {gen} (want 0 and {(gs + 1) % _WORD})", s)
        if launch + 1 == launches:
            return None
        return (launch + 1, gen, gen, count, fresh)

    n = explore(
        start,
        successors,
        at_end,
        lambda: ProofFailedError(
            f"grid barrier model: more than {MAX_STATES} states for {ctas} CTAs",
            condition="model size",
            witness=ctas,
        ),
        MAX_STATES,
    )
    if log is not None:
        log.add(
            "protocol",
            f"grid barrier (lp_grid_sync) for {ctas} CTAs over {launches} launches in a row: no CTA "
            f"leaves before all arrive, every CTA leaves, and count returns to 0 with gen moved by one "
            f"(the 2^32 wrap among the cases); a larger grid runs the same steps, each CTA's "
            f"reading only count and gen",
            "model check (every interleaving)",
            n,
        )
    return n
