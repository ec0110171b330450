"""``import mxnet`` resolving to symgraph: an opt-in import alias for unchanged MXNet scripts.

:func:`install` puts a finder first on ``sys.meta_path`` that answers every ``mxnet`` and
``mxnet.X`` import with the symgraph module implementing it, so ``mxnet.ndarray`` *is*
``symgraph.ndarray`` (one module object under two names; isinstance checks and module
state are shared). MXNet module paths that symgraph lays out differently are mapped by
:data:`MODULES`; any other ``mxnet.a.b`` resolves to ``symgraph.a.b``.

``python -m symgraph run script.py`` (see :mod:`symgraph.__main__`) installs the alias for
the script and every Python process it starts: ``PYTHONPATH`` gets a folder holding a
bootstrap ``mxnet`` package whose ``__init__`` calls :func:`install`.

Under the alias ``mx.__version__`` is ``"1.9.1"`` (the MXNet release whose behaviour is the
spec; scripts branch on it); ``symgraph.SYMGRAPH_VERSION`` keeps symgraph's own version.

>>> from symgraph import alias
>>> alias.target_module("mxnet.name")
'symgraph.symbol.naming'
>>> alias.target_module("mxnet.ndarray")
'symgraph.ndarray'
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from types import ModuleType

MXNET_VERSION = "1.9.1"

# MXNet module path -> the symgraph module that implements it, where the layouts differ
MODULES: dict[str, str] = {
    "mxnet": "symgraph",
    "mxnet.autograd": "symgraph.imperative.autograd",
    "mxnet.name": "symgraph.symbol.naming",
    "mxnet.attribute": "symgraph.symbol.naming",
    "mxnet.symbol.op": "symgraph.symbol.op",
    "mxnet.gluon.rnn.rnn_cell": "symgraph.gluon.rnn.rnn_cell",
    "mxnet.contrib.ndarray": "symgraph.ndarray.contrib",
    "mxnet.contrib.symbol": "symgraph.symbol.contrib",
}

BOOTSTRAP_DIR = os.path.join(os.path.dirname(__file__), "alias_path")


def target_module(fullname: str) -> str:
    """The symgraph module name answering the MXNet import ``fullname``."""
    if fullname in MODULES:
        return MODULES[fullname]
    return "symgraph" + fullname[len("mxnet"):]


class _AliasLoader(importlib.abc.Loader):
    """Hands back an already imported symgraph module instead of executing a file."""

    def __init__(self, module: ModuleType):
        self.module = module
        self.spec = getattr(module, "__spec__", None)

    def create_module(self, spec):
        return self.module

    def exec_module(self, module) -> None:
        # the import system stamps the alias spec on the module; keep symgraph's own
        if self.spec is not None:
            module.__spec__ = self.spec


class MXNetAliasFinder(importlib.abc.MetaPathFinder):
    """Answers ``mxnet`` and ``mxnet.*`` imports with symgraph's modules."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "mxnet" and not fullname.startswith("mxnet."):
            return None
        name = target_module(fullname)
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name != name:
                raise  # the module exists and failed importing something else
            module = _unsupported_module(fullname[len("mxnet."):])
            if module is None:
                return None
        is_package = hasattr(module, "__path__")
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(module),
                                              is_package=is_package)


def _unsupported_module(name: str) -> ModuleType | None:
    """The raising stand-in for an MXNet module symgraph leaves out (None: no such module)."""
    from . import unsupported
    if unsupported.reason(name) is not None:
        return unsupported.module(name)
    return None


def installed() -> bool:
    """Whether the alias finder is on ``sys.meta_path``."""
    return any(isinstance(f, MXNetAliasFinder) for f in sys.meta_path)


def real_mxnet_location() -> str | None:
    """Where a real MXNet installation lives, or None (the alias's own bootstrap ignored)."""
    for entry in sys.path:
        if os.path.abspath(entry or ".") == os.path.abspath(BOOTSTRAP_DIR):
            continue
        spec = importlib.machinery.PathFinder.find_spec("mxnet", [entry or "."])
        if spec is not None:
            return spec.origin or str(list(spec.submodule_search_locations or []))
    return None


def first() -> None:
    """Put the alias finder back in front of ``sys.meta_path``: a finder inserted later
    (pytest's assertion rewriter) would otherwise load ``symgraph/test_utils.py`` a second
    time as ``mxnet.test_utils``, a distinct module object."""
    finders = [f for f in sys.meta_path if isinstance(f, MXNetAliasFinder)]
    if finders:
        sys.meta_path[:] = finders[:1] + [f for f in sys.meta_path if f not in finders]


def pytest_configure(config) -> None:
    """pytest hook (``python -m symgraph run -m pytest`` loads this module as a plugin)."""
    first()


def install() -> ModuleType:
    """Make ``import mxnet`` (and every ``mxnet.X``) resolve to symgraph; returns the module.

    Idempotent. Modules already imported under MXNet's names are replaced.
    """
    import symgraph
    if not installed():
        sys.meta_path.insert(0, MXNetAliasFinder())
    if not hasattr(symgraph, "SYMGRAPH_VERSION"):
        symgraph.SYMGRAPH_VERSION = symgraph.__version__
        symgraph.__version__ = MXNET_VERSION
    for name in [n for n in sys.modules if n == "mxnet" or n.startswith("mxnet.")]:
        if not sys.modules[name].__name__.startswith("symgraph"):
            del sys.modules[name]  # the bootstrap package itself
    sys.modules["mxnet"] = symgraph
    return symgraph
