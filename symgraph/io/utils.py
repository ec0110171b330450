"""Helpers of the in-memory iterators (MXNet's ``mx.io.utils``): putting data sources in
canonical form, reordering and slicing them.

>>> import numpy as np
>>> [name for name, _ in _init_data([np.zeros(2), np.ones(2)], False, 'data')]
['_0_data', '_1_data']
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from ..ndarray import NDArray, array


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
    """``[(name, array)]`` with every array's rows reordered by ``idx``."""
    return [(k, array(v.asnumpy()[idx], v.context)) for k, v in data]


def _slice_along_batch_axis(data: NDArray, s: slice, batch_axis: int) -> NDArray:
    """``data[s]`` along ``batch_axis``."""
    return NDArray(data._t.narrow(batch_axis, s.start, s.stop - s.start).clone())
