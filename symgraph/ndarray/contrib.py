"""``mx.nd.contrib``: MXNet's ``_contrib_*`` operators as imperative functions, made from the
operator registry on first access (see :mod:`symgraph.ops.namespaces`)."""
from ..ops.namespaces import module_getattr as _module_getattr
from .register import make_function as _make_function

__getattr__ = _module_getattr("contrib", globals(), _make_function)


def isnan(data):
    """1 where ``data`` is NaN, else 0 (MXNet's contrib helper over ``data != data``)."""
    return data != data


def isinf(data):
    """1 where ``data`` is +-inf, else 0."""
    return data.abs() == float("inf")


def isfinite(data):
    """1 where ``data`` is neither NaN nor +-inf, else 0."""
    return (data == data) * (data.abs() != float("inf"))
