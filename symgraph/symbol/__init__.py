"""``mx.sym``: symbols, variables, groups, JSON load/save and one function per operator.

Operator functions (``sym.FullyConnected``, ``sym.relu``, ...) are made on first access
from the op registry (PEP 562 ``__getattr__``), so importing this module does no work.
"""
from __future__ import annotations

from .json_io import fromjson, load, load_json
from .naming import AttrScope, NameManager, Prefix
from .symbol import Group, Symbol, Variable, var

__all__ = ["AttrScope", "Group", "NameManager", "Prefix", "Symbol", "Variable", "fromjson",
           "load", "load_json", "var"]

_functions: dict = {}


def __getattr__(name: str):
    if name.startswith("__"):
        raise AttributeError(name)
    from .. import ops  # noqa: F401 - fills the registry
    from ..ops.base import OPS
    from .op_api import make_function
    if name in OPS:
        if name not in _functions:
            _functions[name] = make_function(name, OPS[name])
        return _functions[name]
    raise AttributeError(f"module 'symgraph.symbol' has no attribute {name!r} (no operator of "
                         "that name is registered)")


def __dir__() -> list[str]:
    from .. import ops  # noqa: F401
    from ..ops.base import OPS
    return sorted(set(__all__) | set(OPS))
