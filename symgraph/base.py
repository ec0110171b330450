"""Typed errors (MXNet's ``MXNetError`` is the base) and dtype names."""
from __future__ import annotations

import ctypes
import inspect
import os
import platform
import sys

import numpy as np
import torch

from . import config


class MXNetError(RuntimeError):
    """Base class of every error symgraph raises on bad input (MXNet's name)."""


SymgraphError = MXNetError


class ShapeError(MXNetError, ValueError):
    """Shapes are inconsistent, missing or cannot be inferred."""


class DTypeError(MXNetError, TypeError):
    """A dtype is unknown or inconsistent."""


class AttrError(MXNetError, ValueError):
    """An operator attribute is unknown, missing or has an invalid value."""


class OpNotFoundError(MXNetError, KeyError):
    """No operator is registered under the given name."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it readable
        return str(self.args[0]) if self.args else ""


class GraphError(MXNetError, ValueError):
    """A graph is malformed: cycles, duplicate names, bad JSON, dangling inputs."""


class BindError(MXNetError, ValueError):
    """Arrays given at bind time do not match the symbol (count, shape, dtype, grad_req)."""


class FileFormatError(MXNetError, ValueError):
    """A file (symbol JSON, ``.params``, ``.states``, a checkpoint) is truncated, corrupt,
    over a size limit, or does not match what it is loaded into; the message names the file
    and the key, and both shapes where shapes differ."""


class UnsupportedError(MXNetError, NotImplementedError):
    """A part of MXNet 1.9.1 that symgraph does not provide; the message says what and why
    (sparse storage, custom operators, a GPU-only feature, an operator not yet written)."""


class DeferredError(MXNetError):
    """An error found in the values while an operator ran (an index out of range). MXNet's
    engine runs operators asynchronously and raises such an error where the result is
    read (``asnumpy``, ``wait_to_read``), not at the call: a bound executor's ``forward``
    does the same, and the outputs raise it when read."""


class OpNotImplementedError(OpNotFoundError, UnsupportedError):
    """An operator MXNet 1.9.1 has and symgraph does not implement yet."""


def names_from(module: str, source: str, names):
    """A module ``__getattr__`` (PEP 562) answering ``names`` from module ``source``, imported
    on first use: MXNet defines these names in ``module``'s counterpart, symgraph elsewhere
    in the package (``from mxnet.ndarray.ndarray import zeros`` works), without an import
    cycle.

    >>> get = names_from("symgraph.ndarray.utils", "symgraph.ndarray", ("zeros",))
    >>> get("zeros").__name__, get.__module__
    ('zeros', 'symgraph.base')
    """
    import importlib
    wanted = frozenset(names)

    def __getattr__(name: str):
        if name in wanted:
            return getattr(importlib.import_module(source), name)
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    return __getattr__


def unsupported(what: str, why: str) -> UnsupportedError:
    """The error for an MXNet feature symgraph leaves out, e.g.
    ``raise unsupported("nd.sparse", "sparse storage is not implemented (dense only)")``.

    >>> print(unsupported("mx.rtc", "runtime CUDA compilation needs MXNet's C++ engine"))
    mx.rtc is not supported by symgraph: runtime CUDA compilation needs MXNet's C++ engine
    """
    return UnsupportedError(f"{what} is not supported by symgraph: {why}")


# MXNet's type flags (mshadow::TypeFlag) in the order MXNet numbers them.
_DTYPES: list[tuple[str, int, torch.dtype]] = [
    ("float32", 0, torch.float32),
    ("float64", 1, torch.float64),
    ("float16", 2, torch.float16),
    ("uint8", 3, torch.uint8),
    ("int32", 4, torch.int32),
    ("int8", 5, torch.int8),
    ("int64", 6, torch.int64),
    ("bool", 7, torch.bool),
    ("int16", 8, torch.int16),
    ("bfloat16", 12, torch.bfloat16),
]
NAME_TO_TORCH = {n: t for n, _, t in _DTYPES}
TORCH_TO_NAME = {t: n for n, _, t in _DTYPES}
FLAG_TO_NAME = {f: n for n, f, _ in _DTYPES}
NAME_TO_FLAG = {n: f for n, f, _ in _DTYPES}


def dtype_name(dtype) -> str:
    """Normalise a dtype given as a name, numpy dtype/type or torch dtype to MXNet's name.

    >>> dtype_name(np.float32), dtype_name('float16'), dtype_name(torch.int64)
    ('float32', 'float16', 'int64')
    """
    if isinstance(dtype, torch.dtype):
        if dtype in TORCH_TO_NAME:
            return TORCH_TO_NAME[dtype]
        raise DTypeError(f"dtype {dtype} is not supported")
    if dtype is None:
        return "float32"
    try:
        name = np.dtype(dtype).name
    except TypeError as err:
        raise DTypeError(f"Unknown dtype {dtype!r}") from err
    if name not in NAME_TO_TORCH:
        raise DTypeError(f"dtype {name} is not supported; use one of {sorted(NAME_TO_TORCH)}")
    return name


def to_torch_dtype(dtype) -> torch.dtype:
    """MXNet/numpy dtype to torch dtype."""
    return NAME_TO_TORCH[dtype_name(dtype)]


def to_numpy_dtype(dtype) -> type:
    """Any dtype spelling to the numpy scalar type MXNet's ``.dtype`` returns."""
    name = dtype_name(dtype)
    if name == "bfloat16":
        raise DTypeError("bfloat16 has no numpy dtype")
    return np.dtype(name).type


# --- MXNet's ``mxnet.base`` helpers -------------------------------------------------------
# Names MXNet scripts import from ``mxnet.base``. The ctypes helpers work on plain ctypes
# values; anything that needs MXNet's C library (libmxnet.so) raises UnsupportedError.

integer_types = (int, np.int32, np.int64)
numeric_types = (float, int, np.generic)
string_types = (str,)
mx_uint = ctypes.c_uint
mx_int = ctypes.c_int
mx_int64 = ctypes.c_int64
mx_float = ctypes.c_float
mx_float_p = ctypes.POINTER(mx_float)
mx_real_t = np.float32
# error name (the text before ':' in a C API message) -> Python class, see register_error
error_types: dict[str, type] = {}


def py_str(x: bytes) -> str:
    """Decode a C string (``bytes``) into ``str``.

    >>> py_str(b'cpu')
    'cpu'
    """
    return x.decode("utf-8")


def _as_list(obj) -> list:
    """``obj`` itself if it is a list or tuple, else ``[obj]`` (MXNet's helper).

    >>> _as_list(1), _as_list((1, 2))
    ([1], (1, 2))
    """
    return obj if isinstance(obj, (list, tuple)) else [obj]


class _NullType:
    """The placeholder MXNet's generated operator functions use as a missing default."""

    def __repr__(self) -> str:
        return "_Null"


_Null = _NullType()


def _no_c_library(what: str) -> UnsupportedError:
    return unsupported(what, "symgraph runs on PyTorch and has no MXNet C library (libmxnet)")


def data_dir_default() -> str:
    """MXNet's default data folder: ``~/.mxnet`` (``%APPDATA%/mxnet`` on Windows).

    >>> data_dir_default().endswith('.mxnet') or platform.system() == 'Windows'
    True
    """
    if platform.system() == "Windows":
        return os.path.join(config.env("APPDATA"), "mxnet")
    return os.path.join(os.path.expanduser("~"), ".mxnet")


def data_dir() -> str:
    """Where MXNet keeps downloaded data: ``$MXNET_HOME``, else :func:`data_dir_default`."""
    return config.env("MXNET_HOME") or data_dir_default()


def register_error(func_name=None, cls=None):
    """Register an error class under a name in :data:`error_types` (usable as a decorator).

    >>> @register_error
    ... class MyError(MXNetError):
    ...     pass
    >>> error_types['MyError'] is MyError
    True
    """
    if callable(func_name):
        cls, func_name = func_name, func_name.__name__

    def register(mycls):
        error_types[func_name if isinstance(func_name, str) else mycls.__name__] = mycls
        return mycls
    return register if cls is None else register(cls)


for _builtin in (ValueError, TypeError, AttributeError, IndexError, NotImplementedError):
    register_error(_builtin)


def _describe_call(kind: str, function, alias, args) -> str:
    msg = f"Function {function}"
    if alias:
        msg += f' (namely operator "{alias}")'
    if args:
        msg += f" with arguments ({', '.join(args)})"
    return msg + f" is not {kind} and only available in NDArray."


@register_error
class NotImplementedForSymbol(MXNetError):
    """A function exists for NDArray but not for Symbol.

    >>> print(NotImplementedForSymbol(len, 'size', 1))  # doctest: +NORMALIZE_WHITESPACE
    Function len (namely operator "size") with arguments (<class 'int'>)
    is not implemented for Symbol and only available in NDArray.
    """

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function, self.alias = function.__name__, alias
        self.args = [str(type(a)) for a in args]

    def __str__(self) -> str:
        return _describe_call("implemented for Symbol", self.function, self.alias, self.args)


class NotSupportedForSparseNDArray(MXNetError):
    """A function exists for dense NDArrays but not for sparse ones."""

    def __init__(self, function, alias, *args):
        super().__init__()
        self.function, self.alias = function.__name__, alias
        self.args = [str(type(a)) for a in args]

    def __str__(self) -> str:
        return _describe_call("supported for SparseNDArray", self.function, self.alias,
                              self.args)


class StorageFallbackError(MXNetError, MemoryError):
    """An operator has no kernel for its sparse inputs and running it on dense copies would
    materialise an array larger than ``Config.sparse_fallback_limit`` elements."""


class DeviceError(MXNetError, OSError):
    """A context names a device this process cannot use (a GPU without CUDA, an index past
    the visible devices). An ``OSError`` too, as MXNet's failed CUDA driver loads are."""


def c2pyerror(err_msg: str) -> tuple[str, str | None]:
    """Turn a C API error message into Python style: the stack trace section (lines after
    ``Stack trace``) moved first as a traceback, and the error type named before ``:``.

    >>> c2pyerror("ValueError: bad shape\\nStack trace:\\n  [bt] (0) f\\n")
    ('Traceback (most recent call last):\\n  [bt] (0) f\\nValueError: bad shape', 'ValueError')
    """
    lines = err_msg.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    head = lines[0].split(":", 1)[0] if lines and ":" in lines[0] else None
    err_type = head if head and all(c.isalnum() or c in "_." for c in head) else None
    message, trace, in_trace = [], [], False
    for line in lines:
        if in_trace and line.startswith("  "):
            trace.append(line)
            continue
        in_trace = line.startswith("Stack trace")
        if not in_trace:
            message.append(line)
    out = ""
    if trace:
        out = "Traceback (most recent call last):\n" + "\n".join(reversed(trace)) + "\n"
    return out + "\n".join(message), err_type


def get_last_ffi_error():
    """MXNet reads the last error of its C library here; symgraph has none."""
    raise _no_c_library("mx.base.get_last_ffi_error")


def check_call(ret: int) -> None:
    """Check a C API return code: 0 passes; any other code would need MXNet's C library
    to describe the error, so it raises UnsupportedError.

    >>> check_call(0)
    """
    if ret != 0:
        get_last_ffi_error()


def c_str(string: str) -> ctypes.c_char_p:
    """A ``char *`` for a Python string.

    >>> c_str('Hello').value
    b'Hello'
    """
    return ctypes.c_char_p(string.encode("utf-8"))


def c_str_array(strings) -> ctypes.Array:
    """A ``const char **`` for a list of Python strings.

    >>> list(c_str_array(['a', 'bc']))
    [b'a', b'bc']
    """
    arr = (ctypes.c_char_p * len(strings))()
    arr[:] = [s.encode("utf-8") for s in strings]
    return arr


def c_array(ctype, values) -> ctypes.Array:
    """A ctypes array of ``ctype`` holding ``values``.

    >>> c_array(mx_float, [1, 2, 3])[1]
    2.0
    """
    out = (ctype * len(values))()
    out[:] = values
    return out


def c_array_buf(ctype, buf) -> ctypes.Array:
    """A ctypes array of ``ctype`` sharing the memory of a writable buffer.

    >>> import array
    >>> c_array_buf(mx_float, array.array('f', [1, 2, 3]))[2]
    3.0
    """
    return (ctype * len(buf)).from_buffer(buf)


def c_handle_array(objs) -> ctypes.Array:
    """A ``void **`` of the C handles of MXNet objects; symgraph's objects have none."""
    if any(getattr(o, "handle", None) is None for o in objs):
        raise _no_c_library("mx.base.c_handle_array (NDArray/Symbol C handles)")
    arr = (ctypes.c_void_p * len(objs))()
    arr[:] = [o.handle for o in objs]
    return arr


def ctypes2buffer(cptr, length: int) -> bytearray:
    """Copy ``length`` bytes behind a ``char *`` into a ``bytearray``.

    >>> raw = ctypes.create_string_buffer(b'abc')
    >>> ctypes2buffer(ctypes.cast(raw, ctypes.POINTER(ctypes.c_char)), 3)
    bytearray(b'abc')
    """
    if not isinstance(cptr, ctypes.POINTER(ctypes.c_char)):
        raise TypeError("expected char pointer")
    res = bytearray(length)
    ctypes.memmove((ctypes.c_char * length).from_buffer(res), cptr, length)
    return res


def ctypes2numpy_shared(cptr, shape) -> np.ndarray:
    """A float32 numpy array of ``shape`` sharing the memory behind a ``float *``.

    >>> buf = c_array(mx_float, [1, 2, 3, 4])
    >>> ctypes2numpy_shared(ctypes.cast(buf, mx_float_p), (2, 2)).tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    """
    if not isinstance(cptr, mx_float_p):
        raise RuntimeError("expected float pointer")
    size = int(np.prod(shape, dtype=np.int64))
    dbuffer = (mx_float * size).from_address(ctypes.addressof(cptr.contents))
    return np.frombuffer(dbuffer, dtype=np.float32).reshape(shape)


def build_param_doc(arg_names, arg_types, arg_descs, remove_dup: bool = True) -> str:
    """A numpydoc ``Parameters`` section from parallel lists (``num_args`` is left out).

    >>> print(build_param_doc(['data', 'axis'], ['NDArray', 'int'], ['Input.', '']))
    Parameters
    ----------
    data : NDArray
        Input.
    axis : int
    <BLANKLINE>
    """
    seen, entries = set(), []
    for key, type_info, desc in zip(arg_names, arg_types, arg_descs):
        if (key in seen and remove_dup) or key == "num_args":
            continue
        seen.add(key)
        entries.append(f"{key} : {type_info}" + (f"\n    {desc}" if desc else ""))
    return "Parameters\n----------\n" + "\n".join(entries) + "\n"


def add_fileline_to_docstring(module, incursive: bool = True) -> None:
    """Append ``From:<file>:<line>`` to the docstring of every function (and, with
    ``incursive``, every class's methods) defined in ``module``."""
    if isinstance(module, str):
        module = sys.modules[module]
    for _, obj in inspect.getmembers(module):
        if inspect.isbuiltin(obj):
            continue
        if inspect.isfunction(obj) or inspect.ismethod(obj):
            _add_fileline(getattr(obj, "__func__", obj))
        if inspect.isclass(obj) and incursive:
            add_fileline_to_docstring(obj, False)


def _add_fileline(func) -> None:
    if func.__doc__ is None or "From:" in func.__doc__:
        return
    try:
        fname, line = inspect.getsourcefile(func), inspect.getsourcelines(func)[-1]
    except (OSError, TypeError):
        return
    if fname is not None:
        func.__doc__ += f"\n\nFrom:{fname}:{line}"


class MXCallbackList(ctypes.Structure):
    """The callback table MXNet's C API hands to custom operators (kept for imports)."""

    _fields_ = [("num_callbacks", ctypes.c_int),
                ("callbacks", ctypes.POINTER(ctypes.CFUNCTYPE(ctypes.c_int))),
                ("contexts", ctypes.POINTER(ctypes.c_void_p))]


class _ClassPropertyDescriptor:
    """A property on the class itself (``Context.default_ctx``), with an optional setter."""

    def __init__(self, fget, fset=None):
        self.fget, self.fset = fget, fset

    def __get__(self, obj, klass=None):
        return self.fget.__get__(obj, klass if klass is not None else type(obj))()

    def __set__(self, obj, value):
        if not self.fset:
            raise MXNetError(f"cannot use the setter: {getattr(obj, '__name__', obj)} "
                             "to set attribute")
        klass = obj if inspect.isclass(obj) else type(obj)
        return self.fset.__get__(None if inspect.isclass(obj) else obj, klass)(value)

    def setter(self, func):
        self.fset = func if isinstance(func, (classmethod, staticmethod)) else classmethod(func)
        return self


class _MXClassPropertyMetaClass(type):
    """Routes ``Class.prop = value`` to a class property's setter."""

    def __setattr__(cls, key, value):
        prop = cls.__dict__.get(key)
        if isinstance(prop, _ClassPropertyDescriptor):
            return prop.__set__(cls, value)
        return super().__setattr__(key, value)


def classproperty(func):
    """Decorator: a read-only property of the class (add a setter with ``.setter``; class
    level assignment needs the :class:`_MXClassPropertyMetaClass` metaclass).

    >>> class A(with_metaclass(_MXClassPropertyMetaClass, object)):
    ...     _v = 1
    ...     @classproperty
    ...     def v(cls):
    ...         return cls._v
    ...     @v.setter
    ...     def v(cls, value):
    ...         cls._v = value
    >>> A.v = 5
    >>> A.v, A().v
    (5, 5)
    """
    return _ClassPropertyDescriptor(func if isinstance(func, (classmethod, staticmethod))
                                    else classmethod(func))


def with_metaclass(meta, *bases):
    """A base class whose subclasses are created by ``meta`` (six's idiom)."""
    class _Temporary(type):
        def __new__(cls, name, this_bases, namespace):
            return meta(name, bases, namespace)

        @classmethod
        def __prepare__(cls, name, this_bases):
            return meta.__prepare__(name, bases)
    return type.__new__(_Temporary, "temporary_class", (), {})


class _LibInfo:
    """``mx.base.libinfo``: the version symgraph implements; no MXNet library files exist."""

    __version__ = "1.9.1"

    @staticmethod
    def find_lib_path(prefix: str = "libmxnet"):
        raise _no_c_library(f"mx.libinfo.find_lib_path({prefix!r})")

    @staticmethod
    def find_include_path():
        raise _no_c_library("mx.libinfo.find_include_path")

    @staticmethod
    def find_conf_path(prefix: str = "tvmop"):
        raise _no_c_library(f"mx.libinfo.find_conf_path({prefix!r})")


libinfo = _LibInfo()
