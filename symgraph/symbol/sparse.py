"""``mx.sym.sparse``: the operators with kernels on sparse storage, as symbol functions made
from the registry on first access (``mx.sym.sparse.dot`` is MXNet's ``_sparse_dot``, an alias
of ``dot``); the storage types follow from the variables' ``stype`` at bind.

>>> import symgraph as mx
>>> x = mx.sym.var('x', stype='csr')
>>> y = mx.sym.sparse.dot(x, mx.sym.var('w'))
>>> y.list_arguments()
['x', 'w']
"""
from ..ops.namespaces import module_getattr as _module_getattr
from .op_api import make_function as _make_function

__getattr__ = _module_getattr("sparse", globals(), _make_function)
