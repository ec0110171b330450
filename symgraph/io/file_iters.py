"""``mx.io.MNISTIter``, ``mx.io.CSVIter`` and ``mx.io.LibSVMIter``: MXNet's C++ file
iterators, in Python.

All return an :class:`~symgraph.io.native.MXDataIter`, as MXNet's do, with MXNet's
batching: MNISTIter drops a short last batch and shuffles once, at creation, in the order
MXNet's C++ shuffle gives for the same ``seed``; CSVIter completes a short last batch from
the first rows (``round_batch``) and numbers rows in ``index``; LibSVMIter yields csr
batches (its parser and loader are in ``libsvm.py``).
"""
from __future__ import annotations

import logging
import os

import numpy as np
import torch

from ..base import MXNetError
from ..ndarray import NDArray
from ..sparse import formats
from .libsvm import SparseBatchLoader, read_libsvm
from .native import BatchLoader, MXDataIter, NativeIter, libstdcxx_shuffle

__all__ = ["CSVIter", "LibSVMIter", "MNISTIter"]

_TRUE = ("1", "true", "True")


def _flag(value) -> bool:
    return value in _TRUE or value is True or (isinstance(value, int) and value != 0)


def _read_idx(path: str, ndim: int) -> np.ndarray:
    """An idx-ubyte file (MNIST's format: magic, big-endian dims, bytes) as uint8 array."""
    try:
        raw = np.fromfile(path, np.uint8)
    except OSError as err:
        raise MXNetError(f'MNISTIter: cannot open "{path}": {err.strerror}') from err
    header = 4 * (ndim + 1)
    dims = [int.from_bytes(raw[4 * (i + 1):4 * (i + 2)].tobytes(), "big") for i in range(ndim)]
    size = int(np.prod(dims))
    if raw.size < header + size:
        raise MXNetError(f"MNISTIter: {path} holds fewer bytes than its header's shape {dims}")
    return raw[header:header + size].reshape(dims)


class _MNISTSource(NativeIter):
    """Whole batches of (part of) MNIST, pixels scaled by 1/256, shuffled once."""

    def __init__(self, images: np.ndarray, labels: np.ndarray, batch_size: int, flat: bool):
        self._images, self._labels = images, labels
        self.batch_size, self._flat = batch_size, flat
        self._loc = 0

    def before_first(self) -> None:
        self._loc = 0

    def next(self) -> bool:
        if self._loc + self.batch_size > self._images.shape[0]:
            return False
        self._loc += self.batch_size
        return True

    def _rows(self) -> slice:
        return slice(self._loc - self.batch_size, self._loc)

    def data(self) -> NDArray:
        pixels = torch.from_numpy(self._images[self._rows()]).to(torch.float32) / 256
        n, h, w = pixels.shape
        return NDArray(pixels.reshape(n, h * w) if self._flat else pixels.reshape(n, 1, h, w))

    def label(self) -> NDArray:
        return NDArray(torch.from_numpy(self._labels[self._rows()]).to(torch.float32))

    def index(self) -> np.ndarray:
        return np.zeros(self.batch_size, np.uint64)  # MXNet's MNIST leaves it unset


def MNISTIter(*, image: str = "./train-images-idx3-ubyte",  # MXNet's name
              label: str = "./train-labels-idx1-ubyte", batch_size: int = 128,
              shuffle=True, flat=False, seed: int = 0, silent=False, num_parts: int = 1,
              part_index: int = 0, **kwargs) -> MXDataIter:
    """Iterate over the MNIST idx-ubyte files (MXNet 1.9.1's ``mx.io.MNISTIter``).

    Data batches are ``(batch_size, 1, 28, 28)`` (``flat``: ``(batch_size, 784)``) float32
    pixels divided by 256, labels ``(batch_size,)`` float32; a short last batch is dropped.
    With ``num_parts``, the images ``n*k//num_parts`` to ``n*(k+1)//num_parts`` of part
    ``k = part_index`` are read. ``shuffle`` permutes them once, as MXNet's C++ shuffle
    seeded with ``seed``. Other MXNet keywords (``data_shape``, ``prefetch_buffer``,
    ``ctx``, ``dtype``...) are accepted; ``data_name``/``label_name`` name the inputs.

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> def idx(name, arr, magic):
    ...     with open(os.path.join(folder, name), 'wb') as f:
    ...         f.write(magic.to_bytes(4, 'big'))
    ...         f.write(b''.join(d.to_bytes(4, 'big') for d in arr.shape) + arr.tobytes())
    >>> idx('img', np.arange(20 * 4, dtype=np.uint8).reshape(20, 2, 2), 0x803)
    >>> idx('lab', np.arange(20, dtype=np.uint8), 0x801)
    >>> it = MNISTIter(image=os.path.join(folder, 'img'), label=os.path.join(folder, 'lab'),
    ...                batch_size=6, seed=0, flat=True, silent=True, label_name='sm_label')
    >>> it.provide_data, it.provide_label
    ([DataDesc[data,(6, 4),<class 'numpy.float32'>,NCHW]], \
[DataDesc[sm_label,(6,),<class 'numpy.float32'>,NCHW]])
    >>> [b.label[0].asnumpy().astype(int).tolist() for b in it]
    [[16, 2, 3, 5, 14, 18], [13, 19, 4, 7, 6, 8], [9, 10, 15, 12, 0, 17]]
    """
    images, labels = _read_idx(image, 3), _read_idx(label, 1)
    if images.shape[0] != labels.shape[0]:
        raise MXNetError(f"MNISTIter: {images.shape[0]} images but {labels.shape[0]} labels")
    n = images.shape[0]
    num_parts, part_index = int(num_parts), int(part_index)
    rows = slice(n * part_index // num_parts, n * (part_index + 1) // num_parts)
    images, labels = images[rows], labels[rows]
    if _flag(shuffle):
        order = libstdcxx_shuffle(images.shape[0], int(seed))
        images, labels = images[order], labels[order]
    source = _MNISTSource(images, labels, int(batch_size), _flag(flat))
    if not _flag(silent):
        shape = (batch_size, images[0].size) if _flag(flat) else (batch_size,) + images.shape[1:]
        # a named logger: the root one's logging.info would configure the root logger and
        # turn the script's later logging.basicConfig(level=...) into a no-op
        logging.getLogger(__name__).info("MNISTIter: load %d images, shuffle=%d, shape=%s",
                                         images.shape[0], _flag(shuffle), shape)
    return MXDataIter(source, **kwargs)


_CSV_DTYPES = {"float32": np.float32, "int32": np.int32, "int64": np.int64}


def _csv_files(path: str) -> list[str]:
    if os.path.isdir(path):
        return [os.path.join(path, f) for f in sorted(os.listdir(path))
                if os.path.isfile(os.path.join(path, f))]
    if not os.path.exists(path):
        raise MXNetError(f'CSVIter: cannot open "{path}": No such file or directory')
    return [path]


def _read_csv(path: str, shape: tuple, dtype) -> np.ndarray:
    """The rows of the CSV file(s) at ``path`` (blank lines skipped), each of ``shape``."""
    parse = float if dtype == np.float32 else (lambda tok: int(float(tok)))
    rows = []
    for name in _csv_files(path):
        with open(name) as f:
            rows += [[parse(tok) for tok in line.split(",")] for line in f if line.strip()]
    size = int(np.prod(shape))
    for row in rows:
        if len(row) != size:
            raise MXNetError(f"CSVIter: the data size in CSV do not match size of shape: "
                             f"specified shape={list(shape)}, the csv row-length={len(row)}")
    return np.asarray(rows, dtype=dtype).reshape((len(rows),) + tuple(shape))


def CSVIter(*, data_csv: str, data_shape, batch_size: int, label_csv: str = "NULL",
            label_shape=(1,), round_batch=True, dtype=None, **kwargs) -> MXDataIter:
    """Iterate over the rows of CSV files (MXNet 1.9.1's ``mx.io.CSVIter``).

    Each row (of ``data_csv``, a file or a folder of files) reshaped to ``data_shape`` is
    one example; labels are the rows of ``label_csv`` (``label_shape``; a one-element label
    is a scalar) or 0. ``dtype`` is 'float32' (default), 'int32' or 'int64'. A short last
    batch is completed from the first rows with ``round_batch`` (the next pass then
    continues after them, ``reset`` keeping its place), else its tail keeps the previous
    batch's rows; ``pad`` counts them either way, ``index`` numbers the rows.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), 'data.csv')
    >>> with open(path, 'w') as f:
    ...     _ = f.write('1,2,3\\n2,3,4\\n3,4,5\\n4,5,6\\n')
    >>> it = CSVIter(data_csv=path, data_shape=(3,), batch_size=3)
    >>> [(b.data[0].asnumpy()[:, 0].tolist(), b.pad) for b in it]
    [([1.0, 2.0, 3.0], 0), ([4.0, 1.0, 2.0], 2)]
    >>> it.reset(); [(b.data[0].asnumpy()[:, 0].tolist(), b.pad) for b in it]
    [([3.0, 4.0, 1.0], 1)]
    """
    name = "float32" if dtype in (None, "None") else np.dtype(dtype).name
    if name not in _CSV_DTYPES:
        raise MXNetError(f"{name} is not supported for CSVIter")
    dtype = _CSV_DTYPES[name]
    data = _read_csv(data_csv, tuple(data_shape), dtype)
    if label_csv in (None, "NULL"):
        label = np.zeros(data.shape[0], dtype)
    else:
        label = _read_csv(label_csv, tuple(label_shape), dtype)
        label = label.reshape(-1) if label[0].size == 1 else label
        if label.shape[0] != data.shape[0]:
            raise MXNetError(f"CSVIter: {data_csv} has {data.shape[0]} rows but {label_csv} "
                             f"has {label.shape[0]}")
    loader = BatchLoader(data, label, int(batch_size), _flag(round_batch))
    return MXDataIter(loader, **kwargs)


def _libsvm_checks(data_shape: tuple, label_libsvm, label_shape: tuple, num_parts: int,
                   part_index: int) -> None:
    """MXNet's checks of LibSVMIter's parameters (its messages), before any file is read."""
    if len(data_shape) != 1:
        raise MXNetError(f"LibSVMIter: dimension of data_shape is expected to be 1, got "
                         f"{data_shape}")
    if num_parts < 1:
        raise MXNetError(f"LibSVMIter: number of parts should be positive, got {num_parts}")
    if not 0 <= part_index < num_parts:
        raise MXNetError(f"LibSVMIter: part_index={part_index} must be in [0, {num_parts})")
    size = int(np.prod(label_shape))
    if label_libsvm in (None, "NULL") and size != 1:
        raise MXNetError(f"LibSVMIter: label_shape is expected to be (1,) when label_libsvm "
                         f"is NULL, got {label_shape}")
    if label_libsvm not in (None, "NULL") and (size <= 1 or len(label_shape) != 1):
        raise MXNetError(f"LibSVMIter: label_shape must be 1-D and not (1,) when label_libsvm "
                         f"is set, got {label_shape}")


def LibSVMIter(*, data_libsvm: str, data_shape, batch_size: int,  # MXNet's name
               label_libsvm: str = "NULL", label_shape=(1,), num_parts: int = 1,
               part_index: int = 0, round_batch=True, dtype=None, **kwargs) -> MXDataIter:
    """Iterate over LibSVM files in ``csr`` batches (MXNet 1.9.1's ``mx.io.LibSVMIter``).

    Each line of ``data_libsvm`` (a file, or a folder whose files are read in name order)
    is ``label index:value ...`` with 0-based, ascending feature indices below
    ``data_shape[0]``. A batch's data is a ``CSRNDArray`` of ``(batch_size,) + data_shape``;
    its label the lines' first numbers (dense, ``(batch_size,)``) or, with ``label_libsvm``,
    that file's rows as a ``CSRNDArray`` of ``(batch_size,) + label_shape``. The last batch
    is completed from the first rows (``pad`` counts them) and the next pass continues
    after them. ``num_parts``/``part_index`` read one part of the file split by bytes, as
    MXNet splits it (parts start at line starts and may differ in rows). A malformed line
    raises :class:`~symgraph.base.FileFormatError` naming the file and line.

    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), 'data.t')
    >>> with open(path, 'w') as f:
    ...     _ = f.write('1.0 0:0.5 2:1.2\\n-2.0\\n-3.0 0:0.6 1:2.4 2:1.2\\n4 2:-1.2\\n')
    >>> it = LibSVMIter(data_libsvm=path, data_shape=(3,), batch_size=3)
    >>> batch = [b for b in it][1]
    >>> batch.data[0].stype, batch.data[0].indptr.asnumpy().tolist(), batch.pad
    ('csr', [0, 1, 3, 3], 2)
    >>> it.getlabel().asnumpy().tolist()
    [4.0, 1.0, -2.0]
    """
    data_shape, label_shape = tuple(data_shape), tuple(label_shape)
    num_parts, part_index = int(num_parts), int(part_index)
    _libsvm_checks(data_shape, label_libsvm, label_shape, num_parts, part_index)
    if not _flag(round_batch):
        raise MXNetError("LibSVMIter: sparse batch loader doesn't support round_batch == "
                         "false yet")
    if dtype not in (None, "None", "float32", np.float32):
        raise MXNetError(f"LibSVMIter: dtype {dtype} is not supported (its batches are "
                         "float32, as MXNet's)")
    label, data = read_libsvm(data_libsvm, data_shape[0], num_parts, part_index)
    if label_libsvm not in (None, "NULL"):
        _, label = read_libsvm(label_libsvm, label_shape[0], num_parts, part_index)
        if label.shape[0] < data.shape[0]:
            raise MXNetError(f"LibSVMIter: part {part_index} of {data_libsvm} has "
                             f"{data.shape[0]} rows but that of {label_libsvm} only "
                             f"{label.shape[0]}")
        label = formats.csr_take_rows(label, torch.arange(data.shape[0]))
    if data.shape[0] == 0:
        raise MXNetError(f"LibSVMIter: part {part_index} of {num_parts} of {data_libsvm} "
                         "holds no rows")
    return MXDataIter(SparseBatchLoader(data, label, int(batch_size)), **kwargs)
