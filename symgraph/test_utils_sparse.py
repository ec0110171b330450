"""The sparse helpers of ``mx.test_utils``: random csr and row_sparse arrays as MXNet 1.9.1's
tests make them (same arguments, same return tuples), re-exported by
:mod:`symgraph.test_utils`.

csr matrices come from ``scipy.sparse.rand`` (``'uniform'``) or a row-doubling pattern
(``'powerlaw'``: row ``i`` holds about twice the values of row ``i - 1``); row_sparse arrays
keep each row with probability ``density`` (or exactly the rows ``rsp_indices``).

>>> import numpy as np
>>> np.random.seed(0)
>>> arr, (values, rows) = rand_sparse_ndarray((6, 2), 'row_sparse', density=0.5)
>>> arr.stype, arr.indices.asnumpy().tolist() == rows.tolist()
('row_sparse', True)
>>> csr, (indptr, indices, data) = rand_sparse_ndarray((5, 16), 'csr', density=0.5,
...                                                    distribution='powerlaw')
>>> np.diff(indptr.asnumpy()).tolist()
[2, 4, 8, 16, 10]
"""
from __future__ import annotations

import numpy as np

import symgraph as mx


def _default_ctx(ctx):
    return ctx if ctx is not None else mx.context.current_context()


def _validate_csr_generation_inputs(num_rows: int, num_cols: int, density: float,
                                    distribution: str = "uniform") -> None:
    """Raise ValueError for a density outside [0, 1], an empty shape, or a powerlaw matrix
    with fewer than two values per row."""
    if density < 0 or density > 1:
        raise ValueError(f"density has to be between 0 and 1, got {density}")
    if num_rows <= 0 or num_cols <= 0:
        raise ValueError(f"num_rows or num_cols should be greater than 0, got "
                         f"({num_rows}, {num_cols})")
    if distribution == "powerlaw" and int(num_rows * num_cols * density) < 2 * num_rows:
        raise ValueError(f"not supported for this density: {density} for this shape "
                         f"({num_rows}, {num_cols}): keep num_rows * num_cols * density >= "
                         "2 * num_rows")


def shuffle_csr_column_indices(csr) -> None:
    """Shuffle the column indices (and so the order) inside every row of a scipy csr
    matrix, in place: a valid csr matrix need not keep them sorted.

    >>> import scipy.sparse as spsp
    >>> m = spsp.csr_matrix(np.eye(3))
    >>> shuffle_csr_column_indices(m)
    >>> m.indices.tolist()
    [0, 1, 2]
    """
    for row in range(len(csr.indptr) - 1):
        start, end = csr.indptr[row], csr.indptr[row + 1]
        part = np.array(csr.indices[start:end])
        np.random.shuffle(part)
        csr.indices[start:end] = part


def _get_uniform_dataset_csr(num_rows: int, num_cols: int, density: float = 0.1, dtype=None,
                             data_init=None, shuffle_csr_indices: bool = False):
    """A CSRNDArray with ``density`` of its entries set at uniformly random places (values
    uniform in [0, 1), or ``data_init``).

    >>> _get_uniform_dataset_csr(3, 4, density=0.5).shape
    (3, 4)
    """
    import scipy.sparse as spsp
    _validate_csr_generation_inputs(num_rows, num_cols, density, "uniform")
    csr = spsp.rand(num_rows, num_cols, density, dtype=dtype, format="csr")
    if data_init is not None:
        csr.data.fill(data_init)
    if shuffle_csr_indices:
        shuffle_csr_column_indices(csr)
    return mx.nd.sparse.csr_matrix((csr.data, csr.indices, csr.indptr),
                                   shape=(num_rows, num_cols), dtype=dtype)


def _powerlaw_dense(num_rows: int, num_cols: int, total_nnz: int, dtype) -> np.ndarray:
    """The dense matrix of :func:`_get_powerlaw_dataset_csr`: one value at the start of every
    row, then 1, 3, 7, ... more per row (full rows once the width is reached) until
    ``total_nnz`` values are placed."""
    out = np.zeros((num_rows, num_cols), dtype=dtype)
    left = total_nnz
    for row in range(num_rows):
        out[row, 0] = 1 + np.random.uniform(0.001, 2)
        left -= 1
        if left <= 0:
            return out
    col_max = 2
    for row in range(num_rows):
        limit = min(num_cols, col_max)
        if limit == num_cols and left > limit:  # a whole row, one value
            out[row] = 1 + np.random.uniform(0.001, 2)
            left -= limit - 1
            if left <= 0:
                return out
            continue
        for col in range(1, limit):
            out[row, col] = 1 + np.random.uniform(0.001, 2)
            left -= 1
            if left <= 0:
                return out
        col_max *= 2
    if left > 0:
        raise ValueError(f"not supported for this density: {total_nnz} values do not fit the "
                         f"powerlaw pattern of shape ({num_rows}, {num_cols})")
    return out


def _get_powerlaw_dataset_csr(num_rows: int, num_cols: int, density: float = 0.1, dtype=None):
    """A CSRNDArray whose rows hold exponentially more values (1 + 1, 1 + 3, 1 + 7, ...).

    >>> np.diff(_get_powerlaw_dataset_csr(3, 8, density=0.5).indptr.asnumpy()).tolist()
    [2, 4, 6]
    """
    _validate_csr_generation_inputs(num_rows, num_cols, density, "powerlaw")
    dense = _powerlaw_dense(num_rows, num_cols, int(num_rows * num_cols * density), dtype)
    return mx.nd.array(dense).tostype("csr")


def rand_sparse_ndarray(shape, stype: str, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices: bool = False, ctx=None):
    """A random sparse array and its parts: ``(arr, (values, row_indices))`` for
    ``'row_sparse'``, ``(arr, (indptr, indices, data))`` (NDArrays) for ``'csr'``.

    ``density`` defaults to a random fraction; row_sparse rows are kept with probability
    ``density`` unless ``rsp_indices`` names them; ``data_init`` fills every value,
    ``modifier_func`` maps each row_sparse value; csr ``distribution`` is ``'uniform'`` or
    ``'powerlaw'``.

    >>> np.random.seed(1)
    >>> arr, (vals, idx) = rand_sparse_ndarray((5, 3), 'row_sparse', rsp_indices=np.array([4]),
    ...                                        data_init=2)
    >>> arr.asnumpy()[4].tolist(), idx.tolist()
    ([2.0, 2.0, 2.0], [4])
    """
    ctx = _default_ctx(ctx)
    density = np.random.rand() if density is None else density
    dtype = np.float32 if dtype is None else dtype
    distribution = distribution or "uniform"
    if stype == "row_sparse":
        assert distribution == "uniform", f"Distribution {distribution} not supported for " \
            "row_sparse"
        return _rand_row_sparse(shape, density, dtype, (data_init, rsp_indices, modifier_func),
                                ctx)
    if stype == "csr":
        assert len(shape) == 2, f"a csr array is 2-D, got shape {shape}"
        if distribution == "uniform":
            csr = _get_uniform_dataset_csr(shape[0], shape[1], density, data_init=data_init,
                                           shuffle_csr_indices=shuffle_csr_indices, dtype=dtype)
        elif distribution == "powerlaw":
            csr = _get_powerlaw_dataset_csr(shape[0], shape[1], density=density, dtype=dtype)
        else:
            raise AssertionError(f"Distribution not supported: {distribution}")
        csr = csr.as_in_context(ctx)
        return csr, (csr.indptr, csr.indices, csr.data)
    raise AssertionError(f"unknown storage type: {stype}")


def _rand_row_sparse(shape, density: float, dtype, fill: tuple, ctx):
    """The row_sparse case of :func:`rand_sparse_ndarray`; ``fill`` is (data_init,
    rsp_indices, modifier_func)."""
    data_init, rsp_indices, modifier_func = fill
    if rsp_indices is not None:
        indices = np.asarray(rsp_indices)
        assert len(indices) <= shape[0]
    else:
        indices = np.argwhere(np.random.rand(shape[0]) < density).flatten()
    if indices.shape[0] == 0:
        arr = mx.nd.zeros(shape, stype="row_sparse", dtype=dtype, ctx=ctx)
        return arr, (np.array([], dtype=dtype), np.array([]))
    values = np.random.rand(indices.shape[0], *shape[1:]).astype(dtype)
    if data_init is not None:
        values.fill(data_init)
    if modifier_func is not None:
        values = assign_each(values, modifier_func)
    arr = mx.nd.sparse.row_sparse_array((values, indices), shape=shape, dtype=dtype, ctx=ctx)
    return arr, (values, indices)


def create_sparse_array(shape, stype: str, data_init=None, rsp_indices=None, dtype=None,
                        modifier_func=None, density: float = .5,
                        shuffle_csr_indices: bool = False):
    """A random sparse array (:func:`rand_sparse_ndarray` without the parts); row_sparse
    ``rsp_indices`` are sorted first.

    >>> create_sparse_array((3, 2), 'row_sparse', rsp_indices=[2, 0]).indices.asnumpy().tolist()
    [0, 2]
    """
    if stype == "row_sparse":
        rows = None if rsp_indices is None else np.sort(np.asarray(rsp_indices))
        arr, _ = rand_sparse_ndarray(shape, stype, density=density, data_init=data_init,
                                     rsp_indices=rows, dtype=dtype, modifier_func=modifier_func)
        return arr
    if stype == "csr":
        arr, _ = rand_sparse_ndarray(shape, stype, density=density, data_init=data_init,
                                     dtype=dtype, modifier_func=modifier_func,
                                     shuffle_csr_indices=shuffle_csr_indices)
        return arr
    raise AssertionError("Unknown storage type: " + stype)


def create_sparse_array_zd(shape, stype: str, density: float, data_init=None, rsp_indices=None,
                           dtype=None, modifier_func=None, shuffle_csr_indices: bool = False):
    """:func:`create_sparse_array` where a row_sparse array has exactly the rows
    ``rsp_indices`` (none when not given).

    >>> create_sparse_array_zd((3, 2), 'row_sparse', 0.9).indices.shape
    (0,)
    """
    if stype == "row_sparse":
        density = 0.0
        if rsp_indices is not None:
            assert len(rsp_indices) <= shape[0]
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices,
                               dtype=dtype, modifier_func=modifier_func, density=density,
                               shuffle_csr_indices=shuffle_csr_indices)


def assign_each(the_input, function) -> np.ndarray:
    """``function`` applied to every element (float64 result; a copy if ``function`` is None).

    >>> assign_each(np.array([1, 2]), lambda v: v * 3).tolist()
    [3.0, 6.0]
    """
    if function is None:
        return np.array(the_input)
    out = np.zeros(np.shape(the_input))
    out.flat[:] = [function(v) for v in np.asarray(the_input).flat]
    return out
