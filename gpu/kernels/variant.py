"""The base of the warp-specialized kernel's variants (split-K, the fused epilogue, the
cluster reduction): each is the warp-specialized TMA kernel of
:func:`~layoutproof.gpu.kernels.wgmma.generate_sm90`, rewritten on its IR.

* :class:`WsVariantFields` -- the configuration fields the planner and the runtime read,
  taken from the base kernel's configuration;
* :func:`base_plan_proofs` -- the base kernel's proofs of its plans, without the IR
  obligations that are discharged again on the rewritten tree;
* :func:`find_decl`, :func:`find_param`, :func:`expect_tx_bytes` -- the rewrites read the
  base kernel's variables, parameters and transaction size by name, and fail by name when
  the base kernel does not have them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, List, Optional

from ..errors import ProofFailedError
from ..proof import kir, obligations
from ..proof.record import ProofLog
from .toolkit import GemmKernel, prove_grid_order
from .wgmma import Sm90Config
from .wgmma_ws import prove_ws_protocol

__all__ = [
    "WsVariantFields",
    "base_plan_proofs",
    "find_decl",
    "find_param",
    "expect_tx_bytes",
    "unit_rewrite",
]


class BaseKernelFields:
    """The fields the planner and the runtime read from a configuration that runs another
    configuration's kernel ``base`` (an mma.sync ``GemmConfig`` or an ``Sm90Config``) with its
    tiling unchanged (the decode tiles' fused epilogue, the one-plane fix-up's kernel): the
    tile, threads, shared memory, schedule, loader and cluster are the base's (``""``, ``""``
    and 1 where the base has none)."""

    base: Any

    @property
    def bm(self) -> int:
        return int(self.base.bm)

    @property
    def bn(self) -> int:
        return int(self.base.bn)

    @property
    def threads(self) -> int:
        return int(self.base.threads)

    @property
    def smem_bytes(self) -> int:
        return int(self.base.smem_bytes)

    @property
    def schedule(self) -> str:
        return str(getattr(self.base, "schedule", ""))

    @property
    def loader(self) -> str:
        return str(getattr(self.base, "loader", ""))

    @property
    def cluster(self) -> int:
        return int(getattr(self.base, "cluster", 1))


class WsVariantFields:
    """The fields the planner and the runtime read from a kernel configuration, for a
    variant of the warp-specialized TMA kernel ``base`` (split-K, the fused epilogue): the
    tile, stages, grouping, threads and shared memory are the base kernel's; ``cluster`` is
    the variant's own."""

    base: Sm90Config

    @property
    def bm(self) -> int:
        return self.base.bm

    @property
    def bn(self) -> int:
        return self.base.bn

    @property
    def bk(self) -> int:
        return self.base.bk

    @property
    def stages(self) -> int:
        return self.base.stages

    @property
    def group_m(self) -> int:
        return self.base.group_m

    @property
    def loader(self) -> str:
        return "tma"

    @property
    def schedule(self) -> str:
        return "ws"

    @property
    def threads(self) -> int:
        return self.base.threads

    @property
    def smem_bytes(self) -> int:
        return self.base.smem_bytes


def find_decl(
    body: Any, name: str, what: str = "split-K rewrite", condition: str = "split-K rewrite"
) -> kir.Var:
    """The one variable declared as ``name`` in ``body`` (the rewrites of the base kernel read
    its variables by name); a ProofFailedError naming ``what`` (with ``condition``) when there
    is none or several."""
    hits = [n.var for n in kir.walk(body) if isinstance(n, kir.Decl) and n.var.name == name]
    if len(hits) != 1:
        raise ProofFailedError(
            f"{what}: expected one declaration of {name!r}, found {len(hits)}",
            condition=condition,
            witness=name,
        )
    return hits[0]


def find_param(
    k: kir.Kernel, name: str, what: str = "split-K rewrite", condition: str = "split-K rewrite"
) -> kir.Var:
    """The kernel parameter called ``name``; a ProofFailedError naming ``what`` (with
    ``condition``) when absent."""
    for _, v in k.params:
        if v.name == name:
            return v
    raise ProofFailedError(f"{what}: no parameter {name!r}", condition=condition, witness=name)


def base_plan_proofs(
    k: GemmKernel, cfg: Optional[Sm90Config], protocol: Optional[Callable[[kir.Kernel, ProofLog], Any]] = None
) -> List[Any]:
    """The base kernel's proofs of its plans (buffers, TMA boxes, descriptors, atom, C map,
    scheduler, epilogue): its log without the IR obligations ``finish`` appended (the launch
    ordering, the accesses, the barriers), which are
    discharged again on the rewritten tree.  Counted by re-running them on the base IR (and
    its mbarrier protocol: ``protocol(ir, log)`` where given, else the warp-specialized
    kernel's for ``cfg``; None for both: a kernel without one, the mma.sync kernel)."""
    tmp = ProofLog()
    prove_grid_order(k.ir, tmp)  # finish's first claim, proven again on the rewritten tree
    rep = obligations.discharge(k.ir, tmp)
    del rep
    if protocol is not None:
        protocol(k.ir, tmp)
    elif cfg is not None:
        tx = expect_tx_bytes(k.ir)
        prove_ws_protocol(k.ir, cfg, tx, tmp, cfg.cluster)
    n_post = len(tmp)
    allp = list(k.proofs)
    tail = [p.statement for p in allp[len(allp) - n_post :]]
    if tail != [p.statement for p in tmp]:
        raise ProofFailedError(
            "split-K: the base kernel's log does not end with its IR obligations",
            condition="split-K proof log",
        )
    return allp[: len(allp) - n_post]


def expect_tx_bytes(k: kir.Kernel) -> int:
    """The bytes of the kernel's one ``mbarrier.expect_tx`` (the TMA stage's transaction)."""
    txs = [n.nbytes for n in kir.walk(k.body) if isinstance(n, kir.MbarExpectTx)]
    if len(txs) != 1:
        raise ProofFailedError(
            "split-K: expected one expect_tx in the base kernel", condition="split-K rewrite"
        )
    return int(txs[0])


def unit_rewrite(
    t: kir.Var, tile: kir.Var, KT: kir.Var, kb: kir.Var, ke: kir.Var, what: str = "split-K rewrite"
) -> Callable[[Any], Any]:
    """The rewrite (for :func:`kir.rewrite`) of a tile loop's body into one work unit's: the
    scheduler ``lp_tile`` called with the unit's ``tile`` in place of the loop index ``t``
    (refused, naming ``what``, when it is called with anything else), and the k-loop over
    ``[0, KT)`` run over the unit's chunk ``[kb, ke)``."""

    def fn(node: Any) -> Any:
        if isinstance(node, kir.Call) and node.name == "lp_tile":
            if node.args[0] is not t:
                raise ProofFailedError(
                    f"{what}: lp_tile is not called with the loop's tile index",
                    condition=what,
                )
            return replace(node, args=(tile,) + node.args[1:])
        if isinstance(node, kir.For) and node.stop is KT:
            return replace(node, start=kb, stop=ke)
        return None

    return fn
