"""MXNet 1.9.1's public Python surface, per module: the names a drop-in must provide.

Run in a virtualenv with ``mxnet==1.9.1`` (``pip install mxnet==1.9.1 "numpy<1.24"``)::

    python tools/mxnet_surface.py > tests/fixtures/mxnet/surface.json

For each module the issue puts in scope it records every public name with its kind
(module, class, function, value), and for the main classes their public methods and
properties. ``tests/test_surface.py`` checks symgraph against the file.
"""
from __future__ import annotations

import importlib
import inspect
import json
import sys
import types

MODULES = [
    "mxnet", "mxnet.symbol", "mxnet.symbol.random", "mxnet.symbol.linalg",
    "mxnet.symbol.contrib", "mxnet.symbol.image", "mxnet.ndarray", "mxnet.ndarray.random",
    "mxnet.ndarray.linalg", "mxnet.ndarray.contrib", "mxnet.ndarray.image", "mxnet.module",
    "mxnet.model", "mxnet.io", "mxnet.metric", "mxnet.initializer", "mxnet.optimizer",
    "mxnet.lr_scheduler", "mxnet.rnn", "mxnet.gluon", "mxnet.gluon.nn", "mxnet.gluon.rnn",
    "mxnet.gluon.loss", "mxnet.gluon.utils", "mxnet.gluon.parameter", "mxnet.gluon.block",
    "mxnet.gluon.trainer", "mxnet.autograd", "mxnet.kvstore", "mxnet.callback",
    "mxnet.monitor", "mxnet.test_utils", "mxnet.executor", "mxnet.executor_manager",
    "mxnet.context", "mxnet.random", "mxnet.base", "mxnet.name", "mxnet.attribute",
    "mxnet.util", "mxnet.runtime",
]

CLASSES = [
    "mxnet.ndarray.NDArray", "mxnet.symbol.Symbol", "mxnet.executor.Executor",
    "mxnet.module.Module", "mxnet.module.BucketingModule", "mxnet.module.BaseModule",
    "mxnet.kvstore.KVStore", "mxnet.gluon.Parameter", "mxnet.gluon.ParameterDict",
    "mxnet.gluon.Block", "mxnet.gluon.HybridBlock", "mxnet.gluon.Trainer",
    "mxnet.context.Context", "mxnet.io.DataIter", "mxnet.io.NDArrayIter",
    "mxnet.optimizer.Optimizer", "mxnet.metric.EvalMetric", "mxnet.model.FeedForward",
]


def _kind(value) -> str:
    if isinstance(value, types.ModuleType):
        return "module"
    if inspect.isclass(value):
        return "class"
    if callable(value):
        return "function"
    return "value"


def _public(module) -> dict[str, str]:
    names = {}
    exported = set(getattr(module, "__all__", ()) or ())
    for name in dir(module):
        if name.startswith("_"):
            continue
        value = getattr(module, name)
        kind = _kind(value)
        home = getattr(value, "__name__" if kind == "module" else "__module__", "") or ""
        if kind == "module" and not home.startswith("mxnet"):
            continue  # numpy, ctypes, os... imported for the module's own use
        if kind in ("class", "function") and not home.startswith("mxnet") \
                and name not in exported and not inspect.isclass(value):
            continue  # helpers imported from the standard library
        if kind == "class" and not home.startswith("mxnet") and name not in exported \
                and home in ("builtins", "collections", "abc", "typing", "enum",
                             "functools", "contextlib", "threading", "ctypes"):
            continue
        names[name] = kind
    return names


def _members(path: str) -> dict[str, str]:
    module, cls = path.rsplit(".", 1)
    klass = getattr(importlib.import_module(module), cls)
    out = {}
    for name, value in inspect.getmembers(klass):
        if name.startswith("_") and name not in ("__getitem__", "__setitem__", "__len__",
                                                 "__iter__", "__call__", "__add__"):
            continue
        out[name] = "property" if isinstance(value, property) else _kind(value)
    return out


def main() -> None:
    import mxnet
    surface = {"mxnet": mxnet.__version__, "python": sys.version.split()[0],
               "modules": {}, "classes": {}}
    for name in MODULES:
        surface["modules"][name] = _public(importlib.import_module(name))
    for path in CLASSES:
        surface["classes"][path] = _members(path)
    json.dump(surface, sys.stdout, indent=0, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
