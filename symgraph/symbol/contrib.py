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

    log_range = math.log(range_max + 1)
    draws = uniform(0, log_range, shape=(num_sampled,), dtype="float64")
    sampled = (draws.exp() - 1).astype("int64") % range_max

    def expected(classes):
        c = classes.astype("float64")
        return ((c + 2.0) / (c + 1.0)).log() / log_range * num_sampled

    return sampled, expected(true_classes), expected(sampled)


from .. import symbol  # noqa: E402,F401 - names MXNet's contrib module carries
from ..base import check_call  # noqa: E402,F401
from .naming import AttrScope  # noqa: E402,F401
from .random import uniform  # noqa: E402,F401
from .symbol import Symbol  # noqa: E402,F401


def _operator_function(registered: str):
    """A Python-level contrib function over an operator (raises until it is implemented)."""
    def fn(*args, **kwargs):
        from .op_api import invoke
        return invoke(registered, list(args), kwargs)

    fn.__name__ = fn.__qualname__ = registered.lstrip("_")
    return fn


adamw_update = _operator_function("_adamw_update")
mp_adamw_update = _operator_function("_mp_adamw_update")
cond = _operator_function("_cond")  # control flow: the operators issue
foreach = _operator_function("_foreach")
while_loop = _operator_function("_while_loop")
