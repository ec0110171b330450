"""Data iterators (MXNet 1.9.1's ``mx.io``): batches of NDArrays for training loops.

>>> import numpy as np
>>> import symgraph as mx
>>> it = mx.io.NDArrayIter(np.arange(10).reshape(5, 2), np.arange(5), batch_size=2)
>>> [batch.pad for batch in it]
[0, 0, 1]
"""
from . import io, utils
from .file_iters import CSVIter, MNISTIter
from .io import DataBatch, DataDesc, DataIter, NDArrayIter, ResizeIter
from .native import (
    ImageDetRecordIter,
    ImageRecordInt8Iter,
    ImageRecordIter,
    ImageRecordIter_v1,
    ImageRecordUInt8Iter,
    ImageRecordUInt8Iter_v1,
    LibSVMIter,
    MXDataIter,
)
from .prefetch import PrefetchingIter

__all__ = ["CSVIter", "DataBatch", "DataDesc", "DataIter", "ImageDetRecordIter",
           "ImageRecordInt8Iter", "ImageRecordIter", "ImageRecordIter_v1",
           "ImageRecordUInt8Iter", "ImageRecordUInt8Iter_v1", "LibSVMIter", "MNISTIter",
           "MXDataIter", "NDArrayIter", "PrefetchingIter", "ResizeIter", "io", "utils"]
