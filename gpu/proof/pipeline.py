"""Model checking of the warp-specialized kernel's mbarrier pipeline.

The persistent wgmma kernel (``Sm90Config(schedule="ws")``) passes ``stages`` shared-memory
buffers between one producer (TMA) and the consumer warps (wgmma) through two mbarriers per
stage.  This module explores *every* interleaving of an exact model of that protocol, with
the PTX semantics of the pieces it uses:

* an mbarrier has a phase number and a pending-arrival count; when the count reaches zero
  the phase completes (the phase number advances, the count resets);
* ``mbarrier.try_wait.parity P`` succeeds iff the barrier's current phase parity is not
  ``P`` (the phase of parity ``P`` is the one that completed last);
* the ``full`` barrier of a stage expects one arrival plus the TMA's transaction bytes: it
  completes when the asynchronous copy lands (modelled as a separate step that may happen
  at any later point);
* a consumer keeps one wgmma batch in flight: it reads a stage from the moment it acquires
  it until the ``wait_group`` after its next batch (or the tile's last ``wait_group 0``),
  then arrives once on that stage's ``empty`` barrier.

The programs are the kernel's loops, per tile: the producer waits ``empty[s]`` with parity
``ph ^ 1`` and issues the load; each consumer waits ``full[s]`` with parity ``ph``, and
releases the previous stage after each batch and the last stage at the end of the tile.
Checked in every reachable state: the copy engine never writes a stage a consumer is
reading, a consumer only ever acquires a stage holding exactly the k-tile it expects (so
parity aliasing cannot hand it stale or future data), and no state short of completion is
stuck (no deadlock).

>>> from layoutproof.gpu.proof.record import ProofLog
>>> log = ProofLog()
>>> states = check_pipeline(2, consumers=2, tiles=2, k_tiles=3)
>>> states > 0
True
"""

from __future__ import annotations

import functools
from typing import Callable, FrozenSet, List, Optional, Tuple

from ..errors import ProofFailedError
from .record import ProofLog
from .statespace import ACQUIRE as _ACQ
from .statespace import RELEASE as _REL
from .statespace import check_sizes, explore, held

__all__ = ["check_pipeline", "prove_pipeline"]

# a state of the model (see _Pipeline.start): producer pcs, in-flight copies (issuer, k-tile,
# destination CTA), consumer pcs, then per (CTA, stage) the full phase, full arrived, full
# parts landed, empty phase, empty pending, and the k-tile held per (CTA, stage, part)
_Ints = Tuple[int, ...]
_State = Tuple[_Ints, FrozenSet[Tuple[int, int, int]], _Ints, _Ints, _Ints, _Ints, _Ints, _Ints, _Ints]


def _consumer_program(
    tiles: int, k_tiles: int, ctas: int, own: int = 0, remote: bool = True, release_lag: int = 1
) -> Tuple[Tuple[int, int, int], ...]:
    """The barrier actions of a consumer of CTA ``own``, in order: (ACQ, j, own) waits full
    and starts reading k-tile j; (REL, j, d) arrives on CTA d's empty barrier of j's stage
    -- its own CTA's first (the read of j ends there), then the peer's (in a cluster every
    CTA's producer may write this CTA's stage, so every CTA's barrier is told).  With
    ``release_lag=1`` k-tile j's stage is released after k-tile j + 1 is acquired (the last
    k-tile's at the end of the tile); with 0, right after j is acquired."""
    order = [own] + ([d for d in range(ctas) if d != own] if remote else [])
    prog: List[Tuple[int, int, int]] = []
    if release_lag == 0:
        for j in range(tiles * k_tiles):
            prog.append((_ACQ, j, own))
            prog.extend((_REL, j, d) for d in order)
        return tuple(prog)
    j = 0
    for _ in range(tiles):
        prev: Optional[int] = None
        for _ in range(k_tiles):
            prog.append((_ACQ, j, own))
            if prev is not None:
                prog.extend((_REL, prev, d) for d in order)
            prev = j
            j += 1
        if prev is not None:
            prog.extend((_REL, prev, d) for d in order)
    return tuple(prog)


def check_pipeline(
    stages: int,
    *,
    consumers: int,
    tiles: int,
    k_tiles: int,
    ctas: int = 1,
    empty_count: Optional[int] = None,
    producer_parity: int = 1,
    consumer_parity: int = 0,
    remote_release: bool = True,
    release_lag: int = 1,
    max_states: int = 2_000_000,
) -> int:
    """Explore every interleaving of the producers (one per CTA), ``consumers`` consumer
    agents per CTA (each arriving once per stage use on every CTA's empty barrier) and the
    asynchronous copy completions, over ``tiles`` tiles of ``k_tiles`` k-tiles each.

    With ``ctas=2`` (a cluster), each producer's copy lands in both CTAs (its own A tile
    and half of the shared B tile, multicast): a CTA's full barrier completes once its own
    producer has arrived and the bytes of both producers have landed.  The empty barriers
    expect ``empty_count`` arrivals (default: ``consumers * ctas``); the producer waits
    with parity ``ph ^ producer_parity``, the consumers with ``ph ^ consumer_parity`` (the
    kernel's 1 and 0); ``remote_release=False`` models consumers that tell only their own
    CTA's empty barrier.  ``release_lag`` is when a consumer gives a stage back: 1 (the
    kernel's default consumer) after acquiring the next k-tile, 0 in the k-tile that
    acquired it (``consumer_ir(release="same")``: once its own wgmmas completed).  Returns
    the number of reachable states; raises
    :class:`ProofFailedError` on a race, a stale acquisition, bytes of a later phase
    counted in an earlier one, or a deadlock, with the offending step as the witness.

    >>> check_pipeline(3, consumers=2, tiles=2, k_tiles=4, release_lag=0) > 0
    True
    >>> check_pipeline(3, consumers=2, tiles=1, k_tiles=4, producer_parity=0)
    Traceback (most recent call last):
    ...
    layoutproof.gpu.errors.ProofFailedError: pipeline (...): deadlock with the producers at ...
    """
    E = _check_parameters(stages, consumers, tiles, k_tiles, ctas, empty_count, remote_release)
    if release_lag not in (0, 1) or type(release_lag) is not int:
        raise ProofFailedError(
            f"check_pipeline: release_lag={release_lag!r} must be 0 or 1", condition="model parameters"
        )
    model = _Pipeline(
        stages,
        consumers,
        tiles,
        k_tiles,
        ctas,
        E,
        producer_parity,
        consumer_parity,
        remote_release,
        release_lag,
    )
    return model.explore(max_states)


def _check_parameters(
    stages: int,
    consumers: int,
    tiles: int,
    k_tiles: int,
    ctas: int,
    empty_count: Optional[int],
    remote_release: bool,
) -> int:
    """The model's sizes checked (else :class:`ProofFailedError`, condition ``model
    parameters``); returns the empty barriers' expected arrival count."""
    check_sizes(
        "check_pipeline",
        (
            ("stages", stages, 1),
            ("consumers", consumers, 1),
            ("tiles", tiles, 0),
            ("k_tiles", k_tiles, 0),
            ("ctas", ctas, 1),
        ),
    )
    if ctas > 2:
        raise ProofFailedError(
            f"check_pipeline: ctas={ctas}: clusters of 1 or 2 CTAs", condition="model parameters"
        )
    N, C = consumers, ctas
    E = (N * C if remote_release else N) if empty_count is None else empty_count
    if type(E) is not int or E < 1:
        raise ProofFailedError(
            f"check_pipeline: empty_count={empty_count!r} must be an int >= 1", condition="model parameters"
        )
    return E


class _Pipeline:
    """The model behind :func:`check_pipeline`: its start state, the successors of a state
    (each step of a producer, a copy completion, a consumer) and the exhaustive search."""

    def __init__(
        self,
        stages: int,
        consumers: int,
        tiles: int,
        k_tiles: int,
        ctas: int,
        empty_count: int,
        producer_parity: int,
        consumer_parity: int,
        remote_release: bool,
        release_lag: int = 1,
    ) -> None:
        self.S, self.N, self.C, self.E = stages, consumers, ctas, empty_count
        self.tiles, self.k_tiles = tiles, k_tiles
        self.producer_parity, self.consumer_parity = producer_parity, consumer_parity
        self.T = tiles * k_tiles
        self.progs = [
            _consumer_program(tiles, k_tiles, ctas, own, remote_release, release_lag) for own in range(ctas)
        ]
        self.L = len(self.progs[0])
        self.held = [[held(pr, pc, 1) for pc in range(self.L + 1)] for pr in self.progs]

    def start(self) -> _State:
        """Producer pcs (0..2T: even = wait empty of j = pc/2, odd = arrive + issue), no copy
        in flight, consumer pcs (CTA-major), and per (CTA, stage): full phase, full arrived,
        full parts landed, empty phase, empty pending, then the k-tile held by each (CTA,
        stage, part = issuing producer)."""
        nbar = self.C * self.S
        return (
            (0,) * self.C,
            frozenset(),
            (0,) * (self.C * self.N),
            (0,) * nbar,
            (0,) * nbar,
            (0,) * nbar,
            (0,) * nbar,
            (self.E,) * nbar,
            (-1,) * (nbar * self.C),
        )

    def explore(self, max_states: int) -> int:
        """Every reachable state; a state with no successor short of completion is a
        deadlock.  Returns the number of states."""
        return explore(
            self.start(), self.successors, self._check_done, self._too_many(max_states), max_states
        )

    def successors(self, state: _State) -> List[_State]:
        """The states after one step of a producer, a copy completion or a consumer."""
        return self.producer_steps(state) + self.copy_completions(state) + self.consumer_steps(state)

    @staticmethod
    def _too_many(max_states: int) -> Callable[[], Exception]:
        return lambda: ProofFailedError(
            f"pipeline model: more than {max_states} states", condition="model size"
        )

    def _check_done(self, state: _State) -> None:
        """No step is possible: every agent must be done and no copy in flight."""
        ppc, fly, cpc = state[0], state[1], state[2]
        if any(p < 2 * self.T for p in ppc) or fly or any(p < self.L for p in cpc):
            raise ProofFailedError(
                f"pipeline (stages={self.S}, consumers={self.N}, ctas={self.C}, tiles={self.tiles}, "
                f"k_tiles={self.k_tiles}): deadlock with the producers at steps {ppc} and the "
                f"consumers at {cpc}",
                condition="deadlock freedom",
                witness=(ppc, cpc),
            )

    def producer_steps(self, state: _State) -> List[_State]:
        """Each producer's next step: wait on its empty barrier, or arrive on its full
        barrier and issue the copy into stage s of every CTA (no consumer may be reading it)."""
        S, C = self.S, self.C
        ppc, fly, cpc, fph, farr, fland, eph, epend, cont = state
        succ: List[_State] = []
        for c in range(C):
            pp = ppc[c]
            if pp >= 2 * self.T:
                continue
            j = pp // 2
            s = j % S
            b = c * S + s
            nppc = ppc[:c] + (pp + 1,) + ppc[c + 1 :]
            if pp % 2 == 0:  # wait empty[s] with parity ph ^ 1
                if eph[b] % 2 != ((j // S) & 1) ^ self.producer_parity:
                    succ.append((nppc, fly, cpc, fph, farr, fland, eph, epend, cont))
                continue
            self._check_no_reader(c, j, s, cpc)
            arrived = list(farr)  # arrive.expect_tx on its own full barrier
            arrived[b] = 1
            nph, nl, nco = fph, fland, cont
            if fland[b] == C:  # every part already landed: phase done
                nph = fph[:b] + (fph[b] + 1,) + fph[b + 1 :]
                arrived[b] = 0
                nl = fland[:b] + (0,) + fland[b + 1 :]
            nfly = fly | {(c, j, d) for d in range(C)}
            succ.append((nppc, nfly, cpc, nph, tuple(arrived), nl, eph, epend, nco))
        return succ

    def _check_no_reader(self, c: int, j: int, s: int, cpc: _Ints) -> None:
        """Producer ``c``'s copy of k-tile ``j`` writes stage ``s`` of every CTA: no consumer
        there may still read that stage."""
        for d in range(self.C):
            for i in range(self.N):
                if any(h % self.S == s for h in self.held[d][cpc[d * self.N + i]]):
                    raise ProofFailedError(
                        f"pipeline (stages={self.S}, ctas={self.C}): producer {c}'s copy of k-tile "
                        f"{j} into CTA {d}'s stage {s} starts while consumer {i} there "
                        f"still reads it",
                        condition="no write while read",
                        witness=(c, j, d, s, i),
                    )

    def copy_completions(self, state: _State) -> List[_State]:
        """Each copy in flight may land next (any order): its bytes count in the current
        phase of the destination's full barrier, which completes with the last part."""
        S, C = self.S, self.C
        ppc, fly, cpc, fph, farr, fland, eph, epend, cont = state
        succ: List[_State] = []
        for c, j, d in fly:
            s = j % S
            b = d * S + s
            landed = list(fland)
            landed[b] += 1
            if landed[b] > C:
                raise ProofFailedError(
                    f"pipeline (stages={S}, ctas={C}): CTA {d}'s full barrier of stage {s} "
                    f"counts the bytes of k-tile {j} in an earlier phase",
                    condition="transaction bytes in their own phase",
                    witness=(c, j, d, s),
                )
            holds = list(cont)
            holds[b * C + c] = j
            nph, na = fph, farr
            if farr[b] and landed[b] == C:
                nph = fph[:b] + (fph[b] + 1,) + fph[b + 1 :]
                na = farr[:b] + (0,) + farr[b + 1 :]
                landed[b] = 0
            succ.append((ppc, fly - {(c, j, d)}, cpc, nph, na, tuple(landed), eph, epend, tuple(holds)))
        return succ

    def consumer_steps(self, state: _State) -> List[_State]:
        """Each consumer's next action: acquire (wait on the full barrier, then read the
        stage: it must hold this k-tile and no copy may be writing it), or release (arrive
        on a CTA's empty barrier)."""
        S, N, C, E = self.S, self.N, self.C, self.E
        ppc, fly, cpc, fph, farr, fland, eph, epend, cont = state
        succ: List[_State] = []
        for a in range(C * N):
            pc = cpc[a]
            if pc >= self.L:
                continue
            d0 = a // N  # the consumer's own CTA
            kind, j, d = self.progs[d0][pc]
            s = j % S
            ncp = cpc[:a] + (pc + 1,) + cpc[a + 1 :]
            if kind == _ACQ:
                b = d0 * S + s
                if fph[b] % 2 == ((j // S) & 1) ^ self.consumer_parity:  # wait full[s]: not yet
                    continue
                self._check_acquire(d0, j, s, cont[b * C : (b + 1) * C], fly)
                succ.append((ppc, fly, ncp, fph, farr, fland, eph, epend, cont))
            else:  # release: arrive on CTA d's empty[s]
                b = d * S + s
                ne, npd = list(eph), list(epend)
                npd[b] -= 1
                if npd[b] == 0:
                    ne[b] += 1
                    npd[b] = E
                succ.append((ppc, fly, ncp, fph, farr, fland, tuple(ne), tuple(npd), cont))
        return succ

    def _check_acquire(
        self, d0: int, j: int, s: int, got: _Ints, fly: FrozenSet[Tuple[int, int, int]]
    ) -> None:
        """A consumer of CTA ``d0`` acquiring stage ``s`` for k-tile ``j``: every part of the
        stage holds ``j`` and no copy in flight writes it."""
        S, C = self.S, self.C
        if any(g != j for g in got):
            raise ProofFailedError(
                f"pipeline (stages={S}, ctas={C}): a consumer of CTA {d0} acquires "
                f"stage {s} for k-tile {j} but it holds k-tile(s) {got}",
                condition="acquire sees its own k-tile",
                witness=(d0, j, s),
            )
        for c2, j2, dd in fly:
            if dd == d0 and j2 % S == s:
                raise ProofFailedError(
                    f"pipeline (stages={S}, ctas={C}): a consumer of CTA {d0} reads "
                    f"stage {s} while producer {c2}'s copy of k-tile {j2} writes it",
                    condition="no read while write",
                    witness=(d0, j, s),
                )


@functools.cache
def _checked(
    stages: int,
    consumers: int,
    tiles: int,
    k_tiles: int,
    ctas: int,
    producer_parity: int,
    consumer_parity: int,
    remote_release: bool,
    release_lag: int,
) -> int:
    """check_pipeline, once per process for each model (the kernels of one stage count and
    cluster size share it)."""
    return check_pipeline(
        stages,
        consumers=consumers,
        tiles=tiles,
        k_tiles=k_tiles,
        ctas=ctas,
        producer_parity=producer_parity,
        consumer_parity=consumer_parity,
        remote_release=remote_release,
        release_lag=release_lag,
    )


def prove_pipeline(
    stages: int,
    consumer_warpgroups: int,
    log: ProofLog,
    ctas: int = 1,
    *,
    producer_parity: int = 1,
    consumer_parity: int = 0,
    remote_release: bool = True,
    release_lag: int = 1,
) -> None:
    """Model-check the protocol for ``stages`` stages (and a cluster of ``ctas`` CTAs):
    every interleaving of the producers, the consumer agents and the copy completions,
    over several tile / k-tile schedules (each stage reused, both parities wrapping).  The
    kernel has ``4 * consumer_warpgroups`` consumer warps per CTA arriving on the empty
    barriers; the model runs two consumer agents per CTA (one in a cluster, where each
    arrives on both CTAs' barriers), each arrival an independent step.  The parities and
    ``remote_release`` are the kernel's, as the generator reads them from the mbarrier
    nodes of the kernel IR (:func:`layoutproof.gpu.kernels.wgmma.protocol_ir`), and so is
    ``release_lag`` (0: each stage released in its own k-tile, :func:`check_pipeline`)."""
    total = 0
    runs: Tuple[Tuple[int, int], ...]
    if ctas == 1:
        runs = ((1, 1), (1, stages + 1), (2, 1), (2, stages - 1), (2, stages), (3, 2))
        n = 2
    else:
        runs = ((1, 1), (1, stages + 1))
        n = 1
    for tiles, k_tiles in runs:
        total += _checked(
            stages, n, tiles, k_tiles, ctas, producer_parity, consumer_parity, remote_release, release_lag
        )
    where = f"a {ctas}-CTA cluster (TMA multicast of the shared tile), " if ctas > 1 else ""
    if release_lag == 0:
        where, lag = "", "each stage released in its own k-tile once its wgmmas completed"
    else:
        lag = "one wgmma batch in flight"
    log.add(
        "protocol",
        f"mbarrier pipeline ({stages} stages, {where}full/empty parity waits, "
        f"copy completion asynchronous, {lag}; "
        f"{4 * consumer_warpgroups} consumer warps per CTA modelled by {n} "
        f"agent(s)): no copy overwrites a stage being read, every acquisition "
        f"sees its own k-tile, no deadlock -- all interleavings of "
        f"{len(runs)} schedules",
        "exhaustive",
        total,
    )
