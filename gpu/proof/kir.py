"""Kernels as data: a small kernel IR, its one printer to CUDA C, and its obligations.

A kernel is built as a tree of :class:`Expr` and :class:`Stmt` nodes (:class:`Kernel`);
:func:`emit` is the only place CUDA text is produced, and :func:`discharge` computes the
obligations from the tree itself (never from printed text):

* **memory accesses** -- every :class:`Mem` node and every memory-touching intrinsic
  (``cp.async``, ``ldmatrix``, TMA boxes, wgmma descriptor reads) carries a
  :class:`Claim`: the byte address the access must have, written with :class:`LayoutApp`
  nodes (``L(coord)``, evaluated by the algebra, never by lowered C).  The access's own
  address -- every variable inlined through its definition, every call of a proven
  function (:class:`FnCall`, arguments *by name*) through its lowered body -- is evaluated
  with C semantics (widths, signedness, truncating ``/`` and ``%``) at every value its
  indices can take: the thread index, every constant-bound loop, every finite-valued
  variable (:class:`Var` ``values``, themselves proven over every assignment), restricted
  by the enclosing thread-only conditions.  Runtime values (parameters, ``blockIdx``,
  runtime-bound loop counters) are symbols: both sides must be multilinear in them and
  agree at every 0/1 corner, which makes them equal for every value.  Then the bounds:
  shared-memory accesses lie inside their region; global accesses satisfy ``0 <= coord``
  (non-negative coefficients for non-negative symbols) and ``coord < extent`` is implied
  by an enclosing guard (the guard's left side minus the coordinate is a non-negative
  constant, independent of every symbol); layout coordinates lie in the layout's domain.
* **barriers** -- a collective barrier (``__syncthreads``, named barrier, cluster
  barrier, ``.sync.aligned`` warpgroup instructions) never sits under a condition that
  differs between the threads taking part; the mbarrier operations are read from the
  nodes by :func:`mbarrier_ops` for the pipeline model checker.

The header states the coverage (``N of N memory accesses, M of M barrier operations
covered``); an uncovered access or barrier fails generation.

>>> i = Var("i")
>>> print(emit_expr((i + 1) * 4 >> 2))
((i + 1) * 4) >> 2
>>> ev(Bin("/", Const(-7), Const(2)), {}).tolist()
-3
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np

from ..errors import LoweringError, ProofFailedError
from .record import ProofLog

__all__ = [
    "Expr",
    "Const",
    "FloatLit",
    "Var",
    "Bin",
    "Un",
    "Cast",
    "Reinterpret",
    "Cond",
    "Index",
    "AddrOf",
    "Call",
    "FnCall",
    "Inc",
    "LayoutApp",
    "AlignUp",
    "MbarRef",
    "Mem",
    "AtomicAdd",
    "ATOMIC_SEMS",
    "Red",
    "Claim",
    "ProvenFn",
    "Stmt",
    "Decl",
    "Assign",
    "Eval",
    "For",
    "If",
    "Block",
    "Comment",
    "Pragma",
    "TableDecl",
    "RingAdvance",
    "CpAsync",
    "CpCommit",
    "CpWait",
    "LdMatrix",
    "Mma",
    "WgmmaFence",
    "Wgmma",
    "WgmmaCommit",
    "WgmmaWait",
    "TmaLoad",
    "MbarInit",
    "MbarArrive",
    "MbarExpectTx",
    "MbarWait",
    "Fence",
    "SetMaxNReg",
    "SyncThreads",
    "NamedBarrier",
    "ClusterSync",
    "ClusterRank",
    "Kernel",
    "emit",
    "emit_expr",
    "ev",
    "discharge",
    "walk",
    "rewrite",
    "mbarrier_ops",
    "from_lowered",
    "eval_expr",
    "free_vars",
    "Analysis",
    "analysis",
]

# ============================================================================ types
#: C integer types: (bits, signed)
INT_TYPES = {
    "int": (32, True),
    "unsigned": (32, False),
    "long long": (64, True),
    "unsigned long long": (64, False),
    "bool": (32, True),
    "unsigned short": (16, False),
}


def _is_ptr(t: Optional[str]) -> bool:
    return t is not None and t.rstrip().endswith("*")


def _pointee(t: str) -> str:
    s = t.rstrip()[:-1].strip()
    return s[6:] if s.startswith("const ") else s


# ============================================================================ expressions
class Expr:
    """An integer (or pointer) expression.  Python operators build :class:`Bin` nodes;
    comparisons are methods (``lt``, ``le``, ``eq``, ...) so that nodes stay hashable."""

    def _b(self, op: str, o: Any, rev: bool = False) -> "Bin":
        o = lift(o)
        return Bin(op, o, self) if rev else Bin(op, self, o)

    def __add__(self, o: Any) -> "Bin":
        return self._b("+", o)

    def __radd__(self, o: Any) -> "Bin":
        return self._b("+", o, True)

    def __sub__(self, o: Any) -> "Bin":
        return self._b("-", o)

    def __rsub__(self, o: Any) -> "Bin":
        return self._b("-", o, True)

    def __mul__(self, o: Any) -> "Bin":
        return self._b("*", o)

    def __rmul__(self, o: Any) -> "Bin":
        return self._b("*", o, True)

    def __truediv__(self, o: Any) -> "Bin":
        return self._b("/", o)

    def __mod__(self, o: Any) -> "Bin":
        return self._b("%", o)

    def __and__(self, o: Any) -> "Bin":
        return self._b("&", o)

    def __or__(self, o: Any) -> "Bin":
        return self._b("|", o)

    def __xor__(self, o: Any) -> "Bin":
        return self._b("^", o)

    def __lshift__(self, o: Any) -> "Bin":
        return self._b("<<", o)

    def __rshift__(self, o: Any) -> "Bin":
        return self._b(">>", o)

    def __invert__(self) -> "Un":
        return Un("~", self)

    def __neg__(self) -> "Un":
        return Un("-", self)

    def lt(self, o: Any) -> "Bin":
        return self._b("<", o)

    def le(self, o: Any) -> "Bin":
        return self._b("<=", o)

    def gt(self, o: Any) -> "Bin":
        return self._b(">", o)

    def ge(self, o: Any) -> "Bin":
        return self._b(">=", o)

    def eq(self, o: Any) -> "Bin":
        return self._b("==", o)

    def ne(self, o: Any) -> "Bin":
        return self._b("!=", o)

    def and_(self, o: Any) -> "Bin":
        return self._b("&&", o)


def lift(x: Any) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool):
        return Const(int(x), "bool")
    if isinstance(x, int):
        return Const(x)
    raise LoweringError(f"kernel IR: {x!r} is not an expression", condition="IR expression")


@dataclass(frozen=True, eq=False)
class Const(Expr):
    value: int
    ctype: str = "int"
    hex: bool = False


@dataclass(frozen=True, eq=False)
class FloatLit(Expr):
    text: str


@dataclass(frozen=True, eq=False)
class Var(Expr):
    """A variable (identity is the object: two ``m0`` of two scopes are two Vars).
    ``values``: a finite set the variable is claimed to stay in (proven over its
    assignments), which makes it an enumerated index of every access that reads it."""

    name: str
    ctype: str = "int"
    values: Optional[Tuple[int, ...]] = None
    builtin: bool = False


@dataclass(frozen=True, eq=False)
class Bin(Expr):
    op: str
    a: Expr
    b: Expr


@dataclass(frozen=True, eq=False)
class Un(Expr):
    op: str  # "-", "~", "!"
    a: Expr


@dataclass(frozen=True, eq=False)
class Cast(Expr):
    ctype: str
    a: Expr


@dataclass(frozen=True, eq=False)
class Reinterpret(Expr):
    ctype: str
    a: Expr


@dataclass(frozen=True, eq=False)
class Cond(Expr):
    c: Expr
    a: Expr
    b: Expr


@dataclass(frozen=True, eq=False)
class Index(Expr):
    """An element of a local (register) array: never a shared or global access."""

    base: Expr
    idx: Tuple[Expr, ...]


@dataclass(frozen=True, eq=False)
class AddrOf(Expr):
    a: Expr


@dataclass(frozen=True, eq=False)
class Call(Expr):
    """A call of a builtin (``min``, ``__cvta_generic_to_shared``, conversions)."""

    name: str
    args: Tuple[Expr, ...]
    ctype: str = "int"


@dataclass(frozen=True, eq=False)
class Inc(Expr):
    """``++v`` (the value after the increment)."""

    v: Var


@dataclass(frozen=True, eq=False)
class LayoutApp(Expr):
    """``L(coord)``: the layout's value at one coordinate per top-level mode, evaluated by
    the algebra (claims only; never printed)."""

    layout: Any
    coords: Tuple[Expr, ...]
    what: str = ""


@dataclass(frozen=True, eq=False)
class AlignUp(Expr):
    """``(a + (n - 1)) & ~(n - 1)`` on an unsigned address: evaluated as ``a + pad`` with a
    fresh non-negative symbol ``pad`` (the allocation reserves ``n`` extra bytes)."""

    a: Expr
    n: int


@dataclass(frozen=True, eq=False)
class MbarRef(Expr):
    """The shared address of mbarrier ``idx`` of the array whose address is ``base``."""

    base: Var
    idx: Expr


@dataclass(frozen=True)
class Claim:
    """What an access must be: its byte address (:class:`LayoutApp` nodes for the layout
    parts), the shared-memory region it must stay in (``region = (base, bytes)``), and the
    global coordinates that must be in range (``bounds = ((coord, extent), ...)``)."""

    what: str
    addr: Expr
    region: Optional[Tuple[Expr, int]] = None
    bounds: Tuple[Tuple[Expr, Expr], ...] = ()
    width: int = 1


@dataclass(frozen=True, eq=False)
class Mem(Expr):
    """A shared or global memory access: ``*reinterpret_cast<vec*>(ptr)`` or
    ``ptr[idx]``; the claim says which address it must be."""

    ptr: Expr
    claim: Claim
    vec: Optional[str] = None
    idx: Optional[Expr] = None
    space: str = "global"
    #: a load from the shared memory of CTA rank ``cta`` of the cluster (distributed shared
    #: memory: ``mapa`` + ``ld.shared::cluster``, 16 bytes, ``vec`` ``"float4"``): ``ptr`` is
    #: this CTA's generic address of the element, mapped into the peer's window
    cta: Optional[Expr] = None


#: the memory orders of :class:`AtomicAdd` (PTX ``atom{.sem}.gpu``)
ATOMIC_SEMS = ("relaxed", "acquire", "release", "acq_rel")


@dataclass(frozen=True, eq=False)
class AtomicAdd(Expr):
    """``atom.add{.sem}.gpu.global.u32`` on the element ``mem`` (a :class:`Mem` node, whose
    claim its address must match like any access): adds ``val`` and is the value the
    element held before.  ``sem`` is one of :data:`ATOMIC_SEMS`; the scope is the GPU."""

    mem: Mem
    val: Expr
    sem: str = "acq_rel"
    ctype: str = "unsigned"


@dataclass(frozen=True, eq=False)
class ProvenFn:
    """A lowered layout as a device function: the body is an IR expression, the layout
    the one it was proven equal to."""

    name: str
    params: Tuple[Tuple[str, str], ...]  # (ctype, name)
    body: Expr
    layout: Any
    ret: str = "int"


@dataclass(frozen=True, eq=False)
class FnCall(Expr):
    """A call of a proven function, arguments by parameter name."""

    fn: ProvenFn
    args: Tuple[Tuple[str, Expr], ...]

    def __post_init__(self) -> None:
        names = [n for n, _ in self.args]
        want = [n for _, n in self.fn.params]
        if sorted(names) != sorted(want) or len(set(names)) != len(names):
            raise ProofFailedError(
                f"call of {self.fn.name}: arguments {names} do not name its parameters {want} once each",
                condition="call arguments by name",
                witness=tuple(names),
            )


def call(fn: ProvenFn, **args: Any) -> FnCall:
    return FnCall(fn, tuple((k, lift(v)) for k, v in args.items()))


#: the builtins (one object each: the analysis knows the thread index by identity)
THREAD_IDX = Var("threadIdx.x", builtin=True)
BLOCK_IDX = Var("blockIdx.x", builtin=True)
GRID_DIM = Var("gridDim.x", builtin=True)


# ============================================================================ statements
class Stmt:
    pass


@dataclass(frozen=True, eq=False)
class Decl(Stmt):
    var: Var
    init: Optional[Expr] = None
    const: bool = False
    dims: Tuple[int, ...] = ()
    prefix: str = ""  # storage qualifiers, e.g. "__shared__ __align__(8)"
    comment: str = ""
    tname: str = ""  # the printed type when it differs from the variable's


@dataclass(frozen=True, eq=False)
class Assign(Stmt):
    lhs: Expr
    rhs: Expr
    op: str = "="


@dataclass(frozen=True, eq=False)
class Eval(Stmt):
    e: Expr


@dataclass(frozen=True, eq=False)
class For(Stmt):
    """``for (int v = start; v < stop; v += step)``; constant start/stop make ``v`` an
    enumerated index.  ``cond`` replaces ``v < stop`` when given (runtime loops).
    ``unroll``: True prints ``#pragma unroll``, an int n > 1 ``#pragma unroll n``."""

    var: Var
    start: Expr
    stop: Expr
    body: "Block"
    step: Expr = Const(1)
    unroll: "bool | int" = False
    cond: Optional[Expr] = None


@dataclass(frozen=True, eq=False)
class If(Stmt):
    cond: Expr
    then: "Block"
    orelse: Optional["Block"] = None
    comment: str = ""


@dataclass(frozen=True, eq=False)
class Block(Stmt):
    body: Tuple[Stmt, ...]
    bare: bool = False  # printed as its own { } scope


def block(*stmts: Any) -> Block:
    out: List[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, (list, tuple)):
            out.extend(x for x in s if x is not None)
        else:
            out.append(s)
    return Block(tuple(out))


@dataclass(frozen=True, eq=False)
class Comment(Stmt):
    text: str


@dataclass(frozen=True, eq=False)
class Pragma(Stmt):
    text: str


@dataclass(frozen=True, eq=False)
class TableDecl(Stmt):
    """``int v[n]; for (int j = 0; j < n; ++j) v[j] = value(j);`` -- a per-thread table;
    ``Index(v, (e,))`` reads ``value(e)`` (``0 <= e < n`` is an obligation)."""

    var: Var
    n: int
    j: Var
    value: Expr


@dataclass(frozen=True, eq=False)
class RingAdvance(Stmt):
    """A ring counter: ``stage`` in [0, n) advances by one and wraps to 0; ``phase`` (if
    any) flips on the wrap.  ``style`` ``"inc"`` prints ``if (++s == n) { s = 0; p ^= 1u; }``,
    ``"ternary"`` prints ``s = (s + 1 == n) ? 0 : s + 1;``."""

    stage: Var
    n: int
    phase: Optional[Var] = None
    style: str = "inc"


# -- intrinsics
@dataclass(frozen=True, eq=False)
class CpAsync(Stmt):
    """16-byte ``cp.async.cg`` (``nbytes`` < 16 zero-fills the rest).  ``src_empty`` is the
    source passed when ``nbytes`` is 0 (then nothing is read)."""

    dst: Expr
    src: Expr
    nbytes: Expr
    dst_claim: Claim
    src_claim: Claim
    src_empty: Optional[Expr] = None
    edge: Optional[Tuple[Expr, Expr]] = None  # (contiguous coordinate, its extent) of a partial chunk


@dataclass(frozen=True, eq=False)
class CpCommit(Stmt):
    pass


@dataclass(frozen=True, eq=False)
class CpWait(Stmt):
    n: int


@dataclass(frozen=True, eq=False)
class LdMatrix(Stmt):
    dst: Expr
    addr: Expr
    trans: bool
    claim: Claim


@dataclass(frozen=True, eq=False)
class Mma(Stmt):
    d: Expr
    a: Expr
    b: Expr


@dataclass(frozen=True, eq=False)
class WgmmaFence(Stmt):
    pass


@dataclass(frozen=True, eq=False)
class Wgmma(Stmt):
    """``wgmma.mma_async`` with descriptors built from shared addresses ``a_addr``,
    ``b_addr`` (the descriptor fields are proven against the layouts)."""

    acc: Expr
    a_addr: Expr
    b_addr: Expr
    a_claim: Claim
    b_claim: Claim


@dataclass(frozen=True, eq=False)
class WgmmaCommit(Stmt):
    pass


@dataclass(frozen=True, eq=False)
class WgmmaWait(Stmt):
    n: int


@dataclass(frozen=True, eq=False)
class TmaLoad(Stmt):
    dst: Expr
    tmap: Var
    c0: Expr
    c1: Expr
    bar: Expr
    claim: Claim
    coord_claim: Tuple[Expr, Expr]
    mask: Optional[int] = None
    c2: Optional[Expr] = None  # the third coordinate of a rank-3 tensor map (a batch index)


@dataclass(frozen=True, eq=False)
class MbarInit(Stmt):
    bar: Expr
    count: int


@dataclass(frozen=True, eq=False)
class MbarArrive(Stmt):
    bar: Expr
    cta: Optional[Expr] = None  # remote CTA rank (mapa) or this CTA


@dataclass(frozen=True, eq=False)
class MbarExpectTx(Stmt):
    bar: Expr
    nbytes: int


@dataclass(frozen=True, eq=False)
class MbarWait(Stmt):
    bar: Expr
    parity: Expr
    comment: str = ""


@dataclass(frozen=True, eq=False)
class Fence(Stmt):
    kind: str  # "mbarrier_init" or "proxy_async"


@dataclass(frozen=True, eq=False)
class SetMaxNReg(Stmt):
    inc: bool
    n: int


@dataclass(frozen=True, eq=False)
class Red(Stmt):
    """``red.global.add.f32`` (``lanes = 1``) or ``red.global.add.v4.f32`` (``lanes = 4``,
    sm_90; ``val`` a ``uint4`` holding four f32 bit patterns) on the global element(s)
    ``mem`` (a :class:`Mem` node, whose claim its address must match like any access): adds
    ``val`` to the memory without returning anything (relaxed, GPU scope).  The f32 sum of
    several units' reductions into one cell does not depend on which unit adds first only up
    to rounding: the order is not fixed."""

    mem: Mem
    val: Expr
    lanes: int = 1


@dataclass(frozen=True, eq=False)
class SyncThreads(Stmt):
    comment: str = ""


@dataclass(frozen=True, eq=False)
class NamedBarrier(Stmt):
    id: Expr
    n: int


@dataclass(frozen=True, eq=False)
class ClusterSync(Stmt):
    comment: str = ""


@dataclass(frozen=True, eq=False)
class ClusterRank(Stmt):
    var: Var


@dataclass
class Kernel:
    """A whole kernel: description lines, typedefs, proven functions, device functions of
    plain statements (the scheduler), the entry and its body."""

    name: str
    params: Tuple[Tuple[str, Var], ...]  # (declaration prefix, var)
    body: Block
    threads: int
    min_blocks: int = 1
    cluster: int = 1
    typedefs: Tuple[Tuple[str, str], ...] = ()
    sizes: Dict[str, int] = field(default_factory=dict)
    functions: Tuple[ProvenFn, ...] = ()
    devfns: Tuple[Any, ...] = ()  # (name, params text, Block)
    description: Tuple[str, ...] = ()
    helpers: Tuple[str, ...] = ()  # helper groups, in print order
    desc_fields: Dict[str, int] = field(default_factory=dict)
    wgmma: Optional[Tuple[int, str, int, int]] = None  # (n, dtype, tnsp_a, tnsp_b)
    mma_dtype: str = "f16"
    smem_align: int = 128


# ============================================================================ traversal
_FIELDS: Dict[type, Tuple[str, ...]] = {}
_NODE = (Expr, Stmt, Claim)


def _children(node: Any) -> Iterator[Any]:
    if isinstance(node, ProvenFn) or isinstance(node, (Var, Const, FloatLit)):
        return
    names = _FIELDS.get(type(node))
    if names is None:
        names = _FIELDS[type(node)] = tuple(f.name for f in fields(node))
    for name in names:
        v = getattr(node, name)
        if isinstance(v, _NODE):
            yield v
        elif isinstance(v, tuple):
            for x in v:
                if isinstance(x, (Expr, Stmt, Claim)):
                    yield x
                elif isinstance(x, tuple):
                    for y in x:
                        if isinstance(y, (Expr, Stmt, Claim)):
                            yield y


def walk(node: Any) -> Iterator[Any]:
    """Every node under ``node`` (pre-order), claims included."""
    yield node
    for c in _children(node):
        yield from walk(c)


def rewrite(node: Any, fn: Callable[[Any], Any]) -> Any:
    """A copy of the tree with ``fn`` applied bottom-up (``fn`` returns a replacement or
    None to keep the node).  Vars are kept by identity."""
    if isinstance(node, (Var, ProvenFn, type)) or not is_dataclass(node):
        r = fn(node) if isinstance(node, (Expr, Stmt)) else None
        return node if r is None else r
    changes = {}
    for f in fields(node):
        v = getattr(node, f.name)
        nv = _rw_value(v, fn)
        if nv is not v:
            changes[f.name] = nv
    new = _with_fields(node, changes) if changes else node
    r = fn(new)
    return new if r is None else r


def _with_fields(node: Any, changes: Dict[str, Any]) -> Any:
    """A copy of the dataclass node with ``changes``."""
    return replace(node, **changes)


def _rw_value(v: Any, fn: Callable[[Any], Any]) -> Any:
    if isinstance(v, (Expr, Stmt, Claim)):
        return rewrite(v, fn)
    if isinstance(v, tuple):
        out = tuple(_rw_value(x, fn) for x in v)
        return v if all(a is b for a, b in zip(out, v)) else out
    return v


# ============================================================================ printer
_PREC = {
    "||": 4,
    "&&": 5,
    "|": 6,
    "^": 7,
    "&": 8,
    "==": 9,
    "!=": 9,
    "<": 10,
    "<=": 10,
    ">": 10,
    ">=": 10,
    "<<": 11,
    ">>": 11,
    "+": 12,
    "-": 12,
    "*": 13,
    "/": 13,
    "%": 13,
}
_UNARY = 15
_BITWISE = ("&", "|", "^", "<<", ">>")
_POSTFIX = 16


def _prec(e: Expr) -> int:
    if isinstance(e, Bin):
        return _PREC[e.op]
    if isinstance(e, Cond):
        return 3
    if isinstance(e, (Un, Cast, Inc, AddrOf)):
        return _UNARY
    if isinstance(e, Const) and e.value < 0:
        return _UNARY
    if isinstance(e, MbarRef):
        return 12
    if isinstance(e, AlignUp):
        return 8
    if isinstance(e, Mem) and e.idx is None and e.cta is None:
        return _UNARY
    return _POSTFIX + 1


def _paren(e: Expr, need: int, strict: bool = False) -> str:
    s = emit_expr(e)
    p = _prec(e)
    return f"({s})" if p < need or (strict and p == need) else s


def emit_expr(e: Expr) -> str:
    """C text of an expression (minimal parentheses by C precedence)."""
    if isinstance(e, Const):
        v = e.value
        if e.ctype == "bool":
            return "true" if v else "false"
        if e.ctype == "unsigned":
            return f"{v:#x}u" if e.hex else f"{v}u"
        if e.ctype == "long long":
            return f"{v}LL"
        if e.ctype == "unsigned long long":
            return f"{v:#x}ull" if e.hex else f"{v}ull"
        if e.ctype == "unsigned short":
            return f"(unsigned short){v}"
        return str(v)
    if isinstance(e, FloatLit):
        return e.text
    if isinstance(e, Var):
        return e.name
    if isinstance(e, Bin):
        p = _PREC[e.op]
        if e.op in _BITWISE:  # parenthesize mixed operators under bitwise ones (readability)

            def side(x: Expr, strict: bool) -> str:
                if isinstance(x, Bin) and x.op != e.op:
                    return f"({emit_expr(x)})"
                return _paren(x, p, strict)

            return f"{side(e.a, False)} {e.op} {side(e.b, True)}"
        return f"{_paren(e.a, p)} {e.op} {_paren(e.b, p, strict=True)}"
    if isinstance(e, Un):
        return f"{e.op}{_paren(e.a, _UNARY)}"
    if isinstance(e, Cast):
        return f"({e.ctype}){_paren(e.a, _UNARY)}"
    if isinstance(e, Reinterpret):
        return f"reinterpret_cast<{e.ctype}>({emit_expr(e.a)})"
    if isinstance(e, Cond):

        def part(x: Expr) -> str:
            return f"({emit_expr(x)})" if isinstance(x, (Bin, Cond)) else emit_expr(x)

        return f"{part(e.c)} ? {part(e.a)} : {part(e.b)}"
    if isinstance(e, Index):
        return _paren(e.base, _POSTFIX) + "".join(f"[{emit_expr(i)}]" for i in e.idx)
    if isinstance(e, AddrOf):
        return f"&{_paren(e.a, _UNARY)}"
    if isinstance(e, AtomicAdd):
        if e.sem not in ATOMIC_SEMS:
            raise LoweringError(f"kernel IR: atomic order {e.sem!r}", condition="printable IR")
        return f"lp_atom_add_{e.sem}(&{emit_expr(e.mem)}, {emit_expr(e.val)})"
    if isinstance(e, Call):
        return f"{e.name}({', '.join(emit_expr(a) for a in e.args)})"
    if isinstance(e, FnCall):
        by = dict(e.args)
        return f"{e.fn.name}({', '.join(emit_expr(by[n]) for _, n in e.fn.params)})"
    if isinstance(e, Inc):
        return f"++{e.v.name}"
    if isinstance(e, AlignUp):
        return f"({_paren(e.a, 12)} + {e.n - 1}u) & ~{e.n - 1}u"
    if isinstance(e, MbarRef):
        return f"{e.base.name} + 8u * {_paren(e.idx, 13, strict=True)}"
    if isinstance(e, Mem):
        if e.cta is not None:
            if e.vec != "float4" or e.idx is not None or e.space != "cluster":
                raise LoweringError(
                    "kernel IR: a distributed shared memory load is a float4 at a shared pointer",
                    condition="printable IR",
                )
            return f"lp_dsmem_ld_f4({emit_expr(e.ptr)}, {emit_expr(e.cta)})"
        if e.idx is not None:
            return f"{_paren(e.ptr, _POSTFIX)}[{emit_expr(e.idx)}]"
        if e.vec is not None:
            return f"*reinterpret_cast<{e.vec}*>({emit_expr(e.ptr)})"
        return f"*{_paren(e.ptr, _UNARY)}"
    if isinstance(e, LayoutApp):
        raise LoweringError(
            "kernel IR: a layout application (a claim) cannot be printed; call its proven function",
            condition="printable IR",
        )
    raise LoweringError(f"kernel IR: cannot print {type(e).__name__}", condition="printable IR")


def _decl_text(d: Decl) -> str:
    v = d.var
    t = d.tname or v.ctype
    star = ""
    if _is_ptr(t):
        base, star = t.rstrip()[:-1].rstrip(), "*"
        t = base
    q = "const " if d.const and not star else ""
    pc = " const" if d.const and star else ""
    dims = "".join(f"[{n}]" if n else "[]" for n in d.dims)
    pre = f"{d.prefix} " if d.prefix else ""
    init = f" = {emit_expr(d.init)}" if d.init is not None else ""
    tail = f"   // {d.comment}" if d.comment else ""
    return f"{pre}{q}{t}{star}{pc} {v.name}{dims}{init};{tail}"


_FENCES = {
    "mbarrier_init": 'asm volatile("fence.mbarrier_init.release.cluster;\\n" ::: "memory");',
    "proxy_async": 'asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");',
    # a release and acquire fence at GPU scope (what __threadfence() compiles to on sm_70+)
    "acq_rel_gpu": 'asm volatile("fence.acq_rel.gpu;\\n" ::: "memory");',
}


def _stmt_lines(s: Stmt, ind: int) -> List[str]:
    sp = "  " * ind
    if isinstance(s, Block):
        if s.bare:
            return [sp + "{"] + _block_lines(s, ind + 1) + [sp + "}"]
        return _block_lines(s, ind)
    if isinstance(s, Decl):
        return [sp + _decl_text(s)]
    if isinstance(s, Assign):
        return [f"{sp}{emit_expr(s.lhs)} {s.op} {emit_expr(s.rhs)};"]
    if isinstance(s, Eval):
        return [f"{sp}{emit_expr(s.e)};"]
    if isinstance(s, Comment):
        return [f"{sp}// {line}" for line in s.text.split("\n")]
    if isinstance(s, Pragma):
        return [f"#pragma {s.text}"]
    if isinstance(s, For):
        cond = emit_expr(s.cond) if s.cond is not None else f"{s.var.name} < {emit_expr(s.stop)}"
        step = (
            f"++{s.var.name}"
            if isinstance(s.step, Const) and s.step.value == 1
            else f"{s.var.name} += {emit_expr(s.step)}"
        )
        head = f"for ({s.var.ctype} {s.var.name} = {emit_expr(s.start)}; {cond}; {step})"
        if isinstance(s.unroll, bool) or s.unroll <= 1:
            pre = ["#pragma unroll"] if s.unroll else []
        else:
            pre = [f"#pragma unroll {int(s.unroll)}"]
        return pre + _braced(sp + head, s.body, ind)
    if isinstance(s, If):
        tail = f"  // {s.comment}" if s.comment else ""
        head = f"{sp}if ({emit_expr(s.cond)})"
        if s.orelse is None:
            lines = _braced(head, s.then, ind)
            if tail:
                lines[0] += tail
            return lines
        lines = [head + " {" + tail] + _block_lines(s.then, ind + 1)
        if len(s.orelse.body) == 1 and isinstance(s.orelse.body[0], If):
            inner = _stmt_lines(s.orelse.body[0], ind)
            return lines + [sp + "} else " + inner[0].lstrip()] + inner[1:]
        return lines + [sp + "} else {"] + _block_lines(s.orelse, ind + 1) + [sp + "}"]
    if isinstance(s, TableDecl):
        return [
            f"{sp}int {s.var.name}[{s.n}];",
            "#pragma unroll",
            f"{sp}for (int {s.j.name} = 0; {s.j.name} < {s.n}; ++{s.j.name}) "
            f"{s.var.name}[{s.j.name}] = {emit_expr(s.value)};",
        ]
    if isinstance(s, RingAdvance):
        st, n = s.stage.name, s.n
        if s.style == "ternary":
            return [f"{sp}{st} = ({st} + 1 == {n}) ? 0 : {st} + 1;"]
        ph = f" {s.phase.name} ^= 1u;" if s.phase is not None else ""
        return [f"{sp}if (++{st} == {n}) {{ {st} = 0;{ph} }}"]
    return [sp + line for line in _intrinsic(s)]


def _braced(head: str, body: Block, ind: int) -> List[str]:
    inner = _block_lines(body, ind + 1)
    simple = (
        len(body.body) == 1
        and not isinstance(body.body[0], (Decl, TableDecl, Block))
        and not isinstance(body.body[0], If)
        and not isinstance(body.body[0], Comment)
    )
    if simple:
        return [head] + inner
    return [head + " {"] + inner + ["  " * ind + "}"]


def _block_lines(b: Block, ind: int) -> List[str]:
    out: List[str] = []
    for s in b.body:
        out.extend(_stmt_lines(s, ind))
    return out


def _intrinsic(s: Stmt) -> List[str]:
    if isinstance(s, CpAsync):
        src = emit_expr(s.src)
        if s.src_empty is not None:
            src = f"{emit_expr(s.nbytes)} ? {src} : {emit_expr(s.src_empty)}"
        return [f"lp_cp_async16({emit_expr(s.dst)}, {src}, {emit_expr(s.nbytes)});"]
    if isinstance(s, CpCommit):
        return ["lp_cp_commit();"]
    if isinstance(s, CpWait):
        return [f"lp_cp_wait<{s.n}>();"]
    if isinstance(s, LdMatrix):
        return [f"lp_ldsm_x4{'_t' if s.trans else ''}({emit_expr(s.dst)}, {emit_expr(s.addr)});"]
    if isinstance(s, Mma):
        return [f"lp_mma({emit_expr(s.d)}, {emit_expr(s.a)}, {emit_expr(s.b)});"]
    if isinstance(s, WgmmaFence):
        return ['asm volatile("wgmma.fence.sync.aligned;\\n" ::: "memory");']
    if isinstance(s, Wgmma):
        return [
            f"lp_wgmma({emit_expr(s.acc)}, lp_desc_a({emit_expr(s.a_addr)}),",
            f"         lp_desc_b({emit_expr(s.b_addr)}));",
        ]
    if isinstance(s, WgmmaCommit):
        return ['asm volatile("wgmma.commit_group.sync.aligned;\\n" ::: "memory");']
    if isinstance(s, WgmmaWait):
        return [f'asm volatile("wgmma.wait_group.sync.aligned {s.n};\\n" ::: "memory");']
    if isinstance(s, TmaLoad):
        c2 = "" if s.c2 is None else f", {emit_expr(s.c2)}"
        coords = f"{emit_expr(s.c0)}, {emit_expr(s.c1)}{c2}"
        args = f"{emit_expr(s.dst)}, &{s.tmap.name}, {coords}, {emit_expr(s.bar)}"
        d3 = "" if s.c2 is None else "_3d"
        if s.mask is None:
            return [f"lp_tma_load{d3}({args});"]
        return [f"lp_tma_load{d3}_mc({args}, (unsigned short){s.mask});"]
    if isinstance(s, MbarInit):
        return [
            f'asm volatile("mbarrier.init.shared::cta.b64 [%0], {s.count};\\n" :: "r"({emit_expr(s.bar)}));'
        ]
    if isinstance(s, MbarArrive):
        if s.cta is not None:
            return [f"lp_arrive_cta({emit_expr(s.bar)}, {emit_expr(s.cta)});"]
        return [
            'asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\\n"',
            f'             :: "r"({emit_expr(s.bar)}) : "memory");',
        ]
    if isinstance(s, MbarExpectTx):
        return [
            'asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\\n"',
            f'             :: "r"({emit_expr(s.bar)}), "r"({s.nbytes}) : "memory");',
        ]
    if isinstance(s, MbarWait):
        tail = f"   // {s.comment}" if s.comment else ""
        return [f"lp_bar_wait({emit_expr(s.bar)}, {emit_expr(s.parity)});{tail}"]
    if isinstance(s, Fence):
        return [_FENCES[s.kind]]
    if isinstance(s, SetMaxNReg):
        return [f'asm volatile("setmaxnreg.{"inc" if s.inc else "dec"}.sync.aligned.u32 {s.n};\\n");']
    if isinstance(s, Red):
        if s.lanes not in (1, 4) or s.mem.space != "global":
            raise LoweringError(
                f"kernel IR: red.add on {s.mem.space} memory with {s.lanes} lanes", condition="printable IR"
            )
        fn = "lp_red_add_f32x4" if s.lanes == 4 else "lp_red_add_f32"
        return [f"{fn}(&{emit_expr(s.mem)}, {emit_expr(s.val)});"]
    if isinstance(s, SyncThreads):
        return ["__syncthreads();" + (f"   // {s.comment}" if s.comment else "")]
    if isinstance(s, NamedBarrier):
        return [f"lp_named_sync({emit_expr(s.id)}, {s.n});"]
    if isinstance(s, ClusterSync):
        return ["lp_cluster_sync();" + (f"   // {s.comment}" if s.comment else "")]
    if isinstance(s, ClusterRank):
        return [
            f"unsigned {s.var.name};",
            f'asm volatile("mov.u32 %0, %%cluster_ctarank;\\n" : "=r"({s.var.name}));',
        ]
    raise LoweringError(f"kernel IR: cannot print {type(s).__name__}", condition="printable IR")


# -- the helper definitions the intrinsics print as calls of
_HELPERS: Dict[str, str] = {
    "cp_async": r"""__device__ __forceinline__ void lp_cp_async16(unsigned saddr, const void* g,
                                              int nbytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n"
               :: "r"(saddr), "l"(g), "r"(nbytes));
}
__device__ __forceinline__ void lp_cp_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void lp_cp_wait() {
  asm volatile("cp.async.wait_group %0;\n" :: "n"(N));
}
""",
    "ldsm": r"""__device__ __forceinline__ void lp_ldsm_x4(unsigned* r, unsigned saddr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(saddr));
}
__device__ __forceinline__ void lp_ldsm_x4_t(unsigned* r, unsigned saddr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(saddr));
}
""",
    "tma": r"""struct __align__(64) lp_tmap_t { unsigned long long v[16]; };
__device__ __forceinline__ void lp_tma_load(unsigned dst, const lp_tmap_t* tm, int c0, int c1,
                                            unsigned bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3}], [%4];\n"
               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(tm)), "r"(c0), "r"(c1),
                  "r"(bar) : "memory");
}
__device__ __forceinline__ void lp_bar_wait(unsigned bar, unsigned parity) {
  asm volatile("{\n.reg .pred p;\nLAB_WAIT:\n"
               "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
               "@p bra.uni DONE;\nbra.uni LAB_WAIT;\nDONE:\n}\n"
               :: "r"(bar), "r"(parity) : "memory");
}
""",
    "cluster": r"""__device__ __forceinline__ void lp_tma_load_mc(unsigned dst, const lp_tmap_t* tm,
                                               int c0, int c1, unsigned bar,
                                               unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;\n"
               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(tm)), "r"(c0), "r"(c1),
                  "r"(bar), "h"(mask) : "memory");
}
__device__ __forceinline__ void lp_arrive_cta(unsigned bar, unsigned cta) {
  asm volatile("{\n.reg .b32 ra;\nmapa.shared::cluster.u32 ra, %0, %1;\n"
               "mbarrier.arrive.shared::cluster.b64 _, [ra];\n}\n"
               :: "r"(bar), "r"(cta) : "memory");
}
__device__ __forceinline__ void lp_cluster_sync() {
  asm volatile("barrier.cluster.arrive.release;\nbarrier.cluster.wait.acquire;\n" ::: "memory");
}
""",
    "act": r"""__device__ __forceinline__ float lp_act_none(float x) { return x; }
__device__ __forceinline__ float lp_act_relu(float x) { return fmaxf(x, 0.f); }
__device__ __forceinline__ float lp_act_silu(float x) { return x / (1.f + __expf(-x)); }
__device__ __forceinline__ float lp_act_gelu(float x) { return 0.5f * x * (1.f + erff(x * 0.70710678f)); }
""",
    "griddep": r"""__device__ __forceinline__ void lp_griddep_wait() {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
}
__device__ __forceinline__ void lp_griddep_launch() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}
""",
    "atomic": "".join(
        f"""__device__ __forceinline__ unsigned lp_atom_add_{sem}(unsigned* p, unsigned v) {{
  unsigned old;
  asm volatile("atom.add{"" if sem == "relaxed" else "." + sem}.gpu.global.u32 %0, [%1], %2;\\n"
               : "=r"(old) : "l"(p), "r"(v) : "memory");
  return old;
}}
"""
        for sem in ATOMIC_SEMS
    ),
    "red": r"""__device__ __forceinline__ void lp_red_add_f32(float* p, float v) {
  asm volatile("red.global.add.f32 [%0], %1;\n" :: "l"(__cvta_generic_to_global(p)), "f"(v) : "memory");
}
__device__ __forceinline__ void lp_red_add_f32x4(void* p, uint4 v) {
  asm volatile("red.global.add.v4.f32 [%0], {%1, %2, %3, %4};\n"
               :: "l"(__cvta_generic_to_global(p)), "f"(__uint_as_float(v.x)), "f"(__uint_as_float(v.y)),
                  "f"(__uint_as_float(v.z)), "f"(__uint_as_float(v.w)) : "memory");
}
""",
    "dsmem": r"""__device__ __forceinline__ float4 lp_dsmem_ld_f4(const float* p, int cta) {
  float4 v;
  unsigned ra;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n"
               : "=r"(ra) : "r"((unsigned)__cvta_generic_to_shared(p)), "r"(cta));
  asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];\n"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(ra) : "memory");
  return v;
}
""",
    "named_sync": r"""__device__ __forceinline__ void lp_named_sync(int id, int n) {
  asm volatile("bar.sync %0, %1;\n" :: "r"(id), "r"(n) : "memory");
}
""",
}

#: the rank-3 tensor-map loads (printed after "tma" / "cluster" in a kernel that has a
#: TmaLoad with a third coordinate; other kernels' sources are unchanged)
_HELPERS_3D: Dict[str, str] = {
    "tma": r"""__device__ __forceinline__ void lp_tma_load_3d(unsigned dst, const lp_tmap_t* tm, int c0,
                                               int c1, int c2, unsigned bar) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
               " [%0], [%1, {%2, %3, %4}], [%5];\n"
               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(tm)), "r"(c0), "r"(c1), "r"(c2),
                  "r"(bar) : "memory");
}
""",
    "cluster": r"""__device__ __forceinline__ void lp_tma_load_3d_mc(unsigned dst, const lp_tmap_t* tm,
                                                  int c0, int c1, int c2, unsigned bar,
                                                  unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes"
               ".multicast::cluster [%0], [%1, {%2, %3, %4}], [%5], %6;\n"
               :: "r"(dst), "l"(reinterpret_cast<unsigned long long>(tm)), "r"(c0), "r"(c1), "r"(c2),
                  "r"(bar), "h"(mask) : "memory");
}
""",
}

_MMA_PTX = {
    "f16": "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32",
    "bf16": "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
}


def _helper_text(k: Kernel, name: str) -> str:
    if name in _HELPERS:
        extra = ""
        if name in _HELPERS_3D and any(isinstance(n, TmaLoad) and n.c2 is not None for n in walk(k.body)):
            extra = _HELPERS_3D[name]
        return _HELPERS[name] + extra
    if name == "mma":
        return f"""__device__ __forceinline__ void lp_mma(float* d, const unsigned* a, const unsigned* b) {{
  asm("{_MMA_PTX[k.mma_dtype]} {{%0,%1,%2,%3}}, {{%4,%5,%6,%7}}, {{%8,%9}}, {{%0,%1,%2,%3}};\\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}}
"""
    if name == "wgmma":
        if k.wgmma is None:
            raise LoweringError("kernel IR: wgmma helper without its shape", condition="printable IR")
        n, dtype, ta, tb = k.wgmma
        regs = n // 2
        ptx = f"wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{dtype}.{dtype}"
        dlist = ", ".join(f"%{i}" for i in range(regs))
        outs = ", ".join(f'"+f"(d[{i}])' for i in range(regs))
        desc = "".join(
            f"""__device__ __forceinline__ unsigned long long lp_desc_{op}(unsigned saddr) {{
  return (unsigned long long)((saddr & 0x3FFFFu) >> 4) | {k.desc_fields[op]:#x}ull;
}}
"""
            for op in ("a", "b")
        )
        head = (
            "__device__ __forceinline__ void lp_wgmma(float* d, unsigned long long da,\n"
            + " " * 41
            + "unsigned long long db) {\n"
        )
        asm = f"""  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 2}, 0;\\n"
               "{ptx} {{{dlist}}}, %{regs}, %{regs + 1}, p, 1, 1, {ta}, {tb};\\n}}\\n"
               : {outs}
               : "l"(da), "l"(db), "r"(1));
}}
"""
        return (
            "// descriptors: start address >> 4 | the proven constant fields (LBO, SBO, "
            "128B swizzle)\n" + desc + head + asm
        )
    raise LoweringError(f"kernel IR: unknown helper group {name!r}", condition="printable IR")


def _fn_text(f: ProvenFn) -> str:
    params = ", ".join(f"{t} {n}" for t, n in f.params)
    return f"__device__ __forceinline__ {f.ret} {f.name}({params}) {{ return {emit_expr(f.body)}; }}\n"


def emit(k: Kernel, header: str = "") -> str:
    """The CUDA C source of kernel ``k`` (``header``: the obligation comment block)."""
    out = [header]
    out += [f"// {d}" if d else "//" for d in k.description]
    out += ["#include <cuda_fp16.h>", "#include <cuda_bf16.h>", ""]
    out += [f"typedef {t} {n};" for n, t in k.typedefs]
    out.append("")
    text = "\n".join(out) + "\n"
    text += "".join(_fn_text(f) for f in k.functions)
    for name, params, body in k.devfns:
        text += (
            f"__device__ __forceinline__ void {name}({params}) {{\n"
            + "\n".join(_block_lines(body, 1))
            + "\n}\n"
        )
    text += "".join(_helper_text(k, h) for h in k.helpers)
    cl = f" __cluster_dims__({k.cluster}, 1, 1)" if k.cluster > 1 else ""
    params = ",\n       ".join(
        f"{p}{' ' if not p.endswith('*') else ''}{v.name}".replace("* ", "* ") for p, v in k.params
    )
    text += (
        f'\nextern "C" __global__ void __launch_bounds__({k.threads}, {k.min_blocks}){cl}\n'
        f"{k.name}({params}) {{\n"
    )
    text += "\n".join(_block_lines(k.body, 1)) + "\n}\n"
    return text


# ============================================================================ from lowered
def from_lowered(low: Any, ret: str = "int", sym_type: str = "long long") -> ProvenFn:
    """A :class:`ProvenFn` from a :func:`layoutproof.gpu.proof.lower.lower` result: the body is
    the lowered expression's syntax tree (the one :func:`~layoutproof.gpu.proof.lower.check_c_expr`
    proved) as IR nodes."""
    from . import lower

    tree = lower.c_tree(low.c_expr)
    syms = sorted(str(s) for s in low.symbols)
    types = {a: "int" for a in low.args}
    types.update({s: sym_type for s in syms})
    params = tuple(("int", a) for a in low.args) + tuple((sym_type, s) for s in syms)
    pvars = {n: Var(n, types[n]) for _, n in params}

    def conv(t: tuple) -> Expr:
        if t[0] == "num":
            return Const(t[1])
        if t[0] == "var":
            if t[1] not in pvars:
                raise LoweringError(f"{low.name}: free name {t[1]!r}", condition="IR expression")
            return pvars[t[1]]
        if t[0] == "neg":
            return Un("-", conv(t[1]))
        if t[0] == "not":
            return Un("~", conv(t[1]))
        return Bin(t[1], conv(t[2]), conv(t[3]))

    return ProvenFn(low.name, params, conv(tree), low.layout, ret)


# ============================================================================ evaluation
class _Fail(Exception):
    def __init__(self, condition: str, message: str, witness: Any = None) -> None:
        super().__init__(message)
        self.condition = condition
        self.message = message
        self.witness = witness


def _wrap(v: np.ndarray, t: str) -> np.ndarray:
    bits, signed = INT_TYPES.get(t, (64, True))
    if bits >= 64:
        return v
    m = np.int64(1) << bits
    lo, hi = (-(m >> 1), (m >> 1) - 1) if signed else (0, m - 1)
    if np.ndim(v) == 0:
        if lo <= int(v) <= hi:
            return v
    elif v.size == 0 or (v.min() >= lo and v.max() <= hi):
        return v
    v = np.mod(v, m)
    if signed:
        v = np.where(v >= (m >> 1), v - m, v)
    return v


def _conv(ta: str, tb: str) -> str:
    """The usual arithmetic conversions of two integer types (bool and short promote)."""

    def promote(t: str) -> str:
        return "int" if t in ("bool", "unsigned short") else t

    ta, tb = promote(ta), promote(tb)
    if ta == tb:
        return ta
    ba, sa = INT_TYPES.get(ta, (64, True))
    bb, sb = INT_TYPES.get(tb, (64, True))
    if ba == bb:
        return ta if not sa else tb
    return ta if ba > bb else tb


def _tdiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    if np.any(b == 0):
        raise _Fail("division by zero", "an index expression divides by zero")
    if np.all(b > 0) and np.all(a >= 0):
        return a // b
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) ^ (b < 0), -q, q)


class Ctx:
    """Evaluation context: values of domain variables and symbols, the definitions to
    inline, per-thread tables, element sizes of pointer types."""

    def __init__(
        self,
        env: Dict[int, np.ndarray],
        defs: Dict[int, Expr],
        tables: Dict[int, TableDecl],
        sizes: Dict[str, int],
        align_pad: Optional[np.ndarray] = None,
    ) -> None:
        self.env = env
        self.defs = defs
        self.tables = tables
        self.sizes = sizes
        self.align_pad = align_pad
        self.memo: Dict[int, Tuple[np.ndarray, str]] = {}
        self.mask: Any = True  # where the values matter (index checks only there)


def ev(e: Expr, env: Dict[str, Any]) -> np.ndarray:
    """Evaluate ``e`` with C semantics; ``env`` maps variable names to values (numpy
    broadcasting).  Convenience for closed expressions and tests."""
    names: Dict[int, np.ndarray] = {}
    for n in walk(e):
        if isinstance(n, Var) and n.name in env:
            names[id(n)] = np.asarray(env[n.name], dtype=np.int64)
    ctx = Ctx(names, {}, {}, {})
    try:
        return eval_expr(e, ctx)[0]
    except _Fail as f:
        raise ProofFailedError(f.message, condition=f.condition, witness=f.witness) from None


def _size(t: str, ctx: Ctx) -> int:
    base = _pointee(t)
    if base in ctx.sizes:
        return ctx.sizes[base]
    raise _Fail("typed pointers", f"unknown element size of {t!r}")


def eval_expr(e: Expr, ctx: Ctx) -> Tuple[np.ndarray, str]:
    """``e`` evaluated with C semantics in ``ctx`` (vectorized over the arrays bound there):
    its value and its C type."""
    if isinstance(e, Const):
        return np.int64(e.value), e.ctype
    if isinstance(e, Var):
        k = id(e)
        if k in ctx.env:
            return ctx.env[k], e.ctype
        if k in ctx.memo:
            return ctx.memo[k]
        if k in ctx.defs:
            v, t = eval_expr(ctx.defs[k], ctx)
            if not _is_ptr(e.ctype):
                v = _wrap(v, e.ctype)
                t = e.ctype
            else:
                t = e.ctype
            ctx.memo[k] = (v, t)
            return v, t
        raise _Fail("index values known", f"variable {e.name} has no value here", e.name)
    if isinstance(e, Bin):
        a, ta = eval_expr(e.a, ctx)
        b, tb = eval_expr(e.b, ctx)
        op = e.op
        if op in ("&&", "||"):
            r = (a != 0) & (b != 0) if op == "&&" else (a != 0) | (b != 0)
            return r.astype(np.int64), "bool"
        if _is_ptr(ta) or _is_ptr(tb):
            if op == "+" and _is_ptr(ta) and not _is_ptr(tb):
                return a + b * _size(ta, ctx), ta
            if op == "+" and _is_ptr(tb):
                return b + a * _size(tb, ctx), tb
            if op == "-" and _is_ptr(ta) and not _is_ptr(tb):
                return a - b * _size(ta, ctx), ta
            raise _Fail("typed pointers", f"pointer arithmetic {op} not supported")
        if op in ("<<", ">>"):
            t = _conv(ta, ta)
            if np.any(b < 0) or np.any(b >= INT_TYPES.get(t, (64, True))[0]):
                raise _Fail("shift in range", "a shift count is negative or too large")
            if INT_TYPES.get(t, (64, True))[1] and np.any(a < 0):
                raise _Fail("no shift of a negative value", "a negative value is shifted")
            r = (a << b) if op == "<<" else (a >> b)
            return _wrap(r, t), t
        t = _conv(ta, tb)
        bits, signed = INT_TYPES.get(t, (64, True))
        if not signed:
            a, b = _wrap(a, t), _wrap(b, t)
        if op in ("<", "<=", ">", ">=", "==", "!="):
            r = {
                "<": np.less,
                "<=": np.less_equal,
                ">": np.greater,
                ">=": np.greater_equal,
                "==": np.equal,
                "!=": np.not_equal,
            }[op](a, b)
            return np.asarray(r).astype(np.int64), "bool"
        if op == "+":
            r = a + b
        elif op == "-":
            r = a - b
        elif op == "*":
            r = a * b
        elif op == "/":
            r = _tdiv(a, b)
        elif op == "%":
            r = a - b * _tdiv(a, b)
        elif op == "&":
            r = a & b
        elif op == "|":
            r = a | b
        elif op == "^":
            r = a ^ b
        else:
            raise _Fail("IR expression", f"unknown operator {op}")
        if signed and bits < 64:
            lim = np.int64(1) << (bits - 1)
            bad = (np.asarray(r) >= lim) | (np.asarray(r) < -lim)
            if np.any(bad):
                raise _Fail("no signed overflow", f"{emit_expr(e)} overflows {t}")
        return _wrap(np.asarray(r), t), t
    if isinstance(e, Un):
        a, t = eval_expr(e.a, ctx)
        if e.op == "-":
            return _wrap(-a, _conv(t, t)), _conv(t, t)
        if e.op == "~":
            return _wrap(~a, _conv(t, t)), _conv(t, t)
        return (a == 0).astype(np.int64), "bool"
    if isinstance(e, Cast):
        a, t = eval_expr(e.a, ctx)
        if _is_ptr(e.ctype):
            return a, e.ctype
        return _wrap(a, e.ctype), e.ctype
    if isinstance(e, Reinterpret):
        a, _t = eval_expr(e.a, ctx)
        return a, e.ctype
    if isinstance(e, Cond):
        c, _ = eval_expr(e.c, ctx)
        a, ta = eval_expr(e.a, ctx)
        b, tb = eval_expr(e.b, ctx)
        return np.where(c != 0, a, b), ta if _is_ptr(ta) else _conv(ta, tb)
    if isinstance(e, Call):
        vals = [eval_expr(a, ctx) for a in e.args]
        if e.name in ("min", "max") and len(vals) == 2:
            f = np.minimum if e.name == "min" else np.maximum
            return f(vals[0][0], vals[1][0]), _conv(vals[0][1], vals[1][1])
        if e.name == "__cvta_generic_to_shared" and len(vals) == 1:
            return vals[0][0], "unsigned"
        raise _Fail("index values known", f"{e.name}(...) has no integer value here", e.name)
    if isinstance(e, FnCall):
        by = dict(e.args)
        env = dict(ctx.env)
        pv: Dict[str, Var] = {}
        for n in walk(e.fn.body):
            if isinstance(n, Var):
                pv[n.name] = n
        for t, n in e.fn.params:
            v, _ = eval_expr(by[n], ctx)
            if n in pv:
                env[id(pv[n])] = _wrap(np.asarray(v), t)
        sub = Ctx(env, {}, {}, ctx.sizes)
        sub.mask = ctx.mask
        v, _t = eval_expr(e.fn.body, sub)
        return v, e.fn.ret
    if isinstance(e, Index):
        ib = e.base
        if isinstance(ib, Var) and id(ib) in ctx.tables and len(e.idx) == 1:
            tab = ctx.tables[id(ib)]
            j, _ = eval_expr(e.idx[0], ctx)
            out = (j < 0) | (j >= tab.n)
            if np.any(out & ctx.mask):
                raise _Fail("table index in range", f"{ib.name}[...] read outside [0, {tab.n})")
            if np.any(out):
                j = np.where(out, 0, j)
            env = dict(ctx.env)
            env[id(tab.j)] = np.asarray(j)
            sub = Ctx(env, ctx.defs, ctx.tables, ctx.sizes, ctx.align_pad)
            sub.mask = ctx.mask
            return eval_expr(tab.value, sub)
        raise _Fail("index values known", f"{emit_expr(e)} is a register value", emit_expr(e))
    if isinstance(e, Inc):
        v, t = eval_expr(e.v, ctx)
        return v + 1, t
    if isinstance(e, LayoutApp):
        return _layout_app(e, ctx), "long long"
    if isinstance(e, AlignUp):
        a, t = eval_expr(e.a, ctx)
        if ctx.align_pad is None:
            raise _Fail("index values known", "an aligned base needs its padding symbol")
        return a + ctx.align_pad, t
    if isinstance(e, MbarRef):
        b, _ = eval_expr(e.base, ctx)
        i, _ = eval_expr(e.idx, ctx)
        return b + 8 * i, "unsigned"
    if isinstance(e, (Mem, AtomicAdd)):
        raise _Fail("index values known", "a loaded value is not an index", emit_expr(e))
    if isinstance(e, AddrOf):
        raise _Fail("index values known", "an address of a register is not an index")
    raise _Fail("IR expression", f"cannot evaluate {type(e).__name__}")


_TABLES: Dict[int, Tuple[Any, np.ndarray, Tuple[int, ...]]] = {}


def _layout_table(L: Any) -> Tuple[np.ndarray, Tuple[int, ...]]:
    hit = _TABLES.get(id(L))
    if hit is not None and hit[0] is L:
        return hit[1], hit[2]
    from layoutproof.inttuple import product

    vals = np.asarray(L.eval_all(), dtype=np.int64).reshape(-1)
    shape = L.shape if hasattr(L, "shape") else L.layout_b.shape
    if not isinstance(shape, tuple):
        shape = (shape,)
    sizes = tuple(int(product(s)) for s in shape)
    _TABLES[id(L)] = (L, vals, sizes)
    return vals, sizes


def _layout_app(e: LayoutApp, ctx: Ctx) -> np.ndarray:
    vals, sizes = _layout_table(e.layout)
    if len(e.coords) != len(sizes):
        raise _Fail(
            "layout coordinate in domain",
            f"{e.what or e.layout}: {len(e.coords)} coordinates for {len(sizes)} modes",
        )
    flat = np.int64(0)
    mul = 1
    for c, n in zip(e.coords, sizes):
        v, _ = eval_expr(c, ctx)
        out = (v < 0) | (v >= n)
        if np.any(out & ctx.mask):
            sel = np.broadcast_to(out & ctx.mask, np.broadcast(out, ctx.mask).shape)
            vb = np.broadcast_to(v, sel.shape)
            bad = int(vb.reshape(-1)[np.flatnonzero(sel.reshape(-1))[0]])
            raise _Fail(
                "layout coordinate in domain",
                f"{e.what or e.layout}: coordinate {bad} outside [0, {n}) of a mode",
                bad,
            )
        if np.any(out):
            v = np.where(out, 0, v)
        flat = flat + v * mul
        mul *= n
    return vals[flat]


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
_BARRIER_OPS = (SyncThreads, NamedBarrier, ClusterSync) + _MBAR


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
        except (_Fail, TypeError, ValueError):
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
        elif isinstance(x, FnCall):
            r = any(self.runtime(a) for _, a in x.args)
        elif isinstance(x, Index) and isinstance(x.base, Var) and id(x.base) in self.tables:
            r = any(self.runtime(i) for i in x.idx) or self.runtime(self.tables[id(x.base)].value)
        else:
            r = any(self.runtime(c) for c in _children(x) if isinstance(c, Expr))
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
                if any(self.runtime(c) for c in _children(n) if isinstance(c, Expr)):
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
    for c in _children(e):
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
        sid = {id(s) for s in syms}
        an = self.an

        def deps(x: Expr, memo: Dict[int, bool]) -> bool:
            k = id(x)
            if k in memo:
                return memo[k]
            if isinstance(x, Var):
                if k in sid:
                    r = True
                elif an.inlinable(x):
                    r = deps(an.defs[k], memo)
                else:
                    r = False
            elif isinstance(x, FnCall):
                r = any(deps(a, memo) for _, a in x.args)
            elif isinstance(x, Index) and isinstance(x.base, Var) and id(x.base) in an.tables:
                r = any(deps(i, memo) for i in x.idx) or deps(an.tables[id(x.base)].value, memo)
            else:
                r = any(deps(c, memo) for c in _children(x) if isinstance(c, Expr))
            memo[k] = r
            return r

        memo: Dict[int, bool] = {}
        bad: List[str] = []
        dmemo: Dict[int, frozenset] = {}

        def degs(x: Expr) -> frozenset:
            """The symbols an expression depends on (for products)."""
            k = id(x)
            if k in dmemo:
                return dmemo[k]
            if isinstance(x, Var):
                if k in sid:
                    r = frozenset([k])
                elif an.inlinable(x):
                    r = degs(an.defs[k])
                else:
                    r = frozenset()
            elif isinstance(x, FnCall):
                r = frozenset().union(*[degs(a) for _, a in x.args])
            elif isinstance(x, Index) and isinstance(x.base, Var) and id(x.base) in an.tables:
                r = frozenset().union(*[degs(i) for i in x.idx], degs(an.tables[id(x.base)].value))
            else:
                r = frozenset().union(*[degs(c) for c in _children(x) if isinstance(c, Expr)])
            dmemo[k] = r
            return r

        def check(x: Expr) -> None:
            if isinstance(x, Var):
                k = id(x)
                if an.inlinable(x) and k not in sid:
                    check(an.defs[k])
                return
            if isinstance(x, FnCall):
                by = dict(x.args)
                for _t, n in x.fn.params:
                    if deps(by[n], memo):
                        # a symbol passed into an int parameter: the body is linear in it only
                        # if the body is; check the body's structure on its parameter
                        body_syms = [v for v in walk(x.fn.body) if isinstance(v, Var) and v.name == n]
                        if body_syms and self._nonlinear_in(x.fn.body, body_syms[0]):
                            bad.append(f"{x.fn.name}({n} = a runtime value)")
                    check(by[n])
                return
            if isinstance(x, Bin) and x.op == "*":
                da, db = degs(x.a), degs(x.b)
                if da & db:
                    bad.append(f"{emit_expr_safe(x)} (a runtime value squared)")
                    return
            if isinstance(x, Bin) and x.op in (
                "/",
                "%",
                "<<",
                ">>",
                "&",
                "|",
                "^",
                "<",
                "<=",
                ">",
                ">=",
                "==",
                "!=",
                "&&",
                "||",
            ):
                if x.op == "<<" and not deps(x.b, memo):
                    check(x.a)
                    return
                if deps(x.a, memo) or deps(x.b, memo):
                    bad.append(emit_expr(x) if not isinstance(x.a, LayoutApp) else x.op)
                    return
            if isinstance(x, (Un,)) and x.op != "-" and deps(x.a, memo):
                bad.append(emit_expr(x))
                return
            if isinstance(x, Cond) and deps(x.c, memo):
                bad.append("a condition on a runtime value")
                return
            if isinstance(x, (AlignUp,)):
                check(x.a)
                return
            if isinstance(x, Index) and isinstance(x.base, Var) and id(x.base) in an.tables:
                for i in x.idx:
                    check(i)
                check(an.tables[id(x.base)].value)
                return
            if isinstance(x, LayoutApp):
                for c in x.coords:
                    if deps(c, memo):
                        bad.append(f"{x.what or 'layout'}(a runtime value)")
                return
            for c in _children(x):
                if isinstance(c, Expr):
                    check(c)

        check(e)
        return bad[0] if bad else None

    @staticmethod
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
                except _Fail:
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
        except _Fail as f:
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
            except _Fail as f:
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
        from . import banks

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
        except _Fail as f:
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
            except _Fail:
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
        if isinstance(s, (SyncThreads, ClusterSync)):
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


def _is_local_value(v: Var, an: Analysis) -> bool:
    """A value declared in the kernel body (a register), not a pointer into memory."""
    return not _is_ptr(v.ctype) and id(v) in an.vars and not v.builtin


def _walk_defs(e: Expr, an: Analysis) -> Iterator[Any]:
    seen: set = set()

    def go(x: Any) -> Iterator[Any]:
        for n in walk(x):
            yield n
            if isinstance(n, Var) and id(n) not in seen and id(n) in an.defs:
                seen.add(id(n))
                yield from go(an.defs[id(n)])

    return go(e)


def emit_expr_safe(e: Expr) -> str:
    try:
        return emit_expr(e)
    except LoweringError:
        return type(e).__name__


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
