"""``mx.sym.linalg``: MXNet's ``_linalg_*`` operators as symbol functions, made from the
operator registry on first access (see :mod:`symgraph.ops.namespaces`)."""
from ..ops.namespaces import module_getattr as _module_getattr
from .op_api import make_function as _make_function

__getattr__ = _module_getattr("linalg", globals(), _make_function)
