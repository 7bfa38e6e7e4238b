"""A native launcher for ``cuLaunchKernelEx``: the launches with attributes (programmatic
dependent, cooperative) issued from one C call instead of a ctypes call.

A ctypes call with four pointer arguments costs about a microsecond of host time before the
driver is reached; a plan's hot path issues one per launch.  This module compiles a small
CPython extension once per machine (the system C compiler and the interpreter's own headers,
into the kernel cache's folder) whose launcher object holds the launch configuration and
calls the driver's entry point directly: ``launch(stream) -> bool`` costs a method call.

Nothing here loads CUDA: the entry point's address comes from the caller (ctypes resolves
it once), so the extension builds and is tested without a GPU.  Where the extension cannot
be built (no compiler, no headers) or ``LAYOUTPROOF_NATIVE=0``, :func:`launcher_maker`
returns None and the caller keeps its ctypes launch; :func:`status` says why.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

__all__ = ["build_extension", "launcher_maker", "load_built", "load_extension", "status", "SOURCE"]

#: the extension's source: one type, ``Launcher``, made by ``make`` (the entry point's
#: address, the kernel handle, the grid, the block's threads, dynamic shared memory, the
#: parameter block's address and the two attribute flags); ``Launcher.launch(stream)`` calls
#: the entry point with a copy of the kept configuration on that stream, the GIL released
#: (as a ctypes call releases it), True when it returned CUDA_SUCCESS.  The structures
#: mirror the driver's ``CUlaunchConfig`` and ``CUlaunchAttribute`` (an id, 4 bytes of
#: padding, a 64-byte value union).
SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

typedef struct { unsigned int id; unsigned int pad; unsigned char value[64]; } lp_attr;
typedef struct {
    unsigned int grid[3];
    unsigned int block[3];
    unsigned int smem;
    void *stream;
    lp_attr *attrs;
    unsigned int num_attrs;
} lp_cfg;
typedef int (*lp_launch_ex)(const lp_cfg *, void *, void **, void **);

typedef struct {
    PyObject_HEAD
    lp_launch_ex entry;
    void *func;
    void **params;
    lp_cfg cfg;
    lp_attr attrs[2];
} Launcher;

static PyObject *launcher_launch(PyObject *op, PyObject *stream) {
    Launcher *self = (Launcher *)op;
    unsigned long long s = PyLong_AsUnsignedLongLong(stream); /* an int >= 0, else an error */
    if (s == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    lp_cfg cfg = self->cfg; /* a copy: launches of one launcher from two threads share no stream */
    cfg.stream = (void *)(size_t)s;
    int rc;
    Py_BEGIN_ALLOW_THREADS /* as a ctypes call: a launch that waits for a full queue holds no GIL */
    rc = self->entry(&cfg, self->func, self->params, NULL);
    Py_END_ALLOW_THREADS
    if (rc == 0) Py_RETURN_TRUE;
    Py_RETURN_FALSE;
}

static PyObject *launcher_describe(PyObject *op, PyObject *unused) {
    Launcher *self = (Launcher *)op;
    return Py_BuildValue(
        "{s:(III),s:I,s:I,s:I,s:K}", "grid", self->cfg.grid[0], self->cfg.grid[1], self->cfg.grid[2],
        "threads", self->cfg.block[0], "smem", self->cfg.smem, "num_attrs", self->cfg.num_attrs,
        "params", (unsigned long long)(size_t)self->params);
}

static PyMethodDef launcher_methods[] = {
    {"launch", launcher_launch, METH_O, "launch(stream) -> bool: one launch on the stream"},
    {"describe", launcher_describe, METH_NOARGS, "the kept configuration"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject LauncherType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "layoutproof_native.Launcher",
    .tp_basicsize = sizeof(Launcher),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = launcher_methods,
};

static PyObject *make(PyObject *mod, PyObject *args) {
    unsigned long long entry, func, params;
    unsigned int gx, gy, gz, threads, smem;
    int programmatic, cooperative;
    if (!PyArg_ParseTuple(args, "KKIIIIIKpp", &entry, &func, &gx, &gy, &gz, &threads, &smem, &params,
                          &programmatic, &cooperative))
        return NULL;
    if (entry == 0) {
        PyErr_SetString(PyExc_ValueError, "make: the entry point's address is 0");
        return NULL;
    }
    Launcher *self = PyObject_New(Launcher, &LauncherType);
    if (self == NULL) return NULL;
    self->entry = (lp_launch_ex)(size_t)entry;
    self->func = (void *)(size_t)func;
    self->params = (void **)(size_t)params;
    memset(&self->cfg, 0, sizeof(self->cfg));
    memset(self->attrs, 0, sizeof(self->attrs));
    self->cfg.grid[0] = gx; self->cfg.grid[1] = gy; self->cfg.grid[2] = gz;
    self->cfg.block[0] = threads; self->cfg.block[1] = 1; self->cfg.block[2] = 1;
    self->cfg.smem = smem;
    unsigned int n = 0;
    int one = 1;
    if (programmatic) { self->attrs[n].id = 6; memcpy(self->attrs[n].value, &one, sizeof one); n++; }
    if (cooperative) { self->attrs[n].id = 2; memcpy(self->attrs[n].value, &one, sizeof one); n++; }
    self->cfg.attrs = self->attrs;
    self->cfg.num_attrs = n;
    return (PyObject *)self;
}

static PyMethodDef module_methods[] = {
    {"make", make, METH_VARARGS,
     "make(entry, func, gx, gy, gz, threads, smem, params, programmatic, cooperative)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "layoutproof_native", NULL, -1, module_methods};

PyMODINIT_FUNC PyInit_layoutproof_native(void) {
    if (PyType_Ready(&LauncherType) < 0) return NULL;
    return PyModule_Create(&module_def);
}
"""

_STATE: Dict[str, Any] = {}


def status() -> str:
    """``"loaded"``, or why the native launcher is not in use (after the first
    :func:`launcher_maker` call; ``"not tried"`` before it)."""
    return str(_STATE.get("status", "not tried"))


def build_extension(
    directory: Path,
    name: str,
    source: str,
    *,
    cxx: bool = False,
    flags: Sequence[str] = (),
    tag: str = "",
) -> Path:
    """The shared object of extension module ``name`` compiled from ``source`` under
    ``directory``, built there once (keyed by the source, the interpreter and ``tag``) with
    the system C compiler (``cxx``: the C++ one), the interpreter's headers and ``flags``
    after the source; raises OSError or CalledProcessError when it cannot be."""
    suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
    digest = hashlib.sha256((source + sys.version + tag).encode()).hexdigest()[:16]
    target = directory / f"{name}_{digest}{suffix}"
    if target.exists():
        return target
    include = sysconfig.get_paths()["include"]
    if not (Path(include) / "Python.h").exists():
        raise OSError(f"no Python.h under {include} (the interpreter's development headers)")
    var, fallbacks = ("CXX", ("c++", "g++")) if cxx else ("CC", ("cc",))
    compiler = os.environ.get(var) or sysconfig.get_config_var(var) or fallbacks[0]
    if shutil.which(compiler.split()[0]) is None:
        found = [c for c in fallbacks if shutil.which(c) is not None]
        if not found:
            raise OSError(f"no {'C++' if cxx else 'C'} compiler ({', '.join(fallbacks)}) on PATH")
        compiler = found[0]
    directory.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=directory))
    src, so, err = tmp / f"{name}.{'cpp' if cxx else 'c'}", tmp / target.name, tmp / "stderr"
    src.write_text(source)
    cmd = [*compiler.split(), "-O2", "-shared", "-fPIC", f"-I{include}", str(src), "-o", str(so), *flags]
    # the compiler runs in its own session under a shell that installs the result (mv is
    # atomic; a concurrent builder's copy is the same bytes) and removes the folder: a
    # process that exits first (a build in a daemon thread) leaves a finished build behind,
    # not a half-done one
    script = (
        'tmp="$1"; so="$2"; target="$3"; shift 3; '
        '"$@" 2>"$tmp/stderr" && mv -f "$so" "$target" && rm -rf "$tmp"'
    )
    proc = subprocess.Popen(
        ["sh", "-c", script, "sh", str(tmp), str(so), str(target), *cmd],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        rc = proc.wait(timeout=600 if cxx else 120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if rc != 0 or not target.exists():
        stderr = err.read_bytes() if err.exists() else b""
        shutil.rmtree(tmp, ignore_errors=True)
        raise subprocess.CalledProcessError(rc, cmd, stderr=stderr)
    return target


def load_extension(path: Path, name: str) -> Any:
    """Extension module ``name`` loaded from the shared object at ``path``."""
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    if spec is None:
        raise OSError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def load_built(make: Callable[[], Path], name: str, language: str) -> Tuple[Optional[Any], str]:
    """Extension module ``name`` loaded from the shared object ``make()`` builds (with
    :func:`build_extension`): ``(module, "loaded")``, or ``(None, why not)`` -- the
    ``language`` compiler's first error, or what was missing."""
    try:
        return load_extension(make(), name), "loaded"
    except subprocess.CalledProcessError as e:
        lines = (e.stderr or b"").decode(errors="replace").splitlines()
        err = [ln.strip() for ln in lines if "error" in ln] or [str(e)]
        return None, f"the {language} compiler failed: {err[0]}"
    except (OSError, ImportError, subprocess.TimeoutExpired) as e:
        return None, f"not built: {e}"


def module(directory: Path) -> Optional[Any]:
    """The extension module (built under ``directory`` on first use), or None where it
    cannot be built or loaded, or ``LAYOUTPROOF_NATIVE=0``; the reason is :func:`status`."""
    if "module" in _STATE:
        return _STATE["module"]
    mod = None
    if os.environ.get("LAYOUTPROOF_NATIVE", "1") == "0":
        _STATE["status"] = "off (LAYOUTPROOF_NATIVE=0)"
    else:
        name = "layoutproof_native"
        mod, _STATE["status"] = load_built(lambda: build_extension(directory, name, SOURCE), name, "C")
    _STATE["module"] = mod
    return mod


def launcher_maker(directory: Path, entry: int) -> Optional[Callable[..., Any]]:
    """``make(fn, grid, threads, params, smem, programmatic, cooperative)`` returning
    ``launch(stream) -> bool`` that calls the driver entry point at address ``entry``
    (``cuLaunchKernelEx``) for kernel handle ``fn`` with its parameter block at ``params``
    (True: it returned CUDA_SUCCESS); None where the extension is not available.  The
    launch interface with its defaults is :func:`~layoutproof.gpu.host.device.launch_kernel_ex`'s."""
    mod = module(directory)
    if mod is None:
        return None
    native_make = mod.make

    def make(
        fn: int, grid: Any, threads: int, params: int, smem: int, programmatic: bool, cooperative: bool
    ) -> Any:
        g0, g1, g2 = grid
        # the bound method keeps the launcher (and its structures) alive
        return native_make(entry, fn, g0, g1, g2, threads, smem, params, programmatic, cooperative).launch

    return make
