"""``mx.nd.sparse``: sparse storage (CSR, row-sparse) is not implemented; every function
raises ``UnsupportedError`` saying so (symgraph arrays are dense)."""
from ..base import unsupported


def __getattr__(name: str):
    if name.startswith("_"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def fn(*args, **kwargs):
        raise unsupported(f"mx.nd.sparse.{name}", "sparse storage (csr, row_sparse) is not "
                          "implemented; symgraph arrays are dense")

    fn.__name__ = fn.__qualname__ = name
    return fn
