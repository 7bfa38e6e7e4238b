"""The CUDA device as the host path sees it: CuPy (imported on first use and checked once),
the device's name, compute capability and SM count (read once per device), and whether
cuda-python can encode TMA tensor maps.

Everything here is looked up through this module's attributes (``device.cupy()``,
``device.tma_available()``), so a test can stand a fake CuPy or a missing cuda-python in
for the real ones in one place.
"""

from __future__ import annotations

import functools
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
]

_CUPY: List[Any] = []


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


def facts(cp: Any) -> DeviceFacts:
    """What the launch rule needs to know of the current device."""
    return DeviceFacts(cc=device_facts(cp)[1], sms=sm_count(cp), tma=tma_available())


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
