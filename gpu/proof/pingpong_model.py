"""Model checking of the ping-pong kernel's mbarrier ring (one consumer per stage).

In the ping-pong schedule (``Sm90Config(schedule="pingpong")``) one producer fills the
``stages``-deep full/empty ring with the k-tiles of the CTA's persistent walk in order --
walk tile 0's k-tiles, then tile 1's, ... -- and two consumer warpgroups own alternate
tiles: consumer ``c`` computes the walk's tiles ``o_c, o_c + d, o_c + 2d, ...`` and keeps a
ring counter that starts ``pre_c`` tiles' worth of k-tiles in and, after each of its tiles,
skips ``post_c`` tiles' worth (the other consumer's tile).  Each stage use therefore has
ONE consumer warpgroup, and its ``empty`` barrier expects that warpgroup's arrivals only.

:func:`check_pingpong` explores every interleaving of the producer, the asynchronous copy
completions and the consumer agents (each warpgroup modelled by ``agents`` agents that
arrive once per stage use), with the PTX semantics of
:mod:`layoutproof.gpu.proof.pipeline`'s model; checked in every reachable state: no copy
starts into a stage a consumer still reads, every acquisition finds exactly the k-tile of
the consumer's own tile (a consumer that takes the other parity of tiles, or a ring
counter that does not skip the other's tile, reads stale or future data and is refused by
name), and no state short of completion is stuck.

>>> check_pingpong(3, tiles=3, k_tiles=2) > 0
True
"""

from __future__ import annotations

import functools
from typing import Any, Callable, FrozenSet, List, Optional, Tuple

from ..errors import ProofFailedError
from .record import ProofLog
from .statespace import ACQUIRE, RELEASE, check_sizes, explore, held

__all__ = ["check_pingpong", "prove_pingpong", "PingpongRing"]

_ACQ, _REL, _OWAIT, _OARR = ACQUIRE, RELEASE, 2, 3
# (ACQ/REL, k-tile of the walk, ring position) or (OWAIT, order barrier, parity) or
# (OARR, order barrier, 0)
_Act = Tuple[int, int, int]
# producer pc, copies in flight (k-tile), consumer pcs, full phase, full arrived, full
# landed, empty phase, empty pending, the k-tile each stage holds, order barriers' phase
# and pending arrivals
_Ints = Tuple[int, ...]
_State = Tuple[int, FrozenSet[int], _Ints, _Ints, _Ints, _Ints, _Ints, _Ints, _Ints, _Ints, _Ints]


class PingpongRing:
    """The ring and its agents for ``tiles`` walk tiles of ``k_tiles`` k-tiles over
    ``stages`` stages.  ``owners`` is ``((o_0, d_0), (o_1, d_1))``: consumer ``c`` computes
    walk tiles ``o_c + i d_c``; ``ring`` is ``((pre_0, post_0), (pre_1, post_1))``: its
    ring counter starts ``pre_c * k_tiles`` positions in and skips ``post_c * k_tiles``
    after each of its tiles; ``parities`` are the producer's (``ph ^ p``) and the
    consumers' (``ph ^ q``) wait parities."""

    def __init__(
        self,
        stages: int,
        tiles: int,
        k_tiles: int,
        owners: Tuple[Tuple[int, int], ...],
        ring: Tuple[Tuple[int, int], ...],
        agents: int,
        parities: Tuple[int, int],
        order: Optional[Tuple[Tuple[int, int, int], ...]] = None,
    ) -> None:
        self.S, self.tiles, self.KT, self.A = stages, tiles, k_tiles, agents
        self.T = tiles * k_tiles
        self.pp, self.cp = parities
        self.progs: List[Tuple[_Act, ...]] = []
        self.order = order
        for c, ((o, d), (pre, post)) in enumerate(zip(owners, ring)):
            prog = _consumer(tiles, k_tiles, o, d, pre, post, None if order is None else order[c])
            self.progs += [prog] * agents
        self.held = [[held(pr, pc, 2) for pc in range(len(pr) + 1)] for pr in self.progs]

    def start(self) -> _State:
        S = self.S
        z = (0,) * S
        return (
            0,
            frozenset(),
            (0,) * len(self.progs),
            z,
            z,
            z,
            z,
            (self.A,) * S,
            (-1,) * S,
            (0, 0),
            (self.A, self.A),
        )

    def explore(self, max_states: int) -> int:
        return explore(self.start(), self.successors, self._done, self._too_many(max_states), max_states)

    @staticmethod
    def _too_many(max_states: int) -> Callable[[], Exception]:
        return lambda: ProofFailedError(
            f"ping-pong ring model: more than {max_states} states", condition="model size"
        )

    def _where(self) -> str:
        return f"ping-pong ring (stages={self.S}, tiles={self.tiles}, k_tiles={self.KT})"

    def _done(self, state: _State) -> None:
        pp, fly, cpc = state[0], state[1], state[2]
        if pp < 2 * self.T or fly or any(p < len(pr) for p, pr in zip(cpc, self.progs)):
            raise ProofFailedError(
                f"{self._where()}: deadlock with the producer at step {pp} and the consumers at {cpc}",
                condition="deadlock freedom",
                witness=(pp, cpc),
            )

    def successors(self, state: _State) -> List[_State]:
        return self._producer(state) + self._copies(state) + self._consumers(state)

    def _producer(self, state: _State) -> List[_State]:
        pp, fly, cpc, fph, farr, fland, eph, epend, cont, oph, opend = state
        if pp >= 2 * self.T:
            return []
        j = pp // 2
        s = j % self.S
        if pp % 2 == 0:  # wait empty[s] with parity ph ^ p
            if eph[s] % 2 != ((j // self.S) & 1) ^ self.pp:
                return [(pp + 1, fly, cpc, fph, farr, fland, eph, epend, cont, oph, opend)]
            return []
        for a, pc in enumerate(cpc):
            if any(h % self.S == s for h in self.held[a][pc]):
                raise ProofFailedError(
                    f"{self._where()}: the copy of k-tile {j} into stage {s} starts while consumer "
                    f"agent {a} still reads it",
                    condition="no write while read",
                    witness=(j, s, a),
                )
        arrived, nph, nl = list(farr), fph, fland
        arrived[s] = 1
        if fland[s]:  # the bytes already landed: the phase completes
            nph = _bump(fph, s)
            arrived[s] = 0
            nl = _put(fland, s, 0)
        return [(pp + 1, fly | {j}, cpc, nph, tuple(arrived), nl, eph, epend, cont, oph, opend)]

    def _copies(self, state: _State) -> List[_State]:
        pp, fly, cpc, fph, farr, fland, eph, epend, cont, oph, opend = state
        out: List[_State] = []
        for j in fly:
            s = j % self.S
            if fland[s]:
                raise ProofFailedError(
                    f"{self._where()}: the bytes of k-tile {j} count in an earlier phase of stage {s}",
                    condition="transaction bytes in their own phase",
                    witness=(j, s),
                )
            holds = _put(cont, s, j)
            if farr[s]:
                out.append(
                    (
                        pp,
                        fly - {j},
                        cpc,
                        _bump(fph, s),
                        _put(farr, s, 0),
                        fland,
                        eph,
                        epend,
                        holds,
                        oph,
                        opend,
                    )
                )
            else:
                out.append((pp, fly - {j}, cpc, fph, farr, _put(fland, s, 1), eph, epend, holds, oph, opend))
        return out

    def _consumers(self, state: _State) -> List[_State]:
        pp, fly, cpc, fph, farr, fland, eph, epend, cont, oph, opend = state
        out: List[_State] = []
        for a, pc in enumerate(cpc):
            prog = self.progs[a]
            if pc >= len(prog):
                continue
            kind, j, pos = prog[pc]
            s = pos % self.S
            ncp = _put(cpc, a, pc + 1)
            if kind == _OWAIT:  # try_wait.parity: passes once the phase of that parity completed
                if oph[j] % 2 != pos:
                    out.append((pp, fly, ncp, fph, farr, fland, eph, epend, cont, oph, opend))
                continue
            if kind == _OARR:
                no, npo = oph, _put(opend, j, opend[j] - 1)
                if npo[j] == 0:
                    no, npo = _bump(oph, j), _put(npo, j, self.A)
                out.append((pp, fly, ncp, fph, farr, fland, eph, epend, cont, no, npo))
                continue
            if kind == _ACQ:
                if fph[s] % 2 == ((pos // self.S) & 1) ^ self.cp:  # wait full[s]: not yet
                    continue
                if cont[s] != j or any(f % self.S == s for f in fly):
                    has = "no k-tile yet" if cont[s] < 0 else f"k-tile {cont[s]}"
                    if any(f % self.S == s for f in fly):
                        has += " (a copy into it is in flight)"
                    raise ProofFailedError(
                        f"{self._where()}: consumer agent {a} acquires stage {s} (ring position {pos}) "
                        f"for k-tile {j} of its tile but it holds {has}",
                        condition="acquire sees its own k-tile",
                        witness=(a, j, pos, cont[s]),
                    )
                out.append((pp, fly, ncp, fph, farr, fland, eph, epend, cont, oph, opend))
            else:
                npd = _put(epend, s, epend[s] - 1)
                ne = eph
                if npd[s] == 0:
                    ne, npd = _bump(eph, s), _put(npd, s, self.A)
                out.append((pp, fly, ncp, fph, farr, fland, ne, npd, cont, oph, opend))
        return out


def _bump(t: Tuple[int, ...], i: int) -> Tuple[int, ...]:
    return t[:i] + (t[i] + 1,) + t[i + 1 :]


def _put(t: Tuple[int, ...], i: int, v: int) -> Tuple[int, ...]:
    return t[:i] + (v,) + t[i + 1 :]


def _consumer(
    tiles: int, k_tiles: int, o: int, d: int, pre: int, post: int, order: Optional[Tuple[int, int, int]]
) -> Tuple[_Act, ...]:
    """A consumer's barrier actions: per tile of its own, the order barrier's wait, then per
    k-tile acquire (the k-tile it computes, at the ring position its counter holds) and
    release the previous k-tile's position, the order barrier's arrival, and the last
    release after the tile."""
    prog: List[_Act] = []
    pos = pre * k_tiles
    w = o
    par = 0 if order is None else order[1]
    while 0 <= w < tiles and d > 0:
        if order is not None:
            prog.append((_OWAIT, order[0], par))
            par ^= 1
        prev = None
        for kt in range(k_tiles):
            prog.append((_ACQ, w * k_tiles + kt, pos))
            if prev is not None:
                prog.append((_REL, prev[0], prev[1]))
            prev = (w * k_tiles + kt, pos)
            pos += 1
        if order is not None:
            prog.append((_OARR, order[2], 0))
        if prev is not None:
            prog.append((_REL, prev[0], prev[1]))
        pos += post * k_tiles
        w += d
    return tuple(prog)


def check_pingpong(
    stages: int,
    *,
    tiles: int,
    k_tiles: int,
    owners: Tuple[Tuple[int, int], ...] = ((0, 2), (1, 2)),
    ring: Tuple[Tuple[int, int], ...] = ((0, 1), (1, 1)),
    order: Optional[Tuple[Tuple[int, int, int], ...]] = ((1, 1, 0), (0, 0, 1)),
    agents: int = 1,
    producer_parity: int = 1,
    consumer_parity: int = 0,
    max_states: int = 2_000_000,
) -> int:
    """Every interleaving of the ping-pong ring (see the module docstring); returns the
    number of reachable states, raises :class:`ProofFailedError` naming the broken
    property (``no write while read``, ``acquire sees its own k-tile``, ``deadlock
    freedom``) with the step as witness.

    A consumer that takes the other parity of tiles is refused:

    >>> check_pingpong(3, tiles=2, k_tiles=2, owners=((1, 2), (0, 2)))
    Traceback (most recent call last):
    ...
    layoutproof.gpu.errors.ProofFailedError: ping-pong ring (...): consumer agent ... for k-tile ...
    """
    check_sizes(
        "check_pingpong",
        (("stages", stages, 1), ("tiles", tiles, 0), ("k_tiles", k_tiles, 0), ("agents", agents, 1)),
    )
    if len(owners) != len(ring) or not owners:
        raise ProofFailedError(
            "check_pingpong: one (first tile, stride) and one (ring start, skip) per consumer",
            condition="model parameters",
        )
    model = PingpongRing(
        stages, tiles, k_tiles, owners, ring, agents, (producer_parity, consumer_parity), order
    )
    return model.explore(max_states)


@functools.cache
def _checked(stages: int, tiles: int, k_tiles: int, shape: Tuple[Any, ...], pp: int, cp: int) -> int:
    owners, ring, order = shape
    return check_pingpong(
        stages,
        tiles=tiles,
        k_tiles=k_tiles,
        owners=owners,
        ring=ring,
        order=order,
        agents=2,
        producer_parity=pp,
        consumer_parity=cp,
    )


def prove_pingpong(
    stages: int,
    log: ProofLog,
    *,
    owners: Tuple[Tuple[int, int], ...] = ((0, 2), (1, 2)),
    ring: Tuple[Tuple[int, int], ...] = ((0, 1), (1, 1)),
    order: Optional[Tuple[Tuple[int, int, int], ...]] = ((1, 1, 0), (0, 0, 1)),
    producer_parity: int = 1,
    consumer_parity: int = 0,
) -> None:
    """Model-check the ring as the kernel IR has it (``owners``, ``ring`` and the parities
    read back from the IR) over schedules that reuse every stage with both parities
    wrapping: one to four walk tiles (both consumers idle, one tile each, several each),
    k-tile counts below, at and above the stage count.  Each warpgroup is modelled by two
    agents arriving on the stage's empty barrier (which expects one warpgroup's arrivals)."""
    S = stages
    runs = ((1, 1), (2, 1), (2, S - 1), (2, S + 1), (3, 2), (4, 1), (3, S))
    shape = (owners, ring, order)
    total = sum(_checked(S, t, kt, shape, producer_parity, consumer_parity) for t, kt in runs)
    log.add(
        "protocol",
        f"ping-pong mbarrier ring ({S} stages, full/empty parity waits, copy completion asynchronous; "
        f"consumer warpgroup c computes walk tiles {', '.join(f'{o} + {d}i' for o, d in owners)} "
        f"and its ring counter starts {', '.join(str(p) for p, _ in ring)} tiles in and skips "
        f"{', '.join(str(q) for _, q in ring)} "
        f"after each own tile; order barriers {order} (wait, first parity, arrive) alternate the main loops; "
        "one warpgroup per stage use, two agents each): no copy overwrites a stage being "
        "read, every acquisition sees the k-tile of its own tile, no deadlock -- all interleavings of "
        f"{len(runs)} schedules",
        "exhaustive",
        total,
    )
