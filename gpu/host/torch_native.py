"""The native front of ``gemm`` on torch tensors: a kept call signature served in C++.

A torch call of a kept signature costs, in Python, about a microsecond to read its key
(ten tensor getters: shapes, strides, types, devices, addresses) and another to allocate
its output through torch's argument parser -- each of them a few hundredths of that from
C++.  This module compiles a small extension against the installed torch's own headers
and libraries (once per machine, torch version and interpreter, into the kernel cache's
folder; in a background thread, so no call waits for the compiler) whose ``Dispatch``
object keeps, per call signature, what the entry's ``fast`` function of
:mod:`~layoutproof.gpu.host.torch_op` uses, and does its work:

- the key: each tensor's dimensions, sizes, strides, scalar type, device and base address
  modulo 16, read from the tensor itself; the options by identity (a kept entry holds
  them, so an identical object is an equal one);
- the checks: the current device is the entry's, and CuPy's current stream is torch's
  current stream or one of CuPy's defaults;
- the output: ``at::empty`` of the product's shape with the entry's template's options
  (or the given ``out``);
- the launch: the plan's direct launch (a Python function) with the addresses and the
  stream: ``launch(a, b, c, stream)``, or ``launch(a, b, c, bias, stream)`` for the fused
  epilogue's (bias 0 where the call has none).

Anything else -- a call signature it does not keep, a tensor subclass, a tensor without
storage or with the negative or conjugate bit, another device current, a foreign CuPy
stream, alpha or beta other than 1 and 0, a C input, an error while allocating -- returns
``NotImplemented`` and the Python path (which raises the errors) takes the call.  Where the
extension cannot be built (no C++ compiler, no torch headers) or ``LAYOUTPROOF_NATIVE=0``,
:func:`dispatcher` stays None and :func:`status` says why.
"""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

from ..errors import GemmConfigError
from .native import build_extension, load_built

__all__ = ["SOURCE", "dispatcher", "module", "status", "wait"]

#: the extension's source: one type, ``Dispatch(cap)``.  ``Dispatch.keep(a, b, out, config,
#: out_dtype, dtype, path, bias, activation, bias_along, launch, with_bias, get_device,
#: raw_stream, cur_stream, dev, tmpl)`` keeps an entry under the key of those tensors and
#: options; calling the object with ``gemm``'s arguments in ``torch_op.gemm_call``'s order
#: ``(a, b, out, config, out_dtype, dtype, path, bias, activation, alpha, beta, c,
#: bias_along)`` serves a kept signature (the output) or returns NotImplemented.
SOURCE = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <torch/csrc/autograd/python_variable.h>
#include <ATen/ops/empty.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace {

constexpr int kKeyMax = 64;  // 4 tensors of at most 3 dimensions (13 words each) + 6 options

struct Key {
  int n = 0;
  std::array<int64_t, kKeyMax> v;
  bool push(int64_t x) {
    if (n == kKeyMax) return false;
    v[n++] = x;
    return true;
  }
  bool operator==(const Key& o) const {
    return n == o.n && std::equal(v.begin(), v.begin() + n, o.v.begin());
  }
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < k.n; ++i) {
      h ^= static_cast<uint64_t>(k.v[i]);
      h *= 1099511628211ull;
    }
    return static_cast<size_t>(h);
  }
};

// One argument's part of the key: 0 for None; else the dimension count + 1, sizes, strides,
// scalar type, device type and index, base address modulo 16.  False: not a tensor this
// front serves (a subclass, no storage, a Python-dispatch tensor, the negative or conjugate
// bit, not strided, over 3 dimensions) -- the Python path decides.  *ptr: its address.
bool add_tensor(Key& k, PyObject* o, uintptr_t* ptr) {
  *ptr = 0;
  if (o == Py_None) return k.push(0);
  if (!THPVariable_CheckExact(o)) return false;
  const at::Tensor& t = THPVariable_Unpack(o);
  if (!t.defined()) return false;
  c10::TensorImpl* impl = t.unsafeGetTensorImpl();
  if (impl->is_python_dispatch() || !impl->has_storage() || t.layout() != c10::kStrided ||
      t.is_neg() || t.is_conj())
    return false;
  const int64_t d = t.dim();
  if (d < 1 || d > 3) return false;
  if (!k.push(d + 1)) return false;
  for (int64_t s : t.sizes())
    if (!k.push(s)) return false;
  for (int64_t s : t.strides())
    if (!k.push(s)) return false;
  const c10::Device dev = t.device();
  *ptr = reinterpret_cast<uintptr_t>(t.const_data_ptr());
  return k.push(static_cast<int64_t>(t.scalar_type())) && k.push(static_cast<int64_t>(dev.type())) &&
         k.push(dev.index()) && k.push(static_cast<int64_t>(*ptr & 15));
}

// The key of a call's a, b, out, bias and its six options (by identity).  ptrs: the addresses
// of a, b, out, bias.
bool call_key(Key& k, PyObject* a, PyObject* b, PyObject* out, PyObject* bias, PyObject* const* opts,
              uintptr_t* ptrs) {
  try {
    if (!add_tensor(k, a, &ptrs[0]) || !add_tensor(k, b, &ptrs[1]) || !add_tensor(k, out, &ptrs[2]) ||
        !add_tensor(k, bias, &ptrs[3]))
      return false;
  } catch (...) {  // a tensor whose sizes, strides or address cannot be read here
    return false;
  }
  for (int i = 0; i < 6; ++i)
    if (!k.push(static_cast<int64_t>(reinterpret_cast<uintptr_t>(opts[i])))) return false;
  return true;
}

struct Entry {
  PyObject* keep[6] = {};  // the options (their identities are in the key)
  PyObject* launch = nullptr;
  PyObject* get_device = nullptr;
  PyObject* raw_stream = nullptr;
  PyObject* cur_stream = nullptr;
  PyObject* dev_obj = nullptr;
  long dev = 0;
  bool with_bias = false;
  std::vector<int64_t> shape;
  c10::TensorOptions options;
  ~Entry() {  // dropped with the GIL held (a call's copy or the map's)
    for (PyObject* o : keep) Py_XDECREF(o);
    Py_XDECREF(launch);
    Py_XDECREF(get_device);
    Py_XDECREF(raw_stream);
    Py_XDECREF(cur_stream);
    Py_XDECREF(dev_obj);
  }
};

using Map = std::unordered_map<Key, std::shared_ptr<Entry>, KeyHash>;

// the stamps of the entry sets: a new Dispatch and each time one drops its entries take the
// next, so an entry handed to one set is never taken for one handed to another
unsigned long long g_stamp = 0;

struct Dispatch {
  PyObject_HEAD
  vectorcallfunc vectorcall;  // the call's entry (tp_vectorcall_offset points here)
  Map* map;
  Py_ssize_t cap;
  unsigned long long hits;
  unsigned long long generation;
};

PyObject* NotImpl() { Py_RETURN_NOTIMPLEMENTED; }

// 1 where x is exactly the int or float `want`, 0 otherwise
int exactly(PyObject* x, long want) {
  if (PyFloat_CheckExact(x)) return PyFloat_AS_DOUBLE(x) == static_cast<double>(want);
  if (PyLong_CheckExact(x)) {
    int overflow = 0;
    long v = PyLong_AsLongAndOverflow(x, &overflow);
    if (v == -1 && PyErr_Occurred()) {
      PyErr_Clear();
      return 0;
    }
    return !overflow && v == want;
  }
  return 0;
}

// CuPy's current stream is torch's (sp) or one of CuPy's defaults (0, 1, 2): 1; else 0; -1 error
int stream_ok(PyObject* cs, PyObject* sp) {
  int eq = PyObject_RichCompareBool(cs, sp, Py_EQ);
  if (eq != 0) return eq;
  if (!PyLong_Check(cs)) return 0;
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(cs, &overflow);
  if (v == -1 && PyErr_Occurred()) return -1;
  return !overflow && v >= 0 && v <= 2;
}

PyObject* dispatch_call(PyObject* op, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  Dispatch* self = reinterpret_cast<Dispatch*>(op);
  Py_ssize_t n = PyVectorcall_NARGS(nargsf);
  if (n != 13 || kwnames != nullptr) {
    PyErr_SetString(PyExc_TypeError,
                    "Dispatch takes 13 positional arguments: a, b, out, config, out_dtype, dtype, path, "
                    "bias, activation, alpha, beta, c, bias_along");
    return nullptr;
  }
  PyObject *a = args[0], *b = args[1], *out = args[2], *bias = args[7];
  if (args[11] != Py_None || !exactly(args[9], 1) || !exactly(args[10], 0)) return NotImpl();
  PyObject* opts[6] = {args[3], args[4], args[5], args[6], args[8], args[12]};
  Key k;
  uintptr_t ptrs[4];
  if (!call_key(k, a, b, out, bias, opts, ptrs)) return NotImpl();
  auto it = self->map->find(k);
  if (it == self->map->end()) return NotImpl();
  std::shared_ptr<Entry> e = it->second;  // kept through the Python calls below

  PyObject* r = PyObject_CallNoArgs(e->get_device);
  if (r == nullptr) return nullptr;
  long cd = PyLong_AsLong(r);
  Py_DECREF(r);
  if (cd == -1 && PyErr_Occurred()) return nullptr;
  if (cd != e->dev) return NotImpl();  // another device current: the views path
  PyObject* sp = PyObject_CallOneArg(e->raw_stream, e->dev_obj);
  if (sp == nullptr) return nullptr;
  PyObject* cs = PyObject_CallNoArgs(e->cur_stream);
  if (cs == nullptr) {
    Py_DECREF(sp);
    return nullptr;
  }
  int ok = stream_ok(cs, sp);
  Py_DECREF(cs);
  if (ok != 1) {
    Py_DECREF(sp);
    return ok < 0 ? nullptr : NotImpl();  // a foreign CuPy stream: the Python path refuses
  }

  PyObject* result;
  uintptr_t pc;
  if (out == Py_None) {
    try {
      at::Tensor o = at::empty(e->shape, e->options);
      pc = reinterpret_cast<uintptr_t>(o.const_data_ptr());
      result = THPVariable_Wrap(std::move(o));
    } catch (...) {  // out of memory and the like: the Python path raises torch's own error
      Py_DECREF(sp);
      return NotImpl();
    }
    if (result == nullptr) {
      Py_DECREF(sp);
      return nullptr;
    }
  } else {
    Py_INCREF(out);
    result = out;
    pc = ptrs[2];
  }
  // launch(a, b, c, stream), or the fused one's launch(a, b, c, bias, stream)
  PyObject* call[5] = {PyLong_FromUnsignedLongLong(ptrs[0]), PyLong_FromUnsignedLongLong(ptrs[1]),
                       PyLong_FromUnsignedLongLong(pc), nullptr, nullptr};
  size_t nc = 4;
  if (e->with_bias) {
    call[3] = PyLong_FromUnsignedLongLong(ptrs[3]);
    call[4] = sp;
    nc = 5;
  } else {
    call[3] = sp;
  }
  PyObject* done = nullptr;
  if (call[0] && call[1] && call[2] && call[3])
    done = PyObject_Vectorcall(e->launch, call, nc, nullptr);
  for (size_t i = 0; i < 5; ++i) Py_XDECREF(call[i]);
  if (done == nullptr) {
    Py_DECREF(result);
    return nullptr;
  }
  Py_DECREF(done);
  ++self->hits;
  return result;
}

PyObject* dispatch_keep(PyObject* op, PyObject* const* args, Py_ssize_t n) {
  Dispatch* self = reinterpret_cast<Dispatch*>(op);
  if (n != 17) {
    PyErr_SetString(PyExc_TypeError,
                    "keep takes 17 arguments: a, b, out, config, out_dtype, dtype, path, bias, activation, "
                    "bias_along, launch, with_bias, get_device, raw_stream, cur_stream, dev, tmpl");
    return nullptr;
  }
  PyObject* opts[6] = {args[3], args[4], args[5], args[6], args[8], args[9]};
  Key k;
  uintptr_t ptrs[4];
  if (!call_key(k, args[0], args[1], args[2], args[7], opts, ptrs)) Py_RETURN_FALSE;
  PyObject* tmpl = args[16];
  if (!THPVariable_CheckExact(tmpl)) {
    PyErr_SetString(PyExc_TypeError, "keep: tmpl must be a torch.Tensor");
    return nullptr;
  }
  int with_bias = PyObject_IsTrue(args[11]);
  if (with_bias < 0) return nullptr;
  long dev = PyLong_AsLong(args[15]);
  if (dev == -1 && PyErr_Occurred()) return nullptr;
  auto e = std::make_shared<Entry>();
  try {
    const at::Tensor& t = THPVariable_Unpack(tmpl);
    e->shape.assign(t.sizes().begin(), t.sizes().end());
    e->options = t.options();
  } catch (...) {
    PyErr_SetString(PyExc_ValueError, "keep: tmpl's sizes and options cannot be read");
    return nullptr;
  }
  for (int i = 0; i < 6; ++i) {
    Py_INCREF(opts[i]);
    e->keep[i] = opts[i];
  }
  PyObject* fns[4] = {args[10], args[12], args[13], args[14]};
  for (PyObject* f : fns) Py_INCREF(f);
  e->launch = fns[0];
  e->get_device = fns[1];
  e->raw_stream = fns[2];
  e->cur_stream = fns[3];
  Py_INCREF(args[15]);
  e->dev_obj = args[15];
  e->dev = dev;
  e->with_bias = with_bias != 0;
  if (static_cast<Py_ssize_t>(self->map->size()) >= self->cap && self->map->find(k) == self->map->end()) {
    self->map->clear();  // full: start over (the Python path keeps the signatures again)
    self->generation = ++g_stamp;
  }
  (*self->map)[k] = std::move(e);
  Py_RETURN_TRUE;
}

PyObject* dispatch_clear(PyObject* op, PyObject*) {
  Dispatch* self = reinterpret_cast<Dispatch*>(op);
  self->map->clear();
  self->generation = ++g_stamp;
  Py_RETURN_NONE;
}

PyObject* get_hits(PyObject* op, void*) {
  return PyLong_FromUnsignedLongLong(reinterpret_cast<Dispatch*>(op)->hits);
}
PyObject* get_generation(PyObject* op, void*) {
  return PyLong_FromUnsignedLongLong(reinterpret_cast<Dispatch*>(op)->generation);
}
PyObject* get_cap(PyObject* op, void*) { return PyLong_FromSsize_t(reinterpret_cast<Dispatch*>(op)->cap); }
PyObject* get_size(PyObject* op, void*) {
  return PyLong_FromSsize_t(static_cast<Py_ssize_t>(reinterpret_cast<Dispatch*>(op)->map->size()));
}

PyObject* dispatch_new(PyTypeObject* type, PyObject* args, PyObject* kwds) {
  Py_ssize_t cap = 256;
  static const char* names[] = {"cap", nullptr};
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "|n", const_cast<char**>(names), &cap)) return nullptr;
  if (cap < 1) {
    PyErr_SetString(PyExc_ValueError, "Dispatch: cap must be at least 1");
    return nullptr;
  }
  Dispatch* self = reinterpret_cast<Dispatch*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  self->map = new (std::nothrow) Map();
  if (self->map == nullptr) {
    Py_DECREF(self);
    return PyErr_NoMemory();
  }
  self->vectorcall = dispatch_call;
  self->cap = cap;
  self->hits = 0;
  self->generation = ++g_stamp;
  return reinterpret_cast<PyObject*>(self);
}

void dispatch_dealloc(PyObject* op) {
  Dispatch* self = reinterpret_cast<Dispatch*>(op);
  delete self->map;
  Py_TYPE(op)->tp_free(op);
}

PyMethodDef dispatch_methods[] = {
    {"keep", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(dispatch_keep)), METH_FASTCALL,
     "keep(a, b, out, config, out_dtype, dtype, path, bias, activation, bias_along, launch, with_bias, "
     "get_device, raw_stream, cur_stream, dev, tmpl) -> bool: keeps the entry (False: not a signature "
     "this front serves)"},
    {"clear", dispatch_clear, METH_NOARGS, "drops every entry"},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef dispatch_getset[] = {
    {"hits", get_hits, nullptr, "calls served", nullptr},
    {"generation", get_generation, nullptr, "the entry set's stamp (new after each drop, unique)", nullptr},
    {"size", get_size, nullptr, "entries kept", nullptr},
    {"cap", get_cap, nullptr, "the most entries kept before it starts over", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyTypeObject DispatchType = {PyVarObject_HEAD_INIT(nullptr, 0)};

PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "layoutproof_torch_native", nullptr, -1, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit_layoutproof_torch_native(void) {
  DispatchType.tp_name = "layoutproof_torch_native.Dispatch";
  DispatchType.tp_basicsize = sizeof(Dispatch);
  DispatchType.tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL;
  DispatchType.tp_vectorcall_offset = offsetof(Dispatch, vectorcall);
  DispatchType.tp_new = dispatch_new;
  DispatchType.tp_dealloc = dispatch_dealloc;
  DispatchType.tp_methods = dispatch_methods;
  DispatchType.tp_getset = dispatch_getset;
  DispatchType.tp_call = PyVectorcall_Call;
  if (PyType_Ready(&DispatchType) < 0) return nullptr;
  PyObject* m = PyModule_Create(&module_def);
  if (m == nullptr) return nullptr;
  Py_INCREF(&DispatchType);
  if (PyModule_AddObject(m, "Dispatch", reinterpret_cast<PyObject*>(&DispatchType)) < 0) {
    Py_DECREF(&DispatchType);
    Py_DECREF(m);
    return nullptr;
  }
  return m;
}
"""

_STATE: Dict[str, Any] = {}
_LOCK = threading.Lock()


def status() -> str:
    """``"loaded"``, ``"building"``, or why the native front is not in use (``"not tried"``
    before the first :func:`dispatcher` or :func:`module` call)."""
    return str(_STATE.get("status", "not tried"))


def _flags(torch: Any) -> List[str]:
    """The compiler flags of an extension against ``torch``'s headers and libraries."""
    root = Path(str(torch.__file__)).parent
    include, lib = root / "include", root / "lib"
    if not (include / "torch" / "csrc" / "autograd" / "python_variable.h").exists():
        raise OSError(f"no torch headers under {include}")
    abi = int(bool(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True)))
    return [
        "-std=c++17",
        f"-D_GLIBCXX_USE_CXX11_ABI={abi}",
        f"-I{include}",
        f"-I{include / 'torch' / 'csrc' / 'api' / 'include'}",
        "-w",  # torch's headers warn under C++17 (default member initializers of bit-fields)
        f"-L{lib}",
        "-lc10",
        "-ltorch_cpu",
        "-ltorch_python",
        f"-Wl,-rpath,{lib}",
    ]


def module(directory: "str | Path") -> Optional[Any]:
    """The extension module, built under ``directory`` on first use and loaded (this call
    waits for the compiler); None where it cannot be, torch is not imported, or
    ``LAYOUTPROOF_NATIVE=0`` -- :func:`status` says why."""
    directory = Path(directory)
    with _LOCK:
        if "module" in _STATE:
            return _STATE["module"]
        mod = None
        torch = sys.modules.get("torch")
        if os.environ.get("LAYOUTPROOF_NATIVE", "1") == "0":
            _STATE["status"] = "off (LAYOUTPROOF_NATIVE=0)"
        elif torch is None:
            _STATE["status"] = "not built: torch is not imported"
        else:
            name = "layoutproof_torch_native"

            def make() -> Path:
                return build_extension(
                    directory,
                    name,
                    SOURCE,
                    cxx=True,
                    flags=_flags(torch),
                    tag=f"torch {torch.__version__} {torch.__file__}",
                )

            mod, _STATE["status"] = load_built(make, name, "C++")
        _STATE["module"] = mod
        return mod


def dispatcher(
    directory: "str | Path", ready: Optional[Callable[[Any], None]] = None, cap: int = 256
) -> Optional[Any]:
    """The process's ``Dispatch`` (of at most ``cap`` entries) where the extension is loaded;
    else None, and the first call starts building it in a background thread, which calls
    ``ready(dispatch)`` once it is loaded (nothing when it cannot be).

    Raises:
        GemmConfigError: ``cap`` is not a positive int.
    """
    d = _STATE.get("dispatch")
    if d is not None or "thread" in _STATE:
        return d
    if type(cap) is not int or cap < 1:
        raise GemmConfigError(f"torch_native.dispatcher: cap={cap!r} must be a positive int (entries kept)")
    directory = Path(directory)
    with _LOCK:
        if "thread" in _STATE:
            return _STATE.get("dispatch")
        _STATE["status"] = "building"

        def build() -> None:
            mod = module(directory)
            if mod is not None:
                made = _STATE["dispatch"] = mod.Dispatch(cap)
                if ready is not None:
                    ready(made)

        th = _STATE["thread"] = threading.Thread(target=build, name="layoutproof-torch-native", daemon=True)
        th.start()
    return None


def wait(timeout: Optional[float] = None) -> Optional[Any]:
    """The ``Dispatch`` once the background build has ended (None where it was not started,
    did not end within ``timeout`` seconds, or failed): for scripts and benchmarks that
    time the steady state."""
    th = _STATE.get("thread")
    if th is not None:
        th.join(timeout)
    return _STATE.get("dispatch")
