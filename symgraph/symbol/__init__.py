"""``mx.sym``: symbols, variables, groups, JSON load/save and one function per operator.

Operator functions (``sym.FullyConnected``, ``sym.relu``, ...) are made on first access
from the op registry (PEP 562 ``__getattr__``), so importing this module does no work.
"""
from __future__ import annotations

from ..ops.namespaces import module_getattr as _module_getattr
from . import _internal, contrib, image, linalg, op, sparse
from .json_io import fromjson, load, load_json
from .op_api import make_function as _make_function
from .naming import AttrScope, NameManager, Prefix
from .symbol import Group, Symbol, Variable, var

__all__ = ["AttrScope", "Group", "NameManager", "Prefix", "Symbol", "Variable", "arange",
           "fromjson", "full", "load", "load_json", "ones", "var", "zeros"]

def zeros(shape, dtype=None, **kwargs) -> Symbol:
    """A symbol of zeros of ``shape`` (op ``_zeros``)."""
    return _creation("_zeros", shape=shape, dtype=dtype, **kwargs)


def ones(shape, dtype=None, **kwargs) -> Symbol:
    """A symbol of ones of ``shape`` (op ``_ones``)."""
    return _creation("_ones", shape=shape, dtype=dtype, **kwargs)


def full(shape, val, dtype=None, **kwargs) -> Symbol:
    """A symbol of ``shape`` filled with ``val`` (op ``_full``)."""
    return _creation("_full", shape=shape, value=val, dtype=dtype, **kwargs)


def arange(start, stop=None, step=1.0, repeat=1, infer_range=False, name=None, dtype=None):
    """Evenly spaced values (op ``_arange``).

    >>> arange(0, 5).infer_shape()[1]
    [(5,)]
    """
    return _creation("_arange", start=start, stop=stop, step=step, repeat=repeat,
                     infer_range=infer_range, name=name, dtype=dtype)


def _creation(op: str, **kwargs) -> Symbol:
    from .op_api import invoke
    name, attr = kwargs.pop("name", None), kwargs.pop("attr", None)
    if kwargs.get("dtype") is None:
        kwargs["dtype"] = "float32"  # MXNet's wrappers always record the dtype
    return invoke(op, [], kwargs, name=name, attr=attr)


# every operator (sym.FullyConnected, sym.relu...) is made from the registry on first access
__getattr__ = _module_getattr("", globals(), _make_function)


def __dir__() -> list[str]:
    from ..ops.namespaces import names
    return sorted(set(__all__) | set(names("")))
