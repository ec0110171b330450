"""``mx.nd.sparse``: MXNet 1.x's sparse arrays (``CSRNDArray``, ``RowSparseNDArray``), their
constructors, and the operators with sparse kernels (``mx.nd.sparse.dot``, ``retain``...).

>>> import symgraph as mx
>>> a = mx.nd.sparse.csr_matrix([[0, 2], [0, 0], [3, 0]])
>>> a.stype, a.data.asnumpy().tolist(), a.indices.asnumpy().tolist()
('csr', [2.0, 3.0], [1, 0])
>>> w = mx.nd.sparse.zeros('row_sparse', (1000, 4))
>>> w.indices.shape
(0,)
>>> bad = mx.nd.sparse.row_sparse_array(([[1, 2]], [7]), shape=(3, 2))  # as MXNet: not checked
>>> bad.check_format()
Traceback (most recent call last):
...
symgraph.sparse.formats.SparseFormatError: row_sparse indices out of range [0, 3): [7]
"""
from __future__ import annotations

import numbers

import numpy as np
import torch

from ..base import NotSupportedForSparseNDArray, mx_real_t, to_torch_dtype
from ..context import Context, current_context
from ..ops.namespaces import module_getattr as _module_getattr
from ..sparse import formats
from .ndarray import NDArray
from .register import invoke
from .register import make_function as _make_function
from .sparse_array import BaseSparseNDArray, CSRNDArray, RowSparseNDArray, wrap

__all__ = ["BaseSparseNDArray", "CSRNDArray", "RowSparseNDArray", "NotSupportedForSparseNDArray",
           "csr_matrix", "row_sparse_array", "zeros", "empty", "array", "add", "subtract",
           "multiply", "divide"]

_STORAGE_TYPE_UNDEFINED, _STORAGE_TYPE_DEFAULT = -1, 0
_STORAGE_TYPE_ROW_SPARSE, _STORAGE_TYPE_CSR = 1, 2
_STORAGE_TYPE_STR_TO_ID = {"_undefined": -1, "default": 0, "row_sparse": 1, "csr": 2}
_STORAGE_AUX_TYPES = {"row_sparse": [np.int64], "csr": [np.int64, np.int64]}


def _ctx(ctx) -> Context:
    return ctx if ctx is not None else current_context()


def _check_shape(given, wanted) -> None:
    if given and wanted and tuple(given) != tuple(wanted):
        raise ValueError(f"Shape mismatch detected. {tuple(given)} v.s. {tuple(wanted)}")


def _dtype_of(source, dtype) -> torch.dtype:
    """MXNet's default dtype: the source's for arrays and scipy matrices, else float32."""
    if dtype is not None:
        return to_torch_dtype(dtype)
    if isinstance(source, NDArray | np.ndarray) or hasattr(source, "tocsr"):
        return to_torch_dtype(source.dtype)
    return to_torch_dtype(mx_real_t)


def _tensor(source, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    if isinstance(source, NDArray):
        return source._t.detach().to(device=device, dtype=dtype, copy=True)
    try:
        arr = np.asarray(source)
        if arr.dtype == object:
            raise TypeError("object arrays")
    except (TypeError, ValueError) as err:
        raise TypeError("values must be array like object") from err
    return torch.as_tensor(np.array(arr, dtype=torch.empty(0, dtype=dtype).numpy().dtype
                                    if dtype != torch.bfloat16 else np.float32)
                           ).to(device=device, dtype=dtype)


def zeros(stype: str, shape, ctx: Context | None = None, dtype=None, **kwargs) -> NDArray:
    """An all-zero array of storage ``stype`` (no stored rows or values when sparse).

    >>> import symgraph as mx
    >>> mx.nd.sparse.zeros('csr', (2, 3)).indptr.asnumpy().tolist()
    [0, 0, 0]
    """
    if stype == "default":
        from .utils import zeros as dense_zeros
        return dense_zeros(shape, ctx=ctx, dtype=dtype, **kwargs)
    if stype not in formats.STYPES:
        raise ValueError(f"zeros: unknown storage type {stype!r}; expected one of "
                         f"{list(formats.STYPES)}")
    shape = (int(shape),) if isinstance(shape, numbers.Integral) else tuple(shape)
    ctx = _ctx(ctx)
    value = formats.empty_like_stype(stype, shape, to_torch_dtype(dtype or mx_real_t),
                                     ctx.torch_device)
    out = kwargs.get("out")
    if out is not None:
        out._assign(value)
        return out
    return wrap(value, ctx)


def empty(stype: str, shape, ctx: Context | None = None, dtype=None) -> NDArray:
    """A sparse array with nothing stored (MXNet's ``empty`` for sparse stypes is zeros)."""
    if stype not in ("csr", "row_sparse"):
        raise ValueError(f"unknown stype : {stype}")
    return zeros(stype, shape, ctx=ctx, dtype=dtype)


def csr_matrix(arg1, shape=None, ctx: Context | None = None, dtype=None) -> CSRNDArray:
    """A :class:`CSRNDArray` from a dense array, a sparse matrix (CSRNDArray or scipy),
    ``(M, N)`` (empty), ``(data, indices, indptr)`` or ``(data, (row, col))`` (COO).

    >>> import symgraph as mx
    >>> mx.nd.sparse.csr_matrix(([1., 2.], ([0, 2], [1, 0])), shape=(3, 2)).asnumpy().tolist()
    [[0.0, 1.0], [0.0, 0.0], [2.0, 0.0]]
    """
    if isinstance(arg1, tuple):
        if len(arg1) == 2 and isinstance(arg1[1], tuple) and len(arg1[1]) == 2:
            return _csr_from_coo(arg1, shape, ctx, dtype)
        if len(arg1) == 2:
            _check_shape(arg1, shape)
            return empty("csr", arg1, ctx=ctx, dtype=dtype)
        if len(arg1) == 3:
            return _csr_from_definition(*arg1, shape=shape, ctx=ctx, dtype=dtype)
        raise ValueError(f"Unexpected length of input tuple: {len(arg1)}")
    if isinstance(arg1, CSRNDArray) or hasattr(arg1, "tocsr"):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        raise ValueError("Unexpected input type: RowSparseNDArray")
    return _from_dense(arg1, "csr", shape, ctx, dtype)


def _from_dense(source, stype: str, shape, ctx, dtype) -> NDArray:
    ctx = _ctx(ctx)
    dense = _tensor(source, _dtype_of(source, dtype), ctx.torch_device)
    _check_shape(tuple(dense.shape), shape)
    return wrap(formats.from_dense(dense, stype), ctx)


def _csr_from_coo(arg1, shape, ctx, dtype) -> CSRNDArray:
    import scipy.sparse as spsp
    data, (row, col) = arg1
    host = [x.asnumpy() if isinstance(x, NDArray) else x for x in (data, row, col)]
    coo = spsp.coo_matrix((host[0], (host[1], host[2])), shape=shape)
    _check_shape(coo.shape, shape)
    return array(coo.tocsr(), ctx=ctx, dtype=dtype)


def _csr_from_definition(data, indices, indptr, shape=None, ctx=None, dtype=None,
                         indices_type=None, indptr_type=None) -> CSRNDArray:
    ctx = _ctx(ctx)
    device = ctx.torch_device
    data_t = _tensor(data, _dtype_of(data, dtype), device)
    indices_t = _tensor(indices, torch.int64, device)
    indptr_t = _tensor(indptr, torch.int64, device)
    if shape is None:
        if indices_t.numel() == 0:
            raise ValueError("invalid shape")
        shape = (indptr_t.numel() - 1, int(indices_t.max()) + 1)
    if data_t.dim() != 1 or indptr_t.dim() != 1 or indices_t.dim() != 1 or \
            indptr_t.numel() == 0 or len(shape) != 2:
        raise ValueError("invalid shape")
    value = formats.CSR(data_t, indices_t, indptr_t, tuple(int(d) for d in shape))
    formats.check_format(value, full_check=False)  # MXNet checks the indices on request only
    return wrap(value, ctx)


def row_sparse_array(arg1, shape=None, ctx: Context | None = None, dtype=None) -> NDArray:
    """A :class:`RowSparseNDArray` from a dense array, a RowSparseNDArray, a shape (empty) or
    ``(data, indices)``.

    >>> import symgraph as mx
    >>> mx.nd.sparse.row_sparse_array(([[1, 2]], [1]), shape=(3, 2)).asnumpy().tolist()
    [[0.0, 0.0], [1.0, 2.0], [0.0, 0.0]]
    """
    if isinstance(arg1, tuple):
        if len(arg1) < 2:
            raise ValueError(f"Unexpected length of input tuple: {len(arg1)}")
        if len(arg1) > 2 or all(isinstance(d, numbers.Integral) for d in arg1):
            _check_shape(arg1, shape)
            return empty("row_sparse", arg1, ctx=ctx, dtype=dtype)
        return _rsp_from_definition(arg1[0], arg1[1], shape=shape, ctx=ctx, dtype=dtype)
    if isinstance(arg1, RowSparseNDArray):
        _check_shape(arg1.shape, shape)
        return array(arg1, ctx=ctx, dtype=dtype)
    if isinstance(arg1, CSRNDArray):
        raise ValueError("Unexpected input type: CSRNDArray")
    return _from_dense(arg1, "row_sparse", shape, ctx, dtype)


def _rsp_from_definition(data, indices, shape=None, ctx=None, dtype=None,
                         indices_type=None) -> RowSparseNDArray:
    ctx = _ctx(ctx)
    device = ctx.torch_device
    data_t = _tensor(data, _dtype_of(data, dtype), device)
    indices_t = _tensor(indices, torch.int64, device)
    if shape is None:
        if indices_t.numel() == 0:
            raise ValueError("invalid shape")
        shape = (int(indices_t[-1]) + 1, *data_t.shape[1:])
    shape = tuple(int(d) for d in shape)
    if data_t.dim() != len(shape) or indices_t.dim() != 1 or int(np.prod(shape[1:])) == 0:
        raise ValueError("invalid shape")
    value = formats.RowSparse(data_t, indices_t, shape)
    formats.check_format(value, full_check=False)  # MXNet checks the indices on request only
    return wrap(value, ctx)


def array(source_array, ctx: Context | None = None, dtype=None) -> NDArray:
    """A sparse copy of a sparse array (CSRNDArray, RowSparseNDArray or a scipy matrix)."""
    ctx = _ctx(ctx)
    if isinstance(source_array, NDArray):
        if not source_array._is_sparse:
            raise ValueError("Please use `tostype` to create RowSparseNDArray or CSRNDArray "
                             "from an NDArray")
        value = formats.astype(source_array._value, _dtype_of(source_array, dtype))
        return wrap(formats.to_device(formats.clone(value), ctx.torch_device), ctx)
    if hasattr(source_array, "tocsr"):  # scipy: sorted, duplicates summed, as MXNet
        csr = source_array.tocsr().sorted_indices()
        csr.sum_duplicates()
        return _csr_from_definition(csr.data, csr.indices, csr.indptr, shape=csr.shape,
                                    ctx=ctx, dtype=_dtype_of(source_array, dtype))
    if isinstance(source_array, np.ndarray | np.generic):
        raise ValueError("Please use mx.nd.array to create an NDArray with source_array of "
                         f"type {type(source_array)}")
    raise ValueError(f"Unexpected source_array type: {type(source_array)}")


def _arith(elemwise: str, broadcast: str, scalar: str, reflected_scalar: str | None):
    """MXNet's sparse ``add``/``subtract``/...: the elementwise op for equal shapes, the
    broadcast op otherwise, the scalar op for a number."""
    def fn(lhs, rhs):
        if isinstance(lhs, numbers.Number) and isinstance(rhs, numbers.Number):
            raise TypeError("at least one operand must be an NDArray")
        if isinstance(rhs, numbers.Number):
            return invoke(scalar, (lhs,), {"scalar": float(rhs)})
        if isinstance(lhs, numbers.Number):
            if reflected_scalar is None:
                return invoke(scalar, (rhs,), {"scalar": float(lhs)})
            return invoke(reflected_scalar, (rhs,), {"scalar": float(lhs)})
        if not isinstance(lhs, NDArray) or not isinstance(rhs, NDArray):
            raise TypeError(f"type {type(rhs)} not supported")
        name = elemwise if lhs.shape == rhs.shape else broadcast
        return invoke(name, (lhs, rhs), {})
    fn.__name__ = elemwise.replace("elemwise_", "")
    return fn


add = _arith("elemwise_add", "broadcast_add", "_plus_scalar", None)
subtract = _arith("elemwise_sub", "broadcast_sub", "_minus_scalar", "_rminus_scalar")
multiply = _arith("elemwise_mul", "broadcast_mul", "_mul_scalar", None)
divide = _arith("elemwise_div", "broadcast_div", "_div_scalar", "_rdiv_scalar")
add.__name__, subtract.__name__, multiply.__name__, divide.__name__ = (
    "add", "subtract", "multiply", "divide")

# every operator with a sparse name (mx.nd.sparse.dot, retain, elemwise_add...) is made from
# the registry on first access
__getattr__ = _module_getattr("sparse", globals(), _make_function)
