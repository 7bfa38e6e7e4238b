"""The CUDA device as the host path sees it: CuPy (imported on first use and checked once),
the device's name, compute capability and SM count (read once per device), and whether
cuda-python can encode TMA tensor maps.

Everything here is looked up through this module's attributes (``device.cupy()``,
``device.tma_available()``), so a test can stand a fake CuPy or a missing cuda-python in
for the real ones in one place.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any, Dict, List, Tuple

from ..errors import NoGPUError
from .rule import DeviceFacts

__all__ = [
    "cupy",
    "gpu_available",
    "tma_available",
    "device_facts",
    "sm_count",
    "facts",
    "external_array",
    "cache_dir",
]

_CUPY: List[Any] = []


def cache_dir() -> Path:
    """Where kernels, autotuner results and the native launcher are kept on disk
    (``$LAYOUTPROOF_CACHE``, else ``~/.cache/layoutproof``)."""
    d = os.environ.get("LAYOUTPROOF_CACHE")
    return Path(d) if d else Path.home() / ".cache" / "layoutproof"


def cupy() -> Any:
    """CuPy, once it has been seen to import and to see a device (checked once)."""
    if _CUPY:
        return _CUPY[0]
    try:
        import cupy as cp
    except Exception as e:  # ImportError, or a CUDA library that fails to load
        raise NoGPUError(f"layoutproof.gpu needs CuPy with a CUDA device: {e}") from None
    try:
        if cp.cuda.runtime.getDeviceCount() < 1:
            raise NoGPUError("layoutproof.gpu: no CUDA device is visible")
    except NoGPUError:
        raise
    except Exception as e:
        raise NoGPUError(f"layoutproof.gpu: no usable CUDA device ({e})") from None
    _CUPY.append(cp)
    return cp


def gpu_available() -> bool:
    """True when CuPy imports and sees at least one CUDA device."""
    try:
        cupy()
        return True
    except NoGPUError:
        return False


@functools.cache
def tma_available() -> bool:
    """True when cuda-python's driver bindings (``cuda.bindings.driver``) can encode tensor
    maps; without them the wgmma kernel loads with cp.async."""
    try:
        from cuda.bindings import driver  # noqa: F401
    except Exception:
        return False
    return True


_DEVICE_FACTS: Dict[int, Tuple[str, str]] = {}


def device_facts(cp: Any) -> Tuple[str, str]:
    """(name, compute capability) of the current device, read once per device (the CUDA
    property query costs far more than a kernel launch)."""
    dev = cp.cuda.Device().id
    found = _DEVICE_FACTS.get(dev)
    if found is None:
        name = cp.cuda.runtime.getDeviceProperties(dev)["name"]
        name = name.decode() if isinstance(name, bytes) else str(name)
        found = _DEVICE_FACTS[dev] = (name, cp.cuda.Device(dev).compute_capability)
    return found


@functools.cache
def _sm_count_of(dev: int) -> int:
    return int(cupy().cuda.Device(dev).attributes["MultiProcessorCount"])


def sm_count(cp: Any) -> int:
    """The current device's SM count (read once per device)."""
    return _sm_count_of(cp.cuda.Device().id)


def launch_kernel(cp: Any) -> Any:
    """CuPy's ``driver.launchKernel`` (``cuLaunchKernel`` from a packed parameter block: the
    plans' direct launch), or None where its driver module has none."""
    return getattr(getattr(cp.cuda, "driver", None), "launchKernel", None)


_DRIVER: Dict[str, Any] = {}  # the driver's cuLaunchKernelEx and its structures, made once

#: CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
_PROGRAMMATIC = 6
#: CU_LAUNCH_ATTRIBUTE_COOPERATIVE: every CTA of the grid resident at once (or the launch fails)
_COOPERATIVE = 2


def launch_structs() -> Tuple[Any, Any]:
    """The ctypes types of the driver's ``CUlaunchAttribute`` (an id, then a 64-byte value
    union) and ``CUlaunchConfig``, made once."""
    if "structs" not in _DRIVER:
        import ctypes

        class _Attr(ctypes.Structure):
            _fields_ = [("id", ctypes.c_uint32), ("pad", ctypes.c_char * 4), ("value", ctypes.c_char * 64)]

        class _Cfg(ctypes.Structure):
            _fields_ = [
                ("grid", ctypes.c_uint * 3),
                ("block", ctypes.c_uint * 3),
                ("smem", ctypes.c_uint),
                ("stream", ctypes.c_void_p),
                ("attrs", ctypes.c_void_p),
                ("num_attrs", ctypes.c_uint),
            ]

        _DRIVER["structs"] = (_Attr, _Cfg)
    return _DRIVER["structs"]


def _launch_ex() -> Any:
    """``(cuLaunchKernelEx, attribute type, config type)`` from the CUDA driver library, or
    None where it cannot be loaded (no driver, or one without ``cuLaunchKernelEx``)."""
    if "ex" not in _DRIVER:
        import ctypes

        try:
            fn = ctypes.CDLL("libcuda.so.1").cuLaunchKernelEx
            fn.argtypes = [ctypes.c_void_p] * 4
            fn.restype = ctypes.c_int
            _DRIVER["ex"] = (fn, *launch_structs())
        except (OSError, AttributeError):
            _DRIVER["ex"] = None
    return _DRIVER["ex"]


def _native_maker(launch_ex: Any) -> Any:
    """The native launcher's ``make`` for the driver's ``cuLaunchKernelEx`` (``launch_ex``,
    its ctypes function), made once; None where the extension is not available
    (:func:`~layoutproof.gpu.host.native.status` says why)."""
    kept = _DRIVER.get("native")
    if kept is None or kept[0] is not launch_ex:
        import ctypes

        from . import native

        try:
            entry = ctypes.cast(launch_ex, ctypes.c_void_p).value or 0
        except ctypes.ArgumentError:  # not a foreign function (a stand-in): no address
            entry = 0
        kept = _DRIVER["native"] = (launch_ex, native.launcher_maker(cache_dir(), entry) if entry else None)
    return kept[1]


def launch_kernel_ex(cp: Any) -> Any:
    """The programmatic dependent launch (``cuLaunchKernelEx`` with programmatic stream
    serialization) beside :func:`launch_kernel`: ``make(fn, grid, threads, params, smem)``
    returns ``launch(stream) -> bool`` for kernel handle ``fn`` (a CuPy ``RawKernel``'s) and
    its parameter block at ``params`` (False: the driver refused, nothing ran).
    ``cooperative=True`` adds the cooperative attribute (the driver launches the grid only
    if every CTA can be resident at once: a grid barrier's condition); ``programmatic=False``
    drops the programmatic one.  The launch is the native launcher's
    (:mod:`~layoutproof.gpu.host.native`: one C call) where it builds, else a ctypes call.
    None where ``cp`` is not the CuPy module (its kernels' handles are the driver's) or the
    driver library offers no such launch."""
    import types

    if not isinstance(cp, types.ModuleType) or cp.__name__ != "cupy":
        return None
    drv = _launch_ex()
    if drv is None:
        return None
    launch_ex, attr_t, cfg_t = drv
    native = _native_maker(launch_ex)

    def make(
        fn: int,
        grid: Tuple[int, int, int],
        threads: int,
        params: int,
        smem: int = 0,
        *,
        programmatic: bool = True,
        cooperative: bool = False,
    ) -> Any:
        if native is not None:
            return native(fn, grid, threads, params, smem, programmatic, cooperative)
        import ctypes

        ids = ((_PROGRAMMATIC,) if programmatic else ()) + ((_COOPERATIVE,) if cooperative else ())
        attr = (attr_t * max(1, len(ids)))()
        for i, a in enumerate(ids):
            attr[i].id = a
            ctypes.memmove(ctypes.addressof(attr[i]) + 8, ctypes.byref(ctypes.c_int(1)), 4)
        cfg = cfg_t()
        cfg.grid[:] = grid
        cfg.block[:] = (threads, 1, 1)
        cfg.smem = smem
        cfg.attrs = ctypes.addressof(attr)
        cfg.num_attrs = len(ids)
        args = (ctypes.c_void_p(ctypes.addressof(cfg)), ctypes.c_void_p(fn), ctypes.c_void_p(params), None)
        cur = [-1]

        def launch(stream: int) -> bool:
            if stream != cur[0]:
                cfg.stream = stream or None
                cur[0] = stream
            return launch_ex(*args) == 0

        launch.keep = (attr, cfg)  # type: ignore[attr-defined]  # the structures the call reads
        return launch

    return make


def facts(cp: Any) -> DeviceFacts:
    """What the launch rule needs to know of the current device."""
    return DeviceFacts(
        cc=device_facts(cp)[1], sms=sm_count(cp), tma=tma_available(), coop=launch_kernel_ex(cp) is not None
    )


def external_array(
    ptr: int, nbytes: int, shape: Tuple[int, ...], strides: Tuple[int, ...], dtype: Any, dev: int
) -> Any:
    """A CuPy array over ``nbytes`` of device memory at ``ptr`` on device ``dev`` that
    another library owns (a torch tensor's storage): ``shape`` and byte ``strides`` as the
    CUDA array interface gives them, no copy.  The array keeps nothing alive: the caller
    holds the owner for as long as the array is used."""
    cp = cupy()
    mem = cp.cuda.UnownedMemory(ptr, nbytes, None, dev)
    return cp.ndarray(shape, dtype, cp.cuda.MemoryPointer(mem, 0), strides)
