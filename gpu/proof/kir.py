"""Kernels as data: a small kernel IR and its one printer to CUDA C.

A kernel is built as a tree of :class:`Expr` and :class:`Stmt` nodes (:class:`Kernel`);
:func:`emit` is the only place CUDA text is produced.  Every memory access carries a
:class:`Claim` (the byte address it must have, written with :class:`LayoutApp` nodes that the
algebra evaluates), every proven index function is a :class:`ProvenFn` called by name
(:class:`FnCall`), and the collectives and mbarrier operations are nodes of their own -- so
:mod:`layoutproof.gpu.proof.obligations` computes a kernel's obligations from the tree
itself, never from printed text.

>>> i = Var("i")
>>> print(emit_expr((i + 1) * 4 >> 2))
((i + 1) * 4) >> 2
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass, replace
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from ..errors import LoweringError, ProofFailedError
from .lower import c_tree

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
    "GridSync",
    "Kernel",
    "emit",
    "emit_expr",
    "walk",
    "rewrite",
    "from_lowered",
    "emit_expr_safe",
    "children",
    "is_ptr",
    "pointee",
    "call",
    "block",
    "lift",
    "THREAD_IDX",
    "BLOCK_IDX",
    "GRID_DIM",
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


def is_ptr(t: Optional[str]) -> bool:
    return t is not None and t.rstrip().endswith("*")


def pointee(t: str) -> str:
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
    source passed when ``nbytes`` is 0 (then nothing is read).  ``elementwise``: the same
    16 bytes read as ``nbytes / 2`` two-byte loads (a source on any 2-byte boundary: an
    operand whose leading dimension or base breaks cp.async's 16-byte alignment) and
    written by one 16-byte shared store -- the same shared and global bytes, so the same
    claims; the write lands before the statement ends, inside cp.async's window."""

    dst: Expr
    src: Expr
    nbytes: Expr
    dst_claim: Claim
    src_claim: Claim
    src_empty: Optional[Expr] = None
    edge: Optional[Tuple[Expr, Expr]] = None  # (contiguous coordinate, its extent) of a partial chunk
    elementwise: bool = False


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


@dataclass(frozen=True, eq=False)
class GridSync(Stmt):
    """Every thread of every CTA of the grid meets here (a grid-wide barrier): the CTA
    synchronizes, thread 0 arrives on the grid's counter ``count`` and waits for the
    generation ``gen`` to move (the last CTA to arrive resets the counter and releases the
    next generation; :mod:`~layoutproof.gpu.proof.grid_sync_model` proves the protocol),
    the CTA synchronizes again, and every thread then orders the grid's generic-proxy
    global writes before its async-proxy (TMA) reads.  ``count`` and ``gen`` are the two
    ``unsigned`` words of a zeroed global pair kept by the host, one pair per stream.  The
    grid's CTAs must all be resident at once (a cooperative launch)."""

    count: Mem
    gen: Mem
    comment: str = ""


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


def children(node: Any) -> Iterator[Any]:
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
    for c in children(node):
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


def emit_expr_safe(e: Expr) -> str:
    """``e`` printed, or its node type where the printer has no text for it (for messages)."""
    try:
        return emit_expr(e)
    except LoweringError:
        return type(e).__name__


def _decl_text(d: Decl) -> str:
    v = d.var
    t = d.tname or v.ctype
    star = ""
    if is_ptr(t):
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
        fn = "lp_ld16_elems" if s.elementwise else "lp_cp_async16"
        return [f"{fn}({emit_expr(s.dst)}, {src}, {emit_expr(s.nbytes)});"]
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
    if isinstance(s, GridSync):
        return [
            "__syncthreads();" + (f"   // {s.comment}" if s.comment else ""),
            f"if (threadIdx.x == 0) lp_grid_sync(&{emit_expr(s.count)}, &{emit_expr(s.gen)}, gridDim.x);",
            "__syncthreads();",
            'asm volatile("fence.proxy.async.global;\\n" ::: "memory");',
        ]
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
__device__ __forceinline__ float lp_act_silu(float x) { return __fdividef(x, 1.f + __expf(-x)); }
// gelu(x) = x * Phi(x) = relu(x) - |x| h with h = Phi(-|x|) = t P(t) exp(-x^2 / 2),
// t = 1 / (1 + |x| / (2 sqrt 2)), P of degree 6 fitted for relative error (7.3e-7 where
// h > 1e-30, tools/gelu_fit.py): one reciprocal, one exponential, no branch or select, and
// no 1 + erf cancellation
__device__ __forceinline__ float lp_act_gelu(float x) {
  const float ax = fabsf(x);
  float t;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(t) : "f"(fmaf(0.35355338f, ax, 1.f)));
  float p = fmaf(t, 0.045961305f, -0.18497132f);
  p = fmaf(t, p, 0.20395714f);
  p = fmaf(t, p, 0.012234362f);
  p = fmaf(t, p, 0.14331633f);
  p = fmaf(t, p, 0.13829926f);
  p = fmaf(t, p, 0.14120254f);
  float e;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(x * (x * -0.72134752f)));
  return fmaf(-ax, t * p * e, fmaxf(x, 0.f));
}
""",
    "bias2": r"""__device__ __forceinline__ float lp_lo(float2 v) { return v.x; }
__device__ __forceinline__ float lp_hi(float2 v) { return v.y; }
__device__ __forceinline__ int lp_lo(int2 v) { return v.x; }
__device__ __forceinline__ int lp_hi(int2 v) { return v.y; }
__device__ __forceinline__ float lp_lo(__half2 v) { return __low2float(v); }
__device__ __forceinline__ float lp_hi(__half2 v) { return __high2float(v); }
__device__ __forceinline__ float lp_lo(__nv_bfloat162 v) { return __low2float(v); }
__device__ __forceinline__ float lp_hi(__nv_bfloat162 v) { return __high2float(v); }
""",
    "prefetch": r"""__device__ __forceinline__ void lp_prefetch_l1(const void* p) {
  asm volatile("prefetch.global.L1 [%0];\n" :: "l"(__cvta_generic_to_global(p)));
}
""",
    # the grid barrier of GridSync, thread 0 of each CTA (the steps grid_sync_model checks):
    # read the generation, arrive (acq_rel), then the last CTA resets the counter and
    # releases the next generation while the others wait for it; a wait past about 2^27
    # sleeps traps (a fault, never a hang: the launch is cooperative, so it cannot happen)
    "grid_sync": r"""__device__ __forceinline__ unsigned lp_ld_acquire(const unsigned* p) {
  unsigned v;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
__device__ __forceinline__ void lp_grid_sync(unsigned* count, unsigned* gen, unsigned ctas) {
  const unsigned g = lp_ld_acquire(gen);
  __threadfence();
  if (lp_atom_add_acq_rel(count, 1u) == ctas - 1u) {
    asm volatile("st.relaxed.gpu.global.u32 [%0], %1;\n" :: "l"(count), "r"(0u) : "memory");
    asm volatile("st.release.gpu.global.u32 [%0], %1;\n" :: "l"(gen), "r"(g + 1u) : "memory");
  } else {
    unsigned spins = 0;
    while (lp_ld_acquire(gen) == g) {
      __nanosleep(64);
      if (++spins == (1u << 27)) __trap();
    }
  }
  __threadfence();
}
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
#: the element-wise form of ``lp_cp_async16`` (:class:`CpAsync` with ``elementwise``), printed
#: where a kernel has one
_ELEMENTWISE_HELPER = r"""__device__ __forceinline__ void lp_ld16_elems(unsigned saddr, const void* g,
                                              int nbytes) {
  // nbytes / 2 two-byte elements from g (2-byte aligned), zeros after them, one 16-byte
  // shared store: cp.async 16's bytes for a source off the 16-byte grid
  const unsigned short* p = (const unsigned short*)g;
  unsigned w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    unsigned lo = 4 * j < nbytes ? (unsigned)__ldg(p + 2 * j) : 0u;
    unsigned hi = 4 * j + 2 < nbytes ? (unsigned)__ldg(p + 2 * j + 1) : 0u;
    w[j] = lo | (hi << 16);
  }
  asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n"
               :: "r"(saddr), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
}
"""

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
    # the other types: the same registers (16-bit units, proven by the generator), another k
    "tf32": "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32",
    "s8": "mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32",
    "u8": "mma.sync.aligned.m16n8k32.row.col.s32.u8.u8.s32",
    "e4m3": "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32",
    "e5m2": "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32",
}


#: ``wgmma`` operand type -> (k of one instruction, accumulator type): 32 bytes of K each.
WGMMA_KINDS: Dict[str, Tuple[int, str]] = {
    "f16": (16, "f32"),
    "bf16": (16, "f32"),
    "tf32": (8, "f32"),
    "e4m3": (32, "f32"),
    "e5m2": (32, "f32"),
    "s8": (32, "s32"),
    "u8": (32, "s32"),
}


def wgmma_ptx(n: int, dtype: str) -> str:
    """The ``wgmma`` instruction the kernel text issues for ``m64n{n}`` and operand type
    ``dtype`` (the generators check it equal to the verified atom's).

    >>> wgmma_ptx(128, "e4m3")
    'wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3'
    """
    if dtype not in WGMMA_KINDS:
        raise LoweringError(f"kernel IR: no wgmma for operand type {dtype!r}", condition="printable IR")
    k, acc = WGMMA_KINDS[dtype]
    return f"wgmma.mma_async.sync.aligned.m64n{n}k{k}.{acc}.{dtype}.{dtype}"


def _wgmma_typed_text(n: int, dtype: str) -> str:
    """``lp_wgmma`` for the K-major-only types: no transpose immediates (PTX gives them to
    ``.f16``/``.bf16`` only); the integer types take no input scales and accumulate in
    ``.s32`` registers."""
    regs = n // 2
    acc = WGMMA_KINDS[dtype][1]
    ctype, con = ("int", "+r") if acc == "s32" else ("float", "+f")
    dlist = ", ".join(f"%{i}" for i in range(regs))
    outs = ", ".join(f'"{con}"(d[{i}])' for i in range(regs))
    tail = "p" if acc == "s32" else "p, 1, 1"
    return (
        f"__device__ __forceinline__ void lp_wgmma({ctype}* d, unsigned long long da,\n"
        + " " * 41
        + "unsigned long long db) {\n"
        + f"""  asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 2}, 0;\\n"
               "{wgmma_ptx(n, dtype)} {{{dlist}}}, %{regs}, %{regs + 1}, {tail};\\n}}\\n"
               : {outs}
               : "l"(da), "l"(db), "r"(1));
}}
"""
    )


def _helper_text(k: Kernel, name: str) -> str:
    if name in _HELPERS:
        extra = ""
        if name in _HELPERS_3D and any(isinstance(n, TmaLoad) and n.c2 is not None for n in walk(k.body)):
            extra = _HELPERS_3D[name]
        if name == "cp_async" and any(isinstance(n, CpAsync) and n.elementwise for n in walk(k.body)):
            extra = _ELEMENTWISE_HELPER
        return _HELPERS[name] + extra
    if name == "mma" and k.mma_dtype in ("s8", "u8"):
        return f"""__device__ __forceinline__ void lp_mma(int* d, const unsigned* a, const unsigned* b) {{
  asm("{_MMA_PTX[k.mma_dtype]} {{%0,%1,%2,%3}}, {{%4,%5,%6,%7}}, {{%8,%9}}, {{%0,%1,%2,%3}};\\n"
      : "+r"(d[0]), "+r"(d[1]), "+r"(d[2]), "+r"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}}
"""
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
        if dtype not in ("f16", "bf16"):
            if ta or tb:
                raise LoweringError(
                    f"kernel IR: .{dtype} wgmma reads K-major operands only (no transpose)",
                    condition="printable IR",
                )
            return (
                "// descriptors: start address >> 4 | the proven constant fields (LBO, SBO, "
                "128B swizzle)\n"
                + "".join(
                    f"""__device__ __forceinline__ unsigned long long lp_desc_{op}(unsigned saddr) {{
  return (unsigned long long)((saddr & 0x3FFFFu) >> 4) | {k.desc_fields[op]:#x}ull;
}}
"""
                    for op in ("a", "b")
                )
                + _wgmma_typed_text(n, dtype)
            )
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
    tree = c_tree(low.c_expr)
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
