"""``mx.symbol.sparse``: sparse storage (CSR, row-sparse) is not implemented; MXNet's
sparse functions and ``_sparse_*`` operators exist here and raise ``UnsupportedError``
saying so (symgraph arrays are dense)."""
from ..base import unsupported

# MXNet 1.9.1's Python-level sparse names (the _sparse_* operators are added by prefix)
NAMES = ("BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "add", "array",
         "csr_matrix", "divide", "empty", "multiply", "row_sparse_array", "subtract", "zeros",
         "retain", "dot", "elemwise_add", "where", "sum", "mean", "norm", "slice", "cast_storage")


def __getattr__(name: str):
    from ..ops.mxnet_names import MXNET_OPERATORS
    if name not in NAMES and f"_sparse_{name}" not in MXNET_OPERATORS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    def fn(*args, **kwargs):
        raise unsupported(f"mx.symbol.sparse.{name}", "sparse storage (csr, row_sparse) "
                          "is not implemented; symgraph arrays are dense")

    fn.__name__ = fn.__qualname__ = name
    return fn
