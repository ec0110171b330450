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


def rand_zipfian(true_classes, num_sampled: int, range_max: int, ctx=None):
    """Draw ``num_sampled`` classes from the approximately log-uniform (Zipfian)
    distribution over ``[0, range_max)``; returns the samples (int64), the expected counts
    of ``true_classes`` and of the samples (MXNet's candidate sampler for sampled softmax).
    """
    import math

    ctx = ctx or current_context()
    log_range = math.log(range_max + 1)
    draws = uniform(0, log_range, shape=(num_sampled,), dtype="float64", ctx=ctx)
    sampled = (draws.exp() - 1).astype("int64") % range_max

    def expected(classes):
        c = classes.astype("float64")
        return ((c + 2.0) / (c + 1.0)).log() / log_range * num_sampled

    return sampled, expected(true_classes.as_in_context(ctx)), expected(sampled)


import symgraph as mx  # noqa: E402,F401 - names MXNet's contrib module carries

from .. import ndarray  # noqa: E402,F401
from ..context import current_context  # noqa: E402,F401
from .random import uniform  # noqa: E402,F401


def _operator_function(registered: str):
    """A Python-level contrib function over an operator (raises until it is implemented)."""
    def fn(*args, **kwargs):
        from .register import invoke
        return invoke(registered, args, kwargs, kwargs.pop("out", None))

    fn.__name__ = fn.__qualname__ = registered.lstrip("_")
    return fn


adamw_update = _operator_function("_adamw_update")
mp_adamw_update = _operator_function("_mp_adamw_update")
multi_adamw_update = _operator_function("_multi_adamw_update")
multi_mp_adamw_update = _operator_function("_multi_mp_adamw_update")
multi_lamb_update = _operator_function("_multi_lamb_update")
multi_mp_lamb_update = _operator_function("_multi_mp_lamb_update")
cond = _operator_function("_cond")  # control flow: the operators issue
foreach = _operator_function("_foreach")
while_loop = _operator_function("_while_loop")
