"""The native launcher (``layoutproof.gpu.host.native``): built with the system compiler, its
launcher objects call an entry point with the driver's ``cuLaunchKernelEx`` signature.

No GPU is needed: a ctypes callback stands in for the driver and reads the configuration
the launcher passes, through the same structure layout the ctypes launch uses
(``device.launch_structs``), so the C mirror of ``CUlaunchConfig`` is checked field by field.
"""

from __future__ import annotations

import ctypes
import shutil
import sysconfig
from pathlib import Path

import pytest

from layoutproof.gpu.host import device, native

_HEADERS = (Path(sysconfig.get_paths()["include"]) / "Python.h").exists()
_CC = shutil.which("cc") is not None or shutil.which(str(sysconfig.get_config_var("CC") or "cc").split()[0])

needs_build = pytest.mark.skipif(not (_HEADERS and _CC), reason="needs a C compiler and Python.h")

_ENTRY_T = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


@pytest.fixture
def fresh_state(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "_STATE", {})


def _fake_driver(result: int = 0):
    """An entry point recording what each call read: grid, block, shared memory, stream,
    attributes (id, first int of the value), kernel handle, parameter block, extra."""
    attr_t, cfg_t = device.launch_structs()
    seen = []

    def entry(cfg_p, func, params, extra):
        cfg = cfg_t.from_address(cfg_p)
        attrs = []
        for i in range(cfg.num_attrs):
            at = attr_t.from_address(cfg.attrs + i * ctypes.sizeof(attr_t))
            attrs.append((at.id, ctypes.c_int.from_address(ctypes.addressof(at) + 8).value))
        seen.append(
            dict(
                grid=tuple(cfg.grid),
                block=tuple(cfg.block),
                smem=cfg.smem,
                stream=cfg.stream or 0,
                attrs=attrs,
                func=func or 0,
                params=params or 0,
                extra=extra,
            )
        )
        return result

    cb = _ENTRY_T(entry)
    return cb, ctypes.cast(cb, ctypes.c_void_p).value, seen


@needs_build
def test_the_launcher_passes_the_configuration_field_by_field(tmp_path: Path, fresh_state: None) -> None:
    cb, addr, seen = _fake_driver()
    make = native.launcher_maker(tmp_path, addr)
    assert make is not None and native.status() == "loaded"
    launch = make(0x1234, (132, 2, 3), 384, 0xABC0, 200704, programmatic=True, cooperative=False)
    assert launch(0x77) is True
    assert launch(0) is True
    assert seen[0] == dict(
        grid=(132, 2, 3),
        block=(384, 1, 1),
        smem=200704,
        stream=0x77,
        attrs=[(6, 1)],
        func=0x1234,
        params=0xABC0,
        extra=None,
    )
    assert seen[1]["stream"] == 0  # the null stream: NULL
    coop = make(0x99, (128, 1, 1), 256, 0x40, 0, programmatic=False, cooperative=True)
    assert coop(5) and seen[-1]["attrs"] == [(2, 1)] and seen[-1]["func"] == 0x99
    both = make(0x99, (1, 1, 1), 32, 0x40, 0, programmatic=True, cooperative=True)
    assert both(5) and seen[-1]["attrs"] == [(6, 1), (2, 1)]
    none = make(0x99, (1, 1, 1), 32, 0x40, 0, programmatic=False, cooperative=False)
    assert none(5) and seen[-1]["attrs"] == []
    assert launch.__self__.describe()["grid"] == (132, 2, 3)
    # built once: a second maker in the same folder loads the same file
    assert len(list(tmp_path.glob("layoutproof_native_*"))) == 1


@needs_build
def test_a_refused_launch_is_false_and_a_bad_stream_an_error(tmp_path: Path, fresh_state: None) -> None:
    cb, addr, seen = _fake_driver(result=720)  # CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE
    make = native.launcher_maker(tmp_path, addr)
    assert make is not None
    launch = make(1, (1, 1, 1), 32, 8, 0, programmatic=False, cooperative=True)
    assert launch(3) is False and len(seen) == 1
    with pytest.raises(TypeError):
        launch("stream")  # type: ignore[arg-type]
    with pytest.raises(OverflowError):
        launch(-1)
    assert len(seen) == 1  # nothing reached the entry point


def test_switched_off_or_unbuildable_it_says_why(
    tmp_path: Path, fresh_state: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LAYOUTPROOF_NATIVE", "0")
    assert native.launcher_maker(tmp_path, 1) is None
    assert native.status() == "off (LAYOUTPROOF_NATIVE=0)"
    monkeypatch.delenv("LAYOUTPROOF_NATIVE")
    monkeypatch.setattr(native, "_STATE", {})
    monkeypatch.setattr(native, "SOURCE", native.SOURCE + "\n#error planted\n")
    assert native.launcher_maker(tmp_path, 1) is None
    assert native.status().startswith("the C compiler failed") and "planted" in native.status()
    monkeypatch.setattr(native, "_STATE", {})
    monkeypatch.setattr(native.sysconfig, "get_paths", lambda: {"include": str(tmp_path / "none")})
    assert native.launcher_maker(tmp_path / "other", 1) is None
    assert "Python.h" in native.status()


def test_native_status_before_use(fresh_state: None) -> None:
    assert native.status() == "not tried"


@needs_build
def test_the_device_launch_goes_through_the_native_launcher(
    tmp_path: Path, fresh_state: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    import types

    cb, addr, seen = _fake_driver()
    attr_t, cfg_t = device.launch_structs()
    monkeypatch.setenv("LAYOUTPROOF_CACHE", str(tmp_path))
    monkeypatch.setitem(device._DRIVER, "ex", (cb, attr_t, cfg_t))  # a foreign function: an address
    monkeypatch.delitem(device._DRIVER, "native", raising=False)
    make = device.launch_kernel_ex(types.ModuleType("cupy"))
    launch = make(0x10, (3, 2, 1), 256, 0x20, 4096)  # the interface's defaults: programmatic only
    assert launch(9) is True and native.status() == "loaded"
    assert hasattr(launch, "__self__")  # the extension's bound method, not the ctypes closure
    assert seen == [
        dict(
            grid=(3, 2, 1),
            block=(256, 1, 1),
            smem=4096,
            stream=9,
            attrs=[(6, 1)],
            func=0x10,
            params=0x20,
            extra=None,
        )
    ]
    assert make(0x10, (1, 1, 1), 32, 0x20, programmatic=False, cooperative=True)(0)
    assert seen[-1]["attrs"] == [(2, 1)] and seen[-1]["stream"] == 0


@needs_build
def test_a_build_outlives_the_process_that_started_it(tmp_path: Path) -> None:
    # a build in a daemon thread of a process that exits at once (a short script): the
    # compiler, in its own session, still installs the shared object and removes its folder
    import subprocess
    import sys
    import time

    code = (
        "import sys, threading; from pathlib import Path; from layoutproof.gpu.host import native\n"
        "threading.Thread(target=native.build_extension, daemon=True,\n"
        "    args=(Path(sys.argv[1]), 'layoutproof_native', native.SOURCE)).start()\n"
        "import time; time.sleep(0.05)\n"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True, timeout=60)
    deadline = time.time() + 120
    while time.time() < deadline and not list(tmp_path.glob("layoutproof_native_*")):
        time.sleep(0.1)
    while time.time() < deadline and [p for p in tmp_path.iterdir() if p.is_dir()]:
        time.sleep(0.1)  # the shell removes its folder after the move
    built = list(tmp_path.glob("layoutproof_native_*"))
    assert len(built) == 1 and not [p for p in tmp_path.iterdir() if p.is_dir()]
    assert native.load_extension(built[0], "layoutproof_native").make is not None


@needs_build
def test_a_failed_build_leaves_no_folder_and_names_the_error(tmp_path: Path) -> None:
    import subprocess

    with pytest.raises(subprocess.CalledProcessError) as e:
        native.build_extension(tmp_path, "broken", "#include <planted_missing_header.h>\n")
    assert b"planted_missing_header" in e.value.stderr
    assert list(tmp_path.iterdir()) == []
