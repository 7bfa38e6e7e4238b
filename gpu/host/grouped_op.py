"""The grouped GEMM as PyTorch operators, for ``torch.compile`` and CUDA graphs.

Three functional operators in the ``layoutproof`` namespace (registered on first use by
:func:`ops`; torch is imported only there):

* ``layoutproof::gemm_moe(Tensor a, Tensor b, Tensor? offs=None, int[]? sizes=None) ->
  Tensor`` -- :func:`~layoutproof.gpu.host.grouped.gemm_moe`: ``a`` (T, K) the stacked
  token groups, ``b`` (G, K, N) one matrix per expert, ``offs`` the cumulative group ends
  (int32, on the device: no synchronization, so a captured graph replays it with new
  offsets) or host ``sizes``; returns (T, N).
* ``layoutproof::gemm_moe_masked(Tensor a, Tensor b, Tensor masked_m) -> Tensor`` -- the
  decode form, (G, max_m, K) -> (G, max_m, N); rows past ``masked_m[g]`` are not written.
* ``layoutproof::gemm_grouped(Tensor[] a_list, Tensor[] b_list) -> Tensor`` -- the list
  form (one K and one N, per-group M), each group read in place through its own tensor
  maps; returns the groups' results stacked, (sum M_g, N) (split it with ``torch.split``).

Each has a fake (meta) implementation computing the output's shape and dtype from the
inputs' metadata and refusing what the real call refuses by shape, so
``torch.compile(fullgraph=True)`` traces it; CPU tensors reach the real call, whose
:class:`~layoutproof.gpu.errors.GemmInputError` names the fix.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..errors import GemmInputError

__all__ = ["ops", "moe_result_shape", "masked_result_shape", "grouped_result_shape", "SCHEMAS"]

#: the operators' schemas (name -> schema after the name)
SCHEMAS = {
    "gemm_moe": "(Tensor a, Tensor b, Tensor? offs=None, int[]? sizes=None) -> Tensor",
    "gemm_moe_masked": "(Tensor a, Tensor b, Tensor masked_m) -> Tensor",
    "gemm_grouped": "(Tensor[] a_list, Tensor[] b_list) -> Tensor",
}


def moe_result_shape(a_shape: Sequence[Any], b_shape: Sequence[Any], groups: Optional[int]) -> List[Any]:
    """The result shape of ``gemm_moe`` (``groups``: the entries of ``offs`` or ``sizes``).

    >>> moe_result_shape((10, 64), (3, 64, 32), 3)
    [10, 32]
    >>> moe_result_shape((10, 64), (3, 48, 32), 3)
    Traceback (most recent call last):
    ...
    layoutproof.gpu.errors.GemmInputError: gemm_moe: a has K = 64, b has K = 48: the groups share one K
    """
    if len(a_shape) != 2 or len(b_shape) != 3:
        raise GemmInputError(
            f"gemm_moe: a must be 2-D (T, K) and b 3-D (G, K, N), got {tuple(a_shape)} and {tuple(b_shape)}"
        )
    if a_shape[1] != b_shape[1]:
        raise GemmInputError(
            f"gemm_moe: a has K = {a_shape[1]}, b has K = {b_shape[1]}: the groups share one K"
        )
    if groups is not None and groups != b_shape[0]:
        raise GemmInputError(f"gemm_moe: {groups} group ends for {b_shape[0]} experts: one per expert")
    return [a_shape[0], b_shape[2]]


def masked_result_shape(a_shape: Sequence[Any], b_shape: Sequence[Any]) -> List[Any]:
    """The result shape of ``gemm_moe_masked``.

    >>> masked_result_shape((4, 16, 64), (4, 64, 8))
    [4, 16, 8]
    """
    if len(a_shape) != 3 or len(b_shape) != 3 or a_shape[0] != b_shape[0] or a_shape[2] != b_shape[1]:
        raise GemmInputError(
            f"gemm_moe_masked: a must be (G, max_m, K) and b (G, K, N), got {tuple(a_shape)}, "
            f"{tuple(b_shape)}"
        )
    return [a_shape[0], a_shape[1], b_shape[2]]


def grouped_result_shape(a_shapes: Sequence[Sequence[Any]], b_shapes: Sequence[Sequence[Any]]) -> List[Any]:
    """The result shape of ``gemm_grouped`` (the groups stacked).

    >>> grouped_result_shape([(3, 64), (0, 64)], [(64, 8), (64, 8)])
    [3, 8]
    >>> grouped_result_shape([(3, 64), (5, 32)], [(64, 8), (32, 8)])
    Traceback (most recent call last):
    ...
    layoutproof.gpu.errors.GemmInputError: gemm_grouped: group 1 is (5, 32) @ (32, 8), ...
    """
    if len(a_shapes) != len(b_shapes) or not a_shapes:
        raise GemmInputError(
            f"gemm_grouped: {len(a_shapes)} A matrices and {len(b_shapes)} B matrices: one of each per group"
        )
    if any(len(s) != 2 for s in list(a_shapes) + list(b_shapes)):
        raise GemmInputError("gemm_grouped: every A and B must be 2-D")
    K, N = b_shapes[0]
    for i, (x, y) in enumerate(zip(a_shapes, b_shapes)):
        if x[1] != K or tuple(y) != (K, N):
            raise GemmInputError(
                f"gemm_grouped: group {i} is {tuple(x)} @ {tuple(y)}, group 0 is (M, {K}) @ ({K}, {N}): the "
                "grouped kernel takes one K and one N for all groups (mismatched K or N: one gemm per group)"
            )
    return [sum(s[0] for s in a_shapes), N]


def _same_device(what: str, xs: Sequence[Any]) -> None:
    devs = {str(x.device) for x in xs if x is not None}
    if len(devs) > 1:
        raise GemmInputError(f"{what}: the tensors are on {', '.join(sorted(devs))}: put them on one device")


def _register() -> Any:
    import torch

    from . import grouped

    def _moe(
        a: torch.Tensor,
        b: torch.Tensor,
        offs: Optional[torch.Tensor] = None,
        sizes: Optional[List[int]] = None,
    ) -> torch.Tensor:
        return grouped.gemm_moe(a, b, offs, sizes=sizes)

    def _moe_fake(
        a: torch.Tensor,
        b: torch.Tensor,
        offs: Optional[torch.Tensor] = None,
        sizes: Optional[List[int]] = None,
    ) -> torch.Tensor:
        _same_device("gemm_moe", [a, b, offs])
        if (offs is None) == (sizes is None):
            raise GemmInputError("gemm_moe: pass offs (the cumulative group ends, device int32) or sizes")
        if offs is not None and (offs.dtype != torch.int32 or offs.dim() != 1):
            raise GemmInputError(
                f"gemm_moe: offs must be a 1-D contiguous int32 tensor, got {offs.dtype} of {offs.dim()} "
                "dimensions (offs.to(torch.int32).contiguous())"
            )
        groups = int(offs.shape[0]) if offs is not None else len(sizes or [])
        if a.dtype not in (torch.float16, torch.bfloat16) or b.dtype != a.dtype:
            raise GemmInputError(
                f"gemm_moe: a is {a.dtype} and b is {b.dtype}: both float16 or both bfloat16"
            )
        return a.new_empty(moe_result_shape(a.shape, b.shape, groups))

    def _masked(a: torch.Tensor, b: torch.Tensor, masked_m: torch.Tensor) -> torch.Tensor:
        return grouped.gemm_moe_masked(a, b, masked_m)

    def _masked_fake(a: torch.Tensor, b: torch.Tensor, masked_m: torch.Tensor) -> torch.Tensor:
        _same_device("gemm_moe_masked", [a, b, masked_m])
        if masked_m.dtype != torch.int32:
            raise GemmInputError(f"gemm_moe_masked: masked_m must be int32, got {masked_m.dtype}")
        return a.new_empty(masked_result_shape(a.shape, b.shape))

    def _grouped(a_list: List[torch.Tensor], b_list: List[torch.Tensor]) -> torch.Tensor:
        return grouped.gemm_grouped_stacked(a_list, b_list)

    def _grouped_fake(a_list: List[torch.Tensor], b_list: List[torch.Tensor]) -> torch.Tensor:
        _same_device("gemm_grouped", list(a_list) + list(b_list))
        shape = grouped_result_shape([x.shape for x in a_list], [x.shape for x in b_list])
        return a_list[0].new_empty(shape)

    lib = torch.library.Library("layoutproof", "FRAGMENT")
    impls: Dict[str, Tuple[Callable[..., Any], Callable[..., Any]]] = {
        "gemm_moe": (_moe, _moe_fake),
        "gemm_moe_masked": (_masked, _masked_fake),
        "gemm_grouped": (_grouped, _grouped_fake),
    }
    for name, (impl, fake) in impls.items():
        lib.define(name + SCHEMAS[name])
        for key in ("CUDA", "CPU"):  # CPU: so that a CPU tensor gets the error naming the fix
            lib.impl(name, impl, key)
        torch.library.register_fake(f"layoutproof::{name}", fake, lib=lib)
    _LIB.append(lib)  # the registrations live as long as the library object
    return torch.ops.layoutproof


_LIB: List[Any] = []
_OPS: List[Any] = []


def ops() -> Any:
    """``torch.ops.layoutproof`` with the grouped operators registered (once per process):
    ``ops().gemm_moe``, ``ops().gemm_moe_masked``, ``ops().gemm_grouped``."""
    if not _OPS:
        _OPS.append(_register())
    return _OPS[0]
