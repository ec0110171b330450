"""``mx.sym.contrib``: MXNet's ``_contrib_*`` operators as symbol functions, made from the
operator registry on first access (see :mod:`symgraph.ops.namespaces`), and MXNet's
Python-level contrib helpers."""
from ..base import check_call  # noqa: F401
from ..contrib import functions as _functions
from ..contrib.functions import isfinite, isinf, isnan  # noqa: F401
from ..contrib.optimizer_updates import adamw_update, mp_adamw_update  # noqa: F401
from ..ops.namespaces import module_getattr as _module_getattr
from . import symbol  # noqa: F401 - MXNet's contrib carries the symbol module
from .control_flow import cond, foreach, while_loop  # noqa: F401 - MXNet's contrib names
from .naming import AttrScope  # noqa: F401
from .op_api import make_function as _make_function
from .random import uniform
from .symbol import Symbol  # noqa: F401

__getattr__ = _module_getattr("contrib", globals(), _make_function)


def rand_zipfian(true_classes, num_sampled: int, range_max: int):
    """See :func:`symgraph.contrib.functions.rand_zipfian`."""
    return _functions.rand_zipfian(uniform, true_classes, num_sampled, range_max)
