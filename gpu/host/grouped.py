"""Grouped GEMM on the host: one launch of the proven grouped kernel
(:mod:`layoutproof.gpu.kernels.grouped`) for a mixture-of-experts layer.

* :func:`gemm_moe` -- the contiguous form: ``a`` (T x K) holds the token groups stacked
  (group ``g`` owns rows ``[offs[g-1], offs[g])``; ``offs`` the cumulative group ends, as
  ``torch._grouped_mm`` takes them), ``b`` (G x K x N) one matrix per expert; the result
  (T x N) stacked like ``a``.  ``offs`` may live on the device only (no synchronization:
  the kernel's group table is built by device array operations, and the launch walks an
  upper bound of tile rows, the rows past the last group empty) or be given as host
  ``sizes``.
* :func:`gemm_moe_masked` -- the masked form of a decode step: ``a`` (G x max_m x K), the
  valid row count of each group in ``masked_m`` (device); rows past ``masked_m[g]`` of the
  result are not written.
* :func:`gemm_grouped` -- lists ``a_list[g]`` (M_g x K), ``b_list[g]`` (K x N) with one K
  and one N; rows of ``a`` and the ``b`` matrices that are not already one stacked buffer
  are copied into one (the result's groups are views of one stacked output).
* :func:`gemm_array` -- the pointer-array batched product (every group M x K x N) through
  the same kernel.

Inputs are CuPy arrays (float16, or bfloat16 as uint16 with ``dtype="bf16"``) or CUDA
torch tensors (float16 / bfloat16, read in place; the result is a torch tensor, the launch
on torch's current stream).  Bad input is a :class:`~layoutproof.gpu.errors.GemmInputError`
naming the fix.  Whatever the device's ``offs`` hold, every store stays inside the output
(the kernel guards each row by the stacked row count, proven on its IR); offsets that
decrease or pass ``T`` give wrong rows, not stray writes.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from ..config import GemmProblem
from ..errors import GemmInputError
from ..kernels.grouped import GroupedConfig, generate_grouped, group_table, table_entries, upper_tile_rows
from ..kernels.wgmma import tensor_map_args
from ..kernels.wgmma_core import HOPPER_DEFAULT
from .operands import refuse_negated
from .rule import pingpong_pick
from .torch_op import tensor_sig

__all__ = [
    "gemm_moe",
    "gemm_moe_masked",
    "gemm_grouped",
    "gemm_grouped_stacked",
    "gemm_array",
    "group_map_plan",
    "moe_table",
    "masked_table",
    "grouped_config",
    "GROUPED_RULE",
    "last_grouped_launch",
    "consecutive",
]

_TMAP_REC = np.dtype({"names": [f"w{i}" for i in range(16)], "formats": [np.uint64] * 16})

#: what the last grouped launch did (kernel, groups, tile rows, grid): for tests and benches
last_grouped_launch: Dict[str, Any] = {}


# ============================================================================ operands
class _Arr(NamedTuple):  # a tuple: built once per operand per call, cheaply
    """One operand as the launch sees it: pointer, shape, element strides, type, device."""

    x: Any
    ptr: int
    shape: Tuple[int, ...]
    strides: Tuple[int, ...]
    dtype: str  # "f16", "bf16", "i32", "i64" or another name (refused where it matters)
    dev: int
    torch: bool


_TORCH_TYPES = {"torch.float16": "f16", "torch.bfloat16": "bf16", "torch.int32": "i32", "torch.int64": "i64"}
_CUPY_TYPES = {"float16": "f16", "bfloat16": "bf16", "uint16": "bf16?", "int32": "i32", "int64": "i64"}


def _arr(x: Any, what: str, bf16: bool) -> _Arr:
    mod = type(x).__module__.split(".")[0]
    if mod == "torch":
        if not getattr(x, "is_cuda", False):
            raise GemmInputError(f"{what}: a CPU tensor; move it to the GPU ({what}.cuda())")
        refuse_negated(x, "the tensor", what)
        dt = _TORCH_TYPES.get(str(x.dtype), str(x.dtype))
        return _Arr(x, int(x.data_ptr()), tuple(x.shape), tuple(x.stride()), dt, int(x.device.index), True)
    if mod == "cupy":
        it = x.dtype.itemsize
        dt = _CUPY_TYPES.get(str(x.dtype), str(x.dtype))
        if dt == "bf16?":
            dt = "bf16" if bf16 else "uint16"
        return _Arr(
            x, int(x.data.ptr), tuple(x.shape), tuple(s // it for s in x.strides), dt, int(x.device.id), False
        )
    raise GemmInputError(
        f"{what}: a {type(x).__name__}; pass a CuPy array or a CUDA torch tensor "
        "(numpy arrays live on the host)"
    )


def _check_same(ops: Sequence[Tuple[str, _Arr]]) -> Tuple[int, bool]:
    devs = {a.dev for _, a in ops}
    kinds = {a.torch for _, a in ops}
    if len(devs) != 1:
        raise GemmInputError(
            "grouped GEMM: the operands are on devices "
            + ", ".join(f"{n}: cuda:{a.dev}" for n, a in ops)
            + "; move them to one device"
        )
    if len(kinds) != 1:
        raise GemmInputError(
            "grouped GEMM: mixed torch tensors and CuPy arrays; pass one kind (torch.from_dlpack / "
            "cupy.from_dlpack convert without a copy)"
        )
    return devs.pop(), kinds.pop()


# ============================================================================ the group tables
def moe_table(xp: Any, offs: Any, bm: int, total_rows: int) -> Tuple[Any, int]:
    """The kernel's table ``[ptile | rbeg | rend | count]`` (int32, ``3 G + 1``) from the
    cumulative group ends ``offs`` by array operations of the module ``xp`` (numpy or
    CuPy: on the device, no synchronization), and the tile rows the launch walks: the upper
    bound ``ceil(T / bm) + G`` (the exact count, the table's last entry, is known on the
    device only).

    >>> tab, rt = moe_table(np, np.array([5, 5, 300], dtype=np.int32), 128, 300)
    >>> tab.tolist(), rt
    ([0, 1, 1, 0, 5, 5, 5, 5, 300, 4], 6)
    """
    ends = offs.astype(xp.int64)
    begs = xp.concatenate([xp.zeros(1, dtype=xp.int64), ends[:-1]])
    G = int(offs.shape[0])
    return _prefix_table(xp, begs, ends, bm), upper_tile_rows("contiguous", G, total_rows, bm)


def masked_table(xp: Any, masked_m: Any, max_m: int, bm: int) -> Tuple[Any, int]:
    """The masked form's table: group ``g`` owns rows ``[g max_m, g max_m + min(masked_m[g],
    max_m))`` and the tile rows of those rows alone (the prefix as the contiguous form's,
    so that no tile row before the count is empty); returns it and the tile rows a launch
    walks, the upper bound ``G ceil(max_m / bm)`` (the exact count, the table's last entry,
    is known on the device only).

    >>> tab, rt = masked_table(np, np.array([3, 0, 200], dtype=np.int32), 130, 128)
    >>> tab.tolist(), rt
    ([0, 1, 1, 0, 130, 260, 3, 130, 390, 3], 6)
    """
    G = int(masked_m.shape[0])
    begs = xp.arange(G, dtype=xp.int64) * max_m
    ends = begs + xp.minimum(xp.maximum(masked_m.astype(xp.int64), 0), max_m)
    return _prefix_table(xp, begs, ends, bm), upper_tile_rows("masked", G, max_m, bm)


def _prefix_table(xp: Any, begs: Any, ends: Any, bm: int) -> Any:
    """:func:`~layoutproof.gpu.kernels.grouped.group_table`'s table by array operations of
    ``xp`` (on the device with CuPy, no synchronization): ``[ptile | rbeg | rend | count]``."""
    tiles = (xp.maximum(ends - begs, 0) + (bm - 1)) // bm
    count = tiles.sum().reshape(1)
    return xp.concatenate([xp.cumsum(tiles) - tiles, begs, ends, count]).astype(xp.int32)


# ---------------------------------------------------------------------------- on the device, one launch
#: the group table of device offsets in one small launch (one block; a scan in shared
#: memory), where the array operations of :func:`moe_table` take about ten: the same
#: table, entry for entry (checked against :func:`moe_table` and :func:`masked_table` on
#: the GPU).  ``kind`` 0: contiguous (``src`` the cumulative ends); 1: masked (``src`` the
#: row counts, ``arg`` = max_m).
TABLE_SOURCE = r"""
extern "C" __global__ void __launch_bounds__(1024) lp_group_table(const int* __restrict__ src, int G, int bm,
                                                                  int kind, int arg, int* __restrict__ tab) {
  __shared__ int s[1024];
  const int g = threadIdx.x;
  int beg = 0, end = 0, t = 0;
  if (g < G) {
    if (kind == 0) {
      end = src[g];
      beg = g ? src[g - 1] : 0;
    } else {
      beg = g * arg;
      end = beg + min(max(src[g], 0), arg);
    }
    const int n = end - beg;
    t = n > 0 ? (n + bm - 1) / bm : 0;
  }
  s[g] = t;
  __syncthreads();
  for (int d = 1; d < 1024; d <<= 1) {  // inclusive scan (Hillis-Steele)
    const int v = g >= d ? s[g - d] : 0;
    __syncthreads();
    s[g] += v;
    __syncthreads();
  }
  if (g < G) {
    tab[g] = s[g] - t;  // exclusive prefix of the tile rows
    tab[G + g] = beg;
    tab[2 * G + g] = end;
  }
  if (g == G - 1) tab[3 * G] = s[g];  // the count of tile rows
}
"""
_TABLE_KERNELS: Dict[int, Any] = {}

#: the most host sizes :data:`SIZES_SOURCE`'s kernel takes by value (its parameter block
#: stays under the 4 KB every driver accepts)
SIZES_BY_VALUE = 512

#: the group table of *host* sizes built on the device from the sizes passed by value in
#: the launch's parameters (no upload, nothing to synchronize): the table of
#: :func:`group_table` (ends the inclusive scan of the sizes), entry for entry (checked
#: against it on the GPU).  Sizes are non-negative (the host checks them).
SIZES_SOURCE = (
    f"#define LP_N {SIZES_BY_VALUE}\n"
    + r"""
struct lp_sizes_t { int v[LP_N]; };
extern "C" __global__ void __launch_bounds__(LP_N) lp_group_table_sizes(const __grid_constant__ lp_sizes_t sz,
                                                                      int G, int bm, int* __restrict__ tab) {
  __shared__ int e[LP_N];
  __shared__ int s[LP_N];
  const int g = threadIdx.x;
  const int n = g < G ? sz.v[g] : 0;
  const int t = (n + bm - 1) / bm;
  e[g] = n;
  s[g] = t;
  __syncthreads();
  for (int d = 1; d < blockDim.x; d <<= 1) {  // inclusive scans of the rows and the tile rows
    const int ve = g >= d ? e[g - d] : 0;
    const int vs = g >= d ? s[g - d] : 0;
    __syncthreads();
    e[g] += ve;
    s[g] += vs;
    __syncthreads();
  }
  if (g < G) {
    tab[g] = s[g] - t;
    tab[G + g] = e[g] - n;
    tab[2 * G + g] = e[g];
  }
  if (g == G - 1) tab[3 * G] = s[g];  // the count of tile rows
}
"""
)
_SIZES_KERNELS: Dict[int, Any] = {}


class _TableLaunch(NamedTuple):
    """The table kernel of a device: compiled, and where CuPy's driver has ``launchKernel``
    its function handle, parameter block and the block's setters (the direct launch)."""

    rk: Any
    lk: Any = None
    fn: int = 0
    pb: Any = None
    sets: Tuple[Any, ...] = ()


def _table_launch(rk: Any, cp: Any) -> _TableLaunch:
    from . import device
    from .plan import param_setters
    from .rule import ParamBuffer

    lk = device.launch_kernel(cp)
    if lk is None:
        return _TableLaunch(rk)
    pb = ParamBuffer(("ptr", "i32", "i32", "i32", "i32", "ptr"))
    return _TableLaunch(rk, lk, int(rk.kernel.ptr), pb, param_setters(pb, tuple(range(6))))


def _table_kernel(dev: int, cp: Any) -> _TableLaunch:
    """The table kernel of device ``dev``, compiled on first use."""
    ent = _TABLE_KERNELS.get(dev)
    if ent is None:
        with cp.cuda.Device(dev):
            rk = cp.RawKernel(TABLE_SOURCE, "lp_group_table", options=("-std=c++17",))
            rk.compile()
            ent = _table_launch(rk, cp)
        _TABLE_KERNELS[dev] = ent
    return ent


def _sizes_kernel(dev: int, cp: Any) -> Tuple[Any, int]:
    """The host-sizes table kernel of device ``dev``: (its launcher, its function handle),
    or (None, 0) where CuPy's driver has no ``launchKernel``."""
    from . import device

    ent = _SIZES_KERNELS.get(dev)
    if ent is None:
        lk = device.launch_kernel(cp)
        ent = (None, 0)
        if lk is not None:
            with cp.cuda.Device(dev):
                rk = cp.RawKernel(SIZES_SOURCE, "lp_group_table_sizes", options=("-std=c++17",))
                rk.compile()
            ent = (lk, int(rk.kernel.ptr))
        _SIZES_KERNELS[dev] = ent
    return ent


def _device_table(src: "_Arr", G: int, bm: int, kind: int, arg: int, torch_mod: Any) -> Tuple[Any, int]:
    """The kernel's group table built on the device from ``src`` (G int32 entries) in one
    launch on the caller's stream (torch's current stream for tensors); returns it and its
    address."""
    from . import device

    if G > 1024:
        raise GemmInputError(
            f"grouped GEMM: {G} groups; the grouped kernel takes up to 1024 (split the call)"
        )
    cp = device.cupy()
    ent = _table_kernel(src.dev, cp)
    with cp.cuda.Device(src.dev):
        i32 = np.int32
        if torch_mod is not None:
            tab = torch_mod.empty(table_entries(G), dtype=torch_mod.int32, device=src.x.device)
            ptr = int(tab.data_ptr())
            sp = _stream(torch_mod, src.dev, cp)
        else:
            tab = cp.empty(table_entries(G), dtype=cp.int32)
            ptr = int(tab.data.ptr)
            sp = int(cp.cuda.get_current_stream().ptr)
        if ent.lk is not None:  # one launch from the packed parameters (the grouped kernel's way)
            with _LOCK:
                for st, v in zip(ent.sets, (src.ptr, G, bm, kind, arg, ptr)):
                    st.value = v
                ent.lk(ent.fn, 1, 1, 1, 1024, 1, 1, 0, sp, ent.pb.address, 0)
        else:
            with cp.cuda.ExternalStream(sp, src.dev):
                ent.rk(
                    (1,), (1024,), (np.uint64(src.ptr), i32(G), i32(bm), i32(kind), i32(arg), np.uint64(ptr))
                )
    return tab, ptr


# ============================================================================ the launch
#: the kernel's parameters in order, as :func:`_launch` passes them (checked against the IR)
KERNEL_ARGS = ("tmA", "tmB", "C", "M", "N", "K", "ldc", "c_vec", "batch", "ldcb", "gtab", "G", "rtiles")
#: the per-group-map kernel's: device arrays of tensor maps in place of the two maps
KERNEL_ARGS_MAPS = ("tmAs", "tmBs") + KERNEL_ARGS[2:]

_LOCK = threading.Lock()
_MAPS: Dict[Tuple[Any, ...], Any] = {}


def _tensor_map(ptr: int, dt: str, inner: int, outer: int, ld: int, batch: Optional[Tuple[int, int]]) -> Any:
    """A 128-byte tensor map (64 x 64 boxes, 128-byte swizzle, zero fill) of 16-bit elements:
    ``inner`` contiguous, ``outer`` rows ``ld`` elements apart, ``batch`` = (count, stride) --
    the map the kernel generator proves (:func:`~layoutproof.gpu.kernels.wgmma.tensor_map_args`)
    with these extents substituted."""
    key = (ptr, dt, inner, outer, ld, batch)
    m = _MAPS.get(key)
    if m is not None:
        return m
    from cuda.bindings import driver  # cuda-python, as the 2-D TMA path

    values = {"K": inner, "X": outer, "ld": ld}
    if batch is not None:
        values.update(B=batch[0], bs=batch[1])
    args = tensor_map_args(True, dt, batch is not None).subs(values)
    err, tmap = driver.cuTensorMapEncodeTiled(*args.driver_args(driver, ptr))
    if err != driver.CUresult.CUDA_SUCCESS:
        raise GemmInputError(
            f"grouped GEMM: cuTensorMapEncodeTiled failed ({err}) for a {outer}x{inner} operand"
        )
    rec = np.array([int(v) for v in tmap.opaque], dtype=np.uint64).view(_TMAP_REC)[0]
    if len(_MAPS) >= 256:
        _MAPS.clear()
    _MAPS[key] = rec
    return rec


def _check_types(a: _Arr, b: _Arr) -> None:
    if a.dtype not in ("f16", "bf16") or b.dtype != a.dtype:
        raise GemmInputError(
            f"grouped GEMM: a is {a.dtype} and b is {b.dtype}: both float16 or both bfloat16 (CuPy: uint16 "
            'with dtype="bf16")'
        )


def _b_layout(b: _Arr, K: int, N: int) -> Tuple[str, int, int]:
    """(B's major, its leading dimension, its expert stride) in elements, or a GemmInputError."""
    s0, s1, s2 = b.strides
    if s2 == 1 and s1 >= N:
        major, ld = "n", s1
    elif s1 == 1 and s2 >= K:
        major, ld = "k", s2
    else:
        raise GemmInputError(
            f"grouped GEMM: b (G, K, N) = {b.shape} has strides {b.strides}: one of its last two dimensions "
            "must be contiguous (b.contiguous(), or the transpose of a contiguous (G, N, K) weight)"
        )
    if (ld * 2) % 16 or (s0 * 2) % 16 or b.ptr % 16:
        raise GemmInputError(
            f"grouped GEMM: b's leading dimension {ld}, expert stride {s0} (elements) and base address must "
            "be multiples of 16 bytes for the TMA: pad K and N to multiples of 8 or make b .contiguous()"
        )
    return major, ld, s0


class _GroupedLaunch:
    """What one call signature of the grouped kernel keeps: the kernel, compiled, its
    configuration and problem, and -- where CuPy's driver module has ``launchKernel`` -- a
    parameter block packed with the signature's constants, launched from base addresses on
    the caller's stream (no CuPy argument conversion, no stream object per call; the 2-D
    plans' direct launch).  The tensor maps of the last A and B base addresses stay in the
    block (a map is encoded once per base address, :func:`_tensor_map`)."""

    def __init__(
        self,
        kern: Any,
        rk: Any,
        cfg: GroupedConfig,
        prob: GemmProblem,
        cp: Any,
        statics: Dict[str, Any],
        maps: Tuple[Any, ...] = (),
    ):
        from . import device
        from .plan import param_setters
        from .rule import ParamBuffer

        self.kern, self.rk, self.cfg, self.prob = kern, rk, cfg, prob
        #: the maps' constants: (dtype, K, A's rows, A's row stride, B's major, N, ldb, G,
        #: B's expert stride) -- every one part of the signature
        self.map_args = maps
        self.maps = cfg.per_group_maps
        self.names = KERNEL_ARGS_MAPS if self.maps else KERNEL_ARGS
        self.sms = device.sm_count(cp)
        self.grid_n, self.ldc = -(-statics["N"] // cfg.bn), statics["ldc"]
        lk = device.launch_kernel(cp)
        self.launch_kernel = lk
        self.fn = int(rk.kernel.ptr) if lk is not None else 0
        self.a_cur = self.b_cur = -1
        if lk is None:
            return
        kinds = tuple(
            ("ptr" if self.maps else "tmap") if n in _MAP_ARGS else _ARG_KINDS[n] for n in self.names
        )
        self.pb = ParamBuffer(kinds)
        idx = {n: i for i, n in enumerate(self.names)}
        for n, v in statics.items():
            self.pb.set(idx[n], v)
        per_call = ("C", "c_vec", "gtab", "rtiles") + (self.names[:2] if self.maps else ())
        self.set = dict(zip(per_call, param_setters(self.pb, tuple(idx[n] for n in per_call))))

    def set_maps(self, a_ptr: int, b_ptr: int) -> None:
        """Encode A's and B's tensor maps into the parameter block where a base address is
        new (the caller holds ``_LOCK``)."""
        dt, K, a_rows, a_ld, b_major, N, ldb, G, sb = self.map_args
        if a_ptr != self.a_cur:
            self.pb.set(0, _map_bytes(_tensor_map(a_ptr, dt, K, a_rows, a_ld, None)))
            self.a_cur = a_ptr
        if b_ptr != self.b_cur:
            self.pb.set(1, _map_bytes(_b_map(b_ptr, dt, b_major, K, N, ldb, G, sb)))
            self.b_cur = b_ptr

    def grid(self, rtiles: int) -> int:
        """The persistent grid of a launch walking ``rtiles`` tile rows: a CTA per tile, at
        most one per SM."""
        return max(1, min(max(rtiles, 1) * self.grid_n, self.sms))

    def c_vec(self, out_ptr: int) -> int:
        """Whether C takes 16-byte vector stores at this base address."""
        return int(self.ldc % 8 == 0 and out_ptr % 16 == 0)

    def launch(self, sp: int, out_ptr: int, tab_ptr: int, rtiles: int) -> int:
        """Set the per-call parameters and launch on stream ``sp`` (the caller holds
        ``_LOCK`` and has set the maps); returns the grid."""
        grid, st, k = self.grid(rtiles), self.set, self.kern
        st["C"].value = out_ptr
        st["c_vec"].value = self.c_vec(out_ptr)
        st["gtab"].value = tab_ptr
        st["rtiles"].value = rtiles
        self.launch_kernel(self.fn, grid, 1, 1, k.threads, 1, 1, k.smem_bytes, sp, self.pb.address, 0)
        return grid


#: the kernel's scalar and pointer parameters (the two maps: 128-byte records, or pointers
#: to device arrays of maps in the per-group form)
_MAP_ARGS = ("tmA", "tmB", "tmAs", "tmBs")
_ARG_KINDS = {
    "C": "ptr",
    "M": "i32",
    "N": "i32",
    "K": "i32",
    "ldc": "i64",
    "c_vec": "i32",
    "batch": "i32",
    "ldcb": "i64",
    "gtab": "ptr",
    "G": "i32",
    "rtiles": "i32",
}
#: call signature -> :class:`_GroupedLaunch`
_LAUNCHES: Dict[Tuple[Any, ...], _GroupedLaunch] = {}


def _map_bytes(rec: Any) -> np.ndarray:
    """A tensor-map record as its 128 bytes (what a ``tmap`` parameter holds)."""
    return np.frombuffer(rec.tobytes(), dtype=np.uint8)


def _launch(
    a: _Arr,
    a_rows: int,
    a_ld: int,
    b: _Arr,
    out: Any,
    out_ptr: int,
    ldc: int,
    K: int,
    N: int,
    G: int,
    tab: Any,
    tab_ptr: int,
    rtiles: int,
    torch_mod: Any,
    config: GroupedConfig,
    maps: Optional[Tuple[str, int, int]] = None,
) -> None:
    """One launch; ``maps`` = (B's major, device address of the A maps, of the B maps) for
    the per-group-map kernel (then ``a`` and ``b`` are group 0's, for type checks only).
    The kernel, its compiled module and its packed parameters are kept per call signature
    (:class:`_GroupedLaunch`): a repeated call sets the addresses, the table and the tile
    rows, and launches."""
    from . import device

    ent = _entry(a, a_rows, a_ld, b, ldc, K, N, G, config, maps)
    cp = device.cupy()
    b_major, ldb, sb = ent.map_args[4], ent.map_args[6], ent.map_args[8]
    cfg, kern = ent.cfg, ent.kern
    grid = ent.grid(rtiles)
    if ent.launch_kernel is not None and cp.cuda.runtime.getDevice() == a.dev:
        sp = _stream(torch_mod, a.dev, cp)
        with _LOCK:
            if maps is not None:
                ent.set["tmAs"].value, ent.set["tmBs"].value = maps[1], maps[2]
            else:
                ent.set_maps(a.ptr, b.ptr)
            ent.launch(sp, out_ptr, tab_ptr, rtiles)
    else:  # CuPy's own launcher (no driver launchKernel, or another device current)
        with cp.cuda.Device(a.dev):
            if maps is not None:
                tma, tmb = np.uint64(maps[1]), np.uint64(maps[2])
            else:
                tma = _tensor_map(a.ptr, a.dtype, K, a_rows, a_ld, None)
                tmb = _b_map(b.ptr, b.dtype, b_major, K, N, ldb, G, sb)
            i32, i64 = np.int32, np.int64
            named = dict(
                tmA=tma,
                tmB=tmb,
                C=np.uint64(out_ptr),
                M=i32(a_rows),
                N=i32(N),
                K=i32(K),
                ldc=i64(ldc),
                c_vec=i32(ent.c_vec(out_ptr)),
                batch=i32(G),
                ldcb=i64(0),  # the groups' rows are disjoint parts of one stacked C
                gtab=np.uint64(tab_ptr),
                G=i32(G),
                rtiles=i32(rtiles),
            )
            if maps is not None:
                named.update(tmAs=named.pop("tmA"), tmBs=named.pop("tmB"))
            args = tuple(named[n] for n in ent.names)
            with _LOCK:
                if torch_mod is not None:
                    sp = torch_mod.cuda.current_stream(a.dev).cuda_stream
                    with cp.cuda.ExternalStream(sp, a.dev):
                        ent.rk((grid, 1, 1), (kern.threads, 1, 1), args, shared_mem=kern.smem_bytes)
                else:
                    ent.rk((grid, 1, 1), (kern.threads, 1, 1), args, shared_mem=kern.smem_bytes)
    last_grouped_launch.clear()
    last_grouped_launch.update(
        kernel=kern.name,
        groups=G,
        rtiles=rtiles,
        grid=grid,
        config=cfg,
        problem=ent.prob,
        table=tab,
        out=out,
        per_group_maps=maps is not None,
    )


def _entry(
    a: _Arr,
    a_rows: int,
    a_ld: int,
    b: _Arr,
    ldc: int,
    K: int,
    N: int,
    G: int,
    config: GroupedConfig,
    maps: Optional[Tuple[str, int, int]] = None,
) -> _GroupedLaunch:
    """The kept kernel and parameter block of a call signature (generated, proven and
    compiled on its first call), or the GemmInputError of a signature the kernel cannot
    take."""
    from . import device
    from .cache import compile_kernel

    if G > 1024:
        raise GemmInputError(
            f"grouped GEMM: {G} groups; the grouped kernel takes up to 1024 (split the call)"
        )
    cfg = config
    if G > cfg.max_groups:
        raise GemmInputError(
            f"grouped GEMM: {G} groups, the kernel resolves up to {cfg.max_groups}: pass "
            f"config=GroupedConfig(max_groups={1 << (G - 1).bit_length()})"
        )
    if a.dtype not in ("f16", "bf16") or b.dtype != a.dtype:
        raise GemmInputError(
            f"grouped GEMM: a is {a.dtype} and b is {b.dtype}: both float16 or both bfloat16 (CuPy: uint16 "
            'with dtype="bf16")'
        )
    if maps is None and ((a_ld * 2) % 16 or a.ptr % 16):
        raise GemmInputError(
            f"grouped GEMM: a's row stride {a_ld} (elements) and base address must be multiples of 16 bytes "
            "for the TMA: pad K to a multiple of 8 or make a .contiguous()"
        )
    if maps is None:
        b_major, ldb, sb = _b_layout(b, K, N)
    else:
        b_major, ldb, sb = maps[0], 0, 0
    cp = device.cupy()
    key = (cfg, a.dev, a.dtype, b_major, maps is not None, G, K, N, a_rows, a_ld, ldb, sb, ldc)
    ent = _LAUNCHES.get(key)
    if ent is None:
        cfg = replace(cfg, per_group_maps=maps is not None)  # the host decides the map form
        prob = GemmProblem("k", b_major, a.dtype)
        kern = generate_grouped(cfg, prob)
        with cp.cuda.Device(a.dev):
            rk = compile_kernel(kern)
            statics = dict(M=a_rows, N=N, K=K, ldc=ldc, batch=G, ldcb=0, G=G)
            margs = (a.dtype, K, a_rows, a_ld, b_major, N, ldb, G, sb)
            ent = _GroupedLaunch(kern, rk, cfg, prob, cp, statics, margs)
        if len(_LAUNCHES) >= 64:
            _LAUNCHES.clear()
        _LAUNCHES[key] = ent
    return ent


#: where the grouped kernel's contiguous form takes the warp-specialized base (128-row
#: tiles) instead of the ping-pong one (the plain rule's ping-pong pick,
#: :func:`~layoutproof.gpu.host.rule.pingpong_pick`: each consumer warpgroup on its own
#: 64-row tile, one warpgroup's epilogue under the other's main loop, a group's rows padded
#: to 64, the tiles walked in a raster of 16 tile rows): a long K (``k`` and more) and
#: groups of ``rows[0]`` to ``rows[1] - 1`` rows on average.  There each expert's B panel is
#: read by one to four 128-row tile rows against two to eight 64-row ones, and the operand
#: traffic of the long k-loop bounds the kernel (on an H200, bf16: qwen3-up, 128 rows a
#: group at K = 4096, 1.09-1.18x the time on the ping-pong base; with 256 rows a group at
#: K = 7168 the two bases are close: 64e-up 0.95-0.98x on the ping-pong base, 128e-up
#: 0.98-1.05x; bench/RESULTS.md).  The list form read through per-group maps and the
#: masked form follow the same rule (the masked form with its allocated rows, ``G max_m``:
#: its counts are on the device only).
GROUPED_RULE: Dict[str, Any] = {"k": 4096, "rows": (65, 512)}


def grouped_config(G: int, form: str, rows: int = 0, k: int = 0) -> GroupedConfig:
    """The grouped kernel's configuration for ``G`` groups of a ``form`` ("contiguous",
    "masked" or "maps") over ``rows`` stacked rows and a depth ``k``, where the call gives
    none: the base of :data:`GROUPED_RULE`, and the fewest halving steps that resolve
    ``G`` groups (one kernel per power of two).

    >>> grouped_config(8, "contiguous", 8192, 4096).key()
    'grouped8_ns_sm90_64x256x64_s5_g16_tma_pp'
    >>> grouped_config(128, "contiguous", 16384, 4096).key()
    'grouped128_ns_sm90_128x256x64_s4_g8_tma_ws'
    >>> grouped_config(100, "masked").max_groups, grouped_config(100, "masked", 100 * 128, 4096).bm
    (128, 128)
    """
    lo, hi = GROUPED_RULE["rows"]
    ws = k >= GROUPED_RULE["k"] and lo * G <= rows < hi * G
    base = HOPPER_DEFAULT if ws else pingpong_pick()
    return GroupedConfig(base=base, max_groups=max(8, 1 << (G - 1).bit_length()))


def _b_map(ptr: int, dt: str, b_major: str, K: int, N: int, ldb: int, G: int, sb: int) -> Any:
    """B's rank-3 tensor map (G experts ``sb`` elements apart), either major."""
    if b_major == "n":
        return _tensor_map(ptr, dt, N, K, ldb, (G, sb))
    return _tensor_map(ptr, dt, K, N, ldb, (G, sb))


def _stream(torch_mod: Any, dev: int, cp: Any) -> int:
    """The raw handle of the caller's current stream: torch's for tensors, CuPy's else."""
    if torch_mod is not None:
        return int(_raw_stream(torch_mod)(dev))
    return int(cp.cuda.get_current_stream().ptr)


_RAW_STREAM: List[Any] = []


def _raw_stream(torch_mod: Any) -> Any:
    if not _RAW_STREAM:
        from .torch_op import _raw_stream_fn

        _RAW_STREAM.append(_raw_stream_fn(torch_mod))
    return _RAW_STREAM[0]


def _empty(like: _Arr, shape: Tuple[int, ...]) -> Tuple[Any, int]:
    if like.torch:
        import torch

        o = torch.empty(shape, dtype=like.x.dtype, device=like.x.device)
        return o, int(o.data_ptr())
    from . import device

    cp = device.cupy()
    with cp.cuda.Device(like.dev):
        o = cp.empty(shape, dtype=like.x.dtype)
    return o, int(o.data.ptr)


def _torch() -> Any:
    import torch

    return torch


#: device copies of host-built group tables, keyed by (device, kind, tile height, sizes)
_TABLES: Dict[Tuple[Any, ...], Tuple[Any, int, int]] = {}


def _host_table(dev: int, tdev: Any, sz: np.ndarray, bm: int) -> Tuple[Any, int, int]:
    """The group table of host ``sizes`` (:func:`group_table`) on device ``dev`` (``tdev``:
    its torch device for a torch call, None for CuPy), and its exact tile-row count; cached
    by the sizes (a table is never written after its upload).  A torch table is copied from
    pinned memory without blocking the host (torch's pinned allocator keeps the source until
    the copy has run)."""
    if tdev is not None:
        _refuse_capture(
            _torch(),
            "grouped GEMM",
            "stack the groups' rows in one tensor and call gemm_moe with offs (device cumulative ends)",
        )
    key = (dev, tdev is not None, bm, sz.size, sz.tobytes())
    hit = _TABLES.get(key)
    if hit is not None:
        return hit
    ends = np.cumsum(sz)
    host_tab, rt = group_table(ends - sz, ends, bm)
    if tdev is not None:
        tab = _torch().from_numpy(host_tab).pin_memory().to(tdev, non_blocking=True)
        tab_ptr = int(tab.data_ptr())
    else:
        from . import device

        cp = device.cupy()
        with cp.cuda.Device(dev):
            tab = cp.asarray(host_tab)
        tab_ptr = int(tab.data.ptr)
    if len(_TABLES) >= 256:
        _TABLES.clear()
    _TABLES[key] = (tab, tab_ptr, rt)
    return tab, tab_ptr, rt


def _check_sizes(sizes: Any, G: int, T: int, what: str) -> np.ndarray:
    """Host ``sizes`` as int64: ``G`` non-negative integers summing to at most ``T``."""
    try:
        raw = np.asarray(list(sizes))
    except (TypeError, ValueError, RuntimeError) as e:
        raise GemmInputError(f"{what}: sizes must be {G} host ints ({type(e).__name__}: {e})") from None
    if raw.size and raw.dtype.kind not in "iu":
        raise GemmInputError(f"{what}: sizes must be integers, got {raw.dtype} values {raw.tolist()[:8]}")
    sz = raw.astype(np.int64)
    if sz.shape != (G,) or (sz < 0).any() or int(sz.sum()) > T:
        raise GemmInputError(
            f"{what}: sizes must be {G} non-negative ints summing to at most T = {T}, got "
            f"{sz.tolist()[:8]}{'...' if sz.size > 8 else ''} (sum {int(sz.sum())})"
        )
    return sz


def _refuse_capture(torch_mod: Any, what: str, fix: str = "") -> None:
    """Host sizes under CUDA-graph capture are refused: the graph would read a table kept
    (or not) by this module, not one of its own."""
    if torch_mod is not None and torch_mod.cuda.is_current_stream_capturing():
        raise GemmInputError(
            f"{what}: host sizes under CUDA-graph capture; "
            + (
                fix
                or "pass offs (the cumulative group ends, a device int32 tensor) so that each replay "
                "reads the offsets it is given"
            )
        )


class _MoeCall:
    """A torch call signature of :func:`gemm_moe` or :func:`gemm_moe_masked` whose checks
    have passed (shapes, strides, types, devices and 16-byte alignments: the key of
    ``_CALLS``): a repeated call allocates the output (and, for device offsets, the table),
    launches the table kernel and the grouped kernel from kept parameter blocks on torch's
    current stream, and returns.  Host sizes (which change from call to call) are checked
    and their table looked up per call."""

    def __init__(
        self,
        ent: _GroupedLaunch,
        torch_mod: Any,
        tdev: Any,
        out_shape: Tuple[int, ...],
        out_dtype: Any,
        rows: int,
        G: int,
        src: Optional[Tuple[Any, int, int, int]],
        rtiles: int,
    ) -> None:
        from . import device
        from .plan import param_setters
        from .rule import ParamBuffer

        cp = device.cupy()
        self.ent, self.torch, self.tdev, self.dev = ent, torch_mod, tdev, int(tdev.index)
        self.out_shape, self.out_dtype, self.rows, self.G = out_shape, out_dtype, rows, G
        self.rtiles, self.bm = rtiles, ent.cfg.bm
        self.get_device = cp.cuda.runtime.getDevice
        self.stream = _raw_stream(torch_mod)
        self.capturing = torch_mod.cuda.is_current_stream_capturing
        self.tables: Dict[Tuple[Any, ...], Tuple[Any, int, int, int]] = {}
        self.tl: Optional[_TableLaunch] = None
        self.sl: Any = None
        if src is None and G <= SIZES_BY_VALUE:  # host sizes: the table built from them by value
            lk, fn = _sizes_kernel(self.dev, cp)
            if lk is not None:
                self.sl = (lk, fn)
                self.spb = ParamBuffer((f"i32x{SIZES_BY_VALUE}", "i32", "i32", "ptr"))
                self.spb.set(1, G)
                self.spb.set(2, self.bm)
                self.sizes_view = self.spb.view(0)
                self.sset = param_setters(self.spb, (3,))[0]
        if src is not None:  # the table kernel: its own block, the constants set once
            tl, kind, arg, _ = src
            self.tl = tl
            self.tpb = ParamBuffer(("ptr", "i32", "i32", "i32", "i32", "ptr"))
            for i, v in ((1, G), (2, self.bm), (3, kind), (4, arg)):
                self.tpb.set(i, v)
            self.tset = param_setters(self.tpb, (0, 5))
        k = ent.kern
        self.info = dict(kernel=k.name, groups=G, config=ent.cfg, problem=ent.prob, per_group_maps=False)

    def run(self, a: Any, b: Any, src: Any, sizes: Any) -> Any:
        """The product, or None where the direct launch does not apply (another device
        current): the caller takes the general path."""
        dev = self.dev
        if self.get_device() != dev:
            return None
        torch, ent, G = self.torch, self.ent, self.G
        sp = self.stream(dev)
        build: Optional[np.ndarray] = None  # host sizes whose table a launch builds first
        if self.tl is not None:  # device offsets or counts: the table kernel reads them
            tab = torch.empty(table_entries(G), dtype=torch.int32, device=self.tdev)
            tab_ptr, rt = int(tab.data_ptr()), self.rtiles
        else:
            if self.capturing():
                _refuse_capture(torch, "gemm_moe")
            key = tuple(sizes) if isinstance(sizes, (list, tuple)) else None
            hit = self.tables.get(key) if key is not None else None
            if hit is None or hit[3] != sp:  # (a table built on another stream: built again)
                sz = _check_sizes(sizes, G, self.rows, "gemm_moe")
                if self.sl is not None:
                    tab = torch.empty(table_entries(G), dtype=torch.int32, device=self.tdev)
                    rt = int(((sz + (self.bm - 1)) // self.bm).sum())
                    hit, build = (tab, int(tab.data_ptr()), rt, sp), sz
                else:
                    hit = _host_table(dev, self.tdev, sz, self.bm) + (sp,)
                if key is not None and hit[2]:
                    if len(self.tables) >= 64:
                        self.tables.clear()
                    self.tables[key] = hit
            tab, tab_ptr, rt = hit[0], hit[1], hit[2]
        out = torch.empty(self.out_shape, dtype=self.out_dtype, device=self.tdev)
        if rt == 0:
            return out
        with _LOCK:
            if self.tl is not None:
                self.tset[0].value = int(src.data_ptr())
                self.tset[1].value = tab_ptr
                self.tl.lk(self.tl.fn, 1, 1, 1, 1024, 1, 1, 0, sp, self.tpb.address, 0)
            elif build is not None:
                self.sizes_view[:G] = build
                self.sset.value = tab_ptr
                self.sl[0](self.sl[1], 1, 1, 1, SIZES_BY_VALUE, 1, 1, 0, sp, self.spb.address, 0)
            ent.set_maps(int(a.data_ptr()), int(b.data_ptr()))
            grid = ent.launch(sp, int(out.data_ptr()), tab_ptr, rt)
        last_grouped_launch.clear()
        last_grouped_launch.update(self.info, rtiles=rt, grid=grid, table=tab, out=out)
        return out


#: torch call signature of gemm_moe / gemm_moe_masked -> :class:`_MoeCall`
_CALLS: Dict[Tuple[Any, ...], _MoeCall] = {}


def _call_key(a: Any, b: Any, src: Any, form: str, dtype: Optional[str], config: Any) -> Any:
    """The signature of a call on torch tensors (None for other operands): what every check
    of the general path reads."""
    try:
        k = (form, tensor_sig(a), tensor_sig(b), dtype, config, None if src is None else tensor_sig(src))
        hash(k)
        return k
    except (AttributeError, TypeError):
        return None


def _keep_call(key: Any, call: _MoeCall) -> None:
    if len(_CALLS) >= 256:
        _CALLS.pop(next(iter(_CALLS)))
    _CALLS[key] = call


# ============================================================================ the entries
def gemm_moe(
    a: Any,
    b: Any,
    offs: Any = None,
    *,
    sizes: Optional[Sequence[int]] = None,
    dtype: Optional[str] = None,
    config: Optional[GroupedConfig] = None,
) -> Any:
    """C = A @ B per group, groups of rows of the stacked ``a`` (T x K): group ``g`` owns rows
    ``[offs[g-1], offs[g])`` (``offs[-1]`` taken as 0) and multiplies them by ``b[g]``
    (``b``: G x K x N, either of its last two dimensions contiguous).  Give ``offs`` (a 1-D
    contiguous int32 device array of G cumulative ends, ``torch._grouped_mm``'s form) or
    ``sizes`` (G host ints).  Returns the stacked result (T x N, ``a``'s kind and type).

    Raises:
        GemmInputError: a CPU tensor, operands on different devices, mismatched K or
            group counts, an offsets array that is not 1-D contiguous int32, sizes that
            are not integers or do not sum to at most T, host sizes under CUDA-graph
            capture (pass ``offs``), strides the TMA cannot take.
    """
    key = _call_key(a, b, offs, "offs" if offs is not None else "sizes", dtype, config) if _CALLS else None
    call = _CALLS.get(key) if key is not None and (offs is None) != (sizes is None) else None
    if call is not None:
        out = call.run(a, b, offs, sizes)
        if out is not None:
            return out
    bf = dtype == "bf16"
    A, B = _arr(a, "a", bf), _arr(b, "b", bf)
    ops = [("a", A), ("b", B)]
    if offs is not None and sizes is not None:
        raise GemmInputError("gemm_moe: pass offs (device) or sizes (host), not both")
    if offs is None and sizes is None:
        raise GemmInputError("gemm_moe: pass offs (the cumulative group ends, device int32) or sizes")
    O = _arr(offs, "offs", False) if offs is not None else None
    if O is not None:
        ops.append(("offs", O))
    dev, is_torch = _check_same(ops)
    if len(A.shape) != 2 or len(B.shape) != 3:
        raise GemmInputError(
            f"gemm_moe: a must be 2-D (T, K) and b 3-D (G, K, N), got {A.shape} and {B.shape}"
        )
    T, K = A.shape
    G, Kb, N = B.shape
    if Kb != K:
        raise GemmInputError(
            f"gemm_moe: a has K = {K}, b has K = {Kb}: the groups share one K (a is (T, K) and b (G, K, N); "
            "a (G, N, K) weight goes in as b.transpose(1, 2))"
        )
    if A.strides[1] != 1:
        raise GemmInputError(f"gemm_moe: a's rows must be contiguous (strides {A.strides}): a.contiguous()")
    if G < 1 or N < 1 or K < 1:
        raise GemmInputError(f"gemm_moe: empty extents G={G}, K={K}, N={N}")
    cfg = config or grouped_config(G, "contiguous", T, K)
    bm = cfg.bm
    if O is not None and (
        O.dtype != "i32" or len(O.shape) != 1 or O.shape[0] != G or (O.shape[0] > 1 and O.strides[0] != 1)
    ):
        raise GemmInputError(
            f"gemm_moe: offs must be a 1-D contiguous int32 array of G = {G} cumulative ends, got shape "
            f"{O.shape}, strides {O.strides}, {O.dtype} (offs.to(torch.int32).contiguous())"
        )
    sz = _check_sizes(sizes, G, T, "gemm_moe") if sizes is not None else None
    _check_types(A, B)
    torch_mod = _torch() if is_torch else None
    if sz is not None:
        _refuse_capture(torch_mod, "gemm_moe")
    rt_offs = upper_tile_rows("contiguous", G, T, bm)  # moe_table's (the exact count: on the device)
    if is_torch and T > 0:  # a kept call signature: checked once, launched directly from now on
        call = _torch_call(A, T, A.strides[0], B, N, K, G, (T, N), O, 0, 0, rt_offs, torch_mod, cfg)
        if call is not None:
            if key is None:
                key = _call_key(a, b, offs, "offs" if offs is not None else "sizes", dtype, config)
            if key is not None:
                _keep_call(key, call)
            out = call.run(a, b, offs, sizes)
            if out is not None:
                return out
    if O is not None:
        tab, tab_ptr = _device_table(O, G, bm, 0, 0, torch_mod)
        rt = rt_offs
    elif sz is not None:
        tab, tab_ptr, rt = _host_table(A.dev, A.x.device if is_torch else None, sz, bm)
    else:  # (refused above: one of offs and sizes is given)
        raise GemmInputError("gemm_moe: pass offs (the cumulative group ends, device int32) or sizes")
    out, optr = _empty(A, (T, N))
    if T == 0 or rt == 0:
        return out
    _launch(A, T, A.strides[0], B, out, optr, N, K, N, G, tab, tab_ptr, rt, torch_mod, cfg)
    return out


def _torch_call(
    A: _Arr,
    rows: int,
    a_ld: int,
    B: _Arr,
    N: int,
    K: int,
    G: int,
    out_shape: Tuple[int, ...],
    src: Optional[_Arr],
    kind: int,
    arg: int,
    rtiles: int,
    torch_mod: Any,
    config: GroupedConfig,
) -> Optional[_MoeCall]:
    """The kept call of a checked torch signature, where the driver's ``launchKernel`` is
    there and the operands' device is current (else None: the general path)."""
    from . import device

    cp = device.cupy()
    ent = _entry(A, rows, a_ld, B, N, K, N, G, config)
    if ent.launch_kernel is None or cp.cuda.runtime.getDevice() != A.dev:
        return None
    tsrc = None
    if src is not None:
        tl = _table_kernel(src.dev, cp)
        if tl.lk is None:
            return None
        tsrc = (tl, kind, arg, 0)
    return _MoeCall(ent, torch_mod, A.x.device, out_shape, A.x.dtype, rows, G, tsrc, rtiles)


def gemm_moe_masked(
    a: Any, b: Any, masked_m: Any, *, dtype: Optional[str] = None, config: Optional[GroupedConfig] = None
) -> Any:
    """The masked form: ``a`` (G x max_m x K, rows contiguous, the groups ``max_m`` rows
    apart), ``b`` (G x K x N), ``masked_m`` (G int32 on the device): rows ``[0,
    min(masked_m[g], max_m))`` of group ``g`` are multiplied by ``b[g]``.  Returns (G x
    max_m x N); the rows past a group's count are left as allocated (not written).

    Raises:
        GemmInputError: as :func:`gemm_moe`.
    """
    key = _call_key(a, b, masked_m, "masked", dtype, config) if _CALLS else None
    call = _CALLS.get(key) if key is not None else None
    if call is not None:
        out = call.run(a, b, masked_m, None)
        if out is not None:
            return out
    bf = dtype == "bf16"
    A, B, Mk = _arr(a, "a", bf), _arr(b, "b", bf), _arr(masked_m, "masked_m", False)
    dev, is_torch = _check_same([("a", A), ("b", B), ("masked_m", Mk)])
    if len(A.shape) != 3 or len(B.shape) != 3:
        raise GemmInputError(
            f"gemm_moe_masked: a must be (G, max_m, K), b (G, K, N), got {A.shape}, {B.shape}"
        )
    G, max_m, K = A.shape
    Gb, Kb, N = B.shape
    if Gb != G or Kb != K:
        raise GemmInputError(f"gemm_moe_masked: a {A.shape} and b {B.shape} disagree on G or K")
    if A.strides[2] != 1 or (max_m > 1 and A.strides[0] != max_m * A.strides[1]):
        raise GemmInputError(
            f"gemm_moe_masked: a's groups must be stacked rows (strides {A.strides}): a.contiguous()"
        )
    if Mk.dtype != "i32" or Mk.shape != (G,) or (G > 1 and Mk.strides[0] != 1):
        raise GemmInputError(
            f"gemm_moe_masked: masked_m must be a 1-D contiguous int32 array of G = {G} counts, got "
            f"{Mk.shape}, {Mk.dtype} (masked_m.to(torch.int32).contiguous())"
        )
    _check_types(A, B)
    torch_mod = _torch() if is_torch else None
    cfg = config or grouped_config(G, "masked", G * max_m, K)
    bm = cfg.bm
    rt = upper_tile_rows("masked", G, max_m, bm)  # masked_table's
    if is_torch and max_m > 0:  # a kept call signature, as gemm_moe's
        call = _torch_call(
            A, G * max_m, A.strides[1], B, N, K, G, (G, max_m, N), Mk, 1, max_m, rt, torch_mod, cfg
        )
        if call is not None:
            if key is None:
                key = _call_key(a, b, masked_m, "masked", dtype, config)
            if key is not None:
                _keep_call(key, call)
            out = call.run(a, b, masked_m, None)
            if out is not None:
                return out
    tab, tab_ptr = _device_table(Mk, G, bm, 1, max_m, torch_mod)
    out, optr = _empty(A, (G, max_m, N))
    if max_m == 0:
        return out
    _launch(A, G * max_m, A.strides[1], B, out, optr, N, K, N, G, tab, tab_ptr, rt, torch_mod, cfg)
    return out


def consecutive(ptrs: Sequence[int], counts: Sequence[int], unit: int) -> bool:
    """Whether blocks at byte addresses ``ptrs``, block ``i`` holding ``counts[i]`` units of
    ``unit`` bytes, lie one after another in one buffer (``ptr[i] = ptr[0] + unit *
    sum(counts[:i])``; empty blocks are not looked at).

    >>> consecutive([1000, 1000 + 6 * 4, 1000 + 9 * 4], [6, 3, 2], 4)
    True
    >>> consecutive([1000, 1100], [6, 3], 4)
    False
    """
    off = 0
    for p, c in zip(ptrs, counts):
        if c and p != ptrs[0] + off * unit:
            return False
        off += c
    return True


def _base_alloc(a: _Arr) -> Tuple[int, int]:
    """(address, bytes) of the allocation that holds ``a`` (torch: its storage; CuPy: its
    memory block)."""
    if a.torch:
        st = a.x.untyped_storage()
        return int(st.data_ptr()), int(st.nbytes())
    mem = a.x.data.mem
    return int(mem.ptr), int(mem.size)


def _stacked_view(xs: Sequence[Any], what: str, arrs: Optional[Sequence[_Arr]] = None) -> Any:
    """``xs`` as one stacked array without a copy when they already are consecutive parts
    of one buffer (one allocation, so the view stays inside what its first block's
    storage owns), else None."""
    arrs = list(arrs) if arrs is not None else [_arr(x, what, True) for x in xs]
    x0, a0 = xs[0], arrs[0]
    it = 2
    if not all(a.strides == a0.strides for a in arrs):
        return None
    view: Optional[Tuple[Tuple[int, ...], Tuple[int, ...]]] = None
    if what == "a":
        rows = [a.shape[0] for a in arrs]
        if a0.strides[1] == 1 and consecutive([a.ptr for a in arrs], rows, a0.strides[0] * it):
            view = ((sum(rows), a0.shape[1]), a0.strides)
    elif len(arrs) > 1:
        d = arrs[1].ptr - a0.ptr
        if d > 0 and d % it == 0 and all(a.ptr == a0.ptr + i * d for i, a in enumerate(arrs)):
            view = ((len(arrs),) + a0.shape, (d // it,) + a0.strides)
    if view is None:
        return None
    try:  # consecutive addresses, and one allocation (checked last: it costs a call per block)
        allocs = {_base_alloc(a) for a in arrs}
    except AttributeError:  # an array that does not say which allocation holds it
        return None
    if len(allocs) != 1:
        return None
    if a0.torch:
        return x0.as_strided(view[0], view[1])
    from . import device

    cp = device.cupy()
    return cp.ndarray(view[0], x0.dtype, x0.data, tuple(s * it for s in view[1]))


def _stack(xs: Sequence[Any], what: str) -> Any:
    """``xs`` as one stacked array: a view when they already are consecutive parts of one
    buffer (the A row blocks one after another with one row stride; the B matrices one
    expert stride apart), else one copy."""
    view = _stacked_view(xs, what)
    if view is not None:
        return view
    if _arr(xs[0], what, True).torch:
        return _torch().cat(list(xs), 0) if what == "a" else _torch().stack(list(xs), 0)
    from . import device

    cp = device.cupy()
    return cp.concatenate(list(xs), 0) if what == "a" else cp.stack(list(xs), 0)


#: device arrays of per-group tensor maps, keyed by everything their contents depend on
_GROUP_MAPS: Dict[Tuple[Any, ...], Any] = {}


def group_map_plan(
    As: Sequence["_Arr"], Bs: Sequence["_Arr"], K: int, N: int
) -> Tuple[Optional[Tuple[str, List[Tuple[int, int, int, int]], List[Tuple[int, int, int]]]], str]:
    """The per-group tensor maps of the pointer-array form, or None and the reason they
    cannot be built (then the operands are copied into one stacked buffer).

    Group ``g`` owns rows ``[rbeg_g, rend_g)`` of the kernel's stacked row space (the prefix
    of the row counts).  Its A map is the proven map of :func:`_tensor_map` with extents
    ``(K, rend_g)``, row stride ``lda_g`` and base ``a_g - rbeg_g lda_g`` (elements): row
    ``r`` of the row space is row ``r - rbeg_g`` of ``a_g``.  The kernel reads map ``g`` only
    for tiles of group ``g`` (:func:`~layoutproof.gpu.kernels.grouped.prove_group_cover`:
    a non-empty tile of group ``g`` starts at or after ``rbeg_g``), and the map's extent
    zero-fills rows from ``rend_g`` on, so every row it reads is one of ``a_g``'s.  Its B map
    is the rank-3 map of the stacked form with ``G`` experts ``bs_g`` apart and base ``b_g -
    g bs_g``: the kernel reads it at expert ``g`` only
    (:func:`~layoutproof.gpu.kernels.grouped.check_group_coordinates`), which is ``b_g``.

    Returns ``(b_major, [(A base, rbeg, rend, lda)], [(B base, ldb, bs)])`` in bytes for
    the bases, elements for the strides.
    """
    it = 2
    majors = set()
    amaps: List[Tuple[int, int, int, int]] = []
    bmaps: List[Tuple[int, int, int]] = []
    beg = 0
    live = next((a for a in As if a.shape[0]), None)
    for g, (a, b) in enumerate(zip(As, Bs)):
        m = a.shape[0]
        if m == 0 and live is not None:  # an empty group's map is never read (it has no tile)
            a = live
        lda = a.strides[0] if a.shape[0] > 1 else -(-K // 8) * 8
        if m and (a.strides[1] != 1 and K > 1):
            return None, f"a_list[{g}] has no contiguous row (strides {a.strides}): the TMA reads rows"
        if m and ((lda * it) % 16 or a.ptr % 16 or lda < K):
            return None, (
                f"a_list[{g}]: row stride {lda} elements or base address not a multiple of 16 bytes "
                "(the TMA's global stride and address alignment)"
            )
        s0, s1 = b.strides
        if s1 == 1 and (s0 >= N or K == 1):
            major, ldb = "n", max(s0, N)
        elif s0 == 1 and (s1 >= K or N == 1):
            major, ldb = "k", max(s1, K)
        else:
            return (
                None,
                f"b_list[{g}] (K, N) = {b.shape} with strides {b.strides} has no contiguous dimension",
            )
        majors.add(major)
        if (ldb * it) % 16 or b.ptr % 16:
            return None, (
                f"b_list[{g}]: leading dimension {ldb} elements or base address not a multiple of 16 bytes"
            )
        bs = ldb * (K if major == "n" else N)
        abase = a.ptr - (beg * lda * it if m else 0)
        bbase = b.ptr - g * bs * it
        if abase < 0 or bbase < 0:
            return None, f"group {g}: its map's base would lie below address 0"
        amaps.append((abase, beg, beg + m, lda))
        bmaps.append((bbase, ldb, bs))
        beg += m
    if len(majors) > 1:
        return None, "the B matrices mix N-major and K-major layouts (one kernel reads one major)"
    return (majors.pop() if majors else "n", amaps, bmaps), ""


def _group_maps_device(
    plan: Tuple[str, List[Tuple[int, int, int, int]], List[Tuple[int, int, int]]],
    dt: str,
    K: int,
    N: int,
    like: "_Arr",
) -> Tuple[Any, int, int]:
    """The device arrays of the plan's A and B maps (G records of 128 bytes each), cached
    by the plan (their contents depend on nothing else)."""
    major, amaps, bmaps = plan
    G = len(amaps)
    key = (like.dev, like.torch, dt, K, N, major, tuple(amaps), tuple(bmaps))
    hit = _GROUP_MAPS.get(key)
    if hit is not None:
        return hit
    recs = np.zeros(2 * G, dtype=_TMAP_REC)
    for g, (abase, rb, re_, lda) in enumerate(amaps):
        # an empty group's map: one row of another group's A (never read: no tile)
        recs[g] = _tensor_map(abase, dt, K, re_ if re_ > rb else 1, lda, None)
    for g, (bbase, ldb, bs) in enumerate(bmaps):
        if major == "n":
            recs[G + g] = _tensor_map(bbase, dt, N, K, ldb, (G, bs))
        else:
            recs[G + g] = _tensor_map(bbase, dt, K, N, ldb, (G, bs))
    raw = recs.view(np.uint8)
    if like.torch:
        buf = _torch().from_numpy(raw.copy()).to(like.x.device)
        base = int(buf.data_ptr())
    else:
        from . import device

        cp = device.cupy()
        with cp.cuda.Device(like.dev):
            buf = cp.asarray(raw)
        base = int(buf.data.ptr)
    if base % 64:
        raise GemmInputError(f"grouped GEMM: the tensor-map array at {base:#x} is not 64-byte aligned")
    if len(_GROUP_MAPS) >= 64:
        _GROUP_MAPS.clear()
    out = (buf, base, base + 128 * G)
    _GROUP_MAPS[key] = out
    return out


def gemm_grouped(
    a_list: Sequence[Any],
    b_list: Sequence[Any],
    *,
    dtype: Optional[str] = None,
    config: Optional[GroupedConfig] = None,
) -> List[Any]:
    """``[a_list[g] @ b_list[g]]`` in one launch: every ``a_list[g]`` (M_g x K) and
    ``b_list[g]`` (K x N) share K and N (M_g may be 0).  Every group is read in place --
    as one stacked operand where the blocks already are one buffer, else through per-group
    tensor maps (:func:`gemm_grouped_stacked` says when a copy remains); the results are
    views of one stacked output.  Per-group K or N is refused (by name).

    Raises:
        GemmInputError: empty or unequal lists, per-group K or N, and as :func:`gemm_moe`.
    """
    stacked = gemm_grouped_stacked(a_list, b_list, dtype=dtype, config=config)
    sizes = [int(x.shape[0]) for x in a_list]
    if type(stacked).__module__.split(".")[0] == "torch":
        return list(stacked.split(sizes, 0))  # views, split in one call
    ends = np.cumsum(sizes)
    return [stacked[int(e) - m : int(e)] for m, e in zip(sizes, ends)]


def gemm_grouped_stacked(
    a_list: Sequence[Any],
    b_list: Sequence[Any],
    *,
    dtype: Optional[str] = None,
    config: Optional[GroupedConfig] = None,
) -> Any:
    """:func:`gemm_grouped`'s results stacked: one (sum M_g) x N array, group ``g``'s rows
    after group ``g - 1``'s.  How the operands are read: A blocks that are consecutive rows
    of one buffer and B matrices one expert stride apart as one stacked operand each (no
    copy); else each group through its own tensor maps (:func:`group_map_plan`, no copy);
    only where a group's layout cannot be a tensor map (no contiguous dimension, a stride or
    address off the TMA's 16-byte grid, B matrices of both majors) are the operands copied
    into one stacked buffer (``last_grouped_launch["copied"]`` then says why).

    Raises:
        GemmInputError: as :func:`gemm_grouped`.
    """
    if len(a_list) != len(b_list) or not a_list:
        raise GemmInputError(
            f"gemm_grouped: {len(a_list)} A matrices and {len(b_list)} B matrices: one of each per group"
        )
    bf = dtype == "bf16"
    As = [_arr(x, f"a_list[{i}]", bf) for i, x in enumerate(a_list)]
    Bs = [_arr(x, f"b_list[{i}]", bf) for i, x in enumerate(b_list)]
    _check_same(
        [(f"a_list[{i}]", x) for i, x in enumerate(As)] + [(f"b_list[{i}]", x) for i, x in enumerate(Bs)]
    )
    if any(len(x.shape) != 2 for x in As + Bs):
        raise GemmInputError("gemm_grouped: every A and B must be 2-D")
    K, N = Bs[0].shape
    for i, (x, y) in enumerate(zip(As, Bs)):
        if x.shape[1] != K or y.shape != (K, N):
            raise GemmInputError(
                f"gemm_grouped: group {i} is {x.shape} @ {y.shape}, group 0 is (M, {K}) @ ({K}, {N}): the "
                "grouped kernel takes one K and one N for all groups (mismatched K or N: one gemm per group)"
            )
    sizes = [x.shape[0] for x in As]
    ends = np.cumsum(sizes)
    a_view = _stacked_view(a_list, "a", As)
    b_view = _stacked_view(b_list, "b", Bs) if len(b_list) > 1 else None
    if a_view is not None and b_view is not None:  # already one stacked A and B: one map each
        last_grouped_launch["copied"] = ""
        return gemm_moe(a_view, b_view, sizes=sizes, dtype=dtype, config=config)
    plan, why = group_map_plan(As, Bs, K, N)
    last_grouped_launch["copied"] = why if plan is None else ""
    if plan is None:  # a layout the TMA cannot read in place (``why``): one stacked copy
        a = a_view if a_view is not None else _stack(list(a_list), "a")
        b = b_view if b_view is not None else _stack(list(b_list), "b")
        c = gemm_moe(a, b, sizes=sizes, dtype=dtype, config=config)
        last_grouped_launch["copied"] = why
        return c
    A0, B0 = As[0], Bs[0]
    _check_types(A0, B0)
    for i, (x, y) in enumerate(zip(As, Bs)):
        if x.dtype != A0.dtype or y.dtype != A0.dtype:
            raise GemmInputError(
                f"gemm_grouped: group {i} is {x.dtype} @ {y.dtype}, group 0 {A0.dtype}: one type for "
                "all groups"
            )
    T = int(ends[-1]) if len(ends) else 0
    is_torch = A0.torch
    torch_mod = _torch() if is_torch else None
    out, optr = _empty(A0, (T, N))
    if T == 0:
        return out
    tdev = A0.x.device if is_torch else None
    cfg = config or grouped_config(len(sizes), "maps", T, K)
    tab, tab_ptr, rt = _host_table(A0.dev, tdev, np.asarray(sizes, dtype=np.int64), cfg.bm)
    keep, pa, pb = _group_maps_device(plan, A0.dtype, K, N, A0)
    _launch(A0, T, K, B0, out, optr, N, K, N, len(sizes), tab, tab_ptr, rt, torch_mod, cfg, (plan[0], pa, pb))
    last_grouped_launch.update(maps=keep, copied="")
    return out


def gemm_array(
    a_list: Sequence[Any],
    b_list: Sequence[Any],
    *,
    dtype: Optional[str] = None,
    config: Optional[GroupedConfig] = None,
) -> List[Any]:
    """The pointer-array batched product (CUTLASS's GemmArray): ``a_list[i] @ b_list[i]``
    for matrices of one shape M x K and K x N anywhere in memory, through the grouped kernel
    (every group M rows).

    Raises:
        GemmInputError: matrices of different shapes, and as :func:`gemm_grouped`.
    """
    shapes = {tuple(x.shape) for x in a_list}
    if len(shapes) > 1:
        raise GemmInputError(
            f"gemm_array: the A matrices have shapes {sorted(shapes)[:4]}: one shape "
            "(gemm_grouped takes per-group M)"
        )
    return gemm_grouped(a_list, b_list, dtype=dtype, config=config)
