"""Data iterators (MXNet 1.9.1's ``mx.io``): batches of NDArrays for training loops.

>>> import numpy as np
>>> import symgraph as mx
>>> it = mx.io.NDArrayIter(np.arange(10).reshape(5, 2), np.arange(5), batch_size=2)
>>> [batch.pad for batch in it]
[0, 0, 1]
"""
from . import io, utils
from .file_iters import CSVIter, LibSVMIter, MNISTIter
from .image_record import (
    ImageDetRecordIter,
    ImageRecordInt8Iter,
    ImageRecordIter,
    ImageRecordUInt8Iter,
)
from .io import DataBatch, DataDesc, DataIter, NDArrayIter, ResizeIter
from .native import MXDataIter
from .prefetch import PrefetchingIter

# MXNet 1.9.1's _v1 iterators are the same C++ parser's older front; one implementation
ImageRecordIter_v1, ImageRecordUInt8Iter_v1 = ImageRecordIter, ImageRecordUInt8Iter

__all__ = ["CSVIter", "DataBatch", "DataDesc", "DataIter", "ImageDetRecordIter",
           "ImageRecordInt8Iter", "ImageRecordIter", "ImageRecordIter_v1",
           "ImageRecordUInt8Iter", "ImageRecordUInt8Iter_v1", "LibSVMIter", "MNISTIter",
           "MXDataIter", "NDArrayIter", "PrefetchingIter", "ResizeIter", "io", "utils"]
