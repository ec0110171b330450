"""``mx.contrib``: the legacy ``contrib.autograd`` API and the ``contrib.ndarray`` /
``contrib.symbol`` operator namespaces. Its other parts (amp, onnx, quantization, text,
tensorboard, svrg) are stand-ins that raise ``UnsupportedError`` when used."""
from __future__ import annotations

import importlib

from . import autograd  # noqa: F401 - MXNet's mx.contrib.autograd

_NAMESPACES = {"ndarray": "symgraph.ndarray.contrib", "nd": "symgraph.ndarray.contrib",
               "symbol": "symgraph.symbol.contrib", "sym": "symgraph.symbol.contrib"}


def __getattr__(name: str):
    if name in _NAMESPACES:
        return importlib.import_module(_NAMESPACES[name])
    from .. import unsupported
    if f"contrib.{name}" in unsupported.MODULES:
        return unsupported.module(f"contrib.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
