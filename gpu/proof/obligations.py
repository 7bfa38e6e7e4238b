"""A kernel's obligations, computed from its IR tree (never from printed text).

:func:`discharge` proves every obligation of a :class:`~layoutproof.gpu.proof.kir.Kernel`
into a :class:`~layoutproof.gpu.proof.record.ProofLog` and returns the coverage
:class:`Report`:

* **memory accesses** -- every :class:`~.kir.Mem` node and every memory-touching intrinsic
  (``cp.async``, ``ldmatrix``, TMA boxes, wgmma descriptor reads) carries a
  :class:`~.kir.Claim`: the byte address the access must have, written with
  :class:`~.kir.LayoutApp` nodes (``L(coord)``, evaluated by the algebra, never by lowered C).
  The access's own address -- every variable inlined through its definition, every call of a
  proven function (:class:`~.kir.FnCall`, arguments *by name*) through its lowered body -- is
  evaluated with C semantics (:func:`~.evaluate.eval_expr`: widths, signedness, truncating ``/`` and
  ``%``) at every value its indices can take: the thread index, every constant-bound loop,
  every finite-valued variable (:class:`~.kir.Var` ``values``, themselves proven over every
  assignment), restricted by the enclosing thread-only conditions.  Runtime values
  (parameters, ``blockIdx``, runtime-bound loop counters) are symbols: both sides must be
  multilinear in them and agree at every 0/1 corner, which makes them equal for every value.
  Then the bounds: shared-memory accesses lie inside their region; global accesses satisfy
  ``0 <= coord`` (non-negative coefficients for non-negative symbols) and ``coord < extent``
  is implied by an enclosing guard (the guard's left side minus the coordinate is a
  non-negative constant, independent of every symbol); layout coordinates lie in the
  layout's domain.
* **barriers** -- a collective barrier (``__syncthreads``, named barrier, cluster barrier,
  ``.sync.aligned`` warpgroup instructions) never sits under a condition that differs
  between the threads taking part; the mbarrier operations are read from the nodes by
  :func:`mbarrier_ops` for the pipeline model checker.

The header states the coverage (``N of N memory accesses, M of M barrier operations
covered``); an uncovered access or barrier fails generation.  :class:`Analysis` is what the
obligations read from the tree (definitions, value sets, scopes); :class:`Prover` discharges
them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import ProofFailedError
from . import banks
from .evaluate import Ctx, EvalFailure, eval_expr
from .kir import (
    THREAD_IDX,
    AddrOf,
    AlignUp,
    Assign,
    AtomicAdd,
    Bin,
    Block,
    Call,
    Cast,
    Claim,
    ClusterSync,
    Cond,
    Const,
    CpAsync,
    Decl,
    Expr,
    FnCall,
    For,
    GridSync,
    If,
    Inc,
    Index,
    Kernel,
    LayoutApp,
    LdMatrix,
    MbarArrive,
    MbarExpectTx,
    MbarInit,
    MbarWait,
    Mem,
    Mma,
    NamedBarrier,
    Red,
    Reinterpret,
    RingAdvance,
    SetMaxNReg,
    Stmt,
    SyncThreads,
    TableDecl,
    TmaLoad,
    Un,
    Var,
    Wgmma,
    WgmmaCommit,
    WgmmaFence,
    WgmmaWait,
    children,
    emit_expr,
    emit_expr_safe,
    is_ptr,
    walk,
)
from .record import ProofLog

__all__ = [
    "Access",
    "Report",
    "Analysis",
    "analysis",
    "free_vars",
    "Prover",
    "discharge",
    "mbarrier_ops",
    "resolve",
]


# ============================================================================ obligations
@dataclass
class _Scope:
    """What holds at a program point: guards (condition, sense), enumerated loops."""

    guards: Tuple[Tuple[Expr, bool], ...] = ()
    loops: Tuple[For, ...] = ()


@dataclass
class Access:
    node: Any
    kind: str  # "store", "load", "cp.async dst", ...
    addr: Expr
    claim: Claim
    scope: _Scope
    vars_: Tuple[Var, ...] = ()


@dataclass
class Report:
    """The obligations discharged for one kernel."""

    accesses: int = 0
    accesses_covered: int = 0
    bank_proofs: int = 0
    barriers: int = 0
    barriers_covered: int = 0
    mbar: List[Tuple[Any, _Scope]] = field(default_factory=list)

    def line(self) -> str:
        return (
            f"coverage: {self.accesses_covered} of {self.accesses} memory accesses, "
            f"{self.barriers_covered} of {self.barriers} barrier operations covered"
        )


_COLLECTIVE = (
    SyncThreads,
    GridSync,
    NamedBarrier,
    ClusterSync,
    WgmmaFence,
    WgmmaCommit,
    WgmmaWait,
    SetMaxNReg,
    Wgmma,
    LdMatrix,
    Mma,
)
_MBAR = (MbarInit, MbarArrive, MbarExpectTx, MbarWait)
_BARRIER_OPS = (SyncThreads, NamedBarrier, ClusterSync, GridSync) + _MBAR


class Analysis:
    """What the obligations read from a kernel: each variable's single definition, its
    enumerated values, the tables, loops and guards around every access (:func:`analysis`)."""

    def __init__(self, k: Kernel) -> None:
        self.k = k
        self.defs: Dict[int, Expr] = {}
        self.assigned: Dict[int, List[Expr]] = {}
        self.tables: Dict[int, TableDecl] = {}
        self.vars: Dict[int, Var] = {}
        self.loops: Dict[int, For] = {}
        self.ring: Dict[int, RingAdvance] = {}
        self.accesses: List[Access] = []
        self.collectives: List[Tuple[Stmt, _Scope]] = []
        self.mbar: List[Tuple[Stmt, _Scope]] = []
        self.tid: Optional[Var] = None
        self._collect(k.body, _Scope())
        self._inl: Dict[int, bool] = {}
        self._rt: Dict[int, bool] = {}
        self.table_js = {id(t.j) for t in self.tables.values()}

    # -- which variables are inlined, which are runtime values
    def const_loop(self, f: For) -> Optional[np.ndarray]:
        """The values of a loop counter with constant bounds (a runtime condition
        ``v < c && ...`` still bounds it by ``c``: more values are only more cases)."""
        if id(f.var) in self.assigned:
            return None
        stop: Optional[Expr] = f.stop
        if f.cond is not None:
            stop = None
            todo = [f.cond]
            while todo:
                g = todo.pop()
                if isinstance(g, Bin) and g.op == "&&":
                    todo += [g.a, g.b]
                elif isinstance(g, Bin) and g.op == "<" and g.a is f.var:
                    stop = g.b
        if stop is None:
            return None
        try:
            c = Ctx({}, {k: v for k, v in self.defs.items() if k not in self.assigned}, {}, self.k.sizes)
            a = int(eval_expr(f.start, c)[0])
            b = int(eval_expr(stop, c)[0])
            st = int(eval_expr(f.step, c)[0])
        except (EvalFailure, TypeError, ValueError):
            return None
        return np.arange(a, b, st, dtype=np.int64)

    def enumerable(self, v: Var) -> bool:
        if v.builtin and v.name == "threadIdx.x":
            return True
        if v.values is not None or id(v) in self.table_js:
            return True
        f = self.loops.get(id(v))
        return f is not None and self.const_loop(f) is not None

    def inlinable(self, v: Var) -> bool:
        """A single-definition variable whose definition is multilinear in the runtime
        values (else it is itself a runtime value, a symbol)."""
        k = id(v)
        if k in self._inl:
            return self._inl[k]
        if k not in self.defs or k in self.assigned or v.values is not None:
            self._inl[k] = False
            return False
        self._inl[k] = True  # provisional (definitions are acyclic)
        ok = not self._nonlinear_rt(self.defs[k])
        self._inl[k] = ok
        return ok

    def runtime(self, x: Any) -> bool:
        """Does ``x`` depend on a runtime value (after inlining)?"""
        k = id(x)
        if k in self._rt:
            return self._rt[k]
        if isinstance(x, Var):
            if self.inlinable(x):
                r = self.runtime(self.defs[id(x)])
            else:
                r = not self.enumerable(x)
        else:
            r = any(self.runtime(c) for c in _operands(x, self))
        self._rt[k] = r
        return r

    def _nonlinear_rt(self, e: Expr) -> bool:
        for n in _walk_no_fn(e):
            if isinstance(n, Bin) and n.op not in ("+", "-", "*"):
                if self.runtime(n.a) or self.runtime(n.b):
                    return True
            if isinstance(n, AtomicAdd):
                return True  # the value an atomic read is a runtime value
            if isinstance(n, (Un, Cond, Call, AlignUp)) and not (isinstance(n, Un) and n.op == "-"):
                if isinstance(n, Call) and n.name == "__cvta_generic_to_shared":
                    continue
                if isinstance(n, AlignUp):
                    continue
                if any(self.runtime(c) for c in children(n) if isinstance(c, Expr)):
                    return True
            if (
                isinstance(n, Var)
                and n is not e
                and self.inlinable(n) is False
                and id(n) in self.defs
                and id(n) not in self.assigned
                and n.values is None
            ):
                continue
        return False

    # -- pass 1: definitions, assignments, accesses, barriers with their scopes
    def _collect(self, s: Stmt, sc: _Scope) -> None:
        if isinstance(s, Block):
            for x in s.body:
                self._collect(x, sc)
            return
        for n in walk(s):
            if isinstance(n, Var):
                self.vars[id(n)] = n
                if n.builtin and n.name == "threadIdx.x":
                    self.tid = n
            if isinstance(n, Inc):
                self.assigned.setdefault(id(n.v), []).append(n.v + 1)
        if isinstance(s, Decl):
            if s.init is not None and not s.dims:
                self.defs[id(s.var)] = s.init
            self._exprs(s, sc)
            return
        if isinstance(s, TableDecl):
            self.tables[id(s.var)] = s
            self._exprs(s, sc)
            return
        if isinstance(s, Assign):
            if isinstance(s.lhs, Var):
                rhs = s.rhs if s.op == "=" else Bin(s.op[:-1], s.lhs, s.rhs)
                self.assigned.setdefault(id(s.lhs), []).append(rhs)
            self._exprs(s, sc)
            return
        if isinstance(s, RingAdvance):
            self.ring[id(s.stage)] = s
            self.assigned.setdefault(id(s.stage), []).append(
                Cond((s.stage + 1).eq(s.n), Const(0), s.stage + 1)
            )
            if s.phase is not None:
                self.ring[id(s.phase)] = s
                self.assigned.setdefault(id(s.phase), []).append(s.phase ^ Const(1, "unsigned"))
            return
        if isinstance(s, For):
            self.loops[id(s.var)] = s
            self._exprs(s, sc)
            inner = _Scope(sc.guards, sc.loops + (s,))
            self._collect(s.body, inner)
            return
        if isinstance(s, If):
            self._exprs(s, sc)
            self._collect(s.then, _Scope(sc.guards + ((s.cond, True),), sc.loops))
            if s.orelse is not None:
                self._collect(s.orelse, _Scope(sc.guards + ((s.cond, False),), sc.loops))
            return
        if isinstance(s, _COLLECTIVE) or isinstance(s, (SyncThreads, NamedBarrier, ClusterSync)):
            self.collectives.append((s, sc))
        if isinstance(s, _MBAR):
            self.mbar.append((s, sc))
        if isinstance(s, CpAsync):
            self.accesses.append(Access(s, "cp.async shared write", s.dst, s.dst_claim, sc))
            self.accesses.append(Access(s, "cp.async global read", s.src, s.src_claim, sc))
        elif isinstance(s, LdMatrix):
            self.accesses.append(Access(s, "ldmatrix shared read", s.addr, s.claim, sc))
        elif isinstance(s, Wgmma):
            self.accesses.append(Access(s, "wgmma A operand read", s.a_addr, s.a_claim, sc))
            self.accesses.append(Access(s, "wgmma B operand read", s.b_addr, s.b_claim, sc))
        elif isinstance(s, TmaLoad):
            self.accesses.append(Access(s, "TMA box shared write", s.dst, s.claim, sc))
        self._exprs(s, sc)

    def _exprs(self, s: Stmt, sc: _Scope) -> None:
        atomic = {id(n.mem) for n in walk(s) if isinstance(n, AtomicAdd)}
        for n in walk(s):
            if isinstance(n, Mem):
                kind = f"{n.space} {'store' if self._is_store(s, n) else 'load'}"
                if isinstance(s, Red) and s.mem is n:
                    kind = f"{n.space} reduction (red.add, {s.lanes} f32)"
                if id(n) in atomic:
                    kind = f"{n.space} atomic read-modify-write"
                if isinstance(s, GridSync):
                    kind = f"{n.space} grid-barrier word (acquire load, atomic add, release store)"
                self.accesses.append(Access(n, kind, self._mem_addr(n), n.claim, sc))
            if isinstance(n, (If, For, Block)) and n is not s:
                return

    @staticmethod
    def _is_store(s: Stmt, n: Mem) -> bool:
        return isinstance(s, Assign) and s.lhs is n

    @staticmethod
    def _mem_addr(n: Mem) -> Expr:
        if n.idx is not None:
            return Bin("+", n.ptr, n.idx)
        return n.ptr


def _operands(x: Expr, an: Analysis) -> List[Expr]:
    """What the value of ``x`` (not a variable) is computed from: a proven call's arguments,
    a table read's indices and the table's value, else the node's child expressions."""
    if isinstance(x, FnCall):
        return [a for _, a in x.args]
    if isinstance(x, Index) and isinstance(x.base, Var) and id(x.base) in an.tables:
        return list(x.idx) + [an.tables[id(x.base)].value]
    return [c for c in children(x) if isinstance(c, Expr)]


def free_vars(e: Expr, an: Analysis, seen: Optional[set] = None) -> List[Var]:
    """The variables an expression reads after inlining definitions (leaves only)."""
    out: Dict[int, Var] = {}
    seen = set() if seen is None else seen

    def go(x: Any) -> None:
        for n in walk(x):
            if isinstance(n, FnCall):
                for _, a in n.args:
                    go(a)
                continue
            if isinstance(n, Index) and isinstance(n.base, Var) and id(n.base) in an.tables:
                tab = an.tables[id(n.base)]
                for i in n.idx:
                    go(i)
                seen.add(id(tab.j))
                go(tab.value)
            if isinstance(n, Var):
                k = id(n)
                if k in seen:
                    continue
                seen.add(k)
                if an.inlinable(n):
                    go(an.defs[k])
                else:
                    out[k] = n

    go(e)
    return list(out.values())


def _walk_no_fn(e: Any) -> Iterator[Any]:
    yield e
    if isinstance(e, FnCall):
        for _, a in e.args:
            yield from _walk_no_fn(a)
        return
    for c in children(e):
        yield from _walk_no_fn(c)


class Prover:
    """Discharges a kernel's obligations into a :class:`ProofLog`."""

    def __init__(self, k: Kernel, log: ProofLog) -> None:
        self.k = k
        self.log = log
        self.an = analysis(k)
        self.report = Report()
        self._defs: Optional[Dict[int, Expr]] = None
        self._cur_mask: Any = True

    # -- the index domain of a program point
    def _domain(self, vars_: Sequence[Var], sc: _Scope) -> Tuple[List[Var], List[np.ndarray], List[Var]]:
        """(enumerated vars, their value arrays (broadcast axes), symbols)."""
        enum: List[Var] = []
        vals: List[np.ndarray] = []
        syms: List[Var] = []
        for v in vars_:
            k = id(v)
            if v.builtin and v.name == "threadIdx.x":
                enum.append(v)
                vals.append(np.arange(self.k.threads, dtype=np.int64))
            elif k in self.an.loops and (cl := self.an.const_loop(self.an.loops[k])) is not None:
                enum.append(v)
                vals.append(cl)
            elif v.values is not None:
                enum.append(v)
                vals.append(np.asarray(v.values, dtype=np.int64))
            else:
                syms.append(v)
        n = len(enum)
        shaped = []
        for i, a in enumerate(vals):
            shp = [1] * n
            shp[i] = a.size
            shaped.append(a.reshape(shp))
        return enum, shaped, syms

    def _ctx(
        self, enum: List[Var], vals: List[np.ndarray], syms: List[Var], corner: Tuple[int, ...], pad: int
    ) -> Ctx:
        env = {id(v): a for v, a in zip(enum, vals)}
        env.update({id(s): np.int64(b) for s, b in zip(syms, corner)})
        if self._defs is None:
            self._defs = {k: v for k, v in self.an.defs.items() if self.an.inlinable(self.an.vars[k])}
        return Ctx(env, self._defs, self.an.tables, self.k.sizes, np.int64(pad))

    def _sub(self, exprs: Sequence[Expr], syms: Sequence[Var]) -> List[Var]:
        """The symbols among ``syms`` that ``exprs`` read."""
        ids: set[int] = set()
        for e in exprs:
            ids.update(id(v) for v in free_vars(e, self.an))
        return [s for s in syms if id(s) in ids]

    def _nonlinear(self, e: Expr, syms: Sequence[Var]) -> Optional[str]:
        """A symbol under an operation that is not multilinear (after inlining)."""
        walk_ = _Multilinear(self.an, syms)
        walk_.check(e)
        return walk_.bad[0] if walk_.bad else None

    def _mask(
        self, sc: _Scope, enum: List[Var], vals: List[np.ndarray], shape: Tuple[int, ...]
    ) -> Tuple[np.ndarray, List[Tuple[Expr, bool]]]:
        """The thread/loop-only guards as a mask; the others returned as symbolic guards."""
        mask = np.ones(shape, dtype=bool)
        rest: List[Tuple[Expr, bool]] = []
        eset = {id(v) for v in enum}
        ctx = self._ctx(enum, vals, [], (), 0)
        for g, sense in sc.guards:
            fv = free_vars(g, self.an)
            if all(id(v) in eset for v in fv):
                try:
                    c = np.broadcast_to(eval_expr(g, ctx)[0] != 0, shape)
                except EvalFailure:
                    rest.append((g, sense))
                    continue
                mask &= c if sense else ~c
            else:
                rest.append((g, sense))
        return mask, rest

    def _fail(
        self,
        acc: Access,
        cond: str,
        msg: str,
        enum: Sequence[Var] = (),
        vals: Sequence[np.ndarray] = (),
        where: Optional[int] = None,
        shape: Tuple[int, ...] = (),
    ) -> None:
        wit: Any = None
        if where is not None and enum:
            idx = np.unravel_index(where, shape)
            wit = {v.name: int(np.broadcast_to(a, shape)[idx]) for v, a in zip(enum, vals)}
            msg += f" at {wit}"
        raise ProofFailedError(
            f"kernel {self.k.name}: {acc.claim.what} ({acc.kind}): {msg}", condition=cond, witness=wit
        )

    # -- one access
    def _batch(
        self, enum: List[Var], vals: List[np.ndarray], syms: Sequence[Var], pad: bool, mask: Any
    ) -> Tuple[Ctx, int]:
        """A context evaluating every 0/1 corner of the symbols at once: the corners run
        along a new leading axis (symbol j is bit j of the corner index; the alignment pad,
        when present, the bit after them)."""
        k = len(syms) + (1 if pad else 0)
        C = 1 << k
        n = len(vals)
        env: Dict[int, Any] = {id(v): a.reshape((1,) + a.shape) for v, a in zip(enum, vals)}
        bits = np.arange(C, dtype=np.int64).reshape((C,) + (1,) * n)
        for j, sv in enumerate(syms):
            env[id(sv)] = (bits >> j) & 1
        if self._defs is None:
            self._defs = {i: e for i, e in self.an.defs.items() if self.an.inlinable(self.an.vars[i])}
        ctx = Ctx(
            env, self._defs, self.an.tables, self.k.sizes, (bits >> len(syms)) & 1 if pad else np.int64(0)
        )
        ctx.mask = mask
        return ctx, C

    def prove_access(self, acc: Access) -> int:
        addr, claim = acc.addr, acc.claim
        vars_ = free_vars(addr, self.an) + free_vars(claim.addr, self.an)
        for c, ext in claim.bounds:
            vars_ += free_vars(c, self.an) + free_vars(ext, self.an)
        scope = acc.scope
        if (
            isinstance(acc.node, CpAsync)
            and acc.node.src_empty is not None
            and acc.claim is acc.node.src_claim
        ):
            c = self._edge_cond(acc)
            scope = _Scope(scope.guards + ((c, True),), scope.loops)
            acc = Access(acc.node, acc.kind, acc.addr, acc.claim, scope)
        for g, _s in acc.scope.guards:
            vars_ += free_vars(g, self.an)
        uniq: Dict[int, Var] = {}
        for v in vars_:
            uniq.setdefault(id(v), v)
        enum, vals, syms = self._domain(list(uniq.values()), acc.scope)
        if len(syms) > 12:
            self._fail(acc, "few runtime symbols", f"{len(syms)} runtime values in one access")
        shape = tuple(a.size for a in vals)
        mask, guards = self._mask(acc.scope, enum, vals, shape)
        self._cur_mask = mask
        all_syms = syms
        syms = self._sub([addr, claim.addr], all_syms)
        for e, what in ((addr, "the address"), (claim.addr, "the claimed address")):
            nl = self._nonlinear(e, syms)
            if nl is not None:
                self._fail(
                    acc,
                    "address multilinear in the runtime values",
                    f"{what} is not multilinear in the runtime values ({nl})",
                )
        has_pad = any(isinstance(n, AlignUp) for n in _walk_defs(addr, self.an)) or any(
            isinstance(n, AlignUp) for n in _walk_defs(claim.addr, self.an)
        )
        ctx, C = self._batch(enum, vals, syms, has_pad, mask)
        full = (C,) + shape
        try:
            got = np.broadcast_to(eval_expr(addr, ctx)[0], full)
            want = np.broadcast_to(eval_expr(claim.addr, ctx)[0], full)
        except EvalFailure as f:
            self._fail(acc, f.condition, f.message)
        bad = mask & (got != want)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            corner, rest = divmod(i, int(np.prod(shape, dtype=np.int64)) if shape else 1)
            sy = {sv.name: (corner >> j) & 1 for j, sv in enumerate(syms)}
            self._fail(
                acc,
                "address equals its layout",
                f"the address is {int(got.reshape(-1)[i])}, the claim "
                f"{int(want.reshape(-1)[i])} (runtime values {sy})",
                enum,
                vals,
                rest,
                shape,
            )
        self._bounds(acc, enum, vals, syms, shape, mask, guards, got, ctx, all_syms)
        if acc.claim.region is not None and isinstance(acc.node, (CpAsync, LdMatrix, Mem)):
            self._banks(acc, enum, shape, mask, got, ctx)
        return int(mask.sum()) * C if np.ndim(mask) else int(np.prod(shape)) * C

    def _bounds(
        self,
        acc: Access,
        enum: List[Var],
        vals: List[np.ndarray],
        syms: List[Var],
        shape: Tuple[int, ...],
        mask: np.ndarray,
        guards: List[Tuple[Expr, bool]],
        got: np.ndarray,
        ctx: Ctx,
        all_syms: Sequence[Var] = (),
    ) -> None:
        claim = acc.claim
        if claim.region is not None:
            base, size = claim.region
            try:
                b = eval_expr(base, ctx)[0]
            except EvalFailure as f:
                self._fail(acc, f.condition, f.message)
            off = got - b
            bad = mask & ((off < 0) | (off + claim.width > size))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                rest = i % (int(np.prod(shape, dtype=np.int64)) if shape else 1)
                self._fail(
                    acc,
                    "access inside its buffer",
                    f"byte offset {int(off.reshape(-1)[i])} (+{claim.width}) is "
                    f"outside the {size}-byte region",
                    enum,
                    vals,
                    rest,
                    shape,
                )
            if np.any(mask & (off != off[:1])):
                self._fail(
                    acc, "access inside its buffer", "the offset inside the region depends on a runtime value"
                )
        for coord, ext in claim.bounds:
            self._global_bound(acc, coord, ext, enum, vals, list(all_syms), shape, mask, guards)

    def _banks(
        self, acc: Access, enum: List[Var], shape: Tuple[int, ...], mask: Any, got: np.ndarray, ctx: Ctx
    ) -> None:
        """Bank conflicts of a shared-memory access, from the IR's own addresses: the lanes
        of each warp at every value of the other indices form one instruction (``ldmatrix``
        row addresses per 8-lane phase; others ``width`` bytes per lane).  Warps that do not
        all execute it (thread-dependent guards) are left out."""
        ti = next((i for i, v in enumerate(enum) if v is THREAD_IDX), None)
        if ti is None or self.k.threads % 32:
            return
        region = acc.claim.region
        if region is None:
            return
        base = eval_expr(region[0], ctx)[0]
        off = np.broadcast_to(got - base, (got.shape[0],) + shape)[0]
        if int(np.broadcast_to(base, got.shape).reshape(-1)[0]) % 128:
            return  # not at a 128-byte-aligned base: banks relative to it say nothing
        arr = np.moveaxis(off, ti, -1).reshape(-1, 32)
        m = np.moveaxis(np.broadcast_to(mask, shape), ti, -1).reshape(-1, 32)
        rows = np.unique(arr[m.all(axis=1)], axis=0)
        if rows.size == 0:
            return
        what = f"{acc.kind}: {acc.claim.what} (addresses of the IR)"
        if isinstance(acc.node, LdMatrix):
            pr = banks.prove_ldmatrix_conflict_free(rows, 4, what=what)
        else:
            pr = banks.prove_conflict_free(rows, acc.claim.width, what=what)
        self.log.add(pr.kind, pr.statement, pr.method, pr.cases)
        self.report.bank_proofs += 1

    def _poly(
        self, e: Expr, enum: List[Var], vals: List[np.ndarray], syms: List[Var], shape: Tuple[int, ...]
    ) -> Dict[frozenset, np.ndarray]:
        """Moebius coefficients of a multilinear expression in the symbols (all corners in
        one evaluation, then the subset-difference transform along the corner axis)."""
        ctx, C = self._batch(enum, vals, syms, False, self._cur_mask)
        v = np.array(np.broadcast_to(eval_expr(e, ctx)[0], (C,) + shape), dtype=np.int64)
        k = len(syms)
        if k:
            w = v.reshape((2,) * k + shape)
            for ax in range(k):
                sl1: List[Any] = [slice(None)] * w.ndim
                sl0: List[Any] = [slice(None)] * w.ndim
                sl1[ax], sl0[ax] = 1, 0
                w[tuple(sl1)] -= w[tuple(sl0)]
            v = w.reshape((C,) + shape)
        return {frozenset(sv.name for j, sv in enumerate(syms) if (c >> j) & 1): v[c] for c in range(C)}

    def _global_bound(
        self,
        acc: Access,
        coord: Expr,
        ext: Expr,
        enum: List[Var],
        vals: List[np.ndarray],
        syms: List[Var],
        shape: Tuple[int, ...],
        mask: np.ndarray,
        guards: List[Tuple[Expr, bool]],
    ) -> None:
        try:
            for e in (coord, ext):
                nl = self._nonlinear(e, syms)
                if nl is not None:
                    self._fail(acc, "global access in bounds", f"bound not multilinear ({nl})")
            cp = self._poly(coord, enum, vals, self._sub([coord], syms), shape)
        except EvalFailure as f:
            self._fail(acc, f.condition, f.message)
        # 0 <= coord: every coefficient non-negative (the symbols are non-negative)
        for t, c in cp.items():
            if np.any(mask & (c < 0)):
                i = int(np.flatnonzero(mask & (c < 0))[0])
                self._fail(
                    acc,
                    "global access in bounds",
                    f"the coordinate may be negative (coefficient of {sorted(t) or 1})",
                    enum,
                    vals,
                    i,
                    shape,
                )
        # coord < ext: some guard lhs < ext (or lhs <= ext - 1) with lhs - coord >= 0 constant
        atoms: List[Tuple[Tuple[Expr, Expr], int]] = []
        for g, sense in guards:
            if sense:
                atoms += _atoms(g, self.an)
        for (lhs, rhs), off in atoms:
            if not _same(rhs, ext, self.an):
                continue
            try:
                d = Bin("-", lhs, coord)
                dp = self._poly(d, enum, vals, self._sub([d], syms), shape)
            except EvalFailure:
                continue
            const = dp.get(frozenset())
            others = [c for t, c in dp.items() if t]
            if const is None or any(np.any(mask & (c != 0)) for c in others):
                continue
            if np.all(~mask | (const + off >= 0)):
                return
        self._fail(
            acc,
            "global access in bounds",
            f"no enclosing guard implies {emit_expr_safe(coord)} < {emit_expr_safe(ext)}",
        )

    def _edge_cond(self, acc: Access) -> Expr:
        """A predicated cp.async: its byte count must be ``cond ? min(E - x, w) * b : 0``
        with ``(x, E)`` its ``edge`` (then it reads elements x .. min(E, x + w) - 1 of that
        dimension only when ``cond`` holds: ``cond`` becomes a guard of the read, and
        ``x < E`` is one of the read's bounds).  Returns ``cond``."""
        node = acc.node
        nb = node.nbytes
        while isinstance(nb, Var) and id(nb) in self.an.defs and id(nb) not in self.an.assigned:
            nb = self.an.defs[id(nb)]
        ok = (
            isinstance(nb, Cond)
            and isinstance(nb.b, Const)
            and nb.b.value == 0
            and node.edge is not None
            and isinstance(nb.a, Bin)
            and nb.a.op == "*"
            and isinstance(nb.a.a, Call)
            and nb.a.a.name == "min"
            and isinstance(nb.a.a.args[0], Bin)
            and nb.a.a.args[0].op == "-"
            and _same(nb.a.a.args[0].a, node.edge[1], self.an)
            and _same(nb.a.a.args[0].b, node.edge[0], self.an)
            and any(
                _same(c, node.edge[0], self.an) and _same(e, node.edge[1], self.an)
                for c, e in acc.claim.bounds
            )
        )
        if not ok:
            raise ProofFailedError(
                f"kernel {self.k.name}: {acc.claim.what}: the byte count of a "
                f"predicated cp.async is not cond ? min(extent - coord, w) * "
                f"bytes : 0 over a claimed bound",
                condition="global access in bounds",
                witness=acc.claim.what,
            )
        return nb.c

    # -- barriers
    def prove_barrier(self, s: Stmt, sc: _Scope) -> str:
        """A collective stays out of conditions that split its participants."""
        if isinstance(s, (SyncThreads, ClusterSync, GridSync)):
            group = self.k.threads
        elif isinstance(s, NamedBarrier):
            group = s.n
        elif isinstance(s, (Mma, LdMatrix)):
            group = 32
        else:
            group = 128
        tid = self.an.tid
        for g, _sense in sc.guards:
            fv = free_vars(g, self.an)
            if tid is None or not any(v is tid for v in fv):
                continue
            others = [v for v in fv if v is not tid]
            enum, vals, syms = self._domain([tid] + others, sc)
            if syms:
                raise ProofFailedError(
                    f"kernel {self.k.name}: {type(s).__name__} under the condition "
                    f"{emit_expr(g)}, which depends on the thread and on runtime values",
                    condition="barrier not under a thread-dependent condition",
                    witness=emit_expr(g),
                )
            shape = tuple(a.size for a in vals)
            ctx = self._ctx(enum, vals, [], (), 0)
            c = np.broadcast_to(eval_expr(g, ctx)[0] != 0, shape)
            c = np.moveaxis(c, 0, -1).reshape(-1, self.k.threads // group, group)
            if np.any(c.min(axis=2) != c.max(axis=2)):
                raise ProofFailedError(
                    f"kernel {self.k.name}: {type(s).__name__} under the condition "
                    f"{emit_expr(g)}, which differs between the {group} threads that must "
                    f"all reach it",
                    condition="barrier not under a thread-dependent condition",
                    witness=emit_expr(g),
                )
        return f"{type(s).__name__} uniform over its {group} threads"

    def prove_values(self) -> int:
        """Every finite-valued variable stays in its value set over every assignment."""
        n = 0
        for k, v in self.an.vars.items():
            if v.values is None:
                continue
            exprs = ([self.an.defs[k]] if k in self.an.defs else []) + self.an.assigned.get(k, [])
            allowed = set(v.values)
            for e in exprs:
                fv = free_vars(e, self.an)
                enum, vals, syms = self._domain(fv, _Scope())
                if (
                    syms
                    and isinstance(e, Bin)
                    and e.op == "%"
                    and isinstance(e.b, Const)
                    and e.b.value > 0
                    and self._nonlinear(e.a, syms) is None
                ):
                    # x % n with x >= 0 (non-negative coefficients; runtime values are
                    # non-negative) lies in [0, n)
                    shape = tuple(a.size for a in vals)
                    self._cur_mask = True
                    cp = self._poly(e.a, enum, vals, syms, shape)
                    if all(np.all(c >= 0) for c in cp.values()) and set(range(e.b.value)) <= allowed:
                        n += 1
                        continue
                if syms:
                    raise ProofFailedError(
                        f"kernel {self.k.name}: {v.name} = {emit_expr(e)} depends on runtime values",
                        condition="finite-valued variable",
                        witness=v.name,
                    )
                got = np.asarray(eval_expr(e, self._ctx(enum, vals, [], (), 0))[0]).reshape(-1)
                out = [int(x) for x in np.unique(got) if int(x) not in allowed]
                if out:
                    raise ProofFailedError(
                        f"kernel {self.k.name}: {v.name} = {emit_expr(e)} "
                        f"takes {out[0]}, outside {sorted(allowed)}",
                        condition="finite-valued variable",
                        witness=(v.name, out[0]),
                    )
                n += got.size
        return n

    def _registers_only(self) -> None:
        """Every ``Index`` reads or writes a register array (a local array, a per-thread
        table, or a pointer to a local value): a shared or global access that is not a
        ``Mem`` node (and so has no claim) would escape the obligations."""
        local = set(self.an.tables)
        for n in walk(self.k.body):
            if isinstance(n, Decl) and n.dims and not n.prefix:
                local.add(id(n.var))
        for n in walk(self.k.body):
            if not isinstance(n, Index):
                continue
            b = n.base
            ok = isinstance(b, Var) and id(b) in local
            if isinstance(b, Var) and not ok:
                d = self.an.defs.get(id(b))
                ok = (
                    isinstance(d, Reinterpret)
                    and isinstance(d.a, AddrOf)
                    and isinstance(d.a.a, Var)
                    and _is_local_value(d.a.a, self.an)
                )
            if not ok:
                raise ProofFailedError(
                    f"kernel {self.k.name}: {emit_expr_safe(n)} indexes memory outside a claimed "
                    f"access (only register arrays may be indexed)",
                    condition="coverage",
                    witness=emit_expr_safe(n),
                )

    def run(self) -> Report:
        rep = self.report
        self._registers_only()
        vcases = self.prove_values()
        finite = [v.name for v in self.an.vars.values() if v.values is not None]
        if finite:
            self.log.add(
                "bounds",
                f"value sets of {', '.join(sorted(set(finite)))} hold over "
                f"every assignment (read from the IR)",
                "exhaustive",
                vcases,
            )
        for acc in self.an.accesses:
            rep.accesses += 1
            cases = self.prove_access(acc)
            b = " and in bounds" if (acc.claim.region or acc.claim.bounds) else ""
            self.log.add(
                "equal",
                f"{acc.kind}: {acc.claim.what}: address == claim{b} over every index value (IR)",
                "exhaustive",
                cases,
            )
            rep.accesses_covered += 1
        nb = 0
        for s, sc in self.an.collectives:
            self.prove_barrier(s, sc)
            nb += 1
        for s, _sc in self.an.collectives:
            if isinstance(s, _BARRIER_OPS):
                rep.barriers += 1
                rep.barriers_covered += 1
        if nb:
            self.log.add(
                "protocol",
                f"{nb} collective operations (barriers, warpgroup-aligned "
                f"wgmma/setmaxnreg, warp-aligned ldmatrix/mma) never under "
                f"a condition that splits their threads (IR)",
                "exhaustive",
                nb,
            )
        calls = [n for n in walk(self.k.body) if isinstance(n, FnCall)]
        if calls:
            names = sorted({c.fn.name for c in calls})
            self.log.add(
                "equal",
                f"{len(calls)} calls of the proven functions {', '.join(names)} "
                f"name every parameter once (IR nodes); each call inside an "
                f"access is evaluated through its proven body above",
                "exhaustive",
                len(calls),
            )
        rep.mbar = list(self.an.mbar)
        rep.barriers += len(self.an.mbar)
        return rep


#: the operators under which a runtime value makes an address not multilinear
_NOT_MULTILINEAR = ("/", "%", "<<", ">>", "&", "|", "^", "<", "<=", ">", ">=", "==", "!=", "&&", "||")


class _Multilinear:
    """The search behind :meth:`Prover._nonlinear`: every place (after inlining single
    definitions, through tables and proven calls) where a runtime symbol sits under an
    operation that is not multilinear; each is described in ``bad``."""

    def __init__(self, an: Analysis, syms: Sequence[Var]) -> None:
        self.an = an
        self.sid = {id(s) for s in syms}
        self.memo: Dict[int, bool] = {}
        self.dmemo: Dict[int, frozenset] = {}
        self.bad: List[str] = []

    def deps(self, x: Expr) -> bool:
        """Does ``x`` read one of the symbols?"""
        an, k = self.an, id(x)
        if k in self.memo:
            return self.memo[k]
        if isinstance(x, Var):
            if k in self.sid:
                r = True
            elif an.inlinable(x):
                r = self.deps(an.defs[k])
            else:
                r = False
        else:
            r = any(self.deps(c) for c in _operands(x, an))
        self.memo[k] = r
        return r

    def degs(self, x: Expr) -> frozenset:
        """The symbols an expression depends on (for products)."""
        an, k = self.an, id(x)
        if k in self.dmemo:
            return self.dmemo[k]
        if isinstance(x, Var):
            if k in self.sid:
                r = frozenset([k])
            elif an.inlinable(x):
                r = self.degs(an.defs[k])
            else:
                r = frozenset()
        else:
            r = frozenset().union(*[self.degs(c) for c in _operands(x, an)])
        self.dmemo[k] = r
        return r

    def check(self, x: Expr) -> None:
        """Record in ``bad`` every non-multilinear use of a symbol inside ``x``."""
        an = self.an
        if isinstance(x, Var):
            if an.inlinable(x) and id(x) not in self.sid:
                self.check(an.defs[id(x)])
            return
        if isinstance(x, FnCall):
            self._check_call(x)
            return
        if self._check_operator(x):
            return
        if isinstance(x, AlignUp):
            self.check(x.a)
            return
        if isinstance(x, Index) and isinstance(x.base, Var) and id(x.base) in an.tables:
            for i in x.idx:
                self.check(i)
            self.check(an.tables[id(x.base)].value)
            return
        if isinstance(x, LayoutApp):
            for c in x.coords:
                if self.deps(c):
                    self.bad.append(f"{x.what or 'layout'}(a runtime value)")
            return
        for c in children(x):
            if isinstance(c, Expr):
                self.check(c)

    def _check_call(self, x: FnCall) -> None:
        """A symbol passed into an int parameter: the body is linear in it only if the body
        is; check the body's structure on its parameter, then the arguments."""
        by = dict(x.args)
        for _t, n in x.fn.params:
            if self.deps(by[n]):
                body_syms = [v for v in walk(x.fn.body) if isinstance(v, Var) and v.name == n]
                if body_syms and _nonlinear_in(x.fn.body, body_syms[0]):
                    self.bad.append(f"{x.fn.name}({n} = a runtime value)")
            self.check(by[n])

    def _check_operator(self, x: Expr) -> bool:
        """The operators: a product of two symbol-dependent factors, a symbol under ``/ %``,
        a shift count, a bit or comparison operator, ``~ !``, or a condition.  True when
        ``x`` is settled here (recorded, or its one relevant operand checked)."""
        if isinstance(x, Bin) and x.op == "*":
            if self.degs(x.a) & self.degs(x.b):
                self.bad.append(f"{emit_expr_safe(x)} (a runtime value squared)")
                return True
        if isinstance(x, Bin) and x.op in _NOT_MULTILINEAR:
            if x.op == "<<" and not self.deps(x.b):
                self.check(x.a)
                return True
            if self.deps(x.a) or self.deps(x.b):
                self.bad.append(emit_expr(x) if not isinstance(x.a, LayoutApp) else x.op)
                return True
        if isinstance(x, Un) and x.op != "-" and self.deps(x.a):
            self.bad.append(emit_expr(x))
            return True
        if isinstance(x, Cond) and self.deps(x.c):
            self.bad.append("a condition on a runtime value")
            return True
        return False


def _nonlinear_in(body: Expr, p: Var) -> bool:
    """Is the proven body not linear in its parameter ``p`` (``p`` under an operator
    other than + - *, or on both sides of a product)?"""
    for n in walk(body):
        if isinstance(n, Bin) and n.op not in ("+", "-", "*"):
            if any(x is p for x in walk(n)):
                return True
        if (
            isinstance(n, Bin)
            and n.op == "*"
            and any(x is p for x in walk(n.a))
            and any(x is p for x in walk(n.b))
        ):
            return True
        if isinstance(n, (Un, Cond, Call)) and not (isinstance(n, Un) and n.op == "-"):
            if any(x is p for x in walk(n)):
                return True
    return False


def _is_local_value(v: Var, an: Analysis) -> bool:
    """A value declared in the kernel body (a register), not a pointer into memory."""
    return not is_ptr(v.ctype) and id(v) in an.vars and not v.builtin


def _walk_defs(e: Expr, an: Analysis) -> Iterator[Any]:
    seen: set = set()

    def go(x: Any) -> Iterator[Any]:
        for n in walk(x):
            yield n
            if isinstance(n, Var) and id(n) not in seen and id(n) in an.defs:
                seen.add(id(n))
                yield from go(an.defs[id(n)])

    return go(e)


def _atoms(g: Expr, an: Analysis) -> List[Tuple[Tuple[Expr, Expr], int]]:
    """``lhs < rhs`` facts of a true condition: ((lhs, rhs), slack) meaning
    lhs + slack < rhs + ... normalized so that ``coord <= lhs + slack`` proves coord < rhs."""
    out: List[Tuple[Tuple[Expr, Expr], int]] = []
    if isinstance(g, Var) and id(g) in an.defs and id(g) not in an.assigned:
        return _atoms(an.defs[id(g)], an)
    if isinstance(g, Bin):
        if g.op == "&&":
            return _atoms(g.a, an) + _atoms(g.b, an)
        if g.op == "<":  # a < b: coord <= a  ->  coord < b
            out.append(((g.a, g.b), 0))
        elif g.op == "<=":  # a <= b: coord <= a - 1 -> coord < b
            out.append(((g.a, g.b), -1))
    return out


def _same(a: Expr, b: Expr, an: Analysis) -> bool:
    """Structural equality after inlining single definitions."""

    def norm(x: Expr) -> Expr:
        while isinstance(x, Var) and id(x) in an.defs and id(x) not in an.assigned and x.values is None:
            x = an.defs[id(x)]
        return x

    a, b = norm(a), norm(b)
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, Const) and isinstance(b, Const):
        return a.value == b.value
    if isinstance(a, Var):
        return a is b
    if isinstance(a, Bin) and isinstance(b, Bin):
        return a.op == b.op and _same(a.a, b.a, an) and _same(a.b, b.b, an)
    if isinstance(a, (Cast, Un)) and isinstance(b, (Cast, Un)):
        return getattr(a, "op", None) == getattr(b, "op", None) and _same(a.a, b.a, an)
    return False


def analysis(k: Kernel) -> "Analysis":
    """The definitions, scopes, accesses and barriers of ``k`` (computed once per body)."""
    hit = k.__dict__.get("_analysis")
    if hit is not None and hit[0] is k.body:
        return hit[1]
    an = Analysis(k)
    k.__dict__["_analysis"] = (k.body, an)
    return an


def discharge(k: Kernel, log: ProofLog) -> Report:
    """Prove every access and collective of kernel ``k`` (records into ``log``)."""
    return Prover(k, log).run()


def mbarrier_ops(k: Kernel) -> List[Tuple[Stmt, Tuple[Tuple[Expr, bool], ...], Tuple[For, ...]]]:
    """The mbarrier operations of the kernel with their guards and enclosing loops, in
    program order (for the pipeline model)."""
    an = analysis(k)
    return [(s, sc.guards, sc.loops) for s, sc in an.mbar]


def resolve(e: Expr, k: Kernel) -> Expr:
    """Follow single definitions of a variable (for reading barrier addresses)."""
    an = analysis(k)
    while isinstance(e, Var) and id(e) in an.defs and id(e) not in an.assigned:
        e = an.defs[id(e)]
    return e
