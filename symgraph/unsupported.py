"""MXNet 1.9.1 modules symgraph does not provide, as importable modules that say so.

``import mxnet.rtc`` (or ``mx.rtc``) succeeds, so a script that imports it at
the top still runs; using any of its public names raises ``UnsupportedError`` naming the
module and why it is left out. A name used as a base class (a stand-in class)
can be subclassed; creating an instance raises.

>>> from symgraph import unsupported
>>> rtc = unsupported.module("rtc")
>>> rtc.CudaModule("")
Traceback (most recent call last):
...
symgraph.base.UnsupportedError: mx.rtc.CudaModule is not supported by symgraph: \
runtime CUDA compilation needs MXNet's C++ engine
"""
from __future__ import annotations

import sys
from types import ModuleType

from .base import unsupported

# module (under mxnet.) -> why it is left out
MODULES: dict[str, str] = {
    "rtc": "runtime CUDA compilation needs MXNet's C++ engine",
    "torch": "MXNet's Lua-Torch plugin is not provided",
    "tvmop": "TVM operators need MXNet's C++ build",
    "library": "loading MXNet C++ extension libraries needs MXNet's C++ engine",
    "notebook": "notebook callbacks are not provided",
    "numpy": "the NumPy-compatible interface (mx.np) is not implemented; symgraph follows "
             "MXNet 1.x's legacy NDArray semantics",
    "numpy_extension": "the NumPy-compatible interface (mx.npx) is not implemented",
    "symbol.numpy": "the NumPy-compatible symbol interface is not implemented",
    "ndarray.numpy": "the NumPy-compatible NDArray interface is not implemented",
    "ndarray.numpy_extension": "the NumPy-compatible NDArray interface is not implemented",
    "symbol.numpy_extension": "the NumPy-compatible symbol interface is not implemented",
    "contrib.tensorboard": "the TensorBoard logging callback is not provided",
    "contrib.svrg_optimization": "SVRG optimization is not implemented",
    "contrib.io": "contrib.io's DataLoaderIter is not implemented yet (data/tools issue)",
    "contrib.tensorrt": "TensorRT integration needs MXNet's C++ build",
    "contrib.amp": "automatic mixed precision (contrib.amp) is not implemented yet",
    "contrib.quantization": "quantization is not implemented",
    "contrib.text": "contrib.text is not implemented",
    "gluon.contrib.estimator": "the Gluon Estimator training loop is not implemented",
    "gluon.contrib.data": "gluon.contrib.data's samplers and text datasets are not "
                          "implemented yet (data/tools issue)",
    "gluon.contrib.cnn": "the deformable convolution layers need operators symgraph does "
                         "not implement",
    "api": "MXNet's C++ FFI is not part of symgraph",
    "ndarray_doc": "documentation helpers of MXNet's generated functions are not used",
    "symbol_doc": "documentation helpers of MXNet's generated functions are not used",
    "numpy_op_signature": "the NumPy-compatible interface is not implemented",
    "numpy_dispatch_protocol": "the NumPy-compatible interface is not implemented",
    "numpy_op_fallback": "the NumPy-compatible interface is not implemented",
}
# MXNet's short names for some of them
ALIASES = {"viz": "visualization", "np": "numpy", "npx": "numpy_extension", "th": "torch",
           "img": "image", "np_symbol": "symbol.numpy"}


class _StubMeta(type):
    """Stand-ins answer attribute lookups with further stand-ins (``amp.init`` where
    ``amp`` is a module in MXNet)."""

    def __getattr__(cls, attr: str):
        if attr.startswith("_"):
            raise AttributeError(attr)
        return _stub(f"{cls._qualified}.{attr}", cls._why)


def _stub(qualified: str, why: str) -> type:
    """A stand-in for one public name: calling or instantiating it raises."""
    def new(cls, *args, **kwargs):
        raise unsupported(qualified, why)

    return _StubMeta(qualified.rsplit(".", 1)[-1], (), {
        "__new__": new, "_qualified": qualified, "_why": why,
        "__doc__": f"``{qualified}``: not supported by symgraph ({why})."})


class UnsupportedModule(ModuleType):
    """A module whose every public attribute is a raising stand-in."""

    def __init__(self, name: str, why: str):
        super().__init__(f"symgraph.{name}", f"Not supported by symgraph: {why}.")
        self._mx_name, self._why = f"mx.{name}", why
        self.__path__ = []  # a package, so mxnet.contrib.amp style imports resolve

    def __getattr__(self, attr: str):
        if attr.startswith("_"):
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")
        if f"{self.__name__[len('symgraph.'):]}.{attr}" in MODULES:
            return module(f"{self.__name__[len('symgraph.'):]}.{attr}")
        stub = _stub(f"{self._mx_name}.{attr}", self._why)
        setattr(self, attr, stub)
        return stub


def reason(name: str) -> str | None:
    """Why ``mxnet.<name>`` is left out: its own entry or its nearest left-out parent's
    (``gluon.data.vision`` is left out with ``gluon.data``); None if it is not."""
    parts = ALIASES.get(name, name).split(".")
    for end in range(len(parts), 0, -1):
        why = MODULES.get(".".join(parts[:end]))
        if why is not None:
            return why
    return None


def module(name: str) -> UnsupportedModule:
    """The stand-in module for ``mxnet.<name>`` (one object per name, in ``sys.modules``)."""
    name = ALIASES.get(name, name)
    full = f"symgraph.{name}"
    existing = sys.modules.get(full)
    if isinstance(existing, UnsupportedModule):
        return existing
    made = UnsupportedModule(name, reason(name))
    sys.modules[full] = made
    return made


