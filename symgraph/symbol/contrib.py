"""``mx.sym.contrib``: MXNet's ``_contrib_*`` operators as symbol functions, made from the
operator registry on first access (see :mod:`symgraph.ops.namespaces`)."""
from ..ops.namespaces import module_getattr as _module_getattr
from .op_api import make_function as _make_function

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


def rand_zipfian(true_classes, num_sampled: int, range_max: int):
    """Symbol form of :func:`symgraph.ndarray.contrib.rand_zipfian`."""
    import math

    from .random import uniform
    log_range = math.log(range_max + 1)
    draws = uniform(0, log_range, shape=(num_sampled,), dtype="float64")
    sampled = (draws.exp() - 1).astype("int64") % range_max

    def expected(classes):
        c = classes.astype("float64")
        return ((c + 2.0) / (c + 1.0)).log() / log_range * num_sampled

    return sampled, expected(true_classes), expected(sampled)
