"""Helpers of the in-memory iterators (MXNet's ``mx.io.utils``): putting data sources in
canonical form, reordering and slicing them.

>>> import numpy as np
>>> [name for name, _ in _init_data([np.zeros(2), np.ones(2)], False, 'data')]
['_0_data', '_1_data']
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np
import torch

from ..ndarray import NDArray, array
from ..ndarray.sparse_array import CSRNDArray, value_of, wrap
from ..sparse import formats


def _init_data(data, allow_empty: bool, default_name: str) -> list:
    """``[(name, NDArray)]`` sorted by name, from an array, a list or a dict (as MXNet)."""
    assert data is not None or allow_empty
    if data is None:
        data = []
    if isinstance(data, (np.ndarray, NDArray)):
        data = [data]
    if isinstance(data, list):
        if not allow_empty:
            assert len(data) > 0
        if len(data) == 1:
            data = OrderedDict([(default_name, data[0])])
        else:
            data = OrderedDict([(f"_{i}_{default_name}", d) for i, d in enumerate(data)])
    if not isinstance(data, dict):
        raise TypeError("Input must be NDArray, numpy.ndarray, h5py.Dataset a list of them "
                        "or dict with them as values")
    data = dict(data)
    for k, v in data.items():
        if not isinstance(v, NDArray):
            try:
                data[k] = array(v)
            except Exception as err:
                raise TypeError(f"Invalid type '{type(v)}' for {k}, should be NDArray, "
                                "numpy.ndarray or h5py.Dataset") from err
    return sorted(data.items())


def _has_instance(data, dtype) -> bool:
    """Whether any array of ``[(name, array)]`` is an instance of ``dtype``."""
    return any(isinstance(arr, dtype) for _, arr in data)


def _getdata_by_idx(data, idx) -> list:
    """``[(name, array)]`` with every array's rows reordered by ``idx``: a csr array stays
    csr (its rows gathered), any other array becomes a float32 NDArray, as in MXNet."""
    return [(k, _take_rows(v, idx) if isinstance(v, CSRNDArray)
             else array(v.asnumpy()[idx], v.context)) for k, v in data]


def _take_rows(data: NDArray, rows, batch_axis: int = 0) -> NDArray:
    """The entries ``rows`` of ``data`` along ``batch_axis``, dtype kept (csr stays csr)."""
    rows = torch.as_tensor(np.asarray(rows), dtype=torch.int64)
    if isinstance(data, CSRNDArray) and batch_axis == 0:
        return wrap(formats.csr_take_rows(value_of(data), rows), data.context)
    dense = data._t  # a row_sparse source is densified once (MXNet has no parts)
    return NDArray(dense.index_select(batch_axis, rows.to(dense.device)))


def _slice_along_batch_axis(data: NDArray, s: slice, batch_axis: int) -> NDArray:
    """``data[s]`` along ``batch_axis``, dense (MXNet 1.9.1's ``slice_axis``, which has no
    sparse kernel: a csr or row_sparse array's slice is dense too; symgraph densifies only
    the rows sliced)."""
    if data._is_sparse and batch_axis == 0:
        rows = torch.arange(s.start, s.stop)
        value = value_of(data)
        if isinstance(value, formats.CSR):
            return NDArray(formats.to_dense(formats.csr_take_rows(value, rows)))
        return NDArray(formats.gather_rows(value, rows).data)
    return NDArray(data._t.narrow(batch_axis, s.start, s.stop - s.start).clone())
