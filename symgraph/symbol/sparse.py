"""``mx.sym.sparse``: sparse storage (CSR, row-sparse) is not implemented; MXNet's sparse
functions and ``_sparse_*`` operators exist here and raise ``UnsupportedError`` saying so."""
from ..unsupported import sparse_getattr

__getattr__ = sparse_getattr(__name__, "mx.sym")
