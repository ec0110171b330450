"""``mx.contrib``: the legacy ``contrib.autograd`` API and the ``contrib.ndarray`` /
``contrib.symbol`` operator namespaces. ``contrib.onnx`` is MXNet's older path of
``mx.onnx``. Its other parts (amp, quantization, text,
tensorboard, svrg) are stand-ins that raise ``UnsupportedError`` when used."""
from __future__ import annotations

import importlib

# submodules on first use: ``autograd`` sits on the imperative layer, above the symbol and
# ndarray namespaces that import ``contrib.functions``
_NAMESPACES = {"ndarray": "symgraph.ndarray.contrib", "nd": "symgraph.ndarray.contrib",
               "symbol": "symgraph.symbol.contrib", "sym": "symgraph.symbol.contrib",
               "autograd": "symgraph.contrib.autograd", "onnx": "symgraph.contrib.onnx"}


def __getattr__(name: str):
    if name in _NAMESPACES:
        return importlib.import_module(_NAMESPACES[name])
    from .. import unsupported
    if f"contrib.{name}" in unsupported.MODULES:
        return unsupported.module(f"contrib.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
