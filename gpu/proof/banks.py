"""Shared-memory bank conflicts: proofs over the byte addresses of a warp's accesses.

The hardware model (SM80/SM90 shared memory): 32 banks of 4-byte words; the bank of the
byte address ``a`` is ``(a // 4) % 32``.  A warp-wide access of ``width`` bytes per lane
is served in phases: width 4 -> one phase of 32 lanes, 8 -> two phases of 16 lanes,
16 -> four phases of 8 lanes (lanes ``8p .. 8p+7``).  A phase is conflict-free iff no two
lanes touch the same bank at different 4-byte words (the same word is a broadcast).
``ldmatrix`` reads each 8x16-byte matrix in one phase: its 8 row addresses (lanes
``8j .. 8j+7`` for matrix ``j``) must be 16-byte aligned and fall into 8 distinct
16-byte bank groups (``(addr // 16) % 8``).

>>> import numpy as np
>>> col = np.arange(32) * 32 * 4          # lane i reads A[i][0] of a 32x32 float matrix
>>> wavefronts(col, 4)
32
>>> prove_conflict_free(col, 4, what="column read")
Traceback (most recent call last):
  ...
layoutproof.gpu.errors.BankConflictError: column read: ... lanes 0 and 1 ... bank 0 ...
>>> prove_conflict_free(np.arange(32) * 33 * 4, 4, what="padded column read").line()
'[banks] padded column read: conflict-free (1 instruction(s) of 4-byte lanes) -- exhaustive, 32 cases'
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from layoutproof.inttuple import raw_product

from ..errors import BankConflictError, ProofFailedError
from .lower import Lowered, arg_modes, c_expr_eval, normalize, reference_values
from .record import Proof, ProofLog

__all__ = [
    "NUM_BANKS",
    "BANK_BYTES",
    "prove_conflict_free",
    "prove_ldmatrix_conflict_free",
    "wavefronts",
    "access_words",
    "phase_wavefronts",
    "smem_addresses",
]

NUM_BANKS = 32
BANK_BYTES = 4
_LANES = 32


def _as_instructions(addr: Any, what: str) -> np.ndarray:
    a = np.asarray(addr)
    if a.dtype.kind not in "iu":
        raise ProofFailedError(
            f"{what}: addresses must be integers, got dtype {a.dtype}", condition="address array"
        )
    a = a.astype(np.int64)
    if a.ndim == 1:
        a = a[None, :]
    if a.ndim != 2 or a.shape[1] != _LANES:
        raise ProofFailedError(
            f"{what}: addresses must have shape (32,) or (n, 32), got {np.shape(addr)}",
            condition="address array",
        )
    if a.size and int(a.min()) < 0:
        i, lane = (int(x[0]) for x in np.nonzero(a < 0))
        raise ProofFailedError(
            f"{what}: negative address {int(a[i, lane])} (instruction {i}, lane {lane})",
            condition="address range",
            witness=(i, lane),
        )
    return a


def _phases(width: int) -> int:
    if width not in (4, 8, 16):
        raise ProofFailedError(
            f"access width must be 4, 8 or 16 bytes, got {width}", condition="access width"
        )
    return width // BANK_BYTES


def _check_aligned(a: np.ndarray, width: int, what: str) -> None:
    bad = a % width != 0
    if bad.any():
        i, lane = (int(x[0]) for x in np.nonzero(bad))
        raise ProofFailedError(
            f"{what}: lane {lane} of instruction {i} accesses {width} bytes at {int(a[i, lane])}, "
            f"not {width}-byte aligned",
            condition="alignment",
            witness=(i, lane),
        )


def access_words(a: np.ndarray, width: int) -> np.ndarray:
    """The 4-byte words each phase touches: for ``a`` of shape (n, 32) -- the byte address
    of each lane's access of ``width`` bytes in n instructions -- an array of shape
    (n, phases, lanes_per_phase * words_per_lane) of word indices (a ``width``-byte access
    is served in ``width / 4`` phases of ``32 / (width / 4)`` lanes)."""
    k = width // BANK_BYTES
    n = a.shape[0]
    per = _LANES // k
    w = a // BANK_BYTES
    words = w[:, :, None] + np.arange(k, dtype=np.int64)[None, None, :]  # (n, 32, k)
    return words.reshape(n, k, per * k)


def _phase_lanes(width: int) -> np.ndarray:
    k = width // BANK_BYTES
    per = _LANES // k
    lanes = np.repeat(np.arange(_LANES), k)  # the lane of each (lane, word) entry
    return lanes.reshape(k, per * k)


def phase_wavefronts(words: np.ndarray, broadcast_ok: bool) -> np.ndarray:
    """For each (instruction, phase): the most distinct words any one bank must deliver
    (without broadcast: the most (lane, word) accesses any one bank serves)."""
    n, p, m = words.shape
    flat = words.reshape(n * p, m)
    if broadcast_ok:  # a repeated word in a bank is served once: drop repeats per row
        srt = np.sort(flat, axis=1)
        keep = np.ones_like(srt, dtype=bool)
        keep[:, 1:] = srt[:, 1:] != srt[:, :-1]
    else:
        srt = flat
        keep = np.ones_like(srt, dtype=bool)
    rows = np.repeat(np.arange(n * p), m).reshape(n * p, m)
    counts = np.zeros((n * p, NUM_BANKS), dtype=np.int64)
    np.add.at(counts, (rows[keep], (srt % NUM_BANKS)[keep]), 1)
    return counts.max(axis=1).reshape(n, p)


def wavefronts(addr_bytes: Any, width: int, *, broadcast_ok: bool = True) -> int:
    """The number of shared-memory wavefronts the access takes: for each instruction and
    phase, the largest number of distinct words one bank must deliver (1 when the phase is
    conflict-free), summed.

    >>> import numpy as np
    >>> wavefronts(np.arange(32) * 4, 4), wavefronts(np.arange(32) * 16, 16), wavefronts(np.zeros(32, int), 4)
    (1, 4, 1)
    >>> wavefronts(np.arange(32) * 8, 4)
    2
    """
    _phases(width)
    a = _as_instructions(addr_bytes, "wavefronts")
    return int(phase_wavefronts(access_words(a, width), broadcast_ok).sum())


def prove_conflict_free(
    addr_bytes: Any, width: int, *, what: str, log: Optional[ProofLog] = None, broadcast_ok: bool = True
) -> Proof:
    """Prove that a warp's shared-memory access (one instruction: shape ``(32,)``; or many:
    ``(n, 32)``) of ``width`` bytes per lane has no bank conflict.

    Each lane's address must be ``width``-aligned (else :class:`ProofFailedError`,
    condition ``alignment``).  A conflict raises :class:`BankConflictError` (condition
    ``bank conflict``) with the witness ``(instruction, phase, lane_a, lane_b, bank)``:
    two lanes of one phase touching the same bank at different words (or at the same
    word, when ``broadcast_ok`` is False).

    >>> import numpy as np
    >>> prove_conflict_free(np.arange(32) * 16, 16, what="cp.async 16B row").cases
    32
    """
    _phases(width)
    a = _as_instructions(addr_bytes, what)
    _check_aligned(a, width, what)
    words = access_words(a, width)
    lanes = _phase_lanes(width)
    n = words.shape[0]
    banks = words % NUM_BANKS
    ways = phase_wavefronts(words, broadcast_ok)
    if (ways > 1).any():
        i, ph = (int(x[0]) for x in np.nonzero(ways > 1))
        b, w, ln = banks[i, ph], words[i, ph], lanes[ph]
        for bank in range(NUM_BANKS):
            in_bank = np.flatnonzero(b == bank)
            if in_bank.size < 2:
                continue
            la, wa = int(ln[in_bank[0]]), int(w[in_bank[0]])
            other = [
                int(ln[e]) for e in in_bank[1:] if int(w[e]) != wa or (not broadcast_ok and int(ln[e]) != la)
            ]
            if other:
                lb = other[0]
                raise BankConflictError(
                    f"{what}: instruction {i}, phase {ph}: lanes {la} and {lb} hit bank {bank} at "
                    f"byte addresses {int(a[i, la])} and {int(a[i, lb])} ({int(ways[i, ph])}-way "
                    "conflict)",
                    condition="bank conflict",
                    witness=(i, ph, la, lb, bank),
                )
    stmt = f"{what}: conflict-free ({n} instruction(s) of {width}-byte lanes)"
    if log is not None:
        return log.add("banks", stmt, "exhaustive", n * _LANES)
    return Proof("banks", stmt, "exhaustive", n * _LANES)


def prove_ldmatrix_conflict_free(
    row_addr_bytes: Any, num_matrices: int, *, what: str, log: Optional[ProofLog] = None
) -> Proof:
    """Prove an ``ldmatrix.x{num_matrices}`` (or many: shape ``(n, 32)``) conflict-free.

    Lanes ``8j .. 8j+7`` give the 16-byte row addresses of matrix ``j < num_matrices``
    (other lanes are ignored).  Every row address must be 16-byte aligned (else
    :class:`ProofFailedError`, condition ``alignment``, witness ``(instruction, lane)``)
    and the 8 rows of each matrix must fall into 8 distinct 16-byte bank groups
    ``(addr // 16) % 8`` (else :class:`BankConflictError`, witness
    ``(instruction, matrix, lane_a, lane_b, group)``).

    >>> import numpy as np
    >>> rows = np.arange(32) * 128 + 16 * (np.arange(32) % 8)   # swizzled: chunk r in row r
    >>> prove_ldmatrix_conflict_free(rows, 4, what="ldmatrix A").cases
    32
    >>> prove_ldmatrix_conflict_free(np.arange(32) * 128, 4, what="ldmatrix A")
    Traceback (most recent call last):
      ...
    layoutproof.gpu.errors.BankConflictError: ldmatrix A: ... lanes 0 and 1 ...
    """
    if num_matrices not in (1, 2, 4):
        raise ProofFailedError(
            f"ldmatrix reads 1, 2 or 4 matrices, got {num_matrices}", condition="ldmatrix shape"
        )
    a = _as_instructions(row_addr_bytes, what)
    used = a[:, : 8 * num_matrices]
    bad = used % 16 != 0
    if bad.any():
        i, lane = (int(x[0]) for x in np.nonzero(bad))
        raise ProofFailedError(
            f"{what}: ldmatrix row address {int(used[i, lane])} of lane {lane} "
            f"(instruction {i}) is not 16-byte aligned",
            condition="alignment",
            witness=(i, lane),
        )
    groups = (used // 16) % 8
    for i in range(a.shape[0]):
        for j in range(num_matrices):
            g = groups[i, 8 * j : 8 * j + 8]
            for x in range(8):
                dup = np.flatnonzero(g[x + 1 :] == g[x])
                if dup.size:
                    la, lb = 8 * j + x, 8 * j + x + 1 + int(dup[0])
                    raise BankConflictError(
                        f"{what}: instruction {i}, matrix {j}: lanes {la} and {lb} give rows at "
                        f"{int(a[i, la])} and {int(a[i, lb])}, both in 16-byte bank group {int(g[x])} "
                        f"({int(np.bincount(g).max())}-way conflict)",
                        condition="bank conflict",
                        witness=(i, j, la, lb, int(g[x])),
                    )
    n = a.shape[0]
    stmt = f"{what}: ldmatrix.x{num_matrices} conflict-free ({n} instruction(s))"
    cases = n * 8 * num_matrices
    if log is not None:
        return log.add("banks", stmt, "exhaustive", cases)
    return Proof("banks", stmt, "exhaustive", cases)


def _columns(c: np.ndarray, k: int, who: str) -> list:
    if k == 1:
        return [c[..., 0] if c.ndim >= 2 and c.shape[-1] == 1 else c]
    if c.ndim == 0 or c.shape[-1] != k:
        raise ProofFailedError(
            f"{who} takes {k} coordinate(s) per point (a trailing axis of {k}), got shape {c.shape}",
            condition="coordinates",
        )
    return [c[..., j] for j in range(k)]


def smem_addresses(lowered_or_layout: Any, coords: Any, elem_bytes: int) -> np.ndarray:
    """Byte addresses ``elem_bytes * f(coords)`` of a lowered (the emitted C expression is
    evaluated) or plain/composed layout.  ``coords`` has one trailing axis entry per
    argument (shape ``(..., nargs)``), or no trailing axis when there is one argument.

    >>> import numpy as np
    >>> from layoutproof import Layout, Swizzle, composition
    >>> sw = composition(Swizzle(3, 3, 3), Layout((8, 64), (64, 1)))
    >>> rows = np.stack([np.arange(8), np.zeros(8, int)], axis=-1)
    >>> smem_addresses(sw, rows, 2).tolist()
    [0, 144, 288, 432, 576, 720, 864, 1008]
    """
    c = np.asarray(coords, dtype=np.int64)
    if isinstance(lowered_or_layout, Lowered):
        low = lowered_or_layout
        cols = _columns(c, len(low.args), low.name)
        return c_expr_eval(low.c_expr, dict(zip(low.args, cols))) * elem_bytes
    norm = normalize(lowered_or_layout)
    if norm.inner.is_symbolic:
        raise ProofFailedError(
            f"{norm.what}: substitute the runtime symbols first", condition="concrete values"
        )
    s = norm.inner.shape
    nargs = len(s) if isinstance(s, tuple) and s else 1
    sizes = [int(raw_product(fs)) for fs, _d in arg_modes(norm.inner, nargs)]
    cols = _columns(c, nargs, norm.what)
    idx = np.zeros(np.shape(cols[0]), dtype=np.int64)
    p = 1
    for col, size in zip(cols, sizes):
        if col.size and (int(col.min()) < 0 or int(col.max()) >= size):
            raise ProofFailedError(
                f"{norm.what}: a coordinate lies outside [0, {size})", condition="coordinates"
            )
        idx = idx + col * p
        p *= size
    return reference_values(norm)[idx] * elem_bytes
