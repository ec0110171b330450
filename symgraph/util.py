"""``mx.util``: NumPy-semantics switches, GPU queries and environment access.

symgraph implements MXNet's legacy NDArray/Symbol API only. Of MXNet's two NumPy switches:

- **NumPy shape semantics** (``np_shape``, ``set_np_shape``, ``use_np_shape``) is a
  per-thread flag: :func:`is_np_shape` reports it and scripts may turn it on and off. Code
  that implements MXNet's NumPy-shape behaviour reads the flag (``infer_shape_partial``
  reports unknown shapes as ``None``/``-1``, ``tojson`` records ``is_np_shape``); everything
  else keeps legacy semantics, and code whose result would differ without implementing it
  calls :func:`legacy_shape_only`, which raises UnsupportedError while the flag is on.
- **NumPy array semantics** (``np_array``, ``set_np``, ``use_np_array``, ``use_np``) creates
  ``mx.np.ndarray`` objects in MXNet; symgraph has no ``mx.np``, so turning it on raises
  UnsupportedError. Decorating still works (at import), the call raises.

>>> from symgraph import util
>>> with util.np_shape(True):
...     util.is_np_shape()
True
>>> util.is_np_shape(), util.is_np_array()
(False, False)
>>> @util.use_np
... def f():
...     return 1
>>> f()  # doctest: +ELLIPSIS
Traceback (most recent call last):
symgraph.base.UnsupportedError: NumPy array semantics (mx.np) is not supported by symgraph: ...
"""
from __future__ import annotations

import functools
import inspect
import logging
import threading

from . import config
from .base import c_str, check_call, py_str, unsupported  # noqa: F401 - MXNet's mx.util names
from .context import Context, gpu_memory_info, num_gpus

_state = threading.local()
_NP_UFUNC_DEFAULTS = {"where": True, "casting": "same_kind", "order": "K", "dtype": None,
                      "subok": True}
_NP_DTYPES = ("int8", "uint8", "int32", "int64", "float16", "float32", "float64")
_NO_NP_ARRAY = ("symgraph implements MXNet's legacy mx.nd/mx.sym API only; there is no "
                "mx.np ndarray to create")


def get_gpu_count() -> int:
    """Number of visible GPUs (0 without CUDA).

    >>> get_gpu_count() >= 0
    True
    """
    return num_gpus()


def get_gpu_memory(gpu_dev_id: int) -> tuple[int, int]:
    """Free and total bytes of GPU ``gpu_dev_id``'s memory (an MXNetError without it)."""
    return gpu_memory_info(gpu_dev_id)


def get_cuda_compute_capability(ctx: Context) -> int:
    """The CUDA compute capability of a GPU context, e.g. 90 for sm_90.

    A CPU context raises ``ValueError``; a GPU that is not visible raises DeviceError (an
    ``OSError``, as MXNet's failed ``libcuda`` load on a machine without CUDA).

    >>> get_cuda_compute_capability(Context('cpu'))
    Traceback (most recent call last):
    ValueError: Expecting a gpu context to get cuda compute capability, while received ctx cpu(0)
    """
    if ctx.device_type != "gpu":
        raise ValueError("Expecting a gpu context to get cuda compute capability, "
                         f"while received ctx {ctx}")
    import torch
    major, minor = torch.cuda.get_device_capability(ctx.torch_device)
    return major * 10 + minor


# --- environment --------------------------------------------------------------------------

def getenv(name: str) -> str | None:
    """An environment variable's value, or None when it is not set.

    >>> getenv('SYMGRAPH_SURELY_UNSET_VARIABLE') is None
    True
    """
    return config.getenv(name)


def setenv(name: str, value: str | None) -> None:
    """Set an environment variable (``None`` removes it); child processes see it too.

    >>> setenv('SYMGRAPH_DOCTEST_VAR', '1'); getenv('SYMGRAPH_DOCTEST_VAR')
    '1'
    >>> setenv('SYMGRAPH_DOCTEST_VAR', None); getenv('SYMGRAPH_DOCTEST_VAR') is None
    True
    """
    config.setenv(name, value)


# --- NumPy shape semantics ----------------------------------------------------------------

def is_np_shape() -> bool:
    """Whether NumPy shape semantics is turned on in this thread (off by default)."""
    return getattr(_state, "np_shape", False)


def set_np_shape(active: bool) -> bool:
    """Turn NumPy shape semantics on or off in this thread; returns the previous state.

    >>> set_np_shape(True), is_np_shape(), set_np_shape(False)
    (False, True, True)
    """
    if not active and is_np_array():
        raise ValueError("Deactivating NumPy shape semantics while NumPy array semantics is "
                         "still active is not allowed; call reset_np() to deactivate both")
    if active and not getattr(_state, "np_shape_logged", False):
        logging.info("NumPy-shape semantics has been activated; symgraph's legacy mx.nd/mx.sym "
                     "operators keep their shape rules")
        _state.np_shape_logged = True
    previous, _state.np_shape = is_np_shape(), bool(active)
    return previous


def legacy_shape_only(what: str) -> None:
    """Raise UnsupportedError if NumPy shape semantics is on: for code whose result would
    differ from MXNet's under NumPy shapes (a ``0`` read as unknown, ``()`` as unknown).

    >>> legacy_shape_only('infer_shape')
    >>> with np_shape(True):
    ...     legacy_shape_only('infer_shape')  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    symgraph.base.UnsupportedError: infer_shape under NumPy shape semantics is not supported...
    """
    if is_np_shape():
        raise unsupported(f"{what} under NumPy shape semantics",
                          "symgraph keeps MXNet's legacy shapes (0 = unknown dimension, () = "
                          "unknown shape); leave mx.np_shape off")


class _NumpyShapeScope:
    """``with np_shape(active):`` sets the flag and restores the previous state on exit."""

    def __init__(self, active: bool | None):
        self._active, self._previous = active, None

    def __enter__(self) -> None:
        if self._active is not None:
            self._previous = set_np_shape(self._active)

    def __exit__(self, *exc) -> None:
        if self._active is not None and self._previous != self._active:
            set_np_shape(self._previous)


def np_shape(active: bool = True) -> _NumpyShapeScope:
    """A ``with`` scope with NumPy shape semantics turned on (or off)."""
    return _NumpyShapeScope(active)


def _decorate(func, scope, decorator_name: str):
    """Run ``func`` (every method, static function and property of a class) in ``scope()``."""
    if inspect.isclass(func):
        def member(f):
            return inspect.isfunction(f) or inspect.ismethod(f) or isinstance(f, property)
        for name, method in inspect.getmembers(func, predicate=member):
            if isinstance(method, property):
                method = property(_decorate(method.__get__, scope, decorator_name),
                                  method.__set__, method.__delattr__, method.__doc__)
            else:
                method = _decorate(method, scope, decorator_name)
            setattr(func, name, method)
        return func
    if not callable(func):
        raise TypeError(f"{decorator_name} can only decorate classes and callable objects, "
                        f"while received a {type(func)}")

    @functools.wraps(func)
    def scoped(*args, **kwargs):
        with scope():
            return func(*args, **kwargs)
    return scoped


def use_np_shape(func):
    """Decorator: run a function (or every method of a class) with NumPy shape semantics.

    >>> use_np_shape(is_np_shape)()
    True
    """
    return _decorate(func, functools.partial(np_shape, True), "use_np_shape")


# --- NumPy array semantics ----------------------------------------------------------------

def is_np_array() -> bool:
    """Whether NumPy array semantics is on: always False in symgraph (it cannot be turned
    on)."""
    return False


class _NumpyArrayScope:
    """``with np_array(active):``; turning the semantics on raises UnsupportedError."""

    def __init__(self, active: bool):
        self._active = bool(active)

    def __enter__(self) -> _NumpyArrayScope:
        _set_np_array(self._active)
        return self

    def __exit__(self, *exc) -> None:
        return None


def _set_np_array(active: bool) -> bool:
    if active:
        raise unsupported("NumPy array semantics (mx.np)", _NO_NP_ARRAY)
    return is_np_array()


def np_array(active: bool = True) -> _NumpyArrayScope:
    """A ``with`` scope for NumPy array semantics; only ``active=False`` is supported."""
    return _NumpyArrayScope(active)


def use_np_array(func):
    """Decorator for NumPy array semantics: decorating works, calling raises
    UnsupportedError (symgraph has no ``mx.np``)."""
    return _decorate(func, functools.partial(np_array, True), "use_np_array")


def use_np(func):
    """Decorator for NumPy shape and array semantics (see :func:`use_np_array`)."""
    return use_np_shape(use_np_array(func))


def set_np(shape: bool = True, array: bool = True) -> None:
    """Set NumPy shape and array semantics together; ``array=True`` raises
    UnsupportedError.

    >>> set_np(shape=True, array=False); is_np_shape()
    True
    >>> reset_np(); is_np_shape()
    False
    """
    if not shape and array:
        raise ValueError("NumPy Shape semantics is required in using NumPy array semantics.")
    _set_np_array(array)
    set_np_shape(shape)


def reset_np() -> None:
    """Turn NumPy shape and array semantics off."""
    set_np(shape=False, array=False)


# --- NumPy ufunc argument checks ----------------------------------------------------------

def set_module(module: str | None):
    """Decorator: set ``__module__`` of a function or class to ``module``.

    >>> set_module('mxnet.numpy')(lambda: 0).__module__
    'mxnet.numpy'
    """
    def decorator(func):
        if module is not None:
            func.__module__ = module
        return func
    return decorator


def np_ufunc_legal_option(key: str, value) -> bool:
    """Whether ``key=value`` is a legal NumPy ufunc keyword argument.

    >>> np_ufunc_legal_option('casting', 'safe'), np_ufunc_legal_option('casting', 'x')
    (True, False)
    """
    import numpy as np
    if key == "where":
        return True
    if key == "casting":
        return value in ("no", "equiv", "safe", "same_kind", "unsafe")
    if key == "order":
        return isinstance(value, str)
    if key == "dtype":
        return value in _NP_DTYPES or any(value is getattr(np, n) for n in _NP_DTYPES)
    if key == "subok":
        return isinstance(value, bool)
    return False


def _check_ufunc_kwargs(name: str, kwargs: dict, unary: bool) -> None:
    for key, value in kwargs.items():
        if key not in _NP_UFUNC_DEFAULTS:
            raise TypeError(f"{key} is an invalid keyword to function '{name}'")
        if value == _NP_UFUNC_DEFAULTS[key]:
            continue
        if np_ufunc_legal_option(key, value):
            where = f" for operator {name}" if unary else ""
            raise NotImplementedError(f"{key}={value} is not implemented yet{where}")
        raise TypeError(f"{key}={value} not understood for operator {name}" if unary
                        else f"{key} {value} not understood")


def wrap_np_unary_func(func):
    """Decorator for a unary ufunc ``func(x, out=None)``: NumPy's other keyword arguments
    raise TypeError (unknown) or NotImplementedError (known, non-default)."""
    @functools.wraps(func)
    def wrapped(x, out=None, **kwargs):
        _check_ufunc_kwargs(func.__name__, kwargs, unary=True)
        return func(x, out=out)
    return wrapped


def wrap_np_binary_func(func):
    """Decorator for a binary ufunc ``func(x1, x2, out=None)`` (see
    :func:`wrap_np_unary_func`)."""
    @functools.wraps(func)
    def wrapped(x1, x2, out=None, **kwargs):
        _check_ufunc_kwargs(func.__name__, kwargs, unary=False)
        return func(x1, x2, out=out)
    return wrapped
