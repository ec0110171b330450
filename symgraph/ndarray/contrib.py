"""``mx.nd.contrib``: MXNet's ``_contrib_*`` operators as imperative functions, made from the
operator registry on first access (see :mod:`symgraph.ops.namespaces`), and MXNet's
Python-level contrib helpers."""
import importlib

from ..context import current_context
from ..contrib import functions as _functions
from ..contrib.functions import isfinite, isinf, isnan  # noqa: F401
from ..contrib.optimizer_updates import (  # noqa: F401 - MXNet's contrib wrappers
    adamw_update,
    mp_adamw_update,
    multi_adamw_update,
    multi_lamb_update,
    multi_mp_adamw_update,
    multi_mp_lamb_update,
)
from ..ops.namespaces import module_getattr as _module_getattr
from . import ndarray  # noqa: F401 - MXNet's contrib module carries ndarray.ndarray
from .control_flow import cond, foreach, while_loop  # noqa: F401 - MXNet's contrib names
from .random import uniform
from .register import make_function as _make_function

_op_getattr = _module_getattr("contrib", globals(), _make_function)


def __getattr__(name: str):
    if name == "mx":  # a name MXNet's contrib module carries: the package, which imports this
        return importlib.import_module("symgraph")
    return _op_getattr(name)


def rand_zipfian(true_classes, num_sampled: int, range_max: int, ctx=None):
    """See :func:`symgraph.contrib.functions.rand_zipfian` (arrays on ``ctx``)."""
    ctx = ctx or current_context()
    return _functions.rand_zipfian(uniform, true_classes.as_in_context(ctx), num_sampled,
                                   range_max, ctx=ctx)
