"""``mx.sym``: symbols, variables, groups, JSON load/save and one function per operator.

Operator functions (``sym.FullyConnected``, ``sym.relu``, ...) are made on first access
from the op registry (PEP 562 ``__getattr__``), so importing this module does no work.
"""
from __future__ import annotations

from collections.abc import Callable
from numbers import Number

from .. import unsupported as _unsupported
from ..ops.namespaces import module_getattr as _module_getattr
from . import _internal, contrib, image, linalg, op, random, sparse  # noqa: F401 - namespaces
from . import _internal as gen__internal  # noqa: F401 - MXNet's generated-module names
from . import contrib as gen_contrib  # noqa: F401
from . import image as gen_image  # noqa: F401
from . import linalg as gen_linalg  # noqa: F401
from . import op as gen_op  # noqa: F401
from . import op_api as register  # noqa: F401 - MXNet's mxnet.symbol.register
from . import sparse as gen_sparse  # noqa: F401
from .json_io import fromjson, load, load_json
from .naming import AttrScope, NameManager, Prefix
from .op_api import make_function as _make_function
from .symbol import Group, Symbol, Variable, var

# MXNet's NumPy-interface namespaces: stand-ins that raise when used
np = numpy = _unsupported.module("symbol.numpy")
npx = numpy_extension = _unsupported.module("symbol.numpy_extension")

__all__ = ["AttrScope", "Group", "NameManager", "Prefix", "Symbol", "Variable", "arange",
           "fromjson", "full", "hypot", "load", "load_json", "maximum", "minimum", "ones", "pow",
           "power", "var", "zeros"]

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


def _scalar_pair(name: str, left, right, ops: tuple[str, str, str], both: Callable):
    """MXNet's Python helpers over two operands that may be symbols or numbers: (symbol,
    symbol), (symbol, number) and (number, symbol) pick ``ops``; two numbers use ``both``."""
    from .op_api import invoke
    pair, scalar, reflected = ops
    if isinstance(left, Symbol) and isinstance(right, Symbol):
        return invoke(pair, [left, right], {})
    if isinstance(left, Symbol) and isinstance(right, Number):
        return invoke(scalar, [left], {"scalar": right})
    if isinstance(left, Number) and isinstance(right, Symbol):
        return invoke(reflected, [right], {"scalar": left})
    if isinstance(left, Number) and isinstance(right, Number):
        return both(left, right)
    raise TypeError(f"{name}: types ({type(left).__name__}, {type(right).__name__}) not "
                    "supported")


def pow(base, exp):  # MXNet's name
    """``base ** exp`` elementwise; either may be a number.

    >>> pow(var('x'), 2).list_arguments(), pow(2, 3)
    (['x'], 8)
    """
    return _scalar_pair("pow", base, exp, ("_Power", "_PowerScalar", "_RPowerScalar"),
                        lambda a, b: a ** b)


power = pow


def maximum(left, right):
    """Elementwise maximum; either operand may be a number.

    >>> maximum(var('x'), 0.5).tojson().count('_maximum_scalar')
    1
    """
    return _scalar_pair("maximum", left, right,
                        ("_Maximum", "_MaximumScalar", "_MaximumScalar"), max)


def minimum(left, right):
    """Elementwise minimum; either operand may be a number."""
    return _scalar_pair("minimum", left, right,
                        ("_Minimum", "_MinimumScalar", "_MinimumScalar"), min)


def hypot(left, right):
    """``sqrt(left**2 + right**2)`` elementwise; either operand may be a number."""
    return _scalar_pair("hypot", left, right, ("_Hypot", "_HypotScalar", "_HypotScalar"),
                        lambda a, b: (a * a + b * b) ** 0.5)


def eye(N, M=0, k=0, dtype=None, **kwargs) -> Symbol:  # MXNet's names
    """An ``N x M`` matrix symbol with ones on diagonal ``k`` (op ``_eye``)."""
    return _creation("_eye", N=N, M=M, k=k, dtype=dtype, **kwargs)


def linspace(start, stop, num, endpoint=True, name=None, dtype=None) -> Symbol:
    """``num`` evenly spaced values (op ``_linspace``)."""
    return _creation("_linspace", start=start, stop=stop, num=num, endpoint=endpoint,
                     name=name, dtype=dtype)


def histogram(a, bins=10, range=None, **kwargs) -> Symbol:  # MXNet's name
    """Histogram counts and edges of ``a`` (op ``_histogram``)."""
    from .op_api import invoke
    if isinstance(bins, Symbol):
        return invoke("_histogram", [a, bins], kwargs)
    if range is None:
        raise ValueError("null range is not supported in symbol mode")
    return invoke("_histogram", [a], {"bin_cnt": bins, "range": range, **kwargs})


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False) -> Symbol:
    """Split into equal sections or at the given indices (op ``_split_v2``)."""
    from .op_api import invoke
    if isinstance(indices_or_sections, int):
        extra = {"sections": indices_or_sections, "indices": ()}
    else:
        extra = {"sections": 0, "indices": (0, *indices_or_sections)}
    return invoke("_split_v2", [ary], {"axis": axis, "squeeze_axis": squeeze_axis, **extra})


def _creation(op_name: str, **kwargs) -> Symbol:
    from .op_api import invoke
    name, attr = kwargs.pop("name", None), kwargs.pop("attr", None)
    if kwargs.get("dtype") is None:
        kwargs["dtype"] = "float32"  # MXNet's wrappers always record the dtype
    return invoke(op_name, [], kwargs, name=name, attr=attr)


# every operator (sym.FullyConnected, sym.relu...) is made from the registry on first access
__getattr__ = _module_getattr("", globals(), _make_function)


def __dir__() -> list[str]:
    from ..ops.namespaces import names
    return sorted(set(__all__) | set(names("")))

from ..ops.namespaces import add_fluent_methods as _add_fluent_methods  # noqa: E402

_add_fluent_methods(Symbol, __name__)
